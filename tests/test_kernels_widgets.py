"""Backend selection, the timer, the batch-sweep demo and the widget helper (CPU)."""

import dataclasses
import numpy as np
import pytest

from llmmath import kernels, explorers, widgets


@pytest.fixture
def fresh_backend(monkeypatch):
    kernels.backend.cache_clear()
    yield monkeypatch
    kernels.backend.cache_clear()


def test_cpu_forced(fresh_backend):
    fresh_backend.setenv("LLMMATH_DEVICE", "cpu")
    be = kernels.backend()
    assert be.name == "numpy" and not be.is_gpu and be.xp is np and be.memory_bytes > 0


def test_bad_device_value(fresh_backend):
    fresh_backend.setenv("LLMMATH_DEVICE", "tpu")
    with pytest.raises(ValueError, match="cpu', 'gpu' or 'auto'"):
        kernels.backend()


def test_gpu_demanded_without_one_is_a_clear_error(fresh_backend):
    fresh_backend.setenv("LLMMATH_DEVICE", "gpu")
    fresh_backend.setattr(kernels, "_gpu_backend", lambda: None)
    with pytest.raises(RuntimeError, match="no GPU answered"):
        kernels.backend()


def test_timer_counts_repeats_and_refuses_nonsense():
    calls = []
    t = kernels.time_fn(lambda: calls.append(1), warmup=2, repeats=5)
    assert len(calls) == 7 and len(t.samples_s) == 5 and t.median_s >= 0
    with pytest.raises(ValueError, match="repeats >= 1"):
        kernels.time_fn(lambda: None, repeats=0)


def test_timer_median_is_robust_to_one_outlier():
    t = kernels.Timing((1.0, 1.1, 0.9, 50.0, 1.0))
    assert t.median_s == 1.0 and t.min_s == 0.9


def test_loglog_slope_recovers_power_laws_and_ignores_an_outlier():
    x = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024], float)
    assert kernels.loglog_slope(x, 3 * x) == pytest.approx(1.0)
    assert kernels.loglog_slope(x, 5 / x) == pytest.approx(-1.0)
    assert kernels.loglog_slope(x, x**-0.5) == pytest.approx(-0.5)
    y = 1 / x
    y[-1] *= 30                       # the last sample slowed 30x by another process
    assert y[0] / y[-1] < 40          # the end-point ratio is fooled (1024x would be right) ...
    assert kernels.loglog_slope(x, y) == pytest.approx(-1.0)   # ... the median of pairwise slopes is not
    with pytest.raises(ValueError, match="at least 2 points"):
        kernels.loglog_slope([1.0], [2.0])
    with pytest.raises(ValueError, match="finite and > 0"):
        kernels.loglog_slope([1.0, 2.0], [1.0, 0.0])
    with pytest.raises(ValueError, match="all x are equal"):
        kernels.loglog_slope([2.0, 2.0], [1.0, 3.0])


def test_small_batch_sweep_matches_its_own_formula():
    F, W = 1e11, 1e10
    s = kernels.batch_sweep([1, 4, 64], d_model=256, dtype="fp32", flops_per_s=F, bytes_per_s=W,
                            repeats=2, progress=False)
    d = 256
    assert np.allclose(s.compute_s, 2 * np.array([1, 4, 64]) * d * d / F)
    assert np.allclose(s.memory_s, (d * d + 2 * np.array([1, 4, 64]) * d) * 4 / W)
    assert np.all(s.measured_s > 0) and s.measured_s.shape == (3,)
    # knee: 2 B d^2 / F = (d^2 + 2 B d) b / W  ->  B = d^2 b / W / (2 d^2 / F - 2 d b / W), by hand:
    knee = d * d * 4 / W / (2 * d * d / F - 2 * d * 4 / W)
    assert s.knee_batch == pytest.approx(knee)
    assert "measured" in s.table()


