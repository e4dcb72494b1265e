"""Tests of llmmath.models: parameter counts, KV bytes, FLOPs, expected weight reads.

Every expected total is either a published integer (Hugging Face checkpoint
tensor counts) typed in here, or worked out by hand from the published config.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from llmmath import models

FAST = settings(max_examples=50, deadline=None)

# Published exact totals (HF checkpoint parameter counts / safetensors bytes / 2).
PUBLISHED_TOTAL = {
    "llama-2-7b": 6_738_415_616,
    "llama-2-70b": 68_976_648_192,
    "llama-3.1-8b": 8_030_261_248,
    "llama-3.1-70b": 70_553_706_496,
    "llama-3.1-405b": 405_853_388_800,
    "llama-3.2-1b": 1_235_814_400,
    "qwen3-4b": 4_022_468_096,
    "mixtral-8x7b": 46_702_792_704,
    "qwen3-30b-a3b": 30_532_122_624,
    "qwen3-235b-a22b": 235_093_634_560,
    "gpt-oss-120b": 116_829_156_672,
    "gpt-neox-20b": 20_554_567_680,          # its Hugging Face model card
}


@pytest.mark.parametrize("key, total", sorted(PUBLISHED_TOTAL.items()))
def test_total_equals_published_integer(key, total):
    m = models.get(key)
    assert isinstance(m.total_params, int)
    assert m.total_params == total


@pytest.mark.parametrize("key, total", sorted(PUBLISHED_TOTAL.items()))
def test_catalog_published_field_matches(key, total):
    assert models.get(key).published_total_params == total


# ---- hand arithmetic from the configs -------------------------------------------

def test_llama_2_7b_by_hand():
    # 32 layers x (q,k,v,o 4*4096^2 + SwiGLU 3*4096*11008 + 2 RMSNorms) + embed + head + final norm
    layer = 4 * 4096**2 + 3 * 4096 * 11008 + 2 * 4096
    total = 32 * layer + 2 * 32000 * 4096 + 4096
    assert total == 6_738_415_616
    assert models.get("llama-2-7b").total_params == total


def test_llama_3_1_8b_by_hand():
    # GQA: q and o 4096x4096, k and v 4096x(8*128)
    layer = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128 + 3 * 4096 * 14336 + 2 * 4096
    total = 32 * layer + 2 * 128256 * 4096 + 4096
    assert total == 8_030_261_248
    assert models.get("llama-3.1-8b").total_params == total


def test_llama_2_70b_and_3_1_70b_differ_only_in_vocab():
    layer = 2 * 8192 * 8192 + 2 * 8192 * 8 * 128 + 3 * 8192 * 28672 + 2 * 8192
    assert 80 * layer + 2 * 32000 * 8192 + 8192 == models.get("llama-2-70b").total_params
    assert 80 * layer + 2 * 128256 * 8192 + 8192 == models.get("llama-3.1-70b").total_params
    diff = models.get("llama-3.1-70b").total_params - models.get("llama-2-70b").total_params
    assert diff == 2 * (128256 - 32000) * 8192


def test_llama_3_1_405b_by_hand():
    layer = 2 * 16384**2 + 2 * 16384 * 8 * 128 + 3 * 16384 * 53248 + 2 * 16384
    assert 126 * layer + 2 * 128256 * 16384 + 16384 == models.get("llama-3.1-405b").total_params


def test_llama_3_2_1b_tied_by_hand():
    # tied embeddings: the 128256x2048 table is counted once
    layer = 2 * 2048 * 2048 + 2 * 2048 * 8 * 64 + 3 * 2048 * 8192 + 2 * 2048
    total = 16 * layer + 128256 * 2048 + 2048
    assert total == 1_235_814_400
    assert models.get("llama-3.2-1b").total_params == total


def test_qwen3_4b_by_hand():
    # 32 heads x 128 = 4096 wider than d_model 2560; per-head q/k RMSNorm (2*128); tied
    attn = 2560 * 4096 + 2 * 2560 * 8 * 128 + 4096 * 2560 + 2 * 128
    layer = attn + 3 * 2560 * 9728 + 2 * 2560
    assert 36 * layer + 151936 * 2560 + 2560 == models.get("qwen3-4b").total_params


def test_mixtral_by_hand():
    attn = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128
    expert = 3 * 4096 * 14336
    router = 4096 * 8
    total = 32 * (attn + router + 8 * expert + 2 * 4096) + 2 * 32000 * 4096 + 4096
    active = 32 * (attn + router + 2 * expert + 2 * 4096) + 2 * 32000 * 4096 + 4096
    assert total == 46_702_792_704
    m = models.get("mixtral-8x7b")
    assert m.total_params == total
    assert m.active_params == active
    assert active == pytest.approx(12.9e9, rel=2e-3)  # published "12.9B"
    assert m.expert_params == expert


# DeepSeek-V3, by hand from its config (MLA + DeepSeekMoE, 3 dense + 58 MoE layers)
DSV3_ATTN = (7168 * 1536 + 1536 + 1536 * 128 * (128 + 64)  # q down, q norm, q up
             + 7168 * (512 + 64) + 512 + 512 * 128 * (128 + 128)  # kv down, kv norm, kv up
             + 128 * 128 * 7168)  # o
DSV3_EXPERT = 3 * 7168 * 2048
DSV3_DENSE_LAYER = DSV3_ATTN + 3 * 7168 * 18432 + 2 * 7168
DSV3_ROUTER = 7168 * 256 + 256  # with e_score_correction_bias


def _dsv3(experts_per_layer):
    moe_layer = DSV3_ATTN + DSV3_ROUTER + experts_per_layer * DSV3_EXPERT + 2 * 7168
    return 3 * DSV3_DENSE_LAYER + 58 * moe_layer + 2 * 129280 * 7168 + 7168


def test_deepseek_v3_totals():
    m = models.get("deepseek-v3")
    assert m.attention_params_per_layer == DSV3_ATTN
    assert m.total_params == _dsv3(256 + 1)
    assert m.active_params == _dsv3(8 + 1)
    assert m.total_params == pytest.approx(671e9, rel=1e-3)
    assert m.active_params == pytest.approx(37e9, rel=2e-2)
    assert m.n_moe_layers == 58


def test_gpt3_within_half_percent_and_by_hand():
    d = 12288
    # LayerNorm weight+bias x2, qkv+o with biases, 4x MLP with biases (not gated)
    layer = 4 * d + (4 * d * d + 4 * d) + (2 * d * 4 * d + 4 * d + d)
    total = 96 * layer + 50257 * d + 2048 * d + 2 * d  # tied head, learned positions, final LN
    m = models.get("gpt-3-175b")
    assert m.total_params == total
    assert m.total_params == pytest.approx(175e9, rel=5e-3)


def test_nemo_gpt3_5b_by_hand():
    # NeMo-Megatron-Launcher's gpt3/5b.yaml: 24 layers, hidden 4096, ffn 4 x hidden, 32 heads, 2,048 learned
    # positions, GPT-2's 50,257-token vocabulary, shared input and output embeddings
    d, layers = 4096, 24
    ln, attn, mlp = 2 * 2 * d, 4 * d * d + 4 * d, 2 * d * (4 * d) + 4 * d + d
    total = layers * (ln + attn + mlp) + 50257 * d + 2048 * d + 2 * d
    m = models.get("nemo-gpt3-5b")
    assert m.total_params == total == 5_047_365_632
    assert m.total_params == pytest.approx(5e9, rel=0.01)
    assert not m.is_moe and m.d_ff == 4 * d


def test_opt_175b_and_mt_nlg_530b_by_hand():
    # OPT-175B: GPT-3's layers (96 x d 12288, 4 d MLP, biases, two LayerNorms) with a 50,272-token vocabulary;
    # MT-NLG: 105 layers of d 20480 with GPT-2's 50,257 tokens; both tied, 2,048 learned positions
    def gpt(d, layers, vocab):
        return layers * (12 * d * d + 13 * d) + vocab * d + 2048 * d + 2 * d
    assert models.get("opt-175b").total_params == gpt(12288, 96, 50272) == 174_604_443_648
    assert models.get("mt-nlg-530b").total_params == gpt(20480, 105, 50257) == 529_581_506_560
    assert models.get("mt-nlg-530b").total_params == pytest.approx(530e9, rel=2e-3)


def test_gpt_neox_20b_by_hand():
    # 44 layers of d 6144 (GELU MLP 24576, biases everywhere, two LayerNorms), rotary (no weights), untied head
    d = 6144
    layer = 4 * d + (3 * d * d + 3 * d) + (d * d + d) + (2 * d * 4 * d + 4 * d + d)
    assert models.get("gpt-neox-20b").total_params == 44 * layer + 2 * 50432 * d + 2 * d


@pytest.mark.parametrize("key", models.names())
def test_dense_models_active_equals_total(key):
    m = models.get(key)
    if not m.is_moe:
        assert m.active_params == m.total_params
        assert m.sparsity == 1.0 and m.expert_sparsity == 1.0
    else:
        assert m.active_params < m.total_params
        assert m.sparsity > 1.0


@pytest.mark.parametrize("key", models.names())
def test_published_active_within_tolerance(key):
    m = models.get(key)
    if m.published_active_params:
        # published active figures are rounded and differ on counting the input embedding
        lookup = m.vocab * m.d_model
        candidates = (m.active_params, m.active_params - lookup)
        assert min(abs(c / m.published_active_params - 1) for c in candidates) < 0.05


def test_mixtral_sparsity():
    m = models.get("mixtral-8x7b")
    assert m.sparsity == pytest.approx(46.7 / 12.9, rel=5e-3)
    assert m.expert_sparsity == 8 / 2
    assert models.get("deepseek-v3").expert_sparsity == 256 / 8


# ---- attention kinds and KV cache ----------------------------------------------

@pytest.mark.parametrize(
    "key, kind",
    [("llama-2-7b", "MHA"), ("gpt-3-175b", "MHA"), ("llama-2-70b", "GQA"),
     ("llama-3.1-8b", "GQA"), ("mixtral-8x7b", "GQA"), ("qwen3-4b", "GQA"),
     ("deepseek-v3", "MLA"), ("kimi-k2", "MLA")],
)
def test_attention_kind(key, kind):
    assert models.get(key).attention_kind == kind


def _toy(**kw):
    base = dict(key="toy", name="toy", n_layers=2, d_model=64, n_heads=8, n_kv_heads=1,
                head_dim=8, d_ff=128, vocab=100)
    base.update(kw)
    return models.Model(**base)


def test_mqa_toy_model():
    m = _toy()
    assert m.attention_kind == "MQA"
    assert m.kv_bytes_per_token("bf16") == 2 * 2 * 1 * 8 * 2  # K,V x layers x heads x dim x bytes
    # q 64x64, k,v 64x8 each, o 64x64
    assert m.attention_params_per_layer == 64 * 64 + 2 * 64 * 8 + 64 * 64


@pytest.mark.parametrize(
    "key, dtype, expected",
    [
        ("llama-3.1-8b", "bf16", 2 * 32 * 8 * 128 * 2),  # 131072 = 128 KiB
        ("llama-3.1-8b", "fp8", 2 * 32 * 8 * 128 * 1),
        ("llama-2-7b", "bf16", 2 * 32 * 32 * 128 * 2),  # MHA: 524288 = 512 KiB
        ("llama-3.1-70b", "bf16", 2 * 80 * 8 * 128 * 2),  # 327680
        ("deepseek-v3", "bf16", 61 * (512 + 64) * 2),  # MLA latent + rope key: 70272
        ("gpt-3-175b", "fp16", 2 * 96 * 96 * 128 * 2),
    ],
)
def test_kv_bytes_per_token(key, dtype, expected):
    assert models.get(key).kv_bytes_per_token(dtype) == expected


def test_kv_bytes_known_values():
    assert models.get("llama-3.1-8b").kv_bytes_per_token() == 131072
    assert models.get("deepseek-v3").kv_bytes_per_token() == 70272
    with pytest.raises(KeyError):
        models.get("llama-3.1-8b").kv_bytes_per_token("fp9")


# ---- FLOPs -----------------------------------------------------------------------

def test_matmul_params_per_token():
    # untied: the input lookup does no arithmetic
    assert models.get("llama-3.1-8b").matmul_params_per_token == 8_030_261_248 - 128256 * 4096
    # tied: the shared table is the LM head, so it stays
    assert models.get("llama-3.2-1b").matmul_params_per_token == 1_235_814_400
    # gpt-3: tied token table stays (as head), learned positions are a lookup
    assert models.get("gpt-3-175b").matmul_params_per_token == (
        models.get("gpt-3-175b").total_params - 2048 * 12288)
    mix = models.get("mixtral-8x7b")
    assert mix.matmul_params_per_token == mix.active_params - 32000 * 4096


def test_attention_flops_by_hand():
    m = models.get("llama-3.1-8b")
    assert m.attention_flops_per_token(1000) == 32 * 4 * 32 * 128 * 1000  # q.k and p.v
    ds = models.get("deepseek-v3")
    assert ds.attention_flops_per_token(1000) == 61 * 2 * 128 * (2 * 512 + 64) * 1000
    assert m.attention_flops_per_token(0) == 0.0
    out = m.attention_flops_per_token(np.array([0, 1, 10]))
    np.testing.assert_array_equal(out, 32 * 4 * 32 * 128 * np.array([0, 1, 10]))
    assert isinstance(m.attention_flops_per_token(5), float)


def test_flops_per_token_by_hand():
    m = models.get("llama-3.1-8b")
    n_mm = 8_030_261_248 - 128256 * 4096
    assert m.flops_per_token() == 2 * n_mm
    assert m.flops_per_token(4096) == 2 * n_mm + 32 * 4 * 32 * 128 * 4096


@pytest.mark.parametrize("bad, exc", [(-1, ValueError), (math.nan, ValueError), ("10", TypeError)])
def test_attention_flops_bad_context(bad, exc):
    with pytest.raises(exc, match="context"):
        models.get("llama-3.1-8b").attention_flops_per_token(bad)


# ---- expected weight reads in one decode step ---------------------------------

def test_expected_params_read_tied_dense_is_constant():
    m = models.get("llama-3.2-1b")
    for b in (1, 7, 300, 1e6):
        assert m.expected_params_read(b) == 1_235_814_400


@FAST
@given(st.floats(min_value=1, max_value=1e6))
def test_expected_params_read_untied_dense(b):
    # All non-embedding weights once, plus one looked-up embedding row per token (at most vocab).
    m = models.get("llama-3.1-8b")
    non_embedding = 8_030_261_248 - 128256 * 4096
    assert m.weights_read_params == non_embedding
    expected = non_embedding + min(b, 128256) * 4096
    assert m.expected_params_read(b) == pytest.approx(expected, rel=1e-12)


def test_expected_params_read_moe_batch_1_by_hand():
    # batch 1: dense parts + k of E experts per MoE layer + one embedding row
    attn = 2 * 4096 * 4096 + 2 * 4096 * 8 * 128
    expert = 3 * 4096 * 14336
    dense_part = 32 * (attn + 4096 * 8 + 2 * 4096) + 32000 * 4096 + 4096  # + head + final norm
    m = models.get("mixtral-8x7b")
    assert m.expected_params_read(1) == pytest.approx(dense_part + 32 * 2 * expert + 4096, rel=1e-12)

    ds = models.get("deepseek-v3")
    ds_dense = _dsv3(1) - 129280 * 7168  # shared expert always read; no input table
    assert ds.expected_params_read(1) == pytest.approx(ds_dense + 58 * 8 * DSV3_EXPERT + 7168, rel=1e-12)


@FAST
@given(st.floats(min_value=1, max_value=5000))
def test_expected_params_read_moe_hand_formula(b):
    # uniform routing: an expert is missed by all B tokens with probability (1 - k/E)^B
    m = models.get("mixtral-8x7b")
    expert = 3 * 4096 * 14336
    all_experts = 32 * 8 * expert
    dense_part = 46_702_792_704 - all_experts - 32000 * 4096
    expected = dense_part + min(b, 32000) * 4096 + all_experts * (1 - (1 - 2 / 8) ** b)
    assert m.expected_params_read(b) == pytest.approx(expected, rel=1e-12)


@FAST
@given(st.floats(min_value=1, max_value=1e4), st.floats(min_value=1e-3, max_value=1e4))
def test_expected_params_read_moe_monotone(b, db):
    for key in ("mixtral-8x7b", "deepseek-v3"):
        m = models.get(key)
        lo, hi = m.expected_params_read(b), m.expected_params_read(b + db)
        assert hi >= lo
        assert hi <= m.total_params


def test_expected_params_read_moe_limit():
    for key in ("mixtral-8x7b", "deepseek-v3", "qwen3-30b-a3b"):
        m = models.get(key)
        # strictly increasing while experts are still being discovered
        reads = m.expected_params_read(np.array([1.0, 2, 4, 8, 16]))
        assert np.all(np.diff(reads) > 0)
        # once B >> E/k every expert is read: weights_read_params + the looked-up rows
        b = 4096
        rows = b * m.d_model
        assert m.expected_params_read(b) - rows == pytest.approx(m.weights_read_params, rel=1e-9)
        assert m.expected_params_read(b) == pytest.approx(m.weights_read_params, rel=1e-3)
        # weights_read_params = everything but the untied input table
        assert m.weights_read_params == m.total_params - m.vocab * m.d_model


def test_expected_params_read_vectorized_and_errors():
    m = models.get("mixtral-8x7b")
    bs = np.array([1.0, 3.0, 50.0])
    np.testing.assert_allclose(m.expected_params_read(bs), [m.expected_params_read(b) for b in bs], rtol=1e-15)
    assert isinstance(m.expected_params_read(3), float)
    for bad in (0, -1, math.nan):
        with pytest.raises(ValueError, match="batch"):
            m.expected_params_read(bad)


def test_weight_bytes_match_safetensors_sizes():
    # HF model.safetensors.index.json metadata.total_size (bf16)
    assert models.get("llama-3.1-8b").weight_bytes("bf16") == 16_060_522_496
    assert models.get("llama-3.1-70b").weight_bytes() == 141_107_412_992
    assert models.get("qwen3-4b").weight_bytes("bf16") == 8_044_936_192
    assert models.get("llama-3.1-8b").weight_bytes("fp8") == 8_030_261_248
    assert models.get("llama-3.1-8b").weight_bytes("fp4") == 8_030_261_248 / 2


# ---- lookup and validation -------------------------------------------------------

def test_get_case_insensitive_and_passthrough():
    m = models.get("llama-3.1-8b")
    assert models.get("Llama-3.1-8B") is m
    assert models.get(m) is m
    assert repr(m) == "Model('llama-3.1-8b')"


def test_unknown_model_suggests_close_name():
    with pytest.raises(KeyError) as e:
        models.get("llama-3.1-7b")
    closest = str(e.value).split("; all:")[0]
    assert "closest:" in closest
    assert "llama-3.1-8b" in closest or "llama-3.1-70b" in closest


def test_model_name_must_be_string():
    with pytest.raises(TypeError):
        models.get(7)


@pytest.mark.parametrize(
    "kw, field",
    [
        (dict(n_heads=8, n_kv_heads=3), "n_kv_heads"),
        (dict(n_kv_heads=0), "n_kv_heads"),
        (dict(n_layers=0), "n_layers"),
        (dict(norm="batchnorm"), "norm"),
        (dict(pos_embedding="sinusoidal"), "pos_embedding"),
        (dict(n_experts=4, experts_per_token=5, d_ff_expert=32), "experts_per_token"),
        (dict(n_experts=4, experts_per_token=0, d_ff_expert=32), "experts_per_token"),
    ],
)
def test_model_validation(kw, field):
    with pytest.raises(ValueError, match=field):
        _toy(**kw)


def test_toy_moe_counts_by_hand():
    m = _toy(n_kv_heads=8, d_ff=0, n_experts=4, experts_per_token=2, d_ff_expert=32,
             tied_embeddings=True)
    attn = 4 * 64 * 64
    layer = attn + 64 * 4 + 4 * 3 * 64 * 32 + 2 * 64
    assert m.total_params == 2 * layer + 100 * 64 + 64
    assert m.active_params == m.total_params - 2 * 2 * 3 * 64 * 32
    # tied: nothing is a pure lookup, so a step at huge batch reads everything
    assert m.weights_read_params == m.total_params
    assert m.expected_params_read(1e6) == pytest.approx(m.total_params)
