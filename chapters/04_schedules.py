# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 4 — Schedules: a batch departs every T
#
# A server cannot wait for a batch to fill: it starts a step on a fixed cadence,
# like a train that leaves on time, full or not. Two claims:
#
# | # | time | claim, in our words |
# |---|---|---|
# | 12 | 23:35 | with a batch leaving every 20 ms, a request's worst latency for one step is about 40 ms: 20 waiting, 20 riding |
# | 13 | 24:10 | HBM capacity ÷ bandwidth, the time to read all of memory once, tends to be about 20 ms on every generation, and it sets the step time |
#
# **After this chapter you can** simulate a fixed-cadence batcher for any arrival
# process, read off its waiting and total latency (mean, tail, worst), say what
# happens when arrivals outrun the seats, and compute the natural cadence of any chip.

# %% [markdown]
# **Before you start.** Read [chapter 0](00_rooflines.py) (the HBM read time $C/W$) and
# [chapter 1](01_batch_size.py) (the decode step and its time $t_\text{step}$); the rest is a
# little probability (a uniform wait, a Poisson stream of arrivals). Glossary entries
# that matter here: [HBM read time](../book/glossary.md#hbm-read-time), [continuous batching](../book/glossary.md#continuous-batching),
# [TTFT](../book/glossary.md#ttft) and [decode](../book/glossary.md#decode); symbols $T$ (the cadence), $w$, $t_a$, $\lambda$,
# $B_\text{max}$, $\rho$ on the [notation](../book/notation.md) page. About 40 minutes.

# %%
import numpy as np
import matplotlib.pyplot as plt

from llmmath import claims, explorers, hardware, kernels, models, plots, schedule, serving
from llmmath.units import fmt_bytes, fmt_seconds

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 12 (23:35) — worst case: one interval waiting, one riding
#
# *Claim, paraphrased:* if a step starts every 20 ms whether or not it is full,
# a request that just missed a departure waits up to 20 ms for the next and then
# rides it for 20 ms: about 40 ms at worst for one step.
#
# **Derivation.** Departures at $jT$ ($j = 1, 2, \dots$; $T$ the cadence). A request arriving at time $t_a$ boards
# departure $\lceil t_a/T\rceil$ (if it has a seat), so its wait $w = \lceil t_a/T\rceil T - t_a \in [0, T)$.
# If arrivals are spread evenly in phase relative to the cadence — true of a
# Poisson stream, and of any stream whose phase against the timetable is random
# or drifts (a periodic stream locked at one phase waits the same every time,
# anywhere in $[0, T)$) — then $w \sim U(0, T)$, uniform on $[0, T)$:
#
# $$\mathbb E[w] = \tfrac{T}{2},\quad \sup w = T,\quad
#   \text{latency} = w + t_\text{step} \in [t_\text{step},\ T + t_\text{step}),\quad
#   \mathbb E[\text{latency}] = \tfrac{T}{2} + t_\text{step}.$$
#
# With $t_\text{step} = T$: worst $2T = 40$ ms, mean $1.5T = 30$ ms. Two assumptions
# hide in "has a seat": a departure carries at most $B_\text{max}$ requests. If more than $B_\text{max}$
# arrive in one interval, the rest wait a further $T$ each; if the arrival rate
# $\lambda$ (requests per second) exceeds $B_\text{max}/T$ for long, the queue grows without bound.
#
# **Simulation** (`schedule.simulate_cadence`, vectorized: a million arrivals in
# tens of milliseconds), against the closed forms:

# %%
T = 0.020
rows = []
for name, a in (("Poisson, 20K/s", schedule.poisson_arrivals(20_000, 1_000_000, seed=1)),
                ("uniform, 20K/s", schedule.uniform_arrivals(1_000_000, 50.0, seed=2))):
    r = schedule.simulate_cadence(a, T)
    rows.append((name, r))
