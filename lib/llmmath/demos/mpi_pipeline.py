"""A real two-stage (or P-stage) pipeline over MPI ranks; the worker :func:`llmmath.demos.mpi_bench.run_pipeline` launches.

A small stack of ``--layers`` dense layers (``d x d`` float32 matmuls, the
same weights on every rank, drawn from one seed) processes ``--micro-batches``
micro-batches of ``--batch`` tokens each, two ways, alternated for
``--rounds`` rounds:

* **unpipelined**: rank 0 runs every layer on every micro-batch; the other
  ranks sleep (they poll a non-blocking barrier every 0.2 ms, so they leave
  the cores to rank 0 and to whatever else runs).
* **pipelined**: rank ``r`` runs layers ``r L/P .. (r+1) L/P - 1`` and sends
  each micro-batch's activations (``batch x d`` float32) to rank ``r + 1``
  (``MPI_Isend``; the next rank ``MPI_Recv``), so up to ``P`` micro-batches are
  in flight. Time: from a barrier until the last rank has finished, the max
  over ranks of their local ``perf_counter`` spans.

Also measured: each stage's compute per micro-batch (median, in the pipelined
rounds), and the **hop**: a ping-pong of one activation message between ranks
0 and 1 (one way = round trip / 2, ``--hop-repeats`` times after 5 warm-ups).
The last rank checks once that the pipelined output equals the stack run
whole (exit status 3 if not).

Run it under an MPI launcher::

    mpiexec -n 2 python -m llmmath.demos.mpi_pipeline --out pipe.json

and load the JSON with :meth:`PipelineResults.from_json`. Importing this
module imports no MPI.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import numpy as np

from .mpi_collectives import mpi_world, write_json

_SEED = 20240612


@dataclasses.dataclass(frozen=True)
class PipelineResults:
    """What the pipeline worker measured (seconds).

    Attributes:
        n_ranks: stages ``P``.
        layers, d_model, batch, micro_batches: the stack and the work.
        unpipelined_s, pipelined_s: per round, the time for all micro-batches.
        stage_s: per rank, median compute time of its stage for one micro-batch.
        hop_bytes: one activation message (``batch x d_model x 4``).
        hop_s: one-way times of the ping-pong at ``hop_bytes`` (all repeats).
    """

    n_ranks: int
    layers: int
    d_model: int
    batch: int
    micro_batches: int
    unpipelined_s: np.ndarray
    pipelined_s: np.ndarray
    stage_s: np.ndarray
    hop_bytes: int
    hop_s: np.ndarray
    mpi_library: str = ""

    @classmethod
    def from_dict(cls, doc: dict) -> "PipelineResults":
        try:
            return cls(int(doc["n_ranks"]), int(doc["layers"]), int(doc["d_model"]), int(doc["batch"]),
                       int(doc["micro_batches"]), np.asarray(doc["unpipelined_s"], float),
                       np.asarray(doc["pipelined_s"], float), np.asarray(doc["stage_s"], float),
                       int(doc["hop_bytes"]), np.asarray(doc["hop_s"], float), str(doc.get("mpi_library", "")))
        except KeyError as e:
            raise ValueError(f"not an llmmath.demos.mpi_pipeline result: missing key {e}") from None

    @classmethod
    def from_json(cls, path) -> "PipelineResults":
        with open(path) as f:
            return cls.from_dict(json.load(f))

    @property
    def tokens(self) -> int:
        """Tokens per round: ``micro_batches * batch``."""
        return self.micro_batches * self.batch

    @property
    def unpipelined_s_per_token(self) -> float:
        """Fastest round, per token, one rank running every layer (load only adds time, so the minimum is the
        robust statistic of a round that lasts a few scheduler slices)."""
        return float(np.min(self.unpipelined_s)) / self.tokens

    @property
    def pipelined_s_per_token(self) -> float:
        """Fastest round, per token, ``P`` ranks with micro-batches in flight."""
        return float(np.min(self.pipelined_s)) / self.tokens

    @property
    def hop_median_s(self) -> float:
        return float(np.median(self.hop_s))

    def predicted_pipelined_s_per_token(self) -> float:
        """From the stage times measured in the same run: the slowest stage sets the pace, plus filling the pipe.

        ``(micro_batches + P - 1) * max(stage_s) / tokens`` (the hops overlap with compute, left out).
        """
        return (self.micro_batches + self.n_ranks - 1) * float(self.stage_s.max()) / self.tokens

    def predicted_unpipelined_s_per_token(self) -> float:
        """One rank does every stage's work: ``micro_batches * sum(stage_s) / tokens``."""
        return self.micro_batches * float(self.stage_s.sum()) / self.tokens


def _weights(layers: int, d: int) -> list:
    rng = np.random.default_rng(_SEED)
    return [(rng.standard_normal((d, d), dtype=np.float32) / np.float32(np.sqrt(d))) for _ in range(layers)]


def _stack(x: np.ndarray, ws) -> np.ndarray:
    for w in ws:
        x = x @ w
    return x


def _idle_barrier(comm, poll_s: float = 2e-4) -> None:
    """A barrier that sleeps while it waits (a plain MPI_Barrier spins on a core)."""
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll_s)


