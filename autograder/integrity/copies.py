"""Possible copies: with every student on their own numbers (autograder.authoring.variants), an answer
that is wrong for the student's own variant but right for another one, or identical to the
answer of a student whose numbers differ, is evidence the answer was copied.

Only questions with a parameter space count, only answers whose truth differs between the two
variants compared (a regime that is the same in every variant proves nothing), and only a
classmate's variant, matched within 1% (a wrong answer can fall inside another variant's
tolerance band by chance; a copied one is the friend's result). Written to
reports/<assignment>/copies.csv by `report`; a flag is evidence for the instructor to look at,
never a penalty.
"""
from __future__ import annotations

import csv
import json
from functools import lru_cache
from pathlib import Path

import nbformat

from course_lib.questions import get
from course_lib.questions import variants as V

from autograder.course import Course, answer_cells

CLOSE = 0.01
FIELDS = ["student", "question", "variable", "answer", "own_variant", "matches", "evidence"]


def _read(spec, value):
    try:
        out = spec.read(value)
    except Exception:
        return None
    return None if type(out).__name__ == "NotAnAnswer" else out


def _agrees(spec, a, b) -> bool:
    try:
        return a is not None and b is not None and bool(spec.agrees(a, b))
    except Exception:
        return False


def _close(spec, a, t) -> bool:
    """A copied number is the friend's own result: within 1% (the spec's tolerance, where tighter)
    of that variant's truth, not merely inside the tolerance band, which a wrong answer can be."""
    from course_lib.exercises.answer_forms import Number

    if isinstance(spec, Number) and isinstance(a, (int, float)) and isinstance(t, (int, float)) and t:
        return abs(a / t - 1) <= min(spec.rel_tol, CLOSE)
    return _agrees(spec, a, t)


def possible_copies(course: Course, assignment: str) -> list[dict]:
    """One row per (student, answer) that looks copied, with the evidence."""
    from autograder.authoring import variants
    from autograder.integrity.predictions import counted_answer
    from autograder.grading.status import graded_students, grading_status
    from autograder.outputs.values import decode_entry, show

    qids = variants.questions(course, assignment)
    if not qids:
        return []
    students = graded_students(course, assignment)
    mine = {s: grading_status(course, assignment, s).get("variant") or {} for s in students}
    metas, cells = {}, {}
    for nb in course.notebooks(assignment):
        for c in answer_cells(course.source / assignment / f"{nb}.ipynb"):
            for v in c.variables:
                cells[v] = (nb, c)
        for s in students:
            p = course.autograded / s / assignment / f"{nb}.ipynb"
            if p.is_file():
                metas[(s, nb)] = nbformat.read(str(p), as_version=4).metadata.get("autograder", {}) or {}
    rows = []
    for qid in qids:
        q = get(qid)
        options = V.admissible(qid)
        truths = {json.dumps(g, sort_keys=True): q.solution(**g).truths for g in options}
        who = {}
        for s in students:
            who.setdefault(json.dumps(mine[s].get(qid, q.givens), sort_keys=True), []).append(s)
        for name in q.answer_names:
            if name not in cells:
                continue
            spec, (nb, cell) = q.specs[name], cells[name]
            norm = {g: _read(spec, t[name].value) for g, t in truths.items()}
            answers = {}
            for s in students:
                ok, value = decode_entry(counted_answer(metas.get((s, nb), {}), cell, name))
                if ok:
                    answers[s] = (value, _read(spec, value))
            for s, (value, a) in answers.items():
                own = json.dumps(mine[s].get(qid, q.givens), sort_keys=True)
                if a is None or own not in norm or _agrees(spec, a, norm[own]):
                    continue
                base = {"student": s, "question": qid, "variable": name, "answer": show(value),
                        "own_variant": V.describe(qid, json.loads(own))}
                for g, t in norm.items():
                    holders = [x for x in who.get(g, []) if x != s]
                    if g != own and holders and not _agrees(spec, norm[own], t) and _close(spec, a, t):
                        rows.append({**base, "matches": "another variant's truth",
                                     "evidence": f"{name} = {show(value)} is the truth for {V.describe(qid, json.loads(g))}, "
                                                 f"the numbers of {', '.join(holders)}"})
                for other, (ovalue, oa) in answers.items():
                    theirs = json.dumps(mine[other].get(qid, q.givens), sort_keys=True)
                    if other == s or theirs == own or theirs not in norm or _agrees(spec, norm[own], norm[theirs]):
                        continue
                    if oa is not None and oa == a:
                        rows.append({**base, "matches": "another student's answer",
                                     "evidence": f"{name} = {show(value)}, exactly {other}'s answer, whose numbers "
                                                 f"({V.describe(qid, json.loads(theirs))}) differ"})
    return rows


def own_truth_entry(course: Course, assignment: str, student: str, cell: str, name: str) -> dict | None:
    """The truth of answer `name` (of answer cell `cell`) for the numbers `student` was graded on,
    as a recorded entry ({"value": ...}); None where the question has no variant."""
    from autograder.grading.status import grading_status

    qid = cell.rsplit("_", 1)[0]
    givens = (grading_status(course, assignment, student).get("variant") or {}).get(qid)
    if not givens:      # graded before the status kept the numbers: the course secret says them
        givens = _assigned(course, assignment, student).get(qid)
    if not givens:
        return None
    return _encoded_truth(qid, json.dumps(givens, sort_keys=True), name)


def _assigned(course: Course, assignment: str, student: str) -> dict:
    """{question: givens} the course secret gives `student` for the assignment's varying questions."""
    from autograder.authoring import variants

    secret = variants.load_secret(course)
    if secret is None:
        return {}
    try:
        return variants.assigned(variants.key_for(secret, student), variants.questions(course, assignment))
    except Exception:       # an assignment whose sources are gone: nothing known
        return {}


@lru_cache(maxsize=4096)
def _encoded_truth(qid: str, givens: str, name: str) -> dict | None:
    from course_lib.exercises.answers import encode

    truths = get(qid).solution(**json.loads(givens)).truths
    try:
        return {"value": encode(truths[name].value)} if name in truths else None
    except Exception:      # a truth the answer record cannot hold: no ratio shown
        return None


def graded_variants(course: Course, assignment: str) -> list[dict]:
    """The numbers each graded student was graded on, one row per question with a space."""
    from autograder.grading.status import graded_students, grading_status

    rows = []
    for s in graded_students(course, assignment):
        for qid, givens in sorted((grading_status(course, assignment, s).get("variant") or {}).items()):
            rows.append({"student": s, "question": qid, "variant": V.describe(qid, givens),
                         "givens": json.dumps(givens, sort_keys=True)})
    return rows


def write_copies(course: Course, assignment: str, out: Path) -> list[dict]:
    """copies.csv (possible copies) and variants.csv (each graded student's numbers)."""
    with open(Path(out) / "variants.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["student", "question", "variant", "givens"])
        w.writeheader()
        w.writerows(graded_variants(course, assignment))
    rows = possible_copies(course, assignment)
    with open(Path(out) / "copies.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    return rows


def format_copies(rows: list[dict]) -> list[str]:
    return [f"  POSSIBLE COPY: {r['student']} {r['question']}: {r['evidence']}" for r in rows]
