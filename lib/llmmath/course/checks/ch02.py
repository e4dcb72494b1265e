"""Checks of chapter 2 (KV cache and attention): claims 3, 5, 6, 7."""

from __future__ import annotations

import numpy as np

from ... import attention, hardware, models, serving
from ._sheets import require_sheets
from ..claims import Verdict, register, require
from .ch01 import _DATASHEET_BF16, _DATASHEET_BF16_FLOP_PER_BYTE

# Config fields written out by hand (from the models' config.json files), so that a
# wrong catalog entry or a wrong formula in the library makes the checks fail.
# (n_layers, n_heads, n_kv_heads, head_dim) for standard attention.
_CONFIG_GQA = {
    "llama-2-7b": (32, 32, 32, 128),        # MHA
    "llama-3.1-8b": (32, 32, 8, 128),       # GQA, G = 4
    "llama-3.1-70b": (80, 64, 8, 128),      # GQA, G = 8
    "qwen3-235b-a22b": (94, 64, 4, 128),    # GQA, G = 16
}
# DeepSeek-V3 config.json: num_hidden_layers 61, num_attention_heads 128,
# kv_lora_rank 512, qk_rope_head_dim 64 (DeepSeek-V2 paper, section 2.1, for the method).
_DS = dict(n_layers=61, n_heads=128, r_kv=512, r_rope=64)
# Kimi K2 (huggingface.co/moonshotai/Kimi-K2-Instruct, config.json): the same MLA with num_attention_heads 64.
_KIMI_HEADS = 64
# An fp8 cache with bf16 math (the case the interview reasons about: one byte a cached value). FlashMLA's fp8
# decode kernel for DeepSeek (github.com/deepseek-ai/FlashMLA, the V3.2 fp8 deep dive) dequantizes each tile to
# bf16 before the tensor cores, so the ridge is still the bf16 one. Its packed token is 656 bytes: 512 fp8 latent
# values, 4 fp32 scales (16 B), and the 64 rope values kept in bf16 (128 B).
_FLASHMLA_FP8_TOKEN_BYTES = 512 * 1 + 4 * 4 + 64 * 2
# The V3 report's minimum decode unit splits attention 4 ways (TP4 x DP80, section 3.4.2); DeepSeek's
# production decode (open-infra "day 6" overview) runs MLA data-parallel, all 128 heads on one GPU.
_DS_DECODE_TP = 4


