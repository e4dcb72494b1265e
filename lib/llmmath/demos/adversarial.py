"""A small classifier in NumPy, the fast gradient sign method, and the linear account of why it works.

Data: the handwritten digits that scikit-learn ships (UCI "Optical Recognition
of Handwritten Digits", 1,797 images of 8 x 8 pixels, values 0..16), read from
the package's own data file; nothing is downloaded.

Attack: the fast gradient sign method (FGSM; Goodfellow, Shlens & Szegedy,
"Explaining and harnessing adversarial examples", ICLR 2015):
``x_adv = clip(x + eps * sign(grad_x loss), 0, 1)``. Adversarial examples were
first reported by Szegedy et al., "Intriguing properties of neural networks", 2014.
"""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import os
from functools import lru_cache

import numpy as np

from .._validate import non_negative, positive_int

__all__ = ["load_digits", "digits_split", "MLP", "train_mlp", "trained_digits_mlp", "fgsm", "min_flip_eps",
           "linear_flip_eps"]


@lru_cache(maxsize=1)
def load_digits():
    """``(X, y)``: 1,797 digit images as float64 rows of 64 pixels scaled to [0, 1], and labels 0..9.

    Reads ``sklearn/datasets/data/digits.csv.gz`` from the installed scikit-learn
    without importing it (the import costs a second).

    Raises:
        RuntimeError: scikit-learn is not installed.
    """
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the digits data ships with scikit-learn: pip install scikit-learn")
    path = os.path.join(spec.submodule_search_locations[0], "datasets", "data", "digits.csv.gz")
    with gzip.open(path) as f:
        a = np.loadtxt(f, delimiter=",")
    return a[:, :-1] / 16.0, a[:, -1].astype(np.int64)


@dataclasses.dataclass
class MLP:
    """A two-layer perceptron ``softmax(relu(x W1 + b1) W2 + b2)`` (shapes: x ``(n, d_in)``)."""

    W1: np.ndarray
    b1: np.ndarray
    W2: np.ndarray
    b2: np.ndarray

    def logits(self, x: np.ndarray) -> np.ndarray:
        return np.maximum(x @ self.W1 + self.b1, 0.0) @ self.W2 + self.b2

    def predict(self, x: np.ndarray) -> np.ndarray:
        return self.logits(x).argmax(axis=1)

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        z = self.logits(x)
        z = np.exp(z - z.max(axis=1, keepdims=True))
        return z / z.sum(axis=1, keepdims=True)

    def loss_and_grads(self, x: np.ndarray, y: np.ndarray):
        """Mean cross-entropy, the parameter gradients, and the gradient with respect to ``x``."""
        h_pre = x @ self.W1 + self.b1
        h = np.maximum(h_pre, 0.0)
        z = h @ self.W2 + self.b2
        z = z - z.max(axis=1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(axis=1, keepdims=True)
        n = x.shape[0]
        loss = -np.mean(np.log(p[np.arange(n), y] + 1e-300))
        dz = p
        dz[np.arange(n), y] -= 1.0
        dz /= n
        dW2, db2 = h.T @ dz, dz.sum(axis=0)
        dh = (dz @ self.W2.T) * (h_pre > 0)
        dW1, db1 = x.T @ dh, dh.sum(axis=0)
        dx = dh @ self.W1.T
        return loss, (dW1, db1, dW2, db2), dx


def train_mlp(x, y, hidden: int = 64, epochs: int = 150, lr: float = 0.01, seed: int = 0) -> MLP:
    """Train an :class:`MLP` by full-batch Adam (Kingma & Ba 2015) on ``(x, y)``; deterministic for a seed."""
    hidden, epochs = positive_int("hidden", hidden), positive_int("epochs", epochs)
    rng = np.random.default_rng(seed)
    d, k = x.shape[1], int(y.max()) + 1
    m = MLP(rng.normal(0, np.sqrt(2 / d), (d, hidden)), np.zeros(hidden),
            rng.normal(0, np.sqrt(1 / hidden), (hidden, k)), np.zeros(k))
    params = [m.W1, m.b1, m.W2, m.b2]
    mom = [np.zeros_like(p) for p in params]
    vel = [np.zeros_like(p) for p in params]
    for t in range(1, epochs + 1):
        _, grads, _ = m.loss_and_grads(x, y)
        for p, g, a, v in zip(params, grads, mom, vel):
            a *= 0.9
            a += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            p -= lr * (a / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
    return m


def fgsm(model: MLP, x, y, eps):
    """Fast gradient sign perturbation of ``x`` (``(n, d)``) by ``eps`` per pixel, clipped to [0, 1].

    ``eps`` may be a scalar or an array broadcasting against ``x[:, :1]`` (one per row).
    """
    e = non_negative("eps", eps)
    _, _, dx = model.loss_and_grads(x, y)
    e = e.reshape(-1, 1) if e.ndim else e
    return np.clip(x + e * np.sign(dx), 0.0, 1.0)


def min_flip_eps(model: MLP, x, y, eps_grid=None, direction: str = "fgsm", seed: int = 0):
    """Smallest perturbation size (L-infinity, fraction of the pixel range) that changes each prediction.

    ``direction="fgsm"`` moves along the gradient sign; ``"random"`` along a random
    sign pattern (same size). Returns one value per row of ``x``, ``inf`` where no
    value on ``eps_grid`` (default 0..1 in 201 steps) flips it; rows already
    misclassified get 0.
    """
    grid = np.linspace(0, 1, 201) if eps_grid is None else non_negative("eps_grid", eps_grid)
    if direction == "fgsm":
        _, _, dx = model.loss_and_grads(x, y)
        s = np.sign(dx)
    elif direction == "random":
        s = np.random.default_rng(seed).choice([-1.0, 1.0], size=x.shape)
    else:
        raise ValueError(f"direction must be 'fgsm' or 'random', got {direction!r}")
    out = np.full(x.shape[0], np.inf)
    for e in grid:  # ascending: the first flip is the smallest
        flipped = model.predict(np.clip(x + e * s, 0.0, 1.0)) != y
        new = flipped & ~np.isfinite(out)
        out[new] = e
    return out


def linear_flip_eps(w_diff, margin):
    """Smallest L-infinity perturbation that erases a linear margin: ``margin / ||w_diff||_1``.

    For scores ``w_k . x``, moving ``x`` by ``eps * sign(w_k - w_y)`` changes the
    score gap by ``eps * ||w_k - w_y||_1``; a random sign pattern of the same size
    changes it by only about ``eps * ||w||_2`` (a sum of random signs). With ``m``
    inputs of similar weight, ``||w||_1 ~ m |w|`` while ``||w||_2 ~ sqrt(m) |w|``:
    in high dimension a perturbation far below any single input's resolution
    adds up to a large change (Goodfellow et al. 2015, section 3).
    """
    w = np.asarray(w_diff, dtype=float)
    return non_negative("margin", margin) / np.abs(w).sum(axis=-1)


@lru_cache(maxsize=1)
def digits_split(test_fraction: float = 0.25, seed: int = 0):
    """``(X_train, y_train, X_test, y_test)``: a fixed random split of :func:`load_digits`."""
    X, y = load_digits()
    idx = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    te, tr = idx[:n_test], idx[n_test:]
    return X[tr], y[tr], X[te], y[te]


@lru_cache(maxsize=1)
def trained_digits_mlp() -> MLP:
    """The course's reference classifier: :func:`train_mlp` on the training split (seed 0, ~0.5 s)."""
    Xtr, ytr, _, _ = digits_split()
    return train_mlp(Xtr, ytr)
