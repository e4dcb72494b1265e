# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 11 — Plan a deployment: any config in, a serving plan out, held against what real systems measured
#
# The earlier chapters built every piece: parameter counts from config fields
# (chapter 1), the KV cache and attention (chapter 2), the balance batch
# (chapter 3), expert placement and pipelines (chapters 5 and 6), prefill and
# long context (chapter 8). This chapter puts them behind one call,
# `llmmath.planner.plan`, that answers what operators ask first — *does it fit,
# how many users, how fast, at what cost* — for **any** model whose Hugging Face
# `config.json` you have, offline. Then it holds the answer against every
# published measurement of a real serving system in the course's ledger.
#
# **After this chapter you can** read a config into a model and check its
# parameter count; plan a dense model on one GPU, a 70B on eight, DeepSeek-V3 on
# a rack; say which resource binds and what a million tokens cost at your price;
# count the KV cache of a model with sliding-window layers; and say how far
# real engines land from the roofline, and why.
#
# Every number a plan prints is a **roofline floor** (times) or **ceiling**
# (rates): no communication, no kernel gaps, perfect overlap, even expert load.

# %% [markdown]
# **Before you start.** This chapter assembles chapters 1–8; at least [chapter 1](01_batch_size.py),
# [chapter 2](02_kv_cache.py) and [chapter 3](03_balance_point.py) should be familiar, and
# [chapter 6](06_pipelining.py) for the placements. Glossary entries that matter here:
# [tensor](../book/glossary.md#tensor-parallelism), [pipeline](../book/glossary.md#pipeline-parallelism), [data](../book/glossary.md#data-parallelism) and
# [expert parallelism](../book/glossary.md#expert-parallelism), [balance batch](../book/glossary.md#balance-batch), [TTFT](../book/glossary.md#ttft),
# [vLLM](../book/glossary.md#vllm) and [model names](../book/glossary.md#model-names) (a model's `config.json`); symbols $n$, TP, PP,
# DP, EP, $\text{kv}(L)$, $\text{attn}(L)$, $e_\text{max}$ on the [notation](../book/notation.md) page. About an hour.

# %%
import json

import numpy as np
import matplotlib.pyplot as plt

from llmmath import explorers, models, planner, plots

# %% [markdown] slideshow={"slide_type": "slide"}
# ## From `config.json` to a model
#
# `models.from_hf_config` reads a config (a path or a dict; nothing is
# downloaded) for the Llama, Mistral, Qwen2/3, Qwen-MoE, Mixtral, DeepSeek-V2/V3,
# Kimi K2, gpt-oss, GPT-2, BLOOM and MPT families, among others (its docstring
# lists them all). Fields it does not understand are not
# dropped in silence: they are named in a warning and kept in
# `unmodelled_config_fields`. Here is Qwen3-8B's published config (the fields
# that matter; the rest are token ids, rope settings and the like):

# %%
qwen3_8b = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 4096,
            "intermediate_size": 12288, "num_hidden_layers": 36, "num_attention_heads": 32,
            "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936, "max_position_embeddings": 40960,
            "tie_word_embeddings": False, "rms_norm_eps": 1e-06, "rope_theta": 1000000, "sliding_window": None,
            "use_sliding_window": False, "max_window_layers": 36, "torch_dtype": "bfloat16"}
m8 = models.from_hf_config(qwen3_8b, name="qwen3-8b")
print(f"{m8.key}: {m8.total_params:,} parameters, {m8.total_params - 2 * 151936 * 4096:,} without the embedding "
      f"and head; {m8.attention_kind}, KV {m8.kv_bytes_per_token():,.0f} B per token at bf16")

# %% [markdown]
# The model card says **8.2B** parameters, **6.95B** without embeddings — our
# exact count from the fields above must round to both. That is a check against
# a published figure, not against ourselves:

# %%
assert round(m8.total_params / 1e9, 1) == 8.2                       # Qwen3-8B card: 8.2B
assert round((m8.total_params - 2 * 151936 * 4096) / 1e9, 2) == 6.95  # card: 6.95B non-embedding
assert m8.kv_bytes_per_token() == 2 * 36 * 8 * 128 * 2               # K and V, 36 layers, 8 heads of 128, bf16

# %% [markdown]
# Every model of the course's catalog is rebuilt the same way from its own
# published config in `tests/test_hf_config.py`, to the **identical** integer
# count. A config with a field the reader does not know says so:

