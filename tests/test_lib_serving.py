"""Tests of llmmath.serving: the decode step on the roofline.

Hand formulas (B batch, L context, F FLOP/s, W bytes/s, b_w weight bytes):

    t_compute = B (2 N_mm + a L) / F
    t_memory  = (P_read(B) b_w + B L beta) / W
    step      = max(t_compute, t_memory)

Constants below are worked out from the published configs and datasheets,
not read back from the library.
"""

import math

import numpy as np
import pytest
from hypothesis import assume, given, settings, strategies as st

from llmmath import serving

FAST = settings(max_examples=50, deadline=None)

# H100 SXM datasheet: dense bf16, dense fp8, HBM3 bandwidth, capacity
F_H100, F8_H100, W_H100, C_H100 = 989.5e12, 1979e12, 3.35e12, 80e9
# A100 80GB datasheet (no fp8)
F_A100, W_A100 = 312e12, 2.039e12

# Llama-3.1-8B: 32 layers, d 4096, 32 heads x 128, 8 kv heads, vocab 128256, untied
L8_TOTAL = 8_030_261_248
L8_EMBED = 128256 * 4096
L8_P = L8_TOTAL - L8_EMBED  # weights a large-batch step reads (no input table)
L8_NMM = L8_TOTAL - L8_EMBED  # matmul weights per token (dense)
L8_BETA = 2 * 32 * 8 * 128 * 2  # KV bytes per token, bf16
L8_A = 32 * 4 * 32 * 128  # attention FLOPs per token per context position

# Llama-3.1-70B: 80 layers, d 8192, 64 heads x 128, 8 kv heads
L70_TOTAL = 70_553_706_496
L70_EMBED = 128256 * 8192
L70_P = L70_NMM = L70_TOTAL - L70_EMBED
L70_BETA = 2 * 80 * 8 * 128 * 2
L70_A = 80 * 4 * 64 * 128

# Llama-3.1-405B
L405_TOTAL = 405_853_388_800
L405_P = L405_TOTAL - 128256 * 16384

# Mixtral 8x7B (untied, 32 MoE layers of 8 experts, top-2)
MIX_TOTAL = 46_702_792_704
MIX_EXPERT = 3 * 4096 * 14336
MIX_EMBED = 32000 * 4096
MIX_ACTIVE = MIX_TOTAL - 32 * 6 * MIX_EXPERT
MIX_NMM = MIX_ACTIVE - MIX_EMBED
MIX_P = MIX_TOTAL - MIX_EMBED

R_H100 = F_H100 * 2 / (2 * W_H100)  # balance ratio at bf16: 295.37

MODELS = ["llama-3.1-8b", "llama-3.2-1b", "mixtral-8x7b", "deepseek-v3", "gpt-3-175b", "qwen3-4b"]
CHIPS = ["h100-sxm", "a100-80gb", "b200", "mi300x", "tpu-v5e"]

batches = st.floats(min_value=1, max_value=4096, allow_nan=False)
contexts = st.floats(min_value=0, max_value=65536, allow_nan=False)


# ---- step time by hand ---------------------------------------------------------------

def test_decode_step_batch_1_context_0():
    s = serving.decode_step("llama-3.1-8b", "h100-sxm", 1, 0)
    compute = 2 * L8_NMM / F_H100
    weight = (L8_P + 4096) * 2 / W_H100  # every weight + one embedding row
    assert s.compute_s == pytest.approx(compute, rel=1e-12)
    assert s.weight_s == pytest.approx(weight, rel=1e-12)
    assert s.kv_s == 0.0
    assert s.time_s == pytest.approx(weight, rel=1e-12)  # ~4.48 ms: memory-bound
    assert s.time_s == pytest.approx(4.48e-3, rel=1e-3)
    assert not s.compute_bound
    assert s.mfu == pytest.approx(compute / weight, rel=1e-12)
    assert s.cost_chip_s_per_token == pytest.approx(weight, rel=1e-12)


def test_decode_step_batch_64_context_4096():
    B, L = 64, 4096
    compute = B * (2 * L8_NMM + L8_A * L) / F_H100
    weight = (L8_P + B * 4096) * 2 / W_H100
    kv = B * L * L8_BETA / W_H100
    s = serving.decode_step("llama-3.1-8b", "h100-sxm", B, L)
    assert s.compute_s == pytest.approx(compute, rel=1e-12)
    assert s.weight_s == pytest.approx(weight, rel=1e-12)
    assert s.kv_s == pytest.approx(kv, rel=1e-12)
    assert s.memory_s == pytest.approx(weight + kv, rel=1e-12)
    assert s.time_s == pytest.approx(max(compute, weight + kv), rel=1e-12)
    t_sum = serving.decode_step_time_s("llama-3.1-8b", "h100-sxm", B, L, overlap="sum")
    assert t_sum == pytest.approx(compute + weight + kv, rel=1e-12)


