"""A NumPy emulator of the fused decode-attention CUDA kernel, run against the float64 reference.

``llmmath.demos.attention_kernels`` carries a hand-written CUDA kernel (``_CUDA_SRC``:
``decode_attn_split`` and ``decode_attn_combine``, launched by ``_fused``). CI has
no GPU, so the kernel's index arithmetic -- fragment layouts of
``mma.sync.m16n8k16``, padded shared-memory strides, split-K bookkeeping, the
online softmax, the combine -- would otherwise never execute. This file
transcribes the CUDA source line by line into NumPy and checks the result
against :func:`reference_decode_attention`.

How the GPU is modelled:

* One thread block at a time (the grid is a Python loop over ``(split, h, b)``);
  inside a block the 128 threads are vectorised: every per-thread value is an
  array of shape ``(NT,)`` indexed by ``tid`` (so ``warp = tid >> 5``,
  ``lane = tid & 31``, ``gid = lane >> 2``, ``tig = lane & 3`` are arrays too).
  Loops the CUDA runs per warp (pass 2) are a Python loop over warps with the
  32 lanes vectorised, and ``__shfl_xor_sync`` is the literal butterfly
  ``x[lane ^ o]``.
* Memory is flat arrays: fp16 as ``np.uint16`` bit patterns, float as
  ``np.float32``. Shared arrays have the CUDA's padded sizes and strides
  (``DP = D + 8``, ``SP = SUB + 8``). Shared and ``cp.empty`` memory start out
  as NaN, so a read of anything never written shows up as a NaN in the output.
  Every load and store checks its bounds and alignment (a 32-bit load needs an
  even half index, a 16-byte ``uint4`` access a multiple of 8), and every
  store checks that no two threads of the instruction hit the same address.
* ``*reinterpret_cast<const unsigned*>(p)`` on a half array reads the two halfs
  at ``p`` (low 16 bits) and ``p + 1`` (high 16 bits); a ``uint4`` is 8 halfs.
* ``mma16816`` follows the PTX ISA, section "Matrix Fragments for mma.m16n8k16
  with floating point type": it gathers the 32 lanes' registers into A (16x16),
  B (16x8) and C (16x8), computes ``A B + C`` in float32 (fp16 products are
  exact in float32) and scatters D back.
* ``f2h`` (``cvt.rn.f16.f32``) is NumPy's round-to-nearest-even float16 cast,
  ``exp2f`` is ``np.exp2`` in float32, ``fmaxf`` is ``np.fmax`` (which, like
  ``fmaxf``, ignores a NaN operand).

Known, tolerated differences from the GPU: the tensor cores' internal
accumulation order and rounding, ``exp2f``'s 2-ulp error, and FMA contraction
the compiler may apply (e.g. in the combine). They are far below the 2e-3
tolerance. Everything else -- in particular every index expression -- is
meant to be the CUDA's own, so that a reader can hold this file next to
``_CUDA_SRC`` and compare line by line. ``test_emulator_tracks_the_source``
fails when the CUDA source or the launcher changes, so that the emulator is
re-read whenever the kernel is edited.
"""

from __future__ import annotations

import hashlib
import inspect
import math
from types import SimpleNamespace

import numpy as np
import pytest

from llmmath import attention_kernels as AK
from llmmath import kernels

NAN_HALF = np.uint16(0x7E00)   # an fp16 quiet NaN: the "garbage" in uninitialised shared memory
N_SM = 132                     # H100 SXM / H200 multiprocessor count, for the launcher's default splits


# ---------------------------------------------------------------------------
# #defines, per (D, G)
# ---------------------------------------------------------------------------

