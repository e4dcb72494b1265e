# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 10 — Exercises: training at scale
# *Generated from `solutions/10_training_at_scale_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
#
# Fourteen problems on model state, activations, the FLOPs of a step, MFU,
# pipeline bubbles, data-parallel communication, what an fp8 recipe buys, the
# gradients' width, DeepSeek's DualPipe, attention's backward pass, what
# overlapping an expert all-to-all buys and an MoE model's state against a
# published peak. Work each by hand, put
# your number in `answer`, run the cell. The symbols are the chapter's: $N$
# parameters, $L$ tokens per sequence, $b$ sequences per micro-batch, $d$ hidden
# size, $n_h$ heads, and the parallel degrees TP, PP, DP named as in a layout's
# label (`TP8 PP16 DP128`: TP = 8, PP = 16, DP = 128).

# %%
from llmmath import check_answer, memory, network, parallelism, training, training_layout

# %% [markdown]
# ### Problem 1 — Megatron's distributed optimizer
# A 70B-parameter model trains with TP = 8 (each GPU holds 1/8 of the parameters;
# no pipelining) and DP = 32, Megatron-style: bf16 weights, fp32
# gradients, fp32 master weights and Adam, with the distributed optimizer. How
# many bytes of model state does each GPU hold?

# %%
answer = ...  # bytes
ok = check_answer("10.1", answer)

# %% [markdown]
# ### Problem 2 — ZeRO-3
# A 7B model trains with mixed-precision Adam as in the ZeRO paper (bf16 weights
# and gradients, fp32 master weights and moments) under ZeRO-3 on DP = 64 GPUs.
# Bytes of model state per GPU?

# %%
answer = ...  # bytes
ok = check_answer("10.2", answer)

# %% [markdown]
# ### Problem 3 — activations under tensor parallelism alone
# GPT-3 175B ($d = 12{,}288$, $n_h = 96$), sequences of $L = 2{,}048$ tokens,
# micro-batch $b = 1$, TP = 8 *without* sequence parallelism, no recomputation, dropout on (Korthikanti
# et al.'s setting). Bytes of activations one layer keeps per GPU?

# %%
answer = ...  # bytes
ok = check_answer("10.3", answer)

# %% [markdown]
# ### Problem 4 — activations in flight on the first stage
# An 80-layer model is split into PP = 8 pipeline stages of 10 layers. One layer's
# activations for one micro-batch take 0.5 GB. A step pushes 32 micro-batches
# through a 1F1B schedule. How many bytes of activations does the first stage
# hold at its peak?

# %%
answer = ...  # bytes
ok = check_answer("10.4", answer)

# %% [markdown]
# ### Problem 5 — FLOPs with full recomputation
# Train an 8B-parameter model (take $N = 8 \times 10^9$; $n_\ell = 32$ layers, $n_h = 32$ query heads of
# $d_h = 128$) on $D = 10^{12}$ tokens in causal sequences of $L = 8{,}192$ tokens, with full
# activation recomputation. Hardware FLOPs?

# %%
answer = ...  # FLOPs
ok = check_answer("10.5", answer)

# %% [markdown]
# ### Problem 6 — MFU of a step
# A 70B dense model trains on 2,048 H100s (dense BF16 peak 989.5 TFLOP/s). Each
# step processes 4M tokens and takes 2.0 s. Counting only $6N$ per token, what is
# the MFU?

# %%
answer = ...  # fraction
ok = check_answer("10.6", answer)

# %% [markdown]
# ### Problem 7 — an interleaved pipeline
# PP = 8 stages, $m = 16$ micro-batches per step, and each GPU holds $v = 4$ interleaved chunks of
# layers. What fraction of the step is bubble?

# %%
answer = ...  # fraction
ok = check_answer("10.7", answer)

# %% [markdown]
# ### Problem 8 — the data-parallel gradient sync
# An 8B model trains with ZeRO-1 over DP = 64 GPUs that talk over 50 GB/s NICs (per
# direction): each step reduce-scatters the fp32 gradients and all-gathers the
# updated bf16 weights, both as rings. Bandwidth term only (no latency): how
# long does the sync take?

# %%
answer = ...  # seconds
ok = check_answer("10.8", answer)

# %% [markdown]
# ### Problem 9 — fp8 on the linear layers only
# A bf16 training step on H100s spends 80% of its compute time in the linear layers, at the 0.745 of the 989.4
# TFLOP/s bf16 peak that measured GEMMs reach, and 20% in attention. An fp8 recipe runs the linear layers in fp8
# (peak 1,978.9 TFLOP/s, reached at 0.525) and leaves attention in bf16. What fraction of the bf16 compute time
# does the step's compute take in fp8?

# %%
answer = ...  # fraction of the bf16 compute time
ok = check_answer("10.9", answer)

