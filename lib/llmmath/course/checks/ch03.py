"""Checks of chapter 3 (the balance point and sparsity): claims 9, 10, 11, 14, 15."""

from __future__ import annotations

import numpy as np

from ... import hardware, models, moe, serving
from ._sheets import require_sheets
from ..claims import Verdict, register, require

# Datasheet anchors (dense FLOP/s at the weight's own precision, HBM bytes/s), copied
# from the vendor sheets, not from the catalog: R = F b_w / (2 W), multiply-adds per weight element read.
_DATASHEET_R = {
    ("a100-80gb", "bf16"): 312e12 * 2 / (2 * 2.039e12),     # A100 SXM 80GB: 312 TFLOPS bf16, 2,039 GB/s
    ("h100-sxm", "bf16"): 989.5e12 * 2 / (2 * 3.35e12),     # H100 SXM: 989.5 TFLOPS bf16 dense, 3.35 TB/s
    ("h100-sxm", "fp8"): 1979e12 * 1 / (2 * 3.35e12),       # 1,979 TFLOPS fp8 dense
    ("h200", "bf16"): 989.5e12 * 2 / (2 * 4.8e12),          # H200: same compute, 4.8 TB/s
    ("b200", "fp8"): 4.5e15 * 1 / (2 * 8e12),               # HGX B200: 4.5 PFLOPS fp8 dense per GPU, 8 TB/s
    ("b200", "fp4"): 9e15 * 0.5 / (2 * 8e12),               # 9 PFLOPS fp4 dense, half a byte per weight
    ("mi300x", "bf16"): 1307.4e12 * 2 / (2 * 5.3e12),       # MI300X: 1,307.4 TFLOPS bf16, 5.3 TB/s
    ("tpu-v6e", "bf16"): 918e12 * 2 / (2 * 1.638e12),       # TPU v6e: 918 TFLOPS bf16, 1,638 GB/s
}

# DeepSeek-V3 by hand from config.json: hidden 7168, 61 layers (3 dense), vocab 129,280,
# MLA (q_lora 1536, kv_lora 512, heads 128 x (128 nope + 64 rope), v 128), 256 routed
# experts of width 2048, top-8, 1 shared expert, dense MLP width 18,432, router bias.
# Kimi K2 (huggingface.co/moonshotai/Kimi-K2-Instruct config.json) is the same architecture with
# 64 heads, 384 routed experts, first_k_dense_replace 1 and vocab 163,840.
_D, _VOCAB = 7168, 129_280
_KIMI_VOCAB = 163_840


def _mla_moe_by_hand(heads=128, experts=256, dense_layers=3, vocab=_VOCAB, k=8, layers=61):
    """(total, active) parameters of a DeepSeek-V3-style model (MLA + DeepSeekMoE), by hand."""
    attn = (_D * 1536 + 1536 + 1536 * heads * 192 + _D * (512 + 64) + 512 + 512 * heads * 256 + heads * 128 * _D)
    expert = 3 * _D * 2048
    moe_layer = attn + 2 * _D + (experts + 1) * expert + _D * experts + experts
    dense_layer = attn + 2 * _D + 3 * _D * 18432
    n_moe = layers - dense_layers
    total = 2 * vocab * _D + _D + dense_layers * dense_layer + n_moe * moe_layer
    active = total - n_moe * (experts - k) * expert
    return total, active


def _deepseek_v3_by_hand():
    return _mla_moe_by_hand()


def _kimi_k2_by_hand(experts=384):
    return _mla_moe_by_hand(heads=64, experts=experts, dense_layers=1, vocab=_KIMI_VOCAB)


def _qwen3_235b_by_hand():
    """Qwen3-235B-A22B from config.json: hidden 4096, 94 layers all MoE, 64 query / 4 KV heads of 128,
    q/k norms, 128 experts of width 1536, top-8, no shared expert, bias-free router, vocab 151,936."""
    d, E, de, L, V = 4096, 128, 1536, 94, 151_936
    attn = d * 64 * 128 + 2 * d * 4 * 128 + 64 * 128 * d + 2 * 128
    layer = attn + d * E + E * 3 * d * de + 2 * d
    total = 2 * V * d + d + L * layer
    return total, total - L * (E - 8) * 3 * d * de, V * d


def _read_over_matmul(total, active, embed):
    """N_tot / N_act as the roofline counts it: the input embedding is a lookup, neither read in full nor multiplied."""
    return (total - embed) / (active - embed)


# Weight-sparsity of three MoEs, by hand: (N_tot - embedding) / (N_act - embedding).
_SHORT = {"deepseek-v3": "DeepSeek-V3", "kimi-k2": "Kimi K2", "qwen3-235b-a22b": "Qwen3-235B"}


