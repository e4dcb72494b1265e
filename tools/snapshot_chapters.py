"""Write ``tests/snapshots/chapters/NN_slug.json``: what each chapter's deterministic cells print, for the
chapter runs (``conftest.py``) to hold them to.

A cell is pinned when

1. it reads no measurement: neither its source nor any name it uses comes from a cell that names a measured
   module or a timer (:data:`MEASURED`), followed through the names each cell assigns (a taint analysis over the
   chapter's cells, in order); and
2. it printed the same text on two runs of the chapter, the second under another OpenBLAS kernel set
   (``OPENBLAS_CORETYPE=Haswell``, a smaller L2): a cell whose digits depend on the BLAS, on hash order or on the
   clock is left out.

A change that moves a printed number must update the snapshot on purpose: run this tool (about twice a chapter
run), read ``git diff tests/snapshots/chapters`` as a reviewer would, and commit it with the change.

    python tools/snapshot_chapters.py                 # every chapter
    python tools/snapshot_chapters.py 02_kv_cache     # one or more chapters by name
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import jupytext

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "snapshots" / "chapters"
#: a name that reads the machine: a timer, a measured demo or the machine's description
MEASURED = re.compile(r"measured|kernels|attention_kernels|moe_bench|demos|machine|context(_flip)?|adversarial|"
                      r"critical_batch|reversible|schedule_bench|mpi_\w+|perf_counter|monotonic|timeit|time|"
                      r"remeasure\w*")
#: calls that measure: an explorer's update() (it returns how long it took), and the checks of the claims that
#: simulate or measure (their digits depend on the machine's BLAS; tools/snapshot_claims.py leaves them out too)
MEASURED_CALLS = re.compile(r"\.update\(\)|claims\.check\(\s*(12|23|37|38|39)\b")


def _names(tree: ast.AST) -> tuple[set[str], set[str]]:
    """(names the code reads, attributes included; names it binds) at any depth."""
    used, bound = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else used).add(node.id)
        elif isinstance(node, ast.Attribute):
            used.add(node.attr)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            bound.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
    return used, bound


def untainted_cells(chapter: Path) -> set[int]:
    """nbval's numbers (code cells counted from 0) of the code cells that read no measurement.

    Statement by statement: an import binds a measured name only where the name (or its module) is one; any other
    statement that reads a measured or tainted name taints every name it binds, and its cell; a clean statement that
    binds a name clears it.
    """
    nb = jupytext.read(chapter)
    tainted: set[str] = set()
    clean = set()
    for i, cell in enumerate(c for c in nb.cells if c.cell_type == "code"):
        try:
            body = ast.parse(cell.source).body
        except SyntaxError:      # a magic or shell line: not pinned
            continue
        dirty = False
        for stmt in body:
            used, bound = _names(stmt)
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                module = getattr(stmt, "module", None) or ""
                for a in stmt.names:
                    name = (a.asname or a.name).split(".")[0]
                    if MEASURED.fullmatch(name) or any(MEASURED.fullmatch(p) for p in module.split(".")):
                        tainted.add(name)
            elif any(MEASURED.fullmatch(u) for u in used) or used & tainted or \
                    MEASURED_CALLS.search(ast.get_source_segment(cell.source, stmt) or ""):
                tainted |= bound
                dirty = True
            else:                # a clean statement rebinding a name clears it
                tainted -= bound
        if not dirty:
            clean.add(i)
    return clean


def _run(chapters: list[Path], record: Path, env_extra: dict) -> None:
    env = {**os.environ, "LLMMATH_RECORD_CHAPTER_OUTPUTS": str(record), **env_extra}
    cmd = [sys.executable, "-m", "pytest", "-q", *map(str, chapters)]
    r = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"a chapter failed while recording its outputs:\n{r.stdout[-4000:]}")


def _read(record: Path, chapter: Path) -> dict[int, dict]:
    f = record / (chapter.stem + ".jsonl")
    return {row["cell"]: row for row in map(json.loads, f.read_text().splitlines())} if f.exists() else {}


def main(argv: list[str]) -> int:
    chapters = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
    if argv:
        want = set(argv)
        chapters = [c for c in chapters if c.stem in want or c.name in want]
        if not chapters:
            sys.exit(f"no chapter named {', '.join(argv)}; the chapters are "
                     + ", ".join(c.stem for c in sorted((ROOT / 'chapters').glob('[0-9][0-9]_*.py'))))
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp, "a"), Path(tmp, "b")
        a.mkdir(), b.mkdir()
        _run(chapters, a, {})
        _run(chapters, b, {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "512"})
        OUT.mkdir(parents=True, exist_ok=True)
        for ch in chapters:
            ra, rb, clean = _read(a, ch), _read(b, ch), untainted_cells(ch)
            cells, unstable = {}, 0
            for n, row in sorted(ra.items()):
                if n not in clean or not row["stdout"].strip():
                    continue
                if rb.get(n, {}).get("stdout") != row["stdout"]:
                    unstable += 1
                    continue
                first = next((ln for ln in row["source"].splitlines() if ln.strip() and not ln.startswith("#")), "")
                cells[row["key"]] = {"cell": n, "first_line": first[:100], "stdout": row["stdout"]}
            doc = {"about": "what this chapter's deterministic cells print; written by tools/snapshot_chapters.py, "
                            "held by conftest.py when the chapter runs",
                   "pinned_cells": len(cells), "left_out_as_unstable": unstable, "cells": cells}
            (OUT / (ch.stem + ".json")).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
            print(f"{ch.stem}: {len(cells)} cells pinned, {unstable} printed differently on the second run "
                  f"(left out), {len(ra) - len(cells) - unstable} read a measurement or print nothing")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
