"""Chapter 5: an expert layer's all-to-all inside a domain and across racks (see :mod:`llmmath.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer
from . import register

__all__ = ['expert_parallel_explorer']


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
    """One MoE layer's decode floor on ``ep`` GPUs of system ``sy`` (fp8 weights, bf16 KV), and how it was got.

    A system whose GPU is in the chip catalog uses that chip's roofline
    (:func:`llmmath.serving.decode_step`). The others (GB300, Vera Rubin, Rubin Ultra,
    MI355X, Helios ...) use their own per-package HBM bandwidth from ``systems.toml``: the
    memory floor, weights read plus KV over ``ep`` packages' bandwidth, without a compute
    term (their per-GPU fp8 FLOP/s are not all published).
    """
    from .. import serving

    if sy.chip:
        t = serving.decode_step(m, sy.chip, batch, context, n_chips=ep, weight_dtype="fp8",
                                check_capacity=False).time_s
        return t / m.n_layers, f"{sy.chip} roofline"
    read = np.asarray(m.expected_params_read(batch)) * 1.0 + np.asarray(batch) * context * m.kv_bytes_per_token("bf16")
    t = read / (ep * sy.hbm_bytes_per_s_per_package)
    return t / m.n_layers, f"memory floor at {sy.hbm_bytes_per_s_per_package / 1e12:.1f} TB/s per GPU"


def _draw_expert_parallel(fig, model, system, ep, racks, context, log2_batch):
    from .. import hardware, models, parallelism

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
    artists = [*ax.plot(_RACK_BATCH, layer, "k-", lw=2), *ax.plot(_RACK_BATCH, one, "C0-"),
               *ax.plot(_RACK_BATCH, many, "C3--"), *ax.plot([B], [b_one], "C3o"), *ax.plot([B], [b_layer], "ko")]
    note = (f" <b>GPUs per rack capped at {sy.name}'s scale-up domain of {sy.packages}</b>: more GPUs than that "
            f"leave the domain, so add racks instead." if capped else "")
    return artists, (f"black: one layer's decode floor on {ep} GPUs of {sy.name} ({how}, fp8 weights); blue: "
                     f"all-to-all inside one rack; red: the layer spread over {racks} rack(s).<br>At B = {B:.0f} per "
                     f"rack: layer {b_layer * 1e6:.0f} us, all-to-all {b_one * 1e6:.0f} us ({b_one / b_layer:.0%} of "
                     f"the layer); scale-up/scale-out = {sy.scale_up_over_scale_out:.0f}x.{note}")


def expert_parallel_explorer(model: str = "deepseek-v3", system: str = "gb200-nvl72") -> Explorer:
    """All-to-all time of one MoE layer against the layer's decode floor, for 1 or more racks."""
    import ipywidgets as W

    from .. import hardware, models

    moe = [k for k, m in models.catalog().items() if m.is_moe]
    gpu_systems = [k for k, s in hardware.systems().items()
                   if np.isfinite(s.scale_up_over_scale_out) and s.vendor in ("NVIDIA", "AMD")]
    domain = hardware.system(system).packages
    ep = W.IntSlider(value=min(64, domain), min=min(8, domain), max=domain, step=8 if domain % 8 == 0 else 1,
                     description="GPUs/rack")
    sys_dd = W.Dropdown(options=gpu_systems, value=system, description="system")

    def cap(change):  # the GPUs of one rack cannot exceed the system's scale-up domain
        n = hardware.system(change["new"]).packages
        ep.max = max(n, ep.min)
        ep.value = min(ep.value, n)

    sys_dd.observe(cap, names="value")
    return explorer(_setup_expert_parallel, _draw_expert_parallel, {
        "model": W.Dropdown(options=moe, value=model, description="model"),
        "system": sys_dd,
        "ep": ep,
        "racks": W.IntSlider(value=2, min=1, max=8, description="racks"),
        "context": W.IntSlider(value=4096, min=0, max=131072, step=4096, description="context"),
        "log2_batch": W.IntSlider(value=12, min=6, max=16, description="log2 B/rack"),
    }, width=7.0)

register('expert_parallel_explorer', expert_parallel_explorer)