def _hand_sparsity() -> dict:
    ds, kimi, (qt, qa, qe) = _deepseek_v3_by_hand(), _kimi_k2_by_hand(), _qwen3_235b_by_hand()
    return {"deepseek-v3": _read_over_matmul(*ds, _VOCAB * _D),
            "kimi-k2": _read_over_matmul(*kimi, _KIMI_VOCAB * _D),
            "qwen3-235b-a22b": _read_over_matmul(qt, qa, qe)}


@register(9)
def _check_9() -> Verdict:
    require_sheets(9, chips="all", models_=['deepseek-v3', 'kimi-k2', 'qwen3-235b-a22b'])
    # 1) the hardware ratio, from datasheets, against the library's
    for (chip, dt), anchor in _DATASHEET_R.items():
        r = hardware.get(chip).balance_ratio(dt)
        require(abs(r / anchor - 1) < 0.01, 9, f"{chip} at {dt}: R = {r:.0f}, datasheet {anchor:.0f}")
    near_300 = {k: v for k, v in _DATASHEET_R.items() if abs(v / 300 - 1) < 0.1}
    require({"h100-sxm", "b200"} <= {c for c, _ in near_300}, 9, "H100 and B200 should have R within 10% of 300")
    a100, v6e = _DATASHEET_R[("a100-80gb", "bf16")], _DATASHEET_R[("tpu-v6e", "bf16")]
    # 2) B* = R x s at short context, for every MoE in the catalog on every chip (within 0.5%)
    worst = 0.0
    for m in (k for k, mm in models.catalog().items() if mm.is_moe):
        mm = models.get(m)
        s_read = mm.weights_read_params / mm.matmul_params_per_token
        for chip in ("a100-80gb", "h100-sxm", "h200", "b200", "mi300x", "tpu-v6e"):
            got = serving.balance_batch(m, chip)
            worst = max(worst, abs(got / (hardware.get(chip).balance_ratio() * s_read) - 1))
    require(worst < 0.005, 9, f"B* departs from R x s by {worst:.2%}")
    # 3) DeepSeek-V3, by hand from the config, on an H100
    total, active = _deepseek_v3_by_hand()
    ds = models.get("deepseek-v3")
    require(ds.total_params == total and ds.active_params == active, 9, "DeepSeek-V3 counts differ from the config")
    s_total, s_expert = total / active, 256 / 8
    R = _DATASHEET_R[("h100-sxm", "bf16")]
    hand = R * (total - _VOCAB * _D) / (active - _VOCAB * _D)
    got = serving.balance_batch("deepseek-v3", "h100-sxm")
    require(abs(got / hand - 1) < 0.002, 9, f"B* {got:.0f} vs hand {hand:.0f}")
    got_e = serving.balance_batch("deepseek-v3", "h100-sxm", sparsity="expert")
    require(abs(got_e / (R * s_expert) - 1) < 1e-9, 9, "per-expert B* is not R E/k")
    speaker = 300 * 8
    require(got / speaker > 2, 9, f"the speaker's 2,400 is now within 2x of {got:.0f}")
    # 4) two more MoEs (Kimi K2, Qwen3-235B-A22B; N_tot / N_act by hand from their configs) and a second chip
    #    (B200 at fp8, R = 4.5 PF / (2 x 8 TB/s) from its datasheet): B* = R s by hand against the library.
    sp = _hand_sparsity()
    more = {}
    for m in sp:
        for chip, dt in (("h100-sxm", "bf16"), ("b200", "fp8")):
            r_ = _DATASHEET_R[(chip, dt)]
            got_m = serving.balance_batch(m, chip, weight_dtype=dt)
            require(abs(got_m / (r_ * sp[m]) - 1) < 0.005, 9,
                    f"{m} on {chip} ({dt}): B* {got_m:,.0f} vs hand R x s = {r_ * sp[m]:,.0f}")
            more[(m, chip)] = got_m
    return Verdict(9, "holds if",
                   f"the formula is right -- B* = R x N_tot/N_act with R = F b_w/(2W) -- and R is ~300 on an "
                   f"H100 or B200 at any precision (bf16, fp8, fp4), but not 'on most GPUs': {a100:.0f} on an "
                   f"A100, 206 on an H200, {v6e:.0f} on a TPU v6e. His DeepSeek example used sparsity 8 "
                   f"(32 of 256); the config routes 8 of 256, N_tot/N_act = {s_total:.1f}, so B* = {got:,.0f} "
                   f"on an H100, {got / speaker:.1f}x his 2,400 -- and {got_e:,.0f} (R x E/k = R x 32) before "
                   f"every expert's own matmul is compute-bound. The same formula, configs by hand, gives Kimi K2 "
                   f"(s = {sp['kimi-k2']:.1f}) {more[('kimi-k2', 'h100-sxm')]:,.0f} and Qwen3-235B-A22B "
                   f"(s = {sp['qwen3-235b-a22b']:.1f}) {more[('qwen3-235b-a22b', 'h100-sxm')]:,.0f} on an H100, and "
                   f"{more[('deepseek-v3', 'b200')]:,.0f} / {more[('kimi-k2', 'b200')]:,.0f} / "
                   f"{more[('qwen3-235b-a22b', 'b200')]:,.0f} on a B200 at fp8",
                   {"R from datasheets": ", ".join(f"{c} {d} {v:.0f}" for (c, d), v in _DATASHEET_R.items()),
                    "DeepSeek-V3 N_tot / N_act (config)": f"{total:,} / {active:,} = {s_total:.2f}",
                    "DeepSeek-V3 E / k": f"256 / 8 = {s_expert:.0f}",
                    "B* on H100, total sparsity": f"{got:,.0f} (hand {hand:,.0f})",
                    "B* on H100, per expert": f"{got_e:,.0f}",
                    "speaker": f"300 x 8 = {speaker:,}",
                    "B* = R s, s by hand (H100 bf16 | B200 fp8)": "; ".join(
                        f"{m} (s {sp[m]:.2f}): {more[(m, 'h100-sxm')]:,.0f} | {more[(m, 'b200')]:,.0f}" for m in sp),
                    "largest |B*/(R s) - 1| over MoE x chips": f"{worst:.2%}"})


