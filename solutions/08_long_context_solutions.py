# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 8 — Exercises: long context
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
# BEGIN SOLUTION stub: answer = ...  # tokens
answer = 2 * 7_504_924_672 / (32 * 4 * 32 * 128)
# END SOLUTION
ok = check_answer("08.1", answer)
# BEGIN SOLUTION
assert ok
assert abs(serving.attention_crossover_context("llama-3.1-8b") / answer - 1) < 1e-3
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Weights: $1.5\times10^{10}$ FLOPs per token; attention: $4 \cdot 32 \cdot 128 = 16{,}384$ FLOPs
# per context token per layer, $5.2\times10^5$ over 32 layers. Equal at 28,600 tokens — not millions.

# %% [markdown]
# ### Problem 2 — a prompt long enough to be compute-bound
# On an H100 at bf16, how many prompt tokens must a prefill process at once for
# its weight matmuls to reach the compute roof?

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens
answer = 989.5e12 / 3.35e12
# END SOLUTION
ok = check_answer("08.2", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** A weight read once (2 bytes) is multiplied by each of T tokens (2T FLOPs): intensity T.
# The roof is at $F/W = 295$: any prompt of a few hundred tokens already prefills at full compute.

# %% [markdown]
# ### Problem 3 — how many 128k-token sequences fit
# Llama-3.1-70B in bf16 (141,107,412,992 bytes of weights; 327,680 bytes of KV per
# token) on 8 H200s. How many sequences of 131,072 tokens fit?

# %%
# BEGIN SOLUTION stub: answer = ...  # sequences
answer = int((8 * 141e9 - 141_107_412_992) // (131_072 * 327_680))
# END SOLUTION
ok = check_answer("08.3", answer)
# BEGIN SOLUTION
assert ok
assert answer == serving.max_batch("llama-3.1-70b", "h200", 131072, n_chips=8)
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** One sequence holds 42.9 GB of KV; 987 GB are free after the weights: 22 sequences —
# far below the balance batch, so long-context decode on this machine is memory-bound however it is batched.

# %% [markdown]
# ### Problem 4 — the memory slope against the compute slope
# For Llama-3.1-8B (KV 131,072 bytes per token; attention 524,288 FLOPs per
# context token) on a B200, how many times longer does each token of context
# take to read than to compute on?

# %%
# BEGIN SOLUTION stub: answer = ...  # times
answer = 131_072 * (2.25e15 / 8e12) / 524_288
# END SOLUTION
ok = check_answer("08.4", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $(\beta/W)/(a/F) = (\beta/a)(F/W) = 0.25 \times 281 = 70$: bandwidth, not arithmetic, is
# what long context costs (claim 34) — for grouped-query attention.

# %% [markdown]
# ### Problem 5 — where KV reads take over
# Llama-3.1-70B on an H100 at bf16, best batch: per token, compute is
# $(2N_\text{mm} + aL)/F$ with $N_\text{mm}$ = 69,503,033,344 and $a$ = 2,621,440
# FLOPs per context token; KV reads are $L\beta/W$ with $\beta$ = 327,680 bytes.
# At what context $L$ are they equal?

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens
answer = 2 * 69_503_033_344 / (327_680 * 989.5e12 / 3.35e12 - 2_621_440)
# END SOLUTION
ok = check_answer("08.5", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $L = 2N_\text{mm} / (\beta F/W - a) = 1.39\times10^{11} / 9.42\times10^{7} = 1{,}476$ tokens.
# Beyond ~1.5k tokens of context, this model's cost per token grows in proportion to the context.

# %% [markdown]
# ### Problem 6 — how fast HBM improves
# Per-GPU HBM bandwidth went from 2.039 TB/s (A100, 2020) to 8 TB/s (B200,
# 2024). What is the growth factor per year?

# %%
# BEGIN SOLUTION stub: answer = ...  # times per year
answer = (8 / 2.039) ** (1 / 4)
# END SOLUTION
ok = check_answer("08.6", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $3.92^{1/4} = 1.41$ per year: a 10× longer context at the same cost per token waits about
# $\ln 10 / \ln 1.41 = 6.7$ years for bandwidth alone.

# %% [markdown]
# ### Problem 7 — a hybrid model's cache at a million tokens
# Qwen3-Next-80B has 48 layers: 12 attend (2 KV heads of dimension 256), 36 are
# Gated DeltaNet layers that each keep, per sequence, 32 state matrices of
# 128 x 128 and the last 3 inputs of an 8,192-channel convolution. In bf16, how
# many GB does one sequence of 1,048,576 tokens hold?

# %%
# BEGIN SOLUTION stub: answer = ...  # GB (1e9 bytes)
kv = 12 * 2 * 256 * 2 * 2 * 1_048_576            # attention layers x KV heads x dim x (K, V) x bytes x tokens
state = 36 * (32 * 128 * 128 + 8192 * 3) * 2      # the linear layers' fixed state
answer = (kv + state) / 1e9
# END SOLUTION
ok = check_answer("08.7", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $12 \times 2 \times 256 \times 2 \times 2 = 24{,}576$ bytes a token in the
# attention layers: 25.77 GB at $2^{20}$ tokens, plus a 39.5 MB state that does not grow: 25.81 GB. Had all 48
# layers attended, the cache would be 4× larger; the wall moves by the share of layers that still attend.

# %% [markdown]
# ### Problem 8 — how many million-token sequences fit with chunked attention
# Llama 4 Scout (107,769,861,120 weights in bf16) has 48 layers with 8 KV heads of
# dimension 128: 12 attend to the whole context, 36 only within 8,192-token chunks
# (so they need room for one chunk). On 8 H200s (141 GB each), how many sequences
# of 1,048,576 tokens fit beside the weights, pooling the HBM?

# %%
# BEGIN SOLUTION stub: answer = ...  # sequences
per_seq = (12 * 1_048_576 + 36 * 8192) * 8 * 128 * 2 * 2   # positions held x (K, V) x heads x dim x bytes
answer = (8 * 141e9 - 2 * 107_769_861_120) // per_seq
# END SOLUTION
ok = check_answer("08.8", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** One sequence holds $(12 \times 2^{20} + 36 \times 8{,}192) \times 4{,}096$ bytes = 52.7 GB;
# $912.5 / 52.7$ gives 17 whole sequences, against 4 if every layer held the whole context.
