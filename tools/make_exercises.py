"""Generate exercises/ from solutions/ by removing the worked answers.

``solutions/NN_slug_solutions.py`` gives ``exercises/NN_slug_exercises.py`` (the suffixes keep
JupyterLab's tab titles apart from the chapter's, ``chapters/NN_slug.py``).

Rules (text-level, so the output is a readable diff of the input):

* a cell whose header line carries ``tags=["solution"]`` is dropped whole
  (a markdown worked answer, a code cell of checks);
* inside a code cell, the lines from ``# BEGIN SOLUTION`` to ``# END SOLUTION``
  are replaced by the stub written on the BEGIN line after ``stub:``
  (``# BEGIN SOLUTION stub: answer = ...``), keeping its indentation.

Usage: ``python tools/make_exercises.py`` writes every exercise;
``python tools/make_exercises.py --check`` exits 1 if any committed exercise
differs from what the solution would generate (the test suite runs this).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS, EXERCISES = ROOT / "solutions", ROOT / "exercises"
HEADER = "#\n# *Generated from `solutions/{name}` by `tools/make_exercises.py`; edit that file, not this one.*\n"
_CELL = re.compile(r"^# %%")
_BEGIN = re.compile(r"^(\s*)# BEGIN SOLUTION(?:\s+stub:\s*(.*))?$")
_END = re.compile(r"^\s*# END SOLUTION\s*$")


def strip_solutions(text: str, name: str = "") -> str:
    """The exercise version of a solution notebook's text.

    Raises:
        ValueError: an unclosed or nested solution block (with its line number).
    """
    out: list[str] = []
    cell_dropped = False
    in_block = False
    for lineno, line in enumerate(text.splitlines(keepends=True), 1):
        if _CELL.match(line):
            if in_block:
                raise ValueError(f"{name}:{lineno}: a new cell starts inside a solution block")
            cell_dropped = 'tags=["solution"]' in line
        if cell_dropped:
            continue
        m = _BEGIN.match(line.rstrip("\n"))
        if m:
            if in_block:
                raise ValueError(f"{name}:{lineno}: nested BEGIN SOLUTION")
            in_block = True
            if m.group(2):
                out.append(f"{m.group(1)}{m.group(2)}\n")
            continue
        if _END.match(line):
            if not in_block:
                raise ValueError(f"{name}:{lineno}: END SOLUTION without BEGIN")
            in_block = False
            continue
        if not in_block:
            out.append(line)
    if in_block:
        raise ValueError(f"{name}: unclosed BEGIN SOLUTION")
    body = re.sub(r"\n{3,}", "\n\n", "".join(out))
    # The notice goes under the title of the opening markdown cell (after any Jupytext header).
    start = body.find("# %% [markdown]\n")
    first_blank = body.find("\n#\n", start) if start >= 0 else -1
    if first_blank > 0:
        return body[:first_blank + 1] + HEADER.format(name=name)[2:] + body[first_blank + 1:]
    return HEADER.format(name=name) + body


def exercise_name(solution_name: str) -> str:
    """``01_batch_size_solutions.py`` -> ``01_batch_size_exercises.py``."""
    if not solution_name.endswith("_solutions.py"):
        raise ValueError(f"{solution_name}: a solution notebook is named NN_slug_solutions.py")
    return solution_name[:-len("_solutions.py")] + "_exercises.py"


def expected_exercises() -> dict[Path, str]:
    return {EXERCISES / exercise_name(p.name): strip_solutions(p.read_text(encoding="utf-8"), p.name)
            for p in sorted(SOLUTIONS.glob("[0-9][0-9]_*.py"))}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if exercises/ is out of date")
    args = ap.parse_args(argv)
    stale = []
    expected = expected_exercises()
    orphans = sorted(p.name for p in EXERCISES.glob("[0-9][0-9]_*.py") if p not in expected)
    if orphans:  # e.g. an exercise left behind by a renamed or removed solution
        print("exercises without a solution (remove them):", ", ".join(orphans))
    for path, text in expected.items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current != text:
            stale.append(path.name)
            if not args.check:
                path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print("out of date (run python tools/make_exercises.py):", ", ".join(stale))
    if args.check and (stale or orphans):
        return 1
    verb = "up to date:" if args.check else "wrote:"
    print(verb, ", ".join(stale if not args.check else [p.name for p in expected]) or "nothing changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
