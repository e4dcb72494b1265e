"""Decode attention as arithmetic and bytes: per variant, per cached token, and sparse.

In decode, one new query token per sequence attends over the ``L`` tokens the
sequence has cached. Per layer and per cached token (one multiply-add = 2 FLOPs,
``b`` = bytes per cached element):

=================  ================================================  ==========================  =====================
variant            FLOPs per cached token                            bytes per cached token      intensity (FLOP/byte)
=================  ================================================  ==========================  =====================
MHA / GQA / MQA    ``4 n_h h`` (q.k and p.v)                         ``2 n_kv h b`` (K and V)    ``2 G / b``, G = n_h/n_kv
MLA, absorbed      ``2 n_h (2 r_kv + r_rope)``                       ``(r_kv + r_rope) b``       ``2 n_h (2 r_kv + r_rope) / (b (r_kv + r_rope))``
MLA, recomputed    ``2 r_kv n_h (h_nope + h_v)`` + ``2 n_h (h_qk + h_v)``  ``(r_kv + r_rope) b``  thousands
MLA, expanded      ``2 n_h (h_qk + h_v)``                             ``n_h (h_qk + h_v) b``      ``2 / b``
=================  ================================================  ==========================  =====================

* GQA: ``G = n_h / n_kv`` query heads share each cached K/V head, so each byte
  read serves ``G`` query heads: intensity ``2G/b`` (``G`` FLOP/byte at bf16).
  MHA is ``G = 1``, MQA is ``n_kv = 1``. Batching does not help: every sequence
  has its own cache (the JAX scaling book, "All about transformer inference",
  section on attention in generation; FlashDecoding, Dao et al. 2023).
* MLA (DeepSeek-V2, arXiv:2405.04434, section 2.1; DeepSeek-V3, arXiv:2412.19437,
  section 2.1.1) caches one latent ``c_KV`` of ``r_kv = kv_lora_rank`` values and
  one shared rope key of ``r_rope`` values per token and layer. With the
  up-projections **absorbed** into the query and the output (V2, section 2.1.3),
  all ``n_h`` heads score against and sum over the same latent, so each cached
  byte serves ``n_h`` heads: intensity in the hundreds. **Recomputed** (not
  absorbed): the cache stays small but K and V are re-expanded from the latent
  every step, ``2 r_kv n_h (h_nope + h_v)`` FLOPs per cached token. **Expanded**:
  not absorbed and per-head K and V cached, like MHA.

Sparse attention changes how many cached tokens a step reads (the byte models
further down, with the published parameters of NSA, DSA, MoBA and Quest in
:data:`PUBLISHED`).

All functions are pure, broadcast over NumPy arrays, take SI units (bytes,
FLOPs, seconds) and return floats for scalar input. Array arguments whose shapes
do not broadcast together, booleans given as numbers, and results beyond
float64 are refused with a ValueError or TypeError naming the arguments.
"""

from __future__ import annotations

import numpy as np

from . import hardware, models
from ._validate import at_least, broadcast, finite_result, flag, non_negative, positive, positive_int, result
from .hardware import default_compute_dtype
from .units import dtype_bytes

__all__ = [
    "VARIANTS", "variants", "default_variant",
    "flops_per_cached_token", "bytes_per_cached_token", "arithmetic_intensity",
    "decode_attention_flops", "decode_attention_bytes", "memory_bound_margin",
    "kv_crossover_context", "crossover_context_at_batch",
    "dense_kv_bytes", "block_topk_kv_bytes", "block_topk_optimal", "indexer_topk_kv_bytes",
    "nsa_kv_bytes", "quest_kv_bytes", "moba_kv_bytes", "loglog_slope", "PUBLISHED",
    "mean_key_bytes", "kv_read_time_s",
]

VARIANTS = ("MHA", "GQA", "MQA", "MLA-absorbed", "MLA-recomputed", "MLA-expanded")
_STANDARD = ("MHA", "GQA", "MQA")
_MLA = ("MLA-absorbed", "MLA-recomputed", "MLA-expanded")


