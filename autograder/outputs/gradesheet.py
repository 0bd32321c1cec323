"""The grades CSV, written by one function for `grade --out` (one assignment) and `export` (all).

The same rules for both:
* a submission whose grading failed is never a zero: its score columns, its late penalty and (for
  one assignment) its total are empty, and its status says "failed: <cause>"; it adds nothing
  to a total over assignments, and a student with nothing but failures has an empty total;
* a notebook missing from a graded submission scores 0 (the submission was handed in without it);
  an assignment not handed in at all is "missing", its score columns empty.

* one assignment: student_id, a column per notebook (course.notebooks order), late_penalty,
  total, max_score, status ("graded" or "failed: <cause>").
* every assignment: see autograder.outputs.export (contact columns, per assignment its notebooks, status
  and flag, then late_penalty and total; --with-max adds a `(max)` row).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import Course
from autograder.integrity.ledger import status as ledger_status
from autograder.grading.status import failed_students, flag_reasons
from autograder.outputs import csvsafe
from autograder.integrity import copy_flags


@dataclass
class Entry:
    """One student's submission of one assignment as a grades CSV shows it."""
    failed: str | None = None      # the cause, when grading failed: no score
    scores: dict = field(default_factory=dict)   # notebook -> score (empty when failed)
    penalty: float = 0.0           # the late penalties of its notebooks (0 when failed)
    submitted: bool = False        # in the gradebook
    manual: bool = False           # a written answer nobody has graded yet
    flagged: bool = False          # nbgrader's flag, as the Formgrader shows it
    timestamp: object = None       # when it was handed in (nbgrader's, naive UTC)


def entries(gb, course: Course, assignment, failed: dict[str, str]) -> dict[str, Entry]:
    """{student: Entry} of an nbgrader Assignment: each submission in the gradebook and each
    failure (failed_students) -- a failure's scores are left out, whatever the gradebook holds."""
    out = {s: Entry(failed=cause) for s, cause in failed.items()}
    for sub in assignment.submissions:
        e = out.setdefault(sub.student.id, Entry())
        e.submitted = True
        e.flagged = any(nb.flagged for nb in sub.notebooks)
        e.timestamp = sub.timestamp
        if e.failed is not None:
            continue
        e.manual = bool(sub.needs_manual_grade)
        for nb in sub.notebooks:
            e.scores[nb.name] = nb.score
            e.penalty += nb.late_submission_penalty or 0.0
    return out


def write_grades_csv(course: Course, path: Path, assignment: str | None = None, with_max: bool = False) -> Path:
    """The grades CSV of `assignment` (grade --out), or of every assignment in the gradebook
    (export; with_max: a last row with each column's maximum)."""

    from autograder.grading.deadlines import retake_penalties

    path = Path(path)
    retake_penalties(course, assignment)      # a hand grade in the Formgrader leaves the old one
    with course.gradebook() as gb:
        if assignment is not None:
            rows = _one_assignment(gb, course, assignment)
        else:
            rows = _every_assignment(gb, course, with_max)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        csvsafe.Writer(f).writerows(rows)
    return path


def _one_assignment(gb, course: Course, assignment: str) -> list[list]:
    nbs = course.notebooks(assignment)
    a = gb.find_assignment(assignment)
    maxes = {nb.name: nb.max_score for nb in a.notebooks}
    top = _fmt(sum(maxes.get(nb, 0) for nb in nbs))
    rows = [["student_id"] + nbs + ["late_penalty", "total", "max_score", "status"]]
    for s, e in sorted(entries(gb, course, a, failed_students(course, assignment)).items()):
        if e.failed is not None:
            rows.append([s] + [""] * len(nbs) + ["", "", top, f"failed: {e.failed}"])
            continue
        row = [e.scores.get(nb, 0.0) for nb in nbs]
        rows.append([s] + [_fmt(x) for x in row] + [_fmt(e.penalty), _fmt(sum(row) - e.penalty), top, "graded"])
    return rows


