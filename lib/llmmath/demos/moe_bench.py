"""A real mixture-of-experts layer, measured: uniform routing, grouping by expert, one matmul pair per expert.

The measured demo of chapter 3 (claim 10): :func:`moe_sweep` runs the layer on NumPy or CuPy
(:mod:`llmmath.demos.kernels`) over a range of batches and puts its time beside the per-expert
roofline of :mod:`llmmath.moe` (the math: routing statistics and the two sparsities).
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Sequence

import numpy as np

from . import kernels
from .._validate import flag, non_negative_int, positive, positive_int, scalar, whole
from ..moe import _experts

__all__ = ["route_uniform", "tokens_per_expert", "BlockedExperts", "grouped_expert_matmul", "moe_reference",
           "expert_in_cache_s", "MoESweep", "moe_sweep", "default_moe_sizes"]


def route_uniform(batch: int, n_experts: int, top_k: int, seed: int = 0, xp=np):
    """Uniform top-k routing: an int array ``(B, k)`` of distinct expert ids per token.

    Each row is the k largest of E uniform scores -- a uniform k-subset, as a
    router with random logits would pick. ``xp`` is ``numpy`` or ``cupy``.

    Raises:
        ValueError: batch < 1, k > E.
    """
    B = positive_int("batch", batch)
    E, k = _experts(n_experts, top_k)
    rng = xp.random.default_rng(non_negative_int("seed", seed))
    scores = rng.random((B, E), dtype=xp.float32)
    if k == E:
        return xp.broadcast_to(xp.arange(E), (B, E)).copy()
    return xp.argpartition(scores, E - k, axis=1)[:, E - k:]


def tokens_per_expert(assign, n_experts: int):
    """How many tokens each expert received: ``bincount`` of an assignment ``(B, k)`` -> ``(E,)`` ints."""
    E = positive_int("n_experts", n_experts)
    assign = _ids("assign", assign, E)
    xp = _xp_of(assign)
    return xp.bincount(assign.ravel(), minlength=E)


def _ids(name, assign, E):
    """``assign`` as an integer array (NumPy or CuPy) of expert ids in 0..E-1, else a clear error."""
    if _xp_of(assign) is np:
        if isinstance(assign, (bool, np.bool_, str, bytes)) or assign is None:
            raise TypeError(f"{name} must be an integer array of expert ids, got {assign!r}")
        assign = np.asarray(assign)
    if assign.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array of expert ids (0..{E - 1}), got dtype {assign.dtype}")
    if assign.size and (int(assign.min()) < 0 or int(assign.max()) >= E):
        raise ValueError(f"{name} holds expert ids outside 0..{E - 1}")
    return assign


def _xp_of(a):
    mod = type(a).__module__
    if mod.startswith("cupy"):
        import cupy

        return cupy
    return np


class BlockedExperts:
    """Each expert's two matrices re-laid out in column blocks, for experts that receive few tokens (CPU).

    Why: an expert with a handful of tokens multiplies a ``T x d`` block of rows by
    its ``d x f`` weight. A BLAS runs that through its general matrix-matrix routine,
    which first copies ("packs") the weight into cache-sized panels; with ``T`` from
    2 to a few dozen that costs 2-4x the weight's read time (measured on the 2-core
    EPYC VM with OpenBLAS 0.3.31, one thread, d = 1152, f = 576: 3.3-3.9x the
    roofline at T = 2-8, 1.8x at T = 24), and with ``T = 1`` NumPy calls a
    matrix-vector routine that reads the weight at 50-65% of the read ceiling.
    Stored as ``(d x 32)`` column blocks (``W_up[e]`` as ``(f/32, d, 32)``,
    ``W_down[e]`` as ``(d/32, f, 32)``), an expert's product is one stacked
    ``matmul`` of ``T x d`` rows by each block, small enough for the BLAS to
    multiply as the block streams in: 1.0-1.8x its roofline for every ``T`` up to
    48 in the same measurement, against 1.8-4.5x plain (the layout :class:`llmmath.demos.kernels.BlockedWeight`
    uses for a dense layer, with ``kc = d``). At ``T = 64`` the plain product caught
    up, so experts with more than :attr:`max_rows` tokens keep it.

    Which block width is fastest depends on the token count, in a pattern set by the
    BLAS's register tiles rather than by anything a roofline sees (same VM, all 32
    experts streamed from memory, ratio to the roofline at T = 1..8: 32 columns 1.08,
    1.02, 1.38, 1.34, 1.66, 1.08, 1.34, 1.24; 64 columns 1.40, 1.03, 1.32, 1.02, 1.34,
    1.35, 1.54, 1.21). An odd count can be slower than the next even one: 3 tokens
    took 7.6 ms for all 32 experts at their better width, 4 tokens 5.9 ms. So
    :meth:`plan` times both widths for each token count in its rows on this machine,
    and an expert with ``T`` tokens is multiplied as the fastest planned
    ``(T', width)`` with ``T <= T' <= 2 T``: padded with ``T' - T`` zero rows
    when that is faster (what GPU kernels do to fill a tile; the zero rows cost
    multiply-adds, not weight reads, and their outputs are dropped). Until it runs
    (and for ``T`` it did not plan) ``T`` rows at 32 columns are used.

    Shapes: ``w_up`` ``(E, d, f)``, ``w_down`` ``(E, f, d)`` NumPy float arrays with
    ``d`` and ``f`` multiples of :attr:`NC`. Memory: a second copy of every expert
    (:attr:`up`, :attr:`down`), and a third at 64 columns where they divide.

    Raises:
        ValueError: shapes that do not match or do not divide into blocks.
    """

    NC = 32          # columns per block (the default width)
    WIDTHS = (32, 64)  # widths plan() chooses between
    PLAN_ROWS = tuple(range(1, 13)) + (16,)   # token counts plan() times by default
    max_rows = 48    # experts with more tokens use the plain product

    def __init__(self, w_up, w_down):
        w_up, w_down = np.asarray(w_up), np.asarray(w_down)
        if w_up.ndim != 3 or w_down.ndim != 3 or w_down.shape != (w_up.shape[0], w_up.shape[2], w_up.shape[1]):
            raise ValueError(f"need w_up (E, d, f) and w_down (E, f, d), got {w_up.shape} and {w_down.shape}")
        E, d, f = w_up.shape
        if d % self.NC or f % self.NC:
            raise ValueError(f"BlockedExperts needs d and f multiples of {self.NC}, got d = {d}, f = {f}")
        self.shape = (E, d, f)
        self.layouts = {nc: (np.ascontiguousarray(w_up.reshape(E, d, f // nc, nc).transpose(0, 2, 1, 3)),   # (E, f/nc, d, nc)
                             np.ascontiguousarray(w_down.reshape(E, f, d // nc, nc).transpose(0, 2, 1, 3)))  # (E, d/nc, f, nc)
                        for nc in self.WIDTHS if d % nc == 0 and f % nc == 0}
        self.up, self.down = self.layouts[self.NC]
        self.width_for: dict = {}    # tokens -> block width, filled by plan()
        self.rows_for: dict = {}     # tokens -> rows multiplied (zero rows padded), filled by plan()

    def ffn(self, e: int, x, out=None, width: int | None = None):
        """``relu(x W_up[e]) W_down[e]`` for ``x`` of shape ``(T, d)``; written into ``out`` ``(T, d)`` if given.

        ``width``: the block width to use (one of :attr:`layouts`), on exactly ``T`` rows; default the
        planned width and row count for ``T`` (:meth:`plan`; ``x`` padded with zero rows if that was faster).
        """
        E, d, f = self.shape
        T = x.shape[0]
        nc = width or self.width_for.get(T, self.NC)
        rows = T if width else self.rows_for.get(T, T)
        up, down = self.layouts[nc]
        if rows > T:                                  # zero rows: their outputs are computed and dropped
            padded = np.zeros((rows, d), dtype=up.dtype)
            padded[:T] = x
            x = padded
        h = np.empty((rows, f), dtype=up.dtype)
        # block j of the product is columns nc j .. nc (j + 1) - 1 of h: the BLAS writes it there (a strided output)
        np.matmul(x, up[e], out=h.reshape(rows, f // nc, nc).swapaxes(0, 1))
        np.maximum(h, 0, out=h)
        y = out if out is not None and rows == T else np.empty((rows, d), dtype=up.dtype)
        np.matmul(h, down[e], out=y.reshape(rows, d // nc, nc).swapaxes(0, 1))
        if rows == T:
            return y
        if out is None:
            return y[:T]
        out[...] = y[:T]
        return out

    def plan(self, rows=None, rounds: int = 2, seed: int = 0) -> dict:
        """Time every width for each token count in ``rows`` (default :attr:`PLAN_ROWS`; all experts in
        turn, so their weights stream from memory as in the layer) and, for each ``T`` in ``rows``, keep
        the fastest ``(T', width)`` with ``T'`` in ``rows`` and ``T <= T' <= 2 T`` (:attr:`rows_for`,
        :attr:`width_for`); returns ``{T: (T', width)}`` for every ``T`` planned so far. A token count
        not planned runs as it is, at :attr:`NC` columns.

        The candidates are timed round-robin, ``rounds`` rounds after one warm-up
        (:func:`llmmath.demos.kernels.time_interleaved`), each keeping its best, so a burst of
        other work slows one sample of each rather than every sample of one.

        Raises:
            ValueError: a row count or ``rounds`` that is not a whole number >= 1.
        """
        rows = sorted({positive_int("rows", T) for T in (self.PLAN_ROWS if rows is None else rows)})
        rounds = positive_int("rounds", rounds)
        if not rows:
            return self.planned()
        E, d, _ = self.shape
        rng = np.random.default_rng(seed)
        fns = {}
        for T in rows:
            x = rng.standard_normal((T, d)).astype(self.up.dtype)
            out = np.empty((T, d), dtype=self.up.dtype)
            for nc in self.layouts:
                def run(x=x, out=out, nc=nc):
                    for e in range(E):
                        self.ffn(e, x, out, width=nc)
                fns[(T, nc)] = run
        t = kernels.time_interleaved(fns, rounds=rounds, warmup=1)
        for T in rows:
            T2, nc = min(((T2, nc) for T2 in rows if T <= T2 <= 2 * T for nc in self.layouts),
                         key=lambda c: t[c].min_s)
            self.rows_for[T], self.width_for[T] = T2, nc
        return self.planned()

    def planned(self) -> dict:
        """``{T: (rows multiplied, block width)}`` for every token count :meth:`plan` has chosen for."""
        return {T: (self.rows_for.get(T, T), self.width_for[T]) for T in sorted(self.width_for)}

    def use_plan(self, plan: dict) -> None:
        """Take ``plan`` (:meth:`planned`'s form, e.g. another copy's or a :class:`MoESweep`'s) instead of timing one.

        Raises:
            ValueError: an entry that is not ``T: (rows, width)`` with ``rows >= T >= 1`` and a width of
                :attr:`layouts`.
        """
        for T, entry in plan.items():
            ok = (isinstance(entry, tuple) and len(entry) == 2 and int(entry[0]) >= int(T) >= 1
                  and entry[1] in self.layouts)
            if not ok:
                raise ValueError(f"plan must map tokens T to (rows >= T, width in {tuple(self.layouts)}), "
                                 f"got {T!r}: {entry!r}")
        self.rows_for = {int(T): int(r) for T, (r, w) in plan.items()}
        self.width_for = {int(T): int(w) for T, (r, w) in plan.items()}


def grouped_expert_matmul(x, assign, w_up, w_down, method: str = "loop", blocked: "BlockedExperts | None" = None):
    """One MoE layer's routed experts: ``y_b = (1/k) sum_j relu(x_b W_up[e_bj]) W_down[e_bj]``.

    Args:
        x: ``(B, d)`` token activations.
        assign: ``(B, k)`` expert ids (from :func:`route_uniform`).
        w_up: ``(E, d, f)``; w_down: ``(E, f, d)`` -- each expert's two matrices.
        method: ``"loop"`` groups the ``B k`` (token, expert) pairs by expert and runs one
            matmul pair per expert that received tokens (untouched experts are never
            read, as in a real decode step); ``"padded"`` scatters the groups into an
            ``(E, T_max, d)`` buffer and runs two batched matmuls (two kernel launches,
            every expert read; what a GPU prefers at large batch).
        blocked: ``"loop"`` on NumPy only: a :class:`BlockedExperts` of the same weights;
            experts with at most ``blocked.max_rows`` tokens then multiply through it.

    Returns:
        ``(B, d)`` array, same dtype and backend as ``x``.

    Raises:
        ValueError: mismatched shapes or an unknown method.
    """
    xp = _xp_of(x)
    if xp is np:  # lists and other array-likes; CuPy arrays stay on the device
        named = {"x": x, "w_up": w_up, "w_down": w_down}
        for name, a in named.items():
            if isinstance(a, (bool, np.bool_, str, bytes)) or a is None or np.asarray(a).dtype.kind != "f":
                raise TypeError(f"{name} must be a float array, got {a!r}"[:200])
        x, w_up, w_down = (np.asarray(a) for a in named.values())
        assign = np.asarray(assign)
    if x.ndim != 2 or assign.ndim != 2 or w_up.ndim != 3 or w_down.ndim != 3:
        raise ValueError("need x (B, d), assign (B, k), w_up (E, d, f), w_down (E, f, d)")
    B, d = x.shape
    E, d2, f = w_up.shape
    if d2 != d or w_down.shape != (E, f, d) or assign.shape[0] != B:
        raise ValueError(f"shape mismatch: x {x.shape}, assign {assign.shape}, w_up {w_up.shape}, "
                         f"w_down {w_down.shape}")
    if method not in ("loop", "padded"):
        raise ValueError(f"method must be 'loop' or 'padded', got {method!r}")
    if blocked is not None:
        if not isinstance(blocked, BlockedExperts) or blocked.shape != (E, d, f):
            raise ValueError(f"blocked must be a BlockedExperts of these (E, d, f) = {(E, d, f)} weights, got "
                             f"{getattr(blocked, 'shape', type(blocked).__name__)}")
        if method != "loop" or xp is not np:
            raise ValueError("blocked experts are used by method='loop' on NumPy arrays only")
    assign = _ids("assign", assign, E)
    k = assign.shape[1]
    flat = assign.ravel()
    order = xp.argsort(flat, kind="stable")
    tok = order // k                                   # token of each sorted pair
    counts = xp.bincount(flat, minlength=E)
    out = xp.zeros((B * k, d), dtype=x.dtype)          # one row per (token, slot), in sorted order
    if method == "loop":
        counts_h = counts.get() if hasattr(counts, "get") else counts
        start = 0
        for e in np.nonzero(counts_h)[0]:
            n = int(counts_h[e])
            rows = tok[start:start + n]
            if blocked is not None and n <= blocked.max_rows:
                blocked.ffn(e, x[rows], out=out[start:start + n])
            else:
                h = x[rows] @ w_up[e]
                xp.maximum(h, 0, out=h)
                out[start:start + n] = h @ w_down[e]
            start += n
    else:
        T = int(counts.max())
        starts = xp.cumsum(counts) - counts
        e_sorted = flat[order]
        pos = xp.arange(B * k) - starts[e_sorted]          # position within its expert's group (CuPy-safe)
        buf = xp.zeros((E, max(T, 1), d), dtype=x.dtype)
        buf[e_sorted, pos] = x[tok]
        h = xp.matmul(buf, w_up)
        xp.maximum(h, 0, out=h)
        y = xp.matmul(h, w_down)
        out[...] = y[e_sorted, pos]
    # scatter back: each token has exactly k rows; put them in (B, k) order then sum
    inv = xp.empty_like(order)
    inv[order] = xp.arange(B * k)
    y = out[inv].reshape(B, k, d).sum(axis=1) / k
    return y


def moe_reference(x, assign, w_up, w_down) -> np.ndarray:
    """The same layer in float64 NumPy, token by token (slow; for checking small cases)."""
    x, assign = np.asarray(x, dtype=np.float64), np.asarray(assign)
    w_up, w_down = np.asarray(w_up, dtype=np.float64), np.asarray(w_down, dtype=np.float64)
    if x.ndim != 2 or assign.ndim != 2 or w_up.ndim != 3 or w_down.ndim != 3:
        raise ValueError("need x (B, d), assign (B, k), w_up (E, d, f), w_down (E, f, d)")
    E, d, f = w_up.shape
    if x.shape[1] != d or w_down.shape != (E, f, d) or assign.shape[0] != x.shape[0]:
        raise ValueError(f"shape mismatch: x {x.shape}, assign {assign.shape}, w_up {w_up.shape}, "
                         f"w_down {w_down.shape}")
    assign = _ids("assign", assign, E)
    B, k = assign.shape
    y = np.zeros_like(x)
    for j in range(k):
        e = assign[:, j]
        h = np.maximum(np.einsum("bd,bdf->bf", x, w_up[e]), 0)
        y += np.einsum("bf,bfd->bd", h, w_down[e])
    return y / k


def expert_in_cache_s(tokens: Sequence[int], d_model: int | None = None, d_ff: int | None = None,
                      repeats: int = 20, plan: dict | None = None, be=None) -> np.ndarray:
    """Seconds one expert's ``relu(x W_up) W_down`` takes for ``T`` tokens with its weights already cached (CPU).

    The same product the CPU sweep runs (:class:`BlockedExperts` where ``T`` allows and
    the sizes divide, else plain), with ``plan`` -- a sweep's :attr:`MoESweep.plan`,
    tokens -> (rows multiplied, block width) -- so that each ``T`` runs exactly as it ran
    in that sweep (zero rows padded included); without one, planned here the same way,
    in cache, which may choose differently. Called ``repeats`` times on one expert so its
    ``2 d f`` weights stay in the cache (5.3 MB at the default sizes: inside a 32 MiB
    L3, not a 1 MiB L2); the best call is returned. It is the layer's time per expert
    when memory costs nothing: set beside the read floor ``2 d f b / W`` it shows how
    close to compute-bound a few-token expert already is, the part of the gap to the
    roofline that the roofline's perfect overlap of the two hides (chapter 3).

    Shapes: ``tokens`` a list of whole numbers >= 1; returns an array of the same length (s).

    Raises:
        ValueError: a token count < 1, a size < 1, or a plan :meth:`BlockedExperts.use_plan` refuses
            (``plan`` is used only where the blocked layout is).
    """
    be = be or kernels.backend()
    dflt = default_moe_sizes(be)
    d = positive_int("d_model", dflt["d_model"] if d_model is None else d_model)
    f = positive_int("d_ff", dflt["d_ff"] if d_ff is None else d_ff)
    tokens = whole("tokens", list(tokens), 1)
    repeats = positive_int("repeats", repeats)
    w_up, w_down = _random_experts(be, 1, d, f, "fp32", 21)
    np_ok = not be.is_gpu and d % BlockedExperts.NC == 0 and f % BlockedExperts.NC == 0
    blocked = BlockedExperts(w_up, w_down) if np_ok else None
    out = []
    with kernels.one_blas_thread(not be.is_gpu):
        if blocked is not None and plan:          # exactly the sweep's rows and widths
            blocked.use_plan(plan)
        elif blocked is not None:                 # planned the same way as the sweep plans, here in cache
            blocked.plan(rounds=2)
        for i, T in enumerate(tokens.astype(int)):
            x = kernels._random(be, (int(T), d), "fp32", 23 + i)
            assign = be.xp.zeros((int(T), 1), dtype=be.xp.int64)
            fn = lambda: grouped_expert_matmul(x, assign, w_up, w_down, "loop", blocked)  # noqa: E731
            out.append(kernels.time_fn(fn, warmup=2, repeats=repeats, be=be).min_s)
    return np.asarray(out)


def default_moe_sizes(be=None) -> dict:
    """Sizes for :func:`moe_sweep` on this backend.

    CPU: E = 32 experts of d = 1152, f = 576 in fp32, top-4 (170 MB of expert weights,
    beyond a 2-core VM's caches; multiples of 32 for :class:`BlockedExperts` but not
    powers of two, to avoid cache aliasing, see :func:`llmmath.demos.kernels.default_sweep_sizes`),
    B = 1..1024.
    GPU: DeepSeek-V3's routed layer -- E = 256, k = 8, d = 7168, f = 2048 in fp16
    (15 GB of expert weights), B = 1..16384.
    """
    be = be or kernels.backend()
    if be.is_gpu:
        return dict(n_experts=256, top_k=8, d_model=7168, d_ff=2048, dtype="fp16",
                    batches=[2**i for i in range(15)])
    return dict(n_experts=32, top_k=4, d_model=1152, d_ff=576, dtype="fp32",
                batches=[2**i for i in range(11)])


@dataclasses.dataclass(frozen=True)
class MoESweep:
    """Result of :func:`moe_sweep`; arrays indexed by batch (seconds, counts)."""

    batch: np.ndarray
    measured_s: np.ndarray
    predicted_s: np.ndarray        # sum over experts of each expert's roofline time
    compute_s: np.ndarray          # all experts' FLOPs / F
    memory_s: np.ndarray           # touched experts' weights + activations / W
    touched: np.ndarray            # experts that received >= 1 token
    mean_tokens: np.ndarray        # B k / E
    max_tokens: np.ndarray         # the busiest expert's tokens
    n_experts: int
    top_k: int
    d_model: int
    d_ff: int
    dtype: str
    flops_per_s: float
    bytes_per_s: float
    method: str
    device: str
    layout: str = "plain"          # "blocked": experts with few tokens ran through BlockedExperts
    plan: dict = dataclasses.field(default_factory=dict)   # blocked: tokens -> (rows multiplied, block width)
    read_samples_bytes_per_s: np.ndarray | None = None   # the probe's read ceiling in each round, when it ran

    def plan_text(self) -> str:
        """The blocked layout's plan in words, e.g. ``"1 -> 2 rows x 64 cols, 2 -> 2 x 64, ...; other token
        counts up to 48 as they are, x 32"`` ("" if none)."""
        items = sorted(self.plan.items())
        if not items:
            return ""
        return (", ".join(f"{T} -> {r} rows x {w} cols" if i == 0 else f"{T} -> {r} x {w}"
                          for i, (T, (r, w)) in enumerate(items))
                + f"; other token counts up to {BlockedExperts.max_rows} as they are, x {BlockedExperts.NC}; "
                  f"more tokens: the plain product")

    @property
    def bytes_per_weight(self) -> float:
        return {"fp32": 4.0, "fp16": 2.0}[self.dtype]

    @property
    def balance_ratio(self) -> float:
        """This machine's R = F b / (2 W) for the sweep's dtype."""
        return self.flops_per_s * self.bytes_per_weight / (2.0 * self.bytes_per_s)

    @property
    def knee_batch(self) -> float:
        """Predicted knee: B = R E / k, where the mean expert's own matmul turns compute-bound."""
        return self.balance_ratio * self.n_experts / self.top_k

    @property
    def fitted_knee_batch(self) -> float:
        """Measured knee: :func:`llmmath.demos.kernels.fit_knee` through the batches with B k >= 4 E.

        Below that the mean expert has fewer than four tokens and, with uniform routing,
        more than 2% of the experts are not touched at all (a fraction e^(-Bk/E)), so the
        layer's time still climbs with the experts it reads rather than sitting on the
        flat weight-read floor the knee is fitted to.

        Raises:
            ValueError: fewer than two such batches.
        """
        keep = self.batch * self.top_k >= 4 * self.n_experts
        if keep.sum() < 2:
            raise ValueError(f"need at least two batches with B k >= 4 E = {4 * self.n_experts} to fit a knee, "
                             f"got {int(keep.sum())}")
        return kernels.fit_knee(self.batch[keep], self.measured_s[keep])

    @property
    def time_per_token_s(self) -> np.ndarray:
        return self.measured_s / self.batch

    @property
    def measured_over_predicted(self) -> np.ndarray:
        return self.measured_s / self.predicted_s

    def table(self) -> str:
        rows = [f"{'B':>6} {'tok/expert':>10} {'touched':>8} {'measured':>10} {'predicted':>10} "
                f"{'meas/pred':>9} {'us/token':>9} {'bound':>8}"]
        for i, B in enumerate(self.batch):
            bound = "compute" if self.compute_s[i] >= self.memory_s[i] else "memory"
            rows.append(f"{int(B):>6} {self.mean_tokens[i]:>10.2f} {int(self.touched[i]):>8} "
                        f"{self.measured_s[i] * 1e3:>8.2f}ms {self.predicted_s[i] * 1e3:>8.2f}ms "
                        f"{self.measured_over_predicted[i]:>9.2f} {self.time_per_token_s[i] * 1e6:>9.1f} {bound:>8}")
        return "\n".join(rows)


def _random_experts(be, n, d, f, dtype, seed):
    """``n`` experts' random ``w_up`` ``(n, d, f)`` and ``w_down`` ``(n, f, d)``, scaled by ``1/sqrt`` of their
    input width (in place, so fp16 stays fp16)."""
    w_up, w_down = kernels._random(be, (n, d, f), dtype, seed), kernels._random(be, (n, f, d), dtype, seed + 1)
    w_up *= np.float32(1.0 / np.sqrt(d))
    w_down *= np.float32(1.0 / np.sqrt(f))
    return w_up, w_down


def _previous_layer(E, k, d, f, dtype, method, blocked, be):
    """What runs (untimed) before each timed call of :func:`moe_sweep`: on the NumPy loop path the same
    layer on another layer's experts, twice the last-level cache of them, every one with k tokens (it
    evicts this layer's weights and leaves the code that multiplies them cached, as a real decode step
    does); elsewhere :func:`llmmath.demos.kernels.evict_caches`."""
    if be.is_gpu or method != "loop":
        return lambda: kernels.evict_caches(be)
    b = 4.0 if dtype == "fp32" else 2.0
    n = max(k, -(-int(2 * kernels.last_level_cache_bytes(be)) // int(2 * d * f * b)))
    w_up, w_down = _random_experts(be, n, d, f, dtype, 21)
    other = None
    if blocked is not None:
        other = BlockedExperts(w_up, w_down)
        other.use_plan(blocked.planned())   # the same plan
    x = kernels._random(be, (n, d), dtype, 23)
    assign = (np.arange(n)[:, None] + np.arange(k)[None, :]) % n
    return lambda: grouped_expert_matmul(x, assign, w_up, w_down, method, other)


def moe_sweep(batches: Sequence[int] | None = None, n_experts: int | None = None, top_k: int | None = None,
              d_model: int | None = None, d_ff: int | None = None, dtype: str | None = None,
              flops_per_s: float | None = None, bytes_per_s: float | None = None, repeats: int | None = None,
              method: str = "loop", seed: int = 0, progress: bool = True, layout: str = "auto",
              be=None) -> MoESweep:
    """Time one MoE layer (route top-k, group by expert, matmul pairs) against batch, beside the roofline.

    Each expert e with T_e tokens costs ``max(4 T_e d f / F, (2 d f + 2 T_e (d + f)) b / W)``
    (two matrices; weights read once, activations in and out); the prediction is the
    sum over the experts that received tokens (the ``"loop"`` method runs them one
    after another), or over all E (``"padded"``, T_e -> T_max). ``F`` and ``W``
    default to this machine's ceilings sampled at the start of every round
    (:class:`llmmath.demos.kernels.CeilingProbe`: its square product, and its read-only
    stream, since the expert weights are only read); sizes default to :func:`default_moe_sizes`.
    ``layout="auto"`` on a CPU with ``method="loop"`` runs experts with few tokens through
    a :class:`BlockedExperts` copy of the weights where ``d`` and ``f`` divide into its
    blocks (the result's ``layout`` then reads ``"blocked"``); ``"plain"`` never does.
    The batches are timed round-robin, ``repeats`` rounds (default 3 on a CPU, 10 on
    a GPU) after one warm-up each, and each batch reports its best, as each ceiling
    does: a busy machine only ever slows a call down, and it slows both alike. Each
    timed call starts from a cold cache, as in a real decode step where the other
    layers' weights have streamed through since: with NumPy and ``method="loop"`` the
    call before it is the same layer on another layer's experts (twice the last-level
    cache of them), otherwise :func:`llmmath.demos.kernels.evict_caches`.

    Raises:
        ValueError: a batch < 1, k > E, a size < 1, an unknown dtype or method.
    """
    be = be or kernels.backend()
    E, k, d, f, dtype, batches = _sweep_sizes(be, batches, n_experts, top_k, d_model, d_ff, dtype, method, layout)
    if flops_per_s is not None:
        flops_per_s = float(positive("flops_per_s", scalar("flops_per_s", flops_per_s)))
    if bytes_per_s is not None:
        bytes_per_s = float(positive("bytes_per_s", scalar("bytes_per_s", bytes_per_s)))
    if repeats is not None:
        repeats = positive_int("repeats", repeats)
    seed = non_negative_int("seed", seed)
    progress = flag("progress", progress)
    # on a CPU a 1024^3 product reaches the same rate as 2048^3 (~100 GFLOP/s on one core) in an eighth of the time
    probe = (kernels.CeilingProbe((dtype,), be=be, matmul_n=None if be.is_gpu else 1024)
             if flops_per_s is None or bytes_per_s is None else None)
    repeats = repeats or (10 if be.is_gpu else 3)
    w_up, w_down = _random_experts(be, E, d, f, dtype, 11)
    blocked = None
    if layout == "auto" and method == "loop" and not be.is_gpu and d % BlockedExperts.NC == 0 \
            and f % BlockedExperts.NC == 0:
        blocked = BlockedExperts(w_up, w_down)
        with kernels.one_blas_thread():
            blocked.plan()
    cases, counts_all = [], []
    for i, B in enumerate(batches):
        B = int(B)
        x = kernels._random(be, (B, d), dtype, 13 + i)
        assign = route_uniform(B, E, k, seed=seed + i, xp=be.xp)
        counts_all.append(be.to_numpy(tokens_per_expert(assign, E)).astype(float))
        cases.append((x, assign))
    layers = {i: (lambda x=x, assign=assign: grouped_expert_matmul(x, assign, w_up, w_down, method, blocked))
              for i, (x, assign) in enumerate(cases)}
    evict = _previous_layer(E, k, d, f, dtype, method, blocked, be)
    meas = _best_of_rounds(layers, repeats, probe, evict, be, progress)
    if probe is not None:
        flops_per_s = flops_per_s or probe.flops_per_s(dtype)
        bytes_per_s = bytes_per_s or probe.read_bytes_per_s   # expert weights: read only
    rows = _roofline_rows(batches, counts_all, E, k, d, f, 4.0 if dtype == "fp32" else 2.0, method, flops_per_s,
                          bytes_per_s)
    return MoESweep(batches.astype(float), np.asarray(meas, dtype=float), *rows, E, k, d, f, dtype,
                    float(flops_per_s), float(bytes_per_s), method, be.device_name,
                    "blocked" if blocked is not None else "plain",
                    {} if blocked is None else blocked.planned(),
                    None if probe is None else probe.read_samples_bytes_per_s)


def _sweep_sizes(be, batches, n_experts, top_k, d_model, d_ff, dtype, method, layout):
    """(E, k, d, f, dtype, batches) of :func:`moe_sweep`, defaults filled in and each checked."""
    dflt = default_moe_sizes(be)
    pick = lambda v, key: dflt[key] if v is None else v  # noqa: E731  (0 is an error, not "the default")
    E = positive_int("n_experts", pick(n_experts, "n_experts"))
    k = positive_int("top_k", pick(top_k, "top_k"))
    _experts(E, k)
    d = positive_int("d_model", pick(d_model, "d_model"))
    f = positive_int("d_ff", pick(d_ff, "d_ff"))
    dtype = pick(dtype, "dtype")
    if dtype not in ("fp32", "fp16"):
        raise ValueError(f"dtype must be 'fp32' or 'fp16', got {dtype!r}")
    if method not in ("loop", "padded"):
        raise ValueError(f"method must be 'loop' or 'padded', got {method!r}")
    if layout not in ("auto", "plain"):
        raise ValueError(f"layout must be 'auto' or 'plain', got {layout!r}")
    batches = whole("batches", list(batches) if batches is not None else dflt["batches"], 1)
    if batches.ndim != 1 or batches.size == 0:
        raise ValueError(f"batches must be a non-empty list of whole numbers >= 1, got {batches.tolist()}")
    return E, k, d, f, dtype, batches.astype(np.int64)


def _best_of_rounds(layers: dict, repeats: int, probe, evict, be, progress: bool) -> list[float]:
    """Each layer's best time over ``repeats`` round-robin rounds (the first preceded by a warm-up call).

    Keeping each batch's best means a burst of load from other processes hits one sample of
    several batches rather than every sample of one. The ceilings, unless given, are sampled at
    the start of every round (kernels.CeilingProbe), so they see the same load. On a CPU the layer
    and its ceilings run on one BLAS thread: the layer is many small products, and a second BLAS
    thread that loses its core to another program makes each wait a scheduler slice (seen: the
    fall of time per token shrank from ~5x to 1.3x with one core busy). Every timed call follows
    ``evict`` (see :func:`_previous_layer`); one round per call of time_interleaved, so the
    progress line can follow the rounds.
    """
    best = np.full(len(layers), np.inf)
    with kernels.one_blas_thread(not be.is_gpu):
        for rnd in range(repeats):
            t = kernels.time_interleaved(layers, rounds=1, warmup=1 if rnd == 0 else 0, probe=probe, be=be,
                                         evict=evict)
            best = np.minimum(best, [t[i].min_s for i in layers])
            if progress:
                print(f"\r  MoE sweep on {be.name}: round {rnd + 1}/{repeats} over {len(layers)} batches ...", end="",
                      file=sys.stdout, flush=True)
    if progress:
        print(f"\r  MoE sweep on {be.name}: {len(layers)} batches done." + " " * 20, file=sys.stdout, flush=True)
    return list(best)


def _roofline_rows(batches, counts_all, E, k, d, f, b, method, flops_per_s, bytes_per_s) -> tuple:
    """(predicted, compute, memory, experts touched, mean and max tokens per expert) arrays, one entry a batch.

    Expert e with T_e tokens: ``max(4 T_e d f / F, (2 d f + 2 T_e (d + f)) b / W)``, summed over the
    experts that got tokens (``"loop"``) or over all E at the largest T_e (``"padded"``)."""
    pred, comp, mem, touched, mean_t, max_t = [], [], [], [], [], []
    for B, counts in zip(batches, counts_all):
        T = counts if method == "loop" else np.full(E, counts.max())
        T_used = T[T > 0]
        c_e = 4.0 * T_used * d * f / flops_per_s
        m_e = (2.0 * d * f + 2.0 * T_used * (d + f)) * b / bytes_per_s
        pred.append(float(np.sum(np.maximum(c_e, m_e))))
        comp.append(float(c_e.sum()))
        mem.append(float(m_e.sum()))
        touched.append(int((counts > 0).sum()))
        mean_t.append(int(B) * k / E)
        max_t.append(float(counts.max()))
    return tuple(np.asarray(v, dtype=float) for v in (pred, comp, mem, touched, mean_t, max_t))