def variants(model) -> tuple[str, ...]:
    """The variants a model's attention can be evaluated as.

    Standard attention (MHA/GQA/MQA models): ``MHA`` (every query head with its
    own K/V), ``GQA`` (the model's own ``n_kv_heads``), ``MQA`` (one K/V head).
    MLA models: ``MLA-absorbed``, ``MLA-recomputed``, ``MLA-expanded``.
    """
    return _MLA if models.get(model).is_mla else _STANDARD


def default_variant(model) -> str:
    """How the model is normally served: its own kind, and absorbed MLA for MLA models."""
    m = models.get(model)
    return "MLA-absorbed" if m.is_mla else m.attention_kind


def _variant(m, variant):
    v = default_variant(m) if variant is None else variant
    allowed = variants(m)
    if v not in allowed:
        raise ValueError(f"variant must be one of {list(allowed)} for {m.key} ({m.attention_kind}), got {variant!r}")
    return v


def _n_kv(m, v):
    return {"MHA": m.n_heads, "GQA": m.n_kv_heads, "MQA": 1}[v]


def flops_per_cached_token(model, variant: str | None = None) -> float:
    """FLOPs one new query token spends per cached token, per layer (see the module table).

    Args:
        model: catalog name or :class:`~llmmath.models.Model`.
        variant: one of :func:`variants` (default :func:`default_variant`).

    Raises:
        KeyError: unknown model. ValueError: a variant the model does not have.
    """
    m = models.get(model)
    v = _variant(m, variant)
    if v in _STANDARD:
        return float(4 * m.n_heads * m.head_dim)
    nh, r, rope = m.n_heads, m.kv_lora_rank, m.qk_rope_head_dim
    h_qk, h_v = m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim
    if v == "MLA-absorbed":
        return float(2 * nh * (2 * r + rope))
    attend = 2 * nh * (h_qk + h_v)
    if v == "MLA-recomputed":
        return float(2 * r * nh * (m.qk_nope_head_dim + h_v) + attend)
    return float(attend)


def bytes_per_cached_token(model, kv_dtype: str = "bf16", variant: str | None = None) -> float:
    """Cache bytes one decode step reads per cached token, per layer.

    Standard: ``2 n_kv h b``. MLA absorbed or recomputed: ``(r_kv + r_rope) b``
    (the latent and the rope key). MLA expanded: ``n_h (h_qk + h_v) b``.
    Times ``n_layers`` this is the model's beta for the native variant
    (:meth:`~llmmath.models.Model.kv_bytes_per_token`).

    Raises:
        KeyError: unknown model or dtype. ValueError: a variant the model does not have.
    """
    m = models.get(model)
    v = _variant(m, variant)
    b = dtype_bytes(kv_dtype)
    if v in _STANDARD:
        return float(2 * _n_kv(m, v) * m.head_dim * b)
    if v == "MLA-expanded":
        return float(m.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) * b)
    return float((m.kv_lora_rank + m.qk_rope_head_dim) * b)


@finite_result
def arithmetic_intensity(model, kv_dtype: str = "bf16", variant: str | None = None, heads_split: int = 1) -> float:
    """FLOPs per cache byte of decode attention, FLOP/byte.

    ``heads_split``: the query heads are divided over this many chips (tensor
    parallelism over heads). Each chip still reads its K/V heads -- for MLA the
    *whole* latent, which every head needs -- but does ``1/heads_split`` of the
    FLOPs, so MLA's intensity falls by ``heads_split``; for GQA the K/V heads
    are split too (as long as ``heads_split <= n_kv``) and the intensity stays ``2G/b``.

    Raises:
        ValueError: ``heads_split`` < 1 or not a divisor of the query heads; a bad variant.
    """
    m = models.get(model)
    v = _variant(m, variant)
    t = positive_int("heads_split", heads_split)
    if m.n_heads % t:
        raise ValueError(f"heads_split must divide n_heads={m.n_heads} of {m.key}, got {t}")
    f = flops_per_cached_token(m, v) / t
    by = bytes_per_cached_token(m, kv_dtype, v)
    if v in _STANDARD:
        by = by / min(t, _n_kv(m, v))  # K/V heads are split too, until there is one per chip
    elif v == "MLA-expanded":
        by = by / t
    return f / by


