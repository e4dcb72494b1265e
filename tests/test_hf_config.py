"""models.from_hf_config: every catalog model rebuilt from its config.json; windows; odd precisions.

The fixtures in ``tests/hf_configs/`` are the published ``config.json`` files (each
names its source in ``_source``), a few hundred bytes to 2 KB each; nothing is downloaded.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

from llmmath import _hf_config, attention, models, serving

HERE = Path(__file__).resolve().parent / "hf_configs"
META = {"key", "name", "source", "published_total_params", "published_active_params", "published_total_source",
        "note", "unmodelled_config_fields"}


def _cfg(name: str) -> dict:
    return json.loads((HERE / f"{name}.json").read_text())


def test_every_catalog_model_has_a_small_fixture():
    have = {p.stem for p in HERE.glob("*.json")}
    assert set(models.names()) <= have
    for p in HERE.glob("*.json"):
        assert p.stat().st_size < 4096, p.name
        assert "_source" in json.loads(p.read_text()), p.name


@pytest.mark.parametrize("key", models.names())
def test_catalog_model_round_trips_through_its_config(key, recwarn):
    cat = models.get(key)
    built = models.from_hf_config(HERE / f"{key}.json", name=key)
    assert built.total_params == cat.total_params          # the exact integer, not a rounding
    assert built.active_params == cat.active_params
    assert built.kv_bytes_per_sequence(100_000) == cat.kv_bytes_per_sequence(100_000)
    for f in dataclasses.fields(models.Model):
        if f.name not in META:
            assert getattr(built, f.name) == getattr(cat, f.name), (key, f.name)
    assert built.unmodelled_config_fields == ()
    assert not [w for w in recwarn if "not modelled" in str(w.message)]


def test_a_dict_works_as_well_as_a_path_and_the_folder_form():
    cfg = _cfg("llama-3.1-8b")
    assert models.from_hf_config(cfg).total_params == 8_030_261_248      # HF safetensors total / 2
    assert models.from_hf_config(HERE / "llama-3.1-8b.json").key == "llama-3.1-8b"   # the file's name
    assert models.from_hf_config(cfg).key == "hf-llama"                               # a dict that names nothing


def test_unknown_fields_are_reported_by_name():
    cfg = _cfg("llama-3.1-8b") | {"num_fancy_adapters": 4, "memory_tokens": 16}
    with pytest.warns(UserWarning, match="memory_tokens, num_fancy_adapters"):
        m = models.from_hf_config(cfg, name="odd")
    assert m.unmodelled_config_fields == ("memory_tokens", "num_fancy_adapters")
    assert models.from_hf_config(cfg, warn=False).unmodelled_config_fields == m.unmodelled_config_fields


def test_deepseek_v2_lite_without_q_lora_matches_its_card():
    # card: 15.7B total, 2.4B activated. Hand count (q_lora_rank null: a plain d x n_h*192 q projection):
    d, nh, L = 2048, 16, 27
    attn = d * nh * 192 + d * 576 + 512 + 512 * nh * 256 + nh * 128 * d
    dense = 3 * d * 10944
    expert = 3 * d * 1408
    moe = d * 64 + (64 + 2) * expert
    total = 2 * 102400 * d + d + L * (attn + 2 * d) + dense + (L - 1) * moe
    m = models.from_hf_config(HERE / "deepseek-v2-lite.json")
    assert m.total_params == total and round(total / 1e9, 1) == 15.7
    assert m.kv_bytes_per_token() == L * 576 * 2                   # latent 512 + rope key 64, bf16
    no_embed = m.active_params - 102400 * d
    assert abs(no_embed / 1e9 - 2.4) < 0.06        # card "2.4B activated": 2.45B without the lookup (2.66B with it)


def test_qwen_moe_shared_expert_and_its_gate():
    # Qwen1.5-MoE-A2.7B: 60 experts of 1408, a 5632-wide shared expert (= 4 x 1408) with a 2048 x 1 gate.
    d = 2048
    layer = 4 * d * d + 3 * d + d * 60 + 60 * 3 * d * 1408 + 3 * d * 5632 + d + 2 * d
    total = 2 * 151936 * d + d + 24 * layer
    m = models.from_hf_config(HERE / "qwen1.5-moe-a2.7b.json")
    assert m.total_params == total and round(total / 1e9, 1) == 14.3   # card: 14.3B
    assert m.n_shared_experts == 4 and m.shared_expert_gate and m.qkv_bias
    assert m.sliding_window == 0                                         # use_sliding_window false


def test_gpt_oss_kv_counts_its_windows():
    m = models.get("gpt-oss-120b")
    per_layer = 2 * 8 * 64 * 2                                # K and V, 8 kv heads of 64, bf16
    L = 131_072
    hand = 18 * L * per_layer + 18 * 128 * per_layer          # 18 full layers + 18 layers of 128 positions
    assert m.kv_bytes_per_sequence(L) == hand == 4_836_556_800
    full = 36 * L * per_layer
    assert 1.99 < full / hand < 2.0                           # what counting every layer in full overstated
    assert m.kv_bytes_per_token(context=L) == hand / L
    assert m.kv_bytes_per_sequence(100) == 100 * 36 * per_layer   # inside the window every layer holds it all
    assert attention.decode_attention_bytes(m, L) == hand
    assert m.attention_flops_per_token(L) == 4 * 64 * 64 * (18 * L + 18 * 128)


def test_capacity_and_max_batch_see_the_window():
    m = models.get("gpt-oss-120b")
    L, hbm = 131_072, 4 * 80e9
    hand = int((hbm - 2 * m.total_params) // (18 * L * 2048 + 18 * 128 * 2048))
    assert serving.max_batch(m, "h100-sxm", L, n_chips=4) == hand == 17
    step = serving.decode_step(m, "h100-sxm", 17, L, n_chips=4)
    assert step.kv_s == pytest.approx(17 * 4_836_556_800 / (4 * 3.35e12), rel=1e-12)


def test_prefill_attention_in_windowed_layers():
    m = models.get("gpt-oss-120b")
    per_pos_layer = 4 * 64 * 64
    T, w = 1000, 128
    hand = per_pos_layer * (18 * T * (T - 1) / 2 + 18 * (w * (w + 1) / 2 + (T - 1 - w) * w))
    assert m.prefill_attention_flops(T) == pytest.approx(hand, rel=1e-12)
    assert m.prefill_attention_flops(50) == pytest.approx(per_pos_layer * 36 * 50 * 49 / 2, rel=1e-12)


def test_mistral_style_window_on_every_layer():
    cfg = _cfg("llama-3.1-8b") | {"model_type": "mistral", "sliding_window": 4096, "max_position_embeddings": 32768}
    m = models.from_hf_config(cfg, name="mistral-like")
    assert (m.sliding_window, m.n_window_layers) == (4096, 32)
    assert m.kv_bytes_per_sequence(32768) == 32 * 4096 * 2 * 8 * 128 * 2


def test_fractional_bytes_per_weight_and_kv():
    m = models.get("llama-3.1-70b")
    assert m.weight_bytes(0.5625) == m.total_params * 0.5625
    assert m.kv_bytes_per_token(0.5) == m.kv_bytes_per_token("fp4")
    t = serving.decode_step_time_s(m, "h200", 1, 0, weight_dtype=0.5625)
    # every weight but the untied input table, plus the one embedding row batch 1 looks up
    assert t == pytest.approx((m.weights_read_params + 8192) * 0.5625 / 4.8e12, rel=1e-12)


@pytest.mark.parametrize("cfg, exc, match", [
    ({"model_type": "mamba", "hidden_size": 8}, ValueError, "model_type 'mamba'.*allowed: llama"),
    ({"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4}, ValueError, "'num_hidden_layers'"),
    ({"model_type": "qwen3_moe", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 4,
      "vocab_size": 10, "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 8,
      "mlp_only_layers": [2]}, ValueError, "only leading dense layers"),
    ({"model_type": "gpt_oss", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
      "vocab_size": 10, "num_local_experts": 4, "num_experts_per_tok": 2, "intermediate_size": 8,
      "layer_types": ["sliding_attention"], "sliding_window": 8}, ValueError, "layer_types must list 2"),
    (42, TypeError, "path to a config.json or a dict"),
    ("/nonexistent/config.json", FileNotFoundError, "nothing is downloaded"),
])
def test_bad_configs_are_refused_clearly(cfg, exc, match):
    with pytest.raises(exc, match=match):
        models.from_hf_config(cfg)


def test_window_fields_are_validated():
    with pytest.raises(ValueError, match="sliding_window"):
        dataclasses.replace(models.get("llama-3.1-8b"), sliding_window=128)
    with pytest.raises(ValueError, match="sliding_window"):
        dataclasses.replace(models.get("llama-3.1-8b"), sliding_window=128, n_window_layers=33)
    assert np.all(np.diff(models.get("gpt-oss-120b").kv_bytes_per_token(context=[64, 1e3, 1e5])) < 0)


def test_without_model_type_the_architecture_is_matched_exactly():
    cfg = _cfg("llama-3.1-8b")
    del cfg["model_type"]
    assert models.from_hf_config(cfg).total_params == 8_030_261_248        # LlamaForCausalLM, exactly
    # Llama 4 Scout (109B total) and Qwen3-Next (80B) once matched "llama" and "qwen3" by substring and came back
    # as 11.1B and 3.0B with only a warning; both are read by their own class now, and the unknown ones refused
    scout = _cfg("llama-4-scout-17b-16e")["text_config"]
    del scout["model_type"]
    assert models.from_hf_config(scout | {"architectures": ["Llama4ForCausalLM"]}).total_params == 107_769_861_120
    for arch in ("MiniMaxM2ForCausalLM", "Ernie4_5_MoeForCausalLM", "MyLlamaForCausalLM"):
        with pytest.raises(ValueError, match=f"'{arch}'.*no class this reader knows"):
            models.from_hf_config(cfg | {"architectures": [arch]})
    # the two families not read yet say what is missing
    for mt, name in (("minimax_m2", "MiniMax-M2"), ("ernie4_5_moe", "ERNIE 4.5")):
        with pytest.raises(ValueError, match=f"model_type '{mt}' is not read yet: {name}'s MoE layers .*no config.json "
                                             f"as .* published"):
            models.from_hf_config(cfg | {"model_type": mt})
    # a hybrid's class places it in its family, which then asks for its own fields
    for arch, field in (("FalconH1ForCausalLM", "mamba_n_heads"), ("NemotronHForCausalLM", "hybrid_override_pattern")):
        with pytest.raises(ValueError, match=f"field '{field}' is required"):
            models.from_hf_config(cfg | {"architectures": [arch]})


def test_unmodelled_fields_that_size_weights_are_refused_by_name():
    # Qwen3-Next's config read as a dense qwen3: its 512 experts of 512 and its linear-attention heads
    # hold most of its 80B parameters; counting without them gave 3.0B
    qwen3_next = _cfg("qwen3-4b") | {"num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512,
                                      "shared_expert_intermediate_size": 512, "linear_num_key_heads": 16,
                                      "full_attention_interval": 4}
    with pytest.raises(ValueError, match="linear_num_key_heads, moe_intermediate_size, num_experts, "
                                         "num_experts_per_tok, shared_expert_intermediate_size size weights"):
        models.from_hf_config(qwen3_next, warn=False)
    # a nested sub-model (Llama 4's text_config and vision_config) is refused too; empty ones size nothing
    with pytest.raises(ValueError, match="text_config, vision_config"):
        models.from_hf_config(_cfg("llama-3.1-8b") | {"text_config": {"hidden_size": 5120},
                                                      "vision_config": {"hidden_size": 1408}})
    models.from_hf_config(_cfg("llama-3.1-8b") | {"text_config": {}, "vision_config": None})
    # the rule reads names: these size weights; the made-up ones of test_unknown_fields_are_reported_by_name do not
    for field in ("num_experts", "intermediate_size_mlp", "kv_lora_rank", "num_local_experts", "decoder_sparse_step",
                  "interleave_moe_layer_step", "text_config"):
        assert _hf_config.holds_parameters(field), field
    for field in ("memory_tokens", "num_fancy_adapters", "rope_scaling", "full_attention_interval"):
        assert not _hf_config.holds_parameters(field), field


def test_a_field_that_sizes_nothing_is_never_refused():
    # Qwen3-Coder-480B-A35B-Instruct's config.json (model_type qwen3_moe) carries shared_expert_intermediate_size: 0;
    # the reader refused it by the field's name. Its model card: 480B parameters, 35B activated
    cfg = {"model_type": "qwen3_moe", "hidden_size": 6144, "intermediate_size": 8192, "num_hidden_layers": 62,
           "num_attention_heads": 96, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
           "num_experts": 160, "num_experts_per_tok": 8, "moe_intermediate_size": 2560,
           "shared_expert_intermediate_size": 0, "tie_word_embeddings": False, "max_position_embeddings": 262144}
    m = models.from_hf_config(cfg, name="qwen3-coder-480b")
    assert m.unmodelled_config_fields == () and m.n_shared_experts == 0
    assert abs(m.total_params / 480e9 - 1) < 0.005 and abs(m.active_params / 35e9 - 1) < 0.05
    # a field that sizes something is still refused when its value is not empty
    with pytest.raises(ValueError, match="shared_expert_intermediate_size"):
        models.from_hf_config(cfg | {"shared_expert_intermediate_size": 2560}, name="x")
    # NoPE layers size nothing (no weight, no cache byte): not refused, whatever their value
    assert models.from_hf_config(cfg | {"no_rope_layers": [1, 1, 1, 0] * 15 + [1, 1]}, name="y").total_params \
        == m.total_params


def test_a_multimodal_config_reads_its_language_model_and_says_so():
    # Mistral Small 3.1/3.2 24B (model_type mistral3): the language model in text_config, a Pixtral vision tower
    # beside it. Text: 40 layers of d 5,120, 32 heads and 8 KV heads of 128, MLP 32,768, vocabulary 131,072, untied
    cfg = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "image_token_index": 10,
           "multimodal_projector_bias": False, "projector_hidden_act": "gelu", "spatial_merge_size": 2,
           "text_config": {"head_dim": 128, "hidden_act": "silu", "hidden_size": 5120, "intermediate_size": 32768,
                           "max_position_embeddings": 131072, "model_type": "mistral", "num_attention_heads": 32,
                           "num_hidden_layers": 40, "num_key_value_heads": 8, "rms_norm_eps": 1e-05,
                           "rope_theta": 1e9, "sliding_window": None, "vocab_size": 131072},
           "vision_config": {"hidden_size": 1024, "num_hidden_layers": 24, "model_type": "pixtral"}}
    with pytest.warns(UserWarning, match="its language model, text_config .* vision_config and the projector are "
                                         "not counted"):
        m = models.from_hf_config(cfg, name="mistral-small-3.1")
    attn = 5120 * 4096 + 2 * 5120 * 1024 + 4096 * 5120
    hand = 40 * (attn + 3 * 5120 * 32768 + 2 * 5120) + 2 * 131072 * 5120 + 5120
    assert m.total_params == hand                                          # 23,572,403,200
    assert 0.97 < m.total_params / 24e9 < 1                                # "24B" counts the ~0.4B vision tower too
    assert "vision_config and the projector are not counted" in m.note


def test_gemma_3_reads_exactly_with_its_tied_head_windows_and_four_norms():
    # Gemma 3 27B and 12B (google/gemma-3-27b-it and -12b-it config.json, text_config; Gemma3TextConfig's defaults
    # for what they omit: vocab_size 262,208, a tied head). The language models' published counts, from their
    # checkpoints: 27,009,346,304 and 11,766,034,176 (27B total with the 417M SigLIP tower and the projector:
    # 27,432,406,640). Per layer: q, k, v, o; a GeGLU MLP; four RMSNorms (before and after each block) and per-head
    # q and k norms; every sixth layer global, the other five attend through a 1,024-token window
    g27 = _cfg("gemma-3-27b")
    with pytest.warns(UserWarning, match="vision_config and the projector are not counted"):
        m = models.from_hf_config(g27, name="gemma-3-27b")
    layer = 5376 * 4096 + 2 * 5376 * 2048 + 4096 * 5376 + 3 * 5376 * 21504 + 4 * 5376 + 2 * 128
    assert m.total_params == 62 * layer + 262208 * 5376 + 5376 == 27_009_346_304
    assert m.tied_embeddings and m.n_window_layers == 52 and m.sliding_window == 1024
    # a 32k sequence's cache: 10 global layers hold every position, 52 windowed ones 1,024 (K and V, 16 heads of 128)
    assert m.kv_bytes_per_sequence(32768) == (10 * 32768 + 52 * 1024) * 2 * 16 * 128 * 2
    g12 = {"model_type": "gemma3_text", "hidden_size": 3840, "intermediate_size": 15360, "num_hidden_layers": 48,
           "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256, "query_pre_attn_scalar": 256,
           "sliding_window": 1024, "sliding_window_pattern": 6}
    m12 = models.from_hf_config(g12, name="gemma-3-12b")
    assert m12.total_params == 11_766_034_176 and m12.n_window_layers == 40
    # an explicit untied head is honoured
    assert models.from_hf_config(g12 | {"tie_word_embeddings": False}, name="u").total_params \
        == 11_766_034_176 + 262208 * 3840


def test_glm_4_5_air_reads_exactly_with_its_mtp_module_apart():
    # zai-org/GLM-4.5-Air config.json (as transformers loads it). Its checkpoint holds 110,468,824,832 parameters, of
    # which its one MTP layer is 3,616,573,568: the model served without MTP is 106,852,251,264 ("106B" on the card)
    glm = _cfg("glm-4.5-air")
    m = models.from_hf_config(glm, name="glm-4.5-air")
    attn = 4096 * 12288 + 2 * 4096 * 1024 + 12288 * 4096 + 12288 + 2 * 1024           # q, k, v (with biases), o
    moe = 128 * 3 * 4096 * 1408 + 3 * 4096 * 1408 + 4096 * 128 + 128                 # routed, shared, router and bias
    hand = attn * 46 + 3 * 4096 * 10944 + 45 * moe + 46 * 2 * 4096 + 2 * 151552 * 4096 + 4096
    assert m.total_params == hand == 106_852_251_264
    assert m.mtp_params == 3_616_573_568 and m.checkpoint_params == 110_468_824_832
    # the card's "12B active" leaves out the embedding and the head
    assert round((m.active_params - 2 * 151552 * 4096) / 1e9) == 12


def test_qwen3_next_reads_exactly_with_its_linear_layers_apart():
    # Qwen/Qwen3-Next-80B-A3B-Instruct: its safetensors hold 81,324,862,720 parameters, 1,650,471,424 of them the MTP
    # module the config does not describe, so the served model is 79,674,391,296. By hand, from the checkpoint's
    # tensor shapes: a Gated DeltaNet mixer is in_proj_qkvz [12288, 2048], in_proj_ba [64, 2048], conv1d [8192, 1, 4],
    # dt_bias and A_log [32], norm [128], out_proj [2048, 4096]; a gated attention layer q_proj [8192, 2048] (query
    # and gate), k_proj and v_proj [512, 2048], o_proj [2048, 4096], q_norm and k_norm [256]
    m = models.from_hf_config(_cfg("qwen3-next-80b-a3b"), name="qwen3-next-80b-a3b")
    gdn = 12288 * 2048 + 64 * 2048 + 8192 * 4 + 32 + 32 + 128 + 2048 * 4096
    attn = 8192 * 2048 + 2 * 512 * 2048 + 2048 * 4096 + 2 * 256
    moe = 512 * 3 * 2048 * 512 + 3 * 2048 * 512 + 2048 + 2048 * 512      # experts, shared expert, its gate, router
    hand = 36 * gdn + 12 * attn + 48 * (moe + 2 * 2048) + 2 * 151936 * 2048 + 2048
    assert gdn == 33_718_464 and m.linear_params_per_layer == gdn and m.attention_params_per_layer == attn
    assert m.total_params == hand == 81_324_862_720 - 1_650_471_424
    assert m.n_linear_layers == 36 and m.linear_layer_ids[:4] == (0, 1, 2, 4)     # every 4th layer attends
    # K/V only in the 12 attention layers (2 KV heads of 256): counting all 48 would be 4x
    assert m.kv_bytes_per_token() == 12 * 2 * 2 * 256 * 2 == 24_576
    # the fixed state, per Gated DeltaNet layer 32 heads x 128 x 128 plus 8,192 channels x 3 taps, at 2 bytes
    state = 36 * (32 * 128 * 128 + 8192 * 3) * 2
    assert m.state_bytes_per_sequence() == state == 39_518_208
    assert m.kv_bytes_per_sequence(1000) == 1000 * 24_576 + state and m.kv_bytes_per_sequence(0) == 0
    # the state is context-free: from 1k to 100k tokens the cache grows by the K/V alone
    assert m.kv_bytes_per_sequence(100_000) - m.kv_bytes_per_sequence(1000) == 99_000 * 24_576
    # attention FLOPs only in the attention layers: 4 x 16 heads x 256 a position, 12 layers
    assert m.attention_flops_per_token(1000) == 4 * 16 * 256 * 12 * 1000
    assert m.state_flops_per_token == 36 * (7 * 32 * 128 * 128 + 2 * 8192 * 4)


def test_llama_4_scout_reads_exactly_with_chunked_and_nope_layers():
    # meta-llama/Llama-4-Scout-17B-16E-Instruct: 108,641,793,536 parameters in the checkpoint, of which 871,932,416 are
    # the vision tower and projector: the language model is 107,769,861,120. By hand: attention q and o 5,120 x 5,120,
    # k and v 5,120 x 1,024 (no bias, q/k L2 norms without weights); 16 routed experts and one shared expert of
    # 3 x 5,120 x 8,192; a router 5,120 x 16; two norms; every one of the 48 layers MoE
    with pytest.warns(UserWarning, match="vision_config and the projector are not counted"):
        m = models.from_hf_config(_cfg("llama-4-scout-17b-16e"), name="llama-4-scout")
    layer = 2 * 5120 * 5120 + 2 * 5120 * 1024 + 17 * 3 * 5120 * 8192 + 5120 * 16 + 2 * 5120
    assert m.total_params == 48 * layer + 2 * 202048 * 5120 + 5120 == 108_641_793_536 - 871_932_416
    assert round(m.active_params / 1e9) == 17                                         # "17B active"
    # three layers in four attend within their 8,192-token chunk, the NoPE fourth to everything: a token at 20,000
    # sees 20,000 positions in 12 layers and 20,000 - 16,384 = 3,616 in 36, and the cache must have room for a whole
    # chunk in each of those
    assert m.n_chunked_layers == 36 and m.attention_chunk == 8192
    assert m.cached_positions(20_000) == 12 * 20_000 + 36 * 3_616
    assert m.held_positions(20_000) == 12 * 20_000 + 36 * 8_192
    assert m.kv_bytes_per_sequence(20_000) == (12 * 20_000 + 36 * 8_192) * 2 * 8 * 128 * 2
    # prefill of 10,000 tokens: a chunked layer's tokens see sum_i (i mod 8,192) = 8,192 x 8,191 / 2 + 1,808 x 1,807 / 2
    assert m.prefill_positions(10_000) == 12 * 10_000 * 9_999 // 2 + 36 * (8192 * 8191 // 2 + 1808 * 1807 // 2)
    # a moe_layers list that breaks Llama4TextConfig's every-step-th rule is refused, saying so
    odd = _cfg("llama-4-scout-17b-16e")
    odd["text_config"] = odd["text_config"] | {"interleave_moe_layer_step": 2, "moe_layers": [0, 2]}
    with pytest.raises(ValueError, match="moe_layers=.*only every step-th layer"):
        models.from_hf_config(odd, warn=False)


def test_llama_4_maverick_interleaves_dense_and_moe_layers():
    # Maverick: 128 routed experts and a shared one (3 x 5,120 x 8,192 each) and a router 5,120 x 128 in layers
    # 1, 3, ..., 47 (interleave_moe_layer_step 2); dense SwiGLU layers of 16,384 in 0, 2, ..., 46; no q/k norm weights
    with pytest.warns(UserWarning, match="not counted"):
        m = models.from_hf_config(_cfg("llama-4-maverick-17b-128e"), name="llama-4-maverick")
    attn = 2 * 5120 * 5120 + 2 * 5120 * 1024
    moe = 129 * 3 * 5120 * 8192 + 5120 * 128
    dense = 3 * 5120 * 16384
    hand = 48 * (attn + 2 * 5120) + 24 * moe + 24 * dense + 2 * 202048 * 5120 + 5120
    assert m.n_moe_layers == 24 and [m.is_moe_layer(i) for i in range(4)] == [False, True, False, True]
    assert m.total_params == hand == 400_711_848_960                       # the card: "400B total"
    assert round(m.active_params / 1e9) == 17                              # "17B active"
    # each pipeline stage holds its own mix: in two stages, 12 MoE layers each
    assert list(m.stage_params(2)[0]) == [12, 12]


@pytest.mark.parametrize("name,hand,published", [
    # SmolLM3-3B: q and o 2,048 x 2,048, k and v 2,048 x 512, SwiGLU 3 x 2,048 x 11,008, two norms; a tied head
    # (SmolLM3Config's default; the checkpoint has no lm_head tensor); its NoPE layers hold no weight
    ("smollm3-3b", 36 * (2 * 2048 * 2048 + 2 * 2048 * 512 + 3 * 2048 * 11008 + 2 * 2048) + 128256 * 2048 + 2048,
     3_075_098_624),
    # Phi-4 (phi3): qkv_proj [7,680, 5,120] and gate_up_proj [35,840, 5,120] fused, the same weights as llama's
    # separate ones; an untied head; sliding_window 16,384 = the context, so no window
    ("phi-4", 40 * (2 * 5120 * 5120 + 2 * 5120 * 1280 + 3 * 5120 * 17920 + 2 * 5120) + 2 * 100352 * 5120 + 5120,
     14_659_507_200),
    # OLMoE-1B-7B-0924: 64 experts of 3 x 2,048 x 1,024 a layer, a router 2,048 x 64, and q/k RMSNorms of 2,048
    # each: over the whole projection, not one head (Qwen3's would be 2 x 128)
    ("olmoe-1b-7b", 16 * (4 * 2048 * 2048 + 2 * 2048 + 64 * 3 * 2048 * 1024 + 2048 * 64 + 2 * 2048)
     + 2 * 50304 * 2048 + 2048, 6_919_161_856),
    # Mistral-Small-3.1-24B: its language model (text_config, a mistral); the published 24,011,361,280 holds the
    # Pixtral tower (403,305,472) and the projector (35,652,608) too
    ("mistral-small-3.1-24b", 40 * (2 * 5120 * 4096 + 2 * 5120 * 1024 + 3 * 5120 * 32768 + 2 * 5120)
     + 2 * 131072 * 5120 + 5120, 24_011_361_280 - 403_305_472 - 35_652_608),
])
def test_dense_and_moe_families_read_to_their_published_counts(name, hand, published):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                # the multimodal one says what it leaves out
        m = models.from_hf_config(_cfg(name), name=name)
    assert m.total_params == hand == published
    assert not m.unmodelled_config_fields
    assert m.n_window_layers == 0                      # Phi-4's window spans its whole context


def test_hunyuan_a13b_reads_to_its_published_80b_with_13b_active():
    # Tencent's config.json (models/config.json of its repository), layer by layer from modeling_hunyuan.py: q and o
    # 4,096 x 4,096, k and v 4,096 x 1,024 (8 KV heads of 128), per-head q/k RMSNorms (128 each), two RMSNorms; 64
    # routed experts and one shared (use_mixed_mlp_moe), each a SwiGLU 3 x 4,096 x 3,072, and a router 4,096 x 64;
    # a tied table of 128,167 x 4,096 and a final norm
    m = models.from_hf_config(_cfg("hunyuan-a13b"), name="hunyuan-a13b")
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 2 * 128 + 2 * 4096
    expert = 3 * 4096 * 3072
    hand = 32 * (attn + 65 * expert + 4096 * 64) + 128167 * 4096 + 4096
    assert m.total_params == hand == 80_393_183_232
    # the report gives round figures only: "80 billion total", "13 billion active" (8 routed + 1 shared of 65)
    assert abs(m.total_params / 80e9 - 1) < 0.005
    active = 32 * (attn + 9 * expert + 4096 * 64) + 128167 * 4096 + 4096
    assert m.active_params == active and round(active / 1e9) == 13
    assert not m.unmodelled_config_fields and m.tied_embeddings and m.n_dense_layers == 0
    # per-layer lists that differ, and cross-layer attention, are refused with what is allowed
    with pytest.raises(ValueError, match="moe_topk=.*one value for every layer"):
        models.from_hf_config(_cfg("hunyuan-a13b") | {"moe_topk": [8] * 31 + [4]})
    with pytest.raises(ValueError, match="use_cla=True: cross-layer attention"):
        models.from_hf_config(_cfg("hunyuan-a13b") | {"use_cla": True})


def test_nemotron_h_reads_its_blocks_as_mamba2_attention_and_mlp_layers():
    # Nemotron-H-56B: 118 blocks, 54 Mamba-2 (M), 10 attention (*), 54 squared-ReLU MLPs (-), one RMSNorm each.
    # A mixer and the MLP after it are one layer: 64 layers, 10 of them (each 'M' right before a '*') with no MLP.
    m = models.from_hf_config(_cfg("nemotron-h-56b"), name="nemotron-h-56b")
    assert (m.n_layers, m.n_linear_layers, m.n_attention_layers, len(m.mlp_free_layer_ids)) == (64, 54, 10, 10)
    # NemotronHMamba2Mixer: 256 heads of 64 (16,384 channels), 8 groups of 256 state channels, a 4-tap convolution
    # with a bias over x, B and C (16,384 + 2 x 8 x 256 = 20,480 channels), dt_bias, A_log, D, a gated RMSNorm
    inner, conv = 256 * 64, 256 * 64 + 2 * 8 * 256
    mamba = 8192 * (2 * inner + 2 * 8 * 256 + 256) + conv * 4 + conv + 3 * 256 + inner + inner * 8192
    attn = 2 * 8192 * (64 * 128) + 2 * 8192 * (8 * 128)             # q, o; k, v (no bias)
    mlp = 2 * 8192 * 32768                                           # up and down, no gate
    hand = 54 * mamba + 10 * attn + 54 * mlp + 118 * 8192 + 2 * 131072 * 8192 + 8192
    assert m.linear_params_per_layer == mamba
    assert m.total_params == hand == 56_324_350_464 == m.active_params
    # the card says "56B" (two figures): this count is 0.58% above it; no finer published figure was found
    assert round(m.total_params / 1e9) == 56
    # its cache: 10 attention layers of 8 KV heads of 128, and a fixed state of 54 x (256 x 64 x 256 + 20,480 x 3)
    assert m.kv_bytes_per_token("bf16") == 10 * 2 * 8 * 128 * 2
    assert m.state_bytes_per_sequence() == 54 * (256 * 64 * 256 + conv * 3) * 2
    # an MLP block with no mixer before it, and MoE blocks, are refused by name
    with pytest.raises(ValueError, match="block 2 is an MLP with no mixer before it"):
        models.from_hf_config(_cfg("nemotron-h-56b") | {"hybrid_override_pattern": "M--" + "M-" * 57 + "*"})
    with pytest.raises(ValueError, match="'E' \\(MoE\\) blocks are not read"):
        models.from_hf_config(_cfg("nemotron-h-56b") | {"hybrid_override_pattern": "ME" * 59})


def test_falcon_h1_runs_attention_and_mamba2_side_by_side_in_every_layer():
    # Falcon-H1-0.5B: 36 layers, each attention (8 heads, 2 KV heads, of 64) beside a Mamba-2 mixer (24 heads of 64,
    # one group of 128 state channels, a 4-tap convolution with a bias, no gated norm: mamba_rms_norm false), then a
    # SwiGLU MLP of 2,048; two RMSNorms a layer; an untied head over 32,784 tokens
    m = models.from_hf_config(_cfg("falcon-h1-0.5b"), name="falcon-h1-0.5b")
    assert m.n_attention_layers == m.n_linear_layers == m.n_layers == 36 and m.linear_in_parallel
    conv = 1536 + 2 * 128
    mamba = 1024 * (2 * 1536 + 2 * 128 + 24) + conv * 4 + conv + 3 * 24 + 1536 * 1024
    attn = 2 * 1024 * 512 + 2 * 1024 * 128
    hand = 36 * (attn + mamba + 3 * 1024 * 2048 + 2 * 1024) + 2 * 32784 * 1024 + 1024
    assert m.total_params == hand == 521_411_104                    # the "0.5B" of its name: no finer figure found
    # every layer caches K/V and keeps a state
    assert m.kv_bytes_per_token("bf16") == 36 * 2 * 2 * 64 * 2
    assert m.state_bytes_per_sequence() == 36 * (24 * 128 * 64 + conv * 3) * 2
    with pytest.raises(ValueError, match="attn_layer_indices=.*attention in some layers only"):
        models.from_hf_config(_cfg("falcon-h1-0.5b") | {"attn_layer_indices": [0, 4]})


def test_jamba_reads_mamba1_layers_attention_every_eighth_and_experts_every_second():
    # Jamba-1.5-Mini: 32 layers; attention in layers 4, 12, 20, 28 (offset 4, period 8), Mamba-1 in the other 28;
    # 16 experts (top 2) of 14,336 in the odd layers (offset 1, period 2), dense SwiGLU MLPs of 14,336 in the even
    m = models.from_hf_config(_cfg("jamba-1.5-mini"), name="jamba-1.5-mini")
    assert [i for i in range(32) if i not in m.linear_layer_ids] == [4, 12, 20, 28] and m.n_moe_layers == 16
    # JambaMambaMixer: 8,192 channels, state 16, step rank 256, 4-tap convolution with a bias, RMSNorms on dt, B, C
    I, N, R = 8192, 16, 256
    mamba = 4096 * 2 * I + I * 4 + I + I * (R + 2 * N) + R * I + I + I * N + I + I * 4096 + R + 2 * N
    attn = 2 * 4096 * 4096 + 2 * 4096 * 1024
    mlp = 3 * 4096 * 14336
    hand = (28 * mamba + 4 * attn + 16 * mlp + 16 * (16 * mlp + 4096 * 16) + 32 * 2 * 4096
            + 2 * 65536 * 4096 + 4096)
    assert m.total_params == hand == 51_570_323_328
    # published: "52B total, 12B active" (AI21; the paper) -- two figures; the hub's safetensors count, 51.6B
    assert round(m.total_params / 1e8) == 516 and round(m.active_params / 1e9) == 12
    # the paper's headline: 4 GB of KV cache at 256K tokens (4 attention layers of 8 KV heads of 128, bf16)
    assert m.kv_bytes_per_sequence(262144) - m.state_bytes_per_sequence() == 4 * 2 * 8 * 128 * 2 * 262144
    assert m.kv_bytes_per_sequence(262144) - m.state_bytes_per_sequence() == 4 * 2**30
    assert m.state_bytes_per_sequence() == 28 * (I * N + I * 3) * 2


def test_minimax_m1_reads_exactly_with_its_lightning_layers_apart():
    # MiniMax-M1 (MiniMax-AI/MiniMax-M1's config.json and index): 70 lightning-attention layers (qkv_proj [24,576,
    # 6,144], output_gate [8,192, 6,144], norm [8,192], out_proj [6,144, 8,192]) and 10 softmax ones (q [8,192,
    # 6,144], k and v [1,024, 6,144], o [6,144, 8,192]); 32 experts of 3 x 6,144 x 9,216 and a router [32, 6,144]
    # in each of the 80; two norms a layer; embedding and head 200,064 x 6,144
    m = models.from_hf_config(_cfg("minimax-m1-40k"), name="minimax-m1-40k")
    lightning = 6144 * 24576 + 6144 * 8192 + 8192 + 8192 * 6144
    softmax = 6144 * 8192 + 2 * 6144 * 1024 + 8192 * 6144
    moe = 32 * 3 * 6144 * 9216 + 6144 * 32 + 2 * 6144
    hand = 70 * lightning + 10 * softmax + 80 * moe + 2 * 200064 * 6144 + 6144
    assert m.linear_kind == "lightning" and m.linear_params_per_layer == lightning == 251_666_432
    assert m.total_params == hand == 456_089_655_296
    # the index's byte total: every weight in bf16 but the 80 routers, kept in fp32 (two bytes more each)
    assert 2 * m.total_params + 2 * 80 * 32 * 6144 == 912_210_767_872
    # "45.9B activated": two experts of 32, without the embedding and the head
    assert round((m.active_params - 2 * 200064 * 6144) / 1e8) == 459
    # K/V only in the 10 softmax layers (8 KV heads of 128); each lightning layer keeps 64 heads' 128 x 128 state
    assert m.kv_bytes_per_token() == 10 * 2 * 8 * 128 * 2 and m.attention_flops_per_token(1000) == 4 * 64 * 128 * 10 * 1000
    assert m.state_bytes_per_sequence() == 70 * 64 * 128 * 128 * 2
    assert m.state_flops_per_token == 70 * 5 * 64 * 128 * 128


def test_deepseek_v3_2_reads_its_sparse_attention_and_prices_it_per_step():
    # DeepSeek-V3.2-Exp: DeepSeek-V3 plus a lightning indexer in every layer (and in the MTP layer): wq_b 64 x 128 from
    # the 1,536-wide query latent, wk 7,168 -> 128, a LayerNorm of 128 with bias, weights_proj 7,168 -> 64
    m = models.from_hf_config(_cfg("deepseek-v3.2-exp"), name="deepseek-v3.2-exp")
    v3 = models.get("deepseek-v3")
    index = 64 * 128 * 1536 + 7168 * 128 + 2 * 128 + 7168 * 64
    assert m.total_params == v3.total_params + 61 * index
    assert m.checkpoint_params == v3.checkpoint_params + 62 * index == 685_355_329_792     # the Hub's "685B"
    # a token holds its latent (576 values, bf16 here) and its index key (128 fp8 values and one fp32 scale)
    assert m.kv_bytes_per_token_per_layer() == 576 * 2 + 128 + 4
    # attention reads the top 2,048 (fewer below), the indexer scores and reads every cached token
    assert m.cached_positions(100_000) == 61 * 2048 and m.cached_positions(1000) == 61 * 1000
    assert m.index_positions(100_000) == 61 * 100_000
    assert m.prefill_positions(3000) == 61 * (2048 * 2049 // 2 + (3000 - 1 - 2048) * 2048)
    from llmmath.deployment import Deployment
    d = Deployment(m, "h200", 8, tp=8, ep=8, weight_dtype="fp8")
    kv = d.decode_stages(8, 100_000).bytes_read["kv"][0]          # 8 sequences, one replica, the latent on every chip
    assert kv == pytest.approx(8 * 61 * (2048 * 1152 + 100_000 * 132))


def test_qwen3_5_reads_from_its_multimodal_config_with_an_fp32_state():
    # Qwen3.5-35B-A3B's language model: Qwen3-Next's layers (in_proj_qkv [8192, 2048] and in_proj_z [4096, 2048] are
    # Qwen3-Next's in_proj_qkvz split in two, in_proj_a and in_proj_b its in_proj_ba) in 40 layers, 256 experts of 512
    # and a gated shared expert, a 248,320-token vocabulary; its recurrent state in fp32 (mamba_ssm_dtype)
    with pytest.warns(UserWarning, match="not counted"):
        m = models.from_hf_config(_cfg("qwen3.5-35b-a3b"), name="qwen3.5-35b-a3b")
    gdn = 8192 * 2048 + 4096 * 2048 + 2 * 32 * 2048 + 8192 * 4 + 2 * 32 + 128 + 2048 * 4096
    attn = 8192 * 2048 + 2 * 512 * 2048 + 2048 * 4096 + 2 * 256
    moe = 256 * 3 * 2048 * 512 + 3 * 2048 * 512 + 2048 + 2048 * 256 + 2 * 2048
    hand = 30 * gdn + 10 * attn + 40 * moe + 2 * 248320 * 2048 + 2048
    assert m.total_params == hand
    assert round(m.total_params / 1e8) == 347                 # the GGUF build's 34.7B (no vision tower, no MTP)
    # 30 linear layers: 32 heads' 128 x 128 state in fp32, the convolution's 3 x 8,192 inputs in bf16
    assert m.state_bytes_per_sequence() == 30 * (32 * 128 * 128 * 4 + 8192 * 3 * 2)
    assert m.kv_bytes_per_token() == 10 * 2 * 256 * 2 * 2


def test_an_mtp_module_that_shares_the_embeddings_counts_to_the_checkpoint():
    # Qwen3-Next's checkpoint holds an MTP module its config does not describe: one gated-attention MoE layer, the
    # projection of [hidden; embedding] (2 x 2,048 -> 2,048) and three norms, sharing the model's embedding and head.
    # Given one, the count reaches the safetensors' 81,324,862,720 to the parameter
    nxt = dataclasses.replace(models.get("qwen3-next-80b-a3b"), n_mtp_layers=1, mtp_own_embeddings=False)
    layer = (8192 * 2048 + 2 * 512 * 2048 + 2048 * 4096 + 2 * 256) + (512 * 3 * 2048 * 512 + 3 * 2048 * 512 + 2048
                                                                     + 2048 * 512) + 2 * 2048
    assert nxt.mtp_params == layer + 2 * 2048 * 2048 + 3 * 2048 == 1_650_471_424
    assert nxt.checkpoint_params == 81_324_862_720
    # Qwen3.5 says so in its config (mtp_num_hidden_layers 1, mtp_use_dedicated_embeddings false)
    with pytest.warns(UserWarning):
        q35 = models.from_hf_config(_cfg("qwen3.5-35b-a3b"), name="qwen3.5-35b-a3b")
    layer35 = (8192 * 2048 + 2 * 512 * 2048 + 2048 * 4096 + 2 * 256) + (256 * 3 * 2048 * 512 + 3 * 2048 * 512 + 2048
                                                                       + 2048 * 256) + 2 * 2048
    assert q35.n_mtp_layers == 1 and q35.mtp_params == layer35 + 2 * 2048 * 2048 + 3 * 2048


def test_bloom_176b_matches_its_model_card():
    """BLOOM 176B (BigScience): the card's 176,247,271,424 parameters, 3,596,615,680 of them the token embedding.
    By hand: a block is 12 d^2 (QKV 3 d^2, output d^2, MLP 4 d^2 each way) plus 13 d of biases and LayerNorms
    (QKV 3d, output d, MLP 4d + d, two LayerNorms 2d each); the embedding is tied, with a LayerNorm after it (2d), and
    a final LayerNorm (2d). ALiBi holds no weight."""
    d, L, V = 14336, 70, 250880
    hand = V * d + 2 * d + L * (12 * d * d + 13 * d) + 2 * d
    m = models.from_hf_config(HERE / "bloom-176b.json", name="bloom-176b")
    assert hand == m.total_params == 176_247_271_424
    assert V * d == 3_596_615_680 and m.pos_embedding == "alibi" and m.embedding_norm
    assert not m.gated_mlp and m.d_ff == 4 * d and m.tied_embeddings


def test_mpt_7b_reads_without_positions_or_biases():
    """MPT-7B (MosaicML, llm-foundry): ALiBi and no_bias, so no position table (llm-foundry turns learned_pos_emb off
    under ALiBi) and LayerNorms with a weight only. By hand: 32 blocks of QKV 3 d^2, output d^2, a GELU MLP of
    4 d each way, two d-wide norm weights; the tied embedding and a final norm: 6.65e9, the card's "6.7B"."""
    d, L, V = 4096, 32, 50432
    hand = V * d + L * (4 * d * d + 2 * 4 * d * d + 2 * d) + d
    with warnings.catch_warnings():
        warnings.simplefilter("error")                 # every field of the published file is read or sizes nothing
        m = models.from_hf_config(HERE / "mpt-7b.json", name="mpt-7b")
    assert m.total_params == hand == 6_649_286_656
    assert abs(m.total_params / 6.7e9 - 1) < 0.01
    assert m.pos_embedding == "alibi" and not m.attn_bias and not m.mlp_bias and m.norm == "layernorm_nobias"
    learned = _cfg("mpt-7b") | {"attn_config": {"alibi": False}}
    assert models.from_hf_config(learned, name="x").total_params == hand + 2048 * d     # a position table comes back


