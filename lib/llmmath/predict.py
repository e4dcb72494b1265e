"""What a deployment will actually do: the roofline ceiling, then each term a real engine pays (chapter 12).

**The one step model.** :func:`step` prices one step of one replica, of any shape (its tokens, the cached positions
its decoding sequences read, the positions its prompt chunks attend to), term by term from the roofline ceiling.
Every entry point asks it and re-derives nothing: :func:`predict` for a decode step, the prefill steps of a prompt
(time to first token, :func:`prefill_chunks_s`) and the mixed decode-and-prefill steps of aggregated serving; the
engine (:mod:`llmmath.engine`) for every step it simulates; the plan, whose ceiling is the waterfall's first entry.

:func:`predict` starts from the serving plan's ceiling (:func:`llmmath.planner.plan`, one
:class:`~llmmath.deployment.Deployment`) and applies, one at a time, terms that are physical
rates with a source (``data/engine_constants.toml``):

1. **sustained rates**: HBM at the fraction of peak measured on real parts, matmuls at the share of the
   chip's bf16 peak that TensorRT-LLM's own GEMMs reach at a large batch (:func:`matmul_fraction`, NVIDIA's measured
   tables in ``data/gemm_fractions.toml``);
2. **attention at its precision**: attention's FLOPs at bf16 when the matmuls run at fp8/fp4;
3. **no overlap**: a step's compute and memory time add instead of overlapping;
4. **communication**: the tensor-parallel all-reduces and the expert all-to-all of the step, at the
   achieved bus rates, over NVLink inside a scale-up domain and the NIC beyond it, not overlapped
   unless the engine runs **two-batch overlap** (``overlap="two-batch"``: the longer of compute and
   communication, the weights read once per micro-batch);
5. **fp8/fp4 matmuls at their measured rate** (the same tables at the matmuls' own precision), and the one
   constant set from a published row (``[calibrated]``, by ``tools/calibrate_predict.py``): a **fixed time per
   kernel** per decode step (launches, small collectives' latency, elementwise passes), times the kernels each layer
   launches (:func:`kernels_per_layer`: a Llama layer 9, a DeepSeek MoE layer at TP8 22);
6. **uneven expert routing**: the busiest expert-parallel rank's routed GEMMs at its measured excess load
   (:func:`routing_imbalance`, with or without EPLB), then **the routed experts at the measured MoE layer's rates**:
   what TensorRT-LLM's fused MoE module reaches of HBM and of the matmul peak (:func:`moe_layer_fractions`, fitted
   on NVIDIA's measured MoE-layer tables, ``data/moe_fractions.toml``) in place of the dense GEMMs' share;
7. **multi-token prediction**: tokens per step, the verify step and the draft (:mod:`llmmath.speculative`);
8. **an offline run** (``offline_requests``): a benchmark's whole run simulated, ramp-up and drain included, under
   the engine's limits on running sequences and tokens a step (``offline_limits``; for TensorRT-LLM's tables,
   the limits ``trtllm-bench`` derives itself, :func:`llmmath.planner.trtllm_bench_limits`).

The result keeps every intermediate rate (the waterfall), so a reader sees which term moves a
deployment most. Not modelled: block-scaled fp8 experts apart from per-tensor ones, node-limited routing's
deduplicated dispatch, host (CPU) time per scheduled sequence (the one sourced figure, 29 us a sequence from a
profile of TensorRT-LLM's Python runtime, slows the C++ runtime's validation rows 1.2-2.4x when charged to every
engine: host time is each engine's own and needs its own source), each engine's own kernel fusion (one count of
kernels a layer serves every engine), matmul efficiency that varies with the tokens in a step (one large-batch
share per chip and precision), and Blackwell's HBM fraction (taken from Hopper). Chapter 12 holds the prediction
against every row of ``data/serving_measurements.toml`` and prints the error on the rows no constant was set from.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from . import _catalog, hardware, speculative
from .deployment import Deployment
from ._validate import positive, positive_int, scalar

__all__ = ["Step", "step", "prefill_chunks_s", "Prediction", "predict", "engine_constants", "sustained", "gemm_fractions", "matmul_fraction", "calibrated",
           "moe_fractions", "moe_layer_fractions",
           "routing_imbalance", "expected_max_of_normals", "kernels_per_layer", "kernels_per_step"]

PHASES = ("decode", "prefill", "aggregated")
PLATEAU_TOKENS = (2048, 4096, 8192)      # the tokens a step at which matmul_fraction reads the measured tables
OVERLAPS = ("none", "two-batch")
LOW_PRECISION_TERM = "fp8/fp4 matmuls at their measured rate"
ROW_BYTES = 2.0                          # a routed token's rows through the MoE layer are bf16


def engine_constants() -> dict:
    """``data/engine_constants.toml`` (sustained fractions by vendor, collective rates, kernels, host links)."""
    return _catalog.load("engine_constants.toml")


@dataclasses.dataclass(frozen=True)
class Prediction:
    """A predicted operating point (per chip, SI units) and the waterfall from the roofline ceiling to it.

    ``waterfall``: ``[(term, tokens/s per chip after it)]`` starting at ``("roofline ceiling", ...)``;
    ``terms``: each term's seconds per step (or its factor) at the prediction. ``ttft_s``: time to first token of
    one prompt on an idle replica (:func:`prefill_chunks_s`), seconds.
    """

    phase: str
    batch: float
    tokens_per_s_per_chip: float
    step_s: float
    waterfall: list
    terms: dict
    ttft_s: float = math.nan

    @property
    def tpot_s(self) -> float:
        """Time per output token of one sequence during decode (the step, per token an MTP step yields)."""
        return self.step_s

    def table(self) -> str:
        w = max(34, *(len(name) for name, _ in self.waterfall))
        rows = [f"{'term':<{w}} {'tokens/s per chip':>18} {'vs ceiling':>11}"]
        top = self.waterfall[0][1]
        for name, rate in self.waterfall:
            rows.append(f"{name:<{w}} {rate:>18,.0f} {rate / top:>10.0%}")
        rows.append(f"{self.phase}, batch {self.batch:,.0f} sequences over the deployment"
                    + ("" if math.isnan(self.step_s) else f", time per output token {self.step_s * 1e3:.2f} ms")
                    + ("" if math.isnan(self.ttft_s) else f", time to first token (idle) {self.ttft_s * 1e3:.1f} ms"))
        return "\n".join(rows)

    def to_dict(self) -> dict:
        """Plain numbers for JSON (NaN as None)."""
        clean = lambda v: None if isinstance(v, float) and not math.isfinite(v) else v  # noqa: E731
        return {"phase": self.phase, "batch": self.batch, "tokens_per_s_per_chip": self.tokens_per_s_per_chip,
                "tpot_s": clean(self.step_s), "ttft_s": clean(self.ttft_s), "waterfall": [{"term": n, "tokens_per_s_per_chip": r}
                                                           for n, r in self.waterfall],
                "terms": {k: float(v) for k, v in self.terms.items()}}


def sustained(chip) -> dict:
    """The sustained fractions of peak for ``chip``'s vendor: ``hbm_fraction`` (every chip), and ``matmul_fraction``
    (16-bit) and ``low_precision_matmul_fraction`` (8- and 4-bit), which :func:`matmul_fraction` uses only for chips
    without a measured GEMM table.

    Raises:
        KeyError: a vendor with no entry in ``data/engine_constants.toml`` (the message names those that have one).
    """
    table = engine_constants()["sustained"]
    vendor = hardware.get(chip).vendor.lower()
    if vendor not in table:
        raise KeyError(f"no sustained HBM and matmul fractions for {vendor!r} chips in data/engine_constants.toml; "
                       f"known: {', '.join(sorted(table))}")
    return table[vendor]


def _per_chip(raw: dict) -> dict:
    """A measured table's chips (its top-level tables), each chip under ``same_compute`` given the one it names."""
    out = {k: v for k, v in raw.items() if isinstance(v, dict) and k != "same_compute"}
    out.update({chip: raw[other] for chip, other in raw.get("same_compute", {}).items()})
    return out


