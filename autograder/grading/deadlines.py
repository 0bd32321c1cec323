"""Due dates and per-student extensions (issue 34).

* The due date lives in nbgrader's gradebook (the assignment's `duedate`, naive UTC as nbgrader
  keeps it), so the Formgrader shows it and nbgrader's late penalty reads it. `release A --due`
  sets it; a due date must say its time zone (an offset, `Z`, or a zone name with --tz).
* An extension is a record in the course folder, extensions.jsonl (one JSON object a line,
  appended: assignment, student, until, reason, by, at; the last line of a student's assignment
  counts), and nbgrader's own per-submission `extension` (until - due) once the submission is in
  the gradebook. `grade` hands it to the worker that computes the late penalty, `collect` says
  who is late against their own deadline.
"""
from __future__ import annotations

import datetime as dt
import getpass
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from autograder.course import Course

UTC = dt.timezone.utc
HOW = ("write it with its time zone: 2027-02-01T23:59+01:00, 2027-02-01T23:59Z, "
       "or 2027-02-01T23:59 with --tz Europe/Berlin")


class DeadlineError(ValueError):
    """A due date or extension that cannot be used as given; the message says what is expected."""


def parse_when(text: str, tz: str | None = None) -> dt.datetime:
    """An aware datetime (UTC) from ISO 8601 text with an offset or Z, or a naive one in zone `tz`."""
    raw = (text or "").strip()
    try:
        when = dt.datetime.fromisoformat(raw[:-1] + "+00:00" if raw.endswith(("Z", "z")) else raw)
    except ValueError:
        raise DeadlineError(f"{text!r} is not a date and time; {HOW}") from None
    if when.tzinfo is None:
        if not tz:
            raise DeadlineError(f"{text!r} has no time zone; {HOW}")
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

        try:
            when = when.replace(tzinfo=ZoneInfo(tz))
        except (ZoneInfoNotFoundError, ValueError):
            raise DeadlineError(f"--tz {tz!r} is not a time zone name (e.g. Europe/Berlin, UTC)") from None
    elif tz:
        raise DeadlineError(f"{text!r} has its own offset; leave out --tz {tz}")
    return when.astimezone(UTC)


def _naive_utc(when: dt.datetime) -> dt.datetime:
    return when.astimezone(UTC).replace(tzinfo=None)


def _aware(when: dt.datetime | None) -> dt.datetime | None:
    """nbgrader's naive UTC as an aware datetime."""
    if when is None:
        return None
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def set_due(course: Course, assignment: str, due: dt.datetime) -> dt.datetime:
    """Record `due` as the assignment's due date in the gradebook (created if needed)."""

    course.root.mkdir(parents=True, exist_ok=True)
    with course.gradebook() as gb:
        gb.update_or_create_assignment(assignment, duedate=_naive_utc(due))
    for student, ext in extensions(course, assignment).items():   # an earlier extension keeps its end
        apply_extension(course, assignment, student, ext)
    return due


def due_date(course: Course, assignment: str) -> dt.datetime | None:
    """The assignment's due date (aware, UTC) from the gradebook, or None."""
    if not course.db.is_file():
        return None
    from nbgrader.api import MissingEntry

    with course.gradebook() as gb:
        try:
            return _aware(gb.find_assignment(assignment).duedate)
        except MissingEntry:
            return None


# ---------------------------------------------------------------------------------------------
# extensions
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Extension:
    assignment: str
    student: str
    until: str          # ISO 8601, UTC
    reason: str
    by: str
    at: str

    @property
    def until_dt(self) -> dt.datetime:
        return dt.datetime.fromisoformat(self.until)


def extensions_path(course: Course) -> Path:
    return course.root / "extensions.jsonl"


def _records(course: Course) -> list[Extension]:
    path = extensions_path(course)
    if not path.is_file():
        return []
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            out.append(Extension(**{k: str(d[k]) for k in Extension.__dataclass_fields__}))
        except (ValueError, KeyError, TypeError):
            raise DeadlineError(f"{path}:{n}: not an extension record (assignment, student, until, reason, by, at)") \
                from None
    return out


def extensions(course: Course, assignment: str) -> dict[str, Extension]:
    """{student: their extension of `assignment`} (the last record counts; an empty `until`
    withdraws one)."""
    out = {}
    for e in _records(course):
        if e.assignment == assignment:
            out[e.student] = e
    return {s: e for s, e in out.items() if e.until}


def grant(course: Course, assignment: str, student: str, until: dt.datetime | None, reason: str,
          by: str | None = None) -> Extension:
    """Record an extension of `assignment` for `student` until `until` (None withdraws it)."""
    if not reason or not reason.strip():
        raise DeadlineError("say why (--reason \"...\"): the record keeps it")
    due = due_date(course, assignment)
    if until is not None:
        if due is None:
            raise DeadlineError(f"{assignment} has no due date: set one first (python -m autograder release "
                                f"{assignment} --due 2027-02-01T23:59+01:00)")
        if until <= due:
            raise DeadlineError(f"{until.isoformat()} is not after the due date {due.isoformat()}")
    ext = Extension(assignment, student, until.astimezone(UTC).isoformat() if until else "", reason.strip()[:500],
                    by or _who(), dt.datetime.now(UTC).isoformat(timespec="seconds"))
    path = extensions_path(course)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(asdict(ext), sort_keys=True) + "\n")
    apply_extension(course, assignment, student, ext if until else None)
    return ext


