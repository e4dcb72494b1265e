"""The claims ledger: the interview's 40 claims, each with its chapter and check.

Data (timestamp, paraphrase, the speaker's reasoning and numbers) lives in
``data/claims.toml``; the check functions live here. A check recomputes the
claim from the library and compares it with numbers derived independently
(a datasheet ratio, a hand derivation written in the check), then returns a
:class:`Verdict`. It raises :class:`ClaimCheckFailed` if the numbers no longer
support the verdict, so a notebook cell that calls :func:`check` fails loudly.

Verdict words: ``holds``, ``holds if`` (only under a stated condition),
``off by`` (right direction, wrong size), ``does not hold``, and ``pending``
(the chapter that checks it is not written yet).
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Callable

import numpy as np

from . import _catalog, adversarial, ciphers, hardware, memory, models, network, parallelism, reversible, serving

__all__ = ["Claim", "Verdict", "ClaimCheckFailed", "get", "all_claims", "check", "ledger_table"]

VERDICT_WORDS = ("holds", "holds if", "off by", "does not hold", "pending")


class ClaimCheckFailed(AssertionError):
    """The numbers no longer support the claim's recorded verdict."""


@dataclasses.dataclass(frozen=True)
class Claim:
    id: int
    timestamp: str
    topic: str
    chapter: int
    claim: str
    reasoning: str
    numbers: tuple[str, ...]
    checks: str

    @property
    def status(self) -> str:
        """``'checked'`` when a check function exists, else ``'pending'``."""
        return "checked" if self.id in _CHECKS else "pending"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Outcome of a claim's check: a verdict word, one sentence, and the evidence."""

    claim_id: int
    verdict: str
    summary: str
    evidence: dict

    def __str__(self) -> str:
        c = get(self.claim_id)
        lines = [f"Claim {c.id} ({c.timestamp}) -- {self.verdict.upper()}: {self.summary}"]
        for k, v in self.evidence.items():
            lines.append(f"    {k}: {v}")
        return "\n".join(lines)


@lru_cache(maxsize=None)
def all_claims() -> tuple[Claim, ...]:
    """The 40 claims in the source's order."""
    rows = _catalog.load("claims.toml")["claims"]
    out = tuple(
        Claim(r["id"], r["timestamp"], r["topic"], r["chapter"], r["claim"], r["reasoning"],
              tuple(r.get("numbers", ())), r.get("checks", ""))
        for r in rows
    )
    if [c.id for c in out] != list(range(1, len(out) + 1)):
        raise ValueError("claims.toml: ids must run 1..N in order")
    return out


def get(claim_id: int) -> Claim:
    """Claim number ``claim_id`` (1-40).

    Raises:
        KeyError: no such claim.
    """
    claims = all_claims()
    if not isinstance(claim_id, (int, np.integer)) or not 1 <= claim_id <= len(claims):
        raise KeyError(f"claim id must be a whole number from 1 to {len(claims)}, got {claim_id!r}")
    return claims[int(claim_id) - 1]


_CHECKS: dict[int, Callable[[], Verdict]] = {}


def _registers(claim_id: int):
    def deco(fn):
        _CHECKS[claim_id] = fn
        return fn
    return deco


def _require(condition: bool, claim_id: int, message: str) -> None:
    if not condition:
        raise ClaimCheckFailed(f"claim {claim_id}: {message}")


def check(claim_id: int, quiet: bool = False) -> Verdict:
    """Run claim ``claim_id``'s check, print its verdict, and return it.

    Raises:
        KeyError: no such claim.
        ClaimCheckFailed: the numbers no longer support the recorded verdict.
    """
    c = get(claim_id)
    fn = _CHECKS.get(c.id)
    if fn is None:
        v = Verdict(c.id, "pending", f"to be checked in chapter {c.chapter}", {})
    else:
        v = fn()
        if v.verdict not in VERDICT_WORDS:
            raise ValueError(f"check {c.id} returned unknown verdict {v.verdict!r}")
    if not quiet:
        print(v)
    return v


def ledger_table() -> list[dict]:
    """One row per claim: id, timestamp, chapter, status, paraphrase."""
    return [dict(id=c.id, timestamp=c.timestamp, chapter=c.chapter, status=c.status, claim=c.claim)
            for c in all_claims()]


# ---------------------------------------------------------------------------
# Chapter 1: batch size
# ---------------------------------------------------------------------------
# Independent anchors, copied from datasheets (not from the catalog), so that a
# wrong catalog entry makes the checks fail: dense bf16 FLOP/s and HBM bytes/s.
_DATASHEET_BF16_FLOP_PER_BYTE = {
    "a100-80gb": 312e12 / 2.039e12,   # A100 80GB SXM datasheet: 312 TFLOPS bf16 dense, 2,039 GB/s
    "h100-sxm": 989.5e12 / 3.35e12,   # H100 SXM datasheet: 1,979 TFLOPS with sparsity -> 989.5 dense; 3.35 TB/s
    "h200": 989.5e12 / 4.8e12,        # H200 SXM: same compute as H100, 4.8 TB/s HBM3e
    "b200": 2.25e15 / 8.0e12,         # HGX B200: 4.5 PFLOPS bf16 sparse / 8 GPUs -> 2.25 dense per GPU; 8 TB/s
    "mi300x": 1307.4e12 / 5.3e12,     # MI300X datasheet: 1,307.4 TFLOPS bf16 dense, 5.3 TB/s
    "tpu-v5e": 197e12 / 819e9,        # Cloud TPU v5e: 197 TFLOPS bf16, 819 GB/s
    "tpu-v6e": 918e12 / 1.638e12,     # Cloud TPU v6e (Trillium): 918 TFLOPS bf16, 1,638 GB/s
}
_CH1_CHIPS = tuple(_DATASHEET_BF16_FLOP_PER_BYTE)
_CH1_DENSE = ("llama-3.1-8b", "llama-3.1-70b", "qwen3-4b")
_CH1_MOE = ("mixtral-8x7b", "deepseek-v3")


