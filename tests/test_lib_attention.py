"""Tests of llmmath.attention and llmmath.demos.attention_kernels; expectations derived by hand from configs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmmath import attention as A
from llmmath import attention_kernels as AK
from llmmath import kernels, models


# ---- FLOPs, bytes, intensity per variant ------------------------------------------------------

def test_llama70b_gqa_flops_and_bytes_at_4096_by_hand():
    # config.json: 80 layers, 64 heads, 8 kv heads, head_dim 128.
    L = 4096
    flops = 80 * (2 * 64 * 128 + 2 * 64 * 128) * L      # q.k and p.v for 64 heads, each 2 FLOPs per MAC
    by = 80 * 2 * 8 * 128 * 2 * L                       # K and V for 8 kv heads at 2 bytes
    assert A.decode_attention_flops("llama-3.1-70b", L) == flops == 10_737_418_240
    assert A.decode_attention_bytes("llama-3.1-70b", L) == by == 1_342_177_280
    assert A.arithmetic_intensity("llama-3.1-70b") == flops / by == 8.0


def test_native_variant_matches_models_module():
    for name in ("llama-2-7b", "llama-3.1-8b", "qwen3-235b-a22b", "deepseek-v3", "kimi-k2"):
        m = models.get(name)
        assert A.decode_attention_flops(m, 1000) == pytest.approx(m.attention_flops_per_token(1000))
        assert A.decode_attention_bytes(m, 1000) == pytest.approx(1000 * m.kv_bytes_per_token())


def test_mha_mqa_gqa_intensity_is_2G_over_b():
    assert A.arithmetic_intensity("llama-2-7b") == 1.0                     # MHA, bf16
    assert A.arithmetic_intensity("llama-3.1-8b", "fp8") == 2 * 4 / 1      # G = 32/8, 1 byte
    assert A.arithmetic_intensity("llama-3.1-70b", variant="MQA") == 64.0   # one kv head: G = 64
    assert A.arithmetic_intensity("llama-3.1-70b", variant="MHA") == 1.0
    # splitting heads over <= n_kv chips keeps GQA's intensity
    assert A.arithmetic_intensity("llama-3.1-70b", heads_split=8) == 8.0


def test_mla_variants_by_hand_deepseek_v3():
    # 128 heads, kv_lora_rank 512, rope 64, nope 128, v 128.
    assert A.flops_per_cached_token("deepseek-v3", "MLA-absorbed") == 2 * 128 * (2 * 512 + 64)
    assert A.bytes_per_cached_token("deepseek-v3", "bf16", "MLA-absorbed") == (512 + 64) * 2
    absorbed = 2 * 128 * (2 * 512 + 64) / ((512 + 64) * 2)
    assert A.arithmetic_intensity("deepseek-v3") == pytest.approx(absorbed)
    assert 200 < absorbed < 300
    assert A.arithmetic_intensity("deepseek-v3", heads_split=4) == pytest.approx(absorbed / 4)
    recomputed = 2 * 512 * 128 * (128 + 128) + 2 * 128 * (192 + 128)
    assert A.flops_per_cached_token("deepseek-v3", "MLA-recomputed") == recomputed
    assert A.bytes_per_cached_token("deepseek-v3", "bf16", "MLA-expanded") == 128 * (192 + 128) * 2
    assert A.arithmetic_intensity("deepseek-v3", variant="MLA-expanded") == 1.0


def test_memory_bound_margin_against_datasheet_ridges():
    assert A.memory_bound_margin("llama-3.1-70b", "h100-sxm") == pytest.approx(989.5e12 / 3.35e12 / 8)
    assert A.memory_bound_margin("deepseek-v3", "h200") < 1 < A.memory_bound_margin("deepseek-v3", "h100-sxm")


def test_bad_variants_and_splits_are_refused():
    with pytest.raises(ValueError, match="variant must be one of"):
        A.flops_per_cached_token("llama-3.1-70b", "MLA-absorbed")
    with pytest.raises(ValueError, match="variant must be one of"):
        A.bytes_per_cached_token("deepseek-v3", "bf16", "GQA")
    with pytest.raises(ValueError, match="heads_split must divide"):
        A.arithmetic_intensity("llama-3.1-70b", heads_split=3)
    with pytest.raises(ValueError, match="heads_split"):
        A.arithmetic_intensity("llama-3.1-70b", heads_split=0)
    with pytest.raises(KeyError):
        A.arithmetic_intensity("llama-9")
    with pytest.raises(ValueError, match="context must be >= 0"):
        A.decode_attention_flops("llama-3.1-8b", -1)


# ---- the crossover context ------------------------------------------------------------------

def test_crossover_llama70b_h100_by_hand():
    n_mm = 70_553_706_496 - 128_256 * 8_192
    beta, a = 2 * 80 * 8 * 128 * 2, 4 * 64 * 128 * 80
    hand = 2 * n_mm / (989.5e12 * beta / 3.35e12 - a)
    assert A.kv_crossover_context("llama-3.1-70b", "h100-sxm") == pytest.approx(hand, rel=1e-12)
    assert 1400 < hand < 1550


def test_crossover_is_infinite_when_attention_outruns_the_ridge():
    assert math.isinf(A.kv_crossover_context("deepseek-v3", "h200"))
    assert math.isfinite(A.kv_crossover_context("deepseek-v3", "h100-sxm"))
    assert np.all(np.isinf(A.crossover_context_at_batch("deepseek-v3", "h200", [1e3, 1e5])))


def test_crossover_at_batch_matches_decode_step_and_tends_to_L_star():
    from llmmath import serving
    B = np.array([2e3, 1e4, 1e6])
    lb = A.crossover_context_at_batch("llama-3.1-8b", "h200", B)
    s = serving.decode_step("llama-3.1-8b", "h200", B, lb, check_capacity=False)
    assert np.allclose(s.compute_s, s.memory_s, rtol=1e-6)
    assert lb[-1] == pytest.approx(A.kv_crossover_context("llama-3.1-8b", "h200"), rel=1e-3)
    assert A.crossover_context_at_batch("llama-3.1-8b", "h200", 1) == 0.0   # memory-bound already at L = 0


# ---- sparse byte models --------------------------------------------------------------------

def test_sparse_byte_models_by_hand():
    assert A.indexer_topk_kv_bytes(131072, 2048, 1152, 132) == 131072 * 132 + 2048 * 1152
    assert A.block_topk_kv_bytes(10_000, 64, 16, 100, 10) == math.ceil(10_000 / 64) * 10 + 16 * 64 * 100
    assert A.nsa_kv_bytes(100_000, 10) == (100_000 // 16 + 16 * 64 + 512) * 10
    assert A.quest_kv_bytes(100_000, 10, 5, 2048, 16) == math.ceil(100_000 / 16) * 2 * 5 + 2048 * 10
    assert A.moba_kv_bytes(1000, 10, 5, 512, 3) == 2 * 5 + 1000 * 10   # short context: all of it


def test_sqrt_law_needs_block_size_growing_as_sqrt_L():
    L = np.geomspace(1e4, 1e8, 9)
    s, by = A.block_topk_optimal(L, 16, 1152, 576)
    assert np.allclose(A.loglog_slope(L, by), 0.5)
    assert np.allclose(s, np.sqrt(L * 576 / (16 * 1152)))
    # fixed block size: slope tends to 1
    fixed = A.block_topk_kv_bytes(L * 1e4, 64, 16, 1152, 576)
    assert A.loglog_slope(L * 1e4, fixed)[-1] > 0.99
    # the optimum beats nearby block sizes
    for f in (0.5, 2.0):
        assert A.block_topk_kv_bytes(1e6, s[4] * f, 16, 1152, 576) > by[4] * 0.999


def test_sparse_bad_input_is_refused():
    with pytest.raises(ValueError, match="larger than the context"):
        A.indexer_topk_kv_bytes(1000, 2048, 1152, 132)
    assert A.indexer_topk_kv_bytes(1000, 2048, 1152, 132, clip=True) == 1000 * (132 + 1152)
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        A.block_topk_kv_bytes(1000, 0.5, 2, 10, 1)
    with pytest.raises(ValueError, match="block_size must be > 0"):
        A.block_topk_kv_bytes(1000, 0, 2, 10, 1)
    with pytest.raises(ValueError, match="top_k_blocks"):
        A.block_topk_kv_bytes(1000, 64, 0, 10, 1)
    with pytest.raises(ValueError, match="larger than the context"):
        A.block_topk_kv_bytes(1000, 64, 16, 10, 1)
    with pytest.raises(ValueError, match="finite"):
        A.dense_kv_bytes(float("nan"), 10)
    with pytest.raises(ValueError, match="page must be >= 1"):
        A.quest_kv_bytes(1000, 10, 5, 100, 0.5)
    with pytest.raises(ValueError, match="need two 1-d arrays"):
        A.loglog_slope([1.0], [2.0])


def test_published_parameters_are_recorded_with_sources():
    assert A.PUBLISHED["DSA"]["index_topk"] == 2048 and A.PUBLISHED["DSA"]["index_key_bytes"] == 132
    assert A.PUBLISHED["NSA"]["select_block"] * A.PUBLISHED["NSA"]["select_blocks"] == 1024
    m = A.PUBLISHED["MoBA"]
    assert 1 - m["long_top_k"] * m["long_block"] / 2**20 == pytest.approx(0.953125)
    assert all("arXiv" in p["source"] or "config" in p["source"] for p in A.PUBLISHED.values())


# ---- kernels (CPU path; the fused CUDA kernel is checked by benchmarks/gpu_attention.py) ---------

@pytest.mark.parametrize("B,Hq,Hkv,L,D", [(2, 8, 2, 100, 64), (1, 32, 8, 513, 128), (3, 4, 4, 7, 32), (1, 8, 1, 65, 64)])
def test_decode_attention_matches_reference(B, Hq, Hkv, L, D):
    q, k, v = AK.random_cache(B, Hq, Hkv, L, D, seed=B + L, be=kernels._cpu_backend())
    ref = AK.reference_decode_attention(q, k, v)
    out = AK.decode_attention(q, k, v, method="numpy")
    assert out.dtype == np.float32 and out.shape == (B, Hq, D)
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max() + 1e-6
    # a hand check of one head: softmax(q k^T / sqrt(D)) v
    s = k[0, 0].astype(float) @ q[0, 0].astype(float) / math.sqrt(D)
    p = np.exp(s - s.max()); p /= p.sum()
    assert np.allclose(out[0, 0], p @ v[0, 0], atol=1e-5)


def test_fp16_cache_on_cpu_is_upcast_and_correct():
    q, k, v = AK.random_cache(1, 8, 2, 200, 64, dtype="fp16", be=kernels._cpu_backend())
    assert k.dtype == np.float16
    assert np.allclose(AK.decode_attention(q, k, v, method="numpy"), AK.reference_decode_attention(q, k, v), atol=1e-4)


@pytest.mark.parametrize("block_size", [16, 33, 64, 100])
def test_block_sparse_with_all_blocks_is_dense_and_subset_is_exact(block_size):
    q, k, v = AK.random_cache(2, 8, 2, 300, 64, be=kernels._cpu_backend())
    n = -(-300 // block_size)
    ref = AK.reference_decode_attention(q, k, v)
    assert np.allclose(AK.block_sparse_decode_attention(q, k, v, block_size, n, method="numpy"), ref, atol=1e-5)
    top = min(3, n)
    blocks = AK.select_blocks(q, AK.block_summaries(k, block_size), top)
    out = AK.block_sparse_decode_attention(q, k, v, block_size, top, blocks=blocks, method="numpy")
    for b in range(2):
        for h in range(2):
            t = (blocks[b, h][:, None] * block_size + np.arange(block_size)).ravel()
            t = t[t < 300]
            r = AK.reference_decode_attention(q[b:b + 1, 4 * h:4 * h + 4], k[b:b + 1, h:h + 1, t], v[b:b + 1, h:h + 1, t])
            assert np.allclose(out[b, 4 * h:4 * h + 4], r[0], atol=1e-5)


@pytest.mark.parametrize("B,Hq,Hkv,L,D,ctx", [(1, 32, 8, 1024, 128, 1024), (2, 8, 2, 768, 64, 512),
                                               (1, 4, 4, 512, 128, 256), (1, 16, 2, 256, 192, 256)])
def test_paged_cache_matches_reference(B, Hq, Hkv, L, D, ctx):
    q, k, v = AK.random_cache(B, Hq, Hkv, L, D, seed=L + D, be=kernels._cpu_backend())
    paged = AK.PagedKV(k, v)
    # the pages hold the same numbers: K page j, column t is token 64 j + t
    assert np.array_equal(paged.kt[0, 0, 1, :, 5], k[0, 0, 64 + 5])
    if L >= 512 and D >= 128:   # V block (page 1, columns 64..127), row 3 is token 259
        assert np.array_equal(paged.vb[0, 0, 1, 1, 3], v[0, 0, 256 + 3, 64:128])
    ref = AK.reference_decode_attention(q, k[:, :, :ctx], v[:, :, :ctx])
    out = paged.attend(q, ctx)
    assert out.dtype == np.float32 and out.shape == (B, Hq, D)
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max() + 1e-6
    # scores far apart (a query 30x larger) stay finite: the softmax subtracts each row's own max
    big = paged.attend(q * 30, ctx)
    assert np.isfinite(big).all()
    assert np.allclose(big, AK.reference_decode_attention(q * 30, k[:, :, :ctx], v[:, :, :ctx]), atol=1e-4)


def test_paged_block_sparse_matches_the_gathering_path():
    q, k, v = AK.random_cache(2, 8, 2, 1024, 128, seed=3, be=kernels._cpu_backend())
    paged = AK.PagedKV(k, v)
    blocks = AK.select_blocks(q, AK.block_summaries(k, 64), 5)
    kt, vg = paged.gather(blocks)
    # page blocks[1, 0, 2] of K, token 7 / of V, token 7, columns 64..127
    j = int(blocks[1, 0, 2])
    assert np.array_equal(kt[1, 0, 2, :, 7], k[1, 0, 64 * j + 7]) and np.array_equal(vg[1, 0, 2, 1, 7], v[1, 0, 64 * j + 7, 64:])
    ref = AK.block_sparse_decode_attention(q, k, v, 64, 5, blocks=blocks, method="numpy")
    assert np.abs(paged.attend_blocks(q, blocks) - ref).max() <= 1e-5 * np.abs(ref).max()
    with pytest.raises(ValueError, match="blocks must be whole page indices"):
        paged.gather(blocks[:, :1])
    with pytest.raises(ValueError, match="pages 0..15"):
        paged.gather(blocks + 16)


@pytest.mark.parametrize("block_size, top_k", [(256, 3), (512, 2), (1024, 2)])
def test_paged_block_sparse_reads_large_blocks_in_place(block_size, top_k):
    import tracemalloc

    q, k, v = AK.random_cache(2, 8, 2, 2048, 128, seed=block_size, be=kernels._cpu_backend())
    paged = AK.PagedKV(k, v)
    blocks = AK.select_blocks(q, AK.block_summaries(k, block_size), top_k)
    blocks[0, 1, -1] = 2048 // block_size - 1          # the last block of the cache, kept
    blocks = np.sort(blocks, axis=-1)
    ref = AK.block_sparse_decode_attention(q, k, v, block_size, top_k, blocks=blocks, method="numpy")
    # the float64 reference over the kept tokens only, written out here (not the library's own gather)
    for b_ in range(2):
        for h in range(2):
            tok = np.concatenate([np.arange(j * block_size, (j + 1) * block_size) for j in blocks[b_, h]])
            qs = q[b_, 4 * h:4 * h + 4].astype(np.float64)
            sc = qs @ k[b_, h, tok].T.astype(np.float64) / np.sqrt(128)
            p_ = np.exp(sc - sc.max(-1, keepdims=True))
            ref_bh = (p_ / p_.sum(-1, keepdims=True)) @ v[b_, h, tok]
            assert np.allclose(ref[b_, 4 * h:4 * h + 4], ref_bh, rtol=1e-4, atol=1e-5)
    out = paged.attend_blocks(q, blocks, block_size)
    assert np.abs(out - ref).max() <= 1e-5 * np.abs(ref).max()
    assert np.array_equal(paged.attend_blocks(q, blocks.astype(np.uint64), block_size), out)   # unsigned indices too
    # read in place: less memory allocated than ONE kept block's K of one head (a copy, even block by block, needs that)
    q1, k1, v1 = AK.random_cache(1, 8, 2, 2048, 128, seed=1, be=kernels._cpu_backend())
    paged1 = AK.PagedKV(k1, v1)
    b1 = AK.select_blocks(q1, AK.block_summaries(k1, block_size), top_k)
    paged1.attend_blocks(q1, b1, block_size)                     # warm-up
    tracemalloc.start()
    paged1.attend_blocks(q1, b1, block_size)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < block_size * 128 * 4, f"{peak} bytes allocated: the kept blocks were copied, not read in place"


def test_paged_block_sparse_refuses_bad_blocks_and_sizes():
    q, k, v = AK.random_cache(1, 8, 2, 2048, 128, seed=2, be=kernels._cpu_backend())
    paged = AK.PagedKV(k, v)
    good = np.array([[[0, 3], [1, 2]]])
    for bad_size in (128, 300, None, True, 4096, 512.0):
        with pytest.raises(ValueError, match="block_size must be 64 or a multiple of 256"):
            paged.attend_blocks(q, good, bad_size)
    with pytest.raises(ValueError, match="top_k >= 1"):
        paged.attend_blocks(q, good[..., :0], 512)
    with pytest.raises(ValueError, match="top_k >= 1"):
        paged.attend_blocks(q, good.astype(float), 512)
    with pytest.raises(ValueError, match="top_k >= 1"):
        paged.attend_blocks(q, good[:, :1], 512)
    with pytest.raises(ValueError, match=r"within the first 2048 tokens \(0..3\), got -1..2"):
        paged.attend_blocks(q, good - 1, 512)
    with pytest.raises(ValueError, match=r"within the first 2048 tokens \(0..3\), got 4..7"):
        paged.attend_blocks(q, good + 4, 512)
    # a context: the blocks must lie within it (block 3 of 512 ends at token 2048 > 1024)
    with pytest.raises(ValueError, match=r"within the first 1024 tokens \(0..1\)"):
        paged.attend_blocks(q, good, 512, context=1024)
    for bad_ctx in (0, 4096, 1024.0, True):
        with pytest.raises(ValueError, match="context must be a whole number of tokens in 1..2048"):
            paged.attend_blocks(q, good, 512, context=bad_ctx)
    ok = paged.attend_blocks(q, good // 2, 512, context=1024)
    ref = AK.block_sparse_decode_attention(q, k[:, :, :1024], v[:, :, :1024], 512, 2, blocks=good // 2, method="numpy")
    assert np.abs(ok - ref).max() <= 1e-5 * np.abs(ref).max()


def test_paged_attention_reports_its_stages_without_changing_the_result():
    q, k, v = AK.random_cache(1, 8, 2, 1024, 128, seed=5, be=kernels._cpu_backend())
    paged = AK.PagedKV(k, v)
    stage_s = {}
    out = paged.attend(q, 512, stage_s=stage_s)
    assert np.array_equal(out, paged.attend(q, 512))
    assert set(stage_s) == {"scores", "softmax", "values"} and all(t > 0 for t in stage_s.values())
    before = []
    med = paged.time_stages(q, 512, before=lambda: before.append(1), rounds=3)
    assert set(med) == set(stage_s) and len(before) == 3          # called before every timed call
    with pytest.raises(ValueError, match="rounds must be"):
        paged.time_stages(q, rounds=0)


def test_in_cache_context_fits_a_quarter_of_the_last_level_cache(monkeypatch):
    # K+V of one 256-token page at 1 K/V head, D = 64, fp32: 2 * 256 * 64 * 4 = 128 KiB
    monkeypatch.setattr(kernels, "last_level_cache_bytes", lambda be=None: 32 * 2**20)
    L, t, nbytes = AK.in_cache_s(1, 4, 1, 64, repeats=2)
    assert L == 64 * 256 and t > 0                      # 8 MiB / 128 KiB = 64 pages
    assert nbytes == 8 * 2**20                          # K and V of those 64 pages
    monkeypatch.setattr(kernels, "last_level_cache_bytes", lambda be=None: 2**10)
    assert AK.in_cache_s(1, 4, 1, 64, repeats=1)[0] == 256   # never less than one page
    with pytest.raises(ValueError, match="repeats"):
        AK.in_cache_s(1, 4, 1, 64, repeats=0)
    for args, msg in (((0, 4, 1, 64), "batch"), ((1, 4, 0, 64), "kv_heads"), ((1, 4, 3, 64), "multiple of kv_heads"),
                      ((1, 4, 1, 63), "head_dim must be a multiple of 64")):
        with pytest.raises(ValueError, match=msg):
            AK.in_cache_s(*args)


def test_paged_cache_bad_input_is_refused():
    q, k, v = AK.random_cache(1, 8, 2, 512, 64, be=kernels._cpu_backend())
    with pytest.raises(ValueError, match="multiple of 256"):
        AK.PagedKV(k[:, :, :300], v[:, :, :300])
    with pytest.raises(ValueError, match="D a multiple of 64"):
        AK.PagedKV(k[..., :32], v[..., :32])
    with pytest.raises(ValueError, match="float32 or float64"):
        AK.PagedKV(k.astype(np.float16), v.astype(np.float16))
    with pytest.raises(ValueError, match="both be"):
        AK.PagedKV(k, v[:, :1])
    paged = AK.PagedKV(k, v)
    for bad in (0, 300, 1024):
        with pytest.raises(ValueError, match="context must be a multiple of 256"):
            paged.attend(q, bad)
    with pytest.raises(ValueError, match="q must be"):
        paged.attend(q[:, :7])
    with pytest.raises(ValueError, match="layout must be"):
        AK.context_sweep(contexts=[512], layout="tiled", bytes_per_s=1e10, be=kernels._cpu_backend())


def test_kernel_bad_input_is_refused():
    q, k, v = AK.random_cache(1, 8, 2, 64, 32, be=kernels._cpu_backend())
    with pytest.raises(ValueError, match="multiple of H_kv"):
        AK.decode_attention(q[:, :7], k, v)
    with pytest.raises(ValueError, match="k and v must both be"):
        AK.decode_attention(q, k, v[:, :, :10])
    with pytest.raises(ValueError, match="method must be"):
        AK.decode_attention(q, k, v, method="triton")
    with pytest.raises(ValueError, match="top_k must be"):
        AK.block_sparse_decode_attention(q, k, v, 16, 5)
    with pytest.raises(ValueError, match="block_size must be"):
        AK.block_sparse_decode_attention(q, k, v, 0, 1)
    with pytest.raises(ValueError, match="top_k must be"):
        AK.select_blocks(q, AK.block_summaries(k, 16), 0)
    if not kernels.backend().is_gpu:
        with pytest.raises(RuntimeError, match="needs a GPU"):
            AK.decode_attention(q, k, v, method="cupy")


def test_byte_counts_and_fused_availability():
    assert AK.dense_bytes(16, 8, 131072, 128, 2) == 2 * 16 * 8 * 131072 * 128 * 2
    assert AK.sparse_bytes(1, 1, 1000, 128, 2, 64, 4) == 128 * 2 * (16 + 2 * 256)
    # by hand, D = 128, G = 8: Q 16x136 + tile 64x136 fp16 = 21,760; P 16x264 fp16 = 8,448;
    # scores 8x256 fp32 = 8,192; m, l, alpha 3x8 fp32 = 96  ->  38,496 (ptxas -v says the same)
    assert AK.fused_smem_bytes(128, 8) == 21760 + 8448 + 8192 + 96 == 38496
    assert AK.fused_smem_bytes(128, 16) <= 48 * 1024 < AK.fused_smem_bytes(256, 2)
    assert not AK.fused_available(128, 8, np.float32)


@pytest.mark.parametrize("regs,smem,blocks", [
    (128, 38496, 4),   # registers bind: 128 x 32 = 4,096 per warp -> 16 warps of 4 per block
    (64, 38496, 5),    # shared memory binds: 233,472 // (38,496 + 1,024) = 5
    (32, 1000, 16),    # threads bind: 2,048 // 128
    (95, 28256, 5),    # 95 regs round up to 3,072 per warp -> 21 warps -> 5 blocks
])
def test_occupancy_by_hand(regs, smem, blocks):
    rep = AK.CompileReport(128, 8, "sm_90", regs, smem, 0, "")
    assert rep.blocks_per_sm == blocks == min(rep.occupancy_limits.values())
    # Little's law: 132 SMs x blocks x one 64 x 128 fp16 tile (16 KiB) in flight, over 4.8 TB/s
    assert rep.latency_hidden_s(132, 4.8e12) == pytest.approx(132 * blocks * 16384 / 4.8e12)
    with pytest.raises(ValueError, match="n_sm"):
        rep.latency_hidden_s(0, 4.8e12)


def test_kernel_source_refuses_bad_shapes():
    assert "#define D     128" in AK.kernel_source(128, 8) and "#define G     8" in AK.kernel_source(128, 8)
    with pytest.raises(ValueError, match="head_dim must be a multiple of 32"):
        AK.kernel_source(100, 8)
    with pytest.raises(ValueError, match="group"):
        AK.kernel_source(128, 17)
    with pytest.raises(ValueError, match="arch must be one of"):
        AK.compile_report(128, 8, arch="sm_70")


def test_compile_report_without_nvrtc_says_what_to_install(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)   # makes `from cuda.bindings import nvrtc` fail
    with pytest.raises(ImportError, match="pip install cuda-bindings nvidia-cuda-nvrtc"):
        AK.compile_report(128, 8)


@pytest.mark.parametrize("D,G", [(128, 8), (128, 16), (64, 8), (128, 1)])
def test_fused_kernel_compiles_for_hopper_without_spills(D, G):
    """NVRTC compiles the CUDA source for sm_90 with no GPU; ptxas's report matches the model of it."""
    pytest.importorskip("cuda.bindings.nvrtc", reason="NVRTC (cuda-bindings) is installed with the test extra on Linux")
    try:
        rep = AK.compile_report(D, G, "sm_90")
    except ImportError as e:  # cuda-bindings present but no NVRTC library
        pytest.skip(str(e))
    assert rep.spill_bytes == 0, rep.log
    assert rep.smem_bytes == AK.fused_smem_bytes(D, G) <= 48 * 1024
    assert rep.registers_per_thread <= 255
    assert rep.blocks_per_sm >= 2, "fewer than two resident blocks cannot overlap one block's loads with another's math"
    # enough bytes in flight to hide a microsecond of memory latency at the H200's 4.8 TB/s
    assert rep.latency_hidden_s(132, 4.8e12) > 1e-6


