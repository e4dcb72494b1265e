"""Tests of llmmath.moe, llmmath.schedule and the chapter-3 additions to llmmath.serving.

Expectations are derived independently: DeepSeek-V3's parameter counts from its
config.json fields, chip figures from datasheets, routing statistics from
probability, cadence results from the closed forms (wait ~ U(0, T)).
"""

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from llmmath import models, moe, moe_bench, schedule, serving

FAST = settings(max_examples=40, deadline=None)

# H100 SXM datasheet: 989.5 TFLOP/s dense bf16, 3.35 TB/s. H200: same compute, 4.8 TB/s.
F_H100, W_H100, W_H200 = 989.5e12, 3.35e12, 4.8e12
R_H100 = F_H100 * 2 / (2 * W_H100)


def deepseek_v3_counts():
    """N_tot, N_act and the untied embedding of DeepSeek-V3, from config.json fields by hand."""
    d, L, dense_layers, vocab = 7168, 61, 3, 129280
    nh, q_r, kv_r, nope, rope, v = 128, 1536, 512, 128, 64, 128
    E, k, shared, f_e, f_dense = 256, 8, 1, 2048, 18432
    attn = (d * q_r + q_r + q_r * nh * (nope + rope)            # q down, norm, up
            + d * (kv_r + rope) + kv_r + kv_r * nh * (nope + v)  # kv down, norm, up
            + nh * v * d)                                        # o
    norms = 2 * d
    expert = 3 * d * f_e
    moe_layer = attn + norms + (E + shared) * expert + d * E + E   # router weight + e_score_correction_bias
    dense_layer = attn + norms + 3 * d * f_dense
    embed = vocab * d
    total = 2 * embed + d + dense_layers * dense_layer + (L - dense_layers) * moe_layer
    active = total - (L - dense_layers) * (E - k) * expert
    return total, active, embed


def test_deepseek_counts_match_library_and_publication():
    total, active, _ = deepseek_v3_counts()
    m = models.get("deepseek-v3")
    assert m.total_params == total
    assert m.active_params == active
    assert abs(total / 671e9 - 1) < 0.001 and abs(active / 37e9 - 1) < 0.02


def test_balance_batch_deepseek_v3_on_h100_by_hand():
    total, active, embed = deepseek_v3_counts()
    p_read, n_mm = total - embed, active - embed
    # B* = (P_read b_w / W) / (2 N_mm / F - d b_w / W)
    hand = (p_read * 2 / W_H100) / (2 * n_mm / F_H100 - 7168 * 2 / W_H100)
    got = serving.balance_batch("deepseek-v3", "h100-sxm")
    assert got == pytest.approx(hand, rel=1e-9)
    assert got == pytest.approx(R_H100 * p_read / n_mm, rel=1e-3)
    assert 5300 < got < 5500                     # ~ 295 x 18, not the speaker's 300 x 8 = 2,400
    assert serving.balance_batch("deepseek-v3", "h100-sxm", sparsity="expert") == pytest.approx(R_H100 * 256 / 8)


def test_balance_batch_default_unchanged_and_options():
    for m in ("llama-3.1-8b", "mixtral-8x7b", "deepseek-v3"):
        for L in (0, 4096):
            assert serving.balance_batch(m, "h100-sxm", L) == serving.balance_batch(m, "h100-sxm", L, sparsity="total")
    L = np.array([0.0, 1024, 8192])
    e = serving.balance_batch("deepseek-v3", "b200", L, sparsity="expert")
    assert e.shape == (3,) and np.all(e == e[0])  # an expert reads no KV: context does not enter
    assert serving.balance_batch("llama-3.1-8b", "h100-sxm", sparsity="expert") == pytest.approx(R_H100)
    with pytest.raises(ValueError, match="sparsity must be 'total'"):
        serving.balance_batch("deepseek-v3", "h100-sxm", sparsity="experts")
    with pytest.raises(ValueError, match="context"):
        serving.balance_batch("deepseek-v3", "h100-sxm", -1)


