"""A serving plan on the roofline: does it fit, how many users, how fast, at what cost (chapter 11).

:func:`plan` takes a model (a catalog name, a :class:`~llmmath.models.Model`, e.g. from
:func:`~llmmath.models.from_hf_config`), a chip or a scale-up system, a chip count,
weight and KV precisions (names or bytes per element), a context and a placement, and
returns a :class:`Plan`. Every time in it is a roofline **floor** and every rate a
**ceiling**: a real engine is slower (kernel gaps, imperfect overlap, communication,
scheduling, uneven expert load), never faster.

Every per-chip number comes from one :class:`~llmmath.deployment.Deployment` (the placement
``tp, ep, dp, pp`` of chapter 6's wide-EP layout, the precisions, the chips): weights on the
fullest chip of the busiest pipeline stage, that stage's share of the KV cache, and a decode step
of ``pp`` micro-batches through the slowest stage, each reading its non-expert weights, the
experts the busiest expert-parallel rank is expected to touch, and its sequences' KV::

    step time = max(t_compute, t_weights + t_kv)      one new token for each of the B_r sequences

See :mod:`llmmath.deployment` for the terms. With equal stages the pipeline does not change
the step time (chapter 6, claim 21); an uneven split makes it longer.

Sources of the method: chapters 1-3, 6 and 8 of the course; Pope et al., "Efficiently
Scaling Transformer Inference" (MLSys 2023); the JAX scaling book, "All about transformer
inference". Published measurements to hold it against: ``data/serving_measurements.toml``
(:func:`measurements`, :func:`measured_vs_floor`).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import _catalog, models
from .deployment import Deployment, Placement, placement_hint
from .predict import Prediction, calibrated, predict
from ._validate import at_least, flag, positive, scalar, whole
from .units import dtype_bytes, fmt_bytes, fmt_seconds

__all__ = ["Placement", "Operating", "Plan", "plan", "decode_sweep", "kv_logs", "KvVsLogged", "kv_capacity_vs_logged",
           "measurements", "MeasuredVsFloor",
           "measured_vs_floor", "FLOOR_NOTE", "predict", "Prediction", "predicted_vs_measured", "REGIMES", "regime",
           "calibration_keys", "split", "SPLITS", "band", "row_band", "regime_of", "assumed_rates",
           "prediction_spread", "latency_curves", "predicted_curve", "mtp_depth_measurements", "prediction_error", "trtllm_bench_limits"]

FLOOR_NOTE = ("Every time in this plan is a roofline floor (a lower bound) and every rate a ceiling (an upper "
              "bound): communication, launch gaps, imperfect overlap, uneven expert load and scheduling are not "
              "counted, so a real engine is slower than every number here, never faster.")

NO_BALANCE = ("KV reads outrun compute: at this context one more sequence adds more HBM read time than compute "
              "time, so no batch makes the step compute-bound")


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
    on each chip), ``kv_bytes_per_sequence`` (whole model, the linear layers' fixed state included),
    ``state_bytes_per_sequence`` (that state alone: 0 without linear layers), ``hbm_bytes_per_chip`` (the memory for weights and
    KV: by default an engine's, ``gpu_memory_utilization`` of the runtime's total less its reserve; with
    ``usable_hbm_fraction`` that share of the datasheet HBM), ``memory_view`` (``"vllm"``, ``"sglang"`` or
    ``"datasheet"``), ``reserve_bytes`` (what the engine holds before its KV cache, by kind), ``kv_cache_tokens``
    (the tokens of KV one replica holds, as the engine logs them), ``max_batch`` (at the
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
    memory_view: str
    reserve_bytes: dict
    kv_cache_tokens: float
    weights_fit: bool
    fits: bool
    weight_bytes_per_chip: float
    kv_bytes_per_chip: float
    kv_bytes_per_sequence: float
    state_bytes_per_sequence: float
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
    fix: str = ""
    note: str = FLOOR_NOTE

    def _fits_text(self) -> str:
        """Why it fits or not: the per-chip bytes against the usable HBM."""
        usable = self.hbm_bytes_per_chip
        if not self.weights_fit:
            w, u = _bytes_apart(self.weight_bytes_per_chip, usable)
            return (f"no: the weights alone, {w} per chip, exceed the {u} usable (one replica spans "
                    f"{self.placement.chips_per_replica} chip(s); "
                    + (self.fix or "no placement of these chips holds it: use more chips, or smaller weights "
                                   "(weight_dtype fp8)") + ")")
        total = self.weight_bytes_per_chip + self.kv_bytes_per_chip
        t, u = _bytes_apart(total, usable)
        n = self.at_batch.batch
        why = (f"weights {fmt_bytes(self.weight_bytes_per_chip)} + KV cache {fmt_bytes(self.kv_bytes_per_chip)} "
               f"({n:,.0f} sequence{'' if n == 1 else 's'}) = {t} per chip, {'<=' if total <= usable else '>'} "
               f"{u} usable")
        return f"yes: {why}" if self.fits else (f"no: {why}; at most {self.max_batch:,.0f} sequences fit"
                                                 + (f"; {self.fix}" if self.fix and self.max_batch < 1 else ""))

    def rows(self) -> list[tuple[str, str]]:
        """(quantity, value) pairs for a table, values formatted with units (the note is :attr:`note`)."""
        p = self.placement
        ob, oc = self.at_balance, self.at_batch

        def op(o):
            if not self.weights_fit:                   # nothing can run: no times, no price
                return [("  step time, tokens/s, cost", "none: the weights do not fit")]
            if not o.fits:                             # a batch whose cache does not fit: its floor, not a price
                usd = f"not priced: {o.batch:,.0f} sequences' KV cache does not fit"
            else:
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
        if self.memory_view == "datasheet":
            usable = (f"{chip_hbm}: all of the datasheet's (usable_hbm_fraction 1.0; nothing kept back for "
                      f"activations or workspace)" if f == 1 else
                      f"{fmt_bytes(self.hbm_bytes_per_chip, 4)} = {f:.4g} x the datasheet's {chip_hbm} "
                      f"(usable_hbm_fraction {f:g})")
        else:
            kept = ", ".join(f"{k} {fmt_bytes(v, 3)}" for k, v in self.reserve_bytes.items())
            usable = f"{fmt_bytes(self.hbm_bytes_per_chip, 4)} as {self.memory_view} sizes it ({kept} kept back)"
        return [("model", self.model), ("chip x count", f"{self.chip} x {self.n_chips}"),
                ("placement", f"TP{p.tp} EP{p.ep} DP{p.dp} PP{p.pp}: {p.chips_per_replica} chips per replica, "
                              f"{self.replicas} replica(s)"),
                ("weights / KV / matmul", f"{self.weight_dtype} ({self.bytes_per_weight:g} B) / {self.kv_dtype} "
                                          f"({self.bytes_per_kv:g} B) / {self.compute_dtype}"),
                ("context", f"{self.context:,.0f} tokens"),
                ("usable HBM per chip", usable),
                ("weights per chip", f"{w} of {u} usable"),
                ("KV cache per sequence (all chips)", fmt_bytes(self.kv_bytes_per_sequence) + (
                    f" ({fmt_bytes(self.kv_bytes_per_sequence - self.state_bytes_per_sequence)} of K/V that grows with "
                    f"the context, {fmt_bytes(self.state_bytes_per_sequence)} of fixed linear-layer state)"
                    if self.state_bytes_per_sequence else "")),
                ("fits", self._fits_text()),
                ("KV cache tokens per replica (as the engine logs them)", f"{self.kv_cache_tokens:,.0f}"),
                ("max batch at this context", f"{self.max_batch:,.0f}"),
                ("max context at the chosen batch", max_ctx),
                ("balance batch (compute = memory)", bal)] + blocks + [
                (f"time to first token, {self.prompt_tokens:,}-token prompt",
                 fmt_seconds(self.ttft_s) if self.weights_fit else "none: the weights do not fit"),
                ("prefill tokens/s per chip (ceiling)",
                 f"{self.prefill_tokens_per_s_per_chip:,.0f}" if self.weights_fit else "none: the weights do not fit"),
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


def _operating(d: Deployment, batch_total, L, price, max_batch) -> Operating:
    """The decode operating point at ``batch_total`` sequences; ``price``: dollars per chip-hour or None."""
    comp, w, kv = (float(x) for x in d.decode_step(batch_total, L))
    t = max(comp, w + kv)
    n = d.n_chips
    binds = "compute" if comp >= w + kv else ("HBM bandwidth (KV cache)" if kv > w else "HBM bandwidth (weights)")
    per_tok_chip_s = n * t / batch_total
    return Operating(batch=float(batch_total), step_time_s=t, compute_s=comp, weight_s=w, kv_s=kv,
                     tokens_per_s_per_user=1.0 / t, tokens_per_s_per_chip=batch_total / (t * n),
                     tokens_per_s=batch_total / t, chip_s_per_million_tokens=per_tok_chip_s * 1e6,
                     usd_per_million_tokens=(None if price is None or not batch_total <= max_batch
                                             else per_tok_chip_s * 1e6 * price / 3600.0),   # what cannot run: no price
                     binds=binds, fits=bool(batch_total <= max_batch))


def _balance_batch(d: Deployment, L: float) -> float:
    """Sequences over the deployment from which every stage is compute-bound with all its experts read.

    Per stage ``compute = a_s B`` and ``memory = w_s + b_s B`` (linear while the looked-up rows are fewer
    than the vocabulary), so stage ``s`` balances at ``w_s / (a_s - b_s)``; inf where ``a_s <= b_s`` (the KV
    reads outrun the compute)."""
    one, two = (d.decode_stages(k * d.replicas * d.placement.pp, L, routed_read="all") for k in (1.0, 2.0))
    a = two.compute_s - one.compute_s
    mem1, mem2 = one.weight_s + one.kv_s, two.weight_s + two.kv_s
    b = mem2 - mem1
    w = mem1 - b
    margin = a - b
    if np.any(margin <= 0):
        return math.inf
    return float(np.max(w / margin)) * d.replicas * d.placement.pp


def plan(model, chip, n_chips=None, context=8192, batch=None, *, weight_dtype="bf16", kv_dtype="bf16",
         compute_dtype=None, tp=1, ep=1, dp=1, pp=1, prompt_tokens=None, usd_per_chip_hour=None,
         usable_hbm_fraction=None, gpu_memory_utilization=None, engine="vllm", max_num_batched_tokens=None,
         max_num_seqs=None) -> Plan:
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
        usable_hbm_fraction, gpu_memory_utilization, engine, max_num_batched_tokens, max_num_seqs: the memory view, as
            :class:`~llmmath.deployment.Deployment`: by default the memory an engine gives its KV cache (vLLM's,
            ``gpu_memory_utilization`` 0.9 of the runtime's total less its reserve); ``usable_hbm_fraction=1.0``
            for the roofline's most optimistic capacity, all of the datasheet HBM.

    Returns:
        :class:`Plan`. Times are floors, rates ceilings (:data:`FLOOR_NOTE`).

    Raises:
        ValueError: a bad number (context < 1, batch <= 0, fraction outside (0, 1]...), a placement
            that does not divide the chips, heads or experts (the message says what is allowed).
        KeyError: unknown model, chip or system, or dtype name (with the closest valid names).
        TypeError: a boolean or string where a number is expected.
    """
    L = float(at_least("context", scalar("context", context), 1, "token"))
    price = None if usd_per_chip_hour is None else float(positive("usd_per_chip_hour", scalar("usd_per_chip_hour",
                                                                                             usd_per_chip_hour)))
    T = int(whole("prompt_tokens", scalar("prompt_tokens", L if prompt_tokens is None else prompt_tokens), 1))
    d = Deployment(model, chip, n_chips, tp=tp, ep=ep, dp=dp, pp=pp, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                   compute_dtype=compute_dtype, usable_hbm_fraction=usable_hbm_fraction,
                   gpu_memory_utilization=gpu_memory_utilization, engine=engine,
                   max_num_batched_tokens=max_num_batched_tokens, max_num_seqs=max_num_seqs)
    m, c, n, pl, replicas = d.model, d.chip, d.n_chips, d.placement, d.replicas

    weights_fit = d.weights_fit
    max_batch = d.max_batch(L)
    B = max(max_batch, 1.0) if batch is None else float(positive("batch", scalar("batch", batch)))
    max_ctx = d.max_context(B)
    balance = _balance_batch(d, L)
    at_batch = _operating(d, B, L, price, max_batch)
    at_balance = _operating(d, balance, L, price, max_batch) if math.isfinite(balance) else None
    ttft = d.ttft_s(T)
    prefill_flops = T * 2.0 * m.matmul_params_per_token + float(m.prefill_attention_flops(T, absorbed=False))
    prefill_rate = d.flops_per_s * T / prefill_flops                 # compute-bound, per chip

    if not weights_fit:
        binds = "HBM capacity (the weights alone do not fit)"
    elif not at_batch.fits:
        binds = "HBM capacity (the KV cache of this batch does not fit)"
    else:
        binds = at_batch.binds
    return Plan(model=m.key, chip=c.key, n_chips=n, placement=pl, replicas=replicas,
                weight_dtype=d.weight_dtype, kv_dtype=d.kv_dtype, compute_dtype=d.compute_dtype,
                bytes_per_weight=d.b_w, bytes_per_kv=d.b_kv, context=L, prompt_tokens=T, usd_per_chip_hour=price,
                usable_hbm_fraction=d.usable_hbm_fraction, memory_view=d.memory_view,
                reserve_bytes=dict(d.reserve_bytes), kv_cache_tokens=d.kv_cache_tokens, weights_fit=bool(weights_fit), fits=bool(weights_fit and at_batch.fits),
                weight_bytes_per_chip=d.weight_bytes_per_chip, kv_bytes_per_chip=float(d.kv_bytes_per_chip(B, L)),
                kv_bytes_per_sequence=float(m.kv_bytes_per_sequence(L, d.b_kv)),
                state_bytes_per_sequence=float(m.held_state_bytes(L)),
                hbm_bytes_per_chip=d.usable_hbm_bytes,
                max_batch=max_batch,
                max_context_at_batch=float(max_ctx), balance_batch=float(balance),
                no_balance_reason=None if math.isfinite(balance) else NO_BALANCE, at_balance=at_balance,
                at_batch=at_batch, ttft_s=float(ttft),
                fix="" if max_batch >= 1 else placement_hint(
                    m, chip, n_chips, L, tp=tp, ep=ep, dp=dp, pp=pp, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                    compute_dtype=compute_dtype, usable_hbm_fraction=usable_hbm_fraction,
                    gpu_memory_utilization=gpu_memory_utilization, engine=engine),
                prefill_tokens_per_s_per_chip=float(prefill_rate), binds=binds)


