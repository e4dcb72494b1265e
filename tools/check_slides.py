"""Measure every slide of built reveal.js decks in headless Chromium at a projector's 1280x720.

    python tools/check_slides.py                      # every deck in build/slides/
    python tools/check_slides.py build/slides/01_batch_size.slides.html
    python tools/check_slides.py --shots build/slide-shots   # and a screenshot of every slide

Each deck is opened offline (every request that is not a local file is
aborted), MathJax and the widget snapshots are left to render, and every slide
and sub-slide is shown in turn with reveal.js's API (``Reveal.getSlides()``,
``Reveal.slide(h, v)``). A slide *fits* when its content, in reveal.js's own
coordinates (which it scales to the window), is no taller than the deck's
configured height and no wider than its width, and nothing inside it (a code
line, an equation, a table, an image) runs past its right edge or hides more than
12 px of itself behind a scroll bar (MathJax's hidden assistive MathML overhangs
a paragraph by a few pixels). A slide *reads from afar* (a projector at
1280x720, where a slide's pixel is the screen's) when no text in it is under
18 px, each figure is at least 60 % of the slide's width and its smallest text
(as recorded when the slides' kernel drew it, else the least the course's
figure style allows) is 18 px as shown, it shows no code from a cell not tagged
``slide-code``, and it does not end on a heading or a lead-in sentence (one
ending with a colon). Prints one line per slide that fails, with its number as
reveal.js shows it, its first heading and what it fails. Exit 1 if any.
Needs Playwright and Chromium, as ``tools/check_site.py``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import paginate_slides as pg  # noqa: E402
from check_site import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

VIEWPORT = {"width": 1280, "height": 720}

_MEASURE = """() => {
  const cfg = Reveal.getConfig();
  const out = [];
  for (const [n, s] of Reveal.getSlides().entries()) {
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
    const shown = e => { const r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
    const words = e => e.textContent.replace('¶', '').replace(/\\s+/g, ' ').trim();
    // what the slide ends on: the last block of its last cell shown
    let ends = null;
    const cells = Array.from(s.querySelectorAll('.jp-Cell')).filter(shown);
    const last = cells[cells.length - 1];
    if (last && last.classList.contains('jp-MarkdownCell')) {
      const md = last.querySelector('.jp-RenderedMarkdown') || last;
      const blocks = Array.from(md.children).filter(e => shown(e) && words(e));
      const b = blocks[blocks.length - 1];
      if (b && /^H[1-6]$/.test(b.tagName)) ends = 'a heading: ' + words(b).slice(0, 60);
      else if (b && b.tagName === 'P' && /:[*_]*$/.test(words(b))) ends = 'a lead-in: ' + words(b).slice(-60);
    }
    // the smallest text: every element with text of its own (math: its container; figures apart)
    const cellZoom = e => { const c = Array.from(s.children).find(c => c.contains(e)); return c ? parseFloat(c.style.zoom || '1') : 1; };
    let small = null;
    for (const e of s.querySelectorAll('*')) {
      const tag = e.tagName.toLowerCase();
      if (tag.startsWith('mjx-') && tag !== 'mjx-container') continue;
      if (tag !== 'mjx-container' && (e.closest('mjx-container') || tag === 'script' || tag === 'style')) continue;
      const own = tag === 'mjx-container' ? words(e) : Array.from(e.childNodes)
        .filter(n => n.nodeType === 3).map(n => n.textContent).join('').trim();
      if (!own || !shown(e)) continue;
      const px = parseFloat(getComputedStyle(e).fontSize) * cellZoom(e);
      if (!small || px < small.px) small = {px: Math.round(px * 10) / 10, text: own.replace(/\\s+/g, ' ').slice(0, 40)};
    }
    const figures = Array.from(s.querySelectorAll('.jp-OutputArea-output img')).filter(shown).map(img =>
      ({shown_width: Math.round(img.getBoundingClientRect().width / scale), image_width: img.naturalWidth,
        smallest_text: window.llmmathRecordedText(img)}));
    const code = Array.from(s.querySelectorAll('.jp-CodeCell:not(.celltag_slide-code) .jp-InputArea')).filter(shown)
      .map(e => words(e).slice(0, 40));
    out.push({n: n + 1, h: idx.h, v: idx.v || 0, heading: head ? head.textContent.replace('¶', '').trim().slice(0, 70) : '',
              height: Math.round(height), width: Math.round(s.scrollWidth), cut: cut.slice(0, 3),
              max_height: cfg.height, max_width: cfg.width, ends_on: ends, smallest_text: small, figures: figures, code: code,
              zoom: s.children.length ? parseFloat(s.children[0].style.zoom || '1') : 1});
  }
  Reveal.slide(0, 0);
  return out;
}"""


def _reveal_path(deck: Path) -> str:
    import re

    m = re.search(r'"([^"]*reveal\.js/dist/reveal\.js)"', deck.read_text(encoding="utf-8"))
    return m.group(1)


def measure_decks(decks: list[Path], timeout_s: float = 90, shots: Path | None = None) -> dict[str, list[dict]]:
    """``{deck name: [{n, h, v, heading, height, width, cut, max_height, max_width, ends_on, smallest_text,
    figures, code, zoom}, ...]}`` for every slide (``n``: its number as reveal.js shows it).

    With ``shots``, also a screenshot of every slide as reveal.js numbers it (``c/t``),
    ``shots/<deck>/NN.png`` (NN from 01)."""
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
                if shots is not None:
                    folder = shots / deck.name.removesuffix(".slides.html")
                    folder.mkdir(parents=True, exist_ok=True)
                    for n, sl in enumerate(results[deck.name], 1):
                        page.evaluate(f"() => Reveal.slide({sl['h']}, {sl['v']})")
                        page.wait_for_timeout(150)
                        page.screenshot(path=str(folder / f"{n:02d}.png"))
                page.close()
        finally:
            browser.close()
    return results


def overflows(s: dict) -> list[str]:
    """What does not fit the slide: its height, its width, what is cut at its right edge."""
    why = []
    if s["height"] > s["max_height"]:
        why.append(f"height {s['height']} > {s['max_height']} ({s['height'] / s['max_height']:.2f}x)")
    if s["width"] > s["max_width"]:
        why.append(f"width {s['width']} > {s['max_width']}")
    return why + [f"cut: {c}" for c in s["cut"]]


def unreadable(s: dict) -> list[str]:
    """What a projected slide fails, besides its figures' text: text under ``MIN_TEXT_PX``, a
    figure under ``MIN_FIGURE_FRACTION`` of the slide's width, code shown from a cell not tagged
    ``slide-code``, a slide that ends on a heading or a lead-in (a paragraph ending with a colon)."""
    why = []
    small = s["smallest_text"]
    if small and small["px"] < pg.MIN_TEXT_PX - 0.25:
        why.append(f"text of {small['px']:g} px < {pg.MIN_TEXT_PX}: «{small['text']}»")
    for i, f in enumerate(s["figures"], 1):
        if f["shown_width"] < pg.MIN_FIGURE_FRACTION * s["max_width"] - 0.5:
            why.append(f"figure {i} {f['shown_width']} px wide < {pg.MIN_FIGURE_FRACTION:.0%} of {s['max_width']}")
    why += [f"shows code not tagged {pg.SLIDE_CODE}: «{c}»" for c in s["code"]]
    if s["ends_on"]:
        why.append(f"ends on {s['ends_on']}")
    return why


def small_figure_text(s: dict) -> list[str]:
    """A figure whose smallest text is under ``MIN_TEXT_PX`` as shown (from what it recorded when
    drawn, else from the course's least font: :func:`paginate_slides.figure_text_px`)."""
    why = []
    for i, f in enumerate(s["figures"], 1):
        text = pg.figure_text_px(f["image_width"], f["shown_width"], f["smallest_text"])
        if text < pg.MIN_TEXT_PX - 0.25:
            why.append(f"figure {i}'s text as small as {text:.1f} px < {pg.MIN_TEXT_PX} (shown {f['shown_width']} px "
                       f"wide of its {f['image_width']}; {'recorded' if f['smallest_text'] else 'not redrawn for slides'})")
    return why


def problems(s: dict) -> list[str]:
    return overflows(s) + unreadable(s) + small_figure_text(s)


def misfits(slides: list[dict]) -> list[dict]:
    """The slides that do not fit or cannot be read from afar."""
    return [s for s in slides if problems(s)]


def describe(deck: str, s: dict, why=problems) -> str:
    return f"{deck} slide {s['n']} (#/{s['h']}/{s['v']}) «{s['heading']}»: " + "; ".join(why(s))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("decks", nargs="*", type=Path)
    ap.add_argument("--all", action="store_true", help="print every slide's height, not only the misfits")
    ap.add_argument("--shots", type=Path, metavar="DIR",
                    help="also save a screenshot of every slide, DIR/<deck>/NN.png (NN: the slide's number)")
    args = ap.parse_args(argv)
    decks = args.decks or sorted((ROOT / "build" / "slides").glob("*.slides.html"))
    results = measure_decks(decks, shots=args.shots)
    bad = 0
    for deck, slides in results.items():
        worst = max(slides, key=lambda s: s["height"])
        zoomed = [s["zoom"] for s in slides if s["zoom"] < 1]
        print(f"{deck}: {len(slides)} slides, {len(misfits(slides))} do not fit or read badly; tallest "
              f"{worst['height']} px of {worst['max_height']} («{worst['heading']}»); {len(zoomed)} shrunk to fit"
              + (f" (smallest zoom {min(zoomed):.2f})" if zoomed else ""))
        for s in slides:
            if problems(s):
                print("  " + describe(deck, s))
            elif args.all:
                print(f"  slide {s['n']} (#/{s['h']}/{s['v']}) {s['height']} px, zoom {s['zoom']:.2f}, smallest text "
                      f"{s['smallest_text']['px'] if s['smallest_text'] else '-'} px «{s['heading'][:40]}»")
        bad += len(misfits(slides))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
