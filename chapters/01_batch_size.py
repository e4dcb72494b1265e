# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 1 — Batch size: why serving one user at a time is ruinous
#
# This chapter checks four [claims](../book/glossary.md#claim) from the interview (the *time*
# column is where each is said in the recording), all about the same mechanism: a
# [decode](../book/glossary.md#decode) step — one new token for each sequence being generated — must
# stream the model's weights from memory no matter how many sequences share it.
#
# | # | time | claim, in our words |
# |---|---|---|
# | 1 | 1:52 | how many sequences are decoded together sets the speed–price trade-off more than anything else |
# | 2 | 4:39 | serving without batching can make each token about 1000× more expensive |
# | 4 | 10:28 | reading all the weights once sets a floor on the latency of a step |
# | 8 | 15:04 | small batches are expensive because the weight reads are shared by too few tokens |
#
# **After this chapter you can** compute, for any model on any chip, the step
# time and cost per token of decoding at [batch](../book/glossary.md#batch) $B$ (sequences decoded
# together) and [context](../book/glossary.md#context) $L$ (tokens each sequence already holds); the
# [latency floor](../book/glossary.md#latency-floor); and the batch at which decoding stops being memory-bound.

# %% [markdown]
# **Before you start.** Read [chapter 0](00_rooflines.py) first: this chapter is its two
# times ($F$ and $W$, the [roofline](../book/glossary.md#roofline), [arithmetic intensity](../book/glossary.md#arithmetic-intensity) $\approx B$)
# applied to one decode step. Glossary entries that matter here: [decode](../book/glossary.md#decode),
# [batch](../book/glossary.md#batch), [KV cache](../book/glossary.md#kv-cache), [MoE](../book/glossary.md#moe),
# [balance batch](../book/glossary.md#balance-batch), [chip-second](../book/glossary.md#chip-second) and
# [expert parallelism](../book/glossary.md#expert-parallelism); symbols $B$, $L$, $N_\text{tot}$, $N_\text{act}$,
# $N_\text{mm}$, $P_\text{read}$, $b_w$, $\beta$, $a$, $n$, $R$, $s$, $E$, $k$ on the
# [notation](../book/notation.md) page. The KV cache and mixtures of experts appear here
# as one term each; chapters 2 and 3 open them up. About an hour, plus a few
# minutes for the measured sweep.

# %%
import numpy as np
import matplotlib.pyplot as plt
import ipywidgets as W

from llmmath import claims, hardware, kernels, measured, models, plots, serving, explorers, widgets
from llmmath.units import fmt_count, fmt_seconds

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The model: one decode step on the roofline
#
# In **decode**, each of $B$ sequences appends one token. Every weight multiplies
# every sequence's activation, so the step does $2 N_\text{mm}$ FLOPs per
# sequence ($N_\text{mm}$: the weights a token multiplies; for a dense model
# almost all of the model's $N_\text{tot}$ [parameters](../book/glossary.md#parameters-and-weights), for a
# [mixture of experts](../book/glossary.md#moe) (MoE: each layer's MLP split into $E$ experts, of
# which a router sends each token to only $k$; chapter 3) only the $N_\text{act}$ a token uses),
# plus attention over the $L$ cached tokens, $aL$ FLOPs, where $a$ is the
# attention FLOPs one new token spends per cached token, summed over the layers
# ($4 n_h d_h n_\ell$ for standard attention with $n_h$ heads of width $d_h$ in each
# of $n_\ell$ layers: chapter 2 derives it). It must also read the
# weights, $P_\text{read}\,b_w$ bytes — $P_\text{read}$ weights (all of them for a dense model,
# only the experts some token picked for an MoE) at $b_w$ bytes each — once, shared by
# the batch, and every sequence's [KV cache](../book/glossary.md#kv-cache) (the keys and values
# attention computed for its earlier tokens, kept so they need not be recomputed;
# chapter 2 opens it up), $\beta$ bytes per token of context, so $L\beta$ bytes each.
# On $n$ chips, each with chapter 0's $F$ and $W$, the two times become
#
# $$t_\text{compute} = \frac{B\,(2N_\text{mm} + aL)}{nF}, \qquad
#   t_\text{memory} = \frac{P_\text{read}\,b_w + B\,L\,\beta}{nW}, \qquad
#   t_\text{step} \ge \max(t_\text{compute}, t_\text{memory}),$$
#
# with the work spread evenly over the $n$ chips that hold the model. A step yields
# $B$ tokens, so the machine time per token is
#
# $$\text{cost per token} = \frac{n\,t_\text{step}}{B}\ \text{chip-seconds}$$
#
# (a [chip-second](../book/glossary.md#chip-second) is one chip busy for one second: the course's unit of cost).
#
# Assumptions, named once: perfect overlap of compute and memory (the max;
# no overlap would give the sum, at most 2× more); no communication between the
# $n$ chips (chapters 5–6 add it); weights in [bf16](../book/glossary.md#precision) ($b_w = 2$) unless stated; a
# mixture of experts routes tokens uniformly, so a step reads only the experts
# some token picked. Everything here is a **floor**: real systems are slower.
#
# Three floors appear in this chapter; keep them apart. The **roofline floor**
# of a step is $\max(t_\text{compute}, t_\text{memory})$. The **latency floor**
# (claim 4) is the part of it no batch can shrink: reading the weights once.
# The **compute floor** of cost (claim 8) is what a token costs once the
# weights are amortized: $2N_\text{mm}/F$ chip-seconds.
#
# The library evaluates this for whole sweeps at once:

# %%
model, chip = models.get("llama-3.1-70b"), hardware.get("h100-sxm")
B = np.array([1, 8, 64, 256, 512])
step = serving.decode_step(model, chip, B, context=2048, n_chips=8)
print(f"{model.name}: N_tot = {fmt_count(model.total_params)}, beta = {model.kv_bytes_per_token():,.0f} bytes/token "
      f"({model.attention_kind}); on 8 x {chip.key}, context 2048")
print(f"{'B':>5} {'compute':>10} {'weights':>10} {'KV':>10} {'step':>10} {'chip-s/token':>13} {'bound':>8}")
for i, b in enumerate(B):
    print(f"{b:>5} {fmt_seconds(step.compute_s[i]):>10} {fmt_seconds(step.weight_s[i]):>10} "
          f"{fmt_seconds(step.kv_s[i]):>10} {fmt_seconds(step.time_s[i]):>10} {step.cost_chip_s_per_token[i]:>13.3g} "
          f"{'compute' if step.compute_bound[i] else 'memory':>8}")
