"""The critical batch size, measured: steps and examples to a target loss against the batch.

The claim under test (59:58): judged by optimization progress per example,
smaller training batches are always better; larger batches only buy throughput.

Reference model: McCandlish, Kaplan, Amodei et al., "An Empirical Model of
Large-Batch Training", arXiv:1812.06162 (2018). With the learning rate tuned for
each batch B, the optimizer steps S and the training examples E = B*S needed to
reach a fixed loss lie on the hyperbola (section 2.3)

    (S / S_min - 1) (E / E_min - 1) = 1,  equivalently  S_min/S + E_min/E = 1,

so that S(B) = S_min (1 + B_noise/B) and E(B) = E_min (1 + B/B_noise) with the
critical batch B_crit = E_min / S_min (= B_noise of these two curves). Below
B_crit the examples needed are flat (within the factor 1 + B/B_crit of E_min);
above it the steps are flat (within 1 + B_crit/B of S_min).

The paper predicts B_crit from the "simple noise scale" B_simple = tr(Sigma) /
|G|^2 (section 2.2): Sigma is the covariance of one example's gradient,
G the mean gradient. It equals the noise scale B_noise = tr(H Sigma) / (G^T H G)
of the local quadratic model when the Hessian H is a multiple of the identity,
and it grows as the loss falls. Appendix A.1 (eq. A.2) estimates |G|^2 and
tr(Sigma) without bias from the squared norms of the mean gradient of two batch
sizes; :func:`two_batch_noise_scale` implements it, :func:`simple_noise_scale`
does the same from a matrix of per-example gradients.

The measured task (why this one): a linear teacher-student regression with label
noise, trained online by plain SGD,

    x ~ N(0, diag(lam)),  y = w* . x + sigma * noise,  loss(w) = E[(w . x - y)^2] / 2
                                                       = (w - w*)^T diag(lam) (w - w*) / 2 + sigma^2 / 2.

* Every step draws a fresh batch, as in the paper's setting (no epochs, no
  reuse of examples), so "examples" means examples seen, with no overfitting.
* The loss to the target is the exact population loss, O(d) per step, so the
  step at which a run crosses the target is not blurred by a held-out estimate.
* The gradient's mean G = diag(lam) (w - w*) and per-example covariance
  Sigma = lam-weighted outer products (Isserlis' theorem for Gaussian x):
  Sigma = H D D^T H + (2 loss(w)) H, with H = diag(lam), D = w - w*,
  so the measured B_simple can be checked against its exact value.
* The Hessian diag(lam) is ill-conditioned (lam from 1 down to 1/condition), so
  full-batch training still needs several steps (S_min is not 1) and
  B_noise != B_simple, as in real networks.
* All seeds and learning rates of one batch size run as one vectorized array
  program sharing the same data stream (common random numbers), so the whole
  sweep of 11 batch sizes x 22 learning rates x 16 seeds takes about half a second.

What the default sweep shows (seed 0, about 0.5 s on 2 busy CPU cores): S_min ~ 7
steps, E_min ~ 450 examples, B_crit ~ 63; examples to target are flat to within seed
noise (~10 %) from B = 1 to 8, and steps are flat to within ~20 % from B = 256 up.
B_simple averaged over the run is ~68 (B_crit / B_simple = 0.92); over four teachers
and two seeds that ratio ranged from 0.76 to 3.1, and B_simple itself grows from ~31
at the start to ~900 at the target.

What it is not: a neural network, a language model, or Adam. The result shows
the shape the paper predicts for plain SGD on a noisy quadratic, which is the
setting its theory is derived for; that it holds for LLMs is the paper's (and
later work's) empirical claim, not shown here.
"""

from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np

from .._validate import as_array, positive, positive_int, result

__all__ = [
    "default_run",
    "TeacherStudent", "make_task", "DEFAULT_TARGET_FRACTION", "DEFAULT_BATCHES", "DEFAULT_LR_FACTORS",
    "CriticalBatchRun",
    "steps_to_target", "NoiseFit", "fit_noise_model", "steps_model", "examples_model", "examples_excess",
    "simple_noise_scale", "two_batch_noise_scale", "NoiseScaleReport", "measured_noise_scale",
]

