"""Input checks shared by every public function.

Each check names the argument, shows the offending value and says what is
allowed, so a wrong input never turns into a silent NaN, an inf or a traceback
from deep inside NumPy.

Conventions:

* Booleans are never numbers here: ``True`` as a batch size is a bug in the
  caller, so ``True``, ``np.True_`` and boolean arrays are refused (TypeError)
  wherever a number is expected. Flags take only ``True``/``False`` (:func:`flag`).
* Strings, ``None`` and complex numbers are refused with a TypeError; NaN, inf and
  values out of range with a ValueError.
* Several array arguments of one function must broadcast together; when they do
  not, :func:`broadcast` names them and their shapes.
* A result that overflows float64 (inputs far beyond anything physical) is
  refused by :func:`finite_result` / :func:`check_finite`, naming the inputs
  that are too large, instead of returning ``inf`` with a RuntimeWarning.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import inspect
import math
import numbers
import warnings

import numpy as np

__all__ = [
    "as_array", "positive", "non_negative", "at_least", "in_range", "whole",
    "positive_int", "non_negative_int", "scalar", "flag", "broadcast",
    "check_finite", "finite_result", "result", "MAX_INT",
]

#: Largest whole number the count checks accept (every integer up to it is exact in float64).
MAX_INT = 2**53

_NUMBER = "a number or an array of numbers"


def _is_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


def _has_bool(value) -> bool:
    """True if ``value`` or any element of a (nested) list/tuple is a boolean."""
    if isinstance(value, (list, tuple)):
        return any(_has_bool(v) for v in value)
    return _is_bool(value)


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _float_array(name: str, value, allowed: str = _NUMBER) -> np.ndarray:
    """``value`` as float64, refusing booleans, strings, None, complex and other non-numbers."""
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be {allowed}, got {_short(value)}")
    if _has_bool(value):
        raise TypeError(f"{name} must be {allowed}, not a boolean (True/False are not counts or sizes), "
                        f"got {_short(value)}")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):  # ragged nesting, objects NumPy cannot hold
        raise TypeError(f"{name} must be {allowed}, got {_short(value)}") from None
    kind = raw.dtype.kind
    if kind == "b":
        raise TypeError(f"{name} must be {allowed}, not a boolean array, got {_short(value)}")
    if kind == "c":
        raise TypeError(f"{name} must be {allowed} (real, not complex), "
                        f"got {_short(value)}")
    if kind not in "iufO":  # strings, bytes, dates, structured records
        raise TypeError(f"{name} must be {allowed}, got {_short(value)} (dtype {raw.dtype})")
    if kind == "O":
        for v in raw.flat:
            if _is_bool(v) or not isinstance(v, numbers.Real):
                raise TypeError(f"{name} must be {allowed}, got an element {_short(v)} in {_short(value)}")
    try:
        return np.asarray(raw, dtype=np.float64)  # no copy for float64 input, as before
    except OverflowError:  # a Python int beyond float64
        raise ValueError(f"{name} must be finite, got a number too large for float64 "
                         f"({_short(value)}); allowed: finite numbers") from None
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be {allowed}, got {_short(value)}") from None


def _first_bad(arr: np.ndarray, mask: np.ndarray) -> str:
    if arr.ndim == 0:
        return repr(float(arr))
    idx = tuple(int(i) for i in np.argwhere(mask)[0])
    return f"{float(arr[idx])!r} at index {idx}"


def as_array(name: str, value) -> np.ndarray:
    """``value`` as a float64 array; refuses booleans, strings, None, complex, NaN and inf."""
    arr = _float_array(name, value)
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ValueError(f"{name} must be finite, got {_first_bad(arr, bad)}; allowed: finite numbers")
    return arr


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


def at_least(name: str, value, minimum: float, what: str = "") -> np.ndarray:
    """Array of ``value``; every element finite and >= ``minimum`` (``what`` adds a unit, e.g. 'tokens')."""
    arr = as_array(name, value)
    mask = arr < minimum
    if mask.any():
        unit = f" {what}" if what else ""
        raise ValueError(f"{name} must be >= {minimum:g}{unit}, got {_first_bad(arr, mask)}")
    return arr


def in_range(name: str, value, low: float, high: float, *, low_open: bool = False,
             high_open: bool = False) -> np.ndarray:
    """Array of ``value``; every element finite and in the interval from ``low`` to ``high``.

    ``low_open`` / ``high_open`` exclude the ends: ``in_range("mfu", x, 0, 1, low_open=True)``
    is ``0 < x <= 1``.
    """
    arr = as_array(name, value)
    mask = (arr <= low if low_open else arr < low) | (arr >= high if high_open else arr > high)
    if mask.any():
        interval = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{name} must be in {interval}, got {_first_bad(arr, mask)}")
    return arr


def whole(name: str, value, minimum: int = 1) -> np.ndarray:
    """Array of ``value``; every element a whole number >= ``minimum`` (stages, micro-batches, tokens)."""
    arr = as_array(name, value)
    mask = (arr != np.floor(arr)) | (arr < minimum)
    if mask.any():
        raise ValueError(f"{name} must be a whole number >= {minimum} (or an array of them), "
                         f"got {_first_bad(arr, mask)}")
    mask = arr > MAX_INT
    if mask.any():
        raise ValueError(f"{name} must be at most 2**53 = {MAX_INT}, got {_first_bad(arr, mask)}")
    return arr


def _whole_number(name: str, value, minimum: int) -> int:
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a whole number >= {minimum}, got {_short(value)}"
                        + ("" if _is_bool(value) else f" of type {type(value).__name__}"))
    if isinstance(value, numbers.Integral):
        v = int(value)
    else:
        f = float(value)
        if not math.isfinite(f) or f != math.floor(f):
            raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
        v = int(f)
    if v < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")
    if v > MAX_INT:
        raise ValueError(f"{name} must be at most 2**53 = {MAX_INT}, got {value!r}")
    return v


def positive_int(name: str, value) -> int:
    """A single whole number >= 1 (chip counts, layer counts, repeats); at most 2**53."""
    return _whole_number(name, value, 1)


def non_negative_int(name: str, value) -> int:
    """A single whole number >= 0; at most 2**53."""
    return _whole_number(name, value, 0)


def scalar(name: str, value, finite: bool = True) -> float:
    """A single real number as a float (``finite=False`` lets NaN and inf through, for display)."""
    arr = _float_array(name, value, "a single real number")
    if finite:
        arr = as_array(name, arr)
    if arr.ndim != 0:
        raise TypeError(f"{name} must be a single number here, got an array of shape {arr.shape}")
    return float(arr)


def flag(name: str, value) -> bool:
    """``True`` or ``False`` only: a truthy string or number is refused, not guessed at."""
    if not _is_bool(value):
        raise TypeError(f"{name} must be True or False, got {_short(value)}")
    return bool(value)


def broadcast(**named) -> tuple:
    """The arrays, broadcast to one shape; else ValueError naming each argument and its shape.

    ``B, L = broadcast(batch=B, context=L)``. Scalars broadcast with anything; arrays
    must have equal shapes or shapes NumPy can broadcast (size 1 along the axes that differ).
    """
    arrays = [np.asarray(v) for v in named.values()]
    try:
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
    except ValueError:
        shaped = [(k, a.shape) for k, a in zip(named, arrays) if a.ndim]
        names = " and ".join(k for k, _ in shaped)
        shapes = ", ".join(f"{k} has shape {s}" for k, s in shaped)
        raise ValueError(f"{names} must have shapes that broadcast together, but {shapes}; allowed: "
                         f"scalars, equal shapes, or shapes that differ only where one of them has "
                         f"size 1") from None
    return tuple(np.broadcast_to(a, shape) for a in arrays)


# ---------------------------------------------------------------------------
# Results that overflow float64
# ---------------------------------------------------------------------------

def _magnitudes(inputs: dict) -> list[tuple[str, float, float]]:
    """(name, largest |value|, smallest non-zero |value|) of each numeric input."""
    out = []
    for k, v in inputs.items():
        if _is_bool(v) or isinstance(v, (str, bytes)) or v is None:
            continue
        try:
            a = np.abs(np.asarray(v, dtype=np.float64))
        except (TypeError, ValueError, OverflowError):
            continue
        a = a[np.isfinite(a) & (a > 0)]
        if a.size:
            out.append((k, float(a.max()), float(a.min())))
    return out


def _overflow_error(where: str, what: str, inputs: dict) -> ValueError:
    mags = _magnitudes(inputs)
    big = [f"{k}={hi:g}" for k, hi, _ in mags if hi >= 1e30]
    tiny = [f"{k}={lo:g}" for k, _, lo in mags if lo <= 1e-30]
    if not big and not tiny:  # nothing absurd alone: name the two largest
        big = [f"{k}={hi:g}" for k, hi, _ in sorted(mags, key=lambda t: -abs(math.log10(t[1])))[:2]]
    parts = []
    if big:
        parts.append(f"too large: {', '.join(big)}")
    if tiny:
        parts.append(f"too small (as divisors): {', '.join(tiny)}")
    culprits = "; ".join(parts) or "(no numeric inputs)"
    return ValueError(
        f"{where}: the result is not finite ({what}): float64 overflowed, the inputs are {culprits}. "
        f"Allowed: inputs whose products and quotients stay below ~1.8e308 (physical values are "
        f"many orders of magnitude smaller)")


def _first_nonfinite(value, allow_inf: bool, path: str = ""):
    """Description of the first NaN (or inf, unless allowed) inside a result, else None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            bad = _first_nonfinite(getattr(value, f.name), allow_inf, f.name)
            if bad:
                return bad
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            bad = _first_nonfinite(v, allow_inf, str(k))
            if bad:
                return bad
        return None
    if isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            bad = _first_nonfinite(v, allow_inf, f"{path}[{i}]" if path else f"item {i}")
            if bad:
                return bad
        return None
    if _is_bool(value) or not isinstance(value, (float, np.floating, np.ndarray)):
        return None
    arr = np.asarray(value)
    if arr.dtype.kind != "f":
        return None
    mask = np.isnan(arr) | (np.isneginf(arr) if allow_inf else np.isinf(arr))
    if not mask.any():
        return None
    where = f" in {path}" if path else ""
    return f"{_first_bad(arr, mask)}{where}"