kv_over_compute = step.kv_s / step.compute_s                   # both are B x a per-sequence time
kv_passes_weights = step.kv_s > step.weight_s
first_past = int(np.argmax(kv_passes_weights))
print(f"KV time / compute time: {kv_over_compute[0]:.2f} at B = {B[0]}, {kv_over_compute[-1]:.2f} at B = {B[-1]}")
print(f"KV time / weight time: {step.kv_s[0] / step.weight_s[0]:.3f} at B = {B[0]}, {step.kv_s[-1] / step.weight_s[-1]:.2f} "
      f"at B = {B[-1]} (it passes 1 between B = {B[first_past - 1]} and B = {B[first_past]})")
# the ratio of two times that both grow as B cannot change with B ...
assert abs(kv_over_compute[-1] / kv_over_compute[0] - 1) < 1e-9, kv_over_compute
# ... while the KV time grows against the fixed weight read and passes it inside the table
assert not kv_passes_weights[0] and kv_passes_weights[-1] and kv_passes_weights[first_past:].all(), kv_passes_weights
# and with the KV read above the compute at every batch, no batch is compute-bound at this context
assert kv_over_compute[0] > 1 and not step.compute_bound.any() and np.isinf(serving.balance_batch(model, chip, 2048))

# %% [markdown] slideshow={"slide_type": "slide"}
# Read the table down: the weight time is the same 5 ms at every batch (the
# weights are read once), while the compute and the KV time both grow in
# proportion to $B$, so their ratio does not depend on the batch (printed
# above: the same at the smallest batch as at the largest). What grows with
# $B$ is each of them *against the weight read*: for this model at 2048 tokens
# of context the KV time passes the weight time inside the table, and since it
# is larger than the compute at every batch, no batch makes this step
# compute-bound.
# Keep that for chapter 2; at short context the picture is simplest, and that
# is where the four claims live.
#
# ## Claim 1 (1:52) — batching is the dial
#
# *Claim, paraphrased:* among everything an operator controls when serving a
# model, the number of sequences decoded together dominates the trade between
# how fast tokens arrive and what they cost.
# (Chapter 11's [planner](11_plan_a_deployment.py) turns this dial for any model's config, beside capacity, cost and time to first token: [TTFT](../book/glossary.md#ttft), the wait from sending a prompt to the first token of the answer.)
#
# **Derivation.** Set $L = 0$ (short context) to see the skeleton. Below the
# batch where the two times meet, the step is memory-bound and its time is the
# weight-read time — *independent of $B$*. Cost per token is that time divided
# by $B$. Above it, the step is compute-bound and cost per token is flat at
# $2N_\text{mm}/F$. The two times meet at the **balance batch** ([glossary](../book/glossary.md#balance-batch))
#
# $$B^* = \frac{P_\text{read}\,b_w / W}{2N_\text{mm}/F} = \underbrace{\frac{F\,b_w}{2W}}_{R,\ \text{the chip}} \cdot
#   \underbrace{\frac{P_\text{read}}{N_\text{mm}}}_{\approx\ \text{sparsity } s}.$$
#
# The chip count $n$ cancels. $R = F b_w/(2W)$ belongs to the chip alone (the multiply-adds it does per
# weight it reads: about 300 on an H100 in bf16), and $s$ is the model's
# [sparsity](../book/glossary.md#sparsity), $N_\text{tot}/N_\text{act}$ (1 for a dense model, about 18 for
# DeepSeek-V3; the ratio in the formula is the read-side version of it, chapter 3).
# So from $B = 1$ to $B = B^*$ a dense model's latency does not move while its
# cost per token falls by $R$; past $B^*$ cost stops falling and latency grows
# in proportion to $B$. At $L = 0$ that is **no trade-off at all**: $B^*$ is
# both the fastest and the cheapest batch, and every other batch is worse on
# one count and no better on the other. Speed for price needs a term that grows
# with the batch. With context there is one: each sequence's KV cache,
# $B L \beta$ bytes a step. Below $B^*$
#
# $$t(B) = \frac{P_\text{read}\,b_w + B\,L\,\beta}{nW}, \qquad
#   \text{cost per token} = \frac{n\,t(B)}{B},$$
#
# so a smaller batch shortens the step (less KV to read) and raises the cost
# per token (the weight read is shared by fewer sequences). For a mixture of
# experts the experts touched grow with $B$ too. That is the dial the interview
# asks about: a "[Fast Mode](../book/glossary.md#fast-mode)" — a premium tier that serves the same model faster
# per user at a higher price per token — at about 2.5× the speed for about 6× the price.
#
# **Numbers.** Two dense models and two mixtures of experts on four chips, each
# on the fewest chips that hold its bf16 weights (with 10% headroom):

# %%
def min_chips(m, c):
    return int(np.ceil(models.get(m).weight_bytes() * 1.1 / hardware.get(c).hbm_bytes))