def _min_chips(model, chip, weight_dtype="bf16") -> int:
    m, c = models.get(model), hardware.get(chip)
    return int(np.ceil(m.weight_bytes(weight_dtype) * 1.1 / c.hbm_bytes))


@_registers(1)
def _check_1() -> Verdict:
    # On one chip, batch moves cost per token by R (hundreds of times). The
    # other knob an operator turns on the same hardware, weight precision
    # (bf16 -> fp8), moves it by at most 2x. Latency: a dense model's step time
    # stays flat all the way to the balance batch.
    spread_batch, spread_dtype = [], []
    for model in _CH1_DENSE + _CH1_MOE:
        for chip in _CH1_CHIPS:
            n = _min_chips(model, chip)
            bstar = serving.balance_batch(model, chip, context=0)
            c1 = serving.decode_cost_per_token(model, chip, 1, 0, n_chips=n, check_capacity=False)
            cb = serving.decode_cost_per_token(model, chip, 4 * bstar, 0, n_chips=n, check_capacity=False)
            spread_batch.append(c1 / cb)
            if "fp8" in hardware.get(chip).peak_flops_per_s:
                for B in (1.0, 4 * bstar):
                    bf = serving.decode_cost_per_token(model, chip, B, 0, n_chips=n, check_capacity=False)
                    f8 = serving.decode_cost_per_token(model, chip, B, 0, n_chips=n, weight_dtype="fp8",
                                                       kv_dtype="fp8", check_capacity=False)
                    spread_dtype.append(bf / f8)
    lo, hi = min(spread_batch), max(spread_batch)
    dt_hi = max(spread_dtype)
    _require(dt_hi <= 2.0 * 1.001, 1, f"fp8 changed cost by {dt_hi:.2f}x, more than its 2x byte saving")
    _require(lo > 50 * dt_hi, 1, f"batching changes cost by {lo:.0f}x at least, precision by {dt_hi:.1f}x")
    for model in _CH1_DENSE:
        for chip in _CH1_CHIPS:
            n = _min_chips(model, chip)
            bstar = serving.balance_batch(model, chip, context=0)
            t1 = serving.decode_step_time_s(model, chip, 1, 0, n_chips=n, check_capacity=False)
            tb = serving.decode_step_time_s(model, chip, bstar, 0, n_chips=n, check_capacity=False)
            _require(tb / t1 < 1.01, 1, f"{model} on {chip}: step time grows {tb / t1:.2f}x before the balance batch")
    return Verdict(1, "holds",
                   "on a given chip, going from batch 1 to past the balance batch cuts cost per token by the "
                   "chip's balance ratio (hundreds of times) while a dense model's step time stays flat; halving "
                   "the weight precision, the next knob, buys at most 2x",
                   {"cost(B=1) / cost(B=4B*), all chip x model pairs": f"{lo:.0f}x .. {hi:.0f}x",
                    "cost(bf16) / cost(fp8), same batch": f"up to {dt_hi:.2f}x",
                    "chips": ", ".join(_CH1_CHIPS), "models": ", ".join(_CH1_DENSE + _CH1_MOE)})


@_registers(2)
def _check_2() -> Verdict:
    ratios = {}
    for chip, anchor in _DATASHEET_BF16_FLOP_PER_BYTE.items():
        for model in _CH1_DENSE + _CH1_MOE:
            r = serving.cost_ratio_unbatched(model, chip, context=0)
            ratios[(chip, model)] = r
            # Dense: the ratio is the datasheet F/W times P_read / N_mm (= 1 + LM-head-free rounding).
            m = models.get(model)
            expect = anchor * m.expected_params_read(1) / m.matmul_params_per_token
            _require(abs(r / expect - 1) < 0.02, 2, f"{chip}/{model}: ratio {r:.0f} vs datasheet {expect:.0f}")
    values = np.array(list(ratios.values()))
    _require(values.min() > 100 and values.max() < 1000, 2,
             f"unbatched penalty now spans {values.min():.0f}..{values.max():.0f}x, outside 'hundreds'")
    h100 = ratios[("h100-sxm", "llama-3.1-70b")]
    ds = ratios[("h100-sxm", "deepseek-v3")]
    m_ds = models.get("deepseek-v3")
    spk = _DATASHEET_BF16_FLOP_PER_BYTE["h100-sxm"] * m_ds.weights_read_params / m_ds.matmul_params_per_token
    return Verdict(2, "off by",
                   f"right order of magnitude, but high: on the roofline the unbatched penalty is the chip's "
                   f"F*b_w/(2W), {values.min():.0f}-{values.max():.0f}x across these chips at bf16 (~{h100:.0f}x on "
                   f"an H100, so 3x too high there; 1.8x on a TPU v6e), for dense and MoE models alike -- an "
                   f"unbatched MoE reads only its active experts, so its sparsity does not multiply the penalty",
                   {"H100, Llama-3.1-70B": f"{h100:.0f}x", "H100, DeepSeek-V3": f"{ds:.0f}x",
                    "if batch 1 read every expert (speaker's model)": f"{spk:.0f}x",
                    "range over chips x models": f"{values.min():.0f}x .. {values.max():.0f}x"})


