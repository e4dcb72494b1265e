# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 9 — Ciphers and neural nets, reversible networks, and the memory–compute trade
#
# The interview ends with three ideas that connect cryptography to deep
# learning:
#
# | # | time | claim, in our words |
# |---|---|---|
# | 38 | 2:08:05 | a tiny, well-chosen input change can flip a network's output — the behaviour a cipher is built to have and a network is meant to avoid |
# | 39 | 2:12:58 | invertible (reversible) layers let training rebuild activations in the backward pass instead of storing them |
# | 40 | 2:13:35 | on today's hardware, spending memory to save recomputation (as the KV cache does) usually pays |
#
# **After this chapter you can** attack a classifier with the fast gradient sign
# method and explain with a linear model why high dimension makes it work;
# measure a cipher's avalanche; build a reversible block, invert it, and train
# through it without storing activations; and count the activation bytes of a
# transformer layer with and without recomputation.
#
# Everything here runs in NumPy on this machine; the data are the handwritten
# digits that scikit-learn ships (1,797 images of 8×8 pixels with 17 grey levels).

# %% [markdown]
# **Before you start.** The first half needs only gradients and a little linear algebra;
# the second half (memory for compute) uses [chapter 1](01_batch_size.py)'s step model and
# [chapter 2](02_kv_cache.py)'s $\beta$ and $a$. Glossary entries that matter here:
# [adversarial example](../book/glossary.md#adversarial-example) (with FGSM, avalanche and Feistel networks),
# [recomputation](../book/glossary.md#recomputation), [activation](../book/glossary.md#activation) and [KV cache](../book/glossary.md#kv-cache);
# symbols $\mathcal{L}$, $\varepsilon$, $\theta$, $x_1$, $x_2$, $\psi_1$, $\psi_2$, $t_\text{read}$,
# $t_\text{recompute}$ on the [notation](../book/notation.md) page. About 50 minutes.

# %%
import time

import numpy as np
import matplotlib.pyplot as plt

from llmmath import adversarial, ciphers, claims, kernels, measured, memory, models, plots, reversible, explorers, widgets

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 38 (2:08:05) — small perturbations, large changes: ciphers want it, networks do not
#
# *Claim, paraphrased:* a very small, carefully chosen change to an image can
# completely change a network's classification. For a cipher that sensitivity
# is the whole point; for a network it is a failure.
#
# ### A classifier to attack
# A two-layer perceptron (64 pixels → 64 ReLU units → 10 classes), trained with
# Adam on three quarters of the digits; the rest is the test set.

