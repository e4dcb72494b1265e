"""Write the book's claims index (``book/_generated/claims.md``) from the claims ledger.

One row per claim of ``llmmath.course.claims``: timestamp, the course's paraphrase,
a link to the chapter that checks it, the verdict its check returns now, and
whether a check exists yet (``checked``/``pending``). ``book/conf.py`` calls
:func:`write` at every build, so the page cannot drift from the ledger; the
README's claim map comes from the same ledger (``tools/claims_table.py``).

``python tools/claims_page.py`` writes the page; ``--stdout`` prints it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "book" / "_generated" / "claims.md"
sys.path.insert(0, str(ROOT / "tools"))
from claims_table import CHAPTERS  # noqa: E402  (the one chapter-number -> notebook map)


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def rows() -> list[dict]:
    """The ledger as dicts: id, timestamp, claim, chapter, chapter_doc (or None), verdict, summary, status."""
    sys.path.insert(0, str(ROOT / "lib"))
    from llmmath import claims

    out = []
    for c in claims.all_claims():
        v = claims.check(c.id, quiet=True)
        name = CHAPTERS[c.chapter]
        doc = f"/chapters/{name}" if (ROOT / "chapters" / f"{name}.py").exists() else None
        out.append(dict(id=c.id, timestamp=c.timestamp, claim=c.claim, chapter=c.chapter, chapter_doc=doc,
                        verdict=v.verdict, summary=v.summary, status=c.status))
    return out


def page() -> str:
    """The claims index as a MyST Markdown page."""
    rs = rows()
    counts: dict[str, int] = {}
    for r in rs:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    tally = ", ".join(f"{n} {w}" for w, n in counts.items())
    lines = [
        "# The claims index",
        "",
        f"All {len(rs)} claims of the interview, in the order they are made, generated from the claims "
        "ledger (`llmmath.course.claims`, data in `lib/llmmath/data/claims.toml`) when this book was built. "
        "**verdict** is what the claim's check returned at build time; **check** says whether a check "
        "exists yet (`pending`: the chapter that checks it is still being written). "
        "`llmmath.claims.check(n)` reruns claim *n*'s check and prints its evidence.",
        "",
        f"Verdicts now: {tally}.",
        "",
        "| # | time | chapter | claim (the course's paraphrase) | verdict | check |",
        "|---|---|---|---|---|---|",
    ]
    for r in rs:
        chap = f"{{doc}}`{r['chapter']} <{r['chapter_doc']}>`" if r["chapter_doc"] else f"{r['chapter']} (in progress)"
        lines.append(f"| {r['id']} | {r['timestamp']} | {chap} | {_cell(r['claim'])} | **{r['verdict']}** "
                     f"| {r['status']} |")
    lines += ["", "## Why each verdict", "", "What each claim's check found, in one sentence (its evidence: "
              "`llmmath.claims.check(n)`).", ""]
    for r in rs:
        lines.append(f"- **{r['id']} ({r['timestamp']}) — {r['verdict']}:** {' '.join(r['summary'].split())}")
    return "\n".join(lines) + "\n"


def write_if_changed(path: Path, text: str) -> Path:
    """Write a generated page only when its text changed (Sphinx then rebuilds only what did); return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    return path


def write(path: Path = OUT) -> Path:
    return write_if_changed(path, page())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stdout", action="store_true", help="print the page instead of writing it")
    args = ap.parse_args(argv)
    if args.stdout:
        sys.stdout.write(page())
    else:
        print("wrote", write().relative_to(ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
