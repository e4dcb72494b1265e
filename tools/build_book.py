"""Build the course as a static HTML book: every chapter executed, offline.

    python tools/build_book.py            # build/book/index.html (chapters and worked solutions)
    python tools/build_book.py --student  # build/book-student/  (chapters only, no solutions)
    python tools/build_book.py --verbose  # everything the kernels, nbclient and Sphinx print

Two steps. **1. Execute.** This script runs every page's notebook itself (the
Jupytext ``.py`` files ``chapters/NN_*.py`` and, unless ``--student``,
``solutions/NN_*_solutions.py``), each in a fresh kernel with nbclient and in its own
folder as working directory, and writes the executed notebooks to
``build/.executed-<edition>/`` (each with a ``.log`` of what its kernel printed).
**2. Render.** Sphinx + myst-nb (``book/conf.py``) then render those executed
notebooks, without executing anything (``LLMMATH_BOOK_EXECUTED`` points the
configuration at them: execution mode ``off``), with sphinx-book-theme: plots,
math, widget snapshots. The browser assets (MathJax 3, require.js, the Jupyter
widgets HTML manager) come from npm once (``book/package-lock.json``, into
``build/npm``) and are served from the site's ``_static``; the build fails if
any page names a CDN. Open the result from disk (``file://``) or serve it:
``python -m http.server -d build/book``.

**Order and parallelism.** Several chapters time kernels on the build machine
and check the timings against the roofline (chapter 0's "ran Nx faster than its
floor"); a second notebook running at the same time takes cores and memory
bandwidth from the measurement, and on a 2-core machine that made the build
fail two times in three. So a notebook that measures (:func:`measures_time`:
its code uses ``llmmath.demos.kernels``, ``attention_kernels``, ``moe``,
``mpi_bench``/``mpi_collectives``, ``schedule_bench``, or ``time_fn``, ``perf_counter``,
``timeit``; chapters 0-6, 8 and 9 today) is executed **alone**, one after
another, with no other notebook running; these go first. The rest (chapters
that only compute from the catalog, all worked solutions) then run ``--jobs``
at a time, by default one fewer than the CPU cores (at least 1), which is
strictly serial on a 2-core machine. Sphinx runs after all executions, so it
never competes with a measurement either. The detection errs on the side of
"measures" (it only costs parallelism); ``-j 1`` runs everything serially.

**Measured checks.** A chapter's assert about a measurement on the build machine
(``llmmath.demos.measured.check``) that does not hold, even re-measured, does not stop
the build: the kernels run with ``LLMMATH_MEASURED_CHECKS=warn``, so the page
shows a warning box with the facts, the machine and the load, the notebook runs
on, and the build lists those cells at the end and exits 0. ``--strict`` makes
them fail the build like any other error. A claim check (the math) that fails,
or any other exception, always fails the build.

**Failures.** Every notebook is executed even after one fails; then, for each
failure, the console shows the notebook, the failing cell (its number, its line
in the ``.py`` file and its first lines of source) and the traceback's last
lines (the exception and its message), and the build stops before Sphinx with
exit status 1. The partly executed notebook and its kernel log stay in
``build/.executed-<edition>/``.

**Quiet by default.** One progress line per notebook and a summary. Known
harmless, repeated messages (:data:`HARMLESS`: e.g. jupyter_client's "Kernel is
running over TCP without encryption", once per kernel) are dropped; anything
else a kernel prints to its terminal is kept in the notebook's ``.log`` and
counted on its progress line; Sphinx's warnings are printed. ``--verbose``
streams everything unfiltered.

``tools/build_slides.py`` executes the chapters through the same
:func:`execute_all`.
"""

from __future__ import annotations

import argparse
import dataclasses as dc
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Callable, Iterable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import book_assets  # noqa: E402
from llmmath.demos.measured import MODE_ENV, WARNING_MARK  # noqa: E402

CELL_TIMEOUT_S = 600

# A notebook's code "measures time" when it uses a module of llmmath that times kernels or
# a timer itself. Broad on purpose: a false positive only costs parallelism.
TIMING_PATTERN = re.compile(
    r"\b(?:kernels|attention_kernels|moe|mpi_bench|mpi_collectives|schedule_bench)\b|\btime_fn\b|\bperf_counter\b|\btimeit\b")

