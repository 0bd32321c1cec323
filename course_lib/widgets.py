"""Interactive explorers (ipywidgets): move a slider, see the roofline and the numbers change.

The chart is a matplotlib Figure drawn off-screen (no pyplot, no global state) and shown as a
PNG whose ``alt`` text, written from the same data on every redraw (``course_lib.alt_text``),
says what it shows; the numbers beside it sit in a live region, so a screen reader announces
each new result. The sliders are named, native range inputs: Tab to one, then the arrow keys
(``course_lib.accessible_widgets``). It is rendered at twice its displayed size (``CHART_WIDTH_PX``
CSS pixels wide, at most the output's width) so it stays sharp on HiDPI screens and when the
browser scales it down; one redraw costs tens of ms (``benchmarks/course_lib_bench.py``). Every
explorer has an ``update()`` method the bench times.

Each explorer opens on the lesson's own configuration: ``chip=`` (one of ``hardware``),
``batch=`` and, for serving, the prompt and output lengths and the formats.
"""
from __future__ import annotations

import html
import numbers
import struct
import textwrap
import time

from .alt_text import axes_text, describe_axes
from .formatting import fmt_bytes, fmt_flops, fmt_rate, fmt_sig, fmt_time
from .errors import CourseError
from .hardware import Hardware
from .models import Models
from .plots import _points, draw_roofline
from .roofline import solve
from .serving import kernel_latency, serve

CHART_WIDTH_PX = 800          # displayed width in CSS pixels (less if the output is narrower)
CHART_ASPECT = 0.55           # height / width
PIXEL_RATIO = 2               # rendered pixels per CSS pixel: sharp on HiDPI screens


def _render(canvas) -> bytes:
    """PNG bytes of an Agg canvas, written here: RGB rows, no PNG filter, zlib level 1. Half
    the time of Pillow's fastest PNG for a few % more bytes; the image is redrawn on every
    slider step and sent once to the browser on the same machine or nearby."""
    import zlib

    import numpy as np

    canvas.draw()
    rgb = np.asarray(canvas.buffer_rgba())[:, :, :3]          # the figure is opaque
    h, w, _ = rgb.shape
    rows = np.zeros((h, 1 + 3 * w), dtype=np.uint8)           # byte 0 of a row: filter "none"
    rows[:, 1:] = rgb.reshape(h, -1)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + tag + data
                + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)     # 8-bit RGB, no interlace
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + chunk(b"IEND", b""))


