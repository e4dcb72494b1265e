"""Sphinx configuration of the course book (``python tools/build_book.py`` runs it).

The source directory is the repository root and this directory is only the
configuration directory (``sphinx-build -c book . OUT``), so the chapters are
read in place: ``chapters/NN_*.py`` (and ``solutions/NN_*.py`` unless this is a
student build, ``-t student``) are Jupytext py:percent notebooks that myst-nb
reads through ``jupytext.reads``. Nothing else in the tree (``lib/``,
``tests/``, ``tools/``, config files) is a page.

Execution: ``tools/build_book.py`` executes the notebooks itself (in an order
that keeps the timing measurements apart, and with a clear report of a failing
cell) into a folder it names in ``LLMMATH_BOOK_EXECUTED``; then each notebook
page's source is replaced by its executed ``.ipynb`` (``source-read``) and
myst-nb executes nothing. Without that variable (a plain ``sphinx-build -c book
. OUT``) myst-nb executes every notebook itself, as before.

Everything the pages load at view time is served from ``_static``: MathJax 3,
require.js and the Jupyter widgets HTML manager are vendored from npm into
``build/book-vendor`` by ``tools/build_book.py`` (no CDN at build or view time).
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tools"))

STUDENT = tags.has("student")  # noqa: F821  (``tags`` is injected by Sphinx)
VENDOR = Path(os.environ.get("LLMMATH_BOOK_VENDOR", ROOT / "build" / "book-vendor"))
EXECUTED = os.environ.get("LLMMATH_BOOK_EXECUTED")  # executed notebooks: <EXECUTED>/<docname>.ipynb

project = "llmmath — the math of LLM training and serving"
author = "the llmmath authors"
copyright = "the llmmath authors, MIT licence"

extensions = ["myst_nb"]
root_doc = "book/index"

# Only these are pages; everything else under the repository root is ignored.
include_patterns = ["book/*.md", "book/_generated/*.md", "chapters/[0-9][0-9]_*.py"]
if not STUDENT:
    include_patterns.append("solutions/[0-9][0-9]_*.py")
exclude_patterns = ["build", ".venv", "**/.ipynb_checkpoints", "book/conf.py"]

# --- notebooks: Jupytext .py (percent) files, executed at build time ------------------------
nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "py:percent"}]}
nb_execution_mode = "force"
if EXECUTED:  # the page's source is its executed notebook (``_executed_notebook``), JSON
    nb_custom_formats = {".py": ["jupytext.reads", {"fmt": "ipynb"}]}
    nb_execution_mode = "off"
nb_execution_timeout = 600
nb_execution_raise_on_error = True  # a chapter that fails to run fails the build
nb_execution_show_tb = True
nb_merge_streams = True
nb_output_stderr = "remove-warn"
# The widget snapshot (the state nbclient saves after execution) is rendered by the
# Jupyter widgets HTML manager; both it and require.js are served from _static.
nb_ipywidgets_js = {
    "require.min.js": {},
    "html-manager/embed-amd.js": {},
}
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header"]

# --- math: MathJax 3 from npm, served locally ---------------------------------------------
mathjax_path = "mathjax/tex-mml-chtml.js"
mathjax3_config = {"tex": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]]},
                   "options": {"processHtmlClass": "tex2jax_process|mathjax_process|math|output_area"}}
mathjax4_config = None

# --- HTML --------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "llmmath" + (" (student edition)" if STUDENT else "")
html_static_path = [str(VENDOR), str(HERE / "_static")]
# after MathJax (priority 500): lets the widget manager typeset labels through MathJax 3
html_js_files = [("mathjax2-shim.js", {"defer": "defer", "priority": 900})]
html_css_files = ["llmmath.css"]  # code lines wrap; figures fit the column
html_extra_path = [str(HERE / "_extra")]
html_theme_options = {
    "show_toc_level": 2,
    "home_page_in_toc": True,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "navigation_with_keys": False,
}
html_last_updated_fmt = None
html_copy_source = False
html_show_sourcelink = False


def _solutions_toc(app, docname, source):
    """In ``book/index`` replace the solutions marker by their toctree (none in a student build)."""
    if docname != root_doc:
        return
    toc = "" if STUDENT else (
        "```{toctree}\n:caption: Worked solutions\n:glob:\n:maxdepth: 1\n\n/solutions/*\n```\n")
    source[0] = source[0].replace("<!-- solutions-toc -->", toc)


def _executed_notebook(app, docname, source):
    """With ``LLMMATH_BOOK_EXECUTED``, a notebook page's source is the notebook tools/build_book.py executed."""
    if not EXECUTED or not docname.startswith(("chapters/", "solutions/")):
        return
    path = Path(EXECUTED) / f"{docname}.ipynb"
    if not path.is_file():
        raise RuntimeError(f"{docname}: no executed notebook {path} (tools/build_book.py executes the pages "
                           "before Sphinx; unset LLMMATH_BOOK_EXECUTED to let myst-nb execute them)")
    source[0] = path.read_text(encoding="utf-8")


_EXERCISES_TITLE = re.compile(r"^(# Chapter \d+ \N{EM DASH} )Exercises(: )", re.M)


def solution_title(text: str) -> str:
    """A worked-solutions page's title says so: its first heading reads "Chapter N — Worked solutions: …".

    ``solutions/NN_*.py`` open with the title their generated exercises keep ("Chapter N —
    Exercises: …"); in the book they are listed under "Worked solutions", so the page is retitled
    there (the executed notebook's JSON, or the Jupytext text when myst-nb executes)."""
    if text.lstrip().startswith("{"):
        import json

        nb = json.loads(text)
        for cell in nb.get("cells", []):
            if cell.get("cell_type") == "markdown":
                src = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
                cell["source"] = _EXERCISES_TITLE.sub(r"\1Worked solutions\2", src, count=1)
                break
        return json.dumps(nb, ensure_ascii=False)
    return re.sub(r"^(# # Chapter \d+ \N{EM DASH} )Exercises(: )", r"\1Worked solutions\2", text, count=1, flags=re.M)


def _solutions_retitled(app, docname, source):
    if docname.startswith("solutions/"):
        source[0] = solution_title(source[0])


def _claims_page(app):
    import claims_page  # tools/claims_page.py: generated from llmmath.course.claims at every build
    import lectures     # tools/lectures.py: the lecturer's guide, from book/lectures/*.toml

    claims_page.write(HERE / "_generated" / "claims.md")
    lectures.write_page(HERE / "_generated" / "lectures.md")


def setup(app):
    app.connect("builder-inited", _claims_page)
    app.connect("source-read", _solutions_toc)
    app.connect("source-read", _executed_notebook)
    app.connect("source-read", _solutions_retitled)  # after the executed notebook replaced the source