pairs = [(m, c) for m in ("llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "deepseek-v3")
         for c in ("h100-sxm", "b200", "mi300x", "tpu-v5e")]
print(f"{'model':<14} {'chip':<9} {'n':>3} {'B*':>6} {'step B=1':>9} {'step B*':>9} {'cost B=1':>10} {'cost B*':>10} {'ratio':>6}")
ratio_1 = {}
for m, c in pairs:
    n = min_chips(m, c)
    bstar = serving.balance_batch(m, c, context=0)
    s1 = serving.decode_step(m, c, 1, 0, n_chips=n, check_capacity=False)
    sb = serving.decode_step(m, c, bstar, 0, n_chips=n, check_capacity=False)
    print(f"{m:<14} {c:<9} {n:>3} {bstar:>6.0f} {fmt_seconds(s1.time_s):>9} {fmt_seconds(sb.time_s):>9} "
          f"{s1.cost_chip_s_per_token:>10.3g} {sb.cost_chip_s_per_token:>10.3g} "
          f"{s1.cost_chip_s_per_token / sb.cost_chip_s_per_token:>5.0f}x")
    ratio_1[(m, c)] = s1.cost_chip_s_per_token / sb.cost_chip_s_per_token
by_chip = {c: min(r for (m, cc), r in ratio_1.items() if cc == c) for c in dict.fromkeys(c for _, c in pairs)}
lo_c, hi_c = min(by_chip, key=by_chip.get), max(by_chip, key=by_chip.get)
print(f"\nbatch 1 -> B* cuts the cost by the chip's R: {by_chip[lo_c]:.0f}x on {lo_c} up to {by_chip[hi_c]:.0f}x on {hi_c}; "
      f"DeepSeek-V3's B* on an H100 is {serving.balance_batch('deepseek-v3', 'h100-sxm'):,.0f} (R x its sparsity)")

# %% [markdown]
# Costs are in chip-seconds per token. For each row, going from batch 1 to
# $B^*$ cuts the cost by the chip's $R$ (the last line above gives the range in
# this table), while — for the dense models — the step time does not change
# between $B = 1$ and $B^*$. For a mixture of experts the weight read itself
# grows with the batch (more experts get touched): its step time rises from
# $B = 1$ to $B^*$, and its $B^*$ is $R$ times its sparsity (printed above for
# DeepSeek-V3 on an H100). Chapter 3 is devoted to it. (The check below also
# covers Qwen3-4B, an A100, an H200 and a TPU v6e.)
#
# **Fast Mode from the batch alone.** Take the largest batch whose KV cache fits
# beside Llama-3.1-70B's weights on 8 H100s at 8,192 tokens of context, start
# from half of it (rounded up: a batch is whole sequences), and ask for 2.5× the
# speed (`serving.speed_for_price`). Then make the same move at $L = 0$. The
# check of claim 1 below starts from the same half batch; its cell asserts so.

# %%
full_batch = int(serving.max_batch("llama-3.1-70b", "h100-sxm", 8192, 8))
half_batch = -(-full_batch // 2)                    # ceil(full / 2); round() would take 92.5 to the even 92
fast = serving.speed_for_price("llama-3.1-70b", "h100-sxm", 8192, half_batch, 2.5, n_chips=8)
at_zero = [serving.decode_step("llama-3.1-70b", "h100-sxm", b, 0, n_chips=8) for b in (half_batch, fast.batch)]
print(f"8 H100s hold {full_batch} sequences of 8,192 tokens beside the weights; half of them, rounded up: {half_batch}")
print(f"L = 8192: {half_batch} -> {fast.batch:.1f} sequences: {fast.speedup:.2f}x faster for {fast.price_ratio:.2f}x the "
      f"price per token (the most any batch gives: {fast.max_speedup:.2f}x, at batch 1)")
print(f"L = 0:    {half_batch} -> {fast.batch:.1f} sequences: {at_zero[0].time_s / at_zero[1].time_s:.3f}x faster for "
      f"{at_zero[1].cost_chip_s_per_token / at_zero[0].cost_chip_s_per_token:.1f}x the price per token")

# %% [markdown]
# With context, the batch alone reproduces the product's numbers: about 2.5×
# the speed for about 6× the price. Without context it cannot: the same move
# buys nothing and multiplies the price. The speed a Fast Mode sells is the
# KV-cache (and, for a mixture of experts, expert) reads that a smaller batch
# no longer makes.
#
# **The second effect: [speculative decoding](../book/glossary.md#speculative-decoding).** The interview names it and
# defers it (chapter 12 returns to it). A cheap draft proposes $\gamma$ tokens (`k` in the
# printout below); the model checks them in one step of
# $\gamma+1$ tokens per sequence and keeps, on average,
# $\tau = (1-p_\text{acc}^{\gamma+1})/(1-p_\text{acc})$ of them (each kept with probability
# $p_\text{acc}$). While the step is memory-bound the extra tokens ride on the same
# weight read, so tokens come up to $\tau$ times faster; once it is compute-bound
# they cost their full share and the gain falls below 1
# (`speculative.speculative_decode`). DeepSeek-V3 drafts one token with its
# multi-token-prediction module ([MTP](../book/glossary.md#mtp): extra heads trained to predict the token after
# next) and reports it kept 85–90% of the time:

# %%
from llmmath import speculative

bs = np.array([1, 64, 512, 4096, 16384])
mtp = speculative.speculative_decode("deepseek-v3", "h200", bs, 4096, 8, acceptance=0.85, weight_dtype="fp8")
print("DeepSeek-V3 fp8 on 8 H200s, 4k context, MTP (k = 1, 85% kept): speed-up "
      + ", ".join(f"{s:.2f}x at B = {b:,}" for b, s in zip(bs, mtp.speedup)))
fast70 = speculative.speculative_decode("llama-3.1-70b", "h100-sxm", np.array([1, 256]), np.array([0, 32768])[:, None],
                                        8, draft_tokens=3, acceptance=0.7, draft_fraction=0.05)
print("Llama-3.1-70B on 8 H100s, a draft of 3 tokens kept 70% of the time (5% of a step each): "
      f"{fast70.speedup[0, 0]:.2f}x at B = 1 and {fast70.speedup[0, 1]:.2f}x at B = 256 with no context; "
      f"{fast70.speedup[1, 0]:.2f}x and {fast70.speedup[1, 1]:.2f}x at 32k tokens")

# %% [markdown]
# At a tiny batch the MoE's verify step touches twice the experts, so MTP buys
# little; at serving batches, where every expert is read anyway, it gives the
# ~1.8× DeepSeek reports; far past the balance batch it slows the model down. A
# dense model gains most at small batch, and long context brings the gain back,
# because the KV cache is read once for all $\gamma+1$ tokens. So speculation is a
# second dial for speed at a price, strongest exactly where a Fast Mode runs.
#
# **Picture.** Cost per token and step time against batch, log axes; the dotted
# line is $B^*$. DeepSeek-V3 is shown in [fp8](../book/glossary.md#precision) (1 byte a weight), as it is usually
# served (its bf16 weights, 1.34 TB, do not fit on 8 H200s).

# %% slideshow={"slide_type": "subslide"}
fig, (axc, axt) = plots.new_axes(2, width=5.5)
for m, c, n, wd in (("llama-3.1-70b", "h100-sxm", 2, "bf16"), ("llama-3.1-70b", "b200", 1, "bf16"),
                    ("deepseek-v3", "h200", 8, "fp8"), ("deepseek-v3", "b200", 8, "fp8")):
    plots.decode_vs_batch_plot(m, c, context=0, n_chips=n, ax_cost=axc, ax_time=axt, weight_dtype=wd)
plt.show()

# %% [markdown]
# Each cost curve falls as $1/B$ and then flattens; each dense step-time curve
# is flat and then rises as $B$. The MoE curves (DeepSeek-V3) rise earlier in
# step time: touching more experts costs time even before compute binds.
#
# **Explore.** Move the batch and watch the bound flip; change the chip, the
# model, the number of chips, the context and the precisions. The panel below
# the plots gives the step's parts, its bound, the balance batch and whether the
# KV cache fits. (`llmmath.course.explorers.decode_explorer` over `serving.decode_step`.)

# %% slideshow={"slide_type": "subslide"}
decode_explorer = explorers.decode_explorer(model="llama-3.1-70b", chip="h100-sxm", n_chips=8)
decode_explorer.widget

# %% [markdown]
# **Check.** Over seven chips and five models: from batch 1 to $4B^*$ cost per
# token falls by the chip's $R$, equal to the datasheet's $F b_w/(2W)$ written
# in the check; halving the weight precision — the next most powerful knob on
# the same hardware — changes it by the datasheet's fp8/bf16 FLOP/s ratio (2×)
# at most; and a dense model's step time is flat up to $B^*$, equal at $B = 1$
# to a weight read computed by hand from the Llama configs.

# %%
v1 = claims.check(1)
assert v1.verdict == "holds"
# one Fast Mode, not two: the check starts from this chapter's half batch and finds the same trade
fast_mode_evidence = next(v for k, v in v1.evidence.items() if k.startswith("Fast Mode"))
check_from, check_rest = fast_mode_evidence.split(" -> ", 1)
assert int(check_from) == half_batch, (check_from, half_batch)
assert check_rest.startswith(f"{fast.batch:.2f}, {fast.speedup:.2f}x, {fast.price_ratio:.2f}x"), (check_rest, fast)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 2 (4:39) — not batching costs ~1000×
#
# *Claim, paraphrased:* a provider that runs each user alone, instead of
# batching many together, pays on the order of a thousand times more per token.
# The speaker offered this as a preview, hedged ("can be"), before deriving anything.
#
# **Derivation.** The best cost per token is reached past $B^*$, where it is the
# compute floor $2N_\text{mm}/F$. At batch 1 the step reads the weights for a
# single token: cost $P_\text{read}(1)\,b_w / W$. Their ratio is
#
# $$\frac{\text{cost}(B{=}1)}{\text{cost}(B \ge B^*)} = \frac{P_\text{read}(1)\,b_w/W}{2N_\text{mm}/F}
#  = R\cdot\frac{P_\text{read}(1)}{N_\text{mm}} \approx R = \frac{F\,b_w}{2W}.$$
#
# For a dense model $P_\text{read} \approx N_\text{mm}$. For a mixture of
# experts the subtle point is $P_\text{read}(1)$: **a lone token reads only the
# experts it is routed to**, so $P_\text{read}(1) \approx N_\text{act}$ and the
# penalty is again about $R$ — not $R \cdot s$ as a model that always reads
# all $N_\text{tot}$ weights would say. Precision cancels at first order: fp8
# halves $b_w$ and doubles $F$.
#
# That last step assumed **pooled bandwidth** ([glossary](../book/glossary.md#pooled-bandwidth)): any chip can read any weight, so
# the few experts a lone token needs are streamed by all $n$ chips at once. A
# sparse model is not served that way. Under **expert parallelism**
# ([glossary](../book/glossary.md#expert-parallelism); chapter 5 develops it; it is how DeepSeek serves V3) each chip
# holds $E/n$ of every layer's $E$ routed experts and only it can read them; each
# MoE layer ends in an [all-to-all](../book/glossary.md#all-to-all) (every chip sends each other chip
# its tokens for that chip's experts, and gets the results back), so the layer lasts as long
# as its busiest chip. The chips whose experts no token picked sit idle — and are
# paid for. With the other weights $P_\text{other}$ (attention, the
# shared expert every token uses, dense layers, the [LM head](../book/glossary.md#embedding-and-lm-head)) sharded evenly
# over the chips, $n_\text{moe}$ MoE layers, and $P_e$ the weights of one routed expert
# in one layer:
#
# $$t_\text{step}(B{=}1) = \frac{\big(P_\text{other}/n + n_\text{moe}\,\mathbb{E}[\max_\text{chip} e_\text{chip}]\,P_e\big)\,b_w}{W},
#   \qquad \frac{\text{cost}(1)}{\text{best}} = \frac{n\,t_\text{step}}{2N_\text{mm}/F},$$
#
# where $e_\text{chip}$ counts the picked experts on one chip (the token's $k = 8$ picks
# among $n$ groups of $E/n$, drawn without putting one back: the count of picks that land on each
# chip follows the multivariate hypergeometric distribution, which `serving.expected_busiest_chip_experts`
# sums exactly). At $n = 1$ this is $R$; at one expert per chip ($n = E$) the
# $n$ chips together are paid to read every weight, and the penalty is
# $R \cdot N_\text{tot}/N_\text{act} = R\,s = B^*$. Real deployments sit in between.
#
# **Numbers**, with $R$ written from datasheets so a reader can redo the division
# (pooled bandwidth first):

# %%
print(f"{'chip':<10} {'datasheet F/W':>14} {'dense 70B':>10} {'Mixtral':>8} {'DeepSeek-V3':>12}  (bf16, context 0)")
by_chip_all = ("a100-80gb", "h100-sxm", "h200", "b200", "mi300x", "tpu-v5e", "tpu-v6e")
for c in by_chip_all:
    ch = hardware.get(c)
    r = [serving.cost_ratio_unbatched(m, c, 0) for m in ("llama-3.1-70b", "mixtral-8x7b", "deepseek-v3")]
    print(f"{c:<10} {ch.flops_per_s('bf16') / 1e12:>6.0f}T/{ch.hbm_bytes_per_s / 1e12:.2f}T {r[0]:>9.0f}x {r[1]:>7.0f}x {r[2]:>11.0f}x")
ds = models.get("deepseek-v3")
print(f"\nif an unbatched DeepSeek-V3 token had to read all {fmt_count(ds.total_params)} weights: "
      f"{hardware.get('h100-sxm').balance_ratio() * ds.weights_read_params / ds.matmul_params_per_token:.0f}x on an H100")

# %% [markdown]
# Now the placement-aware penalty: the same models on the node or rack sizes that
# hold their fp8 weights, experts spread over the chips (the dense Llama for
# contrast — it has no experts to place, so it stays at $R$).

# %%
placements = (("h200", 8), ("h100-sxm", 16), ("gb200", 64), ("gb200", 72))
ep_models = ("llama-3.1-70b", "deepseek-v3", "kimi-k2")
print(f"{'placement':<14} {'R (fp8)':>8} " + " ".join(f"{m:>14}" for m in ep_models) + "   (fp8 weights, B = 1, context 0)")
ep_ratio = {}
for c, n in placements:
    cells = []
    for m in ep_models:
        fits = serving.expert_parallel_chip_bytes(m, n, "fp8") <= hardware.get(c).hbm_bytes
        ep_ratio[(m, c, n)] = serving.expert_parallel_cost_ratio_unbatched(m, c, n, weight_dtype="fp8")
        cells.append(f"{ep_ratio[(m, c, n)]:>13,.0f}x" if fits else f"{'does not fit':>14}")
    print(f"{f'{n} x {c}':<14} {hardware.get(c).balance_ratio('fp8'):>8.0f} " + " ".join(cells))
ds_ep = {k: v for k, v in ep_ratio.items() if k[0] == "deepseek-v3"}
print(f"\nDeepSeek-V3 under expert parallelism: {min(ds_ep.values()):,.0f}x .. {max(ds_ep.values()):,.0f}x; "
      f"upper bound R s = B* = {serving.balance_batch('deepseek-v3', 'h100-sxm'):,.0f} on an H100")

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=6.5)
for m in ("deepseek-v3", "qwen3-235b-a22b"):
    E = models.get(m).n_experts
    n_sweep = 2 ** np.arange(0, int(np.log2(E)) + 1)
    for c, style in (("h100-sxm", "-"), ("gb200", "--")):
        r = serving.expert_parallel_cost_ratio_unbatched(m, c, n_sweep, weight_dtype="fp8")
        fits = np.array([serving.expert_parallel_chip_bytes(m, int(k), "fp8") <= hardware.get(c).hbm_bytes for k in n_sweep])
        line, = ax.loglog(n_sweep[fits], r[fits], style, marker="o", ms=3, label=f"{m}, {c}, fp8")
        ax.loglog(n_sweep[: fits.argmax() + 1], r[: fits.argmax() + 1], ":", color=line.get_color(), alpha=0.4,
                  label=f"  (dotted, grey: fp8 weights do not fit on so few {c})" if m == "deepseek-v3" else None)
ax.axhline(1000, color="gray", ls=":", label="the quoted 1000x")
ax.axhline(hardware.get("h100-sxm").balance_ratio("fp8"), color="k", lw=0.8, label="R (H100): pooled bandwidth")
ax.set_xlabel("chips the experts are spread over (n)"); ax.set_ylabel("cost(B=1) / best cost")
ax.set_title("Unbatched penalty under expert parallelism: the busiest chip sets the step")
ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# Context makes the penalty smaller, not larger: KV reads are per sequence and
# cannot be shared by batching, so they raise the batched cost too.

# %% slideshow={"slide_type": "subslide"}
fig, (ax1, ax2) = plots.new_axes(2, width=5.5)
L = np.linspace(0, 32768, 200)
for m in ("llama-3.1-8b", "llama-3.1-70b", "deepseek-v3"):
    ax1.plot(L, serving.cost_ratio_unbatched(m, "h100-sxm", L), label=m)
ax1.axhline(1000, color="gray", ls=":", label="the quoted 1000x")
ax1.set_xlabel("context L (tokens)"); ax1.set_ylabel("cost(B=1) / best cost"); ax1.set_yscale("log")
ax1.set_title("Unbatched penalty on an H100, bf16"); ax1.legend(fontsize=8); ax1.grid(True, which="both", alpha=0.3)
Bs = np.unique(np.round(np.logspace(0, 4, 100)))
for m in ("mixtral-8x7b", "deepseek-v3", "qwen3-235b-a22b"):
    mm = models.get(m)
    ax2.semilogx(Bs, mm.expected_params_read(Bs) / mm.weights_read_params, label=f"{m} (E/k = {mm.expert_sparsity:.0f})")
ax2.set_xlabel("batch B"); ax2.set_ylabel("fraction of weights read per step")
ax2.set_title("MoE: experts touched grow with batch\n(uniform routing)"); ax2.legend(fontsize=8); ax2.grid(True, alpha=0.3)
plt.show()

# %% [markdown]
# **Explore** the penalty: the decode explorer again, now on DeepSeek-V3 in fp8 on
# 16 H100s with its experts spread over the chips (expert parallelism, the
# busiest chip setting each step). Drag the batch down to 1 and read claim 2's
# line under the plots (cost per token at B = 1 over this batch's, and over the
# cheapest batch that fits); switch the experts to "pooled" to see how much the
# pooled form understates it; then add context, which raises the batched cost
# and shrinks the ratio (`explorers.decode_explorer`).

# %% slideshow={"slide_type": "subslide"}
penalty_explorer = explorers.decode_explorer(model="deepseek-v3", chip="h100-sxm", log2_batch=0, n_chips=16,
                                             weight_dtype="fp8", layout="expert-parallel")
penalty_explorer.widget

# %%
v2 = claims.check(2)
assert v2.verdict == "holds if"
dense_r = [serving.cost_ratio_unbatched("llama-3.1-70b", c, 0) for c in by_chip_all]
print(f"\nVerdict: holds if the model is a sparse MoE served with expert parallelism -- DeepSeek-V3 at batch 1 "
      f"costs {min(ds_ep.values()):,.0f}-{max(ds_ep.values()):,.0f}x its batched cost on these placements, and the "
      f"more chips share the experts, the higher. For a dense model (or pooled bandwidth) the penalty is the chip's "
      f"R, {min(dense_r):.0f}-{max(dense_r):.0f}x at bf16: {1000 / max(dense_r):.1f}-{1000 / min(dense_r):.1f}x "
      f"short of a thousand.")

# %% [markdown] slideshow={"slide_type": "slide"}
#
# ## Claim 4 (10:28) — the latency floor is one read of all the weights
#
# *Claim, paraphrased:* however small the batch, a step cannot finish before
# every weight has been streamed from memory into the chips once.
# (Chapter 11's [planner](11_plan_a_deployment.py) reports this floor as the step time at batch 1 for any placement and precision.)
#
# **Derivation.** $t_\text{step} \ge t_\text{memory} \ge P_\text{read}\,b_w/(nW)$,
# and for a dense model $P_\text{read}$ is all the weights (minus the untied
# input-[embedding](../book/glossary.md#embedding-and-lm-head) table, of which a step reads only $B$ rows). The only way to
# lower the floor on given chips is more chips (more $nW$) or fewer bytes per
# weight. For a mixture of experts the caveat of claim 2 returns: at small
# batch a step reads only the experts it uses, so the "all parameters" floor
# applies once $B \gg E/k$ (then every expert is picked by some token).
#
# Hand check for Llama-3.1-70B on 8 H100s: $(70{,}553{,}706{,}496 - 128{,}256\cdot 8{,}192)\times 2 / (8 \times 3.35\times10^{12})$
# (the first line below). For a mixture of experts at $B = 1$ the table gives
# two steps: with **pooled** bandwidth (any chip reads any weight; only the
# active experts are read) and under **expert parallelism**, where the busiest
# chip sets each layer (claim 2). The second is how DeepSeek-V3 is served, and
# it is the one that bounds a single sequence's speed.

# %%
hand_70b = (70_553_706_496 - 128_256 * 8_192) * 2 / (8 * 3.35e12)
print(f"hand: Llama-3.1-70B on 8 x H100 floor {hand_70b * 1e3:.2f} ms -> at most {1 / hand_70b:.0f} tokens/s per sequence\n")
print(f"{'model':<15} {'wt':<5} {'chips':>12} {'all-weights floor':>18} {'B=1 pooled':>11} {'B=1 EP':>9} {'max tokens/s/seq':>17}")
floor_vs_ep = {}
for m, wd in (("llama-3.1-8b", "bf16"), ("llama-3.1-70b", "bf16"), ("llama-3.1-405b", "bf16"),
              ("deepseek-v3", "bf16"), ("deepseek-v3", "fp8")):
    for c, n in (("h100-sxm", 8), ("b200", 8), ("gb200", 72)):
        if not serving.fits_in_hbm(m, c, 1, 0, n, weight_dtype=wd):
            print(f"{m:<15} {wd:<5} {f'{n} x {c}':>12} {'weights do not fit':>18}")
            continue
        f = serving.latency_floor_s(m, c, n, weight_dtype=wd)
        t1 = serving.decode_step_time_s(m, c, 1, 0, n_chips=n, weight_dtype=wd)
        t_ep = serving.expert_parallel_decode_step(m, c, 1, 0, n, weight_dtype=wd).time_s
        floor_vs_ep[(m, wd, c, n)] = (f, t1, t_ep)
        print(f"{m:<15} {wd:<5} {f'{n} x {c}':>12} {fmt_seconds(f):>18} {fmt_seconds(t1):>11} {fmt_seconds(t_ep):>9} "
              f"{1 / t_ep:>17,.0f}")
f, t1, t_ep = floor_vs_ep[("deepseek-v3", "fp8", "gb200", 72)]
print(f"\nDeepSeek-V3 (fp8) on 72 GB200s at B = 1: pooled bandwidth would give {fmt_seconds(t1)} "
      f"({f / t1:.0f}x under the all-weights floor), but the busiest chip needs {fmt_seconds(t_ep)} "
      f"({f / t_ep:.1f}x under the floor): at most {1 / t_ep:,.0f} tokens/s for one sequence, not {1 / t1:,.0f}.")

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=6.5)
n = np.arange(1, 73)
for m in ("llama-3.1-70b", "llama-3.1-405b"):
    mm = models.get(m)
    ok = n * hardware.get("b200").hbm_bytes >= mm.weight_bytes()
    ax.loglog(n[ok], [serving.latency_floor_s(m, "b200", int(k)) for k in n[ok]], label=f"{m}, bf16")
    ax.loglog(n[ok], [serving.latency_floor_s(m, "b200", int(k), weight_dtype="fp8", check_capacity=False) for k in n[ok]],
              "--", label=f"{m}, fp8")
