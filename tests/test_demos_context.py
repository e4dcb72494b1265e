"""The long-context toy decode step (``llmmath.demos.context``): its bookkeeping, by hand; no timing asserts.

Chapter 3 (claim 11) and chapter 8 (claims 33, 34) time the toy on the reader's machine and check physical facts
about the times with ``measured.check``; here only what does not depend on the machine: the FLOP and byte counts,
the balance batch and crossovers from them, that the timed functions compute what they say, the shapes of the
results, and the refusal of bad sizes.
"""

from __future__ import annotations

import numpy as np
import pytest

from llmmath.demos import context, kernels

F, W = 100e9, 20e9    # made-up ceilings for the formulas (FLOP/s, bytes/s)


def test_flop_and_byte_counts_by_hand():
    # B = 3 sequences, L = 5 tokens, d = 8: 2 B d^2 + 4 B L d = 384 + 480
    assert context.toy_flops(3, 5, 8) == 864
    # 4 (d^2 + B (2 L d + 4 d + 2 L)) = 4 (64 + 3 (80 + 32 + 10)) = 4 x 430
    assert context.toy_bytes(3, 5, 8) == 1720
    assert context.weight_bytes(1024) == 4 * 2**20
    assert context.kv_bytes_per_token(1024) == 8192            # a key and a value of 1,024 fp32 values
    assert context.crossover_context(1024) == 512              # 4 d^2 / 8 d = d / 2
    assert context.crossover_context(1024, batch=4) == 128     # the batch's KV: d / (2 B)
    # broadcasts: contexts down, batches across
    grid = context.toy_flops(np.array([1, 2])[None, :], np.array([0, 10])[:, None], 4)
    assert grid.tolist() == [[32, 64], [192, 384]]


def test_balance_batch_and_kv_limit_by_hand():
    d = 64
    # L = 0: B* = (4 d^2 / W) / (2 d^2 / F - 16 d / W)
    hand = (4 * d * d / W) / (2 * d * d / F - 16 * d / W)
    assert context.balance_batch(0, d, F, W) == pytest.approx(hand, rel=1e-12)
    # at B*, the step's compute time equals its memory time (L below L_max)
    L_max = context.kv_limit_context(d, F, W)
    assert L_max == pytest.approx((2 * d * d / F - 16 * d / W) / ((8 * d + 8) / W - 4 * d / F), rel=1e-12)
    for L in (0, L_max / 3, L_max / 1.5):
        b = context.balance_batch(L, d, F, W)
        assert context.toy_flops(b, L, d) / F == pytest.approx(context.toy_bytes(b, L, d) / W, rel=1e-9)
    Bs = context.balance_batch(np.array([0.0, L_max / 2, L_max * 0.99]), d, F, W)
    assert np.all(np.diff(Bs) > 0)                              # B* rises with the context (claim 11) ...
    assert context.balance_batch(L_max * 1.01, d, F, W) == np.inf          # ... and does not exist past L_max
    # attention at or above the machine's F / W (0.5 FLOP per byte and up): no limit
    assert context.kv_limit_context(d, 1e9, 100e9) == np.inf


def test_step_functions_compute_what_they_say():
    be = kernels.backend()
    rng = np.random.default_rng(0)
    B, L, d = 3, 5, 128
    Wt = rng.standard_normal((d, d), dtype=np.float32)
    X = rng.standard_normal((B, d), dtype=np.float32)
    K, V = rng.standard_normal((2, B, 7, d), dtype=np.float32)     # a cache of 7 tokens, the first 5 used
    ((label, weight_fn, Y),) = context._weights_for_batches(be, Wt, X, [B]).values()
    assert label == "plain" or label.startswith("blocks ")
    Y[:] = 0
    weight_fn()
    np.testing.assert_allclose(Y, X @ Wt, rtol=1e-4, atol=1e-3)
    out = context._attention(be, K, V, Y, B, L)()
    ref = np.stack([(K[b, :L] @ Y[b]) @ V[b, :L] for b in range(B)])
    assert out.shape == (B, 1, d)
    np.testing.assert_allclose(out[:, 0], ref, rtol=1e-3, atol=1e-1)


def test_every_block_layout_writes_the_product_back_into_its_rows(monkeypatch):
    be = kernels.backend()
    if be.is_gpu:
        pytest.skip("the block layouts are the CPU path")
    rng = np.random.default_rng(1)
    d, B = 128, 4
    Wt = rng.standard_normal((d, d), dtype=np.float32)
    X = rng.standard_normal((B, d), dtype=np.float32)
    blocked = context._ToyBlocked(Wt, be)
    assert blocked.blocks() == [(128, 64), (128, 32), (32, 64), (32, 32)]   # the whole d or a quarter, 64 or 32 wide
    for shape in blocked.blocks_for(B):
        want = f"blocks {shape[0]}x{shape[1]}"

        def pick(cands, **_):      # time nothing: make this layout the fastest
            return {k: kernels.Timing((1.0 if k == want else 2.0,)) for k in cands}
        monkeypatch.setattr(context.kernels, "time_interleaved", pick)
        Y = np.zeros((B, d), dtype=np.float32)
        label, fn = context._weight_product(be, Wt, X, Y, blocked)
        assert label == want
        fn()
        np.testing.assert_allclose(Y, X @ Wt, rtol=1e-4, atol=1e-3)


