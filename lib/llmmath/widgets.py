"""Thin ipywidgets explorers over the library's pure functions.

An :class:`Explorer` has controls, a figure image and a text panel. Its axes,
ticks, labels and grid are drawn **once** (``setup``), with fixed limits; each
slider move calls ``draw(fig, **values)``, which calls library functions and
returns the few artists that change (curves, markers) plus an HTML message.
Only those artists are drawn onto the saved background (blitting), and the
result is sent to an ``ipywidgets.Image`` as a PNG. A full Matplotlib redraw
costs about 30 ms per log-scaled axes on a 2-core CPU; blitting keeps a slider
answer within the course's 50 ms budget (see ``benchmarks/run.py``).

No compute happens here beyond calling the library; the widget builds headless
(nbval) without a browser.
"""

from __future__ import annotations

import io
import time
from typing import Callable

import numpy as np

__all__ = ["Explorer", "explorer", "roofline_explorer", "decode_explorer", "expert_parallel_explorer",
           "pipeline_explorer", "adversarial_explorer"]


class Explorer:
    """Controls + a figure image + a text panel. Display ``.widget`` (or the Explorer itself).

    Args:
        setup: ``setup(fig)`` draws the static part (axes with fixed limits, labels, grid).
        draw: ``draw(fig, **values) -> (artists, html)``; the artists are added to the
            axes for this frame only and removed after it is rendered.
        controls: ``{name: ipywidget}``; each value is passed to ``draw`` by name.
    """

    def __init__(self, setup: Callable, draw: Callable, controls: dict, ncols: int = 1,
                 width: float = 5.0, height: float = 3.6):
        import ipywidgets as W
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        self._draw = draw
        self.controls = controls
        self.fig = Figure(figsize=(width * ncols, height), dpi=80, layout="constrained")
        self.fig.subplots(1, ncols)
        FigureCanvasAgg(self.fig)
        setup(self.fig)
        for ax in self.fig.axes:
            ax.set_autoscale_on(False)
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")  # freeze the layout: the background must not move
        self._background = self.fig.canvas.copy_from_bbox(self.fig.bbox)
        self.image = W.Image(format="png")
        self.text = W.HTML()
        self.last_update_s = float("nan")
        for c in controls.values():
            c.observe(lambda _change: self.update(), names="value")
        self.widget = W.VBox([W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap")),
                              self.image, self.text])
        self.update()

    def values(self) -> dict:
        return {k: c.value for k, c in self.controls.items()}

    def update(self) -> float:
        """Recompute and redraw; returns the seconds it took (also kept in ``last_update_s``)."""
        from PIL import Image

        t0 = time.perf_counter()
        canvas = self.fig.canvas
        canvas.restore_region(self._background)
        artists = []
        try:
            artists, msg = self._draw(self.fig, **self.values())
            for a in artists:
                a.axes.draw_artist(a)
        except (ValueError, KeyError) as e:  # an impossible combination: say so, no traceback
            msg = f"<b style='color:#b00'>{type(e).__name__}:</b> {e}"
        finally:
            for a in artists:
                a.remove()
        w, h = canvas.get_width_height()
        buf = io.BytesIO()
        Image.frombuffer("RGBA", (w, h), canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
            buf, format="png", compress_level=1)
        self.image.value = buf.getvalue()
        self.text.value = msg or ""
        self.last_update_s = time.perf_counter() - t0
        return self.last_update_s

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)


def explorer(setup: Callable, draw: Callable, controls: dict, ncols: int = 1, **kw) -> Explorer:
    """Build an :class:`Explorer` (see its docstring for ``setup`` and ``draw``)."""
    return Explorer(setup, draw, controls, ncols=ncols, **kw)


# ---------------------------------------------------------------------------
# The course's standard explorers (chapters 0 and 1 use them; the benchmarks
# time their slider answers).
# ---------------------------------------------------------------------------

_INTENSITY = np.logspace(-1, 4, 200)


def _setup_roofline(fig):
    ax = fig.axes[0]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(_INTENSITY[0], _INTENSITY[-1])
    ax.set_ylim(1e10, 3e16)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable FLOP/s")
    ax.grid(True, alpha=0.3)