@_registers(4)
def _check_4() -> Verdict:
    rows = {}
    # Hand derivation for Llama-3.1-70B on 8 H100 SXM (datasheet 3.35 TB/s):
    # (70,553,706,496 params - 128,256 x 8,192 untied input embedding) x 2 bytes / (8 x 3.35e12 B/s)
    hand = (70_553_706_496 - 128_256 * 8_192) * 2 / (8 * 3.35e12)
    floor = serving.latency_floor_s("llama-3.1-70b", "h100-sxm", n_chips=8)
    _require(abs(floor / hand - 1) < 1e-9, 4, f"floor {floor} vs hand {hand}")
    B = np.array([1, 4, 16, 64, 256, 1024, 4096])[:, None]
    L = np.array([0, 1024, 8192])[None, :]
    for model in _CH1_DENSE + _CH1_MOE:
        for chip in _CH1_CHIPS:
            n = _min_chips(model, chip)
            f = serving.latency_floor_s(model, chip, n_chips=n, check_capacity=False)
            t = serving.decode_step_time_s(model, chip, B, L, n_chips=n, check_capacity=False)
            if models.get(model).is_moe:
                rows[f"{model}: step(B=1, L=0) / floor"] = f"{t[0, 0] / f:.3f} (any chip)"
            else:
                _require(bool(np.all(t >= f * (1 - 1e-12))), 4, f"{model} on {chip}: a step beat the floor")
                # B=1 adds one looked-up embedding row (d params) to the floor
                _require(abs(t[0, 0] / f - 1) < 1e-5, 4, f"{model} on {chip}: B=1 step != floor")
    ds = models.get("deepseek-v3")
    frac = ds.expected_params_read(1) / ds.weights_read_params
    full = ds.expected_params_read(4096) / ds.weights_read_params
    _require(frac < 0.1 and full > 0.99, 4, f"DeepSeek-V3 reads {frac:.3f} of its weights at B=1, {full:.3f} at B=4096")
    return Verdict(4, "holds if",
                   "holds for dense models at every batch and for a mixture of experts once the batch touches "
                   f"every expert (B >> E/k); an unbatched DeepSeek-V3 token reads only {frac:.1%} of the weights, "
                   "so its floor at batch 1 is ~18x lower than 'read all parameters'",
                   {"Llama-3.1-70B on 8 x H100, floor": f"{floor * 1e3:.2f} ms (hand: {hand * 1e3:.2f} ms)",
                    "DeepSeek-V3 weights read at B=1 / B=4096": f"{frac:.3f} / {full:.4f}", **rows})


@_registers(8)
def _check_8() -> Verdict:
    B = np.unique(np.round(np.logspace(0, 4, 200)))
    worst_hyperbola, floors = 0.0, {}
    for model in _CH1_DENSE:
        m = models.get(model)
        for chip in _CH1_CHIPS:
            c = hardware.get(chip)
            n = _min_chips(model, chip)
            cost = serving.decode_cost_per_token(model, chip, B, 0, n_chips=n, check_capacity=False)
            bstar = serving.balance_batch(model, chip, 0)
            _require(bool(np.all(np.diff(cost) <= 1e-15)), 8, f"{model}/{chip}: cost per token rises with batch")
            # Hand forms: below B*, cost = n * P_read b_w / (n W) / B (a hyperbola); above, 2 N_mm / F.
            below = B < bstar
            rows = 0 if m.tied_embeddings else B[below] * m.d_model  # looked-up embedding rows
            hyper = (m.weights_read_params + rows) * 2 / c.hbm_bytes_per_s / B[below]
            worst_hyperbola = max(worst_hyperbola, float(np.max(np.abs(cost[below] / hyper - 1))))
            floor = 2 * m.matmul_params_per_token / c.flops_per_s("bf16")
            _require(np.allclose(cost[~below], floor, rtol=1e-9), 8, f"{model}/{chip}: cost above B* is not 2N/F")
            floors[(model, chip)] = cost[0] / floor
    _require(worst_hyperbola < 1e-9, 8, f"below the balance batch cost deviates from 1/B by {worst_hyperbola:.2e}")
    r = np.array(list(floors.values()))
    return Verdict(8, "holds",
                   "below the balance batch the cost per token is the weight-read time divided by B, a "
                   "hyperbola; it is large but finite at B=1 -- R times the compute floor 2N/F that it "
                   "reaches at the balance batch",
                   {"cost(B=1) / floor, dense models": f"{r.min():.0f}x .. {r.max():.0f}x",
                    "largest deviation from 1/B below B*": f"{worst_hyperbola:.1e}"})


# ---------------------------------------------------------------------------
# Chapter 5: experts on a rack
# ---------------------------------------------------------------------------

