# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 12 — Exercises: serving for real
#
# Seven problems on the terms between the ceiling and a measured rate: a weight
# read at the bandwidth a real chip sustains, the expert all-to-all a token
# pays over the NIC, what a draft head buys, the fixed cost of a layer that a
# measured batch-1 rate reveals, how unevenly a router loads the ranks, what a
# low-precision peak buys, and how long users wait in a closed loop.
# Work each by hand, put your number in `answer`, run the cell.

# %%
from llmmath import check_answer, planner, predict, speculative

# %% [markdown]
# ### Problem 1 — a batch-1 step at the sustained bandwidth
# Llama-3.1-8B in bf16 on one H100 (3.35 TB/s), batch 1, no context. It has
# 8,030,261,248 parameters, of which the input embedding (128,256 × 4,096) is
# looked up, not read. A real H100 streams HBM at 0.91 of its datasheet
# bandwidth. How long, in milliseconds, does one step's weight read take?

# %%
# BEGIN SOLUTION stub: answer = ...  # milliseconds
answer = (8_030_261_248 - 128_256 * 4096 + 4096) * 2 / (0.91 * 3.35e12) * 1e3
# END SOLUTION
ok = check_answer("12.1", answer)
# BEGIN SOLUTION
assert ok
p = planner.predict("llama-3.1-8b", "h100-sxm", 1, input_tokens=1, output_tokens=1, batch=1, context=1)
assert abs(p.terms["memory_s"] * 1e3 / answer - 1) < 1e-3
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The read is every weight but the input table, plus the one
# row the token looks up: 7,504,928,768 parameters, 15.01 GB in bf16. At
# 0.91 × 3.35 = 3.05 TB/s that is 4.92 ms (4.48 ms at the datasheet's rate).

# %% [markdown]
# ### Problem 2 — a token's expert all-to-all over the NIC
# DeepSeek-V3 served with expert parallelism over 144 GPUs (18 nodes of 8), so
# almost all traffic leaves the node through each GPU's 400 Gb/s NIC. In each of
# its 58 MoE layers a token is sent to its 8 experts (7,168 values in fp8, 1 byte
# each) and their results come back (bf16, 2 bytes), except the 1/144 of experts
# on its own GPU. The all-to-all reaches 0.82 of the NIC's rate. How many
# microseconds of all-to-all does one token cost its GPU per forward pass?

# %%
# BEGIN SOLUTION stub: answer = ...  # microseconds
answer = 58 * 8 * 7168 * (1 + 2) * 143 / 144 / (0.82 * 400e9 / 8) * 1e6
# END SOLUTION
ok = check_answer("12.2", answer)
# BEGIN SOLUTION
assert ok
from llmmath import network  # noqa: E402
assert abs(58 * float(network.moe_all_to_all_bytes_per_token(7168, 8, 144)) / (0.82 * 50e9) * 1e6 / answer - 1) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Per layer 8 × 7,168 × 3 bytes × 143/144 = 170,827 bytes;
# over 58 layers 9.91 MB; at 0.82 × 50 GB/s = 41 GB/s that is 242 µs per token,
# more than its 37B active parameters' arithmetic takes on an H800 (about
# 2 × 37e9 / (0.5 × 1,979e12) = 75 µs at about half the fp8 peak, the share
# fp8 GEMMs reach on an H100 in chapter 12's measured tables). This is why DeepSeek and
# SGLang overlap two micro-batches: one computes while the other communicates.

# %% [markdown]
# ### Problem 3 — what a draft head buys
# A draft proposes 2 tokens per step; each is kept with probability 0.8, and a
# token is only kept if the one before it was. The verify step keeps the
# accepted prefix and adds one token of its own. While the step is memory-bound
# and the draft is free, how many times faster do tokens come?

# %%
# BEGIN SOLUTION stub: answer = ...  # speed-up (x)
answer = 1 + 0.8 + 0.8**2
# END SOLUTION
ok = check_answer("12.3", answer)
# BEGIN SOLUTION
assert ok
assert abs(speculative.expected_tokens_per_step(2, 0.8) - answer) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The verify step yields its own token always, the first
# draft with probability 0.8 and the second with 0.8 × 0.8: E = 1 + 0.8 + 0.64 =
# 2.44 tokens per step. A memory-bound step of 3 tokens per sequence costs
# about what a step of 1 does, so tokens come 2.44× faster; past the balance
# batch the same step costs 3× and the gain becomes 2.44 / 3 = 0.81.

# %% [markdown]
# ### Problem 4 — the fixed cost of a layer
# vLLM serves the model of Problem 1 to one user at 133 tokens/s on one H100.
# Take your weight read from Problem 1 and about 0.02 ms of arithmetic; the
# rest of each step is a fixed cost of each of the model's 32 layers (kernel
# launches and the gaps between them). How many microseconds a layer?

