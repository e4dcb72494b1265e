"""Datasheet, config and paper figures typed here by hand, so a check can hold the catalogs to them (issue 28).

A check that computes its claim's numbers from the catalogs passes whatever the catalogs say
unless something outside them pins the inputs. These tables are that something: each number
was read off the vendor's datasheet, the model's ``config.json`` or the paper, independently of
``lib/llmmath/data``, and :func:`require_sheets` fails a check when a catalog value it uses
drifts from them by more than 1% (GB vs GiB is 7.4%, a sparse figure 100%). Dense FLOP/s are
the "with sparsity" figure halved where a sheet gives only that.
"""

from __future__ import annotations

import math

from ... import hardware, models
from ..claims import require

GIB = 2**30

# Per chip: HBM bytes, HBM bytes/s, dense FLOP/s by dtype.
CHIPS = {
    # NVIDIA A100 datasheet (80GB SXM): 80 GB HBM2e, 2,039 GB/s; BF16 312 TFLOPS, INT8 624 TOPS (dense).
    "a100-80gb": dict(hbm_bytes=80e9, hbm_bytes_per_s=2.039e12, bf16=312e12, int8=624e12),
    # NVIDIA H100 datasheet, SXM: 80 GB, 3.35 TB/s; BF16 1,979 and FP8 3,958 TFLOPS with sparsity.
    "h100-sxm": dict(hbm_bytes=80e9, hbm_bytes_per_s=3.35e12, bf16=1979e12 / 2, fp8=3958e12 / 2),
    # same sheet, PCIe: 80 GB, 2 TB/s; BF16 1,513 and FP8 3,026 TFLOPS with sparsity.
    "h100-pcie": dict(hbm_bytes=80e9, hbm_bytes_per_s=2.0e12, bf16=1513e12 / 2, fp8=3026e12 / 2),
    # NVIDIA H200 datasheet (SXM): 141 GB HBM3e, 4.8 TB/s; the H100's tensor cores (BF16 1,979 sparse).
    "h200": dict(hbm_bytes=141e9, hbm_bytes_per_s=4.8e12, bf16=1979e12 / 2, fp8=3958e12 / 2),
    # NVIDIA HGX B200 datasheet, per GPU (/8): 1,440 GB -> 180 GB, 64 TB/s -> 8 TB/s; FP16/BF16 36 PF and FP8
    # 72 PF with sparsity -> 2.25 and 4.5 PF dense.
    "b200": dict(hbm_bytes=180e9, hbm_bytes_per_s=8e12, bf16=36e15 / 8 / 2, fp8=72e15 / 8 / 2),
    # NVIDIA GB200 NVL72 datasheet, per GPU (/72): 13.4 TB -> 186 GB, 576 TB/s -> 8 TB/s; FP16/BF16 360 PF and FP8
    # 720 PF with sparsity -> 2.5 and 5 PF dense.
    "gb200": dict(hbm_bytes=13.4e12 / 72, hbm_bytes_per_s=576e12 / 72, bf16=360e15 / 72 / 2, fp8=720e15 / 72 / 2),
    # AMD Instinct MI300X data sheet: 192 GB HBM3, 5.3 TB/s; BF16 1,307.4 and FP8 2,614.9 TFLOPS dense.
    "mi300x": dict(hbm_bytes=192e9, hbm_bytes_per_s=5.3e12, bf16=1307.4e12, fp8=2614.9e12),
    # AMD Instinct MI325X data sheet: 256 GB HBM3E, 6 TB/s; the MI300X's compute.
    "mi325x": dict(hbm_bytes=256e9, hbm_bytes_per_s=6e12, bf16=1307.4e12, fp8=2614.9e12),
    # Google Cloud TPU docs: v4 32 GiB, 1,200 GB/s, 275 TFLOPS bf16; v5e 16 GB, 819 GB/s, 197 TFLOPS bf16,
    # 394 TOPS int8; v5p 95 GiB, 2,765 GB/s, 459 TFLOPS bf16; v6e (Trillium) 32 GB, 1,640 GB/s, 918 TFLOPS bf16.
    "tpu-v4": dict(hbm_bytes=32 * GIB, hbm_bytes_per_s=1.2e12, bf16=275e12),
    "tpu-v5e": dict(hbm_bytes=16e9, hbm_bytes_per_s=819e9, bf16=197e12, int8=394e12),
    "tpu-v5p": dict(hbm_bytes=95 * GIB, hbm_bytes_per_s=2.765e12, bf16=459e12),
    "tpu-v6e": dict(hbm_bytes=32e9, hbm_bytes_per_s=1.64e12, bf16=918e12),
    # NVIDIA GB300 NVL72 page, per GPU (/72): 288 GB HBM3e, 576 TB/s -> 8 TB/s; FP16/BF16 360 PF and FP8 720 PF with
    # sparsity -> 2.5 and 5 PF dense.
    "gb300": dict(hbm_bytes=288e9, hbm_bytes_per_s=576e12 / 72, bf16=360e15 / 72 / 2, fp8=720e15 / 72 / 2),
    # NVIDIA HGX B300 table, per GPU (/8): 2.3 TB -> 288 GB, 64 TB/s -> 8 TB/s; BF16 36 PF and FP8 72 PF with sparsity.
    "b300": dict(hbm_bytes=2.3e12 / 8, hbm_bytes_per_s=64e12 / 8, bf16=36e15 / 8 / 2, fp8=72e15 / 8 / 2),
    # NVIDIA H20 (partner spec sheet): 96 GB HBM3, 4.0 TB/s; FP16/BF16 148 and FP8 296 TFLOPS dense.
    "h20": dict(hbm_bytes=96e9, hbm_bytes_per_s=4.0e12, bf16=148e12, fp8=296e12),
    # NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s; BF16 362.05 | 733* and FP8 733 | 1,466* TFLOPS (dense | sparse).
    "l40s": dict(hbm_bytes=48e9, hbm_bytes_per_s=864e9, bf16=362.05e12, fp8=733e12),
    # NVIDIA A100 datasheet (40GB SXM): 40 GB HBM2, 1,555 GB/s; BF16 312 TFLOPS dense.
    "a100-40gb": dict(hbm_bytes=40e9, hbm_bytes_per_s=1.555e12, bf16=312e12),
    # AMD Instinct MI355X: 288 GB HBM3E, 8 TB/s; FP16/BF16 5 PF with structured sparsity -> 2.5 PF dense; FP8 5 PF dense.
    "mi355x": dict(hbm_bytes=288e9, hbm_bytes_per_s=8e12, bf16=5e15 / 2, fp8=5e15),
    # Intel Gaudi 3 (Hot Chips 2024): 128 GB HBM2e, 3.7 TB/s; BF16 matrix 1,835 TFLOPS.
    "gaudi3": dict(hbm_bytes=128e9, hbm_bytes_per_s=3.7e12, bf16=1835e12),
    # Google Cloud TPU7x (Ironwood) docs: 192 GiB, 7,380 GB/s, BF16 2,307 TFLOPS a chip.
    "tpu-v7": dict(hbm_bytes=192 * GIB, hbm_bytes_per_s=7.38e12, bf16=2307e12),
}