ax.set_xlabel("B200 chips holding the weights"); ax.set_ylabel("latency floor per step (s)")
ax.set_title("The floor falls as 1/n: spreading weights over more chips adds bandwidth")
ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Explore** the floor: Llama-3.1-405B on 16 B200s at batch 1. Claim 4's line
# gives the B = 1 step and the share of it that is the weight read; add chips and
# watch the floor fall as $1/n$, switch to fp8 and watch it halve (`explorers.decode_explorer`).

# %% slideshow={"slide_type": "subslide"}
floor_explorer = explorers.decode_explorer(model="llama-3.1-405b", chip="b200", log2_batch=0, n_chips=16)
floor_explorer.widget

# %%
v4 = claims.check(4)
assert v4.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 8 (15:04) — small batches waste the weight reads
#
# *Claim, paraphrased:* at batch 1 the cost per token is enormous — the speaker
# says it heads toward infinity — because the fetched weights serve only one token.
# (Chapter 11's [planner](11_plan_a_deployment.py) prices any batch in chip-seconds and dollars per million tokens.)
#
# **Derivation.** Below $B^*$, cost per token $= n\,t_\text{memory}/B =
# P_\text{read}b_w/(W B)$: a **hyperbola** in $B$ (the speaker called the curve a
# parabola; it is $1/B$). It is finite at $B = 1$ — exactly $R$ times the floor
# it reaches at $B^*$ — and grows without bound only as $B \to 0$, which no
# server runs. Above $B^*$ it is flat at $2N_\text{mm}/F$ (plus per-sequence KV
# reads at long context, which batching cannot amortize).

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=6.5)
m, c = "llama-3.1-8b", "h100-sxm"
mm, cc = models.get(m), hardware.get(c)
Bs = np.unique(np.round(np.logspace(0, 4, 200)))
ax.loglog(Bs, serving.decode_cost_per_token(m, c, Bs, 0), "k-", lw=2, label="roofline cost per token")
ax.loglog(Bs, mm.weights_read_params * 2 / cc.hbm_bytes_per_s / Bs, ":", label="weight reads / B (hyperbola)")
ax.axhline(2 * mm.matmul_params_per_token / cc.flops_per_s("bf16"), color="tab:red", ls=":", label=r"compute floor $2N_\mathrm{mm}/F$")
for L_, color in ((8192, "tab:blue"), (32768, "tab:green")):
    cost_L = serving.decode_cost_per_token(m, c, Bs, L_, check_capacity=False)
    fits = np.asarray(serving.fits_in_hbm(m, c, Bs, L_))
    B_max = serving.max_batch(m, c, L_)
    ax.loglog(Bs[fits], cost_L[fits], "-.", color=color, label=f"context {L_} (fits up to B = {B_max:.0f})")
    ax.loglog(Bs[~fits], cost_L[~fits], "--", color="0.6", lw=1)
    ax.annotate(f"L={L_}: KV does not fit past B={B_max:.0f}", (Bs[~fits][0], cost_L[~fits][0]), fontsize=8,
                color="0.4", xytext=(5, 8 if L_ == 8192 else -14), textcoords="offset points")
