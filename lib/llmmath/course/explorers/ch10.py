"""Chapter 10: a training-memory and step-time planner (see :mod:`llmmath.course.explorers`)."""

from __future__ import annotations

import numpy as np

from ..widgets import Explorer, explorer
from . import register

__all__ = ['training_memory_explorer', 'training_prediction_explorer']

_MEMORY_KINDS = (("weights", "C0"), ("gradients", "C1"), ("master_weights", "C2"), ("optimizer", "C3"),
                 ("activations", "C4"))
_TIME_KINDS = (("compute", "C0"), ("bubble", "0.6"), ("tp", "C1"), ("cp", "C2"), ("pp", "C5"), ("ep", "C3"),
               ("dp", "C4"))
_MEM_MAX_GB = 320.0


def _data_parallel(gpus, tp, cp, pp) -> int:
    """The data-parallel degree the GPUs leave after TP x CP x PP, or a ValueError saying why there is none."""
    n = int(gpus)
    if n % (tp * cp * pp):
        raise ValueError(f"{n} GPUs do not split into TP{tp} x CP{cp} x PP{pp} = {tp * cp * pp}: DP would not be whole")
    return n // (tp * cp * pp)


def _memory_bars(ax, parts: dict, kinds, fits: bool, hbm_gb: float, fontsize: float) -> list:
    """A stacked bar of ``parts`` (bytes, by kind) against the HBM line, hatched when it does not fit; the legend
    from proxies (a labelled bar would leave a container behind each frame)."""
    from matplotlib.patches import Patch

    artists, bottom = [], 0.0
    for kind, color in kinds:
        gb = parts[kind] / 1e9
        shown = min(gb, max(0.0, _MEM_MAX_GB - bottom))
        artists += list(ax.bar([0], [shown], 0.8, bottom=bottom, color=color, hatch=None if fits else "//",
                               alpha=1.0 if fits else 0.45))
        bottom += gb
    artists.append(ax.axhline(hbm_gb, color="k", ls="--", lw=1.2))
    artists.append(ax.text(0.0, min(hbm_gb, _MEM_MAX_GB) + 4, f"HBM {hbm_gb:.0f} GB", ha="center",
                           fontsize=fontsize))
    artists.append(ax.legend(handles=[Patch(color=c, label=k) for k, c in kinds], fontsize=fontsize,
                             loc="upper right"))
    return artists


def _memory_axis(ax, ylabel: str, title: str) -> None:
    """One bar of memory by kind, up to the largest HBM the explorers show."""
    ax.set_xlim(-0.6, 0.6)
    ax.set_ylim(0, _MEM_MAX_GB)
    ax.set_xticks([])
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)


def _setup_training(fig):
    a0, a1 = fig.axes
    _memory_axis(a0, "bytes per GPU (GB; first pipeline stage)", "memory by kind against HBM")
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
    n, dp = int(gpus), _data_parallel(gpus, tp, cp, pp)
    seqs = max(1, int(round(global_batch_m_tokens * 1e6 / seq_len / (dp * micro_batch)))) * dp * micro_batch
    chunks = 2 if schedule == "interleaved" else 1
    st = training_layout.training_step(model, chip, global_batch=seqs, seq_len=seq_len, tp=tp, cp=cp, pp=pp, dp=dp,
                                       ep=ep, micro_batch=micro_batch, zero_stage=zero_stage, recompute=recompute,
                                       schedule=schedule, chunks=chunks)
    hbm_gb = hardware.get(chip).hbm_bytes / 1e9
    artists = _memory_bars(a0, st.memory_bytes, _MEMORY_KINDS, st.fits, hbm_gb, 8)
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
        "schedule": W.Dropdown(options=["1f1b", "gpipe", "interleaved", "zero-bubble", "zb-v"], value="1f1b",
                               description="schedule"),
    }, ncols=2, width=4.6, height=3.8)


register('training_memory_explorer', training_memory_explorer)


