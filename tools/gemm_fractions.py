"""Derive ``lib/llmmath/data/gemm_fractions.toml`` from NVIDIA's measured TensorRT-LLM GEMM tables.

NVIDIA's AIConfigurator (github.com/ai-dynamo/aiconfigurator) ships, per GPU and per TensorRT-LLM release, the
latency its collector measured for TensorRT-LLM's own ``Linear`` layer (``collector/trtllm/collect_gemm.py``: the
layer as the engine runs it, activation quantization included, weights cycled through copies larger than L2) at
some 35,000 shapes ``m x n x k`` in bf16, fp8 and nvfp4. This script turns each table into what the course needs:
the share of the datasheet's dense peak (``llmmath.hardware``) the layer reaches, against ``m``, the tokens in the
step, over model widths ``4,096 <= n, k <= 16,384`` (the hidden and MLP sizes of 8B- to 405B-class models): the
median, the quartiles and the number of shapes at each ``m`` that is a power of two.

Usage (needs ``pandas`` and ``pyarrow``, which the course itself does not)::

    git clone https://github.com/ai-dynamo/aiconfigurator AIC      # or: git archive HEAD aic-core | tar -x -C AIC
    python tools/gemm_fractions.py AIC > lib/llmmath/data/gemm_fractions.toml
    python tools/gemm_fractions.py --shapes AIC > lib/llmmath/data/gemm_shapes.toml

``--shapes`` writes the bf16 share at each shape of a grid (m 256 to 8,192, n and k 256 to 16,384, powers of two),
which the training step reads for each of a model's GEMMs (``llmmath.predict.gemm_share``).

For each GPU it reads the earliest release the repository holds for it (TensorRT-LLM 1.0.0 for A100 SXM, 1.2.0rc5 for
H100, H200 and B200, 1.3.0rc10 for GB200, B300 and GB300): the closest in time to the 2025 results in ``serving_measurements.toml``. ``--release
1.3.0rc10`` reads that release for every GPU instead (the note on issue 29 gives what it changes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from llmmath import hardware  # noqa: E402

DATA = "aic-core/src/aiconfigurator_core/systems/data/{gpu}/gemm/trtllm/{release}/gemm_perf.parquet"
GPUS = {"a100_sxm": ("a100-80gb", "1.0.0"), "h100_sxm": ("h100-sxm", "1.2.0rc5"), "h200_sxm": ("h200", "1.2.0rc5"),
        "b200_sxm": ("b200", "1.2.0rc5"), "gb200": ("gb200", "1.3.0rc10"), "b300_sxm": ("b300", "1.3.0rc10"),
        "gb300": ("gb300", "1.3.0rc10")}
# chips whose tensor cores are another's (same die and clocks; only the memory differs): they read its tables
SAME_COMPUTE = {"a100-40gb": "a100-80gb"}
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "nvfp4": "fp4"}     # the table's names -> the course's
WIDTHS = (4096, 16384)                                            # n and k, inclusive
TOKENS = [2 ** i for i in range(15)]                              # m: 1 ... 16,384


def curves(aic: Path, release: str | None = None) -> list[tuple[str, str, str, list, list, list, list]]:
    """``(chip key, dtype, release, tokens, median, q25, q75, shapes)`` for every GPU and dtype the tables hold."""
    import pandas as pd
    out = []
    for gpu, (chip, first) in GPUS.items():
        rel = release or first
        d = pd.read_parquet(aic / DATA.format(gpu=gpu, release=rel))
        d = d[d.n.between(*WIDTHS) & d.k.between(*WIDTHS)]
        for name, dtype in DTYPES.items():
            g = d[d.gemm_dtype == name]
            if g.empty:
                continue
            frac = 2.0 * g.m * g.n * g.k / (g.latency * 1e-3) / hardware.get(chip).flops_per_s(dtype)
            rows = [(m, frac[g.m == m]) for m in TOKENS if (g.m == m).any()]
            out.append((chip, dtype, rel, [m for m, _ in rows], [round(float(f.median()), 3) for _, f in rows],
                        [round(float(f.quantile(0.25)), 3) for _, f in rows],
                        [round(float(f.quantile(0.75)), 3) for _, f in rows], [int(f.size) for _, f in rows]))
    return out


SHAPE_M = [2 ** i for i in range(8, 14)]                          # 256 ... 8,192 rows
SHAPE_NK = [2 ** i for i in range(8, 15)]                         # 256 ... 16,384 columns and inner size


def shape_grids(aic: Path, release: str | None = None) -> list[tuple[str, str, list]]:
    """``(chip key, release, share[m][n][k])``: each GPU's bf16 share of the dense peak at every shape of the grid
    :data:`SHAPE_M` x :data:`SHAPE_NK` x :data:`SHAPE_NK` (one measured shape each; every table holds them all)."""
    import pandas as pd
    out = []
    for gpu, (chip, first) in GPUS.items():
        rel = release or first
        d = pd.read_parquet(aic / DATA.format(gpu=gpu, release=rel))
        g = d[d.gemm_dtype == "bfloat16"].set_index(["m", "n", "k"])["latency"]
        peak = hardware.get(chip).flops_per_s("bf16")
        grid = [[[round(2.0 * m * n * k / (float(g.loc[(m, n, k)]) * 1e-3) / peak, 3) for k in SHAPE_NK]
                 for n in SHAPE_NK] for m in SHAPE_M]
        out.append((chip, rel, grid))
    return out


def _print_same_compute(what: str) -> None:
    """The ``[same_compute]`` table both files end with."""
    print(f"\n# chips with another's tensor cores (same die and clocks, other memory) read its {what}")
    print("[same_compute]")
    for chip, other in SAME_COMPUTE.items():
        print(f'"{chip}" = "{other}"')


def write_shapes(aic: Path, release: str | None = None) -> None:
    """Print ``lib/llmmath/data/gemm_shapes.toml``."""
    print("# What TensorRT-LLM's bf16 GEMMs reach of each GPU's dense datasheet peak at each shape m x n x k "
          "(llmmath.predict.gemm_share)")
    print("# " + "=" * 110)
    print("# Derived by tools/gemm_fractions.py --shapes from NVIDIA AIConfigurator's measured tables (the same files as")
    print("# data/gemm_fractions.toml, github.com/ai-dynamo/aiconfigurator commit 095f58a): for a layer y = x W, m rows")
    print("# of x (tokens), k the inner size, n the output columns. share[i][j][l] = 2 m n k / latency / peak at")
    print("# m[i], n[j], k[l]: one timed shape each. Regenerate rather than edit.\n")
    print(f"m = {SHAPE_M}\nn = {SHAPE_NK}\nk = {SHAPE_NK}")
    for chip, rel, grid in shape_grids(aic, release):
        rows = ",\n  ".join("[" + ", ".join(str(row) for row in plane) + "]" for plane in grid)
        print(f"\n[{chip}]\nrelease = \"{rel}\"\nshare = [\n  {rows},\n]")
    _print_same_compute("grid")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("aic", type=Path, help="a checkout (work tree) of github.com/ai-dynamo/aiconfigurator")
    ap.add_argument("--release", help="one TensorRT-LLM release for every GPU (default: each GPU's earliest)")
    ap.add_argument("--shapes", action="store_true", help="print data/gemm_shapes.toml (bf16 shares by shape)")
    a = ap.parse_args()
    if a.shapes:
        write_shapes(a.aic, a.release)
        return 0
    print("# What TensorRT-LLM's GEMMs reach of each GPU's dense datasheet peak, against the tokens in the step "
          "(llmmath.predict.matmul_fraction)")
    print("# " + "=" * 110)
    print("# Derived by tools/gemm_fractions.py (its docstring says how) from NVIDIA AIConfigurator's measured tables")
    print("# aic-core/src/aiconfigurator_core/systems/data/<gpu>/gemm/trtllm/<release>/gemm_perf.parquet")
    print("# (github.com/ai-dynamo/aiconfigurator, commit 095f58a): TensorRT-LLM's Linear layer timed at each shape;")
    print(f"# share = 2 m n k / latency / peak, over the shapes with {WIDTHS[0]:,} <= n, k <= {WIDTHS[1]:,} at each m.")
    print("# Regenerate rather than edit.\n")
    print('source = "NVIDIA AIConfigurator (github.com/ai-dynamo/aiconfigurator, commit 095f58a), measured '
          'TensorRT-LLM GEMM tables, collector/trtllm/collect_gemm.py"')
    for chip, dtype, rel, tokens, med, q25, q75, n in curves(a.aic, a.release):
        print(f"\n[{chip}.{dtype}]\nrelease = \"{rel}\"\ntokens = {tokens}\nmedian = {med}\nq25 = {q25}\nq75 = {q75}"
              f"\nshapes = {n}")
    _print_same_compute("tables")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
