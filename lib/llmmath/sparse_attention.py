"""Sparse (top-k) attention against dense attention: when does keeping fewer tokens lose the answer?

Claim 37 (1:54:55) says sparse attention helps long context but that making it
*too* sparse costs quality. This module measures that on synthetic tasks with a
known answer, in pure NumPy, seeded and vectorized over trials.

One query attends over ``context`` = L keys. Dense attention (the reference)::

    s_i = scale * (q . K_i)                    (scores, one per token)
    out = sum_i softmax(s)_i V_i               (the attention output)

Sparse attention keeps only a set S of k tokens, chosen by a *selection score*,
and takes the softmax of the true scores over S alone::

    out_S = sum_{i in S} exp(s_i) V_i / sum_{i in S} exp(s_i)

Three ways of choosing S, as in the published methods (see
``data/sparse_attention_studies.toml``):

* **exact top-k** -- the k largest true scores (an oracle; real systems cannot
  afford to compute all L scores at full width, which is the point of sparsity);
* **indexer top-k** -- the k largest scores of a cheap, low-dimensional score,
  here a random projection of q and K to ``rank`` dimensions (a stand-in for
  DeepSeek-V3.2's lightning indexer, which is *learned*, multi-head and FP8 --
  ours is untrained, so it is a pessimistic model of an indexer);
* **block top-k** -- split the context into blocks of ``block`` tokens, score
  each block by q . mean(K_block) (MoBA's gate; NSA and Quest use other block
  summaries), keep the ``k_blocks`` best blocks whole.

The honest point: exact top-k never loses a single needle (the needle *is* the
top score), so a single-needle test cannot show the claim. Quality falls with k
for two different reasons, each with its own task:

1. **aggregation** -- the answer is the majority label over ``needles`` = m
   matching tokens. With k < m even a perfect selector drops needles and the
   vote is taken on a subset (analytic curve: :func:`majority_subset_accuracy`).
2. **retrieval through an approximate selector** -- one needle; a cheap score
   ranks it below distractors with some probability, and the smaller k, the
   likelier it is cut.

Shapes: ``q (..., d)``, ``K (..., L, d)``, ``V (..., L, d_v)``, output
``(..., d_v)``; leading dimensions broadcast (one row per trial). Scores are
dimensionless; ``k`` counts tokens attended (KV entries read per step per head).
"""

from __future__ import annotations

import functools
import math
import numbers
from typing import NamedTuple

import numpy as np

from ._validate import as_array, finite_result, flag, non_negative_int, positive_int, scalar

__all__ = [
    "measured_topk_curves",
    "dense_attention",
    "topk_attention",
    "block_topk_attention",
    "indexer_scores",
    "block_scores",
    "topk_mask",
    "Task",
    "aggregation_task",
    "retrieval_task",
    "majority_subset_accuracy",
    "accuracy_vs_k",
    "sweep",
]


# ---- checks ---------------------------------------------------------------------------------

