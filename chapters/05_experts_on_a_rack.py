# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 5 — Experts on a rack: scale-up, scale-out, and how big a model a domain can serve
#
# A mixture-of-experts layer scatters each token to a few experts that live on
# other GPUs and gathers the results back: an **all-to-all** ([glossary](../book/glossary.md#all-to-all)). Where that traffic
# runs — the fast **scale-up** fabric inside a domain ([glossary](../book/glossary.md#scale-up): [NVLink](../book/glossary.md#nvlink), AMD's Infinity Fabric,
# Google's TPU ICI) or the slower **scale-out** network between domains ([glossary](../book/glossary.md#scale-out)) — decides how
# large an expert layer can usefully be. Five claims:
#
# | # | time | claim, in our words |
# |---|---|---|
# | 16 | 36:41 | an expert layer's all-to-all needs the fast in-rack fabric, so one rack caps how big the layer can usefully be |
# | 17 | 39:35 | per GPU, scale-out bandwidth is about 8× below scale-up bandwidth |
# | 18 | 41:41 | of the jump from ~72 to ~500+ GPUs per domain, at least ~4× is real, bought with a harder rack |
# | 19 | 47:02 | compute cost bounds the active parameters; the scale-up domain bounds the total |
# | 27 | 1:18:23 | since Hopper, the bandwidth one model can stream grew fastest, because the domain grew ~8× |
#
# **After this chapter you can** compute the bytes and FLOPs of an expert
# layer's all-to-all, time it inside one domain and across two, measure real
# collectives with MPI and fit their latency and bandwidth, and read a system's
# spec sheet as the three numbers that bound the model it can serve.

# %% [markdown]
# **Before you start.** Read [chapter 1](01_batch_size.py) (expert parallelism at batch 1)
# and [chapter 3](03_balance_point.py) (the mixture of experts and its balance batch).
# Glossary entries that matter here: [scale-up](../book/glossary.md#scale-up), [scale-out](../book/glossary.md#scale-out),
# [NVLink](../book/glossary.md#nvlink), [NVL72](../book/glossary.md#nvl72), [InfiniBand](../book/glossary.md#infiniband), [all-to-all](../book/glossary.md#all-to-all),
# [collective](../book/glossary.md#collective), [alpha–beta model](../book/glossary.md#alphabeta-model) and [DeepEP](../book/glossary.md#deepep);
# symbols $\text{bw}_\text{up}$, $\text{bw}_\text{out}$, $\alpha$, $M$, $\text{bw}$, EP, $n_\text{dom}$,
# $b_\text{disp}$, $b_\text{comb}$ and $W_\text{domain}$ on the [notation](../book/notation.md) page. About an hour;
# the MPI measurement runs two processes on this machine.

# %%
import numpy as np
import matplotlib.pyplot as plt

from llmmath import claims, hardware, models, mpi_bench, network, parallelism, plots, serving, explorers, widgets

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The systems
#
# A scale-up **domain** is the set of GPUs that reach each other through the
# fast fabric: 8 on an HGX board, 72 in an [NVL72](../book/glossary.md#nvl72) rack, thousands in a TPU pod.
# The catalog (`lib/llmmath/data/systems.toml`, every figure sourced) counts
# them three ways — **packages** (what you cable), **dies** (a Blackwell package
# holds two) and the number in the product's **name** — and gives per-GPU
# bandwidths *per direction*. Derived columns: the domain's total HBM and total
# HBM bandwidth, and the scale-up ÷ scale-out ratio per GPU.

# %%
print(f"{'system':<19} {'year':>4} {'pkgs':>5} {'dies':>5} {'name':>5} {'HBM/GPU':>8} {'up GB/s':>8} "
      f"{'out GB/s':>8} {'up/out':>6} {'domain HBM':>10} {'domain TB/s':>11}")
for s in hardware.systems().values():
    print(f"{s.key:<19} {s.year:>4} {s.packages:>5} {s.dies:>5} {s.marketing_count:>5} "
          f"{s.hbm_bytes_per_package / 1e9:>6.0f}GB {s.scale_up_bytes_per_s_per_package / 1e9:>8.0f} "
          f"{s.scale_out_bytes_per_s_per_package / 1e9:>8.1f} {s.scale_up_over_scale_out:>6.1f} "
          f"{s.hbm_bytes / 1e12:>8.1f}TB {s.hbm_bytes_per_s / 1e12:>11.0f}")

