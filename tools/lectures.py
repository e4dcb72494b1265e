"""Speaker notes and lecture plans for the slide decks: ``book/lectures/NN_slug.toml``, one file per chapter.

    python tools/lectures.py                      # check every notes file against its chapter's slides
    python tools/lectures.py chapters/05_experts_on_a_rack.py      # check one
    python tools/lectures.py --outline chapters/06_pipelining.py   # a notes file to fill in: every slide key
    python tools/lectures.py --page               # write the lecturer's guide, book/_generated/lectures.md
    python tools/lectures.py --page --stdout      # print it instead

A notes file names its chapter, says who the lecture is for, gives lecture plans (at least a 60- and
a 90-minute one: ``[plans.60]``, ``[plans.90]``, each with its ``minutes``, the audience it is ``for``
and the slides it ``skip``\\s) and, for every slide of the deck in deck order, a ``[[slides]]``
entry: its ``key``, the ``minutes`` to spend on it, what to ``say`` and a question to ``ask`` the room
(with the expected answer in brackets; may be empty)::

    chapter = "05_experts_on_a_rack"
    audience = "..."
    [plans.60]
    minutes = 60
    for = "newcomers to MoE"
    skip = ["### Measured: real collectives and the alpha–beta model"]
    [[slides]]
    key = "## Claim 17 (39:35) — scale-out is ~8× slower than scale-up"
    minutes = 3.0
    say = "..."
    ask = "..."

A slide's **key** is the first non-empty line of the cell that starts it (``slideshow`` metadata
``slide`` or ``subslide``, read with Jupytext): usually its heading, ``## Claim 17 ...``. A renamed
heading therefore fails :func:`load` (and ``tests/test_lectures.py``), naming the file and the key.
Two figures may open with the same line (``fig, ax = plots.new_axes(width=6.5)``): the entries are
matched to the slides in deck order, and a plan's ``skip`` names the n-th of them ``"<key> @n"`` (the
bare key skips all of them); :func:`notes_for` gives such slides the same ids.
A plan's slides (those it does not skip) must take at most its minutes and at least
:data:`MIN_PLAN_SHARE` of them: the rest is for questions. One slide takes at most
:data:`MAX_SLIDE_MINUTES` (a slide is a section of the chapter: with its sub-slides it can fill several
screens, a live explorer or a room exercise).

``tools/build_slides.py`` puts each slide's notes into its deck as reveal.js speaker notes
(:func:`mark_notes` before the pagination, :func:`insert_notes` after it: on the slide's first screen,
and repeated, marked "continued", on the screens the pagination adds; ``s`` in a deck opens the
speaker view), and ``tools/build_book.py`` writes the lecturer's guide page (:func:`write_page`).
"""

from __future__ import annotations

import argparse
import copy
import difflib
import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTES_DIR = ROOT / "book" / "lectures"
PAGE = ROOT / "book" / "_generated" / "lectures.md"
REQUIRED_PLANS = ("60", "90")
MIN_PLAN_SHARE = 0.75  # a plan's slides take at least this share of its minutes (the rest: questions)
MAX_SLIDE_MINUTES = 15.0  # one slide (with its sub-slides, a live explorer, a room exercise) at most
MARK = "llmmath_notes"  # cell metadata, between mark_notes and insert_notes: the keys whose notes follow it
SLIDE_CODE = "slide-code"  # (tools/paginate_slides.py's tag: a code cell shown with its code)

_TOP = {"chapter", "audience", "plans", "slides"}
_PLAN = {"minutes", "for", "skip"}
_SLIDE = {"key", "minutes", "say", "ask"}


class NotesError(ValueError):
    """A notes file that does not match its chapter or the format; the message names the file and the key."""


@dataclass
class Slide:
    key: str
    minutes: float
    say: str
    ask: str = ""
    id: str = ""  # the key, or "<key> @n" for the n-th of several slides that share it (slide_ids)


@dataclass
class Plan:
    name: str
    minutes: float
    audience: str
    skip: list[str] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)  # the ids of the slides it skips

    def slides(self, lecture: "Lecture") -> list[Slide]:
        return [s for s in lecture.slides if s.id not in self.skipped]

    def slide_minutes(self, lecture: "Lecture") -> float:
        return sum(s.minutes for s in self.slides(lecture))


