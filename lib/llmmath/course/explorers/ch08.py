"""Chapter 8: long context -- prefill vs decode, attention's crossover, 1M-token contexts, HBM trends,
top-k sparsity (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .. import plots
from ..widgets import Explorer, explorer, kept, kept_line, log_axes, relabelled
from . import register

__all__ = ['prefill_decode_explorer', 'attention_crossover_explorer', 'long_context_explorer',
           'hbm_trend_explorer', 'sparse_topk_explorer', 'wall_explorer']

#: (model, chip, chips): two models on three chips, each on the chips its bf16 weights need.
_CONFIGS = {
    "llama-3.1-8b on 1 x H100": ("llama-3.1-8b", "h100-sxm", 1),
    "llama-3.1-70b on 8 x H100": ("llama-3.1-70b", "h100-sxm", 8),
    "llama-3.1-70b on 2 x H100 (does not fit)": ("llama-3.1-70b", "h100-sxm", 2),
    "llama-3.1-70b on 8 x B200": ("llama-3.1-70b", "b200", 8),
    "llama-3.1-70b on 8 x MI300X": ("llama-3.1-70b", "mi300x", 8),
}
_T = np.unique(np.round(np.logspace(0, np.log10(131072), 80)))


# --- claim 32: prefill vs decode per token against prompt length --------------------------------------------------

def _setup_prefill_decode(fig):
    ax = fig.axes[0]
    log_axes(ax, (1, 131072), (1e-6, 3.0), "tokens T (prompt length, or decode context)", "chip-seconds per token")
    ax.set_title("per token: prefill of T tokens vs decode at context T", fontsize=9)


def _draw_prefill_decode(fig, prompt_tokens, config, batch):
    from ... import serving

    ax = fig.axes[0]
    model, chip, n = _CONFIGS[config]
    pre = serving.prefill_step(model, chip, _T, n_chips=n)
    dec = serving.decode_step(model, chip, batch, _T, n_chips=n, check_capacity=False)
    fits = np.asarray(serving.fits_in_hbm(model, chip, batch, _T, n_chips=n))
    p_here = serving.prefill_step(model, chip, prompt_tokens, n_chips=n)
    d_here = serving.decode_step(model, chip, batch, prompt_tokens, n_chips=n, check_capacity=False)
    fit_here = bool(serving.fits_in_hbm(model, chip, batch, prompt_tokens, n_chips=n))
    dc = np.asarray(dec.cost_chip_s_per_token)
    # lines and legend made once and moved (kept), the legend relabelled: making them costs more than drawing them
    arts = [kept_line(ax, "prefill", _T, pre.cost_chip_s_per_token, "C0-"),
            kept_line(ax, "decode", _T[fits], dc[fits], "C1-"),
            kept_line(ax, "no fit", _T[~fits], dc[~fits], "--", color="0.6"),
            kept_line(ax, "prefill here", [prompt_tokens], [float(p_here.cost_chip_s_per_token)], "o", color="C0",
                      ms=8),
            kept_line(ax, ("decode here", fit_here), [prompt_tokens], [float(d_here.cost_chip_s_per_token)], "s",
                      ms=8, color="C1" if fit_here else "0.6")]
    arts.append(relabelled(kept(fig, "legend", lambda: ax.legend(handles=arts[:3], fontsize=8, loc="upper right")),
                           ["prefill", f"decode, B = {batch}", "decode: weights + KV exceed HBM"]))
    bound = lambda s: "compute-bound" if bool(s.compute_bound) else "memory-bound"  # noqa: E731
    cap = "" if fit_here else (" <b style='color:#b00'>-- does not fit: weights + KV exceed the HBM of "
                               f"{n} x {chip}; drawn grey, a roofline only</b>")
    return arts, (f"{config}, T = {prompt_tokens:,}: prefill {float(p_here.cost_chip_s_per_token):.3g} chip-s per "
                  f"token ({bound(p_here)}, MFU {float(p_here.mfu):.0%}); decode at B = {batch} "
                  f"{float(d_here.cost_chip_s_per_token):.3g} chip-s per token ({bound(d_here)}, MFU "
                  f"{float(d_here.mfu):.1%}): decode costs {float(d_here.cost_chip_s_per_token) / float(p_here.cost_chip_s_per_token):.0f}x "
                  f"prefill per token" + cap)


def prefill_decode_explorer() -> "Explorer":
    """Claim 32: prefill's and decode's cost per token against prompt length / context, from the rooflines."""
    import ipywidgets as W

    return explorer(_setup_prefill_decode, _draw_prefill_decode, {
        "prompt_tokens": W.SelectionSlider(options=[2**k for k in range(18)], value=1024, description="T tokens"),
        "config": W.Dropdown(options=list(_CONFIGS), value="llama-3.1-70b on 8 x H100", description="model, chips",
                             layout=W.Layout(width="340px")),
        "batch": W.SelectionSlider(options=[1, 8, 64, 256, 1024], value=64, description="decode B"),
    }, width=6.5)


register('prefill_decode_explorer', prefill_decode_explorer)


# --- claim 33: attention design -> the context where attention FLOPs match weight FLOPs ----------------------------

_L = np.logspace(2, 7.5, 200)
#: DeepSeek-V3.2's lightning indexer, per position per layer: 64 heads x 128 dims x 2 FLOPs (fp8 in the paper).
_INDEXER_FLOPS = 2 * 64 * 128
_DESIGNS = ["full attention", "5 local : 1 global layers", "top-k + indexer (DSA-style)"]


def _design_kw(design, window_or_k):
    if design == _DESIGNS[0]:
        return {}
    if design == _DESIGNS[1]:
        return dict(window=window_or_k, global_every=6)
    return dict(topk=window_or_k, indexer_flops_per_position=_INDEXER_FLOPS)


def _setup_crossover(fig):
    ax = fig.axes[0]
    log_axes(ax, (_L[0], _L[-1]), (1e-4, 1e3), "context L (tokens)", "attention FLOPs / weight FLOPs, per token")
    ax.axhline(1, color="k", ls="--", lw=1)
    ax.axvline(1e6, color="gray", ls=":", lw=1)
    ax.text(1.1e6, 2e-4, "'millions'", color="gray", fontsize=8)
    ax.set_title("where attention's FLOPs catch up with the weights'", fontsize=9)


def _draw_crossover(fig, design, model, window_or_k):
    from ... import long_context, serving

    ax = fig.axes[0]
    kw = _design_kw(design, window_or_k)
    ratio = long_context.attention_to_weight_flops(model, _L, **kw)
    full = long_context.attention_to_weight_flops(model, _L)
    L_star = serving.attention_crossover_context(model, **kw)
    arts = [*ax.plot(_L, full, "-", color="0.7", lw=1), *ax.plot(_L, ratio, "C0-", lw=2)]
    where = "never (below 10^12 tokens)" if not np.isfinite(L_star) else f"{L_star:,.0f} tokens"
    if np.isfinite(L_star) and L_star <= _L[-1]:
        arts += ax.plot([L_star], [1.0], "o", color="C3", ms=8)
    knob = "" if design == _DESIGNS[0] else (f", window {window_or_k:,}" if "local" in design else f", k = {window_or_k:,}")
    return arts, (f"{model}, {design}{knob}: attention's FLOPs equal the weights' at L* = <b>{where}</b> "
                  f"(grey: full attention, L* = {serving.attention_crossover_context(model):,.0f}); the claim said "
                  f"'millions'")


def attention_crossover_explorer() -> "Explorer":
    """Claim 33: attention design -> the context where attention FLOPs match the weights' FLOPs."""
    import ipywidgets as W

    return explorer(_setup_crossover, _draw_crossover, {
        "design": W.Dropdown(options=_DESIGNS, value=_DESIGNS[0], description="design"),
        "model": W.Dropdown(options=["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "qwen3-4b", "deepseek-v3"],
                            value="llama-3.1-70b", description="model"),
        "window_or_k": W.SelectionSlider(options=[256, 512, 1024, 2048, 4096, 8192, 16384], value=2048,
                                         description="window / k"),
    }, width=6.5)


register('attention_crossover_explorer', attention_crossover_explorer)


# --- claims 34, 35: context up to 1M tokens -- capacity, cost at the best batch, price tiers -----------------------

_CTX = np.unique(np.round(np.logspace(np.log10(4096), np.log10(1048576), 60)))
_LONG_CONFIGS = {
    "llama-3.1-70b, 8 x H100": ("llama-3.1-70b", "h100-sxm", 8, "bf16"),
    "llama-3.1-70b, 8 x H200": ("llama-3.1-70b", "h200", 8, "bf16"),
    "llama-3.1-70b, 8 x B200": ("llama-3.1-70b", "b200", 8, "bf16"),
    "llama-3.1-8b, 1 x H100": ("llama-3.1-8b", "h100-sxm", 1, "bf16"),
    "deepseek-v3 (fp8), 8 x H200": ("deepseek-v3", "h200", 8, "fp8"),
    "deepseek-v3 (fp8), 8 x H100 (does not fit)": ("deepseek-v3", "h100-sxm", 8, "fp8"),
}


def _setup_long(fig):
    from ... import _catalog

    a1, a2 = fig.axes
    log_axes(a1, (_CTX[0], 1.1e6), (1e-5, 10.0), "context L (tokens)", "chip-s per token\nat the largest batch that fits")
    log_axes(a2, (_CTX[0], 1.1e6), (0.5, 30.0), "prompt length (tokens)", "US$ per million input tokens",
             logy=False)
    a2.set_ylim(0, 6)
    for x in (131072, 200000):
        a1.axvline(x, color="gray", ls=":", lw=0.8)
    a1.set_title("decode cost per token (grey: nothing fits)", fontsize=9)
    a2.set_title("API input prices with their long-context tiers", fontsize=9)
    prices = _catalog.load("long_context_pricing.toml")["prices"]
    for i, k in enumerate(prices):
        a2.plot([], [], color=f"C{i}", label=k)
    a2.legend(fontsize=8, loc="upper left")


def _draw_long(fig, context, config, price_sheet):
    from ... import _catalog, long_context, models, serving

    a1, a2 = fig.axes
    model, chip, n, wd = _LONG_CONFIGS[config]
    B, cost = long_context.best_batch_decode_cost(model, chip, _CTX, n, weight_dtype=wd)
    b_here, c_here = long_context.best_batch_decode_cost(model, chip, float(context), n, weight_dtype=wd)
    fits = np.asarray(B) >= 1
    arts = [*a1.plot(_CTX[fits], np.asarray(cost)[fits], "C0-", lw=2)]
    if (~fits).any():
        arts.append(a1.fill_between([_CTX[~fits][0], 1.1e6], 1e-5, 10.0, color="0.85", lw=0))
        arts.append(a1.text(_CTX[~fits][0] * 1.05, 1e-4, "weights + KV\nexceed HBM", fontsize=8, color="0.4"))
    prices = _catalog.load("long_context_pricing.toml")["prices"]
    for i, (k, p) in enumerate(prices.items()):
        T = _CTX[_CTX <= p["context_tokens"]]
        inp, _ = long_context.api_price_usd_per_mtok(k, T)
        arts += a2.plot(T, inp, color=f"C{i}", lw=2.5 if k == price_sheet else 1, alpha=1 if k == price_sheet else 0.4)
    p = prices[price_sheet]
    arts += a1.plot([context], [float(c_here) if np.isfinite(c_here) else 1e-4], "o" if np.isfinite(c_here) else "x",
                    color="C3" if np.isfinite(c_here) else "0.4", ms=9)
    m = models.get(model)
    kv_seq = context * m.kv_bytes_per_token()
    if context <= p["context_tokens"]:
        inp, out = long_context.api_price_usd_per_mtok(price_sheet, context)
        price = f"{price_sheet} charges ${float(inp):g} in / ${float(out):g} out per M tokens at this prompt length"
    else:
        price = f"beyond {price_sheet}'s {p['context_tokens']:,}-token window"
    if b_here >= 1:
        state = (f"largest batch that fits: <b>{int(b_here)}</b> sequences; cost {float(c_here):.3g} chip-s per token "
                 f"({float(c_here) / float(np.asarray(cost)[0]):.1f}x its cost at {int(_CTX[0]):,})")
    else:
        state = ("<b style='color:#b00'>does not fit: not one sequence's KV fits beside the weights "
                 f"in {n} x {chip} HBM</b>")
    return arts, (f"{config}, L = {context:,}: KV cache {kv_seq / 1e9:.1f} GB per sequence (bf16); {state}. "
                  f"{price}. Past about {serving.kv_limit_context(model, chip, weight_dtype=wd):,.0f} tokens no batch "
                  f"makes decode compute-bound: cost grows in proportion to L")


def long_context_explorer() -> "Explorer":
    """Claims 34-35: context up to 1M tokens -- the batch that fits, cost per token, and API price tiers."""
    import ipywidgets as W
    from ... import _catalog

    ctx = [4096, 8192, 16384, 32768, 65536, 131072, 200000, 262144, 524288, 1048576]
    return explorer(_setup_long, _draw_long, {
        "context": W.SelectionSlider(options=ctx, value=131072, description="context L"),
        "config": W.Dropdown(options=list(_LONG_CONFIGS), value="llama-3.1-70b, 8 x H200",
                             description="model, chips", layout=W.Layout(width="360px")),
        "price_sheet": W.Dropdown(options=list(_catalog.load("long_context_pricing.toml")["prices"]),
                                  description="price sheet"),
    }, ncols=2, width=4.6)


register('long_context_explorer', long_context_explorer)


# --- claim 36: HBM growth vs compute by year ----------------------------------------------------------------------

def _setup_hbm(fig):
    a1, a2 = fig.axes
    log_axes(a1, (2019.3, 2025.7), (0.3, 30), "year", "per chip, relative to the vendor's first", logx=False)
    log_axes(a2, (2019.3, 2025.7), (20, 1000), "year", "F / W (bf16 FLOP per HBM byte)", logx=False)
    a1.set_title("dense FLOP/s (o), HBM bandwidth (s), capacity (^)", fontsize=9)
    a2.set_title("balance point F/W by chip", fontsize=9)


def _draw_hbm(fig, vendor):
    from ... import long_context

    a1, a2 = fig.axes
    t = long_context.vendor_trend(vendor)
    arts = [*a1.plot(t["years"], t["flops"], "o-", color="C0"), *a1.plot(t["years"], t["bandwidth"], "s-", color="C1"),
            *a1.plot(t["years"], t["capacity"], "^-", color="C2"), *a2.plot(t["years"], t["balance"], "o", color="C3")]
    arts += plots.label_points(a2, t["years"], t["balance"], t["keys"])     # each label where it covers no other
    g = t["growth"]
    return arts, (f"{vendor}, {t['keys'][0]} ({int(t['years'][0])}) to {t['keys'][-1]} ({int(t['years'][-1])}), "
                  f"per chip, fitted per year: dense bf16 FLOP/s x{g['flops']:.2f}, HBM bandwidth "
                  f"<b>x{g['bandwidth']:.2f}</b>, HBM capacity x{g['capacity']:.2f}. A context twice as long costs "
                  f"twice the KV reads on every one of them")


def hbm_trend_explorer() -> "Explorer":
    """Claim 36: per-chip FLOP/s, HBM bandwidth and capacity by year for one vendor, and F/W."""
    import ipywidgets as W

    return explorer(_setup_hbm, _draw_hbm, {
        "vendor": W.Dropdown(options=["NVIDIA", "AMD", "Google"], value="NVIDIA", description="vendor"),
    }, ncols=2, width=4.4)


register('hbm_trend_explorer', hbm_trend_explorer)


# --- claim 37: top-k budget vs accuracy, the exact prediction beside the measurement ------------------------------

_K_FINE = np.unique(np.round(np.logspace(0, np.log2(2048), 60, base=2)).astype(int))


def _setup_topk(fig):
    from ... import sparse_attention

    ax = fig.axes[0]
    log_axes(ax, (0.8, 2600), (0.35, 1.05), "tokens attended k (of 2,048)", "accuracy", logy=False)
    ax.set_xscale("log", base=2)
    curves = sparse_attention.measured_topk_curves()
    pred = [sparse_attention.majority_subset_accuracy(32, 20, int(k)) for k in _K_FINE]
    ax.plot(_K_FINE, pred, "k-", lw=1, alpha=0.7, label="aggregation: predicted (hypergeometric vote)")
    for task, style in (("aggregation", "o"), ("retrieval", "^")):
        r = curves[task]
        ax.errorbar(r["k"], r["accuracy"], yerr=r["stderr"], fmt=style, ms=5, capsize=2,
                    label=f"{task}, exact top-k: measured")
    ax.axhline(0.5, color="gray", lw=1)
    ax.axvline(32, color="C3", ls=":", lw=1, label="32 needles")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title("aggregation needs all 32 votes; retrieval needs only its one", fontsize=9)


def _draw_topk(fig, k):
    from ... import sparse_attention

    ax = fig.axes[0]
    curves = sparse_attention.measured_topk_curves()
    r = curves["aggregation"]
    i = list(r["k"]).index(k)
    pred = sparse_attention.majority_subset_accuracy(32, 20, k)
    arts = [*ax.plot([k], [pred], "D", color="C3", ms=9), ax.axvline(k, color="C3", lw=1)]
    return arts, (f"k = {k} of 2,048 tokens ({r['fraction'][i]:.2%}): aggregation (majority of 32 needles) predicted "
                  f"<b>{pred:.3f}</b>, measured {r['accuracy'][i]:.3f} +- {r['stderr'][i]:.3f}; retrieval (one "
                  f"needle) measured {curves['retrieval']['accuracy'][i]:.3f}; dense attention "
                  f"{r['dense_accuracy']:.3f}")


def sparse_topk_explorer() -> "Explorer":
    """Claim 37: accuracy against the top-k budget, the exact prediction beside the (cached) measurement."""
    import ipywidgets as W
    from ... import sparse_attention

    return explorer(_setup_topk, _draw_topk, {
        "k": W.SelectionSlider(options=list(sparse_attention.CLAIM37_KS), value=16, description="budget k"),
    }, width=6.5)


register('sparse_topk_explorer', sparse_topk_explorer)


# --- beyond the interview: windowed, chunked, linear and latent attention against the wall --------------------------

#: (model, weight dtype): one model of each layer design chapter 8's last section compares
WALL_MODELS = {"llama-3.1-70b (full GQA)": ("llama-3.1-70b", "bf16"),
               "gpt-oss-120b (half windowed)": ("gpt-oss-120b", "fp4"),
               "llama-4-scout (3/4 chunked)": ("llama-4-scout-17b-16e", "bf16"),
               "qwen3-next-80b (3/4 linear)": ("qwen3-next-80b-a3b", "bf16"),
               "deepseek-v3 (MLA)": ("deepseek-v3", "fp8"),
               "deepseek-v3.2 (MLA + DSA)": ("deepseek-v3.2-exp", "fp8")}
_WALL_CTX = np.array([4096, 16384, 65536, 131072, 262144, 524288, 1048576], dtype=float)


@lru_cache(maxsize=None)
def _wall(name, chip):
    """:func:`llmmath.long_context.architecture_wall` over the explorer's contexts, kept per (model, chip)."""
    from ... import long_context

    model, wd = WALL_MODELS[name]
    return long_context.architecture_wall(model, chip, _WALL_CTX, 8, weight_dtype=wd)


def _setup_wall(fig):
    a1, a2 = fig.axes
    log_axes(a1, (3e3, 1.2e6), (1e-2, 1e3), "context L (tokens)", "GB one sequence holds")
    log_axes(a2, (3e3, 1.2e6), (1e-2, 1e3), "context L (tokens)", "chip-ms per token\nat the largest batch")
    a1.set_title("solid: its cache; dashed: every layer attending", fontsize=9)
    a2.set_title("decode cost on 8 chips (x: nothing fits)", fontsize=9)


def _draw_wall(fig, name, chip, context):
    a1, a2 = fig.axes
    w = _wall(name, chip)
    i = int(np.argmin(np.abs(_WALL_CTX - context)))
    held = (w.kv_bytes + w.state_bytes) / 1e9
    ok = w.batch >= 1
    arts = [*a1.plot(_WALL_CTX, held, "C0-", lw=2), *a1.plot(_WALL_CTX, w.full_attention_bytes / 1e9, "C0--", lw=1),
            *a1.plot([_WALL_CTX[i]], [held[i]], "o", color="C3", ms=8),
            *a2.plot(_WALL_CTX[ok], 1e3 * w.chip_s_per_token[ok], "C1-", lw=2)]
    if ok[i]:
        arts += a2.plot([_WALL_CTX[i]], [1e3 * w.chip_s_per_token[i]], "o", color="C3", ms=8)
        cost = (f"<b>{int(w.batch[i])}</b> sequences fit; <b>{1e3 * w.chip_s_per_token[i]:.3g} chip-ms</b> per token, "
                f"{w.chip_s_per_token[i] / w.chip_s_per_token[0]:.1f}x its cost at {int(_WALL_CTX[0]):,}")
    else:
        arts += a2.plot([_WALL_CTX[i]], [1e-2 * 1.5], "x", color="0.4", ms=9)
        cost = "<b style='color:#b00'>not one sequence fits in a one-stage placement</b>"
    return arts, (f"{name} on 8 x {chip}, L = {int(_WALL_CTX[i]):,}: {held[i]:.3g} GB a sequence "
                  f"({w.kv_bytes[i] / 1e9:.3g} GB of K/V, {w.state_bytes / 1e6:.3g} MB of fixed state), "
                  f"every layer attending would hold {w.cache_reduction[i]:.2f}x as much; {cost}")


def wall_explorer(model: str = "qwen3-next-80b (3/4 linear)", chip: str = "h200") -> "Explorer":
    """Chapter 8, beyond the interview: one sequence's cache and the decode cost per token against context for a
    model of each layer design (:func:`llmmath.long_context.architecture_wall`) on 8 H100s, H200s or B200s."""
    import ipywidgets as W

    return explorer(_setup_wall, _draw_wall, {
        "name": W.Dropdown(options=list(WALL_MODELS), value=model, description="model",
                           layout=W.Layout(width="340px")),
        "chip": W.Dropdown(options=["h100-sxm", "h200", "b200"], value=chip, description="chips"),
        "context": W.SelectionSlider(options=[int(c) for c in _WALL_CTX], value=1048576, description="context L"),
    }, ncols=2, width=4.6)


register('wall_explorer', wall_explorer)