# %%
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    odd = models.from_hf_config(qwen3_8b | {"num_memory_tokens": 64}, name="qwen3-8b-with-memory")
print(odd.unmodelled_config_fields, "|", caught[0].message)
assert odd.unmodelled_config_fields == ("num_memory_tokens",)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## What a plan computes
#
# For $B$ sequences at context $L$ on a replica of $n = \text{PP}\cdot\text{TP}\cdot\text{DP}$ chips
# (chapter 6's layout: attention split TP ways and replicated over DP groups of
# sequences, routed experts spread over the stage's chips):
#
# $$t_\text{step} \;\ge\; \max\!\Big(\underbrace{\frac{B\,(2N_\text{mm} + \text{attn}(L))}{n F}}_{\text{compute}},\;
# \underbrace{\frac{\big[N_\text{other}/\text{TP} + e_\text{max} P_e\,\text{frac}(B)\big]\,b_w}{W}}_{\text{weights, per chip}} +
# \underbrace{\frac{B\,\text{kv}(L)}{\text{DP}\cdot\text{TP}_\text{kv}\cdot\text{PP}\cdot W}}_{\text{KV cache, per chip}}\Big)$$
#
# with $\text{attn}(L)$ one new token's attention FLOPs ($aL$ when every layer attends to all
# $L$ positions), $\text{kv}(L)$ one sequence's cache (fewer positions in sliding-window
# layers), $e_\text{max}$ the routed experts on the fullest chip ($P_e$ weights each), $\text{frac}(B)$ the
# share of them some token touches, and $\text{TP}_\text{kv}$ the ways the KV heads are split. From it: **max batch** (KV beside the
# weights), **max context** at a batch, the **balance batch** (compute =
# memory), tokens/s per user ($1/t_\text{step}$) and per chip
# ($B/(n\,t_\text{step})$), **chip-seconds and dollars per million tokens**
# ($n\,t_\text{step}/B$), **time to first token** ([TTFT](../book/glossary.md#ttft): the prompt's FLOPs, or its
# weights' read, whichever is longer: its attention, dense layers, shared experts
# and head run on its own TP chips, only the routed experts it picks spread over
# the stage's TP·DP), and **which resource binds**. The weights a chip holds are
# those of the busiest pipeline stage: the first also holds the embedding, the
# last the LM head.
#
# The first plans take the roofline's view of memory: all of the datasheet's
# HBM for weights and KV, nothing held back (`usable_hbm_fraction=1.0`), so
# each can be checked by hand against the datasheet. A plan's default is what
# an engine gives its KV cache, which is less; a section below derives it and
# holds it against engines' own logs.
#
# ### Plan 1 — a dense 8B on one GPU

# %% slideshow={"slide_type": "subslide"}
DATASHEET = dict(usable_hbm_fraction=1.0)         # all of each chip's datasheet HBM
p1 = planner.plan(m8, "h100-sxm", 1, context=8192, batch=32, usd_per_chip_hour=2.0, **DATASHEET)
print(p1.table())

# %% [markdown]
# By hand, from the datasheet (80 GB, 3.35 TB/s) and the config: the weights
# take $2 \times 8.19\,\text{GB}$; each sequence at 8,192 tokens holds
# $8192 \times 147{,}456$ bytes. The batch that fits and the step at batch 32
# (weights, minus the embedding table that is only looked up, plus the KV reads):

# %%
w_bytes = 2 * 8_190_735_360
seq_kv = 8192 * 2 * 36 * 8 * 128 * 2
assert p1.max_batch == (80e9 - w_bytes) // seq_kv == 52
step = ((8_190_735_360 - 151936 * 4096 + 32 * 4096) * 2 + 32 * seq_kv) / 3.35e12
assert abs(p1.at_batch.step_time_s / step - 1) < 1e-9 and p1.at_batch.binds == "HBM bandwidth (KV cache)"
print(f"max batch {p1.max_batch:.0f}; step at B=32: {step * 1e3:.2f} ms by hand = the plan's "
      f"{p1.at_batch.step_time_s * 1e3:.2f} ms; ${p1.at_batch.usd_per_million_tokens:.3f} per million tokens at $2/h")
mm_flops, attn_flops = 2 * m8.matmul_params_per_token, float(m8.attention_flops_per_token(8192))
print(f"one sequence, one token at 8k: KV read {seq_kv / 1e9:.2f} GB in {seq_kv / 3.35e12 * 1e6:.0f} us; arithmetic "
      f"{mm_flops / 1e9:.1f} GFLOP of weight products + {attn_flops / 1e9:.1f} GFLOP of attention = "
      f"{(mm_flops + attn_flops) / 1e9:.1f} GFLOP in {(mm_flops + attn_flops) / 989.5e12 * 1e6:.0f} us")

