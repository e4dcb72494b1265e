"""How fast every claim's explorer answers its controls; prints a table of all 40 and can save it.

For each claim n = 1..40, in a fresh Python process (so that no explorer profits from caches another one
warmed), :func:`llmmath.course.widgets.explorer_for` builds the explorer headless (no browser), and then

- **first**: the wall time of the first control move after the build: the explorer's first control moved
  to another allowed value (:func:`llmmath.course.widgets.other_value`, the move ``tests/test_explorers.py`` makes);
- **warm**: every control is then moved several times in turn (:func:`llmmath.course.widgets.moves`); a control's
  warm time is the median of its moves after its first, and the explorer's is its slowest control's;
- **any first**: the slowest first move of any control (a control's first move may compute what the
  others did not need: another model, another chip).

A move is timed around ``control.value = v``: the trait change, the recompute, the blitted redraw and the
PNG that goes to the browser. Targets (issue 26): first and any first <= 150 ms, warm <= 50 ms.
``--repeats R`` runs R fresh processes per claim and keeps each number's median over them. The column
``others/steal`` is the share of the cores that other work used, and that the hypervisor stole, while a
claim was timed (:class:`llmmath.demos.machine.LoadMeter`): on a machine shared with other work every time is an
upper bound.

Usage: ``python benchmarks/widgets.py [--claims 5,39] [--repeats R] [--out benchmarks/results/NAME.txt]
[--note TEXT]``; exits 1 when an explorer misses a target. ``benchmarks/run.py`` prints the same table.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

FIRST_TARGET_S = 0.150
WARM_TARGET_S = 0.050
MOVES_PER_CONTROL = 6


def _timed_move(control, value) -> float:
    t0 = time.perf_counter()
    control.value = value
    return time.perf_counter() - t0


def measure(claim_id: int, moves_per_control: int = MOVES_PER_CONTROL) -> dict:
    """Time claim ``claim_id``'s explorer in this process: its build, its first move, each control's moves."""
    from llmmath import machine, widgets

    t0 = time.perf_counter()
    ex = widgets.explorer_for(claim_id)
    build_s = time.perf_counter() - t0
    with machine.LoadMeter() as load:
        control = next(iter(ex.controls.values()))
        first_s = _timed_move(control, widgets.other_value(control))
        firsts, warm = {}, {}
        for name, control in ex.controls.items():
            times = [_timed_move(control, v) for v in widgets.moves(control, moves_per_control)]
            firsts[name], warm[name] = times[0], statistics.median(times[1:])
    sh = load.shares
    return {"claim": claim_id, "build_s": build_s, "first_s": first_s, "firsts_s": firsts, "warm_s": warm,
            "others": None if sh is None else sh.others, "steal": None if sh is None else sh.steal}


def _measure_fresh(claim_id: int) -> dict:
    """:func:`measure` in a fresh Python process."""
    r = subprocess.run([sys.executable, __file__, "--one", str(claim_id)], cwd=ROOT, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"claim {claim_id}: the measuring process failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def _combine(runs: list[dict]) -> dict:
    """One claim's runs in fresh processes: each time's median over them, the highest load seen."""
    med = statistics.median
    out = dict(runs[0])
    for k in ("build_s", "first_s"):
        out[k] = med(r[k] for r in runs)
    for k in ("firsts_s", "warm_s"):
        out[k] = {c: med(r[k][c] for r in runs) for c in runs[0][k]}
    for k in ("others", "steal"):
        known = [r[k] for r in runs if r[k] is not None]
        out[k] = max(known) if known else None
    return out


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.0f}"


def table(results: list[dict]) -> tuple[list[str], int]:
    """The table's lines (one per claim, then a summary) and the number of explorers that miss a target."""
    from llmmath import claims

    head = (f"{'claim':>5} {'explorer':<29} {'build':>6} {'first':>6} {'warm':>5} {'slowest control':<25} "
            f"{'any first':>9} {'of control':<25} {'ok':>3} {'others/steal':>12}")
    lines, misses = [head, f"{'':>5} {'':<29} {'ms':>6} {'ms':>6} {'ms':>5} {'':<25} {'ms':>9}"], 0
    for r in results:
        slow = max(r["warm_s"], key=r["warm_s"].get)
        firsts = {**r["firsts_s"], "(the first move)": r["first_s"]}
        late = max(firsts, key=firsts.get)
        ok = r["first_s"] <= FIRST_TARGET_S and firsts[late] <= FIRST_TARGET_S and r["warm_s"][slow] <= WARM_TARGET_S
        misses += not ok
        load = "n/a" if r["others"] is None else f"{r['others']:.0%}/{r['steal']:.1%}"
        lines.append(f"{r['claim']:>5} {claims.get(r['claim']).explorer:<29} {_ms(r['build_s']):>6} "
                     f"{_ms(r['first_s']):>6} {_ms(r['warm_s'][slow]):>5} {slow:<25} {_ms(firsts[late]):>9} "
                     f"{late:<25} {'yes' if ok else 'NO':>3} {load:>12}")
    first = [r["first_s"] for r in results]
    any_first = [max(r["first_s"], *r["firsts_s"].values()) for r in results]
    warm = [max(r["warm_s"].values()) for r in results]
    lines.append(f"first: median {_ms(statistics.median(first))} ms, max {_ms(max(first))} ms; any first: max "
                 f"{_ms(max(any_first))} ms; warm (slowest control): median {_ms(statistics.median(warm))} ms, max "
                 f"{_ms(max(warm))} ms; {len(results) - misses} of {len(results)} explorers meet every target")
    return lines, misses


