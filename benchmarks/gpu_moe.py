"""The MoE layer kernel on a GPU: correctness against float64 NumPy, then time against batch (CUDA events).

One script, meant for one short run on an H200 (or any CUDA GPU with CuPy):

1. **Correctness.** A small routed layer (E = 16, k = 4, d = 256, f = 128, B = 300)
   through :func:`llmmath.demos.moe_bench.grouped_expert_matmul` on the GPU in fp32 and fp16,
   both methods ("loop": one matmul pair per touched expert; "padded": two batched
   matmuls), against :func:`llmmath.demos.moe_bench.moe_reference` in float64 on the CPU.
   Tolerances: fp32 relative max error < 1e-4, fp16 < 2e-2.
2. **Timing.** DeepSeek-V3's routed layer (E = 256, k = 8, d = 7168, f = 2048; 15 GB
   of fp16 expert weights) for B = 1 .. 16384 through :func:`llmmath.demos.moe_bench.moe_sweep`,
   which times each call with CUDA events after a warm-up (via
   :func:`llmmath.demos.kernels.time_fn`), beside the per-expert roofline from this GPU's
   measured copy bandwidth and fp16 matmul rate; knee predicted at B = R E / k.

Writes the table to ``--out`` (default ``benchmarks/results/gpu-moe.txt``).
On a machine without a working GPU it prints why and exits 0 without timing anything.

Usage (H200 session)::

    pip install cupy-cuda12x   # match `nvidia-smi`'s CUDA major version
    PYTHONPATH=lib python3 benchmarks/gpu_moe.py --out $OUT/gpu-moe-h200.txt

``--quick`` runs a shorter sweep (B = 1, 16, 256, 4096, 16384; 3 repeats) for a first try.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from llmmath import kernels, moe_bench  # noqa: E402


def correctness(be, lines):
    xp = be.xp
    rng = np.random.default_rng(0)
    B, E, k, d, f = 300, 16, 4, 256, 128
    x = rng.standard_normal((B, d)) / 4
    wu = rng.standard_normal((E, d, f)) / np.sqrt(d)
    wd = rng.standard_normal((E, f, d)) / np.sqrt(f)
    assign = moe_bench.route_uniform(B, E, k, seed=1)
    ref = moe_bench.moe_reference(x, assign, wu, wd)
    ok = True
    for dt, tol in (("float32", 1e-4), ("float16", 2e-2)):
        for method in ("loop", "padded"):
            y = moe_bench.grouped_expert_matmul(xp.asarray(x, dtype=dt), xp.asarray(assign), xp.asarray(wu, dtype=dt),
                                          xp.asarray(wd, dtype=dt), method)
            err = float(np.max(np.abs(be.to_numpy(y).astype(np.float64) - ref)) / np.max(np.abs(ref)))
            good = err < tol
            ok &= good
            lines.append(f"correctness {dt:<8} {method:<6} rel. max error {err:.2e} (tol {tol:g}) {'OK' if good else 'FAIL'}")
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "gpu-moe.txt"))
    ap.add_argument("--quick", action="store_true", help="five batches, three repeats")
    ap.add_argument("--method", choices=["loop", "padded", "both"], default="both")
    args = ap.parse_args(argv)
    os.environ.setdefault("LLMMATH_DEVICE", "auto")
    be = kernels.backend()
    if not be.is_gpu:
        print(f"gpu_moe: no GPU answered (backend: {be.name}, {be.device_name}); nothing to time. "
              "Install CuPy for this machine's CUDA (see README) and run on a GPU.")
        return 0
    lines = [f"# MoE layer on {be.device_name}, {datetime.datetime.now().isoformat(timespec='seconds')}"]
    t0 = time.perf_counter()
    ok = correctness(be, lines)
    print("\n".join(lines), flush=True)
    chip = kernels.local_chip()
    F, W = chip.peak_flops_per_s["fp16"], chip.hbm_bytes_per_s
    lines.append(f"measured ceilings: fp16 matmul {F / 1e12:.0f} TFLOP/s, copy {W / 1e12:.2f} TB/s, R = {F * 2 / (2 * W):.0f}")
    batches = [1, 16, 256, 4096, 16384] if args.quick else None
    methods = ["loop", "padded"] if args.method == "both" else [args.method]
    for method in methods:
        s = moe_bench.moe_sweep(batches=batches, method=method, flops_per_s=F, bytes_per_s=W,
                          repeats=3 if args.quick else None, progress=True, be=be)
        lines += ["", f"## method = {method}: E = {s.n_experts}, k = {s.top_k}, d = {s.d_model}, f = {s.d_ff}, "
                      f"{s.dtype}; predicted knee B = R E / k = {s.knee_batch:,.0f}", s.table()]
        mem = s.compute_s < s.memory_s
        if mem.any():
            lines.append(f"memory-bound region: weights streamed at {np.median(s.memory_s[mem] / s.measured_s[mem]):.0%} "
                         f"of the measured copy bandwidth (median)")
        print("\n".join(lines[-3:]), flush=True)
    lines.append(f"\ntotal {time.perf_counter() - t0:.0f} s; correctness {'OK' if ok else 'FAILED'}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