def test_kv_raises_balance_batch_and_diverges_by_hand():
    # Llama-3.1-70B on H100: beta = 2 x 80 x 8 x 128 x 2 B; a = 80 x 4 x 64 x 128 FLOP per position
    n_mm = 70_553_706_496 - 128_256 * 8192
    beta, a = 2 * 80 * 8 * 128 * 2, 80 * 4 * 64 * 128
    L = 1000.0
    hand = (n_mm * 2 / W_H100) / ((2 * n_mm + a * L) / F_H100 - L * beta / W_H100 - 8192 * 2 / W_H100)
    assert serving.balance_batch("llama-3.1-70b", "h100-sxm", L) == pytest.approx(hand, rel=1e-9)
    lmax = (2 * n_mm / F_H100 - 8192 * 2 / W_H100) / (beta / W_H100 - a / F_H100)
    assert serving.kv_limit_context("llama-3.1-70b", "h100-sxm") == pytest.approx(lmax, rel=1e-9)
    assert np.isinf(serving.balance_batch("llama-3.1-70b", "h100-sxm", 1.01 * lmax))
    # Without attention FLOPs (the speaker's form) the limit comes sooner.
    assert serving.kv_limit_context("llama-3.1-70b", "h100-sxm", attention_flops=False) < lmax
    # MLA on an H200: 242 FLOP per cached byte > F/W = 206, so attention is compute-bound; no divergence.
    assert np.isinf(serving.kv_limit_context("deepseek-v3", "h200"))
    assert serving.balance_batch("deepseek-v3", "h200", 8192) < serving.balance_batch("deepseek-v3", "h200", 0)


def test_utilization_vs_balance():
    x = np.array([0.5, 1, 2, 3])
    assert np.allclose(serving.utilization_vs_balance(x, "sum"), [1 / 3, 0.5, 2 / 3, 0.75])
    assert np.allclose(serving.utilization_vs_balance(x, "max"), [0.5, 1, 1, 1])
    with pytest.raises(ValueError, match="overlap"):
        serving.utilization_vs_balance(1.0, "mean")
    with pytest.raises(ValueError, match="batch_over_balance"):
        serving.utilization_vs_balance(0.0)
    # agrees with decode_step's no-overlap MFU for a dense model at short context
    bstar = serving.balance_batch("llama-3.1-8b", "h100-sxm")
    s = serving.decode_step("llama-3.1-8b", "h100-sxm", 2 * bstar, 0, overlap="sum")
    assert s.mfu == pytest.approx(2 / 3, rel=2e-3)


# ---- moe -------------------------------------------------------------------

@FAST
@given(E=st.integers(1, 512), k=st.integers(1, 16), B=st.floats(1, 1e5))
def test_routing_expectations(E, k, B):
    k = min(k, E)
    t = moe.expected_experts_touched(B, E, k)
    assert 0 < t <= E + 1e-9
    assert t <= B * k + 1e-9                       # cannot touch more experts than picks
    assert moe.expected_tokens_per_expert(B, E, k) == pytest.approx(B * k / E)


def test_route_uniform_statistics():
    a = moe_bench.route_uniform(20000, 64, 4, seed=1)
    assert a.shape == (20000, 4)
    assert np.all(np.sort(a, axis=1)[:, 1:] != np.sort(a, axis=1)[:, :-1])  # distinct per token
    counts = moe_bench.tokens_per_expert(a, 64)
    assert counts.sum() == 80000
    assert abs(counts.mean() - 20000 * 4 / 64) < 1e-9 and counts.std() / counts.mean() < 0.05
    # experts touched by B = 8 tokens: simulate 2000 steps, compare with E (1 - (1 - k/E)^B)
    touched = [len(np.unique(moe_bench.route_uniform(8, 64, 4, seed=s))) for s in range(2000)]
    assert np.mean(touched) == pytest.approx(moe.expected_experts_touched(8, 64, 4), rel=0.01)


