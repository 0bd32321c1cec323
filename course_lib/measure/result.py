"""What a measurement returns: a ``Hardware`` with its measured figures, and how it got them.

``MeasuredHardware`` is a ``Hardware``: ``solve``, ``plot_roofline`` and the explorers take it
like any zoo chip. Its peaks and its memory bandwidth are medians of timed runs, and each
source string says what was run, on how many threads, with which sizes. On top of a zoo chip
it carries the bandwidth of every level of the memory hierarchy, the sweep those came from,
and the kernels of known intensity it timed.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace

from ..hardware import Hardware
from ..roofline import COMPUTE_BOUND, MEMORY_BOUND
from ..formatting import fmt_binary_bytes, fmt_per_second, fmt_time
from ..units import Q_
from .system import cache_level_of
from .timing import Timing


#: a figure whose repeats' times differ by more than this fraction of their median is reported as
#: wide, with the likely cause (a shared machine); the spread itself is printed for every figure
WIDE_SPREAD = 0.2


@dataclass(frozen=True)
class SweepPoint:
    """One working-set size of the bandwidth sweep.

    >>> p = SweepPoint(size=65536, threads=2, bandwidth=2e11, median_bandwidth=1.8e11,
    ...                spread=0.1, method="reduce", passes=1000, repeats=5)
    >>> p.total                                   # bytes, both threads' arrays together
    131072
    """

    size: float              # working set per thread (bytes): the two arrays x and acc
    threads: int
    bandwidth: float         # B/s, all threads together, at the fastest repeat
    median_bandwidth: float  # B/s at the median repeat
    spread: float            # (max - min) / median of the repeats' times
    method: str              # "reduce" (one numpy call re-reads the arrays R times), "loop", "window"
    passes: int              # R: times each array is streamed per call (windows, for "window")
    repeats: int             # timed repeats (more when the first ones disagreed)

    @property
    def total(self) -> float:
        """Working set of all threads together (bytes)."""
        return self.size * self.threads


@dataclass(frozen=True)
class KernelRun:
    """One timed kernel: what it computes, what it moves, how fast it ran.

    Has ``flops_si``, ``bytes_si`` and ``latency_si`` (the median time), so
    ``plot_roofline(mine, workloads=[("dot", run)])`` places it on a roofline.

    >>> run = example().runs["dot"]
    >>> run.intensity, round(run.achieved_flops / 1e9, 2)      # FLOP/byte, GFLOP/s at the median
    (0.125, 2.5)
    """

    key: str
    name: str
    code: str
    precision: str
    threads: int
    flops_si: float
    bytes_si: float
    timing: Timing
    calls_per_repeat: int
    working_set: float       # bytes of the arrays it touches
    level: str               # where those live (cache_level_of)
    model: object = None     # the course_lib Kernel it was charged as (solve(run.model, hw) counts the same)

    @property
    def latency_si(self) -> float:
        return self.timing.median

    @property
    def intensity(self) -> float:
        """FLOPs per byte counted (see course_lib.measure.kernels for what is counted)."""
        return self.flops_si / self.bytes_si

    @property
    def achieved_flops(self) -> float:
        """FLOP/s at the median time."""
        return self.flops_si / self.timing.median

    @property
    def best_flops(self) -> float:
        """FLOP/s of the fastest repeat (what the ceilings use)."""
        return self.flops_si / self.timing.best

    @property
    def achieved_bandwidth(self) -> float:
        """Counted bytes per second at the median time."""
        return self.bytes_si / self.timing.median

    def describe(self) -> str:
        return (f"{self.name:28s} {self.intensity:9.3f} FLOP/B {fmt_per_second(self.achieved_flops, 'FLOP/s'):>14s} "
                f"{fmt_per_second(self.achieved_bandwidth, 'B/s'):>11s}  {fmt_time(self.timing.median):>9s} "
                f"±{self.timing.spread / 2:4.0%}  {self.threads} thr  {fmt_binary_bytes(self.working_set)} in {self.level}")


class MeasuredHardware(Hardware):
    """A ``Hardware`` whose figures were measured on the machine running this code.

    Extra attributes: ``levels`` (name -> ``Level``), ``sweep`` (``SweepPoint`` list), ``runs``
    (key -> ``KernelRun``), ``setup`` (threads, BLAS, CPU, caches, sizes, mode),
    ``wall_time_s`` (how long the measurement took). See ``report()``.

    >>> from course_lib.measure.result import example
    >>> hw = example()                           # made-up figures, no timing involved
    >>> round(hw.ridge_point("fp64").m, 2)       # 80 GFLOP/s over 20 GB/s
    4.0
    """

    def __init__(self, name, peaks, bandwidth, capacity, sources, *, levels, notes, sweep, runs,
                 setup, caches, wall_time_s, kind="cpu"):
        super().__init__(
            name=name,
            peak_flops={p: Q_(v, "FLOP/s") for p, v in peaks.items()},
            memory_bandwidth=Q_(bandwidth, "B/s"),
            memory_capacity=None if capacity is None else Q_(capacity, "B"),
            vendor="measured", sources=sources,
        )
        self.levels = dict(levels)
        self.notes = list(notes)
        self.sweep = list(sweep)
        self.runs = dict(runs)
        self.setup = dict(setup)
        self.caches = caches
        self.wall_time_s = float(wall_time_s)
        self.kind = kind

    def scaled(self, compute: float = 1.0, memory: float = 1.0, tag: str = "") -> "MeasuredHardware":
        """A copy whose peaks are `compute` x these and whose bandwidths (DRAM and every level)
        are `memory` x these; `tag` is added to its name (``[tag]``). The timed kernels are
        left as they ran. Used by ``this_machine()`` under ``course_lib.sensitivity.perturb``.

        >>> from course_lib.measure.result import example
        >>> slow = example().scaled(compute=0.5, tag="half the peak")
        >>> slow.name, slow.peak_flops_si("fp64") / 1e9, slow.memory_bandwidth_si / 1e9
        ('example machine [half the peak]', 40.0, 20.0)
        """
        for what, f in (("compute", compute), ("memory", memory)):
            if isinstance(f, bool) or not isinstance(f, (int, float)) or not f > 0:
                raise ValueError(f"{what} is a positive factor such as 0.85, got {f!r}.")
        hw = copy.copy(self)
        hw._peaks = {p: v * compute for p, v in self._peaks.items()}
        hw.memory_bandwidth_si = self.memory_bandwidth_si * memory
        hw.levels = {n: replace(lv, bandwidth=lv.bandwidth * memory) for n, lv in self.levels.items()}
        hw.name = f"{self.name} [{tag}]" if tag else self.name
        return hw

    # ---- questions one asks of a measurement -------------------------------------------------
    @property
    def threads(self) -> int:
        return int(self.setup["threads"])

    @property
    def memory_level(self) -> str:
        """Which level the roofline's memory ceiling (``memory_bandwidth``) was measured at:
        "DRAM", or the largest level the sweep reached when DRAM was out of its reach."""
        return self.setup.get("memory_level", "DRAM")

    @property
    def memory_label(self) -> str:
        """'DRAM', or e.g. 'L3 (DRAM not reached)': how every printout names the memory ceiling."""
        lv = self.memory_level
        if lv in ("DRAM", "HBM"):
            resolved = self.levels.get("DRAM") is None or self.levels["DRAM"].resolved
            return lv if resolved else f"{lv} (no clean plateau)"
        return lv if lv.startswith("largest") else f"{lv} (DRAM not reached)"

    def level_of(self, nbytes: float) -> str:
        """Where a working set of `nbytes` lives on this machine (one core, OS cache sizes)."""
        return cache_level_of(nbytes, self.caches)

    def bandwidth_si(self, level: str) -> float:
        """Measured bandwidth of `level` ("L1" .. "DRAM") in B/s; a level the sweep did not
        resolve raises ValueError saying why."""
        lv = self.levels.get(level)
        if lv is None:
            raise ValueError(f"no level {level!r}; levels are {', '.join(self.levels)}.")
        if not lv.resolved:
            raise ValueError(f"{level} was not resolved by this sweep: {lv.note}")
        return lv.bandwidth

    def bandwidth(self, level: str):
        """Measured bandwidth of `level` as a Quantity in GB/s."""
        return Q_(self.bandwidth_si(level) / 1e9, "GB/s")

    @property
    def resolved_levels(self) -> list:
        return [lv for lv in self.levels.values() if lv.resolved]

    def regime(self, run_or_key, precision: str = "fp64") -> str:
        """'memory-bound' or 'compute-bound' for a timed kernel against this machine's ridge."""
        run = self.runs[run_or_key] if isinstance(run_or_key, str) else run_or_key
        return COMPUTE_BOUND if run.intensity >= self.ridge_point_si(precision) else MEMORY_BOUND

    def bound_si(self, run_or_key, precision: str = "fp64", level: str | None = None) -> float:
        """Roofline bound in FLOP/s of a timed kernel: min(peak, bandwidth(level) x intensity);
        `level` None is the roofline's memory ceiling (``memory_label`` says which level)."""
        run = self.runs[run_or_key] if isinstance(run_or_key, str) else run_or_key
        bw = (self.memory_bandwidth_si if level is None or level == self.memory_level
              else self.bandwidth_si(level))
        return min(self.peak_flops_si(precision), bw * run.intensity)

    # ---- printing -------------------------------------------------------------------------
    def describe(self) -> str:
        """The measured figures with how each was measured (in GFLOP/s and GB/s on a CPU's
        scale, TFLOP/s and TB/s on a GPU's)."""
        lines = [self.name]
        for p in self.precisions:
            lines.append(f"  peak {p:5s} {fmt_per_second(self._peaks[p], 'FLOP/s'):>16s} (measured)")
        lines.append(f"  memory bandwidth {fmt_per_second(self.memory_bandwidth_si, 'B/s')} (measured: {self.memory_label})")
        if self.memory_capacity_si:
            lines.append(f"  memory capacity  {self.memory_capacity_si / 1e9:.1f} GB")
        for what, src in self.sources.items():
            lines.append(f"  source[{what}]: {src}")
        return "\n".join(lines)

    def level_spread(self, name: str) -> tuple[float, int] | None:
        """(the widest spread over repeats of the sweep sizes in level `name`'s plateau, how many
        sizes), or None where the level has no plateau in the sweep."""
        lv = self.levels.get(name)
        if lv is None or not lv.points or not self.sweep:
            return None
        inside = [p for p in self.sweep if lv.low <= p.size <= lv.high]
        return (max(p.spread for p in inside), len(inside)) if inside else None

    def spread_warnings(self) -> list[str]:
        """Every measured figure whose repeats spread wider than WIDE_SPREAD, in words."""
        out = []
        for key, run in self.runs.items():
            if run.timing.spread > WIDE_SPREAD:
                out.append(f"{run.name}: its repeats spread {run.timing.spread:.0%}")
        for name in self.levels:
            got = self.level_spread(name)
            if got and got[0] > WIDE_SPREAD:
                out.append(f"{name} bandwidth: its sizes' repeats spread up to {got[0]:.0%}")
        return out

    def report(self, kernels: bool = True, ridges=None) -> str:
        """Everything: set-up, peaks, levels, what was not resolved, and (``kernels=True``) the
        timed kernels. ``ridges`` names the precisions whose ridge point is printed (all by
        default; lesson 5's setup prints fp64's only: another ridge is what its Q6 asks about)."""
        s = self.setup
        out = [f"{self.name}: measured in {self.wall_time_s:.1f} s ({s['mode']})"]
        out += [f"  {line}" for line in s["how"]]
        out.append("")
        out.append(f"Peaks ({s.get('peak_desc', 'np.matmul of random n x n matrices')}; the fastest "
                   "repeat, with the median and spread of the peak-size run):")
        for p in self.precisions:
            run = self.runs[f"peak_{p}"]
            out.append(f"  {p}: {fmt_per_second(self._peaks[p], 'FLOP/s'):>14s}   (n = {s['peak_sizes'][p]}: "
                       f"median {fmt_per_second(run.achieved_flops, 'FLOP/s')}, {fmt_time(run.timing.median)} "
                       f"per call, spread {run.timing.spread:.0%}, {len(run.timing.seconds)} repeats)")
        out.append("")
        out.append(f"Memory levels ({s.get('sweep_desc', 'sweep of acc += x over working sets')}):")
        for lv in self.levels.values():
            out.append("  " + lv.describe())
            got = self.level_spread(lv.name)
            if got:
                out.append(f"      spread over repeats: up to {got[0]:.0%} (each of its {got[1]} sizes timed "
                           "several times; a size's spread is (slowest - fastest) / median)")
        for n in self.notes:
            out.append(f"  note: {n}")
        out.append(f"  memory ceiling of the roofline: {fmt_per_second(self.memory_bandwidth_si, 'B/s')}, "
                   f"{self.memory_label}")
        for p in self.precisions if ridges is None else [p for p in self.precisions if p in ridges]:
            out.append(f"  ridge point {p}: {self.ridge_point_si(p):.2f} FLOP/byte (peak / {self.memory_level} bandwidth)")
        if kernels:
            out += ["", self.kernel_table()]
        wide = self.spread_warnings()
        out += ["", (f"Wide spreads (over {WIDE_SPREAD:.0%} between the fastest and slowest repeat): "
                     + "; ".join(wide) + ". Another program was most likely using this machine while it was "
                     "measured (a shared machine): trust these figures less, or measure again when it is quiet.")
                if wide else f"Every figure's repeats agreed within {WIDE_SPREAD:.0%}: a quiet machine while measuring."]
        return "\n".join(out)

    def kernel_table(self, keys=None) -> str:
        """The timed kernels (`keys` of ``runs``, default all but the peak runs), one per line."""
        keys = [k for k in self.runs if not k.startswith("peak_")] if keys is None else list(keys)
        out = ["Kernels (intensity = FLOPs / bytes counted; achieved FLOP/s and counted bytes/s at "
               "the median time; ± half the spread; threads; working set and where it lives):"]
        out += ["  " + self.runs[k].describe() for k in keys]
        return "\n".join(out)

    def sweep_table(self) -> str:
        """The sweep point by point: working set, bandwidth, spread, how it was timed."""
        rows = [f"{'per thread':>11s} {'all threads':>11s} {'best GB/s':>9s} {'median':>8s} {'spread':>7s}"
                f"  kernel x passes, repeats"]
        for p in self.sweep:
            rows.append(f"{fmt_binary_bytes(p.size):>11s} {fmt_binary_bytes(p.total):>11s} {p.bandwidth / 1e9:9.1f} "
                        f"{p.median_bandwidth / 1e9:8.1f} {p.spread:7.0%}  "
                        + (f"window: 1 of {p.passes} per call" if p.method == "window" else f"{p.method} x{p.passes}")
                        + f", {p.repeats}")
        return "\n".join(rows)

    def __repr__(self):
        peaks = ", ".join(f"{p}={v / 1e9:.4g} GFLOP/s" for p, v in self._peaks.items())
        return (f"MeasuredHardware({self.name!r}, {peaks}, bandwidth={self.memory_bandwidth_si / 1e9:.4g} GB/s, "
                f"{self.threads} thread(s), measured in {self.wall_time_s:.1f} s)")

    # ---- pictures (matplotlib on first use) -------------------------------------------------
    def plot(self, precision: str = "fp64", kernels=None, ax=None, title=None):
        """The hierarchical roofline: one ceiling per measured level, the timed kernels on it."""
        from .plots import plot_hierarchical_roofline

        return plot_hierarchical_roofline(self, precision=precision, kernels=kernels, ax=ax, title=title)

    def plot_sweep(self, ax=None, title=None):
        """Bandwidth against working-set size, with the plateaus found and the cache sizes."""
        from .plots import plot_sweep

        return plot_sweep(self, ax=ax, title=title)


