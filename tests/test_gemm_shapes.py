"""GEMMs at their own shapes (predict.gemm_share) and a training step's linear layers (training_layout.linear_gemms,
linear_share). Expected values are typed from NVIDIA AIConfigurator's raw table (a GEMM's measured latency), Stas
Bekman's best-shape matmul measurements, or model configs, and derived by hand."""

import pytest

from llmmath import predict, training_layout as tl

H100_BF16 = 989.4e12        # H100 SXM datasheet, dense bf16


def test_a_grid_point_is_its_measured_latency_and_the_axes_are_not_swapped():
    # aiconfigurator systems/data/h100_sxm/gemm/trtllm/1.2.0rc5/gemm_perf.parquet, bfloat16 rows (latency in ms):
    # m 4,096 n 1,024 k 4,096: 0.04525973; m 4,096 n 4,096 k 1,024: 0.05172587. Same FLOPs, different shares: a slip
    # that read n for k (or m for n) gives the other row's share.
    for (m, n, k), ms in (((4096, 1024, 4096), 0.04525973), ((4096, 4096, 1024), 0.05172587)):
        assert predict.gemm_share("h100-sxm", "bf16", m, n, k) == pytest.approx(2 * m * n * k / (ms * 1e-3) / H100_BF16,
                                                                                abs=0.001)
    # between grid points the share lies between its neighbours (linear in log2 of the size)
    lo, hi = (predict.gemm_share("h100-sxm", "bf16", 4096, n, 4096) for n in (1024, 2048))
    assert min(lo, hi) <= predict.gemm_share("h100-sxm", "bf16", 4096, 1448, 4096) <= max(lo, hi)


def test_small_gemms_reach_less_of_the_peak_and_none_beats_the_best_shape():
    for chip in ("a100-80gb", "h100-sxm", "h200", "b200", "gb200", "b300", "gb300"):
        big, mid, small = (predict.gemm_share(chip, "bf16", 4096, w, w) for w in (8192, 1024, 256))
        assert small < 0.6 * big and mid < big, chip
    # Stas Bekman's maximum achievable matmul FLOPS (ml-engineering, compute/accelerator/README.md; torch matmul, the
    # best of a shape search, CUDA 12.1): A100 SXM 267.9 of 312 at 6912 x 16384 x 2048, H100 SXM 792.1 of 989 at
    # 6144 x 17920 x 2816. A measured layer at that shape reaches no more than the best, and not far less.
    for chip, shape, best in (("a100-80gb", (6912, 16384, 2048), 267.9 / 312),
                              ("h100-sxm", (6144, 17920, 2816), 792.1 / 989)):
        assert 0.8 * best < predict.gemm_share(chip, "bf16", *shape) < best
    # 8-bit formats keep bf16's shape profile at their own level (H100: 0.525 / 0.745 of the bf16 share)
    assert predict.gemm_share("h100-sxm", "fp8", 4096, 1024, 1024) == pytest.approx(
        predict.gemm_share("h100-sxm", "bf16", 4096, 1024, 1024) * 0.525 / 0.745)
    # a chip without a grid: its level whatever the shape; the A100 40GB reads the 80GB's grid
    assert predict.gemm_share("tpu-v6e", "bf16", 4096, 256, 256) == predict.matmul_fraction("tpu-v6e") == 0.75
    assert predict.gemm_share("a100-40gb", "bf16", 4096, 512, 512) == predict.gemm_share("a100-80gb", "bf16", 4096,
                                                                                         512, 512)
    for bad in (0, -4, float("nan")):
        with pytest.raises(ValueError, match="m"):
            predict.gemm_share("h100-sxm", "bf16", bad, 1024, 1024)


