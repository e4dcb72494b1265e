"""The roofline: a kernel takes at least max(FLOPs / FLOP/s, bytes / bytes/s).

All functions broadcast over NumPy arrays and return a float for scalar input.
Source: Williams, Waterman & Patterson, "Roofline: an insightful visual
performance model for multicore architectures", CACM 52(4), 2009.
"""

from __future__ import annotations

import numpy as np

from ._validate import non_negative, positive, result

__all__ = [
    "compute_time_s", "memory_time_s", "roofline_time_s",
    "arithmetic_intensity", "balance_point", "attainable_flops_per_s",
]


def compute_time_s(flops, flops_per_s):
    """FLOPs / FLOP/s: the time the arithmetic alone needs (seconds)."""
    return result(non_negative("flops", flops) / positive("flops_per_s", flops_per_s))


def memory_time_s(n_bytes, bytes_per_s):
    """bytes / bytes/s: the time the memory traffic alone needs (seconds)."""
    return result(non_negative("n_bytes", n_bytes) / positive("bytes_per_s", bytes_per_s))


def roofline_time_s(flops, n_bytes, flops_per_s, bytes_per_s, overlap: str = "max"):
    """Lower bound on a kernel's time (seconds).

    ``overlap="max"`` assumes compute and memory traffic overlap perfectly (the
    roofline floor); ``"sum"`` assumes none (an upper bound for a kernel that
    does both at full rate, one after the other).

    Raises:
        ValueError: negative FLOPs or bytes, non-positive rates, unknown ``overlap``.
    """
    tc = non_negative("flops", flops) / positive("flops_per_s", flops_per_s)
    tm = non_negative("n_bytes", n_bytes) / positive("bytes_per_s", bytes_per_s)
    if overlap == "max":
        return result(np.maximum(tc, tm))
    if overlap == "sum":
        return result(tc + tm)
    raise ValueError(f"overlap must be 'max' or 'sum', got {overlap!r}")


def arithmetic_intensity(flops, n_bytes):
    """FLOPs per byte moved (FLOP/byte).

    Raises:
        ValueError: ``n_bytes`` <= 0 (intensity undefined) or negative FLOPs.
    """
    return result(non_negative("flops", flops) / positive("n_bytes", n_bytes))


def balance_point(flops_per_s, bytes_per_s):
    """F / W: the arithmetic intensity (FLOP/byte) at which a chip is equally compute- and memory-bound."""
    return result(positive("flops_per_s", flops_per_s) / positive("bytes_per_s", bytes_per_s))


def attainable_flops_per_s(intensity, flops_per_s, bytes_per_s):
    """min(F, I * W): the FLOP/s a kernel of intensity ``I`` (FLOP/byte) can reach."""
    I = non_negative("intensity", intensity)
    return result(np.minimum(positive("flops_per_s", flops_per_s), I * positive("bytes_per_s", bytes_per_s)))
