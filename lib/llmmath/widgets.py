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
artists made once and moved after (:func:`kept`, :func:`kept_line`); a PNG written
without Pillow's row filters (:func:`png_bytes`); text drawn through a cache of its
glyphs (:func:`_keep_glyphs`); and one answer to a move that sets other controls
too (``links``). Each gives the same pixels as without it.

No compute happens here beyond calling the library; the widget builds headless
(nbval) without a browser. The chapters' explorers live in :mod:`llmmath.explorers`,
one module per chapter; :func:`explorer_for` builds the one the claims ledger names
for a claim.
"""

from __future__ import annotations

import contextlib
import math
import struct
import time
import zlib
from typing import Callable

import numpy as np

__all__ = ["Explorer", "explorer", "explorer_for", "kept", "kept_line", "log_axes", "moves", "other_value",
           "png_bytes", "relabelled"]


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

    A control move answers once (:meth:`held`); every frame draws its text through a cache of
    the glyphs it has drawn before (:func:`_keep_glyphs`).
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
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")  # freeze the layout: the background must not move
        self._background = self.fig.canvas.copy_from_bbox(self.fig.bbox)
        self.image = W.Image(format="png")
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
        _keep_glyphs(canvas.get_renderer())
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
            for a in _kept_artists(self.fig):  # hidden till a frame asks for them again (kept)
                a.set_visible(False)
        self.image.value = png_bytes(canvas.buffer_rgba())
        self.text.value = msg or ""
        self.last_update_s = time.perf_counter() - t0
        return self.last_update_s

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


#: Whether explorers draw text through a cache of the glyphs they have drawn before (:func:`_keep_glyphs`).
KEEP_GLYPHS = True
_GLYPHS_KEPT = 20_000  # glyph images per figure before the cache starts again (each a few hundred bytes)


def _keep_glyphs(renderer) -> None:
    """Make Matplotlib's Agg ``renderer`` (one explorer's) keep each glyph image and each line's layout it draws.

    Why: Matplotlib 3.11 lays out every text with libraqm and rasterizes it one glyph at a time, on
    every draw: about 0.1 ms a glyph on a 2-core CPU, so a legend of four labels costs ~15 ms a frame,
    though the same few glyphs are drawn at the same sub-pixel offsets frame after frame. This keeps
    (per renderer) each line's layout, keyed by its text, font and features, and each glyph's
    bitmap, keyed by font, size, glyph, transform and the glyph's position modulo one pixel (its
    1/64-pixel phase): FreeType renders a glyph moved by whole pixels into the same bitmap, moved.
    The pixels are the same as without it (``tests/test_kernels_widgets.py`` compares them).

    A no-op where Matplotlib draws text otherwise (before 3.11: whole strings at once), when
    :data:`KEEP_GLYPHS` is false, or when ``renderer`` already keeps its glyphs.
    """
    cls = type(renderer)
    if (not KEEP_GLYPHS or getattr(renderer, "_llmmath_keeps_glyphs", False)
            or not hasattr(cls, "_draw_text_glyphs_and_boxes") or not hasattr(renderer, "_prepare_font")):
        return
    from matplotlib.backends.backend_agg import get_hinting_flag
    from matplotlib.ft2font import FT2Font, RenderMode

    if not (hasattr(FT2Font, "_render_glyph") and hasattr(FT2Font, "_set_transform") and hasattr(FT2Font, "_layout")):
        return
    plain_glyphs, plain_text = cls._draw_text_glyphs_and_boxes, cls.draw_text
    bitmaps, layouts, matrices, heights = {}, {}, {}, {}

    def draw_glyphs(gc, x, y, angle, glyphs, boxes):
        # backend_agg.RendererAgg._draw_text_glyphs_and_boxes (Matplotlib 3.11), with the bitmaps kept
        if boxes:  # mathtext's rules: as Matplotlib draws them
            return plain_glyphs(renderer, gc, x, y, angle, glyphs, boxes)
        cos, sin = math.cos(math.radians(angle)), math.sin(math.radians(angle))
        flags, aa, height = get_hinting_flag(), gc.get_antialiased(), renderer.height
        if len(bitmaps) > _GLYPHS_KEPT:
            bitmaps.clear()
            layouts.clear()
        for font, size, index, slant, extend, dx, dy in glyphs:  # dy is upwards
            m = matrices.get((angle, slant, extend))
            if m is None:
                m = matrices[angle, slant, extend] = tuple(map(tuple, (
                    0x10000 * np.array([[cos, -sin], [sin, cos]]) @ [[extend, extend * slant], [0, 1]]
                ).round().astype(int).tolist()))
            px, py = round(0x40 * (x + dx * cos - dy * sin)), round(0x40 * (height - y + dx * sin + dy * cos))
            key = (font, size, index, m, px & 63, py & 63, flags, aa)
            kept = bitmaps.get(key)
            if kept is None:
                font.set_size(size, renderer.dpi)
                font._set_transform(m, [px & 63, py & 63])
                bitmap = font._render_glyph(index, flags, RenderMode.NORMAL if aa else RenderMode.MONO)
                buffer = bitmap.buffer if aa else bitmap.buffer * 0xff
                kept = bitmaps[key] = (buffer, bitmap.left, bitmap.top)
            buffer, left, top = kept
            # the whole pixels of the position move the bitmap (FreeType's y is upwards, the image's down)
            renderer._renderer.draw_text_image(buffer, left + (px >> 6), int(height) - (top + (py >> 6))
                                               + buffer.shape[0], 0, gc)

    def draw_text(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        # backend_agg.RendererAgg.draw_text (Matplotlib 3.11), with each line's layout kept
        if ismath:
            return plain_text(renderer, gc, x, y, s, prop, angle, ismath, mtext)
        features = mtext.get_fontfeatures() if mtext is not None else None
        language = mtext.get_language() if mtext is not None else None
        flags = get_hinting_flag()
        try:
            key = (s, hash(prop), features, language, flags)
            items = layouts.get(key)
        except TypeError:  # unhashable features or language: lay it out every time
            key, items = None, None
        if items is None:
            font = renderer._prepare_font(prop)
            items = [(i.ft_object, i.glyph_index, i.x, i.y)
                     for i in font._layout(s, flags=flags, features=features, language=language)]
            if key is not None:
                layouts[key] = items
        size = prop.get_size_in_points()
        draw_glyphs(gc, x, y, angle, ((f, size, g, 0, 1, gx, gy) for f, g, gx, gy in items), [])

    def font_height_metrics(prop):
        # the font's ascent, descent and line gap that Text._get_layout (Matplotlib 3.11) reads from its
        # OS/2 or hhea table on every layout, kept per font (Text asks renderers for them first)
        key = hash(prop)
        if key not in heights:
            heights[key] = _font_height_metrics(prop, renderer.dpi)
        return heights[key]

    renderer._draw_text_glyphs_and_boxes = draw_glyphs
    if not hasattr(renderer, "_get_font_height_metrics"):
        renderer._get_font_height_metrics = font_height_metrics
    renderer.draw_text = draw_text
    renderer._llmmath_keeps_glyphs = True


def _font_height_metrics(prop, dpi: float) -> tuple:
    """``(ascent, descent, line gap)`` in pixels of the font ``prop`` names, from its OS/2 or hhea table;
    ``(None, None, None)`` where it has neither. As ``matplotlib.text.Text._get_layout`` (3.11) reads them."""
    from matplotlib.font_manager import fontManager, get_font

    font = get_font(fontManager._find_fonts_by_props(prop))
    for table_name, gap, ascent, descent in (("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
                                              ("hhea", "lineGap", "ascent", "descent")):
        table = font.get_sfnt_table(table_name)
        if table is None:
            continue
        scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * prop.get_size_in_points() * dpi / 72
        return table[ascent] * scale, -table[descent] * scale, table[gap] * scale
    return None, None, None


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bytes(rgba) -> bytes:
    """An RGBA image (``(height, width, 4)`` uint8, e.g. a canvas's ``buffer_rgba()``) as PNG bytes.

    Every row is stored unfiltered and deflated at zlib level 1: the same pixels and about the same
    size as Pillow's ``compress_level=1``, in about a third of its time (Pillow tries five row filters
    per row; a plot, mostly flat colour, gains little from them). The PNG is sent on every slider move.
    """
    a = np.asarray(rgba, dtype=np.uint8)
    if a.ndim != 3 or a.shape[2] != 4:
        raise ValueError(f"png_bytes wants a (height, width, 4) RGBA array, got shape {a.shape}")
    h, w, _ = a.shape
    rows = np.empty((h, 1 + 4 * w), np.uint8)
    rows[:, 0] = 0                      # filter type 0 (none) on every row
    rows[:, 1:] = a.reshape(h, 4 * w)
    return b"".join((b"\x89PNG\r\n\x1a\n",
                     _png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)),  # 8-bit RGBA
                     _png_chunk(b"IDAT", zlib.compress(rows, 1)),
                     _png_chunk(b"IEND", b"")))


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
