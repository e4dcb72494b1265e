"""Checks of chapter 1 (batch size): claims 1, 2, 4, 8."""

from __future__ import annotations

import numpy as np

from .. import hardware, models, serving
from ..claims import Verdict, register, require

# Independent anchors, copied from datasheets (not from the catalog), so that a
# wrong catalog entry makes the checks fail: dense bf16 FLOP/s and HBM bytes/s.
_DATASHEET_BF16_FLOP_PER_BYTE = {
    "a100-80gb": 312e12 / 2.039e12,   # A100 80GB SXM datasheet: 312 TFLOPS bf16 dense, 2,039 GB/s
    "h100-sxm": 989.5e12 / 3.35e12,   # H100 SXM datasheet: 1,979 TFLOPS with sparsity -> 989.5 dense; 3.35 TB/s
    "h200": 989.5e12 / 4.8e12,        # H200 SXM: same compute as H100, 4.8 TB/s HBM3e
    "b200": 2.25e15 / 8.0e12,         # HGX B200: 4.5 PFLOPS bf16 sparse / 8 GPUs -> 2.25 dense per GPU; 8 TB/s
    "mi300x": 1307.4e12 / 5.3e12,     # MI300X datasheet: 1,307.4 TFLOPS bf16 dense, 5.3 TB/s
    "tpu-v5e": 197e12 / 819e9,        # Cloud TPU v5e: 197 TFLOPS bf16, 819 GB/s
    "tpu-v6e": 918e12 / 1.638e12,     # Cloud TPU v6e (Trillium): 918 TFLOPS bf16, 1,638 GB/s
}
_CH1_CHIPS = tuple(_DATASHEET_BF16_FLOP_PER_BYTE)
_CH1_DENSE = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-4b")
_CH1_MOE = ("mixtral-8x7b", "deepseek-v3")


def _min_chips(model, chip, weight_dtype="bf16") -> int:
    m, c = models.get(model), hardware.get(chip)
    return int(np.ceil(m.weight_bytes(weight_dtype) * 1.1 / c.hbm_bytes))


@register(1)
def _check_1() -> Verdict:
    # On one chip, batch moves cost per token by R (hundreds of times). The
    # other knob an operator turns on the same hardware, weight precision
    # (bf16 -> fp8), moves it by at most 2x. Latency: a dense model's step time
    # stays flat all the way to the balance batch.
    spread_batch, spread_dtype = [], []
    for model in _CH1_DENSE + _CH1_MOE:
        for chip in _CH1_CHIPS:
            n = _min_chips(model, chip)
            bstar = serving.balance_batch(model, chip, context=0)
            c1 = serving.decode_cost_per_token(model, chip, 1, 0, n_chips=n, check_capacity=False)
            cb = serving.decode_cost_per_token(model, chip, 4 * bstar, 0, n_chips=n, check_capacity=False)
            spread_batch.append(c1 / cb)
            if "fp8" in hardware.get(chip).peak_flops_per_s:
                for B in (1.0, 4 * bstar):
                    bf = serving.decode_cost_per_token(model, chip, B, 0, n_chips=n, check_capacity=False)
                    f8 = serving.decode_cost_per_token(model, chip, B, 0, n_chips=n, weight_dtype="fp8",
                                                       kv_dtype="fp8", check_capacity=False)
                    spread_dtype.append(bf / f8)
    lo, hi = min(spread_batch), max(spread_batch)
    dt_hi = max(spread_dtype)
    require(dt_hi <= 2.0 * 1.001, 1, f"fp8 changed cost by {dt_hi:.2f}x, more than its 2x byte saving")
    require(lo > 50 * dt_hi, 1, f"batching changes cost by {lo:.0f}x at least, precision by {dt_hi:.1f}x")
    for model in _CH1_DENSE:
        for chip in _CH1_CHIPS:
            n = _min_chips(model, chip)
            bstar = serving.balance_batch(model, chip, context=0)
            t1 = serving.decode_step_time_s(model, chip, 1, 0, n_chips=n, check_capacity=False)
            tb = serving.decode_step_time_s(model, chip, bstar, 0, n_chips=n, check_capacity=False)
            require(tb / t1 < 1.01, 1, f"{model} on {chip}: step time grows {tb / t1:.2f}x before the balance batch")
    return Verdict(1, "holds",
                   "on a given chip, going from batch 1 to past the balance batch cuts cost per token by the "
                   "chip's balance ratio (hundreds of times) while a dense model's step time stays flat; halving "
                   "the weight precision, the next knob, buys at most 2x",
                   {"cost(B=1) / cost(B=4B*), all chip x model pairs": f"{lo:.0f}x .. {hi:.0f}x",
                    "cost(bf16) / cost(fp8), same batch": f"up to {dt_hi:.2f}x",
                    "chips": ", ".join(_CH1_CHIPS), "models": ", ".join(_CH1_DENSE + _CH1_MOE)})


