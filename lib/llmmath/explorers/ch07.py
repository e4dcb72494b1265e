"""Chapter 7: training and serving cost against model size (see :mod:`llmmath.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, log_axes
from . import register

__all__ = ['train_serve_explorer']

_TRAIN_N = np.logspace(9, 13, 400)


def _setup_train_serve(fig):
    ax = fig.axes[0]
    log_axes(ax, (_TRAIN_N[0], _TRAIN_N[-1]), (1e20, 1e28), "model size N (parameters)", "compute (FLOPs)")
    ax.set_title("train to a target loss, then serve: black = total", fontsize=10)


def _draw_train_serve(fig, target_loss, log10_served_tokens, fit):
    from .. import training

    ax = fig.axes[0]
    d_inf = 10.0 ** log10_served_tokens
    tr, inf = training.train_and_serve_flops(_TRAIN_N, target_loss, d_inf, fit)
    tot = tr + inf
    ok = np.isfinite(tot)
    if not ok.any():
        return [], f"no model in this range reaches loss {target_loss} under the {fit} fit"
    i = int(np.argmin(np.where(ok, tot, np.inf)))
    sign = np.sign(np.where(ok, tr - inf, np.nan))
    cross = np.where(ok[:-1] & ok[1:] & (sign[:-1] != sign[1:]))[0]
    arts = [*ax.plot(_TRAIN_N[ok], tr[ok], "C0-", label="training"), *ax.plot(_TRAIN_N, inf, "C1-"),
            *ax.plot(_TRAIN_N[ok], tot[ok], "k-", lw=2), *ax.plot([_TRAIN_N[i]], [tot[i]], "ko")]
    msg = ""
    if cross.size:
        j = int(cross[np.argmin(np.abs(cross - i))])
        arts += ax.plot([_TRAIN_N[j]], [tot[j]], "rs")
        msg = (f"; where training = serving (red square) N = {_TRAIN_N[j]:.3g}, total {tot[j] / tot[i]:.2f}x the minimum")
    d_opt = float(training.tokens_for_loss(_TRAIN_N[i], target_loss, fit))
    return arts, (f"blue: training 6 N D(N); orange: serving 2 N x {d_inf:.1e} tokens. Minimum (dot) at N = "
                  f"{_TRAIN_N[i]:.3g} trained on {d_opt:.3g} tokens ({d_opt / _TRAIN_N[i]:.0f} per parameter)" + msg)


def train_serve_explorer() -> "Explorer":
    """Total compute of training to a loss and then serving, against model size (chapter 7)."""
    import ipywidgets as W

    return explorer(_setup_train_serve, _draw_train_serve, {
        "target_loss": W.FloatSlider(value=2.0, min=1.9, max=2.6, step=0.02, description="target loss"),
        "log10_served_tokens": W.FloatSlider(value=13.0, min=10.0, max=16.0, step=0.25, description="log10 served"),
        "fit": W.Dropdown(options=["epoch", "hoffmann"], value="epoch", description="fit"),
    }, width=7.0)

register('train_serve_explorer', train_serve_explorer)