def gemm_fractions() -> dict:
    """``data/gemm_fractions.toml``: per chip and precision, the share of the dense datasheet peak TensorRT-LLM's GEMMs
    reach against the tokens in the step (``tokens``, ``median``, ``q25``, ``q75``, ``shapes``), derived by
    ``tools/gemm_fractions.py`` from NVIDIA AIConfigurator's measured tables. A chip listed under the file's
    ``same_compute`` (the A100 40GB: the 80GB's die and clocks, other memory) appears with the tables it reads."""
    return _per_chip(_catalog.load("gemm_fractions.toml"))


def matmul_fraction(chip, dtype: str = "bf16") -> float:
    """What a serving engine's matmuls at ``dtype`` reach of ``chip``'s dense ``dtype`` peak at a large batch.

    For a chip in ``data/gemm_fractions.toml`` (A100 SXM, H100 SXM, H200, B200, GB200, B300, GB300): the median of
    that table's medians at 2,048, 4,096 and 8,192 tokens a step (TensorRT-LLM's Linear layer timed by NVIDIA over
    model widths 4,096 to 16,384; ``fp16`` reads the ``bf16`` table and ``int8`` the ``fp8`` one). A100 bf16 0.84;
    H100 bf16 0.745, fp8 0.525; B200 bf16 0.655, fp8 0.443, fp4 0.384. Then a chip's own measured share
    (``data/engine_constants.toml`` [matmul_shares]: AMD's hipBLASLt measurements, MI300X bf16 0.542, fp8 0.487; 8-
    and 4-bit formats read ``fp8``). Any other chip:
    its vendor's ``[sustained]`` ``matmul_fraction`` for 16- and 32-bit formats, ``low_precision_matmul_fraction``
    for 8- and 4-bit ones.

    Raises:
        KeyError: an unknown chip or dtype, a dtype the chip has no peak for, or a vendor without fractions.
    """
    c = hardware.get(chip)
    c.flops_per_s(dtype)                                   # the chip must have a peak at dtype
    table = {"fp16": "bf16", "int8": "fp8"}.get(dtype, dtype)
    curve = gemm_fractions().get(c.key, {}).get(table)
    if curve is not None:
        at = dict(zip(curve["tokens"], curve["median"]))
        return float(np.median([at[m] for m in PLATEAU_TOKENS]))
    measured = engine_constants()["matmul_shares"].get(c.key, {})
    fmt = "bf16" if c.flops_per_s(dtype) <= c.flops_per_s("bf16") else "fp8"
    if fmt in measured:
        return float(measured[fmt])
    sus = sustained(c)
    return float(sus["matmul_fraction"] if c.flops_per_s(dtype) <= c.flops_per_s("bf16")
                 else sus["low_precision_matmul_fraction"])


def gemm_shapes() -> dict:
    """``data/gemm_shapes.toml``: per chip, the bf16 share of the dense peak TensorRT-LLM's Linear layer reaches at each
    shape of a grid (``m`` rows 256 to 8,192, ``n`` output columns and ``k`` inner size 256 to 16,384, powers of two;
    ``share[i][j][l]``), derived by ``tools/gemm_fractions.py --shapes`` from the same measured tables. A chip under
    ``same_compute`` appears with the grid it reads."""
    return _per_chip(_catalog.load("gemm_shapes.toml"))


def _grid_position(axis, value: float) -> tuple[int, float]:
    """Where ``value`` falls on a grid of powers of two: the lower index and the weight of the upper neighbour, linear
    in log2 and clamped to the grid's ends."""
    x = float(np.clip(np.log2(value), np.log2(axis[0]), np.log2(axis[-1])))
    i = min(int(np.searchsorted(np.log2(axis), x, side="right")) - 1, len(axis) - 2)
    return i, (x - math.log2(axis[i])) / (math.log2(axis[i + 1]) - math.log2(axis[i]))


