# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 2 — The KV cache: why long context is a memory problem
#
# Chapter 1 treated the [KV cache](../book/glossary.md#kv-cache) as one more term in the memory time. This
# chapter opens it up. Four claims from the interview:
#
# | # | time | claim, in our words |
# |---|---|---|
# | 3 | 7:18 | in decode, attending over the cached history is limited by reading the cache, not by matrix-multiply speed |
# | 5 | 11:17 | longer context lengthens the KV reads of each step and can tip a fixed batch from compute-bound to memory-bound |
# | 6 | 11:39 | the context where the KV-read slope equals the compute slope, both resources busy, is the ideal operating point |
# | 7 | 12:29 | [sparse attention](../book/glossary.md#sparse-attention) makes the bytes read grow more slowly with context than dense attention's straight line |
#
# **After this chapter you can** compute the FLOPs, bytes and arithmetic
# intensity of decode attention for the four ways of caching keys and values —
# [MHA, GQA, MQA](../book/glossary.md#mha-gqa-and-mqa) and [MLA](../book/glossary.md#mla), defined below; the context at which
# a model on a chip turns memory-bound; the utilisation ([MFU](../book/glossary.md#mfu)) lost past it; and the
# bytes a [sparse-attention](../book/glossary.md#sparse-attention) scheme reads per step. You will also time a fused
# decode-attention kernel on your own machine against its byte count.

# %% [markdown]
# **Before you start.** Read [chapter 1](01_batch_size.py) first: this chapter opens up its
# $L\beta$ term and reuses its step model and its $a$, $\beta$, $N_\text{mm}$, $P_\text{read}$. You need
# attention at the level of "queries, keys, values, one softmax per head" (the
# [prerequisites](../book/prerequisites.md) page says where to learn it). Glossary entries that matter
# here: [attention](../book/glossary.md#attention), [KV cache](../book/glossary.md#kv-cache), [MHA, GQA and MQA](../book/glossary.md#mha-gqa-and-mqa),
# [MLA](../book/glossary.md#mla), [MFU](../book/glossary.md#mfu), [sparse attention](../book/glossary.md#sparse-attention) and
# [FlashAttention](../book/glossary.md#flashattention); symbols $n_h$, $n_\text{kv}$, $d_h$, $G$, $b_\text{kv}$, $n_\ell$,
# $r_\text{kv}$, $L^*$, $L_\text{blk}$, $k_\text{sel}$ on the [notation](../book/notation.md) page. About an hour;
# the last subsection (the GPU kernel's occupancy) is optional on a first read.

# %%
import numpy as np
import matplotlib.pyplot as plt

from llmmath import attention, attention_kernels, claims, explorers, hardware, kernels, measured, models, plots, serving
from llmmath.units import fmt_bytes, fmt_seconds

CHIPS = ("a100-80gb", "h100-sxm", "h200", "b200", "mi300x", "tpu-v5e", "tpu-v6e")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 3 (7:18) — decode attention waits on memory
#
# *Claim, paraphrased:* when a new token attends to everything the sequence has
# cached, the time goes into fetching the cache from HBM; the multiply units
# mostly wait.
#
# **Derivation.** Take one layer and one sequence with $L$ cached tokens; the
# new token has $n_h$ query heads of width $d_h$ ([attention](../book/glossary.md#attention)), and the cache
# holds $n_\text{kv}$ key/value heads per token at $b_\text{kv}$ bytes a value. For each
# cached token the step reads its key and value and does, per query head, one dot
# product of the query with the key ($2d_h$ FLOPs) and one add of the value scaled by
# its softmax weight ($2d_h$ FLOPs):
#
# $$\text{FLOPs per cached token} = 4\,n_h d_h, \qquad
#   \text{bytes per cached token} = 2\,n_\text{kv} d_h\, b_\text{kv}, \qquad
#   I = \frac{4 n_h d_h}{2 n_\text{kv} d_h b_\text{kv}} = \frac{2G}{b_\text{kv}},\quad G = \frac{n_h}{n_\text{kv}}.$$
#
# Summed over the $n_\ell$ layers these are chapter 1's $a = 4 n_h d_h n_\ell$ and
# $\beta = 2 n_\text{kv} d_h b_\text{kv} n_\ell$.
#
# So the arithmetic intensity is the **group size** $G$ FLOP/byte at bf16: 1 for
# **multi-head attention** (MHA: every query head has its own key/value head), 8 for
# Llama-3.1-70B's **grouped-query attention** (GQA: $G$ query heads share one), $n_h$ for
# **multi-query attention** (MQA: all share one). A chip's ridge $F/W$ is
# 150–560 FLOP/byte (37 on the export-limited H20). Unlike the weights, a cache is private to its sequence, so
# batching does not raise $I$: $B$ sequences read $B$ caches.
#
# **Latent attention** (MLA, multi-head latent attention) is the exception worth knowing. DeepSeek-V2/V3
# cache one latent vector $c_\text{KV}$ of $r_\text{kv} = 512$ values and a shared
# [rope](../book/glossary.md#rope) key (the rotary position part) of $r_\text{rope} = 64$ values per token and layer (V2 paper, §2.1). With the
# key and value up-projections **absorbed** into the query and output
# projections (§2.1.3), every one of the $n_h = 128$ heads scores against the
# same latent and sums the same latent:
#
# $$I_\text{MLA} = \frac{2 n_h\,(2 r_\text{kv} + r_\text{rope})}{b_\text{kv}\,(r_\text{kv} + r_\text{rope})}
#   = \frac{2 \cdot 128 \cdot 1088}{2 \cdot 576} = 242\ \text{FLOP/byte}.$$
#
# That is 18% below the ridge of an H100 (295), so still memory-bound there,
# and above an H200's (206), where it is compute-bound. Without
# absorption the latent must be re-expanded to per-head K and V each step
# ($2 r_\text{kv} n_h (d_\text{nope}+d_v)$ FLOPs per cached token, with $d_\text{nope}$ and $d_v$ each
# head's key width without its rope part and its value width: tens of
# thousands of FLOP/byte), or the expanded K and V cached (back to $I = 1$).
# Splitting the heads over TP chips ([tensor parallelism](../book/glossary.md#tensor-parallelism)) divides MLA's
# intensity by TP: each chip still reads the whole latent. Which split applies depends on the deployment:
# the V3 report (§3.4.2) describes attention in TP4 (heads split 4 ways) for its
# minimum decode unit, while DeepSeek's production decode as published in its
# open-infra "day 6" overview (the sixth of a week of posts DeepSeek published about its
# serving system, github.com/deepseek-ai/open-infra-index) runs MLA [data-parallel](../book/glossary.md#data-parallelism) (DP144: 144 GPUs each on
# its own sequences, with [expert parallelism](../book/glossary.md#expert-parallelism) EP144 for the experts):
# each GPU holds all 128 heads for its own sequences, and the intensity stays 242.

# %%
rows = [("llama-2-7b", None), ("llama-3.1-8b", None), ("llama-3.1-70b", None), ("llama-3.1-70b", "MQA"),
        ("qwen3-235b-a22b", None), ("deepseek-v3", "MLA-absorbed"), ("deepseek-v3", "MLA-recomputed"),
        ("deepseek-v3", "MLA-expanded"), ("kimi-k2", "MLA-absorbed")]
print(f"{'model':<16} {'variant':<15} {'FLOP/tok/layer':>15} {'bytes/tok/layer':>16} {'I (FLOP/B)':>11} "
      + " ".join(f"{c[:8]:>8}" for c in ("h100-sxm", "h200", "b200", "tpu-v6e")))
