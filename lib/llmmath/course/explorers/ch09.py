"""Chapter 9: adversarial perturbations (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, kept, kept_line, log_axes
from . import register

__all__ = ['adversarial_explorer', 'reversible_explorer', 'kv_tier_explorer']


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
    a2.set_title("classifier output\ngrey: clean, colour: perturbed")


def _draw_adversarial(fig, index, eps, direction):
    from ...demos import adversarial

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
    # the two images and twenty bars are made once and updated (making them cost more than the rest of a frame)
    arts = [kept(fig, "clean", lambda: a0.imshow(np.zeros((8, 8)), cmap="gray_r", vmin=0, vmax=1)),
            kept(fig, "perturbed", lambda: a1.imshow(np.zeros((8, 8)), cmap="gray_r", vmin=0, vmax=1))]
    arts[0].set_data(x.reshape(8, 8))
    arts[1].set_data(xp.reshape(8, 8))
    clean = kept(fig, "clean bars", lambda: a2.bar(np.arange(10) - 0.2, np.zeros(10), 0.4, color="0.7"))
    moved = kept(fig, "perturbed bars", lambda: a2.bar(np.arange(10) + 0.2, np.zeros(10), 0.4, color="C0"))
    for bar, h in zip(clean, p0):
        bar.set_height(h)
    for bar, h in zip(moved, p1):
        bar.set_height(h)
        bar.set_facecolor("C3" if p1.argmax() != t[0] else "C0")
    arts += [*clean, *moved]
    verdict = "<b style='color:#b00'>flipped</b>" if p1.argmax() != p0.argmax() else "unchanged"
    return arts, (f"true digit {t[0]}; clean prediction {p0.argmax()} ({p0.max():.0%}); with a {direction} "
                  f"perturbation of {eps:.3f} per pixel ({eps * 16:.1f} of the 16 grey levels; Goodfellow et al.'s "
                  f"ImageNet panda flipped at eps = 0.007, one of 256 levels): prediction "
                  f"{p1.argmax()} ({p1.max():.0%}), {verdict}")


def adversarial_explorer(index: int = 0, eps: float = 0.08) -> "Explorer":
    """A test digit, its perturbed twin and the classifier's output, with sliders for the image and ``eps``."""
    import ipywidgets as W

    from ...demos import adversarial

    n = len(adversarial.digits_split()[3])
    return explorer(_setup_adversarial, _draw_adversarial, {
        "index": W.IntSlider(value=index, min=0, max=n - 1, description="test image"),
        "eps": W.FloatSlider(value=eps, min=0.0, max=0.3, step=0.005, readout_format=".3f", description="eps"),
        "direction": W.Dropdown(options=["gradient sign (FGSM)", "random sign"], value="gradient sign (FGSM)",
                                description="direction"),
    }, ncols=3, width=3.2, height=3.2)


register('adversarial_explorer', adversarial_explorer)


# --- claim 39: depth and precision -> activation memory stored vs recomputed, and reconstruction drift ------------

#: Published reversible-network memory figures (Reformer, Kitaev et al. 2020, introduction): activations of
#: 64K tokens x 1,024 wide x batch 8 are 0.5B floats, 2 GB per layer in fp32; a reversible stack keeps one layer's.
_REFORMER = dict(batch=8 * 65536, width=1024, bytes_per_value=4, values_per_block=1.0)
_TOY = dict(batch=1024, width=64, bytes_per_value=8, values_per_block=2.0)
_DEPTHS = np.array([1, 2, 4, 8, 16, 32, 64, 128])


def _setup_reversible(fig):
    from ...demos import reversible

    a1, a2 = fig.axes
    log_axes(a1, (1, 128), (1e-4, 1e3), "reversible blocks (layers)", "activation memory kept (GB)")
    log_axes(a2, (1, 128), (1e-18, 1e-1), "reversible blocks", "||x_rebuilt - x|| / ||x||")
    for (dt, gain), drift in reversible.drift_table().items():
        a2.loglog(reversible.DRIFT_DEPTHS, np.maximum(drift, 1e-18), "o-" if dt == "float32" else "s-", color="0.8",
                  lw=1, ms=3)
    a1.axhline(80, color="k", ls="--", lw=1)
    a1.text(1.2, 95, "H100 HBM 80 GB", fontsize=8)
    a1.set_title("kept for backward: stored vs recomputed", fontsize=9)
    a2.set_title("drift of going there and back (grey: all settings)", fontsize=9)


