"""training_layout.predict: the training step as frameworks run it (issue 43). Expected values are typed from their
sources (datasheets, FlashAttention-3's figure, the measured GEMM tables' printed medians) or derived by hand."""

import pytest

from llmmath import training_layout as tl

# H100 SXM datasheet: dense bf16 989.4 TFLOP/s, fp8 1,978.9; NVLink 900 GB/s (450 a direction); 400 Gb/s NIC
H100_BF16, H100_FP8 = 989.4e12, 1978.9e12
# data/gemm_fractions.toml's plateau medians for the H100 (TensorRT-LLM's Linear at 2,048-8,192 tokens)
H100_SHARE_BF16, H100_SHARE_FP8 = 0.745, 0.525

KW = dict(global_batch=64, seq_len=4096, tp=4, pp=1, dp=2)


def test_attention_share_is_flashattention3s_figure():
    """FlashAttention-3, figure 5 (causal, head dim 128, H100): 579 TFLOP/s at 4k tokens, 292 at 512, 616 at 16k."""
    assert tl.attention_share(4096) == pytest.approx(579 / 989.4)
    assert tl.attention_share(512) == pytest.approx(292 / 989.4)
    assert tl.attention_share(65536) == pytest.approx(616 / 989.4)         # flat past the figure's end
    assert tl.attention_share(512) < tl.attention_share(2048) < tl.attention_share(8192)


def test_the_backward_pass_runs_attention_at_a_lower_share_by_hand():
    """FlashAttention-3's backward figure (head dim 128, no mask) 542 TFLOP/s at 4k against its unmasked forward's
    638, its FLOPs counted as 2.5 forwards where the course counts 2: the causal backward's share at 4k is
    579 x 542 / 638 x 2 / 2.5 / 989.4 = 0.398 (a slip that took the figure's rate at face value gives 0.50; one that
    kept the forward's share, 0.59). The step charges the forward's A at the forward's share and the backward's 2 A
    at the backward's. Llama 3.1 8B (32 layers, 32 heads of 128) at 4,096 tokens, causal: A = 4 x 32 x 4,096 x 2,048
    FLOPs a token (QK and PV over 2,048 positions on average), 64 x 4,096 tokens on 8 GPUs."""
    fwd, bwd = 579 / 989.4, 579 * 542 / 638 * 2 / 2.5 / 989.4
    assert tl.attention_share(4096) == pytest.approx(fwd)
    assert tl.attention_share(4096, backward=True) == pytest.approx(bwd)
    assert tl.attention_share(512, backward=True) == pytest.approx(292 * 316 / 467 * 0.8 / 989.4)
    p = tl.predict("llama-3.1-8b", "h100-sxm", recompute="none", **KW)
    A = 4 * 32 * 4096 * 2048 * 64 * 4096
    assert p.terms["attention_s"] == pytest.approx((A / fwd + 2 * A / bwd) / (8 * H100_BF16), rel=1e-3)
    with pytest.raises(ValueError, match="seq_len"):
        tl.attention_share(0)


def test_a_narrower_head_runs_attention_at_its_own_figures_share():
    """FlashAttention-3's figures at head dim 64 (H100, BF16): causal forward 420 TFLOP/s at 4k tokens (197 at 512),
    unmasked forward 476, backward 453; cuDNN's causal forward 388 at 16k. Typed from the figures: a slip that kept the
    head-128 bars (579), read the unmasked forward as the causal one (476), or interpolated in the share's logarithm
    fails. Between 64 and 128 the share is linear in the head's width; outside, the nearer figure holds. Llama 3.2 1B
    (16 layers, 32 heads of 64) at 4,096 tokens: A = 4 x 16 x 2,048 x 2,048 FLOPs a token, 64 x 4,096 tokens on 8
    GPUs, priced at the head-64 shares."""
    fwd, bwd = 420 / 989.4, 420 * 453 / 476 * 0.8 / 989.4
    assert tl.attention_share(4096, head_dim=64) == pytest.approx(fwd)
    assert tl.attention_share(4096, backward=True, head_dim=64) == pytest.approx(bwd)
    assert tl.attention_share(512, head_dim=64) == pytest.approx(197 / 989.4)
    assert tl.attention_share(16384, kernel="cudnn", head_dim=64) == pytest.approx(388 / 989.4)
    assert tl.attention_share(4096, head_dim=96) == pytest.approx((420 + 579) / 2 / 989.4)
    assert tl.attention_share(4096, head_dim=32) == pytest.approx(fwd)                 # held below 64
    assert tl.attention_share(4096, head_dim=192) == pytest.approx(579 / 989.4)         # and above 128
    p = tl.predict("llama-3.2-1b", "h100-sxm", recompute="none", **KW)
    A = 4 * 16 * 2048 * 2048 * 64 * 4096
    assert p.terms["attention_s"] == pytest.approx((A / fwd + 2 * A / bwd) / (8 * H100_BF16), rel=1e-3)
    for bad in (0, -64, float("nan")):
        with pytest.raises(ValueError, match="head_dim"):
            tl.attention_share(4096, head_dim=bad)


def test_the_attention_kernel_picks_its_bars_from_the_same_figures():
    """FlashAttention-3's figures also carry FlashAttention-2's and cuDNN's bars (causal forward at 4k: 319 and 518
    TFLOP/s; unmasked forward 368 and 609; backward 310 and 499). Typed here from the figures: a slip that read one
    kernel's row for another, or kept FlashAttention-3's backward ratio for FlashAttention-2, fails."""
    assert tl.attention_share(4096, kernel="flash2") == pytest.approx(319 / 989.4)
    assert tl.attention_share(4096, kernel="cudnn") == pytest.approx(518 / 989.4)
    assert tl.attention_share(4096, backward=True, kernel="flash2") == pytest.approx(319 * 310 / 368 * 0.8 / 989.4)
    assert tl.attention_share(16384, backward=True, kernel="cudnn") == pytest.approx(539 * 516 / 595 * 0.8 / 989.4)
    assert tl.attention_share(4096) == tl.attention_share(4096, kernel="flash3")          # the default
    # the step: Llama 3.1 8B at 4k (A by hand as above) with flash-attn 2's rates, and nothing else moves
    f3 = tl.predict("llama-3.1-8b", "h100-sxm", recompute="none", **KW)
    f2 = tl.predict("llama-3.1-8b", "h100-sxm", recompute="none", attention_kernel="flash2", **KW)
    A = 4 * 32 * 4096 * 2048 * 64 * 4096
    fwd, bwd = 319 / 989.4, 319 * 310 / 368 * 0.8 / 989.4
    assert f2.terms["attention_s"] == pytest.approx((A / fwd + 2 * A / bwd) / (8 * H100_BF16), rel=1e-3)
    assert f2.terms["linear_s"] == f3.terms["linear_s"] and f2.terms["attention_s"] > 1.7 * f3.terms["attention_s"]
    assert "FlashAttention-2" in f2.waterfall[1][0] and "FlashAttention-3" in f3.waterfall[1][0]
    with pytest.raises(ValueError, match="flash3"):
        tl.predict("llama-3.1-8b", "h100-sxm", attention_kernel="fa2", **KW)
    with pytest.raises(ValueError, match="kernel"):
        tl.attention_share(4096, kernel="xformers")
    # the bars are an H100's: another chip, or the unfused path, refuses a kernel rather than mispricing it
    with pytest.raises(ValueError, match="Hopper"):
        tl.predict("llama-3.1-8b", "a100-80gb", attention_kernel="flash2", **KW)
    with pytest.raises(ValueError, match="flash_attention=False"):
        tl.predict("llama-3.1-8b", "h100-sxm", attention_kernel="cudnn", flash_attention=False, **KW)
    h200 = tl.predict("llama-3.1-8b", "h200", attention_kernel="flash2", **KW)       # a Hopper GPU takes them
    assert "FlashAttention-2" in h200.waterfall[1][0]


