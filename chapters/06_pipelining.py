# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 6 — Pipelining: what it saves, what it cannot, and how models are actually laid out
#
# **Pipeline parallelism** (PP; [glossary](../book/glossary.md#pipeline-parallelism)) cuts a model's layers into PP consecutive
# **stages** on different domains and streams **micro-batches** ([glossary](../book/glossary.md#micro-batch)) through them.
# Six claims about what that buys in serving:
#
# | # | time | claim, in our words |
# |---|---|---|
# | 20 | 52:56 | a stage boundary on the slow network is harmless if the in-stage expert traffic per token is ~8× the boundary's |
# | 21 | 55:35 | in inference, pipelining saves neither memory time nor compute time |
# | 22 | 56:04 | pipelining greatly relieves the per-rack memory capacity limit |
# | 24 | 1:00:59 | when serving, adding pipeline stages changes neither the batch you need nor the latency you get |
# | 25 | 1:12:51 | the KV cache cannot be sharded away by pipeline stages |
# | 26 | 1:13:10 | serve with expert parallelism up to the scale-up domain, and little pipelining |
#
# **After this chapter you can** draw a pipeline schedule and its bubble,
# compute per-GPU weight and KV memory under expert, pipeline and tensor
# parallelism, and decide when a pipeline boundary on the slow network costs
# anything.

# %% [markdown]
# **Before you start.** Read [chapter 5](05_experts_on_a_rack.py) (scale-up and scale-out, the
# all-to-all, EP) and [chapter 1](01_batch_size.py) (the decode step's floors). Glossary entries
# that matter here: [pipeline parallelism](../book/glossary.md#pipeline-parallelism), [micro-batch](../book/glossary.md#micro-batch),
# [bubble](../book/glossary.md#bubble), [expert parallelism](../book/glossary.md#expert-parallelism) and
# [tensor parallelism](../book/glossary.md#tensor-parallelism); symbols PP, EP, TP, $m$, $b$, $\ell$, $i$, $t_i$,
# $t_\text{hop}$, $b_\text{act}$ on the [notation](../book/notation.md) page. About an hour.

# %%
import numpy as np
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker

from llmmath import claims, hardware, models, parallelism, plots, serving, explorers, widgets

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Schedules and the bubble
#
# In **training**, each micro-batch goes forward through the stages and then
# backward. The first stage waits $\text{PP}-1$ slots before the pipeline is full and the
# last finishes $\text{PP}-1$ slots early, so with $m$ micro-batches a fraction
#
# $$\text{bubble} = \frac{\text{PP}-1}{m+\text{PP}-1}$$
#
# of every stage's time is idle (the [bubble](../book/glossary.md#bubble)) — for GPipe (all forwards, then all backwards)
# and 1F1B (alternate one forward, one backward) alike; 1F1B's gain is memory:
# a stage holds at most PP micro-batches' activations instead of $m$. The
# timelines below come from a small simulator (`parallelism.pipeline_schedule`),
# and its idle fraction matches the formula.

# %% slideshow={"slide_type": "subslide"}
fig, axes = plots.new_axes(3, width=4.6, height=3.0)
for ax, (kind, fwd_only, title) in zip(axes, (("gpipe", False, "GPipe (training)"), ("1f1b", False, "1F1B (training)"),
                                             ("gpipe", True, "forward only (one inference pass)"))):
    ev = parallelism.pipeline_schedule(4, 8, kind, forward_s=1, backward_s=2, forward_only=fwd_only)
    for s in range(4):
        for phase, color in (("F", "C0"), ("B", "C1")):
            bars = [(e[3], e[4] - e[3]) for e in ev if e[0] == s and e[2] == phase]
            ax.broken_barh(bars, (s - 0.4, 0.8), facecolors=color, edgecolors="white", linewidth=0.5)
    span = max(e[4] for e in ev)
    idle = 1 - sum(e[4] - e[3] for e in ev) / (4 * span)
    ax.set_title(f"{title}\nidle {idle:.0%}", fontsize=9)
    ax.set_ylim(3.6, -0.6); ax.set_yticks(range(4)); ax.set_xlabel("time (forward = 1)"); ax.set_ylabel("stage")
plt.show()
print(f"bubble formula for p=4, m=8: {parallelism.bubble_fraction(4, 8):.1%}")

# %% [markdown] slideshow={"slide_type": "subslide"}
# **Splitting the backward: ZB-V.** A layer's backward is two jobs: the
# gradient with respect to its *input*, which the stage before is waiting for,
# and the gradient with respect to its *weights*, which nothing needs until the
# optimizer step. Zero-bubble schedules (Qi et al., ICLR 2024) run the second
# one later, in the gaps. ZB-V also cuts the model into $2\,\text{PP}$ chunks and
# gives each GPU one chunk on the way down and its mirror image on the way back
# up (a V: GPU 0 holds the first and the last chunk), so the first GPU also
# computes the loss and starts the backward itself. Below, the same 4 stages
# and 8 micro-batches, with forward (F), input gradient (B) and weight gradient
# (W) each one unit a GPU, half a unit a chunk, since a GPU's two chunks hold
# one stage's layers (`parallelism.zbv_schedule`, in the order of PyTorch's
# `torch.distributed.pipelining` ZB-V schedule). Once $m \ge 2\,\text{PP}-1$
# the V runs without a gap after it fills: the last GPU waits for the first
# micro-batch to come down $\text{PP}-1$ half-stage chunks, $(\text{PP}-1)/2$
# units, and never idles after. Every GPU does the same $3m$ units of work in a
# step as long as the last GPU's, so each idles $(\text{PP}-1)/2$ units against
# 1F1B's $3(\text{PP}-1)$, holding PP micro-batches on every GPU, as 1F1B's
# first stage does. With fewer micro-batches the V never fills.

# %% slideshow={"slide_type": "subslide"}
p_v, m_v = 4, 8
zbv = parallelism.zbv_schedule(p_v, m_v, forward_s=1, backward_input_s=1, backward_weight_s=1)
flat = parallelism.pipeline_schedule(p_v, m_v, "1f1b", forward_s=1, backward_s=2)
fig, axes = plots.new_axes(2, width=6.4, height=3.4)
colors = {"F": "C0", "B": "C1", "W": "C2"}
for s in range(p_v):
    for phase in ("F", "B"):
        bars = [(e[3], e[4] - e[3]) for e in flat if e[0] == s and e[2] == phase]
        axes[0].broken_barh(bars, (s - 0.4, 0.8), facecolors=colors[phase], edgecolors="white", linewidth=0.5)
    for phase in "FBW":
        for back, alpha in ((False, 1.0), (True, 0.45)):        # the chunk on the way back up drawn lighter
            bars = [(e[4], e[5] - e[4]) for e in zbv["events"]
                    if e[0] == s and e[3] == phase and (e[1] >= p_v) == back]
            axes[1].broken_barh(bars, (s - 0.4, 0.8), facecolors=colors[phase], alpha=alpha, edgecolors="white",
                                linewidth=0.3)
flat_span = max(e[4] for e in flat)
for ax, title, span in ((axes[0], "1F1B (orange: B and W together, 2 units)", flat_span),
                        (axes[1], "ZB-V (lighter: the chunk on the way back)", zbv["step_s"])):
    ax.set_xlim(0, flat_span); ax.set_ylim(p_v - 0.4, -0.6); ax.set_yticks(range(p_v))
    ax.set_xlabel("time (one stage's forward = 1)"); ax.set_ylabel("GPU")
    ax.set_title(f"{title}\nstep {span:g}, idle {1 - 3 * m_v / span:.0%}", fontsize=9)
