"""Decode attention on a GPU: correctness of the fused kernel, then time vs context at H200 sizes.

Run on a machine with an NVIDIA GPU and CuPy (no Jupyter needed)::

    PYTHONPATH=lib python3 benchmarks/gpu_attention.py --out benchmarks/results/gpu-attention.txt

1. Copy bandwidth: a 2 GiB device-to-device copy (bytes read + written), best of 10.
   Then what the compiler allocated for the fused kernel (registers, shared and
   local memory, as CuPy reports them), the unloaded memory latency (one thread
   chasing a random pointer cycle through 1 GiB) and the latency the kernel's
   bytes in flight can hide at that bandwidth (Little's law; chapter 2).
2. Correctness: for several shapes (GQA groups 1, 4, 8, 16; head dims 64, 128;
   contexts not multiples of the 64-token tile; splits 1 and automatic) the
   fused kernel's output, written into an array first filled with NaN, is
   compared with a float64 NumPy reference computed from the same fp16 cache.
   Block-sparse too (its reference attends to the kept blocks only). Any NaN left,
   or a relative error above 2e-3 (max |out - ref| / max |ref|), fails the run.
3. Timing (CUDA events, after warm-up, median of 20): dense and block-sparse
   (top-32 blocks of 64 tokens = 2,048 tokens, as DSA's top-k) against context
   1K..128K, batch 16, 8 K/V heads x group 8, D = 128, fp16 (a Llama-3.1-70B
   layer at TP1): achieved bytes/s and its ratio to the copy bandwidth; the
   naive CuPy matmul + softmax beside it at a few contexts.

Exits 0 with a message on a machine without a usable GPU. Exits 1 if a
correctness check fails. The target (the issue): >= 80% of the copy bandwidth
at long context for the dense kernel.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

import numpy as np  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="write the results table here (text)")
    ap.add_argument("--max-context", type=int, default=131072)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="fewer shapes and contexts")
    args = ap.parse_args()

    from llmmath import attention_kernels as AK
    from llmmath import kernels

    os.environ.setdefault("LLMMATH_DEVICE", "auto")
    be = kernels.backend()
    if not be.is_gpu:
        print("gpu_attention: no GPU backend (CuPy not installed or no GPU answered); nothing to measure. "
              "Install CuPy for your CUDA (pip install -e '.[gpu]') on a GPU machine and run again.")
        return 0
    cp = be.xp
    lines: list[str] = []

    def say(s=""):
        print(s, flush=True)
        lines.append(s)

    t0 = time.time()
    bw = kernels.measure_copy_bandwidth(be=be)
    say(f"device: {be.device_name}; CuPy {cp.__version__}; copy bandwidth {bw / 1e9:.0f} GB/s (read + write, 2 GiB, best of 10)")
    try:  # diagnostics: a failure here must not cost the correctness and timing runs below
        n_sm = cp.cuda.Device().attributes["MultiProcessorCount"]
        # a RawKernel of the same source and options exposes what the compiler allocated
        fn = cp.RawKernel(AK.kernel_source(128, 8), "decode_attn_split", options=AK.NVRTC_OPTIONS)
        say(f"{n_sm} SMs; fused kernel (D=128, G=8) as CuPy compiled it: {fn.num_regs} registers/thread, "
            f"{fn.shared_size_bytes:,} B static shared memory (model: {AK.fused_smem_bytes(128, 8):,} B), "
            f"{fn.local_size_bytes} B local (spill) memory")
        lat_s = pointer_chase_latency_s(cp)
        rep = AK.CompileReport(128, 8, "sm_90", fn.num_regs, fn.shared_size_bytes, fn.local_size_bytes, "")
        say(f"memory latency, one thread chasing pointers through 1 GiB (unloaded): {lat_s * 1e9:.0f} ns; "
            f"the kernel keeps {n_sm * rep.blocks_per_sm * rep.bytes_in_flight_per_block / 2**20:.1f} MiB in flight "
            f"({rep.blocks_per_sm} blocks/SM), enough for {rep.latency_hidden_s(n_sm, bw) * 1e9:.0f} ns at the copy bandwidth")
    except Exception as e:  # noqa: BLE001
        say(f"(compiler report / latency probe failed: {type(e).__name__}: {e})")

    # ---- correctness ------------------------------------------------------------------------
    say("\ncorrectness (fp16 cache, output pre-filled with NaN, vs float64 reference):")
    shapes = [(2, 8, 8, 1000, 128), (3, 32, 8, 4097, 128), (1, 64, 8, 70, 128), (2, 16, 1, 333, 64),
              (1, 128, 8, 20000, 128), (4, 8, 2, 64, 64), (1, 4, 4, 1, 128), (2, 32, 8, 65, 32)]
    if args.quick:
        shapes = shapes[:3]
    worst = 0.0
    failed = False
    for (B, Hq, Hkv, L, D) in shapes:
        q, k, v = AK.random_cache(B, Hq, Hkv, L, D, dtype="fp16", seed=L, be=be)
        ref = AK.reference_decode_attention(q, k, v)
        for splits in (1, None):
            out = cp.full((B, Hq, D), cp.nan, cp.float32)
            AK.decode_attention(q, k, v, method="cupy", splits=splits, out=out)
            o = cp.asnumpy(out)
            err = float(np.abs(o - ref).max() / np.abs(ref).max())
            nan = bool(np.isnan(o).any())
            worst = max(worst, err)
            bad = nan or err > 2e-3
            failed |= bad
            say(f"  dense  B={B} Hq={Hq} Hkv={Hkv} L={L} D={D} splits={splits or 'auto'}: rel err {err:.2e}"
                f"{' NaN LEFT' if nan else ''}{'  FAIL' if bad else ''}")
        if L >= 128 and D % 32 == 0:
            bs = 64
            n = -(-L // bs)
            top = min(5, n)
            blocks = AK.select_blocks(q, AK.block_summaries(k, bs), top)
            o = cp.asnumpy(AK.block_sparse_decode_attention(q, k, v, bs, top, blocks=blocks, method="cupy"))
            bl, qn, kn, vn = cp.asnumpy(blocks), cp.asnumpy(q), cp.asnumpy(k), cp.asnumpy(v)
            G = Hq // Hkv
            errs = []
            for b in range(B):
                for h in range(Hkv):
                    t = (bl[b, h][:, None] * bs + np.arange(bs)).ravel()
                    t = t[t < L]
                    r = AK.reference_decode_attention(qn[b:b + 1, G * h:G * h + G], kn[b:b + 1, h:h + 1, t],
                                                      vn[b:b + 1, h:h + 1, t])[0]
                    errs.append(np.abs(o[b, G * h:G * h + G] - r).max() / np.abs(r).max())
            err = float(max(errs))
            bad = err > 2e-3 or bool(np.isnan(o).any())
            failed |= bad
            say(f"  sparse B={B} Hq={Hq} Hkv={Hkv} L={L} D={D} top-{top}x{bs}: rel err {err:.2e}{'  FAIL' if bad else ''}")
    say(f"  worst dense relative error {worst:.2e}")
    if failed:
        say("CORRECTNESS FAILED: not timing a wrong kernel.")
        _write(args.out, lines)
        return 1

    # ---- timing -------------------------------------------------------------------------------
    B, Hq, Hkv, D = args.batch, 64, 8, 128
    ctxs = [2**i for i in range(10, 18) if 2**i <= args.max_context]
    if args.quick:
        ctxs = ctxs[::3]
    bs, top = 64, 32
    say(f"\ntiming: batch {B}, {Hq} query heads / {Hkv} K/V heads (G = {Hq // Hkv}), D = {D}, fp16 cache; "
        f"sparse = top-{top} blocks of {bs} (selection done beforehand); CUDA events, median of {args.repeats}")
    q, k, v = AK.random_cache(B, Hq, Hkv, max(ctxs), D, dtype="fp16", be=be)
    say(f"{'L':>7} {'dense':>10} {'GB/s':>7} {'%copy':>6} {'naive':>10} {'%copy':>6} | {'sparse':>10} {'GB/s':>7} "
        f"{'%copy':>6} {'dense/sparse':>12}")
    for L in ctxs:
        kl, vl = cp.ascontiguousarray(k[:, :, :L]), cp.ascontiguousarray(v[:, :, :L])
        out = cp.empty((B, Hq, D), cp.float32)
        td = kernels.time_fn(lambda: AK.decode_attention(q, kl, vl, method="cupy", out=out), warmup=3,
                             repeats=args.repeats, be=be).median_s
        db = AK.dense_bytes(B, Hkv, L, D, 2)
        naive = ""
        naive_pct = ""
        if L in (ctxs[0], ctxs[len(ctxs) // 2], ctxs[-1]):
            tn = kernels.time_fn(lambda: AK.decode_attention(q, kl, vl, method="cupy-naive"), warmup=2,
                                 repeats=max(3, args.repeats // 4), be=be).median_s
            naive, naive_pct = f"{tn * 1e3:>8.3f}ms", f"{db / tn / bw:>6.0%}"
        ts, sb = float("nan"), float("nan")
        if L >= top * bs:
            blocks = AK.select_blocks(q, AK.block_summaries(kl, bs), top)
            ts = kernels.time_fn(lambda: AK.block_sparse_decode_attention(q, kl, vl, bs, top, blocks=blocks,
                                                                          method="cupy"),
                                 warmup=3, repeats=args.repeats, be=be).median_s
            sb = 2.0 * B * Hkv * top * bs * D * 2
        say(f"{L:>7} {td * 1e3:>8.3f}ms {db / td / 1e9:>7.0f} {db / td / bw:>6.0%} {naive:>10} {naive_pct:>6} | "
            f"{ts * 1e3:>8.3f}ms {sb / ts / 1e9:>7.0f} {sb / ts / bw:>6.0%} {td / ts:>12.1f}")
        del kl, vl
    say(f"\n(dense bytes = 2 B H_kv L D x 2 bytes; %copy = achieved bytes/s / copy bandwidth; "
        f"sparse bytes = the kept blocks' K and V; total {time.time() - t0:.0f} s)")
    _write(args.out, lines)
    return 0


_CHASE_SRC = r"""
extern "C" __global__ void chase(const unsigned long long* __restrict__ next, long long hops,
                                 unsigned long long* __restrict__ out) {
  unsigned long long i = 0;
  for (long long h = 0; h < hops; ++h) i = next[i];
  out[0] = i;   // keeps the chain live
}
"""


def pointer_chase_latency_s(cp, span_bytes=2**30, stride_bytes=1024, hops=200_000):
    """Seconds per dependent load: one thread follows a random cycle of nodes 1 KiB apart over ``span_bytes``.

    Every load's address comes from the previous load, so nothing overlaps: time / hops is the
    round-trip latency of a (mostly L2-missing) load with the memory system otherwise idle.
    """
    step = stride_bytes // 8
    n_nodes = span_bytes // stride_bytes
    perm = np.random.default_rng(0).permutation(n_nodes).astype(np.uint64) * np.uint64(step)
    nxt = cp.zeros(span_bytes // 8, cp.uint64)
    nxt[cp.asarray(perm.astype(np.int64))] = cp.asarray(np.roll(perm, -1))  # node -> next node (element index)
    kern = cp.RawKernel(_CHASE_SRC, "chase")
    out = cp.zeros(1, cp.uint64)
    from llmmath import kernels
    # the chain starts at index 0, which is a node (perm covers every node in one cycle)
    kernels.time_fn(lambda: kern((1,), (1,), (nxt, np.int64(1000), out)), warmup=1, repeats=1)
    t = kernels.time_fn(lambda: kern((1,), (1,), (nxt, np.int64(hops), out)), warmup=0, repeats=3)
    del nxt
    return t.min_s / hops


def _write(path, lines):
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