ax.plot([], [], "--", color="0.6", label="grey dashed: batch does not fit in one H100's HBM")
ax.set_xlabel("batch B"); ax.set_ylabel("chip-seconds per token")
ax.set_title(f"{m} on one {c}: cost per token against batch"); ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Explore** the waste: Llama-3.1-8B on one H100 at batch 4. Claim 8's line says
# how many tokens each read of the weights serves and how much of the chip idles;
# raise the batch to the dotted $B^*$ and the idle share reaches zero, raise the
# context and the curve turns dashed where the KV cache stops fitting (`explorers.decode_explorer`).

# %% slideshow={"slide_type": "subslide"}
waste_explorer = explorers.decode_explorer(model="llama-3.1-8b", chip="h100-sxm", log2_batch=2, n_chips=1)
waste_explorer.widget

# %%
v8 = claims.check(8)
assert v8.verdict == "holds"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Measured: the flat region and the knee on this machine
#
# The claims rest on one physical fact: multiplying a batch of activations by a
# weight matrix takes the same time at any batch until the arithmetic
# catches up with the weight reads. Here is that product, $Y = X \Theta$ with $X$ of
# shape $(B \times d)$ and the weight matrix $\Theta$ of shape $(d \times d)$, timed on this machine for
# growing $B$, beside the roofline prediction from this machine's measured
# ceilings (chapter 0): $\max\big(2Bd^2/F,\ (d^2 + 2Bd)\,b_w/W\big)$, with $b_w = 4$ bytes
# (fp32). The weight is far larger than any cache, so every product really streams it from memory.
#
# **What the kernel does, and why not just `X @ W`** (the code's `W` is $\Theta$). A
# [BLAS](../book/glossary.md#blas-gemm-and-gemv) multiplies a matrix
# with a single row by a matrix–vector routine (GEMV) that streams $\Theta$ once. From
# two rows on it switches to its matrix–matrix routine (GEMM), built for big
# products: it first copies ("packs") $\Theta$ into cache-sized panels, then multiplies
# whole register tiles of rows whether they are filled or not. For a skinny $X$
# that fixed cost is several reads of $\Theta$ — the plain product is *not* flat below
# the knee (measured below, beside the kernel). So the sweep's few-row products
# (`kernels.BlockedWeight`) hold $\Theta$ re-laid out as contiguous blocks of
# $k_c \times n_c$ ($k_c$ rows by $n_c$ columns, the BLAS literature's names) and multiply block by block in one NumPy call, then add the
# $d/k_c$ partial results: each block product is small enough for the BLAS's
# small-matrix path, which multiplies straight from the block as it streams in.
#
# Which block shape works best depends on the BLAS, the CPU and even the number
# of rows (on the VM this course is tested on: 2000×32 at one row, 2000×64 at
# four, 250×64 at 16, 250×32 at 64), so for each batch that some block shape fits
# (up to 64 rows here) the sweep times the plain product and every block shape
# small enough for that many rows, and keeps the fastest (the table's last column)
# — as the FFT library FFTW times several ways of doing a transform and keeps the fastest. Past that the plain product competes alone; its packing of $\Theta$ is then a cost that the
# compute no longer fully hides, and the line under the table sets the two side by
# side for any batch that lands outside the band.
#
# The ceilings are measured the way the kernel uses the machine, between the
# sweep's rounds: the bandwidth $W$ as the best of three *read-only* streams (a copy's rate
# counts a write beside every read), $F$ as the better of a square product and
# the best rate this product reached. Every timed call starts from a cold cache
# (`kernels.evict_caches`: a read-only sweep over twice the last-level cache just
# before it), the state the floor assumes: every byte of $\Theta$ from memory, and no
# other kernel's modified data to write back on the way. The line under the table
# lists any batch outside 0.8–1.25× of its prediction and the measured cause.

