"""WCAG 2.1 AA for the course's own content (issue 21).

* Each figure's text alternative names the numbers it plots, computed here with course_lib, so
  a change in the data changes the text (rooflines, sweeps, the explorers' live charts, lesson
  5's measured charts, and any chart a notebook draws by hand).
* Colour is never the only carrier: chips, workloads and memory levels differ in line style or
  marker too; the ridge labels name their chip.
* Every notebook's headings are in order and its tables have header rows.
* In the browser (marked `browser`, Debian's chromium, axe-core from npm): a feedback page and
  the instructor's report have no WCAG 2 A/AA violation. The lessons themselves are checked
  after Run All in tests/test_browser.py, with the explorers' keyboard operation.
"""
from __future__ import annotations

import html
import re
from pathlib import Path

import matplotlib
import nbformat
import numpy as np
import pytest

matplotlib.use("Agg")

from course_lib import Hardware, Models, plot_roofline, serve, solve  # noqa: E402
from course_lib.alt_text import figure_text  # noqa: E402
from course_lib.formatting import fmt_per_second, fmt_sig  # noqa: E402
from course_lib.figure_display import figure_html  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


# ---- text alternatives written from the data ----------------------------------------------------
@pytest.mark.parametrize("chip,model,batch", [("A100", "ResNet50", 1), ("H100", "ResNet50", 1),
                                              ("A100", "Llama3_8B", 16)])
def test_roofline_alt_text_names_the_numbers_it_plots(chip, model, batch):
    hw = Hardware.get(chip)
    p = solve(Models.get(model), hw, batch_size=batch, precision="fp16")
    fig, _ = plot_roofline(hw, workloads=[p])
    alt = figure_text(fig).alt
    ridge = hw.ridge_point_si("fp16")
    intensity = p.flops_si / p.bytes_si
    share = (p.flops_si / p.latency_si) / hw.peak_flops_si("fp16")
    for expected in (hw.name, f"ridge at {fmt_sig(ridge)} FLOP/byte", f"intensity {fmt_sig(intensity)} FLOP/byte",
                     p.bottleneck, f"{share:.0%} of the compute roof",
                     fmt_per_second(hw.peak_flops_si("fp16"), "FLOP/s"),
                     fmt_per_second(hw.memory_bandwidth_si, "B/s")):
        assert expected in alt, f"{expected!r} is not in the alt text:\n{alt}"


def test_a_point_is_measured_against_its_own_precisions_roof():
    p = solve(Models.ResNet50, Hardware.A100, precision="fp32")
    fig, _ = plot_roofline("A100", workloads=[p])          # the chart draws the fp16 roof
    share = (p.flops_si / p.latency_si) / Hardware.A100.peak_flops_si("fp32")
    assert f"at {share:.0%} of the compute roof (fp32)" in figure_text(fig).alt


def test_a_sweep_is_summarized_in_words_and_given_whole_in_a_table():
    batches = 2 ** np.arange(0, 13)
    sweep = solve(Models.ResNet50, Hardware.A100, batch_size=batches)
    fig, _ = plot_roofline([Hardware.A100, Hardware.H100], workloads=[("sweep", sweep)])
    text = figure_text(fig)
    x = sweep.arithmetic_intensity.m
    assert f"from {fmt_sig(x[0])} to {fmt_sig(x[-1])} FLOP/byte" in text.alt
    assert f"ridge at {fmt_sig(Hardware.H100.ridge_point_si('fp16'))}" in text.alt    # both chips
    regimes = set(sweep.bottleneck)
    assert all(r in text.alt for r in regimes)
    (table,) = text.tables
    assert table.header[:3] == ["workload", "batch", "intensity (FLOP/byte)"]
    assert [row[1] for row in table.rows] == [str(b) for b in batches]
    assert [row[2] for row in table.rows] == [fmt_sig(v) for v in x]
    assert [row[4] for row in table.rows] == list(sweep.bottleneck)


def test_serving_phases_on_one_chart_are_both_described():
    s = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=2048, output_tokens=128)
    fig, _ = plot_roofline(Hardware.H100, workloads=[("prefill", s.prefill), ("decode", s.decode)])
    alt = figure_text(fig).alt
    for name, phase in (("prefill", s.prefill), ("decode", s.decode)):
        assert f"{name}: intensity {fmt_sig(phase.flops_si / phase.bytes_si)} FLOP/byte" in alt
        assert phase.bottleneck in alt


