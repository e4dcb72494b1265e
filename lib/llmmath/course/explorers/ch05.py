"""Chapter 5: an expert layer's all-to-all inside a domain and across racks (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, kept
from . import register

__all__ = ['expert_parallel_explorer', 'scale_domain_explorer', 'domain_params_explorer']


def _setup_expert_parallel(fig):
    ax = fig.axes[0]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(64, 65536)
    ax.set_ylim(1e-6, 1e-2)
    ax.set_xlabel("decode batch per rack (sequences)")
    ax.set_ylabel("time per MoE layer (s)")
    ax.grid(True, alpha=0.3)
    ax.set_title("expert all-to-all vs the layer's decode floor", fontsize=10)

_RACK_BATCH = np.logspace(np.log10(64), np.log10(65536), 60)


def _layer_floor_s(m, sy, batch, context, ep):
    """One MoE layer's decode floor on a GPU of ``ep`` GPUs of system ``sy`` (fp8 weights, bf16 KV), and how it was got.

    The rack's own layout (:func:`llmmath.parallelism.stage_deployment`, chapter 6): each GPU serves
    ``batch / ep`` sequences with its own copy of the non-expert weights and holds ``1/ep`` of the
    experts. Every system's GPU is priced on its own roofline (:meth:`llmmath.hardware.System.package_chip`): the
    catalog chip where the system names one, else the chip its announced per-package figures make (Vera Rubin,
    Rubin Ultra, Helios; their bf16 rate is assumed from fp8 where only that is announced, and the chip says so).
    """
    from ... import parallelism

    chip = sy.package_chip()
    d = parallelism.stage_deployment(m, chip, ep, 1, weight_dtype="fp8")
    st = d.decode_stages(batch, context)
    return st.floor_s[0] / m.n_layers, (f"{chip.key} roofline" if sy.chip else
                                        f"roofline of {sy.key}'s announced GPU (not measured)")


def _draw_expert_parallel(fig, model, system, ep, racks, context, log2_batch):
    from ... import hardware, models, parallelism

    ax = fig.axes[0]
    m, sy = models.get(model), hardware.system(system)
    if not m.is_moe:
        return [], f"{model} is dense: pick a mixture-of-experts model"
    capped = ep > sy.packages
    ep = min(ep, sy.packages)   # one rack = one scale-up domain; beyond it, add racks (scale-out)
    layer, how = _layer_floor_s(m, sy, _RACK_BATCH, context, ep)
    one = parallelism.moe_layer_all_to_all_s(m, sy, ep, _RACK_BATCH, racks=1)
    many = parallelism.moe_layer_all_to_all_s(m, sy, ep, _RACK_BATCH, racks=racks)
    B = 2.0 ** log2_batch
    b_one = parallelism.moe_layer_all_to_all_s(m, sy, ep, B, racks=racks)
    b_layer = float(_layer_floor_s(m, sy, B, context, ep)[0])
    fits = parallelism.fits_per_gpu(m, sy.hbm_bytes_per_package, ep=ep, batch=_RACK_BATCH, context=context,
                                    weight_dtype="fp8")
    b_fits = bool(parallelism.fits_per_gpu(m, sy.hbm_bytes_per_package, ep=ep, batch=B, context=context,
                                           weight_dtype="fp8"))
    over, no = np.nonzero(~fits)[0], ~fits
    grey = dict(ls="--", color="0.6", lw=1.5)
    artists = [*ax.plot(_RACK_BATCH[fits], layer[fits], "k-", lw=2), *ax.plot(_RACK_BATCH[fits], one[fits], "C0-"),
               *ax.plot(_RACK_BATCH[fits], many[fits], "C3--"), *ax.plot(_RACK_BATCH[no], layer[no], **grey),
               *ax.plot(_RACK_BATCH[no], one[no], **grey), *ax.plot(_RACK_BATCH[no], many[no], **grey),
               *ax.plot([B], [b_one], "C3o"), *ax.plot([B], [b_layer], "ko")]
    cap_note = (f"<br>Grey dashed: weights + KV do not fit {ep} x {sy.hbm_bytes_per_package / 1e9:.0f} GB of HBM "
                f"(from B = {_RACK_BATCH[over[0]]:.0f} per rack at L = {context}): not a runnable configuration."
                if over.size else "")
    if not b_fits:
        cap_note += f" <b style='color:#b00'>B = {B:.0f} does not fit.</b>"
    note = (f" <b>GPUs per rack capped at {sy.name}'s scale-up domain of {sy.packages}</b>: more GPUs than that "
            f"leave the domain, so add racks instead." if capped else "")
    return artists, (f"black: one layer's decode floor on one of {ep} GPUs of {sy.name} ({how}, fp8 weights; each GPU serves "
                     f"B/{ep} sequences with its own copy of the non-expert weights); blue: "
                     f"all-to-all inside one rack; red: the layer spread over {racks} rack(s).<br>At B = {B:.0f} per "
                     f"rack: layer {b_layer * 1e6:.0f} us, all-to-all {b_one * 1e6:.0f} us ({b_one / b_layer:.0%} of "
                     f"the layer); scale-up/scale-out = {sy.scale_up_over_scale_out:.0f}x.{note}{cap_note}")


def expert_parallel_explorer(model: str = "deepseek-v3", system: str = "gb200-nvl72") -> Explorer:
    """All-to-all time of one MoE layer against the layer's decode floor, for 1 or more racks."""
    import ipywidgets as W

    from ... import hardware, models

    # models whose routed experts divide evenly over 8..128 GPUs (Mixtral's 8 experts cannot fill a rack)
    moe = [k for k, m in models.catalog().items() if m.is_moe and m.n_experts % 128 == 0]
    gpu_systems = [k for k, s in hardware.systems().items()
                   if np.isfinite(s.scale_up_over_scale_out) and s.vendor in ("NVIDIA", "AMD")]

    def widths(n):  # EP widths that divide every listed model's experts, within the domain
        return [w for w in (8, 16, 32, 64, 128) if w <= n] or [n]

    first = widths(hardware.system(system).packages)
    ep = W.SelectionSlider(options=first, value=64 if 64 in first else first[-1], description="GPUs/rack")
    sys_dd = W.Dropdown(options=gpu_systems, value=system, description="system")

    def cap(change):  # the GPUs of one rack cannot exceed the system's scale-up domain
        new = widths(hardware.system(change["new"]).packages)
        keep = ep.value if ep.value in new else new[-1]
        ep.options = new
        ep.value = keep

    return explorer(_setup_expert_parallel, _draw_expert_parallel, {
        "model": W.Dropdown(options=moe, value=model, description="model"),
        "system": sys_dd,
        "ep": ep,
        "racks": W.IntSlider(value=2, min=1, max=8, description="racks"),
        "context": W.IntSlider(value=4096, min=0, max=131072, step=4096, description="context"),
        "log2_batch": W.IntSlider(value=12, min=6, max=16, description="log2 B/rack"),
    }, width=7.0, links={"system": cap})

