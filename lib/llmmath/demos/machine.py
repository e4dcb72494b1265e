"""The machine a measurement ran on, and how busy it was while it ran.

A measured ratio is only as meaningful as the description of the machine beside
it: the batch sweep's knee sits near B = 7 on one core of the Zen 4 VM this course is
tested on (about 100 GFLOP/s against about 28 GB/s) and moves with any other machine's
ratio of the two, the caches decide which arrays count as "large", and the BLAS a
NumPy wheel ships picks its kernels by CPU (OpenBLAS runs its SkylakeX kernels on that
Zen 4). And a ratio taken while other work held a core, or while the hypervisor gave
the core to another guest ("steal"), is a measurement of that load as much as of the
kernel. This module reads both from the operating system; it measures nothing itself.

* :func:`describe`: the CPU (model, family and model numbers, vector ISA, cores, whether
  it runs under a hypervisor), its caches, memory, the BLAS and its kernel set, and the
  software versions; on a GPU backend the device first.
* :class:`LoadMeter`: over a block of code, the share of all cores' time that *other*
  processes used and the share the hypervisor stole (Linux ``/proc/stat``, whose
  counters are documented in ``man 5 proc``; elsewhere it says it could not measure).

Sources: Linux's sysfs cache description (``Documentation/ABI/testing/sysfs-devices-system-cpu``),
``man 5 proc`` for ``/proc/stat`` and ``/proc/cpuinfo``, and threadpoolctl's
``threadpool_info`` for the BLAS.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import time

from ..units import fmt_bytes_binary

__all__ = ["CacheLevel", "cpu_caches", "cpu_identity", "memory_bytes", "read_cpu_jiffies", "load_shares", "LoadShares", "LoadMeter",
           "describe"]

SYSFS_CACHE = "/sys/devices/system/cpu/cpu0/cache"
PROC_STAT = "/proc/stat"
PROC_CPUINFO = "/proc/cpuinfo"

#: the ``cpu`` line's first eight counters of ``/proc/stat``, in order (``man 5 proc``); guest time is already
#: counted inside user time, so the two guest columns that follow are left out of every sum
JIFFY_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")

#: vector and matrix extensions worth naming beside a measured FLOP/s (x86 and Arm names as /proc/cpuinfo spells them)
ISA_FLAGS = ("sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_bf16",
             "amx_tile", "asimd", "sve", "sve2", "bf16", "i8mm")


@dataclasses.dataclass(frozen=True)
class CacheLevel:
    """One cache as sysfs describes it for cpu0: ``level`` (1, 2, 3 ...), ``kind`` ("Data", "Instruction",
    "Unified"), ``size_bytes``, and ``shared_cpus`` (the CPUs that share it, e.g. "0-1"; "" if not said)."""

    level: int
    kind: str
    size_bytes: int
    shared_cpus: str = ""

    @property
    def label(self) -> str:
        """``L1d``, ``L1i``, ``L2`` ...: the usual short name."""
        return f"L{self.level}" + {"Data": "d", "Instruction": "i"}.get(self.kind, "")


def _read(path: str) -> str | None:
    try:
        with open(path, errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _size_bytes(text: str) -> int:
    """sysfs's ``32768K`` (K, M, G are powers of 1,024) -> bytes.

    Raises:
        ValueError: text that is not a whole number with an optional K, M or G.
    """
    text = text.strip().upper()
    mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(text[-1:], 1)
    return int(text.rstrip("KMG")) * mult


def cpu_caches(root: str = SYSFS_CACHE) -> list[CacheLevel]:
    """cpu0's caches from Linux sysfs (``root/index*/{level,type,size,shared_cpu_list}``), by level.

    An entry whose size cannot be read, or reads as zero (some virtual machines
    write ``0K``), is left out; a missing ``level`` or ``type`` leaves 0 or "Unified".
    Returns ``[]`` where there is no sysfs (macOS, Windows, some containers).
    """
    try:
        entries = sorted(e for e in os.listdir(root) if e.startswith("index"))
    except OSError:
        return []
    caches = []
    for entry in entries:                          # one unreadable level must not hide the others
        size = _read(os.path.join(root, entry, "size"))
        try:
            size_bytes = _size_bytes(size) if size else 0
        except ValueError:
            continue
        if size_bytes <= 0:
            continue
        level = _read(os.path.join(root, entry, "level"))
        caches.append(CacheLevel(int(level) if level and level.isdigit() else 0,
                                 _read(os.path.join(root, entry, "type")) or "Unified", size_bytes,
                                 _read(os.path.join(root, entry, "shared_cpu_list")) or ""))
    return sorted(caches, key=lambda c: (c.level, c.kind))


def cpu_identity(path: str = PROC_CPUINFO) -> dict:
    """The first CPU of ``/proc/cpuinfo``: ``model`` (its model name; on Arm, which has none, its implementer
    and part numbers; else ``platform.processor()``),
    ``family``/``model_number``/``stepping`` (x86; "" elsewhere), ``isa`` (the :data:`ISA_FLAGS` it lists, in
    that order) and ``hypervisor`` (True when the CPU reports running under one: the x86 ``hypervisor`` flag)."""
    fields: dict[str, str] = {}
    text = _read(path) or ""
    for line in text.split("\n\n", 1)[0].splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    arm = (f"Arm CPU (implementer {fields['CPU implementer']}, part {fields.get('CPU part', '?')})"
           if "CPU implementer" in fields else "")
    return {"model": fields.get("model name") or arm or platform.processor() or platform.machine() or "CPU",
            "family": fields.get("cpu family", ""), "model_number": fields.get("model", ""),
            "stepping": fields.get("stepping", ""), "isa": [f for f in ISA_FLAGS if f in flags],
            "hypervisor": "hypervisor" in flags}


def memory_bytes() -> float:
    """This machine's physical memory, bytes (POSIX ``sysconf``: page size x physical pages); 0 where not said."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        return 0.0


