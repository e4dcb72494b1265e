# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 9 — Exercises: ciphers, reversible networks, memory for compute
# *Generated from `solutions/09_ciphers_and_reversibility_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
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
answer = ...  # fraction of the pixel range
ok = check_answer("09.1", answer)

# %% [markdown]
# ### Problem 2 — an ideal hash's avalanche, in numbers
# If each of SHA-256's 256 output bits flipped independently with probability
# 1/2 when one input bit flips, what would be the standard deviation of the
# number of flipped bits?

# %%
answer = ...  # bits
ok = check_answer("09.2", answer)

# %% [markdown]
# ### Problem 3 — what a stored-activation backward pass keeps
# A RevNet of 32 blocks on inputs of width 64 (two halves of 32), batch 1,024,
# float64. Ordinary backpropagation keeps, for every block, its input (both
# halves) and the two tanh outputs $F(x_2)$ and $G(y_1)$. How many bytes is that
# in total? (Recomputation keeps none of it.)

# %%
answer = ...  # bytes
ok = check_answer("09.3", answer)

# %% [markdown]
# ### Problem 4 — activations of a GPT-3 layer under tensor parallelism
# GPT-3 175B: hidden size 12,288, 96 heads; sequence 2,048, micro-batch 1, tensor
# parallel over 8 GPUs, no sequence parallelism, no recomputation. How many bytes
# of activations does one layer keep on each GPU (Korthikanti et al. 2022)?

# %%
answer = ...  # bytes
ok = check_answer("09.4", answer)

# %% [markdown]
# ### Problem 5 — the whole model, with selective recomputation and sequence parallelism
# Same model and shapes, now with sequence parallelism and selective
# recomputation. How many bytes of activations do all 96 layers keep per GPU?

# %%
answer = ...  # bytes
ok = check_answer("09.5", answer)

# %% [markdown]
# ### Problem 6 — read the KV cache, or recompute it?
# Llama-3.1-8B on an H200 (989.5 TFLOP/s bf16, 4.8 TB/s), bf16 KV of 131,072
# bytes per token. Ignoring attention over the context, how many times longer
# does recomputing one cached token's K and V take than reading them? Its
# matmul weights per token are 8,030,261,248 − 128,256 × 4,096.

# %%
answer = ...  # times
ok = check_answer("09.6", answer)

# %% [markdown]
# ### Problem 7 — the price of full recomputation
# Training costs about 6N FLOPs per token (2N forward, 4N backward). Full
# activation recomputation runs each layer's forward a second time during the
# backward pass. What fraction is added to the training FLOPs?

# %%
answer = ...  # fraction
ok = check_answer("09.7", answer)