def test_rectangular_batch_sweep_and_its_knees():
    F, W, d, n = 1e11, 1e10, 128, 384
    s = kernels.batch_sweep([1, 8, 32], d_model=d, d_out=n, flops_per_s=F, bytes_per_s=W, repeats=1,
                            progress=False, one_thread=True)
    B = np.array([1, 8, 32])
    assert s.weight_shape == (d, n) and s.measured_s.shape == (3,)
    assert np.allclose(s.compute_s, 2 * B * d * n / F)                 # 2 B d n FLOPs
    assert np.allclose(s.memory_s, (d * n + B * d + B * n) * 4 / W)    # W once, X in, Y out
    # by hand: 2 B d n / F = (d n + B (d + n)) 4 / W  ->  B = 4 d n / W / (2 d n / F - 4 (d + n) / W)
    assert s.knee_batch == pytest.approx(4 * d * n / W / (2 * d * n / F - 4 * (d + n) / W))
    # the fitted knee of a synthetic roofline-shaped sweep (flat to 24, then proportional) is 24
    b = np.array([2, 4, 8, 16, 32, 64, 128], float)
    synth = dataclasses.replace(s, batch=b, measured_s=3e-3 * np.maximum(24, b), compute_s=b, memory_s=b)
    assert synth.fitted_knee_batch == pytest.approx(24, rel=0.02)
    with pytest.raises(ValueError, match="d_out >= 1"):
        kernels.batch_sweep([1], d_model=64, d_out=0, flops_per_s=1e9, bytes_per_s=1e9, progress=False)


def test_batch_sweep_refuses_bad_sizes():
    with pytest.raises(ValueError, match="batches >= 1"):
        kernels.batch_sweep([0, 1], d_model=64, flops_per_s=1e9, bytes_per_s=1e9, progress=False)
    with pytest.raises(ValueError, match="dtype"):
        kernels.batch_sweep([1], d_model=64, dtype="int8", flops_per_s=1e9, bytes_per_s=1e9, progress=False)


def test_local_chip_is_measured_and_plausible():
    me = kernels.local_chip()
    assert me.key.startswith("local-")
    assert 1e8 < me.hbm_bytes_per_s < 1e14       # 0.1 GB/s .. 100 TB/s
    assert 1e8 < me.flops_per_s("fp32") < 1e16
    assert kernels.local_chip() is me            # measured once per process
    assert "measured" in me.sources["all"] and "MiB" in me.sources["all"]   # says how


def _imported_from(path, package_parts):
    """The llmmath sub-paths a module imports, absolute (``("demos", "kernels")``), lazy imports included."""
    import ast

    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package_parts[: len(package_parts) - (node.level - 1)]
            mod = tuple(node.module.split(".")) if node.module else ()
            targets = [base + mod] if node.module else [base + (a.name,) for a in node.names]
            out |= {t[1:] for t in targets}                      # drop the leading "llmmath"
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            out |= {tuple(n.split("."))[1:] for n in names if n.startswith("llmmath.")}
    return out


def test_the_math_imports_neither_the_demos_nor_the_course():
    """The house's three kinds, read from its folders: every module at the top of lib/llmmath is the math and imports
    nothing from llmmath/demos or llmmath/course; a demo imports nothing from the course but its plot style."""
    from pathlib import Path

    import llmmath

    lib = Path(llmmath.__file__).parent
    kinds = {"demos": sorted(p.stem for p in (lib / "demos").glob("*.py") if p.stem != "__init__"),
             "course": sorted(p.stem for p in (lib / "course").glob("*.py") if p.stem != "__init__")
             + sorted(p.name for p in (lib / "course").iterdir() if p.is_dir() and p.name != "__pycache__")}
    assert {"kernels", "attention_kernels", "moe_bench", "mpi_bench", "measured"} <= set(kinds["demos"])
    assert {"claims", "checks", "answers", "widgets", "explorers", "plots"} <= set(kinds["course"])
    math_modules = sorted(p for p in lib.glob("*.py") if p.stem not in ("__init__", "__main__"))
    assert {"deployment", "serving", "moe", "sparse_attention", "planner"} <= {p.stem for p in math_modules}
    for path in math_modules:
        wrong = {t for t in _imported_from(path, ("llmmath",)) if t and t[0] in ("demos", "course")}
        # a module of the other kinds, named as if it sat beside the math, would also be wrong
        wrong |= {t for t in _imported_from(path, ("llmmath",)) if t and t[0] in kinds["demos"] + kinds["course"]}
        assert not wrong, f"the math module {path.stem} imports {sorted('.'.join(t) for t in wrong)}"
    for path in sorted((lib / "demos").glob("*.py")):
        wrong = {t for t in _imported_from(path, ("llmmath", "demos")) if t[:1] == ("course",) and t[1:2] != ("plots",)}
        assert not wrong, f"the demo {path.stem} imports the course's {sorted('.'.join(t) for t in wrong)}"


