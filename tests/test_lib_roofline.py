"""Tests of llmmath.roofline: max/sum semantics, intensity, ridge point, validation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from llmmath import roofline

FAST = settings(max_examples=50, deadline=None)

F_H100, W_H100 = 989.5e12, 3.35e12  # datasheet: bf16 dense FLOP/s, HBM3 bytes/s

pos = st.floats(min_value=1e-3, max_value=1e18, allow_nan=False, allow_infinity=False)
nonneg = st.floats(min_value=0, max_value=1e18, allow_nan=False, allow_infinity=False)


# ---- worked examples ------------------------------------------------------------

def test_compute_and_memory_time():
    # 2 * 4096^3 FLOPs of a square bf16 matmul on an H100
    flops = 2 * 4096**3
    assert roofline.compute_time_s(flops, F_H100) == pytest.approx(137_438_953_472 / 989.5e12)
    # reading 16 GB of weights at 3.35 TB/s: 4.78 ms
    assert roofline.memory_time_s(16e9, W_H100) == pytest.approx(16 / 3350)
    assert roofline.compute_time_s(0, F_H100) == 0.0


def test_roofline_max_and_sum():
    # compute 1 s, memory 3 s
    assert roofline.roofline_time_s(10.0, 6.0, 10.0, 2.0) == 3.0
    assert roofline.roofline_time_s(10.0, 6.0, 10.0, 2.0, overlap="max") == 3.0
    assert roofline.roofline_time_s(10.0, 6.0, 10.0, 2.0, overlap="sum") == 4.0
    # compute-bound case: compute 5 s, memory 0.5 s
    assert roofline.roofline_time_s(50.0, 1.0, 10.0, 2.0) == 5.0
    assert roofline.roofline_time_s(50.0, 1.0, 10.0, 2.0, overlap="sum") == 5.5


def test_matrix_vector_product_is_memory_bound_on_h100():
    # y = W x with W 8192x8192 bf16: 2*8192^2 FLOPs, 2*8192^2 bytes -> intensity 1 FLOP/byte
    flops, nbytes = 2 * 8192**2, 2 * 8192**2
    assert roofline.arithmetic_intensity(flops, nbytes) == 1.0
    assert roofline.roofline_time_s(flops, nbytes, F_H100, W_H100) == pytest.approx(nbytes / W_H100)
    assert roofline.attainable_flops_per_s(1.0, F_H100, W_H100) == pytest.approx(W_H100)


def test_balance_point_h100():
    assert roofline.balance_point(F_H100, W_H100) == pytest.approx(295.37, abs=0.01)
    assert roofline.balance_point(312e12, 2.039e12) == pytest.approx(153.02, abs=0.01)  # A100


def test_attainable_piecewise():
    F, W = 100.0, 10.0  # ridge at 10 FLOP/byte
    assert roofline.attainable_flops_per_s(0.0, F, W) == 0.0
    assert roofline.attainable_flops_per_s(2.0, F, W) == 20.0  # slope W below the ridge
    assert roofline.attainable_flops_per_s(10.0, F, W) == 100.0  # at the ridge
    assert roofline.attainable_flops_per_s(50.0, F, W) == 100.0  # flat roof above
    out = roofline.attainable_flops_per_s(np.array([1.0, 5.0, 10.0, 20.0]), F, W)
    np.testing.assert_array_equal(out, [10.0, 50.0, 100.0, 100.0])


def test_scalar_in_float_out_array_in_array_out():
    assert type(roofline.roofline_time_s(1, 1, 1, 1)) is float
    assert type(roofline.arithmetic_intensity(1, 2)) is float
    out = roofline.roofline_time_s(np.array([1.0, 4.0]), np.array([[2.0], [8.0]]), 1.0, 1.0)
    assert out.shape == (2, 2)
    np.testing.assert_array_equal(out, [[2.0, 4.0], [8.0, 8.0]])
    out = roofline.memory_time_s([1.0, 2.0], 2.0)  # lists are accepted
    np.testing.assert_array_equal(out, [0.5, 1.0])


# ---- properties ------------------------------------------------------------------

@FAST
@given(nonneg, nonneg, pos, pos)
def test_max_sum_bounds(flops, nbytes, F, W):
    tc, tm = flops / F, nbytes / W
    t_max = roofline.roofline_time_s(flops, nbytes, F, W)
    t_sum = roofline.roofline_time_s(flops, nbytes, F, W, overlap="sum")
    assert t_max == pytest.approx(max(tc, tm), rel=1e-12)
    assert t_sum == pytest.approx(tc + tm, rel=1e-12)
    assert t_max <= t_sum * (1 + 1e-12)
    assert t_sum <= 2 * t_max * (1 + 1e-12)
    assert t_max == pytest.approx(max(roofline.compute_time_s(flops, F), roofline.memory_time_s(nbytes, W)), rel=1e-12)


@FAST
@given(st.floats(min_value=0, max_value=1e6), pos, pos)
def test_attainable_matches_min_and_time(intensity, F, W):
    got = roofline.attainable_flops_per_s(intensity, F, W)
    assert got == pytest.approx(min(F, intensity * W), rel=1e-12)
    assert got <= F * (1 + 1e-12)
    ridge = roofline.balance_point(F, W)
    if intensity >= ridge:
        assert got == pytest.approx(F, rel=1e-12)
    else:
        assert got == pytest.approx(intensity * W, rel=1e-12)


@FAST
@given(st.floats(min_value=1, max_value=1e15), st.floats(min_value=1, max_value=1e15), pos, pos)
def test_attainable_consistent_with_roofline_time(flops, nbytes, F, W):
    # FLOPs / roofline time == attainable FLOP/s at the kernel's intensity
    t = roofline.roofline_time_s(flops, nbytes, F, W)
    intensity = roofline.arithmetic_intensity(flops, nbytes)
    assert flops / t == pytest.approx(roofline.attainable_flops_per_s(intensity, F, W), rel=1e-9)


# ---- bad input names the argument ------------------------------------------------

@pytest.mark.parametrize(
    "call, exc, arg",
    [
        (lambda: roofline.roofline_time_s(-1, 1, 1, 1), ValueError, "flops"),
        (lambda: roofline.roofline_time_s(1, -1, 1, 1), ValueError, "n_bytes"),
        (lambda: roofline.roofline_time_s(1, 1, 0, 1), ValueError, "flops_per_s"),
        (lambda: roofline.roofline_time_s(1, 1, 1, 0), ValueError, "bytes_per_s"),
        (lambda: roofline.roofline_time_s(1, 1, 1, -3.35e12), ValueError, "bytes_per_s"),
        (lambda: roofline.roofline_time_s(math.nan, 1, 1, 1), ValueError, "flops"),
        (lambda: roofline.roofline_time_s(1, math.inf, 1, 1), ValueError, "n_bytes"),
        (lambda: roofline.roofline_time_s("1", 1, 1, 1), TypeError, "flops"),
        (lambda: roofline.roofline_time_s(1, None, 1, 1), TypeError, "n_bytes"),
        (lambda: roofline.roofline_time_s(1, 1, [1, "x"], 1), TypeError, "flops_per_s"),
        (lambda: roofline.compute_time_s(1, 0), ValueError, "flops_per_s"),
        (lambda: roofline.compute_time_s(b"1", 1), TypeError, "flops"),
        (lambda: roofline.memory_time_s(1, 0), ValueError, "bytes_per_s"),
        (lambda: roofline.memory_time_s(-5, 1), ValueError, "n_bytes"),
        (lambda: roofline.arithmetic_intensity(1, 0), ValueError, "n_bytes"),
        (lambda: roofline.arithmetic_intensity(-1, 1), ValueError, "flops"),
        (lambda: roofline.balance_point(1, 0), ValueError, "bytes_per_s"),
        (lambda: roofline.balance_point(math.nan, 1), ValueError, "flops_per_s"),
        (lambda: roofline.balance_point("989e12", 1), TypeError, "flops_per_s"),
        (lambda: roofline.attainable_flops_per_s(-1, 1, 1), ValueError, "intensity"),
        (lambda: roofline.attainable_flops_per_s(1, 1, 0), ValueError, "bytes_per_s"),
        (lambda: roofline.attainable_flops_per_s(np.array([1.0, np.nan]), 1, 1), ValueError, "intensity"),
    ],
)
def test_bad_input_names_argument(call, exc, arg):
    with pytest.raises(exc, match=rf"^{arg} must"):
        call()


def test_bad_array_element_reports_index():
    with pytest.raises(ValueError, match=r"index \(1,\)"):
        roofline.memory_time_s(np.array([1.0, -2.0]), 1.0)


def test_unknown_overlap():
    with pytest.raises(ValueError, match="overlap"):
        roofline.roofline_time_s(1, 1, 1, 1, overlap="min")