# %%
# BEGIN SOLUTION stub: answer = ...  # microseconds per layer
answer = (1 / 133 - 4.92369e-3 - 0.02e-3) / 32 * 1e6
# END SOLUTION
ok = check_answer("12.4", answer)
# BEGIN SOLUTION
assert ok
# the constant the library uses: a time per kernel, 9 kernels a Llama layer
assert abs(predict.calibrated()["per_kernel_s"] * predict.kernels_per_layer("llama-3.1-8b")[0] * 1e6 / answer - 1) < 0.01
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** A token every 1/133 s = 7.52 ms; the weights take 4.92 ms
# and the arithmetic 0.02 ms, leaving 2.58 ms, or 80 µs for each of 32 layers
# — about 9 µs for each of the nine kernels vLLM launches per Llama layer.
# That is a third of the step: at batch 1 a small model is bound as much by
# how many kernels it launches as by its bytes, which is why engines capture
# whole steps in CUDA graphs and fuse kernels.

# %% [markdown]
# ### Problem 5 — the busiest rank
# TensorRT-LLM measured DeepSeek-R1 decoding at EP32, 8 experts a rank: the
# busiest rank received 2.564 times the mean tokens. Take the experts' loads as
# independent, so a rank's spread relative to its mean goes as one over the
# square root of its experts, and the busiest of n ranks sits z(n) spreads
# above the mean, with z(8) = 1.424 and z(32) = 2.070. At EP8 (32 experts a
# rank), what is the busiest rank's load over the mean?

# %%
# BEGIN SOLUTION stub: answer = ...  # busiest / mean (x)
answer = 1 + (2.564 - 1) * 1.424 / 2.070 * (8 / 32) ** 0.5
# END SOLUTION
ok = check_answer("12.5", answer)
# BEGIN SOLUTION
assert ok
assert abs(predict.routing_imbalance("deepseek-v3", 8) / answer - 1) < 1e-3
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The excess over the mean, 1.564 at EP32, scales by
# z(8)/z(32) = 0.688 (fewer ranks, so the busiest is less extreme) and by
# sqrt(8/32) = 0.5 (four times the experts a rank average out): 1 + 1.564 ×
# 0.688 × 0.5 = 1.54. Every rank waits for the busiest, so the routed-expert
# GEMMs of an EP8 step take about 1.5× their even-load time — unless a load
# balancer (EPLB) replicates the hot experts, which TensorRT-LLM measured
# bringing EP32's 2.56 down to 1.11.

# %% [markdown]
# ### Problem 6 — what four times the peak buys
# A B200's datasheet gives 2.25 PFLOP/s dense in bf16 and 9 PFLOP/s in NVFP4.
# At 4,096 tokens a step, TensorRT-LLM's GEMMs reach 0.655 of the bf16 peak
# and 0.384 of the NVFP4 one (NVIDIA's measured tables, chapter 12). How many
# times faster are a compute-bound step's matmuls in NVFP4 than in bf16?

# %%
# BEGIN SOLUTION stub: answer = ...  # speed-up (x)
answer = 9.0 / 2.25 * 0.384 / 0.655
# END SOLUTION
ok = check_answer("12.6", answer)
# BEGIN SOLUTION
assert ok
assert abs(4 * predict.matmul_fraction("b200", "fp4") / predict.matmul_fraction("b200") / answer - 1) < 0.01
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The peaks differ by 9 / 2.25 = 4, but the formats do not
# reach the same share of them: 0.384 / 0.655 = 0.59. So NVFP4's matmuls run
# 4 × 0.59 = 2.3 times as fast as bf16's, not 4. A compute-bound FP4
# deployment gains a little over twice; a memory-bound one gains instead from
# weights 3.6 times smaller (0.5625 bytes a parameter with its scales, against
# 2). Ratios on a datasheet are ratios of peaks; what a deployment gets is the
# ratio of what its kernels reach.

# %% [markdown]
# ### Problem 7 — a closed loop past saturation
# A benchmark runs N clients in a closed loop against Llama-3.3-70B on two H100s: each client sends its next request
# (5,000 tokens in, 500 out) the moment its last one finishes. Past 100 clients the deployment's output stays at
# 920 tokens/s whatever N is. By how many seconds does the mean time to first token grow for each 50 more clients?

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds per 50 clients
answer = 50 * 500 / 920
# END SOLUTION
ok = check_answer("12.7", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Little's law: clients = completion rate x time in the system. The rate is fixed at 920 / 500 =
# 1.84 requests/s, so each extra client adds 1 / 1.84 = 0.54 s to every client's time in the system, all of it
# spent waiting before the first token: 50 clients add 27.2 s. NIM's published curve for this deployment grows by
# 26.9 s from 150 to 200 clients and by 26.9 s again to 250 (chapter 12's curve section checks the same law on the
# simulation).