def test_fp8_speeds_the_linear_layers_only():
    """FP8 recipes run the linear layers in fp8; attention stays bf16. The linear time shrinks by the ratio of the
    two precisions' achieved rates, 989.4 x 0.745 / (1,978.9 x 0.525) = 0.709, and attention's time not at all (a
    slip that priced attention at fp8 halves it)."""
    b = tl.predict("llama-3.1-8b", "h100-sxm", precision="bf16", **KW)
    f = tl.predict("llama-3.1-8b", "h100-sxm", precision="fp8", **KW)
    ratio = (H100_BF16 * H100_SHARE_BF16) / (H100_FP8 * H100_SHARE_FP8)
    assert f.terms["linear_s"] / b.terms["linear_s"] == pytest.approx(ratio, rel=0.01)
    assert f.terms["attention_s"] == pytest.approx(b.terms["attention_s"])
    assert f.tokens_per_s_per_gpu > b.tokens_per_s_per_gpu


def test_the_prediction_is_below_its_ceiling_and_mfu_is_model_flops_over_time():
    p = tl.predict("llama-3.1-70b", "h100-sxm", global_batch=128, seq_len=4096, tp=8, pp=4, dp=4,
                   schedule="interleaved", chunks=5)
    assert p.waterfall[0][0] == "roofline ceiling" and p.step_time_s >= p.waterfall[0][1]
    # MFU by hand: 6 N D + attention over the step's GPU-seconds at the bf16 peak
    st = tl.training_step("llama-3.1-70b", "h100-sxm", global_batch=128, seq_len=4096, tp=8, pp=4, dp=4,
                          schedule="interleaved", chunks=5)
    assert p.mfu == pytest.approx(st.model_flops / (p.step_time_s * 128 * H100_BF16), rel=1e-3)
    assert p.tokens_per_s_per_gpu == pytest.approx(128 * 4096 / p.step_time_s / 128)


def test_expert_all_to_all_rides_the_link_the_rank_order_gives_it():
    """EP8 on 8 H100s of a node: in Megatron-Core's order (tp-cp-ep-dp-pp) the expert group is 8 adjacent GPUs, on
    NVLink; with the expert group outermost it spans nodes and rides the 50 GB/s NIC, 9x slower a byte than NVLink's
    450 GB/s a direction."""
    kw = dict(global_batch=256, seq_len=4096, tp=1, pp=2, dp=32, ep=8, precision="fp8")
    inside = tl.predict("mixtral-8x7b", "h100-sxm", **kw)
    outside = tl.predict("mixtral-8x7b", "h100-sxm", rank_order="tp-cp-dp-pp-ep", **kw)
    a2a = lambda p: next(name for name, _ in p.waterfall if name.startswith("expert all-to-all"))  # noqa: E731
    assert "scale-up" in a2a(inside) and "scale-out" in a2a(outside)
    assert outside.terms["ep_exposed_s"] / inside.terms["ep_exposed_s"] == pytest.approx(450 / 50, rel=0.01)


def test_every_group_rides_the_link_its_span_gives_it_by_hand():
    """128 H100s (8 a node: NVLink 450 GB/s a direction, eight 50 GB/s NICs), TP4 PP4 DP8 EP8, experts unsplit.
    Megatron-Core's order tp-cp-ep-dp-pp: TP is 4 adjacent GPUs (NVLink); the dense data-parallel ring strides 4
    over 8 replicas, 2 of them a node, so it crosses on 2 NICs: 2 x 50 = 100 GB/s; the expert layers number their
    ranks apart (Megatron-Core's expert RankGenerator, expert TP 1): the expert group is 8 adjacent GPUs (NVLink) and
    the expert data-parallel ring strides 8, one member a node (one NIC, 50); the pipeline is outermost (NIC). In
    the Llama 3 order tp-cp-pp-ep-dp the expert group strides over the 4 pipeline stages and spans 4 nodes (NIC),
    and the dense ring strides 16, one member a node (50)."""
    meg = tl.group_links("h100-sxm", tl.MEGATRON_RANK_ORDER, tp=4, pp=4, dp=8, ep=8)
    assert (meg["tp"], meg["dp"], meg["ep"], meg["expert_dp"], meg["pp"]) == (450e9, 100e9, 450e9, 50e9, 50e9)
    assert meg["ep_domains"] == 1
    llama = tl.group_links("h100-sxm", tl.LLAMA3_RANK_ORDER, tp=4, pp=4, dp=8, ep=8)
    assert (llama["dp"], llama["ep"], llama["ep_domains"]) == (50e9, 50e9, 4)
    # an expert group that does not divide the replicas: 8 H100s, TP2 DP4 EP8, all one node, every group on NVLink
    # (the dense ring is 4 replicas at stride 2, the expert group all 8 GPUs)
    one_box = tl.group_links("h100-sxm", tl.MEGATRON_RANK_ORDER, tp=2, dp=4, ep=8)
    assert {k: v for k, v in one_box.items() if k != "ep_domains"} == dict.fromkeys(
        ("tp", "cp", "pp", "dp", "ep", "expert_dp"), 450e9)
    # the pipeline between the experts and their replicas (tp-cp-ep-pp-dp): the expert group is still 8 adjacent
    # GPUs, and the expert data-parallel ring strides 8 x 4 = 32, one member a node (one NIC)
    mid = tl.group_links("h100-sxm", "tp-cp-ep-pp-dp", tp=4, pp=4, dp=8, ep=8)
    assert (mid["ep"], mid["expert_dp"]) == (450e9, 50e9)
    # the ceiling prices the order too: DeepSeek-V3 on 128 GB200s (TP2 PP4 EP32) in Megatron-Core's order has its
    # expert group as 32 adjacent GPUs of one 72-GPU NVLink domain (900 GB/s a direction); in the Llama 3 order it
    # strides over the 4 pipeline stages, spans 128 GPUs and crosses on the 50 GB/s NIC: 18x the time
    kw = dict(global_batch=1024, seq_len=4096, tp=2, pp=4, dp=16, ep=32, recompute="selective")
    meg_step = tl.training_step("deepseek-v3", "gb200", rank_order=tl.MEGATRON_RANK_ORDER, **kw)
    llama_step = tl.training_step("deepseek-v3", "gb200", rank_order=tl.LLAMA3_RANK_ORDER, **kw)
    assert meg_step.links_bytes_per_s["ep"] == 900e9
    assert llama_step.comm_s["ep"] / meg_step.comm_s["ep"] == pytest.approx(900 / 50)
    assert any(name.startswith("expert all-to-all on the scale-up")
               for name, _ in tl.predict("deepseek-v3", "gb200", **kw).waterfall)
    for bad in (None, "", 3):
        with pytest.raises(ValueError, match="rank_order must name"):
            tl.predict("deepseek-v3", "gb200", rank_order=bad, **kw)
    with pytest.raises(ValueError, match="rank_order must name"):
        tl.group_links("h100-sxm", "tp-dp-pp", tp=2)