# Per chip: the scale-up link per direction and the scale-up domain (chapter 0's table prints both). NVIDIA gives
# NVLink bidirectional: A100 600 GB/s, H100/H200/H20 900 GB/s, Blackwell 1.8 TB/s (H100 PCIe: an NVLink bridge of
# 600 GB/s joining 2; L40S: PCIe Gen4 x16, 64 GB/s both ways, 8 a server); NVL72 racks join 72. AMD: 7 Infinity
# Fabric links a GPU, 64 GB/s each way on MI300X/MI325X, 76.8 on MI355X, 8 a platform. Gaudi 3: 21 of its 24 200 GbE
# ports for scale-up, 8 a node. Google: ICI per chip 2,400 (v4), 1,600 (v5e), 4,800 (v5p), 3,200 (v6e) Gbps and
# 1.2 TB/s bidirectional (v7); pods of 4,096, 256, 8,960, 256 and 9,216 chips.
LINKS = {
    "a100-80gb": dict(scale_up=600e9 / 2, domain=8), "a100-40gb": dict(scale_up=600e9 / 2, domain=8),
    "h100-sxm": dict(scale_up=900e9 / 2, domain=8), "h200": dict(scale_up=900e9 / 2, domain=8),
    "h20": dict(scale_up=900e9 / 2, domain=8), "h100-pcie": dict(scale_up=600e9 / 2, domain=2),
    "l40s": dict(scale_up=64e9 / 2, domain=8), "b200": dict(scale_up=1.8e12 / 2, domain=8),
    "b300": dict(scale_up=1.8e12 / 2, domain=8), "gb200": dict(scale_up=1.8e12 / 2, domain=72),
    "gb300": dict(scale_up=1.8e12 / 2, domain=72), "mi300x": dict(scale_up=7 * 64e9, domain=8),
    "mi325x": dict(scale_up=7 * 64e9, domain=8), "mi355x": dict(scale_up=7 * 76.8e9, domain=8),
    "gaudi3": dict(scale_up=21 * 200e9 / 8, domain=8), "tpu-v4": dict(scale_up=2400e9 / 8, domain=4096),
    "tpu-v5e": dict(scale_up=1600e9 / 8, domain=256), "tpu-v5p": dict(scale_up=4800e9 / 8, domain=8960),
    "tpu-v6e": dict(scale_up=3200e9 / 8, domain=256), "tpu-v7": dict(scale_up=1.2e12 / 2, domain=9216),
}
for _k, _v in LINKS.items():
    CHIPS[_k] = {**CHIPS[_k], **_v}

