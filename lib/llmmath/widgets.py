"""Thin ipywidgets explorers over the library's pure functions.

:func:`explorer` wires controls to a drawing function. Each slider move calls
``draw(fig, **values)`` (which calls library functions and draws), renders the
figure to PNG and swaps it into an ``ipywidgets.Image``; no compute happens here.
The widget works in JupyterLab and builds headless (nbval) without a browser.
"""

from __future__ import annotations

import io
import time
from typing import Callable

__all__ = ["explorer", "Explorer"]


class Explorer:
    """Controls + a figure image + a text panel. ``.widget`` is what a notebook displays."""

    def __init__(self, draw: Callable, controls: dict, ncols: int = 1, width: float = 6.0, height: float = 3.6):
        import ipywidgets as W
        import matplotlib

        # A figure of its own, outside pyplot, so nothing is shown twice inline.
        from matplotlib.figure import Figure

        self._draw = draw
        self.controls = controls
        self.fig = Figure(figsize=(width * ncols, height), dpi=80)
        self.fig.subplots(1, ncols)
        self.image = W.Image(format="png")
        self.text = W.HTML()
        self.last_update_s = float("nan")
        for c in controls.values():
            c.observe(lambda _change: self.update(), names="value")
        self.widget = W.VBox([W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap")),
                              self.image, self.text])
        self._matplotlib = matplotlib
        self.update()

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self) -> float:
        """Recompute and redraw; returns the seconds it took (also in ``last_update_s``)."""
        t0 = time.perf_counter()
        for ax in self.fig.axes:
            ax.clear()
        try:
            msg = self._draw(self.fig, **self.values())
        except (ValueError, KeyError) as e:  # bad combination: say so instead of a traceback
            msg = f"<b style='color:#b00'>{type(e).__name__}:</b> {e}"
        buf = io.BytesIO()
        self.fig.savefig(buf, format="png", bbox_inches="tight")
        self.image.value = buf.getvalue()
        self.text.value = msg or ""
        self.last_update_s = time.perf_counter() - t0
        return self.last_update_s

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def explorer(draw: Callable, controls: dict, ncols: int = 1, **kw) -> Explorer:
    """Build an :class:`Explorer`: ``draw(fig, **values) -> optional HTML string``."""
    return Explorer(draw, controls, ncols=ncols, **kw)
