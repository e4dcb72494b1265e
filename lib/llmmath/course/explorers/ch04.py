"""Chapter 4: schedules -- a batch departs every T, and the time to read all of HBM
(see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, log_axes
from . import register

__all__ = ['cadence_explorer', 'hbm_explorer']

_BINS = np.linspace(0, 200, 101)
_FILL = np.linspace(0.05, 1, 100)
_ARRIVALS = 20_000


def _setup_cadence(fig):
    log_axes(fig.axes[0], (0, 200), (0, 0.12), "latency of one step (ms)", "density (1/ms)", logx=False, logy=False)
    fig.axes[0].set_title("histogram of 20,000 Poisson arrivals; dotted: T + step", fontsize=9)


def _draw_cadence(fig, period_ms, step_fraction, rate_per_s, capacity):
    from ... import schedule

    ax = fig.axes[0]
    T = period_ms / 1e3
    step = step_fraction * T   # the slider is the step as a fraction of T: a step cannot outlast its period
    s = schedule.simulate_cadence(schedule.poisson_arrivals(rate_per_s, _ARRIVALS, seed=7), T, step_s=step,
                                  capacity=capacity)
    h, _ = np.histogram(np.minimum(s.latency_s * 1e3, 199.9), bins=_BINS, density=True)
    bound = schedule.uniform_phase_latency(T, step)["max_latency_s"]
    load = schedule.cadence_load(rate_per_s, capacity, T)
    arts = [ax.stairs(h, _BINS, fill=True, color="C0", alpha=0.7), ax.axvline(bound * 1e3, color="k", ls=":")]
    return arts, (f"T = {period_ms} ms, step = {step * 1e3:.1f} ms, load {load:.2f} of {capacity} seats: mean "
                  f"{s.mean_latency_s * 1e3:.1f} ms, worst <b>{s.max_latency_s * 1e3:.1f} ms</b> (bound T + step = "
                  f"{bound * 1e3:.1f} ms when every train has a seat); {s.missed_first_train:.1%} missed their first train.")


def cadence_explorer(period_ms: int = 20) -> Explorer:
    """Claim 12: one step's latency under a fixed cadence (:func:`llmmath.schedule.simulate_cadence`)
    for Poisson arrivals, with the cadence, the step, the arrival rate and the seats per train."""
    import ipywidgets as W

    return explorer(_setup_cadence, _draw_cadence, {
        "period_ms": W.IntSlider(value=period_ms, min=5, max=60, step=5, description="T (ms)"),
        "step_fraction": W.FloatSlider(value=1.0, min=0.2, max=1.0, step=0.05, description="step / T"),
        "rate_per_s": W.IntSlider(value=18_000, min=1_000, max=30_000, step=1_000, description="arrivals/s"),
        "capacity": W.IntSlider(value=400, min=50, max=1000, step=50, description="seats"),
    }, width=6.5)


def _setup_hbm(fig):
    from ... import hardware, schedule

    ax = fig.axes[0]
    log_axes(ax, (0, 1), (0, 45), "fraction of HBM read each step", "step time (ms)", logx=False, logy=False)
    ax.axhspan(20 / 1.5, 20 * 1.5, color="gold", alpha=0.3)
    for k in hardware.names():   # every catalog chip, faint: the claim is about all of them
        ax.plot(_FILL, schedule.hbm_period_s(k, _FILL) * 1e3, color="0.85", lw=1)
    ax.set_title("gold: within 1.5x of 20 ms; grey: every catalog chip", fontsize=9)


def _draw_hbm(fig, chip, fill, batch):
    from ... import schedule

    ax = fig.axes[0]
    here = schedule.hbm_period_s(chip, fill)
    arts = [*ax.plot(_FILL, schedule.hbm_period_s(chip, _FILL) * 1e3, "C0-", lw=2), *ax.plot([fill], [here * 1e3], "ko")]
    return arts, (f"{chip}: C/W = {schedule.hbm_period_s(chip) * 1e3:.1f} ms. Reading {fill:.0%} of HBM: step "
                  f"<b>{here * 1e3:.1f} ms</b>, {schedule.tokens_per_s(1, here):.0f} steps/s; at batch {batch:,}: "
                  f"{schedule.tokens_per_s(batch, here):,.0f} tokens/s per replica, "
                  f"{schedule.tokens_per_s(1, here):.0f} tokens/s per user.")


def hbm_explorer(chip: str = "h100-sxm") -> Explorer:
    """Claim 13: the step that reads a fraction of HBM once (:func:`llmmath.schedule.hbm_period_s`), for
    any catalog chip, with the throughput at a batch (:func:`llmmath.schedule.tokens_per_s`)."""
    import ipywidgets as W

    from ... import hardware

    return explorer(_setup_hbm, _draw_hbm, {
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "fill": W.FloatSlider(value=1.0, min=0.05, max=1.0, step=0.05, description="fill"),
        "batch": W.IntSlider(value=2000, min=100, max=10000, step=100, description="batch"),
    }, width=6.0)


register('cadence_explorer', cadence_explorer)
register('hbm_explorer', hbm_explorer)
