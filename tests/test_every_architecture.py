"""Every architecture a user brings, through every door: each catalog model and each config fixture in
``tests/hf_configs/`` is planned, predicted, simulated, trained for one step and searched for a training layout.

The property is the contract of the entry points, not a number: each answers with finite, positive figures, or
refuses with a ValueError that says what was wrong; search_layouts returns layouts or says why none fits. A new
layer kind wired into one door and not another (a KV count that ignores linear or chunked layers, a training step
that divides by a zero dense width) breaks it.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import numpy as np
import pytest

from llmmath import engine, models, planner, training_layout

HERE = Path(__file__).resolve().parent / "hf_configs"


# fixtures the reader still refuses, with what its message must name (none at present)
REFUSED: dict[str, str] = {}


def _fixture_models():
    out = {}
    for p in sorted(HERE.glob("*.json")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if p.stem in REFUSED:
                with pytest.raises(ValueError, match=REFUSED[p.stem]):
                    models.from_hf_config(p, name=p.stem)
                continue
            out[p.stem] = models.from_hf_config(p, name=p.stem)
    return out


FIXTURES = _fixture_models()
ALL = {**{k: models.get(k) for k in models.names()}, **{k: m for k, m in FIXTURES.items() if k not in models.names()}}


@pytest.mark.parametrize("key", sorted(ALL))
def test_every_architecture_goes_through_every_door(key):
    m = ALL[key]
    wd = "bf16" if m.total_params * 2 < 0.8 * 8 * 141e9 else "fp8"
    # serving: eight H200s hold every model here, in the widest tensor-parallel group its heads allow (Phi-4's 10 KV
    # heads refuse TP8 and TP4, by the one placement rule)
    for tp in (8, 4, 2, 1):
        try:
            p = planner.plan(m, "h200", 8, context=4096, tp=tp, weight_dtype=wd)
            break
        except ValueError as e:
            assert f"tp={tp} must divide" in str(e), (key, str(e))
    assert p.fits and p.max_batch >= 1 and math.isfinite(p.at_batch.tokens_per_s_per_chip), key
    pr = planner.predict(m, "h200", 8, input_tokens=2000, output_tokens=200, tp=tp, weight_dtype=wd)
    assert pr.batch >= 1 and pr.tokens_per_s_per_chip > 0, key
    assert 0 < pr.ttft_s < 60 and 0 < pr.tpot_s < 10, key
    r = engine.simulate(m, "h200", 8, requests_per_s=2.0, n_requests=40, input_tokens=2000, output_tokens=200, tp=tp,
                        weight_dtype=wd, seed=1)
    assert np.all(np.isfinite(r.finish_times_s)) and np.all(r.tpot_s > 0), key
    # training: one step on 64 H100s, or a refusal that names the limit; the search says why when nothing fits
    try:
        s = training_layout.training_step(m, "h100-sxm", global_batch=256, seq_len=4096, tp=tp, pp=1, dp=64 // tp,
                                          recompute="full")
        assert math.isfinite(s.step_time_s) and s.step_time_s > 0, key
    except ValueError as e:
        assert len(str(e)) > 20, key
    found = training_layout.search_layouts(m, "h100-sxm", 64, 256, 4096, pps=(1, 2, 4), cps=(1,),
                                           micro_batches=(1,))
    assert len(found) > 0 or found.why, key


def test_the_plan_reports_the_state_apart_from_the_cache_that_grows():
    # Qwen3-Next at 32,768 tokens: 24,576 bytes of K/V a token in its 12 attention layers, and 36 Gated DeltaNet
    # layers' state, 32 x 128 x 128 + 8,192 x 3 values each at 2 bytes, whatever the context
    p = planner.plan("qwen3-next-80b-a3b", "h200", 2, context=32768, tp=2)
    state = 36 * (32 * 128 * 128 + 8192 * 3) * 2
    assert p.state_bytes_per_sequence == state
    assert p.kv_bytes_per_sequence == 32768 * 24576 + state
    assert "of fixed linear-layer state" in dict(p.rows())["KV cache per sequence (all chips)"]
    d = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=32768)
    assert d.state_bytes_per_sequence == 0 and "state" not in dict(d.rows())["KV cache per sequence (all chips)"]


def test_the_placement_rule_for_linear_heads_names_what_is_allowed():
    # a Gated DeltaNet layer's heads stay whole on a chip: 12 key and 24 value heads refuse TP8 though the 16
    # attention heads would take it
    import dataclasses
    from llmmath.deployment import Deployment
    m = dataclasses.replace(models.get("qwen3-next-80b-a3b"), key="gdn-12", linear_key_heads=12, linear_value_heads=24)
    with pytest.raises(ValueError, match=r"tp=8 must divide gdn-12's linear layers' 12 key heads \(groups\) and its "
                                         r"24 value heads .*allowed: \[1, 2, 4\]"):
        Deployment(m, "h200", 8, tp=8)
    assert Deployment(m, "h200", 8, tp=4).placement.tp == 4
    # a Mamba-2 mixer's B/C groups may be fewer than the chips (each keeps a copy: vLLM's MambaMixer2), its heads not
    m2 = dataclasses.replace(m, key="m2-1", linear_kind="mamba2", linear_key_heads=1, linear_value_heads=24,
                             attn_output_gate=False)
    assert Deployment(m2, "h200", 8, tp=8).placement.tp == 8
    with pytest.raises(ValueError, match=r"1 key heads \(groups\) or be a multiple of them and its 20 value heads .*allowed: \[1, 2, 4\]"):
        Deployment(dataclasses.replace(m2, linear_value_heads=20), "h200", 16, tp=16)