for m, v in rows:
    v = v or attention.default_variant(m)
    I = attention.arithmetic_intensity(m, "bf16", v)
    bound = ["mem" if attention.memory_bound_margin(m, c, "bf16", v) > 1 else "COMP" for c in ("h100-sxm", "h200", "b200", "tpu-v6e")]
    print(f"{m:<16} {v:<15} {attention.flops_per_cached_token(m, v):>15,.0f} {attention.bytes_per_cached_token(m, 'bf16', v):>16,.0f} "
          f"{I:>11,.1f} " + " ".join(f"{b:>8}" for b in bound))
print("\nchip ridges F/W (bf16):", ", ".join(f"{c} {hardware.get(c).balance_flops_per_byte():.0f}" for c in CHIPS))
print(f"DeepSeek-V3 absorbed MLA, all 128 heads on one GPU (production decode, DP attention): "
      f"{attention.arithmetic_intensity('deepseek-v3', 'bf16'):.0f} FLOP/byte; heads split 4 ways "
      f"(the V3 report's TP4 layout): {attention.arithmetic_intensity('deepseek-v3', 'bf16', heads_split=4):.0f} FLOP/byte")
# An fp8 cache with bf16 math: DeepSeek's FlashMLA fp8 kernel dequantizes each tile to bf16 before the tensor
# cores, so the bf16 ridge still applies. Its packed token is 656 bytes (512 fp8 latent values, four fp32 scales,
# the 64 rope values in bf16), a little more than the 576 of one byte a value.
mla_fp8 = attention.arithmetic_intensity("deepseek-v3", "fp8", "MLA-absorbed")
mla_fp8_packed = attention.flops_per_cached_token("deepseek-v3", "MLA-absorbed") / (512 + 4 * 4 + 64 * 2)
fp8_mem = [c for c in CHIPS if hardware.get(c).balance_flops_per_byte() > mla_fp8_packed]
print(f"... over an fp8 cache with bf16 math: {mla_fp8:.0f} FLOP/byte at one byte a value, {mla_fp8_packed:.0f} over "
      f"FlashMLA's 656-byte token; memory-bound only on {', '.join(fp8_mem) or 'no chip here'}")
assert mla_fp8_packed > hardware.get("h100-sxm").balance_flops_per_byte() and \
    mla_fp8_packed > hardware.get("b200").balance_flops_per_byte()

# %% [markdown]
# "mem" means the KV reads take longer than the arithmetic on that chip; "COMP"
# the reverse. Every GQA/MHA row is memory-bound by one to two orders of
# magnitude. DeepSeek-V3's absorbed-MLA row is compute-bound on an H200 and barely
# memory-bound on an H100 or B200; Kimi K2's, the same latent with 64 heads
# instead of 128, does half the FLOPs per byte (121) and is memory-bound on
# every chip. (The "MQA" row of Llama-3.1-70B is a
# hypothetical: the same model with one K/V head.)
#
# The case the interview reasons about is a one-byte cache. Store DeepSeek's
# latent in fp8 and keep the arithmetic in bf16 (as DeepSeek's own fp8 decode
# kernel does) and the same FLOPs meet half the bytes: the last line above
# doubles the intensity to 484, or 425 with the scales and the bf16 rope
# key that the real kernel's token carries. That is past the bf16 ridge of an
# H100 and a B200 as well as an H200's: absorbed MLA over an fp8 cache is the
# one decode attention in this table that waits on arithmetic, not on memory.
#
# **Picture.** The roofline with each variant's intensity marked: everything to
# the left of a chip's ridge is limited by bandwidth.

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=7.0)
I = np.logspace(-0.5, 5, 200)
for c in ("h100-sxm", "h200", "tpu-v6e"):
    ch = hardware.get(c)
    ax.loglog(I, np.minimum(ch.flops_per_s("bf16"), I * ch.hbm_bytes_per_s), label=f"{c} roofline")
h100 = hardware.get("h100-sxm")
for i, (m, v) in enumerate(rows):
    v = v or attention.default_variant(m)
    x = attention.arithmetic_intensity(m, "bf16", v)
    y = min(h100.flops_per_s("bf16"), x * h100.hbm_bytes_per_s)   # what an H100 can attain there
    ax.plot([x], [y], "ko", ms=4)
    # below-right of the dot, staggered; near the right edge, or where that would cover a neighbour's label,
    # above-left of it instead (inside the axes either way)
    left = x > 2e3 or (m, v) == ("kimi-k2", "MLA-absorbed")
    ax.annotate(f"{m} {v}", (x, y), fontsize=8, xytext=(-6, 6) if left else (6, -8 - 8 * (i % 3)),
                textcoords="offset points", ha="right" if left else "left", va="bottom" if left else "top")
ax.set_ylim(3e11, 3e15)
ax.set_xlabel("arithmetic intensity of decode attention (FLOP/byte)")
ax.set_ylabel("attainable FLOP/s")
ax.set_title("Decode attention on the roofline (bf16 cache); dots on the H100's roof")
ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8, loc="lower right")
plt.show()

# %% [markdown]
# **Explore.** Pick a model, a variant, the cache precision, how many chips share
# the heads, and a chip; watch the red intensity line cross the chip's ridge and
# the panel's KV-read time / arithmetic time pass 1 (`explorers.kv_intensity_explorer`).

# %% slideshow={"slide_type": "subslide"}
intensity_explorer = explorers.kv_intensity_explorer(model="deepseek-v3", chip="h200")
intensity_explorer.widget

# %% [markdown]
# **Check.** The intensities are recomputed from config fields written by hand
# in the check (not from the catalog) and compared with datasheet ridges.

# %%
v3 = claims.check(3)
assert v3.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 5 (11:17) — longer context tips the step into the memory-bound regime
#
# *Claim, paraphrased:* for a fixed batch, raising the context raises the time
# spent reading caches each step until it, not the arithmetic, sets the pace.
#
# **Derivation.** Chapter 1's step on one chip, per sequence: compute $(2N_\text{mm} + aL)/F$
# and cache reads $L\beta/W$ (plus the shared weight read $P_\text{read} b_w/W$), with $a$
# the attention FLOPs and $\beta$ the cache bytes per cached token, all layers (above). Against the
# batch, both are straight lines; the cache line's slope grows with $L$, the
# compute line's only through the small $aL$. They are equally steep at
#
# $$L^* = \frac{2 N_\text{mm}}{F\beta/W - a}.$$
#
# Above $L^*$ no batch is compute-bound. At a finite batch $B$ the weights add
# memory time, and the step turns memory-bound earlier, at
# $L_B = \big(2N_\text{mm}/F - P_\text{read} b_w/(BW)\big)/(\beta/W - a/F)$. If
# $F\beta/W \le a$ — attention's own intensity $a/\beta$ above the ridge, as for
# absorbed MLA on an H200 — the cache line never catches up: $L^* = \infty$.
#
# Hand check, Llama-3.1-70B on an H100: $N_\text{mm} = 70{,}553{,}706{,}496 - 128{,}256\cdot8{,}192 = 6.950\times10^{10}$;
# $\beta = 2\cdot80\cdot8\cdot128\cdot2 = 327{,}680$ B and $a = 4\cdot64\cdot128\cdot80 = 2.62\times10^6$ FLOPs
# ($n_\ell = 80$ layers, $n_\text{kv} = 8$, $n_h = 64$, $d_h = 128$, $b_\text{kv} = 2$);
# $F\beta/W = 989.5\times10^{12}\cdot327{,}680/3.35\times10^{12} = 9.68\times10^7$; so
# $L^* = 1.390\times10^{11}/(9.68\times10^7 - 0.26\times10^7) = 1{,}476$ tokens.

