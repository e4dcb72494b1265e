"""Size a deployment: which chips, how many, placed how, to serve a model to ``users`` concurrent users at a time per
output token (and, if asked, a time to first token), cheapest first.

The question a capacity planner asks ("Llama-3.1-70B for 500 users at 30 ms a token: how many of which GPU?") is
answered in three steps, every one through the course's one step model:

1. **One replica.** For each chip and each placement of one replica (tensor parallelism inside the chip's scale-up
   domain; for a mixture of experts also expert parallelism with data-parallel attention; pipeline stages when the
   weights need more than one domain), :func:`llmmath.predict.predict` finds the largest batch whose predicted time
   per output token meets the target, with the prefill of arriving requests sharing the steps (``phase="aggregated"``:
   the users keep sending). That batch is how many users one replica serves; the KV cache that fits caps it.
2. **Replicas.** ``ceil(users / batch)`` replicas; chips = replicas x chips per replica; the price is chips x the
   chip's rental price (``data/chip_prices.toml``, public on-demand list prices with their sources, or a price you
   give). A placement whose idle time to first token already exceeds the target is refused.
3. **The engine.** The cheapest candidate is run in the engine simulator (:func:`llmmath.engine.at_concurrency`:
   ``users`` clients, each sending its next request when its last one ends); if the simulated inter-token latency
   or time to first token misses a target, a replica is added until both hold (at most eight times).

Every figure is a prediction of the expected measured rate (``predict``'s terms: matmul and HBM shares, kernel
launches, collectives), not a ceiling; its spread on published rows is chapter 12's.
"""

from __future__ import annotations

import dataclasses
import math
import re

from . import _catalog, hardware, models
from ._validate import positive, positive_int, scalar

__all__ = ["Candidate", "Sizing", "size", "chip_prices", "placements"]

#: the most engine re-runs (one more replica each) when the simulated engine misses a target
MAX_ENGINE_STEPS = 8


def chip_prices() -> dict:
    """``data/chip_prices.toml``'s ``[prices]``: per chip, ``usd_per_chip_hour`` and its source (on-demand list
    prices; reserved, spot and negotiated prices are lower)."""
    return dict(_catalog.load("chip_prices.toml")["prices"])


@dataclasses.dataclass(frozen=True)
class Candidate:
    """One way to meet the targets on one chip (SI units: seconds, tokens/s, USD).

    ``batch_per_replica``: the users one replica serves within the time per output token; ``binds``: what caps that
    batch (``"time per output token"`` or ``"KV cache capacity"``); ``usd_per_chip_hour`` None when no price is known.
    """

    chip: str
    tp: int
    ep: int
    dp: int
    pp: int
    chips_per_replica: int
    replicas: int
    batch_per_replica: float
    tpot_s: float
    ttft_s: float
    tokens_per_s_per_chip: float
    binds: str
    usd_per_chip_hour: float | None
    price_source: str

    @property
    def n_chips(self) -> int:
        return self.replicas * self.chips_per_replica

    @property
    def placement(self) -> str:
        parts = [f"TP{self.tp}"] + ([f"EP{self.ep}"] if self.ep > 1 else []) + (
            [f"DP{self.dp}"] if self.dp > 1 else []) + ([f"PP{self.pp}"] if self.pp > 1 else [])
        return " ".join(parts)

    @property
    def usd_per_hour(self) -> float | None:
        return None if self.usd_per_chip_hour is None else self.n_chips * self.usd_per_chip_hour

    def usd_per_million_tokens(self, users: int) -> float | None:
        """Dollars per million output tokens with ``users`` streaming at the predicted time per token."""
        if self.usd_per_hour is None:
            return None
        return self.usd_per_hour / 3600.0 / (users / self.tpot_s) * 1e6

    def deployment_kwargs(self) -> dict:
        return dict(tp=self.tp, ep=self.ep, dp=self.dp, pp=self.pp)


