# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 11 — Exercises: plan a deployment
#
# Eight problems on reading a config, fitting a batch, counting a windowed
# cache, odd precisions, a step's floor, a price per million tokens, how far
# a published result sits from the ceiling, and the KV cache an engine gives. Work each by hand, put your number
# in `answer`, run the cell.

# %%
from llmmath import check_answer, models, planner

# %% [markdown]
# ### Problem 1 — KV bytes per token from a config
# Qwen3-8B's config: `num_hidden_layers` 36, `num_key_value_heads` 8,
# `head_dim` 128. How many bytes of KV cache does one token of context take,
# all layers, in bf16?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes per token
answer = 2 * 36 * 8 * 128 * 2
# END SOLUTION
ok = check_answer("11.1", answer)
# BEGIN SOLUTION
assert ok
cfg = {"model_type": "qwen3", "hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
       "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936}
assert models.from_hf_config(cfg, name="qwen3-8b").kv_bytes_per_token() == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** K and V (2) × 36 layers × 8 KV heads × 128 × 2 bytes =
# 147,456 bytes, 147 kB per token: a 32k-token conversation holds 4.8 GB.

# %% [markdown]
# ### Problem 2 — how many sequences fit
# Llama 3.1 8B (8,030,261,248 parameters; KV 131,072 bytes per token in bf16)
# on one H200 (141 GB) at 32,768 tokens of context, everything in bf16, all of
# the datasheet's HBM given to weights and KV (the roofline's view). What is
# the largest batch whose KV cache fits beside the weights?

# %%
# BEGIN SOLUTION stub: answer = ...  # sequences (a whole number)
answer = (141e9 - 2 * 8_030_261_248) // (32768 * 131072)
# END SOLUTION
ok = check_answer("11.2", answer)
# BEGIN SOLUTION
assert ok
assert planner.plan("llama-3.1-8b", "h200", 1, context=32768, usable_hbm_fraction=1.0).max_batch == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Free HBM: 141 − 16.06 = 124.9 GB; one sequence holds
# 32,768 × 131,072 = 4.29 GB; 29 sequences fit (29.09). An engine gives its
# cache less: vLLM takes 0.9 of the 150.1e9 bytes CUDA reports, less a
# profiling pass's activations and the memory outside torch, and holds 27
# (`planner.plan(...)` with its default memory view).

# %% [markdown]
# ### Problem 3 — a cache with sliding windows
# gpt-oss-120b has 36 layers; 18 attend to the last 128 tokens only, 18 to
# everything. Each cached position takes 2,048 bytes per layer (bf16). How many
# bytes does one sequence hold at 65,536 tokens of context?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = 18 * 65536 * 2048 + 18 * 128 * 2048
# END SOLUTION
ok = check_answer("11.3", answer)
# BEGIN SOLUTION
assert ok
assert models.get("gpt-oss-120b").kv_bytes_per_sequence(65536) == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Full layers: 18 × 65,536 × 2,048 = 2.416 GB; windowed
# layers: 18 × 128 × 2,048 = 4.7 MB. Total 2.421 GB — half of the 4.83 GB that
# counting all 36 layers in full would give.

# %% [markdown]
# ### Problem 4 — weights in NVFP4
# NVFP4 stores 16 four-bit values with one 8-bit scale: how many bytes do Llama
# 3.1 70B's 70,553,706,496 parameters take?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = 70_553_706_496 * (16 * 4 + 8) / 16 / 8
# END SOLUTION
ok = check_answer("11.4", answer)
# BEGIN SOLUTION
assert ok
assert models.get("llama-3.1-70b").weight_bytes(0.5625) == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** (64 + 8) bits per 16 values = 4.5 bits = 0.5625 bytes per
# parameter: 39.7 GB, which fits one H100 with 40 GB to spare for the KV cache.

# %% [markdown]
# ### Problem 5 — the floor of one step at batch 1
# Llama 3.1 8B in bf16 on one H100 (3.35 TB/s), one sequence, negligible
# context. Every weight but the input-embedding table (128,256 × 4,096, only one
# row of it is looked up) is read once. What is the step time floor, in seconds?

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds
answer = (8_030_261_248 - 128256 * 4096 + 4096) * 2 / 3.35e12
# END SOLUTION
ok = check_answer("11.5", answer)
# BEGIN SOLUTION
assert ok
assert abs(planner.plan("llama-3.1-8b", "h100-sxm", 1, context=1, batch=1).at_batch.step_time_s / answer - 1) < 1e-3
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** 7.505 G weights × 2 bytes = 15.0 GB at 3.35 TB/s: 4.48 ms,
# at most 223 tokens/s for that one user. (The one cached position adds 131 kB:
# 0.04 µs.)

# %% [markdown]
# ### Problem 6 — dollars per million tokens
# A deployment of 8 GPUs at $2.00 per GPU-hour runs decode steps of 20 ms with
# 64 sequences in flight. What does a million output tokens cost, in dollars?

# %%
# BEGIN SOLUTION stub: answer = ...  # dollars
answer = 8 * 0.020 / 64 * 1e6 * 2.00 / 3600
# END SOLUTION
ok = check_answer("11.6", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Each step makes 64 tokens on 8 GPUs for 20 ms: 2.5 ms of
# GPU time per token, 2,500 GPU-seconds per million tokens = 0.694 GPU-hours =
# $1.39.

# %% [markdown]
# ### Problem 7 — how close did MLPerf get?
# In MLPerf Inference v4.1, Dell's eight-H200 server ran Llama 2 70B offline at
# 32,124 output tokens/s. The planner's ceiling for that run (fp8, about 300
# prompt and 292 output tokens per request, prefill on the same GPUs) is
# `planner.measured_vs_floor()`'s `mlperf41-llama2-70b-h200x8` entry. What
# fraction of the ceiling did the run reach?

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction (0 to 1)
ceiling = {r.key: r for r in planner.measured_vs_floor()}["mlperf41-llama2-70b-h200x8"].ceiling_tokens_per_s_per_chip
answer = 32_124 / 8 / ceiling
# END SOLUTION
ok = check_answer("11.7", answer)
# BEGIN SOLUTION
assert ok
# by hand: fp8 compute-bound, 2 x 68.7 G FLOP per token for the 300 prompt and the 300 output tokens alike
assert abs(ceiling / (1979e12 / (2 * (68_976_648_192 - 32000 * 8192)) / 2) - 1) < 0.05
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The ceiling is about 7,060 tokens/s per GPU: at fp8 an
# H200 does 1,979 TFLOP/s, each token (prompt or output) costs 2 × 68.7 GFLOP,
# and each output token brings about one prompt token with it (300 / 292), so
# 1979e12 / 137e9 / 2.03 ≈ 7,100 (a little less with attention). The run made
# 4,016 per GPU: 57 % of the ceiling, among the closest of the dense rows in
# chapter 11's table (NVIDIA's own eight-H200 submission, 31,303, is just below).


# %% [markdown]
# ### Problem 8 — the KV cache an engine actually gives you
# vLLM serves Llama 3.1 70B in bf16 on four H100s (TP4) with its defaults:
# `gpu_memory_utilization` 0.9 of the 85,045,477,376 bytes CUDA reports per
# GPU, a profiling pass over 8,192 tokens, 0.25 GiB outside torch. The model:
# 70,553,706,496 parameters; 80 layers, d 8,192, MLP 28,672, 8 KV heads of 128.
# How many tokens of KV cache does it log ("GPU KV cache size"), in blocks of
# 16 tokens? (The activation peak is the larger of the forward pass, 8,192
# tokens × (3 d + 3 × MLP / TP) × 2 bytes, and the sampling step for vLLM's
# 1,024 dummy requests: 14 bytes for each request and each of the 128,256
# vocabulary entries, beside the forward pass's output, 8,192 × d × 2 bytes.)

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens
per_gpu = 85_045_477_376 * 0.9
forward = 8192 * (3 * 8192 + 3 * 28672 / 4) * 2
sampling = 14 * 1024 * 128_256 + 8192 * 8192 * 2
activations = max(forward, sampling)
outside_torch = 0.25 * 2**30
weights = 70_553_706_496 * 2 / 4
block = 16 * 80 * 2 * (8 // 4) * 128 * 2                 # 16 tokens, every layer, K and V, 2 KV heads a GPU
answer = (per_gpu - activations - outside_torch - weights) // block * 16
# END SOLUTION
ok = check_answer("11.8", answer)
# BEGIN SOLUTION
assert ok
assert planner.plan("llama-3.1-70b", "h100-sxm", 4, tp=4).kv_cache_tokens == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Each GPU: 0.9 × 85.05 GB = 76.54 GB; less the
# profiling pass's activation peak (the sampling step's 1.97 GB: the forward
# pass's MLP needs only 0.75 GB at TP4, while every GPU samples the whole
# vocabulary), 0.27 GB outside torch and its quarter of the weights
# (35.28 GB) leaves 39.02 GB. A token's cache on one GPU is 80 layers × K and
# V × 2 KV heads × 128 × 2 bytes = 81,920 bytes, a block of 16 is 1.31 MB:
# 29,771 blocks, 476,336 tokens: 58 whole sequences of 8k at once. Counting
# the datasheet's 80e9 bytes instead gives 12% fewer; the whole KV cache on
# every GPU instead of a quarter, four times fewer.