def test_decode_step_tensor_parallel_70b():
    # F and W summed over 8 chips
    t = serving.decode_step_time_s("llama-3.1-70b", "h100-sxm", 1, 0, n_chips=8)
    assert t == pytest.approx((L70_P + 8192) * 2 / (8 * W_H100), rel=1e-12)


def test_decode_step_moe_batch_1_reads_only_active_experts():
    # 93.4 GB of bf16 weights -> 2 H100s
    attn = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128
    dense_part = 32 * (attn + 4096 * 8 + 2 * 4096) + MIX_EMBED + 4096  # + lm_head + final norm
    read = dense_part + 32 * 2 * MIX_EXPERT + 4096  # 2 of 8 experts per layer + one row
    s = serving.decode_step("mixtral-8x7b", "h100-sxm", 1, 0, n_chips=2)
    assert s.weight_s == pytest.approx(read * 2 / (2 * W_H100), rel=1e-12)
    assert s.compute_s == pytest.approx(2 * MIX_NMM / (2 * F_H100), rel=1e-12)


def test_fp8_weights_on_a100_compute_at_bf16():
    B = 512
    s = serving.decode_step("llama-3.1-8b", "a100-80gb", B, 0, weight_dtype="fp8")
    assert s.compute_s == pytest.approx(B * 2 * L8_NMM / F_A100, rel=1e-12)  # bf16 tensor cores
    assert s.weight_s == pytest.approx((L8_P + B * 4096) * 1 / W_A100, rel=1e-12)  # 1 byte per weight
    # on an H100 fp8 runs natively at twice the bf16 rate, unless told otherwise
    h = serving.decode_step("llama-3.1-8b", "h100-sxm", B, 0, weight_dtype="fp8")
    assert h.compute_s == pytest.approx(B * 2 * L8_NMM / F8_H100, rel=1e-12)
    hb = serving.decode_step("llama-3.1-8b", "h100-sxm", B, 0, weight_dtype="fp8", compute_dtype="bf16")
    assert hb.compute_s == pytest.approx(B * 2 * L8_NMM / F_H100, rel=1e-12)


def test_kv_dtype():
    s = serving.decode_step("llama-3.1-8b", "h100-sxm", 8, 1000, kv_dtype="fp8")
    assert s.kv_s == pytest.approx(8 * 1000 * (L8_BETA / 2) / W_H100, rel=1e-12)


# ---- properties ----------------------------------------------------------------------

@FAST
@given(st.sampled_from(MODELS), st.sampled_from(CHIPS), batches, batches, contexts)
def test_step_time_non_decreasing_in_batch(model, chip, b1, b2, L):
    lo, hi = sorted((b1, b2))
    t = lambda b: serving.decode_step_time_s(model, chip, b, L, check_capacity=False)
    assert t(lo) <= t(hi) * (1 + 1e-12)


@FAST
@given(st.sampled_from(MODELS), st.sampled_from(CHIPS), batches, contexts, contexts)
def test_step_time_non_decreasing_in_context(model, chip, B, l1, l2):
    lo, hi = sorted((l1, l2))
    t = lambda L: serving.decode_step_time_s(model, chip, B, L, check_capacity=False)
    assert t(lo) <= t(hi) * (1 + 1e-12)


@FAST
@given(st.sampled_from(MODELS), st.sampled_from(CHIPS), batches, contexts)
def test_step_time_between_max_and_sum(model, chip, B, L):
    s = serving.decode_step(model, chip, B, L, check_capacity=False)
    t_sum = serving.decode_step_time_s(model, chip, B, L, overlap="sum", check_capacity=False)
    assert s.time_s == pytest.approx(max(s.compute_s, s.weight_s + s.kv_s), rel=1e-12)
    assert s.time_s >= s.compute_s and s.time_s >= s.memory_s * (1 - 1e-12)
    assert s.time_s <= t_sum * (1 + 1e-12)
    assert t_sum <= 2 * s.time_s * (1 + 1e-12)
    assert 0 < s.mfu <= 1 + 1e-12


@FAST
@given(st.sampled_from(MODELS), st.sampled_from(CHIPS),
       st.lists(batches, min_size=1, max_size=5), st.lists(contexts, min_size=1, max_size=4))
def test_vectorized_equals_scalar(model, chip, bs, ls):
    B = np.array(bs)[:, None]
    L = np.array(ls)[None, :]
    grid = serving.decode_step_time_s(model, chip, B, L, check_capacity=False)
    assert grid.shape == (len(bs), len(ls))
    for i, b in enumerate(bs):
        for j, l in enumerate(ls):
            one = serving.decode_step_time_s(model, chip, b, l, check_capacity=False)
            assert isinstance(one, float)
            assert grid[i, j] == pytest.approx(one, rel=1e-12)
    cost = serving.decode_cost_per_token(model, chip, B, L, check_capacity=False)
    np.testing.assert_allclose(cost, grid / B, rtol=1e-12)


