"""Every chapter's figures are legible in the book (issue 15): one style, no tiny text, nothing outside.

Each chapter runs headless in its own process (``tools/check_plots.py``: its
code cells with Matplotlib's Agg backend, ``plt.show()`` replaced by a check of
each figure, each explorer checked on its first frame). A text fails if, as the
book shows it (an image wider than the text column is shrunk), it is smaller
than ``plots.MIN_BASE_FONT_PT`` (tick labels, axis labels, titles) or
``plots.MIN_FONT_PT`` (legends, annotations); if it or a legend lies outside
the figure; if an annotation placed in an axes runs outside that axes; or if two
annotations cover each other.

The chapters run one at a time in a background thread started once for the
whole module (this file runs on one xdist worker; each chapter is its own test).
Not two at a time: the chapters that time kernels would then run beside each other
and beside the other worker's notebook, three programs on two cores competing for
memory bandwidth, which is harsher than the suite's own checks allow for. A chapter's own failing check (an ``AssertionError``, e.g. a timing on a
loaded machine) does not fail this test; any other error does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
sys.path.insert(0, str(ROOT / "lib"))

pytest.importorskip("jupytext", reason="jupytext reads the chapters (the test extra)")


def _run(chapter: Path) -> dict:
    env = dict(os.environ, MPLBACKEND="Agg", LLMMATH_DEVICE=os.environ.get("LLMMATH_DEVICE", "cpu"),
               PYTHONPATH=str(ROOT / "lib"))
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "check_plots.py"), "--json", str(chapter)],
                       capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    for line in p.stdout.splitlines():
        if line.startswith("LEGIBILITY "):
            return json.loads(line[len("LEGIBILITY "):])
    return {"chapter": chapter.name, "figures": 0, "texts": 0, "problems": [],
            "errors": [f"tools/check_plots.py exited {p.returncode}:\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"]}


_lock = threading.Lock()
_futures: dict = {}


@pytest.fixture(scope="module")
def results():
    """Start every chapter (one at a time); a test waits for its own."""
    with _lock:
        if not _futures:
            pool = ThreadPoolExecutor(max_workers=1)
            for ch in CHAPTERS:
                _futures[ch.name] = pool.submit(_run, ch)
            pool.shutdown(wait=False)
    return _futures


def test_the_style_is_applied_by_plots():
    import matplotlib as mpl

    from llmmath import plots

    for key, value in plots.STYLE.items():
        assert mpl.rcParams[key] == value, key
    assert plots.STYLE["font.size"] >= plots.MIN_BASE_FONT_PT and plots.STYLE["legend.fontsize"] >= plots.MIN_FONT_PT
    fig, axes = plots.new_axes(3, width=5)  # 15 inches asked: narrowed to the book's column
    assert fig.get_figwidth() * fig.dpi <= plots.BOOK_WIDTH_PX - 2 * plots.SAVE_PAD_IN * fig.dpi + 1e-6
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_the_checker_catches_small_misplaced_and_overlapping_text():
    import matplotlib.pyplot as plt

    sys.path.insert(0, str(ROOT / "tools"))
    import check_plots

    from llmmath import plots

    fig, ax = plots.new_axes(width=5, height=3)
    ax.plot([0, 1], [0, 1], label="a line")
    ax.text(0.1, 0.9, "tiny", fontsize=6)
    ax.text(0.95, 0.3, "a label that runs past the right edge of its axes")
    ax.text(0.3, 0.6, "one label")
    ax.text(0.31, 0.6, "one label, again")
    fig.set_layout_engine("none")  # else constrained layout would make room for the legend
    ax.legend(loc="upper left", bbox_to_anchor=(1.6, 1.0))
    problems, n = check_plots.check_figure(fig, "demo")
    plt.close(fig)
    assert n >= 8
    text = "\n".join(problems)
    assert "'tiny' is 6.0 pt" in text and "'a label that runs past the right edge of its axes' runs outside" in text, text
    assert "cover each other" in text, text
    assert "a legend ('a line') lies outside the figure" in text, text
    fig, ax = plots.new_axes(width=5, height=3)
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set_title("A title")
    ax.legend()
    assert check_plots.check_figure(fig, "fine")[0] == []
    plt.close(fig)


@pytest.mark.parametrize("chapter", [c.name for c in CHAPTERS])
def test_every_figure_of_the_chapter_is_legible(results, chapter):
    r = results[chapter].result()
    assert not r["errors"], "\n".join(r["errors"])
    assert r["figures"] > 0, f"{chapter}: no figure was checked"
    assert not r["problems"], (f"{chapter}: {len(r['problems'])} of {r['texts']} texts in {r['figures']} figures "
                               "are illegible or misplaced:\n" + "\n".join(r["problems"]))


def test_short_device_name_fits_a_title_whatever_the_cpu_reports():
    from llmmath.course.plots import short_device_name

    assert short_device_name("Intel(R) Xeon(R) Processor, 2 cores") == "Intel Xeon, 2 cores"
    assert short_device_name("AMD EPYC, 2 cores") == "AMD EPYC, 2 cores"
    assert short_device_name("Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz, 2 cores") == \
        "Intel Xeon Platinum 8480+, 2 cores"
    long = short_device_name("Intel(R) Xeon(R) Platinum 8480+ CPU @ 2.00GHz, 2 cores", max_chars=20)
    assert len(long) <= 20 and long.endswith("..., 2 cores")          # the core count survives the cut
    assert len(short_device_name("x" * 80)) == 36
    import pytest
    with pytest.raises(ValueError, match="at least 8"):
        short_device_name("NVIDIA H200", max_chars=4)