@register(3)
def _check_3() -> Verdict:
    require_sheets(3, chips="all", models_=['deepseek-v3', 'kimi-k2', 'llama-3.1-70b', 'llama-3.1-8b',
                   'qwen3-235b-a22b'])
    rows, margins = {}, []
    for model, (_, nh, nkv, _h) in _CONFIG_GQA.items():
        hand = 2 * (nh / nkv) / 2            # 2 G / b at bf16 (b = 2 bytes): G FLOP per byte
        got = attention.arithmetic_intensity(model, "bf16")
        require(abs(got / hand - 1) < 1e-12, 3, f"{model}: intensity {got} vs hand {hand}")
        for chip, ridge in _DATASHEET_BF16_FLOP_PER_BYTE.items():
            margins.append(ridge / hand)
        rows[f"{model} ({models.get(model).attention_kind}, G = {nh // nkv})"] = f"{hand:g} FLOP/byte"
    lo, hi = min(margins), max(margins)
    require(lo > 9, 3, f"a GQA/MHA model's decode attention is only {lo:.1f}x below a chip's ridge")
    # Absorbed MLA: 2 n_h (2 r_kv + r_rope) FLOPs per cached token over (r_kv + r_rope) * 2 bytes.
    hand_mla = 2 * _DS["n_heads"] * (2 * _DS["r_kv"] + _DS["r_rope"]) / ((_DS["r_kv"] + _DS["r_rope"]) * 2)
    got_mla = attention.arithmetic_intensity("deepseek-v3", "bf16", "MLA-absorbed")
    require(abs(got_mla / hand_mla - 1) < 1e-12, 3, f"MLA intensity {got_mla} vs hand {hand_mla}")
    mla_margin = {c: r / hand_mla for c, r in _DATASHEET_BF16_FLOP_PER_BYTE.items()}
    compute_bound = sorted(c for c, m in mla_margin.items() if m < 1)
    require("h200" in compute_bound and "a100-80gb" in compute_bound, 3,
            f"absorbed MLA at {hand_mla:.0f} FLOP/byte should out-run the H200 (206) and A100 (153) ridges")
    split = attention.arithmetic_intensity("deepseek-v3", "bf16", "MLA-absorbed", heads_split=_DS_DECODE_TP)
    require(abs(split - hand_mla / _DS_DECODE_TP) < 1e-9 and
            min(_DATASHEET_BF16_FLOP_PER_BYTE.values()) / split > 2, 3,
            f"with heads split {_DS_DECODE_TP} ways MLA should be memory-bound everywhere, got {split:.0f} FLOP/byte")
    # A second MLA model: Kimi K2 keeps DeepSeek-V3's latent (512 + 64) but has 64 heads, so half the FLOPs per
    # cached byte: 2 x 64 x 1088 / 1152 = 121 FLOP/byte, below every chip's ridge (the A100's 153 is the lowest).
    hand_kimi = 2 * _KIMI_HEADS * (2 * _DS["r_kv"] + _DS["r_rope"]) / ((_DS["r_kv"] + _DS["r_rope"]) * 2)
    got_kimi = attention.arithmetic_intensity("kimi-k2", "bf16", "MLA-absorbed")
    require(abs(got_kimi / hand_kimi - 1) < 1e-12, 3, f"Kimi K2 MLA intensity {got_kimi} vs hand {hand_kimi}")
    kimi_margin = min(_DATASHEET_BF16_FLOP_PER_BYTE.values()) / hand_kimi
    require(kimi_margin > 1, 3, f"Kimi K2's absorbed MLA ({hand_kimi:.0f} FLOP/byte) should sit below every ridge")
    # fp8 cache, bf16 math: the same FLOPs over half the bytes (576 a token and layer), or over FlashMLA's 656.
    hand_fp8 = 2 * _DS["n_heads"] * (2 * _DS["r_kv"] + _DS["r_rope"]) / ((_DS["r_kv"] + _DS["r_rope"]) * 1)
    got_fp8 = attention.arithmetic_intensity("deepseek-v3", "fp8", "MLA-absorbed")
    require(abs(got_fp8 / hand_fp8 - 1) < 1e-12, 3, f"MLA intensity with an fp8 cache {got_fp8} vs hand {hand_fp8}")
    packed_fp8 = 2 * _DS["n_heads"] * (2 * _DS["r_kv"] + _DS["r_rope"]) / _FLASHMLA_FP8_TOKEN_BYTES
    fp8_compute_bound = sorted(c for c, r in _DATASHEET_BF16_FLOP_PER_BYTE.items() if r < packed_fp8)
    require({"h100-sxm", "b200", "h200", "mi300x"} <= set(fp8_compute_bound), 3,
            f"absorbed MLA over an fp8 cache ({packed_fp8:.0f}-{hand_fp8:.0f} FLOP/byte) should out-run the H100's "
            f"(295) and B200's (281) bf16 ridges, got compute-bound only on {fp8_compute_bound}")
    fp8_memory_bound = sorted(set(_DATASHEET_BF16_FLOP_PER_BYTE) - set(fp8_compute_bound))
    recomputed = attention.arithmetic_intensity("deepseek-v3", "bf16", "MLA-recomputed")
    return Verdict(3, "holds if",
                   f"holds for MHA/GQA/MQA: a cached byte serves only the G query heads of its group, so decode "
                   f"attention does G FLOP per byte at bf16 (1-16 for these models), "
                   f"{lo:.0f}-{hi:.0f}x below the chips' ridges, and batching cannot share the cache. It does not "
                   f"hold for MLA with absorbed up-projections and all 128 heads on one chip (DeepSeek-V3): every head "
                   f"reads the same latent, {hand_mla:.0f} FLOP/byte, above the H200's and A100's ridges and near the "
                   f"H100's; over an fp8 cache with bf16 math, as DeepSeek's fp8 kernel runs it, the same FLOPs meet "
                   f"half the bytes, {packed_fp8:.0f}-{hand_fp8:.0f} FLOP/byte, compute-bound on every chip here "
                   f"{'except ' + ', '.join(fp8_memory_bound) if fp8_memory_bound else 'without exception'}; with 64 heads (Kimi K2) the bf16 latent "
                   f"serves half the FLOPs, {hand_kimi:.0f} FLOP/byte, memory-bound again on every chip "
                   f"({kimi_margin:.2f}x below the lowest ridge)",
                   {**rows,
                    "DeepSeek-V3 MLA absorbed (hand: 2*128*1088/1152)": f"{hand_mla:.1f} FLOP/byte",
                    "DeepSeek-V3 MLA absorbed, fp8 cache, bf16 math (hand: 2*128*1088/576; FlashMLA's 656-byte "
                    "token: /656)": f"{hand_fp8:.1f} | {packed_fp8:.1f} FLOP/byte",
                    "chips where it is compute-bound with the fp8 cache (FlashMLA's token, bf16 ridge)":
                        ", ".join(fp8_compute_bound),
                    "Kimi K2 MLA absorbed, 64 heads (hand: 2*64*1088/1152)": f"{hand_kimi:.1f} FLOP/byte",
                    "chips where DeepSeek-V3's absorbed MLA is compute-bound (bf16)": ", ".join(compute_bound),
                    "ridge / MLA intensity, H100 | H200 | B200": " | ".join(f"{mla_margin[c]:.2f}"
                                                                          for c in ("h100-sxm", "h200", "b200")),
                    f"MLA with heads split {_DS_DECODE_TP} ways (the V3 report's TP4 layout; production decode is DP, "
                    f"all heads on one GPU: {hand_mla:.0f})": f"{split:.1f} FLOP/byte",
                    "MLA not absorbed, latent recomputed": f"{recomputed:,.0f} FLOP/byte (why absorption exists)"})


