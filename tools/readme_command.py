"""Print one of the README's two commands (``lab`` or ``test``), as written there.

``.ci/run`` runs the ``test`` command through this, so CI runs exactly what
the README tells a reader to type, and the two can never drift apart.
"""

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def command(name: str) -> str:
    text = README.read_text(encoding="utf-8")
    m = re.search(rf"<!-- command:{name} -->\s*```(?:bash|sh)?\n(.*?)\n```\s*<!-- /command:{name} -->", text, re.S)
    if not m:
        raise SystemExit(f"README.md has no '{name}' command block (<!-- command:{name} --> ... <!-- /command:{name} -->)")
    return m.group(1).strip()


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("lab", "test"):
        raise SystemExit("usage: python tools/readme_command.py lab|test")
    print(command(sys.argv[1]))
