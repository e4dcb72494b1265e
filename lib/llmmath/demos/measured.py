"""Measured checks: what a chapter asserts about a measurement on whatever machine runs it.

A *claim check* (``claims.check(n)``) tests the course's math against datasheets and papers: it holds on
every machine or the course is wrong. A *measured check* tests a kernel timed on the reader's machine,
and machines of one kind differ (CPU generation, memory system, the BLAS kernel set OpenBLAS picks, a
busy core). So a measured check here

- states **physical facts** with a margin wider than that spread (a batch amortizes the weight read by at
  least 2x; a kernel does not beat its floor by more than noise; a knee moves with sparsity, not by 1x),
  never a fidelity band one host happens to produce (those are printed, and ``benchmarks/run.py`` keeps
  them as targets);
- **re-measures before failing**: if a fact does not hold on the chapter's measurement, the measurement is
  repeated (up to ``attempts`` times) under a :class:`llmmath.demos.machine.LoadMeter`, and the check passes if
  every fact holds on one of them;
- when it still fails, says **which fact, what was measured each time, on which machine and under what
  load**, so a reader can tell a busy machine from a broken course.

How a failure surfaces depends on ``LLMMATH_MEASURED_CHECKS`` (read at call time):

- unset or ``raise`` (the lab, the tests): :class:`MeasuredCheckFailed`, an ``AssertionError``;
- ``warn`` (set by ``tools/build_book.py`` unless ``--strict``): a visible warning box in the cell's output
  (HTML, with the same text as plain text, starting with :data:`WARNING_MARK`), and the notebook runs on.
  The build lists such cells at the end and still produces the book.

With ``LLMMATH_MEASURED_LOG=FILE`` every evaluated fact is appended to FILE as one JSON line (the flake check
sets it to report each fact's spread across runs: ``tools/measured_spread.py``).

This module is the course's machinery: the math modules never import it.
"""
from __future__ import annotations

import dataclasses
import html
import json
import math
import os
from typing import Callable, Sequence

from . import machine

MODE_ENV = "LLMMATH_MEASURED_CHECKS"
LOG_ENV = "LLMMATH_MEASURED_LOG"
MODES = ("raise", "warn")
#: The first words of a failed measured check's warning, in the notebook's plain-text output (the book build
#: looks for it).
WARNING_MARK = "MEASURED CHECK DID NOT HOLD"


class MeasuredCheckFailed(AssertionError):
    """A measured fact did not hold on the first measurement nor on any re-measurement."""


@dataclasses.dataclass(frozen=True)
class Fact:
    """One physical fact about a measurement: ``value`` must lie strictly above ``low`` and below ``high``.

    ``what``: what ``value`` is, in words (e.g. ``"cost per row, B = 1 over the cheapest batch"``);
    ``unit``: printed after the value (``"x"`` for a ratio); ``why``: what the bound rules out (e.g.
    ``"a kernel that re-reads W per row gives 1x"``).
    Raises ValueError when no bound is given, a bound or the value is not a real number (a NaN value is
    allowed: it never holds, and says so), or ``low >= high``.
    """

    what: str
    value: float
    low: float | None = None
    high: float | None = None
    unit: str = "x"
    why: str = ""

    def __post_init__(self):
        if self.low is None and self.high is None:
            raise ValueError(f"Fact {self.what!r}: give a low or a high bound (or both)")
        for name in ("low", "high"):
            b = getattr(self, name)
            if b is not None and (isinstance(b, bool) or not isinstance(b, (int, float)) or not math.isfinite(b)):
                raise ValueError(f"Fact {self.what!r}: {name} must be a finite number or None, got {b!r}")
        if self.low is not None and self.high is not None and not self.low < self.high:
            raise ValueError(f"Fact {self.what!r}: low ({self.low}) must be below high ({self.high})")
        if isinstance(self.value, bool):
            raise ValueError(f"Fact {self.what!r}: value must be a number, got {self.value!r}")
        try:     # plain floats (a NumPy scalar's comparisons give NumPy booleans, which JSON cannot write)
            object.__setattr__(self, "value", float(self.value))
        except (TypeError, ValueError):
            raise ValueError(f"Fact {self.what!r}: value must be a number, got {self.value!r}") from None
        for name in ("low", "high"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, float(getattr(self, name)))

    @property
    def holds(self) -> bool:
        v = self.value
        return bool(not math.isnan(v) and (self.low is None or v > self.low)
                    and (self.high is None or v < self.high))

    @property
    def margin(self) -> float:
        """How far inside its bounds the value is, as a factor >= 1 when it holds (< 1 when it does not):
        value / low or high / value, the smaller (for positive bounds); the distance in units otherwise."""
        v = float(self.value)
        if math.isnan(v):
            return float("nan")
        m = []
        for b, above in ((self.low, True), (self.high, False)):
            if b is None:
                continue
            if b > 0 and v > 0:
                m.append(v / b if above else b / v)
            else:
                m.append(1.0 + ((v - b) if above else (b - v)))
        return min(m)

    def bounds(self) -> str:
        if self.low is not None and self.high is not None:
            return f"between {self.low:g} and {self.high:g}"
        return f"above {self.low:g}" if self.low is not None else f"below {self.high:g}"

    def describe(self) -> str:
        """e.g. ``cost per row falls from B = 1 to the cheapest batch: 3.41x (must be above 2: holds)``."""
        state = "holds" if self.holds else "DOES NOT HOLD"
        why = f"; {self.why}" if self.why else ""
        return f"{self.what}: {float(self.value):.3g}{self.unit} (must be {self.bounds()}{why}: {state})"


