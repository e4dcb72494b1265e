# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 12 — Exercises: serving for real
# *Generated from `solutions/12_serving_for_real_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
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
answer = ...  # milliseconds
ok = check_answer("12.1", answer)

# %% [markdown]
# ### Problem 2 — a token's expert all-to-all over the NIC
# DeepSeek-V3 served with expert parallelism over 144 GPUs (18 nodes of 8), so
# almost all traffic leaves the node through each GPU's 400 Gb/s NIC. In each of
# its 58 MoE layers a token is sent to its 8 experts (7,168 values in fp8, 1 byte
# each) and their results come back (bf16, 2 bytes), except the 1/144 of experts
# on its own GPU. The all-to-all reaches 0.82 of the NIC's rate. How many
# microseconds of all-to-all does one token cost its GPU per forward pass?

# %%
answer = ...  # microseconds
ok = check_answer("12.2", answer)

# %% [markdown]
# ### Problem 3 — what a draft head buys
# A draft proposes 2 tokens per step; each is kept with probability 0.8, and a
# token is only kept if the one before it was. The verify step keeps the
# accepted prefix and adds one token of its own. While the step is memory-bound
# and the draft is free, how many times faster do tokens come?

# %%
answer = ...  # speed-up (x)
ok = check_answer("12.3", answer)

# %% [markdown]
# ### Problem 4 — the fixed cost of a layer
# vLLM serves the model of Problem 1 to one user at 133 tokens/s on one H100.
# Take your weight read from Problem 1 and about 0.02 ms of arithmetic; the
# rest of each step is a fixed cost of each of the model's 32 layers (kernel
# launches and the gaps between them). How many microseconds a layer?

# %%
answer = ...  # microseconds per layer
ok = check_answer("12.4", answer)

# %% [markdown]
# ### Problem 5 — the busiest rank
# TensorRT-LLM measured DeepSeek-R1 decoding at EP32, 8 experts a rank: the
# busiest rank received 2.564 times the mean tokens. Take the experts' loads as
# independent, so a rank's spread relative to its mean goes as one over the
# square root of its experts, and the busiest of n ranks sits z(n) spreads
# above the mean, with z(8) = 1.424 and z(32) = 2.070. At EP8 (32 experts a
# rank), what is the busiest rank's load over the mean?

# %%
answer = ...  # busiest / mean (x)
ok = check_answer("12.5", answer)

# %% [markdown]
# ### Problem 6 — what four times the peak buys
# A B200's datasheet gives 2.25 PFLOP/s dense in bf16 and 9 PFLOP/s in NVFP4.
# At 4,096 tokens a step, TensorRT-LLM's GEMMs reach 0.655 of the bf16 peak
# and 0.384 of the NVFP4 one (NVIDIA's measured tables, chapter 12). How many
# times faster are a compute-bound step's matmuls in NVFP4 than in bf16?

# %%
answer = ...  # speed-up (x)
ok = check_answer("12.6", answer)

# %% [markdown]
# ### Problem 7 — a closed loop past saturation
# A benchmark runs N clients in a closed loop against Llama-3.3-70B on two H100s: each client sends its next request
# (5,000 tokens in, 500 out) the moment its last one finishes. Past 100 clients the deployment's output stays at
# 920 tokens/s whatever N is. By how many seconds does the mean time to first token grow for each 50 more clients?

# %%
answer = ...  # seconds per 50 clients
ok = check_answer("12.7", answer)