def test_short_names_reach_the_subpackages():
    import llmmath
    from llmmath import claims, kernels
    assert kernels is llmmath.demos.kernels and claims is llmmath.course.claims
    assert llmmath.claims.check is claims.check
    with pytest.raises(AttributeError, match="no attribute 'kernelz'"):
        llmmath.kernelz


def test_ceiling_probe_samples_between_rounds_and_refuses_misuse():
    probe = kernels.CeilingProbe(("fp32",), array_bytes=2**20, matmul_n=64)
    with pytest.raises(RuntimeError, match="sample"):
        probe.copy_bytes_per_s
    calls = []
    t = kernels.time_interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                                 rounds=3, warmup=1, probe=probe)
    assert calls == ["a", "b"] + ["a", "b"] * 3          # warm-up once, then round-robin
    assert len(probe.stream_samples_s["copy"]) == 3 and len(t["a"].samples_s) == 3
    # STREAM's counting over 1 MiB arrays: a copy moves 2 MiB, a read 1 MiB, an add 3 MiB
    rates = probe.stream_bytes_per_s
    assert rates["copy"] == pytest.approx(2 * 2**20 / min(probe.stream_samples_s["copy"]))
    assert rates["read"] == pytest.approx(2**20 / min(probe.stream_samples_s["read"]))
    assert rates["add"] == pytest.approx(3 * 2**20 / min(probe.stream_samples_s["add"]))
    assert rates["update"] == pytest.approx(3 * 2**20 / min(probe.stream_samples_s["update"]))
    assert probe.memory_bytes_per_s == max(rates.values()) and probe.copy_bytes_per_s == rates["copy"]
    # per round, the fastest of the three reads of 1 MiB: the best round is the read ceiling, no copy or add in
    # it; a fourth sample makes the rounds' axis (4) differ from the reads' (3)
    probe.sample()
    per_round = probe.read_samples_bytes_per_s
    assert per_round.shape == (4,) and per_round.max() == pytest.approx(probe.read_bytes_per_s)
    reads = [probe.stream_samples_s[k] for k in ("read", "read_blas", "read_blocked")]
    assert per_round[2] == pytest.approx(2**20 / min(r[2] for r in reads))
    assert probe.flops_per_s("fp32") == pytest.approx(2 * 64**3 / min(probe.matmul_samples_s["fp32"]))
    with pytest.raises(KeyError, match="fp16"):
        probe.flops_per_s("fp16")
    with pytest.raises(KeyError, match="int8"):
        kernels.CeilingProbe(("int8",))
    with pytest.raises(ValueError, match="rounds"):
        kernels.time_interleaved({"a": lambda: None}, rounds=0)
    with pytest.raises(ValueError, match="at least one"):
        kernels.time_interleaved({})