def _figure():
    """A figure outside pyplot (no global state) of CHART_WIDTH_PX × PIXEL_RATIO pixels, with a
    fixed layout: tight_layout and minor log ticks cost more than the rest of a redraw."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    width_in = CHART_WIDTH_PX / 100            # 100 CSS px per inch: fonts in points read as usual
    fig = Figure(figsize=(width_in, width_in * CHART_ASPECT), dpi=100 * PIXEL_RATIO)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    fig.subplots_adjust(left=0.09, right=0.98, bottom=0.11, top=0.93)
    return canvas, ax


def _message(ax, text, color):
    """A message in the middle of the chart, wrapped to fit inside it (never clipped)."""
    ax.text(0.5, 0.5, textwrap.fill(text, 70), ha="center", va="center", fontsize=11,
            color=color, transform=ax.transAxes, zorder=5,
            bbox=dict(boxstyle="round,pad=0.6", fc="white", ec=color, alpha=0.95))


def _slider(options: list, value, what: str, description: str, unit: str = ""):
    """A labelled slider over `options` at `value` (added to the options if missing); a clear
    error if `value` is not a positive whole number."""
    from .accessible_widgets import LabelledSlider

    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise CourseError(f"{what} must be a positive whole number, got {value!r}.")
    return LabelledSlider(options=sorted(set(options) | {int(value)}), value=int(value),
                          description=description, unit=unit)


def _select(options: list, value: str, description: str):
    """A labelled drop-down list over `options` at `value`."""
    from .accessible_widgets import LabelledSelect

    return LabelledSelect(options=options, value=value, description=description)


class _Explorer:
    """Shared plumbing: controls, a chart image, a numbers panel, a timed update()."""

    def __init__(self, controls):
        import ipywidgets as w

        from .accessible_widgets import Chart, LiveText

        self.controls = controls
        for c in controls:
            if hasattr(c, "style"):
                c.style.description_width = "initial"
        self.image = Chart(width_px=CHART_WIDTH_PX)
        self.numbers = LiveText()
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
        ax.set_axis_on()
        describe_axes(ax, None)
        try:
            body = self._draw(ax)
        except CourseError as e:  # e.g. a precision the chip lacks: say so, keep the widget alive
            title = ax.get_title()
            ax.clear()
            ax.set_axis_off()
            ax.set_title(title, fontsize=10)
            _message(ax, f"{type(e).__name__}: {e}", "C3")
            body = f"<b>{type(e).__name__}:</b> {html.escape(str(e))}"
        ax.xaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_minor_locator(NullLocator())
        png = _render(self._canvas)
        alt, _ = axes_text(ax)
        with self.image.hold_sync():            # the new image and its text arrive together
            self.image.alt = alt
            self.image.value = png
        self.numbers.value = f'<div style="line-height:1.6">{body}</div>'
        self.last_update_ms = (time.perf_counter() - t0) * 1e3

    def _chip_dropdown(self, hardware, chip):
        hws = [Hardware.get(h) for h in hardware]
        if not hws:
            raise CourseError("hardware must name at least one chip, e.g. ('A100', 'H100').")
        self.hardware = {h.name: h for h in hws}
        first = hws[0] if chip is None else Hardware.get(chip)
        if first.name not in self.hardware:
            raise CourseError(f"chip={chip!r} is not one of the explorer's hardware "
                              f"({', '.join(h.short_name for h in hws)}); add it to hardware.")
        return _select(list(self.hardware), first.name, "hardware")

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)


def _knobs_line(knobs) -> str:
    return f'<span style="color:#666">{html.escape(knobs.describe())}</span>'


class RooflineExplorer(_Explorer):
    """``roofline_explorer``'s widget: batch slider, hardware and precision dropdowns."""

    def __init__(self, model, hardware, precision, max_batch, chip=None, batch=1):
        self.model = Models.get(model)
        chips = self._chip_dropdown(hardware, chip)
        precs = [p for p in ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "int4")
                 if any(p in h.precisions for h in self.hardware.values())]
        if precision not in precs:
            raise CourseError(f"precision={precision!r}: none of these chips has it; "
                              f"choose one of {', '.join(precs)}.")
        # an LLM under solve() is one decode step: one new token per sequence
        self.llm = hasattr(self.model, "kv_elements_per_token")
        super().__init__([
            _slider([2 ** i for i in range(0, max(1, int(max_batch).bit_length()))], batch,
                    "batch", "batch (sequences)" if self.llm else "batch",
                    "sequences" if self.llm else ""),
            chips,
            _select(precs, precision, "precision"),
        ])

    def _draw(self, ax):
        from .analysis import max_batch_size

        batch, hw_name, prec = (c.value for c in self.controls)
        hw = self.hardware[hw_name]
        what = f"{self.model.name} decode step" if self.llm else self.model.name
        ax.set_title(f"{what} on {hw.name}, {prec}, batch {batch}", fontsize=10)
        p = solve(self.model, hw, batch_size=batch, precision=prec)
        if self.llm and hw.memory_capacity_si:
            most = max_batch_size(self.model, hw, context_tokens=1, precision=prec)
            if batch > most:
                return self._does_not_fit(ax, hw, prec, batch, most)
        draw_roofline(ax, hw, prec, _points([p]))
        unit = "tokens/s" if self.llm else f"{self.model.sample}s/s"
        intensity, ridge = p.flops_si / p.bytes_si, p.ridge_point.m
        side = "above" if intensity >= ridge else "below"
        return (f"<b>batch {batch}</b>: {fmt_flops(p.flops_si)} and {fmt_bytes(p.bytes_si)} moved "
                f"&rarr; intensity {fmt_sig(intensity)} FLOP/byte, {side} the ridge "
                f"({fmt_sig(ridge)}) &rarr; <b>{p.bottleneck}</b><br>"
                f"latency <b>{fmt_time(p.latency_si)}</b> = max(compute {fmt_time(p.t_compute_si)}, "
                f"memory {fmt_time(p.t_memory_si)}), the whole-model max: a lower bound; each layer at "
                f"its own max, summed: {fmt_time(float(p.layerwise_latency_si))} &middot; "
                f"<b>{fmt_rate(float(p.throughput.m), unit)}</b><br>{_knobs_line(p.knobs)}")

    def _does_not_fit(self, ax, hw, prec, batch, most):
        draw_roofline(ax, hw, prec)
        weights, cap = self.model.weight_bytes(prec), fmt_bytes(hw.memory_capacity_si)
        if most == 0:
            why = f"the {prec} weights alone ({fmt_bytes(weights)}) exceed its {cap}"
        else:
            why = f"{batch} sequences need more than its {cap}; at most {most} fit"
        _message(ax, f"Does not fit on one {hw.short_name}: {why}. Not run.", "C3")
        return f"<b>Does not fit</b> on one {html.escape(hw.name)}: {why}. Nothing is plotted."