# %% [markdown] slideshow={"slide_type": "slide"}
# Entries for 2025–2027 systems (GB300, Vera Rubin, Rubin Ultra, MI355X,
# Helios) are announced figures; `systems.toml` lists which fields no stored
# vendor page confirmed (`unverified`). `vr200-nvl144` is the 2025 announcement
# of the rack that shipped in 2026 as `vera-rubin-nvl72` (same 72 packages,
# faster HBM4); the checks count it once.
#
# ## Claim 16 (36:41) — one rack bounds an expert layer
#
# *Claim, paraphrased:* with experts spread over GPUs ([expert parallelism](../book/glossary.md#expert-parallelism), EP),
# every token must reach GPUs all over the domain, and only inside one rack is
# that [all-to-all](../book/glossary.md#all-to-all) fast; so a rack caps the expert layer.
#
# **Derivation.** Per MoE layer, each token is **dispatched** to its $k$ experts
# ($d$ values each, fp8 in DeepSeek-V3: $b_\text{disp} = 1$ byte) and the results
# are **combined** back (bf16, $b_\text{comb} = 2$). With the experts spread over EP GPUs and uniform
# placement, $(\text{EP}-1)/\text{EP}$ of those copies leave the GPU:
#
# $$\text{bytes per token per layer} = k\,d\,(b_\text{disp} + b_\text{comb})\,\frac{\text{EP}-1}{\text{EP}}.$$
#
# Each routed copy costs the expert $6\,d\,d_\text{ff}$ FLOPs (three matrices of a
# [SwiGLU](../book/glossary.md#transformer-layer) MLP of width $d_\text{ff}$), so the expert does
#
# $$\frac{\text{expert FLOPs}}{\text{all-to-all bytes}} = \frac{6\,d_\text{ff}}{b_\text{disp} + b_\text{comb}}$$
#
# per byte moved — $6 \cdot 2048 / 3 = 4096$ FLOP/byte for DeepSeek-V3 — whatever
# $k$ and $d$ are. Compare it with the chip's FLOP/s per link byte/s:

# %%
ratio = network.expert_flops_per_all_to_all_byte(2048)
print(f"DeepSeek-V3 expert: {ratio:.0f} FLOP per all-to-all byte")
print(f"{'system':<14} {'F / scale-up':>13} {'F / scale-out':>14}   (bf16 dense FLOP/s per link byte/s)")
for key in ("hgx-h100", "hgx-b200", "gb200-nvl72", "mi300x-8"):
    s = hardware.system(key)
    print(f"{key:<14} {s.bf16_flops_per_s_per_package / s.scale_up_bytes_per_s_per_package:>13.0f} "
          f"{s.bf16_flops_per_s_per_package / s.scale_out_bytes_per_s_per_package:>14.0f}")

# %% [markdown]
# Over the scale-up fabric the expert does more work per byte than the link can
# feed the chip at full speed (4096 > 2,200–2,900 at bf16 rates; at the fp8
# rates DeepSeek-V3's experts actually run, 4,400–5,800, so "nearly"): the
# all-to-all can hide behind the experts' compute. Over scale-out the link would
# need 20,000–50,000 FLOP per byte: it is 5–12× too slow.
#
# In **decode** the experts are memory-bound (each sees a small batch), so the
# better yardstick is the layer's whole decode floor. Put $B$ sequences on each
# rack's 64 GPUs (the speaker's DeepSeek-on-NVL72 layout: 256 experts, 4 per
# GPU). Inside one rack the all-to-all rides NVLink. Spread the layer over two
# racks at the same load per GPU and half of every GPU's traffic must leave
# through its [NIC](../book/glossary.md#scale-out): with $M$ the bytes each GPU sends in one all-to-all and
# $\text{bw}_\text{up}$, $\text{bw}_\text{out}$ one GPU's [scale-up](../book/glossary.md#scale-up) and scale-out bandwidths, the wire time
# becomes $\max\big(\tfrac12 M/\text{bw}_\text{up},\ \tfrac12 M/\text{bw}_\text{out}\big)$,
# i.e. $\tfrac12\,\text{bw}_\text{up}/\text{bw}_\text{out}$ times the one-rack time — 9× on a GB200 rack
# (over $n_\text{dom}$ racks, $(1 - 1/n_\text{dom})\,\text{bw}_\text{up}/\text{bw}_\text{out}$).
#
# Bandwidth is not the whole cost. Each collective also pays a per-message
# latency $\alpha$, and kernels reach only part of a link's bandwidth. DeepSeek's
# [DeepEP](../book/glossary.md#deepep), which these layouts use, sends every message of a dispatch (or a
# combine) at once, so a collective pays one $\alpha$, not one per peer: a few µs
# (DeepSeek measured 3.3 µs for 64 bytes over NVLink in a node, 3.7 µs over
# InfiniBand across leaf switches). Its low-latency kernels measure tens to
# hundreds of µs for a dispatch or combine at EP8–EP256 (chapter 6's hop table),
# 128 tokens per rank, each sent to 8 experts: megabytes per rank. At EP256 (32
# nodes) that is 0.82 of one 400 Gb/s NIC, so a big collective is mostly bytes
# over the NIC at that share. The EP8 row is one 8-GPU node, and its rate is
# about twice what one NIC carries: inside a node NVLink carries part of the
# traffic (the numbers below). The curves below therefore charge each layer
#
# $$t = 2\alpha + \max\!\Big(\frac{(1-f_\text{out})\,M}{0.82\,\text{bw}_\text{up}},\ \frac{f_\text{out}\,M}{0.82\,\text{bw}_\text{out}}\Big),\qquad f_\text{out} = 1 - 1/n_\text{dom}$$
#
# ($f_\text{out}$: the share of the traffic that leaves the domain).
#
# Inside one rack the two latencies are a large share of a short collective, so
# leaving the rack costs less than the 9× of bandwidth alone at a modest batch,
# and tends to 9× as the batch grows (the printout gives both).

