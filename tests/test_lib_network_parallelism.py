"""Collectives (alpha-beta), MoE traffic, and placements: hand derivations and properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from llmmath import network as N, parallelism as P


# ---- collectives -------------------------------------------------------------------------

def test_ring_all_reduce_by_hand():
    # 1 GB over 8 GPUs at 450 GB/s, 5 us per step: 2*7*5us + 2*7/8 * 1e9/450e9
    t = N.all_reduce_time_s(1e9, 8, 450e9, latency_s=5e-6)
    assert t == pytest.approx(14 * 5e-6 + 1.75e9 / 450e9)


def test_all_reduce_is_reduce_scatter_plus_all_gather():
    for p in (2, 3, 8, 72):
        ar = N.all_reduce_time_s(3e8, p, 1e11, 1e-6)
        assert ar == pytest.approx(N.reduce_scatter_time_s(3e8, p, 1e11, 1e-6) + N.all_gather_time_s(3e8, p, 1e11, 1e-6))


def test_recursive_halving_has_log_latency_and_same_bandwidth_term():
    t = N.all_reduce_time_s(0, 64, 1e11, latency_s=1e-6, algorithm="recursive_halving")
    assert t == pytest.approx(2 * 6 * 1e-6)
    big = N.all_reduce_time_s(1e10, 64, 1e11, algorithm="recursive_halving")
    assert big == pytest.approx(N.all_reduce_time_s(1e10, 64, 1e11))


def test_all_to_all_across_two_domains_is_set_by_the_slow_link():
    # half the traffic crosses at 50 GB/s, half stays at 450 GB/s: the slow half wins
    s = 1e9 * 63 / 64
    t = N.all_to_all_time_s(1e9, 64, 450e9, fraction_out_of_domain=0.5, scale_out_bytes_per_s=50e9)
    assert t == pytest.approx(0.5 * s / 50e9)
    assert t / N.all_to_all_time_s(1e9, 64, 450e9) == pytest.approx(0.5 * 450 / 50)


def test_one_rank_communicates_nothing():
    assert N.all_reduce_time_s(1e9, 1, 1e9, 1e-3) == 0.0
    assert N.all_to_all_time_s(1e9, 1, 1e9, 1e-3) == 0.0


@settings(max_examples=40, deadline=None)
@given(st.floats(1, 1e10), st.integers(2, 512), st.floats(1e8, 1e13), st.floats(0, 1e-4))
def test_collectives_grow_with_bytes_and_all_reduce_costs_two_all_gathers(n, p, bw, lat):
    assert N.all_gather_time_s(2 * n, p, bw, lat) > N.all_gather_time_s(n, p, bw, lat)
    assert N.all_reduce_time_s(n, p, bw, lat) == pytest.approx(2 * N.all_gather_time_s(n, p, bw, lat))


@pytest.mark.parametrize("call, match", [
    (lambda: N.all_reduce_time_s(-1, 8, 1e9), "n_bytes"),
    (lambda: N.all_reduce_time_s(1, 0, 1e9), "n_ranks"),
    (lambda: N.all_reduce_time_s(1, 8, 0), "bytes_per_s"),
    (lambda: N.all_reduce_time_s(1, 8, 1e9, latency_s=-1), "latency_s"),
    (lambda: N.all_reduce_time_s(1, 8, 1e9, algorithm="tree"), "algorithm"),
    (lambda: N.all_to_all_time_s(1, 8, 1e9, fraction_out_of_domain=0.5), "scale_out_bytes_per_s"),
    (lambda: N.all_to_all_time_s(1, 8, 1e9, fraction_out_of_domain=1.5, scale_out_bytes_per_s=1), r"\[0, 1\]"),
    (lambda: N.fit_alpha_beta([1], [1]), ">= 2 distinct"),
    (lambda: N.fit_alpha_beta([1, 2, 3], [3, 2, 1]), "does not grow"),
])
def test_bad_network_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_point_to_point_over_six_hops_of_a_tpu_v5e_4x4_by_hand():
    # How to Scale Your Model, TPU chapter, question 5: bf16[8, 128, 8192] from (0,0) to (3,3) of a v5e 4x4
    # (no wraparound: 3 + 3 hops), half the array out of each of two ports at 4.5e10 B/s, 1 us per hop
    n_bytes = 2 * 8 * 128 * 8192
    assert n_bytes == 16_777_216
    t = N.p2p_time_s(n_bytes, hops=3 + 3, bytes_per_s=2 * 4.5e10, latency_per_hop_s=1e-6)
    assert t == pytest.approx(6e-6 + 186.41e-6, rel=1e-4)          # 192.4 us (the book: ~188 + 6 with 1.7e7 B)
    # cut-through: each extra hop adds its latency only, whatever the size; store-and-forward would
    # have cost 6 x 186 us = 1.1 ms
    for size in (1, 1e6, 1e9):
        extra = N.p2p_time_s(size, 6, 9e10, 1e-6) - N.p2p_time_s(size, 1, 9e10, 1e-6)
        assert extra == pytest.approx(5e-6, rel=1e-9, abs=1e-15)
    assert N.p2p_time_s([0, n_bytes], 1, 9e10).tolist() == pytest.approx([0.0, n_bytes / 9e10])


@pytest.mark.parametrize("kw, match", [({"hops": 0}, "hops must be a whole number"),
                                       ({"hops": 2.5}, "hops must be a whole number"),
                                       ({"n_bytes": -1}, "n_bytes must be >= 0"),
                                       ({"bytes_per_s": 0}, "bytes_per_s must be > 0"),
                                       ({"latency_per_hop_s": -1e-6}, "latency_per_hop_s must be >= 0")])
def test_bad_point_to_point_inputs(kw, match):
    args = {"n_bytes": 1e6, "hops": 2, "bytes_per_s": 9e10, "latency_per_hop_s": 1e-6} | kw
    with pytest.raises(ValueError, match=match):
        N.p2p_time_s(**args)


def test_fit_recovers_alpha_and_beta():
    n = np.logspace(1, 8, 20)
    t = 2e-6 + n / 5e9
    alpha, beta = N.fit_alpha_beta(n, t)
    assert alpha == pytest.approx(2e-6, rel=1e-6) and beta == pytest.approx(5e9, rel=1e-6)


def test_moe_traffic_by_hand():
    # DeepSeek-V3: d=7168, k=8, fp8 dispatch + bf16 combine, EP64: 8*7168*3*63/64
    assert N.moe_all_to_all_bytes_per_token(7168, 8, 64) == pytest.approx(8 * 7168 * 3 * 63 / 64)
    # FLOPs per all-to-all byte: 6 * 2048 / 3 = 4096 for a SwiGLU expert of width 2048
    assert N.expert_flops_per_all_to_all_byte(2048) == pytest.approx(4096)


# ---- pipelines ---------------------------------------------------------------------------

def test_node_deduplicated_dispatch_by_hand():
    """A token's 8 of 256 experts over 4 nodes of 64: another node holds none of them with probability
    prod_{i<8} (192 - i) / (256 - i); enumerated here by counting, not by the library's product."""
    none = math.comb(192, 8) / math.comb(256, 8)
    assert none == pytest.approx(0.0964, abs=5e-4)
    assert N.remote_nodes_reached(256, 8, 4) == pytest.approx(3 * (1 - none), rel=1e-12)
    # a Monte Carlo draw of the same routing agrees (independent of the formula)
    rng = np.random.default_rng(0)
    picks = np.argsort(rng.random((20000, 256)), axis=1)[:, :8] // 64          # the node of each chosen expert
    own = rng.integers(0, 4, size=20000)
    remote = [len(set(row) - {o}) for row, o in zip(picks.tolist(), own)]
    assert np.mean(remote) == pytest.approx(N.remote_nodes_reached(256, 8, 4), rel=0.02)
    # one node: nothing crosses; one expert a token: one other node with probability (N-1)/N
    assert N.remote_nodes_reached(256, 8, 1) == 0.0
    assert N.remote_nodes_reached(64, 1, 4) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="exceeds n_experts"):
        N.remote_nodes_reached(8, 9, 2)


