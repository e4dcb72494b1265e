"""Collectives in the alpha-beta model, and the traffic of a mixture-of-experts layer.

A message of ``n`` bytes between two ranks takes ``alpha + n / beta``: ``alpha``
is the per-message latency (``latency_s``), ``beta`` the link bandwidth per
direction (``bytes_per_s``). For ``p`` ranks on a non-blocking switch (every
rank sends and receives at ``beta`` at once), the standard algorithms cost
(Thakur, Rabenseifner & Gropp, "Optimization of collective communication
operations in MPICH", IJHPCA 19(1), 2005; Chan et al., "Collective
communication: theory, practice, and experience", CCPE 2007):

============================  ==============================================
all-gather (ring)             ``(p-1) alpha + (p-1)/p * n / beta``
reduce-scatter (ring)         ``(p-1) alpha + (p-1)/p * n / beta``
all-reduce (ring)             ``2(p-1) alpha + 2 (p-1)/p * n / beta`` (+ ``(p-1)/p * n / gamma`` to add)
all-reduce (rec. halving)     ``2 log2(p) alpha + 2 (p-1)/p * n / beta``
all-to-all (pairwise)         ``(p-1) alpha + (p-1)/p * n / beta``
============================  ==============================================

``n`` is always the size of one rank's whole buffer: the full vector for
all-reduce, the gathered result for all-gather, one rank's send buffer for
all-to-all. All functions broadcast over ``n_bytes``, bandwidth and latency
arrays; shapes that do not broadcast together, and results beyond float64, are
refused with a ValueError naming the arguments.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import broadcast, finite_result, flag, in_range, non_negative, positive, positive_int, result

__all__ = [
    "all_reduce_time_s", "all_gather_time_s", "reduce_scatter_time_s", "all_to_all_time_s", "p2p_time_s",
    "fit_alpha_beta", "moe_all_to_all_bytes_per_token", "expert_flops_per_all_to_all_byte",
]

ALL_REDUCE_ALGORITHMS = ("ring", "recursive_halving")


def _link(bytes_per_s, latency_s):
    return positive("bytes_per_s", bytes_per_s), non_negative("latency_s", latency_s)


@finite_result
def p2p_time_s(n_bytes, hops, bytes_per_s, latency_per_hop_s=0.0):
    """One message of ``n_bytes`` from one chip to another ``hops`` links away (seconds).

    Interconnects route cut-through (wormhole): a chip forwards the first bytes
    of a message before the last arrive, so the message streams through every
    hop at once and each hop adds its latency, not another copy of the transfer::

        t = hops * latency_per_hop_s + n_bytes / bytes_per_s

    (store-and-forward would cost ``hops * (latency + n / beta)``). ``bytes_per_s``
    is what the sender can push toward the receiver at once: on a 2D mesh a chip
    can split the message over its two ports that lead toward the target, so
    two links' one-way bandwidth. Worked example (Austin et al., *How to Scale Your
    Model*, 2025, the TPU chapter's question 5): bf16[8, 128, 8192] = 16,777,216 B
    across a TPU v5e 4x4 slice without wraparound, (0,0) to (3,3): 6 hops; two
    ports of 4.5e10 B/s one way and 1 µs per hop give 6 µs + 186.4 µs = 192.4 µs
    (the book rounds the size to 1.7e7 B: about 188 + 6 = 194 µs).

    Raises:
        ValueError: negative bytes or latency, ``hops`` not a whole number >= 1, bandwidth <= 0.
    """
    h = non_negative("hops", hops)
    if np.any(h < 1) or np.any(h != np.floor(h)):
        raise ValueError(f"hops must be a whole number of links >= 1, got {hops!r}")
    beta, alpha = positive("bytes_per_s", bytes_per_s), non_negative("latency_per_hop_s", latency_per_hop_s)
    n, h, beta, alpha = broadcast(n_bytes=non_negative("n_bytes", n_bytes), hops=h, bytes_per_s=beta,
                                  latency_per_hop_s=alpha)
    return result(h * alpha + n / beta)


@finite_result
def all_gather_time_s(n_bytes, n_ranks: int, bytes_per_s, latency_s=0.0):
    """Ring all-gather of a result of ``n_bytes`` over ``n_ranks`` ranks (seconds).

    Raises:
        ValueError: negative bytes, ``n_ranks`` < 1, bandwidth <= 0, negative latency.
    """
    p = positive_int("n_ranks", n_ranks)
    beta, alpha = _link(bytes_per_s, latency_s)
    n, beta, alpha = broadcast(n_bytes=non_negative("n_bytes", n_bytes), bytes_per_s=beta, latency_s=alpha)
    return result((p - 1) * alpha + (p - 1) / p * n / beta)


@finite_result
def reduce_scatter_time_s(n_bytes, n_ranks: int, bytes_per_s, latency_s=0.0):
    """Ring reduce-scatter of a vector of ``n_bytes`` (each rank keeps 1/p of the sum), seconds."""
    return all_gather_time_s(n_bytes, n_ranks, bytes_per_s, latency_s)


@finite_result
def all_reduce_time_s(n_bytes, n_ranks: int, bytes_per_s, latency_s=0.0, algorithm: str = "ring",
                      reduce_bytes_per_s=None):
    """All-reduce of a vector of ``n_bytes`` over ``n_ranks`` ranks (seconds).

    ``ring`` = reduce-scatter then all-gather: ``2(p-1) alpha + 2(p-1)/p n / beta``.
    ``recursive_halving`` (Rabenseifner) sends the same bytes in ``2 log2 p`` steps.
    With ``reduce_bytes_per_s`` (gamma: how fast a rank adds a received vector
    into its own, vector bytes per second) the arithmetic ``(p-1)/p n / gamma``
    is added (Thakur et al. 2005 write it as ``n gamma`` per byte).

    Raises:
        ValueError: unknown ``algorithm`` (allowed: ring, recursive_halving), or bad sizes/rates.
    """
    if algorithm not in ALL_REDUCE_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALL_REDUCE_ALGORITHMS}, got {algorithm!r}")
    p = positive_int("n_ranks", n_ranks)
    beta, alpha = _link(bytes_per_s, latency_s)
    gamma = np.inf if reduce_bytes_per_s is None else positive("reduce_bytes_per_s", reduce_bytes_per_s)
    n, beta, alpha, gamma = broadcast(n_bytes=non_negative("n_bytes", n_bytes), bytes_per_s=beta, latency_s=alpha,
                                      reduce_bytes_per_s=gamma)
    steps = 2 * (p - 1) if algorithm == "ring" else 2 * np.ceil(np.log2(p))
    compute = (p - 1) / p * n / gamma  # 0 without a reduce rate (gamma = inf)
    return result(steps * alpha + 2 * (p - 1) / p * n / beta + compute)


@finite_result
def all_to_all_time_s(n_bytes, n_ranks: int, bytes_per_s, latency_s=0.0, fraction_out_of_domain=0.0,
                      scale_out_bytes_per_s=None):
    """All-to-all where each rank sends ``n_bytes`` in total, spread evenly over all ranks (seconds).

    Each rank keeps ``1/p`` and sends ``(p-1)/p`` of its buffer. When a fraction
    ``f`` of what it sends must leave the scale-up domain over a slower link
    (``scale_out_bytes_per_s``), both links run at once and the slower share
    sets the time::

        t = (p-1) alpha + max((1-f) * s / beta_up, f * s / beta_out),  s = (p-1)/p * n

    (Spanning two equal domains, about half of the traffic leaves: f = 1/2.)

    Raises:
        ValueError: ``f`` outside [0, 1], or ``f > 0`` without ``scale_out_bytes_per_s``.
    """
    p = positive_int("n_ranks", n_ranks)
    beta, alpha = _link(bytes_per_s, latency_s)
    f = in_range("fraction_out_of_domain", fraction_out_of_domain, 0.0, 1.0)
    if np.any(f > 0):
        if scale_out_bytes_per_s is None:
            raise ValueError("fraction_out_of_domain > 0 needs scale_out_bytes_per_s (the slower link's bandwidth)")
        beta_out = positive("scale_out_bytes_per_s", scale_out_bytes_per_s)
    else:  # nothing leaves the domain: the scale-out link, if given, carries nothing
        beta_out = 1.0 if scale_out_bytes_per_s is None else positive("scale_out_bytes_per_s", scale_out_bytes_per_s)
    n, beta, alpha, f, beta_out = broadcast(n_bytes=non_negative("n_bytes", n_bytes), bytes_per_s=beta,
                                            latency_s=alpha, fraction_out_of_domain=f,
                                            scale_out_bytes_per_s=beta_out)
    sent = (p - 1) / p * n
    return result((p - 1) * alpha + np.maximum((1 - f) * sent / beta, f * sent / beta_out))


def fit_alpha_beta(n_bytes, time_s):
    """Least-squares fit of ``t = alpha + n / beta`` to measured (size, time) pairs.

    Returns ``(alpha_s, beta_bytes_per_s)``. Fitting in absolute time weights the
    large messages; pass sizes that span small and large messages so both terms
    are seen.

    Raises:
        ValueError: fewer than 2 points, mismatched shapes, or a fit whose slope is
            not positive (the times do not grow with size: bandwidth undefined).
    """
    n = non_negative("n_bytes", n_bytes)
    t = positive("time_s", time_s)
    if n.shape != t.shape:
        raise ValueError(f"n_bytes and time_s must have the same shape (one time per size), got n_bytes of shape "
                         f"{n.shape} and time_s of shape {t.shape}")
    n, t = n.ravel(), t.ravel()
    if n.size < 2 or np.unique(n).size < 2:
        raise ValueError(f"n_bytes must hold >= 2 distinct sizes (with one time_s each) to fit two constants, "
                         f"got {n.size} sizes of which {np.unique(n).size} distinct")
    A = np.stack([np.ones_like(n), n], axis=1)
    w = 1.0 / t  # relative error weighting: small and large messages count alike
    (alpha, inv_beta), *_ = np.linalg.lstsq(A * w[:, None], t * w, rcond=None)
    if inv_beta <= 0:
        raise ValueError("fitted time does not grow with message size; bandwidth is undefined for these points")
    return float(max(alpha, 0.0)), float(1.0 / inv_beta)


@finite_result
def moe_all_to_all_bytes_per_token(d_model: int, experts_per_token: int, ep: int,
                                   dispatch_bytes: float = 1.0, combine_bytes: float = 2.0):
    """Bytes one token sends over the expert-parallel all-to-all in one MoE layer.

    Dispatch sends the token's activation (``d_model`` values at ``dispatch_bytes``
    each; DeepSeek-V3 dispatches in fp8) to each of its ``k`` experts, and combine
    returns ``k`` results (bf16); only the ``(ep-1)/ep`` of experts that live on
    other GPUs cost link traffic (uniform placement)::

        bytes = k * d * (b_dispatch + b_combine) * (ep - 1) / ep
    """
    d = positive_int("d_model", d_model)
    k = positive_int("experts_per_token", experts_per_token)
    e = positive_int("ep", ep)
    b_d, b_c = broadcast(dispatch_bytes=positive("dispatch_bytes", dispatch_bytes),
                         combine_bytes=positive("combine_bytes", combine_bytes))
    return result(k * d * (b_d + b_c) * (e - 1) / e)


def remote_nodes_reached(n_experts: int, experts_per_token: int, nodes: int):
    """Expected number of OTHER nodes a token's experts sit on: ``n_experts`` spread evenly over ``nodes`` nodes
    (``n_experts / nodes`` each), the token's ``k`` experts drawn without replacement. By symmetry each other node
    holds none of them with probability ``C(E - E/N, k) / C(E, k)``, so::

        remote = (N - 1) * (1 - C(E - E/N, k) / C(E, k))

    This is what a node-deduplicated dispatch sends across the network per token: DeepSeek-V3 (arXiv:2412.19437,
    section 3.2.2) sends a token once over InfiniBand to each node it needs and forwards it over NVLink inside that
    node; DeepEP's normal (prefill/training) kernels do the same, and combine reduces inside the node before
    sending back. DeepSeek-V3 with 256 experts, top-8, over 4 nodes: 2.71 other nodes, against the 6 remote
    copies of one send per expert. (DeepSeek-V3 also caps a token at 4 nodes; the cap is not applied here.)

    Where ``nodes`` does not divide ``n_experts`` the same product is taken with ``E / N`` experts a node.

    Raises:
        ValueError: non-integer or non-positive counts, or ``k`` above ``n_experts``.
    """
    E = positive_int("n_experts", n_experts)
    k = positive_int("experts_per_token", experts_per_token)
    N = positive_int("nodes", nodes)
    if k > E:
        raise ValueError(f"experts_per_token={k} exceeds n_experts={E}")
    none_there = math.prod(max(0.0, E - E / N - i) / (E - i) for i in range(k))   # C(E - E/N, k) / C(E, k)
    return (N - 1) * (1.0 - none_there)


@finite_result
def expert_flops_per_all_to_all_byte(d_ff_expert: int, gated: bool = True,
                                     dispatch_bytes: float = 1.0, combine_bytes: float = 2.0):
    """Expert FLOPs done per byte of all-to-all traffic (FLOP/byte), independent of d_model and k.

    Each routed copy of a token costs ``(6 if gated else 4) * d * d_ff`` FLOPs and
    ``d (b_dispatch + b_combine)`` bytes, so the ratio is
    ``(6 or 4) * d_ff / (b_dispatch + b_combine)``. Compare it with the chip's
    FLOP/s per link byte/s: above it the experts, not the link, set the pace.
    """
    f = positive_int("d_ff_expert", d_ff_expert)
    b_d, b_c = broadcast(dispatch_bytes=positive("dispatch_bytes", dispatch_bytes),
                         combine_bytes=positive("combine_bytes", combine_bytes))
    return result((6.0 if flag("gated", gated) else 4.0) * f / (b_d + b_c))