# %% [markdown] slideshow={"slide_type": "subslide"}
# At 8k context an 8B model on one H100 never becomes compute-bound: one
# sequence's KV read outlasts its arithmetic, weight products and attention
# together, by more than ten times (the last line above), so there is no balance
# batch — the plan says so, and that **HBM bandwidth for the KV cache** binds.
# Capacity stops the batch at 52.
#
# ### Plan 2 — a 70B on eight GPUs

# %% slideshow={"slide_type": "subslide"}
p2 = planner.plan("llama-3.1-70b", "h200", 8, context=2048, weight_dtype="fp8", kv_dtype="fp8", tp=8,
                  usd_per_chip_hour=3.5, **DATASHEET)
print(p2.table())

# %% [markdown]
# The balance batch by hand (chapter 3's formula, on eight H200s at fp8, 1,979
# TFLOP/s and 4.8 TB/s each, KV heads split 8 ways):

# %%
N70, emb70 = 70_553_706_496, 128256 * 8192
per_seq_compute = (2 * (N70 - emb70) + 4 * 64 * 128 * 80 * 2048) / (8 * 1979e12)
per_seq_memory = (2048 * 2 * 80 * 8 * 128 / 8 + 8192 / 8) / 4.8e12
bstar = ((N70 - emb70) / 8 / 4.8e12) / (per_seq_compute - per_seq_memory)
assert abs(p2.balance_batch / bstar - 1) < 1e-9
max_b = (141e9 - N70 / 8) // (2048 * 2 * 80 * 8 * 128 / 8)     # fp8 weights and KV, 1/8 of each per GPU
assert p2.max_batch == max_b == 3151 and max_b < bstar
print(f"balance batch by hand {bstar:,.0f} = plan {p2.balance_batch:,.0f}; but only {max_b:,.0f} sequences fit")

# %% [markdown] slideshow={"slide_type": "subslide"}
# At 2k context the 70B would balance at about 4,750 sequences, but HBM holds
# 3,151: **capacity binds before compute**, and the plan's "at the balance
# batch" block says it does not fit. Longer contexts push the balance batch up
# and the max batch down (chapter 3, claim 11); at 4k there is no balance at all.
#
# ### Plan 3 — DeepSeek-V3 on a GB200 NVL72 rack
#
# Wide expert parallelism (chapter 6): all 72 GPUs hold a share of every MoE
# layer's 256 experts — 4 whole experts each, since 256 does not divide by 72 —
# and run attention data-parallel, each on its own sequences.

# %% slideshow={"slide_type": "subslide"}
p3 = planner.plan("deepseek-v3", "gb200-nvl72", context=4096, weight_dtype="fp8", ep=72, dp=72,
                  batch=72 * 128, usd_per_chip_hour=4.0, **DATASHEET)
print(p3.table())

# %%
P_e = 3 * 7168 * 2048                                          # one routed expert (SwiGLU)
other = 671_026_419_200 - 58 * 256 * P_e                       # attention, dense layers, shared experts, embeddings
assert abs(p3.weight_bytes_per_chip / (other + 58 * 4 * P_e) - 1) < 1e-12   # fp8: 1 byte each
print(f"weights per GPU {p3.weight_bytes_per_chip / 1e9:.1f} GB (the replicated part alone: {other / 1e9:.1f} GB); "
      f"at 128 sequences per GPU each user sees at most {p3.at_batch.tokens_per_s_per_user:.0f} tokens/s")

# %% [markdown] slideshow={"slide_type": "slide"}
# The replicated part (attention, dense layers, the shared expert, embeddings,
# 17 GB at fp8) dominates each GPU's weights: that is the price of
# data-parallel attention, and why DeepSeek's own decode units replicate it over
# 144 GPUs and run large batches per GPU.
#
# ## Sliding windows: gpt-oss's cache, counted right
#
# gpt-oss-120b alternates layers that attend to the last **128** tokens with
# layers that see everything. A windowed layer only ever holds 128 positions, so
# at long context the cache is about **half** of what counting all 36 layers in
# full gives. The library now counts it wherever KV enters (bytes per sequence,
# capacity, max batch, decode KV reads, attention FLOPs, prefill):

