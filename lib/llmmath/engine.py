"""A continuous-batching serving engine, simulated step by step on the predicted step model (issue 29).

Requests arrive (Poisson or a trace) and are routed round-robin to a deployment's replicas. Every engine step runs
the decode token of each sequence whose prompt is done and, in the token budget left, chunks of the prompts waiting
to be prefilled (chunked prefill, as vLLM and SGLang schedule it). The KV cache is paged: a request is admitted when
its prompt's pages fit, every sequence grows a token a step, and when the next step's tokens do not fit the most
recently admitted sequence is preempted (recomputed later, or swapped to host memory and back), as vLLM does; the
``"reserve"`` policy instead admits a request only when its whole KV fits, and never preempts. Every step is priced by
the one step model, :func:`llmmath.predict.step`, that predict and the plan use (:class:`StepModel` tabulates it over
the step's tokens and reads its two linear coefficients)::

    t_step = step(tokens).time_s + kv_positions * kv_position_s + prefill_positions * prefill_position_s

``tokens``: the decode tokens and prompt chunks in the step (the weights read, the experts those tokens touch on the
busiest rank, their matmuls and collectives, the fixed time per kernel); ``kv_positions``: the decoding sequences'
cached positions summed over layers (a windowed layer holds ``min(L, w)``); ``prefill_positions``: the earlier
positions the prompt chunks attend to. A model with windowed layers also holds less KV per long sequence
(:meth:`StepModel.held_tokens`).

Prefill/decode disaggregation (``prefill=``): a pool of prefill replicas makes each first token; the prompt's KV then
crosses the scale-out network (after the prefill, not layer by layer: an upper bound on its delay; transfers do not
contend); the decode replicas make the rest.

Not modelled: pipelined replicas (``pp > 1``), a prefix cache's own memory, load-aware routing, contention between
KV transfers, stragglers.
"""

from __future__ import annotations

import bisect
import dataclasses
import math

import numpy as np

from .deployment import Deployment, placement_hint
from .predict import engine_constants, step
from ._validate import positive, positive_int, scalar

__all__ = ["StepModel", "step_model", "Simulation", "simulate", "LoadPoint", "at_concurrency"]

_DEPLOYMENT_KEYS = ("tp", "ep", "dp", "pp", "weight_dtype", "kv_dtype", "compute_dtype", "usable_hbm_fraction",
                    "gpu_memory_utilization", "engine")


