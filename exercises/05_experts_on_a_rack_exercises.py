# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 5 — Exercises: experts on a rack
# *Generated from `solutions/05_experts_on_a_rack_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
#
# Six problems on expert-parallel traffic, scale-up vs scale-out, collectives
# and domain bandwidth. Work each by hand, put your number in `answer`, run the
# cell. Figures you may need (per GPU, per direction): HGX H100 NVLink 450 GB/s;
# B200/GB200 NVLink 900 GB/s; H200 HBM 4.8 TB/s; B200/GB200/GB300 HBM 8 TB/s.
# DeepSeek-V3: $d = 7168$, 8 of 256 routed experts per token, expert width 2048.

# %%
from llmmath import check_answer, network, parallelism, hardware

# %% [markdown]
# ### Problem 1 — all-to-all bytes of one token
# DeepSeek-V3 on 64 GPUs (EP64), dispatch in fp8 (1 byte), combine in bf16 (2
# bytes), experts placed uniformly. How many bytes does one token send over the
# links in one MoE layer (dispatch plus combine)?

# %%
answer = ...  # bytes
ok = check_answer("05.1", answer)

# %% [markdown]
# ### Problem 2 — expert FLOPs per byte moved
# Qwen3-235B-A22B's experts are SwiGLU MLPs of width 1536. With fp8 dispatch
# and bf16 combine, how many expert FLOPs are done per byte of all-to-all traffic?

# %%
answer = ...  # FLOP per byte
ok = check_answer("05.2", answer)

# %% [markdown]
# ### Problem 3 — the bandwidth gap of a DGX B200
# Each B200 has 900 GB/s of NVLink per direction and one 400 Gb/s NIC. What is
# its scale-up ÷ scale-out bandwidth ratio?

# %%
answer = ...  # ratio
ok = check_answer("05.3", answer)

# %% [markdown]
# ### Problem 4 — a ring all-reduce
# Data-parallel training all-reduces 1 GB of bf16 gradients across the 8 H100s
# of one HGX board (450 GB/s per direction, 5 µs per step). How long does a ring
# all-reduce take, in seconds?

# %%
answer = ...  # seconds
ok = check_answer("05.4", answer)

# %% [markdown]
# ### Problem 5 — domain bandwidth growth
# By what factor does the aggregate HBM bandwidth of a GB300 NVL72 (72 GPUs at
# 8 TB/s) exceed that of an HGX H200 (8 GPUs at 4.8 TB/s)?

# %%
answer = ...  # times
ok = check_answer("05.5", answer)

# %% [markdown]
# ### Problem 6 — the largest model a domain can read in one step
# A decode step must read every weight once. How many fp8 parameters can an
# HGX B200 (8 GPUs at 8 TB/s) read in a 20 ms step?

# %%
answer = ...  # parameters
ok = check_answer("05.6", answer)

