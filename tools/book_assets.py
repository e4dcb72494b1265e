"""Browser assets for the book and the slides, vendored from npm (no CDN at build or view time).

``book/package.json`` and ``book/package-lock.json`` pin the packages: the Jupyter
widgets HTML manager (renders widget snapshots), require.js (which it needs),
MathJax 3, reveal.js and jQuery (the slides). :func:`node_modules` installs them
with ``npm ci`` into ``build/npm`` (once; again only when the lock file changes),
and :func:`vendor` copies the files a page loads into a static folder.

:func:`cdn_references` scans a built site for any URL on a CDN; the build tools
fail if it finds one, and ``tests/test_book.py`` runs the same scan.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NPM_DIR = ROOT / "build" / "npm"

# Hosts that serve packages to browsers. A built page must name none of them.
CDN_PATTERN = re.compile(
    r"""(?:https?:)?//(?:[a-z0-9-]+\.)*(?:[a-z0-9-]*cdn[a-z0-9-]*|unpkg|jsdelivr|googleapis|gstatic|cloudflare)"""
    r"""(?:\.[a-z0-9-]+)*\.[a-z]{2,}\b[^\s"'<>()]*""", re.I)
NOT_SERVED = "./cdn-disabled/"
MATHJAX_COMBOS_KEPT = {"tex-mml-chtml.js"}


def node_modules() -> Path:
    """``build/npm/node_modules`` with the pinned packages (``npm ci``; skipped when already current)."""
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    lock = (BOOK / "package-lock.json").read_bytes()
    stamp = NPM_DIR / "node_modules" / ".llmmath-lock"
    if stamp.exists() and stamp.read_bytes() == lock:
        return NPM_DIR / "node_modules"
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(BOOK / name, NPM_DIR / name)
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("npm is needed once to fetch the book's browser assets (MathJax, the widget "
                         "manager, require.js, reveal.js) from the npm registry: install Node.js (e.g. "
                         "`apt-get install nodejs npm`) and run this again")
    print("+ npm ci (browser assets: book/package-lock.json)", flush=True)
    subprocess.run([npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"],
                   cwd=NPM_DIR, check=True)
    stamp.write_bytes(lock)
    return NPM_DIR / "node_modules"


def _copytree(src: Path, dst: Path, ignore=None) -> None:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=ignore)


def vendor(dest: Path, *, reveal: bool = False) -> Path:
    """Copy the assets a page loads into ``dest``; return it.

    ``dest/require.min.js``, ``dest/html-manager/`` (``embed-amd.js`` and its fonts),
    ``dest/mathjax/`` (MathJax 3, ``tex-mml-chtml.js``); with ``reveal``, also
    ``dest/reveal.js/`` (``dist/``, ``plugin/``) and ``dest/jquery.min.js``.
    """
    nm = node_modules()
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(nm / "requirejs" / "require.js", dest / "require.min.js")
    _copytree(nm / "@jupyter-widgets" / "html-manager" / "dist", dest / "html-manager",
              ignore=shutil.ignore_patterns("*.map", "embed.js", "embed.js.LICENSE.txt", "libembed-amd.js"))
    mj = nm / "mathjax" / "es5"
    _copytree(mj, dest / "mathjax", ignore=lambda d, names: [
        n for n in names if Path(d) == mj and n.endswith(".js") and "-" in n and n not in MATHJAX_COMBOS_KEPT]
        + (["latest.js"] if Path(d) == mj else []))
    if reveal:
        (dest / "reveal.js").mkdir(exist_ok=True)
        for sub in ("dist", "plugin"):
            _copytree(nm / "reveal.js" / sub, dest / "reveal.js" / sub)
        shutil.copy2(nm / "jquery" / "dist" / "jquery.min.js", dest / "jquery.min.js")
    if not _disarm(dest / "html-manager" / "embed-amd.js"):
        raise SystemExit("html-manager: expected its CDN fallback for widget modules; has the package changed?")
    for path in dest.rglob("*"):
        if path.is_file() and path.suffix in (".js", ".css"):
            _disarm(path)
    return dest


def _disarm(path: Path) -> int:
    """Replace every CDN URL in a vendored file by a path that is not served; return how many.

    The widget manager falls back to a CDN for widget modules it does not bundle (the course
    uses only the bundled controls); MathJax's speech engine (off by default) names CDN copies
    of its data. Neither is needed, and offline neither could load, so neither may be named.
    """
    text = path.read_text(encoding="utf-8")
    new, n = CDN_PATTERN.subn(NOT_SERVED, text)
    if n:
        path.write_text(new, encoding="utf-8")
    return n


def cdn_references(site: Path, suffixes=(".html", ".js", ".css", ".mjs")) -> list[str]:
    """``'file: url'`` for every CDN URL in the site's HTML, JavaScript and CSS files."""
    found = []
    for path in sorted(site.rglob("*")):
        if path.is_file() and path.suffix in suffixes:
            text = path.read_text(encoding="utf-8", errors="replace")
            for url in sorted(set(CDN_PATTERN.findall(text))):
                found.append(f"{path.relative_to(site)}: {url}")
    return found