def check_finite(where: str, value, **inputs):
    """``value`` if every element is finite; else the overflow ValueError naming ``inputs``.

    For a quantity computed inside a function before it is passed on (so that
    the next call does not blame an argument name the caller never used).
    """
    bad = _first_nonfinite(value, False)
    if bad:
        raise _overflow_error(where, bad, inputs)
    return value


_NESTING = contextvars.ContextVar("llmmath_finite_result_nesting", default=0)


def finite_result(func=None, *, allow_inf: bool = False):
    """Decorator: refuse a result that holds NaN (or inf, unless ``allow_inf``) with a clear ValueError.

    The function runs with NumPy's overflow/invalid/divide warnings silenced; if
    its result (a float, an array, or the fields of a tuple, dict or dataclass)
    is not finite, the error names the function and the inputs that are out of
    scale. ``allow_inf=True`` is for functions whose documented answer can be
    ``inf`` (a bound that never binds); NaN and ``-inf`` are still refused.

    Only the outermost decorated call checks: when one public function calls
    another, the error names the function the user called, with its arguments.
    """
    def deco(f):
        sig = inspect.signature(f)

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            token = _NESTING.set(_NESTING.get() + 1)
            try:
                with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                    out = f(*args, **kwargs)
            finally:
                _NESTING.reset(token)
            if _NESTING.get():  # called from another checked function: it checks its own result
                return out
            bad = _first_nonfinite(out, allow_inf)
            if bad:
                try:
                    bound = sig.bind(*args, **kwargs)
                    inputs = dict(bound.arguments)
                except TypeError:  # pragma: no cover - the call itself succeeded
                    inputs = {}
                for k, p in sig.parameters.items():
                    if p.kind is p.VAR_KEYWORD and k in inputs:
                        inputs.update(inputs.pop(k))
                raise _overflow_error(f.__qualname__, bad, inputs)
            return out

        return wrapper

    return deco(func) if func is not None else deco


def result(arr):
    """A 0-d array becomes a Python float (a bool for a 0-d boolean); anything else stays an ndarray."""
    arr = np.asarray(arr)
    if arr.ndim:
        # a broadcast view (read-only, or aliasing itself through a zero stride): hand out a copy
        if any(st == 0 and n > 1 for st, n in zip(arr.strides, arr.shape)):
            return arr.copy()
        with warnings.catch_warnings():  # reading the flag of a np.broadcast_arrays view warns
            warnings.simplefilter("ignore", FutureWarning)
            writeable = arr.flags.writeable
        return arr if writeable else arr.copy()
    return bool(arr) if arr.dtype.kind == "b" else float(arr)
