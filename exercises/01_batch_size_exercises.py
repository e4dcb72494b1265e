# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 1 — Exercises: batch size
# *Generated from `solutions/01_batch_size_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
#
# Seven problems on the decode roofline. Work each by hand first (a calculator
# and the datasheet numbers given are enough), then put your number in `answer`
# and run the cell: `check_answer` says right, or how far off you are and
# whether it looks like a units slip. It never shows the answer.
#
# Datasheet numbers you may need (dense, per chip): H100 SXM 989.5 TFLOP/s bf16,
# 3.35 TB/s, 80 GB; H200 989.5 TFLOP/s bf16, 4.8 TB/s, 141 GB; Cloud TPU v6e
# 918 TFLOP/s bf16, 1.638 TB/s. Model facts come from the configs (chapter 1
# prints them; `llmmath.models.get(name)` has them).

# %%
from llmmath import check_answer, models, hardware, serving

# %% [markdown]
# ### Problem 1 — the H200's balance ratio
# An H200 has the same compute as an H100 but 4.8 TB/s of HBM3e. What is its
# balance ratio $R = F b_w / (2W)$ for bf16 weights multiplied at bf16?
# (Dimensionless; equal to $F/W$ in FLOP/byte for bf16.)

# %%
answer = ...  # your number
ok = check_answer("01.1", answer)

# %% [markdown]
# ### Problem 2 — a latency floor
# Llama-3.1-8B in bf16 on one H200: how long, at least, does one decode step
# take? Count every weight except the untied input-embedding table
# (vocabulary 128,256 × d_model 4,096), of which a step reads only a few rows.
# The model has 8,030,261,248 parameters. Answer in seconds.

# %%
answer = ...  # seconds
ok = check_answer("01.2", answer)

# %% [markdown]
# ### Problem 3 — Mixtral's balance batch
# Mixtral-8x7B has 46,702,792,704 parameters, of which 12,879,925,248 are active
# per token (2 of 8 experts); its untied embedding table is 32,000 × 4,096. At
# large batch every expert is read, but each token multiplies only its two. On an
# H100 at bf16 and context 0, what batch balances compute and memory?
# Use $B^* = R \cdot P_\text{read} / N_\text{mm}$, where both counts leave out the
# input-embedding table.

# %%
answer = ...  # sequences
ok = check_answer("01.3", answer)

# %% [markdown]
# ### Problem 4 — throughput below the balance batch
# Llama-3.1-70B (70,553,706,496 parameters; untied embedding 128,256 × 8,192)
# in bf16 on 2 H100s, batch 64, context 0. How many tokens per second does the
# pair produce in total?

# %%
answer = ...  # tokens per second
ok = check_answer("01.4", answer)

# %% [markdown]
# ### Problem 5 — the unbatched penalty on a TPU
# On a Cloud TPU v6e (918 TFLOP/s bf16, 1.638 TB/s), by what factor does
# serving one sequence at a time raise the cost per token of a dense bf16 model
# at short context, compared with a large batch?

# %%
answer = ...  # times
ok = check_answer("01.5", answer)

# %% [markdown]
# ### Problem 6 — how many sequences fit
# Llama-3.1-70B in bf16 (weights: 141,107,412,992 bytes) on 8 H100s (80 GB
# each), every sequence at 8,192 tokens of context. The KV cache holds, per token,
# K and V for 80 layers × 8 KV heads × 128 dimensions at 2 bytes. What is the
# largest batch that fits? (A whole number.)

# %%
answer = ...  # sequences
ok = check_answer("01.6", answer)

# %% [markdown]
# ### Problem 7 — experts touched by a small batch
# DeepSeek-V3 routes each token to 8 of 256 experts in every MoE layer. With
# uniform routing, what fraction of the routed experts does a batch of 32 tokens
# read in one layer?

# %%
answer = ...  # fraction
ok = check_answer("01.7", answer)

