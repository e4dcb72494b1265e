"""Checks of chapter 6 (pipelining): claims 20, 21, 22, 24, 25, 26."""

from __future__ import annotations

import numpy as np

from ... import hardware, parallelism, serving
from ._sheets import require_sheets
from ..claims import Verdict, register, require

# Per-GPU bandwidths per direction from the datasheets: HGX H100 NVLink 4 450 GB/s, NVL72 NVLink 5 900 GB/s;
# ConnectX-7 400 Gb/s = 50 GB/s (HGX H100, GB200 NVL72), ConnectX-8 800 Gb/s = 100 GB/s (GB300 NVL72).
_LINKS = {"hgx-h100": (450e9, 50e9), "gb200-nvl72": (900e9, 50e9), "gb300-nvl72": (900e9, 100e9)}
# GPUs in one scale-up domain (datasheets): HGX H100 8 GPUs on NVSwitch; GB200/GB300 NVL72 72 GPUs.
_DOMAIN = {"hgx-h100": 8, "gb200-nvl72": 72, "gb300-nvl72": 72}
# Routed experts per token from three MoE config.json files (num_experts_per_tok).
_TOPK = {"deepseek-v3": 8, "kimi-k2": 8, "qwen3-235b-a22b": 8}


@register(20)
def _check_20() -> Verdict:
    require_sheets(20, systems="all", models_=['deepseek-v3', 'kimi-k2', 'qwen3-235b-a22b', 'gpt-oss-120b'])
    rows = {}
    need = {}
    layers = np.arange(1, 9)
    for key, (up, out) in _LINKS.items():
        sy = hardware.system(key)
        require(abs(sy.scale_up_bytes_per_s_per_package / up - 1) < 0.01 and
                abs(sy.scale_out_bytes_per_s_per_package / out - 1) < 0.01, 20,
                f"{key}: catalog links {sy.scale_up_bytes_per_s_per_package / 1e9:.0f} / "
                f"{sy.scale_out_bytes_per_s_per_package / 1e9:.0f} GB/s vs datasheet {up / 1e9:.0f} / {out / 1e9:.0f}")
        # The expert group must share the scale-up link it is priced on: EP64, capped at the domain
        # (an HGX H100 box's NVLink domain is 8 GPUs, so EP8 there).
        ep = min(64, _DOMAIN[key])
        require(sy.packages == _DOMAIN[key] and ep <= sy.packages, 20,
                f"{key}: EP{ep} on a {sy.packages}-package scale-up domain (datasheet {_DOMAIN[key]})")
        for model, k in _TOPK.items():
            r = parallelism.boundary_traffic_ratio(model, layers, ep, up, out)
            # hand: k layers (dispatch fp8 1 B + combine bf16 2 B) / (activation bf16 2 B) x (E-1)/E x beta_out / beta_up
            hand = k * 3 * (ep - 1) / ep * layers * out / up / 2
            require(np.allclose(r, hand), 20, f"{model} on {key}: ratio {r[0]:.3f} vs hand {hand[0]:.3f}")
            need[(model, key)] = int(np.argmax(r >= 1)) + 1 if np.any(r >= 1) else 99
        rows[f"{key}, EP{ep} (scale-up/out {up / out:.0f}x): DeepSeek-V3 / Kimi K2 / Qwen3-235B"] = (
            f"ratio at 1 layer/stage "
            f"{' / '.join(f'{k * 3 * (ep - 1) / ep * out / up / 2:.2f}' for k in _TOPK.values())}; "
            f">= 1 from {' / '.join(str(need[(m, key)]) for m in _TOPK)} layers")
    require(max(need.values()) <= 4, 20, f"a stage now needs {max(need.values())} layers to hide its boundary")
    gap = [up / out for up, out in _LINKS.values()]
    return Verdict(20, "holds",
                   "per token, a stage boundary carries one activation while every MoE layer inside the stage "
                   "moves it to k experts and back; with k = 8 (DeepSeek-V3, Kimi K2, Qwen3-235B-A22B) the in-rack "
                   f"traffic exceeds the boundary's (scaled by the {min(gap):.0f}-{max(gap):.0f}x bandwidth gap) with "
                   f"{min(need.values())}-{max(need.values())} layers per stage",
                   rows)