class StepModel:
    """One replica's step as the engine asks for it: :func:`llmmath.predict.step`, tabulated, and its KV capacity.

    The one step model is linear in a step's cached positions and prefill positions once its tokens are fixed (every
    term that depends on them, the KV read and attention, is a rate times a count), and nonlinear only in its tokens
    (the experts they touch). So the engine asks :func:`~llmmath.predict.step` once for a table of step times over
    whole token counts (extended when a step holds more) and once for each linear coefficient::

        time_s(tokens, kv_positions, prefill_positions)
            = step(tokens).time_s + kv_positions * kv_position_s + prefill_positions * prefill_position_s

    ``kv_positions``: the decoding sequences' cached positions summed over layers (a windowed layer counts
    ``min(L, w)``); ``prefill_positions``: earlier positions the prompt tokens attend to, summed over layers.
    ``kv_capacity_tokens``: the KV one replica holds, in tokens of a sequence as every layer caches them (a model
    with windowed layers holds more tokens of long sequences: :meth:`held_tokens`).
    ``kv_bytes_per_token``: one token of one sequence, every layer, on one chip of its attention group.
    """

    _PROBE = 1e6                          # positions at which the linear coefficients are read (exact: linear)

    def __init__(self, d: Deployment, eplb: bool = False):
        if d.placement.pp != 1:
            raise ValueError(f"the engine simulates one-stage replicas; got pp={d.placement.pp} (allowed: 1)")
        self.deployment, self.eplb = d, eplb
        m, pl = d.model, d.placement
        one = float(step(d, 1.0, eplb=eplb, sequences=0.0).time_s)
        self.kv_position_s = (float(step(d, 1.0, self._PROBE, eplb=eplb, sequences=0.0).time_s) - one) / self._PROBE
        self.prefill_position_s = (float(step(d, 1.0, 0.0, self._PROBE, eplb=eplb, sequences=0.0).time_s)
                                   - one) / self._PROBE
        # a sequence's read and write of its linear layers' fixed state (0 for a model without them)
        self.sequence_s = (float(step(d, 1.0, eplb=eplb, sequences=self._PROBE).time_s) - one) / self._PROBE
        # DSA's indexer: a cached token scored and its key read (decode), or scored (prefill); 0 without DSA
        self.dsa = bool(m.index_topk)
        self.index_position_s = self.index_prefill_position_s = 0.0
        if self.dsa:
            self.index_position_s = (float(step(d, 1.0, eplb=eplb, sequences=0.0,
                                                index_positions=self._PROBE).time_s) - one) / self._PROBE
            self.index_prefill_position_s = (float(step(d, 1.0, eplb=eplb, sequences=0.0,
                                                        index_prefill_positions=self._PROBE).time_s) - one) / self._PROBE
        self._times: list = [0.0]                     # step seconds by whole tokens (index 0 unused), plain floats
        self._extend(1024)
        per_layer = float(m.kv_bytes_per_token_per_layer(d.b_kv))
        self.kv_bytes_per_token = per_layer * m.n_attention_layers / d.tp_kv
        free = float(np.min(d.free_bytes_by_stage))
        self.kv_capacity_tokens = max(free, 0.0) / self.kv_bytes_per_token * pl.dp
        self.n_kv_layers, self.n_window_layers, self.window = m.n_attention_layers, m.n_window_layers, m.sliding_window
        if m.index_topk:                                  # attended positions: as a window of k in every layer
            self.n_window_layers, self.window = m.n_attention_layers, m.index_topk
        self.n_chunked_layers, self.chunk = m.n_chunked_layers, m.attention_chunk
        self.local = m.has_local_layers                   # windowed or chunked layers: positions not n_kv_layers L
        # the fixed state a sequence keeps in the linear layers, in tokens of K/V on the same chip
        self.state_tokens = m.state_bytes_per_sequence() / pl.tp / self.kv_bytes_per_token

    def _extend(self, n: int) -> None:
        """Price steps of up to ``n`` tokens (one vectorized call of :func:`~llmmath.predict.step`)."""
        tokens = np.arange(len(self._times), n + 1, dtype=float)
        self._times += np.asarray(step(self.deployment, tokens, eplb=self.eplb, sequences=0.0).time_s,
                                  dtype=float).tolist()

    def time_s(self, n_tokens, kv_positions=0.0, prefill_positions=0.0, sequences=None, index_positions=0.0,
               index_prefill_positions=0.0) -> float:
        """The step time of :func:`llmmath.predict.step` for this shape (seconds); ``sequences`` in the step
        (default ``n_tokens``: every token a decoding sequence's); the indexer's positions with DSA."""
        n = int(n_tokens + 0.5)
        if n >= len(self._times):
            self._extend(2 * n)
        t = self._times[n] + kv_positions * self.kv_position_s + prefill_positions * self.prefill_position_s
        if self.sequence_s:                               # only a model with linear layers: the hot path skips it
            t += (n_tokens if sequences is None else sequences) * self.sequence_s
        if index_positions or index_prefill_positions:    # only with DSA
            t += index_positions * self.index_position_s + index_prefill_positions * self.index_prefill_position_s
        return t

    def kv_positions(self, contexts) -> float:
        """Cached positions summed over layers for decoding sequences at ``contexts`` (tokens, an array):
        :meth:`~llmmath.models.Model.cached_positions`, summed (without windowed or chunked layers its form
        ``n_kv_layers L`` inline, the attention layers only: the engine asks every step)."""
        if self.local:
            return float(np.sum(self.deployment.model.cached_positions(contexts)))
        return float(self.n_kv_layers * contexts.sum())

    def prefill_positions(self, done, chunk) -> float:
        """Earlier positions the prompt chunks of ``chunk`` tokens, after ``done`` already prefilled, attend to, summed
        over chunks and layers (:meth:`~llmmath.models.Model.prefill_positions`; arrays)."""
        if self.local:
            m = self.deployment.model
            return float(np.sum(m.prefill_positions(done + chunk) - m.prefill_positions(done)))
        return float(self.n_kv_layers * np.sum(chunk * done + chunk * (chunk - 1.0) / 2.0))   # full layers, inline

    def held_tokens(self, tokens):
        """KV one sequence of ``tokens`` written positions holds, in tokens of a full-attention cache (array):
        :meth:`~llmmath.models.Model.held_positions` over the attention layers (= L without windowed or chunked
        layers), plus its linear layers' fixed state (:attr:`state_tokens`) once it has a token."""
        held = self.deployment.model.held_positions(tokens) / self.n_kv_layers if self.local else tokens
        if self.state_tokens:
            held = held + np.where(np.asarray(tokens) > 0, self.state_tokens, 0.0)
        return held


def step_model(d: Deployment, eplb: bool = False) -> StepModel:
    """:class:`StepModel` of one replica of ``d``.

    Raises:
        ValueError: a pipelined deployment (``pp > 1``: not modelled yet).
    """
    return StepModel(d, eplb)


