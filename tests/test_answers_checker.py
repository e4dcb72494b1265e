"""check_answer's verdicts: units-slip hints only when they fit, percentages that never
contradict the tolerance, refusals of non-numbers, key normalisation, and never the answer.

Every value is computed from the real answer key (lib/llmmath/data/answers/*.toml).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from llmmath import answers, check_answer

KEYS = answers.answer_keys()


def expected(key: str) -> float:
    return float(KEYS[key]["value"])


def rel_tol(key: str) -> float:
    return float(KEYS[key].get("rel_tol", 0.02))


def verdict(key, value, capsys):
    ok = check_answer(key, value)
    return ok, capsys.readouterr().out


BYTES_KEYS = sorted(k for k, e in KEYS.items() if e["unit"].startswith("bytes"))
RELATIVE_KEYS = sorted(k for k, e in KEYS.items() if float(e.get("rel_tol", 0.02)) > 0)
MISS = re.compile(r"(just over )?([0-9.]+)% too (large|small) \(need within ([0-9.]+)%\)")
BINARY_WORDS = ("KiB", "MiB", "GiB", "TiB", "1.024", "1024", "2^")


def test_the_key_has_what_these_tests_use():
    assert BYTES_KEYS and {"05.1", "06.4", "09.3"} <= set(BYTES_KEYS)
    assert rel_tol("05.1") == 0.01 and "fraction" in KEYS["01.7"]["unit"]
    assert KEYS["01.6"].get("abs_tol") == 0.5 and rel_tol("06.5") == 0.0001


# ---- no units hint for an ordinary few-percent miss ---------------------------------------

@pytest.mark.parametrize("ratio", [64 / 63, 1.014, 1.016, 1 / 1.016, 63 / 64])
def test_a_one_and_a_half_percent_miss_is_not_a_kib_slip(ratio, capsys):
    # 05.1 without the (E-1)/E = 63/64 factor is 1.6 % off: a conceptual miss, not KiB vs kB
    ok, out = verdict("05.1", expected("05.1") * ratio, capsys)
    assert ok is False
    assert not any(w in out for w in BINARY_WORDS), out
    assert ("too large" if ratio > 1 else "too small") in out and "need within 1%" in out
    assert "Hint:" in out  # the entry's own hint, since this is no units slip


@pytest.mark.parametrize("key", BYTES_KEYS)
def test_kib_hint_only_when_much_closer_to_1024_than_to_1(key, capsys):
    e, t = expected(key), rel_tol(key)
    for ratio in np.linspace(1.0 + t, 1.05, 301):
        for r in (ratio, 1 / ratio):
            check_answer(key, e * r)
            out = capsys.readouterr().out
            if "KiB vs kB" in out:
                d_factor = abs(math.log(r) - math.copysign(math.log(1.024), math.log(r)))
                # undone, the answer is right (math.isclose's symmetric tolerance: up to t / (1 - t))
                assert abs(r / 1.024 ** math.copysign(1, math.log(r)) - 1) <= t / (1 - t) * 1.0001
                assert abs(math.log(r)) >= 3 * d_factor * 0.9999, (r, out)
            if abs(math.log(r)) <= math.log(1.016):
                assert "KiB" not in out and "1.024" not in out, (r, out)


@pytest.mark.parametrize("ratio, direction", [(1.024, "too large"), (1 / 1.024, "too small"),
                                              (1.024 * 1.004, "too large")])
def test_a_real_kib_vs_kb_slip_gets_its_hint(ratio, direction, capsys):
    ok, out = verdict("05.1", expected("05.1") * ratio, capsys)
    assert ok is False and "KiB vs kB" in out and direction in out


def test_no_kib_hint_when_the_factor_is_inside_a_loose_tolerance(monkeypatch, capsys):
    # with a 2 % tolerance a 2.4 % miss is as likely an ordinary miss as a KiB slip
    keys = {k: dict(v) for k, v in KEYS.items()}
    keys["05.1"]["rel_tol"] = 0.02
    monkeypatch.setattr(answers, "answer_keys", lambda: keys)
    ok, out = verdict("05.1", expected("05.1") * 1.024, capsys)
    assert ok is False and "KiB" not in out and "1.024" not in out
    assert "2.4% too large (need within 2%)" in out
    # ... while MiB vs MB (4.9 %) and GiB vs GB (7.4 %) still stand clear of it
    assert "MiB vs MB" in verdict("05.1", expected("05.1") * 1.024 ** 2, capsys)[1]
    assert "GiB vs GB" in verdict("05.1", expected("05.1") * 1.024 ** 3, capsys)[1]


# ---- binary-prefix, percent and other slips ----------------------------------------------

@pytest.mark.parametrize("key", ["05.1", "06.4", "09.3"])
@pytest.mark.parametrize("factor, words", [
    (2 ** 10, "KiB vs bytes"), (2 ** 20, "MiB vs bytes"), (2 ** 30, "GiB vs bytes"), (2 ** 40, "TiB vs bytes"),
    (1.024, "KiB vs kB"), (1.024 ** 2, "MiB vs MB"), (1.024 ** 3, "GiB vs GB"), (1.024 ** 4, "TiB vs TB"),
    (1e3, "factor of 1000"), (1e6, "factor of a million"), (1e9, "factor of a billion"), (8, "bits vs bytes")])
def test_binary_prefix_slips_get_the_right_hint(key, factor, words, capsys):
    e = expected(key)
    for value, direction in ((e * factor, "too large"), (e / factor, "too small")):
        ok, out = verdict(key, value, capsys)
        assert ok is False and words in out and direction in out, out
        if factor in (1e3, 1e6, 1e9):  # the decimal slip, not its binary neighbour
            assert "KiB" not in out and "MiB" not in out and "GiB" not in out


def test_gib_answer_given_as_gb(capsys):
    # 06.4 is 20 GiB; 20e9 bytes is the GB-for-GiB slip, 20 is "GiB, not bytes", 21.47 is "GB, not bytes"
    gib = expected("06.4") / 2 ** 30
    assert "GiB vs GB" in verdict("06.4", gib * 1e9, capsys)[1]
    assert "GiB vs bytes" in verdict("06.4", gib, capsys)[1]
    assert "billion" in verdict("06.4", expected("06.4") / 1e9, capsys)[1]


def test_binary_hints_only_for_answers_in_bytes(capsys):
    for key in ("01.3", "08.1", "05.2"):  # sequences, tokens, FLOP per byte
        for factor in (1024, 1.024, 1.024 ** 3, 2 ** 30):
            ok, out = verdict(key, expected(key) * factor, capsys)
            assert ok is False and "KiB" not in out and "GiB" not in out, out


def test_the_closest_factor_wins(capsys):
    e = expected("06.4")
    out = verdict("06.4", e * 1024 * 1.004, capsys)[1]
    assert "1024" in out and "factor of 1000" not in out
    out = verdict("06.4", e * 1000 * 1.004, capsys)[1]
    assert "factor of 1000" in out and "1024" not in out
    out = verdict("06.4", e * 2 ** 20 * 0.995, capsys)[1]
    assert "2^20" in out and "million" not in out


def test_both_factors_named_when_both_fit_closest_first(monkeypatch, capsys):
    keys = {k: dict(v) for k, v in KEYS.items()}
    keys["06.4"]["rel_tol"] = 0.02  # 1000 and 1024 are 2.4 % apart: both fit a ratio between them
    monkeypatch.setattr(answers, "answer_keys", lambda: keys)
    e = expected("06.4")
    out = verdict("06.4", e * 1015, capsys)[1]  # 0.9 % from 1024, 1.5 % from 1000
    assert "1024" in out and "factor of 1000" in out
    assert out.index("1024") < out.index("factor of 1000")
    out = verdict("06.4", e * 1005, capsys)[1]  # 0.5 % from 1000, 1.9 % from 1024
    assert out.index("factor of 1000") < out.index("1024")
    out = verdict("06.4", e / 1015, capsys)[1]
    assert "too small" in out and out.index("1024") < out.index("factor of 1000")


@pytest.mark.parametrize("key", ["01.7", "02.5", "03.4", "06.1", "09.1", "09.7", "07.4", "06.2"])
def test_percent_instead_of_fraction(key, capsys):
    ok, out = verdict(key, expected(key) * 100, capsys)
    assert ok is False and "percentage" in out and "too large" in out
    ok, out = verdict(key, expected(key) / 100, capsys)
    assert ok is False and "percentage" in out and "too small" in out


def test_no_percent_hint_for_quantities_with_units(capsys):
    for key in ("01.1", "02.1", "04.1", "08.1"):
        ok, out = verdict(key, expected(key) * 100, capsys)
        assert ok is False and "percentage" not in out and "100x too large" in out


def test_a_slip_hint_needs_the_answer_to_be_right_once_undone(capsys):
    # x1000 but then also 5 % off: the plain miss, not a prefix hint (05.1's tolerance is 1 %)
    ok, out = verdict("05.1", expected("05.1") * 1050, capsys)
    assert ok is False and "factor of 1000" not in out and "1,050x too large" in out
    # whole-number answers: a slip is undone within their absolute tolerance
    assert "bits vs bytes" in verdict("01.6", 185 * 8, capsys)[1]
    assert "factor of 1000" in verdict("01.6", 0.185, capsys)[1]


# ---- percentages that never contradict the tolerance --------------------------------------

def test_the_reviewers_example(capsys):
    ok, out = verdict("05.1", expected("05.1") * 1.0137, capsys)
    assert ok is False and "1.37% too large (need within 1%)" in out
    assert "1.0001% too small" in verdict("05.1", expected("05.1") * (1 - 0.010001), capsys)[1]
    assert "just over 1% too small (need within 1%)" in verdict("05.1", expected("05.1") * 0.98999999, capsys)[1]


@pytest.mark.parametrize("key", RELATIVE_KEYS)
def test_misses_always_read_larger_than_the_tolerance(key, capsys):
    e, t = expected(key), rel_tol(key)
    just_outside = [e / (1 - t) * (1 + 1e-9), e * (1 - t) * (1 - 1e-9), e * (1 - t) * (1 - 1e-12)]
    # math.isclose is symmetric: above the answer, right reaches up to 1/(1 - t)
    grid = ([e * r for r in np.geomspace(1 / (1 - t) * (1 + 1e-9), 1.99, 40)]
            + [e * r for r in np.geomspace(1 - t - 1e-9, 0.501, 40)])
    for value in just_outside + grid:
        ok, out = verdict(key, value, capsys)
        assert ok is False, (value, out)
        m = MISS.search(out)
        if m is None:  # a units-slip hint instead of a percentage
            assert "by a factor of" in out, out
            continue
        miss, tol = float(m.group(2)), float(m.group(4))
        assert tol == pytest.approx(t * 100) and tol > 0
        if m.group(1):  # "just over 1% too small (need within 1%)"
            assert miss == tol and (abs(value / e - 1) - t) < 1e-4 * t, out
        else:
            assert miss > tol and m.group(2) != m.group(4), out


@pytest.mark.parametrize("key", sorted(KEYS))
def test_right_says_the_real_tolerance(key, capsys):
    ok, out = verdict(key, expected(key), capsys)
    assert ok is True and "right (within " in out
    assert "within 0%" not in out


def test_tight_and_absolute_tolerances_are_written_out(capsys):
    assert "right (within 0.01%)" in verdict("06.5", expected("06.5"), capsys)[1]
    ok, out = verdict("06.5", expected("06.5") * 1.0002, capsys)
    assert ok is False and "0.02% too large (need within 0.01%)" in out
    assert "right (within ±0.5)" in verdict("01.6", 185.4, capsys)[1]
    ok, out = verdict("01.6", 186, capsys)
    assert ok is False and "need within ±0.5)" in out and "0%" not in out.split("need")[1]


def test_large_misses_read_as_times(capsys):
    assert "30% too large" in verdict("01.5", expected("01.5") * 1.3, capsys)[1]
    assert "3x too small" in verdict("05.2", expected("05.2") / 3, capsys)[1]
    assert "5,000x too large" in verdict("05.1", expected("05.1") * 5000, capsys)[1]


# ---- never the answer ---------------------------------------------------------------------

def _significant(s: str) -> int:
    mantissa = s.lstrip("-").split("e")[0].replace(".", "").lstrip("0")
    return len(mantissa)


@pytest.mark.parametrize("key", sorted(KEYS))
def test_messages_never_contain_the_expected_value(key, capsys):
    e = expected(key)
    shown = {s for s in (repr(e), str(KEYS[key]["value"]), f"{e:.4g}", f"{e:.3g}", f"{e:,.0f}")
             if _significant(s.replace(",", "")) >= 3}
    for ratio in (1, 1.3, 0.7, 1.016, 1.024, 1.5e3, 1024, 1 / 1024, 100, 1 / 8, 2 ** 30, 1.024 ** 3, 2):
        out = verdict(key, e * ratio, capsys)[1]
        assert out.startswith(f"[{key}]")
        for s in shown:
            assert s not in out, (ratio, s, out)


# ---- what counts as an answer -------------------------------------------------------------

@pytest.mark.parametrize("value", [np.array("327680"), np.str_("327680"), np.array(b"327680"),
                                   np.array("327680", dtype=object), "327680", b"327680"])
def test_text_is_refused_even_from_numpy(value):
    with pytest.raises(TypeError, match="must be a number"):
        check_answer("02.1", value)


@pytest.mark.parametrize("value", [True, np.True_, np.False_, np.array(True), np.bool_(1)])
def test_bools_are_refused_even_from_numpy(value):
    with pytest.raises(TypeError, match="bool"):
        check_answer("06.1", value)  # not even "1" for a fraction


@pytest.mark.parametrize("value", [1 + 2j, np.complex128(327680), np.array([327680.0, 1.0]), [327680], object()])
def test_other_non_numbers_are_refused(value):
    with pytest.raises(TypeError, match="must be a number"):
        check_answer("02.1", value)


@pytest.mark.parametrize("value", [np.float64(327680), np.float32(327680), np.int64(327680), np.array(327680.0),
                                   np.array([327680]), Fraction(327680), 327680])
def test_numpy_and_exact_numbers_are_accepted(value, capsys):
    assert check_answer("02.1", value) is True


@pytest.mark.parametrize("value", [10 ** 400, -(10 ** 400), 10 ** 5000, Fraction(10 ** 400, 3)],
                         ids=["1e400", "-1e400", "1e5000", "fraction"])
def test_numbers_too_large_for_a_float_are_told_so(value, capsys):
    ok, out = verdict("02.1", value, capsys)
    assert ok is False and "too large to be a float" in out


@pytest.mark.parametrize("value, words", [(float("nan"), "NaN"), (np.nan, "NaN"), (float("inf"), "infinity"),
                                          (-math.inf, "minus infinity"), (np.float32("inf"), "infinity")])
def test_non_finite_answers_say_so(value, words, capsys):
    ok, out = verdict("03.2", value, capsys)
    assert ok is False and words in out and "not a finite" not in out.replace("a finite number in", "")


def test_zero_and_wrong_sign(capsys):
    assert "zero" in verdict("03.2", 0, capsys)[1]
    assert "wrong sign" in verdict("03.2", -expected("03.2"), capsys)[1]


# ---- keys ---------------------------------------------------------------------------------

@pytest.mark.parametrize("key", ["1.3", " 01.3 ", "\t1.3\n", "01.3", "001.3"])
def test_keys_are_normalised(key, capsys):
    assert check_answer(key, expected("01.3")) is True
    assert "[01.3] right" in capsys.readouterr().out


def test_unknown_keys_suggest_the_closest():
    with pytest.raises(KeyError, match="unknown exercise") as info:
        check_answer("05.9", 1)
    msg = str(info.value)
    assert "closest: 05." in msg and "05.6" in msg
    assert "01.1" not in msg  # not a dump of all keys
    with pytest.raises(KeyError, match="closest: 09"):
        check_answer("9.8", 1)
    with pytest.raises(TypeError, match="string"):
        check_answer(1.3, 1)


# ---- not answered yet (the exercise notebooks' `answer = ...`) -----------------------------

@pytest.mark.parametrize("key", sorted(KEYS))
def test_ellipsis_means_not_answered(key, capsys):
    assert check_answer(key, ...) is None
    assert check_answer(key, None) is None
    out = capsys.readouterr().out
    assert out.count("not answered yet") == 2 and KEYS[key]["unit"] in out


def test_quiet_prints_nothing(capsys):
    assert check_answer("05.1", expected("05.1") * 1024, quiet=True) is False
    assert capsys.readouterr().out == ""


def test_the_hint_rule_is_documented():
    doc = check_answer.__doc__
    assert "rel_tol" in doc and "clearly outside" in doc and "closer" in doc


# ---- hints that fit the question: each problem's own slips ---------------------------------

OWN_SLIPS = sorted((k, s["factor"], s["hint"]) for k, e in KEYS.items() for s in e.get("slips", ()))
GENERIC_TWO = ("multiply-add", "bidirectional", "per-direction", "bytes per value")


def test_half_the_kv_cache_is_told_k_and_v(capsys):
    # 02.1: Llama-3.1-70B, 2 (K, V) x 80 layers x 8 K/V heads x 128 x 2 bytes = 327,680; K alone is 163,840
    assert 2 * 80 * 8 * 128 * 2 == 327_680
    ok, out = verdict("02.1", 163_840, capsys)
    assert ok is False and "too small by a factor of 2" in out
    assert "K and V" in out and "both" in out
    assert not any(w in out for w in GENERIC_TWO), out      # not the generic list of factors of 2
    # the 64 query heads instead of the 8 K/V heads: 8 times the cache, told GQA, not bits vs bytes
    ok, out = verdict("02.1", 2 * 80 * 64 * 128 * 2, capsys)
    assert "factor of 8" in out and "K/V heads" in out and "bits vs bytes" not in out
    # one layer instead of 80
    assert "all 80 layers" in verdict("02.1", 2 * 8 * 128 * 2, capsys)[1]
    # the same slip in chapter 11 (Qwen3-8B: 36 layers): 2 x 36 x 8 x 128 x 2 = 147,456
    assert "K and V" in verdict("11.1", 36 * 8 * 128 * 2, capsys)[1]


@pytest.mark.parametrize("key, factor, hint", OWN_SLIPS, ids=[f"{k}x{f:.4g}" for k, f, _ in OWN_SLIPS])
def test_every_own_slip_is_told_when_made(key, factor, hint, capsys):
    value = expected(key) * factor
    if "whole number" in KEYS[key]["unit"]:
        value = round(value)              # whole-number answers: the slipped number a reader would write
    ok, out = verdict(key, value, capsys)
    assert ok is False and hint in out, out
    assert ("too large" if factor > 1 else "too small") in out and "by a factor of" in out
    assert "Hint:" not in out             # the slip's own hint says it; the entry's general one is not added


def test_own_slips_are_well_formed():
    for key, factor, hint in OWN_SLIPS:
        assert factor > 0 and factor != 1 and hint.strip(), key
        # clearly outside the tolerance band, or the slip could never be told (rule 2)
        assert abs(math.log(factor)) > 2 * math.log1p(max(rel_tol(key), KEYS[key].get("abs_tol", 0) / expected(key)))


@pytest.mark.parametrize("slip", [{"factor": 1, "hint": "x"}, {"factor": -2, "hint": "x"}, {"factor": 2},
                                  {"factor": True, "hint": "x"}, {"factor": 2, "hint": "x", "why": "y"}])
def test_a_malformed_own_slip_is_refused_naming_the_key(slip, monkeypatch):
    keys = {k: dict(v) for k, v in KEYS.items()}
    keys["07.3"]["slips"] = [slip]
    monkeypatch.setattr(answers, "answer_keys", lambda: keys)
    with pytest.raises(ValueError, match=r"'07.3': slips\[0\] must be"):
        check_answer("07.3", 1.0)


def test_a_generic_factor_of_two_says_only_what_the_unit_suggests(capsys):
    # 05.2 is FLOP per byte (6 x 1536 / 3 = 3,072): twice it is the multiply-add, and nothing about bytes per value
    assert 6 * 1536 / (1 + 2) == expected("05.2")
    out = verdict("05.2", 6144, capsys)[1]
    assert "multiply-add is 2 FLOPs" in out and "bytes per value" not in out and "bidirectional" not in out
    # 05.1 is bytes (8 x 7168 x 3 x 63/64): bytes per value, not FLOPs
    out = verdict("05.1", 8 * 7168 * 3 * 63 / 64 * 2, capsys)[1]
    assert "bytes per value" in out and "FLOP" not in out.split("Hint:")[0]
    # 07.3 is steps (10 x (1 + 100/50) = 30): a factor of 2 and the problem's own hint, no unit story
    out = verdict("07.3", 60, capsys)[1]
    assert "too large by a factor of 2." in out and not any(w in out for w in GENERIC_TWO)
    assert "Hint: S = S_min (1 + B_noise / B)" in out
    # ... while its own slip, B / B_noise for B_noise / B (10 x (1 + 50/100) = 15), is named
    assert "B_noise over B" in verdict("07.3", 15, capsys)[1]


def test_other_slips_still_get_their_hints_where_a_problem_has_its_own(capsys):
    # 02.1 has its own factors 2, 8, 1/2, 1/80; a prefix slip is still a prefix slip
    assert "factor of 1000" in verdict("02.1", 327_680 * 1000, capsys)[1]
    assert "KiB vs bytes" in verdict("02.1", 327_680 / 1024, capsys)[1]
    # and an ordinary miss still reads as a percentage with the entry's hint
    out = verdict("02.1", 327_680 * 1.3, capsys)[1]
    assert "30% too large (need within 1%)" in out and "Hint: K and V" in out
