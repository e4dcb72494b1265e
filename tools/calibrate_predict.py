"""Fit predict's two calibrated constants (data/engine_constants.toml [calibrated]), each on the rows that isolate it.

1. ``per_kernel_s``, a fixed time per kernel per decode step (``predict.kernels_per_layer`` kernels a layer), is
   solved on the one row where it is nearly the whole step: ``vllm-l31-8b-h100-batch1`` (Llama 3.1 8B in bf16 on
   one H100 at batch 1, no collective, no low-precision matmul). Bisection on measured / predicted = 1.
2. ``low_precision_matmul_factor``, what fp8/fp4 matmuls reach of their peak relative to the fp16 fraction, is then
   fitted on the 24 large-batch FP8 rows ``trtllm017-*`` (least median |measured / predicted - 1|, grid 0.01).

It prints both constants and the error on the calibration rows and on every other row (held out). Usage:
``PYTHONPATH=lib python3 tools/calibrate_predict.py`` (about two minutes on a 2-core CPU).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from llmmath import planner, predict  # noqa: E402

ANCHOR = "vllm-l31-8b-h100-batch1"
FACTOR_ROWS = "trtllm017-"


def ratios(per_kernel_s: float, factor: float, keys=None) -> dict:
    """measured / predicted for the rows ``keys`` (all when None) with the two constants set to these values."""
    real = predict.engine_constants

    def patched():
        k = dict(real())
        k["calibrated"] = {**k["calibrated"], "per_kernel_s": per_kernel_s, "low_precision_matmul_factor": factor}
        return k
    predict.engine_constants = patched
    try:
        return {key: m / p.tokens_per_s_per_chip for key, _, m, p in planner.predicted_vs_measured(keys)}
    finally:
        predict.engine_constants = real


def score(e: dict, keys) -> tuple[float, float]:
    """(median |ratio - 1|, share of rows within 1.5x either way) over the rows ``keys``."""
    return planner.prediction_error([e[k] for k in keys])


def main() -> int:
    lo, hi = 0.0, 1e-4                              # the anchor's ratio rises with per_kernel_s
    for _ in range(30):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ratios(mid, 1.0, [ANCHOR])[ANCHOR] < 1 else (lo, mid)
    t = round(0.5 * (lo + hi) * 1e7) * 1e-7
    keys = list(planner.measurements())
    cal = [k for k in keys if k.startswith(FACTOR_ROWS)]
    assert set(cal + [ANCHOR]) == set(planner.calibration_keys()), "calibrated_on in engine_constants.toml disagrees"
    grid = np.round(np.arange(0.40, 1.0001, 0.01), 2)
    f = min(grid, key=lambda x: score(ratios(t, float(x), cal), cal)[0])
    e = ratios(t, float(f))
    print(f"per_kernel_s = {t * 1e6:.1f}e-6 (solved on {ANCHOR}); "
          f"low_precision_matmul_factor = {f:.2f} (fitted on {len(cal)} rows '{FACTOR_ROWS}*')")
    held = [k for k in keys if k not in cal and k != ANCHOR]
    for name, ks in (("calibration", cal + [ANCHOR]), ("held out", held), ("all", keys)):
        m, w = score(e, ks)
        print(f"  {name:<12} {len(ks):>3} rows: median |measured/predicted - 1| = {m:.1%}, within 1.5x: {w:.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
