# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 7 — Training economics: batch size, balancing costs, and how far past Chinchilla
#
# Five claims, most of them rules of thumb. For each we say which it is, do
# the arithmetic, and name the inputs that are guesses.
#
# | # | time | claim, in our words |
# |---|---|---|
# | 23 | 59:58 | per example, smaller training batches always make more progress; big batches are for throughput |
# | 28 | 1:20:53 | a sum of a rising and a falling cost is smallest about where the two are equal |
# | 29 | 1:24:16 | as a default, split compute in thirds: pre-training, RL, inference |
# | 30 | 1:28:31 | for equal machine time, RL should see fewer tokens than pre-training |
# | 31 | 1:32:19 | back-of-envelope: today's leading models see about a hundred times more data than compute-optimal training would use |
#
# **After this chapter you can** measure a critical batch size, minimize a sum
# of power laws, compute the Chinchilla-optimal model for a budget from either
# published fit, and put numbers on the pre-training / RL / inference split.

# %% [markdown]
# **Before you start.** This chapter stands mostly on its own: it needs the FLOPs of a
# training token ([6ND](../book/glossary.md#6nd): 2 per parameter forward, 4 backward), the
# [MFU](../book/glossary.md#mfu) of [chapter 2](02_kv_cache.py), and some comfort with power laws. Glossary entries that
# matter here: [critical batch size](../book/glossary.md#critical-batch-size), [Chinchilla](../book/glossary.md#chinchilla),
# [RL](../book/glossary.md#rl) and [MFU](../book/glossary.md#mfu); symbols $B$, $S$, $n_\text{ex}$, $B_\text{crit}$, $N$, $D$, $p$, $q$,
# $\alpha_N$, $\alpha_D$, $c_\text{RL}$ on the [notation](../book/notation.md) page. About 50 minutes.

# %%
import numpy as np
import matplotlib.pyplot as plt

from llmmath import _catalog, claims, critical_batch, hardware, models, plots, training, explorers, widgets

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 23 (59:58) — smaller batches are better per example
#
# *Claim, paraphrased:* judged only by how much each example improves the
# model, smaller batches always win; larger batches are chosen because they
# use the machine better.
#
# What a larger batch buys the system is computed in [chapter 10](10_training_at_scale.py): more micro-batches per pipeline, a smaller bubble, a higher MFU.
#
# **Derivation** (McCandlish et al., *An Empirical Model of Large-Batch
# Training*, 2018). Near-optimal SGD (stochastic gradient descent) with batch $B$ needs
#
# $$S = S_\text{min}\Big(1 + \frac{B_\text{noise}}{B}\Big)\ \text{steps},\qquad
#   n_\text{ex} = n_\text{ex,min}\Big(1 + \frac{B}{B_\text{noise}}\Big)\ \text{examples},\qquad
#   B_\text{crit} = \frac{n_\text{ex,min}}{S_\text{min}} = B_\text{noise},$$
#
# so $(S/S_\text{min} - 1)(n_\text{ex}/n_\text{ex,min} - 1) = 1$ ($B_\text{crit}$ is the
# [critical batch size](../book/glossary.md#critical-batch-size)). Examples are within a factor
# $1 + B/B_\text{crit}$ of the minimum: a smaller batch is always at least as good
# per example, but the difference is noise well below $B_\text{crit}$ (1.125× at
# $B_\text{crit}/8$) and a factor 2 at $B_\text{crit}$. Above it, each doubling of the
# batch nearly doubles the examples and saves few steps. $B_\text{noise}$ is
# predicted by the gradient noise scale $B_\text{simple} = \mathrm{tr}\,\Sigma / |g|^2$, with $\Sigma$ the
# covariance of one example's gradient and $g$ the true (full-data) gradient.
#
# **Measured.** A noisy linear teacher–student regression (fresh data every
# step, 32 dimensions, an ill-conditioned input covariance), trained by SGD at
# batch 1 … 1024 with the learning rate tuned per batch (16 seeds each), to a
# fixed target loss (`llmmath.demos.critical_batch`):

# %%
run, fit = critical_batch.default_run()   # the sweep, run once and cached (the explorer below reads it too)
ns = critical_batch.measured_noise_scale(run.task, run.target_loss, float(run.lr[-1]))
print(run.table())
print(f"\nfit: S_min = {fit.S_min:.1f} steps, E_min = {fit.E_min:.0f} examples, B_crit = {fit.B_crit:.0f} "
      f"(rms relative residual {fit.rms_rel_residual:.1%}); measured in {run.elapsed_s:.2f} s")
