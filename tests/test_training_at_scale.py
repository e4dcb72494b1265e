"""Chapter 10's library: model state, activations, step FLOPs, pipeline schedules, training layouts.

Every check compares with a published number or a hand derivation written here, never with
the library fed the same numbers. The comment on each says which realistic slip it catches.
"""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import hardware, memory, models, parallelism, training, training_layout as TL

GB = 1e9


# ---- model state ---------------------------------------------------------------------------------------------

def test_zero_paper_figure_1_bytes_for_7_5b_params_on_64_gpus():
    # Rajbhandari et al. 2020, Figure 1: psi = 7.5B, N_d = 64, K = 12: baseline 120 GB, P_os 31.4 GB,
    # P_os+g 16.6 GB, P_os+g+p 1.9 GB. Catches: one Adam moment (K = 8), no master copy, the wrong stage sharding.
    kw = dict(grad_dtype="bf16", dp=64)
    published = {0: 120, 1: 31.4, 2: 16.6, 3: 1.9}
    for stage, gb in published.items():
        got = memory.model_state_bytes_per_gpu(7.5e9, zero_stage=stage, **kw) / GB
        assert got == pytest.approx(gb, abs=0.05 if stage else 1e-9), stage


@pytest.mark.parametrize("d", [1, 2, 8, 64, 1024])
def test_zero_paper_per_parameter_formulas(d):
    # 2 + 2 + 12 = 16; ZeRO-1 4 + 12/N, ZeRO-2 2 + 14/N, ZeRO-3 16/N (the paper's section 5).
    got = [memory.model_state_bytes_per_gpu(1.0, dp=d, zero_stage=z, grad_dtype="bf16") for z in range(4)]
    assert got == pytest.approx([16, 4 + 12 / d, 2 + 14 / d, 16 / d])


@pytest.mark.parametrize("d", [2, 4, 8, 64])
def test_megatron_18_bytes_and_distributed_optimizer(d):
    # Megatron-LM distrib_optimizer.md: bf16 params + fp32 grads: 18 vs 6 + 12/d; fp32 params + grads: 16 vs 8 + 8/d.
    # Catches: fp16 gradients where Megatron keeps fp32 (16 for 18), sharding the gradient buffer (2 + 16/d).
    assert memory.model_state_bytes_per_gpu(1.0) == 18
    assert memory.model_state_bytes_per_gpu(1.0, dp=d, zero_stage=1) == pytest.approx(6 + 12 / d)
    fp32 = dict(weight_dtype="fp32", grad_dtype="fp32", master_weights=False)
    assert memory.model_state_bytes_per_gpu(1.0, **fp32) == 16
    assert memory.model_state_bytes_per_gpu(1.0, dp=d, zero_stage=1, **fp32) == pytest.approx(8 + 8 / d)
    # ZeRO-3 with fp32 gradients: 18 / N
    assert memory.model_state_bytes_per_gpu(1.0, dp=d, zero_stage=3) == pytest.approx(18 / d)


def test_deepspeeds_zero_estimators_by_hand():
    # DeepSpeed's estimate_zero3_model_states_mem_needs without offload: 4 x the largest layer + 18 P / N.
    # Llama-2-70B (68,976,648,192 parameters; its largest layer is the 32,000 x 8,192 embedding) on 8 GPUs:
    P, largest, n = 68_976_648_192, 32_000 * 8_192, 8
    GiB = 2**30
    assert memory.model_state_bytes_per_gpu(P, dp=n, zero_stage=3) / GiB == pytest.approx(144.54, abs=0.005)
    z3 = memory.model_state_bytes_per_gpu(P, dp=n, zero_stage=3, gathered_params=largest)
    assert z3 == pytest.approx(4 * largest + 18 * P / n, rel=1e-15) and z3 / GiB == pytest.approx(145.52, abs=0.005)
    parts = memory.model_state_parts(P, dp=n, zero_stage=3, gathered_params=largest)
    assert parts["gathered"] == 4 * largest                     # bf16: the layer's weights and gradient, 2 + 2
    assert memory.model_state_parts(P, dp=n, zero_stage=3, weight_dtype="fp8", gathered_params=largest,
                                    master_weights=True)["gathered"] == 2 * largest
    # estimate_zero2_model_states_mem_needs without offload: 2 P + 18 P / N (2 + 4 bytes of gradients,
    # 4 of fp32 weights, 8 of Adam, all sharded)
    z2 = memory.model_state_bytes_per_gpu(P, dp=n, zero_stage=2, grad_dtype="bf16", fp32_grad_copy=True)
    assert z2 == pytest.approx(2 * P + 18 * P / n, rel=1e-15)
    assert "gathered" not in memory.model_state_parts(P, dp=n, zero_stage=2)
    with pytest.raises(ValueError, match="gathered_params applies to ZeRO-3"):
        memory.model_state_bytes_per_gpu(P, dp=n, zero_stage=2, gathered_params=largest)
    with pytest.raises(ValueError, match="gathered_params must be >= 0"):
        memory.model_state_bytes_per_gpu(P, dp=n, zero_stage=3, gathered_params=-1)
    with pytest.raises(TypeError, match="fp32_grad_copy"):
        memory.model_state_bytes_per_gpu(P, fp32_grad_copy=1)


def test_model_state_parts_broadcast_and_refuse_nonsense():
    parts = memory.model_state_parts(np.array([1e9, 2e9]), dp=np.array([[1], [4]]), zero_stage=2)
    assert parts["gradients"].shape == (2, 2)
    assert parts["gradients"][1, 0] == pytest.approx(1e9 * 4 / 4) and parts["weights"][1, 1] == 4e9
    assert memory.model_state_bytes_per_gpu(1.0, optimizer="sgd") == 2 + 4 + 4
    with pytest.raises(ValueError, match="zero_stage must be 0, 1, 2 or 3"):
        memory.model_state_bytes_per_gpu(1.0, zero_stage=4)
    with pytest.raises(ValueError, match="own master copy"):
        memory.model_state_bytes_per_gpu(1.0, weight_dtype="fp32")
    with pytest.raises(ValueError, match="optimizer must be one of"):
        memory.model_state_bytes_per_gpu(1.0, optimizer="lion")
    with pytest.raises(ValueError, match="dp must be a whole number"):
        memory.model_state_bytes_per_gpu(1.0, dp=0)
    with pytest.raises(TypeError, match="master_weights must be True or False"):
        memory.model_state_bytes_per_gpu(1.0, master_weights=1)


