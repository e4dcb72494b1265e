# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 3 — Exercises: the balance point
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
# BEGIN SOLUTION stub: answer = ...  # dimensionless
answer = 9e15 * 0.5 / (2 * 8e12)
# END SOLUTION
ok = check_answer("03.1", answer)
# BEGIN SOLUTION
assert ok
assert abs(hardware.get("b200").balance_ratio("fp4") / answer - 1) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $9\times10^{15} \cdot 0.5 / (2 \cdot 8\times10^{12}) = 281$:
# the same as at fp8 ($4.5\times10^{15}\cdot 1/(1.6\times10^{13})$). Halving the
# bytes and doubling the FLOP/s leaves R alone, as the speaker said.

# %% [markdown]
# ### Problem 2 — DeepSeek-V3's balance batch on an H200
# DeepSeek-V3 has 671,026,419,200 parameters, 37,552,297,472 active per token, and
# an untied input embedding of 129,280 × 7,168. At bf16 and short context, what
# batch balances the whole step on an H200? Use $B^* = R \cdot P_\text{read}/N_\text{mm}$,
# both counts without the embedding table.

# %%
# BEGIN SOLUTION stub: answer = ...  # sequences
R = 989.5e12 * 2 / (2 * 4.8e12)
emb = 129_280 * 7_168
answer = R * (671_026_419_200 - emb) / (37_552_297_472 - emb)
# END SOLUTION
ok = check_answer("03.2", answer)
# BEGIN SOLUTION
assert ok
assert abs(serving.balance_batch("deepseek-v3", "h200") / answer - 1) < 1e-3
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $R = 206.1$; $P_\text{read}/N_\text{mm} = 670.10/36.63 = 18.30$;
# $B^* = 3{,}772$. The H200's extra bandwidth lowers the batch needed by 30% against
# an H100 (5,404) — and both are far above the speaker's 2,400.

# %% [markdown]
# ### Problem 3 — every expert compute-bound
# Qwen3-235B-A22B routes each token to 8 of 128 experts. On an H100 at bf16, at
# what batch does the average expert's own matmul become compute-bound?

# %%
# BEGIN SOLUTION stub: answer = ...  # sequences
answer = 989.5e12 * 2 / (2 * 3.35e12) * 128 / 8
# END SOLUTION
ok = check_answer("03.3", answer)
# BEGIN SOLUTION
assert ok
assert abs(serving.balance_batch("qwen3-235b-a22b", "h100-sxm", sparsity="expert") / answer - 1) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Each expert sees $Bk/E = B/16$ tokens; it balances at $R = 295.4$,
# so $B = 16 \cdot 295.4 = 4{,}726$ — 1.5× the whole-step $B^*$ (3,211), because
# attention and the embeddings dilute $N_\text{tot}/N_\text{act}$ to 10.6 < 16.

# %% [markdown]
# ### Problem 4 — utilization without overlap
# A decode kernel does its weight reads and its arithmetic one after the other,
# with no overlap. At a batch 2.5 times the balance batch, what fraction of peak
# FLOP/s does it reach? (Short context, weights only.)

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction
answer = 2.5 / (1 + 2.5)
# END SOLUTION
ok = check_answer("03.4", answer)
# BEGIN SOLUTION
assert ok
assert abs(serving.utilization_vs_balance(2.5, "sum") - answer) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $t_c / t_w = 2.5$, so $t_c/(t_c + t_w) = 2.5/3.5 = 71\%$.
# At $B^*$ it would be 50%: the 2–3× rule buys back most of the lost overlap.

# %% [markdown]
# ### Problem 5 — where no batch balances
# Llama-3.1-8B on an H100, bf16 weights and KV: $N_\text{mm}$ = 7,504,924,672
# (the parameters without the input embedding), $d$ = 4,096, KV
# $\beta = 2 \cdot 32 \cdot 8 \cdot 128 \cdot 2$ bytes per token, attention
# $a = 32 \cdot 4 \cdot 32 \cdot 128$ FLOPs per token of context. Beyond what context
# does no batch make decode compute-bound? Use
# $L_\text{max} = (2N_\text{mm}/F - d\,b_w/W)/(\beta/W - a/F)$.

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens
F, Wb = 989.5e12, 3.35e12
beta, a = 2 * 32 * 8 * 128 * 2, 32 * 4 * 32 * 128
answer = (2 * 7_504_924_672 / F - 4096 * 2 / Wb) / (beta / Wb - a / F)
# END SOLUTION
ok = check_answer("03.5", answer)
# BEGIN SOLUTION
assert ok
assert abs(serving.kv_limit_context("llama-3.1-8b", "h100-sxm") / answer - 1) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Numerator $1.5169\times10^{-5} - 2.4\times10^{-9} = 1.5167\times10^{-5}$ s;
# denominator $3.913\times10^{-8} - 5.30\times10^{-10} = 3.860\times10^{-8}$ s per token;
# $L_\text{max} = 393$ tokens. A small GQA model's KV cache is fat relative to its
# weights: past a few hundred tokens of context it is memory-bound at any batch.

# %% [markdown]
# ### Problem 6 — a balanced deployment's throughput
# DeepSeek-V3 served at its whole-step balance batch on H100s (5,404 sequences)
# with a 20 ms step: how many tokens per second does the deployment produce?

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens per second
answer = 5404 / 0.020
# END SOLUTION
ok = check_answer("03.6", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** One token per sequence per step: $5{,}404 / 0.02\ \text{s} = 270{,}200$
# tokens/s — twice the speaker's 128K, because the real sparsity is 17.9, not 8.
