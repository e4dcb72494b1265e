"""Speculative decoding and MTP on the roofline (llmmath.speculative), by hand."""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import speculative as S


def test_expected_tokens_per_step_by_hand():
    assert S.expected_tokens_per_step(1, 0.85) == pytest.approx(1.85)             # DeepSeek-V3's MTP, 85% kept
    assert S.expected_tokens_per_step(3, 0.7) == pytest.approx(1 + 0.7 + 0.49 + 0.343)
    assert S.expected_tokens_per_step(4, 1.0) == 5 and S.expected_tokens_per_step(2, 0.0) == 1
    # gpt-oss-120b's published per-position acceptance falls faster than alpha^i: the independent formula at
    # alpha = p_1 over-predicts (2.22 against 2.13)
    per_position = S.expected_tokens_per_step(4, [0.58, 0.31, 0.16, 0.08])
    independent = S.expected_tokens_per_step(4, 0.58)
    assert per_position == pytest.approx(2.13) and independent == pytest.approx(2.2247, abs=1e-4)
    assert per_position < independent


@pytest.mark.parametrize("k,acc,match", [(0, 0.5, "draft_tokens"), (2, 1.5, r"\[0, 1\]"), (2, [0.5], "one acceptance"),
                                         (2, [0.3, 0.6], "must not rise")])
def test_bad_acceptance_is_refused(k, acc, match):
    with pytest.raises(ValueError, match=match):
        S.expected_tokens_per_step(k, acc)


def test_memory_bound_verify_is_nearly_free_and_compute_bound_verify_is_not():
    # Llama-3.1-70B on 8 H100s, no context, a free draft of 3 tokens kept 70% of the time. At B = 1 the verify
    # step reads the weights once for 4 tokens: (N - V d + 4 d) 2 / (8 W) against (N - V d + d) 2 / (8 W).
    N, V, d, W = 70_553_706_496, 128_256, 8192, 3.35e12
    t1, t4 = ((N - V * d + d) * 2 / (8 * W)), ((N - V * d + 4 * d) * 2 / (8 * W))
    s = S.speculative_decode("llama-3.1-70b", "h100-sxm", 1, 0, 8, draft_tokens=3, acceptance=0.7, draft_fraction=0)
    assert float(s.speedup) == pytest.approx(2.533 * t1 / t4, rel=1e-3)
    # far past the balance batch both steps are compute-bound: 4 tokens cost 4x, the gain is E / (k + 1) < 1
    big = S.speculative_decode("llama-3.1-70b", "h100-sxm", 16384, 0, 8, draft_tokens=3, acceptance=0.7,
                               draft_fraction=0)
    assert bool(big.verify_compute_bound) and float(big.speedup) == pytest.approx(2.533 / 4, rel=1e-3)
    # long context makes the step memory-bound again (the KV is read once for all 4 tokens): the gain returns
    far = S.speculative_decode("llama-3.1-70b", "h100-sxm", 16384, 32768, 8, draft_tokens=3, acceptance=0.7,
                               draft_fraction=0)
    assert float(far.speedup) > 2.0


def test_deepseek_v3_mtp_gives_its_published_speedup_at_serving_batches_and_shrinks_past_them():
    # V3 report, section 5.4.3: the second token is accepted 85-90% of the time, ~1.8x tokens per second. fp8 on
    # 8 H200s, 4k context: at a few hundred sequences (every expert already touched) the gain is 1.8-1.9x.
    B = np.array([256, 512, 1024, 16384])
    for a in (0.85, 0.90):
        s = S.speculative_decode("deepseek-v3", "h200", B, 4096, 8, acceptance=a, weight_dtype="fp8")
        assert np.all((s.speedup[:3] > 1.55) & (s.speedup[:3] < 1.95))
        assert s.speedup[-1] < 1.0 and bool(s.verify_compute_bound[-1])
    # the MTP draft: one more MoE block and a second pass through the head, a few per cent of a step's weights
    assert 0.01 < S.mtp_draft_fraction("deepseek-v3", 1, "fp8") < 0.06
