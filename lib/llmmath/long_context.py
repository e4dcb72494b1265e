"""Long-context helpers for chapter 8: decode cost at the largest batch that fits, price tiers, growth rates.

* :func:`best_batch_decode_cost`: the roofline cost per token at the largest batch whose
  KV cache fits beside the weights (the cheapest operating point at a context), with
  ``inf`` where not even one sequence fits.
* :func:`api_price_usd_per_mtok`: a provider's input and output price at a prompt length,
  from ``data/long_context_pricing.toml`` (its long-context tier applies above the threshold).
* :func:`growth_per_year`: the annual growth factor of a quantity from (year, value) points,
  a least-squares line through ``log(value)``.
"""

from __future__ import annotations

import numpy as np

from . import _catalog, hardware, models, serving
from ._validate import as_array, broadcast, finite_result, non_negative, positive, positive_int, result

__all__ = ["best_batch_decode_cost", "api_price_usd_per_mtok", "growth_per_year", "attention_to_weight_flops",
           "vendor_trend"]


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
