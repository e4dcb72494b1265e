"""Every check that rests on catalog data can fail: realistic slips in the catalogs trip it.

The course promises that each claim's check fails when the numbers stop supporting
it. A check that compares the library with itself fed the same catalog values, or
an identity that holds by construction, passes whatever the data say. This test
keeps the promise: it applies the mistakes people really make when copying a
datasheet, a config or a paper (each slip below is named after one) to copies of
the TOML catalogs, and asserts that every claim whose check reads catalog data
*trips* under at least one of them: the check raises, or returns a verdict word
other than the recorded one.

Claims whose checks rest only on simulation or measurement are listed in
``NOT_CATALOG`` with the reason; a test also asserts that no slip trips them (if
one does, the check does read the catalogs and belongs in the main list).
"""

from __future__ import annotations

import copy
import sys

import pytest

from llmmath import _catalog, claims

RECORDED = None  # filled lazily from test_claims_answers (one source of the recorded verdicts)


def _recorded() -> dict:
    global RECORDED
    if RECORDED is None:
        from test_claims_answers import RECORDED as R

        RECORDED = dict(R)
    return RECORDED


# --------------------------------------------------------------------------------------
# The slips: (name, catalog file, function that edits the parsed TOML in place)
# --------------------------------------------------------------------------------------

TENSOR_DTYPES = ("tf32", "bf16", "fp16", "fp8", "int8", "fp4", "fp6")


def _sparse_as_dense(chips):
    def edit(data):
        for key in chips or data["chips"]:
            peaks = data["chips"][key]["peak_flops_per_s"]
            for dt in TENSOR_DTYPES:
                if dt in peaks:
                    peaks[dt] *= 2
    return edit


def _scale(table, keys, field, factor):
    def edit(data):
        for key in keys or data[table]:
            row = data[table][key]
            if field in row:
                row[field] *= factor
    return edit


def _set(table, key, field, value):
    def edit(data):
        data[table][key][field] = value
    return edit


def _fp8_without_speedup(data):
    for row in data["chips"].values():
        peaks = row["peak_flops_per_s"]
        if "fp8" in peaks and "bf16" in peaks:
            peaks["fp8"] = peaks["bf16"]


def _tier_prices_swapped(data):
    for row in data["prices"].values():
        for side in ("input", "output"):
            lo, hi = f"{side}_usd_per_mtok", f"{side}_above_threshold_usd_per_mtok"
            row[lo], row[hi] = row[hi], row[lo]


GIB = 2**30 / 1e9


def _tpu_v5e_int8_as_bf16(data):
    peaks = data["chips"]["tpu-v5e"]["peak_flops_per_s"]
    peaks["bf16"] = peaks["int8"]