def mode() -> str:
    """``"raise"`` or ``"warn"``, from ``LLMMATH_MEASURED_CHECKS`` (default ``"raise"``).

    Raises ValueError for any other value, naming the allowed ones."""
    m = os.environ.get(MODE_ENV, "").strip().lower() or "raise"
    if m not in MODES:
        raise ValueError(f"{MODE_ENV} must be one of {MODES} (or unset), got {os.environ[MODE_ENV]!r}")
    return m


def machine_line() -> str:
    """One line naming this machine for a failure message: the CPU, its cores, the BLAS kernel set, and the
    OpenBLAS variables that change which kernels run (``OPENBLAS_CORETYPE``, ``OPENBLAS_L2_SIZE``)."""
    cpu = machine.cpu_identity()
    blas = machine.blas_line()
    env = " ".join(f"{k}={os.environ[k]}" for k in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if k in os.environ)
    vm = ", a VM" if cpu["hypervisor"] else ""
    return f"{cpu['model']}, {os.cpu_count()} logical CPUs{vm}; {blas}" + (f"; {env}" if env else "")


def _log(name: str, attempt: int, facts: Sequence[Fact]) -> None:
    path = os.environ.get(LOG_ENV)
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:   # one write per line: appends from parallel workers stay whole
        for fc in facts:
            f.write(json.dumps({"check": name, "attempt": attempt, "what": fc.what, "value": float(fc.value),
                                "low": fc.low, "high": fc.high, "holds": fc.holds,
                                "blas": os.environ.get("OPENBLAS_CORETYPE", "")}) + "\n")


@dataclasses.dataclass
class Outcome:
    """What :func:`check` saw: ``tries``, a list of (facts, load description) per measurement, the first being
    the chapter's own; ``holds``, whether every fact held on some measurement."""

    name: str
    tries: list
    holds: bool

    def report(self) -> str:
        lines = [f"{WARNING_MARK}: {self.name}" if not self.holds else f"measured check held: {self.name}"]
        for i, (facts, load) in enumerate(self.tries):
            label = "the chapter's measurement" if i == 0 else f"re-measurement {i}"
            lines.append(f"  {label} ({load}):")
            lines += [f"    - {fc.describe()}" for fc in facts]
        if not self.holds:
            lines.append(f"  machine: {machine_line()}")
            lines.append("  What to make of it: if the load lines show other work or hypervisor steal above a few "
                         "percent, the machine was busy -- close what runs beside it and run the cell again. On an "
                         "idle machine a fact that fails every time is a finding about this machine or a bug in "
                         "the course: please report it with these lines.")
        return "\n".join(lines)


def check(name: str, facts_of: Callable[[object], Sequence[Fact]], first, *,
          remeasure: Callable[[], object] | None = None, attempts: int = 2, first_load: str | None = None) -> Outcome:
    """Check physical facts about a measurement; re-measure before failing.

    ``name``: the check, in words (printed); ``facts_of(measurement)``: the :class:`Fact` list of one
    measurement; ``first``: the chapter's own measurement; ``remeasure()``: makes a new one (omit it when the
    measurement cannot be repeated, e.g. it took minutes); ``attempts``: how many re-measurements at most
    (each under a :class:`llmmath.demos.machine.LoadMeter`); ``first_load``: a description of the load during the
    first measurement, if the chapter metered it.

    Prints one line per fact of the measurement that settled it. Returns an :class:`Outcome`.
    Raises :class:`MeasuredCheckFailed` (in ``raise`` mode) when some fact failed on every measurement; in
    ``warn`` mode displays the report as a warning box instead (see the module's docstring). Raises ValueError
    for ``attempts`` < 0 or a ``facts_of`` that returns no facts, TypeError for facts that are not Facts.
    """
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 0:
        raise ValueError(f"attempts must be a whole number >= 0, got {attempts!r}")
    how = mode()    # refuse a bad mode before measuring anything

    def evaluate(measurement, attempt, load):
        facts = list(facts_of(measurement))
        if not facts:
            raise ValueError(f"measured check {name!r}: facts_of returned no facts")
        if not all(isinstance(fc, Fact) for fc in facts):
            raise TypeError(f"measured check {name!r}: facts_of must return Fact objects")
        _log(name, attempt, facts)
        tries.append((facts, load))
        return all(fc.holds for fc in facts)

    tries: list = []
    ok = evaluate(first, 0, first_load or "load not metered")
    attempt = 0
    while not ok and remeasure is not None and attempt < attempts:
        attempt += 1
        with machine.LoadMeter() as meter:
            m = remeasure()
        ok = evaluate(m, attempt, meter.describe())
    out = Outcome(name, tries, ok)
    if ok:
        facts, _ = tries[-1]
        again = f" (on re-measurement {len(tries) - 1})" if len(tries) > 1 else ""
        print(f"measured check held{again}: {name}")
        for fc in facts:
            print(f"  - {fc.describe()}")
        return out
    text = out.report()
    if how == "raise":
        raise MeasuredCheckFailed(text)
    _show_warning(text)
    return out


def _show_warning(text: str) -> None:
    """A warning box in a notebook (text/html, with the text as text/plain), or the text on stdout elsewhere."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:         # pragma: no cover - IPython comes with the notebook stack
        print(text)
        return
    if get_ipython() is None:
        print(text)
        return
    head, *rest = text.splitlines()
    box = ('<div class="admonition warning llmmath-measured-warning" style="border-left:6px solid #d9822b;'
           'background:#fff4e5;padding:0.6em 1em;margin:0.5em 0">'
           f'<p class="admonition-title" style="font-weight:bold">{html.escape(head)}</p>'
           f'<pre style="white-space:pre-wrap;background:none">{html.escape(chr(10).join(rest))}</pre></div>')
    display({"text/html": box, "text/plain": text}, raw=True)
