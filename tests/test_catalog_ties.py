"""Figures one catalog restates from another are tied to it (issue 45): a system's per-package figures to its chip's,
a deployment's link figures to its GPU's datasheet. A slip in one copy then fails here instead of moving a chapter's
tables silently."""

import math

import pytest

from llmmath import _catalog, hardware

# What each system restates of its chip (per package, per direction) and the chip's own field
TIED = {"hbm_bytes_per_package": "hbm_bytes", "hbm_bytes_per_s_per_package": "hbm_bytes_per_s",
        "scale_up_bytes_per_s_per_package": "scale_up_bytes_per_s",
        "scale_out_bytes_per_s_per_package": "scale_out_bytes_per_s"}


@pytest.mark.parametrize("key", [k for k, s in hardware.systems().items() if s.chip])
def test_a_system_restates_its_chip_exactly(key):
    """A DGX B200's usable 180 GB against a chip's 192 raw, an HBM3 bandwidth copied into an H200 system, a per-die
    figure for a per-package one: each makes a system and its chip disagree, and chapters 5-6 print the system's."""
    s = hardware.system(key)
    c = hardware.get(s.chip)
    for sys_field, chip_field in TIED.items():
        a, b = float(getattr(s, sys_field)), float(getattr(c, chip_field) or math.nan)
        if math.isnan(a) and math.isnan(b):
            continue
        assert a == pytest.approx(b, rel=0.001), f"{key}.{sys_field} = {a:.4g} but {s.chip}.{chip_field} = {b:.4g}"
    assert s.packages <= c.scale_up_domain or c.scale_up_domain == 1


# Per-direction link figures of the GPUs the deployments name: the catalog chip's, and for the H800 (not a catalog
# chip) its datasheet's NVLink 400 GB/s bidirectional and one 400 Gb/s NIC a GPU
SPEC = {"H800": (400e9 / 2, 400e9 / 8), "H100": ("h100-sxm", None), "GB200": ("gb200", None)}


def _spec(gpu: str) -> tuple[float, float]:
    up, out = SPEC[gpu]
    if isinstance(up, str):
        c = hardware.get(up)
        return c.scale_up_bytes_per_s, c.scale_out_bytes_per_s
    return up, out


@pytest.mark.parametrize("key", list(_catalog.load("deployments.toml")["deployments"]))
def test_a_deployment_never_exceeds_its_gpus_links(key):
    """A deployment's link figures are what its source measured or stated: at most its GPU's datasheet rate per
    direction. An H100's 450 GB/s NVLink copied into an H800 deployment (200 a direction) or a NIC counted in both
    directions (100 GB/s for a 400 Gb/s port) fails here."""
    d = _catalog.load("deployments.toml")["deployments"][key]
    assert d["gpu"] in SPEC, f"{key}: GPU {d['gpu']!r} has no datasheet row here; add it to SPEC"
    up, out = _spec(d["gpu"])
    assert d["scale_up_bytes_per_s"] <= up * 1.001, (key, d["scale_up_bytes_per_s"], up)
    assert d["scale_out_bytes_per_s"] <= out * 1.001, (key, d["scale_out_bytes_per_s"], out)