# %%
print(f"{'model':<16} {'beta':>9} " + " ".join(f"{c:>10}" for c in CHIPS))
crossover = {}
for m in ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen3-235b-a22b", "mixtral-8x7b", "deepseek-v3", "kimi-k2"):
    Ls = [attention.kv_crossover_context(m, c) for c in CHIPS]
    crossover[m] = dict(zip(CHIPS, Ls))
    print(f"{m:<16} {fmt_bytes(models.get(m).kv_bytes_per_token()):>9} "
          + " ".join(f"{'never':>10}" if np.isinf(x) else f"{x:>10,.0f}" for x in Ls))
gqa = [x for m, row in crossover.items() if not models.get(m).is_mla for x in row.values()]
kimi = {c: x for c, x in crossover["kimi-k2"].items() if np.isfinite(x)}
ds = {c: x for c, x in crossover["deepseek-v3"].items() if np.isfinite(x)}
print(f"\nGQA models: {min(gqa):,.0f} .. {max(gqa):,.0f} tokens. DeepSeek-V3 (absorbed MLA, "
      f"{attention.arithmetic_intensity('deepseek-v3', 'bf16'):.0f} FLOP/byte): "
      + ", ".join(f"{c} {x:,.0f}" for c, x in ds.items())
      + f", never on {', '.join(c for c in CHIPS if c not in ds)}. Kimi-K2 (MLA with 64 heads, "
      f"{attention.arithmetic_intensity('kimi-k2', 'bf16'):.0f} FLOP/byte): "
      + ", ".join(f"{c} {x:,.0f}" for c, x in kimi.items()) + ".")

# %% [markdown]
# Every GQA model turns memory-bound within the range printed on the last line
# (the 405B, with the most weight FLOPs per KV byte, last), far below today's
# context windows. Absorbed MLA does far more arithmetic per cached byte: it
# flips much later on the chips whose ridge is above its intensity, and never
# on those whose ridge is below it; Kimi-K2, with half of DeepSeek-V3's heads,
# has half the intensity and flips earlier (the last line gives both).
#
# **Picture.** Step time, and MFU ([model FLOPs utilisation](../book/glossary.md#mfu): the FLOP/s the model's
# own arithmetic needs over the chips' peak $F$), against context at a fixed batch (Llama-3.1-70B
# on 8 H100s, `serving.decode_step`), and DeepSeek-V3 on 16 H200s for contrast.

# %% slideshow={"slide_type": "subslide"}
Lc = np.geomspace(64, 1e6, 200)
fig, (ax1, ax2) = plots.new_axes(2, width=5.5)
for m, c, n, B in (("llama-3.1-70b", "h100-sxm", 8, 1024), ("llama-3.1-70b", "h100-sxm", 8, 64),
                   ("deepseek-v3", "h200", 16, 8192)):
    s = serving.decode_step(m, c, B, Lc, n_chips=n, check_capacity=False)
    ok = serving.fits_in_hbm(m, c, B, Lc, n_chips=n)   # weights + KV within the chips' HBM
    line, = ax1.loglog(Lc[ok], s.time_s[ok], label=f"{m}, {n}x{c}, B={B}")
    ax1.loglog(Lc[~ok], s.time_s[~ok], "--", color=line.get_color(), alpha=0.5)
    ax1.loglog(Lc, s.compute_s, ":", color=line.get_color())
    ax2.semilogx(Lc[ok], s.mfu[ok], color=line.get_color(), label=f"{m}, B={B}")
    ax2.semilogx(Lc[~ok], s.mfu[~ok], "--", color=line.get_color(), alpha=0.5)
    lb = attention.crossover_context_at_batch(m, c, B)
    if np.isfinite(lb) and lb > 0:
        ax2.axvline(lb, color=line.get_color(), ls=":")
ax1.set_title("dashed: weights + KV do not fit in the chips' HBM", fontsize=9)
ax1.set_xlabel("context L (tokens)"); ax1.set_ylabel("step time floor (s)\ndotted: compute alone")
ax1.grid(True, which="both", alpha=0.3); ax1.legend(fontsize=8)
ax2.set_xlabel("context L (tokens)"); ax2.set_ylabel("MFU at the floor"); ax2.set_ylim(0, 1.05)
ax2.set_title("dotted: where this batch turns memory-bound", fontsize=9); ax2.grid(True, alpha=0.3); ax2.legend(fontsize=8)
plt.show()

# %% [markdown]
# Dashed where the batch's KV cache no longer fits beside the weights (the rates
# are still drawn there, for the shape, but no such server runs). The batch-64 curve starts memory-bound — it is below the
# balance batch even at $L = 0$. The batch-1024 curve is compute-bound until a
# thousand tokens, then its MFU falls as $1/L$. DeepSeek-V3 on H200s stays
# compute-bound at any context: its absorbed attention does 242 FLOP per byte.
#
# **Explore.** Move the batch and the context, change model and chip; watch the
# black point leave the flat, compute-bound part of the step curve and the MFU
# fall once the context passes the red dotted line (`explorers.context_explorer`;
# dashed: the batch's KV does not fit beside the weights). Then compare the two
# latent-attention models on an H200: DeepSeek-V3's 128 heads keep attention
# compute-bound, Kimi K2's 64 heads halve its intensity and it flips.

# %% slideshow={"slide_type": "subslide"}
context_explorer = explorers.context_explorer(model="llama-3.1-70b", chip="h100-sxm", n_chips=8)
context_explorer.widget

# %%
v5 = claims.check(5)
assert v5.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 6 (11:39) — the balanced context is the ideal operating point
#
# *Claim, paraphrased:* the context at which the cache-read slope matches the
# compute slope is where the hardware is used best; at twice that context the
# model, as drawn, runs at about half the MFU.
#
# **Derivation.** Take a batch large enough that the weight reads vanish. Per
# sequence the step is $\max\big((2N_\text{mm} + aL)/F,\ L\beta/W\big)$. Below $L^*$ the
# compute term wins and MFU $=1$; above it
#
# $$\text{MFU}(L) = \frac{(2N_\text{mm} + aL)/F}{L\beta/W} = \frac{L^*}{L}\cdot\frac{2N_\text{mm} + aL}{2N_\text{mm} + aL^*},$$
#
# using $2N_\text{mm} + aL^* = L^*\beta F/W$. Since $aL^* \ll 2N_\text{mm}$ for GQA models, MFU
# $\approx L^*/L$: $\tfrac12$ at $2L^*$ — the interviewer's example holds under the
# linear model. But the cost per token does **not** have a minimum at $L^*$: it is
# $(2N_\text{mm} + aL)/F$ below (rising slowly) and $L\beta/W$ above (rising fast). $L^*$ is
# the context that keeps both resources busy — the right target when you
# design a chip or a model for a workload, not a context you can choose for users.
# At a finite batch the balance is a curve in $(B, L)$: $L_B$ from claim 5.

# %%
for m, c, n in (("llama-3.1-70b", "h100-sxm", 8), ("llama-3.1-70b", "b200", 4), ("qwen3-235b-a22b", "h200", 8),
                ("deepseek-v3", "b200", 16)):
    Ls = attention.kv_crossover_context(m, c)
    s = serving.decode_step(m, c, 1e7, np.array([0.5, 1, 2, 4]) * Ls, n_chips=n, check_capacity=False)
    cost = serving.decode_cost_per_token(m, c, 1e7, np.array([0.5, 1, 2, 4]) * Ls, n_chips=n, check_capacity=False)
    print(f"{m:<16} {c:<9} L* = {Ls:>8,.0f}   MFU at L*/2, L*, 2L*, 4L*: " + ", ".join(f"{x:.2f}" for x in s.mfu)
          + "   cost/token relative to L*: " + ", ".join(f"{x / cost[1]:.2f}" for x in cost))

