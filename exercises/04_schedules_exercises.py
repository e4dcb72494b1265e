# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 4 — Exercises: schedules
# *Generated from `solutions/04_schedules_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
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
answer = ...  # seconds
ok = check_answer("04.1", answer)

# %% [markdown]
# ### Problem 2 — a step shorter than the cadence
# The cadence is 20 ms but a step finishes in 15 ms (the GPU idles 5 ms). What is
# the worst-case latency of one step, if no train is ever full?

# %%
answer = ...  # seconds
ok = check_answer("04.2", answer)

# %% [markdown]
# ### Problem 3 — the most a cadence can carry
# Each 20 ms departure seats 512 requests. What is the largest arrival rate, in
# requests per second, that the server can sustain without an ever-growing queue?

# %%
answer = ...  # requests per second
ok = check_answer("04.3", answer)

# %% [markdown]
# ### Problem 4 — overload
# The same server (512 seats every 20 ms) receives a steady 30,000 requests per
# second. After 10 s, how long does a newly arriving request wait before it boards?

# %%
answer = ...  # seconds
ok = check_answer("04.4", answer)

# %% [markdown]
# ### Problem 5 — the H200's HBM read time
# An H200 holds 141 GB of HBM3e and reads it at 4.8 TB/s. How long does reading all of it once take?

# %%
answer = ...  # seconds
ok = check_answer("04.5", answer)

# %% [markdown]
# ### Problem 6 — throughput at the natural cadence
# A Rubin GPU (288 GB of HBM4 at 22 TB/s) runs steps that read all of its HBM once,
# at a batch of 2,000 sequences. How many tokens per second does it produce?

# %%
answer = ...  # tokens per second
ok = check_answer("04.6", answer)