DEFAULT_TARGET_FRACTION = 0.05  # of the initial excess loss still left at the target
DEFAULT_BATCHES = tuple(2**k for k in range(11))  # 1 .. 1024
# learning rates as multiples of 1/lam_max, spaced by sqrt(2): 2^-10 .. 2^0.5 (gradient descent
# diverges at 2, so the grid stops one notch short of that edge)
DEFAULT_LR_FACTORS = tuple(2.0 ** (k / 2) for k in range(-20, 2))


@dataclasses.dataclass(frozen=True)
class TeacherStudent:
    """A noisy linear regression task with Gaussian inputs of covariance ``diag(eigenvalues)``.

    Fields (shapes): ``eigenvalues`` ``(d,)`` > 0, the input variances = the Hessian's
    eigenvalues; ``w_star`` ``(d,)``, the teacher; ``noise_std``, the label noise sigma (>= 0).
    The student starts at ``w = 0``. Losses are mean squared error / 2 (dimensionless).
    """

    eigenvalues: np.ndarray
    w_star: np.ndarray
    noise_std: float

    @property
    def dim(self) -> int:
        return int(self.eigenvalues.shape[0])

    @property
    def loss_floor(self) -> float:
        """The best reachable loss, ``sigma^2 / 2`` (at ``w = w*``)."""
        return 0.5 * self.noise_std**2

    @property
    def initial_loss(self) -> float:
        """The loss at ``w = 0``: ``w*^T H w* / 2 + sigma^2 / 2``."""
        return float(self.loss(np.zeros(self.dim)))

    def loss(self, w) -> np.ndarray | float:
        """Exact population loss of student(s) ``w``, shape ``(..., d)`` -> ``(...)``."""
        d = np.asarray(w, dtype=float) - self.w_star
        out = 0.5 * np.einsum("...i,i,...i->...", d, self.eigenvalues, d) + self.loss_floor
        return float(out) if np.ndim(out) == 0 else out

    def target_for(self, fraction: float) -> float:
        """The loss at which a ``fraction`` of the initial excess loss (above the floor) is left."""
        f = float(positive("fraction", fraction))
        if f >= 1:
            raise ValueError(f"fraction must be in (0, 1), got {fraction!r}")
        return self.loss_floor + f * (self.initial_loss - self.loss_floor)

    def sample(self, rng: np.random.Generator, shape) -> tuple[np.ndarray, np.ndarray]:
        """Fresh examples: ``x`` of shape ``(*shape, d)`` and labels ``y`` of shape ``shape``."""
        shape = tuple(np.atleast_1d(shape))
        x = rng.standard_normal((*shape, self.dim)) * np.sqrt(self.eigenvalues)
        y = x @ self.w_star + self.noise_std * rng.standard_normal(shape)
        return x, y

    def per_example_grads(self, w, n: int, rng: np.random.Generator) -> np.ndarray:
        """Gradients of ``n`` fresh examples' losses at ``w`` (``(d,)``): shape ``(n, d)``."""
        x, y = self.sample(rng, (positive_int("n", n),))
        return x * (x @ np.asarray(w, dtype=float) - y)[:, None]

    def gradient(self, w) -> np.ndarray:
        """The true (population) gradient ``G = H (w - w*)``, shape ``(d,)``."""
        return self.eigenvalues * (np.asarray(w, dtype=float) - self.w_star)

    def gradient_trace_cov(self, w) -> float:
        """Exact ``tr(Sigma)`` of one example's gradient at ``w``: ``|G|^2 + 2 loss(w) tr(H)``.

        Source: Isserlis' theorem for Gaussian x gives
        ``Sigma = H D D^T H + (D^T H D + sigma^2) H`` with ``D = w - w*``.
        """
        g = self.gradient(w)
        return float(g @ g + 2.0 * self.loss(w) * self.eigenvalues.sum())

    def exact_simple_noise_scale(self, w) -> float:
        """Exact ``B_simple = tr(Sigma) / |G|^2`` at ``w`` (inf at the optimum)."""
        g = self.gradient(w)
        gg = float(g @ g)
        return float("inf") if gg == 0 else self.gradient_trace_cov(w) / gg

    def exact_noise_scale(self, w) -> float:
        """Exact ``B_noise = tr(H Sigma) / (G^T H G)`` at ``w`` (McCandlish et al. section 2.2)."""
        g, h = self.gradient(w), self.eigenvalues
        ghg = float(g @ (h * g))
        if ghg == 0:
            return float("inf")
        return (ghg + 2.0 * self.loss(w) * float(h @ h)) / ghg