# %%
oss = models.get("gpt-oss-120b")
for L in (128, 8192, 131072):
    full = 36 * L * 2048                        # 2 x 8 kv heads x 64 x bf16 = 2,048 B per position per layer
    counted = oss.kv_bytes_per_sequence(L)
    print(f"context {L:>7,}: {counted / 1e9:7.3f} GB counted; all layers full would be {full / 1e9:7.3f} GB "
          f"({full / counted:.2f}x)")
assert oss.kv_bytes_per_sequence(131072) == 18 * 131072 * 2048 + 18 * 128 * 2048
pw = planner.plan("gpt-oss-120b", "h200", 1, context=131072, weight_dtype=0.53125, **DATASHEET)
print(f"gpt-oss-120b with MXFP4-sized weights (0.53125 B: 4 bits + one 8-bit scale per 32) on one H200 at "
      f"128k: max batch {pw.max_batch:.0f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Memory as an engine sees it
#
# An "80 GB" H100 is not 80e9 bytes to the program that runs on it: CUDA
# reports **85,045,477,376 B** (79.2 GiB; the datasheet's "GB" is nearer a
# GiB), and a serving engine does not give all of it to weights and KV. vLLM
# sizes its cache once, at start-up: it takes `gpu_memory_utilization` (0.9 by
# default) of that total, runs one forward pass over its token budget
# (`max_num_batched_tokens`: 8,192 on a large GPU, 2,048 on an A100 or a smaller
# one) and keeps back its **activation peak**, keeps back what grew **outside
# torch** meanwhile (NCCL and cuBLAS buffers), and gives the rest, less the
# weights, to the KV cache in blocks of 16 tokens. (CUDA graphs are captured
# afterwards, inside the 10% left over, up to vLLM 0.20; from 0.21 vLLM
# estimates the graphs' memory and takes it out too.) SGLang takes the memory outside torch
# first and then `mem_fraction_static` of the rest for weights and KV.
#
# The activation peak is counted from the code, not fitted. The profiling
# pass runs the model over the token budget, then samples one token for each
# of its dummy requests (`max_num_seqs`: 1,024 on an H100, 256 on an A100 or a
# smaller GPU), and keeps the larger of two peaks. In the forward pass, inside
# a SwiGLU MLP, the input, the residual and the output ($3d$ values a token)
# are alive beside the gate-up product and the activation
# ($3 d_{ff}/\text{TP}$), at 2 bytes each. In the sampling step every request
# holds a row of the whole vocabulary four times: the head's bf16 logits,
# their fp32 copy, the probabilities and the random draw's noise, 14 bytes an
# entry on every tensor-parallel GPU, beside the forward pass's output. For a
# small model with a large vocabulary the sampling step is the larger. For
# Llama-3.1-8B on one H100, by hand:

# %%
runtime, util, budget, seqs = 85_045_477_376, 0.9, 8192, 1024          # CUDA's total for an H100 80GB
forward = budget * (3 * 4096 + 3 * 14336) * 2                          # the profiling pass's MLP peak
sampling = 14 * seqs * 128_256 + budget * 4096 * 2                     # 1,024 rows of the vocabulary, the output
act = max(forward, sampling)
outside = 0.25 * 2**30                                                 # the median of three vLLM logs (data file)
weights = 2 * 8_030_261_248
kv_free = runtime * util - act - outside - weights
block = 16 * 32 * 2 * 8 * 128 * 2                                      # 16 tokens, 32 layers, K and V, 8 heads
pe = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192)           # the default: the engine view
pd = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192, **DATASHEET)
assert pe.kv_cache_tokens == kv_free // block * 16 and pe.reserve_bytes["activation peak"] == act
print(f"activation peak: forward pass {forward / 2**30:.2f} GiB, sampling step {sampling / 2**30:.2f} GiB")
print(f"vLLM's view: {runtime / 2**30:.2f} GiB x {util} - activations {act / 2**30:.2f} GiB - outside torch "
      f"{outside / 2**30:.2f} GiB - weights {weights / 2**30:.2f} GiB = {kv_free / 2**30:.2f} GiB of KV = "
      f"{pe.kv_cache_tokens:,.0f} tokens; {pe.max_batch:.0f} sequences of 8k (the datasheet view: {pd.max_batch:.0f})")

