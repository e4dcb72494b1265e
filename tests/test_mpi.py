"""Real MPI collectives (2 ranks, this machine) against the alpha-beta model: llmmath.demos.mpi_bench.

The measuring tests need mpi4py (the project's test extra installs it with the
mpich wheel and its mpiexec); without it they are skipped, and the argument
and error-path tests still run.
"""

import importlib.util
import json

import numpy as np
import pytest

from llmmath import mpi_bench

HAVE_MPI4PY = importlib.util.find_spec("mpi4py") is not None
needs_mpi = pytest.mark.skipif(not HAVE_MPI4PY, reason='mpi4py is not installed (pip install -e ".[test]" brings it)')

# Small sweep: 8 B (latency) to 1 MiB (bandwidth), 4x apart; about 1 s with 2 ranks.
SIZES = [8, 128, 2048, 32768, 262144, 1048576]
REPEATS = 15


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    out = tmp_path_factory.mktemp("mpi") / "r.json"
    res = mpi_bench.run(n_procs=2, sizes=SIZES, repeats=REPEATS, timeout_s=120, progress=False, out=out)
    return res, json.loads(out.read_text())


@needs_mpi
def test_json_and_structure(measured):
    res, doc = measured
    assert doc["n_ranks"] == 2 and len(doc["hostnames"]) == 2 and doc["mpi_library"]
    assert set(doc["ops"]) == set(mpi_bench.OPS) == set(res.ops)
    assert res.n_ranks == 2 and res.repeats == REPEATS
    for op, (n, t) in res.ops.items():
        assert n.shape == t.shape == (len(SIZES),), op
        np.testing.assert_array_equal(n, SIZES)  # all sizes are whole multiples of 4 p bytes
        assert np.all(np.isfinite(t)) and np.all(t > 0), op
        q1, q3 = res.spread[op]
        assert np.all(q1 <= t) and np.all(t <= q3), op
        m = doc["ops"][op]
        assert np.all(np.asarray(m["time_s_min"]) <= t) and np.all(t <= np.asarray(m["time_s_max"])), op


@needs_mpi
def test_time_grows_with_size_for_large_messages(measured):
    res, _ = measured
    for op, (n, t) in res.ops.items():
        # 4x more bytes: bandwidth-bound sizes must not get faster. Allow 30% noise
        # step to step, but the 1 MiB message must clearly beat 8 B.
        assert np.all(t[-2:] >= 0.7 * t[-3:-1]), (op, t)
        assert t[-1] > 3 * t[0], (op, t)


@needs_mpi
def test_fit_is_physical_and_table_prints(measured):
    res, _ = measured
    alpha, beta = res.fit()
    assert alpha >= 0 and beta > 0
    assert 1e-8 < alpha < 1e-3 and 1e7 < beta < 1e12  # sane for any transport, shared memory to Ethernet
    table = res.table()
    assert "meas/pred" in table and table.count("allreduce") == len(SIZES)
    for op in mpi_bench.OPS:
        assert res.predicted(op).shape == (len(SIZES),)


@needs_mpi
def test_allreduce_within_factor_4_of_alpha_beta(measured):
    # Why a factor and not a tight match: here the "link" is shared memory on a
    # 2-core CPU. The ping-pong that sets alpha and beta is a copy between two
    # processes; an all-reduce also adds the two vectors (the model has no
    # arithmetic term), MPICH may pick an algorithm that moves more than the
    # ring's bytes, and both ranks busy-poll the only 2 cores, so a busy
    # neighbour (another pytest worker) stalls it more than a ping-pong. Seen
    # here: 1.5-3x at 1 MiB. A factor of 4 still catches a wrong size convention
    # (e.g. n per rank vs n total: 2x per term) compounded with a broken
    # measurement, or a fit off by orders of magnitude.
    res, _ = measured
    ratio = res.ops["allreduce"][1][-1] / res.predicted("allreduce")[-1]
    if not 0.25 <= ratio <= 4:  # one more look before blaming the model: the CPU may have been busy
        res = mpi_bench.run(n_procs=2, sizes=SIZES, ops=("pingpong", "allreduce"), repeats=REPEATS,
                            progress=False)
        ratio2 = res.ops["allreduce"][1][-1] / res.predicted("allreduce")[-1]
        assert 0.25 <= ratio2 <= 4, f"allreduce at 1 MiB is {ratio:.2f}x then {ratio2:.2f}x the model\n{res.table()}"


