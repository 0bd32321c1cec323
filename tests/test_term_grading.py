"""The instructor's term on the tiny course's t3 (a time, a byte count and a written answer graded
by hand), through `python -m autograder` (issue 34): a due date with its time zone, a late policy,
one extension; three students handed in through an exchange inbound (on time, late, late but
excused); grading, a manual grade, a regrade that keeps it, a regrade of one question, the
export and the report.
"""
from __future__ import annotations

import csv
import json
import os

import pytest

from autograder.course import Course
from autograder.grading import regrade
from tiny_course import FAST, NO_SANDBOX_FLAG, make_course, run_cli, student_nb

A = "t3"
DUE = "2027-02-01T23:59Z"
#: when each student handed in (the exchange's clock, in its folder name)
HANDED_IN = {"ontime": "2027-02-01 20:00:00.000000 UTC", "late": "2027-02-03 01:00:00.000000 UTC",
             "excused": "2027-02-02 10:00:00.000000 UTC"}
RIGHT = {"_q1_answer": "from course_lib import Q_\nq1_time = Q_(7.36, 'ms')\nq1_regime = 'memory-bound'",
         "_q2_answer": "from course_lib import Q_\nq2_bytes = Q_(16, 'GB')",
         "_q2_reflection": "Disk vendors count in powers of ten."}
REFLECTION = "t3units_q2_reflection"


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    base = tmp_path_factory.mktemp("term")
    course = make_course(base)
    course = Course(root=base / "course", source=course.source, release=course.release)
    args = ["--root", course.root, "--source", course.source, "--release-dir", course.release]
    run_cli("release", A, "--due", DUE, *args)
    run_cli("late-policy", "--percent-per-day", "10", "--cap", "50", *args)
    run_cli("extend", A, "excused", "--until", "2027-02-03T12:00Z", "--reason", "medical certificate", *args)
    inbound = base / "exchange" / "roofline" / "inbound"
    for i, (s, when) in enumerate(HANDED_IN.items()):
        d = inbound / f"{s}+{A}+{when}+{i:08x}"
        d.mkdir(parents=True)
        (d / "units.ipynb").write_bytes(student_nb(course, A, "units", answers=RIGHT))
    collected = run_cli("collect", A, "--exchange", base / "exchange", *args)
    first = run_cli("grade", A, *args, *FAST, *NO_SANDBOX_FLAG)
    return course, args, collected, first


def _gradebook(course):
    out = {}
    with course.gradebook() as gb:
        for sub in gb.find_assignment(A).submissions:
            nb = sub.notebooks[0]
            out[sub.student.id] = {"penalty": nb.late_submission_penalty or 0.0, "score": nb.score,
                                   "extension": sub.extension,
                                   "reflection": [(g.manual_score, g.needs_manual_grade) for g in nb.grades
                                                  if g.name == REFLECTION][0]}
    return out


def test_collect_and_grade_judge_each_student_against_their_own_deadline(term):
    course, _, collected, first = term
    assert "excused: on time (extended to 2027-02-03 12:00 UTC: medical certificate)" in collected.stdout
    assert "late: late by 1 d 1 h" in collected.stdout
    gb = _gradebook(course)
    # every autograded point (5 of 6) earned; the late one is 2 started days late: 20% of 5
    assert {s: g["penalty"] for s, g in gb.items()} == {"ontime": 0.0, "late": pytest.approx(1.0), "excused": 0.0}
    assert gb["excused"]["extension"] is not None and gb["late"]["extension"] is None
    # grade prints each student's score
    assert "  late: 4 of 6 (late by 1 d 1 h; late penalty 1; 1 cell(s) awaiting a manual grade)" in first.stdout
    assert "  ontime: 5 of 6 (1 cell(s) awaiting a manual grade)" in first.stdout