cf = schedule.uniform_phase_latency(T)
print(f"{'arrivals':<16} {'mean wait':>10} {'max wait':>9} {'mean lat.':>10} {'p99 lat.':>9} {'max lat.':>9}")
for name, r in rows:
    print(f"{name:<16} {r.mean_wait_s * 1e3:>8.3f}ms {r.max_wait_s * 1e3:>7.3f}ms {r.mean_latency_s * 1e3:>8.3f}ms "
          f"{r.latency_percentile_s(99) * 1e3:>7.2f}ms {r.max_latency_s * 1e3:>7.3f}ms")
print(f"{'closed form':<16} {cf['mean_wait_s'] * 1e3:>8.3f}ms {cf['max_wait_s'] * 1e3:>7.3f}ms "
      f"{cf['mean_latency_s'] * 1e3:>8.3f}ms {(0.99 * T + T) * 1e3:>7.2f}ms {cf['max_latency_s'] * 1e3:>7.3f}ms  (p99 of U(0,T) + T)")
r = rows[0][1]
assert abs(r.mean_wait_s / (T / 2) - 1) < 0.005 and r.max_latency_s <= 2 * T

# %% [markdown]
# **Measured: a real cadence loop.** The same schedule, run for real for 0.4 s
# (`schedule_bench.run_cadence`): a Python loop sleeps until each departure $jT$
# ($T$ = 20 ms), boards every request whose arrival time (200 of them, drawn up
# front, uniform) has passed, runs a tiny fixed step (`np.exp` of $2^{18}$
# numbers), and records when each step really started. The simulation runs on
# the same arrivals. A real machine can only depart *late* (timer slack, or the
# core given to another process), so each measured wait is the simulated wait
# plus its departure's lateness: the simulation is a lower bound, request by
# request, and the excess is what this machine adds to the $T$ + step bound.

# %%
from llmmath import schedule_bench

meas = schedule_bench.run_cadence(period_s=T, n_departures=20, n_requests=200, seed=0)
print(meas.table())
step_med = float(np.median(meas.step_s))
excess = meas.wait_s - meas.simulated.wait_s
on_time = np.mean(meas.wait_s <= T)
print(f"step {step_med * 1e3:.2f} ms (median); departures late by {np.median(meas.lateness_s) * 1e3:.2f} ms "
      f"(median), {meas.lateness_s.max() * 1e3:.2f} ms at worst")
print(f"Measured here: mean wait {meas.wait_s.mean() * 1e3:.1f} ms against {meas.simulated.mean_wait_s * 1e3:.1f} ms "
      f"simulated on the same arrivals ({meas.wait_s.mean() / meas.simulated.mean_wait_s:.2f}x); worst wait "
      f"{meas.wait_s.max() * 1e3:.1f} ms against {meas.simulated.max_wait_s * 1e3:.1f} ms; {on_time:.0%} of requests "
      f"waited at most T = {T * 1e3:.0f} ms, the ideal bound. "
      + ("The loop kept its timetable: the bound held." if on_time == 1 else
         "The rest boarded a departure that left late: the bound T + step is an ideal machine's, and a real "
         "server adds its wake-up lateness on top."))
# Only the side load cannot flip: a busy core delays departures, it never advances them.
assert np.all(excess >= -1e-9) and meas.wait_s.max() >= meas.simulated.max_wait_s - 1e-9
assert meas.wait_s.mean() >= meas.simulated.mean_wait_s - 1e-9