def test_prefill_all_to_all_crosses_the_network_once_per_node():
    """Kimi K2 (384 experts, top-8, hidden 7168) at EP32 on four 8-GPU H200 nodes: a decode step sends one copy per
    off-rank expert (8 x 31/32 copies of 3 bytes a value), a prefill step one per other node reached (2.71)."""
    from llmmath.deployment import Deployment
    d = Deployment("kimi-k2", "h200", 32, tp=1, ep=32, dp=32, weight_dtype="fp8")
    assert d.expert_nodes == 4
    tokens = 32 * 1024
    dec = float(d.collective_bytes_per_step(tokens)["expert-parallel all-to-all"])
    pre = float(d.collective_bytes_per_step(tokens, forwarded=True)["expert-parallel all-to-all"])
    per_gpu_layers = 60 * 1024 * 7168 * 3                    # K2: 61 layers, the first dense
    assert dec == pytest.approx(per_gpu_layers * 8 * 31 / 32, rel=1e-9)
    assert pre == pytest.approx(per_gpu_layers * 2.707, rel=1e-3)
    # inside one node nothing is deduplicated: the flag changes nothing
    one = Deployment("qwen3-30b-a3b", "h100-sxm", 8, tp=1, ep=8, dp=8)
    assert (float(one.collective_bytes_per_step(4096, forwarded=True)["expert-parallel all-to-all"])
            == float(one.collective_bytes_per_step(4096)["expert-parallel all-to-all"]))


