"""The training ledger (data/training_measurements.toml): honest splits, sources, and test rows whose prediction has
not moved since they entered (issue 43)."""

import math

import pytest

from llmmath import hardware, models
from llmmath import training_layout as tl


def test_rows_name_catalog_models_and_chips_and_carry_sources():
    rows = tl.measurements()
    assert len(rows) >= 40
    for k, e in rows.items():
        models.get(e["model"]), hardware.get(e["chip"])
        assert e["split"] in tl.SPLITS, k
        assert e["url"].startswith("http") and e["source"] and e["note"], k
        assert e["measured_tokens_per_s_per_gpu"] > 0, k
        assert e["gpus"] % (e.get("tp", 1) * e.get("cp", 1) * e.get("pp", 1)) == 0, k


def test_published_tflops_agree_with_published_tokens():
    """Where a row gives both, its model TFLOP/s per GPU over its tokens/s per GPU is the FLOPs a token costs: between
    0.7 x 6 N and 1.3 x 6 N + attention at twice the sequence (a loose bound, as frameworks count an MoE model's
    active parameters their own way, that any unit slip --
    tokens/s per node, TFLOP/s per node, a 1e3 -- breaks)."""
    for k, e in tl.measurements().items():
        if "measured_model_tflops_per_gpu" not in e:
            continue
        m = models.get(e["model"])
        per_token = e["measured_model_tflops_per_gpu"] * 1e12 / e["measured_tokens_per_s_per_gpu"]
        low = 6 * m.matmul_params_per_token * 0.7           # frameworks count MoE models' active parameters differently
        high = 1.3 * 6 * m.matmul_params_per_token + 3 * float(m.attention_flops_per_token(2 * e["seq_len"]))
        assert low < per_token < high, (k, per_token / (6 * m.matmul_params_per_token))


def test_test_rows_are_still_predicted_as_at_entry():
    """A change that moves a test row's prediction fails here until the row is relabelled validation. At least 20
    test rows: a change that moves a row makes it validation and a round enters only from sources not yet read, so
    the count after the latest change is what fresh sources allow (165 test rows before the backward-pass change of
    2026-12-07, 22 after it, 27 with the next round; 18 after the attention-kernel change, 31 with the round after it,
    26 once five of those were found to name their kernel; this guard asked 40 before); fewer than 20 would leave the
    printed test errors to a handful of runs."""
    rows = tl.measurements()
    keys = [k for k, e in rows.items() if e["split"] == "test"]
    assert len(keys) >= 20
    moved = [(k, rows[k]["predicted_at_entry"], round(p.tokens_per_s_per_gpu, 1))
             for k, _, _, p in tl.predicted_vs_measured(keys)
             if not math.isclose(p.tokens_per_s_per_gpu, rows[k]["predicted_at_entry"], rel_tol=0.005)]
    assert not moved, f"test rows whose prediction changed since entry (relabel them validation): {moved}"


def test_a_row_priced_on_an_older_attention_kernel_says_where_its_run_chose_it():
    """attention_kernel moves a row's attention time by up to 1.8x, so a row that sets it says in its note which
    kernel and where the run chose it (a launch switch such as NVTE_FUSED_ATTN=0 that turns Transformer Engine's
    cuDNN attention off, or the source naming FlashAttention-2); the kernel is one predict knows and the chip a
    Hopper GPU, where the bars were measured. A misspelt kernel, a row that sets the field without saying why, or
    one on another chip fails."""
    rows = {k: e for k, e in tl.measurements().items() if "attention_kernel" in e}
    assert rows
    for k, e in rows.items():
        kernel = e["attention_kernel"]
        assert kernel in tl.ATTENTION_KERNELS, k
        assert f'attention_kernel = "{kernel}":' in e["note"], k
        assert "NVTE_FUSED_ATTN" in e["note"] or "FlashAttention-2" in e["framework"], k
        assert e["chip"].startswith(("h100", "h200")), k


