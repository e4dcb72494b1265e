"""The continuous-batching simulator (llmmath.engine): its step model by hand, and the limits it must meet."""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import models, engine, planner
from llmmath.deployment import Deployment

KW = dict(tp=8, input_tokens=1000, output_tokens=200)


def test_step_model_by_hand_for_llama_70b_tp8():
    # Llama-3.1-70B bf16 over 8 H100s (TP8), a step of n tokens reading P cached positions (summed over layers):
    # every weight but the input table (n looked-up rows) at 0.91 of 3.35 TB/s per GPU; the tokens' matmuls at 0.745
    # of 989.5 TFLOP/s over the 8 GPUs (TensorRT-LLM's bf16 GEMMs on an H100 at 4,096 tokens, NVIDIA's measured
    # table), and their two ring all-reduces a layer (7/8 of 8,192 bf16 values each way) over NVLink at 0.82 of
    # 450 GB/s; a cached position: 2 x 8 KV heads x 128 x 2 bytes over the 8 GPUs (one KV head each) and 4 x 64 heads
    # x 128 FLOPs (q.k and p.v) at bf16's share; the calibrated 8.9 us for each of 80 layers x 11 kernels (vLLM's 9
    # and two all-reduces)
    N, V, d = 70_553_706_496, 128_256, 8192
    W, F = 3.35e12 * 0.91, 989.5e12 * 0.745
    sm = engine.step_model(Deployment("llama-3.1-70b", "h100-sxm", 8, tp=8, usable_hbm_fraction=0.9))
    for n, P in ((1, 0), (1, 80 * 1100), (300, 300 * 80 * 1500), (5000, 0)):
        weights_s = ((N - V * d) / 8 + n * d / 8) * 2 / W
        kv_s = P * 2 * 8 * 128 * 2 / 8 / W
        compute_s = n * 2 * (N - V * d) / (8 * F) + P * 4 * 64 * 128 / (8 * F)
        tp_s = n * 80 * 2 * 2 * 7 / 8 * d * 2 / (450e9 * 0.82)
        hand = weights_s + kv_s + compute_s + tp_s + 80 * 11 * 8.9e-6
        assert sm.time_s(n, P) == pytest.approx(hand, rel=1e-9), (n, P)
    # a prompt chunk of c tokens after t prefilled attends to t + (c - 1) / 2 positions a token in each of 80 layers
    # (4 x 64 x 128 FLOPs each), at bf16's share over the 8 GPUs
    extra = sm.time_s(1000, 0, 80 * 1000 * 999 / 2) - sm.time_s(1000)
    assert extra == pytest.approx(80 * 1000 * 999 / 2 * 4 * 64 * 128 / (8 * F), rel=1e-9)
    assert sm.kv_bytes_per_token == 80 * 2 * 8 * 128 * 2 / 8
    assert sm.kv_capacity_tokens == pytest.approx((0.9 * 80e9 - (N - V * d) * 2 / 8 - V * d * 2 / 8) / 40960, rel=1e-6)


def test_the_engine_prices_its_steps_with_predicts_step_model():
    # a windowed model and an MoE model: the engine's step is predict.step's, term for term, at any shape
    from llmmath import predict
    for d in (Deployment("gpt-oss-120b", "h100-sxm", 4, tp=4, weight_dtype="fp4", usable_hbm_fraction=0.9),
              Deployment("mixtral-8x7b", "h100-sxm", 2, tp=2, usable_hbm_fraction=0.9)):
        sm = engine.step_model(d)
        for n, P, Q in ((1, 0, 0), (1, 36 * 16384, 0), (64, 64 * 36 * 4000, 0), (2000, 0, 1e9), (9000, 0, 0)):
            assert sm.time_s(n, P, Q) == pytest.approx(float(predict.step(d, n, P, Q).time_s), rel=1e-9)
        # the positions it counts are the model's (windowed or not): cached ones while decoding, prompt chunks'
        ctx, done, chunk = np.array([100.0, 5000.0]), np.array([0.0, 300.0]), np.array([700.0, 0.0])
        assert sm.kv_positions(ctx) == pytest.approx(float(np.sum(d.model.cached_positions(ctx))), rel=1e-12)
        assert sm.prefill_positions(done, chunk) == pytest.approx(
            float(np.sum(d.model.prefill_positions(done + chunk) - d.model.prefill_positions(done))), rel=1e-12)


