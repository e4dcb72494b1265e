# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 8 — Long context: prefill, decode, and the memory wall
#
# Six claims about what long contexts cost and why:
#
# | # | time | claim, in our words |
# |---|---|---|
# | 32 | 1:45:11 | reading a prompt keeps the arithmetic units busy; generating one token at a time waits on memory traffic |
# | 33 | 1:52:24 | the arithmetic that grows with context is a rounding error next to the weights' until contexts run into the millions |
# | 34 | 1:53:02 | what caps long contexts is holding and streaming the KV cache, not attention's arithmetic |
# | 35 | 1:54:23 | windows settled near 100–200k tokens because going far beyond costs too much |
# | 36 | 1:54:40 | HBM is not getting much better, so it will not rescue long context |
# | 37 | 1:54:55 | sparse attention helps, but too much sparsity costs quality |
#
# **After this chapter you can** compute prefill and decode costs per token,
# the context at which attention FLOPs rival the weights' FLOPs for any
# attention design, the batch that fits at a given context, and read a price
# sheet's long-context tier as a statement about HBM.

# %% [markdown]
# **Before you start.** Read [chapter 2](02_kv_cache.py) (the KV cache, $a$, $\beta$ and the
# balanced context $L^*$) and [chapter 1](01_batch_size.py) (the decode step). Glossary entries that
# matter here: [prefill](../book/glossary.md#prefill), [decode](../book/glossary.md#decode), [KV cache](../book/glossary.md#kv-cache),
# [sliding-window, chunked and linear attention](../book/glossary.md#sliding-window-chunked-and-linear-attention) and
# [sparse attention](../book/glossary.md#sparse-attention); symbols $L_\text{prompt}$, $L_\text{FLOP}$, $L_\text{bytes}$, $L_c$,
# $C_\text{total}$, $n_\text{full}$, $L_\text{win}$, $M_\text{state}$ on the [notation](../book/notation.md) page
# (chapter 8 has three crossover contexts; the printouts call each `L*`). About an hour.

# %%
import numpy as np
import matplotlib.pyplot as plt

from llmmath import _catalog, claims, deployment, hardware, kernels, long_context, measured, models, plots, serving, sparse_attention, explorers, widgets

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 32 (1:45:11) — prefill is compute-bound, decode memory-bound
#
# *Claim, paraphrased:* processing a prompt, many tokens in one pass, is
# limited by arithmetic; generating, one token per sequence per step, by
# memory bandwidth.
#
# **Derivation.** A [prefill](../book/glossary.md#prefill) of $L_\text{prompt}$ prompt tokens reads each weight once and
# multiplies it $L_\text{prompt}$ times: intensity $\approx L_\text{prompt}$ FLOP/byte at bf16 — above the
# chips' balance points (150–560) once $L_\text{prompt}$ is a few hundred. Its KV writes,
# $L_\text{prompt}\beta$ bytes, are small next to $2L_\text{prompt}N_\text{mm}$ FLOPs. A decode step at batch
# $B$ has intensity $\approx B$, and each sequence also reads its whole KV
# cache. Per token, prefill costs $\approx 2N_\text{mm}/F$; decode costs
# $\max\big(2N_\text{mm}/F,\ (P_\text{read}b_w/B + L\beta)/W\big)$.

# %% slideshow={"slide_type": "subslide"}
T = np.unique(np.round(np.logspace(0, 5, 60)))
fig, ax = plots.new_axes(width=8, height=5.2)
for m, c, n in (("llama-3.1-70b", "h100-sxm", 8), ("llama-3.1-8b", "h100-sxm", 1)):
    pre = serving.prefill_step(m, c, T, n_chips=n)
    ax.loglog(T, pre.cost_chip_s_per_token, "-", label=f"{m} on {n} x {c}: prefill")
    color = ax.lines[-1].get_color()
    for B, style in ((1, ":"), (64, "--")):
        dec = serving.decode_step(m, c, B, T, n_chips=n, check_capacity=False)
        fits = np.asarray(serving.fits_in_hbm(m, c, B, T, n_chips=n))
        cost = np.asarray(dec.cost_chip_s_per_token)
        ax.loglog(T[fits], cost[fits], style, color=color, label=f"{m}: decode, B={B}")
        if (~fits).any():   # weights + KV exceed the HBM: drawn grey, a roofline only
            ax.loglog(T[~fits], cost[~fits], style, color="0.7",
                      label=f"{m}: B={B} past {int(T[~fits][0]):,} does not fit")
ax.set_xlabel("tokens T (prompt length, or decode context)"); ax.set_ylabel("chip-seconds per token")
ax.set_title("Per token: prefill falls to the compute floor, decode does not"); ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)  # below the axes: every corner holds a curve
plt.show()

# %%
print("decode cost per token / prefill cost per token, prompt and context 4,096 tokens, 8 GPUs")
for m in ("llama-3.1-8b", "llama-3.1-70b"):
    for c in ("h100-sxm", "b200"):
        pre = serving.prefill_step(m, c, 4096, n_chips=8).cost_chip_s_per_token
        dec = [serving.decode_step(m, c, B, 4096, n_chips=8).cost_chip_s_per_token for B in (1, 64, 256)]
        print(f"  {m:<14} {c:<9} B = 1 / 64 / 256: " + " / ".join(f"{d / pre:,.0f}x" for d in dec))

# %% [markdown]
# **An MoE model needs a longer prompt.** Prefill reads each weight once. A
# dense model then multiplies it $L_\text{prompt}$ times, but a prompt of a few hundred tokens
# already routes to nearly every expert of an MoE layer (each is missed by all
# $L_\text{prompt}$ tokens with probability $(1-k/E)^{L_\text{prompt}}$), so prefill reads *all* $N_\text{tot}$
# parameters while each token multiplies only its $N_\text{act}$: the intensity
# is about $L_\text{prompt}\,N_\text{act}/N_\text{tot}$ FLOP/byte in bf16, and one prompt on
# one chip turns compute-bound only near $L^*_\text{prompt} \approx (F/W)\,N_\text{tot}/N_\text{act}$.
# (MLA's attention is counted in its prefill form, which attends to
# up-projected keys and values: 81,920 FLOPs per position per layer for
# DeepSeek-V3, against the 278,528 of the absorbed form decode uses.)

# %%
print("shortest prompt whose prefill is compute-bound, one chip, bf16 (tokens)")
for c in ("h100-sxm", "b200", "mi300x"):
    ridge = hardware.get(c).balance_flops_per_byte("bf16")
    row = {m: serving.prefill_compute_bound_tokens(m, c) for m in ("llama-3.1-70b", "deepseek-v3")}
    ds = models.get("deepseek-v3")
    print(f"  {c:<9} ridge {ridge:4.0f}: llama-3.1-70b {row['llama-3.1-70b']:6,.0f}; deepseek-v3 "
          f"{row['deepseek-v3']:6,.0f} (ridge x N_tot / N_mm = {ridge * ds.total_params / ds.matmul_params_per_token:,.0f})")
pre_ds = serving.prefill_step("deepseek-v3", "h100-sxm", 4096)
print(f"deepseek-v3, one 4,096-token prompt on one h100-sxm: compute {float(pre_ds.compute_s) * 1e3:.0f} ms, "
      f"memory {float(pre_ds.memory_s) * 1e3:.0f} ms -> {'compute' if pre_ds.compute_bound else 'memory'}-bound")

