"""A fixed batch flips from compute-bound to memory-bound as its context grows (claims 5 and 6), measured.

One decode step of a toy layer on this machine: ``B`` sequences multiply a ``d x 4d`` weight
(``8 B d^2`` FLOPs: compute-bound for a batch of 64, the weight shared by every sequence) and
attend over their own cached keys and values (one head of ``h`` values, fp32: ``2 h 4`` bytes a
cached token, about 0.5 FLOP per byte: memory-bound whatever the batch). The weight product does
not grow with the context ``L``; the attention does, by ``B L 8 h`` bytes a step. So the step
is flat at short context and grows in proportion to ``L`` at long context, and the two parts are
equal at

    L* = t_weights / (B 8 h / W) = (8 B d^2 / F) / (8 B h / W) = d^2 W / (h F)

(``F``, ``W``: this machine's matmul rate and read bandwidth, sampled between the rounds by a
:class:`~llmmath.demos.kernels.CeilingProbe`): the balanced context of claim 6, on a chip whose
``F / W`` is this machine's. :func:`run` times the step over a range of contexts round-robin,
fits ``t(L) = a + b L`` to the best time of each, and reports the measured ``L* = a / b``
beside the predicted one. Chapter 2, claims 5 and 6.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import kernels

__all__ = ["ContextFlip", "run"]


@dataclasses.dataclass(frozen=True)
class ContextFlip:
    """Result of :func:`run` (seconds; contexts in tokens)."""

    contexts: np.ndarray          # L of each timed step
    step_s: np.ndarray            # best measured step at each L (weight product + attention)
    weights_s: float              # best measured weight product alone
    predicted_weights_s: float    # 8 B d^2 / F
    predicted_kv_s_per_token: float   # B x 8 h / W: one more token of context for every sequence
    batch: int
    d_model: int
    head_dim: int
    flops_per_s: float
    bytes_per_s: float

    @property
    def fit(self) -> tuple[float, float]:
        """(a, b) of the least-squares line ``t = a + b L`` through the measured steps."""
        b, a = np.polyfit(self.contexts, self.step_s, 1)
        return float(a), float(b)

    @property
    def measured_balanced_context(self) -> float:
        """``L*`` measured: the context at which the attention's time equals the rest of the step, ``a / b``."""
        a, b = self.fit
        return a / b if b > 0 else float("inf")

    @property
    def predicted_balanced_context(self) -> float:
        """``L*`` predicted from the sampled ceilings: ``(8 B d^2 / F) / (8 B h / W)``."""
        return self.predicted_weights_s / self.predicted_kv_s_per_token

    def table(self) -> str:
        rows = [f"{'context L':>10} {'step':>10} {'predicted':>10}  (weights + KV read, {self.batch} sequences)"]
        for L, t in zip(self.contexts, self.step_s):
            pred = self.predicted_weights_s + self.predicted_kv_s_per_token * L
            rows.append(f"{L:>10,.0f} {t * 1e3:>8.2f}ms {pred * 1e3:>8.2f}ms")
        return "\n".join(rows)


def run(contexts=(128, 256, 512, 1024, 2048, 4096, 8192), batch: int = 64, d_model: int = 1024,
        head_dim: int = 64, rounds: int = 5, be=None) -> ContextFlip:
    """Time one toy decode step (weight product + single-head attention over ``L`` cached tokens) at each context.

    Shapes: ``x`` (B, d) fp32 times ``W`` (d, 4d); per sequence ``q`` (1, h) against ``K``, ``V`` (L, h).
    Memory: ``B max(L) 2 h 4`` bytes of cache (256 MiB at the defaults).

    Raises:
        ValueError: a context, batch or size < 1, or rounds < 1.
    """
    contexts = np.asarray(contexts, dtype=np.int64)
    for name, v in (("batch", batch), ("d_model", d_model), ("head_dim", head_dim), ("rounds", rounds)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    if contexts.ndim != 1 or contexts.size < 3 or np.any(contexts < 1):
        raise ValueError(f"contexts must list at least three whole numbers >= 1, got {contexts.tolist()}")
    be = be or kernels.backend()
    xp, B, d, h = be.xp, int(batch), int(d_model), int(head_dim)
    x = kernels._random(be, (B, d), "fp32", 1)
    w = kernels._random(be, (d, 4 * d), "fp32", 2)
    q = kernels._random(be, (B, 1, h), "fp32", 3)
    K = kernels._random(be, (B, int(contexts.max()), h), "fp32", 4)
    V = kernels._random(be, (B, int(contexts.max()), h), "fp32", 5)

    def weights():
        return x @ w

    def attention(L):
        s = q @ K[:, :L].transpose(0, 2, 1)                     # (B, 1, L): reads K
        p = xp.exp(s - s.max(axis=-1, keepdims=True))
        return (p / p.sum(axis=-1, keepdims=True)) @ V[:, :L]     # reads V

    def step(L):
        return weights(), attention(L)

    fns = {"weights": weights, **{int(L): (lambda L=int(L): step(L)) for L in contexts}}
    probe = kernels.CeilingProbe(("fp32",), be=be, matmul_n=None if be.is_gpu else 1024)
    with kernels.one_blas_thread(not be.is_gpu):
        t = kernels.time_interleaved(fns, rounds=rounds, warmup=1, probe=probe, be=be)
    F, W = probe.flops_per_s("fp32"), probe.read_bytes_per_s
    return ContextFlip(contexts.astype(float), np.array([t[int(L)].min_s for L in contexts]), t["weights"].min_s,
                       8.0 * B * d * d / F, B * 2.0 * h * 4 / W, B, d, h, float(F), float(W))