@FAST
@given(st.sampled_from(MODELS), batches, contexts, st.integers(min_value=1, max_value=16))
def test_n_chips_divides_time_keeps_cost(model, B, L, n):
    one = serving.decode_step(model, "h100-sxm", B, L, check_capacity=False)
    many = serving.decode_step(model, "h100-sxm", B, L, n_chips=n, check_capacity=False)
    assert many.time_s == pytest.approx(one.time_s / n, rel=1e-12)
    assert many.cost_chip_s_per_token == pytest.approx(one.cost_chip_s_per_token, rel=1e-12)


# ---- cost per token ------------------------------------------------------------------

@FAST
@given(batches, batches)
def test_cost_per_token_dense_context_0(b1, b2):
    lo, hi = sorted((b1, b2))
    cost = lambda b: serving.decode_cost_per_token("llama-3.1-8b", "h100-sxm", b, 0)
    assert cost(hi) <= cost(lo) * (1 + 1e-12)  # batching never makes a token dearer
    # by hand: max(compute per token, (weights + one row per token) / B)
    for b in (lo, hi):
        assert cost(b) == pytest.approx(max(2 * L8_NMM / F_H100, (L8_P / b + 4096) * 2 / W_H100), rel=1e-12)


def test_cost_per_token_floor_beyond_balance_batch():
    b_star = serving.balance_batch("llama-3.1-8b", "h100-sxm", 0)
    floor = 2 * L8_NMM / F_H100  # 15.2 us per token
    for b in (1.001 * b_star, 2 * b_star, 3000):
        assert serving.decode_cost_per_token("llama-3.1-8b", "h100-sxm", b, 0) == pytest.approx(floor, rel=1e-12)
    for b in (1, 10, 0.9 * b_star):
        assert serving.decode_cost_per_token("llama-3.1-8b", "h100-sxm", b, 0) > floor * (1 + 1e-6)


def test_cost_in_dollars():
    chip_s = serving.decode_cost_per_token("llama-3.1-8b", "h100-sxm", 1, 0)
    usd = serving.decode_cost_per_token("llama-3.1-8b", "h100-sxm", 1, 0, usd_per_chip_hour=2.5)
    assert usd == pytest.approx(chip_s * 2.5 / 3600, rel=1e-12)
    with pytest.raises(ValueError, match="usd_per_chip_hour"):
        serving.decode_cost_per_token("llama-3.1-8b", "h100-sxm", 1, 0, usd_per_chip_hour=0)


def test_cost_ratio_unbatched_by_hand():
    one = (L8_P + 4096) * 2 / W_H100  # batch-1 step, memory-bound
    best = 2 * L8_NMM / F_H100
    got = serving.cost_ratio_unbatched("llama-3.1-8b", "h100-sxm", 0)
    assert got == pytest.approx(one / best, rel=1e-12)
    assert got == pytest.approx(R_H100, rel=1e-3)  # ~295: the datasheet ratio
    # at 8192 context on the 8B, KV reads dominate the best cost: 8192*beta/W > (2N+aL)/F
    L = 8192
    best_L = max((2 * L8_NMM + L8_A * L) / F_H100, L * L8_BETA / W_H100)
    one_L = max((2 * L8_NMM + L8_A * L) / F_H100, ((L8_P + 4096) * 2 + L * L8_BETA) / W_H100)
    assert serving.cost_ratio_unbatched("llama-3.1-8b", "h100-sxm", L) == pytest.approx(one_L / best_L, rel=1e-12)


# ---- balance batch -------------------------------------------------------------------

def test_balance_batch_h100_dense_llama_is_datasheet_ratio():
    # untied dense model: P_read = N_mm, so B* = R = F/W at bf16 = 989.5/3.35, up to the
    # one embedding row each sequence reads (d * b_w bytes): B* = (P b/W) / (2 N_mm/F - d b/W)
    assert serving.balance_batch("llama-3.1-8b", "h100-sxm") == pytest.approx(989.5e12 / 3.35e12, rel=1e-3)
    exact = (L8_P * 2 / W_H100) / (2 * L8_NMM / F_H100 - 4096 * 2 / W_H100)
    assert serving.balance_batch("llama-3.1-8b", "h100-sxm") == pytest.approx(exact, rel=1e-12)
    assert serving.balance_batch("llama-3.1-70b", "h100-sxm", 0) == pytest.approx(295.37, rel=1e-3)
    assert serving.balance_batch("llama-3.1-8b", "a100-80gb") == pytest.approx(F_A100 / W_A100, rel=1e-3)