def make_task(dim: int = 32, condition: float = 128.0, noise_std: float = 1.0, seed: int = 0) -> TeacherStudent:
    """The course's task: ``dim`` input directions with variances ``condition^(-i/(dim-1))``
    (geometric, 1 down to ``1/condition``), a teacher ``w* ~ N(0, I)`` drawn with ``seed``,
    label noise ``noise_std``.

    Raises:
        ValueError: ``dim`` < 2, ``condition`` < 1, ``noise_std`` < 0 or not finite.
    """
    dim = positive_int("dim", dim)
    if dim < 2:
        raise ValueError(f"dim must be >= 2, got {dim}")
    cond = float(positive("condition", condition))
    if cond < 1:
        raise ValueError(f"condition must be >= 1 (largest / smallest eigenvalue), got {condition!r}")
    sigma = float(as_array("noise_std", noise_std))
    if sigma < 0:
        raise ValueError(f"noise_std must be >= 0, got {noise_std!r}")
    lam = cond ** (-np.arange(dim) / (dim - 1))
    w_star = np.random.default_rng(seed).standard_normal(dim)
    return TeacherStudent(lam, w_star, sigma)


@dataclasses.dataclass(frozen=True)
class CriticalBatchRun:
    """Steps and examples to a target loss, one entry per batch size (all arrays ``(n_batches,)``).

    ``batch`` examples per step; ``steps`` optimizer steps to first reach ``target_loss``
    (mean over ``seeds`` runs at the best learning rate); ``examples = batch * steps``;
    ``lr`` the chosen learning rate (fewest mean steps on the grid); ``lr_grid`` the grid
    tried; ``steps_by_lr`` ``(n_batches, n_lr)`` mean steps per learning rate (inf where a
    run diverged, was cut off because it could no longer win, or hit ``max_steps``);
    ``seeds`` runs per learning rate; ``elapsed_s`` the wall time of the sweep, seconds.
    """

    batch: np.ndarray
    steps: np.ndarray
    examples: np.ndarray
    lr: np.ndarray
    target_loss: float
    lr_grid: np.ndarray
    steps_by_lr: np.ndarray
    seeds: int
    elapsed_s: float
    task: TeacherStudent

    def table(self) -> str:
        rows = [f"{'B':>6} {'lr':>8} {'steps':>9} {'examples':>10}"]
        for b, lr, s, e in zip(self.batch, self.lr, self.steps, self.examples):
            rows.append(f"{int(b):>6d} {lr:>8.4f} {s:>9.1f} {e:>10.0f}")
        return "\n".join(rows)


