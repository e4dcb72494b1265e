"""Measure real MPI collectives and set them beside the alpha-beta model.

:func:`run` launches :mod:`llmmath.demos.mpi_collectives` under an MPI launcher, one
process per rank, and reads back what it measured: a ping-pong between ranks 0
and 1, and ``MPI_Allreduce``, ``MPI_Allgather`` and ``MPI_Alltoall`` over a
sweep of message sizes. :meth:`CollectiveResults.fit` fits ``alpha + n / beta``
to the ping-pong (:func:`llmmath.network.fit_alpha_beta`), and
:meth:`CollectiveResults.predicted` feeds that ``alpha`` and ``beta`` into
:mod:`llmmath.network`'s formulas for the collectives, so you can see how far
a two-parameter link model carries. Importing this module imports no MPI.

Install: ``pip install -e ".[mpi]"`` (or ``.[test]``) brings ``mpi4py`` and,
on Linux, the ``mpich`` wheel, whose ``mpiexec`` lands next to ``python`` in
the virtual environment; :func:`run` looks there first, then on ``PATH``.

One machine (ranks talk through shared memory)::

    from llmmath import mpi_bench
    res = mpi_bench.run(n_procs=2)
    print(res.table()); mpi_bench.plot(res)

Several nodes (ranks talk over the network). Every node must see the same
Python environment at the same path (a shared filesystem), and the launcher
must belong to the MPI library mpi4py was built for:

* MPICH / Intel MPI (Hydra): a hostfile of ``host:slots`` lines, passed as
  ``mpiexec -f hosts``: ``run(n_procs=8, hostfile="hosts")``.
* Open MPI: a hostfile of ``host slots=N`` lines, passed as ``mpirun
  --hostfile hosts``: ``run(n_procs=8, launcher="mpirun", hostfile="hosts")``.
  Open MPI refuses more ranks than cores unless told: ``launcher="mpirun
  --oversubscribe"``.
* Slurm: inside an allocation (``salloc -N 2 --ntasks-per-node 4``),
  ``run(n_procs=8, launcher="srun")`` (add e.g. ``--mpi=pmix`` to the
  launcher string if your site needs it); Slurm supplies the hosts.

:func:`run_pipeline` launches :mod:`llmmath.demos.mpi_pipeline` the same way: a stack
of matmul layers run on one rank, then split into stages over the ranks with
micro-batches in flight, and one activation message's hop (chapter 6).

On a batch system you can also run the worker yourself
(``srun python -m llmmath.demos.mpi_collectives --out r.json``) and load the file
with :meth:`CollectiveResults.from_json`.

Sources: MPI standard 4.0 (MPI Forum, 2021), ch. 3 (point-to-point) and 6
(collectives); the algorithms MPICH chooses: Thakur, Rabenseifner & Gropp,
"Optimization of collective communication operations in MPICH", IJHPCA 19(1),
2005.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from .. import network
from .._validate import non_negative, positive, positive_int, result
from .mpi_collectives import DEFAULT_REPEATS, DEFAULT_SIZES, OPS
from ..units import fmt_bytes_binary

__all__ = ["CollectiveResults", "run", "run_pipeline", "run_training", "plot", "OPS", "DEFAULT_SIZES"]

_INSTALL_HINT = 'pip install -e ".[mpi]" (or ".[test]"), which installs mpi4py and, on Linux, the mpich wheel with its mpiexec'


def _which(name: str, path: str | None = None) -> str | None:
    """``shutil.which``; a seam for tests."""
    return shutil.which(name, path=path)


def _have_mpi4py() -> bool:
    return importlib.util.find_spec("mpi4py") is not None


def _find_launcher(launcher: str | Sequence[str] | None) -> list[str]:
    """The launcher command as a list: ``launcher`` if given, else ``mpiexec``
    next to ``sys.executable`` (the venv's bin), else ``mpiexec`` or ``mpirun`` on PATH.

    Raises:
        RuntimeError: nothing found (with the install hint).
    """
    if launcher is not None:
        parts = shlex.split(launcher) if isinstance(launcher, str) else [str(x) for x in launcher]
        if not parts:
            raise ValueError("launcher must name a program, e.g. 'mpiexec', 'mpirun' or 'srun'")
        exe = parts[0] if os.path.sep in parts[0] and os.access(parts[0], os.X_OK) else _which(parts[0])
        if exe is None:
            raise RuntimeError(f"launcher {parts[0]!r} not found on PATH. Install MPI for Python with {_INSTALL_HINT}, "
                               "or pass the full path of your MPI's mpiexec/mpirun/srun")
        return [exe, *parts[1:]]
    venv_bin = str(Path(sys.executable).parent)  # not resolved: a venv's python is a symlink
    for name, path in (("mpiexec", venv_bin), ("mpiexec", None), ("mpirun", None)):
        exe = _which(name, path)
        if exe is not None:
            return [exe]
    raise RuntimeError(f"no MPI launcher found (looked for mpiexec in {venv_bin} and mpiexec/mpirun on PATH). "
                       f"Install it with {_INSTALL_HINT}; or pass launcher='srun' / a full path")


@functools.lru_cache(maxsize=None)
def _launcher_family(exe: str) -> str:
    """``"slurm"``, ``"hydra"`` (MPICH, Intel MPI), ``"openmpi"`` or ``"unknown"``, from ``exe --version``."""
    if Path(exe).name.startswith("srun"):
        return "slurm"
    try:
        v = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=15, stdin=subprocess.DEVNULL)
        text = (v.stdout + v.stderr).lower()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "hydra" in text or "mpich" in text or "intel" in text:
        return "hydra"
    if "open mpi" in text or "openrte" in text or "prrte" in text:
        return "openmpi"
    return "unknown"


# Per launcher family: how to pass a hostfile, and how to pin each rank to its own core.
_HOSTFILE_FLAG = {"hydra": ["-f"], "openmpi": ["--hostfile"], "unknown": ["--hostfile"]}
_BIND_FLAGS = {"hydra": ["-bind-to", "core"], "openmpi": ["--bind-to", "core"], "slurm": ["--cpu-bind=cores"],
               "unknown": []}


@dataclasses.dataclass(frozen=True)
class CollectiveResults:
    """What :func:`run` measured.

    Attributes:
        n_ranks: number of MPI ranks ``p``.
        ops: ``{op: (n_bytes, time_s)}``, two float arrays of shape ``(k,)``
            sorted by size: bytes of one rank's whole buffer (see
            :mod:`llmmath.network`) and the median time in seconds (pingpong:
            one way).
        spread: ``{op: (time_s_q1, time_s_q3)}``, the quartiles over the repeats
            (same shapes); the JSON also keeps min and max.
        hostnames: the host of each rank, length ``p``.
        mpi_library: the MPI library's version line.
        repeats: timed calls per size.
        reduce_bytes_per_s: how fast rank 0 adds one vector into another (bytes of
            vector per second), measured beside the collectives; the all-reduce
            model's reduction term uses it (None in older result files).
    """

    n_ranks: int
    ops: dict
    spread: dict = dataclasses.field(default_factory=dict, repr=False)
    hostnames: tuple = ()
    mpi_library: str = ""
    repeats: int = 0
    reduce_bytes_per_s: float | None = None

    @classmethod
    def from_dict(cls, doc: dict) -> "CollectiveResults":
        """From the JSON document :mod:`llmmath.demos.mpi_collectives` writes.

        Raises:
            ValueError: a required key is missing or the arrays do not match.
        """
        try:
            ops, spread = {}, {}
            for op, v in doc["ops"].items():
                n = np.asarray(v["n_bytes"], dtype=float)
                t = np.asarray(v["time_s"], dtype=float)
                if n.shape != t.shape or n.ndim != 1 or n.size == 0:
                    raise ValueError(f"{op}: {n.size} sizes but {t.size} times")
                ops[op] = (n, t)
                if "time_s_q1" in v and "time_s_q3" in v:
                    spread[op] = (np.asarray(v["time_s_q1"], dtype=float), np.asarray(v["time_s_q3"], dtype=float))
            gamma = doc.get("reduce_bytes_per_s")
            return cls(int(doc["n_ranks"]), ops, spread, tuple(doc.get("hostnames", ())),
                       str(doc.get("mpi_library", "")), int(doc.get("repeats", 0)),
                       float(gamma) if gamma else None)
        except KeyError as e:
            raise ValueError(f"not an llmmath.demos.mpi_collectives result: missing key {e}") from None

    @classmethod
    def from_json(cls, path) -> "CollectiveResults":
        """Load a JSON file written by ``python -m llmmath.demos.mpi_collectives --out PATH``."""
        with open(path) as f:
            return cls.from_dict(json.load(f))

    def fit(self) -> tuple[float, float]:
        """``(alpha_s, beta_bytes_per_s)`` fitted to the ping-pong sweep (one-way times).

        Raises:
            ValueError: no pingpong in the results, or a sweep the fit refuses
                (fewer than 2 sizes, time not growing with size).
        """
        if "pingpong" not in self.ops:
            raise ValueError(f"fit() needs the pingpong sweep; these results hold {sorted(self.ops)}. "
                             "Run with ops including 'pingpong'")
        return network.fit_alpha_beta(*self.ops["pingpong"])

    def model_time_s(self, op: str, n_bytes, alpha_s: float | None = None, bytes_per_s: float | None = None):
        """Alpha-beta model time (seconds) of ``op`` at ``n_bytes`` (any shape) on ``n_ranks`` ranks.

        ``alpha_s`` and ``bytes_per_s`` default to :meth:`fit`. pingpong is
        ``alpha + n / beta``; the collectives use :mod:`llmmath.network`'s ring
        all-reduce, ring all-gather and pairwise all-to-all. For ``p = 2`` every
        standard all-reduce algorithm costs the same ``2 alpha + n / beta``.
        All-reduce adds the reduction arithmetic, ``(p-1)/p * n / gamma``, with
        ``gamma`` = :attr:`reduce_bytes_per_s` measured on rank 0 (left out when
        unknown). The model has no term for the library switching protocols
        (eager to rendezvous) as size grows.

        Raises:
            ValueError: unknown ``op``.
        """
        if alpha_s is None or bytes_per_s is None:
            a, b = self.fit()
            alpha_s = a if alpha_s is None else alpha_s
            bytes_per_s = b if bytes_per_s is None else bytes_per_s
        p = self.n_ranks
        if op == "pingpong":
            return result(non_negative("n_bytes", n_bytes) / positive("bytes_per_s", bytes_per_s)
                          + non_negative("alpha_s", alpha_s))
        if op == "allreduce":
            return network.all_reduce_time_s(n_bytes, p, bytes_per_s, alpha_s,
                                             reduce_bytes_per_s=self.reduce_bytes_per_s)
        if op == "allgather":
            return network.all_gather_time_s(n_bytes, p, bytes_per_s, alpha_s)
        if op == "alltoall":
            return network.all_to_all_time_s(n_bytes, p, bytes_per_s, alpha_s)
        raise ValueError(f"op must be one of {OPS}, got {op!r}")

    def predicted(self, op: str) -> np.ndarray:
        """Model times (seconds) at the sizes measured for ``op``, with the ping-pong ``alpha``, ``beta``.

        Raises:
            KeyError: ``op`` was not measured. ValueError: see :meth:`fit`.
        """
        if op not in self.ops:
            raise KeyError(f"{op!r} was not measured; measured: {sorted(self.ops)}")
        return np.asarray(self.model_time_s(op, self.ops[op][0]), dtype=float)

    def table(self) -> str:
        """Text table: op, size, measured, predicted, measured/predicted (one row per op and size)."""
        alpha, beta = self.fit()
        rows = [f"p = {self.n_ranks} ranks, {self.mpi_library or 'MPI'}; ping-pong fit: "
                f"alpha = {alpha * 1e6:.2f} us, beta = {beta / 1e9:.2f} GB/s",
                f"{'op':<10} {'size':>9} {'measured':>12} {'predicted':>12} {'meas/pred':>9}"]
        for op, (n, t) in self.ops.items():
            pred = self.predicted(op)
            for i in range(n.size):
                rows.append(f"{op:<10} {fmt_bytes_binary(n[i]):>9} {t[i] * 1e6:>10.2f}us {pred[i] * 1e6:>10.2f}us "
                            f"{t[i] / pred[i]:>9.2f}")
        return "\n".join(rows)


def _kill(proc: subprocess.Popen) -> None:
    """Stop the launcher and the ranks it started (its own process group)."""
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, AttributeError):  # already gone, or no process groups (Windows)
        proc.kill()


def _launch(module: str, worker_args: list, parse, n_procs: int, launcher, hostfile, timeout_s: float,
            progress: bool, out, bind: bool):
    """Run ``LAUNCHER [hostfile flags] [BIND] -n n_procs python -m MODULE ARGS --out JSON --expect-ranks n_procs``.

    The one launching machinery of this module (:func:`run`, :func:`run_pipeline`): finds the
    launcher, puts this ``llmmath`` on the ranks' ``PYTHONPATH``, streams rank 0's stdout when
    ``progress``, stops the whole process group after ``timeout_s``, and returns
    ``parse(document)`` of the JSON rank 0 wrote, after checking it ran on ``n_procs`` ranks.

    Raises:
        ValueError, FileNotFoundError, RuntimeError: as :func:`run` documents.
    """
    if timeout_s <= 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    if not _have_mpi4py():
        raise RuntimeError(f"mpi4py is not installed in {sys.executable}. Install it with {_INSTALL_HINT}")
    cmd = _find_launcher(launcher)
    family = _launcher_family(cmd[0]) if (hostfile is not None or bind) else "unknown"
    if hostfile is not None:
        if family == "slurm":
            raise ValueError("srun takes its hosts from the Slurm allocation; pass hostfile=None")
        if not Path(hostfile).is_file():
            raise FileNotFoundError(f"hostfile {str(hostfile)!r} does not exist")
        cmd += [*_HOSTFILE_FLAG[family], str(hostfile)]
    if bind:
        cmd += _BIND_FLAGS[family]

    lib_dir = str(Path(__file__).resolve().parents[2])  # lib/, so the ranks import this llmmath
    env = dict(os.environ)
    env["PYTHONPATH"] = lib_dir + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("OMP_NUM_THREADS", "1")  # the ranks need no threads of their own

    with tempfile.TemporaryDirectory(prefix="llmmath_mpi_") as tmp:
        json_path = str(out) if out is not None else os.path.join(tmp, "results.json")
        if out is not None and os.path.exists(json_path):
            os.remove(json_path)  # never read back a stale file
        launch = cmd + ["-n", str(n_procs)]
        worker = [sys.executable, "-m", module, *worker_args, "--out", json_path, "--expect-ranks", str(n_procs)]
        cmd = launch + worker
        if progress:
            print(f"mpi_bench: {shlex.join(launch)} python -m {module} ...", flush=True)
        err_path = os.path.join(tmp, "stderr.txt")
        t0 = time.perf_counter()
        timed_out = threading.Event()
        with open(err_path, "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True,
                                    env=env, start_new_session=True)

            def on_timeout():
                timed_out.set()
                _kill(proc)

            timer = threading.Timer(timeout_s, on_timeout)
            timer.start()
            out_lines = []
            try:
                for line in proc.stdout:
                    out_lines.append(line)
                    if progress:
                        print(line.rstrip("\n"), flush=True)
                rc = proc.wait()
            except BaseException:  # KeyboardInterrupt in a notebook: do not leave ranks spinning
                _kill(proc)
                raise
            finally:
                timer.cancel()
                proc.stdout.close()
        with open(err_path) as f:
            stderr = f.read()
        tail = "\n".join(stderr.strip().splitlines()[-25:])[-3000:] or "(stderr was empty)"
        if timed_out.is_set():
            raise RuntimeError(f"MPI run timed out after {timeout_s:g} s and was stopped: {shlex.join(cmd)}\n"
                               f"--- stderr (tail) ---\n{tail}")
        if rc != 0:
            raise RuntimeError(f"MPI run failed with exit status {rc}: {shlex.join(cmd)}\n"
                               f"--- stderr (tail) ---\n{tail}")
        if not os.path.exists(json_path):
            raise RuntimeError(f"MPI run exited 0 but wrote no {json_path}: {shlex.join(cmd)}\n"
                               f"--- stdout ---\n{''.join(out_lines)[-2000:]}\n--- stderr (tail) ---\n{tail}")
        with open(json_path) as f:
            res = parse(json.load(f))
    if res.n_ranks != n_procs:
        raise RuntimeError(f"asked for {n_procs} ranks but the run had {res.n_ranks}")
    if progress:
        print(f"mpi_bench: done in {time.perf_counter() - t0:.1f} s", flush=True)
    return res


def run(n_procs: int = 2, sizes: Sequence[int] | None = None, ops: Sequence[str] = OPS,
        repeats: int = DEFAULT_REPEATS, launcher: str | Sequence[str] | None = None,
        hostfile: str | os.PathLike | None = None, timeout_s: float = 120, progress: bool = True,
        out: str | os.PathLike | None = None, bind: bool = True) -> CollectiveResults:
    """Launch ``n_procs`` MPI ranks that time ``ops`` at ``sizes``; return the medians.

    Spawns ``LAUNCHER [-f|--hostfile HOSTFILE] [BIND] -n n_procs python -m
    llmmath.demos.mpi_collectives ...`` with this interpreter (``sys.executable``)
    and waits for it; progress lines from rank 0 are printed as they come when
    ``progress`` is true. See the module docstring for launchers and hostfiles,
    and :mod:`llmmath.demos.mpi_collectives` for the timing method.

    Args:
        n_procs: ranks, >= 2 (pingpong needs two).
        sizes: message sizes in bytes, one rank's whole buffer; default
            ``DEFAULT_SIZES`` (8 B to 4 MiB, 11 sizes; about 1 s for 2 ranks).
        ops: any of ``OPS`` (pingpong, allreduce, allgather, alltoall).
        repeats: timed calls per size (after 3 warm-up calls); the median is kept.
        launcher: ``"mpiexec"``, ``"mpirun --oversubscribe"``, ``"srun --mpi=pmix"``,
            a path, or a list of arguments; default: ``mpiexec`` next to
            ``sys.executable``, else ``mpiexec``/``mpirun`` on PATH.
        hostfile: passed as ``-f`` to MPICH/Intel MPI (Hydra), ``--hostfile`` to
            others (Open MPI). Not for ``srun`` (Slurm knows the hosts).
        timeout_s: the whole run is stopped after this many seconds.
        out: also keep the JSON here (default: a temporary file, deleted).
        bind: pin each rank to its own core (``-bind-to core`` for Hydra,
            ``--bind-to core`` for Open MPI, ``--cpu-bind=cores`` for srun;
            nothing for an unrecognised launcher). Unpinned ranks can share a
            core when something else is busy, which makes a ping-pong faster
            (cache-hot copies) and a collective slower (the ranks take turns):
            measured here, all-reduce/model went from about 2x to 4.5x with
            one competing busy process. Set False if your launcher string
            already says how to bind.

    Returns:
        :class:`CollectiveResults`.

    Raises:
        ValueError: ``n_procs`` < 2, an unknown op, sizes < 1 byte, repeats < 1,
            a hostfile with ``srun``.
        FileNotFoundError: ``hostfile`` does not exist.
        RuntimeError: mpi4py or the launcher is missing (says what to install);
            the run failed, timed out, or started the wrong number of ranks
            (with the tail of its stderr).
    """
    n_procs = positive_int("n_procs", n_procs)
    if n_procs < 2:
        raise ValueError(f"n_procs must be >= 2 (pingpong and every collective need two ranks), got {n_procs}")
    ops = list(dict.fromkeys(ops if not isinstance(ops, str) else [ops]))
    bad = [op for op in ops if op not in OPS]
    if bad or not ops:
        raise ValueError(f"ops must be a non-empty subset of {OPS}, got {ops!r}")
    sizes = list(DEFAULT_SIZES if sizes is None else sizes)
    if not sizes or any(isinstance(s, bool) or int(s) != s or s < 1 for s in sizes):
        raise ValueError(f"sizes must be whole numbers of bytes >= 1, got {sizes!r}")
    repeats = positive_int("repeats", repeats)
    worker = ["--ops", *ops, "--sizes", *[str(int(s)) for s in sizes], "--repeats", str(repeats)]
    return _launch("llmmath.demos.mpi_collectives", worker, CollectiveResults.from_dict, n_procs, launcher, hostfile,
                   timeout_s, progress, out, bind)


def plot(results: CollectiveResults, ax=None):
    """Measured (markers: median over repeats, bars: quartiles) vs alpha-beta model (lines), log-log.

    One colour per op; the model uses the ping-pong fit (:meth:`CollectiveResults.fit`).
    Returns the Matplotlib ``Axes``.
    """
    from ..course.plots import new_axes

    if ax is None:
        _, ax = new_axes()
    alpha, beta = results.fit()
    for op, (n, t) in results.ops.items():
        dense = np.geomspace(n.min(), n.max(), 200)
        line, = ax.loglog(dense, results.model_time_s(op, dense, alpha, beta), "-", lw=1.2, label=f"{op} model")
        if op in results.spread:
            lo, hi = results.spread[op]
            ax.errorbar(n, t, yerr=[t - lo, hi - t], fmt="o", ms=4, color=line.get_color(), elinewidth=0.6,
                        capsize=0, label=f"{op} measured")
        else:
            ax.plot(n, t, "o", ms=4, color=line.get_color(), label=f"{op} measured")
    ax.set_xlabel("message size n (bytes, one rank's buffer)")
    ax.set_ylabel("time (s, median; pingpong one way)")
    ax.set_title(f"p = {results.n_ranks}, {results.mpi_library or 'MPI'}: alpha = {alpha * 1e6:.2f} us, "
                 f"beta = {beta / 1e9:.2f} GB/s (ping-pong fit)", fontsize=9)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    return ax


def run_pipeline(n_procs: int = 2, layers: int = 8, d_model: int = 256, batch: int = 16, micro_batches: int = 8,
                 rounds: int = 20, hop_repeats: int = 50, launcher: str | Sequence[str] | None = None,
                 hostfile: str | os.PathLike | None = None, timeout_s: float = 120, progress: bool = True,
                 out: str | os.PathLike | None = None, bind: bool = True):
    """Launch :mod:`llmmath.demos.mpi_pipeline` on ``n_procs`` ranks: a matmul stack unpipelined vs pipelined, and the hop.

    Same launching as :func:`run` (launcher, hostfile, binding, timeout, ``out``).
    Defaults: 8 layers of 256 x 256 float32 (2 MiB of weights), 8 micro-batches
    of 16 tokens, 20 alternated rounds of a few milliseconds each (short, so
    some run between two preemptions), a 16 KiB hop ping-ponged 50 times.

    Returns:
        :class:`llmmath.demos.mpi_pipeline.PipelineResults`.

    Raises:
        ValueError: ``n_procs`` < 2 or more ranks than layers, a count < 1.
        RuntimeError, FileNotFoundError: as :func:`run`.
    """
    from .mpi_pipeline import PipelineResults

    n_procs = positive_int("n_procs", n_procs)
    counts = dict(layers=layers, d_model=d_model, batch=batch, micro_batches=micro_batches, rounds=rounds,
                  hop_repeats=hop_repeats)
    counts = {k: positive_int(k, v) for k, v in counts.items()}
    if not 2 <= n_procs <= counts["layers"]:
        raise ValueError(f"n_procs must be >= 2 and <= layers ({counts['layers']}), got {n_procs}")
    worker = [a for k, v in counts.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    return _launch("llmmath.demos.mpi_pipeline", worker, PipelineResults.from_dict, n_procs, launcher, hostfile,
                   timeout_s, progress, out, bind)


def run_training(n_procs: int = 2, layers: int = 4, d_model: int = 512, batch: int = 64, micro_batch: int = 256,
                 micro_batches: int = 4, rounds: int = 15, launcher: str | Sequence[str] | None = None,
                 hostfile: str | os.PathLike | None = None, timeout_s: float = 120, progress: bool = True,
                 out: str | os.PathLike | None = None, bind: bool = True):
    """Launch :mod:`llmmath.demos.mpi_train` on ``n_procs`` ranks: a data-parallel step (with and without overlap) and
    a training pipeline (GPipe and 1F1B) of a small NumPy MLP, with a ping-pong sweep for alpha and beta (chapter 10).

    Same launching as :func:`run`. Defaults: 4 layers of 512 x 512 float32 (4 MiB of
    gradients), a global batch of 64 rows, pipeline micro-batches of 256 rows, 4 of them,
    15 rounds of each (about 3 s on 2 cores).

    Returns:
        :class:`llmmath.demos.mpi_train.TrainingResults`.

    Raises:
        ValueError: ``n_procs`` < 2, more ranks than layers or batch rows, a count < 1.
        RuntimeError, FileNotFoundError: as :func:`run`.
    """
    from .mpi_train import TrainingResults

    n_procs = positive_int("n_procs", n_procs)
    counts = dict(layers=layers, d_model=d_model, batch=batch, micro_batch=micro_batch, micro_batches=micro_batches,
                  rounds=rounds)
    counts = {k: positive_int(k, v) for k, v in counts.items()}
    if not 2 <= n_procs <= min(counts["layers"], counts["batch"]):
        raise ValueError(f"n_procs must be >= 2 and <= layers ({counts['layers']}) and batch ({counts['batch']}), "
                         f"got {n_procs}")
    worker = [a for k, v in counts.items() for a in (f"--{k.replace('_', '-')}", str(v))]
    return _launch("llmmath.demos.mpi_train", worker, TrainingResults.from_dict, n_procs, launcher, hostfile,
                   timeout_s, progress, out, bind)
