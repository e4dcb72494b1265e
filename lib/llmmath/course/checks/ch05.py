"""Checks of chapter 5 (experts on a rack): claims 16, 17, 18, 19, 27."""

from __future__ import annotations

import numpy as np

from ... import hardware, models, parallelism, serving
from ._sheets import require_sheets
from ..claims import Verdict, register, require
from . import ch06
from .ch03 import _deepseek_v3_by_hand, _kimi_k2_by_hand

# Datasheet scale-up / scale-out per GPU per direction: NVLink 5 900 GB/s over ConnectX-7 400 Gb/s (50 GB/s) on
# GB200 NVL72, over ConnectX-8 800 Gb/s (100 GB/s) on GB300 NVL72.
_UP_OVER_OUT = {"gb200-nvl72": 900 / 50, "gb300-nvl72": 900 / 100}
# The all-to-all's latency and achieved rate, by hand from their sources: DeepSeek's measured 64-byte latencies
# (arXiv:2505.09343's table: NVLink inside a node 3.33 us, InfiniBand across leaves 3.7 us), one per collective
# (every message issued at once); DeepEP's EP256 low-latency combine moves 128 tokens x 8 experts x 7,168 bf16
# values a rank in 360 us (its README), 40.8 GB/s of a 400 Gb/s NIC's 50: 0.82 of the link.
_ALPHA_IN_RACK_S, _ALPHA_ACROSS_S = 3.33e-6, 3.7e-6
_ETA = round(128 * 8 * 7168 * 2 / 360e-6 / 50e9, 2)
# DeepSeek-V3 and Kimi K2 (config.json): hidden 7,168, 8 routed experts a token; dispatch fp8 (1 B), combine bf16 (2 B).
_D_MODEL, _TOP_K = 7168, 8
# Layers from config.json (num_hidden_layers): both 61; DeepSeek-V3 256 routed experts, Kimi K2 384 (4 and 6 per GPU on 64).
_LAYERS = {"deepseek-v3": 61, "kimi-k2": 61}