@dataclasses.dataclass(frozen=True)
class Sizing:
    """The answer of :func:`size`: ``ranked`` (every chip's cheapest way, cheapest first), ``best`` (the first, after
    the engine check; None when no chip can meet the targets), ``refused`` (chip: why nothing on it meets them),
    ``load`` (the engine's simulated closed-loop run of ``users`` clients on ``best``: mean TTFT, inter-token
    latency, output tokens/s), ``engine_replicas_added``."""

    model: str
    users: int
    tpot_target_s: float
    ttft_target_s: float | None
    input_tokens: int
    output_tokens: int
    weight_dtype: str
    kv_dtype: str
    ranked: list
    refused: dict
    best: Candidate | None
    load: object | None
    engine_replicas_added: int
    engine_missed: str = ""
    engine_note: str = ""
    unpriced: tuple = ()

    def binding(self) -> str:
        """What sets the answer: the target that caps a replica's batch, or the engine that needed more replicas."""
        b = self.best
        if b is None:
            return "no chip meets the targets"
        if self.engine_replicas_added:
            return (f"the engine under load: with the one step model's {b.replicas - self.engine_replicas_added} "
                    f"replica(s) the simulated run missed {self.engine_missed}, so "
                    f"{self.engine_replicas_added} more were added")
        return b.binds

    def table(self) -> str:
        """The answer as text: the targets, the cheapest way and its price, what binds, the runners-up by chip."""
        ttft = "no target" if self.ttft_target_s is None else f"<= {self.ttft_target_s * 1e3:,.0f} ms"
        lines = [f"{self.model} for {self.users:,} concurrent user{'s' if self.users > 1 else ''}, "
                 f"{self.input_tokens:,} tokens in, {self.output_tokens:,} out; time per output token <= "
                 f"{self.tpot_target_s * 1e3:g} ms (new prompts' prefill sharing the steps), time to first token "
                 f"{ttft}; weights {self.weight_dtype}, KV {self.kv_dtype}"]
        b = self.best
        if b is None:
            lines.append("no chip meets the targets:")
            lines += [f"  {chip:<10} {why}" for chip, why in self.refused.items()]
            return "\n".join(lines)
        price = ("no price known: give --usd-per-chip-hour" if b.usd_per_hour is None else
                 f"${b.usd_per_hour:,.0f} an hour (${b.usd_per_chip_hour:,.2f} a chip-hour, {b.price_source}); "
                 f"${b.usd_per_million_tokens(self.users):,.2f} per 1M output tokens")
        lines += [f"cheapest: {b.n_chips:,} x {b.chip} = {b.replicas:,} replica(s) of {b.placement} "
                  f"({b.chips_per_replica} chip(s) each), {price}",
                  f"  predicted: {b.batch_per_replica:,.0f} user(s) a replica at {b.tpot_s * 1e3:.1f} ms a token; "
                  f"time to first token {b.ttft_s * 1e3:,.0f} ms on an idle replica",
                  f"  binds: {self.binding()}"]
        if self.load is not None:
            lines.append(f"  engine, {self.users:,} clients closed-loop on {b.n_chips:,} chips: inter-token latency "
                         f"{self.load.itl_s * 1e3:.1f} ms, time to first token {self.load.ttft_s * 1e3:,.0f} ms, "
                         f"{self.load.output_tokens_per_s:,.0f} output tokens/s")
        if self.engine_note:
            lines.append(f"  engine: not run: {self.engine_note}")
        lines.append("")
        lines.append(f"{'chip':<10} {'placement':<18} {'replicas':>8} {'chips':>6} {'users/replica':>13} "
                     f"{'TPOT ms':>8} {'idle TTFT ms':>12} {'$/hour':>9}  binds")
        for c in self.ranked:
            usd = "-" if c.usd_per_hour is None else f"{c.usd_per_hour:,.0f}"
            lines.append(f"{c.chip:<10} {c.placement:<18} {c.replicas:>8,} {c.n_chips:>6,} "
                         f"{c.batch_per_replica:>13,.0f} {c.tpot_s * 1e3:>8.1f} {c.ttft_s * 1e3:>12,.0f} {usd:>9}  "
                         f"{c.binds}")
        for chip, why in self.refused.items():
            lines.append(f"{chip:<10} cannot: {why}")
        if self.unpriced:
            lines.append(f"not tried (no price known; name them with --chip and --usd-per-chip-hour): "
                         f"{', '.join(self.unpriced)}")
        given = any(c.price_source == "the price given" for c in self.ranked)
        lines.append("Predictions of the expected measured rate (chapter 12's one step model; its spread on "
                     "published rows is about 20% at the median). Prices: "
                     + ("those given, else " if given else "")
                     + "public on-demand list prices from several providers (data/chip_prices.toml names each; "
                       "reserved and negotiated prices are lower): give --usd-per-chip-hour for yours.")
        return "\n".join(lines)

    def to_dict(self) -> dict:
        def cand(c):
            return {**dataclasses.asdict(c), "placement": c.placement, "n_chips": c.n_chips,
                    "usd_per_hour": c.usd_per_hour, "usd_per_million_tokens": c.usd_per_million_tokens(self.users)}
        return {"model": self.model, "users": self.users, "tpot_target_s": self.tpot_target_s,
                "ttft_target_s": self.ttft_target_s, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "best": None if self.best is None else cand(self.best),
                "binds": self.binding(), "ranked": [cand(c) for c in self.ranked], "refused": self.refused,
                "engine": None if self.load is None else dataclasses.asdict(self.load)}


