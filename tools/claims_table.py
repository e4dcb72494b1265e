"""Write the README's claim map from the claims ledger (``llmmath.course.claims``).

``python tools/claims_table.py`` rewrites the block between the
``<!-- claims:begin -->`` and ``<!-- claims:end -->`` markers of README.md;
``--check`` exits 1 if the README's block is out of date (a test runs this).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BEGIN, END = "<!-- claims:begin -->", "<!-- claims:end -->"

CHAPTERS = {
    1: "01_batch_size", 2: "02_kv_cache", 3: "03_balance_point", 4: "04_schedules",
    5: "05_experts_on_a_rack", 6: "06_pipelining", 7: "07_training_economics",
    8: "08_long_context", 9: "09_ciphers_and_reversibility",
}


def table() -> str:
    sys.path.insert(0, str(ROOT / "lib"))
    from llmmath import claims

    rows = ["| # | time | chapter | claim (the course's paraphrase) | verdict |", "|---|---|---|---|---|"]
    for c in claims.all_claims():
        verdict = claims.check(c.id, quiet=True).verdict
        chap = CHAPTERS[c.chapter]
        link = f"[{c.chapter}](chapters/{chap}.py)" if (ROOT / "chapters" / f"{chap}.py").exists() else str(c.chapter)
        rows.append(f"| {c.id} | {c.timestamp} | {link} | {c.claim} | {verdict} |")
    return "\n".join(rows)


def render(readme: str) -> str:
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if args.check:
        if new != text:
            print("README claim map is out of date: run python tools/claims_table.py")
            return 1
        print("README claim map is up to date")
        return 0
    README.write_text(new, encoding="utf-8")
    print("README claim map written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