@finite_result
def decode_attention_flops(model, context, variant: str | None = None):
    """FLOPs of one sequence's decode attention over ``context`` cached tokens, all layers.

    ``flops_per_cached_token * (n_full L + n_window min(L, w))`` (``n_layers L`` without
    windowed layers; :meth:`Model.cached_positions`). Broadcasts over ``context``.
    For the native variant this equals :meth:`Model.attention_flops_per_token`.
    """
    m = models.get(model)
    L = non_negative("context", context)
    return result(flops_per_cached_token(m, variant) * m.cached_positions(L))


@finite_result
def decode_attention_bytes(model, context, kv_dtype: str = "bf16", variant: str | None = None):
    """Cache bytes one sequence's decode step reads over ``context`` tokens, all layers (bytes).

    ``L beta`` without windowed layers; a windowed layer reads at most its ``w`` positions
    (:meth:`Model.cached_positions`). Broadcasts over ``context``.
    """
    m = models.get(model)
    L = non_negative("context", context)
    return result(bytes_per_cached_token(m, kv_dtype, variant) * m.cached_positions(L))


@finite_result
def memory_bound_margin(model, chip, kv_dtype: str = "bf16", variant: str | None = None,
                        compute_dtype: str = "bf16", heads_split: int = 1) -> float:
    """The chip's ridge F/W divided by decode attention's intensity.

    > 1: attention is memory-bound by that factor (the KV reads take that many
    times longer than the arithmetic); < 1: compute-bound.

    Raises:
        KeyError: unknown model, chip, dtype, or a chip without ``compute_dtype``.
    """
    c = hardware.get(chip)
    return c.balance_flops_per_byte(compute_dtype) / arithmetic_intensity(model, kv_dtype, variant, heads_split)


def _slopes(model, chip, weight_dtype, kv_dtype, compute_dtype):
    m, c = models.get(model), hardware.get(chip)
    F = c.flops_per_s(compute_dtype or default_compute_dtype(c, weight_dtype))
    W = c.hbm_bytes_per_s
    beta = m.kv_bytes_per_token(kv_dtype)
    a = m.attention_flops_per_token(1.0)
    return m, c, F, W, beta, a


@finite_result(allow_inf=True)
def kv_crossover_context(model, chip, kv_dtype: str = "bf16", weight_dtype: str = "bf16", compute_dtype=None) -> float:
    """L*: the context at which one more sequence adds as much KV-read time as compute time.

    Per sequence in a decode step the compute is ``(2 N_mm + a L) / F`` and the
    KV read ``L beta / W``. They are equal at::

        L* = 2 N_mm / (F beta / W - a)

    Above L* the KV line is steeper than the compute line, so no batch makes the
    step compute-bound (the weights only add memory time). It does not depend on
    the batch. Returns ``inf`` when ``F beta / W <= a``: attention's own
    intensity ``a / beta`` is above the chip's ridge (absorbed MLA on some chips),
    and longer context never makes the step memory-bound.
    ``F`` is the chip's peak at ``compute_dtype`` (default: ``weight_dtype`` if native).

    Raises:
        KeyError: unknown model, chip or dtype.
    """
    m, c, F, W, beta, a = _slopes(model, chip, weight_dtype, kv_dtype, compute_dtype)
    denom = F * beta / W - a
    return float(2.0 * m.matmul_params_per_token / denom) if denom > 0 else float("inf")


@finite_result(allow_inf=True)
def crossover_context_at_batch(model, chip, batch, kv_dtype: str = "bf16", weight_dtype: str = "bf16",
                               compute_dtype=None):
    """Smallest context at which a decode step of ``batch`` sequences is memory-bound.

    Solves ``B (2 N_mm + a L) / F = (P_read(B) b_w + B L beta) / W`` for L::

        L_B = (2 N_mm / F - P_read(B) b_w / (B W)) / (beta / W - a / F)

    0 where the step is already memory-bound at L = 0 (B below the balance
    batch); ``inf`` where it never becomes memory-bound (``beta/W <= a/F``).
    Tends to :func:`kv_crossover_context` as B grows. Broadcasts over ``batch``.
    (Ignores the one embedding row per sequence, as chapter 1's table does not.)

    Raises:
        ValueError: non-positive batch. KeyError: unknown model, chip or dtype.
    """
    m, c, F, W, beta, a = _slopes(model, chip, weight_dtype, kv_dtype, compute_dtype)
    B = positive("batch", batch)
    b_w = dtype_bytes(weight_dtype)
    num = 2.0 * m.matmul_params_per_token / F - np.asarray(m.expected_params_read(B)) * b_w / (B * W)
    den = beta / W - a / F
    if den <= 0:
        return result(np.full(np.shape(num), np.inf))
    return result(np.maximum(num, 0.0) / den)