# %% slideshow={"slide_type": "subslide"}
fig, (ax1, ax2) = plots.new_axes(2, width=5.5)
m, c, n = "llama-3.1-70b", "h100-sxm", 8
Ls = attention.kv_crossover_context(m, c)
Lr = np.geomspace(0.05, 20, 200) * Ls
for B in (256, 1024, 4096, 1e7):
    cost = serving.decode_cost_per_token(m, c, B, Lr, n_chips=n, check_capacity=False)
    mfu = serving.decode_step(m, c, B, Lr, n_chips=n, check_capacity=False).mfu
    ok = serving.fits_in_hbm(m, c, B, Lr, n_chips=n)
    line, = ax1.loglog(Lr[ok], cost[ok], label=f"B = {B:,.0f}" if B < 1e6 else "B -> inf (a limit: never fits)")
    ax1.loglog(Lr[~ok], cost[~ok], "--", color=line.get_color(), alpha=0.5)
    ax2.semilogx(Lr[ok] / Ls, mfu[ok], color=line.get_color())
    ax2.semilogx(Lr[~ok] / Ls, mfu[~ok], "--", color=line.get_color(), alpha=0.5)
ax2.semilogx(Lr / Ls, np.minimum(1, Ls / Lr), "k:", label="L*/L")
for a in (ax1, ax2):
    a.grid(True, which="both", alpha=0.3)
ax1.axvline(Ls, color="gray", ls=":"); ax1.set_xlabel("context L (tokens)"); ax1.set_ylabel("chip-seconds per token")
ax1.set_title(f"{m} on {n}x{c}: cost rises on both sides of L*", fontsize=9); ax1.legend(fontsize=8)
ax2.set_xlabel("L / L*"); ax2.set_ylabel("MFU"); ax2.legend(fontsize=8)
ax2.set_title("dashed: the KV does not fit on 8 chips", fontsize=9)
plt.show()

# %% [markdown]
# **Explore** the balanced context: the same explorer as claim 5, here on a B200
# node. Move the model first, then the context across the grey line $L^*$ and
# watch the MFU on the right fall as $L^*/L$ past it; the panel prints $L^*$ and
# whether the batch still fits (`explorers.context_explorer`).

# %% slideshow={"slide_type": "subslide"}
balanced_explorer = explorers.context_explorer(model="llama-3.1-70b", chip="b200", n_chips=8)
balanced_explorer.widget

# %% [markdown]
# **Measured: the flip on this machine.** A toy decode step (`context_flip.run`):
# 64 sequences multiply a $1024 \times 4096$ fp32 weight (compute-bound: the
# weight is shared) and each attends over its own cached keys and values (one
# head of 64 values, 512 bytes a token: memory-bound). The weight product does
# not grow with the context; the attention does. So the step is flat at short
# context and grows in proportion to $L$ past the balanced context
# $L^* = d^2 W/(d_h F)$ ($d = 1024$, head width $d_h = 64$), with this machine's matmul rate $F$ and read bandwidth $W$
# sampled between the rounds. Fitting a line $t = t_0 + t_L L$ to the measured steps gives the
# measured $L^* = t_0/t_L$ (the printout's `a / b`).

# %%
from llmmath.demos import context_flip


def remeasure_flip():
    return context_flip.run()


flip = remeasure_flip()
print(flip.table())
print(f"weight product alone: {flip.weights_s * 1e3:.2f} ms measured, {flip.predicted_weights_s * 1e3:.2f} ms "
      f"predicted at {flip.flops_per_s / 1e9:.0f} GFLOP/s; one more token of context for all {flip.batch} sequences: "
      f"{flip.predicted_kv_s_per_token * 1e6:.2f} us predicted at {flip.bytes_per_s / 1e9:.1f} GB/s")
print(f"balanced context L*: measured {flip.measured_balanced_context:,.0f} tokens (the fit's a / b), predicted "
      f"{flip.predicted_balanced_context:,.0f}; the step at {flip.contexts[-1]:,.0f} tokens takes "
      f"{flip.step_s[-1] / flip.step_s[0]:.1f}x the step at {flip.contexts[0]:,.0f}")
# What a busy core cannot flip: the context does lengthen the step, and the balance lands within a factor 5 of the
# ceilings' prediction (a fixed batch that never flipped, or a unit slip in the bytes, is off by far more).
measured.check("a fixed batch turns memory-bound as its context grows", lambda r: [
    measured.Fact("step at the longest context / step at the shortest", r.step_s[-1] / r.step_s[0], low=1.5,
                  why="a step that ignored the context, or stayed compute-bound, gives about 1x"),
    measured.Fact("measured L* / predicted L*", r.measured_balanced_context / r.predicted_balanced_context,
                  low=0.2, high=5, why="bytes counted per layer instead of per token, or fp16 for fp32, is off 4-1000x")],
    flip, remeasure=remeasure_flip)

# %% [markdown]
# The measured balance is this machine's version of claim 6's $L^*$: its $F/W$
# (the two rates printed above) is far smaller than a GPU's, so it flips at a few
# thousand tokens of a tiny model; an H100 with Llama-3.1-70B flips where the
# table above says. The shape is the claim: flat, then linear in $L$.

# %%
v6 = claims.check(6)
assert v6.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 7 (12:29) — sparse attention grows more slowly than dense
#
# *Claim, paraphrased:* dense attention reads every cached token each step, a
# straight line in $L$; sparse attention reads a subset, and its traffic grows
# more slowly — the speaker recalls DeepSeek's work turning the line into
# roughly a square root.
#
# **Derivation.** Per sequence and layer, with $\beta$ cache bytes per token:
#
# | scheme | bytes read per decode step | growth |
# |---|---|---|
# | dense | $L\beta$ | linear |
# | block top-k ($k_\text{sel}$ blocks of $L_\text{blk}$ tokens, one summary of $\sigma$ bytes per block) | $\lceil L/L_\text{blk}\rceil\sigma + k_\text{sel} L_\text{blk}\beta$ | linear, slope $\sigma/L_\text{blk}$ |
# | same, with $L_\text{blk} = \sqrt{L\sigma/(k_\text{sel}\beta)}$ | $2\sqrt{Lk_\text{sel}\sigma\beta}$ | $\sqrt L$ |
# | indexer ($\iota$ bytes per token) + top-k tokens (DSA) | $L\iota + k_\text{sel}\beta$ | linear, slope $\iota$ |
#
# The square root comes from one specific choice: if the block size grows as
# $\sqrt L$, the scan over block summaries ($L/L_\text{blk}$ of them) and the selected blocks
# ($k_\text{sel} L_\text{blk}$ tokens) both cost $\sim\sqrt L$ and balance. With a *fixed* block size,
# the scan is still linear — just $L_\text{blk}\beta/\sigma$ times flatter.
#
# **What the published mechanisms do** (parameters checked against the papers,
# configs and code; `attention.PUBLISHED` cites each):
#
# * **NSA** (DeepSeek, arXiv:2502.11089): three branches — compressed tokens
#   (blocks of 32, stride 16: $L/16$ compressed K/V), 16 selected blocks of 64
#   tokens, a 512-token window. Linear, slope $\beta/16$, plus $\approx1{,}536$ tokens.
# * **DSA** (DeepSeek-V3.2-Exp): a lightning indexer with 64 small heads of 128
#   scores *every* cached token against an fp8 key (128 B + a 4-byte scale), then
#   MLA attends to the top 2,048 tokens. Linear, slope $132/1152 = 0.115$ of dense at
#   bf16, plus $2048\beta$.
# * **MoBA** (Moonshot, arXiv:2502.13189): blocks of 512, top-3 (4,096 and top-12
#   at 1M tokens: 95.31% sparse), gated by mean-pooled block keys. Nearly flat at
#   practical lengths: the block scan is $1/8192$ of dense.
# * **Quest** (arXiv:2406.10774): pages of 16 tokens with a min and a max key each;
#   loads the top pages up to a token budget (512–4,096). Slope $1/16$ of dense.
#
# None of them uses $L_\text{blk} \propto \sqrt L$; DSA, the DeepSeek method actually
# shipped, keeps a fixed $k_\text{sel}$ and a linear indexer — a much smaller slope, not a
# square root.

