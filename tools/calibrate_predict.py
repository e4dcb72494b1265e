"""Solve predict's one calibrated constant (data/engine_constants.toml [calibrated]) on the row that isolates it.

``per_kernel_s``, a fixed time per kernel per decode step (``predict.kernels_per_layer`` kernels a layer), is solved
on the one row where it is nearly the whole step: ``vllm-l31-8b-h100-batch1`` (Llama 3.1 8B in bf16 on one H100 at
batch 1, no collective, no low-precision matmul), by bisection on measured / predicted = 1. Everything else in the
prediction is a measured rate with a source (matmuls: ``data/gemm_fractions.toml``).

It prints the constant and the error on every other row (held out). Usage:
``PYTHONPATH=lib python3 tools/calibrate_predict.py`` (about a minute on a 2-core CPU).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from llmmath import planner, predict  # noqa: E402

ANCHOR = "vllm-l31-8b-h100-batch1"


def ratios(per_kernel_s: float, keys=None) -> dict:
    """measured / predicted for the rows ``keys`` (all when None) with the constant set to ``per_kernel_s``."""
    real = predict.engine_constants

    def patched():
        k = dict(real())
        k["calibrated"] = {**k["calibrated"], "per_kernel_s": per_kernel_s}
        return k
    predict.engine_constants = patched
    try:
        return {key: m / p.tokens_per_s_per_chip for key, _, m, p in planner.predicted_vs_measured(keys)}
    finally:
        predict.engine_constants = real


def main() -> int:
    assert planner.calibration_keys() == [ANCHOR], "calibrated_on in engine_constants.toml disagrees"
    lo, hi = 0.0, 1e-4                              # the anchor's ratio rises with per_kernel_s
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratios(mid, [ANCHOR])[ANCHOR] < 1 else (lo, mid)
    t = round(0.5 * (lo + hi) * 1e7) * 1e-7
    e = ratios(t)
    print(f"per_kernel_s = {t * 1e6:.1f}e-6 (solved on {ANCHOR})")
    held = [k for k in e if k != ANCHOR]
    for name, ks in (("calibration", [ANCHOR]), ("held out", held)):
        m, w = planner.prediction_error([e[k] for k in ks])
        print(f"  {name:<12} {len(ks):>3} rows: median |measured/predicted - 1| = {m:.1%}, within 1.5x: {w:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
