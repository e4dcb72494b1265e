"""Answer checking for the exercises: right, how far off, and a units hint.

The answer key (``data/answers/NN.toml``, one file per chapter) holds each problem's value, tolerance,
unit, hint and the problem's own common slips. :func:`check_answer` compares a reader's number
with it and says *right*, or *how far off* and in which direction, with a hint when the miss
looks like a slip: first the problem's own (``slips``: "half of it: both K and V are stored"),
then the generic units slips (a factor of 1000, 1024, 2^30, 100, 8, 2 ...). It never prints the
expected value.

A problem's own slips, in its ``[answers."NN.M"]`` entry::

    slips = [{ factor = 0.5, hint = "both K and V are stored ..." }]

``factor`` is the wrong answer divided by the right one (0.5: half of it; 8: eight times it),
one direction only; ``hint`` names what in *this* question makes that factor. When one of them
explains an answer, the generic hints are not given (a factor of 2 in 02.1 is K and V, not FLOPs).
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from importlib import resources

from .. import _catalog

__all__ = ["check_answer", "answer_keys"]

# Factors that betray a units slip, with the hint to give, and which answers they
# apply to: "any" unit, "bytes" (answers in bytes or bits: binary prefixes and bytes per
# value), "flops" (answers in FLOPs or FLOP per byte), "bandwidth" (bytes or bits per
# second), "other" (none of bytes, flops, bandwidth) or "fraction" (answers that are a
# fraction or a plain ratio: percent slips). A factor of 2 is rarely a units slip alone, so
# its generic hints say only what the unit suggests, and the entry's own hint follows
# (:data:`_WITH_ENTRY_HINT`); a problem's ``slips`` say what a factor means for it.
_SLIPS = [
    (1e3, "a factor of 1000: check k/M/G/T prefixes, or ms vs s", "any"),
    (1e6, "a factor of a million: check prefixes (MB vs TB, us vs s)", "any"),
    (1e9, "a factor of a billion: check prefixes (B vs GB, FLOP vs GFLOP)", "any"),
    (1e12, "a factor of 10^12: check prefixes (TFLOP vs FLOP)", "any"),
    (8.0, "a factor of 8: bits vs bytes", "any"),
    (2.0, "a factor of 2: a multiply-add is 2 FLOPs", "flops"),
    (2.0, "a factor of 2: bytes per value (bf16 2, fp8 1, fp4 0.5)", "bytes"),
    (2.0, "a factor of 2: per-direction vs bidirectional bandwidth", "bandwidth"),
    (2.0, "a factor of 2", "other"),
    (3600.0, "a factor of 3600: hours vs seconds", "any"),
    (100.0, "a factor of 100: a percentage vs a fraction (25% is 0.25)", "fraction"),
    (2.0 ** 10, "a factor of 1024 (2^10): KiB vs bytes, or MiB vs KiB (binary prefixes step by 1024)", "bytes"),
    (2.0 ** 20, "a factor of 2^20 = 1048576: MiB vs bytes, or GiB vs KiB", "bytes"),
    (2.0 ** 30, "a factor of 2^30 = 1073741824: GiB vs bytes", "bytes"),
    (2.0 ** 40, "a factor of 2^40: TiB vs bytes", "bytes"),
    (1.024, "a factor of 1.024: KiB vs kB (2^10 vs 10^3 bytes)", "bytes"),
    (1.024 ** 2, "a factor of 1.049 (1.024^2): MiB vs MB (2^20 vs 10^6 bytes)", "bytes"),
    (1.024 ** 3, "a factor of 1.074 (1.024^3): GiB vs GB (2^30 vs 10^9 bytes)", "bytes"),
    (1.024 ** 4, "a factor of 1.100 (1.024^4): TiB vs TB (2^40 vs 10^12 bytes)", "bytes"),
]

# generic factors whose hint is followed by the entry's own hint
_WITH_ENTRY_HINT = {2.0}

# The ratio must be at least this many times closer (in log scale) to a slip
# factor than to 1 for the slip hint to be given.
_CLOSER = 3.0

_KEY_RE = re.compile(r"^(\d+)\.(\d+)$")


# What check_answer says where the answer key is left out (a student release of the course:
# tools/release.py ships the library without data/answers/, and the autograder checks the answers).
_NO_KEY = ("[{key}] cannot be checked here: this install of llmmath has no answer key (llmmath/data/answers/ "
           "is left out of a student release). Your answer is checked when your work is collected and "
           "autograded; the feedback then says right, or how far off and why.")


def has_answer_key() -> bool:
    """Whether this install of llmmath has the answer key (a student release has not)."""
    folder = resources.files("llmmath.data").joinpath("answers")
    return folder.is_dir() and any(f.name.endswith(".toml") for f in folder.iterdir())


def answer_keys() -> dict:
    """The whole answer key, all chapters (for tests; readers should not need it).

    Raises:
        FileNotFoundError: this install has no answer key (a student release).
    """
    if not has_answer_key():
        raise FileNotFoundError("this install of llmmath has no answer key (llmmath/data/answers/*.toml): "
                                "a student release leaves it out")
    keys: dict = {}
    folder = resources.files("llmmath.data").joinpath("answers")
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if f.name.endswith(".toml"):
            keys.update(_catalog.load(f"answers/{f.name}")["answers"])
    return keys


def _normalise_key(key, keys: dict) -> str:
    """``' 1.3 '`` -> ``'01.3'``; a KeyError naming the closest keys if unknown."""
    if not isinstance(key, str):
        raise TypeError(f"the exercise key must be a string like '01.3', got {key!r}")
    k = key.strip()
    m = _KEY_RE.match(k)
    if m:
        k = f"{int(m.group(1)):02d}.{int(m.group(2))}"
    if k in keys:
        return k
    chapter = k.split(".")[0]
    # similar spellings, those of the same chapter first ('09.8' is closer to '09.7' than to '10.8')
    close = difflib.get_close_matches(k, sorted(keys), n=len(keys), cutoff=0.5)
    close = sorted(close, key=lambda x: x.split(".")[0] != chapter)[:3]
    same_chapter = sorted(x for x in keys if x.split(".")[0] == chapter)
    hint = f"; closest: {', '.join(close)}" if close else ""
    if same_chapter:
        hint += f"; chapter {chapter} has {', '.join(same_chapter)}"
    raise KeyError(f"unknown exercise {key!r}{hint} (keys are 'chapter.problem', e.g. '01.3')")


def _as_float(key: str, value, unit: str) -> float | str:
    """The reader's answer as a float; a TypeError saying why it is not a number;
    or, for a number too large to be a float (``10**400``), a description of it."""
    def refuse(what: str):
        return TypeError(f"[{key}] the answer must be a number in {unit}, got {what}")

    for _ in range(3):  # unwrap NumPy scalars / 0-d or 1-element arrays (and the like) by .item()
        if isinstance(value, (str, bytes)):  # includes np.str_ and np.bytes_
            raise refuse(f"the text {value!r}: remove the quotes")
        if isinstance(value, bool):
            raise refuse(f"{value!r} (a bool)")
        if isinstance(value, numbers.Real):
            break
        dtype = getattr(value, "dtype", None)
        kind = getattr(dtype, "kind", None)
        if kind in ("U", "S"):
            raise refuse(f"the text {value!r} (an array of strings): remove the quotes")
        if kind == "b":
            raise refuse(f"{value!r} (a bool)")
        if hasattr(value, "item"):
            try:
                value = value.item()  # fails for arrays of more than one value
                continue
            except (TypeError, ValueError):
                pass
        break
    if isinstance(value, complex) or (not isinstance(value, numbers.Real) and isinstance(value, numbers.Complex)):
        raise refuse(f"{value!r} (a complex number)")
    try:
        return float(value)
    except OverflowError:
        return _short(value)
    except (TypeError, ValueError):
        size = getattr(value, "size", None)
        several = " (several values: give one number)" if isinstance(size, int) and size > 1 else ""
        raise refuse(f"{value!r}{several}") from None


def _short(value) -> str:
    """A number too large for a float, described briefly (an int by its sign and digits)."""
    if isinstance(value, int):
        digits = int(abs(value).bit_length() * math.log10(2)) + 1  # str() of a huge int may be refused
        return f"{'a negative' if value < 0 else 'an'} integer of about {digits} digits"
    return f"a {type(value).__name__}"

def _pct(x: float, digits: int) -> str:
    """``x`` as a percentage with ``digits`` significant digits, trailing zeros dropped."""
    return f"{x * 100:.{digits}g}"


def _miss_pct(miss: float, rel_tol: float) -> str:
    """The relative miss as a percentage, precise enough to read larger than ``rel_tol``
    (3 to 5 significant digits; closer still it reads "just over" the tolerance)."""
    tol = float(_pct(rel_tol, 6))
    for digits in range(3, 6):
        s = _pct(miss, digits)
        if float(s) > tol:
            return f"{s}%"
    return f"just over {_pct(rel_tol, 6)}%"  # e.g. 1.000001 % with a 1 % tolerance


def _times(r: float) -> str:
    """A ratio above 1, e.g. ``2.5``, ``456``, ``1,024``, ``1.5e+07``."""
    if r < 1000:
        return f"{r:.3g}"
    if r < 1e6:
        return f"{r:,.0f}"
    return f"{r:.3g}"


def _tolerance(rel_tol: float, abs_tol: float) -> str:
    parts = []
    if rel_tol > 0 or abs_tol == 0:
        parts.append(f"{_pct(rel_tol, 6)}%")
    if abs_tol > 0:
        parts.append(f"±{abs_tol:g}")
    return " or ".join(parts)


def _slip_applies(scope: str, unit: str) -> bool:
    u = unit.strip().lower()
    in_bytes = u.startswith(("bytes", "bits"))
    flops = "flop" in u
    bandwidth = ("per second" in u or "/s" in u) and ("byte" in u or "bit" in u)
    if scope == "bytes":
        return in_bytes
    if scope == "flops":
        return flops
    if scope == "bandwidth":
        return bandwidth
    if scope == "other":
        return not (in_bytes or flops or bandwidth)
    if scope == "fraction":
        return "fraction" in u or u.startswith(("times", "ratio", "x ("))
    return True


def _own_slips(key: str, entry: dict) -> list[tuple[float, str]]:
    """The problem's own slips, ``(factor, hint)``; a ValueError naming the key if one is malformed."""
    out = []
    for i, slip in enumerate(entry.get("slips", ())):
        f, hint = (slip.get("factor"), slip.get("hint")) if isinstance(slip, dict) else (None, None)
        if (isinstance(f, bool) or not isinstance(f, (int, float)) or not math.isfinite(f) or f <= 0 or f == 1
                or not isinstance(hint, str) or not hint.strip() or set(slip) - {"factor", "hint"}):
            raise ValueError(f"answer key {key!r}: slips[{i}] must be {{factor = a positive number other than 1 "
                             f"(wrong / right), hint = a non-empty text}}, got {slip!r}")
        out.append((float(f), hint))
    return out


