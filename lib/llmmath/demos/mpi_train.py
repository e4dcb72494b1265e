"""Real training steps over MPI ranks; the worker :func:`llmmath.demos.mpi_bench.run_training` launches (chapter 10).

A small NumPy MLP (``--layers`` layers of ``d x d`` float32 weights, tanh, squared error,
the same weights on every rank from one seed) is trained two ways on ``P`` ranks:

**Data parallel.** The global batch of ``--batch`` rows is split over the ranks. Per round:

* ``single``: rank 0 computes the whole batch's gradient alone (the others sleep);
* ``dp``: every rank computes its ``batch / P`` rows' gradient, then one ``MPI_Allreduce``
  of all gradients (one flat buffer) -- forward, backward, then communication;
* ``dp_overlap``: the same, but each layer's gradient is handed to ``MPI_Iallreduce`` as
  soon as the backward pass has produced it (last layer first), the rest of the backward
  runs while it travels (testing the requests after each layer so the library progresses),
  and ``Waitall`` ends the step.

Each rank times its forward, backward and communication in ``dp`` rounds; a round's step
time is the max over ranks. Once, the data-parallel gradient (sum over ranks / P) is
checked against rank 0's whole-batch gradient. A ping-pong sweep (8 B .. 4 MiB) gives
the alpha and beta of chapter 5 in the same run.

**Pipeline.** Stage ``r`` holds layers ``r L/P .. (r+1) L/P - 1``; ``--micro-batches``
micro-batches go forward (activations sent to ``r + 1``) and backward (gradients sent to
``r - 1``) in GPipe order (all forwards, then all backwards) or 1F1B order (``P - r - 1``
warm-up forwards, then one forward / one backward; the orders of
:func:`llmmath.parallelism.pipeline_orders`, which the simulator uses too). Every rank
records each of its forwards and backwards (start, end) from a common barrier; the bubble is
``1 - busy / (P x span)``.

Run it under an MPI launcher (``mpiexec -n 2 python -m llmmath.demos.mpi_train --out t.json``) and
load the JSON with :meth:`TrainingResults.from_json`. Importing this module imports no MPI.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import numpy as np

from .mpi_collectives import mpi_world, write_json
from .mpi_pipeline import _idle_barrier
from ..parallelism import pipeline_orders

_SEED = 20241201
PINGPONG_SIZES = (8, 256, 4096, 65536, 262144, 1048576, 4194304)


@dataclasses.dataclass(frozen=True)
class TrainingResults:
    """What :mod:`llmmath.demos.mpi_train` measured (seconds; arrays hold one value per round).

    Attributes:
        n_ranks, layers, d_model, batch: the MLP and the global batch (rows).
        grad_bytes: bytes of all gradients (float32), the all-reduce's buffer.
        single_s: rank 0 alone, whole batch, forward + backward.
        forward_s, backward_s, allreduce_s: per ``dp`` round, the max over ranks of each part.
        dp_s, dp_overlap_s: per round, the step time (max over ranks).
        pingpong_bytes, pingpong_s: the ping-pong sweep (one way, fastest of 20 per size: the prediction is a floor).
        grads_match: the data-parallel gradient equalled the whole-batch one.
        reduce_bytes_per_s: gamma, how fast one rank adds a gradient buffer into another (median).
        micro_batches: pipeline micro-batches; ``pipe``: per schedule (gpipe, 1f1b), per round,
            ``span_s`` and ``busy_s`` (summed over ranks), and ``in_flight`` (per rank, the most
            micro-batches forwarded but not yet backwarded).
    """

    n_ranks: int
    layers: int
    d_model: int
    batch: int
    grad_bytes: int
    single_s: np.ndarray
    forward_s: np.ndarray
    backward_s: np.ndarray
    allreduce_s: np.ndarray
    dp_s: np.ndarray
    dp_overlap_s: np.ndarray
    pingpong_bytes: np.ndarray
    pingpong_s: np.ndarray
    grads_match: bool
    micro_batches: int
    pipe: dict
    reduce_bytes_per_s: float
    mpi_library: str = ""

    @classmethod
    def from_dict(cls, doc: dict) -> "TrainingResults":
        try:
            a = lambda k: np.asarray(doc[k], float)  # noqa: E731
            pipe = {k: {"span_s": np.asarray(v["span_s"], float), "busy_s": np.asarray(v["busy_s"], float),
                        "in_flight": [int(x) for x in v["in_flight"]]} for k, v in doc["pipe"].items()}
            return cls(int(doc["n_ranks"]), int(doc["layers"]), int(doc["d_model"]), int(doc["batch"]),
                       int(doc["grad_bytes"]), a("single_s"), a("forward_s"), a("backward_s"), a("allreduce_s"),
                       a("dp_s"), a("dp_overlap_s"), a("pingpong_bytes"), a("pingpong_s"), bool(doc["grads_match"]),
                       int(doc["micro_batches"]), pipe, float(doc["reduce_bytes_per_s"]),
                       str(doc.get("mpi_library", "")))
        except KeyError as e:
            raise ValueError(f"not an llmmath.demos.mpi_train result: missing key {e}") from None

    @classmethod
    def from_json(cls, path) -> "TrainingResults":
        with open(path) as f:
            return cls.from_dict(json.load(f))

    def fit(self) -> tuple[float, float]:
        """``(alpha_s, beta_bytes_per_s)`` of the ping-pong, as chapter 5 fits them."""
        from .. import network

        return network.fit_alpha_beta(self.pingpong_bytes, self.pingpong_s)

    def predicted_allreduce_s(self) -> float:
        """Ring all-reduce of the gradients: ``2(p-1) alpha + 2(p-1)/p n / beta + (p-1)/p n / gamma`` (chapter 5)."""
        from .. import network

        alpha, beta = self.fit()
        return float(network.all_reduce_time_s(self.grad_bytes, self.n_ranks, beta, alpha,
                                               reduce_bytes_per_s=self.reduce_bytes_per_s))

    def predicted_dp_s(self) -> float:
        """No overlap: fastest forward + fastest backward + the model's all-reduce."""
        return float(self.forward_s.min() + self.backward_s.min()) + self.predicted_allreduce_s()

    def predicted_dp_overlap_s(self) -> float:
        """Perfect overlap: forward, then the longer of the backward and the all-reduce."""
        return float(self.forward_s.min() + max(self.backward_s.min(), self.predicted_allreduce_s()))

    def bubble(self, schedule: str) -> np.ndarray:
        """Measured idle fraction per round: ``1 - busy / (P x span)``."""
        p = self.pipe[schedule]
        return 1.0 - p["busy_s"] / (self.n_ranks * p["span_s"])

    def best_bubble(self, schedule: str) -> float:
        """The bubble of the fastest round (load only stretches a round)."""
        p = self.pipe[schedule]
        return float(self.bubble(schedule)[int(np.argmin(p["span_s"]))])


