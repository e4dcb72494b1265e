"""Accelerators as data: the catalog, and this machine measured as a chip.

A :class:`Chip` holds the handful of numbers the course's formulas need:

* ``peak_flops_per_s[dtype]`` -- dense peak (never the 2:4 "with sparsity" figure);
* ``hbm_bytes`` (C) and ``hbm_bytes_per_s`` (W);
* ``scale_up_bytes_per_s`` / ``scale_out_bytes_per_s`` -- per chip, per direction;
* ``scale_up_domain`` -- chips (packages) in one scale-up domain.

Every catalog number comes from ``data/hardware.toml``, which cites a datasheet
for each. The machine the reader is sitting at is measured as a Chip by
:func:`llmmath.demos.kernels.local_chip` (a measured demo, kept out of this pure module),
so that every formula can be evaluated against it too.
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache
from types import MappingProxyType
from typing import Mapping

from . import _catalog
from ._validate import non_negative_int, positive, positive_int, scalar
from .units import DTYPE_BYTES, dtype_bytes

__all__ = ["Chip", "get", "names", "catalog", "System", "systems", "system"]


@dataclasses.dataclass(frozen=True)
class Chip:
    """One accelerator package. All values SI: bytes, bytes/s, FLOP/s.

    Attributes:
        key: catalog name (``"h100-sxm"``).
        name: marketing name.
        peak_flops_per_s: dense peak FLOP/s by dtype (``fp32, tf32, bf16, fp16,
            fp8, int8, fp4`` where the chip has them).
        hbm_bytes: HBM capacity C, bytes (decimal GB x 1e9).
        hbm_bytes_per_s: HBM bandwidth W, bytes/s.
        scale_up_bytes_per_s: scale-up link bandwidth per chip, per direction.
        scale_out_bytes_per_s: scale-out (NIC) bandwidth per chip, per direction.
        scale_up_domain: chips (packages) in one scale-up domain.
        scale_up_domain_dies: compute dies in that domain (2 per Blackwell package).
        runtime_memory_bytes: the device's total memory as its runtime reports it to a program (CUDA's
            ``cudaMemGetInfo`` total, ROCm's likewise), bytes; 0 where no reported value has a source.
    """

    key: str
    name: str
    vendor: str
    generation: str
    year: int
    peak_flops_per_s: Mapping[str, float]
    hbm_bytes: float
    hbm_bytes_per_s: float
    scale_up_bytes_per_s: float = 0.0
    scale_out_bytes_per_s: float = 0.0
    scale_up_domain: int = 1
    scale_up_domain_dies: int = 1
    runtime_memory_bytes: float = 0.0
    scale_up_name: str = ""
    scale_out_name: str = ""
    hbm_type: str = ""
    tdp_watts: float = 0.0
    sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
    note: str = ""
    unverified: tuple[str, ...] = ()

    def __post_init__(self):
        """Validate every field (also on :func:`dataclasses.replace`)."""
        key = _check_strings(self, ("key", "name", "vendor", "generation", "scale_up_name", "scale_out_name",
                                    "hbm_type", "note"))
        with _prefixed(key):
            object.__setattr__(self, "year", non_negative_int("year", self.year))
            peaks = self.peak_flops_per_s
            if not hasattr(peaks, "items"):
                raise TypeError(f"peak_flops_per_s must be a mapping dtype -> FLOP/s, got {peaks!r}")
            unknown = [k for k in peaks if k not in DTYPE_BYTES]
            if unknown:
                raise KeyError(f"peak_flops_per_s has unknown dtypes {unknown}; allowed: {', '.join(DTYPE_BYTES)}")
            checked = {k: float(positive(f"peak_flops_per_s[{k!r}]", scalar(f"peak_flops_per_s[{k!r}]", v)))
                       for k, v in peaks.items()}
            object.__setattr__(self, "peak_flops_per_s", MappingProxyType(checked))
            object.__setattr__(self, "hbm_bytes", _number("hbm_bytes", self.hbm_bytes, minimum=0.0))
            object.__setattr__(self, "hbm_bytes_per_s", _number("hbm_bytes_per_s", self.hbm_bytes_per_s))
            for f in ("scale_up_bytes_per_s", "scale_out_bytes_per_s", "tdp_watts", "runtime_memory_bytes"):
                object.__setattr__(self, f, _number(f, getattr(self, f), minimum=0.0, unknown=True))
            for f in ("scale_up_domain", "scale_up_domain_dies"):
                object.__setattr__(self, f, positive_int(f, getattr(self, f)))

    def flops_per_s(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s at ``dtype``.

        Raises:
            KeyError: the chip has no such format; the message lists the ones it has.
        """
        dtype_bytes(dtype)  # unknown dtype names get the general message
        try:
            return self.peak_flops_per_s[dtype]
        except KeyError:
            raise KeyError(
                f"{self.key} has no native {dtype} peak; it has: {', '.join(self.peak_flops_per_s)}"
            ) from None

    def balance_flops_per_byte(self, dtype: str = "bf16") -> float:
        """F / W: FLOPs the chip can do per byte it reads from HBM (the roofline's ridge)."""
        return self.flops_per_s(dtype) / self.hbm_bytes_per_s

    def balance_ratio(self, weight_dtype: str = "bf16", compute_dtype: str | None = None) -> float:
        """R = F * b_w / (2 W): the batch at which a dense matmul's weight reads and its FLOPs take equal time.

        With bf16 weights and bf16 compute this equals F/W in FLOP/byte. ``compute_dtype``
        defaults to ``weight_dtype`` when the chip has it, else bf16 (weight-only quantization).
        """
        compute = compute_dtype or default_compute_dtype(self, weight_dtype)
        return self.flops_per_s(compute) * dtype_bytes(weight_dtype) / (2.0 * self.hbm_bytes_per_s)

    @property
    def hbm_read_time_s(self) -> float:
        """C / W: seconds to read the whole HBM once."""
        return self.hbm_bytes / self.hbm_bytes_per_s

    def __repr__(self) -> str:
        return f"Chip({self.key!r})"


