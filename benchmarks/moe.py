"""Speed of chapter 3-4's library on this machine: routing, the MoE layer sweep, the cadence simulation.

Prints a table (and writes it to ``--out`` if given):

1. :func:`llmmath.schedule.simulate_cadence` on 10^6 Poisson arrivals, without and
   with a seat limit (target well under 1 s on 2 cores);
2. a 10^6-point :func:`llmmath.serving.balance_batch` sweep over context;
3. :func:`llmmath.demos.moe_bench.moe_sweep` at this backend's default sizes: measured vs
   predicted time per batch, and the predicted knee B = R E / k.

Usage: ``PYTHONPATH=lib python3 benchmarks/moe.py [--out benchmarks/results/moe-cpu.txt]``.
For the GPU run (correctness + H200 sizes) use ``benchmarks/gpu_moe.py``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "lib"))

from llmmath import kernels, moe_bench, schedule, serving  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    lines = [f"# backend: {kernels.backend().device_name}"]
    a = schedule.poisson_arrivals(50_000.0, 1_000_000, seed=0)
    for cap in (None, 1100):
        t0 = time.perf_counter()
        r = schedule.simulate_cadence(a, 0.02, capacity=cap)
        lines.append(f"simulate_cadence, 10^6 arrivals, capacity {cap}: {1e3 * (time.perf_counter() - t0):.0f} ms "
                     f"(mean latency {r.mean_latency_s * 1e3:.2f} ms, worst {r.max_latency_s * 1e3:.2f} ms)")
    L = np.linspace(0, 131072, 1_000_000)
    t0 = time.perf_counter()
    serving.balance_batch("deepseek-v3", "h100-sxm", L)
    lines.append(f"balance_batch over 10^6 contexts: {1e3 * (time.perf_counter() - t0):.0f} ms")
    s = moe_bench.moe_sweep(progress=False)
    lines += [f"MoE sweep: E = {s.n_experts}, k = {s.top_k}, d = {s.d_model}, f = {s.d_ff}, {s.dtype}; "
              f"F = {s.flops_per_s / 1e9:.0f} GFLOP/s, W = {s.bytes_per_s / 1e9:.1f} GB/s, R = {s.balance_ratio:.1f}, "
              f"predicted knee B = {s.knee_batch:.0f}", s.table()]
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
