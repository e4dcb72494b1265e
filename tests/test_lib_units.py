"""Tests of llmmath.units: dtype sizes, SI constants and display formatting.

Expected values are written out by hand (IEEE/OCP format widths, SI prefixes).
"""

import math
import re

import pytest
from hypothesis import given, settings, strategies as st

from llmmath import units

FAST = settings(max_examples=50, deadline=None)


# ---- constants ---------------------------------------------------------------

def test_decimal_and_binary_prefixes():
    assert units.GB == 1_000_000_000
    assert units.TB == 1_000_000_000_000
    assert units.GiB == 1024 * 1024 * 1024
    assert units.TiB == 1024**4
    assert units.KiB == 1024 and units.MiB == 1024 * 1024
    assert units.TFLOP == 10**12 and units.PFLOP == 10**15
    assert units.MS == 0.001 and units.US == 0.000001


# ---- dtype_bytes --------------------------------------------------------------

@pytest.mark.parametrize(
    "dtype, n_bytes",
    [
        ("fp32", 32 / 8),  # IEEE binary32
        ("tf32", 32 / 8),  # stored as fp32
        ("bf16", 16 / 8),
        ("fp16", 16 / 8),
        ("fp8", 8 / 8),  # e4m3 / e5m2
        ("int8", 8 / 8),
        ("fp4", 4 / 8),  # e2m1: two per byte
    ],
)
def test_dtype_bytes(dtype, n_bytes):
    assert units.dtype_bytes(dtype) == n_bytes


@pytest.mark.parametrize("bad", ["fp9", "BF16x", "", "float"])
def test_dtype_bytes_unknown_lists_allowed(bad):
    with pytest.raises(KeyError) as e:
        units.dtype_bytes(bad)
    msg = str(e.value)
    assert repr(bad) in msg
    for known in ("fp32", "bf16", "fp8", "fp4"):
        assert known in msg


@pytest.mark.parametrize("bad", [None, ["bf16"], "2"])
def test_dtype_bytes_non_string_is_keyerror(bad):
    with pytest.raises(KeyError):
        units.dtype_bytes(bad)


@pytest.mark.parametrize("n_bytes", [0.5625, 0.53125, 2, 1.0])
def test_dtype_bytes_accepts_bytes_per_element(n_bytes):
    # NVFP4: 16 four-bit values share one fp8 scale -> (16 * 4 + 8) / 16 / 8 = 0.5625 bytes
    assert units.dtype_bytes(n_bytes) == float(n_bytes)


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-1.0, ValueError), (float("nan"), ValueError),
                                      (16, ValueError), (True, TypeError)])
def test_dtype_bytes_refuses_bad_numbers(bad, exc):
    with pytest.raises(exc, match="dtype"):
        units.dtype_bytes(bad)


# ---- formatting: documented examples -----------------------------------------

@pytest.mark.parametrize(
    "fn, value, text",
    [
        (units.fmt_bytes, 80e9, "80 GB"),
        (units.fmt_bytes, 141e9, "141 GB"),
        (units.fmt_bytes, 16_060_522_496, "16.1 GB"),
        (units.fmt_bytes, 1.5e12, "1.5 TB"),
        (units.fmt_bytes, 512, "512 B"),
        (units.fmt_bytes, 2048, "2.05 kB"),
        (units.fmt_bytes, -80e9, "-80 GB"),
        (units.fmt_bytes_per_s, 3.35e12, "3.35 TB/s"),
        (units.fmt_bytes_per_s, 819e9, "819 GB/s"),
        (units.fmt_flops, 1.4e11, "140 GFLOP"),
        (units.fmt_flops, 6e23, "6e+05 EFLOP"),  # beyond the largest prefix: exponent form
        (units.fmt_flops_per_s, 989e12, "989 TFLOP/s"),
        (units.fmt_flops_per_s, 2.25e15, "2.25 PFLOP/s"),
        (units.fmt_count, 8.03e9, "8.03 B"),
        (units.fmt_count, 405.85e9, "406 B"),
        (units.fmt_count, 1.2e12, "1.2 T"),
        (units.fmt_count, 32000, "32 K"),
        (units.fmt_count, 7, "7"),
        (units.fmt_seconds, 0.0213, "21.3 ms"),
        (units.fmt_seconds, 2.5e-6, "2.5 us"),
        (units.fmt_seconds, 3e-9, "3 ns"),
        (units.fmt_seconds, 0, "0 s"),
        (units.fmt_seconds, 12, "12 s"),
        (units.fmt_seconds, 7200, "2 h"),
        (units.fmt_seconds, 3 * 86400, "3 days"),
        (units.fmt_seconds, 2 * 365 * 86400, "2 years"),
        (units.fmt_usd, 2.5e-6, "$2.5e-06"),
        (units.fmt_usd, 1234.5, "$1.23e+03"),
    ],
)
def test_formatting_examples(fn, value, text):
    assert fn(value) == text