# Llama-3.1-70B by hand from config.json: 70,553,706,496 params, untied input embedding 128,256 x 8,192
# (N_mm excludes it); beta = 2 (K, V) x 80 layers x 8 kv heads x 128 x 2 bytes; a = 4 x 64 heads x 128 x 80
# layers FLOPs per cached token. H100 SXM datasheet: 989.5 TFLOPS dense bf16, 3.35 TB/s.
_L70 = dict(n_mm=70_553_706_496 - 128_256 * 8_192, beta=2 * 80 * 8 * 128 * 2, a=4 * 64 * 128 * 80)
# Llama-3.1-8B the same way: 8,030,261,248 params, untied embedding 128,256 x 4,096; 32 layers, 32 heads,
# 8 kv heads of 128: beta = 2 x 32 x 8 x 128 x 2 bytes, a = 4 x 32 x 128 x 32 FLOPs per cached token.
_L8 = dict(n_mm=8_030_261_248 - 128_256 * 4_096, beta=2 * 32 * 8 * 128 * 2, a=4 * 32 * 128 * 32)
_LLAMA_HAND = {"llama-3.1-70b": _L70, "llama-3.1-8b": _L8}
_H100_F, _H100_W = _DATASHEET_BF16["h100-sxm"]


def _hand_crossover(model: str = "llama-3.1-70b", chip: str = "h100-sxm") -> float:
    """L* = 2 N_mm / (F beta / W - a) from the config numbers above and the chip's datasheet (bf16)."""
    c = _LLAMA_HAND[model]
    F, W = _DATASHEET_BF16[chip]
    return 2 * c["n_mm"] / (F * c["beta"] / W - c["a"])


