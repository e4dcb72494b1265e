# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 5 — Exercises: experts on a rack
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
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = 8 * 7168 * (1 + 2) * 63 / 64
# END SOLUTION
ok = check_answer("05.1", answer)
# BEGIN SOLUTION
assert ok
assert abs(network.moe_all_to_all_bytes_per_token(7168, 8, 64) - answer) < 1e-6
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $k\,d\,(1+2)\,(E-1)/E = 8 \cdot 7168 \cdot 3 \cdot 63/64 = 169{,}344$ bytes:
# 1 in 64 experts sits on the token's own GPU and costs no link traffic.

# %% [markdown]
# ### Problem 2 — expert FLOPs per byte moved
# Qwen3-235B-A22B's experts are SwiGLU MLPs of width 1536. With fp8 dispatch
# and bf16 combine, how many expert FLOPs are done per byte of all-to-all traffic?

# %%
# BEGIN SOLUTION stub: answer = ...  # FLOP per byte
answer = 6 * 1536 / (1 + 2)
# END SOLUTION
ok = check_answer("05.2", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $6\,d\,d_\text{ff}$ FLOPs over $d\,(1+2)$ bytes: $6 \cdot 1536 / 3 = 3072$.
# Below an H100's 2,200 FLOP per NVLink byte? No — above it, so the all-to-all can
# hide under the experts' compute inside the node, but not over a 50 GB/s NIC
# (19,800 FLOP/byte needed).

# %% [markdown]
# ### Problem 3 — the bandwidth gap of a DGX B200
# Each B200 has 900 GB/s of NVLink per direction and one 400 Gb/s NIC. What is
# its scale-up ÷ scale-out bandwidth ratio?

# %%
# BEGIN SOLUTION stub: answer = ...  # ratio
answer = 900e9 / (400e9 / 8)
# END SOLUTION
ok = check_answer("05.3", answer)
# BEGIN SOLUTION
assert ok
assert hardware.system("hgx-b200").scale_up_over_scale_out == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** 400 Gb/s = 50 GB/s; $900/50 = 18$ — twice the "about 8" of claim 17.
# NVLink doubled from Hopper to Blackwell, the NIC did not (until ConnectX-8).

# %% [markdown]
# ### Problem 4 — a ring all-reduce
# Data-parallel training all-reduces 1 GB of bf16 gradients across the 8 H100s
# of one HGX board (450 GB/s per direction, 5 µs per step). How long does a ring
# all-reduce take, in seconds?

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds
answer = 2 * 7 * 5e-6 + 2 * 7 / 8 * 1e9 / 450e9
# END SOLUTION
ok = check_answer("05.4", answer)
# BEGIN SOLUTION
assert ok
assert abs(network.all_reduce_time_s(1e9, 8, 450e9, 5e-6) / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $2(p-1)\alpha = 70$ µs of latency plus $2 \cdot \tfrac78 \cdot 1\,\text{GB} / 450\,\text{GB/s} = 3.89$ ms:
# 3.96 ms, bandwidth-bound. Each byte crosses a link almost twice (reduce-scatter, then all-gather).

# %% [markdown]
# ### Problem 5 — domain bandwidth growth
# By what factor does the aggregate HBM bandwidth of a GB300 NVL72 (72 GPUs at
# 8 TB/s) exceed that of an HGX H200 (8 GPUs at 4.8 TB/s)?

# %%
# BEGIN SOLUTION stub: answer = ...  # times
answer = (72 * 8e12) / (8 * 4.8e12)
# END SOLUTION
ok = check_answer("05.5", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $576 / 38.4 = 15$: 9× from the domain, 1.67× per GPU.

# %% [markdown]
# ### Problem 6 — the largest model a domain can read in one step
# A decode step must read every weight once. How many fp8 parameters can an
# HGX B200 (8 GPUs at 8 TB/s) read in a 20 ms step?

# %%
# BEGIN SOLUTION stub: answer = ...  # parameters
answer = 0.020 * 8 * 8e12 / 1
# END SOLUTION
ok = check_answer("05.6", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $0.02\,\text{s} \times 64\,\text{TB/s} / 1\,\text{B} = 1.28 \times 10^{12}$:
# about Kimi K2's 1.03T. An NVL72 (576 TB/s) reads 11.5T in the same time — claim 19's
# bound, read as bandwidth rather than capacity.