def moe_layer_all_to_all_s(model, system, ep: int, batch_per_rack, racks: int = 1, dispatch_bytes=1.0,
                           combine_bytes=2.0):
    """Dispatch + combine time of one MoE layer, ``batch_per_rack`` sequences on each rack's ``ep`` GPUs.

    Each GPU sends its ``batch_per_rack / ep`` tokens' traffic
    (:func:`llmmath.network.moe_all_to_all_bytes_per_token`), so the load per GPU
    is the same however many racks the layer spans; spanning ``racks`` equal
    racks, a fraction ``1 - 1/racks`` of it leaves the rack over the scale-out
    NICs (:func:`llmmath.network.all_to_all_time_s`).
    """
    m, s_ = models.get(model), hardware.system(system)
    n = ep * racks
    per_gpu = batch_per_rack / ep * network.moe_all_to_all_bytes_per_token(m.d_model, m.experts_per_token, n,
                                                                  dispatch_bytes, combine_bytes)
    buffer = per_gpu * n / (n - 1)  # all_to_all_time_s takes the whole send buffer, 1/n of which stays local
    f = 1.0 - 1.0 / racks
    return network.all_to_all_time_s(buffer, n, s_.scale_up_bytes_per_s_per_package,
                                     fraction_out_of_domain=f,
                                     scale_out_bytes_per_s=s_.scale_out_bytes_per_s_per_package if f else None)


@_registers(16)
def _check_16() -> Verdict:
    ds = models.get("deepseek-v3")
    B, L = 4096, 4096
    rows, slow = {}, {}
    for key in ("gb200-nvl72", "gb300-nvl72"):
        sy = hardware.system(key)
        # GB300's per-GPU HBM bandwidth is GB200's 8 TB/s (systems.toml), so one chip entry serves both
        step = serving.decode_step(ds, "gb200", B, L, n_chips=64, weight_dtype="fp8", check_capacity=False)
        layer_s = step.time_s / ds.n_layers
        one = moe_layer_all_to_all_s(ds, sy, 64, B, racks=1)
        two = moe_layer_all_to_all_s(ds, sy, 64, B, racks=2)
        # hand form of the slowdown: half the traffic at beta_out against all of it at beta_up
        # (the (n-1)/n factors of 64 and 128 GPUs differ by 1%)
        hand = 0.5 * sy.scale_up_over_scale_out
        _require(abs(two / one / hand - 1) < 0.02, 16, f"{key}: 2-rack slowdown {two / one:.2f} vs hand {hand:.2f}")
        _require(one < 0.25 * layer_s and two > 0.75 * layer_s, 16,
                 f"{key}: all-to-all {one * 1e6:.0f}/{two * 1e6:.0f} us vs layer {layer_s * 1e6:.0f} us")
        slow[key] = two / one
        rows[f"{key}: per-layer decode floor / all-to-all in 1 rack / in 2 racks"] = (
            f"{layer_s * 1e6:.0f} us / {one * 1e6:.0f} us / {two * 1e6:.0f} us")
    h800 = parallelism.deployments()["deepseek-v3-report-decode"]
    ratio_h800 = h800["scale_up_bytes_per_s"] / h800["scale_out_bytes_per_s"]
    rows["DeepSeek's own decode (H800): EP / GPUs / NVLink:IB ratio"] = (
        f"EP{h800['expert_parallel']} over {h800['nodes']} nodes of 8; ratio {ratio_h800:.1f}, "
        f"so leaving the node costs only {0.5 * ratio_h800:.1f}x (2 domains) .. {ratio_h800 * (1 - 8 / 320):.1f}x (40)")
    _require(h800["expert_parallel"] > h800["gpus_per_node"], 16, "DeepSeek's decode EP no longer spans nodes")
    return Verdict(16, "holds if",
                   "holds as a cost cliff, not a wall: on an NVL72, DeepSeek-V3's all-to-all fits under each "
                   "layer's decode time inside one rack (a fifth of it) but takes 4.5-9x longer, as long as the "
                   "layer itself or longer, once the layer spans two racks at the same load per GPU; practice does cross domains (DeepSeek's EP320 over InfiniBand) where "
                   "the scale-up/scale-out ratio is small and communication is overlapped",
                   {**rows, "2-rack slowdown, GB200 (CX-7) / GB300 (CX-8)":
                    f"{slow['gb200-nvl72']:.1f}x / {slow['gb300-nvl72']:.1f}x",
                    "batch, context, EP, weights": "4096 sequences, 4096 tokens, 64 GPUs per rack, fp8"})


@_registers(17)
def _check_17() -> Verdict:
    gpu = {k: s.scale_up_over_scale_out for k, s in hardware.systems().items()
           if s.vendor in ("NVIDIA", "AMD") and np.isfinite(s.scale_up_over_scale_out)}
    tpu = {k: s.scale_up_over_scale_out for k, s in hardware.systems().items()
           if s.vendor == "Google" and np.isfinite(s.scale_up_over_scale_out)}
    # Hand anchors: HGX H100 450 GB/s NVLink per direction / 50 GB/s (400 Gb/s NIC) = 9;
    # GB200 NVL72 900 / 50 = 18 (ConnectX-7); GB300 NVL72 900 / 100 = 9 (ConnectX-8).
    for key, want in (("hgx-h100", 450 / 50), ("gb200-nvl72", 900 / 50), ("gb300-nvl72", 900 / 100)):
        _require(abs(gpu[key] / want - 1) < 1e-9, 17, f"{key}: {gpu[key]:.2f} vs datasheet {want:.2f}")
    v = np.array(list(gpu.values()))
    med = float(np.median(v))
    _require(6 <= med <= 12 and v.min() >= 3 and v.max() <= 20, 17,
             f"GPU systems' scale-up/scale-out ratio now median {med:.1f}, range {v.min():.1f}..{v.max():.1f}")
    h800 = parallelism.deployments()["deepseek-v3-report-decode"]
    return Verdict(17, "holds",
                   f"for GPU systems the per-GPU ratio is {v.min():.0f}-{v.max():.0f}x (median {med:.0f}x): ~9x when "
                   "each GPU gets a NIC of its generation, 18x on GB200 racks wired with 400 Gb/s NICs; TPU pods "
                   "(ICI vs data-center network) sit far higher, and export-limited H800s far lower",
                   {"by system": ", ".join(f"{k} {r:.1f}" for k, r in gpu.items()),
                    "TPU pods": ", ".join(f"{k} {r:.0f}" for k, r in tpu.items()),
                    "H800 (DeepSeek-V3 report)": f"{h800['scale_up_bytes_per_s'] / h800['scale_out_bytes_per_s']:.1f}"})


