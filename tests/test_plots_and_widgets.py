"""Pictures and widgets: the roofline chart's content, no global state, explorer updates."""
import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from course_lib import Hardware, Models, plot_roofline, serve, solve  # noqa: E402


def test_roofline_chart_has_ceilings_ridge_and_points():
    before = dict(matplotlib.rcParams)
    p = solve(Models.ResNet50, Hardware.A100, batch_size=np.array([1, 8, 64]))
    fig, ax = plot_roofline([Hardware.A100, Hardware.H100], workloads=[p], precision="fp16")
    assert dict(matplotlib.rcParams) == before
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    roof = ax.lines[0]
    assert max(roof.get_ydata()) == pytest.approx(312)            # flat roof in TFLOP/s
    ridge_lines = [l for l in ax.lines if l.get_linestyle() == ":"]
    assert ridge_lines[0].get_xdata()[0] == pytest.approx(312e12 / 2.039e12)
    pts = ax.lines[-1]
    assert np.allclose(pts.get_xdata(), p.flops_si / p.bytes_si)
    assert np.allclose(pts.get_ydata(), p.flops_si / p.latency_si / 1e12)
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_a_chip_outside_the_zoo_is_named_in_ridge_labels_and_text():
    """Lesson 5 draws the measured machine next to the laptop CPU: its ridge label read
    "None ridge 10.1" (a chip outside the zoo has no key)."""
    import matplotlib.pyplot as plt

    from course_lib.alt_text import figure_text

    from course_lib import Q_

    mine = Hardware("This machine (2 threads)", {"fp32": Q_(260, "GFLOP/s")}, Q_(26, "GB/s"))
    p = solve(Models.ResNet50, mine, batch_size=1, precision="fp32")
    fig, ax = plot_roofline([mine, Hardware.LaptopCPU], workloads=[p], precision="fp32")
    labels = [t.get_text() for t in ax.texts if "ridge" in t.get_text()]
    assert labels[0].startswith("This machine ridge") and labels[1].startswith("LaptopCPU ridge"), labels
    text = figure_text(fig)
    assert "None" not in " ".join(labels) + text.alt + repr(text.tables), text.alt
    plt.close(fig)


def test_plot_refuses_a_missing_precision():
    from course_lib import PrecisionError
    with pytest.raises(PrecisionError):
        plot_roofline(Hardware.V100, precision="int8")


def test_explorers_redraw_on_change():
    from course_lib.widgets import roofline_explorer, serving_explorer
    e = roofline_explorer("ResNet50", ("A100", "H100"))
    first = e.image.value
    e.controls[0].value = 256
    assert e.image.value != first and "batch 256" in e.numbers.value
    e.controls[2].value = "int4"            # H100 has no int4: the widget says so, no crash
    e.controls[1].value = "NVIDIA H100 SXM5 80GB"
    assert "PrecisionError" in e.numbers.value
    s = serving_explorer("Llama3_8B", ("H100",))
    first = s.image.value
    s.controls[0].value = 128               # 128 x 2,176 tokens of KV cache fit beside the weights
    assert s.image.value != first
    assert "TTFT" in s.numbers.value and s.last_update_ms is not None


# ---- markers that coincide are nested and named, not hidden -------------------------------
def _marker_lines(ax):
    """The workload lines (markers), in drawing order."""
    return [l for l in ax.lines if l.get_marker() not in (None, "None", "")]


def _display_points(ax, line):
    """Marker centres in points (1/72 inch) on the rendered figure."""
    xy = ax.transData.transform(np.column_stack(line.get_data()))
    return xy * 72.0 / ax.figure.dpi


def test_coinciding_points_are_nested_and_named():
    """Notebook 1's chart: batch 64 and 512 both sit at the ridge."""
    import matplotlib.pyplot as plt

    rn50 = Models.ResNet50
    fig, ax = plot_roofline(Hardware.A100, workloads=[solve(rn50, Hardware.A100, batch_size=b)
                                                      for b in (1, 8, 64, 512)])
    lines = {l.get_label(): l for l in _marker_lines(ax)}
    b64, b512 = lines["ResNet50, batch 64"], lines["ResNet50, batch 512"]
    gap = np.hypot(*(_display_points(ax, b64)[0] - _display_points(ax, b512)[0]))
    assert gap < b512.get_markersize(), "premise: the two markers land on the same spot"
    # the earlier marker is larger and underneath: it shows as a ring around the later one
    assert b64.get_markersize() >= b512.get_markersize() + 3
    assert b64.get_zorder() < b512.get_zorder()
    callouts = [t.get_text() for t in ax.texts if "batch 64" in t.get_text()]
    assert callouts and "ResNet50, batch 512" in callouts[0]
    # batch 1 is far from the rest: normal size, in no callout
    assert lines["ResNet50, batch 1"].get_markersize() == min(l.get_markersize() for l in lines.values())
    assert not any("batch 1\n" in t.get_text() or t.get_text().endswith("batch 1") for t in ax.texts)
    plt.close(fig)