fig.legend(handles=[plt.Rectangle((0, 0), 1, 1, color=c) for c in colors.values()],
           labels=["forward", "input gradient (B)", "weight gradient (W)"], fontsize=8, loc="outside lower center",
           ncol=3)
plt.show()
hand = 3 * m_v + (p_v - 1) / 2
print(f"ZB-V: step {zbv['step_s']:g} units, by hand 3m + (PP-1)/2 = {hand:g}; 1F1B: {flat_span:g} = 3(m + PP - 1); "
      f"micro-batches in flight per GPU: {zbv['peak_in_flight']}")
assert zbv["step_s"] == hand and flat_span == 3 * (m_v + p_v - 1)
assert zbv["peak_in_flight"] == [p_v] * p_v          # 1F1B's first stage holds PP too

# %% [markdown]
# **Explore** the schedules: stages, micro-batches, and the backward/forward
# time ratio. (In decode, micro-batches loop back for their next token, so with
# $m \ge \text{PP}$ one pass's drain overlaps the next pass's fill: no bubble.)

# %% slideshow={"slide_type": "subslide"}
pipe_explorer = explorers.pipeline_explorer()
pipe_explorer.widget

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=6, height=3.6)
m = np.arange(1, 65)
for p in (2, 4, 8, 16):
    ax.plot(m, parallelism.bubble_fraction(p, m), label=f"p = {p} stages")
ax.set_xlabel("micro-batches m"); ax.set_ylabel("idle fraction (p-1)/(m+p-1)"); ax.set_xscale("log", base=2)
ax.set_title("Training bubble: more micro-batches per batch shrink it"); ax.grid(True, alpha=0.3); ax.legend()
plt.show()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 20 (52:56) — when a boundary on the slow network is harmless
#
# *Claim, paraphrased:* put a pipeline cut between racks and the slow
# scale-out link carries the cut's traffic; that is fine as long as, per token,
# the in-rack expert traffic exceeds the boundary traffic by the bandwidth gap,
# about 8×. Experts per token, layers per stage and the factor 2 of dispatch
# plus combine multiply up to that easily.
#
# **Derivation.** Per token, the boundary carries one activation, $d\,b_\text{act}$
# bytes ($b_\text{act}$ bytes per value), over the scale-out link's bandwidth $\text{bw}_\text{out}$. Inside a stage of $\ell$ MoE layers, each layer
# dispatches the token to $k$ experts and combines $k$ results over $\text{bw}_\text{up}$:
# $\ell\,k\,d\,(b_\text{disp}+b_\text{comb})\frac{\text{EP}-1}{\text{EP}}$ bytes. The boundary is
# the less busy link when
#
# $$\frac{\ell\,k\,d\,(b_\text{disp}+b_\text{comb})\,\tfrac{\text{EP}-1}{\text{EP}}\,/\,\text{bw}_\text{up}}{d\,b_\text{act}/\text{bw}_\text{out}} \;\ge\; 1
# \quad\Longleftrightarrow\quad 2k\ell \gtrsim \frac{\text{bw}_\text{up}}{\text{bw}_\text{out}}\ \ (\text{all bytes per value equal}).$$
#
# With DeepSeek-V3's $k = 8$ routed experts (the speaker guessed 16–32),
# $2k = 16$ already beats a 9× gap with one layer per stage, and two layers beat
# the 18× of a GB200 rack wired with 400 Gb/s NICs.
#
# **The expert group must fit the fast link.** The in-stage traffic goes over
# $\text{bw}_\text{up}$ only if the EP GPUs of the expert-parallel group share a
# scale-up domain. An HGX H100 box's NVLink domain is 8 GPUs, so an EP64 group
# there would send most of its all-to-all over the NIC. Each system below runs
# EP $= \min(64, \text{its domain})$; a group wider than its domain would be
# priced on the NIC.

# %%
def ep_and_link(key, ep_wanted=64):
    """The EP width a system runs (capped at its scale-up domain) and the links its traffic is priced on."""
    sy = hardware.system(key)
    ep = min(ep_wanted, sy.packages)
    up = sy.scale_up_bytes_per_s_per_package if ep <= sy.packages else sy.scale_out_bytes_per_s_per_package
    return ep, up, sy.scale_out_bytes_per_s_per_package


boundary_systems = ("hgx-h100", "gb200-nvl72", "gb300-nvl72", "tpu-v5p-pod")
ep_of = {key: ep_and_link(key) for key in boundary_systems}
for key, (ep, up, out) in ep_of.items():
    sy = hardware.system(key)
    on_up = up == sy.scale_up_bytes_per_s_per_package
    print(f"{key:<12} scale-up domain {sy.packages:>5} packages -> EP{ep}, all-to-all on "
          f"{'its scale-up link' if on_up else 'the NIC'} ({up / 1e9:.0f} GB/s)")
    # every column's expert group fits its domain, or its all-to-all is priced on the NIC
    assert (ep <= sy.packages and on_up) or up == sy.scale_out_bytes_per_s_per_package, key
assert ep_of["hgx-h100"][0] == hardware.system("hgx-h100").packages == 8

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=6.5, height=3.8)
layers = np.arange(1, 17)
for key, style in (("hgx-h100", "o-"), ("gb200-nvl72", "o-"), ("gb300-nvl72", "x:"), ("tpu-v5p-pod", "o-")):
    sy = hardware.system(key)
    ep, up, out = ep_of[key]
    r = parallelism.boundary_traffic_ratio("deepseek-v3", layers, ep, up, out)
    # GB300 has the H100 box's 9x link gap; at EP64 against EP8 its curve sits (63/64)/(7/8) = 1.125x above
    # the H100's, close to it: drawn dotted with crosses to tell the two apart
    ax.semilogy(layers, r, style, ms=4 if "x" in style else 3, lw=2 if "x" in style else 1.5,
                label=f"{key}, EP{ep} (up/out {sy.scale_up_over_scale_out:.0f}x)")
ax.axhline(1, color="k", ls="--", lw=1)
ax.set_xlabel("MoE layers per pipeline stage"); ax.set_ylabel("in-stage all-to-all time / boundary time")
ax.set_title("DeepSeek-V3: above 1, the boundary is not the bottleneck"); ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The ratio does not depend on $d$: a model with the same $k$ and EP width has the
# same curve. DeepSeek-V3, Kimi K2 and Qwen3-235B all route to $k = 8$ experts;
# gpt-oss-120b routes to 4, so it needs twice the layers per stage. Each column
# runs the EP its domain allows (above):

# %%
table_systems = ("hgx-h100", "gb200-nvl72", "tpu-v5p-pod")
print(f"{'model':<18} {'k':>3} " + " ".join(f"{f'{s_}, EP{ep_of[s_][0]}':>20}" for s_ in table_systems)
      + "   (ratio at 1 MoE layer per stage)")
ratio_1layer = {}
for key in ("deepseek-v3", "kimi-k2", "qwen3-235b-a22b", "gpt-oss-120b"):
    row = [float(parallelism.boundary_traffic_ratio(key, 1, *ep_of[s_])) for s_ in table_systems]
    ratio_1layer[key] = dict(zip(table_systems, row))
    print(f"{key:<18} {models.get(key).experts_per_token:>3} " + " ".join(f"{r:>20.2f}" for r in row))