# %%
deep = parallelism.hop_latencies()
tokens, k, d = 128, 8, models.get("deepseek-v3").d_model
for key, what, b_elem in (("deepep-ll-dispatch-ep8-h800", "dispatch EP8, fp8", 1),
                          ("deepep-ll-combine-ep256-h800", "combine EP256, bf16", 2)):
    t, sent = deep[key]["seconds"], tokens * k * d * b_elem
    rate, nic = sent / t, 400e9 / 8
    where = (f"{rate / nic:.1f}x what one 400 Gb/s NIC carries (50 GB/s): not all of it crossed a NIC"
             if rate > 1.5 * nic else f"the order of a 400 Gb/s NIC's 50 GB/s: bandwidth-bound")
    print(f"DeepEP {what}: {tokens} tokens x {k} experts x {d} x {b_elem} B = {sent / 1e6:.1f} MB per rank in "
          f"{t * 1e6:.0f} us -> {rate / 1e9:.0f} GB/s effective, {where} (a small-message RDMA hop is ~"
          f"{deep['rdma-nic-one-way-small-message']['seconds'] * 1e6:.0f} us)")

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=7, height=4.2)
ds = models.get("deepseek-v3")
B = np.logspace(np.log10(64), np.log10(65536), 60)
L16, hbm_gb200 = 4096, hardware.system("gb200-nvl72").hbm_bytes_per_package
# the two floors nearly coincide: DeepSeek-V3's drawn wide and pale underneath, Kimi K2's thin on top, so both show
for key, color, lw, alpha in (("deepseek-v3", "k", 5, 0.35), ("kimi-k2", "C2", 1.8, 1.0)):
    rack = parallelism.stage_deployment(key, "gb200", 64, 1, weight_dtype="fp8")   # 64 GPUs, DP attention, EP64
    layer = rack.decode_stages(B, L16).floor_s[0] / models.get(key).n_layers
    ok = parallelism.fits_per_gpu(key, hbm_gb200, ep=64, batch=B, context=L16, weight_dtype="fp8")
    ax.loglog(B[ok], layer[ok], "-", color=color, lw=lw, alpha=alpha,
              label=f"{key}: one layer's decode floor (64 x GB200, fp8, L={L16})")
    ax.loglog(B[~ok], layer[~ok], "--", color="0.6", lw=2)
    two = parallelism.moe_layer_all_to_all_s(ds, "gb200-nvl72", 64, B, racks=2)
    at = int(np.argmin(np.abs(B - 4096)))
    print(f"{key}: one layer's floor {layer[at] * 1e6:.0f} us per GPU at B = {B[at]:.0f}; the two-rack all-to-all "
          f"passes it from B = {B[two > layer][0]:.0f}; weights + KV exceed 64 x {hbm_gb200 / 1e9:.0f} GB from "
          f"B = {B[~ok][0]:.0f} per rack (grey dashed: not a runnable configuration)")
for racks, style in ((1, "-"), (2, "--"), (4, ":")):
    ax.loglog(B, parallelism.moe_layer_all_to_all_s(ds, "gb200-nvl72", 64, B, racks=racks), style, color="C3",
              label=f"all-to-all, layer over {racks} rack(s)")
ax.set_xlabel("decode batch per rack (sequences)"); ax.set_ylabel("time per MoE layer (s)")
one_rack = parallelism.moe_layer_all_to_all_s(ds, "gb200-nvl72", 64, B, racks=1)
two_rack = parallelism.moe_layer_all_to_all_s(ds, "gb200-nvl72", 64, B, racks=2)
wire_ratio = parallelism.moe_layer_all_to_all_s(ds, "gb200-nvl72", 64, B[-1], racks=2, latency_s=0, achieved_fraction=1) / \
    parallelism.moe_layer_all_to_all_s(ds, "gb200-nvl72", 64, B[-1], racks=1, latency_s=0, achieved_fraction=1)