print(f"gradient noise scale B_simple: {ns.at_start:.0f} at the start, {ns.at_target:.0f} at the target, "
      f"{ns.run_average:.0f} averaged over the run (exact: {ns.exact_run_average:.0f})")

# %% slideshow={"slide_type": "subslide"}
B = np.logspace(0, 3.1, 200)
fig, (ax1, ax2) = plots.new_axes(2, width=5.0)
ax1.loglog(run.batch, run.steps, "o", label="measured")
ax1.loglog(B, critical_batch.steps_model(B, fit.S_min, fit.B_crit), "k-", label="S_min (1 + B_crit / B)")
ax2.loglog(run.batch, run.examples, "o", label="measured")
ax2.loglog(B, critical_batch.examples_model(B, fit.E_min, fit.B_crit), "k-", label="E_min (1 + B / B_crit)")
for ax, yl in ((ax1, "steps to target"), (ax2, "examples to target")):
    ax.axvline(fit.B_crit, color="C3", ls=":", label=f"B_crit = {fit.B_crit:.0f}")
    ax.set_xlabel("batch size B"); ax.set_ylabel(yl); ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
ax1.set_title("Steps: flat above B_crit"); ax2.set_title("Examples: flat below B_crit")
plt.show()

# %% [markdown]
# **Explore:** move the batch and watch the two costs trade: below $B_\text{crit}$ the
# examples (right) barely move while the steps (left) fall in proportion; above it
# the steps flatten and the examples climb. The dropdown sets a real run's batch
# beside the toy: GPT-3 175B ramped its batch from 32K to 3.2M tokens per step
# (Brown et al. 2020, Table 2.1 and appendix B), Llama 3 405B from 4M to 16M tokens
# per step (*The Llama 3 Herd of Models*, 2024, section 3.4.1) — their critical
# batches are in tokens and come from their own noise scales, not from this task.
# The three real runs in the catalog, each with its batch schedule:

# %%
runs = _catalog.load("training_runs.toml")["runs"]
print(f"{'run':<16} {'batch, tokens per step (from -> to)':<40} {'reached after':>14} {'tokens / final batch':>21}")
for key in ("gpt-3-175b", "llama-3.1-405b", "deepseek-v3"):
    r = runs[key]
    sched = " -> ".join(f"{b / 1e6:,.3g}M" for b in r["batch_tokens"])
    print(f"{key:<16} {sched:<40} {r['batch_at_tokens'][-1] / 1e9:>12,.0f}B "
          f"{r['tokens'] / r['batch_tokens'][-1]:>21,.0f}")
print("each run starts small and raises its batch as the loss falls: the critical batch grows as training goes on "
      "(McCandlish et al. 2018), and a run takes the largest batch that is still cheap in examples")

# %%
explorers.critical_batch_explorer()