def test_bubble_fraction_by_hand():
    assert P.bubble_fraction(4, 4) == pytest.approx(3 / 7)
    assert P.bubble_fraction(1, 10) == 0.0
    with pytest.raises(ValueError, match="stages"):
        P.bubble_fraction(0, 4)


@pytest.mark.parametrize("kind", ["gpipe", "1f1b"])
@pytest.mark.parametrize("p, m", [(2, 2), (4, 8), (3, 5), (8, 8)])
def test_simulated_schedules_match_the_bubble_formula(kind, p, m):
    ev = P.pipeline_schedule(p, m, kind, forward_s=1.0, backward_s=2.0)
    makespan = max(e[4] for e in ev)
    assert makespan == pytest.approx((m + p - 1) * 3.0)  # ideal: m*(tf+tb) plus (p-1) slots of fill and drain
    busy = sum(e[4] - e[3] for e in ev)
    assert 1 - busy / (p * makespan) == pytest.approx(P.bubble_fraction(p, m))
    for s in range(p):  # a stage never runs two things at once
        spans = sorted((e[3], e[4]) for e in ev if e[0] == s)
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(spans, spans[1:]))


def test_1f1b_holds_fewer_activations_than_gpipe():
    def peak_in_flight(ev, stage):
        t = sorted((e[3], +1 if e[2] == "F" else -1) for e in ev if e[0] == stage)
        level = peak = 0
        for _, d in t:
            level += d
            peak = max(peak, level)
        return peak
    g, o = P.pipeline_schedule(4, 8, "gpipe"), P.pipeline_schedule(4, 8, "1f1b")
    assert peak_in_flight(g, 0) == 8 and peak_in_flight(o, 0) == 4


# ---- placements --------------------------------------------------------------------------

