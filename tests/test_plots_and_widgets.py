"""Pictures and widgets: the roofline chart's content, no global state, explorer updates."""
import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from course_lib import Hardware, Models, plot_roofline, solve  # noqa: E402


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
    s.controls[0].value = 512
    assert "TTFT" in s.numbers.value and s.last_update_ms is not None
