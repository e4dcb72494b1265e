"""Tests of llmmath.demos.machine: the machine description and the load meter, read from files written here
as Linux writes them (sysfs, /proc/cpuinfo, /proc/stat; formats from ``man 5 proc``), with the shares
derived by hand."""

import os
import time

import pytest

from llmmath import kernels, machine

# the 2-core EPYC VM this course is tested on, as its /proc/cpuinfo and sysfs describe it (trimmed)
CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
stepping\t: 1
flags\t\t: fpu sse4_2 avx fma avx2 hypervisor avx512f avx512dq avx512_bf16 vaes

processor\t: 1
model name\t: SOMETHING ELSE
"""
CACHES = (("index0", "1", "Data", "32K", "0"), ("index1", "1", "Instruction", "32K", "0"),
          ("index2", "2", "Unified", "1024K", "0"), ("index3", "3", "Unified", "32768K", "0-1"))


def _sysfs(root, caches=CACHES):
    for index, level, kind, size, shared in caches:
        d = root / index
        d.mkdir(parents=True)
        (d / "level").write_text(level + "\n")
        (d / "type").write_text(kind + "\n")
        (d / "size").write_text(size + "\n")
        (d / "shared_cpu_list").write_text(shared + "\n")
    return str(root)


def test_caches_read_by_level_in_binary_units(tmp_path):
    caches = machine.cpu_caches(_sysfs(tmp_path))
    assert [(c.label, c.size_bytes) for c in caches] == [("L1d", 32 * 1024), ("L1i", 32 * 1024),
                                                         ("L2", 2**20), ("L3", 32 * 2**20)]
    assert caches[-1].shared_cpus == "0-1"
    assert machine.cpu_caches(str(tmp_path / "absent")) == []           # no sysfs (macOS, Windows)


def test_caches_skip_zero_and_unreadable_sizes(tmp_path):
    # a VM that writes 0K for its L3 and garbage for its L2: both left out, the L1s kept
    root = _sysfs(tmp_path, (("index0", "1", "Data", "48K", "0"), ("index2", "2", "Unified", "lots", "0"),
                             ("index3", "3", "Unified", "0K", "0-7")))
    assert [(c.label, c.size_bytes) for c in machine.cpu_caches(root)] == [("L1d", 48 * 1024)]
    assert kernels._cpu_llc_bytes.__wrapped__(root) == 48 * 1024             # the largest readable one
    # a level whose size is missing is left out; one without level or type files keeps its size
    os.remove(os.path.join(root, "index0", "size"))
    (tmp_path / "index4").mkdir()
    (tmp_path / "index4" / "size").write_text("2048K\n")
    assert [(c.level, c.kind, c.size_bytes) for c in machine.cpu_caches(root)] == [(0, "Unified", 2 * 2**20)]


def test_cpu_identity_reads_the_first_cpu(tmp_path):
    path = tmp_path / "cpuinfo"
    path.write_text(CPUINFO)
    cpu = machine.cpu_identity(str(path))
    assert cpu["model"] == "AMD EPYC"                                 # the first processor's, not the second's
    assert (cpu["family"], cpu["model_number"], cpu["stepping"]) == ("25", "17", "1")
    assert cpu["isa"] == ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512_bf16"]     # in ISA_FLAGS' order
    assert cpu["hypervisor"] is True
    # an Arm core lists "Features" and no model name; no hypervisor flag
    path.write_text("processor\t: 0\nFeatures\t: fp asimd sve bf16 i8mm\nCPU implementer\t: 0x41\n"
                    "CPU part\t: 0xd4f\n")
    arm = machine.cpu_identity(str(path))
    assert arm["isa"] == ["asimd", "sve", "bf16", "i8mm"] and arm["hypervisor"] is False
    assert arm["model"] == "Arm CPU (implementer 0x41, part 0xd4f)"   # no model name: its implementer and part


STAT_BEFORE = "cpu  1000 10 300 5000 40 7 20 100 400 0\ncpu0 500 5 150 2500 20 3 10 50 200 0\nintr 1 2 3\n"
# over the interval, all cores: user +150, nice +0, system +25, idle +780, iowait +10, irq +5, softirq +10,
# steal +20, guest +100 (guest time is already inside user: counted once, in user)
STAT_AFTER = "cpu  1150 10 325 5780 50 12 30 120 500 0\ncpu0 575 5 165 2890 25 6 15 60 250 0\n"


def test_load_shares_by_hand(tmp_path):
    before, after = tmp_path / "a", tmp_path / "b"
    before.write_text(STAT_BEFORE)
    after.write_text(STAT_AFTER)
    j0, j1 = machine.read_cpu_jiffies(str(before)), machine.read_cpu_jiffies(str(after))
    assert j0["steal"] == 100 and j1["user"] == 1150                 # the all-CPU line, not cpu0's
    # total 150 + 25 + 780 + 10 + 5 + 10 + 20 = 1000 ticks; busy (user nice system irq softirq) 190;
    # this process 1.2 s at 100 ticks/s = 120 ticks: others 70 / 1000, steal 20 / 1000, own 120 / 1000
    s = machine.load_shares(j0, j1, own_cpu_s=1.2, ticks_per_s=100, wall_s=5.0)
    assert (s.others, s.steal, s.own, s.wall_s) == pytest.approx((0.07, 0.02, 0.12, 5.0))
    assert s.describe() == "other work 7% of the cores, hypervisor steal 2.0%, this process 12%"
    # the kernel counts per tick: own time a tick over the busy count clips others at 0, not below
    assert machine.load_shares(j0, j1, own_cpu_s=2.0, ticks_per_s=100).others == 0.0
    # iowait "may decrease" (man 5 proc): a fall of 30 counts as 0 where it counted +10, so 990 ticks in all
    fell = dict(j1, iowait=j0["iowait"] - 30)
    assert machine.load_shares(j0, fell, 1.2, 100).others == pytest.approx(70 / 990)


def test_load_shares_refuse_swapped_or_empty_intervals(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text(STAT_BEFORE)
    b.write_text(STAT_AFTER)
    j0, j1 = machine.read_cpu_jiffies(str(a)), machine.read_cpu_jiffies(str(b))
    with pytest.raises(ValueError, match="earlier snapshot first"):
        machine.load_shares(j1, j0, 0.0, 100)
    with pytest.raises(ValueError, match="longer than a clock tick"):
        machine.load_shares(j0, j0, 0.0, 100)
    with pytest.raises(ValueError, match="own_cpu_s must be >= 0"):
        machine.load_shares(j0, j1, -1.0, 100)
    with pytest.raises(ValueError, match="ticks_per_s must be > 0"):
        machine.load_shares(j0, j1, 0.0, 0)


def test_jiffies_of_old_kernels_and_other_systems(tmp_path):
    old = tmp_path / "stat"
    old.write_text("cpu  1 2 3 4 5 6 7\n")                           # before Linux 2.6.11: no steal column
    assert machine.read_cpu_jiffies(str(old))["steal"] == 0
    assert machine.read_cpu_jiffies(str(tmp_path / "absent")) is None
    old.write_text("cpu  1 2 three 4\n")
    assert machine.read_cpu_jiffies(str(old)) is None                # unreadable: no numbers made up
    meter = machine.LoadMeter(str(tmp_path / "absent"))
    with meter:
        pass
    assert meter.shares is None and "cannot be read" in meter.describe()


@pytest.mark.skipif(machine.read_cpu_jiffies() is None, reason="needs Linux's /proc/stat")
def test_load_meter_sees_this_process_spin():
    # half a second of pure Python on one core of this machine: this process's share is about one core's
    # worth (1 / cores), less if other work shares the cores (seen: a fifth of a core, with the suite and a
    # busy loop on the other core); a unit slip (seconds taken for ticks or the reverse) moves it 100x down or up
    with machine.LoadMeter() as meter:
        t_end = time.perf_counter() + 0.5
        while time.perf_counter() < t_end:
            pass
    s, n = meter.shares, os.cpu_count() or 1
    assert 0.02 / n < s.own <= 1.0 / n + 0.1
    assert 0.0 <= s.others <= 1.0 and 0.0 <= s.steal <= 1.0 and 0.5 <= s.wall_s < 5.0


def test_describe_names_the_machine(tmp_path):
    (tmp_path / "cpuinfo").write_text(CPUINFO)
    text = machine.describe(kernels._cpu_backend(), cpuinfo=str(tmp_path / "cpuinfo"),
                            cache_root=_sysfs(tmp_path / "cache"))
    assert "CPU: AMD EPYC (" in text and "family 25, model 17, stepping 1" in text
    assert "in a virtual machine" in text
    assert "vector ISA: sse4_2 avx avx2 fma avx512f avx512_bf16" in text
    assert "L1d 32 KiB, L1i 32 KiB, L2 1 MiB, L3 32 MiB (shared by CPUs 0-1)" in text
    assert "BLAS: " in text and "NumPy " in text
    bare = machine.describe(None, cpuinfo=str(tmp_path / "absent"), cache_root=str(tmp_path / "absent"))
    assert "caches: not reported here" in bare and "vector ISA" not in bare


@pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="needs Linux's /proc/meminfo")
def test_memory_is_what_the_kernel_reports():
    # sysconf's physical pages and /proc/meminfo's MemTotal are the same kernel count (totalram_pages), so they agree
    with open("/proc/meminfo") as f:
        mem_total_kib = next(int(line.split()[1]) for line in f if line.startswith("MemTotal:"))
    assert machine.memory_bytes() == mem_total_kib * 1024
    assert kernels._cpu_backend().memory_bytes == machine.memory_bytes()
