# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 0 — Rooflines: the two times behind every number in this course
#
# **Where the course comes from.** A long interview with a chip architect, Reiner
# Pope (on Dwarkesh Patel's podcast, April 2026), makes 40 claims about the math of
# training and serving large language models, each at a time in the recording;
# every chapter restates a few of them in its own words and checks each one with
# the numbers of real chips and models (the claims index lists all 40).
#
# **How to use the course.** Each chapter is a notebook you run top to bottom.
# Every number comes from the shared library `llmmath` (installed from `lib/`),
# which computes it from a catalog of real chips and real models, each figure
# with its source. Cells that end in a **check** recompute a claim and fail if the
# numbers stop supporting it. Sliders let you change the inputs; a [kernel](../book/glossary.md#kernel) demo
# measures the effect on the machine you are using (a GPU through
# [CuPy](../book/glossary.md#cupy-and-numpy) if you have one, otherwise NumPy on the CPU; set
# `LLMMATH_DEVICE=cpu` to force the CPU).
#
# **After this chapter you can** turn any [kernel](../book/glossary.md#kernel) (one function a chip
# runs: a matrix multiply, a copy) into two times — arithmetic over a rate,
# bytes over a bandwidth — read a chip's datasheet as a
# [roofline](../book/glossary.md#roofline), and say whether a kernel on that chip is
# [compute-bound or memory-bound](../book/glossary.md#compute-bound-and-memory-bound).

# %% [markdown]
# **Before you start.** This is the first chapter: read the
# [prerequisites](../book/prerequisites.md) page first if matrix-multiply costs, a
# transformer's layers or orders of magnitude feel rusty. Entries that matter here:
# [FLOP](../book/glossary.md#flop), [HBM](../book/glossary.md#hbm),
# [arithmetic intensity](../book/glossary.md#arithmetic-intensity),
# [roofline](../book/glossary.md#roofline) and [balance point](../book/glossary.md#balance-point);
# symbols $F$, $W$, $C$, $I$, $B$, $d$ on the [notation](../book/notation.md) page (one meaning
# each, all course long). About 45 minutes, most of it in section 4's measurements.

# %%
import numpy as np
import matplotlib.pyplot as plt
import ipywidgets as W

import llmmath as lm
from llmmath import hardware, roofline, kernels, machine, measured, plots, explorers, widgets
from llmmath.units import fmt_bytes_per_s, fmt_flops_per_s, fmt_seconds

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 1. The two times
#
# A chip does two things for a kernel: arithmetic and data movement from its
# main memory ([HBM](../book/glossary.md#hbm), high-bandwidth memory, on an accelerator; DRAM on a
# CPU). With peak arithmetic rate $F$ ([FLOP](../book/glossary.md#flop)/s: floating-point
# operations per second) and [memory bandwidth](../book/glossary.md#memory-bandwidth) $W$
# (bytes/s), both for one chip, a kernel that does $\text{FLOPs}$ operations and
# moves $\text{bytes}$ bytes needs at least
#
# $$t_\text{compute} = \frac{\text{FLOPs}}{F}, \qquad t_\text{memory} = \frac{\text{bytes}}{W},
# \qquad t \;\ge\; \max(t_\text{compute},\, t_\text{memory}).$$
#
# The max assumes the chip overlaps both perfectly; with no overlap at all the
# time would be their sum, so the truth lies in $[\max, \text{sum}]$ — within a
# factor of 2. One multiply-add counts as **2 FLOPs** throughout.
#
# Dividing the two gives the kernel's **arithmetic intensity** $I = \text{FLOPs}/\text{bytes}$
# (FLOP/byte; [glossary](../book/glossary.md#arithmetic-intensity)).
# The kernel is compute-bound when $I > F/W$ and memory-bound when $I < F/W$;
# $F/W$ is the chip's **balance point** ([glossary](../book/glossary.md#balance-point): the
# ridge of the roofline drawn in section 3).
#
# Worked example — multiplying a $(B \times d)$ matrix of
# [activations](../book/glossary.md#activation) ($B$ tokens, the **batch**, each a vector
# of $d$ numbers, the model's hidden size) by a $(d \times d)$ weight matrix stored in
# [bf16](../book/glossary.md#precision) (2 bytes a number): $2Bd^2$ FLOPs, and at least
# $2d^2$ bytes of weight (plus $4Bd$ bytes of input and output). For $B \ll d$ the intensity is $\approx 2Bd^2 / 2d^2 = B$
# FLOP/byte: **the batch is the arithmetic intensity.** Remember this; chapter 1
# is built on it.