def _draw_roofline(fig, chip, dtype, log10_intensity):
    from . import hardware, roofline
    from .units import fmt_flops_per_s

    ax = fig.axes[0]
    c = hardware.get(chip)
    if dtype not in c.peak_flops_per_s:
        return [], f"{chip} has no native {dtype}; it has {', '.join(c.peak_flops_per_s)}"
    F, Wbw = c.flops_per_s(dtype), c.hbm_bytes_per_s
    I = 10 ** log10_intensity
    got = roofline.attainable_flops_per_s(I, F, Wbw)
    artists = [*ax.plot(_INTENSITY, roofline.attainable_flops_per_s(_INTENSITY, F, Wbw), "C0-", lw=2),
               *ax.plot([F / Wbw], [F], "C0o"), ax.axvline(I, color="gray", ls=":"), *ax.plot([I], [got], "ko")]
    bound = "compute" if I >= F / Wbw else "memory"
    return artists, (f"{chip} at {dtype}: ridge F/W = {F / Wbw:.0f} FLOP/byte; a kernel of intensity {I:.3g} is "
                     f"<b>{bound}-bound</b> and can reach {fmt_flops_per_s(got)} = {got / F:.1%} of peak")


def roofline_explorer(chip: str = "h100-sxm", dtype: str = "bf16", log10_intensity: float = 1.0) -> Explorer:
    """Chip and precision dropdowns and an intensity slider over :func:`llmmath.roofline.attainable_flops_per_s`."""
    import ipywidgets as W

    from . import hardware

    return explorer(_setup_roofline, _draw_roofline, {
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "dtype": W.Dropdown(options=["bf16", "fp8", "int8", "fp4", "fp32"], value=dtype, description="dtype"),
        "log10_intensity": W.FloatSlider(value=log10_intensity, min=-1, max=4, step=0.1, description="log10 I"),
    }, width=6.0)


_BATCH = np.unique(np.round(np.logspace(0, 4.5, 100)))


def _setup_decode(fig):
    axc, axt = fig.axes
    for ax, ylabel, ylim in ((axc, "cost per token (chip-seconds)", (1e-7, 1.0)),
                             (axt, "decode step time (s)", (1e-5, 100.0))):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(_BATCH[0], _BATCH[-1])
        ax.set_ylim(*ylim)
        ax.set_xlabel("batch B (sequences per step)")
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
    axc.set_title("cost per token; dotted: balance batch", fontsize=10)
    axt.set_title("step time; dashed: does not fit in HBM", fontsize=10)


def _draw_decode(fig, model, chip, log2_batch, context, n_chips, weight_dtype, kv_dtype):
    from . import serving
    from .units import fmt_seconds

    axc, axt = fig.axes
    B = 2.0 ** log2_batch
    curve = serving.decode_step(model, chip, _BATCH, context, n_chips, weight_dtype, kv_dtype, check_capacity=False)
    ok = np.asarray(serving.fits_in_hbm(model, chip, _BATCH, context, n_chips, weight_dtype, kv_dtype))
    s = serving.decode_step(model, chip, B, context, n_chips, weight_dtype, kv_dtype, check_capacity=False)
    bstar = serving.balance_batch(model, chip, context, weight_dtype, kv_dtype)
    most = serving.max_batch(model, chip, context, n_chips, weight_dtype, kv_dtype)
    artists = []
    for ax, y, here in ((axc, curve.cost_chip_s_per_token, s.cost_chip_s_per_token), (axt, curve.time_s, s.time_s)):
        artists += ax.plot(_BATCH[ok], y[ok], "C0-", lw=2)
        artists += ax.plot(_BATCH[~ok], y[~ok], "C0--", alpha=0.5)
        artists += ax.plot([B], [here], "ko")
        if np.isfinite(bstar):
            artists.append(ax.axvline(bstar, color="C0", ls=":"))
    fits = serving.fits_in_hbm(model, chip, B, context, n_chips, weight_dtype, kv_dtype)
    return artists, (
        f"<b>{model}</b>, {weight_dtype} weights, {kv_dtype} KV, on {n_chips} x {chip}, context {context}:<br>"
        f"B = {B:.0f}: step {fmt_seconds(s.time_s)} ({'compute' if s.compute_bound else 'memory'}-bound; "
        f"compute {fmt_seconds(s.compute_s)}, weights {fmt_seconds(s.weight_s)}, KV {fmt_seconds(s.kv_s)}), "
        f"{s.cost_chip_s_per_token:.3g} chip-s/token, MFU {s.mfu:.0%}.<br>Balance batch B* = "
        f"{'none: KV-bound at this context' if not np.isfinite(bstar) else f'{bstar:.0f}'}; "
        f"{'fits' if fits else '<b>does not fit</b>'} in HBM (largest batch that fits: {most:.0f}).")


