"""Pictures of a measurement: the hierarchical roofline and the bandwidth sweep.

The hierarchical (cache-aware) roofline draws one bandwidth ceiling per level of the memory
hierarchy under the same compute roof: a kernel whose data lives in L2 is bounded by the L2
slope, not by DRAM's. Neither function changes global rcParams.

>>> from course_lib.measure.result import example
>>> fig, ax = plot_hierarchical_roofline(example())
>>> ax.get_xscale(), ax.get_ylabel()
('log', 'attainable performance (GFLOP/s)')
"""
from __future__ import annotations

import numpy as np

from ..formatting import fmt_binary_bytes, fmt_per_second
from ..precision import normalize

LEVEL_COLORS = {"L1": "C2", "L2": "C1", "L3": "C4", "DRAM": "C0"}


def _axes(ax, size=(7.5, 4.8)):
    if ax is not None:
        return ax.figure, ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=size)


def _scale(peak):
    return (1e12, "TFLOP/s") if peak >= 1e12 else (1e9, "GFLOP/s")


def plot_hierarchical_roofline(hw, precision="fp64", kernels=None, ax=None, title=None):
    """One ceiling per resolved memory level of `hw` (a MeasuredHardware), the compute roofs of
    every measured precision, and the timed kernels at (counted intensity, achieved FLOP/s).

    kernels -- keys of ``hw.runs`` to place (default: every timed kernel of `precision`
               except the peak runs)
    Returns ``(fig, ax)``.

    >>> from course_lib.measure.result import example
    >>> fig, ax = plot_hierarchical_roofline(example(), kernels=["dot"])
    >>> [t.get_text() for t in ax.get_legend().get_texts()][:2]
    ['L1: 200 GB/s', 'L2: 100 GB/s']
    """
    prec = normalize(precision)
    fig, ax = _axes(ax)
    peak = hw.peak_flops_si(prec)
    unit, unit_name = _scale(peak)
    if kernels is None:
        kernels = [k for k, r in hw.runs.items() if r.precision == prec and not k.startswith("peak_")]
    runs = [hw.runs[k] for k in kernels]
    xs = [r.intensity for r in runs]
    ridges = [peak / lv.bandwidth for lv in hw.resolved_levels] + [hw.ridge_point_si(prec)]
    lo = min([0.01] + [x / 3 for x in xs] + [r / 30 for r in ridges])
    hi = max([x * 3 for x in xs] + [r * 30 for r in ridges])
    x = np.geomspace(lo, hi, 300)

    for lv in hw.levels.values():
        if not lv.resolved:
            continue
        ax.plot(x, np.minimum(peak, lv.bandwidth * x) / unit, color=LEVEL_COLORS.get(lv.name, "k"),
                lw=2 if lv.name == "DRAM" else 1.4, ls="-" if lv.name == "DRAM" else "--",
                label=f"{lv.name}: {fmt_per_second(lv.bandwidth, 'B/s')}")
    for p in hw.precisions:
        if p != prec:
            ax.axhline(hw.peak_flops_si(p) / unit, color="0.5", lw=1, ls=":",
                       label=f"peak {p}: {fmt_per_second(hw.peak_flops_si(p), 'FLOP/s')}")
    ax.axhline(peak / unit, color="k", lw=0.6)
    ridge = hw.ridge_point_si(prec)
    ax.axvline(ridge, color=LEVEL_COLORS["DRAM"], ls=":", lw=1)
    ax.annotate(f"DRAM ridge {ridge:.3g} FLOP/byte", (ridge, peak / unit), textcoords="offset points",
                xytext=(4, -12), fontsize=8, color=LEVEL_COLORS["DRAM"])
    ax.annotate(f"peak {prec} {fmt_per_second(peak, 'FLOP/s')}", (lo, peak / unit), textcoords="offset points",
                xytext=(4, 4), fontsize=8, ha="left")
    markers = "osD^vP*Xh<>"
    placed = []
    for i, r in enumerate(runs):
        y = r.achieved_flops / unit
        ax.plot(r.intensity, y, markers[i % len(markers)], color="k", ms=6,
                mfc="none" if r.threads == 1 else "k", ls="none")
        # kernels of one intensity (the adds) stack up: push a label down when it would
        # land on one already placed
        dy = -3
        for px, py in placed:
            if abs(np.log10(px / r.intensity)) < 0.3 and abs(np.log10(py / y)) < 0.08:
                dy -= 8
        placed.append((r.intensity, y))
        ax.annotate(r.name, (r.intensity, y), textcoords="offset points", xytext=(6, dy), fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP/byte, bytes as counted)")
    ax.set_ylabel(f"attainable performance ({unit_name})")
    ax.grid(True, which="both", alpha=0.3)
    title = "ceilings" if getattr(hw, "kind", "cpu") == "gpu" else "ceilings (open markers: 1 thread)"
    ax.legend(fontsize=7, loc="lower right", title=title, title_fontsize=7)
    missing = [n for n, lv in hw.levels.items() if not lv.resolved]
    ax.set_title(title or (f"{hw.name}: hierarchical roofline, {prec}"
                           + (f"\n(not resolved: {', '.join(missing)})" if missing else "")), fontsize=9)
    return fig, ax


def plot_sweep(hw, ax=None, title=None):
    """Bandwidth against working set per thread: the sweep's points, the plateaus found
    (horizontal bars over the sizes they were taken from) and the caches' sizes.

    >>> from course_lib.measure.result import example
    >>> fig, ax = plot_sweep(example())
    >>> ax.get_xlabel()
    'working set per thread (bytes, log scale)'
    """
    fig, ax = _axes(ax, (7.5, 4))
    if hw.sweep:
        s = np.array([p.size for p in hw.sweep])
        b = np.array([p.bandwidth for p in hw.sweep]) / 1e9
        med = np.array([p.median_bandwidth for p in hw.sweep]) / 1e9
        ax.plot(s, b, "o-", color="0.2", ms=3, lw=1, label="fastest repeat (the ceilings use these)")
        ax.plot(s, med, "-", color="0.6", lw=1, label="median repeat")
    for lv in hw.levels.values():
        if lv.points and np.isfinite(lv.bandwidth):
            ax.plot([lv.low, lv.high], [lv.bandwidth / 1e9] * 2, color=LEVEL_COLORS.get(lv.name, "k"),
                    lw=5, alpha=0.6 if lv.resolved else 0.25,
                    label=f"{lv.name} {lv.bandwidth / 1e9:.3g} GB/s" + ("" if lv.resolved else " (not resolved)"))
    for c in hw.caches.caches:
        cap = hw.caches.per_thread(c.level, hw.threads)
        ax.axvline(cap, color=LEVEL_COLORS.get(c.level, "k"), ls=":", lw=1)
        ax.annotate(f"{c.level} {fmt_binary_bytes(cap)}", (cap, 1), xycoords=("data", "axes fraction"),
                    textcoords="offset points", xytext=(2, -10), fontsize=7,
                    color=LEVEL_COLORS.get(c.level, "k"))
    ax.set_xscale("log", base=2)
    ticks = [2.0 ** k for k in range(10, 41, 2)]
    if hw.sweep:
        ticks = [t for t in ticks if s[0] / 2 <= t <= s[-1] * 2]
    ax.set_xticks(ticks, [fmt_binary_bytes(t) for t in ticks], fontsize=7)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(f"{hw.setup.get('size_label', 'working set per thread')} (bytes, log scale)")
    ax.set_ylabel("bandwidth, all threads (GB/s)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    ax.set_title(title or f"{hw.name}: acc += x over growing working sets", fontsize=9)
    return fig, ax