def gemm_share(chip, dtype: str, m, n, k) -> float:
    """What one GEMM ``y = x W`` (``x``: ``m x k``, ``W``: ``k x n``; sizes in elements) at ``dtype`` reaches of
    ``chip``'s dense ``dtype`` peak, at its own shape.

    A small GEMM cannot fill the chip (too few output tiles for the SMs, too short an inner loop to hide the loads), so
    its share falls below :func:`matmul_fraction`'s large-model level: TensorRT-LLM's Linear on an H100 reaches 0.77
    of the bf16 peak at ``m = 4,096``, ``n = k = 4,096``, and 0.61 at ``n = k = 1,024``. For a chip in
    :func:`gemm_shapes` the bf16 share is read off that measured grid, interpolated linearly in log2 of each size and
    held at the grid's ends outside it (``m`` above 8,192 reads 8,192); ``fp16`` reads it as bf16; an 8- or 4-bit
    format takes the same shape's bf16 share scaled by the format's level over bf16's (``matmul_fraction(chip, dtype)
    / matmul_fraction(chip, "bf16")``: its own tables, whose small shapes carry the activations' quantization, are
    not read by shape). Any other chip or format: :func:`matmul_fraction`, whatever the shape.

    Raises:
        KeyError: as :func:`matmul_fraction`.
        ValueError: ``m``, ``n`` or ``k`` not a positive number.
    """
    c = hardware.get(chip)
    level = matmul_fraction(c, dtype)
    sizes = [float(positive(name, scalar(name, v))) for name, v in (("m", m), ("n", n), ("k", k))]
    grids = gemm_shapes()
    low = c.flops_per_s(dtype) > c.flops_per_s("bf16")
    if c.key not in grids or dtype not in ("bf16", "fp16", "fp8", "int8", "fp4"):
        return level
    g, axes = np.asarray(grids[c.key]["share"], dtype=float), [gemm_shapes_axes()[a] for a in "mnk"]
    (i, wi), (j, wj), (l, wl) = (_grid_position(a, v) for a, v in zip(axes, sizes))
    cube = g[i:i + 2, j:j + 2, l:l + 2]
    share = float(np.einsum("abc,a,b,c->", cube, [1 - wi, wi], [1 - wj, wj], [1 - wl, wl]))
    if low:
        share *= level / matmul_fraction(c, "bf16")
    return min(share, 1.0)


def gemm_shapes_axes() -> dict:
    """The grid of :func:`gemm_shapes`: ``{"m": [...], "n": [...], "k": [...]}`` (elements)."""
    raw = _catalog.load("gemm_shapes.toml")
    return {a: raw[a] for a in "mnk"}


def moe_fractions() -> dict:
    """``data/moe_fractions.toml``: per chip and format, what TensorRT-LLM's fused MoE module reaches of the HBM peak
    (``weight_fraction``) and of the matmul peak (``flops_fraction``), with its fixed time (``t_fixed_s``) and how far
    that line sits from the measured shapes (``median_error``, ``p90_error``), fitted by ``tools/moe_fractions.py``
    on NVIDIA AIConfigurator's measured MoE-layer tables."""
    return _catalog.load("moe_fractions.toml")


MOE_TERM = "routed experts at the measured MoE layer's rates"


def moe_layer_fractions(chip, dtype: str = "bf16") -> tuple[float, float, str]:
    """``(weight_fraction, flops_fraction, basis)``: what the routed experts' grouped GEMMs reach of ``chip``'s HBM peak
    while streaming expert weights and routed tokens' rows, and of its ``dtype`` matmul peak.

    From :func:`moe_fractions` where it holds the chip (H100 SXM, H200, B200, GB200; ``fp16`` and ``fp32`` read the
    ``bf16`` entry, ``int8`` the per-tensor ``fp8`` one): H100 bf16 0.824 and 0.859, fp8 0.791 and 0.631; B200 fp4
    0.753 and 0.295. Elsewhere the median of the measured parts' entries for the format, and ``basis`` says it is
    assumed. Block-scaled fp8 (DeepSeek's 128 x 128 scales) is in the file as ``fp8_block`` but not used: which
    checkpoints are block-scaled is not in the model catalog.

    Raises:
        KeyError: an unknown chip, or a format no measured part has an entry for.
    """
    c = hardware.get(chip)
    fmt = {"fp16": "bf16", "fp32": "bf16", "int8": "fp8"}.get(dtype, dtype)
    table = {k: v for k, v in moe_fractions().items() if isinstance(v, dict)}
    entry = table.get(c.key, {}).get(fmt)
    if entry is not None:
        return float(entry["weight_fraction"]), float(entry["flops_fraction"]), f"measured on {c.key} ({fmt})"
    rows = [v[fmt] for v in table.values() if fmt in v]
    if not rows:
        raise KeyError(f"no measured MoE-layer fractions for {dtype!r} in data/moe_fractions.toml; formats held: "
                       f"{', '.join(sorted({f for v in table.values() for f in v}))}")
    return (float(np.median([r["weight_fraction"] for r in rows])),
            float(np.median([r["flops_fraction"] for r in rows])),
            f"assumed for {c.key}: the median of {len(rows)} measured NVIDIA parts ({fmt})")


def calibrated() -> dict:
    """The constant set from a published serving result (``data/engine_constants.toml`` [calibrated]):
    ``per_kernel_s`` (a fixed time per kernel per decode step), with the row it was solved on (``calibrated_on``)."""
    return engine_constants()["calibrated"]


def _pipeline_send_s(d: Deployment, sent_bytes):
    """Seconds to send a step's activations between pipeline stages over the chip's scale-out link (0 with one
    stage). Raises ValueError for stages on a chip whose scale-out bandwidth is not published (NaN), rather than
    return a NaN."""
    if d.placement.pp == 1:
        return 0.0 * np.asarray(sent_bytes, dtype=float)
    beta = d.chip.scale_out_bytes_per_s
    if not np.isfinite(beta) or beta <= 0:
        raise ValueError(f"pp={d.placement.pp}: {d.chip.key} has no published scale-out bandwidth to send activations "
                         f"between pipeline stages over; allowed: pp=1 on this chip")
    return sent_bytes / beta


