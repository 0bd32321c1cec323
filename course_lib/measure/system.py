"""What the operating system says about this machine: CPU name, caches, BLAS and its threads.

Nothing here is timed; ``cpu.py`` measures. Every figure records where it came from, because
the sources disagree more often than one would hope (in a VM, glibc may report the host's
whole L3 while the kernel reports the slice the VM sees), and in a sandbox some are missing.

>>> caches = cache_sizes()
>>> caches.size("L1") is None or caches.size("L1") >= 8 * 1024
True
>>> cache_level_of(16 * 1024)            # a 16 KiB working set fits any L1 data cache
'L1'
"""
from __future__ import annotations

import ctypes
import math
import os
import platform
import re
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..formatting import GiB, KiB, MiB, fmt_binary_bytes  # noqa: F401  (KiB, MiB, GiB: imported from here)

LEVELS = ("L1", "L2", "L3", "DRAM")

# Used only when the OS reports nothing, and only by cache_level_of (never to label a measured
# plateau): the smallest L1 data cache and the largest last-level cache one core of a current
# laptop, server or cloud CPU sees. A working set <= 16 KiB is in L1 and one >= 1 GiB is in
# DRAM everywhere; between those the answer depends on the CPU.
SMALLEST_L1 = 32 * 1024
LARGEST_LLC = 512 * 1024**2


# ---- caches -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cache:
    level: str            # "L1", "L2", "L3"
    size: int             # bytes, one instance
    shared_by: int        # logical CPUs sharing one instance (1 = private to a core)


@dataclass(frozen=True)
class CacheInfo:
    """Data caches as the OS reports them, and where that report came from."""

    caches: tuple = ()
    source: str = "not reported by the OS"

    def size(self, level: str):
        """Bytes of one instance of `level` ("L1", "L2", "L3"), or None if not reported."""
        c = self.get(level)
        return None if c is None else c.size

    def get(self, level: str):
        return next((c for c in self.caches if c.level == level), None)

    def per_thread(self, level: str, threads: int):
        """The share of `level` one of `threads` threads can use: a private cache whole, a
        shared one divided among the threads that share it (assuming threads spread out)."""
        c = self.get(level)
        if c is None:
            return None
        return c.size / max(1, min(threads, c.shared_by))

    def describe(self) -> str:
        if not self.caches:
            return f"caches: {self.source}"
        parts = [f"{c.level} {fmt_binary_bytes(c.size)}" + (" per core" if c.shared_by <= 1 else
                                                     f" shared by {c.shared_by} CPUs")
                 for c in self.caches]
        return "caches: " + ", ".join(parts) + f" (from {self.source})"


def _sysfs_caches() -> CacheInfo | None:
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    if not base.is_dir():
        return None
    found = {}
    for d in sorted(base.glob("index*")):
        try:
            kind = (d / "type").read_text().strip()
            level = int((d / "level").read_text())
            size = _parse_size((d / "size").read_text())
            shared = _count_cpus((d / "shared_cpu_list").read_text())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and 1 <= level <= 3 and size:
            found[f"L{level}"] = Cache(f"L{level}", size, shared)
    if not found:
        return None
    return CacheInfo(tuple(found[k] for k in sorted(found)), "Linux sysfs, /sys/devices/system/cpu")


