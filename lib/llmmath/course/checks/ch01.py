"""Checks of chapter 1 (batch size): claims 1, 2, 4, 8."""

from __future__ import annotations

import dataclasses
import math
from collections import Counter

import numpy as np

from ... import hardware, models, serving
from ._sheets import require_sheets
from ..claims import Verdict, register, require
from .ch03 import _deepseek_v3_by_hand

# Independent anchors, copied from datasheets (not from the catalog), so that a
# wrong catalog entry makes the checks fail: dense bf16 FLOP/s and HBM bytes/s per chip.
_DATASHEET_BF16 = {
    "a100-80gb": (312e12, 2.039e12),    # A100 80GB SXM datasheet: 312 TFLOPS bf16 dense, 2,039 GB/s
    "h100-sxm": (989.5e12, 3.35e12),    # H100 SXM datasheet: 1,979 TFLOPS with sparsity -> 989.5 dense; 3.35 TB/s
    "h200": (989.5e12, 4.8e12),         # H200 SXM: same compute as H100, 4.8 TB/s HBM3e
    "b200": (2.25e15, 8.0e12),          # HGX B200: 36 PFLOPS bf16 sparse / 8 GPUs = 4.5 sparse -> 2.25 dense per GPU; 8 TB/s
    "mi300x": (1307.4e12, 5.3e12),      # MI300X datasheet: 1,307.4 TFLOPS bf16 dense, 5.3 TB/s
    "tpu-v5e": (197e12, 819e9),         # Cloud TPU v5e: 197 TFLOPS bf16, 819 GB/s
    "tpu-v6e": (918e12, 1.638e12),      # Cloud TPU v6e (Trillium): 918 TFLOPS bf16, 1,638 GB/s
}
_DATASHEET_BF16_FLOP_PER_BYTE = {c: f / w for c, (f, w) in _DATASHEET_BF16.items()}
# Dense fp8 FLOP/s: the same datasheets' fp8 column, halved where it is quoted with sparsity.
_DATASHEET_FP8 = {"h100-sxm": 1979e12, "h200": 1979e12, "b200": 4.5e15, "mi300x": 2614.9e12,
                  "gb200": 5.0e15}       # GB200 NVL72: 720 PFLOPS fp8 with sparsity / 72 / 2; HBM 8 TB/s per GPU
_DATASHEET_HBM = {**{c: w for c, (_, w) in _DATASHEET_BF16.items()}, "gb200": 8.0e12}
_CH1_CHIPS = tuple(_DATASHEET_BF16_FLOP_PER_BYTE)
_CH1_DENSE = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-4b")
_CH1_MOE = ("mixtral-8x7b", "deepseek-v3")
# Llama 3.1 by hand (config.json + safetensors metadata): total parameters, vocab x d_model of the
# untied input embedding (a step reads one row of it per sequence).
_LLAMA = {"llama-3.1-8b": (8_030_261_248, 128_256, 4_096), "llama-3.1-70b": (70_553_706_496, 128_256, 8_192)}
# DeepSeek-V3 served with expert parallelism (fp8 weights, as DeepSeek serves it): placements that hold it.
_EP_PLACEMENTS = (("h200", 8), ("h100-sxm", 16), ("gb200", 64))


def _min_chips(model, chip, weight_dtype="bf16") -> int:
    m, c = models.get(model), hardware.get(chip)
    return int(np.ceil(m.weight_bytes(weight_dtype) * 1.1 / c.hbm_bytes))