class _prefixed:
    """Prefix the message of a TypeError/ValueError/KeyError raised inside with ``key: ``."""

    def __init__(self, key: str):
        self.key = key

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type in (TypeError, ValueError, KeyError):
            msg = exc.args[0] if exc.args else ""
            raise exc_type(f"{self.key}: {msg}") from None
        return False


def _check_strings(obj, fields) -> str:
    key = obj.key if isinstance(obj.key, str) else repr(obj.key)
    for f in fields:
        if not isinstance(getattr(obj, f), str):
            raise TypeError(f"{key}: {f} must be a string, got {getattr(obj, f)!r}")
    return key


def _number(name: str, value, minimum: float | None = None, unknown: bool = False) -> float:
    """A finite float > 0 (or >= ``minimum``); NaN too where ``unknown`` (no published figure)."""
    v = scalar(name, value, finite=False)
    if unknown and math.isnan(v):
        return v
    if not math.isfinite(v):
        raise ValueError(f"{name} must be finite{' (or NaN: unknown)' if unknown else ''}, got {v!r}")
    if (v < minimum) if minimum is not None else (v <= 0):
        raise ValueError(f"{name} must be {'>= ' + format(minimum, 'g') if minimum is not None else '> 0'}"
                         f"{' (or NaN: unknown)' if unknown else ''}, got {v!r}")
    return v


def default_compute_dtype(chip: Chip, weight_dtype: str) -> str:
    """The matmul precision used for ``weight_dtype`` weights on ``chip``.

    Weights in a format the chip computes natively are multiplied in that format;
    otherwise (fp8 weights on an A100, fp4 on an H100) they are upcast and the
    matmul runs at bf16, or at fp32 if the chip has no bf16 (a CPU).
    """
    chip = get(chip)
    dtype_bytes(weight_dtype)
    if weight_dtype in chip.peak_flops_per_s:
        return weight_dtype
    for fallback in ("bf16", "fp16", "fp32"):
        if fallback in chip.peak_flops_per_s:
            return fallback
    raise KeyError(f"{chip.key} has no published {weight_dtype} rate to compute {weight_dtype} weights at (nor bf16, "
                   f"fp16 or fp32 to upcast them to); its published rates: {', '.join(chip.peak_flops_per_s)}: give "
                   f"weights in one of them")