# HGX B200 datasheet per GPU (8-GPU system figures / 8, sparse halved): 2.25 PF bf16 and 4.5 PF fp8 dense,
# 8 TB/s HBM3e, 180 GB usable. H100 SXM: 989.5 TF bf16 / 1,979 TF fp8 dense, 3.35 TB/s, 80 GB.
_H100 = dict(bf16=989.5e12, fp8=1979e12, W=3.35e12, C=80e9)
_B200 = dict(bf16=2.25e15, fp8=4.5e15, W=8e12, C=180e9)


@register(10)
def _check_10() -> Verdict:
    require_sheets(10, chips=['b200', 'h100-sxm'], models_=['deepseek-v3', 'kimi-k2', 'llama-3.1-70b',
                   'llama-3.1-8b', 'qwen3-235b-a22b'])
    x = np.array([1.0, 2.0, 3.0])
    u_sum = serving.utilization_vs_balance(x, "sum")
    require(np.allclose(u_sum, [1 / 2, 2 / 3, 3 / 4]), 10, f"no-overlap utilization {u_sum}")
    # the same from the full decode model, dense models, short context, no overlap, on two chips;
    # B* by hand from the datasheets (dense: R = F b_w / (2 W) at bf16)
    for chip, ds_ in (("h100-sxm", _H100), ("b200", _B200)):
        R_chip = ds_["bf16"] * 2 / (2 * ds_["W"])
        for m in ("llama-3.1-8b", "llama-3.1-70b"):
            bstar = serving.balance_batch(m, chip)
            require(abs(bstar / R_chip - 1) < 0.01, 10, f"{m} on {chip}: B* {bstar:.0f} vs datasheet R {R_chip:.0f}")
            mfu = serving.decode_step(m, chip, x * bstar, 0, n_chips=8, overlap="sum").mfu
            require(np.allclose(mfu, u_sum, rtol=3e-3), 10, f"{m} on {chip}: decode_step MFU {mfu} vs x/(1+x)")
    # Practice: DeepSeek's own decode deployments (H800 = H100 compute and bandwidth; fp8 weights, R = 295).
    R = _H100["fp8"] * 1 / (2 * _H100["W"])
    sp = _hand_sparsity()
    bstar = R * sp["deepseek-v3"]
    require(abs(serving.balance_batch("deepseek-v3", "h100-sxm", weight_dtype="fp8") / bstar - 1) < 0.005, 10,
            f"DeepSeek-V3 fp8 B* on H800/H100 departs from R x N_tot/N_act = {bstar:,.0f} (config by hand)")
    bstar_e = R * 256 / 8
    # (a) Report sec. 3.4.2: per-expert batch "usually within 256 tokens", 320 expert slots,
    #     each token picks 9 (8 routed + the shared expert, treated as routed) -> B <= 256 x 320 / 9.
    b_report = 256 * 320 / 9
    # (b) Open-infra day 6: 14.8k output tok/s per 8-GPU node at 20-22 tok/s per user,
    #     18 nodes per decode unit -> concurrent sequences per unit.
    b_day6 = 14.8e3 / 21 * 18
    ratios = {"report (<= 256 tokens/expert)": b_report / bstar, "day-6 service (14.8k tok/s/node)": b_day6 / bstar}
    # "usually within 256 tokens" bounds the batch from above: at most 1.7x B*, which neither confirms nor refutes
    # 2-3x; the day-6 service is the measured point.
    require(ratios["report (<= 256 tokens/expert)"] < 2.0 and 1.8 < ratios["day-6 service (14.8k tok/s/node)"] < 3.2,
            10, f"DeepSeek's deployments no longer sit near 2-3x B*: {ratios}")
    # What the rule asks of a second model and a second chip: Kimi K2 (N_tot/N_act by hand) and DeepSeek-V3,
    # fp8 weights, on an H100/H800 (R = 295) and a B200 (R = 4.5 PF / (2 x 8 TB/s) = 281).
    R_b = _B200["fp8"] / (2 * _B200["W"])
    targets = {}
    for m in ("deepseek-v3", "kimi-k2"):
        for chip, r in (("h100-sxm", R), ("b200", R_b)):
            got = serving.balance_batch(m, chip, weight_dtype="fp8")
            require(abs(got / (r * sp[m]) - 1) < 0.005, 10,
                    f"{m} on {chip}: fp8 B* {got:,.0f} vs hand R x s = {r * sp[m]:,.0f}")
            targets[(m, chip)] = got
    kimi_lo, kimi_hi = 2 * targets[("kimi-k2", "h100-sxm")], 3 * targets[("kimi-k2", "h100-sxm")]
    return Verdict(10, "holds if",
                   f"read as 2-3x the total-sparsity B*, it matches the arithmetic and DeepSeek's published "
                   f"service (~{b_day6:,.0f} tokens a step = {ratios['day-6 service (14.8k tok/s/node)']:.1f}x "
                   f"B* = {bstar:,.0f}); the report's 'usually within 256 tokens per expert' is only a ceiling "
                   f"({b_report:,.0f} tokens, {ratios['report (<= 256 tokens/expert)']:.1f}x B*), consistent with "
                   f"but no evidence for 2-3x; with no compute/memory overlap the step reaches 67% and 75% of peak at 2x "
                   f"and 3x, against 50% at B* (Llama 8B and 70B on H100 and B200 alike). It is a rule of thumb, not "
                   f"a roofline result (the roofline says 1x), "
                   f"and it is only ~1x the per-expert balance ({bstar_e:,.0f}): DeepSeek's report says its "
                   f"experts stay memory-bound. The interviewer's '2-3 thousand' is the undoubled 300 x 8; for the "
                   f"sparser Kimi K2 the same rule asks {kimi_lo:,.0f}-{kimi_hi:,.0f} sequences on an H100",
                   {"utilization, no overlap, at 1x/2x/3x B*": "50% / 67% / 75% (H100 and B200)",
                    "utilization, full overlap": "100% from 1x B*",
                    "DeepSeek-V3 on H800 (fp8), B* total / per expert": f"{bstar:,.0f} / {bstar_e:,.0f}",
                    "report decode batch (256 x 320 / 9)": f"{b_report:,.0f} ({ratios['report (<= 256 tokens/expert)']:.2f}x)",
                    "day-6 service (14.8k / 21 x 18 nodes)": f"{b_day6:,.0f} ({ratios['day-6 service (14.8k tok/s/node)']:.2f}x)",
                    "2-3x B* at fp8 (H100 | B200)": "; ".join(
                        f"{m}: {2 * targets[(m, 'h100-sxm')]:,.0f}-{3 * targets[(m, 'h100-sxm')]:,.0f} | "
                        f"{2 * targets[(m, 'b200')]:,.0f}-{3 * targets[(m, 'b200')]:,.0f}" for m in ("deepseek-v3", "kimi-k2")),
                    "2-3x with the speaker's 2,400": "4,800-7,200; with the real B*: "
                                                     f"{2 * bstar:,.0f}-{3 * bstar:,.0f}"})