def _whole(name: str, value, lo: int, hi: int | None = None, hi_name: str = "") -> int:
    """A whole number in [lo, hi], else ValueError/TypeError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Integral, float)):
        raise TypeError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    v = int(value)
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}, got {v}")
    if hi is not None and v > hi:
        raise ValueError(f"{name} must be <= {hi_name or hi} ({hi}), got {v}")
    return v


def _qkv(q, K, V):
    q = as_array("q", q)
    K = as_array("K", K)
    V = as_array("V", V)
    if q.ndim < 1:
        raise ValueError("q must have shape (..., d), got a scalar")
    if K.ndim < 2:
        raise ValueError(f"K must have shape (..., L, d), got shape {K.shape}")
    if V.ndim < 2:
        raise ValueError(f"V must have shape (..., L, d_v), got shape {V.shape}")
    if K.shape[-1] != q.shape[-1]:
        raise ValueError(f"K's last axis (d = {K.shape[-1]}) must match q's (d = {q.shape[-1]})")
    if V.shape[-2] != K.shape[-2]:
        raise ValueError(f"V has {V.shape[-2]} tokens but K has {K.shape[-2]}; they must match")
    if K.shape[-2] < 1:
        raise ValueError("K must hold at least one token (context >= 1)")
    _leading(q=q.shape[:-1], K=K.shape[:-2], V=V.shape[:-2])
    return q, K, V


def _leading(**shapes):
    """The leading (trial) axes of q, K, V must broadcast; else a ValueError naming them."""
    try:
        np.broadcast_shapes(*shapes.values())
    except ValueError:
        desc = ", ".join(f"{k} {v}" for k, v in shapes.items())
        raise ValueError(f"the leading (trial) axes of {' and '.join(shapes)} must broadcast together, got "
                         f"{desc}; allowed: equal leading axes, or size 1 / missing where they differ") from None


def _scale(scale, d: int) -> float:
    if scale is None:
        return 1.0 / math.sqrt(d)
    s = scalar("scale", scale)
    if s <= 0:
        raise ValueError(f"scale must be > 0, got {s!r}")
    return s


def _scores(q, K, scale) -> np.ndarray:
    """True attention scores, shape (..., L)."""
    return np.einsum("...ld,...d->...l", K, q) * scale


def _attend(scores: np.ndarray, V: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """softmax over the kept tokens (all when ``mask`` is None), then weight V. One code path."""
    s = scores if mask is None else np.where(mask, scores, -np.inf)
    w = np.exp(s - s.max(axis=-1, keepdims=True))
    return np.einsum("...l,...lv->...v", w, V) / w.sum(axis=-1)[..., None]


# ---- attention ------------------------------------------------------------------------------

@finite_result
def dense_attention(q, K, V, scale=None) -> np.ndarray:
    """Full softmax attention of one query per row over all L tokens.

    Args:
        q: query, shape ``(..., d)``.
        K: keys, shape ``(..., L, d)``.
        V: values, shape ``(..., L, d_v)``.
        scale: score multiplier, default ``1/sqrt(d)`` (Vaswani et al. 2017, eq. 1).

    Returns:
        ``(..., d_v)``: ``softmax(scale * K q) @ V``.

    Raises:
        ValueError: mismatched shapes, NaN/inf, ``scale <= 0``.
    """
    q, K, V = _qkv(q, K, V)
    return _attend(_scores(q, K, _scale(scale, q.shape[-1])), V, None)


def topk_mask(selection_scores, k) -> np.ndarray:
    """Boolean mask of the ``k`` largest entries along the last axis.

    Args:
        selection_scores: shape ``(..., n)``.
        k: how many to keep, 1 <= k <= n.

    Returns:
        bool array of the same shape with exactly ``k`` True per row (ties are
        broken by ``np.argpartition``, deterministically).

    Raises:
        ValueError: ``k < 1`` or ``k > n``.
    """
    s = as_array("selection_scores", selection_scores)
    if s.ndim < 1:
        raise ValueError("selection_scores must have at least one axis")
    n = s.shape[-1]
    k = _whole("k", k, 1, n, "the number of candidates")
    return _topk_mask(s, k)


def _topk_mask(s: np.ndarray, k: int) -> np.ndarray:
    idx = np.argpartition(-s, k - 1, axis=-1)[..., :k]
    mask = np.zeros(s.shape, dtype=bool)
    np.put_along_axis(mask, idx, True, axis=-1)
    return mask


@finite_result
def topk_attention(q, K, V, k, scores=None, scale=None) -> np.ndarray:
    """Attention over the ``k`` tokens with the largest selection score.

    The softmax always uses the *true* scores ``scale * K q``; ``scores`` only
    decides which tokens are kept (DeepSeek-V3.2 DSA: the lightning indexer
    picks the top-k, then MLA attends over them).

    Args:
        q, K, V: as in :func:`dense_attention`.
        k: tokens kept, ``1 <= k <= L`` (L = context). ``k = L`` is dense attention, exactly.
        scores: selection scores, shape ``(..., L)`` (e.g. :func:`indexer_scores`);
            None selects by the true scores (exact top-k, an oracle).
        scale: as in :func:`dense_attention`.

    Returns:
        ``(..., d_v)``.

    Raises:
        ValueError: ``k < 1``, ``k > L``, a ``scores`` shape that does not match ``K``, NaN/inf.
    """
    q, K, V = _qkv(q, K, V)
    L = K.shape[-2]
    k = _whole("k", k, 1, L, "context")
    true = _scores(q, K, _scale(scale, q.shape[-1]))
    if scores is None:
        sel = true
    else:
        sel = as_array("scores", scores)
        if sel.shape != true.shape:
            try:
                sel = np.broadcast_to(sel, true.shape)
            except ValueError:
                raise ValueError(
                    f"scores must have shape {true.shape} (one per token), got {sel.shape}"
                ) from None
    return _attend(true, V, topk_mask(sel, k))


@finite_result
def block_scores(q, K, block) -> np.ndarray:
    """Block-summary selection score: ``q . mean(K over the block)`` (MoBA's gate).

    Args:
        q: ``(..., d)``; K: ``(..., L, d)``.
        block: tokens per block, ``1 <= block <= L``; the last block may be shorter.

    Returns:
        ``(..., n_blocks)`` with ``n_blocks = ceil(L / block)``.

    Raises:
        ValueError: ``block < 1`` or ``block > L``.
    """
    q = as_array("q", q)
    K = as_array("K", K)
    if q.ndim < 1 or K.ndim < 2 or K.shape[-1] != q.shape[-1]:
        raise ValueError(f"q must have shape (..., d) and K (..., L, d) with the same d, "
                         f"got q {q.shape} and K {K.shape}")
    _leading(q=q.shape[:-1], K=K.shape[:-2])
    return _block_scores(q, K, _whole("block", block, 1, K.shape[-2], "context"))


def _block_scores(q: np.ndarray, K: np.ndarray, block: int) -> np.ndarray:
    L = K.shape[-2]
    starts = np.arange(0, L, block)
    sums = np.add.reduceat(K, starts, axis=-2)                    # (..., n_blocks, d)
    counts = np.diff(np.append(starts, L)).astype(np.float64)     # (n_blocks,)
    means = sums / counts[:, None].astype(K.dtype)
    return np.einsum("...nd,...d->...n", means, q.astype(K.dtype))


@finite_result
def block_topk_attention(q, K, V, block, k_blocks, scale=None) -> np.ndarray:
    """Attention over the tokens of the ``k_blocks`` blocks with the best block score.

    Blocks are contiguous runs of ``block`` tokens; a block's score is
    :func:`block_scores` (query against the mean key, as in MoBA, arXiv:2502.13189).
    Tokens attended = ``k_blocks * block`` (fewer if the short last block is chosen).

    Args:
        q, K, V: as in :func:`dense_attention`.
        block: tokens per block, ``1 <= block <= L``.
        k_blocks: blocks kept, ``1 <= k_blocks <= ceil(L / block)``.
        scale: as in :func:`dense_attention`.

    Returns:
        ``(..., d_v)``. With ``k_blocks = ceil(L / block)`` this is dense attention exactly.

    Raises:
        ValueError: ``block`` or ``k_blocks`` out of range, shapes that do not match.
    """
    q, K, V = _qkv(q, K, V)
    L = K.shape[-2]
    block = _whole("block", block, 1, L, "context")
    n_blocks = -(-L // block)
    k_blocks = _whole("k_blocks", k_blocks, 1, n_blocks, "the number of blocks ceil(context/block)")
    keep_block = topk_mask(block_scores(q, K, block), k_blocks)   # (..., n_blocks)
    mask = np.repeat(keep_block, block, axis=-1)[..., :L]
    return _attend(_scores(q, K, _scale(scale, q.shape[-1])), V, mask)


@finite_result
def indexer_scores(q, K, rank, seed=0) -> np.ndarray:
    """A cheap selection score: q and K projected to ``rank`` dimensions, then dotted.

    ``P`` is a fixed Gaussian ``rank x d`` matrix scaled by ``1/sqrt(rank)``, so
    ``(Pq).(PK_i)`` is an unbiased estimate of ``q.K_i`` whose noise falls as
    ``1/sqrt(rank)`` (Johnson-Lindenstrauss). It models the *idea* of an indexer
    (few dimensions, cheap per token), not DeepSeek's trained lightning indexer.

    Args:
        q: ``(..., d)``; K: ``(..., L, d)``.
        rank: projected dimensions, ``1 <= rank``.
        seed: seed of the projection.

    Returns:
        ``(..., L)`` approximate scores (unscaled).

    Raises:
        ValueError: ``rank < 1``.
    """
    q = as_array("q", q)
    K = as_array("K", K)
    if q.ndim < 1 or K.ndim < 2 or K.shape[-1] != q.shape[-1]:
        raise ValueError(f"q must have shape (..., d) and K (..., L, d) with the same d, "
                         f"got q {q.shape} and K {K.shape}")
    _leading(q=q.shape[:-1], K=K.shape[:-2])
    return _indexer_scores(q, K, _whole("rank", rank, 1), non_negative_int("seed", seed))


def _indexer_scores(q: np.ndarray, K: np.ndarray, rank: int, seed) -> np.ndarray:
    d = q.shape[-1]
    P = np.random.default_rng(seed).standard_normal((rank, d)) / math.sqrt(rank)
    P = P.astype(K.dtype)
    return np.einsum("...lr,...r->...l", K @ P.T, q.astype(K.dtype) @ P.T)


# ---- tasks ----------------------------------------------------------------------------------

class Task(NamedTuple):
    """One batch of synthetic trials.

    q ``(T, d)``, K ``(T, L, d)`` (float32, to halve the cost of drawing it), V ``(T, L, 1)``
    with values +-1, answer ``(T,)`` in {-1, +1}, needle_positions ``(T, m)``. A prediction
    is ``sign(out[..., 0])``; chance is 0.5.
    """

    q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    answer: np.ndarray
    needle_positions: np.ndarray


def aggregation_task(trials=256, context=2048, needles=32, margin=0.625, dim=32,
                     sharpness=12.0, jitter=0.1, clustered=False, seed=0) -> Task:
    """The answer is the majority label of ``needles`` tokens that match the query.

    Keys are random Gaussian vectors of unit expected norm. The query is
    ``sharpness * sqrt(dim) * u`` for a random unit vector u; each needle key is
    ``u + jitter * noise`` (so the true score of a needle is about ``sharpness``
    and of a distractor about ``sharpness * N(0, 1/dim)``). Values are +-1; among
    the needles exactly ``ceil(margin * needles)`` carry the answer, the rest the
    opposite label, placed at random. Distractor values are random +-1.

    Dense attention averages all needles and gets the majority; attention over a
    subset of k < m needles votes on the subset only (see
    :func:`majority_subset_accuracy`).

    Args:
        trials: independent rows T. context: L. needles: m, ``1 <= m <= L``.
        margin: fraction of needles carrying the answer, ``0.5 < margin <= 1``.
        dim: key dimension d. sharpness: a needle's true score (softmax logit, dimensionless);
            distractor scores are about ``sharpness * N(0, 1/dim)``.
        jitter: needle-key noise (makes needle scores differ, so which k are kept is random).
        clustered: put the needles in one contiguous run (text-like locality) instead of
            at random positions.
        seed: RNG seed.

    Returns:
        :class:`Task`.

    Raises:
        ValueError: any count < 1, ``needles > context``, ``margin`` outside (0.5, 1],
            ``sharpness`` or ``jitter`` negative.
    """
    T = positive_int("trials", trials)
    L = _whole("context", context, 1)
    m = _whole("needles", needles, 1, L, "context")
    d = _whole("dim", dim, 1)
    margin = scalar("margin", margin)
    if not 0.5 < margin <= 1.0:
        raise ValueError(f"margin must be in (0.5, 1], got {margin!r}")
    sharpness = scalar("sharpness", sharpness)
    jitter = scalar("jitter", jitter)
    clustered = flag("clustered", clustered)
    seed = non_negative_int("seed", seed)
    if sharpness < 0 or jitter < 0:
        raise ValueError(f"sharpness and jitter must be >= 0, got {sharpness!r}, {jitter!r}")
    n_major = math.ceil(margin * m)
    if 2 * n_major <= m:          # e.g. m = 2, margin 0.51 -> ceil gives 2; m even ties
        n_major = m // 2 + 1
    rng = np.random.default_rng(seed)

    K = rng.standard_normal((T, L, d), dtype=np.float32)
    K *= np.float32(1 / math.sqrt(d))
    u = rng.standard_normal((T, d))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    if clustered:
        start = rng.integers(0, L - m + 1, T)
        pos = start[:, None] + np.arange(m)
    else:
        pos = np.argpartition(rng.random((T, L)), m - 1, axis=-1)[:, :m]
    rows = np.arange(T)[:, None]
    K[rows, pos] = u[:, None, :] + jitter * rng.standard_normal((T, m, d)) / math.sqrt(d)
    # float32 keys halve the time to draw T x L x d normals; scores are taken in float64.
    answer = rng.choice(np.array([-1.0, 1.0]), T)
    V = rng.choice(np.array([-1.0, 1.0]), (T, L, 1))
    labels = np.where(np.arange(m) < n_major, 1.0, -1.0)[None, :] * answer[:, None]
    V[rows, pos, 0] = rng.permuted(labels, axis=1)
    q = sharpness * math.sqrt(d) * u
    return Task(q, K, V, answer, pos)


def retrieval_task(trials=256, context=2048, dim=32, sharpness=12.0, seed=0) -> Task:
    """One needle: the answer is the label of the single key that matches the query.

    The m = 1 case of :func:`aggregation_task` (no jitter). Exact top-k solves it
    for every k >= 1; only an approximate selector (indexer, block summary) can fail.
    """
    return aggregation_task(trials, context, needles=1, margin=1.0, dim=dim,
                            sharpness=sharpness, jitter=0.0, seed=seed)


def majority_subset_accuracy(needles, n_major, k) -> float:
    """P(the majority of k needles drawn without replacement is the true majority).

    Hypergeometric: m needles, n_major of them correct, k drawn (k > m counts as m).
    A tie (even k) counts as half right, a coin flip. This is the exact top-k
    curve of the aggregation task when distractors carry no weight.

    Raises:
        ValueError: counts out of range (``needles >= 1``, ``0 <= n_major <= needles``, ``k >= 1``).
    """
    m = _whole("needles", needles, 1)
    a = _whole("n_major", n_major, 0, m, "needles")
    k = min(_whole("k", k, 1), m)
    total = math.comb(m, k)
    p = 0.0
    for j in range(max(0, k - (m - a)), min(a, k) + 1):
        w = math.comb(a, j) * math.comb(m - a, k - j) / total
        p += w if 2 * j > k else (0.5 * w if 2 * j == k else 0.0)
    return p


# ---- sweeps ---------------------------------------------------------------------------------

_SELECTORS = ("exact", "indexer", "block")


def accuracy_vs_k(task, ks, selector="exact", *, block=32, rank=8, seed=0) -> dict:
    """Accuracy of top-k attention on ``task`` for each token budget in ``ks``, and of dense.

    Args:
        task: a :class:`Task`, or ``"aggregation"`` / ``"retrieval"`` for the defaults
            of :func:`aggregation_task` / :func:`retrieval_task`.
        ks: token budgets (tokens attended), each ``1 <= k <= L``; for
            ``selector="block"`` each must be a multiple of ``block``.
        selector: ``"exact"`` (true scores), ``"indexer"`` (:func:`indexer_scores`
            with ``rank``), ``"block"`` (:func:`block_scores` with ``block``).
        block, rank: selector parameters. seed: seed of the indexer projection.

    Returns:
        dict of arrays for plotting: ``k`` (tokens attended), ``fraction`` (k / L),
        ``accuracy`` (fraction of trials right), ``stderr`` (binomial standard error),
        ``needle_recall`` (fraction of needles inside the kept set), and floats
        ``dense_accuracy``, ``context``.

    Raises:
        ValueError: unknown task or selector, k out of range, k not a multiple of block.
    """
    if isinstance(task, str):
        makers = {"aggregation": aggregation_task, "retrieval": retrieval_task}
        if task not in makers:
            raise ValueError(f"task must be a Task or one of {sorted(makers)}, got {task!r}")
        task = makers[task]()
    if not isinstance(task, Task):
        raise TypeError(f"task must be a Task or a task name, got {type(task).__name__}")
    if selector not in _SELECTORS:
        raise ValueError(f"selector must be one of {_SELECTORS}, got {selector!r}")
    q, K, V, answer, pos = task
    T, L, d = K.shape
    ks_arr = np.atleast_1d(np.asarray(ks))
    if ks_arr.ndim != 1 or ks_arr.size == 0:
        raise ValueError(f"ks must be a non-empty list of token budgets, got {ks!r}")
    ks_list = [_whole("k", k, 1, L, "context") for k in ks_arr.tolist()]

    scale = 1.0 / math.sqrt(d)
    true = _scores(q.astype(K.dtype), K, scale).astype(np.float64)  # (T, L)
    rows = np.arange(T)[:, None]

    def score(mask):
        out = _attend(true, V, mask)[..., 0]
        return np.mean(np.sign(out) == answer)

    if selector == "block":
        block = _whole("block", block, 1, L, "context")
        bad = [k for k in ks_list if k % block]
        if bad:
            raise ValueError(f"with selector='block' every k must be a multiple of block={block}, got {bad}")
        sel = _block_scores(q, K, block)
    elif selector == "indexer":
        sel = _indexer_scores(q, K, _whole("rank", rank, 1), non_negative_int("seed", seed))
    else:
        sel = true

    acc, recall = [], []
    for k in ks_list:
        if selector == "block":
            n_blocks = sel.shape[-1]
            kb = min(k // block, n_blocks)
            mask = np.repeat(_topk_mask(sel, kb), block, axis=-1)[..., :L]
        else:
            mask = _topk_mask(sel, k)
        acc.append(score(mask))
        recall.append(mask[rows, pos].mean())
    acc = np.array(acc)
    k_arr = np.array(ks_list)
    return {
        "k": k_arr,
        "fraction": k_arr / L,
        "accuracy": acc,
        "stderr": np.sqrt(acc * (1 - acc) / T),
        "needle_recall": np.array(recall),
        "dense_accuracy": float(score(None)),
        "context": L,
    }


def sweep(trials=256, context=2048, needles=32, dim=32, block=32, rank=8, seed=0) -> dict:
    """The course's standard sweep: both tasks x three selectors, k from 1 (or one block) to L.

    Returns:
        ``{(task_name, selector): accuracy_vs_k(...) dict}``. About a second on a laptop CPU
        with the defaults (T = 256, L = 2048, d = 32).
    """
    agg = aggregation_task(trials, context, needles=needles, dim=dim, seed=seed)
    ret = retrieval_task(trials, context, dim=dim, seed=seed + 1)
    L = context
    powers = [2 ** i for i in range(int(math.log2(L)) + 1)]
    token_ks = sorted(set(powers + [L]))
    block_ks = [k for k in token_ks if k >= block and k % block == 0]
    out = {}
    for name, t in (("aggregation", agg), ("retrieval", ret)):
        out[(name, "exact")] = accuracy_vs_k(t, token_ks, "exact")
        out[(name, "indexer")] = accuracy_vs_k(t, token_ks, "indexer", rank=rank, seed=seed)
        out[(name, "block")] = accuracy_vs_k(t, block_ks, "block", block=block)
    return out


#: The budgets chapter 8 measures claim 37 at (tokens attended, of 2,048).
CLAIM37_KS = (1, 4, 16, 32, 64, 256, 1024, 2048)


@functools.lru_cache(maxsize=1)
def measured_topk_curves(trials: int = 192) -> dict:
    """Claim 37's measured accuracy against an exact top-k budget, computed once (~0.2 s) and cached.

    Returns ``{task: accuracy_vs_k(task, CLAIM37_KS, "exact")}`` for ``"aggregation"``
    (:func:`aggregation_task`: 32 needles, majority 20; its exact prediction is
    :func:`majority_subset_accuracy`) and ``"retrieval"`` (:func:`retrieval_task`), at the
    budgets :data:`CLAIM37_KS`. An explorer reads these instead of measuring in a slider move.
    """
    tasks = {"aggregation": aggregation_task(trials=trials), "retrieval": retrieval_task(trials=trials)}
    return {t: accuracy_vs_k(task, list(CLAIM37_KS), "exact") for t, task in tasks.items()}