def widget_lines(claim_ids=range(1, 41), repeats: int = 1, progress: bool = False) -> tuple[list[str], int]:
    """The benchmark's heading, table and summary over ``claim_ids``, and how many explorers miss a target."""
    results = []
    for n in claim_ids:
        results.append(_combine([_measure_fresh(n) for _ in range(repeats)]))
        if progress:
            r = results[-1]
            print(f"claim {n}: first {_ms(r['first_s'])} ms, warm {_ms(max(r['warm_s'].values()))} ms",
                  file=sys.stderr, flush=True)
    head = [f"## widget answer time, every claim's explorer, each in a fresh process ({repeats} per claim; "
            f"medians over them): build; first = the first control move after the build; warm = each control "
            f"moved {MOVES_PER_CONTROL} times, the median of its moves after its first, the slowest control's; "
            f"any first = the slowest first move of any control. A move: the trait change, recompute, blitted "
            f"redraw and PNG. Targets: first and any first <= {_ms(FIRST_TARGET_S)} ms, warm <= "
            f"{_ms(WARM_TARGET_S)} ms. others/steal: the share of the cores other work took, and the hypervisor "
            f"stole, while the claim was timed (where it is high, its times are upper bounds)"]
    lines, misses = table(results)
    return head + lines, misses


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--claims", default=None, help="comma-separated claim ids (default: 1..40)")
    ap.add_argument("--repeats", type=int, default=1, help="fresh processes per claim (default 1)")
    ap.add_argument("--out", default=None, help="also write the table, after a heading naming the commit and "
                                                "the machine, to this file")
    ap.add_argument("--note", default=None, help="a line for the file's heading (how the machine was shared)")
    ap.add_argument("--one", type=int, default=None, help=argparse.SUPPRESS)  # the measuring child: JSON out
    args = ap.parse_args(argv)
    if args.one is not None:
        print(json.dumps(measure(args.one)))
        return 0
    if args.repeats < 1:
        ap.error(f"--repeats must be >= 1, got {args.repeats}")
    ids = [int(x) for x in args.claims.split(",")] if args.claims else range(1, 41)
    lines, misses = widget_lines(ids, args.repeats, progress=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        from llmmath import machine
        from run import _commit  # benchmarks/run.py, beside this file

        heading = [f"# llmmath widget benchmark (benchmarks/widgets.py), {datetime.date.today()}, commit {_commit()}",
                   "# the machine (llmmath.demos.machine.describe):",
                   *(f"#   {line}" for line in machine.describe().splitlines())]
        heading += [f"# {args.note}"] if args.note else []
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(heading) + "\n" + text, encoding="utf-8")
        print(f"wrote {out}")
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
