"""The small library functions the chapter 1-4 explorers call, against hand derivations."""

import numpy as np
import pytest

from llmmath import attention, schedule, serving

H100_BF16_FLOPS, H100_HBM_BYTES_PER_S, H100_HBM_BYTES = 989.5e12, 3.35e12, 80e9   # datasheet, dense
H200_HBM_BYTES = 141e9
LLAMA_70B_PARAMS = 70_553_706_496     # model.safetensors.index.json total_size / 2 (bf16)
DEEPSEEK_V3_PARAMS = 671.03e9         # 671B on the model card; the catalog's exact count rounds to this


def test_batch_over_balance_divides_by_the_chips_ratio_for_a_dense_model():
    # dense: B* at context 0 is R = F b_w / (2 W) (weights read once per step, 2 FLOPs per weight per token)
    R = H100_BF16_FLOPS * 2 / (2 * H100_HBM_BYTES_PER_S)          # 295.4
    x = serving.batch_over_balance("llama-3.1-70b", "h100-sxm", np.array([R, 2 * R, 3 * R]))
    assert x == pytest.approx([1, 2, 3], rel=0.02)
    with pytest.raises(ValueError, match="batch"):
        serving.batch_over_balance("llama-3.1-70b", "h100-sxm", 0)


def test_balance_batch_fits_needs_room_for_the_weights_and_the_balanced_kv():
    # 70.6e9 params x 2 bytes = 141 GB: not on one 80 GB H100, fine on four (320 GB) at short context
    assert 2 * LLAMA_70B_PARAMS > H100_HBM_BYTES
    assert not serving.balance_batch_fits("llama-3.1-70b", "h100-sxm", 0, n_chips=1)
    assert serving.balance_batch_fits("llama-3.1-70b", "h100-sxm", 0, n_chips=4)
    fits = serving.balance_batch_fits("llama-3.1-70b", "h100-sxm", np.array([0.0, 1e7]), n_chips=4)
    assert fits.shape == (2,) and bool(fits[0]) and not bool(fits[1])   # 10M tokens: no balance, no fit


def test_chips_to_hold_is_the_ceiling_of_weights_over_usable_hbm():
    assert serving.chips_to_hold("llama-3.1-70b", "h100-sxm") == int(np.ceil(2 * LLAMA_70B_PARAMS / (0.8 * 80e9)))  # 3
    assert serving.chips_to_hold("deepseek-v3", "h200", "fp8") == int(np.ceil(DEEPSEEK_V3_PARAMS / (0.8 * H200_HBM_BYTES)))
    with pytest.raises(ValueError, match="usable_fraction"):
        serving.chips_to_hold("llama-3.1-70b", "h100-sxm", usable_fraction=1.5)


def test_cadence_load_and_tokens_per_s_by_hand():
    # 64 seats every 20 ms carry at most 3,200 arrivals/s; 100/s loads them 1/32
    assert schedule.cadence_load(100.0, 64, 0.020) == pytest.approx(100 / 3200)
    assert schedule.tokens_per_s(64, 0.020) == pytest.approx(3200.0)
    assert np.allclose(schedule.tokens_per_s(np.array([1, 64]), 0.020), [50.0, 3200.0])
    with pytest.raises(ValueError, match="step_s"):
        schedule.tokens_per_s(64, 0)
    with pytest.raises(ValueError, match="rate_per_s"):
        schedule.cadence_load(-1.0, 64, 0.02)


def test_mean_key_bytes_and_kv_read_time_by_hand():
    # Llama-3.1-8B: 8 KV heads x 128 dims x 2 bytes = 2,048 bytes of K per token per layer
    assert attention.mean_key_bytes("llama-3.1-8b", "bf16") == pytest.approx(8 * 128 * 2)
    # 1 MB per layer x 32 layers over two H100s' 6.7 TB/s
    t = attention.kv_read_time_s("llama-3.1-8b", "h100-sxm", 1e6, n_chips=2)
    assert t == pytest.approx(32 * 1e6 / (2 * H100_HBM_BYTES_PER_S))
    with pytest.raises(ValueError, match="bytes_per_layer"):
        attention.kv_read_time_s("llama-3.1-8b", "h100-sxm", -1.0)
