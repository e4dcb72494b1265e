"""Lecture slides that fit a 1280x720 screen (issue 15) and can be projected (issue 26).

The pagination and what a slide shows (``tools/paginate_slides.py``: code hidden
unless tagged ``slide-code``, no slide ending on a heading or a lead-in, figures
shown large enough for 18 px text) and the rules ``tools/check_slides.py``
applies are checked on small hand-written inputs, without a build. The
``test_every_built_slide_*`` tests measure the decks in ``build/slides/``
(``python tools/build_slides.py``) in headless Chromium with
``tools/check_slides.py``: every slide and sub-slide is shown with reveal.js's
API and must be no taller and no wider than the slide, with nothing cut at its
right edge, no text under 18 px, every figure at least 60 % of the slide's
width, and no slide ending on a heading or a lead-in. They skip, saying why,
where nothing is built or there is no Chromium or Playwright (the ``test`` extra
installs Playwright; it downloads no browser).
"""

from __future__ import annotations

import base64
import os
import struct
import sys
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import paginate_slides as pg  # noqa: E402

nbformat = pytest.importorskip("nbformat")


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def _md(text, kind=None):
    c = nbformat.v4.new_markdown_cell(text)
    if kind:
        c.metadata["slideshow"] = {"slide_type": kind}
    return c


def _png(width: int, height: int) -> str:
    raw = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + struct.pack(">II", width, height) + b"\x08\x02\0\0\0"
    return base64.b64encode(raw + struct.pack(">I", zlib.crc32(raw[12:]))).decode()


def _kinds(nb):
    return [c.metadata.get("slideshow", {}).get("slide_type") for c in nb.cells]


def test_a_short_slide_is_left_alone():
    nb = _nb(_md("## Claim 1\n\nOne paragraph.", "slide"), _md("Another paragraph, $x = 1$."))
    assert _kinds(pg.paginate(nb)) == ["slide", None]


def test_a_long_markdown_cell_is_split_at_its_paragraphs_never_inside_an_equation():
    eq = "$$\nt = \\frac{a}{b}\n\n\\qquad u = v\n$$"
    paras = [f"Paragraph {i}: " + "words " * 60 for i in range(12)]
    text = "## A long derivation\n\n" + "\n\n".join(paras[:6] + [eq] + paras[6:])
    nb = pg.paginate(_nb(_md(text, "slide")))
    assert len(nb.cells) >= 3
    assert _kinds(nb)[0] == "slide" and set(_kinds(nb)[1:]) == {"subslide"}
    assert sum(c.source.count("$$") for c in nb.cells) == 2 and any(eq in c.source for c in nb.cells)
    assert "\n\n".join(c.source for c in nb.cells) == text
    assert all(pg.cell_height(c) <= pg.BUDGET for c in nb.cells)


def test_a_figure_that_would_overflow_starts_a_sub_slide_and_a_tall_cell_shows_its_output_apart():
    fig = nbformat.v4.new_code_cell("plot()", outputs=[nbformat.v4.new_output(
        "display_data", data={"image/png": _png(880, 320), "text/plain": "<Figure>"})])
    text = "## Claim 2\n\n" + "\n\n".join("A paragraph of prose " * 10 for _ in range(3))
    nb = pg.paginate(_nb(_md(text, "slide"), fig))
    assert _kinds(nb) == ["slide", "subslide"]
    printed = "\n".join(f"row {i:3d} " + "x" * 60 for i in range(18))
    tall = nbformat.v4.new_code_cell("\n".join(f"line_{i} = {i}" for i in range(14)),
                                     outputs=[nbformat.v4.new_output("stream", name="stdout", text=printed)])
    tall.metadata["tags"] = [pg.SLIDE_CODE]  # its code is shown
    nb = pg.paginate(_nb(_md("## Claim 3", "slide"), tall))
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code"]
    src, out = nb.cells[1:]
    assert not src.outputs and out.outputs and not out.source and "slides-output-only" in out.metadata["tags"]
    assert _kinds(nb)[2] == "subslide"