# %% slideshow={"slide_type": "subslide"}
fig, (ax1, ax2) = plots.new_axes(2, width=5.5)
ax1.hist(r.wait_s * 1e3, bins=50, density=True, alpha=0.7, label="simulated wait")
ax1.hist(r.latency_s * 1e3, bins=50, density=True, alpha=0.7, label="simulated latency (wait + step)")
ax1.axhline(1 / (T * 1e3), color="k", ls="--", label="U(0, T) density")
ax1.set_xlabel("ms"); ax1.set_ylabel("density (1/ms)"); ax1.set_title("T = 20 ms, step = 20 ms, Poisson arrivals")
ax1.legend(fontsize=8); ax1.grid(True, alpha=0.3)
Ts = np.array([0.005, 0.01, 0.02, 0.04, 0.08])
sims = [schedule.simulate_cadence(schedule.poisson_arrivals(5_000, 100_000, seed=3), t) for t in Ts]
ax2.plot(Ts * 1e3, [s.mean_latency_s * 1e3 for s in sims], "o", label="simulated mean latency")
ax2.plot(Ts * 1e3, [s.max_latency_s * 1e3 for s in sims], "s", label="simulated worst latency")
ax2.plot(Ts * 1e3, 1.5 * Ts * 1e3, "k--", label="1.5 T"); ax2.plot(Ts * 1e3, 2 * Ts * 1e3, "k:", label="2 T")
ax2.set_xlabel("cadence T (ms), step = T"); ax2.set_ylabel("latency (ms)"); ax2.set_title("Latency against the cadence")
ax2.legend(fontsize=8); ax2.grid(True, alpha=0.3)
plt.show()

# %% [markdown]
# **When the trains fill.** Give each departure $B_\text{max}$ seats and vary the load
# $\rho = \lambda T / B_\text{max}$. Below 1 the worst case stays near $2T$ — a little above
# it, because Poisson arrivals bunch and now and then overfill a train; at $\rho$
# close to 1 those overflows pile up; above 1 the backlog, and the wait, grow
# linearly in time, at $(\rho - 1)$ seconds per second.

# %%
c = 400
print(f"{'load':>5} {'missed 1st train':>17} {'mean latency':>13} {'p99.9':>9} {'worst':>9}")
loads = (0.5, 0.8, 0.9, 0.95, 0.99, 1.05, 1.2)
overs = {}
for rho in loads:
    a = schedule.poisson_arrivals(rho * c / T, 200_000, seed=4)
    s = schedule.simulate_cadence(a, T, capacity=c)
    overs[rho] = s
    print(f"{rho:>5.2f} {s.missed_first_train:>16.2%} {s.mean_latency_s * 1e3:>11.1f}ms "
          f"{s.latency_percentile_s(99.9) * 1e3:>7.1f}ms {s.max_latency_s * 1e3:>7.1f}ms")

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=6.5)
for rho in (0.9, 0.99, 1.05, 1.2):
    s = overs[rho]
    ax.plot(s.arrival_s, s.latency_s * 1e3, lw=0.8, label=f"load {rho}")
ax.axhline(2 * T * 1e3, color="k", ls=":", label="2T")
ax.set_yscale("log"); ax.set_xlabel("arrival time (s)"); ax.set_ylabel("latency (ms)")
ax.set_title(f"Capacity {c} per 20 ms train: past load 1 the queue never drains"); ax.legend(fontsize=8)
ax.grid(True, which="both", alpha=0.3)
plt.show()

# %% [markdown]
# **Explore.** Move the cadence $T$ first and watch the histogram of one step's
# latency (20,000 Poisson arrivals) stretch to the dotted bound $T$ + step; then
# the step, the arrival rate and the seats per train: past load 1 the worst case
# leaves the bound (`explorers.cadence_explorer`).

# %% slideshow={"slide_type": "subslide"}
cadence_explorer = explorers.cadence_explorer(period_ms=20)
cadence_explorer.widget

# %% [markdown]
# [Continuous batching](../book/glossary.md#continuous-batching) (Orca, OSDI'22; [vLLM](../book/glossary.md#vllm)) is this same picture with $T$ equal to
# one decode step: a request joins at the next step boundary. The bound is per
# step — time to the first token of a new request, once its prefill is done — not
# the time for a whole response, which takes one step per output token.
#
# **On real chips and models.** What is $T$ in a real deployment? With continuous
# batching it is the decode step at the batch the deployment runs. Below, each
# deployment at the largest batch whose 8k-token KV cache fits (the planner,
# `planner.plan`, on a legal placement, 90% of HBM usable as vLLM reserves),
# and its worst one-step latency $2T$ against the speaker's 40 ms; beside it the
# speaker's own yardstick, one read of a full HBM ($C/W$, chapter 0).

# %%
from llmmath import planner

