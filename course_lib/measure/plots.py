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

from ..alt_text import describe_axes, hierarchical_text, sweep_text
from ..formatting import fmt_binary_bytes, fmt_per_second
from ..precision import normalize

# Okabe and Ito's colour-vision-safe palette
LEVEL_COLORS = {"L1": "#009E73", "L2": "#D55E00", "L3": "#CC79A7", "DRAM": "#0072B2"}


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

    ceiling = getattr(hw, "memory_level", "DRAM")
    for lv in hw.levels.values():
        if not lv.resolved or lv.name == ceiling:
            continue
        ax.plot(x, np.minimum(peak, lv.bandwidth * x) / unit, color=LEVEL_COLORS.get(lv.name, "k"),
                lw=1.4, ls="--", label=f"{lv.name}: {fmt_per_second(lv.bandwidth, 'B/s')}")
    # the roofline's memory ceiling, always drawn and named for the level it was measured at
    # (a cache's, with "DRAM not reached", when the sweep could not reach main memory)
    label = getattr(hw, "memory_label", ceiling)
    ax.plot(x, np.minimum(peak, hw.memory_bandwidth_si * x) / unit, color=LEVEL_COLORS.get(ceiling, "C0"),
            lw=2, ls="-", label=f"{label}: {fmt_per_second(hw.memory_bandwidth_si, 'B/s')}")
    for p in hw.precisions:
        if p != prec:
            ax.axhline(hw.peak_flops_si(p) / unit, color="0.5", lw=1, ls=":",
                       label=f"peak {p}: {fmt_per_second(hw.peak_flops_si(p), 'FLOP/s')}")
    ax.axhline(peak / unit, color="k", lw=0.6)
    ridge = hw.ridge_point_si(prec)
    color = LEVEL_COLORS.get(ceiling, "C0")
    ax.axvline(ridge, color=color, ls=":", lw=1)
    ax.annotate(f"{ceiling.split(' (')[0]} ridge {ridge:.3g} FLOP/byte", (ridge, peak / unit),
                textcoords="offset points", xytext=(4, -12), fontsize=8, color=color)
    ax.annotate(f"peak {prec} {fmt_per_second(peak, 'FLOP/s')}", (lo, peak / unit), textcoords="offset points",
                xytext=(4, 4), fontsize=8, ha="left")
    markers = "osD^vP*Xh<>"
    for i, r in enumerate(runs):
        ax.plot(r.intensity, r.achieved_flops / unit, markers[i % len(markers)], color="k", ms=6,
                mfc="none" if r.threads == 1 else "k", ls="none")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    _label_kernels(ax, runs, unit)
    ax.set_xlabel("arithmetic intensity (FLOP/byte, bytes as counted)")
    ax.set_ylabel(f"attainable performance ({unit_name})")
    ax.grid(True, which="both", alpha=0.3)
    legend_title = "ceilings" if getattr(hw, "kind", "cpu") == "gpu" else "ceilings (open markers: 1 thread)"
    ax.legend(fontsize=7, loc="lower right", title=legend_title, title_fontsize=7)
    missing = [n for n, lv in hw.levels.items() if not lv.resolved]
    ax.set_title(title or (f"{hw.name}: hierarchical roofline, {prec}"
                           + (f"\n(not resolved: {', '.join(missing)})" if missing else "")), fontsize=9)
    _styles_beside_colours(ax)
    describe_axes(ax, lambda: hierarchical_text(ax, hw, prec, runs))
    return fig, ax


def _label_kernels(ax, runs, unit):
    """Name each kernel beside its marker; a label that would overlap one already placed (the
    adds share one intensity, matmuls sit close) moves down until it is clear."""
    fig = ax.figure
    try:
        renderer = fig.canvas.get_renderer()
    except AttributeError:          # a backend without a renderer: place them without checking
        renderer = None
    placed = []
    for r in runs:
        y = r.achieved_flops / unit
        for attempt in range(12):
            text = ax.annotate(r.name, (r.intensity, y), textcoords="offset points",
                               xytext=(6, -3 - 9 * attempt), fontsize=7)
            if renderer is None:
                break
            box = text.get_window_extent(renderer)
            if attempt == 11 or not any(box.overlaps(b) for b in placed):
                placed.append(box)
                break
            text.remove()


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
    _styles_beside_colours(ax)
    describe_axes(ax, lambda: sweep_text(ax, hw))
    return fig, ax


# Colour is never the only carrier: each level's lines also differ in style (the legend shows it).
LEVEL_STYLES = {"L1": (0, (1.5, 1.5)), "L2": (0, (6, 2, 1.5, 2)), "L3": (0, (5, 2)), "DRAM": "-"}


def _styles_beside_colours(ax):
    """Give every level's ceiling and cache-size line its level's line style (the bars of the
    sweep's plateaus are short and thick: they keep theirs), and refresh the legend."""
    for line in ax.get_lines():
        name = line.get_label().split(":")[0].split(" ")[0]
        if name in LEVEL_STYLES and line.get_linewidth() < 4:
            line.set_linestyle(LEVEL_STYLES[name])
    legend = ax.get_legend()
    if legend is not None:
        for handle, text in zip(legend.legend_handles, legend.get_texts()):
            name = text.get_text().split(":")[0].split(" ")[0]
            if name in LEVEL_STYLES and getattr(handle, "get_linewidth", lambda: 9)() < 4:
                handle.set_linestyle(LEVEL_STYLES[name])