def test_alone_a_request_takes_one_prefill_step_then_batch_one_steps():
    sm = engine.step_model(Deployment("llama-3.1-70b", "h100-sxm", 8, tp=8, usable_hbm_fraction=0.9))
    r = engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=0.002, n_requests=20, seed=1, **KW)  # never overlap
    # the prompt fits one step's budget: 1,000 tokens, each attending to the ones before it (mean 500)
    assert np.allclose(r.ttft_s, sm.time_s(1000, 0, 80 * 1000 * 999 / 2), rtol=1e-9)
    # then one token a step, the context growing from 1,001 to 1,199: the mean step at context 1,100 (80 layers)
    assert np.allclose(r.tpot_s, sm.time_s(1, 80 * 1100), rtol=1e-6)
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
    share, rate = light.goodput(ttft_target_s=0.1, tpot_target_s=0.02)     # alone: 48 ms TTFT, 12.2 ms TPOT
    assert share == 1.0 and rate == pytest.approx(light.throughput_output_tokens_per_s)
    assert light.goodput(ttft_target_s=0.01, tpot_target_s=0.02)[0] == 0.0  # no prefill of 1,000 tokens in 10 ms
    busy = engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=1000, n_requests=2000, **KW)
    assert busy.goodput(ttft_target_s=1.0, tpot_target_s=0.1)[0] < 0.5     # overloaded: most wait in the queue
    with pytest.raises(ValueError, match="ttft_target_s"):
        light.goodput(ttft_target_s=0, tpot_target_s=0.01)


# --- paged KV, preemption, disaggregation, traces (issue 29) ----------------------------------------------------------

# Llama-3.1-8B bf16 on one H100 with HBM given so that exactly 5,000 tokens of KV fit: its 16,060,522,496 weight bytes
# plus 5,000 x 131,072 bytes (32 layers x 2 x 8 KV heads x 128 x 2 bytes) out of 80 GB
SMALL = dict(usable_hbm_fraction=(16_060_522_496 + 5000 * 131_072) / 80e9, input_tokens=1000, output_tokens=3000)


def _two_at_once(**kw):
    return engine.simulate("llama-3.1-8b", "h100-sxm", 1, arrival_times_s=[0.0, 0.0], **SMALL, **kw)


def test_paged_kv_preempts_the_newest_sequence_and_recompute_or_swap_cost_what_they_should():
    sm = engine.step_model(Deployment("llama-3.1-8b", "h100-sxm", 1,
                                      usable_hbm_fraction=SMALL["usable_hbm_fraction"]))
    assert sm.kv_capacity_tokens == pytest.approx(5000)
    # both prompts fit (2 x 1,000). KV is held in pages of 16 tokens: two sequences of L tokens hold 2 x 16 ceil(L / 16),
    # at most 5,000 while L <= 2,496 (156 pages each); the step that would take them to 2,497 does not fit, so the
    # second request (1,496 tokens made) is preempted; the first finishes alone (4,000 tokens), then the second returns
    re, sw = _two_at_once(preemption="recompute"), _two_at_once(preemption="swap")
    assert re.preemptions == sw.preemptions == 1
    assert re.peak_kv_tokens == sw.peak_kv_tokens == 2 * 2496
    # recompute: its 2,496 tokens prefilled again in one step (making token 1,497), then 1,503 decode steps (32 layers)
    redo = sm.time_s(2496, 0, 32 * 2496 * 2495 / 2) + sum(sm.time_s(1, 32 * (2497 + j)) for j in range(1503))
    assert re.finish_times_s[1] - re.finish_times_s[0] == pytest.approx(redo, rel=1e-6)
    # swap: its 2,496 tokens' KV (131,072 bytes each) over PCIe Gen5 (64 GB/s a direction), out and back in, then
    # 1,504 decode steps
    move = 2496 * 131_072 / 64e9
    assert sw.finish_times_s[0] - re.finish_times_s[0] == pytest.approx(move, rel=1e-6)
    back = move + sum(sm.time_s(1, 32 * (2496 + j)) for j in range(1504))
    assert sw.finish_times_s[1] - sw.finish_times_s[0] == pytest.approx(back, rel=1e-6)
    # reserving the whole request instead (4,000 tokens each) never preempts: the second waits for the first
    rs = _two_at_once(kv_policy="reserve")
    assert rs.preemptions == 0 and rs.first_token_times_s[1] > rs.finish_times_s[0]


def test_under_heavy_load_the_kv_never_overfills_and_every_request_finishes_in_order_of_its_events():
    for pre in ("recompute", "swap"):
        r = engine.simulate("llama-3.1-8b", "h100-sxm", 1, requests_per_s=50, n_requests=600, input_tokens=1000,
                            output_tokens=np.random.default_rng(3).integers(50, 3000, 600), preemption=pre,
                            usable_hbm_fraction=0.3)
        assert r.preemptions > 0
        assert r.peak_kv_tokens <= r.kv_capacity_tokens
        assert r.peak_kv_bytes <= r.kv_capacity_bytes
        assert np.all(r.arrival_times_s <= r.first_token_times_s) and np.all(r.first_token_times_s <= r.finish_times_s)


