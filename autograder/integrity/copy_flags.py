"""Possible copies as flags: each submission autograder.integrity.copies finds evidence against gets
nbgrader's flag (the Formgrader's "Flagged?") on the notebook of the question, once, and the
evidence is kept for the export and the report (autograded/.autograder/<assignment>/_copies.json:
{"rows": [...copies rows], "flagged": ["student/notebook/question/variable/matches", ...]}).

A flag is set once per finding: an instructor who unflags after looking is not overruled by the
next `report` or `grade`; a new finding flags again.
"""
from __future__ import annotations

import json

from autograder.course import Course, answer_cells
from autograder.grading.status import write_json
from autograder.integrity.flags import Flag, Reason


def _path(course: Course, assignment: str):
    return course.state / assignment / "_copies.json"


def saved(course: Course, assignment: str) -> dict[str, list[dict]]:
    """{student: [copies rows]} of the last copy check (empty before any)."""
    try:
        rows = json.loads(_path(course, assignment).read_text()).get("rows", [])
    except (OSError, ValueError, AttributeError):
        return {}
    out: dict[str, list[dict]] = {}
    for r in rows if isinstance(rows, list) else []:
        if isinstance(r, dict) and isinstance(r.get("student"), str):
            out.setdefault(r["student"], []).append(r)
    return out


def summary(rows: list[dict]) -> str:
    """One cell of text for a student's possible copies: "question variable: evidence; ..."."""
    return "; ".join(f"{r.get('question')} {r.get('variable')}: {r.get('evidence')}" for r in rows)


def _notebooks(course: Course, assignment: str) -> dict[str, str]:
    """{question id: the notebook its answer cell is in}."""
    out = {}
    for nb in course.notebooks(assignment):
        for c in answer_cells(course.source / assignment / f"{nb}.ipynb"):
            out[c.grade_id.rsplit("_", 1)[0]] = nb
    return out


def _reason(r: dict) -> Reason:
    return Reason(Flag.POSSIBLE_COPY, f"possible copy: {r['question']} {r['evidence']}")


def reasons(course: Course, assignment: str) -> dict[str, dict[str, list[Reason]]]:
    """{student: {notebook: [Reason]}} of the last copy check: why a copy flag was set, for the
    report and the export beside the grader's own reasons (the status file holds none of these)."""
    rows = [r for rs in saved(course, assignment).values() for r in rs]
    if not rows:
        return {}
    notebook_of = _notebooks(course, assignment)
    out: dict[str, dict[str, list[Reason]]] = {}
    for r in rows:
        nb = notebook_of.get(r.get("question"))
        if nb:
            out.setdefault(r["student"], {}).setdefault(nb, []).append(_reason(r))
    return out


def check(course: Course, assignment: str, rows: list[dict] | None = None) -> list[dict]:
    """Find the possible copies (or take `rows` found already), keep them, and flag each new
    finding's notebook in the gradebook. Returns the rows."""
    from autograder.grading.merge import flag_submission
    from autograder.integrity.copies import possible_copies

    rows = possible_copies(course, assignment) if rows is None else rows
    try:
        done = set(json.loads(_path(course, assignment).read_text()).get("flagged", []))
    except (OSError, ValueError, AttributeError):
        done = set()
    notebook_of = _notebooks(course, assignment)
    new: dict[str, dict] = {}
    for r in rows:
        nb = notebook_of.get(r["question"])
        key = "/".join([r["student"], nb or "", r["question"], r["variable"], r["matches"]])
        if nb and key not in done:
            new.setdefault(r["student"], {}).setdefault(nb, []).append(_reason(r))
            done.add(key)
    for student, reasons in new.items():
        flag_submission(course.db_url, assignment, student, reasons)
    write_json(_path(course, assignment), {"rows": rows, "flagged": sorted(done)})
    return rows
