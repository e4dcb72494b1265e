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
from ._validate import broadcast, finite_result, flag, positive, positive_int, result
from .hardware import default_compute_dtype

__all__ = ["activation_bytes_per_layer", "kv_read_vs_recompute_s"]

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
