"""The library functions the chapter 7-9 explorers call (issue 13): values derived by hand, bad input refused."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmmath import long_context, memory, reversible, sparse_attention, training


def test_overtraining_reproduces_the_speakers_arithmetic():
    # 5e7 tokens/s x 2 months (5.26e6 s) = 2.63e14 tokens; 100B active x 20 = 2e12 -> 131x
    o = training.overtraining(5e7, 2, 100e9)
    assert o["served_tokens"] == pytest.approx(5e7 * 2 * 365.25 * 86400 / 12)
    assert o["per_20N"] == pytest.approx(131.5, rel=1e-3)
    assert 1 < o["per_optimal"] < o["per_20N"]       # the compute-optimal D* grows with the compute
    with pytest.raises(ValueError):
        training.overtraining(-1, 2, 1e11)


def test_run_mfu_and_the_deepseek_ratio():
    # DeepSeek-V3: 6 x 37.6B x 14.8T / (2.664M h x 3600 x 989.5T) ~ 35%
    assert 0.3 < training.run_mfu("deepseek-v3") < 0.4
    assert 0.3 < training.run_mfu("llama-3.1-405b") < 0.4
    # decode 2 x 37B x 14,800 / (8 x 989.5T) ~ 13.8% over ~35%
    assert training.deepseek_v3_decode_mfu_ratio() == pytest.approx(0.40, abs=0.02)
    with pytest.raises(KeyError, match="GPU-hours"):
        training.run_mfu("gpt-3-175b")


def test_price_tiers_and_growth():
    assert long_context.api_price_usd_per_mtok("gemini-2.5-pro", 200_000)[0] == 1.25
    assert long_context.api_price_usd_per_mtok("gemini-2.5-pro", 200_001)[0] == 2.5
    with pytest.raises(ValueError, match="window"):
        long_context.api_price_usd_per_mtok("claude-sonnet-4-5", 300_000)
    with pytest.raises(KeyError):
        long_context.api_price_usd_per_mtok("nonexistent", 1)
    assert long_context.growth_per_year([2020, 2021, 2022], [1, 2, 4]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="two distinct years"):
        long_context.growth_per_year([2020, 2020], [1, 2])
    t = long_context.vendor_trend("NVIDIA")
    assert t["flops"][0] == 1 and t["growth"]["bandwidth"] < t["growth"]["flops"]


def test_best_batch_cost_is_inf_only_where_nothing_fits():
    B, cost = long_context.best_batch_decode_cost("llama-3.1-70b", "h100-sxm", np.array([8192, 4e6]), 8)
    assert B[0] >= 1 and np.isfinite(cost[0])
    assert B[1] == 0 and math.isinf(cost[1])           # 4M tokens x 320 kB = 1.3 TB > 640 GB
    assert long_context.attention_to_weight_flops("llama-3.1-70b", 53_000) == pytest.approx(1.0, rel=0.01)


def test_reversible_accounting_and_drift():
    store = reversible.activation_bytes(8 * 65536, 1024, np.array([1, 12]), 4, "store", 1.0)
    rec = reversible.activation_bytes(8 * 65536, 1024, np.array([1, 12]), 4, "recompute", 1.0)
    assert store[0] == pytest.approx(2.147e9, rel=1e-3)   # Reformer: 0.5B floats, 2 GB per layer
    assert store[1] == pytest.approx(12 * store[0]) and rec[1] == rec[0]
    with pytest.raises(ValueError, match="mode"):
        reversible.activation_bytes(1, 1, 1, 4, "nope")
    d = reversible.drift_table()
    assert np.all(d[("float64", 1.0)] < 1e-10) and d[("float32", 1.5)][-1] > d[("float32", 1.5)][0]


def test_tiers_and_the_drain_time_rule():
    assert memory.tier_drain_s("HBM (H100 SXM)") == pytest.approx(80e9 / 3.35e12)
    assert memory.tier_for_hold(0.01).startswith("HBM")
    assert memory.tier_for_hold(1.0).startswith("DDR5")
    assert memory.tier_for_hold(1e9).startswith("hard disk")
    with pytest.raises(ValueError):
        memory.tier_for_hold(0)
    with pytest.raises(KeyError, match="known"):
        memory.kv_tier_read_s("llama-3.1-70b", "tape")


def test_measured_topk_curve_agrees_with_the_exact_prediction():
    r = sparse_attention.measured_topk_curves()["aggregation"]
    pred = np.array([sparse_attention.majority_subset_accuracy(32, 20, int(k)) for k in r["k"]])
    assert np.all(np.abs(r["accuracy"] - pred) <= 4 * np.maximum(r["stderr"], 0.02))
