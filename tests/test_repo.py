"""The repository's own promises: two README commands, CI runs the test one, the claim map is current."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def run_tool(*args):
    return subprocess.run([sys.executable, *map(str, args)], capture_output=True, text=True, cwd=ROOT)


def test_readme_has_exactly_two_commands_and_ci_runs_the_test_one():
    assert sorted(re.findall(r"<!-- command:(\w+) -->", README)) == ["lab", "test"]
    lab, test = (run_tool(ROOT / "tools" / "readme_command.py", k).stdout.strip() for k in ("lab", "test"))
    assert "pip install -e" in lab and "jupyter lab" in lab
    # at the repository's root: chapters/, exercises/ and solutions/ all reachable from the file browser
    assert lab.split("jupyter lab", 1)[1].split() in ([], ["."]), lab
    assert "pip install -e" in test and "pytest" in test
    ci = (ROOT / ".ci" / "run").read_text()
    assert "tools/readme_command.py test" in ci and "rm -rf .venv" in ci


def test_readme_claim_map_matches_the_ledger():
    r = run_tool(ROOT / "tools" / "claims_table.py", "--check")
    assert r.returncode == 0, r.stdout + r.stderr
    assert README.count("\n| ") >= 41  # header + 40 claims


def test_no_notebook_outputs_are_committed():
    files = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT).stdout.split()
    assert not [f for f in files if f.endswith(".ipynb")]


def test_every_chapter_has_solutions_and_exercises():
    # NN_slug_solutions.py and NN_slug_exercises.py: JupyterLab titles a tab with the file name, so the
    # three notebooks of a chapter open in tabs with distinct titles
    solutions = sorted((ROOT / "solutions").glob("[0-9][0-9]_*.py"))
    assert solutions
    for p in solutions:
        assert p.name.endswith("_solutions.py"), f"solutions/{p.name}: name it NN_slug_solutions.py"
        slug = p.name[:-len("_solutions.py")]
        assert (ROOT / "chapters" / f"{slug}.py").exists(), f"solutions/{p.name} has no chapter"
        assert (ROOT / "exercises" / f"{slug}_exercises.py").exists(), f"solutions/{p.name} has no generated exercise"
    exercises = {p.name for p in (ROOT / "exercises").glob("[0-9][0-9]_*.py")}
    assert exercises == {p.name.replace("_solutions.py", "_exercises.py") for p in solutions}