@register(16)
def _check_16() -> Verdict:
    require_sheets(16, chips=['gb200'], systems="all", models_=['deepseek-v3', 'kimi-k2'])
    B, L = 4096, 4096
    rows, slow, share, share2, latency_share = {}, {}, {}, {}, {}
    for model, n_layers in _LAYERS.items():
        m = models.get(model)
        # GB300's per-GPU HBM bandwidth is GB200's 8 TB/s (systems.toml), so one chip entry serves both. The
        # layer time is a GPU's in the rack's own layout (chapter 6): 64 sequences each, its own copy of the
        # non-expert weights, 1/64 of the experts; pooling the bytes over the 64 GPUs would make it 1.3-1.6x shorter.
        step_s = float(parallelism.stage_floors_s(m, "gb200", 64, 1, B, L, weight_dtype="fp8")[0])
        pooled_s = serving.decode_step(m, "gb200", B, L, n_chips=64, weight_dtype="fp8", check_capacity=False).time_s
        hand_s = float(ch06._ds_stage_floors_hand(1, B, L, c=ch06._CONFIGS[model])[0])
        require(abs(step_s / hand_s - 1) < 2e-3, 16,
                f"{model}: placed step {step_s * 1e3:.3f} ms vs hand {hand_s * 1e3:.3f} ms (config dims, GB200 sheet)")
        layer_s = step_s / n_layers
        rows[f"{model}: decode step per GPU, placed / pooled"] = f"{step_s * 1e3:.2f} ms / {pooled_s * 1e3:.2f} ms"
        for key, ratio in _UP_OVER_OUT.items():
            sy = hardware.system(key)
            one = parallelism.moe_layer_all_to_all_s(m, sy, 64, B, racks=1)
            two = parallelism.moe_layer_all_to_all_s(m, sy, 64, B, racks=2)
            # by hand: each GPU sends its B/64 tokens to 8 experts (fp8 out, bf16 back), (n-1)/n of it off the GPU;
            # one latency per collective (2 a layer); in one rack all of it at eta beta_up, across two racks half at
            # eta beta_out. Bandwidth alone would give 0.5 x the link ratio (9x on GB200, 4.5x on GB300).
            up_bps, out_bps = 900e9, 900e9 / ratio
            sent = lambda n: B / 64 * _TOP_K * _D_MODEL * (1 + 2) * (n - 1) / n
            hand_one = 2 * _ALPHA_IN_RACK_S + sent(64) / (_ETA * up_bps)
            hand_two = 2 * _ALPHA_ACROSS_S + max(0.5 * sent(128) / (_ETA * up_bps), 0.5 * sent(128) / (_ETA * out_bps))
            require(abs(one / hand_one - 1) < 1e-3 and abs(two / hand_two - 1) < 1e-3, 16,
                    f"{model} on {key}: all-to-all {one * 1e6:.1f} / {two * 1e6:.1f} us vs hand "
                    f"{hand_one * 1e6:.1f} / {hand_two * 1e6:.1f} us (datasheet links, DeepSeek's latencies, DeepEP's rate)")
            wire_only = 0.5 * ratio * (127 / 128) / (63 / 64)
            latency_share[(model, key)] = 2 * _ALPHA_IN_RACK_S / hand_one
            rows[f"{model} on {key}: 2-rack slowdown, bandwidth alone / with the latency"] = (
                f"{wire_only:.1f}x / {two / one:.1f}x")
            require(one < 0.25 * layer_s and two > 0.5 * layer_s, 16,
                    f"{model} on {key}: all-to-all {one * 1e6:.0f}/{two * 1e6:.0f} us vs layer {layer_s * 1e6:.0f} us")
            slow[(model, key)] = two / one
            share[(model, key)] = one / layer_s
            share2[(model, key)] = two / layer_s
            rows[f"{model} on {key}: per-layer decode floor / all-to-all in 1 rack / in 2 racks"] = (
                f"{layer_s * 1e6:.0f} us / {one * 1e6:.0f} us / {two * 1e6:.0f} us")
    h800 = parallelism.deployments()["deepseek-v3-report-decode"]
    # H800 datasheet: NVLink 400 GB/s bidirectional (200 a direction), one 400 Gb/s NIC a GPU (50 GB/s a direction);
    # the report's achieved figures can only be below them (an H100's 450 GB/s, or a NIC counted both ways, cannot)
    require(h800["scale_up_bytes_per_s"] <= 400e9 / 2 and h800["scale_out_bytes_per_s"] <= 400e9 / 8, 16,
            f"H800 deployment links {h800['scale_up_bytes_per_s'] / 1e9:.0f} / {h800['scale_out_bytes_per_s'] / 1e9:.0f}"
            f" GB/s exceed the H800 datasheet's 200 / 50 GB/s a direction")
    ratio_h800 = h800["scale_up_bytes_per_s"] / h800["scale_out_bytes_per_s"]
    rows["DeepSeek's own decode (H800): EP / GPUs / NVLink:IB ratio"] = (
        f"EP{h800['expert_parallel']} over {h800['nodes']} nodes of 8; ratio {ratio_h800:.1f}, "
        f"so leaving the node costs only {0.5 * ratio_h800:.1f}x (2 domains) .. {ratio_h800 * (1 - 8 / 320):.1f}x (40)")
    require(h800["expert_parallel"] > h800["gpus_per_node"], 16, "DeepSeek's decode EP no longer spans nodes")
    return Verdict(16, "holds if",
                   f"holds as a cost cliff, not a wall: on an NVL72, DeepSeek-V3's and Kimi K2's all-to-all fits "
                   f"under each layer's decode time inside one rack (at most {max(share.values()):.0%} of it, "
                   f"{max(latency_share.values()):.0%} of that the two collectives' per-message latency) "
                   f"but takes {min(slow.values()):.1f}-{max(slow.values()):.1f}x longer, "
                   f"{min(share2.values()):.0%}-{max(share2.values()):.0%} of the layer's decode time (each GPU "
                   f"reading its own copy of the non-expert weights), once the layer spans two racks at the same "
                   f"load per GPU; practice does cross domains "
                   f"(DeepSeek's EP{h800['expert_parallel']} over InfiniBand) where the scale-up/scale-out ratio is "
                   f"small and communication is overlapped",
                   {**rows, "2-rack slowdown, GB200 (CX-7) / GB300 (CX-8)":
                    f"{slow[('deepseek-v3', 'gb200-nvl72')]:.1f}x / {slow[('deepseek-v3', 'gb300-nvl72')]:.1f}x",
                    "batch, context, EP, weights": "4096 sequences, 4096 tokens, 64 GPUs per rack, fp8"})


