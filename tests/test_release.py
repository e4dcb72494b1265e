"""A lecturer's round trip with tools/release.py and nbgrader, for chapter 5's problem set.

Instructor release (nbgrader source) -> student release (nbgrader's generate_assignment, and the library
without its answer key) -> no answer value of ``data/answers/05.toml`` anywhere in what students get ->
a submission with two right answers, one wrong and three left open -> autograde -> the score is the
right ones' points, and the feedback carries the checker's verdict on the wrong one.
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("nbgrader", reason="nbgrader is not installed (pip install -e '.[test]' or '.[grading]')")
nbformat = pytest.importorskip("nbformat")

from llmmath.course.answers import answer_keys  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
try:
    import release  # noqa: E402
finally:
    sys.path.pop(0)

CHAPTER, PS, NOTEBOOK = "05", "ps05", "05_experts_on_a_rack.ipynb"
occurrences = release.occurrences


@pytest.mark.filterwarnings("ignore:Object of type")  # SQLAlchemy on nbgrader's gradebook sessions
def test_release_submit_autograde_feedback(tmp_path):
    course = tmp_path / "course"
    key = {k: v for k, v in answer_keys().items() if k.startswith(CHAPTER + ".")}
    assert len(key) == 6

    # 1. the instructor's version: nbgrader's answer and test cells, the worked answers, the hidden checks
    (source,) = release.instructor(course, [CHAPTER])
    assert source == course / "source" / PS / NOTEBOOK and (course / "nbgrader_config.py").exists()
    nb = nbformat.read(source, as_version=4)
    graded = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert [c.metadata.nbgrader.points for c in graded] == [1] * 6
    assert all("### BEGIN HIDDEN TESTS" in c.source and "check_answer(" in c.source for c in graded)
    assert sum("solution" in c.metadata.get("tags", []) for c in nb.cells) == 6  # the worked answers

    # 2. the student's version: no solutions, no hidden tests, no worked answers, no answer key
    released = release.student(course, [CHAPTER])
    assert released == [course / "release" / PS / NOTEBOOK]
    student_files = [p for p in (course / "release").rglob("*") if p.is_file()]
    for p in student_files:
        text = release.readable_text(p)
        for marker in ("BEGIN SOLUTION", "HIDDEN TESTS", "Worked answer", "check_answer(\""):
            assert marker not in text, f"{p.name} has {marker!r}"
        for k, entry in key.items():
            assert not occurrences(text, entry["value"]), f"{p.name} gives away {k}: {occurrences(text, entry['value'])}"
    library = course / "library"
    assert (library / "pyproject.toml").exists() and (library / "llmmath" / "data" / "hardware.toml").exists()
    assert not (library / "llmmath" / "data" / "answers").exists()
    for p in library.rglob("*.toml"):
        assert "[answers." not in p.read_text(encoding="utf-8"), f"{p} is an answer key"
    # ... and the library students install says, without a traceback, that it cannot check answers
    env = {**os.environ, "PYTHONPATH": str(library), "MPLBACKEND": "Agg"}
    r = subprocess.run([sys.executable, "-c", "from llmmath import check_answer; print(check_answer('05.1', 1.0))"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "no answer key" in r.stdout and "autograded" in r.stdout and r.stdout.strip().endswith("None"), r.stdout

    # 3. a submission: 05.1 and 05.3 right, 05.2 wrong by the factor-3 slip (fp8 both ways), the rest left open
    nb = nbformat.read(released[0], as_version=4)
    answers = {"answer_05_1": "8 * 7168 * 3 * 63 / 64", "answer_05_2": "6 * 1536 / 1", "answer_05_3": "900 / 50"}
    for cell in nb.cells:
        filled = answers.get(cell.metadata.get("nbgrader", {}).get("grade_id"))
        if filled:
            assert cell.source.startswith("answer = ...")
            cell.source = cell.source.replace("...", filled, 1)
    submitted = course / "submitted" / "alice" / PS / NOTEBOOK
    submitted.parent.mkdir(parents=True)
    nbformat.write(nb, submitted)

    # 4. autograde and feedback
    scores = release.grade(course, [PS])
    assert scores == {(PS, "alice"): (2.0, 6.0)}
    feedback = (course / "feedback" / "alice" / PS / NOTEBOOK.replace(".ipynb", ".html")).read_text(encoding="utf-8")
    slip = next(s["hint"] for s in key["05.2"]["slips"] if math.isclose(s["factor"], 3))
    plain = re.sub(r"\s+", " ", feedback.replace("&#39;", "'").replace("&quot;", '"'))
    assert "[05.2] not yet: too large by a factor of 3: " + slip in plain
    assert "[05.1] right" in plain and "[05.3] right" in plain
    assert "replace the ... in the cell above with your number" in plain  # 05.4 to 05.6, unanswered
    assert not occurrences(plain, key["05.2"]["value"])  # the feedback says how far off, not the answer