def _code(source, *outputs, kind=None, tags=()):
    c = nbformat.v4.new_code_cell(source, outputs=list(outputs))
    if kind:
        c.metadata["slideshow"] = {"slide_type": kind}
    if tags:
        c.metadata["tags"] = list(tags)
    return c


def _printed(text):
    return nbformat.v4.new_output("stream", name="stdout", text=text)


def _shown(nb):
    """Each slide as the list of what it shows: a cell's markdown, or 'code' / 'output' / 'code+output'."""
    slides = []
    for c in nb.cells:
        if _kinds(nb)[nb.cells.index(c)] in ("slide", "subslide") or not slides:
            slides.append([])
        if c.cell_type == "markdown":
            slides[-1].append(c.source)
        else:
            hidden = pg.OUTPUT_ONLY in c.metadata.get("tags", [])
            slides[-1].append("+".join((["code"] if c.source and not hidden else []) + (["output"] if c.outputs else [])))
    return slides


def test_code_is_hidden_on_slides_unless_tagged_as_the_point_of_the_slide():
    nb = _nb(_md("## Claim 5", "slide"),
             _code("import numpy as np"),  # nothing to show: left out
             _code("x = 2\nprint(x)", _printed("2\n")),  # its output only
             _code("assert x == 2", kind="subslide"),  # left out; the sub-slide starts at the next cell instead
             _md("The kernel itself, line by line:"),
             _code("def kernel(a):\n    return a @ a", tags=[pg.SLIDE_CODE]))  # the point of the slide
    out = pg.paginate(nb)
    assert _shown(out) == [["## Claim 5", "output"], ["The kernel itself, line by line:", "code"]]
    shown_output = out.cells[1]
    assert shown_output.outputs and not shown_output.source and pg.OUTPUT_ONLY in shown_output.metadata["tags"]
    assert out.cells[3].source == "def kernel(a):\n    return a @ a"
    assert nb.cells[2].source == "x = 2\nprint(x)"  # the notebook given is not changed


def test_a_heading_at_the_end_of_a_slide_moves_to_the_next_with_what_it_introduces():
    # chapter 11: a plan's heading ended one sub-slide, its table started the next
    md = _md("At 8k context an 8B model on one H100 never becomes compute-bound. " * 3
             + "\n\n### Plan 2 — a 70B on eight GPUs", "subslide")
    table = _code("print(p2.table())", _printed("\n".join(f"row {i}" for i in range(8))), kind="subslide")
    out = pg.paginate(_nb(md, table))
    assert _shown(out) == [[md.source.split("\n\n")[0]], ["### Plan 2 — a 70B on eight GPUs", "output"]]


def test_a_lead_in_sentence_never_ends_a_slide():
    # chapter 1: "The library evaluates this for whole sweeps at once:" ended a slide, its table on the next
    prose = "\n\n".join(f"Paragraph {i}: " + "words " * 60 for i in range(5))
    text = "## The model\n\n" + prose + "\n\nThe library evaluates this for whole sweeps at once:"
    table = _code("print(table)", _printed("\n".join(f"{i:>5} {i * 2:>10}" for i in range(6))))
    out = pg.paginate(_nb(_md(text, "slide"), table))
    slides = _shown(out)
    assert len(slides) == 2 and slides[-1][-1] == "output" and slides[-1][-2].endswith("\n\n" + text.split("\n\n")[-1])
    assert not any(pg.is_lead_in(pg.md_blocks(sl[-1])[-1]) for sl in slides[:-1])
    assert "\n\n".join(x for sl in slides for x in sl if x != "output") == text
    # a heading and its lead-in go on together; a cell that is all lead-in moves whole
    lead = _md("### Picture\n\n**Picture.** Cost per token against batch:")
    fig = _code("plot()", nbformat.v4.new_output("display_data", data={"image/png": _png(688, 300)}), kind="subslide")
    out = pg.paginate(_nb(_md("## Claim 1\n\nOne paragraph.", "slide"), lead, fig))
    assert _shown(out) == [["## Claim 1\n\nOne paragraph."], [lead.source, "output"]]
    # a slide that is nothing but a heading takes what follows instead of standing alone
    out = pg.paginate(_nb(_md("### Plan 3", "subslide"), fig))
    assert _shown(out) == [["### Plan 3", "output"]]