def test_moe_bad_input():
    with pytest.raises(ValueError, match="top_k must be <= n_experts"):
        moe.expected_tokens_per_expert(10, 8, 9)
    with pytest.raises(ValueError, match="top_k must be <= n_experts"):
        moe_bench.route_uniform(4, 8, 9)
    with pytest.raises(ValueError, match="batch"):
        moe.expected_experts_touched(0, 8, 2)
    with pytest.raises(ValueError, match="dense"):
        moe.with_experts("llama-3.1-8b", 8)
    with pytest.raises(KeyError):
        moe.sparsities("deepseek-v9")
    with pytest.raises(ValueError, match="method"):
        x = np.zeros((2, 4), np.float32)
        moe_bench.grouped_expert_matmul(x, np.zeros((2, 1), int), np.zeros((2, 4, 3)), np.zeros((2, 3, 4)), "fast")


def test_sparsities_and_expert_balance():
    s = moe.sparsities("deepseek-v3")
    assert s["expert"] == 32 and 17.5 < s["total"] < 18.2
    assert moe.expert_balance_batch(R_H100, 256, 8) == pytest.approx(R_H100 * 32)


def test_with_experts_keeps_active_and_cost_at_saturation():
    base = models.get("deepseek-v3")
    for E in (64, 512):
        m = moe.with_experts(base, E)
        # only the router (d x E weights + E biases per MoE layer) changes what a token multiplies
        assert m.matmul_params_per_token - base.matmul_params_per_token == (E - 256) * (7168 + 1) * 58
        # 58 MoE layers, each adding one expert (3 d f_e) and one router row (d weights + 1 bias) per extra expert
        assert m.total_params - base.total_params == (E - 256) * (3 * 7168 * 2048 + 7168 + 1) * 58
        bstar = serving.balance_batch(m, "h100-sxm")
        c = serving.decode_cost_per_token(m, "h100-sxm", 2 * bstar, 0, n_chips=64, check_capacity=False)
        assert c == pytest.approx(2 * base.matmul_params_per_token / F_H100, rel=5e-3)  # independent of E but for the router


@pytest.mark.parametrize("method", ["loop", "padded"])
def test_grouped_expert_matmul_matches_float64_reference(method):
    rng = np.random.default_rng(0)
    B, E, k, d, f = 37, 8, 3, 16, 12
    x = rng.standard_normal((B, d)).astype(np.float32)
    a = moe_bench.route_uniform(B, E, k, seed=2)
    wu = rng.standard_normal((E, d, f)).astype(np.float32)
    wd = rng.standard_normal((E, f, d)).astype(np.float32)
    y = moe_bench.grouped_expert_matmul(x, a, wu, wd, method)
    ref = moe_bench.moe_reference(x, a, wu, wd)
    assert y.shape == (B, d) and y.dtype == np.float32
    assert np.max(np.abs(y - ref)) / np.max(np.abs(ref)) < 1e-5


def _experts(rng, E, d, f):
    """Random fp32 w_up (E, d, f) and w_down (E, f, d)."""
    return rng.standard_normal((E, d, f)).astype(np.float32), rng.standard_normal((E, f, d)).astype(np.float32)