# %%
sweep = kernels.batch_sweep()
print(sweep.table())
print(f"predicted knee: B = {sweep.knee_batch:.0f}")
print(sweep.departures())

# %% slideshow={"slide_type": "subslide"}
fig, (ax1, ax2) = plots.new_axes(2, width=5.5)
plots.batch_sweep_plot(sweep, ax=ax1)
ax2.loglog(sweep.batch, sweep.measured_s / sweep.batch, "o-", label="measured time per row")
ax2.loglog(sweep.batch, sweep.predicted_s / sweep.batch, "k--", label="predicted")
ax2.set_xlabel("batch B"); ax2.set_ylabel("seconds per row (cost per token)"); ax2.grid(True, which="both", alpha=0.3)
ax2.set_title("Cost per row falls as 1/B, then flattens"); ax2.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Why the blocks.** The same few-row products through the plain `X @ W`, with the
# ceilings of the sweep above (`formulation="plain"`):

# %%
few = sweep.batch[sweep.batch <= 8].astype(int)
plain = kernels.batch_sweep(few, formulation="plain", flops_per_s=sweep.flops_per_s, bytes_per_s=sweep.bytes_per_s,
                            progress=False)
for i, B in enumerate(few):
    print(f"B = {B:>2}: plain {plain.measured_s[i] * 1e3:6.1f} ms ({plain.measured_over_predicted[i]:.2f} of the "
          f"roofline), {sweep.formulation[i]} {sweep.measured_s[i] * 1e3:6.1f} ms "
          f"({sweep.measured_over_predicted[i]:.2f})")