# Dense GQA models by hand from config.json: (N_tot, vocab x d of the untied input embedding, d, beta, a) with
# beta = 2 (K, V) x layers x kv heads x 128 x 2 bytes and a = 4 x heads x 128 x layers FLOPs per cached token.
# Llama-3.1-70B: 80 layers, 64 heads, 8 kv heads, d 8192; Llama-3.1-405B: 126 layers, 128 heads, 8 kv heads,
# d 16,384, FFN 53,248 (2 x 128,256 x 16,384 + 16,384 + 126 x (2 x 16,384^2 + 2 x 16,384 x 1,024 +
# 3 x 16,384 x 53,248 + 2 x 16,384) = 405,853,388,800 parameters).
_GQA_HAND = {
    "llama-3.1-70b": (70_553_706_496, 128_256 * 8192, 8192, 2 * 80 * 8 * 128 * 2, 80 * 4 * 64 * 128),
    "llama-3.1-405b": (405_853_388_800, 128_256 * 16_384, 16_384, 2 * 126 * 8 * 128 * 2, 126 * 4 * 128 * 128),
}
_BF16_SHEET = {"h100-sxm": (_H100["bf16"], _H100["W"]), "b200": (_B200["bf16"], _B200["W"])}


def _hand_bstar_vs_context(model, chip, L):
    """B*(L) = (weight read time) / (compute - KV read - embedding row per sequence), and L_max, by hand."""
    total, embed, d, beta, a = _GQA_HAND[model]
    F, W = _BF16_SHEET[chip]
    n_mm = total - embed
    bstar = (n_mm * 2 / W) / ((2 * n_mm + a * L) / F - L * beta / W - d * 2 / W)
    lmax = (2 * n_mm / F - d * 2 / W) / (beta / W - a / F)
    return bstar, lmax