# %% [markdown]
# Every door — `plan`, `predict`, the engine and the command line — starts from
# this one default; `usable_hbm_fraction=1.0` (or `--usable-hbm-fraction 1.0`)
# asks for the datasheet's ceiling instead. A chip whose runtime total has no
# source (the TPUs here) is refused in the engine view, with that way out named.
#
# **Against engines' own logs.** `data/engine_kv_logs.toml` keeps start-up logs
# quoted in vLLM's and SGLang's issue trackers: the model, the GPUs, the
# fraction, the token budget, and the KV cache the engine logged. Each row is
# planned again here with the same inputs, and each is reported in its split:
# **validation** rows were seen while the memory model's form was chosen;
# **test** rows entered after it was fixed, each with the count the code gave
# when it entered; rows from engine releases that counted memory another way,
# that ran a KV connector with buffers of its own, or that loaded a vision
# encoder the catalog's language model lacks are shown apart with their
# reasons. The history is part of the result: eleven vLLM 0.19 start-ups on
# one to four H100s entered as test rows and all came out planned high; their
# logs printed an activation peak more than twice this chapter's count, which
# led to the sampling step above, derived from vLLM's sampler code; judged on
# it, they are validation rows now. The test rows are the next start-ups of
# the same runs, chosen by a rule written before their counts were computed
# (the data file states it).

# %%
kv_rows = planner.kv_capacity_vs_logged()
logs = planner.kv_logs()
SPLITS = ("test", "validation", "out of scope")
print(f"{'engine log':<44} {'split':<13} {'logged':>12} {'planned':>12} {'planned / logged':>17}")
for r in sorted(kv_rows, key=lambda r: (SPLITS.index(r.split), r.key)):
    print(f"{r.key:<44} {r.split:<13} {r.logged:>12,.2f} {r.planned:>12,.2f} {r.ratio:>17.2f}"
          + ("  GiB" if r.unit == "GiB" else ""))
    if r.split == "out of scope":
        print(f"{'':<4}out of scope: {logs[r.key]['reason']}")
by_split = {sp: [r for r in kv_rows if r.split == sp] for sp in SPLITS[:2]}
valid, test = by_split["validation"], by_split["test"]
in_scope = valid + test
err = np.array([abs(r.ratio - 1) for r in valid])
near = [r for r in in_scope if abs(r.ratio - 1) <= 0.15]
far = [r for r in in_scope if abs(r.ratio - 1) > 0.15]
for sp, rows in by_split.items():
    e = np.array([abs(r.ratio - 1) for r in rows])
    print(f"{sp}: {len(rows)} logs, median |planned / logged - 1| = {np.median(e):.1%}, worst {e.max():.1%}, "
          f"{sum(e <= 0.15)} within 15%")
print("outside 15%: " + ("; ".join(f"{r.key} ({r.split}) at {r.ratio:.3f}" for r in far) or "none"))

# %% [markdown]
# The check asks three things: a median miss under 10% on the validation rows,
# no in-scope row off by 30% or more, and no test row's count moved since it
# entered. The 30% was set after the
# validation rows were seen, so it guards against slips, not for fidelity: the
# goal, every row within 15%, is printed above and not asserted. A slip in the
# reserve trips it (the cell computes one: a profiling pass with no activation
# peak), and the logged figures are the sources' own, written here. A wrong
# runtime total is caught by the hand count above instead: CUDA's figure
# replaced by the datasheet's 80e9 bytes moves the SGLang row to the ratio
# printed below, inside the band, and every H100 plan with it.

# %%
import dataclasses

from llmmath import hardware
from llmmath.deployment import Deployment

h100_as_80e9 = dataclasses.replace(hardware.get("h100-sxm"), runtime_memory_bytes=80e9)
slip_total = Deployment("qwen3-235b-a22b", h100_as_80e9, 4, tp=4, weight_dtype="fp8", engine="sglang",
                        gpu_memory_utilization=0.93).kv_cache_tokens / 367_404
rtx3090 = planner.kv_capacity_vs_logged(["vllm-i10517-llama31-8b-rtx3090-29k"])[0].deployment.chip
slip_act = Deployment("llama-3.1-8b", rtx3090, 1, max_num_batched_tokens=1).kv_cache_tokens / 23_648
sglang_ratio = {r.key: r.ratio for r in kv_rows}["sglang-i21348-qwen3-235b-fp8-h100-tp4"]
print(f"slips: the datasheet's 80e9 B for CUDA's H100 total puts the SGLang row at {slip_total:.2f} (from "
      f"{sglang_ratio:.2f}); no activation peak puts the 29,000-token RTX 3090 row at {slip_act:.2f}")