# ---------------------------------------------------------------------------
# Sparse attention: cache bytes read per decode step, per sequence and layer
# ---------------------------------------------------------------------------

PUBLISHED = {
    "NSA": dict(compress_block=32, compress_stride=16, select_block=64, select_blocks=16, window=512,
                source="Yuan et al., Native Sparse Attention, arXiv:2502.11089 (DeepSeek), section 4.1: "
                       "compression block l=32, stride d=16; selection block l'=64, n=16 selected blocks "
                       "(1 initial and 2 local among them); sliding window w=512"),
    "DSA": dict(index_n_heads=64, index_head_dim=128, index_topk=2048, index_key_bytes=128 + 4,
                source="DeepSeek-V3.2-Exp (2025), config.json (index_n_heads 64, index_head_dim 128, "
                       "index_topk 2048) and inference/model.py: the lightning indexer caches one fp8 key "
                       "of 128 values per token and layer plus one fp32 scale per 128 values (132 bytes), "
                       "scores all L tokens with 64 small heads, and the MLA attends to the top 2048"),
    "MoBA": dict(block=512, top_k=3, long_block=4096, long_top_k=12,
                 source="Lu et al., MoBA: Mixture of Block Attention, arXiv:2502.13189 (Moonshot AI): "
                        "blocks of 512 with top-k 3 in the scaling experiments; 4096 and top-k 12 for 1M "
                        "tokens (1 - 12 x 4096 / 2^20 = 95.31% sparsity); gate = q . mean-pooled block keys; "
                        "the query's own block is always attended"),
    "Quest": dict(page=16, token_budgets=(512, 1024, 2048, 4096),
                  source="Tang et al., Quest, arXiv:2406.10774 (ICML 2024), and its repository "
                         "(scripts/passkey.sh: chunk_size 16, token_budget 512-4096): per page the "
                         "element-wise min and max key are kept; the top pages by an upper bound of q.k "
                         "are loaded"),
}


@finite_result
def dense_kv_bytes(context, bytes_per_token):
    """Dense attention: every cached token is read, ``L * beta_layer`` bytes (linear in L)."""
    L, beta = broadcast(context=non_negative("context", context),
                        bytes_per_token=non_negative("bytes_per_token", bytes_per_token))
    return result(L * beta)


def _topk(name, k, L, clip):
    """min(k, L), refusing k > L unless ``clip`` (k and L already broadcast together)."""
    if not flag("clip", clip) and np.any(k > L):
        mask = k > L
        kb, Lb = k[mask].flat[0], L[mask].flat[0]
        raise ValueError(f"{name} = {kb:g} tokens is larger than the context {Lb:g}; top-k must be "
                         f"<= context (or pass clip=True to read all tokens of a short context)")
    return np.minimum(k, L)


@finite_result
def block_topk_kv_bytes(context, block_size, top_k_blocks, bytes_per_token, summary_bytes_per_block,
                        clip: bool = False):
    """Block top-k attention: scan one summary per block, then read the top-k blocks whole.

    ``ceil(L / s) * sigma + min(k s, L) * beta``, with block size ``s`` tokens,
    ``k`` blocks kept, ``sigma`` bytes per block summary (e.g. one mean key, MoBA)
    and ``beta`` cache bytes per token. For fixed ``s`` and ``k`` this is still
    linear in L (slope ``sigma / s``); with ``s ~ sqrt(L)`` both terms grow as
    sqrt(L) (see :func:`block_topk_optimal`).

    Raises:
        ValueError: block_size < 1, top_k_blocks < 1, negative bytes, or
            ``k s > L`` (unless ``clip``: then all of a short context is read).
    """
    return _block_topk(context, block_size, top_k_blocks, bytes_per_token, summary_bytes_per_block, clip,
                       ("context", "block_size", "top_k_blocks", "bytes_per_token", "summary_bytes_per_block"))


