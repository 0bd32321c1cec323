"""A regrade that keeps what was graded, and says what it changed (issue 34).

nbgrader's rule, which the merge follows, flags every cell that has a manual score for review
again whenever a submission is autograded anew: after `grade --student X --force` the export
said "needs manual grade" for five reflections an instructor had already graded. Here, once a
regrade is merged:

* a cell graded by hand keeps its manual score and its status (graded, not awaiting) when the
  student's answer in it is the same as when it was graded (the cell's source in the old and new
  autograded notebook); a changed answer is left for review, as nbgrader would;
* what changed is appended to regrades.jsonl in the course folder, one JSON object per line:
  {"at", "assignment", "student", "why", "cell", "before", "after"} ("cell" is notebook/grade_id,
  or notebook/(late penalty) and notebook/(score)); `report` shows it.

`grade A --question ID` merges only that question's cells (the notebook is run again whole).
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import nbformat

from autograder.course import Course
from autograder.gradebook import open_gradebook, submission_or_none

LOG = "regrades.jsonl"


def log_path(course: Course) -> Path:
    return course.root / LOG


def snapshot(db_url: str, assignment: str, student: str) -> dict[str, dict]:
    """{"notebook/grade_id": {"auto", "manual", "needs_manual", "score"}, "notebook/(late penalty)":
    ..., "notebook/(score)": ...} of a submission in the gradebook; {} when it is not there."""
    from nbgrader.api import MissingEntry

    out = {}
    with open_gradebook(db_url) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return {}
        for nb in sub.notebooks:
            for g in nb.grades:
                out[f"{nb.name}/{g.name}"] = {"auto": g.auto_score, "manual": g.manual_score,
                                               "needs_manual": bool(g.needs_manual_grade), "score": g.score}
            out[f"{nb.name}/(late penalty)"] = {"score": nb.late_submission_penalty or 0.0}
            out[f"{nb.name}/(score)"] = {"score": nb.score}
    return out


def _cell_sources(folder: Path) -> dict[str, str]:
    """{"notebook/grade_id": sha256 of the cell's source} of the notebooks in an autograded folder."""
    out = {}
    for p in sorted(Path(folder).glob("*.ipynb")) if folder and Path(folder).is_dir() else []:
        try:
            nb = nbformat.read(str(p), as_version=4)
        except Exception:       # an unreadable old copy: nothing counts as unchanged
            continue
        for c in nb.cells:
            gid = (c.get("metadata", {}).get("nbgrader") or {}).get("grade_id")
            if gid:
                out[f"{p.stem}/{gid}"] = hashlib.sha256(c.source.encode()).hexdigest()
    return out


def _graded_cells_path(course: Course, assignment: str, student: str) -> Path:
    return course.state / assignment / "graded-cells" / f"{student}.json"


def graded_cells(course: Course, assignment: str, student: str) -> dict[str, str]:
    """{"notebook/grade_id": sha256 of its source} of the answers last merged into the gradebook,
    which are the answers a hand grade given since graded. Kept apart from the autograded copy:
    a failed run removes that copy (nbgrader keeps none of a failed submission), and comparing
    against nothing would leave every hand grade for review at the next successful regrade
    (issue 47: 20 graded reflections back to "awaiting"). A course graded before this record
    existed falls back to its autograded copy."""
    try:
        saved = json.loads(_graded_cells_path(course, assignment, student).read_text())
    except (OSError, ValueError):
        saved = None
    if isinstance(saved, dict) and all(isinstance(v, str) for v in saved.values()):
        return saved
    return _cell_sources(course.autograded / student / assignment)


def remember_cells(course: Course, assignment: str, student: str, folder: Path) -> None:
    """Keep the graded cells' source hashes of the autograded copy just merged (graded_cells)."""
    from autograder.grading.status import write_json

    write_json(_graded_cells_path(course, assignment, student), _cell_sources(folder))


def unchanged_cells(old: dict[str, str], new: Path) -> set[str]:
    """The graded cells ("notebook/grade_id") whose source is the same in the answers last merged
    (graded_cells) and the new autograded copy: the answer an instructor graded by hand is still
    the one handed in."""
    b = _cell_sources(new)
    return {k for k, h in old.items() if b.get(k) == h}


def only_question(data: dict, question: str) -> dict:
    """The merge data of a graded submission with every cell but those of `question` (a question
    id such as wall_q2, or a grade id) left out, the late penalty left as it is."""
    from course_lib.exercises.question_ids import question_of

    out = {**data, "notebooks": {}}
    for nb, d in data.get("notebooks", {}).items():
        grades = {g: v for g, v in d.get("grades", {}).items() if g == question or question_of(g) == question}
        comments = {g: v for g, v in d.get("comments", {}).items() if g == question or question_of(g) == question}
        if grades or comments:
            out["notebooks"][nb] = {**d, "grades": grades, "comments": comments}
    return out


def questions(course: Course, assignment: str) -> set[str]:
    """Every question id (and grade id) of the assignment's graded cells, those a declared
    question generates included (the source holds only its declaration: read as nbgrader's
    generate reads it, expanded)."""
    from course_lib.exercises.question_ids import metadata, question_of

    from autograder.authoring.cells import read_source

    out = set()
    for p in sorted((course.source / assignment).glob("*.ipynb")):
        for c in read_source(p).cells:
            gid = metadata(c).get("grade_id")
            if gid and metadata(c).get("grade"):
                out.add(gid)
                if question_of(gid):
                    out.add(question_of(gid))
    return out


def keep_manual_status(db_url: str, assignment: str, student: str, before: dict, unchanged: set[str]) -> None:
    """Put back "graded" (needs_manual_grade off) on each cell that had a manual score and was not
    awaiting one before the regrade, where the student's answer in it did not change."""
    with open_gradebook(db_url) as gb:
        sub = submission_or_none(gb, assignment, student)
        if sub is None:
            return
        for nb in sub.notebooks:
            for g in nb.grades:
                key = f"{nb.name}/{g.name}"
                was = before.get(key)
                if (was and g.manual_score is not None and was["manual"] is not None and not was["needs_manual"]
                        and key in unchanged and g.needs_manual_grade):
                    g.needs_manual_grade = False
        gb.db.commit()


def changes(before: dict, after: dict) -> list[dict]:
    """[{"cell", "before", "after"}] where a score, a manual score or a status differs."""
    out = []
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if b != a:
            out.append({"cell": key, "before": b, "after": a})
    return out


def settle(course: Course, assignment: str, student: str, before: dict, unchanged: set[str], why: str) -> list[dict]:
    """After a submission's merge: manual grades' status kept, the student's extension put on
    the submission, the late penalty taken from the whole score, and the changes logged (a first grading logs nothing). Returns the changes."""
    from autograder.grading import deadlines

    if before:
        keep_manual_status(course.db_url, assignment, student, before, unchanged)
    ext = deadlines.extensions(course, assignment).get(student)
    if ext is not None:
        deadlines.apply_extension(course, assignment, student, ext)
    if deadlines.due_date(course, assignment) is not None:
        deadlines.reassess(course, assignment, student)      # the penalty on the score with its manual grades
    if not before:
        return []
    diff = changes(before, snapshot(course.db_url, assignment, student))
    if diff:
        at = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
        with open(log_path(course), "a", encoding="utf-8") as f:
            for d in diff:
                f.write(json.dumps({"at": at, "assignment": assignment, "student": student, "why": why, **d},
                                   sort_keys=True) + "\n")
    return diff


def read_log(course: Course, assignment: str | None = None) -> list[dict]:
    """The regrade log's entries (of one assignment), oldest first; unreadable lines skipped."""
    p = log_path(course)
    out = []
    if not p.is_file():
        return out
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if isinstance(d, dict) and (assignment is None or d.get("assignment") == assignment):
            out.append(d)
    return out


def deadline_fingerprints(course: Course, assignment: str, students: list[str]) -> dict[str, str]:
    """{student: what the late penalty depends on besides the submission}: the due date, the
    student's extension and the course's late policy ("" when none is set, so earlier
    fingerprints hold). The gradebook is read once, not per student."""
    from autograder.grading import deadlines, late

    due = deadlines.due_date(course, assignment)
    exts = deadlines.extensions(course, assignment)
    policy = late.read(course.root)
    out = {}
    for s in students:
        ext = exts.get(s)
        out[s] = "" if due is None and ext is None and policy is None else hashlib.sha256(json.dumps(
            [str(due), ext.until if ext else None, policy.text if policy else None]).encode()).hexdigest()[:16]
    return out