def measure(comm, MPI, layers: int, d: int, batch: int, micro_batches: int, rounds: int, hop_repeats: int) -> dict:
    rank, p = comm.Get_rank(), comm.Get_size()
    ws = _weights(layers, d)
    bounds = np.linspace(0, layers, p + 1).round().astype(int)
    mine = ws[bounds[rank]:bounds[rank + 1]]
    rng = np.random.default_rng(_SEED + 1)
    xs = [rng.standard_normal((batch, d), dtype=np.float32) for _ in range(micro_batches)]
    recv = [np.empty((batch, d), dtype=np.float32) for _ in range(micro_batches)]
    _stack(xs[0], ws)  # warm up BLAS

    # Correctness, once: the pipeline's output equals the whole stack.
    h = xs[0] if rank == 0 else None
    if rank > 0:
        comm.Recv(recv[0], source=rank - 1, tag=0)
        h = recv[0]
    h = _stack(h, mine)
    if rank < p - 1:
        comm.Send(np.ascontiguousarray(h), dest=rank + 1, tag=0)
    ok = bool(np.allclose(h, _stack(xs[0], ws), rtol=1e-4, atol=1e-4)) if rank == p - 1 else True
    if not comm.allreduce(ok, op=MPI.LAND):
        return {}

    unpiped, piped, stage = [], [], []
    for _ in range(rounds):
        _idle_barrier(comm)
        if rank == 0:
            t0 = time.perf_counter()
            for x in xs:
                _stack(x, ws)
            unpiped.append(time.perf_counter() - t0)
        _idle_barrier(comm)
        comm.Barrier()
        t0 = time.perf_counter()
        reqs = []
        for i in range(micro_batches):
            if rank > 0:
                comm.Recv(recv[i], source=rank - 1, tag=i)
            s0 = time.perf_counter()
            out = _stack(xs[i] if rank == 0 else recv[i], mine)
            stage.append(time.perf_counter() - s0)
            if rank < p - 1:
                out = np.ascontiguousarray(out)  # kept in reqs until Waitall: Isend must not lose its buffer
                reqs.append((comm.Isend(out, dest=rank + 1, tag=i), out))
        MPI.Request.Waitall([r for r, _ in reqs])
        piped.append(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX))
    stage_all = comm.gather(float(np.median(stage)), root=0)

    # Hop: ping-pong of one activation message between ranks 0 and 1.
    _idle_barrier(comm)
    buf = np.ascontiguousarray(xs[0])
    hops = []
    if rank in (0, 1):
        other = 1 - rank
        for k in range(5 + hop_repeats):
            t0 = time.perf_counter()
            if rank == 0:
                comm.Send(buf, dest=other, tag=1000)
                comm.Recv(buf, source=other, tag=1001)
            else:
                comm.Recv(buf, source=other, tag=1000)
                comm.Send(buf, dest=other, tag=1001)
            if k >= 5:
                hops.append((time.perf_counter() - t0) / 2)
    _idle_barrier(comm)
    return {"layers": layers, "d_model": d, "batch": batch, "micro_batches": micro_batches, "rounds": rounds,
            "unpipelined_s": unpiped, "pipelined_s": piped, "stage_s": stage_all,
            "hop_bytes": int(buf.nbytes), "hop_s": hops,
            "statistic": "per round: unpipelined = rank 0's span; pipelined = max over ranks of the span after "
                         "a Barrier; stage_s = median compute per micro-batch; hop = ping-pong round trip / 2"}


def _parse(argv):
    ap = argparse.ArgumentParser(prog="mpiexec -n P python -m llmmath.demos.mpi_pipeline",
                                 description="Time a stack of matmul layers unpipelined vs pipelined over P ranks.")
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--batch", type=int, default=16, help="tokens per micro-batch")
    ap.add_argument("--micro-batches", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--hop-repeats", type=int, default=50)
    ap.add_argument("--out", required=True, help="JSON file rank 0 writes")
    ap.add_argument("--expect-ranks", type=int, default=None)
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    if min(a.layers, a.d_model, a.batch, a.micro_batches, a.rounds, a.hop_repeats) < 1:
        ap.error("every count must be >= 1")
    return a


def main(argv=None) -> int:
    a = _parse(argv)
    world = mpi_world("mpi_pipeline", a.expect_ranks, a.layers, f"at most --layers ({a.layers})")
    if world is None:
        return 2
    MPI, comm, rank, p, library = world
    doc = measure(comm, MPI, a.layers, a.d_model, a.batch, a.micro_batches, a.rounds, a.hop_repeats)
    if not doc:
        if rank == p - 1:
            print("llmmath.demos.mpi_pipeline: the pipelined output differs from the whole stack", file=sys.stderr)
        return 3
    if rank == 0:
        doc.update(n_ranks=p, mpi_library=library)
        if not a.quiet:
            print(f"llmmath.demos.mpi_pipeline: {p} stages, {a.layers} layers of {a.d_model}^2, "
                  f"{a.micro_batches} micro-batches of {a.batch}", flush=True)
        write_json(doc, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