def test_time_interleaved_evicts_before_every_timed_call_only(monkeypatch):
    calls = []
    kernels.time_interleaved({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")},
                             rounds=2, warmup=1, evict=lambda: calls.append("evict"))
    # the warm-up calls are not preceded by an eviction; every timed call is
    assert calls == ["a", "b"] + ["evict", "a", "evict", "b"] * 2
    seen = []
    monkeypatch.setattr(kernels, "evict_caches", lambda be=None: seen.append("sweep"))
    kernels.time_interleaved({"a": lambda: None}, rounds=3, warmup=0, evict=True)
    assert seen == ["sweep"] * 3
    kernels.time_interleaved({"a": lambda: None}, rounds=3, warmup=0)
    assert seen == ["sweep"] * 3          # off by default
    with pytest.raises(TypeError, match="evict must be"):
        kernels.time_interleaved({"a": lambda: None}, evict="yes")


def test_last_level_cache_is_read_from_sysfs_in_its_units(tmp_path):
    # sysfs as Linux writes it for a core with 32 KiB L1d/L1i, a 1 MiB L2 and a 32 MiB L3
    for index, size in (("index0", "32K"), ("index1", "32K"), ("index2", "1024K"), ("index3", "32768K")):
        (tmp_path / index).mkdir()
        (tmp_path / index / "size").write_text(size + "\n")
    assert kernels._cpu_llc_bytes(str(tmp_path)) == 32 * 2**20          # the largest, in KiB = 1024 bytes
    (tmp_path / "index3" / "size").write_text("96M\n")
    assert kernels._cpu_llc_bytes.__wrapped__(str(tmp_path)) == 96 * 2**20
    assert kernels._cpu_llc_bytes.__wrapped__(str(tmp_path / "absent")) == 32 * 2**20   # no sysfs: the default
    for index in ("index0", "index1", "index2", "index3"):     # a VM that reports every level as 0K: the default
        (tmp_path / index / "size").write_text("0K\n")
    assert kernels._cpu_llc_bytes.__wrapped__(str(tmp_path)) == 32 * 2**20
    llc = kernels.last_level_cache_bytes(kernels._cpu_backend())
    assert 2**20 <= llc <= 2**31
    kernels.evict_caches(kernels._cpu_backend())
    assert kernels._EVICT["numpy"].nbytes >= max(64 * 2**20, 2 * llc)


def test_explorer_redraws_only_what_changes_and_reports_errors_as_text():
    import ipywidgets as W

    seen = []

    def setup(fig):
        fig.axes[0].set_xlim(0, 1)
        fig.axes[0].set_ylim(0, 5)

    def draw(fig, x):
        if x < 0:
            raise ValueError("x must be >= 0")
        seen.append(x)
        return fig.axes[0].plot([0, 1], [0, x]), f"x = {x}"

    slider = W.IntSlider(value=1, min=-1, max=5)
    ex = widgets.explorer(setup, draw, {"x": slider})
    first = ex.image.value
    assert seen == [1] and ex.text.value == "x = 1" and first[:4] == b"\x89PNG"
    slider.value = 3
    assert seen == [1, 3] and ex.text.value == "x = 3" and ex.last_update_s > 0 and ex.image.value != first
    assert len(ex.fig.axes[0].lines) == 0  # per-frame artists are removed after rendering
    slider.value = -1
    assert "ValueError" in ex.text.value and "x must be >= 0" in ex.text.value


@pytest.mark.parametrize("make", [explorers.roofline_explorer, explorers.decode_explorer])
def test_course_explorers_answer_every_control(make):
    ex = make()
    for name, control in ex.controls.items():
        options = getattr(control, "options", None)
        new = options[-1] if options else control.max
        control.value = new
        assert ex.text.value and "Traceback" not in ex.text.value, name


def test_moves_visit_allowed_values_each_different_from_the_one_before():
    import ipywidgets as W

    controls = [W.IntSlider(value=3, min=0, max=10), W.FloatSlider(value=0.5, min=0.0, max=2.0, step=0.25),
                W.FloatLogSlider(value=10.0, base=10, min=-3, max=5), W.Dropdown(options=["a", "b", "c"], value="b"),
                W.Dropdown(options=[("one", 1), ("two", 2)], value=1), W.SelectionSlider(options=[1, 8, 64]),
                W.Checkbox(value=False)]
    for c in controls:
        values = widgets.moves(c, 7)
        assert len(values) == 7 and values[0] != c.value and widgets.other_value(c) == values[0]
        assert all(a != b for a, b in zip(values, values[1:])), type(c).__name__
        for v in values:  # each is allowed: setting it keeps it
            c.value = v
            assert c.value == pytest.approx(v), type(c).__name__
    log = controls[2]
    assert all(10.0 ** log.min <= v <= 10.0 ** log.max for v in widgets.moves(log, 5))  # not the exponents
    with pytest.raises(TypeError, match="Text"):
        widgets.moves(W.Text(), 1)
    with pytest.raises(ValueError, match="one allowed value"):
        widgets.moves(W.Dropdown(options=["only"]), 1)


def test_the_image_is_the_canvas_as_png():
    import io

    from PIL import Image

    ex = widgets.explorer_for(1)
    png = ex.image.value
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(png))), np.asarray(ex.fig.canvas.buffer_rgba()))


