"""Cut an executed notebook's slides so that each fits a 1280x720 slide (for ``tools/build_slides.py``).

The chapters' ``slideshow`` metadata (``tools/mark_slides.py``) says where a
topic starts: a slide per section, a sub-slide per figure or explorer. A section
of prose, a derivation and a table is often taller than one screen, so before
the export this module, on the executed notebook in memory (the chapter files
are not changed):

* estimates each cell's height on the slide, in reveal.js pixels (the slide is
  :data:`WIDTH` x :data:`HEIGHT`; font sizes are those of the slide template):
  markdown by its blocks (headings, wrapped paragraphs, display equations, table
  rows, list items), code by its lines (long ones wrap), printed output by its
  lines, figures by their height at the smallest width a slide may show them
  (:func:`figure_min_width`), widget snapshots by a fixed allowance;
* splits a markdown cell taller than the budget at its blank lines (never
  inside a display equation, a table, a list or a fenced block) into several
  cells, a code cell whose code is shown and whose code and output together are
  too tall into its code and its output (shown without the code again), and
  outputs too tall together (a printed table and a figure) into cells of their own;
* starts a new sub-slide at the cell that would overflow the current one;
* keeps a heading, or a lead-in paragraph (one that ends with a colon), with
  what it introduces: it never ends a slide (:func:`lead_in_tail`), it moves to
  the next slide with the cell after it.

Code is not shown on a slide (:func:`hide_code`) unless its cell is tagged
:data:`SLIDE_CODE` (``slide-code``), saying the code is the point of the slide:
other code cells show only their output (a printed table, a figure, an
explorer), and a cell with no output is left out.

The figures themselves are drawn for the slides when the chapters are executed
for them (:func:`draw_figures_for_slides`, in the kernel): larger beside their
text where their layout allows, and recording their smallest text, so that the
template can show each at least :data:`MIN_FIGURE_FRACTION` of the slide's
width and wide enough for that text to be :data:`MIN_TEXT_PX`.

The estimate is deliberately on the tall side; what it still misses, the deck's
own script shrinks to fit (``book/slides/llmmath-reveal/index.html.j2``), and
``tools/check_slides.py`` measures the result in Chromium.
"""

from __future__ import annotations

import base64
import copy
import math
import re
import struct

from llmmath import plots

WIDTH, HEIGHT = 1280, 720
BUDGET = 610  # px of content per slide: HEIGHT less reveal's padding, the slide number and a safety margin
CONTENT_WIDTH = 1200  # px of a slide's width that its cells fill
MIN_TEXT_PX = 18  # no text on a slide smaller, figures' included (tools/check_slides.py)
MIN_FIGURE_FRACTION = 0.6  # a figure is shown at least this fraction of the slide's width
FIGURE_ZOOMS = (1.6, 1.5, 1.4, 1.3, 1.25, 1.2, 1.15, 1.13, 1.1, 1.05)  # tried in turn on a slide's figure (zoom_for_slide)
FIGURE_RES = 2  # a slide's figure has this many times the book's pixels
SMALLEST_TEXT = "llmmath_smallest_text_px"  # a figure output's metadata: its smallest text, px of its image
MD_LINE, MD_CHARS = 33, 100  # markdown: 22 px text, line height 1.5; characters per line at the slide's width
CODE_LINE, CODE_CHARS = 21, 108  # code and printed output: 18 px monospace (19 px a line; a margin)
HEADING = {1: 70, 2: 60, 3: 50, 4: 44}
DISPLAY_MATH = 78  # one display equation (fractions, subscripts), margins included
TABLE_ROW = 38
CELL_GAP = 14
WIDGET = 600  # an explorer's snapshot: its controls, a figure and its text
SLIDE_CODE = "slide-code"  # a code cell's tag: its code is shown on the slide (the point of the slide)
OUTPUT_ONLY = "slides-output-only"  # a code cell's tag: its input is removed (tools/build_slides.py)


def smallest_text_px(image_width_px: float, recorded: float | None = None) -> float:
    """A figure's smallest text, in px of its image: as recorded when it was drawn for a slide
    (:func:`draw_figures_for_slides`), else the least a course figure at the book's size holds
    (``plots.MIN_FONT_PT``, checked by ``tests/test_plot_legibility.py``; more where it is wider
    than the book's column, which shrinks it)."""
    if recorded:
        return recorded
    return plots.MIN_FONT_PT * plots.DPI / 72 * max(1.0, image_width_px / plots.BOOK_WIDTH_PX)