def decode_sweep(model, chip, n_chips=None, context=8192, batches=(1,), *, weight_dtype="bf16", kv_dtype="bf16",
                 compute_dtype=None, tp=1, ep=1, dp=1, pp=1, usable_hbm_fraction=None, gpu_memory_utilization=None,
                 engine="vllm") -> dict:
    """The decode floor of :func:`plan` over many batches at once (for plots and explorers).

    ``batches``: sequences over the whole deployment (array, each > 0). Returns a dict of arrays
    shaped like ``batches``: ``step_time_s``, ``compute_s``, ``weight_s``, ``kv_s``,
    ``tokens_per_s_per_chip`` and ``tokens_per_s_per_user`` (ceilings), ``fits`` (bool: the KV
    cache fits beside the weights), and the scalars ``max_batch`` and ``balance_batch`` of
    the same plan. Same arguments and errors as :func:`plan`.
    """
    B = positive("batches", batches)
    mem = dict(usable_hbm_fraction=usable_hbm_fraction, gpu_memory_utilization=gpu_memory_utilization, engine=engine)
    p = plan(model, chip, n_chips, context=context, batch=1, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
             compute_dtype=compute_dtype, tp=tp, ep=ep, dp=dp, pp=pp, **mem)
    d = Deployment(model, chip, n_chips, tp=tp, ep=ep, dp=dp, pp=pp, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                   compute_dtype=compute_dtype, **mem)
    comp, w, kv = np.broadcast_arrays(*d.decode_step(B, p.context))
    t = np.maximum(comp, w + kv)
    return {"step_time_s": t, "compute_s": comp, "weight_s": w, "kv_s": kv,
            "tokens_per_s_per_chip": B / (t * p.n_chips), "tokens_per_s_per_user": 1.0 / t,
            "fits": B <= p.max_batch, "max_batch": p.max_batch, "balance_batch": p.balance_batch}


