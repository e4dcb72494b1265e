"""Chapter 2: the KV cache -- decode attention's intensity, context against the step, sparse attention
(see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer, kept, kept_line, log_axes, relabelled
from . import register

__all__ = ['kv_intensity_explorer', 'context_explorer', 'sparse_attention_explorer']

CHIPS = ("a100-80gb", "h100-sxm", "h200", "b200", "mi300x", "tpu-v5e", "tpu-v6e")
_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-235b-a22b", "deepseek-v3", "kimi-k2")
_I = np.logspace(-0.5, 5, 200)
_LC = np.geomspace(64, 1e6, 200)
_LP = np.geomspace(4096, 2**24, 200)


def _setup_intensity(fig):
    log_axes(fig.axes[0], (0.3, 1e5), (1e11, 1e16), "arithmetic intensity (FLOP/byte)", "attainable FLOP/s")


def _draw_intensity(fig, model, variant, kv_dtype, heads_split, chip):
    from ... import attention, hardware, roofline

    ax = fig.axes[0]
    if variant not in attention.variants(model):
        variant = attention.default_variant(model)
    c = hardware.get(chip)
    x = attention.arithmetic_intensity(model, kv_dtype, variant, heads_split)
    F, Wb = c.flops_per_s("bf16"), c.hbm_bytes_per_s
    arts = [*ax.plot(_I, roofline.attainable_flops_per_s(_I, F, Wb), "C0-", lw=2), ax.axvline(x, color="C3", ls="--"),
            *ax.plot([x], [roofline.attainable_flops_per_s(x, F, Wb)], "C3o")]
    margin = attention.memory_bound_margin(model, chip, kv_dtype, variant, heads_split=heads_split)
    word = ("<b>memory-bound</b>" if margin > 1 else "<b>compute-bound</b>")
    return arts, (f"{model}, {variant}, {kv_dtype} cache, heads over {heads_split} chip(s): I = {x:,.1f} FLOP/byte; "
                  f"{chip} ridge {c.balance_flops_per_byte():.0f}: attention is {word} (KV-read time / arithmetic "
                  f"time = {margin:.2f})")


def kv_intensity_explorer(model: str = "deepseek-v3", chip: str = "h200") -> Explorer:
    """Claim 3: decode attention's arithmetic intensity (:func:`llmmath.attention.arithmetic_intensity`)
    against a chip's roofline, for a model, an attention variant, the cache precision and a heads split."""
    import ipywidgets as W

    from ... import attention

    return explorer(_setup_intensity, _draw_intensity, {
        "model": W.Dropdown(options=list(_MODELS), value=model, description="model"),
        "variant": W.Dropdown(options=attention.VARIANTS, value=attention.default_variant(model), description="variant"),
        "kv_dtype": W.Dropdown(options=["bf16", "fp8"], value="bf16", description="KV dtype"),
        "heads_split": W.Dropdown(options=[1, 2, 4, 8], value=1, description="heads split"),
        "chip": W.Dropdown(options=list(CHIPS), value=chip, description="chip"),
    }, width=6.5)


def _setup_context(fig):
    ax, ax2 = fig.axes
    for a in (ax, ax2):
        log_axes(a, (_LC[0], _LC[-1]), (1e-4, 10) if a is ax else (0, 1.05), "context L (tokens)",
                 "step time floor (s)" if a is ax else "MFU", logy=a is ax)
    ax.set_title("solid: step; dotted: compute alone\ndashed: does not fit")
    ax2.set_title("grey: L* (slopes equal)\ndotted: this batch turns memory-bound")