@needs_mpi
def test_plot_draws_measured_and_model(measured):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    res, _ = measured
    ax = mpi_bench.plot(res)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "bytes" in ax.get_xlabel() and "s" in ax.get_ylabel()
    assert len(ax.lines) >= 2 * len(res.ops)
    plt.close(ax.figure)


@needs_mpi
def test_failed_check_is_reported_with_stderr(monkeypatch):
    # The worker's test hook corrupts what rank 1 receives: the run must fail
    # loudly, naming the op and size, not return numbers.
    monkeypatch.setenv("LLMMATH_MPI_CORRUPT", "alltoall")
    with pytest.raises(RuntimeError, match=r"(?s)exit status 3.*correctness check failed: alltoall of 8 B"):
        mpi_bench.run(n_procs=2, sizes=[8], ops=("alltoall",), repeats=1, progress=False)


def test_bad_arguments_are_value_errors():
    for n in (1, 0, -2):
        with pytest.raises(ValueError, match="n_procs"):
            mpi_bench.run(n_procs=n)
    with pytest.raises(ValueError, match="ops must be"):
        mpi_bench.run(ops=("broadcast",))
    with pytest.raises(ValueError, match="sizes"):
        mpi_bench.run(sizes=[0, 8])


def test_missing_launcher_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(mpi_bench, "_have_mpi4py", lambda: True)
    monkeypatch.setattr(mpi_bench, "_which", lambda name, path=None: None)
    with pytest.raises(RuntimeError, match=r'no MPI launcher found.*pip install -e "\.\[mpi\]"'):
        mpi_bench.run(n_procs=2)
    with pytest.raises(RuntimeError, match=r"launcher 'srun' not found.*pip install"):
        mpi_bench.run(n_procs=2, launcher="srun")


def test_missing_mpi4py_is_a_clear_error(monkeypatch):
    monkeypatch.setattr(mpi_bench, "_have_mpi4py", lambda: False)
    with pytest.raises(RuntimeError, match=r'mpi4py is not installed.*pip install -e "\.\[mpi\]"'):
        mpi_bench.run(n_procs=2)


def test_results_round_trip_and_need_pingpong_to_fit():
    doc = {"n_ranks": 4, "hostnames": ["a"] * 4, "mpi_library": "X",
           "ops": {"pingpong": {"n_bytes": [8, 1e6], "time_s": [2e-6, 102e-6]},
                   "allreduce": {"n_bytes": [8, 1e6], "time_s": [1e-5, 2e-4]}}}
    res = mpi_bench.CollectiveResults.from_dict(doc)
    alpha, beta = res.fit()
    assert alpha == pytest.approx(2e-6, rel=1e-3) and beta == pytest.approx(1e10, rel=1e-3)
    # p = 4 ring all-reduce: 2(p-1) alpha + 2(p-1)/p n / beta
    assert res.predicted("allreduce")[-1] == pytest.approx(6 * 2e-6 + 1.5 * 1e6 / 1e10, rel=1e-3)
    no_pp = mpi_bench.CollectiveResults.from_dict({"n_ranks": 2, "ops": {"allreduce": doc["ops"]["allreduce"]}})
    with pytest.raises(ValueError, match="needs the pingpong sweep"):
        no_pp.fit()
    with pytest.raises(ValueError, match="missing key"):
        mpi_bench.CollectiveResults.from_dict({"ops": {}})


