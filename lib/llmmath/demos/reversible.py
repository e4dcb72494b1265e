"""Reversible (RevNet) coupling blocks in NumPy: exact inverse, and backprop that recomputes activations.

A block maps ``(x1, x2)`` to ``y1 = x1 + F(x2)``, ``y2 = x2 + G(y1)``; it is
inverted by ``x2 = y2 - G(y1)``, ``x1 = y1 - F(x2)`` whatever ``F`` and ``G``
are (the Feistel construction, with addition for xor). So the backward pass can
rebuild every block's input from its output instead of storing it (Gomez,
Ren, Urtasun & Grosse, "The Reversible Residual Network", NeurIPS 2017,
Algorithm 1; used in transformers by Reformer, Kitaev et al. 2020).

Here ``F`` and ``G`` are ``tanh(x W + b)`` on half the width; a network is a
stack of blocks followed by a linear read-out and softmax cross-entropy. Three
backward modes: ``"store"`` (keep every block input), ``"recompute"`` (keep
none: invert block by block) and ``"checkpoint"`` (keep every k-th input and
recompute each segment forward).
"""

from __future__ import annotations

import dataclasses
import functools
import tracemalloc

import numpy as np

from . import kernels
from .._validate import positive_int

__all__ = ["RevNet", "init_revnet", "reconstruction_error", "loss_and_grads", "activation_bytes", "drift_table",
           "DRIFT_DEPTHS", "DepthSweep", "depth_sweep"]


@dataclasses.dataclass
class RevNet:
    """``blocks``: list of ``(Wf, bf, Wg, bg)`` (half-width square matrices); read-out ``Wo``, ``bo``."""

    blocks: list
    Wo: np.ndarray
    bo: np.ndarray

    @property
    def depth(self) -> int:
        return len(self.blocks)

    def params(self) -> list:
        return [p for blk in self.blocks for p in blk] + [self.Wo, self.bo]


def init_revnet(width: int, depth: int, n_classes: int = 10, gain: float = 1.0, seed: int = 0,
                dtype=np.float64) -> RevNet:
    """A RevNet of ``depth`` blocks on inputs of even ``width``; weights ~ N(0, gain^2 / (width/2))."""
    width, depth = positive_int("width", width), positive_int("depth", depth)
    if width % 2:
        raise ValueError(f"width must be even (the input is split in two halves), got {width}")
    h = width // 2
    rng = np.random.default_rng(seed)
    blocks = [(rng.normal(0, gain / np.sqrt(h), (h, h)).astype(dtype), np.zeros(h, dtype),
               rng.normal(0, gain / np.sqrt(h), (h, h)).astype(dtype), np.zeros(h, dtype)) for _ in range(depth)]
    Wo = rng.normal(0, 1 / np.sqrt(width), (width, n_classes)).astype(dtype)
    return RevNet(blocks, Wo, np.zeros(n_classes, dtype))


def _f(x, W, b):
    return np.tanh(x @ W + b)


def _block_forward(x1, x2, blk):
    """One block forward; also returns the two tanh outputs that the backward pass needs."""
    Wf, bf, Wg, bg = blk
    tf = _f(x2, Wf, bf)
    y1 = x1 + tf
    tg = _f(y1, Wg, bg)
    return y1, x2 + tg, tf, tg


def _block_inverse(y1, y2, blk):
    """One block backwards: the inputs, and the same tanh outputs, rebuilt from the outputs."""
    Wf, bf, Wg, bg = blk
    tg = _f(y1, Wg, bg)
    x2 = y2 - tg
    tf = _f(x2, Wf, bf)
    return y1 - tf, x2, tf, tg


def forward(net: RevNet, x):
    """Output halves ``(y1, y2)`` after all blocks."""
    h = x.shape[1] // 2
    a, b = x[:, :h], x[:, h:]
    for blk in net.blocks:
        a, b, _, _ = _block_forward(a, b, blk)
    return a, b


def inverse(net: RevNet, y1, y2):
    """Input ``x`` rebuilt from the output halves by running the blocks backwards."""
    for blk in reversed(net.blocks):
        y1, y2, _, _ = _block_inverse(y1, y2, blk)
    return np.concatenate([y1, y2], axis=1)


def reconstruction_error(net: RevNet, x) -> float:
    """``||inverse(forward(x)) - x|| / ||x||``: the floating-point drift of going there and back."""
    y1, y2 = forward(net, x)
    return float(np.linalg.norm(inverse(net, y1, y2) - x) / np.linalg.norm(x))


def _tanh_vjp(x, W, b, t, g):
    """For t = tanh(x W + b) and upstream g: (dx, dW, db)."""
    da = g * (1.0 - t * t)
    return da @ W.T, x.T @ da, da.sum(axis=0)


def _block_backward(x2, y1, tf, tg, blk, dy1, dy2):
    """Gradients through one block from its saved or rebuilt values; returns dx1, dx2 and parameter grads."""
    Wf, bf, Wg, bg = blk
    dz, dWg, dbg = _tanh_vjp(y1, Wg, bg, tg, dy2)
    dy1 = dy1 + dz                    # y1 feeds G
    dx2f, dWf, dbf = _tanh_vjp(x2, Wf, bf, tf, dy1)
    return dy1, dy2 + dx2f, (dWf, dbf, dWg, dbg)