def _draw_context(fig, model, chip, n_chips, log2_batch, log2_context):
    from ... import attention, serving
    from ...units import fmt_seconds

    ax, ax2 = fig.axes
    B, L = 2.0**log2_batch, 2.0**log2_context
    s = serving.decode_step(model, chip, B, _LC, n_chips=n_chips, check_capacity=False)
    ok = np.asarray(serving.fits_in_hbm(model, chip, B, _LC, n_chips))
    p = serving.decode_step(model, chip, B, L, n_chips=n_chips, check_capacity=False)
    lb = attention.crossover_context_at_batch(model, chip, B)
    lstar = attention.kv_crossover_context(model, chip)
    arts = [*ax.plot(_LC, s.compute_s, "C0:")]
    for a, y in ((ax, s.time_s), (ax2, s.mfu)):
        arts += [*a.plot(_LC[ok], y[ok], "C0-", lw=2), *a.plot(_LC[~ok], y[~ok], "C0--", alpha=0.4)]
    arts += [*ax.plot([L], [p.time_s], "ko"), *ax2.plot([L], [p.mfu], "ko")]
    if np.isfinite(lstar):
        arts.append(ax2.axvline(lstar, color="0.5", lw=2))
    if np.isfinite(lb) and lb > 0:
        arts.append(ax2.axvline(lb, color="C3", ls=":"))
    where = "never" if np.isinf(lb) else ("already at L = 0" if lb == 0 else f"at L = {lb:,.0f}")
    fits = serving.fits_in_hbm(model, chip, B, L, n_chips)
    star = "never (attention is compute-bound)" if np.isinf(lstar) else f"{lstar:,.0f} tokens"
    return arts, (f"{model} on {n_chips} x {chip}, B = {B:,.0f}, L = {L:,.0f}: step {fmt_seconds(p.time_s)}, "
                  f"{'compute' if p.compute_bound else 'memory'}-bound, <b>MFU {p.mfu:.2f}</b>; this batch turns "
                  f"memory-bound {where}; balanced context L* = {star}"
                  + ("" if fits else " — <b>does not fit in HBM</b> (weights + KV exceed the chips; shown dashed)"))


def context_explorer(model: str = "llama-3.1-70b", chip: str = "h100-sxm", n_chips: int = 8) -> Explorer:
    """Claims 5 and 6: step time and MFU against context at a fixed batch
    (:func:`llmmath.serving.decode_step`), with the balanced context L*
    (:func:`llmmath.attention.kv_crossover_context`); what does not fit in HBM is dashed."""
    import ipywidgets as W

    return explorer(_setup_context, _draw_context, {
        "model": W.Dropdown(options=["llama-3.1-8b", "llama-3.1-70b", "qwen3-235b-a22b", "deepseek-v3", "kimi-k2"],
                            value=model, description="model"),
        "chip": W.Dropdown(options=list(CHIPS), value=chip, description="chip"),
        "n_chips": W.IntSlider(value=n_chips, min=1, max=72, description="chips"),
        "log2_batch": W.IntSlider(value=10, min=0, max=16, description="log2 B"),
        "log2_context": W.IntSlider(value=12, min=6, max=20, description="log2 L"),
    }, ncols=2, width=4.5)


def _setup_sparse(fig):
    log_axes(fig.axes[0], (_LP[0], _LP[-1]), (1e4, 3e10), "context L (tokens)", "bytes per layer per step")
    fig.axes[0].set_title("bytes read per layer: dense vs sparse attention")


_MECHANISMS = ("block top-k", "DSA (top-2048, fp8 indexer)", "NSA (published settings)")


def _sparse_bytes(mechanism, L, s, top_k, beta, sigma):
    """Bytes per layer per step at context ``L`` for one mechanism (:mod:`llmmath.attention`)."""
    from ... import attention

    if mechanism == _MECHANISMS[1]:
        dsa = attention.PUBLISHED["DSA"]
        return attention.indexer_topk_kv_bytes(L, dsa["index_topk"], beta, dsa["index_key_bytes"], clip=True)
    if mechanism == _MECHANISMS[2]:
        nsa = attention.PUBLISHED["NSA"]
        return attention.nsa_kv_bytes(L, beta, nsa["compress_stride"], nsa["select_block"], nsa["select_blocks"],
                                      nsa["window"])
    return attention.block_topk_kv_bytes(L, s, top_k, beta, sigma, clip=True)