SLIPS = [
    # hardware.toml: FLOP/s, bandwidth and capacity read the wrong way off a datasheet
    ("H100 datasheet's with-sparsity tensor FLOP/s taken as dense", "hardware.toml", _sparse_as_dense(["h100-sxm"])),
    ("GB200's with-sparsity tensor FLOP/s taken as dense", "hardware.toml", _sparse_as_dense(["gb200"])),
    ("B200's with-sparsity tensor FLOP/s taken as dense", "hardware.toml", _sparse_as_dense(["b200"])),
    ("every chip's with-sparsity tensor FLOP/s taken as dense", "hardware.toml", _sparse_as_dense(None)),
    ("fp8 FLOP/s copied from the bf16 column (no fp8 speed-up)", "hardware.toml", _fp8_without_speedup),
    ("H100 NVLink's 900 GB/s bidirectional taken per direction", "hardware.toml",
     _scale("chips", ["h100-sxm"], "scale_up_bytes_per_s", 2)),
    ("every chip's scale-up bandwidth bidirectional taken per direction", "hardware.toml",
     _scale("chips", None, "scale_up_bytes_per_s", 2)),
    ("400 Gb/s NICs read as 400 GB/s", "hardware.toml", _scale("chips", None, "scale_out_bytes_per_s", 8)),
    ("HBM capacity in GiB read as GB (every chip)", "hardware.toml", _scale("chips", None, "hbm_bytes", 1 / GIB)),
    ("H200's HBM bandwidth copied from the H100 row (3.35 TB/s)", "hardware.toml",
     _set("chips", "h200", "hbm_bytes_per_s", 3.35e12)),
    ("HBM bandwidth in TiB/s typed as TB/s, then halved by a per-stack slip (every chip)", "hardware.toml",
     _scale("chips", None, "hbm_bytes_per_s", 0.5)),
    ("H100's HBM capacity taken from the 94 GB NVL part", "hardware.toml", _set("chips", "h100-sxm", "hbm_bytes", 94e9)),
    ("B200's HBM bandwidth copied from the H200 row (4.8 TB/s)", "hardware.toml",
     _set("chips", "b200", "hbm_bytes_per_s", 4.8e12)),
    ("A100 80GB's HBM bandwidth taken from the 40 GB part (1.555 TB/s)", "hardware.toml",
     _set("chips", "a100-80gb", "hbm_bytes_per_s", 1.555e12)),
    # models.toml: config fields mistyped
    ("DeepSeek-V3 top-k 8 typed as 6", "models.toml", _set("models", "deepseek-v3", "experts_per_token", 6)),
    ("DeepSeek-V3 routed experts 256 taken from V2 (160)", "models.toml", _set("models", "deepseek-v3", "n_experts", 160)),
    ("DeepSeek-V3 expert width taken as the dense d_ff (18432)", "models.toml",
     _set("models", "deepseek-v3", "d_ff_expert", 18432)),
    ("DeepSeek-V3 kv_lora_rank typed as the q rank (1536)", "models.toml",
     _set("models", "deepseek-v3", "kv_lora_rank", 1536)),
    ("Llama-3.1-70B's 8 KV heads read as 64 (MHA)", "models.toml", _set("models", "llama-3.1-70b", "n_kv_heads", 64)),
    ("Llama-3.1-8B's 8 KV heads read as 32 (MHA)", "models.toml", _set("models", "llama-3.1-8b", "n_kv_heads", 32)),
    ("Kimi K2 top-k 8 typed as 16", "models.toml", _set("models", "kimi-k2", "experts_per_token", 16)),
    ("every model's layer count doubled (attention and MLP blocks counted as separate layers)", "models.toml",
     _scale("models", None, "n_layers", 2)),
    ("Kimi K2's 64 attention heads copied from DeepSeek-V3's config (128)", "models.toml",
     _set("models", "kimi-k2", "n_heads", 128)),
    ("Kimi K2's 384 routed experts taken as DeepSeek-V3's 256", "models.toml", _set("models", "kimi-k2", "n_experts", 256)),
    ("Qwen3-235B-A22B's expert width 1536 taken from Qwen3-30B-A3B (768)", "models.toml",
     _set("models", "qwen3-235b-a22b", "d_ff_expert", 768)),
    ("Llama-3.1-405B's FFN width 53,248 taken from Llama-3.1-70B (28,672)", "models.toml",
     _set("models", "llama-3.1-405b", "d_ff", 28672)),
    # systems.toml and deployments.toml: domains and links
    ("NVL72's 1.8 TB/s bidirectional NVLink taken per direction (every system)", "systems.toml",
     _scale("systems", None, "scale_up_bytes_per_s_per_package", 2)),
    ("NVL144 counted in dies where packages were meant (every system doubles)", "systems.toml",
     _scale("systems", None, "packages", 2)),
    ("GB200 NVL72 counted in dies: 144 packages", "systems.toml", _set("systems", "gb200-nvl72", "packages", 144)),
    ("HGX H100's NVLink 900 GB/s bidirectional taken per direction", "systems.toml",
     _scale("systems", ["hgx-h100"], "scale_up_bytes_per_s_per_package", 2)),
    ("GB200's 8 TB/s HBM taken per die, not per package (4 TB/s)", "systems.toml",
     _set("systems", "gb200-nvl72", "hbm_bytes_per_s_per_package", 4e12)),
    ("system scale-out 400 Gb/s read as 400 GB/s", "systems.toml",
     _scale("systems", None, "scale_out_bytes_per_s_per_package", 8)),
    ("system HBM bandwidth per package halved (a per-die figure taken per package)", "systems.toml",
     _scale("systems", None, "hbm_bytes_per_s_per_package", 0.5)),
    ("GB300 NVL72's 288 GB per GPU copied from the GB200 row (186 GB)", "systems.toml",
     _set("systems", "gb300-nvl72", "hbm_bytes_per_package", 186e9)),
    ("deployment link bandwidths bidirectional taken per direction", "deployments.toml",
     _scale("deployments", None, "scale_out_bytes_per_s", 2)),
    ("deployment GPU counts read per node instead of per deployment", "deployments.toml",
     _scale("deployments", None, "gpus", 1 / 8)),
    # training_runs.toml, pricing, studies
    ("training tokens off by 10x (billions vs trillions slip)", "training_runs.toml",
     _scale("runs", None, "tokens", 10)),
    ("training tokens a tenth of the published count", "training_runs.toml", _scale("runs", None, "tokens", 0.1)),
    ("Llama 3.1's 39.3M GPU-hours for all three models taken for the 405B alone", "training_runs.toml",
     _set("runs", "llama-3.1-405b", "gpu_hours", 39.3e6)),
    ("DeepSeek-V3's 2.788M total H800-hours (with context extension and post-training) taken as pre-training",
     "training_runs.toml", _set("runs", "deepseek-v3", "gpu_hours", 2.788e6)),
    # issue 28: slips the reviewers applied that a check let through
    ("H200's 141 GB of HBM entered as 141 GiB", "hardware.toml", _set("chips", "h200", "hbm_bytes", 141 * 2**30)),
    ("TPU v5e's 16 GB of HBM entered as 16 GiB", "hardware.toml", _set("chips", "tpu-v5e", "hbm_bytes", 16 * 2**30)),
    ("GB300 NVL72's 288 GB per GPU entered as 288 GiB", "systems.toml",
     _set("systems", "gb300-nvl72", "hbm_bytes_per_package", 288 * 2**30)),
    ("Vera Rubin NVL72's 3.6 TB/s bidirectional NVLink taken per direction", "systems.toml",
     _scale("systems", ["vera-rubin-nvl72"], "scale_up_bytes_per_s_per_package", 2)),
    ("Helios's bidirectional scale-up taken per direction", "systems.toml",
     _scale("systems", ["helios-mi450"], "scale_up_bytes_per_s_per_package", 2)),
    ("HGX B200 given an 800 Gb/s NIC (ConnectX-8) instead of 400", "systems.toml",
     _scale("systems", ["hgx-b200"], "scale_out_bytes_per_s_per_package", 2)),
    ("the DeepSeek-V3 run's GPU taken as the H100 PCIe", "training_runs.toml", _set("runs", "deepseek-v3", "gpu", "h100-pcie")),
    ("Llama-3.1-8B's training tokens x10", "training_runs.toml", _scale("runs", ["llama-3.1-8b"], "tokens", 10)),
    ("Qwen3-4B's training tokens a tenth", "training_runs.toml", _scale("runs", ["qwen3-4b"], "tokens", 0.1)),
    ("MI300X's with-sparsity tensor FLOP/s taken as dense", "hardware.toml", _sparse_as_dense(["mi300x"])),
    ("MI300X's HBM bandwidth taken from the MI325X (6 TB/s)", "hardware.toml",
     _set("chips", "mi300x", "hbm_bytes_per_s", 6e12)),
    ("TPU v5e's int8 rate taken as its bf16", "hardware.toml", _tpu_v5e_int8_as_bf16),
    ("H200's with-sparsity tensor FLOP/s taken as dense", "hardware.toml", _sparse_as_dense(["h200"])),
    ("H200's HBM taken as 192 GB (the MI300X's)", "hardware.toml", _set("chips", "h200", "hbm_bytes", 192e9)),
    ("Qwen3-4B's 32 attention heads read as 16", "models.toml", _set("models", "qwen3-4b", "n_heads", 16)),
    ("Vera Rubin's 22 TB/s HBM4 taken as the 13 TB/s first announced", "systems.toml",
     _set("systems", "vera-rubin-nvl72", "hbm_bytes_per_s_per_package", 13e12)),
    ("DeepSeek-V3 top-k 8 typed as 9", "models.toml", _set("models", "deepseek-v3", "experts_per_token", 9)),
    ("long-context price tiers swapped (above-threshold price as the base)", "long_context_pricing.toml",
     _tier_prices_swapped),
    ("context windows read in KiB of tokens (x1.024) and thresholds dropped", "long_context_pricing.toml",
     _scale("prices", None, "threshold_tokens", 0)),
    # this round's chips: the slips their datasheets invite
    ("L40S's GDDR6 entered as HBM", "hardware.toml", _set("chips", "l40s", "hbm_type", "HBM")),
    ("H20's FP8 296 TFLOPS entered as its BF16", "hardware.toml",
     lambda data: data["chips"]["h20"]["peak_flops_per_s"].update(bf16=296e12)),
    ("GB300's with-sparsity tensor FLOP/s taken as dense", "hardware.toml", _sparse_as_dense(["gb300"])),
    ("MI355X's 8 TB/s HBM taken from the MI300X (5.3 TB/s)", "hardware.toml",
     _set("chips", "mi355x", "hbm_bytes_per_s", 5.3e12)),
    ("TPU v7's 192 GiB of HBM entered as 192 GB", "hardware.toml", _set("chips", "tpu-v7", "hbm_bytes", 192e9)),
    # issue 45: model configs that chapter tables print and only unit tests pinned
    ("DeepSeek-V3's MLA rope key (64 values) dropped", "models.toml",
     _set("models", "deepseek-v3", "qk_rope_head_dim", 0)),
    ("Mixtral's top-2 routing typed as top-1", "models.toml", _set("models", "mixtral-8x7b", "experts_per_token", 1)),
    ("Qwen3-30B-A3B's 768-wide experts typed as 1,536 (Qwen3-235B's)", "models.toml",
     _set("models", "qwen3-30b-a3b", "d_ff_expert", 1536)),
    ("H100's bidirectional NVLink 900 GB/s taken per direction", "hardware.toml",
     _set("chips", "h100-sxm", "scale_up_bytes_per_s", 900e9)),
    ("GB200's 72-GPU NVLink domain typed as 36", "hardware.toml", _set("chips", "gb200", "scale_up_domain", 36)),
    ("gpt-oss-120b's top-4 routing typed as top-8", "models.toml", _set("models", "gpt-oss-120b", "experts_per_token", 8)),
    # issue 45: catalogs that restate a chip's figures
    ("DGX B200's raw 192 GB a GPU entered for the usable 180 in the system", "systems.toml",
     _set("systems", "hgx-b200", "hbm_bytes_per_package", 192e9)),
    ("HBM3's 3.35 TB/s copied into the H200 system", "systems.toml",
     _set("systems", "hgx-h200", "hbm_bytes_per_s_per_package", 3.35e12)),
    ("GB200 NVL72's HBM per die (93 GB) entered per package", "systems.toml",
     _set("systems", "gb200-nvl72", "hbm_bytes_per_package", 93e9)),
    ("an H100's 450 GB/s NVLink in the H800 decode deployment", "deployments.toml",
     _set("deployments", "deepseek-v3-report-decode", "scale_up_bytes_per_s", 450e9)),
    ("the H800 deployment's NIC counted in both directions", "deployments.toml",
     _set("deployments", "deepseek-v3-report-decode", "scale_out_bytes_per_s", 100e9)),
    # issue 45: the all-to-all's latency and achieved rate
    ("the all-to-all priced at the link's full bandwidth (DeepEP's 0.82 typed as 1)", "engine_constants.toml",
     lambda d: d["collectives"].__setitem__("all_to_all_fraction", 1.0)),
    ("NVLink's 3.33 us message latency typed in milliseconds", "deployments.toml",
     _set("latency", "deepseek-nvlink-intra-node-64B", "seconds", 3.33e-3)),
]