# %%
d, B = 8192, 16
flops = 2 * B * d * d
n_bytes = 2 * d * d + 2 * 2 * B * d  # weight + input + output, bf16
h100 = hardware.get("h100-sxm")
F, Wbw = h100.flops_per_s("bf16"), h100.hbm_bytes_per_s
print(f"FLOPs {flops:.3g}, bytes {n_bytes:.3g}, intensity {roofline.arithmetic_intensity(flops, n_bytes):.1f} FLOP/byte")
print(f"H100: t_compute = {flops:.3g} / {F:.3g} = {fmt_seconds(flops / F)}; "
      f"t_memory = {n_bytes:.3g} / {Wbw:.3g} = {fmt_seconds(n_bytes / Wbw)}")
print(f"floor = {fmt_seconds(roofline.roofline_time_s(flops, n_bytes, F, Wbw))}; "
      f"balance point F/W = {roofline.balance_point(F, Wbw):.0f} FLOP/byte -> memory-bound")

# %% [markdown] slideshow={"slide_type": "slide"}
# **Takeaway:** a matmul against a weight matrix is memory-bound until its batch
# reaches the chip's $F/W$ — about 300 on an H100.
#
# ## 2. The catalog as a table
#
# `llmmath.hardware` holds the chips the course uses. FLOP/s are **dense** (never
# the "with sparsity" datasheet figure, which is 2× for 2:4 structured sparsity:
# [dense FLOP/s](../book/glossary.md#dense-flops)),
# bandwidths are **per direction**, capacities in decimal GB. Every figure's
# source URL is in `lib/llmmath/data/hardware.toml` and on `chip.sources`
# (the chips are introduced in the [glossary](../book/glossary.md#chips-in-the-catalog)).
# Two derived columns matter all through the course: $F/W$, the FLOPs a chip can
# do per byte it reads, and $C/W$, the time to read its whole HBM once, where $C$ is
# the chip's HBM capacity in bytes ([glossary](../book/glossary.md#hbm-read-time)). The last two
# columns belong to chapter 5: each chip's bandwidth to the other chips of its
# [scale-up](../book/glossary.md#scale-up) network, and how many chips that network joins
# (its domain).

# %%
def catalog_table(dtype="bf16"):
    head = f"{'chip':<10} {'year':>4} {dtype + ' TFLOP/s':>13} {'HBM':>7} {'HBM TB/s':>9} {'F/W FLOP/B':>11} {'C/W ms':>7} {'scale-up GB/s':>14} {'domain':>7}"
    print(head)
    print("-" * len(head))
    for c in hardware.catalog().values():
        print(f"{c.key:<10} {c.year:>4} {c.flops_per_s(dtype) / 1e12:>13.0f} {c.hbm_bytes / 1e9:>5.0f}GB "
              f"{c.hbm_bytes_per_s / 1e12:>9.2f} {c.balance_flops_per_byte(dtype):>11.0f} "
              f"{c.hbm_read_time_s * 1e3:>7.1f} {c.scale_up_bytes_per_s / 1e9:>14.0f} {c.scale_up_domain:>7}")

catalog_table()
print("\nsource of the H100 figures:", dict(hardware.get("h100-sxm").sources))

# %% [markdown]
# Read the $F/W$ column: across five generations and four vendors the balance
# point of every chip but one stays within a factor of about four (the range is
# printed below). Compute and bandwidth have grown together, roughly — a fact
# chapter 8 returns to. The exception proves the rule's cause: the H20 is an
# H100 whose compute was cut for export while its HBM was not, so it does
# about an eighth of the arithmetic per byte. $C/W$ is a few tens of
# milliseconds for every chip with HBM (chapter 4 builds a serving schedule on
# that); the L40S, whose memory is GDDR6 (a cheaper, slower kind than HBM), is the
# slowest to read itself.

# %%
cat = hardware.catalog()
ridge = {k: c.balance_flops_per_byte("bf16") for k, c in cat.items()}
drain = {k: c.hbm_read_time_s for k, c in cat.items()}
usual = np.array([v for k, v in ridge.items() if k != "h20"])
hbm = np.array([v for k, v in drain.items() if "HBM" in cat[k].hbm_type])
print(f"F/W over the catalog but the H20: {usual.min():.0f} .. {usual.max():.0f} FLOP/byte (median "
      f"{np.median(usual):.0f}); the H20: {ridge['h20']:.0f}")
print(f"C/W over the chips with HBM: {hbm.min() * 1e3:.1f} .. {hbm.max() * 1e3:.1f} ms; the L40S (GDDR6): "
      f"{drain['l40s'] * 1e3:.1f} ms")
