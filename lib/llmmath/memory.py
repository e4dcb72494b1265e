"""Bytes held in accelerator memory: training activations per layer, and the KV cache's trade.

Activation accounting follows Korthikanti et al., "Reducing Activation
Recomputation in Large Transformer Models" (MLSys 2023, arXiv:2205.05198),
section 4: for a GPT-style layer (attention + 4h GeLU MLP, two LayerNorms,
dropout), 16-bit activations and 1-byte dropout masks, the bytes a layer must
keep for its backward pass are

=====================================  =====================================
no parallelism, no recomputation       ``s b h (34 + 5 a s / h)``
tensor parallel ``t``                  ``s b h (10 + 24/t + 5 a s / (h t))``
tensor + sequence parallel ``t``       ``s b h (34/t + 5 a s / (h t))``
selective recomputation (attention)    drops the ``5 a s / h`` term
full recomputation                     ``2 s b h`` (the layer's input only; ``/t`` with SP)
=====================================  =====================================

with ``s`` the sequence length, ``b`` the micro-batch, ``h`` the hidden size and
``a`` the number of attention heads. (Of the 34: attention 11 s b h, MLP 19 s b h,
LayerNorms 4 s b h; the 5 a s^2 b: softmax output 2, dropout mask 1, dropout
output 2 bytes per score.)

The same rule, "keep each operation's input in 16 bits", is extended by
:func:`activation_bytes_per_layer`'s keyword arguments to grouped-query attention
(K and V are ``n_kv_heads * head_dim`` wide, not ``h``), to any MLP width, to a
gated (SwiGLU) MLP (the fused activation keeps its two inputs, gate and up, and
the down projection its input: ``6 d_ff`` bytes per token instead of the GeLU
MLP's ``4 d_ff``) and to models trained without dropout (no masks; the score
matrix is kept once, 2 bytes per score).

Model state (weights, gradients, fp32 master weights, optimizer moments) is
:func:`model_state_bytes_per_gpu`, with the ZeRO stages of Rajbhandari et al.
(SC 2020, arXiv:1910.02054) and Megatron-LM's distributed optimizer.
"""

from __future__ import annotations

import numpy as np

from . import hardware, models
from ._validate import (broadcast, finite_result, flag, in_range, non_negative, positive, positive_int, result, scalar,
                        whole)
from .hardware import default_compute_dtype
from .units import dtype_bytes

__all__ = ["activation_bytes_per_layer", "model_state_parts", "model_state_bytes_per_gpu", "OPTIMIZER_STATE_BYTES",
           "pipeline_activation_bytes", "kv_read_vs_recompute_s", "MEMORY_TIERS", "tier_drain_s", "tier_for_hold",
           "kv_tier_read_s"]

RECOMPUTE_MODES = ("none", "selective", "full")


