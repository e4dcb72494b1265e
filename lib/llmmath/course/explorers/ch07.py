"""Chapter 7: training and serving cost against model size (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, log_axes
from . import register

__all__ = ['train_serve_explorer', 'critical_batch_explorer', 'compute_split_explorer', 'overtraining_explorer']

_TRAIN_N = np.logspace(9, 13, 400)


def _setup_train_serve(fig):
    ax = fig.axes[0]
    log_axes(ax, (_TRAIN_N[0], _TRAIN_N[-1]), (1e1, 1e11), "model size N (parameters)", "cost (chip-hours)")
    ax.set_title("train to a target loss, then serve: black = total", fontsize=10)


def _draw_train_serve(fig, target_loss, log10_served_tokens, fit, train_chip, serve_chip, serve_dtype,
                      train_mfu, serve_mfu):
    from ... import training

    ax = fig.axes[0]
    d_inf = 10.0 ** log10_served_tokens
    tr, inf = training.train_and_serve_chip_s(_TRAIN_N, target_loss, d_inf, train_chip, serve_chip, train_mfu,
                                              serve_mfu, "bf16", serve_dtype, fit)
    tr, inf = tr / 3600.0, inf / 3600.0
    tot = tr + inf
    ok = np.isfinite(tot)
    if not ok.any():
        return [], f"no model in this range reaches loss {target_loss} under the {fit} fit"
    i = int(np.argmin(np.where(ok, tot, np.inf)))
    sign = np.sign(np.where(ok, tr - inf, np.nan))
    cross = np.where(ok[:-1] & ok[1:] & (sign[:-1] != sign[1:]))[0]
    arts = [*ax.plot(_TRAIN_N[ok], tr[ok], "C0-", label="training"), *ax.plot(_TRAIN_N, inf, "C1-"),
            *ax.plot(_TRAIN_N[ok], tot[ok], "k-", lw=2), *ax.plot([_TRAIN_N[i]], [tot[i]], "ko")]
    msg = "; the two costs never cross in this range"
    if cross.size:
        j = int(cross[np.argmin(np.abs(cross - i))])
        arts += ax.plot([_TRAIN_N[j]], [tot[j]], "rs")
        msg = (f"; where training cost = serving cost (red square) N = {_TRAIN_N[j]:.3g}, total "
               f"{tot[j] / tot[i]:.2f}x the minimum")
    d_opt = float(training.tokens_for_loss(_TRAIN_N[i], target_loss, fit))
    return arts, (f"blue: training 6 N D(N) on {train_chip} (bf16, MFU {train_mfu:.0%}); orange: serving 2 N x "
                  f"{d_inf:.1e} tokens on {serve_chip} ({serve_dtype}, MFU {serve_mfu:.0%}). Minimum (dot) at N = "
                  f"{_TRAIN_N[i]:.3g} trained on {d_opt:.3g} tokens ({d_opt / _TRAIN_N[i]:.0f} per parameter), "
                  f"training : serving = {tr[i] / inf[i]:.2f} : 1 there" + msg)


def train_serve_explorer(train_chip: str = "h100-sxm", serve_chip: str = "h100-sxm") -> "Explorer":
    """Cost of training to a loss and then serving, in chip-hours, against model size (chapter 7, claim 28).

    Calls :func:`llmmath.training.train_and_serve_chip_s`: the serving chip, its precision
    and the two MFUs set the exchange rate between the two costs, and so where they are equal.
    """
    import ipywidgets as W

    from ... import hardware

    return explorer(_setup_train_serve, _draw_train_serve, {
        "target_loss": W.FloatSlider(value=2.0, min=1.9, max=2.6, step=0.02, description="target loss"),
        "log10_served_tokens": W.FloatSlider(value=13.0, min=10.0, max=16.0, step=0.25, description="log10 served"),
        "fit": W.Dropdown(options=["epoch", "hoffmann"], value="epoch", description="fit"),
        "train_chip": W.Dropdown(options=hardware.names(), value=train_chip, description="train on"),
        "serve_chip": W.Dropdown(options=hardware.names(), value=serve_chip, description="serve on"),
        "serve_dtype": W.Dropdown(options=["bf16", "fp8"], value="bf16", description="serve dtype"),
        "train_mfu": W.FloatSlider(value=0.40, min=0.05, max=0.8, step=0.01, description="train MFU"),
        "serve_mfu": W.FloatSlider(value=0.14, min=0.01, max=0.8, step=0.01, description="serve MFU"),
    }, width=7.0)

register('train_serve_explorer', train_serve_explorer)


# --- claim 23: batch size -> steps and examples to the target, on the measured critical-batch task --------------

_B_GRID = np.logspace(0, 3.1, 200)

#: Published pre-training batches (tokens per step), drawn beside the toy task's measured critical batch.
PUBLISHED_BATCHES = {
    "GPT-3 175B: 3.2M tokens": 3.2e6,   # Brown et al. 2020, Table 2.1 (ramped up from 32K tokens, appendix B)
    "Llama 3 405B: 16M tokens": 16e6,   # Llama Team 2024, "The Llama 3 Herd of Models", section 3.4.1 (4M -> 8M -> 16M)
}


def _setup_critical_batch(fig):
    from ...demos import critical_batch

    run, fit = critical_batch.default_run()
    a1, a2 = fig.axes
    log_axes(a1, (1, 1300), (0.5 * run.steps.min(), 2 * run.steps.max()), "batch size B (examples per step)",
             "steps to target")
    log_axes(a2, (1, 1300), (0.5 * run.examples.min(), 2 * run.examples.max()), "batch size B (examples per step)",
             "examples to target")
    a1.loglog(run.batch, run.steps, "o", color="C0", label="measured")
    a1.loglog(_B_GRID, critical_batch.steps_model(_B_GRID, fit.S_min, fit.B_crit), "k-", lw=1,
              label="S_min (1 + B_crit / B)")
    a2.loglog(run.batch, run.examples, "o", color="C0", label="measured")
    a2.loglog(_B_GRID, critical_batch.examples_model(_B_GRID, fit.E_min, fit.B_crit), "k-", lw=1,
              label="E_min (1 + B / B_crit)")
    for ax in (a1, a2):
        ax.axvline(fit.B_crit, color="C3", ls=":", label=f"B_crit = {fit.B_crit:.0f}")
        ax.legend(fontsize=8)
    a1.set_title("systems side: steps fall with B", fontsize=9)
    a2.set_title("convergence side: examples rise with B", fontsize=9)


def _draw_critical_batch(fig, batch, anchor):
    from ...demos import critical_batch

    run, fit = critical_batch.default_run()
    a1, a2 = fig.axes
    s = float(critical_batch.steps_model(batch, fit.S_min, fit.B_crit))
    e = float(critical_batch.examples_model(batch, fit.E_min, fit.B_crit))
    arts = [*a1.plot([batch], [s], "D", color="C3", ms=8), *a2.plot([batch], [e], "D", color="C3", ms=8)]
    i = int(np.argmin(np.abs(np.log(run.batch / batch))))
    return arts, (f"B = {batch:.0f} examples per step = {batch / fit.B_crit:.2g} B_crit: {s:.0f} steps "
                  f"({s / fit.S_min:.2f}x the fewest), {e:.0f} examples ({e / fit.E_min:.2f}x the fewest); measured at "
                  f"B = {int(run.batch[i])}: {run.steps[i]:.0f} steps, {run.examples[i]:.0f} examples. "
                  f"Published: {anchor} per step for a real LLM -- its B_crit is in tokens, measured by its "
                  f"developers' noise scale, not by this toy task (B_crit = {fit.B_crit:.0f} examples)")


def critical_batch_explorer() -> "Explorer":
    """Claim 23: steps and examples to the target against batch size, on the measured (cached) critical-batch run."""
    import ipywidgets as W

    return explorer(_setup_critical_batch, _draw_critical_batch, {
        "batch": W.FloatLogSlider(value=16, base=2, min=0, max=10, step=0.25, description="batch B"),
        "anchor": W.Dropdown(options=list(PUBLISHED_BATCHES), description="published"),
    }, ncols=2, width=4.6)


register('critical_batch_explorer', critical_batch_explorer)


# --- claims 29 and 30: the pre-training / RL / inference split ---------------------------------------------------

_RATIO = np.linspace(0.05, 1.0, 96)
#: Runs with published GPU-hours (pre-training MFU from training.run_mfu): two models on two chips.
SPLIT_RUNS = {"DeepSeek-V3 on H800": "deepseek-v3", "Llama 3.1 405B on H100": "llama-3.1-405b"}


def _setup_split(fig):
    a1, a2 = fig.axes
    log_axes(a1, (0.05, 1.0), (0.0, 3.2), "RL / inference MFU, relative to pre-training",
             "tokens for machine time\nequal to pre-training's", logx=False, logy=False)
    a1.axhline(1, color="gray", lw=1)
    a1.axvline(0.3, color="C3", ls=":", lw=1, label="the speaker's 30%")
    a2.set_ylim(0, 1)
    a2.set_xlim(-0.6, 2.6)
    a2.set_xticks([0, 1, 2], ["pre-training", "RL", "inference"])
    a2.set_ylabel("machine-time share (equal tokens)")
    a2.axhline(1 / 3, color="k", ls="--", lw=1, label="a third each")
    a2.grid(True, axis="y", alpha=0.3)
    a2.legend(fontsize=8, loc="upper right")
    a1.set_title("claim 30: equal machine time, unequal tokens", fontsize=9)
    a2.set_title("claim 29: equal tokens, unequal machine time", fontsize=9)


def _draw_split(fig, mfu_ratio, rl_flops_per_param_token, run):
    from ... import models, training

    a1, a2 = fig.axes
    key = SPLIT_RUNS[run]
    u_pre = training.run_mfu(key)
    # only the ratio of the MFUs matters: pre-training at 1, RL and inference at the ratio
    d_rl, d_inf = training.equal_cost_tokens(1.0, rl_flops_per_param_token, 1.0, _RATIO, _RATIO)
    r_rl, r_inf = training.equal_cost_tokens(1.0, rl_flops_per_param_token, 1.0, mfu_ratio, mfu_ratio)
    _, shares = training.compute_split(1.0, 1.0, 1.0, models.get(key).active_params, rl_flops_per_param_token,
                                       1.0, mfu_ratio, mfu_ratio)
    arts = [*a1.plot(_RATIO, d_rl, "C0-", label=f"RL, c = {rl_flops_per_param_token:g}"),
            *a1.plot(_RATIO, d_inf, "C1--", label="inference"),
            *a1.plot([mfu_ratio, mfu_ratio], [r_rl, r_inf], "ko")]
    rho = training.deepseek_v3_decode_mfu_ratio()
    arts += a1.plot([rho], [0.05], "^", color="C2", ms=9)
    arts += list(a2.bar([0, 1, 2], [shares["pretrain"], shares["rl"], shares["inference"]], 0.6,
                        color=["C7", "C0", "C1"]))
    fewer = "fewer" if r_rl < 1 else "<b>more</b>"
    return arts, (f"{run}: pre-training MFU {u_pre:.0%} (its published GPU-hours); RL and inference at "
                  f"{mfu_ratio:.2f}x that. Equal machine time: RL gets {r_rl:.2f}x the pre-training tokens "
                  f"({fewer}), inference {r_inf:.2f}x. Equal tokens: shares {shares['pretrain']:.0%} / "
                  f"{shares['rl']:.0%} / {shares['inference']:.0%}. Green triangle: DeepSeek-V3's published decode "
                  f"MFU over its pre-training MFU, {rho:.2f}")


def compute_split_explorer() -> "Explorer":
    """Claims 29-30: RL and inference tokens at equal machine time, and the machine-time shares at equal tokens."""
    import ipywidgets as W

    return explorer(_setup_split, _draw_split, {
        "mfu_ratio": W.FloatSlider(value=0.3, min=0.05, max=1.0, step=0.01, description="MFU ratio"),
        "rl_flops_per_param_token": W.FloatSlider(value=4.0, min=2.0, max=6.0, step=0.5, description="RL c"),
        "run": W.Dropdown(options=list(SPLIT_RUNS), description="run"),
    }, ncols=2, width=4.6)


register('compute_split_explorer', compute_split_explorer)


# --- claim 31: tokens per second, months, N -> the over-training factor both ways --------------------------------

_N_GRID = np.logspace(9, 12.3, 120)


def _setup_overtraining(fig):
    ax = fig.axes[0]
    log_axes(ax, (_N_GRID[0], _N_GRID[-1]), (0.1, 1e5), "active parameters N", "pre-training tokens / reference")
    ax.axhline(100, color="gray", ls=":", lw=1)
    ax.text(1.1e9, 120, "the speaker's 100x", color="gray", fontsize=8)
    ax.axhline(1, color="k", lw=0.8)
    ax.set_title("served = pre-training tokens (claim 29), against Chinchilla", fontsize=9)


def _draw_overtraining(fig, tokens_per_s, deployment_months, active_params, fit):
    from ... import training

    ax = fig.axes[0]
    rate, N = tokens_per_s, active_params
    curve = training.overtraining(rate, deployment_months, _N_GRID, fit)
    here = training.overtraining(rate, deployment_months, N, fit)
    arts = [*ax.plot(_N_GRID, curve["per_20N"], "C0-", label="/ 20 N (size)"),
            *ax.plot(_N_GRID, curve["per_optimal"], "C1--", label=f"/ D*(C), {fit} fit (compute)"),
            *ax.plot([N, N], [here["per_20N"], here["per_optimal"]], "ko")]
    return arts, (f"{rate:.2g} tokens/s for {deployment_months:g} months = {here['served_tokens']:.2g} served tokens "
                  f"= pre-training tokens; N = {N:.2g}: <b>{here['per_20N']:.3g}x</b> the 20-tokens-per-parameter "
                  f"recipe for its size (blue), {here['per_optimal']:.3g}x the compute-optimal tokens for its compute "
                  f"(orange, {fit} fit)")


def overtraining_explorer() -> "Explorer":
    """Claim 31: served tokens per second x months -> pre-training tokens -> multiples of Chinchilla, both ways."""
    import ipywidgets as W

    return explorer(_setup_overtraining, _draw_overtraining, {
        "tokens_per_s": W.FloatLogSlider(value=5e7, base=10, min=5.0, max=9.0, step=0.05, description="tokens/s",
                                         readout_format=".2g"),
        "deployment_months": W.FloatSlider(value=2.0, min=0.5, max=24.0, step=0.5, description="months"),
        "active_params": W.FloatLogSlider(value=1e11, base=10, min=9.0, max=12.3, step=0.05, description="N active",
                                          readout_format=".2g"),
        "fit": W.Dropdown(options=["epoch", "hoffmann"], value="epoch", description="fit"),
    }, width=7.0)


register('overtraining_explorer', overtraining_explorer)
