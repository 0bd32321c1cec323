"""The tables of the instructor's report (issue 34): one row per student, one per question, the
regrade log; and the course's table across assignments. Read from the gradebook, the grader's
status files, the copy check and the regrade log; rendered by autograder.outputs.report_html.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from autograder.course import Course, answer_cells


@dataclass
class StudentRow:
    student: str
    name: str = ""
    score: float | None = None        # the notebooks' scores less the late penalty; None: failed
    max_score: float = 0.0
    penalty: float = 0.0
    late: str = ""                    # against the student's own deadline (deadlines.Lateness.text)
    status: str = ""                  # graded / needs manual grade / failed: ... / missing
    flags: list = field(default_factory=list)    # what the instructor reads
    flagged: bool = False             # nbgrader's flag on any notebook
    ledger: str = ""
    copies: list = field(default_factory=list)   # copies rows (evidence)
    numbers: str = ""                 # the numbers the student was graded on (per-student variants)


def student_rows(course: Course, assignment: str, copies: list[dict]) -> list[StudentRow]:
    """Every student the gradebook knows for the assignment (and each failed grading), by id."""
    from nbgrader.api import MissingEntry

    from autograder.grading import deadlines
    from autograder.grading.status import failed_students, flag_reasons
    from autograder.integrity.ledger import status as ledger_status

    failed = failed_students(course, assignment)
    due = deadlines.due_date(course, assignment)
    exts = deadlines.extensions(course, assignment)
    mine: dict[str, list] = {}
    for r in copies:
        mine.setdefault(r["student"], []).append(r)
    rows: dict[str, StudentRow] = {}
    with course.gradebook() as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return []
        top = sum(nb.max_score for nb in a.notebooks)
        for sub in a.submissions:
            s, st = sub.student.id, sub.student
            row = rows[s] = StudentRow(s, " ".join(x for x in (st.first_name, st.last_name) if x), max_score=top)
            row.flagged = any(nb.flagged for nb in sub.notebooks)
            if s in failed:
                continue
            row.penalty = sum(nb.late_submission_penalty or 0.0 for nb in sub.notebooks)
            row.score = sum(nb.score for nb in sub.notebooks) - row.penalty
            row.status = "needs manual grade" if sub.needs_manual_grade else "graded"
            row.late = deadlines.lateness(course, assignment, s, sub.timestamp, due, exts.get(s)).text
            vouch = ledger_status(course, assignment, s)
            row.ledger = vouch.text if vouch else ""
    for s, cause in failed.items():
        rows.setdefault(s, StudentRow(s)).status = f"failed: {cause}"
    numbers = _numbers(course, assignment)
    for s, row in rows.items():
        row.numbers = numbers.get(s, "")
        row.flags = flag_reasons(course, assignment, s) if (row.flagged or s in failed) else []
        row.copies = mine.get(s, [])
        if row.flagged and row.copies:
            row.flags.append("possible copy (evidence in the copies column)")
        if row.flagged and not row.flags:
            row.flags = ["flagged"]
    return [rows[s] for s in sorted(rows)]


def _numbers(course: Course, assignment: str) -> dict[str, str]:
    """{student: "Q1: n = 1,000,000 elements, fp16; Q2: ..."}: the numbers each graded student
    was graded on (their status file), on the page beside their score, not only in variants.csv."""
    from course_lib.exercises.question_ids import label
    from course_lib.questions import variants as V

    from autograder.grading.status import graded_students, grading_status

    out = {}
    for s in graded_students(course, assignment):
        parts = []
        for qid, givens in sorted((grading_status(course, assignment, s).get("variant") or {}).items()):
            try:
                parts.append(f"{label(qid)}: {V.describe(qid, givens)}")
            except Exception:       # a question course_lib no longer declares: its numbers as kept
                parts.append(f"{qid}: {givens}")
        out[s] = "; ".join(parts)
    return out


@dataclass
class QuestionStats:
    notebook: str
    question: str
    title: str
    max_score: float
    n: int
    mean: float
    spread: float                     # the population standard deviation
    low: float
    high: float
    share_full: float                 # students with every point of it
    awaiting: int                     # students whose written answer awaits a manual grade
    misconceptions: list = field(default_factory=list)   # ["label (count)"]


def question_stats(course: Course, assignment: str, misconception_rows: list[dict]) -> list[QuestionStats]:
    """Per question (its grade cells together, by course_lib's question id; a lone test cell on
    its own): the graded students' scores on it, and the labelled misconceptions their answers
    matched (from the misconception rows)."""
    from nbgrader.api import MissingEntry

    from course_lib.exercises.question_ids import question_of

    from autograder.grading.status import failed_students

    failed = failed_students(course, assignment)
    titles = {}
    for nb in course.notebooks(assignment):
        for c in answer_cells(course.source / assignment / f"{nb}.ipynb"):
            titles[(nb, c.question or c.grade_id)] = c.title
    labels: dict = {}
    for r in misconception_rows:
        if r.get("label") and r.get("count"):
            labels.setdefault((r["notebook"], r["question"]), {}).setdefault(r["label"], 0)
            labels[(r["notebook"], r["question"])][r["label"]] += r["count"]
    per: dict = {}        # (nb, question) -> {student: [score, max, awaiting]}
    order: list = []
    with course.gradebook() as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return []
        for sub in sorted(a.submissions, key=lambda x: x.student.id):
            if sub.student.id in failed:
                continue
            for nb in sub.notebooks:
                for g in nb.grades:
                    key = (nb.name, question_of(g.name) or g.name)
                    if key not in per:
                        per[key] = {}
                        order.append(key)
                    acc = per[key].setdefault(sub.student.id, [0.0, 0.0, False])
                    acc[0] += g.score or 0.0
                    acc[1] += g.max_score or 0.0
                    acc[2] = acc[2] or bool(g.needs_manual_grade)
    out = []
    for key in sorted(order):
        vals = list(per[key].values())
        scores = [v[0] for v in vals]
        top = max(v[1] for v in vals)
        out.append(QuestionStats(key[0], key[1], titles.get(key, ""), top, len(scores), statistics.mean(scores),
                                 statistics.pstdev(scores), min(scores), max(scores),
                                 sum(1 for v in vals if v[0] >= v[1] - 1e-9) / len(vals), sum(1 for v in vals if v[2]),
                                 [f"{lab} ({n})" for lab, n in sorted(labels.get(key, {}).items(),
                                                                       key=lambda kv: (-kv[1], kv[0]))]))
    return out


def describe_state(d) -> str:
    """A regrade log's before/after in words: "score 1.2", "manual 1, graded", "awaiting"."""
    if not isinstance(d, dict):
        return "(none)"
    parts = []
    if "auto" in d or "manual" in d:
        if d.get("manual") is not None:
            parts.append(f"manual {d['manual']:g}")
        elif d.get("auto") is not None:
            parts.append(f"auto {d['auto']:g}")
        parts.append("awaiting a manual grade" if d.get("needs_manual") else "graded")
    elif isinstance(d.get("score"), (int, float)):
        parts.append(f"{d['score']:g}")
    return ", ".join(parts) or "(none)"


