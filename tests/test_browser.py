"""Chapters 1, 5 and 8 in a real browser: JupyterLab on loopback, driven by headless Chromium.

Starts ``jupyter lab`` on 127.0.0.1 with the repository as its root (once for the module) and one
headless Chromium. Chapter 1: opens ``chapters/01_batch_size.py`` (Jupytext opens it as a notebook),
runs every cell from the *Run* menu, moves the decode explorer's "log2 B" slider with the keyboard
and checks that the explorer's figure and text change. Chapters 5 and 8: opens the chapter, runs only
the cells an explorer needs (its imports, then the explorer's own cell), moves one control (chapter 5's
expert-parallel "racks" slider, chapter 8's long-context "model, chips" dropdown) and checks the
figure and text change. The first minute of a reader: from the repository's root, a double-click on
``01_batch_size.py`` in ``chapters/``, ``exercises/`` and ``solutions/`` opens notebooks (never a text
editor; by the JupyterLab setting the project installs, not one set here), and a double-click on
``lib/llmmath/units.py`` shows plain Python in the same view; a chapter saved from JupyterLab (a copy
under ``build/``) is byte for byte the committed file. Screenshots are saved to
``build/screenshots/browser-*.png``.

Needs Playwright for Python (the ``test`` extra) and Debian's Chromium at
``/usr/bin/chromium`` (or ``LLMMATH_CHROMIUM``); no browser is downloaded.
``.ci/run`` installs Chromium. Every wait has a timeout; the server, its kernels
and the browser are always stopped; the browser may reach only the loopback
server; JupyterLab's autosave is off, so no chapter is ever rewritten.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("LLMMATH_CHROMIUM", "/usr/bin/chromium")
SHOTS = ROOT / "build" / "screenshots"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


def _missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return (f"no Chromium at {CHROMIUM} (apt-get install chromium, or set LLMMATH_CHROMIUM); "
                ".ci/run installs it")
    for mod, extra in (("playwright", "playwright"), ("jupyterlab", "jupyterlab"), ("jupytext", "jupytext")):
        try:
            __import__(mod)
        except ImportError:
            return f"{mod} is not installed (pip install -e '.[test]' installs {extra})"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, timeout: float = 5.0):
    with urllib.request.urlopen(url, timeout=timeout) as r:  # noqa: S310 (loopback only)
        return json.loads(r.read() or b"null")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1, shared by the module's tests: yields (base_url, token); always
    stopped afterwards, with every kernel it started."""
    tmp_path = tmp_path_factory.mktemp("lab")
    port, token = _free_port(), hashlib.sha256(os.urandom(16)).hexdigest()[:32]
    settings = tmp_path / "settings"
    # Autosave off (the chapter is never rewritten); no news prompt over the page. That a .py opens as
    # a Jupytext notebook is not set here: it is the setting the project installs (see
    # test_double_click_opens_notebooks_from_the_repository_root).
    for plugin, values in {"@jupyterlab/docmanager-extension/plugin": {"autosave": False},
                           # every cell in the DOM (no virtual scrolling), so its outputs can be found
                           "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
                           "@jupyterlab/apputils-extension/notification": {"fetchNews": "false",
                                                                          "checkForUpdates": False}}.items():
        f = settings / f"{plugin}.jupyterlab-settings"
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(values))
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "ws"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"), JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
               MPLBACKEND="module://matplotlib_inline.backend_inline")
    log = open(tmp_path / "lab.log", "w")
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--allow-root", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--ServerApp.port_retries=0", f"--ServerApp.token={token}",
           f"--ServerApp.root_dir={ROOT}", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(f"jupyter lab exited ({proc.returncode}):\n{(tmp_path / 'lab.log').read_text()[-3000:]}")
            try:
                _get(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("jupyter lab did not answer within 60 s:\n" + (tmp_path / "lab.log").read_text()[-3000:])
                time.sleep(0.3)
        yield base, token
    finally:
        try:  # stop the kernels the test started, then the server; kill what is left
            for s in _get(f"{base}/api/sessions?token={token}", timeout=3) or []:
                req = urllib.request.Request(f"{base}/api/sessions/{s['id']}?token={token}", method="DELETE")
                urllib.request.urlopen(req, timeout=5).close()  # noqa: S310
        except Exception:
            pass
        for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
            if proc.poll() is not None:
                break
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                pass
        log.close()


@pytest.fixture(scope="module")
def browser(lab, tmp_path_factory):
    """One headless Chromium for the module; each test opens its own page. Removes the checkpoint
    folder JupyterLab creates beside the chapters, unless it was there before."""
    from playwright.sync_api import sync_playwright

    checkpoints = ROOT / "chapters" / ".ipynb_checkpoints"
    checkpoints_before = checkpoints.exists()
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("profile")), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1400, "height": 1000}, timeout=60_000)
        try:
            yield ctx
        finally:
            ctx.close()
            if not checkpoints_before:
                shutil.rmtree(checkpoints, ignore_errors=True)


