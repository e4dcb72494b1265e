"""Speaker notes and lecture plans (``book/lectures/NN_slug.toml``, ``tools/lectures.py``).

Every chapter has a notes file; every slide of its deck (a cell whose ``slideshow`` metadata is
``slide`` or ``subslide``, keyed by its first non-empty line) has exactly one entry, in deck order, and
no entry names anything else, so a renamed heading fails here with the file and the key; every plan's
slides fit its minutes (at least 75 % of them); every slide says something. The notes reach a deck:
chapter 4 is cut into slides and exported with nbconvert's SlidesExporter as ``tools/build_slides.py``
does (without executing it), and each slide's notes are in an ``<aside class="notes">`` of its own
slide. The lecturer's guide page is generated from the same files.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

pytest.importorskip("jupytext", reason="jupytext is needed (the test, book or lab extra)")
nbformat = pytest.importorskip("nbformat")
import lectures  # noqa: E402

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
WITH_NOTES = [c for c in CHAPTERS if lectures.notes_path(c).is_file()]


def test_the_course_has_thirteen_chapters_and_notes_for_the_first_six():
    assert [c.name[:2] for c in CHAPTERS] == [f"{i:02d}" for i in range(13)]
    assert {c.name[:2] for c in WITH_NOTES} >= {"00", "01", "02", "03", "04", "05"}


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_every_chapter_has_a_notes_file(chapter):
    path = lectures.notes_path(chapter)
    assert path.is_file(), f"no speaker notes for {chapter.name}: python tools/lectures.py --outline {chapter} > {path}"


@pytest.mark.parametrize("chapter", WITH_NOTES, ids=[c.stem for c in WITH_NOTES])
def test_notes_cover_every_slide_and_every_plan_fits(chapter):
    lec = lectures.load(chapter)  # raises NotesError naming the file, the key and what is allowed
    keys = lectures.slide_keys(chapter)
    assert [s.key for s in lec.slides] == keys
    assert set(lec.plans) >= {"60", "90"}
    for plan in lec.plans.values():
        used = plan.slide_minutes(lec)
        assert lectures.MIN_PLAN_SHARE * plan.minutes <= used <= plan.minutes, (plan.name, used)
        assert plan.audience
    for s in lec.slides:
        assert s.say.strip() and 0 < s.minutes <= lectures.MAX_SLIDE_MINUTES, s.key
    assert lec.audience.strip()
    assert list(lectures.notes_for(chapter)) == lectures.slide_ids(keys)


# --- the checks, on a small chapter of their own ----------------------------------------------------------------

CHAPTER = """\
# %% [markdown] slideshow={"slide_type": "slide"}
# # Chapter 99 — A test

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 1 (1:00) — one

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes()

# %% [markdown] slideshow={"slide_type": "slide"}
# ## Claim 2 (2:00) — two