@finite_result
def activation_bytes_per_layer(seq_len, batch, d_model, n_heads, tensor_parallel: int = 1,
                               sequence_parallel: bool = False, recompute: str = "none", *,
                               n_kv_heads: int | None = None, head_dim: int | None = None, d_ff: int | None = None,
                               gated: bool = False, dropout: bool = True):
    """Bytes of activations one transformer layer keeps for the backward pass (Korthikanti et al. 2022).

    With the defaults (``n_kv_heads = n_heads``, ``head_dim = h / a``, ``d_ff = 4 h``, GeLU,
    dropout) this is the paper's ``s b h (34 + 5 a s / h)`` and its tensor/sequence-parallel
    and recompute variants (module docstring). Per token, in bytes, the layer keeps:

    * the two norms' inputs, ``2 h + 2 h`` (split over ``t`` only with sequence parallelism);
    * attention: its input ``2 h`` and output dropout mask ``h`` (split only with SP); Q, K, V
      (``2 q + 2 kv + 2 kv`` with ``q = a d_head``, ``kv = a_kv d_head``) and the output
      projection's input ``2 q`` (split over ``t``); the scores, ``5 a s`` per token with
      dropout (``2 a s`` without), split over ``t``, dropped by selective recomputation;
    * MLP: its input ``2 h`` and dropout mask ``h`` (split only with SP); the activation's input
      and output, ``4 d_ff`` (GeLU) or ``6 d_ff`` (gated: gate, up, and their product), split over ``t``.

    Without dropout the two ``h`` masks vanish. Full recomputation keeps only the layer's input
    ``2 s b h`` (``/ t`` with SP). For Llama 3.1 405B (GQA 128/8 heads, SwiGLU ``d_ff = 3.25 h``,
    no dropout) the ``34`` becomes ``31.75``.

    Args:
        seq_len: s, tokens per sequence held by this GPU (scalar or array).
        batch: b, sequences per micro-batch (scalar or array).
        d_model: h, hidden size.
        n_heads: a, attention (query) heads.
        tensor_parallel: t, the tensor-parallel degree (1 = none); bytes are per GPU.
        sequence_parallel: shard the norm/dropout activations over the t GPUs too.
        recompute: ``"none"`` (default), ``"selective"`` (recompute the attention core:
            drops the score term) or ``"full"`` (keep only each layer's input).
        n_kv_heads: key/value heads (GQA; default ``n_heads``).
        head_dim: width of one head (default ``d_model / n_heads``).
        d_ff: MLP inner width (default ``4 d_model``).
        gated: a gated MLP (SwiGLU: three matrices) instead of GeLU's two.
        dropout: the model trains with dropout (GPT-3, the paper's setting); False for Llama-style models.

    Returns:
        bytes per GPU, float or an array broadcast over ``seq_len`` and ``batch``.

    Raises:
        ValueError: non-positive sizes, unknown ``recompute`` (allowed: none, selective, full),
            ``n_kv_heads`` not dividing ``n_heads``, seq_len and batch shapes that do not broadcast.
        TypeError: a non-boolean ``sequence_parallel``, ``gated`` or ``dropout``; a boolean where a size is expected.
    """
    if recompute not in RECOMPUTE_MODES:
        raise ValueError(f"recompute must be one of {RECOMPUTE_MODES}, got {recompute!r}")
    s, b = broadcast(seq_len=positive("seq_len", seq_len), batch=positive("batch", batch))
    h, a = positive_int("d_model", d_model), positive_int("n_heads", n_heads)
    t = positive_int("tensor_parallel", tensor_parallel)
    sequence_parallel = flag("sequence_parallel", sequence_parallel)
    gated, dropout = flag("gated", gated), flag("dropout", dropout)
    a_kv = a if n_kv_heads is None else positive_int("n_kv_heads", n_kv_heads)
    if a % a_kv:
        raise ValueError(f"n_kv_heads={a_kv} must divide n_heads={a} (grouped-query attention); "
                         f"allowed: a divisor of {a}")
    d_head = h / a if head_dim is None else positive_int("head_dim", head_dim)
    f = 4 * h if d_ff is None else positive_int("d_ff", d_ff)
    sbh = s * b * h
    if recompute == "full":
        return result(2.0 * sbh / (t if sequence_parallel else 1))
    q, kv = a * d_head, a_kv * d_head
    mask = 1.0 if dropout else 0.0
    outside = (4.0 * h + 2.0 * h + mask * h + 2.0 * h + mask * h)          # norms, block inputs, dropout masks
    inside = (4.0 * q + 4.0 * kv) + (6.0 if gated else 4.0) * f              # Q, K, V, proj input; MLP activation
    per_token = (outside / t if sequence_parallel else outside) + inside / t
    scores = 0.0 if recompute == "selective" else (5.0 if dropout else 2.0) * a * s / t
    return result(s * b * (per_token + scores))


#: Optimizer state per parameter, bytes (fp32): Adam/AdamW keep two moments (m, v); SGD with momentum one; plain SGD none.
OPTIMIZER_STATE_BYTES = {"adam": 8.0, "adamw": 8.0, "sgd_momentum": 4.0, "sgd": 0.0}


