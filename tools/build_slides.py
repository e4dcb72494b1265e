"""Build reveal.js lecture slides from the chapter notebooks, executed, offline.

    python tools/build_slides.py                      # every chapter -> build/slides/NN_slug.slides.html
    python tools/build_slides.py chapters/01_batch_size.py    # one deck (the others built before stay)

Slide boundaries are the cells' ``slideshow`` metadata in ``chapters/*.py``
(``tools/mark_slides.py`` sets them by a rule; edit by hand in JupyterLab's
property inspector). Each chapter is read with Jupytext, executed (plots and
widget snapshots included) by ``tools/build_book.py``'s :func:`execute_all`
(the same order, parallelism, failure report and quiet output as the book: the
chapters that measure time run alone; executed notebooks and kernel logs go to
``build/.executed-slides``; every figure drawn for a projector: :func:`kernel_profile`),
and exported with ``jupyter nbconvert``'s SlidesExporter through ``book/slides/llmmath-reveal`` (nbconvert's reveal
template without its CDN URLs). reveal.js, jQuery, require.js, MathJax 3 and the
widget manager come from npm (``book/package-lock.json``) into
``build/slides/_assets``; the build fails if a slide deck names a CDN.
Open ``build/slides/index.html`` from disk; in a deck, ``s`` opens the speaker view.

Every slide is made to fit a 1280x720 screen: before the export,
``tools/paginate_slides.py`` cuts each executed notebook's slides to that size
(in memory: code hidden unless its cell is tagged ``slide-code``, long markdown
split at its paragraphs, sub-slides added where a slide would overflow, a heading
or lead-in kept with what it introduces); the template sets the slide to
1280x720, shows a figure as large as its slide allows (at least 60 % of its width,
and wide enough for its smallest text to be 18 px), wraps code, hides the
``In [n]:`` prompts, and shrinks what is still too wide or tall when a slide is
shown. ``tools/check_slides.py`` (and ``tests/test_slides.py``) measure every
built slide in Chromium.
``--export-only`` re-exports the notebooks executed by the last build (after a
change to the template or the pagination; nothing is executed).

Speaker notes: a chapter's ``book/lectures/NN_slug.toml`` (``tools/lectures.py``)
gives, for each of its slides, the minutes to spend, what to say and what to ask
the room. Each slide's notes go into its deck as a cell of ``slide_type: notes``
(in memory, after the first piece of the slide once paginated, and repeated,
marked "continued", on the sub-slides the pagination added), which the template
writes as reveal.js's ``<aside class="notes">``: ``s`` shows them in the speaker
view. The notes files are checked against the chapters before anything is
executed; a chapter without one gets a deck without notes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "slides"
EXECUTED = ROOT / "build" / ".executed-slides"
sys.path.insert(0, str(ROOT / "tools"))
import book_assets  # noqa: E402
import build_book  # noqa: E402
import lectures  # noqa: E402
import paginate_slides  # noqa: E402

A = "_assets"


def chapter_text(path: Path) -> str:
    """The chapter's text; without any slide boundaries, those of ``tools/mark_slides.py``'s rule (in memory)."""
    import jupytext

    text = path.read_text(encoding="utf-8")
    if not any("slideshow" in cell.metadata for cell in jupytext.reads(text, fmt="py:percent").cells):
        import mark_slides

        print(f"{path.name}: no slide metadata; using tools/mark_slides.py's rule", flush=True)
        text = mark_slides.mark(text)
    return text


def deck_notebook(nb, chapter: Path):
    """The (executed) notebook as its deck shows it: cut to slides that fit (:func:`paginate_slides.paginate`),
    with the chapter's speaker notes after the first piece of each slide (:func:`lectures.with_notes`)."""
    return lectures.with_notes(nb, chapter, paginate=paginate_slides.paginate)


def slides_exporter():
    """nbconvert's SlidesExporter, configured for the course's template (offline, 1280x720)."""
    from nbconvert import SlidesExporter
    from traitlets.config import Config

    c = Config()
    c.SlidesExporter.template_name = "llmmath-reveal"
    c.SlidesExporter.extra_template_basedirs = [str(ROOT / "book" / "slides")]
    c.SlidesExporter.reveal_url_prefix = f"{A}/reveal.js"
    c.SlidesExporter.reveal_scroll = False  # slides fit instead (the template's llmmathFit)
    c.SlidesExporter.reveal_width = str(paginate_slides.WIDTH)
    c.SlidesExporter.reveal_height = str(paginate_slides.HEIGHT)
    c.SlidesExporter.exclude_input_prompt = True
    c.SlidesExporter.exclude_output_prompt = True
    c.TagRemovePreprocessor.enabled = True
    c.TagRemovePreprocessor.remove_input_tags = {paginate_slides.OUTPUT_ONLY}  # code not shown: its output only
    c.SlidesExporter.reveal_theme = "white"  # its fonts ship with reveal.js ("simple" imports Google Fonts)
    c.SlidesExporter.reveal_number = "c/t"
    c.SlidesExporter.require_js_url = f"{A}/require.min.js"
    c.SlidesExporter.jquery_url = f"{A}/jquery.min.js"
    c.SlidesExporter.mathjax_url = f"{A}/mathjax/tex-mml-chtml.js"
    c.SlidesExporter.widget_renderer_url = f"{A}/html-manager/embed-amd.js"
    c.SlidesExporter.jupyter_widgets_base_url = f"{A}/"
    exporter = SlidesExporter(config=c)
    exporter.mermaid_js_url = exporter.mermaid_layout_elk_js_url = ""  # not config traits; unused
    return exporter