def example() -> MeasuredHardware:
    """A MeasuredHardware with made-up round figures, for examples and tests of the printing
    and plotting code (no timing)."""
    from .plateaus import Level
    from .system import Cache, CacheInfo

    caches = CacheInfo((Cache("L1", 32768, 1), Cache("L2", 2**20, 1), Cache("L3", 2**25, 8)), "example")
    levels = {n: Level(n, bw, lo, hi, 3, 1.05, cap, True) for n, bw, lo, hi, cap in (
        ("L1", 200e9, 8192, 16384, 32768), ("L2", 100e9, 65536, 2**19, 2**20),
        ("L3", 50e9, 2**21, 2**24, 2**25), ("DRAM", 20e9, 2**27, 2**28, None))}
    t = Timing((1e-3, 1.02e-3, 0.98e-3))
    runs = {
        "peak_fp64": KernelRun("peak_fp64", "matmul n=1000 (fp64)", "np.matmul", "fp64", 1, 8e7, 2.4e7, t, 1, 2.4e7, "L3"),
        "peak_fp32": KernelRun("peak_fp32", "matmul n=1000 (fp32)", "np.matmul", "fp32", 1, 1.6e8, 1.2e7, t, 1, 1.2e7, "L2"),
        "dot": KernelRun("dot", "dot n=2^24 (fp64)", "np.dot(x, y)", "fp64", 1, 3.2e7, 2.56e8, Timing((0.0128,) * 3), 1, 2.56e8, "DRAM"),
    }
    setup = {"threads": 1, "mode": "example", "how": ["made-up figures"], "peak_sizes": {"fp64": 1000, "fp32": 1000}}
    return MeasuredHardware("example machine", {"fp64": 80e9, "fp32": 160e9}, 20e9, 16e9,
                            {"peak_flops": "example", "memory_bandwidth": "example: made up"},
                            levels=levels, notes=[], sweep=[], runs=runs, setup=setup, caches=caches,
                            wall_time_s=0.0)
