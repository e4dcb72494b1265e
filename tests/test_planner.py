"""llmmath.planner against hand derivations, datasheet constants and published measurements.

Every constant below is written out from its source (config.json fields, NVIDIA datasheets:
H100 SXM 80 GB, 3.35 TB/s, 989.5 TFLOP/s bf16 and 1,979 fp8 dense; H200 141 GB, 4.8 TB/s;
GB200 186 GB, 8 TB/s, 5 PFLOP/s fp8 dense), not read back from the catalogs.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from llmmath import models, planner
from llmmath.deployment import Deployment, runtime_memory_bytes

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "tests" / "hf_configs"

# Llama 3.1 8B (config.json): 32 layers, d 4096, 32 heads, 8 kv heads of 128, vocab 128256
N_8B = 8_030_261_248
EMBED_8B = 128_256 * 4096
NMM_8B = N_8B - EMBED_8B                         # the lookup does no arithmetic
KV_TOKEN_8B = 2 * 32 * 8 * 128 * 2              # K and V, bf16: 131,072 bytes per token
ATTN_8B = 4 * 32 * 128 * 32                      # FLOPs per cached position, all layers
H100_F, H100_W, H100_C = 989.5e12, 3.35e12, 80e9
DATASHEET = dict(usable_hbm_fraction=1.0)        # the roofline's view: all of the datasheet HBM, nothing held back


def test_dense_8b_on_one_h100_by_hand():
    p = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192, batch=16, usd_per_chip_hour=2.0, **DATASHEET)
    L, B = 8192, 16
    assert p.weight_bytes_per_chip == 2 * N_8B
    assert p.kv_bytes_per_sequence == L * KV_TOKEN_8B == 1_073_741_824
    assert p.max_batch == (H100_C - 2 * N_8B) // (L * KV_TOKEN_8B) == 59
    assert p.max_context_at_batch == (H100_C - 2 * N_8B) // (B * KV_TOKEN_8B) == 30_488
    compute = B * (2 * NMM_8B + ATTN_8B * L) / H100_F
    memory = ((N_8B - EMBED_8B + B * 4096) * 2 + B * L * KV_TOKEN_8B) / H100_W
    o = p.at_batch
    assert o.step_time_s == pytest.approx(max(compute, memory), rel=1e-12)
    assert o.binds == "HBM bandwidth (KV cache)" and p.fits
    assert o.tokens_per_s_per_user == pytest.approx(1 / memory, rel=1e-12)
    assert o.tokens_per_s_per_chip == pytest.approx(B / memory, rel=1e-12)
    assert o.usd_per_million_tokens == pytest.approx(memory / B * 1e6 * 2.0 / 3600, rel=1e-12)
    # KV reads per sequence (1.07 GB / 3.35 TB/s = 320 us) outrun its compute (39 us): no balance batch
    assert math.isinf(p.balance_batch)
    ttft = (8192 * 2 * NMM_8B + ATTN_8B * 8192 * 8191 / 2) / H100_F
    assert p.ttft_s == pytest.approx(ttft, rel=1e-12)


def test_balance_batch_of_a_70b_on_eight_h200_by_hand():
    # Llama 3.1 70B: 80 layers, d 8192, 64 heads, 8 kv heads of 128, d_ff 28672, vocab 128256; TP8, fp8, 1k context
    N, embed = 70_553_706_496, 128_256 * 8192
    nmm, L = N - embed, 1024
    F, W = 1979e12, 4.8e12
    per_seq_compute = (2 * nmm + 4 * 64 * 128 * 80 * L) / (8 * F)
    per_seq_mem = (L * 2 * 80 * 8 * 128 * 1 / 8 + 8192 * 1 / 8) / W   # KV heads split 8 ways; one embedding row
    weights = (N - embed) * 1 / 8 / W
    bstar = weights / (per_seq_compute - per_seq_mem)
    p = planner.plan("llama-3.1-70b", "h200", 8, context=L, weight_dtype="fp8", kv_dtype="fp8", tp=8, batch=64)
    assert p.balance_batch == pytest.approx(bstar, rel=1e-9)
    assert 350 < bstar < 450                 # R = F b / 2W = 206 at fp8, about doubled by the KV reads at 1k
    at_4k = planner.plan("llama-3.1-70b", "h200", 8, context=4096, weight_dtype="fp8", kv_dtype="fp8", tp=8)
    assert math.isinf(at_4k.balance_batch)   # at 4k one sequence's KV read (17.5 us) outlasts its compute (9.5 us)
    b = p.at_balance
    assert b.compute_s == pytest.approx(b.weight_s + b.kv_s, rel=1e-6)   # balanced indeed
    assert p.at_batch.binds == "HBM bandwidth (weights)"                   # batch 64 < B*


def test_deepseek_v3_on_an_nvl72_rack_with_uneven_experts():
    # 256 routed experts over EP72: ceil(256/72) = 4 whole experts per GPU in each of 58 MoE layers
    P_e = 3 * 7168 * 2048
    total = 671_026_419_200
    routed = 58 * 256 * P_e
    p = planner.plan("deepseek-v3", "gb200-nvl72", context=8192, weight_dtype="fp8", ep=72, dp=72, batch=72 * 64,
                     **DATASHEET)
    assert p.n_chips == 72 and p.chip == "gb200"           # the system gives its chip and its 72 packages
    assert p.weight_bytes_per_chip == pytest.approx((total - routed) + 58 * 4 * P_e, rel=1e-12)
    kv_seq = 61 * (512 + 64) * 2 * 8192                      # the MLA latent and rope key, bf16
    assert p.kv_bytes_per_sequence == kv_seq
    free = 186e9 - p.weight_bytes_per_chip
    # DP72: each GPU holds whole sequences of its own (a sequence's cache lives on one attention group)
    assert p.max_batch == 72 * math.floor(free / kv_seq) == 19_800      # 275 a GPU; 19,844 if they could split
    # fp8 on GB200: F/W = 625 FLOP/B > the absorbed MLA's 242 FLOP/B at bf16: KV reads never let it balance
    assert math.isinf(p.balance_batch)


def test_a_model_read_from_its_config_plans_like_the_catalog_entry():
    m = models.from_hf_config(CONFIGS / "gpt-oss-120b.json", name="gpt-oss-from-config")
    a = planner.plan(m, "h100-sxm", 4, context=131072, tp=4, **DATASHEET)
    b = planner.plan("gpt-oss-120b", "h100-sxm", 4, context=131072, tp=4, **DATASHEET)
    assert a.max_batch == b.max_batch and a.at_batch.step_time_s == b.at_batch.step_time_s
    # hand: weights bf16 over TP4; cache per sequence 18 full layers x 131072 + 18 x 128 positions, 2048 B each,
    # KV heads (8) split 4 ways
    per_chip_weights = 116_829_156_672 * 2 / 4
    kv_chip = (18 * 131072 + 18 * 128) * 2048 / 4
    assert a.max_batch == math.floor((80e9 - per_chip_weights) / kv_chip) == 17


def test_fractional_weight_bytes_and_the_planner():
    p = planner.plan("llama-3.1-70b", "h100-sxm", 1, context=1024, weight_dtype=0.5625, kv_dtype="fp8", batch=1)
    assert p.weight_bytes_per_chip == pytest.approx(70_553_706_496 * 0.5625, rel=1e-12)
    assert p.compute_dtype == "bf16" and p.weight_dtype == "0.5625 B"
    assert p.fits


def test_pipeline_stages_split_weights_not_time():
    one = planner.plan("llama-3.1-405b", "h200", 16, context=8192, weight_dtype="fp8", tp=8, pp=2, batch=256)
    # the busiest stage's chip, not 405,853,388,800 / 16: 63 of the 126 layers, the head and the final norm
    # (d 16384, 128 heads of 128, 8 KV heads, d_ff 53248, vocab 128256, untied), fp8 over TP8
    layer = 2 * 16384 * 16384 + 2 * 16384 * 1024 + 3 * 16384 * 53248 + 2 * 16384
    assert one.weight_bytes_per_chip == (63 * layer + 128256 * 16384 + 16384) / 8
    assert one.weight_bytes_per_chip > 405_853_388_800 / 16
    assert one.replicas == 1


def test_time_to_first_token_runs_attention_on_the_prompts_own_data_parallel_group():
    # DeepSeek-V3 fp8 on 32 H100s, EP32 DP32, one 2,000-token prompt: attention, the dense layers, the shared
    # experts and the head run on its own chip (tp = 1); only its routed experts (8 of 256 per token in 58 layers)
    # spread over the 32. Spreading all of it over 32 chips gave 2.5 ms of compute (the reads then set 10.9 ms).
    P_e, T, F, W = 3 * 7168 * 2048, 2000, 1979e12, 3.35e12
    nmm = 37_552_297_472 - 129_280 * 7168
    routed_active = 58 * 8 * P_e
    attn = 61 * 2 * 128 * (128 + 64 + 128) * T * (T - 1) / 2
    compute = (T * 2 * (nmm - routed_active) + attn) / F + T * 2 * routed_active / (32 * F)
    other_read = 671_026_419_200 - 58 * 256 * P_e - 129_280 * 7168   # less the table: it is looked up
    read = (other_read + 58 * 8 * P_e * (1 - (1 - 8 / 256) ** T)) / W  # 8 whole experts per rank, all touched
    p = planner.plan("deepseek-v3", "h100-sxm", 32, context=T, weight_dtype="fp8", ep=32, dp=32, batch=1)
    assert compute > read and p.ttft_s == pytest.approx(compute, rel=1e-12)
    assert 0.037 < p.ttft_s < 0.040


@pytest.mark.parametrize("kw, exc, match", [
    (dict(n_chips=6, tp=4), ValueError, "not a multiple of pp x tp x dp"),
    (dict(n_chips=9, tp=3), ValueError, "tp=3 must divide"),
    (dict(n_chips=8, ep=8, dp=8), ValueError, "is dense"),
    (dict(n_chips=8, context=0), ValueError, "context must be >= 1"),
    (dict(n_chips=8, batch=-1), ValueError, "batch must be > 0"),
    (dict(n_chips=8, usable_hbm_fraction=1.5), ValueError, "usable_hbm_fraction"),
    (dict(n_chips=8, weight_dtype="fp9"), KeyError, "unknown dtype 'fp9'"),
    (dict(n_chips=True), TypeError, "n_chips"),
])
def test_bad_plans_are_refused_naming_the_argument(kw, exc, match):
    with pytest.raises(exc, match=match):
        planner.plan("llama-3.1-8b", "h100-sxm", **kw)


def test_unknown_chip_suggests_names():
    with pytest.raises(KeyError, match="closest"):
        planner.plan("llama-3.1-8b", "h2000")


def _suggested(msg: str) -> list[str]:
    return msg.split("closest: ")[1].split(";")[0].split(", ")


def test_an_ambiguous_chip_suggests_the_chips_it_may_mean_not_only_systems():
    # 'h100' is neither a chip nor a system: the H100 comes as h100-sxm and h100-pcie (and hgx-h100 is a system)
    with pytest.raises(KeyError) as info:
        planner.plan("llama-3.1-8b", "h100")
    close = _suggested(str(info.value))
    assert close[:2] == ["h100-sxm", "h100-pcie"]
    for name in close:                       # every suggestion is a valid input
        planner.plan("llama-3.1-8b", name, context=1024)
    r = _cli("plan", "--model", "llama-3.1-8b", "--chip", "h100")
    assert r.returncode == 2 and "argument --chip" in r.stderr
    close = _suggested(r.stderr)
    assert close[:2] == ["h100-sxm", "h100-pcie"], r.stderr
    for name in close:
        assert _cli("plan", "--model", "llama-3.1-8b", "--chip", name, "--context", "1024").returncode == 0, name
    # a system still gives its chip and its 8 packages
    p = planner.plan("llama-3.1-8b", "hgx-h100", context=1024)
    assert (p.chip, p.n_chips) == ("h100-sxm", 8)


def test_the_table_ends_with_a_sentence_about_floors():
    text = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192).table()
    last = text.splitlines()[-1]
    assert last.startswith("Every time in this plan is a roofline floor") and last.endswith(".")
    assert "every number is a" not in text and "a    roofline" not in text


def test_without_a_batch_one_operating_block_not_two_identical():
    # Llama 3.1 8B on one H100 at 8k: no balance batch, max batch (80e9 - 2 N) // (8192 x 131,072) = 59
    assert (H100_C - 2 * N_8B) // (8192 * KV_TOKEN_8B) == 59
    text = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192, **DATASHEET).table()
    assert text.count("step time (floor)") == 1
    assert "at the chosen batch (59 = the largest that fits; no balance batch)" in text
    # given a batch and still no balance batch: one block, at that batch
    text = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192, batch=16).table()
    assert text.count("step time (floor)") == 1 and "at the chosen batch (16; no balance batch)" in text
    # a balance batch (about 4,750, chapter 11) above the 3,151 that fit: two different blocks
    N70 = 70_553_706_496
    assert (141e9 - N70 / 8) // (2048 * 2 * 80 * 8 * 128 / 8) == 3151
    p = planner.plan("llama-3.1-70b", "h200", 8, context=2048, weight_dtype="fp8", kv_dtype="fp8", tp=8, **DATASHEET)
    text = p.table()
    assert text.count("step time (floor)") == 2
    assert f"at the balance batch ({p.balance_batch:,.0f})" in text and "at the chosen batch (3,151 = the largest" in text


def test_json_has_null_not_zero_dollars_and_no_inf():
    r = _cli("plan", "--model", "llama-3.1-8b", "--chip", "h100-sxm", "--context", "8192", "--json")
    assert r.returncode == 0, r.stderr
    assert "Infinity" not in r.stdout and '"inf"' not in r.stdout
    d = _strict_json(r.stdout)
    assert d["usd_per_chip_hour"] is None and d["at_batch"]["usd_per_million_tokens"] is None
    # KV reads per sequence (1.07 GB / 3.35 TB/s = 320 us) outrun its compute (15 GFLOP / 989.5 TFLOP/s = 15 us)
    assert 8192 * KV_TOKEN_8B / H100_W > (2 * NMM_8B + ATTN_8B * 8192) / H100_F
    assert d["balance_batch"] is None and d["at_balance"] is None and "KV reads outrun compute" in d["no_balance_reason"]
    # with a price, dollars per million tokens by hand: chip-seconds per token x 1e6 x $/h / 3600
    r = _cli("plan", "--model", "llama-3.1-8b", "--chip", "h100-sxm", "--batch", "16", "--usd-per-chip-hour", "2",
             "--json")
    d = _strict_json(r.stdout)
    memory = ((N_8B - EMBED_8B + 16 * 4096) * 2 + 16 * 8192 * KV_TOKEN_8B) / H100_W
    assert d["usd_per_chip_hour"] == 2.0
    assert d["at_batch"]["usd_per_million_tokens"] == pytest.approx(memory / 16 * 1e6 * 2.0 / 3600, rel=1e-12)
    # a finite balance batch is a number with its operating point, and no reason
    p = planner.plan("llama-3.1-70b", "h200", 8, context=1024, weight_dtype="fp8", kv_dtype="fp8", tp=8)
    d = _strict_json(json.dumps(p.to_dict(), allow_nan=False))
    assert d["balance_batch"] > 0 and d["at_balance"]["batch"] == d["balance_batch"] and d["no_balance_reason"] is None


def test_a_config_file_names_its_model(tmp_path):
    # no _name_or_path in the fixture: the file's name, not 'hf-llama'
    r = _cli("plan", "--config", str(CONFIGS / "llama-3.1-8b.json"), "--chip", "h100-sxm", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["model"] == "llama-3.1-8b"
    cfg = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    folder = tmp_path / "Meta-Llama-3.1-8B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(cfg))
    assert models.from_hf_config(folder).key == "meta-llama-3.1-8b-instruct"        # a config.json: its folder
    named = tmp_path / "named.json"
    named.write_text(json.dumps(cfg | {"_name_or_path": "meta-llama/Llama-3.1-8B"}))
    assert models.from_hf_config(named).key == "llama-3.1-8b"                       # the config's own name
    assert models.from_hf_config(named, name="mine").key == "mine"                  # --name wins


def test_a_plan_that_does_not_fit_says_why():
    # Llama 3.1 70B in bf16: 2 x 70,553,706,496 = 141,107,412,992 bytes, over one H200's 141e9
    p = planner.plan("llama-3.1-70b", "h200", 1, context=8192, **DATASHEET)
    fits = dict(p.rows())["fits"]
    assert not p.fits and "141.1 GB" in fits and "exceed the 141 GB usable" in fits
    assert dict(p.rows())["weights per chip"] == "141.1 GB of 141 GB usable"     # not '141 GB of 141 GB'
    # weights fit, the batch's cache does not: 16.06 GB + 100 x 1.074 GB = 123.4 GB > 80 GB; 59 would fit
    assert 2 * N_8B + 100 * 8192 * KV_TOKEN_8B == pytest.approx(123.4e9, rel=1e-3)
    p = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192, batch=100, **DATASHEET)
    assert p.kv_bytes_per_chip == 100 * 8192 * KV_TOKEN_8B
    fits = dict(p.rows())["fits"]
    assert fits.startswith("no: weights 16.1 GB + KV cache 107 GB (100 sequences) = 123 GB per chip, > 80 GB usable")
    assert fits.endswith("at most 59 sequences fit")
    assert dict(planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192).rows())["fits"].startswith("yes: ")


def test_the_memory_default_is_stated_and_the_datasheet_view_is_one_flag_away():
    for sub in ("plan", "predict", "simulate"):                      # one default, every subcommand
        r = _cli(sub, "--help")
        text = " ".join(r.stdout.split())
        assert r.returncode == 0 and "--gpu-memory-utilization" in text and "(default 0.9, vLLM's" in text, sub
        assert "--usable-hbm-fraction" in text, sub
    row = dict(planner.plan("llama-3.1-8b", "h100-sxm", 1).rows())["usable HBM per chip"]
    assert "as vllm sizes it (activation peak" in row and "outside torch" in row
    row = dict(planner.plan("llama-3.1-8b", "h100-sxm", 1, **DATASHEET).rows())["usable HBM per chip"]
    assert row.startswith("80 GB: all of the datasheet's")
    p = planner.plan("llama-3.1-8b", "h200", 1, usable_hbm_fraction=0.9)
    assert p.hbm_bytes_per_chip == pytest.approx(0.9 * 141e9, rel=1e-12) and p.usable_hbm_fraction == 0.9
    assert dict(p.rows())["usable HBM per chip"].startswith("126.9 GB = 0.9 x the datasheet's 141 GB")


def test_the_engine_memory_view_by_hand():
    # Llama-3.1-8B bf16 on one H100, as vLLM sizes its cache: the runtime's 85,045,477,376 B (79.2 GiB, CUDA's
    # figure) x 0.9, less the activation peak of its profiling pass and the 0.25 GiB outside torch (the median of
    # three vLLM logs), less the weights; in blocks of 16 tokens of 131,072 B. The peak is the larger of the forward
    # pass over vLLM's 8,192-token budget (8,192 x (3 x 4,096 + 3 x 14,336) x 2 B: the MLP's input, residual and
    # output beside its gate-up product and activation, 0.84 GiB) and the sampling step for its 1,024 dummy
    # requests (bf16 logits, fp32 logits, probabilities, noise: 2 + 4 + 4 + 4 B for each of 128,256 vocabulary
    # entries, beside the 8,192 x 4,096 x 2 B output: 1.77 GiB). vLLM 0.19 logged 1.89 GiB for this start.
    forward = 8192 * (3 * 4096 + 3 * 14336) * 2
    act = 14 * 1024 * 128_256 + 8192 * 4096 * 2
    assert act > forward
    free = 85_045_477_376 * 0.9 - act - 0.25 * 2**30 - 2 * N_8B
    p = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192)
    assert p.reserve_bytes["activation peak"] == act
    assert p.kv_cache_tokens == (free // (16 * KV_TOKEN_8B)) * 16
    assert p.max_batch == free // (8192 * KV_TOKEN_8B) == 54
    # SGLang: the memory outside torch first, then mem_fraction_static of the rest for weights and KV, no activations
    s = planner.plan("llama-3.1-8b", "h100-sxm", 1, context=8192, engine="sglang", gpu_memory_utilization=0.88)
    assert s.kv_cache_tokens == ((85_045_477_376 - 0.25 * 2**30) * 0.88 - 2 * N_8B) // KV_TOKEN_8B
    # an A100 or a GPU under 70 GiB profiles vLLM's smaller 2,048-token budget and samples 256 requests: the
    # sampling step (14 x 256 x 128,256 + 2,048 x 4,096 x 2 = 476 MB) outweighs the forward pass (2,048 x 57,344 x 2)
    a = planner.plan("llama-3.1-8b", "a100-80gb", 1)
    assert a.reserve_bytes["activation peak"] == 14 * 256 * 128_256 + 2048 * 4096 * 2
    # Mixtral's 32,000-entry vocabulary: the forward pass is the larger (its fused MoE kernel's three intermediates
    # for 2 experts a token, 8,192 x (3 x 4,096 + 2 x 3 x 14,336) x 2 B on one GPU)
    mx = planner.plan("mixtral-8x7b", "h200", 1)
    assert mx.reserve_bytes["activation peak"] == 8192 * (3 * 4096 + 2 * 3 * 14336) * 2
    # the request limit given: 64 requests sample 64 rows; fewer dummy requests than tokens never exceed the budget
    assert planner.plan("llama-3.1-8b", "h100-sxm", 1, max_num_seqs=64).reserve_bytes["activation peak"] == forward
    with pytest.raises(ValueError, match="max_num_seqs"):
        planner.plan("llama-3.1-8b", "h100-sxm", 1, max_num_seqs=0)
    # a chip whose runtime figure is not known: its datasheet capacity (16 GB) stands in, and the plan says so
    d = Deployment("llama-3.2-1b", "tpu-v5e", 1)
    assert "tpu-v5e" in d.memory_assumption and "16 GB" in d.memory_assumption
    assert Deployment("llama-3.2-1b", "h100-sxm", 1).memory_assumption is None
    with pytest.raises(KeyError, match="no runtime memory figure .* 'tpu-v5e'.*usable_hbm_fraction="):
        runtime_memory_bytes("tpu-v5e")
    with pytest.raises(ValueError, match="not both"):
        planner.plan("llama-3.2-1b", "h100-sxm", 1, usable_hbm_fraction=0.9, gpu_memory_utilization=0.9)
    with pytest.raises(ValueError, match=r"gpu_memory_utilization must be in \(0, 1\]"):
        planner.plan("llama-3.2-1b", "h100-sxm", 1, gpu_memory_utilization=1.2)


def test_measurements_are_sourced_and_the_floor_holds_against_every_one():
    rows = planner.measured_vs_floor()
    assert len(rows) >= 6
    for r in rows:
        assert r.source.startswith("https://")
        # measured / roofline ceiling: below 1 (a real system cannot beat the floor), and not absurdly low (batch-1
        # latency rows sit lowest: DeepSeek-R1 on 8 B200s at batch 1 reaches under 4% of the ceiling of its step)
        assert 0.02 < r.ratio < 1.0, (r.key, r.ratio)
    by = {r.key: r for r in rows}
    # DeepSeek day 6: 14.8k output tok/s per 8-GPU node = 1,850 per GPU (the source's own figure)
    assert by["deepseek-day6-decode"].measured_tokens_per_s_per_chip == 14_800 / 8
    assert by["sglang-h100-decode"].measured_tokens_per_s_per_chip == 22_282 / 8   # its default run, not 22.3k
    assert by["sglang-h100-prefill"].measured_tokens_per_s_per_chip == 52_300 / 8


def test_prefill_ceiling_of_deepseek_v3_by_hand():
    # fp8 on an H100/H800: F = 1979 TFLOP/s; per token 2 N_mm + MLA in its up-projected prefill form
    nmm = 37_552_297_472 - 129_280 * 7168
    per_pos = 2 * 128 * (128 + 64 + 128)             # q.k over 192 dims and p.v over 128, 128 heads, per layer
    T = 2000
    flops = T * 2 * nmm + per_pos * 61 * T * (T - 1) / 2
    p = planner.plan("deepseek-v3", "h100-sxm", 32, context=T, weight_dtype="fp8", ep=32, dp=32, batch=1)
    assert p.prefill_tokens_per_s_per_chip == pytest.approx(1979e12 * T / flops, rel=1e-12)


def _strict_json(text: str):
    """json.loads that refuses Infinity and NaN (not JSON, though Python writes them)."""
    def refuse(c):
        raise ValueError(f"not JSON: {c}")
    return json.loads(text, parse_constant=refuse)


def test_planner_json_round_trips():
    p = planner.plan("qwen3-30b-a3b", "h200", 1, context=32768)
    d = _strict_json(json.dumps(p.to_dict(), allow_nan=False))
    assert d["model"] == "qwen3-30b-a3b"
    assert isinstance(d["balance_batch"], float) or (d["balance_batch"] is None and d["no_balance_reason"])
    assert "floor" in p.table()


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "llmmath", *args], capture_output=True, text=True, cwd=ROOT)


def test_cli_prints_a_plan_and_json():
    r = _cli("plan", "--config", str(CONFIGS / "llama-3.1-8b.json"), "--chip", "h100-sxm", "--chips", "1",
             "--context", "8192", "--batch", "16", "--usable-hbm-fraction", "1.0")
    assert r.returncode == 0, r.stderr
    assert "max batch at this context" in r.stdout and "59" in r.stdout and "floor" in r.stdout
    r = _cli("plan", "--model", "llama-3.1-8b", "--chip", "h100-sxm", "--context", "8192", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["max_batch"] == 54                      # the engine view (test above)


@pytest.mark.parametrize("args, words", [
    (["plan", "--model", "llama-3.1-8b", "--chip", "h100-sxm", "--context", "-5"], "--context"),
    (["plan", "--model", "llama-3.1-8b", "--chip", "nochip"], "--chip"),
    (["plan", "--model", "nomodel", "--chip", "h200"], "--model"),
    (["plan", "--chip", "h200"], "--model"),
    (["plan", "--model", "llama-3.1-8b", "--chip", "h200", "--weight-dtype", "fp9"], "--weight-dtype"),
    (["plan", "--model", "llama-3.1-8b", "--chip", "h200", "--chips", "6", "--tp", "4"], "--tp"),
])
def test_cli_errors_name_the_flag(args, words):
    r = _cli(*args)
    assert r.returncode == 2 and words in r.stderr, r.stderr


def test_cli_predicts_with_a_tpot_limit_and_json():
    r = _cli("predict", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--tp", "8",
             "--input-tokens", "2000", "--output-tokens", "200", "--max-tpot-ms", "30", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["tpot_s"] <= 0.030 and d["waterfall"][0]["term"] == "roofline ceiling"
    # the largest such batch: one more sequence would pass 30 ms
    more = planner.predict("llama-3.1-70b", "h100-sxm", 8, tp=8, input_tokens=2000, output_tokens=200,
                           batch=d["batch"] + 1)
    assert more.tpot_s > 0.030
    r = _cli("predict", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--tp", "8",
             "--input-tokens", "2000", "--output-tokens", "200", "--max-tpot-ms", "1")
    assert r.returncode == 2 and "--max-tpot-ms" in r.stderr and "batch 1" in r.stderr, r.stderr
    r = _cli("predict", "--model", "llama-3.1-8b", "--chip", "h100-sxm", "--input-tokens", "1000", "--output-tokens",
             "1000", "--phase", "aggregated", "--offline-requests", "300", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["waterfall"][-1]["term"].startswith("an offline run of 300")
    r = _cli("predict", "--model", "llama-3.1-8b", "--chip", "h100-sxm", "--input-tokens", "1000", "--output-tokens",
             "1000", "--offline-requests", "300")
    assert r.returncode == 2 and "--offline-requests" in r.stderr and "phase='aggregated'" in r.stderr, r.stderr


def test_planner_explorer_answers_every_control_without_errors():
    from llmmath import explorers, widgets

    ex = explorers.planner_explorer()
    assert isinstance(ex, widgets.Explorer) and "max batch" in ex.text.value
    for name, control in ex.controls.items():
        before = (ex.image.value, ex.text.value)
        options = getattr(control, "options", None)
        control.value = next(o for o in options if o != control.value) if options else control.min
        assert (ex.image.value, ex.text.value) != before, name
        assert "Error" not in ex.text.value, (name, ex.text.value)


def test_cli_simulates_an_engine_and_names_the_flag_of_a_request_that_cannot_fit():
    r = _cli("simulate", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--tp", "8",
             "--requests-per-s", "0.002", "--requests", "20", "--input-tokens", "1000", "--output-tokens", "200",
             "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    # alone, a request's first token takes one prefill step of its 1,000-token prompt (~48 ms on 8 H100s)
    assert d["requests"] == 20 and 0.04 < d["ttft_s_p50"] < 0.065 and d["peak_kv_tokens"] <= d["kv_capacity_tokens"]
    r = _cli("simulate", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--tp", "8",
             "--requests-per-s", "1", "--input-tokens", "2000000", "--output-tokens", "200")
    assert r.returncode == 2 and "--input-tokens" in r.stderr and "tokens of KV" in r.stderr, r.stderr
    r = _cli("simulate", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--tp", "4", "--pp", "2",
             "--requests-per-s", "1", "--input-tokens", "1000", "--output-tokens", "200")
    assert r.returncode == 2 and "--pp" in r.stderr and "pp=2" in r.stderr, r.stderr   # not silently ignored



def test_cli_simulates_a_disaggregated_deployment_with_the_kv_handed_over():
    r = _cli("simulate", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--tp", "8",
             "--prefill-chips", "8", "--prefill-tp", "8", "--requests-per-s", "0.002", "--requests", "5",
             "--input-tokens", "1000", "--output-tokens", "200", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    # the prefill pool's one step (~48 ms), and a batch-1 decode step: the weights' read, (70.55e9 - 1.05e9 table) x 2
    # bytes / 8 GPUs at 0.91 x 3.35 TB/s = 5.7 ms, plus 80 layers of 11 kernels at 8.9 us = 7.8 ms, about 13.5 ms;
    # the 1 ms hand-over spread over 199 tokens adds 5 us
    assert 0.04 < d["ttft_s_p50"] < 0.065 and 0.0130 < d["tpot_s_p50"] < 0.0141 and d["preemptions"] == 0
    r = _cli("simulate", "--model", "llama-3.1-70b", "--chip", "h100-sxm", "--chips", "8", "--tp", "8",
             "--prefill-chips", "8", "--prefill-tp", "3", "--requests-per-s", "1", "--input-tokens", "1000",
             "--output-tokens", "200")
    assert r.returncode == 2 and "--prefill-chips" in r.stderr and "prefill pool" in r.stderr, r.stderr
