"""The empirical roofline of this CPU, with numpy: peaks, memory levels, kernels.

Three measurements, each timed over repeats after a warm-up. Interference from other
processes can only make a run slower, never faster, so the **ceilings** (peaks, level
bandwidths) take the fastest repeat -- what the machine showed it can do -- while each figure
also keeps its median and spread, and the **kernels** are placed at their median:

* **Peak FLOP/s**, fp64 and fp32: ``np.matmul`` of random n×n matrices through numpy's BLAS,
  on all its threads, n grown until one call lasts long enough to time well. The figure is the
  fastest of the repeats, which are taken in three bursts (before the sweep, between the
  sweep and the kernels, after the kernels) and one at a time between the kernels, so that
  one busy spell on a shared machine cannot slow them all.
* **Bandwidth of each memory level**: a sweep of working-set sizes through the streaming
  kernel ``acc += x`` (read x, read acc, write acc: 24 bytes per fp64 element and pass), run by
  every thread on arrays of its own. For cache-sized arrays one numpy call re-reads them R
  times (``np.add.reduce`` over a stride-0 view: no Python overhead per pass); larger ones
  loop over ``np.add(acc, x, out=acc)``. Each size's figure is its fastest repeat;
  ``plateaus.py`` turns the curve into L1/L2/L3/DRAM, each level the median over the sizes of
  its plateau (so one disturbed size does not move it; DRAM gets ``DRAM_POINTS`` = 3 sizes).
  The sweep goes past 4x the last cache, where DRAM's plateau starts, on any cache size, as
  far as a memory budget allows (half of what the OS says is available, a container's limit
  or an address-space limit); where that is not far enough the roofline's memory ceiling is
  the largest level reached, named as such. At L1 sizes numpy's loop, not the cache, sets the
  pace: a hand-written kernel (likwid-bench) streams L1 several times faster.
* **Kernels of known intensity** (``kernels.py``): dot, axpy, an elementwise add at three
  sizes, matmul at three sizes, timed as a student would run them.

The whole run takes a few seconds (``python -m course_lib.measure`` prints it). Under nbgrader
(``NBGRADER_EXECUTION`` set) or with ``quick=True`` it is shorter: fewer sizes and repeats.
"""
from __future__ import annotations

import datetime
import os
import threading
import time
from dataclasses import dataclass, replace

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import kernels as K
from .plateaus import DISTINCT, find_levels, zones
from .result import KernelRun, MeasuredHardware, SweepPoint
from ..formatting import fmt_binary_bytes
from .system import (LARGEST_LLC, THREAD_RULE, GiB, KiB, MiB, cache_level_of, cache_sizes, choose_threads,
                     cpu_name, cpu_quota, limit_blas_threads, load_note, memory_budget,
                     physical_memory, usable_cpus)
from .timing import Timing, time_batched, time_stable

BYTES_PER_PASS = 24          # acc += x in fp64: read x, read acc, write acc
SKEW = 72                    # elements (576 bytes) between the two arrays' 4 KiB alignments
WINDOW_MIN = 2**16           # elements (512 KiB of fp64) in one window of a "window" call
REDUCE_MIN_PASSES = 16       # below this, the zero-fill of acc by np.add.reduce is > 2% of the traffic


# sweep sizes planned inside the DRAM zone, DRAM_STEP apart: three, so that the plateau's median
# shrugs off one disturbed size (find_levels needs two)
DRAM_POINTS = 3
DRAM_STEP = 2 ** 0.25


@dataclass(frozen=True)
class Plan:
    """Sizes, repeats and time targets of one measurement."""

    quick: bool
    threads: int
    repeats: int
    sweep_target_s: float        # one timed sweep call
    per_octave: int              # sweep sizes per doubling
    min_size: int                # smallest working set per thread
    max_total: int               # largest working set, all threads together
    peak_target_s: float         # one timed matmul call at the peak size
    peak_min_n: int
    peak_max_n: int
    kernel_target_s: float
    vector_n: int                # elements per vector of the memory-bound kernels
    matmul_sizes: tuple
    budget_s: float              # past this, no extra rounds of repeats (a busy machine)
    warmup_s: float = 0.5        # small matmuls before anything is timed
    peak_every_s: float | None = None    # a peak sample between the kernels this often (None: none)
    dram_low: float | None = None    # per thread: where the DRAM zone starts (4x the last cache)
    memory_budget: float = float(GiB)    # bytes the sweep may allocate, all threads together
    budget_source: str = ""
    dram_reachable: bool = True
    note: str = ""               # why DRAM is out of reach, when it is

    def describe(self) -> str:
        return (f"{'quick' if self.quick else 'full'} mode: {self.warmup_s:g} s of warm-up, then {self.repeats} "
                f"timed repeats after 1 warm-up call; "
                f"sweep {fmt_binary_bytes(self.min_size)}..{fmt_binary_bytes(self.max_total / self.threads)} per thread, "
                f"{self.per_octave} size(s) per doubling; memory budget {fmt_binary_bytes(self.memory_budget)} "
                f"({self.budget_source})")