def decode_explorer(model: str = "llama-3.1-70b", chip: str = "h100-sxm", log2_batch: int = 6,
                    context: int = 0, n_chips: int = 8) -> Explorer:
    """Cost per token and step time against batch (from :func:`llmmath.serving.decode_step`), with
    sliders for batch, context and chip count and dropdowns for model, chip and precisions."""
    import ipywidgets as W

    from . import hardware, models

    return explorer(_setup_decode, _draw_decode, {
        "model": W.Dropdown(options=models.names(), value=model, description="model"),
        "chip": W.Dropdown(options=hardware.names(), value=chip, description="chip"),
        "log2_batch": W.IntSlider(value=log2_batch, min=0, max=14, description="log2 B"),
        "context": W.IntSlider(value=context, min=0, max=131072, step=1024, description="context L"),
        "n_chips": W.IntSlider(value=n_chips, min=1, max=72, description="chips"),
        "weight_dtype": W.Dropdown(options=["bf16", "fp8", "fp4"], value="bf16", description="weights"),
        "kv_dtype": W.Dropdown(options=["bf16", "fp8"], value="bf16", description="KV"),
    }, ncols=2)


def _setup_expert_parallel(fig):
    ax = fig.axes[0]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(64, 65536)
    ax.set_ylim(1e-6, 1e-2)
    ax.set_xlabel("decode batch per rack (sequences)")
    ax.set_ylabel("time per MoE layer (s)")
    ax.grid(True, alpha=0.3)
    ax.set_title("expert all-to-all vs the layer's decode floor", fontsize=10)


_RACK_BATCH = np.logspace(np.log10(64), np.log10(65536), 60)


def _layer_floor_s(m, sy, batch, context, ep):
    """One MoE layer's decode floor on ``ep`` GPUs of system ``sy`` (fp8 weights, bf16 KV), and how it was got.

    A system whose GPU is in the chip catalog uses that chip's roofline
    (:func:`llmmath.serving.decode_step`). The others (GB300, Vera Rubin, Rubin Ultra,
    MI355X, Helios ...) use their own per-package HBM bandwidth from ``systems.toml``: the
    memory floor, weights read plus KV over ``ep`` packages' bandwidth, without a compute
    term (their per-GPU fp8 FLOP/s are not all published).
    """
    from . import serving

    if sy.chip:
        t = serving.decode_step(m, sy.chip, batch, context, n_chips=ep, weight_dtype="fp8",
                                check_capacity=False).time_s
        return t / m.n_layers, f"{sy.chip} roofline"
    read = np.asarray(m.expected_params_read(batch)) * 1.0 + np.asarray(batch) * context * m.kv_bytes_per_token("bf16")
    t = read / (ep * sy.hbm_bytes_per_s_per_package)
    return t / m.n_layers, f"memory floor at {sy.hbm_bytes_per_s_per_package / 1e12:.1f} TB/s per GPU"


def _draw_expert_parallel(fig, model, system, ep, racks, context, log2_batch):
    from . import hardware, models, parallelism

    ax = fig.axes[0]
    m, sy = models.get(model), hardware.system(system)
    if not m.is_moe:
        return [], f"{model} is dense: pick a mixture-of-experts model"
    capped = ep > sy.packages
    ep = min(ep, sy.packages)   # one rack = one scale-up domain; beyond it, add racks (scale-out)
    layer, how = _layer_floor_s(m, sy, _RACK_BATCH, context, ep)
    one = parallelism.moe_layer_all_to_all_s(m, sy, ep, _RACK_BATCH, racks=1)
    many = parallelism.moe_layer_all_to_all_s(m, sy, ep, _RACK_BATCH, racks=racks)
    B = 2.0 ** log2_batch
    b_one = parallelism.moe_layer_all_to_all_s(m, sy, ep, B, racks=racks)
    b_layer = float(_layer_floor_s(m, sy, B, context, ep)[0])
    artists = [*ax.plot(_RACK_BATCH, layer, "k-", lw=2), *ax.plot(_RACK_BATCH, one, "C0-"),
               *ax.plot(_RACK_BATCH, many, "C3--"), *ax.plot([B], [b_one], "C3o"), *ax.plot([B], [b_layer], "ko")]
    note = (f" <b>GPUs per rack capped at {sy.name}'s scale-up domain of {sy.packages}</b>: more GPUs than that "
            f"leave the domain, so add racks instead." if capped else "")
    return artists, (f"black: one layer's decode floor on {ep} GPUs of {sy.name} ({how}, fp8 weights); blue: "
                     f"all-to-all inside one rack; red: the layer spread over {racks} rack(s).<br>At B = {B:.0f} per "
                     f"rack: layer {b_layer * 1e6:.0f} us, all-to-all {b_one * 1e6:.0f} us ({b_one / b_layer:.0%} of "
                     f"the layer); scale-up/scale-out = {sy.scale_up_over_scale_out:.0f}x.{note}")


