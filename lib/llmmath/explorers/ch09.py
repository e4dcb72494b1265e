"""Chapter 9: adversarial perturbations (see :mod:`llmmath.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer
from . import register

__all__ = ['adversarial_explorer']


def _setup_adversarial(fig):
    a0, a1, a2 = fig.axes
    for ax, title in ((a0, "test image"), (a1, "perturbed")):
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_xlim(-0.5, 7.5)
        ax.set_ylim(7.5, -0.5)
        ax.set_title(title, fontsize=10)
    a2.set_xlim(-0.6, 9.6)
    a2.set_ylim(0, 1)
    a2.set_xticks(range(10))
    a2.set_xlabel("digit")
    a2.set_ylabel("probability")
    a2.set_title("classifier output (grey: clean, colour: perturbed)", fontsize=9)


def _draw_adversarial(fig, index, eps, direction):
    from .. import adversarial

    a0, a1, a2 = fig.axes
    m = adversarial.trained_digits_mlp()
    _, _, X, y = adversarial.digits_split()
    x, t = X[index:index + 1], y[index:index + 1]
    if direction == "gradient sign (FGSM)":
        xp = adversarial.fgsm(m, x, t, eps)
    else:
        s = np.random.default_rng(index).choice([-1.0, 1.0], size=x.shape)
        xp = np.clip(x + eps * s, 0, 1)
    p0, p1 = m.probabilities(x)[0], m.probabilities(xp)[0]
    arts = [a0.imshow(x.reshape(8, 8), cmap="gray_r", vmin=0, vmax=1),
            a1.imshow(xp.reshape(8, 8), cmap="gray_r", vmin=0, vmax=1)]
    arts += list(a2.bar(np.arange(10) - 0.2, p0, 0.4, color="0.7"))
    arts += list(a2.bar(np.arange(10) + 0.2, p1, 0.4, color="C3" if p1.argmax() != t[0] else "C0"))
    verdict = "<b style='color:#b00'>flipped</b>" if p1.argmax() != p0.argmax() else "unchanged"
    return arts, (f"true digit {t[0]}; clean prediction {p0.argmax()} ({p0.max():.0%}); with a {direction} "
                  f"perturbation of {eps:.3f} per pixel ({eps * 16:.1f} of the 16 grey levels): prediction "
                  f"{p1.argmax()} ({p1.max():.0%}), {verdict}")


def adversarial_explorer(index: int = 0, eps: float = 0.08) -> "Explorer":
    """A test digit, its perturbed twin and the classifier's output, with sliders for the image and ``eps``."""
    import ipywidgets as W

    from .. import adversarial

    n = len(adversarial.digits_split()[3])
    return explorer(_setup_adversarial, _draw_adversarial, {
        "index": W.IntSlider(value=index, min=0, max=n - 1, description="test image"),
        "eps": W.FloatSlider(value=eps, min=0.0, max=0.3, step=0.005, readout_format=".3f", description="eps"),
        "direction": W.Dropdown(options=["gradient sign (FGSM)", "random sign"], value="gradient sign (FGSM)",
                                description="direction"),
    }, ncols=3, width=3.2, height=3.2)


register('adversarial_explorer', adversarial_explorer)