def _powers_of_two(limit: int) -> list[int]:
    out, k = [], 1
    while k <= limit:
        out.append(k)
        k *= 2
    return out


def placements(model, chip, max_pp: int = 4) -> list[dict]:
    """The placements of one replica :func:`size` tries on ``chip``: ``[{tp, ep, dp, pp}]``.

    Tensor parallelism in powers of two up to the chip's scale-up domain (the heads must divide, which the
    deployment checks); for a mixture of experts also expert parallelism over the same chips, with the attention
    either data-parallel (``dp = ep``, DeepSeek's and SGLang's layout) or tensor-parallel (``tp = ep``); pipeline
    stages (2, 4 ...) at the domain's width, for weights that need more than one domain.
    """
    m = models.get(model)
    domain = hardware.get(chip).scale_up_domain
    out = []
    for pp in _powers_of_two(max_pp):
        widths = _powers_of_two(domain) if pp == 1 else [k for k in _powers_of_two(domain) if k >= min(domain, 8)]
        for k in widths:
            out.append(dict(tp=k, ep=1, dp=1, pp=pp))
            if m.is_moe and k > 1:
                out.append(dict(tp=1, ep=k, dp=k, pp=pp))
                out.append(dict(tp=k, ep=k, dp=1, pp=pp))
    return out


def _one_replica(model, chip, pl, *, users, tpot_s, ttft_s, input_tokens, output_tokens, weight_dtype, kv_dtype,
                 price):
    """The candidate for one placement on one chip, or the reason it cannot meet the targets."""
    from . import predict as step_model
    from .deployment import Deployment

    cpr = pl["tp"] * pl["dp"] * pl["pp"]
    kw = dict(weight_dtype=weight_dtype, kv_dtype=kv_dtype, **pl)
    try:
        p = step_model.predict(model, chip, cpr, input_tokens=input_tokens, output_tokens=output_tokens,
                               phase="aggregated", max_tpot_s=tpot_s, **kw)
    except ValueError as e:
        why = re.sub(r"max_tpot_s=([\d.,]+ ms) is below", r"the \1 target is below", str(e))
        return None, f"{_name(pl)}: {why}"
    if ttft_s is not None and p.ttft_s > ttft_s:
        return None, (f"{_name(pl)}: the first token takes {p.ttft_s * 1e3:,.0f} ms on an idle replica, over the "
                      f"{ttft_s * 1e3:,.0f} ms target")
    batch = math.floor(p.batch)
    if batch < 1:
        return None, f"{_name(pl)}: not one user fits within the targets"
    d = Deployment(model, chip, cpr, **kw)
    kv_cap = d.max_batch(input_tokens + output_tokens / 2.0)
    binds = "KV cache capacity (HBM)" if batch >= math.floor(kv_cap) else "time per output token"
    replicas = math.ceil(users / batch)
    usd, source = price
    return Candidate(chip=hardware.get(chip).key, chips_per_replica=cpr, replicas=replicas,
                     batch_per_replica=float(min(batch, math.ceil(users / replicas))), tpot_s=float(p.step_s),
                     ttft_s=float(p.ttft_s), tokens_per_s_per_chip=float(p.tokens_per_s_per_chip), binds=binds,
                     usd_per_chip_hour=usd, price_source=source, **pl), ""


def _name(pl) -> str:
    return " ".join(f"{k.upper()}{v}" for k, v in pl.items() if v > 1 or k == "tp")


def _cost_key(c: Candidate):
    return (math.inf if c.usd_per_hour is None else c.usd_per_hour, c.n_chips)