# %% [markdown]
# **Measured.** The same weights (an $8000 \times 6400$ fp32 layer, 205 MB, beyond
# any CPU cache), run for $L_\text{prompt}$ tokens at once (one product $X\Theta$, $X$ of
# $L_\text{prompt}$ rows) and one token at a time ($L_\text{prompt}$ products with a single row), timed on this machine beside
# the roofline from its measured ceilings: the read-only stream and the better of
# one large square product and this product's own best rate, sampled between the
# sweep's rounds; few-row products use chapter 1's blocked layouts. The table
# gives measured ÷ predicted per prompt length; where a point leaves 0.8–1.25×,
# the line under it says by how much and the cause measured on this run.

# %% slideshow={"slide_type": "subslide"}
def remeasure_prefill():
    return kernels.batch_sweep([1, 2, 4, 8, 16, 32], d_out=6400, repeats=2, progress=False)


sweep = kernels.batch_sweep([1, 2, 4, 8, 16, 32], d_out=6400, repeats=2)   # an 8000 x 6400 layer (205 MB)
print(sweep.table())
print(sweep.departures())
T_meas = sweep.batch
per_token_prefill = sweep.measured_s / T_meas
per_token_decode = sweep.measured_s[0]  # measured once, at T = 1: T one-row products cost T times that
fig, ax = plots.new_axes(width=6.5, height=4)
ax.loglog(T_meas, per_token_prefill, "o-", label="prefill: one product of T rows, time / T")
ax.loglog(T_meas, np.full_like(T_meas, per_token_decode), "s-", label="decode: the T = 1 time, drawn flat (T one-row products, not measured separately)")
ax.loglog(T_meas, sweep.predicted_s / T_meas, "k--", label="roofline, prefill")
ax.set_xlabel("tokens T"); ax.set_ylabel("seconds per token"); ax.grid(True, which="both", alpha=0.3)
ax.set_title(f"Prefill vs decode through one {sweep.weight_shape[0]}x{sweep.weight_shape[1]} {sweep.dtype} layer "
             f"({kernels.backend().name})")
ax.legend(fontsize=8)
plt.show()
gain = per_token_decode / per_token_prefill[-3:].min()   # best of the three longest prompts: one slow call cannot flip it
gain_pred = sweep.predicted_s[0] / (sweep.predicted_s[-1] / T_meas[-1])   # from the ceilings sampled in the same rounds
print(f"per token, prefill of {int(T_meas[-3])}-{int(T_meas[-1])} tokens is {gain:.0f}x cheaper than decode "
      f"(roofline: {gain_pred:.0f}x)")
# Only the amortization itself is asserted (>= 2x; the roofline's gain is printed beside it): a program on the
# other core slows the compute-bound long prompts, whose BLAS wants both cores, far more than the memory-bound
# T = 1 product -- measured 5.5x against a roofline of 13.8x with one core busy, ~0.65 of it on a quiet machine.
measured.check("prefill amortizes the weight reads", lambda sw: [measured.Fact(
    "decode time per token / best of the three longest prefills'",
    sw.measured_s[0] / (sw.measured_s / sw.batch)[-3:].min(), low=2,
    why="a prefill that re-read the weights per token gives 1x")], sweep, remeasure=remeasure_prefill)

# %% [markdown]
# **Explore:** move the prompt length and watch prefill's cost per token fall to
# the compute floor while decode's (at the chosen batch, at that context) does not;
# a configuration whose weights plus KV cache exceed its HBM is drawn grey and dashed.

# %%
explorers.prefill_decode_explorer()

# %%
v32 = claims.check(32)
assert v32.verdict == "holds"

# %% [markdown] slideshow={"slide_type": "slide"}
# Price sheets agree in direction: output tokens (decode) typically cost 4–8×
# input tokens (prefill) — the check above finds decode 4–7× prefill's machine
# cost per token for a 70B model at batches 64–256 and 4k context.
#
# ## Claim 33 (1:52:24) — when attention's context term becomes noticeable
#
# *Claim, paraphrased:* the part of a token's compute that grows with context
# (attention) is so small per context token that it only shows up at millions
# of tokens.
#
# **Derivation.** Per new token, the weights cost $2N_\text{mm}$ FLOPs;
# attention costs $aL$ with, per layer, $4 n_h d_h$ FLOPs per context position
# for standard attention (scores and values, 2 FLOPs per multiply-add) and
# $2 n_h (2 r_\text{kv} + r_\text{rope})$ for latent attention with absorbed
# projections. They are equal at (the printout's `L*`)
#
# $$L_\text{FLOP} = \frac{2 N_\text{mm}}{a} \qquad\text{(Llama-3.1-70B: } \frac{2\times 69.5\times 10^{9}}{80\times 4\times 64\times 128} = 53{,}000 \text{ tokens).}$$
#
# [Sliding-window](../book/glossary.md#sliding-window-chunked-and-linear-attention) layers see at most $L_\text{win}$ positions; top-k
# [sparse attention](../book/glossary.md#sparse-attention) at most $k_\text{sel}$ (plus its indexer's cost over all $L$).

# %% slideshow={"slide_type": "subslide"}
designs = [("llama-3.1-8b", {}), ("llama-3.1-70b", {}), ("llama-3.1-405b", {}), ("qwen3-4b", {}),
           ("deepseek-v3", {}), ("llama-3.1-70b", dict(window=1024, global_every=6)),
           ("deepseek-v3", dict(topk=2048, indexer_flops_per_position=2 * 64 * 128))]
L = np.logspace(2, 7, 300)
fig, ax = plots.new_axes(width=7, height=4.2)
print(f"{'design':<58} {'L* (attention = weights)':>24}")
for m, kw in designs:
    label = m + ("" if not kw else (" 5:1 local(1024):global" if "window" in kw else " + DSA top-2048 & indexer"))
    ratio = serving.context_attention_flops_per_token(m, L, **kw) / (2 * models.get(m).matmul_params_per_token)
    ax.loglog(L, ratio, label=label)
    print(f"{label:<58} {serving.attention_crossover_context(m, **kw):>24,.0f}")
