"""Text alternatives of the course's figures, written from the data that draws them.

Every chart the course draws says in words what it shows (WCAG 2.1 AA, success criterion
1.1.1): ``figure_text(fig)`` returns the alternative text and the chart's data as tables.
A chart drawn by ``plot_roofline``, the explorers or ``MeasuredHardware.plot`` registers how to
describe itself on its axes (``describe_axes``); any other matplotlib chart (one a notebook
draws with ``ax.plot``) is described from its lines, axis labels and text labels.

>>> from course_lib import plot_roofline, solve, Models, Hardware
>>> fig, ax = plot_roofline("A100", workloads=[solve(Models.ResNet50, Hardware.A100)])
>>> print(figure_text(fig).alt)          # doctest: +ELLIPSIS
Roofline (fp16, dense peaks, pure roofline), log-log. NVIDIA A100 SXM 80GB fp16: ... ridge at 153 FLOP/byte. ResNet50, batch 1: intensity 75.8 FLOP/byte, 154.6 TFLOP/s, memory-bound, at 50% of the compute roof.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from .formatting import fmt_per_second, fmt_sig

MAX_POINTS_IN_ALT = 6        # longer series are summarized in the alt text; the table has all


class Table(NamedTuple):
    """A chart's data: a caption, column headers and rows of text."""
    caption: str
    header: list[str]
    rows: list[list[str]]


class FigureText(NamedTuple):
    """The alternative text of a figure and its data as tables."""
    alt: str
    tables: list[Table]


Describer = Callable[[], "tuple[str, list[Table]]"]


def describe_axes(ax, describer: Describer | None) -> None:
    """Register how `ax` describes itself (a function returning (text, tables)); None forgets
    it (the axes are then described from what is drawn on them). The registration holds while
    the lines drawn so far stay on the axes: after ``ax.clear()`` they are described anew."""
    ax._course_describe = (describer, list(ax.get_lines())) if describer is not None else None


def axes_text(ax) -> tuple[str, list[Table]]:
    """(alternative text, tables) of one axes."""
    registered = getattr(ax, "_course_describe", None)
    if registered is not None:
        describer, drawn = registered
        lines = ax.get_lines()
        if all(line in lines for line in drawn):
            return describer()
    return _generic(ax)


def figure_text(fig) -> FigureText:
    """The alternative text and tables of every visible axes of `fig`, in order."""
    axes = [ax for ax in fig.get_axes() if ax.get_visible() and ax.axison or _messages(ax)]
    parts, tables = [], []
    for n, ax in enumerate(axes):
        text, tabs = axes_text(ax)
        if len(axes) > 1:
            text = f"Panel {n + 1} of {len(axes)}: {text}"
        parts.append(text)
        tables += tabs
    if fig._suptitle is not None and fig._suptitle.get_text():
        parts.insert(0, fig._suptitle.get_text() + ".")
    return FigureText(" ".join(parts) or "An empty chart.", tables)


# ---- a chart the course did not draw: described from its artists -----------------------------
def _num(v: float) -> str:
    """A number as a chart's reader wants it: three significant digits, thousands grouped."""
    v = float(v)
    if not np.isfinite(v):
        return str(v)
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _scale(ax, which: str) -> str:
    scale = getattr(ax, f"get_{which}scale")()
    return "" if scale == "linear" else f", {scale} scale"


def _messages(ax) -> list[str]:
    return [t.get_text() for t in ax.texts if t.get_visible() and t.get_text().strip()]


def _generic(ax) -> tuple[str, list[Table]]:
    """Title, axes, each line (its points, or where a horizontal/vertical line sits) and the
    text labels on the chart."""
    title = ax.get_title() or "Chart"
    if not ax.axison:
        msgs = _messages(ax)
        return f"{title}: {' '.join(msgs) if msgs else 'nothing is plotted.'}", []
    xl, yl = ax.get_xlabel() or "x", ax.get_ylabel() or "y"
    out = [f"{title}. Horizontal axis: {xl}{_scale(ax, 'x')}; vertical axis: {yl}{_scale(ax, 'y')}."]
    rows = []
    unnamed = [ln for ln in ax.get_lines() if ln.get_label().startswith("_")]
    for k, line in enumerate(ax.get_lines()):
        if not line.get_visible():
            continue
        label = line.get_label()
        # a line without a label is named by the vertical axis when it is the only one
        name = (label if label and not label.startswith("_") else yl if len(unnamed) == 1
                else f"line {k + 1}")
        x = np.asarray(line.get_xdata(), dtype=float)
        y = np.asarray(line.get_ydata(), dtype=float)
        if line.get_transform() is not ax.transData:    # axhline / axvline: one coordinate spans
            if y.size and np.all(y == y[0]) and not np.all(x == x[0]):
                out.append(f"{name}: a horizontal line at {yl} = {_num(y[0])}.")
            elif x.size and np.all(x == x[0]):
                out.append(f"{name}: a vertical line at {xl} = {_num(x[0])}.")
            continue
        pts = [f"({_num(a)}, {_num(b)})" for a, b in zip(x, y)]
        if len(pts) > MAX_POINTS_IN_ALT:
            shown = ", ".join(pts[:3]) + ", ... " + ", ".join(pts[-2:])
            out.append(f"{name}: {len(pts)} points (x, y): {shown}; all in the table.")
        else:
            out.append(f"{name}: " + ", ".join(pts) + ".")
        rows += [[name, _num(a), _num(b)] for a, b in zip(x, y)]
    msgs = _messages(ax)
    if msgs:
        out.append("Labels on the chart: " + "; ".join(m.replace("\n", " ") for m in msgs) + ".")
    tables = [Table(title, ["line", xl, yl], rows)] if rows else []
    return " ".join(out), tables