# By hand, DeepSeek-V3 on an HGX H100 at EP8: k (fp8 dispatch 1 B + bf16 combine 2 B) (E-1)/E / (bf16 2 B), over
# the box's link gap; an EP64 group would have 63/64 in place of 7/8, but 64 GPUs do not share one NVLink domain.
k_ds, (ep_h, up_h, out_h) = models.get("deepseek-v3").experts_per_token, ep_of["hgx-h100"]
hand_ep8 = k_ds * (1 + 2) * (ep_h - 1) / ep_h / 2 * out_h / up_h
assert abs(ratio_1layer["deepseek-v3"]["hgx-h100"] / hand_ep8 - 1) < 1e-9
print(f"DeepSeek-V3 on an HGX H100, 1 layer per stage: {hand_ep8:.2f} at EP{ep_h} (the box's NVLink domain); "
      f"an EP64 group priced on NVLink, which the box cannot hold, would show {hand_ep8 * (63 / 64) / (7 / 8):.2f}")

# %% [markdown]
# **Explore.** Pick a system (its up/out ratio), a model, the activated experts
# $k$ and the layers per stage; watch the ratio cross 1 (dashed). The grey dotted
# curve is the model's own $k$.

# %% slideshow={"slide_type": "subslide"}
boundary_explorer = explorers.boundary_ratio_explorer()
boundary_explorer.widget

# %%
v20 = claims.check(20)
assert v20.verdict == "holds"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 21 (55:35) — no saving in memory time or compute time
#
# *Claim, paraphrased:* in inference, pipelining does not reduce the time spent
# reading weights or doing arithmetic; it moves that work to other racks.
#
# **Derivation.** Stage $i$ holds its own layers (the first also the input
# embedding, the last the final norm and LM head). It does those layers' FLOPs
# and reads their weight and KV bytes for its micro-batch, so its floor $t_i$ is
# the roofline of its share, and the memory-bound floors add up to the whole
# step: $\sum_i t_i = t_\text{step}$. Nothing is saved. With PP micro-batches
# circulating, the slowest stage is busy $\text{PP}\,\max_i t_i$ per round, so
#
# $$\frac{\text{chip-s per token, pipelined}}{\text{chip-s per token, one stage}} = \frac{\text{PP}\,\max_i t_i}{\sum_i t_i} \;\ge\; 1 .$$
#
# Equal stages give exactly 1; an uneven split costs.
#
# **The layout decides the floor.** Each stage is 64 GPUs laid out as
# DeepSeek serves V3: every GPU serves its own $b/64$ sequences (data-parallel
# attention) and so holds and reads its own copy of the attention, dense-layer,
# shared-expert and head weights; only the routed experts are spread, 4 per GPU.
# A chip's floor is its own bytes over its own bandwidth. Pooling, as chapter 1
# does, spreads all 671 GB evenly over the 64 GPUs as if any GPU could read any
# weight; it is right for a dense model under tensor parallelism, and too
# optimistic here, because the non-expert weights are read 64 times, once per GPU.
# In this layout DeepSeek-V3's three dense layers are the heaviest per GPU
# (583 M parameters each, replicated, against 233 M + 4 experts of 44 M = 409 M
# for an MoE layer), 61 layers do not divide by 8, and the LM head sits on the
# last stage. The floors below are computed layer by layer
# (`parallelism.stage_floors_s`); the check re-derives them by hand from the
# published config and the GB200 datasheet.

# %%
one = parallelism.pipelined_decode("deepseek-v3", "gb200", 64, 1, 2048, 8192, weight_dtype="fp8")
pooled = serving.decode_step("deepseek-v3", "gb200", 2048, 8192, n_chips=64, weight_dtype="fp8", check_capacity=False)
print(f"DeepSeek-V3, fp8, 64 GB200s, b = 2048, L = 8192, one stage: {one.stage_s * 1e3:.2f} ms per step on each GPU "
      f"of this layout; {pooled.time_s * 1e3:.2f} ms if its bytes were pooled ({one.stage_s / pooled.time_s:.2f}x)")
hbm_gb200 = hardware.get("gb200").hbm_bytes
print(f"{'model':<12} {'P':>3} {'layers per stage':<26} {'slowest stage':>13} {'sum of stages':>13} "
      f"{'token latency':>13} {'chips':>6} {'chip-s/token vs P=1':>20}  fits 186 GB/GPU?")
for key in ("deepseek-v3", "kimi-k2"):
    base = parallelism.pipelined_decode(key, "gb200", 64, 1, 2048, 8192, weight_dtype="fp8")
    fit = parallelism.memory_over_stages(key, [1, 2, 4, 8], hbm_gb200, ep=64, batch=2048, context=8192,
                                         weight_dtype="fp8")
    for j, P in enumerate((1, 2, 4, 8)):
        d = parallelism.pipelined_decode(key, "gb200", 64, P, 2048, 8192, weight_dtype="fp8")
        split = "/".join(str(len(r)) for r in parallelism.stage_layers(key, P))
        print(f"{key:<12} {P:>3} {split:<26} {d.stage_s * 1e3:>11.3f}ms {d.stages_s.sum() * 1e3:>11.3f}ms "
              f"{d.token_latency_s * 1e3:>11.3f}ms {d.n_chips:>6} {d.chip_s_per_token / base.chip_s_per_token:>19.3f}x"
              f"  {'yes' if fit.fits[j] else 'NO: does not fit'} ({fit.fill[j]:.0%})")

# %% [markdown]
# Kimi K2 (one dense layer, 384 experts) tells the same story as DeepSeek-V3:
# the stages' floors add up to the unpipelined step, and the last-but-one column
# is what the uneven split costs. The last column is each row's weights + KV as
# a share of a GPU's 186 GB.

# %% slideshow={"slide_type": "subslide"}
b21, L21, P21 = 2048, 8192, np.arange(1, 9)
pipes21 = {key: [parallelism.pipelined_decode(key, "gb200", 64, P, b21, L21, weight_dtype="fp8") for P in P21]
           for key in ("deepseek-v3", "kimi-k2")}
cost21 = {key: np.array([d.imbalance for d in ds]) for key, ds in pipes21.items()}
step21 = pipes21["deepseek-v3"][0].sum_of_stages_s  # one stage: the whole step
fig, (ax, ax2) = plots.new_axes(2, width=4.2, height=3.6)
for P, d in zip(P21, pipes21["deepseek-v3"]):
    t = d.stages_s * 1e3
    ax.bar(np.full(P, P), t, bottom=np.cumsum(t) - t, width=0.7, edgecolor="white", lw=0.8,
           color=["C3" if s == np.argmax(t) else "C0" for s in range(P)])
ax.plot(P21, [P * d.stage_s * 1e3 for P, d in zip(P21, pipes21["deepseek-v3"])], "kx", ms=7, mew=1.5,
        label="P × slowest stage")
ax.axhline(step21 * 1e3, color="k", ls="--", lw=1, label="one stage (whole step)")
ax.bar([], [], color="C0", label="a stage's floor"); ax.bar([], [], color="C3", label="slowest stage")
ax.set_ylim(0, step21 * 1e3 * 1.5); ax.set_xticks(P21)
ax.set_xlabel("pipeline stages P"); ax.set_ylabel("floor per GPU per micro-batch (ms)")
ax.set_title("DeepSeek-V3 on GB200: stages stacked", fontsize=10)
ax.legend(fontsize=8, loc="upper left", ncols=2)
for key, style in (("deepseek-v3", "o-"), ("kimi-k2", "s--")):
    ax2.plot(P21, cost21[key], style, ms=5, label=key)