def test_mpt_refuses_what_it_cannot_count():
    cfg = _cfg("mpt-7b")
    with pytest.raises(ValueError, match="qk_ln"):
        models.from_hf_config(cfg | {"attn_config": {"alibi": True, "qk_ln": True}})
    with pytest.raises(ValueError, match="ffn_type"):
        models.from_hf_config(cfg | {"ffn_config": {"ffn_type": "mb_moe"}})
    with pytest.raises(ValueError, match="kv_n_heads"):
        models.from_hf_config(cfg | {"attn_config": {"alibi": True, "attn_type": "grouped_query_attention"}})
    # multi-query: one K/V head of d/n_h, so the QKV projection is d x (d + 2 d/n_h) where MHA's is 3 d^2
    mqa = models.from_hf_config(cfg | {"attn_config": {"alibi": True, "attn_type": "multiquery_attention"}})
    d, L = 4096, 32
    assert models.from_hf_config(cfg).total_params - mqa.total_params == L * (2 * d * d - 2 * d * (d // 32))
    win = models.from_hf_config(cfg | {"attn_config": {"alibi": True, "sliding_window_size": 512}})
    assert (win.sliding_window, win.n_window_layers) == (512, 32)        # llm-foundry windows every layer


def test_gpt_style_models_of_older_papers_train_in_the_step_model():
    """The dense GPT-style families of older training reports (BLOOM, MPT) go through training_layout.predict like
    any catalog model, and its FLOPs see their size: at bf16 a step's MFU sits between a fifth and the GEMMs'
    measured share of peak (0.745 on an H100), and the model FLOPs per token are 6 x the matmul weights (token
    embedding left out: a lookup) plus attention, within a few per cent of 6 x their hand counts."""
    from llmmath import training_layout as tl
    for name, n_hand, kw in (("bloom-176b", 176_247_271_424 - 250880 * 14336,
                              dict(tp=8, pp=8, dp=2, global_batch=64, seq_len=2048, recompute="full")),
                             ("mpt-7b", 6_649_286_656 - 50432 * 4096,
                              dict(dp=8, global_batch=256, seq_len=2048, micro_batch=4, fsdp=True))):
        m = models.from_hf_config(HERE / f"{name}.json", name=name)
        p = tl.predict(m, "h100-sxm", **kw)
        assert 0.2 < p.mfu < 0.745, (name, p.mfu)
        flops_per_token = tl.training_step(m, "h100-sxm", **{k: v for k, v in kw.items() if k != "fsdp"}).model_flops \
            / (kw["global_batch"] * kw["seq_len"])
        assert 6 * n_hand < flops_per_token < 1.15 * 6 * n_hand, name


def test_gpt_neox_reads_what_its_class_reads():
    """GPT-NeoX / Pythia: Pythia-70M's shape (6 layers of 512, 8 heads, MLP 2,048, 50,304 tokens, untied) counts
    70,426,624, the published Pythia-70M figure. The class always has MLP biases and full multi-head attention, so
    mlp_bias and num_key_value_heads change nothing; attention_bias=false drops the 4 d biases of q, k, v and the
    output projection a layer; a tied head drops one 50,304 x 512 table; tokenizer_class sizes nothing."""
    cfg = {"model_type": "gpt_neox", "hidden_size": 512, "num_hidden_layers": 6, "num_attention_heads": 8,
           "intermediate_size": 2048, "vocab_size": 50304, "max_position_embeddings": 2048, "rotary_pct": 0.25,
           "tie_word_embeddings": False, "use_parallel_residual": True, "tokenizer_class": "GPTNeoXTokenizer"}
    base = models.from_hf_config(cfg, name="p70m")
    assert base.total_params == 70_426_624 and base.unmodelled_config_fields == ()
    same = models.from_hf_config(cfg | {"mlp_bias": False, "num_key_value_heads": 2}, name="p70m")
    assert same.total_params == base.total_params and same.n_kv_heads == 8
    no_bias = models.from_hf_config(cfg | {"attention_bias": False}, name="p70m")
    assert base.total_params - no_bias.total_params == 6 * 4 * 512
    tied = models.from_hf_config(cfg | {"tie_word_embeddings": True}, name="p70m")
    assert base.total_params - tied.total_params == 50304 * 512