@_registers(18)
def _check_18() -> Verdict:
    a, b = hardware.system("gb200-nvl72"), hardware.system("rubin-ultra-nvl576")
    pk, die, bw, cap = (b.packages / a.packages, b.dies / a.dies, b.hbm_bytes_per_s / a.hbm_bytes_per_s,
                        b.hbm_bytes / a.hbm_bytes)
    name = b.marketing_count / a.marketing_count
    _require(pk == 2 and die == 4 and name == 8, 18, f"counts changed: packages {pk}, dies {die}, name {name}")
    _require(bw >= 4, 18, f"aggregate HBM bandwidth grows only {bw:.1f}x")
    return Verdict(18, "holds if",
                   "holds if 'genuine' means compute dies or memory: NVL72 -> NVL576 is 8x by the name, but 2x in "
                   "packages, 4x in dies and 8x in aggregate HBM bandwidth (roadmap figures); the package count, "
                   "which is what the cabling constrains, only doubles",
                   {"NVL72 -> Rubin Ultra NVL576": f"name {name:.0f}x, packages {pk:.0f}x, dies {die:.0f}x, "
                    f"HBM bandwidth {bw:.0f}x, HBM capacity {cap:.1f}x",
                    "caveat": "Rubin Ultra figures are 2025 roadmap numbers (see systems.toml 'unverified')"})


@_registers(19)
def _check_19() -> Verdict:
    h, g = hardware.system("hgx-h100"), hardware.system("gb200-nvl72")
    rows = {}
    for n_tot in (1e12, 2e12, 5e12):
        w = n_tot * 1.0  # fp8 bytes
        rows[f"{n_tot / 1e12:.0f}T params, fp8"] = (
            f"fits HGX H100: {w <= h.hbm_bytes}, NVL72: {w <= g.hbm_bytes}; weight-read floor "
            f"{w / h.hbm_bytes_per_s * 1e3:.0f} ms on HGX H100 bandwidth vs {w / g.hbm_bytes_per_s * 1e3:.1f} ms on NVL72")
    # The bound that survives pipelining: total params readable in a 20 ms step at fp8.
    cap_h, cap_g = 0.02 * h.hbm_bytes_per_s / 1.0, 0.02 * g.hbm_bytes_per_s / 1.0
    _require(cap_g / cap_h > 20 and g.hbm_bytes / h.hbm_bytes > 20, 19, "NVL72 no longer ~20x an HGX H100")
    # Active params are priced by compute: chip-seconds per token = 2 N_act / F at saturation.
    ds, k2 = models.get("deepseek-v3"), models.get("kimi-k2")
    return Verdict(19, "holds if",
                   "holds if 'limited by scale-up size' is read as limited by the domain's aggregate bandwidth "
                   "(latency), as the speaker later refines: pipelining removes the capacity limit, but a step must "
                   f"still read every weight, so at 20 ms per step an HGX H100 serves at most {cap_h / 1e12:.2f}T "
                   f"fp8 parameters and an NVL72 {cap_g / 1e12:.1f}T; active parameters set compute cost per token",
                   {**rows, "HBM: HGX H100 / NVL72": f"{h.hbm_bytes / 1e12:.2f} TB / {g.hbm_bytes / 1e12:.1f} TB",
                    "largest published MoEs (total / active)": f"Kimi K2 {k2.total_params / 1e12:.2f}T / "
                    f"{k2.active_params / 1e9:.0f}B, DeepSeek-V3 {ds.total_params / 1e12:.2f}T / {ds.active_params / 1e9:.0f}B"})


@_registers(27)
def _check_27() -> Verdict:
    h, g = hardware.system("hgx-h100"), hardware.system("gb200-nvl72")
    domain, per_gpu, total = g.packages / h.packages, g.hbm_bytes_per_s_per_package / h.hbm_bytes_per_s_per_package, \
        g.hbm_bytes_per_s / h.hbm_bytes_per_s
    # Hand: 72 x 8 TB/s = 576 TB/s against 8 x 3.35 TB/s = 26.8 TB/s.
    _require(abs(total - 576 / 26.8) < 1e-9, 27, f"aggregate growth {total:.2f} vs hand 21.5")
    _require(domain > per_gpu, 27, "per-GPU bandwidth outgrew the domain")
    return Verdict(27, "holds",
                   f"the domain grew {domain:.0f}x (8 -> 72 GPUs; the speaker's 'about 8x') while per-GPU HBM "
                   f"bandwidth grew {per_gpu:.1f}x (3.35 -> 8 TB/s), so the bandwidth one model can stream grew "
                   f"{total:.1f}x, cutting the weight-read latency floor by the same factor",
                   {"HGX H100 -> GB200 NVL72": f"domain {domain:.0f}x x per-GPU {per_gpu:.2f}x = {total:.1f}x "
                    f"({h.hbm_bytes_per_s / 1e12:.1f} -> {g.hbm_bytes_per_s / 1e12:.0f} TB/s)"})