def test_blocked_experts_match_the_reference_on_both_sides_of_max_rows():
    rng = np.random.default_rng(1)
    E, k, d, f = 4, 2, 96, 64
    wu, wd = _experts(rng, E, d, f)
    bl = moe_bench.BlockedExperts(wu, wd)
    # the blocks hold the same numbers: block j of expert e's W_up is its columns 32 j .. 32 j + 31
    assert np.array_equal(bl.up[2, 1], wu[2][:, 32:64]) and np.array_equal(bl.down[3, 2], wd[3][:, 64:96])
    # one expert by hand: relu(x W_up) W_down
    x = rng.standard_normal((3, d)).astype(np.float32)
    assert np.allclose(bl.ffn(1, x), np.maximum(x @ wu[1], 0) @ wd[1], rtol=1e-5, atol=1e-4)
    for B in (1, 7, 150):        # at B = 150 every expert gets ~75 tokens > max_rows: the plain product
        x = rng.standard_normal((B, d)).astype(np.float32)
        a = moe_bench.route_uniform(B, E, k, seed=B)
        y = moe_bench.grouped_expert_matmul(x, a, wu, wd, "loop", blocked=bl)
        ref = moe_bench.moe_reference(x, a, wu, wd)
        assert np.max(np.abs(y - ref)) / np.max(np.abs(ref)) < 1e-5
    # d = 96 is no multiple of 64: one width only; the plan still chooses how many rows to multiply
    assert set(bl.layouts) == {32}
    assert {w for _, w in bl.plan(rows=[1, 2, 3, 4], rounds=1).values()} == {32}
    assert all(T <= bl.rows_for[T] <= 2 * T and bl.rows_for[T] in (1, 2, 3, 4) for T in (1, 2, 3, 4))
    # d = 128, f = 64: both widths; the plan picks one per token count, and either computes the same layer
    wu2, wd2 = _experts(rng, E, 128, 64)
    bl2 = moe_bench.BlockedExperts(wu2, wd2)
    plan = bl2.plan(rows=[1, 2, 3], rounds=1)
    assert set(plan) == {1, 2, 3} and {w for _, w in plan.values()} <= {32, 64}
    assert plan == {T: (bl2.rows_for[T], bl2.width_for[T]) for T in (1, 2, 3)}
    assert set(bl2.rows_for) == {1, 2, 3} and all(T <= bl2.rows_for[T] <= min(2 * T, 3) for T in (1, 2, 3))
    x = rng.standard_normal((3, 128)).astype(np.float32)
    for nc in (32, 64):
        assert np.allclose(bl2.ffn(0, x, width=nc), np.maximum(x @ wu2[0], 0) @ wd2[0], rtol=1e-5, atol=1e-4)


def test_blocked_experts_padded_rows_give_the_same_layer():
    # a plan may multiply T tokens as T' > T rows (zero rows added, their outputs dropped): the result must be the
    # T tokens' alone, whether written into out or returned, and out's other rows must stay untouched
    rng = np.random.default_rng(2)
    E, k, d, f = 4, 2, 128, 64
    wu, wd = _experts(rng, E, d, f)
    bl = moe_bench.BlockedExperts(wu, wd)
    bl.rows_for, bl.width_for = {1: 2, 3: 4, 5: 8}, {1: 64, 3: 64, 5: 32}
    for T in (1, 3, 5):
        x = rng.standard_normal((T, d)).astype(np.float32)
        want = np.maximum(x @ wu[2], 0) @ wd[2]
        got = bl.ffn(2, x)
        assert got.shape == (T, d) and np.allclose(got, want, rtol=1e-5, atol=1e-4)
        big = np.full((T + 2, d), 7.0, np.float32)
        assert bl.ffn(2, x, out=big[1:T + 1]) is not None
        assert np.allclose(big[1:T + 1], want, rtol=1e-5, atol=1e-4)
        assert np.all(big[0] == 7.0) and np.all(big[T + 1] == 7.0)
    for B in (1, 3, 6):
        x = rng.standard_normal((B, d)).astype(np.float32)
        a = moe_bench.route_uniform(B, E, k, seed=B)
        ref = moe_bench.moe_reference(x, a, wu, wd)
        y = moe_bench.grouped_expert_matmul(x, a, wu, wd, "loop", blocked=bl)
        assert np.max(np.abs(y - ref)) / np.max(np.abs(ref)) < 1e-5
    with pytest.raises(ValueError, match="rows"):
        bl.plan(rows=[0, 1])
    with pytest.raises(ValueError, match="rounds"):
        bl.plan(rows=[1], rounds=0)