def _run_one_batch(task: TeacherStudent, batch: int, lrs: np.ndarray, seeds: int, target: float,
                   max_steps: int, seed: int) -> np.ndarray:
    """Mean steps to ``target`` for each learning rate (inf if any seed fails), shape ``(n_lr,)``.

    All ``seeds x n_lr`` students run together; the seeds' data streams are shared across
    learning rates. The loop stops once every learning rate still running can no longer
    beat the best finished one: its mean, counting unfinished seeds at the current step,
    is already a lower bound on its final mean.
    """
    rng = np.random.default_rng([seed, batch])
    d, n_lr = task.dim, lrs.shape[0]
    w = np.zeros((seeds, n_lr, d))
    done = np.zeros((seeds, n_lr))
    alive = np.ones(n_lr, dtype=bool)
    blowup = 1e3 * task.initial_loss
    lr_col = lrs[None, :, None]
    scale = np.sqrt(task.eigenvalues)[:, None]
    for t in range(1, max_steps + 1):
        # fresh examples, stored transposed (S, d, B) so both products below run as BLAS
        # matmuls (NumPy's stacked matmul with a transposed left operand is ~10x slower)
        xt = rng.standard_normal((seeds, d, batch)) * scale
        y = task.w_star @ xt + task.noise_std * rng.standard_normal((seeds, batch))   # (S, B)
        resid = w @ xt - y[:, None, :]                                # (S, L, B)
        w -= lr_col * (resid @ xt.transpose(0, 2, 1)) / batch         # mean-gradient SGD step
        loss = task.loss(w)                                           # (S, L)
        newly = (done == 0) & (loss <= target)
        done[newly] = t
        bad = ~(loss <= blowup)                                       # diverged or NaN
        if bad.any():
            alive &= ~bad.any(axis=0)
            w[bad] = 0.0
        finished = (done > 0).all(axis=0) & alive
        lower = np.where(done > 0, done, t).mean(axis=0)
        best = np.where(finished, lower, np.inf).min()
        if not ((~finished) & alive & (lower < best)).any():
            break
    finished = (done > 0).all(axis=0) & alive
    return np.where(finished, done.mean(axis=0), np.inf)


def steps_to_target(batch_sizes=DEFAULT_BATCHES, target_loss: float | None = None, *,
                    task: TeacherStudent | None = None, lr_factors=DEFAULT_LR_FACTORS,
                    seeds: int = 16, max_steps: int = 20_000, seed: int = 0) -> CriticalBatchRun:
    """Train by SGD at each batch size, tuning the learning rate, and count the steps to a target loss.

    Args:
        batch_sizes: examples per step, whole numbers >= 1 (default 1, 2, 4, ..., 1024).
        target_loss: the population loss to reach (dimensionless, MSE/2); it must lie
            strictly between ``task.loss_floor`` and ``task.initial_loss``. Default: 5 %
            of the initial excess loss left (``task.target_for(DEFAULT_TARGET_FRACTION)``).
        task: a :class:`TeacherStudent`; default :func:`make_task()`.
        lr_factors: the learning-rate grid as multiples of ``1 / max(eigenvalues)``
            (default ``2^-10 .. 2^0.5`` in steps of ``sqrt 2``; plain gradient descent is
            stable below 2). As in McCandlish et al. (section 3), the rate is tuned for
            each batch size: the one with the fewest mean steps wins.
        seeds: independent runs (data streams) averaged per learning rate.
        max_steps: give up on a run after this many steps.
        seed: base seed; results are deterministic for a given seed.

    Returns:
        :class:`CriticalBatchRun` with ``batch``, ``steps``, ``examples``, ``lr`` (arrays of
        shape ``(n_batches,)``) and ``target_loss``.

    Raises:
        ValueError: a batch size not a whole number >= 1, an empty or repeated list, a target
            outside (floor, initial loss), an empty or non-positive lr grid, or a batch size
            for which no learning rate reached the target in ``max_steps``.
    """
    t0 = time.perf_counter()
    task = make_task() if task is None else task
    b = as_array("batch_sizes", batch_sizes).ravel()
    if b.size == 0:
        raise ValueError("batch_sizes must not be empty")
    if (b < 1).any() or (b != np.round(b)).any():
        raise ValueError(f"batch_sizes must be whole numbers >= 1, got {b.tolist()}")
    if np.unique(b).size != b.size:
        raise ValueError(f"batch_sizes must not repeat, got {b.tolist()}")
    if target_loss is None:
        target = task.target_for(DEFAULT_TARGET_FRACTION)
    else:
        target = float(as_array("target_loss", target_loss))
    if not task.loss_floor < target < task.initial_loss:
        raise ValueError(f"target_loss must lie strictly between the loss floor {task.loss_floor:.4g} "
                         f"and the initial loss {task.initial_loss:.4g}, got {target!r}")
    factors = positive("lr_factors", lr_factors).ravel()
    if factors.size == 0:
        raise ValueError("lr_factors must not be empty")
    lrs = np.sort(factors) / task.eigenvalues.max()
    seeds, max_steps = positive_int("seeds", seeds), positive_int("max_steps", max_steps)
    table = np.array([_run_one_batch(task, int(bi), lrs, seeds, target, max_steps, seed) for bi in b])
    best = table.argmin(axis=1)
    steps = table[np.arange(b.size), best]
    if not np.isfinite(steps).all():
        bad = b[~np.isfinite(steps)].astype(int).tolist()
        raise ValueError(f"no learning rate on the grid reached target_loss={target:.4g} within "
                         f"max_steps={max_steps} for batch sizes {bad}: raise max_steps or the target")
    return CriticalBatchRun(batch=b, steps=steps, examples=b * steps, lr=lrs[best], target_loss=target,
                            lr_grid=lrs, steps_by_lr=table, seeds=seeds,
                            elapsed_s=time.perf_counter() - t0, task=task)