ax.axhline(1, color="k", ls="--", lw=1); ax.axvline(1e6, color="gray", ls=":", lw=1)
ax.text(1.1e6, 2e-3, "'millions'", color="gray", fontsize=8)
ax.set_xlabel("context L (tokens)"); ax.set_ylabel("attention FLOPs / weight FLOPs, per token")
ax.set_title("Where attention's FLOPs catch up with the weights'"); ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Explore:** switch the attention design (full, 5 local : 1 global, top-k with an
# indexer), the model and the window or k, and watch where the curve crosses 1.

# %%
explorers.attention_crossover_explorer()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Measured: when the context term shows up in a step's time
#
# The claim counts FLOPs. A decode step of one sequence waits on memory, so its
# *time* turns where the bytes do: where the sequence's KV cache reaches the
# weights' bytes, $L_\text{bytes} = N_\text{tot} b_w/\beta$ (the `L*` of the printout and the plot). Chapter 3's toy decode step
# (`context.context_sweep`), one sequence: a $1024 \times 1024$ fp32 weight (4 MiB)
# and, per token of context, a key and a value of 1,024 fp32 values (8 KiB), so
# $L_\text{bytes} = 4d^2/8d = d/2 = 512$ tokens ($d = 1024$). (Its FLOP crossover $2d^2/4d$ is the same 512:
# weights and cache both do half a FLOP per byte here. In a real model they part: the
# last line below gives Llama-3.1-70B's.) The step is timed from $L_\text{bytes}/64$ to $32L_\text{bytes}$,
# and the weight product and the attention also alone, beside the roofline from this
# machine's ceilings sampled in the same rounds. Below $L_\text{bytes}$ the weights should set the
# time (log-log slope near 0), above it the cache (slope near 1). **Check:** the slope
# is below 0.3 at $L \le L_\text{bytes}/8$ and above 0.6 at $L \ge 8L_\text{bytes}$.

# %%
from llmmath.demos import context as context_demo


def remeasure_context():
    return context_demo.context_sweep(contexts=(8, 16, 32, 64, 256, 512, 1024, 4096, 8192, 16384), d_model=1024)


ctx_sweep = remeasure_context()
ctx_Lstar = ctx_sweep.crossover_context
print(ctx_sweep.table())
print(f"weight product alone ({ctx_sweep.formulation}): {ctx_sweep.weights_s * 1e3:.3f} ms measured, "
      f"{ctx_sweep.predicted_weights_s * 1e3:.3f} ms predicted (F = {ctx_sweep.flops_per_s / 1e9:.0f} GFLOP/s, "
      f"W = {ctx_sweep.bytes_per_s / 1e9:.1f} GB/s, the read streams in the same rounds); it read the weight at "
      f"{context_demo.weight_bytes(ctx_sweep.d_model) / ctx_sweep.weights_s / 1e9:.0f} GB/s (each call follows two "
      f"of itself: the weight's 4 MiB can stay in this CPU's caches between them)")
print(f"crossover: the attention alone took as long as the weight product at L = "
      f"{ctx_sweep.measured_crossover_context:,.0f} tokens; predicted L* = d / 2 = {ctx_Lstar:,.0f}")
ctx_below, ctx_above = (0, ctx_Lstar / 8), (8 * ctx_Lstar, np.inf)
print(f"log-log slope of the step time: {ctx_sweep.slope(*ctx_below):.2f} at L <= L*/8 (roofline "
      f"{ctx_sweep.predicted_slope(*ctx_below):.2f}), {ctx_sweep.slope(*ctx_above):.2f} at L >= 8 L* (roofline "
      f"{ctx_sweep.predicted_slope(*ctx_above):.2f})")
m70 = models.get("llama-3.1-70b")
L70_bytes = m70.weights_read_params * 2 / m70.kv_bytes_per_token("bf16")
print(f"Llama-3.1-70B at bf16, one sequence: its KV cache reaches its weight bytes at {L70_bytes:,.0f} tokens, "
      f"its attention FLOPs the weights' at {serving.attention_crossover_context('llama-3.1-70b'):,.0f}; "
      f"a batch of 64 sharing each weight read reaches the weight bytes at {L70_bytes / 64:,.0f}")

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=6.5, height=4.2)
ax.loglog(ctx_sweep.contexts, ctx_sweep.step_s * 1e3, "o-", label="step (weights + attention), measured")
ax.loglog(ctx_sweep.contexts, ctx_sweep.predicted_s * 1e3, "k--", lw=1, label="step, roofline")
ax.loglog(ctx_sweep.contexts, ctx_sweep.attention_s * 1e3, "s-", ms=4, color="C1", label="attention alone, measured")
ax.axhline(ctx_sweep.weights_s * 1e3, color="C2", ls="-.", lw=1, label="weight product alone, measured")
ax.axvline(ctx_Lstar, color="C3", ls=":", label=f"L* = d / 2 = {ctx_Lstar:.0f}")
ax.set_xlabel("context L (tokens)"); ax.set_ylabel("time per generated token (ms)")
ax.set_title("Toy decode step, one sequence: flat below L*, linear above", fontsize=9)
ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
plt.show()

# %%
measured.check("one sequence's step is flat below L* and linear in L above it", lambda r: [
    measured.Fact("log-log slope of the step time at L <= L*/8", r.slope(0, r.crossover_context / 8), high=0.3, unit="",
                  why=f"the weights set the time there (roofline {r.predicted_slope(0, r.crossover_context / 8):.2f}); "
                      f"a step that followed the context would give about 1"),
    measured.Fact("log-log slope of the step time at L >= 8 L*", r.slope(8 * r.crossover_context, np.inf), low=0.6, unit="",
                  why=f"the cache sets the time there (roofline {r.predicted_slope(8 * r.crossover_context, np.inf):.2f}); "
                      f"a step blind to the context gives 0")],
    ctx_sweep, remeasure=remeasure_context)

# %%
v33 = claims.check(33)
assert v33.verdict == "off by"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 34 (1:53:02) — bandwidth and capacity, not compute, limit long context
#
# *Claim, paraphrased:* what stops very long contexts is the memory to hold
# the KV cache and the bandwidth to read it, not attention's arithmetic.
# (Chapter 11's [planner](11_plan_a_deployment.py) gives the max batch at a context and the max context at a batch, sliding windows counted.)
#
# **Derivation.** Per new token, each token of context costs $\beta/W$ seconds
# to read and $a/F$ seconds to compute on. Their ratio,
#
# $$\frac{\beta/W}{a/F} = \frac{\beta}{a}\cdot\frac{F}{W},$$
#
# is the memory-to-compute slope: for Llama-3.1-70B on an H100,
# $327{,}680 \times 295 / 2{,}621{,}440 = 37$. Capacity: a sequence of $L$
# tokens holds $L\beta$ bytes, so at most $(C_\text{total} - N_\text{tot} b_w)/(L\beta)$
# sequences fit — if the chips' HBM were one pool.
#
# It is not. A chip holds its own weights and its own sequences' cache, and a
# sequence's cache cannot be cut across the groups of chips that serve
# different sequences. Tensor parallelism splits a GQA cache over at most as
# many chips as there are KV heads, and does not split MLA's single latent at
# all; data-parallel attention keeps a copy of the non-expert weights on every
# chip. So the placed count, the best over every legal placement
# (`deployment.most_sequences`: tensor, data and expert parallelism, and
# pipeline stages, which give each chip fewer layers' cache), can be lower. For
# the dense models (8 KV heads, TP8) the two agree; for DeepSeek-V3 they do not.

# %%
ctx = np.array([8192, 32768, 131072, 524288, 1048576])
print(f"{'model (8 x H200)':<30} " + " ".join(f"{int(c):>9}" for c in ctx) + "   <- context; sequences that fit")
placed_fit = {}
for m, wd in (("llama-3.1-8b", "bf16"), ("llama-3.1-70b", "bf16"), ("qwen3-235b-a22b", "fp8"), ("deepseek-v3", "fp8")):
    pooled_fit = serving.max_batch(m, "h200", ctx, n_chips=8, weight_dtype=wd)
    placed = [deployment.most_sequences(m, "h200", 8, int(c), weight_dtype=wd, pp=None) for c in ctx]
    one_stage = [deployment.most_sequences(m, "h200", 8, int(c), weight_dtype=wd)[0] for c in ctx]
    placed_fit[m] = placed
    cells = lambda xs: " ".join(f"{int(f):>9}" if f >= 1 else f"{'no fit':>9}" for f in xs)
    print(f"{m + ' (' + wd + ')':<30} {cells(pooled_fit)}   pooled")
    print(f"{'':<30} {cells(one_stage)}   placed, one stage")
    print(f"{'':<30} {cells([b for b, _ in placed])}   placed, best of 1, 2, 4, 8 stages: "
          + ", ".join(sorted({f'TP{d.placement.tp} DP{d.placement.dp} PP{d.placement.pp}' for b, d in placed if d})))