def test_batch_context_sweep_shapes_and_predictions_by_hand():
    sw = context.batch_context_sweep(batches=(1, 2, 4), contexts=(0, 8, 16), d_model=64, rounds=1)
    assert sw.measured_s.shape == (3, 3) and np.all(sw.measured_s > 0)
    assert len(sw.formulation) == 3
    assert sw.flops[2, 1] == 2 * 2 * 64**2 + 4 * 2 * 16 * 64             # L = 16, B = 2
    assert sw.bytes[1, 2] == 4 * (64**2 + 4 * (2 * 8 * 64 + 4 * 64 + 2 * 8))   # L = 8, B = 4
    np.testing.assert_allclose(sw.predicted_s, np.maximum(sw.flops / sw.flops_per_s, sw.bytes / sw.bytes_per_s))
    np.testing.assert_allclose(sw.per_sequence_s, sw.measured_s / np.array([1, 2, 4]))
    assert sw.fitted_knees.shape == sw.predicted_knees.shape == sw.balance_batches.shape == (3,)
    # F is at least the rate every timed step reached
    assert sw.flops_per_s >= np.max(sw.flops / sw.measured_s) * (1 - 1e-12)
    assert len(sw.table().splitlines()) == 4


def test_knees_of_a_known_sweep():
    # times shaped s max(K, B) with K = 8 at L = 0 and K = 2 at L = 256: the fit finds each
    Bs = np.array([1, 2, 4, 8, 16, 32, 64], dtype=float)
    t = np.array([1e-4 * np.maximum(8, Bs), 3e-4 * np.maximum(2, Bs)])
    sw = context.BatchContextSweep(Bs, np.array([0.0, 256.0]), t, 1024, F, W, W, "made up")
    np.testing.assert_allclose(sw.fitted_knees, [8, 2], rtol=0.02)


def test_context_sweep_shapes_and_bookkeeping():
    r = context.context_sweep(contexts=(4, 8, 16, 32, 64), d_model=64, rounds=1)
    assert r.step_s.shape == r.attention_s.shape == (5,) and np.all(r.step_s > 0) and r.weights_s > 0
    assert r.crossover_context == 32
    np.testing.assert_allclose(r.kv_bytes, 8 * 64 * np.array([4, 8, 16, 32, 64]))
    np.testing.assert_allclose(r.kv_bytes_per_s, r.kv_bytes / r.attention_s)
    np.testing.assert_allclose(r.attention_arithmetic_s, 4 * r.contexts * 64 / r.flops_per_s)
    np.testing.assert_allclose(r.predicted_s, np.maximum(context.toy_flops(1, r.contexts, 64) / r.flops_per_s,
                                                         context.toy_bytes(1, r.contexts, 64) / r.bytes_per_s))
    assert r.predicted_weights_s == pytest.approx(max(2 * 64**2 / r.flops_per_s, 4 * (64**2 + 128) / r.bytes_per_s))
    assert np.isfinite(r.slope(4, 16)) and np.isfinite(r.predicted_slope(32, 64))
    with pytest.raises(ValueError, match="at least two contexts in"):
        r.slope(5, 15)
    assert len(r.table().splitlines()) == 6


def test_measured_crossover_interpolates_in_logs():
    def sweep(attention_s, weights_s):
        n = len(attention_s)
        return context.ContextSweep(np.array([1.0, 2, 4, 8][:n]), np.ones(n), np.array(attention_s, dtype=float),
                                    weights_s, 64, F, W, W, "made up")
    # attention 2 at L = 2 and 4 at L = 4, weights 3: the line through them in logs crosses 3 at L = 3
    assert sweep([1, 2, 4, 8], 3.0).measured_crossover_context == pytest.approx(3.0)
    assert np.isnan(sweep([1, 2, 4, 8], 20.0).measured_crossover_context)      # never as slow as the weights
    assert np.isnan(sweep([1, 2, 4, 8], 0.5).measured_crossover_context)       # slower at every context


@pytest.mark.parametrize("call, match", [
    (lambda: context.batch_context_sweep(batches=(0, 2)), "each of batches must be a whole number >= 1"),
    (lambda: context.batch_context_sweep(batches=(4,)), "batches must list at least 2"),
    (lambda: context.batch_context_sweep(batches=(4, 2)), "batches must increase strictly"),
    (lambda: context.batch_context_sweep(batches=(1, 2.5)), "whole number"),
    (lambda: context.batch_context_sweep(batches=(True, 2)), "whole number"),
    (lambda: context.batch_context_sweep(batches=3), "batches must be a list of whole numbers"),
    (lambda: context.batch_context_sweep(contexts=(-1, 8)), "each of contexts must be a whole number >= 0"),
    (lambda: context.batch_context_sweep(d_model=0), "d_model must be a whole number >= 1"),
    (lambda: context.batch_context_sweep(rounds=0), "rounds must be a whole number >= 1"),
    (lambda: context.batch_context_sweep(max_cache_bytes=2**20), r"the KV cache would take 0\.12 GiB"),
    (lambda: context.context_sweep(contexts=(8, 16)), "contexts must list at least 3"),
    (lambda: context.context_sweep(contexts=(0, 8, 16)), "each of contexts must be a whole number >= 1"),
    (lambda: context.context_sweep(contexts=(8, 16, 2**30)), "the KV cache would take"),
    (lambda: context.balance_batch(-1, 64, F, W), "context must be finite and >= 0"),
    (lambda: context.balance_batch(0, 64, 0, W), "flops_per_s must be a finite number > 0"),
    (lambda: context.kv_limit_context(64, F, float("nan")), "bytes_per_s must be a finite number > 0"),
    (lambda: context.crossover_context(64, batch=0), "batch must be a whole number >= 1"),
    (lambda: context.toy_flops(1, 1, 0.5), "d_model must be a whole number >= 1"),
])
def test_bad_sizes_are_refused_with_a_clear_message(call, match):
    with pytest.raises(ValueError, match=match):
        call()