print(f"{'deployment':<40} {'batch':>6} {'step T':>9} {'worst 2T':>9} {'mean 1.5T':>10}")
full_steps = []
for label, kw in (("Llama-3.1-8B, 1 x H100, bf16", dict(model="llama-3.1-8b", chip="h100-sxm", n_chips=1)),
                  ("Llama-3.1-70B, 8 x H100 TP8, bf16", dict(model="llama-3.1-70b", chip="h100-sxm", n_chips=8, tp=8)),
                  ("Qwen3-235B-A22B, 8 x H200 TP4 DP2 EP8, fp8",
                   dict(model="qwen3-235b-a22b", chip="h200", n_chips=8, tp=4, dp=2, ep=8, weight_dtype="fp8")),
                  ("DeepSeek-V3, 8 x H200 DP8 EP8, fp8",
                   dict(model="deepseek-v3", chip="h200", n_chips=8, dp=8, ep=8, weight_dtype="fp8")),
                  ("DeepSeek-V3, 72 x GB200 DP72 EP72, fp8",
                   dict(model="deepseek-v3", chip="gb200", n_chips=72, dp=72, ep=72, weight_dtype="fp8"))):
    p_ = planner.plan(context=8192, usable_hbm_fraction=0.9, **kw)
    t_ = p_.at_batch.step_time_s
    full_steps.append(t_)
    print(f"{label:<40} {p_.max_batch:>6,.0f} {fmt_seconds(t_):>9} {fmt_seconds(2 * t_):>9} {fmt_seconds(1.5 * t_):>10}")
print(f"full-HBM steps {min(full_steps) * 1e3:.0f}-{max(full_steps) * 1e3:.0f} ms: worst one-step latency "
      f"{2 * min(full_steps) * 1e3:.0f}-{2 * max(full_steps) * 1e3:.0f} ms against the speaker's 40 ms")
print("one read of a full HBM, C/W: " + ", ".join(f"{k} {schedule.hbm_period_s(k) * 1e3:.0f} ms"
                                                  for k in ("h100-sxm", "h200", "b200", "gb200", "mi300x")))

# %% [markdown]
# A deployment that fills its HBM with KV cache reads most of that HBM every
# step, so its $T$ is close to one HBM read, whatever the model: the speaker's
# 20 ms and 40 ms are the right size for a full deployment on any of these chips
# (the printed ranges). A smaller batch steps faster and costs more per token
# (chapter 1). These are floors: a real engine's step is longer (chapter 12's
# subject).

# %%
v12 = claims.check(12)
assert v12.verdict == "holds if"

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 13 (24:10) — reading all of HBM takes about 20 ms, and that is the step
#
# *Claim, paraphrased:* dividing a GPU's memory capacity by its memory bandwidth
# gives the time to read all of memory once; across generations it tends to be
# about 20 ms (his own Rubin example, 288 GB over ~20 TB/s, gives 14.4 ms), and
# that is the natural length of a decode step.
#
# **Derivation.** A memory-bound step reads the weights once and each sequence's
# KV cache once: $t_\text{step} = (N_\text{tot} b_w + B L \beta)/(nW)$. Everything it
# reads lives in HBM, so $t_\text{step} \le nC/(nW) = C/W$, with equality when HBM is
# full and every byte is read. Filling HBM with KV (the largest batch that fits)
# is what makes a step cheapest per token, so a cost-optimal memory-bound server
# drifts toward $t_\text{step} \approx C/W$; a longer step would have to read
# something twice. A latency target can pick a shorter one (less KV, fewer
# sequences); nothing pushes it longer. Throughput follows as $B / t_\text{step}$.

# %%
print(f"{'chip':<22} {'year':>4} {'HBM':>7} {'TB/s':>6} {'C/W':>8}")
# The claim is about HBM: a part with another memory (the L40S's GDDR6) is left out, as the check does.
not_hbm = {k: c.hbm_type for k, c in hardware.catalog().items() if "HBM" not in c.hbm_type}
items = [(k, c.year, c.hbm_bytes, c.hbm_bytes_per_s) for k, c in hardware.catalog().items() if k not in not_hbm]
items += [(k + " *", s.year, s.hbm_bytes_per_package, s.hbm_bytes_per_s_per_package)
          for k, s in hardware.systems().items() if not s.chip and not s.superseded_by]