def _every_assignment(gb, course: Course, with_max: bool) -> list[list]:
    notebooks, per = {}, {}           # assignment -> [(notebook, max)], assignment -> {student: Entry}
    for a in sorted(gb.assignments, key=lambda a: a.name):
        notebooks[a.name] = [(nb.name, nb.max_score) for nb in sorted(a.notebooks, key=lambda n: n.name)]
        per[a.name] = entries(gb, course, a, failed_students(course, a.name))
    people = {st.id: st for st in gb.students}
    variant_of = _variants(course, list(notebooks))
    copies = {a: copy_flags.saved(course, a) for a in notebooks}
    late_of = _lateness(course, list(notebooks))
    header = ["student_id", "last_name", "first_name", "email"]
    for a, nbs in notebooks.items():
        header += [f"{a}/{n}" for n, _ in nbs] + [f"{a}/status", f"{a}/flag", f"{a}/ledger", f"{a}/variant",
                                                   f"{a}/late", f"{a}/copies"]
    rows = [header + ["late_penalty", "total", "mean_percent"]]
    for sid in sorted(set(people) | {s for es in per.values() for s, e in es.items() if e.failed is not None}):
        st = people.get(sid)
        row = [sid, (st.last_name or "") if st else "", (st.first_name or "") if st else "",
               (st.email or "") if st else ""]
        total, penalty, failed_only, percents = 0.0, 0.0, True, []
        for a, nbs in notebooks.items():
            e = per[a].get(sid) or Entry()
            scored = e.submitted and e.failed is None
            failed_only = failed_only and e.failed is not None
            row += [_fmt(e.scores.get(n, 0.0)) if scored else "" for n, _ in nbs]
            row.append(f"failed: {e.failed}" if e.failed is not None else
                       "needs manual grade" if e.manual else "graded" if e.submitted else "missing")
            # nbgrader's flag decides (an instructor unflags after looking); the grader's
            # reasons say why
            why = flag_reasons(course, a, sid) if (e.flagged or e.failed is not None) else []
            mine = copies[a].get(sid, [])
            if e.flagged and mine:
                why.append("possible copy")
            row.append("; ".join(why) or ("flagged" if e.flagged else ""))
            vouch = ledger_status(course, a, sid) if e.submitted and e.failed is None else None
            row.append(vouch.text if vouch else "")
            row.append(variant_of(sid, a))
            row.append(late_of(sid, a, e))
            row.append(copy_flags.summary(mine))
            total += sum(e.scores.values())
            penalty += e.penalty
            top = sum(m for _, m in nbs)
            if top and e.failed is None:      # every assignment weighs the same; missing counts 0
                percents.append(100 * (sum(e.scores.values()) - e.penalty) / top)
        rows.append(row + (["", "", ""] if failed_only else
                           [_fmt(penalty), _fmt(total - penalty),
                            f"{sum(percents) / len(percents):.1f}" if percents else ""]))
    if with_max:
        maxrow = ["(max)", "", "", ""]
        for a, nbs in notebooks.items():
            maxrow += [_fmt(m) for _, m in nbs] + ["", "", "", "", "", ""]
        rows.append(maxrow + ["", _fmt(sum(m for nbs in notebooks.values() for _, m in nbs)), "100"])
    return rows


def _lateness(course: Course, assignments: list[str]):
    """(student, assignment, Entry) -> "late by 1 d 2 h", "on time (extended to ...: why)", "on
    time", or "" (no due date, nothing handed in): against the student's own deadline."""
    from autograder.grading import deadlines

    dues = {a: deadlines.due_date(course, a) for a in assignments}
    exts = {a: deadlines.extensions(course, a) for a in assignments}

    def late_of(student: str, assignment: str, e: Entry) -> str:
        if dues[assignment] is None or not e.submitted:
            return ""
        return deadlines.lateness(course, assignment, student, e.timestamp, dues[assignment],
                                  exts[assignment].get(student)).text

    return late_of


def _variants(course: Course, assignments: list[str]):
    """(student, assignment) -> the numbers that student's questions were asked with
    ("Q2: a 512-token prompt, ...; Q3: ..."), "the lesson's own" without a course secret, ""
    for an assignment none of whose questions varies."""
    from course_lib.exercises.question_ids import label
    from course_lib.questions import variants as V

    from autograder.authoring import variants as course_variants

    secret = course_variants.load_secret(course)
    qids = {}
    for a in assignments:
        try:
            qids[a] = course_variants.questions(course, a)
        except OSError:               # an assignment whose source is gone: nothing to say
            qids[a] = []

    def variant_of(student: str, assignment: str) -> str:
        if not qids[assignment]:
            return ""
        if secret is None:
            return "the lesson's own"
        key = course_variants.key_for(secret, student)
        try:
            drawn = course_variants.assigned(key, qids[assignment])
        except (RuntimeError, ValueError) as e:
            # course_lib changed since (no admissible variant left): the export says so, never
            # stops with a traceback (issue 47); `grade` refuses such a change before any student
            return f"cannot be drawn now: {e}"
        return "; ".join(f"{label(q)}: {V.describe(q, g)}" for q, g in drawn.items())

    return variant_of


def _fmt(x: float) -> str:
    return f"{x:g}"