def test_overlapping_sweeps_are_told_apart():
    """Notebook 3's chart: two decode sweeps share their small-batch points."""
    import matplotlib.pyplot as plt

    m, hw = Models.Llama3_8B, Hardware.H100
    batches = np.array([1, 4, 16, 64, 256, 1024])
    fig, ax = plot_roofline(hw, workloads=[
        ("decode, context 64", solve(m, hw, batch_size=batches, context_tokens=64)),
        ("decode, context 2048", solve(m, hw, batch_size=batches, context_tokens=2048))])
    short, long_ = _marker_lines(ax)
    gap = np.hypot(*(_display_points(ax, short)[0] - _display_points(ax, long_)[0]))
    assert gap < long_.get_markersize(), "premise: batch 1 of both sweeps lands on the same spot"
    assert short.get_markersize() > long_.get_markersize()
    assert short.get_linestyle() != long_.get_linestyle()
    roof = ax.lines[0]
    assert short.get_linestyle() != roof.get_linestyle(), "a sweep on the slope must not hide it"
    notes = [t.get_text() for t in ax.texts if "coincide" in t.get_text()]
    assert len(notes) == 1 and "decode, context 64" in notes[0] and "decode, context 2048" in notes[0]
    assert "batch 1–" in notes[0]
    plt.close(fig)


def test_separate_points_get_no_callout():
    import matplotlib.pyplot as plt

    fig, ax = plot_roofline([Hardware.A100, Hardware.H100], workloads=[
        solve(Models.ResNet50, Hardware.A100, batch_size=1),
        solve(Models.Llama3_8B, Hardware.A100, batch_size=1)])
    ridges = [f"{h.key} ridge {h.ridge_point_si('fp16'):.0f}" for h in (Hardware.A100, Hardware.H100)]
    assert [t.get_text() for t in ax.texts] == ridges     # each ridge names its chip, not colour alone
    sizes = {l.get_markersize() for l in _marker_lines(ax)}
    assert len(sizes) == 1
    plt.close(fig)


def test_callouts_stay_inside_the_axes():
    import matplotlib.pyplot as plt

    A100, llama = Hardware.A100, Models.Llama3_8B
    points = [(f"batch 512, {wp} weights", serve(llama, A100, prompt_tokens=128, output_tokens=128,
                                                 batch_size=512, weight_precision=wp).decode)
              for wp in ("fp16", "int8", "int4")]
    fig, ax = plot_roofline(A100, workloads=points)
    r = fig.canvas.get_renderer()
    inner = ax.get_window_extent(r)
    callouts = [t for t in ax.texts if "weights" in t.get_text()]
    assert callouts
    for t in callouts:
        box = t.get_window_extent(r)
        assert inner.x0 <= box.x0 and box.x1 <= inner.x1 and inner.y0 <= box.y0 and box.y1 <= inner.y1
    plt.close(fig)


# ---- the explorers: sharp charts, readable numbers, honest "does not fit" ------------------
def _png_size(data: bytes):
    import io

    from PIL import Image
    return Image.open(io.BytesIO(data)).size


def test_explorer_chart_is_rendered_at_twice_its_displayed_size():
    from course_lib.widgets import CHART_WIDTH_PX, PIXEL_RATIO, roofline_explorer
    e = roofline_explorer("ResNet50", ("A100",))
    width, height = _png_size(e.image.value)
    assert e.image.width_px == CHART_WIDTH_PX      # CSS px; the chart's img has max-width 100%
    assert width == CHART_WIDTH_PX * PIXEL_RATIO >= 1600
    assert 0.4 < height / width < 0.7


EXPONENT = re.compile(r"\d[eE][+-]?\d")


