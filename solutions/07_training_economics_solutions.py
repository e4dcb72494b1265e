# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 7 — Exercises: training economics
#
# Six problems. Work each by hand, put your number in `answer`, run the cell.

# %%
from llmmath import check_answer, critical_batch, training

# %% [markdown]
# ### Problem 1 — the 6ND rule
# Llama-3.1-405B (405,853,388,800 parameters) was pre-trained on 15.6T tokens.
# About how many FLOPs did that take?

# %%
# BEGIN SOLUTION stub: answer = ...  # FLOPs
answer = 6 * 405_853_388_800 * 15.6e12
# END SOLUTION
ok = check_answer("07.1", answer)
# BEGIN SOLUTION
assert ok
assert abs(training.train_flops(405_853_388_800, 15.6e12) / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $6 \times 4.06\times10^{11} \times 1.56\times10^{13} = 3.8\times10^{25}$ FLOPs — at 40% MFU on
# H100s (989.5 TFLOP/s) that is $3.8\times10^{25} / (0.4 \times 9.895\times10^{14}) = 9.6\times10^{10}$ GPU-seconds,
# $\div 3600 = 26.7$ million GPU-hours. (Meta's model card reports 30.84M for the whole run, long-context
# stage and restarts included: 35% MFU over all of it.)

# %% [markdown]
# ### Problem 2 — a compute-optimal model from the Epoch refit
# With Besiroglu et al.'s refit of the Chinchilla law ($A = 482.01$,
# $B = 2085.43$, $\alpha = 0.3478$, $\beta = 0.3658$), what model size minimizes the
# loss for $10^{24}$ FLOPs?

# %%
# BEGIN SOLUTION stub: answer = ...  # parameters
a, A, b, B = 0.3478, 482.01, 0.3658, 2085.43
G = (a * A / (b * B)) ** (1 / (a + b))
answer = G * (1e24 / 6) ** (b / (a + b))
# END SOLUTION
ok = check_answer("07.2", answer)
# BEGIN SOLUTION
assert ok
assert abs(training.chinchilla_optimal(1e24, "epoch")[0] / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $G = (0.3478 \times 482.01 / (0.3658 \times 2085.43))^{1/0.7136} = 0.2198^{1.401} = 0.120$;
# $(C/6)^{\beta/(\alpha+\beta)} = (1.67\times10^{23})^{0.513} = 8.0\times10^{11}$: $N^* = 0.120 \times 8.0\times10^{11} \approx 96$B, trained on
# $D^* = C / (6N^*) = 1.74$T tokens — 18 tokens per parameter, close to the famous 20.

# %% [markdown]
# ### Problem 3 — steps against batch
# A training run has $S_\text{min} = 10$ steps and $B_\text{noise} = 100$. How many
# steps does it need at batch 50?

# %%
# BEGIN SOLUTION stub: answer = ...  # steps
answer = 10 * (1 + 100 / 50)
# END SOLUTION
ok = check_answer("07.3", answer)
# BEGIN SOLUTION
assert ok
assert abs(critical_batch.steps_model(50, 10, 100) - answer) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $10 \times (1 + 2) = 30$ steps, and $30 \times 50 = 1{,}500$ examples against
# $E_\text{min} = 1{,}000$: halving the batch to 25 would save 17% of the examples but take 50 steps.

# %% [markdown]
# ### Problem 4 — where a sum is smallest
# Where is $f(x) = 4x^2 + 2/x$ smallest? (At that point, how do the two terms compare?)

# %%
# BEGIN SOLUTION stub: answer = ...  # x
answer = (1 * 2 / (2 * 4)) ** (1 / 3)
# END SOLUTION
ok = check_answer("07.4", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $f'(x) = 8x - 2/x^2 = 0 \Rightarrow x^3 = 1/4$, $x^* = 0.630$. There $4x^2 = 1.59$ and
# $2/x = 3.17$: the terms stand $1 : 2$ ($q : p$ with $p = 2$, $q = 1$), not equal.

# %% [markdown]
# ### Problem 5 — RL tokens for equal machine time
# A lab pre-trains on 15T tokens at 40% MFU. Its RL runs at 12% MFU and costs 4
# FLOPs per parameter per token. How many RL tokens take the same machine time
# as pre-training?

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens
answer = 15e12 * (6 / 0.4) / (4 / 0.12)
# END SOLUTION
ok = check_answer("07.5", answer)
# BEGIN SOLUTION
assert ok
assert abs(training.equal_cost_tokens(15e12, 4, 0.4, 0.12)[0] / answer - 1) < 1e-12
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** Pre-training: 15 peak-FLOP-units per parameter-token; RL: 33.3. $15\text{T} \times 15/33.3 = 6.75$T:
# fewer RL tokens, as claim 30 says — by 2.2× here.

# %% [markdown]
# ### Problem 6 — the speaker's serving estimate
# A model serves 50 million tokens per second for two months (61 days). How
# many tokens is that?

# %%
# BEGIN SOLUTION stub: answer = ...  # tokens
answer = 5e7 * 61 * 86_400
# END SOLUTION
ok = check_answer("07.6", answer)
# BEGIN SOLUTION
assert ok
# END SOLUTION

# %% [markdown] tags=["solution"]
# **Worked answer.** $5\times10^7 \times 5.27\times10^6\ \text{s} = 2.6\times10^{14}$ tokens — 264T, a bit above the
# speaker's "about 200T"; against $20 \times 100\text{B} = 2\text{T}$ Chinchilla tokens, 130×.
