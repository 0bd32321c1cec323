"""Every student their own numbers, on the instructor's side (course_lib.questions.variants is
the student's): the course secret, each student's variant key, what the grader hands the
kernel and the clean re-verification, and the check of a notebook's claimed variant.

The secret is a file only the instructor reads: ``$AUTOGRADER_VARIANT_SECRET`` (a path), else
``<course>/.autograder/variant-secret`` (``python -m autograder variants --init-secret``). It
never enters a kernel, the student repository (``publish`` refuses it) or git (.gitignore).
Without a secret every student gets the canonical variant.
"""
from __future__ import annotations

import inspect
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path

from course_lib.questions import variants as V

from autograder.course import Course
from autograder.authoring.cells import read_source

SECRET_ENV = "AUTOGRADER_VARIANT_SECRET"


def secret_path(course: Course | Path) -> Path:
    """Where the course secret is (`course`: a Course or its directory)."""
    root = course.root if isinstance(course, Course) else Path(course)
    return Path(os.environ[SECRET_ENV]) if os.environ.get(SECRET_ENV) else root / ".autograder" / "variant-secret"


def load_secret(course: Course | Path) -> bytes | None:
    """The course secret, or None (no variants: everyone gets the canonical numbers)."""
    p = secret_path(course)
    try:
        data = p.read_bytes().strip()
    except FileNotFoundError:
        return None
    if len(data) < 16:
        raise SystemExit(f"{p}: a variant secret must hold at least 16 bytes (python -m autograder variants "
                         "--init-secret writes one)")
    return data


def init_secret(course: Course | Path) -> Path:
    """Write a new secret (readable by its owner only); refuses to replace one (every student's
    numbers would change)."""
    p = secret_path(course)
    if p.exists():
        raise SystemExit(f"{p} exists already: replacing it would give every student new numbers")
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    return p


def key_for(secret: bytes | None, student: str) -> str:
    """The student's variant key ("" without a secret: the canonical variant)."""
    return V.student_key(secret, student) if secret else ""


def kernel_env(key: str, student: str) -> dict:
    """What the kernel and the clean re-verification are told: always set, so a file a student
    handed in (.roofline-student.json) cannot choose the numbers graded."""
    return {V.KEY_ENV: key or "", V.STUDENT_ENV: student or ""}


def questions(course: Course, assignment: str) -> list[str]:
    """The declared questions of an assignment that have a parameter space, in notebook order."""
    import nbformat

    from course_lib.questions import get

    out = []
    for nb in course.notebooks(assignment):
        book = read_source(course.source / assignment / f"{nb}.ipynb")
        for cell in book.cells:
            gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
            qid = gid.rsplit("_", 1)[0] if gid.endswith(("_prediction", "_answer")) else None
            if not qid or qid in out:
                continue
            try:
                if get(qid).space:
                    out.append(qid)
            except (KeyError, ImportError):     # a lesson not declared yet
                continue
    return out


@dataclass(frozen=True)
class Unaskable:
    """A varying question none of whose variants may be asked under course_lib as it is now (a
    tolerance widened past its mistakes, a changed space or solver): every student's kernel
    would fail drawing their numbers."""
    question: str
    size: int                   # the points of its space
    example: dict               # its canonical numbers
    problems: tuple             # why those may not be asked (course_lib.questions.variants.problems)
    declared_in: str            # the file declaring it

    @property
    def message(self) -> str:
        why = "; ".join(self.problems[:3]) or "each variant of its space has a problem"
        return (f"{self.question}: none of the {self.size} variants of its space may be asked under course_lib as "
                f"it is now; its own numbers ({V.describe(self.question, self.example)}) fail because {why}. "
                f"Change its declaration in {self.declared_in} (a tolerance below what its mistakes need, "
                f"its space, its solver) until course_lib.questions.variants.admissible({self.question!r}) "
                f"lists variants again")


