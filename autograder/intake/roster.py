"""`students import ROSTER.csv`: the students' names and e-mails into the gradebook, where the
export's name columns read them (a hub with PAM accounts knows only user names);
`students import --from-accounts`: the full name of each gradebook student who is an account on
this machine (its GECOS field, as `adduser` asks for it), where the gradebook has none.

The CSV has a header with `id` (or `student_id`, `username`) and any of `first_name`,
`last_name`, `email`, `lms_user_id`; other columns are ignored. Names are shown on the
instructor's pages: markup and control characters are left out (as collect does)."""
from __future__ import annotations

import csv
from pathlib import Path

from autograder.course import Course
from course_hub.names import STUDENT_ID

ID_COLUMNS = ("id", "student_id", "username")
FIELDS = ("first_name", "last_name", "email", "lms_user_id")
MAX_ROWS = 20000


def read_roster(path: Path) -> list[dict]:
    """[{"id", first_name...}] from the CSV; SystemExit saying what is expected on a bad file."""
    from autograder.intake.identities import display_name

    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        cols = [c.strip().lower() for c in reader.fieldnames or []]
        idcol = next((c for c in ID_COLUMNS if c in cols), None)
        if idcol is None:
            raise SystemExit(f"{path}: no id column: expected a header with id (or student_id, username) and "
                             f"any of {', '.join(FIELDS)}")
        out = []
        for n, raw in enumerate(reader, 2):
            if n > MAX_ROWS:
                raise SystemExit(f"{path}: more than {MAX_ROWS} rows")
            row = {(k or "").strip().lower(): (v or "").strip() for k, v in raw.items() if isinstance(v, str)}
            sid = row.get(idcol, "")
            if not STUDENT_ID.fullmatch(sid):
                raise SystemExit(f"{path}:{n}: {sid[:40]!r} is not a student id (letters, digits, . _ @ + -)")
            out.append({"id": sid, **{k: display_name(row[k])[:200] for k in FIELDS if row.get(k)}})
    return out


def import_roster(course: Course, path: Path) -> int:
    """Create or update each student of the roster in the gradebook; returns how many."""

    rows = read_roster(path)
    course.root.mkdir(parents=True, exist_ok=True)
    with course.gradebook() as gb:
        for r in rows:
            gb.update_or_create_student(r["id"], **{k: v for k, v in r.items() if k != "id"})
    return len(rows)


def names_missing(course: Course) -> bool:
    """Whether no student in the gradebook has a name or e-mail."""

    with course.gradebook() as gb:
        people = list(gb.students)
        return bool(people) and not any(st.first_name or st.last_name or st.email for st in people)


def import_accounts(course: Course) -> int:
    """First and last names from the accounts' GECOS full names, for the gradebook's students
    without a name; returns how many were filled in."""
    import pwd


    from autograder.intake.identities import display_name

    n = 0
    with course.gradebook() as gb:
        for st in list(gb.students):
            if st.first_name or st.last_name:
                continue
            try:
                full = display_name(pwd.getpwnam(st.id).pw_gecos.split(",")[0])
            except KeyError:
                continue
            if not full:
                continue
            first, _, last = full.rpartition(" ") if " " in full else ("", "", full)
            gb.update_or_create_student(st.id, first_name=first or None, last_name=last)
            n += 1
    return n