# Lines (kernel stderr, Sphinx output) that are known to be harmless and repeat once per
# kernel or page; dropped unless --verbose. Match on the message, never on a whole stream.
HARMLESS = [re.compile(p) for p in (
    # jupyter_client/ipykernel, once per kernel (nbclient connects over localhost TCP)
    r"^\[IPKernelApp\] WARNING \| Kernel is running over TCP without encryption",
    # debugpy on Python >= 3.11, four lines once per kernel when PYDEVD_DISABLE_FILE_VALIDATION is unset
    r"^\d+\.\d+s - (?:Debugger warning: It seems that frozen modules|make the debugger miss breakpoints"
    r"|to python to disable frozen modules|Note: Debugging will proceed)",
)]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_CELL_FRAME = re.compile(r"^Cell In\[\d*\], line (\d+)")  # IPython's traceback frame of the cell itself


def is_harmless(line: str) -> bool:
    return any(p.search(line) for p in HARMLESS)


def measures_time(text: str) -> bool:
    """Whether a Jupytext percent notebook's code measures timings (and must run alone)."""
    import jupytext

    nb = jupytext.reads(text, fmt="py:percent")
    return any(TIMING_PATTERN.search(c.source) for c in nb.cells if c.cell_type == "code")


@dc.dataclass
class Job:
    """One notebook to execute: its source, the text executed (a snapshot), where its result goes."""

    src: Path
    dest: Path
    text: str
    timing: bool


@dc.dataclass
class Result:
    """What executing one notebook gave. ``cell`` is 1-based among all cells (markdown too)."""

    src: str
    dest: str
    log: str | None
    ok: bool
    seconds: float
    timing: bool = False
    n_cells: int = 0
    cell: int | None = None
    cell_line: int | None = None  # the line of the .py file where the cell's source starts
    line: int | None = None  # the line of the .py file that failed (the traceback's line in the cell)
    source: str = ""
    error: str = ""  # "AssertionError: message"
    traceback: list[str] = dc.field(default_factory=list)  # without colour codes
    stderr: list[str] = dc.field(default_factory=list)  # kernel terminal output, harmless lines dropped
    # measured checks that did not hold and were shown as warnings: (cell, line of the .py file, first line)
    warnings: list[tuple[int, int | None, str]] = dc.field(default_factory=list)