for k, y, C, Wb in sorted(items, key=lambda t: t[1]):
    print(f"{k:<22} {y:>4} {C / 1e9:>5.0f}GB {Wb / 1e12:>6.2f} {C / Wb * 1e3:>6.1f}ms")
allv = np.array([C / Wb for _, _, C, Wb in items])
print(f"* announced/systems-catalog parts (per package). Median {np.median(allv) * 1e3:.1f} ms, "
      f"range {allv.min() * 1e3:.1f}-{allv.max() * 1e3:.1f} ms; speaker's Rubin: 288 GB / 20 TB/s = {288 / 20:.1f} ms")
print("left out, not HBM: " + ", ".join(f"{k} ({t}, {hardware.get(k).hbm_read_time_s * 1e3:.0f} ms)"
                                        for k, t in not_hbm.items()))

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes(width=7)
offset = {"NVIDIA": -0.15, "AMD": 0.0, "Google": 0.15, "Intel": 0.3}   # a nudge per vendor: one year's points part
xs, ts, names = [], [], []
for k, y, C, Wb in items:
    v = hardware.catalog()[k].vendor if k in hardware.catalog() else hardware.system(k[:-2]).vendor
    color = {"NVIDIA": "C2", "AMD": "C3", "Google": "C0", "Intel": "C4"}.get(v, "C7")
    xs.append(y + offset.get(v, 0.0)); ts.append(C / Wb * 1e3); names.append(k.replace(" *", ""))
    ax.plot(xs[-1], ts[-1], "o", color=color, mfc="none" if k.endswith("*") else color)
ax.axhspan(15, 25, color="gold", alpha=0.3, label="rounds to 20 ms at one significant figure (15-25 ms)")
ax.axhline(20, color="k", lw=0.8)
ax.axhline(np.median(allv) * 1e3, color="C3", lw=1, ls="--", label=f"median part, {np.median(allv) * 1e3:.0f} ms")
ax.set_xlabel("year"); ax.set_ylabel("memory capacity / bandwidth (ms)"); ax.set_ylim(0, 62)
ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
ax.set_title("Time to read all of memory once\n(green NVIDIA, red AMD, blue Google, purple Intel; hollow: announced)")
ax.legend(fontsize=8); ax.grid(True, alpha=0.3)
plots.label_points(ax, xs, ts, names)        # each label where it covers no other, once the rest is in place
plt.show()

# %% [markdown]
# **Read it.** Tens of milliseconds everywhere: capacity and bandwidth have
# grown together for years. But is "about 20 ms" the typical value? That needs
# a rule for what "about 20 ms" admits, and the rule comes from the number
# itself. "20 ms" is a round number, and a round number stands for every value
# that rounds to it at the speaker's precision. His own example shows that
# precision: 288 GB / 20 TB/s = 14.4 ms, which he calls "about 15 ms", so he
# rounds to the nearest 5 ms, and on that grid "20 ms" means 17.5–22.5 ms. We
# read him more generously, at one significant figure (the nearest 10 ms), where
# "20 ms" covers 15–25 ms; this interval contains the 5 ms one, so a part it
# rejects, his own grid rejects too. The verdict follows from where the
# **median** part falls:
#
# * **holds** if the median rounds to 20 ms at one significant figure (15 ms ≤ median < 25 ms);
# * **off by** if it rounds to another value, but is the same order of magnitude
#   as 20 ms: the ratio median / 20 ms rounds to $10^0$ on a log scale, i.e. it lies
#   within a factor $\sqrt{10} \approx 3.16$ either way;
# * **does not hold** otherwise.
#
# The counts within 1.5× and 2× of 20 ms are printed too, as description; they
# do not decide the verdict.