# Claims whose checks rest only on a simulation or a measurement on this machine.
NOT_CATALOG = {
    12: "simulates a fixed-cadence batch schedule (schedule.simulate), no catalog number",
    23: "measures a critical batch size on a toy regression (critical_batch), no catalog number",
    37: "measures top-k attention's accuracy on random and structured data against the exact prediction",
    38: "trains a digit classifier and attacks it; a cipher's avalanche, no catalog number",
    39: "trains a reversible network and measures its memory, no catalog number",
}


def _clear_caches():
    """Forget every catalog-derived cache (hardware, models, systems ...), keep the rest.

    Only modules that read the catalogs (those that import ``_catalog``) are cleared: the
    trained classifier of chapter 9 and compiled kernels stay cached, or each slip would
    retrain them.
    """
    for name, mod in list(sys.modules.items()):
        if not name.startswith("llmmath") or getattr(mod, "_catalog", None) is not _catalog:
            continue
        for attr in vars(mod).values():
            if callable(attr) and hasattr(attr, "cache_clear"):
                attr.cache_clear()


@pytest.fixture
def slipped(monkeypatch):
    """``slipped(slips, fn)``: run ``fn()`` with the slips applied to copies of their catalogs, then restore."""
    real_load = _catalog.load.__wrapped__

    def run(slips, fn):
        data = {}
        for _name, filename, edit in slips:
            data.setdefault(filename, copy.deepcopy(real_load(filename)))
            edit(data[filename])
        monkeypatch.setattr(_catalog, "load", lambda fname: data[fname] if fname in data else real_load(fname))
        _clear_caches()
        try:
            return fn()
        finally:
            monkeypatch.undo()
            _clear_caches()

    return run