# Check: the H100 ridge equals its datasheet ratio (989.5 TFLOP/s dense bf16 / 3.35 TB/s), and the H20's its own
# (148 TFLOP/s dense bf16 / 4.0 TB/s = 37 FLOP/byte)
assert abs(hardware.get("h100-sxm").balance_flops_per_byte("bf16") - 989.5e12 / 3.35e12) < 1e-6
assert abs(ridge["h20"] - 148e12 / 4.0e12) < 1e-6
assert 100 < usual.min() and usual.max() < 1000, "a catalog ridge point left the 100-1000 FLOP/byte band"
assert 0.010 < hbm.min() and hbm.max() < 0.050, "a chip with HBM left the 10-50 ms read time"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 3. The roofline picture
#
# Plotting attainable FLOP/s $= \min(F,\; I\cdot W)$ against intensity $I$ on log
# axes gives each chip's **roofline**: a slope (memory-bound) meeting a flat roof
# (compute-bound) at the balance point. The vertical lines are the intensities of
# a bf16 matmul against a weight at a few batch sizes ($I \approx B$).

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=7, height=4.5)
plots.roofline_plot(["a100-80gb", "h100-sxm", "b200", "mi300x", "tpu-v5e", "tpu-v6e"], "bf16", ax=ax,
                    mark={"B=1": 1, "B=16": 16, "B=256": 256, "B=4096": 4096})
plt.show()

# %% [markdown] slideshow={"slide_type": "subslide"}
# ### Explore: where does a kernel land?
# Pick a chip, a precision and a kernel intensity; the panel says which bound
# applies and what fraction of peak the kernel can reach. (The explorer is
# `llmmath.course.explorers.roofline_explorer`: it draws with `plots.roofline_plot` and
# computes with `roofline.attainable_flops_per_s`.)

# %% slideshow={"slide_type": "subslide"}
roof_explorer = explorers.roofline_explorer()
roof_explorer.widget

# %% [markdown] slideshow={"slide_type": "slide"}
# ## 4. This machine as a chip
#
# First, what the machine is: `machine.describe()` reads the CPU, its vector units,
# its [caches](../book/glossary.md#cache), the memory and the
# [BLAS](../book/glossary.md#blas-gemm-and-gemv) (the linear-algebra library NumPy calls), with
# the kernel set the BLAS chose for this CPU. Every measured number in the course depends on these: the
# caches decide which arrays are "large", and the vector units and the BLAS's kernels
# set the FLOP/s. Keep this printout beside any ratio you compare with someone else's.
#
# `kernels.local_chip()` then measures the machine you are on: the bandwidth of a large
# copy (bytes read + bytes written) and the FLOP/s of a large matrix product.
# These are *achieved* ceilings, the honest roof for every demo that follows.
# Then we time two kernels at opposite ends of the roofline — a streaming
# `y = y + x` (1 FLOP per 12 bytes in fp32) and a square matmul — and put
# measurement beside prediction. A ceiling and a kernel timed seconds apart may
# see different machines (another program may take half the memory bandwidth
# during one and not the other), so the two kernels are timed *round-robin* with
# the ceilings (`kernels.time_interleaved` with a `kernels.CeilingProbe`): every
# round samples the ceilings and then each kernel, and each reports its best round.
# The memory roof is the best of six streaming kernels — a copy, three that only
# read (NumPy's sum, a BLAS matrix–vector product, and one row times blocks of the
# array, the way chapter 1's few-row products stream a weight), `c = a + b` and the
# in-place `c += b` — over arrays as large as the kernel's:
# which pattern streams fastest differs from machine to machine (on the 2-core
# VM this course is tested on, a lone core's in-place update moves 1.5–3× the
# bytes per second of its copy), and a roof must be the best the memory can do.
# What the check below can catch is then a wrong byte count or a mis-sized
# kernel: count `y = y + x` as 4 bytes per element instead of 12, or let its
# arrays fit in a cache, and it "beats" the roof by more than 2×.

# %%
be = kernels.backend()
me = kernels.local_chip()
print(f"backend: {be.name}")
print(machine.describe(be))
print(f"measured: copy bandwidth {fmt_bytes_per_s(me.hbm_bytes_per_s)}, "
      f"matmul {', '.join(f'{k} {fmt_flops_per_s(v)}' for k, v in me.peak_flops_per_s.items())}")
print(f"this machine's balance point: {me.balance_flops_per_byte('fp32'):.1f} FLOP/byte (fp32)")

# %%
xp = be.xp
probe = kernels.CeilingProbe(("fp32",))
n = probe.array_elements     # the probe's array size: the same caches and pages as the ceilings see
x = xp.ones(n, dtype=xp.float32) * 1.5
y = xp.ones(n, dtype=xp.float32) * 0.5
def add_inplace():
    xp.add(y, x, out=y)  # y = y + x: reads x and y, writes y: 12 bytes and 1 FLOP per element