ax2.axhline(1, color="k", ls=":", lw=1.2, label="one stage: nothing saved")
ax2.set_ylim(bottom=1 - 0.1 * (cost21["deepseek-v3"].max() - 1))
ax2.set_xticks(P21); ax2.set_xlabel("pipeline stages P"); ax2.set_ylabel("chip-seconds per token / one stage's")
ax2.set_title("what the uneven split costs", fontsize=10); ax2.grid(True, alpha=0.3); ax2.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Reading the figure.** Left: each bar is one PP, its segments the stages'
# floors stacked; every bar reaches the dashed line of the unpipelined step, so
# pipelining saves no memory or compute time, it only cuts the step into
# pieces. The crosses are PP times the slowest (red) stage, the chip time a
# token costs once the slowest stage sets the pace; their height above the
# dashed line is the cost on the right, which never drops below 1 (dotted). The
# cost does not grow steadily with PP: it follows how evenly the layers split,
# with the heavier dense layers up front and the LM head at the end (printed below).

# %%
worst21 = int(P21[np.argmax(cost21["deepseek-v3"])])
print(f"DeepSeek-V3: the stages add up to {step21 * 1e3:.3f} ms at every P; P x slowest stage costs "
      + ", ".join(f"+{c - 1:.1%} at P={P}" for P, c in zip(P21, cost21["deepseek-v3"]) if P > 1)
      + f"; the worst split is P={worst21}")
# The plotted bars and crosses are the claim check's hand-derived stage floors and costs (claim 21).
check21 = claims.check(21)
assert f"({step21 * 1e3:.2f} ms per GPU" in check21.summary
for P in (1, 2, 4, 8):
    floors_txt, cost_txt = check21.evidence[f"P={P}: stage floors (hand)"].split("; slowest x P = ")
    hand = np.array([float(x) for x in floors_txt.removesuffix(" ms").split(", ")])
    assert np.allclose(pipes21["deepseek-v3"][P - 1].stages_s * 1e3, hand, rtol=2e-3, atol=5e-4), P
    assert abs(cost21["deepseek-v3"][P - 1] - float(cost_txt.split(" x")[0])) < 1e-3, P
kimi_costs = check21.evidence["kimi-k2 on 64 gb200: unpipelined step / slowest x P at P = 2, 4, 8"]
assert np.allclose(cost21["kimi-k2"][[1, 3, 7]], [float(x) for x in kimi_costs.split(" / ")[1].rstrip(" x").split(", ")],
                   atol=1e-3)
for ds in pipes21.values():
    assert all(abs(d.sum_of_stages_s / ds[0].sum_of_stages_s - 1) < 1e-9 for d in ds)  # nothing saved
assert min(c.min() for c in cost21.values()) >= 1 - 1e-9  # it can only cost

# %% [markdown]
# **Explore.** Move the pipeline stages PP and watch the right panel: the stage
# floors (bars) shrink as $1/\text{PP}$, but their sum stays the unpipelined step
# (dotted); with an uneven split the slowest stage (red) sets the pace. A
# configuration whose weights + KV exceed the GPU's HBM is drawn hatched grey.

# %% slideshow={"slide_type": "subslide"}
floors_explorer = explorers.pipeline_placement_explorer()
floors_explorer.widget

# %% [markdown]
# **Measured: a real two-stage pipeline.** Eight dense layers (256 × 256
# float32 matmuls) on this machine's two cores, as two MPI ranks
# (`mpi_bench.run_pipeline`, launched like chapter 5's collectives). Unpipelined,
# rank 0 runs all eight layers on 8 micro-batches of 16 tokens; pipelined, rank 0
# runs layers 0–3 and sends each micro-batch's activations to rank 1, which runs
# layers 4–7, so two micro-batches are in flight. 20 alternated rounds; the
# fastest round of each way counts (load only adds time). The prediction uses
# each stage's own measured compute time $t_i$ per micro-batch: a round takes
# $m \sum_i t_i$ on one rank and $(m + \text{PP} - 1) \max_i t_i$ pipelined.

# %%
from llmmath import measured, mpi_bench

pipe = mpi_bench.run_pipeline(n_procs=2)
pred_un, pred_pi = pipe.predicted_unpipelined_s_per_token(), pipe.predicted_pipelined_s_per_token()
print(f"stages: {pipe.stage_s[0] * 1e6:.0f} us and {pipe.stage_s[1] * 1e6:.0f} us per micro-batch of {pipe.batch}")
print(f"{'':<22} {'us/token':>9} {'predicted':>10} {'core-us/token':>14}")
for name, meas_s, pred_s, cores in (("unpipelined, 1 rank", pipe.unpipelined_s_per_token, pred_un, 1),
                                    ("pipelined, 2 ranks", pipe.pipelined_s_per_token, pred_pi, 2)):
    print(f"{name:<22} {meas_s * 1e6:>9.2f} {pred_s * 1e6:>10.2f} {cores * meas_s * 1e6:>14.2f}")
speedup = pipe.unpipelined_s_per_token / pipe.pipelined_s_per_token
core_ratio = 2 * pipe.pipelined_s_per_token / pipe.unpipelined_s_per_token
print(f"Two stages made tokens come {speedup:.2f}x faster (predicted {pred_un / pred_pi:.2f}x), at "
      f"{core_ratio:.2f}x the core-seconds per token (predicted {2 * pred_pi / pred_un:.2f}x): "
      + ("the work per token was not reduced, only spread over two cores, plus the pipe's fill and the "
         "stages' imbalance." if core_ratio >= 1 else
         "below 1 on this run, which a split of the same work cannot do by itself: the one-rank rounds ran "
         "slower than their stages (load, or a cache that holds one stage's weights but not all)."))
# What two busy cores cannot flip: two stages are not 2x slower per token than one, nor 4x faster.
measured.check("two stages spread the work; they neither remove it nor double it", lambda p: [
    measured.Fact("pipelined time per token / unpipelined", p.pipelined_s_per_token / p.unpipelined_s_per_token,
                  high=2, why="a pipe that serialised its stages and added hops would be slower than one rank"),
    measured.Fact("core-seconds per token, 2 ranks / 1 rank", 2 * p.pipelined_s_per_token / p.unpipelined_s_per_token,
                  low=0.5, why="splitting the same work over two cores cannot halve its core-seconds")],
    pipe, remeasure=lambda: mpi_bench.run_pipeline(n_procs=2))

