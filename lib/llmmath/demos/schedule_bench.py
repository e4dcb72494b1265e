"""A real fixed-cadence loop, timed, beside :mod:`llmmath.schedule`'s simulation (a measured demo).

:func:`run_cadence` runs the schedule of chapter 4 for real, for a fraction of
a second: a Python loop sleeps until each departure ``t0 + k T``, closes the
doors (every request whose arrival time has passed by the scheduled departure
boards), runs a small fixed step (an element-wise exp, no sleep), and records with
``time.perf_counter`` when the step really started and when it ended. Arrival
times are drawn up front (uniform, so uniform in phase), so the simulation can
be run on exactly the same arrivals: :func:`llmmath.schedule.simulate_cadence`.

What differs between the two is only what a real machine adds: the loop wakes
up *late* (timer slack, the scheduler giving the core to someone else) and the
step takes its real time. So, request by request::

    measured wait = simulated wait + lateness of the departure it boarded  >= simulated wait

A busy machine can only make a wake-up later, never earlier, so that
inequality -- and ``measured mean >= simulated mean``, ``measured max >=
simulated max`` -- hold under any load; how much later is the measurement.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from .. import schedule
from .._validate import positive, positive_int, scalar

__all__ = ["MeasuredCadence", "run_cadence"]


@dataclasses.dataclass(frozen=True)
class MeasuredCadence:
    """What :func:`run_cadence` measured (seconds, arrays per request in arrival order).

    Attributes:
        arrival_s: arrival times from the loop's start ``t0``.
        start_s: when the step the request rode really started (from ``t0``).
        end_s: when that step really ended.
        simulated: :class:`llmmath.schedule.CadenceResult` on the same arrivals,
            period and (measured, median) step time.
        lateness_s: per departure used, real start minus scheduled departure (>= 0).
        step_s: every step's measured duration.
    """

    arrival_s: np.ndarray
    start_s: np.ndarray
    end_s: np.ndarray
    simulated: schedule.CadenceResult
    lateness_s: np.ndarray
    step_s: np.ndarray

    @property
    def period_s(self) -> float:
        return self.simulated.period_s

    @property
    def wait_s(self) -> np.ndarray:
        """Measured wait: arrival to the real start of the step it rode."""
        return self.start_s - self.arrival_s

    @property
    def latency_s(self) -> np.ndarray:
        """Measured latency: arrival to the real end of that step."""
        return self.end_s - self.arrival_s

    def table(self) -> str:
        """Measured beside simulated (same arrivals) and closed form (:func:`schedule.uniform_phase_latency`)."""
        step = float(np.median(self.step_s))
        cf = schedule.uniform_phase_latency(self.period_s, step)
        sim = self.simulated
        ms = lambda v: f"{v * 1e3:9.2f}ms"  # noqa: E731
        rows = [f"{'':<12} {'mean wait':>11} {'max wait':>11} {'mean lat.':>11} {'max lat.':>11}",
                f"{'measured':<12} {ms(self.wait_s.mean())} {ms(self.wait_s.max())} {ms(self.latency_s.mean())} "
                f"{ms(self.latency_s.max())}",
                f"{'simulated':<12} {ms(sim.mean_wait_s)} {ms(sim.max_wait_s)} {ms(sim.mean_latency_s)} "
                f"{ms(sim.max_latency_s)}",
                f"{'closed form':<12} {ms(cf['mean_wait_s'])} {ms(cf['max_wait_s'])} {ms(cf['mean_latency_s'])} "
                f"{ms(cf['max_latency_s'])}"]
        return "\n".join(rows)


def _default_step(n: int = 2**18):
    # Element-wise, so one thread: a multithreaded BLAS call next to a busy core can take 50 ms instead of 1.
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    y = np.empty_like(x)
    return lambda: np.exp(x, out=y)


def run_cadence(period_s: float = 0.025, n_departures: int = 16, n_requests: int = 200, step=None,
                seed: int = 0) -> MeasuredCadence:
    """Run a real cadence of ``n_departures`` steps, every ``period_s``, for requests arriving at random times.

    Arrivals: ``n_requests`` times uniform on ``(0, (n_departures - 1) T]`` (drawn
    with ``seed``), so every request has a departure. Departure ``k`` is
    scheduled at ``k T`` after the start; the loop sleeps until then (then spins
    the last 0.2 ms, so it is never early), boards every request with
    ``arrival <= k T``, and runs ``step()``: by default ``exp`` of 2^18 float32
    values, about a millisecond, well under ``T``. If a wake-up or a
    step runs late, the next departure starts as soon as it can (never before
    its schedule). Takes about ``n_departures * period_s`` (0.4 s by default).

    Raises:
        ValueError: period <= 0, fewer than 2 departures, fewer than 1 request.
    """
    T = float(positive("period_s", scalar("period_s", period_s)))
    K = positive_int("n_departures", n_departures)
    if K < 2:
        raise ValueError(f"n_departures must be >= 2, got {K}")
    n = positive_int("n_requests", n_requests)
    step = _default_step() if step is None else step
    rng = np.random.default_rng(seed)
    arrivals = np.sort(rng.uniform(0.0, (K - 1) * T, n))
    arrivals = np.maximum(arrivals, 1e-9)  # departure 0 at t = 0 carries no one
    step()  # warm up (first BLAS call, page faults)
    starts, ends = np.empty(K), np.empty(K)
    t0 = time.perf_counter()
    for k in range(K):
        due = t0 + k * T
        left = due - time.perf_counter()
        if left > 2e-4:
            time.sleep(left - 2e-4)
        while time.perf_counter() < due:
            pass
        starts[k] = time.perf_counter() - t0
        step()
        ends[k] = time.perf_counter() - t0
    sim = schedule.simulate_cadence(arrivals, T, step_s=min(float(np.median(ends - starts)), T))
    dep = sim.departure_index  # the first scheduled departure at or after each arrival
    used = np.unique(dep)
    return MeasuredCadence(arrivals, starts[dep], ends[dep], sim, starts[used] - used * T, ends - starts)
