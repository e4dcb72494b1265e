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