def kernels_per_layer(model, tp: int = 1, ep: int = 1) -> tuple[int, int]:
    """``(dense layer, MoE layer)``: the kernels one decoder layer of ``model`` launches in a decode step.

    Counted from engines' published layer structure (``data/engine_constants.toml`` [kernels]): the attention block
    (5 for GQA/MHA as vLLM's Llama layer runs it, 9 for MLA as TensorRT-LLM runs DeepSeek-R1), then a dense MLP (4)
    or a routed-expert MLP (8, plus 3 for shared experts), plus 2 all-reduces under tensor parallelism and a
    dispatch and a combine under expert parallelism. Llama: 9 a layer (a dense model returns its count twice);
    DeepSeek-V3 at TP8: 15 dense, 22 MoE.
    Raises KeyError for an unknown model, ValueError for ``tp`` or ``ep`` below 1.
    """
    from . import models
    m = models.get(model)
    tp, ep = positive_int("tp", tp), positive_int("ep", ep)
    k = engine_constants()["kernels"]
    base = (k["attention_mla"] if m.is_mla else k["attention_gqa"]) + (k["tensor_parallel"] if tp > 1 else 0)
    dense = base + k["mlp_dense"]
    if not m.is_moe:
        return dense, dense                           # no MoE layer: both counts are the dense layer's
    return dense, (base + k["mlp_moe"] + (k["shared_experts"] if m.n_shared_experts else 0)
                   + (k["expert_parallel"] if ep > 1 else 0))


def kernels_per_step(model, tp: int = 1, ep: int = 1) -> int:
    """Kernels of one decode step through every layer of ``model`` (:func:`kernels_per_layer`, each MoE layer at
    its count and the rest at the dense count). Raises as :func:`kernels_per_layer`."""
    from . import models
    m = models.get(model)
    dense, moe = kernels_per_layer(m, tp, ep)
    return (m.n_layers - m.n_moe_layers) * dense + m.n_moe_layers * moe


@functools.lru_cache(maxsize=None)
def expected_max_of_normals(n: int) -> float:
    """E[max of ``n`` independent standard normal variables] (0 for n = 1; 1.03 for 4; 2.07 for 32), by quadrature of
    ``x n phi(x) Phi(x)^(n-1)`` on [-10, 10]. Raises ValueError for n < 1."""
    n = positive_int("n", n)
    x = np.linspace(-10.0, 10.0, 4001)
    cdf = 0.5 * (1.0 + np.array([math.erf(v / math.sqrt(2.0)) for v in x]))
    pdf = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    f = x * n * pdf * cdf ** (n - 1)
    return float(np.sum((f[1:] + f[:-1]) * 0.5 * np.diff(x)))


def routing_imbalance(model, ep: int, eplb: bool = False) -> float:
    """Expected routed tokens of the busiest expert-parallel rank over the mean (1 = even), for ``model`` at ``ep``.

    From one measurement (``data/engine_constants.toml`` [moe_routing]: DeepSeek-R1 at EP32, 8 experts a rank,
    busiest rank 2.564 x the mean without EPLB, 1.109 with it) scaled to other placements by taking the experts'
    loads as independent with one spread: a rank of ``n_e = E / ep`` experts has a load whose relative spread goes
    as ``1 / sqrt(n_e)`` (the measured table agrees: per expert 164 / 128, per 8-expert rank 492 / 1,024 = 1.28 /
    sqrt(8) x 1.06), and the busiest of ``ep`` ranks sits ``z(ep)`` spreads above the mean
    (:func:`expected_max_of_normals`)::

        imbalance = 1 + (measured - 1) z(ep) / z(ep_measured) sqrt(n_e,measured / n_e)

    Dense models and ``ep = 1``: 1. Raises KeyError for an unknown model, ValueError for ep < 1.
    """
    from . import models
    m = models.get(model)
    ep = positive_int("ep", ep)
    if not m.is_moe or ep == 1:
        return 1.0
    k = engine_constants()["moe_routing"]
    measured = k["busiest_rank_over_mean_eplb"] if eplb else k["busiest_rank_over_mean"]
    n_e = m.n_experts / ep
    return 1.0 + (measured - 1.0) * expected_max_of_normals(ep) / expected_max_of_normals(k["measured_ep"]) \
        * math.sqrt(k["measured_experts_per_rank"] / n_e)


def _low_precision(d: Deployment) -> bool:
    """Whether the deployment's matmuls run faster than bf16 (fp8, fp4: their own measured fraction applies)."""
    return d.flops_per_s > d.chip.flops_per_s("bf16")


def _low_precision_factor(d: Deployment) -> float:
    """What the deployment's matmul precision reaches of its peak over what bf16 reaches of its own (1 for bf16)."""
    return matmul_fraction(d.chip, d.compute_dtype) / matmul_fraction(d.chip, "bf16") if _low_precision(d) else 1.0


def _links(d: Deployment) -> tuple[float, float]:
    """(bytes/s of a TP all-reduce's bus, bytes/s of the expert all-to-all per GPU) for this deployment: the
    all-to-all rides the scale-up link while a stage's chips fit in the chip's scale-up domain
    (:attr:`~llmmath.hardware.Chip.scale_up_domain`), the NIC beyond it."""
    k = engine_constants()["collectives"]
    c = d.chip
    tp_bus = c.scale_up_bytes_per_s * k["nvlink_all_reduce_fraction"]
    link = c.scale_up_bytes_per_s if d.placement.stage_chips <= c.scale_up_domain else c.scale_out_bytes_per_s
    return tp_bus, link * k["all_to_all_fraction"]


@dataclasses.dataclass(frozen=True)
class Step:
    """One replica's step priced term by term (:func:`step`): seconds, shaped like the step's inputs.

    ``waterfall``: ``[(term, step seconds after it)]`` from ``("roofline ceiling", ...)`` to the predicted step;
    ``terms``: each term's seconds at the prediction (``weights_s`` and ``kv_s``: the two HBM reads at the
    sustained rate; ``routing_imbalance``: a factor).
    """

    waterfall: list
    terms: dict

    @property
    def time_s(self):
        """The predicted step time (seconds): the waterfall's last entry."""
        return self.waterfall[-1][1]