def test_overlap_hides_a_data_parallel_sync_shorter_than_the_compute():
    """Llama-3.1-8B with ZeRO-1 over 16 nodes: the gradient sync crosses the NIC, yet it is shorter than the
    backward pass, so only one bucket in 40 of it shows; without the overlap the ceiling exposes all of it. The
    sync runs at the achieved ring rate, about 370 of 450 GB/s (nccl-tests' all-reduce bus bandwidth on a DGX H100:
    0.82 of the link inside one NVLink domain, assumed for rings across NICs as here), so the bucket is 1/0.82 of
    the ceiling's."""
    p = tl.predict("llama-3.1-8b", "h100-sxm", global_batch=512, seq_len=8192, tp=1, dp=128, micro_batch=1)
    ceil_dp = tl.training_step("llama-3.1-8b", "h100-sxm", global_batch=512, seq_len=8192, tp=1, dp=128).comm_s["dp"]
    assert ceil_dp / 0.82 < p.terms["compute_s"] * 2 / 3
    assert p.terms["dp_exposed_s"] == pytest.approx(ceil_dp / 0.82 / 40, rel=1e-3)


def test_bf16_gradients_halve_their_memory_and_shorten_the_sync():
    """grad_dtype='bf16' (NVIDIA's performance recipes: grad_reduce_in_fp32 = False) holds 2 bytes a parameter of
    gradient where fp32 holds 4, and the ZeRO-1 sync sends 2 + 2 bytes a parameter (reduce-scatter the gradients,
    gather the bf16 weights) where fp32 gradients send 4 + 2: the sync takes 4/6 of the time. Llama-3.1-8B, TP1 over
    16 H100 nodes, where nothing else changes."""
    kw = dict(global_batch=512, seq_len=8192, tp=1, dp=128, micro_batch=1)
    f32, b16 = tl.predict("llama-3.1-8b", "h100-sxm", **kw), tl.predict("llama-3.1-8b", "h100-sxm", grad_dtype="bf16", **kw)
    assert b16.memory_bytes["gradients"] == pytest.approx(f32.memory_bytes["gradients"] / 2, rel=1e-9)
    assert b16.memory_bytes["gradients"] == pytest.approx(8.03e9 * 2, rel=0.01)      # 8.03 B parameters x 2 bytes
    assert b16.terms["dp_exposed_s"] == pytest.approx(f32.terms["dp_exposed_s"] * 4 / 6, rel=1e-6)
    # and the optimizer step's fp32 copy of the gradient shard: 4 bytes a parameter over the 128 replicas
    assert b16.memory_bytes["fp32 gradient shard"] == pytest.approx(8.03e9 * 4 / 128, rel=0.01)
    assert "fp32 gradient shard" not in f32.memory_bytes
    with pytest.raises(ValueError, match="grad_dtype"):
        tl.predict("llama-3.1-8b", "h100-sxm", grad_dtype="fp8", **kw)


def test_memory_counts_what_frameworks_hold():
    """FlashAttention keeps no s x s scores even without recompute; the loss's fp32 logits (micro-batch x sequence x
    vocabulary / TP x 4 bytes) and the framework's reserve are counted."""
    p = tl.predict("llama-3.1-8b", "h100-sxm", recompute="none", **KW)
    sel = tl.predict("llama-3.1-8b", "h100-sxm", recompute="selective", **KW)
    assert p.memory_bytes["activations"] == sel.memory_bytes["activations"]
    assert p.memory_bytes["logits"] == 1 * 4096 * 128_256 / 4 * 4
    assert p.memory_bytes["framework reserve"] == 3 * 2**30
    full = tl.predict("llama-3.1-8b", "h100-sxm", recompute="full", **KW)
    assert full.memory_bytes["recomputed layer"] > 0


def test_bad_input_is_refused_with_what_is_allowed():
    with pytest.raises(ValueError, match="precision must be one of"):
        tl.predict("llama-3.1-8b", "h100-sxm", precision="int4", **KW)
    with pytest.raises(ValueError, match="rank_order must name"):
        tl.predict("llama-3.1-8b", "h100-sxm", rank_order="tp-dp", **KW)


def test_comm_bound_points_by_hand():
    """H100 bf16 at the measured 0.745 share: F = 737 TFLOP/s. ZeRO-1 over a 50 GB/s NIC hides behind the compute
    from F x (4 + 2) / (6 x 50e9) = 14,741 tokens per replica and step; Llama 3.1 70B (70.55B parameters less its
    128,256 x 8,192 input table = 69.50B that multiply each token, 80 layers, d = 8,192) turns tensor-parallel
    communication-bound past 1 + 6 x 0.869e9 x 450e9 / (16 x 8,192 x F) = 25 GPUs."""
    F = 989.4e12 * H100_SHARE_BF16
    pts = tl.comm_bound_points("llama-3.1-70b", "h100-sxm")
    assert pts["dp_tokens"] == pytest.approx(F * 6 / (6 * 50e9), rel=0.002)
    assert pts["fsdp_tokens"] == pytest.approx(F * 8 / (6 * 50e9), rel=0.002)
    p_layer = (70.55e9 - 128_256 * 8192) / 80
    assert pts["tp_max"] == pytest.approx(1 + 6 * p_layer * 450e9 / (16 * 8192 * F), rel=0.005)
    # DeepSeek-V3's 2,048-wide experts: compute-bound behind NVLink's all-to-all, communication-bound over the NIC
    ds = tl.comm_bound_points("deepseek-v3", "h100-sxm", precision="fp8")
    assert ds["ep_width_nvlink"] < ds["d_ff_expert"] == 2048 < ds["ep_width_nic"]
    assert "ep_width_nic" not in pts


