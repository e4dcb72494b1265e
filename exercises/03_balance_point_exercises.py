# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 3 — Exercises: the balance point
# *Generated from `solutions/03_balance_point_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
#
# Six problems on the balance batch, its two sparsities, KV traffic and overlap.
# Work each by hand first, then put your number in `answer` and run the cell:
# `check_answer` says right, or how far off you are. It never shows the answer.
#
# Datasheet numbers (dense, per chip): H100 SXM 989.5 TFLOP/s bf16, 3.35 TB/s;
# H200 989.5 TFLOP/s bf16, 4.8 TB/s; B200 9 PFLOP/s fp4, 8 TB/s.

# %%
from llmmath import check_answer, hardware, models, serving

# %% [markdown]
# ### Problem 1 — the balance ratio at fp4
# A B200 multiplies fp4 weights (half a byte each) at 9 PFLOP/s dense and reads
# HBM at 8 TB/s. What is its balance ratio $R = F b_w / (2W)$?

# %%
answer = ...  # dimensionless
ok = check_answer("03.1", answer)

# %% [markdown]
# ### Problem 2 — DeepSeek-V3's balance batch on an H200
# DeepSeek-V3 has 671,026,419,200 parameters, 37,552,297,472 active per token, and
# an untied input embedding of 129,280 × 7,168. At bf16 and short context, what
# batch balances the whole step on an H200? Use $B^* = R \cdot P_\text{read}/N_\text{mm}$,
# both counts without the embedding table.

# %%
answer = ...  # sequences
ok = check_answer("03.2", answer)

# %% [markdown]
# ### Problem 3 — every expert compute-bound
# Qwen3-235B-A22B routes each token to 8 of 128 experts. On an H100 at bf16, at
# what batch does the average expert's own matmul become compute-bound?

# %%
answer = ...  # sequences
ok = check_answer("03.3", answer)

# %% [markdown]
# ### Problem 4 — utilization without overlap
# A decode kernel does its weight reads and its arithmetic one after the other,
# with no overlap. At a batch 2.5 times the balance batch, what fraction of peak
# FLOP/s does it reach? (Short context, weights only.)

# %%
answer = ...  # fraction
ok = check_answer("03.4", answer)

# %% [markdown]
# ### Problem 5 — where no batch balances
# Llama-3.1-8B on an H100, bf16 weights and KV: $N_\text{mm}$ = 7,504,924,672
# (the parameters without the input embedding), $d$ = 4,096, KV
# $\beta = 2 \cdot 32 \cdot 8 \cdot 128 \cdot 2$ bytes per token, attention
# $a = 32 \cdot 4 \cdot 32 \cdot 128$ FLOPs per token of context. Beyond what context
# does no batch make decode compute-bound? Use
# $L_\text{max} = (2N_\text{mm}/F - d\,b_w/W)/(\beta/W - a/F)$.

# %%
answer = ...  # tokens
ok = check_answer("03.5", answer)

# %% [markdown]
# ### Problem 6 — a balanced deployment's throughput
# DeepSeek-V3 served at its whole-step balance batch on H100s (5,404 sequences)
# with a 20 ms step: how many tokens per second does the deployment produce?

# %%
answer = ...  # tokens per second
ok = check_answer("03.6", answer)