def _rel(path: str | Path) -> str:
    p = Path(path)
    try:
        return str(p.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def _cell_lines(text: str, n_cells: int) -> list[int | None]:
    """The 1-based line of each cell's first source line in a percent-format file, when the markers say."""
    lines = text.splitlines()
    markers = [k for k, ln in enumerate(lines) if ln.startswith("# %%")]
    if len(markers) != n_cells:
        return [None] * n_cells
    return [k + 2 for k in markers]


def execute_notebook(src: str | Path, dest: str | Path, *, text: str | None = None, timing: bool = False,
                     timeout: int = CELL_TIMEOUT_S, log: str | Path | None = None) -> Result:
    """Execute a Jupytext py:percent notebook in a fresh kernel; write the executed ``.ipynb`` to ``dest``.

    Runs in ``src``'s folder (as myst-nb and JupyterLab do). ``text`` is the notebook's text
    (default: read ``src``). With ``log``, everything the process and its kernel print to the
    terminal goes to that file (the known-harmless lines are then left out of ``Result.stderr``).
    Never raises for a failing notebook: the failure is described in the returned :class:`Result`
    (see :func:`format_failure`).
    """
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    src, dest = Path(src), Path(dest)
    text = src.read_text(encoding="utf-8") if text is None else text
    nb = jupytext.reads(text, fmt="py:percent")
    current: dict[str, int | None] = {"index": None}

    def on_cell_start(cell, cell_index):
        current["index"] = cell_index

    client = NotebookClient(nb, timeout=timeout, resources={"metadata": {"path": str(src.parent)}},
                            on_cell_start=on_cell_start)
    res = Result(src=str(src), dest=str(dest), log=str(log) if log else None, ok=True, seconds=0.0,
                 timing=timing, n_cells=len(nb.cells))
    saved = None
    if log is not None:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        sys.stdout.flush()
        sys.stderr.flush()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        saved = os.dup(1), os.dup(2)
        os.dup2(fd, 1)  # the kernel inherits these: its warnings land in the log, not on the console
        os.dup2(fd, 2)
        os.close(fd)
    t0 = time.perf_counter()
    try:
        client.execute()
    except Exception as exc:  # noqa: BLE001 - every failure is reported, none is fatal here
        res.ok = False
        i = current["index"]
        err = None
        if i is not None:
            err = next((o for o in nb.cells[i].get("outputs", []) if o.get("output_type") == "error"), None)
        if err is not None:
            res.error = f"{err.get('ename', '')}: {err.get('evalue', '')}".rstrip(": ")
            tb = _ANSI.sub("", "\n".join(err.get("traceback", []))).splitlines()
        elif isinstance(exc, CellExecutionError):
            res.error = f"{exc.ename}: {exc.evalue}"
            tb = _ANSI.sub("", exc.traceback).splitlines()
        else:  # a timeout, a dead kernel, a kernel that would not start
            res.error = f"{type(exc).__name__}: {exc}".strip()
            tb = []
        res.traceback = [ln.rstrip() for ln in tb if ln.strip().strip("-")]  # no blank or ---- rule lines
        if i is not None:
            res.cell = i + 1
            res.source = nb.cells[i].source
            res.cell_line = res.line = _cell_lines(text, len(nb.cells))[i]
            at = next((m for m in map(_CELL_FRAME.search, res.traceback) if m), None)
            if at and res.line:
                res.line += int(at.group(1)) - 1
    finally:
        res.seconds = time.perf_counter() - t0
        if saved is not None:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
    res.warnings = measured_warnings(nb, _cell_lines(text, len(nb.cells)))
    label_widget_snapshots(nb, src)
    dest.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(dest))  # also when it failed: the outputs up to the failing cell
    if log is not None:
        lines = Path(log).read_text(encoding="utf-8", errors="replace").splitlines()
        res.stderr = [ln for ln in lines if ln.strip() and not is_harmless(ln)]
    return res


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def label_widget_snapshots(nb, src: Path) -> int:
    """Put a label above every widget in the executed notebook: in the book and the slides a widget is a snapshot
    (its controls render but recompute nothing), so the label says so and names the command that opens the
    notebook live. Returns how many widgets were labelled."""
    import nbformat

    where = _rel(src)
    html = (f'<div class="llmmath-snapshot-note"><b>Snapshot</b> of an explorer, as the build left it: its controls '
            f'do not recompute here. To move them, run <code>jupyter lab</code> at the repository\'s root and open '
            f'<code>{where}</code> (Run All).</div>')
    plain = f"[snapshot: open {where} in JupyterLab to move the controls]"
    n = 0
    for cell in nb.cells:
        outs = cell.get("outputs", [])
        if cell.get("cell_type") != "code" or not any(WIDGET_VIEW in o.get("data", {}) for o in outs):
            continue
        label = nbformat.v4.new_output("display_data", data={"text/html": html, "text/plain": plain})
        i = next(k for k, o in enumerate(outs) if WIDGET_VIEW in o.get("data", {}))
        outs.insert(i, label)
        n += 1
    return n


def measured_warnings(nb, cell_lines: list[int | None]) -> list[tuple[int, int | None, str]]:
    """The cells of an executed notebook that show a failed measured check's warning (its plain text starts
    with :data:`llmmath.demos.measured.WARNING_MARK`): (1-based cell, its line in the .py file, the warning's first line)."""
    found = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            text = out.get("data", {}).get("text/plain", "") if "data" in out else out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            for ln in text.splitlines():
                if ln.startswith(WARNING_MARK):
                    found.append((i + 1, cell_lines[i] if i < len(cell_lines) else None, ln))
    return found


def format_warnings(results: list[Result]) -> str:
    """The closing list of measured checks that did not hold: one line per cell, with where to look."""
    rows = [(r, w) for r in results for w in r.warnings]
    if not rows:
        return ""
    out = [f"{len(rows)} measured check(s) did not hold on this machine; their pages show a warning box with "
           "the facts, the machine and the load (--strict makes this an error):"]
    for r, (cell, line, first) in rows:
        where = f"{_rel(r.src)}:{line}" if line else _rel(r.src)
        out.append(f"  {where} (cell {cell}): {first}")
    return "\n".join(out)


def format_failure(r: Result, *, source_lines: int = 6, traceback_lines: int = 12) -> str:
    """The console report of a failed notebook: which notebook, which cell (and line), the error."""
    rel = _rel(r.src)
    if r.cell is None:
        where = f"{rel} (before any cell ran)"
    elif r.line:
        where = f"{rel}:{r.line} (cell {r.cell} of {r.n_cells}, from line {r.cell_line})"
    else:
        where = f"{rel} (cell {r.cell} of {r.n_cells})"
    out = [f"FAILED {where}, after {r.seconds:.0f} s"]
    if r.source:
        src = r.source.splitlines()
        out += [f"    | {ln}" for ln in src[:source_lines]]
        if len(src) > source_lines:
            out.append(f"    | ... ({len(src) - source_lines} more lines)")
        k = (r.line - r.cell_line) if r.line and r.cell_line else 0
        if source_lines <= k < len(src):  # the failing line is not among those shown
            out.append(f"  line {r.line}: {src[k].strip()}")
    tb = r.traceback[-traceback_lines:]
    if tb:
        out.append("  traceback (last lines):")
        out += [f"    {ln}" for ln in tb]
    if not tb or r.error.splitlines()[:1] != [tb[-1].strip()]:
        out.append(f"  {r.error}")
    out.append(f"  executed notebook: {_rel(r.dest)}" + (f"; kernel log: {_rel(r.log)}" if r.log else ""))
    return "\n".join(out)