def _glibc_caches() -> CacheInfo | None:
    """glibc's sysconf (cpuid on x86): works where /sys is not mounted (sandboxes)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.sysconf.restype = ctypes.c_long
    except (OSError, AttributeError):
        return None
    # _SC_LEVEL1_DCACHE_SIZE, _SC_LEVEL2_CACHE_SIZE, _SC_LEVEL3_CACHE_SIZE in glibc's confname.h
    codes = {"L1": 188, "L2": 191, "L3": 194}
    found = []
    for level, code in codes.items():
        v = libc.sysconf(code)
        if v and v > 0:
            found.append(Cache(level, int(v), 1 if level != "L3" else os.cpu_count() or 1))
    if not found:
        return None
    return CacheInfo(tuple(found), "glibc sysconf (cpuid; in a VM it may report the host's L3)")


def _macos_caches() -> CacheInfo | None:
    if sys.platform != "darwin":
        return None
    found = []
    for level, key in (("L1", "hw.l1dcachesize"), ("L2", "hw.l2cachesize"), ("L3", "hw.l3cachesize")):
        try:
            out = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, timeout=2)
            v = int(out.stdout.strip())
        except (OSError, ValueError, subprocess.SubprocessError):
            continue
        if v > 0:
            # Apple's L2 is shared by a cluster of cores; L1 is per core
            found.append(Cache(level, v, 1 if level == "L1" else os.cpu_count() or 1))
    return CacheInfo(tuple(found), "macOS sysctl hw.*cachesize") if found else None


def cache_sizes() -> CacheInfo:
    """The data caches of this machine, from the first source that answers: Linux sysfs,
    glibc's sysconf, macOS sysctl; an empty CacheInfo where none does.

    >>> isinstance(cache_sizes().describe(), str)
    True
    """
    for probe in (_sysfs_caches, _glibc_caches, _macos_caches):
        info = probe()
        if info is not None:
            return info
    return CacheInfo()


def cache_level_of(nbytes: float, caches: CacheInfo | None = None) -> str:
    """The level of the memory hierarchy a warm working set of `nbytes` lives in, for one core:
    the smallest cache that holds it, else "DRAM".

    Sizes come from the OS (``cache_sizes()``). Where it reports nothing, the smallest L1 and
    the largest last-level cache of current CPUs are used, which settle 16 KiB (L1) and 1 GiB
    (DRAM) and nothing in between ("L2/L3"). A reported size above ``LARGEST_LLC`` counts as
    ``LARGEST_LLC``: no core sees more last-level cache than that, and bigger reports are totals
    over several cache instances (glibc on some many-chiplet CPUs).

    >>> cache_level_of(16 * 1024), cache_level_of(2**30)
    ('L1', 'DRAM')
    """
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or not nbytes > 0:
        raise ValueError(f"nbytes must be a positive number of bytes, got {nbytes!r}.")
    caches = cache_sizes() if caches is None else caches
    levels = [(c.level, min(c.size, LARGEST_LLC)) for c in caches.caches]
    if not levels:
        if nbytes <= SMALLEST_L1:
            return "L1"
        return "DRAM" if nbytes > LARGEST_LLC else "L2/L3"
    for level, size in levels:
        if nbytes <= size:
            return level
    return "DRAM"


def _parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", text)
    if not m:
        raise ValueError(text)
    return int(m.group(1)) * {"": 1, "K": KiB, "M": MiB, "G": GiB}[m.group(2)]


def _count_cpus(cpu_list: str) -> int:
    n = 0
    for part in cpu_list.strip().split(","):
        if "-" in part:
            a, b = part.split("-")
            n += int(b) - int(a) + 1
        elif part:
            n += 1
    return max(n, 1)


# ---- CPU, memory, BLAS ----------------------------------------------------------------------
def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo``, macOS sysctl, or ``platform.processor()``)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    if sys.platform == "darwin":
        try:
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True,
                                 text=True, timeout=2).stdout.strip()
            if out:
                return out
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown CPU"


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask, not the whole host)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def cpu_quota() -> float | None:
    """The container's CPU limit (cgroup v2 ``cpu.max`` or v1 CFS quota) in CPUs, or None.

    JupyterHub and Binder limit CPU this way: the process still *sees* every core of the
    host, so a BLAS that starts one thread per visible core oversubscribes the quota."""
    try:
        text = Path("/sys/fs/cgroup/cpu.max").read_text().split()
        if text and text[0] != "max":
            return int(text[0]) / int(text[1])
    except (OSError, ValueError, IndexError):
        pass
    try:
        quota = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").read_text())
        period = int(Path("/sys/fs/cgroup/cpu/cpu.cfs_period_us").read_text())
        if quota > 0 and period > 0:
            return quota / period
    except (OSError, ValueError):
        pass
    return None


def physical_memory() -> float | None:
    """Bytes of RAM (``sysconf``), or None where the OS does not say."""
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _read_int(path: str):
    try:
        text = Path(path).read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _mem_available():
    """(bytes, source) of memory the OS could give this process without swapping."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return float(line.split()[1]) * 1024, "MemAvailable in /proc/meminfo"
    except (OSError, ValueError, IndexError):
        pass
    total = physical_memory()
    if total:
        # no MemAvailable (macOS, old kernels): assume a quarter of the RAM is free
        return total / 4, "a quarter of the physical memory (the OS reports no available memory)"
    return None, ""


def _cgroup_headroom():
    """(bytes, source) left under a container's memory limit (cgroup v2, then v1), or (None, '')."""
    for limit_file, used_file in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                                  ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
                                   "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit, used = _read_int(limit_file), _read_int(used_file)
        if limit is not None and used is not None and limit < 2**60:
            return float(max(0, limit - used)), f"the container's memory limit ({limit_file})"
    return None, ""


