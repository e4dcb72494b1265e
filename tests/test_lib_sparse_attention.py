"""Sparse (top-k) attention vs dense: exact identities, hand-checked selection, the k-sweeps, the studies catalog."""

import math

import numpy as np
import pytest

from llmmath import _catalog
from llmmath import sparse_attention as S


def _rand(T=3, L=40, d=8, dv=2, seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((T, d)), rng.standard_normal((T, L, d)), rng.standard_normal((T, L, dv))


# ---- identities -----------------------------------------------------------------------------

def test_topk_with_k_equal_context_is_dense_exactly():
    q, K, V = _rand()
    dense = S.dense_attention(q, K, V)
    assert dense.shape == (3, 2)
    assert np.array_equal(S.topk_attention(q, K, V, k=40), dense)
    # any selection score, k = L keeps everything
    sel = np.random.default_rng(1).standard_normal((3, 40))
    assert np.array_equal(S.topk_attention(q, K, V, k=40, scores=sel), dense)
    # all blocks kept, even with a short last block (40 = 3 x 12 + 4)
    assert np.array_equal(S.block_topk_attention(q, K, V, block=12, k_blocks=4), dense)


def test_dense_matches_the_textbook_formula():
    q, K, V = _rand(T=1, L=5, d=4, dv=3)
    s = K[0] @ q[0] / 2.0                      # 1/sqrt(4)
    w = np.exp(s) / np.exp(s).sum()
    assert np.allclose(S.dense_attention(q, K, V)[0], w @ V[0], rtol=1e-12, atol=0)


def test_topk_selection_by_hand():
    # d = 1, scale 1: scores are the keys times q = 1
    q = np.array([1.0])
    K = np.array([[0.0], [3.0], [1.0], [2.0]])
    V = np.array([[10.0], [20.0], [30.0], [40.0]])
    assert S.topk_mask(np.array([0.0, 3.0, 1.0, 2.0]), 2).tolist() == [False, True, False, True]
    # k = 1: the token with score 3 alone -> its value exactly
    assert S.topk_attention(q, K, V, k=1, scale=1.0)[0] == 20.0
    # k = 2: tokens 1 and 3 (scores 3, 2): (e^3 * 20 + e^2 * 40) / (e^3 + e^2)
    expect = (math.exp(3) * 20 + math.exp(2) * 40) / (math.exp(3) + math.exp(2))
    assert S.topk_attention(q, K, V, k=2, scale=1.0)[0] == pytest.approx(expect, rel=1e-14)
    # selection by other scores, softmax by the true ones: pick tokens 0 and 2
    out = S.topk_attention(q, K, V, k=2, scores=np.array([9.0, -1.0, 8.0, 0.0]), scale=1.0)[0]
    assert out == pytest.approx((1 * 10 + math.e * 30) / (1 + math.e), rel=1e-14)
    # blocks of 2: means 1.5 and 1.5 tie; blocks of 1 = token top-k
    assert np.array_equal(S.block_topk_attention(q, K, V, block=1, k_blocks=2, scale=1.0),
                          S.topk_attention(q, K, V, k=2, scale=1.0))
    assert S.block_scores(q, np.array([[0.0], [3.0], [1.0], [5.0], [7.0]]), 2).tolist() == [1.5, 3.0, 7.0]


def test_majority_subset_accuracy_by_hand():
    # 3 needles, 2 right: one draw is right 2/3 of the time; two draws: both right 1/3, a tie 2/3 -> 1/3 + 1/3
    assert S.majority_subset_accuracy(3, 2, 1) == pytest.approx(2 / 3)
    assert S.majority_subset_accuracy(3, 2, 2) == pytest.approx(2 / 3)
    assert S.majority_subset_accuracy(3, 2, 3) == 1.0
    assert S.majority_subset_accuracy(3, 2, 10) == 1.0


# ---- the sweeps -----------------------------------------------------------------------------

def _non_increasing_as_k_shrinks(acc, se, slack=3.0):
    """acc is ordered by growing k; allow each step down to rise by a few standard errors."""
    noise = slack * np.maximum(np.maximum(se[1:], se[:-1]), 0.02)
    return np.all(acc[:-1] <= acc[1:] + noise)


@pytest.fixture(scope="module")
def sweep():
    # (a 1-tuple, as the tests index it; the sweep's speed is timed by benchmarks/run.py, not asserted here)
    return (S.sweep(),)


@pytest.mark.parametrize("selector", ["exact", "indexer", "block"])
def test_aggregation_accuracy_falls_as_k_shrinks(sweep, selector):
    r = sweep[0][("aggregation", selector)]
    assert r["dense_accuracy"] > 0.97
    assert r["accuracy"][-1] == r["dense_accuracy"]              # k = L is dense
    assert _non_increasing_as_k_shrinks(r["accuracy"], r["stderr"])
    assert r["accuracy"][0] < 0.75                               # too sparse: near the vote on a handful
    assert np.all(np.diff(r["needle_recall"]) >= 0)


def test_exact_topk_on_aggregation_follows_the_hypergeometric_curve(sweep):
    r = sweep[0][("aggregation", "exact")]
    m, a = 32, math.ceil(0.625 * 32)
    theory = np.array([S.majority_subset_accuracy(m, a, k) for k in r["k"]])
    assert np.all(np.abs(r["accuracy"] - theory) < 4 * np.maximum(r["stderr"], 0.02))
    assert np.all(r["accuracy"][r["k"] >= m] == 1.0)             # every needle kept: no loss


def test_retrieval_exact_topk_never_loses_the_needle_but_cheap_selectors_do(sweep):
    exact = sweep[0][("retrieval", "exact")]
    assert np.all(exact["accuracy"] == 1.0) and np.all(exact["needle_recall"] == 1.0)
    for sel in ("indexer", "block"):
        r = sweep[0][("retrieval", sel)]
        assert r["dense_accuracy"] == 1.0 and r["accuracy"][-1] == 1.0
        assert _non_increasing_as_k_shrinks(r["accuracy"], r["stderr"])
        assert r["accuracy"][0] < 0.8


def test_clustered_needles_suit_block_selection():
    t = S.aggregation_task(trials=64, context=512, needles=16, clustered=True, seed=3)
    r = S.accuracy_vs_k(t, [32, 64], "block", block=16)
    assert np.all(r["accuracy"] > 0.95)


def test_sweep_is_seeded():
    a = S.accuracy_vs_k(S.retrieval_task(trials=32, context=256, seed=5), [4, 16], "indexer", rank=4)
    b = S.accuracy_vs_k(S.retrieval_task(trials=32, context=256, seed=5), [4, 16], "indexer", rank=4)
    assert np.array_equal(a["accuracy"], b["accuracy"])


# ---- bad input ------------------------------------------------------------------------------

@pytest.mark.parametrize("call, name", [
    (lambda q, K, V: S.topk_attention(q, K, V, k=0), "k"),
    (lambda q, K, V: S.topk_attention(q, K, V, k=41), "k"),
    (lambda q, K, V: S.topk_attention(q, K, V, k=2.5), "k"),
    (lambda q, K, V: S.topk_attention(q, K, V, k=3, scores=np.zeros((3, 7))), "scores"),
    (lambda q, K, V: S.block_topk_attention(q, K, V, block=0, k_blocks=1), "block"),
    (lambda q, K, V: S.block_topk_attention(q, K, V, block=41, k_blocks=1), "block"),
    (lambda q, K, V: S.block_topk_attention(q, K, V, block=8, k_blocks=6), "k_blocks"),
    (lambda q, K, V: S.dense_attention(q, K[..., :5], V), "K"),
    (lambda q, K, V: S.dense_attention(q, K, V[:, :7]), "V"),
    (lambda q, K, V: S.dense_attention(q, K, V, scale=-1.0), "scale"),
    (lambda q, K, V: S.dense_attention(np.full_like(q, np.nan), K, V), "q"),
    (lambda q, K, V: S.indexer_scores(q, K, rank=0), "rank"),
])
def test_bad_inputs_raise_value_error_naming_the_argument(call, name):
    q, K, V = _rand()
    with pytest.raises(ValueError, match=rf"\b{name}\b"):
        call(q, K, V)


def test_bad_task_arguments():
    with pytest.raises(ValueError, match="needles"):
        S.aggregation_task(trials=2, context=16, needles=17)
    with pytest.raises(ValueError, match="margin"):
        S.aggregation_task(trials=2, context=16, needles=4, margin=0.5)
    with pytest.raises(ValueError, match="selector"):
        S.accuracy_vs_k(S.retrieval_task(trials=2, context=16), [1], "lsh")
    with pytest.raises(ValueError, match="multiple of block"):
        S.accuracy_vs_k(S.retrieval_task(trials=2, context=64), [48], "block", block=32)
    with pytest.raises(ValueError, match=r"\bk\b"):
        S.accuracy_vs_k(S.retrieval_task(trials=2, context=16), [17])
    with pytest.raises(ValueError, match="task"):
        S.accuracy_vs_k("needle", [1])


# ---- the studies catalog --------------------------------------------------------------------

def test_studies_toml_parses_and_each_study_is_sourced():
    studies = _catalog.load("sparse_attention_studies.toml")["studies"]
    assert {"nsa", "dsa", "moba", "quest", "sparse-frontier"} <= set(studies)
    for key, s in studies.items():
        for field in ("name", "year", "url", "mechanism", "selection", "budget", "finding"):
            assert s.get(field), f"{key} lacks {field}"
        assert s["url"].startswith("https://"), key
        assert isinstance(s.get("unverified", []), list), key
        assert any(ch.isdigit() for ch in s["finding"]), f"{key}: the finding should carry numbers"