def test_elementwise_bytes_of_llama_3_1_8b_by_hand():
    """Llama 3.1 8B: h = 4,096, 32 query and 8 KV heads of 128, SwiGLU width 14,336, vocab 128,256, 32 layers.
    Per token and layer, in bf16 values: norms 10h, rotary 4 (4,096 + 1,024), residual adds 12h, SwiGLU 8 x 14,336;
    the loss 12 bytes a vocabulary entry; with fp8, the backward's cast-transposes of the four linear outputs
    ((4,096 + 2 x 1,024) + 4,096 + 2 x 14,336 + 4,096) and the forward cast of the attention output (4,096), 4 bytes
    each. A slip that charged the activation for the whole expert pool, or a byte per bf16 value, fails here."""
    from llmmath import training
    h, kv, f, L, V = 4096, 1024, 14336, 32, 128256
    layer = (10 * h + 4 * (h + kv) + 12 * h + 8 * f) * 2
    e = training.elementwise_bytes_per_token("llama-3.1-8b")
    assert e["total"] == pytest.approx(L * layer + 12 * V)
    assert e["total"] == pytest.approx(15.96e6, rel=0.01)                 # 14.4 MB of layers, 1.5 MB of loss
    casts = 4 * ((h + 2 * kv) + h + 2 * f + h + h)
    assert training.elementwise_bytes_per_token("llama-3.1-8b", fp8=True)["fp8 casts"] == pytest.approx(L * casts)
    full = training.elementwise_bytes_per_token("llama-3.1-8b", recompute="full")
    fwd = (4 * h + 2 * (h + kv) + 6 * h + 3 * f) * 2 * L                  # the layers' forward kernels again
    assert full["recomputed forward"] == pytest.approx(fwd)
    with pytest.raises(ValueError, match="recompute must be one of"):
        training.elementwise_bytes_per_token("llama-3.1-8b", recompute="block")


def test_moe_token_movement_grows_with_the_experts_a_token_visits():
    """Qwen3-30B-A3B (h = 2,048, 8 of 128 experts of width 768, 48 layers): each MoE layer permutes a token into 8
    copies and back, forward and backward, 4 (1 + 8) h values, and the router's scores 4 x 128."""
    from llmmath import training
    e = training.elementwise_bytes_per_token("qwen3-30b-a3b")
    assert e["moe token movement"] == pytest.approx(48 * (4 * 9 * 2048 + 4 * 128) * 2)
    assert e["activation"] == pytest.approx(48 * 8 * 8 * 768 * 2)


def test_elementwise_kernels_are_priced_at_the_sustained_hbm_rate():
    """The new term is the step's tokens times the bytes a token moves, over the GPUs at 0.91 of the H100's
    3.35 TB/s (this project's measured HBM share): for Llama 3.1 8B in bf16 on 8 GPUs, 64 x 4,096 tokens."""
    from llmmath import training
    p = tl.predict("llama-3.1-8b", "h100-sxm", global_batch=64, seq_len=4096, dp=8)
    hand = 64 * 4096 * training.elementwise_bytes_per_token("llama-3.1-8b")["total"] / (8 * 3.35e12 * 0.91)
    assert p.terms["elementwise_s"] == pytest.approx(hand, rel=1e-9)
    assert dict(p.waterfall)["elementwise kernels at the sustained HBM rate"] > p.waterfall[1][1]


def test_partial_recompute_reruns_only_its_share_of_the_layers():
    """Megatron's block method with 8 of Llama 3.1 8B's 32 layers on one stage: a quarter of full recompute's extra
    forward (2 N D of matmuls), and the memory between the two."""
    kw = dict(global_batch=64, seq_len=4096, dp=8)
    none = tl.predict("llama-3.1-8b", "h100-sxm", recompute="none", **kw)
    full = tl.predict("llama-3.1-8b", "h100-sxm", recompute="full", **kw)
    part = tl.predict("llama-3.1-8b", "h100-sxm", recompute="full", recompute_layers=8, **kw)
    assert part.terms["linear_s"] - none.terms["linear_s"] == pytest.approx(
        (full.terms["linear_s"] - none.terms["linear_s"]) / 4, rel=1e-9)
    assert sum(full.memory_bytes.values()) < sum(part.memory_bytes.values()) < sum(none.memory_bytes.values())
    with pytest.raises(ValueError, match="needs recompute='full'"):
        tl.predict("llama-3.1-8b", "h100-sxm", recompute="selective", recompute_layers=8, **kw)


def test_a_data_parallel_ring_across_nodes_uses_every_nic_of_the_node():
    """NCCL runs one ring per NIC: a data-parallel group with g members in each 8-GPU H100 node crosses the node
    boundary on g NICs at once, so its sync moves at min(450, g x 50) GB/s a GPU (nccl-tests: ~400 GB/s bus bandwidth
    across H100 nodes with eight 400 Gb/s NICs); with one member a node (TP8) it has one NIC, 50 GB/s. Inside one
    node, NVLink's 450. A slip that priced every cross-node ring at one NIC is 8x slow here."""
    def rate(**kw):
        st = tl.training_step("llama-3.1-8b", "h100-sxm", global_batch=64, seq_len=4096, **kw)
        return st.comm_bytes["dp"] / st.comm_s["dp"]
    assert rate(dp=16) == pytest.approx(400e9)                  # 2 nodes, 8 members each
    assert rate(tp=4, dp=4) == pytest.approx(100e9)             # 2 members a node
    assert rate(tp=8, dp=2) == pytest.approx(50e9)              # 1 member a node
    assert rate(dp=8) == pytest.approx(450e9)                   # one node: NVLink


