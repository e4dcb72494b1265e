"""Derive ``lib/llmmath/data/moe_fractions.toml`` from NVIDIA's measured TensorRT-LLM MoE-layer tables.

NVIDIA's AIConfigurator (github.com/ai-dynamo/aiconfigurator) ships, per GPU and TensorRT-LLM release, the latency
its collector measured for TensorRT-LLM's fused MoE module (``collector/trtllm/collect_moe.py``: ``create_moe`` as
the engine builds it, fed router logits, so the routing, the token permutation, the two grouped GEMMs, the
activation and the un-permute; not the router's GEMM and not the all-to-all) at some 10,000 shapes per precision:
tokens on the rank, hidden and expert widths, top-k, experts, and the expert- and tensor-parallel split of the
experts. This script keeps the ``balanced`` router rows (uneven routing is priced apart,
:func:`llmmath.predict.routing_imbalance`), the layers of real width (hidden >= 2,048), and at each shape the fastest
kernel path the release offers (the engine picks it). For each GPU and precision it fits by non-negative least
squares on the logarithm of the latency (a relative error, either way alike):

    latency = t_fixed + bytes moved / (HBM peak x weight_fraction) + expert FLOPs / (peak x flops_fraction)

the bytes moved being the rank's touched experts (``min(local experts, routed tokens on the rank)``, as a balanced
router spreads them) x the expert's matrices x its width x the format's bytes, plus each routed token's bf16 rows
(``2 x (5 hidden + 6 expert width)`` bytes: the permutation's read and write, the first GEMM's input, its gate and up
outputs and the activation's read and write, the second GEMM's output and the un-permute's read), its FLOPs ``2 x
routed tokens x matrices x hidden x expert width``, the peaks the datasheet's (``llmmath.hardware``). Without the
routed rows' bytes the fit's worst tenth of shapes miss by 0.6-1.0x instead of 0.45-0.95x. ``weight_fraction`` is what the
grouped GEMMs reach of HBM while they stream few tokens per expert, ``flops_fraction`` what they reach of the peak
when many tokens share an expert (below a dense GEMM's: each expert's tile is padded to the kernel's tile height);
``t_fixed`` the module's fixed time (routing, permutation, launches). ``median_error`` and ``p90_error`` are the
fit's |fitted / measured - 1| over the shapes: how far one line of three numbers sits from the table.

Usage (needs ``pandas``, ``pyarrow`` and ``scipy``, which the course itself does not)::

    git clone https://github.com/ai-dynamo/aiconfigurator AIC      # or: git archive HEAD aic-core | tar -x -C AIC
    python tools/moe_fractions.py AIC > lib/llmmath/data/moe_fractions.toml

It reads the release ``tools/gemm_fractions.py`` reads for each GPU (TensorRT-LLM 1.2.0rc5 for H100, H200 and B200,
1.3.0rc10 for GB200). No serving measurement enters: the fractions are the kernel tables' own.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))

from llmmath import hardware  # noqa: E402

DATA = "aic-core/src/aiconfigurator_core/systems/data/{gpu}/moe/trtllm/{release}/moe_perf.parquet"
GPUS = {"h100_sxm": ("h100-sxm", "1.2.0rc5"), "h200_sxm": ("h200", "1.2.0rc5"), "b200_sxm": ("b200", "1.2.0rc5"),
        "gb200": ("gb200", "1.3.0rc10")}
# the table's formats -> (the course's name, bytes per stored weight, the peak its matmuls run at); fp8 is
# per-tensor scaled, fp8_block DeepSeek's 128 x 128 block scales (one fp32 scale per 16,384 weights), nvfp4 two
# values a byte and an fp8 scale per 16
FORMATS = {"bfloat16": ("bf16", 2.0, "bf16"), "fp8": ("fp8", 1.0, "fp8"),
           "fp8_block": ("fp8_block", 1.0 + 4.0 / 16384, "fp8"), "nvfp4": ("fp4", 0.5 + 1.0 / 16, "fp4")}
MIN_HIDDEN = 2048
ROW_BYTES = 2.0                      # the routed tokens' rows are bf16
SHAPE = ["num_tokens", "hidden_size", "inter_size", "topk", "num_experts", "moe_tp_size", "moe_ep_size", "gated"]


def fits(aic: Path) -> list[dict]:
    """One dict per GPU and format: chip, dtype, release, t_fixed_s, weight_fraction, flops_fraction, errors, shapes."""
    import numpy as np
    import pandas as pd
    from scipy.optimize import least_squares
    out = []
    for gpu, (chip, rel) in GPUS.items():
        c = hardware.get(chip)
        d = pd.read_parquet(aic / DATA.format(gpu=gpu, release=rel))
        d = d[(d.distribution == "balanced") & (d.hidden_size >= MIN_HIDDEN) & d.moe_dtype.isin(FORMATS)]
        d = d.assign(gated=~d.kernel_source.str.contains("nongated"))
        for name, (dtype, bytes_per_w, peak) in FORMATS.items():
            g = d[d.moe_dtype == name]
            if g.empty:
                continue
            g = g.groupby(SHAPE, as_index=False).latency.min()          # the fastest path at each shape
            mats = np.where(g.gated, 3.0, 2.0)
            local = g.num_experts / g.moe_ep_size
            width = g.inter_size / g.moe_tp_size
            routed = g.num_tokens * g.topk / g.moe_ep_size
            moved = (np.minimum(local, routed) * mats * g.hidden_size * width * bytes_per_w
                     + routed * ROW_BYTES * (5 * g.hidden_size + 6 * width))
            t_bytes = (moved / c.hbm_bytes_per_s).to_numpy()
            t_flops = (2.0 * routed * mats * g.hidden_size * width / c.flops_per_s(peak)).to_numpy()
            y = g.latency.to_numpy() * 1e-3

            def model(p):
                t0, fw, ff = np.exp(p)
                return t0 + t_bytes / fw + t_flops / ff

            x = np.exp(least_squares(lambda p: np.log(model(p) / y), np.log([4e-5, 0.8, 0.5])).x)
            err = np.abs(model(np.log(x)) / y - 1)
            out.append(dict(chip=chip, dtype=dtype, release=rel, t_fixed_s=float(x[0]),
                            weight_fraction=float(x[1]), flops_fraction=float(x[2]),
                            median_error=float(np.median(err)), p90_error=float(np.quantile(err, 0.9)),
                            shapes=len(g)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("aic", type=Path, help="a checkout (work tree) of github.com/ai-dynamo/aiconfigurator")
    a = ap.parse_args()
    print("# What TensorRT-LLM's fused MoE module reaches of each GPU's peaks (llmmath.predict.moe_fractions)")
    print("# " + "=" * 100)
    print("# Derived by tools/moe_fractions.py (its docstring says how) from NVIDIA AIConfigurator's measured tables")
    print("# aic-core/src/aiconfigurator_core/systems/data/<gpu>/moe/trtllm/<release>/moe_perf.parquet")
    print("# (github.com/ai-dynamo/aiconfigurator, commit 095f58a): latency = t_fixed + (expert bytes + routed rows' bytes)")
    print("# / (HBM peak x weight_fraction) + expert FLOPs / (peak x flops_fraction), fitted over the balanced-router")
    print("# shapes on the logarithm of the latency.")
    print("# Regenerate rather than edit.\n")
    print('source = "NVIDIA AIConfigurator (github.com/ai-dynamo/aiconfigurator, commit 095f58a), measured '
          'TensorRT-LLM MoE tables, collector/trtllm/collect_moe.py"')
    for f in fits(a.aic):
        print(f"\n[{f['chip']}.{f['dtype']}]\nrelease = \"{f['release']}\"\nt_fixed_s = {f['t_fixed_s']:.3e}\n"
              f"weight_fraction = {f['weight_fraction']:.3f}\nflops_fraction = {f['flops_fraction']:.3f}\n"
              f"median_error = {f['median_error']:.3f}\np90_error = {f['p90_error']:.3f}\nshapes = {f['shapes']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