@register(11)
def _check_11() -> Verdict:
    require_sheets(11, chips="all", models_=['deepseek-v3', 'kimi-k2', 'llama-3.1-405b', 'llama-3.1-70b'])
    # Hand form for Llama-3.1-70B and 405B (GQA, 8 KV heads) on an H100 and a B200 (datasheets): beta, a from
    # the configs.
    L = np.array([0.0, 512, 1024])
    hand_rows = {}
    for model in _GQA_HAND:
        for chip in _BF16_SHEET:
            hand_b, hand_l = _hand_bstar_vs_context(model, chip, L)
            got_b = serving.balance_batch(model, chip, L)
            require(np.allclose(got_b, hand_b, rtol=1e-9), 11, f"{model} on {chip}: B*(L) {got_b} vs hand {hand_b}")
            require(bool(np.all(np.diff(got_b) > 0)), 11, f"{model} on {chip}: B* should grow with context (GQA)")
            got_l = serving.kv_limit_context(model, chip)
            require(abs(got_l / hand_l - 1) < 1e-9, 11, f"{model} on {chip}: L_max {got_l:,.0f} vs hand {hand_l:,.0f}")
            hand_rows[(model, chip)] = (got_b, hand_l)
    got, lmax = hand_rows[("llama-3.1-70b", "h100-sxm")]
    # Every GQA/MHA model on every chip: attention is memory-bound (a/beta << F/W), so B* rises and diverges.
    gqa_limits = {}
    for m, mm in models.catalog().items():
        if mm.is_mla:
            continue
        for chip in hardware.names():
            if "bf16" not in hardware.get(chip).peak_flops_per_s:
                continue
            lm = serving.kv_limit_context(m, chip)
            require(np.isfinite(lm), 11, f"{m} on {chip}: KV never outgrows compute")
            gqa_limits[(m, chip)] = lm
    # MLA (DeepSeek-V3, absorbed): a / beta = 2 x 128 x (2 x 512 + 64) / ((512 + 64) x 2) = 242 FLOP/byte
    mla = 2 * 128 * (2 * 512 + 64) / ((512 + 64) * 2)
    falls = [c for c in hardware.names() if "bf16" in hardware.get(c).peak_flops_per_s
             and hardware.get(c).balance_flops_per_byte("bf16") < mla]
    for c in falls:
        require(serving.balance_batch("deepseek-v3", c, 8192) < serving.balance_batch("deepseek-v3", c, 0), 11,
                f"MLA on {c}: B* should fall with context")
    ds_h100 = serving.kv_limit_context("deepseek-v3", "h100-sxm")
    # Kimi K2: the same latent with 64 heads (config.json), a / beta = 2 x 64 x 1088 / 1152 = 121 FLOP/byte, below
    # every chip's ridge: its B* rises with context like a GQA model's.
    mla_kimi = 2 * 64 * (2 * 512 + 64) / ((512 + 64) * 2)
    for c in hardware.names():
        if "bf16" in hardware.get(c).peak_flops_per_s and hardware.get(c).balance_flops_per_byte("bf16") > mla_kimi:
            require(serving.balance_batch("kimi-k2", c, 8192) > serving.balance_batch("kimi-k2", c, 0), 11,
                    f"Kimi K2 (MLA, 64 heads) on {c}: B* should rise with context")
    kimi_h100 = serving.kv_limit_context("kimi-k2", "h100-sxm")
    # Capacity on top: Llama-3.1-70B on 8 H100s, B* at 1,024 tokens vs the batch that fits
    b1k = serving.balance_batch("llama-3.1-70b", "h100-sxm", 1024)
    fit = serving.max_batch("llama-3.1-70b", "h100-sxm", 1024, n_chips=8)
    return Verdict(11, "holds if",
                   f"holds whenever attention is memory-bound -- every GQA/MHA model on every chip: B* rises as "
                   f"(weight time)/(compute - KV time per sequence) and no batch balances past L_max "
                   f"(Llama-3.1-70B on an H100: B* {got[0]:.0f} -> {got[2]:.0f} at 1K tokens, none past "
                   f"{lmax:,.0f} tokens; on a B200 {hand_rows[('llama-3.1-70b', 'b200')][0][0]:.0f} -> "
                   f"{hand_rows[('llama-3.1-70b', 'b200')][0][2]:.0f}, none past "
                   f"{hand_rows[('llama-3.1-70b', 'b200')][1]:,.0f}; Llama-3.1-405B, with more weight per cached byte, "
                   f"{hand_rows[('llama-3.1-405b', 'h100-sxm')][0][0]:.0f} -> "
                   f"{hand_rows[('llama-3.1-405b', 'h100-sxm')][0][2]:.0f} on an H100, none past "
                   f"{hand_rows[('llama-3.1-405b', 'h100-sxm')][1]:,.0f}). It fails for absorbed MLA with DeepSeek-V3's 128 heads on chips whose F/W is below its "
                   f"{mla:.0f} FLOP per cached byte ({', '.join(falls)}): there attention's own arithmetic outweighs "
                   f"its reads and B* falls with context; Kimi K2's 64 heads ({mla_kimi:.0f} FLOP per byte) rise "
                   f"on every chip (none past {kimi_h100:,.0f} tokens on an H100). HBM capacity binds soon after: {fit:,.0f} sequences of 1K fit on "
                   f"8 H100s beside the weights, above B* = {b1k:.0f}, but B* grows without bound as L nears L_max "
                   f"while the batch that fits shrinks as 1/L",
                   {"Llama-3.1-70B / H100, B* at L = 0, 512, 1024": ", ".join(f"{v:.0f}" for v in got),
                    "L_max (hand)": f"{lmax:,.0f} tokens",
                    **{f"{m} on {c}: B* at L = 0, 512, 1024 / L_max (hand)":
                       f"{', '.join(f'{v:.0f}' for v in b)} / {lm:,.0f} tokens" for (m, c), (b, lm) in hand_rows.items()},
                    "L_max over GQA/MHA models x chips": f"{min(gqa_limits.values()):,.0f} .. {max(gqa_limits.values()):,.0f} tokens",
                    "DeepSeek-V3 (MLA) L_max on H100": f"{ds_h100:,.0f} tokens",
                    "Kimi K2 (MLA, 64 heads) L_max on H100": f"{kimi_h100:,.0f} tokens",
                    "MLA attention FLOP per cached byte": f"{mla:.0f}; chips below it: {', '.join(falls)}"})