def want_quick(quick=None) -> bool:
    """quick=None means: quick when nbgrader runs the notebook (grades never depend on the
    measurement, so grading need not wait for a full one), or when $COURSE_LIB_MEASURE=quick."""
    if quick is not None:
        return bool(quick)
    forced = os.environ.get("COURSE_LIB_MEASURE", "").strip().lower()
    if forced in ("quick", "full"):
        return forced == "quick"
    return os.environ.get("NBGRADER_EXECUTION", "") in ("autograde", "validate")


def sweep_call_s(threads: int, quick: bool = False) -> float:
    """How long one timed call of the bandwidth sweep lasts: 4 ms per thread, at most 32 ms (2 ms
    per thread, at most 16 ms, in quick mode, which must fit its shorter time budget).

    Short, because on a busy machine the OS preempts a process every few ms, and a call that
    fits between preemptions measures the machine, not its other users. Long against what every
    call pays before its threads stream together: the barrier wakes the workers one after
    another (each needs the GIL to leave it), so the last starts a little after the first, and
    the longer the team the longer that start. Measured (issue 17), each arm alternating with
    the others: on a quiet 16-core VM, 16 ms calls read DRAM at 136 GB/s (spread 12% over 5
    runs), 32 ms at 141 (6%); on the 2-vCPU VM with 2 threads, 2 ms calls read L3 at 60.1 GB/s
    and DRAM at 31.8, 8 ms calls 65.3 and 33.5 (benchmarks/sweep_call_bench.py), and over 6 + 6
    whole measurements the spreads of L2, L3 and DRAM fell from 26%, 51% and 42% to 10% each, at
    2.7 s more per full run (benchmarks/results/2026-11-27-vm-2vcpu).

    >>> sweep_call_s(1), sweep_call_s(2), sweep_call_s(8), sweep_call_s(64)
    (0.004, 0.008, 0.032, 0.032)
    >>> sweep_call_s(1, quick=True), sweep_call_s(2, quick=True), sweep_call_s(16, quick=True)
    (0.002, 0.004, 0.016)
    """
    per_thread, cap = (0.002, 0.016) if quick else (0.004, 0.032)
    return min(cap, per_thread * threads)


def make_plan(quick: bool, threads: int, caches, budget=None) -> Plan:
    """The measurement's plan. The sweep reaches DRAM, ``DRAM_POINTS`` sizes past 4x the last
    cache (per thread), in quick and full mode alike, whatever the cache's size, as long as that
    fits `budget` = (bytes, source), default ``memory_budget()``; where it does not, the sweep
    stops at the budget and the plan says why DRAM is out of reach."""
    budget, budget_src = memory_budget() if budget is None else budget
    per_octave = 2 if quick else 3
    z = zones(caches, threads)
    dram_low = z["DRAM"][0] if "DRAM" in z else None
    note = ""
    if dram_low is not None:
        # the DRAM zone's points: dram_low, then DRAM_STEP apart
        need = threads * dram_low * DRAM_STEP ** (DRAM_POINTS - 1) * 1.01
        reachable = need <= budget
        max_total = need if reachable else budget
        if not reachable:
            note = (f"reaching DRAM needs working sets of {fmt_binary_bytes(need)} in all (4x the last cache per "
                    f"thread, {DRAM_POINTS} sizes), more than the memory budget of {fmt_binary_bytes(budget)} "
                    f"({budget_src})")
    else:
        # no cache sizes: the plateaus come from the data; 1 GiB is past any last-level cache a core sees
        max_total, reachable = min(float(GiB), budget), budget >= GiB
        if not reachable:
            note = f"the memory budget of {fmt_binary_bytes(budget)} ({budget_src}) is below 1 GiB"
    max_total = int(max(max_total, min(256 * MiB, budget)))
    # the memory-bound kernels: at least 2^23 elements, and more than the last cache (one
    # instance) in two arrays, so that they stream from DRAM; three arrays must fit the budget
    llc = min(max([c.size for c in caches.caches] or [0]), LARGEST_LLC)    # as cache_level_of reads it
    vector_n = 2**23
    while 16 * vector_n <= llc and 24 * 2 * vector_n <= budget:
        vector_n *= 2
    while 24 * vector_n > budget and vector_n > 2**20:
        vector_n //= 2
    return Plan(
        quick=quick, threads=threads,
        repeats=4 if quick else 7,
        sweep_target_s=sweep_call_s(threads, quick),
        per_octave=per_octave,
        # below ~11 KiB the per-pass overhead of the reduce kernel (a few ns) shows
        min_size=11 * KiB + 256,
        max_total=max_total,
        peak_target_s=0.015 if quick else 0.03,
        peak_min_n=512 if quick else 768,
        peak_max_n=2048 if quick else 4096,
        kernel_target_s=0.005 if quick else 0.01,
        vector_n=vector_n,
        matmul_sizes=(64, 256, 1024),
        budget_s=5.0 if quick else 15.0,
        # long enough for the clocks to ramp up after an idle spell: on the 2-vCPU VM, full
        # measurements after 20 s idle read fp64 peaks of 106-135 GFLOP/s after 0.03 s of
        # warm-up and 140-150 after 0.5 s (three of each, alternating)
        warmup_s=0.25 if quick else 0.5,
        # a shared VM's cores switch between a fast and a slow state every second or so (the
        # 2-vCPU VM of issue 17: back-to-back fp64 matmuls at ~141 or ~103 GFLOP/s, ~1 s in
        # each): peak samples spread over the kernels' seconds catch the fast one where three
        # short bursts alone can miss it. Not between the sweep's sizes: the BLAS threads spin
        # for a while after a matmul and took the CPU from the next sizes (L1 and L2 were then
        # not resolved in 4 runs of 5). Cost: one call per precision per interval.
        peak_every_s=0.3 if quick else 0.5,
        dram_low=dram_low, memory_budget=float(budget), budget_source=budget_src,
        dram_reachable=reachable, note=note,
    )


