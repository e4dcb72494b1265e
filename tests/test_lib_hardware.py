"""Tests of llmmath.hardware: the chip catalog and the balance ratio.

Expected numbers are vendor datasheet figures typed in here (dense tensor-core
peaks; NVIDIA's "with sparsity" figures are twice these), and ratios worked out
from them by hand.
"""

import dataclasses
import math

import pytest

from llmmath import hardware
from llmmath.units import DTYPE_BYTES

CHIPS = hardware.names()

# Fields the catalog documents as possibly `nan` (vendor publishes no figure):
# hardware.toml header: "tdp_watts ... nan = the vendor publishes no figure";
# tpu-v4: "No official per-chip DCN figure: scale_out = nan".
NAN_ALLOWED = {"tdp_watts", "scale_out_bytes_per_s"}
FLOAT_FIELDS = ("hbm_bytes", "hbm_bytes_per_s", "scale_up_bytes_per_s",
                "scale_out_bytes_per_s", "tdp_watts")


# ---- catalog integrity ---------------------------------------------------------

def test_catalog_has_the_course_chips():
    for key in ("a100-80gb", "h100-sxm", "h100-pcie", "h200", "b200", "gb200",
                "mi300x", "mi325x", "tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e"):
        assert key in CHIPS
    assert len(set(CHIPS)) == len(CHIPS)


@pytest.mark.parametrize("key", CHIPS)
def test_fields_positive_or_documented_nan(key):
    chip = hardware.get(key)
    for field in FLOAT_FIELDS:
        value = getattr(chip, field)
        if math.isnan(value):
            assert field in NAN_ALLOWED, f"{key}.{field} is nan"
        else:
            assert value > 0, f"{key}.{field} = {value}"
    assert chip.peak_flops_per_s, key
    for dtype, value in chip.peak_flops_per_s.items():
        assert dtype in DTYPE_BYTES
        assert math.isfinite(value) and value > 0, (key, dtype, value)
    assert chip.scale_up_domain >= 1
    assert chip.scale_up_domain_dies >= chip.scale_up_domain
    assert 2015 <= chip.year <= 2030
    assert chip.name and chip.vendor


@pytest.mark.parametrize("key", CHIPS)
def test_every_chip_has_bf16_and_fp16_equals_bf16(key):
    chip = hardware.get(key)
    assert "bf16" in chip.peak_flops_per_s
    if "fp16" in chip.peak_flops_per_s:
        assert chip.flops_per_s("fp16") == chip.flops_per_s("bf16")


@pytest.mark.parametrize("key", CHIPS)
def test_narrower_formats_are_not_slower(key):
    peaks = hardware.get(key).peak_flops_per_s
    order = [d for d in ("fp32", "tf32", "bf16", "fp8", "fp4") if d in peaks]
    for wide, narrow in zip(order, order[1:]):
        assert peaks[narrow] >= peaks[wide], (key, wide, narrow)


def test_nan_only_where_documented():
    # Google publishes no TDP for v5e/v5p/v6e; no per-chip DCN figure for v4.
    for key in ("tpu-v5e", "tpu-v5p", "tpu-v6e"):
        assert math.isnan(hardware.get(key).tdp_watts)
    assert math.isnan(hardware.get("tpu-v4").scale_out_bytes_per_s)
    assert hardware.get("tpu-v4").tdp_watts == 192  # Google's measured max power
    for key in ("a100-80gb", "h100-sxm", "b200", "mi300x"):
        chip = hardware.get(key)
        assert not math.isnan(chip.tdp_watts) and not math.isnan(chip.scale_out_bytes_per_s)


# ---- datasheet figures: dense, not 2:4 sparse ----------------------------------