@dataclasses.dataclass(frozen=True)
class Simulation:
    """Per-request times (seconds) and the run's totals.

    ``arrival_times_s``, ``first_token_times_s``, ``finish_times_s``, ``output_tokens``: shape ``(n_requests,)``.
    ``in_system_area_s``: the requests the engine held at each moment (running, preempted, queued; in flight between
    the pools), integrated over the run from the engine's own step-by-step state.
    ``peak_kv_tokens``, ``kv_capacity_tokens``: tokens of KV one replica held at most / can hold (under the paged
    policy the pages allocated, under ``"reserve"`` the tokens written). ``kv_capacity_bytes``: the KV bytes one chip
    can hold. ``preemptions``: sequences preempted (paged policy). ``kv_ready_times_s``: when each prompt's KV reached
    the decode pool (prefill/decode disaggregation only).
    """

    arrival_times_s: np.ndarray
    first_token_times_s: np.ndarray
    finish_times_s: np.ndarray
    output_tokens: np.ndarray
    steps: int
    busy_s: float
    peak_kv_tokens: float
    kv_capacity_tokens: float
    preemptions: int = 0
    kv_capacity_bytes: float = float("nan")
    kv_ready_times_s: np.ndarray | None = None
    in_system_area_s: float = float("nan")

    @property
    def peak_kv_bytes(self) -> float:
        """The most KV one chip of a replica held (bytes; a replica's data-parallel ranks taken as evenly loaded)."""
        return self.peak_kv_tokens / self.kv_capacity_tokens * self.kv_capacity_bytes

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
        """Time average of the requests the engine held (running, preempted or queued) over the run, as it counted
        them step by step (``in_system_area_s``: the integral of that count over time, request-seconds): by Little's
        law, the arrival rate times the mean time in the system, if no request went missing."""
        span = float(self.finish_times_s.max() - self.arrival_times_s.min())
        return self.in_system_area_s / span

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
        k_arr = math.ceil((-(a - b / 2) + math.sqrt((a - b / 2) ** 2 + 2 * b * gap)) / b)
    else:
        k_arr = math.ceil(gap / a)
    return max(1, min(k_fin, k_arr))


def _prompt_chunks(left_pf: np.ndarray, decoding: np.ndarray, room: int) -> np.ndarray:
    """Prompt tokens each running sequence prefills this step: first come, first served, in ``room`` tokens."""
    chunk = np.zeros(left_pf.size)
    order = np.flatnonzero(~decoding)
    if order.size == 1:                                     # the common case: one prompt waiting
        chunk[order[0]] = min(left_pf[order[0]], room)
    elif order.size and room:
        before = np.cumsum(left_pf[order]) - left_pf[order]
        chunk[order] = np.minimum(left_pf[order], np.maximum(room - before, 0))
    return chunk


@dataclasses.dataclass
class _Replica:
    """What one replica's run produced (per request of its share, plus totals)."""

    first: np.ndarray
    finish: np.ndarray
    steps: int
    busy_s: float
    peak_kv_tokens: float
    preemptions: int
    in_system_area_s: float


