"""SI constants and display formatting.

Every value inside the library is a plain float in SI base units: bytes, FLOPs,
seconds, dollars. Formatting happens only at display time, through the
``fmt_*`` functions below. Each takes one real number (NaN and inf print as
such) and ``digits`` >= 1; a string, None, a boolean, a complex number or an
array of several values is refused with a TypeError naming the argument.

Conventions (stated once, used everywhere):

* ``GB`` is 10**9 bytes (decimal, as on every datasheet); ``GiB`` is 2**30.
* One multiply-add is 2 FLOPs.
* Bandwidths are per direction unless a name says otherwise.
"""

from __future__ import annotations

import math
import numbers

from ._validate import positive_int, scalar

__all__ = [
    "KB", "MB", "GB", "TB", "PB", "KiB", "MiB", "GiB", "TiB",
    "GFLOP", "TFLOP", "PFLOP", "EFLOP", "US", "MS",
    "DTYPE_BYTES", "dtype_bytes", "dtype_label",
    "fmt_bytes", "fmt_bytes_binary", "fmt_bytes_per_s", "fmt_flops", "fmt_flops_per_s",
    "fmt_seconds", "fmt_count", "fmt_usd",
]

KB, MB, GB, TB, PB = 1e3, 1e6, 1e9, 1e12, 1e15
KiB, MiB, GiB, TiB = 2.0**10, 2.0**20, 2.0**30, 2.0**40
GFLOP, TFLOP, PFLOP, EFLOP = 1e9, 1e12, 1e15, 1e18
US, MS = 1e-6, 1e-3

#: Bytes per element of each number format the course uses.
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,  # stored as fp32; the tensor cores read 19 bits of it
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
}


def dtype_bytes(dtype) -> float:
    """Bytes per element of ``dtype``: a name in :data:`DTYPE_BYTES`, or the bytes themselves.

    A number is taken as bytes per element, for formats with scales or odd widths:
    NVFP4 (4-bit values, one fp8 scale per 16) is ``0.5625``, MXFP4 (one 8-bit
    scale per 32) ``0.53125``, int4 with a bf16 scale per 128 ``0.515625``. Allowed
    numbers: finite, > 0 and <= 8 (fp64); the chip's matmul precision then defaults
    to bf16 (see :func:`llmmath.hardware.default_compute_dtype`).

    Raises:
        KeyError: ``dtype`` is neither a known format nor a number; the message lists the allowed ones.
        ValueError: a number that is not finite or not in (0, 8].
        TypeError: a boolean.
    """
    if isinstance(dtype, bool):
        raise TypeError(f"dtype must be a format name ({', '.join(DTYPE_BYTES)}) or bytes per element, "
                        f"not a boolean: got {dtype!r}")
    if isinstance(dtype, numbers.Real):
        value = float(dtype)
        if not (math.isfinite(value) and 0 < value <= 8):
            raise ValueError(f"dtype as bytes per element must be finite, > 0 and <= 8, got {dtype!r}; "
                             f"or use a name: {', '.join(DTYPE_BYTES)}")
        return value
    try:
        return DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise KeyError(
            f"unknown dtype {dtype!r}; allowed: {', '.join(DTYPE_BYTES)}, or bytes per element as a number "
            f"in (0, 8] (e.g. 0.5625 for NVFP4)"
        ) from None


def dtype_label(dtype) -> str:
    """``'bf16'`` -> ``'bf16'``; ``0.5625`` -> ``'0.5625 B'`` (a dtype name or bytes per element, for display)."""
    dtype_bytes(dtype)
    return dtype if isinstance(dtype, str) else f"{float(dtype):g} B"


def _display(name: str, value, digits) -> tuple[float, int]:
    """The value to print (a single real number; NaN and inf print as such) and the digits (>= 1).

    Raises:
        TypeError: a string, None, a boolean, a complex number or an array of several values.
        ValueError: ``digits`` not a whole number >= 1.
    """
    return scalar(name, value, finite=False), positive_int("digits", digits)


def _scaled(value: float, digits: int, unit: str, steps: list[tuple[float, str]]) -> str:
    if not math.isfinite(value):
        return f"{value} {unit}".strip()
    if value != 0:  # round first, so 999.9e9 becomes 1 TB rather than 1e+03 GB
        value = float(f"{value:.{digits}g}")
    mag = abs(value)
    for scale, prefix in steps:
        if mag >= scale:
            return f"{value / scale:.{digits}g} {prefix}{unit}"
    return f"{value:.{digits}g} {unit}"


