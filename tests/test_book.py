"""The book, the slides and the claims index: fast checks, no Sphinx build and no browser.

(The built site is checked by ``tools/build_book.py`` and ``tools/build_slides.py``
themselves, which fail on any CDN URL; ``tools/check_site.py`` opens a built page
offline in Chromium. ``test_built_sites_name_no_cdn`` repeats the scan on
whatever is in ``build/``.)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "lib"))

import book_assets  # noqa: E402
import claims_page  # noqa: E402
import mark_slides  # noqa: E402
from llmmath import claims  # noqa: E402


def test_claims_index_lists_all_40_claims_with_their_verdicts():
    page = claims_page.page()
    rows = [ln for ln in page.splitlines() if re.match(r"\| \d+ \|", ln)]
    assert len(rows) == len(claims.all_claims()) == 40
    for c, row in zip(claims.all_claims(), rows):
        cells = [x.strip() for x in row.strip("|").split(" | ")]
        assert cells[0] == str(c.id) and cells[1] == c.timestamp
        assert cells[4] == f"**{claims.check(c.id, quiet=True).verdict}**"
        assert cells[5] == c.status
        chapter = claims_page.CHAPTERS[c.chapter]
        if (ROOT / "chapters" / f"{chapter}.py").exists():
            assert f"</chapters/{chapter}>" in cells[2]
        else:
            assert cells[2] == f"{c.chapter} (in progress)"


def test_cdn_pattern_catches_cdns_and_nothing_else():
    hits = ["https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@1/dist/embed-amd.js",
            "//cdnjs.cloudflare.com/ajax/libs/require.js/2.3.4/require.min.js", "https://unpkg.com/reveal.js@4.0.2",
            "https://fonts.googleapis.com/css?family=Lato", "http://code.jquery.com.cdn.example.org/x.js"]
    misses = ["https://github.com/jupyter-widgets/ipywidgets", "http://www.w3.org/2000/svg",
              "_static/mathjax/tex-mml-chtml.js", "data:image/png;base64,iVBOR//elP8v3335cdnXYZ//AAA"]
    for url in hits:
        assert book_assets.CDN_PATTERN.search(f'src="{url}"'), url
    for url in misses:
        assert not book_assets.CDN_PATTERN.search(f'src="{url}"'), url


def _conf(student: bool) -> dict:
    tags = type("Tags", (), {"has": lambda self, t: student and t == "student"})()
    ns = {"tags": tags, "__file__": str(ROOT / "book" / "conf.py")}
    exec(compile((ROOT / "book" / "conf.py").read_text(), "book/conf.py", "exec"), ns)
    return ns


def test_book_config_is_local_and_the_student_edition_has_no_solutions():
    full, student = _conf(False), _conf(True)
    for conf in (full, student):
        assert not re.match(r"(https?:)?//", conf["mathjax_path"])
        assert all(not re.match(r"(https?:)?//", k) and not any("http" in str(v) for v in a.values())
                   for k, a in conf["nb_ipywidgets_js"].items())
        assert "chapters/[0-9][0-9]_*.py" in conf["include_patterns"]
    assert any(p.startswith("solutions/") for p in full["include_patterns"])
    assert not any(p.startswith("solutions/") for p in student["include_patterns"])


def test_slide_templates_and_book_sources_name_no_url_to_load():
    for path in [*(ROOT / "book" / "slides").rglob("*.j2"), ROOT / "book" / "index.md", ROOT / "book" / "conf.py",
                 *(ROOT / "book" / "_static").glob("*.js")]:
        assert not book_assets.CDN_PATTERN.search(path.read_text()), path


@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "chapters").glob("[0-9][0-9]_*.py")))
def test_chapters_mark_their_slides(name):
    text = (ROOT / "chapters" / f"{name}.py").read_text(encoding="utf-8")
    assert text.startswith("# ---") and '# %% [markdown] slideshow={"slide_type": "slide"}\n# # ' in text
    assert text.count('slideshow={"slide_type": "slide"}') >= 4
    assert mark_slides.mark(text) == text  # nothing left unmarked by the rule


def test_built_sites_name_no_cdn():
    sites = [d for d in (ROOT / "build" / "book", ROOT / "build" / "book-student", ROOT / "build" / "slides")
             if d.is_dir()]
    if not sites:
        pytest.skip("nothing built (python tools/build_book.py; python tools/build_slides.py)")
    for site in sites:
        assert not book_assets.cdn_references(site), site


# --- tools/build_book.py's execution step: order, failure report, quiet output -------------------------

_HEADER = ("# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3 (ipykernel)\n#     language: python\n"
           "#     name: python3\n# ---\n\n")


def _execution_deps():
    for mod in ("jupytext", "nbclient", "nbformat", "ipykernel"):
        pytest.importorskip(mod, reason=f"{mod} is needed to execute notebooks (the book or test extra)")
    import build_book

    return build_book


def test_notebooks_that_measure_time_are_found_and_run_first_and_alone(tmp_path):
    build_book = _execution_deps()
    texts = {"01_calc.py": "# %%\nx = 1 + 1\n",
             "02_timed.py": "# %%\nfrom llmmath import kernels\nt = kernels.time_fn(lambda: None)\n",
             "03_clock.py": "# %% [markdown]\n# kernels are discussed here\n\n# %%\nimport time\nt = time.perf_counter()\n"}
    for name, text in texts.items():
        (tmp_path / name).write_text(_HEADER + text)
    jobs = build_book.plan(sorted(tmp_path.glob("*.py")), tmp_path / "out")
    assert [(j.src.name, j.timing) for j in jobs] == [("02_timed.py", True), ("03_clock.py", True),
                                                      ("01_calc.py", False)]
    assert jobs[0].dest == tmp_path / "out" / tmp_path.name / "02_timed.ipynb"
    assert not build_book.measures_time(_HEADER + "# %% [markdown]\n# measured with time_fn\n\n# %%\nx = 1\n")


def test_a_failing_notebook_is_reported_with_its_cell_line_and_message(tmp_path):
    """The console names the notebook, the failing cell (number, .py line, source) and the assertion message."""
    build_book = _execution_deps()
    good = tmp_path / "01_good.py"
    good.write_text(_HEADER + "# %%\nimport sys\nprint('to the terminal', file=sys.__stderr__)\n")
    bad = tmp_path / "02_bad.py"
    bad.write_text(_HEADER + "# %% [markdown]\n# # A tiny notebook\n\n# %%\nx = 1 + 1\nprint(x)\n\n"
                   "# %%\nratio = x / 4\nassert ratio > 1, f\"ratio {ratio} is too small: mismeasured\"\n"
                   "print('never')\n")
    jobs = build_book.plan([good, bad], tmp_path / "out")
    lines: list[str] = []
    results = build_book.execute_all(jobs, n_jobs=2, echo=lines.append)
    ok, failed = results
    assert ok.ok and not failed.ok
    assert any(ln.startswith("[") and "01_good.py" in ln and " ok " in ln for ln in lines), lines
    assert any("02_bad.py" in ln and "FAILED" in ln for ln in lines), lines
    assert any("AssertionError: ratio 0.5 is too small: mismeasured" in ln for ln in lines), lines
    # the kernel's terminal output goes to a log, counted on the progress line; the harmless warning is dropped
    assert ok.stderr == ["to the terminal"], ok.stderr
    assert not any("without encryption" in ln for r in results for ln in r.stderr)

    assert (failed.cell, failed.n_cells, failed.cell_line, failed.line) == (3, 3, 17, 18)
    report = build_book.format_failure(failed)
    first, *rest = report.splitlines()
    assert first.startswith("FAILED ") and "02_bad.py:18 (cell 3 of 3, from line 17)" in first, report
    assert "    | ratio = x / 4" in rest and any("assert ratio > 1" in ln for ln in rest), report
    assert rest.count("    AssertionError: ratio 0.5 is too small: mismeasured") == 1, report
    assert Path(failed.dest).is_file() and Path(ok.dest).is_file()  # executed (partly) for a look


def test_a_failed_measured_check_warns_on_its_page_and_the_build_goes_on(tmp_path, monkeypatch):
    """In warn mode (the book build's default) a measured check that fails is a warning box and the notebook
    runs on; a plain assert still fails it; in raise mode (--strict) the measured check fails it too."""
    build_book = _execution_deps()
    measured_nb = tmp_path / "01_measured.py"
    measured_nb.write_text(_HEADER + "# %%\nfrom llmmath import measured\n"
                           "measured.check('the fall', lambda m: [measured.Fact('fall', m, low=2)], 1.2)\n\n"
                           "# %%\nprint('ran on')\n")
    claim_nb = tmp_path / "02_claim.py"
    claim_nb.write_text(_HEADER + "# %%\nassert 1 + 1 == 3, 'a claim check: the math is wrong'\n")
    monkeypatch.setenv("LLMMATH_MEASURED_CHECKS", "warn")
    monkeypatch.delenv("LLMMATH_MEASURED_LOG", raising=False)   # a made-up check: not in a flake check's log
    lines: list[str] = []
    warned, claim = build_book.execute_all(build_book.plan([measured_nb, claim_nb], tmp_path / "w"), n_jobs=1,
                                           echo=lines.append)
    assert warned.ok and not claim.ok and "the math is wrong" in claim.error
    (cell, line, first), = warned.warnings
    assert (cell, line) == (1, 10) and first.startswith("MEASURED CHECK DID NOT HOLD: the fall"), warned.warnings
    assert any("01_measured.py" in ln and "1 measured check(s) did not hold" in ln for ln in lines), lines
    import nbformat
    nb = nbformat.read(warned.dest, as_version=4)
    html = [o["data"]["text/html"] for o in nb.cells[0].outputs if "text/html" in o.get("data", {})]
    assert html and "llmmath-measured-warning" in html[0] and "fall: 1.2x" in html[0]
    assert "ran on" in "".join(o.get("text", "") for o in nb.cells[1].outputs)
    summary = build_book.format_warnings([warned, claim])
    assert "1 measured check(s) did not hold" in summary and "01_measured.py:10 (cell 1)" in summary

    monkeypatch.delenv("LLMMATH_MEASURED_CHECKS")           # the build's default is warn, for its kernels only
    default, = build_book.execute_all(build_book.plan([measured_nb], tmp_path / "d"), n_jobs=1, echo=lambda _: None)
    assert default.ok and default.warnings
    import os
    assert "LLMMATH_MEASURED_CHECKS" not in os.environ     # this process (a pytest worker running chapters next) raises

    monkeypatch.setenv("LLMMATH_MEASURED_CHECKS", "raise")
    strict, = build_book.execute_all(build_book.plan([measured_nb], tmp_path / "s"), n_jobs=1, echo=lambda _: None)
    assert not strict.ok and strict.error.startswith("MeasuredCheckFailed: MEASURED CHECK DID NOT HOLD")
    assert build_book.format_warnings([strict]) == ""


def test_book_config_renders_the_notebooks_the_build_executed(tmp_path, monkeypatch):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "00_x.ipynb").write_text('{"cells": [], "executed": true}')
    monkeypatch.setenv("LLMMATH_BOOK_EXECUTED", str(tmp_path))
    conf = _conf(False)
    assert conf["nb_execution_mode"] == "off" and conf["nb_custom_formats"][".py"][1] == {"fmt": "ipynb"}
    source = ["# %%\nx = 1\n"]
    conf["_executed_notebook"](None, "chapters/00_x", source)
    assert source == ['{"cells": [], "executed": true}']
    with pytest.raises(RuntimeError, match="no executed notebook"):
        conf["_executed_notebook"](None, "chapters/01_missing", source)
    index = ["<!-- solutions-toc -->"]
    conf["_executed_notebook"](None, "book/index", index)  # not a notebook: left alone
    assert index == ["<!-- solutions-toc -->"]
    monkeypatch.delenv("LLMMATH_BOOK_EXECUTED")
    assert _conf(False)["nb_execution_mode"] == "force"  # a plain sphinx-build executes with myst-nb


# --- tools/build_pdf.py's result: build/llmmath.pdf -------------------------------------------------------

def test_built_pdf_holds_the_book():
    """When build/llmmath.pdf is there: over 50 pages, a contents page, the chapters and the claims index in
    its outline, their text extractable, page numbers stamped, and the plots in it as images."""
    pdf = ROOT / "build" / "llmmath.pdf"
    if not pdf.is_file():
        pytest.skip("no PDF built (python tools/build_pdf.py; it builds the book first if needed)")
    pypdf = pytest.importorskip("pypdf", reason="pypdf reads the PDF (the book extra)")
    reader = pypdf.PdfReader(str(pdf))
    n = len(reader.pages)
    assert n > 50, n

    starts = {}

    def walk(items):
        for item in items:
            if isinstance(item, list):
                walk(item)
            else:
                starts[item.title] = reader.get_destination_page_number(item)

    walk(reader.outline)
    assert {"Chapters", "Reference"} <= set(starts), sorted(starts)
    chapter1 = next(t for t in starts if t.startswith("Chapter 1 — Batch size"))
    claims_index = next(t for t in starts if "claims index" in t.lower())

    front = reader.pages[0].extract_text()
    assert "Contents" in front and chapter1.split(":")[0] in front, front[:500]
    first = reader.pages[starts[chapter1]].extract_text()
    assert chapter1.split(":")[0] in first, first[:500]
    assert f"{starts[chapter1] + 1} / {n}" in first, first[-200:]  # the stamped page number
    claims_text = "".join(reader.pages[k].extract_text() for k in range(starts[claims_index], min(n, starts[claims_index] + 3)))
    assert "claims index" in claims_text.lower() and "1:52" in claims_text, claims_text[:500]

    images = 0
    for page in reader.pages:
        resources = page.get("/Resources")
        xobjects = resources.get_object().get("/XObject") if resources is not None else None
        if xobjects is not None:
            images += sum(1 for x in xobjects.get_object().values() if x.get_object().get("/Subtype") == "/Image")
    assert images >= 20, f"only {images} images in the PDF (the chapters' plots are missing?)"


def test_worked_solutions_pages_are_titled_worked_solutions():
    """The book lists solutions/ under "Worked solutions"; their pages must not read "Exercises" (issue 15)."""
    import json

    conf = _conf(False)
    text = (ROOT / "solutions" / "01_batch_size_solutions.py").read_text(encoding="utf-8")
    assert "# # Chapter 1 — Exercises: batch size" in text
    assert conf["solution_title"](text).count("# # Chapter 1 — Worked solutions: batch size") == 1
    nb = {"cells": [{"cell_type": "markdown", "source": ["# Chapter 1 — Exercises: batch size\n", "Seven problems"]},
                    {"cell_type": "markdown", "source": "# Chapter 1 — Exercises: again"}]}
    out = json.loads(conf["solution_title"](json.dumps(nb)))
    assert out["cells"][0]["source"] == "# Chapter 1 — Worked solutions: batch size\nSeven problems"
    assert out["cells"][1]["source"] == "# Chapter 1 — Exercises: again"
    source = [json.dumps(nb)]
    conf["_solutions_retitled"](None, "chapters/01_batch_size", source)
    assert source == [json.dumps(nb)]  # chapters are left alone
    assert "llmmath.css" in conf["html_css_files"]
    css = (ROOT / "book" / "_static" / "llmmath.css").read_text()
    assert "pre-wrap" in css  # long code lines wrap in the book


def test_every_widget_snapshot_is_labelled_with_the_command_that_opens_it_live():
    import nbformat
    import build_book

    view = {build_book.WIDGET_VIEW: {"model_id": "abc", "version_major": 2, "version_minor": 0}}
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output("stream", name="stdout", text="1\n")]),
        nbformat.v4.new_code_cell("explorer.widget", outputs=[nbformat.v4.new_output("execute_result", data=view)]),
    ])
    assert build_book.label_widget_snapshots(nb, ROOT / "chapters" / "05_experts_on_a_rack.py") == 1
    plain, widget = nb.cells
    assert len(plain.outputs) == 1                                   # no widget, no label
    label, kept = widget.outputs
    assert build_book.WIDGET_VIEW in kept["data"]                    # the widget itself stays
    assert "Snapshot" in label["data"]["text/html"] and "chapters/05_experts_on_a_rack.py" in label["data"]["text/html"]
    assert "jupyter lab" in label["data"]["text/html"]
    css = (ROOT / "book" / "_static" / "llmmath.css").read_text()
    # the label's style, and text outputs that wrap at the column instead of running past it
    assert "div.llmmath-snapshot-note" in css
    assert re.search(r"div\.cell_output[^{]*pre[^{]*\{[^}]*white-space:\s*pre-wrap", css)