@dataclass
class Lecture:
    chapter: str
    audience: str
    plans: dict[str, Plan]
    slides: list[Slide]
    path: Path

    def by_id(self) -> dict[str, Slide]:
        return {s.id: s for s in self.slides}

    def skipped_in(self, slide: Slide) -> list[Plan]:
        return [p for p in self.plans.values() if slide.id in p.skipped]

    @property
    def minutes(self) -> float:
        return sum(s.minutes for s in self.slides)


def _rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def notes_path(chapter_path: str | Path) -> Path:
    """Where a chapter's notes live: ``book/lectures/<chapter stem>.toml``."""
    return NOTES_DIR / f"{Path(chapter_path).stem}.toml"


def cell_key(cell) -> str:
    """A cell's slide key: the first non-empty line of its source, stripped."""
    return next((ln.strip() for ln in cell.source.splitlines() if ln.strip()), "")


def _slide_type(cell) -> str | None:
    return cell.metadata.get("slideshow", {}).get("slide_type")


def chapter_notebook(chapter_path: str | Path):
    """The chapter read with Jupytext, with the slide boundaries the deck uses (``tools/mark_slides.py``'s
    rule where the chapter carries none, as ``tools/build_slides.py`` does)."""
    import jupytext

    text = Path(chapter_path).read_text(encoding="utf-8")
    nb = jupytext.reads(text, fmt="py:percent")
    if not any("slideshow" in c.metadata for c in nb.cells):
        sys.path.insert(0, str(ROOT / "tools"))
        import mark_slides

        nb = jupytext.reads(mark_slides.mark(text), fmt="py:percent")
    return nb


def slide_keys(chapter_path: str | Path) -> list[str]:
    """The keys of the chapter's slide-start cells, in deck order (a key may repeat)."""
    return [cell_key(c) for c in chapter_notebook(chapter_path).cells if _slide_type(c) in ("slide", "subslide")]


def occurrences(keys: list[str]) -> list[int]:
    """For each key, which occurrence of it this is (1, 2, ...)."""
    seen: dict[str, int] = {}
    out = []
    for k in keys:
        seen[k] = seen.get(k, 0) + 1
        out.append(seen[k])
    return out


def slide_ids(keys: list[str]) -> list[str]:
    """Each slide's id: its key, or ``"<key> @n"`` for the n-th of several slides with the same key."""
    count = {k: keys.count(k) for k in keys}
    return [k if count[k] == 1 else f"{k} @{n}" for k, n in zip(keys, occurrences(keys))]


def _string(value, where: str, problems: list[str], *, empty: bool = False) -> str:
    if not isinstance(value, str):
        problems.append(f"{where} must be a string, not {type(value).__name__} {value!r}")
        return ""
    if not empty and not value.strip():
        problems.append(f"{where} is empty")
    return value.strip()