def _trips(claim_id: int) -> tuple[bool, str]:
    """Whether claim ``claim_id``'s check fails now: it raises ClaimCheckFailed (an assertion), or its
    verdict word changes. An error the slip provokes elsewhere (a placement that no longer divides,
    say) is not the check catching the mistake, and does not count."""
    try:
        v = claims.check(claim_id, quiet=True)
    except AssertionError as e:  # claims.ClaimCheckFailed is one
        return True, f"{type(e).__name__}: {str(e)[:120]}"
    except (ValueError, KeyError, TypeError, ZeroDivisionError) as e:
        return False, f"not a check failure: {type(e).__name__}: {str(e)[:120]}"
    if v.verdict != _recorded()[claim_id]:
        return True, f"verdict {v.verdict!r} instead of {_recorded()[claim_id]!r}"
    return False, ""


def test_the_slips_are_many_named_and_each_changes_its_catalog():
    assert len(SLIPS) >= 15
    assert len({s[0] for s in SLIPS}) == len(SLIPS)
    for name, filename, edit in SLIPS:
        before = _catalog.load.__wrapped__(filename)
        after = copy.deepcopy(before)
        edit(after)
        assert after != before, f"slip {name!r} changes nothing in {filename}"


# (That every check passes on the real catalogs is test_claims_answers.test_checks_return_their_recorded_verdicts.)