def figure_text_px(image_width_px: float, shown_width_px: float, recorded: float | None = None) -> float:
    """A figure's smallest text in px on the slide, the figure shown ``shown_width_px`` wide."""
    return smallest_text_px(image_width_px, recorded) * shown_width_px / image_width_px


def figure_min_width(image_width_px: float, recorded: float | None = None) -> float:
    """How narrow a figure may be shown (px): :data:`MIN_FIGURE_FRACTION` of the slide, and wide
    enough for its smallest text to be :data:`MIN_TEXT_PX` (but no wider than the slide's cells)."""
    need = MIN_TEXT_PX / figure_text_px(image_width_px, 1.0, recorded)
    return min(CONTENT_WIDTH, max(MIN_FIGURE_FRACTION * WIDTH, need))


def template_settings() -> dict:
    """What the slide template's script needs to size figures (``book/slides/llmmath-reveal``)."""
    from llmmath import widgets

    return {"min_figure_fraction": MIN_FIGURE_FRACTION, "min_text_px": MIN_TEXT_PX,
            "book_font_px": plots.MIN_FONT_PT * plots.DPI / 72, "book_width_px": plots.BOOK_WIDTH_PX,
            "smallest_text_class": widgets.SMALLEST_TEXT_CLASS}


def _drawn_texts(fig) -> list:
    """Draw ``fig``; the texts it drew (visible, not blank)."""
    from matplotlib.text import Text

    drawn, draw = [], Text.draw

    def record(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn.append(self)
        return draw(self, renderer)

    Text.draw = record
    try:
        fig.canvas.draw()
    finally:
        Text.draw = draw
    return drawn


def zoom_for_slide(fig) -> float:
    """Make ``fig`` a slide's figure; return the zoom it got.

    The largest of :data:`FIGURE_ZOOMS` at which its layout still holds (no text run out of the
    figure or its axes, as ``tools/check_plots.py``'s :func:`check_figure` finds, and no two texts
    touching, tick labels included, that did not at the book's size): the figure is drawn in that many times fewer
    inches at as many times the dpi, so its text, lines and markers are that much larger beside its
    plot, at :data:`FIGURE_RES` times the pixels."""
    import warnings

    import check_plots

    def layout():
        with warnings.catch_warnings():  # (a layout that collapses says so: it is not taken)
            warnings.simplefilter("ignore")
            problems = {p for p in check_plots.check_figure(fig, "")[0] if " pt as shown" not in p}
            boxes = [(t.get_text(), t.get_window_extent()) for t in _drawn_texts(fig)]
        for i, (a, bb) in enumerate(boxes):  # any two texts that touch (tick labels too)
            for b, cc in boxes[i + 1:]:
                if min(bb.x1, cc.x1) - max(bb.x0, cc.x0) > 1 and min(bb.y1, cc.y1) - max(bb.y0, cc.y0) > 1:
                    problems.add(f"{a!r} touches {b!r}")
        return problems

    (w, h), dpi = fig.get_size_inches(), fig.dpi
    book, zoom = layout(), 1.0
    for z in FIGURE_ZOOMS:
        fig.set_size_inches(w / z, h / z)
        fig.set_dpi(dpi * z)
        if layout() <= book:
            zoom = z
            break
    else:
        fig.set_size_inches(w, h)
        fig.set_dpi(dpi)
    fig.set_dpi(fig.dpi * FIGURE_RES)
    return zoom


def smallest_drawn_text_px(fig) -> float:
    """The smallest text ``fig`` draws, in px of its image (0 if it draws none)."""
    return round(min((t.get_fontsize() for t in _drawn_texts(fig)), default=0) * fig.dpi / 72, 2)


def explorer_for_slide(fig) -> float:
    """An explorer's figure made a slide's figure (:func:`zoom_for_slide`); its smallest text, px of its image."""
    zoom_for_slide(fig)
    return smallest_drawn_text_px(fig)


def draw_figures_for_slides() -> None:
    """In a kernel that executes a chapter for the slides (``tools/build_slides.py``'s kernel_profile):
    every figure the inline backend shows is first made a slide's figure (:func:`zoom_for_slide`),
    and its output's metadata records its smallest text (:data:`SMALLEST_TEXT`); so is every
    explorer's figure (``llmmath.course.widgets.for_slides``), its smallest text carried by its image as a
    CSS class (``widgets.SMALLEST_TEXT_CLASS``). The book's figures are not changed."""
    from matplotlib_inline import backend_inline

    from llmmath import widgets

    fetch = backend_inline._fetch_figure_metadata  # the inline backend asks it about every figure it shows

    def fetch_for_slide(fig):
        md = dict(fetch(fig) or {})
        if not getattr(fig, "_llmmath_slide", False):
            fig._llmmath_slide = True
            md["llmmath_zoom"] = zoom_for_slide(fig)
            md[SMALLEST_TEXT] = smallest_drawn_text_px(fig)
        return md or None

    backend_inline._fetch_figure_metadata = fetch_for_slide
    widgets.for_slides = explorer_for_slide


def _strip_markup(s: str) -> str:
    s = re.sub(r"\$[^$]*\$", "xxxxxx", s)  # inline math: about six characters wide
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)  # links
    return re.sub(r"[*_`]", "", s)