print(f"two racks / one rack: {two_rack[at]/one_rack[at]:.1f}x at B = {B[at]:.0f} per rack (the two latencies are "
      f"{2 * deep['deepseek-nvlink-intra-node-64B']['seconds'] / one_rack[at]:.0%} of the one-rack time), "
      f"{two_rack[-1] / one_rack[-1]:.1f}x at B = {B[-1]:,.0f}; bandwidth alone {float(wire_ratio):.1f}x")
assert two_rack[-1] / one_rack[-1] > two_rack[at] / one_rack[at] and abs(two_rack[-1] / one_rack[-1] / wire_ratio - 1) < 0.1
ax.set_title(f"DeepSeek-V3 and Kimi K2 on GB200 NVL72: leaving the rack costs "
             f"{two_rack[0] / one_rack[0]:.0f}-{two_rack[-1] / one_rack[-1]:.0f}x\n(grey dashed: does not fit in HBM)",
             fontsize=10)
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# The layer floor is a GPU's in the rack's own layout (chapter 6): each GPU
# serves $B/64$ sequences, reads its own copy of the attention and other
# non-expert weights, its 4 (DeepSeek-V3) or 6 (Kimi K2) experts, and its
# sequences' KV cache. Pooling those bytes over the 64 GPUs, as if any GPU could
# read any weight, would make the floor 1.3–1.6× shorter and the all-to-all
# look relatively larger. Kimi K2 has the same $d = 7168$ and $k = 8$ as
# DeepSeek-V3, so its all-to-all curves are DeepSeek's (the red lines serve
# both); per GPU its layer reads almost the same bytes (fewer heads and one dense
# layer leave less to replicate, 384 experts put more on each GPU), so the two
# floors nearly coincide. The printout above gives where the two-rack
# all-to-all passes them.

# %% [markdown]
# **Explore.** Change the system (its scale-up/scale-out ratio), the racks the
# layer spans, the GPUs per rack, the context and the batch.

# %% slideshow={"slide_type": "subslide"}
ep_explorer = explorers.expert_parallel_explorer()
ep_explorer.widget

# %% [markdown]
# **Practice.** DeepSeek serves V3 with EP320 across 40 nodes of 8 H800s (its
# report, section 3.4) — far past an 8-GPU NVLink domain. It can, because the
# H800's export-limited NVLink (160 GB/s) is only 3.2× its InfiniBand (50 GB/s),
# so leaving the node costs little extra, and because it overlaps the
# all-to-all of one micro-batch with the compute of another. The bound is a cost
# cliff of height $(1-1/n_\text{dom})\,\text{bw}_\text{up}/\text{bw}_\text{out}$ over $n_\text{dom}$ domains, not a wall.

# %%
v16 = claims.check(16)
assert v16.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Measured: real collectives and the alpha–beta model
#
# The all-to-all times above come from the **alpha–beta model** ([glossary](../book/glossary.md#alphabeta-model)): a message of
# $M$ bytes costs $\alpha + M/\text{bw}$, with $\alpha$ the per-message latency (s) and
# $\text{bw}$ the link bandwidth (bytes/s). The literature calls the bandwidth term $\beta$
# (often in seconds per byte, the inverse); in this course $\beta$ is the KV bytes
# per token of chapters 1, 2 and 8, so here it is $\text{bw}$ (the printout below still says
# `beta`). For $n$ ranks (chips) the standard [collectives](../book/glossary.md#collective) cost
#
# | collective | time |
# |---|---|
# | all-gather, reduce-scatter (ring) | $(n-1)\alpha + \frac{n-1}{n}\,M/\text{bw}$ |
# | all-reduce (ring) | $2(n-1)\alpha + 2\frac{n-1}{n}\,M/\text{bw}$ |
# | all-to-all (pairwise) | $(n-1)\alpha + \frac{n-1}{n}\,M/\text{bw}$ |
# | all-to-all, every message at once (DeepEP, the curves above) | $\alpha + \frac{n-1}{n}\,M/\text{bw}$ |
#
# Here is the model against real MPI collectives (mpi4py over MPICH from PyPI),
# on 2 processes of this machine: $\alpha$ and $\text{bw}$ are fitted from a
# ping-pong sweep, then every collective is *predicted* from them. On one
# machine the "network" is shared memory, so $\text{bw}$ is a memory-copy speed. The
# same call runs on real nodes: `mpi_bench.run(n_procs=16, hostfile="hosts")`
# (or launch `python -m llmmath.demos.mpi_collectives` with your own `mpiexec`/`srun`
# and load its JSON with `mpi_bench.CollectiveResults.from_json`).

