# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 2 — Exercises: the KV cache and attention
# *Generated from `solutions/02_kv_cache_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
#
# Seven problems on decode attention. Work each by hand first (the config fields
# and datasheet numbers given are enough), then put your number in `answer` and
# run the cell: `check_answer` says right, or how far off you are and whether it
# looks like a units slip. It never shows the answer.
#
# Datasheet numbers (dense, per chip): H100 SXM 989.5 TFLOP/s bf16, 3.35 TB/s;
# H200 989.5 TFLOP/s bf16, 4.8 TB/s. One multiply-add is 2 FLOPs.

# %%
from llmmath import attention, check_answer, models

# %% [markdown]
# ### Problem 1 — the KV cache of Llama-3.1-70B
# Llama-3.1-70B has 80 layers, 64 query heads, 8 K/V heads and head_dim 128.
# How many bytes of KV cache does one token of context take, over all layers,
# in bf16?

# %%
answer = ...  # bytes per token
ok = check_answer("02.1", answer)

# %% [markdown]
# ### Problem 2 — GQA with an fp8 cache
# Llama-3.1-8B has 32 query heads and 8 K/V heads of 128. With its cache in fp8
# (1 byte per value), what is the arithmetic intensity of decode attention
# (FLOPs per cache byte)?

# %%
answer = ...  # FLOP per byte
ok = check_answer("02.2", answer)

# %% [markdown]
# ### Problem 3 — absorbed MLA in Kimi K2
# Kimi K2 uses DeepSeek-V3's latent attention with 64 heads: kv_lora_rank 512,
# qk_rope_head_dim 64, bf16 cache. With the up-projections absorbed, what is the
# arithmetic intensity of decode attention? (Each head scores against the
# 512-wide latent and the 64-wide rope key, and sums the 512-wide latent.)

# %%
answer = ...  # FLOP per byte
ok = check_answer("02.3", answer)

# %% [markdown]
# ### Problem 4 — when does Llama-3.1-8B turn memory-bound?
# Llama-3.1-8B: 8,030,261,248 parameters, of which the untied input embedding
# (128,256 × 4,096) does no multiply; 32 layers, 32 heads, 8 K/V heads, head_dim 128;
# bf16 weights and cache. On an H200, at what context $L^*$ does one more
# sequence add as much KV-read time as compute time? Use
# $L^* = 2N_\text{mm}/(F\beta/W - a)$ with $a = 4 n_h h \cdot n_\text{layers}$ FLOPs per context token.

# %%
answer = ...  # tokens
ok = check_answer("02.4", answer)

# %% [markdown]
# ### Problem 5 — MFU at three times the balance context
# Same model and chip, a batch so large that the weight reads do not matter.
# At $L = 3L^*$, what fraction of peak FLOP/s does the step use (its MFU at the
# roofline floor)? Hint: per sequence, compute is $(2N + aL)/F$ and the KV read
# is $L\beta/W$; at $L^*$ they are equal.

# %%
answer = ...  # fraction
ok = check_answer("02.5", answer)

# %% [markdown]
# ### Problem 6 — DeepSeek's sparse attention at a million tokens
# DeepSeek-V3.2's DSA keeps the MLA cache (576 values per token and layer; take
# bf16, 1,152 bytes) and adds an indexer key of 128 fp8 values plus one 4-byte
# scale per token and layer. Each decode step the indexer reads every cached
# indexer key; then attention reads the top 2,048 tokens. At $L = 2^{20}$, by what
# factor does DSA cut the bytes read per layer, compared with dense MLA?

# %%
answer = ...  # dense bytes / DSA bytes
ok = check_answer("02.6", answer)

# %% [markdown]
# ### Problem 7 — where the square root comes from
# Block top-$k$ attention keeps one mean key per block ($\sigma = \beta/2$ bytes,
# half a token's K+V) and reads the $k = 16$ best blocks of $s$ tokens in full.
# Per layer it reads $L\sigma/s + k s\beta$ bytes. At $L = 2^{20}$, which block size
# $s$ (in tokens) minimises that?

# %%
answer = ...  # tokens per block
ok = check_answer("02.7", answer)