def size(model, users, *, max_tpot_s, input_tokens, output_tokens, max_ttft_s=None, chips=None,
         weight_dtype="bf16", kv_dtype="bf16", usd_per_chip_hour=None, engine_check=True) -> Sizing:
    """The cheapest deployment of ``model`` for ``users`` concurrent users within the targets (see the module).

    Args:
        model: catalog name or :class:`~llmmath.models.Model`.
        users: concurrent users (clients each streaming one request at a time), >= 1.
        max_tpot_s: the most time per output token, seconds (> 0).
        input_tokens, output_tokens: each request's prompt and output lengths (>= 1).
        max_ttft_s: the most time to first token, seconds; None for no target.
        chips: chip names to try (default: every chip with a known price, ``data/chip_prices.toml``).
        weight_dtype, kv_dtype: as :func:`llmmath.planner.plan`.
        usd_per_chip_hour: ``{chip: USD per chip-hour}`` overriding the catalog's prices (or adding one).
        engine_check: run the engine simulator on the cheapest (``False`` for the one step model alone).

    Returns:
        :class:`Sizing`.

    Raises:
        ValueError: ``users`` < 1, a target <= 0, lengths < 1, an empty chip list or a price <= 0.
        KeyError: an unknown model or chip (the message lists the valid names).
    """
    from . import engine

    m = models.get(model)
    n_users = positive_int("users", users)
    tpot = float(positive("max_tpot_s", scalar("max_tpot_s", max_tpot_s)))
    ttft = None if max_ttft_s is None else float(positive("max_ttft_s", scalar("max_ttft_s", max_ttft_s)))
    T = positive_int("input_tokens", input_tokens)
    O = positive_int("output_tokens", output_tokens)
    catalog_prices = chip_prices()
    given = {hardware.get(k).key: float(positive(f"usd_per_chip_hour[{k}]", v))
             for k, v in (usd_per_chip_hour or {}).items()}
    if chips is None:
        keys = [k for k in hardware.names() if k in catalog_prices or k in given]
        unpriced = tuple(k for k in hardware.names() if k not in keys)
        if not keys:
            raise ValueError("no chip has a known price: name the chips to try (chips=...) or give prices "
                             "(usd_per_chip_hour={chip: USD})")
    else:
        keys = [hardware.get(c).key for c in ([chips] if isinstance(chips, str) else chips)]
        unpriced = ()
        if not keys:
            raise ValueError("chips is empty: name at least one chip, e.g. ['h100-sxm']")
        stray = sorted(set(given) - set(keys))
        if stray:
            raise ValueError(f"usd_per_chip_hour prices {', '.join(stray)}, which the chips tried "
                             f"({', '.join(keys)}) do not include: add it to chips or drop its price")
    ranked, refused = [], {}
    for chip in dict.fromkeys(keys):
        if chip in given:
            price = (given[chip], "the price given")
        elif chip in catalog_prices:
            row = catalog_prices[chip]
            price = (float(row["usd_per_chip_hour"]), f"{row['source']}, {row.get('as_of', 'undated')}")
        else:
            price = (None, "no price known")
        best, reasons = None, []
        for pl in placements(m, chip):
            c, why = _one_replica(m, chip, pl, users=n_users, tpot_s=tpot, ttft_s=ttft, input_tokens=T,
                                  output_tokens=O, weight_dtype=weight_dtype, kv_dtype=kv_dtype, price=price)
            if c is None:
                reasons.append(why)
            elif best is None or _cost_key(c) < _cost_key(best) or (
                    _cost_key(c) == _cost_key(best) and c.chips_per_replica < best.chips_per_replica):
                best = c
        if best is None:
            refused[chip] = reasons[-1] if reasons else "no placement to try"   # the widest placement's reason
        else:
            ranked.append(best)
    ranked.sort(key=_cost_key)
    checked: dict = {}          # chip -> (load, replicas added, the target the step model's count missed, note)
    while engine_check and ranked and ranked[0].chip not in checked:
        top = ranked[0]
        if top.pp > 1:          # the engine simulates one-stage replicas: this answer stays the step model's
            checked[top.chip] = (None, 0, "", "the engine simulates one-stage replicas, so this pipelined answer "
                                              "is the one step model's alone")
            break
        for added in range(MAX_ENGINE_STEPS + 1):
            cand = dataclasses.replace(top, replicas=top.replicas + added)
            load = engine.at_concurrency(m, cand.chip, cand.n_chips, concurrency=n_users, input_tokens=T,
                                         output_tokens=O, weight_dtype=weight_dtype, kv_dtype=kv_dtype,
                                         **cand.deployment_kwargs())
            itl_ok, ttft_ok = load.itl_s <= tpot * 1.0001, ttft is None or load.ttft_s <= ttft
            if added == 0:
                missed = " and ".join(w for w, ok in (("the time per output token", itl_ok),
                                                      ("the time to first token", ttft_ok)) if not ok)
            if itl_ok and ttft_ok:
                break
        checked[top.chip] = (load, added, missed, "")
        ranked[0] = cand       # the engine's count replaces the step model's; another chip may now be cheaper
        ranked.sort(key=_cost_key)
    best = ranked[0] if ranked else None
    load, added, missed, note = checked.get(best.chip, (None, 0, "", "")) if best is not None else (None, 0, "", "")
    return Sizing(model=m.key, users=n_users, tpot_target_s=tpot, ttft_target_s=ttft, input_tokens=T,
                  output_tokens=O, weight_dtype=str(weight_dtype), kv_dtype=str(kv_dtype), ranked=ranked,
                  refused=refused, best=best, load=load, engine_replicas_added=added, engine_missed=missed,
                  engine_note=note, unpriced=unpriced)