# %%
v23 = claims.check(23)
assert v23.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 28 (1:20:53) — minimize a sum where the terms are equal
#
# *Claim, paraphrased:* when the total is one cost that falls with a design
# choice plus another that rises, the best choice is usually near where the two
# costs are equal. The speaker offered it as a heuristic.
#
# The training planner of [chapter 10](10_training_at_scale.py) is a many-term version: step time as compute plus bubble plus communication, each moving its own way with the parallel degrees.
#
# **Derivation.** For $\phi(z) = c_1 z^p + c_2 z^{-q}$, setting $\phi'(z) = 0$ gives
# $p\,c_1 z^p = q\,c_2 z^{-q}$: at the minimum the two terms stand in the ratio
# $q : p$. They are *equal* exactly when $p = q$ ($z + 1/z$; and $e^z + e^{-z}$ by
# symmetry), and close when the exponents are close. Applied to the [Chinchilla](../book/glossary.md#chinchilla)
# loss $A_N/N^{\alpha_N} + A_D/D^{\alpha_D}$ ($N$ parameters, $D$ training tokens) at fixed compute: the terms stand $\alpha_D : \alpha_N$ —
# 0.82 with the published fit, 1.05 with Epoch's refit.
#
# Applied to the speaker's case — train a model to a target loss, then serve
# it: a bigger model needs fewer tokens, so $D(N)$ falls with size all the way
# (toward the tokens an infinite model would need); training compute
# $6 N D(N)$ falls with it while $D(N)$ falls faster than $N$ grows, bottoms out,
# and grows again beyond; serving compute $2 N D_\text{inf}$ rises throughout.
#
# Near a given size the training term behaves like $N^{-q}$. Holding the loss
# fixed, $\alpha_N\,\ell_N\,\mathrm{d}\ln N = -\alpha_D\,\ell_D\,\mathrm{d}\ln D$ with $\ell_N = A_N/N^{\alpha_N}$ and $\ell_D = A_D/D^{\alpha_D}$, so
# $q = \frac{\alpha_N}{\alpha_D}\frac{\ell_N}{\ell_D} - 1$: at the cheapest size, training : serving $= 1 : q$, and
# "make them equal" is exact only where $q = 1$. The check evaluates $q$ on the Llama 3.1
# runs (their parameters and tokens from the catalogs, verified against the Llama 3 paper's
# 3.8×10²⁵ FLOPs) and compares the hand result with the library's numeric minimum.
#
# **In chip-hours, not FLOPs.** The heuristic is about *costs*, and a FLOP of
# serving costs more chip time than a FLOP of training: decode is memory-bound
# (DeepSeek-V3's production decode runs at ~14% MFU, claim 29's check derives it,
# against 38–43% for Llama 3's pre-training). `training.train_and_serve_chip_s`
# divides each phase's FLOPs by the FLOP/s its chip delivers, $F \times$ MFU; the
# exchange rate moves the optimum toward smaller models served more cheaply.
#
# **Explore.** Move the served tokens first and watch the dot (the minimum) and
# the red square (equal costs) slide left together; then the serving chip, its
# precision and the two MFUs, which set the exchange rate (`explorers.train_serve_explorer`).

# %% slideshow={"slide_type": "subslide"}
train_serve = explorers.train_serve_explorer()
train_serve.widget

# %%
print(f"{'serve on':<16} {'served tokens':>13} {'N at minimum':>13} {'train : serve there':>20} {'cost at equal / min':>20}")
for serve_chip, serve_dtype in (("h100-sxm", "bf16"), ("b200", "fp8")):
    for d_inf in (1e13, 1e15):
        N = np.logspace(9, 13, 8001)
        tr, sv = training.train_and_serve_chip_s(N, 2.0, d_inf, "h100-sxm", serve_chip, 0.40, 0.14, "bf16",
                                                 serve_dtype, "epoch")
        i = int(np.nanargmin(tr + sv))
        j = int(np.nanargmin(np.abs(np.log(tr / sv))))
        print(f"{serve_chip + ' ' + serve_dtype:<16} {d_inf:>13.0e} {N[i]:>13.3g} {tr[i] / sv[i]:>16.2f} : 1 "
              f"{(tr[j] + sv[j]) / (tr[i] + sv[i]):>19.2f}x")
print("(trained on H100s at 40% MFU, served at 14% MFU, loss 2.0, Epoch fit)")

# %%
print(f"{'served tokens':>14} {'N at minimum':>13} {'tokens/param':>13} {'cost at train=serve / minimum':>30}")
for d_inf in (1e12, 1e13, 1e14, 1e15):
    N = np.logspace(9, 13, 8001)
    tr, inf = training.train_and_serve_flops(N, 2.0, d_inf, "epoch")
    i = int(np.nanargmin(tr + inf))
    n_eq, pen = training.train_serve_equal_cost_penalty(d_inf)
    print(f"{d_inf:>14.0e} {N[i]:>13.3g} {float(training.tokens_for_loss(N[i], 2.0, 'epoch')) / N[i]:>13.0f} "
          f"{pen:>29.2f}x")

# %% slideshow={"slide_type": "subslide"}
runs = _catalog.load("training_runs.toml")["runs"]
ops28 = {}   # the check's operating points: each Llama 3.1 run, the loss it reached, and the served tokens it is cheapest for
for key in ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b"):
    n, d = models.get(runs[key]["model"]).active_params, runs[key]["tokens"]
    loss = float(training.chinchilla_loss(n, d, "epoch"))
    tr_pm, _ = training.train_and_serve_flops(n * np.array([0.999, 1.001]), loss, 0.0, "epoch")
    q = -float(np.log(tr_pm[1] / tr_pm[0]) / np.log(1.001 / 0.999))   # training falls as N^-q near the run: slope, numerically
    ops28[key] = dict(n=n, d=d, loss=loss, q=q, d_inf=3 * q * d)
    ops28[key]["n_eq"], ops28[key]["pen"] = training.train_serve_equal_cost_penalty(3 * q * d, target_loss=loss)

