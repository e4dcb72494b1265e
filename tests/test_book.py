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


@pytest.mark.parametrize("name", ["00_rooflines", "01_batch_size", "05_experts_on_a_rack", "06_pipelining"])
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
