"""What a graded question is: the grade-id grammar and a cell's nbgrader metadata.

A grade id is ``<prefix>_<question>_<role>``: the notebook's prefix, the question, what the cell
does for it. A numbered question may have a sub-part letter; a named one is a word::

    hello_q3_correct    prefix hello, question q3, role correct
    wall_q2b_form       question q2b: question 2, sub-part b
    quant_reality_reflection    a named question (reality), a written reflection

The question's id (``wall_q2b``) is what course_lib.exercises.checks takes as its first argument
(``check_form("wall_q2b", ...)``, ``reveal("wall_q2b")``) and what the autograder groups a
notebook's cells by.

>>> parse("wall_q2b_form")
GradeId(prefix='wall', question='q2b', role='form')
>>> question_of("wall_q2b_form"), question_of("hello_setup")
('wall_q2b', None)
>>> parse("wall_q2b_form").number, parse("wall_q2b_form").part, label("wall_q2b")
(2, 'b', 'Q2B')
>>> grade_id("wall", "q2b", "verify")
'wall_q2b_verify'
"""
from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["PREFIX", "NUMBERED", "ROLES", "ANSWER_ROLES", "TEST_ROLES", "QUESTION_ID", "ANY_ID", "GradeId",
           "parse", "question_of", "role_of", "grade_id", "is_question_id", "label", "metadata", "cell_id",
           "is_graded", "is_solution", "is_locked", "points", "is_answer_cell", "is_test_cell",
           "is_manually_graded"]

#: the notebook's prefix: lower case, a letter first (hello, t1one)
PREFIX = r"[a-z][a-z0-9]*"
#: a numbered question with an optional sub-part (q2, q2b)
NUMBERED = r"q(?P<number>\d+)(?P<part>[a-z]?)"
#: what a cell does for its question
ROLES = {
    "prediction": "a predicted answer, committed before its truth is shown",
    "answer": "an answer (computed, graded on the final value)",
    "form": "the visible test of an answer's form",
    "correct": "the hidden test of an answer's correctness",
    "verify": "shows the truth after the prediction is committed",
    "reflection": "a written answer, graded by hand",
    "given": "the question's givens (locked)",
    "data": "the question's data (locked)",
}
ANSWER_ROLES = ("prediction", "answer")
TEST_ROLES = ("form", "correct")

_NUMBERED_ID = re.compile(rf"^(?P<prefix>{PREFIX})_(?P<question>{NUMBERED})_(?P<role>[a-z][a-z_]*)$")
# a named question (quant_reality_reflection) only with a known role: hello_gemm_reality is a
# locked cell of no question, not question "gemm"
_NAMED_ID = re.compile(rf"^(?P<prefix>{PREFIX})_(?P<question>[a-z]+)_(?P<role>{'|'.join(ROLES)})$")
#: a question's id as course_lib.exercises.checks takes it: hello_q3, wall_q2b
QUESTION_ID = re.compile(rf"^(?P<prefix>{PREFIX})_(?P<question>{NUMBERED})$")
#: any grade id: lower_snake_case with a prefix (hello_setup, quant_givens_decode)
ANY_ID = re.compile(rf"^{PREFIX}_[a-z0-9_]+$")


class GradeId(NamedTuple):
    prefix: str
    question: str           # q3, q2b, or a word (reality)
    role: str

    @property
    def question_id(self) -> str:
        return f"{self.prefix}_{self.question}"

    @property
    def number(self) -> int | None:
        m = re.fullmatch(NUMBERED, self.question)
        return int(m.group("number")) if m else None

    @property
    def part(self) -> str:
        m = re.fullmatch(NUMBERED, self.question)
        return m.group("part") if m else ""


def parse(gid: str | None) -> GradeId | None:
    """The parts of a grade id of a question's cell; None for any other id (hello_setup)."""
    m = _NUMBERED_ID.match(gid or "") or _NAMED_ID.match(gid or "")
    return GradeId(m.group("prefix"), m.group("question"), m.group("role")) if m else None


def question_of(gid: str | None) -> str | None:
    """The question id of a grade id: 'wall_q2b_form' -> 'wall_q2b'; None for a cell of no question."""
    p = parse(gid)
    return p.question_id if p else None


def role_of(gid: str | None) -> str | None:
    """'hello_q3_correct' -> 'correct'."""
    p = parse(gid)
    return p.role if p else None


def grade_id(prefix: str, question: str, role: str) -> str:
    """The grade id of `role` for a question: grade_id('wall', 'q2b', 'form') -> 'wall_q2b_form'."""
    gid = f"{prefix}_{question}_{role}"
    if parse(gid) is None:
        raise ValueError(f"{gid!r} is not a grade id <prefix>_<question>_<role> (e.g. hello_q3_form)")
    return gid


def is_question_id(text) -> bool:
    """Whether `text` is a numbered question's id such as 'hello_q3' or 'wall_q2b'."""
    return isinstance(text, str) and QUESTION_ID.match(text) is not None


def label(question: str) -> str:
    """How students see a question id: 'wall_q2b' -> 'Q2B'."""
    return question.split("_", 1)[-1].upper() if "_" in question else question


# ---- a cell's nbgrader metadata ---------------------------------------------------------------
def metadata(cell) -> dict:
    """The cell's nbgrader metadata ({} when it has none)."""
    return (cell.get("metadata") or {}).get("nbgrader") or {}


def cell_id(cell) -> str:
    """The cell's grade id ('' when it has none)."""
    return metadata(cell).get("grade_id") or ""


def is_graded(cell) -> bool:
    return bool(metadata(cell).get("grade"))


def is_solution(cell) -> bool:
    return bool(metadata(cell).get("solution"))


def is_locked(cell) -> bool:
    return bool(metadata(cell).get("locked"))


def points(cell) -> float:
    """The points a graded cell carries (0 for any other)."""
    return float(metadata(cell).get("points", 0) or 0) if is_graded(cell) else 0.0


def is_answer_cell(cell) -> bool:
    """A code cell the student writes an answer in (solution, not graded itself)."""
    return cell.get("cell_type") == "code" and is_solution(cell) and not is_graded(cell)


def is_test_cell(cell) -> bool:
    """An autograded test cell (graded code, no solution)."""
    return cell.get("cell_type") == "code" and is_graded(cell) and not is_solution(cell)


def is_manually_graded(cell) -> bool:
    """A cell graded by hand: graded and a solution (a written reflection), or a task."""
    m = metadata(cell)
    return bool(m.get("grade") and (m.get("solution") or m.get("task")))
