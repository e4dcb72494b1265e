"""One description of a deployment: where a served model's bytes and FLOPs live, chip by chip.

A :class:`Deployment` is a model, a chip, a chip count, a placement (:class:`Placement`:
``tp``, ``ep``, ``dp``, ``pp``) and a precision per tensor kind (weights, KV cache,
activations on the wire, matmul compute). Every per-chip question the course asks about
serving is a method of it, so the serving plan (:func:`llmmath.planner.plan`), the
pipeline's stage floors (:func:`llmmath.parallelism.stage_floors_s`,
:func:`~llmmath.parallelism.pipelined_decode`), the memory per GPU
(:func:`~llmmath.parallelism.memory_per_gpu`) and the chapters that use them agree by
construction.

The layout (the wide-EP serving layout of chapter 6; SGLang's and DeepSeek's "DP attention")::

    a replica       pp stages of tp * dp chips       n_chips = replicas * pp * tp * dp
    attention,      split tp ways over heads, replicated over the dp groups; each dp group serves
    dense layers,   its own B_r / dp sequences (their KV cache lives on that group only, split
    shared experts  over min(tp, n_kv_heads) chips; MLA's shared latent is not split by tp)
    routed experts  spread over all tp * dp chips of a stage: ep ranks of ceil(E / ep) whole experts,
                    each expert split over the tp * dp / ep chips of its rank
    stage s         its layers (Model.stage_layers); the input embedding on the first, the final
                    norm and LM head on the last (Model.stage_params)

One decode step gives each of the replica's ``B_r`` sequences one token. With ``pp`` stages,
``pp`` micro-batches of ``B_r / pp`` sequences are in flight; each chip of stage ``s`` works on
each of them in turn, so per chip and per micro-batch (``b_w``, ``b_kv``: bytes per element)::

    weights read  [N_other,s / tp + n_moe,s E[busiest rank](tokens) P_e ep / (tp dp)] b_w  (+ lookup rows)
    KV read       (B_r / pp) kv_seq(L) (attn_s / n_attn) / (dp tp_kv)
                  + (B_r / pp) 2 state (lin_s / n_lin) / (dp tp)                    (linear layers' state)
    FLOPs         (B_r / pp) / dp * [2 N_mm,s + a(L) attn_s / n_attn] / tp        (non-routed, attention)
                  + (B_r / pp) * 2 k P_e n_moe,s / (tp dp)                          (routed experts)
    floor         t_s = max(FLOPs / F, (weights + KV) / W)

(``attn_s``, ``lin_s``: the stage's attention and linear layers; a linear layer caches no K/V but each sequence reads
and writes its fixed ``state`` once a step, :meth:`~llmmath.models.Model.state_bytes_per_sequence`), and the step
takes ``pp * max_s t_s`` (the busiest stage is busy with every micro-batch; with
``pp = 1`` it is one stage's floor). ``E[busiest rank](tokens)`` is the expected number of a
layer's routed experts that the busiest expert-parallel rank must read when ``tokens`` tokens
each pick ``k`` distinct experts uniformly (:func:`expected_busiest_chip_experts`); ``tokens``
is a micro-batch, all its dp groups' tokens together, since they share one set of experts.

**Pooled forms.** :func:`llmmath.serving.decode_step` and :func:`~llmmath.serving.max_batch`
pool the chips' HBM and bandwidth as if any chip could read any byte: they are the
``tp = n`` placement of a model whose KV heads ``tp`` divides (the consistency test holds them
to it) and an optimistic floor for any other placement. Chapter 1 teaches them first; the
chapters that place a model say where the placed number differs.

Sources: chapters 1-3, 6 and 8 of the course; Pope et al., "Efficiently Scaling Transformer
Inference" (MLSys 2023); DeepSeek-V3 technical report, section 3.4 (the deployment this layout
is); SGLang's large-scale EP blog (May 2025) for DP attention.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import numpy as np

from . import _catalog, hardware, models
from ._validate import finite_result, in_range, non_negative, positive, positive_int, result, scalar, whole
from .hardware import default_compute_dtype
from .units import dtype_bytes, dtype_label, fmt_bytes

__all__ = ["Placement", "check_placement", "Deployment", "StageStep", "expected_busiest_chip_experts", "chip_and_count",
           "placements", "most_sequences", "GPU_MEMORY_UTILIZATION", "runtime_memory_bytes", "default_token_budget",
           "default_max_num_seqs", "activation_peak_bytes", "engine_memory"]


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


def chip_and_count(chip, n_chips):
    """A Chip and a chip count from a chip or system name (a system gives its chip, :meth:`~llmmath.hardware.System.
    package_chip`, and by default its size).

    Raises:
        KeyError: a name that is neither a chip nor a system; the message suggests the closest of
            both (``'h100'``: h100-sxm, h100-pcie ...) and lists every valid name.
        TypeError: neither a string nor a :class:`~llmmath.hardware.Chip`.
    """
    if isinstance(chip, str):
        chips, systems = hardware.catalog(), hardware.systems()
        key = _catalog.lookup({**systems, **chips}, chip, "chip or system")[0]   # a chip wins a shared name
        if key not in chips:
            sy = systems[key]                 # its chip, or one package described by the system's own figures
            return sy.package_chip(), positive_int("n_chips", sy.packages if n_chips is None else n_chips)
    c = hardware.get(chip)
    return c, positive_int("n_chips", 1 if n_chips is None else n_chips)


def placement_hint(model, chip, n_chips, context, *, tp=1, ep=1, dp=1, pp=1, **kwargs) -> str:
    """What to change so that one sequence of ``context`` tokens fits where this placement holds none: ``"try tp=4
    (...)"``, or ``""`` when nothing on these ``n_chips`` chips fits.

    Tries, in order, the smallest tensor-parallel degree (a power of two up to the chip's scale-up domain and the
    chip count) that holds the weights and one sequence's KV cache, then pipeline stages at the widest such degree.
    ``kwargs``: the precisions and memory view of :class:`Deployment`.
    """
    c, n = chip_and_count(chip, n_chips)
    widths = [k for k in (1, 2, 4, 8, 16, 32, 64) if k <= min(c.scale_up_domain, n) and n % k == 0]
    tries = [dict(tp=k, ep=ep, dp=dp, pp=pp) for k in widths if k > tp] + [
        dict(tp=widths[-1], ep=ep, dp=dp, pp=q) for q in (2, 4, 8) if q > pp and n % (widths[-1] * q) == 0]
    for pl in tries:
        try:
            d = Deployment(model, chip, n_chips, **pl, **kwargs)
        except (ValueError, KeyError):
            continue
        if d.weights_fit and d.max_batch(context) >= 1:
            changed = " ".join(f"{k}={v}" for k, v in pl.items() if v != {"tp": tp, "ep": ep, "dp": dp, "pp": pp}[k])
            return (f"try {changed} ({d.placement.chips_per_replica} chips a replica hold "
                    f"{fmt_bytes(d.weight_bytes_per_chip)} of weights each, {d.replicas} replica(s))")
    return ""


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def check_placement(model, placement: Placement, n_chips: int | None = None) -> int | None:
    """The one placement validator: every entry point (plan, predict, the engine, parallelism's memory counts,
    the CLI) asks it whether ``placement`` can serve ``model`` (on ``n_chips``, when given), one rule a message.

    The rules, as engines enforce them:

    * every degree a whole number >= 1; ``n_chips`` a multiple of ``pp x tp x dp`` (the chips of a replica);
    * ``pp`` at most the model's layers (a stage holds at least one layer);
    * ``tp`` divides the attention heads; for GQA/MHA, ``tp`` divides the KV heads or is a multiple of them (each
      KV head then replicated ``tp / n_kv`` times; vLLM's ``QKVParallelLinear`` asserts exactly this; MLA's latent
      is shared by every head, so any ``tp`` that divides the heads will do);
    * ``ep > 1`` only for a model with routed experts, and ``ep`` divides the stage's ``tp x dp`` chips (the rest
      of the stage splits each expert). ``ep`` need not divide the experts: the first ``E mod ep`` ranks hold one
      more (vLLM's ``determine_expert_map`` spreads the remainder the same way).
    * ``tp`` divides a linear layer's key and value heads (each chip keeps whole heads' state; vLLM's Gated DeltaNet
      and lightning layers split their heads this way).

    Returns:
        the replicas ``n_chips / (pp tp dp)``, or None without ``n_chips``.

    Raises:
        ValueError: the first rule broken, naming it and what is allowed. KeyError: an unknown model.
    """
    m = models.get(model)
    pl = placement
    for f in ("tp", "ep", "dp", "pp"):
        positive_int(f, getattr(pl, f))
    if n_chips is not None and n_chips % pl.chips_per_replica:
        raise ValueError(f"n_chips={n_chips} is not a multiple of pp x tp x dp = {pl.pp} x {pl.tp} x {pl.dp} = "
                         f"{pl.chips_per_replica} (chips per replica); allowed: a multiple of it")
    if pl.pp > m.n_layers:
        raise ValueError(f"pp={pl.pp} stages but {m.key} has only {m.n_layers} layers; allowed: 1..{m.n_layers}")
    if m.n_heads % pl.tp:
        raise ValueError(f"tp={pl.tp} must divide {m.key}'s {m.n_heads} attention heads; allowed: "
                         f"{_divisors(m.n_heads)}")
    if not m.is_mla and m.n_kv_heads % pl.tp and pl.tp % m.n_kv_heads:
        ok = [t for t in _divisors(m.n_heads) if m.n_kv_heads % t == 0 or t % m.n_kv_heads == 0]
        raise ValueError(f"tp={pl.tp} must divide {m.key}'s {m.n_kv_heads} KV heads or be a multiple of them; "
                         f"allowed: {ok}")
    if m.linear_layer_ids:
        # a Mamba mixer's B/C groups may be fewer than the chips: each chip then keeps a copy of its group (vLLM's
        # MambaMixer2 replicates them when tp is a multiple of n_groups; Mamba-1 has one); other key heads split whole
        def keys_ok(t):
            return m.linear_key_heads % t == 0 or (mamba and t % m.linear_key_heads == 0)
        mamba = m.linear_kind in ("mamba2", "mamba1")
        if not keys_ok(pl.tp) or m.linear_value_heads % pl.tp:
            ok = [t for t in _divisors(m.n_heads) if keys_ok(t) and m.linear_value_heads % t == 0]
            either = " or be a multiple of them" if mamba else ""
            raise ValueError(f"tp={pl.tp} must divide {m.key}'s linear layers' {m.linear_key_heads} key heads "
                             f"(groups){either} and its {m.linear_value_heads} value heads (each chip keeps whole "
                             f"heads' state); allowed: {ok}")
    if pl.ep > 1 and not m.is_moe:
        raise ValueError(f"ep={pl.ep} but {m.key} is dense (no experts); allowed: ep=1")
    if pl.ep > pl.stage_chips:
        raise ValueError(f"ep={pl.ep} exceeds the chips of a stage, tp x dp = {pl.stage_chips}; allowed: 1.."
                         f"{pl.stage_chips}")
    if pl.stage_chips % pl.ep:
        raise ValueError(f"ep={pl.ep} must divide the stage's tp x dp = {pl.stage_chips} chips (the rest of "
                         f"the stage splits each expert); allowed: {_divisors(pl.stage_chips)}")
    if m.is_moe and pl.ep > m.n_experts:
        raise ValueError(f"ep={pl.ep} exceeds {m.key}'s {m.n_experts} routed experts (a rank holds at least one); "
                         f"allowed: 1..{m.n_experts}")
    return None if n_chips is None else n_chips // pl.chips_per_replica


# ---------------------------------------------------------------------------
# The busiest expert-parallel rank under uniform routing
# ---------------------------------------------------------------------------

def _expert_groups(n_experts: int, n_chips: int) -> tuple[tuple[int, int], ...]:
    """(experts per chip, chips holding that many): E spread as evenly as whole experts allow."""
    g, extra = divmod(n_experts, n_chips)
    return tuple((size, count) for size, count in ((g + 1, extra), (g, n_chips - extra)) if count)


@functools.lru_cache(maxsize=64)
def _busiest_given_touched(n_experts: int, n_chips: int) -> np.ndarray:
    """E[max over chips of touched experts on that chip | T experts touched], for T = 0..E.

    Given T, the touched set is a uniform T-subset of the E experts (uniform routing is
    exchangeable), so the per-chip counts are multivariate hypergeometric and
    ``P(max <= m | T) = [x^T] prod_chips (sum_{i <= m} C(g_chip, i) x^i) / C(E, T)``.
    """
    groups = _expert_groups(n_experts, n_chips)
    top = max(size for size, _ in groups)
    total = np.array([math.comb(n_experts, t) for t in range(n_experts + 1)], dtype=float)
    expect = np.zeros(n_experts + 1)
    for m in range(top):  # E[max] = sum_{m >= 0} P(max > m)
        poly = np.ones(1)
        for size, count in groups:
            term = np.array([math.comb(size, i) for i in range(min(m, size) + 1)], dtype=float)
            for _ in range(count):
                poly = np.convolve(poly, term)[: n_experts + 1]
        ways = np.zeros(n_experts + 1)
        ways[: poly.size] = poly
        expect += 1.0 - ways / total
    return expect


def _touched_distribution(n_experts: int, k: int, batches: np.ndarray) -> np.ndarray:
    """P(T = t) for t = 0..E after each whole batch in ``batches`` (rows), k distinct experts per token."""
    E = n_experts
    t = np.arange(E + 1)
    step = np.zeros((E + 1, E + 1))  # step[t, t + j]: a token picks j experts not yet touched
    for j in range(k + 1):
        p = np.array([math.comb(E - x, j) * math.comb(x, k - j) for x in t], dtype=float) / math.comb(E, k)
        ok = t + j <= E
        step[t[ok], t[ok] + j] = p[ok]
    out = np.zeros((batches.size, E + 1))
    dist = np.zeros(E + 1)
    dist[0] = 1.0
    done = 0
    for i in np.argsort(batches):
        target = int(batches[i])
        while done < target and dist[:E].sum() > 1e-15:  # saturated: every expert touched, nothing moves
            dist = dist @ step
            done += 1
        out[i] = dist
    return out


def _busiest(m: models.Model, tokens, n_chips: int) -> np.ndarray:
    """:func:`expected_busiest_chip_experts` for whole ``tokens`` (array), without argument checks."""
    flat = np.ravel(np.asarray(tokens, dtype=float))
    uniq, inverse = np.unique(flat, return_inverse=True)
    dist = _touched_distribution(m.n_experts, m.experts_per_token, uniq)
    return (dist @ _busiest_given_touched(m.n_experts, n_chips))[inverse].reshape(np.shape(tokens))


@finite_result
def expected_busiest_chip_experts(model, batch, n_chips):
    """Expected routed experts the busiest chip must read in one MoE layer, under expert parallelism.

    The ``E`` routed experts of each layer are spread over ``n_chips`` as evenly as
    whole experts allow (``E mod n`` chips hold one more). ``batch`` tokens each pick
    ``k`` distinct experts uniformly at random; a chip reads each of its experts that
    at least one token picked. The busiest chip's count, in expectation::

        E[max_chip count] = sum_T P(T | B) E[max_chip count | T]

    ``P(T | B)`` (T distinct experts touched) comes from a Markov chain over tokens
    (a token adds j new experts with probability ``C(E-T, j) C(T, k-j) / C(E, k)``);
    given T the counts are multivariate hypergeometric (see :func:`_busiest_given_touched`).
    Exact under uniform, independent routing (real routers are less even: a floor).
    At ``n_chips = 1`` it is the expected touched count ``E (1 - (1 - k/E)^B)``; 0 for a dense model.

    Args:
        model: catalog name or :class:`~llmmath.models.Model`.
        batch: B, tokens in the step (whole numbers >= 1; scalar or array).
        n_chips: chips the experts are spread over (whole number >= 1).

    Returns:
        experts (float), shaped like ``batch``.

    Raises:
        ValueError: batch not a whole number >= 1, n_chips < 1, or a model with more
            than 1,000 experts per layer (the binomial sums would overflow float64).
        KeyError: unknown model.
    """
    m = models.get(model)
    B = whole("batch", batch, 1)
    n = positive_int("n_chips", n_chips)
    if not m.is_moe:
        return result(np.zeros(B.shape))
    if m.n_experts > 1000:
        raise ValueError(f"{m.key}: n_experts={m.n_experts} is above the 1,000 this exact sum supports")
    return result(_busiest(m, B, n))


# ---------------------------------------------------------------------------
# Memory as an engine sees it
# ---------------------------------------------------------------------------

MEMORY_VIEWS = ("vllm", "sglang")


def engine_memory() -> dict:
    """``data/engine_constants.toml`` [memory]: what a serving engine holds back before its KV cache, with sources."""
    return _catalog.load("engine_constants.toml")["memory"]


GPU_MEMORY_UTILIZATION = float(engine_memory()["gpu_memory_utilization"])
"""The one default share of a GPU's runtime memory an engine takes (vLLM's ``gpu_memory_utilization``, 0.9): plan,
predict, the engine and the CLI all start from it."""


def runtime_memory_bytes(chip) -> float:
    """The device memory ``chip``'s runtime reports to a program (bytes; hardware.toml ``runtime_memory_bytes``):
    an H100's "80 GB" is 85,045,477,376 B (79.2 GiB) to CUDA.

    Raises:
        KeyError: a chip with no sourced runtime figure (the message names the chips that have one and the way out).
    """
    c = hardware.get(chip)
    if not c.runtime_memory_bytes:
        known = [k for k in hardware.names() if hardware.get(k).runtime_memory_bytes]
        raise KeyError(f"no runtime memory figure (the total its runtime reports) for chip {c.key!r}, so no engine's "
                       f"KV cache can be sized on it; chips with one: {', '.join(known)}; or give "
                       f"usable_hbm_fraction= (--usable-hbm-fraction) to take a share of its datasheet HBM instead")
    return float(c.runtime_memory_bytes)


def _vllm_small_defaults(chip) -> bool:
    """Whether vLLM's EngineArgs.get_batch_defaults gives ``chip`` its smaller defaults: a GPU below 70 GiB, or an
    A100 (a chip without a runtime figure gets the larger ones)."""
    c = hardware.get(chip)
    return bool(c.runtime_memory_bytes) and (c.runtime_memory_bytes < engine_memory()["large_gpu_bytes"]
                                             or c.key.startswith("a100"))


def default_token_budget(chip) -> int:
    """vLLM's default ``max_num_batched_tokens`` for its OpenAI server on ``chip`` (EngineArgs.get_batch_defaults):
    8,192 on a GPU with at least 70 GiB that is not an A100, else 2,048; 8,192 for a chip without a runtime figure."""
    small = _vllm_small_defaults(chip)
    return int(engine_memory()["max_num_batched_tokens_small" if small else "max_num_batched_tokens_large"])


def default_max_num_seqs(chip, tokens) -> int:
    """vLLM's default ``max_num_seqs`` for its OpenAI server on ``chip`` (EngineArgs.get_batch_defaults): 1,024 on a
    GPU with at least 70 GiB that is not an A100, else 256 (and on a chip without a runtime figure, 1,024), never
    more than the token budget ``tokens``. Raises ValueError for ``tokens`` below 1."""
    small = _vllm_small_defaults(chip)
    return min(int(engine_memory()["max_num_seqs_small" if small else "max_num_seqs_large"]),
               positive_int("tokens", tokens))


def activation_peak_bytes(model, tokens, placement: Placement = Placement(), sequences=None) -> float:
    """The peak bytes of live activations on one chip while a replica runs an engine's profiling pass: a forward
    pass over ``tokens`` tokens (its token budget), then one sampling step for ``sequences`` dummy requests (default
    0: the forward pass alone). The two run one after the other, so the peak is the larger.

    The forward pass, per token of the chip's attention group (``tokens / dp``): the input, the residual and the
    output (``3 d_model``) beside a SwiGLU MLP's gate-up product and activation (``3 d_ff / tp``); an MoE layer's
    fused kernel holds those three intermediates for each of the ``k`` experts a token picks, spread over the
    stage's ``tp dp`` chips. Two bytes a value. Llama-3.1-8B, 20,000 tokens, one GPU: 20,000 x (3 x 4,096 +
    3 x 14,336) x 2 = 2.21e9 B = 2.06 GiB (vLLM logged 2.07 GiB on an RTX 3090, issue 10517).

    The sampling step, on every tensor-parallel chip (the head's shards are gathered into the whole vocabulary):
    14 bytes per request and vocabulary entry (bf16 logits, their fp32 copy, the probabilities and the random
    sample's exponential noise; ``engine_constants.toml`` [memory] counts them from vLLM's sampler), beside the
    forward pass's output, ``tokens / dp x d_model x 2`` B. Llama-3.1-8B, vLLM's 1,024 requests on an H100:
    14 x 1,024 x 128,256 + 8,192 x 4,096 x 2 = 1.91e9 B = 1.77 GiB, above the forward pass's 0.84 GiB.

    Raises:
        ValueError: ``tokens`` below 1, ``sequences`` below 0. KeyError: unknown model.
    """
    m = models.get(model)
    N = float(positive("tokens", scalar("tokens", tokens)))
    S = 0.0 if sequences is None else float(non_negative("sequences", scalar("sequences", sequences)))
    k = engine_memory()
    b = float(k["activation_bytes"])
    pl = placement
    per_group = N / pl.dp
    dense = per_group * (3 * m.d_model + (3 * m.d_ff / pl.tp if m.d_ff and m.n_moe_layers < m.n_layers else 0.0))
    moe = (per_group * 3 * m.d_model + N * m.experts_per_token * 3 * m.d_ff_expert / pl.stage_chips
           if m.is_moe else 0.0)
    sampler = (per_group * m.d_model * b + S / pl.dp * m.vocab * float(k["sampler_bytes_per_logit"])) if S else 0.0
    return max(max(dense, moe) * b, sampler)


# ---------------------------------------------------------------------------
# The deployment
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class StageStep:
    """One micro-batch of a decode step on a chip of each pipeline stage (arrays over stages, then batch).

    ``compute_s``, ``weight_s``, ``kv_s``: the roofline terms; ``floor_s = max(compute, weight + kv)``.
    ``flops``: FLOPs per chip by operator (``"matmul"``: attention projections, dense layers,
    shared experts, router and head; ``"routed experts"``; ``"attention"``: scores and values
    over the context). ``bytes_read``: per chip, ``"weights"`` (all of them), ``"kv"``, and ``"routed experts"``
    (the part of ``"weights"`` that is the routed experts' matrices).
    """

    compute_s: np.ndarray
    weight_s: np.ndarray
    kv_s: np.ndarray
    flops: dict
    bytes_read: dict

    @property
    def floor_s(self) -> np.ndarray:
        return np.maximum(self.compute_s, self.weight_s + self.kv_s)


class Deployment:
    """A model served on ``n_chips`` of ``chip`` with a :class:`Placement` and a precision per tensor kind.

    Args:
        model: catalog name or :class:`~llmmath.models.Model`.
        chip: chip name or scale-up system name (its chip and, by default, its package count).
        n_chips: chips in the deployment (default 1, or the system's packages); a multiple of
            ``pp * tp * dp``.
        tp, ep, dp, pp: the placement of one replica (see the module docstring).
        weight_dtype, kv_dtype: a format name (``bf16, fp8, fp4``...) or bytes per element.
        activation_dtype: activations sent between chips (tensor-parallel all-reduce, pipeline
            sends; the expert all-to-all uses DeepSeek-V3's fp8 dispatch and bf16 combine).
        compute_dtype: matmul precision (default: ``weight_dtype`` where the chip has it, else bf16).
        usable_hbm_fraction: the datasheet view: a share, in (0, 1], of each chip's datasheet HBM for weights + KV,
            nothing else held back (the roofline chapters' ceiling: 1.0 is all of it).
        gpu_memory_utilization: the engine view (the default, when ``usable_hbm_fraction`` is not given): the share
            of each chip's runtime memory (:func:`runtime_memory_bytes`) the engine takes, in (0, 1] (default
            :data:`GPU_MEMORY_UTILIZATION`, vLLM's 0.9; SGLang's ``mem_fraction_static``), less what it holds before
            its KV cache (:attr:`reserve_bytes`).
        engine: ``"vllm"`` (the reserve is the activation peak of a profiling pass over ``max_num_batched_tokens``
            and the memory outside torch, both inside the fraction) or ``"sglang"`` (the fraction covers weights and
            KV only; the memory outside torch comes off before it).
        mtp: whether the model's multi-token-prediction modules are served (``Model.n_mtp_layers``: their weights
            and their layer's KV on the last stage).
        max_num_batched_tokens: the engine's token budget per scheduler, one a ``dp`` attention group (with data-parallel
            attention each rank schedules its own steps, as SGLang's and vLLM's DP ranks do), and the size of each
            rank's profiling pass (default
            :func:`default_token_budget`: vLLM's 8,192 on a GPU with at least 70 GiB, 2,048 on an A100 or a smaller GPU).
        max_num_seqs: vLLM's request limit per dp rank, here only as the dummy requests its profiling pass samples
            (the reserve; default :func:`default_max_num_seqs`: 1,024 on an H100, 256 on an A100 or a smaller GPU,
            at most the token budget). The batch a step holds is each entry point's own limit (the engine's
            ``max_running``).

    Raises:
        ValueError: a placement that breaks a rule of :func:`check_placement`, a fraction outside (0, 1], both
            memory views at once, an unknown engine (each message says what is allowed).
        KeyError: unknown model, chip, system or dtype; the engine view on a chip without a runtime memory figure.
    """

    def __init__(self, model, chip, n_chips=None, *, tp=1, ep=1, dp=1, pp=1, weight_dtype="bf16",
                 kv_dtype="bf16", activation_dtype="bf16", compute_dtype=None, usable_hbm_fraction=None,
                 gpu_memory_utilization=None, engine="vllm", max_num_batched_tokens=None, mtp=False,
                 max_num_seqs=None):
        m = models.get(model)
        c, n = chip_and_count(chip, n_chips)
        pl = Placement(positive_int("tp", tp), positive_int("ep", ep), positive_int("dp", dp), positive_int("pp", pp))
        self.replicas = check_placement(m, pl, n)
        if usable_hbm_fraction is not None and gpu_memory_utilization is not None:
            raise ValueError("give usable_hbm_fraction (a share of the datasheet HBM) or gpu_memory_utilization (a "
                             "share of the runtime's memory, an engine's reserve taken out), not both")
        if engine not in MEMORY_VIEWS:
            raise ValueError(f"engine must be one of {MEMORY_VIEWS}, got {engine!r}")
        self.max_num_batched_tokens = (default_token_budget(c) if max_num_batched_tokens is None
                                       else positive_int("max_num_batched_tokens", max_num_batched_tokens))
        self.replica_token_budget = self.max_num_batched_tokens * pl.dp     # every dp rank's budget, one step
        self.max_num_seqs = (default_max_num_seqs(c, self.max_num_batched_tokens) if max_num_seqs is None
                             else positive_int("max_num_seqs", max_num_seqs))
        self.reserve_bytes = {}
        self.memory_assumption = None
        if usable_hbm_fraction is not None:                      # the datasheet view
            self.memory_view = "datasheet"
            usable = float(in_range("usable_hbm_fraction", scalar("usable_hbm_fraction", usable_hbm_fraction), 0, 1,
                                    low_open=True))
            usable_bytes = usable * c.hbm_bytes
        else:                                                    # the engine view
            self.memory_view = engine
            util = GPU_MEMORY_UTILIZATION if gpu_memory_utilization is None else float(in_range(
                "gpu_memory_utilization", scalar("gpu_memory_utilization", gpu_memory_utilization), 0, 1, low_open=True))
            self.gpu_memory_utilization = util
            if c.runtime_memory_bytes:
                total = runtime_memory_bytes(c)
            else:                     # no sourced figure (roadmap parts, TPUs, Gaudi): the datasheet's, named
                total = float(c.hbm_bytes)
                self.memory_assumption = (f"no figure of the memory {c.key}'s runtime reports: the datasheet's "
                                          f"{c.hbm_bytes / 1e9:,.0f} GB taken (a runtime usually reports a little "
                                          f"more: 85.0 GB for an 80 GB H100)")
            other = float(engine_memory()["non_torch_bytes"])
            if engine == "vllm":
                self.reserve_bytes = {"activation peak": activation_peak_bytes(m, self.replica_token_budget, pl,
                                                                           self.max_num_seqs * pl.dp),
                                      "outside torch": other}
                usable_bytes = total * util - sum(self.reserve_bytes.values())
            else:
                self.reserve_bytes = {"outside torch": other}
                usable_bytes = (total - other) * util
            usable = usable_bytes / c.hbm_bytes
        self.model, self.chip, self.n_chips, self.placement = m, c, n, pl
        self.weight_dtype, self.kv_dtype = dtype_label(weight_dtype), dtype_label(kv_dtype)
        self.b_w, self.b_kv, self.b_act = dtype_bytes(weight_dtype), dtype_bytes(kv_dtype), dtype_bytes(activation_dtype)
        self.compute_dtype = compute_dtype or default_compute_dtype(c, weight_dtype)
        self.flops_per_s = c.flops_per_s(self.compute_dtype)
        self.hbm_bytes_per_s = c.hbm_bytes_per_s
        self.usable_hbm_bytes = usable_bytes
        self.usable_hbm_fraction = usable                        # of the datasheet HBM, in either view
        # per stage: MoE layers, every other parameter held, layers
        self.stage_moe_layers, self.stage_other_params = m.stage_params(pl.pp)
        self.stage_layers = np.array([len(r) for r in m.stage_layers(pl.pp)])
        lin, att = set(m.linear_layer_ids), set(m.attention_layer_ids)   # linear layers keep a state, not K/V
        self.stage_linear_layers = np.array([sum(i in lin for i in r) for r in m.stage_layers(pl.pp)])
        self.stage_attention_layers = np.array([sum(i in att for i in r) for r in m.stage_layers(pl.pp)])
        # multi-token prediction served: the model's MTP modules on the last stage, their weights (an MoE layer's
        # routed experts spread as the others') and their layer's KV (memory only: predict prices the draft)
        self.mtp_layers = m.n_mtp_layers if mtp else 0
        self._mtp_moe, self._mtp_other, self._mtp_kv_layers = np.zeros(pl.pp), np.zeros(pl.pp), np.zeros(pl.pp)
        if self.mtp_layers:
            routed = m.n_experts * m.expert_params if m.is_moe else 0
            self._mtp_moe[-1] = self.mtp_layers if m.is_moe else 0
            self._mtp_other[-1] = self.mtp_layers * (m.mtp_params - routed)
            self._mtp_kv_layers[-1] = self.mtp_layers
        self.experts_per_rank = -(-m.n_experts // pl.ep) if m.is_moe else 0
        self.tp_kv = 1 if m.is_mla else min(pl.tp, m.n_kv_heads)
        # the input table is only looked up (one row per token), unless it is tied and serves as the head on
        # the same (only) stage; a tied table's copy on the last stage of a pipeline is the head
        self._looked_up = (not m.tied_embeddings) or pl.pp > 1
        lookup = np.zeros(pl.pp)
        if self._looked_up:
            lookup[0] = m.embedding_params
        self._other_read = self.stage_other_params - lookup
        # parameters in a matmul outside the routed experts (norms included, as Model.matmul_params_per_token)
        self._other_matmul = self._other_read.astype(float)
        if not self._looked_up:                           # a tied table on one stage: the head, not its positions
            self._other_matmul = self._other_matmul - (m.embedding_params - m.vocab * m.d_model)

    def __repr__(self) -> str:
        pl = self.placement
        return (f"Deployment({self.model.key!r} on {self.n_chips} x {self.chip.key}, tp={pl.tp} ep={pl.ep} "
                f"dp={pl.dp} pp={pl.pp}, weights {self.weight_dtype}, KV {self.kv_dtype})")

    # ---- bytes held -----------------------------------------------------------
    @property
    def routed_params_per_chip_by_stage(self) -> np.ndarray:
        """Routed-expert parameters on the fullest chip of each stage: ``n_moe,s ceil(E/ep) P_e ep / (tp dp)``."""
        pl = self.placement
        return self.stage_moe_layers * self.experts_per_rank * self.model.expert_params * pl.ep / pl.stage_chips

    @property
    def weight_bytes_by_stage(self) -> np.ndarray:
        """Weight bytes on the fullest chip of each stage (array of ``pp``; the MTP modules on the last when served)."""
        pl = self.placement
        mtp = (self._mtp_other / pl.tp
               + self._mtp_moe * self.experts_per_rank * self.model.expert_params * pl.ep / pl.stage_chips)
        return (self.stage_other_params / pl.tp + self.routed_params_per_chip_by_stage + mtp) * self.b_w

    @property
    def weight_bytes_per_chip(self) -> float:
        """Weight bytes on the fullest chip of the busiest stage (what must fit)."""
        return float(np.max(self.weight_bytes_by_stage))

    def kv_bytes_per_sequence_by_stage(self, context) -> np.ndarray:
        """KV bytes one sequence keeps on one chip of each stage (stages x context).

        The stage's share of the attention layers (exact for a model whose layers all cache alike; a
        model with windowed layers is prorated by layer count), over ``dp tp_kv``: a sequence
        lives on one dp group, its heads split over ``tp_kv = min(tp, n_kv_heads)`` chips
        (1 for MLA, whose latent every tp chip keeps); plus the stage's share of the linear layers' fixed
        state, over ``dp tp`` (their value heads split over every tp chip).
        """
        m, pl = self.model, self.placement
        seq = np.asarray(m.kv_bytes_per_sequence(context, self.b_kv), dtype=float)
        state = np.asarray(m.held_state_bytes(context), dtype=float)
        share = (self.stage_attention_layers + self._mtp_kv_layers) / m.n_attention_layers
        kv = np.multiply.outer(share, seq - state) / (pl.dp * self.tp_kv)
        if not m.linear_layer_ids:
            return kv
        # the linear layers' state: its stage's share, its value heads split over all tp chips
        return kv + np.multiply.outer(self.stage_linear_layers / m.n_linear_layers, state) / (pl.dp * pl.tp)

    def kv_bytes_per_chip(self, batch, context) -> float | np.ndarray:
        """KV bytes on the busiest chip for ``batch`` sequences over the deployment at ``context``."""
        B_r = np.asarray(batch, dtype=float) / self.replicas
        return result(B_r * np.max(self.kv_bytes_per_sequence_by_stage(context), axis=0))

    @property
    def free_bytes_by_stage(self) -> np.ndarray:
        """Usable HBM left for the KV cache on the fullest chip of each stage (negative: the weights do not fit)."""
        return self.usable_hbm_bytes - self.weight_bytes_by_stage

    @property
    def weights_fit(self) -> bool:
        return bool(np.all(self.free_bytes_by_stage >= 0))

    def max_batch(self, context) -> float:
        """Most sequences of ``context`` tokens whose KV cache fits beside the weights on every chip.

        A sequence's cache lives whole on one dp group, so each group holds a whole number of
        sequences: ``replicas * dp * min_s floor(free_s / (kv_seq(L) share_s / tp_kv))``.
        """
        if not self.weights_fit:
            return 0.0
        pl = self.placement
        per_seq_group_chip = self.kv_bytes_per_sequence_by_stage(float(context)) * pl.dp   # one sequence, its group
        per_group = float(np.min(np.floor(self.free_bytes_by_stage / per_seq_group_chip)))
        return per_group * pl.dp * self.replicas

    @property
    def kv_cache_tokens(self) -> float:
        """Tokens of KV cache one replica holds, counted as the engine logs them (vLLM's "GPU KV cache size: N
        tokens", SGLang's "#tokens"): the free bytes of the fullest chip over one token's cache on it (every layer of
        its stage; its share of the KV heads), in whole blocks of ``block_tokens`` (16 for vLLM, 1 for SGLang and the
        datasheet view), times the replica's ``dp`` attention groups (each holds its own sequences). 0 when the
        weights do not fit. (For a model with windowed layers an engine counts differently; this counts every attention
        layer as full. A model with linear layers also keeps a fixed state per sequence, not in this count.)"""
        if not self.weights_fit:
            return 0.0
        block = int(engine_memory()["block_tokens"]) if self.memory_view == "vllm" else 1
        per_token = ((self.stage_attention_layers + self._mtp_kv_layers)
                     * float(self.model.kv_bytes_per_token_per_layer(self.b_kv)) / self.tp_kv)
        blocks = np.floor(self.free_bytes_by_stage / (per_token * block))
        return float(np.min(blocks)) * block * self.placement.dp

    def max_context(self, batch) -> float:
        """Longest context at which ``batch`` sequences' KV cache fits on every chip (tokens; inf if
        every layer is windowed, 0 if the weights do not fit). The fullest dp group holds
        ``ceil(batch / (replicas dp))`` of them."""
        if not self.weights_fit:
            return 0.0
        pl, m = self.placement, self.model
        per_group = math.ceil(float(batch) / self.replicas / pl.dp - 1e-9)
        state = self.stage_linear_layers / max(m.n_linear_layers, 1) * m.state_bytes_per_sequence() / pl.tp
        kv_room = self.free_bytes_by_stage / max(per_group, 1) - state         # one sequence's K/V on the stage
        attn = self.stage_attention_layers + self._mtp_kv_layers
        whole_model = [r * self.tp_kv * m.n_attention_layers / a if a else (math.inf if r >= 0 else -1.0)
                       for r, a in zip(kv_room, attn)]
        return float(min(_context_for_kv(m, b, self.b_kv) for b in whole_model))

    # ---- a decode step --------------------------------------------------------
    def _routed_experts_read(self, tokens) -> np.ndarray:
        """E[busiest rank's experts] per MoE layer for ``tokens`` per micro-batch (>= 1; interpolated between
        whole numbers)."""
        m = self.model
        if not m.is_moe:
            return np.zeros(np.shape(tokens))
        t = np.maximum(np.asarray(tokens, dtype=float), 1.0)
        lo, hi = np.floor(t), np.ceil(t)
        ep = self.placement.ep
        b_lo, b_hi = _busiest(m, lo, ep), _busiest(m, hi, ep)
        return b_lo + (t - lo) * (b_hi - b_lo)

    def step_stages(self, tokens, kv_positions=0.0, prefill_positions=0.0, *, queries_per_position=1.0,
                    routed_read="expected", sequences=None, index_positions=0.0,
                    index_prefill_positions=0.0) -> StageStep:
        """One micro-batch of one replica's step on a chip of each stage: what it reads and computes.

        The step's shape, per replica (scalars or arrays that broadcast):

        * ``tokens``: tokens through the matmuls (one per decoding sequence, plus the prompt tokens prefilled);
        * ``kv_positions``: cached positions the decoding sequences read, summed over sequences and layers
          (:meth:`~llmmath.models.Model.cached_positions` of each context: a windowed layer counts ``min(L, w)``);
          each is read once from HBM and attended to by ``queries_per_position`` queries (1, or ``k + 1`` when a
          multi-token-prediction step verifies ``k`` drafted tokens), in the decode (absorbed) form;
        * ``prefill_positions``: earlier positions the prompt tokens attend to, summed over tokens and layers
          (:meth:`~llmmath.models.Model.prefill_positions`), in the prefill (up-projected) form;
        * ``sequences``: sequences in the step (decoding ones and prompts being prefilled; default: ``tokens``, a
          decode step): each reads and writes its linear layers' fixed state once
          (:meth:`~llmmath.models.Model.state_bytes_per_sequence`; nothing for a model without linear layers);
        * ``index_positions``, ``index_prefill_positions``: with DeepSeek Sparse Attention, the cached tokens its
          indexer scores for the decoding sequences (each key read once) and for the prompt tokens, summed over
          layers (:meth:`~llmmath.models.Model.index_positions`, :meth:`~llmmath.models.Model.index_prefill_positions`;
          the indexer runs whole on every tensor-parallel chip).

        ``pp`` micro-batches of ``1/pp`` of each are in flight. ``routed_read``: ``"expected"`` (the busiest
        expert-parallel rank reads the experts its micro-batch is expected to touch, all of its dp groups' tokens
        together) or ``"all"`` (every expert of the rank). Arrays are stages x broadcast shape.
        """
        m, pl = self.model, self.placement
        n, P, Q = np.broadcast_arrays(np.asarray(tokens, dtype=float), np.asarray(kv_positions, dtype=float),
                                      np.asarray(prefill_positions, dtype=float))
        mb, P, Q = n / pl.pp, P / pl.pp, Q / pl.pp                      # per micro-batch
        share = self.stage_attention_layers / m.n_attention_layers
        col = (lambda a: np.asarray(a, dtype=float).reshape(a.shape + (1,) * mb.ndim))
        experts = self.experts_per_rank if routed_read == "all" else self._routed_experts_read(mb)
        routed_w = col(self.stage_moe_layers) * experts * m.expert_params * pl.ep / pl.stage_chips
        rows = np.zeros(pl.pp)
        if self._looked_up:
            rows[0] = 1.0
        rows = col(rows) * np.minimum(mb / pl.dp, m.vocab) * m.d_model / pl.tp
        weights = (col(self._other_read) / pl.tp + routed_w + rows) * self.b_w
        kv = P * col(share) * float(m.attended_bytes_per_position(self.b_kv)) / (pl.dp * self.tp_kv)
        matmul = mb / pl.dp * 2.0 * col(self._other_matmul) / pl.tp
        routed_f = mb * 2.0 * m.experts_per_token * m.expert_params * col(self.stage_moe_layers) / pl.stage_chips
        per_pos = float(m.attention_flops_per_token(1.0)) / float(m.cached_positions(1.0))         # decode form
        per_pf = float(m.attention_flops_per_token(1.0, absorbed=False)) / float(m.cached_positions(1.0))
        attention = (float(queries_per_position) * P * per_pos + Q * per_pf) * col(share) / (pl.tp * pl.dp)
        if m.index_topk:                       # DSA's indexer: every key read (decode) and scored, on each tp chip
            I, Ipf = np.asarray(index_positions, dtype=float) / pl.pp, np.asarray(index_prefill_positions,
                                                                                   dtype=float) / pl.pp
            kv = kv + I * col(share) * m.index_key_bytes / (pl.dp * self.tp_kv)
            attention = attention + (I + Ipf) * m.index_flops_per_position * col(share) / pl.dp
        if m.linear_layer_ids:                 # the linear layers: every token updates the state, every sequence
            lin = col(self.stage_linear_layers / m.n_linear_layers) / (pl.tp * pl.dp)   # reads and writes it once
            seqs = mb if sequences is None else np.asarray(sequences, dtype=float) / pl.pp
            attention = attention + mb * m.state_flops_per_token * lin
            kv = kv + seqs * 2.0 * m.state_bytes_per_sequence() * lin
        matmul, routed_f, attention, weights, kv = np.broadcast_arrays(matmul, routed_f, attention, weights, kv)
        F, W = self.flops_per_s, self.hbm_bytes_per_s
        return StageStep(compute_s=(matmul + routed_f + attention) / F, weight_s=weights / W, kv_s=kv / W,
                         flops={"matmul": matmul, "routed experts": routed_f, "attention": attention},
                         bytes_read={"weights": weights, "kv": kv, "routed experts": np.broadcast_to(routed_w * self.b_w, weights.shape)})

    def decode_stages(self, batch, context, *, routed_read="expected") -> StageStep:
        """One micro-batch on a chip of each stage, ``batch`` sequences over the deployment at ``context``
        (:meth:`step_stages` with one token and the cached positions of ``context`` per sequence).

        ``routed_read``: ``"expected"`` (the busiest rank's expected experts under uniform routing)
        or ``"all"`` (every expert of the rank read: large batches, and the balance batch).
        Arrays are stages x broadcast(batch, context).
        """
        B_r, L = np.broadcast_arrays(np.asarray(batch, dtype=float) / self.replicas, np.asarray(context, dtype=float))
        m = self.model
        return self.step_stages(B_r, B_r * np.asarray(m.cached_positions(L)), routed_read=routed_read,
                                index_positions=B_r * np.asarray(m.index_positions(L)))

    def decode_step(self, batch, context, *, routed_read="expected"):
        """(compute_s, weight_s, kv_s) of a whole decode step on the busiest chip: ``pp`` micro-batches through
        the slowest stage. The step time is ``max(compute_s, weight_s + kv_s)``."""
        st = self.decode_stages(batch, context, routed_read=routed_read)
        pp = self.placement.pp
        if pp == 1:
            return st.compute_s[0], st.weight_s[0], st.kv_s[0]
        worst = np.argmax(st.floor_s, axis=0)
        pick = (lambda a: np.take_along_axis(a, worst[None], axis=0)[0]) if np.ndim(worst) else (lambda a: a[worst])
        return pp * pick(st.compute_s), pp * pick(st.weight_s), pp * pick(st.kv_s)

    @property
    def expert_nodes(self) -> int:
        """Scale-up domains (nodes) one stage's expert group spans: 1 while the stage's chips fit one domain."""
        return max(1, math.ceil(self.placement.stage_chips / self.chip.scale_up_domain))

    def collective_bytes_per_step(self, batch, forwarded=False) -> dict:
        """Bytes each chip sends per step, by collective (``batch`` tokens over the deployment).

        ``"tensor-parallel all-reduce"``: two per layer (after attention and after the MLP), a ring
        sending ``2 (tp-1)/tp`` of the ``B_r/dp`` tokens' activations; ``"expert-parallel
        all-to-all"``: each MoE layer dispatches every token to its ``k`` experts in fp8 and combines
        in bf16, the ``(ep-1)/ep`` of them off the rank (:func:`llmmath.network.moe_all_to_all_bytes_per_token`),
        a chip sending its ``1/(tp dp)`` of the stage's tokens; ``"pipeline send"``: each micro-batch's
        activations to the next stage, split over the stage's chips (0 for one stage).

        ``forwarded`` (a bool, or an array shaped like ``batch``): where true and the expert group spans
        :attr:`expert_nodes` > 1 domains, the all-to-all is node-deduplicated, as DeepEP's normal kernels (prefill
        and training) and DeepSeek-V3's dispatch run it: a token crosses the network once to each other node holding
        one of its experts (:func:`llmmath.network.remote_nodes_reached`) and is forwarded over the scale-up link
        inside it; the bytes returned are then those on the network. Decode's low-latency kernels send one copy per
        expert, the default.
        """
        from . import network
        m, pl = self.model, self.placement
        B_r = np.asarray(positive("batch", batch), dtype=float) / self.replicas
        layers = float(np.max(self.stage_layers))     # the busiest stage's layers, for all pp micro-batches of B_r / pp
        moe = float(np.max(self.stage_moe_layers))
        act = B_r / pl.dp * m.d_model * self.b_act
        tp_ar = layers * 2 * 2 * (pl.tp - 1) / pl.tp * act
        a2a = (moe * B_r / pl.stage_chips * float(network.moe_all_to_all_bytes_per_token(m.d_model, m.experts_per_token,
                                                                                          pl.ep))
               if m.is_moe and pl.ep > 1 else 0.0 * B_r)
        nodes = self.expert_nodes
        if m.is_moe and pl.ep > 1 and nodes > 1 and np.any(forwarded):
            per_token = m.d_model * (1.0 + 2.0) * network.remote_nodes_reached(m.n_experts, m.experts_per_token, nodes)
            a2a = np.where(forwarded, moe * B_r / pl.stage_chips * per_token, a2a)
        send = B_r * m.d_model * self.b_act / pl.stage_chips if pl.pp > 1 else 0.0 * B_r
        return {"tensor-parallel all-reduce": result(tp_ar), "expert-parallel all-to-all": result(a2a),
                "pipeline send": result(send)}

    # ---- prefill ----------------------------------------------------------------
    def ttft_s(self, prompt_tokens) -> float:
        """Time to first token of one prompt on an idle replica (seconds, a floor).

        The prompt goes through the stages in turn. Its attention, dense layers, shared experts and
        head run on its own dp group (``tp`` chips); only the routed experts it picks are spread over
        the stage's ``tp dp`` chips. MLA in its up-projected prefill form
        (:meth:`~llmmath.models.Model.prefill_attention_flops`). Against it, every chip reads its weights once.
        """
        m, pl = self.model, self.placement
        T = float(prompt_tokens)
        attn = float(m.prefill_attention_flops(T, absorbed=False))
        flops = T * 2.0 * m.matmul_params_per_token + attn
        routed = T * float(m.routed_flops_per_token)
        read = float(np.sum(self.decode_stages(T * self.replicas * pl.pp, 0.0).bytes_read["weights"]))
        F = self.flops_per_s
        return max((flops - routed) / (pl.tp * F) + routed / (pl.stage_chips * F), read / self.hbm_bytes_per_s)


def _context_for_kv(m: models.Model, kv_bytes: float, b_kv: float) -> float:
    """Largest context whose one-sequence K/V (all attention layers) is at most ``kv_bytes``: inverts
    :meth:`~llmmath.models.Model.held_positions` (``n_full L + n_window min(L, w) + n_chunked min(L, c)``, piecewise
    linear and rising), between its breakpoints ``w`` and ``c``."""
    if kv_bytes <= 0:
        return 0.0
    if math.isinf(kv_bytes):
        return math.inf
    positions = kv_bytes / m.kv_bytes_per_token_per_layer(b_kv)
    local = sorted([(m.sliding_window, m.n_window_layers)] * bool(m.n_window_layers)
                   + [(m.attention_chunk, m.n_chunked_layers)] * bool(m.n_chunked_layers))
    rising, start, used = m.n_attention_layers, 0.0, 0.0     # layers still growing; where the segment starts
    for size, n in local + [(math.inf, 0)]:
        if rising == 0:
            return math.inf                                # every layer local: the cache stops growing
        end = used + rising * (size - start)               # positions held at the segment's end
        if positions <= end:
            return float(math.floor(start + (positions - used) / rising + 1e-9))
        used, start, rising = end, size, rising - n
    return math.inf

def placements(model, n_chips: int, pp: int = 1) -> list[Placement]:
    """Every one-replica placement of ``model`` on ``n_chips`` chips in ``pp`` stages (list of :class:`Placement`).

    ``tp`` runs over the divisors of the heads that divide ``n_chips / pp``, ``dp`` takes the
    rest of a stage, and an MoE model spreads its experts whole over the whole stage (``ep = tp dp``);
    a dense model has ``ep = 1``. Ordered by ``tp``.

    Raises:
        ValueError: ``pp`` not dividing ``n_chips``, or not in ``1..n_layers``.
    """
    m = models.get(model)
    n, P = positive_int("n_chips", n_chips), positive_int("pp", pp)
    if n % P or P > m.n_layers:
        raise ValueError(f"pp={P} must divide n_chips={n} and be at most {m.key}'s {m.n_layers} layers; allowed: "
                         f"{[d for d in _divisors(n) if d <= m.n_layers]}")
    stage = n // P
    return [Placement(tp=t, ep=stage if m.is_moe else 1, dp=stage // t, pp=P)
            for t in _divisors(stage) if m.n_heads % t == 0]


def most_sequences(model, chip, n_chips, context, *, weight_dtype="bf16", kv_dtype="bf16", pp: int | None = 1,
                   usable_hbm_fraction=1.0) -> tuple[float, Deployment | None]:
    """The most sequences of ``context`` tokens any one-replica placement (:func:`placements`) holds, and its
    :class:`Deployment` (None when no placement holds one sequence).

    ``pp``: the pipeline stages (default 1); None tries every ``pp`` that divides the chips.
    The placed answer to "how many sequences fit": unlike the pooled
    :func:`llmmath.serving.max_batch`, a chip can only hold its own weights and its own
    sequences' cache, so a placement that replicates weights (DP attention) or the KV (tensor
    parallelism past the KV heads; an MLA latent under any ``tp``) holds fewer, and a sequence
    cannot be cut across attention groups. DeepSeek-V3 fp8 on 8 H200s at 128k tokens: pooled
    49, best one-stage placement (DP8 EP8) 32, 4 whole sequences a GPU; at 1M tokens pooled 6,
    no one-stage placement 1 (a sequence's 73.7 GB latent exceeds every GPU's free HBM), 2
    stages 4 (each GPU keeps half the layers' latent).

    Raises:
        ValueError, KeyError: as :class:`Deployment` and :func:`placements`.
    """
    m = models.get(model)
    n = chip_and_count(chip, n_chips)[1]
    stages = [d for d in _divisors(n) if d <= m.n_layers] if pp is None else [pp]
    best, where = 0.0, None
    for P in stages:
        for pl in placements(m, n, P):
            d = Deployment(m, chip, n_chips, tp=pl.tp, ep=pl.ep, dp=pl.dp, pp=pl.pp, weight_dtype=weight_dtype,
                           kv_dtype=kv_dtype, usable_hbm_fraction=usable_hbm_fraction)
            b = d.max_batch(context)
            if b > best:
                best, where = b, d
    return best, where