@register(1)
def _check_1() -> Verdict:
    require_sheets(1, chips="all", models_=['deepseek-v3', 'llama-3.1-70b', 'llama-3.1-8b', 'qwen3-4b', 'mixtral-8x7b'])
    # On one chip, batch moves cost per token by R (hundreds of times); the datasheet R
    # written above must match what the library computes. The other knob an operator
    # turns on the same hardware, weight precision (bf16 -> fp8), moves it by exactly the
    # datasheet's fp8/bf16 FLOP/s ratio at large batch and by the byte ratio 2 at batch 1.
    spread_batch, spread_dtype = [], []
    for model in _CH1_DENSE + _CH1_MOE:
        m = models.get(model)
        for chip in _CH1_CHIPS:
            n = _min_chips(model, chip)
            bstar = serving.balance_batch(model, chip, context=0)
            c1 = serving.decode_cost_per_token(model, chip, 1, 0, n_chips=n, check_capacity=False)
            cb = serving.decode_cost_per_token(model, chip, 4 * bstar, 0, n_chips=n, check_capacity=False)
            hand = _DATASHEET_BF16_FLOP_PER_BYTE[chip] * m.expected_params_read(1) / m.matmul_params_per_token
            require(abs(c1 / cb / hand - 1) < 0.01, 1,
                    f"{model} on {chip}: batching cuts cost {c1 / cb:.0f}x, the datasheet's F/W says {hand:.0f}x")
            spread_batch.append(c1 / cb)
            if chip in _DATASHEET_FP8:
                big = 4 * bstar
                bf, f8 = (serving.decode_cost_per_token(model, chip, big, 0, n_chips=n, weight_dtype=wd, kv_dtype=wd,
                                                        check_capacity=False) for wd in ("bf16", "fp8"))
                expect = _DATASHEET_FP8[chip] / _DATASHEET_BF16[chip][0]
                require(abs(bf / f8 / expect - 1) < 0.01, 1,
                        f"{model} on {chip}: fp8 changes the large-batch cost {bf / f8:.2f}x, datasheet {expect:.2f}x")
                spread_dtype.append(bf / f8)
    lo, hi = min(spread_batch), max(spread_batch)
    dt_hi = max(spread_dtype)
    require(lo > 50 * dt_hi, 1, f"batching changes cost by {lo:.0f}x at least, precision by {dt_hi:.1f}x")
    # A dense model's step time is flat up to the balance batch: at B = 1 it is the weight read,
    # by hand from the config and the datasheet, (N_tot - V d + d) b_w / (n W).
    for model, (total, vocab, d) in _LLAMA.items():
        for chip in _CH1_CHIPS:
            n = _min_chips(model, chip)
            hand = (total - vocab * d + d) * 2 / (n * _DATASHEET_BF16[chip][1])
            t1 = serving.decode_step_time_s(model, chip, 1, 0, n_chips=n, check_capacity=False)
            bstar = serving.balance_batch(model, chip, context=0)
            tb = serving.decode_step_time_s(model, chip, bstar, 0, n_chips=n, check_capacity=False)
            require(abs(t1 / hand - 1) < 1e-3, 1, f"{model} on {n} x {chip}: step at B=1 {t1:.3e} s, hand {hand:.3e} s")
            require(tb / t1 < 1.01, 1, f"{model} on {chip}: step time grows {tb / t1:.2f}x before the balance batch")
    fast, flat, hand = _fast_mode_by_hand()
    return Verdict(1, "holds",
                   f"on a given chip the batch moves cost per token by the chip's balance ratio ({lo:.0f}-{hi:.0f}x "
                   f"here) and halving the weight precision, the next knob, by at most {dt_hi:.0f}x; but a trade of "
                   f"speed for price exists only through what grows with the batch. At L = 0 a dense model's step "
                   f"is flat below the balance batch, so a smaller batch buys no speed ({fast.from_batch:.0f} -> "
                   f"{fast.batch:.1f} sequences: {flat.speedup:.2f}x faster at {flat.price_ratio:.0f}x the price). "
                   f"With context the KV reads do: Llama-3.1-70B on 8 H100s at 8,192 tokens, {fast.from_batch:.0f} -> "
                   f"{fast.batch:.1f} sequences is {fast.speedup:.1f}x faster at {fast.price_ratio:.1f}x the price, the "
                   f"interview's Fast Mode (~2.5x for ~6x) from the batch alone",
                   {"cost(B=1) / cost(B=4B*), all chip x model pairs": f"{lo:.0f}x .. {hi:.0f}x",
                    "cost(bf16) / cost(fp8), same batch": f"up to {dt_hi:.2f}x",
                    "Fast Mode, Llama-3.1-70B on 8 H100s, L = 8192: batch, speed-up, price (library / hand)": (
                        f"{fast.from_batch:.0f} -> {fast.batch:.2f}, {fast.speedup:.2f}x, {fast.price_ratio:.2f}x / "
                        f"{hand[0]:.2f}, 2.50x, {hand[1]:.2f}x"),
                    "the same batches at L = 0": f"{flat.speedup:.3f}x faster, {flat.price_ratio:.1f}x the price",
                    "chips": ", ".join(_CH1_CHIPS), "models": ", ".join(_CH1_DENSE + _CH1_MOE)})