def _factor_text(f: float) -> str:
    """A factor above 1 as the reader sees it: ``2``, ``8`` (within 1 % of a whole number), ``1.43``."""
    n = round(f)
    return str(n) if n >= 2 and abs(f / n - 1) < 0.01 else _times(f)


def _fits(f: float, ratio: float, value: float, expected: float, rel_tol: float, abs_tol: float) -> float | None:
    """How far (log scale) ``ratio`` is from the slip factor ``f`` when the slip explains the answer, else None:
    undone, the answer is right, and the ratio is much closer to ``f`` than to 1."""
    if not math.isclose(value / f, expected, rel_tol=rel_tol, abs_tol=abs_tol):
        return None
    d_f = abs(math.log(ratio) - math.log(f))
    return None if abs(math.log(ratio)) < _CLOSER * d_f else d_f


def _slips(ratio: float, unit: str, tol: float, value: float, expected: float,
           rel_tol: float, abs_tol: float, own=()) -> list[tuple[float, str, str, bool]]:
    """The slips that explain ``ratio``, closest first: (distance, direction, hint, add the entry's hint).

    ``own``: the problem's own ``(factor, hint)`` slips; when any of them explains the answer,
    only they are named (they say what the factor means in this question), else the generic ones.
    """
    found = []
    log_band = math.log1p(tol)
    for f, hint in own:
        d = _fits(f, ratio, value, expected, rel_tol, abs_tol)
        if d is not None and abs(math.log(f)) > 2 * log_band:
            direction = "too large" if f > 1 else "too small"
            found.append((d, direction, f"a factor of {_factor_text(max(f, 1 / f))}: {hint}", False))
    if found:
        return sorted(found)
    for factor, hint, scope in _SLIPS:
        if not _slip_applies(scope, unit):
            continue
        # the factor must lie clearly outside the tolerance band around 1
        if abs(math.log(factor)) <= 2 * log_band:
            continue
        for f, direction in ((factor, "too large"), (1 / factor, "too small")):
            d = _fits(f, ratio, value, expected, rel_tol, abs_tol)
            if d is not None:
                found.append((d, direction, hint, factor in _WITH_ENTRY_HINT))
    return sorted(found)