op = ops28["llama-3.1-405b"]
N28 = np.logspace(np.log10(op["n"]) - 1, np.log10(op["n"]) + 1, 4001)
tr28, sv28 = training.train_and_serve_flops(N28, op["loss"], op["d_inf"], "epoch")
i_min = int(np.nanargmin(tr28 + sv28))
i_eq = int(np.argmin(np.abs(np.log(N28 / op["n_eq"]))))
D_serve = np.logspace(12.5, 15.5, 121)
pen_curve = {}
for key, o in ops28.items():
    pens = []
    for d_inf in D_serve:
        try:
            pens.append(training.train_serve_equal_cost_penalty(d_inf, target_loss=o["loss"])[1])
        except ValueError:          # serving too small ever to equal training: the heuristic has no point there
            pens.append(np.nan)
    pen_curve[key] = np.array(pens)

fig, (ax1, ax2) = plots.new_axes(2, width=5.0, height=4.2)
tot_min = (tr28 + sv28)[i_min]
ax1.semilogx(N28, tr28 / tot_min, "C0-", label="training, 6 N D(N)")
ax1.semilogx(N28, sv28 / tot_min, "C1-", label="serving, 2 N D_inf")
ax1.semilogx(N28, (tr28 + sv28) / tot_min, "k-", label="total")
ax1.plot(N28[i_min], 1.0, "ko", label="minimum: the run's size")
ax1.plot(N28[i_eq], (tr28 + sv28)[i_eq] / tot_min, "rs", label="training = serving")
ax1.set_xlim(op["n"] / 2.5, op["n"] * 10); ax1.set_ylim(0, 3.6)
ax1.set_xticks([2e11, 5e11, 1e12, 2e12, 4e12], labels=["200B", "500B", "1T", "2T", "4T"], minor=False)
ax1.set_xticks([], minor=True)
ax1.set_xlabel("model size N (parameters)"); ax1.set_ylabel("compute (multiples of the minimum total)")
ax1.set_title(f"Llama-3.1-405B's loss, {op['d_inf'] / 1e12:.0f}T tokens served")
ax1.grid(True, alpha=0.3); ax1.legend(fontsize=9, loc="upper center")
for (key, o), color in zip(ops28.items(), ("C0", "C1", "C2")):
    ax2.semilogx(D_serve, pen_curve[key], "-", color=color, label=f"loss {o['loss']:.3f} ({key})")
    ax2.plot(o["d_inf"], o["pen"], "o", color=color)
ax2.axhline(1, color="k", ls="--", lw=1, label="the heuristic: equal = minimum")
ax2.set_ylim(0.9, 2.6)
ax2.set_xlabel("tokens served, D_inf"); ax2.set_ylabel("total at equal costs (x the minimum)")
ax2.set_title("What 'make them equal' costs (dots: the runs)")
ax2.grid(True, alpha=0.3); ax2.legend(fontsize=9, loc="upper right")
plt.show()

# %% [markdown]
# **Reading the figure.** Left: the check's case for Llama-3.1-405B — its loss,
# served for as many tokens as make its own size the cheapest (the dot). There
# training : serving stands $1 : q$, and this run's $q$ is below 1, so training is
# the larger cost; the two meet (red square) at a bigger model, on a higher
# total. Right: that equal-cost total over the minimum, against the tokens
# served, for the losses of the three Llama 3.1 runs. Each curve touches the
# dashed line (the heuristic exact) only where training falls as $N^{-1}$, i.e.
# $q = 1$; the runs' own operating points (dots) sit on either side of it: the
# smaller models served past it, the 405B short of it, on the steep side. The
# numbers at the dots, and the check's:

# %%
v28_rows = claims.check(28, quiet=True).evidence
print(f"{'run':<16} {'q':>5} {'served tokens':>14} {'N at minimum':>13} {'N at train = serve':>19} {'cost there / min':>17}")
for key, o in ops28.items():
    print(f"{key:<16} {o['q']:>5.2f} {o['d_inf'] / 1e12:>13.0f}T {o['n']:>13.3g} {o['n_eq']:>19.3g} {o['pen']:>16.2f}x")
    row = next(v for k, v in v28_rows.items() if k.startswith(f"{key} ("))
    q_s, dinf_s, pen_s = row.split(" / ")
    # the dot is the check's operating point: its q, its served tokens, and its cost at train = serve
    assert (f"{o['q']:.2f}", f"{o['d_inf'] / 1e12:.0f}T", f"{o['pen']:.2f}x the minimum") == (q_s, dinf_s, pen_s), (key, row)
    # by hand (the derivation above): training's exponent q = (alpha / beta)(a / b) - 1, a = A / N^alpha, b = B / D^beta
    fe = training.FITS["epoch"]
    assert abs(o["q"] / (fe.alpha / fe.beta * (fe.A / o["n"] ** fe.alpha) / (fe.B / o["d"] ** fe.beta) - 1) - 1) < 1e-4
print(f"left panel: minimum at {N28[i_min]:.3g} parameters (the run: {op['n']:.3g}); training : serving there "
      f"{tr28[i_min] / sv28[i_min]:.2f} : 1 (by hand 1 : q = {1 / op['q']:.2f} : 1); the equal-cost total is "
      f"{(tr28 + sv28)[i_eq] / (tr28 + sv28)[i_min]:.2f}x the minimum")
assert abs(N28[i_min] / op["n"] - 1) < 0.01                                  # the dot sits at the run's size
assert abs(tr28[i_min] / sv28[i_min] * op["q"] - 1) < 0.01                   # train : serve = 1 : q at the minimum
assert abs((tr28 + sv28)[i_eq] / (tr28 + sv28)[i_min] / op["pen"] - 1) < 0.01  # the square's height is the right dot's
assert op["q"] < 1 and N28[i_eq] > N28[i_min]      # the prose: training the larger cost, the square right of the dot
# each curve's lowest point is the heuristic exact (1x, where q = 1), and each dot on the side of it the prose says
for key, o in ops28.items():
    assert abs(np.nanmin(pen_curve[key]) - 1) < 0.01, key
    assert (o["d_inf"] > D_serve[np.nanargmin(pen_curve[key])]) == (o["q"] > 1) == (key != "llama-3.1-405b"), key

# %%
v28 = claims.check(28)
assert v28.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# The more a model is served, the smaller and longer-trained its optimum:
# at $10^{15}$ served tokens the best model for loss 2.0 is trained on thousands
# of tokens per parameter — the arithmetic behind claim 31.
#
# ## Claims 29 (1:24:16) and 30 (1:28:31) — a three-way split, and fewer RL tokens
#
# *Claim 29, paraphrased:* without better information, spend roughly a third of
# compute each on pre-training, RL and inference. *Claim 30, paraphrased:* if RL
# and pre-training get equal machine time, RL processes fewer tokens, because
# each RL token costs more.
#
# The MFUs that turn these FLOPs into GPU-hours are derived in [chapter 10](10_training_at_scale.py) (Llama 3 405B 38–43 %; DeepSeek-V3 17–22 % of its FP8 peak).
#
# **Derivation.** Machine time per token, in units of peak-FLOP time:
# pre-training $6N/\text{MFU}_\text{pre}$ ([MFU](../book/glossary.md#mfu)); [RL](../book/glossary.md#rl) $c_\text{RL}N/\text{MFU}_\text{RL}$, with $c_\text{RL}$
# between 2 (rollouts never trained on) and 6 (every token trained on), and a low
# MFU because rollouts are decode; inference $2N/\text{MFU}_\text{inf}$. Equal
# machine time then needs
#
# $$\frac{D_\text{RL}}{D_\text{pre}} = \frac{6}{c_\text{RL}}\cdot\frac{\text{MFU}_\text{RL}}{\text{MFU}_\text{pre}},\qquad
#   \frac{D_\text{inf}}{D_\text{pre}} = 3\,\frac{\text{MFU}_\text{inf}}{\text{MFU}_\text{pre}}.$$
#
# With decode at 30% of training's MFU: $D_\text{RL}/D_\text{pre} = 1.8/c_\text{RL}$ = 0.3–0.9 and
# $D_\text{inf}/D_\text{pre} = 0.9$ — "fewer RL tokens", and all three counts within
# a factor ~3: the same order of magnitude, which is all the thirds rule can
# honestly claim.
#
# *A caveat of this board model:* it charges all of an RL token's $c_\text{RL}N$ FLOPs at
# decode's MFU. Only the rollout ($2N$) is decode; the training part ($4N$ of a
# token that is trained on) runs at training's MFU. With decode's MFU at
# $r_\text{MFU} = 0.40$ of pre-training's, a fully
# trained RL token costs $2/r_\text{MFU} + 4 = 9$ units of $N/\text{MFU}_\text{pre}$,
# not $6/r_\text{MFU} = 15$, so RL is somewhat cheaper per token than the formula above
# says and $D_\text{RL}$ somewhat larger; the order of magnitude does not move.
#
# **The MFUs, from published runs.** A run's MFU is its model FLOPs over the
# GPU-hours it took times the GPU's dense peak. The GPU-hours are the developers'
# (Llama 3.1 model card; DeepSeek-V3 report, pre-training stage only); the peak is
# bf16 dense for every row (DeepSeek's H800 has the H100 SXM's tensor cores; it
# trained its matmuls in fp8, whose peak is twice as high, so its fp8 MFU is half
# the number shown). DeepSeek also published its service's decode rate: 14.8k
# output tokens/s per 8-GPU H800 node (*DeepSeek-V3/R1 Inference System
# Overview*, 2025), i.e. $2 N_\text{act} \times 14{,}800 / (8F)$ — the same model on
# the same chip, so the ratio of the two MFUs does not depend on which peak is used.