def test_a_lead_in_does_not_move_onto_a_new_section():
    out = pg.paginate(_nb(_md("## Claim 1\n\nThe check:", "slide"), _md("## Claim 2\n\nText.", "slide")))
    assert _shown(out) == [["## Claim 1\n\nThe check:"], ["## Claim 2\n\nText."]]


def test_outputs_too_tall_for_one_slide_are_shown_on_several():
    # chapter 8: a long printed list; chapter 8: progress lines, a table and a figure from one cell
    listing = "".join(f"- study {i}: " + "word " * 50 + "\n    " + "more " * 40 + "\n\n" for i in range(8))
    figure = nbformat.v4.new_output("display_data", data={"image/png": _png(1376, 600)})
    cell = _code("report()", _printed("progress ...\n" * 3), _printed(listing), figure)
    out = pg.paginate(_nb(_md("### What the studies report", "slide"), cell))
    assert len(out.cells) >= 4 and all(pg.cell_height(c) <= pg.BUDGET for c in out.cells)
    assert "".join(o.text for c in out.cells for o in c.get("outputs", []) if o.output_type == "stream") \
        == "progress ...\n" * 3 + listing
    pieces = [o.text for c in out.cells for o in c.get("outputs", []) if o.output_type == "stream"][1:]
    assert all(p.startswith("- study") for p in pieces)  # cut between its items
    assert out.cells[-1].outputs == [figure] and _kinds(out)[-1] == "subslide"


def test_a_long_cell_is_never_cut_after_a_heading_or_a_lead_in():
    paras = [f"Paragraph {i}: " + "words " * 60 for i in range(7)]
    text = "\n\n".join(paras[:5] + ["### Numbers", "Two models on four chips, each on the fewest chips that hold it:"]
                       + paras[5:])
    pieces = [c.source for c in pg.split_cells([_md(text, "slide")])]
    assert len(pieces) >= 2 and "\n\n".join(pieces) == text
    assert not any(pg.is_lead_in(pg.md_blocks(p)[-1]) for p in pieces)


def test_is_lead_in():
    assert pg.is_lead_in("### Plan 2 — a 70B on eight GPUs") and pg.is_lead_in("The library does this:")
    assert pg.is_lead_in("**Numbers:**") and pg.is_lead_in("Two lines\nof lead-in:")
    assert not pg.is_lead_in("A sentence.") and not pg.is_lead_in("| a: | b: |")
    assert not pg.is_lead_in("$$x:$$") and not pg.is_lead_in("Ratio 3:1 holds.")


def test_a_figure_is_shown_at_least_60_percent_wide_with_18_px_text():
    book = pg.plots.BOOK_WIDTH_PX
    for width, recorded in ((300, None), (book, None), (2 * book, None), (2 * book, 20.0), (2 * book, 40.0)):
        shown = pg.figure_min_width(width, recorded)
        assert pg.MIN_FIGURE_FRACTION * pg.WIDTH <= shown <= pg.CONTENT_WIDTH
        assert pg.figure_text_px(width, shown, recorded) >= pg.MIN_TEXT_PX - 1e-9 or shown == pg.CONTENT_WIDTH
    # a figure of the book's width and style, shown at its own size, has text far under 18 px
    assert pg.figure_text_px(book, book) < pg.MIN_TEXT_PX * 0.6
    # a figure drawn for the slides says its smallest text; the pagination leaves room for it that large
    fig = _code("plot()", nbformat.v4.new_output("display_data", data={"image/png": _png(2 * book, book)},
                                                 metadata={pg.SMALLEST_TEXT: 24.0}))
    shown = pg.figure_min_width(2 * book, 24.0)
    assert shown == pytest.approx(2 * book * pg.MIN_TEXT_PX / 24.0)
    assert pg.cell_height(pg.hide_code([fig])[0]) >= shown / 2