def _serve(sm: StepModel, arrivals, ins, to_prefill, outs, *, budget, paged, page_tokens, swap_s_per_token,
           max_running) -> _Replica:
    """Run one replica over its requests (arrival order). ``to_prefill`` of 0: the request arrives with its prompt's KV
    (a disaggregated decode instance) and decodes from its first step.

    KV policy. ``paged`` False: a request is admitted only when its whole KV (prompt and every output token) fits
    beside the reservations of the others, so nothing is ever preempted. ``paged`` True (vLLM, SGLang): a request is
    admitted when its prompt's pages fit; every sequence grows a token a step in pages of ``page_tokens``; when the
    next step's tokens do not fit, the most recently admitted sequence is preempted and goes back to the front of
    the queue: with ``swap_s_per_token`` None its KV is dropped and its prompt and the tokens it made are prefilled
    again (recompute), otherwise its KV is copied to host memory and back (each token costing that many seconds on
    the step that moves it).
    """
    n = arrivals.size
    if paged:                        # KV held in pages; a windowed layer keeps only its window's pages
        pages = lambda x: sm.held_tokens(np.ceil(x / page_tokens) * page_tokens)  # noqa: E731
    else:
        pages = sm.held_tokens
    if paged and not sm.local and not sm.state_tokens:   # one sequence's pages, a plain float (the hot path)
        page_of = lambda x: math.ceil(x / page_tokens) * page_tokens  # noqa: E731
    else:
        page_of = lambda x: float(pages(x))  # noqa: E731
    cum_arrivals = np.concatenate([[0.0], np.cumsum(arrivals)]).tolist()
    arrival_list, ins_list = arrivals.tolist(), ins.tolist()         # plain floats for the per-request reads
    need = pages(ins + outs)
    first = np.full(n, np.nan)
    finish = np.full(n, np.nan)
    # a request's state while it waits: prompt tokens left to compute, computed so far, tokens made, KV held on host
    st_left, st_done = to_prefill.astype(float).copy(), (ins - to_prefill).astype(float)
    made, on_host = np.zeros(n), np.zeros(n)
    front: list[int] = []                                   # preempted requests, first to be readmitted
    run_idx = np.empty(0, dtype=np.int64)
    ins_r, left_pf, done_pf, gen = np.empty(0), np.empty(0), np.empty(0), np.empty(0)
    t, nxt, steps, busy, reserved, peak, preempted = 0.0, 0, 0, 0.0, 0.0, 0.0, 0
    area = 0.0                                  # integral of the requests in the system (running or waiting) over time

    def queued_area(t0: float, t1: float) -> float:
        """Integral over [t0, t1] of the requests arrived and not yet admitted (admissions happen at step starts)."""
        i0 = bisect.bisect_right(arrival_list, t0, lo=nxt)
        if i0 == n or arrival_list[i0] > t1:                       # nobody arrives meanwhile: the cheap case
            return (i0 - nxt) * (t1 - t0)
        i1 = bisect.bisect_right(arrival_list, t1, lo=i0)
        return (i0 - nxt) * (t1 - t0) + (i1 - i0) * t1 - (cum_arrivals[i1] - cum_arrivals[i0])

    slack = ((page_tokens - 1) if paged else 0.0) + sm.state_tokens   # per sequence beyond its tokens
    dsa = sm.dsa
    outs_r = np.empty(0)
    # running totals kept step by step (whole numbers in floats: exact): the tokens the running set has written,
    # and how many of its sequences still have prompt tokens to prefill
    written, n_pf = 0.0, 0

    def held(extra=None, bound=-np.inf):
        """KV tokens the running set holds after ``extra`` more tokens each (an array, or None for none; paged: its
        pages; reserve: its reservations). Where that is surely at most ``bound``, the cheap upper bound (at most one
        partly filled page each) is returned."""
        if not paged:
            return reserved
        w = written + (float(extra.sum()) if extra is not None else 0.0)
        if w + run_idx.size * slack <= bound:
            return w + run_idx.size * slack
        return float(pages(ins_r + gen + (extra if extra is not None else 0.0)).sum())

    while nxt < n or run_idx.size or front:
        if run_idx.size == 0 and not front and arrival_list[nxt] > t:
            t = arrival_list[nxt]                                   # idle until the next request
        # admit: preempted requests first, then arrivals in order, while their KV fits (and the batch is not full)
        step_extra_s, new = 0.0, []
        waiting = bool(front) or (nxt < n and arrival_list[nxt] <= t)
        in_use = held(None, sm.kv_capacity_tokens - page_of(ins_list[front[0] if front else nxt])) if waiting else 0.0
        exact = not paged
        while waiting and run_idx.size + len(new) < max_running:
            if front:
                j = front[0]
            elif nxt < n and arrival_list[nxt] <= t:
                j = nxt
            else:
                break
            want = page_of(ins_list[j] + made[j]) if paged else float(need[j])
            if in_use + want > sm.kv_capacity_tokens and not exact:     # the bound said no: count the pages
                in_use, exact = held() + float(pages(ins[new] + made[new]).sum()) if new else held(), True
            if in_use + want > sm.kv_capacity_tokens:
                break
            in_use += want
            if not paged:
                reserved += want
            new.append(j)
            if front:
                front.pop(0)
            else:
                nxt += 1
        if new:
            new = np.asarray(new)
            if swap_s_per_token is not None:
                step_extra_s += float(on_host[new].sum()) * swap_s_per_token
                on_host[new] = 0.0
            run_idx = np.concatenate([run_idx, new])
            ins_r, outs_r = np.concatenate([ins_r, ins[new]]), np.concatenate([outs_r, outs[new]])
            left_pf = np.concatenate([left_pf, st_left[new]])
            done_pf = np.concatenate([done_pf, st_done[new]])
            gen = np.concatenate([gen, made[new]])
            if new.size == 1:                                # one admission (the common case): scalars
                written += float(ins[new[0]] + made[new[0]])
                n_pf += int(st_left[new[0]] > 0)
            else:
                written += float((ins[new] + made[new]).sum())
                n_pf += int(np.count_nonzero(st_left[new] > 0))
        if run_idx.size == 0:
            continue
        # this step's work, preempting the newest sequences while its new tokens do not fit (paged KV only)
        while True:
            n_dec = run_idx.size - n_pf
            if n_pf == 0:                                   # every sequence decodes: no prompt chunk, all grow
                decoding = chunk = None
                fits = (not paged or run_idx.size == 1
                        or written + run_idx.size * (1 + slack) <= sm.kv_capacity_tokens
                        or float(pages(ins_r + gen + 1.0).sum()) <= sm.kv_capacity_tokens)
            elif n_pf == 1 and not sm.local:               # one prompt in flight (the common case): scalars
                decoding = None
                o = int(left_pf.argmax())                  # the one sequence with prompt tokens left
                chunk = min(float(left_pf[o]), float(max(budget - n_dec, 0)))
                o_grows = left_pf[o] - chunk <= 0
                fits = (not paged or run_idx.size == 1
                        or written + n_dec + o_grows + run_idx.size * slack <= sm.kv_capacity_tokens
                        or float(pages(ins_r + gen + (left_pf <= 0)).sum()) + (float(pages(ins_r[o] + gen[o] + 1))
                                                                             - float(pages(ins_r[o] + gen[o]))
                                                                             if o_grows else 0.0)
                        <= sm.kv_capacity_tokens)
            else:
                decoding = left_pf <= 0
                chunk = _prompt_chunks(left_pf, decoding, max(budget - n_dec, 0))
                grows = decoding | ((~decoding) & (left_pf - chunk <= 0))
                fits = not paged or run_idx.size == 1 or held(grows, sm.kv_capacity_tokens) <= sm.kv_capacity_tokens
            if fits:
                break
            j, p = int(run_idx[-1]), run_idx.size - 1
            preempted += 1
            made[j] = gen[p]
            if swap_s_per_token is None:                    # recompute: its prompt and its tokens, prefilled again
                st_left[j], st_done[j] = ins[j] + gen[p], 0.0
            else:                                           # swap: its written KV to host now, back on readmission
                st_left[j], st_done[j] = left_pf[p], done_pf[p]
                on_host[j] = done_pf[p] + (gen[p] if left_pf[p] <= 0 else 0.0)
                step_extra_s += on_host[j] * swap_s_per_token
            front.insert(0, j)
            written -= float(ins_r[p] + gen[p])
            n_pf -= int(left_pf[p] > 0)
            run_idx, ins_r, outs_r = run_idx[:-1], ins_r[:-1], outs_r[:-1]
            left_pf, done_pf, gen = left_pf[:-1], done_pf[:-1], gen[:-1]
        if n_pf == 1 and decoding is None:
            # one prompt chunk beside the decoders, priced and booked with scalars
            c, oi = chunk, o
            kv_dec = sm.n_kv_layers * (written - float(ins_r[oi] + gen[oi]))
            pf_pos = sm.n_kv_layers * (c * float(done_pf[oi]) + c * (c - 1.0) / 2.0)   # prefill_positions, full layers
            span = sm.time_s(n_dec + c, kv_dec, pf_pos, n_dec + 1) + step_extra_s
            steps += 1
            left_pf[oi] -= c
            done_pf[oi] += c
            gen += 1.0                                      # the decoders' tokens ...
            if o_grows:                                     # ... and the prompt's next (its first, if not a recompute)
                n_pf -= 1
                written += run_idx.size
                if np.isnan(first[run_idx[oi]]):
                    first[run_idx[oi]] = t + span
            else:
                gen[oi] -= 1.0
                written += run_idx.size - 1
            done_now = True
        elif n_pf == 0:
            # every running sequence decodes: nothing changes until one finishes, the KV fills or a request may be
            # admitted, and the steps meanwhile are an arithmetic series (the context grows by n_dec a step)
            k_done = int((outs_r - gen).min())                 # steps until the first sequence finishes
            k_fin = k_done
            if paged:                                       # steps whose new tokens surely fit, at least the next one
                room = sm.kv_capacity_tokens - written - n_dec * slack
                k_fin = min(k_fin, max(1, int(room // n_dec)))
            if sm.local:                                    # windows and chunks: positions grow by a step's
                ctx = ins_r + gen                           # tokens only between their breakpoints
                grow = (sm.n_kv_layers - sm.n_window_layers) * n_dec
                if sm.n_window_layers:                      # until a sequence's context passes the window
                    below = ctx < sm.window
                    if below.any():
                        k_fin = min(k_fin, max(1, int(np.min(sm.window - ctx[below]))))
                    grow += sm.n_window_layers * int(below.sum())
                if sm.n_chunked_layers:                     # until a sequence's next token opens a new chunk
                    k_fin = min(k_fin, max(1, int(np.min(sm.chunk - np.mod(ctx, sm.chunk)))))
                kv_pos = sm.kv_positions(ctx)
            else:
                grow, kv_pos = sm.n_kv_layers * n_dec, sm.n_kv_layers * written
            a = sm.time_s(n_dec, kv_pos)
            b = grow * sm.kv_position_s
            if dsa:                                         # the indexer scores every cached token: all grow
                a += sm.n_kv_layers * written * sm.index_position_s
                b += sm.n_kv_layers * n_dec * sm.index_position_s
            gap = None
            if not front and nxt < n and run_idx.size < max_running:
                want = page_of(ins_list[nxt]) if paged else float(need[nxt])
                if held(None, sm.kv_capacity_tokens - want) + want <= sm.kv_capacity_tokens:
                    gap = arrival_list[nxt] - t
            k = _steps_to(a, b, k_fin, gap)
            span = k * a + b * k * (k - 1) / 2.0 + step_extra_s
            steps += k
            gen += k
            written += k * run_idx.size
            done_now = k >= k_done
        else:
            if dsa:                                         # the indexer scores every earlier token, all layers
                ix = sm.n_kv_layers * float((ins_r[decoding] + gen[decoding]).sum())
                ix_pf = sm.n_kv_layers * float(np.sum(chunk * done_pf + chunk * (chunk - 1.0) / 2.0))
            else:
                ix = ix_pf = 0.0
            span = sm.time_s(n_dec + chunk.sum(), sm.kv_positions(ins_r[decoding] + gen[decoding]),
                             sm.prefill_positions(done_pf, chunk), n_dec + int(np.count_nonzero(chunk)), ix,
                             ix_pf) + step_extra_s
            steps += 1
            # outcomes: decoders make a token; a prompt finished this step makes its next token (its first, unless
            # it was a preempted sequence's recompute)
            left_pf = left_pf - chunk
            done_pf = done_pf + chunk
            gen += grows
            written += float(grows.sum())
            fresh = (~decoding) & grows
            n_pf -= int(fresh.sum())
            unset = np.isnan(first[run_idx]) & fresh
            first[run_idx[unset]] = t + span
            done_now = True
        area += span * (run_idx.size + len(front))
        if nxt < n and arrival_list[nxt] <= t + span:          # requests arrived and waiting meanwhile
            area += queued_area(t, t + span)
        t += span
        busy += span
        if paged:
            peak = max(peak, held(None, bound=peak))
        else:
            peak = max(peak, float((ins_r - left_pf + gen).sum()))
        if done_now:
            over = gen >= outs_r
            if over.any():                                  # finished: out of the running set
                finish[run_idx[over]] = t
                if not paged:
                    reserved -= float(need[run_idx[over]].sum())
                written -= float(ins_r[over].sum() + gen[over].sum())
                keep = ~over
                run_idx, ins_r, outs_r = run_idx[keep], ins_r[keep], outs_r[keep]
                left_pf, done_pf, gen = left_pf[keep], done_pf[keep], gen[keep]
    return _Replica(first, finish, steps, busy, peak, preempted, area)


def _lengths(name, value, n) -> np.ndarray:
    return np.broadcast_to(np.asarray(positive(name, value), dtype=float), (n,)).copy()


def _host_link_bytes_per_s(chip) -> float:
    links = engine_constants()["host_link"]
    if chip.key not in links:
        known = sorted(k for k in links if k not in ("source", "unverified"))
        raise KeyError(f"no host link (swap) bandwidth for chip {chip.key!r}; known: {known}")
    return float(links[chip.key])


def simulate(model, chip, n_chips=None, *, requests_per_s=None, n_requests=None, input_tokens, output_tokens, seed=0,
             arrival_times_s=None, token_budget=None, prefix_cache_hit=0.0, kv_policy="paged", page_tokens=16,
             preemption="recompute", max_running=None, prefill=None, tp=1, ep=1, dp=1, pp=1, weight_dtype="bf16",
             kv_dtype="bf16", compute_dtype=None, usable_hbm_fraction=None, gpu_memory_utilization=None,
             engine="vllm", eplb=False) -> Simulation:
    """Simulate a deployment's replicas under load (see the module docstring).

    Requests arrive (Poisson at ``requests_per_s``, or at the given ``arrival_times_s``) and are routed round-robin
    to the replicas, each simulated step by step on :func:`step_model`.

    Args:
        requests_per_s: arrival rate over the whole deployment (Poisson; omit when ``arrival_times_s`` is given).
        n_requests: requests simulated over the whole deployment (omit when ``arrival_times_s`` is given).
        arrival_times_s: a trace of arrival times (seconds, non-decreasing), instead of Poisson arrivals.
        input_tokens, output_tokens: lengths, a number (every request) or an array of one per request.
        token_budget: tokens one step may hold (decode tokens first, then prompt chunks); default the deployment's
            ``max_num_batched_tokens`` (:func:`~llmmath.deployment.default_token_budget`).
        prefix_cache_hit: share of each prompt found in a prefix cache (not recomputed), in [0, 1).
        kv_policy: ``"paged"`` (admit when the prompt fits, grow in pages, preempt when full: vLLM, SGLang) or
            ``"reserve"`` (admit only when the whole request's KV fits: never preempts).
        page_tokens: tokens per KV page (vLLM's default block is 16; SGLang's page is 1).
        preemption: ``"recompute"`` (vLLM's default) or ``"swap"`` (to host memory over the chip's host link,
            ``data/engine_constants.toml`` [host_link]).
        max_running: most sequences one replica runs at once (vLLM's ``max_num_seqs``); None: as many as fit.
        prefill: None (each replica prefills and decodes: aggregated serving) or a dict describing a separate pool
            of prefill replicas (prefill/decode disaggregation): ``n_chips`` and any of ``tp, ep, dp,
            weight_dtype, kv_dtype, compute_dtype, token_budget`` (the rest as the decode side). Each prompt's KV then
            crosses the scale-out network (every chip of its attention group sending its share at the NIC's achieved
            rate, ``[collectives] all_to_all_fraction``) after its prefill, and the decode pool makes the tokens after
            the first.
        the rest (placement, precisions, the memory view, ``eplb``): as :func:`llmmath.planner.predict`;
            they describe the (decode) replicas.

    Returns:
        :class:`Simulation` over every request.

    Raises:
        ValueError: a request whose KV alone exceeds a replica's capacity, ``pp > 1`` (one-stage replicas only), bad
            rates, lengths, policies or a prefill pool with unknown keys.
        KeyError: ``preemption="swap"`` on a chip with no host-link figure.
    """
    d = Deployment(model, chip, n_chips, tp=tp, ep=ep, dp=dp, pp=pp, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                   compute_dtype=compute_dtype, usable_hbm_fraction=usable_hbm_fraction,
                   gpu_memory_utilization=gpu_memory_utilization, engine=engine, max_num_batched_tokens=token_budget)
    sm = step_model(d, eplb)
    if arrival_times_s is None:
        if requests_per_s is None or n_requests is None:
            raise ValueError("give requests_per_s and n_requests (Poisson arrivals), or arrival_times_s (a trace)")
        n = positive_int("n_requests", n_requests)
        rate = float(positive("requests_per_s", scalar("requests_per_s", requests_per_s)))
        arrivals = np.cumsum(np.random.default_rng(seed).exponential(1.0 / rate, n))
    else:
        if requests_per_s is not None or n_requests is not None:
            raise ValueError("arrival_times_s is a trace: give it alone, without requests_per_s or n_requests")
        arrivals = np.asarray(arrival_times_s, dtype=float).ravel()
        if arrivals.size == 0 or not np.all(np.isfinite(arrivals)) or np.any(arrivals < 0) \
                or np.any(np.diff(arrivals) < 0):
            raise ValueError("arrival_times_s must be a non-empty array of finite, non-negative, non-decreasing "
                             "times in seconds")
        n = arrivals.size
    budget = d.replica_token_budget                 # each dp rank's max_num_batched_tokens, together
    hit = float(scalar("prefix_cache_hit", prefix_cache_hit))
    if not 0 <= hit < 1:
        raise ValueError(f"prefix_cache_hit must be in [0, 1), got {prefix_cache_hit!r}")
    if kv_policy not in ("paged", "reserve"):
        raise ValueError(f"kv_policy must be 'paged' or 'reserve', got {kv_policy!r}")
    if preemption not in ("recompute", "swap"):
        raise ValueError(f"preemption must be 'recompute' or 'swap', got {preemption!r}")
    page = positive_int("page_tokens", page_tokens)
    cap_run = np.inf if max_running is None else positive_int("max_running", max_running)
    ins = _lengths("input_tokens", input_tokens, n)
    outs = np.maximum(_lengths("output_tokens", output_tokens, n).round(), 1.0)
    to_prefill = np.ceil(ins * (1.0 - hit))
    paged = kv_policy == "paged"

    def run(sm_, arr, ins_, pf_, outs_, replicas, budget_):
        """Route requests round-robin (in arrival order) to ``replicas`` copies of ``sm_`` and run each."""
        # the room one request's cache takes, in full-cache tokens (windowed and chunked layers hold less; linear
        # layers' state more)
        need = sm_.held_tokens(np.ceil((ins_ + outs_) / page) * page if paged else ins_ + outs_)
        if np.any(need > sm_.kv_capacity_tokens):
            hint = "" if sm_ is not sm else placement_hint(
                model, chip, n_chips, float(need.max()), tp=tp, ep=ep, dp=dp, pp=pp, weight_dtype=weight_dtype,
                kv_dtype=kv_dtype, compute_dtype=compute_dtype, usable_hbm_fraction=usable_hbm_fraction,
                gpu_memory_utilization=gpu_memory_utilization, engine=engine)
            raise ValueError(f"a request needs {need.max():,.0f} tokens of KV, a replica holds "
                             f"{sm_.kv_capacity_tokens:,.0f}: " + (f"{hint}; or shorter requests" if hint else
                                                                   "use more chips or shorter requests"))
        order = np.argsort(arr, kind="stable")
        first, finish = np.full(arr.size, np.nan), np.full(arr.size, np.nan)
        tot = [0, 0.0, 0.0, 0, 0.0]
        for r in range(min(replicas, arr.size)):
            mine = order[r::replicas]
            rep = _serve(sm_, arr[mine], ins_[mine], pf_[mine], outs_[mine], budget=budget_, paged=paged,
                         page_tokens=page, swap_s_per_token=swap, max_running=cap_run)
            first[mine], finish[mine] = rep.first, rep.finish
            tot = [tot[0] + rep.steps, tot[1] + rep.busy_s, max(tot[2], rep.peak_kv_tokens), tot[3] + rep.preemptions,
                   tot[4] + rep.in_system_area_s]
        return first, finish, tot

    cap_bytes = max(float(np.min(d.free_bytes_by_stage)), 0.0)
    swap = None
    if preemption == "swap":
        swap = sm.kv_bytes_per_token / _host_link_bytes_per_s(d.chip)
    if prefill is None:
        first, finish, (steps, busy, peak, pre, area) = run(sm, arrivals, ins, to_prefill, outs, d.replicas, budget)
        return Simulation(arrivals, first, finish, outs, steps, busy, peak, sm.kv_capacity_tokens, pre, cap_bytes,
                          in_system_area_s=area)

    # prefill/decode disaggregation: the prefill pool makes each first token, the KV crosses the network, the decode
    # pool makes the rest
    if not isinstance(prefill, dict) or "n_chips" not in prefill:
        raise ValueError("prefill must be a dict with at least 'n_chips' (and any of tp, ep, dp, weight_dtype, "
                         "kv_dtype, compute_dtype, token_budget)")
    allowed = {"n_chips", "tp", "ep", "dp", "weight_dtype", "kv_dtype", "compute_dtype", "token_budget"}
    if set(prefill) - allowed:
        raise ValueError(f"unknown prefill keys {sorted(set(prefill) - allowed)}; allowed: {sorted(allowed)}")
    pkw = dict(tp=1, ep=1, dp=1, weight_dtype=weight_dtype, kv_dtype=kv_dtype, compute_dtype=compute_dtype)
    pkw.update({k: v for k, v in prefill.items() if k not in ("n_chips", "token_budget")})
    try:
        dp_ = Deployment(model, chip, prefill["n_chips"], usable_hbm_fraction=usable_hbm_fraction,
                         gpu_memory_utilization=gpu_memory_utilization, engine=engine,
                         max_num_batched_tokens=prefill.get("token_budget", d.max_num_batched_tokens), **pkw)
        sm_p = step_model(dp_, eplb)
    except ValueError as e:
        raise ValueError(f"prefill pool: {e.args[0]}") from e
    p_budget = dp_.replica_token_budget
    first, _, (s1, b1, _, pre1, area1) = run(sm_p, arrivals, ins, to_prefill, np.ones(n), dp_.replicas, p_budget)
    nic = d.chip.scale_out_bytes_per_s * engine_constants()["collectives"]["all_to_all_fraction"]
    ready = first + ins * max(sm_p.kv_bytes_per_token, sm.kv_bytes_per_token) / nic
    finish = first.copy()
    more = outs > 1
    if more.any():
        # the decode side holds the prompt and the first token, and makes the rest
        _, fin, (s2, b2, peak, pre2, area2) = run(sm, ready[more], ins[more] + 1, np.zeros(int(more.sum())),
                                                 outs[more] - 1, d.replicas, budget)
        finish[more] = fin
    else:
        s2, b2, peak, pre2, area2 = 0, 0.0, 0.0, 0, 0.0
    # in the system between the pools: a prompt's KV in flight (its first token made, not yet at the decode pool)
    area_transit = float(np.sum(ready[more] - first[more]))
    return Simulation(arrivals, first, finish, outs, s1 + s2, b1 + b2, peak, sm.kv_capacity_tokens, pre1 + pre2,
                      cap_bytes, kv_ready_times_s=ready, in_system_area_s=area1 + area2 + area_transit)


@dataclasses.dataclass(frozen=True)
class LoadPoint:
    """One point of a latency-under-load curve (:func:`at_concurrency`): ``concurrency`` clients; the mean time to
    first token and inter-token latency (seconds) each client saw, and the deployment's output tokens per second in
    the steady state."""

    concurrency: int
    ttft_s: float
    itl_s: float
    output_tokens_per_s: float


def at_concurrency(model, chip, n_chips=None, *, concurrency, input_tokens, output_tokens, rounds: int = 8,
                   **kwargs) -> LoadPoint:
    """A closed-loop benchmark simulated: ``concurrency`` clients, each sending its next request the moment its last
    one finishes (AIPerf, genai-perf, ``vllm bench serve --max-concurrency``), at fixed lengths.

    Simulated with :func:`simulate` as ``rounds x concurrency`` requests queued at once under a running limit of the
    clients per replica: the engine then admits a request exactly when a client's previous one has left, which is when
    that client would have sent it. Each request's send time is the finish of the request it replaced (the first
    ``concurrency`` at 0), so its time to first token counts its wait in the engine's queue, as a client's would
    (past the batch the KV cache holds, requests queue inside the server). The throughput is taken between the
    ``concurrency``-th finish and the ``concurrency``-th from last (ramp-up and drain left out). ``kwargs``: the
    placement, precisions and engine settings of :func:`simulate` (not its arrivals or ``max_running``).

    Raises:
        ValueError: ``concurrency`` or ``rounds`` below 1 (or ``rounds`` below 3), arrival arguments in ``kwargs``,
            and anything :func:`simulate` refuses.
    """
    n_clients = positive_int("concurrency", concurrency)
    r = positive_int("rounds", rounds)
    if r < 3:
        raise ValueError(f"rounds must be at least 3 (a ramp-up, a steady state and a drain), got {rounds!r}")
    bad = {"requests_per_s", "n_requests", "arrival_times_s", "max_running"} & set(kwargs)
    if bad:
        raise ValueError(f"at_concurrency sets the arrivals and the running limit itself; drop {sorted(bad)}")
    n = r * n_clients
    d = Deployment(model, chip, n_chips, **{k: v for k, v in kwargs.items() if k in _DEPLOYMENT_KEYS})
    per_replica = math.ceil(n_clients / d.replicas)
    sim = simulate(model, chip, n_chips, arrival_times_s=np.zeros(n), input_tokens=input_tokens,
                   output_tokens=output_tokens, max_running=per_replica, **kwargs)
    done = np.sort(sim.finish_times_s)
    admitted = np.argsort(sim.first_token_times_s, kind="stable")     # FIFO: the order requests got their turn
    sent = np.zeros(n)
    sent[admitted[n_clients:]] = done[: n - n_clients]
    ttft = sim.first_token_times_s - sent
    t0, t1 = done[n_clients - 1], done[n - n_clients - 1]
    steady = (sim.finish_times_s > t0) & (sim.finish_times_s <= t1)
    rate = float(sim.output_tokens[steady].sum() / (t1 - t0)) if t1 > t0 else float("nan")
    return LoadPoint(n_clients, float(np.mean(ttft)), float(np.nanmean(sim.tpot_s)), rate)