def test_hostfile_errors(monkeypatch, tmp_path):
    monkeypatch.setattr(mpi_bench, "_have_mpi4py", lambda: True)
    monkeypatch.setattr(mpi_bench, "_which", lambda name, path=None: f"/opt/fake/{name}")
    with pytest.raises(ValueError, match="srun takes its hosts from the Slurm allocation"):
        mpi_bench.run(n_procs=2, launcher="srun --mpi=pmix", hostfile=tmp_path / "hosts")
    monkeypatch.setattr(mpi_bench, "_launcher_family", lambda exe: "hydra")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        mpi_bench.run(n_procs=2, hostfile=tmp_path / "missing")


@needs_mpi
def test_hostfile_passes_through(tmp_path):
    # The same path a cluster run takes (MPICH: mpiexec -f hosts), on this host only.
    exe = mpi_bench._find_launcher(None)[0]
    if mpi_bench._launcher_family(exe) != "hydra":
        pytest.skip(f"hostfile syntax here is written for MPICH's Hydra; launcher is {exe}")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    res = mpi_bench.run(n_procs=2, sizes=[8, 4096], ops=("pingpong",), repeats=3, hostfile=hosts, progress=False)
    assert res.n_ranks == 2 and len(res.hostnames) == 2


# --- A two-rank pipeline of matmul layers (llmmath.demos.mpi_pipeline, launched by mpi_bench.run_pipeline) ---

@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    out = tmp_path_factory.mktemp("pipe") / "p.json"
    return mpi_bench.run_pipeline(n_procs=2, rounds=12, progress=False, out=out), json.loads(out.read_text())


@needs_mpi
def test_pipeline_runs_and_reports(pipeline):
    res, doc = pipeline
    assert res.n_ranks == doc["n_ranks"] == 2 and res.layers == 8 and res.tokens == 8 * 16
    assert res.unpipelined_s.shape == res.pipelined_s.shape == (12,) and res.stage_s.shape == (2,)
    assert res.hop_bytes == 16 * 256 * 4 and res.hop_s.size == 50
    for a in (res.unpipelined_s, res.pipelined_s, res.stage_s, res.hop_s):
        assert np.all(np.isfinite(a)) and np.all(a > 0)


@needs_mpi
def test_pipeline_is_not_slower_and_matches_its_stage_times(pipeline):
    # Fastest rounds (load only adds time). Two stages on two cores: ideally half the time per token
    # (seen: 0.6-0.7x, also with one core busy). A factor 2 on the slower side still catches a pipeline
    # that serializes its stages (e.g. a blocking send that waits for the next stage's compute).
    res, _ = pipeline
    assert res.pipelined_s_per_token <= 2.0 * res.unpipelined_s_per_token
    # One rank doing every layer takes the sum of the stages: the fastest round within 2x of it either way.
    assert 0.5 < res.unpipelined_s_per_token / res.predicted_unpipelined_s_per_token() < 2.0


@needs_mpi
def test_pipeline_hop_is_a_pingpong_at_its_size(measured, pipeline):
    # The hop (median one-way time of one activation message) against alpha + n / beta fitted to the
    # ping-pong sweep above; seen 1.1-1.3x. Factor 5 either way: both are medians of busy-polling ranks.
    res, _ = pipeline
    alpha, beta = measured[0].fit()
    model = alpha + res.hop_bytes / beta
    assert 0.2 < res.hop_median_s / model < 5.0


def test_pipeline_bad_arguments_and_missing_mpi4py(monkeypatch):
    for kw in (dict(n_procs=1), dict(n_procs=9), dict(layers=0), dict(micro_batches=0)):
        with pytest.raises(ValueError):
            mpi_bench.run_pipeline(**kw)
    monkeypatch.setattr(mpi_bench, "_have_mpi4py", lambda: False)
    with pytest.raises(RuntimeError, match="mpi4py is not installed"):
        mpi_bench.run_pipeline()
    from llmmath.demos.mpi_pipeline import PipelineResults
    with pytest.raises(ValueError, match="missing key"):
        PipelineResults.from_dict({"n_ranks": 2})
