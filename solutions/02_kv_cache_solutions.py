# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 2 — Exercises: the KV cache and attention
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
# BEGIN SOLUTION stub: answer = ...  # bytes per token
answer = 2 * 80 * 8 * 128 * 2
# END SOLUTION
ok = check_answer("02.1", answer)
# BEGIN SOLUTION
assert ok
assert models.get("llama-3.1-70b").kv_bytes_per_token() == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** K and V (2) × 80 layers × 8 K/V heads × 128 values × 2 bytes
# $= 327{,}680$ bytes $= 320$ KiB per token. A 128K-token context holds 43 GB —
# more than half an H100 — for one sequence. With 64 K/V heads (MHA) it would be 8× that.

# %% [markdown]
# ### Problem 2 — GQA with an fp8 cache
# Llama-3.1-8B has 32 query heads and 8 K/V heads of 128. With its cache in fp8
# (1 byte per value), what is the arithmetic intensity of decode attention
# (FLOPs per cache byte)?

# %%
# BEGIN SOLUTION stub: answer = ...  # FLOP per byte
flops = 4 * 32 * 128          # per cached token per layer: q.k and p.v for 32 heads
by = 2 * 8 * 128 * 1          # K and V of 8 heads, 1 byte each
answer = flops / by
# END SOLUTION
ok = check_answer("02.2", answer)
# BEGIN SOLUTION
assert ok
assert attention.arithmetic_intensity("llama-3.1-8b", "fp8") == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $16{,}384$ FLOPs over $2{,}048$ bytes $= 8$ FLOP/byte, i.e.
# $2G/b$ with $G = 4$, $b = 1$. Halving the bytes doubles the intensity — still
# 51× below an H200's fp8 ridge (1979/4.8 = 412), the ridge that applies when the
# arithmetic runs in fp8 too (26× below its bf16 ridge, 206).

# %% [markdown]
# ### Problem 3 — absorbed MLA in Kimi K2
# Kimi K2 uses DeepSeek-V3's latent attention with 64 heads: kv_lora_rank 512,
# qk_rope_head_dim 64, bf16 cache. With the up-projections absorbed, what is the
# arithmetic intensity of decode attention? (Each head scores against the
# 512-wide latent and the 64-wide rope key, and sums the 512-wide latent.)

# %%
# BEGIN SOLUTION stub: answer = ...  # FLOP per byte
answer = 2 * 64 * (2 * 512 + 64) / ((512 + 64) * 2)
# END SOLUTION
ok = check_answer("02.3", answer)
# BEGIN SOLUTION
assert ok
assert abs(attention.arithmetic_intensity("kimi-k2") - answer) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Per cached token: scores $2\cdot64\cdot(512+64)$, values
# $2\cdot64\cdot512$, together $2\cdot64\cdot1088 = 139{,}264$ FLOPs; bytes
# $576 \times 2 = 1{,}152$. Intensity $= 120.9$ FLOP/byte: half of DeepSeek-V3's
# (half the heads), below every GPU ridge in the catalog — memory-bound again,
# but only by 1.7× on an H200.

# %% [markdown]
# ### Problem 4 — when does Llama-3.1-8B turn memory-bound?
# Llama-3.1-8B: 8,030,261,248 parameters, of which the untied input embedding
# (128,256 × 4,096) does no multiply; 32 layers, 32 heads, 8 K/V heads, head_dim 128;
# bf16 weights and cache. On an H200, at what context $L^*$ does one more
# sequence add as much KV-read time as compute time? Use
# $L^* = 2N_\text{mm}/(F\beta/W - a)$ with $a = 4 n_h h \cdot n_\text{layers}$ FLOPs per context token.

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens
n_mm = 8_030_261_248 - 128_256 * 4_096
beta = 2 * 32 * 8 * 128 * 2
a = 4 * 32 * 128 * 32
answer = 2 * n_mm / (989.5e12 * beta / 4.8e12 - a)
# END SOLUTION
ok = check_answer("02.4", answer)
# BEGIN SOLUTION
assert ok
assert abs(attention.kv_crossover_context("llama-3.1-8b", "h200") / answer - 1) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $N_\text{mm} = 7.505\times10^9$, $\beta = 131{,}072$ B,
# $a = 524{,}288$ FLOPs. $F\beta/W = 989.5\times10^{12}\times131{,}072/4.8\times10^{12} = 2.702\times10^7$;
# minus $a$: $2.650\times10^7$. $L^* = 1.501\times10^{10}/2.650\times10^7 = 567$ tokens.
# Past about 570 tokens of context no batch keeps an 8B model compute-bound on an H200.