def _draw_reversible(fig, depth, precision, gain, scale):
    from ...demos import reversible

    a1, a2 = fig.axes
    kw = dict(_REFORMER if scale.startswith("Reformer") else _TOY)
    if not scale.startswith("Reformer"):
        kw["bytes_per_value"] = 4 if precision == "float32" else 8
    curves = {m: np.asarray(reversible.activation_bytes(depth=_DEPTHS, mode=m, **kw)) / 1e9
              for m in ("store", "checkpoint", "recompute")}
    here = {m: float(reversible.activation_bytes(depth=depth, mode=m, **kw)) / 1e9 for m in curves}
    # the lines and the legend are made once and moved (kept): making them cost more than drawing them
    arts = []
    for m, c in zip(curves, ("C3", "C1", "C0")):
        over = curves[m] > 80
        arts += [kept_line(a1, m, _DEPTHS, curves[m], "-", color=c, label=m),
                 kept_line(a1, (m, "over"), _DEPTHS[over], curves[m][over], "x", color="0.4"),
                 kept_line(a1, (m, "here"), [depth], [here[m]], "o", color=c, ms=7)]
    arts.append(kept(fig, "legend", lambda: a1.legend(handles=arts[0::3], fontsize=8, loc="lower right")))
    drift = reversible.drift_table()[(precision, gain)]
    i = list(reversible.DRIFT_DEPTHS).index(depth)
    arts += [kept_line(a2, "drift", reversible.DRIFT_DEPTHS, np.maximum(drift, 1e-18), "o-", color="C0", lw=2),
             kept_line(a2, "here", [depth], [max(drift[i], 1e-18)], "D", color="C3", ms=8)]
    fits = "" if here["store"] <= 80 else " <b style='color:#b00'>(stored: exceeds an H100's 80 GB -- x marks)</b>"
    return arts, (f"{depth} blocks, {scale}: stored {here['store']:.3g} GB{fits}, checkpointed {here['checkpoint']:.3g} GB, "
                  f"recomputed through the inverse {here['recompute']:.3g} GB (flat in depth; Reformer's paper: 2 GB "
                  f"per layer at 64K tokens x 1,024 x batch 8). Cost: one extra forward. Rebuilt input drifts by "
                  f"<b>{drift[i]:.1e}</b> ({precision}, weight gain {gain})")


def reversible_explorer() -> "Explorer":
    """Claim 39: depth and precision -> activation memory stored vs recomputed, and the inverse's drift (cached)."""
    import ipywidgets as W

    return explorer(_setup_reversible, _draw_reversible, {
        "depth": W.SelectionSlider(options=[int(d) for d in _DEPTHS], value=8, description="blocks"),
        "precision": W.Dropdown(options=["float32", "float64"], value="float32", description="precision"),
        "gain": W.Dropdown(options=[1.0, 1.5], value=1.0, description="weight gain"),
        "scale": W.Dropdown(options=["Reformer layer (64K x 1024 x 8, fp32)", "this chapter's toy (1024 x 64)"],
                            description="activations"),
    }, ncols=2, width=4.6)


register('reversible_explorer', reversible_explorer)


# --- claim 40: hold time vs memory tier, read vs recompute ---------------------------------------------------------

def _setup_tiers(fig):
    from ... import memory

    ax = fig.axes[0]
    names = list(memory.MEMORY_TIERS)
    log_axes(ax, (-0.6, len(names) - 0.4), (1e-9, 1e-1), "", "seconds per cached token", logx=False)
    ax.set_xticks(range(len(names)), [n.split(" (")[0] for n in names], fontsize=9)
    ax.set_title("read one token's KV back from a tier, or recompute it", fontsize=9)


def _draw_tiers(fig, hold_s, model, chip):
    from ... import memory

    ax = fig.axes[0]
    names = list(memory.MEMORY_TIERS)
    pick = memory.tier_for_hold(hold_s)
    reads = [memory.kv_tier_read_s(model, t) for t in names]
    _, rec = memory.kv_read_vs_recompute_s(model, chip, 4096)
    arts = list(ax.bar(range(len(names)), reads, 0.6, color=["C3" if t == pick else "C0" for t in names]))
    arts += ax.plot([-0.6, len(names) - 0.4], [float(rec)] * 2, "k--", lw=1.5)
    arts.append(ax.text(-0.5, float(rec) * 1.4, f"recompute on {chip}: {float(rec) * 1e6:.0f} us", fontsize=8))
    r = reads[names.index(pick)]
    verdict = "storing pays" if r < rec else "<b>recomputing is faster</b>"
    return arts, (f"held {hold_s:.3g} s: the tier whose drain time (capacity / bandwidth) covers it is <b>{pick}</b> "
                  f"(drains in {memory.tier_drain_s(pick):.3g} s). Reading a cached token of {model} back from it: "
                  f"{r * 1e6:.3g} us; recomputing it on one {chip} at its roofline (context 4,096): "
                  f"{float(rec) * 1e6:.3g} us -- {verdict}")


def kv_tier_explorer() -> "Explorer":
    """Claim 40: hold time -> memory tier (drain-time rule), and reading KV back from it vs recomputing."""
    import ipywidgets as W

    return explorer(_setup_tiers, _draw_tiers, {
        "hold_s": W.FloatLogSlider(value=1.0, base=10, min=-3, max=5, step=0.1, description="hold (s)",
                                   readout_format=".3g"),
        "model": W.Dropdown(options=["llama-3.1-70b", "llama-3.1-8b", "deepseek-v3"], description="model"),
        "chip": W.Dropdown(options=["h100-sxm", "b200"], description="chip"),
    }, width=6.5)


register('kv_tier_explorer', kv_tier_explorer)