def step(d: Deployment, tokens, kv_positions=0.0, prefill_positions=0.0, *, queries_per_position=1.0, eplb=False,
         overlap="none", sequences=None, index_positions=0.0, index_prefill_positions=0.0) -> Step:
    """The one step model: the time of one step of one replica of ``d``, term by term (the waterfall).

    Every entry point prices its steps here: :func:`predict` (a decode step, a prefill step, the mixed steps of
    aggregated serving, time to first token), the engine (:func:`llmmath.engine.simulate`, every step it takes) and
    the plan (whose ceiling is this waterfall's first entry). The step's shape, per replica, is
    :meth:`~llmmath.deployment.Deployment.step_stages`'s: ``tokens`` through the matmuls (decode tokens and
    prompt tokens alike), ``kv_positions`` the decoding sequences' cached positions summed over layers (each read
    once, attended by ``queries_per_position`` queries), ``prefill_positions`` the positions prompt tokens attend to,
    ``sequences`` the sequences in the step (default ``tokens``: a decode step), each reading and writing its linear
    layers' fixed state once, ``index_positions`` and ``index_prefill_positions`` the tokens DSA's indexer scores
    (0 without DSA). Broadcasts over arrays.

    The terms, in order (step seconds after each; ``pp`` micro-batches through the busiest stage):

    1. roofline ceiling: ``max(FLOPs / F, (weights + KV) / W)`` at the datasheet peaks (a floor on the step);
    2. sustained rates: HBM at ``hbm_fraction`` of peak, matmuls at bf16's measured share (:func:`matmul_fraction`);
    3. attention at bf16 while the other matmuls run at the compute precision;
    4. compute and memory not overlapped: the two add;
    5. uneven expert routing: the busiest rank's routed GEMMs at :func:`routing_imbalance` x the mean tokens;
    6. communication: the tensor-parallel all-reduces, the expert all-to-all and the pipeline sends of the step's
       tokens (:meth:`~llmmath.deployment.Deployment.collective_bytes_per_step`) at the achieved bus rates; a step
       with prompt tokens (``prefill_positions`` > 0) sends each token once to each other node its experts sit on
       (the node-deduplicated dispatch of DeepEP's normal kernels) when the expert group spans nodes, a decode step
       one copy per expert (the low-latency kernels);
    7. two-batch overlap (``overlap="two-batch"``): the longer of compute and communication, weights read twice;
    8. fp8/fp4 matmuls at their own measured share of their peak;
    9. an MoE model's routed experts repriced at what measured MoE layers reach (:func:`moe_layer_fractions`): their
       weights and the routed tokens' bf16 rows (``2 x (5 hidden + 6 expert width)`` bytes a routed token) at the
       layer's share of the HBM peak, their FLOPs at its share of the matmul peak, in place of what terms 2-8
       charged them (the dense GEMMs' share and the stream's); the module's fixed time is left to term 10;
    10. a fixed time per kernel (the one calibrated constant) for every kernel the step launches.

    Raises:
        ValueError: an unknown ``overlap``; negative positions; ``tokens`` not above 0.
        KeyError: a chip whose vendor has no sustained fractions.
    """
    if overlap not in OVERLAPS:
        raise ValueError(f"overlap must be one of {OVERLAPS}, got {overlap!r}")
    n = np.asarray(positive("tokens", tokens), dtype=float)     # a mean over steps may hold a fraction of one
    sus = sustained(d.chip)
    st = d.step_stages(n, kv_positions, prefill_positions, queries_per_position=queries_per_position,
                       sequences=sequences, index_positions=index_positions,
                       index_prefill_positions=index_prefill_positions)
    pl = d.placement
    pp = pl.pp
    if pp == 1:
        pick = lambda a: a[0]  # noqa: E731
    else:                                                       # the busiest stage by its roofline floor
        worst = np.argmax(st.floor_s, axis=0)
        pick = lambda a: np.take_along_axis(a, worst[None], axis=0)[0]  # noqa: E731
    flops = {k: pick(v) for k, v in st.flops.items()}
    weight_s, kv_s = pp * pick(st.weight_s), pp * pick(st.kv_s)
    comp_s, mem_s = pp * pick(st.compute_s), weight_s + kv_s
    fall = [("roofline ceiling", np.maximum(comp_s, mem_s))]
    f16 = matmul_fraction(d.chip, "bf16")
    comp_s, mem_s = comp_s / f16, mem_s / sus["hbm_fraction"]
    weight_s, kv_s = weight_s / sus["hbm_fraction"], kv_s / sus["hbm_fraction"]
    fall.append(("sustained HBM and matmul rates", np.maximum(comp_s, mem_s)))
    F_attn = d.chip.flops_per_s("bf16") * f16
    F_mm = d.flops_per_s * f16
    comp_s = pp * ((flops["matmul"] + flops["routed experts"]) / F_mm + flops["attention"] / F_attn)
    fall.append(("attention at bf16", np.maximum(comp_s, mem_s)))
    total = comp_s + mem_s
    fall.append(("compute and memory not overlapped", total))
    imb = routing_imbalance(d.model, pl.ep, eplb)
    routing_s = (imb - 1.0) * pp * flops["routed experts"] / F_mm
    if imb > 1.0:                     # the busiest rank's experts get imb x the mean tokens: their GEMMs take longer
        comp_s = comp_s + routing_s
        total = total + routing_s
        fall.append(("uneven expert routing (busiest rank)", total))
    tp_bus, a2a = _links(d)
    # a step carrying prompt tokens runs the node-deduplicated (normal-mode) dispatch; decode the per-expert one
    sent = d.collective_bytes_per_step(n * d.replicas, forwarded=np.asarray(prefill_positions) > 0)
    tp_s = sent["tensor-parallel all-reduce"] / tp_bus
    ep_s = sent["expert-parallel all-to-all"] / a2a
    pp_s = _pipeline_send_s(d, sent["pipeline send"])
    comm_s = tp_s + ep_s + pp_s
    total = total + comm_s
    fall.append(("communication (TP, EP, PP)", total))
    overlap_s = 0.0 * total
    if overlap == "two-batch":
        # two micro-batches take turns: one computes while the other's all-to-all is in flight, so a step lasts the
        # longer of the two streams; each micro-batch reads the chip's weights again (DeepSeek-V3 inference
        # system, day 6 of its open-source week; SGLang's two-batch overlap)
        overlapped = np.maximum(comp_s + mem_s + weight_s, comm_s)
        overlap_s = overlapped - total
        total = overlapped
        fall.append(("two-batch overlap of communication", total))
    lowp_s = 0.0 * total
    if _low_precision(d):             # low-precision matmuls at their own measured share of their peak
        lowp_s = (pp * (flops["matmul"] + imb * flops["routed experts"]) / F_mm  # the busiest rank's excess too
                  * (1.0 / _low_precision_factor(d) - 1))
        total = total + lowp_s
        fall.append((LOW_PRECISION_TERM, total))
    moe_s = 0.0 * total
    if d.model.is_moe:                # the routed experts repriced at what measured MoE layers reach
        m = d.model
        fw, ff, _ = moe_layer_fractions(d.chip, d.compute_dtype)
        shard = pl.ep / pl.stage_chips                           # the share of each of its experts a chip holds
        routed_f = pp * imb * flops["routed experts"]            # the busiest rank's
        routed_b = pp * pick(st.bytes_read["routed experts"])
        rows_b = routed_f / (2.0 * m.expert_params * shard) * ROW_BYTES * (5 * m.d_model + 6 * m.d_ff_expert * shard)
        f_mm = f16 * _low_precision_factor(d)                   # what the terms above charged the routed experts
        charged = routed_f / (d.flops_per_s * f_mm) \
            + routed_b / (d.hbm_bytes_per_s * sus["hbm_fraction"])
        moe_s = (routed_b + rows_b) / (d.hbm_bytes_per_s * fw) + routed_f / (d.flops_per_s * ff) - charged
        total = total + moe_s
        fall.append((MOE_TERM, total))
    fixed_s = kernels_per_step(d.model, pl.tp, pl.ep) * calibrated()["per_kernel_s"] + 0.0 * total
    total = total + fixed_s
    fall.append(("fixed time per kernel (calibrated)", total))

    terms = {"compute_s": comp_s, "memory_s": mem_s, "weights_s": weight_s, "kv_s": kv_s, "tensor_parallel_s": tp_s,
             "expert_all_to_all_s": ep_s, "pipeline_send_s": pp_s, "two_batch_overlap_s": overlap_s,
             "low_precision_matmul_s": lowp_s, "fixed_time_s": fixed_s, "routing_imbalance": imb,
             "uneven_routing_s": routing_s, "moe_layer_s": moe_s}
    return Step(fall, terms)