def test_balance_batch_fp8_on_a100():
    # fp8 weights (1 byte) multiplied at bf16: R = 312e12 * 1 / (2 * 2.039e12) = 76.5
    got = serving.balance_batch("llama-3.1-8b", "a100-80gb", 0, weight_dtype="fp8")
    assert got == pytest.approx(F_A100 * 1 / (2 * W_A100), rel=1e-3)


def test_balance_batch_moe_by_hand():
    # B* = R * P_read / N_mm = 295.37 * 46.57e9 / 12.75e9 ~ 1079
    got = serving.balance_batch("mixtral-8x7b", "h100-sxm", 0)
    assert got == pytest.approx(R_H100 * MIX_P / MIX_NMM, rel=1e-3)
    assert got == pytest.approx(1079, rel=1e-3)


@pytest.mark.parametrize("model", MODELS + ["llama-3.1-405b", "kimi-k2", "gpt-oss-120b"])
@pytest.mark.parametrize("chip, wd", [("h100-sxm", "bf16"), ("h100-sxm", "fp8"), ("a100-80gb", "fp8"), ("b200", "fp4")])
def test_balance_batch_context_0_formula(model, chip, wd):
    from llmmath import hardware, models
    m, c = models.get(model), hardware.get(chip)
    R = c.balance_ratio(wd)
    assert serving.balance_batch(model, chip, 0, weight_dtype=wd) == pytest.approx(
        R * m.weights_read_params / m.matmul_params_per_token, rel=2e-3)


def test_balance_batch_infinite_when_kv_dominates_70b_4096():
    L = 4096
    per_seq_compute = (2 * L70_NMM + L70_A * L) / F_H100  # 151 us
    per_seq_kv = L * L70_BETA / W_H100  # 401 us
    assert per_seq_kv >= per_seq_compute
    assert serving.balance_batch("llama-3.1-70b", "h100-sxm", L) == math.inf


def test_balance_batch_finite_context_by_hand_and_crossover():
    L = 256
    margin = (2 * L70_NMM + L70_A * L) / F_H100 - L * L70_BETA / W_H100 - 8192 * 2 / W_H100  # last: embedding row
    expected = (L70_P * 2 / W_H100) / margin
    assert serving.balance_batch("llama-3.1-70b", "h100-sxm", L) == pytest.approx(expected, rel=1e-12)
    # the crossover context where L beta / W = (2 N_mm + a L) / F: ~1476 tokens
    L_star = (2 * L70_NMM / F_H100) / (L70_BETA / W_H100 - L70_A / F_H100)
    assert 1400 < L_star < 1550
    out = serving.balance_batch("llama-3.1-70b", "h100-sxm", np.array([0.0, 0.99 * L_star, 1.01 * L_star, 1e5]))
    assert np.all(np.isfinite(out[:2])) and np.all(np.isinf(out[2:]))
    assert out[1] > out[0]  # the balance batch grows towards the crossover


@FAST
@given(st.sampled_from(MODELS), st.sampled_from(CHIPS), contexts)
def test_balance_batch_sign_matches_per_sequence_margin(model, chip, L):
    # inf exactly where one sequence's KV reads outlast its compute
    s = serving.decode_step(model, chip, 1, L, check_capacity=False)
    per_seq_compute, per_seq_kv = s.compute_s, s.kv_s
    bb = serving.balance_batch(model, chip, L)
    assume(abs(per_seq_compute - per_seq_kv) > 1e-9 * per_seq_compute)
    if per_seq_kv >= per_seq_compute:
        assert bb == math.inf
    else:
        assert math.isfinite(bb) and bb > 0


@pytest.mark.parametrize(
    "model",
    [
        "llama-3.2-1b",  # tied embeddings: no per-token lookup rows
        "llama-3.1-8b",  # untied: each sequence also reads its embedding row
        "mixtral-8x7b",
    ],
)
def test_balance_batch_balances_decode_step(model):
    for L in (0, 64):
        b = serving.balance_batch(model, "h100-sxm", L)
        assert math.isfinite(b)
        s = serving.decode_step(model, "h100-sxm", b, L, check_capacity=False)
        assert s.compute_s == pytest.approx(s.memory_s, rel=1e-9)


def test_balance_batch_errors():
    with pytest.raises(ValueError, match="context"):
        serving.balance_batch("llama-3.1-8b", "h100-sxm", -1)
    with pytest.raises(ValueError, match="context"):
        serving.balance_batch("llama-3.1-8b", "h100-sxm", math.nan)
    with pytest.raises(KeyError):
        serving.balance_batch("llama-3.1-8b", "h100-sxm", 0, weight_dtype="fp9")