def test_blocked_experts_plan_pads_only_up_to_twice_the_tokens(monkeypatch):
    # the plan's rule, with the timings fixed: T tokens go to the fastest timed (T', width) with T <= T' <= 2 T
    import types
    fake_s = {(T, nc): float(T) for T in (1, 2, 3, 4, 5) for nc in (32, 64)}
    fake_s[(4, 64)] = 0.5                                      # 4 rows at 64 columns: the fastest case
    monkeypatch.setattr(moe_bench.kernels, "time_interleaved",
                        lambda fns, **kw: {key: types.SimpleNamespace(min_s=fake_s[key]) for key in fns})
    bl = moe_bench.BlockedExperts(*_experts(np.random.default_rng(3), 2, 128, 64))
    plan = bl.plan(rows=[1, 2, 3, 4, 5])
    assert bl.rows_for == {1: 1, 2: 4, 3: 4, 4: 4, 5: 5}      # 1 may not pad to 4 (> 2 x 1); 5 may not shrink
    assert bl.width_for[2] == bl.width_for[3] == bl.width_for[4] == 64
    assert plan[3] == (4, 64) and plan[5][0] == 5


def test_blocked_experts_bad_input_is_refused():
    wu, wd = np.zeros((2, 64, 32), np.float32), np.zeros((2, 32, 64), np.float32)
    with pytest.raises(ValueError, match="multiples of 32"):
        moe_bench.BlockedExperts(np.zeros((2, 60, 32)), np.zeros((2, 32, 60)))
    with pytest.raises(ValueError, match="need w_up"):
        moe_bench.BlockedExperts(wu, wd[:, :, :10])
    x, a = np.zeros((3, 64), np.float32), np.zeros((3, 1), int)
    with pytest.raises(ValueError, match="BlockedExperts of these"):
        moe_bench.grouped_expert_matmul(x, a, wu, wd, "loop", blocked=moe_bench.BlockedExperts(wu[:1], wd[:1]))
    with pytest.raises(ValueError, match="method='loop'"):
        moe_bench.grouped_expert_matmul(x, a, wu, wd, "padded", blocked=moe_bench.BlockedExperts(wu, wd))
    with pytest.raises(ValueError, match="layout must be"):
        moe_bench.moe_sweep(layout="tiled", progress=False)


def test_moe_sweep_small_runs_and_predicts():
    s = moe_bench.moe_sweep(batches=[1, 64], n_experts=8, top_k=2, d_model=64, d_ff=32, repeats=1, progress=False,
                      flops_per_s=1e11, bytes_per_s=1e10)
    assert s.measured_s.shape == (2,) and np.all(s.measured_s > 0)
    assert s.touched[0] == 2 and s.touched[1] == 8
    assert s.knee_batch == pytest.approx(1e11 * 4 / (2 * 1e10) * 8 / 2)
    assert "tok/expert" in s.table() and s.layout == "blocked"     # d = 64, f = 32: whole blocks of 32
    assert moe_bench.moe_sweep(batches=[1], n_experts=8, top_k=2, d_model=60, d_ff=30, repeats=1, progress=False,
                         flops_per_s=1e11, bytes_per_s=1e10).layout == "plain"


def test_moe_sweep_runs_another_layer_before_every_timed_call(monkeypatch):
    from llmmath import kernels

    monkeypatch.setattr(kernels, "last_level_cache_bytes", lambda be=None: 2**20)   # a 1 MiB cache: a small layer
    built = []
    real = moe_bench._previous_layer

    def spy(*args):
        fn = real(*args)
        calls = []
        built.append(calls)
        return lambda: (calls.append(1), fn())[1]
    monkeypatch.setattr(moe_bench, "_previous_layer", spy)
    moe_bench.moe_sweep(batches=[1, 8, 64], n_experts=8, top_k=2, d_model=64, d_ff=32, repeats=2, progress=False,
                  flops_per_s=1e11, bytes_per_s=1e10)
    assert len(built) == 1 and len(built[0]) == 3 * 2        # once before each timed call: 3 batches x 2 rounds
    # the other layer: twice the (patched) cache in experts of 2 d f fp32 weights, each with k tokens
    fn = real(8, 2, 64, 32, "fp32", "loop", None, kernels._cpu_backend())
    assert fn().shape == (-(-2 * 2**20 // (2 * 64 * 32 * 4)), 64)


def test_moe_fitted_knee_uses_only_batches_that_read_every_expert():
    s = moe_bench.moe_sweep(batches=[1, 64], n_experts=8, top_k=2, d_model=64, d_ff=32, repeats=1, progress=False,
                      flops_per_s=1e11, bytes_per_s=1e10)
    b = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256], float)
    t = 1e-3 * np.maximum(40, b)           # flat to 40 tokens, then proportional
    t[:4] = 1e-6                           # B k < 4 E = 32 (B < 16): few experts read, far below the floor
    synth = dataclasses.replace(s, batch=b, measured_s=t)
    assert synth.fitted_knee_batch == pytest.approx(40, rel=0.02)   # the four fast small batches are left out
    few = dataclasses.replace(s, batch=np.array([1.0, 16.0]), measured_s=np.array([1e-3, 2e-3]))
    with pytest.raises(ValueError, match="B k >= 4 E"):
        few.fitted_knee_batch