def test_littles_law_holds_on_the_run():
    # the number in the system, sampled at random instants (independent of how the run counts it), equals the arrival
    # rate times the mean time in the system
    r = engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=15, n_requests=20000, **KW)
    ts = np.random.default_rng(5).uniform(r.arrival_times_s[0], r.finish_times_s.max(), 4000)
    inside = ((r.arrival_times_s[None, :] <= ts[:, None]) & (r.finish_times_s[None, :] > ts[:, None])).sum(1)
    assert inside.mean() == pytest.approx(15 * r.e2e_s.mean(), rel=0.05)
    assert r.mean_requests_in_system == pytest.approx(15 * r.e2e_s.mean(), rel=0.05)


def test_disaggregated_prefill_hands_the_kv_over_the_network_then_decodes():
    # alone: the prefill pool's one step, then 1,000 tokens x 40,960 bytes per GPU (80 layers x 2 x 8 x 128 x 2 / 8)
    # over each GPU's 400 Gb/s NIC at 0.82 of its 50 GB/s, then 199 batch-1 decode steps at contexts 1,001..1,199
    sm = engine.step_model(Deployment("llama-3.1-70b", "h100-sxm", 8, tp=8, usable_hbm_fraction=0.9))
    r = engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=0.002, n_requests=10, seed=1,
                        prefill={"n_chips": 8, "tp": 8}, **KW)
    assert np.allclose(r.ttft_s, sm.time_s(1000, 0, 80 * 1000 * 999 / 2), rtol=1e-9)
    hand_off = 1000 * 40960 / (50e9 * 0.82)
    assert np.allclose(r.kv_ready_times_s - r.first_token_times_s, hand_off, rtol=1e-9)
    decode = sum(sm.time_s(1, 80 * (1001 + j)) for j in range(199))
    assert np.allclose(r.tpot_s, (hand_off + decode) / 199, rtol=1e-6)
    with pytest.raises(ValueError, match="unknown prefill keys"):
        engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=1, n_requests=2, prefill={"n_chips": 8,
                        "pp": 2}, **KW)


def test_a_trace_of_arrivals_replays_exactly_and_bad_traces_are_refused():
    poisson = engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=10, n_requests=300, seed=4, **KW)
    trace = engine.simulate("llama-3.1-70b", "h100-sxm", 8, arrival_times_s=poisson.arrival_times_s, **KW)
    assert np.array_equal(trace.finish_times_s, poisson.finish_times_s)
    for bad in ([], [1.0, 0.5], [0.0, np.nan], [-1.0]):
        with pytest.raises(ValueError, match="arrival_times_s"):
            engine.simulate("llama-3.1-70b", "h100-sxm", 8, arrival_times_s=bad, **KW)
    with pytest.raises(ValueError, match="alone"):
        engine.simulate("llama-3.1-70b", "h100-sxm", 8, arrival_times_s=[0.0], requests_per_s=1, **KW)
    with pytest.raises(ValueError, match="kv_policy"):
        engine.simulate("llama-3.1-70b", "h100-sxm", 8, requests_per_s=1, n_requests=2, kv_policy="lru", **KW)
    with pytest.raises(KeyError, match="host link"):
        engine.simulate("llama-3.1-8b", "tpu-v5e", 1, requests_per_s=1, n_requests=2, preemption="swap",
                        input_tokens=100, output_tokens=10, usable_hbm_fraction=0.9)
    # no runtime figure for a TPU: the engine view takes the datasheet's 16 GB and says so
    tpu = engine.simulate("llama-3.2-1b", "tpu-v5e", 1, requests_per_s=1, n_requests=2, input_tokens=100,
                          output_tokens=10)
    assert tpu.kv_capacity_bytes < 16e9 * 0.9 - models.get("llama-3.2-1b").total_params * 2 + 1


def test_replicas_share_the_load_round_robin():
    # 8 TP1 replicas of Llama-3.1-8B: alone, each request sees one GPU's batch-1 step, whichever replica it lands on
    sm = engine.step_model(Deployment("llama-3.1-8b", "h100-sxm", 8, usable_hbm_fraction=0.9))
    r = engine.simulate("llama-3.1-8b", "h100-sxm", 8, requests_per_s=0.01, n_requests=16, seed=2, **
                        {**KW, "tp": 1})
    assert np.allclose(r.tpot_s, sm.time_s(1, 32 * 1100), rtol=1e-6)


def test_engine_explorer_answers_every_control_without_errors():
    from llmmath import explorers, widgets

    ex = explorers.engine_explorer()
    assert isinstance(ex, widgets.Explorer) and "TTFT p50" in ex.text.value
    for name, control in ex.controls.items():
        before = ex.text.value
        control.value = widgets.other_value(control)
        assert ex.text.value != before, name
        assert "Error" not in ex.text.value and "does not fit" not in ex.text.value, (name, ex.text.value)