# %%
runs = _catalog.load("training_runs.toml")["runs"]
print(f"{'run':<16} {'6 N D':>9} {'GPU-hours':>10} {'MFU (bf16 peak)':>16}")
for key, r in runs.items():
    if "gpu_hours" in r:
        flops = 6 * models.get(r["model"]).active_params * r["tokens"]
        mfu = float(training.achieved_mfu(flops, r["gpu_hours"], hardware.get(r["gpu"]).flops_per_s("bf16")))
        print(f"{key:<16} {flops:>9.2e} {r['gpu_hours'] / 1e6:>9.2f}M {mfu:>15.1%}")
ds, n_ds = runs["deepseek-v3"], models.get("deepseek-v3").active_params
F_h800 = hardware.get(ds["gpu"]).flops_per_s("bf16")
mfu_pre = float(training.achieved_mfu(6 * n_ds * ds["tokens"], ds["gpu_hours"], F_h800))
mfu_dec = 2 * n_ds * 14.8e3 / (8 * F_h800)
rho = mfu_dec / mfu_pre
print(f"\nDeepSeek-V3 decode in service: {mfu_dec:.1%} MFU, {rho:.2f}x its pre-training MFU (the speaker guessed 0.3)")
mfu_gb200 = 2 * n_ds * 7583 / hardware.get("gb200").flops_per_s("bf16")  # SGLang on GB200 NVL72 (LMSYS, 2025-06-16)
print(f"the same model decoding on GB200s (SGLang, 7,583 output tokens/s per GPU): {mfu_gb200:.1%} MFU, "
      f"{mfu_gb200 / mfu_pre:.2f}x the H800 pre-training MFU (no GB200 pre-training MFU is published: assumed the same)")
print(f"(the Llama 3 paper measured 38-43% in the 405B's main stage; the whole-run figures above include "
      f"long-context training, restarts and, for the small models, less efficient parallelism)")

# %% [markdown]
# The plot varies the MFU ratio; the published one is marked.
#
# **Explore:** move the MFU ratio (RL rollouts and serving relative to pre-training)
# and watch the tokens each gets for equal machine time (left: fewer RL tokens
# whenever the ratio is below $c_\text{RL}/6$) and the machine-time shares when the three
# token counts are equal (right, against a third each); the run sets the
# pre-training MFU from its published GPU-hours (DeepSeek-V3 on H800, Llama 3.1 405B on H100).

# %%
explorers.compute_split_explorer()

# %% slideshow={"slide_type": "subslide"}
ratio = np.linspace(0.05, 1, 100)
fig, ax = plots.new_axes(width=6.5, height=3.8)
for c in (2, 4, 6):
    d_rl, _ = training.equal_cost_tokens(1.0, rl_flops_per_param_token=c, mfu_pretrain=1.0, mfu_rl=ratio, mfu_inference=ratio)
    ax.plot(ratio, d_rl, label=f"RL tokens / pre-training tokens, c = {c}")
