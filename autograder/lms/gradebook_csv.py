"""The LMS's own gradebook import CSV, for an LMS without Assignment and Grade Services.

The scores are `export --lms`'s (autograder.lms.rules): a held score is an empty cell, which
both LMSs import as "no change".
* canvas: Canvas's gradebook import format: Student ("Last, First"), ID (the Canvas user id: the
  launch's custom lms_user_id), SIS User ID, SIS Login ID, Section, then a column per assignment;
  the second row, "Points Possible", holds each assignment's maximum.
* moodle: Moodle's "Import grades: CSV file": Email address, ID number, Username (the hub name)
  and a column per assignment; at import map "Email address" (or ID number) to the user field.
"""
from __future__ import annotations

import enum
from pathlib import Path

from autograder.course import Course
from autograder.lms import roster as rosters
from autograder.lms.rules import Rule, decide
from autograder.outputs import csvsafe


class Format(enum.Enum):
    CANVAS = "canvas"
    MOODLE = "moodle"


def write(course: Course, assignments: list[str], rule: Rule, fmt: Format, out: Path,
          roster: rosters.Roster | None = None) -> Path:

    roster = roster or rosters.Roster()
    decisions = {a: {d.student: d for d in decide(course, a, rule)} for a in assignments}
    with course.gradebook() as gb:
        people = {s.id: {"first": s.first_name or "", "last": s.last_name or "", "email": s.email or "",
                         "lms": s.lms_user_id or ""} for s in gb.students}
    students = sorted(set(people) | {s for ds in decisions.values() for s in ds})
    maxima = [_fmt(next(iter(decisions[a].values())).maximum) if decisions[a] else "" for a in assignments]

    def score(a, s):
        d = decisions[a].get(s)
        return _fmt(d.score) if d is not None and d.score is not None else ""

    if fmt is Format.CANVAS:
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *assignments],
                ["Points Possible", "", "", "", "", *maxima]]
        for s in students:
            p, r = people.get(s, {}), roster.people.get(s, {})
            name = ", ".join(x for x in (p.get("last"), p.get("first")) if x) or r.get("name") or s
            rows.append([name, p.get("lms") or r.get("lms_user_id", ""), r.get("sis_id", ""), "", "",
                         *[score(a, s) for a in assignments]])
    else:
        rows = [["Email address", "ID number", "Username", *assignments]]
        for s in students:
            p, r = people.get(s, {}), roster.people.get(s, {})
            rows.append([p.get("email") or r.get("email", ""), r.get("sis_id", ""), s,
                         *[score(a, s) for a in assignments]])
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        csvsafe.Writer(f).writerows(rows)
    return out


def _fmt(x: float) -> str:
    return f"{x:g}"