@dataclasses.dataclass(frozen=True)
class NoiseFit:
    """The hyperbola fitted to (steps, examples): ``S_min`` steps, ``E_min`` examples,
    ``B_crit = E_min / S_min`` examples per step, and ``rms_rel_residual``, the root mean square
    of ``1 - S_min/S - E_min/E`` over the points (0 for data exactly on the hyperbola)."""

    S_min: float
    E_min: float
    B_crit: float
    rms_rel_residual: float

    @property
    def B_noise(self) -> float:
        """The same number under the paper's name (section 2.3) (B_noise of the fitted curves)."""
        return self.B_crit


def fit_noise_model(batch, steps, examples) -> NoiseFit:
    """Fit ``S_min/S + E_min/E = 1`` (McCandlish et al. section 2.3) by linear least squares.

    The hyperbola is linear in the unknowns: each point gives ``(1/S_i) S_min + (1/E_i) E_min = 1``.
    Each residual is relative (a fraction of the point's own steps and examples), so points
    with thousands of steps do not outweigh those with ten.

    Args:
        batch, steps, examples: arrays of one shape ``(n,)``, n >= 3, all > 0. ``batch`` is only
            checked (``examples`` need not equal ``batch * steps`` exactly, e.g. seed means).

    Returns:
        :class:`NoiseFit`.

    Raises:
        ValueError: fewer than 3 points, mismatched shapes, values <= 0 or not finite, or a
            fit with S_min <= 0 or E_min <= 0 (the points do not trace the hyperbola: e.g.
            steps that do not fall as the batch grows).
    """
    b, s, e = positive("batch", batch).ravel(), positive("steps", steps).ravel(), positive("examples", examples).ravel()
    if not b.shape == s.shape == e.shape:
        raise ValueError(f"batch, steps and examples must have one shape, got {b.shape}, {s.shape}, {e.shape}")
    if b.size < 3:
        raise ValueError(f"need at least 3 points to fit S_min and E_min with a check, got {b.size}")
    a = np.stack([1.0 / s, 1.0 / e], axis=1)
    (s_min, e_min), *_ = np.linalg.lstsq(a, np.ones_like(s), rcond=None)
    if not (s_min > 0 and e_min > 0):
        raise ValueError(f"the points do not trace S_min/S + E_min/E = 1 (fit gave S_min={s_min:.4g}, "
                         f"E_min={e_min:.4g}); check that steps fall and examples rise with batch")
    resid = 1.0 - a @ np.array([s_min, e_min])
    return NoiseFit(float(s_min), float(e_min), float(e_min / s_min), float(np.sqrt(np.mean(resid**2))))


def steps_model(batch, S_min, B_noise):
    """Steps to the target at batch ``B``: ``S_min (1 + B_noise / B)`` (McCandlish et al. section 2.3).

    Broadcasts over arrays; returns a float for scalars. Raises ValueError for values <= 0.
    """
    b, s, n = positive("batch", batch), positive("S_min", S_min), positive("B_noise", B_noise)
    return result(s * (1.0 + n / b))


def examples_model(batch, E_min, B_noise):
    """Examples to the target at batch ``B``: ``E_min (1 + B / B_noise)`` (McCandlish et al. section 2.3).

    Broadcasts over arrays; returns a float for scalars. Raises ValueError for values <= 0.
    """
    b, e, n = positive("batch", batch), positive("E_min", E_min), positive("B_noise", B_noise)
    return result(e * (1.0 + b / n))