# (chip, dense bf16 FLOP/s, figure printed "with sparsity" or None, HBM bytes, HBM B/s)
DATASHEET = [
    ("a100-80gb", 312e12, 624e12, 80e9, 2.039e12),
    ("h100-sxm", 989.5e12, 1979e12, 80e9, 3.35e12),
    ("h100-pcie", 756.5e12, 1513e12, 80e9, 2.0e12),
    ("h200", 989.5e12, 1979e12, 141e9, 4.8e12),
    ("b200", 36e15 / 8 / 2, 36e15 / 8, 180e9, 64e12 / 8),  # DGX B200 system / 8 GPUs
    ("mi300x", 1307.4e12, 2614.9e12, 192e9, 5.3e12),
    ("tpu-v4", 275e12, None, 32 * 2**30, 1200e9),  # Google: "32 GiB, 1200 GBps"
    ("tpu-v5e", 197e12, None, 16e9, 819e9),
    ("tpu-v5p", 459e12, None, 95 * 2**30, 2765e9),  # Google: "95 GiB"
    ("tpu-v6e", 918e12, None, 32e9, 1638e9),
]


@pytest.mark.parametrize("key, dense, sparse, hbm, bw", DATASHEET)
def test_datasheet_figures(key, dense, sparse, hbm, bw):
    chip = hardware.get(key)
    assert chip.flops_per_s("bf16") == pytest.approx(dense, rel=1e-12)
    if sparse is not None:
        assert chip.flops_per_s("bf16") != pytest.approx(sparse)
    assert chip.hbm_bytes == pytest.approx(hbm, rel=1e-12)
    assert chip.hbm_bytes_per_s == pytest.approx(bw, rel=1e-12)


def test_h100_dense_not_sparse():
    h100 = hardware.get("h100-sxm")
    assert h100.flops_per_s("bf16") == 989.5e12
    assert h100.flops_per_s() == 989.5e12  # bf16 is the default
    assert h100.flops_per_s("fp8") == 1979e12  # dense fp8 = the 'sparse' bf16 number
    assert h100.flops_per_s("fp32") == 67e12


def test_per_direction_link_bandwidth():
    # NVLink 4 is 900 GB/s bidirectional -> 450 GB/s per direction; NVLink 5 1.8 TB/s -> 900 GB/s.
    assert hardware.get("h100-sxm").scale_up_bytes_per_s == 900e9 / 2
    assert hardware.get("b200").scale_up_bytes_per_s == 1.8e12 / 2
    # one 400 Gb/s NIC per GPU = 50 GB/s
    assert hardware.get("h100-sxm").scale_out_bytes_per_s == 400e9 / 8
    assert hardware.get("b200").scale_up_domain_dies == 2 * 8


# ---- derived ratios -------------------------------------------------------------

def test_h100_balance_flops_per_byte():
    assert hardware.get("h100-sxm").balance_flops_per_byte() == pytest.approx(989.5e12 / 3.35e12)
    assert hardware.get("h100-sxm").balance_flops_per_byte() == pytest.approx(295.37, abs=0.01)


def test_hbm_read_time():
    assert hardware.get("h100-sxm").hbm_read_time_s == pytest.approx(80e9 / 3.35e12)  # 23.9 ms
    assert hardware.get("h200").hbm_read_time_s == pytest.approx(141e9 / 4.8e12)


@pytest.mark.parametrize(
    "key, weight_dtype, expected",
    [
        # R = F * b_w / (2 W), F at the compute dtype
        ("h100-sxm", "bf16", 989.5e12 * 2 / (2 * 3.35e12)),  # 295.4 = F/W at bf16
        ("h100-sxm", "fp8", 1979e12 * 1 / (2 * 3.35e12)),  # native fp8: same 295.4
        ("h100-sxm", "fp4", 989.5e12 * 0.5 / (2 * 3.35e12)),  # no fp4 on Hopper -> bf16 matmul
        ("a100-80gb", "bf16", 312e12 * 2 / (2 * 2.039e12)),  # 153.0
        ("a100-80gb", "fp8", 312e12 * 1 / (2 * 2.039e12)),  # no fp8 on Ampere -> bf16: 76.5
        ("a100-80gb", "int8", 624e12 * 1 / (2 * 2.039e12)),  # native int8
        ("a100-80gb", "fp32", 19.5e12 * 4 / (2 * 2.039e12)),  # native (vector) fp32
        ("tpu-v5e", "fp32", 197e12 * 4 / (2 * 819e9)),  # no fp32 matmul peak -> bf16
        ("b200", "fp4", 9e15 * 0.5 / (2 * 8e12)),  # native fp4
    ],
)
def test_balance_ratio(key, weight_dtype, expected):
    assert hardware.get(key).balance_ratio(weight_dtype) == pytest.approx(expected, rel=1e-12)


