# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 4 — Exercises: schedules
#
# Six problems on the fixed-cadence batcher and the HBM read time. Work each by
# hand first, then put your number in `answer` and run the cell: `check_answer`
# says right, or how far off you are. It never shows the answer. Answers in seconds
# (not milliseconds) unless the problem says otherwise.

# %%
from llmmath import check_answer, schedule

# %% [markdown]
# ### Problem 1 — mean latency of one step
# A server starts a step every 25 ms and each step takes the whole 25 ms. Requests
# arrive at random times (uniform in phase). What is the mean time from a request's
# arrival to the end of its first step?

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds
answer = 0.025 / 2 + 0.025
# END SOLUTION
ok = check_answer("04.1", answer)
# BEGIN SOLUTION
assert ok
r = schedule.simulate_cadence(schedule.poisson_arrivals(4000, 200_000, seed=1), 0.025)
assert abs(r.mean_latency_s / answer - 1) < 0.01
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** The wait is uniform on $[0, T)$, mean $T/2 = 12.5$ ms; add the
# 25 ms step: 37.5 ms = 0.0375 s ($1.5T$).

# %% [markdown]
# ### Problem 2 — a step shorter than the cadence
# The cadence is 20 ms but a step finishes in 15 ms (the GPU idles 5 ms). What is
# the worst-case latency of one step, if no train is ever full?

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds
answer = 0.020 + 0.015
# END SOLUTION
ok = check_answer("04.2", answer)
# BEGIN SOLUTION
assert ok
assert schedule.uniform_phase_latency(0.020, 0.015)["max_latency_s"] == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Worst wait $T$ = 20 ms (arriving just after a departure), plus
# the 15 ms ride: 35 ms. The bound is $T + t_\text{step}$, which is $2T$ only when the step fills the period.

# %% [markdown]
# ### Problem 3 — the most a cadence can carry
# Each 20 ms departure seats 512 requests. What is the largest arrival rate, in
# requests per second, that the server can sustain without an ever-growing queue?

# %%
# BEGIN SOLUTION stub: answer = ...  # requests per second
answer = 512 / 0.020
# END SOLUTION
ok = check_answer("04.3", answer)
# BEGIN SOLUTION
assert ok
assert schedule.max_stable_rate_per_s(512, 0.020) == answer
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $512 / 0.02\ \text{s} = 25{,}600$ requests/s. Near it, Poisson
# bunching already overfills some trains (chapter 4's load table).

# %% [markdown]
# ### Problem 4 — overload
# The same server (512 seats every 20 ms) receives a steady 30,000 requests per
# second. After 10 s, how long does a newly arriving request wait before it boards?

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds
served = 512 / 0.020
answer = (30_000 - served) * 10 / served
# END SOLUTION
ok = check_answer("04.4", answer)
# BEGIN SOLUTION
assert ok
r = schedule.simulate_cadence(schedule.poisson_arrivals(30_000, 300_000, seed=2), 0.020, capacity=512)
i = int(abs(r.arrival_s - 10.0).argmin())
assert abs(r.wait_s[i] / answer - 1) < 0.05
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** In 10 s, 300,000 arrive and 256,000 are carried: a backlog of
# 44,000, which drains at 25,600 per second: 1.72 s of waiting, growing by 0.17 s every second.

# %% [markdown]
# ### Problem 5 — the H200's HBM read time
# An H200 holds 141 GB of HBM3e and reads it at 4.8 TB/s. How long does reading all of it once take?

# %%
# BEGIN SOLUTION stub: answer = ...  # seconds
answer = 141e9 / 4.8e12
# END SOLUTION
ok = check_answer("04.5", answer)
# BEGIN SOLUTION
assert ok
assert abs(schedule.hbm_period_s("h200") / answer - 1) < 1e-9
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $141\times10^9 / 4.8\times10^{12} = 29.4$ ms — about 1.5× the claim's 20 ms, near the
# catalog's median part.

# %% [markdown]
# ### Problem 6 — throughput at the natural cadence
# A Rubin GPU (288 GB of HBM4 at 22 TB/s) runs steps that read all of its HBM once,
# at a batch of 2,000 sequences. How many tokens per second does it produce?

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens per second
answer = 2000 / (288e9 / 22e12)
# END SOLUTION
ok = check_answer("04.6", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** A step takes $288/22{,}000$ s = 13.1 ms, so 76 steps/s and
# $2{,}000 \times 76.4 = 152{,}800$ tokens/s — a little above the speaker's 128K
# ($\approx 64 \times B$, a step of $1/64$ s $\approx$ 15.6 ms).