# %%
v21 = claims.check(21)
assert v21.verdict == "holds"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claims 22 (56:04) and 25 (1:12:51) — weights shrink per GPU, the KV cache does not
#
# *Claim 22, paraphrased:* pipelining lets each rack hold only its share of the
# layers, which greatly eases the per-rack memory limit.
# *Claim 25, paraphrased:* it cannot do the same for the KV cache.
#
# Training's version of this accounting is in [chapter 10](10_training_at_scale.py): weights and optimizer state shrink by PP, but under 1F1B the first stage still holds PP micro-batches of activations, all $n_\ell$ layers' worth.
#
# **Derivation.** Per GPU, with expert parallelism EP inside a stage, PP
# stages and micro-batches of $b$ sequences (routed experts spread over the EP
# GPUs; attention and other dense weights replicated on each):
#
# $$\text{weights} \approx \frac{1}{\text{PP}}\Big(\frac{N_\text{routed}}{\text{EP}} + N_\text{other}\Big) b_w ,$$
#
# and exactly, stage by stage, its own layers' share: the first stage also
# holds the input embedding and the last the LM head, and 61 layers do not
# divide evenly, so the GPU that must fit is the busiest stage's, not this
# average (DeepSeek-V3 at EP64 in 8 stages: 1.38 times the even share; the
# library's `Model.stage_params` lists what each stage holds).
#
# For the KV cache, decode needs PP micro-batches in flight to keep PP stages
# busy, so $\text{PP}\,b$ sequences hold a cache, and each stage keeps $1/\text{PP}$ of the
# layers of each, spread over its EP GPUs:
#
# $$\text{KV} = \frac{(\text{PP}\,b)\,L\,\beta}{\text{PP}\,\text{EP}} = \frac{b\,L\,\beta}{\text{EP}}\quad\text{— the } \text{PP} \text{ cancels.}$$
#
# That is for stages of equal depth. The busiest stage holds $\lceil n_\ell/\text{PP}\rceil$
# layers, so when PP does not divide the layers its GPUs hold a little more
# than this: DeepSeek-V3's first stage at $\text{PP} = 4$ has 16 of 61 layers, 4.9%
# above a quarter. Pipelining never shrinks the KV per GPU; an uneven split
# grows it.

# %% slideshow={"slide_type": "subslide"}
fig, axes = plots.new_axes(2, width=5.0, height=3.8)
P = np.array([1, 2, 4, 8])
for ax, (model, chip, kw, L, title) in zip(axes, (
        ("deepseek-v3", "gb200", dict(ep=64, weight_dtype="fp8", batch=64), 131072,
         "DeepSeek-V3 on GB200, EP64, fp8, b=64, L=128k"),
        ("llama-3.1-405b", "h200", dict(tp=8, batch=8), 131072, "Llama-3.1-405B on H200, TP8, bf16, b=8, L=128k"))):
    hbm = hardware.get(chip).hbm_bytes
    mem = parallelism.memory_over_stages(model, P, hbm, context=L, **kw)
    w, kv = mem.weight_bytes / 1e9, mem.kv_bytes / 1e9
    for ok, wc, kc, extra in ((mem.fits, "C0", "C1", {}), (~mem.fits, "0.85", "0.65", dict(hatch="//", edgecolor="0.4", ls="--"))):
        ax.bar(np.flatnonzero(ok), w[ok], color=wc, **extra)
        ax.bar(np.flatnonzero(ok), kv[ok], bottom=w[ok], color=kc, **extra)
    ax.axhline(hbm / 1e9, color="k", lw=1.5)
    ax.text(len(P) - 0.5, hbm / 1e9, f" {chip} HBM", va="bottom", ha="right", fontsize=8)
    for j in np.flatnonzero(~mem.fits):
        ax.text(j, w[j] + kv[j], "does not fit", ha="center", va="bottom", fontsize=8, color="0.3")
    ax.set_xticks(range(len(P)), P.astype(str))
    ax.set_xlabel("pipeline stages P"); ax.set_ylabel("GB per GPU"); ax.set_title(title, fontsize=9)
    ax.bar([], [], color="C0", label="weights"); ax.bar([], [], color="C1", label="KV cache")
    ax.bar([], [], color="0.85", hatch="//", edgecolor="0.4", label="does not fit"); ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# Llama-3.1-405B on eight H200s at 128k context does not fit without a second
# stage: the weights halve at $\text{PP} = 2$, and the KV cache stays where it was.
#
# **Explore.** Move the stages PP, and the model, EP, TP, micro-batch and
# context: the bars (left) are weights and KV per GPU of the busiest stage for
# every PP; the weights fall nearly like $1/\text{PP}$, the KV does not move (claim 25).

# %% slideshow={"slide_type": "subslide"}
memory_explorer = explorers.pipeline_placement_explorer()
memory_explorer.controls["context"].value = 131072
memory_explorer.widget

# %%
v22 = claims.check(22)
assert v22.verdict == "holds if"
v25 = claims.check(25)
assert v25.verdict == "holds"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 24 (1:00:59) — no change to batch or latency
#
# *Claim, paraphrased:* in inference, pipelining neither helps nor hurts the
# batch size you need or the latency you get; it only uses less memory per rack.
#
# **Derivation.** Forward-only decode has no bubble only with $m = \text{PP}$
# micro-batches in flight (above), and each still needs the balance batch
# $b \approx B^*$ of chapter 1 to amortize its stage's weights. So the batch
# *per stage* is unchanged, but a replica now holds $\text{PP}\,b$ sequences at once
# (claim 25 uses exactly this). What the claim counts is the time from one token
# of a sequence to its next, and in decode that is a loop: a micro-batch crosses
# the $\text{PP} - 1$ stage boundaries inside the replica, and then the last stage's
# sampled tokens travel back to the first stage, which embeds them for the next
# step. That return is a hop too (a smaller message than the activations; we
# charge it a full hop, so the sum is an upper bound): PP hops per token, none
# with one stage. So a token's latency is the sum of the stage floors plus PP
# hops, or PP times the slowest stage if that is longer:
# $t = \max(\sum_i t_i + \text{PP}\,t_\text{hop},\; \text{PP} \max_i t_i)$ for $\text{PP} > 1$.
#
# **A hop is more than a wire latency.** DeepSeek's ISCA 2025 paper reports
# 2.8–3.7 µs for 64-*byte* messages measured CPU-side (our catalog marks that
# table `unverified`: no stored copy reached it). A pipeline hop moves the
# micro-batch's activations: with $b$ sequences over EP GPUs each GPU sends
# $b/\text{EP}$ tokens of $d$ bf16 values through its own NIC, then the next stage's
# kernels must start. The speaker guessed "a few milliseconds, maybe off by
# 10×"; the sum below is tens of **microseconds**. (The 77–360 µs of a DeepEP
# all-to-all are chapter 5's traffic, not a pipeline hop.)

# %%
print("published per-hop latencies:")
for k, v in parallelism.hop_latencies().items():
    print(f"  {k:<34} {v['seconds'] * 1e6:>8.2f} us  ({v.get('kind', '')})")

# %%
from llmmath.course.checks import ch06

b, E, d_model = 2048, 64, models.get("deepseek-v3").d_model
nic = hardware.system("gb200-nvl72").scale_out_bytes_per_s_per_package
act = b / E * d_model * 2
wire = parallelism.hop_latencies()["deepseek-ib-cross-leaf-64B"]["seconds"]
hop = wire + act / nic + ch06._LAUNCH_SYNC_S
print(f"activations per GPU per hop: {b} / {E} tokens x {d_model} x 2 bytes = {act / 1e3:.0f} kB; "
      f"at {nic / 1e9:.0f} GB/s: {act / nic * 1e6:.1f} us")
print(f"one hop: {wire * 1e6:.1f} us (64-byte latency) + {act / nic * 1e6:.1f} us (activations) + "
      f"{ch06._LAUNCH_SYNC_S * 1e6:.0f} us (assumed launch/sync) = {hop * 1e6:.1f} us")


def ring_hops(P):
    """Links one decode step crosses, counted on the ring of stages: s -> s + 1, and the last back to the first."""
    return sum(1 for s_ in range(P) if (s_ + 1) % P != s_)