# Per package of a scale-up system: HBM bytes and bytes/s, scale-up and scale-out bytes/s per direction.
SYSTEMS = {
    "hgx-h100": dict(scale_up=900e9 / 2, scale_out=400e9 / 8),      # NVLink 4 900 GB/s bidirectional; CX-7 400 Gb/s
    "hgx-h200": dict(scale_up=900e9 / 2, scale_out=400e9 / 8),
    "hgx-b200": dict(scale_up=1.8e12 / 2, scale_out=400e9 / 8),     # NVLink 5 1.8 TB/s bidirectional; CX-7 400 Gb/s
    "gb200-nvl72": dict(hbm=13.4e12 / 72, hbm_per_s=576e12 / 72, scale_up=130e12 / 72 / 2, scale_out=400e9 / 8),
    # GB300 NVL72: 288 GB HBM3e a GPU (20.7 TB / 72), 8 TB/s, NVLink 130 TB/s a rack, ConnectX-8 800 Gb/s a GPU.
    "gb300-nvl72": dict(hbm=288e9, hbm_per_s=8e12, scale_up=130e12 / 72 / 2, scale_out=800e9 / 8),
    # Vera Rubin NVL72 (CES 2026): 288 GB HBM4 at 22 TB/s a GPU, NVLink 6 3.6 TB/s a GPU bidirectional, CX-9 1.6 Tb/s.
    "vera-rubin-nvl72": dict(hbm=288e9, hbm_per_s=22e12, scale_up=3.6e12 / 2, scale_out=1.6e12 / 8),
    # AMD Helios (MI450, 72 GPUs): 432 GB HBM4 at 19.6 TB/s a GPU; 260 TB/s scale-up a rack; 43.2 TB/s scale-out a rack.
    "helios-mi450": dict(hbm=432e9, hbm_per_s=19.6e12, scale_up=260e12 / 72 / 2, scale_out=43.2e12 / 72 / 2),
    # AMD MI300X platform: 7 Infinity Fabric links of 64 GB/s per direction a GPU, one 400 Gb/s NIC a GPU.
    "mi300x-8": dict(scale_up=7 * 64e9, scale_out=400e9 / 8),
}

