"""A continuous-batching serving engine, simulated step by step on the predicted step model (issue 29, begun).

One replica of a deployment serves requests that arrive over time. Every engine step runs the
decode token of each sequence whose prompt is done and, in the token budget left, chunks of the
prompts waiting to be prefilled (chunked prefill, as vLLM and SGLang schedule it). A request is
admitted when its whole KV cache (prompt and output) fits beside the others' (so nothing is ever
preempted: ``preemptions`` is 0 by construction, the conservative policy). The step's time is the
predicted one (:mod:`llmmath.predict`'s terms, linear in what the step holds)::

    t_step = t_weights + n_tokens t_token + n_context t_context + n_prefill_attention t_attention

``t_weights``: every weight the busiest chip reads (all experts: a serving batch touches them);
``t_token``: one token's matmuls and its share of the all-reduces and all-to-alls; ``t_context``:
reading one cached token and attending to it (decode); ``t_attention``: one prompt token attending
to one earlier prompt position (prefill). All at the sustained rates, compute and memory summed.

Not modelled yet: prefill/decode disaggregation and its KV transfer, swap or recompute preemption,
page granularity, more than one replica interacting (requests are split evenly over replicas).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .deployment import Deployment
from .predict import engine_constants, sustained
from ._validate import positive, positive_int, scalar

__all__ = ["StepModel", "step_model", "Simulation", "simulate"]


@dataclasses.dataclass(frozen=True)
class StepModel:
    """The linear step model of one replica (seconds) and its KV capacity (tokens)."""

    weights_s: float
    token_s: float
    context_token_s: float
    prefill_attention_s: float
    kv_capacity_tokens: float
    kv_bytes_per_token: float          # per chip of the busiest stage, one token of one sequence

    def time_s(self, n_tokens, n_context, n_prefill_attention=0.0):
        return (self.weights_s + n_tokens * self.token_s + n_context * self.context_token_s
                + n_prefill_attention * self.prefill_attention_s)


def step_model(d: Deployment) -> StepModel:
    """:class:`StepModel` of one replica of ``d`` at its sustained rates (``data/engine_constants.toml``).

    Raises:
        ValueError: a pipelined deployment (``pp > 1``: not modelled yet).
    """
    if d.placement.pp != 1:
        raise ValueError(f"the engine simulates one-stage replicas; got pp={d.placement.pp} (allowed: 1)")
    from . import network

    m, pl = d.model, d.placement
    k = engine_constants()
    sus = sustained(d.chip)
    W = d.hbm_bytes_per_s * sus["hbm_fraction"]
    F = d.flops_per_s * sus["matmul_fraction"]
    F_attn = d.chip.flops_per_s("bf16") * sus["matmul_fraction"]
    all_read = d.decode_stages(float(d.replicas * pl.dp), 0.0, routed_read="all").bytes_read["weights"]
    weights_s = float(all_read[0]) / W
    # a token's matmuls, spread over the replica's chips (the busiest chip's share), and its collectives
    token_s = 2.0 * m.matmul_params_per_token / (pl.chips_per_replica * F)
    tp_bus = d.chip.scale_up_bytes_per_s * k["collectives"]["nvlink_all_reduce_fraction"]
    if pl.tp > 1:
        token_s += m.n_layers * 2 * 2 * (pl.tp - 1) / pl.tp * m.d_model * d.b_act / tp_bus / pl.dp
    if pl.ep > 1 and m.is_moe:
        from .predict import _links
        token_s += m.n_moe_layers * float(network.moe_all_to_all_bytes_per_token(
            m.d_model, m.experts_per_token, pl.ep)) / _links(d)[1] / pl.stage_chips
    # one token of one sequence's cache on each chip of its attention group (every layer; a windowed layer counted
    # as full: an upper bound), the busiest chip reading its group's share of the replica's context
    per_ctx_bytes = float(m.kv_bytes_per_token_per_layer(d.b_kv)) * m.n_layers / d.tp_kv
    attn_per_pos = float(m.attention_flops_per_token(1.0))           # decode (absorbed) form, all layers
    context_token_s = per_ctx_bytes / (pl.dp * W) + attn_per_pos / (pl.tp * pl.dp * F_attn)
    prefill_pos = float(m.prefill_attention_flops(2.0, absorbed=False))  # one position pair, all layers
    prefill_attention_s = prefill_pos / (pl.tp * pl.dp * F_attn)
    free = float(np.min(d.free_bytes_by_stage))
    cap = max(free, 0.0) / per_ctx_bytes * pl.dp
    return StepModel(weights_s, token_s, context_token_s, prefill_attention_s, cap, per_ctx_bytes)


@dataclasses.dataclass(frozen=True)
class Simulation:
    """Per-request times (seconds) and the run's totals."""

    arrival_times_s: np.ndarray
    first_token_times_s: np.ndarray
    finish_times_s: np.ndarray
    output_tokens: np.ndarray
    steps: int
    busy_s: float
    peak_kv_tokens: float
    kv_capacity_tokens: float
    preemptions: int = 0

    @property
    def ttft_s(self) -> np.ndarray:
        return self.first_token_times_s - self.arrival_times_s

    @property
    def e2e_s(self) -> np.ndarray:
        return self.finish_times_s - self.arrival_times_s

    @property
    def tpot_s(self) -> np.ndarray:
        """Mean time per output token after the first (NaN for one-token outputs)."""
        n = self.output_tokens - 1
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, (self.finish_times_s - self.first_token_times_s) / np.maximum(n, 1), np.nan)

    @property
    def throughput_output_tokens_per_s(self) -> float:
        span = float(self.finish_times_s.max() - self.arrival_times_s.min())
        return float(self.output_tokens.sum()) / span

    @property
    def mean_requests_in_system(self) -> float:
        """Time average of the requests present (arrived, not finished) over the run."""
        span = float(self.finish_times_s.max() - self.arrival_times_s.min())
        return float(self.e2e_s.sum()) / span

    def percentile(self, what: str, q: float) -> float:
        """The ``q``-th percentile of ``ttft_s``, ``tpot_s`` or ``e2e_s`` (seconds)."""
        return float(np.nanpercentile(getattr(self, what), q))

    def goodput(self, ttft_target_s: float, tpot_target_s: float) -> tuple[float, float]:
        """(share of requests that met both targets, their output tokens per second over the run).

        A request meets them when its time to first token is at most ``ttft_target_s`` and its mean time per
        output token at most ``tpot_target_s`` (a one-token output has no TPOT and is judged by its TTFT).

        Raises:
            ValueError: a target that is not a positive number.
        """
        a = float(positive("ttft_target_s", scalar("ttft_target_s", ttft_target_s)))
        b = float(positive("tpot_target_s", scalar("tpot_target_s", tpot_target_s)))
        tpot = self.tpot_s
        good = (self.ttft_s <= a) & (np.isnan(tpot) | (tpot <= b))
        span = float(self.finish_times_s.max() - self.arrival_times_s.min())
        return float(good.mean()), float(self.output_tokens[good].sum()) / span