@finite_result
def model_state_parts(total_params, *, dp=1, zero_stage: int = 0, weight_dtype="bf16", grad_dtype="fp32",
                      master_weights: bool = True, optimizer: str = "adam", fp32_grad_copy: bool = False,
                      gathered_params=0, gathered_bytes_per_param=None) -> dict:
    """Bytes of model state one GPU holds, by kind: weights, gradients, fp32 master weights, optimizer state.

    ``total_params`` are the parameters of one model-parallel shard (after TP/PP/EP);
    ``dp`` GPUs hold replicas of it. Per parameter: weights ``b_w``, gradients ``b_g``,
    master weights 4 bytes (fp32, kept when ``master_weights``), optimizer state
    :data:`OPTIMIZER_STATE_BYTES` (Adam: 8). ZeRO (Rajbhandari et al. 2020, section 5)
    shards over the ``dp`` replicas: stage 1 the optimizer state and master weights,
    stage 2 also the gradients, stage 3 (= FSDP full sharding) also the weights.

    ``fp32_grad_copy``: an fp32 copy of the gradients besides the 16-bit ones, as DeepSpeed's ZeRO-1/2 optimizer and
    Megatron's distributed optimizer with a bf16 gradient buffer keep it, for the partition each rank updates (4 more
    bytes per parameter, sharded from stage 1 on, like the optimizer state; counted with the gradients).
    ``gathered_params`` (ZeRO-3 only): the parameters of the largest layer, gathered whole while it runs, held besides
    the shards: ``gathered_bytes_per_param`` each (default twice the weights' width: the layer's weights and its
    gradient before the reduce-scatter, both at that width; for bf16 that is DeepSpeed's 4 bytes).

    The published conventions, all reproduced by this function (N: data-parallel GPUs):

    ============================================  ==========================  ==================
    convention                                    arguments                   bytes per parameter
    ============================================  ==========================  ==================
    ZeRO paper, mixed-precision Adam              bf16/fp16 grads, stage 0    2 + 2 + 12 = 16
    ZeRO-1 / ZeRO-2 / ZeRO-3 (their Figure 1)     bf16 grads, stage 1/2/3     4 + 12/N, 2 + 14/N, 16/N
    Megatron-LM, bf16 params, fp32 grads          fp32 grads, stage 0         2 + 4 + 12 = 18
    Megatron distributed optimizer                fp32 grads, stage 1         6 + 12/d
    Megatron, fp32 params and grads               fp32, no master             16; distributed 8 + 8/d
    ZeRO-3 with fp32 gradients                    fp32 grads, stage 3         18/N
    Megatron distributed optimizer, bf16 buffer   bf16 grads, fp32_grad_copy, 4 + 16/N
                                                  stage 1
    DeepSpeed's ZeRO-2 estimator                  bf16 grads, fp32_grad_copy, 2 + 18/N
    (``estimate_zero2_model_states_mem_needs``,   stage 2
    no offload)
    DeepSpeed's ZeRO-3 estimator                  fp32 grads, stage 3,        18/N, plus 4 bytes
    (``estimate_zero3_model_states_mem_needs``,   gathered_params = the       per parameter of the
    no offload)                                   largest layer's             largest layer
    ============================================  ==========================  ==================

    (DeepSpeed's estimators, ``deepspeed/runtime/zero/stage_1_and_2.py`` and ``stage3.py``; the
    ZeRO-2 one comments its 18 as 2 + 4 bytes of gradients, 4 of fp32 weights, 8 of Adam.)

    (The ZeRO paper keeps fp16 gradients; Megatron-LM accumulates gradients in fp32, its
    distributed optimizer shards the master weights and Adam moments but keeps the full
    gradient buffer: docs ``megatron/core/distributed/distrib_optimizer.md``. The difference
    between "16 bytes per parameter" and "18" is exactly the gradients' dtype.)

    Returns:
        dict ``weights``, ``gradients``, ``master_weights``, ``optimizer`` (and ``gathered`` when
        ``gathered_params`` is given): bytes per GPU, floats or arrays broadcast over
        ``total_params``, ``dp`` and ``gathered_params``.

    Raises:
        ValueError: non-positive ``total_params``; ``dp`` not a whole number >= 1; ``zero_stage``
            not 0-3; ``master_weights`` with fp32 weights (they are their own master copy:
            pass ``master_weights=False``); unknown ``optimizer``; ``gathered_params`` below 0,
            or above 0 at a stage other than 3 (where every weight is held whole);
            ``gathered_bytes_per_param`` <= 0.
        KeyError: unknown dtype.
        TypeError: a non-boolean ``master_weights`` or ``fp32_grad_copy``.
    """
    if zero_stage not in (0, 1, 2, 3) or isinstance(zero_stage, bool):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    if optimizer not in OPTIMIZER_STATE_BYTES:
        raise ValueError(f"optimizer must be one of {tuple(OPTIMIZER_STATE_BYTES)}, got {optimizer!r}")
    master_weights = flag("master_weights", master_weights)
    b_w, b_g = dtype_bytes(weight_dtype), dtype_bytes(grad_dtype)
    b_copy = 4.0 if flag("fp32_grad_copy", fp32_grad_copy) else 0.0     # kept for the shard a rank updates
    if master_weights and b_w >= 4:
        raise ValueError(f"master_weights=True with weight_dtype={weight_dtype!r}: fp32 weights are their own "
                         f"master copy; allowed: master_weights=False, or 16-bit (or smaller) weights")
    gathered = non_negative("gathered_params", gathered_params)
    if np.any(gathered > 0) and zero_stage != 3:
        raise ValueError(f"gathered_params applies to ZeRO-3 (zero_stage=3), where a layer's weights are gathered "
                         f"while it runs; at zero_stage={zero_stage} every weight is held whole, got "
                         f"gathered_params={gathered_params!r}")
    b_gathered = 2.0 * b_w if gathered_bytes_per_param is None else positive("gathered_bytes_per_param",
                                                                             gathered_bytes_per_param)
    N, d, G = broadcast(total_params=positive("total_params", total_params), dp=whole("dp", dp, 1),
                        gathered_params=gathered)
    shard = lambda stage: np.where(zero_stage >= stage, d, 1.0)  # noqa: E731
    parts = {"weights": result(N * b_w / shard(3)),
             "gradients": result(N * b_g / shard(2) + N * b_copy / shard(1)),
             "master_weights": result(N * (4.0 if master_weights else 0.0) / shard(1)),
             "optimizer": result(N * OPTIMIZER_STATE_BYTES[optimizer] / shard(1))}
    if np.any(G > 0):
        parts["gathered"] = result(G * b_gathered + 0.0 * N)
    return parts