# config.json fields (huggingface.co/<org>/<model>/config.json).
MODELS = {
    "deepseek-v3": dict(n_layers=61, n_heads=128, n_experts=256, experts_per_token=8, d_ff_expert=2048,
                        kv_lora_rank=512, qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128),
    # config.json of each (Hugging Face): num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads,
    # head_dim, the experts and their width (intermediate_size / moe_intermediate_size)
    "mixtral-8x7b": dict(n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, n_experts=8, experts_per_token=2,
                         d_ff_expert=14336),
    "qwen3-30b-a3b": dict(n_layers=48, d_model=2048, n_heads=32, n_kv_heads=4, head_dim=128, n_experts=128,
                          experts_per_token=8, d_ff_expert=768),
    "gpt-oss-120b": dict(n_layers=36, d_model=2880, n_heads=64, n_kv_heads=8, head_dim=64, n_experts=128,
                         experts_per_token=4, d_ff_expert=2880),
    "kimi-k2": dict(n_layers=61, n_heads=64, n_experts=384, experts_per_token=8, d_ff_expert=2048),
    "llama-3.1-8b": dict(n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=14336),
    "llama-3.1-70b": dict(n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, d_ff=28672),
    "llama-3.1-405b": dict(n_layers=126, d_model=16384, n_heads=128, n_kv_heads=8, d_ff=53248),
    "qwen3-4b": dict(n_layers=36, d_model=2560, n_heads=32, n_kv_heads=8, d_ff=9728),
    "qwen3-235b-a22b": dict(n_layers=94, d_model=4096, n_heads=64, n_kv_heads=4, n_experts=128, experts_per_token=8,
                            d_ff_expert=1536),
}

# Training runs: tokens (the papers and model cards) and the GPU whose peak MFU is taken against.
RUNS = {
    "llama-3.1-8b": dict(tokens=15e12, gpu="h100-sxm"),      # Llama 3.1 model card: ~15T tokens, H100-80GB
    "llama-3.1-70b": dict(tokens=15e12, gpu="h100-sxm"),
    "llama-3.1-405b": dict(tokens=15.6e12, gpu="h100-sxm"),  # Llama 3 Herd paper, section 3
    "deepseek-v3": dict(tokens=14.8e12, gpu="h100-sxm"),     # V3 report: 14.8T tokens on H800s (the H100 SXM's FLOP/s)
    "qwen3-4b": dict(tokens=36e12),                          # Qwen3 technical report: ~36T tokens, every size
    "qwen3-235b-a22b": dict(tokens=36e12),
}

# (system field, chip field, sheet field) a system restates from the chip it names
_TIED = (("hbm_bytes_per_package", "hbm_bytes", "hbm_bytes"), ("hbm_bytes_per_s_per_package", "hbm_bytes_per_s",
                                                                "hbm_bytes_per_s"),
         ("scale_up_bytes_per_s_per_package", "scale_up_bytes_per_s", "scale_up"),
         ("scale_out_bytes_per_s_per_package", "scale_out_bytes_per_s", None))
_CHIP_FIELDS = {"hbm_bytes": lambda c: c.hbm_bytes, "hbm_bytes_per_s": lambda c: c.hbm_bytes_per_s,
                "scale_up": lambda c: c.scale_up_bytes_per_s, "domain": lambda c: c.scale_up_domain}
_SYSTEM_FIELDS = {"hbm": "hbm_bytes_per_package", "hbm_per_s": "hbm_bytes_per_s_per_package",
                  "scale_up": "scale_up_bytes_per_s_per_package", "scale_out": "scale_out_bytes_per_s_per_package"}


