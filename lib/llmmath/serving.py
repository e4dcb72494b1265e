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
import math

import numpy as np

from . import hardware, models
from ._validate import (at_least, broadcast, check_finite, finite_result, flag, in_range, non_negative, positive,
                        positive_int, result, scalar, whole)
from .deployment import expected_busiest_chip_experts
from .hardware import default_compute_dtype
from .units import dtype_bytes, fmt_bytes

__all__ = [
    "DecodeStep", "decode_step", "decode_step_time_s", "decode_cost_per_token",
    "latency_floor_s", "balance_batch", "max_batch", "fits_in_hbm", "cost_ratio_unbatched",
    "expected_busiest_chip_experts", "expert_parallel_chip_bytes", "expert_parallel_decode_step", "expert_parallel_cost_ratio_unbatched",
    "prefill_step", "prefill_cost_per_token", "prefill_compute_bound_tokens", "context_attention_flops_per_token", "attention_crossover_context",
    "kv_limit_context", "utilization_vs_balance", "batch_over_balance", "balance_batch_fits", "chips_to_hold",
    "SpeedForPrice", "speed_for_price",
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
        need = m.weight_bytes(weight_dtype) + B * m.kv_bytes_per_sequence(L, kv_dtype)
    return result(need <= n * c.hbm_bytes)


@finite_result(allow_inf=True)
def max_batch(model, chip, context, n_chips=1, weight_dtype="bf16", kv_dtype="bf16"):
    """The **pooled bound**: the largest whole batch whose KV cache fits beside the weights in the chips' datasheet
    HBM pooled as one memory (0 if the weights alone do not fit).

    ``floor((n_chips * C - N_tot * b_w) / (L * beta))`` (``L beta`` is one sequence's
    cache, :meth:`~llmmath.models.Model.kv_bytes_per_sequence`: less with windowed layers); at ``context = 0`` there is no
    KV cache and the result is ``inf`` (documented, not an error: HBM does not bound it).

    Chapters 1-3 and 8 teach capacity with it before placement enters. It is an upper bound, never a plan: a chip
    holds only its own weights and its own sequences' cache, so a placement that replicates weights (DP attention)
    or KV (TP past the KV heads, MLA's latent) holds fewer, and an engine keeps memory back besides. Where a
    placement matters, ask :meth:`llmmath.deployment.Deployment.max_batch` (:func:`llmmath.planner.plan`), or
    :func:`llmmath.deployment.most_sequences` for the best placement: DeepSeek-V3 fp8 on 8 H200s at 128k tokens,
    pooled 49, best placement 32.
    """
    m, c = models.get(model), hardware.get(chip)
    n = positive_int("n_chips", n_chips)
    L = non_negative("context", context)
    free = n * c.hbm_bytes - m.weight_bytes(weight_dtype)
    per_seq = np.asarray(m.kv_bytes_per_sequence(L, kv_dtype))
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
    kv = B * np.asarray(m.kv_bytes_per_sequence(L, kv_dtype))
    bad = w + kv > have
    idx = np.argwhere(np.atleast_1d(bad))[0]
    Bb = float(np.broadcast_to(B, bad.shape)[tuple(idx)] if np.ndim(bad) else B)
    Lb = float(np.broadcast_to(L, bad.shape)[tuple(idx)] if np.ndim(bad) else L)
    mb = max_batch(m, c, Lb, n, weight_dtype, kv_dtype)
    return ValueError(
        f"{m.key}: batch={Bb:g} at context={Lb:g} needs {fmt_bytes(w + Bb * m.kv_bytes_per_sequence(Lb, kv_dtype))} "
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
    kv_seq = np.asarray(m.kv_bytes_per_sequence(L, kv_dtype))
    if check_capacity and not np.all(m.weight_bytes(weight_dtype) + B * kv_seq <= n * c.hbm_bytes):
        raise _capacity_error(m, c, n, B, L, weight_dtype, kv_dtype)
    W = n * c.hbm_bytes_per_s
    compute = B * (2.0 * m.matmul_params_per_token + m.attention_flops_per_token(L)) / (n * F)
    weight = np.asarray(m.expected_params_read(B)) * b_w / W
    kv = B * kv_seq / W
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
    per_seq_kv = np.asarray(m.kv_bytes_per_sequence(L, kv_dtype)) / W
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
    per_token_kv = np.asarray(m.kv_bytes_per_sequence(L, kv_dtype)) / c.hbm_bytes_per_s
    return result(one / np.maximum(per_token_compute, per_token_kv))


# ---------------------------------------------------------------------------
# Expert parallelism: the busiest chip sets the step (chapter 1, claims 2 and 4)
# ---------------------------------------------------------------------------

def expert_parallel_chip_bytes(model, n_chips, weight_dtype="bf16") -> float:
    """Weight bytes on the fullest chip when the routed experts are spread over ``n_chips`` (bytes).

    ``(N_tot - routed) / n + ceil(E / n) * n_moe_layers * P_e``, times ``b_w``: the
    rest of the weights sharded evenly, the routed experts as evenly as whole experts
    allow. For a dense model ``N_tot b_w / n``.

    Raises:
        ValueError: n_chips not a whole number >= 1. KeyError: unknown model or dtype.
    """
    m = models.get(model)
    n = positive_int("n_chips", n_chips)
    routed = m.n_moe_layers * m.n_experts * m.expert_params
    held = (m.total_params - routed) / n + m.n_moe_layers * -(-m.n_experts // n) * m.expert_params
    return float(held * dtype_bytes(weight_dtype))


@finite_result
def expert_parallel_decode_step(model, chip, batch, context=0, n_chips=1, weight_dtype="bf16", kv_dtype="bf16",
                                compute_dtype=None, check_capacity=True) -> DecodeStep:
    """Roofline floor of a decode step with the routed experts spread over the chips (expert parallelism).

    :func:`decode_step` pools the bandwidth of all ``n`` chips, as if any chip could
    read any weight. This form places the routed experts and still pools the rest: it is
    :class:`llmmath.deployment.Deployment` with ``tp = n, ep = n`` for a model whose KV heads
    ``n`` divides (Mixtral on 8 chips; a test holds them equal), and a floor for any other layout
    (an MLA model's latent is not split by ``tp``; chapter 6's DP-attention layout gives every
    chip its own copy of the non-expert weights). Under expert parallelism (how DeepSeek-V3 is served, V3 report
    section 3.4) each chip holds ``E/n`` of every MoE layer's routed experts and only
    it can read them; every MoE layer ends in an all-to-all, so the layer lasts as long
    as its **busiest chip**. With the rest of the weights (attention, shared experts,
    dense layers, LM head) sharded evenly::

        t_weights = [P_other(B) / n + n_moe_layers * E[busiest](B) * P_e] * b_w / W_chip
        t_compute = B (2 N_mm + a L) / (n F),   t_kv = B L beta / (n W_chip)
        step time = max(t_compute, t_weights + t_kv)

    ``E[busiest]`` is :func:`expected_busiest_chip_experts` (its expectation per layer,
    summed over layers, since layers route independently). Compute and KV are taken as
    spread evenly: a floor. At ``n = 1`` this equals :func:`decode_step`; for a dense
    model it does too (there are no experts to place). At ``B = 1`` the cost ratio
    against the compute floor lies between R (one chip) and R * N_tot / N_act (one
    expert per chip): chips holding unpicked experts idle but are paid for.

    Args:
        model, chip: catalog names or objects.
        batch: B, whole sequences (>= 1; scalar or array).
        context: L, tokens of context per sequence (>= 0; broadcasts with ``batch``).
        n_chips: chips holding the model, each with a share of every layer's experts.
        weight_dtype, kv_dtype, compute_dtype: as in :func:`decode_step`.
        check_capacity: refuse a placement whose fullest chip (``P_other / n`` plus
            ``ceil(E/n)`` experts per layer, plus its share of the KV cache) exceeds HBM.

    Returns:
        :class:`DecodeStep` shaped like ``broadcast(batch, context)``; its
        ``cost_chip_s_per_token`` is ``n * step time / B``.

    Raises:
        ValueError: batch not a whole number >= 1, negative context, n_chips < 1, shapes
            that do not broadcast, or (with ``check_capacity``) a placement that does not fit.
        TypeError: a boolean, string or None where a number is expected.
        KeyError: unknown model, chip or dtype.
    """
    m, c, b_w, b_kv, F = _resolve(model, chip, weight_dtype, kv_dtype, compute_dtype)
    B, L = broadcast(batch=whole("batch", batch, 1), context=non_negative("context", context))
    n = positive_int("n_chips", n_chips)
    routed = m.n_moe_layers * m.n_experts * m.expert_params
    if flag("check_capacity", check_capacity):
        need = expert_parallel_chip_bytes(m, n, weight_dtype) + B * np.asarray(m.kv_bytes_per_sequence(L, kv_dtype)) / n
        if not np.all(need <= c.hbm_bytes):
            worst = float(np.max(need))
            raise ValueError(f"{m.key} with experts spread over n_chips={n} x {c.key}: the fullest chip needs "
                             f"{fmt_bytes(worst)} of weights + KV at {weight_dtype}, but holds "
                             f"{fmt_bytes(c.hbm_bytes)}; use more chips or a smaller weight_dtype "
                             f"(or pass check_capacity=False)")
    frac = 1.0 - (1.0 - m.experts_per_token / m.n_experts) ** B if m.is_moe else 0.0 * B
    other = np.asarray(m.expected_params_read(B)) - routed * frac     # attention, shared, dense, looked-up rows
    busiest = expected_busiest_chip_experts(m, B, n)
    weight = (other / n + m.n_moe_layers * busiest * m.expert_params) * b_w / c.hbm_bytes_per_s
    compute = B * (2.0 * m.matmul_params_per_token + m.attention_flops_per_token(L)) / (n * F)
    kv = B * np.asarray(m.kv_bytes_per_sequence(L, kv_dtype)) / (n * c.hbm_bytes_per_s)
    compute, weight, kv = np.broadcast_arrays(compute, weight, kv)
    total = np.maximum(compute, weight + kv)
    return DecodeStep(result(compute), result(weight), result(kv), result(total),
                      result(np.broadcast_to(B, total.shape)), n)


@finite_result
def expert_parallel_cost_ratio_unbatched(model, chip, n_chips, context=0, weight_dtype="bf16", kv_dtype="bf16",
                                         compute_dtype=None):
    """Cost per token at batch 1 under expert parallelism over ``n_chips``, divided by the best cost.

    ``n * t_step(B=1) / best`` with ``t_step`` from :func:`expert_parallel_decode_step`
    and ``best = max((2 N_mm + a L) / F, L beta / W)`` chip-seconds per token (as in
    :func:`cost_ratio_unbatched`, which is the ``n_chips = 1`` case). Ignores HBM
    capacity. Broadcasts over ``n_chips`` (whole numbers >= 1) and ``context``.

    Raises:
        ValueError: n_chips not a whole number >= 1, negative context, shapes that do not broadcast.
        KeyError: unknown model, chip or dtype.
    """
    m, c, b_w, b_kv, F = _resolve(model, chip, weight_dtype, kv_dtype, compute_dtype)
    n, L = broadcast(n_chips=whole("n_chips", n_chips, 1), context=non_negative("context", context))
    best = np.maximum((2.0 * m.matmul_params_per_token + m.attention_flops_per_token(L)) / F,
                      np.asarray(m.kv_bytes_per_sequence(L, kv_dtype)) / c.hbm_bytes_per_s)
    out = np.empty(n.shape)
    for idx in np.ndindex(n.shape):
        step = expert_parallel_decode_step(m, c, 1, L[idx], int(n[idx]), weight_dtype, kv_dtype, compute_dtype,
                                           check_capacity=False)
        out[idx] = step.cost_chip_s_per_token / best[idx]
    return result(out)


# ---------------------------------------------------------------------------
# Prefill, and where attention's context-dependent FLOPs catch up (chapter 8)
# ---------------------------------------------------------------------------

@finite_result
def prefill_step(model, chip, prompt_tokens, batch=1, n_chips=1, weight_dtype="bf16", kv_dtype="bf16",
                 compute_dtype=None, overlap="max"):
    """Roofline floor of prefilling ``batch`` prompts of ``prompt_tokens`` tokens each in one pass.

    Compute: ``B (T * 2 N_mm + causal attention)``, where causal attention over
    a prompt of T tokens costs ``attention_flops_per_token(T (T-1) / 2)`` (token i
    attends to i earlier ones), for MLA in its up-projected prefill form
    (:meth:`~llmmath.models.Model.prefill_attention_flops`). Memory: the weights once (all
    the experts the ``B T`` tokens touch) plus the new KV cache written, ``B T beta``; the
    prompt's own K and V are reused from on-chip memory (FlashAttention-style), not re-read.
    So a dense model's prefill does ~T FLOPs per weight byte (bf16) and an MoE model's only
    ~``T N_act / N_tot`` once its prompt touches every expert (:func:`prefill_compute_bound_tokens`).
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
        check_finite("prefill_step (causal attention pairs)", T * (T - 1) / 2.0, prompt_tokens=T)
    attn = np.asarray(m.prefill_attention_flops(T, absorbed=False))  # T (T-1)/2 pairs per full layer (fewer if windowed)
    compute = B * (T * 2.0 * m.matmul_params_per_token + attn) / (n * F)
    W = n * c.hbm_bytes_per_s
    weight = np.asarray(m.expected_params_read(tokens)) * b_w / W
    kv = tokens * m.kv_bytes_per_token(kv_dtype) / W
    compute, weight, kv, tokens = np.broadcast_arrays(compute, weight, kv, tokens)
    total = np.maximum(compute, weight + kv) if overlap == "max" else compute + weight + kv
    return DecodeStep(result(compute), result(weight), result(kv), result(total), result(tokens), n)


def prefill_compute_bound_tokens(model, chip, n_chips=1, weight_dtype="bf16", kv_dtype="bf16",
                                 compute_dtype=None) -> float:
    """The shortest prompt whose prefill (one prompt, :func:`prefill_step`) is compute-bound (tokens).

    Compute grows like ``T (2 N_mm + attention)``; the bytes like the weights the prompt touches
    plus ``T`` rows and KV entries, so past the first tokens a dense model turns compute-bound
    near the chip's ridge point ``F / W`` (bf16: one FLOP per weight byte per token), while an
    MoE model, whose prompt soon touches every expert, needs about ``ridge x N_tot / (2 N_mm / b_w)``
    tokens: DeepSeek-V3 in bf16 on one H100 ~5,400 (its 4,096-token prefill waits on memory).
    Found by bisection over whole ``T`` in ``1 .. 2**24``; ``inf`` if none is compute-bound there.

    Raises:
        ValueError, KeyError: as :func:`prefill_step`.
    """
    def bound(T: int) -> bool:
        st = _prefill_step(model, chip, T, 1, n_chips, weight_dtype, kv_dtype, compute_dtype, "max")
        return bool(st.compute_s >= st.weight_s + st.kv_s)

    lo, hi = 1, 2 ** 24
    if bound(lo):
        return 1.0
    if not bound(hi):
        return math.inf
    while hi - lo > 1:      # bound(lo) is False, bound(hi) True
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if bound(mid) else (mid, hi)
    return float(hi)


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
    per_layer = np.asarray(m.attention_flops_per_token(1.0)) / m.n_attention_layers
    n_attn = m.n_attention_layers                  # linear layers attend to no position
    if topk is not None:
        if window is not None or g != 1:
            raise ValueError("topk replaces window and global_every (every layer attends to its top-k): "
                             f"give topk alone, got window={window!r}, global_every={global_every!r}")
        k = at_least("topk", topk, 1, "token")
        L, k, idx_flops = broadcast(context=L, topk=k, indexer_flops_per_position=idx_flops)
        seen = np.minimum(L, k) * n_attn
        return result(per_layer * seen + idx_flops * L * n_attn)
    if np.any(idx_flops):
        raise ValueError("indexer_flops_per_position applies only with topk (the indexer picks the top-k); "
                         f"got {indexer_flops_per_position!r} without topk")
    n_global = int(np.ceil(n_attn / g))
    n_local = n_attn - n_global
    if n_local and window is None:
        raise ValueError(f"global_every={g} leaves {n_local} local layers: give their window")
    if window is not None and not n_local:
        raise ValueError(f"window={window!r} would be ignored: global_every={g} makes every layer of {m.key} "
                         f"global; allowed: global_every between 2 and {n_attn} with a window")
    if window is None:
        return result(per_layer * n_attn * L)
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
    drops ``a`` (the speaker's form). With windowed layers (gpt-oss) past the window
    only the full layers' terms grow, ``L_max = (head + (n_w/n) w (a/F - beta/W)) /
    ((n_f/n)(beta/W - a/F))``. Source: chapter 3, claim 11.

    Raises:
        KeyError: unknown model, chip or dtype.
    """
    m, c, b_w, b_kv, F = _resolve(model, chip, weight_dtype, kv_dtype, compute_dtype)
    W = c.hbm_bytes_per_s
    use_attn = flag("attention_flops", attention_flops)
    a = m.attention_flops_per_token(1.0) if use_attn else 0.0
    slope = m.kv_bytes_per_token(kv_dtype) / W - a / F
    head = 2.0 * m.matmul_params_per_token / F - (0 if m.tied_embeddings else m.d_model) * b_w / W
    L_all = float(head / slope) if slope > 0 else float("inf")
    if not m.n_window_layers or L_all <= m.sliding_window:
        return L_all
    # Past the window only the full layers' cache and attention grow; the windowed ones add constants.
    w, share = float(m.sliding_window), m.n_window_layers / m.n_layers
    slope_full = (1 - share) * slope
    head_w = head + share * w * (a / F - m.kv_bytes_per_token(kv_dtype) / W)
    return float(head_w / slope_full) if slope_full > 0 else float("inf")


@finite_result
def utilization_vs_balance(batch_over_balance, overlap="max"):
    """Fraction of peak FLOP/s a decode step reaches at ``x = B / B*`` (short context, weights only).

    ``overlap="max"`` (compute and weight reads fully overlapped, the roofline floor):
    ``min(x, 1)``. ``overlap="sum"`` (no overlap, one after the other): the step takes
    ``t_c + t_w`` with ``t_c / t_w = x``, so utilization is ``x / (1 + x)``: 50% at
    B*, 67% at 2 B*, 75% at 3 B*. A real kernel sits between the two: a number
    ``f`` in [0, 1] hides that fraction of the shorter time, ``t = max + (1 - f) min``,
    so utilization is ``x / (max(x, 1) + (1 - f) min(x, 1))`` (``f = 1`` is "max",
    ``f = 0`` is "sum"). Broadcasts over ``x`` and a numeric ``overlap``.

    Raises:
        ValueError: ``x`` not > 0, or ``overlap`` not 'max', 'sum' or a number in [0, 1].
    """
    x = positive("batch_over_balance", batch_over_balance)
    if isinstance(overlap, str):
        if overlap not in ("max", "sum"):
            raise ValueError(f"overlap must be 'max', 'sum' or a fraction in [0, 1], got {overlap!r}")
        overlap = 1.0 if overlap == "max" else 0.0
    x, f = broadcast(batch_over_balance=x, overlap=in_range("overlap", overlap, 0.0, 1.0))
    return result(x / (np.maximum(x, 1.0) + (1.0 - f) * np.minimum(x, 1.0)))


@finite_result
def batch_over_balance(model, chip, batch, weight_dtype="bf16", kv_dtype="bf16", compute_dtype=None):
    """``x = B / B*``: how far a batch sits past the short-context balance batch (chapter 3, claim 10).

    ``B*`` is :func:`balance_batch` at context 0 (the whole step, ``R N_tot/N_act``),
    which is always finite. Broadcasts over ``batch``; feed the result to
    :func:`utilization_vs_balance`.

    Raises:
        ValueError: batch not > 0. KeyError: unknown model, chip or dtype.
    """
    B = positive("batch", batch)
    return result(B / balance_batch(model, chip, 0, weight_dtype, kv_dtype, compute_dtype))


def balance_batch_fits(model, chip, context, n_chips=1, weight_dtype="bf16", kv_dtype="bf16", compute_dtype=None):
    """True where the balance batch B*(L) exists and its KV cache fits beside the weights on ``n_chips``.

    ``B*(L) < inf`` and ``N_tot b_w + B*(L) L beta <= n C`` (:func:`balance_batch`,
    :func:`fits_in_hbm`). False where no batch balances (``L >= L_max``) or where the
    balanced batch needs more HBM than the chips have. Broadcasts over ``context``.

    Raises:
        ValueError: negative context, n_chips < 1. KeyError: unknown model, chip or dtype.
    """
    bstar = np.asarray(balance_batch(model, chip, context, weight_dtype, kv_dtype, compute_dtype), dtype=float)
    finite = np.isfinite(bstar)
    L = np.broadcast_to(np.asarray(non_negative("context", context), dtype=float), bstar.shape)
    ok = np.asarray(fits_in_hbm(model, chip, np.where(finite, bstar, 1.0), L, n_chips, weight_dtype, kv_dtype))
    return result(finite & ok)


def chips_to_hold(model, chip, weight_dtype="bf16", usable_fraction=0.8) -> int:
    """Fewest chips whose HBM, ``usable_fraction`` of it, holds the model's weights: ``ceil(N_tot b_w / (f C))``.

    The rest of each HBM (``1 - f``) is left for the KV cache and activations; 0.8 is
    the course's default headroom (chapter 3, claim 15).

    Raises:
        ValueError: ``usable_fraction`` outside (0, 1]. KeyError: unknown model, chip or dtype.
    """
    m, c = models.get(model), hardware.get(chip)
    f = in_range("usable_fraction", usable_fraction, 0.0, 1.0, low_open=True)
    return int(math.ceil(m.weight_bytes(weight_dtype) / (float(f) * c.hbm_bytes)))


@dataclasses.dataclass(frozen=True)
class SpeedForPrice:
    """A move down the batch dial (:func:`speed_for_price`): from ``from_batch`` to ``batch``, tokens come
    ``speedup`` times faster at ``price_ratio`` times the cost per token; ``max_speedup`` is the most any batch
    gives (at batch 1)."""

    from_batch: float
    batch: float
    speedup: float
    price_ratio: float
    max_speedup: float


def speed_for_price(model, chip, context, from_batch, speedup, n_chips=1, weight_dtype="bf16", kv_dtype="bf16",
                    compute_dtype=None) -> SpeedForPrice:
    """What a "fast mode" costs when the only dial is the batch (pooled decode floor, :func:`decode_step`).

    From ``from_batch`` sequences, the batch ``b`` at which a step is ``speedup`` times shorter, and
    what that does to the cost per token: ``price_ratio = (t(b) / b) / (t(B0) / B0) = (B0 / b) / speedup``.
    Below the balance batch a step is ``(weights + B L beta) / W``: only the KV term (and, for an MoE,
    the experts touched) shrinks with the batch, so the speed a smaller batch buys comes from the
    context. At ``L = 0`` a dense model's step does not shorten at all below ``B*``: there is no
    trade, only a price. Llama-3.1-70B on 8 H100s at 8,192 tokens, from 93 sequences: 2.5x faster at
    6.2 sequences, for 6.0x the price (the interview's Fast Mode: ~2.5x at ~6x); at ``L = 0`` the
    same move is 1.00x faster at 15x the price.

    Raises:
        ValueError: ``speedup`` below 1, or above ``max_speedup`` (the step time at batch 1 is the floor;
            the message gives it), a bad batch or context. KeyError: unknown model, chip or dtype.
    """
    B0 = float(positive("from_batch", scalar("from_batch", from_batch)))
    s = float(scalar("speedup", speedup))
    if s < 1:
        raise ValueError(f"speedup must be >= 1 (a smaller batch is never slower), got {speedup!r}")
    L = float(non_negative("context", scalar("context", context)))

    def t(b):
        return float(decode_step(model, chip, b, L, n_chips, weight_dtype, kv_dtype, compute_dtype,
                                 check_capacity=False).time_s)

    t0, t1 = t(B0), t(min(1.0, B0))
    best = t0 / t1
    if s > best * (1 + 1e-12):
        raise ValueError(f"no batch makes a step {s:g}x shorter than at {B0:g} sequences: batch 1 is the floor, "
                         f"{best:.3f}x faster; allowed: speedup in [1, {best:.3f}]")
    lo, hi = min(1.0, B0), B0                           # t grows with b: bisect for t(b) = t0 / s
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if t(mid) < t0 / s else (lo, mid)
    b = hi if s > 1 else B0
    return SpeedForPrice(B0, b, t0 / t(b), (t(b) / b) / (t0 / B0), best)

