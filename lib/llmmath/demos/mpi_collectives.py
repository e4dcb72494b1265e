"""Time real MPI collectives across ranks; the worker that :mod:`llmmath.demos.mpi_bench` launches.

Run it under an MPI launcher, one process per rank::

    mpiexec -n 2 python -m llmmath.demos.mpi_collectives --out results.json
    mpiexec -n 8 -f hosts python -m llmmath.demos.mpi_collectives \\
        --ops pingpong allreduce --sizes 8 4096 4194304 --repeats 50 --out r.json

Operations (MPI standard 4.0, chapters 3 and 6) and what "size" means
(the same ``n`` as in :mod:`llmmath.network`: one rank's whole buffer):

==========  ===================================================================
pingpong    ``MPI_Send`` ``n`` bytes from rank 0 to rank 1 and back; the time
            reported is one way (round trip / 2). Other ranks stay idle.
allreduce   ``MPI_Allreduce`` (sum) of a vector of ``n`` bytes on every rank.
allgather   ``MPI_Allgather``: each rank contributes ``n / p`` bytes; ``n`` is
            the gathered result.
alltoall    ``MPI_Alltoall``: each rank sends ``n`` bytes in total, ``n / p``
            to each rank (itself included).
==========  ===================================================================

Sizes are rounded to whole float32 elements (and, for allgather/alltoall, to a
multiple of ``4 p`` bytes); the JSON reports the bytes actually moved.

Method, per operation and size: float32 buffers of random normal values (not
zeros); ``--warmup`` untimed calls (the first touches the pages and sets up
the transport); then ``--repeats`` timed calls, each bracketed on every rank
by ``MPI_Barrier`` then ``MPI_Wtime`` before and after. Ranks leave a barrier
at slightly different moments, and a collective is as slow as its slowest
rank, so each call's time is the MAX of the ranks' local times
(``MPI_Allreduce(MAX)`` of the vector of local times). The reported time is
the median of those per-call maxima (with min, quartiles and max, to show the
spread: a single scheduler hiccup can make one call 1000x slower).
Which algorithm the library picks (ring, recursive doubling, ...) is its own
choice; Thakur, Rabenseifner & Gropp (IJHPCA 19(1), 2005) describe MPICH's.

Correctness is checked once per operation and size before timing: rank ``r``
sends ``base + r`` (``base`` a random vector every rank draws from the same
seed), so every rank knows exactly what it must receive. A mismatch stops the
run with exit status 3 and a message naming the operation, size and rank.

Rank 0 writes the JSON::

    {"n_ranks": p, "hostnames": [per rank], "mpi_library": "...",
     "mpi4py_version": "...", "warmup": w, "repeats": r,
     "statistic": "...",
     "ops": {op: {"n_bytes": [...], "time_s": [...], "time_s_min": [...],
                  "time_s_q1": [...], "time_s_q3": [...], "time_s_max": [...]}}}

Exit status: 0 ok, 2 bad arguments or too few ranks, 3 a failed correctness
check. Progress goes to stdout (rank 0, one line per operation); errors to
stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from ..units import fmt_bytes_binary

OPS = ("pingpong", "allreduce", "allgather", "alltoall")

#: 8 B to 4 MiB in steps of 4x, plus 4 MiB: 11 sizes. With 2 ranks on a 2-core
#: CPU the whole default run (4 ops) takes about 1 s including start-up.
DEFAULT_SIZES = tuple([2**k for k in range(3, 23, 2)] + [2**22])
DEFAULT_REPEATS = 20
DEFAULT_WARMUP = 3
_SEED = 20240607
_ITEM = 4  # bytes per float32

# Test hook: LLMMATH_MPI_CORRUPT=<op> corrupts the received buffer of that op on
# the last rank before the check, to exercise the failure path end to end.
_CORRUPT_ENV = "LLMMATH_MPI_CORRUPT"


def _elements(op: str, n_bytes: int, p: int) -> int:
    """float32 elements in one rank's buffer for ``op`` at ``n_bytes`` (>= 1, a multiple of p where needed)."""
    n = max(1, int(round(n_bytes / _ITEM)))
    if op in ("allgather", "alltoall"):
        n = max(1, int(round(n / p))) * p
    return n


class _CheckFailed(Exception):
    pass


def _expect(ok: bool, op: str, n_bytes: int, rank: int, what: str) -> None:
    if not ok:
        raise _CheckFailed(f"correctness check failed: {op} of {n_bytes} B on rank {rank}: {what}")