@register(14)
def _check_14() -> Verdict:
    require_sheets(14, chips=['b200', 'h100-sxm'], models_=['deepseek-v3', 'kimi-k2', 'llama-3.1-405b',
                   'llama-3.1-70b', 'llama-3.1-8b', 'qwen3-235b-a22b', 'qwen3-30b-a3b'])
    Rs = {"h100-sxm": _H100["bf16"] * 2 / (2 * _H100["W"]), "b200": _B200["bf16"] * 2 / (2 * _B200["W"])}
    R = Rs["h100-sxm"]
    dense_models = ("llama-3.2-1b", "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b")
    sizes = {m: models.get(m).total_params for m in dense_models}
    by_chip = {}
    for chip, r in Rs.items():
        d = {m: serving.balance_batch(m, chip) for m in dense_models}
        spread = max(d.values()) / min(d.values())
        require(spread < 1.01, 14, f"{chip}: dense B* spread {spread:.3f} across a "
                                   f"{max(sizes.values()) / min(sizes.values()):.0f}x size range")
        require(all(abs(v / r - 1) < 0.01 for v in d.values()), 14, f"{chip}: dense B* should be R = {r:.0f}")
        # MoE: B* / R is the sparsity, by hand from the configs, whatever the size (235B, 671B, 1T)
        for m, s_hand in _hand_sparsity().items():
            got = serving.balance_batch(m, chip)
            require(abs(got / (r * s_hand) - 1) < 0.005, 14, f"{m} on {chip}: B* {got:,.0f} vs R s = {r * s_hand:,.0f}")
        for m in ("qwen3-30b-a3b", "mixtral-8x7b"):
            mm = models.get(m)
            require(abs(serving.balance_batch(m, chip) / (r * mm.weights_read_params / mm.matmul_params_per_token) - 1)
                    < 0.005, 14, f"{m} on {chip}: B* != R s")
        by_chip[chip] = d
    dense = by_chip["h100-sxm"]
    sp = _hand_sparsity()
    moe_b = {m: {c: Rs[c] * s for c in Rs} for m, s in sp.items()}
    # Where scale re-enters: KV (context), capacity, step time.
    at1k = {m: serving.balance_batch(m, "h100-sxm", 1024) for m in dense}
    step = {m: serving.decode_step_time_s(m, "h100-sxm", dense[m], 0, n_chips=8, check_capacity=False) for m in dense}
    # Throughput of one balanced deployment: B ~ 2,000 at a 15-20 ms step
    lo, hi = 2000 / 0.020, 2000 / 0.015
    gemini = 480e12 / (30 * 86400)           # Google I/O, May 2025: 480 trillion tokens a month
    b200 = by_chip["b200"]
    return Verdict(14, "holds if",
                   f"at short context, weight traffic only: B* = R x N_tot/N_act and the model's size cancels -- "
                   f"Llama 1B to 405B (a {max(sizes.values()) / min(sizes.values()):.0f}x range) all balance at {min(dense.values()):.1f}-{max(dense.values()):.1f} on an H100 "
                   f"and {min(b200.values()):.1f}-{max(b200.values()):.1f} on a B200, and the MoE models at R times their "
                   f"sparsity ({', '.join(f'{_SHORT[m]} {s:.1f}' for m, s in sp.items())}), not their size. "
                   f"Scale returns through the KV cache (at 1K tokens of context B* is "
                   f"{', '.join(f'{v:.0f}' if np.isfinite(v) else 'none' for v in at1k.values())} for 1B/8B/70B/405B), "
                   f"capacity, and step time (B* x 2N/F grows with N). One balanced deployment at ~2,000 x 50-67 "
                   f"steps/s makes {lo / 1e3:.0f}-{hi / 1e3:.0f}K tokens/s, ~1/{gemini / hi:.0f} of Google's "
                   f"May-2025 volume ({gemini / 1e6:.0f}M tokens/s)",
                   {"dense B* on H100 (1B, 8B, 70B, 405B)": ", ".join(f"{v:.1f}" for v in dense.values()),
                    "dense B* on B200 (1B, 8B, 70B, 405B)": ", ".join(f"{v:.1f}" for v in b200.values()),
                    "R (datasheet, bf16): H100 | B200": f"{R:.1f} | {Rs['b200']:.1f}",
                    "MoE B* = R s (s by hand): H100 | B200": "; ".join(
                        f"{m} (s {sp[m]:.2f}): {v['h100-sxm']:,.0f} | {v['b200']:,.0f}" for m, v in moe_b.items()),
                    "B* at 1K context (1B, 8B, 70B, 405B)": ", ".join(f"{v:.0f}" for v in at1k.values()),
                    "step at B* on 8 H100s (1B .. 405B)": ", ".join(f"{v * 1e3:.2f} ms" for v in step.values()),
                    "tokens/s of one deployment": f"{lo:,.0f}-{hi:,.0f}",
                    "Google, 480T tokens/month (I/O 2025)": f"{gemini:,.0f} tokens/s"})