def md_blocks(source: str) -> list[str]:
    """The markdown's blocks, split at blank lines outside ``$$ … $$``, fenced code and tables; a
    heading is a block of its own (the paragraph under it may follow without a blank line)."""
    blocks, cur, in_math, in_fence = [], [], False, False
    for ln in source.splitlines():
        if ln.strip().startswith("```"):
            in_fence = not in_fence
        if not in_fence and not in_math and re.match(r"#{1,6} ", ln):
            if cur:
                blocks.append("\n".join(cur))
            blocks.append(ln)
            cur = []
            continue
        if not in_fence:
            in_math ^= ln.count("$$") % 2 == 1
        if not ln.strip() and not in_math and not in_fence:
            if cur:
                blocks.append("\n".join(cur))
                cur = []
            continue
        cur.append(ln)
    if cur:
        blocks.append("\n".join(cur))
    return blocks


def md_block_height(block: str) -> float:
    lines = block.splitlines()
    first = lines[0].lstrip()
    m = re.match(r"(#{1,6}) ", first)
    if m:
        return HEADING.get(len(m.group(1)), 40) * math.ceil(len(first) / 60)
    if first.startswith("|"):
        return TABLE_ROW * sum(1 for ln in lines if not re.match(r"\s*\|[\s:|-]+\|\s*$", ln)) + 16
    if first.startswith("```"):
        return CODE_LINE * len(lines) + 16
    h, text = 0.0, []
    rest = block
    for eq in re.findall(r"\$\$.*?\$\$", block, flags=re.S):
        rows = eq.count(r"\\") + 1
        h += DISPLAY_MATH + 42 * (rows - 1)
        rest = rest.replace(eq, " ")
    items = re.split(r"\n(?=\s*(?:[-*+]|\d+\.) )", rest)
    for item in items:
        t = _strip_markup(" ".join(x.strip() for x in item.splitlines())).strip()
        if t:
            text.append(math.ceil(len(t) / MD_CHARS))
    return h + MD_LINE * sum(text) + 18 * len(text)


def md_height(source: str) -> float:
    return sum(md_block_height(b) for b in md_blocks(source)) + CELL_GAP


def _png_size(data: str) -> tuple[int, int]:
    raw = base64.b64decode(data[:64])
    w, h = struct.unpack(">II", raw[16:24])
    return w, h


def _text_lines(text: str) -> int:
    return sum(max(1, math.ceil(len(ln) / CODE_CHARS)) for ln in text.splitlines())


def output_height(out) -> float:
    if out.output_type == "stream":
        return CODE_LINE * _text_lines(out.text) + 12
    if out.output_type == "error":
        return CODE_LINE * 12
    data = out.get("data", {})
    if "application/vnd.jupyter.widget-view+json" in data:
        return WIDGET
    if "image/png" in data:
        w, h = _png_size(data["image/png"])
        shown = figure_min_width(w, out.get("metadata", {}).get(SMALLEST_TEXT))
        return h * shown / w + 12  # shown at least this large (the template may show it larger)
    if "text/html" in data:
        html = data["text/html"]
        return TABLE_ROW * max(1, html.count("<tr")) + 16
    if "text/markdown" in data:
        return md_height(data["text/markdown"])
    if "text/plain" in data:
        return CODE_LINE * _text_lines(data["text/plain"]) + 12
    return 0.0


def code_height(source: str) -> float:
    return CODE_LINE * _text_lines(source) + 24 if source.strip() else 0.0