# ---- latency floor -------------------------------------------------------------------

def test_latency_floor_70b_on_8_h100():
    expected = (70_553_706_496 - 128256 * 8192) * 2 / (8 * 3.35e12)  # 5.19 ms
    assert serving.latency_floor_s("llama-3.1-70b", "h100-sxm", n_chips=8) == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(5.187e-3, rel=1e-3)


def test_latency_floor_other_cases():
    assert serving.latency_floor_s("llama-3.1-8b", "h100-sxm") == pytest.approx(L8_P * 2 / W_H100, rel=1e-12)
    # tied: the whole table is read (as the LM head)
    assert serving.latency_floor_s("llama-3.2-1b", "h100-sxm") == pytest.approx(1_235_814_400 * 2 / W_H100, rel=1e-12)
    # 405B at fp8 fits 8 x 80 GB (406 GB)
    assert serving.latency_floor_s("llama-3.1-405b", "h100-sxm", 8, weight_dtype="fp8") == pytest.approx(
        L405_P * 1 / (8 * W_H100), rel=1e-12)
    # the floor is below any dense decode step at any batch
    for B in (1, 64, 1024):
        assert serving.latency_floor_s("llama-3.1-8b", "h100-sxm") <= serving.decode_step_time_s(
            "llama-3.1-8b", "h100-sxm", B, 0)


def test_latency_floor_capacity():
    with pytest.raises(ValueError, match="n_chips") as e:
        serving.latency_floor_s("llama-3.1-405b", "h100-sxm")
    # 811.7 GB of bf16 weights / 80 GB -> at least 11 chips
    assert "n_chips >= 11" in str(e.value)
    with pytest.raises(ValueError, match="n_chips"):
        serving.latency_floor_s("llama-3.1-405b", "h100-sxm", n_chips=8)  # 811.7 > 640 GB
    got = serving.latency_floor_s("llama-3.1-405b", "h100-sxm", check_capacity=False)
    assert got == pytest.approx(L405_P * 2 / W_H100, rel=1e-12)


@pytest.mark.parametrize("n, exc", [(0, ValueError), (1.5, ValueError), (-2, ValueError), (True, TypeError), ("8", TypeError)])
def test_latency_floor_bad_n_chips(n, exc):
    with pytest.raises(exc, match="n_chips"):
        serving.latency_floor_s("llama-3.1-8b", "h100-sxm", n_chips=n)


# ---- capacity ------------------------------------------------------------------------

def test_405b_on_one_h100_raises_mentioning_n_chips():
    with pytest.raises(ValueError, match="n_chips"):
        serving.decode_step_time_s("llama-3.1-405b", "h100-sxm", 1, 0)
    t = serving.decode_step_time_s("llama-3.1-405b", "h100-sxm", 1, 0, check_capacity=False)
    assert t == pytest.approx((L405_P + 16384) * 2 / W_H100, rel=1e-12)


def test_kv_overflow_error_names_largest_batch():
    # floor((80e9 - 2 * 8,030,261,248) / (8192 * 131072)) = floor(59.55) = 59
    with pytest.raises(ValueError, match="largest batch that fits at that context is 59"):
        serving.decode_step("llama-3.1-8b", "h100-sxm", 60, 8192)
    serving.decode_step("llama-3.1-8b", "h100-sxm", 59, 8192)  # fits
    with pytest.raises(ValueError, match="batch=60"):
        serving.decode_step("llama-3.1-8b", "h100-sxm", np.array([1, 60]), 8192)


def test_max_batch_by_hand():
    assert (80e9 - 2 * L8_TOTAL) / (8192 * L8_BETA) == pytest.approx(59.55, abs=0.01)
    assert serving.max_batch("llama-3.1-8b", "h100-sxm", 8192) == 59
    # 70B on 8 H100 at 128k context: (640e9 - 141.1e9) / (131072 * 327680) = 11.6
    assert serving.max_batch("llama-3.1-70b", "h100-sxm", 131072, n_chips=8) == math.floor(
        (8 * 80e9 - 2 * L70_TOTAL) / (131072 * L70_BETA))
    assert serving.max_batch("llama-3.1-70b", "h100-sxm", 131072, n_chips=8) == 11
    # fp8 KV doubles it (almost)
    assert serving.max_batch("llama-3.1-8b", "h100-sxm", 8192, kv_dtype="fp8") == math.floor(
        (80e9 - 2 * L8_TOTAL) / (8192 * L8_BETA / 2))
    assert serving.max_batch("llama-3.1-8b", "h100-sxm", 0) == math.inf
    assert serving.max_batch("llama-3.1-405b", "h100-sxm", 1024) == 0
    out = serving.max_batch("llama-3.1-8b", "h100-sxm", np.array([0, 8192, 16384]))
    np.testing.assert_array_equal(out, [math.inf, 59, math.floor((80e9 - 2 * L8_TOTAL) / (16384 * L8_BETA))])