def plan(srcs: Iterable[Path], out_dir: Path, *, texts: dict[Path, str] | None = None) -> list[Job]:
    """The jobs for ``srcs`` (executed notebooks under ``out_dir/<folder>/<name>.ipynb``), timing ones first."""
    jobs = []
    for src in srcs:
        src = Path(src).resolve()
        text = (texts or {}).get(src) or src.read_text(encoding="utf-8")
        jobs.append(Job(src, out_dir / src.parent.name / f"{src.stem}.ipynb", text, measures_time(text)))
    return sorted(jobs, key=lambda j: not j.timing)  # stable: timing ones first, each group in order


def default_jobs() -> int:
    return max(1, (os.cpu_count() or 1) - 1)


def execute_all(jobs: list[Job], *, n_jobs: int | None = None, verbose: bool = False,
                echo: Callable[[str], None] = print) -> list[Result]:
    """Execute ``jobs``: the timing ones alone, one at a time; then the rest ``n_jobs`` at a time.

    Prints one line per notebook as it finishes (and, for a failure, :func:`format_failure`).
    Returns the results in the order of ``jobs``.
    """
    n_jobs = max(1, n_jobs or default_jobs())
    # the kernels inherit it: a failed measured check warns (see above); only for this call, so a caller's own
    # process (a pytest worker that runs chapters next) keeps raising
    before = os.environ.get(MODE_ENV)
    os.environ.setdefault(MODE_ENV, "warn")
    try:
        return _execute_all(jobs, n_jobs, verbose, echo)
    finally:
        if before is None:
            os.environ.pop(MODE_ENV, None)
        else:
            os.environ[MODE_ENV] = before


def _execute_all(jobs, n_jobs, verbose, echo) -> list[Result]:
    alone = [j for j in jobs if j.timing]
    shared = [j for j in jobs if not j.timing]
    results: dict[int, Result] = {}
    done = 0
    width = max((len(_rel(j.src)) for j in jobs), default=0)

    def submit(pool, job):
        log = None if verbose else job.dest.with_suffix(".log")
        return pool.submit(execute_notebook, job.src, job.dest, text=job.text, timing=job.timing, log=log)

    def report(job, r):
        nonlocal done
        done += 1
        note = "  (measures time: ran alone)" if job.timing else ""
        if r.stderr:
            note += f"  ({len(r.stderr)} lines on the kernel's terminal: {_rel(r.log)})"
        if r.warnings:
            note += f"  ({len(r.warnings)} measured check(s) did not hold: a warning on the page)"
        echo(f"[{done:>{len(str(len(jobs)))}}/{len(jobs)}] {_rel(job.src):<{width}}  "
             f"{'ok    ' if r.ok else 'FAILED'} {r.seconds:5.0f} s{note}")
        if not r.ok:
            msg = r.error.splitlines()[0] if r.error else "failed"
            echo(f"    {msg[:157] + '...' if len(msg) > 160 else msg}")

    with ProcessPoolExecutor(max_workers=max(1, min(n_jobs, len(shared))) if shared else 1) as pool:
        for job in alone:  # nothing else runs meanwhile: each waits for the one before
            results[id(job)] = r = submit(pool, job).result()
            report(job, r)
        futures = {submit(pool, job): job for job in shared}
        for fut in as_completed(futures):
            job = futures[fut]
            results[id(job)] = r = fut.result()
            report(job, r)
    return [results[id(j)] for j in jobs]


def pages(student: bool) -> list[Path]:
    """The notebooks that are pages of the book (as ``book/conf.py``'s ``include_patterns``)."""
    srcs = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.py"))
    if not student:
        srcs += sorted((ROOT / "solutions").glob("[0-9][0-9]_*_solutions.py"))
    return srcs


