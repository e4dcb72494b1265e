# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 11 — Exercises: plan a deployment
# *Generated from `solutions/11_plan_a_deployment_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
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
answer = ...  # bytes per token
ok = check_answer("11.1", answer)

# %% [markdown]
# ### Problem 2 — how many sequences fit
# Llama 3.1 8B (8,030,261,248 parameters; KV 131,072 bytes per token in bf16)
# on one H200 (141 GB) at 32,768 tokens of context, everything in bf16, all of
# the datasheet's HBM given to weights and KV (the roofline's view). What is
# the largest batch whose KV cache fits beside the weights?

# %%
answer = ...  # sequences (a whole number)
ok = check_answer("11.2", answer)

# %% [markdown]
# ### Problem 3 — a cache with sliding windows
# gpt-oss-120b has 36 layers; 18 attend to the last 128 tokens only, 18 to
# everything. Each cached position takes 2,048 bytes per layer (bf16). How many
# bytes does one sequence hold at 65,536 tokens of context?

# %%
answer = ...  # bytes
ok = check_answer("11.3", answer)

# %% [markdown]
# ### Problem 4 — weights in NVFP4
# NVFP4 stores 16 four-bit values with one 8-bit scale: how many bytes do Llama
# 3.1 70B's 70,553,706,496 parameters take?

# %%
answer = ...  # bytes
ok = check_answer("11.4", answer)

# %% [markdown]
# ### Problem 5 — the floor of one step at batch 1
# Llama 3.1 8B in bf16 on one H100 (3.35 TB/s), one sequence, negligible
# context. Every weight but the input-embedding table (128,256 × 4,096, only one
# row of it is looked up) is read once. What is the step time floor, in seconds?

# %%
answer = ...  # seconds
ok = check_answer("11.5", answer)

# %% [markdown]
# ### Problem 6 — dollars per million tokens
# A deployment of 8 GPUs at $2.00 per GPU-hour runs decode steps of 20 ms with
# 64 sequences in flight. What does a million output tokens cost, in dollars?

# %%
answer = ...  # dollars
ok = check_answer("11.6", answer)

# %% [markdown]
# ### Problem 7 — how close did MLPerf get?
# In MLPerf Inference v4.1, Dell's eight-H200 server ran Llama 2 70B offline at
# 32,124 output tokens/s. The planner's ceiling for that run (fp8, about 300
# prompt and 292 output tokens per request, prefill on the same GPUs) is
# `planner.measured_vs_floor()`'s `mlperf41-llama2-70b-h200x8` entry. What
# fraction of the ceiling did the run reach?

# %%
answer = ...  # fraction (0 to 1)
ok = check_answer("11.7", answer)

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
answer = ...  # tokens
ok = check_answer("11.8", answer)