def _scalar_step(s: Step) -> tuple[list, dict]:
    """A scalar :class:`Step`'s waterfall and terms as plain floats."""
    return [(k, float(v)) for k, v in s.waterfall], {k: float(v) for k, v in s.terms.items()}


def prefill_chunks_s(d: Deployment, prompt_tokens: float, token_budget: int = 8192, *, eplb=False,
                     overlap="none") -> float:
    """Time to first token of one prompt on an idle replica (seconds): the prompt prefilled in chunks of at most
    ``token_budget`` tokens, one :func:`step` each (the engine's chunked prefill), the first token made by the last.

    Llama-3.1-8B fp8 on one H100, 1,000 tokens: one step holding 1,000 tokens, its weight read, its matmuls,
    attention over 15,984,000 layer-positions and 288 kernels' fixed time. Raises ValueError for a prompt or
    budget below 1.
    """
    T = float(positive("prompt_tokens", scalar("prompt_tokens", prompt_tokens)))
    budget = positive_int("token_budget", token_budget)
    starts = np.arange(0.0, T, budget)
    ends = np.minimum(starts + budget, T)
    m = d.model
    pos = m.prefill_positions(ends) - m.prefill_positions(starts)
    idx = m.index_prefill_positions(ends) - m.index_prefill_positions(starts)
    return float(np.sum(step(d, ends - starts, 0.0, pos, eplb=eplb, overlap=overlap, sequences=1.0,
                             index_prefill_positions=idx).time_s))


def _mixed_shapes(d: Deployment, B_r: float, T: float, O: float, L: float, budget: int) -> tuple[float, float, list]:
    """The steady state of aggregated serving (chunked prefill beside decode), per replica, as the mix of the two
    kinds of step a continuous-batching engine takes: ``(decoding sequences n, output tokens per step, [(share of
    steps, step shape), ...])``.

    Each request decodes ``O - 1`` tokens after the first (which its prefill makes), so ``n`` decoding sequences
    finish, and admit, ``r = n / (O - 1)`` requests a step and their ``r T`` prompt tokens must be prefilled a step.
    A step that prefills carries ``c = min(budget - n, max(T, r T))`` prompt tokens (a whole prompt, or as many as
    arrived, or a full chunk of a long prompt), so a share ``f = r T / c`` of the steps prefill and the rest only
    decode. (Averaging the two into one step would misprice the experts an MoE step touches, which grow with its
    tokens more slowly than in proportion.) ``n`` is the batch, or as many as the budget leaves room for when every
    step prefills.
    """
    m = d.model
    pp_T, ix_T = float(m.prefill_positions(T)), float(m.index_prefill_positions(T))
    if O <= 1:                                         # every request is a prefill and its one token
        prompts = budget / T
        return 0.0, prompts, [(1.0, dict(tokens=float(budget), kv_positions=0.0, prefill_positions=prompts * pp_T,
                                         sequences=prompts, index_prefill_positions=prompts * ix_T))]
    n = min(B_r, budget / (1.0 + T / (O - 1.0)))
    r = n / (O - 1.0)
    c = min(budget - n, max(T, r * T))
    f = min(1.0, r * T / c)
    kv, ix = n * float(m.cached_positions(L)), n * float(m.index_positions(L))
    chunks = max(1.0, r * T / f / T)                  # the prompts (or the one long prompt) a prefilling step holds
    mix = [(f, dict(tokens=n + r * T / f, kv_positions=kv, prefill_positions=r * pp_T / f, sequences=n + chunks,
                    index_positions=ix, index_prefill_positions=r * ix_T / f))]
    if f < 1.0:
        mix.append((1.0 - f, dict(tokens=n, kv_positions=kv, prefill_positions=0.0, sequences=n, index_positions=ix)))
    return n, n + r, mix


