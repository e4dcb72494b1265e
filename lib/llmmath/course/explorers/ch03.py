"""Chapter 3: the balance batch -- against context and capacity, past it, against model size, and
against sparsity (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, kept_line, log_axes
from . import register

__all__ = ['balance_explorer', 'utilization_explorer', 'size_explorer', 'sparsity_explorer']

_L = np.linspace(0, 65536, 200)
_X = np.logspace(-1, 1.2, 200)
_U = np.logspace(1, 5, 120)
_MOE_BASES = ("deepseek-v3", "qwen3-235b-a22b", "kimi-k2")


def _no_kv_note(context, fits_weights):
    """What 'largest batch that fits' means at context 0 (no KV cache)."""
    if context > 0:
        return None
    return ("no KV cache at L = 0: any batch fits the KV; the weights alone decide, and they "
            + ("fit." if fits_weights else "<b>do not fit</b>."))


def _setup_balance(fig):
    ax = fig.axes[0]
    log_axes(ax, (0, _L[-1]), (10, 1e6), "context L (tokens)", "batch (sequences)", logx=False)
    ax.set_title("B* vs context (blue, dashed where it does not fit); black dashed: largest batch that fits",
                 fontsize=9)


def _draw_balance(fig, chip, model, weight_dtype, n_chips, context):
    from ... import serving

    ax = fig.axes[0]
    total = serving.balance_batch(model, chip, _L, weight_dtype, weight_dtype)
    ok = np.asarray(serving.balance_batch_fits(model, chip, _L, n_chips, weight_dtype, weight_dtype))
    expert = serving.balance_batch(model, chip, _L, weight_dtype, weight_dtype, sparsity="expert")
    fit = serving.max_batch(model, chip, _L, n_chips, weight_dtype, weight_dtype)  # inf at L = 0: not drawn
    here = serving.balance_batch(model, chip, context, weight_dtype, weight_dtype)
    here_ok = bool(serving.balance_batch_fits(model, chip, context, n_chips, weight_dtype, weight_dtype))
    lmax = serving.kv_limit_context(model, chip, weight_dtype, weight_dtype)
    most = serving.max_batch(model, chip, context, n_chips, weight_dtype, weight_dtype)
    arts = [*ax.plot(_L[ok], total[ok], "C0-", lw=2), *ax.plot(_L[~ok], total[~ok], "C0--", alpha=0.4),
            *ax.plot(_L, expert, "C1:", lw=2), *ax.plot(_L, fit, "k--"), ax.axvline(context, color="gray", lw=0.8)]
    if np.isfinite(here):
        arts += ax.plot([context], [here], "ko" if here_ok else "kx")
    weights_fit = bool(serving.fits_in_hbm(model, chip, 1, 0, n_chips, weight_dtype, weight_dtype))
    cap = (_no_kv_note(context, weights_fit) or (f"{most:,.0f} sequences fit at this context" if weights_fit
           else "<b>the weights alone do not fit</b>: add chips"))
    verdict = ("<b>none</b>: KV-bound at this context" if not np.isfinite(here)
               else f"<b>{here:,.0f}</b>" + ("" if here_ok else " (<b>does not fit</b> on these chips)"))
    return arts, (f"{model} on {chip}, {weight_dtype}: B* = {verdict} at L = {context:,} (blue, whole "
                  f"step; at L = 0 it is R x N_tot/N_act = {total[0]:,.0f}); per expert (orange) {expert[0]:,.0f}; "
                  f"no batch balances past L_max = {lmax:,.0f}.<br>On {n_chips} x {chip}: {cap}")


def balance_explorer(chip: str = "h100-sxm", model: str = "deepseek-v3", weight_dtype: str = "fp8",
                     n_chips: int = 16) -> Explorer:
    """Claims 9 and 11: the balance batch B*(L) (:func:`llmmath.serving.balance_batch`, both sparsities)
    against context, beside the largest batch whose KV fits (:func:`llmmath.serving.max_batch`)."""
    import ipywidgets as W

    from ... import hardware, models

    return explorer(_setup_balance, _draw_balance, {
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "model": W.Dropdown(options=models.names(), value=model, description="model"),
        "weight_dtype": W.Dropdown(options=["bf16", "fp8"], value=weight_dtype, description="weights, KV"),
        "n_chips": W.IntSlider(value=n_chips, min=1, max=72, description="chips"),
        "context": W.IntSlider(value=4096, min=0, max=65536, step=1024, description="context L"),
    }, width=7.0)


def _setup_util(fig):
    from ... import serving

    ax = fig.axes[0]
    log_axes(ax, (_X[0], _X[-1]), (0, 1.05), "B / B*", "fraction of peak FLOP/s", logy=False)
    ax.plot(_X, serving.utilization_vs_balance(_X, "max"), color="0.7")
    ax.plot(_X, serving.utilization_vs_balance(_X, "sum"), color="0.7", ls="--")
    ax.axvspan(2, 3, color="C2", alpha=0.15)
    ax.set_title("grey: full overlap / none; green: 2-3x B*", fontsize=9)


def _draw_util(fig, log2_batch, overlap_fraction, model, chip, weight_dtype):
    from ... import serving

    ax = fig.axes[0]
    B = 2.0 ** log2_batch
    x = serving.batch_over_balance(model, chip, B, weight_dtype, weight_dtype)
    bstar = serving.balance_batch(model, chip, 0, weight_dtype, weight_dtype)
    u = serving.utilization_vs_balance(_X, overlap_fraction)
    here = serving.utilization_vs_balance(x, overlap_fraction)
    arts = [*ax.plot(_X, u, "C0-", lw=2), *ax.plot([x], [here], "ko")]
    return arts, (f"{model} on {chip}, {weight_dtype}: B* = {bstar:,.0f}; B = {B:,.0f} is <b>{x:.2f} B*</b>. With "
                  f"{overlap_fraction:.0%} of the shorter time hidden: utilization <b>{here:.0%}</b> (cost per token = "
                  f"the compute floor 2 N_act / F divided by it).")


def utilization_explorer(model: str = "deepseek-v3", chip: str = "h100-sxm") -> Explorer:
    """Claim 10: utilization against B / B* (:func:`llmmath.serving.utilization_vs_balance`) for a real
    model on a real chip (:func:`llmmath.serving.batch_over_balance`), with the overlap of compute and
    weight reads between none and full."""
    import ipywidgets as W

    from ... import hardware, models

    return explorer(_setup_util, _draw_util, {
        "log2_batch": W.FloatSlider(value=13.4, min=8, max=16, step=0.1, description="log2 B"),
        "overlap_fraction": W.FloatSlider(value=0.0, min=0, max=1, step=0.05, description="overlap"),
        "model": W.Dropdown(options=models.names(), value=model, description="model"),
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "weight_dtype": W.Dropdown(options=["bf16", "fp8"], value="fp8", description="weights, KV"),
    }, width=6.0)


def _size_models():
    from ... import models

    return [k for k in models.names() if models.get(k).total_params >= 5e8]


def _setup_size(fig):
    ax = fig.axes[0]
    log_axes(ax, (5e8, 3e12), (30, 1e6), "total parameters N_tot", "balance batch B*")
    ax.set_title("squares dense, circles MoE; x: no balance at this L; hollow: B* does not fit", fontsize=9)


def _draw_size(fig, chip, context, n_chips, weight_dtype):
    from ... import models, serving

    ax = fig.axes[0]
    arts, dense, none = [], [], []
    for k in _size_models():
        m = models.get(k)
        b = float(serving.balance_batch(k, chip, context, weight_dtype, weight_dtype))
        ok = bool(serving.balance_batch_fits(k, chip, context, n_chips, weight_dtype, weight_dtype))
        mark = "o" if m.is_moe else "s"
        # one marker per model and look, made once and moved (making 14 markers costs more than drawing them)
        if not np.isfinite(b):
            arts.append(kept_line(ax, (k, "x"), [m.total_params], [9e5], "x", color="0.5"))
            none.append(k)
            continue
        arts.append(kept_line(ax, (k, mark, ok), [m.total_params], [b], mark, color="C1" if m.is_moe else "C0",
                              mfc=("C1" if m.is_moe else "C0") if ok else "none"))
        if not m.is_moe:
            dense.append(b)
    spread = f"{min(dense):,.0f}-{max(dense):,.0f}" if dense else "none"
    return arts, (f"{chip}, {weight_dtype}, L = {context:,}: dense models' B* spans <b>{spread}</b> across "
                  f"the catalog's dense models; MoE models sit higher by their sparsity. "
                  f"No balance at this context: {', '.join(none) or 'none'}. Hollow: the balanced batch's KV does "
                  f"not fit beside the weights on {n_chips} chips.")


def size_explorer(chip: str = "h100-sxm", context: int = 0) -> Explorer:
    """Claim 14: every catalog model's balance batch (:func:`llmmath.serving.balance_batch`) against its
    total parameters on a chosen chip and context: flat in size at L = 0, size returning with the KV."""
    import ipywidgets as W

    from ... import hardware

    return explorer(_setup_size, _draw_size, {
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "context": W.IntSlider(value=context, min=0, max=16384, step=256, description="context L"),
        "n_chips": W.IntSlider(value=8, min=1, max=72, description="chips"),
        "weight_dtype": W.Dropdown(options=["bf16", "fp8"], value="bf16", description="weights, KV"),
    }, width=6.5)


def _setup_sparsity(fig):
    log_axes(fig.axes[0], (_U[0], _U[-1]), (1, 1e5), "concurrent sequences (batch per deployment)",
             "chip-us per token")
    fig.axes[0].set_title("dotted: B*; dashed: the batch's KV does not fit", fontsize=9)


def _draw_sparsity(fig, log2_experts, log10_users, base, chip, context):
    from ... import moe, serving
    from ...units import fmt_count

    ax = fig.axes[0]
    E, U = int(2 ** log2_experts), 10 ** log10_users
    m = moe.with_experts(base, E)
    n = serving.chips_to_hold(m, chip, "fp8")
    cost = serving.decode_cost_per_token(m, chip, _U, context, n_chips=n, weight_dtype="fp8", check_capacity=False)
    ok = np.asarray(serving.fits_in_hbm(m, chip, _U, context, n, "fp8"))
    here = serving.decode_cost_per_token(m, chip, U, context, n_chips=n, weight_dtype="fp8", check_capacity=False)
    fits = bool(serving.fits_in_hbm(m, chip, U, context, n, "fp8"))
    b = serving.balance_batch(m, chip, context, weight_dtype="fp8")
    arts = [*ax.plot(_U[ok], 1e6 * cost[ok], "C0-", lw=2), *ax.plot(_U[~ok], 1e6 * cost[~ok], "C0--", alpha=0.4),
            *ax.plot([U], [1e6 * here], "ko" if fits else "kx")]
    if np.isfinite(b):
        arts.append(ax.axvline(b, color="C0", ls=":"))
    state = ("no balance at this context (KV-bound)" if not np.isfinite(b)
             else "saturated" if U >= b else "short of users: below B*")
    cap = (_no_kv_note(context, True) if context == 0 else
           ("the KV fits" if fits else "<b>does not fit</b>: this many sequences' KV exceeds the chips' HBM"))
    return arts, (f"{base} with <b>{E}</b> routed experts (top-{m.experts_per_token}): N_tot = "
                  f"{fmt_count(m.total_params)}, s = {m.sparsity:.1f}, {n} x {chip} hold the fp8 weights at 80%; "
                  f"B* = {b:,.0f}. With {U:,.0f} sequences: <b>{1e6 * here:.1f} chip-us/token</b> ({state}); {cap}")


def sparsity_explorer(base: str = "deepseek-v3", chip: str = "h100-sxm") -> Explorer:
    """Claim 15: cost per token against concurrent sequences (:func:`llmmath.serving.decode_cost_per_token`)
    for an MoE with more or fewer routed experts (:func:`llmmath.moe.with_experts`), on the chips that
    hold its fp8 weights (:func:`llmmath.serving.chips_to_hold`)."""
    import ipywidgets as W

    from ... import hardware

    return explorer(_setup_sparsity, _draw_sparsity, {
        "log2_experts": W.IntSlider(value=8, min=4, max=11, description="log2 E"),
        "log10_users": W.FloatSlider(value=3.3, min=1, max=5, step=0.1, description="log10 users"),
        "base": W.Dropdown(options=list(_MOE_BASES), value=base, description="model"),
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "context": W.IntSlider(value=0, min=0, max=32768, step=1024, description="context L"),
    }, width=6.5)


register('balance_explorer', balance_explorer)
register('utilization_explorer', utilization_explorer)
register('size_explorer', size_explorer)
register('sparsity_explorer', sparsity_explorer)