def _number(value, where: str, problems: list[str], high: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= high:
        problems.append(f"{where} must be a number of minutes above 0 and at most {high:g}, not {value!r}")
        return 0.0
    return float(value)


def _unknown(table: dict, allowed: set[str], where: str, problems: list[str]) -> None:
    for k in sorted(set(table) - allowed):
        problems.append(f"{where} has an unknown field {k!r} (allowed: {', '.join(sorted(allowed))})")


def _near(key: str, keys: list[str]) -> str:
    close = difflib.get_close_matches(key, keys, n=1, cutoff=0.5)
    return f"; did you mean {close[0]!r}?" if close else ""


def parse(data: dict, keys: list[str], *, chapter: str, path: Path) -> Lecture:
    """Check a notes file's contents against the chapter's slide ``keys``; the lecture, or :class:`NotesError`
    listing every problem, each naming the file (and the key or plan where there is one)."""
    problems: list[str] = []
    _unknown(data, _TOP, "the file", problems)
    if data.get("chapter") != chapter:
        problems.append(f"chapter = {data.get('chapter')!r}, but the file is for {chapter!r} "
                        f"(its name; it must say chapter = {chapter!r})")
    audience = _string(data.get("audience", ""), "audience", problems)

    slides: list[Slide] = []
    raw = data.get("slides", [])
    if not isinstance(raw, list) or not raw:
        problems.append("no [[slides]] entries (one per slide of the deck, in deck order)")
        raw = []
    for i, entry in enumerate(raw, 1):
        if not isinstance(entry, dict):
            problems.append(f"[[slides]] entry {i} is not a table")
            continue
        key = _string(entry.get("key", ""), f"[[slides]] entry {i}: key", problems)
        where = f"slide {key!r}" if key else f"[[slides]] entry {i}"
        _unknown(entry, _SLIDE, where, problems)
        if key and key not in keys:
            problems.append(f"{where} is not a slide of {chapter} (no slide-start cell begins with that line: "
                            f"a heading renamed or a cell moved?){_near(key, keys)}")
        slides.append(Slide(key=key,
                            minutes=_number(entry.get("minutes"), f"{where}: minutes", problems, MAX_SLIDE_MINUTES),
                            say=_string(entry.get("say", ""), f"{where}: say", problems),
                            ask=_string(entry.get("ask", ""), f"{where}: ask", problems, empty=True)))
    named = [s.key for s in slides]
    for key in dict.fromkeys(keys):
        want, have = keys.count(key), named.count(key)
        if have == 0:
            problems.append(f"slide {key!r} of {chapter} has no [[slides]] entry"
                            f"{_near(key, [k for k in named if k not in keys])}")
        elif have != want:
            problems.append(f"slide {key!r}: {have} [[slides]] entries, but {chapter} has {want} slides that "
                            "start with that line (one entry each, in deck order)")
    if named == keys:
        for slide, id_ in zip(slides, slide_ids(keys)):
            slide.id = id_
    elif sorted(named) == sorted(keys):
        first = next(i for i, (a, b) in enumerate(zip(named, keys)) if a != b)
        problems.append(f"the [[slides]] entries are not in deck order: entry {first + 1} is {named[first]!r}, "
                        f"the deck's slide {first + 1} is {keys[first]!r}")

    plans: dict[str, Plan] = {}
    raw_plans = data.get("plans", {})
    if not isinstance(raw_plans, dict):
        problems.append("plans must be tables: [plans.60], [plans.90], ...")
        raw_plans = {}
    for name in REQUIRED_PLANS:
        if name not in raw_plans:
            problems.append(f"no [plans.{name}] (every chapter has a {name}-minute plan)")
    ids = slide_ids(keys)
    minutes_of = {s.id: s.minutes for s in slides} if all(s.id for s in slides) else {}  # (matched)
    for name, plan in raw_plans.items():
        where = f"[plans.{name}]"
        if not isinstance(plan, dict):
            problems.append(f"{where} is not a table")
            continue
        _unknown(plan, _PLAN, where, problems)
        minutes = _number(plan.get("minutes"), f"{where}: minutes", problems, 600)
        skip = plan.get("skip", [])
        if not isinstance(skip, list) or not all(isinstance(k, str) for k in skip):
            problems.append(f"{where}: skip must be a list of slide keys")
            skip = []
        skipped: set[str] = set()
        for k in skip:
            hit = {i for i, key in zip(ids, keys) if k in (i, key)}
            if not hit:
                problems.append(f"{where} skips {k!r}, which is not a slide of {chapter}{_near(k, keys + ids)}")
            elif hit & skipped:
                problems.append(f"{where} skips {k!r} twice")
            skipped |= hit
        p = Plan(name=name, minutes=minutes, audience=_string(plan.get("for", ""), f"{where}: for", problems),
                 skip=list(skip), skipped=skipped)
        used = sum(m for i, m in minutes_of.items() if i not in skipped)
        if minutes and minutes_of and not (MIN_PLAN_SHARE * minutes <= used <= minutes):
            problems.append(f"{where}: its slides take {used:g} minutes, but a {minutes:g}-minute plan needs "
                            f"{MIN_PLAN_SHARE * minutes:g}-{minutes:g} (skip slides or change their minutes)")
        plans[name] = p
    if problems:
        raise NotesError(f"{_rel(path)} (speaker notes of chapters/{chapter}.py):\n  " + "\n  ".join(problems))
    return Lecture(chapter=chapter, audience=audience, plans=plans, slides=slides, path=path)


def load(chapter_path: str | Path, notes: str | Path | None = None) -> Lecture:
    """A chapter's notes file, read and checked against the chapter's slides (:class:`NotesError` if not)."""
    chapter_path = Path(chapter_path)
    path = Path(notes) if notes else notes_path(chapter_path)
    if not path.is_file():
        raise NotesError(f"{_rel(path)}: no speaker notes for chapters/{chapter_path.name} "
                         f"(python tools/lectures.py --outline {_rel(chapter_path)} writes a skeleton)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise NotesError(f"{_rel(path)}: not valid TOML: {e}") from None
    return parse(data, slide_keys(chapter_path), chapter=chapter_path.stem, path=path)


def notes_for(chapter_path: str | Path) -> dict[str, dict]:
    """``{slide id: {"key", "minutes", "say", "ask"}}`` from the chapter's notes, in deck order ({} if it has
    no notes file). A slide's id is its key (``"<key> @n"`` where n slides share a key: :func:`slide_ids`)."""
    if not notes_path(chapter_path).is_file():
        return {}
    return {s.id: {"key": s.key, "minutes": s.minutes, "say": s.say, "ask": s.ask} for s in load(chapter_path).slides}


# --- the notes in a deck ---------------------------------------------------------------------------------------

def _minutes(m: float) -> str:
    return f"{m:g} min"


def notes_markdown(lecture: Lecture, slide: Slide) -> str:
    """What the speaker view shows for a slide: its minutes, what to say, what to ask, the plans that skip it."""
    parts = [f"**{_minutes(slide.minutes)}** (of {_minutes(lecture.minutes)} for the whole deck)", slide.say]
    if slide.ask:
        parts.append(f"**Ask:** {slide.ask}")
    skipped = lecture.skipped_in(slide)
    if skipped:
        parts.append("**Skipped in:** " + "; ".join(f"the {p.name} plan ({p.audience})" for p in skipped))
    return "\n\n".join(parts)


def _shown_on_a_slide(cell) -> bool:
    """Whether ``tools/paginate_slides.py`` keeps the cell on a slide (a code cell with no output and
    no ``slide-code`` tag is left out, and its slide boundary moves to the next cell)."""
    if _slide_type(cell) in ("skip", "notes"):
        return False
    if cell.cell_type == "code":
        return bool(cell.get("outputs")) or SLIDE_CODE in cell.metadata.get("tags", [])
    return True


def mark_notes(nb, notes: dict[tuple[str, int], str]):
    """A copy of ``nb`` whose cells that open a slide say which (metadata :data:`MARK`: ``[key, n]``, the
    n-th slide-start cell with that key); call it before :func:`paginate_slides.paginate`, and
    :func:`insert_notes` after. ``notes``: ``(key, n)`` -> markdown (:func:`deck_notes`); none: nothing marked.

    The mark goes on the slide-start cell, or, if the slides leave that cell out (code with no output),
    on the next cell they show, which then opens the slide."""
    nb = copy.deepcopy(nb)
    if not notes:
        return nb
    cells = nb.cells
    starts = [i for i, c in enumerate(cells) if _slide_type(c) in ("slide", "subslide")]
    keys = [cell_key(cells[i]) for i in starts]
    for i, key, n in zip(starts, keys, occurrences(keys)):
        j = next((j for j in range(i, len(cells)) if _shown_on_a_slide(cells[j])), None)
        if j is not None:
            cells[j].metadata.setdefault(MARK, []).append([key, n])
    return nb


CONTINUED = "*Continued: screen {k} of this slide.*"


def _notes_cell(text: str, continued: bool = False):
    import nbformat

    cell = nbformat.v4.new_markdown_cell(text)
    cell.metadata["slideshow"] = {"slide_type": "notes"}
    if continued:
        cell.metadata[MARK + "_continued"] = True
    return cell


def insert_notes(nb, notes: dict[tuple[str, int], str]):
    """``nb`` (paginated) with a speaker-notes cell (``slide_type: notes``, which nbconvert's reveal template
    writes as ``<aside class="notes">``) after the first cell marked by :func:`mark_notes` for each slide: the
    first piece of the slide, where a long slide was cut into several. A later piece (a sub-slide the
    pagination added: one with no mark) repeats its slide's notes under :data:`CONTINUED`, so the speaker
    view is never blank in the middle of a slide. The marks are removed."""
    nb = copy.deepcopy(nb)
    cells = nb.cells
    bounds = [i for i, c in enumerate(cells) if _slide_type(c) in ("slide", "subslide")]
    bounds = ([0] if not bounds or bounds[0] else []) + bounds + [len(cells)]
    out, done, last, screen, seen = [], set(), None, 0, set()
    for a, b in zip(bounds[:-1], bounds[1:]):
        section = cells[a:b]
        marks = {tuple(m) for c in section for m in c.metadata.get(MARK, [])}
        opens = bool(marks - seen)  # (a piece of a cut cell carries its mark too: only the first opens)
        seen |= marks
        if not opens and last is not None and any(_slide_type(c) not in ("skip", "notes") for c in section):
            screen += 1
            first = next(i for i, c in enumerate(section) if _slide_type(c) not in ("skip", "notes"))
            section.insert(first + 1, _notes_cell(CONTINUED.format(k=screen) + "\n\n" + notes[last], continued=True))
        for cell in section:
            marks = cell.metadata.pop(MARK, [])
            out.append(cell)
            for key, n in marks:
                if (key, n) in done:
                    continue
                done.add((key, n))
                last, screen = ((key, n) if (key, n) in notes else None), 1
                if last:
                    out.append(_notes_cell(notes[last]))
    nb.cells = out
    return nb


def deck_notes(chapter_path: str | Path) -> dict[tuple[str, int], str]:
    """``{(key, n): the speaker notes' markdown}`` for the n-th slide with that key in the chapter's deck
    ({} if it has no notes file; :class:`NotesError` if it does not match the chapter)."""
    if not notes_path(chapter_path).is_file():
        return {}
    lecture = load(chapter_path)
    keys = [s.key for s in lecture.slides]
    return {(s.key, n): notes_markdown(lecture, s) for s, n in zip(lecture.slides, occurrences(keys))}


def with_notes(nb, chapter_path: str | Path, paginate=None):
    """The notebook as the deck shows it: paginated (``paginate``, e.g. :func:`paginate_slides.paginate`;
    None: not paginated) and with the chapter's speaker notes in it."""
    notes = deck_notes(chapter_path)
    nb = mark_notes(nb, notes)
    if paginate is not None:
        nb = paginate(nb)
    return insert_notes(nb, notes)


# --- the lecturer's guide ----------------------------------------------------------------------------------------

def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def slide_labels(chapter_path: str | Path) -> list[str]:
    """The deck's slides as the guide names them, in deck order: prose by its (first) heading without the #s,
    or its first line if it has none; a figure or an explorer (a code cell) as such, under the slide above."""
    labels = []
    for c in chapter_notebook(chapter_path).cells:
        if _slide_type(c) not in ("slide", "subslide"):
            continue
        key = cell_key(c)
        if c.cell_type == "code":
            labels.append("↳ explorer" if ".widget" in c.source or "explorer" in key else "↳ figure")
        else:  # its heading (a slide may open with a lead-in paragraph before it), else its first line
            heading = next((ln.strip() for ln in c.source.splitlines() if re.match(r"#{1,6} ", ln.strip())), key)
            text = re.sub(r"^#{1,6} ", "", heading)
            labels.append(_cell(text if len(text) <= 80 else text[:77] + "..."))
    return labels


def chapters() -> list[Path]:
    return sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))