@register(17)
def _check_17() -> Verdict:
    require_sheets(17, systems="all")
    gpu = {k: s.scale_up_over_scale_out for k, s in hardware.systems().items()
           if s.vendor in ("NVIDIA", "AMD") and np.isfinite(s.scale_up_over_scale_out) and not s.superseded_by}
    tpu = {k: s.scale_up_over_scale_out for k, s in hardware.systems().items()
           if s.vendor == "Google" and np.isfinite(s.scale_up_over_scale_out)}
    # Hand anchors: HGX H100 450 GB/s NVLink per direction / 50 GB/s (400 Gb/s NIC) = 9;
    # GB200 NVL72 900 / 50 = 18 (ConnectX-7); GB300 NVL72 900 / 100 = 9 (ConnectX-8).
    for key, want in (("hgx-h100", 450 / 50), ("gb200-nvl72", 900 / 50), ("gb300-nvl72", 900 / 100)):
        require(abs(gpu[key] / want - 1) < 1e-9, 17, f"{key}: {gpu[key]:.2f} vs datasheet {want:.2f}")
    v = np.array(list(gpu.values()))
    med = float(np.median(v))
    require(6 <= med <= 12 and v.min() >= 3 and v.max() <= 20, 17,
             f"GPU systems' scale-up/scale-out ratio now median {med:.1f}, range {v.min():.1f}..{v.max():.1f}")
    h800 = parallelism.deployments()["deepseek-v3-report-decode"]
    return Verdict(17, "holds",
                   f"for GPU systems the per-GPU ratio is {v.min():.0f}-{v.max():.0f}x (median {med:.0f}x): "
                   f"~{gpu['hgx-h100']:.0f}x when each GPU gets a NIC of its generation (HGX H100; GB300 "
                   f"{gpu['gb300-nvl72']:.0f}x), {gpu['gb200-nvl72']:.0f}x on GB200 racks wired with 400 Gb/s NICs; TPU pods "
                   "(ICI vs data-center network) sit far higher, and export-limited H800s far lower",
                   {"by system": ", ".join(f"{k} {r:.1f}" for k, r in gpu.items()),
                    "TPU pods": ", ".join(f"{k} {r:.0f}" for k, r in tpu.items()),
                    "H800 (DeepSeek-V3 report)": f"{h800['scale_up_bytes_per_s'] / h800['scale_out_bytes_per_s']:.1f}"})


@register(18)
def _check_18() -> Verdict:
    require_sheets(18, systems="all")
    a, b = hardware.system("gb200-nvl72"), hardware.system("rubin-ultra-nvl576")
    pk, die, bw, cap = (b.packages / a.packages, b.dies / a.dies, b.hbm_bytes_per_s / a.hbm_bytes_per_s,
                        b.hbm_bytes / a.hbm_bytes)
    name = b.marketing_count / a.marketing_count
    require(pk == 2 and die == 4 and name == 8, 18, f"counts changed: packages {pk}, dies {die}, name {name}")
    require(bw >= 4, 18, f"aggregate HBM bandwidth grows only {bw:.1f}x")
    return Verdict(18, "holds if",
                   f"holds if 'genuine' means compute dies or memory: NVL72 -> NVL576 is {name:.0f}x by the name, but "
                   f"{pk:.0f}x in packages, {die:.0f}x in dies and {bw:.0f}x in aggregate HBM bandwidth (roadmap "
                   f"figures); the GPU packages that one NVLink domain joins only double, while the links between "
                   f"them grow with their bandwidth per GPU",
                   {"NVL72 -> Rubin Ultra NVL576": f"name {name:.0f}x, packages {pk:.0f}x, dies {die:.0f}x, "
                    f"HBM bandwidth {bw:.0f}x, HBM capacity {cap:.1f}x",
                    "caveat": "Rubin Ultra figures are 2025 roadmap numbers (see systems.toml 'unverified')"})


