"""Decode attention on this machine: time vs context, dense and block-sparse, beside bytes / bandwidth.

    PYTHONPATH=lib python3 benchmarks/attention.py [--out benchmarks/results/attention-cpu.txt]

Uses :func:`llmmath.demos.attention_kernels.context_sweep` with its default sizes for
the backend (CPU: one sequence, 8 K/V heads x group 4, D = 128, fp32 cache,
L = 8K..32K and top-2 blocks of 4,096 on a 32 MiB L3 (sized from the machine's last-level
cache: ``default_sweep_shape``); GPU: see ``benchmarks/gpu_attention.py``, which also checks
correctness). Also times a 10^6-point sweep of the byte models, to show they
stay cheap enough for widgets.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

import numpy as np  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from llmmath import attention, attention_kernels, kernels

    be = kernels.backend()
    rounds = None if be.is_gpu else 7   # as benchmarks/run.py: more chances for each point to run in a quiet moment
    s = attention_kernels.context_sweep(be=be, repeats=rounds)   # its ceiling: the read-only stream, sampled each round
    lines = [f"{s.device} ({s.method}); read-only stream {s.bytes_per_s / 1e9:.1f} GB/s; shape {s.shape}; "
             f"{rounds or 'the library default of'} rounds, each point the best of them", s.table()]
    L = np.geomspace(1e3, 1e7, 10**6)
    t0 = time.perf_counter()
    attention.indexer_topk_kv_bytes(L, 512, 1152, 132)
    attention.block_topk_optimal(L, 16, 1152, 576)
    lines.append(f"byte models, 10^6-point sweep: {(time.perf_counter() - t0) * 1e3:.1f} ms")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