def test_balance_ratio_bf16_equals_flops_per_byte():
    for key in CHIPS:
        chip = hardware.get(key)
        assert chip.balance_ratio("bf16") == pytest.approx(chip.balance_flops_per_byte("bf16"))


def test_balance_ratio_explicit_compute_dtype():
    # fp8 weights upcast to bf16 on purpose on an H100
    assert hardware.get("h100-sxm").balance_ratio("fp8", "bf16") == pytest.approx(989.5e12 / (2 * 3.35e12))
    with pytest.raises(KeyError):
        hardware.get("a100-80gb").balance_ratio("bf16", "fp8")


def test_default_compute_dtype():
    a100, h100 = hardware.get("a100-80gb"), hardware.get("h100-sxm")
    assert hardware.default_compute_dtype(a100, "fp8") == "bf16"
    assert hardware.default_compute_dtype(h100, "fp8") == "fp8"
    assert hardware.default_compute_dtype(h100, "fp4") == "bf16"
    assert hardware.default_compute_dtype(a100, "bf16") == "bf16"
    with pytest.raises(KeyError):
        hardware.default_compute_dtype(h100, "fp9")


def test_default_compute_dtype_falls_back_to_fp32_without_bf16():
    cpu = dataclasses.replace(hardware.get("h100-sxm"), key="cpu", peak_flops_per_s={"fp32": 1e12})
    assert hardware.default_compute_dtype(cpu, "bf16") == "fp32"
    assert cpu.balance_ratio("bf16") == pytest.approx(1e12 * 2 / (2 * 3.35e12))
    none = dataclasses.replace(cpu, peak_flops_per_s={"int8": 1e12})
    with pytest.raises(KeyError):
        hardware.default_compute_dtype(none, "bf16")


# ---- lookup and errors ----------------------------------------------------------

def test_get_is_case_insensitive_and_passes_chips_through():
    h100 = hardware.get("h100-sxm")
    assert hardware.get("H100-SXM") is h100
    assert hardware.get("  h100-sxm ") is h100
    assert hardware.get(h100) is h100
    assert h100.key == "h100-sxm"
    assert repr(h100) == "Chip('h100-sxm')"


def test_unknown_chip_suggests_close_names():
    with pytest.raises(KeyError) as e:
        hardware.get("h100")
    closest = str(e.value).split("; all:")[0]
    assert "closest:" in closest
    assert "h100-sxm" in closest and "h100-pcie" in closest


def test_unknown_chip_far_from_everything_still_lists_all():
    with pytest.raises(KeyError) as e:
        hardware.get("zzzzzzzzzzzz")
    assert "a100-80gb" in str(e.value) and "tpu-v6e" in str(e.value)


def test_chip_name_must_be_string():
    with pytest.raises(TypeError):
        hardware.get(100)


def test_flops_per_s_unknown_dtype():
    with pytest.raises(KeyError, match="fp9"):
        hardware.get("h100-sxm").flops_per_s("fp9")


def test_flops_per_s_missing_native_dtype_lists_available():
    with pytest.raises(KeyError) as e:
        hardware.get("a100-80gb").flops_per_s("fp8")
    assert "a100-80gb" in str(e.value) and "bf16" in str(e.value)
    with pytest.raises(KeyError):
        hardware.get("tpu-v5e").flops_per_s("fp32")


def test_chip_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        hardware.get("h100-sxm").hbm_bytes = 1.0
    with pytest.raises(TypeError):
        hardware.get("h100-sxm").peak_flops_per_s["bf16"] = 1.0
