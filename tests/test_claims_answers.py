"""The claims ledger and the exercise checker."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from llmmath import answers, check_answer, claims

ROOT = Path(__file__).resolve().parents[1]

# The chapter of each claim, as the issues assign them (written out independently of the TOML).
CHAPTER_OF = {1: 1, 2: 1, 4: 1, 8: 1, 3: 2, 5: 2, 6: 2, 7: 2, 9: 3, 10: 3, 11: 3, 14: 3, 15: 3, 12: 4, 13: 4,
              16: 5, 17: 5, 18: 5, 19: 5, 27: 5, 20: 6, 21: 6, 22: 6, 24: 6, 25: 6, 26: 6,
              23: 7, 28: 7, 29: 7, 30: 7, 31: 7, 32: 8, 33: 8, 34: 8, 35: 8, 36: 8, 37: 8, 38: 9, 39: 9, 40: 9}


def test_ledger_has_the_40_claims_of_the_seed_in_order():
    seed = (ROOT.parent / "shared" / "seed" / "000_08ad06ea090836a4.txt")
    ledger = claims.all_claims()
    assert [c.id for c in ledger] == list(range(1, 41))
    assert {c.id: c.chapter for c in ledger} == CHAPTER_OF
    if seed.exists():  # the seed sits beside the repo in the workplace and in CI
        stamps = re.findall(r"(?:Positive|Negative|Neutral|Mixed)(\d+:\d\d(?::\d\d)?)\n", seed.read_text())
        assert stamps == [c.timestamp for c in ledger]


def test_ledger_paraphrases_do_not_copy_the_seed_summary():
    seed = ROOT.parent / "shared" / "seed" / "000_08ad06ea090836a4.txt"
    if not seed.exists():
        pytest.skip("seed not beside the repo")
    lines = [l.strip() for l in seed.read_text().splitlines() if len(l.strip()) > 40]
    for c in claims.all_claims():
        assert c.claim not in lines, f"claim {c.id} copies the seed's sentence"


CHECKED_CHAPTERS = {1, 2, 3, 4, 5, 6, 7, 8, 9}
RECORDED = {1: "holds", 2: "holds if", 4: "holds if", 8: "holds",
            16: "holds if", 17: "holds", 18: "holds if", 19: "holds if", 27: "holds",
            20: "holds", 21: "holds", 22: "holds if", 24: "holds if", 25: "holds", 26: "holds if",
            3: "holds if", 5: "holds if", 6: "holds if", 7: "holds if",
            9: "holds if", 10: "holds if", 11: "holds if", 14: "holds if", 15: "holds if",
            12: "holds if", 13: "off by",
            23: "holds if", 28: "holds if", 29: "holds if", 30: "holds if", 31: "holds if",
            32: "holds", 33: "off by", 34: "holds if", 35: "holds if", 36: "holds if", 37: "holds if",
            38: "holds", 39: "holds", 40: "holds if"}


def test_written_chapters_claims_are_checked_and_the_rest_pending():
    for c in claims.all_claims():
        assert c.status == ("checked" if c.chapter in CHECKED_CHAPTERS else "pending"), c.id
    assert {c.id for c in claims.all_claims() if c.status == "checked"} == set(RECORDED)


@pytest.mark.parametrize("claim_id", sorted(RECORDED))
def test_checks_return_their_recorded_verdicts(claim_id, capsys):
    v = claims.check(claim_id)
    assert v.verdict == RECORDED[claim_id]
    out = capsys.readouterr().out
    assert out.startswith(f"Claim {claim_id} (")


def test_a_claim_without_a_check_says_pending(capsys, monkeypatch):
    checks = dict(claims._checks())
    del checks[9]
    monkeypatch.setattr(claims, "_CHECKS", checks)
    v = claims.check(9)
    assert v.verdict == "pending" and "chapter 3" in capsys.readouterr().out
    assert claims.get(9).status == "pending"


@pytest.mark.parametrize("bad", [0, 41, "1", 2.0, None])
def test_unknown_claim_id_is_refused(bad):
    with pytest.raises(KeyError, match="1 to 40"):
        claims.get(bad)


def test_a_check_fails_loudly_when_its_numbers_stop_supporting_it(monkeypatch):
    # Make an H100 twice as fast at bf16: claim 2's datasheet anchor no longer matches the catalog.
    from llmmath import hardware
    import dataclasses
    h = hardware.get("h100-sxm")
    fast = dataclasses.replace(h, peak_flops_per_s={**h.peak_flops_per_s, "bf16": 2 * h.peak_flops_per_s["bf16"]})
    real_get = hardware.get
    monkeypatch.setattr(hardware, "get", lambda n: fast if n == "h100-sxm" else real_get(n))
    with pytest.raises(claims.ClaimCheckFailed, match="claim 2"):
        claims.check(2, quiet=True)


# ---- check_answer ---------------------------------------------------------------------

def test_right_answer(capsys):
    assert check_answer("01.1", 989.5 / 4.8) is True
    assert "right" in capsys.readouterr().out


def test_unanswered_stub(capsys):
    assert check_answer("01.1", ...) is None
    assert check_answer("01.1", None) is None
    assert "not answered yet" in capsys.readouterr().out


@pytest.mark.parametrize("factor, words", [(1000, "factor of 1000"), (1e-3, "factor of 1000"), (8, "bits vs bytes"),
                                          (2, "factor of 2"), (1e9, "billion")])
def test_units_slips_get_a_hint_and_never_the_answer(factor, words, capsys):
    expected = 0.0031270519466666665  # problem 01.2, hand value
    assert check_answer("01.2", expected * factor) is False
    out = capsys.readouterr().out
    assert words in out and "0.00312" not in out and "3.12" not in out


def test_plain_miss_reports_how_far(capsys):
    assert check_answer("01.5", 560.44 * 1.3) is False
    assert "30% too large" in capsys.readouterr().out


def test_bad_answers_are_refused_clearly():
    with pytest.raises(KeyError, match="unknown exercise"):
        check_answer("99.9", 1)
    with pytest.raises(TypeError, match="must be a number"):
        check_answer("01.1", "206")


def test_every_solution_key_exists_and_every_key_is_used():
    used = set()
    for p in (ROOT / "solutions").glob("[0-9][0-9]_*.py"):
        used |= set(re.findall(r'check_answer\("([0-9]+\.[0-9]+)"', p.read_text()))
    assert used == set(answers.answer_keys())


def test_exercises_are_generated_from_solutions():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "make_exercises.py"), "--check"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_exercise_generator_strips_and_refuses_broken_markers():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import make_exercises as mk
    finally:
        sys.path.pop(0)
    src = ('# %% [markdown]\n# # T\n#\n# text\n\n# %%\n# BEGIN SOLUTION stub: x = ...\nx = 41 + 1\n# END SOLUTION\n'
           'print(x)\n\n# %% [markdown] tags=["solution"]\n# the answer is 42\n')
    out = mk.strip_solutions(src, "t.py")
    assert "41 + 1" not in out and "x = ...\nprint(x)" in out and "42" not in out
    with pytest.raises(ValueError, match="unclosed"):
        mk.strip_solutions("# %%\n# BEGIN SOLUTION\nx = 1\n", "t.py")
    with pytest.raises(ValueError, match="without BEGIN"):
        mk.strip_solutions("# %%\n# END SOLUTION\n", "t.py")
