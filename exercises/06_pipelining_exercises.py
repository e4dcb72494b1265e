# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 6 — Exercises: pipelining
# *Generated from `solutions/06_pipelining_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
#
# Six problems on bubbles, stage boundaries and per-GPU memory under expert,
# tensor and pipeline parallelism. Work each by hand, put your number in
# `answer`, run the cell.

# %%
from llmmath import check_answer, parallelism

# %% [markdown]
# ### Problem 1 — a training bubble
# A training pipeline has 8 stages and runs 32 micro-batches per step. What
# fraction of each stage's time is idle?

# %%
answer = ...  # fraction
ok = check_answer("06.1", answer)

# %% [markdown]
# ### Problem 2 — a pipeline boundary between GB200 racks
# Kimi K2 has DeepSeek-V3's shape where it matters here: $d = 7168$, 8 routed
# experts per token. It is pipelined across GB200 NVL72 racks (NVLink 900 GB/s,
# NIC 50 GB/s per GPU, per direction) with 2 MoE layers per stage and EP64.
# Dispatch fp8, combine bf16, boundary activations bf16. What is the ratio of
# the in-stage all-to-all time per token to the boundary time per token?

# %%
answer = ...  # ratio
ok = check_answer("06.2", answer)

# %% [markdown]
# ### Problem 3 — weights per GPU with wide EP and two stages
# DeepSeek-V3 in fp8 on EP32 × PP2 (64 GPUs). Its 61 layers split 31/30. The
# first stage holds the 3 dense layers (583,483,392 parameters each), 28 MoE
# layers and the input embedding (129,280 × 7,168); the second holds 30 MoE
# layers, the final norm (7,168) and the LM head (129,280 × 7,168). An MoE
# layer is 232,997,120 parameters replicated on every GPU of its stage
# (attention, the shared expert, the router) plus 256 routed experts of
# $3 \cdot 7168 \cdot 2048$ parameters spread over the 32 GPUs. How many bytes
# of weights must a GPU of the busier stage hold?

# %%
answer = ...  # bytes
ok = check_answer("06.3", answer)

# %% [markdown]
# ### Problem 4 — KV cache per GPU under pipelining
# Llama-3.1-70B (KV: 327,680 bytes per token in bf16) with TP8 and PP4, decode
# micro-batches of 16 sequences at 32,768 tokens, 4 micro-batches in flight. How
# many bytes of KV cache does each GPU hold?

# %%
answer = ...  # bytes
ok = check_answer("06.4", answer)

# %% [markdown]
# ### Problem 5 — latency of a pipelined decode step
# Unpipelined, a decode step takes 20 ms. The model is pipelined over 4 racks,
# with 4 micro-batches in flight; each rack-to-rack hop takes 5 µs. What is the
# per-token latency, in seconds?

# %%
answer = ...  # seconds
ok = check_answer("06.5", answer)

# %% [markdown]
# ### Problem 6 — enough micro-batches
# A training pipeline has 8 stages. What is the smallest number of micro-batches
# that keeps the bubble at or below 5%?

# %%
answer = ...  # micro-batches
ok = check_answer("06.6", answer)

# %% [markdown]
# ### Problem 7 — ZB-V's bubble
# A training pipeline of 8 GPUs runs ZB-V (two chunks a GPU, in a V) on 32
# micro-batches. On each GPU, one micro-batch's forward, input gradient and
# weight gradient each take 1 ms (each chunk half of it). Sends are free. What
# fraction of each GPU's step is idle?

# %%
answer = ...  # fraction of the step
ok = check_answer("06.7", answer)

