"""Chapter 12: from the roofline ceiling to the measured number, term by term (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

from ..widgets import Explorer, explorer, kept
from . import register

__all__ = ['waterfall_explorer', 'DEPLOYMENTS']

# Three deployments the chapter follows: (label, model, chip, chips, placement and precisions)
DEPLOYMENTS = {
    "Llama-3.1-70B, 8 x H100, TP8, bf16": dict(model="llama-3.1-70b", chip="h100-sxm", n_chips=8, tp=8),
    "DeepSeek-V3, 144 x H800, EP144, fp8": dict(model="deepseek-v3", chip="h100-sxm", n_chips=144, ep=144, dp=144,
                                                weight_dtype="fp8", overlap="two-batch"),
    "Llama-3.1-8B, 1 x H100, bf16": dict(model="llama-3.1-8b", chip="h100-sxm", n_chips=1),
}
_TERMS = 9   # the most a decode waterfall holds: the ceiling, seven terms, and MTP when it is on


def _setup_waterfall(fig):
    ax = fig.axes[0]
    ax.set_xlim(0, 1.05)
    ax.set_ylim(_TERMS - 0.5, -0.5)
    ax.set_yticks([])
    ax.set_xlabel("tokens/s per chip, as a share of the roofline ceiling")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("from the ceiling to the prediction, one term at a time", fontsize=10)


def _draw_waterfall(fig, deployment, input_tokens, output_tokens, log2_batch, mtp_tokens):
    from ... import planner

    ax = fig.axes[0]
    kw = DEPLOYMENTS[deployment]
    batch = None if log2_batch == 0 else 2.0 ** log2_batch * (kw.get("dp", 1))
    try:
        p = planner.predict(input_tokens=input_tokens, output_tokens=output_tokens, batch=batch,
                            mtp_tokens=mtp_tokens, **kw)
    except ValueError as e:
        return [], f"<b>does not fit</b>: {e}"
    top = p.waterfall[0][1]
    shares = [r / top for _, r in p.waterfall] + [0.0] * (_TERMS - len(p.waterfall))
    bars = kept(fig, "bars", lambda: ax.barh(range(_TERMS), [0.0] * _TERMS, color="C0"))
    labels = kept(fig, "labels", lambda: [ax.text(0.01, i, "", va="center", fontsize=9) for i in range(_TERMS)])
    for i, (rect, share) in enumerate(zip(bars, shares)):
        rect.set_width(min(share, 1.05))                 # MTP can pass the one-token ceiling: the label says by how much
        rect.set_color("C3" if i == len(p.waterfall) - 1 else ("0.6" if i == 0 else "C0"))
    names = [n for n, _ in p.waterfall] + [""] * (_TERMS - len(p.waterfall))
    for text, name, share in zip(labels, names, shares):
        text.set_text(f"{name}: {share:.0%}" if name else "")
    t = p.terms
    return [*bars, *labels], (
        f"<b>{deployment}</b>, {input_tokens:,} in / {output_tokens:,} out, decode batch {p.batch:,.0f} "
        f"({'the most that fits' if batch is None else 'chosen'}):<br>ceiling {top:,.0f} tokens/s per chip; "
        f"prediction <b>{p.tokens_per_s_per_chip:,.0f}</b> ({p.tokens_per_s_per_chip / top:.0%}), time per output "
        f"token {p.tpot_s * 1e3:.2f} ms. Per step: compute {t['compute_s'] * 1e3:.2f} ms, memory "
        f"{t['memory_s'] * 1e3:.2f} ms, TP all-reduce {t['tensor_parallel_s'] * 1e3:.2f} ms, expert all-to-all "
        f"{t['expert_all_to_all_s'] * 1e3:.2f} ms" + (f", MTP {t['mtp_tokens_per_step']:.2f} tokens a step"
                                                       if mtp_tokens else "") + ".")


def waterfall_explorer(deployment: str = "DeepSeek-V3, 144 x H800, EP144, fp8") -> Explorer:
    """Chapter 12: :func:`llmmath.planner.predict`'s waterfall for three deployments, with the workload, the
    batch (0: the most that fits) and MTP as controls."""
    import ipywidgets as W

    return explorer(_setup_waterfall, _draw_waterfall, {
        "deployment": W.Dropdown(options=list(DEPLOYMENTS), value=deployment, description="deployment"),
        "input_tokens": W.IntSlider(value=2000, min=100, max=32000, step=100, description="input"),
        "output_tokens": W.IntSlider(value=1000, min=10, max=8000, step=10, description="output"),
        "log2_batch": W.IntSlider(value=0, min=0, max=10, description="log2 b/rank"),
        "mtp_tokens": W.IntSlider(value=0, min=0, max=3, description="MTP tokens"),
    }, width=7.0, height=3.4)


register('waterfall_explorer', waterfall_explorer)