log = {r.key: r for r in kv_rows}
assert log["vllm-i10517-llama31-8b-rtx3090-20k"].logged == 1952 * 16      # "# GPU blocks: 1952"
assert log["vllm-i10517-llama31-8b-rtx3090-29k"].logged == 1478 * 16      # "# GPU blocks: 1478"
assert log["sglang-i21348-qwen3-235b-fp8-h100-tp4"].logged == 367_404     # "#tokens: 367404"
assert log["vllm-pr10511-llama3-8b-h100"].logged == 53.29                 # "KV Cache is 53.29GiB"
assert len(valid) >= 10 and len(test) >= 3 and np.median(err) < 0.10
assert all(0.85 < r.ratio < 1.30 for r in in_scope)
assert all(r.planned == logs[r.key]["planned_at_entry"] for r in test), "a test row's count moved: judge it, then " \
    "mark it validation"
assert not 0.85 < slip_act < 1.30                                         # the slip would trip it

# %%
rtx = [r for r in valid if r.key.startswith("vllm-i10517")]
tp_rows = [r for r in in_scope if r.engine == "vllm" and r.deployment.placement.tp > 1]
high = sum(r.ratio > 1 for r in in_scope)
v019 = logs["vllm-v019-llama31-8b-h100-tp1"]["source"]
print(f"{len(near)} of {len(in_scope)} in-scope logs land within 15%. The {len(rtx)} RTX 3090 runs, whose 2-3 GiB of "
      f"slack after the weights is set mostly by the activation peak of a 20,000- or 29,000-token profiling pass, "
      f"land within {max(abs(r.ratio - 1) for r in rtx):.0%}. vLLM 0.19 logs an activation peak of "
      f"{v019.split('GiB weight, ')[1].split(' GiB')[0]} GiB for Llama-3.1-8B on one H100, against this count's "
      f"{planner.plan('llama-3.1-8b', 'h100-sxm', 1).reserve_bytes['activation peak'] / 2**30:.2f} GiB. "
      f"{high} of {len(in_scope)} are still planned high; the {len(tp_rows)} tensor-parallel vLLM rows sit "
      f"{min(r.ratio for r in tp_rows) - 1:+.0%} to {max(r.ratio for r in tp_rows) - 1:+.0%}.")

# %% [markdown]
# What the remaining misses have in common is the memory outside torch: the
# tensor-parallel rows err high, and their logs show NCCL's buffers growing to
# about 2 GiB a GPU at TP2 and up, where the course keeps the single-GPU
# median of 0.25 GiB. The SGLang row's eighth is the same term: SGLang
# measures the free memory after its communicators are up. It is not fitted
# to these rows: it is named here as what the next change to the memory model
# must derive from NCCL's code (its buffers per peer and channel), after which
# the test rows become validation rows. The multimodal rows shown apart miss
# by their vision encoder's weights and profiling; the Gemma 3 and Llama 4
# rows also by how vLLM lays out the cache of a model whose layers mix windowed
# or chunked attention with global attention, which this count does not follow.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Explore the planner
#
# Model, chip, chip count, placement, precisions and context. The left panel is
# tokens/s per chip against the batch, the right the speed each user sees; the
# red dotted line is the largest batch that fits (beyond it the curves are grey
# dashed: not a configuration that runs), the green dashed line the balance
# batch where one exists. The explorers of claims 1, 4, 8, 9 and 34 show each
# piece; this one shows them together.

# %% slideshow={"slide_type": "subslide"}
plan_explorer = explorers.planner_explorer()
plan_explorer.widget

# %% [markdown]
# The same from a shell, for any config on disk:
#
# ```bash
# python -m llmmath plan --config path/to/config.json --chip h200 --chips 8 --context 32768 --tp 8
# python -m llmmath plan --model deepseek-v3 --chip gb200-nvl72 --weight-dtype fp8 --ep 72 --dp 72 --json
# ```

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Held against reality
#
# The published measurements in `data/serving_measurements.toml`, each with its
# source and what it counted: DeepSeek's own production numbers (open-infra
# day 6, H800), SGLang's reproduction on 96 H100s and its GB200 NVL72 posts,
# MLPerf Inference v4.1 (Llama 2 70B and Mixtral; NVIDIA's and Dell's
# submissions), TensorRT-LLM's performance tables (dense Llama 3 from 8B to
# 405B, Mixtral, DeepSeek-R1 and Qwen3 on H100, H200, B200 and GB200) and
# batch-1 latency reports. For each, the planner's ceiling for the same model,
# chips and precisions — decode at the published batch (or the largest that
# fits), prefill compute-bound, and for offline runs the output rate when the
# same GPUs also prefill every prompt — grouped by the regime each row tests.

