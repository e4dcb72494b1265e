"""Mixture of experts: routing statistics and the two sparsities (the math; the measured layer is in moe_bench).

A MoE layer holds ``E`` routed experts; each token is routed to ``k`` of them
(top-k). With ``B`` tokens in a decode step and uniform routing:

* tokens per expert: ``B k / E`` on average (:func:`expected_tokens_per_expert`);
* experts touched: ``E (1 - (1 - k/E)^B)`` -- a token misses a given expert with
  probability ``1 - k/E`` exactly (its k experts are a uniform k-subset), and
  tokens route independently (:func:`expected_experts_touched`);
* the per-expert balance: an expert's matmul is compute-bound once its own
  batch ``B k / E`` reaches the chip's balance ratio R = F b_w / (2 W), i.e.
  ``B >= R E / k`` (:func:`expert_balance_batch`).

Two sparsities, not to be confused (chapter 3):

* parameter sparsity ``s = N_tot / N_act`` -- the whole step balances (aggregate
  weight-read time = aggregate compute time) at ``B* = R s``;
* expert sparsity ``E / k`` -- every routed expert is compute-bound at ``B = R E / k``.
  It is larger, because the dense parts (attention, shared experts, embeddings)
  count in N_act but not among the routed experts. DeepSeek-V3: 671B/37.5B = 17.9
  against 256/8 = 32 (config.json; DeepSeek-V3 Technical Report, arXiv:2412.19437).

The kernel demo (:func:`llmmath.demos.moe_bench.moe_sweep`, a measured demo) runs a real MoE
layer -- route, group by expert, one matmul pair per expert -- on NumPy or CuPy and puts
its time beside the per-expert roofline.
"""

from __future__ import annotations

import dataclasses

from . import models
from ._validate import finite_result, positive, positive_int, result

__all__ = ["expected_tokens_per_expert", "expected_experts_touched", "expert_balance_batch", "sparsities",
           "with_experts"]


def _experts(n_experts, top_k):
    E = positive_int("n_experts", n_experts)
    k = positive_int("top_k", top_k)
    if k > E:
        raise ValueError(f"top_k must be <= n_experts (a token picks k distinct experts), got top_k={k} > n_experts={E}")
    return E, k


@finite_result
def expected_tokens_per_expert(batch, n_experts: int, top_k: int):
    """Mean tokens each routed expert receives in one step: ``B k / E`` (uniform routing).

    Args:
        batch: B, tokens in the step (> 0; scalar or array).
        n_experts, top_k: E and k (whole numbers, 1 <= k <= E).

    Raises:
        ValueError: batch <= 0, k > E, or E, k < 1.
    """
    E, k = _experts(n_experts, top_k)
    return result(positive("batch", batch) * k / E)


@finite_result
def expected_experts_touched(batch, n_experts: int, top_k: int):
    """Expected number of distinct experts that at least one of ``B`` tokens picks: ``E (1 - (1 - k/E)^B)``.

    Exact for uniform top-k routing (each token's k experts a uniform k-subset,
    tokens independent). Broadcasts over ``batch``.

    Raises:
        ValueError: batch <= 0, k > E, or E, k < 1.
    """
    E, k = _experts(n_experts, top_k)
    B = positive("batch", batch)
    return result(E * (1.0 - (1.0 - k / E) ** B))


@finite_result
def expert_balance_batch(balance_ratio, n_experts: int, top_k: int):
    """Batch at which each routed expert's matmul becomes compute-bound: ``R E / k``.

    ``balance_ratio`` is the chip's R = F b_w / (2 W) (:meth:`Chip.balance_ratio`), or an array of them.

    Raises:
        ValueError: balance_ratio <= 0, k > E, or E, k < 1.
    """
    E, k = _experts(n_experts, top_k)
    return result(positive("balance_ratio", balance_ratio) * E / k)


def sparsities(model) -> dict:
    """Both sparsities of a model: ``{"total": N_tot/N_act, "expert": E/k, "n_experts": E, "top_k": k}``.

    A dense model has both equal to 1. Raises KeyError for an unknown model.
    """
    m = models.get(model)
    return {"total": m.sparsity, "expert": m.expert_sparsity,
            "n_experts": m.n_experts, "top_k": m.experts_per_token}


def with_experts(model, n_experts: int, experts_per_token: int | None = None):
    """A what-if copy of a MoE ``model`` with ``n_experts`` routed experts (and ``experts_per_token``).

    Everything else (attention, expert width, shared experts, layers) is kept, so
    N_act stays fixed while N_tot grows with E: the family chapter 3 uses to ask
    what more sparsity buys. The copy's key gets a suffix (``deepseek-v3@E512k8``).

    Raises:
        ValueError: ``model`` is dense, or k > E. KeyError: unknown model.
    """
    m = models.get(model)
    if not m.is_moe:
        raise ValueError(f"with_experts needs a mixture-of-experts model, got the dense {m.key!r}")
    k = m.experts_per_token if experts_per_token is None else experts_per_token
    E, k = _experts(n_experts, k)
    return dataclasses.replace(m, key=f"{m.key}@E{E}k{k}", name=f"{m.name} with {E} experts, top-{k}",
                               n_experts=E, experts_per_token=k, published_total_params=0,
                               published_active_params=0)
