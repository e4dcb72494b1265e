"""Release the problem sets to a class without their answers, then collect and autograde the work (nbgrader).

``solutions/`` and the answer key (``lib/llmmath/data/answers/``) are in the repository, so students who
clone it can read every answer. For a graded class, a lecturer gives them a *student release* instead,
made here with nbgrader (``pip install -e ".[test]"`` installs it; the ``grading`` extra alone too).
The lecturer's steps, from the repository's root::

    python tools/release.py instructor course/         # 1. course/source/psNN/NN_slug.ipynb + course/nbgrader_config.py
    python tools/release.py student course/            # 2. course/release/psNN/ and course/library/: give these out
    # 3. collect: each student's notebooks into course/submitted/STUDENT/psNN/NN_slug.ipynb (by hand;
    #    or `nbgrader zip_collect psNN` from an LMS's zip download; or `nbgrader collect psNN` with an exchange)
    python tools/release.py grade course/ ps05         # 4. autograde + feedback/STUDENT/ps05/*.html, prints scores

Any chapter list (``05 ps07``) after the folder limits a step to those problem sets. Steps 2 and 4 call
nbgrader's Python API (``NbGraderAPI``); in ``course/``, with the environment activated (nbgrader runs its
``alembic`` command), ``nbgrader generate_assignment ps05``, ``nbgrader autograde ps05``,
``nbgrader generate_feedback ps05`` and ``nbgrader export`` (grades.csv) do the same with the same
``nbgrader_config.py``, and ``nbgrader formgrader`` shows the gradebook.

**Instructor version** (``source/psNN/``, one assignment per chapter's problem set, made from
``solutions/NN_slug_solutions.py``): each problem's answer cell becomes an nbgrader *autograded answer*
cell, ``answer = ...  # unit`` with the worked lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION``;
its check becomes an *autograder test* cell worth one point, whose hidden part (``### BEGIN HIDDEN TESTS``)
asserts ``check_answer("NN.M", answer)`` against the answer key, so the feedback carries the checker's
message ("too large by a factor of 2: ..."). The worked-answer markdown cells (``tags=["solution"]``) stay
here only. (The solutions' own cross-checks against the library are left out: ``pytest solutions/`` runs them.)

**Student version** (``release/psNN/``, nbgrader's ``generate_assignment``): the answer cells keep only
``answer = ...  # unit``, the hidden tests and the worked answers are gone, and no answer value is
in the notebooks, and no answer key in ``library/``, the llmmath package to ``pip install ./library``:
the course's library without ``data/answers/``. (The student step warns where a problem's text gives away
an answer value, as 12.4's once quoted 12.1's.) **How students still get feedback:** the visible
part of each test cell checks only that the answer is a finite number (its unit is named beside it);
``check_answer`` in a student install says the answer is checked at grading, and returns None. Whether
an answer is right, or how far off and why, comes back with the autograded feedback (step 4:
``feedback/STUDENT/psNN/NN_slug.html``, each test cell with the checker's verdict). Grading runs each
submission in the lecturer's environment, where llmmath has the key.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
POINTS = 1  # per problem

# A problem's code cell in solutions/ (tools/make_exercises.py's markers; every problem is written so).
_PROBLEM = re.compile(
    r"\A# BEGIN SOLUTION stub: (?P<stub>[^\n]*)\n(?P<work>.*?)^# END SOLUTION\n"
    r"ok = check_answer\(\"(?P<key>\d\d\.\d+)\", answer\)\n"
    r"# BEGIN SOLUTION\nassert ok\n.*?^# END SOLUTION\s*\Z", re.S | re.M)

GRADED_NOTE = ("*A graded problem set.* After each answer cell, a test cell checks only that your answer is a "
               "number. Whether it is right, or how far off and why, comes back with your feedback once your work "
               "is graded. Leave the test cells as they are.")

NBGRADER_CONFIG = '''\
"""nbgrader's configuration for the llmmath problem sets (written by tools/release.py; run nbgrader here)."""
from nbconvert.preprocessors import TagRemovePreprocessor
from nbgrader.converters import GenerateAssignment

c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "llmmath"
# An answer cell keeps its first line, "answer = ...  # unit", above the solution region: the region goes, nothing replaces it.
c.ClearSolutions.code_stub = {"python": ""}
# The worked answers (markdown cells tagged "solution") are in source/ only: removed before the release is made.
c.TagRemovePreprocessor.enabled = True
c.TagRemovePreprocessor.remove_cell_tags = ["solution"]
c.GenerateAssignment.preprocessors = [TagRemovePreprocessor,
                                      *GenerateAssignment.class_traits()["preprocessors"].default()]