# ---------------------------------------------------------------------------
# Chapter 6: pipelining
# ---------------------------------------------------------------------------

@_registers(20)
def _check_20() -> Verdict:
    rows = {}
    need = {}
    for key in ("hgx-h100", "gb200-nvl72", "gb300-nvl72"):
        sy = hardware.system(key)
        up, out = sy.scale_up_bytes_per_s_per_package, sy.scale_out_bytes_per_s_per_package
        r = parallelism.boundary_traffic_ratio("deepseek-v3", np.arange(1, 9), 64, up, out)
        # hand: 2 k layers beta_out / beta_up x (dispatch+combine bytes)/(2 x activation bytes) x 63/64
        hand = 8 * 3 * 63 / 64 * np.arange(1, 9) * out / up / 2
        _require(np.allclose(r, hand), 20, f"{key}: ratio {r[0]:.3f} vs hand {hand[0]:.3f}")
        need[key] = int(np.argmax(r >= 1)) + 1
        rows[f"{key} (scale-up/out {up / out:.0f}x)"] = f"ratio at 1 layer/stage {r[0]:.2f}; >= 1 from {need[key]} layers"
    _require(max(need.values()) <= 4, 20, f"a stage now needs {max(need.values())} layers to hide its boundary")
    return Verdict(20, "holds",
                   "per token, a stage boundary carries one activation while every MoE layer inside the stage "
                   "moves it to k experts and back; with DeepSeek-V3's k = 8 the in-rack traffic exceeds the "
                   "boundary's (scaled by the ~9-18x bandwidth gap) with 1-2 layers per stage",
                   rows)


@_registers(21)
def _check_21() -> Verdict:
    one = serving.decode_step("deepseek-v3", "gb200", 2048, 8192, n_chips=64, weight_dtype="fp8", check_capacity=False)
    for P in (2, 4, 8):
        d = parallelism.pipelined_decode("deepseek-v3", "gb200", 64, P, 2048, 8192, weight_dtype="fp8")
        _require(abs(d.stage_s * P / one.time_s - 1) < 1e-12, 21, "stages do not add up to the whole")
        _require(abs(d.chip_s_per_token / one.cost_chip_s_per_token - 1) < 1e-12, 21, "cost per token changed")
    return Verdict(21, "holds",
                   "splitting the layers over P stages gives each stage 1/P of the FLOPs, weight bytes and KV bytes; "
                   "summed over stages the work per token is unchanged, so chip-seconds per token are identical",
                   {"DeepSeek-V3 fp8, 64 GB200 per stage, B=2048, L=8192": f"step {one.time_s * 1e3:.2f} ms = "
                    f"P x stage time for P = 1, 2, 4, 8"})


@_registers(22)
def _check_22() -> Verdict:
    rows = {}
    for P in (1, 2, 4):
        m = parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=P, batch=64, context=32768, weight_dtype="fp8")
        rows[f"P={P}: weights / KV per GPU"] = f"{m.weight_bytes / 1e9:.1f} GB / {m.kv_bytes / 1e9:.1f} GB"
    w = [parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=P, weight_dtype="fp8").weight_bytes for P in (1, 2, 4)]
    _require(abs(w[0] / w[1] - 2) < 1e-9 and abs(w[0] / w[2] - 4) < 1e-9, 22, "weights per GPU do not fall as 1/P")
    return Verdict(22, "holds if",
                   "holds for the weights (per-GPU weight bytes fall as 1/P) but not for the KV cache, which stays "
                   "constant (claim 25); note that with wide EP the replicated non-expert weights (17 GB at fp8 for "
                   "DeepSeek-V3) outweigh each GPU's share of the experts",
                   rows)


@_registers(24)
def _check_24() -> Verdict:
    lat = parallelism.hop_latencies()
    hop = lat["deepseek-ib-cross-leaf-64B"]["seconds"]
    one = serving.decode_step("deepseek-v3", "gb200", 2048, 8192, n_chips=64, weight_dtype="fp8", check_capacity=False)
    rows = {}
    for P in (2, 4, 8):
        d = parallelism.pipelined_decode("deepseek-v3", "gb200", 64, P, 2048, 8192, hop_latency_s=hop, weight_dtype="fp8")
        extra = d.token_latency_s / one.time_s - 1
        _require(extra < 0.05, 24, f"P={P}: hops add {extra:.1%} to the step")
        rows[f"P={P}"] = f"latency {d.token_latency_s * 1e3:.3f} ms vs {one.time_s * 1e3:.3f} ms unpipelined (+{extra:.2%})"
    # The speaker's guess of a few ms per hop would instead dominate:
    guess = parallelism.pipelined_decode("deepseek-v3", "gb200", 64, 4, 2048, 8192, hop_latency_s=3e-3, weight_dtype="fp8")
    return Verdict(24, "holds",
                   f"forward-only pipelining with P micro-batches has no bubble, so per-token latency is the "
                   f"unpipelined step plus P network hops; measured hops are microseconds ({hop * 1e6:.1f} us across "
                   f"InfiniBand leaves), not the 'few ms' guessed, so the added latency is well under 1%",
                   {**rows, "if a hop took 3 ms (the guess), P=4": f"{guess.token_latency_s * 1e3:.1f} ms",
                    "hop source": lat["deepseek-ib-cross-leaf-64B"].get("source", "")[:90]})


