"""Chapters 1, 5 and 8 in a real browser: JupyterLab on loopback, driven by headless Chromium.

Starts ``jupyter lab`` on 127.0.0.1 with the repository as its root (once for the module) and one
headless Chromium. Chapter 1: opens ``chapters/01_batch_size.py`` (Jupytext opens it as a notebook),
runs every cell from the *Run* menu, moves the decode explorer's "log2 B" slider with the keyboard
and checks that the explorer's figure and text change. Chapters 5 and 8: opens the chapter, runs only
the cells an explorer needs (its imports, then the explorer's own cell), moves one control (chapter 5's
expert-parallel "racks" slider, chapter 8's long-context "model, chips" dropdown) and checks the
figure and text change. The first minute of a reader: from the repository's root, a double-click on
``chapters/01_batch_size.py``, ``exercises/01_batch_size_exercises.py`` and
``solutions/01_batch_size_solutions.py`` opens notebooks in tabs with distinct titles (never a text
editor; by the JupyterLab setting the project installs, not one set here), and a double-click on
``lib/llmmath/units.py`` shows plain Python in the same view; a chapter saved from JupyterLab (a copy
under ``build/``) is byte for byte the committed file; a chapter opened by a double-click stays clean (no unsaved
mark on its tab once its kernel is idle, no "Save changes?" when it is closed). Every wait for the kernel's work
also watches for an error: it stops as soon as a cell shows a traceback and fails with that cell and its text
(checked on a small notebook under ``build/`` whose second cell fails). Screenshots are saved to
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


# A cell's error, as JupyterLab 4 shows it: an output rendered as application/vnd.jupyter.stderr (the same type as a
# stream written to stderr, such as a warning) whose text is a traceback: IPython's "Traceback (most recent call
# last)" header, or a last line "SomeError: message" (a SyntaxError has no header), in a cell that has finished (its
# prompt no longer [*]). Returns the first such cell's number (1-based, among all cells), prompt, first line of
# source and the traceback's text; else null.
_CELL_ERROR_JS = r"""() => {
    const cells = [...document.querySelectorAll('.jp-Notebook .jp-Cell')];
    for (const out of document.querySelectorAll(
            '.jp-Notebook .jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')) {
        const text = out.textContent.trim(), last = text.split('\n').pop();
        if (!/Traceback \(most recent call last\)/.test(text) &&
            !/^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)(:|$)/.test(last)) continue;
        const cell = out.closest('.jp-Cell');
        const source = cell && cell.querySelector('.jp-InputArea-editor');
        const prompt = cell && cell.querySelector('.jp-InputPrompt');
        // the traceback can be drawn a moment before the prompt turns from [*] to the cell's count: wait for it
        if (prompt && prompt.textContent.includes('*')) continue;
        return {cell: cells.indexOf(cell) + 1, prompt: prompt ? prompt.textContent.trim() : '',
                source: source ? source.innerText.trim().split('\n')[0] : '', traceback: out.innerText.trim()};
    }
    return null;
}"""


class CellError(AssertionError):
    """A cell showed an error while a test waited for the kernel's work."""


def _wait(page, condition: str, arg=None, *, timeout_ms: int, what: str):
    """Wait until the JavaScript function ``condition`` (of ``arg``: JSON values and element handles) is truthy,
    or until a cell of the notebook shows an error, whichever comes first; polls four times a second. An error
    raises CellError with the cell (number, prompt, first line) and its traceback at once, not at the time-out (a
    run that stops at a failing assert would otherwise wait out the whole limit); a time-out raises TimeoutError
    saying what was awaited."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    js = f"""([arg]) => {{
        const error = ({_CELL_ERROR_JS})();
        if (error) return {{error}};
        return ({condition})(arg) ? {{ok: true}} : false;
    }}"""
    try:
        result = page.wait_for_function(js, arg=[arg], timeout=timeout_ms, polling=250).json_value()
    except PlaywrightTimeout as e:
        raise TimeoutError(f"waited {timeout_ms / 1000:.0f} s for {what}, in vain (and no cell showed an error)") from e
    if "error" in result:
        err = result["error"]
        raise CellError(f"cell {err['cell']} {err['prompt']} (starting {err['source']!r}) failed while waiting for "
                        f"{what}:\n{err['traceback']}")
    return result


def _wait_kernel_idle(page, timeout_ms: int = 90_000):
    """The notebook's kernel has started and is idle (the status bar says so)."""
    page.locator(".jp-StatusBar-Widget", has_text=re.compile(r"Python 3.*\| Idle")).first.wait_for(timeout=timeout_ms)


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
        _wait_kernel_idle(page)
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


