"""Chapter 10: a training-memory and step-time planner (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer
from . import register

__all__ = ['training_memory_explorer']

_MEMORY_KINDS = (("weights", "C0"), ("gradients", "C1"), ("master_weights", "C2"), ("optimizer", "C3"),
                 ("activations", "C4"))
_TIME_KINDS = (("compute", "C0"), ("bubble", "0.6"), ("tp", "C1"), ("cp", "C2"), ("pp", "C5"), ("ep", "C3"),
               ("dp", "C4"))
_MEM_MAX_GB = 320.0


def _setup_training(fig):
    a0, a1 = fig.axes
    a0.set_xlim(-0.6, 0.6)
    a0.set_ylim(0, _MEM_MAX_GB)
    a0.set_xticks([])
    a0.set_ylabel("bytes per GPU (GB; first pipeline stage)")
    a0.set_title("memory by kind against HBM", fontsize=9)
    a0.grid(True, axis="y", alpha=0.3)
    a1.set_xlim(0, 1)
    a1.set_ylim(-0.6, 0.6)
    a1.set_yticks([])
    a1.set_xlabel("share of the predicted step time")
    a1.set_title("step time: compute, bubble, exposed communication", fontsize=9)
    a1.grid(True, axis="x", alpha=0.3)


def _draw_training(fig, model, chip, gpus, seq_len, global_batch_m_tokens, tp, cp, pp, ep, micro_batch,
                   zero_stage, recompute, schedule):
    from ... import hardware, training_layout

    a0, a1 = fig.axes
    n = int(gpus)
    if n % (tp * cp * pp):
        raise ValueError(f"{n} GPUs do not split into TP{tp} x CP{cp} x PP{pp} = {tp * cp * pp}: DP would not be whole")
    dp = n // (tp * cp * pp)
    seqs = max(1, int(round(global_batch_m_tokens * 1e6 / seq_len / (dp * micro_batch)))) * dp * micro_batch
    chunks = 2 if schedule == "interleaved" else 1
    st = training_layout.training_step(model, chip, global_batch=seqs, seq_len=seq_len, tp=tp, cp=cp, pp=pp, dp=dp,
                                       ep=ep, micro_batch=micro_batch, zero_stage=zero_stage, recompute=recompute,
                                       schedule=schedule, chunks=chunks)
    hbm_gb = hardware.get(chip).hbm_bytes / 1e9
    artists, bottom = [], 0.0
    for kind, color in _MEMORY_KINDS:
        gb = st.memory_bytes[kind] / 1e9
        shown = min(gb, max(0.0, _MEM_MAX_GB - bottom))
        artists += list(a0.bar([0], [shown], 0.8, bottom=bottom, color=color, label=kind,
                               hatch=None if st.fits else "//", alpha=1.0 if st.fits else 0.45))
        bottom += gb
    artists.append(a0.axhline(hbm_gb, color="k", ls="--", lw=1.2))
    artists.append(a0.text(0.0, min(hbm_gb, _MEM_MAX_GB) + 4, f"HBM {hbm_gb:.0f} GB", ha="center", fontsize=8))
    artists.append(a0.legend(fontsize=8, loc="upper right"))
    parts = {"compute": st.compute_s, "bubble": st.bubble_s, **st.exposed_comm_s}
    total, left = st.step_time_s, 0.0
    for kind, color in _TIME_KINDS:
        w = parts[kind] / total
        if w > 0:
            artists += list(a1.barh([0], [w], 0.6, left=left, color=color, label=kind))
            left += w
    artists.append(a1.legend(fontsize=8, loc="upper right", ncol=4))
    verdict = ("fits" if st.fits else "<b style='color:#b00'>does not fit</b> (hatched: it would not run)")
    comm = ", ".join(f"{k.upper()} {v * 1e3:.0f} ms ({st.exposed_comm_s[k] * 1e3:.0f} exposed)"
                     for k, v in st.comm_s.items() if v > 0) or "none"
    return artists, (f"{st.describe()} on {n} x {chip}, {seqs} sequences of {seq_len} tokens per step "
                     f"({seqs * seq_len / 1e6:.1f}M tokens; {st.layout['microbatches']} micro-batches per pipeline). "
                     f"Per GPU: {st.total_bytes / 1e9:.1f} GB of {hbm_gb:.0f} GB, {verdict}. "
                     f"Step {st.step_time_s:.2f} s = compute {st.compute_s:.2f} s + bubble {st.bubble_s:.2f} s + "
                     f"exposed communication {sum(st.exposed_comm_s.values()):.2f} s; communication per step: {comm}. "
                     f"MFU ceiling {st.mfu:.0%} (compute at the dense bf16 peak: a floor on time).")


def training_memory_explorer(model: str = "llama-3.1-405b", chip: str = "h100-sxm", gpus: int = 16384,
                             seq_len: int = 8192, tp: int = 8, cp: int = 1, pp: int = 16, ep: int = 1,
                             zero_stage: int = 2, recompute: str = "selective") -> Explorer:
    """Per-GPU bytes (weights, gradients, master weights, optimizer, activations) against HBM, and the step time
    split into compute, pipeline bubble and exposed communication, from :func:`llmmath.training_layout.training_step`.
    """
    import ipywidgets as W

    return explorer(_setup_training, _draw_training, {
        "model": W.Dropdown(options=["llama-3.1-405b", "llama-3.1-70b", "llama-3.1-8b", "deepseek-v3",
                                     "qwen3-235b-a22b"], value=model, description="model"),
        "chip": W.Dropdown(options=["h100-sxm", "h200", "b200", "gb200"], value=chip, description="chip"),
        "gpus": W.Dropdown(options=[2**k for k in range(3, 15)], value=gpus, description="GPUs"),
        "seq_len": W.Dropdown(options=[4096, 8192, 32768, 131072], value=seq_len, description="sequence"),
        "global_batch_m_tokens": W.FloatSlider(value=16.0, min=1.0, max=64.0, step=1.0,
                                               description="batch (M tokens)"),
        "tp": W.Dropdown(options=[1, 2, 4, 8], value=tp, description="TP (+SP)"),
        "cp": W.Dropdown(options=[1, 2, 4, 8, 16], value=cp, description="CP"),
        "pp": W.Dropdown(options=[1, 2, 4, 8, 16, 32], value=pp, description="PP"),
        "ep": W.Dropdown(options=[1, 8, 16, 32, 64], value=ep, description="EP"),
        "micro_batch": W.Dropdown(options=[1, 2, 4], value=1, description="micro-batch"),
        "zero_stage": W.Dropdown(options=[0, 1, 2, 3], value=zero_stage, description="ZeRO"),
        "recompute": W.Dropdown(options=["none", "selective", "full"], value=recompute, description="recompute"),
        "schedule": W.Dropdown(options=["1f1b", "gpipe", "interleaved", "zero-bubble"], value="1f1b",
                               description="schedule"),
    }, ncols=2, width=4.6, height=3.8)


register('training_memory_explorer', training_memory_explorer)
