"""End to end: a class of 10 students on their own numbers, graded through `python -m autograder`.

A course notebook asks lesson 3's Q3 (a ratio) and Q4 (bytes by hand) with their given cells,
as the lesson does. The course has a variant secret; nine honest students each answer their own
variant's truth, a tenth hands in a friend's answers (the friend's numbers differ). Through
the real path (collect from a folder, sandboxed kernel, clean re-verification, report):

* every honest student earns every autograded point on their own numbers, and their kernel
  printed their own numbers;
* the copier keeps the form points, loses the correctness points, and the report flags the
  copy with the evidence (the friend's variant, the friend's identical answer); nobody honest
  is flagged; the misconception table counts every honest student right and measures the
  copied answer against the copier's own numbers; variants.csv lists everyone's numbers;
* `python -m autograder variants` lists who gets what, and the export shows each student's
  numbers.
"""
from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.grading.grade import cell_scores
from autograder.authoring.release import generate
from course_lib.questions import get, student_key
from course_lib.questions import variants as V
from tiny_course import NO_SANDBOX_FLAG, cell, _notebook, run_cli, student_nb, write_class

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

A, NB = "v1", "vclass"
SECRET = b"0123456789abcdef0123456789abcdef-test-course"
QS = ("phases_q3", "phases_q4")


def _answers(givens: dict) -> dict:
    """The answer cells' sources for these numbers (an honest student's)."""
    t3 = get("phases_q3").solution(**givens["phases_q3"]).truths
    t4 = get("phases_q4").solution(**givens["phases_q4"]).truths
    return {"phases_q3_prediction": f"q3_prediction = {t3['q3_prediction'].value:.4f}\n"
                                    "q3_reasoning = 'weights shared, each sequence reads its own KV cache'",
            "phases_q4_answer": f"q4_kv_per_token = {t4['q4_kv_per_token'].value}\n"
                                f"q4_kv_batch = {t4['q4_kv_batch'].value.m_as('GB'):.4f}"}


def _source_notebook() -> nbformat.NotebookNode:
    canon = _answers({q: get(q).givens for q in QS})
    cells = [cell("markdown", "# Variants\n### Q3 · Batch the decode (3 points)\nYour numbers are printed below.")]
    for q, answer, in (("phases_q3", "phases_q3_prediction"), ("phases_q4", "phases_q4_answer")):
        cells += [
            cell("code", f"# Your numbers (locked)\nfrom course_lib.questions import givens\ngivens(\"{q}\")",
                 f"{q}_given", locked=True),
            cell("code", f"# answers\n### BEGIN SOLUTION\n{canon[answer]}\n### END SOLUTION", answer, solution=True),
            cell("code", f"# Form check (visible).\nfrom course_lib.questions import check_form\ncheck_form(\"{q}\")",
                 f"{q}_form", grade=True, locked=True, points=1),
            cell("code", f"# Hidden test.\n### BEGIN HIDDEN TESTS\nfrom course_lib.questions import grade\n"
                         f"grade(\"{q}\")\n### END HIDDEN TESTS", f"{q}_correct", grade=True, locked=True, points=2),
        ]
    return _notebook(cells)