def test_digits_argument():
    assert units.fmt_bytes(3.35e12, digits=2) == "3.4 TB"
    assert units.fmt_seconds(0.0213456, digits=5) == "21.346 ms"


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_non_finite_formats_without_error(value):
    assert units.fmt_bytes(value) == f"{value} B"
    assert units.fmt_seconds(value) == f"{value} s"


# ---- formatting: round trips (parse the text back, compare within 3 sig. digits) --

_SI = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_COUNT = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}
_TIME = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0, "h": 3600.0,
         "days": 86400.0, "years": 365 * 86400.0}
# 3 significant digits: relative rounding error at most 5e-3 (half a unit in the 3rd digit)
TOL = 5e-3 + 1e-12


def _parse_si(text, unit):
    m = re.fullmatch(rf"(-?[0-9.e+\-]+) ([kMGTPE]?){re.escape(unit)}", text)
    assert m, text
    return float(m.group(1)) * _SI[m.group(2)]


positive_magnitudes = st.floats(min_value=1e-3, max_value=1e21, allow_nan=False, allow_infinity=False)


@FAST
@given(positive_magnitudes)
def test_fmt_bytes_round_trip(x):
    assert _parse_si(units.fmt_bytes(x), "B") == pytest.approx(x, rel=TOL)
    assert _parse_si(units.fmt_bytes(-x), "B") == pytest.approx(-x, rel=TOL)


@FAST
@given(positive_magnitudes)
def test_fmt_rates_round_trip(x):
    assert _parse_si(units.fmt_bytes_per_s(x), "B/s") == pytest.approx(x, rel=TOL)
    assert _parse_si(units.fmt_flops(x), "FLOP") == pytest.approx(x, rel=TOL)
    assert _parse_si(units.fmt_flops_per_s(x), "FLOP/s") == pytest.approx(x, rel=TOL)


@FAST
@given(st.floats(min_value=1e-3, max_value=1e15, allow_nan=False))
def test_fmt_count_round_trip(x):
    text = units.fmt_count(x)
    num, _, prefix = text.partition(" ")
    assert float(num) * _COUNT[prefix] == pytest.approx(x, rel=TOL)


@FAST
@given(st.floats(min_value=1e-11, max_value=1e10, allow_nan=False))
def test_fmt_seconds_round_trip(x):
    num, unit = units.fmt_seconds(x).split(" ")
    assert float(num) * _TIME[unit] == pytest.approx(x, rel=TOL)


@FAST
@given(st.floats(min_value=1e-9, max_value=1e9, allow_nan=False))
def test_fmt_usd_round_trip(x):
    text = units.fmt_usd(x)
    assert text.startswith("$")
    assert float(text[1:]) == pytest.approx(x, rel=TOL)


_IEC = {"": 1, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}


@FAST
@given(positive_magnitudes)
def test_fmt_bytes_binary_round_trip(x):
    for value in (x, -x):
        m = re.fullmatch(r"(-?[0-9.]+) ((?:[KMGTPE]i)?)B", units.fmt_bytes_binary(value))
        assert m, units.fmt_bytes_binary(value)
        assert abs(float(m.group(1))) < 1024                     # the largest prefix that keeps the number short
        assert float(m.group(1)) * _IEC[m.group(2)] == pytest.approx(value, rel=TOL)


def test_fmt_bytes_binary_by_hand():
    # a Zen 4 core's caches as sysfs sizes them, a 1.5 KiB message, a page and a machine's memory
    assert units.fmt_bytes_binary(32 * 1024) == "32 KiB"
    assert units.fmt_bytes_binary(32768 * 1024) == "32 MiB"
    assert units.fmt_bytes_binary(1536) == "1.5 KiB"
    assert units.fmt_bytes_binary(4096) == "4 KiB"
    assert units.fmt_bytes_binary(8) == "8 B"
    assert units.fmt_bytes_binary(24 * 2**30) == "24 GiB"
    # rounding that adds a whole digit keeps it whole (hypothesis found 999.5 TiB printed as '1e+03 TiB')
    assert units.fmt_bytes_binary(1_098_961_871_962_112.0) == "1000 TiB"
    assert units.fmt_bytes_binary(999.5) == "1000 B"
    assert units.fmt_bytes_binary(1023.96 * 1024) == "1 MiB"                # rounding carries into the next prefix
    assert units.fmt_bytes_binary(1000 * 1024) == "1000 KiB"                # not "1e+03 KiB"
    assert units.fmt_bytes_binary(1023) == "1023 B"                         # the whole part is never rounded
    assert units.fmt_bytes_binary(1022.4 * 2**20) == "1022 MiB"
    assert units.fmt_bytes_binary(2**70) == "1024 EiB" and units.fmt_bytes_binary(-0.0) == "0 B"
    with pytest.raises(TypeError, match="n_bytes must be a single real number"):
        units.fmt_bytes_binary("32M")
    with pytest.raises(ValueError, match="digits"):
        units.fmt_bytes_binary(1.0, digits=0)


def test_rounding_carries_into_next_prefix():
    assert units.fmt_bytes(999.9e9) == "1 TB"
    assert units.fmt_seconds(0.9999) == "1 s"
    assert units.fmt_count(999.9e6) == "1 B"