def _who() -> str:
    try:
        return getpass.getuser()
    except Exception:       # no user name in this environment
        return str(os.getuid())


def extension_delta(course: Course, assignment: str, student: str,
                    ext: Extension | None = None) -> dt.timedelta | None:
    """nbgrader's extension of a student's submission: their own deadline minus the due date."""
    ext = ext or extensions(course, assignment).get(student)
    due = due_date(course, assignment)
    if ext is None or due is None:
        return None
    return ext.until_dt - due


def apply_extension(course: Course, assignment: str, student: str, ext: Extension | None) -> None:
    """Put the extension (or none) on the student's submission in the gradebook, if it is there."""
    if not course.db.is_file():
        return
    from nbgrader.api import MissingEntry

    delta = extension_delta(course, assignment, student, ext) if ext else None
    with course.gradebook() as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return
        sub.extension = delta
        gb.db.commit()


@dataclass(frozen=True)
class Lateness:
    """A submission's time against the student's own deadline."""
    seconds_late: float         # 0 when on time
    deadline: dt.datetime | None
    extension: Extension | None

    @property
    def text(self) -> str:
        if self.deadline is None:
            return ""
        if self.seconds_late <= 0:
            return ("on time (extended to " + self.deadline.strftime("%Y-%m-%d %H:%M UTC") + ": "
                    + self.extension.reason + ")") if self.extension else "on time"
        return f"late by {duration(self.seconds_late)}" + (
            f" (after the extension to {self.deadline.strftime('%Y-%m-%d %H:%M UTC')})" if self.extension else "")


def duration(seconds: float) -> str:
    """'1 d 2 h', '3 h 5 min', '40 s'."""
    s = int(round(seconds))
    d, rem = divmod(s, 86400)
    h, rem = divmod(rem, 3600)
    m, sec = divmod(rem, 60)
    if d:
        return f"{d} d {h} h"
    if h:
        return f"{h} h {m} min"
    return f"{m} min {sec} s" if m else f"{sec} s"


def lateness(course: Course, assignment: str, student: str, timestamp: dt.datetime | str | None,
             due: dt.datetime | None = None, ext: Extension | None = None) -> Lateness:
    """How late a submission made at `timestamp` is against the student's own deadline."""
    from nbgrader.utils import parse_utc

    due = due if due is not None else due_date(course, assignment)
    ext = ext if ext is not None else extensions(course, assignment).get(student)
    if due is None:
        return Lateness(0.0, None, ext)
    deadline = ext.until_dt if ext else due
    if timestamp is None:
        return Lateness(0.0, deadline, ext)
    when = _aware(parse_utc(timestamp) if isinstance(timestamp, str) else timestamp)
    return Lateness(max(0.0, (when - deadline).total_seconds()), deadline, ext)


def reassess(course: Course, assignment: str, student: str) -> None:
    """nbgrader's late penalty of each of the student's notebooks again, on the course gradebook:
    on the score with the manual grades in it (a worker's private gradebook has none), against
    the due date and the student's extension as they are now."""
    retake_penalties(course, assignment, [student])


@dataclass(frozen=True)
class PenaltyChange:
    """A notebook whose stored late penalty was stale (its score changed since it was taken)."""
    assignment: str
    student: str
    notebook: str
    before: float
    after: float


def retake_penalties(course: Course, assignment: str | None = None,
                     students: list[str] | None = None) -> list[PenaltyChange]:
    """nbgrader's late penalty of every submitted notebook (of `assignment`, or of every one; of
    `students`, or all) taken again from its score as it is now, in one gradebook session, and
    stored where it changed. Every command that reads scores calls this first: a hand grade
    entered in the Formgrader goes through nbgrader's own API, which changes the score and
    leaves the penalty of the old one (24.6 where 24.3 was due), so the penalty cannot be trusted
    to have been taken when the score changed; taken when read, no stale one reaches `export`,
    the LMS, the report or the feedback. The same computation as nbgrader's AssignLatePenalties
    (its plugin, the course's policy, the penalty kept between 0 and the score)."""
    if not course.db.is_file():
        return []
    from nbgrader.api import MissingEntry
    from nbgrader.preprocessors import AssignLatePenalties

    pp = AssignLatePenalties(config=course.user_config())
    pp.init_plugin()
    out = []
    with course.gradebook() as gb:
        if assignment is None:
            found = list(gb.assignments)
        else:
            try:
                found = [gb.find_assignment(assignment)]
            except MissingEntry:
                return []
        for a in found:
            for sub in a.submissions:
                if students is not None and sub.student.id not in students:
                    continue
                late = sub.total_seconds_late
                for nb in sub.notebooks:
                    new = None
                    if late > 0:
                        new = pp.plugin_inst.late_submission_penalty(sub.student.id, nb.score, late)
                        if new is not None:          # as nbgrader: never below 0 nor above the score
                            new = min(max(new, 0.0), nb.score)
                    old = nb.late_submission_penalty
                    if (old or 0.0) != (new or 0.0):
                        nb.late_submission_penalty = new
                        out.append(PenaltyChange(a.name, sub.student.id, nb.name, old or 0.0, new or 0.0))
        if out:
            gb.db.commit()
    return out