def _differs(q: str, g1: dict, g2: dict) -> bool:
    """Whether every answer of q that varies at all has truths the spec tells apart."""
    qq = get(q)
    t1, t2 = qq.solution(**g1).truths, qq.solution(**g2).truths
    return any(not qq.specs[n].agrees(qq.specs[n].read_truth(t1[n].value), qq.specs[n].read_truth(t2[n].value))
               for n in qq.answer_names)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("variants")
    src, rel, root = base / "source", base / "release", base / "course"
    (src / A).mkdir(parents=True)
    nbformat.write(_source_notebook(), str(src / A / f"{NB}.ipynb"))
    generate(dest=rel, source=src)
    course = Course(root=root, source=src, release=rel)
    (root / ".autograder").mkdir(parents=True)
    secret = root / ".autograder" / "variant-secret"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)

    mine = {s: {q: V.draw(student_key(SECRET, s), q) for q in QS} for s in (f"s{i}" for i in range(1, 40))}
    copier = "copier"
    copier_numbers = {q: V.draw(student_key(SECRET, copier), q) for q in QS}
    friend = next(s for s, g in mine.items() if all(_differs(q, g[q], copier_numbers[q]) for q in QS))
    honest = [friend] + [s for s in mine if s != friend][:8]         # a class of ten with the copier
    assert len({json.dumps(mine[s]["phases_q3"]) for s in honest}) >= 3, "the class should span several variants"
    work = {s: {f"{NB}.ipynb": student_nb(course, A, NB, answers=_answers(mine[s]))} for s in honest}
    work[copier] = {f"{NB}.ipynb": student_nb(course, A, NB, answers=_answers(mine[friend]))}
    write_class(base / "class", course, A, work)

    common = ["--root", root, "--source", src, "--release-dir", rel]
    env = {"AUTOGRADER_VARIANT_SECRET": ""}
    grade = run_cli("grade", A, "--submissions", base / "class", "-j", "2", "--timeout", "30", "-q",
                    *NO_SANDBOX_FLAG, *common, env=env, check=False)
    report = run_cli("report", A, *common, env=env, check=False)
    listing = run_cli("variants", A, *common, env=env, check=False)
    export = run_cli("export", "--out", base / "grades.csv", *common, env=env, check=False)
    return {"course": course, "root": root, "honest": honest, "friend": friend, "copier": copier, "mine": mine,
            "copier_numbers": copier_numbers, "grade": grade, "report": report, "listing": listing,
            "export": export, "export_csv": base / "grades.csv"}


def test_the_commands_succeed(graded):
    for name in ("grade", "report", "listing", "export"):
        p = graded[name]
        assert p.returncode == 0, f"{name}: exit {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}"