# %% slideshow={"slide_type": "subslide"}
fig, ax = plots.new_axes()
"""

KEYS = ["# Chapter 99 — A test", "## Claim 1 (1:00) — one", "fig, ax = plots.new_axes()",
        "## Claim 2 (2:00) — two", "fig, ax = plots.new_axes()"]


def _notes(keys=KEYS, minutes=(15, 15, 15, 15, 15), skip60=("fig, ax = plots.new_axes()",), say="Say it."):
    slides = "".join(f'[[slides]]\nkey = {lectures._toml_string(k)}\nminutes = {m}\nsay = "{say}"\nask = ""\n\n'
                     for k, m in zip(keys, minutes))
    skip = ", ".join(lectures._toml_string(k) for k in skip60)
    return (f'chapter = "99_test"\naudience = "testers"\n\n[plans.60]\nminutes = 60\nfor = "short"\nskip = [{skip}]\n\n'
            f'[plans.90]\nminutes = 90\nfor = "long"\nskip = []\n\n{slides}')


def _load(tmp_path, notes: str):
    chapter = tmp_path / "99_test.py"
    chapter.write_text(CHAPTER, encoding="utf-8")
    path = tmp_path / "99_test.toml"
    path.write_text(notes, encoding="utf-8")
    return lectures.load(chapter, path)


def test_a_good_notes_file_loads_and_repeated_keys_are_matched_in_deck_order(tmp_path):
    lec = _load(tmp_path, _notes())
    assert [s.id for s in lec.slides] == [KEYS[0], KEYS[1], KEYS[2] + " @1", KEYS[3], KEYS[2] + " @2"]
    assert lec.plans["60"].slide_minutes(lec) == 45 and lec.plans["90"].slide_minutes(lec) == 75
    one = _load(tmp_path, _notes(skip60=("fig, ax = plots.new_axes() @2",)))
    assert one.plans["60"].slide_minutes(one) == 60 and one.plans["60"].skipped == {KEYS[2] + " @2"}


def test_a_renamed_heading_fails_naming_the_file_and_the_key(tmp_path):
    stale = [*KEYS]
    stale[3] = "## Claim 2 (2:00) — deux"
    with pytest.raises(lectures.NotesError) as e:
        _load(tmp_path, _notes(keys=stale))
    msg = str(e.value)
    assert "99_test.toml" in msg
    assert "slide '## Claim 2 (2:00) — deux' is not a slide of 99_test" in msg
    assert "slide '## Claim 2 (2:00) — two' of 99_test has no [[slides]] entry; did you mean '## Claim 2 (2:00) — deux'?" in msg


def test_missing_extra_and_misordered_entries_fail(tmp_path):
    with pytest.raises(lectures.NotesError, match=r"'fig, ax = plots.new_axes\(\)': 1 \[\[slides\]\] entries, but"):
        _load(tmp_path, _notes(keys=KEYS[:4], minutes=(15, 15, 15, 15)))
    with pytest.raises(lectures.NotesError, match="not in deck order: entry 2 is '## Claim 2"):
        _load(tmp_path, _notes(keys=[KEYS[0], KEYS[3], KEYS[2], KEYS[1], KEYS[4]]))


def test_a_plan_that_does_not_fit_its_minutes_fails(tmp_path):
    with pytest.raises(lectures.NotesError, match=r"\[plans.60\]: its slides take 75 minutes, but a 60-minute plan needs 45-60"):
        _load(tmp_path, _notes(skip60=()))
    with pytest.raises(lectures.NotesError, match=r"\[plans.90\]: its slides take 30 minutes"):
        _load(tmp_path, _notes(minutes=(5, 5, 5, 10, 5), skip60=()))
    with pytest.raises(lectures.NotesError, match=r"\[plans.60\] skips 'Claim 3', which is not a slide"):
        _load(tmp_path, _notes(skip60=("Claim 3",)))


def test_empty_say_bad_minutes_and_unknown_fields_fail(tmp_path):
    with pytest.raises(lectures.NotesError, match="say is empty"):
        _load(tmp_path, _notes(say=" "))
    with pytest.raises(lectures.NotesError, match="minutes must be a number of minutes above 0 and at most 15"):
        _load(tmp_path, _notes(minutes=(15, 15, 15, 15, 30)))
    with pytest.raises(lectures.NotesError, match=r"unknown field 'notes' \(allowed: ask, key, minutes, say\)"):
        _load(tmp_path, _notes().replace('ask = ""', 'notes = ""', 1))
    with pytest.raises(lectures.NotesError, match="not valid TOML"):
        _load(tmp_path, _notes() + "\n[[slides]\n")


# --- the notes in a deck -----------------------------------------------------------------------------------------

def _md(text, kind=None):
    c = nbformat.v4.new_markdown_cell(text)
    if kind:
        c.metadata["slideshow"] = {"slide_type": kind}
    return c


def test_notes_follow_the_first_piece_of_a_slide_that_pagination_cuts():
    import paginate_slides

    long = "## A long slide\n\n" + "\n\n".join(f"Paragraph {i}. " + "words " * 150 for i in range(8))
    nb = nbformat.v4.new_notebook()
    nb.cells = [_md("# Title", "slide"), _md(long, "slide"), _md("## Next", "slide")]
    notes = {("# Title", 1): "title notes", ("## A long slide", 1): "long notes", ("## Next", 1): "next notes"}
    deck = lectures.insert_notes(paginate_slides.paginate(lectures.mark_notes(nb, notes)), notes)
    kinds = [c.metadata.get("slideshow", {}).get("slide_type") for c in deck.cells]
    sources = [c.source for c in deck.cells]
    first = sources.index("long notes")
    assert kinds[first] == "notes" and deck.cells[first - 1].source.startswith("## A long slide")
    cut = kinds.index("subslide")  # the long slide was cut: its second piece
    assert first < cut  # the notes are on its first piece ...
    assert kinds[cut + 1] == "notes" and sources[cut + 1] == "*Continued: screen 2 of this slide.*\n\nlong notes"
    assert sum(src.endswith("title notes") for src in sources) == 1  # ... and repeated on the later ones only
    assert sum(src == "next notes" for src in sources) == 1
    assert not any(lectures.MARK in c.metadata for c in deck.cells)


def test_notes_reach_a_built_deck_as_reveal_speaker_notes():
    """Chapter 4, read with Jupytext (not executed), cut and exported as tools/build_slides.py does."""
    import jupytext

    import build_slides

    chapter = ROOT / "chapters" / "04_schedules.py"
    lec = lectures.load(chapter)
    nb = nbformat.from_dict(jupytext.read(chapter))
    body = build_slides.export_html(build_slides.deck_notebook(nb, chapter), chapter.stem)
    def text(h):
        return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", h)).split())

    asides = [text(a) for a in re.findall(r'<aside class="notes">(.*?)</aside>', body, flags=re.S)]
    said = [a for a in asides if not a.startswith("Continued: screen")]  # a later screen repeats its slide's
    assert len(said) == len(lec.slides)
    for s in lec.slides:
        first = " ".join(s.say.split())[:70]
        assert any(first in t for t in said), (s.key, first)
        assert any(f"{s.minutes:g} min" in t for t in said)
    # the notes of claim 13's slide sit in that slide's <section>, after its heading
    sections = body.split("<section")
    claim13 = next(sec for sec in sections if "Claim 13 (24:10)" in sec)
    slide = next(s for s in lec.slides if s.key.startswith("## Claim 13"))
    assert " ".join(slide.say.split())[:70] in text(claim13)
    assert "Skipped in:" in " ".join(said)  # a slide some plan skips says so


def test_the_lecturers_guide_lists_every_chapter_with_notes(tmp_path):
    page = lectures.write_page(tmp_path / "lectures.md").read_text(encoding="utf-8")
    assert page.startswith("# The lecturer's guide")
    for ch in WITH_NOTES:
        lec = lectures.load(ch)
        assert f"{{doc}}`/chapters/{ch.stem}`" in page
        for p in lec.plans.values():
            assert f"| **{p.name}** ({p.minutes:g} min) | " in page
    assert "_generated/lectures" in (ROOT / "book" / "index.md").read_text(encoding="utf-8")
    assert "lectures.write_page" in (ROOT / "tools" / "build_book.py").read_text(encoding="utf-8")


def test_the_command_line_checks_every_notes_file(capsys):
    assert lectures.main([]) == 0
    out = capsys.readouterr().out
    assert all(lectures.notes_path(c).name in out for c in WITH_NOTES)
