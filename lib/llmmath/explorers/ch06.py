"""Chapter 6: pipeline schedules and bubbles (see :mod:`llmmath.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer
from . import register

__all__ = ['pipeline_explorer']


def _setup_pipeline(fig):
    ax = fig.axes[0]
    ax.set_xlim(0, 1)
    ax.set_ylim(8.5, -0.5)
    ax.set_xlabel("time (fraction of the whole schedule)")
    ax.set_ylabel("pipeline stage")
    ax.set_yticks(range(8))
    ax.grid(True, axis="x", alpha=0.3)


def _draw_pipeline(fig, kind, stages, microbatches, backward_over_forward):
    from .. import parallelism

    ax = fig.axes[0]
    fwd_only = kind == "inference (forward only)"
    ev = parallelism.pipeline_schedule(stages, microbatches, "gpipe" if kind == "GPipe" else "1f1b",
                                       forward_s=1.0, backward_s=backward_over_forward, forward_only=fwd_only)
    span = max(e[4] for e in ev)
    artists = []
    for phase, color in (("F", "C0"), ("B", "C1")):
        for s in range(stages):
            bars = [(e[3] / span, (e[4] - e[3]) / span) for e in ev if e[0] == s and e[2] == phase]
            if bars:
                artists.append(ax.broken_barh(bars, (s - 0.4, 0.8), facecolors=color, edgecolors="white", linewidth=0.5))
    busy = sum(e[4] - e[3] for e in ev) / (stages * span)
    formula = parallelism.bubble_fraction(stages, microbatches)
    note = ("<br>This is one pass. In decode each micro-batch returns to stage 0 for its next token, so with "
            "m >= p the fill and drain of consecutive passes interlock and the steady state has no bubble."
            if fwd_only else "")
    return artists, (f"{kind}: {stages} stages x {microbatches} micro-batches; blue = forward, orange = backward. "
                     f"Idle (bubble) fraction simulated {1 - busy:.1%}; formula (p-1)/(m+p-1) = {formula:.1%}" + note)


def pipeline_explorer() -> Explorer:
    """A pipeline timeline (GPipe, 1F1B, or forward-only inference) from :func:`llmmath.parallelism.pipeline_schedule`."""
    import ipywidgets as W

    return explorer(_setup_pipeline, _draw_pipeline, {
        "kind": W.Dropdown(options=["1F1B", "GPipe", "inference (forward only)"], value="1F1B", description="schedule"),
        "stages": W.IntSlider(value=4, min=1, max=8, description="stages p"),
        "microbatches": W.IntSlider(value=8, min=1, max=16, description="micro-batches m"),
        "backward_over_forward": W.FloatSlider(value=2.0, min=1.0, max=3.0, step=0.5, description="t_B / t_F"),
    }, width=7.0)

register('pipeline_explorer', pipeline_explorer)