def test_a_chart_drawn_by_hand_is_described_from_its_lines_and_labels():
    import matplotlib.pyplot as plt

    batches = 2 ** np.arange(0, 5)
    sweep = solve(Models.ResNet50, Hardware.A100, batch_size=batches)
    fig, ax = plt.subplots()
    ax.loglog(batches, sweep.latency.to("ms").m, "o-", label="latency")
    ax.axhline(3.0, label="a ceiling")
    ax.annotate("batch 1", (1, sweep.latency.to("ms").m[0]))
    ax.set(xlabel="batch size", ylabel="latency (ms)", title="ResNet-50 on A100")
    alt = figure_text(fig).alt
    assert "ResNet-50 on A100" in alt and "batch size, log scale" in alt
    first = sweep.latency.to("ms").m[0]
    assert f"(1, {first:.3g})" in alt
    assert "a ceiling: a horizontal line at latency (ms) = 3" in alt
    assert "Labels on the chart: batch 1" in alt


def test_axes_cleared_and_reused_are_described_by_what_they_now_show():
    fig, ax = plot_roofline("A100", workloads=[solve(Models.ResNet50, Hardware.A100)])
    ax.clear()
    ax.plot([1, 2], [5, 7], label="by hand")
    alt = figure_text(fig).alt
    assert "ridge" not in alt and "by hand: (1, 5), (2, 7)." in alt, alt


def test_the_figure_html_carries_the_alt_text_and_a_table_with_headers():
    p = solve(Models.ResNet50, Hardware.A100, batch_size=np.array([1, 8, 64]))
    fig, _ = plot_roofline(Hardware.A100, workloads=[("sweep", p)])
    page = figure_html(fig)
    alt = re.search(r'<img src="data:image/png;base64,[^"]+" alt="([^"]*)"', page).group(1)
    assert html.unescape(alt) == figure_text(fig).alt
    assert page.count('<th scope="col">') == 6 and "<caption>" in page
    assert page.count("<tr>") == 1 + 3            # the header and one row per batch


def test_figures_shown_in_ipython_carry_their_html_form():
    from IPython.core.interactiveshell import InteractiveShell

    from course_lib.figure_display import enable

    ip = InteractiveShell.instance()
    try:
        assert enable()
        fig, _ = plot_roofline("A100")
        data, _ = ip.display_formatter.format(fig)
        assert 'alt="Roofline' in data["text/html"]      # the inline backend adds the PNG beside it
    finally:
        InteractiveShell.clear_instance()


def test_the_explorers_chart_text_follows_every_redraw():
    from course_lib.widgets import roofline_explorer, serving_explorer

    e = roofline_explorer("ResNet50", ("A100", "H100"), chip="A100", batch=1)
    for batch in (1, 64, 512):
        e.controls[0].value = batch
        p = solve(Models.ResNet50, Hardware.A100, batch_size=batch)
        assert f"intensity {fmt_sig(p.flops_si / p.bytes_si)} FLOP/byte" in e.image.alt, e.image.alt
        assert f"batch {batch}" in e.image.alt and p.bottleneck in e.image.alt
    e.controls[1].value = Hardware.H100.name
    assert f"ridge at {fmt_sig(Hardware.H100.ridge_point_si('fp16'))}" in e.image.alt
    s = serving_explorer("Llama3_8B", ("A100",), batch=1)
    s.controls[0].value = 512                        # does not fit: the chart says so in words
    assert "Does not fit" in s.image.alt


def test_the_explorers_controls_are_named():
    from course_lib.accessible_widgets import LabelledSlider
    from course_lib.widgets import roofline_explorer, serving_explorer

    for e in (roofline_explorer("ResNet50"), serving_explorer("Llama3_8B")):
        sliders = [c for c in e.controls if isinstance(c, LabelledSlider)]
        assert sliders and all(c.description.strip() for c in e.controls)
    with pytest.raises(Exception, match="must be one of"):
        sliders[0].value = 3                       # not one of the slider's values: refused


def test_measured_charts_name_their_levels_and_kernels():
    from course_lib.measure.result import example

    hw = example()
    fig, _ = hw.plot()
    text = figure_text(fig)
    for lv in hw.resolved_levels:
        assert f"{lv.name} {fmt_per_second(lv.bandwidth, 'B/s')}" in text.alt
        assert [lv.name, fmt_per_second(lv.bandwidth, "B/s"),
                fmt_sig(hw.peak_flops_si("fp64") / lv.bandwidth)] in text.tables[0].rows
    for run in hw.runs.values():
        if run.precision == "fp64" and not run.key.startswith("peak_"):
            assert f"{run.name}: intensity {fmt_sig(run.intensity)} FLOP/byte" in text.alt
    fig, _ = hw.plot_sweep()
    text = figure_text(fig)
    assert all(f"{lv.name} {fmt_per_second(lv.bandwidth, 'B/s')}" in text.alt for lv in hw.levels.values()
               if lv.points)
    assert [len(t.rows) for t in text.tables] == ([len(hw.sweep)] if hw.sweep else [])