def _hand_crossover_llama70b_h100() -> float:
    return _hand_crossover("llama-3.1-70b", "h100-sxm")


@register(5)
def _check_5() -> Verdict:
    require_sheets(5, chips="all", models_=['deepseek-v3', 'llama-3.1-70b', 'llama-3.1-8b', 'qwen3-235b-a22b'])
    hand = _hand_crossover_llama70b_h100()
    lstar = attention.kv_crossover_context("llama-3.1-70b", "h100-sxm")
    require(abs(lstar / hand - 1) < 1e-9, 5, f"L* {lstar} vs hand {hand}")
    # The same hand form for a second model and a second chip (Llama-3.1-8B; B200 at 2.25 PF bf16, 8 TB/s).
    hand_more = {}
    for mh in _LLAMA_HAND:
        for ch in ("h100-sxm", "b200"):
            h_ = _hand_crossover(mh, ch)
            got_ = attention.kv_crossover_context(mh, ch)
            require(abs(got_ / h_ - 1) < 1e-6, 5, f"{mh} on {ch}: L* {got_:,.1f} vs hand {h_:,.1f} tokens")
            hand_more[(mh, ch)] = h_
    # At a fixed batch above the balance batch, the step flips from compute- to memory-bound.
    B = 4.0 * serving.balance_batch("llama-3.1-70b", "h100-sxm", 0)
    lb = attention.crossover_context_at_batch("llama-3.1-70b", "h100-sxm", B)
    s = serving.decode_step("llama-3.1-70b", "h100-sxm", B, np.array([0.5 * lb, 2.0 * lb]), n_chips=8,
                            check_capacity=False)
    require(bool(s.compute_bound[0]) and not bool(s.compute_bound[1]), 5,
            f"at B = {B:.0f} the step should be compute-bound at L = {0.5 * lb:.0f} and memory-bound at {2 * lb:.0f}")
    require(0 < lb < lstar, 5, "at finite batch the weights add memory time, so the flip comes before L*")
    rows, finite = {}, []
    for model in ("llama-3.1-8b", "llama-3.1-70b", "qwen3-235b-a22b", "deepseek-v3"):
        vals = []
        for chip in ("h100-sxm", "h200", "b200", "mi300x", "tpu-v6e"):
            L = attention.kv_crossover_context(model, chip)
            vals.append("never" if np.isinf(L) else f"{L:,.0f}")
        rows[f"L* {model} (H100 | H200 | B200 | MI300X | v6e)"] = " | ".join(vals)
    # every dense-attention model in the catalog, on every chip whose bf16 ridge F/W is at least 100 FLOP/byte; a
    # chip with less compute per byte (the export-limited H20: 148 TFLOP/s over 4 TB/s = 37) crosses much later
    gqa = [m for m in models.names() if not models.get(m).is_mla]
    low_ridge = {}
    for chip in hardware.names():
        L_chip = [attention.kv_crossover_context(model, chip) for model in gqa]
        require(all(np.isfinite(L_chip)), 5, f"every GQA/MHA model should cross over on {chip}")
        if hardware.get(chip).balance_flops_per_byte("bf16") >= 100:
            finite += L_chip
        else:
            low_ridge[chip] = max(L_chip)
    require(max(finite) < 20000, 5, "every GQA/MHA model should cross over below 20K tokens on a chip whose ridge "
                                    "is at least 100 FLOP/byte")
    require(all(v > 20000 for v in low_ridge.values()), 5, "a chip with a ridge below 100 FLOP/byte should cross "
                                                           "later than the rest")
    rows["L* over every GQA/MHA model x chip with a ridge >= 100 FLOP/byte"] = (f"{min(finite):,.0f} .. "
                                                                              f"{max(finite):,.0f} tokens")
    rows["L*, the latest, on a chip with a lower ridge"] = "; ".join(f"{c} {v:,.0f} tokens"
                                                                     for c, v in low_ridge.items())
    ds_h200 = attention.kv_crossover_context("deepseek-v3", "h200")
    require(np.isinf(ds_h200), 5, "absorbed MLA on an H200 should never become KV-bound (its intensity is above the ridge)")
    big = serving.decode_step("deepseek-v3", "h200", 1e5, 1e6, n_chips=16, check_capacity=False)
    require(bool(big.compute_bound), 5, "DeepSeek-V3 on H200 at 1M context and huge batch should stay compute-bound")
    return Verdict(5, "holds if",
                   f"holds whenever decode attention is itself memory-bound (claim 3): the KV-read slope L beta/W "
                   f"overtakes the compute slope (2N + aL)/F at L* = 2N/(F beta/W - a) -- {lstar:,.0f} tokens for "
                   f"Llama-3.1-70B on an H100, {min(finite):,.0f}-{max(finite):,.0f} tokens for every GQA/MHA model "
                   f"and chip in the catalog whose ridge is at least 100 FLOP/byte"
                   + "".join(f" (up to {v:,.0f} on the {c}, whose compute is cut to a ridge of "
                             f"{hardware.get(c).balance_flops_per_byte('bf16'):.0f})" for c, v in low_ridge.items())
                   + f" -- and a fixed batch above "
                   f"the balance batch flips to memory-bound even earlier (its weight reads add memory time); absorbed MLA on one H200 (or A100) never "
                   f"flips, because its attention FLOPs grow as fast as its KV reads",
                   {"L*, Llama-3.1-70B on H100 (hand)": f"{hand:,.1f} tokens",
                    "L* by hand, Llama-3.1-8B / 70B on H100 | B200": " | ".join(
                        " / ".join(f"{hand_more[(mh, ch)]:,.0f}" for mh in ("llama-3.1-8b", "llama-3.1-70b"))
                        for ch in ("h100-sxm", "b200")),
                    f"flip at B = {B:,.0f} (4 x balance batch)": f"{lb:,.0f} tokens", **rows})