# DeepSeek-V3's published config (huggingface.co/deepseek-ai/DeepSeek-V3, config.json), written here so the
# checks below derive bytes by hand instead of reading models.toml.
_DS = dict(layers=61, dense_layers=3, d=7168, d_ff=18432, experts=256, shared=1, k=8, d_expert=2048, vocab=129280,
           q_rank=1536, kv_rank=512, heads=128, nope=128, rope=64, v=128)
_DS_PUBLISHED_TOTAL = 671e9  # model card: "671B total parameters"
# Kimi K2 (huggingface.co/moonshotai/Kimi-K2-Instruct, config.json): DeepSeek-V3's architecture with 64 heads,
# 384 routed experts, first_k_dense_replace 1 and vocab 163,840; model card "1T total parameters" (rounded).
_KIMI = dict(_DS, dense_layers=1, experts=384, vocab=163840, heads=64)
_KIMI_PUBLISHED_TOTAL = 1e12
_CONFIGS = {"deepseek-v3": _DS, "kimi-k2": _KIMI}
# HGX B200 datasheet per GPU (system / 8, sparse halved): 8 TB/s HBM3e, 4.5 PFLOP/s dense fp8.
_B200_W, _B200_F8 = 8e12, 4.5e15
# GB300 NVL72 datasheet: 288 GB HBM3e per Blackwell Ultra GPU (20.7 TB over 72).
_GB300_C = 288e9
# NVIDIA GB200 NVL72 datasheet, per GPU: 8 TB/s HBM3e, 5 PFLOP/s dense fp8 (360 PF dense over 72 GPUs),
# 186 GB HBM (13.4 TB over 72); ConnectX-7 at 400 Gb/s = 50 GB/s per GPU per direction.
_GB200_W, _GB200_F8, _GB200_C, _GB200_NIC = 8e12, 5e15, 13.4e12 / 72, 400e9 / 8
_SHEETS = {"gb200": (_GB200_W, _GB200_F8), "b200": (_B200_W, _B200_F8)}


def _ds_hand(c: dict = _DS) -> dict:
    """DeepSeek-V3 (or Kimi K2, ``c = _KIMI``) parameter counts by hand from the config numbers above
    (MLA, dense layers first, then MoE layers)."""
    d = c["d"]
    attn = (d * c["q_rank"] + c["q_rank"] + c["q_rank"] * c["heads"] * (c["nope"] + c["rope"])
            + d * (c["kv_rank"] + c["rope"]) + c["kv_rank"] + c["kv_rank"] * c["heads"] * (c["nope"] + c["v"])
            + c["heads"] * c["v"] * d)
    expert = 3 * d * c["d_expert"]
    dense_layer = attn + 3 * d * c["d_ff"] + 2 * d
    moe_fixed = attn + 2 * d + d * c["experts"] + c["experts"] + c["shared"] * expert
    n_moe = c["layers"] - c["dense_layers"]
    routed = n_moe * c["experts"] * expert
    head = c["vocab"] * d + d
    total = c["dense_layers"] * dense_layer + n_moe * (moe_fixed + c["experts"] * expert) + head + c["vocab"] * d
    return dict(dense_layer=dense_layer, moe_layer=moe_fixed + c["experts"] * expert,
                moe_active=moe_fixed + c["k"] * expert, head=head, routed=routed, total=total,
                kv_per_layer_token=(c["kv_rank"] + c["rope"]) * 2,  # bf16 latent + rope key
                attn_flops_per_layer_pos=2 * c["heads"] * (2 * c["kv_rank"] + c["rope"]))


def _ds_busiest_stage_weights_hand(P: int, ep: int, c: dict = _DS) -> float:
    """Parameters on one GPU of the busiest of ``P`` pipeline stages at expert parallelism ``ep``, by hand:
    each stage its layers (61 split 31/30, 16/15/15/15 ...; the dense layers first), the first also the input
    embedding, the last the final norm and the LM head; routed experts ``/ ep``, the rest replicated."""
    h = _ds_hand(c)
    d, expert = c["d"], 3 * c["d"] * c["d_expert"]
    moe_fixed = h["moe_layer"] - c["experts"] * expert
    q, r = divmod(c["layers"], P)
    sizes, first, per_gpu = [q + (s < r) for s in range(P)], 0, []
    for s, size in enumerate(sizes):
        dense = max(0, min(size, c["dense_layers"] - first))
        moe = size - dense
        held = dense * h["dense_layer"] + moe * (moe_fixed + c["experts"] * expert / ep)
        held += (c["vocab"] * d if s == 0 else 0) + (h["head"] if s == P - 1 else 0)
        per_gpu.append(held)
        first += size
    return max(per_gpu)


