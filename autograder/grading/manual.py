"""`manual`: points and comments for the manually graded cells (written answers, reflections).

    python -m autograder manual A                                 # what is still to grade
    python -m autograder manual A --template todo.csv             # a CSV to fill in (with the answers)
    python -m autograder manual A --csv todo.csv                  # enter a filled-in CSV
    python -m autograder manual A --student ann --cell hello_q3_reflection --points 1 [--comment "..."]

The scores go into the gradebook as nbgrader's formgrader writes them (Grade.manual_score,
Comment.manual_comment); the formgrader shows them and can change them, and regrading keeps
them. Feedback generated afterwards shows them; until then such a cell reads "awaiting
instructor grading".

CSV columns: student_id, notebook, grade_id, max_points, points, comment (answer is ignored on
import). An empty points or comment cell leaves that value as it is. Every row is checked
before anything is written; one bad row writes nothing.
"""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import nbformat

from course_lib.exercises.question_ids import cell_id, is_manually_graded, points

from autograder.course import Course
from autograder.outputs import csvsafe
from autograder.authoring.cells import read_source

FIELDS = ["student_id", "notebook", "grade_id", "max_points", "points", "comment", "answer"]


@dataclass
class Entry:
    student: str
    notebook: str
    grade_id: str
    points: float | None
    comment: str | None


def manual_cells(course: Course, assignment: str) -> dict[str, dict[str, float]]:
    """{notebook: {grade_id: max points}} of the cells graded by hand (grade and solution/task)."""
    out = {}
    for nb in course.notebooks(assignment):
        book = read_source(course.source / assignment / f"{nb}.ipynb")
        out[nb] = {cell_id(c): points(c) for c in book.cells if is_manually_graded(c)}
    return out


def awaiting(grade) -> bool:
    """Whether a graded cell awaits a hand grade: nbgrader's own `needs_manual_grade`, which the
    Formgrader, `export` ("needs manual grade"), the LMS rule and `grade`'s summary read too, so
    every tool counts the same cells (a manual score left for review after the answer changed
    awaits one as much as a cell nobody graded)."""
    return bool(grade.needs_manual_grade)


def _answer_text(course: Course, assignment: str, student: str, nb: str, grade_id: str) -> str:
    path = course.autograded / student / assignment / f"{nb}.ipynb"
    if not path.is_file():
        return ""
    for c in nbformat.read(str(path), as_version=4).cells:
        if cell_id(c) == grade_id:
            return c.source
    return ""


def status(course: Course, assignment: str) -> list[dict]:
    """One row per (student, manual cell), and per other graded cell awaiting a hand grade (an
    autograded cell whose hand-given score is left for review): its max points, points so far
    (None: not graded), comment and whether it awaits a grade (awaiting())."""
    from nbgrader.api import Gradebook, MissingEntry

    cells = manual_cells(course, assignment)
    rows = []
    with course.gradebook() as gb:
        try:
            a = gb.find_assignment(assignment)
        except MissingEntry:
            return rows
        for sub in sorted(a.submissions, key=lambda s: s.student.id):
            for nb in sorted(sub.notebooks, key=lambda n: n.name):
                by_name = {g.name: g for g in nb.grades}
                mine = cells.get(nb.name, {})
                others = {g.name: g.max_score for g in nb.grades if g.name not in mine and awaiting(g)}
                for gid, maxp in {**mine, **others}.items():
                    g = by_name.get(gid)
                    if g is None:
                        continue
                    try:
                        comment = gb.find_comment(gid, nb.name, assignment, sub.student.id).manual_comment
                    except MissingEntry:
                        comment = None
                    graded = g.manual_score if g.manual_score is not None else g.auto_score
                    rows.append({"student_id": sub.student.id, "notebook": nb.name, "grade_id": gid,
                                 "max_points": maxp, "points": graded, "comment": comment or "",
                                 "awaiting": awaiting(g)})
    return rows


def write_template(course: Course, assignment: str, out: Path, only_awaiting: bool = False) -> int:
    rows = [r for r in status(course, assignment) if r["awaiting"] or not only_awaiting]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csvsafe.DictWriter(f, fieldnames=FIELDS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({**r, "points": "" if r["awaiting"] or r["points"] is None else f"{r['points']:g}",
                        "max_points": f"{r['max_points']:g}",
                        "answer": _answer_text(course, assignment, r["student_id"], r["notebook"], r["grade_id"])})
    return len(rows)


def read_csv(path: Path) -> list[Entry]:
    entries = []
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = {"student_id", "grade_id"} - set(reader.fieldnames or [])
        if missing:
            raise SystemExit(f"{path}: the CSV needs the columns student_id, grade_id, points and/or comment "
                             f"(missing: {', '.join(sorted(missing))})")
        for line, row in enumerate(reader, start=2):
            pts = (row.get("points") or "").strip()
            try:
                points = float(pts) if pts else None
            except ValueError:
                raise SystemExit(f"{path}, line {line}: points {pts!r} is not a number") from None
            comment = csvsafe.unescape(row.get("comment") or "")
            entries.append(Entry(row["student_id"].strip(), (row.get("notebook") or "").strip(), row["grade_id"].strip(),
                                 points, comment if comment else None))
    return entries


def enter(course: Course, assignment: str, entries: list[Entry]) -> list[str]:
    """Write the points and comments, all or nothing. Returns one line per change."""
    from nbgrader.api import MissingEntry

    cells = manual_cells(course, assignment)
    where = {gid: nb for nb, ids in cells.items() for gid in ids}
    problems, changes = [], []
    for e in entries:
        nb = e.notebook or where.get(e.grade_id)
        if e.grade_id not in where or (e.notebook and e.notebook != where[e.grade_id]):
            known = ", ".join(sorted(where)) or "none"
            problems.append(f"{e.student}: {e.grade_id!r} is not a manually graded cell of {assignment} ({known})")
            continue
        e.notebook = nb
        maxp = cells[nb][e.grade_id]
        if e.points is not None and not (0 <= e.points <= maxp):
            problems.append(f"{e.student} {e.grade_id}: {e.points:g} points, expected 0 to {maxp:g}")
    if problems:
        raise SystemExit("nothing entered:\n  " + "\n  ".join(problems))
    with course.gradebook() as gb:
        try:
            for e in entries:
                try:
                    g = gb.find_grade(e.grade_id, e.notebook, assignment, e.student)
                except MissingEntry:
                    raise SystemExit(f"nothing entered: {e.student} has no graded submission of {assignment}/"
                                     f"{e.notebook} (grade it first)") from None
                if e.points is not None:
                    g.manual_score = e.points
                    g.needs_manual_grade = False
                    changes.append(f"{e.student} {e.notebook}/{e.grade_id}: {e.points:g} of {g.max_score:g}")
                if e.comment is not None:
                    try:
                        c = gb.find_comment(e.grade_id, e.notebook, assignment, e.student)
                    except MissingEntry:
                        raise SystemExit(f"nothing entered: {e.grade_id} takes no comment") from None
                    c.manual_comment = e.comment
                    changes.append(f"{e.student} {e.notebook}/{e.grade_id}: comment")
            gb.db.commit()
        except BaseException:
            gb.db.rollback()
            raise
    from autograder.grading import deadlines

    if deadlines.due_date(course, assignment) is not None:     # the late penalty of the new score
        for student in sorted({e.student for e in entries if e.points is not None}):
            deadlines.reassess(course, assignment, student)
    return changes
