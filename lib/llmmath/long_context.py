"""Long-context helpers for chapter 8: decode cost at the largest batch that fits, price tiers, growth rates.

* :func:`best_batch_decode_cost`: the roofline cost per token at the largest batch whose
  KV cache fits beside the weights (the cheapest operating point at a context), with
  ``inf`` where not even one sequence fits.
* :func:`api_price_usd_per_mtok`: a provider's input and output price at a prompt length,
  from ``data/long_context_pricing.toml`` (its long-context tier applies above the threshold).
* :func:`growth_per_year`: the annual growth factor of a quantity from (year, value) points,
  a least-squares line through ``log(value)``.
* :func:`architecture_wall`: what one sequence's cache weighs at a context, apart (K/V that grows, a linear
  layer's fixed state) and against the same layers all attending to everything, and the decode step at the largest
  batch any placement holds (the one step model, :func:`llmmath.predict.step`): how far windowed, chunked, linear
  and latent attention move the long-context wall.
"""

from __future__ import annotations

import numpy as np

import dataclasses

from . import _catalog, hardware, models, serving
from ._validate import as_array, broadcast, finite_result, non_negative, positive, positive_int, result

__all__ = ["best_batch_decode_cost", "api_price_usd_per_mtok", "growth_per_year", "attention_to_weight_flops",
           "vendor_trend", "Wall", "architecture_wall"]


@finite_result(allow_inf=True)
def best_batch_decode_cost(model, chip, context, n_chips=1, weight_dtype="bf16", kv_dtype="bf16"):
    """``(batch, cost)``: the largest batch that fits at ``context`` and its chip-seconds per token.

    ``batch = serving.max_batch(...)`` (weights plus ``batch x context`` tokens of KV within
    ``n_chips`` HBMs); ``cost = serving.decode_cost_per_token(model, chip, batch, context, ...)``,
    the cheapest decode cost per token at that context, since cost per token only falls
    with batch. Where not even one sequence fits (``batch = 0``), ``cost`` is ``inf``
    (documented, so a sweep over contexts stays vectorized). ``context`` must be > 0
    (at 0 no KV bounds the batch). Broadcasts over ``context``.

    Raises:
        ValueError: context not > 0, n_chips < 1. KeyError: unknown model, chip or dtype.
    """
    L = positive("context", context)
    n = positive_int("n_chips", n_chips)
    B = np.asarray(serving.max_batch(model, chip, L, n, weight_dtype, kv_dtype), dtype=float)
    ok = B >= 1
    cost = np.full(np.shape(B), np.inf)
    if np.any(ok):
        cost[ok] = serving.decode_cost_per_token(model, chip, B[ok], np.broadcast_to(L, B.shape)[ok], n,
                                                 weight_dtype, kv_dtype)
    return result(B), result(cost)


def api_price_usd_per_mtok(provider_model: str, prompt_tokens):
    """``(input, output)`` US dollars per million tokens for a prompt of ``prompt_tokens``.

    From ``data/long_context_pricing.toml``: the base price up to the entry's
    ``threshold_tokens`` (0: no tier), the long-context price above it. Broadcasts over
    ``prompt_tokens``.

    Raises:
        KeyError: unknown entry (the message lists them). ValueError: a prompt of
            negative length or beyond the entry's context window.
    """
    prices = _catalog.load("long_context_pricing.toml")["prices"]
    if provider_model not in prices:
        raise KeyError(f"no price entry {provider_model!r}; known: {', '.join(prices)}")
    p = prices[provider_model]
    T = non_negative("prompt_tokens", prompt_tokens)
    if np.any(T > p["context_tokens"]):
        raise ValueError(f"prompt_tokens up to {p['context_tokens']:,} for {provider_model} (its window), "
                         f"got {float(np.max(T)):,.0f}")
    above = (T > p["threshold_tokens"]) if p["threshold_tokens"] else np.zeros_like(T, dtype=bool)
    inp = np.where(above, p["input_above_threshold_usd_per_mtok"], p["input_usd_per_mtok"])
    out = np.where(above, p["output_above_threshold_usd_per_mtok"], p["output_usd_per_mtok"])
    return result(inp), result(out)


def growth_per_year(years, values) -> float:
    """Annual growth factor of ``values`` over ``years``: ``exp(slope)`` of a least-squares line through ``log(values)``.

    ``1.41`` means 41 % more each year. Needs at least two distinct years.

    Raises:
        ValueError: non-positive values, fewer than two distinct years, shapes that differ.
    """
    y, v = broadcast(years=as_array("years", years), values=positive("values", values))
    y, v = np.ravel(y), np.ravel(v)
    if np.unique(y).size < 2:
        raise ValueError(f"growth_per_year needs points from at least two distinct years, got {y.tolist()}")
    slope = np.polyfit(y, np.log(v), 1)[0]
    return float(np.exp(slope))