axpy_bytes, axpy_flops = 12 * n, n
m_ = 1024 if not be.is_gpu else 8192
A = xp.ones((m_, m_), dtype=xp.float32) * 0.5
mm_flops, mm_bytes = 2 * m_**3, 3 * 4 * m_**2
timed = kernels.time_interleaved({"y = y + x": add_inplace, f"{m_}^3 matmul": lambda: A @ A},
                                 rounds=5, warmup=1, probe=probe)
t_axpy, t_mm = timed["y = y + x"].min_s, timed[f"{m_}^3 matmul"].min_s

F_me, W_me = probe.flops_per_s("fp32"), probe.memory_bytes_per_s
print("streams: " + ", ".join(f"{k} {fmt_bytes_per_s(v)}" for k, v in probe.stream_bytes_per_s.items())
      + f"; memory roof (the best) {fmt_bytes_per_s(W_me)}; fp32 matmul {fmt_flops_per_s(F_me)}")
print(f"({probe.describe()})")
rows = [("y = y + x", axpy_flops, axpy_bytes, t_axpy), (f"{m_}^3 matmul", mm_flops, mm_bytes, t_mm)]
print(f"{'kernel':<14} {'I FLOP/B':>9} {'predicted':>11} {'measured':>11} {'meas/pred':>9}")
for name, fl, by, t in rows:
    pred = roofline.roofline_time_s(fl, by, F_me, W_me)
    print(f"{name:<14} {fl / by:>9.3g} {fmt_seconds(pred):>11} {fmt_seconds(t):>11} {t / pred:>9.2f}")

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=7, height=4.5)
I = np.logspace(-2, 3, 200)
ax.loglog(I, roofline.attainable_flops_per_s(I, F_me, W_me), "k-", label="this machine's roofline (measured ceilings)")
for name, fl, by, t in rows:
    ax.plot(fl / by, fl / t, "o", ms=8, label=f"{name}: measured")
ax.set_xlabel("arithmetic intensity (FLOP/byte)")
ax.set_ylabel("FLOP/s")
ax.set_title(plots.short_device_name(be.device_name))
ax.grid(True, which="both", alpha=0.3)
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **Check.** A kernel cannot beat its roofline by more than measurement noise,
# and the streaming kernel must sit far below the machine's peak FLOP/s (it is
# memory-bound: its intensity, 1/12 FLOP/byte, is well under the ridge).

# %%
def measure_roofline():
    """A fresh probe and both kernels timed beside it: (times by kernel, fp32 matmul FLOP/s, memory roof B/s)."""
    pr = kernels.CeilingProbe(("fp32",))
    t = kernels.time_interleaved({"y = y + x": add_inplace, f"{m_}^3 matmul": lambda: A @ A},
                                 rounds=5, warmup=1, probe=pr)
    return {k: v.min_s for k, v in t.items()}, pr.flops_per_s("fp32"), pr.memory_bytes_per_s


def roofline_facts(m):
    t, F, W = m
    facts = [measured.Fact(f"{name}: measured / roofline floor", t[name] / roofline.roofline_time_s(fl, by, F, W),
                           low=0.5, why="a kernel cannot beat its floor by 2x: a wrong byte count or mismeasured ceilings")
             for name, fl, by, _ in rows]
    return facts + [
        measured.Fact("y = y + x: achieved FLOP/s / peak", axpy_flops / t["y = y + x"] / F, high=0.2,
                      why="at 1/12 FLOP/byte it is memory-bound"),
        measured.Fact("this machine's balance point, FLOP/byte", F / W, low=1, unit="",
                      why="every CPU and GPU does more than 1 FLOP per byte it reads")]


measured.check("chapter 0's kernels sit under this machine's roofline", roofline_facts,
               ({name: t for name, _, _, t in rows}, F_me, W_me), remeasure=measure_roofline)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# | idea | formula | where it returns |
# |---|---|---|
# | compute time | FLOPs / F | every chapter |
# | memory time | bytes / W | every chapter |
# | arithmetic intensity | FLOPs / bytes | a weight matmul's intensity is its batch (ch. 1) |
# | balance point | F / W: 150–560 FLOP/byte at bf16 across the catalog (37 on the export-limited H20) | the balance batch (ch. 1, 3) |
# | HBM read time | C / W: 19.5–43 ms | the serving cadence (ch. 4) |

# %% [markdown]
# **Read next.** [Chapter 1](01_batch_size.py) applies the two times to one decode step
# and turns them into the economics of batching; everything there is this
# chapter's $F$, $W$ and $I \approx B$. For more on the roofline itself: Williams,
# Waterman and Patterson, "Roofline: an insightful visual performance model"
# (*Communications of the ACM*, 2009), and the rooflines chapter of
# [*How to Scale Your Model*](https://jax-ml.github.io/scaling-book/roofline/) (Google DeepMind's free
# book on the same arithmetic for TPUs and GPUs).
