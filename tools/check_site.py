"""Open a built page in headless Chromium with the network cut off, and check what it renders.

    python tools/check_site.py build/book/chapters/01_batch_size.html [--shot build/screenshots/book-ch01.png]
    python tools/check_site.py build/slides/01_batch_size.slides.html --slides

Every request that is not for a local file is aborted (and reported), so a page
that needs a CDN shows it here. Checks: the page's images have loaded, MathJax
typeset its math, and (``--widgets N``, default 1 for the book) at least N widget
snapshots were rendered by the widget manager with a slider; it counts the text outputs
wider than their box (``outputs_cut``: cut at its edge or behind a sideways scroll; the
book's CSS wraps them) and the snapshot labels (``snapshot_labels``). Saves a screenshot
of the first widget and one of the page's top. Needs Playwright (``pip install
playwright``) and a Chromium (``/usr/bin/chromium`` from Debian, or
``LLMMATH_CHROMIUM``); it downloads no browser.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("LLMMATH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]


def check(page_path: Path, shot: Path, *, widgets: int = 1, slides: bool = False, math: bool = True,
          timeout_s: float = 60) -> dict:
    from playwright.sync_api import sync_playwright

    url = page_path.resolve().as_uri()
    blocked, errors = [], []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1280, "height": 900}, timeout=timeout_s * 1000)
        try:
            page = browser.new_page()
            page.set_default_timeout(timeout_s * 1000)

            def route(r):
                if r.request.url.startswith(("file:", "data:", "blob:")):
                    r.continue_()
                else:
                    blocked.append(r.request.url)
                    r.abort()

            page.route("**/*", route)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("requestfailed", lambda r: errors.append(f"failed to load {r.url}") if r.url not in blocked else None)
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(url, wait_until="load")
            if math:
                page.wait_for_function("() => document.querySelectorAll('mjx-container').length > 0")
            if widgets:
                page.wait_for_function(f"() => document.querySelectorAll('.widget-slider, .jupyter-widgets.widget-slider, "
                                       f".widget-hslider').length >= {widgets}")
                page.wait_for_function("() => [...document.querySelectorAll('.jupyter-widgets img, .widget-image')]"
                                       ".some(i => i.complete && i.naturalWidth > 0)")
            page.wait_for_timeout(500)
            info = page.evaluate("""() => ({
                math: document.querySelectorAll('mjx-container').length,
                math_errors: document.querySelectorAll('mjx-merror').length,
                images: document.images.length,
                images_loaded: [...document.images].filter(i => i.complete && i.naturalWidth > 0).length,
                sliders: document.querySelectorAll('.widget-slider, .widget-hslider').length,
                widget_images: [...document.querySelectorAll('.jupyter-widgets img, .widget-image')]
                               .filter(i => i.naturalWidth > 0).length,
                slider_labels: [...document.querySelectorAll('.widget-slider .widget-label, .widget-hslider .widget-label')]
                               .map(l => l.textContent).slice(0, 8),
                // text outputs wider than their box: cut at its edge, or behind a sideways scroll a reader misses
                outputs_cut: [...document.querySelectorAll('div.cell_output pre')]
                             .filter(p => p.scrollWidth > p.clientWidth + 1).length,
                snapshot_labels: document.querySelectorAll('div.llmmath-snapshot-note').length,
            })""")
            shot.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(shot))
            info["screenshots"] = [str(shot)]
            if widgets and slides:  # go to the (sub)slide that holds the first slider
                hv = page.evaluate("""() => {
                    const s = document.querySelector('.widget-slider, .widget-hslider').closest('section');
                    const outer = s.parentElement.closest('section') || s;
                    const h = [...outer.parentElement.children].indexOf(outer);
                    const v = outer === s ? 0 : [...outer.children].filter(e => e.tagName === 'SECTION').indexOf(s);
                    return [h, v]; }""")
                page.evaluate(f"() => {{ location.hash = '#/{hv[0]}/{hv[1]}'; }}")
                page.wait_for_timeout(1500)
                wshot = shot.with_name(shot.stem + "-widget.png")
                page.screenshot(path=str(wshot))
                info["screenshots"].append(str(wshot))
            elif widgets:
                w = page.locator(".widget-vbox, .jupyter-widgets.widget-container").filter(
                    has=page.locator(".widget-slider, .widget-hslider")).first
                w.scroll_into_view_if_needed()
                wshot = shot.with_name(shot.stem + "-widget.png")
                page.screenshot(path=str(wshot))
                info["screenshots"].append(str(wshot))
            if math and not slides:
                eq = page.locator("div.math mjx-container, mjx-container[display='true']").first
                eq.scroll_into_view_if_needed()
                mshot = shot.with_name(shot.stem + "-math.png")
                page.screenshot(path=str(mshot))
                info["screenshots"].append(str(mshot))
        finally:
            browser.close()
    info["blocked_requests"] = blocked
    info["errors"] = errors
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("--shot", type=Path, help="screenshot path (default build/screenshots/<page>.png)")
    ap.add_argument("--widgets", type=int, default=1, help="widget snapshots the page must render (default 1)")
    ap.add_argument("--slides", action="store_true")
    ap.add_argument("--no-math", action="store_true", help="the page has no math to wait for")
    args = ap.parse_args(argv)
    shot = args.shot or ROOT / "build" / "screenshots" / (args.page.stem.replace(".", "-") + ".png")
    info = check(args.page, shot, widgets=args.widgets, slides=args.slides, math=not args.no_math)
    for k, v in info.items():
        print(f"{k}: {v}")
    bad = (info["blocked_requests"] or info["images_loaded"] < info["images"] or info["math_errors"]
           or (not args.slides and info["outputs_cut"]))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
