"""The array backend, an honest timer, and the kernel demos.

Backend: NumPy on the CPU by default; CuPy when it is installed and a GPU
answers. ``LLMMATH_DEVICE=cpu`` forces the CPU; ``LLMMATH_DEVICE=gpu`` demands
the GPU and fails clearly without one.

Timer: warm-up runs, then repeats, reporting the median. On the GPU each repeat
is bracketed by CUDA events (device time, not host time); on the CPU by
``time.perf_counter``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from functools import lru_cache
from typing import Callable, Sequence

import numpy as np

from .machine import SYSFS_CACHE, cpu_caches, cpu_identity, memory_bytes

__all__ = [
    "Backend", "backend", "Timing", "time_fn", "measure_copy_bandwidth",
    "measure_matmul_flops", "CeilingProbe", "time_interleaved", "last_level_cache_bytes", "evict_caches",
    "one_blas_thread", "local_chip",
    "BatchSweep", "batch_sweep", "default_sweep_sizes", "loglog_slope", "fit_knee", "fit_overlap",
]

_NP_DTYPES = {"fp32": "float32", "fp16": "float16", "fp64": "float64"}


@dataclasses.dataclass(frozen=True)
class Backend:
    """The array library in use. ``xp`` is ``numpy`` or ``cupy``."""

    name: str
    xp: object
    device_name: str
    memory_bytes: float
    is_gpu: bool

    def sync(self) -> None:
        """Wait for all queued device work (no-op on the CPU)."""
        if self.is_gpu:
            self.xp.cuda.get_current_stream().synchronize()

    def to_numpy(self, a) -> np.ndarray:
        return self.xp.asnumpy(a) if self.is_gpu else np.asarray(a)


def _cpu_backend() -> Backend:
    return Backend("numpy", np, f"{cpu_identity()['model']}, {os.cpu_count()} cores", memory_bytes(), False)


def _gpu_backend() -> Backend | None:
    """A CuPy backend if CuPy imports and a device answers a tiny kernel, else None."""
    try:
        import cupy as cp

        if cp.cuda.runtime.getDeviceCount() < 1:
            return None
        (cp.arange(4) * 2).sum().item()  # a real launch, not just a driver query
        props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
        name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
        return Backend("cupy", cp, name, float(props["totalGlobalMem"]), True)
    except Exception:  # ImportError, CUDA driver/runtime errors: no usable GPU
        return None


@lru_cache(maxsize=None)
def backend() -> Backend:
    """The active backend, chosen once per process (see the module docstring).

    Raises:
        RuntimeError: ``LLMMATH_DEVICE=gpu`` but no CuPy/GPU answers.
        ValueError: ``LLMMATH_DEVICE`` is set to something other than cpu, gpu or auto.
    """
    want = os.environ.get("LLMMATH_DEVICE", "auto").strip().lower()
    if want not in ("auto", "cpu", "gpu"):
        raise ValueError(f"LLMMATH_DEVICE must be 'cpu', 'gpu' or 'auto', got {want!r}")
    if want == "cpu":
        return _cpu_backend()
    gpu = _gpu_backend()
    if gpu is not None:
        return gpu
    if want == "gpu":
        raise RuntimeError(
            "LLMMATH_DEVICE=gpu but no GPU answered: install CuPy for your CUDA "
            "(pip install 'llmmath[gpu]', see README) and check nvidia-smi; or unset LLMMATH_DEVICE"
        )
    return _cpu_backend()


@dataclasses.dataclass(frozen=True)
class Timing:
    """Repeated timings of one function, seconds."""

    samples_s: tuple[float, ...]

    @property
    def median_s(self) -> float:
        return float(np.median(self.samples_s))

    @property
    def min_s(self) -> float:
        return float(np.min(self.samples_s))

    @property
    def spread(self) -> float:
        """(max - min) / median: how noisy the repeats were."""
        return float((np.max(self.samples_s) - np.min(self.samples_s)) / self.median_s)


def time_fn(fn: Callable[[], object], *, warmup: int = 1, repeats: int = 5, be: Backend | None = None) -> Timing:
    """Time ``fn()``: ``warmup`` untimed calls, then ``repeats`` timed ones.

    On a GPU backend each call is bracketed by CUDA events recorded on the current
    stream, and the elapsed device time is read after synchronizing; on the CPU
    ``time.perf_counter`` brackets the call.

    Raises:
        ValueError: ``warmup`` < 0 or ``repeats`` < 1.
    """
    be = be or backend()
    if warmup < 0 or repeats < 1:
        raise ValueError(f"need warmup >= 0 and repeats >= 1, got warmup={warmup}, repeats={repeats}")
    for _ in range(warmup):
        fn()
    be.sync()
    samples = []
    if be.is_gpu:
        cp = be.xp
        for _ in range(repeats):
            start, end = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(cp.cuda.get_elapsed_time(start, end) * 1e-3)
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
    return Timing(tuple(samples))


def _random(be: Backend, shape, dtype: str, seed: int = 0):
    """Normal random array on the backend (never zeros: they can run faster than real data).

    Arrays beyond 2^20 elements repeat one random block of 2^20 + 7 values (drawing
    10^8 normals costs seconds on a CPU; a repeated random block times the same).
    """
    xp = be.xp
    rng = xp.random.default_rng(seed)
    n = int(np.prod(shape))
    block = 2**20 + 7  # odd length, so rows of a power-of-two matrix do not repeat
    if n <= block:
        out = rng.standard_normal(n, dtype=xp.float32)
    else:
        out = xp.tile(rng.standard_normal(block, dtype=xp.float32), -(-n // block))[:n]
    return out.reshape(shape).astype(_NP_DTYPES[dtype], copy=False)


def measure_copy_bandwidth(n_bytes: float | None = None, be: Backend | None = None) -> float:
    """Achieved memory bandwidth, bytes/s, of a large copy (bytes read + bytes written), best of the repeats.

    Size defaults to 128 MiB on the CPU (2.7x a 48 MB L3) and 2 GiB on a GPU (43x
    the H200's 50 MB L2), far beyond any cache.
    """
    be = be or backend()
    n_bytes = n_bytes or (2 * 2**30 if be.is_gpu else 128 * 2**20)
    n = int(n_bytes // 4)
    src = _random(be, (n,), "fp32")
    dst = be.xp.empty_like(src)
    t = time_fn(lambda: be.xp.copyto(dst, src), warmup=1, repeats=10 if be.is_gpu else 4, be=be)
    return 2.0 * src.nbytes / t.min_s  # a ceiling: the best of the repeats


def measure_matmul_flops(n: int | None = None, dtype: str = "fp32", be: Backend | None = None) -> float:
    """Achieved FLOP/s of an ``n x n x n`` matrix product at ``dtype`` (2 n^3 FLOPs).

    ``n`` defaults to 2048 on the CPU (about 0.1 s a product on 2 cores) and
    8192 on a GPU. Like :func:`measure_copy_bandwidth` it reports the best of its
    repeats: a ceiling, not a typical run.
    """
    be = be or backend()
    if dtype not in _NP_DTYPES:
        raise KeyError(f"dtype must be one of {list(_NP_DTYPES)}, got {dtype!r}")
    n = n or (8192 if be.is_gpu else 2048)
    a = _random(be, (n, n), dtype, 1)
    b = _random(be, (n, n), dtype, 2)
    t = time_fn(lambda: a @ b, warmup=1, repeats=10 if be.is_gpu else 4, be=be)
    return 2.0 * n**3 / t.min_s  # a ceiling: the best of the repeats


class CeilingProbe:
    """This machine's ceilings, sampled *between* a demo's kernels so both see the same load.

    A ceiling measured once at start-up and a kernel timed seconds later can see
    different machines: on a shared 2-core box another process may take half the
    memory bandwidth during one and not the other, and the kernel then appears to
    beat its roofline floor (seen: 2.9x). A probe instead runs its streams and one
    square product per :meth:`sample`, which a demo calls at the start of every
    round of its round-robin (:func:`time_interleaved`); each ceiling is the best
    of its samples, like the kernels' times beside it, so a burst of load slows
    a sample of each rather than all of one.

    Memory: six streaming kernels over arrays of ``array_bytes`` each (rounded down to whole
    128 KiB blocks; default
    128 MiB on a CPU, 4x a 32 MiB L3; 2 GiB on a GPU, 43x the H200's 50 MB L2), counted as
    STREAM counts them (McCalpin, "STREAM: Sustainable Memory Bandwidth in High
    Performance Computers"; bytes the program reads and writes, not the extra
    line reads a cache may make before a write): ``copy`` c = a (2 arrays' bytes),
    ``read`` sum(a) (1), ``read_blas`` a matrix-vector product over ``a`` viewed as
    rows of 1,024 (1), ``read_blocked`` one row times ``a`` viewed as 1,024 x 32 blocks
    (1; :class:`BlockedWeight`'s layout), ``add`` c = a + b (3), and ``update`` c += b (3, the
    read-modify-write pattern STREAM leaves out). Which one streams fastest differs
    between machines (on the 2-core EPYC VM this course is tested on, a lone core's
    in-place update moves 1.5-3x the bytes per second of its copy), so
    :attr:`memory_bytes_per_s`, the roof for a kernel whose byte count is exact,
    is the best of them, and :attr:`read_bytes_per_s` the best of the three reads.
    Compute: an ``n x n x n`` product (2 n^3 FLOPs) per dtype in ``dtypes``, n = 2048
    on a CPU, 8192 on a GPU (:func:`measure_matmul_flops`'s sizes); ``dtypes=()``
    probes memory only.

    Raises:
        KeyError: a dtype other than fp32, fp16 or fp64.
    """

    STREAMS = {"copy": 2, "read": 1, "read_blas": 1, "read_blocked": 1, "add": 3, "update": 3}   # arrays each moves
    READS = ("read", "read_blas", "read_blocked")   # the streams that only read

    def __init__(self, dtypes: Sequence[str] = ("fp32",), be: Backend | None = None,
                 array_bytes: float | None = None, matmul_n: int | None = None):
        self.be = be or backend()
        for dt in dtypes:
            if dt not in _NP_DTYPES:
                raise KeyError(f"dtypes must be among {list(_NP_DTYPES)}, got {dt!r}")
        array_bytes = array_bytes or (2 * 2**30 if self.be.is_gpu else 128 * 2**20)
        if not array_bytes > 0:
            raise ValueError(f"array_bytes must be > 0, got {array_bytes!r}")
        # a whole number of 1,024 x 32 blocks (the read streams view the array as rows and blocks), at least one
        self.array_elements = max(1, int(array_bytes // 4) // 32768) * 32768
        self.matmul_n = int(matmul_n or (8192 if self.be.is_gpu else 2048))
        self._a = _random(self.be, (self.array_elements,), "fp32", 5)
        self._b = _random(self.be, (self.array_elements,), "fp32", 6)
        self._c = self.be.xp.empty_like(self._a)
        self._mm = {dt: (_random(self.be, (self.matmul_n,) * 2, dt, 1), _random(self.be, (self.matmul_n,) * 2, dt, 2))
                    for dt in dtypes}
        xp, a, b, c = self.be.xp, self._a, self._b, self._c
        # only c is written, and each sample rewrites it before updating it: values stay bounded
        rows, ones = a.reshape(-1, 1024), xp.ones(1024, dtype=a.dtype)
        blocks, x1 = a.reshape(-1, 1024, 32), xp.ones((1, 1024), dtype=a.dtype)   # BlockedWeight's layout, one row
        self._streams = {"copy": lambda: xp.copyto(c, a), "read": lambda: a.sum(), "read_blas": lambda: rows @ ones,
                         "read_blocked": lambda: xp.matmul(x1, blocks),
                         "add": lambda: xp.add(a, b, out=c), "update": lambda: xp.add(c, b, out=c)}
        self.stream_samples_s: dict[str, list[float]] = {k: [] for k in self.STREAMS}
        self.matmul_samples_s: dict[str, list[float]] = {dt: [] for dt in dtypes}
        self._warm = False

    def sample(self) -> None:
        """Time each stream and one product per dtype once (after a first, untimed, warm-up of each)."""
        for name, fn in self._streams.items():
            self.stream_samples_s[name].append(time_fn(fn, warmup=0 if self._warm else 1, repeats=1, be=self.be).min_s)
        for dt, (a, b) in self._mm.items():
            t = time_fn(lambda: a @ b, warmup=0 if self._warm else 1, repeats=1, be=self.be)
            self.matmul_samples_s[dt].append(t.min_s)
        self._warm = True

    def _need(self):
        if not self.stream_samples_s["copy"]:
            raise RuntimeError("CeilingProbe has no samples yet: call .sample() first")

    @property
    def stream_bytes_per_s(self) -> dict:
        """Best rate of each stream kernel sampled, bytes/s: ``{"copy": .., "read": .., "read_blas": .., ...}``."""
        self._need()
        return {k: n * 4.0 * self.array_elements / min(self.stream_samples_s[k]) for k, n in self.STREAMS.items()}

    @property
    def copy_bytes_per_s(self) -> float:
        """Best copy bandwidth sampled, bytes/s (bytes read + bytes written)."""
        return self.stream_bytes_per_s["copy"]

    @property
    def read_bytes_per_s(self) -> float:
        """Best read-only stream sampled, bytes/s: the ceiling for a kernel that mostly reads (weights, a KV cache).

        The best of three kernels that only read the array: NumPy's ``sum``, a BLAS
        matrix-vector product over it viewed as rows of 1,024, and one row times it
        viewed as 1,024 x 32 blocks (the way :class:`BlockedWeight` streams a weight). On
        the 2-core EPYC VM the last reads fastest (~30 GB/s on one core against ~25 for
        the sum): no single kernel is the machine's read rate.
        """
        rates = self.stream_bytes_per_s
        return max(rates[k] for k in self.READS)

    @property
    def read_samples_bytes_per_s(self) -> np.ndarray:
        """Per :meth:`sample`, the best of the three read streams in that sample, bytes/s (shape: samples).

        :attr:`read_bytes_per_s` is their maximum; their spread says how far the
        machine's memory bandwidth moved while a demo ran (other guests on the host
        share it, and a guest's own load meter cannot see them).

        Raises:
            RuntimeError: before the first :meth:`sample`.
        """
        self._need()
        t = np.min([self.stream_samples_s[k] for k in self.READS], axis=0)
        return 4.0 * self.array_elements / t

    @property
    def memory_bytes_per_s(self) -> float:
        """The memory roof: the best of all :attr:`STREAMS` (copy, the three reads, add, update), bytes/s."""
        return max(self.stream_bytes_per_s.values())

    def flops_per_s(self, dtype: str = "fp32") -> float:
        """Best matmul rate sampled at ``dtype``, FLOP/s.

        Raises:
            KeyError: ``dtype`` was not probed.
        """
        self._need()
        if dtype not in self.matmul_samples_s:
            raise KeyError(f"dtype {dtype!r} was not probed; probed: {list(self.matmul_samples_s)}")
        return 2.0 * self.matmul_n**3 / min(self.matmul_samples_s[dtype])

    def describe(self) -> str:
        """How the ceilings were measured, in words (for a chapter's printout)."""
        n = len(self.stream_samples_s["copy"])
        mm = (f" and {self.matmul_n}^3 products ({', '.join(self.matmul_samples_s)})" if self.matmul_samples_s else "")
        return (f"best of {n} samples of {', '.join(self.STREAMS)} streams over {4 * self.array_elements / 2**20:.0f} MiB "
                f"arrays{mm}, taken between the kernels' rounds")


class one_blas_thread:
    """``with one_blas_thread(active):`` times on one BLAS thread when ``active`` (the CPU path).

    A demo compared with one-core ceilings, or made of many small products, should not
    lean on a second BLAS thread: on a busy 2-core machine that thread loses its core
    and each product waits a scheduler slice (measured: small products up to 500x
    slower; the MoE layer's fall of time per token shrank from ~5x to 1.3x). Uses
    threadpoolctl (installed with scikit-learn); a no-op when ``active`` is false.
    """

    def __init__(self, active: bool = True):
        self._ctx = None
        if active:
            from threadpoolctl import threadpool_limits

            self._ctx = threadpool_limits(1, "blas")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._ctx is not None:
            self._ctx.restore_original_limits()
        return False


def last_level_cache_bytes(be: Backend | None = None) -> int:
    """Size of the cache in front of memory, bytes: the CPU's L3 (Linux ``sysfs``) or the GPU's L2.

    CPU: the largest ``/sys/devices/system/cpu/cpu0/cache/index*/size`` (the L3 one
    core sees; 32 MiB on the 2-core EPYC VM); 32 MiB where ``sysfs`` has no answer
    (macOS, Windows, some containers). GPU: the device's ``l2CacheSize`` (50 MB on an
    H100 or H200 SXM: 50 of the GH100 die's 60 MB enabled, NVIDIA's Hopper architecture
    blog), 64 MiB if CuPy does not say.
    """
    be = be or backend()
    if be.is_gpu:
        try:
            props = be.xp.cuda.runtime.getDeviceProperties(be.xp.cuda.Device().id)
            return int(props["l2CacheSize"]) or 64 * 2**20
        except Exception:  # noqa: BLE001 - an older CuPy without the field
            return 64 * 2**20
    return _cpu_llc_bytes()


@lru_cache(maxsize=None)
def _cpu_llc_bytes(root: str = SYSFS_CACHE) -> int:
    """The largest cache under ``root`` (:func:`llmmath.demos.machine.cpu_caches`), bytes; 32 MiB if none can be read
    (a size of zero, which some virtual machines report, counts as unreadable)."""
    return max((c.size_bytes for c in cpu_caches(root)), default=32 * 2**20)


_EVICT: dict = {}


def evict_caches(be: Backend | None = None) -> None:
    """Leave the caches holding nothing a kernel will read and nothing dirty: one read-only sweep.

    Reads (sums) a buffer of twice :func:`last_level_cache_bytes`, at least 64 MiB,
    allocated once per backend. Reading rather than writing matters: a sweep that
    writes leaves the cache full of modified lines, and the next kernel then pays
    for their write-back while it reads (measured on the 2-core EPYC VM: decode
    attention over an 8 MiB cache, the smallest the chapter-2 sweep once used, ran at
    1.1x its byte floor after a read sweep and 1.5x after a copy; 2.2x right after a
    probe's update stream). This is the state a roofline's byte floor assumes: every
    byte from memory, no other traffic.
    """
    be = be or backend()
    buf = _EVICT.get(be.name)
    if buf is None:
        n = max(64 * 2**20, 2 * last_level_cache_bytes(be)) // 4
        buf = _EVICT[be.name] = be.xp.ones(n, dtype=be.xp.float32)
    buf.sum()
    be.sync()


def time_interleaved(fns: dict, *, rounds: int = 5, warmup: int = 1, probe: CeilingProbe | None = None,
                     be: Backend | None = None, evict: bool | Callable[[], object] = False) -> dict:
    """Time several functions round-robin, so every one of them sees the same load.

    Round r calls ``probe.sample()`` (if a probe is given), then each function once.
    Before the first round each function gets ``warmup`` untimed calls. With
    ``evict``, every timed call is preceded by an untimed :func:`evict_caches` (or,
    if ``evict`` is a function, by a call of it: say the same kernel on another
    layer's data, which evicts the data but keeps the code cached), so each starts
    from the same cold, clean cache whatever ran before it (a kernel whose data is a
    few times the cache otherwise gains from what the call before left cached, or
    pays for what it left dirty). Returns
    ``{name: Timing}`` with ``rounds`` samples each; compare their ``min_s`` (or
    ``median_s``) with ceilings from the same probe.

    Raises:
        ValueError: ``rounds`` < 1, ``warmup`` < 0, or no functions.
        TypeError: ``evict`` neither a bool nor callable.
    """
    be = be or backend()
    if not fns:
        raise ValueError("fns must name at least one function to time")
    if not (isinstance(evict, bool) or callable(evict)):
        raise TypeError(f"evict must be True, False or a function to call before each timed call, got {evict!r}")
    if rounds < 1 or warmup < 0:
        raise ValueError(f"need rounds >= 1 and warmup >= 0, got rounds={rounds}, warmup={warmup}")
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    samples: dict = {name: [] for name in fns}
    for _ in range(rounds):
        if probe is not None:
            probe.sample()
        for name, fn in fns.items():
            if callable(evict):
                evict()
            elif evict:
                evict_caches(be)
            samples[name].append(time_fn(fn, warmup=0, repeats=1, be=be).samples_s[0])
    return {name: Timing(tuple(v)) for name, v in samples.items()}


@dataclasses.dataclass(frozen=True)
class ReadVsRecompute:
    """Result of :func:`read_vs_recompute`: times in seconds, one sample per round."""

    recompute_s: tuple
    read_s: tuple
    recompute_predicted_s: float
    read_predicted_s: float
    flops_per_s: float            # the rate of one of the recompute's own products (n_tokens x d by d x d)
    bytes_per_s: float
    square_flops_per_s: float = float("nan")   # the probe's large square product, for comparison

    @property
    def paired_ratio(self) -> np.ndarray:
        """Recompute time / read time within each round (both saw that round's load)."""
        return np.array(self.recompute_s) / np.array(self.read_s)

    @property
    def recompute_over_predicted(self) -> float:
        return float(np.median(self.recompute_s)) / self.recompute_predicted_s

    @property
    def read_over_predicted(self) -> float:
        return float(np.median(self.read_s)) / self.read_predicted_s


def read_vs_recompute(n_layers: int = 8, d_model: int = 1024, n_tokens: int = 256, n_cached: int = 1024,
                      rounds: int = 11, be: Backend | None = None) -> ReadVsRecompute:
    """Time recomputing K and V of ``n_tokens`` tokens through ``n_layers`` layers against reading them from a cache.

    Recompute: per layer ``h = tanh(h W_h)``, ``K = h W_k``, ``V = h W_v`` (three
    ``d x d`` fp32 products per layer, ``6 T d^2`` FLOPs). Read: gather the tokens'
    cached K and V rows (``2 T L d`` values of 4 bytes, read and written once by the
    gather, into a buffer made beforehand on a CPU). Predictions: FLOPs over the rate of one of the recompute's own
    products (``n_tokens x d`` by ``d x d``, timed in the same rounds: a 256-row product runs far below a large square
    one, which the first version of this demo used and so predicted the recompute 5.8x too fast), bytes over the
    probe's copy rate (a gather reads and writes), all sampled in the same rounds as the two sides
    (:func:`time_interleaved`). Every timed call follows a read sweep
    (:func:`evict_caches`), so the gather finds the cache in memory, as the K and V of
    tokens written many steps ago would be. Timed back to back, its 2 T L d values and
    the buffer (together about a 32 MiB L3 at the defaults) were partly still cached
    from the call before, by a share that changed from run to run. On the 2-core EPYC
    VM, read / predicted was 0.88-1.60 in seven runs back to back and 0.85-1.40 in
    twelve runs read cold, half of those within 1.10-1.20: the machine's load moves
    it either way. Chapter 9, claim 40.

    Raises:
        ValueError: a size < 1, ``n_tokens > n_cached``, or rounds < 1.
    """
    be = be or backend()
    for name, v in (("n_layers", n_layers), ("d_model", d_model), ("n_tokens", n_tokens), ("n_cached", n_cached),
                    ("rounds", rounds)):
        if int(v) != v or v < 1:
            raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
    if n_tokens > n_cached:
        raise ValueError(f"n_tokens ({n_tokens}) cannot exceed the n_cached ({n_cached}) tokens in the cache")
    xp, d = be.xp, int(d_model)
    g = np.random.default_rng(5)
    Ws = [xp.asarray(g.standard_normal((3, d, d), dtype=np.float32) / np.float32(np.sqrt(d))) for _ in range(n_layers)]
    cache = xp.asarray(g.standard_normal((n_cached, n_layers, 2, d), dtype=np.float32))
    h0 = xp.asarray(g.standard_normal((n_tokens, d), dtype=np.float32))
    idx = xp.asarray(g.choice(n_cached, n_tokens, replace=False))

    def recompute():
        h, out = h0, []
        for W3 in Ws:
            h = xp.tanh(h @ W3[0])
            out.append((h @ W3[1], h @ W3[2]))
        return out

    if be.is_gpu:
        def read():
            return cache[idx]
    else:
        # into a buffer made once: a fresh 2 T L d-value array per call would add its page faults to the
        # timed copy (seen: 0.9x and 1.37x of the prediction in two runs); mode="clip" lets NumPy write
        # into `out` directly (the default mode copies through a temporary), and every index is valid
        rows, buf = cache.reshape(int(n_cached), -1), xp.empty((int(n_tokens), int(n_layers) * 2 * d), dtype=cache.dtype)

        def read():
            return xp.take(rows, idx, axis=0, out=buf, mode="clip")
    def one_product():                 # the recompute's own shape: its rate, not a large square's, prices it
        return h0 @ Ws[0][0]

    probe = CeilingProbe(("fp32",), be=be)
    timed = time_interleaved({"recompute": recompute, "read": read, "product": one_product}, rounds=rounds,
                             warmup=1, probe=probe, be=be, evict=True)
    F = 2 * n_tokens * d * d / float(np.median(timed["product"].samples_s))
    W = probe.copy_bytes_per_s
    return ReadVsRecompute(timed["recompute"].samples_s, timed["read"].samples_s,
                           n_tokens * n_layers * 3 * 2 * d * d / F, 2 * n_tokens * n_layers * 2 * d * 4 / W, F, W,
                           probe.flops_per_s("fp32"))


@lru_cache(maxsize=None)
def local_chip():
    """This machine as a :class:`llmmath.hardware.Chip`, measured once per process.

    Measures, on the active backend (:func:`backend`): ``hbm_bytes_per_s`` from a
    large copy (bytes read + bytes written; :func:`measure_copy_bandwidth`) and
    ``peak_flops_per_s`` from a large square product (fp32 on a CPU; fp32 and fp16
    on a GPU, bf16 reported equal to fp16; :func:`measure_matmul_flops`). These are
    achieved ceilings, not datasheet peaks. Measured once, at the first call: for a
    check that compares a kernel with them, sample the ceilings between the kernel's
    runs instead (:class:`CeilingProbe`). Takes about a second on a 2-core CPU.
    """
    from types import MappingProxyType

    from ..hardware import Chip

    be = backend()
    bw = measure_copy_bandwidth(be=be)
    flops = {"fp32": measure_matmul_flops(dtype="fp32", be=be)}
    if be.is_gpu:
        flops["fp16"] = measure_matmul_flops(dtype="fp16", be=be)
        flops["bf16"] = flops["fp16"]
    how = (f"copy of {(2 * 2**30 if be.is_gpu else 128 * 2**20) / 2**20:.0f} MiB (read + write), "
           f"best of {10 if be.is_gpu else 4}; {8192 if be.is_gpu else 2048}^3 products, best of "
           f"{10 if be.is_gpu else 4}")
    return Chip(
        key=f"local-{be.name}",
        name=f"this machine ({be.device_name})",
        vendor="",
        generation="measured",
        year=0,
        peak_flops_per_s=MappingProxyType(flops),
        hbm_bytes=float(be.memory_bytes),
        hbm_bytes_per_s=bw,
        sources=MappingProxyType({"all": f"measured by llmmath.demos.kernels on this machine: {how}"}),
        note="achieved ceilings from a large copy and a large matmul, not datasheet peaks",
    )


def loglog_slope(x, y) -> float:
    """Robust slope of ``log y`` against ``log x``: the median of all pairwise slopes (Theil-Sen).

    For checks on measured sweeps: a time that doubles with ``x`` has slope 1, a
    cost per item that falls as ``1/x`` slope -1. Unlike a ratio of the two end
    points, or a least-squares fit, one or two samples slowed by other processes on
    a shared machine cannot move it much (up to ~29% of the points may be outliers).
    Source: Sen, "Estimates of the regression coefficient based on Kendall's tau", 1968.

    Raises:
        ValueError: fewer than two points, shapes that differ, repeated ``x`` only,
            or a value that is not finite and positive.
    """
    x, y = np.asarray(x, dtype=float).ravel(), np.asarray(y, dtype=float).ravel()
    if x.shape != y.shape or x.size < 2:
        raise ValueError(f"need two equally long sequences of at least 2 points, got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y)) and (x > 0).all() and (y > 0).all()):
        raise ValueError("every x and y must be finite and > 0 (they are taken in logs)")
    lx, ly = np.log(x), np.log(y)
    i, j = np.triu_indices(x.size, k=1)
    dx = lx[j] - lx[i]
    keep = dx != 0
    if not keep.any():
        raise ValueError("all x are equal: no slope")
    return float(np.median((ly[j] - ly[i])[keep] / dx[keep]))



def _positive_series(**arrays) -> list:
    out = [np.asarray(v, dtype=float).ravel() for v in arrays.values()]
    if any(a.shape != out[0].shape for a in out) or out[0].size < 2:
        raise ValueError(f"need equally long sequences of at least 2 points, got lengths {[a.size for a in out]}")
    if not all(np.all(np.isfinite(a)) and (a > 0).all() for a in out):
        raise ValueError(f"every value of {', '.join(arrays)} must be finite and > 0")
    return out


def fit_knee(batch, time_s) -> float:
    """Measured knee of a batch sweep: the ``K`` of the best fit ``t = s * max(K, B)``.

    A roofline in shape only: flat below the knee, proportional to ``B`` above it,
    with a free scale ``s`` (so a machine slowed evenly moves ``s``, not ``K``). Fitted
    in logs by least absolute deviations over a grid of 2,001 ``K`` log-spaced from
    ``B_min / 4`` to ``4 B_max`` (``s`` is then the median residual), so one or two
    points slowed by other processes pull it less than a least-squares fit would.
    Source: the fit of a piecewise-linear model, as in Williams, Waterman and
    Patterson, "Roofline", CACM 2009, with a robust (L1) loss.

    Raises:
        ValueError: fewer than two points, unequal lengths, or a value not finite and > 0.
    """
    b, t = _positive_series(batch=batch, time_s=time_s)
    if b.min() == b.max():
        raise ValueError("all batches are equal: no knee")
    lb, lt = np.log(b), np.log(t)
    grid = np.linspace(np.log(b.min() / 4), np.log(b.max() * 4), 2001)
    resid = lt[None, :] - np.maximum(grid[:, None], lb[None, :])
    cost = np.abs(resid - np.median(resid, axis=1, keepdims=True)).sum(axis=1)
    return float(np.exp(grid[np.argmin(cost)]))


def fit_overlap(measured_s, compute_s, memory_s) -> float:
    """Fitted overlap fraction ``f`` in [0, 1] of measured step times between two roofline models.

    The model ``t = max(t_c, t_m) + (1 - f) min(t_c, t_m)``: ``f = 1`` is the roofline's
    full overlap (``max``), ``f = 0`` no overlap (``t_c + t_m``), the convention of
    :func:`llmmath.serving.utilization_vs_balance`. Fitted by least absolute deviations
    of ``log t`` over a grid of 101 values of ``f``, with no free scale: a kernel slower
    than even the no-overlap sum fits ``f = 0``, one faster than the floor ``f = 1``.
    Only points where ``min(t_c, t_m)`` is not negligible (near the knee) pull it.

    Raises:
        ValueError: unequal lengths, fewer than two points, or a value not finite and > 0.
    """
    t, c, m = _positive_series(measured_s=measured_s, compute_s=compute_s, memory_s=memory_s)
    f = np.linspace(0.0, 1.0, 101)
    model = np.maximum(c, m)[None, :] + (1.0 - f[:, None]) * np.minimum(c, m)[None, :]
    cost = np.abs(np.log(t)[None, :] - np.log(model)).sum(axis=1)
    return float(f[np.argmin(cost)])


def default_sweep_sizes(be: Backend | None = None) -> tuple[int, str, list[int]]:
    """``(d_model, dtype, batches)`` for the batch sweep on this backend.

    CPU: d = 8000 in fp32 (a 256 MB weight, beyond any CPU cache), B = 1..128 (one BLAS
    thread's knee is near B = 8: four batches at least twice past it, for the slope). Not
    8192: a power-of-two row stride makes the BLAS packing step alias in the CPU
    caches and run several times slower (measured: 150 ms vs 45 ms at B = 4).
    GPU: d = 16384 in fp16 (a 512 MiB weight, beyond the H200's 50 MB L2), B = 1..8192.
    """
    be = be or backend()
    if be.is_gpu:
        return 16384, "fp16", [2**i for i in range(14)]
    return 8000, "fp32", [2**i for i in range(8)]


class BlockedWeight:
    """A weight ``W`` (d x n) re-laid out in blocks of ``kc`` rows by ``nc`` columns, for products with few rows.

    Why: a BLAS multiplies a matrix with few rows through its general matrix-matrix
    routine, which first copies ("packs") ``W`` into cache-sized panels and then
    multiplies whole register tiles of rows whether they are filled or not; with two
    to a dozen rows that fixed cost is several reads of ``W``. Laid out as
    ``(d/kc, n/nc, kc, nc)`` contiguous blocks, ``Y = X W`` becomes a stack of small
    products ``X[:, k-block] @ W[k-block, n-block]`` (one NumPy ``matmul`` call over
    the stack) plus a sum over the ``d/kc`` partial results: each block is small
    enough for the BLAS's small-matrix path, which multiplies straight from the
    block as it streams in, so ``W`` is read once from memory. The partial sums add
    ``(d/kc) B n`` values written and read, under 1% of ``W``'s bytes at ``B <= 16``.
    Whether a given BLAS has such a path, and for which block sizes, differs between
    libraries and CPUs: :meth:`plan` times each layout on this machine and keeps the
    fastest, the plain product included (as FFTW plans a transform).

    Shapes: ``W`` (d, n); ``X`` (B, d); the product comes back as ``(n/nc, B, nc)``
    blocks of ``Y`` (:meth:`unblock` gives ``(B, n)``). Memory: one re-laid copy of
    ``W`` per block shape used, made on first use.

    Raises:
        ValueError: a block shape that does not divide ``W``'s.
    """

    # (kc, nc) tried by plan() where they divide W; on the 2-core EPYC VM (OpenBLAS 0.3.31, one thread,
    # d = n = 8000, timed round-robin) the fastest were 2000x32 at B = 1 (2000x64 1.25x slower), 2000x64 at
    # B = 4 (0.96-0.99 of the roofline against 1.29-1.31 for 2000x32), 2000x32 again at B = 8 (2000x64 is past
    # the small-product limit there: 3.4x) and 250x64 at B = 16 and 32, 1.4-2.1x faster than the plain
    # product; at B = 64 only blocks of at most 8,192 values fit the small-product limit, and 250x32 ran at 95
    # GFLOP/s against the plain product's 78 (it packs W). No one shape wins every batch, so plan() races those
    # that fit. Each layout costs a re-laid copy of W (0.3-0.5 s for 256 MB), made on first use.
    BLOCKS = ((2000, 64), (2000, 32), (250, 64), (250, 32))

    def __init__(self, W, be: Backend | None = None):
        self.be = be or backend()
        self.W = W
        self._packed: dict = {}

    #: rows x kc x nc of one block product at most this: half of the 100^3 up to which OpenBLAS's small-matrix
    #: kernels are permitted (its sgemm_small_kernel_permit for SkylakeX-class CPUs)
    SMALL_PRODUCT = 2**19

    def blocks(self):
        """The block shapes of :attr:`BLOCKS` that divide ``W``'s shape."""
        d, n = self.W.shape
        return [(kc, nc) for kc, nc in self.BLOCKS if d % kc == 0 and n % nc == 0]

    def blocks_for(self, rows: int):
        """The block shapes of :meth:`blocks` whose product with ``rows`` rows stays within
        :attr:`SMALL_PRODUCT` multiply-adds (beyond it the BLAS packs each block again)."""
        return [(kc, nc) for kc, nc in self.blocks() if rows * kc * nc <= self.SMALL_PRODUCT]

    def block_for(self, rows: int):
        """The largest of :meth:`blocks_for` ``rows`` (fewest block products), or ``None`` if none fits."""
        fit = self.blocks_for(rows)
        return max(fit, key=lambda b: b[0] * b[1]) if fit else None

    def packed(self, kc: int, nc: int):
        """``W`` as ``(d/kc, n/nc, kc, nc)`` contiguous blocks (made once, then cached)."""
        d, n = self.W.shape
        if d % kc or n % nc:
            raise ValueError(f"block ({kc}, {nc}) must divide W's shape {tuple(self.W.shape)}")
        if (kc, nc) not in self._packed:
            xp = self.be.xp
            self._packed[(kc, nc)] = xp.ascontiguousarray(
                self.W.reshape(d // kc, kc, n // nc, nc).transpose(0, 2, 1, 3))
        return self._packed[(kc, nc)]

    def product(self, X, kc: int, nc: int):
        """A function computing ``X W`` in blocks (kc, nc), into buffers made here: returns ``(n/nc, B, nc)``."""
        xp = self.be.xp
        P = self.packed(kc, nc)
        nk, npan = P.shape[0], P.shape[1]
        B = X.shape[0]
        Xb = xp.ascontiguousarray(X.reshape(B, nk, kc).transpose(1, 0, 2))[:, None]   # (nk, 1, B, kc)
        part = xp.empty((nk, npan, B, nc), dtype=P.dtype)
        acc = xp.empty((npan, B, nc), dtype=P.dtype)

        def run():
            xp.matmul(Xb, P, out=part)
            xp.sum(part, axis=0, out=acc)
            return acc

        return run

    @staticmethod
    def unblock(Yb):
        """``(n/nc, B, nc)`` blocks back to ``Y`` of shape ``(B, n)``."""
        npan, B, nc = Yb.shape
        return Yb.transpose(1, 0, 2).reshape(B, npan * nc)

    def plan(self, X, rounds: int = 3, every_block: bool = False):
        """``(label, fn)``: the fastest of the plain ``X @ W`` and the block layouts for this ``X``, timed here.

        The block layouts are :meth:`blocks_for` the rows of ``X`` (every shape of
        :meth:`blocks` if ``every_block``); the plain product always competes, so a
        BLAS without a small-matrix path keeps its plain product.
        ``label`` is ``"plain"`` or ``"blocks kc x nc"``. The candidates are timed
        round-robin, ``rounds`` rounds after one warm-up call each (:func:`time_interleaved`),
        and each keeps its best, so a burst of other work slows one sample of each
        rather than every sample of one (which would pick the wrong layout).
        """
        xp = self.be.xp
        Y = xp.empty((X.shape[0], self.W.shape[1]), dtype=self.W.dtype)
        cands = {"plain": (lambda: xp.matmul(X, self.W, out=Y))}
        shapes = self.blocks() if every_block else self.blocks_for(X.shape[0])
        for kc, nc in shapes:
            cands[f"blocks {kc}x{nc}"] = self.product(X, kc, nc)
        timed = time_interleaved(cands, rounds=rounds, warmup=1, be=self.be)
        label = min(timed, key=lambda k: timed[k].min_s)
        return label, cands[label]


@dataclasses.dataclass(frozen=True)
class BatchSweep:
    """Result of :func:`batch_sweep`; arrays indexed by batch."""

    batch: np.ndarray
    measured_s: np.ndarray
    compute_s: np.ndarray
    memory_s: np.ndarray
    d_model: int
    dtype: str
    flops_per_s: float
    bytes_per_s: float
    device: str
    d_out: int | None = None       # columns of W; None: square (d_model)
    formulation: tuple = ()        # per batch: "plain" (X @ W) or "blocks kc x nc" (BlockedWeight)
    copy_bytes_per_s: float | None = None   # the probe's copy stream (read + write), when it ran
    read_samples_bytes_per_s: np.ndarray | None = None   # the probe's read ceiling in each round, when it ran

    @property
    def weight_shape(self) -> tuple[int, int]:
        return (self.d_model, self.d_out or self.d_model)

    @property
    def predicted_s(self) -> np.ndarray:
        return np.maximum(self.compute_s, self.memory_s)

    @property
    def measured_over_predicted(self) -> np.ndarray:
        return self.measured_s / self.predicted_s

    @property
    def achieved_bytes_per_s(self) -> np.ndarray:
        """Bytes moved (X, W read; Y written) / measured time."""
        return self.memory_s * self.bytes_per_s / self.measured_s

    @property
    def achieved_flops_per_s(self) -> np.ndarray:
        return self.compute_s * self.flops_per_s / self.measured_s

    @property
    def knee_batch(self) -> float:
        """Predicted knee: the B where 2 B m n / F = (m n + B (m + n)) b / W, for W of shape (m, n)."""
        b = 4.0 if self.dtype == "fp32" else 2.0
        m, n = self.weight_shape
        return m * n * b / (2 * m * n / self.flops_per_s - (m + n) * b / self.bytes_per_s) / self.bytes_per_s

    @property
    def fitted_knee_batch(self) -> float:
        """Measured knee: :func:`fit_knee` through every batch of the sweep."""
        return fit_knee(self.batch, self.measured_s)

    def table(self) -> str:
        rows = [f"{'B':>6} {'measured':>11} {'predicted':>11} {'meas/pred':>9} {'bound':>8}  kernel"]
        for i, B in enumerate(self.batch):
            bound = "compute" if self.compute_s[i] >= self.memory_s[i] else "memory"
            form = self.formulation[i] if self.formulation else "plain"
            rows.append(
                f"{int(B):>6} {self.measured_s[i] * 1e3:>9.3f}ms {self.predicted_s[i] * 1e3:>9.3f}ms "
                f"{self.measured_over_predicted[i]:>9.2f} {bound:>8}  {form}"
            )
        return "\n".join(rows)

    def departures(self, low: float = 0.8, high: float = 1.25) -> str:
        """The batches whose measured / predicted lies outside ``[low, high]``, and the cause each shows, in words.

        Generated from this sweep's numbers only. A memory-bound batch under ``low``
        streamed ``W`` faster than the read ceiling the probe measured beside it (its
        rate is printed against the ceiling's). A memory-bound plain product over
        ``high`` with several rows is the BLAS's matrix-matrix routine paying its fixed
        cost: it packs ``W`` into cache-sized panels and multiplies whole register tiles
        of rows whether they are filled or not (its time in reads of ``W`` is printed).
        A compute-bound batch over ``high`` reaches only a share of ``F``, the best rate
        the product reached at any batch (printed); for a plain product the time it
        took beyond its compute floor is set beside one copy of ``W`` at the probe's copy
        bandwidth, what the BLAS's packing of ``W`` costs if it overlaps nothing.
        """
        r = self.measured_over_predicted
        forms = self.formulation or ("plain",) * len(self.batch)
        out = [i for i in range(len(self.batch)) if not low <= r[i] <= high]
        if not out:
            return f"every batch within {low}-{high}x of its prediction"
        m, n = self.weight_shape
        w_bytes = m * n * (4.0 if self.dtype == "fp32" else 2.0)
        lines = ["outside " + f"{low}-{high}x: " + ", ".join(
            f"B = {int(self.batch[i])} ({forms[i]}, {r[i]:.2f})" for i in out)]
        for i in out:
            B, mem = int(self.batch[i]), self.memory_s[i] >= self.compute_s[i]
            if mem and r[i] < low:
                lines.append(f"B = {B} streamed W at {w_bytes / self.measured_s[i] / 1e9:.1f} GB/s, above the "
                             f"{self.bytes_per_s / 1e9:.1f} GB/s of the probe's read streams")
            elif mem and forms[i] == "plain" and B >= 2:
                lines.append(f"B = {B} (plain GEMM) took {self.measured_s[i] * self.bytes_per_s / w_bytes:.1f} reads "
                             f"of W: the BLAS packs W and fills whole register tiles first")
            elif mem:
                lines.append(f"B = {B} reached {w_bytes / self.measured_s[i] / self.bytes_per_s:.0%} of the read ceiling")
            else:
                text = (f"B = {B} ({forms[i]}) ran at {self.achieved_flops_per_s[i] / self.flops_per_s:.0%} of F "
                        f"(F: the best rate this product reached at any batch, or the probe's, if higher)")
                if forms[i] == "plain" and self.copy_bytes_per_s:
                    text += (f"; it took {(self.measured_s[i] - self.compute_s[i]) * 1e3:.1f} ms more than its compute "
                             f"floor, and copying W once at the measured copy bandwidth takes "
                             f"{2 * w_bytes / self.copy_bytes_per_s * 1e3:.1f} ms (the BLAS packs W before multiplying)")
                lines.append(text)
        return "; ".join(lines)


def batch_sweep(batches: Sequence[int] | None = None, d_model: int | None = None, dtype: str | None = None,
                flops_per_s: float | None = None, bytes_per_s: float | None = None,
                repeats: int | None = None, progress: bool = True, be: Backend | None = None,
                d_out: int | None = None, one_thread: bool | None = None,
                formulation: str = "auto") -> BatchSweep:
    """Time ``Y = X @ W`` with X ``(B, d)`` and W ``(d, n)`` for each B, beside the roofline.

    ``n = d_out``, default ``d`` (a square weight). The prediction is
    ``max(2 B d n / F, (d n + B (d + n)) b / W)``: every weight read once, X read
    and Y written once (b bytes per element).

    The ceilings are measured the way the kernel uses the machine, in the same
    rounds as the kernel (:class:`CeilingProbe`): ``W`` is the best read-only stream
    (the weights, which dominate the bytes, are only read; a copy's rate counts a
    write beside every read), and ``F`` the better of the probe's square product and
    the best rate the sweep's own products reached (in practice its largest batch,
    the GEMM's large-batch rate for this very shape; that batch then sits at 1.00 of
    its prediction by construction, and the other batches are the test). ``F`` and ``W`` default
    to this machine's ceilings sampled between the sweep's rounds
    (:class:`CeilingProbe`), so kernel and ceilings see the same load. The batches
    are timed round-robin, ``repeats`` rounds (default 3 on a CPU, 10 on a GPU)
    after one warm-up each, and each batch reports its best, as each ceiling does.
    Shows its progress on one line when ``progress`` is true. ``one_thread`` (default:
    true on a CPU) runs the sweep and its ceilings on one BLAS thread
    (:class:`one_blas_thread`): slower, but a second program on a 2-core machine then
    slows the kernel and its ceilings alike instead of stalling one of two BLAS threads.

    ``formulation``: ``"plain"`` times ``X @ W`` at every batch; ``"auto"`` (the default)
    does so on a GPU and, on a CPU, for each batch that some block of
    :class:`BlockedWeight` fits (:meth:`BlockedWeight.blocks_for`: up to 64 rows at
    the default sizes) first times the plain product against those block layouts and
    keeps the fastest (the table names the one used), so that the few-row products read
    ``W`` once instead of paying the BLAS's packing; larger batches stay plain.

    Raises:
        ValueError: a batch < 1, d_model or d_out < 1, an unknown dtype or formulation.
    """
    be = be or backend()
    d0, dt0, b0 = default_sweep_sizes(be)
    d = int(d_model or d0)
    n = int(d if d_out is None else d_out)
    dtype = dtype or dt0
    if dtype not in ("fp32", "fp16"):
        raise ValueError(f"dtype must be 'fp32' or 'fp16', got {dtype!r}")
    if formulation not in ("auto", "plain"):
        raise ValueError(f"formulation must be 'auto' or 'plain', got {formulation!r}")
    batches = np.asarray(list(batches if batches is not None else b0), dtype=np.int64)
    if d < 1 or n < 1 or batches.size == 0 or (batches < 1).any():
        raise ValueError(f"need d_model >= 1, d_out >= 1 and batches >= 1, got d_model={d}, d_out={n}, "
                         f"batches={batches.tolist()}")
    # the probe's square product is small on a CPU: F is the better of it and the sweep's own best rate
    probe = (CeilingProbe((dtype,), be=be, matmul_n=None if be.is_gpu else 1024)
             if flops_per_s is None or bytes_per_s is None else None)
    repeats = repeats or (10 if be.is_gpu else 3)
    b = 4.0 if dtype == "fp32" else 2.0
    W = _random(be, (d, n), dtype, 3)
    if one_thread is None:
        one_thread = not be.is_gpu
    blocked = BlockedWeight(W, be) if formulation == "auto" and not be.is_gpu else None
    fns, forms = {}, []
    if progress:
        print(f"  batch sweep on {be.name}: {len(batches)} batches x {repeats} rounds ...", end="",
              file=sys.stdout, flush=True)
    with one_blas_thread(one_thread and not be.is_gpu):
        for B in batches:
            X = _random(be, (int(B), d), dtype, 4)
            Y = be.xp.empty((int(B), n), dtype=W.dtype)
            label, fn = "plain", (lambda X=X, Y=Y: be.xp.matmul(X, W, out=Y))
            if blocked is not None and blocked.blocks_for(int(B)):
                label, fn = blocked.plan(X)
            fns[int(B)] = fn
            forms.append(label)
        timings = time_interleaved(fns, rounds=repeats, warmup=1, probe=probe, be=be, evict=True)
    if progress:
        print(f"\r  batch sweep on {be.name}: {len(batches)} batches done." + " " * 20, file=sys.stdout, flush=True)
    measured = np.array([timings[int(B)].min_s for B in batches])
    if probe is not None:
        own = float(np.max(2.0 * batches * d * n / measured))   # the best rate any batch of this product reached
        flops_per_s = flops_per_s or max(probe.flops_per_s(dtype), own)
        bytes_per_s = bytes_per_s or probe.read_bytes_per_s
    compute = 2.0 * batches * d * n / flops_per_s
    memory = (d * n + batches * (d + n)) * b / bytes_per_s
    return BatchSweep(batches.astype(float), measured, compute, memory, d, dtype,
                      float(flops_per_s), float(bytes_per_s), be.device_name, None if d_out is None else n,
                      tuple(forms), None if probe is None else probe.copy_bytes_per_s,
                      None if probe is None else probe.read_samples_bytes_per_s)
