# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 6 — Exercises: pipelining
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
# BEGIN SOLUTION stub: answer = ...  # fraction
answer = (8 - 1) / (32 + 8 - 1)
# END SOLUTION
ok = check_answer("06.1", answer)
# BEGIN SOLUTION
assert ok
assert abs(parallelism.bubble_fraction(8, 32) - answer) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $(p-1)/(m+p-1) = 7/39 = 17.9\%$, the same for GPipe and 1F1B.

# %% [markdown]
# ### Problem 2 — a pipeline boundary between GB200 racks
# Kimi K2 has DeepSeek-V3's shape where it matters here: $d = 7168$, 8 routed
# experts per token. It is pipelined across GB200 NVL72 racks (NVLink 900 GB/s,
# NIC 50 GB/s per GPU, per direction) with 2 MoE layers per stage and EP64.
# Dispatch fp8, combine bf16, boundary activations bf16. What is the ratio of
# the in-stage all-to-all time per token to the boundary time per token?

# %%
# BEGIN SOLUTION stub: answer = ...  # ratio
inside_bytes = 2 * 8 * 7168 * (1 + 2) * 63 / 64
answer = (inside_bytes / 900e9) / (7168 * 2 / 50e9)
# END SOLUTION
ok = check_answer("06.2", answer)
# BEGIN SOLUTION
assert ok
assert abs(parallelism.boundary_traffic_ratio("kimi-k2", 2, 64, 900e9, 50e9) / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** In-stage: $2 \cdot 8 \cdot 7168 \cdot 3 \cdot 63/64 = 338{,}688$ bytes
# at 900 GB/s = 376 ns. Boundary: 14,336 bytes at 50 GB/s = 287 ns. Ratio 1.31 > 1: the
# boundary is the less busy link, as claim 20 says — with one layer per stage it would be 0.66.

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
# BEGIN SOLUTION stub: answer = ...  # bytes
expert = 3 * 7168 * 2048
first = 3 * 583_483_392 + 28 * (232_997_120 + 256 * expert / 32) + 129_280 * 7168
second = 30 * (232_997_120 + 256 * expert / 32) + 7168 + 129_280 * 7168
answer = max(first, second) * 1          # fp8: one byte per parameter
# END SOLUTION
ok = check_answer("06.3", answer)
# BEGIN SOLUTION
assert ok
assert abs(parallelism.memory_per_gpu("deepseek-v3", ep=32, pp=2, weight_dtype="fp8").weight_bytes / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The first stage: 1.75 GB of dense layers, 28 × (0.233 +
# 8 × 0.044) GB = 16.4 GB of MoE layers, 0.93 GB of embedding: 19.07 GB per GPU.
# The second: 30 MoE layers and the head, 18.49 GB. An even split of the 671B
# over two stages would say 18.78 GB for both: 1.5 % short for the GPU that
# must fit. The replicated part (attention, shared experts, dense layers,
# embeddings) is almost half of it: widening EP alone cannot shrink it.

# %% [markdown]
# ### Problem 4 — KV cache per GPU under pipelining
# Llama-3.1-70B (KV: 327,680 bytes per token in bf16) with TP8 and PP4, decode
# micro-batches of 16 sequences at 32,768 tokens, 4 micro-batches in flight. How
# many bytes of KV cache does each GPU hold?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = (4 * 16) * 32768 * 327680 / (4 * 8)
# END SOLUTION
ok = check_answer("06.4", answer)
# BEGIN SOLUTION
assert ok
assert abs(parallelism.memory_per_gpu("llama-3.1-70b", tp=8, pp=4, batch=16, context=32768).kv_bytes / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $(P b) L \beta / (P \cdot \text{TP}) = 16 \cdot 32768 \cdot 327680 / 8 = 21.5$ GB —
# exactly what PP1 would need. The four stages cancel (claim 25).

# %% [markdown]
# ### Problem 5 — latency of a pipelined decode step
# Unpipelined, a decode step takes 20 ms. The model is pipelined over 4 racks,
# with 4 micro-batches in flight; each rack-to-rack hop takes 5 µs. What is the
# per-token latency, in seconds?

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds
answer = 0.020 + 4 * 5e-6
# END SOLUTION
ok = check_answer("06.5", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Four stages of 5 ms each, plus 4 hops (the last back to
# stage 0): 20.02 ms. The 0.1% added is why claim 24 calls pipelining latency-neutral.

# %% [markdown]
# ### Problem 6 — enough micro-batches
# A training pipeline has 8 stages. What is the smallest number of micro-batches
# that keeps the bubble at or below 5%?

# %%
# BEGIN SOLUTION stub: answer = ...  # micro-batches
import math
answer = math.ceil((8 - 1) / 0.05 - (8 - 1))
# END SOLUTION
ok = check_answer("06.6", answer)
# BEGIN SOLUTION
assert ok
assert parallelism.bubble_fraction(8, answer) <= 0.05 < parallelism.bubble_fraction(8, answer - 1)
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $7/(m+7) \le 0.05 \Rightarrow m \ge 133$. With a global batch of,
# say, 1024 sequences that is micro-batches of under 8: the bubble pushes toward
# more, smaller micro-batches, and small micro-batches run matmuls below the
# balance point — one reason pipelining is "a massive hassle".

# %% [markdown]
# ### Problem 7 — ZB-V's bubble
# A training pipeline of 8 GPUs runs ZB-V (two chunks a GPU, in a V) on 32
# micro-batches. On each GPU, one micro-batch's forward, input gradient and
# weight gradient each take 1 ms (each chunk half of it). Sends are free. What
# fraction of each GPU's step is idle?

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction of the step
p, m = 8, 32
idle_ms = (p - 1) * 1.0 / 2          # the last GPU waits for the first forward to come down p - 1 half-stage chunks
work_ms = m * (1.0 + 1.0 + 1.0)
answer = idle_ms / (work_ms + idle_ms)
# END SOLUTION
ok = check_answer("06.7", answer)
# BEGIN SOLUTION
assert ok
assert abs(answer - parallelism.zbv_schedule(8, 32)["bubble_fraction"]) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** With 32 ≥ 2·8 − 1 micro-batches the V runs without a gap
# once it is full; the last GPU waits for the first micro-batch's forward to pass
# the 7 chunks above it, each half a stage: 3.5 ms, and then never idles. Each GPU
# does 32 × 3 = 96 ms of work in a step as long as the last GPU's, 99.5 ms, so every
# GPU is idle 3.5 ms of it: 3.5/99.5 = 3.5%,
# against 7/39 = 18% under 1F1B and 7/103 = 6.8% under ZB-H1 (chapter 10: weight
# gradients fill only the drain). The price: each
# micro-batch crosses every GPU boundary twice, and with fewer than 2p − 1
# micro-batches the V never fills.