@_registers(25)
def _check_25() -> Verdict:
    b, L = 64, 65536
    kv = [parallelism.memory_per_gpu("deepseek-v3", ep=64, pp=P, batch=b, context=L, weight_dtype="fp8").kv_bytes
          for P in (1, 2, 4, 8)]
    hand = b * L * 61 * (512 + 64) * 2 / 64  # b L beta / E, with MLA beta = 61 x 576 x 2 bytes
    _require(np.allclose(kv, hand), 25, f"KV per GPU {kv} vs hand {hand}")
    kv70 = [parallelism.memory_per_gpu("llama-3.1-70b", tp=8, pp=P, batch=16, context=L).kv_bytes for P in (1, 2, 4)]
    _require(np.allclose(kv70, kv70[0]), 25, "dense GQA: KV per GPU depends on P")
    return Verdict(25, "holds",
                   "with P stages, P micro-batches must be in flight; each stage stores 1/P of the layers for P times "
                   "the sequences, so KV bytes per GPU = b L beta / E, independent of P (shown for MLA and GQA)",
                   {"DeepSeek-V3, b=64, L=65536, EP64": f"KV per GPU {hand / 1e9:.1f} GB for P = 1, 2, 4, 8",
                    "Llama-3.1-70B, TP8, b=16, L=65536": f"{kv70[0] / 1e9:.1f} GB for P = 1, 2, 4"})


@_registers(26)
def _check_26() -> Verdict:
    deps = parallelism.deployments()
    pps = {k: d["pipeline_parallel"] for k, d in deps.items()}
    _require(all(p == 1 for p in pps.values()), 26, f"a published layout now pipelines: {pps}")
    # The scale-up domain each layout ran on: NVLink inside an 8-GPU H800/H100 node, a whole NVL72 rack for GB200.
    domain = {k: (72 if "GB200" in d["gpu"] else d["gpus_per_node"]) for k, d in deps.items()}
    beyond = {k: d["expert_parallel"] / domain[k] for k, d in deps.items()}
    ds = models.get("deepseek-v3")
    nvl = hardware.system("gb200-nvl72")
    B, L = 4096, 16384  # sequences on the rack, tokens of context each
    m = parallelism.memory_per_gpu(ds, ep=64, pp=1, batch=B, context=L, weight_dtype="fp8")
    _require(m.total_bytes <= nvl.hbm_bytes_per_package, 26,
             "DeepSeek-V3 at fp8 with 4096 x 16k-token sequences no longer fits one NVL72 without pipelining")
    _require(all(r <= 1 for k, r in beyond.items() if domain[k] == 72), 26, "an NVL72 layout now exceeds its rack")
    return Verdict(26, "holds if",
                   "little pipelining: every published large-MoE layout uses PP = 1; 'EP up to the scale-up domain' "
                   "is what NVL72 layouts do, but on 8-GPU boxes operators push EP 4-40x past the NVLink domain over "
                   "InfiniBand (DeepSeek EP32-320, SGLang EP72) to give each expert a large enough batch",
                   {"pipeline degrees": ", ".join(f"{k} {p}" for k, p in pps.items()),
                    "EP / scale-up domain": ", ".join(f"{k} {r:.2g}x" for k, r in beyond.items()),
                    "DeepSeek-V3 on one NVL72 (EP64, fp8, 4096 sequences x 16k tokens)":
                    f"{m.weight_bytes / 1e9:.0f} GB weights + {m.kv_bytes / 1e9:.0f} GB KV per GPU "
                    f"of {nvl.hbm_bytes_per_package / 1e9:.0f} GB"})


# ---------------------------------------------------------------------------
# Chapter 9: ciphers, adversarial examples, reversible networks
# ---------------------------------------------------------------------------

@_registers(38)
def _check_38() -> Verdict:
    m = adversarial.trained_digits_mlp()
    _, _, X, y = adversarial.digits_split()
    clean = float((m.predict(X) == y).mean())
    _require(clean > 0.95, 38, f"the reference classifier only reaches {clean:.1%}")
    ok = m.predict(X) == y
    adv = adversarial.min_flip_eps(m, X[ok], y[ok])
    rnd = adversarial.min_flip_eps(m, X[ok], y[ok], direction="random")
    med_adv = float(np.median(adv))
    med_rnd = float(np.median(rnd))  # inf counts as "larger": the median is then inf or finite
    step = 1 / 16  # the digits' own pixel resolution: 17 grey levels, 0..16
    _require(med_adv < 2 * step, 38, f"median flipping perturbation {med_adv:.3f} exceeds two grey levels")
    _require(med_rnd > 3 * med_adv, 38, f"random sign noise flips as easily ({med_rnd:.3f} vs {med_adv:.3f})")
    feistel = ciphers.avalanche_feistel(8)
    sha = ciphers.avalanche_sha256(300)
    _require(abs(feistel.mean() / 64 - 0.5) < 0.02 and abs(sha.mean() / 256 - 0.5) < 0.02, 38,
             f"avalanche off half: Feistel {feistel.mean():.1f}/64, SHA-256 {sha.mean():.1f}/256")
    one_pixel = float((m.predict(np.clip(X + step * np.eye(64)[np.random.default_rng(0).integers(0, 64, len(y))], 0, 1))
                       != m.predict(X)).mean())
    return Verdict(38, "holds",
                   f"a perturbation of {med_adv:.3f} of the pixel range per pixel (median; about "
                   f"{med_adv / step:.1f} grey levels) flips a {clean:.0%}-accurate digit classifier along the "
                   f"gradient sign, while random signs of the same size mostly do not; a cipher is built so that "
                   f"every single-bit change flips half the output, a classifier so that almost none does -- "
                   f"adversarial directions are the exception, found by search",
                   {"clean test accuracy": f"{clean:.1%}",
                    "smallest flipping L-inf perturbation, median: gradient sign / random sign":
                    f"{med_adv:.3f} / {med_rnd:.3f}",
                    "predictions changed by one pixel raised one grey level": f"{one_pixel:.1%}",
                    "avalanche, one input bit flipped: 8-round Feistel / SHA-256":
                    f"{feistel.mean():.1f} of 64 / {sha.mean():.1f} of 256 output bits"})


