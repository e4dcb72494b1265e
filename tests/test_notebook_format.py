"""Reading a notebook in JupyterLab leaves git clean; a plain .py is never rewritten as a notebook.

Every ``chapters/``, ``exercises/`` and ``solutions/`` notebook is committed exactly as Jupytext
writes it under the project's configuration (the ``jupytext.toml`` of its folder: py:percent, the
kernelspec header, ``slideshow`` and ``tags`` cell metadata), so opening one in JupyterLab and
saving it (autosave does, minutes after a kernel starts) changes no byte. Checked two ways, with
no browser: Jupytext's reader and writer on the text, and Jupytext's contents manager (what
JupyterLab talks to) opening and saving a copy of each notebook after adding the metadata
JupyterLab adds. ``tests/test_browser.py`` saves one chapter from a real JupyterLab.

Outside those folders (the root ``jupytext.toml``) a ``.py`` file is plain Python: JupyterLab's
double-click shows ``lib/llmmath/units.py`` in Jupytext's notebook view (light format, one cell per
block), and a save must give back the same bytes, for every such file in the repository.
"""

from __future__ import annotations

import difflib
import shutil
from pathlib import Path

import pytest

jupytext = pytest.importorskip("jupytext", reason="jupytext is needed (the test, book or lab extra)")
from jupytext.config import find_jupytext_configuration_file, load_jupytext_config  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("chapters", "exercises", "solutions")
NOTEBOOKS = sorted(p for d in FOLDERS for p in (ROOT / d).glob("[0-9][0-9]_*.py"))
IDS = [f"{p.parent.name}/{p.name}" for p in NOTEBOOKS]
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def _diff(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(before.splitlines(True), after.splitlines(True), name, f"{name} as Jupytext saves it")
    return "".join(list(lines)[:40])


@pytest.mark.parametrize("folder", FOLDERS)
def test_each_notebook_folder_has_the_notebook_configuration(folder):
    config_file = find_jupytext_configuration_file(str(ROOT / folder))
    assert config_file == str(ROOT / folder / "jupytext.toml")
    assert (ROOT / folder / "jupytext.toml").read_text() == (ROOT / "chapters" / "jupytext.toml").read_text()
    config = load_jupytext_config(str(next((ROOT / folder).glob("01_batch_size*.py"))))
    assert config.formats in ("py:percent", ["py:percent"]) and config.notebook_metadata_filter == "kernelspec,-all"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_is_committed_as_jupytext_writes_it(path):
    text = path.read_text(encoding="utf-8")
    config = load_jupytext_config(str(path))
    nb = jupytext.reads(text, fmt="py:percent", config=config)
    nb.metadata.setdefault("kernelspec", KERNELSPEC)
    nb.metadata["language_info"] = {"name": "python", "version": "3.11"}  # JupyterLab adds it; not kept
    out = jupytext.writes(nb, fmt="py:percent", config=config)
    assert out == text, ("Jupytext would rewrite this notebook on save (normalise it: "
                         "jupytext --to py:percent in its folder):\n" + _diff(text, out, path.name))


def _plain_python_files() -> list[Path]:
    """Every .py file of the repository outside the notebook folders (git's list; else a glob)."""
    import subprocess

    r = subprocess.run(["git", "ls-files", "*.py"], capture_output=True, text=True, cwd=ROOT)
    names = r.stdout.split() if r.returncode == 0 and r.stdout.strip() else [
        str(p.relative_to(ROOT)) for d in ("lib", "tools", "tests", "benchmarks", "book") for p in (ROOT / d).rglob("*.py")]
    return sorted(ROOT / n for n in names if n.split("/")[0] not in FOLDERS and (ROOT / n).is_file())


def _contents_manager(root: Path):
    pytest.importorskip("jupyter_server", reason="jupyter_server is needed (the test or lab extra)")
    from jupyter_server.services.contents.largefilemanager import LargeFileManager
    from jupytext.sync_contentsmanager import build_sync_jupytext_contents_manager_class

    return build_sync_jupytext_contents_manager_class(LargeFileManager)(root_dir=str(root))


def _open_and_save(cm, rel: str) -> None:
    """What JupyterLab does to a .py opened in Jupytext's notebook view, then saved."""
    model = cm.get(rel, type="notebook", content=True)
    assert model["type"] == "notebook", rel
    model["content"]["metadata"]["language_info"] = {"name": "python", "version": "3.11"}
    model["content"]["metadata"].setdefault("kernelspec", KERNELSPEC)
    for cell in model["content"]["cells"]:
        cell.setdefault("metadata", {})["trusted"] = True  # what JupyterLab may send; not kept
    cm.save(model, rel)


def test_jupyterlab_save_of_a_notebook_changes_no_byte(tmp_path):
    """Jupytext's contents manager (JupyterLab's side of a save) opens and saves a copy of each notebook."""
    shutil.copy(ROOT / "jupytext.toml", tmp_path)
    for folder in FOLDERS:
        (tmp_path / folder).mkdir()
        shutil.copy(ROOT / folder / "jupytext.toml", tmp_path / folder)
    for p in NOTEBOOKS:
        shutil.copy(p, tmp_path / p.parent.name / p.name)
    cm = _contents_manager(tmp_path)
    changed = []
    for p in NOTEBOOKS:
        rel = f"{p.parent.name}/{p.name}"
        _open_and_save(cm, rel)
        after = (tmp_path / rel).read_text(encoding="utf-8")
        if after != p.read_text(encoding="utf-8"):
            changed.append(_diff(p.read_text(encoding="utf-8"), after, rel))
    assert not changed, "a save from JupyterLab would change these notebooks:\n" + "\n".join(changed)


def test_jupyterlab_save_of_a_plain_python_file_changes_no_byte(tmp_path):
    """lib/, tools/, tests/, benchmarks/ ... open as notebooks on a double-click too; saved, they are unchanged
    (a comment line starting with "# +" would be taken for a light-format cell marker and lost)."""
    files = _plain_python_files()
    assert ROOT / "lib" / "llmmath" / "units.py" in files
    shutil.copy(ROOT / "jupytext.toml", tmp_path)
    for p in files:
        dest = tmp_path / p.relative_to(ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(p, dest)
    cm = _contents_manager(tmp_path)
    changed = []
    for p in files:
        rel = str(p.relative_to(ROOT))
        _open_and_save(cm, rel)
        after = (tmp_path / rel).read_text(encoding="utf-8")
        if after != p.read_text(encoding="utf-8"):
            changed.append(_diff(p.read_text(encoding="utf-8"), after, rel))
    assert not changed, ("a save from JupyterLab's notebook view would change these files (in the light format "
                         "a line starting with '# +' is a cell marker: reword it):\n" + "\n".join(changed))


def test_jupyterlab_has_the_settings_the_project_installs():
    """pip install -e . puts jupyter-config/.../llmmath.json where JupyterLab reads packages' setting defaults:
    Python files open in Jupytext's notebook view on a double-click."""
    import json
    import sys

    pytest.importorskip("jupyterlab", reason="JupyterLab is not installed (the lab or test extra)")
    shipped = ROOT / "jupyter-config" / "lab" / "settings" / "overrides.d" / "llmmath.json"
    installed = Path(sys.prefix) / "share" / "jupyter" / "lab" / "settings" / "overrides.d" / "llmmath.json"
    assert json.loads(shipped.read_text())["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"] == {
        "python": "Jupytext Notebook"}
    assert installed.is_file(), f"{installed} is missing: reinstall the project (pip install -e '.[lab]')"
    assert json.loads(installed.read_text()) == json.loads(shipped.read_text()), (
        f"{installed} is stale: reinstall the project (pip install -e '.[lab]')")
