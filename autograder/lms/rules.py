"""The scoring rule of `export --lms`: from the gradebook to one decision per student.

What is posted is the assignment's score as the grades CSV has it: the notebooks' scores (auto +
manual, as in the Formgrader) minus nbgrader's late penalty (`late=APPLY`, the default) or
without it (`late=IGNORE`), never below 0, out of the assignment's maximum. Never posted:
* a submission whose grading failed (a failure is never a zero);
* a submission with written answers nobody has graded yet (its score would be too low);
* no submission (the LMS shows it as missing; the instructor decides);
* a flagged submission with `flagged=HOLD` (the default: posted once an instructor unflags it in
  the Formgrader); with `flagged=COMMENT` it is posted with the flag's reasons as its comment.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from autograder.course import Course
from autograder.grading.status import failed_students, flag_reasons
from autograder.outputs.gradesheet import entries


class Late(enum.Enum):
    APPLY = "apply"
    IGNORE = "ignore"


class Flagged(enum.Enum):
    HOLD = "hold"
    COMMENT = "comment"


class Held(enum.Enum):
    """Why a student's score is not posted."""
    FAILED = "grading failed"
    MANUAL = "written answers not graded yet"
    MISSING = "no submission"
    FLAGGED = "flagged: held back until an instructor unflags it"
    NO_LMS_ID = "no LMS identity (never launched the course from the LMS)"


@dataclass(frozen=True)
class Rule:
    late: Late = Late.APPLY
    flagged: Flagged = Flagged.HOLD

    def describe(self) -> str:
        return (f"score = notebooks' scores {'minus' if self.late is Late.APPLY else 'without'} the late penalty; "
                f"flagged submissions {'held back' if self.flagged is Flagged.HOLD else 'posted with a comment'}; "
                "failed, ungraded written answers and missing submissions are not posted")


@dataclass(frozen=True)
class Decision:
    student: str
    score: float | None = None      # None: held
    maximum: float = 0.0
    comment: str = ""
    held: Held | None = None
    detail: str = ""                # the flag's reasons, the failure's cause


def decide(course: Course, assignment: str, rule: Rule) -> list[Decision]:
    """One Decision per student the gradebook knows (and each failed one), sorted by id."""
    from nbgrader.api import MissingEntry

    from autograder.grading.deadlines import retake_penalties

    retake_penalties(course, assignment)      # a hand grade in the Formgrader leaves the old one
    with course.gradebook() as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            raise SystemExit(f"assignment {assignment!r} is not in the gradebook {course.db}: grade it first") from None
        maximum = float(a.max_score)
        per = entries(gb, course, a, failed_students(course, assignment))
        students = sorted({s.id for s in gb.students} | set(per))
    out = []
    for sid in students:
        e = per.get(sid)
        if e is None or not e.submitted and e.failed is None:
            out.append(Decision(sid, maximum=maximum, held=Held.MISSING))
            continue
        if e.failed is not None:
            out.append(Decision(sid, maximum=maximum, held=Held.FAILED, detail=e.failed))
            continue
        if e.manual:
            out.append(Decision(sid, maximum=maximum, held=Held.MANUAL))
            continue
        why = "; ".join(flag_reasons(course, assignment, sid)) if e.flagged else ""
        if e.flagged and rule.flagged is Flagged.HOLD:
            out.append(Decision(sid, maximum=maximum, held=Held.FLAGGED, detail=why or "flagged"))
            continue
        raw = sum(e.scores.values())
        penalty = e.penalty if rule.late is Late.APPLY else 0.0
        score = max(0.0, raw - penalty)
        notes = []
        if e.penalty:
            notes.append(f"late penalty {e.penalty:g} {'applied' if rule.late is Late.APPLY else 'not applied'}")
        if e.flagged:
            notes.append(f"flagged: {why or 'flagged'}")
        comment = f"{score:g} / {maximum:g}" + (f" ({'; '.join(notes)})" if notes else "")
        out.append(Decision(sid, score=round(score, 6), maximum=maximum, comment=comment))
    return out