# %%
rows = planner.measured_vs_floor()
by = {r.key: r for r in rows}
regimes = {g: [r for r in rows if planner.regime(r.key) == g] for g in planner.REGIMES}
print(f"{len(rows)} published results; measured / ceiling by regime:")
for g, rs in regimes.items():
    v = np.array([r.ratio for r in rs])
    lo, hi = min(rs, key=lambda r: r.ratio), max(rs, key=lambda r: r.ratio)
    print(f"  {g:<8} {len(rs):>2} rows: median {np.median(v):.2f}, lowest {lo.ratio:.2f} ({lo.key}), "
          f"highest {hi.ratio:.2f} ({hi.key})")
print(f"  all      {len(rows)} rows: median {np.median([r.ratio for r in rows]):.2f}")

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=7.5, height=3.4)
rng = np.random.default_rng(0)                  # a little vertical jitter so the points do not hide each other
for j, (g, rs) in enumerate(regimes.items()):
    v = [r.ratio for r in rs]
    ax.scatter(v, j + rng.uniform(-0.18, 0.18, len(v)), s=22, color=f"C{j}", alpha=0.8)
    ax.plot([np.median(v)] * 2, [j - 0.3, j + 0.3], color="k", lw=2)
ax.axvline(1, color="k", ls="--", lw=1)
ax.set_yticks(range(len(regimes)), [f"{g} ({len(rs)})" for g, rs in regimes.items()])
ax.set_xscale("log"); ax.set_xlim(0.02, 1.2); ax.invert_yaxis(); ax.grid(True, axis="x", which="both", alpha=0.3)
ax.set_xlabel("measured tokens/s per GPU ÷ roofline ceiling (1 = the floor reached; bar = median)")
ax.set_title("published serving results against the planner's ceiling", fontsize=10)
plt.show()

# %% [markdown]
# The check: a real system can never beat a floor, so every ratio must be
# below 1 (if one were above, a catalog number or a count would be wrong), and
# the published figures in the table are the sources' own (written here, not
# read from the file):

# %%
assert len(rows) >= 30 and all(0.02 < r.ratio < 1 for r in rows)
assert by["deepseek-day6-decode"].measured_tokens_per_s_per_chip == 14_800 / 8      # 14.8k per H800 node
assert by["deepseek-day6-prefill"].measured_tokens_per_s_per_chip == round(73_700 * (1 - 0.563) / 8, 1)  # 73.7k per node, 56.3% cache hits not recomputed
assert by["sglang-h100-decode"].measured_tokens_per_s_per_chip == 22_282 / 8        # 22,282 per H100 node (default run)
assert by["sglang-gb200-decode-fp8"].measured_tokens_per_s_per_chip == 7_583        # per GB200 GPU
assert by["mlperf41-llama2-70b-nvidia-h200x8"].measured_tokens_per_s_per_chip == round(31_302.7 / 8, 2)  # NVIDIA, 8 H200
med = {g: float(np.median([r.ratio for r in rs])) for g, rs in regimes.items()}
print(f"dense rows reach {med['dense']:.0%} of the ceiling at the median, MoE rows {med['MoE']:.0%}, prefill "
      f"{med['prefill']:.0%}, one user at a time {med['batch 1']:.0%}")

# %% [markdown]
# **Reading the gap.** Real engines reach a fraction of the roofline ceiling
# (the medians just printed), and the fraction depends on the regime:
#
# * **Dense models at a large batch land closest.** Nothing crosses a slow
#   network, the batch is large, and the remaining gap is kernel efficiency
#   (the GEMMs run at 60–80 % of peak), compute and memory traffic that do not
#   fully overlap, tensor-parallel all-reduces, and sampling and scheduling
#   between steps.
# * **MoE models sit lower.** Each MoE layer ends in a dispatch and a combine
#   all-to-all (chapter 5) that the floor does not count; routers are uneven,
#   so the busiest GPU sets the pace (EPLB and redundant experts only narrow
#   it); attention is often data-parallel, so every GPU reads the replicated
#   weights every step; and many small expert GEMMs run further from peak
#   than one large dense one.
# * **Prefill** pays the all-to-all for thousands of tokens a step; MLA's
#   attention runs at bf16 while the ceiling prices every FLOP at fp8 (or fp4).
#   DeepSeek's published prefill rate counts prompt tokens served from its disk
#   cache (56.3 %); the row holds only the 43.7 % it computed.
# * **One user at a time sits lowest.** At batch 1 a step reads every weight
#   for one token, so the ceiling is a few milliseconds; what a real step adds
#   — a kernel launch or two per operation, small all-reduces whose latency is
#   their whole cost, a sampling step — is fixed per layer and dominates.
#
# So the roofline is a bound that holds, with a gap whose size is itself
# informative: small where nothing but arithmetic and HBM is involved, large
# where communication, load balance and fixed per-layer costs are. Chapter 12
# charges those costs one at a time, predicts every row, and reports how close
# it lands.

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Sizing: which chips, and how many, for N users
#
# A capacity planner asks the question the other way round: *Llama-3.1-70B for
# 500 users at 30 ms a token, 2,000 tokens in and 500 out: which chips, how many,
# placed how?* `sizing.size` answers it in three steps, all on the course's one
# step model. For every chip with a known rental price and every placement of one
# replica (tensor parallelism inside the scale-up domain, expert parallelism for
# a mixture of experts, pipeline stages when one domain cannot hold the weights),
# it finds the largest batch whose *predicted* time per token (chapter 12's
# expected measured rate, not this chapter's ceiling) meets the target while new
# prompts share the steps; that batch is how many users a replica serves, and
# the users divided by it, rounded up, is the number of replicas. The cheapest
# answer is then run in the engine simulator with 500 clients, each sending its
# next request when the last one ends, and gets another replica if the simulated
# engine misses a target. Prices are public on-demand list prices from several
# clouds, with their sources (`data/chip_prices.toml`): a comparison of list
# prices, not of what a reserved or negotiated contract pays.