def test_a_regrade_keeps_the_manual_grade_and_its_status_and_logs_what_changed(term):
    course, args, _, _ = term
    run_cli("manual", A, "--student", "late", "--cell", REFLECTION, "--points", "1", *args)
    gb = _gradebook(course)
    assert gb["late"]["reflection"] == (1.0, False)
    assert gb["late"]["penalty"] == pytest.approx(1.2)          # 20% of the score with its manual grade (6)
    run_cli("late-policy", "--percent-per-day", "5", "--cap", "50", *args)
    p = run_cli("grade", A, "--student", "late", "--force", "--reason", "policy softened", *args, *FAST,
                *NO_SANDBOX_FLAG)
    gb = _gradebook(course)
    assert gb["late"]["reflection"] == (1.0, False)             # kept, and still graded
    assert gb["ontime"]["reflection"] == (None, True)           # untouched: still awaiting
    assert gb["late"]["penalty"] == pytest.approx(0.6)          # 10% of 6
    log = regrade.read_log(course, A)
    assert [(e["student"], e["cell"], e["before"]["score"], e["after"]["score"], e["why"]) for e in log] == [
        ("late", "units/(late penalty)", pytest.approx(1.2), pytest.approx(0.6), "policy softened")]
    assert "regrade changed 1 entry of late" in p.stdout
    status = run_cli("manual", A, *args).stdout
    assert f"late                 units/{REFLECTION}: 1 of 1" in status
    assert "2 of 3 manually graded cell(s) still awaiting a score" in status
    out = course.root / "grades.csv"
    run_cli("export", "--out", out, *args)
    rows = {r["student_id"]: r for r in csv.DictReader(out.open())}
    assert rows["late"][f"{A}/status"] == "graded"
    assert rows["ontime"][f"{A}/status"] == "needs manual grade"


def _flagged(course, student) -> bool:

    with course.gradebook() as gb:
        return any(nb.flagged for nb in gb.find_submission(A, student).notebooks)


def test_a_failed_run_then_a_regrade_keeps_the_hand_grade_and_leaves_no_stale_flag(term):
    """Issue 47: a failed run (a widened tolerance, a crashed worker) removes the autograded
    copy; the next regrade compared the hand-graded answers with nothing and left every one for
    review, and the failure's flag stayed after the successful regrade, holding the student from
    the LMS. The answers last merged are kept apart, and the failure's own flag is taken back."""
    from autograder.grading.autograde import Graded
    from autograder.grading.grade import GradeSummary, _finish

    from autograder.grading.status import FAILURE_FLAGGED, grading_status

    course, args, _, _ = term
    assert _gradebook(course)["late"]["reflection"] == (1.0, False)
    summary = GradeSummary(A, [], [], {}, {}, False, "", 0.0, 1)
    _finish(course, A, Graded("late", cause="hello_q1: no admissible variant"), "", False, summary)
    assert _flagged(course, "late") and not (course.autograded / "late" / A).exists()
    p = run_cli("grade", A, "--student", "late", "--force", "--reason", "the bug fixed", *args, *FAST,
                *NO_SANDBOX_FLAG)
    assert _gradebook(course)["late"]["reflection"] == (1.0, False)     # still graded, not awaiting
    assert FAILURE_FLAGGED not in grading_status(course, A, "late")
    out = course.root / "grades.csv"
    run_cli("export", "--out", out, *args)
    late = {r["student_id"]: r for r in csv.DictReader(out.open())}["late"]
    assert late[f"{A}/status"] == "graded" and "grading failed" not in late[f"{A}/flag"]
    # the same regrade against the hub's ledger (here an empty one: nothing vouched) keeps it too
    ledger = course.root.parent / "ledger"
    ledger.mkdir(exist_ok=True)
    for with_ledger in (["--ledger", ledger], []):       # and back without it, as the later tests expect
        run_cli("grade", A, "--student", "late", "--force", *with_ledger, "--reason", "the ledger", *args,
                *FAST, *NO_SANDBOX_FLAG)
        assert _gradebook(course)["late"]["reflection"] == (1.0, False)
    assert "late: 5.4 of 6 (late by 1 d 1 h; late penalty 0.6)" in p.stdout      # no cell awaiting
    status = run_cli("manual", A, *args).stdout
    assert f"late                 units/{REFLECTION}: 1 of 1" in status
    assert "2 of 3 manually graded cell(s) still awaiting a score" in status   # as grade counts them