_WATERFALL_STEPS = ("ceiling", "kernels", "eltwise", "DP", "TP", "host")
# each waterfall term's short label, by how predict names it
_WATERFALL_LABELS = (("roofline", "ceiling"), ("linear", "kernels"), ("elementwise", "eltwise"),
                     ("data-parallel", "DP"), ("tensor-parallel", "TP"), ("expert", "EP"), ("pipeline", "PP"),
                     ("host", "host"))
_PRED_MEMORY = (("weights", "C0"), ("gradients", "C1"), ("master_weights", "C2"), ("optimizer", "C3"),
                ("activations", "C4"), ("other", "0.6"))


def _setup_prediction(fig):
    a0, a1 = fig.axes
    a0.set_xlim(-0.6, len(_WATERFALL_STEPS) - 0.4)
    a0.set_ylim(0, 1.15)
    a0.set_xticks(range(len(_WATERFALL_STEPS)), _WATERFALL_STEPS, fontsize=9)
    a0.set_ylabel("tokens/s, share of the ceiling's")
    a0.set_title("from the roofline ceiling, one term at a time", fontsize=9)
    a0.grid(True, axis="y", alpha=0.3)
    _memory_axis(a1, "busiest GPU (GB)", "memory as frameworks hold it")


def _draw_prediction(fig, model, chip, gpus, seq_len, global_batch, tp, cp, pp, ep, micro_batch,
                     precision, schedule, chunks, recompute, fsdp, ep_overlap, grad_dtype, attention):
    from ... import hardware, training_layout

    a0, a1 = fig.axes
    n, dp = int(gpus), _data_parallel(gpus, tp, cp, pp)
    per_step = dp * micro_batch                      # the batch rounds up to whole micro-batches on every replica
    seqs = -(-int(global_batch) // per_step) * per_step
    p = training_layout.predict(model, chip, global_batch=seqs, seq_len=seq_len, tp=tp, cp=cp, pp=pp, dp=dp, ep=ep,
                                micro_batch=micro_batch, precision=precision, recompute=recompute,
                                schedule=schedule, chunks=int(chunks) if schedule == "interleaved" else 1, fsdp=fsdp,
                                ep_overlap=ep_overlap, grad_dtype=grad_dtype, flash_attention=attention != "unfused",
                                attention_kernel="flash3" if attention == "unfused" else attention)
    ceiling_s = p.waterfall[0][1]
    labels = [next(short for prefix, short in _WATERFALL_LABELS if name.startswith(prefix)) for name, _ in p.waterfall]
    a0.set_xlim(-0.6, len(labels) - 0.4)
    a0.set_xticks(range(len(labels)), labels, fontsize=9)
    artists = []
    for i, (name, t) in enumerate(p.waterfall):
        share = ceiling_s / t
        artists += list(a0.bar([i], [min(share, 1.15)], 0.7, color="0.55" if i == 0 else "C0"))
        artists.append(a0.text(i, min(share, 1.15) + 0.015, f"{share:.0%}", ha="center", fontsize=9))
    hbm_gb = hardware.get(chip).hbm_bytes / 1e9
    mem = dict(p.memory_bytes)
    parts = {k: mem.pop(k, 0.0) for k, _ in _PRED_MEMORY if k != "other"}
    parts["other"] = sum(mem.values())          # logits, the recomputed layer, FSDP's gathered layer, the reserve
    artists += _memory_bars(a1, parts, _PRED_MEMORY, p.fits, hbm_gb, 9)
    verdict = "fits" if p.fits else "<b style='color:#b00'>does not fit</b>"
    terms = "; ".join(f"{name} {t:.2f} s" for name, t in p.waterfall)
    ceiling_tokens = p.tokens_per_s_per_gpu * p.step_time_s / ceiling_s
    return artists, (f"{p.describe()} on {n} x {chip}, {seqs} sequences of {seq_len} tokens: predicted "
                     f"<b>{p.tokens_per_s_per_gpu:,.0f} tokens/s per GPU</b>, MFU {p.mfu:.0%} (of the bf16 peak), "
                     f"against the ceiling's {ceiling_tokens:,.0f}. Step after each term: {terms}. "
                     f"Memory {sum(p.memory_bytes.values()) / 1e9:.1f} GB of {hbm_gb:.0f} GB: {verdict}.")


def training_prediction_explorer(model: str = "llama-3.1-70b", chip: str = "h100-sxm", gpus: int = 64,
                                 seq_len: int = 8192, tp: int = 4, cp: int = 1, pp: int = 8, ep: int = 1,
                                 precision: str = "fp8", schedule: str = "interleaved",
                                 grad_dtype: str = "bf16") -> Explorer:
    """What a framework would measure, from :func:`llmmath.training_layout.predict`: the tokens/s per GPU after each
    term of its waterfall as a share of the roofline ceiling's, and the busiest GPU's memory by kind against HBM.
    The defaults are NVIDIA's Megatron-Bridge layout for Llama 3 70B on 64 H100s in fp8 (TP4 PP8, interleaved with
    five chunks a GPU, 128 sequences of 8,192 tokens a step, bf16 gradients). A batch that does not split into whole
    micro-batches on every data-parallel replica is rounded up. The attention menu picks the fused kernel's measured
    rates (FlashAttention-3, cuDNN's of 2024, FlashAttention-2: :func:`llmmath.training_layout.attention_share`;
    the last two were measured on an H100 and are refused, in words, on other chips) or prices attention as
    frameworks ran it before FlashAttention (unfused: :func:`llmmath.training_layout.unfused_attention_s`; context
    parallelism needs a fused kernel). A step bound by exposed communication barely moves with the kernel. The
    sequence menu reaches 131,072 tokens, where attention is most of a step."""
    import ipywidgets as W

    return explorer(_setup_prediction, _draw_prediction, {
        "model": W.Dropdown(options=["nemo-gpt3-5b", "gpt-3-175b", "llama-3.1-8b", "llama-3.1-70b",
                                     "llama-3.1-405b", "mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v3"],
                            value=model, description="model"),
        "chip": W.Dropdown(options=["a100-80gb", "h100-sxm", "h200", "b200", "gb200"], value=chip,
                           description="chip"),
        "gpus": W.Dropdown(options=[2**k for k in range(3, 15)], value=gpus, description="GPUs"),
        "seq_len": W.Dropdown(options=[2048, 4096, 8192, 32768, 131072], value=seq_len, description="sequence"),
        "global_batch": W.Dropdown(options=[32, 64, 128, 256, 512, 1024, 2048, 4096], value=128,
                                   description="batch (seqs)"),
        "tp": W.Dropdown(options=[1, 2, 4, 8], value=tp, description="TP (+SP)"),
        "cp": W.Dropdown(options=[1, 2, 4, 8], value=cp, description="CP"),
        "pp": W.Dropdown(options=[1, 2, 4, 8, 16], value=pp, description="PP"),
        "ep": W.Dropdown(options=[1, 8, 16, 32, 64], value=ep, description="EP"),
        "micro_batch": W.Dropdown(options=[1, 2, 4], value=1, description="micro-batch"),
        "precision": W.Dropdown(options=["bf16", "fp8", "mxfp8", "nvfp4"], value=precision,
                                description="linear layers"),
        "schedule": W.Dropdown(options=["1f1b", "interleaved", "zero-bubble", "zb-v", "dualpipe"], value=schedule,
                               description="schedule"),
        "chunks": W.Dropdown(options=[2, 4, 5, 8], value=5, description="chunks (v)"),
        "recompute": W.Dropdown(options=["none", "selective", "full"], value="none", description="recompute"),
        "fsdp": W.Checkbox(value=False, description="FSDP"),
        "ep_overlap": W.Checkbox(value=False, description="all-to-all overlap"),
        "grad_dtype": W.Dropdown(options=["fp32", "bf16"], value=grad_dtype, description="gradients"),
        "attention": W.Dropdown(options=[("FlashAttention-3", "flash3"), ("cuDNN (2024)", "cudnn"),
                                         ("FlashAttention-2", "flash2"), ("unfused", "unfused")], value="flash3",
                                description="attention"),
    }, ncols=2, width=4.6, height=3.0)


register('training_prediction_explorer', training_prediction_explorer)
