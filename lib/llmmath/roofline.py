"""The roofline: a kernel takes at least max(FLOPs / FLOP/s, bytes / bytes/s).

All functions broadcast over NumPy arrays and return a float for scalar input.
Array arguments whose shapes do not broadcast together, and results that
overflow float64, are refused with a ValueError naming the arguments.
Source: Williams, Waterman & Patterson, "Roofline: an insightful visual
performance model for multicore architectures", CACM 52(4), 2009.
"""

from __future__ import annotations

import numpy as np

from ._validate import broadcast, finite_result, non_negative, positive, result

__all__ = [
    "compute_time_s", "memory_time_s", "roofline_time_s",
    "arithmetic_intensity", "balance_point", "attainable_flops_per_s",
]


@finite_result
def compute_time_s(flops, flops_per_s):
    """FLOPs / FLOP/s: the time the arithmetic alone needs (seconds)."""
    f, F = broadcast(flops=non_negative("flops", flops), flops_per_s=positive("flops_per_s", flops_per_s))
    return result(f / F)


@finite_result
def memory_time_s(n_bytes, bytes_per_s):
    """bytes / bytes/s: the time the memory traffic alone needs (seconds)."""
    n, W = broadcast(n_bytes=non_negative("n_bytes", n_bytes), bytes_per_s=positive("bytes_per_s", bytes_per_s))
    return result(n / W)


@finite_result
def roofline_time_s(flops, n_bytes, flops_per_s, bytes_per_s, overlap: str = "max"):
    """Lower bound on a kernel's time (seconds).

    ``overlap="max"`` assumes compute and memory traffic overlap perfectly (the
    roofline floor); ``"sum"`` assumes none (an upper bound for a kernel that
    does both at full rate, one after the other).

    Raises:
        ValueError: negative FLOPs or bytes, non-positive rates, unknown ``overlap``,
            shapes that do not broadcast.
    """
    if overlap not in ("max", "sum"):
        raise ValueError(f"overlap must be 'max' or 'sum', got {overlap!r}")
    f, n, F, W = broadcast(flops=non_negative("flops", flops), n_bytes=non_negative("n_bytes", n_bytes),
                           flops_per_s=positive("flops_per_s", flops_per_s),
                           bytes_per_s=positive("bytes_per_s", bytes_per_s))
    tc, tm = f / F, n / W
    return result(np.maximum(tc, tm) if overlap == "max" else tc + tm)


@finite_result
def arithmetic_intensity(flops, n_bytes):
    """FLOPs per byte moved (FLOP/byte).

    Raises:
        ValueError: ``n_bytes`` <= 0 (intensity undefined) or negative FLOPs.
    """
    f, n = broadcast(flops=non_negative("flops", flops), n_bytes=positive("n_bytes", n_bytes))
    return result(f / n)


@finite_result
def balance_point(flops_per_s, bytes_per_s):
    """F / W: the arithmetic intensity (FLOP/byte) at which a chip is equally compute- and memory-bound."""
    F, W = broadcast(flops_per_s=positive("flops_per_s", flops_per_s), bytes_per_s=positive("bytes_per_s", bytes_per_s))
    return result(F / W)


@finite_result
def attainable_flops_per_s(intensity, flops_per_s, bytes_per_s):
    """min(F, I * W): the FLOP/s a kernel of intensity ``I`` (FLOP/byte) can reach."""
    I, F, W = broadcast(intensity=non_negative("intensity", intensity),
                        flops_per_s=positive("flops_per_s", flops_per_s),
                        bytes_per_s=positive("bytes_per_s", bytes_per_s))
    return result(np.minimum(F, I * W))