print("(no fit: the weights plus one sequence's KV cache exceed what a chip has left)")
ds_pooled = serving.max_batch("deepseek-v3", "h200", ctx, n_chips=8, weight_dtype="fp8")
ds_one = [deployment.most_sequences("deepseek-v3", "h200", 8, int(c), weight_dtype="fp8")[0] for c in ctx]
print(f"DeepSeek-V3 at 128k: pooled {ds_pooled[2]:.0f}, placed {ds_one[2]:.0f} in one stage "
      f"({ds_pooled[2] / ds_one[2]:.2f}x fewer); at 1M: pooled {ds_pooled[4]:.0f}, one stage {ds_one[4]:.0f}, "
      f"best with pipeline stages {placed_fit['deepseek-v3'][4][0]:.0f}")

# %% slideshow={"slide_type": "subslide"}
L34 = 2.0 ** np.arange(10, 25)          # 1k (2^10) .. 16M (2^24) tokens of context
h100 = hardware.get("h100-sxm")
slope34, fit34 = {}, {}
fig, (ax1, ax2) = plots.new_axes(2, width=5.0, height=4.2)
for m, color in (("llama-3.1-70b", "C1"), ("deepseek-v3", "C2")):
    mm = models.get(m)
    read = L34 * mm.kv_bytes_per_token() / h100.hbm_bytes_per_s                  # beta L / W
    comp = mm.attention_flops_per_token(L34) / h100.flops_per_s("bf16")          # a L / F
    slope34[m] = read / comp
    ax1.loglog(L34, read, "-", color=color, label=f"{m}: read the KV cache")
    ax1.loglog(L34, comp, "--", color=color, label=f"{m}: attention arithmetic")
ax1.axvline(2**20, color="gray", ls=":", lw=1, label="1M tokens: where windows stop (the speaker)")
ax1.set_xlabel("context L (tokens)"); ax1.set_ylabel("seconds per generated token, one H100")
ax1.set_title("A token of context: read it, or compute on it")
ax1.grid(True, which="both", alpha=0.3); ax1.legend(fontsize=8, loc="upper left")
for m, color in (("llama-3.1-8b", "C0"), ("llama-3.1-70b", "C1"), ("qwen3-4b", "C4"), ("deepseek-v3", "C2")):
    wd = "fp8" if models.get(m).is_moe else "bf16"
    fit34[m] = np.array([deployment.most_sequences(m, "h200", 8, int(c), weight_dtype=wd, pp=None)[0] for c in L34])
    fits = fit34[m] >= 1
    ax2.loglog(L34[fits], fit34[m][fits], "o-", ms=3, color=color, label=f"{m}, {wd}")
ax2.axhline(1, color="k", ls="--", lw=1, label="one sequence")
ax2.axvline(2**20, color="gray", ls=":", lw=1)
ax2.set_xlabel("context L (tokens)"); ax2.set_ylabel("sequences that fit on 8 x H200")
ax2.set_title("Capacity: sequences held at once")
ax2.grid(True, which="both", alpha=0.3); ax2.legend(fontsize=8, loc="upper right")
plt.show()

# %% [markdown]
# **Reading the figure.** Left: per generated token, the time to read each
# token of context (solid) and to compute attention over it (dashed) both grow
# in proportion to the context, so on log axes they are parallel lines, and the
# gap between them is the slope ratio $\beta F / (a W)$ of the derivation, the
# same at every length. For grouped-query attention (Llama-3.1-70B) reading
# wins by a wide margin; for latent attention (DeepSeek-V3, absorbed) the two
# nearly coincide. Right: how many sequences 8 H200s hold at once on their
# best placement (`deployment.most_sequences`, as in the table above), halving
# with each doubling of the context until not even one fits (the curve ends at
# the dashed line). At the 1M mark (dotted) the 70B holds only a couple. The
# ratios and counts, and the check's:

# %%
v34_rows = claims.check(34, quiet=True).evidence
for m, r in slope34.items():
    print(f"{m:<14} on h100-sxm: KV read / attention compute = {r[0]:.1f}x at every context "
          f"(spread over 1k-16M: {r.max() / r.min() - 1:.1e})")
    assert np.allclose(r, r[0], rtol=1e-12)                     # parallel lines: the gap does not depend on L
    assert f"{m} on h100-sxm {r[0]:.1f}x" in v34_rows["KV-read slope / attention-compute slope per token of context"]
# by hand (the derivation above): Llama-3.1-70B on an H100, 327,680 B x 989.5e12 / (80 x 4 x 64 x 128 FLOPs x 3.35e12 B/s)
assert abs(slope34["llama-3.1-70b"][0] / (327_680 * 989.5e12 / (80 * 4 * 64 * 128 * 3.35e12)) - 1) < 1e-9
assert slope34["llama-3.1-70b"][0] > 20 and slope34["deepseek-v3"][0] < 3       # the prose: a wide margin / nearly coincide
i128k, i1m = int(np.flatnonzero(L34 == 2**17)[0]), int(np.flatnonzero(L34 == 2**20)[0])
for m, n_seq in fit34.items():
    longest = L34[n_seq >= 1].max()
    print(f"{m:<14} on 8 x H200: {n_seq[i128k]:.0f} sequences at 128k, {n_seq[i1m]:.0f} at 1M; one fits up to "
          f"{longest / 2**20:g}M tokens")
    row = next(v for k, v in v34_rows.items() if k.startswith(f"{m} ("))
    assert row.startswith(f"{n_seq[i128k]:.0f} / {n_seq[i1m]:.0f} on the best placement"), (m, row)   # the plotted points at 128k, 1M
    held = n_seq[1:] >= 1                                            # the prose: halving with each doubling, to whole sequences
    assert np.all(np.abs(n_seq[1:][held] - n_seq[:-1][held] / 2) <= 1), (m, n_seq)
# by hand (the check's): Llama-3.1-70B bf16 on 8 x 141 GB, TP8: (141 GB - 141.1 GB / 8) / (2^20 x 80 layers x 256 B) sequences
assert fit34["llama-3.1-70b"][i1m] == (141e9 - 70_553_706_496 * 2 / 8) // (2**20 * 80 * 2 * 128 * 2) <= 2

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Measured: the KV read sets the slope
#
# Claim 33's toy sweep, read for this claim. Past $L_\text{bytes}$ each token of context adds
# $\beta/W$ to the step ($\beta = 8d$ bytes, a key and a value) and $a/F$ of
# arithmetic ($a = 4d$ FLOPs), so the read outweighs the arithmetic by
# $\beta F/(aW) = 2F/W$, this machine's slope ratio (printed). If the read sets the
# cost, time per generated token grows in proportion to $L$ (log-log slope near 1),
# the attention alone moves its cache at a rate comparable to the machine's read
# streams, and it takes several times what its arithmetic would take at $F$. **Check:** the slope at
# $L \ge 8L_\text{bytes}$ is above 0.7, and the attention at the longest context takes more than
# twice its arithmetic at $F$ (an attention that waited on arithmetic would take about 1×).

# %%
def remeasure_kv_slope():
    return remeasure_context()


ctx_long = ctx_sweep.contexts >= 8 * ctx_sweep.crossover_context
per_token_s = np.polyfit(ctx_sweep.contexts[ctx_long], ctx_sweep.step_s[ctx_long], 1)[0]
beta_, a_ = context_demo.kv_bytes_per_token(ctx_sweep.d_model), 4 * ctx_sweep.d_model
print(f"per token of context at L >= 8 L*: {per_token_s * 1e9:.0f} ns measured (slope of a line through the steps); "
      f"beta / W = {beta_ / ctx_sweep.bytes_per_s * 1e9:.0f} ns, a / F = {a_ / ctx_sweep.flops_per_s * 1e9:.0f} ns "
      f"(slope ratio 2F/W = {2 * ctx_sweep.flops_per_s / ctx_sweep.bytes_per_s:.1f})")