def examples_excess(batch, B_crit):
    """Fraction of extra examples a batch costs over the per-example optimum: ``E/E_min - 1 = B / B_crit``.

    This is the most that any smaller batch can save, per example, at batch ``B``: at
    ``B = B_crit / 10`` going all the way down to batch 1 saves under 10 % of the examples.
    Broadcasts; raises ValueError for values <= 0.
    """
    return result(positive("batch", batch) / positive("B_crit", B_crit))


def simple_noise_scale(per_example_grads) -> float:
    """``B_simple = tr(Sigma) / |G|^2`` from a matrix of per-example gradients ``(n, P)``, n >= 2.

    ``tr(Sigma)`` is the unbiased sample variance summed over parameters (divisor n - 1);
    ``|G|^2`` is de-biased by subtracting ``tr(Sigma)/n`` from the squared norm of the mean
    (``E|mean|^2 = |G|^2 + tr(Sigma)/n``, McCandlish et al. eq. A.1). The ratio itself is not
    unbiased (the paper's remark after eq. A.2), but it is consistent as n grows.

    Raises:
        ValueError: fewer than 2 rows, not 2-D, not finite, or an estimated ``|G|^2 <= 0``
            (the mean gradient is buried in the noise: use more examples).
    """
    g = as_array("per_example_grads", per_example_grads)
    if g.ndim != 2 or g.shape[0] < 2:
        raise ValueError(f"per_example_grads must have shape (n, P) with n >= 2, got {g.shape}")
    n = g.shape[0]
    mean = g.mean(axis=0)
    tr_sigma = float(((g - mean) ** 2).sum() / (n - 1))
    g2 = float(mean @ mean) - tr_sigma / n
    if g2 <= 0:
        raise ValueError(f"estimated |G|^2 = {g2:.3g} <= 0 from {n} examples: the gradient signal is "
                         "below the noise; use more examples")
    return tr_sigma / g2


def two_batch_noise_scale(grad_sq_small, grad_sq_big, batch_small, batch_big) -> tuple[float, float, float]:
    """McCandlish et al. eq. A.2: ``(|G|^2, tr(Sigma), B_simple)`` from two batch sizes.

    Args:
        grad_sq_small, grad_sq_big: squared norms ``|G_B|^2`` of mean gradients over batches
            of ``batch_small`` and ``batch_big`` examples (averages over many batches allowed).
        batch_small, batch_big: the two batch sizes, ``batch_small < batch_big``.

    Returns:
        ``|G|^2 = (B_big |G_big|^2 - B_small |G_small|^2) / (B_big - B_small)``,
        ``tr(Sigma) = (|G_small|^2 - |G_big|^2) / (1/B_small - 1/B_big)``, and their ratio.
        Each estimate is unbiased; the ratio is not (average the two over many steps first,
        as the paper does, then divide).

    Raises:
        ValueError: batch sizes not ordered or not > 0, negative norms, ``|G|^2 <= 0`` or
            ``tr(Sigma) < 0`` (too few batches averaged).
    """
    bs, bb = float(positive("batch_small", batch_small)), float(positive("batch_big", batch_big))
    if not bs < bb:
        raise ValueError(f"need batch_small < batch_big, got {bs} and {bb}")
    ns, nb = float(as_array("grad_sq_small", grad_sq_small)), float(as_array("grad_sq_big", grad_sq_big))
    if ns < 0 or nb < 0:
        raise ValueError(f"squared norms must be >= 0, got {ns} and {nb}")
    g2 = (bb * nb - bs * ns) / (bb - bs)
    tr = (ns - nb) / (1.0 / bs - 1.0 / bb)
    if g2 <= 0 or tr < 0:
        raise ValueError(f"estimates |G|^2 = {g2:.3g}, tr(Sigma) = {tr:.3g}: need |G|^2 > 0 and tr(Sigma) >= 0 "
                         "(the noise buries the signal, or the big batch came out noisier); "
                         "average the squared norms over more batches")
    return g2, tr, tr / g2


