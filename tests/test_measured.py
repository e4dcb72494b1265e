"""llmmath.demos.measured: physical facts about a measurement, re-measured before failing, shown as a warning in the book."""
import json

import numpy as np
import pytest

from llmmath import measured
from llmmath.demos.measured import Fact, MeasuredCheckFailed


@pytest.fixture(autouse=True)
def _no_log(monkeypatch):
    """These checks are made up: keep them out of a flake check's log of real measurements (the log test sets
    its own)."""
    monkeypatch.delenv(measured.LOG_ENV, raising=False)


def test_fact_bounds_are_strict_and_describe_says_which_way():
    assert Fact("ratio", 2.5, low=2).holds and not Fact("ratio", 2.0, low=2).holds
    assert Fact("ratio", 0.9, high=1).holds and not Fact("ratio", 1.0, high=1).holds
    assert Fact("r", 4, low=2, high=16).holds and not Fact("r", 17, low=2, high=16).holds
    assert not Fact("r", float("nan"), low=0).holds          # a NaN never holds
    d = Fact("cost per row", 1.2, low=2, why="a re-read gives 1x").describe()
    assert "1.2x" in d and "above 2" in d and "DOES NOT HOLD" in d and "a re-read gives 1x" in d
    assert "between 2 and 16" in Fact("r", 4, low=2, high=16).describe()


def test_fact_margin_is_the_factor_inside_the_nearer_bound():
    assert Fact("r", 6, low=2).margin == pytest.approx(3)        # 6 / 2
    assert Fact("r", 0.25, high=1).margin == pytest.approx(4)    # 1 / 0.25
    assert Fact("r", 8, low=2, high=16).margin == pytest.approx(2)   # min(8/2, 16/8)
    assert Fact("r", 1.5, low=2).margin == pytest.approx(0.75)   # fails: below 1


@pytest.mark.parametrize("kw, match", [
    (dict(), "give a low or a high"),
    (dict(low=3, high=2), "must be below high"),
    (dict(low=float("nan")), "finite number"),
    (dict(low=True), "finite number"),
])
def test_fact_refuses_bad_bounds(kw, match):
    with pytest.raises(ValueError, match=match):
        Fact("r", 1.0, **kw)


def test_numpy_values_and_bounds_become_plain_floats_that_the_log_can_write(monkeypatch, tmp_path):
    np = pytest.importorskip("numpy")
    fc = Fact("share", np.float64(0.3), high=np.float64(0.6))
    assert type(fc.value) is float and type(fc.high) is float and fc.holds is True
    monkeypatch.setenv(measured.LOG_ENV, str(tmp_path / "m.jsonl"))
    measured.check("np", lambda m: [Fact("share", m, high=(1 + np.float64(0.2)) / 2)], np.float64(0.3))
    assert json.loads((tmp_path / "m.jsonl").read_text())["holds"] is True


def test_fact_refuses_a_value_that_is_not_a_number():
    with pytest.raises(ValueError, match="value must be a number"):
        Fact("r", "fast", low=1)


def test_a_holding_check_measures_once_and_prints_its_facts(capsys):
    calls = []
    out = measured.check("amortization", lambda m: [Fact("fall", m, low=2)], 3.0,
                         remeasure=lambda: calls.append(1) or 9.0)
    assert out.holds and not calls and len(out.tries) == 1
    printed = capsys.readouterr().out
    assert "measured check held: amortization" in printed and "fall: 3x" in printed


def test_a_failing_check_is_remeasured_and_passes_if_a_remeasurement_holds(capsys):
    values = iter([1.5, 2.5])
    out = measured.check("amortization", lambda m: [Fact("fall", m, low=2)], 1.0, remeasure=lambda: next(values))
    assert out.holds and [facts[0].value for facts, _load in out.tries] == [1.0, 1.5, 2.5]
    assert "on re-measurement 2" in capsys.readouterr().out


def test_a_check_that_always_fails_raises_with_every_try_the_machine_and_the_load(monkeypatch):
    monkeypatch.delenv(measured.MODE_ENV, raising=False)
    with pytest.raises(MeasuredCheckFailed) as e:
        measured.check("amortization", lambda m: [Fact("fall", m, low=2, why="a re-read gives 1x")], 1.1,
                       remeasure=lambda: 1.2, attempts=2, first_load="other work 0% of the cores")
    text = str(e.value)
    assert isinstance(e.value, AssertionError)                   # nbval and pytest report it as a failed assert
    assert text.startswith(measured.WARNING_MARK)
    assert "the chapter's measurement (other work 0% of the cores)" in text
    assert "re-measurement 1" in text and "re-measurement 2" in text and "re-measurement 3" not in text
    assert text.count("DOES NOT HOLD") == 3 and "fall: 1.2x" in text
    assert "machine:" in text and "logical CPUs" in text and "BLAS" in text
    # the load of each re-measurement, as the meter saw it (or why it could not)
    assert text.count("other work") >= 3 or "load not measured" in text