def _sparsity_sweep(base, chip, sheet, hand_counts):
    """Claim 15's sweep of routed experts E for one model on one chip, fp8 weights; the cost at saturation
    is held to 2 N_act / F and B* to R N_tot / N_act, with the counts by hand from the config
    (``hand_counts(E)`` = (N_tot, N_act) without the input embedding) and F, W from the datasheet."""
    F, C = sheet["fp8"], sheet["C"]
    R = F * 1 / (2 * sheet["W"])
    rows = {}
    for E in (32, 64, 128, 256, 512, 1024):
        m = moe.with_experts(models.get(base), E)
        bstar = serving.balance_batch(m, chip, weight_dtype="fp8")
        n = int(np.ceil(m.weight_bytes("fp8") / (0.8 * C)))          # fp8 weights in 80% of HBM
        kw = dict(n_chips=n, weight_dtype="fp8", check_capacity=False)
        sat = serving.decode_cost_per_token(m, chip, 2 * bstar, 0, **kw)
        few = serving.decode_cost_per_token(m, chip, 2000, 0, **kw)
        lat = serving.decode_step_time_s(m, chip, bstar, 0, **kw)
        tot, act = hand_counts(E)
        rows[E] = dict(s=tot / act, bstar=bstar, chips=n, sat=sat, few=few, lat=lat, hand_sat=2 * act / F,
                       hand_bstar=R * tot / act)
    tag = f"{base} on {chip}"
    for E, r in rows.items():
        require(abs(r["sat"] / r["hand_sat"] - 1) < 1e-6, 15, f"{tag}, E={E}: cost at saturation is not 2 N_act / F "
                                                             f"(N_act by hand)")
    sats = np.array([r["sat"] for r in rows.values()])
    # only the router (d x E per layer) grows with E: 1,024 experts add ~1.2% to N_act
    require(sats.max() / sats.min() < 1.02, 15, f"{tag}: cost at saturation should not depend on the number of experts")
    bs = np.array([r["bstar"] for r in rows.values()])
    require(bool(np.all(np.diff(bs) > 0)), 15, f"{tag}: B* should grow with sparsity")
    hand_bs = np.array([r["hand_bstar"] for r in rows.values()])
    require(np.allclose(bs, hand_bs, rtol=0.005), 15, f"{tag}: B* {np.round(bs)} vs R s by hand {np.round(hand_bs)}")
    fews = np.array([r["few"] for r in rows.values()])
    require(bool(np.all(np.diff(fews[2:]) > 0)), 15, f"{tag}: with 2,000 users, cost should rise with sparsity once B < B*")
    return rows, sats


