"""Decode at long context on a CPU toy: the KV read against the weight read (claims 11, 33 and 34), measured.

The toy decode step. ``B`` sequences, each with an input row ``x_b`` (``d`` values) and a cache of
``L`` keys and ``L`` values (``d`` values each). The step computes ``q = x W`` with one shared
``d x d`` weight (``4 d^2`` bytes read once for the whole batch, ``2 B d^2`` FLOPs), then per
sequence the scores ``s_b = K_b q_b`` and the output ``o_b = s_b V_b`` (one head of width ``d``,
no softmax: it adds no bytes to speak of). All fp32. Per sequence the attention reads
``8 L d`` bytes and does ``4 L d`` FLOPs: 0.5 FLOP per byte, below any machine's ``F / W``,
so it is memory-bound at every batch, while the weight product turns compute-bound once
enough sequences share its read. Counted exactly (:func:`toy_flops`, :func:`toy_bytes`):

    FLOPs = 2 B d^2 + 4 B L d
    bytes = 4 (d^2 + B (2 L d + 4 d + 2 L))     weights, K and V, and each sequence's x (read),
                                                 q (written, read), s (written, read), o (written)

These are the bytes the step must move. On a CPU the weight product of a few rows runs through
chapter 1's block layouts (:class:`~llmmath.demos.kernels.BlockedWeight`), whichever of them and
the plain product is fastest for that batch, timed before the sweep; their partial sums, a few
``B d`` values, are not counted. The roofline prediction of a step is ``max(FLOPs / F, bytes / W)``
with this machine's ceilings, sampled between the rounds by a
:class:`~llmmath.demos.kernels.CeilingProbe` (``F`` the better of its square product and the best
rate any timed step reached, as :func:`~llmmath.demos.kernels.batch_sweep` does; ``W`` its best
read-only stream).

What the toy shows:

* :func:`batch_context_sweep` (chapter 3, claim 11): step time against the batch at a few
  contexts. Claim 11's balance batch -- compute time equal to memory time,
  :func:`balance_batch` -- rises with the context and does not exist past
  :func:`kv_limit_context`, because every sequence brings more bytes than FLOPs. What a sweep
  sees is the other face of it: the batch past which the time per sequence stops falling (the
  knee of ``t = s max(K, B)``, :func:`~llmmath.demos.kernels.fit_knee`) falls with the context,
  from about ``R = 2 F / W`` at ``L = 0`` to about ``d / (2 L)`` (where the batch's KV bytes equal
  the weight bytes), and what the cost per sequence settles at is the KV read, not the
  arithmetic.
* :func:`context_sweep` (chapter 8, claims 33 and 34): one sequence (``B = 1``) against the
  context. The step reads ``4 d^2`` bytes of weights and ``8 d`` bytes per token of context,
  equal at ``L* = d / 2`` (:func:`crossover_context`): flat below, proportional to ``L`` above.
  The attention alone is timed beside it, for its achieved KV read rate.

The calls are timed round-robin, each keeping its best, with the ceilings sampled at the start
of every round, on one BLAS thread on a CPU. Each timed call follows two untimed calls of itself,
so it finds the caches as it left them: the weight (4 MiB at ``d = 1024``, twice a 2 MiB L2) and
short caches come from the cache hierarchy, long caches stream from memory (or from a last-level
cache as large as the cache itself, as on a CPU with hundreds of MiB of L3, where the probe's
128 MiB streams run in the same regime). No read sweep evicts the caches between calls: on such
a CPU one would cost more than the demo.
"""

from __future__ import annotations

import dataclasses
import math
import numbers

import numpy as np

from . import kernels

__all__ = ["toy_flops", "toy_bytes", "weight_bytes", "kv_bytes_per_token", "crossover_context", "balance_batch",
           "kv_limit_context", "BatchContextSweep", "batch_context_sweep", "ContextSweep", "context_sweep",
           "MAX_CACHE_BYTES"]