# ---------------------------------------------------------------------------------------------
# the course page: every assignment in the gradebook
# ---------------------------------------------------------------------------------------------
@dataclass
class CourseCell:
    text: str                 # "8.5 / 10", "missing", "failed"
    notes: list = field(default_factory=list)   # late, flagged, possible copy, awaiting


def course_table(course: Course) -> tuple[list[str], dict[str, dict[str, CourseCell]], dict[str, dict]]:
    """(assignments, {student: {assignment: CourseCell}}, {assignment: {"n", "mean", "max"}})."""

    from autograder.grading import deadlines
    from autograder.grading.status import failed_students
    from autograder.integrity import copy_flags

    cells: dict[str, dict[str, CourseCell]] = {}
    stats: dict[str, dict] = {}
    with course.gradebook() as gb:
        names = sorted(a.name for a in gb.assignments)
        for st in gb.students:
            cells[st.id] = {}
        for a in sorted(gb.assignments, key=lambda x: x.name):
            failed = failed_students(course, a.name)
            copies = copy_flags.saved(course, a.name)
            due, exts = deadlines.due_date(course, a.name), deadlines.extensions(course, a.name)
            top = sum(nb.max_score for nb in a.notebooks)
            got = []
            for sub in a.submissions:
                s = sub.student.id
                if s in failed:
                    cells.setdefault(s, {})[a.name] = CourseCell("failed", [failed[s]])
                    continue
                penalty = sum(nb.late_submission_penalty or 0.0 for nb in sub.notebooks)
                score = sum(nb.score for nb in sub.notebooks) - penalty
                got.append(score)
                notes = []
                late = deadlines.lateness(course, a.name, s, sub.timestamp, due, exts.get(s))
                if late.seconds_late > 0:
                    notes.append(late.text + (f", -{penalty:g}" if penalty else ""))
                elif late.extension:
                    notes.append("extension")
                if sub.needs_manual_grade:
                    notes.append("awaiting manual grade")
                if any(nb.flagged for nb in sub.notebooks):
                    notes.append("flagged")
                if copies.get(s):
                    notes.append("possible copy")
                cells.setdefault(s, {})[a.name] = CourseCell(f"{score:g} / {top:g}", notes)
            for s in failed:
                cells.setdefault(s, {}).setdefault(a.name, CourseCell("failed", [failed[s]]))
            stats[a.name] = {"n": len(got), "mean": statistics.mean(got) if got else None, "max": top}
    for s in cells:
        for a in names:
            cells[s].setdefault(a, CourseCell("missing"))
    return names, dict(sorted(cells.items())), stats
