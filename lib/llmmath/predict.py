"""What a deployment will actually do: the roofline ceiling, then each term a real engine pays (chapter 12).

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
   (:func:`routing_imbalance`, with or without EPLB);
7. **multi-token prediction**: tokens per step, the verify step and the draft (:mod:`llmmath.speculative`);
8. **an offline run** (``offline_requests``): a benchmark's whole run simulated, ramp-up and drain included, under
   the engine's limits on running sequences and tokens a step (``offline_limits``; for TensorRT-LLM's tables,
   the limits ``trtllm-bench`` derives itself, :func:`llmmath.planner.trtllm_bench_limits`).

The result keeps every intermediate rate (the waterfall), so a reader sees which term moves a
deployment most. Not modelled: grouped-GEMM efficiency of small experts, node-limited routing's
deduplicated dispatch, host (CPU) time per scheduled sequence, each engine's own kernel fusion (one count of
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

__all__ = ["Prediction", "predict", "engine_constants", "sustained", "gemm_fractions", "matmul_fraction", "calibrated",
           "routing_imbalance", "expected_max_of_normals", "kernels_per_layer", "kernels_per_step"]

PHASES = ("decode", "prefill", "aggregated")
PLATEAU_TOKENS = (2048, 4096, 8192)      # the tokens a step at which matmul_fraction reads the measured tables
OVERLAPS = ("none", "two-batch")
LOW_PRECISION_TERM = "fp8/fp4 matmuls at their measured rate"


def engine_constants() -> dict:
    """``data/engine_constants.toml`` (sustained fractions by vendor, collective rates, scale-up domains)."""
    return _catalog.load("engine_constants.toml")


@dataclasses.dataclass(frozen=True)
class Prediction:
    """A predicted operating point (per chip, SI units) and the waterfall from the roofline ceiling to it.

    ``waterfall``: ``[(term, tokens/s per chip after it)]`` starting at ``("roofline ceiling", ...)``;
    ``terms``: each term's seconds per step (or its factor) at the prediction.
    """

    phase: str
    batch: float
    tokens_per_s_per_chip: float
    step_s: float
    waterfall: list
    terms: dict

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
                    + ("" if math.isnan(self.step_s) else f", time per output token {self.step_s * 1e3:.2f} ms"))
        return "\n".join(rows)

    def to_dict(self) -> dict:
        """Plain numbers for JSON (NaN as None)."""
        clean = lambda v: None if isinstance(v, float) and not math.isfinite(v) else v  # noqa: E731
        return {"phase": self.phase, "batch": self.batch, "tokens_per_s_per_chip": self.tokens_per_s_per_chip,
                "tpot_s": clean(self.step_s), "waterfall": [{"term": n, "tokens_per_s_per_chip": r}
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


def gemm_fractions() -> dict:
    """``data/gemm_fractions.toml``: per chip and precision, the share of the dense datasheet peak TensorRT-LLM's GEMMs
    reach against the tokens in the step (``tokens``, ``median``, ``q25``, ``q75``, ``shapes``), derived by
    ``tools/gemm_fractions.py`` from NVIDIA AIConfigurator's measured tables."""
    return _catalog.load("gemm_fractions.toml")


