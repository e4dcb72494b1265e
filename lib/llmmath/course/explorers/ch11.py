"""Chapter 11: the serving planner as an explorer (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, log_axes
from . import register

__all__ = ['planner_explorer']

_B = np.unique(np.round(np.logspace(0, 6, 160)))

#: placements by name: (tp, ep, dp) as a function of the chip count n
_PLACEMENTS = {
    "TP = chips (one replica)": lambda m, n: (n, 1, 1),
    "wide EP: EP = DP = chips": lambda m, n: (1, n if m.is_moe else 1, n),
    "one replica per chip": lambda m, n: (1, 1, 1),
}
_DTYPES = {"bf16": "bf16", "fp8": "fp8", "fp4": "fp4", "NVFP4 (0.5625 B)": 0.5625}


def _setup_planner(fig):
    ax, ax2 = fig.axes
    log_axes(ax, (1, 1e6), (1, 1e6), "batch (sequences over the whole deployment)",
             "output tokens/s per chip (ceiling)")
    log_axes(ax2, (1, 1e6), (0.1, 1e4), "batch (sequences over the whole deployment)",
             "tokens/s per user (ceiling)")
    ax.set_title("throughput per chip", fontsize=9)
    ax2.set_title("speed each user sees", fontsize=9)


def _draw_planner(fig, model, chip, chips, placement, weight_dtype, kv_dtype, log2_context):
    from ... import models, planner

    ax, ax2 = fig.axes
    m = models.get(model)
    tp, ep, dp = _PLACEMENTS[placement](m, chips)
    context = 2 ** log2_context
    kw = dict(weight_dtype=_DTYPES[weight_dtype], kv_dtype=_DTYPES[kv_dtype], tp=tp, ep=ep, dp=dp)
    p = planner.plan(m, chip, chips, context=context, **kw)
    sw = planner.decode_sweep(m, chip, chips, context, _B, **kw)
    fits = sw["fits"]
    artists = []
    for a, y in ((ax, sw["tokens_per_s_per_chip"]), (ax2, sw["tokens_per_s_per_user"])):
        artists += a.plot(_B[fits], y[fits], "-", color="C0", lw=2)
        artists += a.plot(_B[~fits], y[~fits], "--", color="0.6", lw=1.5)       # does not fit in HBM
    if p.max_batch >= 1:
        for a in (ax, ax2):
            artists.append(a.axvline(p.max_batch, color="C3", ls=":", lw=1))
    if np.isfinite(p.balance_batch):
        for a in (ax, ax2):
            artists.append(a.axvline(p.balance_batch, color="C2", ls="--", lw=1))
    o = p.at_batch
    fit_text = ("fits" if p.weights_fit else "<b style='color:#b00'>the weights do not fit: grey dashed curves "
                "are not a configuration that runs</b>")
    bal = f"{p.balance_batch:,.0f}" if np.isfinite(p.balance_batch) else "none (KV reads outrun compute)"
    return artists, (
        f"<b>{m.key}</b> on {p.n_chips} x {p.chip}, {placement}: TP{tp} EP{ep} DP{dp} ({p.replicas} replica(s)), weights "
        f"{weight_dtype}, KV {kv_dtype}, context {context:,}: {fit_text}. Weights {p.weight_bytes_per_chip / 1e9:.1f} GB "
        f"per chip; max batch <b>{p.max_batch:,.0f}</b> (red dotted); balance batch {bal} (green dashed).<br>"
        f"At the max batch: step {o.step_time_s * 1e3:.2f} ms, {o.tokens_per_s_per_user:,.1f} tok/s per user, "
        f"{o.tokens_per_s_per_chip:,.0f} tok/s per chip, bound by {o.binds}; time to first token of a "
        f"{p.prompt_tokens:,}-token prompt {p.ttft_s * 1e3:.1f} ms. Every number is a roofline floor (times) or "
        f"ceiling (rates).")


def planner_explorer(model: str = "llama-3.1-70b", chip: str = "h200", chips: int = 8) -> Explorer:
    """The planner (:func:`llmmath.planner.plan`) over model, chip, chip count, placement, dtypes and context."""
    import ipywidgets as W

    from ... import hardware, models

    return explorer(_setup_planner, _draw_planner, {
        "model": W.Dropdown(options=models.names(), value=model, description="model"),
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "chips": W.Dropdown(options=[1, 2, 4, 8, 16, 32, 64, 72, 128, 144], value=chips, description="chips"),
        "placement": W.Dropdown(options=list(_PLACEMENTS), value="TP = chips (one replica)", description="placement"),
        "weight_dtype": W.Dropdown(options=list(_DTYPES), value="fp8", description="weights"),
        "kv_dtype": W.Dropdown(options=list(_DTYPES)[:3], value="bf16", description="KV cache"),
        "log2_context": W.IntSlider(value=13, min=8, max=17, description="log2 context"),
    }, ncols=2, width=4.6, height=3.4)


register('planner_explorer', planner_explorer)