def cell_height(cell) -> float:
    if cell.cell_type == "markdown":
        return md_height(cell.source)
    if cell.cell_type == "code":
        return code_height(cell.source) + sum(output_height(o) for o in cell.get("outputs", [])) + CELL_GAP
    return 0.0


def _slide_type(cell) -> str | None:
    return cell.metadata.get("slideshow", {}).get("slide_type")


def _set_slide_type(cell, kind: str) -> None:
    cell.metadata.setdefault("slideshow", {})["slide_type"] = kind


def split_cells(cells: list, budget: float = BUDGET) -> list:
    """Split each cell taller than ``budget`` into pieces that each fit (where it can be split)."""
    out = []
    for cell in cells:
        if cell_height(cell) <= budget:
            out.append(cell)
        elif cell.cell_type == "markdown":
            pieces, cur, h = [], [], 0.0
            for b in md_blocks(cell.source):
                bh = md_block_height(b)
                if cur and h + bh > budget - CELL_GAP:
                    k = _n_lead_in(cur)  # a heading or lead-in goes on with what it introduces
                    k = 0 if k == len(cur) else k
                    pieces.append(cur[:len(cur) - k])
                    cur = cur[len(cur) - k:]
                    h = sum(map(md_block_height, cur))
                cur.append(b)
                h += bh
            pieces.append(cur)
            for i, blocks in enumerate(pieces):
                c = copy.deepcopy(cell)
                c.source = "\n\n".join(blocks)
                if i:
                    c.metadata.pop("slideshow", None)
                    c.id = f"{cell.get('id', 'md')}-{i}"[:64]
                out.append(c)
        elif cell.cell_type == "code" and cell.get("outputs"):
            res = cell
            if cell.source.strip():  # code shown: it, then its outputs (without the code again)
                src, res = copy.deepcopy(cell), copy.deepcopy(cell)
                src.outputs = []
                res.source = ""
                res.metadata.pop("slideshow", None)
                res.metadata["tags"] = [*res.metadata.get("tags", []), OUTPUT_ONLY]
                res.id = f"{cell.get('id', 'code')}-out"[:64]
                out.append(src)
            out += _split_outputs(res, budget - HEADING[2])  # (room left for a heading that goes with it)
        else:
            out.append(cell)
    return out


def is_lead_in(block: str) -> bool:
    """Whether a markdown block introduces what follows it: a heading, or a paragraph ending with a colon."""
    first = block.lstrip()
    if re.match(r"#{1,6} ", first):
        return True
    if first.startswith(("|", "```", "$$", "<")):
        return False
    return block.rstrip().rstrip("*_").endswith(":")


def _n_lead_in(blocks: list[str]) -> int:
    """How many of the last ``blocks`` are lead-ins (:func:`is_lead_in`)."""
    n = 0
    while n < len(blocks) and is_lead_in(blocks[len(blocks) - 1 - n]):
        n += 1
    return n


def lead_in_tail(source: str) -> tuple[str, str]:
    """``(body, tail)``: the markdown split before its last blocks that are headings or lead-ins."""
    blocks = md_blocks(source)
    k = _n_lead_in(blocks)
    return "\n\n".join(blocks[:len(blocks) - k]), "\n\n".join(blocks[len(blocks) - k:])


def _shown(cell) -> bool:
    return _slide_type(cell) not in ("skip", "notes")


_RANK = {"slide": 2, "subslide": 1}


def hide_code(cells: list) -> list:
    """Cells as a slide shows them: code only where tagged :data:`SLIDE_CODE`.

    Another code cell keeps its outputs, its input removed (tagged :data:`OUTPUT_ONLY`);
    one with no output is left out, and a slide boundary it carried moves to the next cell."""
    out, carry = [], None
    for cell in cells:
        if cell.cell_type == "code" and SLIDE_CODE not in cell.metadata.get("tags", []):
            if not cell.get("outputs"):
                kind = _slide_type(cell)
                if _RANK.get(kind, 0) > _RANK.get(carry, 0):
                    carry = kind
                continue
            cell = copy.deepcopy(cell)
            cell.source = ""
            if OUTPUT_ONLY not in cell.metadata.get("tags", []):
                cell.metadata["tags"] = [*cell.metadata.get("tags", []), OUTPUT_ONLY]
        if carry and _shown(cell):
            if _RANK[carry] > _RANK.get(_slide_type(cell), 0):
                cell = copy.deepcopy(cell)
                _set_slide_type(cell, carry)
            carry = None
        out.append(cell)
    return out


