"""Chapter 6: pipeline schedules and bubbles (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, kept
from . import register

__all__ = ['pipeline_explorer', 'boundary_ratio_explorer', 'pipeline_placement_explorer',
           'pipelined_decode_explorer']


def _setup_pipeline(fig):
    ax = fig.axes[0]
    ax.set_xlim(0, 1)
    ax.set_ylim(8.5, -0.5)
    ax.set_xlabel("time (fraction of the whole schedule)")
    ax.set_ylabel("pipeline stage")
    ax.set_yticks(range(8))
    ax.grid(True, axis="x", alpha=0.3)


def _draw_pipeline(fig, kind, stages, microbatches, backward_over_forward):
    from ... import parallelism

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
                # one row of bars per stage and phase, made once and moved (as broken_barh draws them)
                row = kept(fig, (phase, s), lambda s=s, color=color: ax.broken_barh(
                    [(0.0, 1.0)], (s - 0.4, 0.8), facecolors=color, edgecolors="white", linewidth=0.5))
                y0 = s - 0.4
                y1 = y0 + 0.8
                row.set_verts(np.array([[(x0, y0), (x0, y1), (x0 + dx, y1), (x0 + dx, y0)] for x0, dx in bars]))
                artists.append(row)
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


# --- claim 20: the pipeline boundary on the slow link ----------------------------------------------------

_LAYERS = np.arange(1, 17)


def _setup_boundary(fig):
    ax = fig.axes[0]
    ax.set_yscale("log")
    ax.set_xlim(0.5, 16.5)
    ax.set_ylim(0.05, 200)
    ax.set_xlabel("MoE layers per pipeline stage")
    ax.set_ylabel("in-stage all-to-all time / boundary time")
    ax.axhline(1, color="k", ls="--", lw=1)
    ax.grid(True, which="both", alpha=0.3)
    ax.set_title("above 1 the boundary link is the less busy one", fontsize=10)


def _draw_boundary(fig, system, model, experts_per_token, layers_per_stage, ep):
    from ... import hardware, models, parallelism

    ax = fig.axes[0]
    sy, m = hardware.system(system), models.get(model)
    up, out = sy.scale_up_bytes_per_s_per_package, sy.scale_out_bytes_per_s_per_package
    own = parallelism.boundary_traffic_ratio(m, _LAYERS, ep, up, out)
    curve = parallelism.boundary_traffic_ratio(m, _LAYERS, ep, up, out, experts_per_token=experts_per_token)
    r = curve[layers_per_stage - 1]
    ok = r >= 1
    artists = [*ax.plot(_LAYERS, own, ":", color="0.5"), *ax.plot(_LAYERS, curve, "o-", color="C0", ms=3),
               *ax.plot([layers_per_stage], [r], "o", color="C2" if ok else "C3", ms=9)]
    return artists, (
        f"<b>{m.key}</b> (d = {m.d_model}, k = {experts_per_token} of {m.n_experts} experts; its own k = "
        f"{m.experts_per_token}, grey dotted) on <b>{sy.key}</b>: scale-up {up / 1e9:.0f} GB/s, scale-out "
        f"{out / 1e9:.0f} GB/s per GPU, <b>up/out = {sy.scale_up_over_scale_out:.1f}x</b>; EP{ep}, fp8 dispatch, "
        f"bf16 combine and boundary activations.<br>With {layers_per_stage} MoE layer(s) per stage the ratio is "
        f"<b>{r:.2f}</b>: {'the boundary is not the bottleneck' if ok else '<b>the boundary link is the bottleneck</b>'}"
        f" (the rule: 2 k x layers per stage must beat up/out).")


def boundary_ratio_explorer(model: str = "deepseek-v3", system: str = "gb200-nvl72") -> Explorer:
    """In-stage all-to-all over the pipeline-boundary time, by system, activated experts and layers per stage."""
    import ipywidgets as W

    from ... import hardware, models

    moe = [k for k, m in models.catalog().items() if m.is_moe]
    keys = [k for k, s in hardware.systems().items() if np.isfinite(s.scale_up_over_scale_out)]
    k_sl = W.IntSlider(value=models.get(model).experts_per_token, min=1, max=32, description="experts k")
    model_dd = W.Dropdown(options=moe, value=model, description="model")

    def cap(change):  # no more activated experts than the model has
        n = models.get(change["new"]).n_experts
        k_sl.value = min(k_sl.value, n)
        k_sl.max = min(32, n)

    def eps(key):  # the expert group rides the scale-up link only inside one domain (an HGX box: 8 GPUs)
        return [e for e in (8, 16, 32, 64, 128) if e <= hardware.system(key).packages] or [8]

    ep_dd = W.Dropdown(options=eps(system), value=min(64, max(eps(system))), description="EP")

    def fit_ep(change):
        options = eps(change["new"])
        value = ep_dd.value if ep_dd.value in options else max(options)
        ep_dd.options, ep_dd.value = options, value

    return explorer(_setup_boundary, _draw_boundary, {
        "system": W.Dropdown(options=keys, value=system, description="system"),
        "model": model_dd,
        "experts_per_token": k_sl,
        "layers_per_stage": W.IntSlider(value=1, min=1, max=16, description="layers/stage"),
        "ep": ep_dd,
    }, width=7.0, links={"model": cap, "system": fit_ep})

register('boundary_ratio_explorer', boundary_ratio_explorer)


# --- claims 21, 22, 25, 26: per-GPU memory and stage floors under EP x PP x TP ---------------------------

_STAGES = np.arange(1, 17)
_PLACE_MODELS = ("deepseek-v3", "kimi-k2", "qwen3-235b-a22b", "llama-3.1-405b")


def _bars(fig, ax, key, x, height, bottom=0.0, width=0.8, **kw):
    """Vertical bars as ONE path (one artist to blit instead of one patch per bar, and one hatch pattern to
    render instead of one per bar: the same pixels, a third of the time when hatched), in a collection made
    once (:func:`llmmath.course.widgets.kept`, under ``key``) and given the new bars every frame; geometry only."""
    from matplotlib.collections import PathCollection
    from matplotlib.path import Path

    bars = kept(fig, key, lambda: ax.add_collection(PathCollection([], **kw), autolim=False))
    x, h, b = np.broadcast_arrays(np.asarray(x, float), np.asarray(height, float), np.asarray(bottom, float))
    if not x.size:
        bars.set_paths([])
        return bars
    lo, hi = x - width / 2, x + width / 2
    corners = np.stack([np.stack([lo, b], -1), np.stack([lo, b + h], -1), np.stack([hi, b + h], -1),
                        np.stack([hi, b], -1), np.stack([lo, b], -1)], 1).reshape(-1, 2)  # each closed on its first
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], x.size)
    bars.set_paths([Path(corners, codes)])
    return bars


def _setup_placement(fig):
    ax, bx = fig.axes
    ax.set_xlim(0.4, 16.6)
    ax.set_ylim(0, 400)
    ax.set_xlabel("pipeline stages P (micro-batches in flight = P)")
    ax.set_ylabel("GB per GPU")
    ax.set_title("per GPU: weights (blue) + KV (orange); black: HBM;\nhatched grey: does not fit", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    bx.set_yscale("log")
    bx.set_xlim(-0.6, 15.6)
    bx.set_ylim(1e-5, 1)
    bx.set_xlabel("stage")
    bx.set_ylabel("stage floor per micro-batch (s)")
    bx.set_title("stage floors at the chosen P (stage_floors_s)", fontsize=10)
    bx.grid(True, which="both", alpha=0.3)


def _draw_placement(fig, stages, model, chip, ep, tp, log2_microbatch, context, weight_dtype):
    from ... import hardware, parallelism

    ax, bx = fig.axes
    c = hardware.get(chip)
    b = 2 ** log2_microbatch
    mem = parallelism.memory_over_stages(model, _STAGES, c.hbm_bytes, ep=ep, tp=tp, batch=b, context=context,
                                         weight_dtype=weight_dtype)
    i = stages - 1
    fits, no = mem.fits, ~mem.fits
    w_gb, kv_gb = mem.weight_bytes / 1e9, mem.kv_bytes / 1e9
    grey = dict(hatch="//", edgecolor="0.4", linestyle="--")
    # every artist is made once and moved (kept): making them cost more than drawing them
    hbm, slowest, unpipelined = (kept(fig, key, lambda a=a, kw=kw: a.axhline(1.0, **kw)) for key, a, kw in (
        ("hbm", ax, dict(color="k", lw=1.5)), ("slowest", bx, dict(color="C3", lw=1.5)),
        ("unpipelined", bx, dict(color="k", ls=":", lw=1.5))))
    hbm.set_ydata([c.hbm_bytes / 1e9] * 2)
    artists = [_bars(fig, ax, "weights", _STAGES[fits], w_gb[fits], facecolor="C0"),
               _bars(fig, ax, "kv", _STAGES[fits], kv_gb[fits], w_gb[fits], facecolor="C1"),
               _bars(fig, ax, "weights, no fit", _STAGES[no], w_gb[no], facecolor="0.85", **grey),
               _bars(fig, ax, "kv, no fit", _STAGES[no], kv_gb[no], w_gb[no], facecolor="0.65", **grey),
               hbm,
               _bars(fig, ax, "chosen", [stages], [mem.total_bytes[i] / 1e9], facecolor="none", edgecolor="C3",
                     linewidth=2.5)]
    n = mem.gpus_per_stage
    d = parallelism.pipelined_decode(model, c, n, stages, b, context, weight_dtype=weight_dtype, tp=tp)
    one = parallelism.pipelined_decode(model, c, n, 1, b, context, weight_dtype=weight_dtype, tp=tp)
    x = np.arange(stages)
    slowest.set_ydata([d.stage_s] * 2)
    unpipelined.set_ydata([one.stage_s] * 2)
    artists += [_bars(fig, bx, "floors", x, d.stages_s, 1e-5, facecolor="C2") if fits[i] else
                _bars(fig, bx, "floors, no fit", x, d.stages_s, 1e-5, facecolor="0.8", **grey),
                slowest, unpipelined]
    if not fits[i]:
        artists.append(kept(fig, "no fit", lambda: bx.text(
            0.5, 0.9, "does not fit in HBM:\nnot a runnable configuration", ha="center", va="top",
            transform=bx.transAxes, color="0.3", fontsize=11)))
    fit_p = mem.stages[fits]
    fit_msg = (f"smallest P that fits: <b>{fit_p[0]}</b> ({mem.n_gpus[fit_p[0] - 1]} GPUs)" if fit_p.size
               else "<b>no P up to 16 fits</b>: widen EP/TP or shrink the batch or context")
    status = (f"{mem.fill[i]:.0%} of {c.hbm_bytes / 1e9:.0f} GB" if fits[i]
              else f"<b style='color:#b00'>{mem.fill[i]:.0%} of {c.hbm_bytes / 1e9:.0f} GB: does not fit</b>")
    return artists, (
        f"<b>{model}</b> on {chip}, EP{ep} x TP{tp} = {n} GPUs per stage, P = {stages} ({mem.n_gpus[i]} GPUs), "
        f"micro-batch b = {b}, L = {context}, {weight_dtype} weights, bf16 KV.<br>"
        f"Per GPU: weights {w_gb[i]:.1f} GB (P = 1: {w_gb[0]:.1f} GB; they shrink like 1/P, claim 22) + KV "
        f"{kv_gb[i]:.1f} GB (it does not shrink with P: P micro-batches in flight, claim 25) = {status}; {fit_msg} "
        f"(claim 26: widen EP first, pipeline only as much as the weights need).<br>"
        f"Stage floors (right): slowest {d.stage_s * 1e3:.3f} ms (red), sum {d.sum_of_stages_s * 1e3:.3f} ms vs "
        f"{one.stage_s * 1e3:.3f} ms unpipelined on {n} GPUs (dotted): nothing saved (claim 21); P x slowest / sum = "
        f"{d.imbalance:.3f}x the chip-seconds per token.")


def pipeline_placement_explorer(model: str = "deepseek-v3", chip: str = "gb200") -> Explorer:
    """Per-GPU weights + KV for every pipeline depth, and the stage floors at the chosen one (claims 21, 22, 25, 26)."""
    import ipywidgets as W

    from ... import models

    ep = W.Dropdown(options=[1, 8, 16, 32, 64, 128], value=64, description="EP")
    tp = W.Dropdown(options=[1, 2, 4, 8], value=1, description="TP")
    model_dd = W.Dropdown(options=list(_PLACE_MODELS), value=model, description="model")

    def place(change):  # dense models take TP instead of EP
        m = models.get(change["new"])
        if m.is_moe:
            tp.value, ep.value = 1, 64
        else:
            ep.value, tp.value = 1, 8

    return explorer(_setup_placement, _draw_placement, {
        "stages": W.IntSlider(value=1, min=1, max=16, description="stages P"),
        "model": model_dd,
        "chip": W.Dropdown(options=["gb200", "b200", "h200", "h100-sxm", "mi300x"], value=chip, description="chip"),
        "ep": ep,
        "tp": tp,
        "log2_microbatch": W.IntSlider(value=8, min=0, max=12, description="log2 b"),
        "context": W.IntSlider(value=32768, min=0, max=131072, step=4096, description="context"),
        "weight_dtype": W.Dropdown(options=["fp8", "bf16"], value="fp8", description="weights"),
    }, ncols=2, width=5.0, links={"model": place})

register('pipeline_placement_explorer', pipeline_placement_explorer)


# --- claim 24: pipelined decode, token latency and the sequences in flight --------------------------------------

_DECODE_STAGES = np.array([1, 2, 4, 8, 16])


def _setup_pipelined_decode(fig):
    ax, bx = fig.axes
    ax.set_xscale("log", base=2)
    ax.set_xlim(0.8, 20)
    ax.set_ylim(0, 25)
    ax.set_xlabel("pipeline stages P")
    ax.set_ylabel("token latency (ms)")
    ax.set_title("latency: stages (blue) + hops (orange);\nblack: P x slowest stage", fontsize=9)
    ax.grid(True, alpha=0.3)
    bx.set_xscale("log", base=2)
    bx.set_yscale("log")
    bx.set_xlim(0.8, 20)
    bx.set_ylim(100, 1e6)
    bx.set_xlabel("pipeline stages P")
    bx.set_ylabel("sequences in flight per replica")
    bx.set_title("P micro-batches of b in flight", fontsize=9)
    bx.grid(True, which="both", alpha=0.3)
    for a in (ax, bx):
        a.set_xticks(_DECODE_STAGES, [str(p) for p in _DECODE_STAGES], minor=False)
        a.set_xticks([], minor=True)


def _draw_pipelined_decode(fig, model, chip, stages, log2_microbatch, context, hop_us):
    from ... import parallelism
    from ...units import fmt_seconds

    ax, bx = fig.axes
    b, hop = 2 ** log2_microbatch, hop_us * 1e-6
    rows = [parallelism.pipelined_decode(model, chip, 64, int(P), b, context, hop_latency_s=hop, weight_dtype="fp8")
            for P in _DECODE_STAGES]
    sums = np.array([r.sum_of_stages_s for r in rows]) * 1e3
    hops = np.array([(P if P > 1 else 0) * hop for P in _DECODE_STAGES]) * 1e3
    paced = np.array([P * r.stage_s for P, r in zip(_DECODE_STAGES, rows)]) * 1e3
    x, w = _DECODE_STAGES, _DECODE_STAGES * 0.35
    artists = [_bars(fig, ax, "stages", x, sums, width=w, facecolor="C0"),
               _bars(fig, ax, "hops", x, hops, sums, width=w, facecolor="C1"),
               kept(fig, "paced", lambda: ax.plot(x, paced, "k_", markersize=14, mew=2)[0])]
    artists[-1].set_data(x, paced)
    flight = kept(fig, "flight", lambda: bx.plot(x, x * b, "C2o-")[0])
    flight.set_data(x, x * b)
    here = rows[int(np.flatnonzero(_DECODE_STAGES == stages)[0])]
    mark = kept(fig, "here", lambda: bx.plot([stages], [stages * b], "ko", ms=9)[0])
    mark.set_data([stages], [stages * b])
    artists += [flight, mark]
    one = rows[0]
    return artists, (
        f"<b>{model}</b> on 64 {chip} GPUs a stage (DP attention, EP64, fp8), micro-batch b = {b}, L = {context}, "
        f"hop {hop_us:.0f} us.<br>P = {stages}: token latency <b>{fmt_seconds(here.token_latency_s)}</b> "
        f"({here.token_latency_s / one.token_latency_s - 1:+.1%} vs one stage, {fmt_seconds(one.token_latency_s)}): "
        f"the stages' floors add up to the one-stage step, {stages if stages > 1 else 0} hops add "
        f"{fmt_seconds((stages if stages > 1 else 0) * hop)}, and the slowest stage x P "
        f"({fmt_seconds(stages * here.stage_s)}) sets the pace when it is longer. "
        f"Sequences in flight per replica: <b>{stages * b:,}</b> (P x b: each stage still needs its b; claim 25's "
        f"KV per GPU). Claim 24 holds while the hops stay a small share of the step.")


def pipelined_decode_explorer(model: str = "deepseek-v3", chip: str = "gb200") -> Explorer:
    """Claim 24: forward-only pipelined decode (:func:`llmmath.parallelism.pipelined_decode`): token latency by
    stages, hops and the slowest stage's pace, and the P x b sequences a replica keeps in flight."""
    import ipywidgets as W

    return explorer(_setup_pipelined_decode, _draw_pipelined_decode, {
        "model": W.Dropdown(options=["deepseek-v3", "kimi-k2"], value=model, description="model"),
        "chip": W.Dropdown(options=["gb200", "b200"], value=chip, description="chip"),
        "stages": W.SelectionSlider(options=[int(p) for p in _DECODE_STAGES], value=4, description="stages P"),
        "log2_microbatch": W.IntSlider(value=11, min=6, max=13, description="log2 b"),
        "context": W.IntSlider(value=8192, min=0, max=65536, step=1024, description="context L"),
        "hop_us": W.FloatSlider(value=30.0, min=0.0, max=1000.0, step=10.0, description="hop (us)"),
    }, ncols=2, width=4.5)


register('pipelined_decode_explorer', pipelined_decode_explorer)