# ---- the MLP -------------------------------------------------------------------------------------------------

def _weights(layers: int, d: int) -> list:
    rng = np.random.default_rng(_SEED)
    return [rng.standard_normal((d, d), dtype=np.float32) / np.float32(np.sqrt(d)) for _ in range(layers)]


def _data(batch: int, d: int):
    rng = np.random.default_rng(_SEED + 1)
    return rng.standard_normal((batch, d), dtype=np.float32), rng.standard_normal((batch, d), dtype=np.float32)


def _forward(x, ws):
    acts = [x]
    for w in ws:
        x = np.tanh(x @ w)
        acts.append(x)
    return acts


def _backward(acts, ws, dy, on_grad=None):
    """Gradients of the weights, last layer first; ``on_grad(i, g)`` is called as each is ready. Returns dx too."""
    grads = [None] * len(ws)
    for i in range(len(ws) - 1, -1, -1):
        dz = dy * (1.0 - acts[i + 1] * acts[i + 1])
        grads[i] = acts[i].T @ dz
        dy = dz @ ws[i].T
        if on_grad is not None:
            on_grad(i, grads[i])
    return grads, dy


def _loss_grad(out, target, n_total):
    return (out - target) / np.float32(n_total)


# ---- measurements --------------------------------------------------------------------------------------------