def library_hops(P, probe_s=1.0):
    """Hops the library charges: with a 1 s hop the hop term outweighs P x the slowest stage (milliseconds)."""
    d0 = parallelism.pipelined_decode("deepseek-v3", "gb200", E, P, b, 8192, weight_dtype="fp8")
    d1 = parallelism.pipelined_decode("deepseek-v3", "gb200", E, P, b, 8192, hop_latency_s=probe_s,
                                      weight_dtype="fp8")
    return (d1.token_latency_s - d0.stages_s.sum()) / probe_s


for P in (1, 2, 8):
    print(f"P={P}: {max(P - 1, 0)} stage {'boundary' if P == 2 else 'boundaries'} inside the replica + "
          f"{1 if P > 1 else 0} return to the first stage = {ring_hops(P)} hops; the library charges "
          f"{library_hops(P):.3f}")
    assert abs(library_hops(P) - ring_hops(P)) < 1e-6
assert ring_hops(1) == 0 and ring_hops(2) == 2 and ring_hops(8) == 8   # P hops once P > 1, not P - 1
for key in ("deepseek-v3", "kimi-k2"):
    base = parallelism.pipelined_decode(key, "gb200", E, 1, b, 8192, weight_dtype="fp8")
    fit = parallelism.memory_over_stages(key, [1, 2, 4, 8], hardware.get("gb200").hbm_bytes, ep=E, batch=b,
                                         context=8192, weight_dtype="fp8")
    for j, P in enumerate((1, 2, 4, 8)):
        dp = parallelism.pipelined_decode(key, "gb200", E, P, b, 8192, hop_latency_s=hop, weight_dtype="fp8")
        print(f"{key:<12} P={P}: {P * b:>6} sequences in flight, token latency {dp.token_latency_s * 1e3:.3f} ms "
              f"({dp.token_latency_s / base.token_latency_s - 1:+.1%} vs one stage)"
              f"{'' if fit.fits[j] else '  [does not fit in HBM: not runnable]'}")

# %% slideshow={"slide_type": "subslide"}
speaker_hop = 3e-3  # the speaker's "a few milliseconds" per hop, as claim 24's check reads it
unchanged = 0.10    # claim 24's check: "essentially unchanged" is under 10% more token latency at P = 4
P24 = np.arange(1, 9)
pipes24 = {h: [parallelism.pipelined_decode("deepseek-v3", "gb200", E, P, b, 8192, hop_latency_s=h, weight_dtype="fp8")
               for P in P24] for h in (hop, speaker_hop)}
added24 = {h: np.array([d.token_latency_s / d.sum_of_stages_s - 1 for d in ds]) for h, ds in pipes24.items()}
hops_only24 = np.array([ring_hops(P) * hop / d.sum_of_stages_s for P, d in zip(P24, pipes24[hop])])
in_flight24 = np.array([d.tokens_per_s * d.token_latency_s for d in pipes24[hop]])
fig, (ax, ax2) = plots.new_axes(2, width=4.2, height=3.6)
many = P24 > 1  # one stage adds nothing: no point on a log axis
ax.semilogy(P24[many], added24[speaker_hop][many], "s-", color="C3", ms=5)
ax.semilogy(P24[many], added24[hop][many], "o-", color="C0", ms=5)
ax.semilogy(P24[many], hops_only24[many], "o:", color="C0", ms=3, mfc="none")
ax.axhline(unchanged, color="k", ls="--", lw=1)
# each line labelled beside it, placed from its own values (a legend would cover one of them)
ax.text(2, 0.7 * added24[speaker_hop].max(), f"speaker's {speaker_hop * 1e3:.0f} ms hop", color="C3", fontsize=8, va="bottom")
ax.text(4.3, 2 * added24[hop].max(), f"our {hop * 1e6:.0f} µs hop (solid)", color="C0", fontsize=8, va="bottom")
ax.text(8, 0.55 * hops_only24[-1], "the hops alone (dotted)", color="C0", fontsize=8, ha="right", va="top")
ax.text(2, unchanged, f"'unchanged': under {unchanged:.0%} at P = 4", fontsize=8, va="bottom")
ax.yaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v * 100:g}%"))
ax.set_ylim(1e-3, 10); ax.set_xticks(P24[many])
ax.set_xlabel("pipeline stages P"); ax.set_ylabel("token latency added vs one stage")
ax.set_title("DeepSeek-V3, 64 GB200s per stage", fontsize=10); ax.grid(True, which="major", alpha=0.3)
ax2.semilogy(P24, in_flight24, "o-", ms=5, base=2, label="in flight per replica, P b")
ax2.semilogy(P24, np.full(len(P24), b), "k--", lw=1, base=2, label="micro-batch per stage, b")
ax2.yaxis.set_major_formatter(mticker.StrMethodFormatter("{x:,.0f}"))
ax2.set_xticks(P24); ax2.set_xlabel("pipeline stages P"); ax2.set_ylabel("sequences")
ax2.set_title("the batch: per stage and per replica", fontsize=10)
ax2.grid(True, alpha=0.3); ax2.legend(fontsize=8, loc="upper left")
plt.show()

# %% [markdown]
# **Reading the figure.** Left: with hops of tens of microseconds (blue) the
# latency added stays near the dashed line of "unchanged". The hops alone
# (dotted, all PP of them together) would add much less; what sets the added
# latency is the slowest stage setting the pace, the uneven split of claim 21.
# With the speaker's milliseconds (red) the hops alone more than double the
# latency already at two stages. Right: each stage runs the same micro-batch $b$
# (dashed), but a replica holds $\text{PP}\,b$ sequences, so "the same batch" holds per
# stage, not per replica.

# %%
print(f"our {hop * 1e6:.1f} us hop adds " + ", ".join(f"{x:.1%} at P={P}" for P, x in zip(P24, added24[hop]) if P > 1)
      + f"; the hops' own share at P=8 is {hops_only24[-1]:.1%}; the speaker's {speaker_hop * 1e3:.0f} ms hop adds "
      f"{added24[speaker_hop][1]:.0%} at P=2 and {added24[speaker_hop][3]:.0%} at P=4")
# The plotted points are the claim check's numbers (claim 24): latency added at P = 2, 4, 8, sequences in flight,
# the speaker's hop at P = 4, and the threshold at P = 4.
check24 = claims.check(24)
assert (f"adding {added24[hop][1]:.1%} / {added24[hop][3]:.1%} / {added24[hop][7]:.1%} at P = 2 / 4 / 8"
        in check24.summary)
assert f"would add {added24[speaker_hop][3]:.0%} at P=4" in check24.summary
for P in (2, 4, 8):
    assert check24.evidence[f"P={P}"].startswith(f"{P} x {b} = {in_flight24[P - 1]:.0f} sequences in flight"), P
    assert f"(+{added24[hop][P - 1]:.1%})" in check24.evidence[f"P={P}"], P
assert added24[hop][3] < unchanged < added24[speaker_hop][3] and added24[speaker_hop][1] > 1
assert np.all(added24[hop] >= hops_only24 - 1e-12)  # the hops alone never add more than the total

# %% [markdown]
# **Explore** claim 24's quantities: the token latency as stages (blue) plus
# hops (orange), against PP times the slowest stage (black), and the $\text{PP}\,b$
# sequences a replica keeps in flight. Raise the hop latency to see where
# "unchanged" stops being true.

# %% slideshow={"slide_type": "subslide"}
decode_pipe_explorer = explorers.pipelined_decode_explorer()
decode_pipe_explorer.widget

# %% [markdown]
# **Measured: one hop on this machine.** The pipeline run above also
# ping-ponged one micro-batch's activations (16 tokens × 256 × 4 bytes) between
# its two ranks, 50 times. Chapter 5's model predicts it from a ping-pong sweep:
# $\alpha + M/\text{bw}$.