for L_, kv_, t_, ar_ in zip(ctx_sweep.contexts[ctx_long], ctx_sweep.kv_bytes_per_s[ctx_long],
                            ctx_sweep.attention_s[ctx_long], ctx_sweep.attention_arithmetic_s[ctx_long]):
    print(f"  L = {int(L_):>6,}: attention read its {8 * L_ * ctx_sweep.d_model / 2**20:.0f} MiB of K and V at "
          f"{kv_ / 1e9:.1f} GB/s ({kv_ / ctx_sweep.bytes_per_s:.2f} of the read streams' "
          f"{ctx_sweep.bytes_per_s / 1e9:.1f} GB/s, {kv_ / ctx_sweep.copy_bytes_per_s:.2f} of the copy's "
          f"{ctx_sweep.copy_bytes_per_s / 1e9:.1f} GB/s, read + write); {t_ / ar_:.0f}x its arithmetic at F")
ctx_fast = ctx_sweep.kv_bytes_per_s[ctx_long] > 1.1 * ctx_sweep.bytes_per_s
if ctx_fast.any():
    print(f"(faster than the read streams at L = {', '.join(f'{int(v):,}' for v in ctx_sweep.contexts[ctx_long][ctx_fast])}: "
          f"a cache that fits in this CPU's {kernels.last_level_cache_bytes() / 2**20:.0f} MiB last-level cache can "
          f"stay there, in part, from the two untimed calls before each timed one)")
print(f"log-log slope of the step time at L >= 8 L*: {ctx_sweep.slope(8 * ctx_sweep.crossover_context, np.inf):.2f} "
      f"(roofline {ctx_sweep.predicted_slope(8 * ctx_sweep.crossover_context, np.inf):.2f}; above 1 where the longer "
      f"caches read slower, as the rates above show)")
measured.check("the KV read, not arithmetic, sets the cost of long context", lambda r: [
    measured.Fact("log-log slope of the step time at L >= 8 L*", r.slope(8 * r.crossover_context, np.inf), low=0.7, unit="",
                  why="time per generated token in proportion to the context gives 1; a fixed cost gives 0"),
    measured.Fact(f"attention at L = {int(r.contexts[-1]):,} / its arithmetic at F",
                  r.attention_s[-1] / r.attention_arithmetic_s[-1], low=2,
                  why=f"the roofline gives 2F/W = {2 * r.flops_per_s / r.bytes_per_s:.1f}; attention that waited on "
                      f"arithmetic gives about 1")],
    ctx_sweep, remeasure=remeasure_kv_slope)

# %%
v34 = claims.check(34)
assert v34.verdict == "holds if"

# %% [markdown]
# **Explore** cost per token and step time against batch at any context
# (chapter 1's explorer): raise the context and watch the balance batch vanish
# and the largest batch that fits shrink.

# %% slideshow={"slide_type": "subslide"}
long_explorer = explorers.decode_explorer(model="llama-3.1-70b", chip="h200", context=131072, n_chips=8)
long_explorer.widget

# %% [markdown]
# **Explore to 1M tokens:** move the context and watch the largest batch that fits
# shrink and the cost per token climb (grey where not one sequence fits), beside the
# price sheets' long-context tiers.

# %%
explorers.long_context_explorer()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 35 (1:54:23) — 100–200k tokens as the cost-balanced window
#
# *Claim, paraphrased:* context windows rose to roughly 100–200k tokens and
# stayed there; that plateau suggests it is about where cost balances, and
# going far beyond would be prohibitively expensive.
#
# **Derivation.** At the best batch a decode token costs
# $\max\big((2N_\text{mm}+aL)/F,\ L\beta/W\big)$ chip-seconds: flat until the KV
# reads take over at $L_c = 2N_\text{mm}W/(F\beta)$, and proportional to $L$ after
# that. The speaker inverted this: if a price break at 200k marks $L_c$, then
# $\beta = N_\text{act}W/(F L_c)$ with $F/W \approx 300$ — counting the compute as one
# multiply-add per parameter, as his board did throughout. Two readings of the
# units: in multiply-adds per byte at fp8 (an H100 does 990 T MAC/s over 3.35 TB/s,
# 295) his number stands as written; in FLOPs per byte at bf16 (989.5 TFLOP/s,
# 295) the compute is $2N_\text{act}$ and $\beta$ doubles. Either way it is kilobytes.
# How a model gets there, he said: one global KV shared by every layer
# (Character.AI's design, also in Gemma-style local/global stacks) —
# $1 \times 2 \times d_h \times n_\text{kv}$ bytes at one byte per element — or sparse
# attention dividing $\beta$ by its sparsity. Latent attention alone does not:

# %%
n_act, L_break, F_over_W = 100e9, 200e3, 300
beta_mac_fp8 = n_act / (F_over_W * L_break)          # his reading: MACs per byte at fp8
beta_flop_bf16 = 2 * n_act / (F_over_W * L_break)    # FLOPs per byte at bf16
shared = 1 * 2 * 128 * 8 * 1                          # one shared global KV: 2 x d_head 128 x 8 KV heads, fp8
l70, ds = models.get("llama-3.1-70b"), models.get("deepseek-v3")
h100 = hardware.get("h100-sxm")
L_c = 2 * l70.matmul_params_per_token * h100.hbm_bytes_per_s / (h100.flops_per_s("bf16") * l70.kv_bytes_per_token())
print(f"KV reads overtake compute for Llama-3.1-70B (bf16, H100) at L_c = {L_c:,.0f} tokens")
print(f"beta implied by a 200k break, 100B active: {beta_mac_fp8 / 1e3:.1f} kB (MAC/byte, fp8) or "
      f"{beta_flop_bf16 / 1e3:.1f} kB (FLOP/byte, bf16)")
print(f"one global KV shared across layers (8 KV heads x 128, fp8): {shared / 1e3:.1f} kB per token")
print(f"Llama-3.1-70B (GQA, bf16): {l70.kv_bytes_per_token() / 1e3:.0f} kB; DeepSeek-V3 (MLA): "
      f"{ds.kv_bytes_per_token() / 1e3:.0f} kB in bf16, {ds.kv_bytes_per_token('fp8') / 1e3:.0f} kB in fp8 -- "
      f"{ds.kv_bytes_per_token('fp8') / beta_flop_bf16:.0f}-{ds.kv_bytes_per_token() / beta_mac_fp8:.0f}x too many: "
      f"latent attention alone does not get there")

# %% slideshow={"slide_type": "subslide"}
L = np.logspace(3, 6.3, 200)
fig, ax = plots.new_axes(width=6.5, height=4)
for (m, chip), style in zip([(m, c) for c in ("h100-sxm", "b200") for m in ("llama-3.1-8b", "llama-3.1-70b", "deepseek-v3")],
                            ["C0-", "C1-", "C2-", "C0:", "C1:", "C2:"]):
    mm, ch = models.get(m), hardware.get(chip)
    comp = (2 * mm.matmul_params_per_token + mm.attention_flops_per_token(L)) / ch.flops_per_s("bf16")
    kv = L * mm.kv_bytes_per_token() / ch.hbm_bytes_per_s
    ax.loglog(L, np.maximum(comp, kv) / np.maximum(comp, kv)[0], style,
              label=f"{m}, {chip} ($\\beta$ = {mm.kv_bytes_per_token() / 1e3:.0f} kB/token)")