@pytest.mark.parametrize("model, chip, L, n", [("llama-3.1-8b", "h100-sxm", 8192, 1),
                                                ("llama-3.1-70b", "h100-sxm", 32768, 4),
                                                ("deepseek-v3", "mi325x", 4096, 8),
                                                ("qwen3-4b", "tpu-v5e", 2048, 1)])
def test_fits_in_hbm_agrees_with_max_batch(model, chip, L, n):
    mb = serving.max_batch(model, chip, L, n_chips=n)
    assert mb >= 1
    assert serving.fits_in_hbm(model, chip, mb, L, n_chips=n)
    assert not serving.fits_in_hbm(model, chip, mb + 1, L, n_chips=n)


# ---- input errors --------------------------------------------------------------------

@pytest.mark.parametrize(
    "kw, exc, word",
    [
        (dict(batch=0), ValueError, "batch"),
        (dict(batch=-1), ValueError, "batch"),
        (dict(batch=math.nan), ValueError, "batch"),
        (dict(batch=math.inf), ValueError, "batch"),
        (dict(batch="8"), TypeError, "batch"),
        (dict(context=-1), ValueError, "context"),
        (dict(context=math.nan), ValueError, "context"),
        (dict(n_chips=0), ValueError, "n_chips"),
        (dict(n_chips=1.5), ValueError, "n_chips"),
        (dict(n_chips=math.nan), ValueError, "n_chips"),
        (dict(weight_dtype="fp9"), KeyError, "fp9"),
        (dict(kv_dtype="fp9"), KeyError, "fp9"),
        (dict(overlap="min"), ValueError, "overlap"),
        (dict(model="llama-3.1-7b"), KeyError, "llama-3.1-8b"),
        (dict(chip="h100"), KeyError, "h100-sxm"),
    ],
)
def test_decode_step_bad_input(kw, exc, word):
    args = dict(model="llama-3.1-8b", chip="h100-sxm", batch=1, context=0)
    args.update(kw)
    with pytest.raises(exc, match=word):
        serving.decode_step_time_s(**args)
    with pytest.raises(exc):
        serving.decode_cost_per_token(**args)


def test_float_whole_n_chips_accepted():
    a = serving.decode_step_time_s("llama-3.1-8b", "h100-sxm", 1, 0, n_chips=2.0)
    b = serving.decode_step_time_s("llama-3.1-8b", "h100-sxm", 1, 0, n_chips=2)
    assert a == b


def test_max_batch_and_fits_errors():
    with pytest.raises(ValueError, match="context"):
        serving.max_batch("llama-3.1-8b", "h100-sxm", -1)
    with pytest.raises(ValueError, match="n_chips"):
        serving.max_batch("llama-3.1-8b", "h100-sxm", 1024, n_chips=0)
    with pytest.raises(ValueError, match="batch"):
        serving.fits_in_hbm("llama-3.1-8b", "h100-sxm", 0, 1024)
    with pytest.raises(KeyError):
        serving.max_batch("llama-3.1-8b", "h100-sxm", 1024, kv_dtype="fp9")


# --- expert parallelism: the busiest chip sets the step (claims 2 and 4) ---------------------

def _busiest_monte_carlo(n_experts, k, n_chips, batch, samples, seed=0):
    """Simulated routing: each token picks k distinct experts; experts 0..E-1 dealt to chips in
    contiguous groups as evenly as whole experts allow (the first E mod n chips hold one more)."""
    rng = np.random.default_rng(seed)
    g, extra = divmod(n_experts, n_chips)
    chip_of = np.repeat(np.arange(n_chips), [g + 1] * extra + [g] * (n_chips - extra))
    picks = rng.random((samples, batch, n_experts)).argsort(axis=2)[:, :, :k].reshape(samples, -1)
    touched = np.zeros((samples, n_experts), bool)
    np.put_along_axis(touched, picks, True, axis=1)
    per_chip = np.stack([touched[:, chip_of == c].sum(axis=1) for c in range(n_chips)], axis=1)
    return per_chip.max(axis=1)


@pytest.mark.parametrize("n_chips, batch", [(8, 1), (72, 1), (16, 4)])
def test_busiest_chip_experts_matches_simulated_routing(n_chips, batch):
    sim = _busiest_monte_carlo(256, 8, n_chips, batch, 3000)
    got = serving.expected_busiest_chip_experts("deepseek-v3", batch, n_chips)
    assert abs(got - sim.mean()) < 4 * sim.std() / np.sqrt(sim.size)