# ---------------------------------------------------------------------------
# Held against reality: published measured serving results
# ---------------------------------------------------------------------------

def kv_logs() -> dict:
    """``data/engine_kv_logs.toml``: serving engines' start-up logs (the KV cache they sized for a model on a GPU),
    each row with its source, split (``test``: entered after the memory model's form was fixed, with the code's
    count at entry in ``planned_at_entry``; ``validation``: seen while the form was chosen; ``out of scope``, with a
    reason) and what it logged."""
    return _catalog.load("engine_kv_logs.toml")["rows"]


@dataclasses.dataclass(frozen=True)
class KvVsLogged:
    """One engine log beside the planner's count: ``logged`` and ``planned`` in ``unit`` (``"tokens"`` or
    ``"GiB"``), ``ratio = planned / logged``."""

    key: str
    split: str
    engine: str
    unit: str
    logged: float
    planned: float
    deployment: Deployment

    @property
    def ratio(self) -> float:
        return self.planned / self.logged


def _log_chip(row: dict):
    """The row's chip: the catalog's, with the runtime total the log printed where it printed one; for a GPU
    outside the catalog, a chip that carries only that runtime total (its other figures never enter a KV count)."""
    from . import hardware
    runtime = row.get("runtime_memory_gib")
    runtime = None if runtime is None else float(runtime) * 2**30
    if row["gpu"] in hardware.names():
        c = hardware.get(row["gpu"])
        return c if runtime is None else dataclasses.replace(c, runtime_memory_bytes=runtime)
    if runtime is None:
        raise ValueError(f"engine_kv_logs.toml: {row['gpu']!r} is not a catalog chip and the row gives no "
                         f"runtime_memory_gib")
    return hardware.Chip(key=row["gpu"].lower().replace(" ", "-"), name=f"{row['gpu']} (its runtime memory only)",
                         vendor="NVIDIA", generation="", year=0, peak_flops_per_s={"bf16": 1.0}, hbm_bytes=runtime,
                         hbm_bytes_per_s=1.0, runtime_memory_bytes=runtime)