def page() -> str:
    """The lecturer's guide as a MyST Markdown page: per chapter with notes, its plans and its slides."""
    lines = [
        "# The lecturer's guide",
        "",
        "Every chapter is also a reveal.js slide deck (`python tools/build_slides.py`, then "
        "`build/slides/index.html`). The decks carry **speaker notes**: press `s` in a deck for the speaker "
        "view, which shows each slide's minutes, what to say and a question to ask the room (with its "
        "expected answer). The notes and the lecture plans below come from `book/lectures/NN_slug.toml`, "
        "checked against the chapters' slides by `tests/test_lectures.py`; the minutes of a plan leave the "
        "rest of its time for questions.",
        "",
    ]
    missing = []
    for ch in chapters():
        if not notes_path(ch).is_file():
            missing.append(ch.stem)
            continue
        lec = load(ch)
        title = cell_key(chapter_notebook(ch).cells[0]).lstrip("# ").strip()
        lines += [f"## {title}", "", f"Chapter: {{doc}}`/chapters/{ch.stem}`. Notes: `{_rel(lec.path)}`. "
                  f"{len(lec.slides)} slides, {lec.minutes:g} minutes in all.", "",
                  f"**Audience.** {_cell(lec.audience)}", "", "| plan | for | slide time | skips |",
                  "|---|---|---|---|"]
        names = sorted(lec.plans, key=lambda n: (lec.plans[n].minutes, n))
        for n in names:
            p = lec.plans[n]
            skipped = [str(i) for i, sl in enumerate(lec.slides, 1) if sl.id in p.skipped]
            skips = ("slide" + "s" * (len(skipped) > 1) + " " + ", ".join(skipped)) if skipped else "nothing"
            lines.append(f"| **{n}** ({p.minutes:g} min) | {_cell(p.audience)} | {p.slide_minutes(lec):g} min "
                         f"| {skips} |")
        lines += ["", "| # | slide | min | " + " | ".join(names) + " |",
                  "|---|---|---|" + "---|" * len(names)]
        for i, (sl, label) in enumerate(zip(lec.slides, slide_labels(ch)), 1):
            marks = " | ".join("skip" if sl.id in lec.plans[n].skipped else "✓" for n in names)
            lines.append(f"| {i} | {label} | {sl.minutes:g} | {marks} |")
        lines.append("")
    if missing:
        lines += ["## Chapters without notes yet", "", ", ".join(f"`{m}`" for m in missing) + ".", ""]
    return "\n".join(lines)