def _make_call(comm, MPI, op: str, n: int, base: np.ndarray):
    """Buffers for ``op`` with ``n`` float32 elements per rank; returns (call, check)."""
    rank, p = comm.Get_rank(), comm.Get_size()
    n_bytes = n * _ITEM
    corrupt = os.environ.get(_CORRUPT_ENV) == op and rank == (1 if op == "pingpong" else p - 1)

    if op == "pingpong":
        buf = base[:n].copy()  # rank 0 sends base; rank 1 echoes what it received

        def call():
            if rank == 0:
                comm.Send(buf, dest=1, tag=7)
                comm.Recv(buf, source=1, tag=8)
            elif rank == 1:
                comm.Recv(buf, source=0, tag=7)
                comm.Send(buf, dest=0, tag=8)

        def check():
            if corrupt:  # rank 1 alters the echo: rank 0 must notice
                comm.Recv(buf, source=0, tag=7)
                buf[0] += 1.0
                comm.Send(buf, dest=0, tag=8)
            else:
                call()
            if rank == 0:
                _expect(np.array_equal(buf, base[:n]), op, n_bytes, rank, "the echoed message differs from the one sent")
        return call, check

    if op == "allreduce":
        send = base[:n] + np.float32(rank)
        recv = np.empty_like(send)

        def call():
            comm.Allreduce(send, recv, op=MPI.SUM)

        def check():
            call()
            if corrupt:
                recv[-1] += 1.0
            # sum_r (base + r) = p base + p(p-1)/2; the order of additions differs by algorithm
            expected = p * base[:n].astype(np.float64) + p * (p - 1) / 2
            err = np.abs(recv - expected)
            tol = 1e-6 * p * (np.abs(expected) + p)
            _expect(bool(np.all(err <= tol)), op, n_bytes, rank,
                    f"sum differs from p*base + p(p-1)/2 at {int(np.argmax(err > tol))} (max error {err.max():.3g})")
        return call, check

    m = n // p  # elements per block
    if op == "allgather":
        send = base[:m] + np.float32(rank)
        recv = np.empty(n, dtype=np.float32)
        expected = (base[:m][None, :] + np.arange(p, dtype=np.float32)[:, None]).ravel()  # block j from rank j

        def call():
            comm.Allgather(send, recv)
    elif op == "alltoall":
        send = base[:n] + np.float32(rank)  # block j goes to rank j
        recv = np.empty(n, dtype=np.float32)
        mine = base[rank * m:(rank + 1) * m]
        expected = (mine[None, :] + np.arange(p, dtype=np.float32)[:, None]).ravel()  # block j = rank j's block for me

        def call():
            comm.Alltoall(send, recv)
    else:  # pragma: no cover - argparse restricts the choices
        raise ValueError(f"unknown op {op!r}; allowed: {OPS}")

    def check():
        call()
        if corrupt:
            recv[-1] += 1.0
        bad = recv != expected
        _expect(not bad.any(), op, n_bytes, rank,
                f"block {int(np.argmax(bad)) // m} (from rank {int(np.argmax(bad)) // m}) is not that rank's data")
    return call, check


def _time_op(comm, MPI, call, warmup: int, repeats: int) -> np.ndarray:
    """Per-call max-over-ranks times, seconds, shape ``(repeats,)``."""
    for _ in range(warmup):
        call()
    local = np.empty(repeats)
    for i in range(repeats):
        comm.Barrier()
        t0 = MPI.Wtime()
        call()
        local[i] = MPI.Wtime() - t0
    slowest = np.empty_like(local)
    comm.Allreduce(local, slowest, op=MPI.MAX)
    return slowest


def measure(comm, MPI, ops, sizes, repeats: int, warmup: int, progress: bool = True) -> dict:
    """Run the sweep on ``comm``; every rank returns the same result dict (see the module docstring).

    Raises:
        _CheckFailed: on every rank when any rank received wrong data; the
            message is empty on the ranks whose data were right.
    """
    rank, p = comm.Get_rank(), comm.Get_size()
    n_max = max(_elements(op, s, p) for op in ops for s in sizes)
    rng = np.random.default_rng(_SEED)  # same seed on every rank: everyone knows everyone's data
    base = rng.standard_normal(n_max, dtype=np.float32)
    out = {}
    for op in ops:
        t_op = time.perf_counter()
        elems = sorted({_elements(op, s, p) for s in sizes})
        n_bytes, med, q = [], [], []
        for n in elems:
            call, check = _make_call(comm, MPI, op, n, base)
            err = None
            try:
                check()
            except _CheckFailed as e:
                err = str(e)
            failed = comm.allreduce(err is not None, op=MPI.LOR)
            if failed:
                raise _CheckFailed(err or "")  # only the failing rank(s) print; the others exit quietly
            t = _time_op(comm, MPI, call, warmup, repeats)
            if op == "pingpong":
                t = t / 2.0  # one way
            n_bytes.append(n * _ITEM)
            med.append(float(np.median(t)))
            q.append([float(x) for x in np.percentile(t, [0, 25, 75, 100])])
        lo, q1, q3, hi = (list(col) for col in zip(*q))
        out[op] = {"n_bytes": n_bytes, "time_s": med, "time_s_min": lo, "time_s_q1": q1, "time_s_q3": q3,
                   "time_s_max": hi}
        if progress and rank == 0:
            print(f"  {op:<9} {len(n_bytes):>2} sizes  {fmt_bytes_binary(n_bytes[0])}: {med[0] * 1e6:.2f} us ... "
                  f"{fmt_bytes_binary(n_bytes[-1])}: {med[-1] * 1e6:.1f} us   ({time.perf_counter() - t_op:.2f} s)",
                  flush=True)
    return out