# ---- a team of threads, each streaming its own arrays ------------------------------------------
class _Team:
    """`threads` worker threads that run one job together: ``run(job)`` calls job(i) on worker i
    and returns when all are done. numpy releases the GIL inside its loops, so they run in
    parallel. With one thread the job runs in the calling thread."""

    def __init__(self, threads: int):
        self.threads = threads
        self._job, self._errors = None, []
        if threads > 1:
            self._start = threading.Barrier(threads + 1)
            self._done = threading.Barrier(threads + 1)
            self._workers = [threading.Thread(target=self._loop, args=(i,), daemon=True)
                             for i in range(threads)]
            for w in self._workers:
                w.start()

    def _loop(self, i):
        while True:
            self._start.wait()
            job = self._job
            if job is None:
                return
            try:
                job(i)
            except BaseException as e:  # re-raised in the caller
                self._errors.append(e)
            self._done.wait()

    def run(self, job):
        if self.threads == 1:
            job(0)
            return
        self._job = job
        self._start.wait()
        self._done.wait()
        if self._errors:
            raise self._errors.pop()

    def close(self):
        if self.threads > 1:
            self._job = None
            self._start.wait()
            for w in self._workers:
                w.join()


def _stream_job(buffers, n_max, n, how, start=0):
    """The job for one sweep point: worker i streams acc += x over its own arrays of n
    elements, as `how` (a ``_Stream``) says; a "window" job begins at window `start`."""
    state = [start] * len(buffers)

    def job(i):
        buf = buffers[i]
        # acc starts 576 bytes past a multiple of 4 KiB from x: x[i] and acc[i] at the same
        # offset modulo 4 KiB would make the core stall on false load/store dependencies
        x, acc = buf[:n], buf[n_max + SKEW:n_max + SKEW + n]
        if how.method == "reduce":
            rows = as_strided(x, (how.passes, n), (0, x.itemsize), writeable=False)
            np.add.reduce(rows, axis=0, out=acc)       # acc = 0 + x + x + ... (one C loop)
        elif how.method == "loop":
            for _ in range(how.passes):
                np.add(acc, x, out=acc)
        else:                                          # "window": the next slice, round robin
            lo = (state[i] % how.windows) * how.chunk
            state[i] += 1
            np.add(acc[lo:lo + how.chunk], x[lo:lo + how.chunk], out=acc[lo:lo + how.chunk])
    return job


