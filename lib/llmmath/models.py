"""Transformer architectures as data: parameter counts, FLOPs and KV-cache bytes.

A :class:`Model` is built from the fields of a published config file (see
``data/models.toml``, which cites each one). Everything else is computed from
those fields, exactly, as integers:

* ``total_params`` N_tot and ``active_params`` N_act (per token) -- these must
  equal the published totals, and the tests check that they do;
* ``kv_bytes_per_token(dtype)`` beta -- KV-cache bytes per token of context, all layers;
  ``kv_bytes_per_sequence(context, dtype)`` -- one sequence's whole cache, which is
  less than ``L beta`` when some layers attend through a sliding window (gpt-oss);
* ``attention_flops_per_token(context)`` -- the context-dependent FLOPs of one new token.

:func:`from_hf_config` builds a Model from a Hugging Face ``config.json`` (a path or
a dict; nothing is downloaded).

Counting rules (one multiply-add = 2 FLOPs; biases and norm weights counted
where the config has them):

* dense attention: q ``d x (n_h h)``, k and v ``d x (n_kv h)`` each, o ``(n_h h) x d``;
* latent attention (MLA, DeepSeek-V2/V3): q down ``d x r_q`` + norm ``r_q`` + up
  ``r_q x n_h (h_nope + h_rope)``; kv down ``d x (r_kv + h_rope)`` + norm ``r_kv``
  + up ``r_kv x n_h (h_nope + h_v)``; o ``n_h h_v x d``;
* MLP: 3 matrices ``d x d_ff`` if gated (SwiGLU), else 2;
* MoE layer: routed experts + shared experts + router ``d x E``;
* linear attention (Gated DeltaNet, Qwen3-Next) in place of attention in ``linear_layer_ids``: its
  projections, convolution and gates (:attr:`Model.linear_params_per_layer`); it caches no K/V but
  a fixed state per sequence (:meth:`Model.state_bytes_per_sequence`);
* norms: 2 per layer + 1 final, each ``d`` (RMSNorm) or ``2d`` (LayerNorm).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Mapping

import numpy as np

from . import _catalog
from ._validate import finite_result, flag, non_negative, non_negative_int, positive, positive_int, result, scalar
from .units import dtype_bytes

__all__ = ["Model", "get", "names", "catalog", "from_hf_config"]

_STR_FIELDS = ("key", "name", "norm", "pos_embedding", "source", "published_total_source", "note", "linear_kind")
_BOOL_FIELDS = ("gated_mlp", "tied_embeddings", "qk_norm", "attn_bias", "qkv_bias", "mlp_bias", "attn_sinks",
                "router_bias", "shared_expert_gate", "sandwich_norms", "attn_output_gate", "qk_norm_full_width",
                "linear_state_fp32", "mtp_own_embeddings", "linear_conv_bias", "linear_out_norm", "linear_in_parallel",
                "embedding_norm")
_INT_FIELDS = ("n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab", "max_context",
               "n_experts", "experts_per_token", "n_shared_experts", "d_ff_expert", "n_dense_layers",
               "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
               "sliding_window", "n_window_layers", "n_mtp_layers", "linear_key_heads", "linear_value_heads",
               "linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel", "attention_chunk",
               "n_chunked_layers", "moe_layer_step", "index_topk", "index_heads", "index_head_dim", "linear_dt_rank")
_POSITIVE_FIELDS = ("n_layers", "d_model", "n_heads", "head_dim", "vocab")


@dataclasses.dataclass(frozen=True)
class Model:
    """A decoder-only transformer, dense or mixture-of-experts, MHA/GQA/MQA or MLA.

    Field names follow the config files (see ``data/models.toml``). A zero in the
    MoE fields means a dense model; a zero ``kv_lora_rank`` means standard attention.
    ``sandwich_norms``: an RMSNorm after each block as well as before it (Gemma 2 and 3: four a layer).
    ``norm``: ``"rmsnorm"`` (a weight), ``"layernorm"`` (a weight and a bias) or ``"layernorm_nobias"`` (a LayerNorm
    with a weight only: MPT's ``no_bias``). ``pos_embedding``: ``"rope"`` and ``"alibi"`` (a fixed bias per head on
    the scores: BLOOM, MPT; Press et al. 2022) hold no weight, ``"learned"`` a table of ``max_context`` rows.
    ``embedding_norm``: a norm right after the token embedding (BLOOM's ``word_embeddings_layernorm``), counted with
    the embedding.
    ``n_mtp_layers``: multi-token-prediction modules the checkpoint carries beside the model (DeepSeek-V3's one),
    counted apart (:attr:`mtp_params`, :attr:`checkpoint_params`): served without MTP they are not loaded;
    ``mtp_own_embeddings``: each keeps its own embedding and head (DeepSeek, GLM) or shares the model's (Qwen3.5).
    ``linear_layer_ids``: the layers (0-based) whose token mixer is linear attention with a fixed state per sequence
    instead of attention, of ``linear_kind`` ``"gated_deltanet"`` (Qwen3-Next: ``linear_key_heads`` and
    ``linear_value_heads`` heads of ``linear_key_head_dim`` and ``linear_value_head_dim``, a causal depthwise
    convolution of ``linear_conv_kernel`` taps) or ``"lightning"`` (MiniMax-M1: ``linear_value_heads`` heads of
    ``linear_value_head_dim``, as many key heads of the same width, an output gate, no convolution); they cache no
    K/V (:meth:`state_bytes_per_sequence` instead; ``linear_state_fp32``: the recurrent state kept in fp32 whatever
    the model's dtype, as Qwen3.5's ``mamba_ssm_dtype`` asks), or ``"mamba2"`` (a Mamba-2 mixer, Nemotron-H and
    Falcon-H1: ``linear_value_heads`` heads of ``linear_value_head_dim`` channels, ``linear_key_heads`` groups whose
    B and C projections have ``linear_key_head_dim`` state channels, a causal convolution of ``linear_conv_kernel``
    taps over x, B and C, with a bias when ``linear_conv_bias``, a gated RMSNorm over the heads when
    ``linear_out_norm``), or ``"mamba1"`` (a Mamba-1 mixer, Jamba: ``linear_value_heads`` channels of one value each,
    one group of ``linear_key_head_dim`` state channels, a step of rank ``linear_dt_rank``, a convolution over x
    alone, with Jamba's RMSNorms on the step, B and C). ``linear_in_parallel``: the linear mixer runs beside
    attention in its layers (Falcon-H1's parallel hybrid: every such layer attends, caches K/V and keeps a state)
    instead of replacing it. ``mlp_free_layer_ids``: layers with a token mixer and no MLP (Nemotron-H's blocks are a
    mixer or an MLP; a mixer followed by an MLP reads as one layer, a mixer followed by another as a layer without
    MLP). ``attn_output_gate``: the attention layers' query projection also yields a sigmoid gate on their output (Qwen3-Next's gated attention: q_proj twice as wide).
    ``qk_norm_full_width``: the q/k RMSNorms span the whole projection (``n_h h`` and ``n_kv h`` weights: OLMoE,
    MiniMax-M2), not one head (``h`` each: Qwen3, Gemma 3).
    ``index_topk``, ``index_heads``, ``index_head_dim``: DeepSeek Sparse Attention (DeepSeek-V3.2) on every attention
    layer of an MLA model: a lightning indexer (``index_heads`` small heads of ``index_head_dim``) scores every
    cached token from its own fp8 key cache (:attr:`index_key_bytes` a token and layer) and the attention reads only
    the ``index_topk`` best; all zero for none.
    ``moe_layer_step``: after the ``n_dense_layers`` leading dense layers, every ``moe_layer_step``-th layer is MoE
    (layer ``i`` when ``(i + 1) % step == 0``: Llama 4 Maverick's 2 puts experts in layers 1, 3, 5...) and the others
    dense, of width ``d_ff``; 1 (default) makes them all MoE.
    ``attention_chunk`` (tokens) and ``n_chunked_layers``: that many attention layers attend only within the
    ``attention_chunk``-token block their token falls in (Llama 4's chunked local attention: a token at position ``i``
    sees the ``i mod c`` before it in its chunk) and hold at most one chunk of K/V.
    ``sliding_window`` (tokens) and ``n_window_layers``: that many of the attention layers attend
    only to the last ``sliding_window`` positions and cache only those (0: every layer
    attends to the whole context). ``shared_expert_gate``: a ``d x 1`` sigmoid gate on
    the shared experts (Qwen-MoE). ``unmodelled_config_fields``: the names of config
    fields :func:`from_hf_config` did not understand (empty for catalog models).
    """

    key: str
    name: str
    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    d_ff: int
    vocab: int
    gated_mlp: bool = True
    tied_embeddings: bool = False
    norm: str = "rmsnorm"
    qk_norm: bool = False
    attn_bias: bool = False
    qkv_bias: bool = False
    mlp_bias: bool = False
    attn_sinks: bool = False
    pos_embedding: str = "rope"
    max_context: int = 0
    n_experts: int = 0
    experts_per_token: int = 0
    n_shared_experts: int = 0
    d_ff_expert: int = 0
    n_dense_layers: int = 0
    moe_layer_step: int = 1
    router_bias: bool = False
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int = 0
    n_window_layers: int = 0
    n_mtp_layers: int = 0
    shared_expert_gate: bool = False
    sandwich_norms: bool = False
    embedding_norm: bool = False
    attn_output_gate: bool = False
    qk_norm_full_width: bool = False
    linear_layer_ids: tuple = ()
    linear_kind: str = ""
    linear_state_fp32: bool = False
    linear_conv_bias: bool = False
    linear_out_norm: bool = True
    linear_in_parallel: bool = False
    mlp_free_layer_ids: tuple = ()
    mtp_own_embeddings: bool = True
    linear_key_heads: int = 0
    linear_value_heads: int = 0
    linear_key_head_dim: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel: int = 0
    linear_dt_rank: int = 0
    attention_chunk: int = 0
    n_chunked_layers: int = 0
    index_topk: int = 0
    index_heads: int = 0
    index_head_dim: int = 0
    published_total_params: float = 0
    published_active_params: float = 0
    source: str = ""
    published_total_source: str = ""
    note: str = ""
    unmodelled_config_fields: tuple = ()

    def __post_init__(self):
        """Validate every field (also on :func:`dataclasses.replace`); whole floats become ints."""
        key = self.key if isinstance(self.key, str) else repr(self.key)
        for f in _STR_FIELDS:
            if not isinstance(getattr(self, f), str):
                raise TypeError(f"{key}: {f} must be a string, got {getattr(self, f)!r}")
        for f in _BOOL_FIELDS:
            v = getattr(self, f)
            if not isinstance(v, (bool, np.bool_)):
                raise TypeError(f"{key}: {f} must be True or False, got {v!r}")
            object.__setattr__(self, f, bool(v))
        for f in _INT_FIELDS:
            lo = 1 if f in _POSITIVE_FIELDS else 0
            try:
                v = (positive_int if lo else non_negative_int)(f, getattr(self, f))
            except (TypeError, ValueError) as e:
                raise type(e)(f"{key}: {e}") from None
            object.__setattr__(self, f, v)
        for f in ("published_total_params", "published_active_params"):  # 0: not published
            try:
                v = float(non_negative(f, scalar(f, getattr(self, f))))
            except (TypeError, ValueError) as e:
                raise type(e)(f"{key}: {e}") from None
            object.__setattr__(self, f, v if v != int(v) else int(v))
        if not isinstance(self.unmodelled_config_fields, tuple) or not all(
                isinstance(f, str) for f in self.unmodelled_config_fields):
            raise TypeError(f"{key}: unmodelled_config_fields must be a tuple of field names, "
                            f"got {self.unmodelled_config_fields!r}")
        for f in ("linear_layer_ids", "mlp_free_layer_ids"):
            ids = getattr(self, f)
            if isinstance(ids, list):
                ids = tuple(ids)
            every = f == "mlp_free_layer_ids" or self.linear_in_parallel     # may cover every layer
            if (not isinstance(ids, tuple)
                    or any(isinstance(i, bool) or not isinstance(i, (int, np.integer)) for i in ids)
                    or len(set(ids)) != len(ids) or any(not 0 <= i < self.n_layers for i in ids)
                    or (len(ids) >= self.n_layers and not every)):
                raise ValueError(f"{key}: {f} must be distinct layer numbers in 0..{self.n_layers - 1}"
                                 f"{'' if every else ' leaving at least one attention layer'}, "
                                 f"got {getattr(self, f)!r}")
            object.__setattr__(self, f, tuple(sorted(int(i) for i in ids)))
        ids = self.linear_layer_ids
        if self.linear_in_parallel and not ids:
            raise ValueError(f"{key}: linear_in_parallel needs linear_layer_ids (the layers whose linear mixer runs "
                             f"beside attention)")
        lin = ("linear_key_heads", "linear_value_heads", "linear_key_head_dim", "linear_value_head_dim",
               "linear_conv_kernel")
        kinds = ("gated_deltanet", "lightning", "mamba2", "mamba1")
        if bool(ids) != bool(self.linear_kind) or (ids and self.linear_kind not in kinds):
            raise ValueError(f"{key}: linear_kind must be one of {kinds} with linear_layer_ids, and '' without; got "
                             f"{self.linear_kind!r} with {len(ids)} linear layers")
        need = lin if self.linear_kind in ("gated_deltanet", "mamba2", "mamba1") else lin[:4]
        if ids and not all(getattr(self, f) >= 1 for f in need):
            raise ValueError(f"{key}: {self.linear_kind} layers ({len(ids)} linear_layer_ids) need "
                             f"{', '.join(need)} all >= 1, got {[getattr(self, f) for f in need]}")
        if self.linear_kind == "lightning" and (self.linear_conv_kernel
                                                or self.linear_key_heads != self.linear_value_heads
                                                or self.linear_key_head_dim != self.linear_value_head_dim):
            raise ValueError(f"{key}: lightning attention has as many key as value heads, of one width, and no "
                             f"convolution (linear_conv_kernel 0)")
        if ids and self.linear_value_heads % self.linear_key_heads:
            raise ValueError(f"{key}: linear_value_heads={self.linear_value_heads} must be a multiple of "
                             f"linear_key_heads={self.linear_key_heads} (each key head, or Mamba-2 group, serves a "
                             f"group of value heads)")
        mamba = self.linear_kind in ("mamba2", "mamba1")
        if not mamba and (self.linear_conv_bias or not self.linear_out_norm):
            raise ValueError(f"{key}: linear_conv_bias and linear_out_norm=False describe a Mamba mixer; "
                             f"linear_kind is {self.linear_kind!r}")
        if (self.linear_kind == "mamba1") != bool(self.linear_dt_rank) or (
                self.linear_kind == "mamba1" and (self.linear_key_heads != 1 or self.linear_value_head_dim != 1)):
            raise ValueError(f"{key}: a Mamba-1 mixer (linear_kind 'mamba1') has a linear_dt_rank >= 1, one group "
                             f"(linear_key_heads 1) and channels of one value (linear_value_head_dim 1); other kinds "
                             f"have linear_dt_rank 0")
        if self.mlp_free_layer_ids and (self.d_ff < 1 or any(self.is_moe_layer(i) for i in self.mlp_free_layer_ids)):
            raise ValueError(f"{key}: mlp_free_layer_ids must name dense-position layers (not MoE layers) of a model "
                             f"with a dense width d_ff >= 1, got {self.mlp_free_layer_ids!r}")
        if not ids and any(getattr(self, f) for f in lin):
            raise ValueError(f"{key}: {', '.join(f for f in lin if getattr(self, f))} set but no linear_layer_ids: "
                             f"give the layers that are Gated DeltaNet, or set them to 0")
        dsa = (self.index_topk, self.index_heads, self.index_head_dim)
        if any(dsa) and (not all(v >= 1 for v in dsa) or not self.is_mla or self.q_lora_rank < 1
                         or self.n_window_layers or self.n_chunked_layers or self.linear_layer_ids):
            raise ValueError(f"{key}: DeepSeek Sparse Attention (index_topk, index_heads, index_head_dim = {dsa}) needs "
                             f"all three >= 1 on latent attention with a q_lora_rank (its indexer reads the low-rank "
                             f"query) and no windowed, chunked or linear layers; or all three 0")
        if bool(self.attention_chunk) != bool(self.n_chunked_layers):
            raise ValueError(f"{key}: attention_chunk={self.attention_chunk} and n_chunked_layers="
                             f"{self.n_chunked_layers} must be both 0 (no chunked layers) or a chunk >= 1 token with "
                             f">= 1 chunked layers")
        if bool(self.sliding_window) != bool(self.n_window_layers) or self.n_window_layers > self.n_attention_layers:
            raise ValueError(f"{key}: sliding_window={self.sliding_window} and n_window_layers="
                             f"{self.n_window_layers} must be both 0 (no windowed layers) or a window >= 1 "
                             f"token with 1..{self.n_attention_layers} (the attention layers) windowed layers")
        if self.n_window_layers + self.n_chunked_layers > self.n_attention_layers:
            raise ValueError(f"{key}: n_window_layers={self.n_window_layers} and n_chunked_layers="
                             f"{self.n_chunked_layers} together exceed the {self.n_attention_layers} attention layers")
        if self.qk_norm_full_width and not self.qk_norm:
            raise ValueError(f"{key}: qk_norm_full_width needs qk_norm (q/k RMSNorms) to be True")
        if self.shared_expert_gate and not self.n_shared_experts:
            raise ValueError(f"{key}: shared_expert_gate needs shared experts (n_shared_experts >= 1)")
        if self.norm not in ("rmsnorm", "layernorm", "layernorm_nobias"):
            raise ValueError(f"{key}: norm must be 'rmsnorm', 'layernorm' or 'layernorm_nobias', got {self.norm!r}")
        if self.pos_embedding not in ("rope", "learned", "alibi"):
            raise ValueError(f"{key}: pos_embedding must be 'rope', 'alibi' or 'learned', got {self.pos_embedding!r}")
        if self.pos_embedding == "learned" and self.max_context < 1:
            raise ValueError(f"{key}: max_context must be >= 1 with learned positions (it sizes the "
                             f"position table), got {self.max_context}")
        if self.n_experts:
            if not 1 <= self.experts_per_token <= self.n_experts:
                raise ValueError(
                    f"{key}: experts_per_token must be between 1 and n_experts={self.n_experts}, "
                    f"got {self.experts_per_token}"
                )
            if self.d_ff_expert < 1:
                raise ValueError(f"{key}: d_ff_expert must be >= 1 in a mixture of experts "
                                 f"(n_experts={self.n_experts}), got {self.d_ff_expert}")
            if self.moe_layer_step < 1:
                raise ValueError(f"{key}: moe_layer_step must be a whole number >= 1, got {self.moe_layer_step}")
            if self.n_moe_layers < 1:
                raise ValueError(f"{key}: n_dense_layers={self.n_dense_layers} and moe_layer_step="
                                 f"{self.moe_layer_step} leave no MoE layer among {self.n_layers}: n_dense_layers must "
                                 f"be between 0 and n_layers - 1 = {self.n_layers - 1} (at least one MoE layer)")
        else:
            if self.moe_layer_step != 1:
                raise ValueError(f"{key}: moe_layer_step must be 1 in a dense model (n_experts=0), "
                                 f"got {self.moe_layer_step}")
            for f in ("experts_per_token", "n_shared_experts", "d_ff_expert", "n_dense_layers", "router_bias",
                      "shared_expert_gate"):
                if getattr(self, f):
                    raise ValueError(f"{key}: {f} must be 0 (False) in a dense model (n_experts=0), "
                                     f"got {getattr(self, f)!r}; set n_experts for a mixture of experts")
        if self.n_moe_layers < self.n_layers and self.d_ff < 1:
            n_dense = self.n_layers - self.n_moe_layers
            raise ValueError(f"{key}: d_ff must be >= 1 (the dense MLP width"
                             f"{'' if not self.n_experts else ' of the ' + str(n_dense) + ' dense layers'})"
                             f", got {self.d_ff}")
        if self.is_mla:
            if self.qk_nope_head_dim + self.qk_rope_head_dim < 1 or self.v_head_dim < 1:
                raise ValueError(f"{key}: latent attention (kv_lora_rank={self.kv_lora_rank}) needs "
                                 f"qk_nope_head_dim + qk_rope_head_dim >= 1 and v_head_dim >= 1, got "
                                 f"{self.qk_nope_head_dim}, {self.qk_rope_head_dim} and {self.v_head_dim}")
        else:
            if self.n_kv_heads < 1:
                raise ValueError(f"{key}: n_kv_heads must be >= 1, got {self.n_kv_heads}")
            if self.n_heads % self.n_kv_heads:
                raise ValueError(f"{key}: n_heads={self.n_heads} is not a multiple of n_kv_heads={self.n_kv_heads}"
                                 f"; allowed n_kv_heads: the divisors of n_heads")

    # ---- structure -------------------------------------------------------
    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank > 0

    @property
    def attention_kind(self) -> str:
        """``'MLA'``, ``'MHA'`` (kv heads = heads), ``'MQA'`` (one kv head) or ``'GQA'``."""
        if self.is_mla:
            return "MLA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "MQA" if self.n_kv_heads == 1 else "GQA"

    def is_moe_layer(self, i: int) -> bool:
        """Whether layer ``i`` (0-based) holds experts: past the leading dense layers, every ``moe_layer_step``-th."""
        return self.is_moe and i >= self.n_dense_layers and (i + 1) % self.moe_layer_step == 0

    @property
    def n_moe_layers(self) -> int:
        if not self.is_moe:
            return 0
        if self.moe_layer_step == 1:
            return self.n_layers - self.n_dense_layers
        return sum(self.is_moe_layer(i) for i in range(self.n_layers))

    @property
    def n_linear_layers(self) -> int:
        """Layers whose token mixer is linear attention with a fixed state (Gated DeltaNet), not attention."""
        return len(self.linear_layer_ids)

    @property
    def n_attention_layers(self) -> int:
        """Layers that attend and cache K/V (full or windowed): all but the linear ones (all of them when the linear
        mixers run beside attention)."""
        return self.n_layers if self.linear_in_parallel else self.n_layers - self.n_linear_layers

    @property
    def attention_layer_ids(self) -> tuple:
        """The layers (0-based) that attend and cache K/V (see :attr:`n_attention_layers`)."""
        lin = () if self.linear_in_parallel else set(self.linear_layer_ids)
        return tuple(i for i in range(self.n_layers) if i not in lin)

    # ---- parameter counts (exact integers) --------------------------------
    def _norm_params(self, width: int) -> int:
        return width * (2 if self.norm == "layernorm" else 1)

    @property
    def attention_params_per_layer(self) -> int:
        d, h, nh, nkv = self.d_model, self.head_dim, self.n_heads, self.n_kv_heads
        if self.is_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = d * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * nh * qk
            else:
                q = d * nh * qk
            kv = (d * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
                  + self.kv_lora_rank * nh * (self.qk_nope_head_dim + self.v_head_dim))
            # DSA's lightning indexer: wq_b from the low-rank query, wk, a LayerNorm (weight and bias) on its key,
            # and weights_proj, one weight per index head (DeepSeek-V3.2-Exp inference/model.py, Indexer)
            ih, idim = self.index_heads, self.index_head_dim
            index = ih * idim * self.q_lora_rank + d * idim + 2 * idim + d * ih
            return q + kv + nh * self.v_head_dim * d + index
        n = d * nh * h * (2 if self.attn_output_gate else 1) + 2 * d * nkv * h + nh * h * d
        if self.attn_bias:
            n += nh * h + 2 * nkv * h + d
        elif self.qkv_bias:
            n += nh * h + 2 * nkv * h
        if self.qk_norm:
            n += (nh + nkv) * h if self.qk_norm_full_width else 2 * h
        if self.attn_sinks:  # one learned sink logit per head (gpt-oss)
            n += nh
        return n

    @property
    def linear_conv_dim(self) -> int:
        """Channels of a linear layer's causal convolution: a Gated DeltaNet's queries, keys and values, a Mamba-2
        mixer's x, B and C, ``2 n_k d_k + n_v d_v`` (0 without linear layers)."""
        if self.linear_kind == "mamba1":             # Mamba-1 convolves x alone
            return self.linear_value_heads
        return 2 * self.linear_key_heads * self.linear_key_head_dim + self.linear_value_heads * self.linear_value_head_dim

    @property
    def linear_params_per_layer(self) -> int:
        """One linear token mixer's weights (0 without linear layers). Gated DeltaNet, as Qwen3-Next's checkpoint
        stores them:
        ``in_proj_qkvz`` ``d x (2 n_k d_k + 2 n_v d_v)`` (queries, keys, values and the output gate z),
        ``in_proj_ba`` ``d x 2 n_v`` (the write strength beta and the decay's input per value head), the depthwise
        convolution ``conv_dim x kernel`` (no bias), ``dt_bias`` and ``A_log`` (``n_v`` each), the gated RMSNorm on a
        head's output (``d_v``) and ``out_proj`` ``n_v d_v x d``. Qwen3-Next-80B: 33,718,464 a layer. Lightning
        attention (MiniMax-M1): ``qkv_proj`` ``d x 3 n d_h``, ``output_gate`` ``d x n d_h``, an RMSNorm over
        ``n d_h`` and ``out_proj`` ``n d_h x d``: 251,666,432 a layer. Mamba-2 (transformers' NemotronHMamba2Mixer
        and FalconH1Mixer): ``in_proj`` ``d x (2 n_h P + 2 G N + n_h)`` (the gate z, x, B, C and a step dt per head),
        the depthwise convolution over x, B and C (``conv_dim x kernel``, and a bias), ``dt_bias``, ``A_log`` and ``D``
        (``n_h`` each), the gated RMSNorm (``n_h P``) and ``out_proj`` ``n_h P x d``. Mamba-1 (JambaMambaMixer),
        ``I`` channels, state ``N``, step rank ``R``: ``in_proj`` ``d x 2I``, the convolution ``I x kernel`` (and a
        bias), ``x_proj`` ``I x (R + 2N)``, ``dt_proj`` ``R x I`` and its bias, ``A_log`` ``I x N``, ``D`` ``I``,
        ``out_proj`` ``I x d``, and Jamba's RMSNorms on the step, B and C (``R + 2N``) when ``linear_out_norm``."""
        if not self.linear_layer_ids:
            return 0
        d, nk, nv = self.d_model, self.linear_key_heads, self.linear_value_heads
        dk, dv = self.linear_key_head_dim, self.linear_value_head_dim
        if self.linear_kind == "lightning":         # qkv_proj, output_gate, the RMSNorm over the heads, out_proj
            return d * 3 * nv * dv + d * nv * dv + nv * dv + nv * dv * d
        if self.linear_kind == "mamba1":    # in_proj (x, z), conv1d, x_proj (dt, B, C), dt_proj, A_log, D, out_proj
            inner, n, rank = nv, dk, self.linear_dt_rank
            return (d * 2 * inner + inner * self.linear_conv_kernel + (inner if self.linear_conv_bias else 0)
                    + inner * (rank + 2 * n) + rank * inner + inner + inner * n + inner + inner * d
                    + (rank + 2 * n if self.linear_out_norm else 0))
        if self.linear_kind == "mamba2":    # in_proj (z, x, B, C, dt), conv1d, dt_bias, A_log, D, norm, out_proj
            inner, conv = nv * dv, self.linear_conv_dim
            return (d * (2 * inner + 2 * nk * dk + nv) + conv * self.linear_conv_kernel
                    + (conv if self.linear_conv_bias else 0) + 3 * nv + (inner if self.linear_out_norm else 0)
                    + inner * d)
        return (d * (2 * nk * dk + 2 * nv * dv) + d * 2 * nv + self.linear_conv_dim * self.linear_conv_kernel
                + 2 * nv + dv + nv * dv * d)

    def mlp_params(self, d_ff: int) -> int:
        """One MLP (or one expert) of width ``d_ff`` (a whole number >= 0)."""
        d_ff = non_negative_int("d_ff", d_ff)
        d = self.d_model
        if self.gated_mlp:
            return 3 * d * d_ff + ((2 * d_ff + d) if self.mlp_bias else 0)
        return 2 * d * d_ff + ((d_ff + d) if self.mlp_bias else 0)

    @property
    def router_params_per_layer(self) -> int:
        return self.d_model * self.n_experts + (self.n_experts if self.router_bias else 0)

    @property
    def expert_params(self) -> int:
        """Parameters of one routed expert."""
        return self.mlp_params(self.d_ff_expert) if self.is_moe else 0

    @property
    def routed_flops_per_token(self) -> int:
        """FLOPs of one token's routed experts, all layers: ``2 k P_e n_moe`` (0 for a dense model)."""
        return 2 * self.n_moe_layers * self.experts_per_token * self.expert_params

    @property
    def embedding_params(self) -> int:
        """Input token embedding (+ learned positions, sized ``max_context``, + the embedding norm if any)."""
        pos = self.max_context * self.d_model if self.pos_embedding == "learned" else 0
        return self.vocab * self.d_model + pos + (self._norm_params(self.d_model) if self.embedding_norm else 0)

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tied_embeddings else self.vocab * self.d_model

    def _layer_params(self, mlp: int) -> int:
        norms = 4 if self.sandwich_norms else 2          # Gemma 2/3 also norm each block's output
        return self.attention_params_per_layer + mlp + norms * self._norm_params(self.d_model)

    @property
    def total_params(self) -> int:
        """N_tot: every weight, embeddings and LM head included (integer)."""
        dense_mlp = self.mlp_params(self.d_ff)
        n_dense = self.n_layers - self.n_moe_layers
        moe_mlp = ((self.n_experts + self.n_shared_experts) * self.expert_params + self.router_params_per_layer
                   + (self.d_model if self.shared_expert_gate else 0))
        return (self.embedding_params + self.lm_head_params + self._norm_params(self.d_model)
                + n_dense * self._layer_params(dense_mlp)
                + self.n_moe_layers * self._layer_params(moe_mlp) - self.n_linear_layers * self._linear_saving
                - len(self.mlp_free_layer_ids) * self._mlp_free_saving)

    @property
    def _linear_saving(self) -> int:
        """What a linear layer holds less than an attention layer (``_layer_params`` counts attention in every one);
        negative when the linear mixer runs beside attention (it adds its weights and a norm)."""
        if self.linear_in_parallel:
            return -self.linear_params_per_layer
        return self.attention_params_per_layer - self.linear_params_per_layer

    @property
    def _mlp_free_saving(self) -> int:
        """What a layer without MLP holds less than a dense layer: the MLP and its norm."""
        return self.mlp_params(self.d_ff) + self._norm_params(self.d_model) if self.mlp_free_layer_ids else 0

    def stage_layers(self, stages: int) -> list[range]:
        """The layers each of ``stages`` pipeline stages holds: consecutive, as even as counts allow.

        ``n_layers = q * stages + r``: the first ``r`` stages take ``q + 1`` layers, the rest ``q``
        (the default split of layer-count partitioners, e.g. Megatron-LM's).

        Raises:
            ValueError: ``stages`` not a whole number in ``1..n_layers``.
        """
        if isinstance(stages, bool) or not isinstance(stages, (int, np.integer)) or not 1 <= stages <= self.n_layers:
            raise ValueError(f"stages must be a whole number in 1..{self.n_layers} ({self.key} has {self.n_layers} "
                             f"layers), got {stages!r}")
        q, r = divmod(self.n_layers, int(stages))
        bounds = np.cumsum([0] + [q + (s < r) for s in range(int(stages))])
        return [range(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]

    def stage_params(self, stages: int) -> tuple[np.ndarray, np.ndarray]:
        """``(moe_layers, other_params)``: per pipeline stage, its MoE layers (each holds ``n_experts``
        routed experts of ``expert_params``) and every other parameter it holds (integer arrays of
        length ``stages``).

        A stage holds its layers (:meth:`stage_layers`); the first also the input embedding, the
        last the final norm and the LM head, where a tied table needs a copy of the embedding
        when ``stages > 1`` (Megatron-LM keeps one on the last stage and all-reduces their
        gradients). So the stages are not equal: Llama-2-70B in 4 stages holds 17,375,240,192
        parameters on its last stage (20 layers, the head and the final norm) where the average
        is 17,244,162,048; Llama-3.1-8B's last stage holds 13% more than the average, and
        Llama-3.1-405B's first in 16 stages (8 layers and the embedding) 8.8% more. The busiest
        stage, not the average, must fit (Megatron-LM's theoretical-memory report and
        llm-analysis report the most loaded stage). With one stage ``other_params + moe_layers *
        n_experts * expert_params`` is :attr:`total_params`.

        Raises:
            ValueError: ``stages`` not a whole number in ``1..n_layers``.
        """
        split = self.stage_layers(stages)
        dense_layer = self._layer_params(self.mlp_params(self.d_ff))
        moe_layer = self._layer_params(self.n_shared_experts * self.expert_params + self.router_params_per_layer
                                       + (self.d_model if self.shared_expert_gate else 0)) if self.is_moe else 0
        moe = np.array([sum(1 for i in layers if self.is_moe_layer(i)) for layers in split])
        lin, free = set(self.linear_layer_ids), set(self.mlp_free_layer_ids)
        other = np.array([(len(layers) - k) * dense_layer + k * moe_layer
                          - sum(i in lin for i in layers) * self._linear_saving
                          - sum(i in free for i in layers) * self._mlp_free_saving for layers, k in zip(split, moe)])
        other[0] += self.embedding_params
        head = self.lm_head_params or (self.vocab * self.d_model if len(split) > 1 else 0)
        other[-1] += self._norm_params(self.d_model) + head
        return moe, other

    @property
    def mtp_params(self) -> int:
        """Parameters of one multi-token-prediction module as DeepSeek-V3's checkpoint stores it (its layer 61): one
        decoder layer of the model's last kind (MoE here), the projection of the concatenated hidden state and
        embedding (``2d x d``) with the two RMSNorms before it, and its own copies of the input embedding, the
        final norm and the output head. DeepSeek-V3: 13,463,426,304, so 671.0B + 13.5B = 684.5B, the checkpoint's
        "685B" (the report: 671B main model, 14B MTP module). Qwen3.5's shares the model's embedding and head
        (``mtp_own_embeddings`` False): a layer, the projection and three norms. 0 for a model without MTP modules."""
        if not self.n_mtp_layers:
            return 0
        d = self.d_model
        last = self.mlp_params(self.d_ff) if not self.is_moe else (
            self.n_experts * self.expert_params + self.n_shared_experts * self.mlp_params(self.d_ff_expert)
            + self.router_params_per_layer + (d if self.shared_expert_gate else 0))
        own = 2 * self.vocab * d if self.mtp_own_embeddings else 0
        return self._layer_params(last) + 2 * d * d + 3 * self._norm_params(d) + own

    @property
    def checkpoint_params(self) -> int:
        """Every weight the checkpoint holds: :attr:`total_params` (served without MTP) plus the MTP modules."""
        return self.total_params + self.n_mtp_layers * self.mtp_params

    @property
    def active_params(self) -> int:
        """N_act: weights one token uses -- all but the routed experts it skips.

        Counts the embedding table, as published "active" figures do (Mixtral's
        12.9B, DeepSeek-V3's 37B).
        """
        skipped = self.n_moe_layers * (self.n_experts - self.experts_per_token) * self.expert_params
        return self.total_params - skipped

    @property
    def sparsity(self) -> float:
        """s = N_tot / N_act (1 for a dense model)."""
        return self.total_params / self.active_params

    @property
    def expert_sparsity(self) -> float:
        """E / k: routed experts per routed expert used (1 for a dense model)."""
        return self.n_experts / self.experts_per_token if self.is_moe else 1.0

    @property
    def matmul_params_per_token(self) -> int:
        """Active weights that take part in a matmul: N_act minus the input-embedding lookup.

        The lookup reads one row per token and does no arithmetic; with tied
        embeddings the same table is still used, as the LM head.
        """
        lookup = self.embedding_params if not self.tied_embeddings else self.embedding_params - self.vocab * self.d_model
        return self.active_params - lookup

    # ---- per-token FLOPs and bytes -------------------------------------------
    @finite_result
    def attention_flops_per_token(self, context, absorbed: bool = True) -> float | np.ndarray:
        """FLOPs of the context-dependent part of attention for one new token.

        ``context``: tokens attended to (L), scalar or array. Per layer:
        dense/GQA ``4 n_h h L`` (q.k and p.v, 2 FLOPs per multiply-add);
        MLA with absorbed up-projections ``2 n_h (2 r_kv + h_rope) L``
        (DeepSeek-V2 paper, section 2.1.3: scores against the latent and its rope
        key, values read from the latent) -- the decode form; with
        ``absorbed=False``, the prefill form, which attends to up-projected keys and
        values: ``2 n_h (h_nope + h_rope + h_v) L`` (the up-projection is paid once
        per position, inside the weight FLOPs). ``absorbed`` is ignored for non-MLA models.

        Raises:
            TypeError: a non-boolean ``absorbed``.
        """
        L = non_negative("context", context)
        absorbed = flag("absorbed", absorbed)
        if self.is_mla and not absorbed:
            per_pos = 2 * self.n_heads * (self.qk_nope_head_dim + self.qk_rope_head_dim + self.v_head_dim)
        elif self.is_mla:
            per_pos = 2 * self.n_heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)
        else:
            per_pos = 4 * self.n_heads * self.head_dim
        return result(per_pos * self.cached_positions(L))

    def cached_positions(self, context) -> float | np.ndarray:
        """Positions a new token attends to, summed over layers: ``n_full L + n_window min(L, w) + n_chunked (L mod c)``
        (``n_attention min(L, k)`` with DeepSeek Sparse Attention, whose indexer still scores all ``L``:
        :meth:`index_positions`).

        ``n_layers * L`` for a model without windowed or linear layers (a linear layer attends to no position: it
        reads its fixed state, :meth:`state_bytes_per_sequence`). Broadcasts over ``context`` (tokens, >= 0).

        Raises:
            ValueError: negative or NaN context.
        """
        L = non_negative("context", context)
        if self.index_topk:                            # DSA: every attention layer reads its top-k positions
            return result(self.n_attention_layers * np.minimum(L, self.index_topk))
        n_win, n_chunk = self.n_window_layers, self.n_chunked_layers
        return result(self.n_full_attention_layers * L
                      + (n_win * np.minimum(L, self.sliding_window) if n_win else 0.0)
                      + (n_chunk * np.mod(L, self.attention_chunk) if n_chunk else 0.0))

    def held_positions(self, context) -> float | np.ndarray:
        """Positions of K/V one sequence must have room for once it has reached ``context`` tokens, summed over
        layers: ``n_full L + n_window min(L, w) + n_chunked min(L, c)`` (a chunked layer holds up to a whole chunk
        before it drops it, so the room is the most it held on the way, not the ``L mod c`` it holds at ``L``).
        Equals :meth:`cached_positions` without chunked layers. Broadcasts over ``context`` (tokens, >= 0).

        Raises:
            ValueError: negative or NaN context.
        """
        L = non_negative("context", context)
        held = self.n_full_attention_layers * L + (self.n_window_layers * np.minimum(L, self.sliding_window)
                                                   if self.n_window_layers else 0.0)
        return result(held + (self.n_chunked_layers * np.minimum(L, self.attention_chunk)
                              if self.n_chunked_layers else 0.0))

    @property
    def has_local_layers(self) -> bool:
        """Whether some attention layers see less than the whole context (windowed, chunked or top-k)."""
        return bool(self.n_window_layers or self.n_chunked_layers or self.index_topk)

    @property
    def index_key_bytes(self) -> int:
        """Bytes of DSA's index key cache for one token in one layer: ``index_head_dim`` fp8 values and one fp32
        scale per 128 of them (DeepSeek-V3.2-Exp: 128 + 4 = 132); 0 without DSA."""
        return self.index_head_dim + 4 * -(-self.index_head_dim // 128) if self.index_topk else 0

    def index_positions(self, context) -> float | np.ndarray:
        """Cached tokens DSA's indexer scores (and reads the key of) for one new token at ``context``, summed over
        layers: ``n_attention L`` (0 without DSA). Broadcasts."""
        L = non_negative("context", context)
        return result(self.n_attention_layers * L * (1.0 if self.index_topk else 0.0))

    def index_prefill_positions(self, prompt_tokens) -> float | np.ndarray:
        """Earlier tokens the indexer scores while one prompt of ``prompt_tokens`` is prefilled, summed over tokens and
        layers: ``n_attention T (T-1) / 2`` (0 without DSA). Broadcasts."""
        T = non_negative("prompt_tokens", prompt_tokens)
        return result(self.n_attention_layers * T * np.maximum(T - 1.0, 0.0) / 2.0 * (1.0 if self.index_topk else 0.0))

    @property
    def index_flops_per_position(self) -> int:
        """FLOPs DSA's indexer spends on one cached token in one layer: ``2 index_heads index_head_dim`` (each head's
        q.k; the ReLU and the head weights are a rounding). 0 without DSA."""
        return 2 * self.index_heads * self.index_head_dim if self.index_topk else 0

    def causal_mean_positions(self, seq_len) -> float | np.ndarray:
        """Positions a token of a causally masked sequence of ``seq_len`` tokens attends to, averaged over its
        tokens and summed over layers (training's attention FLOPs go as this).

        A full layer: ``L / 2`` (the convention of Megatron-LM's and Korthikanti et al.'s counts for a causal mask).
        A windowed layer: the exact mean of ``min(i, w)`` over tokens ``i = 0..L-1`` plus the same half position,
        ``[w (w+1)/2 + (L-1-w) w] / L + 1/2`` once ``L > w + 1``, so it equals ``L / 2`` while ``L <= w + 1``: the
        first ``w`` tokens see fewer positions than the window (``min(L/2, w)`` would count ``w``: 14% high at
        ``L`` = 2,048, ``w`` = 512). Broadcasts over ``seq_len`` (tokens, > 0).

        Raises:
            ValueError: ``seq_len`` not above 0.
        """
        L = positive("seq_len", seq_len)
        full, win, chunk = self._causal_positions(L)
        if self.index_topk:                            # top-k: as a window of k in every attention layer
            return result(self.n_attention_layers * (win / L + 0.5))
        return result(self.n_full_attention_layers * L / 2.0 + self.n_window_layers * (win / L + 0.5)
                      + self.n_chunked_layers * (chunk / L + 0.5))

    @property
    def n_full_attention_layers(self) -> int:
        """Layers that attend to (and cache) the whole context: all but the windowed, chunked and linear ones."""
        return self.n_attention_layers - self.n_window_layers - self.n_chunked_layers

    def state_bytes_per_sequence(self, dtype="bf16") -> float:
        """The fixed state one sequence keeps in the linear layers, whatever its length (bytes; 0 without them).

        A Gated DeltaNet layer keeps, per value head, a ``d_k x d_v`` matrix (the recurrent state) and, for its
        causal convolution, the last ``kernel - 1`` inputs of its ``conv_dim`` channels (vLLM's
        ``gated_delta_net_state_shape``; a lightning layer the matrices alone, ``linear_attention_state_shape``; a
        Mamba-2 head its ``P x N`` state and the convolution's inputs, ``mamba2_state_shape``):
        ``n_linear (n_v d_k d_v + conv_dim (kernel - 1))`` values at ``dtype``
        (vLLM's default: the model's dtype). Qwen3-Next-80B: 36 x (32 x 128 x 128 + 8,192 x 3) x 2 B = 39,518,208 B,
        the K/V of 1,608 tokens in its 12 attention layers.

        Raises:
            KeyError: unknown dtype name.
        """
        b = dtype_bytes(dtype)
        recurrent = self.linear_value_heads * self.linear_key_head_dim * self.linear_value_head_dim
        conv = self.linear_conv_dim * max(self.linear_conv_kernel - 1, 0)
        return float(self.n_linear_layers * (recurrent * (4.0 if self.linear_state_fp32 else b) + conv * b))

    @property
    def state_flops_per_token(self) -> int:
        """FLOPs one token spends on the linear layers' state, beyond their weight matmuls (0 without them).

        Per value head the gated delta rule decays the ``d_k x d_v`` state (``d_k d_v``), reads it with the key
        (``2 d_k d_v``), writes the correction as an outer product (``2 d_k d_v``) and reads it with the query
        (``2 d_k d_v``): ``7 d_k d_v``; the depthwise convolution adds ``2 conv_dim kernel``. Lightning attention
        (MiniMax-M1) decays its state, adds ``k v^T`` and reads it with the query: ``5 d_h^2`` a head; a Mamba-2 head
        decays its ``P x N`` state, adds ``dt x B^T`` and reads it with C: ``5 P N``. Independent of
        the context (the point of a linear layer)."""
        rule = 7 if self.linear_kind == "gated_deltanet" else 5     # lightning, Mamba-2: decay, write, read
        per_layer = (rule * self.linear_value_heads * self.linear_key_head_dim * self.linear_value_head_dim
                     + 2 * self.linear_conv_dim * self.linear_conv_kernel)
        return self.n_linear_layers * per_layer

    @finite_result
    def prefill_attention_flops(self, prompt_tokens, absorbed: bool = False) -> float | np.ndarray:
        """Causal attention FLOPs of prefilling one prompt of ``prompt_tokens`` tokens (all layers).

        Token ``i`` (0-based) attends to ``i`` earlier positions in a full layer and to
        ``min(i, w)`` in a windowed one, so a full layer pays for ``T (T-1) / 2``
        positions and a windowed one for ``w (w+1) / 2 + (T-1-w) w`` once ``T > w``
        (``T (T-1)/2`` before). Per position the cost is that of
        :meth:`attention_flops_per_token` with the same ``absorbed``: by default (False)
        MLA's up-projected prefill form, what prefill kernels run (DeepSeek-V3: 81,920 FLOPs
        per position per layer, against 278,528 absorbed, the decode form). Broadcasts over
        ``prompt_tokens``.

        Raises:
            ValueError: negative or NaN ``prompt_tokens``. TypeError: a non-boolean ``absorbed``.
        """
        per_pos = (np.asarray(self.attention_flops_per_token(1.0, absorbed=flag("absorbed", absorbed)))
                   / self.n_attention_layers)
        return result(per_pos * self.prefill_positions(prompt_tokens))

    def prefill_positions(self, prompt_tokens) -> float | np.ndarray:
        """Earlier positions the tokens of one prompt attend to while it is prefilled, summed over layers.

        Token ``i`` (0-based) attends to ``i`` earlier positions in a full layer and ``min(i, w)`` in a windowed
        one: ``n_full T (T-1)/2 + n_window [w (w+1)/2 + (T-1-w) w]`` once ``T > w`` (``T (T-1)/2`` before). A chunk
        of ``c`` tokens after ``t`` already prefilled attends to ``prefill_positions(t + c) - prefill_positions(t)``.
        Llama-3.1-8B, 1,000 tokens: 32 x 499,500 = 15,984,000. Broadcasts over ``prompt_tokens`` (tokens, >= 0).

        Raises:
            ValueError: negative or NaN ``prompt_tokens``.
        """
        full, win, chunk = self._causal_positions(non_negative("prompt_tokens", prompt_tokens))
        if self.index_topk:                            # top-k: token i attends min(i, k), as a window of k
            return result(self.n_attention_layers * win)
        return result(self.n_full_attention_layers * full + self.n_window_layers * win + self.n_chunked_layers * chunk)

    def _causal_positions(self, T):
        """(full, windowed, chunked): earlier positions ``T`` causal tokens attend to in one full, one windowed and
        one chunked layer: ``sum_i i``, ``sum_i min(i, w)`` and ``sum_i (i mod c)`` over ``i = 0..T-1``, the last
        ``q c (c-1)/2 + r (r-1)/2`` for ``T = q c + r`` (0 for a model without that kind)."""
        full = T * np.maximum(T - 1.0, 0.0) / 2.0
        win = chunk = 0.0 * T
        if self.n_window_layers or self.index_topk:
            w = float(self.sliding_window or self.index_topk)
            win = np.where(T - 1.0 <= w, full, w * (w + 1.0) / 2.0 + (T - 1.0 - w) * w)
        if self.n_chunked_layers:
            c = float(self.attention_chunk)
            q, r = np.floor(T / c), np.mod(T, c)
            chunk = q * c * (c - 1.0) / 2.0 + r * np.maximum(r - 1.0, 0.0) / 2.0
        return full, win, chunk

    @finite_result
    def flops_per_token(self, context=0) -> float | np.ndarray:
        """Forward FLOPs of one token: ``2 * matmul_params_per_token`` + attention over ``context`` + the linear
        layers' state (:attr:`state_flops_per_token`) + DSA's indexer over ``context``."""
        return result(2.0 * self.matmul_params_per_token + self.attention_flops_per_token(context)
                      + self.state_flops_per_token + self.index_flops_per_position * self.index_positions(context))

    def kv_bytes_per_token_per_layer(self, dtype="bf16") -> float:
        """KV-cache bytes one cached token takes in one layer (bytes).

        Standard attention: ``2 * n_kv_heads * head_dim * b_kv`` (K and V). MLA:
        ``(kv_lora_rank + qk_rope_head_dim) * b_kv`` (the cached latent and the
        shared rope key; DeepSeek-V2 paper, Table 1); with DSA, plus :attr:`index_key_bytes` (fp8 whatever ``dtype``).
        ``dtype``: a name or bytes per element.
        """
        return self.attended_bytes_per_position(dtype) + self.index_key_bytes

    def attended_bytes_per_position(self, dtype="bf16") -> float:
        """Bytes attention reads for one attended position in one layer: the K/V or the latent (without DSA's index
        key, which :meth:`kv_bytes_per_token_per_layer` adds to what a token holds)."""
        b = dtype_bytes(dtype)
        if self.is_mla:
            return (self.kv_lora_rank + self.qk_rope_head_dim) * b
        return 2.0 * self.n_kv_heads * self.head_dim * b

    def kv_bytes_per_token(self, dtype="bf16", context=None) -> float | np.ndarray:
        """beta: KV-cache bytes per token of context, summed over layers.

        Without ``context``: the attention layers (``n_layers`` but the linear ones) times
        :meth:`kv_bytes_per_token_per_layer` --
        what a token occupies while it is inside every layer's window (for a model
        without windowed layers, at any context). With ``context`` (L tokens, scalar
        or array): the average over the cache at that context,
        :meth:`kv_bytes_per_sequence` ``/ L`` -- for gpt-oss-120b (18 of 36 layers
        with a 128-token window) it falls towards half of the full figure at long
        context; with linear layers it holds their fixed state spread over the L tokens. ``dtype``: a name (``bf16``, ``fp8``...) or bytes per element (0.5625).

        Raises:
            KeyError: unknown dtype name. ValueError: a bad number of bytes or context <= 0.
        """
        per_layer = self.kv_bytes_per_token_per_layer(dtype)
        if context is None:
            return self.n_attention_layers * per_layer
        L = positive("context", context)
        return result(np.asarray(self.kv_bytes_per_sequence(L, dtype), dtype=float) / L)

    @finite_result
    def kv_bytes_per_sequence(self, context, dtype="bf16", state_dtype="bf16") -> float | np.ndarray:
        """The cache one sequence holds at ``context`` tokens, all layers (bytes): the K/V that grows with the
        context plus the linear layers' fixed state (:meth:`state_bytes_per_sequence`, at ``state_dtype``; held
        once the sequence has a token).

        K/V: :meth:`held_positions` ``* kv_bytes_per_token_per_layer``: a windowed
        layer keeps only its last ``w`` positions (a ring buffer; gpt-oss: w = 128 in
        18 of 36 layers), a chunked one at most a chunk. Equals ``L beta`` for a model without windows or linear layers. Broadcasts
        over ``context``.

        Raises:
            ValueError: negative or NaN context. KeyError: unknown dtype name.
        """
        L = non_negative("context", context)
        return result(self.kv_bytes_per_token_per_layer(dtype) * self.held_positions(L)
                      + self.held_state_bytes(L, state_dtype))

    def held_state_bytes(self, context, dtype="bf16") -> float | np.ndarray:
        """The linear layers' fixed state a sequence at ``context`` tokens holds: all of
        :meth:`state_bytes_per_sequence` once it has a token, nothing before (0 without linear layers).
        Broadcasts over ``context``."""
        L = non_negative("context", context)
        if not self.linear_layer_ids:
            return result(0.0 * L)
        return result(np.where(L > 0, self.state_bytes_per_sequence(dtype), 0.0))

    @finite_result
    def expected_params_read(self, batch) -> float | np.ndarray:
        """Weights one decode step must read from HBM for ``batch`` tokens.

        Dense weights are read once whatever the batch. The input-embedding
        lookup reads only ``batch`` rows. Each routed expert is read if at least
        one token picks it; with uniform routing the chance an expert is missed
        by all ``B`` tokens is ``(1 - k/E)^B``, so the expected fraction read is
        ``1 - (1 - k/E)^B`` -> 1 once ``B >> E/k``. Returns an array shaped like
        ``batch`` (a float for a scalar), for dense and MoE models alike.
        """
        B = positive("batch", batch)
        lookup = self.embedding_params if not self.tied_embeddings else 0
        all_experts = self.n_moe_layers * self.n_experts * self.expert_params
        dense = self.total_params - lookup - all_experts
        rows = np.minimum(B, self.vocab) * self.d_model if lookup else 0.0
        if self.is_moe:
            frac = 1.0 - (1.0 - self.experts_per_token / self.n_experts) ** B
            experts = all_experts * frac
        else:
            experts = 0.0
        return result(np.broadcast_to(dense + rows + experts, B.shape))

    @property
    def weights_read_params(self) -> int:
        """Weights a large-batch decode step reads: all but the untied embedding table."""
        lookup = self.embedding_params if not self.tied_embeddings else 0
        return self.total_params - lookup

    def weight_bytes(self, dtype: str = "bf16") -> float:
        """Bytes to hold every weight at ``dtype``."""
        return self.total_params * dtype_bytes(dtype)

    def __repr__(self) -> str:
        return f"Model({self.key!r})"


def from_hf_config(path_or_dict, name: str | None = None, warn: bool = True) -> Model:
    """A :class:`Model` from a Hugging Face ``config.json`` (a file path or an already-loaded dict).

    Nothing is downloaded. Understood families (``model_type``): llama, llama4_text, smollm3,
    phi3, mistral, mixtral, minimax_m1, olmoe, qwen2, qwen2_moe, qwen3, qwen3_moe, qwen3_next,
    qwen3_5_text, qwen3_5_moe_text, deepseek_v2, deepseek_v3, deepseek_v32, kimi_k2, gpt_oss,
    gemma3_text, glm4_moe, hunyuan (hunyuan_v1_moe), nemotron_h, falcon_h1, jamba, gpt2, bloom, mpt and gpt_neox, and a
    multimodal config's language model in its ``text_config``
    (see :mod:`llmmath._hf_config` for the field mapping); a config
    without ``model_type`` is placed by its ``architectures`` class name, matched
    exactly. A field the reader does not model whose name says it sizes weights
    (experts, widths, heads, layers, a nested sub-model's config) is refused; any
    other is listed in the result's ``unmodelled_config_fields`` and, unless
    ``warn=False``, named in a :class:`UserWarning`; keys starting with ``_``
    (``_name_or_path``) are metadata and skipped.

    ``name`` is the model's key; without it, the config's own name (``_name_or_path``, e.g.
    ``meta-llama/Llama-3.1-8B`` gives ``llama-3.1-8b``), else the file's name (``llama-3.1-8b.json``
    gives ``llama-3.1-8b``; for a ``config.json``, its folder's name), and only for a dict that
    names nothing ``hf-<model_type>``.

    Raises:
        ValueError: an unknown ``model_type`` (or, without one, no known architecture class),
            a missing required field, an unmodelled field that sizes weights, or a value this
            schema cannot express (the message names the field and what is allowed).
        TypeError: not a path, a string or a dict.
        FileNotFoundError: a path that does not exist.
    """
    from . import _hf_config  # the field mapping lives beside this module

    return _hf_config.build(path_or_dict, name=name, warn=warn)


@lru_cache(maxsize=None)
def catalog() -> Mapping[str, Model]:
    """Every model in ``data/models.toml``, by key, in file order."""
    return _catalog.entries("models.toml", "models", Model)


def names() -> list[str]:
    """Catalog keys, e.g. ``['llama-2-7b', ...]``."""
    return list(catalog())


def get(name: str | Model) -> Model:
    """The catalog model called ``name`` (case-insensitive); a Model is returned as is.

    Raises:
        KeyError: unknown name; the message names the closest entries.
    """
    return _catalog.resolve(name, Model, catalog(), "model")