@register(6)
def _check_6() -> Verdict:
    require_sheets(6, chips="all", models_=['llama-3.1-70b', 'llama-3.1-8b'])
    # Two models (Llama-3.1-70B and 8B) on two chips (H100 and B200), each by hand from its config and datasheet.
    out = {}
    for model in ("llama-3.1-70b", "llama-3.1-8b"):
        cfg = _LLAMA_HAND[model]
        for chip in ("h100-sxm", "b200"):
            F, W = _DATASHEET_BF16[chip]
            tag = f"{model} on {chip}"
            lstar = attention.kv_crossover_context(model, chip)
            hand_lstar = _hand_crossover(model, chip)
            require(abs(lstar / hand_lstar - 1) < 1e-6, 6,
                    f"{tag}: balance context {lstar:,.0f} vs hand {hand_lstar:,.0f} tokens")
            # Hand, from the config and the datasheet: at a batch so large the weight reads vanish, a
            # sequence costs (2N + aL)/F of compute and L beta/W of KV reads, so MFU = compute / max(both).
            x = np.array([1.0, 2.0, 4.0])
            L_hand = x * hand_lstar
            comp = (2 * cfg["n_mm"] + cfg["a"] * L_hand) / F
            hand = comp / np.maximum(comp, L_hand * cfg["beta"] / W)
            B = 1e7  # batch so large that the weight reads vanish: the two slopes alone
            step = serving.decode_step(model, chip, B, L_hand, n_chips=8, check_capacity=False)
            require(np.allclose(step.mfu, hand, rtol=2e-3), 6, f"{tag}: MFU {step.mfu} vs hand {hand}")
            require(abs(step.mfu[1] - 0.5) < 0.05, 6, f"{tag}: at twice the balance context MFU is "
                                                       f"{step.mfu[1]:.3f}, not ~1/2")
            # Cost per token (chip-s) keeps rising with context on both sides of L*: no minimum there.
            L = np.linspace(0.1, 3.0, 30) * lstar
            cost = serving.decode_cost_per_token(model, chip, B, L, n_chips=8, check_capacity=False)
            require(bool(np.all(np.diff(cost) > 0)), 6, f"{tag}: cost per token should rise monotonically with context")
            below, above = (cost[9] - cost[0]) / (L[9] - L[0]), (cost[-1] - cost[-10]) / (L[-1] - L[-10])
            # At a realistic batch (4 x B*), the balance is a curve in (B, L): where both resources are busy.
            Bb = 4 * serving.balance_batch(model, chip, 0)
            lb = attention.crossover_context_at_batch(model, chip, Bb)
            sb = serving.decode_step(model, chip, Bb, lb, n_chips=8, check_capacity=False)
            require(abs(sb.compute_s / sb.memory_s - 1) < 1e-6, 6, f"{tag}: at the balanced (B, L) both times "
                                                                      f"should be equal")
            out[(model, chip)] = dict(lstar=lstar, mfu=step.mfu, hand=hand, slope=above / below, Bb=Bb, lb=lb,
                                      mfu_b=sb.mfu)
    r = out[("llama-3.1-70b", "h100-sxm")]
    mfu2 = [o["mfu"][1] for o in out.values()]
    slopes = [o["slope"] for o in out.values()]
    return Verdict(6, "holds if",
                   "holds in the sense of utilisation: only at the balance context are both the FLOPs and the "
                   f"bandwidth fully used, and past it MFU falls as ~L*/L ({min(mfu2):.3f}-{max(mfu2):.3f} at 2L* for "
                   "Llama-3.1-8B and 70B on H100 and B200, the interviewer's 'half'); it is not a cost optimum -- "
                   f"cost per token rises with context on both sides, {min(slopes):.0f}-{max(slopes):.0f}x more "
                   "steeply above L* -- so it is the ideal context for the hardware, not for the user, and sparse "
                   "attention (claim 7) moves it",
                   {"L*, Llama-3.1-70B on H100": f"{r['lstar']:,.0f} tokens",
                    "MFU at L*, 2L*, 4L* (large batch), Llama-3.1-70B on H100": ", ".join(f"{v:.3f}" for v in r["mfu"]),
                    "hand (config + datasheet): compute / max(compute, KV)": ", ".join(f"{v:.3f}" for v in r["hand"]),
                    **{f"{m} on {c}: L* / MFU at 2L* (hand) / cost slope above : below L*":
                       f"{o['lstar']:,.0f} tokens / {o['mfu'][1]:.3f} ({o['hand'][1]:.3f}) / {o['slope']:.1f}x"
                       for (m, c), o in out.items()},
                    f"balanced context at B = {r['Bb']:,.0f} (70B, H100)": f"{r['lb']:,.0f} tokens, MFU {r['mfu_b']:.3f}"})


