"""Build the course as a static HTML book: every chapter executed, offline.

    python tools/build_book.py            # build/book/index.html (chapters and worked solutions)
    python tools/build_book.py --student  # build/book-student/  (chapters only, no solutions)

Sphinx + myst-nb read the Jupytext ``.py`` notebooks in ``chapters/`` (and
``solutions/``) in place (``book/conf.py``), execute them, and render their
plots, math and widget snapshots with sphinx-book-theme. The browser assets
(MathJax 3, require.js, the Jupyter widgets HTML manager) come from npm once
(``book/package-lock.json``, into ``build/npm``) and are served from the site's
``_static``; the build fails if any page names a CDN. Open the result from disk
(``file://``) or serve it: ``python -m http.server -d build/book``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import book_assets  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--student", action="store_true", help="leave the worked solutions out")
    ap.add_argument("--out", type=Path, help="output folder (default build/book or build/book-student)")
    ap.add_argument("-j", "--jobs", default="auto", help="parallel notebook execution (sphinx -j; default auto)")
    args = ap.parse_args(argv)
    edition = "book-student" if args.student else "book"
    out = (args.out or ROOT / "build" / edition).resolve()

    t0 = time.perf_counter()
    if out.exists():
        shutil.rmtree(out)  # a fresh site: nothing stale (old assets) may survive into it
    vendor = book_assets.vendor(ROOT / "build" / "book-vendor")
    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(ROOT / "book"),
           "-d", str(ROOT / "build" / f".doctrees-{edition}"), "-j", str(args.jobs), "-q", "--keep-going",
           "-E", str(ROOT), str(out)]
    if args.student:
        cmd[3:3] = ["-t", "student"]
    env = dict(os.environ, LLMMATH_BOOK_VENDOR=str(vendor), PYDEVD_DISABLE_FILE_VALIDATION="1")
    env.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    print("+", " ".join(cmd), flush=True)
    r = subprocess.run(cmd, cwd=ROOT, env=env)
    if r.returncode:
        print(f"sphinx-build failed (exit {r.returncode})", file=sys.stderr)
        return r.returncode
    cdn = book_assets.cdn_references(out)
    if cdn:
        print("the built book names a CDN (it must work offline):\n  " + "\n  ".join(cdn), file=sys.stderr)
        return 1
    print(f"book built in {time.perf_counter() - t0:.0f} s, no CDN references: {out / 'index.html'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
