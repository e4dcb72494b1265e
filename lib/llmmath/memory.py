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
"""

from __future__ import annotations

import numpy as np

from . import hardware, models
from ._validate import broadcast, finite_result, flag, positive, positive_int, result, scalar
from .hardware import default_compute_dtype

__all__ = ["activation_bytes_per_layer", "kv_read_vs_recompute_s", "MEMORY_TIERS", "tier_drain_s", "tier_for_hold",
           "kv_tier_read_s"]

RECOMPUTE_MODES = ("none", "selective", "full")


@finite_result
def activation_bytes_per_layer(seq_len, batch, d_model, n_heads, tensor_parallel: int = 1,
                               sequence_parallel: bool = False, recompute: str = "none"):
    """Bytes of activations one transformer layer keeps for the backward pass (Korthikanti et al. 2022).

    Args:
        seq_len: s, tokens per sequence (scalar or array).
        batch: b, sequences per micro-batch (scalar or array).
        d_model: h, hidden size.
        n_heads: a, attention heads.
        tensor_parallel: t, the tensor-parallel degree (1 = none); bytes are per GPU.
        sequence_parallel: shard the LayerNorm/dropout activations over the t GPUs too.
        recompute: ``"none"`` (default), ``"selective"`` (recompute the attention core:
            drops the ``5 a s^2 b`` term) or ``"full"`` (keep only each layer's input).

    Raises:
        ValueError: non-positive sizes, unknown ``recompute`` (allowed: none, selective, full),
            seq_len and batch shapes that do not broadcast.
        TypeError: a non-boolean ``sequence_parallel``; a boolean where a size is expected.
    """
    if recompute not in RECOMPUTE_MODES:
        raise ValueError(f"recompute must be one of {RECOMPUTE_MODES}, got {recompute!r}")
    s, b = broadcast(seq_len=positive("seq_len", seq_len), batch=positive("batch", batch))
    h, a = positive_int("d_model", d_model), positive_int("n_heads", n_heads)
    t = positive_int("tensor_parallel", tensor_parallel)
    sequence_parallel = flag("sequence_parallel", sequence_parallel)
    sbh = s * b * h
    if recompute == "full":
        return result(2.0 * sbh / (t if sequence_parallel else 1))
    linear = 34.0 / t if sequence_parallel else 10.0 + 24.0 / t
    scores = 0.0 if recompute == "selective" else 5.0 * a * s / (h * t)
    return result(sbh * (linear + scores))


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
    "NVMe flash (PCIe 4, 7.68 TB)": dict(capacity_bytes=7.68e12, bytes_per_s=6.9e9,
                                         source="Samsung PM9A3 U.2 7.68 TB datasheet: 6,900 MB/s sequential read "
                                                "(datasheet figure, not re-verified by the course)"),
    "hard disk (20 TB)": dict(capacity_bytes=20e12, bytes_per_s=285e6,
                              source="Seagate Exos X20 20 TB datasheet: 285 MB/s max sustained transfer "
                                     "(datasheet figure, not re-verified by the course)"),
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
