"""The roofline picture (lesson 1 onwards).

``plot_roofline`` draws, on log-log axes, each chip's ceilings for one precision — the
bandwidth slope ``bandwidth × intensity`` and the flat ``peak`` — marks the ridge point, and
places each workload at (arithmetic intensity, attainable FLOP/s). It never changes global
rcParams.

Workloads often land on the same spot (batch 64 and 512 of a CNN both sit at the ridge; two
decode sweeps share their small-batch points). No marker may hide another: markers that
coincide are drawn nested (the earlier one larger, underneath, with a white rim), sweeps are
dashed so the ceiling under them stays visible, and a callout names what coincides.

>>> from course_lib import plot_roofline, solve, Models, Hardware
>>> fig, ax = plot_roofline([Hardware.A100, Hardware.H100],
...                         workloads=[solve(Models.ResNet50, Hardware.A100, batch_size=b) for b in (1, 64)])
>>> ax.get_xscale(), ax.get_yscale()
('log', 'log')
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .alt_text import describe_axes, roofline_text
from .formatting import fmt_per_second, fmt_sig
from .precision import INTEGER_PRECISIONS, normalize

MARKER_SIZE = 6.5          # points: a marker's size when nothing sits on it
NEST_STEP = 4.0            # points added per marker nested inside
MARKERS = "osD^vP*X"
SWEEP_STYLES = ("--", "-.", ":", (0, (6, 2, 1, 2)))


# Colour is never the only carrier: chips differ by line style and are named on their ridge
# labels, workloads by marker and line style. The colours are Okabe and Ito's palette, told apart
# with the common colour-vision deficiencies (yellow left out: too faint on white).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#56B4E9", "#E69F00", "#000000")
CHIP_STYLES = ("-", (0, (7, 2)), (0, (1.5, 1.5)), (0, (7, 2, 1.5, 2)))


class Series(NamedTuple):
    """One workload on the chart: label, intensities, attainable FLOP/s, batch sizes (or None),
    the regime of each point, and the chip and precision it was solved for (None where unknown)."""
    label: str
    x: np.ndarray
    y: np.ndarray
    batch: np.ndarray | None
    bound: np.ndarray | None = None
    chip: object = None
    precision: str | None = None


def _as_hardware_list(hardware):
    from .hardware import Hardware

    if isinstance(hardware, (str, Hardware)):
        hardware = [hardware]
    return [Hardware.get(h) for h in hardware]


def _points(workloads) -> list[Series]:
    """A Series for each workload given."""
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
        batch = np.atleast_1d(w.batch_size) if hasattr(w, "batch_size") else None
        if label is None:
            if hasattr(w, "model"):
                label = f"{w.model.name}, batch {int(batch[0])}" if batch.size == 1 else w.model.name
            else:
                label = getattr(w, "name", "workload")
        if batch is not None and batch.size != f.size:
            batch = None
        bound = getattr(w, "bottleneck", None)
        bound = None if bound is None else np.broadcast_to(np.asarray(bound, dtype=str), f.shape)
        prec = getattr(w, "precision", None)
        out.append(Series(label, f / b, f / t, batch, bound, getattr(w, "hardware", None),
                          prec if isinstance(prec, str) else None))
    return out


def draw_roofline(ax, hardware, precision="fp16", points=(), x_range=None):
    """Draw ceilings and points on `ax` (used by plot_roofline and the widgets).

    Returns the callouts added for markers that coincide (matplotlib Annotations). The axes
    describe themselves in words from the same data (``course_lib.alt_text``)."""
    hws = _as_hardware_list(hardware)
    prec = normalize(precision)
    ridges = [h.ridge_point_si(prec) for h in hws]
    xs_pts = [x for s in points for x in s.x]
    lo = min([0.1] + [r / 100 for r in ridges] + [x / 3 for x in xs_pts])
    hi = max([r * 30 for r in ridges] + [x * 3 for x in xs_pts])
    if x_range:
        lo, hi = x_range
    x = np.geomspace(lo, hi, 200)
    op = "OP" if prec in INTEGER_PRECISIONS else "FLOP"      # integer peaks are in TOPS
    ridge_labels = []
    for i, (h, ridge) in enumerate(zip(hws, ridges)):
        peak, bw = h.peak_flops_si(prec), h.memory_bandwidth_si
        c = PALETTE[i % len(PALETTE)]
        ax.plot(x, np.minimum(peak, bw * x) / 1e12, color=c, lw=2, ls=CHIP_STYLES[i % len(CHIP_STYLES)],
                label=f"{h.name}: {fmt_per_second(peak, op + '/s')} {prec}, {fmt_per_second(bw, 'B/s')}")
        ax.axvline(ridge, color=c, ls=":", lw=1)
        name = f"{h.short_name} " if len(hws) > 1 else ""
        ridge_labels.append(ax.annotate(f"{name}ridge {fmt_sig(ridge)}", (ridge, peak / 1e12),
                                        textcoords="offset points", xytext=(4, -12), fontsize=8, color=c))
    lines, n_sweeps = [], 0
    for j, s in enumerate(points):
        sweep = len(s.x) > 1
        ls = SWEEP_STYLES[n_sweeps % len(SWEEP_STYLES)] if sweep else "none"
        n_sweeps += sweep
        color = "k" if len(points) == 1 else PALETTE[(j + len(hws)) % len(PALETTE)]
        lines.append(ax.plot(s.x, s.y / 1e12, MARKERS[j % len(MARKERS)], color=color,
                             ms=MARKER_SIZE, mec="white", mew=0.8, label=s.label, ls=ls,
                             lw=1.3)[0])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"arithmetic intensity ({op}/byte)")
    ax.set_ylabel(f"attainable performance (T{op}/s)")
    ax.grid(True, which="both", alpha=0.3)
    legend = ax.legend(fontsize=8, loc="lower right")
    describe_axes(ax, lambda: roofline_text(ax.get_title(), hws, prec, points, op,
                                            [t for t in ax.texts if t not in ridge_labels]))
    return _separate_overlaps(ax, points, lines, legend) if len(points) > 1 else []


# ---- markers that coincide ---------------------------------------------------------------
def _overlaps(ax, points):
    """Pairs ((series, index), (series, index)) of markers of different series that would
    cover each other at the chart's current scale (distance under one marker size)."""
    ax.autoscale_view()
    to_pt = 72.0 / ax.figure.dpi
    where = [ax.transData.transform(np.column_stack([s.x, s.y / 1e12])) * to_pt for s in points]
    pairs = []
    for a in range(len(points)):
        for b in range(a + 1, len(points)):
            d = np.hypot(*(where[a][:, None, :] - where[b][None, :, :]).transpose(2, 0, 1))
            pairs += [((a, i), (b, k)) for i, k in zip(*np.nonzero(d < MARKER_SIZE * 0.9))]
    return pairs


