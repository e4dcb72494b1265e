"""Standard figures: the roofline, and decode cost/latency against batch; and the course's figure style.

Plot functions draw on a Matplotlib ``Axes`` you pass in (or a new one) and
return it; they call the library's pure functions and compute nothing themselves.

**One figure style** (:data:`STYLE`, applied to Matplotlib's ``rcParams`` when
this module is imported, which every chapter and explorer does): 80 dpi, text
of 10 pt (tick labels and legends 9 pt), legends placed where they cover the
fewest data (``loc="best"``) on a translucent frame, and constrained layout,
which keeps titles, labels and legends inside the figure. A figure is no wider
than the book's text column (:data:`BOOK_WIDTH_PX` pixels, 688 at a 1280-pixel
window): :func:`new_axes` narrows wider requests, so the book never shrinks a
figure and a point stays a point. Text is never smaller than :data:`MIN_FONT_PT`
(8 pt) there, :data:`MIN_BASE_FONT_PT` (9 pt) for ticks, axis labels and titles;
``tests/test_plot_legibility.py`` renders every chapter's figures and checks it.
"""

from __future__ import annotations

import re

import numpy as np

from .. import hardware, roofline, serving

__all__ = ["new_axes", "roofline_plot", "decode_vs_batch_plot", "batch_sweep_plot", "label_points", "STYLE",
           "apply_style",
           "fit_width", "short_device_name", "BOOK_WIDTH_PX", "MAX_WIDTH_IN", "MIN_FONT_PT", "MIN_BASE_FONT_PT", "DPI"]

DPI = 80
BOOK_WIDTH_PX = 688  # the book's text column (sphinx-book-theme at a 1280-pixel window): wider figures are shrunk
SAVE_PAD_IN = 0.1  # the inline backend saves the figure's tight box plus this margin on each side
MAX_WIDTH_IN = BOOK_WIDTH_PX / DPI - 2 * SAVE_PAD_IN  # a figure this wide is shown at its own size in the book
MIN_FONT_PT = 8  # no text smaller, as shown in the book (legends, annotations)
MIN_BASE_FONT_PT = 9  # tick labels, axis labels and titles

STYLE = {
    "figure.dpi": DPI,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "legend.fontsize": 9,
    "legend.title_fontsize": 9,
    "legend.loc": "best",
    "legend.framealpha": 0.85,
    "figure.titlesize": 11,
    "figure.constrained_layout.use": True,
}


def apply_style() -> None:
    """Set :data:`STYLE` in Matplotlib's ``rcParams`` (done on import of this module)."""
    import matplotlib as mpl

    mpl.rcParams.update(STYLE)


def fit_width(width: float, ncols: int = 1, height: float | None = None) -> tuple[float, float | None]:
    """Per-axes width (and height) in inches so that ``ncols`` axes fit the book's column.

    A request wider than :data:`BOOK_WIDTH_PX` at :data:`DPI` is narrowed to it; the
    height follows, but by no more than a quarter (so a row of panels keeps room)."""
    total, limit = width * ncols, MAX_WIDTH_IN
    if total <= limit:
        return width, height
    f = limit / total
    return width * f, None if height is None else height * max(f, 0.75)


def short_device_name(name: str, max_chars: int = 36) -> str:
    """A machine's name short enough for a plot title, whatever the CPU reports: ``"Intel(R) Xeon(R) Platinum
    8480+ CPU @ 2.00GHz, 2 cores"`` -> ``"Intel Xeon Platinum 8480+, 2 cores"``. Drops trademark marks, the word
    "Processor"/"CPU" and the clock, then cuts the model's name (not a ", N cores" tail) to ``max_chars``
    characters in all, marking the cut with "...".
    Raises ValueError for ``max_chars`` < 8."""
    if max_chars < 8:
        raise ValueError(f"max_chars must be at least 8, got {max_chars!r}")
    s = re.sub(r"\((R|TM|tm|r)\)|\b(Processor|CPU)\b|@\s*[\d.]+\s*GHz", "", str(name))
    s = re.sub(r"\s+,", ",", re.sub(r"\s{2,}", " ", s)).strip(" ,")
    if len(s) <= max_chars:
        return s
    head, sep, tail = s.rpartition(", ")        # keep a ", 2 cores" tail whole; cut the model's name
    if not (sep and re.fullmatch(r"\d+ cores?", tail)):
        head, tail = s, ""
    keep = max(1, max_chars - len(sep + tail) - 3)
    return head[:keep].rstrip(" ,") + "..." + (sep + tail if tail else "")