ax.axvline(2e5, color="gray", ls=":"); ax.text(2.2e5, 1.2, "200k", color="gray", fontsize=8)
ax.set_xlabel("context L"); ax.set_ylabel("cost per token / cost at 1k tokens (best batch)")
ax.set_title("Decode cost per token against context (H100 solid, B200 dotted)"); ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
plt.show()
prices = _catalog.load("long_context_pricing.toml")["prices"]
for k, p in prices.items():
    tier = (f"above {p['threshold_tokens'] // 1000}k: input x{p['input_above_threshold_usd_per_mtok'] / p['input_usd_per_mtok']:g}, "
            f"output x{p['output_above_threshold_usd_per_mtok'] / p['output_usd_per_mtok']:g}") if p["threshold_tokens"] else "flat"
    print(f"{k:<18} window {p['context_tokens'] / 1e3:>6.0f}k  ${p['input_usd_per_mtok']:g} in / ${p['output_usd_per_mtok']:g} out per M  ({tier})")

# %%
v35 = claims.check(35)
assert v35.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 36 (1:54:40) — HBM is not improving fast enough
#
# *Claim, paraphrased:* there is no good path around long context's bandwidth
# cost, because HBM is not getting dramatically better.
#
# **Derivation.** Long-context decode costs $\propto \beta L / W$ per token, so
# only $W$ (or a smaller $\beta$) buys context. The catalog's per-GPU figures,
# by year:

# %% slideshow={"slide_type": "subslide"}
fig, (ax, ax2) = plots.new_axes(2, width=4.8, height=3.6)
nv = [hardware.get(k) for k in ("a100-80gb", "h100-sxm", "b200")]
yrs = [c.year for c in nv]
for vals, label, style in (([c.flops_per_s("bf16") for c in nv], "dense bf16 FLOP/s", "o-"),
                           ([c.hbm_bytes_per_s for c in nv], "HBM bandwidth", "s-"),
                           ([c.hbm_bytes for c in nv], "HBM capacity", "^-")):
    ax.semilogy(yrs, np.array(vals) / vals[0], style, label=label)
rub = hardware.system("vera-rubin-nvl72")  # announced: HBM figures only (no dense bf16 figure published)
ax.semilogy([nv[-1].year, rub.year], [nv[-1].hbm_bytes_per_s / nv[0].hbm_bytes_per_s,
                               rub.hbm_bytes_per_s_per_package / nv[0].hbm_bytes_per_s], "s:", color="C1", mfc="none")
ax.semilogy([nv[-1].year, rub.year], [nv[-1].hbm_bytes / nv[0].hbm_bytes, rub.hbm_bytes_per_package / nv[0].hbm_bytes],
            "^:", color="C2", mfc="none")
for c in nv:
    ax.annotate(c.key, (c.year, 1), xytext=(2, -12), textcoords="offset points", fontsize=9, ha="left")
ax.annotate("Rubin\n(announced)", (rub.year, rub.hbm_bytes_per_s_per_package / nv[0].hbm_bytes_per_s),
            xytext=(-6, -2), textcoords="offset points", fontsize=9, ha="right", va="top")
ax.set_ylim(0.6, 20); ax.set_xlabel("year"); ax.set_ylabel("per GPU, relative to the A100")
ax.set_title("NVIDIA per-GPU growth since 2020", fontsize=9); ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=9)
colors = {"NVIDIA": "C0", "AMD": "C3", "Google": "C2", "Intel": "C4"}
by_year = {}
for c in hardware.catalog().values():
    by_year.setdefault(c.year, []).append((c.flops_per_s("bf16") / c.hbm_bytes_per_s, c))
pts = [(year, fw, c) for year, p in by_year.items() for fw, c in p]
for year, fw, c in pts:
    ax2.plot(year, fw, "o", color=colors.get(c.vendor, "k"))
for vendor, col in colors.items():
    ax2.plot([], [], "o", color=col, label=vendor)
ax2.set_xlim(min(by_year) - 0.7, max(by_year) + 0.7); ax2.set_ylim(0, 1.25 * max(fw for _, fw, _ in pts))
ax2.set_xlabel("year"); ax2.set_ylabel("F / W (bf16 FLOP per HBM byte)")
ax2.set_title("The balance point F/W did not fall", fontsize=9); ax2.grid(True, alpha=0.3); ax2.legend(fontsize=9)
plots.label_points(ax2, [p[0] for p in pts], [p[1] for p in pts], [p[2].key for p in pts], fontsize=9)
plt.show()
a, b = nv[0], nv[-1]
print(f"{a.key} ({a.year}) -> {b.key} ({b.year}): dense bf16 x{b.flops_per_s('bf16') / a.flops_per_s('bf16'):.1f}, "
      f"HBM bandwidth x{b.hbm_bytes_per_s / a.hbm_bytes_per_s:.1f}, capacity x{b.hbm_bytes / a.hbm_bytes:.2f}; "
      f"Rubin as announced ({rub.year}): bandwidth x{rub.hbm_bytes_per_s_per_package / a.hbm_bytes_per_s:.1f}, "
      f"capacity x{rub.hbm_bytes_per_package / a.hbm_bytes:.1f}")
print(f"Rubin's announced HBM4: {rub.hbm_bytes_per_s_per_package / b.hbm_bytes_per_s:.2f}x the "
      f"{b.key}'s bandwidth per GPU in one step")

# %% [markdown]
# Compute ran ahead of bandwidth, and bandwidth ahead of capacity, through the
# shipped generations; so every chip's F/W sits in the hundreds, and a context
# ten times longer costs about ten times more per token on each of them. Rubin's
# announced HBM4 is the biggest single step in bandwidth per GPU (the last line
# above) and would narrow the gap; whether it bends the trend depends on Rubin's
# dense compute, for which the catalog has no published figure yet. Either way
# the cost per token still grows in proportion to the context.

# %% [markdown]
# **Explore:** pick a vendor and read its per-chip growth rates and balance points.

# %%
explorers.hbm_trend_explorer()

# %%
v36 = claims.check(36)
assert v36.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 37 (1:54:55) — too much attention sparsity costs quality
#
# *Claim, paraphrased:* sparse attention is a real help for long context, but
# attending to too small a subset of tokens loses quality, so it cannot push
# context length without limit.
#
# **Measured (synthetic, NumPy).** Two tasks over 2,048 tokens, with dense
# attention as the reference (`llmmath.sparse_attention`):
# *aggregation* — the answer is the majority label of 32 matching tokens, so a
# budget below 32 votes on a subset; *retrieval through a cheap selector* — one
# matching token, but the kept set is chosen by an approximate score (an 8-dim
# projection standing in for a lightning indexer, or MoBA-style block means),
# so a small budget can miss the needle. The final softmax always uses the
# true scores; only the choice of tokens changes.

# %% slideshow={"slide_type": "subslide"}
ks = [1, 4, 16, 32, 64, 256, 1024, 2048]
tasks = {"aggregation": sparse_attention.aggregation_task(trials=192), "retrieval": sparse_attention.retrieval_task(trials=192)}
fig, ax = plots.new_axes(width=6.8, height=4.2)
for task, sel, style in (("aggregation", "exact", "o-"), ("aggregation", "indexer", "s--"),
                         ("retrieval", "exact", "^-"), ("retrieval", "indexer", "v--")):
    r = sparse_attention.accuracy_vs_k(tasks[task], ks, sel)
    ax.errorbar(r["k"], r["accuracy"], yerr=r["stderr"], fmt=style, ms=4, capsize=2, label=f"{task}, {sel} top-k")