def _ds_stage_floors_hand(P: int, b: int, L: int, n: int = 64, c: dict = _DS, chip: str = "gb200") -> np.ndarray:
    """Each stage's floor on a GPU of its n GB200s (or B200s), fp8 weights, by hand, in the layout the chapter
    specifies: each GPU serves b / n of the micro-batch's sequences and holds its own copy of the stage's
    non-expert weights (DP attention); the routed experts are spread over the n GPUs, and at b = 2048 tokens every
    expert is read. 61 layers split 31/30, 16/15/15/15 ...; the dense layers on stage 0 (with the input table,
    looked up b / n rows, not read), the LM head on the last stage."""
    h = _ds_hand(c)
    W, F8 = _SHEETS[chip]
    d, expert = c["d"], 3 * c["d"] * c["d_expert"]
    moe_fixed = h["moe_layer"] - c["experts"] * expert
    q, r = divmod(c["layers"], P)
    sizes = [q + (s < r) for s in range(P)]
    out, first = [], 0
    for s, size in enumerate(sizes):
        dense = max(0, min(size, c["dense_layers"] - first))
        moe = size - dense
        head = h["head"] if s == P - 1 else 0
        rows = b / n * d if s == 0 else 0
        read = dense * h["dense_layer"] + moe * (moe_fixed + c["experts"] * expert / n) + head + rows  # fp8: 1 B
        active = dense * h["dense_layer"] + moe * h["moe_active"] + head
        mem = (read + b / n * L * size * h["kv_per_layer_token"]) / W
        comp = b * (2 * active + size * h["attn_flops_per_layer_pos"] * L) / (n * F8)
        out.append(max(mem, comp))
        first += size
    return np.array(out)


def _ds_pooled_step_hand(b: int, L: int, n: int = 64, c: dict = _DS, chip: str = "gb200") -> float:
    """The pooled floor of the same step by hand: every weight but the input table, and every sequence's KV, read
    once by n GPUs' bandwidth together (what the pooled serving.decode_step assumes)."""
    h = _ds_hand(c)
    W, _ = _SHEETS[chip]
    read = h["total"] - c["vocab"] * c["d"] + b * c["d"]
    return (read + b * L * c["layers"] * h["kv_per_layer_token"]) / (n * W)


