"""From a bandwidth sweep to the levels of the memory hierarchy (L1, L2, L3, DRAM).

As the working set grows past each cache, the bandwidth of a streaming kernel drops to the
next level's: a staircase of *plateaus* with ramps between them. The rules, chosen to be
robust on a noisy shared machine and to say plainly what they could not see:

1. **Zones from the cache sizes the OS reports** (per thread: a private cache whole, a shared
   one divided among the threads). Level k's zone keeps clear of both ramps: from twice the
   cache below to 3/4 of its own size; DRAM starts at 4x the last cache, where LRU has
   thrown almost everything out. Points on the ramps belong to no level.
2. A level is **resolved** when its zone holds at least ``min_points`` sizes and they form a
   plateau: fastest / slowest <= ``FLAT`` (after dropping one outlier when there are 5 or more).
   Its bandwidth is the median of those points. When the bandwidth **steps down inside a
   cache's zone** for good (every later point slower by more than ``RUN_TOL``), the machine
   delivers less of that cache than the OS reports (a VM's share of the host's L3): the level
   is the run of points before the step, and its note says where the step is. (A shared
   machine that slows down partway through the sweep looks the same in one pass, so
   ``cpu.recheck_zones`` times such a zone again and keeps each size's faster pass first.)
3. Resolved levels must come out in order (each no faster than the one above, within
   ``ORDER_TOL``); a level that does not is reported as not resolved. Two neighbours within
   10% of each other are both kept, with a note that they are not distinct.
4. **No cache sizes from the OS:** plateaus are found in the data alone -- runs of at least
   ``min_points`` consecutive sizes within ±15% of the run's median -- and named by order:
   the first "L1", the last "DRAM" if it reaches working sets of 64 MiB, the others L2, L3.

>>> import numpy as np
>>> from course_lib.measure.system import Cache, CacheInfo
>>> caches = CacheInfo((Cache("L1", 32768, 1), Cache("L2", 2**20, 1), Cache("L3", 2**25, 8)))
>>> sizes = 2.0 ** np.arange(13, 29)                      # 8 KiB ... 256 MiB per thread
>>> bw = np.select([sizes <= 24e3, sizes <= 7.5e5, sizes <= 2.4e7], [200e9, 100e9, 50e9], 20e9)
>>> levels, notes = find_levels(sizes, bw, caches, threads=1)
>>> [(l.name, round(l.bandwidth / 1e9)) for l in levels if l.resolved]
[('L1', 200), ('L2', 100), ('L3', 50), ('DRAM', 20)]
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..formatting import fmt_binary_bytes
from .system import LEVELS, MiB

FLAT = 1.5          # a plateau's fastest point may be at most 1.5x its slowest
RUN_TOL = 0.15      # data-only rule: within ±15% of the run's median
ORDER_TOL = 1.10    # a deeper level may measure up to 10% faster (noise) and stay in order
DISTINCT = 1.10


@dataclass(frozen=True)
class Level:
    """One level of the memory hierarchy as the sweep saw it."""

    name: str
    bandwidth: float         # B/s, all threads together (median of the plateau's points)
    low: float               # working set per thread of the plateau's first point (bytes)
    high: float              # ... and of its last point
    points: int
    flatness: float          # fastest / slowest point of the plateau
    capacity: float | None   # per-thread share of this cache from the OS (None for DRAM)
    resolved: bool
    note: str = ""
    step_at: float | None = None     # working set per thread where the bandwidth stepped down, if it did

    @property
    def sizes_text(self) -> str:
        """The working sets per thread the plateau was read from: '11 KiB..36 KiB'."""
        return f"{fmt_binary_bytes(self.low)}..{fmt_binary_bytes(self.high)}" if self.points else "none"

    def describe(self) -> str:
        cap = f", cache {fmt_binary_bytes(self.capacity)} per thread" if self.capacity else ""
        if not self.points:
            return f"{self.name:4s}  not resolved: {self.note}"
        head = (f"{self.name:4s} {self.bandwidth / 1e9:8.1f} GB/s  (median of {self.points} sizes, "
                f"{fmt_binary_bytes(self.low)}..{fmt_binary_bytes(self.high)} per thread{cap}; "
                f"fastest/slowest {self.flatness:.2f})")
        if not self.resolved:
            head += f"\n      not resolved: {self.note}"
        elif self.note:
            head += f"\n      note: {self.note}"
        return head


def _flatness(values: np.ndarray) -> float:
    v = np.sort(values)
    if len(v) >= 5:           # one outlier on a shared machine should not hide a plateau
        v = v[1:-1]
    return float(v[-1] / v[0])


def _step_down(pts: np.ndarray, min_points: int = 2) -> int | None:
    """Where a zone's bandwidth steps down for good: the length of its leading run (each point
    within ±RUN_TOL of the run's median so far) when that run has `min_points` or more and
    every later point, two at least, is slower than the run by more than RUN_TOL; else None.
    One lucky or unlucky point is not a step: the points after it are not all slower.

    >>> _step_down(np.array([330, 325, 335, 240, 245, 250.0]))
    3
    >>> _step_down(np.array([100, 100, 300, 100, 100.0])) is None       # one outlier
    True
    """
    ref = None
    for i in range(1, len(pts)):
        ref = np.median(pts[:i])
        if abs(np.log(pts[i] / ref)) > np.log1p(RUN_TOL):
            break
    else:
        return None
    if i < min_points or len(pts) - i < 2 or not np.all(pts[i:] < ref / (1 + RUN_TOL)):
        return None
    return i


def zones(caches, threads: int) -> dict:
    """{level: (low, high)} working sets per thread that belong to each level, from the OS's
    cache sizes; a level the OS does not report has no zone."""
    caps = {lv: caches.per_thread(lv, threads) for lv in ("L1", "L2", "L3")}
    known = [(lv, c) for lv, c in caps.items() if c]
    out = {}
    below = None
    for lv, cap in known:
        out[lv] = (0.0 if below is None else 2 * below, 0.75 * cap)
        below = cap
    if below is not None:
        out["DRAM"] = (4 * below, float("inf"))
    return out


def find_levels(sizes, bandwidths, caches, threads: int, min_points: int = 2, zone_map=None,
                missing_note: str = "the OS reports no such cache"):
    """(levels, notes): one ``Level`` per L1/L2/L3/DRAM (resolved or not), in that order.

    sizes      -- working set per thread (bytes) of each sweep point, increasing
    bandwidths -- median bandwidth of each point, all threads together (B/s)
    zone_map   -- {level: (low, high)} to use instead of ``zones(caches, threads)`` (the GPU's)
    """
    sizes = np.asarray(sizes, dtype=float)
    bw = np.asarray(bandwidths, dtype=float)
    if sizes.shape != bw.shape or sizes.ndim != 1 or len(sizes) < 2:
        raise ValueError("sizes and bandwidths must be 1-d arrays of the same length (>= 2).")
    if not np.all(np.diff(sizes) > 0):
        raise ValueError("sizes must increase.")
    z = zones(caches, threads) if zone_map is None else zone_map
    if not z:
        return _levels_from_data(sizes, bw, min_points)
    levels, notes = [], []
    for name in LEVELS:
        if name not in z:
            levels.append(Level(name, float("nan"), 0, 0, 0, float("nan"), None, False, missing_note))
            continue
        lo, hi = z[name]
        cap = caches.per_thread(name, threads) if name != "DRAM" else None
        inside = (sizes >= lo) & (sizes <= hi)
        if inside.sum() < min_points:
            where = (f"beyond {fmt_binary_bytes(lo)} per thread (4x the last cache)" if name == "DRAM"
                     else f"between {fmt_binary_bytes(lo)} and {fmt_binary_bytes(hi)} per thread")
            got = f"the sweep has {int(inside.sum())} size(s) {where}, {min_points} needed"
            if name == "DRAM":
                got += f"; its largest working set is {fmt_binary_bytes(sizes[-1])} per thread"
            levels.append(Level(name, float("nan"), 0, 0, int(inside.sum()), float("nan"), cap, False, got))
            continue
        pts, at = bw[inside], sizes[inside]
        step = _step_down(pts) if name != "DRAM" else None
        if step is not None:
            # the cache delivers less than the OS reports: the plateau is the run before the step
            run = pts[:step]
            levels.append(Level(
                name, float(np.median(run)), float(at[0]), float(at[step - 1]), step, _flatness(run), cap, True,
                f"the bandwidth falls {np.median(run) / np.median(pts[step:]):.1f}x at "
                f"{fmt_binary_bytes(at[step])} per thread, short of the zone's end "
                f"({fmt_binary_bytes(hi)}): this machine delivers less of its {name} than the OS "
                f"reports (on a VM, the host's other tenants share it); the plateau is the sizes before",
                float(at[step])))
            notes.append(f"{name}: read from {step} of the {len(pts)} sizes in its zone; the bandwidth falls "
                         f"at {fmt_binary_bytes(at[step])} per thread")
            continue
        flat = _flatness(pts)
        lv = Level(name, float(np.median(pts)), float(at[0]), float(at[-1]),
                   int(inside.sum()), flat, cap, flat <= FLAT,
                   "" if flat <= FLAT else
                   f"no plateau: the bandwidth changes {flat:.1f}x across this zone")
        levels.append(lv)
    levels = _check_order(levels, notes)
    return levels, notes


def _check_order(levels, notes):
    out = []
    prev = None
    for lv in levels:
        if lv.resolved and prev is not None:
            if lv.bandwidth > prev.bandwidth * ORDER_TOL:
                lv = replace(lv, resolved=False,
                             note=f"out of order: faster than {prev.name} ({lv.bandwidth / 1e9:.1f} vs "
                                  f"{prev.bandwidth / 1e9:.1f} GB/s); noise, or the cache sizes are wrong")
            elif lv.bandwidth * DISTINCT > prev.bandwidth:
                notes.append(f"{prev.name} and {lv.name} are not distinct (within 10%): the kernel "
                             f"runs about as fast from both")
                lv = replace(lv, resolved=True, note=f"not distinct from {prev.name} (within 10%)")
        out.append(lv)
        if lv.resolved:
            prev = lv
    return out


def _levels_from_data(sizes, bw, min_points):
    """Plateaus from the data alone: runs of consecutive sizes within ±15% of their median."""
    runs, start = [], 0
    for i in range(1, len(bw) + 1):
        if i < len(bw):
            ref = np.median(bw[start:i])
            if abs(np.log(bw[i] / ref)) <= np.log1p(RUN_TOL):
                continue
        if i - start >= min_points:
            runs.append((start, i))
        start = i
    notes = ["the OS reported no cache sizes: plateaus found in the data alone and named by order"]
    names = {}
    if runs:
        names[runs[0]] = "L1"
        last = runs[-1]
        if len(runs) > 1 and sizes[last[1] - 1] >= 64 * MiB:
            names[last] = "DRAM"
        middle = [r for r in runs if r not in names]
        for lv, r in zip(("L2", "L3"), middle):
            names[r] = lv
        if len(middle) > 2:
            notes.append(f"{len(middle) - 2} more plateau(s) between L3 and DRAM were not named")
    levels = []
    by_name = {v: k for k, v in names.items()}
    for name in LEVELS:
        r = by_name.get(name)
        if r is None:
            levels.append(Level(name, float("nan"), 0, 0, 0, float("nan"), None, False,
                                "no plateau in the sweep could be given this name"))
            continue
        pts = bw[r[0]:r[1]]
        levels.append(Level(name, float(np.median(pts)), float(sizes[r[0]]), float(sizes[r[1] - 1]),
                            len(pts), _flatness(pts), None, True, "named by order of size"))
    return _check_order(levels, notes), notes
