# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 9 — Exercises: ciphers, reversible networks, memory for compute
#
# Seven problems. Work each by hand, put your number in `answer`, run the cell.

# %%
import math

import numpy as np

from llmmath import check_answer, memory

# %% [markdown]
# ### Problem 1 — the linear account of adversarial examples
# A linear classifier on 28×28 = 784 pixels (scaled to [0, 1]) has a score gap of
# 1 between the true class and the runner-up, and the weight difference of the
# two classes has mean absolute value 0.05 per pixel. What is the smallest
# uniform per-pixel change (L∞) that closes the gap?

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction of the pixel range
answer = 1.0 / (784 * 0.05)
# END SOLUTION
ok = check_answer("09.1", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Along $-\mathrm{sign}(w)$ the gap shrinks by $\varepsilon\lVert w\rVert_1 = \varepsilon \cdot 784 \cdot 0.05 = 39.2\,\varepsilon$;
# it closes at $\varepsilon = 1/39.2 = 0.0255$ — 6.5 of 255 grey levels, invisible to a person.
# A random ±ε pattern moves the gap by only about $\varepsilon \lVert w \rVert_2$, some $\sqrt{784} = 28$ times less.

# %% [markdown]
# ### Problem 2 — an ideal hash's avalanche, in numbers
# If each of SHA-256's 256 output bits flipped independently with probability
# 1/2 when one input bit flips, what would be the standard deviation of the
# number of flipped bits?

# %%
# BEGIN SOLUTION stub: answer = ...  # bits
answer = math.sqrt(256 * 0.5 * 0.5)
# END SOLUTION
ok = check_answer("09.2", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Binomial(256, ½): mean 128, standard deviation $\sqrt{256/4} = 8$.
# The chapter's histogram of measured flips has that spread.

# %% [markdown]
# ### Problem 3 — what a stored-activation backward pass keeps
# A RevNet of 32 blocks on inputs of width 64 (two halves of 32), batch 1,024,
# float64. Ordinary backpropagation keeps, for every block, its input (both
# halves) and the two tanh outputs $F(x_2)$ and $G(y_1)$. How many bytes is that
# in total? (Recomputation keeps none of it.)

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = 32 * (1024 * 64 + 2 * 1024 * 32) * 8
# END SOLUTION
ok = check_answer("09.3", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Per block $1024 \cdot 64 + 2 \cdot 1024 \cdot 32 = 131{,}072$ values, 1 MiB in float64;
# 32 MiB for 32 blocks, growing linearly with depth — the slope the chapter measures with `tracemalloc`.

# %% [markdown]
# ### Problem 4 — activations of a GPT-3 layer under tensor parallelism
# GPT-3 175B: hidden size 12,288, 96 heads; sequence 2,048, micro-batch 1, tensor
# parallel over 8 GPUs, no sequence parallelism, no recomputation. How many bytes
# of activations does one layer keep on each GPU (Korthikanti et al. 2022)?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
s, b, h, a, t = 2048, 1, 12288, 96, 8
answer = s * b * h * (10 + 24 / t + 5 * a * s / (h * t))
# END SOLUTION
ok = check_answer("09.4", answer)
# BEGIN SOLUTION
assert ok
assert abs(memory.activation_bytes_per_layer(2048, 1, 12288, 96, 8) / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $sbh = 25.2$M; the factor is $10 + 3 + 10 = 23$; 579 MB per layer per GPU.
# The 10 is the LayerNorm and dropout activations that tensor parallelism replicates.

# %% [markdown]
# ### Problem 5 — the whole model, with selective recomputation and sequence parallelism
# Same model and shapes, now with sequence parallelism and selective
# recomputation. How many bytes of activations do all 96 layers keep per GPU?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = 96 * 2048 * 1 * 12288 * 34 / 8
# END SOLUTION
ok = check_answer("09.5", answer)
# BEGIN SOLUTION
assert ok
assert abs(96 * memory.activation_bytes_per_layer(2048, 1, 12288, 96, 8, True, "selective") / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $96 \times sbh \times 34/8 = 10.3$ GB, against $96 \times 579$ MB = 55.6 GB in
# problem 4: 5.4× less, for the price of recomputing attention scores.

# %% [markdown]
# ### Problem 6 — read the KV cache, or recompute it?
# Llama-3.1-8B on an H200 (989.5 TFLOP/s bf16, 4.8 TB/s), bf16 KV of 131,072
# bytes per token. Ignoring attention over the context, how many times longer
# does recomputing one cached token's K and V take than reading them? Its
# matmul weights per token are 8,030,261,248 − 128,256 × 4,096.

# %%
# BEGIN SOLUTION stub: answer = ...  # times
recompute_s = 2 * (8_030_261_248 - 128_256 * 4_096) / 989.5e12
read_s = 131_072 / 4.8e12
answer = recompute_s / read_s
# END SOLUTION
ok = check_answer("09.6", answer)
# BEGIN SOLUTION
assert ok
r, rc = memory.kv_read_vs_recompute_s("llama-3.1-8b", "h200", 0)
assert abs(rc / r / answer - 1) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** 15.2 µs of compute against 27 ns of reading: 556×. A cached token is a very good deal
# as long as it stays in HBM; claim 40 holds for the KV cache.

# %% [markdown]
# ### Problem 7 — the price of full recomputation
# Training costs about 6N FLOPs per token (2N forward, 4N backward). Full
# activation recomputation runs each layer's forward a second time during the
# backward pass. What fraction is added to the training FLOPs?

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction
answer = 2 / 6
# END SOLUTION
ok = check_answer("09.7", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** One extra forward, 2N on top of 6N: +33%. Reversible layers pay about the same
# (their inverse is a forward pass); selective recomputation pays a few percent.