# ---- the roofline ------------------------------------------------------------------------------
def _runs(values: list[str], batch) -> list[tuple[str, str]]:
    """Consecutive equal values as (value, 'batch a–b') spans."""
    out, start = [], 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            lo, hi = int(batch[start]), int(batch[i - 1])
            out.append((values[start], f"batch {lo}" if lo == hi else f"batch {lo}–{hi}"))
            start = i
    return out


def roofline_text(title: str, hws, prec: str, points, op: str = "FLOP",
                  labels=()) -> tuple[str, list[Table]]:
    """The text and table of a roofline: each chip's ceilings and ridge, each workload's
    intensity, attainable performance, regime and fraction of its chip's compute roof, and the
    text `labels` (matplotlib Texts) placed on the chart besides the ridge labels."""
    out = [f"{title}, log-log." if title else "Roofline chart, log-log."]
    for h in hws:
        peak, bw = h.peak_flops_si(prec), h.memory_bandwidth_si
        out.append(f"{h.name} {prec}: memory slope {fmt_per_second(bw, 'B/s')} up to a compute roof "
                   f"of {fmt_per_second(peak, op + '/s')}; ridge at {fmt_sig(h.ridge_point_si(prec))} "
                   f"{op}/byte.")
    rows = []
    for s in points:
        chip = s.chip or (hws[0] if len(hws) == 1 else None)
        own = s.precision or prec               # the roof that bounds it is its own precision's
        peak = chip.peak_flops_si(own) if chip is not None and own in chip.precisions else None
        frac = [f"{y / peak:.0%}" for y in s.y] if peak else [""] * len(s.x)
        bound = [str(b) for b in s.bound] if s.bound is not None else [""] * len(s.x)
        for i in range(len(s.x)):
            batch = "" if s.batch is None else str(int(s.batch[i]))
            rows.append([s.label, batch, fmt_sig(s.x[i]), fmt_sig(s.y[i] / 1e12), bound[i], frac[i]])
        on = (f" of the {chip.short_name}" if chip is not None and len(hws) > 1 else "") + (
            f" ({own})" if own != prec else "")
        if len(s.x) == 1:
            parts = [f"intensity {fmt_sig(s.x[0])} {op}/byte",
                     f"{fmt_per_second(s.y[0], op + '/s')}"]
            parts += [bound[0]] if bound[0] else []
            parts += [f"at {frac[0]} of the compute roof{on}"] if frac[0] else []
            out.append(f"{s.label}: " + ", ".join(parts) + ".")
            continue
        where = (f"batch {int(s.batch[0])} to {int(s.batch[-1])}" if s.batch is not None
                 else f"{len(s.x)} points")
        text = (f"{s.label}: {len(s.x)} points, {where}; intensity from {fmt_sig(s.x[0])} to "
                f"{fmt_sig(s.x[-1])} {op}/byte, attainable from {fmt_per_second(s.y[0], op + '/s')} "
                f"to {fmt_per_second(s.y[-1], op + '/s')}")
        if s.bound is not None and s.batch is not None:
            text += "; " + ", ".join(f"{b} at {span}" for b, span in _runs(bound, s.batch))
        if frac[0]:
            text += f"; from {frac[0]} to {frac[-1]} of the compute roof{on}"
        if len(s.x) > MAX_POINTS_IN_ALT:
            text += "; every point in the table"
        out.append(text + ".")
    msgs = [t.get_text().replace("\n", " ") for t in labels if t.get_visible() and t.get_text().strip()]
    if msgs:
        out.append("Labels on the chart: " + "; ".join(msgs) + ".")
    tables = [Table(f"{title or 'Roofline'}: the workloads' points", [
        "workload", "batch", f"intensity ({op}/byte)", f"attainable (T{op}/s)", "regime",
        "fraction of the compute roof"], rows)] if rows else []
    return " ".join(out), tables