def test_dualpipe_bubble_memory_and_hidden_all_to_all():
    """DualPipe (DeepSeek-V3 report, Table 2) with equal F, B (input gradient) and W chunks: the full backward is
    B + W = 2 units, a paired forward-and-backward chunk F&B = 3, so each stage idles (PP/2 - 1)(F&B + B_full - 3W)
    = 7 x 2 = 14 units at PP = 16, against 64 micro-batches x 3 units of work; 1F1B idles (PP - 1)(F + B_full) =
    15 x 3. Activations: PP + 1 micro-batches on every stage; DualPipe's code asks for an even number of
    micro-batches, at least twice the stages.

    The all-to-all by hand, DeepSeek-V3 at PP16 DP128 EP64 on H100s (Megatron's order puts EP64 on eight nodes,
    so over the NIC at 0.82 x 50 GB/s): each of 32 micro-batches sends 4,096 tokens x 8 experts x 7,168 x 2 bytes,
    63/64 of it away, 4 times (dispatch, combine, forward, backward) in each of the 58/16 MoE layers a stage holds.
    1F1B exposes it whole; DualPipe only past the compute; Megatron's A2A overlap (ep_overlap) the same on 1F1B."""
    from llmmath import memory, parallelism
    assert parallelism.pipeline_bubble_fraction(16, 64, "dualpipe") == pytest.approx(14 / (64 * 3 + 14))
    assert parallelism.pipeline_bubble_fraction(16, 64, "1f1b") == pytest.approx(15 * 3 / (64 * 3 + 15 * 3))
    for stages, m in ((15, 64), (16, 31), (16, 30)):
        with pytest.raises(ValueError, match="even|twice"):
            parallelism.pipeline_bubble_fraction(stages, m, "dualpipe")
    assert memory.pipeline_activation_bytes(1.0, 1, 16, 64, schedule="dualpipe", stage=9) == 17
    kw = dict(global_batch=4096, seq_len=4096, pp=16, dp=128, ep=64, precision="fp8")
    one = tl.predict("deepseek-v3", "h100-sxm", **kw)
    dual = tl.predict("deepseek-v3", "h100-sxm", schedule="dualpipe", **kw)
    a2a_hand = 32 * 4 * 58 / 16 * (63 / 64) * 4096 * 8 * 7168 * 2 / (0.82 * 50e9)
    assert one.terms["ep_exposed_s"] == pytest.approx(a2a_hand, rel=1e-6)
    assert dual.terms["ep_exposed_s"] == pytest.approx(max(0.0, a2a_hand - dual.terms["compute_s"]), rel=1e-6)
    assert dual.memory_bytes["weights"] == pytest.approx(2 * one.memory_bytes["weights"])
    assert dual.memory_bytes["gradients"] == pytest.approx(2 * one.memory_bytes["gradients"])
    assert dual.waterfall[-1][1] == pytest.approx(dual.step_time_s)      # the waterfall ends at the step
    assert dual.step_time_s < one.step_time_s
    over = tl.predict("deepseek-v3", "h100-sxm", ep_overlap=True, **kw)          # Megatron's A2A overlap, 1F1B
    assert over.terms["ep_exposed_s"] == pytest.approx(dual.terms["ep_exposed_s"])
    assert over.terms["bubble_s"] == pytest.approx(one.terms["bubble_s"])
    with pytest.raises(TypeError, match="ep_overlap"):
        tl.predict("deepseek-v3", "h100-sxm", ep_overlap="yes", **kw)


def test_node_deduplicated_dispatch_sends_a_token_once_per_node():
    """ep_dispatch='per_node' (DeepEP's normal kernels, DeepSeek-V3's dispatch): a token crosses the NIC once to each
    other node holding one of its experts. By hand for DeepSeek-V3 at EP64 on eight 8-GPU nodes: 256 experts, 32 a
    node, top-8, so another node holds none of a token's experts with probability C(224, 8) / C(256, 8) and the
    token reaches 7 (1 - that) = 4.63 other nodes, each sent its 7,168 x 2 bytes four times a MoE layer, where the
    per-expert dispatch sends 8 x 63/64 copies. Inside one node nothing changes."""
    import math
    kw = dict(global_batch=4096, seq_len=4096, pp=16, dp=128, ep=64, precision="fp8")
    per_expert = tl.predict("deepseek-v3", "h100-sxm", **kw)
    per_node = tl.predict("deepseek-v3", "h100-sxm", ep_dispatch="per_node", **kw)
    remote = 7 * (1 - math.comb(224, 8) / math.comb(256, 8))
    assert remote == pytest.approx(4.63, abs=0.01)
    hand = 32 * 4 * 58 / 16 * 4096 * 7168 * 2 * remote / (0.82 * 50e9)
    assert per_node.terms["ep_exposed_s"] == pytest.approx(hand, rel=1e-6)
    assert per_node.terms["ep_exposed_s"] / per_expert.terms["ep_exposed_s"] == pytest.approx(remote / (8 * 63 / 64))
    inside = dict(global_batch=256, seq_len=4096, dp=8, ep=8)          # Qwen3-30B-A3B's EP8 in one H100 node
    assert (tl.predict("qwen3-30b-a3b", "h100-sxm", ep_dispatch="per_node", **inside).step_time_s
            == tl.predict("qwen3-30b-a3b", "h100-sxm", **inside).step_time_s)
    with pytest.raises(ValueError, match="ep_dispatch"):
        tl.predict("deepseek-v3", "h100-sxm", ep_dispatch="deepep", **kw)


def test_unfused_attention_moves_the_score_matrices_by_hand():
    """Without FlashAttention (Megatron's core attention before 2023) every s x s tensor goes through HBM. By hand,
    kernel by kernel, in bytes per score element: forward Q K^T writes S (2), softmax reads S and writes P (2 + 2),
    dropout reads P and writes P' and a 1-byte mask (2 + 2 + 1), P' V reads P' (2): 13; backward dO V^T writes dP'
    (2), P'^T dO reads P' (2), dropout's backward reads dP' and the mask and writes dP (2 + 1 + 2), softmax's
    backward reads dP and P and writes dS (2 + 2 + 2), dS K and dS^T Q read dS (2 + 2): 19. GPT-3 5B (32 heads of
    128) at TP 2, micro-batch 2, 2,048 tokens, 3 micro-batches, 24 layers, the attention core recomputed once:
    24 x 3 x 2 x 16 x 2048^2 x (2 x 13 + 19) bytes. The GEMMs cover the full square (no causal saving): two forward
    (Q K^T, P V) and four backward, 2 s^2 d FLOPs each a head, so 2 x 2 + 4 = 8 of them here, priced at the two
    shapes' shares (n = s, k = 128 for Q K^T and dO V^T; n = 128, k = s for the other four) of the A100's 312
    TFLOP/s, and the bytes at the A100 80GB's 2,039 GB/s times the sustained share. A slip that counted only the
    stored tensors (5 bytes an element, Korthikanti et al.), halved the square, or priced four GEMMs a pass fails."""
    from llmmath.predict import gemm_share, sustained
    kw = dict(micro_batch=2, seq_len=2048, tp=2, microbatches=3, layers=24)
    un = tl.unfused_attention_s("nemo-gpt3-5b", "a100-80gb", forward_passes=2, dropout=True, **kw)
    rows = 2 * 16 * 2048                                                   # micro-batch x heads a GPU x queries
    elements = 24 * 3 * rows * 2048
    assert un["score_bytes"] == pytest.approx(elements * (2 * 13 + 19))
    assert tl.unfused_attention_s("nemo-gpt3-5b", "a100-80gb", forward_passes=1, dropout=False, **kw)[
        "score_bytes"] == pytest.approx(elements * (8 + 14))
    one = 2 * rows * 2048 * 128                                            # one GEMM, one micro-batch
    square = gemm_share("a100-80gb", "bf16", rows, 2048, 128)
    tall = gemm_share("a100-80gb", "bf16", rows, 128, 2048)
    per_mb = 2 * (one / square + one / tall) + (one / square + 3 * one / tall)
    assert un["gemm_s"] == pytest.approx(24 * 3 * per_mb / 312e12, rel=1e-3)
    assert un["gemm_s"] > 24 * 3 * 8 * one / 312e12                        # no share above the peak
    assert un["hbm_s"] == pytest.approx(un["score_bytes"] / (2.039e12 * sustained("a100-80gb")["hbm_fraction"]),
                                        rel=1e-3)


