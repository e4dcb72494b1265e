"""Measure every slide of built reveal.js decks in headless Chromium at a projector's 1280x720.

    python tools/check_slides.py                      # every deck in build/slides/
    python tools/check_slides.py build/slides/01_batch_size.slides.html

Each deck is opened offline (every request that is not a local file is
aborted), MathJax and the widget snapshots are left to render, and every slide
and sub-slide is shown in turn with reveal.js's API (``Reveal.getSlides()``,
``Reveal.slide(h, v)``). A slide *fits* when its content, in reveal.js's own
coordinates (which it scales to the window), is no taller than the deck's
configured height and no wider than its width, and nothing inside it (a code
line, an equation, a table, an image) runs past its right edge or hides more than
12 px of itself behind a scroll bar (MathJax's hidden assistive MathML overhangs
a paragraph by a few pixels). Prints one line per slide that does not fit:
deck, slide h/v, its first heading, height and width. Exit 1 if any.
Needs Playwright and Chromium, as ``tools/check_site.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
from check_site import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

VIEWPORT = {"width": 1280, "height": 720}

_MEASURE = """() => {
  const cfg = Reveal.getConfig();
  const out = [];
  for (const s of Reveal.getSlides()) {
    const idx = Reveal.getIndices(s);
    Reveal.slide(idx.h, idx.v);
    const outer = s.parentElement.closest('section');
    const head = s.querySelector('h1, h2, h3, h4') || (outer && outer.querySelector('h1, h2, h3, h4'));
    // content height: the section's children, not its (possibly forced) box
    let top = Infinity, bottom = -Infinity;
    for (const c of s.children) {
      const r = c.getBoundingClientRect();
      if (r.height === 0 && r.width === 0) continue;
      top = Math.min(top, r.top); bottom = Math.max(bottom, r.bottom);
    }
    const scale = Reveal.getScale();
    const sr = s.getBoundingClientRect();
    const height = Math.max(s.scrollHeight, bottom > top ? (bottom - top) / scale : 0);
    const cut = [];
    for (const e of s.querySelectorAll('pre, mjx-container, table, img, .jp-OutputArea-output, .jp-RenderedMarkdown, .widget-box, .jupyter-widgets')) {
      const r = e.getBoundingClientRect();
      if (r.width === 0) continue;
      const over = (r.right - sr.right) / scale;
      const hidden = (e.scrollWidth - e.clientWidth);
      const style = getComputedStyle(e);
      const scrolls = hidden > 12 && (style.overflowX === 'auto' || style.overflowX === 'scroll' || style.overflowX === 'hidden');
      if (over > 2 || scrolls) {
        const t = (e.textContent || e.tagName).replace(/\\s+/g, ' ').trim().slice(0, 50);
        cut.push(`${e.tagName.toLowerCase()} ${over > 2 ? '+' + Math.round(over) + 'px' : Math.round(hidden) + 'px hidden'}: ${t}`);
      }
    }
    out.push({h: idx.h, v: idx.v || 0, heading: head ? head.textContent.replace('¶', '').trim().slice(0, 70) : '',
              height: Math.round(height), width: Math.round(s.scrollWidth), cut: cut.slice(0, 3),
              max_height: cfg.height, max_width: cfg.width,
              zoom: s.children.length ? parseFloat(s.children[0].style.zoom || '1') : 1});
  }
  Reveal.slide(0, 0);
  return out;
}"""


def _reveal_path(deck: Path) -> str:
    import re

    m = re.search(r'"([^"]*reveal\.js/dist/reveal\.js)"', deck.read_text(encoding="utf-8"))
    return m.group(1)


def measure_decks(decks: list[Path], timeout_s: float = 90) -> dict[str, list[dict]]:
    """``{deck name: [{h, v, heading, height, width, cut, max_height, max_width}, ...]}`` for every slide."""
    from playwright.sync_api import sync_playwright

    results = {}
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, viewport=VIEWPORT,
            timeout=timeout_s * 1000)
        try:
            for deck in decks:
                page = browser.new_page()
                page.set_default_timeout(timeout_s * 1000)
                page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:", "blob:"))
                           else r.abort())
                page.goto(deck.resolve().as_uri(), wait_until="load")
                # the deck loads reveal.js through require.js (AMD), so it is no global: ask require for it
                page.wait_for_function("() => window.require && document.querySelector('.reveal.ready')")
                page.evaluate("() => new Promise(ok => require(['" + _reveal_path(deck) + "'], R => { window.Reveal = R; ok(); }))")
                page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
                page.evaluate("() => MathJax.startup.promise")
                n_views = page.evaluate("() => document.querySelectorAll("
                                        "'script[type=\"application/vnd.jupyter.widget-view+json\"]').length")
                if n_views:  # the widget manager replaces each view's script with the rendered widget
                    page.wait_for_function("() => document.querySelectorAll('.jupyter-widgets').length > 0")
                page.evaluate("() => Reveal.configure({transition: 'none', backgroundTransition: 'none'})")
                page.wait_for_timeout(300)
                results[deck.name] = page.evaluate(_MEASURE)
                page.close()
        finally:
            browser.close()
    return results


def misfits(slides: list[dict], tolerance_px: int = 0) -> list[dict]:
    return [s for s in slides if s["height"] > s["max_height"] + tolerance_px
            or s["width"] > s["max_width"] + tolerance_px or s["cut"]]


def describe(deck: str, s: dict) -> str:
    why = []
    if s["height"] > s["max_height"]:
        why.append(f"height {s['height']} > {s['max_height']} ({s['height'] / s['max_height']:.2f}x)")
    if s["width"] > s["max_width"]:
        why.append(f"width {s['width']} > {s['max_width']}")
    why += [f"cut: {c}" for c in s["cut"]]
    return f"{deck} #/{s['h']}/{s['v']} «{s['heading']}»: " + "; ".join(why)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("decks", nargs="*", type=Path)
    ap.add_argument("--all", action="store_true", help="print every slide's height, not only the misfits")
    args = ap.parse_args(argv)
    decks = args.decks or sorted((ROOT / "build" / "slides").glob("*.slides.html"))
    results = measure_decks(decks)
    bad = 0
    for deck, slides in results.items():
        worst = max(slides, key=lambda s: s["height"])
        zoomed = [s["zoom"] for s in slides if s["zoom"] < 1]
        print(f"{deck}: {len(slides)} slides, {len(misfits(slides))} do not fit; tallest {worst['height']} px "
              f"of {worst['max_height']} («{worst['heading']}»); {len(zoomed)} shrunk to fit"
              + (f" (smallest zoom {min(zoomed):.2f})" if zoomed else ""))
        for s in slides if args.all else misfits(slides):
            print("  " + describe(deck, s) if s in misfits(slides)
                  else f"  #/{s['h']}/{s['v']} {s['height']} px, zoom {s['zoom']:.2f} «{s['heading'][:40]}»")
        bad += len(misfits(slides))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
