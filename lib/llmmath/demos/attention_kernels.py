"""Decode-attention kernels: one new query per sequence against its KV cache, dense and block-sparse.

Shapes (GQA: query head ``i`` uses K/V head ``i // G``, ``G = H_q / H_kv``)::

    q     (B, H_q, D)        the new token's queries
    k, v  (B, H_kv, L, D)    the cache, contiguous per (sequence, K/V head)
    out   (B, H_q, D)        float32

Methods (``method=``):

* ``"numpy"`` -- the CPU path: two batched matrix products over the cache
  (scores ``q K^T``, then ``softmax . V``), each reading K or V once. NumPy has no
  fast fp16 arithmetic, so the CPU demo stores the cache in fp32. A BLAS runs these
  skinny products several times slower than the bytes allow; :class:`PagedKV` lays
  the cache out in pages that it multiplies at the byte floor (what
  :func:`context_sweep` times on a CPU).
* ``"cupy"`` -- a fused CUDA kernel (CuPy ``RawKernel``), flash-decoding style
  (Dao, Haziza, Massa, Sizov, "Flash-Decoding for long-context inference", 2023):
  each thread block takes one (sequence, K/V head) pair and a contiguous share of
  the context (split-K), copies 64-token tiles of K, then V, into shared memory
  with 16-byte coalesced loads (the next tile is fetched while the current one
  is used), scores all G query heads of the group at once on the tensor cores
  (``mma.sync.m16n8k16``, fp16 in, fp32 accumulate), keeps an online softmax per
  query head, and writes an unnormalised partial output with its max and sum; a
  second small kernel combines the partials. K and V are each read exactly once.
  Needs fp16 storage, ``D`` a multiple of 32, ``G <= 16`` and at most 48 KiB of
  static shared memory (:func:`fused_smem_bytes`): every G up to D = 128, G <= 8
  at D = 192, never D = 256.
* ``"cupy-naive"`` -- the same maths as ``numpy`` through CuPy matmul + softmax
  (for comparison: several passes over score arrays, fp32).
* ``"auto"`` -- ``cupy`` on a GPU backend when the shapes allow it, else ``numpy``.

Block-sparse: :func:`block_sparse_decode_attention` scores one summary key per
block (the mean key, as MoBA does), keeps the top-k blocks per (sequence, K/V
head), and attends only to them; the fused kernel reads the kept blocks in place.

The bytes a call must read are given by :func:`dense_bytes` and
:func:`sparse_bytes`; :func:`context_sweep` times a call against context length
beside ``bytes / bandwidth``.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from functools import lru_cache

import numpy as np

from . import kernels
from .._validate import positive_int

__all__ = [
    "reference_decode_attention", "decode_attention", "block_summaries", "select_blocks",
    "block_sparse_decode_attention", "PagedKV", "previous_layer", "paged_context", "in_cache_s", "dense_bytes", "sparse_bytes", "random_cache",
    "ContextSweep", "context_sweep", "default_sweep_shape", "fused_available", "fused_smem_bytes", "TILE",
    "kernel_source", "NVRTC_OPTIONS", "SM_LIMITS", "CompileReport", "compile_report",
]

TILE = 64  # tokens per shared-memory tile of the fused kernel (a sparse block must be a multiple)
_LOG2E = 1.4426950408889634


# ---------------------------------------------------------------------------
# Shapes and the reference
# ---------------------------------------------------------------------------

def _shapes(q, k, v):
    if q.ndim != 3 or k.ndim != 4 or v.ndim != 4:
        raise ValueError(f"need q (B, H_q, D) and k, v (B, H_kv, L, D); got q {q.shape}, k {k.shape}, v {v.shape}")
    B, Hq, D = q.shape
    if k.shape != v.shape or k.shape[0] != B or k.shape[3] != D:
        raise ValueError(f"k and v must both be (B={B}, H_kv, L, D={D}); got k {k.shape}, v {v.shape}")
    Hkv, L = k.shape[1], k.shape[2]
    if Hkv < 1 or Hq % Hkv:
        raise ValueError(f"H_q={Hq} must be a multiple of H_kv={Hkv}")
    if L < 1:
        raise ValueError(f"the cache must hold at least one token, got L={L}")
    return B, Hq, Hkv, L, D


def reference_decode_attention(q, k, v, scale: float | None = None) -> np.ndarray:
    """softmax(q K^T * scale) V in float64 NumPy: the ground truth for the kernels.

    Args: see the module docstring; any float dtypes, NumPy or CuPy arrays.
    ``scale`` defaults to ``1/sqrt(D)``. Returns float64 ``(B, H_q, D)``.

    Raises:
        ValueError: inconsistent shapes.
    """
    q, k, v = (np.asarray(a.get() if hasattr(a, "get") else a, dtype=np.float64) for a in (q, k, v))
    B, Hq, Hkv, L, D = _shapes(q, k, v)
    G = Hq // Hkv
    scale = 1.0 / math.sqrt(D) if scale is None else scale
    qg = q.reshape(B, Hkv, G, D) * scale
    s = qg @ np.swapaxes(k, -1, -2)
    s -= s.max(-1, keepdims=True)
    p = np.exp(s)
    o = (p @ v) / p.sum(-1, keepdims=True)
    return o.reshape(B, Hq, D)


def dense_bytes(batch, kv_heads, context, head_dim, elem_bytes) -> float:
    """Cache bytes a dense decode-attention call reads: ``2 B H_kv L D b`` (K and V once)."""
    return 2.0 * batch * kv_heads * context * head_dim * elem_bytes


def sparse_bytes(batch, kv_heads, context, head_dim, elem_bytes, block_size, top_k) -> float:
    """Bytes of a block-sparse call: the block summaries (one key each) + the kept blocks' K and V."""
    n_blocks = -(-int(context) // int(block_size))
    kept = min(int(top_k), n_blocks) * int(block_size)
    return batch * kv_heads * head_dim * elem_bytes * (n_blocks + 2.0 * min(kept, context))


# ---------------------------------------------------------------------------
# CPU / generic array path
# ---------------------------------------------------------------------------

def _xp_decode(xp, q, k, v, scale):
    B, Hq, Hkv, L, D = _shapes(q, k, v)
    G = Hq // Hkv
    dt = k.dtype if k.dtype in (xp.float32, xp.float64) else xp.float32
    qg = (q.reshape(B, Hkv, G, D) * scale).astype(dt)
    if k.dtype != dt:  # fp16 cache on the CPU: NumPy cannot multiply fp16 fast; upcast (extra traffic)
        k, v = k.astype(dt), v.astype(dt)
    # K (L x D, rows contiguous) times q^T (D x G): a matrix product BLAS takes as is. Written the
    # other way round (q K^T), NumPy sees a transposed operand and falls back to a slow loop.
    qt = xp.ascontiguousarray(xp.swapaxes(qg, -1, -2))   # (B, Hkv, D, G), tiny
    s = xp.ascontiguousarray(xp.swapaxes(xp.matmul(k, qt), -1, -2))  # (B, Hkv, G, L): reads K once
    s -= s.max(-1, keepdims=True)
    xp.exp(s, out=s)
    denom = s.sum(-1, keepdims=True)
    o = xp.matmul(s, v)                               # (B, Hkv, G, D): reads V once
    o /= denom
    return o.reshape(B, Hq, D).astype(xp.float32, copy=False)


class PagedKV:
    """A decode cache laid out for a CPU BLAS: K transposed in pages of 64 tokens, V in column blocks.

    Why: the plain CPU path multiplies the whole cache of one K/V head, ``L x D``,
    by the ``G`` queries of its group (``D x G``, four columns for Llama-3.1-8B).
    A BLAS treats that as a general matrix product with one very skinny operand:
    it first copies ("packs") the tall cache into cache-sized panels and then runs
    register tiles that are mostly empty, so each call costs several passes over
    K (measured on the 2-core EPYC VM: 3.5-4.5x the byte floor once the cache is
    beyond the L3). Laid out in small blocks, the same products become a stack of
    small ones that the BLAS multiplies straight from each block as it streams in:

    * K as ``(B, H_kv, L/64, D, 64)``: each page holds 64 tokens' keys transposed,
      so the scores of page ``j`` are one ``(G x D) @ (D x 64)`` product;
    * V as ``(B, H_kv, L/256, D/64, 256, 64)``: 256 tokens by 64 of the head's
      dimensions per block, so the output is a stack of ``(G x 256) @ (256 x 64)``
      products summed over the pages.

    The page and block sizes are the fastest found on that VM (OpenBLAS 0.3.31, one
    thread) among K pages of 16-256 tokens and V blocks of 256-4,096 tokens by
    16-128 columns; at 256 tokens V blocks of 64 columns were the only ones near the
    byte floor (1.0-1.07x alone, 1.3-2x for 16, 32 or 128 columns). Re-laying a cache
    is what serving systems already do: vLLM's original paged K cache is
    ``[blocks, heads, D/x, block_size, x]`` (``x`` = 16 bytes of elements), the head
    dimension outside the token index. K and V are each read once; the scores
    (``G L`` values, ``G/(2D)`` of the cache's bytes) take four passes for a
    numerically stable softmax (max, subtract, exp, sum).

    Shapes: ``k``, ``v`` ``(B, H_kv, L, D)`` float32 or float64 NumPy arrays with
    ``L`` a multiple of :attr:`V_PAGE` and ``D`` of :attr:`V_COLS`
    (:meth:`fits`); :meth:`attend` takes ``q`` ``(B, H_q, D)`` and returns float32
    ``(B, H_q, D)``. Memory: one re-laid copy of K and of V.

    Raises:
        ValueError: shapes that do not fit the pages, or a dtype other than float32/float64.
    """

    K_PAGE = 64     # tokens per K page (stored D x 64)
    V_PAGE = 256    # tokens per V block
    V_COLS = 64     # of the head dimension per V block

    @classmethod
    def fits(cls, context: int, head_dim: int) -> bool:
        """Whether a cache of ``context`` tokens and ``head_dim`` fits whole pages."""
        return context % cls.V_PAGE == 0 and head_dim % cls.V_COLS == 0 and context > 0

    def __init__(self, k, v):
        k, v = np.asarray(k), np.asarray(v)
        if k.ndim != 4 or k.shape != v.shape:
            raise ValueError(f"k and v must both be (B, H_kv, L, D), got {k.shape} and {v.shape}")
        if k.dtype not in (np.float32, np.float64) or v.dtype != k.dtype:
            raise ValueError(f"PagedKV needs a float32 or float64 cache, got {k.dtype} and {v.dtype}")
        B, H, L, D = k.shape
        if not self.fits(L, D):
            raise ValueError(f"PagedKV needs L a multiple of {self.V_PAGE} and D a multiple of {self.V_COLS}, "
                             f"got L = {L}, D = {D}")
        self.shape = (B, H, L, D)
        self.kt = np.ascontiguousarray(k.reshape(B, H, L // self.K_PAGE, self.K_PAGE, D).swapaxes(-1, -2))
        self.vb = np.ascontiguousarray(
            v.reshape(B, H, L // self.V_PAGE, self.V_PAGE, D // self.V_COLS, self.V_COLS).swapaxes(3, 4))

    def _check_q(self, q):
        B, H, _, D = self.shape
        q = np.asarray(q)
        if q.ndim != 3 or q.shape[0] != B or q.shape[2] != D or q.shape[1] % H:
            raise ValueError(f"q must be (B={B}, a multiple of H_kv={H}, D={D}), got {q.shape}")
        return q

    def attend(self, q, context: int | None = None, scale: float | None = None,
               stage_s: dict | None = None) -> np.ndarray:
        """Decode attention of ``q`` over the first ``context`` tokens (default all); float32 ``(B, H_q, D)``.

        ``stage_s``: a dict to fill with the seconds each stage took in this call:
        ``"scores"`` (``q K^T``, reads K), ``"softmax"`` (four passes over the
        ``G L`` scores: max, subtract, exp, sum) and ``"values"`` (``P V``, reads V;
        with the final division).

        Raises:
            ValueError: ``q`` of the wrong shape, or ``context`` not a positive multiple of
                :attr:`V_PAGE` within the cache.
        """
        Lmax = self.shape[2]
        L = Lmax if context is None else int(context)
        if L <= 0 or L > Lmax or L % self.V_PAGE:
            raise ValueError(f"context must be a multiple of {self.V_PAGE} in {self.V_PAGE}..{Lmax}, got {context}")
        q = self._check_q(q)
        return _attend_pages(q, self.kt[:, :, :L // self.K_PAGE], self.vb[:, :, :L // self.V_PAGE], scale, stage_s)

    def time_stages(self, q, context: int | None = None, before=None, rounds: int = 5) -> dict:
        """Median seconds of each stage of :meth:`attend` (``stage_s``'s keys), over ``rounds`` calls.

        ``before``: called (untimed) before every call, e.g. the same attention over another
        layer's cache so that this one is read cold, as :func:`context_sweep` does.

        Raises:
            ValueError: ``rounds`` < 1, or what :meth:`attend` raises.
        """
        rounds = positive_int("rounds", rounds)
        self.attend(q, context)                                   # warm-up: page faults, BLAS buffers
        runs = []
        for _ in range(rounds):
            if before is not None:
                before()
            runs.append({})
            self.attend(q, context, stage_s=runs[-1])
        return {name: float(np.median([r[name] for r in runs])) for name in runs[0]}

    def gather(self, blocks):
        """Copies of the kept 64-token pages: K ``(B, H_kv, top_k, D, 64)``, V ``(B, H_kv, top_k, D/64, 64, 64)``.

        ``blocks``: ``(B, H_kv, top_k)`` page indices (:func:`select_blocks` with
        ``block_size`` = :attr:`K_PAGE`). NumPy cannot multiply pages scattered through
        memory in one call, so the block-sparse path copies them first (each kept byte
        read from memory and written once more).

        Raises:
            ValueError: ``blocks`` of the wrong shape or pointing past the cache.
        """
        B, H, L, D = self.shape
        blocks = np.asarray(blocks)
        if blocks.ndim != 3 or blocks.shape[:2] != (B, H) or blocks.dtype.kind not in "iu":
            raise ValueError(f"blocks must be whole page indices of shape (B={B}, H_kv={H}, top_k), got "
                             f"{blocks.shape} {blocks.dtype}")
        if blocks.size and (blocks.min() < 0 or blocks.max() >= L // self.K_PAGE):
            raise ValueError(f"blocks must index pages 0..{L // self.K_PAGE - 1}")
        bi, hi = np.arange(B)[:, None, None], np.arange(H)[None, :, None]
        r = self.V_PAGE // self.K_PAGE
        vpages = self.vb.reshape(B, H, L // self.V_PAGE, D // self.V_COLS, r, self.K_PAGE, self.V_COLS)
        return self.kt[bi, hi, blocks], vpages[bi, hi, blocks // r, :, blocks % r]

    def attend_blocks(self, q, blocks, block_size: int = 64, scale: float | None = None,
                      context: int | None = None) -> np.ndarray:
        """Block-sparse decode attention over the kept blocks ``blocks``; float32 ``(B, H_q, D)``.

        ``blocks``: ``(B, H_kv, top_k)`` indices, ``top_k >= 1``, of blocks of
        ``block_size`` tokens (:func:`select_blocks`), each whole within the first
        ``context`` tokens (default the whole cache). Equals
        :func:`block_sparse_decode_attention` with the same ``block_size`` over those
        tokens when ``block_size`` divides ``context`` (that function masks a partial
        last block; here every kept block must be whole). Two ways, by block size:

        * ``block_size`` = :attr:`K_PAGE` (64): the kept pages are copied first
          (:meth:`gather`), then multiplied as :meth:`attend` multiplies the whole cache;
        * ``block_size`` a multiple of :attr:`V_PAGE` (256): each kept block is a run of
          whole K pages and V blocks, so it is multiplied where it lies (a view, no
          copy), one product for its K pages and one for its V blocks per K/V head.
          The cost is two NumPy calls per kept block and head (a few microseconds each),
          which large blocks amortize.

        Raises:
            ValueError: ``q`` or ``blocks`` of the wrong shape (``top_k`` = 0 included), a
                block past ``context``, a ``context`` that is not a whole number of tokens in the
                cache, or a ``block_size`` other than 64 or a multiple of 256 up to ``context``.
        """
        q = self._check_q(q)
        B, H, Lmax, D = self.shape
        L = Lmax if context is None else context
        if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or not 0 < L <= Lmax:
            raise ValueError(f"context must be a whole number of tokens in 1..{Lmax}, got {context!r}")
        if (isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer))
                or not (block_size == self.K_PAGE or (block_size % self.V_PAGE == 0 and self.V_PAGE <= block_size <= L))):
            raise ValueError(f"block_size must be {self.K_PAGE} or a multiple of {self.V_PAGE} up to the context "
                             f"({L} tokens), got {block_size!r}")
        blocks = np.asarray(blocks)
        if blocks.ndim != 3 or blocks.shape[:2] != (B, H) or blocks.shape[2] < 1 or blocks.dtype.kind not in "iu":
            raise ValueError(f"blocks must be whole block indices of shape (B={B}, H_kv={H}, top_k >= 1), got "
                             f"{blocks.shape} {blocks.dtype}")
        if blocks.min() < 0 or (int(blocks.max()) + 1) * block_size > L:
            raise ValueError(f"blocks must index whole blocks of {block_size} tokens within the first {L} tokens "
                             f"(0..{L // block_size - 1}), got {int(blocks.min())}..{int(blocks.max())}")
        blocks = blocks.astype(np.intp)
        if block_size == self.K_PAGE:
            return _attend_pages(q, *self.gather(blocks), scale)
        return _attend_block_views(q, self.kt, self.vb, blocks, int(block_size), scale)


def _softmax2_numerators(s):
    """Base-2 scores ``s`` (rows along the last axis) -> ``2^(s - row max)`` in place; returns the row sums.

    Four passes over ``s``: max, subtract, exp2, sum (the division by the sums is left to
    the caller, after the values product)."""
    s -= s.max(-1, keepdims=True)
    np.exp2(s, out=s)
    return s.sum(-1)


def _attend_pages(q, kt, vb, scale, stage_s=None):
    """Softmax(q K^T) V over K pages ``kt`` (B, H, n, D, P) and V blocks ``vb`` (B, H, m, D/C, L/m, C), ``n P = L``
    (``stage_s``: as :meth:`PagedKV.attend` takes it)."""
    t0 = time.perf_counter() if stage_s is not None else 0.0
    B, H, n, D, P = kt.shape
    m, C = vb.shape[2], vb.shape[-1]
    L, G = n * P, q.shape[1] // H
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    qg = (q.reshape(B, H, 1, G, D) * (scale * _LOG2E)).astype(kt.dtype)     # scores in base 2: exp2 is cheaper
    # the scores of page j land in columns P j .. P (j + 1) - 1 of one row of L per query (a strided output
    # the BLAS writes directly), so the softmax runs along contiguous rows with no copy
    s = np.empty((B, H, G, L), dtype=kt.dtype)
    np.matmul(qg, kt, out=s.reshape(B, H, G, n, P).swapaxes(2, 3))          # reads K once
    t1 = time.perf_counter() if stage_s is not None else 0.0
    denom = _softmax2_numerators(s)                                         # (B, H, G)
    t2 = time.perf_counter() if stage_s is not None else 0.0
    p = s.reshape(B, H, G, m, L // m).swapaxes(2, 3)[:, :, :, None]          # (B, H, m, 1, G, L/m), a view
    o = np.matmul(p, vb).sum(2)                                             # (B, H, D/C, G, C): reads V once
    o = o.swapaxes(2, 3).reshape(B, H, G, D) / denom[..., None]
    if stage_s is not None:
        stage_s.update(scores=t1 - t0, softmax=t2 - t1, values=time.perf_counter() - t2)
    return o.reshape(B, H * G, D).astype(np.float32, copy=False)


def _attend_block_views(q, kt, vb, blocks, block_size, scale):
    """Softmax(q K^T) V over the kept blocks, each read in place from the pages (``block_size`` a multiple of 256)."""
    B, H, n, D, P = kt.shape
    m, C, Vp = vb.shape[2], vb.shape[-1], vb.shape[-2]
    BH, top, G = B * H, blocks.shape[-1], q.shape[1] // H
    kp, vp = block_size // P, block_size // Vp
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    qg = (q.reshape(BH, G, D) * (scale * _LOG2E)).astype(kt.dtype)
    kt2, vb2 = kt.reshape(BH * n, D, P), vb.reshape(BH * m, D // C, Vp, C)       # views: pages of every head in a row
    head = np.arange(BH).reshape(B, H, 1)
    k_first = (head * n + blocks * kp).ravel().tolist()                         # first K page of each kept block
    v_first = (head * m + blocks * vp).ravel().tolist()                         # first V block of each kept block
    s = np.empty((BH, G, top * block_size), dtype=kt.dtype)
    s_pages = s.reshape(BH, G, top, kp, P).transpose(0, 2, 3, 1, 4)              # (BH, top, kp, G, P): a view
    i = 0
    for bh in range(BH):
        qh, sh = qg[bh], s_pages[bh]
        for j in range(top):
            np.matmul(qh, kt2[k_first[i]:k_first[i] + kp], out=sh[j])           # reads the block's K pages in place
            i += 1
    denom = _softmax2_numerators(s)                                             # (BH, G)
    p = s.reshape(BH, G, top * vp, Vp).swapaxes(1, 2)[:, :, None]              # (BH, top vp, 1, G, Vp): a view
    prod = np.empty((BH, top * vp, D // C, G, C), dtype=kt.dtype)
    i = 0
    for bh in range(BH):
        ph, oh = p[bh], prod[bh]
        for j in range(top):
            first = v_first[i]
            np.matmul(ph[j * vp:(j + 1) * vp], vb2[first:first + vp], out=oh[j * vp:(j + 1) * vp])   # V in place
            i += 1
    o = prod.sum(1).swapaxes(1, 2).reshape(BH, G, D) / denom[..., None]
    return o.reshape(B, H * G, D).astype(np.float32, copy=False)


# ---------------------------------------------------------------------------
# The fused CUDA kernel
# ---------------------------------------------------------------------------

_CUDA_SRC = r"""
#define D     __D__
#define G     __G__
#define TILE  64
#define SUB   256
#define NT    128
#define DP    (D + 8)
#define SP    (SUB + 8)
#define NB    (D / 32)
#define VPR   (D / 8)
#define LPT   (TILE * VPR / NT)
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
typedef unsigned short half_t;

__device__ __forceinline__ void mma16816(float* c, const unsigned* a, const unsigned* b) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

__device__ __forceinline__ half_t f2h(float x) {
  half_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(x));
  return h;
}

// Fetch one tile (TILE tokens x D halfs) into registers: 16-byte loads, coalesced
// (consecutive threads read consecutive 16-byte pieces of the same rows).
__device__ __forceinline__ void fetch(uint4* r, const half_t* __restrict__ src, int start, int L) {
#pragma unroll
  for (int k = 0; k < LPT; ++k) {
    const int i = threadIdx.x + k * NT, row = i / VPR, vec = i % VPR, t = start + row;
    r[k] = (t >= 0 && t < L) ? __ldg(reinterpret_cast<const uint4*>(src + (size_t)t * D) + vec)
                             : make_uint4(0u, 0u, 0u, 0u);
  }
}

__device__ __forceinline__ void stash(half_t* dst, const uint4* r) {
#pragma unroll
  for (int k = 0; k < LPT; ++k) {
    const int i = threadIdx.x + k * NT, row = i / VPR, vec = i % VPR;
    *reinterpret_cast<uint4*>(dst + row * DP + vec * 8) = r[k];
  }
}

__device__ __forceinline__ int tile_start(const int* tiles_bh, int j) {
  return tiles_bh ? tiles_bh[j] : j * TILE;
}

extern "C" __global__ void __launch_bounds__(NT)
decode_attn_split(const half_t* __restrict__ Q,      // [B, Hkv, G, D], pre-scaled by scale*log2(e)
                  const half_t* __restrict__ K,      // [B, Hkv, L, D]
                  const half_t* __restrict__ V,      // [B, Hkv, L, D]
                  const int* __restrict__ tiles,     // [B, Hkv, n_tiles] first token of each tile, or NULL (dense)
                  int L, int n_tiles, int tiles_per_cta,
                  float* __restrict__ Opart,         // [B, Hkv, splits, G, D]
                  float* __restrict__ Mpart,         // [B, Hkv, splits, G]  (log2 domain)
                  float* __restrict__ Lpart)         // [B, Hkv, splits, G]
{
  const int split = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int splits = gridDim.x, Hkv = gridDim.y;
  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31, gid = lane >> 2, tig = lane & 3;

  __shared__ __align__(16) half_t Qs[16 * DP];
  __shared__ __align__(16) half_t KV[TILE * DP];
  __shared__ __align__(16) half_t Ps[16 * SP];
  __shared__ float S[G * SUB];
  __shared__ float m_run[G], l_run[G], alpha[G];

  const size_t bh = (size_t)b * Hkv + h;
  const half_t* Kbh = K + bh * (size_t)L * D;
  const half_t* Vbh = V + bh * (size_t)L * D;
  const int* tiles_bh = tiles ? tiles + bh * (size_t)n_tiles : (const int*)0;

  for (int i = tid; i < 16 * D; i += NT) {
    const int r = i / D, c = i % D;
    Qs[r * DP + c] = r < G ? Q[(bh * G + r) * D + c] : (half_t)0;
  }
  for (int i = tid; i < 16 * SP; i += NT) Ps[i] = (half_t)0;   // rows >= G stay zero
  if (tid < G) { m_run[tid] = -INFINITY; l_run[tid] = 0.f; }
  __syncthreads();

  // A fragments of Q (16 x D, rows >= G zero) for every k-step of the score mma.
  unsigned qa[D / 16][4];
#pragma unroll
  for (int ks = 0; ks < D / 16; ++ks) {
    const unsigned* r0 = reinterpret_cast<const unsigned*>(Qs + gid * DP + ks * 16 + tig * 2);
    const unsigned* r1 = reinterpret_cast<const unsigned*>(Qs + (gid + 8) * DP + ks * 16 + tig * 2);
    qa[ks][0] = r0[0]; qa[ks][1] = r1[0]; qa[ks][2] = r0[4]; qa[ks][3] = r1[4];
  }
  float acc[NB][4];
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) acc[nb][0] = acc[nb][1] = acc[nb][2] = acc[nb][3] = 0.f;

  uint4 pre[LPT];
  const int t_begin = split * tiles_per_cta;
  const int t_end = min(n_tiles, t_begin + tiles_per_cta);
  for (int t0 = t_begin; t0 < t_end; t0 += SUB / TILE) {
    const int nt = min(SUB / TILE, t_end - t0);

    // ---- pass 1: scores of this sub-chunk, S[g][col] (log2 domain), -inf past L
    fetch(pre, Kbh, tile_start(tiles_bh, t0), L);
    for (int j = 0; j < nt; ++j) {
      const int start = tile_start(tiles_bh, t0 + j);
      stash(KV, pre);
      __syncthreads();
      if (j + 1 < nt) fetch(pre, Kbh, tile_start(tiles_bh, t0 + j + 1), L);   // in flight during the mma
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {
        float c[4] = {0.f, 0.f, 0.f, 0.f};
        const half_t* kr = KV + (warp * 16 + nb * 8 + gid) * DP + tig * 2;
#pragma unroll
        for (int ks = 0; ks < D / 16; ++ks) {
          unsigned bf[2];
          bf[0] = *reinterpret_cast<const unsigned*>(kr + ks * 16);
          bf[1] = *reinterpret_cast<const unsigned*>(kr + ks * 16 + 8);
          mma16816(c, qa[ks], bf);
        }
        const int key = warp * 16 + nb * 8 + tig * 2, col = j * TILE + key, tok = start + key;
        if (gid < G) {
          S[gid * SUB + col] = tok < L ? c[0] : -INFINITY;
          S[gid * SUB + col + 1] = tok + 1 < L ? c[1] : -INFINITY;
        }
        if (gid + 8 < G) {
          S[(gid + 8) * SUB + col] = tok < L ? c[2] : -INFINITY;
          S[(gid + 8) * SUB + col + 1] = tok + 1 < L ? c[3] : -INFINITY;
        }
      }
      __syncthreads();
    }
    fetch(pre, Vbh, tile_start(tiles_bh, t0), L);   // V tile 0 flies while the softmax runs

    // ---- pass 2: online softmax statistics, P = exp2(S - m) as fp16
    const int ncols = nt * TILE;
    for (int g = warp; g < G; g += NT / 32) {
      float mx = -INFINITY;
      for (int i = lane; i < ncols; i += 32) mx = fmaxf(mx, S[g * SUB + i]);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
      const float m_old = m_run[g], m_new = fmaxf(m_old, mx);
      const float m_use = (m_new == -INFINITY) ? 0.f : m_new;
      float sum = 0.f;
      for (int i = lane; i < SUB; i += 32) {
        const float p = i < ncols ? exp2f(S[g * SUB + i] - m_use) : 0.f;
        sum += p;
        Ps[g * SP + i] = f2h(p);
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
      if (lane == 0) {
        const float a = exp2f(m_old - m_use);
        alpha[g] = a; l_run[g] = l_run[g] * a + sum; m_run[g] = m_new;
      }
    }
    __syncthreads();
    const float a_lo = gid < G ? alpha[gid] : 1.f, a_hi = gid + 8 < G ? alpha[gid + 8] : 1.f;
#pragma unroll
    for (int nb = 0; nb < NB; ++nb) { acc[nb][0] *= a_lo; acc[nb][1] *= a_lo; acc[nb][2] *= a_hi; acc[nb][3] *= a_hi; }

    // ---- pass 3: acc += P V; warp w owns output columns [w D/4, (w+1) D/4)
    for (int j = 0; j < nt; ++j) {
      stash(KV, pre);
      __syncthreads();
      if (j + 1 < nt) fetch(pre, Vbh, tile_start(tiles_bh, t0 + j + 1), L);
#pragma unroll
      for (int kk = 0; kk < TILE / 16; ++kk) {
        const int pc = j * TILE + kk * 16 + tig * 2;
        unsigned pa[4];
        pa[0] = *reinterpret_cast<const unsigned*>(Ps + gid * SP + pc);
        pa[1] = *reinterpret_cast<const unsigned*>(Ps + (gid + 8) * SP + pc);
        pa[2] = *reinterpret_cast<const unsigned*>(Ps + gid * SP + pc + 8);
        pa[3] = *reinterpret_cast<const unsigned*>(Ps + (gid + 8) * SP + pc + 8);
        const int vr = kk * 16 + tig * 2;
#pragma unroll
        for (int nb = 0; nb < NB; ++nb) {
          const int col = warp * (D / 4) + nb * 8 + gid;
          unsigned bf[2];
          bf[0] = (unsigned)KV[vr * DP + col] | ((unsigned)KV[(vr + 1) * DP + col] << 16);
          bf[1] = (unsigned)KV[(vr + 8) * DP + col] | ((unsigned)KV[(vr + 9) * DP + col] << 16);
          mma16816(acc[nb], pa, bf);
        }
      }
      __syncthreads();
    }
  }

  float* O = Opart + (bh * splits + split) * (size_t)(G * D);
#pragma unroll
  for (int nb = 0; nb < NB; ++nb) {
    const int col = warp * (D / 4) + nb * 8 + tig * 2;
    if (gid < G) { O[gid * D + col] = acc[nb][0]; O[gid * D + col + 1] = acc[nb][1]; }
    if (gid + 8 < G) { O[(gid + 8) * D + col] = acc[nb][2]; O[(gid + 8) * D + col + 1] = acc[nb][3]; }
  }
  if (tid < G) {
    Mpart[(bh * splits + split) * G + tid] = m_run[tid];
    Lpart[(bh * splits + split) * G + tid] = l_run[tid];
  }
}

// out[(bh, g), d] = sum_s 2^(m_s - M) O_s / sum_s 2^(m_s - M) l_s ; one block per (bh, g), D threads
extern "C" __global__ void decode_attn_combine(const float* __restrict__ Opart, const float* __restrict__ Mpart,
                                               const float* __restrict__ Lpart, int splits, float* __restrict__ out)
{
  const int row = blockIdx.x, bh = row / G, g = row % G, d = threadIdx.x;
  float M = -INFINITY;
  for (int s = 0; s < splits; ++s) M = fmaxf(M, Mpart[((size_t)bh * splits + s) * G + g]);
  float l = 0.f, o = 0.f;
  for (int s = 0; s < splits; ++s) {
    const size_t i = ((size_t)bh * splits + s) * G + g;
    const float w = exp2f(Mpart[i] - M);
    l += w * Lpart[i];
    o += w * Opart[i * D + d];
  }
  out[(size_t)row * D + d] = o / l;
}
"""


NVRTC_OPTIONS = ("--std=c++14",)  # the options CuPy's RawModule and compile_report both pass


def kernel_source(head_dim: int, group: int) -> str:
    """The CUDA source of the fused kernel for head dim ``D`` and group ``G`` (compile-time constants).

    Raises:
        ValueError: ``D`` not a multiple of 32 in 32..256, or ``G`` outside 1..16.
    """
    if int(head_dim) != head_dim or head_dim % 32 or not 32 <= head_dim <= 256:
        raise ValueError(f"head_dim must be a multiple of 32 from 32 to 256, got {head_dim!r}")
    if int(group) != group or not 1 <= group <= 16:
        raise ValueError(f"group (query heads per K/V head) must be a whole number from 1 to 16, got {group!r}")
    return _CUDA_SRC.replace("__D__", str(int(head_dim))).replace("__G__", str(int(group)))


@lru_cache(maxsize=None)
def _module(D: int, G: int):
    cp = kernels.backend().xp
    return cp.RawModule(code=kernel_source(D, G), options=NVRTC_OPTIONS)


def fused_smem_bytes(head_dim: int, group: int) -> int:
    """Static shared memory of the fused kernel, bytes per thread block.

    Q (16 rows) and one K/V tile (64 rows) in fp16 with rows padded to ``D + 8``;
    P (16 rows of 256 + 8 fp16); the scores (``G`` rows of 256 fp32); three
    ``G``-long float vectors. Equals what ``ptxas -v`` reports for the compiled
    kernel (checked in ``tests/test_lib_attention.py`` when NVRTC is installed):
    38,496 bytes for D = 128, G = 8.
    """
    return 2 * (16 + TILE) * (head_dim + 8) + 2 * 16 * (256 + 8) + 4 * group * 256 + 12 * group


# Per-SM limits that decide how many thread blocks can be resident at once (occupancy).
# Source: CUDA C++ Programming Guide, "Features and Technical Specifications" table
# (compute capability 8.0 = A100, 9.0 = H100/H200): 64 Ki 32-bit registers, 2048
# threads and 32 blocks per SM; shared memory per SM 164 KiB (8.0) / 228 KiB (9.0),
# of which the driver reserves 1 KiB per block. Registers are allocated per warp in
# units of 256.
SM_LIMITS = {
    "sm_80": dict(registers=65536, threads=2048, blocks=32, smem_bytes=164 * 1024, smem_reserved_per_block=1024),
    "sm_90": dict(registers=65536, threads=2048, blocks=32, smem_bytes=228 * 1024, smem_reserved_per_block=1024),
}


@dataclasses.dataclass(frozen=True)
class CompileReport:
    """What the compiler allocated for ``decode_attn_split``, and the occupancy that follows.

    ``registers_per_thread``, ``smem_bytes`` (static shared memory per block) and
    ``spill_bytes`` (local-memory spill stores + loads) are parsed from ``ptxas -v``.
    """

    head_dim: int
    group: int
    arch: str
    registers_per_thread: int
    smem_bytes: int
    spill_bytes: int
    log: str
    threads_per_block: int = 128

    @property
    def occupancy_limits(self) -> dict:
        """Blocks per SM each resource would allow: ``{"registers", "shared memory", "threads", "blocks"}``."""
        lim = SM_LIMITS[self.arch]
        warps = self.threads_per_block // 32
        regs_per_warp = -(-self.registers_per_thread * 32 // 256) * 256
        return {"registers": (lim["registers"] // regs_per_warp) // warps,
                "shared memory": lim["smem_bytes"] // (self.smem_bytes + lim["smem_reserved_per_block"]),
                "threads": lim["threads"] // self.threads_per_block,
                "blocks": lim["blocks"]}

    @property
    def blocks_per_sm(self) -> int:
        """Resident blocks per SM: the smallest of the register, shared-memory, thread and block limits."""
        return int(min(self.occupancy_limits.values()))

    @property
    def bytes_in_flight_per_block(self) -> int:
        """Bytes of cache one block has requested and not yet received: one prefetched tile, ``64 D`` fp16."""
        return TILE * self.head_dim * 2

    def latency_hidden_s(self, n_sm: int, bytes_per_s: float) -> float:
        """Longest memory latency the kernel can hide at ``bytes_per_s`` (Little's law).

        A memory system delivering W bytes/s with latency t needs W t bytes in
        flight; the kernel keeps ``n_sm x blocks_per_sm x bytes_in_flight_per_block``
        in flight, so it can sustain W for latencies up to that over W.
        """
        if n_sm < 1 or not bytes_per_s > 0:
            raise ValueError(f"need n_sm >= 1 and bytes_per_s > 0, got {n_sm!r}, {bytes_per_s!r}")
        return n_sm * self.blocks_per_sm * self.bytes_in_flight_per_block / bytes_per_s


def compile_report(head_dim: int = 128, group: int = 8, arch: str = "sm_90") -> CompileReport:
    """Compile the fused kernel with NVRTC for ``arch`` (no GPU needed) and parse ``ptxas -v``.

    Uses NVIDIA's ``cuda-bindings`` with the ``nvidia-cuda-nvrtc`` wheel (both in
    the ``test`` extra on Linux x86-64).

    Raises:
        ImportError: cuda-bindings / NVRTC not installed (says what to install).
        ValueError: an arch other than ``sm_80`` / ``sm_90``, or shapes :func:`kernel_source` refuses.
        RuntimeError: the compiler rejected the source (its log is in the message).
    """
    if arch not in SM_LIMITS:
        raise ValueError(f"arch must be one of {sorted(SM_LIMITS)} (the kernel uses mma.sync m16n8k16), got {arch!r}")
    src = kernel_source(head_dim, group)
    try:
        from cuda.bindings import nvrtc
        err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"decode_attention.cu", 0, [], [])
    except (ImportError, RuntimeError, OSError) as e:  # no package, or no libnvrtc for it to load
        raise ImportError("compile_report needs NVIDIA's cuda-bindings and NVRTC: "
                          "pip install cuda-bindings nvidia-cuda-nvrtc (Linux)") from e
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC could not create a program from the kernel source: {err!r}")
    opts = [o.encode() for o in NVRTC_OPTIONS] + [f"--gpu-architecture={arch}".encode(), b"-Xptxas=-v"]
    (rc,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    _, n = nvrtc.nvrtcGetProgramLogSize(prog)
    buf = b" " * n
    nvrtc.nvrtcGetProgramLog(prog, buf)
    nvrtc.nvrtcDestroyProgram(prog)
    log = buf.rstrip(b"\x00 ").decode(errors="replace")
    if rc != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"NVRTC could not compile the fused kernel for {arch} (D={head_dim}, G={group}):\n{log}")
    at = log.find("'decode_attn_split'")
    part = log[at:] if at >= 0 else ""
    regs = re.search(r"Used (\d+) registers", part)
    smem = re.search(r"(\d+) bytes smem", part)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", part)
    if not (regs and spill):
        raise RuntimeError(f"could not read ptxas's resource report from the NVRTC log:\n{log}")
    return CompileReport(int(head_dim), int(group), arch, int(regs.group(1)), int(smem.group(1)) if smem else 0,
                         int(spill.group(1)) + int(spill.group(2)), log)


def fused_available(head_dim: int, group: int, dtype=None, be=None) -> bool:
    """Whether the fused kernel can run these shapes here.

    Needs a GPU backend, an fp16 cache, ``D % 32 == 0``, ``1 <= G <= 16`` and at
    most 48 KiB of static shared memory (any G up to D = 128; G <= 8 at D = 192; never D = 256).
    """
    be = be or kernels.backend()
    ok_dtype = dtype is None or np.dtype(dtype) == np.float16
    return bool(be.is_gpu and ok_dtype and head_dim % 32 == 0 and 1 <= group <= 16
                and fused_smem_bytes(head_dim, group) <= 48 * 1024)


def _fused(q, k, v, scale, tiles=None, n_tiles=None, splits=None, out=None):
    be = kernels.backend()
    cp = be.xp
    B, Hq, Hkv, L, D = _shapes(q, k, v)
    G = Hq // Hkv
    if not fused_available(D, G, k.dtype, be) or v.dtype != cp.float16:
        raise ValueError(f"the fused kernel needs an fp16 cache, D % 32 == 0, G <= 16 and <= 48 KiB of shared "
                         f"memory; got {k.dtype}/{v.dtype}, D={D}, G={G} ({fused_smem_bytes(D, G)} bytes)")
    k, v = cp.ascontiguousarray(k), cp.ascontiguousarray(v)
    qh = cp.ascontiguousarray((q.astype(cp.float32) * (scale * _LOG2E)).astype(cp.float16))
    if tiles is None:
        n_tiles = -(-L // TILE)
    else:
        tiles = cp.ascontiguousarray(tiles, dtype=cp.int32)
        n_tiles = tiles.shape[-1]
    if splits is None:  # enough blocks to fill the chip several times over, each with >= 4 tiles
        n_sm = cp.cuda.Device().attributes["MultiProcessorCount"]
        want = max(1, (8 * n_sm) // max(1, B * Hkv))
        splits = max(1, min(want, -(-n_tiles // 4)))
    tpc = -(-n_tiles // splits)
    splits = -(-n_tiles // tpc)
    opart = cp.empty((B, Hkv, splits, G, D), cp.float32)
    mpart = cp.empty((B, Hkv, splits, G), cp.float32)
    lpart = cp.empty((B, Hkv, splits, G), cp.float32)
    if out is None:
        out = cp.empty((B, Hq, D), cp.float32)
    mod = _module(D, G)
    mod.get_function("decode_attn_split")(
        (splits, Hkv, B), (128,),
        (qh, k, v, tiles if tiles is not None else np.uint64(0), np.int32(L), np.int32(n_tiles), np.int32(tpc),
         opart, mpart, lpart))
    mod.get_function("decode_attn_combine")((B * Hq,), (D,), (opart, mpart, lpart, np.int32(splits), out))
    return out


def _resolve_method(method, q, k):
    be = kernels.backend()
    if method not in ("auto", "numpy", "cupy", "cupy-naive"):
        raise ValueError(f"method must be 'auto', 'numpy', 'cupy' or 'cupy-naive', got {method!r}")
    if method == "auto":
        G = q.shape[1] // max(1, k.shape[1])
        return "cupy" if fused_available(q.shape[2], G, k.dtype, be) else ("cupy-naive" if be.is_gpu else "numpy")
    if method.startswith("cupy") and not be.is_gpu:
        raise RuntimeError(f"method={method!r} needs a GPU backend (CuPy and a GPU); this one is {be.name}")
    return method


def decode_attention(q, k, v, scale: float | None = None, method: str = "auto", splits: int | None = None, out=None):
    """Decode attention for one new token per sequence; returns float32 ``(B, H_q, D)``.

    Args:
        q, k, v: see the module docstring (arrays of the active backend).
        scale: softmax scale, default ``1/sqrt(D)``.
        method: ``auto``, ``numpy``, ``cupy`` (fused kernel) or ``cupy-naive``.
        splits: fused kernel only: context splits per (sequence, K/V head); default fills the GPU.
        out: fused kernel only: a float32 ``(B, H_q, D)`` array to write into.

    Raises:
        ValueError: inconsistent shapes, an unknown method, or a cache dtype the method cannot read.
        RuntimeError: a CuPy method without a GPU backend.
    """
    B, Hq, Hkv, L, D = _shapes(q, k, v)
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    m = _resolve_method(method, q, k)
    if m == "cupy":
        return _fused(q, k, v, scale, splits=splits, out=out)
    xp = kernels.backend().xp if m == "cupy-naive" else np
    return _xp_decode(xp, q, k, v, scale)


def block_summaries(k, block_size: int):
    """Mean key of each block of ``block_size`` tokens: ``(B, H_kv, ceil(L/s), D)``, float32.

    Kept beside the cache and updated as tokens arrive (MoBA's gate uses the
    mean-pooled keys; Quest keeps a min and a max key instead).

    Raises:
        ValueError: block_size < 1.
    """
    if int(block_size) != block_size or block_size < 1:
        raise ValueError(f"block_size must be a whole number >= 1, got {block_size!r}")
    xp = np if isinstance(k, np.ndarray) else kernels.backend().xp
    B, Hkv, L, D = k.shape
    n = -(-L // block_size)
    pad = n * block_size - L
    kf = k.astype(xp.float32)
    if pad:
        kf = xp.concatenate([kf, xp.zeros((B, Hkv, pad, D), xp.float32)], axis=2)
    counts = xp.full((n,), float(block_size), xp.float32)
    counts[-1] = block_size - pad
    return kf.reshape(B, Hkv, n, block_size, D).sum(3) / counts[:, None]


def select_blocks(q, summaries, top_k: int):
    """Indices ``(B, H_kv, top_k)`` of the blocks whose summary scores highest, summed over the group's query heads.

    Raises:
        ValueError: top_k < 1 or larger than the number of blocks.
    """
    xp = np if isinstance(summaries, np.ndarray) else kernels.backend().xp
    B, Hkv, n, D = summaries.shape
    if int(top_k) != top_k or not 1 <= top_k <= n:
        raise ValueError(f"top_k must be a whole number from 1 to the number of blocks ({n}), got {top_k!r}")
    G = q.shape[1] // Hkv
    score = xp.matmul(q.reshape(B, Hkv, G, D).astype(xp.float32), xp.swapaxes(summaries, -1, -2)).sum(2)
    idx = xp.argpartition(-score, top_k - 1, axis=-1)[..., :top_k]
    return xp.sort(idx, axis=-1)


def block_sparse_decode_attention(q, k, v, block_size: int, top_k: int, summaries=None, blocks=None,
                                  scale: float | None = None, method: str = "auto"):
    """Attend to the ``top_k`` best blocks of ``block_size`` tokens only (per sequence and K/V head).

    Selection: :func:`select_blocks` over ``summaries`` (computed by
    :func:`block_summaries` if not given), unless ``blocks`` (indices
    ``(B, H_kv, top_k)``) is passed. With ``top_k`` = all blocks this equals
    dense attention. The fused kernel reads the kept blocks in place (needs
    ``block_size`` a multiple of 64); the NumPy path gathers them first (a copy of the kept tokens).
    Returns float32 ``(B, H_q, D)``.

    Raises:
        ValueError: block_size < 1, top_k < 1 or > number of blocks, bad shapes.
    """
    B, Hq, Hkv, L, D = _shapes(q, k, v)
    if int(block_size) != block_size or block_size < 1:
        raise ValueError(f"block_size must be a whole number >= 1, got {block_size!r}")
    n = -(-L // block_size)
    if int(top_k) != top_k or not 1 <= top_k <= n:
        raise ValueError(f"top_k must be a whole number from 1 to the number of blocks ({n} of {block_size} "
                         f"tokens in L={L}), got {top_k!r}")
    scale = 1.0 / math.sqrt(D) if scale is None else float(scale)
    m = _resolve_method(method, q, k)
    xp = np if m == "numpy" else kernels.backend().xp
    if blocks is None:
        if summaries is None:
            summaries = block_summaries(k, block_size)
        blocks = select_blocks(q, summaries, top_k)
    if m == "cupy" and block_size % TILE == 0:
        tiles = (blocks[..., None] * block_size + xp.arange(0, block_size, TILE)[None, None, None, :])
        return _fused(q, k, v, scale, tiles=tiles.reshape(B, Hkv, -1).astype(xp.int32))
    # gather the kept tokens (index arithmetic on the cache as it is: no reshape, so no copy of the
    # whole cache); a kept last block may run past L: clamp, then mask those tokens out exactly
    tok = (blocks[..., None] * block_size + xp.arange(block_size)).reshape(B, Hkv, -1)
    valid = tok < L
    bi, hi, ti = xp.arange(B)[:, None, None], xp.arange(Hkv)[None, :, None], xp.minimum(tok, L - 1)
    kg, vg = k[bi, hi, ti], v[bi, hi, ti]   # (B, Hkv, kept, D): whole rows of D copied
    if bool(valid.all()):
        return _xp_decode(xp, q, kg, vg, scale)
    G = Hq // Hkv
    dt = xp.float64 if kg.dtype == xp.float64 else xp.float32
    qt = xp.ascontiguousarray(xp.swapaxes((q.reshape(B, Hkv, G, D) * scale).astype(dt), -1, -2))
    s = xp.ascontiguousarray(xp.swapaxes(xp.matmul(kg.astype(dt), qt), -1, -2))
    s = xp.where(valid[:, :, None, :], s, -xp.inf)
    s -= s.max(-1, keepdims=True)
    p = xp.exp(s)
    o = xp.matmul(p, vg.astype(dt)) / p.sum(-1, keepdims=True)
    return o.reshape(B, Hq, D).astype(xp.float32)


# ---------------------------------------------------------------------------
# Timing against context length
# ---------------------------------------------------------------------------

def paged_context(nbytes, batch, kv_heads, head_dim, round_up: bool = False) -> int:
    """Tokens of an fp32 :class:`PagedKV` cache whose K+V (:func:`dense_bytes`) is ``nbytes``: whole
    :attr:`PagedKV.V_PAGE` pages, the most that fit in ``nbytes`` (or, with ``round_up``, the fewest that
    hold it), and at least one page."""
    per_page = dense_bytes(batch, kv_heads, PagedKV.V_PAGE, head_dim, 4)
    pages = math.ceil(nbytes / per_page) if round_up else math.floor(nbytes / per_page)
    return PagedKV.V_PAGE * max(1, int(pages))


def previous_layer(batch, q_heads, kv_heads, head_dim, be=None):
    """A function that runs paged decode attention over another layer's fp32 cache (CPU), to call before a timed one.

    The cache holds at least twice :func:`llmmath.demos.kernels.last_level_cache_bytes` (in whole
    :attr:`PagedKV.V_PAGE` pages), so after the call none of the timed layer's cache is
    left in the caches, while the code that multiplies it is: the state a layer's cache is
    in during a real decode step. Memory: that cache, once (64 MiB on a 32 MiB L3).

    Raises:
        ValueError: sizes PagedKV cannot page (``head_dim`` not a multiple of 64).
    """
    be = be or kernels.backend()
    L = paged_context(2 * kernels.last_level_cache_bytes(be), batch, kv_heads, head_dim, round_up=True)
    q, k, v = random_cache(batch, q_heads, kv_heads, L, head_dim, "fp32", seed=7, be=kernels._cpu_backend())
    other = PagedKV(k, v)
    del k, v
    return lambda: other.attend(q)


def in_cache_s(batch, q_heads, kv_heads, head_dim, repeats: int = 20) -> tuple[int, float, float]:
    """Decode attention with its cache already cached (CPU, :class:`PagedKV`): ``(context, best seconds,
    K+V bytes)``; ``seconds / (bytes / W)`` is its share of the byte floor at a read rate ``W``.

    The context is the longest multiple of :attr:`PagedKV.V_PAGE` tokens whose fp32 K+V
    (:func:`dense_bytes`) fits in a quarter of :func:`llmmath.demos.kernels.last_level_cache_bytes`
    (at least one page); the call is repeated ``repeats`` times on one BLAS thread after two
    warm-ups and the best is returned. Set beside the same bytes over the read ceiling, it is
    the call's own cost when reading memory costs nothing: the products' multiply-adds and
    the softmax, which one core must issue while it streams the cache (chapter 2).

    Raises:
        ValueError: a size or ``repeats`` that is not a whole number >= 1, ``q_heads`` not a multiple
            of ``kv_heads``, or a ``head_dim`` that is not a multiple of :attr:`PagedKV.V_COLS`.
    """
    batch, q_heads, kv_heads, head_dim, repeats = (positive_int(name, v) for name, v in (
        ("batch", batch), ("q_heads", q_heads), ("kv_heads", kv_heads), ("head_dim", head_dim), ("repeats", repeats)))
    if q_heads % kv_heads:
        raise ValueError(f"q_heads must be a multiple of kv_heads, got {q_heads} and {kv_heads}")
    if head_dim % PagedKV.V_COLS:
        raise ValueError(f"head_dim must be a multiple of {PagedKV.V_COLS} for the paged layout, got {head_dim}")
    L = paged_context(kernels.last_level_cache_bytes(kernels._cpu_backend()) / 4, batch, kv_heads, head_dim)
    q, k, v = random_cache(batch, q_heads, kv_heads, L, head_dim, "fp32", seed=9, be=kernels._cpu_backend())
    paged = PagedKV(k, v)
    with kernels.one_blas_thread():
        t = kernels.time_fn(lambda: paged.attend(q), warmup=2, repeats=repeats, be=kernels._cpu_backend())
    return L, t.min_s, dense_bytes(batch, kv_heads, L, head_dim, 4)


def random_cache(batch, q_heads, kv_heads, context, head_dim, dtype="fp32", seed=0, be=None):
    """Random ``q, k, v`` on the backend (normal values, never zeros), cache in ``dtype`` (fp32 or fp16)."""
    be = be or kernels.backend()
    q = kernels._random(be, (batch, q_heads, head_dim), "fp32", seed)
    k = kernels._random(be, (batch, kv_heads, context, head_dim), dtype, seed + 1)
    v = kernels._random(be, (batch, kv_heads, context, head_dim), dtype, seed + 2)
    return q, k, v


CPU_SPARSE_BLOCK = 4096   # tokens per block of the CPU sweep's block-sparse call (:func:`default_sweep_shape`)


def default_sweep_shape(be=None) -> dict:
    """Sizes for :func:`context_sweep` on this backend.

    CPU: one sequence, 8 K/V heads x group 4 (Llama-3.1-8B's layer), D = 128, fp32
    cache. Contexts ``L0 x (1, 2, 3, 4)``, where ``L0`` is the shortest multiple of
    :data:`CPU_SPARSE_BLOCK` tokens whose K+V (8 KiB a token) is at least twice
    :func:`llmmath.demos.kernels.last_level_cache_bytes`, but at most 8 blocks (``L0`` <= 32K
    tokens, so the longest context holds at most 1 GiB of K+V; on an LLC above 128 MiB
    the shortest context is then less than twice it): 8K .. 32K tokens, 64-256 MiB, on
    a 32 MiB L3. Twice the LLC, so that the call's fixed costs (Python, its scratch
    buffers, the first memory latency: about 0.1 ms on the 2-core EPYC VM) stay small
    beside its byte floor: at 32 MiB the same call took 0.03-0.15x more of its floor
    there than at 64-256 MiB. (Every timed call follows another layer's attention, so
    the cache is read cold at any size.)
    Sparse: blocks of :data:`CPU_SPARSE_BLOCK` = 4,096 tokens (MoBA's long-context
    block size), as many kept as make ``L0``, so the sparse call reads the shortest
    context's bytes at every context and keeps the whole cache at ``L0`` (2 blocks on
    that VM). The blocks are large because NumPy multiplies each kept block in two
    calls per K/V head (:meth:`PagedKV.attend_blocks`), and each call cost 3-5 us
    there. Timed interleaved (15 rounds, best of each), against the dense call over
    the same bytes: top-4 blocks of 1,024 took 1.19x (32 MiB), top-4 of 2,048
    1.12-1.14x and top-2 of 4,096 1.03-1.05x (64 MiB).
    GPU: batch 16, 8 K/V heads x group 8 (a Llama-3.1-70B layer), fp16,
    L = 2K .. 128K (8.6 GB of K+V at the top); sparse: top-32 blocks of 64 (the fused
    kernel reads any block in place).
    """
    be = be or kernels.backend()
    if be.is_gpu:
        return dict(batch=16, q_heads=64, kv_heads=8, head_dim=128, dtype="fp16",
                    contexts=[2**i for i in range(11, 18)], block_size=64, top_k=32)
    shape = dict(batch=1, q_heads=32, kv_heads=8, head_dim=128, dtype="fp32")
    block_bytes = int(dense_bytes(shape["batch"], shape["kv_heads"], CPU_SPARSE_BLOCK, shape["head_dim"], 4))
    top_k = min(8, max(1, -(-2 * kernels.last_level_cache_bytes(be) // block_bytes)))   # whole blocks >= 2 x LLC
    return dict(shape, contexts=[i * top_k * CPU_SPARSE_BLOCK for i in (1, 2, 3, 4)],
                block_size=CPU_SPARSE_BLOCK, top_k=top_k)


@dataclasses.dataclass(frozen=True)
class ContextSweep:
    """Result of :func:`context_sweep`; arrays indexed by context."""

    context: np.ndarray
    dense_s: np.ndarray
    sparse_s: np.ndarray
    dense_bytes: np.ndarray
    sparse_bytes: np.ndarray
    bytes_per_s: float
    method: str
    shape: dict
    device: str
    sparse_gather_s: np.ndarray | None = None   # of sparse_s: copying the kept pages (paged CPU path only)
    read_samples_bytes_per_s: np.ndarray | None = None   # the probe's read ceiling in each round, when it ran

    @property
    def dense_predicted_s(self):
        return self.dense_bytes / self.bytes_per_s

    @property
    def sparse_predicted_s(self):
        return self.sparse_bytes / self.bytes_per_s

    @property
    def dense_fraction_of_ceiling(self):
        """Achieved bytes/s of the dense call divided by the read-only stream ceiling (``bytes_per_s``)."""
        return self.dense_predicted_s / self.dense_s

    def table(self) -> str:
        g = self.sparse_gather_s
        rows = [f"{'L':>7} {'dense':>10} {'bytes/W':>10} {'ratio':>6} {'%ceil':>6} | "
                f"{'sparse':>10} {'bytes/W':>10} {'ratio':>6}" + ("" if g is None else f" {'its gather':>12}")]
        for i, L in enumerate(self.context):
            rows.append(f"{int(L):>7} {self.dense_s[i] * 1e3:>8.3f}ms {self.dense_predicted_s[i] * 1e3:>8.3f}ms "
                        f"{self.dense_s[i] / self.dense_predicted_s[i]:>6.2f} {self.dense_fraction_of_ceiling[i]:>6.0%} | "
                        f"{self.sparse_s[i] * 1e3:>8.3f}ms {self.sparse_predicted_s[i] * 1e3:>8.3f}ms "
                        f"{self.sparse_s[i] / self.sparse_predicted_s[i]:>6.2f}"
                        + ("" if g is None else f" {g[i] * 1e3:>10.3f}ms"))
        return "\n".join(rows)


def context_sweep(contexts=None, batch=None, q_heads=None, kv_heads=None, head_dim=None, dtype=None,
                  block_size=None, top_k=None, bytes_per_s=None, repeats=None, method="auto",
                  layout="auto", be=None) -> ContextSweep:
    """Time dense and block-sparse decode attention against context, beside ``bytes / bandwidth``.

    One cache is made at the largest context; shorter contexts use its first
    ``L`` tokens (a view, so each (sequence, head) stays contiguous in its rows).
    Block selection for the sparse call is done beforehand (its summaries and
    scores are 1/block_size of the work and are counted in :func:`sparse_bytes`
    but not timed). ``bytes_per_s`` defaults to this machine's read-only stream (the
    calls read the cache and write a few bytes per query), sampled at the start of every round (:class:`llmmath.demos.kernels.CeilingProbe`), so
    ceiling and kernel see the same load. Sizes default to :func:`default_sweep_shape`.
    The calls are timed round-robin, ``repeats`` rounds; each time is the best of its
    rounds (like the bandwidth it is compared with: on a shared machine the median wanders).
    Each timed call starts from a cold cache, as a layer's cache is in a real decode
    step (the other layers have read theirs since): on the paged CPU path the call
    before it is the same attention over another layer's cache of twice the
    last-level cache (so the kernel's code stays cached, as it would), elsewhere
    :func:`llmmath.demos.kernels.evict_caches`. Without this, a context's call could find
    the previous call's pages still cached (seen: 1.05x instead of 1.3-1.4x at 32 MiB),
    or pay for the write-back of what the ceiling probe left dirty (2.2x at 8 MiB, with
    the 1K-16K sizes this sweep used before).
    ``layout``: on the CPU path, ``"auto"`` times the dense call on a :class:`PagedKV`
    copy of the cache where every context fits its pages (``method`` then reads
    ``"numpy-paged"``), ``"plain"`` on the cache as given.

    Raises:
        ValueError: a context below ``block_size * top_k``, bad sizes or an unknown layout.
    """
    if layout not in ("auto", "plain"):
        raise ValueError(f"layout must be 'auto' or 'plain', got {layout!r}")
    be = be or kernels.backend()
    d = default_sweep_shape(be)
    contexts = [int(c) for c in (contexts or d["contexts"])]
    batch, q_heads, kv_heads = batch or d["batch"], q_heads or d["q_heads"], kv_heads or d["kv_heads"]
    head_dim, dtype = head_dim or d["head_dim"], dtype or d["dtype"]
    block_size, top_k = block_size or d["block_size"], top_k or d["top_k"]
    if min(contexts) < block_size * top_k:
        raise ValueError(f"every context must hold top_k * block_size = {top_k * block_size} tokens, "
                         f"got {min(contexts)}")
    probe = kernels.CeilingProbe((), be=be) if bytes_per_s is None else None   # streams only, sampled every round
    repeats = repeats or (20 if be.is_gpu else 3)
    elem = 2 if dtype == "fp16" else 4
    q, k, v = random_cache(batch, q_heads, kv_heads, max(contexts), head_dim, dtype, be=be)
    meth = _resolve_method(method, q, k)
    paged, evict = None, True
    if (meth == "numpy" and layout == "auto" and k.dtype == np.float32
            and all(PagedKV.fits(L, head_dim) for L in contexts)):
        paged = PagedKV(k, v)
        evict = previous_layer(batch, q_heads, kv_heads, head_dim, be=be)
    with kernels.one_blas_thread(meth == "numpy"):
        dense, sparse, gather = _sweep(q, k, v, contexts, meth, block_size, top_k, repeats, be, probe, paged, evict)
    meth = "numpy-paged" if paged is not None else meth
    bytes_per_s = bytes_per_s or probe.read_bytes_per_s
    ctx = np.asarray(contexts, float)
    db = np.array([dense_bytes(batch, kv_heads, L, head_dim, elem) for L in contexts])
    # the timed sparse call reads the kept blocks' K and V (selection done beforehand)
    sb = np.array([2.0 * batch * kv_heads * min(top_k * block_size, L) * head_dim * elem for L in contexts])
    return ContextSweep(ctx, np.asarray(dense), np.asarray(sparse), db, sb, float(bytes_per_s), meth,
                        dict(batch=batch, q_heads=q_heads, kv_heads=kv_heads, head_dim=head_dim, dtype=dtype,
                             block_size=block_size, top_k=top_k), be.device_name,
                        None if gather is None else np.asarray(gather),
                        None if probe is None else probe.read_samples_bytes_per_s)


def _sweep(q, k, v, contexts, meth, block_size, top_k, repeats, be, probe=None, paged=None, evict=True):
    """Best-of-``repeats`` times of the dense and sparse calls per context, timed round-robin
    (``probe``, if given, samples the ceilings at the start of every round; ``paged``, if given,
    a :class:`PagedKV` of the same cache that the dense and sparse calls read instead; ``evict``
    as :func:`llmmath.demos.kernels.time_interleaved` takes it)."""
    fns = {}
    for L in contexts:
        kl, vl = k[:, :, :L], v[:, :, :L]
        if meth == "cupy":
            kl, vl = be.xp.ascontiguousarray(kl), be.xp.ascontiguousarray(vl)
        blocks = select_blocks(q, block_summaries(kl, block_size), top_k)
        fns[("dense", L)] = (lambda kl=kl, vl=vl: decode_attention(q, kl, vl, method=meth)) if paged is None \
            else (lambda L=L: paged.attend(q, L))
        if paged is not None and block_size == paged.K_PAGE:
            fns[("sparse", L)] = lambda blocks=blocks: paged.attend_blocks(q, blocks)
            fns[("gather", L)] = lambda blocks=blocks: paged.gather(blocks)
        elif paged is not None and block_size % paged.V_PAGE == 0 and L % block_size == 0:
            fns[("sparse", L)] = lambda blocks=blocks, L=L: paged.attend_blocks(q, blocks, block_size, context=L)
        else:
            fns[("sparse", L)] = (lambda kl=kl, vl=vl, blocks=blocks:
                                  block_sparse_decode_attention(q, kl, vl, block_size, top_k, blocks=blocks,
                                                                method=meth))
    t = kernels.time_interleaved(fns, rounds=repeats, warmup=1, probe=probe, be=be, evict=evict)
    gather = [t[("gather", L)].min_s for L in contexts] if ("gather", contexts[0]) in t else None
    return [t[("dense", L)].min_s for L in contexts], [t[("sparse", L)].min_s for L in contexts], gather