# the exact prediction for aggregation with exact top-k: a majority vote on min(k, 32) of the 32 needles,
# ceil(0.625 x 32) = 20 of them right (hypergeometric; ties are coin flips)
k_fine = np.unique(np.round(np.logspace(0, np.log2(2048), 60, base=2)).astype(int))
exact = [sparse_attention.majority_subset_accuracy(32, 20, int(k)) for k in k_fine]
ax.plot(k_fine, exact, "k-", lw=1, alpha=0.6, label="aggregation, exact top-k: predicted (hypergeometric vote)")
r_agg = sparse_attention.accuracy_vs_k(tasks["aggregation"], ks, "exact")
pred_at_ks = np.array([sparse_attention.majority_subset_accuracy(32, 20, k) for k in ks])
blocks = [32, 128, 512, 2048]
for task in ("aggregation", "retrieval"):
    r = sparse_attention.accuracy_vs_k(tasks[task], blocks, "block")
    ax.plot(r["k"], r["accuracy"], ":", marker="x", label=f"{task}, block gate (32-token blocks)")
ax.axhline(0.5, color="gray", lw=1); ax.text(1.1, 0.52, "chance", color="gray", fontsize=8)
ax.set_xscale("log", base=2); ax.set_xlabel("tokens attended k (of 2,048)"); ax.set_ylabel("accuracy")
ax.set_title("Top-k attention: quality falls when the budget or the selector falls short"); ax.grid(True, alpha=0.3)
ax.legend(fontsize=8)
plt.show()
print("aggregation, exact top-k, measured / predicted accuracy per k: " + ", ".join(
    f"k={k} {m:.2f}/{p:.2f}" for k, m, p in zip(ks, r_agg["accuracy"], pred_at_ks)))
worst = float(np.max(np.abs(r_agg["accuracy"] - pred_at_ks) / np.maximum(r_agg["stderr"], 1e-3)))
print(f"largest gap: {worst:.1f} standard errors")

# %% [markdown]
# **What the published mechanisms report** (`lib/llmmath/data/sparse_attention_studies.toml`,
# with what could not be confirmed marked `unverified`):

# %%
for key, st in _catalog.load("sparse_attention_studies.toml")["studies"].items():
    print(f"- {st['name']} ({st['year']}): {st['budget']}\n    {st['finding']}\n")

# %% [markdown]
# **Explore:** move the budget k and read the exact prediction beside the
# measurement (computed once, cached): below 32 the vote runs on a subset.

# %%
explorers.sparse_topk_explorer()

# %%
v37 = claims.check(37)
assert v37.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Beyond the interview — layer designs that move the wall
#
# Claims 34 and 35 were argued for layers that attend to every earlier
# position. Many models released since do not. In gpt-oss half the layers see
# only the last 128 tokens (a sliding window); in Llama 4 Scout three layers in
# four see only the 8,192-token chunk their token falls in; in Qwen3-Next three
# in four are Gated DeltaNet layers, which keep a fixed-size state per sequence
# instead of a cache, and in Jamba seven in eight are Mamba layers, which do the
# same; DeepSeek-V3.2 keeps every token's latent but attends to the 2,048 an
# indexer picks. Do these move the wall, and by how much?
#
# **Derivation.** One sequence at context $L$ holds
# $\big(n_\text{full} L + n_\text{win}\min(L, L_\text{win}) + n_\text{chunk}\min(L, L_\text{chunk})\big)\beta_\text{layer}$
# bytes of K/V ($n_\text{full}$, $n_\text{win}$, $n_\text{chunk}$ layers with full, sliding-window
# and chunked attention over windows of $L_\text{win}$ and chunks of $L_\text{chunk}$ tokens, $\beta_\text{layer}$
# bytes per token in one layer) plus its linear layers' state $M_\text{state}$, which does not grow. Once $L$
# passes the windows and chunks, only the $n_\text{full}$ full layers grow, so
# the cache is $n_\text{full}/n_\ell$ of what it would be if every one of the $n_\ell$ layers
# attended: the wall moves out by $n_\ell/n_\text{full}$ — 2× for
# gpt-oss, 4× for Scout and Qwen3-Next, 8× for Jamba — and then stands, since those full
# layers still read the whole context every step. For Qwen3-Next by hand:
# 12 full layers × 2 KV heads × 256 × (K and V) × 2 bytes = 24,576 bytes a token,
# and $M_\text{state}$ = 36 × (32 heads × 128 × 128 + 8,192 × 3) × 2 bytes = 39.5 MB, the
# K/V of 1,608 tokens. Below, each design's cache and decode cost per token,
# from `long_context.architecture_wall` (the largest batch any one-stage
# placement of 8 chips holds, priced by the one step model).

# %%
WALL = {"llama-3.1-70b": "bf16", "gpt-oss-120b": "fp4", "llama-4-scout-17b-16e": "bf16",
        "qwen3-next-80b-a3b": "bf16", "jamba-1.5-mini": "bf16", "deepseek-v3": "fp8", "deepseek-v3.2-exp": "fp8"}
wall_ctx = [131072, 1048576]
walls = {(m, c): long_context.architecture_wall(m, c, wall_ctx, 8, weight_dtype=wd)
         for m, wd in WALL.items() for c in ("h200", "b200")}
print(f"{'model (weights)':<28} {'full/all':>8} {'GB a sequence':>17} {'less than':>9} {'seqs':>5} "
      f"{'chip-ms/token, 8 x H200':>24} {'8 x B200':>17}")
print(f"{'':<28} {'layers':>8} {'128k':>8} {'1M':>8} {'at 1M':>9} {'at 1M':>5} {'128k':>9} {'1M':>8} {'growth':>6} "
      f"{'128k':>8} {'1M':>8}")
growth = {}
for m, wd in WALL.items():
    mm = models.get(m)
    h, b = walls[(m, "h200")], walls[(m, "b200")]
    held = (h.kv_bytes + h.state_bytes) / 1e9
    g = h.chip_s_per_token[1] / h.chip_s_per_token[0]
    gb = b.chip_s_per_token[1] / b.chip_s_per_token[0]
    growth[m] = gb if not np.isfinite(g) else g
    ms = lambda x: f"{1e3 * x:>8.3g}" if np.isfinite(x) else f"{'no fit':>8}"
    print(f"{m + ' (' + wd + ')':<28} {mm.n_full_attention_layers:>3}/{mm.n_layers:<4} {held[0]:>8.3g} {held[1]:>8.3g} "
          f"{h.cache_reduction[1]:>8.2f}x {int(h.batch[1]):>5} {ms(h.chip_s_per_token[0])} {ms(h.chip_s_per_token[1])} "
          + (f"{g:>5.1f}x" if np.isfinite(g) else f"{'-':>6}") + f" {ms(b.chip_s_per_token[0])} {ms(b.chip_s_per_token[1])}")
ds, ds32 = models.get("deepseek-v3"), models.get("deepseek-v3.2-exp")
L1m = 1048576
held_dsa = float(ds32.kv_bytes_per_sequence(L1m))
read_dsa = (float(ds32.cached_positions(L1m)) * ds32.attended_bytes_per_position()
            + float(ds32.index_positions(L1m)) * ds32.index_key_bytes)
print(f"DeepSeek-V3.2 (DSA on DeepSeek-V3's MLA, bf16 latent) at 1M: holds {held_dsa / 1e9:.3g} GB a sequence, "
      f"{held_dsa / ds.kv_bytes_per_sequence(L1m):.2f}x MLA's (every latent kept, and a {ds32.index_key_bytes}-byte "
      f"index key beside it); reads {read_dsa / 1e9:.3g} GB a step, "
      f"{ds.kv_bytes_per_sequence(L1m) / read_dsa:.1f}x less than MLA")