def export_html(nb, name: str) -> str:
    """A deck notebook (:func:`deck_notebook`) as its reveal.js HTML."""
    resources = {"mathjax_shim_url": f"{A}/mathjax2-shim.js", "metadata": {"name": name},
                 "llmmath_slides": paginate_slides.template_settings()}
    body, _ = slides_exporter().from_notebook_node(nb, resources=resources)
    return body


def export(executed: Path, out_dir: Path) -> tuple[Path, int]:
    """Write the executed notebook's reveal.js deck into ``out_dir``; return it and its number of slides.

    The notebook is first cut to slides that fit and given its speaker notes (:func:`deck_notebook`)."""
    import nbformat

    nb = deck_notebook(nbformat.read(str(executed), as_version=4), ROOT / "chapters" / f"{executed.stem}.py")
    body = export_html(nb, executed.stem)
    n_slides = sum(1 for cell in nb.cells if cell.metadata.get("slideshow", {}).get("slide_type") in ("slide", "subslide"))
    out = out_dir / f"{executed.stem}.slides.html"
    out.write_text(body, encoding="utf-8")
    return out, n_slides


def _report(out: Path, n: int) -> str:
    body = out.read_text(encoding="utf-8")
    n_later = body.count("<em>Continued: screen")  # lectures.CONTINUED: a later screen repeats its slide's notes
    n_notes = body.count('<aside class="notes">') - n_later
    return (f"{out.relative_to(ROOT)}: {n} slides and sub-slides; speaker notes for {n_notes} slides "
            f"(repeated on {n_later} later screens)")


def kernel_profile(ipython_dir: Path) -> Path:
    """An IPython directory whose startup file draws every figure for a slide; return it.

    The kernels that execute the chapters for the slides start with it (``IPYTHONDIR``): each
    figure they show is drawn larger beside its text where its layout allows, at more pixels,
    and says how small its smallest text is (:func:`paginate_slides.draw_figures_for_slides`).
    The book's figures are not changed."""
    startup = ipython_dir / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-llmmath-slides.py").write_text(
        "# written by tools/build_slides.py (kernel_profile): figures drawn for slides\n"
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tools')!r})\n"
        "import paginate_slides\npaginate_slides.draw_figures_for_slides()\n", encoding="utf-8")
    return ipython_dir


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
                     "<kbd>s</kbd> opens the speaker view, with the speaker notes (minutes, what to say, "
                     "what to ask the room); <kbd>Esc</kbd> the overview.</p><ul>"
                     + "".join(items) + "</ul></body></html>\n", encoding="utf-8")
    return index


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chapters", nargs="*", type=Path, help="chapter notebooks (default: all of chapters/)")
    ap.add_argument("-j", "--jobs", type=int, default=build_book.default_jobs(),
                    help="chapters that do not measure time executed at once (default: CPU cores - 1, at least 1); "
                         "those that measure time always run alone")
    ap.add_argument("-v", "--verbose", action="store_true", help="show everything the kernels print")
    ap.add_argument("--export-only", action="store_true",
                    help="re-export the notebooks the last build executed (build/.executed-slides); execute nothing")
    args = ap.parse_args(argv)
    srcs = [p.resolve() for p in args.chapters] or sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
    t0 = time.perf_counter()
    try:  # the speaker notes match their chapters' slides, before anything is executed
        for p in srcs:
            lectures.deck_notes(p)
    except lectures.NotesError as e:
        print(f"{e}\nno slides were written (python tools/lectures.py checks the notes)", file=sys.stderr)
        return 1
    if args.export_only:
        executed = [EXECUTED / "chapters" / (p.stem + ".ipynb") for p in srcs]
        missing = [str(e) for e in executed if not e.is_file()]
        if missing:
            print("not executed yet (run without --export-only):\n  " + "\n  ".join(missing), file=sys.stderr)
            return 1
        decks = []
        for e in executed:
            out, n = export(e, OUT)
            decks.append(out)
            print(_report(out, n))
        write_index(sorted(OUT.glob("*.slides.html")))
        return 0
    if args.chapters:  # only these chapters: the other decks stay
        for p in srcs:
            for old in (OUT / f"{p.stem}.slides.html", EXECUTED / "chapters" / f"{p.stem}.ipynb"):
                old.unlink(missing_ok=True)
    else:
        for d in (OUT, EXECUTED):
            if d.exists():
                shutil.rmtree(d)
    assets = book_assets.vendor(OUT / A, reveal=True)
    shutil.copy2(ROOT / "book" / "_static" / "mathjax2-shim.js", assets / "mathjax2-shim.js")
    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # the kernels inherit these
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    os.environ["IPYTHONDIR"] = str(kernel_profile(EXECUTED / "ipython"))
    jobs = build_book.plan(srcs, EXECUTED, texts={p: chapter_text(p) for p in srcs})
    results = build_book.execute_all(jobs, n_jobs=args.jobs, verbose=args.verbose)
    failed = [r for r in results if not r.ok]
    if failed:
        print(f"\n{len(failed)} of {len(results)} chapters failed; no slides were written:", file=sys.stderr)
        for r in failed:
            print(build_book.format_failure(r), file=sys.stderr)
        return 1
    decks = []
    for r in sorted(results, key=lambda r: Path(r.src).name):
        out, n = export(Path(r.dest), OUT)
        decks.append(out)
        print(_report(out, n))
    index = write_index(sorted(OUT.glob("*.slides.html")))
    cdn = book_assets.cdn_references(OUT)
    if cdn:
        print("the slides name a CDN (they must work offline):\n  " + "\n  ".join(cdn), file=sys.stderr)
        return 1
    print(f"slides built in {time.perf_counter() - t0:.0f} s, no CDN references: {index}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