# %%
said_ms = 20.0
# His grid: the step that turns 14.4 ms into his "about 15 ms" (5 ms does; one significant figure, 10 ms, gives 10).
rubin_ms = 288 / 20
grid_said = 5.0
assert round(rubin_ms / grid_said) * grid_said == 15 and round(rubin_ms / 10) * 10 != 15
grid_1sf = 10 ** np.floor(np.log10(said_ms))                    # one significant figure of 20 ms: a 10 ms grid
lo_ms, hi_ms = said_ms - grid_1sf / 2, said_ms + grid_1sf / 2  # values that round to 20 ms: [15, 25)
assert lo_ms <= said_ms - grid_said / 2 and said_ms + grid_said / 2 <= hi_ms  # contains his own 5 ms reading
oom = np.sqrt(10)                                               # ratio that still rounds to 10^0 on a log scale
med_ms = float(np.median(allv)) * 1e3
med_rounded = round(med_ms / grid_1sf) * grid_1sf
if lo_ms <= med_ms < hi_ms:
    rule_verdict = "holds"
elif 1 / oom <= med_ms / said_ms < oom:
    rule_verdict = "off by"
else:
    rule_verdict = "does not hold"
ms = allv * 1e3
ratio = ms / said_ms
by_time = sorted(items, key=lambda t: t[2] / t[3])
print(f"{allv.size} HBM parts; median {med_ms:.1f} ms = {med_ms / said_ms:.2f}x 20 ms. Rule: holds if the median "
      f"is in [{lo_ms:.0f}, {hi_ms:.0f}) ms (rounds to 20 ms at one significant figure); off by if within "
      f"{oom:.2f}x of 20 ms ({said_ms / oom:.1f}-{said_ms * oom:.1f} ms, same order of magnitude)")
print(f"parts that round to 20 ms: {np.sum((ms >= lo_ms) & (ms < hi_ms))} of {allv.size} (on his 5 ms grid, "
      f"{said_ms - grid_said / 2:.1f}-{said_ms + grid_said / 2:.1f} ms: "
      f"{np.sum((ms >= said_ms - grid_said / 2) & (ms < said_ms + grid_said / 2))}); "
      f"within 1.5x: {np.sum((ratio >= 1 / 1.5) & (ratio <= 1.5))}; within 2x: {np.sum((ratio >= 0.5) & (ratio <= 2))}")
print(f"fastest: {by_time[0][0]} {by_time[0][2] / by_time[0][3] * 1e3:.1f} ms; slowest: {by_time[-1][0]} "
      f"{by_time[-1][2] / by_time[-1][3] * 1e3:.1f} ms")
print(f"Verdict by the rule: {rule_verdict.upper()}. The median part takes {med_ms:.1f} ms, which rounds to "
      f"{med_rounded:.0f} ms at one significant figure"
      + (f", as the claim says." if rule_verdict == "holds" else
         f", not 20 ms; it is {med_ms / said_ms:.2f}x the 20 ms said, "
         + ("inside" if rule_verdict == "off by" else "outside")
         + f" the factor {oom:.2f} that keeps the same order of magnitude."))
# The verdict the chapter states (and the summary) is 'off by': it must follow from the rule and the numbers.
assert rule_verdict == "off by", f"median {med_ms:.1f} ms now gives '{rule_verdict}' under the stated rule"

# %% [markdown]
# **This machine.** The same division for the computer running this notebook:
# its memory capacity over its memory bandwidth, measured just now by a large copy
# (`kernels.local_chip()`; bytes read + bytes written, an achieved rate, not a datasheet peak).

# %%
here = kernels.local_chip()
here_cw = here.hbm_bytes / here.hbm_bytes_per_s
print(f"{here.name}: {fmt_bytes(here.hbm_bytes)} / {here.hbm_bytes_per_s / 1e9:.1f} GB/s = "
      f"{fmt_seconds(here_cw)} to read all of memory once")
print(f"That is {here_cw / np.median(allv):.3g}x the accelerators' median of {np.median(allv) * 1e3:.0f} ms "
      f"({allv.min() * 1e3:.0f}-{allv.max() * 1e3:.0f} ms): "
      + ("a machine whose memory is large for its bandwidth, as CPU DRAM is, cannot read all of it in one "
         "step time of the catalog's chips; its natural step is far longer." if here_cw > allv.max() else
         "within or below the catalog's range: this machine reads all its memory about as fast as an accelerator."))