def test_context_sweep_runs_small_on_cpu(monkeypatch):
    s = AK.context_sweep(contexts=[256, 512], batch=1, q_heads=4, kv_heads=2, head_dim=32, block_size=16, top_k=4,
                         bytes_per_s=1e10, repeats=1, method="numpy", be=kernels._cpu_backend())
    assert s.dense_s.shape == (2,) and np.all(s.dense_s > 0)
    assert s.dense_bytes[1] == 2 * s.dense_bytes[0]
    assert "dense" in s.table() and s.method == "numpy"          # 256 tokens of D = 32: no whole V column block
    p = AK.context_sweep(contexts=[256, 512], batch=1, q_heads=4, kv_heads=2, head_dim=64, block_size=16, top_k=4,
                         bytes_per_s=1e10, repeats=1, be=kernels._cpu_backend())
    assert p.method == "numpy-paged" and np.all(p.dense_s > 0)
    assert p.sparse_gather_s is None and "gather" not in p.table()   # blocks of 16, not whole pages: no paged sparse
    g = AK.context_sweep(contexts=[1024, 2048], batch=1, q_heads=4, kv_heads=2, head_dim=64, block_size=64, top_k=4,
                         bytes_per_s=1e10, repeats=1, be=kernels._cpu_backend())
    assert g.sparse_gather_s.shape == (2,) and "its gather" in g.table()
    # every timed call of the paged sweep follows the same attention over another layer's cache
    seen = {}
    real = kernels.time_interleaved

    def spy(fns, **kw):
        seen.update(kw)
        return real(fns, **kw)
    monkeypatch.setattr(kernels, "time_interleaved", spy)
    monkeypatch.setattr(kernels, "last_level_cache_bytes", lambda be=None: 2**20)
    in_place = []
    real_blocks = AK.PagedKV.attend_blocks
    monkeypatch.setattr(AK.PagedKV, "attend_blocks",
                        lambda self, *a, **kw: (in_place.append(a[2:] + tuple(kw.items())), real_blocks(self, *a, **kw))[1])
    v_ = AK.context_sweep(contexts=[1024, 2048], batch=1, q_heads=4, kv_heads=2, head_dim=64, block_size=256,
                          top_k=2, bytes_per_s=1e10, repeats=1, be=kernels._cpu_backend())
    assert v_.method == "numpy-paged" and v_.sparse_gather_s is None and np.all(v_.sparse_s > 0)
    assert callable(seen["evict"]) and seen["evict"]().shape == (1, 4, 64)   # an attention output: another layer
    # the sparse calls read the pages in place (blocks of 256), each within its own context
    assert {c for c in in_place} == {(256, ("context", 1024)), (256, ("context", 2048))}
    with pytest.raises(ValueError, match="top_k \\* block_size"):
        AK.context_sweep(contexts=[32], block_size=16, top_k=4, bytes_per_s=1e10, be=kernels._cpu_backend())