def test_published_peaks_are_allocator_numbers_one_gpu_can_hold():
    """A row's measured_peak_allocated_gib is what PyTorch's allocator reported on one GPU: more than the bf16 weights
    the busiest GPU must hold at the least (every parameter once over the GPUs that split them: tp x pp for the
    dense part, ep x pp for the experts, an upper bound on the sharding), and less than the chip's memory. A peak
    entered per node, in MiB, or for the wrong chip falls outside."""
    rows = {k: e for k, e in tl.measurements().items() if "measured_peak_allocated_gib" in e}
    assert rows
    for k, e in rows.items():
        m, c = models.get(e["model"]), hardware.get(e["chip"])
        tp, pp, ep = e.get("tp", 1), e.get("pp", 1), e.get("ep", 1)
        experts = m.n_moe_layers * m.n_experts * m.expert_params if m.is_moe else 0.0    # every routed expert
        floor = 2 * ((m.total_params - experts) / (tp * pp) + experts / (ep * pp))
        peak = e["measured_peak_allocated_gib"] * 2**30
        assert floor < peak < c.hbm_bytes, (k, floor / 2**30, peak / 2**30, c.hbm_bytes / 2**30)


def test_memory_against_published_peaks_names_what_it_cannot_price():
    with pytest.raises(KeyError, match="no training measurement"):
        tl.memory_vs_published(["no-such-run"])
    bare = next(k for k, e in tl.measurements().items() if "measured_peak_allocated_gib" not in e)
    with pytest.raises(ValueError, match="no published peak allocated memory"):
        tl.memory_vs_published([bare])
    assert tl.memory_vs_published()


def test_an_moe_runs_model_state_is_counted_as_expert_parallelism_shards_it():
    """The published-peak row (Qwen3-30B-A3B, EP16 over 16 H100s, bf16 weights and gradients, Megatron's distributed
    optimizer) by hand: the 1.54e9 non-expert parameters are on every GPU, 4 bytes each plus 16 optimizer bytes
    (fp32 master, two Adam moments, the fp32 gradient copy bf16 gradients need) sharded over 16; each GPU's 1/16 of
    the 48 x 128 x 3 x 2048 x 768 expert parameters holds 4 + 16 bytes, no replica to shard over. Sharding the
    experts' optimizer state over the data-parallel group, or dropping the fp32 gradient copy, fails."""
    key = "mbskill-epoverlap-on-qwen3-30b-a3b-h100-sxm-16-bf16"
    parts = tl.memory_vs_published([key])[0][4].memory_bytes
    d, layers, vocab = 2048, 48, 151_936                      # Qwen3-30B-A3B's config.json
    experts = layers * 128 * 3 * d * 768
    per_layer = d * 32 * 128 * 2 + 2 * d * 4 * 128 + d * 128 + 2 * d + 2 * 128   # q and o, k and v, router, norms
    dense = 2 * vocab * d + layers * per_layer + d            # untied embedding and LM head, final norm
    by_hand = dense * (2 + 2 + 16 / 16) + experts / 16 * (2 + 2 + 16)
    state = sum(parts[k] for k in ("weights", "gradients", "master_weights", "optimizer", "fp32 gradient shard"))
    assert math.isclose(state, by_hand, rel_tol=1e-6)


def test_test_rows_memory_is_still_predicted_as_at_entry():
    """The honest split for memory: a test row that publishes its peak carries the busiest GPU's predicted allocated
    bytes at entry; a change that moves them fails here until the row is relabelled validation."""
    ledger = tl.measurements()
    held = [k for k, e in ledger.items() if e["split"] == "test" and "measured_peak_allocated_gib" in e]
    assert all("predicted_peak_allocated_at_entry_gib" in ledger[k] for k in held)
    moved = [(k, ledger[k]["predicted_peak_allocated_at_entry_gib"], round(allocated / 2**30, 2))
             for k, _, _, allocated, _ in tl.memory_vs_published(held)
             if not math.isclose(allocated / 2**30, ledger[k]["predicted_peak_allocated_at_entry_gib"], rel_tol=0.005)]
    assert not moved, f"test rows whose predicted memory changed since entry (relabel them validation): {moved}"