def test_kept_artists_are_made_once_and_drawn_like_new_ones():
    import ipywidgets as W

    def setup(fig):
        widgets.log_axes(fig.axes[0], (1, 100), (1, 100), "x", "y")

    def draw_new(fig, k):
        ax = fig.axes[0]
        arts = [*ax.plot([1, 10 * k], [2, 5 * k], "C1o-"), *ax.plot([3], [k], "k^")]
        return [*arts, ax.legend(arts[1:], [f"k = {k}"])], ""

    def draw_kept(fig, k):
        ax = fig.axes[0]
        arts = [widgets.kept_line(ax, "curve", [1, 10 * k], [2, 5 * k], "C1o-"),
                widgets.kept_line(ax, "mark", [3], [k], "k^")]
        legend = widgets.kept(fig, "legend", lambda: ax.legend(arts[1:], ["?"]))
        return [*arts, widgets.relabelled(legend, [f"k = {k}"])], ""

    new, kept = (widgets.explorer(setup, draw, {"k": W.IntSlider(value=1, min=1, max=9)}) for draw in
                 (draw_new, draw_kept))
    line = kept.fig._llmmath_kept[("line", kept.fig.axes[0], "curve")]
    for k in (5, 9, 2):
        new.controls["k"].value = kept.controls["k"].value = k
        assert kept.image.value == new.image.value
    assert kept.fig._llmmath_kept[("line", kept.fig.axes[0], "curve")] is line and line.axes is kept.fig.axes[0]
    assert not new.fig.axes[0].lines  # a frame's artists are removed after it; kept ones stay, hidden till asked
    assert not line.get_visible() and widgets.kept_line(kept.fig.axes[0], "curve", [1], [1]).get_visible()
    with pytest.raises(ValueError, match="2 labels"):
        widgets.relabelled(kept.fig._llmmath_kept["legend"], ["a", "b"])


def test_a_link_that_moves_other_controls_answers_once():
    import ipywidgets as W

    seen = []

    def draw(fig, a, b):
        seen.append((a, b))
        return [], f"{a} {b}"

    a, b = W.IntSlider(value=1, min=0, max=10), W.IntSlider(value=2, min=0, max=20)
    ex = widgets.explorer(lambda fig: None, draw, {"a": a, "b": b},
                          links={"a": lambda change: setattr(b, "value", 2 * change["new"])})
    a.value = 4
    assert seen == [(1, 2), (4, 8)] and ex.text.value == "4 8"  # one answer, with b already moved
    with ex.held():
        a.value, b.value = 5, 3
    assert seen[2:] == [(5, 3)]
    with pytest.raises(KeyError, match="links name controls"):
        widgets.explorer(lambda fig: None, draw, {"a": a, "b": b}, links={"c": print})


def test_fit_knee_recovers_a_roofline_knee_despite_scale_and_one_outlier():
    B = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256], float)
    t = 3e-3 * np.maximum(20.0, B)
    assert kernels.fit_knee(B, t) == pytest.approx(20.0, rel=0.01)
    assert kernels.fit_knee(B, 7 * t) == pytest.approx(20.0, rel=0.01)   # a uniform slowdown moves the scale only
    t[3] *= 3                                                              # one batch slowed 3x by another process
    assert kernels.fit_knee(B, t) == pytest.approx(20.0, rel=0.05)
    assert kernels.fit_knee(B, 3e-3 * np.maximum(80.0, B)) == pytest.approx(80.0, rel=0.01)
    with pytest.raises(ValueError, match="finite and > 0"):
        kernels.fit_knee([1, 2], [1.0, -1.0])
    with pytest.raises(ValueError, match="no knee"):
        kernels.fit_knee([2, 2], [1.0, 1.0])


