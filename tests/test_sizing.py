"""The sizing command (``llmmath.sizing``, ``python -m llmmath size``) and the CLI's units, prices and flags.

Each answer is checked against what can be derived without the library: a replica cannot serve more users than its
free HBM holds caches for, nor run a step faster than it reads its weights; the replicas must cover every user; the
cheapest must be the cheapest; a model too big for one scale-up domain needs pipeline stages.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from llmmath import sizing

ROOT = Path(__file__).resolve().parents[1]
# Llama-3.1-70B (config.json): 70,553,706,496 parameters, bf16; KV per token 2 x 80 layers x 8 heads x 128 x 2 B.
L70_WEIGHT_BYTES = 70_553_706_496 * 2
L70_KV_PER_TOKEN = 2 * 80 * 8 * 128 * 2
H100_HBM, H100_BW = 80e9, 3.35e12            # H100 SXM datasheet
PRICES = {"h100-sxm": 3.0, "h200": 4.0}


@pytest.fixture(scope="module")
def llama_500():
    return sizing.size("llama-3.1-70b", 500, max_tpot_s=0.030, input_tokens=2000, output_tokens=500,
                       chips=list(PRICES), usd_per_chip_hour=PRICES)


def test_every_user_is_served_within_physical_limits(llama_500):
    s = llama_500
    assert s.best is not None and {c.chip for c in s.ranked} == set(PRICES)
    for c in s.ranked:
        assert c.replicas * c.batch_per_replica >= s.users            # nobody left out
        assert (c.replicas - 1) * c.batch_per_replica < s.users or c.replicas == 1   # no idle replica
        assert c.tpot_s <= s.tpot_target_s * 1.0001
    h = next(c for c in s.ranked if c.chip == "h100-sxm")
    n = h.chips_per_replica
    # by hand: the replica's HBM (80 GB a chip, all of it: a bound) less the weights, over one user's cache at the
    # mean context (2,000 + 500/2 tokens)
    users_hbm = (n * H100_HBM - L70_WEIGHT_BYTES) / (2250 * L70_KV_PER_TOKEN)
    assert h.batch_per_replica <= users_hbm
    # and no step beats reading its share of the weights and the caches at the datasheet bandwidth
    floor_s = (L70_WEIGHT_BYTES + h.batch_per_replica * 2250 * L70_KV_PER_TOKEN) / (n * H100_BW)
    assert h.tpot_s >= floor_s


def test_the_cheapest_is_chosen_and_priced(llama_500):
    s = llama_500
    costs = [c.n_chips * PRICES[c.chip] for c in s.ranked]
    assert costs == sorted(costs)
    assert s.best.chip == s.ranked[0].chip
    assert s.best.usd_per_hour == pytest.approx((s.best.replicas) * s.best.chips_per_replica * PRICES[s.best.chip])
    # dollars per million output tokens: 500 users each receiving a token every TPOT seconds
    want = s.best.usd_per_hour / 3600 / (500 / s.best.tpot_s) * 1e6
    assert s.best.usd_per_million_tokens(500) == pytest.approx(want)
    text = s.table()
    assert "cheapest:" in text and "binds:" in text and f"{s.best.n_chips} x {s.best.chip}" in text


def test_the_engine_confirms_the_choice_or_adds_replicas(llama_500):
    s = llama_500
    assert s.load is not None and s.load.concurrency == 500
    assert s.load.itl_s <= s.tpot_target_s * 1.0001 or s.engine_replicas_added == sizing.MAX_ENGINE_STEPS


def test_a_model_bigger_than_a_domain_needs_stages():
    # Llama-3.1-405B in bf16: 405,853,388,800 x 2 B = 812 GB, more than 8 x 80 GB of H100s: one replica must span
    # more than a node's 8 GPUs, so pipeline stages (the domain is 8)
    s = sizing.size("llama-3.1-405b", 64, max_tpot_s=0.1, input_tokens=1000, output_tokens=200, chips=["h100-sxm"],
                    usd_per_chip_hour={"h100-sxm": 3.0}, engine_check=False)
    assert s.best is not None
    assert s.best.pp >= 2 and s.best.chips_per_replica * 80e9 > 405_853_388_800 * 2


def test_a_time_to_first_token_no_placement_meets_is_refused_with_its_reason():
    s = sizing.size("llama-3.1-70b", 10, max_tpot_s=0.05, max_ttft_s=1e-4, input_tokens=8000, output_tokens=100,
                    chips=["h100-sxm"], usd_per_chip_hour={"h100-sxm": 3.0}, engine_check=False)
    assert s.best is None and "first token" in s.refused["h100-sxm"]
    assert "no chip meets the targets" in s.table()


@pytest.mark.parametrize("kw, match", [
    (dict(users=0), "users"), (dict(max_tpot_s=0), "max_tpot_s"), (dict(chips=[]), "chips is empty"),
    (dict(chips=["h1000"]), "h100"), (dict(usd_per_chip_hour={"h100-sxm": -1}), "usd_per_chip_hour"),
])
def test_bad_input_is_refused_with_what_is_allowed(kw, match):
    args = dict(users=10, max_tpot_s=0.05, input_tokens=100, output_tokens=100, chips=["h100-sxm"],
                usd_per_chip_hour={"h100-sxm": 3.0}, engine_check=False)
    args.update(kw)
    with pytest.raises((ValueError, KeyError), match=match):
        sizing.size("llama-3.1-8b", args.pop("users"), **args)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "llmmath", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_size_answers_the_question_in_json_and_text():
    r = _cli("size", "--model", "llama-3.1-70b", "--users", "500", "--tpot-ms", "30", "--input-tokens", "2000",
             "--output-tokens", "500", "--chip", "h100-sxm,h200", "--usd-per-chip-hour", "h100-sxm=3,h200=4",
             "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["best"]["n_chips"] == d["best"]["replicas"] * d["best"]["chips_per_replica"]
    assert d["binds"] and d["engine"]["concurrency"] == 500
    r = _cli("size", "--model", "llama-3.1-70b", "--users", "0", "--tpot-ms", "30", "--input-tokens", "2000",
             "--output-tokens", "500")
    assert r.returncode == 2 and "--users" in r.stderr


def test_cli_plan_prices_only_what_fits_and_names_the_flag_that_fixes_it():
    r = _cli("plan", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--usd-per-chip-hour", "3")
    assert r.returncode == 0, r.stderr
    assert "$" not in r.stdout and "none: the weights do not fit" in r.stdout
    # 141 GB of bf16 weights over 74 GB usable a chip: two chips a replica is the smallest fix
    assert "try --tp 2" in r.stdout
    r = _cli("predict", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--input-tokens", "2000",
             "--output-tokens", "500")
    assert r.returncode == 2 and "argument --tp" in r.stderr and "try --tp 2" in r.stderr


def test_cli_predict_prices_when_given_a_price():
    args = ("predict", "--model", "llama-3.1-8b", "--chip", "h100-sxm", "--input-tokens", "1000", "--output-tokens",
            "200")
    r = _cli(*args, "--usd-per-chip-hour", "3.6")
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("$ per 1M output tokens"))
    rate = json.loads(_cli(*args, "--json").stdout)["tokens_per_s_per_chip"]
    # $3.6 an hour is $0.001 a second: a million tokens at `rate` a second cost 1,000 / rate dollars
    assert f"${1e3 / rate:.3g}" in line


def test_cli_simulate_prints_units():
    r = _cli("simulate", "--model", "llama-3.1-8b", "--chip", "h100-sxm", "--requests-per-s", "2", "--requests", "200",
             "--input-tokens", "500", "--output-tokens", "100")
    assert r.returncode == 0, r.stderr
    rows = dict(ln.split(None, 1) for ln in r.stdout.splitlines())
    assert rows["tpot_s_p50"].endswith(" ms") and rows["throughput_output_tokens_per_s"].endswith(" tokens/s")
    assert rows["kv_capacity_bytes_per_chip"].endswith("GB") and math.isfinite(float(rows["steps"].replace(",", "")))


def test_a_pipelined_answer_is_not_sent_to_the_one_stage_engine():
    # a 50 ms first-token target on 2,000-token prompts leaves only pipelined placements (their prefill is split
    # over the stages' chips): the answer stands on the one step model, and says so
    s = sizing.size("llama-3.1-70b", 500, max_tpot_s=0.030, max_ttft_s=0.050, input_tokens=2000, output_tokens=500,
                    chips=["h100-sxm", "h200"], usd_per_chip_hour={"h100-sxm": 2.5, "h200": 2.5})
    assert s.best is not None and s.best.pp > 1 and s.load is None
    assert "one-stage" in s.table()
    costs = [c.usd_per_hour for c in s.ranked]
    assert costs == sorted(costs) and s.best is s.ranked[0]


def test_a_price_for_a_chip_not_tried_is_refused():
    with pytest.raises(ValueError, match="h200"):
        sizing.size("llama-3.1-8b", 10, max_tpot_s=0.05, input_tokens=100, output_tokens=100, chips=["h100-sxm"],
                    usd_per_chip_hour={"h200": 3.0}, engine_check=False)


def test_cli_predict_does_not_price_a_batch_that_does_not_fit_and_simulate_says_overloaded():
    r = _cli("predict", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--tp", "8",
             "--input-tokens", "2000", "--output-tokens", "500", "--batch", "100000", "--usd-per-chip-hour", "3")
    assert r.returncode == 0, r.stderr
    assert "does NOT fit" in r.stdout and "not priced" in r.stdout
    # 20 requests a second x 500 tokens = 10,000 tokens/s asked of one H100 serving an 8B model
    r = _cli("simulate", "--model", "llama-3.1-8b", "--chip", "h100-sxm", "--requests-per-s", "20", "--requests", "1000",
             "--input-tokens", "2000", "--output-tokens", "500")
    assert r.returncode == 0, r.stderr
    assert "OVERLOADED" in r.stdout


def test_cli_simulate_names_the_placement_that_makes_room_for_a_request():
    # 141 GB of bf16 weights on one 80 GB H100 per replica leaves no room for any cache: two chips a replica do
    r = _cli("simulate", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--requests-per-s", "1",
             "--requests", "50", "--input-tokens", "2000", "--output-tokens", "500")
    assert r.returncode == 2 and "argument --tp" in r.stderr and "try --tp 2" in r.stderr