# %%
pp = mpi_bench.run(n_procs=2, sizes=[8, 128, 2048, 32768, 262144], ops=("pingpong",), progress=False)
alpha_pp, beta_pp = pp.fit()
hop_model = alpha_pp + pipe.hop_bytes / beta_pp
print(f"hop of {pipe.hop_bytes / 1024:.0f} KiB: {pipe.hop_median_s * 1e6:.1f} us measured (median); alpha + n/beta = "
      f"{alpha_pp * 1e6:.2f} + {pipe.hop_bytes / beta_pp * 1e6:.2f} = {hop_model * 1e6:.1f} us "
      f"({pipe.hop_median_s / hop_model:.2f}x). A stage computes {pipe.stage_s.max() * 1e6:.0f} us per micro-batch, "
      f"so a hop adds {pipe.hop_median_s / pipe.stage_s.max():.0%} of a stage to a token's latency here.")
# Medians of busy-polling ranks; a factor 5 either way still catches a wrong size or a unit slip.
def hop_facts(m):
    p, ping = m
    a, b = ping.fit()
    return [measured.Fact("measured hop / alpha + n / beta", p.hop_median_s / (a + p.hop_bytes / b), low=0.2, high=5,
                          why="a wrong size or a unit slip is off by 4x or 1000x")]


measured.check("a pipeline hop costs what a message of its size costs", hop_facts, (pipe, pp),
               remeasure=lambda: (mpi_bench.run_pipeline(n_procs=2),
                                  mpi_bench.run(n_procs=2, sizes=[8, 128, 2048, 32768, 262144], ops=("pingpong",),
                                                progress=False)))

# %%
v24 = claims.check(24)
assert v24.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 26 (1:13:10) — wide expert parallelism, little pipelining
#
# *Claim, paraphrased:* to serve a large MoE, spread experts over the whole
# scale-up domain and pipeline little or not at all — only enough to make the
# weights fit.
#
# **Evidence.** The published layouts (`lib/llmmath/data/deployments.toml`):

# %%
print(f"{'deployment':<28} {'phase':<8} {'GPUs':>5} {'EP':>4} {'attn TPxDP':>10} {'PP':>3} {'GPU':>6}")
for k, d in parallelism.deployments().items():
    print(f"{k:<28} {d['phase']:<8} {d['gpus']:>5} {d['expert_parallel']:>4} "
          f"{d['attention_tensor_parallel']:>4}x{d['attention_data_parallel']:<5} {d['pipeline_parallel']:>3} {d['gpu']:>6}")

# %% [markdown]
# Every layout uses $\text{PP} = 1$. On GB200 NVL72 racks, EP stays inside the rack.
# On 8-GPU H800/H100 nodes, operators push EP far past the NVLink domain over
# InfiniBand: each expert then sees a batch large enough to amortize its weights
# (chapter 3), and the H800's NVLink/IB gap is small. Would DeepSeek-V3 fit one
# NVL72 without pipelining?

# %%
deps = parallelism.deployments()
h800 = deps["deepseek-v3-report-decode"]
print(f"widest EP on 8-GPU nodes: EP{max(d['expert_parallel'] for d in deps.values() if 'GB200' not in d['gpu'])}; "
      f"H800 NVLink / InfiniBand per GPU: {h800['scale_up_bytes_per_s'] / h800['scale_out_bytes_per_s']:.1f}x")
m26 = parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=1, batch=4096, context=16384, weight_dtype="fp8")
print(f"DeepSeek-V3 on one NVL72, EP64, fp8, 4,096 sequences x 16k tokens: {float(m26.weight_bytes) / 1e9:.0f} GB "
      f"weights + {float(m26.kv_bytes) / 1e9:.0f} GB KV per GPU, of "
      f"{hardware.system('gb200-nvl72').hbm_bytes_per_package / 1e9:.0f} GB")

# %% slideshow={"slide_type": "subslide"}
# Left: each published layout's EP width over its scale-up domain (an NVL72 rack for GB200, else one 8-GPU node).
domain26 = {k: hardware.system("gb200-nvl72").packages if "GB200" in d["gpu"] else d["gpus_per_node"]
            for k, d in deps.items()}
ep_over26 = {k: d["expert_parallel"] / domain26[k] for k, d in deps.items()}
pp26 = sorted({d["pipeline_parallel"] for d in deps.values()})
who26 = {"deepseek-v3-report": "DeepSeek-V3 report", "deepseek-v3r1-day6": "DeepSeek day 6",
         "sglang-96xh100": "SGLang H100", "sglang-gb200-nvl72": "SGLang GB200"}
names26 = [f"{who26.get(k.rsplit('-', 1)[0], k.rsplit('-', 1)[0])}, {d['phase']}" for k, d in deps.items()]
# Right: weights + KV per GPU of DeepSeek-V3 and Kimi K2 on one rack, EP64, fp8, 4,096 sequences, against context.
B26, L26 = 4096, 16384  # claim 26's check: sequences on the rack, tokens of context each
ctx26 = (2 ** np.arange(10, 17.01, 0.25)).astype(int)
mem26 = {(key, P): np.array([parallelism.memory_per_gpu(key, ep=64, pp=P, batch=B26, context=L, weight_dtype="fp8")
                             .total_bytes for L in ctx26]) / 1e9
         for key, P in (("deepseek-v3", 1), ("kimi-k2", 1), ("deepseek-v3", 8))}
hbm26 = {key: hardware.system(key).hbm_bytes_per_package / 1e9 for key in ("gb200-nvl72", "gb300-nvl72")}
fig, (ax, ax2) = plots.new_axes(2, width=4.2, height=3.6)
rack = np.array([domain26[k] == hardware.system("gb200-nvl72").packages for k in deps])
ax.barh(np.flatnonzero(~rack), np.array(list(ep_over26.values()))[~rack], color="C3", label="8-GPU node")
ax.barh(np.flatnonzero(rack), np.array(list(ep_over26.values()))[rack], color="C0", label="NVL72 rack")
ax.axvline(1, color="k", ls="--", lw=1, label="EP = domain")
ax.set_xscale("log"); ax.set_yticks(range(len(names26)), names26); ax.invert_yaxis()
ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}×"))
ax.set_xlabel("EP width / scale-up domain (ratio of GPU counts)")
ax.set_title(f"published layouts, all PP = {pp26[0]}" if len(pp26) == 1 else "published layouts", fontsize=10)
ax.legend(fontsize=8, loc="lower right")
ax2.plot(ctx26, mem26[("deepseek-v3", 1)], "C0-", lw=2, label="DeepSeek-V3, P = 1")
ax2.plot(ctx26[::4], mem26[("kimi-k2", 1)][::4], "C1x", ms=7, mew=1.5, label="Kimi K2, P = 1")
ax2.plot(ctx26, mem26[("deepseek-v3", 8)], "C2--", lw=1.5, label="DeepSeek-V3, P = 8")
at26 = int(np.flatnonzero(ctx26 == L26)[0])
ax2.plot(L26, mem26[("deepseek-v3", 1)][at26], "ko", ms=6, mfc="none", mew=1.5,
         label=f"check: {B26:,} sequences × {L26 // 1024}k")
for key, ls in (("gb200-nvl72", "-"), ("gb300-nvl72", ":")):
    ax2.axhline(hbm26[key], color="k", ls=ls, lw=1.2)
    ax2.text(ctx26[0], hbm26[key], f" {key.split('-')[0].upper()} HBM, {hbm26[key]:.0f} GB", fontsize=8,
             ha="left", va="bottom")
