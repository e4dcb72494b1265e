"""The continuous-batching simulator (llmmath.engine): its step model by hand, and the limits it must meet."""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import engine, planner
from llmmath.deployment import Deployment

KW = dict(tp=8, input_tokens=1000, output_tokens=200)


def test_step_model_by_hand_for_llama_70b_tp8():
    # Llama-3.1-70B bf16 over 8 H100s (TP8): every weight but the input table (one looked-up row) at 0.91 of
    # 3.35 TB/s per GPU; a token's matmuls at 0.75 of 989.5 TFLOP/s over the 8 GPUs, and its two ring all-reduces
    # a layer (7/8 of 8,192 bf16 values each way) over NVLink at 0.82 of 450 GB/s; one cached token: 80 layers x
    # 2 x 8 KV heads x 128 x 2 bytes over the 8 GPUs (one KV head each).
    N, V, d = 70_553_706_496, 128_256, 8192
    sm = engine.step_model(Deployment("llama-3.1-70b", "h100-sxm", 8, tp=8, usable_hbm_fraction=0.9))
    assert sm.weights_s == pytest.approx(((N - V * d) / 8 + d / 8) * 2 / (3.35e12 * 0.91), rel=1e-9)
    tp_s = 80 * 2 * 2 * 7 / 8 * d * 2 / (450e9 * 0.82)
    assert sm.token_s == pytest.approx(2 * (N - V * d) / (8 * 989.5e12 * 0.75) + tp_s, rel=1e-9)
    assert sm.kv_bytes_per_token == 80 * 2 * 8 * 128 * 2 / 8
    assert sm.kv_capacity_tokens == pytest.approx((0.9 * 80e9 - (N - V * d) * 2 / 8 - V * d * 2 / 8) / 40960, rel=1e-6)


def test_alone_a_request_takes_one_prefill_step_then_batch_one_steps():
    sm = engine.step_model(Deployment("llama-3.1-70b", "h100-sxm", 8, tp=8, usable_hbm_fraction=0.9))
    r = engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=0.002, n_requests=20, seed=1, **KW)  # never overlap
    # the prompt fits one step's budget: 1,000 tokens, each attending to the ones before it (mean 500)
    assert np.allclose(r.ttft_s, sm.time_s(1000, 0, 1000 * 500), rtol=1e-9)
    # then one token a step, the context growing from 1,001 to 1,199: the mean step at context 1,100
    assert np.allclose(r.tpot_s, sm.time_s(1, 1100), rtol=1e-6)
    assert r.preemptions == 0 and r.peak_kv_tokens <= r.kv_capacity_tokens


def test_at_saturation_the_engine_runs_at_the_predicted_aggregated_rate_and_never_overfills_its_kv():
    r = engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=1000, n_requests=20000, **KW)
    p = planner.predict("llama-3.1-70b", "h100-sxm", 8, phase="aggregated", **KW)
    assert r.throughput_output_tokens_per_s / 8 == pytest.approx(p.tokens_per_s_per_chip, rel=0.05)
    assert r.peak_kv_tokens <= r.kv_capacity_tokens
    # queueing: requests wait far longer than the service takes once the arrival rate outruns it
    assert np.median(r.ttft_s) > 10 * np.median(r.tpot_s)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="needs .* tokens of KV"):
        engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=1, n_requests=2, tp=8, input_tokens=2e6,
                        output_tokens=10)
    with pytest.raises(ValueError, match="prefix_cache_hit"):
        engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=1, n_requests=2, prefix_cache_hit=1.0, **KW)
    with pytest.raises(ValueError, match="pp=2"):
        engine.step_model(Deployment("llama-3.1-70b", "h100-sxm", 8, tp=4, pp=2))


def test_goodput_counts_the_requests_that_met_both_targets():
    light = engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=0.002, n_requests=20, seed=1, **KW)
    share, rate = light.goodput(ttft_target_s=0.1, tpot_target_s=0.01)     # alone: 42 ms TTFT, 5.8 ms TPOT
    assert share == 1.0 and rate == pytest.approx(light.throughput_output_tokens_per_s)
    assert light.goodput(ttft_target_s=0.01, tpot_target_s=0.01)[0] == 0.0  # no prefill of 1,000 tokens in 10 ms
    busy = engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=1000, n_requests=2000, **KW)
    assert busy.goodput(ttft_target_s=1.0, tpot_target_s=0.1)[0] < 0.5     # overloaded: most wait in the queue
    with pytest.raises(ValueError, match="ttft_target_s"):
        light.goodput(ttft_target_s=0, tpot_target_s=0.01)