@contextlib.contextmanager
def _notebook(lab, browser, chapter: str, shot: str):
    """Open ``chapter`` as a notebook in a fresh workspace of its own, once its kernel is idle: yields the
    page. Saves ``build/screenshots/{shot}.png`` (``{shot}-failure.png`` on an error), closes the page
    and shuts the notebook's kernel down; then checks the page reached only the loopback server and
    the chapter's file was not rewritten."""
    base, token = lab
    before = (ROOT / chapter).read_bytes()
    page, outside = _loopback_page(lab, browser)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        # a workspace per test: nothing another test opened is restored beside this chapter
        page.goto(f"{base}/lab/workspaces/{shot}/tree/{chapter}?token={token}", wait_until="domcontentloaded")
        # Jupytext opens the .py as a notebook: a notebook panel with its cells.
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
        page.locator(".jp-StatusBar-Widget", has_text=re.compile(r"Python 3.*\| Idle")).first.wait_for(
            timeout=90_000)  # the kernel has started
        yield page
        page.screenshot(path=str(SHOTS / f"{shot}.png"))
    except Exception:
        page.screenshot(path=str(SHOTS / f"{shot}-failure.png"))
        raise
    finally:
        page.close()
        try:  # this notebook's kernel is no longer needed: free the cores for the next test
            for s in _get(f"{base}/api/sessions?token={token}", timeout=3) or []:
                if s.get("path", "").endswith(Path(chapter).name):
                    req = urllib.request.Request(f"{base}/api/sessions/{s['id']}?token={token}", method="DELETE")
                    urllib.request.urlopen(req, timeout=5).close()  # noqa: S310
        except Exception:
            pass
    assert not outside, f"the page asked for something beyond the loopback server: {outside[:5]}"
    assert (ROOT / chapter).read_bytes() == before, f"JupyterLab rewrote {chapter}"


def _run_cells(page, *sources: str):
    """Run, in order, the code cells whose source begins with each of ``sources`` (as a reader would:
    click the cell's prompt, Ctrl+Enter); returns the last cell. The kernel runs them in that order."""
    cell = None
    for src in sources:
        cell = page.locator(".jp-CodeCell").filter(
            has=page.locator(".jp-InputArea-editor", has_text=re.compile("^" + re.escape(src)))).first
        cell.locator(".jp-InputPrompt").first.click()
        page.keyboard.press("Control+Enter")
    return cell


def _explorer(control):
    """The explorer around a control, its figure (once loaded) and its text panel."""
    explorer = control.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")
    image, panel = explorer.locator("img").first, explorer.locator(".widget-html-content").first
    control.page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=image.element_handle(),
                                   timeout=30_000)
    return explorer, image, panel


def _wait_new_image(image, src0):
    image.page.wait_for_function(
        "([el, s]) => el.getAttribute('src') !== s && el.complete && el.naturalWidth > 0",
        arg=[image.element_handle(), src0], timeout=60_000)


def _wait_text(el, js_condition: str):
    el.page.wait_for_function(f"el => {js_condition}", arg=el.element_handle(), timeout=60_000)


def _slide(slider, steps: int, value: str, says: str):
    """Press ArrowRight ``steps`` times on a slider; wait until its readout shows ``value``, the
    explorer's text includes ``says`` and its figure is a new, loaded image (each step is one kernel
    round trip, so wait for the last one, not the first change). Returns (value0, value1, text0, text1)."""
    explorer, image, panel = _explorer(slider)
    readout = slider.locator(".widget-readout")
    src0, text0, value0 = image.get_attribute("src"), panel.inner_text(), readout.inner_text()
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    for _ in range(steps):
        handle.press("ArrowRight")
    _wait_text(readout, f"el.innerText.trim() === {json.dumps(value)}")
    _wait_text(panel, f"el.innerText.includes({json.dumps(says)})")
    _wait_new_image(image, src0)
    explorer.scroll_into_view_if_needed()
    return value0, readout.inner_text(), text0, panel.inner_text()