def test_fit_overlap_recovers_the_fraction_and_clips_at_the_bounds():
    B = np.array([1, 2, 4, 8, 16, 32, 64, 128], float)
    c, m = B * 1e-3, np.full(B.size, 16e-3)
    for f in (0.0, 0.3, 0.75, 1.0):
        t = np.maximum(c, m) + (1 - f) * np.minimum(c, m)
        assert kernels.fit_overlap(t, c, m) == pytest.approx(f, abs=0.011)
    assert kernels.fit_overlap(3 * (c + m), c, m) == 0.0                 # slower than no overlap: the sum bound
    assert kernels.fit_overlap(0.5 * np.maximum(c, m), c, m) == 1.0      # faster than the floor: the max bound
    with pytest.raises(ValueError, match="equally long"):
        kernels.fit_overlap([1.0, 2.0], [1.0], [1.0, 2.0])


def test_read_vs_recompute_predictions_by_hand_and_bad_sizes():
    r = kernels.read_vs_recompute(n_layers=2, d_model=64, n_tokens=16, n_cached=32, rounds=2)
    assert len(r.recompute_s) == 2 and len(r.read_s) == 2 and np.all(r.paired_ratio > 0)
    # by hand: 3 products of (16 x 64)(64 x 64) per layer, 2 FLOPs a multiply-add; the gather moves
    # K and V rows of 2 layers, 64 fp32 values each, read once and written once
    assert r.recompute_predicted_s == pytest.approx(2 * 3 * 2 * 16 * 64 * 64 / r.flops_per_s)
    assert r.read_predicted_s == pytest.approx(2 * (16 * 2 * 2 * 64 * 4) / r.bytes_per_s)
    # the recompute is priced at its own product's rate: a 16-row product does not beat a large square one
    assert 0 < r.flops_per_s < 2 * r.square_flops_per_s
    with pytest.raises(ValueError, match="cannot exceed"):
        kernels.read_vs_recompute(n_tokens=64, n_cached=32)
    with pytest.raises(ValueError, match="rounds must be a whole number"):
        kernels.read_vs_recompute(rounds=0)


def test_probe_rounds_its_arrays_to_whole_blocks():
    # 10^6 bytes = 250,000 floats: rounded down to 7 blocks of 32,768 (the read streams view it as 1,024 x 32 blocks)
    assert kernels.CeilingProbe((), array_bytes=1e6).array_elements == 7 * 32768
    assert kernels.CeilingProbe((), array_bytes=100).array_elements == 32768       # at least one block
    with pytest.raises(ValueError, match="array_bytes must be > 0"):
        kernels.CeilingProbe((), array_bytes=-1)


def test_probe_read_ceiling_is_its_read_stream():
    probe = kernels.CeilingProbe((), array_bytes=2**20)
    probe.sample()
    # each of the three read streams moves one array of 2^20 bytes per call; the ceiling is the fastest
    fastest = min(min(probe.stream_samples_s[k]) for k in ("read", "read_blas", "read_blocked"))
    assert probe.read_bytes_per_s == pytest.approx(2**20 / fastest)


def test_batch_sweep_departures_name_the_batches_and_their_causes():
    s = kernels.batch_sweep([1, 4, 64], d_model=256, flops_per_s=1e11, bytes_per_s=1e10, repeats=1, progress=False)
    b = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256.0])
    F, W, d = 2 * 256 * 64e6 / 0.33, 26e9, 8000
    t = np.array([9.8, 30, 30, 35, 44, 64, 100, 170, 330]) * 1e-3
    synth = dataclasses.replace(s, batch=b, measured_s=t, compute_s=2 * b * d * d / F,
                                memory_s=(d * d + 2 * b * d) * 4 / W, d_model=d, flops_per_s=F, bytes_per_s=W,
                                formulation=("plain",) * 9)
    text = synth.departures()
    # by hand: ratios 3.05, 3.04 (memory-bound), 3.39, 2.13, 1.55 (compute-bound) leave the band; one read of W
    # is 256 MB / 26 GB/s = 9.85 ms, so B = 2 took 30 / 9.85 = 3.0 reads; B = 32 ran 2 x 32 x 64e6 / 64 ms
    # = 64 GFLOP/s, 64% of F = 2 x 256 x 64e6 / 0.33 s = 99.3 GFLOP/s
    assert "B = 2 (plain, 3.05), B = 4 (plain, 3.04), B = 8 (plain, 3.39)" in text
    assert "B = 2 (plain GEMM) took 3.0 reads of W" in text and "B = 32 (plain) ran at 64% of F" in text
    fast = dataclasses.replace(synth, measured_s=np.where(b == 1, 6e-3, synth.predicted_s),
                               formulation=("blocks 2000x32",) + ("plain",) * 8)
    # B = 1 in 6 ms: 256 MB / 6 ms = 42.7 GB/s, above the 26 GB/s ceiling: the ceiling, not the kernel, is off
    assert fast.departures().startswith("outside 0.8-1.25x: B = 1 (blocks 2000x32, 0.61)")
    assert "streamed W at 42.7 GB/s, above the 26.0 GB/s" in fast.departures()
    flat = dataclasses.replace(synth, measured_s=synth.predicted_s)
    assert flat.departures() == "every batch within 0.8-1.25x of its prediction"


