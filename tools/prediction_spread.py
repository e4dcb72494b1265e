"""Write ``lib/llmmath/data/prediction_spread.toml``: how far measured results sit from the prediction, by regime.

For each regime of :data:`llmmath.planner.REGIMES`, the 10th and 90th percentiles of measured / predicted over the
ledger's validation rows (:func:`llmmath.planner.split`; calibration and test rows are left out: the first set a
constant, the second must not shape anything). :func:`llmmath.planner.band` widens every prediction by them.
``tests/test_predict.py`` checks the file against this script's output, so a change to the model that moves the
validation rows fails there until the file is written again::

    python tools/prediction_spread.py > lib/llmmath/data/prediction_spread.toml
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from llmmath import planner  # noqa: E402


def spread() -> dict:
    """``{regime: {"q10", "q90", "rows"}}`` over the validation rows (percentiles rounded to 0.01)."""
    ratios = {g: [] for g in planner.REGIMES}
    for key, _, measured, p in planner.predicted_vs_measured():
        if planner.split(key) == "validation":
            ratios[planner.regime(key)].append(measured / p.tokens_per_s_per_chip)
    return {g: {"q10": round(float(np.quantile(r, 0.1)), 2), "q90": round(float(np.quantile(r, 0.9)), 2),
                "rows": len(r)} for g, r in ratios.items()}


def main() -> int:
    print("# How far measured results sit from llmmath.predict, by regime: the 10th and 90th percentiles of")
    print("# measured / predicted over the validation rows of serving_measurements.toml (llmmath.planner.band).")
    print("# Written by tools/prediction_spread.py; regenerate rather than edit.\n")
    for g, s in spread().items():
        print(f'[regimes."{g}"]\nq10 = {s["q10"]}\nq90 = {s["q90"]}\nrows = {s["rows"]}\n')
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