def _draw_sparse(fig, model, mechanism, log2_block, top_k, log2_context, chip):
    from ... import attention
    from ...units import fmt_bytes, fmt_seconds

    ax = fig.axes[0]
    s, L = 2.0**log2_block, 2.0**log2_context
    beta, sigma = attention.bytes_per_cached_token(model), attention.mean_key_bytes(model)
    y = _sparse_bytes(mechanism, _LP, s, top_k, beta, sigma)
    dense = attention.dense_kv_bytes(_LP, beta)
    opt = attention.block_topk_optimal(_LP, top_k, beta, sigma)[1]
    here = float(_sparse_bytes(mechanism, L, s, top_k, beta, sigma))
    dense_here = attention.dense_kv_bytes(L, beta)
    t_sparse, t_dense = attention.kv_read_time_s(model, chip, [here, dense_here])
    others = [m for m in _MECHANISMS if m != mechanism]
    # the lines and the legend are made once and moved, the legend relabelled (making them costs more than drawing)
    arts = [kept_line(ax, "dense", _LP, dense, "k-", lw=1),
            kept_line(ax, "sparse", _LP, y, "C0-", lw=2),
            kept_line(ax, "other 1", _LP, _sparse_bytes(others[0], _LP, s, top_k, beta, sigma), "C1:", lw=1),
            kept_line(ax, "other 2", _LP, _sparse_bytes(others[1], _LP, s, top_k, beta, sigma), "C4:", lw=1),
            kept_line(ax, "best", _LP, opt, "C2--"),
            kept_line(ax, "here", [L], [here], "ko")]
    short = {_MECHANISMS[0]: f"block {s:,.0f} x top-{top_k}", _MECHANISMS[1]: "DSA", _MECHANISMS[2]: "NSA"}
    label = short[mechanism] if mechanism == _MECHANISMS[0] else mechanism
    arts.append(relabelled(kept(fig, "legend", lambda: ax.legend(handles=arts, fontsize=8, loc="upper left")), [
        "dense", short[mechanism], *[short[o] for o in others], f"best block (~sqrt L), top-{top_k}",
        f"L = {L:,.0f}"]))
    slope = float(attention.loglog_slope(np.array([L, 2 * L]), _sparse_bytes(mechanism, np.array([L, 2 * L]), s,
                                                                                     top_k, beta, sigma))[-1])
    knobs = "" if mechanism == _MECHANISMS[0] else " (the block and top-k sliders apply to block top-k only)"
    return arts, (f"{model} ({fmt_bytes(beta)} per token per layer), <b>{label}</b>{knobs}: "
                  f"<b>{fmt_bytes(here)}</b> per layer at L = {L:,.0f} against {fmt_bytes(dense_here)} dense "
                  f"({dense_here / here:,.1f}x less); doubling L there multiplies it by {2 ** slope:.2f} "
                  f"(dense: 2).<br>On one {chip}, all layers, one sequence: sparse {fmt_seconds(t_sparse)}, dense "
                  f"{fmt_seconds(t_dense)} of KV reads per step.")


def sparse_attention_explorer(model: str = "deepseek-v3", chip: str = "h100-sxm",
                              mechanism: str = "DSA (top-2048, fp8 indexer)") -> Explorer:
    """Claim 7: bytes a sparse attention reads per layer per step against context -- block top-k
    (:func:`llmmath.attention.block_topk_kv_bytes`), DeepSeek's DSA (:func:`~llmmath.attention.indexer_topk_kv_bytes`)
    or NSA (:func:`~llmmath.attention.nsa_kv_bytes`) at their published settings -- beside dense and the
    sqrt(L) envelope, and the read time on a chip (:func:`llmmath.attention.kv_read_time_s`)."""
    import ipywidgets as W

    return explorer(_setup_sparse, _draw_sparse, {
        "model": W.Dropdown(options=["deepseek-v3", "llama-3.1-70b", "llama-3.1-8b", "qwen3-235b-a22b", "kimi-k2"],
                            value=model, description="model"),
        "mechanism": W.Dropdown(options=list(_MECHANISMS), value=mechanism, description="sparse"),
        "log2_block": W.IntSlider(value=6, min=0, max=14, description="log2 block"),
        "top_k": W.IntSlider(value=16, min=1, max=64, description="top-k blocks"),
        "log2_context": W.IntSlider(value=17, min=12, max=24, description="log2 L"),
        "chip": W.Dropdown(options=list(CHIPS), value=chip, description="chip"),
    }, width=6.5)


register('kv_intensity_explorer', kv_intensity_explorer)
register('context_explorer', context_explorer)
register('sparse_attention_explorer', sparse_attention_explorer)