# %%
beta = attention.bytes_per_cached_token("deepseek-v3")  # 1152 bytes per token per layer (bf16 latent + rope key)
Lx = np.array([8192, 32768, 131072, 1048576], float)
nsa, dsa = attention.PUBLISHED["NSA"], attention.PUBLISHED["DSA"]
schemes = {
    "dense": attention.dense_kv_bytes(Lx, beta),
    "DSA top-2048 + indexer": attention.indexer_topk_kv_bytes(Lx, dsa["index_topk"], beta, dsa["index_key_bytes"]),
    "NSA (paper settings)": attention.nsa_kv_bytes(Lx, beta),
    "MoBA 4096 x top-12": attention.moba_kv_bytes(Lx, beta, beta / 2, 4096, 12),
    "Quest page 16, budget 2048": attention.quest_kv_bytes(Lx, beta, beta / 2, 2048, 16),
    "block top-16, s ~ sqrt(L)": attention.block_topk_optimal(Lx, 16, beta, beta / 2)[1],
}
print(f"DeepSeek-V3 attention dims, bytes read per layer per sequence per step (MB):")
print(f"{'scheme':<28} " + " ".join(f"{int(L):>9,}" for L in Lx))
for name, y in schemes.items():
    print(f"{name:<28} " + " ".join(f"{v / 1e6:>9.2f}" for v in y))

# %% [markdown]
# The same comparison on two models and two chips: DeepSeek-V3's compact latent
# and Llama-3.1-70B's GQA cache (4 KiB of K and V per token per layer), as the
# KV-read time of one sequence's step over all layers on one H100 and one B200
# (`attention.kv_read_time_s`; the summary of a block is one mean key, `attention.mean_key_bytes`).

# %%
print(f"{'model':<14} {'chip':<9} {'scheme':<26} " + " ".join(f"{int(L):>10,}" for L in Lx))
for model in ("deepseek-v3", "llama-3.1-70b"):
    b, sig = attention.bytes_per_cached_token(model), attention.mean_key_bytes(model)
    per_layer = {"dense": attention.dense_kv_bytes(Lx, b), "NSA (paper settings)": attention.nsa_kv_bytes(Lx, b),
                 "block top-16, s ~ sqrt(L)": attention.block_topk_optimal(Lx, 16, b, sig)[1]}
    for chip in ("h100-sxm", "b200"):
        for name, y in per_layer.items():
            print(f"{model:<14} {chip:<9} {name:<26} "
                  + " ".join(f"{fmt_seconds(t):>10}" for t in attention.kv_read_time_s(model, chip, y)))
print("(KV-read time per sequence per decode step, all layers, one chip; the ratio between schemes is the same on "
      "every chip, only the scale moves)")

# %% slideshow={"slide_type": "subslide"}
Lp = np.geomspace(4096, 2**24, 200)
fig, (ax1, ax2) = plots.new_axes(2, width=5.5)
curves = {
    "dense": attention.dense_kv_bytes(Lp, beta),
    "DSA": attention.indexer_topk_kv_bytes(Lp, 2048, beta, 132),
    "NSA": attention.nsa_kv_bytes(Lp, beta),
    "MoBA 4096 x 12": attention.moba_kv_bytes(Lp, beta, beta / 2, 4096, 12),
    "Quest 16 / 2048": attention.quest_kv_bytes(Lp, beta, beta / 2, 2048, 16),
    "block top-16, s ~ sqrt(L)": attention.block_topk_optimal(Lp, 16, beta, beta / 2)[1],
}
for name, y in curves.items():
    ax1.loglog(Lp, y, label=name)
    ax2.semilogx(Lp[1:], attention.loglog_slope(Lp, y), label=name)
ax1.set_xlabel("context L (tokens)"); ax1.set_ylabel("bytes read per layer per step"); ax1.legend(fontsize=8)
ax2.set_xlabel("context L (tokens)"); ax2.set_ylabel("local growth exponent\nd log bytes / d log L")
ax2.axhline(0.5, color="gray", ls=":"); ax2.set_ylim(-0.05, 1.1)
for a in (ax1, ax2):
    a.grid(True, which="both", alpha=0.3)
plt.show()

# %% [markdown]
# The right panel is the honest test of "grows more slowly": a square root has
# exponent ½ everywhere. The fixed-$k_\text{sel}$ schemes start near 0 (the top-$k_\text{sel}$
# constant dominates) and climb toward 1 as their linear scan takes over; only
# the $\sqrt L$-sized blocks hold ½.
#
# **Explore** the block top-k trade: move the block size and the context and
# watch the blue line leave the dense black one and touch the green $\sqrt L$
# envelope only where the block is the best one; switch the model (DeepSeek-V3's
# 1,152-byte latent, Llama-3.1-70B's 4 KiB of K and V per layer) and the chip to
# see the same bytes as read time (`explorers.sparse_attention_explorer`).

# %% slideshow={"slide_type": "subslide"}
sparse_explorer = explorers.sparse_attention_explorer(model="deepseek-v3", chip="h100-sxm")
sparse_explorer.widget

# %%
v7 = claims.check(7)
assert v7.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Measured: a decode-attention kernel against its byte count
#
# If claim 3 is right, a decode-attention kernel should take about (cache bytes)
# ÷ (memory bandwidth), and twice the context should take twice the time. Here is
# one, timed on this machine beside that prediction. On a GPU it is the fused
# kernel of `llmmath.demos.attention_kernels` (split-K over the context, K and V
# each read once with 16-byte loads, scores and the weighted sum of values on the
# [tensor cores](../book/glossary.md#sm-warp-tensor-core), an online softmax as in [FlashAttention](../book/glossary.md#flashattention), then a small reduction); on a CPU it is two batched matrix products
# over an fp32 cache laid out in pages (`attention_kernels.PagedKV`, explained below
# the plot). The sparse call attends to the few best blocks of the cache (selected
# beforehand from block-mean keys; the sizes are printed with the table). On a CPU
# the contexts start where K+V is twice the last-level cache (up to 256 MiB), so
# that the call's fixed costs (Python, scratch buffers, the first memory latency;
# about 0.1 ms on the 2-core VM this course is tested on) weigh little beside its
# floor. The bandwidth is this machine's
# read-only stream (the calls read the cache), sampled at the start of every round
# of the sweep (the calls are timed round-robin), so the floor and the kernel see the same load.
# Each timed call starts from a cold cache, as in a real decode step where every other
# layer has read its own cache since this one was last touched: on a CPU the call
# before it is the same attention over another layer's cache (the cell after the
# layout comparison shows why that matters); on a GPU, a read-only sweep over twice
# its L2 (`kernels.evict_caches`).

