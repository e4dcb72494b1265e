"""planner.predict: the waterfall from the roofline ceiling, term by term, by hand (issue 29, begun)."""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import planner
from llmmath.predict import engine_constants


def test_the_decode_waterfall_by_hand_for_llama_70b_tp8():
    # Llama-3.1-70B bf16 on 8 H100s (3.35 TB/s, 989.5 TFLOP/s bf16 dense), TP8, 64 sequences at 8,192 tokens.
    # config.json: N = 70,553,706,496, vocab 128,256 x d 8,192 untied; 80 layers, 64 heads of 128, 8 KV heads.
    N, V, d, W, F, B, L = 70_553_706_496, 128_256, 8192, 3.35e12, 989.5e12, 64, 8192
    mem = ((N - V * d + B * d) * 2 / 8 + B * L * 80 * 2 * 8 * 128 * 2 / 8) / W      # each GPU: 1/8 of it all
    comp = B * (2 * (N - V * d) + 80 * 4 * 64 * 128 * L) / 8 / F
    rate = lambda t: B / (8 * t)  # noqa: E731
    k = engine_constants()
    hbm, mm = k["sustained"]["nvidia"]["hbm_fraction"], k["sustained"]["nvidia"]["matmul_fraction"]
    assert (hbm, mm) == (0.91, 0.75)                                  # 4.38 / 4.8 TB/s and 742 / 989.5 TFLOP/s
    tp_s = 80 * 2 * 2 * 7 / 8 * (B * d * 2) / (450e9 * 0.82)           # two ring all-reduces a layer, NVLink
    hand = [rate(max(comp, mem)), rate(max(comp / mm, mem / hbm)), rate(max(comp / mm, mem / hbm)),
            rate(comp / mm + mem / hbm), rate(comp / mm + mem / hbm + tp_s)]
    p = planner.predict("llama-3.1-70b", "h100-sxm", 8, input_tokens=L - 1, output_tokens=2, batch=B, tp=8)
    assert [r for _, r in p.waterfall] == pytest.approx(hand, rel=1e-6)
    assert p.terms["tensor_parallel_s"] == pytest.approx(tp_s, rel=1e-9)
    assert p.tokens_per_s_per_chip == pytest.approx(hand[-1], rel=1e-9)


def test_the_prefill_all_to_all_by_hand_for_deepseek_v3_ep32():
    # DeepSeek-V3 fp8 on 32 H100s (4 nodes of 8), EP32 with DP attention: every prompt token goes to its 8 experts
    # (fp8 dispatch, bf16 combine: 3 bytes a value of d = 7,168) and back, 31/32 of them off the GPU, in each of
    # 58 MoE layers, through the GPU's 400 Gb/s NIC (EP32 spans more than one 8-GPU node) at 82% of 50 GB/s.
    p = planner.predict("deepseek-v3", "h100-sxm", 32, input_tokens=2000, output_tokens=1, phase="prefill", ep=32,
                        dp=32, weight_dtype="fp8")
    before, after = p.waterfall[-2][1], p.waterfall[-1][1]
    a2a_s = 58 * 8 * 7168 * 3 * 31 / 32 / (50e9 * 0.82)
    assert 1 / after - 1 / before == pytest.approx(a2a_s, rel=1e-9)   # 236 us a token
    assert p.waterfall[0][0] == "roofline ceiling" and after < before < p.waterfall[0][1]


def test_predictions_sit_between_the_ceiling_and_the_measurements_they_explain():
    rows = planner.predicted_vs_measured()
    assert len(rows) >= 10
    for key, phase, measured, p in rows:
        rates = [r for _, r in p.waterfall]
        assert all(b <= a * (1 + 1e-9) for a, b in zip(rates, rates[1:])), key   # every term costs, none gives
        assert measured < rates[0], key                                         # the ceiling still holds
    # the fidelity is printed by chapter 11 and kept as a benchmark target, not asserted here


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="phase must be one of"):
        planner.predict("llama-3.1-8b", "h100-sxm", 1, input_tokens=100, output_tokens=100, phase="serve")
    with pytest.raises(ValueError, match="no batch"):
        planner.predict("llama-3.1-405b", "h100-sxm", 8, input_tokens=100, output_tokens=100)
    with pytest.raises(ValueError, match="input_tokens"):
        planner.predict("llama-3.1-8b", "h100-sxm", 1, input_tokens=0, output_tokens=100)
    assert np.isfinite(planner.predict("llama-3.1-8b", "h100-sxm", 1, input_tokens=100,
                                       output_tokens=100).tokens_per_s_per_chip)


def test_mtp_adds_its_tokens_and_its_verify_cost():
    kw = dict(input_tokens=2000, output_tokens=1000, context=4989, batch=88 * 144, ep=144, dp=144, weight_dtype="fp8")
    plain = planner.predict("deepseek-v3", "h100-sxm", 144, **kw)
    mtp = planner.predict("deepseek-v3", "h100-sxm", 144, mtp_tokens=1, mtp_acceptance=0.85, **kw)
    assert mtp.terms["mtp_tokens_per_step"] == pytest.approx(1.85)
    gain = mtp.tokens_per_s_per_chip / plain.tokens_per_s_per_chip
    assert 1.0 < gain < 1.85                                   # more tokens a step, a longer step


def test_a_vendor_without_sustained_fractions_is_named():
    import dataclasses

    from llmmath import hardware
    from llmmath.predict import sustained
    assert sustained("h100-sxm") == {**sustained("h100-sxm")} and sustained("h100-sxm")["hbm_fraction"] == 0.91
    odd = dataclasses.replace(hardware.get("h100-sxm"), key="odd", vendor="Acme")
    with pytest.raises(KeyError, match="no sustained HBM and matmul fractions for 'acme'.*known: amd, google, nvidia"):
        sustained(odd)