print(plain.departures())

# %% [markdown]
# **Check** (on whatever machine runs this, with other work beside it): two physical
# facts, with margins wider than the spread between machines. *Batching amortizes
# the weight read*: the cost per row at the smallest batch is at least 2× the
# cheapest cost per row of any batch (the roofline's fall is printed beside it; a
# kernel that re-read $\Theta$ for every row would give about 1×). The cheapest batch,
# not the largest or a fit through all of them: other work slows a long
# compute-bound call more than a short one. *No batch beats its floor*: measured ÷
# predicted stays above 0.3 for every batch (below it the ceilings were
# mismeasured). Every batch and both ceilings are timed round-robin, each keeping
# its best, so a busy machine slows them alike; if a fact fails, the sweep is
# measured again (twice at most) before the check fails, and the message names the
# machine and the load on it (`llmmath.demos.measured`).
#
# The *shape* is printed, not asserted: the log–log slope of time against $B$ up to
# the knee (0 if flat, 1 if proportional) and from twice the knee on. How flat the
# first stretch is depends on this CPU's BLAS kernels for few-row products: the
# 2-core VM this course was tuned on stayed under 0.6 up to the knee, while a host
# of the same kind whose OpenBLAS ran its Haswell kernels gave 0.61–0.70 (the plain
# product's jump from one row to two alone gives 0.8 or more), so a bound on it
# would encode one machine. `benchmarks/run.py` keeps measured ÷ predicted for
# every batch as a target, with the departures printed beside it.