def _lead_in_start(cells: list, first: int) -> int | None:
    """Where the lead-ins that end the slide ``cells[first:]`` begin (splitting a cell whose last
    blocks are lead-ins off its body), or None if it ends on none."""
    shown = [i for i in range(first, len(cells)) if _shown(cells[i])]
    k = len(shown)
    while k and cells[shown[k - 1]].cell_type == "markdown":
        i = shown[k - 1]
        body, tail = lead_in_tail(cells[i].source)
        if not tail:
            break
        if not body:  # a cell that is all lead-in
            k -= 1
            continue
        lead = copy.deepcopy(cells[i])  # its body stays; its tail goes on with what it introduces
        lead.source, cells[i].source = tail, body
        lead.metadata.pop("slideshow", None)
        lead.id = f"{cells[i].get('id', 'md')}-lead"[:64]
        cells.insert(i + 1, lead)
        return i + 1
    return shown[k] if k < len(shown) else None


def _split_stream(out, budget: float) -> list:
    """A printed output (or a value shown as plain text), or (if taller than ``budget``) pieces of
    it that fit, cut at blank lines where it has them, else between lines."""
    plain = out.output_type != "stream" and set(out.get("data", {})) == {"text/plain"}
    if not (out.output_type == "stream" or plain) or output_height(out) <= budget - CELL_GAP:
        return [out]
    lines = (out.data["text/plain"] if plain else out.text).splitlines(keepends=True)
    pieces, cur = [], []

    def tall(ls):
        return CODE_LINE * _text_lines("".join(ls)) + 12 > budget - CELL_GAP

    for i, ln in enumerate(lines):
        if cur and tall(cur + [ln]):
            blank = max((j for j, x in enumerate(cur) if not x.strip()), default=0)
            cut = blank + 1 if blank else len(cur)  # after the last blank line, if any
            pieces.append(cur[:cut])
            cur = cur[cut:]
        cur.append(ln)
    pieces.append(cur)
    result = []
    for ls in pieces:
        o = copy.deepcopy(out)
        if plain:
            o.data["text/plain"] = "".join(ls)
        else:
            o.text = "".join(ls)
        result.append(o)
    return result


def _split_outputs(cell, budget: float) -> list:
    """The cell, or (if taller than ``budget``) copies of it that share its outputs, each as tall as fits."""
    groups, h = [[]], 0.0
    for o in [piece for o in cell.outputs for piece in _split_stream(o, budget)]:
        oh = output_height(o)
        if groups[-1] and h + oh > budget - CELL_GAP:
            groups.append([])
            h = 0.0
        groups[-1].append(o)
        h += oh
    if len(groups) == 1:
        return [cell]
    pieces = []
    for i, outputs in enumerate(groups):
        c = copy.deepcopy(cell)
        c.outputs = outputs
        if i:
            c.metadata.pop("slideshow", None)
            c.id = f"{cell.get('id', 'code')}-{i}"[:64]
        pieces.append(c)
    return pieces


def paginate(nb, budget: float = BUDGET):
    """Return a copy of the notebook as slides show it: code hidden (:func:`hide_code`), long cells
    split, sub-slides added where a slide overflows, and no slide ending on a heading or lead-in."""
    nb = copy.deepcopy(nb)
    out: list = []
    used, first = 0.0, 0  # the current slide's height so far, and where it starts in ``out``
    for cell in split_cells(hide_code(nb.cells), budget):
        if not _shown(cell):
            out.append(cell)
            continue
        h = cell_height(cell)
        kind = _slide_type(cell)
        new = kind if kind in _RANK else ("subslide" if used and used + h > budget else None)
        opens = cell.cell_type == "markdown" and re.match(r"\s*#{1,6} ", cell.source)  # a new topic
        if new and out and not opens:
            lead = _lead_in_start(out, first)
            if lead is not None:  # the slide ends on a heading or lead-in: it starts the next slide
                moved = out[lead]
                if lead == first:  # it is all the slide holds: the cell joins it instead
                    if _RANK[new] > _RANK.get(_slide_type(moved), 0):
                        _set_slide_type(moved, new)
                else:
                    _set_slide_type(moved, new)
                    first = lead
                if kind in _RANK:
                    cell.metadata["slideshow"].pop("slide_type")
                used = sum(cell_height(c) for c in out[first:] if _shown(c))
                new = None
        if new:
            _set_slide_type(cell, new)
            first, used = len(out), h
        else:
            used += h
        out.append(cell)
    nb.cells = out
    return nb