# %%
sweep = attention_kernels.context_sweep()
print(f"{sweep.device}, method {sweep.method}, shape {sweep.shape}; read-only stream {sweep.bytes_per_s / 1e9:.1f} GB/s")
print(f"K+V from {sweep.dense_bytes[0] / 2**20:.0f} to {sweep.dense_bytes[-1] / 2**20:.0f} MiB: "
      f"{sweep.dense_bytes[0] / kernels.last_level_cache_bytes():.1f}x this machine's last-level cache and up "
      f"({kernels.last_level_cache_bytes() / 2**20:.0f} MiB)")
print(f"sparse: the top {sweep.shape['top_k']} blocks of {sweep.shape['block_size']} tokens per K/V head "
      f"({sweep.sparse_bytes[-1] / 2**20:.0f} MiB of K+V at every context)")
print(sweep.table())

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=6.5)
ax.loglog(sweep.context, sweep.dense_s, "o-", label="dense, measured")
ax.loglog(sweep.context, sweep.dense_predicted_s, "k--", label="dense, bytes / read bandwidth")
ax.loglog(sweep.context, sweep.sparse_s, "s-", label=f"block-sparse top-{sweep.shape['top_k']}, measured")
ax.loglog(sweep.context, sweep.sparse_predicted_s, "k:", label="block-sparse, bytes / read bandwidth")
ax.set_xlabel("context L (tokens)"); ax.set_ylabel("seconds per call")
ax.set_title("Decode attention: time follows the bytes"); ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Why a layout.** The plain CPU path multiplies each K/V head's whole cache,
# $L \times d_h$, by the group's $G$ queries ($d_h \times G$, four columns here). A BLAS
# runs that as a general matrix product with one very skinny operand: it first
# copies ("packs") the tall cache into cache-sized panels, then multiplies register
# tiles that are mostly empty, so each call reads and writes K several times. Laid
# out as K pages of 64 tokens stored transposed ($d_h \times 64$, the way [vLLM](../book/glossary.md#vllm)'s
# paged cache puts the head dimension outside the token index) and V blocks of 256
# tokens by 64 dimensions, the same products become a stack of small ones the BLAS
# multiplies straight from each block as it streams in. The next cell times both
# layouts on the longest context, round-robin, beside the same read ceiling.

# %%
L_long = int(sweep.context[-1])
qa, ka, va = attention_kernels.random_cache(1, sweep.shape["q_heads"], sweep.shape["kv_heads"], L_long,
                                            sweep.shape["head_dim"])
on_cpu_pages = not kernels.backend().is_gpu and attention_kernels.PagedKV.fits(L_long, sweep.shape["head_dim"])
paged = attention_kernels.PagedKV(ka, va) if on_cpu_pages else None   # a NumPy layout: the CPU path only
if paged is not None:
    probe = kernels.CeilingProbe(("fp32",), matmul_n=1024)   # read streams, and F for the in-cache line below

    def time_layouts():
        with kernels.one_blas_thread():
            return kernels.time_interleaved({"plain": lambda: attention_kernels.decode_attention(qa, ka, va, method="numpy"),
                                             "paged": lambda: paged.attend(qa)}, rounds=3, warmup=1, probe=probe)

    t_lay = time_layouts()
    read_bytes_per_s = max(probe.read_bytes_per_s, sweep.bytes_per_s)   # the best read rate seen: a ceiling is the best
    floor_s = attention_kernels.dense_bytes(1, sweep.shape["kv_heads"], L_long, sweep.shape["head_dim"], 4) / read_bytes_per_s
    for name, t in t_lay.items():
        print(f"L = {L_long}: {name:>5} layout {t.min_s * 1e3:6.2f} ms = {t.min_s / floor_s:.2f} x the byte floor "
              f"({floor_s * 1e3:.2f} ms at {read_bytes_per_s / 1e9:.1f} GB/s)")
    measured.check("the paged layout is not slower than the plain one", lambda t: [measured.Fact(
        "paged time / plain time", t["paged"].min_s / t["plain"].min_s, high=1.5,
        why="the paged layout exists to be faster on a CPU; how much faster depends on the BLAS kernels")],
        t_lay, remeasure=time_layouts)
    del ka, va

# %% [markdown]
# **What the cache holds before the call.** A decode step reads each layer's KV cache
# once, and by the time the next step reaches this layer every other layer has read
# its own: the cache arrives cold. A benchmark has to recreate that state, and the
# obvious shortcuts do not. The next cell times a cache the size of the last-level
# cache (the sweep's are larger, for the reason given with it) three ways: right
# after itself (part of its pages still in the last-level cache), right after the
# same attention over another layer's cache (the sweep's protocol), and right
# after a large copy (which leaves the cache full of modified lines that must be
# written back to memory while the call reads).