def defines(D: int, G: int) -> SimpleNamespace:
    """The kernel's preprocessor constants for head dim ``D`` and group ``G``."""
    TILE, SUB, NT = 64, 256, 128
    return SimpleNamespace(D=D, G=G, TILE=TILE, SUB=SUB, NT=NT, DP=D + 8, SP=SUB + 8, NB=D // 32,
                           VPR=D // 8, LPT=TILE * (D // 8) // NT)


# ---------------------------------------------------------------------------
# Memory access helpers (bounds, alignment and write-conflict checks)
# ---------------------------------------------------------------------------

def _check(arr, idx, align=1):
    idx = np.asarray(idx)
    assert idx.size == 0 or (idx.min() >= 0 and idx.max() + align <= arr.size), \
        f"out of bounds: [{idx.min()}, {idx.max() + align}) of {arr.size}"
    assert np.all(idx % align == 0), f"misaligned {2 * align}-byte access"
    return idx


def ld(arr, idx, mask=None):
    """``arr[idx]`` per thread; inactive threads (``mask`` false) read nothing (0)."""
    idx = np.asarray(idx)
    if mask is None:
        return arr[_check(arr, idx)]
    out = np.zeros(idx.shape, arr.dtype)
    out[mask] = arr[_check(arr, idx[mask])]
    return out


def st(arr, idx, val, mask=None):
    """``arr[idx] = val`` per thread (only where ``mask``); two threads storing to one address is an error."""
    idx, val = np.broadcast_arrays(np.asarray(idx), np.asarray(val, arr.dtype))
    if mask is not None:
        idx, val = idx[mask], val[mask]
    _check(arr, idx)
    assert np.unique(idx).size == idx.size, "two threads store to the same address in one instruction"
    arr[idx] = val


def ld_u32(h, idx, k=0):
    """``reinterpret_cast<const unsigned*>(h + idx)[k]``: halfs ``idx + 2k`` (low 16 bits) and ``idx + 2k + 1``."""
    i = _check(h, np.asarray(idx) + 2 * k, align=2)
    return h[i].astype(np.uint32) | (h[i + 1].astype(np.uint32) << 16)


def ld_u4(h, idx):
    """A 16-byte load ``*reinterpret_cast<const uint4*>(h + idx)``: 8 halfs, shape ``idx.shape + (8,)``."""
    i = _check(h, np.asarray(idx), align=8)
    return h[i[..., None] + np.arange(8)]


def st_u4(h, idx, val):
    """A 16-byte store ``*reinterpret_cast<uint4*>(h + idx) = val`` (``val``: ``idx.shape + (8,)`` halfs)."""
    i = _check(h, np.asarray(idx), align=8)
    assert np.unique(i).size == i.size, "two threads store to the same uint4 in one instruction"
    h[i[..., None] + np.arange(8)] = val


def h2f(bits):
    """fp16 bit patterns (any unsigned dtype holding 16 bits) -> float32, exactly."""
    return np.asarray(bits, np.uint16).view(np.float16).astype(np.float32)


def shfl_xor(x, o):
    """``__shfl_xor_sync(0xffffffff, x, o)`` for one warp: ``x`` has shape ``(32,)``."""
    return x[np.arange(32) ^ o]


# ---------------------------------------------------------------------------
# __device__ functions
# ---------------------------------------------------------------------------

def mma16816(c, a, b):
    """``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {c}, {a}, {b}, {c}`` for every warp of the block.

    ``c``: float32 ``(4, NT)`` (c[0..3] of each thread, updated in place);
    ``a``: uint32 ``(4, NT)``; ``b``: uint32 ``(2, NT)``. Fragment layout (PTX ISA
    9.7.15.5.8, groupID = lane >> 2, threadID_in_group = lane % 4; the lower
    matrix index sits in the low 16 bits of a register):
    a0 = A[g][2t, 2t+1], a1 = A[g+8][2t, 2t+1], a2 = A[g][2t+8, 2t+9], a3 = A[g+8][2t+8, 2t+9];
    b0 = B[2t, 2t+1][g], b1 = B[2t+8, 2t+9][g];
    c0, c1 = C[g][2t, 2t+1], c2, c3 = C[g+8][2t, 2t+1].
    """
    nt = c.shape[1]
    nw = nt // 32
    a, b, cw = a.reshape(4, nw, 32), b.reshape(2, nw, 32), c.reshape(4, nw, 32)
    assert np.shares_memory(cw, c)   # D is written back into the caller's registers
    g, t = np.arange(32) >> 2, np.arange(32) & 3
    lo, hi = (lambda r: h2f(r & 0xFFFF)), (lambda r: h2f(r >> 16))
    A = np.zeros((nw, 16, 16), np.float32)
    B = np.zeros((nw, 16, 8), np.float32)
    C = np.zeros((nw, 16, 8), np.float32)
    A[:, g, 2 * t], A[:, g, 2 * t + 1] = lo(a[0]), hi(a[0])
    A[:, g + 8, 2 * t], A[:, g + 8, 2 * t + 1] = lo(a[1]), hi(a[1])
    A[:, g, 2 * t + 8], A[:, g, 2 * t + 9] = lo(a[2]), hi(a[2])
    A[:, g + 8, 2 * t + 8], A[:, g + 8, 2 * t + 9] = lo(a[3]), hi(a[3])
    B[:, 2 * t, g], B[:, 2 * t + 1, g] = lo(b[0]), hi(b[0])
    B[:, 2 * t + 8, g], B[:, 2 * t + 9, g] = lo(b[1]), hi(b[1])
    C[:, g, 2 * t], C[:, g, 2 * t + 1] = cw[0], cw[1]
    C[:, g + 8, 2 * t], C[:, g + 8, 2 * t + 1] = cw[2], cw[3]
    Dm = np.matmul(A, B) + C
    cw[0], cw[1] = Dm[:, g, 2 * t], Dm[:, g, 2 * t + 1]
    cw[2], cw[3] = Dm[:, g + 8, 2 * t], Dm[:, g + 8, 2 * t + 1]


def f2h(x):
    """``cvt.rn.f16.f32``: float32 -> fp16 bits, round to nearest even."""
    return np.asarray(x, np.float32).astype(np.float16).view(np.uint16)


def exp2f(x):
    return np.exp2(np.asarray(x, np.float32)).astype(np.float32)


def fetch(k, src, src_off, start, L):
    """``fetch(r, src + src_off, start, L)``: returns ``r`` as ``(LPT, NT, 8)`` halfs (one uint4 per k)."""
    tid = np.arange(k.NT)
    r = np.zeros((k.LPT, k.NT, 8), np.uint16)
    for kk in range(k.LPT):
        i = tid + kk * k.NT
        row, vec = i // k.VPR, i % k.VPR
        t = start + row
        ok = (t >= 0) & (t < L)
        r[kk][ok] = ld_u4(src, src_off + t[ok] * k.D + vec[ok] * 8)   # else make_uint4(0, 0, 0, 0)
    return r


def stash(k, dst, r):
    """``stash(dst, r)``: the block's registers into a shared tile with row stride ``DP``."""
    tid = np.arange(k.NT)
    for kk in range(k.LPT):
        i = tid + kk * k.NT
        row, vec = i // k.VPR, i % k.VPR
        st_u4(dst, row * k.DP + vec * 8, r[kk])


def tile_start(k, tiles, tiles_bh_off, j):
    """``tile_start(tiles_bh, j)``; ``tiles`` is None for a NULL pointer."""
    return int(ld(tiles, tiles_bh_off + j)) if tiles is not None else j * k.TILE


# ---------------------------------------------------------------------------
# __global__ decode_attn_split: one thread block
# ---------------------------------------------------------------------------

def decode_attn_split(k, grid, block, Q, K, V, tiles, L, n_tiles, tiles_per_cta, Opart, Mpart, Lpart):
    """Block ``block = (blockIdx.x, .y, .z)`` of ``decode_attn_split`` on grid ``grid = gridDim``."""
    D, G, TILE, SUB, NT, DP, SP, NB = k.D, k.G, k.TILE, k.SUB, k.NT, k.DP, k.SP, k.NB
    split, h, b = block
    splits, Hkv = grid[0], grid[1]
    tid = np.arange(NT)
    warp, lane = tid >> 5, tid & 31
    gid, tig = lane >> 2, lane & 3

    # __shared__ (uninitialised: NaN)
    Qs = np.full(16 * DP, NAN_HALF, np.uint16)
    KV = np.full(TILE * DP, NAN_HALF, np.uint16)
    Ps = np.full(16 * SP, NAN_HALF, np.uint16)
    S = np.full(G * SUB, np.nan, np.float32)
    m_run, l_run, alpha = (np.full(G, np.nan, np.float32) for _ in range(3))

    bh = b * Hkv + h
    Kbh = bh * L * D          # element offsets of the pointers Kbh, Vbh, tiles_bh
    Vbh = bh * L * D
    tiles_bh = bh * n_tiles if tiles is not None else None

    for i0 in range(0, 16 * D, NT):
        i = i0 + tid
        act = i < 16 * D
        r, c = i // D, i % D
        st(Qs, r * DP + c, np.where(r < G, ld(Q, (bh * G + r) * D + c, act & (r < G)), 0), act)
    for i0 in range(0, 16 * SP, NT):
        i = i0 + tid
        st(Ps, i, 0, i < 16 * SP)                  # rows >= G stay zero
    st(m_run, tid, -np.inf, tid < G)
    st(l_run, tid, 0.0, tid < G)
    # __syncthreads()

    # A fragments of Q for every k-step of the score mma
    qa = np.zeros((D // 16, 4, NT), np.uint32)
    for ks in range(D // 16):
        r0 = gid * DP + ks * 16 + tig * 2
        r1 = (gid + 8) * DP + ks * 16 + tig * 2
        qa[ks][0], qa[ks][1] = ld_u32(Qs, r0, 0), ld_u32(Qs, r1, 0)      # r0[0], r1[0]
        qa[ks][2], qa[ks][3] = ld_u32(Qs, r0, 4), ld_u32(Qs, r1, 4)      # r0[4], r1[4]
    acc = np.zeros((NB, 4, NT), np.float32)

    t_begin = split * tiles_per_cta
    t_end = min(n_tiles, t_begin + tiles_per_cta)
    for t0 in range(t_begin, t_end, SUB // TILE):
        nt = min(SUB // TILE, t_end - t0)

        # ---- pass 1: scores of this sub-chunk, S[g][col] (log2 domain), -inf past L
        pre = fetch(k, K, Kbh, tile_start(k, tiles, tiles_bh, t0), L)
        for j in range(nt):
            start = tile_start(k, tiles, tiles_bh, t0 + j)
            stash(k, KV, pre)
            # __syncthreads()
            if j + 1 < nt:
                pre = fetch(k, K, Kbh, tile_start(k, tiles, tiles_bh, t0 + j + 1), L)
            for nb in range(2):
                c = np.zeros((4, NT), np.float32)
                kr = (warp * 16 + nb * 8 + gid) * DP + tig * 2        # const half_t* kr = KV + ...
                for ks in range(D // 16):
                    bf = np.stack([ld_u32(KV, kr + ks * 16), ld_u32(KV, kr + ks * 16 + 8)])
                    mma16816(c, qa[ks], bf)
                key = warp * 16 + nb * 8 + tig * 2
                col, tok = j * TILE + key, start + key
                lo_ok, hi_ok = gid < G, gid + 8 < G
                st(S, gid * SUB + col, np.where(tok < L, c[0], -np.inf), lo_ok)
                st(S, gid * SUB + col + 1, np.where(tok + 1 < L, c[1], -np.inf), lo_ok)
                st(S, (gid + 8) * SUB + col, np.where(tok < L, c[2], -np.inf), hi_ok)
                st(S, (gid + 8) * SUB + col + 1, np.where(tok + 1 < L, c[3], -np.inf), hi_ok)
            # __syncthreads()
        pre = fetch(k, V, Vbh, tile_start(k, tiles, tiles_bh, t0), L)   # V tile 0 flies while the softmax runs

        # ---- pass 2: online softmax statistics, P = exp2(S - m) as fp16; one warp per query head
        ncols = nt * TILE
        ln = np.arange(32)
        for w in range(NT // 32):
            for g in range(w, G, NT // 32):
                mx = np.full(32, -np.inf, np.float32)
                for i0 in range(0, ncols, 32):
                    i = i0 + ln
                    mx = np.where(i < ncols, np.fmax(mx, ld(S, g * SUB + i, i < ncols)), mx)
                for o in (16, 8, 4, 2, 1):
                    mx = np.fmax(mx, shfl_xor(mx, o))
                m_old = np.full(32, ld(m_run, g), np.float32)
                m_new = np.fmax(m_old, mx)
                m_use = np.where(m_new == -np.inf, np.float32(0), m_new)
                s = np.zeros(32, np.float32)
                for i0 in range(0, SUB, 32):
                    i = i0 + ln
                    p = np.where(i < ncols, exp2f(ld(S, g * SUB + i, i < ncols) - m_use), np.float32(0))
                    s = (s + p).astype(np.float32)
                    st(Ps, g * SP + i, f2h(p))
                for o in (16, 8, 4, 2, 1):
                    s = (s + shfl_xor(s, o)).astype(np.float32)
                # if (lane == 0)
                a = exp2f(m_old[0] - m_use[0])
                alpha[g] = a
                l_run[g] = l_run[g] * a + s[0]
                m_run[g] = m_new[0]
        # __syncthreads()
        a_lo = np.where(gid < G, ld(alpha, gid, gid < G), np.float32(1))
        a_hi = np.where(gid + 8 < G, ld(alpha, gid + 8, gid + 8 < G), np.float32(1))
        for nb in range(NB):
            acc[nb][0] *= a_lo
            acc[nb][1] *= a_lo
            acc[nb][2] *= a_hi
            acc[nb][3] *= a_hi

        # ---- pass 3: acc += P V; warp w owns output columns [w D/4, (w+1) D/4)
        for j in range(nt):
            stash(k, KV, pre)
            # __syncthreads()
            if j + 1 < nt:
                pre = fetch(k, V, Vbh, tile_start(k, tiles, tiles_bh, t0 + j + 1), L)
            for kk in range(TILE // 16):
                pc = j * TILE + kk * 16 + tig * 2
                pa = np.stack([ld_u32(Ps, gid * SP + pc), ld_u32(Ps, (gid + 8) * SP + pc),
                               ld_u32(Ps, gid * SP + pc + 8), ld_u32(Ps, (gid + 8) * SP + pc + 8)])
                vr = kk * 16 + tig * 2
                for nb in range(NB):
                    col = warp * (D // 4) + nb * 8 + gid
                    u = lambda r: ld(KV, r * DP + col).astype(np.uint32)     # (unsigned)KV[r * DP + col]
                    bf = np.stack([u(vr) | (u(vr + 1) << 16), u(vr + 8) | (u(vr + 9) << 16)])
                    mma16816(acc[nb], pa, bf)
            # __syncthreads()

    O = (bh * splits + split) * (G * D)       # float* O = Opart + ...
    for nb in range(NB):
        col = warp * (D // 4) + nb * 8 + tig * 2
        lo_ok, hi_ok = gid < G, gid + 8 < G
        st(Opart, O + gid * D + col, acc[nb][0], lo_ok)
        st(Opart, O + gid * D + col + 1, acc[nb][1], lo_ok)
        st(Opart, O + (gid + 8) * D + col, acc[nb][2], hi_ok)
        st(Opart, O + (gid + 8) * D + col + 1, acc[nb][3], hi_ok)
    st(Mpart, (bh * splits + split) * G + tid, ld(m_run, tid, tid < G), tid < G)
    st(Lpart, (bh * splits + split) * G + tid, ld(l_run, tid, tid < G), tid < G)


# ---------------------------------------------------------------------------
# __global__ decode_attn_combine: one block per (bh, g) row, D threads
# ---------------------------------------------------------------------------

def decode_attn_combine(k, row, Opart, Mpart, Lpart, splits, out):
    D, G = k.D, k.G
    bh, g, d = row // G, row % G, np.arange(D)
    M = np.full(D, -np.inf, np.float32)
    for s in range(splits):
        M = np.fmax(M, ld(Mpart, np.full(D, (bh * splits + s) * G + g)))
    l = np.zeros(D, np.float32)
    o = np.zeros(D, np.float32)
    for s in range(splits):
        i = (bh * splits + s) * G + g
        w = exp2f(ld(Mpart, np.full(D, i)) - M)
        l = (l + w * ld(Lpart, np.full(D, i))).astype(np.float32)
        o = (o + w * ld(Opart, i * D + d)).astype(np.float32)
    st(out, row * D + d, o / l)


# ---------------------------------------------------------------------------
# The launcher: _fused, with the device's SM count as a parameter
# ---------------------------------------------------------------------------

def fused(q, k_cache, v_cache, scale, tiles=None, splits=None, n_sm=N_SM):
    """``attention_kernels._fused`` on the emulated GPU. Returns ``out (B, Hq, D)`` and the launch record."""
    B, Hq, D = q.shape
    Hkv, L = k_cache.shape[1], k_cache.shape[2]
    G = Hq // Hkv
    assert AK.fused_smem_bytes(D, G) <= 48 * 1024 and D % 32 == 0 and 1 <= G <= 16
    assert k_cache.dtype == v_cache.dtype == np.float16
    k = defines(D, G)
    qh = np.ascontiguousarray((q.astype(np.float32) * (scale * AK._LOG2E)).astype(np.float16))
    if tiles is None:
        n_tiles = -(-L // AK.TILE)
    else:
        tiles = np.ascontiguousarray(tiles, dtype=np.int32)
        n_tiles = tiles.shape[-1]
    if splits is None:  # enough blocks to fill the chip several times over, each with >= 4 tiles
        want = max(1, (8 * n_sm) // max(1, B * Hkv))
        splits = max(1, min(want, -(-n_tiles // 4)))
    tpc = -(-n_tiles // splits)
    splits = -(-n_tiles // tpc)
    opart = np.full(B * Hkv * splits * G * D, np.nan, np.float32)     # cp.empty: garbage
    mpart = np.full(B * Hkv * splits * G, np.nan, np.float32)
    lpart = np.full(B * Hkv * splits * G, np.nan, np.float32)
    out = np.full(B * Hq * D, np.nan, np.float32)
    Qb, Kb, Vb = (np.ascontiguousarray(a).reshape(-1).view(np.uint16) for a in (qh, k_cache, v_cache))
    tb = tiles.reshape(-1) if tiles is not None else None
    grid = (splits, Hkv, B)
    for bz in range(B):
        for by in range(Hkv):
            for bx in range(splits):
                decode_attn_split(k, grid, (bx, by, bz), Qb, Kb, Vb, tb, L, n_tiles, tpc, opart, mpart, lpart)
    for row in range(B * Hq):
        decode_attn_combine(k, row, opart, mpart, lpart, splits, out)
    launch = SimpleNamespace(splits=splits, tiles_per_cta=tpc, n_tiles=n_tiles,
                             opart=opart.reshape(B, Hkv, splits, G, D), mpart=mpart.reshape(B, Hkv, splits, G),
                             lpart=lpart.reshape(B, Hkv, splits, G))
    return out.reshape(B, Hq, D), launch


def sparse_tiles(blocks, block_size, B, Hkv):
    """The ``tiles`` argument built by ``block_sparse_decode_attention`` for the fused kernel."""
    xp = np
    tiles = (blocks[..., None] * block_size + xp.arange(0, block_size, AK.TILE)[None, None, None, :])
    return tiles.reshape(B, Hkv, -1).astype(xp.int32)


# ---------------------------------------------------------------------------
# Tests
# ---------------------------------------------------------------------------

def _cache(B, Hq, Hkv, L, D, seed=0):
    return AK.random_cache(B, Hq, Hkv, L, D, dtype="fp16", seed=seed, be=kernels._cpu_backend())


def _rel_err(out, ref):
    return float(np.abs(out - ref).max() / np.abs(ref).max())


def test_emulator_tracks_the_source():
    """The emulator was written against this kernel and launcher; re-read both after any edit, then update."""
    src = hashlib.sha256(AK._CUDA_SRC.encode()).hexdigest()[:16]
    launcher = hashlib.sha256(inspect.getsource(AK._fused).encode()).hexdigest()[:16]
    assert (src, launcher) == ("33c0d1d11276dbbc", "3514d87c7546afa6"), (
        f"the CUDA kernel or its launcher changed (hashes now {src}, {launcher}): re-read this emulator against "
        "_CUDA_SRC and _fused line by line, bring it up to date, then put the new hashes here")
    assert "xp.arange(0, block_size, TILE)[None, None, None, :]" in inspect.getsource(AK.block_sparse_decode_attention)


def test_mma16816_layout_is_a_bijection_and_multiplies():
    """Pack A, B, C by the documented layout, run the emulated mma, compare with A @ B + C."""
    rng = np.random.default_rng(0)
    A = rng.standard_normal((16, 16)).astype(np.float16)
    Bm = rng.standard_normal((16, 8)).astype(np.float16)
    C = rng.standard_normal((16, 8)).astype(np.float32)
    lane = np.arange(128) & 31
    g, t = lane >> 2, lane & 3
    def u(m, r, c):  # the 32-bit register holding m[r, c] (low half) and m[r, c + 1]
        h = m.view(np.uint16)
        return h[r, c].astype(np.uint32) | (h[r, c + 1].astype(np.uint32) << 16)
    a = np.stack([u(A, g, 2 * t), u(A, g + 8, 2 * t), u(A, g, 2 * t + 8), u(A, g + 8, 2 * t + 8)])
    BT = np.ascontiguousarray(Bm.T)      # B's column n, rows k and k+1: consecutive in B^T
    b = np.stack([u(BT, g, 2 * t), u(BT, g, 2 * t + 8)])
    c = np.stack([C[g, 2 * t], C[g, 2 * t + 1], C[g + 8, 2 * t], C[g + 8, 2 * t + 1]])
    # every element of A, B, C is held by exactly one (lane, register, half) of a warp
    g32, t32 = g[:32], t[:32]
    for shape, places in (((16, 16), [(g32, 2 * t32), (g32 + 8, 2 * t32), (g32, 2 * t32 + 8), (g32 + 8, 2 * t32 + 8)]),
                          ((8, 16), [(g32, 2 * t32), (g32, 2 * t32 + 8)]),         # B^T: [n][k]
                          ((16, 8), [(g32, 2 * t32), (g32 + 8, 2 * t32)])):
        cover = np.zeros(shape, int)
        for rows, cols in places:
            np.add.at(cover, (rows, cols), 1)
            np.add.at(cover, (rows, cols + 1), 1)
        assert (cover == 1).all()
    mma16816(c, a, b)
    D = A.astype(np.float32) @ Bm.astype(np.float32) + C
    np.testing.assert_allclose(c[0], D[g, 2 * t], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c[1], D[g, 2 * t + 1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c[2], D[g + 8, 2 * t], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(c[3], D[g + 8, 2 * t + 1], rtol=1e-6, atol=1e-6)


# (B, Hkv, G, D, L, splits, expected (splits, tiles_per_cta) after the launcher)
DENSE = [
    pytest.param(1, 2, 1, 32, 1, None, (1, 1), id="G1-D32-L1"),
    pytest.param(1, 1, 4, 64, 65, None, (1, 2), id="G4-D64-L65"),
    pytest.param(2, 1, 8, 128, 300, 1, (1, 5), id="G8-D128-L300-one-split-two-subchunks"),
    pytest.param(1, 1, 16, 128, 1000, 3, (3, 6), id="G16-D128-L1000-tpc6-last-split-partial"),
    pytest.param(1, 2, 8, 32, 512, 2, (2, 4), id="G8-D32-L512-multiple-of-64"),
    pytest.param(1, 1, 16, 64, 1000, None, (4, 4), id="G16-D64-L1000-default-splits"),
    pytest.param(1, 1, 4, 32, 300, 100, (5, 1), id="G4-D32-L300-one-tile-per-split"),
    pytest.param(1, 1, 12, 96, 130, None, (1, 3), id="G12-D96-L130"),
    pytest.param(1, 1, 3, 192, 257, 2, (2, 3), id="G3-D192-L257"),
    pytest.param(1, 1, 1, 128, 2000, 1, (1, 32), id="G1-D128-L2000-tpc32"),
]


@pytest.mark.parametrize("B, Hkv, G, D, L, splits, expect", DENSE)
def test_dense_matches_reference(B, Hkv, G, D, L, splits, expect):
    q, k, v = _cache(B, Hkv * G, Hkv, L, D, seed=L + D + G)
    scale = 1.0 / math.sqrt(D)
    out, launch = fused(q, k, v, scale, splits=splits)
    assert (launch.splits, launch.tiles_per_cta) == expect
    assert np.isfinite(out).all() and np.isfinite(launch.opart).all() and np.isfinite(launch.lpart).all()
    ref = AK.reference_decode_attention(q, k, v, scale)
    assert _rel_err(out, ref) < 2e-3


# (B, Hkv, G, D, L, block_size, kept blocks per K/V head (None: select_blocks, top_k = 3), splits)
SPARSE = [
    pytest.param(1, 2, 4, 64, 300, 128, [[0, 2], [1, 2]], None, id="bs128-L300-last-block-has-a-tile-past-L"),
    pytest.param(1, 2, 4, 64, 300, 128, [[0, 2], [1, 2]], 4, id="bs128-L300-split-with-only-masked-tokens"),
    pytest.param(1, 1, 8, 128, 1000, 64, [[1, 4, 9, 12, 15]], None, id="bs64-L1000-five-blocks-last-kept"),
    pytest.param(2, 1, 16, 32, 700, 64, [[0, 3, 10]], 2, id="bs64-L700-G16-two-splits"),
    pytest.param(1, 2, 8, 64, 1000, 256, None, None, id="bs256-L1000-select_blocks-top3"),
]


@pytest.mark.parametrize("B, Hkv, G, D, L, block_size, blocks, splits", SPARSE)
def test_block_sparse_matches_reference_on_kept_tokens(B, Hkv, G, D, L, block_size, blocks, splits):
    q, k, v = _cache(B, Hkv * G, Hkv, L, D, seed=3 * L + G)
    scale = 1.0 / math.sqrt(D)
    if blocks is None:
        blocks = AK.select_blocks(q, AK.block_summaries(k, block_size), 3)
        assert blocks.shape == (B, Hkv, 3)
    else:  # one list of kept blocks per K/V head, the same for every sequence
        blocks = np.broadcast_to(np.asarray(blocks)[None], (B, Hkv, len(blocks[0])))
    out, launch = fused(q, k, v, scale, tiles=sparse_tiles(blocks, block_size, B, Hkv), splits=splits)
    assert np.isfinite(out).all() and np.isfinite(launch.opart).all()
    ref = np.empty((B, Hkv * G, D))
    for b in range(B):
        for h in range(Hkv):
            tok = (blocks[b, h][:, None] * block_size + np.arange(block_size)).reshape(-1)
            tok = tok[tok < L]
            ref[b, h * G:(h + 1) * G] = AK.reference_decode_attention(
                q[b:b + 1, h * G:(h + 1) * G], k[b:b + 1, h:h + 1, tok], v[b:b + 1, h:h + 1, tok], scale)[0]
    assert _rel_err(out, ref) < 2e-3


@pytest.mark.parametrize("G, D, L, splits", [(4, 128, 1000, 4), (8, 64, 700, 3)])
def test_large_logits_do_not_overflow_the_combine(G, D, L, splits):
    """Scale 40/sqrt(D): log2-domain maxima beyond 128, so 2^m alone would overflow float32.

    Compared with the reference on the kernel's own fp16 query (scores ``qh . k`` in log2 units,
    i.e. natural-log scale ln 2), which isolates the kernel's error from the rounding of ``q``
    to fp16; and with the plain reference at the usual tolerance.
    """
    q, k, v = _cache(1, G, 1, L, D, seed=7)
    scale = 40.0 / math.sqrt(D)
    out, launch = fused(q, k, v, scale, splits=splits)
    assert launch.splits == splits and launch.mpart.max() > 128
    assert np.isfinite(out).all()
    qh = (q.astype(np.float32) * (scale * AK._LOG2E)).astype(np.float16)
    assert _rel_err(out, AK.reference_decode_attention(qh, k, v, math.log(2))) < 2e-4
    assert _rel_err(out, AK.reference_decode_attention(q, k, v, scale)) < 2e-3
