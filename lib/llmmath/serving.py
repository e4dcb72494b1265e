"""Decode on the roofline: step time, cost per token, latency floor, balance batch.

The core model of the course (chapter 1), for one decode step that produces one
new token for each of ``B`` sequences, each with ``L`` tokens of context::

    t_compute = B * (2 N_mm + a L) / F          N_mm: matmul weights per token, a L: attention FLOPs
    t_memory  = (P_read(B) * b_w + B * L * beta) / W
    step time >= max(t_compute, t_memory)        (and <= their sum)
    cost per token = n_chips * step time / B     (chip-seconds per token)

F and W are summed over ``n_chips`` (the chips that hold the weights). P_read(B)
is the weight count the step must read: all of it for a dense model; for a
mixture of experts only the experts some token picked (see
:meth:`llmmath.models.Model.expected_params_read`). These are roofline
**floors**: a real step is slower (kernel launch gaps, imperfect overlap,
communication between chips), never faster.

All functions broadcast ``batch`` and ``context`` (scalars or NumPy arrays) and
return floats for scalar input; arrays whose shapes do not broadcast together,
booleans given as numbers, and results that overflow float64 are refused with a
ValueError or TypeError naming the arguments. Source of the method: the JAX scaling book
(Austin et al., *How to Scale Your Model*, 2025), chapter "All about transformer
inference"; Pope et al., "Efficiently Scaling Transformer Inference", MLSys 2023.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import hardware, models
from ._validate import (at_least, broadcast, check_finite, finite_result, flag, non_negative, positive,
                        positive_int, result, scalar, whole)
from .hardware import default_compute_dtype
from .units import dtype_bytes, fmt_bytes

__all__ = [
    "DecodeStep", "decode_step", "decode_step_time_s", "decode_cost_per_token",
    "latency_floor_s", "balance_batch", "max_batch", "fits_in_hbm", "cost_ratio_unbatched",
    "prefill_step", "prefill_cost_per_token", "context_attention_flops_per_token", "attention_crossover_context",
    "kv_limit_context", "utilization_vs_balance",
]


@dataclasses.dataclass(frozen=True)
class DecodeStep:
    """The parts of one decode step, each broadcast over ``batch`` x ``context`` (seconds)."""

    compute_s: np.ndarray | float
    weight_s: np.ndarray | float
    kv_s: np.ndarray | float
    time_s: np.ndarray | float
    batch: np.ndarray | float
    n_chips: int

    @property
    def memory_s(self):
        return self.weight_s + self.kv_s

    @property
    def compute_bound(self):
        """True where the arithmetic, not the memory traffic, sets the floor."""
        return self.compute_s >= self.memory_s

    @property
    def cost_chip_s_per_token(self):
        """Chip-seconds of machine time per generated token: n_chips * step time / B."""
        return self.n_chips * self.time_s / self.batch

    @property
    def mfu(self):
        """Model FLOPs utilization at the floor: compute time / step time (<= 1)."""
        return self.compute_s / self.time_s


def _resolve(model, chip, weight_dtype, kv_dtype, compute_dtype):
    m = models.get(model)
    c = hardware.get(chip)
    b_w = dtype_bytes(weight_dtype)
    b_kv = dtype_bytes(kv_dtype)
    compute = compute_dtype or default_compute_dtype(c, weight_dtype)
    return m, c, b_w, b_kv, c.flops_per_s(compute)


def fits_in_hbm(model, chip, batch, context, n_chips=1, weight_dtype="bf16", kv_dtype="bf16"):
    """True where all weights plus ``batch * context`` tokens of KV cache fit in ``n_chips`` HBMs."""
    m, c = models.get(model), hardware.get(chip)
    n = positive_int("n_chips", n_chips)
    B, L = broadcast(batch=positive("batch", batch), context=non_negative("context", context))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflowing need (inf bytes) does not fit
        need = m.weight_bytes(weight_dtype) + B * L * m.kv_bytes_per_token(kv_dtype)
    return result(need <= n * c.hbm_bytes)


@finite_result(allow_inf=True)
def max_batch(model, chip, context, n_chips=1, weight_dtype="bf16", kv_dtype="bf16"):
    """Largest whole batch whose KV cache fits beside the weights (0 if the weights alone do not fit).

    ``floor((n_chips * C - N_tot * b_w) / (L * beta))``; at ``context = 0`` there is no
    KV cache and the result is ``inf`` (documented, not an error: HBM does not bound it).
    """
    m, c = models.get(model), hardware.get(chip)
    n = positive_int("n_chips", n_chips)
    L = non_negative("context", context)
    free = n * c.hbm_bytes - m.weight_bytes(weight_dtype)
    per_seq = L * m.kv_bytes_per_token(kv_dtype)
    with np.errstate(divide="ignore"):
        out = np.where(per_seq > 0, np.floor(np.maximum(free, 0) / np.where(per_seq > 0, per_seq, 1)), np.inf)
    if free < 0:
        out = np.zeros_like(out)
    return result(out)


def _capacity_error(m, c, n, B, L, weight_dtype, kv_dtype):
    w = m.weight_bytes(weight_dtype)
    have = n * c.hbm_bytes
    if w > have:
        need_chips = int(np.ceil(w / c.hbm_bytes))
        return ValueError(
            f"{m.key} weights at {weight_dtype} need {fmt_bytes(w)} but n_chips={n} x {c.key} hold "
            f"{fmt_bytes(have)}; use n_chips >= {need_chips} or a smaller weight_dtype "
            f"(or pass check_capacity=False to evaluate the roofline anyway)"
        )
    kv = B * L * m.kv_bytes_per_token(kv_dtype)
    bad = w + kv > have
    idx = np.argwhere(np.atleast_1d(bad))[0]
    Bb = float(np.broadcast_to(B, bad.shape)[tuple(idx)] if np.ndim(bad) else B)
    Lb = float(np.broadcast_to(L, bad.shape)[tuple(idx)] if np.ndim(bad) else L)
    mb = max_batch(m, c, Lb, n, weight_dtype, kv_dtype)
    return ValueError(
        f"{m.key}: batch={Bb:g} at context={Lb:g} needs {fmt_bytes(w + Bb * Lb * m.kv_bytes_per_token(kv_dtype))} "
        f"of weights + KV cache but n_chips={n} x {c.key} hold {fmt_bytes(have)}; the largest batch that fits "
        f"at that context is {mb:g} (pass check_capacity=False to evaluate the roofline anyway)"
    )


@finite_result
def decode_step(model, chip, batch, context, n_chips=1, weight_dtype="bf16", kv_dtype="bf16",
                compute_dtype=None, overlap="max", check_capacity=True) -> DecodeStep:
    """Roofline floor of one decode step, with its parts (see the module docstring).

    Args:
        model, chip: catalog names or :class:`Model` / :class:`Chip` objects.
        batch: B, sequences decoded together (> 0; scalar or array).
        context: L, tokens of context per sequence (>= 0; broadcasts with ``batch``).
        n_chips: chips holding the weights; F and W are summed over them.
        weight_dtype, kv_dtype: storage formats (``fp32, bf16, fp16, fp8, int8, fp4``).
        compute_dtype: matmul precision; default ``weight_dtype`` if the chip has it, else bf16.
        overlap: ``"max"`` (floor) or ``"sum"`` (no overlap of compute and memory).
        check_capacity: refuse a configuration whose weights + KV exceed ``n_chips`` HBMs.

    Returns:
        :class:`DecodeStep` with arrays shaped like ``broadcast(batch, context)``.

    Raises:
        ValueError: non-positive or NaN batch, negative context, n_chips < 1,
            unknown ``overlap``, batch and context shapes that do not broadcast,
            a result beyond float64 (absurdly large inputs), or (with
            ``check_capacity``) a model that does not fit.
        TypeError: a boolean, string or None where a number is expected.
        KeyError: unknown model, chip or dtype.
    """
    return _decode_step(model, chip, batch, context, n_chips, weight_dtype, kv_dtype, compute_dtype, overlap,
                        check_capacity)


def _decode_step(model, chip, batch, context, n_chips=1, weight_dtype="bf16", kv_dtype="bf16",
                 compute_dtype=None, overlap="max", check_capacity=True) -> DecodeStep:
    m, c, b_w, b_kv, F = _resolve(model, chip, weight_dtype, kv_dtype, compute_dtype)
    B, L = broadcast(batch=positive("batch", batch), context=non_negative("context", context))
    n = positive_int("n_chips", n_chips)
    check_capacity = flag("check_capacity", check_capacity)
    if overlap not in ("max", "sum"):
        raise ValueError(f"overlap must be 'max' or 'sum', got {overlap!r}")
    if check_capacity and not np.all(m.weight_bytes(weight_dtype) + B * L * m.kv_bytes_per_token(kv_dtype) <= n * c.hbm_bytes):
        raise _capacity_error(m, c, n, B, L, weight_dtype, kv_dtype)
    W = n * c.hbm_bytes_per_s
    compute = B * (2.0 * m.matmul_params_per_token + m.attention_flops_per_token(L)) / (n * F)
    weight = np.asarray(m.expected_params_read(B)) * b_w / W
    kv = B * L * m.kv_bytes_per_token(kv_dtype) / W
    compute, weight, kv = np.broadcast_arrays(compute, weight, kv)
    total = np.maximum(compute, weight + kv) if overlap == "max" else compute + weight + kv
    return DecodeStep(result(compute), result(weight), result(kv), result(total), result(np.broadcast_to(B, total.shape)), n)


@finite_result
def decode_step_time_s(model, chip, batch, context, n_chips=1, weight_dtype="bf16", kv_dtype="bf16", **kw):
    """Roofline floor of one decode step, seconds: ``max(t_compute, t_memory)``.

    Same arguments and errors as :func:`decode_step`; returns a float for scalar
    input, else an array shaped like ``broadcast(batch, context)``.
    """
    return _decode_step(model, chip, batch, context, n_chips, weight_dtype, kv_dtype, **kw).time_s


@finite_result
def decode_cost_per_token(model, chip, batch, context, n_chips=1, weight_dtype="bf16", kv_dtype="bf16",
                          usd_per_chip_hour=None, **kw):
    """Machine time per generated token: ``n_chips * step time / B``.

    Returns chip-seconds per token, or US dollars per token when ``usd_per_chip_hour``
    (a rental price you supply; the catalog holds no prices) is given.
    Same other arguments and errors as :func:`decode_step`.
    """
    cost = _decode_step(model, chip, batch, context, n_chips, weight_dtype, kv_dtype, **kw).cost_chip_s_per_token
    if usd_per_chip_hour is not None:
        _, _, price = broadcast(batch=batch, context=context,
                                usd_per_chip_hour=positive("usd_per_chip_hour", usd_per_chip_hour))
        cost = cost * price / 3600.0
    return result(cost)


@finite_result
def latency_floor_s(model, chip, n_chips=1, weight_dtype="bf16", check_capacity=True):
    """Time to stream every weight once from HBM: ``P_read * b_w / (n_chips * W)`` (seconds).

    No decode step that touches all the weights can be faster, whatever the batch.
    A dense model touches all of them at any batch; a mixture of experts does once
    ``B >> E/k`` (at batch 1 it reads only its active experts; see
    :meth:`~llmmath.models.Model.expected_params_read`). The untied input
    embedding table is excluded (a step reads only its looked-up rows).

    Raises:
        ValueError: n_chips < 1, or the weights do not fit (with ``check_capacity``).
    """
    m, c = models.get(model), hardware.get(chip)
    n = positive_int("n_chips", n_chips)
    if flag("check_capacity", check_capacity) and m.weight_bytes(weight_dtype) > n * c.hbm_bytes:
        raise _capacity_error(m, c, n, 1.0, 0.0, weight_dtype, "bf16")
    return m.weights_read_params * dtype_bytes(weight_dtype) / (n * c.hbm_bytes_per_s)


@finite_result(allow_inf=True)
def balance_batch(model, chip, context=0, weight_dtype="bf16", kv_dtype="bf16", compute_dtype=None, *,
                  sparsity="total", attention_flops=True):
    """B*: the batch at which a decode step's compute time equals its memory time.

    Two meanings of "balanced", chosen by ``sparsity`` (chapter 3):

    ``sparsity="total"`` (the default): the **whole step** balances -- the time
    to read every weight once equals the time to do every token's arithmetic.
    Setting ``B (2 N_mm + a L) / F = (P_read b_w + B L beta + B d b_w) / W`` and solving::

        B* = (P_read b_w / W) / ((2 N_mm + a L) / F - L beta / W - d b_w / W)

    (the last term: each sequence reads its own row of an untied input embedding;
    it shifts B* by about 0.02%). At ``L = 0`` this is ``R * P_read / N_mm`` with
    R = F b_w / (2 W): the chip's balance ratio times the parameter sparsity
    N_tot/N_act (~300 x sparsity on an H100 at bf16). It assumes every expert is
    read (the large-batch regime) and does not depend on ``n_chips``.

    ``sparsity="expert"``: **each routed expert's own matmul** balances -- an
    expert sees on average ``B k / E`` tokens, and its weight read
    ``P_e b_w / W`` equals its arithmetic ``(B k / E) 2 P_e / F`` at::

        B*_expert = R * E / k

    (R for a dense model). An expert reads no KV cache, so ``context`` does not
    enter; the result is broadcast to its shape. For DeepSeek-V3 E/k = 256/8 = 32
    while N_tot/N_act = 17.9: every expert compute-bound needs ~1.8x the batch
    that balances the step as a whole.

    ``attention_flops=False`` drops the attention FLOPs ``a L`` from the compute
    side (the speaker's form at 20:15, which counts KV reads but not the
    arithmetic done on them); default True.

    Returns ``inf`` where the KV reads of one sequence already take longer than its
    compute (``L beta / W >= (2 N_mm + a L) / F``): no batch balances, decode stays
    memory-bound. Broadcasts over ``context``.

    Raises:
        ValueError: negative or NaN context; ``sparsity`` not 'total' or 'expert'.
        KeyError: unknown model, chip or dtype.
    """
    if sparsity not in ("total", "expert"):
        raise ValueError(f"sparsity must be 'total' (N_tot/N_act: the whole step balances) or 'expert' "
                         f"(E/k: each expert's matmul balances), got {sparsity!r}")
    m, c, b_w, b_kv, F = _resolve(model, chip, weight_dtype, kv_dtype, compute_dtype)
    L = non_negative("context", context)
    attention_flops = flag("attention_flops", attention_flops)
    W = c.hbm_bytes_per_s
    if sparsity == "expert":
        out = np.broadcast_to(F * b_w / (2.0 * W) * m.expert_sparsity, np.shape(L)).astype(float)
        return result(out)
    attn = m.attention_flops_per_token(L) if attention_flops else 0.0 * L
    per_seq_compute = (2.0 * m.matmul_params_per_token + attn) / F
    per_seq_kv = L * m.kv_bytes_per_token(kv_dtype) / W
    # An untied input embedding is not read whole: each sequence reads its one row.
    per_seq_row = (0 if m.tied_embeddings else m.d_model) * b_w / W
    margin = per_seq_compute - per_seq_kv - per_seq_row
    weights = m.weights_read_params * b_w / W
    with np.errstate(divide="ignore"):
        out = np.where(margin > 0, weights / np.where(margin > 0, margin, 1.0), np.inf)
    return result(out)


@finite_result
def cost_ratio_unbatched(model, chip, context=0, weight_dtype="bf16", kv_dtype="bf16", compute_dtype=None):
    """Cost per token at batch 1 divided by the best cost per token over all batches.

    The best cost is reached at large batch, where the step is compute-bound and
    a token costs ``(2 N_mm + a L) / F`` chip-seconds, unless KV reads dominate
    (then ``(L beta) / W``). Ignores HBM capacity (it asks how much batching is
    worth, not whether the batch fits). Broadcasts over ``context``.
    """
    m, c, b_w, b_kv, F = _resolve(model, chip, weight_dtype, kv_dtype, compute_dtype)
    L = non_negative("context", context)
    one = _decode_step(m, c, 1, L, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                      compute_dtype=compute_dtype, check_capacity=False).time_s
    per_token_compute = (2.0 * m.matmul_params_per_token + m.attention_flops_per_token(L)) / F
    per_token_kv = L * m.kv_bytes_per_token(kv_dtype) / c.hbm_bytes_per_s
    return result(one / np.maximum(per_token_compute, per_token_kv))


# ---------------------------------------------------------------------------
# Prefill, and where attention's context-dependent FLOPs catch up (chapter 8)
# ---------------------------------------------------------------------------

@finite_result
def prefill_step(model, chip, prompt_tokens, batch=1, n_chips=1, weight_dtype="bf16", kv_dtype="bf16",
                 compute_dtype=None, overlap="max"):
    """Roofline floor of prefilling ``batch`` prompts of ``prompt_tokens`` tokens each in one pass.

    Compute: ``B (T * 2 N_mm + causal attention)``, where causal attention over
    a prompt of T tokens costs ``attention_flops_per_token(T (T-1) / 2)`` (token i
    attends to i earlier ones). Memory: the weights once (all the experts the
    ``B T`` tokens touch) plus the new KV cache written, ``B T beta``; the prompt's
    own K and V are reused from on-chip memory (FlashAttention-style), not re-read.
    Returns a :class:`DecodeStep` whose ``batch`` counts tokens (``B T``), so its
    ``cost_chip_s_per_token`` and ``mfu`` read per prompt token. Capacity is not checked.

    Raises:
        ValueError: ``prompt_tokens`` not a whole number >= 1, non-positive batch,
            n_chips < 1, unknown overlap, shapes that do not broadcast, or a step
            beyond float64 (absurdly large inputs).
    """
    return _prefill_step(model, chip, prompt_tokens, batch, n_chips, weight_dtype, kv_dtype, compute_dtype, overlap)


def _prefill_step(model, chip, prompt_tokens, batch=1, n_chips=1, weight_dtype="bf16", kv_dtype="bf16",
                  compute_dtype=None, overlap="max"):
    m, c, b_w, b_kv, F = _resolve(model, chip, weight_dtype, kv_dtype, compute_dtype)
    T, B = broadcast(prompt_tokens=whole("prompt_tokens", prompt_tokens, 1), batch=positive("batch", batch))
    n = positive_int("n_chips", n_chips)
    if overlap not in ("max", "sum"):
        raise ValueError(f"overlap must be 'max' or 'sum', got {overlap!r}")
    with np.errstate(over="ignore"):
        tokens = check_finite("prefill_step (batch * prompt_tokens)", B * T, prompt_tokens=T, batch=B)
        pairs = check_finite("prefill_step (causal attention pairs)", T * (T - 1) / 2.0, prompt_tokens=T)
    attn = np.asarray(m.attention_flops_per_token(pairs))
    compute = B * (T * 2.0 * m.matmul_params_per_token + attn) / (n * F)
    W = n * c.hbm_bytes_per_s
    weight = np.asarray(m.expected_params_read(tokens)) * b_w / W
    kv = tokens * m.kv_bytes_per_token(kv_dtype) / W
    compute, weight, kv, tokens = np.broadcast_arrays(compute, weight, kv, tokens)
    total = np.maximum(compute, weight + kv) if overlap == "max" else compute + weight + kv
    return DecodeStep(result(compute), result(weight), result(kv), result(total), result(tokens), n)


@finite_result
def prefill_cost_per_token(model, chip, prompt_tokens, batch=1, n_chips=1, **kw):
    """Chip-seconds per prompt token of :func:`prefill_step` (``n * t / (B T)``)."""
    return _prefill_step(model, chip, prompt_tokens, batch, n_chips, **kw).cost_chip_s_per_token


@finite_result
def context_attention_flops_per_token(model, context, window=None, global_every: int = 1, topk=None,
                                      indexer_flops_per_position: float = 0.0):
    """Context-dependent FLOPs of one new token, for full, local/global and top-k attention.

    Per layer the model's own per-position cost ``c`` (see
    :meth:`~llmmath.models.Model.attention_flops_per_token`) is paid over:

    * ``context`` positions in a global layer (every ``global_every``-th layer);
    * ``min(context, window)`` positions in the others (sliding-window layers);
    * ``min(context, topk)`` positions everywhere when ``topk`` is set (top-k
      sparse attention), plus ``indexer_flops_per_position * context`` per layer
      for the cheap indexer that picks them (DeepSeek-V3.2's lightning indexer).

    Broadcasts over ``context``, ``window``, ``topk`` and ``indexer_flops_per_position``.

    Raises:
        ValueError: a window or top-k below 1 token, ``global_every`` below 1; a
            ``window`` with ``global_every=1`` (every layer global: the window would
            be ignored); ``topk`` together with ``window``/``global_every`` (top-k
            replaces both); ``indexer_flops_per_position`` without ``topk``;
            shapes that do not broadcast.
    """
    m = models.get(model)
    L = non_negative("context", context)
    g = positive_int("global_every", global_every)
    idx_flops = non_negative("indexer_flops_per_position", indexer_flops_per_position)
    per_layer = np.asarray(m.attention_flops_per_token(1.0)) / m.n_layers
    if topk is not None:
        if window is not None or g != 1:
            raise ValueError("topk replaces window and global_every (every layer attends to its top-k): "
                             f"give topk alone, got window={window!r}, global_every={global_every!r}")
        k = at_least("topk", topk, 1, "token")
        L, k, idx_flops = broadcast(context=L, topk=k, indexer_flops_per_position=idx_flops)
        seen = np.minimum(L, k) * m.n_layers
        return result(per_layer * seen + idx_flops * L * m.n_layers)
    if np.any(idx_flops):
        raise ValueError("indexer_flops_per_position applies only with topk (the indexer picks the top-k); "
                         f"got {indexer_flops_per_position!r} without topk")
    n_global = int(np.ceil(m.n_layers / g))
    n_local = m.n_layers - n_global
    if n_local and window is None:
        raise ValueError(f"global_every={g} leaves {n_local} local layers: give their window")
    if window is not None and not n_local:
        raise ValueError(f"window={window!r} would be ignored: global_every={g} makes every layer of {m.key} "
                         f"global; allowed: global_every between 2 and {m.n_layers} with a window")
    if window is None:
        return result(per_layer * m.n_layers * L)
    L, w = broadcast(context=L, window=at_least("window", window, 1, "token"))
    return result(per_layer * (n_global * L + n_local * np.minimum(L, w)))


@finite_result(allow_inf=True)
def attention_crossover_context(model, window=None, global_every: int = 1, topk=None,
                                indexer_flops_per_position: float = 0.0, max_context: float = 1e12):
    """Context L at which a token's attention FLOPs equal its weight FLOPs ``2 N_mm``.

    Full attention: ``L* = 2 N_mm / a`` in closed form; with windows, top-k or an
    indexer, the (monotone) cost is solved by bisection. Returns ``inf`` when the
    attention cost never reaches ``2 N_mm`` below ``max_context`` (top-k with no
    indexer saturates at k positions).

    Raises:
        ValueError: ``max_context`` not > 0; the window/top-k arguments refused by
            :func:`context_attention_flops_per_token`. TypeError: an array where this
            search needs single numbers (window, topk, indexer_flops_per_position, max_context).
    """
    m = models.get(model)
    target = 2.0 * m.matmul_params_per_token
    hi_ctx = float(positive("max_context", scalar("max_context", max_context)))
    single = {"window": window, "topk": topk, "indexer_flops_per_position": indexer_flops_per_position}
    for name, v in single.items():
        if v is not None:
            scalar(name, v)  # one crossover per design: sweep over designs outside

    def cost(L):
        return context_attention_flops_per_token(m, L, window, global_every, topk, indexer_flops_per_position)

    if cost(hi_ctx) < target:
        return float("inf")
    lo, hi = 0.0, hi_ctx
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if cost(mid) < target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 0.5:
            break
    return hi


@finite_result(allow_inf=True)
def kv_limit_context(model, chip, weight_dtype="bf16", kv_dtype="bf16", compute_dtype=None, *, attention_flops=True):
    """The context L at which the balance batch diverges: no batch makes decode compute-bound beyond it (tokens).

    From :func:`balance_batch` (``sparsity="total"``): the denominator vanishes where one
    sequence's KV read time equals its compute time::

        L_max = (2 N_mm / F - d b_w / W) / (beta / W - a / F)

    Returns ``inf`` when ``beta / W <= a / F``: the attention arithmetic per KV byte
    (``a / beta``) is at least the chip's F/W, so attention is itself compute-bound and
    KV reads never outgrow the compute (DeepSeek-V3's absorbed MLA, 242 FLOP per
    cached byte at bf16, on an H200 whose F/W is 206). ``attention_flops=False``
    drops ``a`` (the speaker's form). Source: chapter 3, claim 11.

    Raises:
        KeyError: unknown model, chip or dtype.
    """
    m, c, b_w, b_kv, F = _resolve(model, chip, weight_dtype, kv_dtype, compute_dtype)
    W = c.hbm_bytes_per_s
    a = m.attention_flops_per_token(1.0) if flag("attention_flops", attention_flops) else 0.0
    slope = m.kv_bytes_per_token(kv_dtype) / W - a / F
    head = 2.0 * m.matmul_params_per_token / F - (0 if m.tied_embeddings else m.d_model) * b_w / W
    return float(head / slope) if slope > 0 else float("inf")


@finite_result
def utilization_vs_balance(batch_over_balance, overlap="max"):
    """Fraction of peak FLOP/s a decode step reaches at ``x = B / B*`` (short context, weights only).

    ``overlap="max"`` (compute and weight reads fully overlapped, the roofline floor):
    ``min(x, 1)``. ``overlap="sum"`` (no overlap, one after the other): the step takes
    ``t_c + t_w`` with ``t_c / t_w = x``, so utilization is ``x / (1 + x)``: 50% at
    B*, 67% at 2 B*, 75% at 3 B*. A real kernel sits between the two. Broadcasts.

    Raises:
        ValueError: ``x`` not > 0, or ``overlap`` not 'max' or 'sum'.
    """
    x = positive("batch_over_balance", batch_over_balance)
    if overlap == "max":
        return result(np.minimum(x, 1.0))
    if overlap == "sum":
        return result(x / (1.0 + x))
    raise ValueError(f"overlap must be 'max' or 'sum', got {overlap!r}")