@register(19)
def _check_19() -> Verdict:
    require_sheets(19, systems="all", models_=['deepseek-v3', 'kimi-k2'])
    h, g = hardware.system("hgx-h100"), hardware.system("gb200-nvl72")
    rows = {}
    for n_tot in (1e12, 2e12, 5e12):
        w = n_tot * 1.0  # fp8 bytes
        rows[f"{n_tot / 1e12:.0f}T params, fp8"] = (
            f"fits HGX H100: {w <= h.hbm_bytes}, NVL72: {w <= g.hbm_bytes}; weight-read floor "
            f"{w / h.hbm_bytes_per_s * 1e3:.0f} ms on HGX H100 bandwidth vs {w / g.hbm_bytes_per_s * 1e3:.1f} ms on NVL72")
    # The bound that survives pipelining: total params readable in a 20 ms step at fp8.
    cap_h, cap_g = 0.02 * h.hbm_bytes_per_s / 1.0, 0.02 * g.hbm_bytes_per_s / 1.0
    require(cap_g / cap_h > 20 and g.hbm_bytes / h.hbm_bytes > 20, 19, "NVL72 no longer ~20x an HGX H100")
    # Two real models on the two domains, by hand: DeepSeek-V3 and Kimi K2's totals from their config.json (claim
    # 9's counts), fp8 (1 byte each), against the HGX H100 (8 x 80 GB, 8 x 3.35 TB/s) and GB200 NVL72 (13.4 TB,
    # 72 x 8 TB/s) datasheets.
    sheets = {"HGX H100": (h, 8 * 80e9, 8 * 3.35e12), "NVL72": (g, 13.4e12, 72 * 8e12)}
    for name, (sy, cap, bw) in sheets.items():
        require(abs(sy.hbm_bytes / cap - 1) < 0.01 and abs(sy.hbm_bytes_per_s / bw - 1) < 0.01, 19,
                f"{name}: catalog {sy.hbm_bytes / 1e12:.2f} TB at {sy.hbm_bytes_per_s / 1e12:.1f} TB/s vs datasheet "
                f"{cap / 1e12:.2f} TB at {bw / 1e12:.1f} TB/s")
    domain_rows = {}
    for m_, (tot, act) in (("deepseek-v3", _deepseek_v3_by_hand()), ("kimi-k2", _kimi_k2_by_hand())):
        lib_w = models.get(m_).weight_bytes("fp8")
        require(abs(lib_w / tot - 1) < 1e-6, 19, f"{m_}: fp8 weights {lib_w / 1e9:.1f} GB vs hand {tot / 1e9:.1f} GB")
        floors = {name: tot / bw for name, (_, _, bw) in sheets.items()}
        # a domain caps the total: on one HGX H100 neither fits nor is read within a 20 ms step; an NVL72 does both
        require(tot > sheets["HGX H100"][1] and floors["HGX H100"] > 0.02 and
                tot < sheets["NVL72"][1] and floors["NVL72"] < 0.002, 19,
                f"{m_} ({tot / 1e12:.2f}T fp8): HGX H100 / NVL72 read floors {floors['HGX H100'] * 1e3:.1f} / "
                f"{floors['NVL72'] * 1e3:.2f} ms no longer bracket the 20 ms step")
        domain_rows[m_] = (tot, act, floors)
    # Active params are priced by compute: chip-seconds per token = 2 N_act / F at saturation.
    ds, k2 = models.get("deepseek-v3"), models.get("kimi-k2")
    return Verdict(19, "holds if",
                   "holds if 'limited by scale-up size' is read as limited by the domain's aggregate bandwidth "
                   "(latency), as the speaker later refines: pipelining removes the capacity limit, but a step must "
                   f"still read every weight, so at 20 ms per step an HGX H100 serves at most {cap_h / 1e12:.2f}T "
                   f"fp8 parameters and an NVL72 {cap_g / 1e12:.1f}T -- DeepSeek-V3 ({domain_rows['deepseek-v3'][0] / 1e12:.2f}T) "
                   f"and Kimi K2 ({domain_rows['kimi-k2'][0] / 1e12:.2f}T) neither fit an HGX H100 nor can be read "
                   f"there in 20 ms ({domain_rows['deepseek-v3'][2]['HGX H100'] * 1e3:.0f} and "
                   f"{domain_rows['kimi-k2'][2]['HGX H100'] * 1e3:.0f} ms), while an NVL72 reads either in under 2 ms; "
                   f"active parameters set compute cost per token",
                   {**rows, "HBM: HGX H100 / NVL72": f"{h.hbm_bytes / 1e12:.2f} TB / {g.hbm_bytes / 1e12:.1f} TB",
                    **{f"{m_} by hand (config), fp8: weight-read floor HGX H100 / NVL72":
                       f"{t / 1e12:.3f}T total, {a / 1e9:.1f}B active: {f['HGX H100'] * 1e3:.1f} / {f['NVL72'] * 1e3:.2f} ms"
                       for m_, (t, a, f) in domain_rows.items()},
                    "largest published MoEs (total / active)": f"Kimi K2 {k2.total_params / 1e12:.2f}T / "
                    f"{k2.active_params / 1e9:.0f}B, DeepSeek-V3 {ds.total_params / 1e12:.2f}T / {ds.active_params / 1e9:.0f}B"})