def _fast_mode_by_hand():
    """Claim 1's trade, Llama-3.1-70B on 8 H100s from 93 sequences (half the 185 whose 8,192-token KV fits): the batch
    that streams 2.5x faster and its price, from the library and by hand. Below the balance batch a step reads the
    weights (all but the untied input table; B of its rows) and B sequences' KV: t(B) = ((N - V d + B d) 2 +
    B L 327,680) / (8 W), with 80 layers x 2 x 8 KV heads x 128 x 2 bytes = 327,680 bytes a token. Linear in B, so
    t(b) = t(93) / 2.5 solves by hand; the price is (93 / b) / 2.5."""
    total, vocab, d = _LLAMA["llama-3.1-70b"]
    W, L, beta = _DATASHEET_BF16["h100-sxm"][1], 8192, 327_680
    # the start, by hand: the sequences whose 8,192-token KV fits beside bf16 weights in 8 x 80 GB, halved, rounded up
    full = int((8 * 80e9 - total * 2) // (L * beta))
    B0 = -(-full // 2)
    require(full == int(serving.max_batch("llama-3.1-70b", "h100-sxm", L, n_chips=8)), 1,
            f"{full} sequences fit by hand, {serving.max_batch('llama-3.1-70b', 'h100-sxm', L, n_chips=8):.0f} by the "
            f"library")

    def t(b, ctx):
        return ((total - vocab * d + b * d) * 2 + b * ctx * beta) / (8 * W)

    b = (t(B0, L) / 2.5 * 8 * W - (total - vocab * d) * 2) / (2 * d + L * beta)
    hand = (b, (B0 / b) / 2.5)
    fast = serving.speed_for_price("llama-3.1-70b", "h100-sxm", L, B0, 2.5, n_chips=8)
    require(abs(fast.batch / b - 1) < 1e-3 and abs(fast.price_ratio / hand[1] - 1) < 1e-3, 1,
            f"Fast Mode: library {fast.batch:.2f} sequences at {fast.price_ratio:.2f}x vs hand {b:.2f} at {hand[1]:.2f}x")
    require(2.0 * 2.5 <= fast.price_ratio <= 3.0 * 2.5, 1,
            f"2.5x the speed now costs {fast.price_ratio:.1f}x, no longer Fast Mode's ~6x")
    # at L = 0 the same move buys (almost) nothing: the weight read does not shrink with the batch
    flat_hand = t(B0, 0) / t(b, 0)
    step = serving.decode_step_time_s
    flat_lib = step("llama-3.1-70b", "h100-sxm", B0, 0, n_chips=8) / step("llama-3.1-70b", "h100-sxm", b, 0, n_chips=8)
    require(abs(flat_lib / flat_hand - 1) < 1e-6 and flat_hand < 1.001, 1,
            f"at L = 0 the smaller batch is {flat_lib:.4f}x faster (hand {flat_hand:.4f}x): a trade where none should be")
    flat = SpeedForPriceAtZero(flat_lib, (B0 / b) / flat_lib)
    return fast, flat, hand


@dataclasses.dataclass(frozen=True)
class SpeedForPriceAtZero:
    speedup: float
    price_ratio: float


def _busiest_experts_by_hand(n_chips: int, n_experts: int = 256, k: int = 8) -> float:
    """E[max over chips of picked experts] for one token picking k of E experts, E/n per chip.

    Enumerates the partitions of k (how many picks land together), counts the ways to place
    each on the chips and to choose the experts inside them: independent of the library's
    generating-function sum."""
    g = n_experts // n_chips

    def parts(rest, largest):
        if rest == 0:
            yield ()
            return
        for p in range(min(rest, largest), 0, -1):
            for tail in parts(rest - p, p):
                yield (p,) + tail

    expect = 0.0
    for part in parts(k, k):
        if len(part) > n_chips:
            continue
        place = math.perm(n_chips, len(part))
        for mult in Counter(part).values():
            place //= math.factorial(mult)
        ways = place * math.prod(math.comb(g, p) for p in part)
        expect += max(part) * ways / math.comb(n_experts, k)
    return expect


@register(2)
def _check_2() -> Verdict:
    require_sheets(2, chips="all", models_=['deepseek-v3', 'llama-3.1-70b', 'llama-3.1-8b', 'qwen3-4b', 'mixtral-8x7b'])
    # (a) pooled bandwidth (every chip can read every weight, or one chip): the penalty is the
    #     datasheet's R times P_read(1) / N_mm, for dense and MoE alike.
    ratios = {}
    for chip, anchor in _DATASHEET_BF16_FLOP_PER_BYTE.items():
        for model in _CH1_DENSE + _CH1_MOE:
            r = serving.cost_ratio_unbatched(model, chip, context=0)
            m = models.get(model)
            expect = anchor * m.expected_params_read(1) / m.matmul_params_per_token
            require(abs(r / expect - 1) < 0.02, 2, f"{chip}/{model}: ratio {r:.0f} vs datasheet {expect:.0f}")
            ratios[(chip, model)] = r
    dense = np.array([v for (c, mod), v in ratios.items() if mod in _CH1_DENSE])
    require(dense.min() > 100 and dense.max() < 1000, 2,
            f"a dense model's unbatched penalty now spans {dense.min():.0f}..{dense.max():.0f}x, outside 'hundreds'")
    # (b) expert parallelism (how DeepSeek-V3 is served): each chip reads only its own experts and the
    #     busiest chip sets each layer. By hand from the config and the datasheets, at fp8 (b_w = 1):
    #     ratio = n R_fp8 [P_other / n + 58 E[max] P_e] / N_mm, R_fp8 = F_fp8 / (2 W).
    total, active = _deepseek_v3_by_hand()
    p_e = 3 * 7168 * 2048
    n_mm = active - 129_280 * 7168
    p_other = total - 129_280 * 7168 + 7168 - 58 * 256 * p_e      # attention, shared, dense layers, LM head, one row
    ep = {}
    for chip, n in _EP_PLACEMENTS:
        r_fp8 = _DATASHEET_FP8[chip] / (2 * _DATASHEET_HBM[chip])
        hand = n * r_fp8 * (p_other / n + 58 * _busiest_experts_by_hand(n) * p_e) / n_mm
        got = serving.expert_parallel_cost_ratio_unbatched("deepseek-v3", chip, n, weight_dtype="fp8")
        require(abs(got / hand - 1) < 1e-3, 2, f"DeepSeek-V3 on {n} x {chip} (EP, fp8): {got:.0f}x vs hand {hand:.0f}x")
        require(r_fp8 < got < r_fp8 * total / active * 1.05, 2, f"{n} x {chip}: {got:.0f}x is outside [R, R s]")
        ep[(chip, n)] = got
    ep_v = np.array(list(ep.values()))
    require(ep_v.min() < 1000 < ep_v.max(), 2,
            f"under expert parallelism DeepSeek-V3's penalty spans {ep_v.min():.0f}..{ep_v.max():.0f}x: "
            f"no longer straddles the quoted thousand")
    h100 = ratios[("h100-sxm", "llama-3.1-70b")]
    bstar = serving.balance_batch("deepseek-v3", "h100-sxm")
    ep_txt = ", ".join(f"{v:,.0f}x on {n} x {c}" for (c, n), v in ep.items())
    return Verdict(2, "holds if",
                   f"holds for a sparse MoE served with expert parallelism: the chips holding the experts a lone "
                   f"token did not pick sit idle but are paid for, so DeepSeek-V3 at batch 1 costs {ep_txt} "
                   f"(fp8) times its batched cost -- between R and R s (= B*, {bstar:,.0f} on an H100), rising "
                   f"with the chips. For a dense model, or an MoE whose experts any chip can read, it is the "
                   f"chip's R, {dense.min():.0f}-{dense.max():.0f}x at bf16 (~{h100:.0f}x on an H100): "
                   f"{1000 / dense.max():.1f}-{1000 / dense.min():.1f}x short of a thousand",
                   {"dense, pooled bandwidth (bf16), range over chips": f"{dense.min():.0f}x .. {dense.max():.0f}x",
                    "H100, Llama-3.1-70B": f"{h100:.0f}x",
                    **{f"DeepSeek-V3 EP on {n} x {c}, fp8": f"{v:,.0f}x" for (c, n), v in ep.items()},
                    "upper bound R s = B* (H100, one expert per chip)": f"{bstar:,.0f}x"})


@register(4)
def _check_4() -> Verdict:
    require_sheets(4, chips=['gb200', 'h100-sxm'], models_=['deepseek-v3', 'llama-3.1-70b', 'llama-3.1-8b',
                   'qwen3-4b'])
    rows = {}
    # Hand derivation for Llama-3.1-70B on 8 H100 SXM (datasheet 3.35 TB/s):
    # (70,553,706,496 params - 128,256 x 8,192 untied input embedding) x 2 bytes / (8 x 3.35e12 B/s)
    hand = (70_553_706_496 - 128_256 * 8_192) * 2 / (8 * 3.35e12)
    floor = serving.latency_floor_s("llama-3.1-70b", "h100-sxm", n_chips=8)
    require(abs(floor / hand - 1) < 1e-9, 4, f"floor {floor} vs hand {hand}")
    B = np.array([1, 4, 16, 64, 256, 1024, 4096])[:, None]
    L = np.array([0, 1024, 8192])[None, :]
    for model in _CH1_DENSE + _CH1_MOE:
        for chip in _CH1_CHIPS:
            n = _min_chips(model, chip)
            f = serving.latency_floor_s(model, chip, n_chips=n, check_capacity=False)
            t = serving.decode_step_time_s(model, chip, B, L, n_chips=n, check_capacity=False)
            if models.get(model).is_moe:
                rows[f"{model}: step(B=1, L=0) / floor"] = f"{t[0, 0] / f:.3f} (any chip)"
            else:
                require(bool(np.all(t >= f * (1 - 1e-12))), 4, f"{model} on {chip}: a step beat the floor")
                # B=1 adds one looked-up embedding row (d params) to the floor
                require(abs(t[0, 0] / f - 1) < 1e-5, 4, f"{model} on {chip}: B=1 step != floor")
    ds = models.get("deepseek-v3")
    frac = ds.expected_params_read(1) / ds.weights_read_params
    full = ds.expected_params_read(4096) / ds.weights_read_params
    require(frac < 0.1 and full > 0.99, 4, f"DeepSeek-V3 reads {frac:.3f} of its weights at B=1, {full:.3f} at B=4096")
    # Under expert parallelism the busiest chip, not the pooled bandwidth, sets the B=1 step: on a
    # GB200 NVL72 (72 x 8 TB/s, datasheet) at fp8, by hand as in claim 2 with E[max] from the library's
    # exact sum (claim 2's check verifies it by enumeration where 256 experts divide evenly).
    total, active = _deepseek_v3_by_hand()
    p_e, row = 3 * 7168 * 2048, 129_280 * 7168
    p_other = total - row + 7168 - 58 * 256 * p_e
    busiest = serving.expected_busiest_chip_experts("deepseek-v3", 1, 72)
    rack = {}
    for wd, b_w in (("fp8", 1), ("bf16", 2)):
        hand_ep = (p_other / 72 + 58 * busiest * p_e) * b_w / _DATASHEET_HBM["gb200"]
        t_ep = float(serving.expert_parallel_decode_step("deepseek-v3", "gb200", 1, 0, 72, weight_dtype=wd).time_s)
        require(abs(t_ep / hand_ep - 1) < 1e-3, 4, f"DeepSeek-V3 EP on 72 GB200 at {wd}: {t_ep:.3e} s vs hand {hand_ep:.3e} s")
        pooled = serving.decode_step_time_s("deepseek-v3", "gb200", 1, 0, n_chips=72, weight_dtype=wd)
        floor_all = (total - row) * b_w / (72 * _DATASHEET_HBM["gb200"])
        rack[wd] = (t_ep, pooled, floor_all)
    t8, p8, f8 = rack["fp8"]
    require(p8 < t8 < f8, 4, "the EP step at B=1 should lie between the pooled-bandwidth step and the all-weights floor")
    return Verdict(4, "holds if",
                   "holds for dense models at every batch and for a mixture of experts once the batch touches "
                   f"every expert (B >> E/k); an unbatched DeepSeek-V3 token reads only {frac:.1%} of the weights. "
                   f"Spread over 72 GB200s with expert parallelism its B=1 step is set by the busiest chip: "
                   f"{t8 * 1e3:.2f} ms at fp8, {f8 / t8:.1f}x under the all-weights floor ({f8 * 1e3:.2f} ms) but "
                   f"{t8 / p8:.1f}x over the pooled-bandwidth figure ({p8 * 1e6:.0f} us)",
                   {"Llama-3.1-70B on 8 x H100, floor": f"{floor * 1e3:.2f} ms (hand: {hand * 1e3:.2f} ms)",
                    "DeepSeek-V3 weights read at B=1 / B=4096": f"{frac:.3f} / {full:.4f}",
                    **{f"DeepSeek-V3 on 72 x GB200 at {wd}: EP step B=1 | pooled | all-weights floor":
                       f"{a * 1e3:.3f} | {b * 1e3:.3f} | {c * 1e3:.3f} ms" for wd, (a, b, c) in rack.items()},
                    **rows})


@register(8)
def _check_8() -> Verdict:
    require_sheets(8, chips="all", models_=['llama-3.1-70b', 'llama-3.1-8b'])
    # Cost per token against batch, by hand from the Llama configs and the datasheets (no catalog
    # number): below B* it is the weight read shared by B tokens, (P + B d) b_w / (W B) -- a
    # hyperbola plus the looked-up embedding rows; above B* the compute floor 2 N_mm / F.
    B = np.unique(np.round(np.logspace(0, 4, 200)))
    worst, floors = 0.0, {}
    for model, (total, vocab, d) in _LLAMA.items():
        n_mm = total - vocab * d
        for chip, (F, W) in _DATASHEET_BF16.items():
            n = _min_chips(model, chip)
            cost = serving.decode_cost_per_token(model, chip, B, 0, n_chips=n, check_capacity=False)
            hand = np.maximum((n_mm + B * d) * 2 / (W * B), 2 * n_mm / F)
            worst = max(worst, float(np.max(np.abs(cost / hand - 1))))
            require(bool(np.all(np.diff(cost) <= 1e-15)), 8, f"{model}/{chip}: cost per token rises with batch")
            floors[(model, chip)] = cost[0] / hand[-1]
    require(worst < 1e-3, 8, f"cost per token departs from the hand hyperbola-then-floor by {worst:.2%}")
    r = np.array(list(floors.values()))
    return Verdict(8, "holds",
                   "below the balance batch the cost per token is the weight-read time divided by B, a "
                   "hyperbola; it is large but finite at B=1 -- R times the compute floor 2N/F that it "
                   f"reaches at the balance batch ({r.min():.0f}-{r.max():.0f}x for the Llamas on these chips)",
                   {"cost(B=1) / floor, Llama-3.1-8B and 70B": f"{r.min():.0f}x .. {r.max():.0f}x",
                    "largest deviation from the hand form (configs + datasheets)": f"{worst:.1e}"})
