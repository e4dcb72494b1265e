"""Every bad input to the public math API is refused clearly, never turned into a silent wrong number.

The table below holds one bad call per row: the exception it must raise and a
regular expression its message must match -- the name of the offending argument
(and, where it matters, what is allowed). The reviewer's 27 reports are marked
``R1`` .. ``R27``; the rest are the same classes of bug (booleans taken as
numbers, shapes that do not broadcast, overflow, helper errors that named the
wrong argument, fields never validated, flags that took any truthy value) found
in the other public functions.

The Hypothesis tests then throw random good and bad values (negative, zero, NaN,
inf, huge, tiny, booleans, strings, None, lists) at one argument of a key
function at a time and require either a ValueError/TypeError/KeyError or a
finite, non-negative result -- never a NaN, an inf, a negative time or a
RuntimeWarning.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from llmmath import (attention, hardware, memory, models, moe, moe_bench, network, parallelism, roofline, schedule, serving,
                     sparse_attention as S, training, units)

NAN, INF = math.nan, math.inf
LLAMA = models.get("llama-2-7b")
DSV3 = models.get("deepseek-v3")
H100 = hardware.get("h100-sxm")


def _model(**kw):
    """``models.Model(...)`` built field by field (Llama-2-7B's fields, some replaced)."""
    fields = {f.name: getattr(LLAMA, f.name) for f in dataclasses.fields(LLAMA)}
    return models.Model(**{**fields, **kw})


def _decode(**kw):
    args = dict(model="llama-2-70b", chip="h100-sxm", batch=8, context=2048, n_chips=4)
    args.update(kw)
    return serving.decode_step_time_s(**args)


def _a2a(**kw):
    args = dict(model="deepseek-v3", system="gb200-nvl72", ep=8, batch_per_rack=64)
    args.update(kw)
    return parallelism.moe_layer_all_to_all_s(**args)


def _qkv(T=2, L=8, d=4):
    rng = np.random.default_rng(0)
    return rng.standard_normal((T, d)), rng.standard_normal((T, L, d)), rng.standard_normal((T, L, 1))


q, K, V = _qkv()

# (id, call, exception, regex the message must match)
CASES = [
    # ---- the reviewer's reports ------------------------------------------------------------
    ("R1 decode batch=True", lambda: serving.decode_step_time_s("llama-2-70b", "h100-sxm", True, 2048, n_chips=4),
     TypeError, r"^batch must be .*not a boolean"),
    ("R2 decode context=True", lambda: serving.decode_step_time_s("llama-2-70b", "h100-sxm", 8, True, n_chips=4),
     TypeError, r"^context must be .*not a boolean"),
    ("R3 Model n_layers=True", lambda: _model(n_layers=True), TypeError, r"\bn_layers must be a whole number"),
    ("R4 Model negative d_ff", lambda: _model(d_ff=-11008), ValueError, r"\bd_ff must be a whole number >= 0"),
    ("R5 Model n_layers=2.5", lambda: _model(n_layers=2.5), ValueError, r"\bn_layers must be a whole number >= 1"),
    ("R6 Model vocab=nan", lambda: _model(vocab=NAN), ValueError, r"\bvocab must be a whole number"),
    ("R7 MoE d_ff_expert=0", lambda: dataclasses.replace(DSV3, d_ff_expert=0),
     ValueError, r"\bd_ff_expert must be >= 1"),
    ("R8 n_dense_layers > n_layers", lambda: dataclasses.replace(DSV3, n_dense_layers=62), ValueError,
     r"\bn_dense_layers must be between 0 and n_layers - 1"),
    ("R9 Model n_layers='32'", lambda: _model(n_layers="32"), TypeError, r"\bn_layers must be a whole number"),
    ("R10 decode overflow", lambda: _decode(batch=1e300, context=1e300, n_chips=1, check_capacity=False),
     ValueError, r"not finite.*too large: batch=1e\+300, context=1e\+300"),
    ("R11 train_flops context without model", lambda: training.train_flops(7e9, 1e12, context=4096), ValueError,
     r"^context=4096 needs model="),
    ("R12 train_flops context=-1", lambda: training.train_flops(7e9, 1e12, context=-1), ValueError,
     r"^context must be >= 0"),
    ("R13 compute_split all zero", lambda: training.compute_split(0, 0, 0, 1e9), ValueError,
     r"pretrain_tokens, rl_tokens and inference_tokens are all 0"),
    ("R14 mfu_pretrain=1.5", lambda: training.compute_split(1e12, 0, 0, 1e9, mfu_pretrain=1.5), ValueError,
     r"^mfu_pretrain must be in \(0, 1\]"),
    ("R15 ChinchillaFit complex", lambda: training.ChinchillaFit(1.69 + 1j, 406.4, 410.7, 0.34, 0.28, "x"),
     TypeError, r"ChinchillaFit: E must be .*not complex"),
    ("R16 ChinchillaFit NaN", lambda: training.ChinchillaFit(1.69, NAN, 410.7, 0.34, 0.28, "x"), ValueError,
     r"ChinchillaFit: A must be finite"),
    ("R17 bubble_fraction 2.5 stages", lambda: parallelism.bubble_fraction(2.5, 8), ValueError,
     r"^stages must be a whole number >= 1"),
    ("R18 decode shape mismatch", lambda: _decode(batch=np.array([1, 2, 3]), context=np.array([1, 2])), ValueError,
     r"^batch and context must have shapes that broadcast.*batch has shape \(3,\), context has shape \(2,\)"),
    ("R19 memory_time_s shape mismatch", lambda: roofline.memory_time_s([1, 2], [1, 2, 3]), ValueError,
     r"^n_bytes and bytes_per_s must have shapes that broadcast.*\(2,\).*\(3,\)"),
    ("R20 all-to-all ep=0", lambda: _a2a(ep=0), ValueError, r"^ep must be a whole number >= 1"),
    ("R21 all-to-all racks=0", lambda: _a2a(racks=0), ValueError, r"^racks must be a whole number >= 1"),
    ("R22 all-to-all batch_per_rack=-64", lambda: _a2a(batch_per_rack=-64), ValueError,
     r"^batch_per_rack must be >= 0"),
    ("R23 all-to-all batch_per_rack=nan", lambda: _a2a(batch_per_rack=NAN), ValueError,
     r"^batch_per_rack must be finite"),
    ("R24 prefill prompt_tokens=0.5", lambda: serving.prefill_step("llama-3.1-8b", "h100-sxm", prompt_tokens=0.5),
     ValueError, r"^prompt_tokens must be a whole number >= 1"),
    ("R25 crossover max_context=-1", lambda: serving.attention_crossover_context("llama-3.1-8b", max_context=-1),
     ValueError, r"^max_context must be > 0"),
    ("R26 fmt_bytes('abc')", lambda: units.fmt_bytes("abc"), TypeError, r"^n_bytes must be a single real number"),
    ("R27 fmt_bytes(None)", lambda: units.fmt_bytes(None), TypeError, r"^n_bytes must be a single real number"),
    # ---- units -----------------------------------------------------------------------------
    ("fmt_bytes_per_s(True)", lambda: units.fmt_bytes_per_s(True), TypeError, r"^bytes_per_s must .*boolean"),
    ("fmt_flops complex", lambda: units.fmt_flops(1j), TypeError, r"^flops must .*not complex"),
    ("fmt_flops_per_s array", lambda: units.fmt_flops_per_s([1.0, 2.0]), TypeError, r"^flops_per_s must be a single"),
    ("fmt_count string", lambda: units.fmt_count("8e9"), TypeError, r"^n must be a single real number"),
    ("fmt_seconds None", lambda: units.fmt_seconds(None), TypeError, r"^seconds must be a single real number"),
    ("fmt_usd string", lambda: units.fmt_usd("1.5"), TypeError, r"^dollars must be a single real number"),
    ("fmt_seconds digits=0", lambda: units.fmt_seconds(1.0, digits=0),
     ValueError, r"^digits must be a whole number >= 1"),
    ("fmt_bytes digits=True", lambda: units.fmt_bytes(1.0, digits=True), TypeError, r"^digits must be a whole number"),
    ("dtype_bytes unknown", lambda: units.dtype_bytes("fp9"), KeyError, r"unknown dtype 'fp9'; allowed: fp32"),
    # ---- hardware --------------------------------------------------------------------------
    ("hardware.get(123)", lambda: hardware.get(123), TypeError, r"^chip must be a catalog name .* or a Chip"),
    ("hardware.get unknown", lambda: hardware.get("h100"), KeyError, r"unknown chip 'h100'; closest: h100-sxm"),
    ("hardware.system(None)", lambda: hardware.system(None), TypeError, r"^system must be a catalog name"),
    ("Chip hbm_bytes_per_s=0", lambda: dataclasses.replace(H100, hbm_bytes_per_s=0.0), ValueError,
     r"h100-sxm: hbm_bytes_per_s must be > 0"),
    ("Chip negative peak", lambda: dataclasses.replace(H100, peak_flops_per_s={"bf16": -1.0}), ValueError,
     r"peak_flops_per_s\['bf16'\] must be > 0"),
    ("Chip unknown dtype", lambda: dataclasses.replace(H100, peak_flops_per_s={"fp9": 1e15}), KeyError,
     r"peak_flops_per_s has unknown dtypes \['fp9'\]"),
    ("Chip scale_up_domain=2.5", lambda: dataclasses.replace(H100, scale_up_domain=2.5), ValueError,
     r"scale_up_domain must be a whole number >= 1"),
    ("Chip hbm_bytes=True", lambda: dataclasses.replace(H100, hbm_bytes=True), TypeError, r"hbm_bytes must be"),
    ("System packages=0", lambda: dataclasses.replace(hardware.system("gb200-nvl72"), packages=0), ValueError,
     r"gb200-nvl72: packages must be a whole number >= 1"),
    ("Chip.flops_per_s fp9", lambda: H100.flops_per_s("fp9"), KeyError, r"unknown dtype 'fp9'"),
    # ---- models ----------------------------------------------------------------------------
    ("models.get(None)", lambda: models.get(None), TypeError, r"^model must be a catalog name"),
    ("Model gated_mlp='yes'", lambda: _model(gated_mlp="yes"), TypeError, r"\bgated_mlp must be True or False"),
    ("Model key=5", lambda: _model(key=5), TypeError, r"\bkey must be a string"),
    ("Model n_kv_heads=3", lambda: _model(n_kv_heads=3), ValueError, r"not a multiple of n_kv_heads=3"),
    ("dense Model with experts_per_token", lambda: _model(experts_per_token=2), ValueError,
     r"\bexperts_per_token must be 0 .* in a dense model"),
    ("Model published_total_params<0", lambda: _model(published_total_params=-1), ValueError,
     r"\bpublished_total_params must be >= 0"),
    ("Model learned positions without max_context", lambda: _model(pos_embedding="learned", max_context=0),
     ValueError, r"\bmax_context must be >= 1 with learned positions"),
    ("Model dense d_ff=0", lambda: _model(d_ff=0), ValueError, r"\bd_ff must be >= 1"),
    ("Model MLA v_head_dim=0", lambda: dataclasses.replace(DSV3, v_head_dim=0), ValueError, r"\bv_head_dim >= 1"),
    ("attention_flops_per_token(-1)", lambda: LLAMA.attention_flops_per_token(-1),
     ValueError, r"^context must be >= 0"),
    ("flops_per_token bool array", lambda: LLAMA.flops_per_token(np.array([True, False])), TypeError,
     r"^context must be .*boolean array"),
    ("expected_params_read(0)", lambda: LLAMA.expected_params_read(0), ValueError, r"^batch must be > 0"),
    ("mlp_params(-1)", lambda: LLAMA.mlp_params(-1), ValueError, r"^d_ff must be a whole number >= 0"),
    ("kv_bytes_per_token fp9", lambda: LLAMA.kv_bytes_per_token("fp9"), KeyError, r"unknown dtype 'fp9'"),
    # ---- roofline --------------------------------------------------------------------------
    ("compute_time_s(True, 1)", lambda: roofline.compute_time_s(True, 1e12), TypeError, r"^flops must .*boolean"),
    ("compute_time_s np.True_", lambda: roofline.compute_time_s(1e9, np.True_), TypeError, r"^flops_per_s must"),
    ("roofline_time_s overlap", lambda: roofline.roofline_time_s(1, 1, 1, 1, overlap="min"), ValueError,
     r"^overlap must be 'max' or 'sum'"),
    ("roofline_time_s shapes", lambda: roofline.roofline_time_s([1, 2], [1, 2, 3], 1, 1), ValueError,
     r"^flops and n_bytes must have shapes that broadcast"),
    ("arithmetic_intensity n_bytes=0", lambda: roofline.arithmetic_intensity(1, 0),
     ValueError, r"^n_bytes must be > 0"),
    ("balance_point shapes", lambda: roofline.balance_point([1, 2], [1, 2, 3]), ValueError,
     r"^flops_per_s and bytes_per_s must have shapes"),
    ("attainable bool array", lambda: roofline.attainable_flops_per_s(np.array([True]), 1, 1), TypeError,
     r"^intensity must"),
    ("compute_time_s overflow", lambda: roofline.compute_time_s(1e300, 1e-300), ValueError,
     r"compute_time_s: the result is not finite.*flops=1e\+300.*too small.*flops_per_s=1e-300"),
    ("memory_time_s string list", lambda: roofline.memory_time_s(["1", "2"], 1), TypeError, r"^n_bytes must"),
    ("memory_time_s huge int", lambda: roofline.memory_time_s(10**400, 1), ValueError, r"^n_bytes must be finite"),
    # ---- serving ---------------------------------------------------------------------------
    ("decode n_chips=np.True_", lambda: _decode(n_chips=np.True_), TypeError, r"^n_chips must be a whole number"),
    ("decode n_chips=10**20", lambda: _decode(n_chips=10**20), ValueError, r"^n_chips must be at most 2\*\*53"),
    ("decode check_capacity='no'", lambda: _decode(check_capacity="no"), TypeError,
     r"^check_capacity must be True or False"),
    ("decode list with a bool", lambda: _decode(batch=[1, True]), TypeError, r"^batch must .*boolean"),
    ("decode_cost usd shape", lambda: serving.decode_cost_per_token("llama-3.1-8b", "h100-sxm", np.array([1, 2, 3]), 0,
                                                                   usd_per_chip_hour=np.array([2.0, 3.0])),
     ValueError, r"batch and usd_per_chip_hour must have shapes"),
    ("latency_floor n_chips=0", lambda: serving.latency_floor_s("llama-3.1-8b", "h100-sxm", n_chips=0), ValueError,
     r"^n_chips must be a whole number >= 1"),
    ("balance_batch attention_flops='yes'", lambda: serving.balance_batch("llama-3.1-8b", "h100-sxm",
                                                                          attention_flops="yes"),
     TypeError, r"^attention_flops must be True or False"),
    ("max_batch context=-1", lambda: serving.max_batch("llama-3.1-8b", "h100-sxm", -1), ValueError,
     r"^context must be >= 0"),
    ("fits_in_hbm shapes", lambda: serving.fits_in_hbm("llama-3.1-8b", "h100-sxm", [1, 2], [1, 2, 3]), ValueError,
     r"^batch and context must have shapes"),
    ("prefill shapes", lambda: serving.prefill_step("llama-3.1-8b", "h100-sxm", [128, 256], batch=[1, 2, 3]),
     ValueError, r"^prompt_tokens and batch must have shapes"),
    ("prefill overflow", lambda: serving.prefill_step("llama-3.1-8b", "h100-sxm", 2.0**52, batch=1e300), ValueError,
     r"prefill_step .*not finite.*too large: batch=1e\+300"),
    ("window ignored with global_every=1", lambda: serving.context_attention_flops_per_token("llama-3.1-8b", 1e4,
                                                                                             window=1024),
     ValueError, r"^window=1024 would be ignored"),
    ("topk with window", lambda: serving.context_attention_flops_per_token("llama-3.1-8b", 1e4, window=512, topk=64),
     ValueError, r"^topk replaces window and global_every"),
    ("indexer without topk", lambda: serving.context_attention_flops_per_token("llama-3.1-8b", 1e4,
                                                                               indexer_flops_per_position=10.0),
     ValueError, r"^indexer_flops_per_position applies only with topk"),
    ("window=0.5", lambda: serving.context_attention_flops_per_token("llama-3.1-8b", 1e4, window=0.5, global_every=4),
     ValueError, r"^window must be >= 1 token"),
    ("crossover window array", lambda: serving.attention_crossover_context("llama-3.1-8b", window=[512, 1024],
                                                                           global_every=4),
     TypeError, r"^window must be a single number"),
    ("utilization bool", lambda: serving.utilization_vs_balance(True), TypeError, r"^batch_over_balance must"),
    ("kv_limit attention_flops=1", lambda: serving.kv_limit_context("llama-3.1-8b", "h100-sxm", attention_flops=1),
     TypeError, r"^attention_flops must be True or False"),
    ("decode unknown model", lambda: _decode(model="llama-9"), KeyError, r"unknown model 'llama-9'"),
    # ---- attention -------------------------------------------------------------------------
    ("decode_attention_flops context=-1", lambda: attention.decode_attention_flops("llama-3.1-8b", -1), ValueError,
     r"^context must be >= 0"),
    ("attention heads_split=True", lambda: attention.arithmetic_intensity("llama-3.1-8b", heads_split=True),
     TypeError, r"^heads_split must be a whole number"),
    ("attention bad variant", lambda: attention.flops_per_cached_token("llama-3.1-8b", "MLA-absorbed"), ValueError,
     r"^variant must be one of"),
    ("dense_kv_bytes shapes", lambda: attention.dense_kv_bytes([1, 2], [1, 2, 3]), ValueError,
     r"^context and bytes_per_token must have shapes"),
    ("block_topk clip='yes'", lambda: attention.block_topk_kv_bytes(1e4, 64, 4, 256, 32, clip="yes"), TypeError,
     r"^clip must be True or False"),
    ("moba block=0 names block", lambda: attention.moba_kv_bytes(1e5, 256, 128, block=0), ValueError,
     r"^block must be > 0"),
    ("moba top_k=0.5 names top_k", lambda: attention.moba_kv_bytes(1e5, 256, 128, top_k=0.5), ValueError,
     r"^top_k must be >= 1"),
    ("nsa window=0.5", lambda: attention.nsa_kv_bytes(1e5, 256, window=0.5), ValueError, r"^window must be >= 1 token"),
    ("quest token_budget=0", lambda: attention.quest_kv_bytes(1e5, 256, 128, token_budget=0), ValueError,
     r"^token_budget must be >= 1"),
    ("loglog_slope repeated context", lambda: attention.loglog_slope([10, 10, 20], [1, 2, 3]), ValueError,
     r"^context must hold distinct values"),
    ("indexer_topk shapes", lambda: attention.indexer_topk_kv_bytes([1e4, 2e4], [64, 128, 256], 256, 132),
     ValueError, r"^context and top_k must have shapes"),
    ("block_topk_optimal shapes", lambda: attention.block_topk_optimal([1e4, 2e4], 4, [256, 128, 64], 32),
     ValueError, r"^context and bytes_per_token must have shapes"),
    # ---- sparse attention ------------------------------------------------------------------
    ("dense_attention scale array", lambda: S.dense_attention(q, K, V, scale=np.array([1.0, 2.0])), TypeError,
     r"^scale must be a single number"),
    ("dense_attention leading axes", lambda: S.dense_attention(np.zeros((3, 4)), K, V), ValueError,
     r"leading \(trial\) axes of q and K and V"),
    ("aggregation_task clustered='yes'", lambda: S.aggregation_task(trials=2, context=16, needles=2, clustered="yes"),
     TypeError, r"^clustered must be True or False"),
    ("aggregation_task margin array", lambda: S.aggregation_task(trials=2, context=16, needles=2, margin=[0.6, 0.7]),
     TypeError, r"^margin must be a single number"),
    ("topk_attention k=True", lambda: S.topk_attention(q, K, V, k=True), TypeError, r"^k must be a whole number"),
    ("indexer_scores seed=-1", lambda: S.indexer_scores(q, K, rank=2, seed=-1), ValueError,
     r"^seed must be a whole number >= 0"),
    ("dense_attention overflow", lambda: S.dense_attention(q * 1e200, K * 1e200, V), ValueError,
     r"dense_attention: the result is not finite.*q=.*K="),
    # ---- schedule --------------------------------------------------------------------------
    ("poisson rate=True", lambda: schedule.poisson_arrivals(True, 10), TypeError, r"^rate_per_s must"),
    ("poisson seed=-1", lambda: schedule.poisson_arrivals(1.0, 10, seed=-1), ValueError, r"^seed must be"),
    ("poisson tiny rate", lambda: schedule.poisson_arrivals(5e-324, 3), ValueError,
     r"poisson_arrivals: the result is not finite.*rate_per_s=4\.94066e-324"),
    ("uniform_arrivals duration array", lambda: schedule.uniform_arrivals(10, [1.0, 2.0]), TypeError,
     r"^duration_s must be a single number"),
    ("cadence period too small", lambda: schedule.simulate_cadence([1.0, 2.0], 1e-300), ValueError,
     r"arrivals_s / period_s is too large"),
    ("cadence capacity=0", lambda: schedule.simulate_cadence([1.0, 2.0], 1.0, capacity=0), ValueError,
     r"^capacity must be a whole number >= 1"),
    ("latency percentile q=101", lambda: schedule.simulate_cadence([0.5, 1.5], 1.0).latency_percentile_s(101),
     ValueError, r"^q must be in \[0, 100\]"),
    ("uniform_phase_latency shapes", lambda: schedule.uniform_phase_latency([1, 2], [1, 2, 3]), ValueError,
     r"^period_s and step_s must have shapes"),
    ("max_stable_rate capacity=2.5", lambda: schedule.max_stable_rate_per_s(2.5, 1.0), ValueError,
     r"^capacity must be a whole number >= 1"),
    ("hbm_period fill=1.5", lambda: schedule.hbm_period_s("h100-sxm", 1.5), ValueError,
     r"^fill_fraction must be in \(0, 1\]"),
    # ---- moe -------------------------------------------------------------------------------
    ("tokens_per_expert batch=True", lambda: moe.expected_tokens_per_expert(True, 8, 2), TypeError, r"^batch must"),
    ("experts_touched top_k > E", lambda: moe.expected_experts_touched(1, 8, 9), ValueError,
     r"^top_k must be <= n_experts"),
    ("route_uniform seed=True", lambda: moe_bench.route_uniform(4, 8, 2, seed=True), TypeError, r"^seed must be"),
    ("tokens_per_expert ids out of range", lambda: moe_bench.tokens_per_expert([[0, 9]], 4), ValueError,
     r"^assign holds expert ids outside 0\.\.3"),
    ("tokens_per_expert float ids", lambda: moe_bench.tokens_per_expert([[0.5]], 4), TypeError,
     r"^assign must be an integer array"),
    ("with_experts dense", lambda: moe.with_experts("llama-2-7b", 8), ValueError, r"needs a mixture-of-experts model"),
    ("with_experts E=2.5", lambda: moe.with_experts("mixtral-8x7b", 2.5), ValueError,
     r"^n_experts must be a whole number >= 1"),
    ("moe_sweep n_experts=0", lambda: moe_bench.moe_sweep(n_experts=0, progress=False), ValueError,
     r"^n_experts must be a whole number >= 1"),
    ("moe_sweep batches=[2.5]", lambda: moe_bench.moe_sweep(batches=[2.5], progress=False), ValueError,
     r"^batches must be a whole number >= 1"),
    # ---- network ---------------------------------------------------------------------------
    ("all_gather n_ranks=True", lambda: network.all_gather_time_s(1e6, True, 1e9), TypeError, r"^n_ranks must be"),
    ("all_reduce algorithm", lambda: network.all_reduce_time_s(1e6, 8, 1e9, algorithm="tree"), ValueError,
     r"^algorithm must be one of"),
    ("all_reduce shapes", lambda: network.all_reduce_time_s([1e6, 2e6], 8, [1e9, 2e9, 3e9]), ValueError,
     r"^n_bytes and bytes_per_s must have shapes"),
    ("all_to_all fraction=1.5", lambda: network.all_to_all_time_s(1e6, 8, 1e9, fraction_out_of_domain=1.5),
     ValueError, r"^fraction_out_of_domain must be in \[0, 1\]"),
    ("all_to_all fraction without scale_out", lambda: network.all_to_all_time_s(1e6, 8, 1e9,
                                                                                fraction_out_of_domain=0.5),
     ValueError, r"needs scale_out_bytes_per_s"),
    ("fit_alpha_beta shapes", lambda: network.fit_alpha_beta([1, 2, 3], [1, 2]), ValueError,
     r"^n_bytes and time_s must have the same shape"),
    ("moe bytes ep=0", lambda: network.moe_all_to_all_bytes_per_token(7168, 8, 0), ValueError, r"^ep must be"),
    ("expert_flops gated='no'", lambda: network.expert_flops_per_all_to_all_byte(2048, gated="no"), TypeError,
     r"^gated must be True or False"),
    ("all_gather overflow", lambda: network.all_gather_time_s(1e300, 8, 1e-300), ValueError,
     r"all_gather_time_s: the result is not finite.*n_bytes=1e\+300.*bytes_per_s=1e-300"),
    ("all_gather latency=-1", lambda: network.all_gather_time_s(1e6, 8, 1e9, latency_s=-1), ValueError,
     r"^latency_s must be >= 0"),
    # ---- parallelism -----------------------------------------------------------------------
    ("bubble microbatches=0", lambda: parallelism.bubble_fraction(4, 0), ValueError,
     r"^microbatches must be a whole number >= 1"),
    ("bubble shapes", lambda: parallelism.bubble_fraction([2, 4], [1, 2, 3]), ValueError,
     r"^stages and microbatches must have shapes"),
    ("bubble stages=True", lambda: parallelism.bubble_fraction(True, 4), TypeError, r"^stages must"),
    ("pipeline forward_only='no'", lambda: parallelism.pipeline_schedule(2, 2, forward_only="no"), TypeError,
     r"^forward_only must be True or False"),
    ("pipeline too many slots", lambda: parallelism.pipeline_schedule(10**4, 10**4), ValueError,
     r"stages \* microbatches = 100000000 slots are too many"),
    ("pipeline forward_s array", lambda: parallelism.pipeline_schedule(2, 2, forward_s=[1.0, 2.0]), TypeError,
     r"^forward_s must be a single number"),
    ("check_placement ep=3 dense", lambda: parallelism.check_placement("llama-3.1-8b", ep=3), ValueError,
     r"ep=3 but llama-3.1-8b is dense"),
    ("memory_per_gpu shapes", lambda: parallelism.memory_per_gpu("llama-3.1-8b", batch=[1, 2], context=[1, 2, 3]),
     ValueError, r"^batch and context must have shapes"),
    ("boundary layers_per_stage=0.5", lambda: parallelism.boundary_traffic_ratio("deepseek-v3", 0.5, 64, 900e9, 50e9),
     ValueError, r"^layers_per_stage must be between 1 and"),
    ("boundary dense", lambda: parallelism.boundary_traffic_ratio("llama-3.1-8b", 2, 8, 900e9, 50e9), ValueError,
     r"is dense"),
    ("pipelined_decode hop shape", lambda: parallelism.pipelined_decode("llama-3.1-8b", "h100-sxm", 1, 2,
                                                                        [1, 2, 3], hop_latency_s=[1e-6, 2e-6]),
     ValueError, r"^batch and hop_latency_s must have shapes"),
    ("all-to-all dense model", lambda: _a2a(model="llama-3.1-8b"), ValueError, r"is dense"),
    ("all-to-all racks without scale-out", lambda: _a2a(system="tpu-v4-pod", racks=2), ValueError,
     r"^racks=2 needs the scale-out bandwidth"),
    ("all-to-all ep=2.5", lambda: _a2a(ep=2.5), ValueError, r"^ep must be a whole number >= 1"),
    # ---- memory ----------------------------------------------------------------------------
    ("activation sequence_parallel='yes'", lambda: memory.activation_bytes_per_layer(2048, 1, 4096, 32,
                                                                                     sequence_parallel="yes"),
     TypeError, r"^sequence_parallel must be True or False"),
    ("activation shapes", lambda: memory.activation_bytes_per_layer([1024, 2048], [1, 2, 3], 4096, 32), ValueError,
     r"^seq_len and batch must have shapes"),
    ("activation recompute", lambda: memory.activation_bytes_per_layer(2048, 1, 4096, 32, recompute="some"),
     ValueError, r"^recompute must be one of"),
    ("activation d_model=True", lambda: memory.activation_bytes_per_layer(2048, 1, True, 32), TypeError,
     r"^d_model must be a whole number"),
    ("kv_read_vs_recompute context=-1", lambda: memory.kv_read_vs_recompute_s("llama-3.1-8b", "h100-sxm", -1),
     ValueError, r"^context must be >= 0"),
    # ---- training --------------------------------------------------------------------------
    ("chinchilla_loss shapes", lambda: training.chinchilla_loss([1e9, 2e9], [1e10, 2e10, 3e10]), ValueError,
     r"^n_params and n_tokens must have shapes"),
    ("chinchilla_optimal(0)", lambda: training.chinchilla_optimal(0), ValueError, r"^compute_flops must be > 0"),
    ("unknown fit", lambda: training.chinchilla_loss(1e9, 1e10, fit="kaplan"), KeyError, r"unknown fit 'kaplan'"),
    ("power laws p=0", lambda: training.sum_of_power_laws_minimum(1, 0, 1, 1), ValueError, r"^p must be > 0"),
    ("equal_cost mfu_rl=0", lambda: training.equal_cost_tokens(1e12, mfu_rl=0), ValueError,
     r"^mfu_rl must be in \(0, 1\]"),
    ("compute_split rl cost 7", lambda: training.compute_split(1e12, 1e11, 1e11, 1e9, rl_flops_per_param_token=7),
     ValueError, r"^rl_flops_per_param_token must be in \[2, 6\]"),
    ("tokens_for_loss target=-1", lambda: training.tokens_for_loss(1e9, -1), ValueError, r"^target_loss must be > 0"),
    ("train_and_serve shapes", lambda: training.train_and_serve_flops([1e9, 2e9], 2.5, [1e12, 2e12, 3e12]),
     ValueError, r"^n_params and inference_tokens must have shapes"),
    ("penalty inference_tokens array", lambda: training.train_serve_equal_cost_penalty([1e12, 1e13]), TypeError,
     r"^inference_tokens must be a single number"),
    ("ChinchillaFit alpha=0", lambda: training.ChinchillaFit(1.69, 406.4, 410.7, 0.0, 0.28, "x"), ValueError,
     r"ChinchillaFit: alpha must be > 0"),
    ("ChinchillaFit source=None", lambda: training.ChinchillaFit(1.69, 406.4, 410.7, 0.34, 0.28, None), TypeError,
     r"ChinchillaFit: source must be a string"),
    ("train_flops n_params=True", lambda: training.train_flops(True, 1e12), TypeError, r"^n_params must"),
    ("train_flops overflow", lambda: training.train_flops(1e200, 1e200), ValueError,
     r"train_flops: the result is not finite.*n_params=1e\+200, n_tokens=1e\+200"),
]


def test_the_table_is_large_and_ids_are_unique():
    assert len(CASES) >= 80
    assert len({c[0] for c in CASES}) == len(CASES)
    assert sum(c[0].startswith("R") and c[0][1].isdigit() for c in CASES) >= 27


@pytest.mark.parametrize("call, exc, pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_call_is_refused_naming_the_argument(call, exc, pattern):
    with pytest.raises(exc) as info:
        call()
    message = info.value.args[0] if info.value.args else ""
    assert isinstance(message, str)
    assert re.search(pattern, message), f"message {message!r} does not match {pattern!r}"


# ---- the fixed behaviours, positively ----------------------------------------------------------

def test_all_to_all_with_one_gpu_sends_nothing():
    # ep = 1 on one rack: one GPU holds every expert, no message is sent, not even the latency
    assert _a2a(ep=1) == 0.0
    out = _a2a(ep=1, batch_per_rack=np.array([1.0, 64.0, 512.0]))
    assert isinstance(out, np.ndarray) and out.shape == (3,) and np.all(out == 0.0)
    # ep = 1 over two racks is a real exchange between the two GPUs: positive time
    assert _a2a(ep=1, racks=2) > 0.0
    # ep = 2 still costs what it did
    assert _a2a(ep=2) > 0.0


@pytest.mark.parametrize("name", ["llama-3.2-1b", "qwen3-4b", "llama-2-7b", "deepseek-v3"])
def test_expected_params_read_broadcasts_for_every_model(name):
    m = models.get(name)
    B = np.array([1.0, 2.0, 4.0])
    out = m.expected_params_read(B)
    assert isinstance(out, np.ndarray) and out.shape == (3,)
    assert out.flags.writeable
    assert np.allclose(out, [m.expected_params_read(b) for b in B])
    assert isinstance(m.expected_params_read(2.0), float)
    assert m.expected_params_read(np.ones((2, 3))).shape == (2, 3)


def test_models_accept_whole_floats_and_stay_exact_integers():
    m = dataclasses.replace(LLAMA, n_layers=32.0, d_ff=np.int64(11008))
    assert type(m.n_layers) is int and type(m.d_ff) is int
    assert m.total_params == LLAMA.total_params
    # MoE what-ifs still build (through dataclasses.replace and __post_init__)
    assert moe.with_experts("deepseek-v3", 512).n_experts == 512


def test_decode_broadcasts_shapes_that_do_broadcast():
    t = _decode(batch=np.array([[1.0], [8.0], [64.0]]), context=np.array([0.0, 4096.0]))
    assert t.shape == (3, 2) and np.all(np.isfinite(t)) and np.all(t > 0)


def test_train_flops_context_with_model_and_zero_without():
    assert training.train_flops(7e9, 1e12) == 6 * 7e9 * 1e12
    assert training.train_flops(7e9, 1e12, context=0) == 6 * 7e9 * 1e12
    with_attention = training.train_flops(7e9, 1e12, context=4096, model="llama-2-7b")
    assert with_attention > 6 * 7e9 * 1e12


def test_documented_infinities_are_still_returned():
    # max_batch at context 0 is unbounded by HBM, balance_batch has no balance at huge context
    assert serving.max_batch("llama-3.1-8b", "h100-sxm", 0) == math.inf
    assert serving.balance_batch("llama-3.1-8b", "h100-sxm", context=1e9) == math.inf
    assert training.tokens_for_loss(1e6, 1.7) == math.inf


def test_formatting_still_prints_nan_and_inf():
    assert units.fmt_seconds(math.inf) == "inf s"
    assert units.fmt_count(math.inf) == "inf"
    assert units.fmt_bytes(np.float32(80e9)) == "80 GB"


def test_all_to_all_result_has_the_shape_of_every_argument():
    out = network.all_to_all_time_s(1e6, 8, 1e9, fraction_out_of_domain=np.zeros(3))
    assert out.shape == (3,)
    out = schedule.uniform_phase_latency(1.0, np.array([0.5, 1.0]))
    assert out["mean_wait_s"].shape == (2,)


# ---- Hypothesis: one argument at a time, good or bad, never a silent wrong number ---------------

# 60 examples per (function, argument) keeps the file at a few seconds; BAD_INPUT_EXAMPLES=2000 searches harder
FAST = settings(max_examples=int(os.environ.get("BAD_INPUT_EXAMPLES", 60)), deadline=None)

_special = st.sampled_from([0, -1, 1, 2, 0.5, -0.0, NAN, INF, -INF, 1e300, -1e300, 1e-300, 5e-324, 2.0**53 + 2,
                            10**30, True, False, np.True_, np.float64(NAN), "1", None, 1j])
_any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)
_value = st.one_of(_special, _any_float, st.integers(-(10**6), 10**6),
                   st.lists(st.one_of(_special, _any_float), min_size=1, max_size=3))

# (id, function taking keyword arguments, valid keyword arguments, the argument to vary)
_FUZZ = [
    ("decode_step_time_s", serving.decode_step_time_s,
     dict(model="llama-3.1-8b", chip="h100-sxm", batch=8, context=1024, n_chips=1, check_capacity=False),
     ["batch", "context", "n_chips"]),
    ("decode_step", serving.decode_step,
     dict(model="deepseek-v3", chip="h200", batch=64, context=4096, n_chips=8, check_capacity=False), ["batch"]),
    ("prefill_step", serving.prefill_step, dict(model="llama-3.1-8b", chip="h100-sxm", prompt_tokens=512, batch=2),
     ["prompt_tokens", "batch"]),
    ("roofline_time_s", roofline.roofline_time_s, dict(flops=1e12, n_bytes=1e9, flops_per_s=1e15, bytes_per_s=3e12),
     ["flops", "n_bytes", "flops_per_s", "bytes_per_s"]),
    ("compute_time_s", roofline.compute_time_s, dict(flops=1e12, flops_per_s=1e15), ["flops", "flops_per_s"]),
    ("memory_time_s", roofline.memory_time_s, dict(n_bytes=1e9, bytes_per_s=3e12), ["n_bytes", "bytes_per_s"]),
    ("attainable_flops_per_s", roofline.attainable_flops_per_s, dict(intensity=10, flops_per_s=1e15, bytes_per_s=3e12),
     ["intensity", "bytes_per_s"]),
    ("expected_params_read", lambda batch: DSV3.expected_params_read(batch), dict(batch=8), ["batch"]),
    ("decode_attention_bytes", attention.decode_attention_bytes, dict(model="llama-3.1-8b", context=1024), ["context"]),
    ("activation_bytes_per_layer", memory.activation_bytes_per_layer,
     dict(seq_len=2048, batch=1, d_model=4096, n_heads=32, tensor_parallel=1), ["seq_len", "batch", "tensor_parallel"]),
    ("memory_per_gpu", parallelism.memory_per_gpu, dict(model="deepseek-v3", ep=8, pp=2, batch=16, context=4096),
     ["batch", "context"]),
    ("train_flops", training.train_flops, dict(n_params=7e9, n_tokens=1e12, context=4096, model="llama-2-7b"),
     ["n_params", "n_tokens", "context"]),
    ("bubble_fraction", parallelism.bubble_fraction, dict(stages=4, microbatches=8), ["stages", "microbatches"]),
    ("all_reduce_time_s", network.all_reduce_time_s, dict(n_bytes=1e9, n_ranks=8, bytes_per_s=450e9, latency_s=5e-6),
     ["n_bytes", "n_ranks", "bytes_per_s", "latency_s"]),
    ("all_to_all_time_s", network.all_to_all_time_s,
     dict(n_bytes=1e8, n_ranks=16, bytes_per_s=900e9, fraction_out_of_domain=0.5, scale_out_bytes_per_s=50e9),
     ["n_bytes", "fraction_out_of_domain", "scale_out_bytes_per_s"]),
    ("moe_layer_all_to_all_s", parallelism.moe_layer_all_to_all_s,
     dict(model="deepseek-v3", system="gb200-nvl72", ep=8, batch_per_rack=64, racks=2),
     ["ep", "batch_per_rack", "racks"]),
    ("expected_experts_touched", moe.expected_experts_touched, dict(batch=16, n_experts=256, top_k=8), ["batch"]),
    ("uniform_phase_latency", schedule.uniform_phase_latency, dict(period_s=0.02, step_s=0.01), ["period_s", "step_s"]),
    ("chinchilla_loss", training.chinchilla_loss, dict(n_params=7e9, n_tokens=1e12), ["n_params", "n_tokens"]),
]
_FUZZ_CASES = [(name, fn, kw, arg) for name, fn, kw, args in _FUZZ for arg in args]


def _leaves(out):
    """Every numeric value inside a result (floats, arrays, tuples, dicts, dataclasses)."""
    if dataclasses.is_dataclass(out):
        for f in dataclasses.fields(out):
            yield from _leaves(getattr(out, f.name))
    elif isinstance(out, dict):
        for v in out.values():
            yield from _leaves(v)
    elif isinstance(out, (tuple, list)):
        for v in out:
            yield from _leaves(v)
    elif isinstance(out, (float, int, np.ndarray, np.number)) and not isinstance(out, (bool, np.bool_)):
        yield np.asarray(out, dtype=float)


@pytest.mark.filterwarnings("error::RuntimeWarning")
@pytest.mark.parametrize("name, fn, kw, arg", _FUZZ_CASES, ids=[f"{c[0]}-{c[3]}" for c in _FUZZ_CASES])
@FAST
@given(value=_value)
def test_one_bad_argument_is_refused_or_the_result_is_finite_and_non_negative(name, fn, kw, arg, value):
    try:
        out = fn(**{**kw, arg: value})
    except (ValueError, TypeError, KeyError) as e:
        message = e.args[0] if e.args else ""
        # the refusal names the argument that was varied (or, for an overflow, lists it among the inputs)
        assert arg in message, f"{name}({arg}={value!r}) raised {e!r}, which does not name {arg}"
        return
    leaves = list(_leaves(out))
    assert leaves, f"{name} returned no numbers: {out!r}"
    for leaf in leaves:
        assert np.all(np.isfinite(leaf)), f"{name}({arg}={value!r}) returned a non-finite {leaf!r}"
        assert np.all(leaf >= 0), f"{name}({arg}={value!r}) returned a negative {leaf!r}"


@FAST
@given(field=st.sampled_from(["n_layers", "d_model", "n_heads", "n_kv_heads", "head_dim", "d_ff", "vocab",
                              "max_context", "n_experts", "d_ff_expert", "n_dense_layers", "kv_lora_rank"]),
       value=_value)
def test_model_fields_are_refused_or_give_finite_counts(field, value):
    try:
        m = dataclasses.replace(LLAMA, **{field: value})
    except (ValueError, TypeError) as e:
        assert field in e.args[0]
        return
    try:
        counts = [m.total_params, m.active_params, m.kv_bytes_per_token(), m.flops_per_token(1024)]
    except (ValueError, TypeError) as e:  # a huge, valid model may overflow float64 in a per-token count
        assert "not finite" in e.args[0]
        return
    assert all(math.isfinite(c) and c > 0 for c in counts)