def test_placement_errors():
    with pytest.raises(ValueError, match="only 61 layers"):
        P.check_placement("deepseek-v3", pp=62)
    with pytest.raises(ValueError, match="exceeds deepseek-v3's 256 routed experts"):
        P.check_placement("deepseek-v3", ep=512)
    with pytest.raises(ValueError, match="dense"):
        P.check_placement("llama-3.1-70b", ep=8)
    with pytest.raises(ValueError, match="must divide llama-3.1-70b's 64 attention heads"):
        P.check_placement("llama-3.1-70b", tp=3)
    # what engines run is allowed: TP16 past Llama's 8 KV heads (each replicated twice), Mixtral's 8 experts over 3
    # ranks (3, 3, 2), DeepSeek-V3's 256 over 72
    for model, kw in (("llama-3.1-8b", dict(tp=16)), ("mixtral-8x7b", dict(ep=3)), ("deepseek-v3", dict(ep=72))):
        P.check_placement(model, **kw)
    # the same rules through every door: the deployment refuses what parallelism refuses, with the same message
    from llmmath.deployment import Deployment
    for call in (lambda: P.check_placement("llama-3.1-70b", tp=3),
                 lambda: Deployment("llama-3.1-70b", "h100-sxm", 3, tp=3)):
        with pytest.raises(ValueError, match="^tp=3 must divide llama-3.1-70b's 64 attention heads"):
            call()


def test_weights_per_gpu_by_hand_deepseek_ep64_fp8():
    # routed experts: 58 layers x 256 x 3*7168*2048 params; the rest replicated on each GPU
    routed = 58 * 256 * 3 * 7168 * 2048
    rest = 671_026_419_200 - routed
    m = P.memory_per_gpu("deepseek-v3", ep=64, pp=1, weight_dtype="fp8")
    assert m.weight_bytes == pytest.approx(routed / 64 + rest)
    # two stages: the busiest GPU, not the average (13.67 GB). From the config: MLA attention, norms, a dense
    # layer (d_ff 18432), an MoE layer's non-routed part (a shared expert, the router and its bias)
    d, Pe = 7168, 3 * 7168 * 2048
    attn = d * 1536 + 1536 + 1536 * 128 * 192 + d * 576 + 512 + 512 * 128 * 256 + 128 * 128 * d
    dense, moe = attn + 3 * d * 18432 + 2 * d, attn + Pe + d * 256 + 256 + 2 * d
    emb = 129280 * d
    assert 3 * dense + 58 * moe + 2 * emb + d + routed == 671_026_419_200
    first = 3 * dense + 28 * moe + emb + 28 * 256 * Pe / 64       # layers 0-30 (3 dense) and the embedding
    last = 30 * moe + emb + d + 30 * 256 * Pe / 64                # layers 31-60, the final norm and the head
    m2 = P.memory_per_gpu("deepseek-v3", ep=64, pp=2, weight_dtype="fp8")
    assert m2.weight_bytes == pytest.approx(max(first, last), rel=1e-12) and first > last
    assert first / ((routed / 64 + rest) / 2) == pytest.approx(1.0341, abs=1e-4)   # the average was 3.4% low


