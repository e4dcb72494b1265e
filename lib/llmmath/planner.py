"""A serving plan on the roofline: does it fit, how many users, how fast, at what cost (chapter 11).

:func:`plan` takes a model (a catalog name, a :class:`~llmmath.models.Model`, e.g. from
:func:`~llmmath.models.from_hf_config`), a chip or a scale-up system, a chip count,
weight and KV precisions (names or bytes per element), a context and a placement, and
returns a :class:`Plan`. Every time in it is a roofline **floor** and every rate a
**ceiling**: a real engine is slower (kernel gaps, imperfect overlap, communication,
scheduling, uneven expert load), never faster.

The placement (the wide-EP serving layout of chapter 6)::

    chips per replica  n_r = pp * tp * dp        (replicas = n_chips / n_r, each serving its own users)
    a pipeline stage   tp * dp chips: attention split tp ways over heads, dp groups of sequences;
                       routed experts spread over all tp * dp chips (ep of them by expert, the rest
                       by tensor-splitting each expert), everything else replicated over the dp groups

Per chip, for ``B_r`` sequences of context L on one replica (b_w, b_kv bytes per element)::

    weights  = max over stages s of [N_other,s / tp + R_s] b_w      the busiest stage's chip: its layers, the
                                                    embedding on the first, the head on the last (Model.stage_params);
                                                    R_s = n_moe,s ceil(E/ep) P_e ep / (tp dp): its routed experts on
                                                    the fullest chip (= N_routed,s / (tp dp) when ep divides E)
    kv       = B_r kv_seq(L) / (dp tp_kv pp)          tp_kv = min(tp, n_kv) (1 for MLA: the latent is shared)
    t_compute = B_r (2 N_mm + a(L)) / (n_r F)
    t_memory  = [N_other_read / tp + R frac(B_r / pp)] b_w / W + kv / W
    step time = max(t_compute, t_memory)              one new token for each of the B_r sequences

``kv_seq(L)`` counts sliding-window layers (:meth:`~llmmath.models.Model.kv_bytes_per_sequence`);
``frac`` is the expected fraction of experts some token of a micro-batch touches,
``1 - (1 - k/E)^tokens``. Pipeline stages do not change the step time (chapter 6, claim 21):
each stage reads its weights once per micro-batch, ``pp`` micro-batches per step.

Sources of the method: chapters 1-3, 6 and 8 of the course; Pope et al., "Efficiently
Scaling Transformer Inference" (MLSys 2023); the JAX scaling book, "All about transformer
inference". Published measurements to hold it against: ``data/serving_measurements.toml``
(:func:`measurements`, :func:`measured_vs_floor`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import _catalog, hardware, models
from ._validate import at_least, non_negative, positive, positive_int, scalar, whole
from .hardware import default_compute_dtype
from .units import dtype_bytes, dtype_label, fmt_bytes, fmt_count, fmt_seconds

__all__ = ["Placement", "Operating", "Plan", "plan", "decode_sweep", "measurements", "MeasuredVsFloor",
           "measured_vs_floor", "FLOOR_NOTE"]

FLOOR_NOTE = ("Every time in this plan is a roofline floor (a lower bound) and every rate a ceiling (an upper "
              "bound): communication, launch gaps, imperfect overlap, uneven expert load and scheduling are not "
              "counted, so a real engine is slower than every number here, never faster.")

NO_BALANCE = ("KV reads outrun compute: at this context one more sequence adds more HBM read time than compute "
              "time, so no batch makes the step compute-bound")


@dataclasses.dataclass(frozen=True)
class Placement:
    """How one replica is laid out: ``tp`` (tensor), ``ep`` (expert), ``dp`` (attention data) and ``pp`` (pipeline).

    ``chips_per_replica = pp * tp * dp``; ``ep`` (<= ``tp * dp``) only says over how many chips
    each layer's routed experts are spread whole (the rest of the stage splits each expert).
    """

    tp: int = 1
    ep: int = 1
    dp: int = 1
    pp: int = 1

    @property
    def chips_per_replica(self) -> int:
        return self.pp * self.tp * self.dp

    @property
    def stage_chips(self) -> int:
        return self.tp * self.dp


@dataclasses.dataclass(frozen=True)
class Operating:
    """One decode operating point of a :class:`Plan` (SI units; per-chip rates are ceilings).

    ``batch``: sequences decoding at once over the whole deployment; ``step_time_s``: the floor
    of one step (every sequence gets one token); ``binds``: ``"compute"``, ``"HBM bandwidth
    (weights)"`` or ``"HBM bandwidth (KV cache)"``; ``fits``: its KV cache fits beside the weights;
    ``usd_per_million_tokens``: dollars per million output tokens, None when no price was given.
    """

    batch: float
    step_time_s: float
    compute_s: float
    weight_s: float
    kv_s: float
    tokens_per_s_per_user: float
    tokens_per_s_per_chip: float
    tokens_per_s: float
    chip_s_per_million_tokens: float
    usd_per_million_tokens: float | None
    binds: str
    fits: bool


def _bytes_apart(a: float, b: float) -> tuple[str, str]:
    """``a`` and ``b`` formatted with enough digits (3 to 8) that different values never read the same."""
    for digits in range(3, 9):
        sa, sb = fmt_bytes(a, digits), fmt_bytes(b, digits)
        if sa != sb or a == b:
            break
    return sa, sb


@dataclasses.dataclass(frozen=True)
class Plan:
    """A serving plan (see :func:`plan`). Bytes, seconds, tokens/s, dollars; all floors / ceilings.

    Attributes (selection): ``fits`` (the weights fit and the chosen batch's KV cache fits),
    ``weights_fit``, ``weight_bytes_per_chip``, ``kv_bytes_per_chip`` (the chosen batch's cache
    on each chip), ``kv_bytes_per_sequence`` (whole model), ``hbm_bytes_per_chip`` (the usable
    HBM: ``usable_hbm_fraction`` of the chip's; default 1.0, all of it), ``max_batch`` (at the
    context), ``max_context_at_batch`` (at the chosen batch; 0 if the weights do not fit, inf if
    every layer is windowed), ``balance_batch`` (compute = memory; inf if the KV reads alone
    outrun the compute, the reason then in ``no_balance_reason``), ``at_balance`` (None when
    there is no balance batch) and ``at_batch`` (:class:`Operating`), ``usd_per_chip_hour``
    (None when no price was given), ``ttft_s`` (time to first token of one ``prompt_tokens``
    prompt on an idle replica: its attention and other non-expert work on its own ``tp`` chips,
    its routed experts over the stage's ``tp x dp``), ``prefill_tokens_per_s_per_chip`` (compute-bound prefill
    ceiling), ``binds`` (at the chosen batch: compute, HBM bandwidth, or HBM capacity when it
    does not fit).
    """

    model: str
    chip: str
    n_chips: int
    placement: Placement
    replicas: int
    weight_dtype: str
    kv_dtype: str
    compute_dtype: str
    bytes_per_weight: float
    bytes_per_kv: float
    context: float
    prompt_tokens: int
    usd_per_chip_hour: float | None
    usable_hbm_fraction: float
    weights_fit: bool
    fits: bool
    weight_bytes_per_chip: float
    kv_bytes_per_chip: float
    kv_bytes_per_sequence: float
    hbm_bytes_per_chip: float
    max_batch: float
    max_context_at_batch: float
    balance_batch: float
    no_balance_reason: str | None
    at_balance: Operating | None
    at_batch: Operating
    ttft_s: float
    prefill_tokens_per_s_per_chip: float
    binds: str
    note: str = FLOOR_NOTE

    def _fits_text(self) -> str:
        """Why it fits or not: the per-chip bytes against the usable HBM."""
        usable = self.hbm_bytes_per_chip
        if not self.weights_fit:
            w, u = _bytes_apart(self.weight_bytes_per_chip, usable)
            return (f"no: the weights alone, {w} per chip, exceed the {u} usable (one replica spans "
                    f"{self.placement.chips_per_replica} chip(s); spread it with tp, ep and pp)")
        total = self.weight_bytes_per_chip + self.kv_bytes_per_chip
        t, u = _bytes_apart(total, usable)
        n = self.at_batch.batch
        why = (f"weights {fmt_bytes(self.weight_bytes_per_chip)} + KV cache {fmt_bytes(self.kv_bytes_per_chip)} "
               f"({n:,.0f} sequence{'' if n == 1 else 's'}) = {t} per chip, {'<=' if total <= usable else '>'} "
               f"{u} usable")
        return f"yes: {why}" if self.fits else f"no: {why}; at most {self.max_batch:,.0f} sequences fit"

    def rows(self) -> list[tuple[str, str]]:
        """(quantity, value) pairs for a table, values formatted with units (the note is :attr:`note`)."""
        p = self.placement
        ob, oc = self.at_balance, self.at_batch

        def op(o):
            usd = "(no price given)" if o.usd_per_million_tokens is None else f"${o.usd_per_million_tokens:.3g}"
            return [("  step time (floor)", fmt_seconds(o.step_time_s)),
                    ("  tokens/s per user (ceiling)", f"{o.tokens_per_s_per_user:,.1f}"),
                    ("  tokens/s per chip (ceiling)", f"{o.tokens_per_s_per_chip:,.0f}"),
                    ("  chip-seconds per 1M output tokens", f"{o.chip_s_per_million_tokens:,.1f}"),
                    ("  $ per 1M output tokens", usd),
                    ("  binding resource", o.binds + ("" if o.fits else " (does NOT fit in HBM)"))]

        largest = " = the largest that fits" if oc.batch == self.max_batch else ""
        if ob is None:              # no balance batch: one block, at the chosen batch
            blocks = [(f"at the chosen batch ({oc.batch:,.0f}{largest}; no balance batch)", "")] + op(oc)
        elif ob.batch == oc.batch:  # the chosen batch is the balance batch: one block
            blocks = [(f"at the chosen batch ({oc.batch:,.0f} = the balance batch{largest})", "")] + op(oc)
        else:
            blocks = ([(f"at the balance batch ({ob.batch:,.0f})", "")] + op(ob)
                      + [(f"at the chosen batch ({oc.batch:,.0f}{largest})", "")] + op(oc))
        bal = f"{self.balance_batch:,.0f}" if self.no_balance_reason is None else \
            "none (KV reads outrun compute: never compute-bound)"
        max_ctx = (f"{self.max_context_at_batch:,.0f} tokens" if math.isfinite(self.max_context_at_batch)
                   else "unlimited (every layer is windowed: the cache stops growing)")
        w, u = _bytes_apart(self.weight_bytes_per_chip, self.hbm_bytes_per_chip)
        f = self.usable_hbm_fraction
        chip_hbm = fmt_bytes(self.hbm_bytes_per_chip / f, 4)
        usable = (f"{chip_hbm}: all of the chip's (usable_hbm_fraction 1.0, the default; nothing kept back for "
                  f"activations or workspace)" if f == 1 else
                  f"{fmt_bytes(self.hbm_bytes_per_chip, 4)} = {f:.4g} x the chip's {chip_hbm} (usable_hbm_fraction "
                  f"{f:g}; the default 1.0 is all of it)")
        return [("model", self.model), ("chip x count", f"{self.chip} x {self.n_chips}"),
                ("placement", f"TP{p.tp} EP{p.ep} DP{p.dp} PP{p.pp}: {p.chips_per_replica} chips per replica, "
                              f"{self.replicas} replica(s)"),
                ("weights / KV / matmul", f"{self.weight_dtype} ({self.bytes_per_weight:g} B) / {self.kv_dtype} "
                                          f"({self.bytes_per_kv:g} B) / {self.compute_dtype}"),
                ("context", f"{self.context:,.0f} tokens"),
                ("usable HBM per chip", usable),
                ("weights per chip", f"{w} of {u} usable"),
                ("KV cache per sequence", fmt_bytes(self.kv_bytes_per_sequence)),
                ("fits", self._fits_text()),
                ("max batch at this context", f"{self.max_batch:,.0f}"),
                ("max context at the chosen batch", max_ctx),
                ("balance batch (compute = memory)", bal)] + blocks + [
                (f"time to first token, {self.prompt_tokens:,}-token prompt", fmt_seconds(self.ttft_s)),
                ("prefill tokens/s per chip (ceiling)", f"{self.prefill_tokens_per_s_per_chip:,.0f}"),
                ("binding resource at the chosen batch", self.binds)]

    def table(self) -> str:
        """The plan as a two-column text table, then :attr:`note` (floors and ceilings) as a sentence."""
        rows = self.rows()
        w = max(len(k) for k, _ in rows)
        return "\n".join(f"{k:<{w}}  {v}" for k, v in rows) + "\n" + self.note

    def to_dict(self) -> dict:
        """Plain JSON-valid values: floats, ints, strings, None; never inf or NaN.

        A quantity with no finite value is None with its reason beside it: ``balance_batch`` (no
        balance batch; ``no_balance_reason``), ``max_context_at_batch`` (every layer windowed:
        ``max_context_reason``). No price gives ``usd_per_chip_hour`` and every
        ``usd_per_million_tokens`` None; no balance batch gives ``at_balance`` None.
        """
        def clean(v):
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            return v
        d = clean(dataclasses.asdict(self))
        if not math.isfinite(self.max_context_at_batch):
            d["max_context_reason"] = "every layer is windowed: the cache stops growing, so no context is too long"
        return d


def _chip_and_count(chip, n_chips):
    """A Chip and a chip count from a chip or system name (a system gives its chip and, by default, its size).

    Raises:
        KeyError: a name that is neither a chip nor a system; the message suggests the closest of
            both (``'h100'``: h100-sxm, h100-pcie ...) and lists every valid name.
        TypeError: neither a string nor a :class:`~llmmath.hardware.Chip`.
    """
    if isinstance(chip, str):
        chips, systems = hardware.catalog(), hardware.systems()
        key = _catalog.lookup({**systems, **chips}, chip, "chip or system")[0]   # a chip wins a shared name
        if key not in chips:
            sy = systems[key]
            if not sy.chip:
                raise KeyError(f"system {sy.key!r} names no chip in the hardware catalog; give a chip instead "
                               f"(chips: {', '.join(hardware.names())})")
            return hardware.get(sy.chip), positive_int("n_chips", sy.packages if n_chips is None else n_chips)
    c = hardware.get(chip)
    return c, positive_int("n_chips", 1 if n_chips is None else n_chips)


def _check_placement(m: models.Model, n_chips: int, pl: Placement) -> int:
    for f in ("tp", "ep", "dp", "pp"):
        positive_int(f, getattr(pl, f))
    if n_chips % pl.chips_per_replica:
        raise ValueError(f"n_chips={n_chips} is not a multiple of pp x tp x dp = {pl.pp} x {pl.tp} x {pl.dp} = "
                         f"{pl.chips_per_replica} (chips per replica); allowed: a multiple of it")
    if pl.pp > m.n_layers:
        raise ValueError(f"pp={pl.pp} stages but {m.key} has {m.n_layers} layers; allowed: 1..{m.n_layers}")
    if m.n_heads % pl.tp:
        raise ValueError(f"tp={pl.tp} must divide {m.key}'s {m.n_heads} attention heads; allowed: "
                         f"{[d for d in range(1, m.n_heads + 1) if m.n_heads % d == 0]}")
    if pl.ep > 1 and not m.is_moe:
        raise ValueError(f"ep={pl.ep} but {m.key} is dense (no experts); allowed: ep=1")
    if pl.ep > pl.stage_chips:
        raise ValueError(f"ep={pl.ep} exceeds the chips of a stage, tp x dp = {pl.stage_chips}; allowed: 1.."
                         f"{pl.stage_chips}")
    if pl.stage_chips % pl.ep:
        raise ValueError(f"ep={pl.ep} must divide the stage's tp x dp = {pl.stage_chips} chips (the rest of "
                         f"the stage splits each expert); allowed: {[d for d in range(1, pl.stage_chips + 1) if pl.stage_chips % d == 0]}")
    return n_chips // pl.chips_per_replica


class _Setup:
    """The per-chip quantities a plan needs (internal)."""

    def __init__(self, m, c, pl, weight_dtype, kv_dtype, compute_dtype, usable):
        self.m, self.c, self.pl = m, c, pl
        self.b_w, self.b_kv = dtype_bytes(weight_dtype), dtype_bytes(kv_dtype)
        self.compute = compute_dtype or default_compute_dtype(c, weight_dtype)
        self.F = c.flops_per_s(self.compute)
        self.W = c.hbm_bytes_per_s
        self.C = usable * c.hbm_bytes
        self.routed = m.n_moe_layers * m.n_experts * m.expert_params
        self.other = m.total_params - self.routed
        # routed experts on the fullest chip of a step (all pp stages' shares): ceil(E / ep) whole experts per
        # expert-parallel rank, each split over the stage_chips / ep chips of that rank
        experts_per_rank = -(-m.n_experts // pl.ep) if m.is_moe else 0
        self.routed_chip = m.n_moe_layers * experts_per_rank * m.expert_params * pl.ep / pl.stage_chips
        # held: a chip of the busiest pipeline stage (its layers; the embedding on the first, the head on the last)
        moe_s, other_s = m.stage_params(pl.pp)
        routed_s = moe_s * experts_per_rank * m.expert_params * pl.ep / pl.stage_chips
        self.weight_bytes_per_chip = float(np.max(other_s / pl.tp + routed_s)) * self.b_w
        self.tp_kv = 1 if m.is_mla else min(pl.tp, m.n_kv_heads)
        self.kv_split = pl.dp * self.tp_kv * pl.pp            # one sequence's cache spread over this many chips
        self.free = self.C - self.weight_bytes_per_chip
        lookup = m.embedding_params if not m.tied_embeddings else 0
        self.other_read = self.other - lookup                 # the untied input table is looked up, not read

    def kv_seq(self, L):
        return np.asarray(self.m.kv_bytes_per_sequence(L, self.b_kv), dtype=float)

    def step(self, B_r, L):
        """(compute_s, weight_s, kv_s) of one replica's decode step with B_r sequences at context L."""
        m, pl = self.m, self.pl
        n_r = pl.chips_per_replica
        compute = B_r * (2.0 * m.matmul_params_per_token + np.asarray(m.attention_flops_per_token(L))) / (n_r * self.F)
        tokens_per_microbatch = np.maximum(B_r / pl.pp, 1.0)
        frac = 1.0 - (1.0 - m.experts_per_token / m.n_experts) ** tokens_per_microbatch if m.is_moe else 0.0
        rows = np.minimum(B_r / pl.dp, m.vocab) * m.d_model if not m.tied_embeddings else 0.0
        weights = (self.other_read / pl.tp + self.routed_chip * frac + rows / pl.tp) * self.b_w / self.W
        kv = B_r * self.kv_seq(L) / self.kv_split / self.W       # each chip reads the cache it holds, once
        return compute, weights, kv


def _operating(s: _Setup, batch_total, replicas, L, price, max_batch) -> Operating:
    """The decode operating point at ``batch_total`` sequences; ``price``: dollars per chip-hour or None."""
    pl = s.pl
    B_r = batch_total / replicas
    comp, w, kv = (float(x) for x in s.step(B_r, L))
    t = max(comp, w + kv)
    n = replicas * pl.chips_per_replica
    binds = "compute" if comp >= w + kv else ("HBM bandwidth (KV cache)" if kv > w else "HBM bandwidth (weights)")
    per_tok_chip_s = n * t / batch_total
    return Operating(batch=float(batch_total), step_time_s=t, compute_s=comp, weight_s=w, kv_s=kv,
                     tokens_per_s_per_user=1.0 / t, tokens_per_s_per_chip=batch_total / (t * n),
                     tokens_per_s=batch_total / t, chip_s_per_million_tokens=per_tok_chip_s * 1e6,
                     usd_per_million_tokens=None if price is None else per_tok_chip_s * 1e6 * price / 3600.0,
                     binds=binds, fits=bool(batch_total <= max_batch))


def _context_for_kv(m: models.Model, kv_bytes: float, b_kv: float) -> float:
    """Largest context whose one-sequence cache is at most ``kv_bytes`` (inverts kv_bytes_per_sequence)."""
    per_layer = m.kv_bytes_per_token_per_layer(b_kv)
    positions = kv_bytes / per_layer                       # n_full L + n_win min(L, w)
    if not m.n_window_layers:
        return math.floor(positions / m.n_layers)
    w = m.sliding_window
    if positions <= m.n_layers * w:
        return math.floor(positions / m.n_layers)
    if not m.n_full_attention_layers:
        return math.inf                                    # every layer windowed: the cache stops growing
    return math.floor((positions - m.n_window_layers * w) / m.n_full_attention_layers)


def plan(model, chip, n_chips=None, context=8192, batch=None, *, weight_dtype="bf16", kv_dtype="bf16",
         compute_dtype=None, tp=1, ep=1, dp=1, pp=1, prompt_tokens=None, usd_per_chip_hour=None,
         usable_hbm_fraction=1.0) -> Plan:
    """A roofline serving plan for ``model`` on ``n_chips`` of ``chip`` (see the module docstring).

    Args:
        model: catalog name or :class:`~llmmath.models.Model` (e.g. from ``from_hf_config``).
        chip: chip name (``"h200"``) or scale-up system name (``"gb200-nvl72"``: its chip, and by
            default its package count as ``n_chips``).
        n_chips: chips in the deployment (default 1, or the system's packages).
        context: L, tokens of context per sequence during decode (>= 1).
        batch: sequences decoding at once over the whole deployment; default the largest that
            fits (:attr:`Plan.max_batch`), or 1 if none does.
        weight_dtype, kv_dtype: a format name (``bf16, fp8, fp4``...) or bytes per element (0.5625).
        compute_dtype: matmul precision (default: ``weight_dtype`` where the chip has it, else bf16).
        tp, ep, dp, pp: the placement of one replica (:class:`Placement`); replicas = n_chips / (pp tp dp).
        prompt_tokens: prompt length for the time to first token (default ``context``).
        usd_per_chip_hour: a rental price you supply (the catalog holds no prices); without it the
            plan's price and dollars per million output tokens are None.
        usable_hbm_fraction: share of each chip's HBM for weights + KV cache, in (0, 1] (default
            1.0: all of it, the roofline's most optimistic capacity; an engine keeps some back for
            activations and workspace, e.g. vLLM's ``gpu_memory_utilization`` defaults to 0.9).

    Returns:
        :class:`Plan`. Times are floors, rates ceilings (:data:`FLOOR_NOTE`).

    Raises:
        ValueError: a bad number (context < 1, batch <= 0, fraction outside (0, 1]...), a placement
            that does not divide the chips, heads or experts (the message says what is allowed).
        KeyError: unknown model, chip or system, or dtype name (with the closest valid names).
        TypeError: a boolean or string where a number is expected.
    """
    m = models.get(model)
    c, n = _chip_and_count(chip, n_chips)
    pl = Placement(positive_int("tp", tp), positive_int("ep", ep), positive_int("dp", dp), positive_int("pp", pp))
    replicas = _check_placement(m, n, pl)
    L = float(at_least("context", scalar("context", context), 1, "token"))
    usable = float(positive("usable_hbm_fraction", scalar("usable_hbm_fraction", usable_hbm_fraction)))
    if usable > 1:
        raise ValueError(f"usable_hbm_fraction must be in (0, 1], got {usable_hbm_fraction!r}")
    price = None if usd_per_chip_hour is None else float(positive("usd_per_chip_hour", scalar("usd_per_chip_hour",
                                                                                             usd_per_chip_hour)))
    T = int(whole("prompt_tokens", scalar("prompt_tokens", L if prompt_tokens is None else prompt_tokens), 1))
    s = _Setup(m, c, pl, weight_dtype, kv_dtype, compute_dtype, usable)

    weights_fit = s.free >= 0
    per_seq_chip = float(s.kv_seq(L)) / s.kv_split
    max_b_r = math.floor(max(s.free, 0.0) / per_seq_chip) if weights_fit else 0
    max_batch = float(max_b_r * replicas)
    B = max(max_batch, 1.0) if batch is None else float(positive("batch", scalar("batch", batch)))
    B_r = B / replicas
    max_ctx = _context_for_kv(m, max(s.free, 0.0) * s.kv_split / B_r, s.b_kv) if weights_fit else 0.0

    # balance: B_r (2 N_mm + a L)/(n_r F) = weights (all experts read) + B_r (kv_seq / (dp tp_kv) + row) / W
    n_r = pl.chips_per_replica
    per_seq_compute = (2.0 * m.matmul_params_per_token + float(m.attention_flops_per_token(L))) / (n_r * s.F)
    per_seq_mem = (float(s.kv_seq(L)) / s.kv_split
                   + (0 if m.tied_embeddings else m.d_model * s.b_w / (pl.dp * pl.tp))) / s.W
    w_full = (s.other_read / pl.tp + s.routed_chip) * s.b_w / s.W
    margin = per_seq_compute - per_seq_mem
    balance = w_full / margin * replicas if margin > 0 else math.inf

    at_batch = _operating(s, B, replicas, L, price, max_batch)
    at_balance = _operating(s, balance, replicas, L, price, max_batch) if math.isfinite(balance) else None

    # prefill: one prompt on an idle replica, through the stages in turn. Its attention, dense layers, shared
    # experts and head run on its own attention data-parallel group (tp chips); only the routed experts it picks
    # are spread over the stage's tp x dp chips. MLA in its cheaper up-projected (non-absorbed) form.
    attn_prefill = float(m.prefill_attention_flops(T, absorbed=False))
    prefill_flops = T * 2.0 * m.matmul_params_per_token + attn_prefill
    routed_flops = T * 2.0 * m.n_moe_layers * m.experts_per_token * m.expert_params
    frac = 1.0 - (1.0 - m.experts_per_token / m.n_experts) ** T if m.is_moe else 0.0
    read_s = (s.other_read / pl.tp + s.routed_chip * frac) * s.b_w / s.W   # each chip its own share
    ttft = max((prefill_flops - routed_flops) / (pl.tp * s.F) + routed_flops / (pl.stage_chips * s.F), read_s)
    prefill_rate = s.F * T / prefill_flops                 # compute-bound, per chip

    if not weights_fit:
        binds = "HBM capacity (the weights alone do not fit)"
    elif not at_batch.fits:
        binds = "HBM capacity (the KV cache of this batch does not fit)"
    else:
        binds = at_batch.binds
    return Plan(model=m.key, chip=c.key, n_chips=n, placement=pl, replicas=replicas,
                weight_dtype=dtype_label(weight_dtype), kv_dtype=dtype_label(kv_dtype), compute_dtype=s.compute,
                bytes_per_weight=s.b_w, bytes_per_kv=s.b_kv, context=L, prompt_tokens=T, usd_per_chip_hour=price,
                usable_hbm_fraction=usable, weights_fit=bool(weights_fit), fits=bool(weights_fit and at_batch.fits),
                weight_bytes_per_chip=float(s.weight_bytes_per_chip), kv_bytes_per_chip=float(B_r * per_seq_chip),
                kv_bytes_per_sequence=float(s.kv_seq(L)), hbm_bytes_per_chip=float(s.C), max_batch=max_batch,
                max_context_at_batch=float(max_ctx), balance_batch=float(balance),
                no_balance_reason=None if math.isfinite(balance) else NO_BALANCE, at_balance=at_balance,
                at_batch=at_batch, ttft_s=float(ttft),
                prefill_tokens_per_s_per_chip=float(prefill_rate), binds=binds)


def decode_sweep(model, chip, n_chips=None, context=8192, batches=(1,), *, weight_dtype="bf16", kv_dtype="bf16",
                 compute_dtype=None, tp=1, ep=1, dp=1, pp=1, usable_hbm_fraction=1.0) -> dict:
    """The decode floor of :func:`plan` over many batches at once (for plots and explorers).

    ``batches``: sequences over the whole deployment (array, each > 0). Returns a dict of arrays
    shaped like ``batches``: ``step_time_s``, ``compute_s``, ``weight_s``, ``kv_s``,
    ``tokens_per_s_per_chip`` and ``tokens_per_s_per_user`` (ceilings), ``fits`` (bool: the KV
    cache fits beside the weights), and the scalars ``max_batch`` and ``balance_batch`` of
    the same plan. Same arguments and errors as :func:`plan`.
    """
    B = positive("batches", batches)
    p = plan(model, chip, n_chips, context=context, batch=1, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
             compute_dtype=compute_dtype, tp=tp, ep=ep, dp=dp, pp=pp, usable_hbm_fraction=usable_hbm_fraction)
    s = _Setup(models.get(model), _chip_and_count(chip, n_chips)[0], p.placement, weight_dtype, kv_dtype, compute_dtype,
               float(usable_hbm_fraction))
    comp, w, kv = np.broadcast_arrays(*s.step(B / p.replicas, p.context))
    t = np.maximum(comp, w + kv)
    return {"step_time_s": t, "compute_s": comp, "weight_s": w, "kv_s": kv,
            "tokens_per_s_per_chip": B / (t * p.n_chips), "tokens_per_s_per_user": 1.0 / t,
            "fits": B <= p.max_batch, "max_batch": p.max_batch, "balance_batch": p.balance_batch}


# ---------------------------------------------------------------------------
# Held against reality: published measured serving results
# ---------------------------------------------------------------------------

def measurements() -> dict:
    """Published, measured serving throughputs (``data/serving_measurements.toml``), by key.

    Each entry: model, chip, chips, placement, dtypes, phase (``decode``, ``prefill`` or
    ``mixed``), the measured tokens/s per chip, the workload lengths, source URL and notes
    (what was counted, what is assumed, what could not be re-verified).
    """
    return dict(_catalog.load("serving_measurements.toml")["measurements"])


@dataclasses.dataclass(frozen=True)
class MeasuredVsFloor:
    """One published result beside the roofline: ``ratio = measured / ceiling`` (<= 1 if the floor holds)."""

    key: str
    phase: str
    measured_tokens_per_s_per_chip: float
    ceiling_tokens_per_s_per_chip: float
    ratio: float
    binds: str
    source: str


def _ceiling(e: dict) -> tuple[float, str]:
    """Roofline ceiling of tokens/s per chip for one measurement entry."""
    kw = dict(weight_dtype=e["weight_dtype"], kv_dtype=e["kv_dtype"], compute_dtype=e.get("compute_dtype"),
              tp=e.get("tp", 1), ep=e.get("ep", 1), dp=e.get("dp", 1))
    isl, osl = int(e["input_tokens"]), int(e.get("output_tokens", 1))
    chips = int(e["chips"])
    if e["phase"] == "prefill":
        p = plan(e["model"], e["chip"], chips, context=isl, batch=1, prompt_tokens=isl, **kw)
        return p.prefill_tokens_per_s_per_chip, "compute (prefill)"
    ctx = isl + osl / 2.0                                  # mean context over the decode
    batch = e.get("batch_per_chip")
    p = plan(e["model"], e["chip"], chips, context=ctx, batch=None if batch is None else batch * chips, **kw)
    dec = p.at_batch
    if e["phase"] == "decode":
        return dec.tokens_per_s_per_chip, dec.binds
    # mixed: the same chips prefill isl tokens and decode osl tokens per request
    chip_s = isl / p.prefill_tokens_per_s_per_chip + osl / dec.tokens_per_s_per_chip
    return osl / chip_s, f"prefill + decode ({dec.binds})"


def measured_vs_floor() -> list[MeasuredVsFloor]:
    """Every published measurement against the planner's ceiling for the same model, chips and precisions.

    The ceiling is the plan's tokens/s per chip: decode at the published batch (or, where the
    source gives none, the largest batch that fits), prefill compute-bound at the published
    input length, and for ``mixed`` results (MLPerf offline) the output tokens per chip-second
    when the same chips also prefill each request's input.
    """
    out = []
    for key, e in measurements().items():
        ceil, binds = _ceiling(e)
        meas = float(e["measured_tokens_per_s_per_chip"])
        out.append(MeasuredVsFloor(key, e["phase"], meas, float(ceil), meas / ceil, binds, e["url"]))
    return out
