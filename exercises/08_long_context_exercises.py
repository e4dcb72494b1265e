# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 8 — Exercises: long context
# *Generated from `solutions/08_long_context_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
#
# Eight problems. Work each by hand, put your number in `answer`, run the cell.
# Datasheet figures: H100 989.5 TFLOP/s bf16, 3.35 TB/s; H200 141 GB; B200
# 2.25 PFLOP/s bf16, 8 TB/s; A100 2.039 TB/s (2020).

# %%
from llmmath import check_answer, serving

# %% [markdown]
# ### Problem 1 — when attention's FLOPs catch up
# Llama-3.1-8B: 32 layers, 32 query heads of dimension 128, and 7,504,924,672
# weights that multiply each token. At what context do a new token's attention
# FLOPs equal its weight FLOPs?

# %%
answer = ...  # tokens
ok = check_answer("08.1", answer)

# %% [markdown]
# ### Problem 2 — a prompt long enough to be compute-bound
# On an H100 at bf16, how many prompt tokens must a prefill process at once for
# its weight matmuls to reach the compute roof?

# %%
answer = ...  # tokens
ok = check_answer("08.2", answer)

# %% [markdown]
# ### Problem 3 — how many 128k-token sequences fit
# Llama-3.1-70B in bf16 (141,107,412,992 bytes of weights; 327,680 bytes of KV per
# token) on 8 H200s. How many sequences of 131,072 tokens fit?

# %%
answer = ...  # sequences
ok = check_answer("08.3", answer)

# %% [markdown]
# ### Problem 4 — the memory slope against the compute slope
# For Llama-3.1-8B (KV 131,072 bytes per token; attention 524,288 FLOPs per
# context token) on a B200, how many times longer does each token of context
# take to read than to compute on?

# %%
answer = ...  # times
ok = check_answer("08.4", answer)

# %% [markdown]
# ### Problem 5 — where KV reads take over
# Llama-3.1-70B on an H100 at bf16, best batch: per token, compute is
# $(2N_\text{mm} + aL)/F$ with $N_\text{mm}$ = 69,503,033,344 and $a$ = 2,621,440
# FLOPs per context token; KV reads are $L\beta/W$ with $\beta$ = 327,680 bytes.
# At what context $L$ are they equal?

# %%
answer = ...  # tokens
ok = check_answer("08.5", answer)

# %% [markdown]
# ### Problem 6 — how fast HBM improves
# Per-GPU HBM bandwidth went from 2.039 TB/s (A100, 2020) to 8 TB/s (B200,
# 2024). What is the growth factor per year?

# %%
answer = ...  # times per year
ok = check_answer("08.6", answer)

# %% [markdown]
# ### Problem 7 — a hybrid model's cache at a million tokens
# Qwen3-Next-80B has 48 layers: 12 attend (2 KV heads of dimension 256), 36 are
# Gated DeltaNet layers that each keep, per sequence, 32 state matrices of
# 128 x 128 and the last 3 inputs of an 8,192-channel convolution. In bf16, how
# many GB does one sequence of 1,048,576 tokens hold?

# %%
answer = ...  # GB (1e9 bytes)
ok = check_answer("08.7", answer)

# %% [markdown]
# ### Problem 8 — how many million-token sequences fit with chunked attention
# Llama 4 Scout (107,769,861,120 weights in bf16) has 48 layers with 8 KV heads of
# dimension 128: 12 attend to the whole context, 36 only within 8,192-token chunks
# (so they need room for one chunk). On 8 H200s (141 GB each), how many sequences
# of 1,048,576 tokens fit beside the weights, pooling the HBM?

# %%
answer = ...  # sequences
ok = check_answer("08.8", answer)

