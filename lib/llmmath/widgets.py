"""Thin ipywidgets explorers over the library's pure functions.

An :class:`Explorer` has controls, a figure image and a text panel. Its axes,
ticks, labels and grid are drawn **once** (``setup``), with fixed limits; each
slider move calls ``draw(fig, **values)``, which calls library functions and
returns the few artists that change (curves, markers) plus an HTML message.
Only those artists are drawn onto the saved background (blitting), and the
result is sent to an ``ipywidgets.Image`` as a PNG. A full Matplotlib redraw
costs about 30 ms per log-scaled axes on a 2-core CPU; blitting keeps a slider
answer within the course's 50 ms budget (see ``benchmarks/run.py``).

No compute happens here beyond calling the library; the widget builds headless
(nbval) without a browser. The chapters' explorers live in :mod:`llmmath.explorers`,
one module per chapter; :func:`explorer_for` builds the one the claims ledger names
for a claim.
"""

from __future__ import annotations

import io
import time
from typing import Callable

import numpy as np

__all__ = ["Explorer", "explorer", "explorer_for", "log_axes"]


class Explorer:
    """Controls + a figure image + a text panel. Display ``.widget`` (or the Explorer itself).

    Args:
        setup: ``setup(fig)`` draws the static part (axes with fixed limits, labels, grid).
        draw: ``draw(fig, **values) -> (artists, html)``; the artists are added to the
            axes for this frame only and removed after it is rendered.
        controls: ``{name: ipywidget}``; each value is passed to ``draw`` by name.
    """

    def __init__(self, setup: Callable, draw: Callable, controls: dict, ncols: int = 1,
                 width: float = 5.0, height: float = 3.6):
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
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")  # freeze the layout: the background must not move
        self._background = self.fig.canvas.copy_from_bbox(self.fig.bbox)
        self.image = W.Image(format="png")
        self.text = W.HTML()
        self.last_update_s = float("nan")
        for c in controls.values():
            c.observe(lambda _change: self.update(), names="value")
        self.widget = W.VBox([W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap")),
                              self.image, self.text])
        self.update()

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self) -> float:
        """Recompute and redraw; returns the seconds it took (also kept in ``last_update_s``)."""
        from PIL import Image

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
                a.remove()
        w, h = canvas.get_width_height()
        buf = io.BytesIO()
        Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
            buf, format="png", compress_level=1)
        self.image.value = buf.getvalue()
        self.text.value = msg or ""
        self.last_update_s = time.perf_counter() - t0
        return self.last_update_s

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


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
