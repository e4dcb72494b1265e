"""Thin ipywidgets explorers over the library's pure functions.

An :class:`Explorer` has controls, a figure image and a text panel. Its axes,
ticks, labels and grid are drawn **once** (``setup``), with fixed limits; each
slider move calls ``draw(fig, **values)``, which calls library functions and
returns the few artists that change (curves, markers) plus an HTML message.
Only those artists are drawn onto the saved background (blitting), and the
result is sent to an ``ipywidgets.Image`` as a PNG. A full Matplotlib redraw
costs about 30 ms per log-scaled axes on a 2-core CPU; blitting keeps a slider
answer within the course's budget (50 ms warm, 150 ms for the first move after a
build: ``benchmarks/widgets.py`` times every claim's explorer). So do, where
making artists costs more than drawing them (bars, legends, images, many markers),
artists made once and moved after (:func:`kept`, :func:`kept_line`), and one answer
to a move that sets other controls too (``links``). Each gives the same pixels as
without it.

No compute happens here beyond calling the library; the widget builds headless
(nbval) without a browser. The chapters' explorers live in :mod:`llmmath.course.explorers`,
one module per chapter; :func:`explorer_for` builds the one the claims ledger names
for a claim.
"""

from __future__ import annotations

import contextlib
import math
import time
from typing import Callable

import numpy as np

__all__ = ["Explorer", "explorer", "explorer_for", "kept", "kept_line", "log_axes", "moves", "other_value",
           "relabelled"]

#: Set by a kernel that executes the chapters for the lecture slides
#: (``tools/paginate_slides.py``'s ``draw_figures_for_slides``): ``for_slides(fig) -> px`` redraws an
#: explorer's figure, once its static part is drawn, for a projector (larger text beside its plot,
#: more pixels) and returns its smallest text in px of its image. The explorer's image then carries
#: that size as a CSS class, :data:`SMALLEST_TEXT_CLASS` followed by hundredths of a px, from which
#: the slide template sizes the snapshot. ``None`` (the default, the book and the lab): drawn as is.
for_slides: Callable | None = None
SMALLEST_TEXT_CLASS = "llmmath-smallest-text-px-"