def _sphinx(cmd: list[str], env: dict, log: Path, verbose: bool) -> int:
    if verbose:
        print("+", " ".join(cmd), flush=True)
        return subprocess.run(cmd, cwd=ROOT, env=env).returncode
    r = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log.write_text(r.stdout, encoding="utf-8")
    lines = [ln for ln in r.stdout.splitlines() if ln.strip() and not is_harmless(ln)]
    if r.returncode:
        tail = lines[-40:]
        print(f"sphinx-build failed (exit {r.returncode}); last lines of {_rel(log)}:", file=sys.stderr)
        print("\n".join("  " + ln for ln in tail), file=sys.stderr)
    elif lines:
        print(f"sphinx: {len(lines)} lines of warnings ({_rel(log)}):")
        print("\n".join("  " + ln for ln in lines[:40]) + ("\n  ..." if len(lines) > 40 else ""))
    return r.returncode


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--student", action="store_true", help="leave the worked solutions out")
    ap.add_argument("--out", type=Path, help="output folder (default build/book or build/book-student)")
    ap.add_argument("-j", "--jobs", default="auto",
                    help="notebooks that do not measure time executed at once (default auto: CPU cores - 1, "
                         "at least 1); notebooks that measure time always run alone")
    ap.add_argument("-v", "--verbose", action="store_true", help="show everything kernels, nbclient and Sphinx print")
    ap.add_argument("--strict", action="store_true",
                    help="fail the build on a measured check that does not hold (default: a warning on its page)")
    args = ap.parse_args(argv)
    n_jobs = default_jobs() if args.jobs == "auto" else int(args.jobs)
    edition = "book-student" if args.student else "book"
    out = (args.out or ROOT / "build" / edition).resolve()
    executed = ROOT / "build" / f".executed-{edition}"

    t0 = time.perf_counter()
    if out.exists():
        shutil.rmtree(out)  # a fresh site: nothing stale (old assets) may survive into it
    if executed.exists():
        shutil.rmtree(executed)  # nor a notebook executed by an earlier build
    vendor = book_assets.vendor(ROOT / "build" / "book-vendor")
    import lectures  # tools/lectures.py: the lecturer's guide, from book/lectures/*.toml, before anything runs
    try:
        lectures.write_page(ROOT / "book" / "_generated" / "lectures.md")
    except lectures.NotesError as e:
        print(f"{e}\nthe book was not built (python tools/lectures.py checks the speaker notes)", file=sys.stderr)
        return 1

    os.environ["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # the kernels inherit these
    os.environ[MODE_ENV] = "raise" if args.strict else "warn"
    os.environ.setdefault("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    jobs = plan(pages(args.student), executed)
    n_alone = sum(j.timing for j in jobs)
    print(f"executing {len(jobs)} notebooks: {n_alone} that measure time one at a time and alone, "
          f"then {len(jobs) - n_alone} more {n_jobs} at a time", flush=True)
    t_exec = time.perf_counter()
    results = execute_all(jobs, n_jobs=n_jobs, verbose=args.verbose)
    t_exec = time.perf_counter() - t_exec
    failed = [r for r in results if not r.ok]
    if failed:
        print(f"\n{len(failed)} of {len(results)} notebooks failed; the book was not built:", file=sys.stderr)
        for r in failed:
            print(format_failure(r), file=sys.stderr)
        return 1
    print(f"executed {len(results)} notebooks in {t_exec:.0f} s", flush=True)

    cmd = [sys.executable, "-m", "sphinx", "-b", "html", "-c", str(ROOT / "book"),
           "-d", str(ROOT / "build" / f".doctrees-{edition}"), "-j", "auto", "--keep-going",
           "-E", str(ROOT), str(out)]
    if not args.verbose:
        cmd.insert(-2, "-q")
    if args.student:
        cmd[3:3] = ["-t", "student"]
    env = dict(os.environ, LLMMATH_BOOK_VENDOR=str(vendor), LLMMATH_BOOK_EXECUTED=str(executed))
    t_sphinx = time.perf_counter()
    rc = _sphinx(cmd, env, executed / "sphinx.log", args.verbose)
    if rc:
        return rc
    print(f"rendered by Sphinx in {time.perf_counter() - t_sphinx:.0f} s", flush=True)
    cdn = book_assets.cdn_references(out)
    if cdn:
        print("the built book names a CDN (it must work offline):\n  " + "\n  ".join(cdn), file=sys.stderr)
        return 1
    print(f"book built in {time.perf_counter() - t0:.0f} s, no CDN references: {out / 'index.html'}")
    warned = format_warnings(results)
    if warned:
        print(warned)
    return 0


if __name__ == "__main__":
    sys.exit(main())
