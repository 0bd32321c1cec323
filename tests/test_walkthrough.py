"""A scripted student takes every lesson with the classic mistakes of tests/answers/ and must get,
per question, the message written for that mistake, from the real hidden tests.

Each hidden test runs as the grader runs it: its cell's source, in a fresh namespace holding only
the question's answer variables (what the answer cell assigns). The answers come from running
the lesson's setup and givens cells and the mistake's source in this process.
"""
from __future__ import annotations

import contextlib
import importlib.util

import pytest

from course_lib.exercises.misconceptions import MISCONCEPTIONS, CheckFailed
from course_lib.exercises.question_ids import cell_id
from lesson_questions import REPO, SOLUTIONS, Lesson, check_answer_wrapped, free_names, run_hidden

pytestmark = pytest.mark.skipif(not SOLUTIONS, reason="no notebooks in solutions/ yet")

LESSONS = {p.parent.name: Lesson(p) for p in SOLUTIONS}


def mistakes_of(assignment: str) -> dict:
    path = REPO / "tests" / "answers" / f"a{assignment}.py"
    spec = importlib.util.spec_from_file_location(f"answers_{assignment}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MISTAKES


CASES = [(a, gid, label, src) for a in LESSONS for gid, cases in mistakes_of(a).items()
         for label, src in cases]


class _Namespaces(dict):
    """lesson -> its namespace, each lesson run on first use (lesson 5's setup measures this
    machine: only its own cases, in the slow tier, pay for that)."""

    def __missing__(self, a):
        self[a] = LESSONS[a].namespace()
        return self[a]


@pytest.fixture(scope="module")
def namespaces():
    return _Namespaces()


@contextlib.contextmanager
def recorded_truths():
    """Record what each check_answer call is checked against (to make sure no message says it)."""
    seen = []

    def record(question, name, spec, truth, check):
        seen.append((name, spec, spec.read_truth(truth)))
        return check()

    with check_answer_wrapped(record):
        yield seen


def question_answered_in(lesson: Lesson, answer_id: str):
    return next(q for q in lesson.questions.values() if q.answer_id == answer_id)


# ---- the lessons' own structure ----------------------------------------------------------------
@pytest.mark.parametrize("a", LESSONS)
def test_every_answer_cell_has_documented_mistakes(a):
    lesson, documented = LESSONS[a], mistakes_of(a)
    answer_ids = {q.answer_id for q in lesson.questions.values()}
    assert set(documented) == answer_ids, (f"tests/answers/a{a}.py MISTAKES: missing "
                                           f"{sorted(answer_ids - set(documented))}, extra {sorted(set(documented) - answer_ids)}")
    for gid, cases in documented.items():
        assert cases, f"{gid}: no mistakes listed"
        for label, _ in cases:
            assert label is None or label in MISCONCEPTIONS, f"{gid}: unknown label {label!r}"


@pytest.mark.parametrize("a", LESSONS)
def test_hidden_tests_read_nothing_but_the_answers(a):
    """A hidden test must run in a fresh process with the recorded answers only: everything else
    it reads it imports or computes itself."""
    for q in LESSONS[a].questions.values():
        assert q.hidden, f"{q.key} has no hidden test"
        for gid, src in q.hidden.items():
            outside = set(free_names(src)) - set(q.variables)
            assert not outside, f"{gid} reads {sorted(outside)}, which its answer cell does not assign"


@pytest.mark.parametrize("a", LESSONS)
def test_the_solution_passes_every_hidden_and_form_test(a, namespaces):
    lesson = LESSONS[a]
    for q in lesson.questions.values():
        values = lesson.answers(namespaces[a], q)
        for gid, src in q.hidden.items():
            run_hidden(src, values, gid)


@pytest.mark.parametrize("a", LESSONS)
def test_an_unanswered_question_is_named(a):
    for q in LESSONS[a].questions.values():
        for gid, src in q.hidden.items():
            with pytest.raises(CheckFailed) as e:
                run_hidden(src, {}, gid)
            assert e.value.label == "unanswered"
            assert "is not answered yet" in str(e.value) and "NotImplementedError" in str(e.value)
            assert any(str(e.value).startswith(v) for v in q.variables), str(e.value)


# ---- the scripted student --------------------------------------------------------------------------
@pytest.mark.parametrize("a, gid, label, src", CASES,
                         ids=[f"{a[:2]}-{gid}-{label}" for a, gid, label, _ in CASES])
def test_a_classic_mistake_gets_its_message(a, gid, label, src, namespaces):
    lesson = LESSONS[a]
    q = question_answered_in(lesson, gid)
    values = lesson.answers(namespaces[a], q, src)
    form_cells = [c.source for c in lesson.nb.cells
                  if c.cell_type == "code" and cell_id(c) == q.key + "_form"]
    for form in form_cells:          # the mistake is well-formed: its visible test passes
        run_hidden(form, values, q.key + "_form")
    failures = []
    with recorded_truths() as seen:
        for hid, hsrc in q.hidden.items():
            try:
                run_hidden(hsrc, values, hid)
            except CheckFailed as e:
                failures.append(e)
    assert failures, f"{gid}: the mistake ({label}) passes the hidden tests"
    e = failures[0]
    message = str(e)
    assert e.label == label, f"{gid}: expected {label!r}, the hidden test says {e.label!r}: {message}"
    if label is not None:
        assert MISCONCEPTIONS[label].mistake in message and MISCONCEPTIONS[label].redo in message
    else:
        assert "classic mistake" not in message and len(message) > 60, message
    # the message names a checked variable first and never gives any checked truth away
    assert any(message.startswith(name) for name, _, _ in seen), message
    # (quoting the student's own answer back is not giving a truth away, though it may equal the
    # truth of another variable: "compute-bound" for the dot product, the matmul's truth)
    unquoted = message
    for v in values.values():
        if isinstance(v, str):
            unquoted = unquoted.replace(repr(v), "")
    for name, spec, truth in seen:
        if spec.kind == "regime":
            assert truth not in unquoted, message
        elif isinstance(truth, float) and truth != round(truth) or isinstance(truth, float) and abs(truth) >= 10:
            shown = {f"{truth:.3g}", f"{truth:.4g}", f"{truth:,.0f}"} if abs(truth) >= 10 else {f"{truth:.3g}", f"{truth:.4g}"}
            assert not any(s in message for s in shown if len(s) >= 3), (shown, message)