# %% [markdown]
# ### Problem 10 — the gradients' width
# The model of Problem 1 (70B parameters, TP = 8, DP = 32, distributed optimizer) trains under NVIDIA's
# performance recipes, which keep and reduce the gradients in bf16 (`grad_reduce_in_fp32 = False`): bf16
# weights and gradients on every replica; fp32 master weights, Adam's two moments and, at the optimizer step, an
# fp32 copy of the gradients, all split over DP (Megatron's distributed optimizer). Bytes of model state per GPU?

# %%
answer = ...  # bytes
ok = check_answer("10.10", answer)

# %% [markdown]
# ### Problem 11 — DualPipe's bubble
# DeepSeek-V3 trained on PP = 16 stages with DualPipe, which feeds micro-batches from both ends of the pipeline
# and pairs each forward chunk with a backward chunk. Its report gives the idle time per stage as
# $(\text{PP}/2 - 1)(T_{F\&B} + T_B - 3T_W)$, with $T_B$ the whole backward, $T_W$ its weight-gradient part and
# $T_{F\&B}$ a paired forward and backward chunk (the library's `backward_input_s` is the input-gradient part
# alone, $T_B - T_W$). Take a forward, an input-gradient and a weight-gradient chunk to cost one unit each, and
# $m = 32$ micro-batches a step. What fraction of the step is bubble?

# %%
answer = ...  # fraction
ok = check_answer("10.11", answer)

# %% [markdown]
# ### Problem 12 — attention's backward pass
# FlashAttention-3 on an H100 (head dimension 128, 4k tokens) runs the causal forward at 579 TFLOP/s. Its paper's
# backward figure (no mask) shows 542 TFLOP/s where its unmasked forward shows 638, and it counts a backward as 2.5
# forwards of FLOPs: the kernel recomputes the scores. A training step counts attention's forward as $A$ FLOPs and
# its backward as $2A$. Take the causal backward to keep the unmasked backward's ratio to the unmasked forward. How
# many times longer does a step's attention (forward and backward) take than if the backward ran at the forward's
# rate?

# %%
answer = ...  # times the time at the forward's rate
ok = check_answer("10.12", answer)

# %% [markdown]
# ### Problem 13 — what overlapping the all-to-all buys
# The chapter's controlled study: Qwen3-30B-A3B on 16 H100s, the expert all-to-all overlapped with another
# micro-batch's compute or not, nothing else changed. Without overlap the prediction's step is $C = 11.1$ s of
# compute and $A = 5.0$ s of exposed all-to-all; with it, the prediction hides the whole all-to-all under the
# compute and expects the step to save all $A$. The run saved 3.72 s. But Hybrid-EP's dispatch and combine kernels
# run on 32 of the H100's 132 SMs (the recipe's `moe_hybridep_num_sms`; the SM count from NVIDIA's H100 white
# paper), and the compute they overlap runs on what is left. Take the overlapped compute to lose 32/132 of the GPU
# for as long as the all-to-all runs. How many seconds a step does the model then expect overlap to save?

# %%
answer = ...  # seconds a step
ok = check_answer("10.13", answer)

# %% [markdown]
# ### Problem 14 — an MoE model's state, and a published peak
# Qwen3-30B-A3B has $1.541\times10^9$ parameters outside its routed experts and $28.99\times10^9$ in them
# ($48$ layers $\times$ $128$ experts $\times$ $3 \times 2048 \times 768$). The same run keeps bf16 weights and bf16
# gradients (2 + 2 bytes a parameter on every GPU that holds a copy) and, in Megatron's distributed optimizer, 16
# bytes a parameter (fp32 master weights, two Adam moments and an fp32 copy of the gradient) sharded over the GPUs
# that hold a copy. The layout is EP16 over 16 GPUs: every GPU holds the non-expert parameters (16 copies) and 8 of
# each layer's 128 experts (each expert on one GPU only). How many GiB of model state does each GPU hold? (The
# run's published peak allocated memory was 62.166 GiB.)

# %%
answer = ...  # GiB per GPU
ok = check_answer("10.14", answer)

# %% [markdown]
# ### Problem 15 — where the host binds
# The host launches a micro-batch's kernels while the GPU runs earlier ones, so launch time shows only when the
# host needs longer than the GPU. Llama 3.2 1B ($N = 1.24\times10^9$ parameters, all of them in matmuls) trains on
# one H100 without recomputation. `training_layout.kernel_launches` counts 423 kernels a micro-batch (every GEMM
# of the forward and backward, the attention kernels, the elementwise ones), and eager PyTorch takes 13.0 µs to
# launch one (NVIDIA's microbenchmark). Take the GPU to run a micro-batch's $6NT$ FLOPs at 40% of the H100's
# 989.4 TFLOP/s. Below how many tokens $T$ a micro-batch does the host need longer than the GPU?

# %%
answer = ...  # tokens a micro-batch
ok = check_answer("10.15", answer)