# ---- schedule --------------------------------------------------------------

def test_cadence_uniform_phase_matches_closed_form():
    T = 0.02
    a = schedule.uniform_arrivals(200_000, 50.0, seed=1)
    r = schedule.simulate_cadence(a, T)
    cf = schedule.uniform_phase_latency(T)
    assert r.mean_wait_s == pytest.approx(cf["mean_wait_s"], rel=0.01)           # T/2
    assert r.max_wait_s < T and r.max_wait_s > 0.999 * T                           # sup is T
    assert r.mean_latency_s == pytest.approx(1.5 * T, rel=0.005)
    assert r.max_latency_s <= 2 * T
    # wait ~ U(0, T): its variance is T^2 / 12
    assert np.var(r.wait_s) == pytest.approx(T * T / 12, rel=0.02)


def test_cadence_poisson_mean_and_step():
    a = schedule.poisson_arrivals(1000.0, 100_000, seed=2)
    r = schedule.simulate_cadence(a, 0.02, step_s=0.015)
    assert r.mean_wait_s == pytest.approx(0.01, rel=0.01)
    assert r.max_latency_s <= 0.035 + 1e-12
    assert r.batch_sizes.sum() == 100_000


def test_cadence_capacity_fifo_against_loop():
    a = schedule.poisson_arrivals(100.0, 3000, seed=3)
    T = 0.02
    for c in (1, 2, 5):
        r = schedule.simulate_cadence(a, T, capacity=c)
        n = np.ceil(a / T).astype(int)
        D = np.empty_like(n)
        for j in range(len(n)):
            D[j] = max(n[j], D[j - c] + 1) if j >= c else n[j]
        assert np.array_equal(r.departure_index, D)
        assert r.batch_sizes.max() <= c
        assert np.all(np.diff(r.departure_index) >= 0)


def test_cadence_overload_grows_and_underload_stays_bounded():
    T, c = 0.02, 100
    stable = schedule.max_stable_rate_per_s(c, T)            # 5000 / s
    over = schedule.simulate_cadence(schedule.poisson_arrivals(1.2 * stable, 200_000, seed=4), T, capacity=c)
    # backlog after t seconds: (1.2 - 1) x 5000 t requests, drained at 5000 / s: the last wait ~ 0.2 t
    elapsed = over.arrival_s[-1]
    assert over.wait_s[-1] == pytest.approx(0.2 * elapsed, rel=0.05)
    under = schedule.simulate_cadence(schedule.poisson_arrivals(0.5 * stable, 200_000, seed=4), T, capacity=c)
    assert under.max_latency_s <= 2 * T + 1e-12


def test_cadence_bad_input():
    a = np.array([0.001, 0.002])
    with pytest.raises(ValueError, match="period_s must be > 0"):
        schedule.simulate_cadence(a, 0.0)
    with pytest.raises(ValueError, match="period_s must be > 0"):
        schedule.simulate_cadence(a, -1.0)
    with pytest.raises(ValueError, match="step_s must be <= period_s"):
        schedule.simulate_cadence(a, 0.02, step_s=0.03)
    with pytest.raises(ValueError, match="capacity"):
        schedule.simulate_cadence(a, 0.02, capacity=0)
    with pytest.raises(ValueError, match="sorted"):
        schedule.simulate_cadence(a[::-1], 0.02)
    with pytest.raises(ValueError, match="finite"):
        schedule.simulate_cadence([0.1, np.nan], 0.02)
    with pytest.raises(ValueError, match="phase_s"):
        schedule.simulate_cadence(a, 0.02, phase_s=0.02)
    with pytest.raises(ValueError, match="rate_per_s"):
        schedule.poisson_arrivals(0, 10)
    with pytest.raises(ValueError, match="fill_fraction"):
        schedule.hbm_period_s("h100-sxm", 1.5)