def test_a_hand_grade_in_the_formgrader_takes_the_late_penalty_again(term):
    """Issue 47: a hand grade entered through the Formgrader's HTTP API (nbgrader's grade
    handler) left the penalty of the old score, which reached the LMS. With the course's guard
    (the hub kit enables it), the penalty is taken again at once; export takes it again anyway."""
    import urllib.request


    from test_browser import stop_server
    from test_formgrader_browser import Formgrader

    course, args, _, _ = term
    with course.gradebook() as gb:
        grade_id = gb.find_grade(REFLECTION, "units", A, "late").id
    server = Formgrader(course.root, extensions=("autograder.outputs.formgrader_csp",
                                                 "autograder.outputs.formgrader_guard"))
    try:
        def put(points):
            req = urllib.request.Request(f"{server.url}/formgrader/api/grade/{grade_id}", method="PUT",
                                         data=json.dumps({"manual_score": points}).encode(),
                                         headers={"Authorization": f"token {server.token}"})
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.load(r)

        assert put(0.0)["manual_score"] == 0.0
        gb = _gradebook(course)["late"]
        assert gb["reflection"] == (0.0, False)
        assert gb["penalty"] == pytest.approx(0.5)           # 10% (5% a day, 2 days) of 5, at once
        out = course.root / "grades.csv"
        run_cli("export", "--out", out, *args)
        late = {r["student_id"]: r for r in csv.DictReader(out.open())}["late"]
        assert (late["total"], late[f"{A}/status"]) == ("4.5", "graded")
        assert put(1.0)["manual_score"] == 1.0
        assert _gradebook(course)["late"]["penalty"] == pytest.approx(0.6)
        # the Manual Grading page says the penalty (the Formgrader shows none of its own)
        with course.gradebook() as gb:         # a stale penalty: the page takes it again
            nb = gb.find_submission_notebook("units", A, "late")
            nb_id, nb.late_submission_penalty = nb.id, 2.0
            gb.db.commit()
        req = urllib.request.Request(f"{server.url}/formgrader/submissions/{nb_id}/",
                                     headers={"Authorization": f"token {server.token}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            page = r.read().decode()
        assert "Late submission penalty: -0.6 of this notebook's score 6, so 5.4 in the export" in page
        assert _gradebook(course)["late"]["penalty"] == pytest.approx(0.6)
        # handed in without a prediction record: flagged, and the page says why and how to unflag
        assert _flagged(course, "late")
        run_cli("export", "--out", out, *args)
        reasons = {r["student_id"]: r for r in csv.DictReader(out.open())}["late"][f"{A}/flag"]
        assert "Flagged: " in page and f"unflag {A} late --reason" in page
        assert reasons.split("; ")[0].split(": ", 1)[-1] in page
    finally:
        stop_server(server.proc)
        server.log.close()


def test_a_changed_answer_is_left_for_review(term, tmp_path):
    course, args, _, _ = term
    run_cli("manual", A, "--student", "excused", "--cell", REFLECTION, "--points", "1", *args)
    assert _gradebook(course)["excused"]["reflection"] == (1.0, False)
    again = tmp_path / "again" / "excused"
    again.mkdir(parents=True)
    (again / "units.ipynb").write_bytes(student_nb(course, A, "units", answers={
        **RIGHT, "_q2_reflection": "Because GiB is bigger."}))
    run_cli("grade", A, "--submissions", again.parent, "--student", "excused", *args, *FAST, *NO_SANDBOX_FLAG)
    # the manual score stays, but the answer it graded is not the one handed in now: review it
    assert _gradebook(course)["excused"]["reflection"] == (1.0, True)
    assert any(e["student"] == "excused" and e["cell"] == f"units/{REFLECTION}"
               and e["before"]["needs_manual"] is False and e["after"]["needs_manual"] is True
               for e in regrade.read_log(course, A))


def test_a_question_regrade_changes_only_that_question(term):
    course, args, _, _ = term
    p = run_cli("grade", A, "--question", "nonesuch", *args, *FAST, *NO_SANDBOX_FLAG, check=False)
    assert p.returncode == 2 and "no graded question or cell 'nonesuch'" in p.stderr
    data = {"notebooks": {"units": {"grades": {"t3units_q1_form": 1, "t3units_q1_correct": 2,
                                               "t3units_q2_correct": 2}, "comments": {}}}}
    only = regrade.only_question(data, "t3units_q1")
    assert set(only["notebooks"]["units"]["grades"]) == {"t3units_q1_form", "t3units_q1_correct"}
    n = len(regrade.read_log(course, A))
    run_cli("grade", A, "--student", "ontime", "--question", "t3units_q1", *args, *FAST, *NO_SANDBOX_FLAG)
    assert len(regrade.read_log(course, A)) == n        # nothing changed: nothing logged
    assert _gradebook(course)["ontime"]["score"] == 5


@pytest.fixture(scope="module")
def reported(term):
    course, args, _, _ = term
    out = run_cli("report", A, *args)
    return course, course.reports / A, out


def test_the_report_has_a_row_per_student_and_per_question(reported):
    course, d, out = reported
    students = {r["student"]: r for r in csv.DictReader((d / "students.csv").open())}
    assert set(students) == set(HANDED_IN)
    assert students["late"]["late"] == "late by 1 d 1 h"
    assert float(students["late"]["late_penalty"]) == pytest.approx(0.6)
    assert float(students["late"]["score"]) == pytest.approx(6 - 0.6)
    assert students["excused"]["late"].startswith("on time (extended to 2027-02-03 12:00 UTC")
    # one mean everywhere: the scores per notebook are after the late penalty, as students.csv
    # and the course page (issue 47: report.html's mean was before it, index.html's after)
    scores = {r["student"]: float(r["score"]) for r in csv.DictReader((d / "scores.csv").open())}
    assert scores == {s: pytest.approx(float(r["score"])) for s, r in students.items()}
    assert students["ontime"]["status"] == "needs manual grade" and students["late"]["status"] == "graded"
    assert {s: r["ledger"] for s, r in students.items()} == dict.fromkeys(HANDED_IN, "not vouched")
    questions = {r["question"]: r for r in csv.DictReader((d / "questions.csv").open())}
    assert set(questions) == {"t3units_q1", "t3units_q2"}
    assert (questions["t3units_q1"]["mean"], questions["t3units_q1"]["share_full"]) == ("3.0", "1.0")
    # q2: 2 autograded points for each, the reflection graded for two of three (1 point each)
    assert float(questions["t3units_q2"]["mean"]) == pytest.approx((3 + 3 + 2) / 3, abs=1e-3)
    # ontime's never graded, excused's graded but handed in anew since (left for review)
    assert questions["t3units_q2"]["awaiting_manual"] == "2"
    page = (d / "report.html").read_text()
    for section in ("Students", "Questions", "Misconceptions", "Possible copies", "Regrades",
                    "Predictions changed after their reveal"):
        assert f">{section}</h2>" in page
    assert "Due 2027-02-01 23:59 UTC; late policy: 5% of the score per day late" in page
    assert "policy softened" in page and "units/(late penalty)" in page        # the regrade log
    assert "No prediction was changed after its reveal." in page               # none changed: no rows
    assert "No names: the gradebook has none" in page and ">name</th>" not in page   # said, not left empty
    course_page = (course.reports / "index.html").read_text()
    assert 'href="t3/report.html"' in course_page and "late by 1 d 1 h, -0.6" in course_page
    assert "report.html" in out.stdout and "index.html" in out.stdout


def test_names_come_from_a_roster_and_the_export_says_when_there_are_none(term, tmp_path):
    course, args, _, _ = term
    out = tmp_path / "grades.csv"
    p = run_cli("export", "--out", out, *args)
    assert "the name and e-mail columns are empty" in p.stdout
    rows = list(csv.DictReader(out.open()))
    assert rows[-1]["student_id"] == "(max)" and rows[-1][f"{A}/units"] == "6"
    roster = tmp_path / "roster.csv"
    roster.write_text("username,first_name,last_name,email\nlate,Lata,<b>Tardy</b>,lata@example.org\n")
    run_cli("students", "import", roster, *args)
    p = run_cli("export", "--out", out, *args)
    assert "columns are empty" not in p.stdout
    late = {r["student_id"]: r for r in csv.DictReader(out.open())}["late"]
    assert (late["first_name"], late["last_name"], late["email"]) == ("Lata", "b Tardy /b", "lata@example.org")
    assert late[f"{A}/late"] == "late by 1 d 1 h" and late[f"{A}/copies"] == ""


def test_the_feedback_shows_the_late_penalty(term):
    course, args, _, _ = term
    run_cli("feedback", A, *args)
    pages = {s: (course.feedback / s / A / "units.html").read_text() for s in HANDED_IN}
    assert "Late submission penalty (Score: -0.6)" in pages["late"]
    assert "Late submission penalty" not in pages["excused"] and "Late submission penalty" not in pages["ontime"]