def new_axes(ncols: int = 1, width: float = 6.0, height: float = 4.0, dpi: int = DPI):
    """A figure with ``ncols`` axes side by side, at most the book's width (:func:`fit_width`); returns ``(fig, axes)``."""
    import matplotlib.pyplot as plt

    width, height = fit_width(width, ncols, height)
    fig, axes = plt.subplots(1, ncols, figsize=(width * ncols, height), dpi=dpi, squeeze=False)
    return fig, axes[0] if ncols > 1 else axes[0, 0]


# Where a point's label may go, in points from the point: right, left, above, below, then the diagonals, farther out.
_LABEL_OFFSETS = [(5, 0, "left", "center"), (-5, 0, "right", "center"), (0, 7, "center", "bottom"),
                  (0, -7, "center", "top"), (5, 7, "left", "bottom"), (-5, 7, "right", "bottom"),
                  (5, -7, "left", "top"), (-5, -7, "right", "top"), (0, 16, "center", "bottom"),
                  (0, -16, "center", "top"), (12, 14, "left", "bottom"), (-12, 14, "right", "bottom"),
                  (12, -14, "left", "top"), (-12, -14, "right", "top"), (0, 26, "center", "bottom"),
                  (0, -26, "center", "top"), (16, 24, "left", "bottom"), (-16, 24, "right", "bottom"),
                  (16, -24, "left", "top"), (-16, -24, "right", "top")]


def label_points(ax, xs, ys, labels, fontsize: float = 8, **kwargs) -> list:
    """Label each point ``(x, y)`` with its text where it covers no earlier label and stays inside the axes.

    Each label tries the positions of ``_LABEL_OFFSETS`` in turn (right of the point first) and keeps the first
    whose rendered box overlaps no label already placed and lies inside the axes; if none is free, the one that
    overlaps least. Call it after the axes' limits and the figure's other text are set: it draws the figure once
    to measure where the labels land. Returns the annotations. ``kwargs`` go to ``ax.annotate`` (a colour, say).
    """
    fig = ax.figure
    fig.canvas.draw()          # lay the figure out first, so the boxes measured are where the labels will be drawn
    renderer = fig.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    placed, out = [], []
    for x, y, text in zip(xs, ys, labels):
        best, best_cost = None, None
        for dx, dy, ha, va in _LABEL_OFFSETS:
            a = ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                            ha=ha, va=va, **kwargs)
            box = a.get_window_extent(renderer).expanded(1.05, 1.15)     # a little air around the text
            cost = sum(box.overlaps(b) for b in placed) + (0 if (box.x0 >= inside.x0 and box.x1 <= inside.x1 and
                                                                 box.y0 >= inside.y0 and box.y1 <= inside.y1) else 2)
            if best_cost is None or cost < best_cost:
                if best is not None:
                    best.remove()
                best, best_cost, best_box = a, cost, box
            else:
                a.remove()
            if cost == 0:
                break
        placed.append(best_box)
        out.append(best)
    return out