CATALOG_CLAIMS = sorted(set(range(1, 41)) - set(NOT_CATALOG))

# Checks known not to trip yet (they compare the library with itself or state an identity);
# strict: the marker must go as soon as a check is rebuilt and trips.
NOT_YET_FALSIFIABLE: set[int] = set()


def _catalog_param(cid):
    if cid in NOT_YET_FALSIFIABLE:
        return pytest.param(cid, marks=pytest.mark.xfail(strict=True, reason="check not yet rebuilt on an "
                                                                             "independent derivation"))
    return cid


@pytest.mark.parametrize("claim_id", [_catalog_param(c) for c in CATALOG_CLAIMS])
def test_a_catalog_based_check_trips_on_a_realistic_slip(claim_id, slipped):
    for slip in SLIPS:
        tripped, _why = slipped([slip], lambda: _trips(claim_id))
        if tripped:
            return
    pytest.fail(f"claim {claim_id}'s check passed under every one of the {len(SLIPS)} slips: it cannot fail on "
                f"wrong data. Rebuild it on an independent derivation (a datasheet or paper figure, a hand "
                f"derivation written in the check).")


# The second chips and models the checks compare by hand (issue 13: every claim on two chips and two models):
# a slip in the second one's catalog row must trip the check on its own, not only a slip in the first one's.
SECOND_CHIP_OR_MODEL = [
    ("Kimi K2's 64 attention heads copied from DeepSeek-V3's config (128)", 3),     # MLA intensity 121 by hand
    ("Kimi K2's 64 attention heads copied from DeepSeek-V3's config (128)", 22),    # weights per GPU by hand
    ("Kimi K2's 384 routed experts taken as DeepSeek-V3's 256", 9),                # B* = R s, s by hand
    ("Kimi K2's 384 routed experts taken as DeepSeek-V3's 256", 19),               # total params by hand
    ("Qwen3-235B-A22B's expert width 1536 taken from Qwen3-30B-A3B (768)", 9),     # B* = R s, s by hand
    ("Llama-3.1-405B's FFN width 53,248 taken from Llama-3.1-70B (28,672)", 11),  # B*(L), L_max by hand
    ("Llama-3.1-405B's FFN width 53,248 taken from Llama-3.1-70B (28,672)", 33),  # 2 N_mm / a by hand
    ("GB300 NVL72's 288 GB per GPU copied from the GB200 row (186 GB)", 22),        # GB300 datasheet capacity
    ("B200's HBM bandwidth copied from the H200 row (4.8 TB/s)", 6),                # L*, MFU on a B200 by hand
    ("B200's HBM bandwidth copied from the H200 row (4.8 TB/s)", 32),               # prefill/decode cost on B200s
    ("DeepSeek-V3 expert width taken as the dense d_ff (18432)", 32),             # MoE prefill crossover by hand
    ("B200's HBM bandwidth copied from the H200 row (4.8 TB/s)", 35),               # cost growth on a B200
    ("B200's HBM bandwidth copied from the H200 row (4.8 TB/s)", 40),               # read vs recompute on a B200
    ("GB200's with-sparsity tensor FLOP/s taken as dense", 29),                    # SGLang's GB200 decode MFU
    ("GB200's with-sparsity tensor FLOP/s taken as dense", 30),
    ("B200's with-sparsity tensor FLOP/s taken as dense", 28),                     # serving on B200 fp8, by hand
]