def read_cpu_jiffies(path: str = PROC_STAT) -> dict | None:
    """The all-CPU counters of ``/proc/stat`` (:data:`JIFFY_FIELDS`, in clock ticks since boot), or ``None``
    where the file is missing or has no readable ``cpu`` line (not Linux). Older kernels without a steal column
    read 0."""
    text = _read(path)
    if not text:
        return None
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            try:
                values = [int(v) for v in parts[1:1 + len(JIFFY_FIELDS)]]
            except ValueError:
                return None
            values += [0] * (len(JIFFY_FIELDS) - len(values))
            return dict(zip(JIFFY_FIELDS, values))
    return None


@dataclasses.dataclass(frozen=True)
class LoadShares:
    """Shares of all cores' time over an interval (each 0..1): ``others`` busy with other work (user, nice,
    system, irq and softirq time less this process's own CPU time: other processes, kernel threads, interrupts,
    and this process's child processes), ``steal`` taken by the hypervisor for other guests, and ``own`` used
    by this process's threads; ``wall_s`` the interval's length. Averages over the interval: a burst shorter
    than it shows only in proportion."""

    others: float
    steal: float
    own: float
    wall_s: float

    def describe(self) -> str:
        """One line, e.g. ``other work 3% of the cores, hypervisor steal 0.4%, this process 49%``."""
        return (f"other work {self.others:.0%} of the cores, hypervisor steal {self.steal:.1%}, "
                f"this process {self.own:.0%}")


def load_shares(before: dict, after: dict, own_cpu_s: float, ticks_per_s: float, wall_s: float = 0.0) -> LoadShares:
    """Load shares between two :func:`read_cpu_jiffies` snapshots (dicts with every key of :data:`JIFFY_FIELDS`).

    ``own_cpu_s``: this process's user + system CPU seconds over the same interval (all its threads);
    ``ticks_per_s``: the kernel's clock tick (``os.sysconf("SC_CLK_TCK")``, 100 on Linux). The kernel samples
    its counters per tick, so a share can be off by a tick or two: ``others`` is clipped at 0. The idle and
    iowait counters may go backwards by a little (``man 5 proc``: iowait "may decrease"); their changes are
    floored at 0.

    Raises:
        ValueError: a busy or steal counter that went backwards (the snapshots are swapped), counters that
            did not move (an interval shorter than a tick), a negative ``own_cpu_s`` or a ``ticks_per_s`` <= 0.
    """
    if not ticks_per_s > 0:
        raise ValueError(f"ticks_per_s must be > 0, got {ticks_per_s!r}")
    if own_cpu_s < 0:
        raise ValueError(f"own_cpu_s must be >= 0, got {own_cpu_s!r}")
    d = {k: after[k] - before[k] for k in JIFFY_FIELDS}
    if min(v for k, v in d.items() if k not in ("idle", "iowait")) < 0:
        raise ValueError(f"the busy and steal counters must not go backwards (got a change of {d}): "
                         "pass the earlier snapshot first")
    d["idle"], d["iowait"] = max(0, d["idle"]), max(0, d["iowait"])
    total = sum(d.values())
    if total <= 0:
        raise ValueError("the counters must grow from before to after: measure over an interval longer than a "
                         "clock tick")
    busy = d["user"] + d["nice"] + d["system"] + d["irq"] + d["softirq"]
    own = own_cpu_s * ticks_per_s
    return LoadShares(others=max(0.0, busy - own) / total, steal=d["steal"] / total, own=min(own, total) / total,
                      wall_s=float(wall_s))


def _own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


