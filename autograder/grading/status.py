"""What the last `grade` run did with each submission: autograded/.autograder/<assignment>/<student>.json
({"status": "graded"|"failed", ...}), read by `export`, `report` and the copy check."""
from __future__ import annotations

import json
import os
from pathlib import Path

from autograder.course import Course
from autograder.integrity.flags import Flag, Reason

WHOLE = "*"    # the notebook key of a reason about the whole submission (a failed grading)
#: a failed status's list of the notebooks its failure flagged (merge.unflag_failure takes them back)
FAILURE_FLAGGED = "failure_flagged"


def flags(course: Course, assignment: str, student: str) -> dict[str, list[Reason]]:
    """Why the last grading flagged this submission: {notebook: [Reason]} (a disagreement with the
    re-verification, a prediction record missing or edited, a prediction changed after its
    reveal, a record the hub's ledger does not vouch for), {WHOLE: [...]} for a failure; empty
    when nothing did."""
    st = grading_status(course, assignment, student)
    if st.get("status") == "failed":
        return {WHOLE: [Reason(Flag.GRADING_FAILED, f"grading failed: {st.get('cause', 'failed')}")]}
    return {nb: [Reason.from_json(r) for r in reasons] for nb, reasons in sorted((st.get("flags") or {}).items())}


def flag_reasons(course: Course, assignment: str, student: str) -> list[str]:
    """flags() as the lines the instructor reads: "notebook: why" (a failure: "grading failed: ...")."""
    return [r.message if nb == WHOLE else f"{nb}: {r.message}"
            for nb, reasons in flags(course, assignment, student).items() for r in reasons]


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


def status_path(course: Course, assignment: str, student: str) -> Path:
    return course.state / assignment / f"{student}.json"


def grading_status(course: Course, assignment: str, student: str) -> dict:
    """What the last run did with this submission: {"status": "graded"|"failed", ...} or {}."""
    p = status_path(course, assignment, student)
    try:
        return json.loads(p.read_text())
    except (OSError, ValueError):
        return {}


def failed_students(course: Course, assignment: str) -> dict[str, str]:
    """{student: cause} of the submissions whose last grading failed."""
    d = course.state / assignment
    out = {}
    for p in sorted(d.glob("*.json")) if d.is_dir() else []:
        if p.name.startswith(("_", ".")):   # _preflight.json: not a student (ids start alphanumeric)
            continue
        try:
            st = json.loads(p.read_text())
        except ValueError:
            continue
        if st.get("status") == "failed":
            out[p.stem] = st.get("cause", "failed")
    return out


def graded_students(course: Course, assignment: str) -> list[str]:
    """Students whose submission of `assignment` is graded (not failed), with an autograded copy."""
    failed = failed_students(course, assignment)
    return sorted(p.parent.name for p in course.autograded.glob(f"*/{assignment}")
                  if p.is_dir() and not p.parent.name.startswith(".") and p.parent.name not in failed)
