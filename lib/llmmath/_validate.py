"""Input checks shared by every public function.

Each check names the argument, shows the offending value and says what is
allowed, so a wrong input never turns into a silent NaN, an inf or a traceback
from deep inside NumPy.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["as_array", "positive", "non_negative", "positive_int", "result"]


def as_array(name: str, value) -> np.ndarray:
    """``value`` as a float64 array; refuses strings, None, NaN and inf."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a number or an array of numbers, got {value!r}")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(
            f"{name} must be a number or an array of numbers, got {value!r}"
        ) from None
    bad = ~np.isfinite(arr)
    if bad.any():
        first = arr[bad].flat[0] if arr.ndim else arr
        raise ValueError(f"{name} must be finite, got {first!r}; allowed: finite numbers")
    return arr


def _first_bad(arr: np.ndarray, mask: np.ndarray) -> str:
    if arr.ndim == 0:
        return repr(float(arr))
    idx = tuple(int(i) for i in np.argwhere(mask)[0])
    return f"{float(arr[idx])!r} at index {idx}"


def positive(name: str, value) -> np.ndarray:
    """Array of ``value``; every element must be finite and > 0."""
    arr = as_array(name, value)
    mask = arr <= 0
    if mask.any():
        raise ValueError(f"{name} must be > 0, got {_first_bad(arr, mask)}")
    return arr


def non_negative(name: str, value) -> np.ndarray:
    """Array of ``value``; every element must be finite and >= 0."""
    arr = as_array(name, value)
    mask = arr < 0
    if mask.any():
        raise ValueError(f"{name} must be >= 0, got {_first_bad(arr, mask)}")
    return arr


def positive_int(name: str, value) -> int:
    """A single whole number >= 1 (chip counts, layer counts, repeats)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float)):
        raise TypeError(f"{name} must be a whole number >= 1, got {value!r}")
    if isinstance(value, float) and (not np.isfinite(value) or value != int(value)):
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {value!r}")
    return int(value)


def result(arr):
    """A 0-d array becomes a Python float; anything else stays an ndarray."""
    arr = np.asarray(arr)
    return float(arr) if arr.ndim == 0 else arr
