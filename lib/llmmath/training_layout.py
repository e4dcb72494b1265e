"""A training step split over many GPUs: per-GPU bytes by kind, step time by part, and a layout search.

A layout is five degrees whose product is the GPU count, nested from the innermost
(ranks next to each other) outward as in Llama 3's ``[TP, CP, PP, DP]`` (Llama Team,
"The Llama 3 Herd of Models", arXiv:2407.21783, section 3.3.2):

* ``tp``: tensor parallelism (Megatron-LM, Shoeybi et al. 2019) with sequence
  parallelism (Korthikanti et al. 2022): every matrix split over ``tp`` GPUs;
* ``cp``: context parallelism: each GPU holds ``seq_len / cp`` tokens of every sequence and
  the keys and values of the others go round the ring (ring attention, Liu et al. 2023;
  Llama 3 all-gathers them: the same bytes);
* ``pp``: pipeline stages of ``n_layers / pp`` layers (schedules:
  :func:`llmmath.parallelism.pipeline_bubble_fraction`);
* ``dp``: data-parallel replicas, with ZeRO sharding of the model state over ``dp x cp``;
* ``ep``: expert parallelism for MoE layers, carved out of the ``tp x cp x dp`` GPUs of a
  stage (Megatron-LM's expert-data-parallel layout): a stage's routed experts ``/ ep``, their
  data-parallel degree ``tp cp dp / ep``.

A group of ``k`` ranks whose stride (the product of the degrees inside it) times ``k``
fits in one scale-up domain talks over the scale-up link, otherwise over the NIC. Every
collective's time is :mod:`llmmath.network`'s ring formula with the link's per-direction
bandwidth: those formulas are in terms of the *algorithm* bandwidth ``n / t``; NCCL's
reported *bus* bandwidth multiplies it by ``2(p-1)/p`` for all-reduce and ``(p-1)/p`` for
all-gather and reduce-scatter so that it can be compared with the link's speed
(NCCL's ``PERFORMANCE.md``). A bus bandwidth equal to the link's is what these times assume.

Step time = compute (hardware FLOPs at ``compute_efficiency`` x peak) + pipeline bubble +
exposed communication: the data-parallel gradient sync overlaps the backward pass (2/3 of
the compute), ring attention's transfers overlap the attention compute, and tensor-,
pipeline- and expert-parallel transfers are on the critical path. With
``compute_efficiency = 1`` the time is a floor and the MFU a ceiling.

Memory is that of the busiest GPU: each stage holds its own layers, the first also the
embedding, the last the final norm and LM head (:meth:`llmmath.models.Model.stage_params`),
with its activations under the schedule; the largest total is reported.

Approximations, stated: an MoE layer's
activations are those of a gated MLP of width ``(k + shared) d_ff_expert``; MLA attention is
counted as multi-head attention of width ``n_heads (d_nope + d_rope)``; logits and temporary
buffers are left out.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re

import numpy as np

from . import hardware, memory, models, network, parallelism, training
from ._validate import flag, positive, positive_int, scalar
from .units import dtype_bytes

__all__ = ["TrainingStep", "training_step", "search_layouts", "Layouts", "LLAMA3_405B_LAYOUTS", "predict",
           "TrainingPrediction", "attention_share", "kernel_launches", "linear_gemms", "linear_share",
           "training_constants", "MEGATRON_RANK_ORDER", "LLAMA3_RANK_ORDER", "group_links", "PRECISIONS",
           "measurements", "predicted_vs_measured", "SPLITS", "comm_bound_points", "GRAD_DTYPES", "EP_DISPATCH",
           "ATTENTION_KERNELS"]

#: Llama 3 405B's published pre-training layouts (Llama Team 2024, arXiv:2407.21783, Table 4):
#: GPUs, TP, CP, PP, DP, sequence length, sequences per DP rank per step, TFLOP/s per GPU, BF16 MFU.
LLAMA3_405B_LAYOUTS = (
    dict(gpus=8192, tp=8, cp=1, pp=16, dp=64, seq_len=8192, batch_per_dp=32, tflops_per_gpu=430, mfu=0.43),
    dict(gpus=16384, tp=8, cp=1, pp=16, dp=128, seq_len=8192, batch_per_dp=16, tflops_per_gpu=400, mfu=0.41),
    dict(gpus=16384, tp=8, cp=16, pp=16, dp=8, seq_len=131072, batch_per_dp=16, tflops_per_gpu=380, mfu=0.38),
)


@dataclasses.dataclass(frozen=True)
class TrainingStep:
    """One training step under a layout: bytes on the busiest GPU (usually the first stage's) and seconds by part."""

    layout: dict                  # tp, cp, pp, dp, ep, micro_batch, microbatches, schedule, chunks, zero_stage, recompute
    memory_bytes: dict            # weights, gradients, master_weights, optimizer, activations (per GPU)
    hbm_bytes: float
    compute_s: float              # hardware FLOPs / (GPUs x efficiency x peak)
    bubble_s: float               # pipeline fill and drain
    comm_s: dict                  # dp, tp, cp, pp, ep: transfer time per step, per GPU
    exposed_comm_s: dict          # the part of each not hidden behind compute
    comm_bytes: dict              # bytes each GPU sends per step, by kind
    model_flops: float            # 6 N D + attention (MFU's numerator)
    hardware_flops: float         # with recomputation
    n_gpus: int
    peak_flops_per_s: float
    stage: int = 0                # the pipeline stage whose GPU holds memory_bytes (0 = first)
    links_bytes_per_s: dict = dataclasses.field(default_factory=dict)   # each group's link, per GPU a direction
    stage_memory_bytes: tuple = ()  # every stage's GPU's bytes by kind, first stage first

    @property
    def total_bytes(self) -> float:
        return float(sum(self.memory_bytes.values()))

    @property
    def fits(self) -> bool:
        return self.total_bytes <= self.hbm_bytes

    def fit_warning(self) -> str:
        """``""`` when the busiest GPU's bytes fit in HBM; otherwise a one-line warning with the numbers.

        For printing beside a layout, so that one that cannot run is never shown as if it ran:
        ``"WARNING: does not fit: 106.9 GB on a GPU of stage 0 > 80.0 GB of HBM (26.9 GB over)"``.
        """
        if self.fits:
            return ""
        over = self.total_bytes - self.hbm_bytes
        return (f"WARNING: does not fit: {self.total_bytes / 1e9:.1f} GB on a GPU of stage {self.stage} > "
                f"{self.hbm_bytes / 1e9:.1f} GB of HBM ({over / 1e9:.1f} GB over)")

    @property
    def step_time_s(self) -> float:
        return self.compute_s + self.bubble_s + float(sum(self.exposed_comm_s.values()))

    @property
    def mfu(self) -> float:
        """Model FLOPs utilization: model FLOPs / (step time x GPUs x peak)."""
        return float(training.mfu(self.model_flops, self.step_time_s, self.n_gpus, self.peak_flops_per_s))

    @property
    def hfu(self) -> float:
        """Hardware FLOPs utilization: the same with the recomputed FLOPs counted (>= MFU)."""
        return float(training.mfu(self.hardware_flops, self.step_time_s, self.n_gpus, self.peak_flops_per_s))

    def describe(self) -> str:
        """The layout as one label, e.g. ``TP8 CP1 PP16 DP128 mb1 x16 1f1b ZeRO-2 selective``.

        Read left to right: the degrees (``TP8`` is TP = 8; GPUs = TP x CP x PP x DP; ``EP64`` is
        added for expert parallelism); ``mb1 x16``: micro-batches of ``micro_batch`` = 1 sequence,
        16 of them (``microbatches`` = global_batch / (DP x micro_batch)) through each pipeline per
        step; the pipeline schedule (with ``(v=2)`` chunks per GPU when interleaved); the ZeRO
        stage; the recomputation (none, selective, full).
        """
        return _layout_label(self.layout)


def _layout_label(L: dict) -> str:
    """:meth:`TrainingStep.describe`'s label of a layout dict (a step's or a prediction's)."""
    return (f"TP{L['tp']} CP{L['cp']} PP{L['pp']} DP{L['dp']}" + (f" EP{L['ep']}" if L['ep'] > 1 else "")
            + f" mb{L['micro_batch']} x{L['microbatches']} {L['schedule']}"
            + (f"(v={L['chunks']})" if L['chunks'] > 1 else "") + f" ZeRO-{L['zero_stage']} {L['recompute']}")


def _group_link(chip, stride: int, size: int, ring: bool = False) -> float:
    """Per-direction bytes/s of a group of ``size`` ranks spaced ``stride`` apart: scale-up if it fits one domain.

    A group that spans domains sends over the scale-out NIC. For a ring collective (``ring``: all-reduce,
    reduce-scatter, all-gather) each of the group's ``g`` members inside one domain has its own NIC, and NCCL runs
    one ring (channel) per NIC, each carrying ``1/g`` of the data across the domain boundary and the rest over the
    scale-up link: the collective then moves at ``min(scale-up, g x NIC)`` a GPU (eight 400 Gb/s NICs of an H100
    node: 400 GB/s, the bus bandwidth nccl-tests reach across nodes). Point-to-point sends and all-to-alls keep one
    NIC a GPU."""
    if size <= 1:
        return chip.scale_up_bytes_per_s or chip.scale_out_bytes_per_s or 1.0
    inside = stride * size <= chip.scale_up_domain
    bw = chip.scale_up_bytes_per_s if inside else chip.scale_out_bytes_per_s
    if not bw > 0:
        raise ValueError(f"{chip.key} publishes no {'scale-up' if inside else 'scale-out'} bandwidth, needed for a "
                         f"group of {size} GPUs at stride {stride}; allowed: a chip with both link figures")
    if ring and not inside and chip.scale_up_bytes_per_s and stride < chip.scale_up_domain:
        g = min(size, chip.scale_up_domain // stride)              # the group's members in one domain, a NIC each
        return float(min(chip.scale_up_bytes_per_s, g * bw))
    return float(bw)


#: the Llama 3 report's order of the parallel groups, innermost first (Llama Team 2024, section 3.3.2: [TP, CP, PP,
#: DP]), with the expert group innermost in DP: :func:`training_step`'s default
LLAMA3_RANK_ORDER = "tp-cp-pp-ep-dp"
#: Megatron-Core's default order of the parallel groups, innermost first (its ``order`` argument, "tp-cp-ep-dp-pp")
MEGATRON_RANK_ORDER = "tp-cp-ep-dp-pp"


def group_links(chip, rank_order: str, *, tp: int = 1, cp: int = 1, pp: int = 1, dp: int = 1, ep: int = 1) -> dict:
    """Each parallel group's link in bytes/s per GPU a direction, and how many scale-up domains the expert group
    spans, when ``rank_order`` nests the groups over the GPUs, innermost first (e.g. ``"tp-cp-ep-dp-pp"``).

    Megatron-Core numbers the ranks twice, over the same order. The dense layers (its decoder ``RankGenerator``)
    leave ``ep`` out: each group's stride is the product of the degrees inside it, and a group of several axes (the
    data-parallel group, ``cp`` and ``dp``) spans from its innermost axis to its outermost, axes of degree 1 left out.
    The expert layers (its expert ``RankGenerator``) leave ``cp`` out and put expert tensor parallelism in place of
    ``tp``: with the experts unsplit (expert tensor parallelism 1, as NVIDIA's MoE recipes set it) the expert group
    is ``ep`` consecutive GPUs in Megatron-Core's order (the pipeline stages inside it stride it otherwise), and the
    expert data-parallel group, ``tp cp dp / ep`` replicas, strides past it. Returns ``{"tp", "cp", "pp", "dp", "ep",
    "expert_dp": bytes/s, "ep_domains": the scale-up domains the expert group spans}``, each link from
    :func:`_group_link` (rings: TP and both data-parallel groups; point-to-point or all-to-all: CP, PP, EP).

    Raises ``ValueError`` for an order that does not name tp, cp, ep, dp and pp once each or a degree below 1,
    ``KeyError`` for an unknown chip."""
    names = rank_order.split("-") if isinstance(rank_order, str) else []
    if sorted(names) != sorted(["tp", "cp", "ep", "dp", "pp"]):
        raise ValueError(f"rank_order must name tp, cp, ep, dp and pp once each, innermost first (Megatron-Core's "
                         f"default {MEGATRON_RANK_ORDER!r}), got {rank_order!r}")
    chip = hardware.get(chip)
    tp, cp, pp, dp, ep = (positive_int(k, v) for k, v in dict(tp=tp, cp=cp, pp=pp, dp=dp, ep=ep).items())

    def group(order, deg, axes, ring=False):
        present = [a for a in order if a in axes and deg[a] > 1]
        if not present:
            return _group_link(chip, 1, 1)
        i, j = order.index(present[0]), order.index(present[-1])
        return _group_link(chip, math.prod(deg[a] for a in order[:i]), math.prod(deg[a] for a in order[i:j + 1]),
                           ring=ring)
    # the dense layers' ranks (Megatron-Core's decoder RankGenerator: ep = 1, the data-parallel replicas whole)
    dense, dd = [a for a in names if a != "ep"], dict(tp=tp, cp=cp, dp=dp, pp=pp)
    out = dict(tp=group(dense, dd, {"tp"}, ring=True), cp=group(dense, dd, {"cp"}), pp=group(dense, dd, {"pp"}),
               dp=group(dense, dd, {"cp", "dp"}, ring=True))
    # the expert layers' ranks (its expert RankGenerator: expert tensor parallelism 1 here, cp = 1, and the expert
    # data-parallel replicas tp cp dp / ep), in the same order
    expert, ed = [a for a in names if a != "cp"], dict(tp=1, ep=ep, dp=max(1, tp * cp * dp // ep), pp=pp)
    out["ep"] = group(expert, ed, {"ep"}) if ep > 1 else out["dp"]
    out["expert_dp"] = group(expert, ed, {"dp"}, ring=True)
    ep_stride = math.prod(ed[a] for a in expert[:expert.index("ep")])
    domain = chip.scale_up_domain or 1
    out["ep_domains"] = min(ep, math.ceil(ep_stride * ep / domain)) if ep > 1 else 1
    return out


def _layer_activation_bytes(m, seq_local, micro_batch, tp, sp, recompute, moe_layer: bool, dropout: bool):
    if m.is_mla:
        a_kv, hd = m.n_heads, m.qk_nope_head_dim + m.qk_rope_head_dim
    else:
        a_kv, hd = m.n_kv_heads, m.head_dim
    d_ff = (m.experts_per_token + m.n_shared_experts) * m.d_ff_expert if moe_layer else m.d_ff
    return float(memory.activation_bytes_per_layer(seq_local, micro_batch, m.d_model, m.n_heads, tp, sp, recompute,
                                                   n_kv_heads=a_kv, head_dim=hd, d_ff=d_ff, gated=m.gated_mlp,
                                                   dropout=dropout))


def _gpu_stages(m, pp: int, schedule: str):
    """What each of the ``pp`` pipeline GPUs holds: ``(layers, moe_layers, other_params)``, per GPU its layer
    indices, MoE layers and other parameters (``Model.stage_layers`` and ``stage_params``). Under ``zb-v`` the
    model is cut into ``2 pp`` chunks and GPU ``s`` holds chunks ``s`` and ``2 pp - 1 - s`` (a V): the first GPU
    holds the embedding and the head."""
    if schedule != "zb-v":
        return m.stage_layers(pp), *m.stage_params(pp)
    split, (moe, other) = m.stage_layers(2 * pp), m.stage_params(2 * pp)
    pair = [(s, 2 * pp - 1 - s) for s in range(pp)]
    other = np.array([other[a] + other[b] for a, b in pair])
    if not m.lm_head_params:      # a tied table: the embedding and the head on one GPU share it (no second copy)
        other[0] -= m.vocab * m.d_model
    return [list(split[a]) + list(split[b]) for a, b in pair], np.array([moe[a] + moe[b] for a, b in pair]), other


def _send_chunks(schedule: str, pp: int, chunks: int) -> int:
    """How many model chunks' activations (and gradients) a middle GPU sends a micro-batch: ``chunks`` when
    interleaved, two under ZB-V from three stages on (at two the V's turns stay on one GPU), else one."""
    return 2 if schedule == "zb-v" and pp > 2 else chunks


def _stage_memories(m, *, tp, cp, dp, ep, pp, mb, s_loc, b, sp, recompute, dropout, schedule, chunks, kw) -> list:
    """Bytes on one GPU of each pipeline stage, by kind: its model state (its layers; the embedding on the
    first stage, the head on the last: ``Model.stage_params``; both on the first under ZB-V) and its activations
    under the schedule. Stages that hold the same layers share one computation of their state (most do)."""
    split, moe_s, other_s = _gpu_stages(m, pp, schedule)
    # a model whose every layer is MoE (Mixtral, Qwen3-MoE, gpt-oss) has no dense MLP to size (d_ff = 0)
    dense_act = (_layer_activation_bytes(m, s_loc, b, tp, sp, recompute, False, dropout)
                 if m.n_moe_layers < m.n_layers else 0.0)
    moe_act = _layer_activation_bytes(m, s_loc, b, tp, sp, recompute, True, dropout) if m.is_moe else 0.0
    per_mb = np.array([(len(layers) - k) * dense_act + k * moe_act for layers, k in zip(split, moe_s)])
    if schedule == "zb-v":          # two chunks a GPU, not always of one size: walk the schedule chunk by chunk
        moe_c = m.stage_params(2 * pp)[0]
        chunk = [(len(layers) - k) * dense_act + k * moe_act for layers, k in zip(m.stage_layers(2 * pp), moe_c)]
        acts = parallelism.zbv_peak_in_flight(pp, mb, chunk)
    else:
        acts = memory.pipeline_activation_bytes(per_mb, 1, pp, mb, schedule=schedule, chunks=chunks,
                                                stage=np.arange(pp))
    states: dict = {}
    out = []
    for stage, (moe_layers, other) in enumerate(zip(moe_s, other_s)):
        key = (int(moe_layers), int(other))
        if key not in states:
            state = memory.model_state_parts(other / tp, dp=dp * cp, **kw)
            if moe_layers:
                e_state = memory.model_state_parts(moe_layers * m.n_experts * m.expert_params / ep,
                                                   dp=tp * cp * dp // ep, **kw)
                state = {k: state[k] + e_state[k] for k in state}
            states[key] = {k: float(v) for k, v in state.items()}
        out.append({**states[key], "activations": float(np.atleast_1d(acts)[stage])})
    return out


def training_step(model, chip, *, global_batch: int, seq_len: int, tp: int = 1, cp: int = 1, pp: int = 1,
                  dp: int = 1, ep: int = 1, micro_batch: int = 1, zero_stage: int = 1, recompute: str = "selective",
                  schedule: str = "1f1b", chunks: int = 1, sequence_parallel: bool = True,
                  weight_dtype: str = "bf16", grad_dtype: str = "fp32", compute_dtype: str = "bf16",
                  compute_efficiency: float = 1.0, dropout: bool = False,
                  rank_order: str | None = None) -> TrainingStep:
    """Per-GPU memory by kind and step time by part of one training step of ``global_batch`` sequences.

    Args:
        model, chip: catalog names (or objects).
        global_batch: sequences per step (all data-parallel replicas together).
        seq_len: tokens per sequence.
        tp, cp, pp, dp, ep: the degrees (module docstring); GPUs = ``tp cp pp dp``.
        micro_batch: sequences per micro-batch per replica; ``global_batch / (dp micro_batch)``
            micro-batches go through the pipeline each step.
        zero_stage: 0-3, over the ``dp x cp`` replicas (:func:`llmmath.memory.model_state_parts`).
        recompute: none, selective, full (activations: :func:`llmmath.memory.activation_bytes_per_layer`;
            FLOPs: :func:`llmmath.training.train_flops`).
        schedule, chunks: pipeline schedule (:func:`llmmath.parallelism.pipeline_bubble_fraction`); ``zb-v`` cuts
            the model into ``2 pp`` chunks, two a GPU in a V (the first GPU holds the embedding and the head, and
            computes the loss), and its middle GPUs send each micro-batch's activations and gradients twice (at
            ``pp`` = 2 the V's turns are on one GPU and it sends as 1F1B does).
        compute_efficiency: fraction of the dense peak the matmuls reach (1 = the floor).
        dropout: the model trains with dropout (modern LLMs: no).
        rank_order: how the groups nest over the GPUs, innermost first (default :data:`LLAMA3_RANK_ORDER`,
            ``"tp-cp-pp-ep-dp"``: the Llama 3 report's [TP, CP, PP, DP] with the expert group innermost in DP;
            Megatron-Core's default is :data:`MEGATRON_RANK_ORDER`). Each group rides the link its span gives it
            (:func:`group_links`): NVLink while it fits one scale-up domain.

    Returns:
        :class:`TrainingStep` (memory of the busiest stage's GPU: usually the first, which holds the
        most activations and the embedding).

    Raises:
        ValueError: a degree < 1; ``tp`` not dividing the heads (or KV heads); ``pp`` > layers;
            ``cp`` not dividing ``seq_len``; ``global_batch`` not divisible by ``dp x micro_batch``;
            ``ep`` > 1 on a dense model, not dividing the experts or not dividing ``tp cp dp``; ``zb-v`` with
            ``2 pp`` above the layers;
            ``compute_efficiency`` outside (0, 1]; bad dtypes or schedules.
        KeyError: unknown model, chip or dtype.
    """
    m, c = models.get(model), hardware.get(chip)
    tp, cp, pp, dp, ep = (positive_int(k, v) for k, v in dict(tp=tp, cp=cp, pp=pp, dp=dp, ep=ep).items())
    B, S, b = positive_int("global_batch", global_batch), positive_int("seq_len", seq_len), \
        positive_int("micro_batch", micro_batch)
    eff = float(scalar("compute_efficiency", compute_efficiency))
    _check_layout(m, B, S, b, tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, eff=eff)
    if schedule == "zb-v" and 2 * pp > m.n_layers:
        raise ValueError(f"schedule='zb-v' cuts the model into 2 x pp = {2 * pp} chunks, two a GPU, and {m.key} has "
                         f"{m.n_layers} layers: allowed pp <= {m.n_layers // 2}")
    mb = B // (dp * b)                                       # micro-batches per step through one pipeline
    n = tp * cp * pp * dp
    sp = bool(sequence_parallel) and tp > 1
    s_loc = S // cp

    # ---- memory of the busiest GPU: each stage's model state (its layers; the embedding on the first, the head
    # on the last: Model.stage_params) and activations (1F1B: the first stage holds the most micro-batches)
    kw = dict(zero_stage=zero_stage, weight_dtype=weight_dtype, grad_dtype=grad_dtype,
              master_weights=dtype_bytes(weight_dtype) < 4)
    per_stage = _stage_memories(m, tp=tp, cp=cp, dp=dp, ep=ep, pp=pp, mb=mb, s_loc=s_loc, b=b, sp=sp,
                                recompute=recompute, dropout=dropout, schedule=schedule, chunks=chunks, kw=kw)
    if schedule == "dualpipe":     # each GPU holds two stages' copies of the parameters and their gradients (DeepSeek-V3
        for st in per_stage:        # report, Table 2: parameters 2x); the optimizer state updates one copy
            st["weights"], st["gradients"] = 2 * st["weights"], 2 * st["gradients"]
    busiest = max(range(pp), key=lambda s: sum(per_stage[s].values()))
    mem = per_stage[busiest]

    # ---- compute -------------------------------------------------------------------------------------------
    peak = c.flops_per_s(compute_dtype)
    tokens = B * S
    n_mm = m.matmul_params_per_token
    model_flops = float(training.train_flops(n_mm, tokens, S, m, recompute="none"))
    hw_flops = float(training.train_flops(n_mm, tokens, S, m, recompute=recompute))
    compute_s = hw_flops / (n * eff * peak)
    attn_s = (hw_flops - float(training.train_flops(n_mm, tokens, recompute=recompute))) / (n * eff * peak)
    bub = float(parallelism.pipeline_bubble_fraction(pp, mb, schedule, chunks))
    bubble_s = compute_s * bub / (1.0 - bub)

    # ---- communication (bytes each GPU sends per step, and time) ------------------------------------------
    order = LLAMA3_RANK_ORDER if rank_order is None else rank_order
    links = group_links(c, order, tp=tp, cp=cp, pp=pp, dp=dp, ep=ep)
    ep_domains = links.pop("ep_domains")
    g = _Groups(m, links, tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, mb=mb, b=b, s_loc=s_loc, sp=sp,
                b_w=dtype_bytes(weight_dtype), b_g=dtype_bytes(grad_dtype), zero_stage=zero_stage, schedule=schedule)
    comm_s, comm_bytes = {}, {}
    for name, part in (("dp", g.dp_sync), ("tp", lambda: g.tp_collectives(recompute)), ("cp", g.cp_gathers),
                       ("pp", lambda: g.pp_sends(_send_chunks(schedule, pp, chunks))),
                       ("ep", g.ep_all_to_all)):
        comm_s[name], comm_bytes[name] = part()

    exposed = dict(comm_s)
    exposed["dp"] = max(0.0, comm_s["dp"] - 2.0 / 3.0 * compute_s)
    exposed["cp"] = max(0.0, comm_s["cp"] - attn_s)
    layout = dict(tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, micro_batch=b, microbatches=mb, schedule=schedule,
                  chunks=chunks, zero_stage=zero_stage, recompute=recompute, sequence_parallel=sp,
                  rank_order=order, ep_domains=ep_domains)
    return TrainingStep(layout, mem, float(c.hbm_bytes), compute_s, bubble_s, comm_s, exposed, comm_bytes,
                        model_flops, hw_flops, n, float(peak), busiest, dict(links), tuple(per_stage))


def _check_layout(m, B: int, S: int, b: int, *, tp: int, cp: int, pp: int, dp: int, ep: int, eff: float) -> None:
    """Refuse a layout :func:`training_step` cannot run, saying what is allowed."""
    if not 0 < eff <= 1:
        raise ValueError(f"compute_efficiency must be in (0, 1], got {eff!r}")
    from .deployment import Placement, check_placement
    check_placement(m, Placement(tp=tp, ep=ep, dp=cp * dp, pp=pp))     # the rules every entry point shares
    if S % cp:
        raise ValueError(f"cp={cp} must divide seq_len={S} (each GPU holds seq_len / cp tokens)")
    if B % (dp * b):
        raise ValueError(f"global_batch={B} sequences must split into dp={dp} replicas of micro-batches of {b}: "
                         f"allowed: global_batch a multiple of dp x micro_batch = {dp * b}")
    if ep > 1 and m.n_experts % ep:    # training only: Megatron-Core asserts num_moe_experts % expert parallel size == 0
        raise ValueError(f"ep={ep} must divide {m.key}'s {m.n_experts} experts for training (Megatron-Core splits them "
                         f"evenly); allowed: {[e for e in range(1, m.n_experts + 1) if m.n_experts % e == 0]}")


class _Groups:
    """The communication groups of one training layout: each collective's (seconds, bytes sent per GPU) per step."""

    def __init__(self, m, links, *, tp, cp, pp, dp, ep, mb, b, s_loc, sp, b_w, b_g, zero_stage, schedule):
        self.m, self.tp, self.cp, self.pp, self.dp, self.ep, self.schedule = m, tp, cp, pp, dp, ep, schedule
        self.mb, self.b, self.s_loc, self.sp, self.b_w, self.b_g, self.zero_stage = mb, b, s_loc, sp, b_w, b_g, zero_stage
        self.bw_tp, self.bw_cp, self.bw_pp = links["tp"], links["cp"], links["pp"]
        self.bw_dp, self.bw_ep, self.bw_edp = links["dp"], links["ep"], links["expert_dp"]
        self.layers_stage = m.n_layers / pp
        self.act_bytes = b * s_loc * m.d_model * 2.0          # one micro-batch's bf16 hidden states on one TP group

    def _sync(self, params, ranks, bw):
        """Gradient synchronisation of ``params`` over ``ranks`` data-parallel ranks under the ZeRO stage."""
        if ranks <= 1 or params == 0:
            return 0.0, 0.0
        f, b_g, b_w = (ranks - 1) / ranks, self.b_g, self.b_w
        if self.zero_stage == 0:
            return float(network.all_reduce_time_s(params * b_g, ranks, bw)), 2 * f * params * b_g
        if self.zero_stage in (1, 2):     # reduce-scatter the gradients, all-gather the updated weights
            return (float(network.reduce_scatter_time_s(params * b_g, ranks, bw)
                          + network.all_gather_time_s(params * b_w, ranks, bw)), f * params * (b_g + b_w))
        # ZeRO-3: gather the weights for forward and again for backward
        return (float(network.reduce_scatter_time_s(params * b_g, ranks, bw)
                      + 2 * network.all_gather_time_s(params * b_w, ranks, bw)), f * params * (b_g + 2 * b_w))

    def dp_sync(self):
        m = self.m
        _, moe_s, other_s = _gpu_stages(m, self.pp, self.schedule)   # the GPU with the most to sync sets the time
        dense_pg = float(np.max(other_s)) / self.tp
        expert_pg = float(np.max(moe_s)) * m.n_experts * m.expert_params / self.ep if m.is_moe else 0.0
        t_d, n_d = self._sync(dense_pg, self.dp * self.cp, self.bw_dp)
        t_e, n_e = (self._sync(expert_pg, self.tp * self.cp * self.dp // self.ep, self.bw_edp) if expert_pg
                    else (0.0, 0.0))
        return t_d + t_e, n_d + n_e

    def tp_collectives(self, recompute):
        if self.tp == 1:
            return 0.0, 0.0
        count = (6 if recompute == "full" else 4) * self.layers_stage * self.mb   # all-reduce (or RS + AG) pairs
        return (count * float(network.all_reduce_time_s(self.act_bytes, self.tp, self.bw_tp)),
                count * 2 * (self.tp - 1) / self.tp * self.act_bytes)

    def cp_gathers(self):
        if self.cp == 1:
            return 0.0, 0.0
        m, tp, cp = self.m, self.tp, self.cp
        kv_dim = (m.n_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) / 2 if m.is_mla
                  else m.n_kv_heads * m.head_dim)
        kv_block = 2 * self.b * self.s_loc * kv_dim * 2.0 / min(tp, m.n_kv_heads if not m.is_mla else tp)  # K, V
        # forward: gather K, V; backward: gather again and reduce-scatter their gradients
        count = 3 * self.layers_stage * self.mb
        return count * float(network.all_gather_time_s(cp * kv_block, cp, self.bw_cp)), count * (cp - 1) * kv_block

    def pp_sends(self, chunks):
        if self.pp == 1:
            return 0.0, 0.0
        # one activation forward and one gradient backward per micro-batch (per chunk, interleaved; ZB-V's middle
        # GPUs send for both their chunks, its first and last for one: the V's turns are on one GPU)
        nbytes = 2 * self.mb * chunks * self.act_bytes / (self.tp if self.sp else 1)
        return nbytes / self.bw_pp, nbytes

    def ep_all_to_all(self):
        if self.ep == 1:
            return 0.0, 0.0
        m, ep = self.m, self.ep      # dispatch + combine, forward and backward, per MoE layer
        a2a = self.b * self.s_loc / (self.tp if self.sp else 1) * m.experts_per_token * m.d_model * 2.0
        count = 4 * m.n_moe_layers / self.pp * self.mb
        return count * float(network.all_to_all_time_s(a2a, ep, self.bw_ep)), count * (ep - 1) / ep * a2a


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def search_layouts(model, chip, n_gpus: int, global_batch: int, seq_len: int, *, tps=(1, 2, 4, 8),
                   cps=(1, 2, 4, 8, 16), pps=(1, 2, 4, 8, 16, 32), micro_batches=(1, 2, 4), zero_stages=(1,),
                   recomputes=("selective", "full"), schedule: str = "1f1b", ep: int = 1, **kw):
    """Every layout of ``n_gpus`` GPUs (``dp = n_gpus / (tp cp pp)``) that fits the chip's HBM, fastest first.

    Tries each combination of the given degrees, micro-batch sizes, ZeRO stages and recompute
    modes that divides the GPUs, the sequence and the batch (impossible ones are skipped),
    keeps those whose busiest GPU fits in HBM, and sorts them by predicted step time
    (:func:`training_step`; extra keyword arguments go to it).

    Returns:
        ``(fitting, n_tried)``: a :class:`Layouts` list of :class:`TrainingStep`, fastest first, and how many
        layouts were evaluated. When none fits, ``fitting.why`` says why: how many combinations the GPUs, the
        sequence or the batch do not divide, each rule that refused the others and how often, and the layout that
        came closest to fitting (its bytes against the chip's).

    Raises:
        ValueError: ``n_gpus``, ``global_batch`` or ``seq_len`` not whole numbers >= 1.
        KeyError: unknown model or chip.
    """
    n = positive_int("n_gpus", n_gpus)
    positive_int("global_batch", global_batch), positive_int("seq_len", seq_len)
    fitting, tried, undivided, refused, closest = Layouts(), 0, 0, {}, None
    for tp, cp, pp, b, z, r in itertools.product(tps, cps, pps, micro_batches, zero_stages, recomputes):
        if n % (tp * cp * pp):
            undivided += 1
            continue
        dp = n // (tp * cp * pp)
        try:
            st = training_step(model, chip, global_batch=global_batch, seq_len=seq_len, tp=tp, cp=cp, pp=pp, dp=dp,
                               ep=ep, micro_batch=b, zero_stage=z, recompute=r, schedule=schedule, **kw)
        except ValueError as e:
            rule = str(e.args[0] if e.args else e).split(";")[0]
            refused[rule] = refused.get(rule, 0) + 1
            continue
        tried += 1
        if st.fits:
            fitting.append(st)
        elif closest is None or st.total_bytes / st.hbm_bytes < closest.total_bytes / closest.hbm_bytes:
            closest = st
    fitting.sort(key=lambda s: s.step_time_s)
    if not fitting:
        parts = [f"no layout of {n} GPUs fits"]
        if undivided:
            parts.append(f"{undivided} combinations of tp x cp x pp do not divide {n} GPUs")
        parts += [f"{k} refused by: {rule}" for rule, k in sorted(refused.items(), key=lambda kv: -kv[1])]
        if closest is not None:
            lay = closest.layout
            parts.append(f"{tried} evaluated; the closest, tp={lay['tp']} cp={lay['cp']} pp={lay['pp']} "
                         f"dp={lay['dp']} micro-batch {lay['micro_batch']} ZeRO-{lay['zero_stage']} recompute "
                         f"{lay['recompute']}, needs {closest.total_bytes / 1e9:,.1f} GB a GPU against "
                         f"{closest.hbm_bytes / 1e9:,.1f} GB: more GPUs, more pipeline stages or a higher ZeRO stage")
        fitting.why = "; ".join(parts)
    return fitting, tried


class Layouts(list):
    """The layouts :func:`search_layouts` found (a list, fastest first), and ``why`` none fits when it is empty."""

    why: str = ""


# ---- predicted: the ceiling, then what frameworks' kernels and overlaps make of it -------------------------------

PRECISIONS = {"bf16": "bf16", "fp8": "fp8", "mxfp8": "fp8", "nvfp4": "fp4"}


def training_constants() -> dict:
    """``data/training_constants.toml``: FlashAttention's measured share against sequence length (``attention``),
    the data-parallel overlap's exposed share (``overlap``), the host's time to launch a kernel (``host``), and
    what a framework holds besides model state and activations (``memory``), each with its source."""
    from . import _catalog
    return _catalog.load("training_constants.toml")


#: Fused attention kernels :func:`predict` prices (``attention_kernel``): FlashAttention-3 (the default), cuDNN's fused
#: attention of mid-2024 and flash-attn 2, each at its bars in the FlashAttention-3 paper's H100 figures.
ATTENTION_KERNELS = ("flash3", "cudnn", "flash2")
_KERNEL_NAMES = {"flash3": "FlashAttention-3", "cudnn": "cuDNN", "flash2": "FlashAttention-2"}


def attention_share(seq_len, backward: bool = False, kernel: str = "flash3", head_dim=128) -> float:
    """The share (dimensionless, of the dense bf16 peak) a causal fused attention kernel reaches when a GPU holds
    ``seq_len`` tokens of a sequence (a scalar; under context parallelism the sequence over ``cp``), with heads
    ``head_dim`` wide, on an H100 (:func:`training_constants` ``[attention]``), interpolated in log length and held
    flat past either end of the figures' 512 to 16k tokens.

    ``kernel``: ``"flash3"`` (FlashAttention-3, the default, standing for today's fused kernels), ``"cudnn"``
    (Transformer Engine's FusedAttention, its choice on Hopper since TE 1.2, as the paper timed it in mid-2024) or
    ``"flash2"`` (flash-attn 2.x: PyTorch's flash backend, and Transformer Engine where flash-attn is picked on
    Hopper), each from the same figures of the FlashAttention-3 paper, which were measured on an H100 only.

    At head dimension 128, forward at 512 tokens, 4k and 16k: FlashAttention-3 0.30, 0.59, 0.62 of the peak; cuDNN 0.32,
    0.52, 0.54; flash-attn 2 0.19, 0.32, 0.34 (the causal forward figure). ``backward``: the share of the peak at which
    the backward pass's FLOPs, counted as the course counts them (twice the forward's), go by: the kernel's causal
    forward rate times its unmasked backward over its unmasked forward, times 2 / 2.5 (the kernel does 2.5 forwards of
    work: it recomputes the scores): FlashAttention-3 0.16, 0.40, 0.43; cuDNN 0.16, 0.34, 0.38; flash-attn 2 0.11, 0.22,
    0.24.

    ``head_dim``: the attention head's width (a query-key head; a positive number). The bars above are at 128; the
    same figures at 64 are lower (FlashAttention-3's causal forward at 4k 0.42 of the peak, backward 0.32; cuDNN
    0.37, 0.30; flash-attn 2 0.29, 0.20): the share is interpolated linearly in ``head_dim`` between the two and
    holds the nearer one outside 64-128 (an MLA head of 192 at 128's bars, which is not measured).

    Raises ``ValueError`` for a length or head dimension that is not a positive number or an unknown ``kernel``,
    ``TypeError`` for a non-boolean ``backward`` or a length or head dimension that is not a number."""
    if kernel not in ATTENTION_KERNELS:
        raise ValueError(f"kernel must be one of {ATTENTION_KERNELS} (FlashAttention-3, cuDNN's fused attention, "
                         f"FlashAttention-2), got {kernel!r}")
    a = training_constants()["attention"]
    back = flag("backward", backward)
    length = float(positive("seq_len", scalar("seq_len", seq_len)))
    width = float(positive("head_dim", scalar("head_dim", head_dim)))

    def at(table):                  # one head dimension's bars for the kernel, at this length
        bars = table if kernel == "flash3" else table[kernel]
        share = np.asarray(bars["tflops"], dtype=float) / a["peak_tflops"]
        if back:
            share = share * (np.asarray(bars["backward_tflops"], dtype=float)
                             / np.asarray(bars["forward_no_mask_tflops"]) * 2.0 / a["backward_flops_per_forward"])
        return float(np.interp(np.log2(length), np.log2(a["seq_len"]), share))
    low, high = 64.0, float(a["head_dim"])
    w = (min(max(width, low), high) - low) / (high - low)
    return (1.0 - w) * at(a["head_dim_64"]) + w * at(a)


# HBM bytes per element of one head's s x s score matrix that the unfused attention kernels move (2-byte tensors, a
# 1-byte dropout mask), kernel by kernel. Forward: Q K^T writes S (2); the fused scale-mask-softmax reads S and writes
# P (4); dropout reads P, writes P' and its mask (5); P' V reads P' (2). Backward: dO V^T writes dP' (2); P'^T dO
# reads P' (2); dropout's backward reads dP' and the mask and writes dP (5); softmax's backward reads dP and P and
# writes dS (6); dS K and dS^T Q read dS twice (4). Without dropout P' is P and its two kernels go.
UNFUSED_SCORE_BYTES = {True: (13.0, 19.0), False: (8.0, 14.0)}      # dropout: (forward, backward)


def unfused_attention_s(model, chip, *, micro_batch: int, seq_len: int, tp: int, microbatches: int, layers: float,
                        forward_passes: float = 1.0, dropout: bool = False) -> dict:
    """Seconds one GPU spends per training step on attention without FlashAttention (Megatron-LM's core attention
    before its flash path, NeMo's before June 2023): each head's batched GEMMs over the full ``s x s`` square (a
    causal mask, or a sliding window, is applied to the scores after ``Q K^T``, so no FLOPs are skipped), two forward
    (``Q K^T``, ``P V``) and four backward (``dO V^T``, ``P^T dO``, ``dS K``, ``dS^T Q``), each at its shape's measured
    share (:func:`llmmath.predict.gemm_share`, the micro-batch's heads folded into the rows), and the score matrices
    streamed through HBM between them at the sustained rate (:data:`UNFUSED_SCORE_BYTES`: 13 bytes per score element
    forward and 19 backward with dropout on the scores, 8 and 14 without). Query and key widths are the head
    dimension (MLA: ``qk_nope + qk_rope`` for ``Q K^T``, ``dS K``, ``dS^T Q``; ``v_head_dim`` for the value's three);
    scores are per query head (GQA's shared keys and values are read per head; their repeat is not charged).

    ``micro_batch`` (sequences), ``seq_len`` (tokens), ``tp`` (tensor-parallel ranks, dividing the query heads);
    ``microbatches``: micro-batches per step; ``layers``: attention layers on the GPU (``n_attention_layers / pp``);
    ``forward_passes``: forward passes of the attention core per micro-batch, 1 to 2 (2 when recomputation reruns it
    everywhere). Returns ``{"gemm_s", "hbm_s", "score_bytes"}`` (seconds, seconds, bytes of score matrices per step).

    Raises:
        ValueError: sizes that are not positive whole numbers, ``layers`` not positive, ``forward_passes`` outside
            1-2, a ``tp`` that does not divide the query heads, or a model with linear-attention (recurrent) layers,
            which have no score matrix to unfuse.
        TypeError: a non-boolean ``dropout``.
    """
    from .predict import gemm_share, sustained
    m, c = models.get(model), hardware.get(chip)
    b, S, t = (positive_int(n, v) for n, v in (("micro_batch", micro_batch), ("seq_len", seq_len), ("tp", tp)))
    mbs = positive_int("microbatches", microbatches)
    n_layers = float(positive("layers", scalar("layers", layers)))
    passes = float(scalar("forward_passes", forward_passes))
    if not 1.0 <= passes <= 2.0:
        raise ValueError(f"forward_passes must be between 1 (no recomputation) and 2 (the core rerun everywhere), "
                         f"got {forward_passes!r}")
    if m.n_heads % t:
        raise ValueError(f"tp={t} must divide {m.key}'s {m.n_heads} query heads (each rank holds whole heads)")
    if m.n_linear_layers:
        raise ValueError(f"{m.key} has {m.n_linear_layers} linear-attention layers, which hold a state, not an s x s "
                         f"score matrix: unfused attention is priced for softmax-attention models only")
    heads = m.n_heads // t
    qk, v = (m.qk_nope_head_dim + m.qk_rope_head_dim, m.v_head_dim) if m.is_mla else (m.head_dim, m.head_dim)
    rows = b * heads * S
    # (FLOPs, share) of each GEMM for one micro-batch: 2 x rows x s x width, at its (m, n, k)
    def gemm(width, n, k):
        return 2.0 * rows * S * width / gemm_share(c, "bf16", rows, n, k)
    fwd = gemm(qk, S, qk) + gemm(v, v, S)                           # Q K^T, P V
    bwd = gemm(v, S, v) + gemm(v, v, S) + 2 * gemm(qk, qk, S)       # dO V^T, P^T dO, dS K, dS^T Q
    gemm_s = n_layers * mbs * (passes * fwd + bwd) / c.flops_per_s("bf16")
    f_bytes, b_bytes = UNFUSED_SCORE_BYTES[flag("dropout", dropout)]
    score_bytes = n_layers * mbs * rows * S * (passes * f_bytes + b_bytes)
    hbm_s = score_bytes / (c.hbm_bytes_per_s * sustained(c)["hbm_fraction"])
    return {"gemm_s": gemm_s, "hbm_s": hbm_s, "score_bytes": score_bytes}


@dataclasses.dataclass(frozen=True)
class TrainingPrediction:
    """A training step as a framework would run it (:func:`predict`): seconds, tokens/s per GPU, MFU, the waterfall
    ``[(term, step seconds after it)]`` from the roofline ceiling, each part's seconds (``terms``: compute, linear,
    attention, elementwise and bubble seconds, each group's exposed communication as ``<group>_exposed_s``,
    ``host_s``, the host's launch seconds a step whether hidden or not, of which ``host_exposed_s`` shows, and the
    compute split by phase, ``phase_forward_s``, ``phase_input_grad_s``, ``phase_weight_grad_s``, summing to
    ``compute_s``, which a schedule that splits the backward fills its bubble by) and the
    busiest GPU's bytes by kind (``memory_bytes``; ``hbm_bytes`` the chip's)."""

    step_time_s: float
    tokens_per_s_per_gpu: float
    mfu: float
    waterfall: list
    terms: dict
    memory_bytes: dict
    hbm_bytes: float
    layout: dict

    @property
    def fits(self) -> bool:
        return float(sum(self.memory_bytes.values())) <= self.hbm_bytes

    def describe(self) -> str:
        """The layout as :meth:`TrainingStep.describe` labels it, with the linear layers' precision."""
        return f"{_layout_label(self.layout)} {self.layout['precision']}"

    def table(self) -> str:
        top = self.waterfall[0][1]
        w = max(len(n) for n, _ in self.waterfall)
        rows = [f"{'term':<{w}} {'step s':>9} {'tokens/s/GPU':>13} {'vs ceiling':>10}"]
        for name, t in self.waterfall:
            rows.append(f"{name:<{w}} {t:>9.3f} {self.tokens_per_s_per_gpu * self.step_time_s / t:>13,.0f} "
                        f"{top / t:>10.0%}")
        return "\n".join(rows + [f"MFU {self.mfu:.1%}; memory {sum(self.memory_bytes.values()) / 2**30:,.1f} GiB of "
                                 f"{self.hbm_bytes / 2**30:,.1f} on the busiest GPU"])


#: Gradient-buffer widths :func:`predict` takes (Megatron-Core's ``grad_reduce_in_fp32`` True or False).
GRAD_DTYPES = ("fp32", "bf16")
#: How the expert all-to-all crosses nodes (:func:`predict`'s ``ep_dispatch``).
EP_DISPATCH = ("per_expert", "per_node")


def linear_gemms(model, *, micro_batch: int = 1, seq_len: int, tp: int = 1, cp: int = 1, ep: int = 1) -> list:
    """``[(name, flops_per_token, m, d_in, d_out, grouped)]``: the linear layers one GPU runs as GEMMs in a training
    step, with each family's forward FLOPs per token of the whole model (all its layers), the rows ``m`` of one call
    (a micro-batch's tokens, ``micro_batch x seq_len / cp``, gathered across the tensor-parallel group; a routed
    expert's share of them), the GPU's slice of the weight, ``d_in x d_out``, and how many such GEMMs run as one
    grouped GEMM (the GPU's ``E / ep`` local experts; 1 elsewhere).

    Families: the attention projections (GQA/MHA: the fused query-key-value projection split by heads over ``tp``,
    the output projection split on its input; MLA: the low-rank down-projections whole, the up-projections and the
    output split by heads), the dense MLP (gate and up fused, split on the output; down split on the input), each
    routed expert whole (expert tensor parallelism 1, as NVIDIA's MoE recipes set it), its rows
    ``m / tp x k x ep / E`` (the expert group's tokens routed to one expert; each rank holds ``m / tp`` under
    sequence parallelism), the shared experts as a dense MLP, and the LM head (vocabulary
    split over ``tp``). Linear token mixers (Gated DeltaNet, Mamba) and the router are not listed: they take the
    listed families' mean share (:func:`linear_share`).

    Raises ``KeyError`` for an unknown model, ``ValueError`` for a size below 1."""
    m = models.get(model)
    mb, S = positive_int("micro_batch", micro_batch), positive_int("seq_len", seq_len)
    tp, cp, ep = positive_int("tp", tp), positive_int("cp", cp), positive_int("ep", ep)
    T = mb * S / cp
    d, out = m.d_model, []
    def add(name, layers, rows, d_in, d_out, full_in=None, full_out=None, grouped=1):
        if layers and d_in >= 1 and d_out >= 1:
            out.append((name, 2.0 * layers * (full_in or d_in) * (full_out or d_out), rows, d_in, d_out, grouped))
    att = m.n_attention_layers
    if m.is_mla:
        qk, heads = m.qk_nope_head_dim + m.qk_rope_head_dim, m.n_heads
        if m.q_lora_rank:
            add("query down-projection", att, T, d, m.q_lora_rank)
            add("query up-projection", att, T, m.q_lora_rank, heads * qk / tp, full_out=heads * qk)
        else:
            add("query projection", att, T, d, heads * qk / tp, full_out=heads * qk)
        add("key-value down-projection", att, T, d, m.kv_lora_rank + m.qk_rope_head_dim)
        kv = heads * (m.qk_nope_head_dim + m.v_head_dim)
        add("key-value up-projection", att, T, m.kv_lora_rank, kv / tp, full_out=kv)
        add("output projection", att, T, heads * m.v_head_dim / tp, d, full_in=heads * m.v_head_dim)
    else:
        q = m.n_heads * m.head_dim
        qkv = q * (2 if m.attn_output_gate else 1) + 2 * m.n_kv_heads * m.head_dim
        add("query-key-value projection", att, T, d, qkv / tp, full_out=qkv)
        add("output projection", att, T, q / tp, d, full_in=q)
    up = 2 if m.gated_mlp else 1
    dense = m.n_layers - m.n_moe_layers - len(m.mlp_free_layer_ids)
    add("MLP up (and gate)", dense, T, d, up * m.d_ff / tp, full_out=up * m.d_ff)
    add("MLP down", dense, T, m.d_ff / tp, d, full_in=m.d_ff)
    if m.is_moe:      # each expert-parallel rank holds T / tp tokens (sequence parallelism), ep of them route
        k, rows = m.experts_per_token, T / tp * m.experts_per_token * ep / m.n_experts
        local = max(1, m.n_experts // ep)
        add("routed expert up (and gate)", m.n_moe_layers * k, rows, d, up * m.d_ff_expert, grouped=local)
        add("routed expert down", m.n_moe_layers * k, rows, m.d_ff_expert, d, grouped=local)
        sh = m.n_shared_experts * m.d_ff_expert
        add("shared expert up (and gate)", m.n_moe_layers, T, d, up * sh / tp, full_out=up * sh)
        add("shared expert down", m.n_moe_layers, T, sh / tp, d, full_in=sh)
    add("LM head", 1, T, d, m.vocab / tp, full_out=m.vocab)
    return out


def kernel_launches(model, *, tp: int = 1, cp: int = 1, pp: int = 1, ep: int = 1, chunks: int = 1,
                    recompute: str = "selective", flash_attention: bool = True, dropout: bool = False,
                    fp8: bool = False) -> dict:
    """Kernels the host launches for one micro-batch on a pipeline stage (a count, by kind), one launch for each
    per-layer kernel :func:`predict` prices: a floor on what a framework launches (the views, copies and bookkeeping
    it does not price, the data-parallel buckets and the optimizer's step, once a step, are left out).

    Per layer of the stage (``n_layers / pp``; the embedding, LM head and loss added once, as if on one stage):
    each linear family of :func:`linear_gemms` three GEMMs (forward, input gradient, weight gradient; a routed
    expert family one grouped GEMM each; an MoE layer's router one family more; a linear token mixer's input and
    output projections two); attention one fused kernel forward and one backward, or unfused two batched GEMMs and
    the softmax forward (and dropout) and four GEMMs and the softmax's backward (and dropout's); a linear token
    mixer's scan forward and backward; the elementwise kernels of
    :func:`llmmath.training.elementwise_bytes_per_token`, forward and backward (two norms, rotary embedding where
    the model uses RoPE, two residual adds, the MLP's activation, an MoE layer's router, permute and unpermute; with
    ``fp8`` each linear family's output-gradient cast and the attention output's cast); the collectives as
    :func:`training_step` prices them (four tensor-parallel ones a layer with ``tp > 1``, four all-to-alls an MoE
    layer with ``ep > 1``, three context-parallel gathers an attention layer with ``cp > 1``, and with ``pp > 1``
    one send forward and one backward a model chunk, ``chunks`` of them interleaved). Full recomputation launches
    the forward's kernels again, selective the attention core's. Layers of each kind are spread evenly over the
    stages, so a count is a float, fractional where ``pp`` does not divide them; it does not depend on the
    micro-batch's size.

    Returns ``{"gemm", "attention", "elementwise", "collectives", "recomputed", "total"}`` (launches).

    Raises ``ValueError`` for sizes below 1, more stages than layers or an unknown ``recompute``, ``TypeError`` for
    a non-boolean flag, ``KeyError`` for an unknown model."""
    m = models.get(model)
    tp, cp, pp, ep, v = (positive_int(n, x) for n, x in (("tp", tp), ("cp", cp), ("pp", pp), ("ep", ep),
                                                          ("chunks", chunks)))
    if pp > m.n_layers:
        raise ValueError(f"pp={pp} stages but {m.key} has only {m.n_layers} layers")
    if recompute not in training.RECOMPUTE_MODES:
        raise ValueError(f"recompute must be one of {training.RECOMPUTE_MODES}, got {recompute!r}")
    flash, drop, low = flag("flash_attention", flash_attention), flag("dropout", dropout), flag("fp8", fp8)
    attn, moe, mixers = m.n_attention_layers / pp, m.n_moe_layers / pp, m.n_linear_layers / pp   # the stage's layers
    dense_mlp = (m.n_layers - m.n_moe_layers - len(m.mlp_free_layer_ids)) / pp
    layers_of = {"MLP": dense_mlp, "routed": moe, "shared": moe, "LM head": 0.0}     # the rest are attention's
    per_layer = sum(next((x for k, x in layers_of.items() if name.startswith(k)), attn)
                    for name, *_ in linear_gemms(m, seq_len=1, tp=tp, ep=ep))    # GEMM families x their layers
    per_layer += moe + 2 * mixers                         # the router; a mixer's input and output projections
    gemm = 3 * (per_layer + 1)                            # forward, input and weight gradient; + the LM head
    att_fwd, att_bwd = (1.0, 1.0) if flash else (3.0 + drop, 5.0 + drop)
    attention = attn * (att_fwd + att_bwd) + mixers * 2   # + a linear mixer's scan, forward and backward
    rope = attn if m.pos_embedding == "rope" else 0.0
    ew_fwd = 4 * m.n_layers / pp + rope + dense_mlp + moe * (1 + 3 + (m.n_shared_experts > 0))
    ew = 2 * ew_fwd + 2 + 2                               # backward alike; the embedding and the loss, both ways
    if low:
        ew += per_layer + attn                            # each family's gradient cast, the attention output's
    coll = ((4 * m.n_layers / pp if tp > 1 else 0.0) + (4 * moe if ep > 1 else 0.0)
            + (3 * attn if cp > 1 else 0.0) + (2 * v if pp > 1 else 0.0))
    coll_fwd = (2 * m.n_layers / pp if tp > 1 else 0.0) + (2 * moe if ep > 1 else 0.0) + (attn if cp > 1 else 0.0)
    rec = {"full": per_layer + attn * att_fwd + mixers + ew_fwd + coll_fwd, "selective": attn * att_fwd,
           "none": 0.0}[recompute]
    out = {"gemm": gemm, "attention": attention, "elementwise": ew, "collectives": coll, "recomputed": rec}
    out["total"] = sum(out.values())
    return out


def linear_share(model, chip, precision: str = "bf16", *, micro_batch: int = 1, seq_len: int, tp: int = 1,
                 cp: int = 1, ep: int = 1) -> float:
    """The share of ``chip``'s dense ``precision`` peak a training step's linear layers reach together: each family of
    :func:`linear_gemms` runs three GEMMs of equal FLOPs (forward ``m x d_in -> d_out``, the input gradient
    ``m x d_out -> d_in``, the weight gradient ``d_in x m -> d_out``), each at its shape's measured share
    (:func:`llmmath.predict.gemm_share`), and the step's time is their FLOPs over those rates:
    ``sum(F) / sum(F / share)``. A grouped GEMM (``g`` local experts, Megatron-Core's grouped GEMM) fills the chip
    with all its experts' output tiles at once: it is priced as one GEMM of ``g m`` rows forward and for the input
    gradient, and of ``g d_in`` rows for the weight gradient, whose inner size stays an expert's ``m`` rows. The
    three are weighted alike even where full recomputation runs the forward twice. On a chip without a shape grid,
    :func:`llmmath.predict.matmul_fraction`.

    Raises ``ValueError`` for an unknown ``precision`` (allowed: bf16, fp8, mxfp8, nvfp4) or a size below 1,
    ``KeyError`` for an unknown model or chip."""
    from .predict import gemm_share
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
    dtype = PRECISIONS[precision]
    flops = time = 0.0
    for _, f, rows, d_in, d_out, g in linear_gemms(model, micro_batch=micro_batch, seq_len=seq_len, tp=tp, cp=cp,
                                                  ep=ep):
        shares = (gemm_share(chip, dtype, g * rows, d_out, d_in), gemm_share(chip, dtype, g * rows, d_in, d_out),
                  gemm_share(chip, dtype, g * d_in, d_out, rows))
        flops += 3 * f
        time += sum(f / s for s in shares)
    return flops / time


def predict(model, chip, *, global_batch: int, seq_len: int, tp: int = 1, cp: int = 1, pp: int = 1, dp: int = 1,
            ep: int = 1, micro_batch: int = 1, zero_stage: int = 1, recompute: str = "selective",
            schedule: str = "1f1b", chunks: int = 1, precision: str = "bf16", fsdp: bool = False,
            tp_overlap: bool = True, rank_order: str = MEGATRON_RANK_ORDER,
            dropout: bool = False, recompute_layers: int | None = None,
            grad_dtype: str = "fp32", ep_overlap: bool = False,
            ep_dispatch: str = "per_expert", flash_attention: bool = True,
            sequence_parallel: bool = True, attention_kernel: str = "flash3",
            cuda_graphs: bool = False) -> TrainingPrediction:
    """What a training framework (Megatron-Core, NeMo; FSDP) measures for one step: :func:`training_step`'s
    ceiling, then one term at a time (each a measured rate with its source, none fitted to a training run):

    1. **kernels at their measured shares**: the linear layers at ``precision`` (``fp8``/``mxfp8`` run the linear
       layers only in fp8, ``nvfp4`` in fp4), each GEMM at the share of that peak TensorRT-LLM's GEMMs reach at its
       shape on the chip (:func:`linear_share`: the layer's slice under tensor parallelism, a routed expert's rows),
       attention at bf16 at its kernel's measured shares for the sequence a GPU holds and the model's head width
       (an MLA model's query-key head), forward and backward apart (:func:`attention_share`: ``attention_kernel``
       FlashAttention-3 by default, ``"cudnn"`` or ``"flash2"`` for a run on a Hopper GPU that says it ran those;
       other chips take the default's shares), or with
       ``flash_attention=False`` unfused, as frameworks ran it before FlashAttention (:func:`unfused_attention_s`:
       two forward and four backward batched GEMMs a head over the full square, the ``s x s`` scores through HBM,
       and kept in memory unless recomputed; softmax-attention models only), the pipeline bubble with it;
    2. **data-parallel sync as frameworks overlap it**: the gradient reduce-scatter behind the backward pass and the
       parameter all-gather behind the next forward (Megatron's distributed optimizer), a bucket's worth exposed;
       with ``fsdp`` (ZeRO-3) the weights gathered for each micro-batch's forward and again for its backward;
    3. **tensor-parallel communication** hidden behind the linear layers when ``tp_overlap`` (NeMo's
       tp_comm_overlap), else exposed;
    4. **the expert all-to-all on the link the rank order gives it**: ``rank_order`` lists the groups innermost
       first (Megatron-Core's default ``"tp-cp-ep-dp-pp"``: with the experts unsplit the expert group is ``ep``
       adjacent GPUs, and one that fits an NVLink domain stays on NVLink). The ceiling is priced on the same order
       (:func:`group_links`: every group, data-parallel and pipeline too, on the link its span gives it), so the
       waterfall starts from the same links.

    Collectives move at the rates the serving step assumes (``data/engine_constants.toml`` [collectives], one
    source for both step models): ring collectives (the data-parallel reduce-scatter and all-gather, the
    tensor-parallel gathers) at ``nvlink_all_reduce_fraction`` (0.82) of the ring's link, the expert all-to-all at
    ``all_to_all_fraction`` (0.82) of its link. The ring share was measured inside one H100 NVLink domain; on rings
    that cross NICs, and on other chips, it is an assumption. Point-to-point sends (pipeline, ring attention) keep
    the link's rate: no measured share is in the catalog for them.

    ``grad_dtype``: the width of the gradient buffer the data-parallel group reduces (Megatron-Core's
    ``grad_reduce_in_fp32``): ``fp32`` (the default, Megatron-LM's accumulate-in-fp32 convention) or ``bf16``, as
    NVIDIA's NeMo and Megatron-Bridge performance recipes set it (Megatron-Bridge ``perf_recipes/_common.py``
    ``_benchmark_common``: ``grad_reduce_in_fp32 = False``). It sets the gradients' bytes in memory and on the wire;
    with ``bf16`` the optimizer step also holds an fp32 copy of each GPU's gradient shard, sized as its master
    weights (Megatron's distributed optimizer: 4 + 16/d bytes a parameter where fp32 gradients take 6 + 12/d).

    Memory (the busiest GPU): model state, activations with FlashAttention (no ``s x s`` scores, whatever
    ``recompute``), the fp32 logits of the loss on a one-stage model, one layer's activations while a fully recomputed
    layer reruns, FSDP's gathered layer, and a framework reserve (``data/training_constants.toml`` [memory]).

    ``sequence_parallel`` (with ``tp`` > 1; Megatron's, on in NeMo's recipes since 2022): the norms, dropouts and
    residual adds outside the tensor-parallel region split over the ``tp`` ranks, in time and in stored activations;
    ``False`` (Megatron's configs before sequence parallelism): every rank runs them on the whole sequence.

    ``recompute_layers`` (with ``recompute="full"``): Megatron-Core's block method, the first ``recompute_layers``
    layers of each pipeline stage's model chunk rerun their forward and the rest keep their activations (the extra
    FLOPs, elementwise bytes and activation memory scale with the recomputed share of the chunk's layers).

    Every step also pays the kernels that are neither matmuls nor attention (norms, rotary embedding, residual adds,
    activations, MoE permutes, the loss, fp8 casts: :func:`llmmath.training.elementwise_bytes_per_token`) at the
    chip's sustained HBM rate (:func:`llmmath.predict.sustained`).

    ``ep_overlap``: the expert all-to-all runs under another micro-batch's compute, only its excess over the
    compute exposed (Megatron-Core's ``overlap_moe_expert_parallel_comm``, Megatron-Bridge's ``--moe_a2a_overlap``,
    which pairs one micro-batch's forward with another's backward as DualPipe does); ``dualpipe`` implies it.

    ``ep_dispatch``: ``"per_expert"`` (the default: a token crosses to each of its ``k`` experts off the rank, as
    Megatron-Core's ``alltoall`` dispatcher sends it) or ``"per_node"`` (node-deduplicated, as DeepEP's normal
    kernels and DeepSeek-V3's dispatch run it: where the expert group spans nodes, a token crosses the NIC once to
    each other node holding one of its experts, :func:`llmmath.network.remote_nodes_reached`, and is forwarded over
    NVLink inside it, not priced; the serving step prices a prefill step the same way).

    The schedules that split the backward into input and weight gradients (``zero-bubble``, ``zb-v``,
    ``dualpipe``) take their bubble at the phases' priced times, not equal ones: ``T_W`` a third of the first pass's
    GEMMs, ``T_F`` the same GEMMs with attention's forward and the forward's elementwise kernels, ``T_B`` the rest
    (attention's backward, the recomputed forward). ``zb-v`` (PyTorch's ``ScheduleZBVZeroBubble``) is simulated:
    :func:`llmmath.parallelism.zbv_schedule`.

    ``schedule="dualpipe"`` (DeepSeek-V3's): its bubble (:func:`llmmath.parallelism.pipeline_bubble_fraction`),
    ``p + 1`` micro-batches of activations and two copies of the weights and gradients on each GPU, and the expert
    all-to-all and pipeline sends run under the paired forward and backward chunks' compute (only what exceeds it
    shows).

    **Host and launch time** (on GPUs): the host launches each micro-batch's kernels (:func:`kernel_launches`, one
    launch a per-layer kernel priced here, a floor) at eager PyTorch's measured cost a launch
    (:func:`training_constants` ``[host]``) while the GPU runs the previous ones; only what exceeds the GPU's busy time
    for the micro-batch shows (its compute and exposed communication, the last bucket's data-parallel sync left out),
    and a host-bound pipeline fills and drains at the host's pace (booked as host time, the bubble kept at the GPU's).
    ``cuda_graphs``: the step's kernels replayed from CUDA graphs, one launch for many, and nothing charged. A TPU runs
    the step as one compiled XLA program: nothing charged. ``terms["host_s"]``: the host's launch seconds a step, hidden
    or not (not a part of the step); ``terms["host_exposed_s"]``: what of them shows.

    Not modelled: syncs that stop the host running ahead (a dropless MoE dispatcher's token counts read on the
    host), uneven pipeline stages beyond the embedding and head, schedules that reorder by measured times (the
    zero-bubble authors' own scheduler; ``schedule`` takes :func:`llmmath.parallelism.pipeline_bubble_fraction`'s).

    Raises:
        ValueError: an unknown ``precision`` (allowed: bf16, fp8, mxfp8, nvfp4), ``grad_dtype`` (fp32, bf16),
            ``ep_dispatch`` (per_expert, per_node), ``rank_order`` or ``attention_kernel`` (flash3, cudnn, flash2);
            ``attention_kernel`` other than the default with ``flash_attention=False`` or on a chip that is not a
            Hopper GPU; ``cp`` > 1 with ``flash_attention=False``; and what :func:`training_step` refuses.
        TypeError: an ``ep_overlap``, ``flash_attention``, ``sequence_parallel`` or ``cuda_graphs`` that is not True
            or False.
        KeyError: unknown model or chip.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
    flag("ep_overlap", ep_overlap)
    graphs = flag("cuda_graphs", cuda_graphs)
    if ep_dispatch not in EP_DISPATCH:
        raise ValueError(f"ep_dispatch must be one of {EP_DISPATCH}, got {ep_dispatch!r}")
    if grad_dtype not in GRAD_DTYPES:
        raise ValueError(f"grad_dtype must be one of {GRAD_DTYPES} (the gradient buffer's width), got {grad_dtype!r}")
    if not isinstance(rank_order, str):
        raise ValueError(f"rank_order must name tp, cp, ep, dp and pp once each, innermost first (Megatron-Core's "
                         f"default {MEGATRON_RANK_ORDER!r}), got {rank_order!r}")
    flash = flag("flash_attention", flash_attention)
    if attention_kernel not in ATTENTION_KERNELS:
        raise ValueError(f"attention_kernel must be one of {ATTENTION_KERNELS} (FlashAttention-3, cuDNN's fused "
                         f"attention, FlashAttention-2; flash_attention=False prices it unfused), got "
                         f"{attention_kernel!r}")
    if attention_kernel != "flash3":
        if not flash:
            raise ValueError(f"attention_kernel={attention_kernel!r} names a fused kernel, but flash_attention=False "
                             f"prices attention unfused: give one or the other")
        gpu = hardware.get(chip)
        if gpu.generation != "Hopper":
            raise ValueError(f"attention_kernel={attention_kernel!r}: the kernels' own bars were measured on an H100 "
                             f"(FlashAttention-3 paper) and apply to Hopper GPUs; {gpu.key} is {gpu.generation}, "
                             f"where the default's shares stand in for its fused kernel (on an A100, flash-attn 2's "
                             f"home, about what it reaches)")
    if not flash and positive_int("cp", cp) > 1:
        raise ValueError(f"cp={cp!r} needs flash_attention=True: context parallelism passes key and value blocks "
                         f"through a fused (FlashAttention-style) kernel; unfused attention runs with cp=1 only")
    dtype = PRECISIONS[precision]
    z = 3 if fsdp else zero_stage
    seq_par = flag("sequence_parallel", sequence_parallel)
    kw = dict(global_batch=global_batch, seq_len=seq_len, tp=tp, cp=cp, pp=pp, dp=dp, ep=ep, micro_batch=micro_batch,
              zero_stage=z, schedule=schedule, chunks=chunks, compute_dtype=dtype, dropout=dropout,
              grad_dtype=grad_dtype, rank_order=rank_order, sequence_parallel=seq_par)
    if recompute_layers is not None:
        if recompute != "full":
            raise ValueError(f"recompute_layers={recompute_layers!r} needs recompute='full' (Megatron's block method), "
                             f"got recompute={recompute!r}")
        per_chunk = models.get(model).n_layers / (int(pp) * int(chunks))
        recompute_share = min(1.0, positive_int("recompute_layers", recompute_layers) / per_chunk)
    else:
        recompute_share = 1.0 if recompute == "full" else 0.0
    partial = recompute_layers is not None
    ceil = training_step(model, chip, recompute="none" if partial else recompute, **kw)
    m, c = models.get(model), hardware.get(chip)
    n, S, mb = ceil.n_gpus, int(seq_len), ceil.layout["microbatches"]
    tokens = int(global_batch) * S
    def flops(mode, context=0):
        return float(training.train_flops(m.matmul_params_per_token, tokens, context, m if context else None,
                                          recompute=mode))
    if partial:                     # the recomputed share of the layers adds its forward again
        hw = flops("none", S) + recompute_share * (flops("full", S) - flops("none", S))
        lin = flops("none") + recompute_share * (flops("full") - flops("none"))
    else:
        hw, lin = flops(recompute, S), flops(recompute)
    attn = hw - lin
    lin_share = linear_share(m, c, precision, micro_batch=micro_batch, seq_len=S, tp=tp, cp=cp, ep=ep)
    lin_s = lin / (n * c.flops_per_s(dtype) * lin_share)
    if flash:
        attn_bwd = 2.0 / 3.0 * (flops("none", S) - flops("none"))     # the backward: twice the forward's A of 3 A
        head = m.qk_nope_head_dim + m.qk_rope_head_dim if m.is_mla else m.head_dim
        share = lambda backward: attention_share(S / cp, backward, attention_kernel, head)  # noqa: E731
        attn_s = ((attn - attn_bwd) / share(False) + attn_bwd / share(True)) / (n * c.flops_per_s("bf16"))
    else:                           # batched GEMMs over the full square, the scores through HBM between them
        rerun = 1.0 if recompute == "selective" else recompute_share          # the core's forward run again
        un = unfused_attention_s(m, c, micro_batch=micro_batch, seq_len=S, tp=tp, microbatches=mb,
                                 layers=m.n_attention_layers / pp, forward_passes=1.0 + rerun, dropout=dropout)
        attn_s = un["gemm_s"] + un["hbm_s"]
    compute_s = lin_s + attn_s
    # the kernels that are neither matmuls nor attention (norms, RoPE, residual adds, activations, MoE permutes,
    # the loss, fp8 casts) stream their bytes at the sustained HBM rate, between the GEMMs: they add
    from .predict import sustained
    hbm = n * c.hbm_bytes_per_s * sustained(c)["hbm_fraction"]
    ew = training.elementwise_bytes_per_token(m, fp8=dtype != "bf16", recompute="full")
    ew_bytes = ew["total"] - (1 - recompute_share) * ew["recomputed forward"]   # only the recomputed share reruns
    if not seq_par:                 # outside the tensor-parallel region every rank runs the norms and residual adds
        ew_bytes += (int(tp) - 1) * (ew["norms"] + ew["residual"])
    elementwise_s = tokens * ew_bytes / hbm
    # a schedule that splits the backward (ZB-H1, ZB-V, DualPipe) fills its bubble by the phases' own times: the
    # weight gradient is a third of the first pass's GEMMs; the forward the same GEMMs, attention's forward and
    # the forward's elementwise kernels; the input gradient the rest (attention's backward, recomputation)
    weight_s = lin_s * flops("none") / lin / 3
    attn_fwd = (flops("none", S) - flops("none")) / 3
    attn_fwd_s = (attn_fwd / share(False) / (n * c.flops_per_s("bf16")) if flash
                  else attn_s * attn_fwd / max(attn, 1e-30))
    forward_s = weight_s + attn_fwd_s + tokens * ew["recomputed forward"] / hbm
    input_s = lin_s + attn_s + elementwise_s - forward_s - weight_s
    times = (dict(forward_s=forward_s, backward_input_s=input_s, backward_weight_s=weight_s)
             if schedule in ("zero-bubble", "zb-v", "dualpipe") else {})
    bub = float(parallelism.pipeline_bubble_fraction(pp, mb, schedule, chunks, **times))
    bubble_s = compute_s * bub / (1.0 - bub)
    exposed = dict(ceil.exposed_comm_s)
    fall = [("roofline ceiling", ceil.step_time_s)]
    total = lambda: compute_s + bubble_s + sum(exposed.values())  # noqa: E731
    exposed["cp"] = max(0.0, ceil.comm_s["cp"] - attn_s)
    fall.append((f"linear layers at their shapes' measured share ({lin_share:.2f} of the {precision} peak), "
                 + (f"attention at {_KERNEL_NAMES[attention_kernel]}'s" if flash
                    else "attention unfused (batched GEMMs, its s x s scores through HBM)"), total()))
    compute_s += elementwise_s
    bubble_s = compute_s * bub / (1.0 - bub)
    fall.append(("elementwise kernels at the sustained HBM rate", total()))

    # collectives at their achieved rates (the serving step's [collectives] shares of the link)
    from .predict import engine_constants
    shares = engine_constants()["collectives"]
    ring_share, a2a_share = shares["nvlink_all_reduce_fraction"], shares["all_to_all_fraction"]
    # data-parallel sync: what the ceiling charged, re-priced at the achieved rate as the framework overlaps it
    k = training_constants()["overlap"]
    bw, bg = dtype_bytes("bf16"), dtype_bytes(grad_dtype)
    sync = ceil.comm_s["dp"] / ring_share
    if fsdp:                 # per micro-batch: gather for forward, again for backward, reduce-scatter the gradients
        gather, scatter = sync * 2 * bw / (bg + 2 * bw), sync * bg / (bg + 2 * bw)
        per_mb = gather + scatter
        exposed["dp"] = max(0.0, mb * per_mb - compute_s) + per_mb / k["buckets"]
        dp_tail = per_mb / k["buckets"]                  # the last bucket, after the step's last micro-batch
    else:                    # reduce-scatter behind the backward (2/3 of compute), all-gather behind the forward
        scatter = sync * bg / (bg + bw)
        gather = sync - scatter
        exposed["dp"] = (max(0.0, scatter - 2 / 3 * compute_s) + max(0.0, gather - compute_s / 3)
                         + sync / k["buckets"])
        dp_tail = sync / k["buckets"]
    fall.append(("data-parallel sync overlapped" + (" (FSDP, per micro-batch)" if fsdp else ""), total()))
    tp_s = ceil.comm_s["tp"] / ring_share
    exposed["tp"] = max(0.0, tp_s - lin_s) if tp_overlap else tp_s
    fall.append(("tensor-parallel communication " + ("overlapped with the GEMMs" if tp_overlap else "exposed"),
                 total()))
    if ep > 1:
        # the expert group's link where the rank order puts it (the ceiling's own: group_links)
        raw = ceil.links_bytes_per_s["ep"]
        link = raw * a2a_share
        rank_tokens = micro_batch * S / cp / (tp if tp > 1 else 1)      # one micro-batch's tokens on one rank
        a2a = rank_tokens * m.experts_per_token * m.d_model * 2.0
        count = 4 * m.n_moe_layers / pp * mb
        ep_s = count * float(network.all_to_all_time_s(a2a, ep, link))
        nodes = ceil.layout["ep_domains"]
        if ep_dispatch == "per_node" and nodes > 1:    # once to each other node holding one of a token's experts
            nic_bytes = rank_tokens * m.d_model * 2.0 * network.remote_nodes_reached(m.n_experts, m.experts_per_token,
                                                                                nodes)
            ep_s = count * nic_bytes / link
        # DualPipe (and Megatron's A2A overlap) run one chunk's all-to-all under the paired chunk's compute
        hidden = flag("ep_overlap", ep_overlap) or schedule == "dualpipe"
        exposed["ep"] = max(0.0, ep_s - compute_s) if hidden else ep_s
        fall.append((f"expert all-to-all on the {'scale-up' if raw == c.scale_up_bytes_per_s else 'scale-out'} "
                     f"link ({rank_order})" + (", under another micro-batch's compute" if hidden else ""), total()))
    if schedule == "dualpipe":            # and the pipeline's sends under the compute as well
        exposed["pp"] = max(0.0, ceil.comm_s["pp"] - compute_s)
        fall.append(("pipeline sends under the paired chunk (DualPipe)", total()))
    # host and launch time: the host launches a micro-batch's kernels while the GPU runs earlier ones; what it needs
    # beyond the GPU's own time for the micro-batch shows, and a host-bound pipeline fills and drains at the host's
    # pace (CUDA graphs: one launch for many, nothing charged; a TPU runs the step as one compiled XLA program)
    sends = _send_chunks(schedule, pp, chunks)
    count = lambda mode: kernel_launches(m, tp=tp, cp=cp, pp=pp, ep=ep, chunks=sends, recompute=mode,  # noqa: E731
                                         flash_attention=flash, dropout=dropout, fp8=dtype != "bf16")["total"]
    launches = count("none") + recompute_share * (count("full") - count("none")) if partial else count(recompute)
    gpu = c.vendor in ("NVIDIA", "AMD")
    host_mb = launches * training_constants()["host"]["launch_s"] if gpu and not graphs else 0.0
    gpu_mb = (total() - bubble_s - dp_tail) / mb          # the GPU's busy time a micro-batch (the last bucket's
    exposed["host"] = mb * max(0.0, host_mb - gpu_mb)     # sync comes after the step's last one)
    if host_mb > gpu_mb:                                  # the fill and drain go at the host's pace too
        exposed["host"] += max(0.0, bub / (1.0 - bub) * mb * host_mb - bubble_s)
    fall.append(("host and launch time: " + ("CUDA graphs" if graphs and gpu else
                                            f"none on a {c.vendor} chip (one compiled program a step)" if not gpu else
                 f"{launches:,.0f} launches a micro-batch, {host_mb * 1e3:.1f} ms against the GPU's "
                 f"{gpu_mb * 1e3:.1f} ms"), total()))
    step_s = total()

    # memory, as frameworks see it
    kept = "selective" if flash else "none"       # what a layer that is not recomputed stores: no scores with FA
    stored = kept if recompute == "none" or partial else recompute
    km = training_constants()["memory"]
    s_loc, sp = S // cp, seq_par and tp > 1
    logits = micro_batch * s_loc * m.vocab / tp * km["logit_bytes"]     # the loss's, on the GPU that computes it
    held_step = training_step(model, chip, recompute=stored, **kw)
    stage = held_step.stage         # under ZB-V the first GPU computes the loss: with its logits it may be the busiest
    if schedule == "zb-v" and sum(held_step.stage_memory_bytes[0].values()) + logits > held_step.total_bytes:
        stage = 0
    mem = dict(held_step.stage_memory_bytes[stage])
    if partial:                     # the recomputed layers keep only their inputs
        full = training_step(model, chip, recompute="full", **kw).stage_memory_bytes[stage]
        mem = {k2: (1 - recompute_share) * v + recompute_share * full.get(k2, v) for k2, v in mem.items()}
    if pp == 1 or (schedule == "zb-v" and stage == 0):
        mem["logits"] = logits
    if recompute == "full":
        mem["recomputed layer"] = _layer_activation_bytes(m, s_loc, micro_batch, tp, sp, kept, m.is_moe, dropout)
    if fsdp:
        mem["gathered layer"] = 2 * bw * (m.total_params / m.n_layers) / tp
    if grad_dtype == "bf16":              # the optimizer step's fp32 copy of each gradient shard (Megatron's
        mem["fp32 gradient shard"] = mem["master_weights"]      # distributed optimizer: 4 + 16/d, not 4 + 12/d)
    mem["framework reserve"] = float(km["reserve_bytes"])
    model_flops = ceil.model_flops
    mfu = model_flops / (step_s * n * c.flops_per_s("bf16"))
    terms = {"compute_s": compute_s, "linear_s": lin_s, "attention_s": attn_s, "elementwise_s": elementwise_s,
             "phase_forward_s": forward_s, "phase_input_grad_s": input_s, "phase_weight_grad_s": weight_s,
             "bubble_s": bubble_s, "host_s": mb * host_mb, **{f"{k2}_exposed_s": v for k2, v in exposed.items()}}
    return TrainingPrediction(step_s, tokens / step_s / n, float(mfu), fall, terms, mem, float(c.hbm_bytes),
                              dict(ceil.layout, precision=precision, fsdp=fsdp, tp_overlap=tp_overlap,
                                   rank_order=rank_order, recompute=recompute, recompute_layers=recompute_layers))


# ---- the training ledger: published measured throughput against the prediction ---------------------------------

SPLITS = ("calibration", "validation", "test")


def measurements() -> dict:
    """Published, measured training throughput (``data/training_measurements.toml``), by key: model, chip, GPUs, the
    layout as run (tp, pp, cp, ep, vp, micro_batch, global_batch, seq_len, precision, recompute, fsdp, and where the
    run set them dropout, tp_overlap, flash_attention, sequence_parallel, attention_kernel, ep_overlap), the measured
    tokens/s per GPU (and where published the peak allocated memory, ``measured_peak_allocated_gib``), source, quote
    and ``split`` (:data:`SPLITS`; test rows carry ``predicted_at_entry``, and those with a published peak
    ``predicted_peak_allocated_at_entry_gib``)."""
    from . import _catalog
    return dict(_catalog.load("training_measurements.toml")["runs"])


def _row_args(e: dict) -> dict:
    """A ledger row's layout as :func:`predict`'s arguments (dp: the GPUs left after tp x cp x pp; a row without
    ``dropout`` ran none, one without ``tp_overlap`` overlapped its tensor-parallel communication as NeMo's
    recipes do, one without ``flash_attention`` or ``sequence_parallel`` ran them, one without ``attention_kernel`` is
    priced at FlashAttention-3's rates)."""
    tp, cp, pp = int(e.get("tp", 1)), int(e.get("cp", 1)), int(e.get("pp", 1))
    vp = int(e.get("vp", 1) or 1)
    rc = str(e.get("recompute", "none")).lower()
    layers = re.search(r"(\d+) layers", rc) if "full" in rc else None    # Megatron's block method: N layers
    return dict(global_batch=int(e["global_batch"]), seq_len=int(e["seq_len"]), tp=tp, cp=cp, pp=pp,
                recompute_layers=int(layers.group(1)) if layers else None,
                dp=int(e["gpus"]) // (tp * cp * pp), ep=int(e.get("ep", 1)), micro_batch=int(e.get("micro_batch", 1)),
                recompute="full" if "full" in rc else "selective" if "selective" in rc else "none",
                schedule=e.get("schedule") or ("interleaved" if vp > 1 else "1f1b"), chunks=vp,
                precision=e.get("precision", "bf16"),
                fsdp=flag("fsdp", e.get("fsdp", False)), grad_dtype=e.get("grad_dtype", "fp32"),
                dropout=flag("dropout", e.get("dropout", False)),
                tp_overlap=flag("tp_overlap", e.get("tp_overlap", True)),
                flash_attention=flag("flash_attention", e.get("flash_attention", True)),
                sequence_parallel=flag("sequence_parallel", e.get("sequence_parallel", True)),
                attention_kernel=e.get("attention_kernel", "flash3"),
                ep_overlap=flag("ep_overlap", e.get("ep_overlap", False)),
                ep_dispatch=e.get("ep_dispatch", "per_expert"))


def predicted_vs_measured(keys=None) -> list:
    """``[(key, split, measured tokens/s per GPU, TrainingPrediction)]`` for every ledger row (or those in ``keys``).
    Raises ``KeyError`` naming an unknown key."""
    from . import _catalog
    return [(k, e.get("split", "validation"), float(e["measured_tokens_per_s_per_gpu"]),
             predict(e["model"], e["chip"], **_row_args(e)))
            for k, e in _catalog.select(measurements(), keys, "training measurement", "training_measurements.toml")]


def memory_vs_published(keys=None) -> list:
    """``[(key, split, published peak allocated bytes, predicted allocated bytes, TrainingPrediction)]`` for every
    ledger row that publishes its run's peak allocated memory (``measured_peak_allocated_gib``: PyTorch's
    ``torch.cuda.max_memory_allocated`` on the GPU the source reports, usually rank 0, in GiB), or those of them in
    ``keys``.

    The prediction is :func:`predict`'s busiest GPU less its framework reserve: the CUDA context, NCCL's buffers and
    the caching allocator's spare blocks are memory the GPU holds but the allocator's peak does not count (PyTorch's
    ``max_memory_reserved`` and ``nvidia-smi`` would). Where every rank holds the same (no pipelining) the busiest
    GPU is rank 0; with pipelining rank 0 is the first stage, which need not be the busiest (the last holds the
    logits), so such a row compares different GPUs. Rows without a published peak are left out.

    Raises ``KeyError`` naming an unknown key, ``ValueError`` for a key whose row publishes no peak."""
    from . import _catalog
    rows = dict(_catalog.select(measurements(), keys, "training measurement", "training_measurements.toml"))
    if keys is not None:
        bare = sorted(k for k, e in rows.items() if "measured_peak_allocated_gib" not in e)
        if bare:
            raise ValueError(f"no published peak allocated memory on {bare}: memory_vs_published takes rows with "
                             f"measured_peak_allocated_gib")
    out = []
    for k, e in rows.items():
        if "measured_peak_allocated_gib" not in e:
            continue
        p = predict(e["model"], e["chip"], **_row_args(e))
        allocated = float(sum(p.memory_bytes.values())) - p.memory_bytes.get("framework reserve", 0.0)
        out.append((k, e.get("split", "validation"), float(e["measured_peak_allocated_gib"]) * 2**30, allocated, p))
    return out


# ---- where each parallelism turns communication-bound (closed forms) --------------------------------------------

def comm_bound_points(model, chip, *, precision: str = "bf16", grad_dtype: str = "fp32",
                      weight_dtype: str = "bf16") -> dict:
    """The closed-form points where each parallelism's transfers outgrow the compute they hide behind, for ``model``
    on ``chip`` at the achieved matmul rate ``F`` of ``precision`` (peak x :func:`llmmath.predict.matmul_fraction`).
    Each compares a transfer's bytes over its link with the FLOPs of the same step, as *How to Scale Your Model*
    (Austin et al. 2025, the training chapters) builds its layouts on; both sides are per GPU and the model's size
    cancels where it can.

    * ``dp_tokens``: tokens each data-parallel replica must process per step for ZeRO-1's sync to hide behind its
      compute over the NIC. A replica's GPUs hold ``N / (tp pp)`` parameters each and send ``(b_g + b_w)`` bytes per
      parameter (reduce-scatter the gradients, gather the weights) while they compute ``6 T N / (tp pp)`` FLOPs for
      ``T`` tokens: hidden while ``T >= F (b_g + b_w) / (6 W_nic)`` (ring factor ``(dp-1)/dp`` taken as 1; one
      member of the group a node, the worst case: ``g`` members sharing a node ring over ``g`` NICs at once, and the
      threshold falls ``g``-fold until NVLink binds, as :func:`predict` prices it);
    * ``fsdp_tokens``: the same for FSDP, whose weights are gathered twice per micro-batch: tokens per micro-batch
      per replica ``>= F (2 b_w + b_g) / (6 W_nic)``;
    * ``tp_max``: the tensor-parallel degree past which a layer's sequence-parallel gathers and reduce-scatters (8
      a layer and step, forward and backward, ``(tp-1)/tp`` of ``2 d`` bytes a token each) outlast its linear
      layers' ``6 P_layer / tp`` FLOPs a token over NVLink: ``tp_max = 1 + 6 P_layer W_nvlink / (16 d F)``;
    * ``ep_width``: for an MoE model, the expert width (``d_ff`` of one expert) below which the all-to-all (dispatch
      and combine, forward and backward, ``8 d`` bytes a routed token) outlasts the expert's ``18 d d_ff`` FLOPs a
      routed token: ``d_ff_min = 8 F / (18 W)``, on NVLink (``ep_width_nvlink``) and on the NIC (``ep_width_nic``),
      beside the model's own ``d_ff_expert``.

    Returns a dict of those numbers and ``F``, ``W_nvlink``, ``W_nic`` (bytes/s a direction). Raises ``ValueError``
    for an unknown precision, ``KeyError`` for an unknown model or chip.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {sorted(PRECISIONS)}, got {precision!r}")
    from .predict import matmul_fraction
    m, c = models.get(model), hardware.get(chip)
    dtype = PRECISIONS[precision]
    F = c.flops_per_s(dtype) * matmul_fraction(c, dtype)
    w_up, w_nic = float(c.scale_up_bytes_per_s or 0.0), float(c.scale_out_bytes_per_s or 0.0)
    b_g, b_w = dtype_bytes(grad_dtype), dtype_bytes(weight_dtype)
    out = {"F": F, "W_nvlink": w_up, "W_nic": w_nic}
    if w_nic > 0:
        out["dp_tokens"] = F * (b_g + b_w) / (6 * w_nic)
        out["fsdp_tokens"] = F * (2 * b_w + b_g) / (6 * w_nic)
    if w_up > 0:
        p_layer = m.matmul_params_per_token / m.n_layers
        out["tp_max"] = 1 + 6 * p_layer * w_up / (16 * m.d_model * F)
    if m.is_moe:
        out["d_ff_expert"] = m.d_ff_expert
        if w_up > 0:
            out["ep_width_nvlink"] = 8 * F / (18 * w_up)
        if w_nic > 0:
            out["ep_width_nic"] = 8 * F / (18 * w_nic)
    return out