def test_unfused_attention_widths_and_refusals():
    """MLA's scores take the query-key width (DeepSeek-V3: 128 + 64 = 192) for Q K^T and the key/query gradients, and
    the value width (128) for the three value GEMMs: at equal shares its GEMM time sits between the all-128 and
    all-192 prices. A model with linear-attention layers has no score matrix to unfuse, and bad sizes are refused."""
    kw = dict(micro_batch=1, seq_len=4096, tp=8, microbatches=1, layers=1)
    mla = tl.unfused_attention_s("deepseek-v3", "h100-sxm", **kw)
    assert mla["score_bytes"] == pytest.approx(16 * 4096 * 4096 * (8 + 14))     # 128 heads / 8, no dropout
    with pytest.raises(ValueError, match="linear-attention"):
        tl.unfused_attention_s("qwen3-next-80b-a3b", "h100-sxm", **dict(kw, tp=1))
    for bad, match in ((dict(layers=0), "layers"), (dict(layers=-3), "layers"), (dict(forward_passes=-1), "forward"),
                       (dict(forward_passes=3), "forward"), (dict(tp=3), "tp=3")):
        with pytest.raises(ValueError, match=match):
            tl.unfused_attention_s("nemo-gpt3-5b", "a100-80gb", **{**kw, **bad})


def test_without_flashattention_the_step_is_slower_and_keeps_its_scores():
    """The unfused path is slower than FlashAttention's (the scores' round trips through HBM), and without
    recomputation its scores stay in memory (Korthikanti et al.'s 5 a s^2 b bytes a layer, a = 32 / TP heads); with
    the block method the layers not recomputed keep theirs (20 of 24 here). Context parallelism needs the fused
    kernel and is refused."""
    kw = dict(global_batch=64, tp=2, dp=4, micro_batch=2, dropout=True)
    for s in (2048, 8192):
        fa = tl.predict("nemo-gpt3-5b", "a100-80gb", seq_len=s, recompute="none", **kw)
        un = tl.predict("nemo-gpt3-5b", "a100-80gb", seq_len=s, recompute="none", flash_attention=False, **kw)
        assert un.step_time_s > fa.step_time_s and un.terms["attention_s"] > 1.5 * fa.terms["attention_s"]
        extra = sum(un.memory_bytes.values()) - sum(fa.memory_bytes.values())
        assert extra == pytest.approx(24 * 5 * 16 * s ** 2 * 2, rel=0.02)        # 5 a s^2 b over 24 layers
    block = dict(kw, seq_len=2048, recompute="full", recompute_layers=4)
    fa = tl.predict("nemo-gpt3-5b", "a100-80gb", **block)
    un = tl.predict("nemo-gpt3-5b", "a100-80gb", flash_attention=False, **block)
    extra = sum(un.memory_bytes.values()) - sum(fa.memory_bytes.values())
    one_layer = 5 * 16 * 2048 ** 2 * 2
    assert extra == pytest.approx(20 * one_layer + one_layer, rel=0.02)   # 20 kept, and the layer being rerun
    with pytest.raises(ValueError, match="flash_attention"):
        tl.predict("nemo-gpt3-5b", "a100-80gb", seq_len=2048, cp=2, flash_attention=False, **dict(kw, dp=2))
    with pytest.raises(TypeError, match="flash_attention"):
        tl.predict("nemo-gpt3-5b", "a100-80gb", seq_len=2048, flash_attention="no", **kw)


def test_without_sequence_parallelism_every_rank_runs_the_norms():
    """Without sequence parallelism the norms and residual adds (outside the tensor-parallel region) run on the whole
    sequence on every one of the TP ranks: at TP 4 the elementwise time grows by 3 x their bytes, by hand from
    training.elementwise_bytes_per_token's norms (10 h) and residual adds (12 h) a layer; at TP 1 nothing changes."""
    from llmmath import training
    kw = dict(global_batch=64, seq_len=4096, tp=4, dp=2)
    on = tl.predict("llama-3.1-8b", "h100-sxm", **kw)
    off = tl.predict("llama-3.1-8b", "h100-sxm", sequence_parallel=False, **kw)
    ew = training.elementwise_bytes_per_token("llama-3.1-8b")
    assert ew["norms"] + ew["residual"] == pytest.approx(2 * 32 * (10 + 12) * 4096)
    ratio = off.terms["elementwise_s"] / on.terms["elementwise_s"]
    assert ratio == pytest.approx((ew["total"] + 3 * (ew["norms"] + ew["residual"])) / ew["total"], rel=1e-6)
    assert sum(off.memory_bytes.values()) > sum(on.memory_bytes.values())
    one = dict(kw, tp=1, dp=8)
    assert tl.predict("llama-3.1-8b", "h100-sxm", sequence_parallel=False, **one).step_time_s == pytest.approx(
        tl.predict("llama-3.1-8b", "h100-sxm", **one).step_time_s)


def test_kernel_launches_count_the_kernels_predict_prices_by_hand():
    """Llama 3.1 8B, one GPU's stage of all 32 layers: four GEMM families a layer (QKV, output, gate-and-up, down),
    three GEMMs each (forward, input and weight gradient), and the LM head's three: 32 x 12 + 3 = 387; fused
    attention forward and backward, 64; six elementwise kernels a layer forward (two norms, two residual adds,
    RoPE, SwiGLU), as many backward, and the embedding and the loss both ways: 32 x 12 + 4 = 388; selective
    recompute reruns the attention core, 32. Total 871. TP4 adds four collectives a layer (128); full
    recomputation reruns every forward kernel (128 GEMMs, 32 attention, 192 elementwise, 64 collectives). A slip that
    counted a family once instead of three times, or forgot the backward's elementwise kernels, fails."""
    n = tl.kernel_launches("llama-3.1-8b")
    assert (n["gemm"], n["attention"], n["elementwise"], n["recomputed"], n["total"]) == (387, 64, 388, 32, 871)
    full = tl.kernel_launches("llama-3.1-8b", tp=4, recompute="full")
    assert full["collectives"] == 128 and full["recomputed"] == 128 + 32 + 192 + 64
    assert tl.kernel_launches("llama-3.1-8b", pp=4)["gemm"] == 8 * 12 + 3     # a stage of 8 layers (+ the head)
    with pytest.raises(ValueError, match="recompute"):
        tl.kernel_launches("llama-3.1-8b", recompute="some")