def predict(model, chip, n_chips=None, *, input_tokens, output_tokens, batch=None, phase="decode", tp=1, ep=1, dp=1,
            pp=1, weight_dtype="bf16", kv_dtype="bf16", compute_dtype=None, mtp_tokens=0, mtp_acceptance=None,
            usable_hbm_fraction=None, gpu_memory_utilization=None, engine="vllm", context=None, max_tpot_s=None, overlap="none",
            offline_requests=None, offline_limits=None, eplb=False, token_budget=None) -> Prediction:
    """The expected measured rate of a deployment, with the waterfall from its roofline ceiling (see the module).

    Args:
        model, chip, n_chips, tp, ep, dp, pp, weight_dtype, kv_dtype, compute_dtype: as :func:`llmmath.planner.plan`.
        input_tokens, output_tokens: the workload's mean lengths; decode runs at context
            ``input + output / 2`` unless ``context`` (the mean KV length, where it is published) is given.
        batch: sequences decoding at once over the deployment (default: the most whose KV fits, capped so the
            time per output token stays under ``max_tpot_s`` when that is given).
        usable_hbm_fraction, gpu_memory_utilization, engine: the memory view, as :class:`~llmmath.deployment.Deployment`
            (default: an engine's, vLLM's 0.9 of the runtime's memory less its reserve).
        phase: ``"decode"`` (output tokens/s per chip), ``"prefill"`` (input tokens/s per chip) or
            ``"aggregated"`` (output tokens/s per chip when the same chips also prefill every request).
        mtp_tokens, mtp_acceptance: multi-token prediction (:func:`llmmath.speculative.expected_tokens_per_step`;
            85% kept by default, DeepSeek-V3's report).
        overlap: ``"none"`` (a step's communication follows its compute) or ``"two-batch"`` (the engine splits
            the batch in two and overlaps one half's all-to-all and all-reduces with the other's compute, as
            DeepSeek's inference system and SGLang's two-batch overlap do: a step lasts the longer of the two,
            with the weights read once per half).
        eplb: whether the experts are placed (and hot ones replicated) by a load balancer such as DeepSeek's EPLB:
            sets how unevenly the router loads the expert-parallel ranks (:func:`routing_imbalance`).
        offline_requests: for ``phase="aggregated"``, the rate of an offline benchmark that queues this many
            requests at once and divides the output by the whole run's time, ramp-up and drain included
            (TensorRT-LLM's ``trtllm-bench throughput``): the run is simulated (:func:`llmmath.engine.simulate`,
            the KV of each whole request reserved on admission, as its "guaranteed no evict" scheduler does, and
            8,192 tokens a step) and appended to the waterfall as its last term.
        token_budget: the most tokens one step of each attention-DP rank holds (vLLM's ``max_num_batched_tokens``; default
            :func:`~llmmath.deployment.default_token_budget`, 8,192 on an H100):
            prompts longer than it are prefilled in chunks of it (time to first token), and it caps the prompt
            tokens beside the decode tokens of an aggregated step.
        offline_limits: ``(max_running, token_budget)`` of that simulated run, the most sequences the engine runs at
            once and the most tokens one step holds over the deployment (default: as many as fit, and 8,192), e.g.
            :func:`llmmath.planner.trtllm_bench_limits` for a ``trtllm-bench`` run that set none.

    Returns:
        :class:`Prediction`.

    Raises:
        ValueError: an unknown phase, lengths below 1, no batch that fits, and everything
            :class:`~llmmath.deployment.Deployment` raises. KeyError: unknown model, chip or dtype.
    """
    if phase not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {phase!r}")
    if overlap not in OVERLAPS:
        raise ValueError(f"overlap must be one of {OVERLAPS}, got {overlap!r}")
    if offline_limits is not None and offline_requests is None:
        raise ValueError("offline_limits applies to a simulated offline run: give offline_requests with it")
    if offline_requests is not None and (phase != "aggregated" or mtp_tokens or overlap != "none" or pp != 1):
        raise ValueError("offline_requests simulates an aggregated engine run: give it with phase='aggregated', "
                         "without MTP, two-batch overlap or pipeline stages")
    T = float(positive("input_tokens", scalar("input_tokens", input_tokens)))
    O = float(positive("output_tokens", scalar("output_tokens", output_tokens)))
    d = Deployment(model, chip, n_chips, tp=tp, ep=ep, dp=dp, pp=pp, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                   compute_dtype=compute_dtype, usable_hbm_fraction=usable_hbm_fraction,
                   gpu_memory_utilization=gpu_memory_utilization, engine=engine, max_num_batched_tokens=token_budget,
                   mtp=bool(mtp_tokens))
    L = T + O / 2.0 if context is None else float(positive("context", scalar("context", context)))
    B = d.max_batch(L) if batch is None else float(positive("batch", scalar("batch", batch)))
    if B < 1:
        from .deployment import placement_hint
        hint = placement_hint(model, chip, n_chips, L, tp=tp, ep=ep, dp=dp, pp=pp, weight_dtype=weight_dtype,
                              kv_dtype=kv_dtype, compute_dtype=compute_dtype, usable_hbm_fraction=usable_hbm_fraction,
                              gpu_memory_utilization=gpu_memory_utilization, engine=engine)
        raise ValueError(f"no batch of {L:,.0f}-token sequences (the mean context, input + output / 2) fits {d}: "
                         + (f"{hint}; or smaller dtypes" if hint else "use more chips or smaller dtypes"))
    budget = d.replica_token_budget                 # each dp rank's max_num_batched_tokens, together
    if max_tpot_s is not None:
        if phase == "aggregated":      # the decode step shares its time with the prefill chunks of arriving requests
            tpot = lambda b: _aggregated(d, b, T, O, L, budget, mtp_tokens, mtp_acceptance, overlap, eplb)[1]  # noqa
        else:
            tpot = lambda b: _decode(d, b, L, mtp_tokens, mtp_acceptance, overlap, eplb)[1]  # noqa: E731
        B = _batch_for_tpot(d, B, tpot, float(positive("max_tpot_s", scalar("max_tpot_s", max_tpot_s))))
    ttft = prefill_chunks_s(d, T, budget, eplb=eplb, overlap=overlap)
    if phase == "prefill":             # steps full of prompts: input tokens/s per chip
        s = step(d, float(budget), 0.0, budget / T * float(d.model.prefill_positions(T)), eplb=eplb, overlap=overlap,
                 sequences=max(1.0, budget / T),
                 index_prefill_positions=budget / T * float(d.model.index_prefill_positions(T)))
        fall, terms = _scalar_step(s)
        per_chip = budget / d.placement.chips_per_replica
        return Prediction(phase, B, per_chip / fall[-1][1], math.nan, [(k, per_chip / t) for k, t in fall], terms,
                          ttft)
    if phase == "decode":
        fall, step_s, terms = _decode(d, B, L, mtp_tokens, mtp_acceptance, overlap, eplb)
        return Prediction(phase, B, fall[-1][1], step_s, fall, terms, ttft)
    fall, step_s, terms = _aggregated(d, B, T, O, L, budget, mtp_tokens, mtp_acceptance, overlap, eplb)
    agg = fall
    if offline_requests is not None:
        from . import engine as simulator               # the engine builds on this module: imported when used
        N = positive_int("offline_requests", offline_requests)
        running, budget = (None, 8192) if offline_limits is None else offline_limits
        if running is not None:
            running = positive_int("offline_limits max_running", running)
        budget = positive_int("offline_limits token_budget", budget)
        run = simulator.simulate(model, chip, n_chips, arrival_times_s=np.zeros(N), input_tokens=T, output_tokens=O,
                              kv_policy="reserve", token_budget=budget, max_running=running, tp=tp, ep=ep, dp=dp,
                              weight_dtype=weight_dtype, kv_dtype=kv_dtype, compute_dtype=compute_dtype,
                              usable_hbm_fraction=usable_hbm_fraction, gpu_memory_utilization=gpu_memory_utilization,
                              engine=engine, eplb=eplb)
        rate = float(run.output_tokens.sum()) / float(run.finish_times_s.max()) / d.n_chips
        terms = {**terms, "offline_run_factor": rate / agg[-1][1]}
        agg.append((f"an offline run of {N:,} request{'s' if N > 1 else ''} (simulated engine)", rate))
    return Prediction(phase, B, agg[-1][1], step_s, agg, terms, ttft)