class ServingExplorer(_Explorer):
    """``serving_explorer``'s widget: batch, prompt and output sliders; chip and formats."""

    WEIGHTS = ("fp16", "bf16", "fp8", "int8", "int4")
    KV = ("fp16", "fp8", "int8")

    def __init__(self, model, hardware, chip=None, batch=1, prompt_tokens=2048,
                 output_tokens=128, weight_precision="fp16", kv_precision="fp16"):
        self.model = Models.get(model)
        if not hasattr(self.model, "prefill_table"):
            raise CourseError(f"serving_explorer needs an LLM such as 'Llama3_8B'; "
                              f"{self.model.name} is a {self.model.kind}: use roofline_explorer.")
        chips = self._chip_dropdown(hardware, chip)
        for value, options, what in ((weight_precision, self.WEIGHTS, "weight_precision"),
                                     (kv_precision, self.KV, "kv_precision")):
            if value not in options:
                raise CourseError(f"{what}={value!r}: choose one of {', '.join(options)}.")
        super().__init__([
            _slider([2 ** i for i in range(0, 10)], batch, "batch", "batch (sequences)", "sequences"),
            _slider([2 ** i for i in range(4, 16)], prompt_tokens, "prompt_tokens", "prompt tokens", "tokens"),
            _slider([2 ** i for i in range(0, 13)], output_tokens, "output_tokens", "output tokens", "tokens"),
            chips,
            _select(list(self.WEIGHTS), weight_precision, "weights"),
            _select(list(self.KV), kv_precision, "KV cache"),
        ])

    def _draw(self, ax):
        batch, prompt, output, hw_name, wp, kvp = (c.value for c in self.controls)
        hw = self.hardware[hw_name]
        ax.set_title(f"{self.model.name} on {hw.short_name}: batch {batch}, prompt {prompt}, "
                     f"output {output}; weights {wp}, KV cache {kvp}", fontsize=10)
        s = serve(self.model, hw, prompt_tokens=prompt, output_tokens=output, batch_size=batch,
                  precision="fp16", weight_precision=wp, kv_precision=kvp)
        cap = hw.memory_capacity_si
        memory = (f"memory per GPU {fmt_bytes(s.memory_per_gpu_si)} (weights "
                  f"{fmt_bytes(s.weight_bytes_si)} + KV cache {fmt_bytes(s.kv_cache_bytes_si)})")
        if s.fits is False:
            draw_roofline(ax, hw, "fp16")
            room = (f"at most {s.max_batch_size} sequences of {prompt + output:,} tokens fit"
                    if s.max_batch_size else "the weights alone do not fit")
            _message(ax, f"Does not fit on one {hw.short_name}: needs {fmt_bytes(s.memory_per_gpu_si)}, "
                         f"has {fmt_bytes(cap)} ({room}). Not run.", "C3")
            return (f"<b>Does not fit</b> on one {html.escape(hw.name)}: {memory} &gt; "
                    f"{fmt_bytes(cap)}; {room}. Nothing is plotted: this batch cannot run here."
                    f"<br>{_knobs_line(s.knobs)}")
        draw_roofline(ax, hw, "fp16", _points([("prefill", s.prefill), ("decode (mean step)", s.decode)]))
        k = kernel_latency(self.model, hw, prompt_tokens=prompt, output_tokens=output, batch_size=batch,
                           precision="fp16", weight_precision=wp, kv_precision=kvp)
        fit = ("capacity unknown" if s.fits is None else
               f"of {fmt_bytes(cap)}: fits; at most {s.max_batch_size} sequences of "
               f"{prompt + output:,} tokens fit")
        return (f"TTFT <b>{fmt_time(s.prefill.latency_si)}</b> (prefill, <b>{s.prefill.bottleneck}</b>)"
                f" &middot; TPOT <b>{fmt_time(s.decode.latency_si)}</b> (decode, "
                f"<b>{s.decode.bottleneck}</b>) &middot; end to end {fmt_time(s.e2e_latency_si)} "
                f"&middot; <b>{fmt_rate(batch / s.decode.latency_si, 'tokens/s')}</b><br>"
                f"Each time is a phase's step-level max(compute, memory), a lower bound; kernel by kernel, "
                f"each at its own max: TTFT {fmt_time(k['ttft'])}, TPOT {fmt_time(k['tpot'])}<br>"
                f"{memory} {fit}<br>{_knobs_line(s.knobs)}")