@register(21)
def _check_21() -> Verdict:
    require_sheets(21, chips=['b200', 'gb200'], models_=['deepseek-v3', 'kimi-k2'])
    b, L = 2048, 8192
    h = _ds_hand()
    require(abs(h["total"] / _DS_PUBLISHED_TOTAL - 1) < 0.002, 21, f"hand count {h['total']:.4g} vs published 671B")
    one = _ds_stage_floors_hand(1, b, L)[0]
    pooled = serving.decode_step("deepseek-v3", "gb200", b, L, n_chips=64, weight_dtype="fp8", check_capacity=False)
    pooled_hand = _ds_pooled_step_hand(b, L)
    require(abs(pooled.time_s / pooled_hand - 1) < 2e-3, 21,
            f"pooled step {pooled.time_s * 1e3:.3f} ms vs hand {pooled_hand * 1e3:.3f} ms")
    require(one > 1.3 * pooled_hand, 21, f"the placed step {one * 1e3:.3f} ms is no longer well above the pooled "
                                         f"{pooled_hand * 1e3:.3f} ms: has a GPU stopped reading its own copy?")
    rows, penalty = {}, {}
    rows["one stage, per GPU of the layout vs pooled"] = (f"{one * 1e3:.3f} ms vs {pooled_hand * 1e3:.3f} ms: each GPU "
                                                          f"reads its own copy of the non-expert weights")
    for P in (1, 2, 4, 8):
        hand = _ds_stage_floors_hand(P, b, L)
        lib = parallelism.stage_floors_s("deepseek-v3", "gb200", 64, P, b, L, weight_dtype="fp8")
        require(lib.shape == hand.shape and np.allclose(lib, hand, rtol=2e-3), 21,
                f"P={P}: library stage floors {np.round(lib * 1e3, 3)} ms vs hand {np.round(hand * 1e3, 3)} ms")
        # Memory-bound stages add up to the unpipelined floor: pipelining moves the bytes, it does not remove them.
        require(abs(hand.sum() / one - 1) < 2e-3, 21,
                f"P={P}: stages sum to {hand.sum() * 1e3:.3f} ms, the whole model {one * 1e3:.3f} ms")
        d = parallelism.pipelined_decode("deepseek-v3", "gb200", 64, P, b, L, weight_dtype="fp8")
        penalty[P] = P * hand.max() / hand.sum()  # chip-seconds per token relative to one stage
        require(abs(d.chip_s_per_token / (64 * one / b) / penalty[P] - 1) < 2e-3, 21,
                f"P={P}: library cost ratio {d.chip_s_per_token / (64 * one / b):.4f} vs hand {penalty[P]:.4f}")
        require(penalty[P] >= 1 - 1e-9, 21, f"P={P}: pipelining saved chip time ({penalty[P]:.3f})")
        rows[f"P={P}: stage floors (hand)"] = (f"{', '.join(f'{t * 1e3:.3f}' for t in hand)} ms; slowest x P = "
                                               f"{penalty[P]:.3f} x the unpipelined step")
    # The same for a second model (Kimi K2, 1 dense layer, 384 experts) and a second chip (HGX B200), by hand.
    hk = _ds_hand(_KIMI)
    require(abs(hk["total"] / _KIMI_PUBLISHED_TOTAL - 1) < 0.03, 21, f"Kimi K2 hand count {hk['total']:.4g} vs published 1T")
    for model, c in _CONFIGS.items():
        for chip in ("gb200", "b200"):
            if (model, chip) == ("deepseek-v3", "gb200"):
                continue
            whole = _ds_stage_floors_hand(1, b, L, c=c, chip=chip)[0]
            pens = []
            for P in (2, 4, 8):
                hand = _ds_stage_floors_hand(P, b, L, c=c, chip=chip)
                lib = parallelism.stage_floors_s(model, chip, 64, P, b, L, weight_dtype="fp8")
                require(lib.shape == hand.shape and np.allclose(lib, hand, rtol=2e-3), 21,
                        f"{model} on {chip}, P={P}: library stage floors {np.round(lib * 1e3, 3)} ms vs hand "
                        f"{np.round(hand * 1e3, 3)} ms")
                require(abs(hand.sum() / whole - 1) < 2e-3, 21,
                        f"{model} on {chip}, P={P}: stages sum to {hand.sum() * 1e3:.3f} ms, the whole model "
                        f"{whole * 1e3:.3f} ms")
                pens.append(P * hand.max() / hand.sum())
                require(pens[-1] >= 1 - 1e-9, 21, f"{model} on {chip}, P={P}: pipelining saved chip time")
            rows[f"{model} on 64 {chip}: unpipelined step / slowest x P at P = 2, 4, 8"] = (
                f"{whole * 1e3:.2f} ms / {', '.join(f'{x:.3f}' for x in pens)} x")
    worst = max(penalty, key=penalty.get)
    return Verdict(21, "holds",
                   f"each stage reads its own layers' weights and KV and does their FLOPs, so the stages' floors add "
                   f"up to the unpipelined step ({one * 1e3:.2f} ms per GPU for DeepSeek-V3 fp8 on 64 GB200s, "
                   f"b={b}, L={L}, each GPU serving b/64 sequences with its own copy of the non-expert weights; "
                   f"{pooled_hand * 1e3:.2f} ms if the bytes were pooled): nothing is saved. It can only cost: the slowest stage sets the pace, and an "
                   f"uneven split (61 layers, 3 light dense layers up front, the LM head at the end) makes the "
                   f"chip-seconds per token {penalty[worst] - 1:.1%} higher at P={worst}; the same holds for Kimi K2 and "
                   f"on B200s",
                   {**rows, "source": "hand: DeepSeek-V3 and Kimi K2 config.json dims, GB200 NVL72 datasheet (8 TB/s, "
                                      "5 PF fp8 per GPU), HGX B200 datasheet (8 TB/s, 4.5 PF fp8 per GPU)"})