def _run_all(page, timeout_ms: int = 300_000):
    """*Run* → *Run All Cells*; returns once every code cell has run (on busy cores the kernel would otherwise
    still be timing the chapter's later cells, and a slider's round trips would wait behind them), or raises
    CellError as soon as a cell fails (the run stops there)."""
    page.locator(".lm-MenuBar-item").filter(has_text=re.compile(r"^Run$")).first.click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    _wait(page, """() => {
        const ps = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
        return ps.length > 0 && ps.every(p => /\\[\\d+\\]/.test(p.textContent)); }""",
          timeout_ms=timeout_ms, what="every cell to run")


def _explorer(control):
    """The explorer around a control, its figure (once loaded) and its text panel."""
    explorer = control.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")
    image, panel = explorer.locator("img").first, explorer.locator(".widget-html-content").first
    _wait(control.page, "el => el.complete && el.naturalWidth > 0", image.element_handle(), timeout_ms=30_000,
          what="the explorer's figure")
    return explorer, image, panel


def _wait_new_image(image, src0):
    _wait(image.page, "([el, s]) => el.getAttribute('src') !== s && el.complete && el.naturalWidth > 0",
          [image.element_handle(), src0], timeout_ms=60_000, what="the explorer's new figure")


def _wait_text(el, js_condition: str):
    _wait(el.page, f"el => {js_condition}", el.element_handle(), timeout_ms=60_000, what=f"text: {js_condition}")


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


def _control(page, css: str, label: str, cell=None):
    """An explorer's control (``css``: its widget class) labelled ``label`` in an output (of ``cell``, a locator,
    or of any cell), once it is there (generous: the kernel may still be running the cells before it on busy
    cores; a cell that fails ends the wait at once)."""
    _wait(page, """([scope, css, label]) => [...(scope || document).querySelectorAll('.jp-OutputArea-output ' + css)]
                       .some(e => e.textContent.replace(/\\s+/g, ' ').toLowerCase().includes(label.toLowerCase()))""",
          [cell.element_handle() if cell is not None else None, css, label], timeout_ms=120_000,
          what=f"the explorer's {label!r} control")
    return (page if cell is None else cell).locator(f".jp-OutputArea-output {css}", has_text=label).first


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
            _run_all(page)
            cell = None
        else:
            cell = _run_cells(page, *cells)
        slider = _control(page, ".widget-hslider", label, cell)
        value0, value1, text0, text1 = _slide(slider, steps, values[1], says[1])

    assert (value0, value1) == values, (value0, value1)
    assert says[0] in text0 and says[1] in text1, (text0, text1)


def test_chapter8_long_context_explorer_answers_in_chromium(lab, browser):
    with _notebook(lab, browser, "chapters/08_long_context.py", "browser-ch08") as page:
        cell = _run_cells(page, "import numpy as np", "explorers.long_context_explorer()")
        dropdown = _control(page, ".widget-dropdown", "model, chips", cell)
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
    opened = ["chapters/01_batch_size.py", "exercises/01_batch_size_exercises.py",
              "solutions/01_batch_size_solutions.py"]
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
            assert tab.inner_text().strip().startswith(path.split("/")[-1]), tab.inner_text()
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