def check_answer(key: str, value, quiet: bool = False) -> bool | None:
    """Check a reader's answer to exercise ``key`` (e.g. ``"01.3"``).

    Prints a verdict and returns True (right), False (wrong) or None (not
    answered yet: ``value`` is None or ``...``; or not checkable here: an install
    without the answer key, as a student release is, says so and returns None
    instead of raising). Never prints the answer.

    The key may be written ``"1.3"`` or with spaces around it; it means ``"01.3"``.
    The answer is right when it is within the entry's ``rel_tol`` (relative,
    default 2 %) or ``abs_tol`` of the key's value. A wrong answer is told how far
    off it is (``1.37% too large (need within 1%)``: the percentages carry enough
    digits that the miss never reads as within the tolerance, and a miss within
    a hair of it reads ``just over 1%``), or given a units-slip hint instead:

    **Units-slip hints.** Let ``r = value / expected`` and ``t`` the entry's
    tolerance as a relative width (``max(rel_tol, abs_tol / |expected|)``). A
    telltale factor ``F`` (1000, 1024, 2^20, 2^30, 1.024, 1.024^3, 100, 8, 2,
    3600 ..., or its inverse for *too small*) is hinted only when all hold:

    1. undoing it makes the answer right: ``value / F`` is within the entry's
       tolerance of the key's value (the same ``math.isclose`` test as a right
       answer), i.e. ``|r/F - 1| <= rel_tol`` (up to ``rel_tol / (1 - rel_tol)``
       above, as ``isclose`` is symmetric);
    2. ``F`` lies clearly outside the tolerance band around 1:
       ``|ln F| > 2 ln(1 + t)`` (so the bands around 1 and around ``F`` do not
       overlap: 1.024 is never hinted when ``rel_tol`` is 2 %);
    3. ``r`` is much closer to ``F`` than to 1: ``|ln r| >= 3 |ln(r/F)|``. A
       1.6 % miss with a 1 % tolerance is an ordinary miss, not a KiB-vs-kB slip.

    Binary-prefix factors (1024, 2^20, 2^30, 2^40 and the binary/decimal mixes
    1.024, 1.024^2, 1.024^3, 1.024^4) are considered only for answers in bytes
    or bits; the percent-vs-fraction factor 100 only for fractions and ratios.
    A factor of 2 names what the unit suggests (a multiply-add is 2 FLOPs for
    FLOPs, bytes per value for bytes, per direction for bandwidth, nothing else
    otherwise) and is followed by the entry's own hint.
    All factors are tried; the closest match is named first, and when two
    (e.g. 1000 and 1024 with a 2 % tolerance) both explain the answer, both are.

    **The problem's own slips.** An entry's ``slips`` list (``factor`` = wrong /
    right, one direction, and a ``hint``) is tried by rules 1-3 too, and says
    what that factor means in *this* question: 163,840 for 02.1 (half of it) is
    told that K and V are both stored, not that a multiply-add is 2 FLOPs. When
    one of the problem's own slips explains the answer, only they are named.

    Raises:
        KeyError: unknown exercise key (the message names the closest ones).
        TypeError: ``value`` is not a real number (text, bools, NumPy strings
            or bools, complex numbers, arrays of more than one value).
        ValueError: the answer key's entry has a malformed ``slips`` list.

    NaN, infinities and integers too large to be a float (``10**400``) are
    answers, just wrong ones: each gets a message saying what it is, and False.
    """
    say = (lambda *_: None) if quiet else print
    if not has_answer_key():  # a student release: say so, no traceback (None: not checked)
        say(_NO_KEY.format(key=key))
        return None
    keys = answer_keys()
    key = _normalise_key(key, keys)
    entry = keys[key]
    unit = entry["unit"]
    hint = f" Hint: {entry['hint']}" if entry.get("hint") else ""
    if value is None or value is Ellipsis:
        say(f"[{key}] not answered yet: replace the ... with your number ({unit}) and run the cell again.")
        return None
    value = _as_float(key, value, unit)
    if isinstance(value, str):
        say(f"[{key}] not yet: the answer is {value}, far too large to be a float (beyond 1.8e308), "
            f"so it cannot be right; expected a number in {unit}.")
        return False
    if math.isnan(value):
        say(f"[{key}] not yet: the answer is NaN (not a number), usually from 0/0 or an undefined "
            f"value upstream; expected a number in {unit}.")
        return False
    if math.isinf(value):
        say(f"[{key}] not yet: the answer is {'minus ' if value < 0 else ''}infinity ({value}), usually from a "
            f"division by zero or an overflow; expected a finite number in {unit}.")
        return False
    expected = float(entry["value"])
    rel_tol = float(entry.get("rel_tol", 0.02))
    abs_tol = float(entry.get("abs_tol", 0.0))
    if math.isclose(value, expected, rel_tol=rel_tol, abs_tol=abs_tol):
        say(f"[{key}] right (within {_tolerance(rel_tol, abs_tol)}).")
        return True
    if expected == 0 or value == 0:
        # (when the key's value is 0, how far off is undefined, and saying more would give it away)
        say(f"[{key}] not yet{': the answer is zero' if value == 0 else ''}. Units: {unit}.{hint}")
        return False
    if (value > 0) != (expected > 0):
        say(f"[{key}] not yet: wrong sign ({'negative' if value < 0 else 'positive'}). Units: {unit}.{hint}")
        return False
    ratio = value / expected
    tol = max(rel_tol, abs_tol / abs(expected))
    slips = _slips(ratio, unit, tol, value, expected, rel_tol, abs_tol, _own_slips(key, entry))
    if slips:
        direction = slips[0][1]
        which = ", or by ".join(h for _, _, h, _ in slips)
        more = hint if any(add for *_, add in slips) else ""
        say(f"[{key}] not yet: {direction} by {which}. Units: {unit}.{more}")
        return False
    if 0.5 <= ratio <= 2:
        how_far = f"{_miss_pct(abs(ratio - 1), rel_tol)} {'too large' if ratio > 1 else 'too small'}"
    else:
        how_far = f"{_times(ratio)}x too large" if ratio > 1 else f"{_times(1 / ratio)}x too small"
    say(f"[{key}] not yet: {how_far} (need within {_tolerance(rel_tol, abs_tol)}). Units: {unit}.{hint}")
    return False
