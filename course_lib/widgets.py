"""Interactive explorers (ipywidgets): move a slider, see the roofline and the numbers change.

The chart is a matplotlib Figure drawn off-screen (no pyplot, no global state) and shown as a
PNG in an ``ipywidgets.Image``, so each change costs one small render (tens of ms; see
``python -m course_lib.bench``). Every explorer has an ``update()`` method the bench times.
"""
from __future__ import annotations

import io
import time

from .errors import CourseError
from .hardware import Hardware
from .models import Models
from .plots import _points, draw_roofline
from .roofline import _fmt_time, solve
from .serving import serve


def _render(canvas) -> bytes:
    """PNG bytes of an Agg canvas (Pillow's fast compression: the image is redrawn often)."""
    from PIL import Image

    canvas.draw()
    buf = io.BytesIO()
    Image.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba()).save(
        buf, format="png", compress_level=1)
    return buf.getvalue()


def _figure():
    """A figure outside pyplot (no global state), with a fixed layout: tight_layout and
    minor log ticks cost more than the rest of a redraw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4.2), dpi=80)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.12, top=0.92)
    return canvas, ax


class _Explorer:
    """Shared plumbing: controls, a chart image, a numbers panel, a timed update()."""

    def __init__(self, controls):
        import ipywidgets as w

        self.controls = controls
        self.image = w.Image(format="png")
        self.numbers = w.HTML()
        self.last_update_ms = None
        self._canvas, self._ax = _figure()
        for c in controls:
            c.observe(lambda change: self.update(), names="value")
        self.widget = w.VBox([w.HBox(controls[:3]), w.HBox(controls[3:]), self.numbers, self.image])
        self.update()

    def update(self):
        from matplotlib.ticker import NullLocator

        t0 = time.perf_counter()
        ax = self._ax
        ax.clear()
        try:
            html = self._draw(ax)
        except CourseError as e:  # e.g. a precision the chip lacks: say so, keep the widget alive
            html = f"<b>{type(e).__name__}:</b> {e}"
            ax.text(0.5, 0.5, str(e), ha="center", va="center", wrap=True, transform=ax.transAxes)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_locator(NullLocator())
        self.image.value = _render(self._canvas)
        self.numbers.value = html
        self.last_update_ms = (time.perf_counter() - t0) * 1e3

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


class RooflineExplorer(_Explorer):
    def __init__(self, model, hardware, precision, max_batch):
        import ipywidgets as w

        self.model = Models.get(model)
        hws = [Hardware.get(h) for h in hardware]
        self.hardware = {h.name: h for h in hws}
        precs = [p for p in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4")
                 if any(p in h.precisions for h in hws)]
        batches = [2 ** i for i in range(0, max(1, int(max_batch).bit_length()))]
        super().__init__([
            w.SelectionSlider(options=batches, value=1, description="batch"),
            w.Dropdown(options=list(self.hardware), description="hardware"),
            w.Dropdown(options=precs, value=precision if precision in precs else precs[0],
                       description="precision"),
        ])

    def _draw(self, ax):
        batch, hw_name, prec = (c.value for c in self.controls)
        hw = self.hardware[hw_name]
        p = solve(self.model, hw, batch_size=batch, precision=prec)
        draw_roofline(ax, hw, prec, _points([p]))
        ax.set_title(f"{self.model.name} on {hw.name}, {prec}", fontsize=10)
        return (f"batch {batch}: FLOPs {p.flops_si:.3g}, bytes {p.bytes_si:.3g}, intensity "
                f"{p.flops_si / p.bytes_si:.3g} FLOP/byte vs ridge {hw.ridge_point_si(prec):.3g} "
                f"&rarr; <b>{p.bottleneck}</b>; latency {_fmt_time(p.latency_si)} "
                f"(compute {_fmt_time(p.t_compute_si)}, memory {_fmt_time(p.t_memory_si)}); "
                f"{float(p.throughput.m):.4g} {self.model.sample}s/s. {p.knobs.describe()}.")


class ServingExplorer(_Explorer):
    def __init__(self, model, hardware):
        import ipywidgets as w

        self.model = Models.get(model)
        hws = [Hardware.get(h) for h in hardware]
        self.hardware = {h.name: h for h in hws}
        super().__init__([
            w.SelectionSlider(options=[2 ** i for i in range(0, 10)], value=1, description="batch"),
            w.SelectionSlider(options=[2 ** i for i in range(4, 16)], value=2048, description="prompt"),
            w.SelectionSlider(options=[2 ** i for i in range(0, 13)], value=128, description="output"),
            w.Dropdown(options=list(self.hardware), description="hardware"),
            w.Dropdown(options=["fp16", "bf16", "int8", "int4", "fp8"], value="fp16", description="weights"),
            w.Dropdown(options=["fp16", "int8", "fp8"], value="fp16", description="KV cache"),
        ])

    def _draw(self, ax):
        batch, prompt, output, hw_name, wp, kvp = (c.value for c in self.controls)
        hw = self.hardware[hw_name]
        s = serve(self.model, hw, prompt_tokens=prompt, output_tokens=output, batch_size=batch,
                  precision="fp16", weight_precision=wp, kv_precision=kvp)
        draw_roofline(ax, hw, "fp16", _points([("prefill", s.prefill), ("decode (mean step)", s.decode)]))
        ax.set_title(f"{self.model.name} on {hw.name}", fontsize=10)
        fit = "fits" if s.fits else "<b>does not fit</b>"
        return (f"TTFT {_fmt_time(s.prefill.latency_si)} (<b>{s.prefill.bottleneck}</b>), "
                f"TPOT {_fmt_time(s.decode.latency_si)} (<b>{s.decode.bottleneck}</b>), "
                f"end to end {_fmt_time(s.e2e_latency_si)}, {batch / s.decode.latency_si:.4g} tokens/s; "
                f"memory {s.memory_per_gpu_si / 1e9:.3g} GB ({fit}; max batch {s.max_batch_size}). "
                f"{s.knobs.describe()}.")


def roofline_explorer(model="ResNet50", hardware=("A100", "H100", "H200"), precision="fp16",
                      max_batch=1024) -> RooflineExplorer:
    """Batch-size slider, hardware and precision dropdowns over ``solve``; display the result.

    >>> e = roofline_explorer("ResNet50", ("A100", "V100"))
    >>> e.controls[0].value = 256            # what moving the slider does
    >>> "batch 256" in e.numbers.value
    True
    """
    return RooflineExplorer(model, hardware, precision, max_batch)


def serving_explorer(model="Llama3_8B", hardware=("A100", "H100", "H200")) -> ServingExplorer:
    """Batch, prompt and output sliders, hardware and precision dropdowns over ``serve``.

    >>> e = serving_explorer("Llama3_8B", ("H100",))
    >>> "TTFT" in e.numbers.value
    True
    """
    return ServingExplorer(model, hardware)
