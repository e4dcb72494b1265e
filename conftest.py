"""Collect the course's Jupytext notebooks (``.py``) as nbval notebooks.

nbval collects only ``.ipynb``. Here every ``NN_*.py`` in ``chapters/``,
``solutions/`` and ``exercises/`` is read with Jupytext into an in-memory
notebook and run by nbval's own collector, so no ``.ipynb`` is ever written or
committed. Pytest is also stopped from importing those files as Python test
modules (which it would do for a path given on the command line).
"""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import pytest

ROOT = Path(__file__).resolve().parent
NOTEBOOK_DIRS = {ROOT / "chapters", ROOT / "solutions", ROOT / "exercises"}
_NOTEBOOK_NAME = re.compile(r"^\d\d_[a-z0-9_]+\.py$")


def _is_notebook(path: Path) -> bool:
    return path.parent in NOTEBOOK_DIRS and bool(_NOTEBOOK_NAME.match(path.name))


try:
    import jupytext
    import nbval.plugin as _nbval
except ImportError:  # pragma: no cover - the test extra is not installed
    _nbval = None


if _nbval is not None:

    class JupytextNotebook(_nbval.IPyNbFile):
        """An nbval notebook read from a Jupytext ``.py`` file."""

        # nbval waits 5 s for a cell's output after the kernel's reply; on a loaded
        # 2-core machine that wait has to cover a whole scheduler backlog.
        output_timeout_s = 120

        def collect(self):
            nb = jupytext.read(self.path)
            with mock.patch.object(_nbval, "nbformat", SimpleNamespace(read=lambda *a, **k: nb)):
                for item in super().collect():
                    item.output_timeout = self.output_timeout_s
                    yield item


class _NotAModule(pytest.File):
    def collect(self):
        return []


def pytest_collect_file(file_path: Path, parent):
    if _nbval is not None and _is_notebook(file_path):
        opt = parent.config.option
        if opt.nbval or opt.nbval_lax:
            return JupytextNotebook.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path: Path, parent):
    if _is_notebook(module_path):
        return _NotAModule.from_parent(parent, path=module_path)
    return None


# --- Hypothesis: no example database -------------------------------------------------------------------------------
# The property tests draw fresh examples each run and keep nothing on disk: no .hypothesis/ folder, and no database
# write (or its background thread) left for an xdist worker's shutdown to interrupt; a run under load was once seen
# to print a KeyboardInterrupt traceback from it after a passing [100%].
try:
    from hypothesis import settings as _hypothesis_settings

    _hypothesis_settings.register_profile("llmmath", database=None)
    _hypothesis_settings.load_profile("llmmath")
except ImportError:  # pragma: no cover - the test extra is not installed
    pass


# --- Chapter snapshots -------------------------------------------------------------------------------------------
# Every deterministic table and line a chapter prints is pinned: tests/snapshots/chapters/NN_slug.json holds, for
# each code cell whose standard output is the same on every run and that does not read a measurement, the text it
# printed, keyed by the SHA-1 of the cell's source. When nbval runs a chapter, each such cell's output must match
# its snapshot, so a changed catalog figure or formula that moves a printed table fails the cell that prints it,
# even where no claim's check reads that table. tools/snapshot_chapters.py writes the snapshots (review its diff);
# tests/test_chapter_snapshots.py fails when a pinned cell's source changed without the snapshot being rewritten.
import hashlib  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402

CHAPTER_SNAPSHOTS = ROOT / "tests" / "snapshots" / "chapters"
# Set by tools/snapshot_chapters.py: a folder where each chapter's run writes every code cell's output.
_RECORD_DIR = os.environ.get("LLMMATH_RECORD_CHAPTER_OUTPUTS")


def cell_source_key(source: str) -> str:
    """The key of a cell in a chapter snapshot: SHA-1 of its source, stripped of trailing blanks."""
    return hashlib.sha1(source.rstrip().encode()).hexdigest()


def _stdout_text(outputs) -> str:
    return "".join(o.get("text", "") for o in outputs or () if o.get("output_type") == "stream"
                   and o.get("name") == "stdout")


_snapshot_cache: dict = {}


def _chapter_snapshot(path: Path) -> dict:
    if path not in _snapshot_cache:
        f = CHAPTER_SNAPSHOTS / (path.stem + ".json")
        _snapshot_cache[path] = json.loads(f.read_text())["cells"] if f.exists() else {}
    return _snapshot_cache[path]


if _nbval is not None:

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(item):
        result = yield
        if not isinstance(item, _nbval.IPyNbCell) or Path(item.parent.path).parent != ROOT / "chapters":
            return result
        path = Path(item.parent.path)
        key = cell_source_key(item.cell.source)
        text = _stdout_text(item.test_outputs)
        if _RECORD_DIR:
            out = Path(_RECORD_DIR) / (path.stem + ".jsonl")
            with out.open("a") as fh:
                fh.write(json.dumps({"cell": item.cell_num, "key": key, "source": item.cell.source,
                                     "stdout": text}) + "\n")
            return result
        pinned = _chapter_snapshot(path).get(key)
        if pinned is not None and pinned["stdout"] != text:
            import difflib
            diff = "\n".join(difflib.unified_diff(pinned["stdout"].splitlines(), text.splitlines(),
                                                  "snapshot", "this run", lineterm="", n=1))
            raise AssertionError(
                f"{path.name}, cell {item.cell_num}: what it prints moved from its reviewed snapshot "
                f"(tests/snapshots/chapters/{path.stem}.json). If the change is meant, run "
                f"tools/snapshot_chapters.py and review the diff; if not, a catalog figure or a formula slipped.\n"
                + diff)
        return result