# Issue 28: a slip must trip the check of every claim whose stated or printed numbers it changes, not only the one
# claim it happened to be written for.
EACH_CLAIM_ITS_SLIPS = [
    ("H200's 141 GB of HBM entered as 141 GiB", 13),
    ("TPU v5e's 16 GB of HBM entered as 16 GiB", 13),
    ("GB300 NVL72's 288 GB per GPU entered as 288 GiB", 13),
    ("Vera Rubin NVL72's 3.6 TB/s bidirectional NVLink taken per direction", 17),
    ("Helios's bidirectional scale-up taken per direction", 17),
    ("HGX B200 given an 800 Gb/s NIC (ConnectX-8) instead of 400", 17),
    ("the DeepSeek-V3 run's GPU taken as the H100 PCIe", 29),
    ("the DeepSeek-V3 run's GPU taken as the H100 PCIe", 30),
    ("Llama-3.1-8B's training tokens x10", 28),
    ("Llama-3.1-8B's training tokens x10", 31),
    ("Qwen3-4B's training tokens a tenth", 28),
    ("Qwen3-4B's training tokens a tenth", 31),
    ("Llama-3.1-70B's 8 KV heads read as 64 (MHA)", 25),
    ("MI300X's with-sparsity tensor FLOP/s taken as dense", 5),
    ("MI300X's with-sparsity tensor FLOP/s taken as dense", 6),
    ("MI300X's HBM bandwidth taken from the MI325X (6 TB/s)", 5),
    ("MI300X's HBM bandwidth taken from the MI325X (6 TB/s)", 6),
    ("GB200's with-sparsity tensor FLOP/s taken as dense", 9),
    ("TPU v5e's int8 rate taken as its bf16", 9),
    ("H200's with-sparsity tensor FLOP/s taken as dense", 11),
    ("H200's with-sparsity tensor FLOP/s taken as dense", 15),
    ("H100's HBM capacity taken from the 94 GB NVL part", 11),
    ("H100's HBM capacity taken from the 94 GB NVL part", 15),
    ("H200's HBM taken as 192 GB (the MI300X's)", 34),
    ("Qwen3-4B's 32 attention heads read as 16", 34),
    ("Vera Rubin's 22 TB/s HBM4 taken as the 13 TB/s first announced", 36),
    ("B200's with-sparsity tensor FLOP/s taken as dense", 36),
    ("H100 datasheet's with-sparsity tensor FLOP/s taken as dense", 3),
    ("B200's HBM bandwidth copied from the H200 row (4.8 TB/s)", 3),
    ("DeepSeek-V3 top-k 8 typed as 9", 1),
    ("DeepSeek-V3 top-k 8 typed as 9", 4),
    ("L40S's GDDR6 entered as HBM", 13),                     # a 56 ms part inside the HBM read-time range
    ("H20's FP8 296 TFLOPS entered as its BF16", 5),         # the low-ridge exception's crossover
    ("H20's FP8 296 TFLOPS entered as its BF16", 13),
    ("GB300's with-sparsity tensor FLOP/s taken as dense", 5),
    ("MI355X's 8 TB/s HBM taken from the MI300X (5.3 TB/s)", 13),
    ("TPU v7's 192 GiB of HBM entered as 192 GB", 13),
    ("DeepSeek-V3's MLA rope key (64 values) dropped", 3),    # L* on an H100 moved 19,449 -> 50,173 tokens
    ("DeepSeek-V3's MLA rope key (64 values) dropped", 5),
    ("DeepSeek-V3's MLA rope key (64 values) dropped", 11),
    ("Mixtral's top-2 routing typed as top-1", 1),
    ("H100's bidirectional NVLink 900 GB/s taken per direction", 1),   # chapter 0's table; every all-chips check
    ("GB200's 72-GPU NVLink domain typed as 36", 1),
    ("gpt-oss-120b's top-4 routing typed as top-8", 20),        # chapter 6's layers-per-stage table
    ("DGX B200's raw 192 GB a GPU entered for the usable 180 in the system", 19),
    ("HBM3's 3.35 TB/s copied into the H200 system", 19),
    ("GB200 NVL72's HBM per die (93 GB) entered per package", 19),
    ("GB200 NVL72's HBM per die (93 GB) entered per package", 26),
    ("an H100's 450 GB/s NVLink in the H800 decode deployment", 16),
    ("the H800 deployment's NIC counted in both directions", 16),
    ("Qwen3-30B-A3B's 768-wide experts typed as 1,536 (Qwen3-235B's)", 14),
]