def _block_topk(context, block_size, top_k_blocks, bytes_per_token, summary_bytes_per_block, clip, names):
    """:func:`block_topk_kv_bytes`, with the caller's argument ``names`` in every message."""
    n_L, n_s, n_k, n_beta, n_sigma = names
    L = non_negative(n_L, context)
    s = positive(n_s, block_size)
    if np.any(s < 1):
        raise ValueError(f"{n_s} must be >= 1 token, got {np.min(s):g}")
    k = positive(n_k, top_k_blocks)
    if np.any(k < 1):
        raise ValueError(f"{n_k} must be >= 1, got {np.min(k):g}")
    L, s, k, beta, sigma = broadcast(**{n_L: L, n_s: s, n_k: k, n_beta: non_negative(n_beta, bytes_per_token),
                                        n_sigma: non_negative(n_sigma, summary_bytes_per_block)})
    sel = _topk(f"{n_k} * {n_s}", k * s, L, clip)
    return result(np.ceil(L / s) * sigma + sel * beta)


@finite_result
def block_topk_optimal(context, top_k_blocks, bytes_per_token, summary_bytes_per_block):
    """The block size that minimises :func:`block_topk_kv_bytes`, and the bytes it reads.

    Treating the block count as continuous, ``L sigma / s + k s beta`` is least at
    ``s* = sqrt(L sigma / (k beta))``, where the two terms are equal and the total
    is ``2 sqrt(L k sigma beta)``: a square-root law in L -- but only if the block
    size grows as sqrt(L). Returns ``(block_size, bytes)`` (block size not
    rounded; at least 1).

    Raises:
        ValueError: non-positive inputs.
    """
    L, k, beta, sigma = broadcast(context=positive("context", context),
                                  top_k_blocks=positive("top_k_blocks", top_k_blocks),
                                  bytes_per_token=positive("bytes_per_token", bytes_per_token),
                                  summary_bytes_per_block=positive("summary_bytes_per_block", summary_bytes_per_block))
    s = np.maximum(np.sqrt(L * sigma / (k * beta)), 1.0)
    return result(s), result(L * sigma / s + k * s * beta)


@finite_result
def indexer_topk_kv_bytes(context, top_k, bytes_per_token, indexer_bytes_per_token, clip: bool = False):
    """Fixed top-k tokens chosen by a cheap indexer (DeepSeek-V3.2's DSA).

    ``L * iota + min(k, L) * beta``: the indexer reads its small key for every
    cached token (``iota`` bytes, 132 for DSA), then the attention reads ``k``
    selected tokens in full. Linear in L with slope ``iota`` instead of ``beta``.

    Raises:
        ValueError: top_k < 1, negative bytes, or top_k > context (unless ``clip``).
    """
    L = non_negative("context", context)
    k = positive("top_k", top_k)
    if np.any(k < 1):
        raise ValueError(f"top_k must be >= 1 token, got {np.min(k):g}")
    iota = non_negative("indexer_bytes_per_token", indexer_bytes_per_token)
    L, k, iota, beta = broadcast(context=L, top_k=k, indexer_bytes_per_token=iota,
                                 bytes_per_token=non_negative("bytes_per_token", bytes_per_token))
    sel = _topk("top_k", k, L, clip)
    return result(L * iota + sel * beta)


@finite_result
def nsa_kv_bytes(context, bytes_per_token, compress_stride=16, select_block=64, select_blocks=16, window=512):
    """Native Sparse Attention at decode, defaults from the paper (see :data:`PUBLISHED`).

    Three branches read: the compressed tokens (one K/V per ``compress_stride``
    tokens: ``L/d * beta``), the ``n`` selected blocks of ``l'`` tokens, and the
    sliding window of ``w`` tokens; each capped at L. Linear in L with slope
    ``beta/d`` plus a constant ``(n l' + w) beta``. (Overlap between the selected
    blocks and the window is not subtracted: an upper bound by at most ``w beta``.)

    Raises:
        ValueError: a stride, block, block count or window below 1 token, negative bytes,
            shapes that do not broadcast.
    """
    L, beta, d, lb, nb, w = broadcast(
        context=non_negative("context", context), bytes_per_token=non_negative("bytes_per_token", bytes_per_token),
        compress_stride=at_least("compress_stride", compress_stride, 1, "token"),
        select_block=at_least("select_block", select_block, 1, "token"),
        select_blocks=at_least("select_blocks", select_blocks, 1, "block"),
        window=at_least("window", window, 1, "token"))
    return result((np.floor(L / d) + np.minimum(lb * nb, L) + np.minimum(w, L)) * beta)