def test_the_slides_kernels_draw_figures_larger_where_their_layout_holds(tmp_path):
    import subprocess

    import build_slides

    startup = build_slides.kernel_profile(tmp_path) / "profile_default" / "startup" / "00-llmmath-slides.py"
    code = startup.read_text() + """
import matplotlib
matplotlib.use("Agg")
from llmmath import plots
from matplotlib_inline import backend_inline
fig, ax = plots.new_axes(width=6, height=3.5)
ax.plot([1, 2, 3], [1, 4, 9]); ax.set_xlabel("x"); ax.set_ylabel("y")
crowded, cax = plots.new_axes(width=4, height=2.5)
cax.set_xlabel("an axis label that this narrow figure just holds")
bars, bax = plots.new_axes(width=5, height=3)
bax.bar(["hgx-h100", "gb200-nvl72", "vr200-nvl144", "rubin-ultra-nvl576"], [1, 2, 3, 4])
for f in (fig, crowded, bars):
    md = backend_inline._fetch_figure_metadata(f)
    print(md["llmmath_zoom"], md["%s"], *f.get_size_inches(), f.dpi)
""" % pg.SMALLEST_TEXT
    lines = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           cwd=ROOT).stdout.splitlines()
    (zoom, small, w, h, dpi), (czoom, *_c), (bzoom, *_b) = [tuple(map(float, ln.split())) for ln in lines]
    assert zoom == max(pg.FIGURE_ZOOMS) and (w, h) == pytest.approx((6 / zoom, 3.5 / zoom))
    assert dpi == pytest.approx(pg.plots.DPI * zoom * pg.FIGURE_RES)  # the same figure, at twice the pixels
    assert small == pytest.approx(9 * dpi / 72)  # its tick labels (9 pt) are its smallest text
    assert czoom < max(pg.FIGURE_ZOOMS)  # more would run its label out of the figure
    assert bzoom < max(pg.FIGURE_ZOOMS)  # more would make its tick labels run into each other


def test_a_heading_with_its_paragraph_in_one_block_counts_the_paragraph_and_does_not_pull_a_figure_in():
    # chapter 9: "### The fast gradient sign method" with a long paragraph right under it (no blank
    # line) was measured as a heading alone (64 px), so a tall figure joined that slide and shrank
    text = "### The fast gradient sign method\n" + "The loss rises fastest along the sign of its gradient. " * 14
    assert pg.md_blocks(text)[0] == "### The fast gradient sign method" and len(pg.md_blocks(text)) == 2
    assert pg.md_height(text) > pg.HEADING[3] + 4 * pg.MD_LINE
    book = pg.plots.BOOK_WIDTH_PX
    fig = _code("plot()", nbformat.v4.new_output("display_data", data={"image/png": _png(2 * book, 800)},
                                                 metadata={pg.SMALLEST_TEXT: 20.0}))
    assert _kinds(pg.paginate(_nb(_md(text, "subslide"), fig))) == ["subslide", "subslide"]


def test_the_slides_kernels_draw_explorers_for_slides_and_say_how_small_their_text_is(tmp_path):
    import subprocess

    import build_slides

    startup = build_slides.kernel_profile(tmp_path) / "profile_default" / "startup" / "00-llmmath-slides.py"
    code = startup.read_text() + """
from llmmath import widgets
e = widgets.explorer_for(31)
print(e.fig.dpi, *e.image._dom_classes)
"""
    dpi, cls = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              cwd=ROOT).stdout.split()
    from llmmath import widgets

    assert cls.startswith(widgets.SMALLEST_TEXT_CLASS)
    small_px = int(cls.removeprefix(widgets.SMALLEST_TEXT_CLASS)) / 100
    zoom = float(dpi) / (pg.plots.DPI * pg.FIGURE_RES)
    assert zoom in pg.FIGURE_ZOOMS or zoom == pytest.approx(1.0)
    # its smallest text is at least the book's floor (8 pt), times the zoom and the slides' pixels
    assert small_px >= pg.plots.MIN_FONT_PT * float(dpi) / 72 - 0.01
    assert widgets.for_slides is None  # outside the slides' kernels the explorers are drawn as the book has them
    assert widgets.explorer_for(31).image._dom_classes == ()


