"""Ciphers, adversarial examples, reversible blocks and activation memory: hand derivations."""

import numpy as np
import pytest

from llmmath import adversarial as A, ciphers as C, memory as M, reversible as R


# ---- ciphers -------------------------------------------------------------------------------

def test_feistel_decrypt_inverts_encrypt_for_any_keys():
    rng = np.random.default_rng(0)
    x = rng.integers(0, 2**63, 500, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    for rounds in (1, 2, 5, 16):
        k = C.feistel_keys(rounds, seed=rounds)
        assert np.array_equal(C.feistel_decrypt(C.feistel_encrypt(x, k), k), x)


def test_bit_flips_by_hand():
    assert C.bit_flips(np.uint64(0b1011), np.uint64(0b0001)).item() == 2
    assert C.bit_flips(np.uint64(2**64 - 1), np.uint64(0)).item() == 64


def test_one_round_avalanche_by_hand_and_many_rounds_reach_half():
    # One round: (L, R) -> (R, L ^ F(R)). A flipped bit in L (half the time) flips exactly
    # one output bit; one in R flips that bit of the new L plus about half of F's 32 bits.
    # Expected: 0.5 * 1 + 0.5 * (1 + 16) = 9 bits.
    assert 7 < C.avalanche_feistel(1).mean() < 11
    assert abs(C.avalanche_feistel(8).mean() - 32) < 1.5


def test_sha256_avalanche_is_half_of_256():
    flips = C.avalanche_sha256(300)
    assert abs(flips.mean() - 128) < 3 and 4 < flips.std() < 12  # binomial(256, 1/2): sd 8


# ---- adversarial ---------------------------------------------------------------------------

def test_digits_are_the_uci_set():
    X, y = A.load_digits()
    assert X.shape == (1797, 64) and X.min() == 0 and X.max() == 1 and set(y) == set(range(10))


def test_linear_flip_eps_by_hand():
    w = np.array([[0.5, -0.25, 0.25]])  # ||w||_1 = 1
    assert A.linear_flip_eps(w, 2.0)[0] == pytest.approx(2.0)


def test_input_gradient_matches_finite_differences():
    m = A.train_mlp(*A.digits_split()[:2], epochs=5)
    x, y = A.digits_split()[2][:3], A.digits_split()[3][:3]
    _, _, dx = m.loss_and_grads(x, y)
    j, h = 27, 1e-6
    e = np.zeros_like(x)
    e[:, j] = h
    lp, _, _ = m.loss_and_grads(x + e, y)
    lm, _, _ = m.loss_and_grads(x - e, y)
    # the loss is a mean over the 3 rows, so the summed derivative is 3 x mean
    assert (lp - lm) / (2 * h) == pytest.approx(dx[:, j].sum(), rel=1e-4)


def test_fgsm_raises_the_loss_and_eps_zero_is_identity():
    m = A.trained_digits_mlp()
    _, _, X, y = A.digits_split()
    assert np.array_equal(A.fgsm(m, X, y, 0.0), X)
    l0, _, _ = m.loss_and_grads(X, y)
    l1, _, _ = m.loss_and_grads(A.fgsm(m, X, y, 0.05), y)
    assert l1 > 2 * l0


def test_min_flip_eps_really_flips_and_refuses_bad_direction():
    m = A.trained_digits_mlp()
    _, _, X, y = A.digits_split()
    ok = m.predict(X) == y
    e = A.min_flip_eps(m, X[ok][:50], y[ok][:50])
    flipped = m.predict(A.fgsm(m, X[ok][:50], y[ok][:50], e)) != y[ok][:50]
    assert flipped.all()
    with pytest.raises(ValueError, match="direction"):
        A.min_flip_eps(m, X[:2], y[:2], direction="up")


# ---- reversible ----------------------------------------------------------------------------

def test_inverse_is_exact_in_float64_and_drifts_in_float32():
    X, _ = A.load_digits()
    assert R.reconstruction_error(R.init_revnet(64, 16), X[:100]) < 1e-13
    e32 = R.reconstruction_error(R.init_revnet(64, 16, dtype=np.float32), X[:100].astype(np.float32))
    assert 1e-8 < e32 < 1e-3


@pytest.mark.parametrize("mode", ["recompute", "checkpoint"])
def test_recomputed_gradients_equal_stored_ones(mode):
    X, y = A.load_digits()
    net = R.init_revnet(64, 7, seed=3)
    _, gs = R.loss_and_grads(net, X[:64], y[:64], "store")
    _, gm = R.loss_and_grads(net, X[:64], y[:64], mode)
    assert max(np.max(np.abs(a - b)) for a, b in zip(gs, gm)) < 1e-12


def test_gradient_of_a_read_out_bias_by_finite_difference():
    X, y = A.load_digits()
    net = R.init_revnet(64, 3, seed=5)
    _, g = R.loss_and_grads(net, X[:32], y[:32])
    h = 1e-6
    net.bo[4] += h
    lp, _ = R.loss_and_grads(net, X[:32], y[:32])
    net.bo[4] -= 2 * h
    lm, _ = R.loss_and_grads(net, X[:32], y[:32])
    assert (lp - lm) / (2 * h) == pytest.approx(g[-1][4], rel=1e-6)


def test_revnet_errors():
    with pytest.raises(ValueError, match="even"):
        R.init_revnet(63, 2)
    net = R.init_revnet(8, 2)
    with pytest.raises(ValueError, match="mode"):
        R.loss_and_grads(net, np.zeros((2, 8)), np.zeros(2, int), "keep")


# ---- activation memory -----------------------------------------------------------------------

def test_activation_bytes_by_hand_korthikanti():
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    sbh = s * b * h
    assert M.activation_bytes_per_layer(s, b, h, a) == pytest.approx(sbh * (34 + 5 * a * s / h))
    assert M.activation_bytes_per_layer(s, b, h, a, t) == pytest.approx(sbh * (10 + 24 / t + 5 * a * s / (h * t)))
    assert M.activation_bytes_per_layer(s, b, h, a, t, True) == pytest.approx(sbh * (34 / t + 5 * a * s / (h * t)))
    assert M.activation_bytes_per_layer(s, b, h, a, t, True, "selective") == pytest.approx(sbh * 34 / t)
    assert M.activation_bytes_per_layer(s, b, h, a, 1, False, "full") == pytest.approx(2 * sbh)
    # the 34: attention 11 + MLP 19 + LayerNorms 4 (bytes per s b h element, 16-bit activations)
    assert 11 + 19 + 4 == 34


def test_activation_bytes_errors_and_broadcast():
    out = M.activation_bytes_per_layer(np.array([1024, 2048]), 1, 4096, 32)
    assert out.shape == (2,) and out[1] > 2 * out[0]  # the attention term grows as s^2
    with pytest.raises(ValueError, match="recompute"):
        M.activation_bytes_per_layer(1024, 1, 4096, 32, recompute="some")
    with pytest.raises(ValueError, match="seq_len"):
        M.activation_bytes_per_layer(0, 1, 4096, 32)


def test_kv_read_vs_recompute_by_hand():
    read, rec = M.kv_read_vs_recompute_s("llama-3.1-8b", "h200", 0)
    assert read == pytest.approx(131_072 / 4.8e12)
    assert rec == pytest.approx(2 * (8_030_261_248 - 128_256 * 4_096) / 989.5e12)


def test_mla_recompute_uses_the_prefill_form():
    """DeepSeek-V3 (kv_lora_rank 512, rope 64, 128 heads, nope 128, v 128), per position per layer:
    decode (absorbed) attends to the latent: 2 x 128 x (512 + 64) for q.k plus 2 x 128 x 512 for p.v;
    prefill (not absorbed) to up-projected keys (128 + 64) and values (128): 2 x 128 x (192 + 128)."""
    from llmmath import models

    absorbed = 2 * 128 * (512 + 64) + 2 * 128 * 512
    prefill = 2 * 128 * (128 + 64) + 2 * 128 * 128
    assert (absorbed, prefill) == (278_528, 81_920)
    m = models.get("deepseek-v3")
    assert float(m.attention_flops_per_token(1.0)) == pytest.approx(m.n_layers * absorbed)
    assert float(m.attention_flops_per_token(1.0, absorbed=False)) == pytest.approx(m.n_layers * prefill)
    read, rec = M.kv_read_vs_recompute_s("deepseek-v3", "h100-sxm", 4096)
    assert rec == pytest.approx((2 * m.matmul_params_per_token + 61 * prefill * 4096) / 989.5e12)
    # DeepSeek-V3's cache: 61 layers x (512 + 64) x 2 bytes = 70,272 bytes per token in bf16
    assert read == pytest.approx(61 * 576 * 2 / 3.35e12)
    # a dense model has one form
    g = models.get("llama-3.1-8b")
    assert float(g.attention_flops_per_token(4096, absorbed=False)) == float(g.attention_flops_per_token(4096))


def test_depth_sweep_memory_per_stored_block_matches_a_hand_count():
    from llmmath import reversible
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((256, 16)), rng.integers(0, 10, 256)
    ds = reversible.depth_sweep(x, y, depths=(2, 10), repeats=1)
    # by hand: a stored block keeps its input (256 x 16 values) and its two tanh outputs (256 x 8 each), float64
    assert ds.predicted_bytes_per_block == 2 * 256 * 16 * 8
    assert abs(ds.stored_bytes_per_block / (2 * 256 * 16 * 8) - 1) < 0.1
    # recomputation keeps memory flat: the deeper network's peak within 30% of the shallow one's
    assert ds.peak_bytes["recompute"][1] < 1.3 * ds.peak_bytes["recompute"][0]
    assert set(ds.seconds) == {"store", "recompute", "checkpoint"} and np.all(ds.seconds["store"] > 0)
    with pytest.raises(ValueError, match="increasing"):
        reversible.depth_sweep(x, y, depths=(4, 2))
    with pytest.raises(ValueError, match="even width"):
        reversible.depth_sweep(x[:, :15], y)
    with pytest.raises(ValueError):
        reversible.depth_sweep(x, y, depths=(0, 2))