def kv_capacity_vs_logged(keys=None) -> list[KvVsLogged]:
    """Every row of :func:`kv_logs` (or ``keys``) beside the KV cache the planner gives the same start: the model,
    the GPUs, the placement, the engine's memory rule and fraction, its profiled token budget
    (:class:`~llmmath.deployment.Deployment`, engine view; :attr:`~llmmath.deployment.Deployment.kv_cache_tokens`,
    or the free bytes where the log gave GiB). Raises KeyError for an unknown key."""
    rows = kv_logs()
    out = []
    for key in (sorted(rows) if keys is None else keys):
        e = rows[key]
        d = Deployment(e["model"], _log_chip(e), int(e["gpus"]), tp=int(e.get("tp", 1)), pp=int(e.get("pp", 1)),
                       weight_dtype=e.get("weight_dtype", "bf16"), kv_dtype=e.get("kv_dtype", "bf16"),
                       engine=e["engine"], gpu_memory_utilization=float(e["fraction"]),
                       max_num_batched_tokens=e.get("max_num_batched_tokens"), max_num_seqs=e.get("max_num_seqs"))
        if "logged_kv_tokens" in e:
            out.append(KvVsLogged(key, e["split"], e["engine"], "tokens", float(e["logged_kv_tokens"]),
                                  d.kv_cache_tokens, d))
        else:
            out.append(KvVsLogged(key, e["split"], e["engine"], "GiB", float(e["logged_kv_gib"]),
                                  float(np.min(d.free_bytes_by_stage)) / 2**30, d))
    return out


def measurements() -> dict:
    """Published, measured serving throughputs (``data/serving_measurements.toml``), by key.

    Each entry: model, chip, chips, placement, dtypes, phase (``decode``, ``prefill`` or
    ``mixed``), the measured tokens/s per chip, the workload lengths, source URL and notes
    (what was counted, what is assumed, what could not be re-verified).
    """
    return dict(_catalog.load("serving_measurements.toml")["measurements"])


def _row(key: str) -> dict:
    """The published measurement ``key``; ``KeyError`` naming it if the ledger has none."""
    return _catalog.select(measurements(), [key], "published measurement", "serving_measurements.toml")[0][1]


def mtp_depth_measurements() -> dict:
    """Speculative decoding measured at several draft depths on one deployment (``data/serving_measurements.toml``
    [mtp_depth]), by key: ``row`` (the measurement whose deployment and workload it ran), ``mtp_tokens``,
    ``acceptance_length`` (mean tokens a verify step keeps) and ``tokens_per_s_per_user``, with url and source."""
    return dict(_catalog.load("serving_measurements.toml")["mtp_depth"])