@finite_result
def model_state_bytes_per_gpu(total_params, *, dp=1, zero_stage: int = 0, weight_dtype="bf16", grad_dtype="fp32",
                              master_weights: bool = True, optimizer: str = "adam", fp32_grad_copy: bool = False,
                              gathered_params=0, gathered_bytes_per_param=None):
    """Bytes of weights + gradients + master weights + optimizer state on one GPU (sum of :func:`model_state_parts`).

    ``bf16`` weights, ``fp32`` gradients, fp32 master weights and Adam (the defaults) are
    Megatron-LM's 18 bytes per parameter; ``zero_stage=1`` is its distributed optimizer,
    ``6 + 12/dp``; ``grad_dtype="bf16"`` gives the ZeRO paper's 16 and its stages; DeepSpeed's
    estimators are ``fp32_grad_copy=True`` (ZeRO-2) and ``gathered_params`` (ZeRO-3: the largest
    layer, gathered in flight). See :func:`model_state_parts` for the table of conventions,
    arguments and errors.
    """
    parts = model_state_parts(total_params, dp=dp, zero_stage=zero_stage, weight_dtype=weight_dtype,
                              grad_dtype=grad_dtype, master_weights=master_weights, optimizer=optimizer,
                              fp32_grad_copy=fp32_grad_copy, gathered_params=gathered_params,
                              gathered_bytes_per_param=gathered_bytes_per_param)
    return result(sum(np.asarray(v) for v in parts.values()))


PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zero-bubble", "zb-v", "dualpipe")