def roofline_explorer(model="ResNet50", hardware=("A100", "H100", "H200"), precision="fp16",
                      max_batch=1024, *, chip=None, batch=1) -> RooflineExplorer:
    """Batch-size slider, hardware and precision dropdowns over ``solve``; display the result.

    It opens on `chip` (one of `hardware`; default the first) at `batch`. For an LLM each
    point is one decode step (one token per sequence), so throughput reads tokens/s.

    >>> e = roofline_explorer("ResNet50", ("V100", "A100"), chip="A100", batch=8)
    >>> e.controls[1].value, e.controls[0].value
    ('NVIDIA A100 SXM 80GB', 8)
    >>> e.controls[0].value = 256            # what moving the slider does
    >>> "batch 256" in e.numbers.value
    True
    """
    return RooflineExplorer(model, hardware, precision, max_batch, chip=chip, batch=batch)


def serving_explorer(model="Llama3_8B", hardware=("A100", "H100", "H200"), *, chip=None,
                     batch=1, prompt_tokens=2048, output_tokens=128, weight_precision="fp16",
                     kv_precision="fp16") -> ServingExplorer:
    """Batch, prompt and output sliders, hardware and precision dropdowns over ``serve``.

    It opens on `chip` (one of `hardware`; default the first) with the given batch, lengths
    and formats. A batch whose weights and KV cache exceed the chip's memory is shown as not
    fitting, not plotted.

    >>> e = serving_explorer("Llama3_8B", ("A100", "H100"), chip="H100")
    >>> "TTFT" in e.numbers.value and "tokens/s" in e.numbers.value
    True
    """
    return ServingExplorer(model, hardware, chip=chip, batch=batch, prompt_tokens=prompt_tokens,
                           output_tokens=output_tokens, weight_precision=weight_precision,
                           kv_precision=kv_precision)