@finite_result
def attention_to_weight_flops(model, context, window=None, global_every: int = 1, topk=None,
                              indexer_flops_per_position: float = 0.0):
    """A new token's context-dependent attention FLOPs over its weight FLOPs ``2 N_mm`` (claim 33).

    The numerator is :func:`llmmath.serving.context_attention_flops_per_token` with the same
    design arguments (full, local/global, top-k with an indexer); 1 where they are equal.
    Broadcasts over ``context``. Raises what that function raises.
    """
    attn = serving.context_attention_flops_per_token(model, context, window, global_every, topk,
                                                     indexer_flops_per_position)
    return result(np.asarray(attn) / (2.0 * models.get(model).matmul_params_per_token))


def vendor_trend(vendor: str) -> dict:
    """One vendor's chips by year, per GPU, relative to its earliest chip, with annual growth factors (claim 36).

    Returns a dict: ``keys``, ``years`` (lists, sorted by year then catalog order); ``flops``
    (dense bf16 FLOP/s), ``bandwidth`` (HBM bytes/s), ``capacity`` (HBM bytes): arrays relative
    to the earliest chip; ``growth``: ``{quantity: factor per year}`` from :func:`growth_per_year`;
    ``balance``: F/W in FLOP per byte for each chip.

    Raises:
        KeyError: a vendor with no chip in the catalog (the message lists the vendors).
        ValueError: a vendor whose chips all come from one year (no growth rate).
    """
    chips = sorted((c for c in hardware.catalog().values() if c.vendor == vendor), key=lambda c: c.year)
    if not chips:
        vendors = sorted({c.vendor for c in hardware.catalog().values()})
        raise KeyError(f"no chip from vendor {vendor!r} in the catalog; vendors: {', '.join(vendors)}")
    years = np.array([c.year for c in chips], dtype=float)
    raw = {"flops": np.array([c.flops_per_s("bf16") for c in chips]),
           "bandwidth": np.array([c.hbm_bytes_per_s for c in chips]),
           "capacity": np.array([c.hbm_bytes for c in chips])}
    growth = {k: growth_per_year(years, v) for k, v in raw.items()}
    out = {k: v / v[0] for k, v in raw.items()}
    out.update(keys=[c.key for c in chips], years=years.tolist(), growth=growth,
               balance=raw["flops"] / raw["bandwidth"])
    return out


@dataclasses.dataclass(frozen=True)
class Wall:
    """:func:`architecture_wall`'s answer, arrays over ``contexts`` (tokens).

    ``kv_bytes``: the K/V one sequence holds (room for its windows and chunks, :meth:`Model.held_positions`);
    ``state_bytes``: its linear layers' fixed state (a scalar); ``full_attention_bytes``: the K/V if every layer
    attended to the whole context with the model's own heads and no indexer (``n_layers L`` positions); ``batch``: the most
    sequences any one-replica placement of the chips holds (:func:`llmmath.deployment.most_sequences`); ``step_s``:
    that batch's decode step (:func:`llmmath.predict.step`); ``chip_s_per_token``: ``n_chips step_s / batch``
    (``inf`` where not one sequence fits).
    """

    model: str
    chip: str
    n_chips: int
    contexts: np.ndarray
    kv_bytes: np.ndarray
    state_bytes: float
    full_attention_bytes: np.ndarray
    batch: np.ndarray
    step_s: np.ndarray
    chip_s_per_token: np.ndarray

    @property
    def cache_reduction(self) -> np.ndarray:
        """``full_attention_bytes / (kv_bytes + state_bytes)``: how many times less a sequence holds than if every
        layer attended to everything (1 for a dense full-attention model)."""
        return self.full_attention_bytes / (self.kv_bytes + self.state_bytes)


def architecture_wall(model, chip, contexts, n_chips: int = 8, weight_dtype: str = "bf16",
                      kv_dtype: str = "bf16") -> Wall:
    """One sequence's cache and the decode cost per token at each of ``contexts`` (tokens, > 0) on ``n_chips`` of
    ``chip``, at the largest batch any one-replica placement holds (datasheet HBM, as chapter 8's claim 34).

    Qwen3-Next-80B at 1,048,576 tokens: K/V only in its 12 attention layers, 24,576 B a token (25.8 GB) beside a
    39.5 MB state, where 48 attending layers would hold 4x as much.

    Raises:
        ValueError: a context not above 0, an impossible chip count. KeyError: unknown model, chip or dtype.
    """
    from . import deployment, predict

    m = models.get(model)
    L = np.atleast_1d(np.asarray(positive("contexts", contexts), dtype=float))
    n = positive_int("n_chips", n_chips)
    state = m.state_bytes_per_sequence()
    kv = np.asarray(m.kv_bytes_per_sequence(L, kv_dtype), dtype=float) - state
    full = m.n_layers * m.attended_bytes_per_position(kv_dtype) * L
    batch, step_s = np.zeros(L.size), np.full(L.size, np.inf)
    for i, ctx in enumerate(L):
        b, d = deployment.most_sequences(m, chip, n, int(ctx), weight_dtype=weight_dtype, kv_dtype=kv_dtype)
        if b >= 1:
            B_r = b / d.replicas
            batch[i] = b
            step_s[i] = float(predict.step(d, B_r, B_r * float(m.cached_positions(ctx))).time_s)
    cost = np.where(batch >= 1, n * step_s / np.maximum(batch, 1.0), np.inf)
    return Wall(m.key, hardware.get(chip).key, n, L, kv, state, full, batch, step_s, cost)