def test_explorer_numbers_have_units_and_no_exponents(monkeypatch):
    import course_lib.widgets as widgets
    from course_lib.widgets import roofline_explorer, serving_explorer
    # the numbers panel of every setting, not its chart: no PNG rendered on each of the ~70
    # redraws (~90% of their time; the charts are checked by the tests around this one)
    monkeypatch.setattr(widgets, "_render", lambda canvas: b"")
    e = roofline_explorer("ResNet50", ("V100", "A100", "H100"))
    for chip in e.controls[1].options:
        e.controls[1].value = chip
        for b in e.controls[0].options:
            e.controls[0].value = b
            assert not EXPONENT.search(e.numbers.value), e.numbers.value
            assert "images/s" in e.numbers.value and re.search(r"\d (ms|µs|s)\b", e.numbers.value)
    s = serving_explorer("Llama3_8B", ("A100", "H100"))
    for b in (1, 64, 512):
        s.controls[0].value = b
        for prompt in s.controls[1].options:
            s.controls[1].value = prompt
            assert not EXPONENT.search(s.numbers.value), s.numbers.value
            assert re.search(r"\d (kB|MB|GB|TB)\b", s.numbers.value)


def test_llm_roofline_explorer_counts_tokens():
    from course_lib.widgets import roofline_explorer
    e = roofline_explorer("Llama3_8B", ("A100", "H100"), chip="H100", batch=16)
    p = solve(Models.Llama3_8B, Hardware.H100, batch_size=16)
    assert "tokens/s" in e.numbers.value and "sequences/s" not in e.numbers.value
    assert f"{p.throughput.m:,.0f} tokens/s" in e.numbers.value


def test_serving_explorer_opens_on_the_lessons_configuration():
    from course_lib.formatting import fmt_time
    from course_lib.widgets import serving_explorer
    e = serving_explorer("Llama3_8B", ("A100", "H100", "H200"), chip="H100",
                         prompt_tokens=2048, output_tokens=128)
    s = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=2048, output_tokens=128)
    assert e.controls[3].value == Hardware.H100.name
    assert f"TTFT <b>{fmt_time(s.prefill.latency_si)}</b>" in e.numbers.value
    assert f"TPOT <b>{fmt_time(s.decode.latency_si)}</b>" in e.numbers.value
    odd = serving_explorer("Llama3_8B", ("H100",), batch=3, prompt_tokens=1000)
    assert (odd.controls[0].value, odd.controls[1].value) == (3, 1000)   # added to the slider


def test_explorer_refuses_a_chip_it_does_not_show():
    from course_lib import CourseError
    from course_lib.widgets import roofline_explorer, serving_explorer
    with pytest.raises(CourseError, match="H200"):
        roofline_explorer("ResNet50", ("A100", "V100"), chip="H200")
    with pytest.raises(CourseError, match="positive whole number"):
        serving_explorer("Llama3_8B", ("H100",), batch=0)
    with pytest.raises(CourseError, match="LLM"):
        serving_explorer("ResNet50", ("H100",))


def test_a_configuration_that_does_not_fit_is_not_plotted():
    from course_lib.widgets import serving_explorer
    e = serving_explorer("Llama3_8B", ("H100",))
    e.controls[0].value, e.controls[1].value = 512, 32768
    s = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=32768, output_tokens=128, batch_size=512)
    assert s.fits is False, "premise: this batch does not fit on an 80 GB chip"
    assert "Does not fit" in e.numbers.value and "TTFT" not in e.numbers.value
    assert f"at most {s.max_batch_size} sequences" in e.numbers.value
    assert not _marker_lines(e._ax), "nothing may be plotted as if it ran"
    assert any("Does not fit" in t.get_text() for t in e._ax.texts)
    e.controls[0].value = 1
    assert "TTFT" in e.numbers.value and len(_marker_lines(e._ax)) == 2


def test_llm_weights_that_do_not_fit_are_not_plotted():
    from course_lib.widgets import roofline_explorer
    e = roofline_explorer("Llama3_70B", ("H100", "B200"))
    assert Models.Llama3_70B.weight_bytes("fp16") > Hardware.H100.memory_capacity_si, "premise"
    assert "Does not fit" in e.numbers.value and not _marker_lines(e._ax)
    e.controls[1].value = Hardware.B200.name             # 192 GB: it fits
    assert "Does not fit" not in e.numbers.value and len(_marker_lines(e._ax)) == 1