# %%
MiB = 2**20
mpi = mpi_bench.run(n_procs=2, sizes=sorted(set(mpi_bench.DEFAULT_SIZES) | {MiB, 3 * MiB, 6 * MiB, 8 * MiB, 12 * MiB, 16 * MiB}))
alpha, beta = mpi.fit()
print(f"fitted from ping-pong: alpha = {alpha * 1e6:.1f} us, beta = {beta / 1e9:.1f} GB/s; "
      f"local vector add gamma = {mpi.reduce_bytes_per_s / 1e9:.1f} GB/s")
# measured / predicted, median over the messages of 1 MiB and more, and over the mid sizes (8 KiB .. 1 MiB)
ratio = {op: mpi.ops[op][1] / mpi.predicted(op) for op in mpi.ops}
large = {op: mpi.ops[op][0] >= MiB for op in mpi.ops}
mid = {op: (mpi.ops[op][0] >= 8 * 1024) & (mpi.ops[op][0] < MiB) for op in mpi.ops}
big = {op: float(np.median(ratio[op][large[op]])) for op in mpi.ops}
midr = {op: float(np.median(ratio[op][mid[op]])) for op in mpi.ops}
print("measured / predicted, >= 1 MiB:", ", ".join(f"{k} {v:.2f}" for k, v in big.items()))
print("measured / predicted, 8 KiB-1 MiB:", ", ".join(f"{k} {v:.2f}" for k, v in midr.items()))

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=7, height=4.5)
mpi_bench.plot(mpi, ax=ax)
plt.show()

# %%
def _within(r):
    lo, hi = min(r.values()), max(r.values())
    return f"{lo:.1f}-{hi:.1f}x the prediction"


print(f"Ping-pong was fitted to the model, yet its messages of 1 MiB and more run at {big['pingpong']:.2f}x the fit "
      f"and its mid sizes (8 KiB-1 MiB, in and out of cache) at {midr['pingpong']:.2f}x. The collectives, predicted "
      f"from ping-pong alone, land at {_within({k: v for k, v in big.items() if k != 'pingpong'})} for large "
      f"messages and {_within({k: v for k, v in midr.items() if k != 'pingpong'})} for mid sizes (all-reduce "
      f"includes its arithmetic, (p-1)/p n / gamma).")

# %% [markdown]
# These ratios move from run to run on a shared 2-core machine (both ranks
# compete for one memory bus, and other processes take cores). That is the
# alpha–beta model's usual accuracy: good for deciding which term dominates,
# not for the last 2×. All-to-all on 2 ranks can even beat it: half of each
# buffer stays local, and shared memory copies the other half faster than
# ping-pong's round trips suggest.
#
# **Check** — on what a busy machine cannot flip (CI runs other notebooks on the
# same 2 cores, which can slow any one size of any collective several times):
# small messages cost about the latency whatever their size; at 1 MiB and more
# every collective takes many times the latency, and time grows in proportion
# to size (a robust slope: the median of all pairwise slopes, pooled over the
# four operations, so one slowed sample cannot move it); and each operation's
# large messages stay within 20× of the model, either way (13× was seen with
# four programs competing for the 2 cores; 1–2× on a quiet machine).

# %%
from llmmath import kernels, measured

MPI_SIZES = sorted(set(mpi_bench.DEFAULT_SIZES) | {MiB, 3 * MiB, 6 * MiB, 8 * MiB, 12 * MiB, 16 * MiB})


def pooled_slope(res):
    """Median of every pairwise log-log slope of time against size over messages >= 1 MiB, pooled over ops."""
    pairwise = []
    for op, (n, t) in res.ops.items():
        keep = n >= MiB
        lx, ly = np.log(n[keep]), np.log(t[keep])
        i, j = np.triu_indices(lx.size, k=1)
        pairwise += list((ly[j] - ly[i]) / (lx[j] - lx[i]))
    return float(np.median(pairwise))