class Explorer:
    """Controls + a figure image + a text panel. Display ``.widget`` (or the Explorer itself).

    Args:
        setup: ``setup(fig)`` draws the static part (axes with fixed limits, labels, grid).
        draw: ``draw(fig, **values) -> (artists, html)``; the artists are added to the
            axes for this frame only and removed after it is rendered (those made with
            :func:`kept` stay, to be moved in the next frame).
        controls: ``{name: ipywidget}``; each value is passed to ``draw`` by name.
        links: ``{name: link(change)}``: when control ``name`` moves, ``link`` (a traitlets
            change handler) may set other controls (a model's own EP/TP, a system's widths);
            the explorer answers once, after the link, with every control set, instead of once
            per control the link moved.

    A control move answers once (:meth:`held`).
    """

    def __init__(self, setup: Callable, draw: Callable, controls: dict, ncols: int = 1,
                 width: float = 5.0, height: float = 3.6, links: dict | None = None):
        import ipywidgets as W
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from . import plots  # the course's figure style (plots.STYLE), and its width limit

        self._draw = draw
        self.controls = controls
        width, height = plots.fit_width(width, ncols, height)
        self.fig = Figure(figsize=(width * ncols, height), dpi=plots.DPI, layout="constrained")
        self.fig.subplots(1, ncols)
        FigureCanvasAgg(self.fig)
        setup(self.fig)
        for ax in self.fig.axes:
            ax.set_autoscale_on(False)
        smallest_text_px = for_slides(self.fig) if for_slides is not None else None
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")  # freeze the layout: the background must not move
        self._background = self.fig.canvas.copy_from_bbox(self.fig.bbox)
        self.image = W.Image(format="png")
        if smallest_text_px:
            self.image.add_class(f"{SMALLEST_TEXT_CLASS}{round(smallest_text_px * 100)}")
        self.text = W.HTML()
        self.last_update_s = float("nan")
        self._links = dict(links or {})
        unknown = set(self._links) - set(controls)
        if unknown:
            raise KeyError(f"links name controls the explorer does not have: {sorted(unknown)}")
        self._held, self._stale = 0, False
        for name, c in controls.items():
            c.observe(lambda change, name=name: self._moved(name, change), names="value")
        self.widget = W.VBox([W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap")),
                              self.image, self.text])
        self.update()

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def _moved(self, name: str, change) -> None:
        with self.held():
            self._stale = True
            if name in self._links:
                self._links[name](change)

    @contextlib.contextmanager
    def held(self):
        """``with explorer.held(): ...`` sets several controls and answers once, at the end (if one moved)."""
        self._held += 1
        try:
            yield self
        finally:
            self._held -= 1
            if not self._held and self._stale:
                self._stale = False
                self.update()

    def update(self) -> float:
        """Recompute and redraw; returns the seconds it took (also kept in ``last_update_s``)."""
        t0 = time.perf_counter()
        canvas = self.fig.canvas
        canvas.restore_region(self._background)
        artists = []
        try:
            artists, msg = self._draw(self.fig, **self.values())
            for a in artists:
                a.axes.draw_artist(a)
        except (ValueError, KeyError) as e:  # an impossible combination: say so, no traceback
            msg = f"<b style='color:#b00'>{type(e).__name__}:</b> {e}"
        finally:
            for a in artists:
                if not getattr(a, "_llmmath_kept", False):
                    a.remove()
            for ax in self.fig.axes:      # a bar call's container outlives its removed bars: legends would repeat
                ax.containers[:] = [c for c in ax.containers if any(getattr(x, "axes", None) is not None for x in c)]
            for a in _kept_artists(self.fig):  # hidden till a frame asks for them again (kept)
                a.set_visible(False)
        self.image.value = _png(canvas)
        self.text.value = msg or ""
        self.last_update_s = time.perf_counter() - t0
        return self.last_update_s

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def _png(canvas) -> bytes:
    """The canvas's pixels as PNG bytes (Pillow, fastest compression: the PNG is sent on every slider move)."""
    import io

    from PIL import Image

    w, h = canvas.get_width_height(physical=True)
    buf = io.BytesIO()
    Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(buf, format="png",
                                                                                      compress_level=1)
    return buf.getvalue()


def kept(fig, key, make: Callable):
    """The artists ``make()`` made the first time ``fig`` asked for ``key``: made once, updated in place after.

    For a ``draw`` whose artists are costly to make (a bar chart's patches, an image): ``draw`` sets their
    data (``set_height``, ``set_data``, ``set_facecolor`` ...) and returns them like the others; the explorer
    draws them and leaves them in their axes for the next frame instead of removing them. Between frames they
    are hidden, and asking for them shows them again: a full redraw of the figure during a frame draws that
    frame's artists, one between frames the background alone, as without them.
    ``make`` may return one artist or a sequence of them (a ``BarContainer``, a list); it is returned as made.
    """
    store = fig.__dict__.setdefault("_llmmath_kept", {})
    if key not in store:
        store[key] = make()
        for a in _flat(store[key]):
            a._llmmath_kept = True
    for a in _flat(store[key]):
        a.set_visible(True)
    return store[key]


def _flat(made) -> list:
    return list(made) if isinstance(made, (list, tuple)) else [made]  # a BarContainer is a tuple


def _kept_artists(fig) -> list:
    """Every artist :func:`kept` made for ``fig``."""
    return [a for made in getattr(fig, "_llmmath_kept", {}).values() for a in _flat(made)]