ax2.set_xscale("log", base=2); ax2.set_ylim(0, 500)
ax2.set_xticks(ctx26[::8], [f"{L // 1024}k" for L in ctx26[::8]])
ax2.set_xlabel("context per sequence (tokens)"); ax2.set_ylabel("weights + KV per GPU (GB)")
ax2.set_title(f"one rack, EP64, fp8, {B26:,} sequences", fontsize=10); ax2.grid(True, alpha=0.3)
ax2.legend(fontsize=8, loc="upper left")
plt.show()

# %% [markdown]
# **Reading the figure.** Left: the GB200 layouts (blue) keep their expert
# group inside the rack, left of the dashed line; on 8-GPU nodes (red) EP runs
# well past the node over InfiniBand, and no layout pipelines. Right: without
# pipelining, one NVL72 holds either model with the check's batch and context
# (circle) well under a GB200's HBM. What fills a GPU as the context grows is
# the KV cache; pipeline stages (dashed) divide only the weights, so they move
# the point where the rack runs out by little (printed below).

# %%
def longest_context(totals, cap):
    """The context at which weights + KV reach ``cap`` GB: the KV grows linearly in it, so interpolating is exact."""
    return float(np.interp(cap, totals, ctx26))


for key, cap in hbm26.items():
    print(f"{key}: DeepSeek-V3 with {B26:,} sequences fits up to "
          f"{longest_context(mem26[('deepseek-v3', 1)], cap) / 1024:.0f}k tokens each at P = 1, "
          f"{longest_context(mem26[('deepseek-v3', 8)], cap) / 1024:.0f}k at P = 8")
# The plotted bars and points are the claim check's numbers (claim 26).
check26 = claims.check(26)
ratios26 = dict(item.rsplit(" ", 1) for item in check26.evidence["EP / scale-up domain"].split(", "))
assert ratios26 == {k: f"{r:.2g}x" for k, r in ep_over26.items()}
assert check26.evidence["pipeline degrees"] == ", ".join(f"{k} {d['pipeline_parallel']}" for k, d in deps.items())
m_ds = parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=1, batch=B26, context=L26, weight_dtype="fp8")
assert abs(m_ds.total_bytes / 1e9 - mem26[("deepseek-v3", 1)][at26]) < 1e-9
assert check26.evidence["DeepSeek-V3 on one NVL72 (EP64, fp8, 4096 sequences x 16k tokens)"].startswith(
    f"{float(m_ds.weight_bytes) / 1e9:.0f} GB weights + {float(m_ds.kv_bytes) / 1e9:.0f} GB KV per GPU")
assert f"({mem26[('deepseek-v3', 1)][at26]:.0f} of {hbm26['gb200-nvl72']:.0f} GB per GPU)" in check26.summary
assert f"Kimi K2 ({mem26[('kimi-k2', 1)][at26]:.0f} GB)" in check26.summary
# the check's point fits a GB200 (so a GB300 too) for both models: the crossing lies past it, as the figure shows
assert all(longest_context(mem26[(key, 1)], hbm26["gb200-nvl72"]) > L26 for key in ("deepseek-v3", "kimi-k2"))
assert np.allclose(np.diff(mem26[("deepseek-v3", 1)]) / np.diff(ctx26),
                   (mem26[("deepseek-v3", 1)][-1] - mem26[("deepseek-v3", 1)][0]) / (ctx26[-1] - ctx26[0]))

# %% [markdown]
# The same question for four models on one GB200 NVL72 rack (186 GB per GPU),
# 4,096 sequences of 16k tokens: the MoE models with EP64, the dense Llama with
# TP8 stages (it has no experts to spread). How many pipeline stages does each
# need before its weights + KV fit?

# %%
print(f"{'model':<16} {'placement':<10} " + " ".join(f"{'P=' + str(p):>16}" for p in (1, 2, 4, 8)))
for key, ep, tp, b26 in (("deepseek-v3", 64, 1, 4096), ("kimi-k2", 64, 1, 4096), ("qwen3-235b-a22b", 64, 1, 4096),
                         ("llama-3.1-405b", 1, 8, 4096 // 8)):
    mem = parallelism.memory_over_stages(key, [1, 2, 4, 8], hardware.get("gb200").hbm_bytes, ep=ep, tp=tp, batch=b26,
                                         context=16384, weight_dtype="fp8")
    cells = [f"{t / 1e9:>6.0f} GB {'fits' if ok else 'NO FIT':>6}" for t, ok in zip(mem.total_bytes, mem.fits)]
    print(f"{key:<16} {'EP' + str(ep) if ep > 1 else 'TP' + str(tp):<10} " + " ".join(f"{c:>16}" for c in cells))
    if not mem.fits.any():
        print(f"{'':<16} {'':<10} never fits: its KV cache alone is {mem.kv_bytes[0] / 1e9:.0f} GB per GPU at every P "
              f"(claim 25); only a smaller batch or context, or a wider EP/TP, helps")

# %% [markdown]
# (Llama-3.1-405B's row holds 512 sequences per TP8 group, 4,096 over the rack's
# eight groups.) **Explore.** Set EP to the domain (64), then look for the
# smallest PP that fits as you raise the batch or context: the text names it.

# %% slideshow={"slide_type": "subslide"}
layout_explorer = explorers.pipeline_placement_explorer()
layout_explorer.controls["log2_microbatch"].value = 12
layout_explorer.controls["context"].value = 16384
layout_explorer.widget

# %%
v26 = claims.check(26)
assert v26.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# | # | time | claim | verdict |
# |---|---|---|---|
# | 20 | 52:56 | boundary harmless if in-stage traffic ≳ 8× | **holds**: $2k\ell$ vs $\text{bw}_\text{up}/\text{bw}_\text{out}$ with the EP group inside the scale-up domain; 1–2 DeepSeek layers per stage suffice |
# | 21 | 55:35 | no saving in memory or compute time | **holds**: stage floors add up to the whole step; an uneven split only costs |
# | 22 | 56:04 | relieves per-rack memory | **holds if** "memory" means weights (÷P; DeepSeek-V3 and Kimi K2 on GB200/GB300 NVL72 alike); the KV cache does not shrink |
# | 24 | 1:00:59 | no effect on the batch needed or on latency | **holds if** "batch" is per stage ($\text{PP}\,b$ sequences in flight) and hops of tens of µs (not ms) count as unchanged |
# | 25 | 1:12:51 | KV cannot be sharded by stages | **holds**: $\text{PP}\,b\,L\beta/(\text{PP}\cdot\text{EP}) = bL\beta/\text{EP}$ |
# | 26 | 1:13:10 | EP to the domain, little PP | **holds if** the domain is a rack; on 8-GPU nodes practice goes past it over InfiniBand; PP = 1 everywhere |
#
# Exercises: `exercises/06_pipelining_exercises.py`.

# %% [markdown]
# **Read next.** [Chapter 7](07_training_economics.py) turns from serving to training: batch size,
# balancing costs, and how long to train. The training side of pipelining
# (activations in flight, the interleaved schedule) is in [chapter 10](10_training_at_scale.py).
# Outside reading: Huang et al., "GPipe" (arXiv:1811.06965), and Narayanan et al.,
# "Efficient large-scale language model training on GPU clusters using
# Megatron-LM" (arXiv:2104.04473) for 1F1B and interleaving.