# %%
model = adversarial.trained_digits_mlp()
Xtr, ytr, X, y = adversarial.digits_split()
print(f"train {len(ytr)} images, test {len(y)}; test accuracy {np.mean(model.predict(X) == y):.1%}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The fast gradient sign method
# The loss $\mathcal{L}(x)$ of an input image $x$ rises fastest, per unit of L∞ change, along the sign of
# its gradient. [FGSM](../book/glossary.md#adversarial-example) takes one such step of size $\varepsilon$ per pixel
# (Goodfellow et al. 2015): $x' = \mathrm{clip}\big(x + \varepsilon\,\mathrm{sign}(\nabla_x \mathcal{L}),\ 0, 1\big)$.
# Pixels are scaled to [0, 1], so one grey level is $1/16 = 0.0625$. (The
# published anchor: Goodfellow et al.'s ImageNet example, GoogLeNet, turns a
# panda at 57.7% into a gibbon at 99.3% with $\varepsilon = 0.007$ — the size of
# one step of the 8-bit image encoding after GoogLeNet's input scaling, i.e. one of
# 256 levels; their Figure 1, arXiv:1412.6572. The ε and its 8-bit reading were
# re-checked against a study group's summary of the paper; the two confidences were not.) The
# baseline: a random sign pattern of the same size.

# %% slideshow={"slide_type": "subslide"}
eps = np.linspace(0, 0.3, 31)
rng = np.random.default_rng(0)
acc_fgsm = [np.mean(model.predict(adversarial.fgsm(model, X, y, e)) == y) for e in eps]
signs = rng.choice([-1.0, 1.0], size=X.shape)
acc_rand = [np.mean(model.predict(np.clip(X + e * signs, 0, 1)) == y) for e in eps]
ok = model.predict(X) == y
flip_fgsm = adversarial.min_flip_eps(model, X[ok], y[ok])
flip_rand = adversarial.min_flip_eps(model, X[ok], y[ok], direction="random")

fig, (ax1, ax2) = plots.new_axes(2, width=5.2)
ax1.plot(eps, acc_fgsm, "o-", ms=3, label="gradient sign (FGSM)")
ax1.plot(eps, acc_rand, "s-", ms=3, label="random sign, same size")
for g in (1, 2, 3, 4):
    ax1.axvline(g / 16, color="gray", ls=":", lw=0.8)
ax1.set_xlabel("perturbation per pixel, L-inf (dotted: grey levels)"); ax1.set_ylabel("test accuracy")
ax1.set_title("Accuracy against perturbation size"); ax1.legend(fontsize=8); ax1.grid(True, alpha=0.3)
bins = np.linspace(0, 1, 41)
ax2.hist(flip_fgsm, bins, alpha=0.7, label=f"gradient sign: median {np.median(flip_fgsm):.3f}")
ax2.hist(np.where(np.isfinite(flip_rand), flip_rand, 1.0), bins, alpha=0.7,
         label=f"random sign: median {np.median(flip_rand):.3f}\n({np.mean(~np.isfinite(flip_rand)):.0%} never flip, drawn at 1)")
ax2.set_xlabel("smallest perturbation flipping the label"); ax2.set_ylabel("test images")
ax2.set_title("Per image: how far to the decision boundary")
ax2.set_ylim(0, ax2.get_ylim()[1] * 1.5)  # headroom: the legend sits above the tallest bars, not on them
ax2.legend(fontsize=8, loc="upper center")
plt.show()

# %% [markdown]
# Along the gradient sign, a change of about 1.4 grey levels per pixel flips
# half the test images; random noise must be about four times larger to flip
# half, and a tenth of the images never flip under random noise at all. A
# picture of one image and its adversarial twin, and an explorer:

# %% slideshow={"slide_type": "subslide"}
i = int(np.argmin(np.abs(flip_fgsm - np.median(flip_fgsm))))
x0, y0 = X[ok][i:i + 1], y[ok][i:i + 1]
xa = adversarial.fgsm(model, x0, y0, flip_fgsm[i])
fig, axes = plots.new_axes(3, width=2.6, height=2.8)
for ax, img, title in zip(axes, (x0, xa, xa - x0), (f"original: {model.predict(x0)[0]}",
                                                     f"adversarial: {model.predict(xa)[0]}", "difference")):
    if title == "difference":  # scaled to its own size, or it would be invisible
        e = float(np.abs(img).max())
        im = ax.imshow(img.reshape(8, 8), cmap="coolwarm", vmin=-e, vmax=e)
        fig.colorbar(im, ax=ax, fraction=0.046, label="pixel change")
    else:
        ax.imshow(img.reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)
    ax.set_title(title, fontsize=10); ax.set_xticks([]); ax.set_yticks([])
plt.show()

# %% slideshow={"slide_type": "subslide"}
adv_explorer = explorers.adversarial_explorer(index=i)
adv_explorer.widget

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### The cipher side: avalanche
# A block cipher is built so that flipping **any one** input bit flips about
# half the output bits. Our 64-bit Feistel network (`llmmath.ciphers`: rounds
# $(x_1, x_2) \to (x_2,\ x_1 \oplus \psi(x_2, \kappa_i))$ on the two 32-bit halves, with round function $\psi$ and
# round key $\kappa_i$) reaches that after three rounds;
# SHA-256, from Python's standard library, flips half of its 256 output bits.

# %% slideshow={"slide_type": "subslide"}
rounds = np.arange(1, 9)
aval = [ciphers.avalanche_feistel(int(r)).mean() for r in rounds]
sha = ciphers.avalanche_sha256(400)
fig, (ax1, ax2) = plots.new_axes(2, width=5.0)
ax1.plot(rounds, np.array(aval) / 64, "o-"); ax1.axhline(0.5, color="k", ls="--", lw=1)
ax1.set_xlabel("Feistel rounds"); ax1.set_ylabel("fraction of 64 output bits flipped"); ax1.set_ylim(0, 0.6)
ax1.set_title("One input bit flipped: avalanche by round"); ax1.grid(True, alpha=0.3)
ax2.hist(sha, bins=np.arange(90, 170, 3)); ax2.axvline(128, color="k", ls="--")
ax2.set_xlabel("SHA-256 output bits flipped (of 256)"); ax2.set_ylabel("messages")
ax2.set_title(f"SHA-256: mean {sha.mean():.1f} bits")
plt.show()
keys = ciphers.feistel_keys(8)
blocks = np.random.default_rng(3).integers(0, 2**63, 1000, dtype=np.uint64)
assert np.array_equal(ciphers.feistel_decrypt(ciphers.feistel_encrypt(blocks, keys), keys), blocks)
print("Feistel decryption inverts encryption for 1000 random blocks, whatever the round function")

# %% [markdown]
# Now the classifier under the smallest input change it can see — one pixel
# up by one grey level — against the cipher under one flipped bit:

# %%
one = np.clip(X + np.eye(64)[rng.integers(0, 64, len(y))] / 16, 0, 1)
changed = np.mean(model.predict(one) != model.predict(X))
dp = np.abs(model.probabilities(one) - model.probabilities(X)).sum(axis=1)
print(f"classifier: one pixel +1 grey level changes {changed:.1%} of predictions; "
      f"median change of the probability vector (L1) {np.median(dp):.4f}")
print(f"cipher: one bit flipped changes {np.mean(aval[-1]) / 64:.0%} of the output bits on average, "
      f"whichever bit (SHA-256: {sha.mean():.1f} of 256, standard deviation {sha.std():.1f})")

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Why so small? The linear account
# For a linear score $\theta^\top x$ (weights $\theta$), the perturbation $\varepsilon\,\mathrm{sign}(\theta)$
# moves the score by $\varepsilon\,\lVert \theta\rVert_1$, while random signs of the
# same size move it by about $\varepsilon\,\lVert \theta\rVert_2$. With $n_\text{in}$ inputs of
# similar weight, $\lVert \theta\rVert_1 \approx n_\text{in}\,\overline{|\theta|}$ but
# $\lVert \theta\rVert_2 \approx \sqrt{n_\text{in}}\,\overline{|\theta|}$: the worst-case direction
# gains $\sqrt{n_\text{in}}$ over random noise, and the size needed to cross a fixed
# margin falls as $1/n_\text{in}$. In high dimension, many imperceptible changes add up
# (Goodfellow et al. 2015, section 3). A synthetic check:

# %% slideshow={"slide_type": "subslide"}
dims = np.array([16, 64, 256, 1024, 4096, 16384])
r2 = np.random.default_rng(1)
eps_adv, eps_rnd = [], []
for m_ in dims:
    w = r2.normal(0, 1, (200, m_))               # 200 random linear models of dimension m
    eps_adv.append(np.median(adversarial.linear_flip_eps(w, 1.0)))
    s = r2.choice([-1.0, 1.0], size=w.shape)
    eps_rnd.append(np.median(1.0 / np.abs((w * s).sum(axis=1))))
fig, ax = plots.new_axes(width=6, height=3.8)
ax.loglog(dims, eps_adv, "o-", label="worst-case (sign of w): margin / ||w||_1")
ax.loglog(dims, eps_rnd, "s-", label="random signs: margin / |w . s|")
ax.loglog(dims, 1.0 / (dims * np.sqrt(2 / np.pi)), "k:", label="1 / (m E|w|)")
ax.set_xlabel("input dimension m"); ax.set_ylabel("L-inf size to move the score by 1")
ax.set_title("Adversarial size falls as 1/m, random as 1/sqrt(m)"); ax.legend(fontsize=8); ax.grid(True, which="both", alpha=0.3)
plt.show()
assert eps_adv[-1] / eps_adv[0] < 1.5 * dims[0] / dims[-1], "the worst-case size should fall like 1/m"

# %%
v38 = claims.check(38)
assert v38.verdict == "holds"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 39 (2:12:58) — reversible layers: recompute instead of store
#
# *Claim, paraphrased:* because a Feistel-style layer can be run backwards,
# training need not store its activations; the backward pass rebuilds them.
#
# The ordinary alternatives, selective and full recomputation, are priced in bytes per layer and extra FLOPs per step in [chapter 10](10_training_at_scale.py).
#
# **Derivation.** The cipher's trick works for any round function: with $+$ in
# place of xor, a **coupling block** maps $(x_1, x_2)$ to
#
# $$y_1 = x_1 + \psi_1(x_2), \qquad y_2 = x_2 + \psi_2(y_1),$$
#
# and is undone by $x_2 = y_2 - \psi_2(y_1)$, $x_1 = y_1 - \psi_1(x_2)$ — no matter what
# $\psi_1$ and $\psi_2$ are (RevNets: Gomez et al. 2017). The backward pass walks the
# blocks in reverse, rebuilding each block's input (and the $\psi_1$, $\psi_2$ outputs
# it needs) from its output, then backpropagating through it. Cost: one extra
# forward pass; memory: independent of depth. The catch is floating point: the
# inverse is exact in real arithmetic, not in float32. And only the coupling
# blocks are invertible: a layer that discards information — a pooling or
# strided downsampling, a change of width, the final projection to the output —
# has no inverse, so its input must still be stored (RevNets store the
# activations at each such layer; the savings come from the reversible blocks
# between them).

# %% slideshow={"slide_type": "subslide"}
depths = np.array(reversible.DRIFT_DEPTHS)
fig, ax = plots.new_axes(width=6, height=3.8)
for (dt, gain), errs in reversible.drift_table().items():   # X[:256] rebuilt at each depth, computed once (cached)
    ax.loglog(depths, np.maximum(errs, 1e-18), "o-" if dt == "float32" else "s-", label=f"{dt}, weight gain {gain}")
ax.set_xlabel("reversible blocks"); ax.set_ylabel("||x_rebuilt - x|| / ||x||")
ax.set_title("Going there and back: drift grows with depth"); ax.legend(fontsize=8); ax.grid(True, which="both", alpha=0.3)
plt.show()

# %% [markdown]
# The drift grows with depth and with how strongly the blocks amplify (the
# weight gain): float64 stays near $10^{-15}$–$10^{-11}$; float32 reaches
# $10^{-4}$–$10^{-3}$ and, with amplifying blocks at depth 128, a few percent. Reversible
# training in low precision needs care (RevNets kept activations in float32 and
# report that the gradients still trained well).
#
# **Gradients.** Recomputed gradients must equal those of ordinary
# backpropagation (which stores every block's values), and both must agree with
# a finite difference:

# %%
net = reversible.init_revnet(64, 8, seed=2)
xb, yb = Xtr[:512], ytr[:512]
loss_s, g_store = reversible.loss_and_grads(net, xb, yb, "store")
loss_r, g_rec = reversible.loss_and_grads(net, xb, yb, "recompute")
loss_c, g_chk = reversible.loss_and_grads(net, xb, yb, "checkpoint")
W = net.blocks[5][2]
old, h = W[3, 7], 1e-6
W[3, 7] = old + h; lp, _ = reversible.loss_and_grads(net, xb, yb, "store")
W[3, 7] = old - h; lm, _ = reversible.loss_and_grads(net, xb, yb, "store")
W[3, 7] = old
fd = (lp - lm) / (2 * h)
diff = max(np.max(np.abs(a - b)) for a, b in zip(g_store, g_rec))
print(f"max |recomputed - stored| over all gradients: {diff:.1e}; checkpointed: "
      f"{max(np.max(np.abs(a - b)) for a, b in zip(g_store, g_chk)):.1e}")
print(f"one weight: backprop {g_store[5 * 4 + 2][3, 7]:.8f}, finite difference {fd:.8f}")
assert diff < 1e-10 and abs(fd - g_store[5 * 4 + 2][3, 7]) < 1e-6

# %% [markdown]
# **Training through the inverse.** An 8-block reversible network learns the
# digits using only recomputed activations (Adam, mini-batches of 256):

# %%
net = reversible.init_revnet(64, 8, seed=3)
params = net.params()
mom = [np.zeros_like(p) for p in params]
vel = [np.zeros_like(p) for p in params]
losses = []
batches = np.random.default_rng(6)
for t in range(1, 81):
    pick = batches.choice(len(ytr), 256, replace=False)
    loss, grads = reversible.loss_and_grads(net, Xtr[pick], ytr[pick], "recompute")
    losses.append(loss)
    for p, g, a, v in zip(params, grads, mom, vel):
        a *= 0.9; a += 0.1 * g; v *= 0.999; v += 0.001 * g * g
        p -= 0.01 * (a / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
y1, y2 = reversible.forward(net, X)
test_acc = np.mean((np.concatenate([y1, y2], axis=1) @ net.Wo + net.bo).argmax(axis=1) == y)
print(f"loss {losses[0]:.3f} -> {np.mean(losses[-10:]):.3f} (last 10 steps) in 80 steps; test accuracy {test_acc:.1%}")
assert np.mean(losses[-10:]) < 0.5 * losses[0] and test_acc > 0.85

# %% [markdown]
# **Measured: memory and time against depth.** Peak memory (Python's
# `tracemalloc`, which sees NumPy's allocations) of one forward + backward pass
# on 1,024 images, for stored activations, recomputation through the inverse,
# and checkpointing every $\lceil\sqrt{n_\ell}\,\rceil$ of the $n_\ell$ blocks (store the segment
# starts, recompute each segment forward: memory $\sim 2\sqrt{n_\ell}$ blocks' worth).
# Times are measured without tracing, the three modes round-robin on one BLAS
# thread, so that their ratio is read under the same load. The time prediction
# counts products: per block the forward is 2 and the backward 4, and recomputing
# adds the inverse's 2, so recompute / store = 8/6 = 4/3. It leaves out memory
# traffic: the stored mode keeps every block's activations (the print below gives
# the bytes per block), and once they outgrow the last-level cache its backward
# reads them back from memory while the recomputing mode's working set stays
# cached. The last line below gives the ratio at every depth beside the stored
# bytes, so you can see whether that happened on this machine.

# %% slideshow={"slide_type": "subslide"}
xb = np.tile(X, (3, 1))[:1024]
yb = np.tile(y, 3)[:1024]
ds = reversible.depth_sweep(xb, yb, depths=(2, 4, 8, 16, 32))
depths, peak, secs = ds.depths, ds.peak_bytes, ds.seconds
fig, (ax1, ax2) = plots.new_axes(2, width=5.0)
for mode in peak:
    ax1.plot(depths, np.array(peak[mode]) / 1e6, "o-", label=mode)
    ax2.plot(depths, np.array(secs[mode]) * 1e3, "o-", label=mode)
ax1.set_xlabel("blocks"); ax1.set_ylabel("peak memory (MB)"); ax1.set_title("Peak memory of forward + backward")
ax2.set_xlabel("blocks"); ax2.set_ylabel("time (ms)"); ax2.set_title("Time of forward + backward")
for ax in (ax1, ax2):
    ax.grid(True, alpha=0.3); ax.legend(fontsize=8)
plt.show()
print(f"stored: {ds.stored_bytes_per_block / 1e6:.2f} MB more per block (predicted: inputs + two tanh outputs = "
      f"{ds.predicted_bytes_per_block / 1e6:.2f} MB; measured / predicted "
      f"{ds.stored_bytes_per_block / ds.predicted_bytes_per_block:.2f}); "
      f"recomputed: {peak['recompute'][0] / 1e6:.1f} -> {peak['recompute'][-1] / 1e6:.1f} MB")
print(f"time at {depths[-1]:.0f} blocks, recompute / store: {ds.recompute_over_store_s:.2f} "
      f"(predicted {ds.PREDICTED_TIME_RATIO:.2f}: one extra forward on top of forward + backward = 2 + 4 matmuls "
      f"per block; measured / predicted {ds.recompute_over_store_s / ds.PREDICTED_TIME_RATIO:.2f})")
llc_bytes = kernels.last_level_cache_bytes()
print("recompute / store by depth (with the activations the stored mode keeps, predicted, against this machine's "
      f"{llc_bytes / 1e6:.1f} MB last-level cache): " + ", ".join(
          f"{d:.0f} blocks {r:.2f} ({d * ds.predicted_bytes_per_block / 1e6:.0f} MB)"
          for d, r in zip(depths, ds.recompute_over_store_by_depth)))
assert peak["recompute"][-1] < 1.3 * peak["recompute"][0], "recomputation should keep memory flat"
assert peak["store"][-1] > 3 * peak["store"][0], "stored activations should grow with depth"

# %% [markdown]
# **Explore:** move the depth and watch the stored activations grow while the
# recomputed ones stay flat (crosses: beyond an H100's 80 GB), at the Reformer's
# published scale — activations of 64K tokens × 1,024 wide × batch 8 are 0.5B
# floats, 2 GB per layer in fp32 (Kitaev et al. 2020, introduction) — or at this
# chapter's toy; the right panel reads the drift of the rebuilt input for the
# precision and weight gain (RevNets: activation storage independent of depth,
# Gomez et al. 2017).

# %%
explorers.reversible_explorer()

# %%
v39 = claims.check(39)
assert v39.verdict == "holds"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 40 (2:13:35) — spending memory to save compute usually pays
#
# *Claim, paraphrased:* given today's hardware, storing results to avoid
# recomputing them — the KV cache is the example — is generally the profitable
# direction. (A one-line remark in the interview; we test it on both sides.)
#
# [Chapter 10](10_training_at_scale.py) applies this trade to training activations: selective recomputation costs one more attention forward and frees the $5n_hL/d$ bytes (per token per $d$) of scores.
#
# ### The KV cache: read, or recompute?
# A cached token's K and V cost $\beta$ bytes to read: $t_\text{read} = \beta/W$.
# Recomputing them needs that token's hidden state at every layer — a forward
# pass of the token: $t_\text{recompute} = (2N_\text{mm} + aL)/F$ at full
# efficiency. Their ratio is $\dfrac{(2N_\text{mm}+aL)\,W}{\beta\,F}$:

# %%
print(f"{'model':<15} {'chip':<9} {'read':>9} {'recompute':>10} {'ratio':>7}   (per cached token, context 4096)")
for m_ in ("llama-3.1-8b", "llama-3.1-70b", "deepseek-v3"):
    for c in ("h100-sxm", "b200", "tpu-v5e"):
        r, rc = memory.kv_read_vs_recompute_s(m_, c, 4096)
        print(f"{m_:<15} {c:<9} {r * 1e9:>7.1f}ns {rc * 1e6:>8.1f}us {rc / r:>6.0f}x")

# %% [markdown]
# **Measured on this machine.** A toy 8-layer model (width 1024, fp32) whose
# layers compute $h \leftarrow \tanh(h\Theta)$, keys $h\Theta_k$ and values $h\Theta_v$: recompute K, V
# for 256 past tokens, or gather them from a cache. Predictions from this
# machine's ceilings (chapter 0), sampled between the rounds in which the two are
# timed, so both sides and their ceilings see the same load. Each call starts with
# the caches cleared by a read sweep, so the gather reads the cache from memory, as
# it would for tokens written many steps ago.

# %%
def remeasure_rvr():
    return kernels.read_vs_recompute(n_layers=8, d_model=1024, n_tokens=256, n_cached=1024, rounds=11)


rvr = remeasure_rvr()
t_rec, t_read = np.median(rvr.recompute_s), np.median(rvr.read_s)
# each round times both sides back to back: the ratio within a round sees one load, its median over rounds
# is robust to a round in which the machine was busy for one side only
paired = rvr.paired_ratio
print(f"recompute K,V of 256 tokens through 8 layers: median {t_rec * 1e3:.2f} ms, predicted "
      f"{rvr.recompute_predicted_s * 1e3:.2f} ms (measured / predicted {rvr.recompute_over_predicted:.2f})")
print(f"read them from the cache:                    median {t_read * 1e3:.2f} ms, predicted "
      f"{rvr.read_predicted_s * 1e3:.2f} ms (measured / predicted {rvr.read_over_predicted:.2f})")
print(f"reading is {np.median(paired):.0f}x faster here: median of {len(paired)} paired rounds, middle half "
      f"{np.percentile(paired, 25):.0f}-{np.percentile(paired, 75):.0f}x "
      f"(predicted {rvr.recompute_predicted_s / rvr.read_predicted_s:.0f}x)")
print(f"(the prediction prices each of the recompute's 256-row products at the rate one of them reached here, "
      f"{rvr.flops_per_s / 1e9:,.0f} GFLOP/s, {rvr.flops_per_s / rvr.square_flops_per_s:.0%} of a large square "
      f"product's {rvr.square_flops_per_s / 1e9:,.0f}; the tanh between them is not priced)")
measured.check("reading cached K, V beats recomputing them", lambda r: [measured.Fact(
    "recompute / read, median of paired rounds", float(np.median(r.paired_ratio)), low=5,
    why="the roofline gives more than 10x; equal costs would give 1x")], rvr, remeasure=remeasure_rvr)

# %% [markdown]
# **Explore:** move the hold time and watch which tier the drain-time rule picks
# (the fastest tier whose capacity / bandwidth covers the hold), and whether
# reading a cached token back from it beats recomputing it on the chip.

# %%
explorers.kv_tier_explorer()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Training activations: where memory is the scarce resource
# During training, every layer must keep its activations until the backward
# pass. Korthikanti et al. (2022) count, for a GPT-style layer with 16-bit
# activations and 1-byte dropout masks, $L\,b\,d\,(34 + 5n_hL/d)$ bytes (sequences of $L$ tokens,
# micro-batches of $b$, hidden size $d$, $n_h$ heads; their paper writes *s, b, h, a*);
# `memory.activation_bytes_per_layer` implements their accounting, with
# tensor and sequence parallelism and the two recomputation strategies.

# %% slideshow={"slide_type": "subslide"}
g3 = models.get("gpt-3-175b")
s_ = np.array([1024, 2048, 4096, 8192, 16384, 32768])
fig, ax = plots.new_axes(width=6.5, height=3.8)
for mode, kw in (("none", {}), ("selective", {"recompute": "selective"}), ("full", {"recompute": "full"})):
    per_gpu = g3.n_layers * memory.activation_bytes_per_layer(s_, 1, g3.d_model, g3.n_heads, 8, True, **kw)
    ax.loglog(s_, per_gpu / 1e9, "o-", label=f"recompute: {mode}")
ax.axhline(80, color="k", ls="--", lw=1, label="H100 HBM (80 GB)")
ax.set_xlabel("sequence length s"); ax.set_ylabel("activations per GPU, all 96 layers (GB)")
ax.set_title("GPT-3 175B, micro-batch 1, TP8 + sequence parallel"); ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
plt.show()
s_fine = np.arange(1024, 32769, 16)
plain = g3.n_layers * memory.activation_bytes_per_layer(s_fine, 1, g3.d_model, g3.n_heads, 8, True)
print(f"without recomputation the activations pass 80 GB per GPU at s = {s_fine[np.argmax(plain > 80e9)]:,} tokens")

# %% [markdown]
# Without recomputation the activations alone exceed an H100's HBM from the
# length printed above (about 3,300 tokens); selective recomputation (rebuild only the attention scores, a few
# percent more FLOPs in the paper's measurements) cuts them 3× at s = 2048 and
# far more at long sequence; full recomputation keeps one input per layer at
# the cost of a whole extra forward. Where capacity binds, trading compute for
# memory is what practitioners do — the direction opposite to the KV cache.

# %%
v40 = claims.check(40)
assert v40.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# | # | time | claim | verdict |
# |---|---|---|---|
# | 38 | 2:08:05 | tiny perturbations flip networks; ciphers want that | **holds**: ~1.4 grey levels per pixel along the gradient sign flip half the digits; random noise must be ~4× larger; a cipher flips half its bits for any one-bit change |
# | 39 | 2:12:58 | reversible layers need not store activations | **holds**: exact gradients, flat memory with depth, one extra forward; float32 drift grows with depth |
# | 40 | 2:13:35 | memory for compute usually pays | **holds if** the stored bytes are re-read soon: KV reads are hundreds to thousands of times cheaper than recomputation (range in the check above; MLA recomputed in its prefill form); in capacity-bound training the trade runs the other way |
#
# Exercises: `exercises/09_ciphers_and_reversibility_exercises.py`.

# %% [markdown]
# **Read next.** [Chapter 10](10_training_at_scale.py) applies the store-or-recompute trade to
# a real training step, with every byte of model state and every activation
# counted. Outside reading: Goodfellow, Shlens and Szegedy, "Explaining and
# harnessing adversarial examples" (arXiv:1412.6572), and Gomez et al., "The
# reversible residual network" (arXiv:1707.04585).