def kept_line(ax, key, x, y, *fmt, **kw):
    """``ax.plot(x, y, *fmt, **kw)``'s line, made the first time (:func:`kept`, under ``key`` in ``ax``) and
    given the new ``x``, ``y`` every frame after: the same pixels at a fraction of the cost of a new line."""
    line = kept(ax.figure, ("line", ax, key), lambda: ax.plot([], [], *fmt, **kw)[0])
    line.set_data(x, y)
    return line


def relabelled(legend, labels):
    """``legend`` (a kept one) with its entries' texts set to ``labels``, in order; returns it."""
    texts = legend.get_texts()
    if len(texts) != len(labels):
        raise ValueError(f"the legend has {len(texts)} entries, {len(labels)} labels were given")
    for text, label in zip(texts, labels):
        text.set_text(label)
    return legend


def log_axes(ax, xlim, ylim, xlabel: str, ylabel: str, logx: bool = True, logy: bool = True) -> None:
    """Fixed limits, labels and a light grid on log (or linear) axes: an explorer's usual ``setup``."""
    ax.set_xscale("log" if logx else "linear")
    ax.set_yscale("log" if logy else "linear")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both" if logx or logy else "major", alpha=0.3)


def explorer(setup: Callable, draw: Callable, controls: dict, ncols: int = 1, **kw) -> Explorer:
    """Build an :class:`Explorer` (see its docstring for ``setup`` and ``draw``)."""
    return Explorer(setup, draw, controls, ncols=ncols, **kw)


def moves(control, n: int) -> list:
    """``n`` successive values for ``control``, each allowed and different from the one before it (the
    first different from the current value): how a test or a benchmark moves a control headless.

    A dropdown (or selection slider, radio or toggle buttons) cycles through its options; a checkbox
    toggles; a slider visits its maximum, its minimum and three points between, on its step (a
    ``FloatLogSlider``'s ``min``/``max`` are exponents of its ``base``).

    Raises:
        TypeError: a control of another kind (the message names it).
        ValueError: a control with one allowed value.
    """
    import ipywidgets as W

    if isinstance(control, (W.Dropdown, W.Select, W.RadioButtons, W.ToggleButtons, W.SelectionSlider)):
        stops = [o[1] if isinstance(o, tuple) else o for o in control.options]
    elif isinstance(control, (W.Checkbox, W.ToggleButton)):
        stops = [not control.value, control.value]
    elif isinstance(control, W.FloatLogSlider):
        lo, hi = control.min, control.max
        stops = [control.base ** e for e in (hi, lo, *(lo + (hi - lo) * f for f in (0.25, 0.5, 0.75)))]
    elif isinstance(control, (W.IntSlider, W.FloatSlider, W.BoundedIntText, W.BoundedFloatText)):
        lo, hi, step = control.min, control.max, (control.step or 1)
        stops = [hi, lo, *(min(hi, lo + round((hi - lo) * f / step) * step) for f in (0.25, 0.5, 0.75))]
    else:
        raise TypeError(f"no way to move a {type(control).__name__} is known here")
    stops = list(dict.fromkeys(stops))  # in order, once each
    out, last, i = [], control.value, 0
    while len(out) < n and len(stops) > 1:
        v = stops[i % len(stops)]
        i += 1
        if v != last:
            out.append(v)
            last = v
    if len(out) < n:
        raise ValueError(f"a {type(control).__name__} with one allowed value cannot be moved")
    return out


def other_value(control):
    """An allowed value of ``control`` other than its current one (:func:`moves`' first)."""
    return moves(control, 1)[0]


def explorer_for(claim_id: int) -> Explorer:
    """Claim ``claim_id``'s explorer, as the claims ledger records it (``explorer`` in claims.toml).

    Raises:
        KeyError: no such claim, or the claim has no explorer yet (the message says which).
    """
    from . import claims, explorers

    c = claims.get(claim_id)
    if not c.explorer:
        raise KeyError(f"claim {c.id} ({c.timestamp}) has no explorer yet; explorers: {', '.join(explorers.names())}")
    return explorers.get(c.explorer)()
