"""Lecture slides that fit a 1280x720 screen (issue 15).

The pagination (``tools/paginate_slides.py``) is checked on small notebooks
without a build. ``test_every_built_slide_fits_1280x720`` measures the decks in
``build/slides/`` (``python tools/build_slides.py``) in headless Chromium with
``tools/check_slides.py``: every slide and sub-slide is shown with reveal.js's
API and must be no taller and no wider than the slide, with nothing cut at its
right edge. It skips, saying why, where nothing is built or there is no Chromium
or Playwright (the ``test`` extra installs Playwright; it downloads no browser).
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
    printed = "\n".join(f"row {i:3d} " + "x" * 60 for i in range(22))
    tall = nbformat.v4.new_code_cell("\n".join(f"line_{i} = {i}" for i in range(14)),
                                     outputs=[nbformat.v4.new_output("stream", name="stdout", text=printed)])
    nb = pg.paginate(_nb(_md("## Claim 3", "slide"), tall))
    assert [c.cell_type for c in nb.cells] == ["markdown", "code", "code"]
    src, out = nb.cells[1:]
    assert not src.outputs and out.outputs and not out.source and "slides-output-only" in out.metadata["tags"]
    assert _kinds(nb)[2] == "subslide"


def test_every_built_slide_fits_1280x720():
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
    bad = [check_slides.describe(deck, s) for deck, slides in results.items() for s in check_slides.misfits(slides)]
    n = sum(map(len, results.values()))
    assert not bad, f"{len(bad)} of {n} slides do not fit 1280x720:\n" + "\n".join(bad)
    for deck, slides in results.items():
        assert len(slides) >= 5, f"{deck}: only {len(slides)} slides"
        assert all(s["max_width"] == 1280 and s["max_height"] == 720 for s in slides), deck
