"""The whole book as one PDF, for paper and tablets: ``build/llmmath.pdf``.

    python tools/build_pdf.py                # builds build/book first if it is missing
    python tools/build_pdf.py --book build/book --out build/llmmath.pdf

It prints the built HTML book (``tools/build_book.py``), so the PDF shows exactly
what the book shows: the executed chapters with their plots, math typeset by
MathJax, the widgets as their saved snapshot (a slider and its figure in the
state the notebook left them; nothing recomputes), the worked solutions and the
claims index. Each page of the book is opened in headless Chromium through
Playwright with the network cut off (only ``file:`` URLs load, as the book is
offline), and printed once MathJax has typeset every formula, the widget manager
has drawn every snapshot and every image has loaded; a print style sheet drops
the site's navigation, shrinks a wide printed table (down to 6.5 pt) and wraps long
code lines instead of cutting them, shrinks display equations wider than the page,
and keeps a figure on one page. Then ``pypdf`` joins the pages behind a title page with the
contents (each entry with its page number), stamps every page with its running
title and "page / pages", and adds the chapters to the PDF's outline (bookmarks).

Needs the ``book`` extra (Playwright, pypdf) and a Chromium (Debian's
``/usr/bin/chromium`` or ``LLMMATH_CHROMIUM``); no browser is downloaded. About a
minute for the ~25 pages of the book on 2 cores.
"""

from __future__ import annotations

