"""Checks of chapter 4 (schedules): claims 12 and 13."""

from __future__ import annotations

import numpy as np

from ... import hardware, schedule
from ._sheets import require_sheets
from ..claims import Verdict, register, require


@register(12)
def _check_12() -> Verdict:
    T = 0.020
    # Poisson arrivals, trains never full: wait in [0, T), latency in [T, 2T); mean wait T/2 (arrivals
    # are uniform in phase over a long run).
    pa = schedule.poisson_arrivals(20_000.0, 400_000, seed=12)
    r = schedule.simulate_cadence(pa, T)
    require(r.max_latency_s <= 2 * T and r.max_latency_s > 0.999 * 2 * T, 12, f"worst latency {r.max_latency_s}")
    require(abs(r.mean_latency_s / (1.5 * T) - 1) < 0.005, 12, f"mean latency {r.mean_latency_s} vs 1.5 T")
    require(abs(r.mean_wait_s / (T / 2) - 1) < 0.01, 12, f"mean wait {r.mean_wait_s} vs T/2")
    # Finite trains: capacity c = 1.1 x the mean arrivals per interval (400). Poisson bunching
    # fills some trains; the unlucky wait for the next one and the worst case passes 2T.
    c = int(1.1 * 20_000 * T)
    full = schedule.simulate_cadence(pa, T, capacity=c)
    require(full.max_latency_s > 2 * T, 12, "with 10% headroom some trains should overflow")
    # Overload: 20% above capacity -> waits grow without bound
    over = schedule.simulate_cadence(pa, T, capacity=int(20_000 * T / 1.2))
    require(over.wait_s[-1] > 100 * T, 12, "an overloaded cadence should build an unbounded queue")
    # A step shorter than the cadence lowers the bound to T + step
    short = schedule.simulate_cadence(pa, T, step_s=0.015)
    require(short.max_latency_s <= T + 0.015, 12, "latency bound T + step")
    p99 = float(r.latency_percentile_s(99))
    return Verdict(12, "holds if",
                   "with a 20 ms cadence and a 20 ms step, one step's latency lies in [20, 40) ms -- worst just "
                   f"under 40 ms, mean 30 ms (simulated: max {r.max_latency_s * 1e3:.2f} ms, mean "
                   f"{r.mean_latency_s * 1e3:.2f} ms, p99 {p99 * 1e3:.1f} ms) -- if every train has a seat for "
                   "everyone who arrived since the last one. With 10% headroom over the mean arrivals, Poisson "
                   f"bunching overflows {full.missed_first_train:.2%} of requests to a later train and the worst "
                   f"case grows to {full.max_latency_s * 1e3:.0f} ms; above capacity the queue grows without "
                   "bound. It bounds the first step (admission), not a whole response",
                   {"closed form (uniform phase)": "wait U(0, T): mean T/2 = 10 ms, worst T; latency mean 1.5T = 30 ms, worst 2T = 40 ms",
                    "simulated, 400K Poisson arrivals at 20K/s": f"mean wait {r.mean_wait_s * 1e3:.3f} ms, max latency "
                                                                 f"{r.max_latency_s * 1e3:.3f} ms",
                    f"capacity {c} (1.1x the mean 400)": f"worst {full.max_latency_s * 1e3:.0f} ms, "
                                                        f"{full.missed_first_train:.2%} missed their first train",
                    "20% overload": f"last request waited {over.wait_s[-1]:.1f} s",
                    "step 15 ms at a 20 ms cadence": f"worst {short.max_latency_s * 1e3:.1f} ms (T + step = 35 ms)"})


# Datasheet anchors (capacity, bandwidth), independent of the catalog: seconds to read all HBM once.
_DATASHEET_C_OVER_W = {
    "a100-80gb": 80e9 / 2.039e12,     # A100 SXM 80GB
    "h100-sxm": 80e9 / 3.35e12,       # H100 SXM
    "h200": 141e9 / 4.8e12,           # H200 SXM
    "b200": 180e9 / 8e12,             # HGX B200 (180 GB per GPU on the HGX sheet)
    "mi300x": 192e9 / 5.3e12,         # MI300X
    "tpu-v5e": 16e9 / 819e9,          # Cloud TPU v5e: 16 GB, 819 GB/s
    "tpu-v6e": 32e9 / 1.638e12,       # Cloud TPU v6e: 32 GB, 1,638 GB/s
}


