"""Answer checking for the exercises: right, how far off, and a units hint.

The answer key (``data/answers/NN.toml``, one file per chapter) holds each problem's value, tolerance
and unit. :func:`check_answer` compares a reader's number with it and says
*right*, or *how far off* and in which direction, with a hint when the miss
looks like a units slip (a factor of 1000, 1024, 8, 2 ...). It never prints
the expected value.
"""

from __future__ import annotations

import math
import numbers
from importlib import resources

from . import _catalog

__all__ = ["check_answer", "answer_keys"]

# Factors that betray a units slip, with the hint to give.
_SLIPS = [
    (1e3, "a factor of 1000: check k/M/G/T prefixes, or ms vs s"),
    (1e6, "a factor of a million: check prefixes (MB vs TB, us vs s)"),
    (1e9, "a factor of a billion: check prefixes (B vs GB, FLOP vs GFLOP)"),
    (1e12, "a factor of 10^12: check prefixes (TFLOP vs FLOP)"),
    (1.073741824, "a factor of 1.074: GiB vs GB (2^30 vs 10^9)"),
    (1.024, "a factor of 1.024: KiB vs KB"),
    (8.0, "a factor of 8: bits vs bytes"),
    (2.0, "a factor of 2: a multiply-add is 2 FLOPs; bidirectional vs per-direction; bf16 is 2 bytes"),
    (3600.0, "a factor of 3600: hours vs seconds"),
]


def answer_keys() -> dict:
    """The whole answer key, all chapters (for tests; readers should not need it)."""
    keys: dict = {}
    folder = resources.files("llmmath.data").joinpath("answers")
    for f in sorted(folder.iterdir(), key=lambda p: p.name):
        if f.name.endswith(".toml"):
            keys.update(_catalog.load(f"answers/{f.name}")["answers"])
    return keys


def check_answer(key: str, value, quiet: bool = False) -> bool | None:
    """Check a reader's answer to exercise ``key`` (e.g. ``"01.3"``).

    Prints a verdict and returns True (right), False (wrong) or None (not
    answered yet: ``value`` is None or ``...``). Never prints the answer.

    Raises:
        KeyError: unknown exercise key (the message lists the known ones).
        TypeError: ``value`` is not a number.
    """
    keys = answer_keys()
    if key not in keys:
        raise KeyError(f"unknown exercise {key!r}; known: {', '.join(sorted(keys))}")
    entry = keys[key]
    say = (lambda *_: None) if quiet else print
    if value is None or value is Ellipsis:
        say(f"[{key}] not answered yet: replace the ... with your number ({entry['unit']}) and run the cell again.")
        return None
    if isinstance(value, (str, bytes)):
        raise TypeError(f"[{key}] the answer must be a number in {entry['unit']}, got the text {value!r}: "
                        "remove the quotes")
    if isinstance(value, bool):
        raise TypeError(f"[{key}] the answer must be a number in {entry['unit']}, got {value!r} (a bool)")
    if not isinstance(value, numbers.Real):
        try:
            value = float(value)  # NumPy scalars, 0-d arrays
        except (TypeError, ValueError):
            raise TypeError(f"[{key}] the answer must be a number in {entry['unit']}, got {value!r}") from None
    value = float(value)
    if not math.isfinite(value):
        say(f"[{key}] {value} is not a finite number; expected a number in {entry['unit']}.")
        return False
    expected = float(entry["value"])
    rel_tol = float(entry.get("rel_tol", 0.02))
    if math.isclose(value, expected, rel_tol=rel_tol, abs_tol=float(entry.get("abs_tol", 0.0))):
        say(f"[{key}] right (within {rel_tol:.0%}).")
        return True
    if expected != 0 and value != 0 and (value > 0) == (expected > 0):
        ratio = value / expected
        # A units slip shows as a ratio very close to a telltale factor; ordinary
        # rounding (a few percent off) must not be mistaken for one.
        slip_tol = max(rel_tol, 0.003)
        for factor, hint in _SLIPS:
            if factor < 1.1 and not entry["unit"].startswith("bytes"):
                continue  # KiB/GiB hints only make sense for answers in bytes
            for f, direction in ((factor, "too large"), (1 / factor, "too small")):
                if math.isclose(ratio, f, rel_tol=slip_tol):
                    say(f"[{key}] not yet: {direction} by {hint}. Units: {entry['unit']}.")
                    return False
        if 0.5 <= ratio <= 2:
            how_far = f"{abs(ratio - 1):.0%} {'too large' if ratio > 1 else 'too small'}"
        else:
            how_far = f"{ratio:.3g}x too large" if ratio > 1 else f"{1 / ratio:.3g}x too small"
        say(f"[{key}] not yet: {how_far} (need within {rel_tol:.0%}). Units: {entry['unit']}."
            + (f" Hint: {entry['hint']}" if entry.get("hint") else ""))
    else:
        say(f"[{key}] not yet: wrong sign or zero. Units: {entry['unit']}."
            + (f" Hint: {entry['hint']}" if entry.get("hint") else ""))
    return False