_, d_inf = training.equal_cost_tokens(1.0, mfu_pretrain=1.0, mfu_rl=ratio, mfu_inference=ratio)
ax.plot(ratio, d_inf, "k--", lw=2.5, alpha=0.5, label="inference tokens / pre-training tokens (= RL at c = 2)")
ax.axhline(1, color="gray", lw=1); ax.axvline(0.3, color="C3", ls=":", label="the speaker's guess: 30% of training's")
ax.axvline(rho, color="C2", ls="--", label=f"DeepSeek-V3, published: {rho:.2f}")
ax.axvline(mfu_gb200 / mfu_pre, color="C4", ls="--", label=f"DeepSeek-V3 decode on GB200 (SGLang): {mfu_gb200 / mfu_pre:.2f}")
ax.set_xlabel("MFU of RL / inference relative to pre-training"); ax.set_ylabel("tokens per pre-training token\n(equal machine time)")
ax.set_title("Equal machine time, unequal tokens"); ax.grid(True, alpha=0.3); ax.legend(fontsize=8)
plt.show()

# %%
v29 = claims.check(29)
assert v29.verdict == "holds if"
v30 = claims.check(30)
assert v30.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 31 (1:32:19) — ~100× past Chinchilla
#
# *Claim, paraphrased:* a back-of-envelope estimate puts a frontier model's
# training data at about a hundred times the Chinchilla-optimal amount.
#
# [Chapter 10](10_training_at_scale.py) recomputes these runs' MFUs from their GPU-hours and says which hours, peak and attention count each figure assumes.
#
# **The arithmetic, with its guesses named.** Inputs: ~50M tokens/s served per
# model (a guess: ~500M/s worldwide split over a family of models), a 2-month
# deployment (a guess), equal pre-training and serving tokens (claim 29's
# heuristic), ~100B active parameters (a rumour-level guess), and Chinchilla's
# 20 tokens per parameter. $5\times10^7 \times 5.3\times10^6\ \text{s} = 2.6\times10^{14}$
# tokens against $2\times10^{12}$: about 130×.
#
# **The 20 tokens per parameter, recomputed.** The rule comes from Chinchilla's
# 70B model trained on 1.4T tokens ($6 \times 70\text{B} \times 1.4\text{T} = 5.9\times10^{23}$
# FLOPs, about Gopher's budget). The paper's own fitted law (Approach 3, as
# printed) implies a different, compute-dependent ratio; Epoch's refit
# (Besiroglu et al. 2024) restores ~20. It is a rule for *dense* models: an MoE
# has two parameter counts, and its compute-optimal ratio per active parameter
# is not the dense one.

# %% slideshow={"slide_type": "subslide"}
C = np.logspace(20, 27, 100)
fig, ax = plots.new_axes(width=6.5, height=3.8)
for fit_name, style in (("hoffmann", "-"), ("epoch", "--")):
    ax.semilogx(C, training.tokens_per_param_optimal(C, fit_name), style,
                label={"hoffmann": "Hoffmann et al. 2022, as published", "epoch": "Besiroglu et al. 2024 refit"}[fit_name])
ax.axhline(20, color="gray", ls=":", label="the rule: 20 tokens per parameter")
C_chin = 6 * 70e9 * 1.4e12   # Chinchilla: 70B parameters on 1.4T tokens
ax.axvline(C_chin, color="C3", lw=1, ls=":", label=f"Chinchilla's budget (70B x 1.4T = {C_chin:.2e} FLOPs)")
ax.set_xlabel("training compute C (FLOPs)"); ax.set_ylabel("compute-optimal tokens per parameter")
ax.set_title("Compute-optimal D / N from each published fit"); ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
plt.show()
from llmmath.course.checks.ch07 import HOFFMANN_UNROUNDED
for name, law in (("hoffmann", "hoffmann"), ("hoffmann, unrounded exponents", HOFFMANN_UNROUNDED), ("epoch", "epoch")):
    N, D = training.chinchilla_optimal(C_chin, law)
    print(f"{name:>29}: at {C_chin:.2e} FLOPs, N* = {N / 1e9:.0f}B, D* = {D / 1e12:.2f}T, {D / N:.0f} tokens per parameter")