#: Largest KV cache (bytes, K and V together) a sweep will allocate unless told otherwise: the toy must run on a
#: small machine in seconds.
MAX_CACHE_BYTES = 2**30
_B = 4.0   # bytes per fp32 value


def _whole(name: str, value, low: int) -> int:
    """``value`` as an int, or a ValueError naming ``name`` when it is not a whole number >= ``low``."""
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
            or not math.isfinite(value) or int(value) != value or value < low):
        raise ValueError(f"{name} must be a whole number >= {low}, got {value!r}")
    return int(value)


def _wholes(name: str, values, low: int, at_least: int) -> np.ndarray:
    """A 1-D list of distinct whole numbers >= ``low``, at least ``at_least`` of them, in increasing order."""
    try:
        vals = list(values)
    except TypeError:
        raise ValueError(f"{name} must be a list of whole numbers, got {values!r}") from None
    out = [_whole(f"each of {name}", v, low) for v in vals]
    if len(out) < at_least:
        raise ValueError(f"{name} must list at least {at_least} values, got {vals!r}")
    if any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"{name} must increase strictly, got {vals!r}")
    return np.asarray(out, dtype=np.int64)


def weight_bytes(d_model: int) -> float:
    """Bytes of the toy's shared ``d x d`` fp32 weight: ``4 d^2``."""
    d = _whole("d_model", d_model, 1)
    return _B * d * d


def kv_bytes_per_token(d_model: int) -> float:
    """Bytes one sequence reads per token of context: a key and a value of ``d`` fp32 values, ``8 d``."""
    return 2 * _B * _whole("d_model", d_model, 1)


def toy_flops(batch, context, d_model: int):
    """FLOPs of one toy step: ``2 B d^2`` (the weight product) ``+ 4 B L d`` (scores and output). Broadcasts."""
    d = _whole("d_model", d_model, 1)
    B, L = np.asarray(batch, dtype=float), np.asarray(context, dtype=float)
    return 2.0 * B * d * d + 4.0 * B * L * d


def toy_bytes(batch, context, d_model: int):
    """Bytes one toy step moves: ``4 (d^2 + B (2 L d + 4 d + 2 L))`` (see the module docstring). Broadcasts."""
    d = _whole("d_model", d_model, 1)
    B, L = np.asarray(batch, dtype=float), np.asarray(context, dtype=float)
    return _B * (d * d + B * (2.0 * L * d + 4.0 * d + 2.0 * L))


def crossover_context(d_model: int, batch: int = 1) -> float:
    """The context at which the batch's KV bytes equal the weight bytes: ``4 d^2 / (B 8 d) = d / (2 B)`` tokens."""
    return weight_bytes(d_model) / (_whole("batch", batch, 1) * kv_bytes_per_token(d_model))


def _per_sequence(context, d: int, F: float, W: float):
    """(weight read time, compute time per sequence, memory time per sequence) of the toy at ``context``."""
    L = np.asarray(context, dtype=float)
    m0 = _B * d * d / W
    c1 = (2.0 * d * d + 4.0 * L * d) / F
    m1 = _B * (2.0 * L * d + 4.0 * d + 2.0 * L) / W
    return m0, c1, m1