@dataclasses.dataclass(frozen=True)
class NoiseScaleReport:
    """B_simple along the fastest (largest-batch, best-lr) run to the target.

    ``at_start`` measured from per-example gradients at the initial point; ``at_target``
    measured where that run first reaches the target; ``run_average`` the ratio of the
    run-averaged ``tr(Sigma)`` to the run-averaged ``|G|^2`` (the paper averages the two
    estimates separately, then divides); ``exact_*`` the same three from the closed forms
    of :class:`TeacherStudent`; ``exact_B_noise_run_average`` the Hessian-weighted
    ``B_noise`` averaged the same way; ``steps`` the length of the run.
    """

    at_start: float
    at_target: float
    run_average: float
    exact_at_start: float
    exact_at_target: float
    exact_run_average: float
    exact_B_noise_run_average: float
    steps: int


def measured_noise_scale(task: TeacherStudent, target_loss: float, lr: float, *, n_examples: int = 4096,
                         seed: int = 1, max_steps: int = 10_000) -> NoiseScaleReport:
    """Measure B_simple from per-example gradients along the full-gradient run to ``target_loss``.

    The run is gradient descent on the exact gradient at learning rate ``lr`` (use the rate
    :func:`steps_to_target` chose for its largest batch): the S_min trajectory. At its start
    and at every step until the target, ``n_examples`` fresh per-example gradients give
    estimates of ``tr(Sigma)`` and ``|G|^2`` (see :func:`simple_noise_scale`).

    Raises:
        ValueError: bad arguments, or a run that does not reach the target in ``max_steps``.
    """
    lr = float(positive("lr", lr))
    n_examples, max_steps = positive_int("n_examples", n_examples), positive_int("max_steps", max_steps)
    target = float(as_array("target_loss", target_loss))
    if not task.loss_floor < target < task.initial_loss:
        raise ValueError(f"target_loss must lie strictly between {task.loss_floor:.4g} and "
                         f"{task.initial_loss:.4g}, got {target!r}")
    rng = np.random.default_rng(seed)
    w = np.zeros(task.dim)
    tr_m, g2_m, tr_x, g2_x, hs_x, hg_x = [], [], [], [], [], []
    h = task.eigenvalues
    for step in range(max_steps + 1):
        g = task.per_example_grads(w, n_examples, rng)
        mean = g.mean(axis=0)
        tr = float(((g - mean) ** 2).sum() / (n_examples - 1))
        tr_m.append(tr)
        g2_m.append(float(mean @ mean) - tr / n_examples)
        G = task.gradient(w)
        tr_x.append(task.gradient_trace_cov(w))
        g2_x.append(float(G @ G))
        hg_x.append(float(G @ (h * G)))
        hs_x.append(hg_x[-1] + 2.0 * task.loss(w) * float(h @ h))
        if task.loss(w) <= target:
            break
        w = w - lr * G
    else:
        raise ValueError(f"gradient descent at lr={lr:.4g} did not reach {target:.4g} in {max_steps} steps")
    return NoiseScaleReport(
        at_start=tr_m[0] / g2_m[0], at_target=tr_m[-1] / g2_m[-1],
        run_average=float(np.mean(tr_m) / np.mean(g2_m)),
        exact_at_start=tr_x[0] / g2_x[0], exact_at_target=tr_x[-1] / g2_x[-1],
        exact_run_average=float(np.mean(tr_x) / np.mean(g2_x)),
        exact_B_noise_run_average=float(np.mean(hs_x) / np.mean(hg_x)), steps=step)


@functools.lru_cache(maxsize=1)
def default_run() -> tuple[CriticalBatchRun, NoiseFit]:
    """``(run, fit)``: :func:`steps_to_target` with its defaults and the hyperbola fitted to it, computed once.

    Chapter 7 and its explorer share this one sweep (about 0.4 s on 2 cores), so a slider
    reads the measured steps and examples instead of training. Deterministic (seeded).
    """
    run = steps_to_target()
    return run, fit_noise_model(run.batch, run.steps, run.examples)
