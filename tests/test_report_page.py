"""The report page's rendering (autograder.outputs.report_html) from rows made here: whatever a
student supplied is shown as text, only predictions that changed are listed as changed, and the
regrade log reads as words. The page from a graded class is tests/test_term_grading.py and, in
Chromium with axe-core, tests/test_accessibility.py."""
from __future__ import annotations

from autograder.integrity.predictions import Rule
from autograder.outputs.report import PredictionRow, _ratio
from autograder.outputs.report_html import write_course_html, write_report_html
from autograder.outputs.report_tables import CourseCell, QuestionStats, StudentRow, describe_state

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def _page(tmp_path, **kw):
    path = write_report_html(tmp_path, "a1", [], kw.pop("changes", []), {}, **kw)
    return path.read_text()


def test_student_supplied_text_is_escaped_everywhere(tmp_path):
    copy = {"student": "bob", "question": "hello_q2", "variable": "q2_ridge", "answer": HOSTILE,
            "own_variant": "A100", "matches": "another student's answer", "evidence": HOSTILE}
    page = _page(tmp_path, students=[StudentRow("bob", name=HOSTILE, score=3, max_score=4, copies=[copy],
                                                flags=[HOSTILE])],
                 questions=[QuestionStats("nb", "hello_q2", HOSTILE, 2, 1, 1.0, 0.0, 1, 1, 0.0, 0, [HOSTILE])],
                 copies=[copy], regrades=[{"student": "bob", "cell": HOSTILE, "why": HOSTILE}],
                 changes=[PredictionRow("nb", "hello_q2", HOSTILE, "bob", Rule.CHANGED, "file",
                                        changed_from=HOSTILE, changed_to=HOSTILE)])
    body = page.split("<main>", 1)[1]
    assert "<script" not in body and "<img src=x" not in body
    assert body.count("&lt;script&gt;alert(1)&lt;/script&gt;") >= 8
    assert "script-src 'none'" in page          # and the page runs nothing anyway


def test_only_predictions_that_changed_are_listed_as_changed(tmp_path):
    rows = [PredictionRow("nb", f"q{i}", "", f"s{i}", rule, "file") for i, rule in enumerate(Rule)]
    page = _page(tmp_path, changes=rows)
    changed = page.split('id="changes"', 1)[1].split("<h2", 1)[0]
    assert changed.count("<tr>") == 1 + 1      # the header and the one that changed
    assert "s1" in changed and "s0" not in changed
    assert "No prediction was changed" in _page(tmp_path, changes=rows[:1])


def test_the_regrade_log_reads_as_words():
    assert describe_state({"auto": None, "manual": 1.0, "needs_manual": False, "score": 1.0}) == "manual 1, graded"
    assert describe_state({"auto": 2.0, "manual": None, "needs_manual": False, "score": 2.0}) == "auto 2, graded"
    assert describe_state({"auto": None, "manual": 1.0, "needs_manual": True, "score": 1.0}) == \
        "manual 1, awaiting a manual grade"
    assert describe_state({"score": 1.2}) == "1.2"
    assert describe_state(None) == "(none)"


def test_a_ratio_to_the_truth_is_taken_in_the_questions_unit():
    from course_lib import Q_
    from course_lib.questions import get

    spec = get("hello_q5").specs["q5_latency_us"]          # microseconds; its truth is kept in ms
    assert abs(_ratio(34.3, Q_(0.032, "ms"), spec) - 34.3 / 32) < 1e-9
    assert abs(_ratio(Q_(34.3, "us"), Q_(0.032, "ms")) - 34.3 / 32) < 1e-9
    assert _ratio(34.3, Q_(0.032, "ms")) is None            # no unit known: no ratio rather than a wrong one


def test_the_course_page_links_each_assignment_report(tmp_path):
    (tmp_path / "a1").mkdir()
    (tmp_path / "a1" / "report.html").write_text("x")
    cells = {"bob": {"a1": CourseCell("3 / 4", ["late by 2 h, -0.3", HOSTILE]), "a2": CourseCell("missing")}}
    page = write_course_html(tmp_path, ["a1", "a2"], cells,
                             {"a1": {"n": 1, "mean": 3.0, "max": 4}, "a2": {"n": 0, "mean": None, "max": 2}}).read_text()
    assert '<a href="a1/report.html">a1</a>' in page and 'href="a2/report.html"' not in page
    assert "late by 2 h, -0.3" in page and "<script" not in page.split("<main>", 1)[1]
    assert "3.0 / 4 (n=1)" in page


def test_a_truth_is_shown_in_its_questions_unit_and_a_whole_number_as_one():
    """Issue 47: a q5_latency_us truth (kept in ms) read "0.0225 ms", 1024 read "1.02e+03"."""
    from course_lib import Q_
    from course_lib.exercises.answers import encode
    from course_lib.questions import get

    from autograder.outputs.report import category
    from autograder.outputs.values import show

    spec = get("hello_q5").specs["q5_latency_us"]
    truth = {"value": encode(Q_(0.0225, "ms"))}
    assert category(truth, truth, right=True, spec=spec) == "22.5 µs"
    assert category(truth, truth, right=True) == "0.0225 ms"          # no question known: as recorded
    assert [show(v) for v in (1024, 1024.0, 2047.6, 0.0225, 65536, 3.5e9)] == [
        "1024", "1024", "2048", "0.0225", "65536", "3.5e+09"]


def test_the_truth_line_names_each_students_own_truth_once():
    """Issue 47: "truth the truth, each student's own (...)"."""
    from autograder.outputs.report import _misconception_lines

    base = {"notebook": "nb", "question": "hello_q1", "variable": "q1_intensity", "share_wrong": 0.5,
            "count": 1, "label": ""}
    own = "the truth, each student's own (0.5, 0.25)"
    lines = _misconception_lines([{**base, "answer": own, "truth": own, "own_truths": True, "is_truth": True},
                                  {**base, "answer": "0.3 (truth x0.6)", "truth": own, "own_truths": True,
                                   "is_truth": False}])
    assert lines == [f"  hello_q1 q1_intensity: 50% wrong, {own}; most common wrong answer: 0.3 (truth x0.6) (1)"]
    single = _misconception_lines([{**base, "answer": "0.5", "truth": "0.5", "own_truths": False, "is_truth": True}])
    assert single == ["  hello_q1 q1_intensity: 50% wrong, truth 0.5"]


def test_the_students_table_shows_the_numbers_each_was_graded_on(tmp_path):
    page = _page(tmp_path, students=[StudentRow("ann", score=3, max_score=4, numbers="Q1: n = 2,000,000 elements"),
                                     StudentRow("bob", score=4, max_score=4)])
    assert ">their numbers</th>" in page and "Q1: n = 2,000,000 elements" in page
    assert ">their numbers</th>" not in _page(tmp_path, students=[StudentRow("bob", score=4, max_score=4)])