class ScalingExplorer(_Explorer):
    """``scaling_explorer``'s widget: GPUs in the tensor-parallel group, batch, prompt; the chip."""

    def __init__(self, model, hardware, chip=None, tp=2, batch=1, prompt_tokens=512):
        self.model = Models.get(model)
        chips = self._chip_dropdown(hardware, chip)
        super().__init__([
            _slider([1, 2, 4, 8], tp, "tp", "GPUs (tensor parallel)", "GPUs"),
            _slider([2 ** i for i in range(0, 10)], batch, "batch", "batch (sequences)", "sequences"),
            _slider([2 ** i for i in range(4, 15)], prompt_tokens, "prompt_tokens", "prompt tokens", "tokens"),
            chips,
        ])

    def _draw(self, ax):
        from .topology import allreduce_time

        tp, batch, prompt, hw_name = (c.value for c in self.controls)
        hw = self.hardware[hw_name]
        ax.set_title(f"{self.model.name} on {tp}x {hw.short_name}: batch {batch}, prompt {prompt}; "
                     "per GPU", fontsize=10)
        s = serve(self.model, hw, prompt_tokens=prompt, output_tokens=64, batch_size=batch, tp=tp)
        if s.fits is False:
            draw_roofline(ax, hw, "fp16")
            _message(ax, f"Does not fit on {tp}x {hw.short_name}: needs {fmt_bytes(s.memory_per_gpu_si)} "
                         f"per GPU, has {fmt_bytes(hw.memory_capacity_si)}. Add GPUs.", "C3")
            return (f"<b>Does not fit</b> on {tp}x {html.escape(hw.name)}: "
                    f"{fmt_bytes(s.memory_per_gpu_si)} per GPU &gt; {fmt_bytes(hw.memory_capacity_si)}."
                    f"<br>{_knobs_line(s.knobs)}")
        draw_roofline(ax, hw, "fp16", _points([("prefill", s.prefill), ("decode (mean step)", s.decode)]))
        comm = ""
        if tp > 1:
            d = self.model.config.d_model
            small, large = batch * d * 2, batch * prompt * d * 2
            comm = (f"<br>one AllReduce: decode {fmt_bytes(small)} in {fmt_time(allreduce_time(hw, small, tp))}, "
                    f"prefill {fmt_bytes(large)} in {fmt_time(allreduce_time(hw, large, tp))} "
                    f"(latency alone {fmt_time(allreduce_time(hw, 0.0, tp))}); {html.escape(s.interconnect)}")
        step = s.decode
        estimates = ""
        if tp > 1:
            named = [(name, serve(self.model, hw, prompt_tokens=prompt, output_tokens=64, batch_size=batch, tp=tp,
                                  allreduce=name).decode.latency_si)
                     for name in sorted(hw.allreduce_estimates)]
            if named:
                estimates = ("<br>estimates (a named AllReduce's measured latency, not overlapped): TPOT "
                             + ", ".join(f"{html.escape(n)} {fmt_time(t)}" for n, t in named))
        return (f"bound: TPOT <b>{fmt_time(step.latency_si)}</b> = max(compute {fmt_time(step.t_compute_si)}, memory "
                f"{fmt_time(step.t_memory_si)}, AllReduces {fmt_time(step.t_comm_si)}){estimates} &middot; TTFT "
                f"{fmt_time(s.prefill.latency_si)} (AllReduces {fmt_time(s.prefill.t_comm_si)}) &middot; "
                f"<b>{fmt_rate(batch / step.latency_si, 'tokens/s')}</b>, "
                f"{fmt_rate(batch / step.latency_si / tp, 'tokens/s')} per GPU{comm}"
                f"<br>memory per GPU {fmt_bytes(s.memory_per_gpu_si)}<br>{_knobs_line(s.knobs)}")


def scaling_explorer(model="Llama3_70B", hardware=("H100", "H200", "A100", "H100_PCIe", "MI300X"), *,
                     chip=None, tp=2, batch=1, prompt_tokens=512) -> ScalingExplorer:
    """Tensor-parallel GPUs, batch and prompt sliders and a chip dropdown over ``serve(tp=...)``:
    the per-GPU roofline of both phases, the AllReduce time split into latency and bytes, and
    tokens/s per GPU.

    >>> e = scaling_explorer(chip="H100", tp=8)
    >>> "per GPU" in e.numbers.value and "AllReduce" in e.numbers.value
    True
    """
    return ScalingExplorer(model, hardware, chip=chip, tp=tp, batch=batch, prompt_tokens=prompt_tokens)