def expert_parallel_explorer(model: str = "deepseek-v3", system: str = "gb200-nvl72") -> Explorer:
    """All-to-all time of one MoE layer against the layer's decode floor, for 1 or more racks."""
    import ipywidgets as W

    from . import hardware, models

    moe = [k for k, m in models.catalog().items() if m.is_moe]
    gpu_systems = [k for k, s in hardware.systems().items()
                   if np.isfinite(s.scale_up_over_scale_out) and s.vendor in ("NVIDIA", "AMD")]
    domain = hardware.system(system).packages
    ep = W.IntSlider(value=min(64, domain), min=min(8, domain), max=domain, step=8 if domain % 8 == 0 else 1,
                     description="GPUs/rack")
    sys_dd = W.Dropdown(options=gpu_systems, value=system, description="system")

    def cap(change):  # the GPUs of one rack cannot exceed the system's scale-up domain
        n = hardware.system(change["new"]).packages
        ep.max = max(n, ep.min)
        ep.value = min(ep.value, n)

    sys_dd.observe(cap, names="value")
    return explorer(_setup_expert_parallel, _draw_expert_parallel, {
        "model": W.Dropdown(options=moe, value=model, description="model"),
        "system": sys_dd,
        "ep": ep,
        "racks": W.IntSlider(value=2, min=1, max=8, description="racks"),
        "context": W.IntSlider(value=4096, min=0, max=131072, step=4096, description="context"),
        "log2_batch": W.IntSlider(value=12, min=6, max=16, description="log2 B/rack"),
    }, width=7.0)


def _setup_pipeline(fig):
    ax = fig.axes[0]
    ax.set_xlim(0, 1)
    ax.set_ylim(8.5, -0.5)
    ax.set_xlabel("time (fraction of the whole schedule)")
    ax.set_ylabel("pipeline stage")
    ax.set_yticks(range(8))
    ax.grid(True, axis="x", alpha=0.3)


def _draw_pipeline(fig, kind, stages, microbatches, backward_over_forward):
    from . import parallelism

    ax = fig.axes[0]
    fwd_only = kind == "inference (forward only)"
    ev = parallelism.pipeline_schedule(stages, microbatches, "gpipe" if kind == "GPipe" else "1f1b",
                                       forward_s=1.0, backward_s=backward_over_forward, forward_only=fwd_only)
    span = max(e[4] for e in ev)
    artists = []
    for phase, color in (("F", "C0"), ("B", "C1")):
        for s in range(stages):
            bars = [(e[3] / span, (e[4] - e[3]) / span) for e in ev if e[0] == s and e[2] == phase]
            if bars:
                artists.append(ax.broken_barh(bars, (s - 0.4, 0.8), facecolors=color, edgecolors="white", linewidth=0.5))
    busy = sum(e[4] - e[3] for e in ev) / (stages * span)
    formula = parallelism.bubble_fraction(stages, microbatches)
    note = ("<br>This is one pass. In decode each micro-batch returns to stage 0 for its next token, so with "
            "m >= p the fill and drain of consecutive passes interlock and the steady state has no bubble."
            if fwd_only else "")
    return artists, (f"{kind}: {stages} stages x {microbatches} micro-batches; blue = forward, orange = backward. "
                     f"Idle (bubble) fraction simulated {1 - busy:.1%}; formula (p-1)/(m+p-1) = {formula:.1%}" + note)