def test_without_remeasure_a_failure_is_reported_at_once(monkeypatch):
    monkeypatch.setenv(measured.MODE_ENV, "raise")
    with pytest.raises(MeasuredCheckFailed, match="load not metered"):
        measured.check("x", lambda m: [Fact("v", m, high=1)], 2.0)


def test_the_machine_line_names_the_openblas_variables_when_set(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("OPENBLAS_L2_SIZE", "512")
    assert "OPENBLAS_CORETYPE=Haswell OPENBLAS_L2_SIZE=512" in measured.machine_line()
    monkeypatch.delenv("OPENBLAS_CORETYPE")
    monkeypatch.delenv("OPENBLAS_L2_SIZE")
    assert "OPENBLAS_CORETYPE" not in measured.machine_line()


def test_warn_mode_shows_the_report_and_carries_on(monkeypatch, capsys):
    monkeypatch.setenv(measured.MODE_ENV, "warn")
    out = measured.check("knee", lambda m: [Fact("ratio", m, low=2)], 1.0)
    assert not out.holds
    printed = capsys.readouterr().out                           # outside IPython: the report on stdout
    assert printed.startswith(measured.WARNING_MARK + ": knee") and "ratio: 1x" in printed


def test_warn_mode_in_ipython_displays_an_html_box_with_the_text(monkeypatch):
    pytest.importorskip("IPython")
    shown = []
    import IPython
    import IPython.display
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    monkeypatch.setenv(measured.MODE_ENV, "warn")
    measured.check("knee <b>", lambda m: [Fact("ratio", m, low=2)], 1.0)
    (bundle, raw), = shown
    assert raw and bundle["text/plain"].startswith(measured.WARNING_MARK)
    assert "llmmath-measured-warning" in bundle["text/html"] and "knee &lt;b&gt;" in bundle["text/html"]


def test_a_bad_mode_is_refused_before_measuring(monkeypatch):
    monkeypatch.setenv(measured.MODE_ENV, "ignore")
    with pytest.raises(ValueError, match="must be one of"):
        measured.check("x", lambda m: [Fact("v", m, low=0)], 1.0)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="attempts"):
        measured.check("x", lambda m: [Fact("v", m, low=0)], 1.0, attempts=-1)
    with pytest.raises(ValueError, match="no facts"):
        measured.check("x", lambda m: [], 1.0)
    with pytest.raises(TypeError, match="Fact objects"):
        measured.check("x", lambda m: [m > 0], 1.0)


def test_the_log_gets_one_json_line_per_fact_and_try(monkeypatch, tmp_path):
    log = tmp_path / "measured.jsonl"
    monkeypatch.setenv(measured.LOG_ENV, str(log))
    monkeypatch.setenv(measured.MODE_ENV, "warn")
    values = iter([3.0])
    measured.check("fall", lambda m: [Fact("a", m, low=2), Fact("b", 1.0, high=5)], 1.0, remeasure=lambda: next(values))
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["attempt"], r["what"], r["value"], r["holds"]) for r in rows] == [
        (0, "a", 1.0, False), (0, "b", 1.0, True), (1, "a", 3.0, True), (1, "b", 1.0, True)]
    assert rows[0]["check"] == "fall" and rows[0]["low"] == 2 and rows[0]["high"] is None


def test_the_spread_tool_gives_each_facts_range_worst_margin_and_remeasures(tmp_path):
    import sys
    from pathlib import Path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    import measured_spread

    rows = [{"check": "fall", "attempt": 0, "what": "a", "value": v, "low": 2, "high": None, "holds": v > 2}
            for v in (3.0, 6.0, 1.5)] + [
           {"check": "fall", "attempt": 1, "what": "a", "value": 2.5, "low": 2, "high": None, "holds": True}]
    log = tmp_path / "m.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    text = measured_spread.table(measured_spread.load([log, tmp_path / "missing.jsonl"]))
    line = next(ln for ln in text.splitlines() if ln.strip().startswith("a "))
    # n 4, min 1.5, median 2.75, max 6, above 2, worst margin 1.5 / 2 = 0.75, 1 of 3 first measurements failed
    assert line.split()[1:5] == ["4", "1.5", "2.75", "6"] and "above 2" in line
    assert "0.75x" in line and "1 of 3" in line
    assert measured_spread.table([]) == "no measured facts were logged"


def test_context_flip_predicts_the_balanced_context_by_hand_and_refuses_bad_sizes():
    from llmmath.demos import context_flip
    r = context_flip.run(contexts=(16, 32, 64), batch=4, d_model=64, head_dim=8, rounds=1)
    assert r.step_s.shape == (3,) and np.all(r.step_s > 0)
    # L* = (8 B d^2 / F) / (B 2 h 4 / W) = d^2 W / (h F)
    assert r.predicted_balanced_context == pytest.approx(64**2 * r.bytes_per_s / (8 * r.flops_per_s), rel=1e-12)
    with pytest.raises(ValueError, match="at least three"):
        context_flip.run(contexts=(16, 32))
    with pytest.raises(ValueError, match="batch must be a whole number"):
        context_flip.run(batch=0)