@register(22)
def _check_22() -> Verdict:
    require_sheets(22, systems="all", models_=['deepseek-v3', 'kimi-k2'])
    # Two models by hand from their configs (DeepSeek-V3, Kimi K2) on two racks (GB200 and GB300 NVL72, datasheet
    # HBM per GPU): weights per GPU at EP64, fp8, against the library's memory_per_gpu.
    rows, hand_w, parts = {}, {}, {}
    for model, c in _CONFIGS.items():
        h = _ds_hand(c)
        parts[model] = (h["total"] - h["routed"], h["routed"] / 64)
        for P in (1, 2, 4):
            m = parallelism.memory_per_gpu(model, ep=64, pp=P, batch=64, context=32768, weight_dtype="fp8")
            hand_w[(model, P)] = _ds_busiest_stage_weights_hand(P, 64, c)  # fp8: 1 byte per weight
            require(abs(float(m.weight_bytes) / hand_w[(model, P)] - 1) < 1e-3, 22,
                    f"{model}, P={P}: library weights per GPU {float(m.weight_bytes) / 1e9:.2f} GB vs hand "
                    f"{hand_w[(model, P)] / 1e9:.2f} GB")
            rows[f"{model}, P={P}: weights / KV per GPU"] = (
                f"{float(m.weight_bytes) / 1e9:.1f} GB / {float(m.kv_bytes) / 1e9:.1f} GB of {_GB200_C / 1e9:.0f} "
                f"(GB200) / {_GB300_C / 1e9:.0f} GB (GB300)")
    for key, sheet in (("gb200-nvl72", _GB200_C), ("gb300-nvl72", _GB300_C)):
        cap = hardware.system(key).hbm_bytes_per_package
        require(abs(cap / sheet - 1) < 0.03, 22, f"{key} HBM per GPU {cap / 1e9:.0f} GB vs datasheet {sheet / 1e9:.0f}")
    ds_rep, ds_exp = parts["deepseek-v3"]
    k_rep, k_exp = parts["kimi-k2"]
    require(ds_rep > ds_exp and k_rep < k_exp, 22,
            f"replicated vs expert share per GPU changed order: DeepSeek-V3 {ds_rep / 1e9:.1f} vs {ds_exp / 1e9:.1f} GB, "
            f"Kimi K2 {k_rep / 1e9:.1f} vs {k_exp / 1e9:.1f} GB")
    w = {m: [hand_w[(m, P)] / 1e9 for P in (1, 2, 4)] for m in _CONFIGS}
    return Verdict(22, "holds if",
                   f"holds for the weights: per GPU of the busiest stage they fall nearly as 1/P "
                   f"({' -> '.join(f'{x:.1f}' for x in w['deepseek-v3'])} "
                   f"GB for DeepSeek-V3, {' -> '.join(f'{x:.1f}' for x in w['kimi-k2'])} GB for Kimi K2, at fp8 on EP64; "
                   f"{_GB200_C / 1e9:.0f} GB per GB200, {_GB300_C / 1e9:.0f} GB per GB300), but not for the KV cache, "
                   f"which stays constant (claim 25); with wide EP the replicated non-expert weights are a large part "
                   f"of what P divides -- for DeepSeek-V3 they outweigh each GPU's share of the experts "
                   f"({ds_rep / 1e9:.0f} vs {ds_exp / 1e9:.1f} GB at fp8), for Kimi K2 (fewer heads, one dense layer, "
                   f"384 experts) they do not ({k_rep / 1e9:.0f} vs {k_exp / 1e9:.1f} GB)",
                   {**rows, "source": "hand: DeepSeek-V3 and Kimi K2 config.json dims; GB200 NVL72 (13.4 TB / 72) and "
                                      "GB300 NVL72 (288 GB per GPU) datasheets"})


# Assumed cost of starting the next stage's work per hop: a kernel launch plus a completion flag. A public
# measurement puts one launch plus stream synchronize at about 4-6 us (xiaguan/cuda-kernel-launch-lab, RTX 5070 Ti,
# CUDA 13; "pegainfer (3): From Launch Overhead to CUDA Graph"); 5 us is that figure, not measured by the course.
_LAUNCH_SYNC_S = 5e-6