def loss_and_grads(net: RevNet, x, y, mode: str = "recompute", segment: int | None = None):
    """Softmax cross-entropy of the read-out and the gradients of every parameter.

    ``mode``: ``"store"`` keeps every block's input (memory grows with depth),
    ``"recompute"`` keeps only the output and rebuilds inputs by inversion
    (constant memory, about one extra forward), ``"checkpoint"`` keeps every
    ``segment``-th input (default ``ceil(sqrt(depth))``) and recomputes each
    segment forward (memory ~ depth/segment + segment).

    Returns ``(loss, grads)`` with grads in the order of :meth:`RevNet.params`.
    """
    if mode not in ("store", "recompute", "checkpoint"):
        raise ValueError(f"mode must be 'store', 'recompute' or 'checkpoint', got {mode!r}")
    h = x.shape[1] // 2
    a, b = x[:, :h], x[:, h:]
    n = net.depth
    k = segment or int(np.ceil(np.sqrt(n)))
    saved = {}
    for i, blk in enumerate(net.blocks):
        a_in, b_in = a, b
        a, b, tf, tg = _block_forward(a, b, blk)
        if mode == "store":
            saved[i] = (a_in, b_in, tf, tg)
        elif mode == "checkpoint" and i % k == 0:
            saved[i] = (a_in, b_in)
    out = np.concatenate([a, b], axis=1)
    z = out @ net.Wo + net.bo
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    m = x.shape[0]
    loss = float(-np.mean(np.log(p[np.arange(m), y] + 1e-300)))
    dz = p
    dz[np.arange(m), y] -= 1.0
    dz /= m
    dWo, dbo = out.T @ dz, dz.sum(axis=0)
    dout = dz @ net.Wo.T
    dy1, dy2 = dout[:, :h], dout[:, h:]
    y1, y2 = a, b
    grads = [None] * n
    seg_cache: dict = {}
    for i in range(n - 1, -1, -1):
        blk = net.blocks[i]
        if mode == "store":
            x1, x2, tf, tg = saved.pop(i)
        elif mode == "recompute":
            x1, x2, tf, tg = _block_inverse(y1, y2, blk)
        else:
            if i not in seg_cache:  # recompute this segment's values from its checkpoint
                start = (i // k) * k
                seg_cache = {}
                c1, c2 = saved.pop(start)
                for j in range(start, i + 1):
                    n1, n2, tf_j, tg_j = _block_forward(c1, c2, net.blocks[j])
                    seg_cache[j] = (c1, c2, tf_j, tg_j)
                    c1, c2 = n1, n2
            x1, x2, tf, tg = seg_cache.pop(i)
        dy1, dy2, grads[i] = _block_backward(x2, x1 + tf, tf, tg, blk, dy1, dy2)
        y1, y2 = x1, x2
    return loss, [g for blk in grads for g in blk] + [dWo, dbo]


def activation_bytes(batch, width, depth, bytes_per_value, mode="store", values_per_block=2.0):
    """Activation bytes kept for the backward pass of ``depth`` coupling blocks (an accounting, not a measurement).

    One block's stored values are ``values_per_block x batch x width`` numbers of
    ``bytes_per_value`` bytes (this module's blocks: the input and the two tanh outputs,
    2 x the width; a Reformer layer: its input, 1). ``mode``:

    * ``"store"``: every block's values, ``depth`` times one block's;
    * ``"recompute"``: one block's worth (the output, and the block being rebuilt), whatever the depth;
    * ``"checkpoint"``: every ``ceil(sqrt(depth))``-th input plus one segment's values,
      ``ceil(depth / k) / values_per_block + k`` blocks' worth with ``k = ceil(sqrt(depth))``.

    Broadcasts over the numeric arguments. Source: Gomez et al. 2017 (RevNet), section 3;
    Chen et al. 2016 (sublinear checkpointing).

    Raises:
        ValueError: non-positive inputs, an unknown mode.
    """
    from .._validate import broadcast, positive, result

    B, w, d, b, v = broadcast(batch=positive("batch", batch), width=positive("width", width),
                              depth=positive("depth", depth), bytes_per_value=positive("bytes_per_value", bytes_per_value),
                              values_per_block=positive("values_per_block", values_per_block))
    one = v * B * w * b
    if mode == "store":
        return result(d * one)
    if mode == "recompute":
        return result(one + 0 * d)
    if mode == "checkpoint":
        k = np.ceil(np.sqrt(d))
        return result((np.ceil(d / k) / v + k) * one)
    raise ValueError(f"mode must be 'store', 'recompute' or 'checkpoint', got {mode!r}")


#: Depths at which :func:`drift_table` rebuilds the input.
DRIFT_DEPTHS = (1, 2, 4, 8, 16, 32, 64, 128)


@functools.lru_cache(maxsize=1)
def drift_table(n_images: int = 256) -> dict:
    """Reconstruction drift ``||x_rebuilt - x|| / ||x||`` per depth, precision and weight gain, computed once (~0.4 s).

    Random 64-wide RevNets (:func:`init_revnet`, seed 0) at each depth of :data:`DRIFT_DEPTHS`,
    run forward and inverted on the first ``n_images`` test digits
    (:func:`llmmath.demos.adversarial.digits_split`). Returns ``{(dtype_name, gain): array of drift
    per depth}`` for ``float32``/``float64`` and gains 1.0 and 1.5. Cached: explorers read it.
    """
    from . import adversarial

    xs = adversarial.digits_split()[2][:n_images]
    out = {}
    for dt in (np.float32, np.float64):
        for gain in (1.0, 1.5):
            out[(np.dtype(dt).name, gain)] = np.array(
                [reconstruction_error(init_revnet(64, d, gain=gain, dtype=dt), xs.astype(dt)) for d in DRIFT_DEPTHS])
    return out


@dataclasses.dataclass(frozen=True)
class DepthSweep:
    """Result of :func:`depth_sweep`: peak bytes and seconds of one forward + backward pass per depth and mode."""

    depths: np.ndarray
    peak_bytes: dict        # mode -> array over depths (tracemalloc's peak)
    seconds: dict           # mode -> array over depths (best of the repeats, untraced)
    batch: int
    width: int

    @property
    def stored_bytes_per_block(self) -> float:
        """Measured: the growth of the ``"store"`` peak per block, first to last depth (bytes)."""
        p = self.peak_bytes["store"]
        return float((p[-1] - p[0]) / (self.depths[-1] - self.depths[0]))

    @property
    def predicted_bytes_per_block(self) -> float:
        """Predicted: a block's input (both halves) and its two tanh outputs, ``2 x batch x width`` float64 values."""
        return 2.0 * self.batch * self.width * 8.0

    @property
    def recompute_over_store_s(self) -> float:
        """Measured time of ``"recompute"`` over ``"store"`` at the deepest depth."""
        return float(self.seconds["recompute"][-1] / self.seconds["store"][-1])

    @property
    def recompute_over_store_by_depth(self) -> np.ndarray:
        """Measured time of ``"recompute"`` over ``"store"`` at each depth (``depths``'s order)."""
        return self.seconds["recompute"] / self.seconds["store"]

    #: Predicted time ratio: per block the forward is 2 products and the backward 4; recomputing adds a
    #: forward (the inverse: 2 products), so (2 + 4 + 2) / (2 + 4).
    PREDICTED_TIME_RATIO = 4.0 / 3.0


def depth_sweep(x, y, depths=(2, 4, 8, 16, 32), repeats: int = 5, seed: int = 4) -> DepthSweep:
    """Peak memory and time of one forward + backward pass against depth, for each backward mode.

    ``x`` ``(batch, width)`` float64 inputs (``width`` even), ``y`` ``(batch,)`` class ids
    0..9. For each depth a random network (:func:`init_revnet`, ``seed``) runs
    :func:`loss_and_grads` once per mode under Python's ``tracemalloc`` (which sees
    NumPy's allocations: the peak counts every array alive at once). Then the three
    modes are timed untraced, round-robin for ``repeats`` rounds after a warm-up
    (:func:`llmmath.demos.kernels.time_interleaved`), on one BLAS thread, and each keeps its
    best: the time ratio of two modes is then read under the same load. (Timed one
    mode after the other, on the library's default two threads, the ratio at 32 blocks
    ranged 0.62-2.02 of its prediction in eight runs on the 2-core EPYC VM.)

    Raises:
        ValueError: an empty or non-increasing ``depths``, a depth < 1, or mismatched ``x`` and ``y``.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y)
    if x.ndim != 2 or x.shape[1] % 2 or y.shape != (x.shape[0],):
        raise ValueError(f"need x (batch, even width) and y (batch,), got {x.shape} and {y.shape}")
    depths = [positive_int("depth", d) for d in depths]
    if len(depths) < 2 or any(b <= a for a, b in zip(depths, depths[1:])):
        raise ValueError(f"depths must be at least two increasing whole numbers, got {depths}")
    repeats = positive_int("repeats", repeats)
    modes = ("store", "recompute", "checkpoint")
    peak = {m: [] for m in modes}
    secs = {m: [] for m in modes}
    for d in depths:
        net = init_revnet(x.shape[1], d, seed=seed)
        for mode in modes:
            tracemalloc.start()
            try:
                loss_and_grads(net, x, y, mode)
                peak[mode].append(tracemalloc.get_traced_memory()[1])
            finally:
                tracemalloc.stop()
        with kernels.one_blas_thread():
            timed = kernels.time_interleaved({m: functools.partial(loss_and_grads, net, x, y, m) for m in modes},
                                             rounds=repeats, warmup=1, be=kernels._cpu_backend())
        for mode in modes:
            secs[mode].append(timed[mode].min_s)
    return DepthSweep(np.asarray(depths, float), {m: np.asarray(v, float) for m, v in peak.items()},
                      {m: np.asarray(v, float) for m, v in secs.items()}, int(x.shape[0]), int(x.shape[1]))