class TrainingExplorer(_Explorer):
    """``training_explorer``'s widget: data-parallel GPUs, batch per GPU; the chip."""

    def __init__(self, model, hardware, chip=None, gpus=1, batch=32, optimizer="adam-mixed"):
        from .training import TRAINING_BYTES_PER_PARAM

        self.model = Models.get(model)
        if optimizer not in TRAINING_BYTES_PER_PARAM:
            raise CourseError(f"optimizer={optimizer!r}: expected one of {', '.join(sorted(TRAINING_BYTES_PER_PARAM))}.")
        self.optimizer = optimizer
        chips = self._chip_dropdown(hardware, chip)
        super().__init__([
            _slider([1, 2, 4, 8], gpus, "gpus", "GPUs (data parallel)", "GPUs"),
            _slider([2 ** i for i in range(0, 10)], batch, "batch", "batch per GPU", "samples"),
            chips,
        ])

    def _draw(self, ax):
        from types import SimpleNamespace

        from .training import data_parallel_step, state_bytes

        gpus, batch, hw_name = (c.value for c in self.controls)
        hw = self.hardware[hw_name]
        ax.set_title(f"{self.model.name} training on {gpus}x {hw.short_name}: batch {batch} per GPU, "
                     f"{self.optimizer}; per GPU", fontsize=10)
        bound = data_parallel_step(self.model, hw, batch, gpus, self.optimizer, overlap=True)
        step = bound["step"]
        draw_roofline(ax, hw, step.precision, _points([(
            "training step", SimpleNamespace(flops_si=step.flops, bytes_si=step.bytes, latency_si=step.seconds))]))
        named = ""
        if gpus > 1 and "nccl" in hw.allreduce_estimates:
            nccl = data_parallel_step(self.model, hw, batch, gpus, self.optimizer, overlap=False, allreduce="nccl")
            named = (f"<br>estimate (NCCL's measured latency, the AllReduce after the backward pass): step "
                     f"{fmt_time(nccl['seconds'])}, {fmt_rate(nccl['samples_per_second'], 'samples/s')}")
        held = state_bytes(self.model.parameters, self.optimizer)
        fits = "fits" if held <= hw.memory_capacity_si else "does not fit"
        backward = (f"max(backward {fmt_time(step.t_backward)}, gradient AllReduce {fmt_time(bound['t_allreduce'])} "
                    f"of {fmt_bytes(bound['grad_bytes'])})" if gpus > 1 else
                    f"backward {fmt_time(step.t_backward)} (one GPU: no AllReduce)")
        return (f"bound: step <b>{fmt_time(bound['seconds'])}</b> = forward {fmt_time(step.t_forward)} + "
                f"{backward} + update {fmt_time(step.t_update)} &middot; "
                f"<b>{fmt_rate(bound['samples_per_second'], 'samples/s')}</b>, "
                f"{fmt_rate(bound['samples_per_second'] / gpus, 'samples/s')} per GPU{named}"
                f"<br>weights, gradients and optimizer state {fmt_bytes(held)} per GPU ({fits} in "
                f"{fmt_bytes(hw.memory_capacity_si)}; activations not counted)"
                f'<br><span style="color:#666">pure roofline: max(FLOPs/peak, bytes/bandwidth) per pass; '
                f"no efficiency or overhead knobs</span>")


def training_explorer(model="ResNet18", hardware=("A100", "V100", "H100"), *, chip=None, gpus=1, batch=32,
                      optimizer="adam-mixed") -> TrainingExplorer:
    """Data-parallel GPUs and batch-per-GPU sliders and a chip dropdown over
    ``course_lib.training.data_parallel_step``: the training step on the chip's roofline, its
    forward, backward and update times, the gradient AllReduce overlapped with the backward pass
    (the bound) beside NCCL's measured latency added after it (an estimate), and samples/s.

    >>> e = training_explorer(chip="A100", gpus=4, batch=16)
    >>> "AllReduce" in e.numbers.value and "samples/s" in e.numbers.value
    True
    """
    return TrainingExplorer(model, hardware, chip=chip, gpus=gpus, batch=batch, optimizer=optimizer)