@register(24)
def _check_24() -> Verdict:
    require_sheets(24, chips=['b200', 'gb200'], systems=['gb200-nvl72'], models_=['deepseek-v3', 'kimi-k2'])
    lat = parallelism.hop_latencies()
    wire = lat["deepseek-ib-cross-leaf-64B"]["seconds"]  # 64-byte CPU-side latency, marked unverified
    b, L, E = 2048, 8192, 64
    # The activation a stage hands on: b/E tokens per GPU, d bf16 values each, over that GPU's NIC.
    act_bytes = b / E * _DS["d"] * 2
    nic = hardware.system("gb200-nvl72").scale_out_bytes_per_s_per_package
    require(abs(nic / _GB200_NIC - 1) < 0.05, 24, f"GB200 scale-out {nic / 1e9:.0f} GB/s vs ConnectX-7's 50 GB/s")
    transfer = act_bytes / _GB200_NIC
    hop = wire + transfer + _LAUNCH_SYNC_S
    rows, extra = {}, {}
    for P in (2, 4, 8):
        t = _ds_stage_floors_hand(P, b, L)
        d = parallelism.pipelined_decode("deepseek-v3", "gb200", E, P, b, L, hop_latency_s=hop, weight_dtype="fp8")
        hand_latency = max(t.sum() + P * hop, P * t.max())
        require(abs(d.token_latency_s / hand_latency - 1) < 2e-3, 24,
                f"P={P}: library latency {d.token_latency_s * 1e3:.3f} ms vs hand {hand_latency * 1e3:.3f} ms")
        extra[P] = hand_latency / t.sum() - 1
        rows[f"P={P}"] = (f"{P} x {b} = {P * b} sequences in flight per replica; token latency "
                          f"{hand_latency * 1e3:.3f} ms vs {t.sum() * 1e3:.3f} ms unpipelined (+{extra[P]:.1%})")
    require(extra[4] < 0.10, 24, f"P=4 adds {extra[4]:.1%} to the token latency: no longer 'essentially unchanged'")
    # A second model (Kimi K2, d = 7168 too: same activation bytes) and a second chip (HGX B200, also one
    # ConnectX-7 400 Gb/s per GPU), by hand.
    for model, c in _CONFIGS.items():
        for chip in ("gb200", "b200"):
            if (model, chip) == ("deepseek-v3", "gb200"):
                continue
            t = _ds_stage_floors_hand(4, b, L, c=c, chip=chip)
            d = parallelism.pipelined_decode(model, chip, E, 4, b, L, hop_latency_s=hop, weight_dtype="fp8")
            hand_latency = max(t.sum() + 4 * hop, 4 * t.max())
            require(abs(d.token_latency_s / hand_latency - 1) < 2e-3, 24,
                    f"{model} on {chip}, P=4: library latency {d.token_latency_s * 1e3:.3f} ms vs hand "
                    f"{hand_latency * 1e3:.3f} ms")
            x = hand_latency / t.sum() - 1
            require(x < 0.10, 24, f"{model} on {chip}: P=4 adds {x:.1%} to the token latency")
            rows[f"{model} on {chip}, P=4"] = f"token latency {hand_latency * 1e3:.3f} ms vs {t.sum() * 1e3:.3f} ms (+{x:.1%})"
    guess = 4 * 3e-3 / _ds_stage_floors_hand(1, b, L)[0]
    return Verdict(24, "holds if",
                   f"holds if 'batch' means the micro-batch each stage runs and a few per cent of latency is "
                   f"'unchanged': forward-only pipelining has no bubble only with P micro-batches in flight, so a "
                   f"replica holds P x b sequences ({4 * b} at P = 4); and every stage boundary is a hop of "
                   f"~{hop * 1e6:.0f} us ({wire * 1e6:.1f} us 64-byte latency, unverified, + {transfer * 1e6:.1f} us "
                   f"to send {act_bytes / 1e3:.0f} kB of activations per GPU at 50 GB/s + {_LAUNCH_SYNC_S * 1e6:.0f} us "
                   f"assumed launch/sync), adding {extra[2]:.1%} / {extra[4]:.1%} / {extra[8]:.1%} at P = 2 / 4 / 8 "
                   f"(including the uneven split; Kimi K2 and B200s alike). The speaker's 'few ms' per hop would add "
                   f"{guess:.0%} at P=4",
                   {**rows, "hop": f"{wire * 1e6:.1f} + {transfer * 1e6:.2f} + {_LAUNCH_SYNC_S * 1e6:.0f} us",
                    "hop source": lat["deepseek-ib-cross-leaf-64B"].get("source", "")[:90]})


