"""Each measured fact's spread over runs, from the logs ``llmmath.demos.measured`` writes (``LLMMATH_MEASURED_LOG``).

    python tools/measured_spread.py LOG.jsonl [LOG.jsonl ...]

Prints one row per fact (grouped by check): how many evaluations, the smallest, median and largest value
seen, its bound, the worst margin (the factor by which the value stayed inside its bound at its worst; below 1
means it failed there), and how many first measurements failed and needed a re-measurement. ``tools/flake_check.sh``
appends this table to its report, so the margins of the measured asserts are measured, not guessed.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))
from llmmath.demos.measured import Fact  # noqa: E402


def load(paths) -> list[dict]:
    """Every JSON line of ``paths``; a missing file is skipped (a run whose notebooks never got that far)."""
    rows = []
    for p in map(Path, paths):
        if p.is_file():
            rows += [json.loads(ln) for ln in p.read_text(encoding="utf-8").splitlines() if ln.strip()]
    return rows


def table(rows: list[dict]) -> str:
    """The spread of each fact (see the module's docstring)."""
    if not rows:
        return "no measured facts were logged"
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["check"], r["what"]), []).append(r)
    out = [f"{'check / fact':<78} {'n':>3} {'min':>8} {'median':>8} {'max':>8}  {'bound':<18} {'worst margin':>12} "
           f"{'re-measured':>11}"]
    last_check = None
    for (check, what), rs in groups.items():
        if check != last_check:
            out.append(check)
            last_check = check
        vals = [r["value"] for r in rs]
        facts = [Fact(what, r["value"], low=r["low"], high=r["high"]) for r in rs]
        worst = min((f.margin for f in facts), default=float("nan"))
        first_failed = sum(1 for r in rs if r["attempt"] == 0 and not r["holds"])
        firsts = sum(1 for r in rs if r["attempt"] == 0)
        out.append(f"  {what[:76]:<76} {len(rs):>3} {min(vals):>8.3g} {statistics.median(vals):>8.3g} "
                   f"{max(vals):>8.3g}  {facts[0].bounds():<18} {worst:>11.2f}x {first_failed:>4} of {firsts:<4}")
    return "\n".join(out)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if argv else 2
    print(table(load(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