def write_page(path: Path = PAGE) -> Path:
    """Write the guide (unchanged if it is already up to date); return its path."""
    from claims_page import write_if_changed   # tools/: the claims index's page is written the same way

    return write_if_changed(path, page())


def _toml_string(s: str) -> str:
    if "'" not in s and "\n" not in s:
        return f"'{s}'"
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def outline(chapter_path: str | Path) -> str:
    """A notes file for the chapter to fill in: every slide key, in deck order."""
    stem = Path(chapter_path).stem
    lines = [f'chapter = "{stem}"', 'audience = ""', ""]
    for name in REQUIRED_PLANS:
        lines += [f"[plans.{name}]", f"minutes = {name}", 'for = ""', "skip = []", ""]
    for key in slide_keys(chapter_path):
        lines += ["[[slides]]", f"key = {_toml_string(key)}", "minutes = 3.0", 'say = ""', 'ask = ""', ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("chapters", nargs="*", type=Path, help="chapter notebooks (default: every one with notes)")
    ap.add_argument("--page", action="store_true", help=f"write the lecturer's guide ({_rel(PAGE)})")
    ap.add_argument("--stdout", action="store_true", help="with --page: print the page instead of writing it")
    ap.add_argument("--outline", action="store_true", help="print a notes file to fill in for each chapter given")
    args = ap.parse_args(argv)
    if args.outline:
        for ch in args.chapters:
            sys.stdout.write(outline(ch))
        return 0
    try:
        if args.page:
            if args.stdout:
                sys.stdout.write(page())
            else:
                print("wrote", _rel(write_page()))
            return 0
        srcs = [p.resolve() for p in args.chapters] or [c for c in chapters() if notes_path(c).is_file()]
        for ch in srcs:
            lec = load(ch)
            plans = ", ".join(f"{n}: {p.slide_minutes(lec):g} of {p.minutes:g} min" for n, p in lec.plans.items())
            print(f"{_rel(lec.path)}: {len(lec.slides)} slides, {lec.minutes:g} min; plans {plans}")
    except NotesError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