@pytest.mark.parametrize("slip_name,claim_id", EACH_CLAIM_ITS_SLIPS)
def test_a_slip_trips_every_claim_whose_numbers_it_changes(slip_name, claim_id, slipped):
    slip = next(s for s in SLIPS if s[0] == slip_name)
    tripped, why = slipped([slip], lambda: _trips(claim_id))
    assert tripped, f"claim {claim_id} passed with the slip {slip_name!r} ({why})"


@pytest.mark.parametrize("slip_name,claim_id", SECOND_CHIP_OR_MODEL)
def test_a_slip_in_the_second_chip_or_model_trips_its_check(slip_name, claim_id, slipped):
    slip = next(s for s in SLIPS if s[0] == slip_name)
    tripped, why = slipped([slip], lambda: _trips(claim_id))
    assert tripped, f"claim {claim_id} passed with the slip {slip_name!r}: its second chip/model is not checked ({why})"


@pytest.mark.parametrize("claim_id", sorted(NOT_CATALOG))
def test_simulation_and_measurement_claims_do_not_read_the_catalogs(claim_id, slipped):
    tripped, why = slipped(SLIPS, lambda: _trips(claim_id))   # every slip at once
    assert not tripped, (f"claim {claim_id} trips when the catalogs are slipped ({why}): it does read catalog "
                         f"data, so move it from NOT_CATALOG to the catalog-based claims")
