"""Render a chapter's figures headless and check that every text in them is legible.

    python tools/check_plots.py chapters/01_batch_size.py [more chapters]   # prints what fails; exit 1 if any
    python tools/check_plots.py --json chapters/01_batch_size.py            # one JSON object (for the test)

The chapter's code cells run in this process, in order, with Matplotlib's Agg
backend; ``plt.show()`` is replaced by a check of the figures it would show,
and every explorer (``llmmath.course.widgets.Explorer``) is checked as it draws its
first frame (static axes and the artists of the frame, legends included). A
check draws the figure and looks at every text that was drawn:

* its size as shown in the book, ``fontsize x min(1, BOOK_WIDTH_PX / image
  width)`` (the book shrinks an image wider than its column), is at least
  ``plots.MIN_BASE_FONT_PT`` for tick labels, axis labels and titles and at
  least ``plots.MIN_FONT_PT`` for anything else (legends, annotations);
* it lies inside the figure, and a text placed in an axes (an annotation, a
  label beside a line) lies inside that axes;
* a legend lies inside the figure;
* no two annotations cover each other (more than a fifth of the smaller one).

A cell that fails its own check (``AssertionError``: a measurement on a busy
machine) does not stop the run; any other exception does, and is reported.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOL_PX = 2.0  # how far (display pixels) a text may reach past its box: antialiasing, rounding
OVERLAP = 0.2  # two annotations may share this fraction of the smaller one's box, no more


def _classify(fig):
    """``{id(text): kind}`` for the figure's texts: 'base' (ticks, axis labels, titles), 'legend'."""
    kinds = {}
    for t in fig.texts:
        kinds[id(t)] = "figure"
    if getattr(fig, "_suptitle", None) is not None:
        kinds[id(fig._suptitle)] = "base"
    for ax in fig.axes:
        for t in (ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label,
                  ax.xaxis.offsetText, ax.yaxis.offsetText):
            kinds[id(t)] = "base"
        for axis in (ax.xaxis, ax.yaxis):
            for tick in [*axis.majorTicks, *axis.minorTicks]:
                kinds[id(tick.label1)] = kinds[id(tick.label2)] = "base"
        legends = [ax.get_legend()] + [c for c in ax.get_children() if type(c).__name__ == "Legend"]
        for leg in legends:
            if leg is not None:
                for t in [*leg.get_texts(), leg.get_title()]:
                    kinds[id(t)] = "legend"
    for leg in fig.legends:
        for t in [*leg.get_texts(), leg.get_title()]:
            kinds[id(t)] = "legend"
    return kinds


def check_figure(fig, where: str) -> tuple[list[str], int]:
    """Draw ``fig`` and return (problems, number of texts checked)."""
    import matplotlib.text as mtext
    from matplotlib.legend import Legend

    from llmmath import plots

    drawn_texts, drawn_legends = [], []
    orig_text_draw, orig_legend_draw = mtext.Text.draw, Legend.draw

    def text_draw(self, renderer):
        if self.get_visible() and self.get_text().strip():
            drawn_texts.append(self)
        return orig_text_draw(self, renderer)

    def legend_draw(self, renderer):
        if self.get_visible():
            drawn_legends.append(self)
        return orig_legend_draw(self, renderer)

    mtext.Text.draw, Legend.draw = text_draw, legend_draw
    try:
        fig.canvas.draw()
    finally:
        mtext.Text.draw, Legend.draw = orig_text_draw, orig_legend_draw
    renderer = fig.canvas.get_renderer()
    tight = fig.get_tightbbox(renderer)  # inches; the inline backend saves this box
    width_px = max((tight.width + 2 * plots.SAVE_PAD_IN) * fig.dpi, 1.0)
    scale = min(1.0, plots.BOOK_WIDTH_PX / width_px)
    fb = fig.bbox
    kinds = _classify(fig)
    problems, seen = [], set()

    def outside(bb, box):
        return (bb.x0 < box.x0 - TOL_PX or bb.x1 > box.x1 + TOL_PX or bb.y0 < box.y0 - TOL_PX
                or bb.y1 > box.y1 + TOL_PX)

    for t in drawn_texts:
        if id(t) in seen:
            continue
        seen.add(id(t))
        kind = kinds.get(id(t), "annotation")
        label = repr(t.get_text()[:50])
        size = t.get_fontsize() * scale
        least = plots.MIN_BASE_FONT_PT if kind == "base" else plots.MIN_FONT_PT
        if round(size, 1) < least:
            problems.append(f"{where}: {kind} text {label} is {size:.1f} pt as shown in the book "
                            f"({t.get_fontsize():g} pt x {scale:.2f}), under {least} pt")
        bb = t.get_window_extent(renderer)
        if outside(bb, fb):
            problems.append(f"{where}: {kind} text {label} runs outside the figure")
        elif kind == "annotation" and t.axes is not None and outside(bb, t.axes.bbox):  # past it, or clipped
            problems.append(f"{where}: text {label} runs outside its axes")
    # two annotations (labels beside points or lines) that cover each other: neither can be read
    notes = [(t, t.get_window_extent(renderer)) for t in drawn_texts
             if kinds.get(id(t), "annotation") == "annotation" and t.get_text().strip()]
    for i, (t, bb) in enumerate(notes):
        for u, cc in notes[i + 1:]:
            w = min(bb.x1, cc.x1) - max(bb.x0, cc.x0)
            h = min(bb.y1, cc.y1) - max(bb.y0, cc.y0)
            if w > 0 and h > 0 and w * h > OVERLAP * min(bb.width * bb.height, cc.width * cc.height):
                problems.append(f"{where}: texts {t.get_text()[:40]!r} and {u.get_text()[:40]!r} cover each other")
    for leg in drawn_legends:
        if outside(leg.get_window_extent(renderer), fb):
            problems.append(f"{where}: a legend ({', '.join(repr(x.get_text()) for x in leg.get_texts()[:3])}) "
                            "lies outside the figure")
    return problems, len(seen)