def _pingpong(comm, rank, repeats=20):
    out = []
    for n in PINGPONG_SIZES:
        buf = np.zeros(n, dtype=np.uint8)
        ts = []
        for k in range(3 + repeats):
            if rank in (0, 1):
                t0 = time.perf_counter()
                if rank == 0:
                    comm.Send(buf, dest=1, tag=7)
                    comm.Recv(buf, source=1, tag=8)
                else:
                    comm.Recv(buf, source=0, tag=7)
                    comm.Send(buf, dest=0, tag=8)
                if k >= 3:
                    ts.append((time.perf_counter() - t0) / 2)
        out.append(float(np.min(ts)) if ts else 0.0)  # fastest: load only slows a message down
    return out


def _dp(comm, MPI, layers, d, batch, rounds):
    rank, p = comm.Get_rank(), comm.Get_size()
    ws = _weights(layers, d)
    X, Y = _data(batch, d)
    lo, hi = rank * batch // p, (rank + 1) * batch // p
    x, y = X[lo:hi], Y[lo:hi]
    flat = np.empty(layers * d * d, dtype=np.float32)
    total = np.empty_like(flat)

    # correctness, once: sum over ranks of the local gradients = the whole batch's gradient
    acts = _forward(x, ws)
    g, _ = _backward(acts, ws, _loss_grad(acts[-1], y, batch))
    comm.Allreduce(np.concatenate([gi.ravel() for gi in g]), total, op=MPI.SUM)
    ok = True
    if rank == 0:
        acts_all = _forward(X, ws)
        g_all, _ = _backward(acts_all, ws, _loss_grad(acts_all[-1], Y, batch))
        ok = bool(np.allclose(total, np.concatenate([gi.ravel() for gi in g_all]), rtol=1e-3, atol=1e-6))
    ok = comm.bcast(ok, root=0)

    res = {k: [] for k in ("single_s", "forward_s", "backward_s", "allreduce_s", "dp_s", "dp_overlap_s")}
    for _ in range(rounds):
        _idle_barrier(comm)
        if rank == 0:
            t0 = time.perf_counter()
            acts_all = _forward(X, ws)
            _backward(acts_all, ws, _loss_grad(acts_all[-1], Y, batch))
            res["single_s"].append(time.perf_counter() - t0)
        _idle_barrier(comm)
        comm.Barrier()
        t0 = time.perf_counter()
        acts = _forward(x, ws)
        t1 = time.perf_counter()
        g, _ = _backward(acts, ws, _loss_grad(acts[-1], y, batch))
        for i, gi in enumerate(g):
            flat[i * d * d:(i + 1) * d * d] = gi.ravel()
        t2 = time.perf_counter()
        comm.Allreduce(flat, total, op=MPI.SUM)
        t3 = time.perf_counter()
        parts = np.empty(4)
        comm.Allreduce(np.array([t1 - t0, t2 - t1, t3 - t2, t3 - t0]), parts, op=MPI.MAX)
        for k, v in zip(("forward_s", "backward_s", "allreduce_s", "dp_s"), parts):
            res[k].append(float(v))

        comm.Barrier()
        t0 = time.perf_counter()
        acts = _forward(x, ws)
        reqs, bufs = [], []

        def send(i, gi):
            gi = np.ascontiguousarray(gi)
            out = np.empty_like(gi)
            bufs.append((gi, out))
            reqs.append(comm.Iallreduce(gi, out, op=MPI.SUM))
            for r in reqs:
                r.Test()

        _backward(acts, ws, _loss_grad(acts[-1], y, batch), on_grad=send)
        MPI.Request.Waitall(reqs)
        res["dp_overlap_s"].append(float(comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)))
    res["grads_match"] = ok
    res["grad_bytes"] = int(flat.nbytes)
    adds = []   # how fast this rank adds one gradient buffer into another (the all-reduce's arithmetic)
    for _ in range(10):
        t0 = time.perf_counter()
        np.add(flat, total, out=total)
        adds.append(time.perf_counter() - t0)
    res["reduce_bytes_per_s"] = float(flat.nbytes / np.median(adds))
    return res


