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
# Three problems on the terms between the ceiling and a measured rate: a weight
# read at the bandwidth a real chip sustains, the expert all-to-all a token
# pays over the NIC, and what a draft head buys. Work each by hand, put your
# number in `answer`, run the cell.

# %%
from llmmath import check_answer, planner, speculative

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
# 2 × 37e9 / 1,484e12 = 50 µs at 0.75 of fp8 peak). This is why DeepSeek and
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
