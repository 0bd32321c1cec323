"""`unflag`: the instructor looked at a flagged submission and clears its flag, in one step.

    python -m autograder unflag A STUDENT [--notebook NB] --reason "looked: an honest slip"

nbgrader's flag (the Formgrader's "Flagged?") is cleared on the student's notebooks (or one), so
`export --lms` posts the score and the export's flag column is empty. The reasons standing at
that moment (the grader's, the copy check's) are recorded as cleared, with who, when and why, in
autograded/.autograder/<assignment>/_unflagged.json: a later regrade that finds the same reasons
does not flag again (the instructor already looked); a new finding does. Unflagging in the
Formgrader is the same for the flag, but records nothing, so a regrade flags again.
"""
from __future__ import annotations

import datetime as dt
import getpass
import json
import os
from dataclasses import dataclass

from autograder.course import Course
from autograder.grading.status import WHOLE, flags, write_json
from autograder.integrity.flags import Flag, Reason


class UnflagError(ValueError):
    """An unflag that cannot be done as asked; the message says what is expected."""


@dataclass(frozen=True)
class Unflagged:
    student: str
    notebooks: list        # the notebooks whose flag was cleared
    reasons: list          # the reasons cleared with them ([Reason])


def _path(course: Course, assignment: str):
    return course.state / assignment / "_unflagged.json"


def _read(course: Course, assignment: str) -> dict:
    try:
        data = json.loads(_path(course, assignment).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _key(notebook: str, r: Reason) -> str:
    return json.dumps([notebook, r.flag.value, r.message])


def cleared(course: Course, assignment: str, student: str) -> set[str]:
    """The (notebook, reason) pairs an instructor cleared for this student, as keys."""
    entries = _read(course, assignment).get(student) or []
    return {k for e in entries if isinstance(e, dict) for k in e.get("cleared", []) if isinstance(k, str)}


def still_to_flag(course: Course, assignment: str, student: str, reasons: dict) -> dict:
    """`reasons` ({notebook: [Reason]}) without those the instructor already cleared: a regrade
    that finds what the instructor looked at does not flag it again."""
    done = cleared(course, assignment, student)
    if not done:
        return reasons
    out = {nb: [r for r in rs if _key(nb, r) not in done] for nb, rs in reasons.items()}
    return {nb: rs for nb, rs in out.items() if rs}


def unflag(course: Course, assignment: str, student: str, reason: str, notebook: str | None = None,
           by: str | None = None) -> Unflagged:
    """Clear nbgrader's flag on the student's notebooks (or `notebook`) and record the reasons
    standing now as cleared."""
    from nbgrader.api import MissingEntry

    from autograder.integrity.copy_flags import reasons as copy_reasons

    if not reason or not reason.strip():
        raise UnflagError("say why (--reason \"...\"): the record keeps it")
    if not course.db.is_file():
        raise UnflagError(f"no gradebook at {course.db}: grade {assignment} first")
    with course.gradebook() as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            raise UnflagError(f"{student} has no submission of {assignment} in the gradebook") from None
        names = [nb.name for nb in sub.notebooks]
        if notebook is not None and notebook not in names:
            raise UnflagError(f"{assignment} has no notebook {notebook!r} (it has {', '.join(sorted(names))})")
        chosen = [nb for nb in sub.notebooks if notebook in (None, nb.name)]
        done = [nb.name for nb in chosen if nb.flagged]
        for nb in chosen:
            nb.flagged = False
        chosen = [nb.name for nb in chosen]
        gb.db.commit()
    standing = flags(course, assignment, student)
    for nb, rs in copy_reasons(course, assignment).get(student, {}).items():
        standing.setdefault(nb, []).extend(rs)
    gone = [(nb, r) for nb, rs in standing.items() for r in rs
            if nb == WHOLE or nb in chosen and r.flag is not Flag.UNKNOWN]
    data = _read(course, assignment)
    data.setdefault(student, []).append({
        "notebooks": chosen, "cleared": sorted({_key(nb, r) for nb, r in gone}),
        "reason": reason.strip()[:500], "by": by or _who(),
        "at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")})
    write_json(_path(course, assignment), data)
    return Unflagged(student, done, [r for _, r in gone])


def _who() -> str:
    try:
        return getpass.getuser()
    except Exception:       # no user name in this environment
        return str(os.getuid())
