"""Mark slide boundaries in chapter notebooks' cell metadata (for ``tools/build_slides.py``).

The rule, applied only to cells that carry no metadata yet (so hand-set
boundaries win):

* a markdown cell with a level-1 or level-2 heading (``# Title``, ``## Claim 4``)
  starts a new slide: ``slideshow={"slide_type": "slide"}``;
* a markdown cell with a level-3 heading, and a code cell that shows a figure
  (``plt.show()``) or an explorer (``.widget`` as its last line), start a
  sub-slide (reveal.js stacks sub-slides under their slide);
* every other cell continues the current slide.

Only the ``# %%`` header lines change; Jupytext keeps ``slideshow`` metadata
(``jupytext.toml``). Usage: ``python tools/mark_slides.py chapters/01_batch_size.py ...``;
``--check`` exits 1 if a file would change.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

_HEADER = re.compile(r"^# %%(?: \[markdown\])?$")


def _slide_type(kind: str, body: list[str]) -> str | None:
    text = [ln[2:] if ln.startswith("# ") else ln.lstrip("#") for ln in body]
    if kind == "markdown":
        if any(re.match(r"#{1,2} \S", ln) for ln in text):
            return "slide"
        if any(re.match(r"### \S", ln) for ln in text):
            return "subslide"
        return None
    code = [ln for ln in body if ln.strip() and not ln.startswith("#")]
    if any("plt.show()" in ln for ln in code) or (code and code[-1].rstrip().endswith(".widget")):
        return "subslide"
    return None


def mark(text: str) -> str:
    lines = text.splitlines(keepends=True)
    starts = [i for i, ln in enumerate(lines) if ln.startswith("# %%")] + [len(lines)]
    for a, b in zip(starts, starts[1:]):
        header = lines[a].rstrip("\n")
        if not _HEADER.match(header):  # has metadata already
            continue
        kind = "markdown" if header.endswith("[markdown]") else "code"
        st = _slide_type(kind, lines[a + 1:b])
        if st:
            lines[a] = f'{header} slideshow={{"slide_type": "{st}"}}\n'
    return "".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+", type=Path)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    stale = []
    for f in args.files:
        old = f.read_text(encoding="utf-8")
        new = mark(old)
        if new != old:
            stale.append(str(f))
            if not args.check:
                f.write_text(new, encoding="utf-8")
    print(("would change: " if args.check else "marked: ") + (", ".join(stale) or "nothing"))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