import argparse
import html
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("LLMMATH_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
TITLE = "llmmath — the math of how large language models are trained and served"
PAGE = {"format": "A4", "margin": {"top": "16mm", "bottom": "18mm", "left": "14mm", "right": "14mm"}}
PAGE_MM = (210.0, 297.0)
PRINT_WIDTH_PX = round((210 - 28) / 25.4 * 96)  # the text width of an A4 page less its margins, in CSS px
PARTS = {"chapters": "Chapters", "solutions": "Worked solutions", "book": "Reference"}

# The print style: the article only, at the page's full width; code wrapped, not cut; a figure or a
# widget snapshot kept on one page; headings kept with what follows them.
PRINT_CSS = """
@page { size: A4; }
html, body { background: #fff !important; }
.bd-header, .bd-sidebar-primary, .bd-sidebar-secondary, .bd-footer, .bd-footer-article, .bd-footer-content,
.prev-next-area, .header-article, .bd-header-article, .bd-search, .skip-link, .primary-toggle, .secondary-toggle,
#pst-back-to-top, .headerlink, .toggle-button, .bd-sidebar, .sidebar-toggle, .search-button-field,
.article-header-buttons, .footer-article-items, .dropdown-download-buttons { display: none !important; }
.bd-container, .bd-container__inner, .bd-page-width, .bd-main, .bd-content, .bd-article-container, .bd-article {
  max-width: 100% !important; width: 100% !important; margin: 0 !important; padding: 0 !important; display: block !important;
}
body { font-size: 10.5pt; }
pre, pre code, .highlight pre, .output pre, .cell_output pre {
  white-space: pre-wrap !important; word-break: break-word !important; overflow: visible !important;
  max-height: none !important; font-size: 8.5pt !important;
}
.cell_output, .output, div.highlight, .cell_input { overflow: visible !important; max-height: none !important; }
img, svg, figure, .jupyter-widgets, .widget-subarea, .cell_output .output.image_png, table,
.cell_input, div.highlight, .cell_output .output { break-inside: avoid; }
img { max-width: 100% !important; height: auto !important; }
table { font-size: 9pt; }
h1, h2, h3, h4 { break-after: avoid; }
mjx-container[display="true"] { overflow: visible !important; max-width: 100% !important; }
a { color: inherit !important; text-decoration: none !important; }
"""

# Wait for MathJax (its startup promise resolves when the page is typeset) and for the widget manager
# to have drawn every widget view saved in the page; returns what the page holds.
SETTLE_JS = """async () => {
  const deadline = Date.now() + 60000;
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const hasMath = document.querySelector('.math') !== null;
  if (hasMath) {
    while (!(window.MathJax && MathJax.startup && MathJax.startup.promise) && Date.now() < deadline) await sleep(50);
    if (window.MathJax && MathJax.startup && MathJax.startup.promise) await MathJax.startup.promise;
  }
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').length;
  const drawn = () => document.querySelectorAll('.widget-subarea').length;
  while (drawn() < views && Date.now() < deadline) await sleep(100);
  const pending = () => [...document.images].filter(i => !i.complete);
  while (pending().length && Date.now() < deadline) await sleep(100);
  for (const m of document.querySelectorAll('mjx-container[display="true"]')) {
    const box = m.parentElement, w = m.scrollWidth, room = box.clientWidth;
    if (w > room && room > 0) m.style.fontSize = (100 * room / w * 0.97).toFixed(1) + '%';
  }
  // a wide printed table keeps its columns: its font shrinks to fit (down to 6.5 pt) before lines wrap
  for (const pre of document.querySelectorAll('.cell_output pre, .output pre')) {
    pre.style.setProperty('white-space', 'pre', 'important');
    const w = pre.scrollWidth, room = pre.clientWidth;
    if (w > room && room > 0) {
      const px = parseFloat(getComputedStyle(pre).fontSize);
      pre.style.setProperty('font-size', Math.max(8.7, px * room / w * 0.98).toFixed(2) + 'px', 'important');
    }
    pre.style.removeProperty('white-space');
  }
  const math = [...document.querySelectorAll('.math')];
  return {
    title: (document.querySelector('article h1, main h1, h1') || {}).textContent || document.title,
    math: math.length,
    math_untypeset: math.filter(m => !m.querySelector('mjx-container')).length,
    math_errors: document.querySelectorAll('mjx-merror').length,
    math_wide: [...document.querySelectorAll('mjx-container[display="true"]')]
               .filter(m => m.scrollWidth > m.parentElement.clientWidth + 1).length,
    code_wide: [...document.querySelectorAll('pre')].filter(p => p.scrollWidth > p.clientWidth + 1).length,
    widget_views: views, widgets_drawn: drawn(),
    images: document.images.length,
    images_broken: [...document.images].filter(i => !i.complete || i.naturalWidth === 0).length,
  };
}"""


def book_pages(book: Path) -> list[Path]:
    """The book's pages in reading order: its start page, then its table of contents (``book/index.html``)."""
    index = book / "book" / "index.html"
    text = index.read_text(encoding="utf-8")
    main = text[text.find('<main'):] if '<main' in text else text  # the page's own toctree, not the sidebar
    hrefs = re.findall(r'class="toctree-l1"><a class="reference internal" href="([^"#]+)', main)
    if not hrefs:
        hrefs = re.findall(r'class="toctree-l1"><a class="reference internal" href="([^"#]+)', text)
    pages, seen = [index], {index.resolve()}
    for h in hrefs:
        p = (index.parent / h).resolve()
        if p not in seen and p.is_file():
            seen.add(p)
            pages.append(p)
    return pages


def _part(page: Path, book: Path) -> str:
    rel = page.resolve().relative_to(book.resolve())
    if rel.as_posix() == "book/index.html":
        return "Introduction"
    return PARTS.get(rel.parts[0], "Reference") if len(rel.parts) > 1 else "Reference"


def _short(title: str) -> str:
    title = re.sub(r"\s+", " ", title.replace("#", "")).strip().rstrip("¶").strip()
    return title


def _contents_html(entries: list[tuple[str, str, int]], commit: str) -> str:
    rows, part = [], None
    for p, title, start in entries:
        if p != part:
            part = p
            rows.append(f'<tr class="part"><td colspan="2">{html.escape(p)}</td></tr>')
        rows.append(f'<tr><td>{html.escape(title)}</td><td class="n">{start}</td></tr>')
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
body {{ font-family: "DejaVu Sans", Arial, sans-serif; color: #222; }}
h1 {{ font-size: 24pt; margin: 30mm 0 4mm; line-height: 1.2; }}
.sub {{ color: #555; font-size: 10.5pt; margin-bottom: 12mm; line-height: 1.5; }}
h2 {{ font-size: 14pt; margin: 0 0 3mm; }}
table {{ width: 100%; border-collapse: collapse; font-size: 10.5pt; }}
td {{ padding: 1.2mm 0; border-bottom: 0.2mm dotted #bbb; }}
td.n {{ text-align: right; width: 18mm; }}
tr.part td {{ font-weight: bold; border: none; padding-top: 5mm; }}
</style></head><body>
<h1>{html.escape(TITLE)}</h1>
<div class="sub">An executable course: every claim of the interview as a derivation you can run.<br>
This is the printed book: every chapter executed when the book was built, its plots and measurements those of
the build machine; the sliders are snapshots (open the notebooks in JupyterLab to move them).<br>
Printed {date.today().isoformat()}{(" from commit " + html.escape(commit)) if commit else ""}.</div>
<h2>Contents</h2><table>{''.join(rows)}</table></body></html>"""


def _stamp_html(labels: list[tuple[str, str]]) -> str:
    """One page per label (left: running title, right: page / pages), at the foot of an A4 page."""
    w, h = PAGE_MM
    pages = "".join(
        f'<div class="p"><span class="l">{html.escape(left)}</span><span class="r">{html.escape(right)}</span></div>'
        for left, right in labels)
    return f"""<!doctype html><html><head><meta charset="utf-8"><style>
@page {{ size: {w}mm {h}mm; margin: 0; }}
html, body {{ margin: 0; padding: 0; }}
.p {{ position: relative; width: {w}mm; height: {h}mm; break-after: page; overflow: hidden;
      font-family: "DejaVu Sans", Arial, sans-serif; font-size: 8pt; color: #666; }}
.p:last-child {{ break-after: auto; }}
.l {{ position: absolute; left: 14mm; bottom: 8mm; max-width: 150mm; white-space: nowrap; overflow: hidden;
      text-overflow: ellipsis; }}
.r {{ position: absolute; right: 14mm; bottom: 8mm; }}
</style></head><body>{pages}</body></html>"""


def _git_commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    return r.stdout.strip() if r.returncode == 0 else ""


def build(book: Path, out: Path, *, verbose: bool = False) -> dict:
    from playwright.sync_api import sync_playwright
    from pypdf import PdfReader, PdfWriter

    pages = book_pages(book)
    blocked: list[str] = []
    problems: list[str] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        tmp = Path(tmp)
        ctx = p.chromium.launch_persistent_context(
            str(tmp / "profile"), executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": PRINT_WIDTH_PX, "height": 1200}, timeout=120_000)
        try:
            def route(r):
                if r.request.url.startswith(("file:", "data:", "blob:")):
                    r.continue_()
                else:  # the book is offline: anything else is a bug in the book
                    blocked.append(r.request.url)
                    r.abort()

            ctx.route("**/*", route)
            page = ctx.new_page()
            page.set_default_timeout(120_000)
            printed: list[tuple[Path, str, str, int]] = []  # (pdf, part, title, pages)
            for k, src in enumerate(pages, 1):
                page.goto(src.resolve().as_uri(), wait_until="load")
                page.add_style_tag(content=PRINT_CSS)
                page.emulate_media(media="print")
                info = page.evaluate(SETTLE_JS)
                page.wait_for_timeout(200)
                rel = src.relative_to(book)
                if info["math_untypeset"] or info["math_errors"]:
                    problems.append(f"{rel}: {info['math_untypeset']} formulas not typeset, {info['math_errors']} errors")
                if info["widgets_drawn"] < info["widget_views"]:
                    problems.append(f"{rel}: {info['widgets_drawn']} of {info['widget_views']} widget snapshots drawn")
                if info["math_wide"] or info["code_wide"]:
                    problems.append(f"{rel}: {info['math_wide']} equations and {info['code_wide']} code blocks "
                                    "wider than the page")
                if info["images_broken"]:
                    problems.append(f"{rel}: {info['images_broken']} of {info['images']} images did not load")
                pdf = tmp / f"{k:03d}.pdf"
                page.pdf(path=str(pdf), print_background=True, prefer_css_page_size=False, **PAGE)
                n = len(PdfReader(str(pdf)).pages)
                title = _short(info["title"])
                printed.append((pdf, _part(src, book), title, n))
                print(f"[{k:>2}/{len(pages)}] {str(rel):<42} {n:>3} pages, {info['math']:>4} formulas, "
                      f"{info['images']:>3} images, {info['widgets_drawn']}/{info['widget_views']} widgets", flush=True)

            # the title page with the contents: its length fixes where everything else starts
            commit = _git_commit()
            front_pages = 1
            for _ in range(3):
                start, entries = front_pages + 1, []
                for _pdf, part, title, n in printed:
                    entries.append((part, title, start))
                    start += n
                page.set_content(_contents_html(entries, commit), wait_until="load")
                front = tmp / "front.pdf"
                page.pdf(path=str(front), print_background=True, **PAGE)
                n_front = len(PdfReader(str(front)).pages)
                if n_front == front_pages:
                    break
                front_pages = n_front
            total = front_pages + sum(n for *_, n in printed)

            labels = [("", "")] * front_pages
            for _pdf, _part_name, title, n in printed:
                labels += [(title, "")] * n
            labels = [(left, f"{i} / {total}" if i > front_pages else "") for i, (left, _) in enumerate(labels, 1)]
            page.set_content(_stamp_html(labels), wait_until="load")
            stamps = tmp / "stamps.pdf"
            page.pdf(path=str(stamps), width=f"{PAGE_MM[0]}mm", height=f"{PAGE_MM[1]}mm",
                     margin={"top": "0", "bottom": "0", "left": "0", "right": "0"}, prefer_css_page_size=True)
        finally:
            ctx.close()

        writer = PdfWriter()
        writer.append(str(front))
        parents: dict[str, object] = {}
        at = front_pages
        for pdf, part, title, n in printed:
            writer.append(str(pdf))
            if part not in parents:
                parents[part] = writer.add_outline_item(title=part, page_number=at)
            writer.add_outline_item(title=title, page_number=at, parent=parents[part])
            at += n
        stamp_pages = PdfReader(str(stamps)).pages
        if len(stamp_pages) != len(writer.pages):
            raise RuntimeError(f"{len(stamp_pages)} page-number stamps for {len(writer.pages)} pages")
        for pg, st in zip(writer.pages, stamp_pages):
            pg.merge_page(st, over=True)
        writer.add_metadata({"/Title": TITLE, "/Creator": "tools/build_pdf.py (Chromium, pypdf)"})
        writer.page_mode = "/UseOutlines"
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "wb") as f:
            writer.write(f)
    return {"pages": total, "book_pages": len(pages), "seconds": time.perf_counter() - t0,
            "blocked": blocked, "problems": problems}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--book", type=Path, default=ROOT / "build" / "book", help="the built book (default build/book)")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "llmmath.pdf", help="default build/llmmath.pdf")
    args = ap.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"no Chromium at {CHROMIUM} (apt-get install chromium, or set LLMMATH_CHROMIUM)", file=sys.stderr)
        return 2
    book = args.book.resolve()
    if not (book / "book" / "index.html").is_file():
        print(f"{book} has no built book: running tools/build_book.py first", flush=True)
        cmd = [sys.executable, str(ROOT / "tools" / "build_book.py")]
        if args.book.resolve() != (ROOT / "build" / "book").resolve():
            cmd += ["--out", str(book)]
        rc = subprocess.run(cmd, cwd=ROOT).returncode
        if rc:
            print("the book did not build; no PDF", file=sys.stderr)
            return rc
    r = build(book, args.out.resolve())
    if r["blocked"]:
        print("the book asked for something beyond its own files (it must work offline):\n  "
              + "\n  ".join(r["blocked"][:10]), file=sys.stderr)
        return 1
    if r["problems"]:
        print("printed, but:\n  " + "\n  ".join(r["problems"]), file=sys.stderr)
        return 1
    print(f"{args.out}: {r['pages']} pages from {r['book_pages']} pages of the book in {r['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