REGIMES = ("dense", "MoE", "batch 1", "prefill")


def regime(key: str) -> str:
    """The regime a published measurement tests (one of :data:`REGIMES`): ``"batch 1"`` (one sequence decoding on
    the whole deployment: latency, not throughput), ``"prefill"`` (a prefill instance's input tokens), ``"MoE"`` (a
    mixture-of-experts model decoding or serving at a large batch) or ``"dense"``. Raises ``KeyError`` naming an
    unknown key."""
    e = _row(key)
    b = e.get("batch_per_chip")
    return regime_of(e["model"], e["phase"], None if b is None else b * e["chips"])


def prediction_error(ratios) -> tuple[float, float]:
    """How far measured / model ratios sit from 1: ``(median |ratio - 1|, share within 1.5x either way)``.
    Raises ValueError for no ratios or a ratio that is not a positive finite number."""
    r = np.asarray(ratios, dtype=float).ravel()
    if r.size == 0 or not np.all(np.isfinite(r) & (r > 0)):
        raise ValueError(f"ratios must be a non-empty array of positive finite numbers, got {ratios!r}")
    return float(np.median(np.abs(r - 1))), float(np.mean((r > 1 / 1.5) & (r < 1.5)))


def calibration_keys() -> list[str]:
    """The measurements a constant of :func:`predict` was set from (``data/engine_constants.toml`` [calibrated]
    ``calibrated_on``: keys, or prefixes ending in ``*``); every other row is a validation row (seen while the model's
    form was chosen; chapter 12)."""
    pats = calibrated()["calibrated_on"]
    return [k for k in measurements() if any(k.startswith(p[:-1]) if p.endswith("*") else k == p for p in pats)]


SPLITS = ("calibration", "validation", "test")


def split(key: str) -> str:
    """Which of :data:`SPLITS` a published measurement belongs to: ``"calibration"`` (a constant of :func:`predict`
    was set from it, :func:`calibration_keys`), ``"test"`` (the row's ``split`` field: it entered the ledger in a
    commit of its own after the last change to the model, with that code's prediction in ``predicted_at_entry``, and
    no change has been judged on it since) or ``"validation"`` (every other row: in view while the model's form was
    chosen). Raises ``KeyError`` naming an unknown key, ``ValueError`` for a ``split`` field that is not
    ``"validation"`` or ``"test"``."""
    e = _row(key)
    if key in calibration_keys():
        return "calibration"
    s = e.get("split", "validation")
    if s not in SPLITS[1:]:
        raise ValueError(f"{key}: split must be 'validation' or 'test' (calibration rows are named in "
                         f"engine_constants.toml), got {s!r}")
    return s


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


def _kv_share(e: dict) -> dict:
    """``{"usable_hbm_fraction": f}`` for a row that gives its engine's KV share of the HBM the weights leave
    (TensorRT-LLM's kv_cache_free_gpu_mem_fraction), else ``{}``: the ceiling and the prediction size the cache
    alike."""
    if "kv_cache_free_fraction" not in e:
        return {}
    d = Deployment(e["model"], e["chip"], int(e["chips"]), weight_dtype=e["weight_dtype"], kv_dtype=e["kv_dtype"],
                   compute_dtype=e.get("compute_dtype"), tp=e.get("tp", 1), ep=e.get("ep", 1), dp=e.get("dp", 1))
    w = float(np.max(d.weight_bytes_by_stage))
    return {"usable_hbm_fraction": (w + e["kv_cache_free_fraction"] * (d.chip.hbm_bytes - w)) / d.chip.hbm_bytes}


def _ceiling(e: dict) -> tuple[float, str]:
    """Roofline ceiling of tokens/s per chip for one measurement entry (its KV cache sized as :func:`_kv_share`
    says, as the prediction sizes it)."""
    kw = dict(weight_dtype=e["weight_dtype"], kv_dtype=e["kv_dtype"], compute_dtype=e.get("compute_dtype"),
              tp=e.get("tp", 1), ep=e.get("ep", 1), dp=e.get("dp", 1), **_kv_share(e))
    isl, osl = int(e["input_tokens"]), int(e.get("output_tokens", 1))
    chips = int(e["chips"])
    if e["phase"] == "prefill":
        p = plan(e["model"], e["chip"], chips, context=isl, batch=1, prompt_tokens=isl, **kw)
        return p.prefill_tokens_per_s_per_chip, "compute (prefill)"
    ctx = float(e.get("context_tokens", isl + osl / 2.0))  # the published mean KV length, else in + out/2
    batch = e.get("batch_per_chip")
    p = plan(e["model"], e["chip"], chips, context=ctx, batch=None if batch is None else batch * chips,
             prompt_tokens=isl, **kw)
    dec = p.at_batch
    if e["phase"] == "decode":
        # a step that emits up to 1 + mtp_tokens tokens (speculative decoding / MTP) is at least a one-token step
        return dec.tokens_per_s_per_chip * (1 + e.get("mtp_tokens", 0)), dec.binds
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


def _round_up(x: float, step: int) -> int:
    return step * math.ceil(x / step)