# %%
if paged is not None:
    L0 = min(L_long, attention_kernels.paged_context(kernels.last_level_cache_bytes(), 1, sweep.shape["kv_heads"],
                                                     sweep.shape["head_dim"]))   # a cache the size of the LLC
    bytes0 = attention_kernels.dense_bytes(1, sweep.shape["kv_heads"], L0, sweep.shape["head_dim"], 4)
    # "another layer": the same attention over a cache of twice the last-level cache, as the sweep uses
    other_layer = attention_kernels.previous_layer(1, sweep.shape["q_heads"], sweep.shape["kv_heads"],
                                                   sweep.shape["head_dim"])
    src = np.ones(2 * kernels.last_level_cache_bytes() // 4, np.float32)
    dst = np.empty_like(src)
    before = {"after itself": lambda: paged.attend(qa, L0), "after another layer": other_layer,
              "after a copy": lambda: np.copyto(dst, src)}
    with kernels.one_blas_thread():
        t_state = {name: kernels.time_interleaved({name: lambda: paged.attend(qa, L0)}, rounds=5, warmup=1,
                                                  evict=pre)[name] for name, pre in before.items()}
    floor0_s = bytes0 / read_bytes_per_s   # the best read rate seen (previous cell)
    for name, t in t_state.items():
        print(f"L = {L0} ({bytes0 / 2**20:.0f} MiB of K+V) {name:>20}: median {t.median_s * 1e3:5.2f} ms "
              f"= {t.median_s / floor0_s:.2f} x the byte floor")
    # where the time of the longest context's call goes, stage by stage, each call read cold
    with kernels.one_blas_thread():
        stage_s = paged.time_stages(qa, L_long, before=other_layer)
    half_floor_s = floor_s / 2                           # K or V alone: half the cache's bytes
    total_s = sum(stage_s.values())
    print(f"L = {L_long}, stage by stage (medians of 5 cold calls, {total_s * 1e3:.2f} ms in all):")
    print(f"  scores  q K^T (reads K): {stage_s['scores'] * 1e3:6.2f} ms = {stage_s['scores'] / half_floor_s:.2f} x K's bytes / W")
    print(f"  softmax (4 passes over {sweep.shape['q_heads'] * L_long:,} scores): {stage_s['softmax'] * 1e3:6.2f} ms "
          f"= {stage_s['softmax'] / total_s:.0%} of the call")
    print(f"  values  P V   (reads V): {stage_s['values'] * 1e3:6.2f} ms = {stage_s['values'] / half_floor_s:.2f} x V's bytes / W")
    above_s = total_s - floor_s
    products_s = stage_s["scores"] + stage_s["values"] - floor_s
    print(f"  of the {above_s * 1e3:.2f} ms above the floor: {products_s * 1e3:.2f} ms in the two products (reading "
          f"slower than the best read stream), {stage_s['softmax'] * 1e3:.2f} ms in the softmax")
    # the call's own work with memory free: the same attention over a cache that sits in the last-level cache
    L_c, in_cache_s, in_cache_bytes = attention_kernels.in_cache_s(1, sweep.shape["q_heads"], sweep.shape["kv_heads"],
                                                                   sweep.shape["head_dim"])
    share = in_cache_s / (in_cache_bytes / read_bytes_per_s)
    group = sweep.shape["q_heads"] // sweep.shape["kv_heads"]
    ridge = probe.flops_per_s("fp32") / read_bytes_per_s
    # the sweep's cold call at the longest context, best of its rounds like the in-cache call, over the same W
    cold = sweep.dense_s[-1] / floor_s
    where = "between them" if 1.0 <= cold <= 1 + share else ("below the max" if cold < 1.0 else "above the sum")
    print(f"in cache (L = {L_c}, its K+V in the last-level cache; best of 20 calls): {in_cache_s * 1e3:.2f} ms = "
          f"{share:.2f} x the byte floor of the same bytes from memory;\n  {group} queries per K/V head do "
          f"{group / 2:g} FLOP per fp32 cache byte, {group / 2 / ridge:.0%} of this core's balance point "
          f"F/W = {ridge:.1f} FLOP/byte;\n  the roofline's max gives 1.00 x the floor and the sum of the two "
          f"{1 + share:.2f} x; the sweep's cold call at L = {L_long} took {cold:.2f} x: {where}")
    del other_layer, src, dst
# the sparse call at the shortest context keeps every block: the dense call's bytes, in many more NumPy calls
if sweep.shape["top_k"] * sweep.shape["block_size"] == int(sweep.context[0]) and sweep.method == "numpy-paged":
    n_calls = 2 * sweep.shape["batch"] * sweep.shape["kv_heads"] * sweep.shape["top_k"]
    print(f"L = {int(sweep.context[0])}, sparse keeps all {sweep.shape['top_k']} blocks: the dense call's bytes in "
          f"{n_calls} products instead of 2 batched calls: {sweep.sparse_s[0] * 1e3:.2f} ms against "
          f"{sweep.dense_s[0] * 1e3:.2f} ms ({sweep.sparse_s[0] / sweep.dense_s[0]:.2f}x)")

# %% [markdown]
# On a GPU (`benchmarks/gpu_attention.py` runs the same at H200 sizes) the dense
# line should sit close to the prediction at long context. On a CPU the paged dense
# call lands near its byte floor at every context of the sweep (the table's ratio
# column); the cell above shows how much of that depends on the cache's state before
# the call. After itself, part of its pages may still be cached and the call can beat
# the DRAM floor; after a copy it also pays for writing another kernel's data back to
# memory. The stage-by-stage lines split the longest context's call into its three
# stages, each call read cold, and say how much of the time above the floor is in the
# two products (each should take about its half of the bytes at the best read rate;
# the BLAS's small products may stream slower than the best of the probe's read
# kernels) and how much in the softmax's four passes over the scores (which a GPU
# kernel fuses into the products). The "in cache" line gives the cause: the same
# call over a cache that already sits in the last-level cache, i.e. its own work
# when reading memory costs nothing. On a GPU that work is a sliver of the read time
# (8 FLOP per byte against an H200's ridge of about 200). On one CPU core it need not
# be: in fp32 the group's four queries make every cache byte cost 2 FLOP, and a core's
# balance point is only a few FLOP per byte (the line prints this one's and the share),
# so the products and the softmax alone can take most of the time the memory needs.
# The roofline's $\max(t_\text{compute}, t_\text{memory})$ assumes the
# core hides one behind the other entirely; a core that must issue every multiply
# while it streams hides it only in part, so a cold call should land between the max
# and the sum, as the MoE layer near its knee does (chapter 3); the line says where
# this run's longest context landed. (The in-cache call uses a shorter context, so
# its fixed costs per call weigh a little more: if anything, the sum it gives is high.)
# The sparse call reads the same bytes at every context. Its
# blocks are large (the sizes printed with the table), each a run of whole pages that
# is multiplied where it lies: two NumPy calls per kept block and K/V head. Between
# two calls the core spends a few microseconds in Python with no memory request in
# flight, and each call then waits a full memory latency for its first bytes. At the
# shortest context the sparse call keeps every block, so it reads exactly the dense
# call's bytes; the last line printed above sets the two side by side, and the
# difference is the cost of its calls, measured. With blocks of 64
# tokens, as the GPU kernel uses, NumPy would first have to copy the kept pages
# (`PagedKV.gather`): it has no product over pages scattered through memory, and the
# copy reads and writes every kept byte once more. The
# shape is the point: dense time grows with $L$, sparse time does not. (The CPU path
# runs on one BLAS thread: the stream it is compared with uses one core, and a
# second thread that loses its core to other work can make a small product wait a
# whole scheduler slice.)
#
# **Check** (physical facts, loose enough for any healthy machine): dense time grows
# at least a third as fast as the bytes from the shortest to the longest context
# (read off a robust fit through every context, `kernels.loglog_slope`); once the
# cache is at least twice the last-level cache (every context of this sweep, unless
# that cache is over 128 MiB) no call beats its byte floor by more than measurement
# noise (measured ÷ predicted above 0.5); at the longest context the block-sparse
# call, which reads a fixed number of bytes, takes less than halfway between its
# share of the dense bytes and the dense call's time (a sparse call that read the
# whole cache would take about as long as the dense one; the two are timed in the
# same rounds, so load slows both). The growth of sparse time over the sweep is
# printed, not asserted: its calls are short, and a busy core moves their fit. If a
# fact fails, the sweep is measured again before the check fails (`llmmath.demos.measured`).
#
# How close the dense calls come to the floor is printed, not asserted: the median
# measured ÷ predicted was 1.1–1.4 on the 2-core VM this course was tuned on and
# 2.7–3.2 on another host of the same kind whose OpenBLAS ran its Haswell kernels
# (the plain layout, timed above, gave 3.5–5.5 on the first). `benchmarks/run.py`
# keeps it as a target (0.8–1.25).

# %%
def attention_facts(sw):
    """The physical facts of a context sweep (see the check above)."""
    span = sw.context[-1] / sw.context[0]
    big = sw.dense_bytes >= min(2 * kernels.last_level_cache_bytes(), sw.dense_bytes[-1])
    share = sw.sparse_bytes[-1] / sw.dense_bytes[-1]        # the sparse call's bytes over the dense call's
    return [measured.Fact("dense time's fitted growth / the context's growth",
                          span ** kernels.loglog_slope(sw.context, sw.dense_s) / span, low=1 / 3,
                          why="dense decode attention reads the whole cache"),
            measured.Fact("lowest dense measured / predicted", (sw.dense_s / sw.dense_predicted_s)[big].min(), low=0.5,
                          why="below it a call beat its byte floor: mismeasured"),
            measured.Fact("block-sparse time / dense time at the longest context", sw.sparse_s[-1] / sw.dense_s[-1],
                          high=(1 + share) / 2, why=f"it reads {share:.0%} of the dense bytes there; a sparse call "
                          "that read the whole cache would give about 1")]


span = sweep.context[-1] / sweep.context[0]
growth = span ** kernels.loglog_slope(sweep.context, sweep.dense_s)   # fitted growth over the span (robust to one slow call)
# caches of at least twice the last-level cache, as the CPU sweep sizes them (and the longest context in any case)
big_bytes = min(2 * kernels.last_level_cache_bytes(), sweep.dense_bytes[-1])
ratio = (sweep.dense_s / sweep.dense_predicted_s)[sweep.dense_bytes >= big_bytes]
print(f"dense time grows {growth:.0f}x over {span:.0f}x context; measured / predicted from "
      f"{big_bytes / 2**20:.0f} MiB: {ratio.min():.2f} .. {ratio.max():.2f}, median {np.median(ratio):.2f} "
      f"(printed, not asserted: a target of benchmarks/run.py)")
sparse_growth = span ** kernels.loglog_slope(sweep.context, sweep.sparse_s)
print(f"sparse time grows {sparse_growth:.1f}x over the same span (its bytes: "
      f"{sweep.sparse_bytes[-1] / sweep.sparse_bytes[0]:.0f}x; printed, not asserted); at L = {sweep.context[-1]:,.0f} "
      f"it takes {sweep.sparse_s[-1] / sweep.dense_s[-1]:.2f} of the dense time for "
      f"{sweep.sparse_bytes[-1] / sweep.dense_bytes[-1]:.2f} of its bytes")
measured.check("dense attention follows the bytes, sparse does not", attention_facts, sweep,
               remeasure=attention_kernels.context_sweep)
ref = attention_kernels.reference_decode_attention(*attention_kernels.random_cache(2, 8, 2, 300, 128))
out = attention_kernels.decode_attention(*attention_kernels.random_cache(2, 8, 2, 300, 128))
assert np.allclose(kernels.backend().to_numpy(out), ref, atol=1e-4), "the kernel disagrees with the float64 reference"

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Can the fused kernel keep HBM busy? Ask the compiler, then Little's law
#
# A memory-bound kernel reaches the bandwidth $W$ only if it keeps $W\,t_\text{lat}$ bytes
# requested-but-not-yet-arrived at all times, where $t_\text{lat}$ is the memory latency
# ([Little's law](../book/glossary.md#littles-law)). Our kernel has, per thread block, one prefetched tile of K or V in
# flight: $64 \times d_h$ fp16 values, 16 KiB at $d_h = 128$. How many blocks share an
# [SM](../book/glossary.md#sm-warp-tensor-core) (one of the GPU's streaming multiprocessors) is set by what the compiler allocated — registers per thread and shared
# memory per block — against the SM's limits (CUDA Programming Guide, compute
# capability 9.0: 64 Ki registers, 228 KiB shared memory, 2,048 threads, 32
# blocks). NVRTC compiles the kernel for Hopper (`sm_90`) without a GPU, so this
# runs anywhere the `test` extra installed `cuda-bindings` (Linux x86-64).

# %% slideshow={"slide_type": "subslide"}
try:
    rep = attention_kernels.compile_report(head_dim=128, group=8, arch="sm_90")
except ImportError as e:
    rep = None
    print(f"skipped: {e}")
if rep is not None:
    h200 = hardware.get("h200")
    n_sm = 132  # H100 SXM5 and H200: the GH100 GPU with 132 SMs enabled (NVIDIA H100 Tensor Core GPU Architecture whitepaper)
    hidden_s = rep.latency_hidden_s(n_sm, h200.hbm_bytes_per_s)
    print(f"decode_attn_split for sm_90 (D=128, G=8): {rep.registers_per_thread} registers/thread, "
          f"{rep.smem_bytes:,} B shared memory/block, {rep.spill_bytes} B spilled")
    print(f"-> {rep.blocks_per_sm} blocks ({rep.blocks_per_sm * 4} warps) resident per SM; "
          f"{n_sm * rep.blocks_per_sm * rep.bytes_in_flight_per_block / 2**20:.1f} MiB in flight over {n_sm} SMs")
    print(f"-> at the H200's {h200.hbm_bytes_per_s / 1e12:.1f} TB/s that hides up to {hidden_s * 1e9:,.0f} ns of memory latency")
    fig, ax = plots.new_axes(width=5.5, height=2.2)
    lims = rep.occupancy_limits
    ax.barh(list(lims), list(lims.values()), color=["C3" if v == rep.blocks_per_sm else "C0" for v in lims.values()])
    for i, v in enumerate(lims.values()):
        ax.text(v, i, f" {v}", va="center", fontsize=8)
    ax.set_xlabel("thread blocks per SM this resource allows\n(red: the one that binds)")
    ax.set_title(f"Occupancy of decode_attn_split on sm_90: {rep.blocks_per_sm} blocks per SM", fontsize=9)
    ax.set_xlim(0, max(lims.values()) * 1.15); ax.invert_yaxis()
    plt.show()
    assert rep.spill_bytes == 0 and rep.smem_bytes == attention_kernels.fused_smem_bytes(128, 8)
    assert hidden_s > 1e-6, "fewer resident blocks than designed: the kernel would hide under 1 us of latency"

# %% [markdown]
# Four resident blocks of four [warps](../book/glossary.md#sm-warp-tensor-core) (groups of 32 threads) each, about 8 MiB in flight, enough to ride
# out roughly 1.8 µs of latency at 4.8 TB/s. Registers are what limit it (128 per
# thread: the Q fragments, the output accumulators and the prefetched tile live
# there); holding the prefetch in shared memory instead would fit more blocks but
# cost a second trip through shared memory. Is 1.8 µs enough? That depends on the
# memory latency, which no datasheet states: `benchmarks/gpu_attention.py`
# measures it on the H200 (one thread chasing pointers through 1 GiB, so no load
# overlaps the next — a lower bound on the latency under load), prints it beside
# this budget, and then times the kernel itself (target: ≥ 80% of the measured
# copy bandwidth at long context).

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# | # | time | claim | verdict |
# |---|---|---|---|
# | 3 | 7:18 | decode attention is bound by KV reads | **holds if** standard attention (MHA/GQA/MQA: $G$ FLOP/byte, 10–560× below the ridges); absorbed MLA (DeepSeek-V3, 128 heads on a chip): 242 FLOP/byte, compute-bound on H200 and A100; 425–484 over an fp8 cache, on H100 and B200 too; Kimi K2's 64 heads: 121, memory-bound everywhere |
# | 5 | 11:17 | longer context tips a fixed batch into memory-bound | **holds if** attention is memory-bound: $L^* = 2N_\text{mm}/(F\beta/W - a)$, 1,476 tokens for Llama-3.1-70B on H100, from tens to ~16,000 tokens across GQA/MHA models and chips (~79,000 on the export-limited H20); never for absorbed MLA on an H200 |
# | 6 | 11:39 | the balanced context is the ideal operating point | **holds if** "ideal" means utilisation: both resources busy only there, MFU ≈ $L^*/L$ past it (0.51 at $2L^*$ for Llama-3.1-8B and 70B on H100 and B200); cost per token has no minimum there |
# | 7 | 12:29 | sparse attention's traffic grows more slowly | **holds if** read as a flatter line: published NSA/DSA/MoBA/Quest are a fixed top-$k_\text{sel}$ plus a 9–8000× flatter linear scan; a $\sqrt L$ law needs blocks of size $\propto\sqrt L$, which none uses |
#
# Exercises: `exercises/02_kv_cache_exercises.py` (answers in `solutions/`).

# %% [markdown]
# **Read next.** [Chapter 3](03_balance_point.py) puts this chapter's KV term back into the
# balance batch and adds the other thing chapter 1 carried as one line, the
# mixture of experts. For long context as a whole (prefill, price sheets, the
# memory wall) jump to [chapter 8](08_long_context.py), which builds on this one. Outside
# reading: the DeepSeek-V2 paper (arXiv:2405.04434, §2.1) for MLA, and Dao et al.,
# "FlashAttention" (arXiv:2205.14135) for the fused-kernel idea.
