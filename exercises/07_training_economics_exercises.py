# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 7 — Exercises: training economics
# *Generated from `solutions/07_training_economics_solutions.py` by `tools/make_exercises.py`; edit that file, not this one.*
#
# Six problems. Work each by hand, put your number in `answer`, run the cell.

# %%
from llmmath import check_answer, critical_batch, training

# %% [markdown]
# ### Problem 1 — the 6ND rule
# Llama-3.1-405B (405,853,388,800 parameters) was pre-trained on 15.6T tokens.
# About how many FLOPs did that take?

# %%
answer = ...  # FLOPs
ok = check_answer("07.1", answer)

# %% [markdown]
# ### Problem 2 — a compute-optimal model from the Epoch refit
# With Besiroglu et al.'s refit of the Chinchilla law ($A = 482.01$,
# $B = 2085.43$, $\alpha = 0.3478$, $\beta = 0.3658$), what model size minimizes the
# loss for $10^{24}$ FLOPs?

# %%
answer = ...  # parameters
ok = check_answer("07.2", answer)

# %% [markdown]
# ### Problem 3 — steps against batch
# A training run has $S_\text{min} = 10$ steps and $B_\text{noise} = 100$. How many
# steps does it need at batch 50?

# %%
answer = ...  # steps
ok = check_answer("07.3", answer)

# %% [markdown]
# ### Problem 4 — where a sum is smallest
# Where is $f(x) = 4x^2 + 2/x$ smallest? (At that point, how do the two terms compare?)

# %%
answer = ...  # x
ok = check_answer("07.4", answer)

# %% [markdown]
# ### Problem 5 — RL tokens for equal machine time
# A lab pre-trains on 15T tokens at 40% MFU. Its RL runs at 12% MFU and costs 4
# FLOPs per parameter per token. How many RL tokens take the same machine time
# as pre-training?

# %%
answer = ...  # tokens
ok = check_answer("07.5", answer)

# %% [markdown]
# ### Problem 6 — the speaker's serving estimate
# A model serves 50 million tokens per second for two months (61 days). How
# many tokens is that?

# %%
answer = ...  # tokens
ok = check_answer("07.6", answer)