@register(13)
def _check_13() -> Verdict:
    require_sheets(13, chips="all", systems="all")
    for chip, anchor in _DATASHEET_C_OVER_W.items():
        got = schedule.hbm_period_s(chip)
        require(abs(got / anchor - 1) < 0.01, 13, f"{chip}: C/W {got * 1e3:.1f} ms vs datasheet {anchor * 1e3:.1f} ms")
    # parts whose memory is HBM (the claim's subject): a GDDR card (the L40S) reads its 48 GB in 56 ms, and is not one
    chips = {k: c.hbm_read_time_s for k, c in hardware.catalog().items() if "HBM" in c.hbm_type}
    systems = {k: s.hbm_bytes_per_package / s.hbm_bytes_per_s_per_package for k, s in hardware.systems().items()
               if not s.chip and not s.superseded_by}  # announced parts not in the chip catalog (GB300, Rubin, ...)
    allv = np.array(list(chips.values()) + list(systems.values()))
    said = 0.020  # "tends to be 20 ms"
    ratio = allv / said
    med = float(np.median(allv))
    within15 = int(np.sum((ratio >= 1 / 1.5) & (ratio <= 1.5)))
    within2 = int(np.sum((ratio >= 0.5) & (ratio <= 2)))
    rubin_speaker = 288e9 / 20e12
    rubin = hardware.system("vera-rubin-nvl72")
    rubin_spec = rubin.hbm_bytes_per_package / rubin.hbm_bytes_per_s_per_package
    nvidia = {k: v for k, v in chips.items() if hardware.get(k).vendor == "NVIDIA"}
    require(allv.min() > 0.010 and allv.max() < 0.050, 13, "HBM read times left the 10-50 ms range")
    # The rule (chapter 4): 'about 20 ms' is a round number. At one significant figure (a 10 ms grid) it stands
    # for every value that rounds to it, [15, 25) ms; the speaker's own grid is finer (288/20 = 14.4 ms he calls
    # 'about 15': 5 ms, so 17.5-22.5 ms), and lies inside. 'holds' if the median part rounds to 20 ms; 'off by'
    # if it rounds elsewhere but median / 20 ms still rounds to 10^0 on a log scale (within sqrt(10)).
    grid = 10 ** np.floor(np.log10(said))
    lo, hi = said - grid / 2, said + grid / 2
    require(round(rubin_speaker * 1e3 / 5) * 5 == 15 and lo <= said - 0.0025 and said + 0.0025 <= hi, 13,
            "the one-significant-figure interval no longer contains the speaker's 5 ms grid")
    oom = float(np.sqrt(10))
    require(not lo <= med < hi, 13, f"median HBM read time {med * 1e3:.1f} ms rounds to 20 ms: the claim holds")
    require(1 / oom <= med / said < oom, 13,
            f"median {med * 1e3:.1f} ms is {med / said:.2f}x 20 ms: beyond a factor sqrt(10), not the same order")
    med_rounded = round(med / grid) * grid
    return Verdict(13, "off by",
                   f"the HBM read time C/W is tens of milliseconds on every part, but the typical part takes "
                   f"{med * 1e3:.0f} ms (median of {allv.size} chips and announced parts), which rounds to "
                   f"{med_rounded * 1e3:.0f} ms at one significant figure, not 20 ({lo * 1e3:.0f}-{hi * 1e3:.0f} ms "
                   f"would); {med / said:.2f}x the 'about 20 ms' said, within the factor sqrt(10) of one order of "
                   f"magnitude. Only {within15} of {allv.size} lie within 1.5x of 20 ms "
                   f"({said / 1.5 * 1e3:.1f}-{said * 1.5 * 1e3:.0f} ms), {within2} within 2x; the range is "
                   f"{allv.min() * 1e3:.0f}-{allv.max() * 1e3:.0f} ms ({allv.max() / allv.min():.1f}x), NVIDIA's "
                   f"shipped GPUs {min(nvidia.values()) * 1e3:.1f}-{max(nvidia.values()) * 1e3:.1f} ms. Rubin is the "
                   f"outlier on the low side ({rubin_spec * 1e3:.1f} ms at the launched 22 TB/s; the speaker's "
                   f"288 GB / 20 TB/s = {rubin_speaker * 1e3:.1f} ms). As an upper bound on a useful step (one "
                   f"that reads each byte in HBM once) it holds",
                   {**{f"{k}": f"{v * 1e3:.1f} ms" for k, v in chips.items()},
                    **{f"{k} (systems catalog, per package)": f"{v * 1e3:.1f} ms" for k, v in systems.items()},
                    "speaker's Rubin": f"288 GB / 20 TB/s = {rubin_speaker * 1e3:.1f} ms"})