def _control(cell_or_page, css: str, label: str):
    """An explorer's control (``css``: its widget class) labelled ``label`` in an output, once it is there
    (generous: the kernel may still be running the cells before it on busy cores)."""
    control = cell_or_page.locator(f".jp-OutputArea-output {css}", has_text=label).first
    control.wait_for(timeout=120_000)
    return control


@pytest.mark.parametrize("chapter, cells, label, steps, values, says", [
    # chapter 1 from the Run menu's "Run All Cells"; the decode explorer: log2 B 6 -> 8
    pytest.param("01_batch_size", None, "log2 B", 2, ("6", "8"), ("B = 64:", "B = 256:"), id="ch01-decode"),
    # chapter 5: only its imports and the explorer's cell; the expert-parallel explorer: racks 2 -> 4
    pytest.param("05_experts_on_a_rack", ("import numpy as np", "ep_explorer = explorers.expert_parallel_explorer()"),
                 "racks", 2, ("2", "4"), ("spread over 2 rack(s)", "spread over 4 rack(s)"), id="ch05-expert-parallel"),
])
def test_explorer_slider_answers_in_chromium(lab, browser, chapter, cells, label, steps, values, says):
    with _notebook(lab, browser, f"chapters/{chapter}.py", f"browser-ch{chapter[:2]}") as page:
        if cells is None:
            page.locator(".lm-MenuBar-item").filter(has_text=re.compile(r"^Run$")).first.click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            # every cell has run (on busy cores the kernel would otherwise still be timing the
            # chapter's later cells, and the slider's round trips would wait behind them)
            page.wait_for_function("""() => {
                const ps = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
                return ps.length > 0 && ps.every(p => /\\[\\d+\\]/.test(p.textContent)); }""", timeout=300_000)
            scope = page
        else:
            scope = _run_cells(page, *cells)
        slider = _control(scope, ".widget-hslider", label)
        value0, value1, text0, text1 = _slide(slider, steps, values[1], says[1])

    assert (value0, value1) == values, (value0, value1)
    assert says[0] in text0 and says[1] in text1, (text0, text1)


def test_chapter8_long_context_explorer_answers_in_chromium(lab, browser):
    with _notebook(lab, browser, "chapters/08_long_context.py", "browser-ch08") as page:
        cell = _run_cells(page, "import numpy as np", "explorers.long_context_explorer()")
        dropdown = _control(cell, ".widget-dropdown", "model, chips")
        explorer, image, panel = _explorer(dropdown)
        src0, text0 = image.get_attribute("src"), panel.inner_text()

        dropdown.locator("select").select_option(label="llama-3.1-70b, 8 x B200")
        _wait_text(panel, "el.innerText.startsWith('llama-3.1-70b, 8 x B200,')")
        _wait_new_image(image, src0)
        text1 = panel.inner_text()
        explorer.scroll_into_view_if_needed()

    assert text0.startswith("llama-3.1-70b, 8 x H200, L = 131,072:"), text0
    assert text1.startswith("llama-3.1-70b, 8 x B200, L = 131,072:"), text1


def _loopback_page(lab, browser):
    """A new page that may reach only the loopback server: (page, list of refused URLs)."""
    base, _ = lab
    outside: list[str] = []
    page = browser.new_page()
    page.set_default_timeout(60_000)

    def only_loopback(route):
        if route.request.url.startswith(base):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    page.route("**/*", only_loopback)
    return page, outside


def _double_click(page, *names: str):
    """Double-click, in turn, each of ``names`` in the file browser (folders, then a file)."""
    for name in names:
        text = page.locator(".jp-DirListing-itemText", has_text=re.compile(f"^{re.escape(name)}$"))
        item = page.locator(".jp-DirListing-content .jp-DirListing-item", has=text).first
        item.wait_for(timeout=30_000)
        item.dblclick()


def _delete_sessions(lab, paths):
    base, token = lab
    for s in _get(f"{base}/api/sessions?token={token}", timeout=3) or []:
        if s.get("path") in paths:
            req = urllib.request.Request(f"{base}/api/sessions/{s['id']}?token={token}", method="DELETE")
            urllib.request.urlopen(req, timeout=5).close()  # noqa: S310