# ---- lesson 5's measured charts ----------------------------------------------------------------
def hierarchical_text(ax, hw, prec: str, runs) -> tuple[str, list[Table]]:
    """A measured hierarchical roofline: the compute roof, each resolved memory level's ceiling
    and ridge, and each timed kernel's intensity and achieved FLOP/s; tables of both."""
    peak = hw.peak_flops_si(prec)
    ceiling = getattr(hw, "memory_level", "DRAM")
    # what the chart draws: a dashed ceiling per resolved level, and the roofline's own memory
    # ceiling, always (named for the level it was measured at)
    drawn = [(lv.name, lv.bandwidth, "") for lv in hw.levels.values() if lv.resolved and lv.name != ceiling]
    drawn.append((getattr(hw, "memory_label", ceiling), hw.memory_bandwidth_si, " (the roofline's memory ceiling)"))
    missing = [lv for lv in hw.levels.values() if not lv.resolved]
    out = [f"{ax.get_title() or 'Hierarchical roofline'}, log-log. Compute roof {prec}: "
           f"{fmt_per_second(peak, 'FLOP/s')}."]
    out.append("Memory ceilings: " + "; ".join(
        f"{name} {fmt_per_second(bw, 'B/s')}{what}, ridge {fmt_sig(peak / bw)} FLOP/byte" for name, bw, what in drawn) + ".")
    out.append("Levels the sweep did not resolve (no ceiling of their own): " + "; ".join(
        f"{lv.name}" + (f" ({lv.note})" if lv.note else "") for lv in missing) + "."
               if missing else "Every memory level resolved.")
    if runs:
        out.append("Timed kernels: " + "; ".join(
            f"{r.name}: intensity {fmt_sig(r.intensity)} FLOP/byte, {fmt_per_second(r.achieved_flops, 'FLOP/s')}"
            f" on {r.threads} thread{'s' if r.threads != 1 else ''}" for r in runs) + ".")
    tables = [Table("Memory levels: bandwidth and ridge point",
                    ["level", "bandwidth", f"ridge point at the {prec} roof (FLOP/byte)"],
                    [[name, fmt_per_second(bw, "B/s"), fmt_sig(peak / bw)] for name, bw, _ in drawn]
                    + [[lv.name, "not resolved", "-"] for lv in missing])]
    if runs:
        tables.append(Table("Timed kernels", ["kernel", "intensity (FLOP/byte)", "achieved", "threads"],
                            [[r.name, fmt_sig(r.intensity), fmt_per_second(r.achieved_flops, "FLOP/s"),
                              str(r.threads)] for r in runs]))
    return " ".join(out), tables


def sweep_text(ax, hw) -> tuple[str, list[Table]]:
    """The bandwidth sweep: its sizes and bandwidths, the plateaus found, the caches' sizes."""
    from .formatting import fmt_binary_bytes as fmt_bytes

    out = [f"{ax.get_title() or 'Bandwidth sweep'}: bandwidth of all threads against the working "
           f"set per thread, log scale."]
    if hw.sweep:
        fastest = max(hw.sweep, key=lambda p: p.bandwidth)
        out.append(f"{len(hw.sweep)} sizes from {fmt_bytes(hw.sweep[0].size)} to "
                   f"{fmt_bytes(hw.sweep[-1].size)}; fastest {fmt_per_second(fastest.bandwidth, 'B/s')} "
                   f"at {fmt_bytes(fastest.size)}, {fmt_per_second(hw.sweep[-1].bandwidth, 'B/s')} at the "
                   f"largest.")
    plateaus = [lv for lv in hw.levels.values() if lv.points]
    if plateaus:
        out.append("Plateaus: " + "; ".join(
            f"{lv.name} {fmt_per_second(lv.bandwidth, 'B/s')} over {lv.sizes_text}"
            + ("" if lv.resolved else " (not resolved)") for lv in plateaus) + ".")
    caches = [(c.level, hw.caches.per_thread(c.level, hw.threads)) for c in hw.caches.caches]
    if caches:
        out.append("Cache sizes per thread: " + ", ".join(f"{n} {fmt_bytes(b)}" for n, b in caches) + ".")
    tables = [Table("The bandwidth sweep", ["working set per thread", "bandwidth, fastest repeat",
                                            "bandwidth, median repeat"],
                    [[fmt_bytes(p.size), fmt_per_second(p.bandwidth, "B/s"),
                      fmt_per_second(p.median_bandwidth, "B/s")] for p in hw.sweep])] if hw.sweep else []
    return " ".join(out), tables