def _claim_7_second_model_and_chips(L, curves: dict, nsa: dict) -> tuple[dict, dict, dict]:
    """Claim 7 on a GQA model (Llama-3.1-405B) and on two chips, by hand: (its curves, the 1M-token reads, the chips)."""
    # A second model: Llama-3.1-405B (GQA, config: 126 layers, 8 KV heads of 128): K and V in bf16 are
    # 2 x 8 x 128 x 2 = 4,096 bytes per token per layer; keys alone 2,048 (Quest's page bounds, MoBA's means).
    beta405, layers405 = 2 * 8 * 128 * 2, 126
    require(attention.bytes_per_cached_token("llama-3.1-405b") == beta405, 7, "Llama-3.1-405B bytes per token per layer")
    c405 = {"dense": attention.dense_kv_bytes(L, beta405),
            "NSA": attention.nsa_kv_bytes(L, beta405, nsa["compress_stride"], nsa["select_block"],
                                          nsa["select_blocks"], nsa["window"]),
            "Quest": attention.quest_kv_bytes(L, beta405, beta405 / 2, 2048, 16),
            "MoBA": attention.moba_kv_bytes(L, beta405, beta405 / 2, 4096, 12)}
    for n, y in c405.items():
        if n != "dense":
            require(bool(np.all(y < c405["dense"] / 2)) and attention.loglog_slope(L, y)[-1] < 1.0, 7,
                    f"Llama-3.1-405B, {n}: should read < 1/2 of dense and grow more slowly from 128K on")
    # Two chips: one 1M-token sequence's KV read per decode step, every layer, from the H100 (3.35 TB/s) and
    # B200 (8 TB/s) datasheets; DeepSeek-V3's 61 layers.
    sheets = {"h100-sxm": 3.35e12, "b200": 8e12}
    at_1m = {}
    for chip, W in sheets.items():
        for model, n_layers, dense_b, sparse_b in (
                ("deepseek-v3", 61, curves["dense"][1], curves["DSA (top-2048 + indexer)"][1]),
                ("llama-3.1-405b", layers405, c405["dense"][1], c405["NSA"][1])):
            t_dense, t_sparse = n_layers * dense_b / W, n_layers * sparse_b / W
            got = attention.kv_read_time_s(model, chip, np.array([dense_b, sparse_b]))
            require(np.allclose(got, [t_dense, t_sparse], rtol=1e-3), 7,
                    f"{model} on {chip}: KV read {got * 1e3} ms vs hand {t_dense * 1e3:.2f} / {t_sparse * 1e3:.2f} ms")
            at_1m[(model, chip)] = (t_dense, t_sparse)
    return c405, at_1m, sheets