# %% [markdown]
# So "about 20 ms" is right as an order of magnitude but low as a typical value,
# by the median's factor printed above; the speaker's own Rubin example sits at the low end.
#
# **The cadence in practice.** Fill a chip's HBM with weights and KV at a given fill
# fraction and the step is that fraction of $C/W$; the batch it serves, and the
# tokens per second, follow. Below: Llama-3.1-70B on 8 H200s at 8K context, for
# every batch that fits.

# %%
most = int(serving.max_batch("llama-3.1-70b", "h200", 8192, n_chips=8))
B = np.array([16, 64, 128, 256, most])
t = serving.decode_step_time_s("llama-3.1-70b", "h200", B, 8192, n_chips=8)
l70 = models.get("llama-3.1-70b")
frac = (l70.weight_bytes() + B * 8192 * l70.kv_bytes_per_token()) / (8 * 141e9)
for b, tt, f in zip(B, t, frac):
    print(f"B = {b:>4}: HBM {f:>5.1%} full, step {tt * 1e3:5.1f} ms (C/W x fill = {f * 141e9 / 4.8e12 * 1e3:5.1f} ms), "
          f"{b / tt:>8,.0f} tokens/s")
print(f"(the last row is the largest batch that fits: {most})")

# %% [markdown]
# **Explore.** Change the chip first and watch its line (blue, every other catalog
# chip in grey) against the explorer's gold band, 1.5× either side of 20 ms (a
# wider, descriptive band than the rule above); the fill fraction gives the step
# time and, with the batch, the throughput and tokens per second per user
# (`explorers.hbm_explorer`).

# %% slideshow={"slide_type": "subslide"}
hbm_explorer = explorers.hbm_explorer(chip="h100-sxm")
hbm_explorer.widget

# %%
print("slider answers (ms):", ", ".join(f"{1e3 * e.update():.0f}" for e in (cadence_explorer, hbm_explorer)))
v13 = claims.check(13)
# The ledger's verdict and the chapter's stated rule must agree, on the same parts and the same median.
assert v13.verdict == rule_verdict == "off by"
assert f"{med_ms:.0f} ms (median of {allv.size} " in v13.summary
print(f"claim 13 in numbers: {allv.size} parts, {allv.min() * 1e3:.0f}-{allv.max() * 1e3:.0f} ms, median "
      f"{med_ms:.0f} ms = {med_ms / said_ms:.2f}x the 20 ms said, rounding to {med_rounded:.0f} ms: {rule_verdict}")

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Summary
#
# | # | time | claim | verdict |
# |---|---|---|---|
# | 12 | 23:35 | 20 ms cadence → ≤ 40 ms for one step | **holds if** every train has a seat for all who arrived: latency in $[T, 2T)$, mean $1.5T$ = 30 ms (simulated and closed form agree); overfull trains push it past $2T$, overload without bound; per step, not per response |
# | 13 | 24:10 | $C/W \approx$ 20 ms everywhere, and sets the step | **off by** the median's factor (above): at one significant figure the median part does not round to 20 ms, yet it lies within a factor $\sqrt{10}$ of it, the same order of magnitude. As an upper bound on a useful step it holds |
#
# Exercises: `exercises/04_schedules_exercises.py` (answers in `solutions/`).

# %% [markdown]
# **Read next.** [Chapter 5](05_experts_on_a_rack.py) leaves the single server and spreads a
# mixture of experts over a rack, where the network joins memory and arithmetic
# as a third time. For how real engines schedule (continuous batching, chunked
# prefill, preemption) jump to [chapter 12](12_serving_for_real.py)'s engine under load. Outside
# reading: Yu et al., "Orca: a distributed serving system for transformer-based
# generative models" (OSDI 2022), and Kwon et al., "Efficient memory management for
# large language model serving with PagedAttention" (SOSP 2023, the vLLM paper).