def mpi_facts(res):
    """The physical facts of the collectives' timings (see the check above)."""
    a, b = res.fit()
    facts = [measured.Fact("fitted beta (ping-pong bandwidth)", b, low=1e8, unit=" B/s",
                           why="any transport between two ranks moves over 0.1 GB/s; a unit slip is off by 1e3")]
    for op, (n, t) in res.ops.items():
        keep = n >= MiB
        facts += [
            measured.Fact(f"{op}: slowest / fastest of 8-128 B", t[:3].max() / t[:3].min(), high=3,
                          why="tiny messages all cost about alpha"),
            measured.Fact(f"{op}: fastest >= 1 MiB / slowest tiny", t[keep].min() / t[:3].max(), low=5,
                          why="1 MiB and more is bandwidth-bound"),
            measured.Fact(f"{op}: median measured / predicted >= 1 MiB",
                          float(np.median(t[keep] / res.predicted(op)[keep])), low=0.05, high=20,
                          why="the alpha-beta model within 20x either way")]
    return facts + [measured.Fact("pooled robust slope of time against size >= 1 MiB", pooled_slope(res), low=0.5,
                                  high=2, unit="", why="time in proportion to size gives 1")]


for op in mpi.ops:
    n, t = mpi.ops[op]
    big_t = t[large[op]]
    print(f"{op:<10} small-message spread {t[:3].max() / t[:3].min():.2f}x; >= 1 MiB: {big_t.min() / t[:3].max():.0f}x "
          f"the tiny-message time, slope {kernels.loglog_slope(n[large[op]], big_t):.2f}, {big[op]:.2f}x the model")
print(f"pooled robust slope over messages >= 1 MiB: {pooled_slope(mpi):.2f} (time proportional to size: 1)")
measured.check("collectives: latency for tiny messages, bandwidth for large", mpi_facts, mpi,
               remeasure=lambda: mpi_bench.run(n_procs=2, sizes=MPI_SIZES))

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 17 (39:35) — scale-out is ~8× slower than scale-up
#
# *Claim, paraphrased:* per GPU, the link to the data-center network carries
# roughly an eighth of what the in-rack fabric carries.
#
# **Derivation.** Divide the per-GPU scale-up bandwidth by the per-GPU NIC
# bandwidth, both per direction. HGX H100: 450 GB/s NVLink over one 400 Gb/s
# (50 GB/s) NIC = 9. GB200 NVL72: 900 GB/s over the same 400 Gb/s NIC = 18;
# GB300 doubles the NIC (800 Gb/s) and returns to 9.

# %% slideshow={"slide_type": "subslide"}
gpu_sys = [s for s in hardware.systems().values() if s.vendor in ("NVIDIA", "AMD") and np.isfinite(s.scale_up_over_scale_out)]
fig, ax = plots.new_axes(width=8, height=3.8)
ax.bar([s.key for s in gpu_sys], [s.scale_up_over_scale_out for s in gpu_sys], color="C0")
ax.axhline(8, color="C3", ls="--", label="the claim: 8x")
ax.set_ylabel("scale-up / scale-out bandwidth per GPU")
ax.set_title("Per-GPU scale-up over scale-out, per direction"); ax.legend()
ax.tick_params(axis="x", rotation=45, labelsize=9); ax.grid(True, axis="y", alpha=0.3)
plt.show()

# %% [markdown]
# **Explore.** Pick a system and a baseline: the left panel counts the domain
# three ways, the right shows the per-GPU scale-out and scale-up bandwidths
# (their ratio is claim 17's "8×") beside the per-GPU and whole-domain HBM
# bandwidth. Watch the up/out ratio in the text as you switch systems.

# %% slideshow={"slide_type": "subslide"}
scale_explorer = explorers.scale_domain_explorer()
scale_explorer.widget

# %%
v17 = claims.check(17)
assert v17.verdict == "holds"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 18 (41:41) — bigger domains: at least 4× is real
#
# *Claim, paraphrased:* NVIDIA's domains went from 8 (Hopper) to 72 (Blackwell)
# mostly by packaging choice, and the next jump, to "500-something", is partly a
# change in how GPUs are counted; but at least a 4× gain is real, won by a much
# harder rack design.
#
# **Derivation.** Count each domain three ways. NVL72 holds 72 packages with
# 144 dies; Rubin Ultra "NVL576" holds 144 packages with 4 dies each — 576 dies.
# So the name grows 8×, the dies 4×, the packages (what must be cabled) 2×.

# %% slideshow={"slide_type": "subslide"}
keys = ["hgx-h100", "gb200-nvl72", "vr200-nvl144", "rubin-ultra-nvl576"]
fig, ax = plots.new_axes(width=7, height=3.8)
x = np.arange(len(keys))
for i, (attr, label) in enumerate((("packages", "packages"), ("dies", "dies"), ("marketing_count", "number in the name"))):
    ax.bar(x + (i - 1) * 0.27, [getattr(hardware.system(k), attr) for k in keys], 0.27, label=label)
