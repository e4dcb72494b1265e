"""The chapter snapshots (tests/snapshots/chapters/) are current, and the rule that picks their cells is right.

When nbval runs a chapter, conftest.py holds every pinned cell's printed text to its snapshot, so a slipped catalog
figure that moves a printed table fails the cell that prints it. These tests keep that net from going stale: a
pinned cell whose source changed must have its snapshot rewritten (tools/snapshot_chapters.py), and a cell that
reads a measurement must never be pinned (its digits move from machine to machine).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))

from conftest import cell_source_key  # noqa: E402
import snapshot_chapters  # noqa: E402

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_a_current_snapshot(chapter):
    f = ROOT / "tests" / "snapshots" / "chapters" / (chapter.stem + ".json")
    assert f.exists(), f"{chapter.name} has no snapshot: run python tools/snapshot_chapters.py {chapter.stem}"
    doc = json.loads(f.read_text())
    assert doc["pinned_cells"] == len(doc["cells"]) >= 2, f"{chapter.name}: fewer than 2 cells pinned"
    code = [c.source for c in jupytext.read(chapter).cells if c.cell_type == "code"]
    keys = {cell_source_key(s): n for n, s in enumerate(code)}
    stale = [f"cell {c['cell']} ({c['first_line']!r})" for k, c in doc["cells"].items() if k not in keys]
    assert not stale, (f"{chapter.name}: pinned cells whose source changed since the snapshot: {', '.join(stale)}. "
                       f"Run python tools/snapshot_chapters.py {chapter.stem} and review the diff.")
    clean = snapshot_chapters.untainted_cells(chapter)
    measured = [c["cell"] for k, c in doc["cells"].items() if keys[k] not in clean]
    assert not measured, f"{chapter.name}: cells {measured} read a measurement but are pinned"


def _notebook(tmp_path, *sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# t")]
                                  + [nbformat.v4.new_code_cell(s) for s in sources])
    p = tmp_path / "01_toy.py"
    jupytext.write(nb, p, fmt="py:percent")
    return p


def test_taint_follows_names_from_a_measurement(tmp_path):
    p = _notebook(tmp_path,
                  "from llmmath import hardware, kernels, measured\nimport time",       # 0: imports print nothing
                  "sweep = kernels.batch_sweep()\nn = 3",                             # 1: measures
                  "ratio = sweep.measured_s / 2\nprint(ratio)",                       # 2: reads the measurement
                  "print(ratio.max(), n)",                                            # 3: through a tainted name
                  "bw = hardware.get('h100-sxm').hbm_bytes_per_s\nprint(bw)",         # 4: catalog only
                  "t0 = time.perf_counter(); print(bw)",                              # 5: a timer
                  "v = claims.check(39)\nprint(v)",                                   # 6: a measured claim
                  "v = claims.check(3)\nprint(v)",                                    # 7: a catalog claim
                  "print(explorer.update())",                                         # 8: an explorer's timing
                  "%timeit bw * 2")                                                   # 9: a magic: never pinned
    assert snapshot_chapters.untainted_cells(p) == {0, 4, 7}
