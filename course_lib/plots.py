"""The roofline picture (lesson 1 onwards).

``plot_roofline`` draws, on log-log axes, each chip's ceilings for one precision — the
bandwidth slope ``bandwidth × intensity`` and the flat ``peak`` — marks the ridge point, and
places each workload at (arithmetic intensity, attainable FLOP/s). It never changes global
rcParams.

>>> from course_lib import plot_roofline, solve, Models, Hardware
>>> fig, ax = plot_roofline([Hardware.A100, Hardware.H100],
...                         workloads=[solve(Models.ResNet50, Hardware.A100, batch_size=b) for b in (1, 64)])
>>> ax.get_xscale(), ax.get_yscale()
('log', 'log')
"""
from __future__ import annotations

import numpy as np

from .precision import normalize


def _as_hardware_list(hardware):
    from .hardware import Hardware

    if isinstance(hardware, (str, Hardware)):
        hardware = [hardware]
    return [Hardware.get(h) for h in hardware]


def _points(workloads):
    """(label, intensities, attainable FLOP/s) for each workload given."""
    out = []
    for w in workloads or ():
        label = None
        if isinstance(w, tuple) and len(w) == 2 and isinstance(w[0], str):
            label, w = w
        if not all(hasattr(w, a) for a in ("flops_si", "bytes_si", "latency_si")):
            raise TypeError("workloads must be results of solve() or serve().prefill/.decode "
                            f"(or (label, result) pairs), got {type(w).__name__}.")
        f = np.atleast_1d(np.asarray(w.flops_si, dtype=float))
        b = np.atleast_1d(np.asarray(w.bytes_si, dtype=float))
        t = np.atleast_1d(np.asarray(w.latency_si, dtype=float))
        if label is None:
            if hasattr(w, "model"):
                bs = np.atleast_1d(w.batch_size)
                label = f"{w.model.name}, batch {int(bs[0])}" if bs.size == 1 else w.model.name
            else:
                label = getattr(w, "name", "workload")
        out.append((label, f / b, f / t))
    return out


def draw_roofline(ax, hardware, precision="fp16", points=(), x_range=None):
    """Draw ceilings and points on `ax` (used by plot_roofline and the widgets)."""
    hws = _as_hardware_list(hardware)
    prec = normalize(precision)
    ridges = [h.ridge_point_si(prec) for h in hws]
    xs_pts = [x for _, xs, _ in points for x in xs]
    lo = min([0.1] + [r / 100 for r in ridges] + [x / 3 for x in xs_pts])
    hi = max([r * 30 for r in ridges] + [x * 3 for x in xs_pts])
    if x_range:
        lo, hi = x_range
    x = np.geomspace(lo, hi, 200)
    colors = ["C0", "C1", "C2", "C3", "C4", "C5", "C6"]
    for i, (h, ridge) in enumerate(zip(hws, ridges)):
        peak, bw = h.peak_flops_si(prec), h.memory_bandwidth_si
        c = colors[i % len(colors)]
        ax.plot(x, np.minimum(peak, bw * x) / 1e12, color=c, lw=2,
                label=f"{h.name}: {peak / 1e12:g} TFLOP/s {prec}, {bw / 1e12:g} TB/s")
        ax.axvline(ridge, color=c, ls=":", lw=1)
        ax.annotate(f"ridge {ridge:.0f}", (ridge, peak / 1e12), textcoords="offset points",
                    xytext=(4, -12), fontsize=8, color=c)
    markers = "osD^vP*X"
    for j, (label, xs, ys) in enumerate(points):
        ax.plot(xs, ys / 1e12, markers[j % len(markers)], color="k" if len(points) == 1 else f"C{(j + len(hws)) % 10}",
                ms=6, label=label, ls="-" if len(xs) > 1 else "none", lw=1)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("attainable performance (TFLOP/s)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")


def plot_roofline(hardware, workloads=(), precision="fp16", ax=None, title=None):
    """Roofline chart of one or several chips, with workloads placed on it.

    hardware  -- a Hardware, a zoo name, or a list of them (one chart, one colour each)
    workloads -- results of ``solve`` (an array sweep draws a line) or ``serve(...).prefill`` /
                 ``.decode``, optionally as ``(label, result)`` pairs
    Returns ``(fig, ax)``.

    >>> fig, ax = plot_roofline("H100", precision="fp8")
    >>> ax.get_xlabel()
    'arithmetic intensity (FLOP/byte)'
    """
    if ax is None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    draw_roofline(ax, hardware, precision, _points(workloads))
    ax.set_title(title or f"Roofline ({normalize(precision)}, dense peaks, pure roofline)")
    return fig, ax