@dataclass(frozen=True)
class _Stream:
    """How one timed call streams a working set of n elements per array and thread:
    "reduce" -- one numpy call re-reads both arrays `passes` times (cache-sized sets);
    "loop"   -- `passes` calls of np.add over the whole arrays;
    "window" -- one np.add over the next of `windows` slices of `chunk` elements, in turn, so a
                call stays short (a busy OS preempts long ones) while the data cycled through,
                and so evicted from the caches between visits, is the whole working set."""

    method: str
    passes: int
    chunk: int
    windows: int

    def bytes_per_thread(self, n: int) -> int:
        if self.method == "window":
            return BYTES_PER_PASS * self.chunk
        return BYTES_PER_PASS * n * self.passes + (8 * n if self.method == "reduce" else 0)

    @staticmethod
    def plan(n: int, target_s: float, rate: float) -> "_Stream":
        """The way to stream n elements in about target_s at `rate` bytes/s per thread."""
        elements = target_s * rate / BYTES_PER_PASS
        if elements >= REDUCE_MIN_PASSES * n:
            return _Stream("reduce", int(round(elements / n)), n, 1)
        if elements >= n / 2 or n < 4 * WINDOW_MIN:
            return _Stream("loop", max(1, int(round(elements / n))), n, 1)
        chunk = max(WINDOW_MIN, int(elements) // 512 * 512)
        return _Stream("window", 1, chunk, max(2, n // chunk))


def sweep_sizes(plan: Plan) -> list[int]:
    """Working sets per thread (bytes, multiples of 128: two arrays of whole cache lines): a
    geometric grid from ``min_size``, with ``DRAM_POINTS`` sizes ``DRAM_STEP`` apart from
    ``dram_low`` on when the plan reaches DRAM (the grid alone could step over the DRAM zone's
    start)."""
    hi = plan.max_total / plan.threads
    top = hi
    if plan.dram_reachable and plan.dram_low:
        top = min(hi, plan.dram_low)
    steps = int(np.floor(np.log2(top / plan.min_size) * plan.per_octave + 1e-9))
    sizes = list(plan.min_size * 2.0 ** (np.arange(steps + 1) / plan.per_octave))
    if plan.dram_reachable and plan.dram_low and plan.dram_low < hi:
        # a grid point just below the zone's start adds nothing: the zone's first point follows
        sizes = [s for s in sizes if s < plan.dram_low * 2 ** (-0.5 / plan.per_octave)]
        sizes += [plan.dram_low * DRAM_STEP ** k for k in range(DRAM_POINTS)]
    out = sorted({-(-int(s) // 128) * 128 for s in sizes if s <= hi * 1.0001})
    return [s for s in out if s * plan.threads <= plan.max_total]


def measure_sweep(plan: Plan, progress=None, deadline=None, sizes=None) -> list[SweepPoint]:
    """The bandwidth sweep over `sizes` (working sets per thread; default ``sweep_sizes(plan)``)."""
    sizes = sweep_sizes(plan) if sizes is None else sizes
    n_max = -(-sizes[-1] // 16 // 512) * 512    # whole 4 KiB pages, so SKEW sets the offset
    team = _Team(plan.threads)
    buffers = [None] * plan.threads

    def allocate(i):   # first touch by the worker that uses it (its NUMA node)
        buffers[i] = np.ones(2 * n_max + SKEW)
    team.run(allocate)
    points, bw_est = [], 20e9      # per thread, refined as the sweep goes
    try:
        for size in sizes:
            n = size // 16
            # calibrate: a warm-up call, planned with the last size's rate, measures this
            # size's rate; the timed calls are planned from it to last about sweep_target_s.
            # A window call calibrates on the middle window: the last size's timed calls
            # touched the first ones, which may still be in cache.
            how = _Stream.plan(n, plan.sweep_target_s, bw_est)
            job = _stream_job(buffers, n_max, n, how, start=how.windows // 2)
            t0 = time.perf_counter()
            team.run(job)
            bw_est = how.bytes_per_thread(n) / (time.perf_counter() - t0)
            how = _Stream.plan(n, plan.sweep_target_s, bw_est)
            job = _stream_job(buffers, n_max, n, how)
            if how.method == "window":
                # one full round with the timed calls' own windows; the timed calls then go on
                # round robin, each on a window last touched a whole working set ago (out of
                # cache). Timing the window just calibrated on would time a cache.
                for _ in range(how.windows):
                    team.run(job)
            per_thread = how.bytes_per_thread(n)
            t = time_stable(lambda: team.run(job), repeats=plan.repeats, warmup=0, deadline=deadline)
            bw = plan.threads * per_thread / t.best
            passes = how.passes if how.method != "window" else how.windows
            points.append(SweepPoint(size, plan.threads, bw, plan.threads * per_thread / t.median,
                                     t.spread, how.method, passes, len(t.seconds)))
            if progress:
                progress(f"  {fmt_binary_bytes(size):>8s} per thread: {bw / 1e9:7.1f} GB/s")
    finally:
        team.close()
        buffers.clear()                   # free the arrays now, before the kernels allocate theirs
    return points


# ---- peak FLOP/s and kernels --------------------------------------------------------------------
def _run(spec, timing, calls, threads, caches) -> KernelRun:
    return KernelRun(spec.key, _label(spec), spec.code, spec.precision, threads, spec.flops, spec.bytes,
                     timing, calls, spec.nbytes_live, cache_level_of(spec.nbytes_live, caches), spec.model)


def _label(spec) -> str:
    return spec.label if spec.precision == "fp64" else f"{spec.label} ({spec.precision})"


def decide_threads(requested=None):
    """(threads, BlasInfo, notes): `requested`, else ``system.THREAD_RULE`` (the BLAS's own count
    capped by the usable CPUs and a CPU quota). Nothing timed enters the choice: a rule that
    followed a momentary load would flip between runs, and each flip doubles or halves the
    peaks. A busy machine is reported in a note instead."""
    threads, blas, notes = choose_threads(requested)
    busy = load_note(threads)
    if busy:
        notes.append(busy)
    return threads, blas, notes


def warm_up(seconds: float) -> None:
    """Run small matmuls for `seconds`: BLAS threads start, clocks ramp up, before timing."""
    a = np.ones((256, 256))
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        a @ a


def peak_size(dtype, plan: Plan):
    """(spec, callable) of np.matmul at the n where one call lasts about plan.peak_target_s
    (n grown from plan.peak_min_n, capped at plan.peak_max_n). The floor keeps calls big: a
    small matmul synchronises its threads more often per FLOP, and on a busy machine every
    synchronisation can wait for a thread the OS has put aside."""
    n = plan.peak_min_n
    while True:
        spec = K.matmul_spec(n, dtype)
        fn = spec.make()
        fn()                                       # warm-up: BLAS buffers, page faults
        dt = float("inf")
        for _ in range(2):       # the faster of two calls: one interruption must not stop the growth
            t0 = time.perf_counter()
            fn()
            dt = min(dt, time.perf_counter() - t0)
        if dt >= plan.peak_target_s / 2 or n >= plan.peak_max_n:
            return spec, fn
        grow = (plan.peak_target_s / max(dt, 1e-6)) ** (1 / 3)    # time grows as n^3
        n = int(min(plan.peak_max_n, max(2 * n if grow > 2 else n + 128, n * grow) // 128 * 128))


class PeakRepeats:
    """The timed repeats of the peak matmuls (fp64 and fp32, sized by ``peak_size``), taken in
    bursts at different moments of the measurement: a peak is the best the machine attains, so
    its estimate is the fastest repeat, and a busy spell on a shared machine long enough to
    slow every repeat of one burst (a few hundred ms) must not also cover the others. Between
    the kernels, ``between`` adds one call of each every ``plan.peak_every_s``: a shared VM's
    cores dwell about a second in a slower state, long enough to cover all three bursts.
    Within a burst the precisions alternate (fp64, fp32, fp64, ...), so a disturbance hits
    both alike and their ratio stays honest."""

    def __init__(self, plan: Plan):
        self.plan = plan
        self.sized = {p: peak_size(dt, plan) for p, dt in (("fp64", np.float64), ("fp32", np.float32))}
        self.samples = {p: [] for p in self.sized}
        self.bursts = 0
        self.spread_out = 0          # samples taken by ``between``
        self._last = time.perf_counter()

    def _sample(self) -> None:
        for p, (spec, fn) in self.sized.items():
            t0 = time.perf_counter()
            fn()
            self.samples[p].append(time.perf_counter() - t0)
        self._last = time.perf_counter()

    def between(self, deadline=None) -> None:
        """One timed call of each precision, when ``plan.peak_every_s`` has passed since the
        last (called between the kernels, outside their timings); none past `deadline`."""
        every = self.plan.peak_every_s
        now = time.perf_counter()
        if every and now - self._last >= every and (deadline is None or now <= deadline):
            self._sample()
            self.spread_out += 1

    def burst(self, repeats: int, deadline=None) -> None:
        """`repeats` timed calls of each precision; past `deadline` (a perf_counter value) no
        more start once this burst has one and each precision has 3 in all."""
        self.bursts += 1
        for r in range(repeats):
            if (r >= 1 and len(self.samples["fp64"]) >= 3 and deadline is not None
                    and time.perf_counter() > deadline):
                break
            self._sample()

    def noisy(self) -> bool:
        """Whether the repeats so far disagree by more than 50% (worth another burst)."""
        return any(Timing(tuple(v)).spread > 0.5 for v in self.samples.values())

    def runs(self, caches) -> dict:
        """{precision: (KernelRun of every repeat, n)}."""
        out = {}
        for p, (spec, fn) in self.sized.items():
            timing = Timing(tuple(self.samples[p]))
            run = _run(spec, timing, 1, self.plan.threads, caches)
            n = round((spec.flops / 2) ** (1 / 3))
            out[p] = (KernelRun(f"peak_{p}", f"matmul, n={n} (peak {p})", run.code, run.precision, run.threads,
                                run.flops_si, run.bytes_si, timing, 1, run.working_set, run.level, spec.model), n)
        return out


def peak_bursts(repeats: int) -> tuple[int, int, int]:
    """How ``measure_cpu`` splits a peak's `repeats` between its three bursts (before the
    sweep, between the sweep and the kernels, after the kernels).

    >>> peak_bursts(7), peak_bursts(4)
    ((3, 2, 2), (2, 1, 1))
    """
    rest = repeats // 3
    return repeats - 2 * rest, rest, rest


def kernel_specs(plan: Plan) -> list:
    n = plan.vector_n
    specs = [K.dot_spec(n), K.axpy_blocked_spec(n), K.axpy_numpy_spec(n),
             K.add_spec(1024), K.add_spec(32768), K.add_spec(n)]
    specs += [K.matmul_spec(m) for m in plan.matmul_sizes]
    return specs


def measure_kernels(plan: Plan, caches, progress=None, deadline=None, between=None) -> dict:
    """{key: KernelRun} of ``kernel_specs``; `between` is called after each kernel, untimed."""
    runs = {}
    for spec in kernel_specs(plan):
        fn = spec.make()
        # a kernel on DRAM-sized arrays streams hundreds of MB per call: 3 repeats are enough
        # for its median, and more would double the measurement on a machine with a big cache
        repeats = 3 if spec.nbytes_live >= 64 * MiB else plan.repeats
        timing, calls = time_batched(fn, plan.kernel_target_s, repeats=repeats, deadline=deadline)
        threads = plan.threads if spec.threads == "BLAS" else 1
        runs[spec.key] = _run(spec, timing, calls, threads, caches)
        del fn
        if progress:
            progress("  " + runs[spec.key].describe())
        if between:
            between()
    return runs


def memory_ceiling(levels: dict, sizes, bws, plan: Plan) -> tuple[str, float, str]:
    """(level, bandwidth, source) of the roofline's memory ceiling: DRAM's plateau when the
    sweep resolved it; DRAM's zone (its median) when the sweep reached it without a clean
    plateau; else the deepest level the sweep did resolve, *named as that level* (DRAM is slower
    still: bounds for data in DRAM come out optimistic); else the largest working sets. Never
    a cache's figure called DRAM."""
    dram = levels["DRAM"]
    reached = [lv for name, lv in levels.items() if name != "DRAM" and lv.resolved]
    why = plan.note or dram.note
    # an unresolved DRAM zone no slower than the last cache is not trusted as DRAM
    cache_speed = (not dram.resolved and dram.points and reached
                   and dram.bandwidth * DISTINCT >= reached[-1].bandwidth)
    if dram.points and not cache_speed:
        what = ("the DRAM plateau of the sweep" if dram.resolved else
                f"the sweep's DRAM zone, which it reached without a clean plateau ({dram.note})")
        return "DRAM", dram.bandwidth, (
            f"measured: {what}, median over its {dram.points} working sets "
            f"({fmt_binary_bytes(dram.low)}..{fmt_binary_bytes(dram.high)} per thread) of each one's fastest repeat")
    if cache_speed:
        why = (f"its zone, without a clean plateau, ran as fast as {reached[-1].name} "
               f"({dram.bandwidth / 1e9:.1f} vs {reached[-1].bandwidth / 1e9:.1f} GB/s)")
    if reached:
        lv = reached[-1]
        return lv.name, lv.bandwidth, (
            f"measured: {lv.name}, the largest level the sweep resolved (median of {lv.points} working "
            f"sets, {lv.sizes_text} per thread), since DRAM was not reached ({why}); main memory is "
            f"slower, so bounds for data in DRAM are optimistic")
    label = f"largest working set ({fmt_binary_bytes(sizes[-1])} per thread)"
    return label, float(np.median(bws[-2:])), (
        f"measured: the bandwidth at the sweep's largest working sets ({fmt_binary_bytes(sizes[-2])}, "
        f"{fmt_binary_bytes(sizes[-1])} per thread); no level was resolved and DRAM was not reached ({why})")


# ---- all of it ----------------------------------------------------------------------------------
def measure_cpu(quick=None, threads=None, progress=None) -> MeasuredHardware:
    """Measure this machine's CPU roofline. `progress`: a callable given one line per step
    (e.g. ``print``), or None.

    quick   -- fewer sizes and repeats (default: quick under nbgrader, see ``want_quick``)
    threads -- threads for BLAS and the bandwidth sweep (default: ``system.THREAD_RULE``)
    """
    t_start = time.perf_counter()
    quick = want_quick(quick)
    requested_threads = threads
    threads, blas, thread_notes = decide_threads(threads)
    caches = cache_sizes()
    plan = make_plan(quick, threads, caches)
    say = progress or (lambda line: None)
    say(f"measuring with {threads} thread(s), {plan.describe()}")

    with limit_blas_threads(threads):
        sweep, runs, peak_reps = _timed_runs(plan, caches, t_start, progress, say)
    peak64, n64, n32 = runs["peak_fp64"], _n(runs["peak_fp64"]), _n(runs["peak_fp32"])

    sizes = np.array([p.size for p in sweep], dtype=float)
    bws = np.array([p.bandwidth for p in sweep])
    levels, notes = find_levels(sizes, bws, caches, threads, min_points=2)
    rechecked = []
    if time.perf_counter() <= t_start + plan.budget_s:
        with limit_blas_threads(threads):
            sweep, levels, notes, rechecked = recheck_zones(plan, caches, sweep, levels, say,
                                                            deadline=t_start + plan.budget_s)
        sizes = np.array([p.size for p in sweep], dtype=float)
        bws = np.array([p.bandwidth for p in sweep])
    levels = {lv.name: lv for lv in levels}
    if plan.note:
        notes.append(f"DRAM was not reached: {plan.note}")

    # Peak: the fastest repeat among the matmuls of that precision (the peak-size run usually).
    peaks, peak_from = {}, {}
    for p in ("fp64", "fp32"):
        cands = [r for r in runs.values() if r.precision == p and r.code.startswith("np.matmul")]
        best = max(cands, key=lambda r: r.best_flops)
        peaks[p], peak_from[p] = best.best_flops, best
    memory_level, bandwidth, bw_src = memory_ceiling(levels, sizes, bws, plan)
    bw_src += (f"; kernel acc += x (numpy, fp64, 24 bytes per element and pass), {threads} thread(s), "
               f"at least 3 timed calls ({plan.repeats} on a quiet machine) after a warm-up")
    today = datetime.date.today().isoformat()
    sources = {
        "peak_flops": (f"measured {today}: np.matmul of random n x n matrices through {blas.library} "
                       f"{blas.version} on {threads} thread(s), 2n^3 FLOPs per call, the fastest of "
                       f"{len(peak64.timing.seconds)} timed calls after a warm-up, "
                       + (f"{len(peak64.timing.seconds) - peak_reps.spread_out} of them " if peak_reps.spread_out else "")
                       + f"taken in {peak_reps.bursts} bursts (before the bandwidth sweep, after it, and after the "
                       f"kernels: one busy spell on the machine cannot slow them all"
                       + ("; the last an extra one, as the repeats disagreed by more than 50%"
                          if peak_reps.bursts > 3 else "") + ")"
                       + (f" and the other {peak_reps.spread_out} spread out, one every {plan.peak_every_s:g} s between the "
                          "kernels (a shared machine's cores switch between faster and slower spells)"
                          if peak_reps.spread_out else "")
                       + ", best over the sizes timed: "
                       + ", ".join(f"{p} at n={_n(peak_from[p])}" for p in peaks)),
        "memory_bandwidth": bw_src,
        "memory_capacity": "physical memory reported by the OS (sysconf)",
    }
    how = [
        f"CPU: {cpu_name()}; {usable_cpus()} usable CPU(s)"
        + (f", container quota {cpu_quota():g} CPUs" if cpu_quota() else ""),
        blas.describe() + f"; measured with {threads} thread(s); numpy's elementwise ufuncs use 1",
        f"threads: {threads} ({'asked for' if requested_threads is not None else 'rule: ' + THREAD_RULE})",
        caches.describe(),
        plan.describe() + "; dtype fp64 (peaks also fp32)",
    ]
    if quick:
        how.append("quick mode: " + ("nbgrader is running this notebook; grades never depend on "
                                     "these timings" if os.environ.get("NBGRADER_EXECUTION") else
                                     "fewer sizes and repeats than the full measurement"))
    how += [f"note: {n}" for n in blas.notes + thread_notes]
    # "L1", "L1 and L2", "L1, L2 and L3"
    timed_again = (", ".join(rechecked[:-1]) + " and " if rechecked[1:] else "") + "".join(rechecked[-1:])
    setup = {"threads": threads, "mode": "quick" if quick else "full", "how": how,
             "memory_level": memory_level, "vector_n": plan.vector_n,
             "sweep_desc": (f"sweep of acc += x over working sets, {threads} thread(s) each on its own "
                            "arrays; bandwidth counts 3 x 8 bytes per element and pass, at each size's "
                            "fastest repeat"
                            + (f"; the sizes of {timed_again} timed again at the end, each keeping its "
                               "faster pass" if rechecked else "")),
             "peak_desc": (f"np.matmul of random n x n matrices, {threads} BLAS thread(s), repeats in "
                           f"{peak_reps.bursts} bursts, before and after the sweep and after the kernels"
                           + (f", and one every {plan.peak_every_s:g} s between the kernels"
                              if peak_reps.spread_out else "")),
             "blas": blas, "cpu": cpu_name(), "plan": plan, "peak_sizes": {"fp64": n64, "fp32": n32}}
    capacity = physical_memory()
    name = f"This machine ({cpu_name()}, {threads} thread{'s' if threads > 1 else ''})"
    return MeasuredHardware(name, peaks, bandwidth, capacity, sources, levels=levels, notes=notes,
                            sweep=sweep, runs=runs, setup=setup, caches=caches,
                            wall_time_s=time.perf_counter() - t_start)


def _timed_runs(plan, caches, t_start, progress, say):
    """(sweep, {key: KernelRun} with peak_fp64/peak_fp32 first, PeakRepeats): every timed part of
    the measurement, in its order: a peak burst, the bandwidth sweep, a second peak burst, the
    kernels, a last peak burst (an extra one when the repeats disagree), each within its share
    of the plan's time budget."""
    t0 = time.perf_counter()
    say("peak FLOP/s (np.matmul), first burst...")
    warm_up(plan.warmup_s)
    # the peaks' repeats in three bursts: before the sweep, between the sweep and the
    # kernels, after the kernels (see PeakRepeats); soft deadlines: on a machine so busy
    # that every round is noisy, stop adding rounds
    before, between, after = peak_bursts(plan.repeats)
    peak_reps = PeakRepeats(plan)
    peak_reps.burst(before, deadline=t_start + 0.35 * plan.budget_s)
    say(f"  [{time.perf_counter() - t0:.1f} s]")
    t0 = time.perf_counter()
    say("bandwidth sweep (acc += x)...")
    sweep = measure_sweep(plan, progress, deadline=t_start + 0.7 * plan.budget_s)
    say(f"  [{time.perf_counter() - t0:.1f} s]")
    peak_reps.burst(between, deadline=t_start + 0.75 * plan.budget_s)
    t0 = time.perf_counter()
    say("kernels...")
    kernel_runs = measure_kernels(plan, caches, progress, deadline=t_start + 0.9 * plan.budget_s,
                                  between=lambda: peak_reps.between(deadline=t_start + 0.9 * plan.budget_s))
    say(f"  [{time.perf_counter() - t0:.1f} s]")
    t0 = time.perf_counter()
    say("peak FLOP/s, last burst...")
    peak_reps.burst(after, deadline=t_start + plan.budget_s)
    if peak_reps.noisy() and time.perf_counter() <= t_start + plan.budget_s:
        peak_reps.burst(plan.repeats, deadline=t_start + plan.budget_s)
    peaks_run = peak_reps.runs(caches)
    (peak64, n64), (peak32, n32) = peaks_run["fp64"], peaks_run["fp32"]
    say(f"  fp64 {peak64.best_flops / 1e9:.1f} GFLOP/s (n={n64}), "
        f"fp32 {peak32.best_flops / 1e9:.1f} GFLOP/s (n={n32}), the fastest of "
        f"{len(peak64.timing.seconds)} repeats ({peak_reps.bursts} bursts, {peak_reps.spread_out} spread out)"
        f"  [{time.perf_counter() - t0:.1f} s]")
    runs = {"peak_fp64": peak64, "peak_fp32": peak32}
    runs.update(kernel_runs)
    return sweep, runs, peak_reps


# zones timed in a second pass in every measurement: private caches, a few ms per size
RECHECKED = ("L1", "L2")


def recheck_zones(plan: Plan, caches, sweep: list, levels: list, say=print, deadline=None):
    """(sweep, levels, notes, zones timed again) after timing again, at the end of the
    measurement, the sizes of the L1 and L2 zones and of each cache zone where the bandwidth
    stepped down; each size keeps its faster pass.

    Why L1 and L2 always: a size's repeats follow one another within a few tens of ms and the
    zone's sizes within half a second, while a shared VM's cores switch between faster and
    slower spells every second or so; one pass reads the whole zone in whichever spell it fell
    (issue 17: the 2-vCPU VM's L2 plateau read 0.63-0.79x likwid-bench's daxpy, and the same
    sizes timed three times each, best kept, 0.83-1.06x). They are cheap to time again.

    Why the steps: ``plateaus`` reads a step down inside a cache's zone as the machine
    delivering less of that cache than the OS reports. A shared VM can also slow down for its
    host's sake partway through the sweep and stay slow to the zone's end: that looks the same
    in one pass. A step that was a slow moment is gone from the merged points unless the second
    pass hits one too, while a step that comes with the working set's size shows in both
    passes and stays.

    The L1 and L2 sizes take 3 timed calls each (a second look, not a second measurement), and
    only when they fit before `deadline` (a ``time.perf_counter()`` value); a stepped zone's
    sizes take the plan's repeats."""
    z = zones(caches, plan.threads)
    stepped = {lv.name for lv in levels if lv.step_at and lv.name in z}

    def sizes_of(names):
        return sorted({p.size for p in sweep for name in names if z[name][0] <= p.size <= z[name][1]})

    look = replace(plan, repeats=min(plan.repeats, 3))
    private = sizes_of([name for name in RECHECKED if name in z and name not in stepped])
    # per size: a calibration call and the timed calls, each about sweep_target_s, and one more to spare
    cost = len(private) * (look.repeats + 2) * plan.sweep_target_s
    if deadline is not None and time.perf_counter() + cost > deadline:
        private = []
    full = sizes_of(stepped)
    timed = [name for name in z if any(z[name][0] <= s <= z[name][1] for s in private + full)]
    if not timed:
        return sweep, levels, [], []
    say(f"the sizes of {', '.join(timed)} again"
        + (f" (the bandwidth stepped down inside {', '.join(sorted(stepped))})" if stepped else "") + "...")
    second = {p.size: p for p in (measure_sweep(look, sizes=private) if private else [])}
    second.update({p.size: p for p in (measure_sweep(plan, sizes=full) if full else [])})
    again = sorted(second)
    merged = [max(p, second[p.size], key=lambda v: v.bandwidth) if p.size in second else p for p in sweep]
    sizes = np.array([p.size for p in merged], dtype=float)
    new_levels, notes = find_levels(sizes, np.array([p.bandwidth for p in merged]), caches, plan.threads,
                                    min_points=2)
    by_name = {lv.name: lv for lv in new_levels}
    for lv in (lv for lv in levels if lv.name in stepped):
        held = by_name[lv.name].step_at
        notes.append(f"{lv.name}: the bandwidth stepped down at {fmt_binary_bytes(lv.step_at)} per thread in "
                     f"the sweep; the zone's {sum(1 for s in again if z[lv.name][0] <= s <= z[lv.name][1])} "
                     f"sizes timed again at the end, each keeping its faster pass: "
                     + (f"the step held (at {fmt_binary_bytes(held)}): it showed in both passes"
                        if held else "no step the second time: the slower sizes were a slower moment of the "
                        "machine, and the zone is read whole"))
    return merged, new_levels, notes, timed


def _n(run: KernelRun) -> int:
    # 2n^3 FLOPs
    return round((run.flops_si / 2) ** (1 / 3))