# ---- activations -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("s,b,h,a,t", [(2048, 1, 12288, 96, 8), (2048, 4, 20480, 128, 8), (4096, 2, 4096, 32, 4)])
def test_korthikanti_table_2_rows(s, b, h, a, t):
    # Korthikanti et al. 2022, Table 2 (activation memory per layer, bytes), written out independently.
    f = memory.activation_bytes_per_layer
    sbh = s * b * h
    assert f(s, b, h, a) == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert f(s, b, h, a, t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert f(s, b, h, a, t, True) == pytest.approx(sbh / t * (34 + 5 * a * s / h))
    assert f(s, b, h, a, t, True, "selective") == pytest.approx(sbh * 34 / t)
    assert f(s, b, h, a, t, False, "full") == pytest.approx(2 * sbh)
    assert f(s, b, h, a, t, True, "full") == pytest.approx(2 * sbh / t)


def test_korthikanti_gpt3_selective_saves_what_they_report():
    # Section 5: for GPT-3 (a = 96, s = 2048, h = 12288) 5as/h = 80 against 34: the scores are 70% of a layer,
    # which is why selective recomputation removes most of the memory. Catches a wrong score term (e.g. 5as/(h t) twice).
    full = memory.activation_bytes_per_layer(2048, 1, 12288, 96, 8, True)
    sel = memory.activation_bytes_per_layer(2048, 1, 12288, 96, 8, True, "selective")
    assert 1 - sel / full == pytest.approx(80 / 114)


def test_gqa_swiglu_no_dropout_by_hand_for_llama_405b():
    # Hand count per token, bytes (h = 16384, q = 128 x 128 = h, kv = 8 x 128 = h/16, d_ff = 53248 = 3.25 h):
    # norms 4h; attention input 2h; Q 2h, K 2h/16, V 2h/16, projection input 2h; MLP input 2h;
    # gate + up 4 d_ff, their product 2 d_ff; no dropout masks. = 4 + 2 + 2 + 0.25 + 2 + 2 + 6 x 3.25 = 31.75 h.
    h, s = 16384, 8192
    got = memory.activation_bytes_per_layer(s, 1, h, 128, n_kv_heads=8, head_dim=128, d_ff=53248, gated=True,
                                            dropout=False, recompute="selective")
    assert got == pytest.approx(31.75 * s * h)
    # with TP 8 and SP everything divides by 8; without SP the 4h + 2h + 2h outside the TP regions stay whole
    tsp = memory.activation_bytes_per_layer(s, 1, h, 128, 8, True, "selective", n_kv_heads=8, head_dim=128,
                                            d_ff=53248, gated=True, dropout=False)
    t_only = memory.activation_bytes_per_layer(s, 1, h, 128, 8, False, "selective", n_kv_heads=8, head_dim=128,
                                               d_ff=53248, gated=True, dropout=False)
    assert tsp == pytest.approx(31.75 / 8 * s * h)
    assert t_only == pytest.approx((8 + 23.75 / 8) * s * h)
    with pytest.raises(ValueError, match="must divide n_heads"):
        memory.activation_bytes_per_layer(s, 1, h, 128, n_kv_heads=7)


def test_microbatches_in_flight_match_a_simulated_schedule():
    # Count, in parallelism.pipeline_schedule's simulated events, the micro-batches whose forward ran and whose
    # backward did not, at the worst moment, on each stage: 1F1B holds p - s, GPipe all m.
    p, m = 4, 8
    for kind in ("1f1b", "gpipe"):
        ev = parallelism.pipeline_schedule(p, m, kind)
        for s in range(p):
            mine = sorted((e for e in ev if e[0] == s), key=lambda e: e[3])
            held = peak = 0
            for e in mine:
                held += 1 if e[2] == "F" else -1
                peak = max(peak, held)
            got = memory.pipeline_activation_bytes(1.0, 1, p, m, schedule=kind, stage=s)
            assert got == peak, (kind, s)
    # interleaved first stage: 1F1B's p times 1 + (p-1)/(p v) (Korthikanti et al. 2022, section 4.2.3)
    assert memory.pipeline_activation_bytes(1.0, 1, 8, 64, "interleaved", chunks=4) == pytest.approx(8 + 7 / 4)
    with pytest.raises(ValueError, match="only to schedule='interleaved'"):
        memory.pipeline_activation_bytes(1.0, 1, 8, 64, "1f1b", chunks=2)
    with pytest.raises(ValueError, match="stage must be in"):
        memory.pipeline_activation_bytes(1.0, 1, 8, 64, stage=8)


# ---- FLOPs of a step -------------------------------------------------------------------------------------------

def test_korthikanti_model_and_hardware_flops_for_gpt3():
    # Korthikanti et al. 2022, section 6: model FLOPs per iteration 72 B s l h^2 (1 + s/(6h) + V/(12 l h));
    # with full recomputation 96 B s l h^2 (1 + s/(6h) + V/(16 l h)); the LM head (V h) is not recomputed and
    # their attention counts the full s x s square. Catches: causal halving where they do not halve, the 4x of
    # full recomputation applied to the head, recompute added without the attention term.
    m = models.get("gpt-3-175b")
    B, s, l, h, V = 1536, 2048, 96, 12288, 50257
    layers = 12 * l * h * h
    head = 6.0 * B * s * V * h
    model_flops = training.train_flops(layers, B * s, s, m, causal=False) + head
    full = training.train_flops(layers, B * s, s, m, causal=False, recompute="full") + head
    assert model_flops == pytest.approx(72 * B * s * l * h**2 * (1 + s / (6 * h) + V / (12 * l * h)), rel=1e-12)
    assert full == pytest.approx(96 * B * s * l * h**2 * (1 + s / (6 * h) + V / (16 * l * h)), rel=1e-12)
    # selective: the attention core once more, 4 B s^2 h per layer, i.e. 72 B s l h^2 (1 + 2s/(9h) + ...)
    sel = training.train_flops(layers, B * s, s, m, causal=False, recompute="selective") + head
    assert sel == pytest.approx(72 * B * s * l * h**2 * (1 + 2 * s / (9 * h) + V / (12 * l * h)), rel=1e-12)


def test_causal_attention_counts_half_the_square_by_hand():
    # Llama 3.1 8B, 8192-token sequences: forward q.k and p.v cost 4 x 32 heads x 128 x (positions seen) per layer,
    # 32 layers; causal sees 4096 on average. Catches the "MFU above 100%" slip of counting causal attention as full.
    per_token_causal = 3 * 4 * 32 * 128 * 4096 * 32
    got = training.train_flops(1.0, 1.0, 8192, "llama-3.1-8b") - 6.0
    assert got == pytest.approx(per_token_causal)
    assert training.train_flops(1.0, 1.0, 8192, "llama-3.1-8b", causal=False) - 6.0 == pytest.approx(2 * per_token_causal)
    with pytest.raises(ValueError, match="recompute must be one of"):
        training.train_flops(1.0, 1.0, recompute="some")
    with pytest.raises(TypeError, match="causal must be True or False"):
        training.train_flops(1.0, 1.0, causal="yes")


def test_mla_training_attention_uses_the_non_absorbed_form():
    # DeepSeek-V3 trains with up-projected keys and values: 2 x 128 heads x (128 + 64 + 128) per position per layer,
    # 61 layers (not the decode-time absorbed form over the 512-wide latent).
    got = training.train_flops(1.0, 1.0, 4096, "deepseek-v3") - 6.0
    assert got == pytest.approx(3 * 2 * 128 * 320 * 2048 * 61)


def test_llama3_table_4_mfu_is_tflops_over_the_dense_bf16_peak():
    # Llama 3 paper, Table 4: 430 / 400 / 380 TFLOP/s per GPU at BF16 MFU 43 / 41 / 38 %. Over the catalog's dense
    # 989.5 TFLOP/s these agree within a point; the datasheet's "with sparsity" 1,979 would give ~20%.
    peak = hardware.get("h100-sxm").flops_per_s("bf16")
    for row in TL.LLAMA3_405B_LAYOUTS:
        assert row["tflops_per_gpu"] * 1e12 / peak == pytest.approx(row["mfu"], abs=0.01)


def test_deepseek_v3_mfu_by_hand():
    # 6 x 37B x 14.8T over 2.788M H800-hours (report Table 1, all stages) at the dense FP8 peak 1,979 TFLOP/s:
    # 3.2856e24 / (2.788e6 x 3600 x 1.979e15) = 16.5%; at the BF16 peak 989.5: 33.1%.
    hand_fp8 = 6 * 37e9 * 14.8e12 / (2.788e6 * 3600 * 1979e12)
    assert hand_fp8 == pytest.approx(0.1654, abs=5e-4)
    n_act = models.get("deepseek-v3").active_params
    got = training.achieved_mfu(6 * n_act * 14.8e12, 2.788e6, hardware.get("h100-sxm").flops_per_s("fp8"))
    assert got == pytest.approx(hand_fp8, rel=0.02)   # the catalog's 37.55B active vs the rounded 37B
    assert training.mfu(1e15, 1.0, 2, 1e15) == 0.5


# ---- pipeline schedules ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("p,m", [(2, 4), (4, 8), (8, 3), (5, 20)])
def test_bubble_of_gpipe_and_1f1b_matches_the_simulation(p, m):
    for kind in ("gpipe", "1f1b"):
        ev = parallelism.pipeline_schedule(p, m, kind, forward_s=1.0, backward_s=2.0)
        span = max(e[4] for e in ev)
        idle = 1 - sum(e[4] - e[3] for e in ev) / (p * span)
        assert parallelism.pipeline_bubble_fraction(p, m, kind) == pytest.approx(idle)


def test_interleaved_and_zero_bubble_against_their_papers():
    # Narayanan et al. 2021: interleaving v chunks divides the bubble time by v: (1/v)(p-1)/m of the ideal time.
    p, m, v = 8, 16, 4
    f = parallelism.pipeline_bubble_fraction(p, m, "interleaved", chunks=v)
    assert f / (1 - f) == pytest.approx((p - 1) / (v * m))
    # Qi et al. 2024: ZB-H1's bubble is (p-1)(T_F + T_B - T_W) against 1F1B's (p-1)(T_F + T_B + T_W): a third when equal.
    zb = parallelism.pipeline_bubble_fraction(p, m, "zero-bubble")
    one = parallelism.pipeline_bubble_fraction(p, m, "1f1b")
    assert (zb / (1 - zb)) / (one / (1 - one)) == pytest.approx(1 / 3)
    assert parallelism.pipeline_bubble_fraction(4, 8, "interleaved", chunks=2) == pytest.approx(3 / 19)
    with pytest.raises(ValueError, match="schedule must be one of"):
        parallelism.pipeline_bubble_fraction(4, 8, "zb-h2")
    with pytest.raises(ValueError, match="T_W <= T_F \\+ T_B"):
        parallelism.pipeline_bubble_fraction(4, 8, "zero-bubble", backward_weight_s=3.0)


def test_zbv_timeline_by_hand_for_two_gpus_and_two_microbatches():
    """ZB-V with p = 2, m = 2 and T_F = T_B = T_W = 1 (a chunk's phase 0.5), drawn by hand from the paper's rule
    (GPU 0 holds chunks 0 and 3, GPU 1 chunks 1 and 2; PyTorch's order). GPU 0: F(0,0) 0-0.5, F(0,1) 0.5-1; then
    it waits for F(2,0), which GPU 1 ends at 1.5 (F(1,0) 0.5-1, F(2,0) 1-1.5); F(3,0) 1.5-2, B(3,0) 2-2.5, W(3,0)
    2.5-3, F(3,1) 3-3.5 (F(2,1) ended at 2.5), B(3,1) 3.5-4, W(3,1) 4-4.5; B(0,0) waits for GPU 1's B(1,0)
    (3.5-4) and runs 4.5-5, W(0,0) 5-5.5, B(0,1) waits for B(1,1), which GPU 1 runs 5.5-6 after B(2,1) 4.5-5 and
    W(2,1) 5-5.5; B(0,1) 6-6.5, W(0,1) 6.5-7: the step ends at 7 against 6 units of work each."""
    out = parallelism.zbv_schedule(2, 2)
    at = {(e[1], e[2], e[3]): (e[4], e[5]) for e in out["events"]}
    hand = {(0, 0, "F"): (0, 0.5), (2, 0, "F"): (1, 1.5), (3, 0, "F"): (1.5, 2), (3, 1, "F"): (3, 3.5),
            (1, 0, "B"): (3.5, 4), (0, 0, "B"): (4.5, 5), (2, 1, "B"): (4.5, 5), (1, 1, "B"): (5.5, 6),
            (0, 1, "W"): (6.5, 7)}
    for op, span in hand.items():
        assert at[op] == pytest.approx(span), op
    assert out["step_s"] == pytest.approx(7.0)
    assert out["bubble_fraction"] == pytest.approx(1 / 7)
    # each GPU runs F, B and W of its own two chunks, every micro-batch, once
    for g, order in enumerate(parallelism.zbv_orders(3, 5)):
        assert sorted(order) == sorted((ph, c, i) for ph in "FBW" for c in (g, 5 - g) for i in range(5))
    # and in PyTorch's order, written out by hand for GPU 1 of 3 (chunks 1 and 4) and 5 micro-batches: 3 warm-up
    # forwards of chunk 1; one pair (chunk 4, chunk 1); two triples of chunk 4; the steady loop (F, B, W of chunk 1,
    # then of chunk 4), its last turn without a forward of chunk 1; one pair of input gradients; two (B, W) of
    # chunk 1; the weight gradients left, chunk 4's first
    hand = ("F1.0 F1.1 F1.2 F4.0 F1.3 F4.1 B4.0 W4.0 F4.2 B4.1 W4.1 F1.4 B1.0 W1.0 F4.3 B4.2 W4.2 B1.1 W1.1 F4.4 "
            "B4.3 W4.3 B1.2 B4.4 B1.3 W1.2 B1.4 W1.3 W4.4 W1.4").split()
    assert [f"{ph}{c}.{i}" for ph, c, i in parallelism.zbv_orders(3, 5)[1]] == hand


@pytest.mark.parametrize("p, m", [(4, 7), (4, 8), (8, 16), (8, 64), (16, 31)])
def test_zbv_with_equal_phases_idles_only_while_the_first_forward_comes_down(p, m):
    """With T_F = T_B = T_W = 1 and m >= 2p - 1 (the paper's "zero bubble" case): the last GPU cannot start before
    the first micro-batch's forward has passed p - 1 chunks of half a stage, (p - 1) / 2, and it then has 3m of
    work; ZB-V keeps it busy from there, so the step is 3m + (p - 1)/2. Every GPU peaks at p micro-batches in flight
    (the authors' table: ZB-V's activation memory is 1F1B's), as memory.pipeline_activation_bytes says. A
    schedule with the V placed the wrong way, or the backward not split, would idle longer."""
    out = parallelism.zbv_schedule(p, m)
    assert out["step_s"] == pytest.approx(3 * m + (p - 1) / 2)
    assert out["peak_in_flight"] == [p] * p
    assert list(np.atleast_1d(memory.pipeline_activation_bytes(1.0, 1, p, m, "zb-v", stage=np.arange(p)))) == [p] * p
    zbv = parallelism.pipeline_bubble_fraction(p, m, "zb-v")
    assert zbv == pytest.approx(((p - 1) / 2) / (3 * m + (p - 1) / 2))
    assert zbv < parallelism.pipeline_bubble_fraction(p, m, "zero-bubble") < parallelism.pipeline_bubble_fraction(
        p, m, "1f1b")


@pytest.mark.parametrize("p, m", [(4, 1), (4, 3), (4, 5), (8, 3), (3, 9)])
def test_zbv_memory_rule_matches_the_simulated_peak_and_unequal_phases_idle_more(p, m):
    """The closed form for the activations each GPU holds (its first chunk's forwards before its first weight
    gradient, min(2p - s - 1, m), and its second's, min(s + 1, m), each half a stage) against the simulated
    peak, short batches included; and with unequal phases (the input gradient twice the weight gradient, as
    attention's backward makes it) the fixed order idles more than the equal-phase floor but less than 1F1B."""
    out = parallelism.zbv_schedule(p, m)
    rule = memory.pipeline_activation_bytes(1.0, 1, p, m, "zb-v", stage=np.arange(p))
    assert list(np.atleast_1d(rule)) == pytest.approx(out["peak_in_flight"])
    uneq = parallelism.zbv_schedule(p, m, 1.0, 1.4, 0.6)
    assert uneq["step_s"] >= 3 * m + (p - 1) / 2 - 1e-9
    assert uneq["step_s"] < (m + p - 1) * 3
    with pytest.raises(ValueError, match="forward_s"):
        parallelism.zbv_schedule(p, m, 0.0)
    # pipeline_bubble_fraction simulates only min(m, 2p - 1) micro-batches (the idle time stops growing there):
    # against the full simulation, at short and long batches and lopsided phases
    for mm in (m, 2 * p - 1, 2 * p, 5 * p + 3):
        for t in ((1.0, 1.4, 0.6), (1.0, 9.0, 0.2), (3.0, 0.5, 0.5), (0.2, 0.3, 4.0)):
            full = parallelism.zbv_schedule(p, mm, *t)["bubble_fraction"]
            assert parallelism.pipeline_bubble_fraction(p, mm, "zb-v", 1, *t) == pytest.approx(full, abs=1e-12)
    with pytest.raises(ValueError, match="too many"):
        parallelism.zbv_schedule(1000, 1000)


def test_zbv_in_a_training_step_puts_the_head_on_the_first_gpu_and_sends_twice():
    """Under ZB-V the first GPU holds the first and the last chunk: the embedding and the LM head (untied for
    Llama 3.1 70B: 128,256 x 8,192 each), so its weights are 1F1B's first stage's plus the head, less the layers
    the V moves; each micro-batch crosses a GPU boundary twice as often; 2 pp chunks need 2 pp layers."""
    kw = dict(global_batch=64, seq_len=4096, tp=8, pp=4, dp=1)
    one = TL.training_step("llama-3.1-70b", "h100-sxm", **kw)
    vee = TL.training_step("llama-3.1-70b", "h100-sxm", schedule="zb-v", **kw)
    m = models.get("llama-3.1-70b")
    layer = (m.total_params - 2 * 128256 * 8192 - 8192) / 80
    # 1F1B's first stage: 20 layers and the embedding; ZB-V's first GPU: chunks 0 and 7, 10 + 10 layers, the
    # embedding, the final norm and the head (bf16 weights split over tp = 8)
    w1 = (20 * layer + 128256 * 8192) / 8 * 2
    wv = (20 * layer + 2 * 128256 * 8192 + 8192) / 8 * 2
    per_stage = TL._stage_memories(m, tp=8, cp=1, dp=1, ep=1, pp=4, mb=64, s_loc=4096, b=1, sp=True,
                                   recompute="selective", dropout=False, schedule="zb-v", chunks=1,
                                   kw=dict(zero_stage=1, weight_dtype="bf16", grad_dtype="fp32", master_weights=True))
    assert per_stage[0]["weights"] == pytest.approx(wv, rel=1e-3)
    assert max(s["weights"] for s in per_stage) == per_stage[0]["weights"]
    assert one.memory_bytes["weights"] == pytest.approx(max(w1, (20 * layer + 128256 * 8192 + 8192) / 8 * 2),
                                                        rel=1e-3)
    assert vee.comm_bytes["pp"] == pytest.approx(2 * one.comm_bytes["pp"])
    assert vee.bubble_s < one.bubble_s
    # two stages: the V's turns (chunk 1 to 2, and the loss) stay on one GPU; each sends as many as under 1F1B
    kw2 = dict(kw, pp=2, tp=8)
    assert TL.training_step("llama-3.1-70b", "h100-sxm", schedule="zb-v", **kw2).comm_bytes["pp"] == pytest.approx(
        TL.training_step("llama-3.1-70b", "h100-sxm", **kw2).comm_bytes["pp"])
    # every parameter is somewhere, once: a tied table (Llama 3.2 1B) is not copied when the embedding and the head
    # share GPU 0
    for key in ("llama-3.2-1b", "llama-3.1-70b"):
        mk = models.get(key)
        for pp in (1, 4):
            _, moe_l, other = TL._gpu_stages(mk, pp, "zb-v")
            assert int(other.sum()) == mk.total_params, (key, pp)
    with pytest.raises(ValueError, match="2 x pp = 18 chunks.*16 layers: allowed pp <= 8"):
        TL.training_step("llama-3.2-1b", "h100-sxm", global_batch=8, seq_len=1024, pp=9, schedule="zb-v")


def test_zbv_activations_walk_unequal_chunks():
    """Llama 3.1 405B's 126 layers in 32 chunks (PP16): the first 30 chunks take 4 layers, the last two 3, so GPU 0
    holds chunk 0 (4 layers) and chunk 31 (3). With 64 micro-batches it runs 31 forwards of chunk 0, then triples of
    chunk 31 that free what they add, then one more forward of chunk 0 before its first weight gradient: 32 x 4 =
    128 layers' activations, not the 32 x 3.5 = 112 an even split would give; with the embedding and the head that
    makes GPU 0 the busiest."""
    kw = dict(global_batch=64 * 8, seq_len=8192, tp=8, pp=16, dp=8, schedule="zb-v")
    st = TL.training_step("llama-3.1-405b", "h100-sxm", **kw)
    per_layer = 31.75 / 8 * 8192 * 16384        # a layer at TP8 + SP without dropout (hand count above)
    assert st.stage == 0
    assert st.memory_bytes["activations"] == pytest.approx(128 * per_layer, rel=1e-9)
    # the walk stops at 2 pp micro-batches: the peak comes before (a full walk over random chunk sizes agrees)
    rng = np.random.default_rng(0)
    for p, m in ((2, 9), (3, 20), (5, 31), (8, 40), (6, 11)):
        sizes = rng.integers(1, 6, size=2 * p).astype(float)
        full = []
        for order in parallelism.zbv_orders(p, m):
            held = peak = 0.0
            for phase, c, _ in order:
                held += sizes[c] if phase == "F" else -sizes[c] if phase == "W" else 0.0
                peak = max(peak, held)
            full.append(peak)
        assert parallelism.zbv_peak_in_flight(p, m, sizes) == pytest.approx(full), (p, m)


# ---- layouts ---------------------------------------------------------------------------------------------------

def _llama(row, **kw):
    return TL.training_step("llama-3.1-405b", "h100-sxm", global_batch=row["dp"] * row["batch_per_dp"],
                            seq_len=row["seq_len"], tp=row["tp"], cp=row["cp"], pp=row["pp"], dp=row["dp"], **kw)


def test_llama3_published_layouts_fit_and_their_memory_by_hand():
    # Llama 3 (section 3.3.2) shards optimizer state and gradients over data parallelism (ZeRO-2 here).
    row = TL.LLAMA3_405B_LAYOUTS[1]
    st = _llama(row, zero_stage=2)
    assert st.fits
    # the first stage's GPU (the busiest): 8 of the 126 layers and the embedding, over TP8 -- not 405.85B / 128
    layer = 2 * 16384 * 16384 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384
    shard = (8 * layer + 128_256 * 16384) / 8
    assert st.stage == 0 and shard == 3_450_372_096
    assert st.memory_bytes["weights"] == pytest.approx(2 * shard)
    assert st.memory_bytes["gradients"] + st.memory_bytes["master_weights"] + st.memory_bytes["optimizer"] \
        == pytest.approx(16 * shard / 128)
    # 8 layers on the first stage (126 / 16 rounded up), 16 micro-batches in flight, 31.75 h bytes per token / TP 8
    assert st.memory_bytes["activations"] == pytest.approx(8 * 16 * 31.75 * 8192 * 16384 / 8)
    # the naive layouts do not: no model parallelism at all, or full replication of the model state
    assert not TL.training_step("llama-3.1-405b", "h100-sxm", global_batch=16384, seq_len=8192, dp=16384).fits
    # every published row fits
    assert all(_llama(r, zero_stage=2).fits for r in TL.LLAMA3_405B_LAYOUTS)


def test_llama3_predicted_mfu_ceiling_is_above_published_and_in_the_same_order():
    # The model is a floor on time (compute at peak), so its MFU must not fall below what Meta measured;
    # and it must rank the three rows as Table 4 does (43 > 41 > 38%): more GPUs per batch cost bubble,
    # 128K context costs attention.
    pred = [_llama(r, zero_stage=2).mfu for r in TL.LLAMA3_405B_LAYOUTS]
    pub = [r["mfu"] for r in TL.LLAMA3_405B_LAYOUTS]
    assert all(p >= q for p, q in zip(pred, pub)), (pred, pub)
    assert pred[0] > pred[1] > pred[2]


def test_layout_search_puts_the_published_layout_near_the_best():
    fit, tried = TL.search_layouts("llama-3.1-405b", "h100-sxm", 16384, 2048, 8192, cps=(1,), zero_stages=(1, 2))
    assert tried > len(fit) > 0
    best = fit[0].step_time_s
    pub = [s for s in fit if (s.layout["tp"], s.layout["pp"], s.layout["dp"], s.layout["micro_batch"])
           == (8, 16, 128, 1)]
    assert pub and pub[0].step_time_s <= 1.1 * best
    assert all(s.layout["tp"] == 8 for s in fit[:5])   # TP stays inside the 8-GPU NVLink box


def test_communication_volumes_by_hand():
    row = TL.LLAMA3_405B_LAYOUTS[1]
    st = _llama(row, zero_stage=1)
    layer = 2 * 16384 * 16384 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384
    shard = (8 * layer + 128_256 * 16384) / 8          # the stage with the most to synchronise: the first
    # ZeRO-1/2: reduce-scatter fp32 gradients and all-gather bf16 weights: (p-1)/p (4 + 2) bytes per parameter
    assert st.comm_bytes["dp"] == pytest.approx(127 / 128 * 6 * shard)
    # TP: 4 all-reduces of one micro-batch's hidden states per layer, 2(t-1)/t of them sent, 126/16 layers, 16 micro-batches
    assert st.comm_bytes["tp"] == pytest.approx(4 * 126 / 16 * 16 * 2 * 7 / 8 * 8192 * 16384 * 2)
    # TP over NVLink (450 GB/s per direction): the ring all-reduce time
    assert st.comm_s["tp"] == pytest.approx(st.comm_bytes["tp"] / 450e9)


def test_llama_8b_on_one_8_gpu_box_by_hand():
    # Chapter 10's worked example. Llama 3.1 8B's config: V 128256, d 4096, 32 layers, 32/8 heads of 128, d_ff 14336.
    # Catches: a wrong d_ff or KV-head count in the catalog, fp16 gradients where Megatron keeps fp32, ZeRO-1
    # sharding the gradients, a wrong activation count for GQA + SwiGLU (34 d bytes per token per layer here).
    V, d, nl, nkv, dh, dff = 128256, 4096, 32, 8, 128, 14336
    N = 2 * V * d + nl * (2 * d * d + 2 * d * nkv * dh + 3 * d * dff + 2 * d) + d
    z1 = TL.training_step("llama-3.1-8b", "h100-sxm", global_batch=64, seq_len=8192, dp=8, zero_stage=1)
    assert z1.memory_bytes["weights"] == pytest.approx(2 * N) and z1.memory_bytes["gradients"] == pytest.approx(4 * N)
    assert z1.memory_bytes["master_weights"] + z1.memory_bytes["optimizer"] == pytest.approx(12 * N / 8)
    assert z1.memory_bytes["activations"] == pytest.approx(34 * d * 8192 * nl)
    assert not z1.fits and z1.total_bytes / GB == pytest.approx(96.7, abs=0.05)
    z2 = TL.training_step("llama-3.1-8b", "h100-sxm", global_batch=64, seq_len=8192, dp=8, zero_stage=2)
    assert z2.fits and z2.fit_warning() == ""
    # the step: 6 N_mm D + 3 a (L/2) D model FLOPs, + a (L/2) D recomputed, at 8 x 989.5 TFLOP/s; the DP sync hides
    a, D = 4 * 32 * dh * nl, 64 * 8192
    model = (6 * (N - V * d) + 3 * a * 8192 / 2) * D
    assert z2.model_flops == pytest.approx(model)
    assert z2.step_time_s == pytest.approx((model + a * 8192 / 2 * D) / (8 * 989.5e12))
    # the label: micro-batches of 1 sequence, 64 / (8 x 1) = 8 of them per step
    assert z2.describe() == "TP1 CP1 PP1 DP8 mb1 x8 1f1b ZeRO-2 selective"


def test_training_memory_is_the_busiest_stages_not_an_average():
    # Llama-3.1-8B (d 4096, 8 KV heads of 128, d_ff 14336, 32 layers, vocab 128256, untied) in 4 stages of 8 layers
    layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    emb = 128256 * 4096
    kw = dict(seq_len=4096, pp=4, zero_stage=0, recompute="selective")
    # 16 micro-batches: under 1F1B the first stage holds 4 in flight, the last 1: the first is the busiest
    st = TL.training_step("llama-3.1-8b", "h100-sxm", global_batch=16, **kw)
    assert st.stage == 0 and st.memory_bytes["weights"] == (8 * layer + emb) * 2       # averaged: 2.0076e9 x 2
    assert st.memory_bytes["gradients"] == (8 * layer + emb) * 4                      # fp32
    # one micro-batch: every stage holds one; the last, with the head and the final norm, holds the most
    one = TL.training_step("llama-3.1-8b", "h100-sxm", global_batch=1, **kw)
    assert one.stage == 3 and one.memory_bytes["weights"] == (8 * layer + emb + 4096) * 2
    assert "on a GPU of stage 3" in TL.training_step("llama-3.1-8b", "h100-pcie", global_batch=1, seq_len=131072,
                                                      pp=4, zero_stage=0, recompute="none").fit_warning()


def test_fit_warning_states_the_numbers_of_a_layout_that_does_not_fit():
    # Llama 3 405B's layout with the interleaved schedule (v = 2): 23.5 micro-batches of 8 layers on the first
    # stage, 100.1 GB of activations, plus ZeRO-2's model state: more than an H100's 80 GB.
    st = TL.training_step("llama-3.1-405b", "h100-sxm", global_batch=2048, seq_len=8192, tp=8, pp=16, dp=128,
                          zero_stage=2, schedule="interleaved", chunks=2)
    assert st.memory_bytes["activations"] / GB == pytest.approx(100.1, abs=0.05)
    assert not st.fits
    warning = st.fit_warning()
    assert warning.startswith("WARNING: does not fit")
    assert f"{st.total_bytes / GB:.1f} GB" in warning and "80.0 GB of HBM" in warning
    assert f"({(st.total_bytes - 80e9) / GB:.1f} GB over)" in warning
    assert _llama(TL.LLAMA3_405B_LAYOUTS[1], zero_stage=2).fit_warning() == ""


def test_training_step_refuses_impossible_layouts():
    kw = dict(global_batch=64, seq_len=4096)
    with pytest.raises(ValueError, match="must divide"):
        TL.training_step("llama-3.1-8b", "h100-sxm", tp=3, **kw)
    with pytest.raises(ValueError, match="global_batch=64 sequences must split"):
        TL.training_step("llama-3.1-8b", "h100-sxm", dp=128, **kw)
    with pytest.raises(ValueError, match="cp=3 must divide seq_len"):
        TL.training_step("llama-3.1-8b", "h100-sxm", cp=3, **kw)
    with pytest.raises(ValueError, match=r"is dense \(no experts\); allowed: ep=1"):
        TL.training_step("llama-3.1-8b", "h100-sxm", ep=2, dp=2, **kw)
    with pytest.raises(ValueError, match="compute_efficiency"):
        TL.training_step("llama-3.1-8b", "h100-sxm", compute_efficiency=1.5, **kw)
    moe = TL.training_step("deepseek-v3", "h100-sxm", global_batch=4096, seq_len=4096, pp=16, dp=128, ep=64,
                           zero_stage=1)
    assert moe.comm_s["ep"] > 0 and moe.memory_bytes["weights"] > 0


# ---- measured: a data-parallel step and a training pipeline on 2 MPI ranks ------------------------------------

import importlib.util  # noqa: E402

needs_mpi = pytest.mark.skipif(importlib.util.find_spec("mpi4py") is None,
                               reason='mpi4py is not installed (pip install -e ".[test]" brings it)')


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from llmmath import mpi_bench

    return mpi_bench.run_training(n_procs=2, progress=False, out=tmp_path_factory.mktemp("t") / "t.json")


@needs_mpi
def test_data_parallel_gradient_is_the_whole_batch_gradient(trained):
    assert trained.grads_match and trained.grad_bytes == 4 * 512 * 512 * 4
    for a in (trained.single_s, trained.dp_s, trained.dp_overlap_s, trained.allreduce_s):
        assert a.shape == (15,) and np.all(a > 0)


@needs_mpi
def test_measured_allreduce_and_step_are_not_below_the_alpha_beta_floor(trained):
    # One-sided (load only adds time): the fastest all-reduce is at least half the ring model's time with the
    # ping-pong's alpha and beta (seen: 1.5-3x the model); a model that counted 2(p-1)/p twice, or alpha per
    # byte, would overshoot and fail. The step: at least 0.7 x (fastest forward + backward + model all-reduce).
    assert trained.allreduce_s.min() >= 0.5 * trained.predicted_allreduce_s()
    assert trained.dp_s.min() >= 0.7 * trained.predicted_dp_s()
    assert trained.dp_overlap_s.min() >= 0.7 * trained.predicted_dp_overlap_s()


@needs_mpi
def test_real_pipeline_holds_what_its_schedule_says_and_idles_at_least_the_formula(trained):
    m = trained.micro_batches
    # micro-batches forwarded and not yet backwarded, counted in the real run: GPipe all m, 1F1B p - s
    assert trained.pipe["gpipe"]["in_flight"] == [m, m]
    assert trained.pipe["1f1b"]["in_flight"] == [2, 1]
    # the formula is the floor for equal stages and free sends; the real bubble (fastest round) is not far below it
    floor = parallelism.pipeline_bubble_fraction(2, m)
    for kind in ("gpipe", "1f1b"):
        assert trained.best_bubble(kind) >= 0.5 * floor, kind


# ---- the planner explorer ---------------------------------------------------------------------------------------

def test_training_memory_explorer_answers_every_control_and_flags_what_does_not_fit():
    from llmmath import explorers

    ex = explorers.training_memory_explorer()
    assert "fits" in ex.text.value and "does not fit" not in ex.text.value   # Llama 3 405B's published layout
    before = ex.image.value
    for name, control in ex.controls.items():
        options = getattr(control, "options", None)
        control.value = options[-1] if options else control.max
        assert ex.text.value and "Traceback" not in ex.text.value, name
    assert ex.image.value != before
    bad = explorers.training_memory_explorer(model="llama-3.1-405b", tp=1, pp=1, gpus=8192)
    assert "does not fit" in bad.text.value


def test_training_prediction_explorer_answers_every_control_and_matches_predict():
    """The waterfall explorer draws training_layout.predict: its text carries predict's tokens/s for the layout it
    shows, every control answers without a traceback, and a bar chart's legend names each kind once however often
    a control moves (a bar call's container used to outlive its bars, so legends repeated)."""
    from llmmath import explorers

    ex = explorers.training_prediction_explorer()
    p = TL.predict("llama-3.1-70b", "h100-sxm", global_batch=128, seq_len=8192, tp=4, pp=8, dp=2, precision="fp8",
                   schedule="interleaved", chunks=5, grad_dtype="bf16", recompute="none")
    assert f"{p.tokens_per_s_per_gpu:,.0f} tokens/s per GPU" in ex.text.value
    before = ex.image.value
    for name, control in ex.controls.items():
        options = getattr(control, "options", None)
        if options:
            last = options[-1]                                      # a labelled option is (label, value)
            control.value = last[1] if isinstance(last, tuple) else last
        else:
            control.value = not control.value
        assert ex.text.value and "Traceback" not in ex.text.value, name
    assert ex.image.value != before
    fa = explorers.training_prediction_explorer(model="nemo-gpt3-5b", chip="a100-80gb", gpus=8, seq_len=2048,
                                                tp=1, pp=1, precision="bf16", schedule="1f1b")
    un = TL.predict("nemo-gpt3-5b", "a100-80gb", global_batch=128, seq_len=2048, tp=1, pp=1, dp=8,
                    recompute="none", flash_attention=False, grad_dtype="bf16")
    fa.controls["attention"].value = "unfused"                      # the menu prices attention unfused
    assert f"{un.tokens_per_s_per_gpu:,.0f} tokens/s per GPU" in fa.text.value
    fa.controls["attention"].value = "flash2"                       # an H100's bars: refused on an A100, in words
    assert "Hopper" in fa.text.value and "Traceback" not in fa.text.value
    f2 = TL.predict("nemo-gpt3-5b", "h100-sxm", global_batch=128, seq_len=2048, tp=1, pp=1, dp=8,
                    recompute="none", attention_kernel="flash2", grad_dtype="bf16")
    fa.controls["chip"].value = "h100-sxm"                          # and priced at flash-attn 2's rates on an H100
    assert f"{f2.tokens_per_s_per_gpu:,.0f} tokens/s per GPU" in fa.text.value
    fa.controls["chip"].value = "a100-80gb"
    fa.controls["attention"].value = "unfused"
    fa.controls["cp"].value = 2                                     # and refuses context parallelism, in words
    assert "flash_attention" in fa.text.value and "Traceback" not in fa.text.value
    for ex2 in (ex, explorers.training_memory_explorer()):
        for tp in (2, 1, 8):
            ex2.controls["tp"].value = tp
        for ax in ex2.fig.axes:
            assert not ax.containers        # each frame's bars leave with it


def test_a_model_whose_every_layer_is_moe_trains():
    # Mixtral, Qwen3-MoE and gpt-oss have no dense MLP (d_ff = 0): the training step sized a dense layer anyway and
    # refused them ("d_ff must be a whole number >= 1"). A token's MLP activations are those of the k experts it
    # visits, so Mixtral's activations equal those of the same model with one dense MLP k x 14,336 wide
    import dataclasses

    kw = dict(global_batch=64, seq_len=4096, tp=2, dp=8, micro_batch=1, recompute="selective")
    for key in ("mixtral-8x7b", "qwen3-30b-a3b", "gpt-oss-120b", "qwen3-235b-a22b"):
        s = TL.training_step(key, "h100-sxm", ep=8, **kw)
        assert s.step_time_s > 0 and s.memory_bytes["activations"] > 0, key
    mix = models.get("mixtral-8x7b")
    dense = dataclasses.replace(mix, key="mixtral-as-dense", n_experts=0, experts_per_token=0, d_ff_expert=0,
                                d_ff=2 * 14336, published_total_params=0, published_active_params=0)
    a = TL.training_step(mix, "h100-sxm", ep=1, **kw).memory_bytes["activations"]
    b = TL.training_step(dense, "h100-sxm", ep=1, **kw).memory_bytes["activations"]
    assert a == pytest.approx(b, rel=1e-12)


def test_a_search_that_finds_nothing_says_why():
    # Llama 3.1 405B on 8 H100s: its ZeRO-1 state alone is 405.9e9 x (2 + 2 + 12) bytes / 8 GPUs = 812 GB a GPU
    fit, tried = TL.search_layouts("llama-3.1-405b", "h100-sxm", 8, 64, 8192, cps=(1,))
    assert not fit and tried > 0
    assert fit.why.startswith("no layout of 8 GPUs fits") and "the closest" in fit.why
    closest_gb = float(fit.why.split("needs ")[1].split(" GB")[0].replace(",", ""))
    assert closest_gb > 405_853_388_800 * 2 / 8 / 1e9            # at least the bf16 weights a GPU holds at TP8
    # a rule that refuses a layout is named with how often it did
    fit, _ = TL.search_layouts("mixtral-8x7b", "h100-sxm", 8, 64, 4096, cps=(1,), ep=8)
    assert "refused by: ep=8 exceeds the chips of a stage" in fit.why
    # and a search that finds layouts says nothing
    ok, _ = TL.search_layouts("llama-3.1-8b", "h100-sxm", 8, 64, 4096, cps=(1,))
    assert ok and ok.why == ""


def test_an_fp32_copy_of_bf16_gradients_is_kept_for_the_shard_a_rank_updates():
    """Megatron's distributed optimizer with a bf16 gradient buffer (and DeepSpeed's ZeRO-1): bf16 weights and
    gradients whole (2 + 2 bytes), the fp32 gradient copy, master weights and Adam sharded (4 + 4 + 8): 4 + 16/d,
    6 bytes a parameter at d = 8; unsharded 20. Keeping the copy whole (a slip) gives 8 + 12/d = 9.5."""
    kw = dict(grad_dtype="bf16", fp32_grad_copy=True)
    assert memory.model_state_bytes_per_gpu(1.0, dp=8, zero_stage=1, **kw) == pytest.approx(4 + 16 / 8)
    assert memory.model_state_bytes_per_gpu(1.0, dp=8, zero_stage=0, **kw) == pytest.approx(20)
    assert memory.model_state_bytes_per_gpu(1.0, dp=8, zero_stage=3, **kw) == pytest.approx(20 / 8)