def test_llama_3_1_70b_linear_layers_by_hand():
    """Llama 3.1 70B (config.json): d 8,192, 64 query and 8 key-value heads of 128, gated MLP 28,672, vocabulary
    128,256, 80 layers. At TP8 a GPU holds the fused query-key-value slice 8,192 x (8,192 + 2 x 1,024) / 8 = 1,280
    columns, the output projection's 1,024 rows, the MLP's 2 x 28,672 / 8 = 7,168 columns and 3,584 rows, and
    128,256 / 8 = 16,032 columns of the LM head. The families' forward FLOPs add to twice the matmul weights."""
    g = {name: (f, m, d_in, d_out) for name, f, m, d_in, d_out, grouped in
         tl.linear_gemms("llama-3.1-70b", micro_batch=1, seq_len=8192, tp=8) if grouped == 1}
    assert [v[2:] for v in g.values()] == [(8192, 1280), (1024, 8192), (8192, 7168), (3584, 8192), (8192, 16032)]
    assert all(v[1] == 8192 for v in g.values())                      # a micro-batch's tokens, gathered over TP
    per_layer = 8192 * (8192 + 2 * 1024) + 8192 * 8192 + 3 * 8192 * 28672
    assert sum(v[0] for v in g.values()) == pytest.approx(2 * (80 * per_layer + 8192 * 128256), rel=1e-12)


def test_a_routed_expert_sees_its_share_of_the_expert_groups_tokens():
    """DeepSeek-V3: 8 of 256 experts a token, experts 7,168 -> 2 x 2,048 (gated) -> 7,168. With EP64 and 4,096
    tokens a GPU, one expert receives 4,096 x 8 x 64 / 256 = 8,192 rows; Qwen3-30B-A3B (8 of 128, d 2,048, expert
    768) at EP8: 4,096 x 8 x 8 / 128 = 2,048 rows of a GEMM 2,048 -> 1,536 for each of its 16 local experts."""
    g = {name: (m, d_in, d_out, grouped) for name, _, m, d_in, d_out, grouped
         in tl.linear_gemms("deepseek-v3", seq_len=4096, ep=64)}
    assert g["routed expert up (and gate)"] == (8192, 7168, 4096, 4) and g["routed expert down"] == (8192, 2048, 7168, 4)
    q = {name: (m, d_in, d_out, grouped) for name, _, m, d_in, d_out, grouped
         in tl.linear_gemms("qwen3-30b-a3b", seq_len=4096, ep=8)}
    assert q["routed expert up (and gate)"] == (2048, 2048, 1536, 16)         # 128 / 8 local experts, one grouped GEMM
    # the 16 local experts run as one grouped GEMM, priced as 16 x 2,048 rows forward and for the input gradient and
    # 16 x 2,048 rows of 1,536 columns for the weight gradient, whose inner size stays an expert's 2,048 tokens: a
    # slip that priced each expert alone would read the grid at 2,048 rows
    one = {name: v for name, *v in tl.linear_gemms("qwen3-30b-a3b", seq_len=4096, ep=8)}
    f_up, f_down = one["routed expert up (and gate)"][0], one["routed expert down"][0]
    s = lambda m, n, k: predict.gemm_share("h100-sxm", "bf16", m, n, k)       # noqa: E731
    t_up = f_up * (1 / s(32768, 1536, 2048) + 1 / s(32768, 2048, 1536) + 1 / s(32768, 1536, 2048))
    t_down = f_down * (1 / s(32768, 2048, 768) + 1 / s(32768, 768, 2048) + 1 / s(12288, 2048, 2048))
    experts_only = 3 * (f_up + f_down) / (t_up + t_down)
    others = [v for name, *v in tl.linear_gemms("qwen3-30b-a3b", seq_len=4096, ep=8) if "routed" not in name]
    t_rest = sum(f * (1 / s(m, o, i) + 1 / s(m, i, o) + 1 / s(i, o, m)) for f, m, i, o, _ in others)
    f_all = f_up + f_down + sum(v[0] for v in others)
    assert tl.linear_share("qwen3-30b-a3b", "h100-sxm", seq_len=4096, ep=8) == pytest.approx(
        3 * f_all / (t_up + t_down + t_rest), rel=1e-9)
    assert 0.5 < experts_only < 0.85
    alone = f_up * (2 / s(2048, 1536, 2048) + 1 / s(2048, 1536, 2048))     # one expert's forward by itself, for scale
    assert alone > f_up * 3 / 0.85
    # a chip without a shape grid prices every GEMM at its level
    assert tl.linear_share("llama-3.1-8b", "tpu-v6e", seq_len=4096) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="precision"):
        tl.linear_share("llama-3.1-8b", "h100-sxm", "fp16", seq_len=4096)