# %% [markdown]
# ### Problem 5 — MFU at three times the balance context
# Same model and chip, a batch so large that the weight reads do not matter.
# At $L = 3L^*$, what fraction of peak FLOP/s does the step use (its MFU at the
# roofline floor)? Hint: per sequence, compute is $(2N + aL)/F$ and the KV read
# is $L\beta/W$; at $L^*$ they are equal.

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction
L_star = 2 * n_mm / (989.5e12 * beta / 4.8e12 - a)
answer = (2 * n_mm + a * 3 * L_star) / (3 * (2 * n_mm + a * L_star))
# END SOLUTION
ok = check_answer("02.5", answer)
# BEGIN SOLUTION
assert ok
from llmmath import serving
s = serving.decode_step("llama-3.1-8b", "h200", 1e8, 3 * L_star, check_capacity=False)
assert abs(s.mfu / answer - 1) < 1e-3
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** MFU $= \dfrac{(2N + 3aL^*)/F}{3L^*\beta/W}$ and $L^*\beta F/W = 2N + aL^*$, so
# MFU $= \dfrac{2N + 3aL^*}{3(2N + aL^*)} = \dfrac{1.501\times10^{10} + 8.91\times10^8}{3\times(1.501\times10^{10} + 2.97\times10^8)} = 0.346$.
# Close to $1/3$: past the balance context MFU falls as about $L^*/L$, a little
# slower because attention's own FLOPs grow with $L$ too.

# %% [markdown]
# ### Problem 6 — DeepSeek's sparse attention at a million tokens
# DeepSeek-V3.2's DSA keeps the MLA cache (576 values per token and layer; take
# bf16, 1,152 bytes) and adds an indexer key of 128 fp8 values plus one 4-byte
# scale per token and layer. Each decode step the indexer reads every cached
# indexer key; then attention reads the top 2,048 tokens. At $L = 2^{20}$, by what
# factor does DSA cut the bytes read per layer, compared with dense MLA?

# %%
# BEGIN SOLUTION stub: answer = ...  # dense bytes / DSA bytes
L = 2**20
answer = L * 1152 / (L * (128 + 4) + 2048 * 1152)
# END SOLUTION
ok = check_answer("02.6", answer)
# BEGIN SOLUTION
assert ok
assert abs(attention.dense_kv_bytes(L, 1152) / attention.indexer_topk_kv_bytes(L, 2048, 1152, 132) - answer) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Dense: $2^{20}\times1{,}152 = 1.208$ GB per layer. DSA:
# $2^{20}\times132 + 2{,}048\times1{,}152 = 138.4 + 2.4 = 140.8$ MB. Ratio $8.58$.
# The indexer scan is 98% of DSA's bytes at this length: the cost is still a
# line in $L$, $1152/132 = 8.7$ times flatter — not a square root.

# %% [markdown]
# ### Problem 7 — where the square root comes from
# Block top-$k$ attention keeps one mean key per block ($\sigma = \beta/2$ bytes,
# half a token's K+V) and reads the $k = 16$ best blocks of $s$ tokens in full.
# Per layer it reads $L\sigma/s + k s\beta$ bytes. At $L = 2^{20}$, which block size
# $s$ (in tokens) minimises that?

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens per block
answer = (2**20 * 0.5 / 16) ** 0.5
# END SOLUTION
ok = check_answer("02.7", answer)
# BEGIN SOLUTION
assert ok
assert abs(attention.block_topk_optimal(2**20, 16, 1152, 576)[0] - answer) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $d/ds\,(L\sigma/s + ks\beta) = 0 \Rightarrow s^* = \sqrt{L\sigma/(k\beta)}
# = \sqrt{2^{20}\times0.5/16} = \sqrt{32{,}768} = 181$ tokens. Both terms are then
# equal, and the total is $2\sqrt{Lk\sigma\beta}$: a square root of $L$ — but
# only because $s^*$ itself grows as $\sqrt L$. Keep $s$ fixed and the scan term
# is linear again.
