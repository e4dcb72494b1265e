"""One deployment, one answer: the library's entry points agree on where a deployment's bytes live (issue 27).

Three public entry points describe the weights and KV cache a chip holds under a placement:
``parallelism.memory_per_gpu`` (the wide-EP serving layout of chapter 6: ``ep`` GPUs a stage,
each expert also split ``tp`` ways), ``planner.plan`` (chapter 11: a stage of ``tp x dp``
chips, experts whole over ``ep`` of them) and, for capacity, ``serving.max_batch`` (chapter
1's pooled form: every chip's HBM in one pool). Where their layouts coincide they must give
the same bytes: ``memory_per_gpu(ep=E, tp=T, pp=P)`` is ``plan(tp=T, dp=E, ep=E, pp=P)``
(each of the ``E`` ranks holds ``1/E`` of every MoE layer's experts, split ``T`` ways; the
rest replicated over the ``E`` attention groups), and the pooled capacity is a TP-only plan
as long as TP does not exceed the KV heads (beyond, each KV head is held by several chips and
the pooled form overstates capacity). The grid spans a dense GQA model, an MLA MoE, a GQA MoE
and a model with sliding-window layers; placements with and without pipeline stages; batches
and contexts. The hand values for each number live in ``test_planner.py`` and
``test_lib_network_parallelism.py``.
"""

from __future__ import annotations

import math

import pytest

from llmmath import hardware, parallelism, planner, serving

GRID = [  # model, weight dtype, (tp, ep, pp) placements: one MoE layout needs ep > 1
    ("llama-3.1-70b", "bf16", [(8, 1, 1), (4, 1, 2), (2, 1, 4), (1, 1, 8)]),
    ("deepseek-v3", "fp8", [(1, 32, 1), (1, 16, 2), (2, 8, 2), (1, 64, 4)]),
    ("qwen3-235b-a22b", "bf16", [(4, 8, 1), (1, 16, 2), (2, 4, 4)]),
    ("gpt-oss-120b", "bf16", [(1, 4, 1), (2, 2, 2), (4, 1, 1)]),
]
BATCHES = (1, 16, 256)
CONTEXTS = (1, 8192, 131072)


@pytest.mark.parametrize("model, dtype, placements", GRID, ids=[g[0] for g in GRID])
def test_memory_per_gpu_and_the_planner_hold_the_same_bytes(model, dtype, placements):
    for tp, ep, pp in placements:
        n = tp * ep * pp
        for b in BATCHES:
            for L in CONTEXTS:
                mem = parallelism.memory_per_gpu(model, ep=ep, pp=pp, tp=tp, batch=b, context=L, weight_dtype=dtype)
                # memory_per_gpu's batch is a micro-batch; pp of them are in flight: pp * b sequences a replica
                p = planner.plan(model, "h200", n, context=L, batch=pp * b, weight_dtype=dtype, tp=tp, dp=ep,
                                 ep=ep, pp=pp)
                where = f"{model} tp={tp} ep={ep} pp={pp} b={b} L={L}"
                assert p.weight_bytes_per_chip == pytest.approx(float(mem.weight_bytes), rel=1e-12), where
                assert p.kv_bytes_per_chip == pytest.approx(float(mem.kv_bytes), rel=1e-12), where


@pytest.mark.parametrize("model, chip, n, dtype", [("llama-3.1-70b", "h100-sxm", 8, "bf16"),
                                                   ("llama-3.1-8b", "a100-80gb", 2, "bf16"),
                                                   ("gpt-oss-120b", "h200", 4, "bf16"),
                                                   ("qwen3-235b-a22b", "b200", 4, "fp8")])
def test_pooled_capacity_is_a_tensor_parallel_plan_while_tp_divides_the_kv_heads(model, chip, n, dtype):
    for L in CONTEXTS:
        pooled = float(serving.max_batch(model, chip, L, n_chips=n, weight_dtype=dtype))
        placed = planner.plan(model, chip, n, context=L, weight_dtype=dtype, tp=n).max_batch
        assert placed == pooled, f"{model} on {n} x {chip}, L={L}"


def test_past_the_kv_heads_the_pooled_capacity_overstates_and_the_placed_one_says_so():
    # Llama-3.1-8B has 8 KV heads: on 16 chips in TP16 each KV head sits on two chips, so a sequence's cache
    # takes 1/8 of every chip, not 1/16: the placed capacity is about half the pooled one
    L = 131072
    pooled = float(serving.max_batch("llama-3.1-8b", "h100-sxm", L, n_chips=16))
    placed = planner.plan("llama-3.1-8b", "h100-sxm", 16, context=L, tp=16).max_batch
    kv_seq = 32 * 2 * 8 * 128 * 2 * L                      # K and V, 8 heads of 128, 32 layers, bf16
    weights_chip = 8_030_261_248 * 2 / 16
    assert placed == math.floor((hardware.get("h100-sxm").hbm_bytes - weights_chip) / (kv_seq / 8))
    assert 0.45 < placed / pooled < 0.55
