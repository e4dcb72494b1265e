"""Chapter 1: decode step time and cost per token against batch (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer
from . import register

__all__ = ['decode_explorer']

_BATCH = np.unique(np.round(np.logspace(0, 4.5, 100)))


def _setup_decode(fig):
    axc, axt = fig.axes
    for ax, ylabel, ylim in ((axc, "cost per token (chip-seconds)", (1e-7, 1.0)),
                             (axt, "decode step time (s)", (1e-5, 100.0))):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(_BATCH[0], _BATCH[-1])
        ax.set_ylim(*ylim)
        ax.set_xlabel("batch B (sequences per step)")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    axc.set_title("cost per token; dotted: balance batch", fontsize=10)
    axt.set_title("step time; dashed: does not fit in HBM", fontsize=10)


def _steps(model, chip, batch, context, n_chips, weight_dtype, kv_dtype, layout):
    """Decode steps at ``batch`` in the chosen layout: ``pooled`` (:func:`llmmath.serving.decode_step`) or
    ``expert-parallel`` (:func:`llmmath.serving.expert_parallel_decode_step`: the busiest chip's experts)."""
    from ... import serving

    if layout == "expert-parallel":
        return serving.expert_parallel_decode_step(model, chip, batch, context, n_chips, weight_dtype, kv_dtype,
                                                   check_capacity=False)
    return serving.decode_step(model, chip, batch, context, n_chips, weight_dtype, kv_dtype, check_capacity=False)


def _draw_decode(fig, model, chip, log2_batch, context, n_chips, weight_dtype, kv_dtype, layout="pooled"):
    from ... import hardware, models, serving
    from ...units import dtype_bytes, fmt_seconds

    axc, axt = fig.axes
    m = models.get(model)
    layout = layout if m.is_moe else "pooled"          # a dense model has no experts to place
    B = 2.0 ** log2_batch
    curve = _steps(model, chip, _BATCH, context, n_chips, weight_dtype, kv_dtype, layout)
    ok = np.asarray(serving.fits_in_hbm(model, chip, _BATCH, context, n_chips, weight_dtype, kv_dtype))
    s = _steps(model, chip, B, context, n_chips, weight_dtype, kv_dtype, layout)
    bstar = serving.balance_batch(model, chip, context, weight_dtype, kv_dtype)
    most = serving.max_batch(model, chip, context, n_chips, weight_dtype, kv_dtype)
    artists = []
    for ax, y, here in ((axc, curve.cost_chip_s_per_token, s.cost_chip_s_per_token), (axt, curve.time_s, s.time_s)):
        artists += ax.plot(_BATCH[ok], y[ok], "C0-", lw=2)
        artists += ax.plot(_BATCH[~ok], y[~ok], "C0--", alpha=0.5)
        artists += ax.plot([B], [here], "ko")
        if np.isfinite(bstar) and layout == "pooled":
            artists.append(ax.axvline(bstar, color="C0", ls=":"))
    fits = serving.fits_in_hbm(model, chip, B, context, n_chips, weight_dtype, kv_dtype)
    one = _steps(model, chip, 1, context, n_chips, weight_dtype, kv_dtype, layout)
    best = float(np.min(curve.cost_chip_s_per_token[ok])) if ok.any() else float("nan")
    all_weights_s = m.weights_read_params * dtype_bytes(weight_dtype) / (n_chips * hardware.get(chip).hbm_bytes_per_s)
    where = ("the experts spread over the chips, the busiest chip setting each step" if layout == "expert-parallel"
             else "every chip's bandwidth pooled")
    floor4 = (f"Claim 4: reading all the weights takes {fmt_seconds(all_weights_s)} ({where}); the B = 1 step is "
              f"{fmt_seconds(one.time_s)}" + (", less: one token touches only its experts, and the busiest chip "
                                              "sets the step" if m.is_moe and layout == "expert-parallel" else
                                              ", less: one token touches only its experts (pooled: as if any chip "
                                              "could read them)" if m.is_moe else
                                              f", {one.weight_s / one.time_s:.0%} of it the weight read") + ". ")
    return artists, (
        f"<b>{model}</b>, {weight_dtype} weights, {kv_dtype} KV, on {n_chips} x {chip}, context {context}, {layout}:<br>"
        f"B = {B:.0f}: step {fmt_seconds(s.time_s)} ({'compute' if s.compute_bound else 'memory'}-bound; "
        f"compute {fmt_seconds(s.compute_s)}, weights {fmt_seconds(s.weight_s)}, KV {fmt_seconds(s.kv_s)}), "
        f"{s.cost_chip_s_per_token:.3g} chip-s/token, MFU {s.mfu:.0%}.<br>Balance batch B* = "
        f"{'none: KV-bound at this context' if not np.isfinite(bstar) else f'{bstar:.0f}'} (pooled); "
        f"{'fits' if fits else '<b>does not fit</b>'} in HBM ({_largest_batch_note(most, context)}).<br>"
        f"Claim 2: B = 1 costs {one.cost_chip_s_per_token / s.cost_chip_s_per_token:,.0f}x this batch per token"
        + (f" and {one.cost_chip_s_per_token / best:,.0f}x the cheapest batch that fits. " if np.isfinite(best)
           else ". ")
        + floor4
        + f"Claim 8: each read of the weights now serves {B:.0f} token{'s' if B > 1 else ''}, "
        f"and {1 - s.mfu:.0%} of the chips' FLOP/s sit idle this step.")


def _largest_batch_note(most, context):
    """'largest batch that fits', saying what it means where there is no KV cache or no room for the weights."""
    if context == 0:
        return ("no KV cache at context 0: any batch fits the KV; the weights alone decide, and they "
                + ("fit" if most > 0 else "<b>do not fit</b>"))
    return f"largest batch that fits: {most:,.0f}" if most > 0 else "<b>the weights alone do not fit</b>: add chips"


def decode_explorer(model: str = "llama-3.1-70b", chip: str = "h100-sxm", log2_batch: int = 6,
                    context: int = 0, n_chips: int = 8, weight_dtype: str = "bf16",
                    layout: str = "pooled") -> Explorer:
    """Cost per token and step time against batch (from :func:`llmmath.serving.decode_step`, or for a
    mixture of experts :func:`llmmath.serving.expert_parallel_decode_step` with ``layout="expert-parallel"``),
    with sliders for batch, context and chip count and dropdowns for model, chip, precisions and layout."""
    import ipywidgets as W

    from ... import hardware, models

    return explorer(_setup_decode, _draw_decode, {
        "model": W.Dropdown(options=models.names(), value=model, description="model"),
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "log2_batch": W.IntSlider(value=log2_batch, min=0, max=14, description="log2 B"),
        "context": W.IntSlider(value=context, min=0, max=131072, step=1024, description="context L"),
        "n_chips": W.IntSlider(value=n_chips, min=1, max=72, description="chips"),
        "weight_dtype": W.Dropdown(options=["bf16", "fp8", "fp4"], value=weight_dtype, description="weights"),
        "kv_dtype": W.Dropdown(options=["bf16", "fp8"], value="bf16", description="KV"),
        "layout": W.Dropdown(options=["pooled", "expert-parallel"], value=layout, description="experts"),
    }, ncols=2)

register('decode_explorer', decode_explorer)