@finite_result
def pipeline_activation_bytes(bytes_per_microbatch_layer, layers_per_stage, stages, microbatches,
                              schedule: str = "1f1b", chunks: int = 1, stage: int = 0):
    """Activation bytes a pipeline stage holds at its peak: micro-batches in flight x layers x bytes per layer.

    ``bytes_per_microbatch_layer``: one layer's activations for one micro-batch
    (:func:`activation_bytes_per_layer`). Micro-batches whose forward has run and whose
    backward has not, on stage ``s`` (0 = first) of ``p``:

    * ``gpipe``: all ``m`` (every forward runs before any backward; Huang et al. 2019);
    * ``1f1b``: ``min(p - s, m)``: ``p`` on the first stage (Narayanan et al. 2021, section 2.2);
    * ``interleaved`` with ``v`` chunks per GPU: the first stage holds ``p + (p - 1)/v``
      micro-batches' worth of its layers, i.e. 1F1B's ``p`` times ``1 + (p - 1)/(p v)``
      (Korthikanti et al. 2022, section 4.2.3); other stages: ``min(p - s, m)`` times the same factor;
    * ``zero-bubble`` (ZB-H1 of Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the
      same peak as 1F1B, ``min(p - s, m)``;
    * ``zb-v`` (section 6 of the same paper; PyTorch's order, :func:`llmmath.parallelism.zbv_orders`): GPU ``s``
      runs ``min(2p - s - 1, m)`` forwards of its first chunk and ``min(s + 1, m)`` of its second before its first
      weight gradient frees one, each chunk half a stage: ``(min(2p - s - 1, m) + min(s + 1, m)) / 2``, ``p`` on
      every GPU once ``m >= 2p - 1`` (1F1B's first stage, held by all);
    * ``dualpipe`` (DeepSeek-V3 report, Table 2): ``p + 1`` micro-batches on every stage (``min(p + 1, m)``).

    So under 1F1B the first stage holds ``p x (L / p) = L`` layers' activations for one
    micro-batch, whatever the pipeline depth: pipelining does not shrink the activations of
    the first stage, only the weights.

    Returns:
        bytes (float or array, broadcast over the numeric arguments).

    Raises:
        ValueError: unknown schedule (allowed: gpipe, 1f1b, interleaved, zero-bubble, zb-v, dualpipe); counts
            not whole numbers >= 1; ``stage`` not in ``0..p-1``; ``chunks`` > 1 with a schedule
            other than interleaved.
    """
    if schedule not in PIPELINE_SCHEDULES:
        raise ValueError(f"schedule must be one of {PIPELINE_SCHEDULES}, got {schedule!r}")
    v = positive_int("chunks", chunks)
    if v > 1 and schedule != "interleaved":
        raise ValueError(f"chunks={v} applies only to schedule='interleaved', got schedule={schedule!r}")
    A, Ls, p, m = broadcast(bytes_per_microbatch_layer=positive("bytes_per_microbatch_layer", bytes_per_microbatch_layer),
                            layers_per_stage=positive("layers_per_stage", layers_per_stage),
                            stages=whole("stages", stages, 1), microbatches=whole("microbatches", microbatches, 1))
    s = np.asarray(whole("stage", stage, 0))
    if np.any(s >= p):
        raise ValueError(f"stage must be in 0..stages-1 (0 = first), got stage={stage!r} with stages={stages!r}")
    if schedule == "gpipe":
        held = m
    elif schedule == "dualpipe":
        held = np.minimum(p + 1, m) + 0 * s
    elif schedule == "zb-v":
        held = (np.minimum(2 * p - s - 1, m) + np.minimum(s + 1, m)) / 2
    else:
        held = np.minimum(p - s, m)
        if schedule == "interleaved":
            held = held * (1.0 + (p - 1) / (p * v))
    return result(A * Ls * held)


