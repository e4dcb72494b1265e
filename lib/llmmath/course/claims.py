"""The claims ledger: the interview's 40 claims, each with its chapter and check.

Data (timestamp, paraphrase, the speaker's reasoning and numbers) lives in
``data/claims.toml``; the check functions live in :mod:`llmmath.course.checks`, one
module per chapter, registered with :func:`register`. A check recomputes the
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

from .. import _catalog

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
    explorer: str = ""  # the name of its explorer in llmmath.course.explorers ("" while it has none)

    @property
    def status(self) -> str:
        """``'checked'`` when a check function exists, else ``'pending'``."""
        return "checked" if self.id in _checks() else "pending"


@dataclasses.dataclass(frozen=True)
class Verdict:
    """Outcome of a claim's check: a verdict word, one sentence, and the evidence."""

    claim_id: int
    verdict: str
    summary: str
    evidence: dict

    def __str__(self) -> str:
        import textwrap

        c = get(self.claim_id)
        lines = textwrap.wrap(f"Claim {c.id} ({c.timestamp}) -- {self.verdict.upper()}: {self.summary}", 100)
        for k, v in self.evidence.items():
            lines += textwrap.wrap(f"{k}: {v}", 100, initial_indent="    ", subsequent_indent="        ")
        return "\n".join(lines)


@lru_cache(maxsize=None)
def all_claims() -> tuple[Claim, ...]:
    """The 40 claims in the source's order."""
    rows = _catalog.load("claims.toml")["claims"]
    out = tuple(
        Claim(r["id"], r["timestamp"], r["topic"], r["chapter"], r["claim"], r["reasoning"],
              tuple(r.get("numbers", ())), r.get("checks", ""), r.get("explorer", ""))
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


def _checks() -> dict[int, Callable[[], Verdict]]:
    """The registered checks, after importing every module of :mod:`llmmath.course.checks` once."""
    if not _checks.loaded:
        import importlib
        import pkgutil

        from . import checks

        for mod in pkgutil.iter_modules(checks.__path__):
            importlib.import_module(f"{checks.__name__}.{mod.name}")
        _checks.loaded = True
    return _CHECKS


_checks.loaded = False


def register(claim_id: int):
    """Decorator: record ``fn`` as the check of claim ``claim_id`` (used by :mod:`llmmath.course.checks`)."""
    def deco(fn):
        _CHECKS[claim_id] = fn
        return fn
    return deco


def require(condition: bool, claim_id: int, message: str) -> None:
    """Raise :class:`ClaimCheckFailed` with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ClaimCheckFailed(f"claim {claim_id}: {message}")


def check(claim_id: int, quiet: bool = False) -> Verdict:
    """Run claim ``claim_id``'s check, print its verdict, and return it.

    Raises:
        KeyError: no such claim.
        ClaimCheckFailed: the numbers no longer support the recorded verdict.
    """
    c = get(claim_id)
    fn = _checks().get(c.id)
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