ax.set_xticks(x, keys); ax.set_yscale("log"); ax.set_ylabel("count in one scale-up domain")
ax.set_title("Domain size, counted three ways"); ax.legend(fontsize=8); ax.grid(True, axis="y", alpha=0.3)
plt.show()

# %% [markdown]
# **Explore.** The same explorer, here Rubin Ultra NVL576 against GB200 NVL72:
# move the system and watch the three growth factors (packages, dies, name)
# in the text disagree.

# %% slideshow={"slide_type": "subslide"}
count_explorer = explorers.scale_domain_explorer(system="rubin-ultra-nvl576", baseline="gb200-nvl72")
count_explorer.widget

# %%
v18 = claims.check(18)
assert v18.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 19 (47:02) — active parameters by compute, total by the domain
#
# *Claim, paraphrased:* how many parameters a token uses is limited by what the
# FLOPs cost; how many parameters the model has in total is limited by the size
# of the scale-up domain.
#
# **Derivation.** At saturation, cost per token is $2N_\text{act}/F$
# chip-seconds (chapter 1): active parameters are priced by compute. Total
# parameters must (a) fit in the domain's HBM, unless pipelined over several
# domains (chapter 6 shows pipelining removes that limit), and (b) be read
# once per step: $t_\text{step} \ge N_\text{tot} b_w / W_\text{domain}$, with $W_\text{domain}$ the HBM bandwidth of
# all the domain's chips together. (b) survives
# pipelining, because the stages run one after another. So at a step-time
# target $t^*_\text{step}$ a domain can serve at most $N_\text{tot} \le t^*_\text{step} W_\text{domain}/b_w$.

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=7.5, height=4)
t_star = 0.02
sys_keys = ["hgx-a100", "hgx-h100", "hgx-h200", "hgx-b200", "mi300x-8", "gb200-nvl72", "vera-rubin-nvl72"]
cap = [hardware.system(k).hbm_bytes / 1.0 for k in sys_keys]
bw = [t_star * hardware.system(k).hbm_bytes_per_s / 1.0 for k in sys_keys]
x = np.arange(len(sys_keys))
ax.bar(x - 0.2, np.array(cap) / 1e12, 0.4, label="fits in HBM (fp8), T params")
ax.bar(x + 0.2, np.array(bw) / 1e12, 0.4, label="readable in a 20 ms step (fp8), T params")
for name, m in (("DeepSeek-V3", "deepseek-v3"), ("Kimi K2", "kimi-k2")):
    ax.axhline(models.get(m).total_params / 1e12, ls=":", color="gray")
    ax.text(len(sys_keys) - 0.6, models.get(m).total_params / 1e12, f"{name} ", va="bottom", ha="right", fontsize=8)
ax.set_xticks(x, sys_keys, rotation=30, fontsize=9); ax.set_yscale("log"); ax.set_ylabel("total parameters (T)")
ax.set_title("What one domain can hold, and what it can read per step"); ax.legend(fontsize=8)
ax.grid(True, axis="y", alpha=0.3)
plt.show()

# %% [markdown]
# **Explore.** Pick a system, a step-time target and a batch: the red line is
# the total the domain can read in one step, the green dashed line what fits in
# its HBM, the orange line the active parameters its FLOP/s allow. Models drawn
# as grey crosses do not fit weights + KV in the domain at that batch and context.

# %% slideshow={"slide_type": "subslide"}
params_explorer = explorers.domain_params_explorer()
params_explorer.widget

# %%
v19 = claims.check(19)
assert v19.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 27 (1:18:23) — the domain's bandwidth grew fastest
#
# *Claim, paraphrased:* what matters about a big domain is the HBM bandwidth it
# can apply to one model, and that has grown fastest since Hopper: the domain
# grew ~8× while, in the speaker's words, each GPU's bandwidth grew only
# 1.5–2× per generation (the cell below measures that step too).
#
# **Derivation.** $W_\text{domain} = \text{packages} \times W$ (one GPU package's $W$): the
# domain's growth multiplies the chip's. From HGX H100 to GB200 NVL72 (computed
# below from the systems catalog), and the weight-read latency floor of a model
# that fills the domain falls by the product.

# %%
h_, g_ = hardware.system("hgx-h100"), hardware.system("gb200-nvl72")
dom_x = g_.packages / h_.packages
gpu_x = g_.hbm_bytes_per_s_per_package / h_.hbm_bytes_per_s_per_package
agg_x = g_.hbm_bytes_per_s / h_.hbm_bytes_per_s
print(f"domain {h_.packages} -> {g_.packages} GPUs: {dom_x:.0f}x; per GPU {h_.hbm_bytes_per_s_per_package / 1e12:.2f} -> "
      f"{g_.hbm_bytes_per_s_per_package / 1e12:.0f} TB/s: {gpu_x:.2f}x; aggregate {h_.hbm_bytes_per_s / 1e12:.1f} -> "
      f"{g_.hbm_bytes_per_s / 1e12:.0f} TB/s: {agg_x:.1f}x")
