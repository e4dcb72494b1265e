"""Speculative decoding and multi-token prediction on the roofline (claim 1's deferred "second effect").

A draft proposes ``k`` tokens per sequence; the target model checks them in one *verify* step
that processes ``k + 1`` tokens per sequence and keeps the accepted prefix plus one token of its
own. With each drafted token accepted with probability ``alpha`` independently, a verify step
yields on average

    E[tokens] = 1 + alpha + ... + alpha^k = (1 - alpha^(k+1)) / (1 - alpha)

(Leviathan, Kalman and Matias, "Fast Inference from Transformers via Speculative Decoding",
ICML 2023, eq. 1). Published engines report per-position acceptance instead (the share of
steps whose i-th draft token was accepted, ``p_1 >= p_2 >= ...``), and then ``E = 1 + sum p_i``;
where acceptance falls faster than ``alpha^i`` the independent formula over-predicts.

On the roofline the verify step of ``B`` sequences at context ``L`` is a decode step of
``B (k + 1)`` tokens that reads each sequence's cache once::

    t_verify = max(B (k+1) (2 N_mm + a(L)) / F,  [P_read(B (k+1)) b_w + B kv_seq(L)] / W)

While the step is memory-bound the extra tokens ride along nearly free, so speculation buys
up to ``E[tokens]`` in speed; once it is compute-bound each extra token costs its full share
and the gain shrinks below 1; at long context the KV reads make the step memory-bound again
and the gain returns (MagicDec, Chen et al. 2024). The draft adds its own time: for
DeepSeek-V3's multi-token prediction (MTP) module, one extra transformer block and a second
pass through the shared output head per drafted token (V3 report, section 2.2). All times are
floors on pooled chips (:func:`llmmath.serving.decode_step`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import models, serving
from ._validate import finite_result, non_negative, positive, positive_int, result

__all__ = ["expected_tokens_per_step", "SpeculativeStep", "speculative_decode", "mtp_draft_fraction"]


@finite_result
def expected_tokens_per_step(draft_tokens: int, acceptance) -> float:
    """Tokens one verify step yields on average: the accepted draft tokens plus the target's own.

    ``acceptance``: a probability ``alpha`` in [0, 1] (each drafted token accepted independently:
    ``(1 - alpha^(k+1)) / (1 - alpha)``, Leviathan et al. 2023), or a sequence of ``draft_tokens``
    per-position acceptance rates ``p_1 >= p_2 >= ...`` (the share of steps whose i-th draft token
    was kept, as engines report them): ``1 + sum p_i``.

    Raises:
        ValueError: ``draft_tokens`` < 1; a rate outside [0, 1]; per-position rates that rise (a later
            token cannot be kept more often than an earlier one) or whose count is not ``draft_tokens``.
    """
    k = positive_int("draft_tokens", draft_tokens)
    a = np.asarray(acceptance, dtype=float)
    if np.any(~np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
        raise ValueError(f"acceptance rates must lie in [0, 1], got {acceptance!r}")
    if a.ndim == 0:
        alpha = float(a)
        return float(k + 1) if alpha == 1 else (1 - alpha ** (k + 1)) / (1 - alpha)
    if a.shape != (k,):
        raise ValueError(f"give one acceptance rate per draft position: {k} of them, got {a.size}")
    if np.any(np.diff(a) > 1e-12):
        raise ValueError(f"per-position acceptance must not rise with the position (a later draft token is kept "
                         f"only if the earlier ones are), got {a.tolist()}")
    return float(1.0 + a.sum())


def mtp_draft_fraction(model, batch, weight_dtype="bf16") -> float:
    """Time of one MTP draft token as a fraction of a decode step's weight read (dimensionless).

    The MTP module is one more transformer block (of the model's last kind: an MoE layer for
    DeepSeek-V3) plus a ``2d x d`` projection, and it reuses the output head, which it must read
    again: ``(one layer's share of the layer weights read + head + 2 d^2) / weights read``, at
    ``batch`` tokens (DeepSeek-V3 at B = 1: about 3%).

    Raises:
        ValueError: a non-positive batch. KeyError: unknown model.
    """
    m = models.get(model)
    B = positive("batch", batch)
    read = np.asarray(m.expected_params_read(B), dtype=float)
    head = m.lm_head_params or m.vocab * m.d_model
    lookup = m.embedding_params if not m.tied_embeddings else 0
    layers = read - head - m._norm_params(m.d_model) - (np.minimum(B, m.vocab) * m.d_model if lookup else 0.0)
    return result((layers / m.n_layers + head + 2 * m.d_model**2) / read)


@dataclasses.dataclass(frozen=True)
class SpeculativeStep:
    """One verify step against plain decode at the same batch and context (seconds; arrays broadcast)."""

    tokens_per_step: float          # E[tokens] per sequence per verify step
    verify_s: np.ndarray | float    # the target's step over k + 1 tokens per sequence
    draft_s: np.ndarray | float     # the draft's time for k tokens
    decode_s: np.ndarray | float    # one plain decode step
    verify_compute_bound: np.ndarray | bool

    @property
    def speedup(self):
        """Tokens per second per sequence, speculative over plain: ``E t_decode / (t_verify + t_draft)``."""
        return self.tokens_per_step * self.decode_s / (self.verify_s + self.draft_s)


def speculative_decode(model, chip, batch, context, n_chips=1, *, draft_tokens=1, acceptance=0.85,
                       draft_fraction=None, weight_dtype="bf16", kv_dtype="bf16") -> SpeculativeStep:
    """Speculative decoding (or MTP) on the roofline: the verify step, the draft, and the speed-up.

    Args:
        model, chip, batch, context, n_chips, weight_dtype, kv_dtype: as :func:`llmmath.serving.decode_step`
            (pooled chips; ``batch`` sequences, scalar or array, broadcasting with ``context``).
        draft_tokens: k, tokens drafted per sequence per step.
        acceptance: ``alpha`` or per-position rates (:func:`expected_tokens_per_step`).
        draft_fraction: the draft's time per drafted token as a fraction of a plain decode step
            (default: DeepSeek-style MTP, :func:`mtp_draft_fraction`; 0 for a free draft).

    Returns:
        :class:`SpeculativeStep`. DeepSeek-V3 in fp8 on 8 H200s, one MTP token accepted 85-90% of
        the time (the V3 report, section 5.4.3): about 1.8x at small batch, shrinking as the verify
        step turns compute-bound.

    Raises:
        ValueError: bad acceptance or draft tokens (:func:`expected_tokens_per_step`), a negative
            draft fraction, and everything :func:`llmmath.serving.decode_step` raises.
    """
    k = positive_int("draft_tokens", draft_tokens)
    E = expected_tokens_per_step(k, acceptance)
    B = positive("batch", batch)
    L = non_negative("context", context)
    plain = serving.decode_step(model, chip, B, L, n_chips, weight_dtype, kv_dtype, check_capacity=False)
    tokens = serving.decode_step(model, chip, B * (k + 1), L, n_chips, weight_dtype, kv_dtype, check_capacity=False)
    # k + 1 query tokens per sequence, but each sequence's cache is read once
    kv_once = plain.kv_s
    verify_mem = tokens.weight_s + kv_once
    verify = np.maximum(tokens.compute_s, verify_mem)
    f = (mtp_draft_fraction(model, B, weight_dtype) * plain.weight_s / plain.time_s if draft_fraction is None
         else non_negative("draft_fraction", draft_fraction))
    draft = k * f * plain.time_s
    return SpeculativeStep(E, result(verify), result(draft), result(plain.time_s),
                           np.asarray(tokens.compute_s >= verify_mem))