def _parse(argv):
    ap = argparse.ArgumentParser(
        prog="mpiexec -n N python -m llmmath.demos.mpi_collectives",
        description="Time MPI pingpong/allreduce/allgather/alltoall over a sweep of message sizes.")
    ap.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES),
                    help="message sizes in bytes (one rank's whole buffer); default 8 B..4 MiB")
    ap.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS), help="operations to time")
    ap.add_argument("--repeats", type=int, default=DEFAULT_REPEATS, help="timed calls per size (median reported)")
    ap.add_argument("--warmup", type=int, default=DEFAULT_WARMUP, help="untimed calls per size first")
    ap.add_argument("--out", required=True, help="JSON file rank 0 writes")
    ap.add_argument("--expect-ranks", type=int, default=None,
                    help="fail clearly unless exactly this many ranks started (guards against a launcher/library mismatch)")
    ap.add_argument("--quiet", action="store_true", help="no progress lines")
    a = ap.parse_args(argv)
    if any(s < 1 for s in a.sizes):
        ap.error(f"--sizes must be >= 1 byte, got {a.sizes}")
    if a.repeats < 1 or a.warmup < 0:
        ap.error(f"need --repeats >= 1 and --warmup >= 0, got {a.repeats} and {a.warmup}")
    return a


def local_reduce_bytes_per_s(n_bytes: int, repeats: int = 7) -> float:
    """How fast one rank adds a received vector into its own: vector bytes reduced per second.

    Times ``np.add(a, b, out=a)`` on float32 vectors of ``n_bytes`` (median of
    ``repeats``); an all-reduce spends ``(p-1)/p * n / rate`` on this arithmetic,
    a term the plain alpha-beta model leaves out.
    """
    import time

    n = max(int(n_bytes) // 4, 1024)
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    np.add(a, b, out=a)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.add(a, b, out=a)
        times.append(time.perf_counter() - t0)
    return 4.0 * n / float(np.median(times))


def mpi_world(worker: str, expect_ranks, max_ranks: int | None = None, limits: str = ""):
    """``(MPI, comm, rank, size, library)`` for an MPI worker, or ``None`` after saying why it cannot run.

    It cannot with fewer than 2 ranks, not ``expect_ranks`` of them (if given), or more than
    ``max_ranks`` (a worker's own limit, described by ``limits``, e.g. "at most --layers (8)").
    Rank 0 prints the reason to stderr: usually a launcher of another MPI than mpi4py's, which starts
    every process alone. mpi4py is imported here, so a worker module (and its --help) needs no MPI.
    """
    from mpi4py import MPI

    comm = MPI.COMM_WORLD
    rank, p = comm.Get_rank(), comm.Get_size()
    library = " ".join(MPI.Get_library_version().strip().splitlines()[0].split())
    if p < 2 or (expect_ranks is not None and p != expect_ranks) or (max_ranks is not None and p > max_ranks):
        if rank == 0:
            want = expect_ranks if expect_ranks is not None else ">= 2"
            print(f"llmmath.{worker}: started with {p} rank(s), need {want}{', ' + limits if limits else ''}. "
                  f"If you asked for more, the launcher belongs to a different MPI than the one mpi4py uses "
                  f"({library}): every process then runs alone. Use that library's mpiexec (for the pip "
                  "'mpich' wheel: the mpiexec next to python in the venv).", file=sys.stderr, flush=True)
        return None
    return MPI, comm, rank, p, library


def write_json(doc: dict, path: str) -> None:
    """Write ``doc`` to ``path`` whole or not at all (a temporary file, then a rename)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def main(argv=None) -> int:
    a = _parse(argv)
    world = mpi_world("mpi_collectives", a.expect_ranks)
    if world is None:
        return 2
    MPI, comm, rank, p, library = world
    hostnames = comm.gather(MPI.Get_processor_name(), root=0)
    if rank == 0 and not a.quiet:
        print(f"llmmath.demos.mpi_collectives: {p} ranks on {len(set(hostnames))} host(s), {library}", flush=True)
    try:
        ops = measure(comm, MPI, list(dict.fromkeys(a.ops)), a.sizes, a.repeats, a.warmup, progress=not a.quiet)
    except _CheckFailed as e:
        if str(e):
            print(f"llmmath.demos.mpi_collectives: {e}", file=sys.stderr, flush=True)
        return 3
    if rank == 0:
        doc = {
            "n_ranks": p, "hostnames": hostnames, "mpi_library": library,
            "reduce_bytes_per_s": local_reduce_bytes_per_s(max(a.sizes)),
            "mpi4py_version": __import__("mpi4py").__version__,
            "warmup": a.warmup, "repeats": a.repeats,
            "statistic": "median over repeats of the max over ranks of MPI_Wtime after a Barrier; "
                         "pingpong: one way = round trip / 2",
            "ops": ops,
        }
        write_json(doc, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