@register(27)
def _check_27() -> Verdict:
    require_sheets(27, systems="all")
    h, g = hardware.system("hgx-h100"), hardware.system("gb200-nvl72")
    domain, per_gpu, total = g.packages / h.packages, g.hbm_bytes_per_s_per_package / h.hbm_bytes_per_s_per_package, \
        g.hbm_bytes_per_s / h.hbm_bytes_per_s
    # Hand: 72 x 8 TB/s = 576 TB/s against 8 x 3.35 TB/s = 26.8 TB/s.
    require(abs(total - 576 / 26.8) < 1e-9, 27, f"aggregate growth {total:.2f} vs hand 21.5")
    require(domain > per_gpu, 27, "per-GPU bandwidth outgrew the domain")
    return Verdict(27, "holds",
                   f"the domain grew {domain:.0f}x ({h.packages} -> {g.packages} GPUs; the speaker's 'about 8x') while "
                   f"per-GPU HBM bandwidth grew {per_gpu:.1f}x ({h.hbm_bytes_per_s_per_package / 1e12:.2f} -> "
                   f"{g.hbm_bytes_per_s_per_package / 1e12:.0f} TB/s), so the bandwidth one model can stream grew "
                   f"{total:.1f}x, cutting the weight-read latency floor by the same factor. The ~8x is the domain's "
                   f"growth: as a figure for the domain's memory bandwidth it is {total / 8:.1f}x too low. The "
                   f"per-GPU step itself, {per_gpu:.2f}x in one generation, is "
                   + ("above" if per_gpu > 2 else "within" if per_gpu >= 1.5 else "below")
                   + " the 1.5-2x per generation the claim states",
                   {"HGX H100 -> GB200 NVL72": f"domain {domain:.0f}x x per-GPU {per_gpu:.2f}x = {total:.1f}x "
                    f"({h.hbm_bytes_per_s / 1e12:.1f} -> {g.hbm_bytes_per_s / 1e12:.0f} TB/s)"})
