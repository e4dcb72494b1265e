"""Speed of the serving-engine simulator (llmmath.engine.simulate).

Issue 40's cases: 100,000 and 1,000,000 requests of 1,000 input and 200 output tokens on Llama-3.1-8B fp8 on one
H100, below saturation (2 and 20 requests/s) and at it (1,000 requests/s); its targets on the course's 2-core CPU:
at most 3 s per 100,000 requests and 30 s per 1,000,000. Then issue 29's: one replica of Llama-3.1-70B over 8
H100s (TP8) at a light, a near-capacity and an overloaded rate, with whole-request reservations, swap preemption and
a separate 8-GPU prefill pool.

Usage: ``PYTHONPATH=lib python3 benchmarks/engine.py [--out benchmarks/results/engine-cpu-2core.txt] [--million]``.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from llmmath import engine  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--million", action="store_true", help="also ten times as many requests (the 8B cases)")
    a = ap.parse_args(argv)
    head = (f"{'requests/s':>11} {'engine':>22} {'wall s':>8} {'steps':>10} {'output tok/s':>13} "
            f"{'median TTFT':>12} {'median TPOT':>12} {'preemptions':>12}")
    lines = [f"engine.simulate on {platform.processor() or platform.machine()}, Python {platform.python_version()}"]

    def run(model, chips, n, rate, name, **kw):
        t0 = time.perf_counter()
        r = engine.simulate(model, "h100-sxm", chips, requests_per_s=rate, n_requests=n, input_tokens=1000,
                            output_tokens=200, **kw)
        wall = time.perf_counter() - t0
        lines.append(f"{rate:>11.0f} {name:>22} {wall:>8.2f} {r.steps:>10,} {r.throughput_output_tokens_per_s:>13,.0f} "
                     f"{r.percentile('ttft_s', 50) * 1e3:>10.1f}ms {r.percentile('tpot_s', 50) * 1e3:>10.2f}ms "
                     f"{r.preemptions:>12,}")
        print(lines[-1], flush=True)

    for n in (a.requests, 10 * a.requests) if a.million else (a.requests,):
        lines += [f"{n:,} requests (1,000 in / 200 out), llama-3.1-8b fp8 on 1 x h100-sxm", head]
        for rate in (2.0, 20.0, 1000.0):
            run("llama-3.1-8b", 1, n, rate, "paged, recompute", weight_dtype="fp8")
    lines += [f"{a.requests:,} requests (1,000 in / 200 out), llama-3.1-70b on 8 x h100-sxm TP8", head]
    cases = [(2.0, "paged, recompute", {}), (20.0, "paged, recompute", {}), (200.0, "paged, recompute", {}),
             (20.0, "reserve", {"kv_policy": "reserve"}), (20.0, "paged, swap", {"preemption": "swap"}),
             (20.0, "+ 8-GPU prefill pool", {"prefill": {"n_chips": 8, "tp": 8}})]
    for rate, name, kw in cases:
        run("llama-3.1-70b", 8, a.requests, rate, name, tp=8, **kw)
    text = "\n".join(lines)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