@pytest.mark.parametrize("llc_mib, blocks", [(32, 2), (16, 1), (40, 3), (96, 6), (128, 8), (129, 8), (1024, 8), (0, 1)])
def test_cpu_sweep_contexts_start_at_twice_the_last_level_cache(monkeypatch, llc_mib, blocks):
    # by hand: Llama-3.1-8B's layer in fp32 is 2 (K, V) x 8 heads x 128 x 4 B = 8 KiB a token, so a block of
    # 4,096 tokens is 32 MiB; the shortest context is the fewest whole blocks holding >= 2 x the LLC
    # (32 MiB L3 -> 64 MiB -> 2 blocks; 40 MiB -> 80 MiB -> 3), at most 8 blocks (32K tokens: 128 MiB is the
    # last LLC that gets twice its size, 129 MiB is capped), at least one (an LLC reported as 0)
    monkeypatch.setattr(kernels, "last_level_cache_bytes", lambda be=None: llc_mib * 2**20)
    d = AK.default_sweep_shape(kernels._cpu_backend())
    L0 = blocks * 4096
    assert d["contexts"] == [L0, 2 * L0, 3 * L0, 4 * L0]
    assert (d["block_size"], d["top_k"]) == (4096, blocks)
    assert AK.dense_bytes(1, d["kv_heads"], L0, d["head_dim"], 4) >= min(2 * llc_mib, 256) * 2**20
    assert all(isinstance(c, int) for c in d["contexts"])


def test_paged_context_counts_whole_pages_by_hand():
    # one 256-token page of Llama-3.1-8B's layer in fp32: 2 (K, V) x 8 heads x 256 x 128 x 4 B = 2 MiB
    assert AK.paged_context(32 * 2**20, 1, 8, 128) == 16 * 256                   # 32 MiB: 16 pages
    assert AK.paged_context(33 * 2**20, 1, 8, 128) == 16 * 256                   # the most that fit
    assert AK.paged_context(33 * 2**20, 1, 8, 128, round_up=True) == 17 * 256    # the fewest that hold it
    assert AK.paged_context(64 * 2**20, 1, 8, 128, round_up=True) == 32 * 256
    assert AK.paged_context(2**10, 1, 8, 128) == 256                             # never less than one page