def trtllm_bench_limits(model, chip, n_chips: int, *, input_tokens: float, output_tokens: float, weight_dtype,
                        kv_dtype, pp: int = 1, kv_cache_free_fraction: float = 0.90) -> tuple[int, int]:
    """``(max_batch_size, max_num_tokens)``: the runtime limits ``trtllm-bench throughput`` sets when its command gives
    none (the TensorRT-LLM performance tables' runs), per engine rank.

    Our re-derivation of the tool's published heuristic (``tensorrt_llm/bench/build/tuning.py``:
    ``calc_engine_setting`` and ``finetune_setting``; ``bench/benchmark/utils/general.py``: ``get_settings``):

    1. KV bytes per token as the tool reads them from the Hugging Face config, ``2 x layers x max(tp,
       num_key_value_heads) x head_size x (1 byte for an FP8 KV cache, else 2)``, where an MLA model's config gives
       ``num_key_value_heads = n_heads`` and no ``head_dim`` (so ``head_size = d_model / n_heads``: 56 for DeepSeek-V3,
       2 x 128 x 56 = 14,336 values a layer, 25 times the 576 of its real compressed KV);
    2. requests that fit: ``kv_cache_free_fraction x (device GiB x tp x pp - engine GiB) / (KV GiB per token x
       (input + output))``, the engine's size being the checkpoint's stored elements x 0.5 (NVFP4), 1 (FP8) or 2
       bytes (a packed NVFP4 checkpoint stores about 0.5 + 1/16 elements per weight: two FP4 values a byte and an
       FP8 scale per 16);
    3. ``max_batch_size``: that count capped at 4,096, over ``pp``, rounded up to 32 (at least 64) below 256, to 128
       below 1,024, else to 256; ``max_num_tokens``: ``batch x (1 + input / output)`` capped at 32,768, rounded up
       to 256 (at least 2,048) below 4,096, to 512 below 8,192, else to 1,024 -- and, chunked prefill being off by
       default, at least ``input + max_batch_size`` so that a whole prompt fits one step.

    The device's memory is taken as the catalog's capacity in GB read as GiB (what the driver reports: 79.6 GiB
    for an 80 GB H100, 179 GiB for a 180 GB B200). With attention data parallelism (``enable_attention_dp``, the
    tables' MoE runs) each of the ``tp`` ranks schedules its own requests under these limits. Raises ``KeyError``
    for an unknown model or chip, ``ValueError`` for lengths below 1, a fraction outside (0, 1], a chip count that is
    not a multiple of ``pp``, an unknown weight precision or a deployment whose weights leave no memory.
    """
    from . import hardware
    m, c = models.get(model), hardware.get(chip)
    isl, osl = (float(positive(n, scalar(n, v))) for n, v in (("input_tokens", input_tokens),
                                                               ("output_tokens", output_tokens)))
    frac = float(scalar("kv_cache_free_fraction", kv_cache_free_fraction))
    if not 0 < frac <= 1:
        raise ValueError(f"kv_cache_free_fraction must be in (0, 1], got {kv_cache_free_fraction!r}")
    pp, n = int(whole("pp", pp)), int(whole("n_chips", n_chips))
    if n % pp:
        raise ValueError(f"n_chips={n} is not a whole number of pipeline stages pp={pp}; allowed: a multiple of pp")
    tp = n // pp
    try:
        w = dtype_bytes(weight_dtype)
    except KeyError as e:
        raise ValueError(f"weight_dtype must be a format name or bytes per weight: {e.args[0]}") from None
    per_elem, elems = (0.5, 0.5 + 1 / 16) if w < 1 else (1.0, 1.0) if w == 1 else (2.0, 1.0)
    kv_b = 1.0 if dtype_bytes(kv_dtype) <= 1 else 2.0           # the tool's FP8 KV cache, else 2 bytes
    kv_heads, head = (m.n_heads, m.d_model // m.n_heads) if m.is_mla else (m.n_kv_heads, m.head_dim)
    gib = 1024.0 ** 3
    kv_gib_per_token = 2 * m.n_layers * max(tp, kv_heads) * head * kv_b / gib
    free_gib = c.hbm_bytes / 1e9 * tp * pp - m.total_params * elems * per_elem / gib
    if free_gib <= 0:
        raise ValueError(f"{m.key}'s weights fill {tp * pp} x {c.key}: no memory left for a KV cache")
    requests = frac * free_gib / (kv_gib_per_token * (isl + osl))
    raw_bs = min(requests, 4096) / pp
    bs = max(64, _round_up(raw_bs, 32)) if raw_bs < 256 else _round_up(raw_bs, 128) if raw_bs < 1024 \
        else _round_up(raw_bs, 256)
    raw_tokens = min(raw_bs * (1 + isl / osl), 32768)
    tokens = max(2048, _round_up(raw_tokens, 256)) if raw_tokens < 4096 else _round_up(raw_tokens, 512) \
        if raw_tokens < 8192 else _round_up(raw_tokens, 1024)
    return int(bs), int(max(tokens, math.ceil(isl) + bs))


def predicted_vs_measured(keys=None, overrides=None) -> list[tuple[str, str, float, Prediction]]:
    """Every published measurement (or those named in ``keys``) beside :func:`predict` for the same deployment and
    workload: ``[(key, phase, measured tokens/s per chip, Prediction)]`` (``mixed`` rows predicted as
    ``aggregated``). ``overrides``: row fields to replace before predicting (e.g. ``{"kv_dtype": "bf16"}`` to ask
    what an unpublished KV precision would change). Raises ``KeyError`` naming an unknown key or field."""
    out = []
    for key, e in _catalog.select(measurements(), keys, "published measurement", "serving_measurements.toml"):
        bad = [f for f in (overrides or {}) if f not in e]
        if bad:
            raise KeyError(f"{key} has no field {bad[0]!r} to override; its fields: {', '.join(sorted(e))}")
        e = {**e, **(overrides or {})}
        kw = dict(weight_dtype=e["weight_dtype"], kv_dtype=e["kv_dtype"], compute_dtype=e.get("compute_dtype"),
                  tp=e.get("tp", 1), ep=e.get("ep", 1), dp=e.get("dp", 1))
        phase = {"mixed": "aggregated"}.get(e["phase"], e["phase"])
        b = e.get("batch_per_chip")
        kw.update(_kv_share(e))                 # the engine gives the KV this share of what the weights leave
        limits = None
        if "n_requests" in e:                  # a trtllm-bench run: the limits its heuristic set
            ranks = int(e.get("dp", 1)) if int(e.get("ep", 1)) > 1 else 1      # attention data parallelism
            bs, tokens = trtllm_bench_limits(e["model"], e["chip"], int(e["chips"]), input_tokens=e["input_tokens"],
                                             output_tokens=e["output_tokens"], weight_dtype=e["weight_dtype"],
                                             kv_dtype=e["kv_dtype"],
                                             kv_cache_free_fraction=e.get("kv_cache_free_fraction", 0.90))
            limits = (bs * ranks, tokens * ranks)
        p = predict(e["model"], e["chip"], int(e["chips"]), input_tokens=e["input_tokens"],
                    output_tokens=e.get("output_tokens", 1), batch=None if b is None else b * int(e["chips"]),
                    phase=phase, context=e.get("context_tokens"), mtp_tokens=e.get("mtp_tokens", 0),
                    mtp_acceptance=e.get("mtp_acceptance"), overlap=e.get("overlap", "none"),
                    offline_requests=e.get("n_requests"), offline_limits=limits, eplb=e.get("eplb", False), **kw)
        out.append((key, e["phase"], float(e["measured_tokens_per_s_per_chip"]), p))
    return out



def prediction_spread() -> dict:
    """``data/prediction_spread.toml``: per regime (:data:`REGIMES`), the 10th and 90th percentiles of measured /
    predicted over the ledger's validation rows (``q10``, ``q90``, ``rows``), written by
    ``tools/prediction_spread.py`` from :func:`predicted_vs_measured` (a test checks it is current)."""
    return dict(_catalog.load("prediction_spread.toml")["regimes"])


def regime_of(model, phase: str, batch) -> str:
    """The regime (:data:`REGIMES`) of a prediction: ``"batch 1"`` for one sequence on the deployment (``batch`` <= 1),
    ``"prefill"`` for the prefill phase, else ``"MoE"`` for a mixture-of-experts model and ``"dense"``. Raises
    ``KeyError`` for an unknown model."""
    if batch is not None and float(batch) <= 1:
        return "batch 1"
    if phase == "prefill":
        return "prefill"
    return "MoE" if models.get(model).is_moe else "dense"


def assumed_rates(chip, compute_dtype: str = "bf16", moe: bool = True) -> tuple[list[str], float]:
    """``(names, widening)``: the sustained rates a prediction on ``chip`` takes from no measurement of that chip,
    by name, and how much wider its band is for them: the spread (largest over smallest) of the measured parts'
    large-batch matmul shares at the precision (:func:`llmmath.predict.matmul_fraction`), 1 where the chip's own
    GEMM and MoE-layer tables both exist (a chip with measured GEMMs but no MoE table, A100, B300 or GB300, names only
    the MoE layers, and only for an MoE model: ``moe=False`` leaves them out). Raises ``KeyError`` for an unknown chip or a precision it lacks."""
    from . import hardware
    from .predict import engine_constants, gemm_fractions, matmul_fraction, moe_layer_fractions, sustained
    c = hardware.get(chip)
    low = c.flops_per_s(compute_dtype) > c.flops_per_s("bf16")
    table = gemm_fractions()
    memory = [] if c.runtime_memory_bytes else [f"{c.key}'s runtime memory taken as its datasheet capacity"]
    fmt = "fp8" if low else "bf16"
    gemm_own = fmt in table.get(c.key, {})
    moe_basis = moe_layer_fractions(c, compute_dtype)[2]
    moe_assumed = flag("moe", moe) and not moe_basis.startswith("measured")
    if gemm_own and not moe_assumed:
        return memory, 1.0
    names = []
    if not gemm_own:
        own = fmt in engine_constants()["matmul_shares"].get(c.key, {})
        names += [f"HBM at {sustained(c)['hbm_fraction']:.3g} of peak, {c.vendor}'s share (not from a table of {c.key})",
                  f"matmuls at {matmul_fraction(c, compute_dtype):.3g} of peak, "
                  + (f"{c.key}'s own at its vendor's best shapes, not LLM layers" if own
                     else f"{c.vendor}'s assumed share")]
    if moe_assumed:
        names.append(f"MoE layers {moe_basis}")
    shares = [matmul_fraction(k, fmt) for k in table if fmt in table[k]]
    return names + memory, max(shares) / min(shares)


def band(tokens_per_s: float, model, chip, *, phase: str, batch=None, compute_dtype: str = "bf16",
         inputs=(None, None)) -> tuple[float, float, list[str]]:
    """``(low, high, reasons)``: the range a measured rate is expected in, around a predicted ``tokens_per_s``.

    Three widths multiply: ``inputs`` (the lowest and highest prediction over the inputs a caller could not verify,
    default none), the model's own spread in the prediction's regime (:func:`prediction_spread`: the validation
    rows' 10th and 90th percentiles of measured / predicted) and, on a chip without its own measured tables, the
    spread of the measured parts' shares (:func:`assumed_rates`). ``reasons`` names each. Raises ``ValueError`` for
    a rate that is not positive, ``KeyError`` for an unknown model, chip or regime."""
    rate = float(positive("tokens_per_s", scalar("tokens_per_s", tokens_per_s)))
    lo, hi = (rate if v is None else float(v) for v in inputs)
    lo, hi = min(lo, hi, rate), max(lo, hi, rate)
    reasons = [] if inputs == (None, None) else [f"unverified inputs: {lo:,.0f}-{hi:,.0f} predicted"]
    g = regime_of(model, phase, batch)
    s = prediction_spread()[g]
    lo, hi = lo * s["q10"], hi * s["q90"]
    reasons.append(f"the {g} validation rows' 10th-90th percentile of measured/predicted "
                   f"({s['q10']:.2f}-{s['q90']:.2f}, {s['rows']} rows)")
    names, widen = assumed_rates(chip, compute_dtype, moe=models.get(model).is_moe)
    if names:                 # (a chip with its own tables and only the memory assumed keeps widen = 1)
        lo, hi = lo / widen, hi * widen
        from . import hardware
        reasons.append(f"rates not measured on {hardware.get(chip).key} (x{widen:.2f} either way): "
                       + "; ".join(names))
    return lo, hi, reasons


# what a row's unverified field may have been instead (one at a time): lengths half or double, the other KV format
_UNVERIFIED_ALTERNATIVES = {"input_tokens": lambda v: [v / 2, v * 2], "output_tokens": lambda v: [v / 2, v * 2],
                            "context_tokens": lambda v: [v / 2, v * 2], "batch_per_chip": lambda v: [v / 2, v * 2],
                            "kv_dtype": lambda v: ["bf16" if dtype_bytes(v) <= 1 else "fp8"]}


def row_band(key: str) -> tuple[float, float, float, list[str]]:
    """``(predicted, low, high, reasons)`` for a published measurement: its prediction and :func:`band` around it,
    the inputs band from predicting it again with each unverified length halved and doubled and an unverified KV
    cache in the other format (fp8 or bf16), one field at a time. Raises ``KeyError`` for an unknown key."""
    e = _row(key)
    (_, _, _, p), = predicted_vs_measured([key])
    alt = []
    for field in e.get("unverified", []):
        if field in _UNVERIFIED_ALTERNATIVES and field in e:
            for v in _UNVERIFIED_ALTERNATIVES[field](e[field]):
                if field in ("input_tokens", "output_tokens", "context_tokens"):
                    v = max(1, round(v))
                try:
                    (_, _, _, q), = predicted_vs_measured([key], overrides={field: v})
                except ValueError:             # the alternative does not fit the deployment: no prediction
                    continue
                alt.append(q.tokens_per_s_per_chip)
    rate = p.tokens_per_s_per_chip
    inputs = (min(alt), max(alt)) if alt else (None, None)
    b = e.get("batch_per_chip")
    lo, hi, reasons = band(rate, e["model"], e["chip"], phase={"mixed": "aggregated"}.get(e["phase"], e["phase"]),
                           batch=None if b is None else b * e["chips"],
                           compute_dtype=e.get("compute_dtype") or "bf16", inputs=inputs)
    return rate, lo, hi, reasons


def latency_curves() -> dict:
    """Published latency-under-load curves (``data/latency_curves.toml``), by key: a deployment (model, chip, chips,
    placement, precisions), fixed ``input_tokens`` and ``output_tokens``, and at each client ``concurrency`` the
    measured mean ``ttft_ms``, ``itl_ms`` and the deployment's ``output_tokens_per_s``; ``split``, and for test
    curves the engine's prediction when the curve entered (``predicted_at_entry``, ``entered_after``)."""
    return dict(_catalog.load("latency_curves.toml")["curves"])


def predicted_curve(key: str) -> dict:
    """The engine's closed-loop prediction of a published curve (:func:`llmmath.engine.at_concurrency` at each of
    its concurrencies): ``{"ttft_ms": [...], "itl_ms": [...], "output_tokens_per_s": [...]}``. Raises ``KeyError``
    for an unknown key."""
    from . import engine
    curves = latency_curves()
    if key not in curves:
        raise KeyError(f"no published curve {key!r} in data/latency_curves.toml; known: {', '.join(sorted(curves))}")
    c = curves[key]
    kw = {k: c[k] for k in ("tp", "ep", "dp", "weight_dtype", "kv_dtype", "compute_dtype") if k in c}
    pts = [engine.at_concurrency(c["model"], c["chip"], c["chips"], concurrency=n, input_tokens=c["input_tokens"],
                                 output_tokens=c["output_tokens"], **kw) for n in c["concurrency"]]
    return {"ttft_ms": [p.ttft_s * 1e3 for p in pts], "itl_ms": [p.itl_s * 1e3 for p in pts],
            "output_tokens_per_s": [p.output_tokens_per_s for p in pts]}