def matmul_fraction(chip, dtype: str = "bf16") -> float:
    """What a serving engine's matmuls at ``dtype`` reach of ``chip``'s dense ``dtype`` peak at a large batch.

    For a chip in ``data/gemm_fractions.toml`` (H100 SXM, H200, B200, GB200): the median of that table's medians at
    2,048, 4,096 and 8,192 tokens a step (TensorRT-LLM's Linear layer timed by NVIDIA over model widths 4,096 to
    16,384; ``fp16`` reads the ``bf16`` table and ``int8`` the ``fp8`` one). H100 bf16 0.745, fp8 0.525; B200 bf16
    0.655, fp8 0.443, fp4 0.384. Any other chip: its vendor's ``[sustained]`` ``matmul_fraction`` for 16- and 32-bit
    formats, ``low_precision_matmul_fraction`` for 8- and 4-bit ones (``data/engine_constants.toml``).

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
    sus = sustained(c)
    return float(sus["matmul_fraction"] if c.flops_per_s(dtype) <= c.flops_per_s("bf16")
                 else sus["low_precision_matmul_fraction"])


def calibrated() -> dict:
    """The constant set from a published serving result (``data/engine_constants.toml`` [calibrated]):
    ``per_kernel_s`` (a fixed time per kernel per decode step), with the row it was solved on (``calibrated_on``)."""
    return engine_constants()["calibrated"]


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


def _domain(chip_key: str) -> int:
    return int(engine_constants()["domains"].get(chip_key, 8))


def _links(d: Deployment) -> tuple[float, float]:
    """(bytes/s of a TP all-reduce's bus, bytes/s of the expert all-to-all per GPU) for this deployment."""
    k = engine_constants()["collectives"]
    c = d.chip
    tp_bus = c.scale_up_bytes_per_s * k["nvlink_all_reduce_fraction"]
    ep_group = d.placement.stage_chips
    link = c.scale_up_bytes_per_s if ep_group <= _domain(c.key) else c.scale_out_bytes_per_s
    return tp_bus, link * k["all_to_all_fraction"]


def _decode_terms(d: Deployment, batch: float, context: float, mtp_tokens: int, mtp_acceptance, overlap="none",
                  eplb=False):
    """Tokens/s per chip after each decode term (the waterfall) and the final step's parts."""
    sus = sustained(d.chip)
    st = d.decode_stages(batch, context)
    pp = d.placement.pp
    worst = int(np.argmax(st.floor_s))
    flops = {k: float(v[worst]) for k, v in st.flops.items()}
    mem_s = float(st.weight_s[worst] + st.kv_s[worst]) * pp
    comp_s = float(st.compute_s[worst]) * pp
    n, B = d.n_chips, batch
    rate = lambda t: B / (t * n)  # noqa: E731  tokens/s per chip at step time t
    f16 = matmul_fraction(d.chip, "bf16")
    fall = [("roofline ceiling", rate(max(comp_s, mem_s)))]
    comp_s /= f16
    mem_s /= sus["hbm_fraction"]
    fall.append(("sustained HBM and matmul rates", rate(max(comp_s, mem_s))))
    F_attn = d.chip.flops_per_s("bf16") * f16
    F_mm = d.flops_per_s * f16
    comp_s = pp * ((flops["matmul"] + flops["routed experts"]) / F_mm + flops["attention"] / F_attn)
    fall.append(("attention at bf16", rate(max(comp_s, mem_s))))
    step = comp_s + mem_s
    fall.append(("compute and memory not overlapped", rate(step)))
    imb = routing_imbalance(d.model, d.placement.ep, eplb)
    routing_s = (imb - 1.0) * pp * flops["routed experts"] / F_mm
    if routing_s:                      # the busiest rank's experts get imb x the mean tokens: their GEMMs take longer
        comp_s += routing_s
        step += routing_s
        fall.append(("uneven expert routing (busiest rank)", rate(step)))
    tp_bus, a2a = _links(d)
    sent = d.collective_bytes_per_step(batch)
    tp_s = float(sent["tensor-parallel all-reduce"]) / tp_bus if d.placement.tp > 1 else 0.0
    ep_s = float(sent["expert-parallel all-to-all"]) / a2a if d.placement.ep > 1 else 0.0
    pp_s = float(sent["pipeline send"]) / d.chip.scale_out_bytes_per_s if pp > 1 else 0.0
    step += tp_s + ep_s + pp_s
    fall.append(("communication (TP, EP, PP)", rate(step)))
    overlap_s = 0.0
    if overlap == "two-batch":
        # two micro-batches take turns: one computes while the other's all-to-all is in flight, so a step lasts the
        # longer of the two streams; each micro-batch reads the chip's weights again (DeepSeek-V3 inference
        # system, day 6 of its open-source week; SGLang's two-batch overlap)
        weight_s = float(st.weight_s[worst]) * pp / sus["hbm_fraction"]
        overlapped = max(comp_s + mem_s + weight_s, tp_s + ep_s + pp_s)
        overlap_s = overlapped - step
        step = overlapped
        fall.append(("two-batch overlap of communication", rate(step)))
    # low-precision matmuls at their own measured share of their peak, then the calibrated fixed time per kernel
    cal = calibrated()
    lowp_s = 0.0
    if _low_precision(d):
        lowp_s = (pp * (flops["matmul"] + imb * flops["routed experts"]) / F_mm  # the busiest rank's excess too
                  * (1.0 / _low_precision_factor(d) - 1))
        step += lowp_s
        fall.append((LOW_PRECISION_TERM, rate(step)))
    fixed_s = kernels_per_step(d.model, d.placement.tp, d.placement.ep) * cal["per_kernel_s"]
    step += fixed_s
    fall.append(("fixed time per kernel (calibrated)", rate(step)))
    terms = {"compute_s": comp_s, "memory_s": mem_s, "tensor_parallel_s": tp_s, "expert_all_to_all_s": ep_s,
             "pipeline_send_s": pp_s, "two_batch_overlap_s": overlap_s, "low_precision_matmul_s": lowp_s,
             "fixed_time_s": fixed_s, "routing_imbalance": imb, "uneven_routing_s": routing_s}
    if mtp_tokens:
        k = positive_int("mtp_tokens", mtp_tokens)
        E = speculative.expected_tokens_per_step(k, 0.85 if mtp_acceptance is None else mtp_acceptance)
        more = d.decode_stages(batch * (k + 1), context)
        # the verify step's extra tokens: their matmuls at the matmuls' measured rate, their attention at bf16's
        grown = {key: float(more.flops[key][worst]) - v for key, v in flops.items()}
        extra = pp * ((grown["matmul"] + grown["routed experts"]) / (F_mm * _low_precision_factor(d))
                      + grown["attention"] / F_attn)
        extra += float(more.weight_s[worst] - st.weight_s[worst]) * pp / sus["hbm_fraction"]
        # the draft: per drafted token, the MTP module's one block and the output head read again
        # (speculative.mtp_draft_fraction of the step's weight read) and one more layer's kernels (the MTP module is
        # one decoder layer of the model's last kind)
        weights_s = float(st.weight_s[worst]) * pp / sus["hbm_fraction"]
        layer_kernels = kernels_per_layer(d.model, d.placement.tp, d.placement.ep)[1]   # dense models: both equal
        draft_s = k * (speculative.mtp_draft_fraction(d.model, batch / d.replicas) * weights_s
                       + layer_kernels * cal["per_kernel_s"])
        step = step + extra + draft_s + (k + 1 - 1) * (tp_s + ep_s)
        terms.update(mtp_tokens_per_step=E, mtp_extra_s=extra, mtp_draft_s=draft_s)
        fall.append((f"MTP, {k} token(s)", E * rate(step)))
        return fall, step / E, terms
    return fall, step, terms


def predict(model, chip, n_chips=None, *, input_tokens, output_tokens, batch=None, phase="decode", tp=1, ep=1, dp=1,
            pp=1, weight_dtype="bf16", kv_dtype="bf16", compute_dtype=None, mtp_tokens=0, mtp_acceptance=None,
            usable_hbm_fraction=0.9, context=None, max_tpot_s=None, overlap="none",
            offline_requests=None, offline_limits=None, eplb=False) -> Prediction:
    """The expected measured rate of a deployment, with the waterfall from its roofline ceiling (see the module).

    Args:
        model, chip, n_chips, tp, ep, dp, pp, weight_dtype, kv_dtype, compute_dtype: as :func:`llmmath.planner.plan`.
        input_tokens, output_tokens: the workload's mean lengths; decode runs at context
            ``input + output / 2`` unless ``context`` (the mean KV length, where it is published) is given.
        batch: sequences decoding at once over the deployment (default: the most whose KV fits in
            ``usable_hbm_fraction`` of each chip's HBM, capped so the time per output token stays
            under ``max_tpot_s`` when that is given).
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
                   compute_dtype=compute_dtype, usable_hbm_fraction=usable_hbm_fraction)
    L = T + O / 2.0 if context is None else float(positive("context", scalar("context", context)))
    B = d.max_batch(L) if batch is None else float(positive("batch", scalar("batch", batch)))
    if B < 1:
        raise ValueError(f"no batch of {L:,.0f}-token sequences (the mean context, input + output / 2) fits {d}: "
                         f"use more chips or smaller dtypes")
    if max_tpot_s is not None:
        B = _batch_for_tpot(d, B, L, float(positive("max_tpot_s", scalar("max_tpot_s", max_tpot_s))), mtp_tokens,
                            mtp_acceptance, overlap, eplb)
    fall, step, terms = _decode_terms(d, B, L, mtp_tokens, mtp_acceptance, overlap, eplb)
    decode_rate = fall[-1][1]
    if phase == "decode":
        return Prediction(phase, B, decode_rate, step, fall, terms)
    pre = _prefill_rate(d, T, overlap, eplb)
    if phase == "prefill":
        return Prediction(phase, B, pre[-1][1], math.nan, pre, {})
    # aggregated: chip-seconds per request = T / prefill rate + O / decode rate
    # each decode term beside the prefill rate after the same term (or the last prefill term before it)
    pre_rate, agg = dict(pre), []
    p = pre[0][1]
    for name, r in fall:
        p = pre_rate.get(name, p)
        agg.append((name, O / (T / p + O / r)))
    if offline_requests is not None:
        from . import engine                            # the engine builds on this module: imported when used
        N = positive_int("offline_requests", offline_requests)
        running, budget = (None, 8192) if offline_limits is None else offline_limits
        if running is not None:
            running = positive_int("offline_limits max_running", running)
        budget = positive_int("offline_limits token_budget", budget)
        run = engine.simulate(model, chip, n_chips, arrival_times_s=np.zeros(N), input_tokens=T, output_tokens=O,
                              kv_policy="reserve", token_budget=budget, max_running=running, tp=tp, ep=ep, dp=dp,
                              weight_dtype=weight_dtype, kv_dtype=kv_dtype, compute_dtype=compute_dtype,
                              usable_hbm_fraction=usable_hbm_fraction, eplb=eplb)
        rate = float(run.output_tokens.sum()) / float(run.finish_times_s.max()) / d.n_chips
        terms = {**terms, "offline_run_factor": rate / agg[-1][1]}
        agg.append((f"an offline run of {N:,} request{'s' if N > 1 else ''} (simulated engine)", rate))
    return Prediction(phase, B, agg[-1][1], step, agg, terms)


def _batch_for_tpot(d: Deployment, most: float, L: float, tpot_s: float, mtp_tokens, mtp_acceptance,
                    overlap="none", eplb=False) -> float:
    """The largest whole batch up to ``most`` whose predicted time per output token is at most ``tpot_s``."""
    tpot = lambda b: _decode_terms(d, b, L, mtp_tokens, mtp_acceptance, overlap, eplb)[1]  # noqa: E731
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


def _prefill_rate(d: Deployment, T: float, overlap: str = "none", eplb: bool = False) -> list:
    """Input tokens/s per chip of compute-bound prefill after each term (prompts of ``T`` tokens)."""
    m = d.model
    mm = 2.0 * m.matmul_params_per_token
    attn = float(m.prefill_attention_flops(T, absorbed=False)) / T
    F = d.flops_per_s
    fall = [("roofline ceiling", F / (mm + attn))]
    f16 = matmul_fraction(d.chip, "bf16")
    Fs = F * f16
    fall.append(("sustained HBM and matmul rates", Fs / (mm + attn)))
    F_attn = d.chip.flops_per_s("bf16") * f16
    per_token_s = mm / Fs + attn / F_attn
    fall.append(("attention at bf16", 1.0 / per_token_s))
    fall.append(("compute and memory not overlapped", 1.0 / per_token_s))
    imb = routing_imbalance(m, d.placement.ep, eplb)
    if imb > 1:                        # the busiest rank's share of each token's routed-expert FLOPs, imb x the mean
        per_token_s += (imb - 1.0) * m.routed_flops_per_token / Fs
        fall.append(("uneven expert routing (busiest rank)", 1.0 / per_token_s))
    lowp_s = (mm + (imb - 1.0) * m.routed_flops_per_token) / Fs * (1.0 / _low_precision_factor(d) - 1)
    # communication, in chip-seconds per prompt token: a TP group of tp chips all-reduces each token's activations
    # twice a layer (each chip sends 2 (tp-1)/tp of them, all tp chips busy); each token goes to its k experts
    # and back once a MoE layer over its own chip's link (network.moe_all_to_all_bytes_per_token)
    from . import network
    pl = d.placement
    tp_bus, a2a = _links(d)
    act = m.d_model * d.b_act
    comm_s = 0.0
    if pl.tp > 1:
        comm_s += pl.tp * m.n_layers * 2 * 2 * (pl.tp - 1) / pl.tp * act / tp_bus
    if pl.ep > 1 and m.is_moe:
        comm_s += m.n_moe_layers * float(network.moe_all_to_all_bytes_per_token(
            m.d_model, m.experts_per_token, pl.ep)) / a2a
    fall.append(("communication (TP, EP, PP)", 1.0 / (per_token_s + comm_s)))
    if overlap == "two-batch":                 # thousands of tokens a step: the weights' second read is negligible
        per_token_s = max(per_token_s, comm_s)
        fall.append(("two-batch overlap of communication", 1.0 / per_token_s))
    else:
        per_token_s += comm_s
    if lowp_s:
        per_token_s += lowp_s
        fall.append((LOW_PRECISION_TERM, 1.0 / per_token_s))
    # a prefill step holds thousands of tokens: the fixed time per kernel is under 0.1% of a token's time
    fall.append(("fixed time per kernel (calibrated)", 1.0 / per_token_s))
    return fall
