"""What `grade` prints at its end: each student's score of the assignment, from the gradebook."""
from __future__ import annotations

from dataclasses import dataclass

from autograder.course import Course


@dataclass(frozen=True)
class Score:
    student: str
    score: float            # the notebooks' scores, less the late penalty
    max_score: float
    penalty: float
    awaiting: int           # cells waiting for a manual grade
    late: str               # autograder.grading.deadlines.Lateness.text ("" without a due date)


def scores(course: Course, assignment: str, students: list[str] | None = None) -> list[Score]:
    """Every graded submission's score (of `students`, or all) in the gradebook, by student id."""
    from nbgrader.api import MissingEntry

    from autograder.grading import deadlines, manual
    from autograder.grading.status import failed_students

    deadlines.retake_penalties(course, assignment, students)   # a Formgrader hand grade leaves the old one
    failed = failed_students(course, assignment)
    due = deadlines.due_date(course, assignment)
    exts = deadlines.extensions(course, assignment)
    out = []
    with course.gradebook() as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return []
        top = sum(nb.max_score for nb in a.notebooks)
        for sub in sorted(a.submissions, key=lambda x: x.student.id):
            s = sub.student.id
            if s in failed or (students is not None and s not in students):
                continue
            penalty = sum(nb.late_submission_penalty or 0.0 for nb in sub.notebooks)
            awaiting = sum(1 for nb in sub.notebooks for g in nb.grades if manual.awaiting(g))
            late = deadlines.lateness(course, assignment, s, sub.timestamp, due, exts.get(s)).text
            out.append(Score(s, sum(nb.score for nb in sub.notebooks) - penalty, top, penalty, awaiting, late))
    return out


def lines(course: Course, assignment: str, students: list[str] | None = None) -> list[str]:
    out = []
    for sc in scores(course, assignment, students):
        extra = [sc.late] if sc.late and sc.late != "on time" else []
        if sc.penalty:
            extra.append(f"late penalty {sc.penalty:g}")
        if sc.awaiting:
            extra.append(f"{sc.awaiting} cell(s) awaiting a manual grade")
        out.append(f"  {sc.student}: {sc.score:g} of {sc.max_score:g}" + (f" ({'; '.join(extra)})" if extra else ""))
    return out
