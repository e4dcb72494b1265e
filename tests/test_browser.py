"""Chapter 1 in a real browser: JupyterLab on loopback, driven by headless Chromium.

Starts ``jupyter lab`` on 127.0.0.1 with the repository as its root, opens
``chapters/01_batch_size.py`` (Jupytext opens it as a notebook), runs every
cell from the *Run* menu, moves the decode explorer's "log2 B" slider with the
keyboard and checks that the explorer's figure and text change. A screenshot
is saved to ``build/screenshots/browser-ch01.png``.

Needs Playwright for Python (the ``test`` extra) and Debian's Chromium at
``/usr/bin/chromium`` (or ``LLMMATH_CHROMIUM``); no browser is downloaded.
``.ci/run`` installs Chromium. Every wait has a timeout; the server, its kernel
and the browser are always stopped; the browser may reach only the loopback
server; JupyterLab's autosave is off, so the chapter is never rewritten.
"""

from __future__ import annotations

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
CHAPTER = "chapters/01_batch_size.py"
CHROMIUM = os.environ.get("LLMMATH_CHROMIUM", "/usr/bin/chromium")
SHOT = ROOT / "build" / "screenshots" / "browser-ch01.png"
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


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on 127.0.0.1: yields (base_url, token); always stopped afterwards."""
    port, token = _free_port(), hashlib.sha256(os.urandom(16)).hexdigest()[:32]
    settings = tmp_path / "settings"
    # Autosave off (the chapter is never rewritten); .py opens as a Jupytext notebook, as a reader
    # would set it (Settings -> Document Manager -> defaultViewers); no news prompt over the page.
    for plugin, values in {"@jupyterlab/docmanager-extension/plugin": {
                               "autosave": False, "defaultViewers": {"python": "Jupytext Notebook"}},
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


def test_chapter1_runs_and_its_slider_answers_in_chromium(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    base, token = lab
    chapter = ROOT / CHAPTER
    before = chapter.read_bytes()
    checkpoints_before = (ROOT / "chapters" / ".ipynb_checkpoints").exists()
    outside = []
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1400, "height": 1000}, timeout=60_000)
        try:
            page = ctx.new_page()
            page.set_default_timeout(60_000)

            def only_loopback(route):
                if route.request.url.startswith(base):
                    route.continue_()
                else:
                    outside.append(route.request.url)
                    route.abort()

            page.route("**/*", only_loopback)
            page.goto(f"{base}/lab/tree/{CHAPTER}?token={token}", wait_until="domcontentloaded")
            # Jupytext opens the .py as a notebook: a notebook panel with its cells.
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
            page.locator(".jp-StatusBar-Widget", has_text=re.compile(r"Python 3.*\| Idle")).first.wait_for(
                timeout=60_000)  # the kernel has started
            page.locator(".lm-MenuBar-item").filter(has_text=re.compile(r"^Run$")).first.click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()

            slider = page.locator(".jp-OutputArea-output .widget-hslider", has_text="log2 B").first
            slider.wait_for(timeout=120_000)
            explorer = slider.locator("xpath=ancestor::div[contains(@class,'widget-vbox')][1]")
            image, panel = explorer.locator("img").first, explorer.locator(".widget-html-content").first
            page.wait_for_function("el => el.complete && el.naturalWidth > 0", arg=image.element_handle(),
                                   timeout=30_000)
            readout = slider.locator(".widget-readout")
            src0, text0, value0 = image.get_attribute("src"), panel.inner_text(), readout.inner_text()

            handle = slider.locator(".noUi-handle").first
            handle.focus()
            handle.press("ArrowRight")
            handle.press("ArrowRight")
            # two steps right: log2 B 6 -> 8; the panel must come to say B = 256 (each step is
            # one kernel round trip, so wait for the last one, not the first change)
            page.wait_for_function("el => el.innerText.trim() === '8'", arg=readout.element_handle(),
                                   timeout=30_000)
            page.wait_for_function("el => el.innerText.includes('B = 256:')", arg=panel.element_handle(),
                                   timeout=30_000)
            page.wait_for_function("([el, s]) => el.getAttribute('src') !== s && el.complete && el.naturalWidth > 0",
                                   arg=[image.element_handle(), src0], timeout=30_000)
            text1, value1 = panel.inner_text(), readout.inner_text()
            explorer.scroll_into_view_if_needed()
            SHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOT))
        except Exception:
            SHOT.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOT.with_name("browser-ch01-failure.png")))
            raise
        finally:
            ctx.close()

    assert (value0, value1) == ("6", "8"), (value0, value1)
    assert "B = 64:" in text0 and "B = 256:" in text1, (text0, text1)
    assert not outside, f"the page asked for something beyond the loopback server: {outside[:5]}"
    assert chapter.read_bytes() == before, "JupyterLab rewrote the chapter"
    if not checkpoints_before:
        shutil.rmtree(ROOT / "chapters" / ".ipynb_checkpoints", ignore_errors=True)