def test_each_honest_student_earns_every_point_on_their_own_numbers(graded):
    scores = cell_scores(graded["course"].db_url, A)
    for s in graded["honest"]:
        assert scores[s] == {f"{NB}/{q}_{k}": p for q in QS for k, p in (("form", 1.0), ("correct", 2.0))}, s
        book = nbformat.read(str(graded["root"] / "autograded" / s / A / f"{NB}.ipynb"), as_version=4)
        printed = {c.metadata["nbgrader"]["grade_id"]: "".join(o.get("text", "") for o in c.outputs)
                   for c in book.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").endswith("_given")}
        for q in QS:
            assert printed[f"{q}_given"].strip() == \
                f"Your numbers for {q.split('_')[1].upper()} ({s}): {V.describe(q, graded['mine'][s][q])}.", printed


def test_a_friends_answers_lose_the_points_and_are_flagged(graded):
    c = graded["copier"]
    scores = cell_scores(graded["course"].db_url, A)[c]
    assert scores == {f"{NB}/{q}_{k}": (1.0 if k == "form" else 0.0) for q in QS for k in ("form", "correct")}
    rows = list(csv.DictReader((graded["root"] / "reports" / A / "copies.csv").open()))
    flagged = {r["student"] for r in rows}
    assert flagged == {c}, rows                       # nobody honest is flagged
    mine = [r for r in rows if r["question"] == "phases_q3"]
    assert {r["matches"] for r in mine} == {"another variant's truth", "another student's answer"}, mine
    friend_numbers = V.describe("phases_q3", graded["mine"][graded["friend"]]["phases_q3"])
    assert any(friend_numbers in r["evidence"] and graded["friend"] in r["evidence"] for r in mine), mine
    assert f"POSSIBLE COPY: {c}" in graded["report"].stdout
    # the misconception table: the right answers of every variant together, a wrong one against
    # the student's own numbers (not the lesson's)
    mis = [r for r in csv.DictReader((graded["root"] / "reports" / A / "misconceptions.csv").open())
           if r["variable"] == "q3_prediction"]
    assert sum(int(r["count"]) for r in mis if r["is_truth"] == "True") == len(graded["honest"]), mis
    # ... named as each student's own truth, never the lesson's number nobody was asked
    (truth_row,) = [r for r in mis if r["is_truth"] == "True"]
    assert truth_row["answer"].startswith("the truth, each student's own ("), truth_row
    from autograder.outputs.values import show
    theirs = {show(get("phases_q3").solution(**graded["mine"][s]["phases_q3"]).truths["q3_prediction"].value)
              for s in graded["honest"]}
    listed = truth_row["answer"].split("(", 1)[1].rstrip(")").split(" and ")[0].split(", ")
    assert len(listed) >= 2 and set(listed) <= theirs, (listed, theirs)
    own = get("phases_q3").solution(**graded["copier_numbers"]["phases_q3"]).truths["q3_prediction"].value
    copied = get("phases_q3").solution(**graded["mine"][graded["friend"]]["phases_q3"]).truths["q3_prediction"].value
    spec, lessons = get("phases_q3").specs["q3_prediction"], get("phases_q3").solution().truths["q3_prediction"].value
    # a copy that is also the lesson's own answer (within the tolerance) is named so
    expected = "lesson-numbers" if spec.agrees(spec.read(round(copied, 4)), spec.read_truth(lessons)) else \
        f"{round(copied, 4):.3g} (truth x{round(copied, 4) / own:.3g})"
    assert [r["answer"] for r in mis if r["is_truth"] == "False"] == [expected], mis
    listed = list(csv.DictReader((graded["root"] / "reports" / A / "variants.csv").open()))
    assert {(r["student"], r["question"], r["variant"]) for r in listed} == \
        {(s, q, V.describe(q, (graded["mine"].get(s) or graded["copier_numbers"])[q]))
         for s in graded["honest"] + [c] for q in QS}


def test_variants_lists_who_gets_what(graded):
    out = graded["listing"].stdout
    for s in graded["honest"] + [graded["copier"]]:
        numbers = graded["mine"].get(s) or graded["copier_numbers"]
        for q in QS:
            assert any(line.split()[:2] == [s, q] and line.endswith(V.describe(q, numbers[q]))
                       for line in out.splitlines()), (s, q, out)


def test_the_export_shows_each_students_numbers(graded):
    from course_lib.exercises.question_ids import label

    rows = {r["student_id"]: r for r in csv.DictReader(graded["export_csv"].open())}
    for s in graded["honest"] + [graded["copier"]]:
        numbers = graded["mine"].get(s) or graded["copier_numbers"]
        assert rows[s][f"{A}/variant"] == "; ".join(f"{label(q)}: {V.describe(q, numbers[q])}" for q in QS), rows[s]


def test_a_possible_copy_is_flagged_where_the_instructor_looks(graded):
    """issue 34: the Formgrader's flag, the export's flag and copies columns, the report's student table."""

    c = graded["copier"]
    with graded["course"].gradebook() as gb:
        flagged = {sub.student.id: any(nb.flagged for nb in sub.notebooks) for sub in gb.find_assignment(A).submissions}
    assert flagged[c], flagged
    assert "POSSIBLE COPY: " + c in graded["grade"].stdout          # grade runs the copy check too
    rows = {r["student_id"]: r for r in csv.DictReader(graded["export_csv"].open())}
    assert "possible copy" in rows[c][f"{A}/flag"] and graded["friend"] in rows[c][f"{A}/copies"], rows[c]
    assert all(rows[s][f"{A}/copies"] == "" for s in graded["honest"])
    students = {r["student"]: r for r in csv.DictReader((graded["root"] / "reports" / A / "students.csv").open())}
    assert graded["friend"] in students[c]["copies"] and "possible copy" in students[c]["flags"], students[c]
    # an instructor who unflags after looking is not overruled by the next report
    with graded["course"].gradebook() as gb:
        for nb in gb.find_submission(A, c).notebooks:
            nb.flagged = False
        gb.db.commit()
    run_cli("report", A, "--root", graded["root"], "--source", graded["course"].source, "--release-dir",
            graded["course"].release, env={"AUTOGRADER_VARIANT_SECRET": ""})
    with graded["course"].gradebook() as gb:
        assert not any(nb.flagged for nb in gb.find_submission(A, c).notebooks)