def _scratch_folder(name: str) -> Path:
    """An empty folder build/{name}/chapters/ with the chapters' jupytext.toml (the one Jupytext reads there), for
    notebooks a test writes or saves: no file of the checkout is ever written by a test."""
    work = ROOT / "build" / name / "chapters"
    shutil.rmtree(work.parent, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(ROOT / "chapters" / "jupytext.toml", work)
    return work


def test_saving_a_chapter_in_jupyterlab_leaves_it_byte_for_byte(lab, browser):
    """Reading leaves git clean: open a chapter, let its kernel start (JupyterLab then records the kernel
    and language in the notebook's metadata), save it (Ctrl+S); the file on disk is byte for byte the
    committed one. Done on a copy under build/ (with its folder's jupytext.toml, the one Jupytext reads),
    so no chapter of the checkout is ever written by a test."""
    work = _scratch_folder("lab-save")
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


def test_a_failing_cell_ends_the_wait_with_its_traceback(lab, browser):
    """The waits report an error, not a time-out: a notebook whose first cell writes to stderr (not an error) and
    whose second fails an assert, run from the Run menu; the wait for every cell to run raises at once (not after
    its five minutes) with the failing cell's number, first line and traceback."""
    work = _scratch_folder("lab-error")
    nb = work / "fails.py"
    nb.write_text("# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3 (ipykernel)\n"
                  "#     language: python\n#     name: python3\n# ---\n\n"
                  '# %%\nimport sys\nprint("a warning on stderr", file=sys.stderr)\n\n'
                  '# %%\nassert 1 + 1 == 3, "one plus one is not three"\n\n'
                  '# %%\nx = 2\n', encoding="utf-8")
    try:
        with _notebook(lab, browser, str(nb.relative_to(ROOT)), "browser-cell-error") as page:
            t0 = time.monotonic()
            with pytest.raises(CellError) as raised:
                _run_all(page)
            took = time.monotonic() - t0
    finally:
        shutil.rmtree(work.parent, ignore_errors=True)
    message = str(raised.value)
    assert took < 30, f"the failing cell was reported after {took:.0f} s"
    assert message.startswith("cell 2 [2]: (starting 'assert 1 + 1 == 3, \"one plus one is not three\"')"), message
    assert "Traceback" in message and "AssertionError: one plus one is not three" in message, message
    assert "a warning on stderr" not in message, message


def test_jupyterlab_has_the_server_extension_the_project_installs():
    """pip install -e . puts jupyter-config/llmmath_lab.py into site-packages and jupyter-config/
    jupyter_server_config.d/llmmath.json where the server reads which extensions to load."""
    import importlib.util

    spec = importlib.util.find_spec("llmmath_lab")
    assert spec is not None, "llmmath_lab is not installed: reinstall the project (pip install -e '.[lab]')"
    shipped = ROOT / "jupyter-config" / "llmmath_lab.py"
    assert Path(spec.origin).read_bytes() == shipped.read_bytes(), (
        f"{spec.origin} is stale: reinstall the project (pip install -e '.[lab]')")
    config = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "llmmath.json"
    assert config.is_file(), f"{config} is missing: reinstall the project (pip install -e '.[lab]')"
    assert json.loads(config.read_text()) == json.loads(
        (ROOT / "jupyter-config" / "jupyter_server_config.d" / "llmmath.json").read_text()), f"{config} is stale"


def test_opening_a_chapter_leaves_it_clean(lab, browser):
    """A chapter opened by a double-click and left alone has nothing to save: once its kernel is idle its tab
    has no unsaved mark, and closing it asks nothing ("Save changes?"). (A text notebook keeps no language_info;
    JupyterLab marked it changed when it filled one in on opening and again when the kernel reported its own:
    the server now serves it with that kernel's language_info, jupyter-config/llmmath_lab.py.)"""
    base, token = lab
    chapter = "chapters/01_batch_size.py"
    before = (ROOT / chapter).read_bytes()
    served = _get(f"{base}/api/contents/{chapter}?type=notebook&content=1&token={token}", timeout=30)
    assert served["content"]["metadata"].get("language_info", {}).get("name") == "python", (
        "the server serves the chapter without its kernel's language_info (is the llmmath_lab server extension "
        "installed? pip install -e '.[lab]')")
    page, outside = _loopback_page(lab, browser)
    SHOTS.mkdir(parents=True, exist_ok=True)
    try:
        page.goto(f"{base}/lab/workspaces/clean?token={token}", wait_until="domcontentloaded")
        page.locator(".jp-FileBrowser .jp-BreadCrumbs-home").first.click()
        _double_click(page, *chapter.split("/"))
        page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
        _wait_kernel_idle(page)
        tab = page.locator("#jp-main-dock-panel .lm-TabBar-tab", has_text="01_batch_size.py").first
        for _ in range(6):  # and for three seconds more: the kernel's language_info arrives about then
            assert "jp-mod-dirty" not in (tab.get_attribute("class") or ""), (
                "the chapter's tab shows the unsaved mark right after opening")
            page.wait_for_timeout(500)
        page.screenshot(path=str(SHOTS / "browser-clean.png"))
        tab.locator(".lm-TabBar-tabCloseIcon").click()
        page.wait_for_function("() => !document.querySelector('.jp-NotebookPanel') || !!document.querySelector("
                               "'.jp-Dialog')", timeout=30_000)
        page.wait_for_timeout(1000)  # a dialog would be up by now
        dialogs = page.locator(".jp-Dialog").all_inner_texts()
        assert not dialogs, f"closing the untouched chapter asked: {dialogs}"
        assert page.locator(".jp-NotebookPanel").count() == 0
    except Exception:
        page.screenshot(path=str(SHOTS / "browser-clean-failure.png"))
        raise
    finally:
        page.close()  # (never a click on Save: the chapter is not written)
        with contextlib.suppress(Exception):
            _delete_sessions(lab, [chapter])
    assert not outside, f"the page asked for something beyond the loopback server: {outside[:5]}"
    assert (ROOT / chapter).read_bytes() == before, f"JupyterLab rewrote {chapter}"