@finite_result
def quest_kv_bytes(context, bytes_per_token, key_bytes_per_token, token_budget=2048, page=16):
    """Quest at decode: scan a min and a max key per page, then load the top pages.

    ``ceil(L / page) * 2 * key_bytes + min(budget, L) * beta``. Linear with slope
    ``2 key_bytes / page`` (1/16 of dense for K=V sizes and 16-token pages).

    Raises:
        ValueError: page < 1, budget < 1, negative bytes, shapes that do not broadcast.
    """
    L = non_negative("context", context)
    p = positive("page", page)
    if np.any(p < 1):
        raise ValueError(f"page must be >= 1 token, got {np.min(p):g}")
    L, p, budget, kb, beta = broadcast(
        context=L, page=p, token_budget=at_least("token_budget", token_budget, 1, "token"),
        key_bytes_per_token=non_negative("key_bytes_per_token", key_bytes_per_token),
        bytes_per_token=non_negative("bytes_per_token", bytes_per_token))
    return result(np.ceil(L / p) * 2 * kb + np.minimum(budget, L) * beta)


@finite_result
def moba_kv_bytes(context, bytes_per_token, key_bytes_per_token, block=512, top_k=3):
    """MoBA at decode: score every block by its mean key, read the top-k blocks.

    :func:`block_topk_kv_bytes` with a summary of one key per block; selection
    capped at L. Defaults from the paper (see :data:`PUBLISHED`).

    Raises:
        ValueError: block or top_k below 1, negative bytes, shapes that do not broadcast
            (each message names this function's own arguments).
    """
    return _block_topk(context, block, top_k, bytes_per_token, key_bytes_per_token, True,
                       ("context", "block", "top_k", "bytes_per_token", "key_bytes_per_token"))


@finite_result
def loglog_slope(context, bytes_read):
    """d log(bytes) / d log(L) between consecutive points: 1 for linear growth, 0.5 for sqrt(L).

    Raises:
        ValueError: fewer than 2 points, non-positive values, or repeated contexts.
    """
    L = positive("context", context)
    y = positive("bytes_read", bytes_read)
    if L.ndim != 1 or L.size < 2 or y.shape != L.shape:
        raise ValueError(f"context and bytes_read: need two 1-d arrays of equal length >= 2, got shapes {L.shape} "
                         f"and {y.shape}")
    if np.any(np.diff(L) == 0):
        raise ValueError("context must hold distinct values (a slope between two equal contexts is undefined)")
    return np.diff(np.log(y)) / np.diff(np.log(L))


def mean_key_bytes(model, kv_dtype: str = "bf16") -> float:
    """Bytes of one block summary that is a mean key (MoBA-style): half a cached token's bytes per layer.

    ``bytes_per_cached_token / 2`` -- the key half of a K+V pair (for MLA, half the
    latent-plus-rope row, the course's stand-in). Chapter 2 uses it as sigma in
    :func:`block_topk_kv_bytes` and :func:`block_topk_optimal`.

    Raises:
        KeyError: unknown model or dtype.
    """
    return bytes_per_cached_token(model, kv_dtype) / 2.0


@finite_result
def kv_read_time_s(model, chip, bytes_per_layer, n_chips: int = 1):
    """Time to read ``bytes_per_layer`` of cache in every layer, for one sequence: ``n_layers x bytes / (n W)``.

    Turns the per-layer, per-sequence byte counts of the sparse-attention functions
    into a step's KV-read time on ``n_chips`` chips (HBM bandwidth summed). Broadcasts.

    Raises:
        ValueError: negative bytes, n_chips < 1. KeyError: unknown model or chip.
    """
    m, c = models.get(model), hardware.get(chip)
    n = positive_int("n_chips", n_chips)
    b = non_negative("bytes_per_layer", bytes_per_layer)
    return result(m.n_layers * b / (n * c.hbm_bytes_per_s))