def test_cadence_million_arrivals():
    # its speed is timed by benchmarks/run.py (a timed test fails on a busy machine); here what it computes
    a = schedule.poisson_arrivals(50_000.0, 1_000_000, seed=5)
    free = schedule.simulate_cadence(a, 0.02)
    capped = schedule.simulate_cadence(a, 0.02, capacity=1100)
    # 50,000 arrivals/s at a 20 ms cadence: 1,000 per train on average, so the uncapped wait is half a period
    assert free.mean_wait_s == pytest.approx(0.01, rel=0.01) and free.max_wait_s <= 0.02 + 1e-12
    # a capacity of 1,100 per train (10 % over the mean) keeps up, so waits stay below a few periods
    assert capped.mean_wait_s >= free.mean_wait_s - 1e-12 and capped.max_wait_s < 5 * 0.02


def test_hbm_period_from_datasheets():
    assert schedule.hbm_period_s("h100-sxm") == pytest.approx(80e9 / 3.35e12)
    assert schedule.hbm_period_s("h200") == pytest.approx(141e9 / 4.8e12)
    from llmmath import hardware
    assert schedule.hbm_period_s(hardware.system("vera-rubin-nvl72")) == pytest.approx(288e9 / 22e12)


def test_expert_in_cache_time_grows_with_tokens_and_refuses_bad_input():
    t = moe_bench.expert_in_cache_s([1, 64], d_model=512, d_ff=256, repeats=5)
    assert t.shape == (2,) and np.all(t > 0)
    # 64 tokens are 64x the multiply-adds of one; even a fixed cost per call cannot hide all of it
    assert t[1] > t[0]
    with pytest.raises(ValueError, match="tokens"):
        moe_bench.expert_in_cache_s([0])
    with pytest.raises(ValueError, match="d_model"):
        moe_bench.expert_in_cache_s([1], d_model=0)
    # a sweep's plan is used as given (here: 1 token padded to 2 rows at 64 columns); bad plans are refused
    assert moe_bench.expert_in_cache_s([1], d_model=512, d_ff=256, repeats=2, plan={1: (2, 64)}).shape == (1,)
    for bad in ({1: (0, 32)}, {2: (1, 32)}, {1: (1, 48)}, {1: 32}):
        with pytest.raises(ValueError, match="plan must map"):
            moe_bench.expert_in_cache_s([1], d_model=512, d_ff=256, repeats=1, plan=bad)


@pytest.mark.parametrize("step_s", [0.005, 0.012, 0.02])
def test_uniform_phase_latency_at_several_steps(step_s):
    """The closed forms at steps shorter than the period too, each against the simulated cadence and by hand: wait
    U(0, T), latency wait + step, so mean T/2 + step and worst T + step (a worst case typed as 2T, or a step left out
    of the mean, fails at every step but T)."""
    T = 0.02
    cf = schedule.uniform_phase_latency(T, step_s)
    assert cf["mean_latency_s"] == pytest.approx(T / 2 + step_s) and cf["max_latency_s"] == pytest.approx(T + step_s)
    assert cf["mean_wait_s"] == pytest.approx(T / 2) and cf["max_wait_s"] == pytest.approx(T)
    r = schedule.simulate_cadence(schedule.uniform_arrivals(100_000, 50.0, seed=3), T, step_s=step_s)
    assert r.mean_latency_s == pytest.approx(cf["mean_latency_s"], rel=0.01)
    assert cf["max_latency_s"] * 0.999 < r.max_latency_s <= cf["max_latency_s"] + 1e-12
