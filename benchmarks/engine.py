"""Speed of the serving-engine simulator (llmmath.engine.simulate): 100,000 requests of 1,000 input and 200 output
tokens on one replica of Llama-3.1-70B over 8 H100s (TP8), at a light, a near-capacity and an overloaded arrival rate
(paged KV, recompute preemption); then the same near-capacity load with whole-request reservations, with swap
preemption, and with a separate 8-GPU prefill pool (prefill/decode disaggregation).

Usage: ``PYTHONPATH=lib python3 benchmarks/engine.py [--out benchmarks/results/engine-cpu-2core.txt]``.
Issue 29 asks for <= 10 s per run on the course's 2-core CPU.
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
    a = ap.parse_args(argv)
    lines = [f"engine.simulate, {a.requests:,} requests (1,000 in / 200 out), llama-3.1-70b on 8 x h100-sxm TP8; "
             f"{platform.processor() or platform.machine()}, Python {platform.python_version()}",
             f"{'requests/s':>11} {'engine':>22} {'wall s':>8} {'steps':>9} {'output tok/s':>13} {'median TTFT':>12} "
             f"{'median TPOT':>12} {'preemptions':>12}"]
    cases = [(2.0, "paged, recompute", {}), (20.0, "paged, recompute", {}), (200.0, "paged, recompute", {}),
             (20.0, "reserve", {"kv_policy": "reserve"}), (20.0, "paged, swap", {"preemption": "swap"}),
             (20.0, "+ 8-GPU prefill pool", {"prefill": {"n_chips": 8, "tp": 8}})]
    for rate, name, kw in cases:
        t0 = time.perf_counter()
        r = engine.simulate("llama-3.1-70b", "h100-sxm", 8, tp=8, requests_per_s=rate, n_requests=a.requests,
                            input_tokens=1000, output_tokens=200, **kw)
        wall = time.perf_counter() - t0
        lines.append(f"{rate:>11.0f} {name:>22} {wall:>8.2f} {r.steps:>9,} {r.throughput_output_tokens_per_s:>13,.0f} "
                     f"{r.percentile('ttft_s', 50) * 1e3:>10.1f}ms {r.percentile('tpot_s', 50) * 1e3:>10.2f}ms "
                     f"{r.preemptions:>12,}")
    text = "\n".join(lines)
    print(text)
    if a.out:
        a.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