def _steps_to(a: float, b: float, k_fin: int, gap: float | None) -> int:
    """Decode steps to take at once: until a sequence finishes (``k_fin``) or, if a waiting request could be admitted,
    until the first step boundary at or after its arrival ``gap`` seconds away. Step ``j`` lasts ``a + b j``, so
    ``k`` steps last ``k a + b k (k - 1) / 2``; solve for the smallest ``k`` reaching ``gap``."""
    if gap is None or k_fin <= 1:
        return k_fin
    if b > 0:
        k_arr = int(np.ceil((-(a - b / 2) + np.sqrt((a - b / 2) ** 2 + 2 * b * gap)) / b))
    else:
        k_arr = int(np.ceil(gap / a))
    return max(1, min(k_fin, k_arr))


def _prompt_chunks(left_pf: np.ndarray, decoding: np.ndarray, room: int) -> np.ndarray:
    """Prompt tokens each running sequence prefills this step: first come, first served, in ``room`` tokens."""
    chunk = np.zeros(left_pf.size)
    order = np.flatnonzero(~decoding)
    if order.size and room:
        before = np.cumsum(left_pf[order]) - left_pf[order]
        chunk[order] = np.minimum(left_pf[order], np.maximum(room - before, 0))
    return chunk


def _retire(t, reserved, run_idx, left_pf, done_pf, gen, outs, need, finish):
    """Finish the sequences that made their last token by time ``t``: record it, free their KV, drop them."""
    over = gen >= outs[run_idx]
    if not over.any():
        return reserved, (run_idx, left_pf, done_pf, gen)
    finish[run_idx[over]] = t
    keep = ~over
    return (reserved - float(need[run_idx[over]].sum()),
            (run_idx[keep], left_pf[keep], done_pf[keep], gen[keep]))


