# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 1 — Exercises: batch size
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
# BEGIN SOLUTION stub: answer = ...  # your number
answer = 989.5e12 * 2 / (2 * 4.8e12)
# END SOLUTION
ok = check_answer("01.1", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $R = 989.5\times10^{12} \cdot 2 / (2 \cdot 4.8\times10^{12}) = 206$.
# More bandwidth for the same compute *lowers* the balance ratio: an H200 needs a
# smaller batch than an H100 (295) to become compute-bound.

# %% [markdown]
# ### Problem 2 — a latency floor
# Llama-3.1-8B in bf16 on one H200: how long, at least, does one decode step
# take? Count every weight except the untied input-embedding table
# (vocabulary 128,256 × d_model 4,096), of which a step reads only a few rows.
# The model has 8,030,261,248 parameters. Answer in seconds.

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds
answer = (8_030_261_248 - 128_256 * 4_096) * 2 / 4.8e12
# END SOLUTION
ok = check_answer("01.2", answer)
# BEGIN SOLUTION
assert ok
assert abs(serving.latency_floor_s("llama-3.1-8b", "h200") / answer - 1) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $(8.030\times10^9 - 0.525\times10^9)\times 2\ \text{B} / 4.8\times10^{12}\ \text{B/s}
# = 15.0\ \text{GB} / 4.8\ \text{TB/s} = 3.13$ ms: at most 320 tokens/s for any one sequence.

# %% [markdown]
# ### Problem 3 — Mixtral's balance batch
# Mixtral-8x7B has 46,702,792,704 parameters, of which 12,879,925,248 are active
# per token (2 of 8 experts); its untied embedding table is 32,000 × 4,096. At
# large batch every expert is read, but each token multiplies only its two. On an
# H100 at bf16 and context 0, what batch balances compute and memory?
# Use $B^* = R \cdot P_\text{read} / N_\text{mm}$, where both counts leave out the
# input-embedding table.

# %%
# BEGIN SOLUTION stub: answer = ...  # sequences
R = 989.5e12 / 3.35e12
P_read = 46_702_792_704 - 32_000 * 4_096
N_mm = 12_879_925_248 - 32_000 * 4_096
answer = R * P_read / N_mm
# END SOLUTION
ok = check_answer("01.3", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $R = 295.4$; $P_\text{read}/N_\text{mm} = 46.57/12.75 = 3.65$;
# $B^* = 1079$. The sparsity multiplies the balance batch: a dense 13B model
# would balance at ~295.

# %% [markdown]
# ### Problem 4 — throughput below the balance batch
# Llama-3.1-70B (70,553,706,496 parameters; untied embedding 128,256 × 8,192)
# in bf16 on 2 H100s, batch 64, context 0. How many tokens per second does the
# pair produce in total?

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens per second
floor_s = (70_553_706_496 - 128_256 * 8_192) * 2 / (2 * 3.35e12)
answer = 64 / floor_s
# END SOLUTION
ok = check_answer("01.4", answer)
# BEGIN SOLUTION
assert ok
assert abs(64 / serving.decode_step_time_s("llama-3.1-70b", "h100-sxm", 64, 0, n_chips=2) / answer - 1) < 1e-3
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $B = 64 < B^* \approx 295$, so the step is memory-bound and
# lasts the weight-read floor: $139\ \text{GB} / 6.7\ \text{TB/s} = 20.7$ ms.
# $64 / 0.0207\ \text{s} = 3{,}085$ tokens/s. Doubling the batch would double
# this at no cost in latency.

# %% [markdown]
# ### Problem 5 — the unbatched penalty on a TPU
# On a Cloud TPU v6e (918 TFLOP/s bf16, 1.638 TB/s), by what factor does
# serving one sequence at a time raise the cost per token of a dense bf16 model
# at short context, compared with a large batch?

# %%
# BEGIN SOLUTION stub: answer = ...  # times
answer = 918e12 * 2 / (2 * 1.638e12)
# END SOLUTION
ok = check_answer("01.5", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The penalty is the balance ratio, $918/1.638 = 560$: the
# highest in the catalog, since v6e quadrupled compute over v5e but only doubled
# bandwidth. For a dense model that is the whole penalty, still short of the
# "1000×" of claim 2 (a thousand needs a sparse MoE spread over many chips by
# expert parallelism, where idle chips are paid for).

# %% [markdown]
# ### Problem 6 — how many sequences fit
# Llama-3.1-70B in bf16 (weights: 141,107,412,992 bytes) on 8 H100s (80 GB
# each), every sequence at 8,192 tokens of context. The KV cache holds, per token,
# K and V for 80 layers × 8 KV heads × 128 dimensions at 2 bytes. What is the
# largest batch that fits? (A whole number.)

# %%
# BEGIN SOLUTION stub: answer = ...  # sequences
beta = 2 * 80 * 8 * 128 * 2                # bytes per token of context
free = 8 * 80e9 - 141_107_412_992           # bytes left after the weights
answer = int(free // (8_192 * beta))
# END SOLUTION
ok = check_answer("01.6", answer)
# BEGIN SOLUTION
assert ok
assert answer == serving.max_batch("llama-3.1-70b", "h100-sxm", 8192, n_chips=8)
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $\beta = 327{,}680$ bytes per token; one sequence at 8,192
# tokens holds 2.68 GB; $(640 - 141.1)\ \text{GB} / 2.68\ \text{GB} = 185.9$, so
# 185 sequences — below the balance batch of 295. At this context HBM capacity,
# not compute, stops the batch from growing (chapter 3 returns to this).

# %% [markdown]
# ### Problem 7 — experts touched by a small batch
# DeepSeek-V3 routes each token to 8 of 256 experts in every MoE layer. With
# uniform routing, what fraction of the routed experts does a batch of 32 tokens
# read in one layer?

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction
answer = 1 - (1 - 8 / 256) ** 32
# END SOLUTION
ok = check_answer("01.7", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** An expert is missed by one token with probability
# $1 - 8/256$, by all 32 with $(0.96875)^{32} = 0.362$; so $1 - 0.362 = 0.638$ of
# the experts are read. Only past $B \approx 4E/k = 128$ is nearly every expert
# read (98%); only from there on does claim 4's "read all the weights" hold.