def test_error_text_stays_inside_the_chart():
    from course_lib.widgets import roofline_explorer
    e = roofline_explorer("ResNet50", ("A100", "H100"), precision="int4")
    e.controls[1].value = Hardware.H100.name              # no int4 on the H100
    assert "PrecisionError" in e.numbers.value
    fig = e._ax.figure
    r = e._canvas.get_renderer()
    (msg,) = [t for t in e._ax.texts if "PrecisionError" in t.get_text()]
    box = msg.get_window_extent(r)
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1, "the message is clipped at the image edge"


def test_explorer_titles_fit_in_the_chart():
    from course_lib.widgets import roofline_explorer, serving_explorer
    longest = serving_explorer("Llama3_8B", ("H200",), batch=512, prompt_tokens=32768,
                               output_tokens=4096, weight_precision="int4", kv_precision="int8")
    llm = roofline_explorer("Llama3_70B", ("B200",), batch=1024)
    for e in (longest, llm):
        r = e._canvas.get_renderer()
        box = e._ax.title.get_window_extent(r)
        fig = e._ax.figure.bbox
        assert e._ax.get_title() and fig.x0 <= box.x0 and box.x1 <= fig.x1, e._ax.get_title()


def test_integer_peaks_are_in_tops_and_small_peaks_keep_their_prefix():
    from matplotlib.figure import Figure

    from course_lib.measure.result import example
    from course_lib.plots import draw_roofline

    ax = Figure().add_subplot()
    draw_roofline(ax, [Hardware.A100, Hardware.H100], "int8")
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert all("TOP/s int8" in l and "FLOP" not in l for l in labels), labels
    assert "OP/byte" in ax.get_xlabel() and "FLOP" not in ax.get_xlabel() + ax.get_ylabel()
    ax = Figure().add_subplot()
    draw_roofline(ax, example(), "fp64")          # a CPU: tens of GFLOP/s
    (label,) = [t.get_text() for t in ax.get_legend().get_texts()]
    assert re.search(r"\d GFLOP/s fp64, \d[\d.]* GB/s", label) and "e-" not in label, label


def test_scaling_explorer_shows_the_tensor_parallel_step_and_refuses_what_does_not_fit(monkeypatch):
    """Lesson 6's explorer: opens where it is told, its TPOT is serve(tp=...)'s, it redraws on the
    GPUs slider, says "does not fit" for Llama-3-70B on one H100, and prints no exponents."""
    import course_lib.widgets as widgets
    from course_lib.formatting import fmt_time
    from course_lib.widgets import scaling_explorer

    e = scaling_explorer("Llama3_70B", chip="H200", tp=2, batch=1, prompt_tokens=512)
    assert (e.controls[0].value, e.controls[1].value, e.controls[2].value) == (2, 1, 512)
    assert e.controls[3].value == Hardware.H200.name
    s = serve(Models.Llama3_70B, Hardware.H200, prompt_tokens=512, output_tokens=64, tp=2)
    assert f"TPOT <b>{fmt_time(s.decode.latency_si)}</b>" in e.numbers.value
    assert "per GPU" in e.numbers.value and "one AllReduce" in e.numbers.value
    first = e.image.value
    e.controls[0].value = 8
    assert e.image.value != first
    monkeypatch.setattr(widgets, "_render", lambda canvas: b"")
    e.controls[3].value = Hardware.H100.name
    e.controls[0].value = 1
    assert "Does not fit" in e.numbers.value
    for tp in (2, 4, 8):
        e.controls[0].value = tp
        for chip in e.controls[3].options:
            e.controls[3].value = chip
            assert not EXPONENT.search(e.numbers.value), e.numbers.value


def test_training_explorer_follows_its_sliders_and_says_what_is_an_estimate():
    from course_lib.widgets import training_explorer

    e = training_explorer("ResNet50", ("V100", "H100"), chip="H100", gpus=1, batch=64)
    one = e.numbers.value
    assert "one GPU: no AllReduce" in one and "estimate" not in one and e.image.alt
    e.controls[0].value = 8                       # eight GPUs: the AllReduce appears, overlapped and not
    eight = e.numbers.value
    assert "gradient AllReduce" in eight and "estimate (NCCL" in eight and eight != one
    e.controls[2].value = e.controls[2].options[0]   # the V100: no NCCL figure of its own, no estimate
    assert "V100" in e.image.alt and "estimate (NCCL" not in e.numbers.value
    from course_lib.errors import CourseError

    with pytest.raises(CourseError, match="optimizer"):
        training_explorer(optimizer="lamb")
