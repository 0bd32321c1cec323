"""Possible copies: with every student on their own numbers (autograder.authoring.variants), an answer
that is wrong for the student's own variant but right for another one, or identical to the
answer of a student whose numbers differ, is evidence the answer was copied.

Only questions with a parameter space count, only numbers (a choice among a few is a classmate's
by chance), only answers whose truth differs between the two variants compared (a regime that is
the same in every variant proves nothing), only a classmate's variant, matched within 1% (a wrong
answer can fall inside another variant's tolerance band by chance; a copied one is the friend's
result), never a named mistake on the student's own numbers that lands on a classmate's truth,
and only where at least two answers tie the student to one classmate (issue 47: one equal value
is not evidence). Written to
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


def _mistaken(spec, a, truth) -> bool:
    """Whether answer `a` is one of the named mistakes on these numbers (a Truth's `mistakes`):
    a classic slip on the student's own numbers, whatever classmate's truth it lands on."""
    for vals in (truth.mistakes or {}).values():
        for v in vals if isinstance(vals, (list, tuple)) else [vals]:
            if v is None:
                continue
            try:
                wrong = spec.read_truth(v)
            except Exception:          # a mistake the spec cannot read: not this one
                continue
            if _close(spec, a, wrong):
                return True
    return False


#: the least number of answers that must point at one classmate before a copy is reported: one
#: equal value happens by chance (issue 47)
MIN_EVIDENCE = 2


def find_copies(answers: dict, mine: dict, qids: list[str]) -> list[dict]:
    """The possible copies among `answers` ({student: {qid: {variable: recorded value}}}) of
    students on the numbers `mine` ({student: {qid: givens}}): one row per answer that is
    evidence, with the evidence, for each student that at least MIN_EVIDENCE answers tie to one
    classmate. An answer is evidence when it is a number wrong for the student's own numbers and
    either within 1% of a classmate's variant's truth (and not a named mistake on the student's
    own numbers: a classic slip that lands on another variant's truth is a slip) or exactly a
    classmate's answer whose numbers differ. A choice (a regime, one of a few options) is never
    evidence: among two, a wrong choice is a classmate's truth by necessity."""
    from course_lib.exercises.answer_forms import Number
    from autograder.outputs.values import show

    found = []                      # (student, classmates it points at, row)
    students = sorted(answers)
    for qid in qids:
        q = get(qid)
        options = V.admissible(qid)
        keyed = {json.dumps(g, sort_keys=True): g for g in options}
        sols = {g: q.solution(**givens) for g, givens in keyed.items()}
        who = {}
        for st in students:
            who.setdefault(json.dumps(mine[st].get(qid, q.givens), sort_keys=True), []).append(st)
        for name in q.answer_names:
            spec = q.specs[name]
            if not isinstance(spec, Number):
                continue
            norm = {g: _read(spec, sol.truths[name].value) for g, sol in sols.items()}
            read = {}
            for st in students:
                value = (answers[st].get(qid) or {}).get(name, _MISSING)
                if value is not _MISSING:
                    read[st] = (value, _read(spec, value))
            for st, (value, a) in read.items():
                own = json.dumps(mine[st].get(qid, q.givens), sort_keys=True)
                if a is None or own not in norm or _agrees(spec, a, norm[own]):
                    continue
                if _mistaken(spec, a, sols[own].truths[name]):
                    continue     # a named slip on the student's own numbers: whoever's number it is too
                base = {"student": st, "question": qid, "variable": name, "answer": show(value),
                        "own_variant": V.describe(qid, json.loads(own))}
                for g, t in norm.items():
                    holders = [x for x in who.get(g, []) if x != st]
                    if g != own and holders and not _agrees(spec, norm[own], t) and _close(spec, a, t):
                        found.append((st, set(holders), {
                            **base, "matches": "another variant's truth",
                            "evidence": f"{name} = {show(value)} is the truth for {V.describe(qid, json.loads(g))}, "
                                        f"the numbers of {', '.join(holders)}"}))
                for other, (ovalue, oa) in read.items():
                    theirs = json.dumps(mine[other].get(qid, q.givens), sort_keys=True)
                    if other == st or theirs == own or theirs not in norm or _agrees(spec, norm[own], norm[theirs]):
                        continue
                    if oa is not None and oa == a:
                        found.append((st, {other}, {
                            **base, "matches": "another student's answer",
                            "evidence": f"{name} = {show(value)}, exactly {other}'s answer, whose numbers "
                                        f"({V.describe(qid, json.loads(theirs))}) differ"}))
    # evidence beyond one equal value: at least MIN_EVIDENCE answers of the student tie to one classmate
    ties: dict[tuple, set] = {}
    for st, classmates, row in found:
        for c in classmates:
            ties.setdefault((st, c), set()).add((row["question"], row["variable"]))
    strong = {k for k, v in ties.items() if len(v) >= MIN_EVIDENCE}
    return [row for st, classmates, row in found if any((st, c) in strong for c in classmates)]


_MISSING = object()


def possible_copies(course: Course, assignment: str) -> list[dict]:
    """One row per (student, answer) that looks copied, with the evidence (find_copies)."""
    from autograder.authoring import variants
    from autograder.integrity.predictions import counted_answer
    from autograder.grading.status import graded_students, grading_status
    from autograder.outputs.values import decode_entry

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
    answers = {s: {} for s in students}
    for qid in qids:
        for name in get(qid).answer_names:
            if name not in cells:
                continue
            nb, cell = cells[name]
            for s in students:
                ok, value = decode_entry(counted_answer(metas.get((s, nb), {}), cell, name))
                if ok:
                    answers[s].setdefault(qid, {})[name] = value
    return find_copies(answers, mine, qids)


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