# ---- colour is never the only carrier ----------------------------------------------------------
def test_chips_and_workloads_differ_by_more_than_colour():
    fig, ax = plot_roofline([Hardware.A100, Hardware.H100, Hardware.H200], workloads=[
        solve(Models.ResNet50, Hardware.A100), solve(Models.Llama3_8B, Hardware.A100)])
    ceilings = [line for line in ax.get_lines() if line.get_label().startswith("NVIDIA")]
    assert len({repr(line._unscaled_dash_pattern) for line in ceilings}) == 3      # three line styles
    markers = [line.get_marker() for line in ax.get_lines() if line.get_label().startswith(("ResNet", "Llama"))]
    assert len(set(markers)) == 2
    labels = [t.get_text() for t in ax.texts]
    assert all(any(h.key in t for t in labels) for h in (Hardware.A100, Hardware.H100, Hardware.H200))


def test_memory_levels_differ_by_line_style():
    from course_lib.measure.result import example

    _, ax = example().plot()
    levels = [line for line in ax.get_lines() if re.match(r"(L\d|DRAM):", line.get_label())]
    assert len(levels) >= 3 and len({repr(line._unscaled_dash_pattern) for line in levels}) == len(levels)


# ---- the notebooks read well aloud ---------------------------------------------------------------
NOTEBOOKS = sorted((REPO / "notebooks").glob("*/*.ipynb"))


def _markdown_lines(nb):
    for c in nb.cells:
        if c.cell_type != "markdown":
            continue
        fenced = False
        for line in c.source.splitlines():
            if line.lstrip().startswith("```"):
                fenced = not fenced
            elif not fenced:
                yield line


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_headings_are_in_order(path):
    levels = [len(m.group(1)) for line in _markdown_lines(nbformat.read(path, as_version=4))
              if (m := re.match(r"(#{1,6})\s", line))]
    assert levels and levels[0] == 1 and levels.count(1) == 1, f"{path.name}: one h1 first: {levels}"
    jumps = [(a, b) for a, b in zip(levels, levels[1:]) if b > a + 1]
    assert not jumps, f"{path.name}: headings skip a level: {jumps}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.parent.name)
def test_tables_have_header_rows(path):
    lines = list(_markdown_lines(nbformat.read(path, as_version=4)))
    for i, line in enumerate(lines):
        if re.fullmatch(r"\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*", line):
            header = [h.strip() for h in lines[i - 1].strip().strip("|").split("|")]
            assert i > 0 and all(header), f"{path.name}: a table without a full header row: {lines[i - 1]!r}"


# ---- in the browser: the feedback page and the report --------------------------------------------
@pytest.fixture(scope="module")
def graded_tiny(tmp_path_factory):
    """The tiny course's t3 (course_lib's checks) graded for a right, a wrong and a blank
    student (whose feedback shows tracebacks), each explore cell drawing a roofline; then its
    feedback pages and the report."""
    from autograder.intake.collect import collect
    from autograder.course import Course
    from autograder.outputs.feedback import feedback
    from autograder.grading.grade import grade
    from autograder.outputs.report import report
    from autograder.sandbox.bwrap import Limits
    from tiny_course import SANDBOX_ARG, make_course, student_nb, write_class

    base = tmp_path_factory.mktemp("a11y")
    course = make_course(base / "tiny")
    c = Course(root=base / "course", source=course.source, release=course.release)
    draw = "from course_lib import plot_roofline\nfig, ax = plot_roofline('A100')"
    q1 = "from course_lib import Q_\nq1_time = Q_(7.36, 'ms')\nq1_regime = 'memory-bound'"
    src = write_class(base / "in", course, "t3", {
        "right": {"units.ipynb": student_nb(course, "t3", "units", explore=draw, answers={
            "_q1_answer": q1, "_q2_answer": "from course_lib import Q_\nq2_bytes = Q_(16, 'GB')"})},
        "wrong": {"units.ipynb": student_nb(course, "t3", "units", explore=draw, answers={
            "_q1_answer": q1, "_q2_answer": "from course_lib import Q_\nq2_bytes = Q_(16, 'GiB')"})},
        "blank": {"units.ipynb": student_nb(course, "t3", "units", answers={}, explore=draw)},
    })
    collect(c, "t3", src)
    grade(c, "t3", limits=Limits(cell_timeout=30, notebook_timeout=120, memory_mb=2048, tasks=64),
          progress=False, sandbox=SANDBOX_ARG)
    # "wrong" handed in two days late under a 10%-a-day policy: its page has the late-penalty line
    # (issue 47: 4.2:1 contrast), which feedback takes from the score as it is
    import datetime as dt


    from autograder.grading import deadlines, late

    due = dt.datetime(2027, 2, 1, 23, 59, tzinfo=dt.timezone.utc)
    deadlines.set_due(c, "t3", due)
    late.write(c.root, late.LatePolicy(10))
    with c.gradebook() as gb:
        gb.find_submission("t3", "wrong").timestamp = (due + dt.timedelta(days=1, hours=2)).replace(tzinfo=None)
        gb.db.commit()
    pages = feedback(c, "t3")
    assert "Late submission penalty" in Path(next(p for p in pages["written"] if "/wrong/" in str(p))).read_text()
    assert pages["written"] and not pages["failed"], pages
    out = report(c, "t3")
    return pages["written"], Path(out["dir"]) / "report.html"


