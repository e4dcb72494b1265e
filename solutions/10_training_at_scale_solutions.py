# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 10 — Exercises: training at scale
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
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = 70e9 / 8 * (2 + 4 + 12 / 32)
# END SOLUTION
ok = check_answer("10.1", answer)
# BEGIN SOLUTION
assert ok
assert abs(memory.model_state_bytes_per_gpu(70e9 / 8, dp=32, zero_stage=1) / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** 8.75B parameters per GPU at $6 + 12/\text{DP} = 6 + 12/32 = 6.375$ bytes: 55.8 GB.
# Without the distributed optimizer it would be 18 bytes, 157.5 GB: it would not fit.

# %% [markdown]
# ### Problem 2 — ZeRO-3
# A 7B model trains with mixed-precision Adam as in the ZeRO paper (bf16 weights
# and gradients, fp32 master weights and moments) under ZeRO-3 on DP = 64 GPUs.
# Bytes of model state per GPU?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = 7e9 * (2 + 2 + 12) / 64
# END SOLUTION
ok = check_answer("10.2", answer)
# BEGIN SOLUTION
assert ok
assert abs(memory.model_state_bytes_per_gpu(7e9, dp=64, zero_stage=3, grad_dtype="bf16") / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $16N/\text{DP} = 16 \times 7\text{B} / 64 = 1.75$ GB. With fp32 gradients it would be 18/64 bytes per parameter,
# 1.97 GB.

# %% [markdown]
# ### Problem 3 — activations under tensor parallelism alone
# GPT-3 175B ($d = 12{,}288$, $n_h = 96$), sequences of $L = 2{,}048$ tokens,
# micro-batch $b = 1$, TP = 8 *without* sequence parallelism, no recomputation, dropout on (Korthikanti
# et al.'s setting). Bytes of activations one layer keeps per GPU?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
L, b, d, n_h, TP = 2048, 1, 12288, 96, 8
answer = L * b * d * (10 + 24 / TP + 5 * n_h * L / (d * TP))
# END SOLUTION
ok = check_answer("10.3", answer)
# BEGIN SOLUTION
assert ok
assert abs(memory.activation_bytes_per_layer(2048, 1, 12288, 96, 8) / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $5n_hL/(d\,\text{TP}) = 10$, so $Lbd(10 + 3 + 10) = 23\,Lbd = 579$ MB. The 10 outside the tensor-parallel
# regions is now as large as everything TP split; sequence parallelism would bring the 13 down to $34/8 = 4.25$.

# %% [markdown]
# ### Problem 4 — activations in flight on the first stage
# An 80-layer model is split into PP = 8 pipeline stages of 10 layers. One layer's
# activations for one micro-batch take 0.5 GB. A step pushes 32 micro-batches
# through a 1F1B schedule. How many bytes of activations does the first stage
# hold at its peak?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = 8 * 10 * 0.5e9
# END SOLUTION
ok = check_answer("10.4", answer)
# BEGIN SOLUTION
assert ok
assert memory.pipeline_activation_bytes(0.5e9, 10, 8, 32, "1f1b") == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** 1F1B's first stage holds PP = 8 micro-batches: $8 \times 10 \times 0.5$ GB = 40 GB — all 80 layers'
# worth of one micro-batch. GPipe would hold all 32: 160 GB.

# %% [markdown]
# ### Problem 5 — FLOPs with full recomputation
# Train an 8B-parameter model (take $N = 8 \times 10^9$; $n_\ell = 32$ layers, $n_h = 32$ query heads of
# $d_h = 128$) on $D = 10^{12}$ tokens in causal sequences of $L = 8{,}192$ tokens, with full
# activation recomputation. Hardware FLOPs?

# %%
# BEGIN SOLUTION stub: answer = ...  # FLOPs
attn_forward_per_token = 4 * 32 * 128 * 32 * (8192 / 2)
answer = 8 * 8e9 * 1e12 + 4 * attn_forward_per_token * 1e12
# END SOLUTION
ok = check_answer("10.5", answer)
# BEGIN SOLUTION
assert ok
assert abs(training.train_flops(8e9, 1e12, 8192, "llama-3.1-8b", recompute="full") / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Weights: $8ND = 6.4\times10^{22}$ (6 for the model, 2 for the second forward). Attention: a token
# sees $L/2 = 4{,}096$ positions on average: $a L/2 = 4 n_h d_h n_\ell \cdot 4096 = 4 \cdot 32 \cdot 128 \cdot 32 \cdot 4096$
# $= 2.15$ GFLOP forward, ×4 (forward, backward's 2, the recomputed forward) ×$10^{12}$ = $8.6\times10^{21}$.
# Total $7.26\times10^{22}$; the model FLOPs (for MFU) are $6ND + 3\times$ attention $= 5.46\times10^{22}$.

# %% [markdown]
# ### Problem 6 — MFU of a step
# A 70B dense model trains on 2,048 H100s (dense BF16 peak 989.5 TFLOP/s). Each
# step processes 4M tokens and takes 2.0 s. Counting only $6N$ per token, what is
# the MFU?

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction
answer = 6 * 70e9 * 4e6 / (2.0 * 2048 * 989.5e12)
# END SOLUTION
ok = check_answer("10.6", answer)
# BEGIN SOLUTION
assert ok
assert abs(training.mfu(6 * 70e9 * 4e6, 2.0, 2048, 989.5e12) / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $1.68\times10^{18}$ FLOPs in $2 \times 2048 \times 989.5\times10^{12} = 4.05\times10^{18}$
# FLOP-capacity: 41.5 %. Against the datasheet's sparse 1,979 TFLOP/s it would read 20.7 %.

# %% [markdown]
# ### Problem 7 — an interleaved pipeline
# PP = 8 stages, $m = 16$ micro-batches per step, and each GPU holds $v = 4$ interleaved chunks of
# layers. What fraction of the step is bubble?

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction
answer = (8 - 1) / (4 * 16 + 8 - 1)
# END SOLUTION
ok = check_answer("10.7", answer)
# BEGIN SOLUTION
assert ok
assert abs(parallelism.pipeline_bubble_fraction(8, 16, "interleaved", chunks=4) - answer) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $(\text{PP}-1)/(vm + \text{PP}-1) = 7/71 = 9.9\%$, against 1F1B's $7/23 = 30\%$. The price: $4\times$ the point-to-point messages
# and $1 + 7/32 = 1.22\times$ the first stage's activations.

# %% [markdown]
# ### Problem 8 — the data-parallel gradient sync
# An 8B model trains with ZeRO-1 over DP = 64 GPUs that talk over 50 GB/s NICs (per
# direction): each step reduce-scatters the fp32 gradients and all-gathers the
# updated bf16 weights, both as rings. Bandwidth term only (no latency): how
# long does the sync take?

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds
answer = 63 / 64 * 8e9 * 4 / 50e9 + 63 / 64 * 8e9 * 2 / 50e9
# END SOLUTION
ok = check_answer("10.8", answer)
# BEGIN SOLUTION
assert ok
rs_ag = network.reduce_scatter_time_s(8e9 * 4, 64, 50e9) + network.all_gather_time_s(8e9 * 2, 64, 50e9)
assert abs(rs_ag / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $\frac{\text{DP}-1}{\text{DP}} N (b_g + b_w) = \frac{63}{64} \times 8\times10^9 \times 6$ bytes / 50 GB/s = 0.945 s, the same as an fp32 all-reduce
# would take less one third: the all-reduce moves $2 \times 4$ bytes per parameter, this $4 + 2$. Overlapped with the
# backward pass it costs nothing as long as the backward takes longer.

# %% [markdown]
# ### Problem 9 — fp8 on the linear layers only
# A bf16 training step on H100s spends 80% of its compute time in the linear layers, at the 0.745 of the 989.4
# TFLOP/s bf16 peak that measured GEMMs reach, and 20% in attention. An fp8 recipe runs the linear layers in fp8
# (peak 1,978.9 TFLOP/s, reached at 0.525) and leaves attention in bf16. What fraction of the bf16 compute time
# does the step's compute take in fp8?

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction of the bf16 compute time
answer = 0.8 * (989.4 * 0.745) / (1978.9 * 0.525) + 0.2
# END SOLUTION
ok = check_answer("10.9", answer)
# BEGIN SOLUTION
assert ok
assert 0.5 < answer < 1                 # fp8 helps, but less than its peak's 2x and not on attention
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The linear time scales by the two achieved rates, $989.4 \times 0.745 / (1978.9 \times 0.525) =
# 0.709$, not by the peaks' 0.5; attention's does not move: $0.8 \times 0.709 + 0.2 = 0.77$ of the bf16 compute
# time, a 1.30x speed-up where the peaks promise 2x (`training_layout.predict` charges exactly these two terms).

# %% [markdown]
# ### Problem 10 — the gradients' width
# The model of Problem 1 (70B parameters, TP = 8, DP = 32, distributed optimizer) trains under NVIDIA's
# performance recipes, which keep and reduce the gradients in bf16 (`grad_reduce_in_fp32 = False`): bf16
# weights and gradients on every replica; fp32 master weights, Adam's two moments and, at the optimizer step, an
# fp32 copy of the gradients, all split over DP (Megatron's distributed optimizer). Bytes of model state per GPU?

# %%
# BEGIN SOLUTION stub: answer = ...  # bytes
answer = 70e9 / 8 * (2 + 2 + 16 / 32)
# END SOLUTION
ok = check_answer("10.10", answer)
# BEGIN SOLUTION
assert ok
state = memory.model_state_bytes_per_gpu(70e9 / 8, dp=32, zero_stage=1, grad_dtype="bf16")   # 4 + 12/DP
assert abs((state + 70e9 / 8 * 4 / 32) / answer - 1) < 1e-12                                 # + the fp32 copy
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $\frac{N}{\text{TP}}(2 + 2 + 16/\text{DP}) = 8.75\times10^9 \times 4.5 = 39.4$ GB, against
# Problem 1's 55.8 GB with fp32 gradients: the two bytes a parameter the buffer saves are held on every replica,
# unsharded, so they count in full, while the fp32 copy the optimizer needs is split over DP (with fp32
# gradients the buffer's own shard serves). The ZeRO-1 sync shrinks too, from $4 + 2$ to $2 + 2$ bytes a parameter.

# %% [markdown]
# ### Problem 11 — DualPipe's bubble
# DeepSeek-V3 trained on PP = 16 stages with DualPipe, which feeds micro-batches from both ends of the pipeline
# and pairs each forward chunk with a backward chunk. Its report gives the idle time per stage as
# $(\text{PP}/2 - 1)(T_{F\&B} + T_B - 3T_W)$, with $T_B$ the whole backward, $T_W$ its weight-gradient part and
# $T_{F\&B}$ a paired forward and backward chunk (the library's `backward_input_s` is the input-gradient part
# alone, $T_B - T_W$). Take a forward, an input-gradient and a weight-gradient chunk to cost one unit each, and
# $m = 32$ micro-batches a step. What fraction of the step is bubble?

# %%
# BEGIN SOLUTION stub: answer = ...  # fraction
answer = (16 / 2 - 1) * (3 + 2 - 3) / (32 * 3 + (16 / 2 - 1) * (3 + 2 - 3))
# END SOLUTION
ok = check_answer("10.11", answer)
# BEGIN SOLUTION
assert ok
assert abs(parallelism.pipeline_bubble_fraction(16, 32, "dualpipe") - answer) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The paired chunk is $1 + 1 + 1 = 3$ units, the whole backward 2, so a stage idles
# $7 \times (3 + 2 - 3) = 14$ units against $32 \times 3 = 96$ of work: $14/110 = 12.7\%$. 1F1B would idle
# $(\text{PP}-1)(T_F + T_B) = 15 \times 3 = 45$ units, $45/141 = 32\%$. DualPipe's other gain is not in this
# number: the all-to-all of one chunk runs under the compute of its pair.

# %% [markdown]
# ### Problem 12 — attention's backward pass
# FlashAttention-3 on an H100 (head dimension 128, 4k tokens) runs the causal forward at 579 TFLOP/s. Its paper's
# backward figure (no mask) shows 542 TFLOP/s where its unmasked forward shows 638, and it counts a backward as 2.5
# forwards of FLOPs: the kernel recomputes the scores. A training step counts attention's forward as $A$ FLOPs and
# its backward as $2A$. Take the causal backward to keep the unmasked backward's ratio to the unmasked forward. How
# many times longer does a step's attention (forward and backward) take than if the backward ran at the forward's
# rate?

# %%
# BEGIN SOLUTION stub: answer = ...  # times the time at the forward's rate
forward = 579.0
backward = forward * 542 / 638 * 2 / 2.5            # the rate the step's 2A go by
answer = (1 / forward + 2 / backward) / (3 / forward)
# END SOLUTION
ok = check_answer("10.12", answer)
# BEGIN SOLUTION
assert ok
f, b = training_layout.attention_share(4096), training_layout.attention_share(4096, backward=True)
assert abs((1 / f + 2 / b) / (3 / f) - answer) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The backward's $2A$ go by at $579 \times 542/638 \times 2/2.5 = 393$ TFLOP/s (0.40 of the
# peak): $542/638 = 0.85$ is what the backward loses to the forward at this length, and $2/2.5$ turns the paper's
# FLOP count into the step's. Attention then takes $(1/579 + 2/393)/(3/579) = 1.31$ times the forward-rate
# estimate. On Llama 3.1 8B at 8k tokens attention is about an eighth of the step's FLOPs and, at its lower rate,
# about a seventh of its compute time, so this one term lengthens the step by about 5%; at 128k tokens, where
# attention takes most of the time, by nearly a quarter.

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
# BEGIN SOLUTION stub: answer = ...  # seconds a step
C, A = 11.1, 5.0
answer = (C + A) - (C + A * 32 / 132)
# END SOLUTION
ok = check_answer("10.13", answer)
# BEGIN SOLUTION
assert ok
off = "mbskill-epoverlap-off-qwen3-30b-a3b-h100-sxm-16-bf16"
a_lib = training_layout.predicted_vs_measured([off])[0][3].terms["ep_exposed_s"]   # the library's own A
assert abs(a_lib * (1 - 32 / 132) / answer - 1) < 0.02
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Without overlap the step is $C + A$; with it, $C$ plus the compute the all-to-all's SMs take
# while it runs, $A \times 32/132$: the saving is $A(1 - 32/132) = 5.0 \times 0.758 = 3.79$ s, within about 2% of
# the measured 3.72 s, where hiding the all-to-all whole would save all 5.0. The study's profile agrees that not all
# of it hid: 36.55% of the communication time ran under compute. The seconds a step saves isolate this one term; a
# ratio of the two runs' rates would not, since it also carries the 8.6 s by which the model underprices the rest
# of the step. `training_layout.predict` does not charge the dispatcher's SMs yet.

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
# BEGIN SOLUTION stub: answer = ...  # GiB per GPU
dense, experts = 1.541e9, 28.99e9
answer = (dense * (2 + 2 + 16 / 16) + experts / 16 * (2 + 2 + 16 / 1)) / 2**30
# END SOLUTION
ok = check_answer("10.14", answer)
# BEGIN SOLUTION
assert ok
key = "mbskill-epoverlap-on-qwen3-30b-a3b-h100-sxm-16-bf16"
parts = training_layout.memory_vs_published([key])[0][4].memory_bytes
state = sum(parts[k] for k in ("weights", "gradients", "master_weights", "optimizer", "fp32 gradient shard"))
assert abs(state / 2**30 / answer - 1) < 0.005
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The non-expert parameters cost $1.541\times10^9 \times (4 + 16/16) = 7.7$ GB a GPU; the experts
# $1.812\times10^9 \times (4 + 16) = 36.2$ GB, since an expert held by one GPU alone has no replica to shard its
# optimizer state over: 43.9 GB, 40.9 GiB, two thirds of the published 62.2 GiB peak. Expert parallelism splits
# the experts' weights but leaves each expert's 16 optimizer bytes whole on its GPU: at EP16 on 16 GPUs the
# experts' state is about five sixths of the model state, their optimizer bytes alone two thirds. The rest of the
# peak is activations (about 13 GiB in the chapter's count), the fp32 logits and tensors the count leaves out.

# %% [markdown]
# ### Problem 15 — where the host binds
# The host launches a micro-batch's kernels while the GPU runs earlier ones, so launch time shows only when the
# host needs longer than the GPU. Llama 3.2 1B ($N = 1.24\times10^9$ parameters, all of them in matmuls) trains on
# one H100 without recomputation. `training_layout.kernel_launches` counts 423 kernels a micro-batch (every GEMM
# of the forward and backward, the attention kernels, the elementwise ones), and eager PyTorch takes 13.0 µs to
# launch one (NVIDIA's microbenchmark). Take the GPU to run a micro-batch's $6NT$ FLOPs at 40% of the H100's
# 989.4 TFLOP/s. Below how many tokens $T$ a micro-batch does the host need longer than the GPU?

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens a micro-batch
launches, t_launch, N = 423, 13.0e-6, 1.24e9
answer = launches * t_launch * 989.4e12 * 0.4 / (6 * N)
# END SOLUTION
ok = check_answer("10.15", answer)
# BEGIN SOLUTION
assert ok
assert training_layout.kernel_launches("llama-3.2-1b", recompute="none")["total"] == launches
bound = [training_layout.predict("llama-3.2-1b", "h100-sxm", global_batch=4, seq_len=n, dp=1,
                                 recompute="none").terms["host_exposed_s"] > 0 for n in (128, 256, 512, 1024)]
assert bound == [True, True, False, False]          # the step model crosses over between 256 and 512 tokens
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The host needs $423 \times 13.0$ µs $= 5.5$ ms a micro-batch whatever its length; the GPU
# needs $6NT/(0.4 \times 989.4\times10^{12})$, $18.8$ µs a token. They meet at $T \approx 290$ tokens: shorter
# micro-batches leave the GPU waiting on the host. `predict`, pricing each GEMM at its own shape's measured share
# (lower than 40% for short micro-batches, which keeps the GPU busy longer), puts the crossing between 256 and 512
# tokens. Pretraining micro-batches hold thousands of tokens, so the host hides; a small model fine-tuned on short
# sequences, or an MoE layer's many small kernels on a fast chip, is where it binds and where CUDA graphs pay.