def test_busiest_chip_limits():
    from llmmath import models
    m = models.get("deepseek-v3")
    B = np.array([1, 3, 40, 5000])
    one = serving.expected_busiest_chip_experts(m, B, 1)       # one chip: every touched expert
    assert np.allclose(one, 256 * (1 - (1 - 8 / 256) ** B))
    per_expert = serving.expected_busiest_chip_experts(m, B, 256)  # one expert per chip: 1 if any touched
    assert np.allclose(per_expert, 1.0)
    assert serving.expected_busiest_chip_experts("llama-3.1-70b", 1, 8) == 0.0


def test_expert_parallel_step_reduces_to_pooled_on_one_chip_and_for_dense_models():
    B, L = np.array([1, 7, 64, 2048])[:, None], np.array([0, 4096])[None, :]
    a = serving.expert_parallel_decode_step("deepseek-v3", "h200", B, L, 1, check_capacity=False).time_s
    b = serving.decode_step_time_s("deepseek-v3", "h200", B, L, 1, check_capacity=False)
    assert np.allclose(a, b, rtol=1e-12)
    a = serving.expert_parallel_decode_step("llama-3.1-70b", "h100-sxm", B, L, 8, check_capacity=False).time_s
    b = serving.decode_step_time_s("llama-3.1-70b", "h100-sxm", B, L, 8, check_capacity=False)
    assert np.allclose(a, b, rtol=1e-12)


def test_expert_parallel_penalty_by_hand_and_between_R_and_Bstar():
    # DeepSeek-V3, fp8, 8 x H200 (datasheet 1,979 TFLOPS fp8 dense, 4.8 TB/s), by hand: one token's 8
    # experts land on 8 chips of 32; E[max picks on a chip] by brute force over all C(256, 8) is
    # impractical, so enumerate the chip of each pick with the exact without-replacement weights.
    from itertools import combinations_with_replacement
    from math import factorial, prod
    e_max = 0.0
    for chips in combinations_with_replacement(range(8), 8):   # which chip each of the 8 picks lands on
        counts = np.bincount(chips, minlength=8)
        orders = factorial(8) // prod(factorial(int(c)) for c in counts)
        # ordered draws without replacement: 32 x 31 x ... on each chip, over 256 x 255 x ... x 249
        w = prod(prod(range(32 - int(c) + 1, 33)) for c in counts) / prod(range(249, 257))
        e_max += counts.max() * orders * w
    assert abs(e_max - serving.expected_busiest_chip_experts("deepseek-v3", 1, 8)) < 1e-12
    p_e, n_mm = 3 * 7168 * 2048, 36_625_618_432
    p_other = 671_026_419_200 - 129_280 * 7168 + 7168 - 58 * 256 * p_e
    hand = 8 * 1979e12 / (2 * 4.8e12) * (p_other / 8 + 58 * e_max * p_e) / n_mm
    got = serving.expert_parallel_cost_ratio_unbatched("deepseek-v3", "h200", 8, weight_dtype="fp8")
    assert abs(got / hand - 1) < 1e-9 and 380 < got < 392
    r = serving.expert_parallel_cost_ratio_unbatched("deepseek-v3", "h100-sxm", [1, 16, 256])
    assert abs(r[0] / serving.cost_ratio_unbatched("deepseek-v3", "h100-sxm") - 1) < 1e-9
    assert abs(r[2] / serving.balance_batch("deepseek-v3", "h100-sxm") - 1) < 2e-3   # one expert per chip: B*
    assert r[0] < r[1] < r[2]


def test_expert_parallel_bad_input_and_capacity():
    with pytest.raises(ValueError, match="batch"):
        serving.expert_parallel_decode_step("deepseek-v3", "h200", 1.5, 0, 8, weight_dtype="fp8")
    with pytest.raises(ValueError, match="n_chips"):
        serving.expert_parallel_decode_step("deepseek-v3", "h200", 1, 0, 0, weight_dtype="fp8")
    with pytest.raises(ValueError, match="n_chips"):
        serving.expert_parallel_cost_ratio_unbatched("deepseek-v3", "h200", [8, 0])
    with pytest.raises(ValueError, match="fullest chip"):
        serving.expert_parallel_decode_step("deepseek-v3", "h100-sxm", 1, 0, 8, weight_dtype="fp8")
    with pytest.raises(KeyError):
        serving.expected_busiest_chip_experts("deepseek-v4", 1, 8)
    assert serving.expert_parallel_chip_bytes("deepseek-v3", 8, "fp8") == pytest.approx(671_026_419_200 / 8)


