"""The real cadence loop (llmmath.demos.schedule_bench) beside the simulation on the same arrivals.

Every check holds on a loaded machine: a busy core can only make a departure
later, so the measured waits are bounded below by the simulated ones, request
by request; nothing here bounds them above (a wake-up can be tens of ms late).
"""

import numpy as np
import pytest

from llmmath import schedule, schedule_bench


@pytest.fixture(scope="module")
def measured():
    return schedule_bench.run_cadence(period_s=0.02, n_departures=12, n_requests=150, seed=3)


def test_measured_wait_is_simulated_wait_plus_lateness(measured):
    m, sim = measured, measured.simulated
    np.testing.assert_array_equal(sim.arrival_s, m.arrival_s)
    assert m.arrival_s.size == 150 and sim.period_s == 0.02
    late = m.wait_s - sim.wait_s
    assert np.all(late >= -1e-9)                          # never departs before its schedule
    assert np.all(m.latency_s >= m.wait_s) and np.all(m.step_s > 0)
    assert np.all(m.lateness_s >= -1e-9)
    assert m.wait_s.mean() >= sim.mean_wait_s - 1e-9 and m.wait_s.max() >= sim.max_wait_s - 1e-9
    # the simulated waits themselves are the closed form's: U(0, T) over 150 requests
    cf = schedule.uniform_phase_latency(0.02)
    assert 0 < sim.max_wait_s < cf["max_wait_s"] and abs(sim.mean_wait_s / cf["mean_wait_s"] - 1) < 0.25


def test_table_and_a_custom_step(measured):
    assert "measured" in measured.table() and "closed form" in measured.table()
    calls = []
    m = schedule_bench.run_cadence(period_s=0.005, n_departures=3, n_requests=5, step=lambda: calls.append(1))
    assert len(calls) == 4 and m.step_s.size == 3           # one warm-up, then one step per departure


@pytest.mark.parametrize("kw", [dict(period_s=0), dict(n_departures=1), dict(n_requests=0), dict(period_s=np.nan)])
def test_bad_arguments(kw):
    with pytest.raises(ValueError):
        schedule_bench.run_cadence(**kw)