def test_the_busiest_pipeline_stage_must_fit_not_the_average():
    # Llama-2-70B (d 8192, 64 heads of 128, 8 KV heads, d_ff 28672, 80 layers, vocab 32000, untied) at TP2 PP4 in
    # bf16: 20 layers a stage; the last also holds the head and the final norm, the first the embedding
    layer = 2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192
    first, last = 20 * layer + 32000 * 8192, 20 * layer + 32000 * 8192 + 8192
    hand = last * 2 / 2                                            # bf16 bytes over tp = 2
    assert hand == 17_375_240_192
    assert P.memory_per_gpu("llama-2-70b", tp=2, pp=4).weight_bytes == hand     # averaged: 17,244,162,048
    from llmmath import models, planner
    assert planner.plan("llama-2-70b", "h100-sxm", 8, tp=2, pp=4).weight_bytes_per_chip == hand
    moe_layers, other = models.get("llama-2-70b").stage_params(4)
    assert other.tolist() == [first, 20 * layer, 20 * layer, last] and moe_layers.tolist() == [0] * 4
    # Llama-3.1-405B in 16 stages: 126 layers = 14 x 8 + 2 x 7; the first stage's 8 layers and embedding
    m = models.get("llama-3.1-405b")
    layer = 2 * 16384 * 16384 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384
    assert P.memory_per_gpu(m, tp=8, pp=16).weight_bytes == pytest.approx((8 * layer + 128256 * 16384) * 2 / 8,
                                                                          rel=1e-15)
    # a tied table needs a copy on the last stage once there is more than one (Qwen3-4B ties its embeddings)
    q = models.get("qwen3-4b")
    assert q.tied_embeddings
    assert q.stage_params(1)[1][0] == q.total_params
    assert q.stage_params(2)[1].sum() == q.total_params + q.vocab * q.d_model


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 61]), st.integers(1, 256), st.integers(0, 200_000))
def test_kv_per_gpu_does_not_fall_with_pipeline_depth(pp, b, L):
    base = P.memory_per_gpu("deepseek-v3", ep=32, pp=1, batch=b, context=L).kv_bytes
    # by hand: b * L * 61 * (512 + 64) * 2 / 32 for one stage; pp micro-batches of b on the busiest stage's
    # ceil(61 / pp) layers otherwise (16 of 61 at pp = 4: 4.9% above the average)
    assert base == pytest.approx(b * L * 61 * 576 * 2 / 32)
    busiest = P.memory_per_gpu("deepseek-v3", ep=32, pp=pp, batch=b, context=L).kv_bytes
    assert busiest == pytest.approx(b * L * pp * -(-61 // pp) * 576 * 2 / 32)


def test_boundary_ratio_by_hand():
    # k=8, d=7168, ep=64, 1 layer: 8*7168*3*(63/64)/900e9  over  7168*2/100e9
    want = (8 * 7168 * 3 * 63 / 64 / 900e9) / (7168 * 2 / 100e9)
    assert P.boundary_traffic_ratio("deepseek-v3", 1, 64, 900e9, 100e9) == pytest.approx(want)
    with pytest.raises(ValueError, match="dense"):
        P.boundary_traffic_ratio("llama-3.1-70b", 1, 8, 900e9, 100e9)


def test_pipelining_never_saves_and_the_slowest_stage_sets_the_pace():
    from llmmath import serving
    one = serving.decode_step("deepseek-v3", "gb200", 2048, 4096, n_chips=64, weight_dtype="fp8", check_capacity=False)
    assert [len(r) for r in P.stage_layers("deepseek-v3", 4)] == [16, 15, 15, 15]   # 61 = 4 x 15 + 1
    assert [len(r) for r in P.stage_layers("deepseek-v3", 8)] == [8] * 5 + [7] * 3
    single = P.pipelined_decode("deepseek-v3", "gb200", 64, 1, 2048, 4096, weight_dtype="fp8")
    # each GPU reads its own copy of the non-expert weights: slower than the pooled step, never faster
    assert single.token_latency_s > 1.3 * one.time_s
    for stages in (2, 4, 8):
        d = P.pipelined_decode("deepseek-v3", "gb200", 64, stages, 2048, 4096, weight_dtype="fp8")
        # memory-bound stages: their floors add up to the whole step (bytes move, they do not vanish)
        assert d.stages_s.sum() == pytest.approx(single.token_latency_s, rel=1e-3)
        assert d.token_latency_s == pytest.approx(stages * d.stages_s.max())
        assert d.chip_s_per_token >= single.chip_s_per_token * (1 - 1e-12)
    # Hand, 8 stages: the last holds 7 MoE layers + the LM head; the first 3 dense + 5 MoE layers, and with every GPU
    # holding its own copy of a dense layer (583M parameters) that is heavier than an MoE layer's share (233M + 256
    # experts / 64 x 44M = 409M): the first stage is the slowest, not the lightest as pooled bytes would say.
    d8 = P.stage_floors_s("deepseek-v3", "gb200", 64, 8, 2048, 4096, weight_dtype="fp8")
    assert d8[0] > d8[1] and d8[-1] > d8[-2] and d8[1] == pytest.approx(d8[4])
    assert np.argmax(d8) == 0
    hop = P.pipelined_decode("deepseek-v3", "gb200", 64, 4, 2048, 4096, hop_latency_s=1e-3, weight_dtype="fp8")
    assert hop.token_latency_s == pytest.approx(hop.stages_s.sum() + 4e-3)
    # one stage sends nothing on: no hop, whatever the link (chapter 6 printed "+0.5% vs one stage" for P = 1)
    alone = P.pipelined_decode("deepseek-v3", "gb200", 64, 1, 2048, 4096, hop_latency_s=1e-3, weight_dtype="fp8")
    assert alone.token_latency_s == alone.stages_s[0] == single.token_latency_s

def test_expert_parallel_explorer_uses_each_systems_own_bandwidth_and_caps_gpus_at_its_domain():
    import matplotlib.figure

    from llmmath import hardware, models
    from llmmath.course.explorers import ch05 as widgets_ch05
    from llmmath import explorers
    m = models.get("deepseek-v3")
    B, L, ep = 4096.0, 4096, 64
    # hand, per GPU of the rack's layout (DP attention, EP64): its own copy of every weight but the routed experts and
    # the embedding table (B / 64 rows of it), 4 of each MoE layer's 256 experts, and its B / 64 sequences' KV
    routed = 58 * 256 * 3 * 7168 * 2048
    need = ((m.total_params - routed - m.embedding_params + B / ep * m.d_model) + routed / ep) * 1.0 \
        + B / ep * L * 61 * 576 * 2
    for key in ("vera-rubin-nvl72", "rubin-ultra-nvl576", "helios-mi450"):
        sy = hardware.system(key)
        t, how = widgets_ch05._layer_floor_s(m, sy, B, L, ep)
        # priced on the roofline of the GPU its announced figures make (System.package_chip): at 64 sequences a
        # GPU the step is memory-bound, so the floor is the bytes over the package's own HBM bandwidth
        assert float(t) == pytest.approx(need / sy.hbm_bytes_per_s_per_package / 61, rel=1e-6)
        assert "announced GPU (not measured)" in how
    # GB300 NVL72 names its chip now: its roofline, at least the memory floor over its 8 TB/s
    t, how = widgets_ch05._layer_floor_s(m, hardware.system("gb300-nvl72"), B, L, ep)
    assert how == "gb300 roofline" and float(t) >= need / 8e12 / 61 * (1 - 1e-9)
    fig = matplotlib.figure.Figure()
    fig.subplots(1, 1)
    _art, text = widgets_ch05._draw_expert_parallel(fig, "deepseek-v3", "hgx-h100", 64, 2, 4096, 12)
    assert "one of 8 GPUs" in text and "capped" in text
    e = explorers.expert_parallel_explorer(system="gb200-nvl72")
    e.controls["system"].value = "hgx-h100"
    assert list(e.controls["ep"].options) == [8] and e.controls["ep"].value == 8


# ---- chapters 5-6 explorers' library functions (issue 13) ----------------------------------

def test_domain_growth_by_hand_nvl72_over_hgx_h100():
    g = P.domain_growth("gb200-nvl72", "hgx-h100")
    # NVIDIA datasheets: 72 packages / 144 dies vs 8 / 8; 8 TB/s vs 3.35 TB/s per GPU
    assert (g.packages, g.dies, g.marketing_count) == (9.0, 18.0, 9.0)
    assert g.per_gpu_hbm_bytes_per_s == pytest.approx(8.0 / 3.35)
    assert g.domain_hbm_bytes_per_s == pytest.approx(72 * 8.0 / (8 * 3.35))
    assert g.domain_hbm_bytes == pytest.approx(72 * 186 / (8 * 80))
    r = P.domain_growth("rubin-ultra-nvl576", "gb200-nvl72")
    assert (r.packages, r.dies, r.marketing_count) == (2.0, 4.0, 8.0)   # claim 18's three readings
    with pytest.raises(KeyError):
        P.domain_growth("nvl-nonexistent")


def test_domain_parameter_limits_by_hand_and_refusals():
    lim = P.domain_parameter_limits("gb200-nvl72", 0.02, 2048, "fp8")
    assert lim.read_total_params == pytest.approx(0.02 * 72 * 8e12)           # 11.5 T params at 1 byte each
    assert lim.capacity_total_params == pytest.approx(72 * 186e9)
    assert lim.compute_active_params == pytest.approx(0.02 * 72 * 2.5e15 / (2 * 2048))
    bf = P.domain_parameter_limits("gb200-nvl72", [0.01, 0.02], 2048, "bf16", kv_reserved_bytes=1e12)
    np.testing.assert_allclose(bf.read_total_params, [0.01 * 576e12 / 2, 0.02 * 576e12 / 2])
    assert bf.capacity_total_params == pytest.approx((72 * 186e9 - 1e12) / 2)
    with pytest.raises(ValueError, match="publishes no"):
        P.domain_parameter_limits("vr200-nvl144", 0.02, 2048)
    with pytest.raises(ValueError, match="whole HBM"):
        P.domain_parameter_limits("hgx-h100", 0.02, 2048, kv_reserved_bytes=1e12)
    with pytest.raises(ValueError):
        P.domain_parameter_limits("hgx-h100", 0.0, 2048)


def test_domain_hbm_fill_flags_models_that_do_not_fit():
    fill = P.domain_hbm_fill(["deepseek-v3", "llama-3.1-70b"], "hgx-h100", 0, 0, weight_dtype="fp8")
    assert fill[0] > 1 > fill[1]                     # 671 GB of fp8 weights > 640 GB; 70.6 GB < 640 GB
    assert fill[1] == pytest.approx(70.553706496e9 / 640e9, rel=1e-6)
    more = P.domain_hbm_fill(["llama-3.1-70b"], "hgx-h100", 64, 8192, weight_dtype="fp8")
    # GQA 8 KV heads x 128 x 80 layers x 2 (K, V) x 2 bytes = 327,680 bytes per token
    assert more[0] == pytest.approx((70.553706496e9 + 64 * 8192 * 327680) / 640e9, rel=1e-6)
    with pytest.raises(ValueError):
        P.domain_hbm_fill(["deepseek-v3"], "hgx-h100", -1, 0)


def test_memory_over_stages_weights_fall_kv_stays_and_fit_is_flagged():
    s = P.memory_over_stages("deepseek-v3", [1, 2, 4, 8], 186e9, ep=64, batch=64, context=131072,
                             weight_dtype="fp8")
    # the busiest stage's weights fall with the stages, but never below an even share (the embedding, the head
    # and 61 layers that do not divide evenly sit somewhere): 4.72 GB at 8 stages, where 1/8 would be 3.42
    assert np.all(np.diff(s.weight_bytes) < 0)
    assert np.all(s.weight_bytes * s.stages >= s.weight_bytes[0] * (1 - 1e-12))
    assert s.weight_bytes[-1] * 8 / s.weight_bytes[0] == pytest.approx(1.38, abs=0.01)
    # the KV does not fall: P micro-batches of 64 on the busiest stage's ceil(61 / P) layers (61, 31, 16, 8)
    busiest_layers = np.array([61, 31, 16, 8])
    np.testing.assert_allclose(s.kv_bytes, 64 * 131072 * s.stages * busiest_layers * 576 * 2 / 64)
    assert s.fits.all() and list(s.n_gpus) == [64, 128, 256, 512] and s.gpus_per_stage == 64
    tight = P.memory_over_stages("deepseek-v3", [1, 2, 4], 80e9, ep=8, weight_dtype="fp8")
    assert list(tight.fits) == [False, True, True]   # 671/8 = 84 GB > 80 GB; /2 fits
    with pytest.raises(ValueError, match="dense"):
        P.memory_over_stages("llama-3.1-405b", [1], 80e9, ep=8)


def test_boundary_ratio_experts_override_and_pipelined_imbalance():
    base = P.boundary_traffic_ratio("deepseek-v3", 1, 64, 900e9, 50e9)
    assert P.boundary_traffic_ratio("deepseek-v3", 1, 64, 900e9, 50e9, experts_per_token=16) == pytest.approx(2 * base)
    assert P.boundary_traffic_ratio("deepseek-v3", 1, 64, 900e9, 50e9, experts_per_token=8) == pytest.approx(base)
    with pytest.raises(ValueError, match="routed experts"):
        P.boundary_traffic_ratio("mixtral-8x7b", 1, 8, 900e9, 50e9, experts_per_token=9)
    one = P.pipelined_decode("deepseek-v3", "gb200", 64, 1, 2048, 4096, weight_dtype="fp8")
    assert one.imbalance == pytest.approx(1.0) and one.sum_of_stages_s == pytest.approx(one.stage_s)
    eight = P.pipelined_decode("deepseek-v3", "gb200", 64, 8, 2048, 4096, weight_dtype="fp8")
    assert eight.imbalance > 1.0
    assert eight.chip_s_per_token / one.chip_s_per_token == pytest.approx(eight.imbalance, rel=1e-9)


def test_moe_layer_all_to_all_pays_one_latency_per_collective_at_deepeps_share():
    # By hand, DeepSeek-V3 (d 7,168, top-8; dispatch fp8 + combine bf16 = 3 bytes a value) on GB200 NVL72
    # (NVLink 900 GB/s a direction, CX-7 50 GB/s): 64 tokens a GPU at EP64 send 64 x 8 x 7,168 x 3 x 63/64 bytes.
    sent = 64 * 8 * 7168 * 3 * 63 / 64
    wire = P.moe_layer_all_to_all_s("deepseek-v3", "gb200-nvl72", 64, 4096, latency_s=0, achieved_fraction=1)
    assert float(wire) == pytest.approx(sent / 900e9, rel=1e-9)
    # two collectives (dispatch, combine), one message latency each, not one per peer (64 of them)
    slow = P.moe_layer_all_to_all_s("deepseek-v3", "gb200-nvl72", 64, 4096, latency_s=5e-6, achieved_fraction=0.5)
    assert float(slow) == pytest.approx(2 * 5e-6 + sent / (0.5 * 900e9), rel=1e-9)
    # the default: NVLink's 3.33 us in one rack, InfiniBand's 3.7 us across racks, 0.82 of each link
    d1 = P.moe_layer_all_to_all_s("deepseek-v3", "gb200-nvl72", 64, 4096)
    assert float(d1) == pytest.approx(2 * 3.33e-6 + sent / (0.82 * 900e9), rel=1e-9)
    sent2 = 64 * 8 * 7168 * 3 * 127 / 128
    d2 = P.moe_layer_all_to_all_s("deepseek-v3", "gb200-nvl72", 64, 4096, racks=2)
    assert float(d2) == pytest.approx(2 * 3.7e-6 + 0.5 * sent2 / (0.82 * 50e9), rel=1e-9)
    # no tokens, no collective
    assert float(P.moe_layer_all_to_all_s("deepseek-v3", "gb200-nvl72", 64, 0)) == 0.0
    with pytest.raises(ValueError, match="achieved_fraction"):
        P.moe_layer_all_to_all_s("deepseek-v3", "gb200-nvl72", 64, 4096, achieved_fraction=0)