@register(15)
def _check_15() -> Verdict:
    require_sheets(15, chips="all", models_=['deepseek-v3', 'kimi-k2'])
    def no_embed(counts, vocab):
        return counts[0] - vocab * _D, counts[1] - vocab * _D

    hand = {"deepseek-v3": lambda E: no_embed(_mla_moe_by_hand(experts=E), _VOCAB),
            "kimi-k2": lambda E: no_embed(_kimi_k2_by_hand(E), _KIMI_VOCAB)}
    sweeps = {(b, c): _sparsity_sweep(b, c, sheet, hand[b]) for b in hand
              for c, sheet in (("h100-sxm", _H100), ("b200", _B200))}
    rows, sats = sweeps[("deepseek-v3", "h100-sxm")]
    a, b = rows[256], rows[1024]
    others = {k: v for k, v in sweeps.items() if k != ("deepseek-v3", "h100-sxm")}
    return Verdict(15, "holds if",
                   f"in the roofline cost model, a token at saturation costs 2 N_act / F whatever N_tot is "
                   f"(DeepSeek-V3 with 32 to 1,024 experts, fp8: {sats.min() * 1e6:.1f}-{sats.max() * 1e6:.1f} chip-us per token on an H100, the router the only change; "
                   f"the same for Kimi K2 and on a B200), "
                   f"so more experts at fixed active size are free -- if there are B* = R s concurrent sequences "
                   f"({a['bstar']:,.0f} at 256 experts, {b['bstar']:,.0f} at 1,024) and chips to hold N_tot "
                   f"({a['chips']} vs {b['chips']} H100s for fp8 weights). Short of users, the sparser model costs "
                   f"more (1,024 experts cost {b['few'] / a['few']:.1f}x what 256 do at 2,000 sequences). Quality per parameter, the other side of "
                   f"the trade, is outside this model",
                   {"E: sparsity, B*, H100s (fp8), cost at 2B* (chip-us/token), cost at B=2000":
                        "; ".join(f"{E}: {r['s']:.1f}, {r['bstar']:,.0f}, {r['chips']}, {r['sat'] * 1e6:.2f}, {r['few'] * 1e6:.2f}"
                                  for E, r in rows.items()),
                    **{f"{m} on {c}, E = 256 / 1,024: B*, chips, cost at 2B* (chip-us/token)":
                       f"{r[256]['bstar']:,.0f} / {r[1024]['bstar']:,.0f}; {r[256]['chips']} / {r[1024]['chips']}; "
                       f"{r[256]['sat'] * 1e6:.2f} / {r[1024]['sat'] * 1e6:.2f}" for (m, c), (r, _s) in others.items()},
                    "step at B* (latency floor) at 256 / 1024 experts": f"{a['lat'] * 1e3:.1f} / {b['lat'] * 1e3:.1f} ms"})