def run_chapter(path: Path, save_dir: Path | None = None) -> dict:
    """Run the chapter's code cells and check every figure; ``{figures, texts, problems, errors, seconds}``."""
    os.environ["MPLBACKEND"] = "Agg"
    import jupytext
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from llmmath import widgets

    result = {"chapter": path.name, "figures": 0, "texts": 0, "problems": [], "errors": [], "assertions": []}
    state = {"cell": 0}

    def check(fig, what):
        problems, n = check_figure(fig, f"{path.name} cell {state['cell']} {what}")
        if save_dir is not None:  # as the inline backend saves it
            save_dir.mkdir(parents=True, exist_ok=True)
            fig.savefig(save_dir / f"{path.stem}-cell{state['cell']}-{result['figures']}.png", bbox_inches="tight")
        result["figures"] += 1
        result["texts"] += n
        result["problems"] += problems

    def show(*_a, **_k):
        for num in plt.get_fignums():
            check(plt.figure(num), "figure")
        plt.close("all")

    orig_update = widgets.Explorer.update

    def update(self):
        draw = self._draw
        if getattr(self, "_legibility_checked", False):
            return orig_update(self)

        def checked(fig, **values):
            artists, msg = draw(fig, **values)
            check(fig, "explorer")
            return artists, msg

        self._draw, self._legibility_checked = checked, True
        try:
            return orig_update(self)
        finally:
            self._draw = draw

    plt.show = show
    widgets.Explorer.update = update
    t0 = time.perf_counter()
    nb = jupytext.read(path)
    ns = {"__name__": "__main__"}
    old_cwd = os.getcwd()
    os.chdir(path.parent)  # as a notebook runs
    try:
        for i, cell in enumerate(nb.cells, 1):
            if cell.cell_type != "code":
                continue
            state["cell"] = i
            src = "\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith(("%", "!")))
            try:
                with contextlib.redirect_stdout(io.StringIO()):  # the chapter's tables: not ours to print
                    exec(compile(src, f"{path.name} cell {i}", "exec"), ns)
            except AssertionError as e:
                result["assertions"].append(f"cell {i}: {str(e)[:200]}")
            except Exception:
                result["errors"].append(f"cell {i}: " + traceback.format_exc(limit=3)[-1500:])
                break
            show()  # a figure left open at the end of a cell is shown by the inline backend
    finally:
        os.chdir(old_cwd)
        widgets.Explorer.update = orig_update
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return result


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chapters", nargs="+", type=Path)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--save", type=Path, help="also save every checked figure as a PNG in this folder")
    args = ap.parse_args(argv)
    bad = 0
    for path in args.chapters:
        r = run_chapter(path.resolve(), args.save and args.save.resolve())
        if args.json:
            print("LEGIBILITY " + json.dumps(r))
        else:
            print(f"{r['chapter']}: {r['figures']} figures, {r['texts']} texts, {len(r['problems'])} problems, "
                  f"{r['seconds']} s" + (f", ERROR {r['errors']}" if r["errors"] else ""))
            for p in r["problems"]:
                print("  " + p)
        bad += len(r["problems"]) + len(r["errors"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