def _rates(flops_per_s, bytes_per_s):
    for name, v in (("flops_per_s", flops_per_s), ("bytes_per_s", bytes_per_s)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real) or not (math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite number > 0, got {v!r}")
    return float(flops_per_s), float(bytes_per_s)


def balance_batch(context, d_model: int, flops_per_s: float, bytes_per_s: float):
    """Claim 11's balance batch for the toy: the ``B`` at which ``toy_flops / F = toy_bytes / W``; ``inf`` where none.

    ``B* = (4 d^2 / W) / ((2 d^2 + 4 L d) / F - 4 (2 L d + 4 d + 2 L) / W)``, the form of
    :func:`llmmath.serving.balance_batch` with the toy's counts. Broadcasts over ``context``.

    Raises:
        ValueError: a negative context, ``d_model`` < 1, or a rate that is not finite and > 0.
    """
    F, W = _rates(flops_per_s, bytes_per_s)
    L = np.asarray(context, dtype=float)
    if not np.all(np.isfinite(L)) or np.any(L < 0):
        raise ValueError(f"context must be finite and >= 0, got {context!r}")
    m0, c1, m1 = _per_sequence(L, _whole("d_model", d_model, 1), F, W)
    margin = c1 - m1
    out = np.where(margin > 0, m0 / np.where(margin > 0, margin, 1.0), np.inf)
    return float(out) if out.ndim == 0 else out


def kv_limit_context(d_model: int, flops_per_s: float, bytes_per_s: float) -> float:
    """The context past which no batch balances the toy (:func:`balance_batch` is ``inf``), tokens.

    Where one sequence's compute time equals its memory time:
    ``L_max = (2 d^2 / F - 16 d / W) / ((8 d + 8) / W - 4 d / F)``; ``inf`` if the denominator is
    not positive (attention compute-bound: never on a machine with ``F / W`` above 0.5 FLOP/byte),
    0 if even ``L = 0`` does not balance.

    Raises:
        ValueError: ``d_model`` < 1, or a rate that is not finite and > 0.
    """
    F, W = _rates(flops_per_s, bytes_per_s)
    d = _whole("d_model", d_model, 1)
    head = 2.0 * d * d / F - 4.0 * _B * d / W
    slope = (2.0 * _B * d + 2.0 * _B) / W - 4.0 * d / F
    if slope <= 0:
        return float("inf")
    return max(0.0, head / slope)


def _cache(be, batch: int, context: int, d: int, max_cache_bytes: float):
    """K and V, each ``(batch, context, d)`` fp32 (one random block repeated: :func:`kernels._random`)."""
    need = 2 * _B * batch * context * d
    if need > max_cache_bytes:
        raise ValueError(f"the KV cache would take {need / 2**30:.2f} GiB ({batch} sequences x {context} tokens x "
                         f"8 x {d} bytes), more than max_cache_bytes = {max_cache_bytes / 2**30:.2f} GiB: lower the "
                         f"batch, the context or d_model")
    kv = kernels._random(be, (2, batch, max(context, 1), d), "fp32", 7)
    return kv[0], kv[1]


class _ToyBlocked(kernels.BlockedWeight):
    """:class:`kernels.BlockedWeight` with block shapes that divide the toy's ``d x d`` weight.

    The parent's shapes (2000 or 250 rows) are chosen for chapter 1's ``d = 8000``; here a block is the
    whole ``d`` or a quarter of it, 32 or 64 columns wide. On a 2-core Xeon VM (OpenBLAS 0.3.31, one
    thread, d = 1024) the plain product of 2-8 rows took 0.38-0.42 ms, 2.7-3x the one-row product
    (the BLAS packs ``W`` first, chapter 1), and the block layouts 0.13-0.21 ms.
    """

    def blocks(self):
        d, n = self.W.shape
        shapes = [(d, 64), (d, 32), (d // 4, 64), (d // 4, 32)]
        return [(kc, nc) for kc, nc in dict.fromkeys(shapes) if kc >= 1 and d % kc == 0 and n % nc == 0]


def _weight_product(be, W, Xb, Y, blocked):
    """``(label, fn)``: ``fn()`` writes ``Xb W`` into ``Y``, the fastest of the plain product and the block layouts
    of ``blocked`` that fit ``Xb``'s rows (:meth:`kernels.BlockedWeight.blocks_for`), each timed here with its copy
    back into ``Y`` (``blocked=None``: plain). ``label``: ``"plain"`` or ``"blocks kc x nc"``."""
    xp, B = be.xp, Xb.shape[0]
    cands = {"plain": (lambda: xp.matmul(Xb, W, out=Y))}
    for kc, nc in (blocked.blocks_for(B) if blocked is not None else []):
        run, Yb = blocked.product(Xb, kc, nc), Y.reshape(B, -1, nc)

        def fn(run=run, Yb=Yb):
            xp.copyto(Yb, run().transpose(1, 0, 2))    # (n/nc, B, nc) blocks back into Y's rows
        cands[f"blocks {kc}x{nc}"] = fn
    if len(cands) == 1:
        return "plain", cands["plain"]
    timed = kernels.time_interleaved(cands, rounds=3, warmup=1, be=be)
    label = min(timed, key=lambda k: timed[k].min_s)
    return label, cands[label]


def _attention(be, K, V, Y, B: int, L: int):
    """A function computing, for the first ``B`` sequences, ``s = K[:L] q`` and ``o = s V[:L]`` with ``q`` = ``Y``'s
    rows, into buffers made here (each reads its sequence's L keys and L values once)."""
    xp, d = be.xp, Y.shape[1]
    Kb, Vb = K[:B, :L], V[:B, :L]        # each sequence's L rows stay contiguous
    q = Y.reshape(B, d, 1)               # a view: (d, 1) blocks a BLAS accepts
    S = xp.empty((B, L, 1), dtype=Y.dtype)
    St = S.reshape(B, 1, L)
    O = xp.empty((B, 1, d), dtype=Y.dtype)

    def attend():
        xp.matmul(Kb, q, out=S)          # scores: reads K
        xp.matmul(St, Vb, out=O)         # output: reads V
        return O

    return attend


def _weights_for_batches(be, W, X, batches):
    """Per batch ``B``: ``(label, weight_fn, Y)``: the first ``B`` rows of ``X`` times ``W``, into ``Y``."""
    blocked = None if be.is_gpu else _ToyBlocked(W, be)
    out = {}
    for B in batches:
        Y = be.xp.matmul(X[:B], W)       # the queries, computed once (the attention alone reads them as they are)
        label, fn = _weight_product(be, W, X[:B], Y, blocked)
        out[int(B)] = (label, fn, Y)
    return out


def _step(weight_fn, attend):
    """The toy step: the weight product, then the attention over the cache (``attend=None``: context 0)."""
    if attend is None:
        return weight_fn

    def step():
        weight_fn()
        return attend()

    return step


def _probe_and_time(fns: dict, rounds: int, be):
    """``(probe, {name: best seconds})``: ``rounds`` rounds, each a probe sample then every function once.

    Each timed call follows two untimed calls of the same function (:func:`kernels.time_fn` with two
    warm-ups), so every call finds the caches as it left them: what fits in them comes from them, the
    rest streams from memory. Timed back to back instead, calls that share data (the steps share ``W``
    and the start of one cache) find them in whatever state the call before left, and the first call
    after the probe's streams finds them evicted (seen on a 2-core Xeon VM: the shortest context's step
    1.4x the next one's, with one warm-up call; the second call after the streams still took 1.5x the third).
    """
    probe = kernels.CeilingProbe(("fp32",), be=be, matmul_n=None if be.is_gpu else 1024)
    best = {name: float("inf") for name in fns}
    for _ in range(rounds):
        probe.sample()
        for name, fn in fns.items():
            best[name] = min(best[name], kernels.time_fn(fn, warmup=2, repeats=1, be=be).min_s)
    return probe, best


@dataclasses.dataclass(frozen=True)
class BatchContextSweep:
    """Result of :func:`batch_context_sweep`: ``measured_s[i, j]``, the best step at ``contexts[i]``, ``batches[j]``."""

    batches: np.ndarray
    contexts: np.ndarray
    measured_s: np.ndarray
    d_model: int
    flops_per_s: float
    bytes_per_s: float
    copy_bytes_per_s: float
    device: str
    formulation: tuple = ()     # per batch: the weight product used, "plain" or "blocks kc x nc"

    @property
    def flops(self) -> np.ndarray:
        """:func:`toy_flops` per (context, batch)."""
        return toy_flops(self.batches[None, :], self.contexts[:, None], self.d_model)

    @property
    def bytes(self) -> np.ndarray:
        """:func:`toy_bytes` per (context, batch)."""
        return toy_bytes(self.batches[None, :], self.contexts[:, None], self.d_model)

    @property
    def compute_s(self) -> np.ndarray:
        return self.flops / self.flops_per_s

    @property
    def memory_s(self) -> np.ndarray:
        return self.bytes / self.bytes_per_s

    @property
    def predicted_s(self) -> np.ndarray:
        """The roofline: ``max(FLOPs / F, bytes / W)`` per (context, batch)."""
        return np.maximum(self.compute_s, self.memory_s)

    @property
    def per_sequence_s(self) -> np.ndarray:
        """Measured step time / batch."""
        return self.measured_s / self.batches[None, :]

    @property
    def fitted_knees(self) -> np.ndarray:
        """Per context, the measured knee: :func:`kernels.fit_knee` through every batch (``t = s max(K, B)``)."""
        return np.array([kernels.fit_knee(self.batches, t) for t in self.measured_s])

    @property
    def predicted_knees(self) -> np.ndarray:
        """Per context, the same fit through the roofline's times at the same batches."""
        return np.array([kernels.fit_knee(self.batches, t) for t in self.predicted_s])

    @property
    def balance_batches(self) -> np.ndarray:
        """Per context, claim 11's :func:`balance_batch` with this sweep's ceilings (``inf``: none)."""
        return np.atleast_1d(balance_batch(self.contexts, self.d_model, self.flops_per_s, self.bytes_per_s))

    @property
    def kv_limit_context(self) -> float:
        """:func:`kv_limit_context` with this sweep's ceilings."""
        return kv_limit_context(self.d_model, self.flops_per_s, self.bytes_per_s)

    def table(self) -> str:
        """Measured / predicted step time per context and batch, with the bound the roofline expects."""
        head = f"{'L':>6} " + " ".join(f"{'B=' + str(int(b)):>15}" for b in self.batches)
        rows = [head + "   (measured ms / predicted ms, c = compute-bound, m = memory-bound)"]
        for i, L in enumerate(self.contexts):
            cells = []
            for j in range(self.batches.size):
                bound = "c" if self.compute_s[i, j] >= self.memory_s[i, j] else "m"
                cells.append(f"{self.measured_s[i, j] * 1e3:6.2f}/{self.predicted_s[i, j] * 1e3:6.2f}{bound}")
            rows.append(f"{int(L):>6} " + " ".join(f"{c:>15}" for c in cells))
        return "\n".join(rows)


def batch_context_sweep(batches=(1, 2, 4, 8, 16, 32, 64), contexts=(0, 64, 256), d_model: int = 1024,
                        rounds: int = 5, max_cache_bytes: float = MAX_CACHE_BYTES, be=None) -> BatchContextSweep:
    """Time the toy decode step (module docstring) at every (context, batch), round-robin, beside the roofline.

    Shapes: ``W`` (d, d), ``x`` (B, d), K and V (B, L, d) each, fp32; one cache of ``max(batches) x
    max(contexts)`` tokens is allocated and sliced (2 x 64 x 256 x 1024 x 4 bytes = 128 MiB at the
    defaults). A context of 0 times the weight product alone. Chapter 3, claim 11.

    Raises:
        ValueError: fewer than two batches or contexts, a batch < 1, a context < 0, values not increasing,
            ``d_model`` or ``rounds`` < 1, or a cache larger than ``max_cache_bytes``.
    """
    Bs = _wholes("batches", batches, 1, 2)
    Ls = _wholes("contexts", contexts, 0, 2)
    d = _whole("d_model", d_model, 1)
    rounds = _whole("rounds", rounds, 1)
    be = be or kernels.backend()
    K, V = _cache(be, int(Bs[-1]), int(Ls[-1]), d, max_cache_bytes)
    W = kernels._random(be, (d, d), "fp32", 3)
    X = kernels._random(be, (int(Bs[-1]), d), "fp32", 4)
    with kernels.one_blas_thread(not be.is_gpu):
        weights = _weights_for_batches(be, W, X, Bs)
        fns = {(int(L), int(B)): _step(weights[int(B)][1],
                                       _attention(be, K, V, weights[int(B)][2], int(B), int(L)) if L else None)
               for L in Ls for B in Bs}
        probe, best = _probe_and_time(fns, rounds, be)
    measured = np.array([[best[(int(L), int(B))] for B in Bs] for L in Ls])
    own = float(np.max(toy_flops(Bs[None, :], Ls[:, None], d) / measured))   # the best rate any step reached
    return BatchContextSweep(Bs.astype(float), Ls.astype(float), measured, d,
                             max(probe.flops_per_s("fp32"), own), probe.read_bytes_per_s, probe.copy_bytes_per_s,
                             be.device_name, tuple(weights[int(B)][0] for B in Bs))


@dataclasses.dataclass(frozen=True)
class ContextSweep:
    """Result of :func:`context_sweep`: one sequence (batch 1), arrays indexed by context (seconds; tokens)."""

    contexts: np.ndarray
    step_s: np.ndarray          # best measured step: weight product + attention
    attention_s: np.ndarray     # best measured attention alone (scores and output over the cache)
    weights_s: float            # best measured weight product alone (one row times W)
    d_model: int
    flops_per_s: float
    bytes_per_s: float
    copy_bytes_per_s: float
    device: str
    formulation: str = "plain"  # the weight product used: "plain" or "blocks kc x nc"

    @property
    def crossover_context(self) -> float:
        """``L* = d / 2``: the KV bytes of one sequence equal the weight bytes (:func:`crossover_context`)."""
        return crossover_context(self.d_model, 1)

    @property
    def measured_crossover_context(self) -> float:
        """The context at which the attention alone took as long as the weight product alone, tokens.

        Interpolated in logs between the two contexts that bracket it; ``nan`` when the attention was
        slower at every context or faster at every context (no crossing inside the sweep).
        """
        above = np.flatnonzero(self.attention_s >= self.weights_s)
        if above.size == 0 or above[0] == 0:
            return float("nan")
        i = int(above[0])
        lx, ly = np.log(self.contexts[i - 1:i + 1]), np.log(self.attention_s[i - 1:i + 1])
        if ly[1] == ly[0]:
            return float(self.contexts[i])
        return float(np.exp(lx[0] + (np.log(self.weights_s) - ly[0]) * (lx[1] - lx[0]) / (ly[1] - ly[0])))

    @property
    def predicted_s(self) -> np.ndarray:
        """The roofline of the step: ``max(toy_flops / F, toy_bytes / W)`` at ``B = 1``."""
        return np.maximum(toy_flops(1, self.contexts, self.d_model) / self.flops_per_s,
                          toy_bytes(1, self.contexts, self.d_model) / self.bytes_per_s)

    @property
    def predicted_weights_s(self) -> float:
        """The weight product alone, one row: ``max(2 d^2 / F, 4 (d^2 + 2 d) / W)``."""
        d = self.d_model
        return max(2.0 * d * d / self.flops_per_s, _B * (d * d + 2.0 * d) / self.bytes_per_s)

    @property
    def kv_bytes(self) -> np.ndarray:
        """Bytes the attention alone reads: K and V, ``8 L d``."""
        return self.contexts * kv_bytes_per_token(self.d_model)

    @property
    def predicted_attention_s(self) -> np.ndarray:
        """``max(4 L d / F, 8 L d / W)``: the attention alone, memory-bound."""
        return np.maximum(4.0 * self.contexts * self.d_model / self.flops_per_s, self.kv_bytes / self.bytes_per_s)

    @property
    def attention_arithmetic_s(self) -> np.ndarray:
        """The attention's ``4 L d`` FLOPs at the machine's ``F``: what it would take if arithmetic set its time."""
        return 4.0 * self.contexts * self.d_model / self.flops_per_s

    @property
    def kv_bytes_per_s(self) -> np.ndarray:
        """Achieved read rate of the attention alone: ``8 L d`` bytes / its measured time."""
        return self.kv_bytes / self.attention_s

    def slope(self, low: float, high: float) -> float:
        """Log-log slope (:func:`kernels.loglog_slope`) of the step time over the contexts in ``[low, high]``.

        Raises:
            ValueError: fewer than two contexts in the range.
        """
        keep = (self.contexts >= low) & (self.contexts <= high)
        if keep.sum() < 2:
            raise ValueError(f"need at least two contexts in [{low:g}, {high:g}], the sweep has "
                             f"{self.contexts[keep].astype(int).tolist()}")
        return kernels.loglog_slope(self.contexts[keep], self.step_s[keep])

    def predicted_slope(self, low: float, high: float) -> float:
        """The same slope through the roofline's times."""
        keep = (self.contexts >= low) & (self.contexts <= high)
        if keep.sum() < 2:
            raise ValueError(f"need at least two contexts in [{low:g}, {high:g}]")
        return kernels.loglog_slope(self.contexts[keep], self.predicted_s[keep])

    def table(self) -> str:
        rows = [f"{'L':>7} {'L/L*':>6} {'step':>9} {'predicted':>9} {'meas/pred':>9} {'attention':>9} "
                f"{'KV GB/s':>8}"]
        for i, L in enumerate(self.contexts):
            rows.append(f"{int(L):>7} {L / self.crossover_context:>6.3g} {self.step_s[i] * 1e3:>7.3f}ms "
                        f"{self.predicted_s[i] * 1e3:>7.3f}ms {self.step_s[i] / self.predicted_s[i]:>9.2f} "
                        f"{self.attention_s[i] * 1e3:>7.3f}ms {self.kv_bytes_per_s[i] / 1e9:>8.1f}")
        return "\n".join(rows)


def context_sweep(contexts=(8, 16, 32, 64, 256, 512, 1024, 4096, 8192, 16384), d_model: int = 1024,
                  rounds: int = 7, max_cache_bytes: float = MAX_CACHE_BYTES, be=None) -> ContextSweep:
    """Time the toy step for one sequence (``B = 1``), and its attention alone, against the context.

    Shapes: ``W`` (d, d) fp32 (4 MiB at d = 1024), K and V (L, d) each, one cache of ``max(contexts)``
    tokens sliced (128 MiB at the defaults). The crossover ``L* = d / 2`` (512 tokens at the
    defaults); the default contexts run from ``L* / 64`` to ``32 L*``. Chapter 8, claims 33 and 34.

    Raises:
        ValueError: fewer than three contexts, a context < 1, contexts not increasing, ``d_model`` or
            ``rounds`` < 1, or a cache larger than ``max_cache_bytes``.
    """
    Ls = _wholes("contexts", contexts, 1, 3)
    d = _whole("d_model", d_model, 1)
    rounds = _whole("rounds", rounds, 1)
    be = be or kernels.backend()
    K, V = _cache(be, 1, int(Ls[-1]), d, max_cache_bytes)
    W = kernels._random(be, (d, d), "fp32", 3)
    X = kernels._random(be, (1, d), "fp32", 4)
    with kernels.one_blas_thread(not be.is_gpu):
        label, weight_fn, Y = _weights_for_batches(be, W, X, [1])[1]
        fns = {"weights": weight_fn}
        for L in Ls:
            attend = _attention(be, K, V, Y, 1, int(L))
            fns[("step", int(L))] = _step(weight_fn, attend)
            fns[("attention", int(L))] = attend
        probe, best = _probe_and_time(fns, rounds, be)
    return ContextSweep(Ls.astype(float), np.array([best[("step", int(L))] for L in Ls]),
                        np.array([best[("attention", int(L))] for L in Ls]), best["weights"], d,
                        probe.flops_per_s("fp32"),
                        probe.read_bytes_per_s, probe.copy_bytes_per_s, be.device_name, label)