def _chip_kwargs(key: str, kw: dict) -> dict:
    unknown_dtypes = set(kw["peak_flops_per_s"]) - set(DTYPE_BYTES)
    if unknown_dtypes:
        raise ValueError(f"hardware.toml: {key} has unknown dtypes {sorted(unknown_dtypes)}")
    kw["peak_flops_per_s"] = MappingProxyType({k: float(v) for k, v in kw["peak_flops_per_s"].items()})
    for f in ("hbm_bytes", "hbm_bytes_per_s", "scale_up_bytes_per_s", "scale_out_bytes_per_s", "tdp_watts",
              "runtime_memory_bytes"):
        if f in kw:
            kw[f] = float(kw[f])
    kw.setdefault("scale_up_domain_dies", kw.get("scale_up_domain", 1))
    return kw


@lru_cache(maxsize=None)
def catalog() -> Mapping[str, Chip]:
    """Every chip in ``data/hardware.toml``, by key, in file order."""
    return _catalog.entries("hardware.toml", "chips", Chip, _chip_kwargs)


def names() -> list[str]:
    """Catalog keys, e.g. ``['a100-80gb', 'h100-sxm', ...]``."""
    return list(catalog())


def get(name: str | Chip) -> Chip:
    """The catalog chip called ``name`` (case-insensitive); a Chip is returned as is.

    Raises:
        KeyError: unknown name; the message names the closest entries.
    """
    return _catalog.resolve(name, Chip, catalog(), "chip")


