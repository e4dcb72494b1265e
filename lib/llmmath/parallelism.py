"""Placing a model on many chips: expert, pipeline and tensor parallelism.

Layout assumed throughout (the DeepSeek-V3 / wide-EP style of serving):

* ``ep`` GPUs form one pipeline stage; the routed experts of each MoE layer are
  spread over them (``n_experts / ep`` per GPU), while attention, dense MLPs,
  shared experts, embeddings and norms are *replicated* on each of them
  (data-parallel attention: each GPU serves its own sequences);
* ``pp`` stages each hold ``n_layers / pp`` consecutive layers;
* ``tp`` splits every matrix (and the KV heads) further over ``tp`` GPUs.

Total GPUs = ``ep * pp * tp``. Sources: DeepSeek-V3 Technical Report
(arXiv:2412.19437) section 3.4; GPipe (Huang et al., 2019) and PipeDream-1F1B
(Narayanan et al., 2019/2021) for pipeline schedules; Megatron-LM (Shoeybi et
al., 2019) for tensor parallelism.
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from . import _catalog, hardware, models, network
from ._validate import (MAX_INT, broadcast, check_finite, finite_result, flag, in_range, non_negative, positive,
                        positive_int,
                        result, scalar, whole)
from .units import dtype_bytes

__all__ = [
    "bubble_fraction", "pipeline_bubble_fraction", "PIPELINE_SCHEDULES", "pipeline_orders", "pipeline_schedule",
    "zbv_orders", "zbv_schedule", "zbv_peak_in_flight",
    "MemoryPerGPU", "memory_per_gpu", "check_placement",
    "boundary_traffic_ratio", "stage_layers", "stage_deployment", "stage_floors_s", "PipelinedDecode", "pipelined_decode", "deployments",
    "hop_latencies", "moe_layer_all_to_all_s", "DomainGrowth", "domain_growth", "DomainLimits",
    "domain_parameter_limits", "domain_hbm_fill", "StageMemory", "memory_over_stages", "fits_per_gpu",
]


def deployments() -> dict:
    """Published serving layouts (``data/deployments.toml``): GPUs, EP, attention TP x DP, PP, links, source."""
    return dict(_catalog.load("deployments.toml")["deployments"])


def hop_latencies() -> dict:
    """Published per-hop latencies (``data/deployments.toml``, ``[latency]``): seconds, kind, what, source."""
    return dict(_catalog.load("deployments.toml")["latency"])


@finite_result
def bubble_fraction(stages, microbatches):
    """Idle fraction of a synchronous training pipeline (GPipe or 1F1B): ``(p-1) / (m+p-1)``.

    Both schedules share it: the first stage waits ``p-1`` slots to start and the
    last finishes ``p-1`` slots early (Huang et al. 2019, section 2.2;
    Narayanan et al. 2021, section 2.2). Broadcasts over arrays.

    Raises:
        ValueError: stages or microbatches not whole numbers >= 1, shapes that do not broadcast.
    """
    p, m = broadcast(stages=whole("stages", stages, 1), microbatches=whole("microbatches", microbatches, 1))
    return result((p - 1) / (m + p - 1))


#: Training pipeline schedules :func:`pipeline_bubble_fraction` knows.
PIPELINE_SCHEDULES = ("gpipe", "1f1b", "interleaved", "zero-bubble", "zb-v", "dualpipe")


@finite_result
def pipeline_bubble_fraction(stages, microbatches, schedule: str = "1f1b", chunks: int = 1, forward_s=1.0,
                             backward_input_s=1.0, backward_weight_s=1.0):
    """Idle fraction of a training step's time on each stage, for six schedules (equal stages, free sends).

    With ``p`` stages and ``m`` micro-batches:

    * ``gpipe``, ``1f1b``: ``(p-1) / (m+p-1)`` (Huang et al. 2019; Narayanan et al. 2021, section 2.2);
    * ``interleaved`` (each GPU holds ``v = chunks`` non-adjacent chunks of layers): the fill
      and drain shrink by ``v``: ``(p-1) / (v m + p-1)`` (Narayanan et al. 2021, section 2.2.2);
    * ``zero-bubble`` (ZB-H1, Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024): the
      backward is split into the input gradient B and the weight gradient W, and W fills the
      drain; the idle time per stage is ``(p-1)(T_F + T_B - T_W)`` against 1F1B's
      ``(p-1)(T_F + T_B + T_W)``, so with ``T_F = T_B = T_W`` the bubble is a third of 1F1B's:
      ``(p-1)(T_F+T_B-T_W) / (m (T_F+T_B+T_W) + (p-1)(T_F+T_B-T_W))`` = ``(p-1) / (3m + p-1)``
      (the paper's schedule for ``m >= p``; with fewer micro-batches the formula is optimistic).
      (Their ZB-H2 reaches ~0 with about twice 1F1B's activation memory; not modelled.)
    * ``zb-v`` (the same paper, arXiv:2401.10241 section 6): two chunks a GPU in a V, 1F1B's activation memory, no
      closed form with unequal times: simulated (:func:`zbv_schedule`, PyTorch's order; its idle time is the
      same for every ``m >= 2p - 1``, so no more than that many are simulated); with ``m >= 2p - 1`` and equal times
      ``(p-1) T_F / 2`` idle against ``m (T_F + T_B + T_W)`` of work (with ``T_W`` near ``T_F + T_B`` its fixed
      order can idle more than ZB-H1);
    * ``dualpipe`` (DeepSeek-V3 technical report, arXiv:2412.19437, section 3.2.1 and Table 2): micro-batches
      enter from both ends of the pipeline and each GPU pairs a forward chunk with a backward chunk; the idle
      time per stage is ``(p/2 - 1)(T_F&B + T_B,full - 3 T_W)``, where ``T_F&B = T_F + T_B + T_W`` is a paired
      forward and backward chunk and ``T_B,full = T_B + T_W``: ``(p/2 - 1)(T_F + 2 T_B - T_W)``, with equal times
      ``(p/2 - 1) x 2`` against 1F1B's ``(p - 1) x 3``. ``p`` must be even and ``m`` an even number of at least
      ``2p`` micro-batches (DualPipe's own code asserts both).

    ``forward_s``, ``backward_input_s``, ``backward_weight_s``: one micro-batch's T_F, T_B, T_W on
    one stage (only their ratios matter; used by ``zero-bubble``, which needs ``T_W <= T_F + T_B``, ``zb-v`` and
    ``dualpipe``). Broadcasts over ``stages`` and ``microbatches``.

    Raises:
        ValueError: unknown ``schedule`` (allowed: gpipe, 1f1b, interleaved, zero-bubble, zb-v, dualpipe); stages,
            micro-batches or chunks not whole numbers >= 1; ``chunks`` > 1 with another schedule; with ``zb-v``,
            more than 100,000 (stage, micro-batch) slots to simulate (``p min(m, 2p - 1)``);
            non-positive times; ``T_W > T_F + T_B``; with ``dualpipe``, an odd number of stages or a number of
            micro-batches that is odd or under twice the stages.
    """
    if schedule not in PIPELINE_SCHEDULES:
        raise ValueError(f"schedule must be one of {PIPELINE_SCHEDULES}, got {schedule!r}")
    v = positive_int("chunks", chunks)
    if v > 1 and schedule != "interleaved":
        raise ValueError(f"chunks={v} applies only to schedule='interleaved', got schedule={schedule!r}")
    p, m = broadcast(stages=whole("stages", stages, 1), microbatches=whole("microbatches", microbatches, 1))
    tf = float(positive("forward_s", scalar("forward_s", forward_s)))
    tb = float(positive("backward_input_s", scalar("backward_input_s", backward_input_s)))
    tw = float(positive("backward_weight_s", scalar("backward_weight_s", backward_weight_s)))
    if schedule == "interleaved":
        return result((p - 1) / (v * m + p - 1))
    if schedule == "zb-v":
        return result(np.vectorize(lambda a, b: _zbv_bubble(int(a), int(b), tf, tb, tw), otypes=[float])(p, m))
    if schedule == "dualpipe":
        if np.any(p % 2):
            raise ValueError(f"dualpipe feeds micro-batches from both ends and needs an even number of stages, "
                             f"got stages={stages!r}")
        if np.any(m % 2) or np.any(m < 2 * p):
            raise ValueError(f"dualpipe needs an even number of micro-batches, at least twice the stages (2 x "
                             f"{stages!r}), got microbatches={microbatches!r}")
        idle = (p / 2 - 1) * (tf + 2 * tb - tw)
        return result(idle / (m * (tf + tb + tw) + idle))
    if schedule == "zero-bubble":
        if tw > tf + tb:
            raise ValueError(f"backward_weight_s={tw:g} exceeds forward_s + backward_input_s = {tf + tb:g}; "
                             f"ZB-H1's bubble (p-1)(T_F+T_B-T_W) needs T_W <= T_F + T_B")
        idle = (p - 1) * (tf + tb - tw)
        return result(idle / (m * (tf + tb + tw) + idle))
    return result((p - 1) / (m + p - 1))


_MAX_SLOTS = 100_000


def pipeline_orders(stages: int, microbatches: int, kind: str = "1f1b", forward_only: bool = False) -> list:
    """The order in which each stage runs its work: per stage, a list of ``("F" | "B", microbatch)``.

    ``gpipe``: every forward, then every backward. ``1f1b``: stage ``s`` runs ``p - s - 1``
    warm-up forwards, then alternates one forward and one backward, then drains the
    backwards (Narayanan et al. 2021). ``forward_only`` drops the backwards. Used by
    :func:`pipeline_schedule` (simulated) and by :mod:`llmmath.demos.mpi_train` (run on MPI ranks).

    Raises:
        ValueError: unknown ``kind`` (allowed: gpipe, 1f1b); stages or micro-batches < 1.
        TypeError: a non-boolean ``forward_only``.
    """
    p = positive_int("stages", stages)
    m = positive_int("microbatches", microbatches)
    forward_only = flag("forward_only", forward_only)
    if kind not in ("gpipe", "1f1b"):
        raise ValueError(f"kind must be 'gpipe' or '1f1b', got {kind!r}")
    orders = []
    for s in range(p):
        fwd = [("F", i) for i in range(m)]
        bwd = [] if forward_only else [("B", i) for i in range(m)]
        if kind == "gpipe" or forward_only:
            orders.append(fwd + bwd)
            continue
        warm = min(p - s - 1, m)
        seq, f_left, b_left = fwd[:warm], fwd[warm:], list(bwd)
        while f_left or b_left:
            if f_left:
                seq.append(f_left.pop(0))
            if b_left:
                seq.append(b_left.pop(0))
        orders.append(seq)
    return orders


def pipeline_schedule(stages: int, microbatches: int, kind: str = "1f1b",
                      forward_s: float = 1.0, backward_s: float = 2.0, forward_only: bool = False):
    """Simulate a pipeline and return its events ``(stage, microbatch, phase, start_s, end_s)``.

    ``kind="gpipe"``: all forwards, then all backwards (in reverse). ``kind="1f1b"``:
    after ``p - s - 1`` warm-up forwards, stage ``s`` alternates one forward and
    one backward. ``forward_only`` (inference) drops the backwards. Each event
    starts when its stage is free and its input has arrived from the previous
    (forward) or next (backward) stage. Communication is taken as free.

    Raises:
        ValueError: unknown ``kind``, stages/microbatches < 1, non-positive times, or
            more than 100,000 (stage, micro-batch) slots (too many to simulate event by event).
        TypeError: a non-boolean ``forward_only``, an array for a time.
    """
    p = positive_int("stages", stages)
    m = positive_int("microbatches", microbatches)
    if p * m > _MAX_SLOTS:
        raise ValueError(f"stages * microbatches = {p * m} slots are too many to simulate one by one; allowed: "
                         f"at most {_MAX_SLOTS:,} (use bubble_fraction for the closed form)")
    tf = float(positive("forward_s", scalar("forward_s", forward_s)))
    tb = float(positive("backward_s", scalar("backward_s", backward_s)))
    forward_only = flag("forward_only", forward_only)
    orders = pipeline_orders(p, m, kind, forward_only)
    done: dict[tuple, float] = {}
    events = []
    free = [0.0] * p
    pos = [0] * p
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for s in range(p):
            if pos[s] == len(orders[s]):
                continue
            phase, i = orders[s][pos[s]]
            if phase == "F":
                dep = done.get(("F", s - 1, i), None) if s > 0 else 0.0
            else:
                dep = done.get(("B", s + 1, i), None) if s < p - 1 else done.get(("F", s, i), None)
            if dep is None:
                continue
            start = max(free[s], dep)
            end = start + (tf if phase == "F" else tb)
            done[(phase, s, i)] = end
            free[s] = end
            events.append((s, i, phase, start, end))
            pos[s] += 1
            remaining -= 1
            progressed = True
        if not progressed:  # pragma: no cover - the orders above never deadlock
            raise RuntimeError("pipeline schedule deadlocked")
    return events


def zbv_orders(stages: int, microbatches: int) -> list:
    """The order in which each GPU runs its work under ZB-V: per GPU, a list of ``(phase, chunk, microbatch)``.

    ZB-V (Qi et al., "Zero Bubble Pipeline Parallelism", arXiv:2401.10241, section 6) cuts the model into
    ``2p`` chunks and gives GPU ``r`` two of them in a V: chunk ``r`` on the way down and chunk ``2p - 1 - r`` on
    the way back, so GPU 0 holds the first and the last chunk and the last GPU the two middle ones. The backward
    is split in two phases: ``"B"`` the input gradient (on the critical path) and ``"W"`` the weight gradient
    (deferrable), after the forward ``"F"``. GPU ``r`` runs, as PyTorch's ``ScheduleZBVZeroBubble`` lays it out
    (``torch.distributed.pipelining``, from the paper's figure):

    1. warm-up: ``2(p - r) - 1`` forwards of its first chunk, then ``r`` pairs (a forward of the second chunk, one
       of the first), then ``p - r`` triples F, B, W of the second chunk;
    2. steady state: F, B, W of the first chunk, then F, B, W of the second, until every forward has run;
    3. cool-down: ``r`` pairs of input gradients (first chunk, second chunk), ``p - r`` pairs (B, W) of the first
       chunk, then the weight gradients left, second chunk's first.

    The order is written for ``max(m, 2p - 1)`` micro-batches and the ones beyond ``m`` are dropped (PyTorch's
    padding). ``chunk`` counts the model's chunks in forward order, ``0 .. 2p - 1``.

    Raises:
        ValueError: stages or micro-batches not whole numbers >= 1.
    """
    p = positive_int("stages", stages)
    m = positive_int("microbatches", microbatches)
    n = max(m, 2 * p - 1)
    orders = []
    for r in range(p):
        chunk = (r, 2 * p - 1 - r)                      # this GPU's two chunks: down, then back up the V
        done = {"F": [0, 0], "B": [0, 0], "W": [0, 0]}
        seq = []

        def run(phase, c):
            seq.append((phase, chunk[c], done[phase][c]))
            done[phase][c] += 1

        for _ in range(2 * (p - r) - 1):
            run("F", 0)
        for _ in range(r):
            run("F", 1), run("F", 0)
        for _ in range(p - r):
            run("F", 1), run("B", 1), run("W", 1)
        while done["F"][1] < done["F"][0] or done["F"][0] < n:
            if done["F"][0] < n:
                run("F", 0)
            run("B", 0), run("W", 0), run("F", 1), run("B", 1), run("W", 1)
        for _ in range(r):
            run("B", 0), run("B", 1)
        for _ in range(p - r):
            run("B", 0), run("W", 0)
        while done["W"][1] < done["B"][1]:
            run("W", 1)
        while done["W"][0] < done["B"][0]:
            run("W", 0)
        orders.append([op for op in seq if op[2] < m])
    return orders


def zbv_peak_in_flight(stages: int, microbatches: int, chunk_sizes=None) -> list:
    """Per GPU under ZB-V, the most it holds of the micro-batches whose forward has run and whose weight gradient
    has not: walking its order (:func:`zbv_orders`), a chunk's forward adds ``chunk_sizes[chunk]`` and its weight
    gradient frees it. ``chunk_sizes``: one entry per chunk (``2p``; bytes, layers, ...), default half a stage each,
    so the answer counts whole stages' micro-batches. The walk stops at ``min(m, 2p)`` micro-batches: the peak
    comes before (the tests check it against the full walk with unequal chunks).

    Raises:
        ValueError: stages or micro-batches not whole numbers >= 1, ``chunk_sizes`` not of length ``2p``.
    """
    p, m = positive_int("stages", stages), positive_int("microbatches", microbatches)
    sizes = [0.5] * (2 * p) if chunk_sizes is None else [float(x) for x in chunk_sizes]
    if len(sizes) != 2 * p:
        raise ValueError(f"chunk_sizes needs one entry per chunk, 2 x stages = {2 * p}, got {len(sizes)}")
    peaks = []
    for order in zbv_orders(p, min(m, 2 * p)):
        held = peak = 0.0
        for phase, c, _ in order:
            held += sizes[c] if phase == "F" else -sizes[c] if phase == "W" else 0.0
            peak = max(peak, held)
        peaks.append(peak)
    return peaks


@functools.lru_cache(maxsize=4096)
def _zbv_bubble(p: int, m: int, tf: float, tb: float, tw: float) -> float:
    """ZB-V's idle fraction from one short simulation: from ``2p - 1`` micro-batches on, each further one adds its
    own work and no idle time (the steady state runs without gaps; the tests check this against the full
    simulation over stages, batches and phase times), so the idle time of ``min(m, 2p - 1)`` micro-batches is
    that of ``m``."""
    short = min(m, 2 * p - 1)
    if p * short > _MAX_SLOTS:
        raise ValueError(f"zb-v at {p} stages needs {p} x {short} (stage, micro-batch) slots simulated; allowed: at "
                         f"most {_MAX_SLOTS:,} (about 220 stages once m >= 2p - 1)")
    idle = zbv_schedule(p, short, tf, tb, tw)["step_s"] - short * (tf + tb + tw)
    return idle / (m * (tf + tb + tw) + idle)


def zbv_schedule(stages: int, microbatches: int, forward_s: float = 1.0, backward_input_s: float = 1.0,
                 backward_weight_s: float = 1.0) -> dict:
    """Simulate ZB-V (:func:`zbv_orders`) and return its timeline, length, idle fraction and activation peak.

    ``forward_s``, ``backward_input_s``, ``backward_weight_s``: one micro-batch's ``T_F``, ``T_B``, ``T_W`` on one
    GPU's share of the model (both its chunks; a chunk's phase takes half). Each phase starts when its GPU is free
    and its input is there: a forward after the previous chunk's forward of that micro-batch, an input gradient
    after the next chunk's (the last chunk's after its own forward), a weight gradient after the input gradient
    of its chunk. Sends are taken as free.

    Returns a dict: ``events``, a list of ``(gpu, chunk, microbatch, phase, start_s, end_s)``; ``step_s``, when
    the last GPU finishes; ``bubble_fraction``, ``1 - m (T_F + T_B + T_W) / step_s``, the idle share every GPU
    has (each does the same work); ``peak_in_flight``, per GPU the most micro-batches whose forward has run and
    whose weight gradient has not, counted in whole stages (:func:`zbv_peak_in_flight`), which sets its
    activation memory. With ``m >= 2p - 1`` micro-batches: at equal times the step is ``m (T_F + T_B + T_W) + (p - 1) T_F / 2``,
    nothing idle but the last GPU's wait for the first forward to come down ``p - 1`` chunks (the paper's "zero
    bubble" counts that wait as negligible), and every GPU peaks at ``p`` micro-batches, 1F1B's first stage; with
    unequal times the fixed order leaves gaps (the authors' own scheduler reorders by measured times and can do
    better: not modelled).

    Raises:
        ValueError: stages or micro-batches not whole numbers >= 1, non-positive times, or more than 100,000
            (stage, micro-batch) slots.
        TypeError: an array for a time.
    """
    p = positive_int("stages", stages)
    m = positive_int("microbatches", microbatches)
    if p * m > _MAX_SLOTS:
        raise ValueError(f"stages * microbatches = {p * m} slots are too many to simulate one by one; allowed: "
                         f"at most {_MAX_SLOTS:,}")
    cost = {"F": float(positive("forward_s", scalar("forward_s", forward_s))) / 2,
            "B": float(positive("backward_input_s", scalar("backward_input_s", backward_input_s))) / 2,
            "W": float(positive("backward_weight_s", scalar("backward_weight_s", backward_weight_s))) / 2}
    orders, last = zbv_orders(p, m), 2 * p - 1
    done: dict[tuple, float] = {}
    free, pos = [0.0] * p, [0] * p
    events = []
    remaining = sum(len(o) for o in orders)
    while remaining:
        progressed = False
        for g in range(p):
            while pos[g] < len(orders[g]):
                phase, c, i = orders[g][pos[g]]
                need = (("F", c - 1, i) if c > 0 else None) if phase == "F" else \
                    (("B", c + 1, i) if c < last else ("F", c, i)) if phase == "B" else ("B", c, i)
                if need is not None and need not in done:
                    break
                start = max(free[g], done[need] if need else 0.0)
                end = start + cost[phase]
                done[(phase, c, i)] = free[g] = end
                events.append((g, c, i, phase, start, end))
                pos[g] += 1
                remaining -= 1
                progressed = True
        if not progressed:  # pragma: no cover - the order above never deadlocks
            raise RuntimeError("ZB-V schedule deadlocked")
    step_s = max(free)
    busy = m * 2 * sum(cost.values())
    return {"events": events, "step_s": step_s, "bubble_fraction": 1.0 - busy / step_s,
            "peak_in_flight": zbv_peak_in_flight(p, m)}


@dataclasses.dataclass(frozen=True)
class MemoryPerGPU:
    """HBM bytes one GPU holds under a placement (arrays broadcast over batch x context)."""

    weight_bytes: float | np.ndarray
    kv_bytes: float | np.ndarray
    n_gpus: int

    @property
    def total_bytes(self):
        return self.weight_bytes + self.kv_bytes


def check_placement(model, ep: int = 1, pp: int = 1, tp: int = 1) -> None:
    """Refuse impossible placements with a message that says what is allowed: the placement of
    :func:`memory_per_gpu` (a stage of ``ep`` groups of ``tp`` GPUs, ``dp = ep``) put to the one validator,
    :func:`llmmath.deployment.check_placement`.

    Raises:
        ValueError: ``pp`` > layers; ``ep`` > 1 on a dense model or above the experts; ``tp`` not dividing the
            attention heads (or, for GQA, neither dividing nor a multiple of the KV heads).
    """
    from .deployment import Placement, check_placement as one_validator
    ep, pp, tp = positive_int("ep", ep), positive_int("pp", pp), positive_int("tp", tp)
    one_validator(model, Placement(tp=tp, ep=ep, dp=ep, pp=pp))


@finite_result
def memory_per_gpu(model, ep: int = 1, pp: int = 1, tp: int = 1, batch=1, context=0, microbatches=None,
                   weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> MemoryPerGPU:
    """Weights and KV cache the busiest GPU must hold (bytes).

    Weights, on a GPU of the busiest pipeline stage (:meth:`llmmath.models.Model.stage_params`:
    its layers, the embedding on the first stage, the final norm and LM head on the last): that
    stage's routed experts ``/ (ep * tp)``, everything else it holds ``/ tp`` (replicated over
    the ``ep`` GPUs of a stage). With ``pp = 1`` that is routed ``/ (ep * tp)`` + the rest ``/ tp``;
    averaging over stages instead (``/ pp``) would undercount the first or last stage (Llama-2-70B
    at TP2 PP4 in bf16: 17,375,240,192 B on the last stage, 17,244,162,048 B averaged).

    KV: ``batch`` is the micro-batch, the sequences one stage works on at a time.
    To keep ``pp`` stages busy in decode, ``microbatches`` (default ``pp``) of
    them are in flight, so ``microbatches * batch`` sequences hold a cache; each
    stage stores only its own layers' share, spread over its ``ep`` GPUs
    (``tp`` splits the KV heads; MLA's shared latent cannot be split by ``tp``). On the
    stage with the most layers (``n_s``; the first ``n_layers mod pp`` stages hold one more)::

        kv per GPU = (microbatches * b) * kv_seq(L) * (n_s / n_layers) / (ep * tp_kv)
                   ~ b kv_seq(L) / (ep tp_kv)   (microbatches = pp, equal stages)

    The pipeline depth cancels: stages shrink the weights per GPU, not the KV. An uneven
    split does not cancel: DeepSeek-V3's 61 layers in 4 stages put 16 on the first, 4.9%
    more KV than the average. This is :class:`llmmath.deployment.Deployment`'s count with
    ``dp = ep`` (the consistency test holds them equal).

    Raises:
        ValueError: impossible placement (see :func:`check_placement`), bad batch/context.
    """
    m = models.get(model)
    check_placement(m, ep, pp, tp)
    ep, pp, tp = int(ep), int(pp), int(tp)
    B, L = broadcast(batch=positive("batch", batch), context=non_negative("context", context))
    mb = pp if microbatches is None else positive_int("microbatches", microbatches)
    moe_layers, other = m.stage_params(pp)
    per_rank = -(-m.n_experts // ep) if m.is_moe else 0        # the fullest rank: ceil(E / ep) experts
    weights = float(np.max(moe_layers * per_rank * m.expert_params / tp + other / tp)) * dtype_bytes(weight_dtype)
    tp_kv = 1 if m.is_mla else min(tp, m.n_kv_heads)          # past the KV heads, each head is replicated
    busiest_share = max(len(r) for r in m.stage_layers(pp)) / m.n_layers   # 16 of DeepSeek-V3's 61 layers at pp=4
    kv = mb * B * np.asarray(m.kv_bytes_per_sequence(L, kv_dtype)) * busiest_share / (ep * tp_kv)
    weights, kv = np.broadcast_arrays(np.asarray(weights, dtype=float), kv)
    return MemoryPerGPU(result(weights), result(kv), ep * pp * tp)


def fits_per_gpu(model, hbm_bytes_per_gpu, ep: int = 1, pp: int = 1, tp: int = 1, batch=1, context=0,
                 weight_dtype: str = "bf16", kv_dtype: str = "bf16"):
    """Whether :func:`memory_per_gpu`'s weights + KV fit in ``hbm_bytes_per_gpu`` (bool, broadcast over batch x context).

    Raises:
        ValueError: an impossible placement (:func:`check_placement`), a non-positive HBM
            size, a bad batch or context.
    """
    hbm = positive("hbm_bytes_per_gpu", hbm_bytes_per_gpu)
    mem = memory_per_gpu(model, ep=ep, pp=pp, tp=tp, batch=batch, context=context, weight_dtype=weight_dtype,
                         kv_dtype=kv_dtype)
    return result(np.asarray(mem.total_bytes) <= hbm)


@finite_result
def boundary_traffic_ratio(model, layers_per_stage, ep: int, scale_up_bytes_per_s, scale_out_bytes_per_s,
                           dispatch_bytes: float = 1.0, combine_bytes: float = 2.0, activation_bytes: float = 2.0,
                           experts_per_token: int | None = None):
    """In-stage all-to-all time per token / pipeline-boundary time per token.

    A token crosses a stage boundary once (``d * b_act`` bytes over the scale-out
    link) but, inside the stage, every MoE layer sends it to its ``k`` experts
    and back over the scale-up link (:func:`llmmath.network.moe_all_to_all_bytes_per_token`)::

        ratio = (layers_per_stage * k d (b_disp + b_comb) (ep-1)/ep / beta_up) / (d b_act / beta_out)
              ~ 2 k * layers_per_stage * beta_out / beta_up      (b's equal, ep large)

    Above 1, the boundary is less busy than the scale-up fabric and is not the
    bottleneck: the speaker's condition "k x layers x 2 > bandwidth ratio (~8)".
    Broadcasts over ``layers_per_stage``, the bandwidths and the byte sizes.
    ``experts_per_token`` (default: the model's ``k``) asks "what if each token
    activated this many experts" (1 .. the model's routed experts).

    Raises:
        ValueError: a dense model; ``layers_per_stage`` outside [1, n_layers] (it may be
            an average, e.g. 61/8); ``ep`` < 1; non-positive bandwidths or bytes;
            ``experts_per_token`` outside 1 .. n_experts; shapes that do not broadcast.
    """
    m = models.get(model)
    if not m.is_moe:
        raise ValueError(f"{m.key} is dense: it has no expert all-to-all")
    Ls = positive("layers_per_stage", layers_per_stage)
    if np.any(Ls < 1) or np.any(Ls > m.n_layers):
        raise ValueError(f"layers_per_stage must be between 1 and {m.key}'s {m.n_layers} layers, got "
                         f"{layers_per_stage!r}")
    e = positive_int("ep", ep)
    k = m.experts_per_token if experts_per_token is None else positive_int("experts_per_token", experts_per_token)
    if k > m.n_experts:
        raise ValueError(f"experts_per_token={k} but {m.key} has {m.n_experts} routed experts; allowed: "
                         f"1..{m.n_experts}")
    Ls, up, out, b_d, b_c, b_a = broadcast(
        layers_per_stage=Ls, scale_up_bytes_per_s=positive("scale_up_bytes_per_s", scale_up_bytes_per_s),
        scale_out_bytes_per_s=positive("scale_out_bytes_per_s", scale_out_bytes_per_s),
        dispatch_bytes=positive("dispatch_bytes", dispatch_bytes),
        combine_bytes=positive("combine_bytes", combine_bytes),
        activation_bytes=positive("activation_bytes", activation_bytes))
    inside = Ls * network.moe_all_to_all_bytes_per_token(m.d_model, k, e, b_d, b_c)
    boundary_s = m.d_model * b_a / out
    return result(inside / up / boundary_s)


def stage_layers(model, stages: int) -> list[range]:
    """The layers each of ``stages`` pipeline stages holds (:meth:`llmmath.models.Model.stage_layers`):
    consecutive, the first ``n_layers mod stages`` stages one more. The input embedding sits on
    the first stage and the final norm and LM head on the last (see :func:`stage_floors_s`).

    Raises:
        ValueError: ``stages`` not a whole number in ``1..n_layers``.
    """
    m = models.get(model)
    return m.stage_layers(positive_int("stages", stages))


def stage_deployment(model, chip, chips_per_stage: int, stages: int, weight_dtype="bf16", kv_dtype="bf16",
                     tp: int = 1):
    """The :class:`~llmmath.deployment.Deployment` of one pipelined replica, chapter 6's layout.

    ``stages`` stages of ``chips_per_stage`` chips; in each, ``tp``-way tensor-parallel attention
    groups, ``dp = chips_per_stage / tp`` of them, each serving its own sequences and holding the
    stage's non-expert weights (DP attention, the layout DeepSeek-V3 is served with), and the routed
    experts spread over all the stage's chips (``ep = dp``; each expert split ``tp`` ways).

    Raises:
        ValueError: ``tp`` not dividing ``chips_per_stage`` or the heads, ``stages`` outside
            ``1..n_layers``, a dense model with ``dp > 1``... (messages say what is allowed).
    """
    from .deployment import Deployment
    m = models.get(model)
    n, P, tp = (positive_int(k, v) for k, v in (("chips_per_stage", chips_per_stage), ("stages", stages), ("tp", tp)))
    if n % tp:
        raise ValueError(f"tp={tp} must divide chips_per_stage={n}; allowed: "
                         f"{[t for t in range(1, n + 1) if n % t == 0]}")
    dp = n // tp
    return Deployment(m, chip, n * P, tp=tp, dp=dp, ep=dp if m.is_moe else 1, pp=P, weight_dtype=weight_dtype,
                      kv_dtype=kv_dtype, usable_hbm_fraction=1.0)      # the roofline's datasheet view


@finite_result
def stage_floors_s(model, chip, chips_per_stage: int, stages: int, batch, context=0, weight_dtype="bf16",
                   kv_dtype="bf16", *, tp: int = 1):
    """Roofline floor of each pipeline stage for one micro-batch of ``batch`` sequences (seconds).

    The replica is :func:`stage_deployment`'s: in each stage of ``chips_per_stage`` chips,
    ``dp = chips_per_stage / tp`` attention groups each serve ``batch / dp`` sequences and hold
    the stage's non-expert weights, and the routed experts are spread over all the chips. Stage
    ``s`` holds its layers (:func:`stage_layers`; the first also the input embedding, the last
    the final norm and LM head). A chip of stage ``s`` reads its non-expert weights, the experts
    its rank is expected to touch and its sequences' KV, and does their FLOPs
    (:meth:`llmmath.deployment.Deployment.decode_stages`)::

        t_s = max(FLOPs_s / F,  (N_other,s / tp + n_moe,s E[busiest](b) P_e / tp + b kv_s / dp) b_w.. / W)

    With ``dp > 1`` every chip reads its own copy of the non-expert weights, so this is slower
    than the pooled :func:`llmmath.serving.decode_step`, which spreads all bytes over all chips
    (DeepSeek-V3 fp8 on 64 GB200s, b = 2048, L = 8192: 5.60 ms per GPU, pooled 3.61 ms). The
    stages are not equal: in this layout a dense layer (DeepSeek-V3's first three, replicated on
    every GPU) is heavier per GPU than an MoE layer, the LM head sits on the last stage, and 61
    layers do not divide evenly. Scalar
    ``batch`` and ``context``; returns an array of ``stages`` floats.

    Raises:
        ValueError: bad stages (see :func:`stage_layers`) or placement (:func:`stage_deployment`),
            non-positive batch, negative context.
        KeyError: unknown model, chip or dtype.
    """
    d = stage_deployment(model, chip, chips_per_stage, stages, weight_dtype, kv_dtype, tp)
    B = float(positive("batch", scalar("batch", batch)))
    L = float(non_negative("context", scalar("context", context)))
    return result(np.asarray(d.decode_stages(B * d.placement.pp, L).floor_s, dtype=float))


@dataclasses.dataclass(frozen=True)
class PipelinedDecode:
    """Steady-state decode with a forward-only pipeline (seconds; tokens per second)."""

    stage_s: float            # the slowest stage's floor for one micro-batch (it sets the pace)
    token_latency_s: float    # time between two tokens of one sequence (a micro-batch's round trip)
    tokens_per_s: float       # all stages together, micro-batches = stages
    chip_s_per_token: float
    n_chips: int
    stages_s: np.ndarray      # every stage's floor

    @property
    def sum_of_stages_s(self) -> float:
        """Sum of the stage floors: one stage's whole step (what pipelining moves, not saves)."""
        return float(np.sum(self.stages_s))

    @property
    def imbalance(self) -> float:
        """``stages * max(t_s) / sum(t_s)`` (>= 1): the chip-seconds per token relative to one stage."""
        return float(len(self.stages_s) * self.stage_s / np.sum(self.stages_s))


@finite_result
def pipelined_decode(model, chip, chips_per_stage: int, stages: int, batch, context=0, hop_latency_s=0.0,
                     weight_dtype="bf16", kv_dtype="bf16", *, tp: int = 1) -> PipelinedDecode:
    """Decode with ``stages`` pipeline stages of ``chips_per_stage`` chips each, ``stages`` micro-batches in flight.

    Stage floors ``t_s`` come from :func:`stage_floors_s` (layers split by count; embedding on
    the first stage, LM head on the last). A micro-batch visits every stage and crosses
    ``stages`` links (the last one back to the first stage; one stage crosses none); with
    ``stages`` micro-batches circulating, the slowest stage is busy ``stages * max(t_s)`` per
    round, so::

        latency  = max(sum(t_s) + hops * hop,  stages * max(t_s)),  hops = stages if stages > 1 else 0
        tokens/s = stages * batch / latency

    With ``stages = 1`` this is the placed one-stage step (:func:`stage_floors_s` of one stage),
    whatever the hop. With equal stages
    and no hop the latency and the chip-seconds per token equal the unpipelined ones; any
    imbalance (``stages * max(t_s) > sum(t_s)``) makes them worse, never better. Scalar
    ``batch``, ``context`` and ``hop_latency_s``. Capacity is not checked here (see :func:`memory_per_gpu`).
    """
    P = positive_int("stages", stages)
    n = positive_int("chips_per_stage", chips_per_stage)
    B, L, hop = broadcast(batch=positive("batch", batch), context=non_negative("context", context),
                          hop_latency_s=non_negative("hop_latency_s", hop_latency_s))
    if np.ndim(B):
        raise ValueError(f"pipelined_decode takes a scalar batch, context and hop_latency_s, got shape {np.shape(B)}; "
                         "allowed: one configuration per call")
    hop = float(hop)
    t = stage_floors_s(model, chip, n, P, B, L, weight_dtype=weight_dtype, kv_dtype=kv_dtype, tp=tp)
    hops = P if P > 1 else 0  # a single stage sends nothing to another
    latency = max(float(t.sum()) + hops * hop, P * float(t.max()))
    tps = P * float(B) / latency
    return PipelinedDecode(float(t.max()), latency, tps, n * P / tps, n * P, t)


@finite_result
def moe_layer_all_to_all_s(model, system, ep: int, batch_per_rack, racks: int = 1, dispatch_bytes=1.0,
                           combine_bytes=2.0, latency_s=None, achieved_fraction=None):
    """Dispatch + combine time of one MoE layer, ``batch_per_rack`` sequences on each rack's ``ep`` GPUs.

    Each GPU sends its ``batch_per_rack / ep`` tokens' traffic
    (:func:`llmmath.network.moe_all_to_all_bytes_per_token`), so the load per GPU
    is the same however many racks the layer spans; spanning ``racks`` equal
    racks, a fraction ``f = 1 - 1/racks`` of it leaves the rack over the scale-out
    NICs (:func:`llmmath.network.all_to_all_time_s`). Each of the two collectives
    issues all its messages at once (DeepEP's kernels, NCCL's grouped sends), so it
    pays one per-message latency, not one per peer, and both links run at the
    share of their bandwidth such kernels achieve::

        t = 2 alpha + max((1 - f) s / (eta beta_up), f s / (eta beta_out))

    ``latency_s`` (alpha, seconds; default: DeepSeek's measured 64-byte latency,
    ``[latency]`` in ``data/deployments.toml``: NVLink inside a node, 3.33 us, while
    the layer stays in one domain; InfiniBand across leaf switches, 3.7 us, once it
    spans racks; both marked unverified there). ``achieved_fraction`` (eta; default
    ``[collectives] all_to_all_fraction`` of ``data/engine_constants.toml``, 0.82:
    DeepEP's EP256 combine, 40.8 of a NIC's 50 GB/s; the serving step model uses
    the same constant). Pass ``latency_s=0, achieved_fraction=1`` for the
    bandwidth-only floor.

    ``ep = 1`` on one rack is one GPU holding every expert: no token leaves it, no
    message is sent, and the time is exactly 0 (not even the per-message latency:
    an all-to-all over one rank is a no-op). Broadcasts over ``batch_per_rack``
    and the byte sizes.

    Raises:
        ValueError: ``ep`` or ``racks`` not whole numbers >= 1, ``batch_per_rack``
            negative or NaN, non-positive byte sizes, shapes that do not broadcast.
        KeyError: unknown model or system.
    """
    m, s_ = models.get(model), hardware.system(system)
    if not m.is_moe:
        raise ValueError(f"{m.key} is dense: it has no expert all-to-all")
    ep = positive_int("ep", ep)
    racks = positive_int("racks", racks)
    batch, b_d, b_c = broadcast(batch_per_rack=non_negative("batch_per_rack", batch_per_rack),
                                dispatch_bytes=positive("dispatch_bytes", dispatch_bytes),
                                combine_bytes=positive("combine_bytes", combine_bytes))
    if racks > 1 and not s_.scale_out_bytes_per_s_per_package > 0:
        raise ValueError(f"racks={racks} needs the scale-out bandwidth between racks, but {s_.key} publishes none; "
                         f"allowed: racks=1 for this system")
    n = ep * racks
    if n > MAX_INT:
        raise ValueError(f"ep * racks = {ep} * {racks} GPUs is more than 2**53; allowed: ep and racks whose "
                         f"product is at most {MAX_INT}")
    if n == 1:  # one GPU, every expert local: nothing to send
        return result(np.zeros(batch.shape))
    per_gpu = batch / ep * network.moe_all_to_all_bytes_per_token(
        m.d_model, m.experts_per_token, n, b_d, b_c)
    buffer = per_gpu * n / (n - 1)  # all_to_all_time_s takes the whole send buffer, 1/n of which stays local
    check_finite("moe_layer_all_to_all_s (bytes each GPU sends)", buffer, batch_per_rack=batch,
                 dispatch_bytes=b_d, combine_bytes=b_c)
    f = 1.0 - 1.0 / racks
    if latency_s is None:
        lat = hop_latencies()
        latency_s = lat["deepseek-ib-cross-leaf-64B" if racks > 1 else "deepseek-nvlink-intra-node-64B"]["seconds"]
    alpha = non_negative("latency_s", latency_s)
    eta = (_catalog.load("engine_constants.toml")["collectives"]["all_to_all_fraction"] if achieved_fraction is None
           else in_range("achieved_fraction", achieved_fraction, 0.0, 1.0))
    if not eta > 0:
        raise ValueError(f"achieved_fraction must be > 0 (a share of the link's bandwidth), got {eta}")
    wire = network.all_to_all_time_s(buffer, n, eta * s_.scale_up_bytes_per_s_per_package,
                                     fraction_out_of_domain=f,
                                     scale_out_bytes_per_s=eta * s_.scale_out_bytes_per_s_per_package if f else None)
    # two collectives (dispatch, combine), one latency each; no tokens, no collective
    return result(np.where(batch > 0, 2 * alpha + wire, 0.0))


@dataclasses.dataclass(frozen=True)
class DomainGrowth:
    """One scale-up domain against a baseline domain: each field is ``system / baseline`` (dimensionless)."""

    packages: float                 # GPU packages (what must be cabled)
    dies: float                     # compute dies
    marketing_count: float          # the number in the product name
    per_gpu_hbm_bytes_per_s: float  # one package's HBM bandwidth
    domain_hbm_bytes_per_s: float   # the whole domain's HBM bandwidth (= packages x per GPU)
    domain_hbm_bytes: float         # the whole domain's HBM capacity


def domain_growth(system, baseline="hgx-h100") -> DomainGrowth:
    """How much bigger ``system``'s scale-up domain is than ``baseline``'s, counted several ways.

    Packages, dies and the product name's count (``systems.toml``) give three
    answers to "how many GPUs"; the domain's HBM bandwidth is packages x per-GPU
    bandwidth, so its growth is the product of the package growth and the
    per-GPU growth (claims 18 and 27).

    Raises:
        KeyError: unknown system.
        ValueError: a system or baseline that publishes no HBM bandwidth or capacity.
    """
    s, b = hardware.system(system), hardware.system(baseline)
    for sy in (s, b):
        if not (np.isfinite(sy.hbm_bytes_per_s_per_package) and np.isfinite(sy.hbm_bytes_per_package)):
            raise ValueError(f"{sy.key} publishes no HBM bandwidth or capacity per package; allowed: systems "
                             f"whose systems.toml entry has both")
    return DomainGrowth(s.packages / b.packages, s.dies / b.dies, s.marketing_count / b.marketing_count,
                        s.hbm_bytes_per_s_per_package / b.hbm_bytes_per_s_per_package,
                        s.hbm_bytes_per_s / b.hbm_bytes_per_s, s.hbm_bytes / b.hbm_bytes)


@dataclasses.dataclass(frozen=True)
class DomainLimits:
    """The largest model one scale-up domain can serve at a step-time target (parameter counts)."""

    capacity_total_params: float | np.ndarray  # weights fit beside the reserved KV in the domain's HBM
    read_total_params: float | np.ndarray      # weights read once per step at the domain's HBM bandwidth
    compute_active_params: float | np.ndarray  # 2 B N_act FLOPs per step at the domain's bf16 FLOP/s


@finite_result
def domain_parameter_limits(system, step_time_s, batch, weight_dtype: str = "fp8",
                            kv_reserved_bytes=0.0) -> DomainLimits:
    """Total and active parameters one domain can serve with a step of at most ``step_time_s`` (claim 19).

    With ``W``, ``C`` and ``F`` the domain's summed HBM bandwidth, HBM capacity and
    dense bf16 FLOP/s (``systems.toml``: packages x per-package figure)::

        total  <= (C - kv_reserved_bytes) / b_w     (capacity; lifted by pipelining over domains)
        total  <= step_time_s * W / b_w             (every weight read once per step; pipelining cannot lift it)
        active <= step_time_s * F / (2 B)           (2 FLOPs per active parameter per token, B tokens per step)

    The compute bound uses the catalog's bf16 rate (fp8 roughly doubles it on
    Hopper and Blackwell). Broadcasts over ``step_time_s``, ``batch`` and
    ``kv_reserved_bytes``.

    Raises:
        KeyError: unknown system or dtype.
        ValueError: non-positive step time or batch, negative reserve, a reserve larger
            than the domain's HBM, or a system that publishes no HBM or bf16 FLOP/s figure.
    """
    s = hardware.system(system)
    if not (np.isfinite(s.bf16_flops_per_s_per_package) and np.isfinite(s.hbm_bytes_per_s_per_package)
            and np.isfinite(s.hbm_bytes_per_package)):
        raise ValueError(f"{s.key} publishes no bf16 FLOP/s, HBM bandwidth or HBM capacity per package; allowed: "
                         f"systems with all three")
    t, B, kv = broadcast(step_time_s=positive("step_time_s", step_time_s), batch=positive("batch", batch),
                         kv_reserved_bytes=non_negative("kv_reserved_bytes", kv_reserved_bytes))
    if np.any(kv >= s.hbm_bytes):
        raise ValueError(f"kv_reserved_bytes reaches {s.key}'s whole HBM ({s.hbm_bytes:.3g} bytes); allowed: less")
    b_w = dtype_bytes(weight_dtype)
    return DomainLimits(result((s.hbm_bytes - kv) / b_w), result(t * s.hbm_bytes_per_s / b_w),
                        result(t * s.packages * s.bf16_flops_per_s_per_package / (2.0 * B)))


@finite_result
def domain_hbm_fill(model_keys, system, batch, context, weight_dtype: str = "fp8", kv_dtype: str = "bf16"):
    """Weights + KV of each model over one domain's HBM: above 1 it does not fit (array, one per model).

    ``(N_tot b_w + B L beta) / C_domain`` for ``batch`` sequences of ``context`` tokens,
    everything spread evenly over the domain's packages (no pipelining).

    Raises:
        KeyError: an unknown model, system or dtype.
        ValueError: negative batch or context, non-scalar batch or context.
    """
    s = hardware.system(system)
    B = float(non_negative("batch", scalar("batch", batch)))
    L = float(non_negative("context", scalar("context", context)))
    ms = [models.get(k) for k in model_keys]
    need = np.array([m.weight_bytes(weight_dtype) + B * m.kv_bytes_per_sequence(L, kv_dtype) for m in ms], dtype=float)
    return result(np.atleast_1d(need / s.hbm_bytes))


@dataclasses.dataclass(frozen=True)
class StageMemory:
    """Per-GPU memory for a sweep of pipeline depths (arrays, one entry per depth)."""

    stages: np.ndarray
    weight_bytes: np.ndarray
    kv_bytes: np.ndarray
    fill: np.ndarray          # (weights + KV) / HBM per GPU; above 1 the placement does not fit
    fits: np.ndarray          # fill <= 1
    gpus_per_stage: int       # ep * tp
    n_gpus: np.ndarray        # stages * ep * tp

    @property
    def total_bytes(self) -> np.ndarray:
        return self.weight_bytes + self.kv_bytes


def memory_over_stages(model, stages, hbm_bytes_per_gpu, ep: int = 1, tp: int = 1, batch=1, context=0,
                       weight_dtype: str = "bf16", kv_dtype: str = "bf16") -> StageMemory:
    """:func:`memory_per_gpu` for every pipeline depth in ``stages``, with whether it fits ``hbm_bytes_per_gpu``.

    ``batch`` is the micro-batch; ``stages`` micro-batches are in flight at each depth,
    so the KV per GPU stays the same while the weights fall roughly like ``1/stages`` (claims 22,
    25): the busiest stage's, which holds the embedding or the head besides its layers, and more
    layers where they do not divide evenly (DeepSeek-V3 at EP64 in 8 stages: 1.38x an even share).
    Scalar ``batch`` and ``context``.

    Raises:
        ValueError: an impossible placement (:func:`check_placement`) at any depth, a
            non-positive HBM size, a bad batch or context.
    """
    P = np.atleast_1d(whole("stages", stages, 1)).astype(int)
    hbm = float(positive("hbm_bytes_per_gpu", scalar("hbm_bytes_per_gpu", hbm_bytes_per_gpu)))
    B = float(positive("batch", scalar("batch", batch)))
    L = float(non_negative("context", scalar("context", context)))
    mem = [memory_per_gpu(model, ep=ep, pp=int(p), tp=tp, batch=B, context=L, weight_dtype=weight_dtype,
                          kv_dtype=kv_dtype) for p in P]
    w = np.array([float(x.weight_bytes) for x in mem])
    kv = np.array([float(x.kv_bytes) for x in mem])
    fill = (w + kv) / hbm
    return StageMemory(P, w, kv, fill, fill <= 1.0, int(ep) * int(tp), np.array([x.n_gpus for x in mem]))
