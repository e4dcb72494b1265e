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
  lines, figures by their PNG size under the template's ``max-height``, widget
  snapshots by a fixed allowance;
* splits a markdown cell taller than the budget at its blank lines (never
  inside a display equation, a table, a list or a fenced block) into several
  cells, and a code cell whose source and output together are too tall into its
  source and its output (shown without the source again);
* starts a new sub-slide at the cell that would overflow the current one.

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

WIDTH, HEIGHT = 1280, 720
BUDGET = 610  # px of content per slide: HEIGHT less reveal's padding, the slide number and a safety margin

MD_LINE, MD_CHARS = 33, 100  # markdown: 22 px text, line height 1.5; characters per line at the slide's width
CODE_LINE, CODE_CHARS = 23, 118  # code and printed output: 16.5 px monospace
HEADING = {1: 70, 2: 60, 3: 50, 4: 44}
DISPLAY_MATH = 78  # one display equation (fractions, subscripts), margins included
TABLE_ROW = 38
CELL_GAP = 14
IMG_MAX_H = 500  # the template's max-height for a figure on a slide (px)
WIDGET = 520  # an explorer's snapshot: its controls and a figure


def _strip_markup(s: str) -> str:
    s = re.sub(r"\$[^$]*\$", "xxxxxx", s)  # inline math: about six characters wide
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)  # links
    return re.sub(r"[*_`]", "", s)


def md_blocks(source: str) -> list[str]:
    """The markdown's blocks, split at blank lines outside ``$$ … $$``, fenced code and tables."""
    blocks, cur, in_math, in_fence = [], [], False, False
    for ln in source.splitlines():
        if ln.strip().startswith("```"):
            in_fence = not in_fence
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
        scale = min(1.0, IMG_MAX_H / h, (WIDTH - 100) / w)
        return h * scale + 12
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
                    pieces.append(cur)
                    cur, h = [], 0.0
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
        elif cell.cell_type == "code" and cell.get("outputs") and cell.source.strip():
            src, res = copy.deepcopy(cell), copy.deepcopy(cell)
            src.outputs = []
            res.source = ""
            res.metadata.pop("slideshow", None)
            res.metadata["tags"] = [*res.metadata.get("tags", []), "slides-output-only"]
            res.id = f"{cell.get('id', 'code')}-out"[:64]
            out += [src, res]
        else:
            out.append(cell)
    return out


def paginate(nb, budget: float = BUDGET):
    """Return a copy of the notebook with long cells split and sub-slides added where a slide overflows."""
    nb = copy.deepcopy(nb)
    cells = split_cells(nb.cells, budget)
    used = 0.0
    for cell in cells:
        kind = _slide_type(cell)
        if kind in ("skip", "notes"):
            continue
        h = cell_height(cell)
        if kind in ("slide", "subslide"):
            used = h
        elif used and used + h > budget:
            _set_slide_type(cell, "subslide")
            used = h
        else:
            used += h
    nb.cells = cells
    return nb