@pytest.fixture(scope="module")
def chromium_page():
    from test_browser import CHROMIUM, MISSING, sync_playwright
    if MISSING:
        pytest.skip(MISSING)
    import os

    pw = sync_playwright().start()
    browser = pw.chromium.launch(executable_path=CHROMIUM,
                                 args=["--no-sandbox"] if os.geteuid() == 0 else [])
    # the feedback page's Content-Security-Policy (issue 16) forbids inline scripts, axe-core's
    # injection included: the test's browser alone bypasses it
    page = browser.new_context(bypass_csp=True).new_page()
    yield page
    browser.close()
    pw.stop()


@pytest.mark.browser
def test_feedback_pages_pass_axe(graded_tiny, chromium_page):
    from axe_check import axe_violations, describe

    pages, _ = graded_tiny
    for path in pages:
        chromium_page.goto(Path(path).as_uri())
        assert chromium_page.locator("img[alt^='Roofline']").count() >= 1, f"{path}: the figure has no alt text"
        violations = axe_violations(chromium_page, ["html"])
        assert not violations, f"{path}: axe-core finds WCAG 2 A/AA violations:\n{describe(violations)}"


@pytest.mark.browser
def test_the_report_passes_axe(graded_tiny, chromium_page):
    from axe_check import axe_violations, describe

    _, page = graded_tiny
    chromium_page.goto(page.as_uri())
    text = chromium_page.inner_text("body")
    assert "Scores per notebook" in text and "Answers per question" in text
    # the page an instructor opens (issue 34): a row per student, a row per question
    students = chromium_page.eval_on_selector_all(
        "#students + table tbody th[scope=row]", "els => els.map(e => e.textContent)")
    assert students == ["blank", "right", "wrong"], students
    questions = chromium_page.eval_on_selector_all("#questions + table tbody tr",
                                                   "els => els.map(e => e.cells[1].textContent)")
    assert [q.split(":")[0] for q in questions] == ["t3units_q1", "t3units_q2"], questions
    # the GiB slip is a labelled misconception of Q2, matched by the wrong student
    assert "gib-vs-gb (1)" in chromium_page.inner_text("#questions + table"), text
    alts = chromium_page.eval_on_selector_all("img", "els => els.map(i => i.alt)")
    assert len(alts) == 2 and all(a.strip() for a in alts), alts
    # the charts' text is written from the report's own rows: every answer and its count
    import csv
    rows = list(csv.DictReader(open(page.with_name("misconceptions.csv"), encoding="utf-8")))
    assert rows
    for r in rows:
        truth = " (the truth)" if r["is_truth"] == "True" else ""
        assert f"{r['answer']}{truth}: {r['count']}" in alts[1], (r, alts[1])
    assert "3 students" in alts[0], alts[0]
    violations = axe_violations(chromium_page, ["html"])
    assert not violations, f"{page}: axe-core finds WCAG 2 A/AA violations:\n{describe(violations)}"


@pytest.mark.browser
def test_the_course_page_passes_axe(graded_tiny, chromium_page):
    from axe_check import axe_violations, describe

    _, page = graded_tiny
    index = page.parent.parent / "index.html"
    chromium_page.goto(index.as_uri())
    rows = chromium_page.eval_on_selector_all("tbody th[scope=row]", "els => els.map(e => e.textContent)")
    assert rows == ["blank", "right", "wrong", "mean"], rows
    chromium_page.click("text=t3")                     # each assignment's column links to its report
    assert chromium_page.url == page.as_uri()
    chromium_page.goto(index.as_uri())
    violations = axe_violations(chromium_page, ["html"])
    assert not violations, f"{index}: axe-core finds WCAG 2 A/AA violations:\n{describe(violations)}"
