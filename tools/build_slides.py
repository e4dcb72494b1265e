"""Build reveal.js lecture slides from the chapter notebooks, executed, offline.

    python tools/build_slides.py                      # every chapter -> build/slides/NN_slug.slides.html
    python tools/build_slides.py chapters/01_batch_size.py

Slide boundaries are the cells' ``slideshow`` metadata in ``chapters/*.py``
(``tools/mark_slides.py`` sets them by a rule; edit by hand in JupyterLab's
property inspector). Each chapter is read with Jupytext, executed (plots and
widget snapshots included), and exported with ``jupyter nbconvert``'s
SlidesExporter through ``book/slides/llmmath-reveal`` (nbconvert's reveal
template without its CDN URLs). reveal.js, jQuery, require.js, MathJax 3 and the
widget manager come from npm (``book/package-lock.json``) into
``build/slides/_assets``; the build fails if a slide deck names a CDN.
Open ``build/slides/index.html`` from disk; in a deck, ``s`` opens the speaker view.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "slides"
sys.path.insert(0, str(ROOT / "tools"))
import book_assets  # noqa: E402

A = "_assets"


def build_one(src: str, out_dir: str, timeout_s: int = 600) -> tuple[str, float, int]:
    import jupytext
    from nbclient import NotebookClient
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    t0 = time.perf_counter()
    path = Path(src)
    nb = jupytext.read(path)
    if not any("slideshow" in cell.metadata for cell in nb.cells):
        import mark_slides  # no boundaries marked yet: apply the default rule, in memory only

        print(f"{path.name}: no slide metadata; using tools/mark_slides.py's rule", flush=True)
        nb = jupytext.reads(mark_slides.mark(path.read_text(encoding="utf-8")), fmt="py:percent")
    NotebookClient(nb, timeout=timeout_s, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    c = Config()
    c.SlidesExporter.template_name = "llmmath-reveal"
    c.SlidesExporter.extra_template_basedirs = [str(ROOT / "book" / "slides")]
    c.SlidesExporter.reveal_url_prefix = f"{A}/reveal.js"
    c.SlidesExporter.reveal_scroll = True
    c.SlidesExporter.reveal_theme = "white"  # its fonts ship with reveal.js ("simple" imports Google Fonts)
    c.SlidesExporter.reveal_number = "c/t"
    c.SlidesExporter.require_js_url = f"{A}/require.min.js"
    c.SlidesExporter.jquery_url = f"{A}/jquery.min.js"
    c.SlidesExporter.mathjax_url = f"{A}/mathjax/tex-mml-chtml.js"
    c.SlidesExporter.widget_renderer_url = f"{A}/html-manager/embed-amd.js"
    c.SlidesExporter.jupyter_widgets_base_url = f"{A}/"
    exporter = SlidesExporter(config=c)
    exporter.mermaid_js_url = exporter.mermaid_layout_elk_js_url = ""  # not config traits; unused
    body, _ = exporter.from_notebook_node(nb, resources={"mathjax_shim_url": f"{A}/mathjax2-shim.js",
                                                         "metadata": {"name": path.stem}})
    n_slides = sum(1 for cell in nb.cells if cell.metadata.get("slideshow", {}).get("slide_type") == "slide")
    out = Path(out_dir) / f"{path.stem}.slides.html"
    out.write_text(body, encoding="utf-8")
    return str(out), time.perf_counter() - t0, n_slides


def write_index(decks: list[Path]) -> Path:
    import jupytext

    items = []
    for d in decks:
        src = ROOT / "chapters" / d.name.replace(".slides.html", ".py")
        first = jupytext.read(src).cells[0].source.splitlines()[0].lstrip("# ").strip()
        items.append(f'<li><a href="{d.name}">{first}</a></li>')
    index = OUT / "index.html"
    index.write_text("<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'><title>llmmath slides</title>"
                     "<style>body{font-family:sans-serif;max-width:50em;margin:3em auto;line-height:1.6}</style>"
                     "</head><body><h1>llmmath — lecture slides</h1><p>One deck per chapter, executed when built. "
                     "Arrows move between slides (down: the figures and explorers under a slide); "
                     "<kbd>s</kbd> opens the speaker view; <kbd>Esc</kbd> the overview.</p><ul>"
                     + "".join(items) + "</ul></body></html>\n", encoding="utf-8")
    return index


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chapters", nargs="*", type=Path, help="chapter notebooks (default: all of chapters/)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, help="chapters executed at once")
    args = ap.parse_args(argv)
    srcs = [p.resolve() for p in args.chapters] or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
    t0 = time.perf_counter()
    if OUT.exists():
        shutil.rmtree(OUT)
    assets = book_assets.vendor(OUT / A, reveal=True)
    shutil.copy2(ROOT / "book" / "_static" / "mathjax2-shim.js", assets / "mathjax2-shim.js")
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    with ProcessPoolExecutor(max_workers=max(1, min(args.jobs, len(srcs)))) as pool:
        results = list(pool.map(build_one, map(str, srcs), [str(OUT)] * len(srcs)))
    for out, secs, n in results:
        print(f"{Path(out).relative_to(ROOT)}: {n} slides, {secs:.0f} s")
    index = write_index([Path(r[0]) for r in results])
    cdn = book_assets.cdn_references(OUT)
    if cdn:
        print("the slides name a CDN (they must work offline):\n  " + "\n  ".join(cdn), file=sys.stderr)
        return 1
    print(f"slides built in {time.perf_counter() - t0:.0f} s, no CDN references: {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