register('expert_parallel_explorer', expert_parallel_explorer)


# --- claims 17, 18, 27: scale-up vs scale-out, and how a domain is counted -------------------------------

_COUNTS = ("packages", "dies", "marketing_count")
_LINKS = ("scale_out_bytes_per_s_per_package", "scale_up_bytes_per_s_per_package", "hbm_bytes_per_s_per_package",
          "hbm_bytes_per_s")


def _setup_scale_domain(fig):
    ax, bx = fig.axes
    ax.set_yscale("log")
    ax.set_ylim(1, 3e4)
    ax.set_xlim(-0.6, 2.6)
    ax.set_xticks(range(3), ["packages", "dies", "number in\nthe name"])
    ax.set_ylabel("count in one scale-up domain")
    ax.set_title("domain size, counted three ways", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    bx.set_yscale("log")
    bx.set_ylim(1e10, 1e17)
    bx.set_xlim(-0.6, 3.6)
    bx.set_xticks(range(4), ["scale-out\nper GPU", "scale-up\nper GPU", "HBM\nper GPU", "HBM\nwhole domain"])
    bx.set_ylabel("bytes/s (per direction)")
    bx.set_title("bandwidths: grey = baseline, blue = system", fontsize=10)
    bx.grid(True, axis="y", alpha=0.3)


def _draw_scale_domain(fig, system, baseline):
    from ... import hardware, parallelism

    ax, bx = fig.axes
    s, b = hardware.system(system), hardware.system(baseline)
    g = parallelism.domain_growth(s, b)
    x3, x4 = np.arange(3), np.arange(4)
    artists = []
    for key, axes, x, fields, system, color in (("counts, baseline", ax, x3 - 0.2, _COUNTS, b, "0.7"),
                                                ("counts", ax, x3 + 0.2, _COUNTS, s, "C0"),
                                                ("links, baseline", bx, x4 - 0.2, _LINKS, b, "0.7"),
                                                ("links", bx, x4 + 0.2, _LINKS, s, "C0")):
        # the bars are made once and given new heights (making them costs more than drawing them)
        bars = kept(fig, key, lambda axes=axes, x=x, color=color: axes.bar(x, np.ones(len(x)), 0.4, color=color))
        for bar, f in zip(bars, fields):
            bar.set_height(getattr(system, f))
        artists += bars
    ratio = (f"{s.scale_up_over_scale_out:.1f}x" if np.isfinite(s.scale_up_over_scale_out)
             else "not published (no per-GPU NIC figure)")
    return artists, (
        f"<b>{s.name}</b> ({s.year}): {s.packages} packages, {s.dies} dies, {s.marketing_count} in the name. "
        f"Against {b.name}: <b>{g.packages:.1f}x packages, {g.dies:.1f}x dies, {g.marketing_count:.1f}x by name</b> "
        f"(claim 18: what the 'genuine' growth is depends on which you count).<br>"
        f"Per GPU: scale-up {s.scale_up_bytes_per_s_per_package / 1e9:.0f} GB/s ({s.scale_up_name or 'n/a'}), "
        f"scale-out {s.scale_out_bytes_per_s_per_package / 1e9:.0f} GB/s ({s.scale_out_name or 'n/a'}): "
        f"<b>up/out = {ratio}</b> (claim 17: about 8x).<br>"
        f"HBM bandwidth: per GPU {g.per_gpu_hbm_bytes_per_s:.2f}x the baseline's, whole domain "
        f"<b>{g.domain_hbm_bytes_per_s:.1f}x</b> ({s.hbm_bytes_per_s / 1e12:.0f} vs {b.hbm_bytes_per_s / 1e12:.0f} TB/s; "
        f"= {g.packages:.1f}x packages x {g.per_gpu_hbm_bytes_per_s:.2f}x per GPU, claim 27); "
        f"domain HBM {s.hbm_bytes / 1e12:.1f} TB ({g.domain_hbm_bytes:.1f}x).")


def scale_domain_explorer(system: str = "gb200-nvl72", baseline: str = "hgx-h100") -> Explorer:
    """A system's domain counted as packages, dies and by name, and its per-GPU and domain bandwidths, vs a baseline."""
    import ipywidgets as W

    from ... import hardware

    keys = [k for k, s in hardware.systems().items()
            if np.isfinite(s.hbm_bytes_per_s_per_package) and np.isfinite(s.hbm_bytes_per_package)]
    return explorer(_setup_scale_domain, _draw_scale_domain, {
        "system": W.Dropdown(options=keys, value=system, description="system"),
        "baseline": W.Dropdown(options=keys, value=baseline, description="baseline"),
    }, ncols=2, width=4.6)

register('scale_domain_explorer', scale_domain_explorer)


# --- claim 19: total parameters bounded by the domain, active by compute ---------------------------------

_PARAM_MODELS = ("llama-3.1-70b", "mixtral-8x7b", "gpt-oss-120b", "qwen3-235b-a22b", "llama-3.1-405b",
                 "deepseek-v3", "kimi-k2")


def _setup_domain_params(fig):
    from ... import models

    ax = fig.axes[0]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(1e9, 1e13)
    ax.set_ylim(1e10, 1e15)
    ax.set_xlabel("active parameters per token")
    ax.set_ylabel("total parameters")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title("what one scale-up domain can serve in one step", fontsize=10)
    for k in _PARAM_MODELS:
        m = models.get(k)
        left = k == "kimi-k2"  # 0.19 decades above DeepSeek-V3 at nearly its active count: labelled on its left
        ax.annotate(k, (m.active_params, m.total_params), xytext=(-5 if left else 5, 3), textcoords="offset points",
                    fontsize=8, ha="right" if left else "left")


def _draw_domain_params(fig, system, step_ms, log2_batch, context, weight_dtype):
    from ... import models, parallelism

    ax = fig.axes[0]
    B = 2.0 ** log2_batch
    lim = parallelism.domain_parameter_limits(system, step_ms * 1e-3, B, weight_dtype)
    fill = parallelism.domain_hbm_fill(_PARAM_MODELS, system, B, context, weight_dtype)
    ms = [models.get(k) for k in _PARAM_MODELS]
    act = np.array([m.active_params for m in ms])
    tot = np.array([m.total_params for m in ms])
    fits = fill <= 1
    artists = [ax.axhline(lim.capacity_total_params, color="C2", ls="--", lw=1.5),
               ax.axhline(lim.read_total_params, color="C3", lw=2),
               ax.axvline(lim.compute_active_params, color="C1", lw=2),
               *ax.plot(act[fits], tot[fits], "o", color="C0"),
               *ax.plot(act[~fits], tot[~fits], "x", color="0.5", ms=8)]
    no = [k for k, f in zip(_PARAM_MODELS, fits) if not f]
    return artists, (
        f"On <b>{system}</b>, {weight_dtype} weights, a {step_ms:.0f} ms step, B = {B:.0f}: "
        f"<span style='color:#d62728'>red</span>: total &le; {lim.read_total_params / 1e12:.2f} T "
        f"(every weight read once per step at the domain's HBM bandwidth; pipelining cannot lift this); "
        f"<span style='color:#2ca02c'>green dashed</span>: total &le; {lim.capacity_total_params / 1e12:.2f} T "
        f"(weights alone fill the domain's HBM; pipelining over domains lifts this); "
        f"<span style='color:#ff7f0e'>orange</span>: active &le; {lim.compute_active_params / 1e9:.0f} B "
        f"(2 B N_act FLOPs per step at the domain's bf16 FLOP/s).<br>"
        f"Blue dots fit weights + KV for B = {B:.0f} at L = {context}; <b>grey crosses do not fit</b> the domain's "
        f"HBM (they would need pipelining over several domains): {', '.join(no) if no else 'none'}.")


def domain_params_explorer(system: str = "gb200-nvl72") -> Explorer:
    """Total and active parameters one domain can serve, against real models (claim 19)."""
    import ipywidgets as W

    from ... import hardware

    keys = [k for k, s in hardware.systems().items()
            if np.isfinite(s.bf16_flops_per_s_per_package) and np.isfinite(s.hbm_bytes_per_s_per_package)
            and s.packages <= 1024]
    return explorer(_setup_domain_params, _draw_domain_params, {
        "system": W.Dropdown(options=keys, value=system, description="system"),
        "step_ms": W.FloatSlider(value=20, min=5, max=100, step=5, description="step (ms)"),
        "log2_batch": W.IntSlider(value=11, min=4, max=14, description="log2 B"),
        "context": W.IntSlider(value=8192, min=0, max=131072, step=4096, description="context"),
        "weight_dtype": W.Dropdown(options=["fp8", "bf16", "fp4"], value="fp8", description="weights"),
    }, width=7.0, height=3.2)

register('domain_params_explorer', domain_params_explorer)