c.Execute.timeout = 300  # seconds per cell when a submission is autograded
'''


def problem_sets(wanted: list[str] | None = None) -> dict[str, Path]:
    """``{"ps05": solutions/05_experts_on_a_rack_solutions.py, ...}``, only ``wanted`` (``05``, ``ps05``) if given."""
    sets = {f"ps{p.name[:2]}": p for p in sorted(SOLUTIONS.glob("[0-9][0-9]_*_solutions.py"))}
    if not wanted:
        return sets
    names = [w if w.startswith("ps") else f"ps{int(w):02d}" for w in wanted]
    unknown = [n for n in names if n not in sets]
    if unknown:
        raise SystemExit(f"no problem set {', '.join(unknown)}; there are {', '.join(sets)}")
    return {n: sets[n] for n in names}


def _nbgrader(cell, grade_id: str, *, solution=False, grade=False, locked=False, points=None):
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution,
            "task": False}
    if points is not None:
        meta["points"] = points
    cell.metadata["nbgrader"] = meta
    return cell


def instructor_notebook(solution: Path):
    """The nbgrader source notebook of one solutions/ notebook (see the module's docstring)."""
    import jupytext
    import nbformat

    nb = jupytext.read(solution)
    cells = []
    for cell in nb.cells:
        m = _PROBLEM.match(cell.source) if cell.cell_type == "code" else None
        if cell.cell_type == "code" and m is None and "check_answer(" in cell.source.replace("import check_answer", ""):
            raise ValueError(f"{solution.name}: a problem cell not in the expected form:\n{cell.source}")
        if m is None:
            cells.append(cell)
            continue
        key, stub = m["key"], m["stub"].strip()
        unit = stub.split("#", 1)[1].strip() if "#" in stub else "its unit"
        ident = key.replace(".", "_")
        cells.append(_nbgrader(nbformat.v4.new_code_cell(
            f"{stub}\n### BEGIN SOLUTION\n{m['work'].rstrip()}\n### END SOLUTION"), f"answer_{ident}", solution=True))
        cells.append(_nbgrader(nbformat.v4.new_code_cell(
            f"# [{key}] {POINTS} point: checked when your work is graded. Here, only that the answer is a number.\n"
            "import math\n"
            f"assert answer is not ..., \"replace the ... in the cell above with your number ({unit})\"\n"
            f"assert math.isfinite(float(answer)), \"the answer must be a finite number ({unit})\"\n"
            "### BEGIN HIDDEN TESTS\n"
            "from llmmath import check_answer\n"
            f"assert check_answer(\"{key}\", answer), \"[{key}] not right: see the checker's verdict above\"\n"
            "### END HIDDEN TESTS"), f"check_{ident}", grade=True, locked=True, points=POINTS))
    cells.insert(1, _nbgrader(nbformat.v4.new_markdown_cell(GRADED_NOTE), "graded_note", locked=True))
    nb.cells = cells
    nb.metadata = {"kernelspec": nb.metadata.get("kernelspec") or
                   {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    return nb


def instructor(course: Path, wanted=None) -> list[Path]:
    """Write ``course/source/psNN/NN_slug.ipynb`` and ``course/nbgrader_config.py``."""
    import nbformat

    written = []
    for ps, solution in problem_sets(wanted).items():
        out = course / "source" / ps / (solution.name.removesuffix("_solutions.py") + ".ipynb")
        out.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(instructor_notebook(solution), out)
        written.append(out)
    (course / "nbgrader_config.py").write_text(NBGRADER_CONFIG, encoding="utf-8")
    return written


def api(course: Path):
    """nbgrader's Python API on ``course`` (with its ``nbgrader_config.py``)."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    # nbgrader runs the `alembic` command when it creates the gradebook: find this environment's, activated or not
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course.resolve())
    config.Exchange.root = str((course / "exchange").resolve())  # (unused here: no exchange is needed)
    return NbGraderAPI(config=config)


def _ok(result: dict, what: str) -> None:
    if not result["success"]:
        raise SystemExit(f"{what} failed:\n{result.get('log', '')}\n{result.get('error', '')}")


def student_library(course: Path) -> Path:
    """``course/library/``: the llmmath package without its answer key, installable with pip."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    out = course / "library"
    shutil.rmtree(out, ignore_errors=True)
    src = ROOT / "lib" / "llmmath"
    shutil.copytree(src, out / "llmmath", ignore=lambda d, names: [
        n for n in names if n == "__pycache__" or (Path(d) == src / "data" and n == "answers")])
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (out / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling>=1.21"]\nbuild-backend = "hatchling.build"\n\n'
        f'[project]\nname = "llmmath"\nversion = {json.dumps(project["version"])}\n'
        f'description = {json.dumps(project["description"] + " (student release: no answer key)")}\n'
        f'requires-python = {json.dumps(project["requires-python"])}\n'
        f'dependencies = {json.dumps(project["dependencies"])}\n\n'
        '[tool.hatch.build.targets.wheel]\npackages = ["llmmath"]\n', encoding="utf-8")
    return out


def written_forms(value: float) -> set[str]:
    """The ways a number is written in a notebook: 169344, 169344.0, 169,344, 169{,}344, 1.69e+05, 1.28e12,
    1.28 \\times 10^{12}, 0.00396 ..."""
    v = float(value)
    forms = {repr(v), f"{v:g}"}
    if v == int(v) and abs(v) < 1e16:
        i = int(v)
        forms |= {str(i), f"{i:,}", f"{i:,}".replace(",", "{,}"), f"{i:,}".replace(",", r"\,"), f"{i:_}"}
    for digits in (2, 3, 4, 5):
        forms.add(f"{v:.{digits}g}")
        mantissa, exp = f"{v:.{digits - 1}e}".split("e")
        e = int(exp)
        forms |= {f"{mantissa}e{exp}", f"{mantissa}e{e}", f"{mantissa}E{e}"}
        if e:
            forms |= {rf"{mantissa} \times 10^{{{e}}}", f"{mantissa}×10^{e}", f"{mantissa} x 10^{e}"}
    return forms


def occurrences(text: str, value: float, min_len: int = 1) -> list[str]:
    """Where ``value`` is written in ``text`` as a whole number (not a piece of 2018 or 3.18), with some context;
    only forms of ``min_len`` characters or more (3 leaves out 8 and 18, which any problem's text may hold)."""
    hits = []
    for form in sorted(f for f in written_forms(value) if len(f) >= min_len):
        for m in re.finditer(r"(?<![\w.])" + re.escape(form) + r"(?![\w]|[.,]\d)", text):
            hits.append(text[max(0, m.start() - 40):m.end() + 40])
    return hits


def readable_text(path: Path) -> str:
    """A file's text as a search for answer values needs it: a notebook's JSON and its cells' sources, unescaped."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".ipynb":
        text += "\n".join(c["source"] if isinstance(c["source"], str) else "".join(c["source"])
                          for c in json.loads(text)["cells"])
    return text


def student(course: Path, wanted=None) -> list[Path]:
    """nbgrader's ``generate_assignment`` for each problem set (``course/release/psNN/``), and ``course/library/``."""
    if not (course / "nbgrader_config.py").exists():
        raise SystemExit(f"{course} is not an instructor release: run `python tools/release.py instructor {course}`")
    grader = api(course)
    sets = [p.name for p in sorted((course / "source").glob("ps[0-9][0-9]"))]
    if wanted:
        sets = [ps for ps in problem_sets(wanted) if ps in sets]
    for ps in sets:
        _ok(grader.generate_assignment(ps, force=True), f"generate_assignment {ps}")
    student_library(course)
    released = sorted((course / "release").glob("ps*/*.ipynb"))
    from llmmath.course.answers import answer_keys

    keys = answer_keys()
    for nb in released:
        text = readable_text(nb)
        for key in (k for k in keys if k[:2] == nb.name[:2]):
            hits = occurrences(text, keys[key]["value"], min_len=3)
            if hits:
                print(f"warning: {nb.relative_to(course)} gives away {key}'s value: ...{hits[-1]!r}...", file=sys.stderr)
    return released


def grade(course: Path, wanted=None) -> dict[tuple[str, str], tuple[float, float]]:
    """Autograde every submission of each problem set and write its feedback; ``{(ps, student): (score, max)}``."""
    grader = api(course)
    sets = sorted(p.name for p in (course / "source").glob("ps[0-9][0-9]"))
    if wanted:
        sets = [ps for ps in problem_sets(wanted) if ps in sets]
    scores = {}
    for ps in sets:
        for folder in sorted((course / "submitted").glob(f"*/{ps}")):
            who = folder.parent.name
            _ok(grader.autograde(ps, who, force=True, create=True), f"autograde {ps} {who}")
            _ok(grader.generate_feedback(ps, who, force=True), f"generate_feedback {ps} {who}")
            with grader.gradebook as gb:
                sub = gb.find_submission(ps, who)
                scores[ps, who] = (sub.score, sub.max_score)
    return scores


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=("instructor", "student", "grade"))
    ap.add_argument("course", type=Path, help="the nbgrader course folder (created by the instructor step)")
    ap.add_argument("sets", nargs="*", help="problem sets (05 or ps05); default all")
    args = ap.parse_args(argv)
    args.course.mkdir(parents=True, exist_ok=True)
    if args.step == "instructor":
        for p in instructor(args.course, args.sets):
            print("wrote", p)
    elif args.step == "student":
        for p in student(args.course, args.sets):
            print("released", p)
        print("library without the answer key:", args.course / "library", "(pip install it)")
    else:
        for (ps, who), (score, top) in grade(args.course, args.sets).items():
            print(f"{ps} {who}: {score:g} / {top:g}  feedback: {args.course / 'feedback' / who / ps}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
