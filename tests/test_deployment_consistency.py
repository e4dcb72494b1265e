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

import functools
import math

import pytest

from llmmath import deployment, hardware, parallelism, planner, serving

# the pooled forms and these hand counts share the roofline's datasheet view of memory: all of each chip's HBM
_plan = functools.partial(planner.plan, usable_hbm_fraction=1.0)
_Deployment = functools.partial(deployment.Deployment, usable_hbm_fraction=1.0)

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
                p = _plan(model, "h200", n, context=L, batch=pp * b, weight_dtype=dtype, tp=tp, dp=ep,
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
        placed = _plan(model, chip, n, context=L, weight_dtype=dtype, tp=n).max_batch
        assert placed == pooled, f"{model} on {n} x {chip}, L={L}"


def test_past_the_kv_heads_the_pooled_capacity_overstates_and_the_placed_one_says_so():
    # Llama-3.1-8B has 8 KV heads: on 16 chips in TP16 each KV head sits on two chips, so a sequence's cache
    # takes 1/8 of every chip, not 1/16: the placed capacity is about half the pooled one
    L = 131072
    pooled = float(serving.max_batch("llama-3.1-8b", "h100-sxm", L, n_chips=16))
    placed = _plan("llama-3.1-8b", "h100-sxm", 16, context=L, tp=16).max_batch
    kv_seq = 32 * 2 * 8 * 128 * 2 * L                      # K and V, 8 heads of 128, 32 layers, bf16
    weights_chip = 8_030_261_248 * 2 / 16
    assert placed == math.floor((hardware.get("h100-sxm").hbm_bytes - weights_chip) / (kv_seq / 8))
    assert 0.45 < placed / pooled < 0.55


# ---- the decode step: one Deployment behind the planner, the pipeline's stages and the placed-expert form ----

@pytest.mark.parametrize("P", [1, 2, 4, 8])
def test_the_pipelines_stages_are_the_planners_step(P):
    """pipelined_decode's busiest stage x P is the planner's step for the same replica (DP attention over 64 GPUs a
    stage, experts over all of them, P micro-batches of 2048 in flight)."""
    b, L = 2048, 8192
    d = parallelism.pipelined_decode("deepseek-v3", "gb200", 64, P, b, L, weight_dtype="fp8")
    p = _plan("deepseek-v3", "gb200", 64 * P, context=L, batch=P * b, tp=1, dp=64, ep=64, pp=P,
                     weight_dtype="fp8")
    assert p.at_batch.step_time_s == pytest.approx(P * d.stage_s, rel=1e-12)
    assert d.token_latency_s == pytest.approx(max(d.sum_of_stages_s, P * d.stage_s), rel=1e-12)


def test_chapter_6s_layout_by_hand_is_slower_than_the_pooled_step():
    """DeepSeek-V3 fp8 on 64 GB200s (8 TB/s each), 2048 sequences at 8192 tokens, one stage. From config.json:
    MLA attention 187,107,328 parameters a layer; a dense layer adds 3 x 7168 x 18432 + 2 norms (583,483,392); an MoE
    layer's non-routed part adds 2 norms, the router (7168 x 256 + 256) and the shared expert (3 x 7168 x 2048):
    232,997,120; 256 routed experts of 44,040,192; the LM head 129,280 x 7168 and the final norm. Each GPU serves 32
    sequences, reads its own copy of everything but the routed experts (the input table only looked up: 32 rows),
    1/64 of the routed experts, and its sequences' latent cache (61 layers x 576 values x 2 bytes a token)."""
    non_routed = 3 * 583_483_392 + 58 * 232_997_120 + 129_280 * 7168 + 7168
    routed = 58 * 256 * 44_040_192 / 64
    kv = 32 * 8192 * 61 * 576 * 2
    placed_s = (non_routed + routed + 32 * 7168 + kv) / 8e12
    assert placed_s == pytest.approx(5.6036e-3, rel=1e-4)                # 44.83 GB a GPU at 8 TB/s
    lib = parallelism.stage_floors_s("deepseek-v3", "gb200", 64, 1, 2048, 8192, weight_dtype="fp8")
    assert float(lib[0]) == pytest.approx(placed_s, rel=1e-9)
    pooled = serving.decode_step("deepseek-v3", "gb200", 2048, 8192, n_chips=64, weight_dtype="fp8",
                                 check_capacity=False).time_s
    assert pooled == pytest.approx(3.611e-3, rel=1e-3)                   # what chapter 6 printed before
    # claim 16's per-layer floor: 4096 sequences at 4096 tokens hold the same KV bytes per GPU
    layer = parallelism.stage_floors_s("deepseek-v3", "gb200", 64, 1, 4096, 4096, weight_dtype="fp8")[0] / 61
    assert layer == pytest.approx((non_routed + routed + 64 * 7168 + kv) / 8e12 / 61, rel=1e-9)   # 91.9 us, was 59


def test_the_placed_expert_form_is_a_tensor_parallel_deployment_where_tp_divides_the_kv_heads():
    """serving.expert_parallel_decode_step pools the non-expert weights and the KV: Mixtral on 8 chips (8 KV heads)
    at tp = ep = 8 is exactly that layout."""
    d = _Deployment("mixtral-8x7b", "h100-sxm", 8, tp=8, ep=8)
    for B, L in ((1, 0), (3, 1024), (64, 8192)):
        ep = serving.expert_parallel_decode_step("mixtral-8x7b", "h100-sxm", B, L, 8, check_capacity=False)
        comp, w, kv = d.decode_step(B, L)
        assert (comp, w, kv) == pytest.approx((ep.compute_s, ep.weight_s, ep.kv_s), rel=1e-9)


def test_the_busiest_stage_holds_more_kv_when_the_layers_do_not_divide():
    """DeepSeek-V3's 61 layers in 4 stages: 16 on the first, so its GPUs hold 16/61 of each sequence's cache where
    the average is 1/4 (+4.9%); the planner and memory_per_gpu agree, and the planner's capacity follows it."""
    b, L = 16, 32768
    mem = parallelism.memory_per_gpu("deepseek-v3", ep=8, pp=4, batch=b, context=L, weight_dtype="fp8")
    hand = 4 * b * L * 16 * 576 * 2 / 8
    assert float(mem.kv_bytes) == pytest.approx(hand, rel=1e-12)
    assert hand / (4 * b * L * 61 / 4 * 576 * 2 / 8) == pytest.approx(64 / 61)
    p = _plan("deepseek-v3", "h200", 32, context=L, batch=4 * b, tp=1, dp=8, ep=8, pp=4, weight_dtype="fp8")
    assert p.kv_bytes_per_chip == pytest.approx(hand, rel=1e-12)
    # capacity, by hand, stage by stage (H200: 141 GB; fp8 weights per GPU of each stage at EP8 from config.json:
    # an MoE layer holds 232,997,120 + 32 experts x 44,040,192 = 1,642,283,264)
    moe = 232_997_120 + 32 * 44_040_192
    first = 3 * 583_483_392 + 13 * moe + 129_280 * 7168            # 16 layers and the input table
    middle = 15 * moe
    last = 15 * moe + 129_280 * 7168 + 7168                        # and the head and the final norm
    assert p.weight_bytes_per_chip == pytest.approx(last, rel=1e-12)
    # a sequence's cache lives whole on one of the 8 attention groups: whole sequences per GPU, stage by stage
    per_seq = {16: L * 16 * 576 * 2, 15: L * 15 * 576 * 2}
    hand_max = 8 * min(math.floor((141e9 - first) / per_seq[16]), math.floor((141e9 - middle) / per_seq[15]),
                       math.floor((141e9 - last) / per_seq[15]))
    assert hardware.get("h200").hbm_bytes == 141e9
    assert p.max_batch == hand_max == 8 * 193      # the first stage's KV binds, though the last holds more weights


def test_capacity_on_a_legal_placement_by_hand():
    """DeepSeek-V3 fp8 on 8 H200s (141 GB each) at 128k tokens. From config.json: 17,117,648,384 non-routed parameters,
    58 MoE layers x 256 experts of 44,040,192; a sequence's latent cache 131,072 x 61 x 576 x 2 bytes = 9.21 GB,
    which tensor parallelism cannot split. Each placement holds whole sequences per attention group."""
    other, experts, kv_seq = 17_117_648_384, 58 * 256 * 44_040_192, 131_072 * 61 * 576 * 2
    hand = {1: 8 * math.floor((141e9 - other - experts / 8) / kv_seq),        # DP8 EP8: 4 a GPU
            2: 4 * math.floor((141e9 - other / 2 - experts / 8) / kv_seq),    # TP2 DP4: 5 a group
            4: 2 * math.floor((141e9 - other / 4 - experts / 8) / kv_seq),
            8: 1 * math.floor((141e9 - other / 8 - experts / 8) / kv_seq)}    # TP8: 6, the latent on every GPU
    assert hand == {1: 32, 2: 20, 4: 10, 8: 6}
    for pl in deployment.placements("deepseek-v3", 8):
        d = _Deployment("deepseek-v3", "h200", 8, tp=pl.tp, ep=pl.ep, dp=pl.dp, weight_dtype="fp8")
        assert d.max_batch(131072) == hand[pl.tp]
    best, d = deployment.most_sequences("deepseek-v3", "h200", 8, 131072, weight_dtype="fp8")
    assert best == 32 and d.placement.dp == 8
    # the pooled form counts 8 x 141 GB in one pool: 49, as if a sequence's cache could be cut across GPUs
    pooled = serving.max_batch("deepseek-v3", "h200", 131072, 8, "fp8")
    assert pooled == math.floor((8 * 141e9 - other - experts) / kv_seq) == 49
    # at 1M tokens one sequence's latent (73.7 GB) outgrows every GPU's free HBM: no one-stage placement holds it
    assert deployment.most_sequences("deepseek-v3", "h200", 8, 2**20, weight_dtype="fp8")[0] == 0
    assert serving.max_batch("deepseek-v3", "h200", 2**20, 8, "fp8") == 6


def test_bytes_sent_per_step_by_collective_by_hand():
    # DeepSeek-V3 on 64 GPUs, DP attention, EP64, 2048 sequences: 32 tokens a GPU in each of 58 MoE layers, each sent
    # to 8 experts in fp8 and combined in bf16, 63/64 of them off the GPU: 8 x 7168 x 3 x 63/64 = 169,344 B a token
    d = _Deployment("deepseek-v3", "gb200", 64, dp=64, ep=64, weight_dtype="fp8")
    sent = d.collective_bytes_per_step(2048)
    assert float(sent["expert-parallel all-to-all"]) == pytest.approx(58 * 32 * 169_344, rel=1e-12)
    assert float(sent["tensor-parallel all-reduce"]) == 0 == float(sent["pipeline send"])
    # Llama-3.1-70B TP8, 64 sequences: 80 layers x 2 all-reduces of 64 x 8192 bf16 values, a ring sending 2 x 7/8
    t = _Deployment("llama-3.1-70b", "h100-sxm", 8, tp=8).collective_bytes_per_step(64)
    assert float(t["tensor-parallel all-reduce"]) == pytest.approx(80 * 2 * 2 * 7 / 8 * 64 * 8192 * 2, rel=1e-12)
    # two stages of TP4: a GPU works on its stage's 40 layers for both micro-batches of 32, and sends its quarter of
    # each micro-batch's activations on
    p = _Deployment("llama-3.1-70b", "h100-sxm", 8, tp=4, pp=2).collective_bytes_per_step(64)
    assert float(p["pipeline send"]) == pytest.approx(2 * 32 * 8192 * 2 / 4, rel=1e-12)
    assert float(p["tensor-parallel all-reduce"]) == pytest.approx(40 * 2 * 2 * 3 / 4 * 2 * 32 * 8192 * 2, rel=1e-12)
