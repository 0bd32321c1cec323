"""The lessons' questions, taken apart for tests that run hidden tests outside nbgrader.

A question is an answer cell (<prefix>_qN_<role>, a solution cell) and its hidden tests
(<prefix>_qN_correct). `Lesson(path)` reads a solution notebook; `lesson.namespace()` runs its
setup and givens cells and the solution's answer cells in this process (what a student's
answer cell sees); `run_hidden(source, values)` runs a hidden test the way the grader does:
in a fresh namespace holding only the question's answer variables.
"""
from __future__ import annotations

import contextlib
import io
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from autograder.cell_code import assigned_names
from autograder.cell_code import free_names  # noqa: F401  (for the tests: the grader's own)
from course_lib.exercises.question_ids import cell_id, metadata, question_of
from autograder.authoring.cells import read_source

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = sorted((REPO / "solutions").glob("*/*.ipynb"))


def strip_delimiters(source: str) -> str:
    return "\n".join(l for l in source.splitlines()
                     if not re.match(r"\s*### (BEGIN|END) (SOLUTION|HIDDEN TESTS)", l))


@dataclass
class Question:
    key: str                          # e.g. "hello_q5"
    answer_id: str                    # e.g. "hello_q5_answer"
    solution: str                     # the answer cell's solution source, no delimiters
    variables: list[str]              # names the answer cell assigns
    hidden: dict[str, str] = field(default_factory=dict)   # grade_id -> hidden test source


class Lesson:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.name = self.path.parent.name
        self.nb = read_source(self.path)
        self.questions: dict[str, Question] = {}
        for cell in self.nb.cells:
            m = metadata(cell)
            gid = m.get("grade_id", "")
            key = question_of(gid)
            if cell.cell_type != "code" or not key:
                continue
            if m.get("solution") and not m.get("grade"):
                src = strip_delimiters(cell.source)
                self.questions[key] = Question(key, gid, src, assigned_names(src))
        for cell in self.nb.cells:
            gid = cell_id(cell)
            if cell.cell_type == "code" and gid.endswith("_correct"):
                self.questions[question_of(gid)].hidden[gid] = cell.source

    def context_cells(self):
        """Sources, in order, of what runs before a student's answers matter: the locked setup
        and givens cells (not verify or test cells) and the answer cells (the solution's)."""
        for cell in self.nb.cells:
            m = metadata(cell)
            if cell.cell_type != "code" or not m:
                continue
            gid = m.get("grade_id", "")
            if m.get("solution") and not m.get("grade"):
                yield gid, strip_delimiters(cell.source)
            elif m.get("locked") and not m.get("grade") and not gid.endswith("_verify"):
                yield gid, cell.source

    def namespace(self) -> dict:
        import matplotlib

        matplotlib.use("Agg")
        ns: dict = {"__name__": "__lesson__"}
        with contextlib.redirect_stdout(io.StringIO()):
            for gid, src in self.context_cells():
                exec(compile(src, f"<{self.name}:{gid}>", "exec"), ns)
        return ns

    def answers(self, ns: dict, question: Question, source: str | None = None) -> dict:
        """The question's answer variables after running `source` (default: the solution)."""
        scope = dict(ns)
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(source if source is not None else question.solution,
                         f"<{self.name}:{question.answer_id}>", "exec"), scope)
        return {n: scope[n] for n in question.variables if n in scope}


def run_hidden(source: str, values: dict, where: str = "<hidden test>") -> None:
    """Run a hidden test cell as the grader does: a fresh namespace with only `values`."""
    ns = {"__name__": "__hidden_test__", **values}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, where, "exec"), ns)


@contextlib.contextmanager
def check_answer_wrapped(wrap):
    """Within the block, every check_answer call runs `wrap(question, name, spec, truth, check)`,
    where check() runs the real check on the answers of the cell that called it (course_lib.questions
    calls it as course_lib.exercises.checks.check_answer)."""
    import course_lib.exercises.checks as checks

    original = checks.check_answer

    def replacement(question, name, spec, truth, **kw):
        frame = sys._getframe(1)
        if kw.get("namespace") is None:      # a direct call from the cell: its frame holds the answers
            kw["namespace"] = {**frame.f_globals, **frame.f_locals}
        return wrap(question, name, spec, truth, lambda: original(question, name, spec, truth, **kw))

    checks.check_answer = replacement
    try:
        yield
    finally:
        checks.check_answer = original