def test_kernel_launches_count_moe_fp8_unfused_and_split_layers_by_hand():
    """Qwen3-30B-A3B under EP8 (48 MoE layers, no shared expert): QKV, output, the two routed families and the router,
    5 families a layer, 3 GEMMs each, + the head: 3 x (5 x 48 + 1) = 723; 96 attention; elementwise a layer forward
    two norms, two residual adds, RoPE, the activation, the router's top-k, permute, unpermute (9): 2 x 9 x 48 + 4
    = 868; four all-to-alls a layer, 192. Total 1,879. Llama 3.1 8B in fp8 adds a gradient cast a GEMM family and
    the attention output's, 4 x 32 + 32 = 160 kernels. NeMo's GPT-3 5B unfused with dropout (24 layers): 4 + 6
    attention kernels a layer, 240. Llama 3.1 8B split over CP2 and PP4 with two chunks a GPU: a stage's 8 layers
    (8 x 12 + 3 GEMMs, 16 attention, 8 x 12 + 4 elementwise) and three context gathers a layer plus a send each way
    a chunk, 24 + 4. Jamba 1.5 Mini: 28 Mamba layers, two projections (three GEMMs each) and a scan each way."""
    q = tl.kernel_launches("qwen3-30b-a3b", ep=8, recompute="none")
    assert (q["gemm"], q["attention"], q["elementwise"], q["collectives"], q["total"]) == (723, 96, 868, 192, 1879)
    assert tl.kernel_launches("llama-3.1-8b", fp8=True)["elementwise"] == 388 + 160
    assert tl.kernel_launches("nemo-gpt3-5b", flash_attention=False, dropout=True)["attention"] == 24 * (4 + 6)
    split = tl.kernel_launches("llama-3.1-8b", cp=2, pp=4, chunks=2, recompute="none")
    assert (split["gemm"], split["attention"], split["elementwise"], split["collectives"]) == (99, 16, 100, 28)
    j, jamba = tl.kernel_launches("jamba-1.5-mini", recompute="none"), tl.models.get("jamba-1.5-mini")
    assert jamba.n_linear_layers == 28 and j["attention"] == 2 * 4 + 2 * 28
    # its GEMM families: QKV and output on 4 attention layers, up and down on 16 dense MLPs, the two routed
    # families and the router on 16 MoE layers, a mixer's two projections on 28: 8 + 32 + 48 + 56 = 144, + the head
    assert j["gemm"] == 3 * (144 + 1)
    with pytest.raises(ValueError, match="layers"):
        tl.kernel_launches("llama-3.1-8b", pp=64)
    with pytest.raises(TypeError, match="fp8"):
        tl.kernel_launches("llama-3.1-8b", fp8="yes")


def test_the_host_shows_only_where_it_outruns_the_gpu():
    """Eager PyTorch launches a kernel in 13.0 us (the median of NVIDIA's microbenchmark sample, 11.3-17.7 us). Llama 3.1
    8B under TP4 at 4k tokens a micro-batch: 871 kernels + 4 x 32 tensor-parallel collectives = 999 launches, 13.0 ms of
    host time against 76 ms on the GPU: hidden. Llama 3.2 1B at 256 tokens a micro-batch on one of 8 GPUs: 423 launches
    (16 x 12 + 3 GEMMs, 32 attention, 16 x 12 + 4 elementwise), 5.5 ms a micro-batch, longer than the GPU's: the step
    pays the excess on every micro-batch and takes the host's 8 x 5.5 ms and then the step's last gradient sync. CUDA
    graphs charge nothing, nor does a TPU (XLA runs the step as one program). A slip that charged the host's time whole,
    or once a step, fails."""
    t = 13.0e-6
    big = tl.predict("llama-3.1-8b", "h100-sxm", recompute="selective", **KW)
    assert big.terms["host_exposed_s"] == 0.0 and "999 launches" in big.waterfall[-1][0]
    assert big.terms["host_s"] == pytest.approx(big.layout["microbatches"] * 999 * t)
    small = tl.predict("llama-3.2-1b", "h100-sxm", global_batch=64, seq_len=256, dp=8, recompute="none")
    mbs = small.layout["microbatches"]
    assert mbs == 8 and small.terms["host_s"] == pytest.approx(mbs * 423 * t)
    gpu = small.step_time_s - small.terms["host_exposed_s"]              # the step without the host's excess
    sync = small.terms["dp_exposed_s"]            # the step's last gradient sync, after the host's last launch
    assert small.terms["host_exposed_s"] == pytest.approx(mbs * 423 * t - (gpu - sync), rel=1e-6)
    assert small.step_time_s == pytest.approx(mbs * 423 * t + sync)      # the host's pace, then the sync
    graphed = tl.predict("llama-3.2-1b", "h100-sxm", global_batch=64, seq_len=256, dp=8, recompute="none",
                         cuda_graphs=True)
    assert graphed.terms["host_s"] == 0.0 and graphed.step_time_s == pytest.approx(gpu)
    assert "CUDA graphs" in graphed.waterfall[-1][0] and "423 launches" in small.waterfall[-1][0]
    tpu = tl.predict("llama-3.2-1b", "tpu-v6e", global_batch=64, seq_len=256, dp=8, recompute="none")
    assert tpu.terms["host_s"] == 0.0 and tpu.terms["host_exposed_s"] == 0.0
    with pytest.raises(TypeError, match="cuda_graphs"):
        tl.predict("llama-3.2-1b", "h100-sxm", global_batch=64, seq_len=256, dp=8, cuda_graphs="yes")


def test_a_host_bound_pipeline_fills_and_drains_at_the_hosts_pace():
    """Llama 3.2 1B on PP4 at 128 tokens a micro-batch, 8 micro-batches: each stage's 4 layers launch 4 x 12 + 3 +
    8 + 4 x 12 + 4 + 2 = 113 kernels, 1.47 ms, against well under a millisecond of GPU work. Under 1F1B the step
    takes m + p - 1 = 11 slots of the slower of the two: 11 x 1.47 = 16.2 ms (the host's own pace through the fill
    and drain), not the GPU-paced bubble on top of 8 host-paced slots."""
    p = tl.predict("llama-3.2-1b", "h100-sxm", global_batch=8, seq_len=128, pp=4, dp=1, recompute="none")
    assert tl.kernel_launches("llama-3.2-1b", pp=4, recompute="none")["total"] == 113
    assert p.step_time_s == pytest.approx(11 * 113 * 13.0e-6, rel=1e-6)
    # with the tensor-parallel transfers exposed the GPU is busier, but still behind the host: TP2 adds four
    # collectives a layer, 113 + 16 = 129 launches, and the step is again 11 slots of the host's
    tp2 = tl.predict("llama-3.2-1b", "h100-sxm", global_batch=8, seq_len=128, pp=4, tp=2, dp=1, recompute="none",
                     tp_overlap=False)
    assert tp2.step_time_s == pytest.approx(11 * 129 * 13.0e-6, rel=1e-6)
    assert tp2.terms["bubble_s"] < tp2.terms["host_exposed_s"]           # the host's pacing is booked as host time