@register(7)
def _check_7() -> Verdict:
    require_sheets(7, chips=['b200', 'h100-sxm'], models_=['deepseek-v3', 'llama-3.1-405b'])
    beta = (_DS["r_kv"] + _DS["r_rope"]) * 2        # MLA cache bytes per token per layer, bf16: 1152
    require(attention.bytes_per_cached_token("deepseek-v3") == beta, 7, "MLA bytes per token per layer")
    dsa = attention.PUBLISHED["DSA"]
    iota, k = dsa["index_key_bytes"], dsa["index_topk"]
    require(iota == 128 + 4 and k == 2048, 7, "DSA: fp8 key of 128 + one fp32 scale; top-k 2048")
    # Hand: at 128K tokens DSA reads 131,072 x 132 + 2,048 x 1,152 bytes per layer.
    hand = 131_072 * 132 + 2_048 * 1_152
    got = attention.indexer_topk_kv_bytes(131_072, k, beta, iota)
    require(got == hand, 7, f"DSA bytes {got} vs hand {hand}")
    L = np.array([2.0**17, 2.0**20, 2.0**23])
    nsa = attention.PUBLISHED["NSA"]
    curves = {
        "dense": attention.dense_kv_bytes(L, beta),
        "DSA (top-2048 + indexer)": attention.indexer_topk_kv_bytes(L, k, beta, iota),
        "NSA (l=32/d=16, 16x64 blocks, w=512)": attention.nsa_kv_bytes(
            L, beta, nsa["compress_stride"], nsa["select_block"], nsa["select_blocks"], nsa["window"]),
        "Quest (page 16, budget 2048)": attention.quest_kv_bytes(L, beta, beta / 2, 2048, 16),
        "MoBA (4096 x top-12)": attention.moba_kv_bytes(L, beta, beta / 2, 4096, 12),
        "block top-k, s = sqrt-optimal": attention.block_topk_optimal(L, 16, beta, beta / 2)[1],
    }
    slopes = {n: attention.loglog_slope(L, y) for n, y in curves.items()}
    for n, y in curves.items():
        if n != "dense":
            require(bool(np.all(y < curves["dense"] / 2)), 7, f"{n} should read < 1/2 of dense from 128K on")
    fixed = [n for n in curves if n not in ("dense", "block top-k, s = sqrt-optimal")]
    require(all(slopes[n][-1] < 1.0 for n in fixed), 7, "sparse bytes should grow more slowly than dense locally")
    # Asymptotically each fixed-parameter mechanism is linear: its per-token slope, relative to dense,
    # is the fraction of the cache it scans for every token (hand: 132/1152, 1/16, 2 x 1/2 / 16, 1/2 / 4096).
    far = np.array([1e12, 2e12])
    hand_slope = {fixed[0]: 132 / 1152, fixed[1]: 1 / 16, fixed[2]: 1 / 16, fixed[3]: 0.5 / 4096}
    for n in fixed:
        y = {fixed[0]: attention.indexer_topk_kv_bytes(far, k, beta, iota),
             fixed[1]: attention.nsa_kv_bytes(far, beta),
             fixed[2]: attention.quest_kv_bytes(far, beta, beta / 2, 2048, 16),
             fixed[3]: attention.moba_kv_bytes(far, beta, beta / 2, 4096, 12)}[n]
        rel = (y[1] - y[0]) / (far[1] - far[0]) / beta
        require(abs(rel / hand_slope[n] - 1) < 1e-3, 7, f"{n}: asymptotic slope {rel:.4g} of dense vs hand {hand_slope[n]:.4g}")
    require(np.allclose(slopes["block top-k, s = sqrt-optimal"], 0.5), 7, "the sqrt law needs s ~ sqrt(L)")
    ratio = {n: curves["dense"][0] / y[0] for n, y in curves.items()}
    c405, at_1m, sheets = _claim_7_second_model_and_chips(L, curves, nsa)
    require(all(ts < td / 5 for td, ts in at_1m.values()), 7, "at 1M tokens the sparse read should be 5x+ faster")
    return Verdict(7, "holds if",
                   "holds as a much smaller slope, not as a smaller power: every published mechanism still reads "
                   "something for each cached token (DSA's fp8 indexer key, NSA's compressed tokens, Quest's page "
                   f"bounds, MoBA's block means), so bytes are a fixed top-k plus a linear term "
                   f"{min(1 / v for v in hand_slope.values()):.0f}-{max(1 / v for v in hand_slope.values()):,.0f}x "
                   "flatter than dense: far slower growth at 128K-8M tokens (MLA and GQA caches alike), linear in the limit; a sqrt(L) law appears only if "
                   "the block size grows as sqrt(L), which none of the published settings does",
                   {"bytes per layer at 128K, dense / sparse": ", ".join(f"{n}: {r:.1f}x" for n, r in ratio.items()
                                                                        if n != "dense"),
                    "asymptotic slope / dense slope": "DSA 132/1152 = 0.115, NSA 1/16, Quest 1/16, MoBA 1/8192",
                    "log-log slope 1M -> 8M tokens": ", ".join(f"{n}: {s[-1]:.2f}" for n, s in slopes.items()),
                    "DSA at 128K (hand: 131,072 x 132 + 2,048 x 1,152)": f"{hand / 1e6:.2f} MB per layer",
                    "Llama-3.1-405B (GQA, 4,096 B/token/layer) at 128K, dense / sparse": ", ".join(
                        f"{n}: {c405['dense'][0] / y[0]:.1f}x" for n, y in c405.items() if n != "dense"),
                    "one 1M-token sequence's KV read per step, dense -> sparse (H100 | B200)": "; ".join(
                        f"{m} ({'DSA' if m == 'deepseek-v3' else 'NSA'}): "
                        + " | ".join(f"{at_1m[(m, c)][0] * 1e3:.1f} -> {at_1m[(m, c)][1] * 1e3:.2f} ms" for c in sheets)
                        for m in ("deepseek-v3", "llama-3.1-405b"))})