# ---------------------------------------------------------------------------
# Scale-up systems: the domain a model is served in (data/systems.toml)
# ---------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class System:
    """One scale-up domain (an HGX board, an NVL72 rack, a TPU pod). Per-package values, SI units.

    ``packages`` counts GPU packages; ``dies`` counts compute dies (2 per Blackwell
    package); ``marketing_count`` is the number in the product name (NVL144 counted dies).
    Bandwidths are per direction. NaN means the vendor publishes no figure. ``fp8_flops_per_s_per_package`` and
    ``fp4_flops_per_s_per_package``: dense low-precision rates, given only for systems whose chip is not in
    ``hardware.toml`` (roadmap systems publish these and no BF16 figure). :meth:`package_chip` is the chip a model
    is served on.
    """

    key: str
    name: str
    vendor: str
    year: int
    chip: str
    packages: int
    dies: int
    marketing_count: int
    hbm_bytes_per_package: float
    hbm_bytes_per_s_per_package: float
    scale_up_bytes_per_s_per_package: float
    scale_out_bytes_per_s_per_package: float
    bf16_flops_per_s_per_package: float
    scale_up_name: str = ""
    scale_out_name: str = ""
    sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
    note: str = ""
    unverified: tuple[str, ...] = ()
    superseded_by: str = ""  # an announcement later shipped as another entry: leave it out of statistics
    fp8_flops_per_s_per_package: float = math.nan
    fp4_flops_per_s_per_package: float = math.nan

    def __post_init__(self):
        """Validate every field (also on :func:`dataclasses.replace`); NaN marks an unpublished figure."""
        key = _check_strings(self, ("key", "name", "vendor", "chip", "scale_up_name", "scale_out_name", "note",
                                    "superseded_by"))
        with _prefixed(key):
            object.__setattr__(self, "year", non_negative_int("year", self.year))
            for f in ("packages", "dies", "marketing_count"):
                object.__setattr__(self, f, positive_int(f, getattr(self, f)))
            for f in ("hbm_bytes_per_package", "hbm_bytes_per_s_per_package", "scale_up_bytes_per_s_per_package",
                      "scale_out_bytes_per_s_per_package", "bf16_flops_per_s_per_package",
                      "fp8_flops_per_s_per_package", "fp4_flops_per_s_per_package"):
                object.__setattr__(self, f, _number(f, getattr(self, f), unknown=True))

    @property
    def hbm_bytes(self) -> float:
        """Aggregate HBM capacity of the domain, bytes."""
        return self.packages * self.hbm_bytes_per_package

    @property
    def hbm_bytes_per_s(self) -> float:
        """Aggregate HBM bandwidth of the domain: packages x per-package, bytes/s."""
        return self.packages * self.hbm_bytes_per_s_per_package

    def package_chip(self) -> Chip:
        """The chip a model is served on in this system: the catalog chip it names, or, for a system whose chip is
        not in ``hardware.toml`` (roadmap racks), one package described by the system's own figures: its HBM and
        bandwidth, its links, a scale-up domain of ``packages``, and the dense rates it publishes (BF16, and FP8 /
        FP4 where given; without a BF16 figure, half the FP8 rate, named in the chip's ``unverified``). Such a chip
        has no runtime memory figure (the engine view refuses it: give a share of its HBM), and its note says where
        each figure comes from.

        Raises:
            ValueError: the system publishes neither HBM capacity nor bandwidth, or no compute rate at all.
        """
        if self.chip:
            return get(self.chip)
        bf16, assumed = self.bf16_flops_per_s_per_package, ()
        if not math.isfinite(bf16) and math.isfinite(self.fp8_flops_per_s_per_package):
            # no BF16 figure published: half the FP8 rate, the ratio of every tensor core since Hopper and CDNA 3
            bf16, assumed = self.fp8_flops_per_s_per_package / 2, ("peak_flops_per_s.bf16 (assumed: fp8 / 2)",)
        rates = {k: v for k, v in (("bf16", bf16), ("fp16", bf16),
                                   ("fp8", self.fp8_flops_per_s_per_package),
                                   ("fp4", self.fp4_flops_per_s_per_package)) if math.isfinite(v)}
        if not rates or not (math.isfinite(self.hbm_bytes_per_package)
                             and math.isfinite(self.hbm_bytes_per_s_per_package)):
            raise ValueError(f"system {self.key!r} publishes no compute rate, HBM capacity or bandwidth per package "
                             f"to describe its chip; give a chip instead (chips: {', '.join(names())})")
        return Chip(key=self.key, name=f"{self.name}: one package", vendor=self.vendor,
                    generation="described by its system (data/systems.toml)", year=self.year, peak_flops_per_s=rates,
                    hbm_bytes=self.hbm_bytes_per_package, hbm_bytes_per_s=self.hbm_bytes_per_s_per_package,
                    scale_up_bytes_per_s=self.scale_up_bytes_per_s_per_package,
                    scale_out_bytes_per_s=self.scale_out_bytes_per_s_per_package, scale_up_domain=self.packages,
                    scale_up_domain_dies=self.dies, scale_up_name=self.scale_up_name,
                    scale_out_name=self.scale_out_name,
                    sources=dict(self.sources),
                    note=f"One package of {self.name}, from the system's per-package figures ({', '.join(rates)} rates"
                         f"{'; BF16 assumed half of FP8, as no BF16 figure is published' if assumed else ''}; "
                         f"no runtime memory figure). {self.note}",
                    unverified=tuple(self.unverified) + assumed)

    @property
    def scale_up_over_scale_out(self) -> float:
        """Per-GPU scale-up bandwidth / per-GPU scale-out bandwidth (NaN if either is unknown)."""
        return self.scale_up_bytes_per_s_per_package / self.scale_out_bytes_per_s_per_package

    def __repr__(self) -> str:
        return f"System({self.key!r})"


@lru_cache(maxsize=None)
def systems() -> Mapping[str, System]:
    """Every scale-up system in ``data/systems.toml``, by key, in file order."""
    return _catalog.entries("systems.toml", "systems", System)


def system(name: str | System) -> System:
    """The scale-up system called ``name`` (e.g. ``"gb200-nvl72"``).

    Raises:
        KeyError: unknown name; the message names the closest entries.
    """
    return _catalog.resolve(name, System, systems(), "system")