def simulate(model, chip, n_chips=None, *, requests_per_s, n_requests, input_tokens, output_tokens, seed=0,
             token_budget=8192, prefix_cache_hit=0.0, tp=1, ep=1, dp=1, pp=1, weight_dtype="bf16", kv_dtype="bf16",
             compute_dtype=None, usable_hbm_fraction=0.9) -> Simulation:
    """Simulate one replica under Poisson arrivals (see the module docstring).

    Args:
        requests_per_s: arrival rate over the whole deployment (split evenly over its replicas).
        n_requests: requests simulated (on one replica).
        input_tokens, output_tokens: lengths, a number (every request) or an array of ``n_requests``.
        token_budget: tokens one step may hold (decode tokens first, then prompt chunks).
        prefix_cache_hit: share of each prompt found in a prefix cache (not recomputed), in [0, 1).
        the rest: as :func:`llmmath.planner.predict`.

    Returns:
        :class:`Simulation`.

    Raises:
        ValueError: a request whose KV alone exceeds the replica's capacity, ``pp > 1`` (one-stage
            replicas only, for now), bad rates or lengths.
    """
    d = Deployment(model, chip, n_chips, tp=tp, ep=ep, dp=dp, pp=pp, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                   compute_dtype=compute_dtype, usable_hbm_fraction=usable_hbm_fraction)
    sm = step_model(d)
    n = positive_int("n_requests", n_requests)
    rate = float(positive("requests_per_s", scalar("requests_per_s", requests_per_s))) / d.replicas
    budget = positive_int("token_budget", token_budget)
    hit = float(scalar("prefix_cache_hit", prefix_cache_hit))
    if not 0 <= hit < 1:
        raise ValueError(f"prefix_cache_hit must be in [0, 1), got {prefix_cache_hit!r}")
    arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, n))
    ins = np.broadcast_to(np.asarray(positive("input_tokens", input_tokens), dtype=float), (n,)).copy()
    outs = np.maximum(np.broadcast_to(np.asarray(positive("output_tokens", output_tokens), dtype=float), (n,)).round(),
                      1.0)
    need = ins + outs
    if np.any(need > sm.kv_capacity_tokens):
        raise ValueError(f"a request needs {need.max():,.0f} tokens of KV, the replica holds "
                         f"{sm.kv_capacity_tokens:,.0f}: use more chips or shorter requests")
    to_prefill = np.ceil(ins * (1.0 - hit))
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    # running set, as parallel arrays (index into the requests)
    run_idx = np.empty(0, dtype=np.int64)
    left_pf = np.empty(0)       # prompt tokens still to prefill
    done_pf = np.empty(0)       # prompt tokens prefilled so far (the prefill's own context)
    gen = np.empty(0)           # output tokens made
    t, nxt, steps, busy, reserved, peak = 0.0, 0, 0, 0.0, 0.0, 0.0
    while nxt < n or run_idx.size:
        if run_idx.size == 0 and nxt < n and arrivals[nxt] > t:
            t = arrivals[nxt]                                       # idle until the next request
        # admit arrived requests in order while their whole KV fits
        new = []
        while nxt < n and arrivals[nxt] <= t and reserved + need[nxt] <= sm.kv_capacity_tokens:
            reserved += need[nxt]
            new.append(nxt)
            nxt += 1
        if new:
            new = np.asarray(new)
            run_idx = np.concatenate([run_idx, new])
            left_pf = np.concatenate([left_pf, to_prefill[new]])
            done_pf = np.concatenate([done_pf, ins[new] - to_prefill[new]])
            gen = np.concatenate([gen, np.zeros(new.size)])
        if run_idx.size == 0:
            continue
        decoding = left_pf <= 0
        n_dec = int(decoding.sum())
        if n_dec == run_idx.size:
            # every running sequence decodes: nothing changes until one finishes or a request may be admitted, and
            # the steps meanwhile are an arithmetic series (the context grows by n_dec a step): jump over them
            k_fin = int(np.min(outs[run_idx] - gen))
            ctx0 = float((ins[run_idx] + gen).sum())
            a = sm.time_s(n_dec, ctx0)
            b = n_dec * sm.context_token_s
            admit_next = nxt < n and reserved + need[nxt] <= sm.kv_capacity_tokens
            k = _steps_to(a, b, k_fin, arrivals[nxt] - t if admit_next else None)
            span = k * a + b * k * (k - 1) / 2.0
            t += span
            busy += span
            steps += k
            gen += k
            peak = max(peak, float((ins[run_idx] + gen).sum()))
            reserved, (run_idx, left_pf, done_pf, gen) = _retire(t, reserved, run_idx, left_pf, done_pf, gen, outs,
                                                                 need, finish)
            continue
        chunk = _prompt_chunks(left_pf, decoding, max(budget - n_dec, 0))
        ctx = float((ins[run_idx][decoding] + gen[decoding]).sum())
        pf_attn = float((chunk * (done_pf + chunk / 2.0)).sum())
        step = sm.time_s(n_dec + chunk.sum(), ctx, pf_attn)
        t += step
        busy += step
        steps += 1
        peak = max(peak, float((ins[run_idx] - left_pf + chunk + gen).sum()))
        # outcomes: decoders make a token; a prompt finished this step makes its first token
        gen[decoding] += 1
        left_pf = left_pf - chunk
        done_pf = done_pf + chunk
        finished_pf = (~decoding) & (left_pf <= 0)
        gen[finished_pf] += 1
        first[run_idx[finished_pf]] = t
        reserved, (run_idx, left_pf, done_pf, gen) = _retire(t, reserved, run_idx, left_pf, done_pf, gen, outs, need,
                                                             finish)
    return Simulation(arrivals, first, finish, outs, steps, busy, peak, sm.kv_capacity_tokens)
