"""Chapter 12: from the roofline ceiling to the measured number, term by term (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, kept, kept_line, log_axes
from . import register

__all__ = ['waterfall_explorer', 'engine_explorer', 'DEPLOYMENTS']

# Three deployments the chapter follows: (label, model, chip, chips, placement and precisions)
DEPLOYMENTS = {
    "Llama-3.1-70B, 8 x H100, TP8, bf16": dict(model="llama-3.1-70b", chip="h100-sxm", n_chips=8, tp=8),
    "DeepSeek-V3, 144 x H800, EP144, fp8": dict(model="deepseek-v3", chip="h100-sxm", n_chips=144, ep=144, dp=144,
                                                weight_dtype="fp8", overlap="two-batch"),
    "Llama-3.1-8B, 1 x H100, bf16": dict(model="llama-3.1-8b", chip="h100-sxm", n_chips=1),
}
_TERMS = 9   # the most a decode waterfall holds: the ceiling, seven terms, and MTP when it is on


def _setup_waterfall(fig):
    ax = fig.axes[0]
    ax.set_xlim(0, 1.05)
    ax.set_ylim(_TERMS - 0.5, -0.5)
    ax.set_yticks([])
    ax.set_xlabel("tokens/s per chip, as a share of the roofline ceiling")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("from the ceiling to the prediction, one term at a time", fontsize=10)


def _draw_waterfall(fig, deployment, input_tokens, output_tokens, log2_batch, mtp_tokens):
    from ... import planner

    ax = fig.axes[0]
    kw = DEPLOYMENTS[deployment]
    batch = None if log2_batch == 0 else 2.0 ** log2_batch * (kw.get("dp", 1))
    try:
        p = planner.predict(input_tokens=input_tokens, output_tokens=output_tokens, batch=batch,
                            mtp_tokens=mtp_tokens, **kw)
    except ValueError as e:
        return [], f"<b>does not fit</b>: {e}"
    top = p.waterfall[0][1]
    shares = [r / top for _, r in p.waterfall] + [0.0] * (_TERMS - len(p.waterfall))
    bars = kept(fig, "bars", lambda: ax.barh(range(_TERMS), [0.0] * _TERMS, color="C0"))
    labels = kept(fig, "labels", lambda: [ax.text(0.01, i, "", va="center", fontsize=9) for i in range(_TERMS)])
    for i, (rect, share) in enumerate(zip(bars, shares)):
        rect.set_width(min(share, 1.05))                 # MTP can pass the one-token ceiling: the label says by how much
        rect.set_color("C3" if i == len(p.waterfall) - 1 else ("0.6" if i == 0 else "C0"))
    names = [n for n, _ in p.waterfall] + [""] * (_TERMS - len(p.waterfall))
    for text, name, share in zip(labels, names, shares):
        text.set_text(f"{name}: {share:.0%}" if name else "")
    t = p.terms
    return [*bars, *labels], (
        f"<b>{deployment}</b>, {input_tokens:,} in / {output_tokens:,} out, decode batch {p.batch:,.0f} "
        f"({'the most that fits' if batch is None else 'chosen'}):<br>ceiling {top:,.0f} tokens/s per chip; "
        f"prediction <b>{p.tokens_per_s_per_chip:,.0f}</b> ({p.tokens_per_s_per_chip / top:.0%}), time per output "
        f"token {p.tpot_s * 1e3:.2f} ms. Per step: compute {t['compute_s'] * 1e3:.2f} ms, memory "
        f"{t['memory_s'] * 1e3:.2f} ms, TP all-reduce {t['tensor_parallel_s'] * 1e3:.2f} ms, expert all-to-all "
        f"{t['expert_all_to_all_s'] * 1e3:.2f} ms" + (f", MTP {t['mtp_tokens_per_step']:.2f} tokens a step"
                                                       if mtp_tokens else "") + ".")


def waterfall_explorer(deployment: str = "DeepSeek-V3, 144 x H800, EP144, fp8") -> Explorer:
    """Chapter 12: :func:`llmmath.planner.predict`'s waterfall for three deployments, with the workload, the
    batch (0: the most that fits) and MTP as controls."""
    import ipywidgets as W

    return explorer(_setup_waterfall, _draw_waterfall, {
        "deployment": W.Dropdown(options=list(DEPLOYMENTS), value=deployment, description="deployment"),
        "input_tokens": W.IntSlider(value=2000, min=100, max=32000, step=100, description="input"),
        "output_tokens": W.IntSlider(value=1000, min=10, max=8000, step=10, description="output"),
        "log2_batch": W.IntSlider(value=0, min=0, max=10, description="log2 b/rank"),
        "mtp_tokens": W.IntSlider(value=0, min=0, max=3, description="MTP tokens"),
    }, width=7.0, height=3.4)


register('waterfall_explorer', waterfall_explorer)

# the engine explorer's replica (Llama-3.1-70B on 8 H100s, TP8) and the requests it simulates per frame
_ENGINE = dict(model="llama-3.1-70b", chip="h100-sxm", n_chips=8, tp=8)
_ENGINE_REQUESTS = 300


def _setup_engine(fig):
    ax, ax2 = fig.axes
    log_axes(ax, (1e-2, 1e3), (0, 1), "time to first token (s)", "share of requests at most", logy=False)
    log_axes(ax2, (1e-3, 1), (0, 1), "time per output token (s)", "share of requests at most", logy=False)
    ax.set_title("TTFT", fontsize=9)
    ax2.set_title("TPOT", fontsize=9)


def _draw_engine(fig, requests_per_s, input_tokens, output_tokens, kv_policy, prefill_pool):
    from ... import engine, planner

    ax, ax2 = fig.axes
    n = _ENGINE["n_chips"]
    kw = dict(input_tokens=input_tokens, output_tokens=output_tokens, tp=_ENGINE["tp"])
    try:
        run = engine.simulate(_ENGINE["model"], _ENGINE["chip"], n, requests_per_s=requests_per_s,
                              n_requests=_ENGINE_REQUESTS, seed=0, kv_policy=kv_policy,
                              prefill=dict(n_chips=n, tp=_ENGINE["tp"]) if prefill_pool else None, **kw)
        sat = planner.predict(_ENGINE["model"], _ENGINE["chip"], n, phase="aggregated", **kw)
    except ValueError as e:
        return [], f"<b>does not fit</b>: {e}"
    share = np.arange(1, _ENGINE_REQUESTS + 1) / _ENGINE_REQUESTS
    tpot = np.sort(run.tpot_s[np.isfinite(run.tpot_s)])
    lines = [kept_line(ax, "ttft", np.sort(run.ttft_s), share, "C1-"),
             kept_line(ax2, "tpot", tpot, share[:tpot.size], "C2-")]
    rate = run.throughput_output_tokens_per_s / n
    return lines, (
        f"<b>{requests_per_s:.3g} requests/s</b>, {input_tokens:,} in / {output_tokens:,} out, "
        f"{'8 prefill + 8 decode GPUs' if prefill_pool else '8 GPUs serving both'}, {kv_policy} KV: "
        f"TTFT p50 {run.percentile('ttft_s', 50):.3g} s, p99 {run.percentile('ttft_s', 99):.3g} s; TPOT p50 "
        f"{run.percentile('tpot_s', 50) * 1e3:.3g} ms; {rate:,.0f} output tokens/s per decode GPU against the "
        f"saturated prediction's {sat.tokens_per_s_per_chip:,.0f}; {run.preemptions} preemptions; peak KV "
        f"{run.peak_kv_bytes / 1e9:.1f} of {run.kv_capacity_bytes / 1e9:.1f} GB per GPU "
        f"({_ENGINE_REQUESTS} requests simulated).")


def engine_explorer() -> Explorer:
    """Chapter 12: :func:`llmmath.engine.simulate` for Llama-3.1-70B on 8 H100s (TP8): the TTFT and TPOT
    distributions of a few hundred Poisson arrivals, with the rate, the lengths, the KV policy and a separate
    8-GPU prefill pool as controls."""
    import ipywidgets as W

    return explorer(_setup_engine, _draw_engine, {
        "requests_per_s": W.FloatLogSlider(value=5, base=10, min=-1, max=2, step=0.1, description="requests/s"),
        "input_tokens": W.IntSlider(value=1000, min=100, max=8000, step=100, description="input"),
        "output_tokens": W.IntSlider(value=200, min=10, max=1000, step=10, description="output"),
        "kv_policy": W.Dropdown(options=["paged", "reserve"], value="paged", description="KV"),
        "prefill_pool": W.Checkbox(value=False, description="separate prefill pool"),
    }, ncols=2, width=4.6, height=3.2)


register('engine_explorer', engine_explorer)