def unaskable(course: Course, assignment: str) -> list[Unaskable]:
    """The assignment's varying questions that have no admissible variant (empty: every student
    can be given numbers). `grade` refuses with these before any student (issue 47: a widened
    tolerance passed the preflight, which runs the canonical numbers, and then failed every
    student with a RuntimeError from their kernel). Without a course secret everyone gets the
    canonical numbers and nothing is drawn: empty. This is the course_lib the grader imports,
    the one the kernels import unless `grade` is told other packages."""
    from course_lib.questions import get

    if load_secret(course) is None:
        return []
    out = []
    for qid in questions(course, assignment):
        if V.admissible(qid):
            continue
        q = get(qid)
        size = 1
        for values in q.space.values():
            size *= len(values)
        try:
            where = inspect.getsourcefile(q.solve) or q.solve.__module__
        except TypeError:          # a solver without a source file
            where = q.solve.__module__
        out.append(Unaskable(qid, size, dict(q.givens), tuple(V.problems(qid, dict(q.givens))), str(where)))
    return out


def assigned(key: str, qids: list[str]) -> dict:
    """{question: givens} of the variant key `key`."""
    return {q: V.draw(key, q) for q in qids}


def table(course: Course, assignment: str, students: list[str]) -> list[dict]:
    """One row per student and question: the variant each gets."""
    secret = load_secret(course)
    qids = questions(course, assignment)
    rows = []
    for s in students:
        key = key_for(secret, s)
        for q, g in assigned(key, qids).items():
            rows.append({"student": s, "question": q, "variant": V.describe(q, g),
                         "givens": json.dumps(g, sort_keys=True), "canonical": not key})
    return rows


def claimed(events: list) -> dict:
    """{question: [givens a commit recorded]} from a prediction record's events."""
    out: dict = {}
    for e in events or []:
        if isinstance(e, dict) and e.get("kind") in ("commit", "revise") and isinstance(e.get("variant"), dict):
            if e["variant"] not in out.setdefault(e.get("q"), []):
                out[e["q"]].append(e["variant"])
    return out


def mismatches(records: dict, expected: dict) -> list[str]:
    """Lines for the instructor: a notebook whose committed predictions were made for other
    numbers than the student's own (another student's key, none set on a laptop)."""
    lines = []
    for nb, record in records.items():
        for q, seen in sorted(claimed(getattr(record, "events", [])).items()):
            want = expected.get(q)
            if want is None:
                continue
            other = [g for g in seen if g != want]
            if other:
                lines.append(f"{nb}: {q.split('_', 1)[1].upper()} was answered for the numbers "
                             f"{V.describe(q, other[-1])}, not the student's own ({V.describe(q, want)}): "
                             "graded on the student's own")
    return lines


def fingerprint(key: str) -> str:
    """A part of a submission's grading fingerprint: a new secret regrades everyone."""
    import hashlib

    return ":v" + hashlib.sha256(key.encode()).hexdigest()[:12] if key else ""


def student_truth(truth: dict | None, key: str | None) -> dict | None:
    """The solution's record (`truth`, {notebook: {"answers": {cell: {name: entry}}}}) with
    every answer of a question that has a space replaced by the truth of the student's variant:
    the report's per-answer verdicts set the other answers of a question to these."""
    if not truth or not key:
        return truth
    import copy

    from course_lib.exercises.answers import UnsupportedAnswer, encode
    from course_lib.questions import get

    out = copy.deepcopy(truth)
    for nb in out.values():
        for cell, entries in (nb.get("answers") or {}).items():
            qid = cell.rsplit("_", 1)[0]
            try:
                q = get(qid)
            except (KeyError, ImportError):     # a lesson not declared yet
                continue
            if not q.space:
                continue
            sol = q.solution(**V.draw(key, qid))
            for name in list(entries):
                if name in sol.truths:
                    try:
                        entries[name] = {"value": encode(sol.truths[name].value)}
                    except UnsupportedAnswer:
                        pass
    return out