def test_utilization_with_partial_overlap_by_hand():
    # x = B/B* = 2, half of the shorter (weight-read) time hidden: t = 2 + 0.5 x 1 -> 2 / 2.5 = 0.8
    assert serving.utilization_vs_balance(2.0, 0.5) == pytest.approx(0.8)
    # x = 0.5: t = max(0.5, 1) + (1 - 0.25) x 0.5 = 1.375 -> 0.5 / 1.375
    assert serving.utilization_vs_balance(0.5, 0.25) == pytest.approx(0.5 / 1.375)
    x = np.array([0.3, 1.0, 2.5])
    assert np.allclose(serving.utilization_vs_balance(x, 1.0), serving.utilization_vs_balance(x, "max"))
    assert np.allclose(serving.utilization_vs_balance(x, 0.0), serving.utilization_vs_balance(x, "sum"))
    with pytest.raises(ValueError, match="overlap"):
        serving.utilization_vs_balance(1.0, 1.5)


def test_shortest_compute_bound_prompt_by_hand():
    # Llama-3.1-8B (8,030,261,248 parameters; untied 128,256 x 4,096 table looked up, not multiplied; 32 layers,
    # 32 heads and 8 KV heads of 128) on one H100 SXM (989.5 TFLOP/s bf16 dense, 3.35 TB/s), bf16:
    #   compute = 2 N_mm T + 4 x 32 x 128 x 32 x T (T-1)/2 FLOPs;  bytes = (N - V d + T d) x 2 + T x 131,072
    n, table, d = 8_030_261_248, 128_256 * 4_096, 4_096
    T = np.arange(1, 5_001, dtype=float)
    compute = (2 * (n - table) * T + 4 * 32 * 128 * 32 * T * (T - 1) / 2) / 989.5e12
    memory = ((n - table + T * d) * 2 + T * 2 * 32 * 8 * 128 * 2) / 3.35e12
    hand = T[np.argmax(compute >= memory)]
    assert serving.prefill_compute_bound_tokens("llama-3.1-8b", "h100-sxm") == hand
    assert 250 < hand < 300                      # about the ridge point, 295 FLOP/byte: T FLOPs per weight byte
    # an MoE model needs ~N_tot / N_act times longer prompts (claim 32's check does DeepSeek-V3 by hand)
    assert serving.prefill_compute_bound_tokens("deepseek-v3", "h100-sxm") > 15 * hand
    # fp8 weights multiplied in fp8: twice the FLOP/s, half the bytes: the same prompt length (~1 token either way);
    # fp8 weights multiplied in bf16: half the bytes at the same FLOP/s: half the prompt
    assert abs(serving.prefill_compute_bound_tokens("llama-3.1-8b", "h100-sxm", weight_dtype="fp8") - hand) <= 2
    half = serving.prefill_compute_bound_tokens("llama-3.1-8b", "h100-sxm", weight_dtype="fp8", compute_dtype="bf16")
    assert half == pytest.approx(hand / 2, rel=0.03)
    with pytest.raises(ValueError, match="n_chips"):
        serving.prefill_compute_bound_tokens("llama-3.1-8b", "h100-sxm", n_chips=0)


def test_speed_for_price_is_the_kv_reads_and_refuses_the_impossible():
    # Llama-3.1-70B on 8 H100s at 8,192 tokens from 93 sequences: below the balance batch t(B) is linear in B,
    # ((N - V d + B d) 2 + B L 327,680) / (8 x 3.35e12); solve t(b) = t(93) / 2.5 by hand.
    N, V, d, W, L = 70_553_706_496, 128_256, 8192, 3.35e12, 8192
    t = lambda b, ctx: ((N - V * d + b * d) * 2 + b * ctx * 327_680) / (8 * W)  # noqa: E731
    b = (t(93, L) / 2.5 * 8 * W - (N - V * d) * 2) / (2 * d + L * 327_680)
    f = serving.speed_for_price("llama-3.1-70b", "h100-sxm", L, 93, 2.5, n_chips=8)
    assert f.batch == pytest.approx(b, rel=1e-6) and f.speedup == pytest.approx(2.5, rel=1e-6)
    assert f.price_ratio == pytest.approx(93 / b / 2.5, rel=1e-6) and 5.5 < f.price_ratio < 6.5
    assert f.max_speedup == pytest.approx(t(93, L) / t(1, L), rel=1e-6)
    assert serving.speed_for_price("llama-3.1-70b", "h100-sxm", L, 93, 1.0, n_chips=8).price_ratio == 1.0
    with pytest.raises(ValueError, match=r"batch 1 is the floor"):
        serving.speed_for_price("llama-3.1-70b", "h100-sxm", 0, 93, 1.5, n_chips=8)   # no trade at L = 0
    with pytest.raises(ValueError, match=r"speedup must be >= 1"):
        serving.speed_for_price("llama-3.1-70b", "h100-sxm", L, 93, 0.5, n_chips=8)