def _close(got: float, want: float, rtol: float) -> bool:
    return math.isfinite(got) and abs(got / want - 1) <= rtol


def require_sheets(claim_id: int, *, chips=(), systems=(), models_=(), runs=(), rtol: float = 0.01) -> None:
    """Fail claim ``claim_id``'s check when a catalog value it uses is not its sheet's (within ``rtol``).

    ``chips="all"`` / ``systems="all"``: every catalog chip (system) in these tables, and none may be
    missing from them (a new catalog row needs its datasheet figures here first)."""
    if chips == "all":
        missing = set(hardware.catalog()) - set(CHIPS)
        require(not missing, claim_id, f"catalog chips without datasheet figures in checks/_sheets.py: {sorted(missing)}")
        chips = list(CHIPS)
    if systems == "all":
        missing = {k for k, s in hardware.systems().items() if not s.superseded_by} - set(SYSTEMS) - {
            k for k, s in hardware.systems().items() if s.vendor == "Google" or k in _UNSHEETED_SYSTEMS}
        require(not missing, claim_id, f"catalog systems without sheet figures in checks/_sheets.py: {sorted(missing)}")
        systems = list(SYSTEMS)
    for key in chips:
        c, sheet = hardware.get(key), CHIPS[key]
        for field, want in sheet.items():
            got = _CHIP_FIELDS[field](c) if field in _CHIP_FIELDS else c.peak_flops_per_s.get(field, math.nan)
            require(_close(got, want, rtol), claim_id, f"{key} {field}: catalog {got:.4g} vs datasheet {want:.4g}")
    for key in systems:
        s, sheet = hardware.system(key), SYSTEMS[key]
        for field, want in sheet.items():
            got = getattr(s, _SYSTEM_FIELDS[field])
            require(_close(got, want, rtol), claim_id, f"{key} {_SYSTEM_FIELDS[field]}: catalog {got:.4g} vs sheet "
                                                       f"{want:.4g}")
    # a system that names its chip restates the chip's per-package figures: each copy must be the chip's, and the
    # chip's its datasheet's (a usable-vs-raw capacity, an older HBM's bandwidth or a per-die figure in one copy)
    for key, s in hardware.systems().items():
        if not (s.chip and (systems == list(SYSTEMS) or key in systems)):
            continue
        c = hardware.get(s.chip)
        for sys_field, chip_field, sheet_field in _TIED:
            got, chip_v = float(getattr(s, sys_field)), float(getattr(c, chip_field) or math.nan)
            if math.isnan(got) and math.isnan(chip_v):
                continue
            require(_close(got, chip_v, 0.001), claim_id, f"{key} {sys_field} {got:.4g} differs from its chip "
                                                         f"{s.chip}'s {chip_field} {chip_v:.4g}")
            want = CHIPS.get(s.chip, {}).get(sheet_field)
            if want is not None:
                require(_close(chip_v, want, rtol), claim_id, f"{s.chip} {chip_field}: catalog {chip_v:.4g} vs "
                                                             f"datasheet {want:.4g}")
    for key in models_:
        m = models.get(key)
        for field, want in MODELS[key].items():
            require(getattr(m, field) == want, claim_id, f"{key} {field}: catalog {getattr(m, field)} vs config.json "
                                                         f"{want}")
    if runs:
        from ... import _catalog
        table = _catalog.load("training_runs.toml")["runs"]
        for key in runs:
            run = table[key]
            for field, want in RUNS[key].items():
                got = run[field]
                ok = got == want if isinstance(want, str) else _close(float(got), want, rtol)
                require(ok, claim_id, f"training run {key} {field}: catalog {got} vs published {want}")


# Systems with no sheet row yet (their figures are announced, not shipped, and each check that uses them says so).
_UNSHEETED_SYSTEMS = {"hgx-a100", "rubin-ultra-nvl576", "mi355x-8"}