# %%
def batching_facts(sw):
    """The physical facts of a batch sweep (see the check above)."""
    per_row_s = sw.measured_s / sw.batch
    return [measured.Fact("lowest measured / predicted over the batches", sw.measured_over_predicted.min(), low=0.3,
                          why="below it a product beat its roofline floor: ceilings mismeasured"),
            measured.Fact("cost per row, smallest batch / cheapest batch", per_row_s[0] / per_row_s.min(), low=2,
                          why="a kernel re-reading W for every row gives about 1x")]


ratio = sweep.measured_over_predicted
per_row_s, per_row_pred_s = sweep.measured_s / sweep.batch, sweep.predicted_s / sweep.batch
cheapest = int(np.argmin(per_row_s))
print(f"measured / predicted: {ratio.min():.2f} .. {ratio.max():.2f}; cost per row falls "
      f"{per_row_s[0] / per_row_s[cheapest]:.1f}x from B = {sweep.batch[0]:.0f} to the cheapest batch "
      f"(B = {sweep.batch[cheapest]:.0f}; to the last: {per_row_s[0] / per_row_s[-1]:.1f}x); roofline: "
      f"{per_row_pred_s[0] / per_row_pred_s.min():.1f}x")
flat_region = sweep.batch <= sweep.knee_batch
linear_region = sweep.batch >= 2 * sweep.knee_batch
slope_flat = (kernels.loglog_slope(sweep.batch[flat_region], sweep.measured_s[flat_region])
              if flat_region.sum() >= 2 else float("nan"))
slope_above = (kernels.loglog_slope(sweep.batch[linear_region], sweep.measured_s[linear_region])
               if linear_region.sum() >= 2 else float("nan"))
print(f"shape (printed, not asserted): log-log slope of time up to the knee ({sweep.knee_batch:.1f}) "
      f"{slope_flat:.2f} (roofline 0, proportional 1); from twice the knee on {slope_above:.2f} (roofline 1)")
in_plain = np.isin(plain.batch, sweep.batch[flat_region])   # the plain products of the cell above, same batches
if in_plain.sum() >= 2:
    print(f"the same slope through the plain product at B = {plain.batch[in_plain].astype(int).tolist()}: "
          f"{kernels.loglog_slope(plain.batch[in_plain], plain.measured_s[in_plain]):.2f}")
measured.check("batching amortizes the weight read", batching_facts, sweep,
               remeasure=lambda: kernels.batch_sweep(progress=False))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# The verdicts and their numbers, as this run computed them:

# %%
r1 = v1.evidence["cost(B=1) / cost(B=4B*), all chip x model pairs"]
f_ds, t1_ds, tep_ds = floor_vs_ep[("deepseek-v3", "fp8", "gb200", 72)]
rows = [
    (v1, "batching is the dial", f"cost falls by R = {r1} from B=1 to past B*; the speed-price trade comes from the "
                                 f"KV reads: {fast.speedup:.1f}x faster for {fast.price_ratio:.1f}x the price at 8k "
                                 f"tokens, none at L = 0"),
    (v2, "no batching ~ 1000x worse", f"MoE with expert parallelism: DeepSeek-V3 {min(ds_ep.values()):,.0f}-"
                                      f"{max(ds_ep.values()):,.0f}x; dense: R = {min(dense_r):.0f}-{max(dense_r):.0f}x"),
    (v4, "latency floor = read all weights", f"dense, or MoE at B >> E/k; DeepSeek-V3 fp8 on 72 GB200 at B=1: "
                                             f"{fmt_seconds(tep_ds)} (busiest chip) vs floor {fmt_seconds(f_ds)}"),
    (v8, "small batches waste weight reads", f"a 1/B hyperbola, finite at B=1: "
                                             f"{v8.evidence['cost(B=1) / floor, Llama-3.1-8B and 70B']} the floor"),
]
print("| # | time | claim | verdict | numbers |\n|---|---|---|---|---|")
for v, what, numbers in rows:
    print(f"| {v.claim_id} | {claims.get(v.claim_id).timestamp} | {what} | **{v.verdict}** | {numbers} |")

# %% [markdown]
# Exercises: `exercises/01_batch_size_exercises.py` (answers in `solutions/`).

# %% [markdown]
# **Read next.** [Chapter 2](02_kv_cache.py) opens up the KV-cache term ($L\beta$) that
# this chapter carried as one line, and shows why long context turns decode
# memory-bound whatever the batch; then [chapter 3](03_balance_point.py) does the same for the
# mixture-of-experts term (the balance batch $B^* = R\,s$). Outside reading: the
# "All about transformer inference" chapter of
# [*How to Scale Your Model*](https://jax-ml.github.io/scaling-book/inference/) derives the same
# batch economics.