def _separate_overlaps(ax, points, lines, legend):
    """Nest coinciding markers (earlier series larger and underneath) and name each cluster
    in a callout placed clear of the legend and the ridge labels. Returns the callouts."""
    pairs = _overlaps(ax, points)
    if not pairs:
        return []
    # depth: how many markers sit on top of this series' markers somewhere (longest chain)
    later = {}
    for (a, _), (b, _) in pairs:
        later.setdefault(a, set()).add(b)
    depth = [0] * len(points)
    for j in reversed(range(len(points))):
        depth[j] = 1 + max((depth[k] for k in later.get(j, ())), default=-1)
    for j, line in enumerate(lines):
        line.set_markersize(MARKER_SIZE + NEST_STEP * depth[j])
        line.set_zorder(2.5 - 0.01 * depth[j])       # larger ones underneath
    return _callouts(ax, points, _clusters(pairs), _obstacles(ax, legend))


def _obstacles(ax, legend):
    """What a callout must not cover, in points: boxes (the ridge labels and, where the canvas
    can lay text out without drawing, as Agg and the inline backend can, the legend) and dots
    (the ceilings and workload lines, sampled, and every marker)."""
    to_pt = 72.0 / ax.figure.dpi
    boxes = []
    for t in ax.texts:              # the ridge labels: 'ridge 153' at (4, -12) points
        px, py = ax.transData.transform(t.xy) * to_pt
        boxes.append((px, py - 14, px + 4 + 0.6 * 8 * len(t.get_text()), py))
    try:
        e = legend.get_window_extent(ax.figure.canvas.get_renderer())
        boxes.append((e.x0 * to_pt, e.y0 * to_pt, e.x1 * to_pt, e.y1 * to_pt))
    except AttributeError:          # a canvas without a renderer: the legend is not avoided
        pass
    dots = []
    for line in ax.lines:
        if line.get_transform() != ax.transData:          # the ridge verticals (axes coords)
            continue
        xy = ax.transData.transform(np.column_stack(line.get_data())) * to_pt
        for a, b in zip(xy[:-1], xy[1:]):                  # every 4 points along each segment
            n = max(1, int(np.hypot(*(b - a)) // 4))
            dots.append(a + (b - a) * np.arange(n)[:, None] / n)
        dots.append(xy[-1:])
    return boxes, (np.concatenate(dots) if dots else np.empty((0, 2)))


def _clusters(pairs):
    """Connected groups of coinciding markers, each a sorted list of (series, index)."""
    parent = {}

    def root(n):
        while parent.setdefault(n, n) != n:
            n = parent[n]
        return n
    for p, q in pairs:
        parent[root(p)] = root(q)
    groups = {}
    for n in list(parent):
        groups.setdefault(root(n), []).append(n)
    return sorted(sorted(g) for g in groups.values())


def _member(s: Series, i: int) -> str:
    if s.batch is None or len(s.x) == 1:
        return s.label
    return f"{s.label}, batch {int(s.batch[i])}"


def _callouts(ax, points, clusters, obstacles):
    """One callout per cluster of single points; for sweeps, one per run of consecutive
    clusters shared by the same series ("... coincide at batch 1–16")."""
    runs = []          # (anchor (series, index), text)
    by_set = {}
    for g in clusters:
        members = tuple(sorted({a for a, _ in g}))
        if all(len(points[a].x) > 1 and points[a].batch is not None for a in members):
            by_set.setdefault(members, []).append(g)
        else:
            runs.append((g[-1], "\n".join(_member(points[a], i) for a, i in g)))
    for members, groups in by_set.items():
        first = points[members[0]]
        idx = sorted(i for g in groups for a, i in g if a == members[0])
        lo, hi = int(first.batch[idx[0]]), int(first.batch[idx[-1]])
        span = f"batch {lo}" if lo == hi else f"batch {lo}–{hi}"
        names = " and\n".join(points[a].label for a in members)
        runs.append((groups[len(groups) // 2][0], f"{names}\ncoincide at {span}"))
    return [_place(ax, points[a].x[i], points[a].y[i] / 1e12, text, obstacles)
            for (a, i), text in runs]


def _place(ax, x, y, text, avoid):
    """An annotation with a leader line to (x, y), its text box inside the axes and clear of
    `avoid` = (boxes, dots) and of the earlier callouts (sizes estimated from the text, so no
    renderer is needed). Falls back to the first position when nothing is clear."""
    boxes, dots = avoid
    fs = 7.5
    lines = text.split("\n")
    w, h = 0.55 * fs * max(map(len, lines)), 1.3 * fs * len(lines) + 4      # points
    to_pt = 72.0 / ax.figure.dpi
    px, py = ax.transData.transform((x, y)) * to_pt
    a = ax.bbox
    x0, y0, x1, y1 = a.x0 * to_pt, a.y0 * to_pt, a.x1 * to_pt, a.y1 * to_pt
    offsets = sorted(((dx, dy) for dx in (14, -14 - w, 45, -45 - w, 90)
                      for dy in (-22 - h, 14, -55 - h, 45, -90 - h)),
                     key=lambda o: np.hypot(o[0] + w / 2, o[1] + h / 2))
    def fits(dx, dy, strict):
        r = (px + dx - 3, py + dy - 3, px + dx + w + 3, py + dy + h + 3)
        if not (r[0] >= x0 and r[2] <= x1 and r[1] >= y0 and r[3] <= y1):
            return False
        if any(not (r[2] < b[0] or r[0] > b[2] or r[3] < b[1] or r[1] > b[3]) for b in boxes):
            return False
        if strict < 1:
            return True
        if len(dots) and np.any((dots[:, 0] > r[0]) & (dots[:, 0] < r[2])
                                & (dots[:, 1] > r[1]) & (dots[:, 1] < r[3])):
            return False
        if strict < 2:
            return True
        # the leader line (sampled) should not cross a label, the legend or another callout
        ex, ey = px + dx + (w if dx < 0 else 0), py + dy + (h if dy < 0 else 0)
        lead = [(px + (ex - px) * f, py + (ey - py) * f) for f in np.linspace(0.1, 0.9, 9)]
        return not any(b[0] <= u <= b[2] and b[1] <= v <= b[3] for b in boxes for u, v in lead)

    # the nearest position that satisfies the most: everything; then allowing the leader line
    # to cross a label; then allowing the box to cover a line; else the nearest position
    choice = next((o for strict in (2, 1, 0) for o in offsets if fits(*o, strict)), offsets[0])
    dx, dy = choice
    boxes.append((px + dx, py + dy, px + dx + w, py + dy + h))
    return ax.annotate(text, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=fs,
                       ha="left", va="bottom", zorder=4,
                       bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="0.6", alpha=0.9),
                       arrowprops=dict(arrowstyle="-", color="0.4", lw=0.8, shrinkA=0, shrinkB=3))


def plot_roofline(hardware, workloads=(), precision="fp16", ax=None, title=None):
    """Roofline chart of one or several chips, with workloads placed on it.

    hardware  -- a Hardware, a zoo name, or a list of them (one chart, one colour each)
    workloads -- results of ``solve`` (an array sweep draws a line) or ``serve(...).prefill`` /
                 ``.decode``, optionally as ``(label, result)`` pairs
    Returns ``(fig, ax)``. Markers that coincide are drawn nested and named in a callout.

    >>> fig, ax = plot_roofline("H100", precision="fp8")
    >>> ax.get_xlabel()
    'arithmetic intensity (FLOP/byte)'
    """
    if ax is None:
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
    else:
        fig = ax.figure
    ax.set_title(title or f"Roofline ({normalize(precision)}, dense peaks, pure roofline)")
    draw_roofline(ax, hardware, precision, _points(workloads))
    return fig, ax