def roofline_plot(chips, dtype: str = "bf16", ax=None, intensity=None, mark=None):
    """Attainable FLOP/s against arithmetic intensity for each chip (log-log).

    ``mark``: optional ``{label: intensity}`` points to draw as vertical lines
    (a kernel's FLOP/byte).
    """
    if ax is None:
        _, ax = new_axes()
    I = np.logspace(-1, 4, 400) if intensity is None else np.asarray(intensity)
    for chip in chips:
        c = hardware.get(chip)
        if dtype not in c.peak_flops_per_s:
            continue
        F = c.flops_per_s(dtype)
        ax.loglog(I, roofline.attainable_flops_per_s(I, F, c.hbm_bytes_per_s), label=f"{c.key} ({F / 1e12:.0f} TFLOP/s)")
        ax.plot([F / c.hbm_bytes_per_s], [F], "o", color=ax.lines[-1].get_color(), ms=4)
    for label, x in (mark or {}).items():
        ax.axvline(x, color="gray", ls=":", lw=1)
        ax.text(x, ax.get_ylim()[0] * 1.5, f" {label}", rotation=90, va="bottom", fontsize=9, color="gray")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel(f"attainable {dtype} FLOP/s")
    ax.set_title("Roofline: min(F, intensity x W)\ndot: balance point F/W")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return ax


def decode_vs_batch_plot(model, chip, context=0, n_chips=1, batch=None, ax_cost=None, ax_time=None,
                         weight_dtype="bf16", kv_dtype="bf16", label=None):
    """Cost per token (chip-s) and step time (s) against batch, log axes, with the balance batch marked.

    Batches whose KV cache does not fit are drawn dashed.
    """
    if ax_cost is None or ax_time is None:
        _, (ax_cost, ax_time) = new_axes(2)
    B = np.unique(np.round(np.logspace(0, 4.5, 120))) if batch is None else np.asarray(batch, dtype=float)
    step = serving.decode_step(model, chip, B, context, n_chips, weight_dtype, kv_dtype, check_capacity=False)
    ok = np.asarray(serving.fits_in_hbm(model, chip, B, context, n_chips, weight_dtype, kv_dtype))
    label = label or f"{model} {weight_dtype} on {n_chips} x {chip}, L={context:g}"
    for ax, y in ((ax_cost, step.cost_chip_s_per_token), (ax_time, step.time_s)):
        line, = ax.loglog(B[ok], y[ok], label=label) if ok.any() else ax.loglog([], [], label=label)
        if (~ok).any():
            ax.loglog(B[~ok], y[~ok], ls="--", color=line.get_color(), alpha=0.5)
        bstar = serving.balance_batch(model, chip, context, weight_dtype, kv_dtype)
        if np.isfinite(bstar) and B[0] <= bstar <= B[-1]:
            ax.axvline(bstar, color=line.get_color(), ls=":", lw=1)
        ax.set_xlabel("batch B (sequences per step)")
        ax.grid(True, which="both", alpha=0.3)
    ax_cost.set_ylabel("cost per token (chip-seconds)")
    ax_time.set_ylabel("decode step time (s)")
    ax_cost.set_title("Cost per token\ndotted: balance batch B*")
    ax_time.set_title("Step time (latency per token)\ndashed: does not fit")
    ax_cost.legend()
    return ax_cost, ax_time


def batch_sweep_plot(sweep, ax=None):
    """Measured vs predicted time of ``Y = X @ W`` against batch (a :class:`~llmmath.demos.kernels.BatchSweep`)."""
    if ax is None:
        _, ax = new_axes()
    ax.loglog(sweep.batch, sweep.measured_s, "o-", label="measured (median)")
    ax.loglog(sweep.batch, sweep.predicted_s, "k--", label="roofline floor max(compute, memory)")
    ax.loglog(sweep.batch, sweep.memory_s, ":", color="tab:blue", alpha=0.6, label="memory time (bytes / W)")
    ax.loglog(sweep.batch, sweep.compute_s, ":", color="tab:red", alpha=0.6, label="compute time (FLOPs / F)")
    ax.set_xlabel("batch B (rows of X)")
    ax.set_ylabel("time per product (s)")
    ax.set_title(f"Y = X(Bx{sweep.d_model}) W({sweep.weight_shape[0]}x{sweep.weight_shape[1]}), {sweep.dtype}\n"
                 f"{short_device_name(sweep.device)}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    return ax


apply_style()