def _address_space_headroom():
    """(bytes, source) left under an address-space limit (``ulimit -v``, RLIMIT_AS), or (None, '')."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError, AttributeError):
        return None, ""
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return None, ""
    used = 0.0
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                used = float(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    # what the process maps later (BLAS buffers, the kernels' arrays) needs room too
    return max(0.0, soft - used - 512 * MiB), "the address-space limit (RLIMIT_AS) less what is mapped"


def memory_budget(fraction: float = 0.5) -> tuple[float, str]:
    """(bytes, how they were decided): how much the bandwidth sweep may allocate, `fraction` of
    the least of the available memory (``MemAvailable``), a container's memory limit and an
    address-space limit, less what this process already uses. A sweep that must exceed it to
    reach DRAM stops short and says so.

    >>> budget, why = memory_budget()
    >>> budget > 0 and ("free" in why or "reports neither" in why)
    True
    """
    found = [(b, src) for b, src in (_mem_available(), _cgroup_headroom(), _address_space_headroom())
             if b is not None]
    if not found:
        return float(GiB), "1 GiB (the OS reports neither available memory nor limits)"
    least, src = min(found)
    return fraction * least, f"{fraction:.0%} of {fmt_binary_bytes(least)} free ({src})"


@dataclass
class BlasInfo:
    """The BLAS numpy calls for matmul and dot, and how many threads it uses."""

    library: str
    version: str
    threads: int
    source: str
    notes: list = field(default_factory=list)

    def describe(self) -> str:
        return f"BLAS: {self.library} {self.version}, {self.threads} thread(s) (from {self.source})"


_THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def blas_info() -> BlasInfo:
    """numpy's BLAS: via threadpoolctl when it is installed, else numpy's build configuration
    and the thread variables of the environment.

    >>> blas_info().threads >= 1
    True
    """
    import numpy as np

    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        threadpool_info = None
    if threadpool_info is not None:
        with warnings.catch_warnings():  # e.g. "several OpenMP runtimes": not ours to report on stderr
            warnings.simplefilter("ignore")
            pools = [p for p in threadpool_info() if p.get("user_api") == "blas"]
        if pools:
            p = pools[0]
            arch = f", kernels for {p['architecture']}" if p.get("architecture") else ""
            return BlasInfo(p.get("internal_api", "blas"), f"{p.get('version') or ''}{arch}".strip(", "),
                            int(p.get("num_threads") or 1), "threadpoolctl")
    # numpy >= 1.25 describes its build; the thread count then follows OpenBLAS/MKL's rules:
    # the first thread variable set, else one thread per usable CPU
    library, version = "unknown BLAS", ""
    try:
        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        library, version = blas.get("name", library), blas.get("version", "")
    except (TypeError, AttributeError, KeyError):
        pass
    for var in _THREAD_VARS:
        v = os.environ.get(var, "").split(",")[0].strip()
        if v.isdigit() and int(v) > 0:
            return BlasInfo(library, version, int(v), f"numpy's build config and ${var}")
    return BlasInfo(library, version, usable_cpus(),
                    "numpy's build config; threads assumed = usable CPUs (install threadpoolctl to read them)")


def can_limit_blas_threads() -> bool:
    """Whether numpy's BLAS threads can be set at run time (threadpoolctl is installed)."""
    import importlib.util

    try:
        return importlib.util.find_spec("threadpoolctl") is not None
    except (ValueError, AttributeError):   # set to None in sys.modules: treated as missing
        return False


def limit_blas_threads(threads: int):
    """A context manager that runs numpy's BLAS with `threads` threads (threadpoolctl), or a
    no-op context if threadpoolctl is not installed."""
    import contextlib

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return threadpool_limits(limits=threads, user_api="blas")


THREAD_RULE = ("numpy's BLAS thread count, capped by the CPUs this process may run on and by a "
               "container's CPU quota; never changed by how busy the machine is, the same in quick "
               "and full mode")


def choose_threads(requested: int | None = None) -> tuple[int, BlasInfo, list[str]]:
    """(threads to measure with, BLAS info, notes): `requested`, else ``THREAD_RULE``: the BLAS's
    own thread count capped by the usable CPUs and a container CPU quota. Nothing timed enters
    it, so a busy moment cannot flip it (it would double or halve the peaks)."""
    info = blas_info()
    notes = []
    if requested is not None:
        if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
            raise ValueError(f"threads must be a positive integer, got {requested!r}.")
        return requested, info, notes
    threads = min(info.threads, usable_cpus())
    quota = cpu_quota()
    if quota is not None and quota < threads:
        threads = max(1, math.ceil(quota))
        notes.append(f"the container's CPU quota is {quota:g} CPUs while the BLAS would start "
                     f"{info.threads} threads: measured with {threads}")
    return threads, info, notes


def load_note(threads: int) -> str | None:
    """A note when other programs keep the CPUs busy (1-minute load average), or None. It only
    informs: the thread count never follows the load."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    if load < usable_cpus():
        return None
    return (f"the 1-minute load average is {load:.1f} on {usable_cpus()} usable CPU(s): other programs "
            f"are running, so these {threads}-thread figures may be lower and noisier than the machine "
            "can do (this_machine(threads=1) measures one core)")