class LoadMeter:
    """``with LoadMeter() as m: ...`` then ``m.shares`` (:class:`LoadShares`, or ``None`` where ``/proc/stat``
    cannot be read) and ``m.describe()``: how busy the machine was with other work while the block ran.

    Why: a kernel timed beside a ceiling that was sampled in the same rounds is robust to
    steady load, but not to load that comes and goes; when a ratio leaves its band, this
    says whether other work or the hypervisor was taking the cores at the time (on average
    over the block).
    """

    def __init__(self, path: str = PROC_STAT):
        self.path = path
        self.shares: LoadShares | None = None
        self.why_not = "the block has not run yet"

    def __enter__(self):
        self._t0, self._own0, self._j0 = time.perf_counter(), _own_cpu_s(), read_cpu_jiffies(self.path)
        return self

    def __exit__(self, *exc):
        j1, own1, wall = read_cpu_jiffies(self.path), _own_cpu_s(), time.perf_counter() - self._t0
        self.shares = None
        if self._j0 is None or j1 is None:
            self.why_not = f"{self.path} cannot be read here"
            return False
        try:
            self.shares = load_shares(self._j0, j1, own1 - self._own0, os.sysconf("SC_CLK_TCK"), wall)
        except ValueError as e:      # shorter than a tick, or a counter that went backwards
            self.why_not = str(e)
        return False

    def describe(self) -> str:
        """:meth:`LoadShares.describe`, or why there is nothing to report."""
        if self.shares is None:
            return f"load not measured ({self.why_not})"
        return self.shares.describe()


def _blas_lines() -> list[str]:
    try:
        from threadpoolctl import threadpool_info
    except ImportError:          # pragma: no cover - a dependency of the course
        return ["BLAS: not reported (threadpoolctl is not installed)"]
    blas = [i for i in threadpool_info() if i.get("user_api") == "blas"]
    if not blas:
        return ["BLAS: none loaded yet"]
    return [f"BLAS: {i.get('internal_api', '?')} {i.get('version') or '?'} (kernels for "
            f"{i.get('architecture') or 'this CPU'}, {i.get('threading_layer') or '?'} threading, "
            f"{i.get('num_threads', '?')} threads by default)" for i in blas]


def blas_line() -> str:
    """The BLAS libraries this process loaded, with their versions and kernel sets, in one line (threadpoolctl)."""
    return "; ".join(_blas_lines())


def describe(be=None, cpuinfo: str = PROC_CPUINFO, cache_root: str = SYSFS_CACHE) -> str:
    """Several lines describing this machine, for the head of a committed result.

    ``be``: a :class:`llmmath.demos.kernels.Backend`; when it is a GPU the device, its memory and
    the CuPy and CUDA versions come first (the host CPU follows: it runs the Python).
    ``cpuinfo``, ``cache_root``: where to read the CPU and its caches (Linux's; tests pass files of their own).
    Never raises for a missing file: what cannot be read is said to be unknown.
    """
    import numpy as np

    lines = []
    if be is not None and be.is_gpu:
        xp = be.xp
        try:
            rt = xp.cuda.runtime
            v = lambda n: f"{n // 1000}.{n % 1000 // 10}"  # noqa: E731 - CUDA writes 12.4 as 12040
            cuda = f", CUDA runtime {v(rt.runtimeGetVersion())}, driver {v(rt.driverGetVersion())}"
        except Exception:  # noqa: BLE001 - a CuPy without these calls
            cuda = ""
        lines.append(f"GPU: {be.device_name}, {fmt_bytes_binary(be.memory_bytes)}; CuPy {xp.__version__}{cuda}")
    cpu = cpu_identity(cpuinfo)
    ids = ", ".join(f"{k} {cpu[key]}" for k, key in (("family", "family"), ("model", "model_number"),
                                                      ("stepping", "stepping")) if cpu[key])
    where = "in a virtual machine (the CPU reports a hypervisor)" if cpu["hypervisor"] else "no hypervisor reported"
    lines.append(f"CPU: {cpu['model']} ({platform.machine()}{', ' + ids if ids else ''}), {os.cpu_count()} logical "
                 f"CPUs, {where}")
    if cpu["isa"]:
        lines.append("vector ISA: " + " ".join(cpu["isa"]))
    caches = cpu_caches(cache_root)
    if caches:
        lines.append("caches seen by cpu0: " + ", ".join(
            f"{c.label} {fmt_bytes_binary(c.size_bytes)}" + (f" (shared by CPUs {c.shared_cpus})"
                                                       if c.shared_cpus and c.shared_cpus != "0" else "")
            for c in caches))
    else:
        lines.append("caches: not reported here (no Linux sysfs, or it gives no sizes)")
    if memory_bytes() > 0:
        lines.append(f"memory: {fmt_bytes_binary(memory_bytes())}")
    lines += _blas_lines()
    lines.append(f"software: Python {platform.python_version()}, NumPy {np.__version__}, "
                 f"{platform.system()} {platform.release()}")
    return "\n".join(lines)