@finite_result
def kv_read_vs_recompute_s(model, chip, context=0, weight_dtype: str = "bf16", kv_dtype: str = "bf16"):
    """``(read_s, recompute_s)`` for one cached token, on one chip at its roofline.

    Reading the token's K and V back costs ``beta / W`` (beta: KV bytes per token,
    all layers). Recomputing them needs the token's hidden state at every layer,
    i.e. a forward pass of that token: ``(2 N_mm + a L) / F`` at full compute
    efficiency (a batch of such tokens amortizes the weight reads; a lone token
    would also pay them). Recomputing cached tokens is prefill, so latent attention
    (MLA) is counted in its non-absorbed form (DeepSeek-V3: 81,920 FLOPs per position
    per layer, not the decode form's 278,528). Broadcasts over ``context``.
    """
    m, c = models.get(model), hardware.get(chip)
    F = c.flops_per_s(default_compute_dtype(c, weight_dtype))
    read = m.kv_bytes_per_token(kv_dtype) / c.hbm_bytes_per_s
    recompute = (2.0 * m.matmul_params_per_token + np.asarray(m.attention_flops_per_token(context, absorbed=False))) / F
    read, recompute = np.broadcast_arrays(read, recompute)
    return result(read), result(recompute)


#: Memory tiers a KV cache can be held in: capacity (bytes) and read bandwidth (bytes/s) of one device
#: or socket, with their sources. Drain time = capacity / bandwidth: how long reading the whole tier takes.
MEMORY_TIERS = {
    "HBM (H100 SXM)": dict(capacity_bytes=80e9, bytes_per_s=3.35e12,
                           source="NVIDIA H100 datasheet: 80 GB HBM3, 3.35 TB/s (the course's hardware catalog)"),
    "DDR5 (8 x 64 GB DIMMs)": dict(capacity_bytes=512e9, bytes_per_s=8 * 38.4e9,
                                   source="JEDEC DDR5-4800: 4,800 MT/s x 8 bytes = 38.4 GB/s per channel, "
                                          "8 channels per socket, one 64 GB RDIMM each"),
    "NVMe flash (PCIe 4, 7.68 TB)": dict(capacity_bytes=7.68e12, bytes_per_s=6.5e9,
                                         source="Samsung PM9A3 U.2 7.68 TB: up to 6,500 MB/s sequential read, "
                                                "Samsung's launch specification as reported by heise online and "
                                                "ComputerBase, May 2020"),
    "hard disk (20 TB)": dict(capacity_bytes=20e12, bytes_per_s=285e6,
                              source="Seagate Exos X20 20 TB: 285 MB/s maximum sustained transfer rate (Seagate's "
                                     "specification, as reported by Blocks & Files, March 2022 and October 2023)"),
}


def _tier(tier: str) -> dict:
    if tier not in MEMORY_TIERS:
        raise KeyError(f"no memory tier {tier!r}; known: {', '.join(MEMORY_TIERS)}")
    return MEMORY_TIERS[tier]


def tier_drain_s(tier: str) -> float:
    """Seconds to read a whole tier once: ``capacity / bandwidth`` (HBM ~24 ms ... disk ~19 h).

    Raises:
        KeyError: unknown tier (the message lists :data:`MEMORY_TIERS`).
    """
    t = _tier(tier)
    return t["capacity_bytes"] / t["bytes_per_s"]


def tier_for_hold(hold_s) -> str:
    """The speaker's rule (1:49-2:03): hold data in the fastest tier whose drain time is at least the hold time.

    Data held for ``hold_s`` seconds in a tier that drains faster would leave the tier's
    bandwidth idle while its capacity is full; the slowest tier (disk) takes anything longer.

    Raises:
        ValueError: ``hold_s`` not > 0 (one number).
    """
    h = float(positive("hold_s", scalar("hold_s", hold_s)))
    for name in MEMORY_TIERS:
        if tier_drain_s(name) >= h:
            return name
    return list(MEMORY_TIERS)[-1]


def kv_tier_read_s(model, tier: str, kv_dtype: str = "bf16") -> float:
    """Seconds to read one cached token's K and V (``beta`` bytes, all layers) back from ``tier``: ``beta / W_tier``.

    Compare with the recompute time of :func:`kv_read_vs_recompute_s` (claim 40).

    Raises:
        KeyError: unknown model, tier or dtype.
    """
    return float(models.get(model).kv_bytes_per_token(kv_dtype) / _tier(tier)["bytes_per_s"])