# %% [markdown]
# **Public anchors** — reported pre-training tokens against the active
# parameters computed from each model's config, measured two ways:
#
# * **÷ 20 N** — tokens against the rule of thumb at the run's *size*: how much
#   longer than Chinchilla's recipe a model of that size was trained.
# * **÷ D\*(C)** — tokens against the compute-optimal tokens $D^*$ at the run's
#   *compute* $6ND$ (the column's C; Epoch's refit): how far from the best split of the same
#   budget. Spending more compute on a model raises $D^*$ too, so this multiple
#   is smaller (roughly the square root of the first).
#
# For MoE models (DeepSeek-V3, Qwen3-235B) both use active parameters, which the
# dense-model rule was not fitted on: read those rows as rough.

# %%
print(f"{'run':<17} {'tokens':>8} {'active params':>14} {'tokens/param':>13} {'/ 20 N':>7} {'/ D*(C)':>8}")
over = {}
for key, r in _catalog.load("training_runs.toml")["runs"].items():
    n = models.get(r["model"]).active_params
    _, d_opt = training.chinchilla_optimal(6 * n * r["tokens"], "epoch")
    over[key] = (r["tokens"] / n / 20, r["tokens"] / d_opt)
    print(f"{key:<17} {r['tokens'] / 1e12:>7.1f}T {n / 1e9:>13.1f}B {r['tokens'] / n:>13.0f} {over[key][0]:>6.1f}x "
          f"{over[key][1]:>7.1f}x")
a, b = over["llama-3.1-8b"]
print(f"\nLlama-3.1-8B: {a:.0f}x the tokens of the 20:1 recipe for its size, but only {b:.0f}x the compute-optimal "
      f"tokens for the compute it got -- the speaker's '100x' is the first kind")

# %% [markdown]
# **Explore:** set the served tokens per second, the months of deployment and the
# active parameters, and watch both multiples: against 20 tokens per parameter
# (the speaker's 100×) and against the compute-optimal tokens for the same compute.

# %%
explorers.overtraining_explorer()

# %%
v31 = claims.check(31)
assert v31.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary

# %%
def _verdict_table(rows):
    print(f"| # | time | claim | verdict |\n|---|---|---|---|")
    for v, claim, why in rows:
        print(f"| {v.claim_id} | {claims.get(v.claim_id).timestamp} | {claim} | **{v.verdict}** {why} |")

_verdict_table([
    (v23, "smaller batches always better per example",
     f"read as a trend: examples flat within noise up to B_crit/8, 2x at B_crit ({fit.B_crit:.0f} here), ∝ B above"),
    (v28, "minimum where the costs are equal", "the exponents match (terms stand q : p); train + serve of the Llama "
     "3.1 runs, cost at train = serve: " + ", ".join(f"{k.split(' ')[0].split('-')[-1].upper()} "
     f"{r.split(' / ')[-1].replace(' the minimum', '')}" for k, r in v28.evidence.items() if "llama" in k)
     + " the minimum"),
    (v29, "a third each for pre-training, RL, inference", "taken as 'same order of magnitude of tokens' -- a ballpark "
     f"(with DeepSeek's published MFUs, decode at {rho:.2f}x pre-training's)"),
    (v30, "RL should see fewer tokens", f"RL's MFU relative to pre-training is below c/6: with DeepSeek's {rho:.2f}, "
     f"for c > {6 * rho:.1f}"),
    (v31, "trained ~100x beyond compute-optimal", f"for small, heavily served models (Llama-3.1-8B "
     f"{over['llama-3.1-8b'][0]:.0f}x the 20:1 recipe, {over['llama-3.1-8b'][1]:.0f}x the compute-optimal tokens); "
     "the arithmetic rests on guesses"),
])

# %% [markdown]
# Exercises: `exercises/07_training_economics_exercises.py`.

# %% [markdown]
# **Read next.** [Chapter 8](08_long_context.py) returns to serving, at long context (prefill,
# the memory wall). The mechanics of a training step — where its bytes and FLOPs
# go, and how it is split over chips — are [chapter 10](10_training_at_scale.py). Outside
# reading: McCandlish et al., "An empirical model of large-batch training"
# (arXiv:1812.06162), and Hoffmann et al., "Training compute-optimal large language
# models" (arXiv:2203.15556, Chinchilla).