# %% [markdown]
# The pattern the table shows: a design that drops layers from the full
# set divides the cache, and with it the cost per token at long context, by
# about $n_\ell/n_\text{full}$; the cost still climbs in proportion to
# the context from 128k to 1M, as it does for the dense model, because what is
# left attends to everything. DSA splits the two walls: it reads about a ninth
# as much as the latent attention it sits on (its index keys are 132 bytes
# against 1,152), but holds a little more, so the capacity wall does not move
# at all. The plot puts the designs' caches side by side.

# %% slideshow={"slide_type": "subslide"}
L_plot = np.logspace(np.log10(4096), np.log10(1048576), 60)
fig, ax = plots.new_axes(width=6.5, height=4)
for i, m in enumerate(WALL):
    mm = models.get(m)
    ax.loglog(L_plot, np.asarray(mm.kv_bytes_per_sequence(L_plot)) / 1e9, f"C{i}-",
              label=(f"{m}: every latent and index key held" if mm.index_topk
                     else f"{m}: {mm.n_full_attention_layers} of {mm.n_layers} layers full"))
    ax.loglog(L_plot, mm.n_layers * mm.attended_bytes_per_position() * L_plot / 1e9, f"C{i}:", lw=0.8)
ax.axhline(141 * 8 / 2, color="gray", lw=0.8)
ax.text(4500, 141 * 8 / 2 * 1.15, "half of 8 H200s' HBM", fontsize=8, color="gray")
ax.set_xlabel("context L (tokens)"); ax.set_ylabel("GB one sequence holds (bf16 K/V)")
ax.set_title("Solid: the cache; dotted: the same heads in every layer, all attending", fontsize=9)
ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8, loc="upper left")
plt.show()

# %% [markdown]
# **Explore** one design at a time: pick a model, a chip and a context and
# read its cache (solid) against every layer attending (dashed), and the
# decode cost per token at the largest batch 8 chips hold (`explorers.wall_explorer`).

# %% slideshow={"slide_type": "subslide"}
wall_explorer = explorers.wall_explorer()
wall_explorer.widget

# %% [markdown]
# **Verdict.** The interview's wall stands for every design here, and each moves
# it by the share of layers it takes out of full attention; the numbers below are
# the table's. The check anchors the cache counts by hand and asks that the cost
# per token still grow at least fivefold from 128k to 1M for every design
# (proportional growth would be eightfold).

# %%
qn, scout, oss = models.get("qwen3-next-80b-a3b"), models.get("llama-4-scout-17b-16e"), models.get("gpt-oss-120b")
moved = {m: walls[(m, "h200")].cache_reduction[1] for m in WALL}
print("the wall moves, at 1M tokens: " + "; ".join(f"{m} {moved[m]:.2f}x" for m in WALL)
      + ". It stands: from 128k to 1M the cost per token grows "
      + ", ".join(f"{growth[m]:.1f}x" for m in WALL) + " (8x would be proportional; on B200s where 8 H200s hold no "
      "1M-token sequence in one stage)")
# anchors, by hand: Qwen3-Next's 12 full layers x 2 KV heads x 256 x K,V x 2 bytes, and its 39.5 MB state
assert qn.kv_bytes_per_sequence(L1m) == 12 * 2 * 256 * 2 * 2 * L1m + 36 * (32 * 128 * 128 + 8192 * 3) * 2
# Scout: 12 NoPE layers hold the whole context, 36 chunked ones a chunk of 8,192; 8 KV heads x 128 x K,V x 2 bytes
assert scout.kv_bytes_per_sequence(L1m) == (12 * L1m + 36 * 8192) * 8 * 128 * 2 * 2
# gpt-oss: 18 full layers and 18 windowed to 128 positions; 8 KV heads x 64 x K,V x 2 bytes
assert oss.kv_bytes_per_sequence(L1m) == (18 * L1m + 18 * 128) * 8 * 64 * 2 * 2
assert all(abs(moved[m] / (models.get(m).n_layers / models.get(m).n_full_attention_layers) - 1) < 0.03
           for m in ("gpt-oss-120b", "llama-4-scout-17b-16e", "qwen3-next-80b-a3b", "jamba-1.5-mini"))
# Jamba: 4 attention layers x 8 KV heads x 128 x K,V x 2 bytes, and 28 Mamba-1 states of 8,192 x (16 + 3) values
jamba = models.get("jamba-1.5-mini")
assert jamba.kv_bytes_per_sequence(L1m) == 4 * 8 * 128 * 2 * 2 * L1m + 28 * 8192 * (16 + 3) * 2
assert all(g >= 5 for g in growth.values()) and moved["llama-3.1-70b"] == 1.0
# DSA holds more than every layer attending with its heads: each token keeps its index key too
assert np.isclose(moved["deepseek-v3.2-exp"], 1152 / (1152 + 132), rtol=1e-12)
# DSA at 1M, per layer: 2,048 latents of 1,152 bytes and 1M index keys of 132, against 1M latents; held: both
assert np.isclose(read_dsa / ds.kv_bytes_per_sequence(L1m), 132 / 1152 + 2048 / L1m, rtol=1e-12)
assert np.isclose(held_dsa / ds.kv_bytes_per_sequence(L1m), (1152 + 132) / 1152, rtol=1e-12)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# | # | time | claim | verdict |
# |---|---|---|---|
# | 32 | 1:45:11 | prompts saturate arithmetic, generation waits on memory | **holds**: intensity ≈ prompt length vs ≈ batch, plus KV reads (a decode token at 4K context costs 4–290× a prefill token, Llama-3.1-8B/70B on 8 H100s or 8 B200s); measured here |
# | 33 | 1:52:24 | context-dependent arithmetic negligible below millions of tokens | **off by** 10–100×: 14k–100k tokens for full-attention GQA, ~4k for latent attention |
# | 34 | 1:53:02 | bandwidth and capacity limit long context | **holds if** GQA/MHA (memory slope 35–75× compute's; two 1M-token sequences of a 70B model fit on 8 H200s); latent attention's slopes are within ~1.2× |
# | 35 | 1:54:23 | 100–200k is the cost-balanced window | **holds if** read as cost growth (∝ L past a few thousand tokens: 1M costs 7.8× 128k per token for Llama-3.1-70B and DeepSeek-V3 on H100 and B200); the plateau has ended — 1M windows now ship at flat prices |
# | 36 | 1:54:40 | HBM is not improving fast enough | **holds if** relative to compute and to long-context ambitions: ~1.41× a year per GPU (A100 → B200) |
# | 37 | 1:54:55 | too sparse hurts quality | **holds if** the budget falls below what the answer needs or the selector misranks; trained top-2048 reports parity |
# | — | beyond | windowed, chunked, linear and sparse attention move the wall | **moves, does not remove**: the cache (and cost per token at long context) falls by about $n_\ell/n_\text{full}$, 2× for gpt-oss, 4× for Llama 4 Scout and Qwen3-Next, 8× for Jamba; cost still grows about in proportion to the context; DSA reads about 9× less than MLA but holds more |
#
# Exercises: `exercises/08_long_context_exercises.py`.

# %% [markdown]
# **Read next.** [Chapter 9](09_ciphers_and_reversibility.py) takes up the interview's last
# theme: when to store and when to recompute, starting from ciphers and
# adversarial examples. For serving long prompts in practice (chunked prefill,
# prefill and decode on separate chips) see [chapter 12](12_serving_for_real.py). Outside
# reading: the DeepSeek-V3.2-Exp report on DeepSeek Sparse Attention, and Beltagy et
# al., "Longformer" (arXiv:2004.05150) for sliding-window attention.