@register(2)
def _check_2() -> Verdict:
    ratios = {}
    for chip, anchor in _DATASHEET_BF16_FLOP_PER_BYTE.items():
        for model in _CH1_DENSE + _CH1_MOE:
            r = serving.cost_ratio_unbatched(model, chip, context=0)
            ratios[(chip, model)] = r
            # Dense: the ratio is the datasheet F/W times P_read / N_mm (= 1 + LM-head-free rounding).
            m = models.get(model)
            expect = anchor * m.expected_params_read(1) / m.matmul_params_per_token
            require(abs(r / expect - 1) < 0.02, 2, f"{chip}/{model}: ratio {r:.0f} vs datasheet {expect:.0f}")
    values = np.array(list(ratios.values()))
    require(values.min() > 100 and values.max() < 1000, 2,
             f"unbatched penalty now spans {values.min():.0f}..{values.max():.0f}x, outside 'hundreds'")
    h100 = ratios[("h100-sxm", "llama-3.1-70b")]
    ds = ratios[("h100-sxm", "deepseek-v3")]
    m_ds = models.get("deepseek-v3")
    spk = _DATASHEET_BF16_FLOP_PER_BYTE["h100-sxm"] * m_ds.weights_read_params / m_ds.matmul_params_per_token
    return Verdict(2, "off by",
                   f"right order of magnitude, but high: on the roofline the unbatched penalty is the chip's "
                   f"F*b_w/(2W), {values.min():.0f}-{values.max():.0f}x across these chips at bf16 (~{h100:.0f}x on "
                   f"an H100, so 3x too high there; 1.8x on a TPU v6e), for dense and MoE models alike -- an "
                   f"unbatched MoE reads only its active experts, so its sparsity does not multiply the penalty",
                   {"H100, Llama-3.1-70B": f"{h100:.0f}x", "H100, DeepSeek-V3": f"{ds:.0f}x",
                    "if batch 1 read every expert (speaker's model)": f"{spk:.0f}x",
                    "range over chips x models": f"{values.min():.0f}x .. {values.max():.0f}x"})


@register(4)
def _check_4() -> Verdict:
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
    return Verdict(4, "holds if",
                   "holds for dense models at every batch and for a mixture of experts once the batch touches "
                   f"every expert (B >> E/k); an unbatched DeepSeek-V3 token reads only {frac:.1%} of the weights, "
                   "so its floor at batch 1 is ~18x lower than 'read all parameters'",
                   {"Llama-3.1-70B on 8 x H100, floor": f"{floor * 1e3:.2f} ms (hand: {hand * 1e3:.2f} ms)",
                    "DeepSeek-V3 weights read at B=1 / B=4096": f"{frac:.3f} / {full:.4f}", **rows})


@register(8)
def _check_8() -> Verdict:
    B = np.unique(np.round(np.logspace(0, 4, 200)))
    worst_hyperbola, floors = 0.0, {}
    for model in _CH1_DENSE:
        m = models.get(model)
        for chip in _CH1_CHIPS:
            c = hardware.get(chip)
            n = _min_chips(model, chip)
            cost = serving.decode_cost_per_token(model, chip, B, 0, n_chips=n, check_capacity=False)
            bstar = serving.balance_batch(model, chip, 0)
            require(bool(np.all(np.diff(cost) <= 1e-15)), 8, f"{model}/{chip}: cost per token rises with batch")
            # Hand forms: below B*, cost = n * P_read b_w / (n W) / B (a hyperbola); above, 2 N_mm / F.
            below = B < bstar
            rows = 0 if m.tied_embeddings else B[below] * m.d_model  # looked-up embedding rows
            hyper = (m.weights_read_params + rows) * 2 / c.hbm_bytes_per_s / B[below]
            worst_hyperbola = max(worst_hyperbola, float(np.max(np.abs(cost[below] / hyper - 1))))
            floor = 2 * m.matmul_params_per_token / c.flops_per_s("bf16")
            require(np.allclose(cost[~below], floor, rtol=1e-9), 8, f"{model}/{chip}: cost above B* is not 2N/F")
            floors[(model, chip)] = cost[0] / floor
    require(worst_hyperbola < 1e-9, 8, f"below the balance batch cost deviates from 1/B by {worst_hyperbola:.2e}")
    r = np.array(list(floors.values()))
    return Verdict(8, "holds",
                   "below the balance batch the cost per token is the weight-read time divided by B, a "
                   "hyperbola; it is large but finite at B=1 -- R times the compute floor 2N/F that it "
                   "reaches at the balance batch",
                   {"cost(B=1) / floor, dense models": f"{r.min():.0f}x .. {r.max():.0f}x",
                    "largest deviation from 1/B below B*": f"{worst_hyperbola:.1e}"})