def pipeline_explorer() -> Explorer:
    """A pipeline timeline (GPipe, 1F1B, or forward-only inference) from :func:`llmmath.parallelism.pipeline_schedule`."""
    import ipywidgets as W

    return explorer(_setup_pipeline, _draw_pipeline, {
        "kind": W.Dropdown(options=["1F1B", "GPipe", "inference (forward only)"], value="1F1B", description="schedule"),
        "stages": W.IntSlider(value=4, min=1, max=8, description="stages p"),
        "microbatches": W.IntSlider(value=8, min=1, max=16, description="micro-batches m"),
        "backward_over_forward": W.FloatSlider(value=2.0, min=1.0, max=3.0, step=0.5, description="t_B / t_F"),
    }, width=7.0)


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
    from . import adversarial

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

    from . import adversarial

    n = len(adversarial.digits_split()[3])
    return explorer(_setup_adversarial, _draw_adversarial, {
        "index": W.IntSlider(value=index, min=0, max=n - 1, description="test image"),
        "eps": W.FloatSlider(value=eps, min=0.0, max=0.3, step=0.005, readout_format=".3f", description="eps"),
        "direction": W.Dropdown(options=["gradient sign (FGSM)", "random sign"], value="gradient sign (FGSM)",
                                description="direction"),
    }, ncols=3, width=3.2, height=3.2)


_TRAIN_N = np.logspace(9, 13, 400)


def _setup_train_serve(fig):
    ax = fig.axes[0]
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(_TRAIN_N[0], _TRAIN_N[-1])
    ax.set_ylim(1e20, 1e28)
    ax.set_xlabel("model size N (parameters)")
    ax.set_ylabel("compute (FLOPs)")
    ax.grid(True, alpha=0.3)
    ax.set_title("train to a target loss, then serve: black = total", fontsize=10)


def _draw_train_serve(fig, target_loss, log10_served_tokens, fit):
    from . import training

    ax = fig.axes[0]
    d_inf = 10.0 ** log10_served_tokens
    tr, inf = training.train_and_serve_flops(_TRAIN_N, target_loss, d_inf, fit)
    tot = tr + inf
    ok = np.isfinite(tot)
    if not ok.any():
        return [], f"no model in this range reaches loss {target_loss} under the {fit} fit"
    i = int(np.argmin(np.where(ok, tot, np.inf)))
    sign = np.sign(np.where(ok, tr - inf, np.nan))
    cross = np.where(ok[:-1] & ok[1:] & (sign[:-1] != sign[1:]))[0]
    arts = [*ax.plot(_TRAIN_N[ok], tr[ok], "C0-", label="training"), *ax.plot(_TRAIN_N, inf, "C1-"),
            *ax.plot(_TRAIN_N[ok], tot[ok], "k-", lw=2), *ax.plot([_TRAIN_N[i]], [tot[i]], "ko")]
    msg = ""
    if cross.size:
        j = int(cross[np.argmin(np.abs(cross - i))])
        arts += ax.plot([_TRAIN_N[j]], [tot[j]], "rs")
        msg = (f"; where training = serving (red square) N = {_TRAIN_N[j]:.3g}, total {tot[j] / tot[i]:.2f}x the minimum")
    d_opt = float(training.tokens_for_loss(_TRAIN_N[i], target_loss, fit))
    return arts, (f"blue: training 6 N D(N); orange: serving 2 N x {d_inf:.1e} tokens. Minimum (dot) at N = "
                  f"{_TRAIN_N[i]:.3g} trained on {d_opt:.3g} tokens ({d_opt / _TRAIN_N[i]:.0f} per parameter)" + msg)


def train_serve_explorer() -> "Explorer":
    """Total compute of training to a loss and then serving, against model size (chapter 7)."""
    import ipywidgets as W

    return explorer(_setup_train_serve, _draw_train_serve, {
        "target_loss": W.FloatSlider(value=2.0, min=1.9, max=2.6, step=0.02, description="target loss"),
        "log10_served_tokens": W.FloatSlider(value=13.0, min=10.0, max=16.0, step=0.25, description="log10 served"),
        "fit": W.Dropdown(options=["epoch", "hoffmann"], value="epoch", description="fit"),
    }, width=7.0)