_SI = [(1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")]


def fmt_bytes(n_bytes: float, digits: int = 3) -> str:
    """``80e9`` -> ``'80 GB'`` (decimal prefixes, as datasheets print)."""
    return _scaled(*_display("n_bytes", n_bytes, digits), "B", _SI)


_IEC = [(1.0, ""), (2.0**10, "Ki"), (2.0**20, "Mi"), (2.0**30, "Gi"), (2.0**40, "Ti"), (2.0**50, "Pi"), (2.0**60, "Ei")]


def fmt_bytes_binary(n_bytes: float, digits: int = 3) -> str:
    """``32 * 2**20`` -> ``'32 MiB'``, ``1536`` -> ``'1.5 KiB'``, ``1023`` -> ``'1023 B'`` (binary prefixes,
    powers of 1,024, as caches, pages and message sizes are sized; IEC 80000-13). ``digits`` significant
    digits, but never fewer than the whole part has (so 1023 stays 1023, where ``digits`` = 3 would print 1020).

    Raises:
        TypeError: a string, None, a boolean, a complex number or an array of several values.
        ValueError: ``digits`` not a whole number >= 1.
    """
    value, digits = _display("n_bytes", n_bytes, digits)
    if not math.isfinite(value):
        return f"{value} B"
    value = value + 0.0                                  # -0.0 prints as 0
    k = 0
    while k + 1 < len(_IEC) and abs(value) >= _IEC[k + 1][0]:
        k += 1

    def rounded(k):
        m = value / _IEC[k][0]
        nd = max(digits, len(str(int(abs(m)))))
        r = float(f"{m:.{nd}g}")
        return r, max(nd, len(str(int(abs(r)))))         # 999.5 rounds to 1000: four whole digits, not '1e+03'

    mantissa, nd = rounded(k)
    if abs(mantissa) >= 1024 and k + 1 < len(_IEC):     # 1023.9 KiB rounds to 1024: say 1 MiB
        k += 1
        mantissa, nd = rounded(k)
    return f"{mantissa:.{nd}g} {_IEC[k][1]}B"


def fmt_bytes_per_s(bytes_per_s: float, digits: int = 3) -> str:
    """``3.35e12`` -> ``'3.35 TB/s'``."""
    return _scaled(*_display("bytes_per_s", bytes_per_s, digits), "B/s", _SI)


def fmt_flops(flops: float, digits: int = 3) -> str:
    """``1.4e11`` -> ``'140 GFLOP'``."""
    return _scaled(*_display("flops", flops, digits), "FLOP", _SI)


def fmt_flops_per_s(flops_per_s: float, digits: int = 3) -> str:
    """``989e12`` -> ``'989 TFLOP/s'``."""
    return _scaled(*_display("flops_per_s", flops_per_s, digits), "FLOP/s", _SI)


def fmt_count(n: float, digits: int = 3) -> str:
    """``8.03e9`` -> ``'8.03 B'`` (parameters, tokens: K, M, B, T)."""
    steps = [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K")]
    value, digits = _display("n", n, digits)
    if not math.isfinite(value):
        return f"{value}"
    if value != 0:
        value = float(f"{value:.{digits}g}")
    for scale, prefix in steps:
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g} {prefix}"
    return f"{value:.{digits}g}"


def fmt_seconds(seconds: float, digits: int = 3) -> str:
    """``0.0213`` -> ``'21.3 ms'``; picks ns, us, ms, s, h, days or years."""
    s, digits = _display("seconds", seconds, digits)
    if not math.isfinite(s):
        return f"{s} s"
    # choose the unit from the value as it will print (0.9999 s -> '1 s', not '1e+03 ms')
    mag = abs(float(f"{s:.{digits}g}")) if s != 0 else 0.0
    for scale, unit in ((86400 * 365, " years"), (86400, " days"), (3600, " h"), (1, " s"),
                        (1e-3, " ms"), (1e-6, " us"), (1e-9, " ns")):
        if mag >= scale or scale == 1e-9 or (scale == 1 and mag == 0):
            value = s / scale
            text = f"{value:.{digits}g}"
            if scale < 1 and abs(float(text)) >= 1000:  # rounding carried into the next unit up
                continue
            return text + unit
    return f"{s:.{digits}g} s"  # pragma: no cover


def fmt_usd(dollars: float, digits: int = 3) -> str:
    """``2.5e-6`` -> ``'$2.5e-06'``; ``1234.5`` -> ``'$1.23e+03'``."""
    value, digits = _display("dollars", dollars, digits)
    return f"${value:.{digits}g}"