def test_partial_recompute_launches_its_share_of_the_forward_again():
    """Megatron's block method with 2 of a chunk's 8 layers recomputed (Llama 3.1 8B, PP4): each micro-batch
    launches the stage's kernels without recompute (217) and a quarter of the full recompute's extra (305 - 217):
    239 launches, 32 micro-batches, at 13.0 us."""
    p = tl.predict("llama-3.1-8b", "h100-sxm", global_batch=64, seq_len=4096, tp=1, pp=4, dp=2, recompute="full",
                   recompute_layers=2)
    none, full = (tl.kernel_launches("llama-3.1-8b", pp=4, recompute=r)["total"] for r in ("none", "full"))
    assert (none, full) == (217, 305)
    assert p.terms["host_s"] == pytest.approx(32 * (217 + (305 - 217) / 4) * 13.0e-6)


def test_schedules_that_split_the_backward_fill_their_bubble_at_the_priced_phase_times():
    """ZB-H1 idles (p - 1)(T_F + T_B - T_W) a stage against m (T_F + T_B + T_W) of work (Qi et al.): with the
    weight gradient a third of the linear layers' time (selective recompute runs each GEMM family's three GEMMs
    once) and everything else in the forward and input gradient, bubble / compute = (p - 1)/m x (1 - 2 T_W /
    compute), less than with equal phases' 1/3 because attention, the elementwise kernels and the loss add to F and
    B only. Full recompute adds a forward to B, so its share of idle grows. ZB-V keeps 1F1B's memory, and its
    bubble (simulated at the same times) is below ZB-H1's once m >= 2p - 1."""
    kw = dict(global_batch=64, seq_len=8192, tp=8, pp=4, dp=1)
    zb = tl.predict("llama-3.1-70b", "h100-sxm", schedule="zero-bubble", **kw)
    p, m, t = 4, 64, zb.terms
    hand = (p - 1) / m * (1 - 2 * (t["linear_s"] / 3) / t["compute_s"])
    assert t["bubble_s"] / t["compute_s"] == pytest.approx(hand, rel=1e-9)
    assert t["bubble_s"] / t["compute_s"] > (p - 1) / (3 * m) * 1.05       # not the equal-phase third
    full = tl.predict("llama-3.1-70b", "h100-sxm", schedule="zero-bubble", recompute="full", **kw)
    assert full.terms["bubble_s"] / full.terms["compute_s"] > t["bubble_s"] / t["compute_s"]
    vee = tl.predict("llama-3.1-70b", "h100-sxm", schedule="zb-v", **kw)
    one = tl.predict("llama-3.1-70b", "h100-sxm", **kw)
    assert vee.terms["bubble_s"] < t["bubble_s"] < one.terms["bubble_s"]
    assert vee.memory_bytes["activations"] == pytest.approx(one.memory_bytes["activations"], rel=0.02)
    assert vee.terms["pp_exposed_s"] == pytest.approx(2 * one.terms["pp_exposed_s"])


def test_zbv_bubble_in_predict_is_the_schedule_at_the_phases_predict_prices():
    """The phases by hand for Llama 3.1 70B without recomputation: the weight gradient is a third of the linear
    layers; the forward another third, attention's forward (a third of its FLOPs at FlashAttention-3's forward bar,
    the rest at its backward bar) and the forward's share of the elementwise bytes; the input gradient the rest. At
    those times predict's ZB-V bubble is the simulated schedule's (64 micro-batches, 4 stages): swapping forward and
    input gradient, or pricing equal phases, fails. GPU 0 computes the loss, so it holds the logits."""
    from llmmath import parallelism, training
    kw = dict(global_batch=64, seq_len=8192, tp=8, pp=4, dp=1, recompute="none")
    p = tl.predict("llama-3.1-70b", "h100-sxm", schedule="zb-v", **kw)
    t = p.terms
    sf, sb = tl.attention_share(8192, False), tl.attention_share(8192, True)
    attn_fwd = t["attention_s"] * (1 / sf) / (1 / sf + 2 / sb)
    ew = training.elementwise_bytes_per_token("llama-3.1-70b", recompute="full")
    ew_fwd = t["elementwise_s"] * ew["recomputed forward"] / (ew["total"] - ew["recomputed forward"])
    assert t["phase_weight_grad_s"] == pytest.approx(t["linear_s"] / 3, rel=1e-9)
    assert t["phase_forward_s"] == pytest.approx(t["linear_s"] / 3 + attn_fwd + ew_fwd, rel=1e-9)
    assert t["phase_input_grad_s"] == pytest.approx(t["compute_s"] - t["phase_forward_s"] - t["linear_s"] / 3,
                                                    rel=1e-9)
    sim = parallelism.zbv_schedule(4, 64, t["phase_forward_s"], t["phase_input_grad_s"], t["phase_weight_grad_s"])
    assert t["bubble_s"] / (t["compute_s"] + t["bubble_s"]) == pytest.approx(sim["bubble_fraction"], rel=1e-9)
    assert "logits" in p.memory_bytes
    # full recomputation runs the forward's GEMMs twice: four passes of the linear layers, the weight gradient one
    full = tl.predict("llama-3.1-70b", "h100-sxm", schedule="zb-v", **{**kw, "recompute": "full"}).terms
    assert full["phase_weight_grad_s"] == pytest.approx(full["linear_s"] / 4, rel=1e-9)
    # ZB-V's middle GPUs send and receive for both chunks: two more launches a micro-batch than 1F1B's (64 of them)
    one = tl.predict("llama-3.1-70b", "h100-sxm", **kw).terms
    assert t["host_s"] - one["host_s"] == pytest.approx(64 * 2 * 13.0e-6, rel=1e-9)


def test_zbv_logits_go_to_the_first_gpu_even_where_another_was_busier_without_them():
    """Under ZB-V the first GPU computes the loss. Llama 3.1 70B at PP8 with 8 micro-batches of 4,096 tokens: without
    the logits the last GPU (the V's bottom, all its micro-batches in flight) holds the most, but GPU 0 with its
    logits (4,096 x 128,256 / TP values in fp32) holds more: the reported GPU
    is the first, with the logits."""
    kw = dict(global_batch=8, seq_len=4096, tp=8, pp=8, dp=1, schedule="zb-v")
    st = tl.training_step("llama-3.1-70b", "h100-sxm", **kw)
    p = tl.predict("llama-3.1-70b", "h100-sxm", **kw)
    assert st.stage != 0
    logits = p.memory_bytes["logits"]
    assert logits == pytest.approx(4096 * 128256 / 8 * tl.training_constants()["memory"]["logit_bytes"])
    assert sum(st.stage_memory_bytes[0].values()) + logits > st.total_bytes
    assert p.memory_bytes["weights"] == pytest.approx(st.stage_memory_bytes[0]["weights"])
