"""Reading a Hugging Face ``config.json`` into a :class:`llmmath.models.Model` (see :func:`models.from_hf_config`).

The mapping, family by family (``model_type``; field names as in the
``transformers`` configuration classes of each architecture):

=====================  ==================================================================
every family           ``num_hidden_layers`` -> n_layers, ``hidden_size`` -> d_model,
                       ``num_attention_heads`` -> n_heads, ``num_key_value_heads`` ->
                       n_kv_heads (default: n_heads), ``head_dim`` (default d_model /
                       n_heads), ``vocab_size``, ``max_position_embeddings`` ->
                       max_context, ``tie_word_embeddings`` (default False, as in the
                       Llama, Qwen, Mixtral, DeepSeek and gpt-oss classes)
llama, mistral         ``intermediate_size`` -> d_ff; ``attention_bias`` (q, k, v, o),
                       ``mlp_bias``; ``sliding_window`` on every layer (Mistral 7B v0.1)
qwen2, qwen3           q/k/v biases always (qwen2) / per-head q and k RMSNorm (qwen3);
                       ``sliding_window`` only if ``use_sliding_window`` is true, on the
                       layers from ``max_window_layers`` on
mixtral                ``num_local_experts`` routed experts of width ``intermediate_size``
qwen2_moe, qwen3_moe,  ``num_experts``, ``num_experts_per_tok``, ``moe_intermediate_size``;
qwen3_next
                       qwen2_moe's shared expert (``shared_expert_intermediate_size``, a
                       whole multiple of the expert width) and its ``d x 1`` gate;
                       ``mlp_only_layers`` must be leading layers, ``decoder_sparse_step`` 1.
                       qwen3_next (Qwen3-Next) adds Gated DeltaNet layers (``linear_num_key_heads``,
                       ``linear_num_value_heads``, ``linear_key_head_dim``, ``linear_value_head_dim``,
                       ``linear_conv_kernel_dim``) with gated attention every
                       ``full_attention_interval``-th layer (or ``layer_types``); its MTP module is
                       not in the config, so not counted. qwen3_5_text / qwen3_5_moe_text
                       (Qwen3.5, from the multimodal config's text_config): the same layers,
                       the state in fp32 when ``mamba_ssm_dtype`` says so, its MTP layers
                       (``mtp_num_hidden_layers``) counted apart, sharing the embedding and head
deepseek_v2/v3,        MLA (``q_lora_rank`` (null: a plain q projection), ``kv_lora_rank``,
kimi_k2, deepseek_v32  ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``);
                       ``n_routed_experts``, ``n_shared_experts``, ``moe_intermediate_size``,
                       ``first_k_dense_replace`` dense leading layers, ``moe_layer_freq`` 1;
                       a routing bias when ``topk_method`` is ``noaux_tc`` (V3, K2).
                       ``num_nextn_predict_layers`` -> n_mtp_layers: the MTP modules,
                       counted apart from the served model (``Model.mtp_params``,
                       ``Model.checkpoint_params``), as in the published 671B.
                       deepseek_v32 (V3.2): DeepSeek Sparse Attention, a lightning indexer
                       (``index_n_heads`` x ``index_head_dim``) and ``index_topk``
gpt_oss                attention sinks, q/k/v/o biases, biased experts, a biased router;
                       ``layer_types`` (``sliding_attention`` / ``full_attention``) with
                       ``sliding_window``
gemma3_text            (Gemma 3's language model; ``gemma3`` reads it from ``text_config``)
                       ``intermediate_size`` (GeGLU), per-head q/k RMSNorm, four RMSNorms a
                       layer, a tied head by default, ``vocab_size`` 262,208 by default
                       (Gemma3TextConfig), every ``sliding_window_pattern``-th layer global
                       and the rest windowed (or ``layer_types``)
glm4_moe               GLM-4.5: DeepSeek's MoE layout (``n_routed_experts``,
                       ``n_shared_experts``, ``moe_intermediate_size``,
                       ``first_k_dense_replace`` dense layers of ``intermediate_size``,
                       its MTP modules) on grouped-query attention: q/k/v biases when
                       ``attention_bias``, q/k norms when ``use_qk_norm``, and a routing
                       bias (GLM-4.5's router always has one)
llama4_text            Llama 4 (``llama4`` reads it from ``text_config``): ``num_local_experts``
                       routed experts of ``intermediate_size`` and one shared expert of that
                       width in every ``interleave_moe_layer_step``-th layer (1: Scout; 2:
                       Maverick, dense ``intermediate_size_mlp`` layers between), chunked
                       attention (``attention_chunk_size``) in the
                       rotary layers of ``no_rope_layers``, full attention in the NoPE ones
minimax_m1             MiniMax-M1: lightning attention (a linear layer kind: qkv, an output
                       gate, a norm; a fixed state per head) where ``attn_type_list`` is 0,
                       softmax attention where it is 1, ``num_local_experts`` experts of
                       ``intermediate_size`` in every layer
smollm3                SmolLM3: llama's layout, a tied head by default, NoPE layers
                       (``no_rope_layers``: no weight, no cache byte)
phi3                   Phi-3/Phi-4: llama's layout (q/k/v and gate/up fused in the checkpoint,
                       the same weights); a ``sliding_window`` as long as the context is none
olmoe                  OLMoE: ``num_experts`` of ``intermediate_size``, q/k RMSNorms over the
                       whole projection (``n_h h`` and ``n_kv h`` weights)
hunyuan,               Hunyuan-A13B: ``num_experts`` routed experts (``moe_topk``) and
hunyuan_v1_moe         ``num_shared_expert`` shared ones, all of ``intermediate_size``
                       (per-layer lists must hold one value), a router without bias, per-head
                       q/k RMSNorms (``use_qk_norm``), ``attention_head_dim``, a tied head;
                       cross-layer attention (``use_cla``), MLA, a classification head or a
                       vision tower refused
nemotron_h             Nemotron-H: ``hybrid_override_pattern`` blocks (Mamba-2 ``M``, attention
                       ``*``, squared-ReLU MLP ``-``), a mixer and the MLP after it one layer;
                       Mamba-2 of ``mamba_num_heads`` x ``mamba_head_dim``, ``n_groups`` x
                       ``ssm_state_size``, ``conv_kernel``; MoE blocks (``E``) refused
falcon_h1              Falcon-H1: attention and a Mamba-2 mixer side by side in every layer
                       (``mamba_d_ssm``, ``mamba_n_heads``, ``mamba_n_groups``, ``mamba_d_state``,
                       ``mamba_d_conv``), a SwiGLU MLP; the multipliers hold no weight
jamba                  Jamba: attention every ``attn_layer_period``-th layer (from its offset),
                       Mamba-1 mixers between (``mamba_expand``, ``mamba_d_state``,
                       ``mamba_dt_rank``, ``mamba_d_conv``), experts in every
                       ``expert_layer_period``-th layer
gpt2                   ``n_layer``, ``n_embd``, ``n_head``, ``n_inner`` (default 4 d),
                       ``n_positions`` learned positions, LayerNorm, biases, tied head
bloom                  BLOOM: ``n_layer``, ``n_embed`` (or ``hidden_size``), ``num_attention_heads``
                       (or ``n_head``), a GELU MLP of 4 d, LayerNorms and biases everywhere,
                       ALiBi (no position weight), a LayerNorm after the embedding, a tied
                       head (176,247,271,424 for BLOOM 176B, as its model card counts)
mpt                    MPT (MosaicML): ``n_layers``, ``d_model``, ``n_heads``, ``expansion_ratio``
                       (or ``ffn_config.ffn_hidden_size``), ``vocab_size``, ``max_seq_len``;
                       ``no_bias`` drops every bias (LayerNorms keep a weight only); ALiBi or
                       rotary embeddings in ``attn_config`` leave no learned positions
                       (llm-foundry turns ``learned_pos_emb`` off then); multi-query or grouped-query
                       heads (``attn_config.attn_type``, ``kv_n_heads``); ``ffn_config.ffn_type``
                       ``mptmlp`` or ``te_ln_mlp`` (GELU; its fused LayerNorm keeps a bias
                       ``no_bias`` would drop, d a layer not counted) or ``mptglu`` (gated);
                       ``attn_config.sliding_window_size`` on every layer; a tied head; q/k norms
                       and MoE FFNs refused
gpt_neox               GPT-NeoX / Pythia (EleutherAI): ``num_hidden_layers``, ``hidden_size``,
                       ``num_attention_heads`` (always multi-head, ``d / heads`` wide: the class
                       ignores ``num_key_value_heads`` and ``head_dim``), a plain GELU MLP of
                       ``intermediate_size`` with biases (``mlp_bias`` ignored, as by the class),
                       LayerNorms, biases on q/k/v and the output projection (``attention_bias``,
                       default true), rotary on ``rotary_pct`` of each head (no weight), no sliding
                       window, an untied head unless ``tie_word_embeddings`` (20,554,567,680 for
                       GPT-NeoX-20B, as its model card counts)
=====================  ==================================================================

Fields that do not change a parameter count or a KV byte (token ids, rope
settings, NoPE layers, dropout, initialisation, dtype, quantisation metadata...)
are listed in ``_NO_EFFECT`` and skipped, and so is any field whose value is
zero, null, false or empty: it sizes nothing, whatever its name. A multimodal
config whose language model sits in ``text_config`` is read from there, with a
warning that the vision tower is not counted. Anything else is *unmodelled*. One
whose name says it sizes weights (:func:`holds_parameters`: experts, widths,
heads, layers, a nested sub-model's config) makes the reader refuse the config,
naming it, since the count would leave those weights out; any other goes into
``Model.unmodelled_config_fields`` and a warning, never silently dropped. Without
``model_type``, the family comes from ``architectures`` by exact class name
(``_ARCHITECTURES``), never by a part of one.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

from . import models

# Fields known to change neither a parameter count nor the KV cache.
_NO_EFFECT = frozenset("""
architectures model_type transformers_version torch_dtype dtype use_cache bos_token_id eos_token_id pad_token_id
name name_or_path
hidden_act initializer_range rms_norm_eps layer_norm_eps layer_norm_epsilon rope_theta rope_scaling attention_dropout
pretraining_tp output_router_logits router_aux_loss_coef aux_loss_alpha seq_aux norm_topk_prob scoring_func
routed_scaling_factor n_group topk_group ep_size auto_map quantization_config swiglu_limit initial_context_length
rope_interleave router_jitter_noise embd_pdrop resid_pdrop
attn_pdrop summary_activation summary_first_dropout summary_proj_to_labels summary_type summary_use_proj
scale_attn_weights scale_attn_by_inverse_layer_idx reorder_and_upcast_attn activation_function n_ctx
task_specific_params max_window_layers use_sliding_window
no_rope_layers no_rope_layer_interval
query_pre_attn_scalar rope_local_base_freq final_logit_softcapping attn_logit_softcapping hidden_activation
cache_implementation partial_rotary_factor attn_temperature_tuning floor_scale attn_scale
rotary_dim postnorm shared_moe_mode layernorm_full_attention_alpha layernorm_full_attention_beta
layernorm_linear_attention_alpha layernorm_linear_attention_beta layernorm_mlp_alpha layernorm_mlp_beta
indexer_rope_interleave rope_parameters
eod_token_id sep_token_id mask_init_id pad_id im_start_id im_end_id im_newline_id image_token_id text_start_id
text_end_id video_start_id video_end_id pool_type use_rotary_pos_emb
chunk_size time_step_floor time_step_limit time_step_max time_step_min time_step_rank rescale_prenorm_residual
residual_in_fp32 use_mamba_kernels hidden_dropout mamba_hidden_act num_logits_to_keep
attention_in_multiplier attention_out_multiplier embedding_multiplier key_multiplier lm_head_multiplier
mlp_multipliers ssm_in_multiplier ssm_multipliers ssm_out_multiplier mamba_chunk_size mamba_norm_before_gate
apply_residual_connection_post_layernorm attention_softmax_in_fp32 bias_dropout_fusion masked_softmax_fusion
slow_but_exact offset_alibi skip_bias_add skip_bias_add_qkv unk_token_id
emb_pdrop init_device init_config verbose embedding_fraction logit_scale tokenizer_name fc_type
rotary_pct rotary_emb_base use_parallel_residual classifier_dropout tokenizer_class""".split())
# (NoPE layers, SmolLM3's no_rope_layers and Llama 4's interval, skip the rotary embedding: no weight, no cache byte.)


def _sizes_nothing(value) -> bool:
    """A zero, null, false or empty field sizes nothing, whatever its name (Qwen3-Coder-480B's
    ``shared_expert_intermediate_size: 0``): it is neither refused nor reported as unmodelled."""
    if value is None or value is False:
        return True
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == 0
    return isinstance(value, (list, tuple, dict, str)) and len(value) == 0

_FAMILIES = ("llama", "llama4_text", "smollm3", "phi3", "mistral", "mixtral", "minimax_m1", "olmoe", "qwen2",
             "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "deepseek_v32",
             "deepseek_v2",
             "deepseek_v3", "kimi_k2", "gpt_oss", "gpt2", "gemma3_text", "glm4_moe", "hunyuan", "hunyuan_v1_moe",
             "nemotron_h", "falcon_h1", "jamba", "bloom", "mpt", "gpt_neox")


# Families whose layers this reader could express but does not read, each with what is missing: a reading is added
# only with its authors' config.json and a published count to check it against.
_NOT_YET_READ = {
    "minimax_m2": "MiniMax-M2's MoE layers (sigmoid router with a bias, q/k norms over the whole projection, partial "
                  "rotary) would read as glm4_moe's, but no config.json as MiniMax published it and no parameter count "
                  "finer than '230B total, 10B active' were at hand to check the reading against",
    "ernie4_5_moe": "ERNIE 4.5's MoE layers (moe_layer_start_index / end / interval, moe_num_shared_experts, "
                    "num_nextn_predict_layers) would read as deepseek's, but no config.json as Baidu published it and "
                    "no count finer than the '21B / 3B' of its name were at hand to check the reading against",
}


def _load(path_or_dict) -> tuple[dict, str]:
    if isinstance(path_or_dict, dict):
        return dict(path_or_dict), "a config dict"
    if not isinstance(path_or_dict, (str, os.PathLike)):
        raise TypeError(f"config must be a path to a config.json or a dict, got {type(path_or_dict).__name__}")
    p = Path(path_or_dict)
    if p.is_dir():
        p = p / "config.json"
    if not p.exists():
        raise FileNotFoundError(f"no config file at {str(p)!r} (give the path of a config.json or its folder; "
                                f"nothing is downloaded)")
    try:
        cfg = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ValueError(f"{p}: not valid JSON ({e})") from None
    if not isinstance(cfg, dict):
        raise ValueError(f"{p}: a config.json holds one JSON object, got {type(cfg).__name__}")
    return cfg, str(p)


class _Reader:
    """Reads fields off a config and remembers which it used."""

    def __init__(self, cfg: dict, where: str, family: str = ""):
        self.cfg, self.where, self.used, self.family = cfg, where, set(), family or cfg.get("model_type")

    def has(self, key) -> bool:
        return self.cfg.get(key) is not None

    def get(self, key, default=None):
        self.used.add(key)
        v = self.cfg.get(key)
        return default if v is None else v

    def need(self, key):
        self.used.add(key)
        if self.cfg.get(key) is None:
            raise ValueError(f"{self.where}: field {key!r} is required for model_type "
                             f"{self.family!r} and is missing")
        return self.cfg[key]

    def int(self, key, default=None):
        v = self.need(key) if default is None else self.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
            raise ValueError(f"{self.where}: field {key!r} must be a whole number, got {v!r}")
        return int(v)


# The class names ``transformers`` writes into a config's ``architectures`` for each family this reader
# knows, matched exactly (a substring match once read Llama4ForCausalLM as Llama and Qwen3NextForCausalLM
# as Qwen3, and returned 11.1B and 3.0B for models of 109B and 80B).
_ARCHITECTURES = {"LlamaForCausalLM": "llama", "Llama4ForCausalLM": "llama4_text", "SmolLM3ForCausalLM": "smollm3",
                  "Phi3ForCausalLM": "phi3", "OlmoeForCausalLM": "olmoe", "MiniMaxM1ForCausalLM": "minimax_m1",
                  "DeepseekV32ForCausalLM": "deepseek_v32", "MistralForCausalLM": "mistral", "MixtralForCausalLM": "mixtral",
                  "Qwen2ForCausalLM": "qwen2", "Qwen2MoeForCausalLM": "qwen2_moe", "Qwen3ForCausalLM": "qwen3",
                  "Qwen3MoeForCausalLM": "qwen3_moe", "Qwen3NextForCausalLM": "qwen3_next",
                  "DeepseekV2ForCausalLM": "deepseek_v2",
                  "Gemma3ForCausalLM": "gemma3_text", "Glm4MoeForCausalLM": "glm4_moe",
                  "DeepseekV3ForCausalLM": "deepseek_v3", "GptOssForCausalLM": "gpt_oss", "GPT2LMHeadModel": "gpt2",
                  "HunYuanMoEV1ForCausalLM": "hunyuan_v1_moe", "NemotronHForCausalLM": "nemotron_h",
                  "FalconH1ForCausalLM": "falcon_h1", "JambaForCausalLM": "jamba", "BloomForCausalLM": "bloom",
                  "MPTForCausalLM": "mpt", "GPTNeoXForCausalLM": "gpt_neox"}

# Parts of a field's name that say it sizes weights (experts, widths, heads, layers, a nested sub-model's
# config): such a field left unread would leave parameters out of the count, so the reader refuses it.
_SIZES_WEIGHTS = ("expert", "intermediate_size", "lora_rank", "head_dim", "_heads", "hidden_size", "layers",
                  "vocab", "_config", "linear_", "conv_kernel", "moe", "sparse_step")


def holds_parameters(field: str) -> bool:
    """Whether a config field's name says it sizes weights (:data:`_SIZES_WEIGHTS`)."""
    return any(part in field for part in _SIZES_WEIGHTS)