def _pipeline(comm, MPI, layers, d, micro_batch, m, rounds):
    rank, p = comm.Get_rank(), comm.Get_size()
    ws = _weights(layers, d)
    bounds = np.linspace(0, layers, p + 1).round().astype(int)
    mine = ws[bounds[rank]:bounds[rank + 1]]
    X, Y = _data(micro_batch * m, d)
    out = {}
    for kind in ("gpipe", "1f1b"):
        order = pipeline_orders(p, m, kind)[rank]
        spans, busy, peak = [], [], 0
        for _ in range(rounds):
            _idle_barrier(comm)
            comm.Barrier()
            t0 = time.perf_counter()
            acts, work, held = {}, 0.0, 0
            reqs = []
            for phase, i in order:
                if phase == "F":
                    if rank == 0:
                        x = X[i * micro_batch:(i + 1) * micro_batch]
                    else:
                        x = np.empty((micro_batch, d), dtype=np.float32)
                        comm.Recv(x, source=rank - 1, tag=2 * i)
                    s0 = time.perf_counter()
                    acts[i] = _forward(x, mine)
                    work += time.perf_counter() - s0
                    held += 1
                    peak = max(peak, held)
                    if rank < p - 1:
                        y = np.ascontiguousarray(acts[i][-1])
                        reqs.append((comm.Isend(y, dest=rank + 1, tag=2 * i), y))
                else:
                    if rank == p - 1:
                        dy = _loss_grad(acts[i][-1], Y[i * micro_batch:(i + 1) * micro_batch], micro_batch * m)
                    else:
                        dy = np.empty((micro_batch, d), dtype=np.float32)
                        comm.Recv(dy, source=rank + 1, tag=2 * i + 1)
                    s0 = time.perf_counter()
                    _, dx = _backward(acts.pop(i), mine, dy)
                    work += time.perf_counter() - s0
                    held -= 1
                    if rank > 0:
                        dx = np.ascontiguousarray(dx)
                        reqs.append((comm.Isend(dx, dest=rank - 1, tag=2 * i + 1), dx))
            MPI.Request.Waitall([r for r, _ in reqs])
            span = time.perf_counter() - t0
            spans.append(float(comm.allreduce(span, op=MPI.MAX)))
            busy.append(float(comm.allreduce(work, op=MPI.SUM)))
        peaks = comm.gather(peak, root=0)
        out[kind] = {"span_s": spans, "busy_s": busy, "in_flight": peaks}
    return out


def _parse(argv):
    ap = argparse.ArgumentParser(prog="mpiexec -n P python -m llmmath.demos.mpi_train",
                                 description="Time a data-parallel training step and a training pipeline on P ranks.")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64, help="global batch (rows) of the data-parallel step")
    ap.add_argument("--micro-batch", type=int, default=256, help="rows per pipeline micro-batch")
    ap.add_argument("--micro-batches", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", required=True, help="JSON file rank 0 writes")
    ap.add_argument("--expect-ranks", type=int, default=None)
    a = ap.parse_args(argv)
    if min(a.layers, a.d_model, a.batch, a.micro_batch, a.micro_batches, a.rounds) < 1:
        ap.error("every count must be >= 1")
    return a


def main(argv=None) -> int:
    a = _parse(argv)
    world = mpi_world("mpi_train", a.expect_ranks, min(a.layers, a.batch),
                      f"at most --layers ({a.layers}) and --batch ({a.batch})")
    if world is None:
        return 2
    MPI, comm, rank, p, library = world
    _forward(np.zeros((4, a.d_model), np.float32), _weights(1, a.d_model))  # warm up BLAS
    doc = _dp(comm, MPI, a.layers, a.d_model, a.batch, a.rounds)
    if not doc["grads_match"]:
        if rank == 0:
            print("llmmath.demos.mpi_train: the data-parallel gradient differs from the whole batch's", file=sys.stderr)
        return 3
    _idle_barrier(comm)
    pp = _pingpong(comm, rank)
    pipe = _pipeline(comm, MPI, a.layers, a.d_model, a.micro_batch, a.micro_batches, a.rounds)
    if rank == 0:
        doc.update(n_ranks=p, mpi_library=library, layers=a.layers, d_model=a.d_model, batch=a.batch,
                   pingpong_bytes=list(PINGPONG_SIZES), pingpong_s=pp, micro_batches=a.micro_batches, pipe=pipe,
                   statistic="per round: each part's max over ranks; pipeline busy = sum over ranks of compute")
        write_json(doc, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