def test_blocked_weight_computes_the_product_and_plans_among_layouts():
    rng = np.random.default_rng(0)
    W = rng.standard_normal((2000, 256), dtype=np.float32)
    X = rng.standard_normal((3, 2000), dtype=np.float32)
    bw = kernels.BlockedWeight(W)
    assert bw.blocks() == [(2000, 64), (2000, 32), (250, 64), (250, 32)]          # all divide (2000, 256)
    ref = X.astype(np.float64) @ W.astype(np.float64)
    for kc, nc in bw.blocks():
        Y = bw.unblock(bw.product(X, kc, nc)())
        assert Y.shape == (3, 256) and np.abs(Y - ref).max() < 1e-3 * np.abs(ref).max()
        assert bw.packed(kc, nc).shape == (2000 // kc, 256 // nc, kc, nc)
    label, fn = bw.plan(X, rounds=1, every_block=True)
    assert label in ("plain", "blocks 2000x64", "blocks 2000x32", "blocks 250x64", "blocks 250x32") and fn() is not None
    # by hand: 2000 x 64 x rows <= 2^19 = 524,288 for rows <= 4; 2000 x 32 for rows <= 8; 250 x 64 for rows <= 32;
    # 250 x 32 for rows <= 65
    assert bw.block_for(4) == (2000, 64) and bw.block_for(5) == (2000, 32)
    assert bw.block_for(8) == (2000, 32) and bw.block_for(9) == (250, 64) and bw.block_for(33) == (250, 32)
    assert bw.block_for(65) == (250, 32) and bw.block_for(66) is None
    assert bw.blocks_for(4) == [(2000, 64), (2000, 32), (250, 64), (250, 32)]
    assert bw.blocks_for(9) == [(250, 64), (250, 32)] and bw.blocks_for(64) == [(250, 32)]
    with pytest.raises(ValueError, match="must divide"):
        bw.packed(300, 32)
    assert kernels.BlockedWeight(rng.standard_normal((100, 30), dtype=np.float32)).blocks() == []


def test_batch_sweep_names_the_kernel_of_every_batch_and_refuses_unknown_formulations():
    s = kernels.batch_sweep([1, 2, 128], d_model=2000, d_out=256, flops_per_s=1e11, bytes_per_s=1e10, repeats=1,
                            progress=False)
    assert len(s.formulation) == 3 and s.formulation[2] == "plain"     # no block fits 128 rows: not planned
    assert all(f in ("plain", "blocks 2000x64", "blocks 2000x32", "blocks 250x64", "blocks 250x32")
               for f in s.formulation)
    plain = kernels.batch_sweep([1, 2], d_model=2000, d_out=256, flops_per_s=1e11, bytes_per_s=1e10, repeats=1,
                                progress=False, formulation="plain")
    assert plain.formulation == ("plain", "plain")
    with pytest.raises(ValueError, match="formulation must be"):
        kernels.batch_sweep([1], d_model=64, flops_per_s=1e9, bytes_per_s=1e9, progress=False, formulation="fast")