@_registers(39)
def _check_39() -> Verdict:
    import tracemalloc

    X, y = adversarial.load_digits()
    xb, yb = X[:512], y[:512]
    net = reversible.init_revnet(64, 8, seed=1)
    _, g_store = reversible.loss_and_grads(net, xb, yb, "store")
    _, g_rec = reversible.loss_and_grads(net, xb, yb, "recompute")
    err = max(float(np.max(np.abs(a - b))) for a, b in zip(g_store, g_rec))
    _require(err < 1e-10, 39, f"recomputed gradients differ from stored ones by {err:.1e}")
    peaks = {}
    for mode in ("store", "recompute"):
        for depth in (8, 32):
            n = reversible.init_revnet(64, depth, seed=1)
            tracemalloc.start()
            reversible.loss_and_grads(n, xb, yb, mode)
            peaks[(mode, depth)] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    grow_store = peaks[("store", 32)] / peaks[("store", 8)]
    grow_rec = peaks[("recompute", 32)] / peaks[("recompute", 8)]
    _require(grow_store > 2 and grow_rec < 1.2, 39,
             f"peak memory 8 -> 32 blocks grows {grow_store:.2f}x stored, {grow_rec:.2f}x recomputed")
    e32 = reversible.reconstruction_error(reversible.init_revnet(64, 32, gain=1.5, dtype=np.float32),
                                          X[:256].astype(np.float32))
    return Verdict(39, "holds",
                   "a Feistel-style coupling block is exactly invertible in exact arithmetic, so the backward pass "
                   "can rebuild each block's input from its output: gradients match stored-activation backprop, "
                   "and peak memory stops growing with depth -- at the price of one extra forward pass and a "
                   "reconstruction drift that grows with depth in low precision",
                   {"max gradient difference, recomputed vs stored (float64)": f"{err:.1e}",
                    "peak memory 8 -> 32 blocks, stored / recomputed": f"{grow_store:.2f}x / {grow_rec:.2f}x",
                    "reconstruction error after 32 blocks, float32 (gain 1.5)": f"{e32:.1e}"})


@_registers(40)
def _check_40() -> Verdict:
    ratios = {}
    for model in ("llama-3.1-8b", "llama-3.1-70b", "deepseek-v3"):
        for chip in ("h100-sxm", "b200", "tpu-v5e"):
            read, rec = memory.kv_read_vs_recompute_s(model, chip, context=4096)
            ratios[(model, chip)] = rec / read
    # Hand anchor: Llama-3.1-70B on an H100, 4096 tokens of context:
    # recompute 2 x 69.5e9 + 80 x 4 x 64 x 128 x 4096 FLOPs over 989.5e12; read 327,680 bytes over 3.35e12 B/s.
    n_mm = 70_553_706_496 - 128_256 * 8_192
    hand = ((2 * n_mm + 80 * 4 * 64 * 128 * 4096) / 989.5e12) / (327_680 / 3.35e12)
    _require(abs(ratios[("llama-3.1-70b", "h100-sxm")] / hand - 1) < 1e-9, 40, "KV read/recompute ratio changed")
    lo = min(ratios.values())
    _require(lo > 100, 40, f"reading a cached token is now only {lo:.0f}x cheaper than recomputing it")
    # The other direction: training activations, where capacity binds (GPT-3 175B layer, s=2048, b=1, TP8 + SP).
    args = (2048, 1, 12288, 96, 8, True)
    keep = memory.activation_bytes_per_layer(*args)
    sel = memory.activation_bytes_per_layer(*args, recompute="selective")
    full = memory.activation_bytes_per_layer(*args, recompute="full")
    return Verdict(40, "holds if",
                   f"holds when the memory is read back soon enough: a cached token's K,V cost {lo:.0f}-"
                   f"{max(ratios.values()):.0f}x less to read than to recompute; but where capacity binds -- "
                   f"training activations -- the profitable trade runs the other way (selective recomputation "
                   f"keeps {sel / keep:.0%} of a GPT-3 layer's activations for a few percent more FLOPs)",
                   {"KV: recompute / read time, per token (L=4096)":
                    ", ".join(f"{m} on {c} {r:.0f}x" for (m, c), r in ratios.items()),
                    "GPT-3 175B layer, s=2048, TP8+SP: none / selective / full recompute":
                    f"{keep / 1e6:.0f} / {sel / 1e6:.0f} / {full / 1e6:.1f} MB per GPU"})