print(f"So 'about 8x' is the domain's growth (really {dom_x:.0f}x), not the bandwidth's: read as 'scale-up memory "
      f"bandwidth grew ~8x' it is wrong by {agg_x / 8:.1f}x; the bandwidth one model can stream grew {agg_x:.1f}x.")
print(f"The per-GPU step from H100 to GB200 is {gpu_x:.2f}x, " + ("above" if gpu_x > 2 else "within")
      + " the speaker's '1.5-2x per generation'" + (": the chip grew faster than the claim allows, and the domain "
                                                     "faster still" if gpu_x > 2 else ""))
assert gpu_x > 2 and dom_x > gpu_x          # what the line above says: per GPU above 2x, the domain above that

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=7, height=4)
nv = ["hgx-a100", "hgx-h100", "hgx-h200", "hgx-b200", "gb200-nvl72", "gb300-nvl72", "vera-rubin-nvl72", "rubin-ultra-nvl576"]
years = [hardware.system(k).year for k in nv]
ax.semilogy(years, [hardware.system(k).hbm_bytes_per_s / 1e12 for k in nv], "o-", label="domain HBM bandwidth (TB/s)")
ax.semilogy(years, [hardware.system(k).hbm_bytes_per_s_per_package / 1e12 for k in nv], "s--", label="per-GPU HBM bandwidth (TB/s)")
for k, yv in zip(nv, years):  # names beside each point, horizontal; GB200 to the left (GB300 shares its height)
    left = k == "gb200-nvl72"
    ax.annotate(k, (yv, hardware.system(k).hbm_bytes_per_s / 1e12), xytext=(-6 if left else 6, 0),
                textcoords="offset points", fontsize=8, va="center", ha="right" if left else "left")
ax.set_xlim(years[0] - 0.5, years[-1] + 2.2)
ax.set_xlabel("year"); ax.set_ylabel("TB/s"); ax.set_title("NVIDIA scale-up domains: the domain outgrew the chip")
ax.grid(True, which="both", alpha=0.3); ax.legend(fontsize=8, loc="lower right")
plt.show()

# %% [markdown]
# **Explore.** Move the system along NVIDIA's line (HGX H100 → GB200 NVL72 → Rubin
# Ultra) with HGX H100 as baseline: the text splits the domain's bandwidth
# growth into packages × per-GPU growth.

# %% slideshow={"slide_type": "subslide"}
bandwidth_explorer = explorers.scale_domain_explorer(system="gb200-nvl72", baseline="hgx-h100")
bandwidth_explorer.widget

# %%
v27 = claims.check(27)
assert v27.verdict == "holds"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# | # | time | claim | verdict |
# |---|---|---|---|
# | 16 | 36:41 | an expert layer cannot usefully outgrow one rack | **holds if** read as a cost cliff: crossing racks multiplies the all-to-all by up to ½·bw_up/bw_out (9× on GB200 at large batch; 6.6× at 4,096 sequences a rack, where each collective's per-message latency weighs on the short in-rack time); DeepSeek crosses nodes anyway where that ratio is 3.2 |
# | 17 | 39:35 | scale-out ≈ 8× slower | **holds**: 6–18× across GPU systems, median 9× |
# | 18 | 41:41 | ≥ 4× of the domain jump is real | **holds if** counted in dies or bandwidth (4×, 8×); in packages it is 2× |
# | 19 | 47:02 | active by compute, total by the domain | **holds if** "domain" means its bandwidth: capacity is lifted by pipelining, the read-time floor is not (DeepSeek-V3 and Kimi K2 at fp8: 25 and 38 ms on an HGX H100, under 2 ms on an NVL72) |
# | 27 | 1:18:23 | domain bandwidth grew fastest | **holds**: the domain's growth times the chip's (HGX H100 → NVL72, printed above); the ~8× is the domain, not the bandwidth |
#
# Exercises: `exercises/05_experts_on_a_rack_exercises.py`.

# %% [markdown]
# **Read next.** [Chapter 6](06_pipelining.py) cuts a model into pipeline stages and asks what
# that saves and what it cannot, with the expert-parallel groups of this chapter
# inside each stage. Outside reading: DeepSeek's DeepEP repository
# (github.com/deepseek-ai/DeepEP) for the all-to-all kernels, and Thakur,
# Rabenseifner and Gropp, "Optimization of collective communication operations in
# MPICH" (2005) for the collective costs in the table above.