def _model_type(cfg: dict, where: str) -> str:
    mt = cfg.get("model_type")
    if mt is None:  # an old config: its architecture's class name, exactly
        archs = cfg.get("architectures") or []
        known = {_ARCHITECTURES[a] for a in archs if a in _ARCHITECTURES}
        if len(known) == 1:
            return known.pop()
        raise ValueError(f"{where}: no 'model_type', and architectures {archs} name "
                         f"{'no class' if not known else 'more than one family'} this reader knows; known classes: "
                         f"{', '.join(_ARCHITECTURES)}; or give model_type, one of: {', '.join(_FAMILIES)}")
    if mt in _NOT_YET_READ:
        raise ValueError(f"{where}: model_type {mt!r} is not read yet: {_NOT_YET_READ[mt]}; families read: "
                         f"{', '.join(_FAMILIES)}")
    if mt not in _FAMILIES:
        raise ValueError(f"{where}: model_type {mt!r} is not one this reader understands; allowed: "
                         f"{', '.join(_FAMILIES)}")
    return mt


def _language_model(cfg: dict, where: str, warn: bool) -> tuple[dict, str]:
    """A multimodal config (Mistral Small 3.1's ``mistral3``, ...) keeps its language model in ``text_config``: that
    is what is read, and the reader says so (the vision tower and the projector are not counted)."""
    inner = cfg.get("text_config")
    if not isinstance(inner, dict) or not inner or cfg.get("model_type") in _FAMILIES:
        return cfg, ""
    text = dict(inner)
    if "tie_word_embeddings" in cfg and "tie_word_embeddings" not in text:     # a top-level setting it inherits
        text["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    left = [k for k in ("vision_config", "audio_config") if cfg.get(k)]
    said = (f"a multimodal config (model_type {cfg.get('model_type')!r}): its language model, text_config "
            f"(model_type {text.get('model_type')!r}), is read; "
            + (f"{' and '.join(left)} and the projector are not counted" if left else "nothing else is counted"))
    if warn:
        warnings.warn(f"{where}: {said}", UserWarning, stacklevel=4)
    return text, said


def build(path_or_dict, name: str | None = None, warn: bool = True) -> models.Model:
    """See :func:`llmmath.models.from_hf_config`."""
    cfg, where = _load(path_or_dict)
    cfg, multimodal = _language_model(cfg, where, warn)
    mt = _model_type(cfg, where)
    r = _Reader(cfg, where, mt)
    r.used.update({"model_type", "architectures"})
    kw: dict = {}
    if mt == "gpt2":
        d = r.int("n_embd")
        kw.update(n_layers=r.int("n_layer"), d_model=d, n_heads=r.int("n_head"), vocab=r.int("vocab_size"),
                  d_ff=r.int("n_inner", 4 * d), max_context=r.int("n_positions"), norm="layernorm",
                  pos_embedding="learned", gated_mlp=False, attn_bias=True, mlp_bias=True,
                  tied_embeddings=bool(r.get("tie_word_embeddings", True)))
        kw["n_kv_heads"] = kw["n_heads"]
        kw["head_dim"] = d // kw["n_heads"]
    elif mt == "bloom":
        _bloom(r, kw)
    elif mt == "mpt":
        _mpt(r, kw)
    else:
        d, nh = r.int("hidden_size"), r.int("num_attention_heads")
        gemma = mt == "gemma3_text"                     # Gemma3TextConfig's defaults: a tied head, 262,208 tokens
        tied_default = gemma or mt == "smollm3"         # SmolLM3Config ties the head by default too
        # GPTNeoXConfig: always multi-head, d / heads wide; biased q/k/v/dense and MLP, LayerNorms, a plain GELU MLP
        neox = mt == "gpt_neox"
        kw.update(n_layers=r.int("num_hidden_layers"), d_model=d, n_heads=nh,
                  n_kv_heads=nh if neox else r.int("num_key_value_heads", nh),
                  vocab=r.int("vocab_size", 262208) if gemma else r.int("vocab_size"),
                  max_context=r.int("max_position_embeddings", 0),
                  tied_embeddings=bool(r.get("tie_word_embeddings", tied_default)))
        kw["head_dim"] = r.int("head_dim", d // nh) if r.has("head_dim") and not neox else d // nh
        r.used.add("head_dim")
        kw["attn_bias"] = bool(r.get("attention_bias", neox))
        kw["mlp_bias"] = True if neox else bool(r.get("mlp_bias", False))       # GPT-NeoX's MLP always has biases
        if neox:
            r.used.update({"mlp_bias", "num_key_value_heads"})                   # fields its class ignores
            kw.update(norm="layernorm", gated_mlp=False, pos_embedding="rope")
        if mt in ("qwen2", "qwen2_moe"):
            kw["qkv_bias"], kw["attn_bias"] = not kw["attn_bias"], kw["attn_bias"]
        qwen35 = mt in ("qwen3_5_text", "qwen3_5_moe_text")
        if mt in ("qwen3", "qwen3_moe", "qwen3_next") or qwen35:
            kw["qk_norm"] = True
        if mt == "olmoe":                               # RMSNorms over the whole q and k projections
            kw.update(qk_norm=True, qk_norm_full_width=True)
            if r.get("clip_qkv") is not None:
                r.used.add("clip_qkv")
        if mt == "qwen3_next" or qwen35:
            _gated_deltanet(r, kw)
        if qwen35:                                    # Qwen3.5: the gate and the fp32 state said in the config
            kw["attn_output_gate"] = bool(r.get("attn_output_gate", True))
            kw["linear_state_fp32"] = r.get("mamba_ssm_dtype", "") == "float32"
            kw["n_mtp_layers"] = r.int("mtp_num_hidden_layers", 0)     # counted apart, sharing the embeddings
            kw["mtp_own_embeddings"] = bool(r.get("mtp_use_dedicated_embeddings", False))
        if gemma:
            kw.update(qk_norm=True, sandwich_norms=True)
        _sliding(r, mt, kw)
        if mt in ("llama", "smollm3", "phi3", "mistral", "qwen2", "qwen3", "gemma3_text", "qwen3_5_text", "gpt_neox"):
            kw["d_ff"] = r.int("intermediate_size")
        elif mt == "olmoe":
            kw.update(d_ff=0, n_experts=r.int("num_experts"), experts_per_token=r.int("num_experts_per_tok"),
                      d_ff_expert=r.int("intermediate_size"))
        elif mt == "llama4_text":
            _llama4(r, kw)
        elif mt == "minimax_m1":
            _minimax_m1(r, kw)
        elif mt == "mixtral":
            kw.update(d_ff=0, n_experts=r.int("num_local_experts"), experts_per_token=r.int("num_experts_per_tok"),
                      d_ff_expert=r.int("intermediate_size"))
        elif mt in ("qwen2_moe", "qwen3_moe", "qwen3_next", "qwen3_5_moe_text"):
            _qwen_moe(r, mt, kw)
        elif mt in ("deepseek_v2", "deepseek_v3", "kimi_k2", "deepseek_v32"):
            _deepseek(r, kw)
            if mt == "deepseek_v32":                    # DeepSeek Sparse Attention: the lightning indexer
                kw.update(index_topk=r.int("index_topk"), index_heads=r.int("index_n_heads"),
                          index_head_dim=r.int("index_head_dim"))
        elif mt == "glm4_moe":
            kw.update(qkv_bias=kw["attn_bias"], attn_bias=False, qk_norm=bool(r.get("use_qk_norm", False)),
                      d_ff=r.int("intermediate_size"), n_experts=r.int("n_routed_experts"),
                      experts_per_token=r.int("num_experts_per_tok"), n_shared_experts=r.int("n_shared_experts", 0),
                      d_ff_expert=r.int("moe_intermediate_size"), n_dense_layers=r.int("first_k_dense_replace", 0),
                      router_bias=True, n_mtp_layers=r.int("num_nextn_predict_layers", 0))
        elif mt in ("hunyuan", "hunyuan_v1_moe"):
            _hunyuan(r, kw)
        elif mt == "nemotron_h":
            _nemotron_h(r, kw)
        elif mt == "falcon_h1":
            _falcon_h1(r, kw)
        elif mt == "jamba":
            _jamba(r, kw)
        elif mt == "gpt_oss":
            k = r.int("num_experts_per_tok") if r.has("num_experts_per_tok") else r.int("experts_per_token")
            r.used.update({"num_experts_per_tok", "experts_per_token"})
            kw.update(d_ff=0, n_experts=r.int("num_local_experts"), experts_per_token=k,
                      d_ff_expert=r.int("intermediate_size"), attn_bias=True, mlp_bias=True, router_bias=True,
                      attn_sinks=True)
    unknown = tuple(sorted(k for k in cfg if not k.startswith("_") and k not in r.used and k not in _NO_EFFECT
                           and not _sizes_nothing(cfg[k])))
    sizing = [k for k in unknown if holds_parameters(k)]
    if sizing:
        raise ValueError(f"{where}: model_type {mt!r} is read as {mt} here, but its fields {', '.join(sizing)} size "
                         f"weights that family does not have (experts, widths, heads or a sub-model this reader "
                         f"does not model): counting without them would be wrong, so the config is refused")
    key = name or _default_name(cfg, where, mt)
    if unknown and warn:
        warnings.warn(f"{where} ({key}): config fields not modelled (they may change the count): "
                      f"{', '.join(unknown)}", UserWarning, stacklevel=3)
    note = f"read from {where} by models.from_hf_config (model_type {mt})" + (f"; {multimodal}" if multimodal else "")
    try:
        return models.Model(key=key, name=name or key, source=where if where != "a config dict" else "",
                            note=note, unmodelled_config_fields=unknown, **kw)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where}: the config describes a model this schema refuses: {e}") from None


def _either(r: _Reader, *keys: str) -> int:
    """The first of ``keys`` the config gives (BloomConfig accepts ``n_embed`` or ``hidden_size``, ...)."""
    for k in keys:
        if r.has(k):
            r.used.update(keys)
            return r.int(k)
    return r.int(keys[0])                                # missing: the error names the first spelling


def _bloom(r: _Reader, kw: dict) -> None:
    """BLOOM (BigScience): GPT-style blocks with biases and LayerNorms, ALiBi, a LayerNorm after the embedding."""
    d, nh = _either(r, "n_embed", "hidden_size"), _either(r, "num_attention_heads", "n_head")
    kw.update(n_layers=_either(r, "n_layer", "num_hidden_layers"), d_model=d, n_heads=nh, n_kv_heads=nh,
              head_dim=d // nh, vocab=r.int("vocab_size"), d_ff=4 * d, max_context=r.int("seq_length", 0),
              norm="layernorm", pos_embedding="alibi", embedding_norm=True, gated_mlp=False, attn_bias=True,
              mlp_bias=True, tied_embeddings=bool(r.get("tie_word_embeddings", True)))
    if d % nh:
        raise ValueError(f"{r.where}: hidden size {d} must split into {nh} heads evenly")


def _mpt(r: _Reader, kw: dict) -> None:
    """MPT (MosaicML llm-foundry's ``mpt_causal_lm``, ``configuration_mpt.py``)."""
    d, nh = r.int("d_model"), r.int("n_heads")
    attn = r.get("attn_config", {}) or {}
    ffn = r.get("ffn_config", {}) or {}
    if not isinstance(attn, dict) or not isinstance(ffn, dict):
        raise ValueError(f"{r.where}: attn_config and ffn_config must be objects")
    if attn.get("qk_ln") or attn.get("qk_gn"):
        raise ValueError(f"{r.where}: attn_config.qk_ln / qk_gn (norms on q and k) are not read; allowed: false")
    kind = ffn.get("ffn_type", "mptmlp")
    if kind not in ("mptmlp", "mptglu", "te_ln_mlp"):          # te_ln_mlp: Transformer Engine's fused LN + MLP
        raise ValueError(f"{r.where}: ffn_config.ffn_type {kind!r} is not read (an MoE FFN); allowed: mptmlp, "
                         f"mptglu, te_ln_mlp")
    ratio = r.get("expansion_ratio", 4)
    d_ff = int(ffn["ffn_hidden_size"]) if ffn.get("ffn_hidden_size") else int(ratio * d)
    kind_attn = attn.get("attn_type", "multihead_attention")
    if kind_attn not in ("multihead_attention", "multiquery_attention", "grouped_query_attention"):
        raise ValueError(f"{r.where}: attn_config.attn_type {kind_attn!r} is not read; allowed: multihead_attention, "
                         f"multiquery_attention, grouped_query_attention")
    kv = {"multihead_attention": nh, "multiquery_attention": 1}.get(kind_attn) or int(attn.get("kv_n_heads") or 0)
    if not kv:
        raise ValueError(f"{r.where}: grouped_query_attention needs attn_config.kv_n_heads")
    positional = bool(attn.get("alibi", False)) or bool(attn.get("rope", False))
    learned = bool(r.get("learned_pos_emb", True)) and not positional    # llm-foundry: alibi/rope turn it off
    no_bias = bool(r.get("no_bias", False))
    norm = str(r.get("norm_type", "low_precision_layernorm"))
    window = int(attn.get("sliding_window_size") or -1)         # llm-foundry: -1 = no window, else every layer
    if window > 0:
        kw.update(sliding_window=window, n_window_layers=r.int("n_layers"))
    kw.update(n_layers=r.int("n_layers"), d_model=d, n_heads=nh, n_kv_heads=kv, head_dim=d // nh,
              vocab=r.int("vocab_size"), d_ff=d_ff, max_context=r.int("max_seq_len", 2048),
              norm="rmsnorm" if "rmsnorm" in norm else "layernorm_nobias" if no_bias else "layernorm",
              pos_embedding="learned" if learned else "rope" if attn.get("rope") else "alibi",
              gated_mlp=kind == "mptglu", attn_bias=not no_bias, mlp_bias=not no_bias,
              tied_embeddings=bool(r.get("tie_word_embeddings", True)))


def _default_name(cfg: dict, where: str, mt: str) -> str:
    """The model's key when none is given: the config's own name (``_name_or_path``, ``name_or_path``
    or ``name``, its last path part), else the file's name without ``.json``, or the folder's for a
    ``config.json``; ``hf-<model_type>`` only for a dict that names nothing."""
    for field in ("_name_or_path", "name_or_path", "name"):
        v = cfg.get(field)
        if isinstance(v, str) and v.strip().strip("/"):
            return v.strip().strip("/").split("/")[-1].lower()
    if where != "a config dict":
        p = Path(where)
        stem = p.parent.name if p.name == "config.json" else p.stem
        if stem.strip():
            return stem.strip().lower()
    return f"hf-{mt}"


def _sliding(r: _Reader, mt: str, kw: dict) -> None:
    """Windowed layers: gpt-oss's ``layer_types``, Mistral's window on every layer, Qwen's opt-in window."""
    # Qwen3-Next/3.5's layer_types say linear or full (_gated_deltanet); GPT-NeoX attends over the whole context
    if mt in ("qwen3_next", "qwen3_5_text", "qwen3_5_moe_text", "gpt_neox"):
        return
    window = r.get("sliding_window")
    types = r.get("layer_types")
    if types is not None:
        allowed = {"sliding_attention", "full_attention"}
        bad = sorted(set(types) - allowed)
        if bad or len(types) != kw["n_layers"]:
            raise ValueError(f"{r.where}: layer_types must list {kw['n_layers']} entries from {sorted(allowed)}, "
                             f"got {len(types)} entries{' with ' + str(bad) if bad else ''}")
        n_win = sum(t == "sliding_attention" for t in types)
        if n_win and not window:
            raise ValueError(f"{r.where}: layer_types has sliding_attention layers but sliding_window is not set")
        if n_win:
            kw.update(sliding_window=int(window), n_window_layers=n_win)
        return
    if not window:
        return
    if mt in ("qwen2", "qwen2_moe", "qwen3", "qwen3_moe"):
        if r.get("use_sliding_window", False):
            first = r.int("max_window_layers", kw["n_layers"])
            if kw["n_layers"] - first:
                kw.update(sliding_window=int(window), n_window_layers=kw["n_layers"] - first)
        return
    if mt == "gemma3_text":                           # every pattern-th layer global, the others windowed
        pattern = r.int("sliding_window_pattern", 6)
        n_global = kw["n_layers"] // pattern
        kw.update(sliding_window=int(window), n_window_layers=kw["n_layers"] - n_global)
        return
    if mt in ("mistral", "llama", "mixtral", "phi3") and int(window) < kw["max_context"]:
        kw.update(sliding_window=int(window), n_window_layers=kw["n_layers"])


def _qwen_moe(r: _Reader, mt: str, kw: dict) -> None:
    n = kw["n_layers"]
    step = r.int("decoder_sparse_step", 1)
    only = list(r.get("mlp_only_layers", []) or [])
    if step != 1:
        raise ValueError(f"{r.where}: decoder_sparse_step={step}: MoE every {step}th layer is not expressible; "
                         f"allowed: 1 (every layer MoE, except leading mlp_only_layers)")
    if sorted(only) != list(range(len(only))):
        raise ValueError(f"{r.where}: mlp_only_layers={only}: only leading dense layers [0, 1, ...] are "
                         f"expressible")
    kw.update(n_experts=r.int("num_experts"), experts_per_token=r.int("num_experts_per_tok"),
              d_ff_expert=r.int("moe_intermediate_size"), n_dense_layers=len(only),
              d_ff=r.int("intermediate_size") if only else 0)
    r.used.add("intermediate_size")  # the dense width, used only by mlp_only_layers
    if mt in ("qwen2_moe", "qwen3_next", "qwen3_5_moe_text"):
        shared = r.int("shared_expert_intermediate_size", 0)
        if shared:
            if shared % kw["d_ff_expert"]:
                raise ValueError(f"{r.where}: shared_expert_intermediate_size={shared} is not a whole multiple of "
                                 f"moe_intermediate_size={kw['d_ff_expert']}; this schema counts shared experts "
                                 f"in units of the routed width")
            kw.update(n_shared_experts=shared // kw["d_ff_expert"], shared_expert_gate=True)


def _llama4(r: _Reader, kw: dict) -> None:
    """Llama 4's language model: routed experts of ``intermediate_size`` with one shared expert of the same width in
    every ``interleave_moe_layer_step``-th layer (1: all, Scout; 2: Maverick, dense layers of ``intermediate_size_mlp``
    between), chunked local attention (``attention_chunk_size``)
    in the layers with rotary positions and full attention in the NoPE ones (``no_rope_layers``: 1 rope, 0 NoPE),
    q/k L2 norms without weights."""
    n = kw["n_layers"]
    step = r.int("interleave_moe_layer_step", 1)
    moe_layers = r.get("moe_layers")
    if step < 1 or (moe_layers is not None and list(moe_layers) != list(range(step - 1, n, step))):
        raise ValueError(f"{r.where}: moe_layers={moe_layers} with interleave_moe_layer_step={step}: only every "
                         f"step-th layer from layer step - 1 (Llama4TextConfig's rule) is expressible")
    rope = r.get("no_rope_layers")
    if rope is None:                                   # Llama4TextConfig: NoPE every no_rope_layer_interval-th
        every = r.int("no_rope_layer_interval", 4)
        rope = [int((i + 1) % every != 0) for i in range(n)]
    if len(rope) != n or set(rope) - {0, 1}:
        raise ValueError(f"{r.where}: no_rope_layers must list {n} entries of 0 (NoPE, full attention) or 1 "
                         f"(rotary, chunked attention), got {len(rope)} entries")
    chunk = r.int("attention_chunk_size", 0)
    n_chunked = sum(rope) if chunk else 0
    kw.update(d_ff=r.int("intermediate_size_mlp") if step > 1 else 0, n_experts=r.int("num_local_experts"),
              experts_per_token=r.int("num_experts_per_tok"), d_ff_expert=r.int("intermediate_size"),
              n_shared_experts=1, moe_layer_step=step, attention_chunk=chunk if n_chunked else 0,
              n_chunked_layers=n_chunked)
    r.used.update({"intermediate_size_mlp", "use_qk_norm", "moe_layers"})   # q/k L2 norms carry no weight


def _one_value(r: _Reader, key: str, n_layers: int, default=None) -> int:
    """A per-layer list that must hold one value (Hunyuan writes ``moe_topk`` and the expert widths once a layer), or
    a plain number."""
    v = r.get(key, default)
    if isinstance(v, list):
        if len(v) != n_layers or len(set(v)) != 1:
            raise ValueError(f"{r.where}: {key}={v}: a value a layer that differs between layers (or a list of "
                             f"{len(v)} for {n_layers} layers) is not expressible; allowed: one value for every layer")
        v = v[0]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != int(v):
        raise ValueError(f"{r.where}: field {key!r} must be a whole number or a list of one, got {v!r}")
    return int(v)


def _hunyuan(r: _Reader, kw: dict) -> None:
    """Hunyuan-A13B (Tencent's ``hunyuan`` config, ``hunyuan_v1_moe`` in transformers; modeling_hunyuan.py):
    grouped-query attention of ``attention_head_dim``, per-head q/k RMSNorms when ``use_qk_norm``; ``num_experts``
    routed experts (``moe_topk`` a token) of ``intermediate_size`` beside ``num_shared_expert`` shared ones of that
    width when ``use_mixed_mlp_moe`` (HunYuanMLP with is_shared_mlp); a router ``d x E`` (HunYuanTopKGate's ``wg``,
    stored in fp32: counted as parameters, its bytes as the model's dtype); ``moe_layer_num_skipped`` leading dense
    layers. Cross-layer attention (``use_cla``, K/V shared by
    ``cla_share_factor`` layers) and MLA are refused; the classification head (``dense_list``) and the vision fields
    count only when a classification head or a vision tower is configured, and are refused then."""
    n = kw["n_layers"]
    if r.has("attention_head_dim"):
        kw["head_dim"] = r.int("attention_head_dim")
    for flag, what in (("use_cla", "cross-layer attention (K/V shared between cla_share_factor layers)"),
                       ("use_mla", "multi-head latent attention"), ("add_classification_head", "a classification head"),
                       ("vit_type", "a vision tower"), ("vit_path", "a vision tower")):
        if r.get(flag):
            raise ValueError(f"{r.where}: {flag}={r.cfg[flag]!r}: {what} is not modelled for Hunyuan; allowed: "
                             f"false or null")
    # fields that size nothing without cross-layer attention, a classification head or a vision tower
    r.used.update({"cla_share_factor", "dense_list", "class_num", "num_media_embeds", "kv_lora_rank", "q_lora_rank",
                   "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "org_vocab_size"}
                  | {k for k in r.cfg if k.startswith(("vit_", "anyres_"))})
    if r.has("org_vocab_size") and r.int("org_vocab_size") != kw["vocab"]:
        raise ValueError(f"{r.where}: org_vocab_size={r.cfg['org_vocab_size']} differs from vocab_size="
                         f"{kw['vocab']}; allowed: equal (one embedding table)")
    kw["qk_norm"] = bool(r.get("use_qk_norm", False))
    if r.get("norm_type", "rms") != "rms":
        raise ValueError(f"{r.where}: norm_type={r.cfg['norm_type']!r}: allowed: 'rms' (Hunyuan-A13B's RMSNorm)")
    width = r.int("intermediate_size")
    expert = _one_value(r, "moe_intermediate_size", n, width)
    if expert != width:
        raise ValueError(f"{r.where}: moe_intermediate_size={expert} differs from intermediate_size={width}: "
                         f"HunYuanMLP sizes routed and shared experts by intermediate_size; allowed: equal")
    shared = _one_value(r, "num_shared_expert", n, 1) if r.get("use_mixed_mlp_moe", False) else 0
    r.used.add("num_shared_expert")
    dense = r.int("moe_layer_num_skipped", 0)
    kw.update(n_experts=r.int("num_experts"), experts_per_token=_one_value(r, "moe_topk", n),
              d_ff_expert=expert, n_shared_experts=shared, n_dense_layers=dense, d_ff=width if dense else 0)


def _nemotron_h(r: _Reader, kw: dict) -> None:
    """Nemotron-H (transformers' NemotronHForCausalLM): a stack of blocks, each one RMSNorm and one of a Mamba-2 mixer
    (``M``), attention (``*``) or a squared-ReLU MLP (``-``), as ``hybrid_override_pattern`` spells them. A mixer
    and the MLP block after it read as one layer; a mixer followed by another mixer is a layer without MLP
    (``Model.mlp_free_layer_ids``), so the counts are exact. The Mamba-2 mixer (NemotronHMamba2Mixer):
    ``mamba_num_heads`` heads of ``mamba_head_dim`` (its width, whatever ``expand`` says), ``n_groups`` groups of
    ``ssm_state_size``, a convolution of ``conv_kernel`` taps with a bias when ``use_conv_bias``, a gated RMSNorm.
    Refused: MoE blocks (``E``), an MLP block with no mixer before it, biased Mamba projections."""
    pattern = r.need("hybrid_override_pattern")
    n_blocks = r.int("num_hidden_layers")
    if not isinstance(pattern, str) or len(pattern) != n_blocks or set(pattern) - set("M*-"):
        raise ValueError(f"{r.where}: hybrid_override_pattern must spell {n_blocks} blocks (num_hidden_layers) from "
                         f"'M' (Mamba-2), '*' (attention) and '-' (MLP), got {pattern!r}"
                         + (": 'E' (MoE) blocks are not read" if isinstance(pattern, str) and "E" in pattern else ""))
    layers: list[list[str]] = []          # [mixer, has an MLP]
    for i, c in enumerate(pattern):
        if c in "M*":
            layers.append([c, False])
        elif not layers or layers[-1][1]:
            raise ValueError(f"{r.where}: hybrid_override_pattern block {i} is an MLP with no mixer before it "
                             f"({pattern[max(i - 2, 0):i + 1]!r}); allowed: each '-' right after an 'M' or '*'")
        else:
            layers[-1][1] = True
    if r.get("use_bias", False) or r.get("mamba_proj_bias", False):
        raise ValueError(f"{r.where}: biased Mamba-2 projections (use_bias / mamba_proj_bias) are not modelled; "
                         f"allowed: false")
    if r.has("n_groups") and r.has("mamba_n_groups"):
        raise ValueError(f"{r.where}: give n_groups or mamba_n_groups, not both")
    groups = r.int("n_groups") if r.has("n_groups") else r.int("mamba_n_groups")
    r.used.update({"n_groups", "mamba_n_groups", "expand", "mlp_hidden_act"})
    if r.has("attention_head_dim"):
        kw["head_dim"] = r.int("attention_head_dim")
    kw.update(n_layers=len(layers), d_ff=r.int("intermediate_size"), gated_mlp=False,
              linear_layer_ids=tuple(i for i, (c, _) in enumerate(layers) if c == "M"), linear_kind="mamba2",
              mlp_free_layer_ids=tuple(i for i, (_, mlp) in enumerate(layers) if not mlp),
              linear_value_heads=r.int("mamba_num_heads"), linear_value_head_dim=r.int("mamba_head_dim"),
              linear_key_heads=groups, linear_key_head_dim=r.int("ssm_state_size"),
              linear_conv_kernel=r.int("conv_kernel"), linear_conv_bias=bool(r.get("use_conv_bias", True)))


def _falcon_h1(r: _Reader, kw: dict) -> None:
    """Falcon-H1 (transformers' FalconH1ForCausalLM): every layer runs attention and a Mamba-2 mixer side by side on
    one normed input (``Model.linear_in_parallel``), then a SwiGLU MLP of ``intermediate_size``. The mixer
    (FalconH1Mixer): ``mamba_d_ssm`` channels (default ``mamba_expand x hidden_size``) in ``mamba_n_heads`` heads,
    ``mamba_n_groups`` groups of ``mamba_d_state``, a convolution of ``mamba_d_conv`` taps (a bias when
    ``mamba_conv_bias``), a gated RMSNorm only when ``mamba_rms_norm``. The multipliers scale activations and hold
    no weight. Refused: attention in only some layers (``attn_layer_indices``), layers without MLP
    (``mamba_use_mlp`` false), biased projections (``mamba_proj_bias``, ``projectors_bias``)."""
    d = kw["d_model"]
    for flag, bad, what in (("attn_layer_indices", lambda v: v, "attention in some layers only"),
                            ("mamba_use_mlp", lambda v: v is False, "layers without an MLP"),
                            ("mamba_proj_bias", lambda v: v, "a biased Mamba input projection"),
                            ("projectors_bias", lambda v: v, "biased projections")):
        if bad(r.cfg.get(flag)):
            raise ValueError(f"{r.where}: {flag}={r.cfg[flag]!r}: {what} is not modelled for Falcon-H1")
        r.used.add(flag)
    heads = r.int("mamba_n_heads")
    inner = r.int("mamba_d_ssm") if r.has("mamba_d_ssm") else r.int("mamba_expand", 2) * d
    r.used.add("mamba_expand")
    if inner % heads:
        raise ValueError(f"{r.where}: mamba_d_ssm={inner} is not a whole number of mamba_n_heads={heads} heads")
    if r.has("mamba_d_head") and r.cfg["mamba_d_head"] != "auto" and r.int("mamba_d_head") != inner // heads:
        raise ValueError(f"{r.where}: mamba_d_head={r.cfg['mamba_d_head']} x mamba_n_heads={heads} must equal "
                         f"mamba_d_ssm={inner}")
    r.used.add("mamba_d_head")
    kw.update(d_ff=r.int("intermediate_size"), linear_layer_ids=tuple(range(kw["n_layers"])), linear_kind="mamba2",
              linear_in_parallel=True, linear_value_heads=heads, linear_value_head_dim=inner // heads,
              linear_key_heads=r.int("mamba_n_groups", 1), linear_key_head_dim=r.int("mamba_d_state"),
              linear_conv_kernel=r.int("mamba_d_conv", 4), linear_conv_bias=bool(r.get("mamba_conv_bias", True)),
              linear_out_norm=bool(r.get("mamba_rms_norm", False)))


def _jamba(r: _Reader, kw: dict) -> None:
    """Jamba (transformers' JambaForCausalLM): attention in layers ``i`` with ``i % attn_layer_period ==
    attn_layer_offset``, a Mamba-1 mixer (JambaMambaMixer) in the others: ``mamba_expand x hidden_size`` channels,
    ``mamba_d_state`` state, a step of rank ``mamba_dt_rank`` (``"auto"``: ``ceil(hidden_size / 16)``), a convolution
    of ``mamba_d_conv`` taps (a bias when ``mamba_conv_bias``), RMSNorms on the step, B and C; ``num_experts`` experts
    (top ``num_experts_per_tok``) of ``intermediate_size`` in every ``expert_layer_period``-th layer from
    ``expert_layer_offset``, which must be the period's last layer (Jamba's 1 of 2), dense MLPs of that width between.
    Refused: biased Mamba projections (``mamba_proj_bias``)."""
    n, d = kw["n_layers"], kw["d_model"]
    period, offset = r.int("attn_layer_period", 8), r.int("attn_layer_offset", 4)
    e_period, e_offset = r.int("expert_layer_period", 2), r.int("expert_layer_offset", 1)
    if not 0 <= offset < period:
        raise ValueError(f"{r.where}: attn_layer_offset={offset} must be in 0..attn_layer_period - 1 = {period - 1}")
    if r.get("mamba_proj_bias", False):
        raise ValueError(f"{r.where}: mamba_proj_bias=true: a biased Mamba projection is not modelled; allowed: false")
    experts = r.int("num_experts", 1)
    if experts > 1 and e_offset != e_period - 1:
        raise ValueError(f"{r.where}: expert_layer_offset={e_offset} with expert_layer_period={e_period}: experts must "
                         f"sit in the period's last layer (offset = period - 1, Jamba's 1 of 2) to be expressed")
    rank = r.get("mamba_dt_rank", "auto")
    rank = -(-d // 16) if rank == "auto" else r.int("mamba_dt_rank")
    width = r.int("intermediate_size")
    kw.update(d_ff=width, linear_layer_ids=tuple(i for i in range(n) if i % period != offset), linear_kind="mamba1",
              linear_value_heads=r.int("mamba_expand", 2) * d, linear_value_head_dim=1, linear_key_heads=1,
              linear_key_head_dim=r.int("mamba_d_state", 16), linear_conv_kernel=r.int("mamba_d_conv", 4),
              linear_dt_rank=rank, linear_conv_bias=bool(r.get("mamba_conv_bias", True)))
    if experts > 1:
        kw.update(n_experts=experts, experts_per_token=r.int("num_experts_per_tok"), d_ff_expert=width,
                  moe_layer_step=e_period)
    r.used.update({"num_experts_per_tok", "mamba_dt_rank"})


def _minimax_m1(r: _Reader, kw: dict) -> None:
    """MiniMax-M1: lightning attention (a linear layer kind) where ``attn_type_list`` holds 0, softmax attention
    where it holds 1; ``num_local_experts`` experts of ``intermediate_size`` in every layer, a shared expert only
    with ``shared_intermediate_size`` (0 in M1)."""
    n = kw["n_layers"]
    types = r.need("attn_type_list")
    if len(types) != n or set(types) - {0, 1}:
        raise ValueError(f"{r.where}: attn_type_list must list {n} entries of 0 (lightning) or 1 (softmax attention)")
    if r.int("shared_intermediate_size", 0):
        raise ValueError(f"{r.where}: shared_intermediate_size={r.int('shared_intermediate_size', 0)}: MiniMax's "
                         f"shared expert is not expressible yet; allowed: 0 (MiniMax-M1)")
    nh, hd = kw["n_heads"], kw["head_dim"]
    kw.update(d_ff=0, n_experts=r.int("num_local_experts"), experts_per_token=r.int("num_experts_per_tok"),
              d_ff_expert=r.int("intermediate_size"), linear_kind="lightning",
              linear_layer_ids=tuple(i for i, t in enumerate(types) if t == 0), linear_key_heads=nh,
              linear_value_heads=nh, linear_key_head_dim=hd, linear_value_head_dim=hd)


def _gated_deltanet(r: _Reader, kw: dict) -> None:
    """Qwen3-Next: Gated DeltaNet layers with gated full attention every ``full_attention_interval``-th layer (or as
    ``layer_types`` lists them: ``linear_attention`` / ``full_attention``)."""
    n = kw["n_layers"]
    types = r.get("layer_types")
    if types is not None:
        allowed = {"linear_attention", "full_attention"}
        bad = sorted(set(types) - allowed)
        if bad or len(types) != n:
            raise ValueError(f"{r.where}: layer_types must list {n} entries from {sorted(allowed)}, got "
                             f"{len(types)} entries{' with ' + str(bad) if bad else ''}")
        ids = tuple(i for i, t in enumerate(types) if t == "linear_attention")
    else:
        every = r.int("full_attention_interval", 4)
        ids = tuple(i for i in range(n) if (i + 1) % every)
    kw.update(linear_layer_ids=ids, linear_kind="gated_deltanet", attn_output_gate=True,
              linear_key_heads=r.int("linear_num_key_heads"),
              linear_value_heads=r.int("linear_num_value_heads"), linear_key_head_dim=r.int("linear_key_head_dim"),
              linear_value_head_dim=r.int("linear_value_head_dim"), linear_conv_kernel=r.int("linear_conv_kernel_dim"))
    r.used.add("full_attention_interval")


def _deepseek(r: _Reader, kw: dict) -> None:
    freq = r.int("moe_layer_freq", 1)
    if freq != 1:
        raise ValueError(f"{r.where}: moe_layer_freq={freq} is not expressible; allowed: 1")
    nope, rope = r.int("qk_nope_head_dim"), r.int("qk_rope_head_dim")
    kw["n_mtp_layers"] = r.int("num_nextn_predict_layers", 0)
    kw.update(head_dim=nope + rope, q_lora_rank=r.int("q_lora_rank", 0), kv_lora_rank=r.int("kv_lora_rank"),
              qk_nope_head_dim=nope, qk_rope_head_dim=rope, v_head_dim=r.int("v_head_dim"),
              n_kv_heads=kw["n_heads"], d_ff=r.int("intermediate_size"))
    if r.has("n_routed_experts"):
        kw.update(n_experts=r.int("n_routed_experts"), experts_per_token=r.int("num_experts_per_tok"),
                  n_shared_experts=r.int("n_shared_experts", 0), d_ff_expert=r.int("moe_intermediate_size"),
                  n_dense_layers=r.int("first_k_dense_replace", 0),
                  router_bias=r.get("topk_method", "greedy") == "noaux_tc")
    else:
        r.used.update({"num_experts_per_tok", "n_shared_experts", "moe_intermediate_size", "first_k_dense_replace",
                       "topk_method"})