# %%
from llmmath import sizing

sz = sizing.size("llama-3.1-70b", 500, max_tpot_s=0.030, input_tokens=2000, output_tokens=500)
print(sz.table())

# %% [markdown]
# The same from a shell: `python -m llmmath size --model llama-3.1-70b --users 500
# --tpot-ms 30 --input-tokens 2000 --output-tokens 500` (add `--ttft-ms`, `--chip`,
# `--usd-per-chip-hour` for your own prices, `--json`). Two checks that need no
# model of an engine: no replica serves more users than its HBM, less the
# weights, holds caches for at the mean context of 2,250 tokens
# ($2 \cdot 80 \cdot 8 \cdot 128 \cdot 2 = 327{,}680$ bytes a token), and no step is
# faster than reading the 141 GB of bf16 weights and those caches once.

# %%
best = sz.best
kv_token = 2 * 80 * 8 * 128 * 2                       # Llama-3.1-70B, bf16 KV (config.json)
weights = 70_553_706_496 * 2
for c in sz.ranked:
    hbm = hardware.get(c.chip).hbm_bytes * c.chips_per_replica
    assert c.replicas * c.batch_per_replica >= 500
    assert c.batch_per_replica <= (hbm - weights) / (2250 * kv_token), c
    floor_s = (weights + c.batch_per_replica * 2250 * kv_token) / (hardware.get(c.chip).hbm_bytes_per_s * c.chips_per_replica)
    assert floor_s <= c.tpot_s <= 0.030 * 1.0001, c
assert best is not None and sz.load.itl_s <= 0.030 * 1.0001
print(f"cheapest: {best.n_chips} x {best.chip} ({best.placement}), ${best.usd_per_hour:,.0f} an hour; "
      f"the engine's inter-token latency with 500 clients {sz.load.itl_s * 1e3:.1f} ms; binds: {sz.binding()}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# | question | the plan's answer (a floor or ceiling) |
# |---|---|
# | does it fit? | weights per chip + the batch's KV cache against the memory an engine gives them, per placement |
# | how many users? | max batch at the context; max context at a batch |
# | how fast? | step time, tokens/s per user and per chip, at the balance batch and yours; time to first token |
# | at what cost? | chip-seconds and dollars per million output tokens at your $/chip-hour |
# | what binds? | compute, HBM bandwidth (weights or KV), or HBM capacity |
# | how far is reality? | a fraction of the ceiling that depends on the regime (the medians above; chapter 12 predicts it) |
# | which chips, how many? | `sizing.size`: every placement on every priced chip at the predicted rate, the cheapest checked in the engine |
#
# Exercises: `exercises/11_plan_a_deployment_exercises.py`.

# %% [markdown]
# **Read next.** [Chapter 12](12_serving_for_real.py) explains the gap this chapter measured
# between the roofline and real engines, term by term, and simulates an engine
# under load. Outside reading: the vLLM documentation's pages on memory
# (`gpu_memory_utilization`) and parallelism ([docs.vllm.ai](https://docs.vllm.ai/)), and NVIDIA's
# TensorRT-LLM performance overview, for the engines whose numbers fill the ledger.
