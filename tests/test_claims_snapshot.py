"""Every number a claim's check prints is pinned (issue 45): the verdicts, sentences and evidence of the catalog-based
claims equal the reviewed snapshot in tests/snapshots/claims_evidence.json. A change that moves one fails here until
the snapshot is rewritten on purpose (python tools/snapshot_claims.py) and its diff reviewed; the independent
derivations in each check and in tests/test_claims_falsifiable.py say whether the new number is right."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("snapshot_claims", ROOT / "tools" / "snapshot_claims.py")
tool = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tool)
SNAP = json.loads(tool.SNAPSHOT.read_text())


def test_the_snapshot_covers_every_catalog_based_claim():
    assert sorted(map(int, SNAP)) == [i for i in range(1, 41) if i not in tool.SKIPPED]


@pytest.mark.parametrize("cid", sorted(SNAP, key=int))
def test_a_claims_printed_numbers_are_the_reviewed_ones(cid):
    from llmmath.course import claims
    v = claims.check(int(cid), quiet=True)
    now = {"verdict": v.verdict, "summary": v.summary, "evidence": {k: str(x) for k, x in v.evidence.items()}}
    want = SNAP[cid]
    changed = [k for k in sorted(set(now["evidence"]) | set(want["evidence"]))
               if now["evidence"].get(k) != want["evidence"].get(k)]
    assert now["verdict"] == want["verdict"], f"claim {cid}'s verdict moved: {want['verdict']} -> {now['verdict']}"
    assert now["summary"] == want["summary"], (f"claim {cid}'s sentence moved; review and rerun "
                                               f"tools/snapshot_claims.py:\n- {want['summary']}\n+ {now['summary']}")
    assert not changed, (f"claim {cid}'s evidence moved in {changed}; review and rerun tools/snapshot_claims.py:\n"
                         + "\n".join(f"- {want['evidence'].get(k)}\n+ {now['evidence'].get(k)}" for k in changed))