@register(25)
def _check_25() -> Verdict:
    require_sheets(25, models_=['deepseek-v3', 'llama-3.1-70b'])
    b, L = 64, 65536
    kv = [parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=P, batch=b, context=L, weight_dtype="fp8").kv_bytes
          for P in (1, 2, 4, 8)]
    # By hand: P micro-batches of b sequences, each holding the busiest stage's ceil(61 / P) layers of MLA latent
    # (512 + 64 values, bf16) on each of the stage's 64 GPUs: b L beta / E when P divides 61, a little more otherwise.
    hand = [b * L * P * -(-61 // P) * (512 + 64) * 2 / 64 for P in (1, 2, 4, 8)]
    require(np.allclose(kv, hand), 25, f"KV per GPU {kv} vs hand {hand}")
    require(min(kv) >= kv[0] * (1 - 1e-12), 25, "KV per GPU fell with pipeline depth")
    kv70 = [parallelism.memory_per_gpu("llama-3.1-70b", tp=8, pp=P, batch=16, context=L).kv_bytes for P in (1, 2, 4)]
    require(np.allclose(kv70, kv70[0]), 25, "dense GQA: KV per GPU depends on P")
    # By hand (config.json: 80 layers, 8 KV heads of 128): 16 sequences x 65,536 tokens x 80 x 2 x 8 x 128 x 2 bytes
    # over TP8 = 2 x 8 x 128 x 2 = 4,096 bytes per token per layer, each of the 8 GPUs keeping one KV head.
    hand70 = 16 * L * 80 * 2 * 8 * 128 * 2 / 8
    require(np.allclose(kv70, hand70), 25, f"Llama-3.1-70B KV per GPU {kv70[0] / 1e9:.2f} GB vs hand {hand70 / 1e9:.2f} GB")
    rise = max(kv) / kv[0] - 1
    return Verdict(25, "holds",
                   f"with P stages, P micro-batches must be in flight; each stage stores its share of the layers for P "
                   f"times the sequences, so KV bytes per GPU = b L beta / E whatever P (shown for MLA and GQA); when P "
                   f"does not divide the layers the busiest stage holds more than its share, so the KV per GPU even "
                   f"rises (+{rise:.1%} for DeepSeek-V3's 61 layers at P = 4 or 8)",
                   {"DeepSeek-V3, b=64, L=65536, EP64: KV per GPU at P = 1, 2, 4, 8":
                    " / ".join(f"{x / 1e9:.2f}" for x in kv) + " GB",
                    "Llama-3.1-70B, TP8, b=16, L=65536": f"{kv70[0] / 1e9:.1f} GB for P = 1, 2, 4"})


@register(26)
def _check_26() -> Verdict:
    require_sheets(26, systems="all", models_=['deepseek-v3', 'kimi-k2'])
    deps = parallelism.deployments()
    pps = {k: d["pipeline_parallel"] for k, d in deps.items()}
    require(all(p == 1 for p in pps.values()), 26, f"a published layout now pipelines: {pps}")
    # The scale-up domain each layout ran on: NVLink inside an 8-GPU H800/H100 node, a whole NVL72 rack for GB200.
    domain = {k: (72 if "GB200" in d["gpu"] else d["gpus_per_node"]) for k, d in deps.items()}
    beyond = {k: d["expert_parallel"] / domain[k] for k, d in deps.items()}
    nvl = hardware.system("gb200-nvl72")
    B, L = 4096, 16384  # sequences on the rack, tokens of context each
    m = parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=1, batch=B, context=L, weight_dtype="fp8")
    # By hand from config.json: weights = routed / 64 + the rest, fp8; KV = B L x 61 x (512 + 64) x 2 bytes / 64.
    h = _ds_hand()
    w_hand = h["routed"] / 64 + (h["total"] - h["routed"])
    kv_hand = B * L * _DS["layers"] * h["kv_per_layer_token"] / 64
    require(abs(float(m.weight_bytes) / w_hand - 1) < 1e-3 and abs(float(m.kv_bytes) / kv_hand - 1) < 1e-3, 26,
            f"library {float(m.weight_bytes) / 1e9:.1f} GB weights + {float(m.kv_bytes) / 1e9:.1f} GB KV per GPU vs "
            f"hand {w_hand / 1e9:.1f} + {kv_hand / 1e9:.1f} GB")
    require(w_hand + kv_hand <= _GB200_C and m.total_bytes <= nvl.hbm_bytes_per_package, 26,
            "DeepSeek-V3 at fp8 with 4096 x 16k-token sequences no longer fits one NVL72 without pipelining")
    require(all(r <= 1 for k, r in beyond.items() if domain[k] == 72), 26, "an NVL72 layout now exceeds its rack")
    # A second model (Kimi K2, 1.03T parameters, 6 experts per GPU at EP64) on two racks (GB200 and GB300 NVL72).
    fit = {}
    for model, c in _CONFIGS.items():
        hm = _ds_hand(c)
        mm = parallelism.memory_per_gpu(model, ep=64, pp=1, batch=B, context=L, weight_dtype="fp8")
        w = hm["routed"] / 64 + (hm["total"] - hm["routed"])
        kv = B * L * c["layers"] * hm["kv_per_layer_token"] / 64
        require(abs(float(mm.weight_bytes) / w - 1) < 1e-3 and abs(float(mm.kv_bytes) / kv - 1) < 1e-3, 26,
                f"{model}: library {float(mm.weight_bytes) / 1e9:.1f} + {float(mm.kv_bytes) / 1e9:.1f} GB per GPU vs "
                f"hand {w / 1e9:.1f} + {kv / 1e9:.1f} GB")
        for key, cap in (("gb200-nvl72", _GB200_C), ("gb300-nvl72", _GB300_C)):
            require(w + kv <= cap and mm.total_bytes <= hardware.system(key).hbm_bytes_per_package, 26,
                    f"{model} at fp8 with {B} x {L}-token sequences no longer fits one {key} without pipelining")
        fit[model] = (w, kv)
    boxes = {k: deps[k]["expert_parallel"] for k in deps if domain[k] != 72}
    past = [beyond[k] for k in boxes]
    ds_ep = sorted({e for k, e in boxes.items() if k.startswith("deepseek")})
    sg_ep = sorted({e for k, e in boxes.items() if k.startswith("sglang")})
    return Verdict(26, "holds if",
                   f"little pipelining: every published large-MoE layout uses PP = 1 ({len(pps)} of {len(pps)}); "
                   f"'EP up to the scale-up domain' is what NVL72 layouts do, but on 8-GPU boxes operators push EP "
                   f"{min(past):.0f}-{max(past):.0f}x past the NVLink domain over InfiniBand (DeepSeek EP"
                   f"{'/'.join(map(str, ds_ep))}, SGLang EP{'/'.join(map(str, sg_ep))}) to give each expert a large "
                   f"enough batch; one NVL72 holds DeepSeek-V3 at fp8 with {B} x {L // 1024}k-token sequences "
                   f"({(w_hand + kv_hand) / 1e9:.0f} of {_GB200_C / 1e9:.0f} GB per GPU) without pipelining, and so "
                   f"does the 1T-parameter Kimi K2 ({sum(fit['kimi-k2']) / 1e9:.0f} GB); a GB300 NVL72 "
                   f"({_GB300_C / 1e9:.0f} GB per GPU) holds either with room to spare",
                   {"pipeline degrees": ", ".join(f"{k} {p}" for k, p in pps.items()),
                    "EP / scale-up domain": ", ".join(f"{k} {r:.2g}x" for k, r in beyond.items()),
                    "DeepSeek-V3 on one NVL72 (EP64, fp8, 4096 sequences x 16k tokens)":
                    f"{w_hand / 1e9:.0f} GB weights + {kv_hand / 1e9:.0f} GB KV per GPU "
                    f"of {_GB200_C / 1e9:.0f} GB (datasheet)",
                    "Kimi K2 on one NVL72 (same layout)": f"{fit['kimi-k2'][0] / 1e9:.0f} GB weights + "
                    f"{fit['kimi-k2'][1] / 1e9:.0f} GB KV per GPU of {_GB200_C / 1e9:.0f} (GB200) / {_GB300_C / 1e9:.0f} "
                    f"GB (GB300)"})
