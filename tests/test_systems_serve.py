"""Every scale-up system of the catalog is a place to serve a model: plan, predict and simulate take its name."""
import math

import pytest

from llmmath import hardware, planner, predict
from llmmath.deployment import chip_and_count
from llmmath.engine import simulate


@pytest.mark.parametrize("key", list(hardware.systems()))
def test_every_system_resolves_to_a_chip_and_serves(key):
    sy = hardware.system(key)
    chip = sy.package_chip()
    assert chip.scale_up_domain == sy.packages                    # its domain is the system's
    # Llama-3.1-70B in bf16 over 8 chips of the system, datasheet view (chips without a runtime figure)
    p = predict.predict("llama-3.1-70b", key, 8, input_tokens=1000, output_tokens=200, tp=8, batch=8,
                        usable_hbm_fraction=0.9)
    assert p.tokens_per_s_per_chip > 0 and math.isfinite(p.tokens_per_s_per_chip)
    assert planner.plan("llama-3.1-70b", key, 8, tp=8, usable_hbm_fraction=0.9).max_batch >= 1


def test_a_chip_without_a_published_scale_out_link_prices_one_stage_and_refuses_a_pipeline():
    # TPU v4: Google publishes no per-chip DCN figure (NaN); one stage needs none, two stages say what is missing
    p = predict.predict("llama-3.1-8b", "tpu-v4", 8, input_tokens=1000, output_tokens=100, tp=8, batch=4,
                        usable_hbm_fraction=0.9)
    assert math.isfinite(p.tokens_per_s_per_chip) and math.isfinite(p.ttft_s)
    with pytest.raises(ValueError, match="pp=2: tpu-v4 has no published scale-out bandwidth .*allowed: pp=1"):
        predict.predict("llama-3.1-8b", "tpu-v4", 8, input_tokens=1000, output_tokens=100, tp=4, pp=2, batch=4,
                        usable_hbm_fraction=0.9)


def test_a_chip_described_by_its_system_carries_the_systems_figures_and_names_what_is_assumed():
    # Vera Rubin NVL72 (systems.toml, launch figures): 288 GB HBM4 at 22 TB/s a GPU, NVLink 6 3.6 TB/s bidirectional
    # a GPU -> 1.8 TB/s a direction, 72 GPUs (144 dies) in one domain; 35 PF NVFP4 training a GPU
    c = hardware.system("vera-rubin-nvl72").package_chip()
    assert (c.hbm_bytes, c.hbm_bytes_per_s, c.flops_per_s("fp4")) == (288e9, 22e12, 35e15)
    assert (c.scale_up_bytes_per_s, c.scale_up_domain, c.scale_up_domain_dies) == (1.8e12, 72, 144)
    assert not c.runtime_memory_bytes
    # GB300 NVL72 names its catalog chip: the same figures, on one chip entry
    g, sy = hardware.system("gb300-nvl72").package_chip(), hardware.system("gb300-nvl72")
    assert g is hardware.get("gb300") and (g.hbm_bytes, g.hbm_bytes_per_s) == (sy.hbm_bytes_per_package,
                                                                              sy.hbm_bytes_per_s_per_package)
    # Helios publishes 20 PF FP8 and 40 PF FP4 a GPU and no BF16: BF16 is taken as half of FP8, and says so
    h = hardware.system("helios-mi450").package_chip()
    assert (h.flops_per_s("fp8"), h.flops_per_s("fp4"), h.flops_per_s("bf16")) == (20e15, 40e15, 10e15)
    assert "peak_flops_per_s.bf16 (assumed: fp8 / 2)" in h.unverified and "half of FP8" in h.note
    # a system that names a catalog chip serves on that chip
    assert hardware.system("hgx-h100").package_chip() is hardware.get("h100-sxm")
    # no runtime memory figure for a roadmap rack: the datasheet's capacity stands in, and the band names it
    p = predict.predict("llama-3.1-8b", "vera-rubin-nvl72", 1, input_tokens=100, output_tokens=10)
    _, _, why = planner.band(p.tokens_per_s_per_chip, "llama-3.1-8b", c, phase="decode", batch=p.batch)
    assert any("runtime memory taken as its datasheet capacity" in w for w in why)


def test_predict_refuses_no_system_of_the_catalog():
    """Every system the CLI offers is predicted (its chip, count and scale-up domain), none refused."""
    for name in hardware.systems():
        c, n = chip_and_count(name, None)
        p = predict.predict("llama-3.1-8b", name, min(n, 8), input_tokens=1000, output_tokens=100)
        assert p.tokens_per_s_per_chip > 0, name


def test_simulate_takes_a_system_name():
    s = simulate("llama-3.1-8b", "mi355x-8", 1, requests_per_s=2.0, n_requests=50, input_tokens=500,
                 output_tokens=100, usable_hbm_fraction=0.9)
    assert len(s.finish_times_s) == 50 and bool((s.finish_times_s > s.arrival_times_s).all())