def _decode(d: Deployment, B: float, L: float, mtp_tokens, mtp_acceptance, overlap="none", eplb=False):
    """A decode step of ``B`` sequences over the deployment at context ``L``: (waterfall of tokens/s per chip,
    time per output token, terms)."""
    B_r = B / d.replicas
    s = step(d, B_r, B_r * float(d.model.cached_positions(L)), eplb=eplb, overlap=overlap,
             index_positions=B_r * float(d.model.index_positions(L)))
    fall_s, terms = _scalar_step(s)
    rate = lambda t: B_r / (t * d.placement.chips_per_replica)  # noqa: E731  tokens/s per chip at step time t
    fall = [(k, rate(t)) for k, t in fall_s]
    step_s = fall_s[-1][1]
    if not mtp_tokens:
        return fall, step_s, terms
    k = positive_int("mtp_tokens", mtp_tokens)
    E = speculative.expected_tokens_per_step(k, 0.85 if mtp_acceptance is None else mtp_acceptance)
    # the verify step: k + 1 tokens a sequence through the matmuls, each attending to the sequence's cache (read
    # once); the draft: per drafted token, the MTP module's one block and the output head read again
    # (speculative.mtp_draft_fraction of the step's weight read) and one more layer's kernels (the MTP module is one
    # decoder layer of the model's last kind)
    verify_s = float(step(d, B_r * (k + 1), B_r * float(d.model.cached_positions(L)), queries_per_position=k + 1,
                          eplb=eplb, overlap=overlap, sequences=B_r,
                          index_positions=B_r * float(d.model.index_positions(L)),
                          index_prefill_positions=B_r * k * float(d.model.index_positions(L))).time_s)
    layer_kernels = kernels_per_layer(d.model, d.placement.tp, d.placement.ep)[1]   # dense models: both equal
    draft_s = k * (speculative.mtp_draft_fraction(d.model, B_r) * terms["weights_s"]
                   + layer_kernels * calibrated()["per_kernel_s"])
    total = verify_s + draft_s
    terms.update(mtp_tokens_per_step=E, mtp_extra_s=verify_s - step_s, mtp_draft_s=draft_s)
    fall.append((f"MTP, {k} token(s)", E * rate(total)))
    return fall, total / E, terms


def _aggregated(d: Deployment, B: float, T: float, O: float, L: float, budget: int, mtp_tokens, mtp_acceptance,
                overlap="none", eplb=False):
    """Aggregated serving's steady state: decode and chunked prefill in the same steps (:func:`_mixed_shapes`), as a
    continuous-batching engine runs them. (Waterfall of output tokens/s per chip, time per output token, terms)."""
    n, out, mix = _mixed_shapes(d, B / d.replicas, T, O, L, budget)
    fall_s, terms = [], {}
    for share, shape in mix:                          # the mean step: each term weighted by its steps' share
        f_s, t_s = _scalar_step(step(d, eplb=eplb, overlap=overlap, **shape))
        fall_s = [(k, v * share) for k, v in f_s] if not fall_s else [(k, a + v * share)
                                                                     for (k, a), (_, v) in zip(fall_s, f_s)]
        terms = {k: terms.get(k, 0.0) + v * share for k, v in t_s.items()}
    terms["routing_imbalance"] = t_s["routing_imbalance"]
    terms["prefill_step_share"] = mix[0][0]
    chips = d.placement.chips_per_replica
    fall = [(k, out / (t * chips)) for k, t in fall_s]
    step_s = fall_s[-1][1]
    terms["decoding_sequences"] = n * d.replicas
    if mtp_tokens:                                    # MTP multiplies the decode tokens of each step
        dec_fall, tpot, dec_terms = _decode(d, max(n, 1.0) * d.replicas, L, mtp_tokens, mtp_acceptance, overlap, eplb)
        # the decode rate's gain from MTP, applied to the whole mixed step (its prefill share gains nothing in truth:
        # an upper bound on the gain where prefill is a large share of the step)
        speedup = dec_fall[-1][1] / dec_fall[-2][1]
        terms.update({k: v for k, v in dec_terms.items() if k.startswith("mtp_")})
        step_s = step_s / speedup
        fall.append((dec_fall[-1][0], out / (step_s * chips)))
    return fall, step_s, terms


def _batch_for_tpot(d: Deployment, most: float, tpot, tpot_s: float) -> float:
    """The largest whole batch up to ``most`` whose time per output token, ``tpot(batch)``, is at most ``tpot_s``."""
    if tpot(1.0) > tpot_s:
        raise ValueError(f"max_tpot_s={tpot_s * 1e3:.3g} ms is below the predicted time per token at batch 1, "
                         f"{tpot(1.0) * 1e3:.3g} ms; allowed: at least that")
    if tpot(most) <= tpot_s:
        return most
    lo, hi = 1, int(most)                                  # tpot(lo) <= limit < tpot(hi): bisect on whole batches
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if tpot(float(mid)) <= tpot_s else (lo, mid)
    return float(lo)