def _measured(**kw):
    s = {"n": 4, "h": 1, "v": 2, "heading": "h", "height": 600, "width": 1280, "cut": [], "max_height": 720,
         "max_width": 1280, "ends_on": None, "smallest_text": {"px": 22, "text": "prose"}, "figures": [], "code": [],
         "zoom": 1}
    return {**s, **kw}


def test_the_check_names_what_a_projected_slide_fails():
    import check_slides

    book = pg.plots.BOOK_WIDTH_PX * pg.FIGURE_RES
    drawn = {"image_width": book, "smallest_text": 30.0}  # a figure drawn for the slides, its smallest text 30 px
    assert check_slides.problems(_measured()) == []
    assert check_slides.problems(_measured(figures=[{**drawn, "shown_width": 1000}])) == []
    small = check_slides.problems(_measured(figures=[{**drawn, "shown_width": 700}]))
    assert len(small) == 2 and "60%" in small[0] and "text as small as 15.3 px" in small[1]
    assert check_slides.problems(_measured(code=["def kernel(a):"])) == ["shows code not tagged slide-code: «def kernel(a):»"]
    at_book_size = {"image_width": pg.plots.BOOK_WIDTH_PX, "smallest_text": None, "shown_width": 1200}
    assert "text as small as 15.5 px" in check_slides.problems(_measured(figures=[at_book_size]))[0]
    assert check_slides.problems(_measured(ends_on="a lead-in: at once:")) == ["ends on a lead-in: at once:"]
    assert "text of 14.7 px" in check_slides.problems(_measured(smallest_text={"px": 14.7, "text": "x"}))[0]
    assert "height 800" in check_slides.problems(_measured(height=800))[0]


@pytest.fixture(scope="module")
def built_slides():
    decks = sorted((ROOT / "build" / "slides").glob("*.slides.html"))
    if not decks:
        pytest.skip("no slides built (python tools/build_slides.py)")
    chromium = os.environ.get("LLMMATH_CHROMIUM", "/usr/bin/chromium")
    if not Path(chromium).exists():
        pytest.skip(f"no Chromium at {chromium} (apt-get install chromium, or set LLMMATH_CHROMIUM)")
    pytest.importorskip("playwright", reason="Playwright is needed to measure slides (the test extra)")
    import check_slides

    results = check_slides.measure_decks(decks)
    assert set(results) == {d.name for d in decks}
    return results


def _failing(results, rule):
    import check_slides

    bad = [check_slides.describe(deck, s, rule) for deck, slides in results.items() for s in slides if rule(s)]
    return f"{len(bad)} of {sum(map(len, results.values()))} slides:\n" + "\n".join(bad) if bad else ""


def test_every_built_slide_fits_1280x720(built_slides):
    import check_slides

    assert not _failing(built_slides, check_slides.overflows)
    for deck, slides in built_slides.items():
        assert len(slides) >= 5, f"{deck}: only {len(slides)} slides"
        assert all(s["max_width"] == 1280 and s["max_height"] == 720 for s in slides), deck


def test_every_built_slide_reads_from_afar(built_slides):
    """18 px text at least, figures 60 % of the slide's width at least, no code shown that is not
    tagged slide-code, no slide ending on a heading or a lead-in."""
    import check_slides

    assert not _failing(built_slides, check_slides.unreadable)


def test_every_built_figure_shows_its_text_at_18_px_at_least(built_slides):
    """Every figure's smallest text on a slide, explorer snapshots' included, is at least 18 px as shown
    (recorded when the slides' kernel drew it; else the least the book's figure style allows)."""
    import check_slides

    shown = [f for slides in built_slides.values() for s in slides for f in s["figures"]]
    assert shown, "no figure on any built slide"
    assert any(f["smallest_text"] for f in shown), "no figure says how small its text is: not drawn for slides?"
    assert not _failing(built_slides, check_slides.small_figure_text)