def test_double_click_opens_notebooks_from_the_repository_root(lab, browser):
    """A reader's first minute: JupyterLab rooted at the repository (as the README's lab command starts
    it), chapters/, exercises/ and solutions/ side by side; a double-click on a .py notebook in each opens
    a notebook (cells, a kernel session), never a text editor, by the settings the project installs
    (jupyter-config/, installed into {sys.prefix}/share/jupyter/lab/settings/overrides.d/). A double-click
    on a library module shows it in the same view (plain Python, the root jupytext.toml: a save would give
    back the same bytes, tests/test_notebook_format.py). Nothing is rewritten. (The kernels these
    notebooks start are shut down with the server.)"""
    base, token = lab
    opened = [f"{d}/01_batch_size.py" for d in ("chapters", "exercises", "solutions")]
    module = "lib/llmmath/units.py"
    before = {p: (ROOT / p).read_bytes() for p in [*opened, module]}
    page, outside = _loopback_page(lab, browser)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        page.goto(f"{base}/lab/workspaces/double-click?token={token}", wait_until="domcontentloaded")
        home = page.locator(".jp-FileBrowser .jp-BreadCrumbs-home").first
        for k, path in enumerate(opened, start=1):
            home.click()
            _double_click(page, *path.split("/"))
            # one more notebook panel, with its cells, and the kernel of that notebook started
            page.wait_for_function(
                """n => document.querySelectorAll('.jp-NotebookPanel').length === n &&
                       [...document.querySelectorAll('.jp-NotebookPanel')].every(p => p.querySelector('.jp-Cell'))""",
                arg=k, timeout=90_000)
            assert page.locator(".jp-FileEditor").count() == 0, f"{path} opened in a text editor"
            tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current").first
            assert tab.inner_text().strip().startswith("01_batch_size.py"), tab.inner_text()
        page.screenshot(path=str(SHOTS / "browser-double-click.png"))

        # a library module: plain Python, shown in the same notebook view (light format, a cell per block)
        home.click()
        _double_click(page, *module.split("/"))
        page.wait_for_function("n => document.querySelectorAll('.jp-NotebookPanel').length === n",
                               arg=len(opened) + 1, timeout=90_000)
        tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab.lm-mod-current").first
        assert tab.inner_text().strip().startswith("units.py"), tab.inner_text()
        # (JupyterLab may ask which kernel to start for it: a module names none; no error is shown)
        assert page.locator(".jp-Dialog", has_text="Error").count() == 0, page.locator(".jp-Dialog").all_inner_texts()
        assert page.locator(".jp-FileEditor").count() == 0
        page.screenshot(path=str(SHOTS / "browser-double-click-module.png"))
    except Exception:
        page.screenshot(path=str(SHOTS / "browser-double-click-failure.png"))
        raise
    finally:
        page.close()
        with contextlib.suppress(Exception):
            _delete_sessions(lab, [*opened, module])
    assert not outside, f"the page asked for something beyond the loopback server: {outside[:5]}"
    for p, b in before.items():
        assert (ROOT / p).read_bytes() == b, f"JupyterLab rewrote {p}"


def test_saving_a_chapter_in_jupyterlab_leaves_it_byte_for_byte(lab, browser):
    """Reading leaves git clean: open a chapter, let its kernel start (JupyterLab then records the kernel
    and language in the notebook's metadata), save it (Ctrl+S); the file on disk is byte for byte the
    committed one. Done on a copy under build/ (with its folder's jupytext.toml, the one Jupytext reads),
    so no chapter of the checkout is ever written by a test."""
    work = ROOT / "build" / "lab-save" / "chapters"
    shutil.rmtree(work.parent, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(ROOT / "chapters" / "jupytext.toml", work)
    src = ROOT / "chapters" / "01_batch_size.py"
    copy = work / src.name
    shutil.copy(src, copy)
    committed = src.read_bytes()
    rel = str(copy.relative_to(ROOT))
    mtime0 = copy.stat().st_mtime_ns
    time.sleep(0.05)
    with _notebook(lab, browser, rel, "browser-save") as page:
        page.locator(".jp-NotebookPanel .jp-Cell").first.click()
        page.keyboard.press("Escape")  # command mode: Ctrl+S is the notebook's save
        page.keyboard.press("Control+s")
        deadline = time.monotonic() + 60
        while copy.stat().st_mtime_ns == mtime0:
            assert time.monotonic() < deadline, "JupyterLab did not save the notebook within 60 s"
            page.wait_for_timeout(300)  # (not time.sleep: Playwright must keep serving the page's requests)
        page.wait_for_timeout(500)  # the write is complete
    saved = copy.read_bytes()
    shutil.rmtree(work.parent, ignore_errors=True)
    if saved != committed:
        import difflib

        diff = "".join(list(difflib.unified_diff(committed.decode().splitlines(True), saved.decode().splitlines(True),
                                                 "committed", "saved by JupyterLab"))[:40])
        pytest.fail(f"saving chapters/01_batch_size.py in JupyterLab changed it:\n{diff}")
