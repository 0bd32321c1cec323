"""Every graded regime, choice and ratio keeps its answer under the modelling changes of
course_lib.sensitivity.STANDARD: compute efficiency 0.85, memory efficiency 0.85, activation
bytes -10% and +10%, capacities read as decimal.

Each hidden test runs with the solution's answers (recorded without any change) while
course_lib is perturbed through ``course_lib.sensitivity.perturb``: its chips, activation
bytes and capacities change for the whole cell, so the test really re-solves the question.
Numbers that are not ratios (intensities, times, bytes, counts) may move with the model and
are not held to this; a check of a regime, a choice or a ratio must still pass.

Lesson 5 grades against the machine measured in the same process (``this_machine()``), not a
datasheet. ``perturb`` scales that measurement's peaks and bandwidths like a zoo chip's, so its
regimes and choices are re-solved here as "this machine, 15% slower in compute or in memory";
the last test below makes sure the perturbation really reaches them. What no perturbation can
stand in for -- another CPU, a noisy run, the grader's one thread without /sys -- is tested by
tests/test_measure.py (three runs, the grader's conditions), on the machine running the tests.
"""
from __future__ import annotations

import contextlib

import pytest

from course_lib.exercises.misconceptions import CheckFailed
from course_lib.sensitivity import STANDARD, perturb
from lesson_questions import SOLUTIONS, Lesson, check_answer_wrapped, run_hidden

pytestmark = pytest.mark.skipif(not SOLUTIONS, reason="no notebooks in solutions/ yet")

LESSONS = {p.parent.name: Lesson(p) for p in SOLUTIONS}
ROBUST = ("regime", "choice", "ratio")


def _label(change: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in change.items())


@contextlib.contextmanager
def every_check_recorded():
    """Run every check_answer of a cell, recording (name, kind, failure or None) instead of
    stopping at the first failure."""
    seen = []

    def record(question, name, spec, truth, check):
        try:
            check()
        except CheckFailed as e:
            seen.append((name, spec.kind, e))
        else:
            seen.append((name, spec.kind, None))

    with check_answer_wrapped(record):
        yield seen


class _SolutionAnswers(dict):
    """lesson -> question -> the solution's answers, each lesson run on first use (lesson 5's
    setup measures this machine: only its own cases, in the slow tier, pay for that)."""

    def __missing__(self, a):
        lesson = LESSONS[a]
        ns = lesson.namespace()
        self[a] = {q.key: lesson.answers(ns, q) for q in lesson.questions.values()}
        return self[a]


@pytest.fixture(scope="module")
def solution_answers():
    return _SolutionAnswers()


@pytest.mark.parametrize("change", STANDARD, ids=[_label(c) for c in STANDARD])
@pytest.mark.parametrize("a", LESSONS)
def test_graded_regimes_choices_and_ratios_survive(a, change, solution_answers):
    lesson, answers = LESSONS[a], solution_answers[a]       # the lesson run here, outside perturb
    checked, flipped = 0, []
    for q in lesson.questions.values():
        for gid, src in q.hidden.items():
            with every_check_recorded() as seen, perturb(**change):
                run_hidden(src, answers[q.key], gid)
            for name, kind, failure in seen:
                if kind in ROBUST:
                    checked += 1
                    if failure is not None:
                        flipped.append(f"{gid} {name}: {failure}")
    assert not flipped, f"{a} under {_label(change)}: " + "; ".join(flipped)
    assert checked >= 4, f"{a}: only {checked} regime/choice/ratio checks ran"


def test_the_checks_see_the_perturbation():
    """The mechanism is not a no-op: a question whose truth moves with the model does move."""
    lesson = LESSONS.get("01_hello_roofline")
    if lesson is None:
        pytest.skip("lesson 1 not present")
    ns = lesson.namespace()
    q = lesson.questions["hello_q2"]                 # the A100's ridge point, a number
    values = lesson.answers(ns, q)
    run_hidden(q.hidden["hello_q2_correct"], values)
    with perturb(compute_efficiency=0.85), pytest.raises(CheckFailed):
        run_hidden(q.hidden["hello_q2_correct"], values)


def test_the_measured_machine_sees_the_perturbation():
    """Lesson 5's checks are re-solved on the perturbed measurement, not on a cached copy: a
    memory slow enough to put the ridge above the 1024^3 matmul's intensity (twice it; the
    factor comes from this run's measured ridge) makes the solution's regime fail."""
    lesson = LESSONS.get("05_your_machine")
    if lesson is None:
        pytest.skip("lesson 5 not present")
    ns = lesson.namespace()
    q = lesson.questions["mach_q3"]                  # regimes on this machine's measured ridge
    values = lesson.answers(ns, q)
    run_hidden(q.hidden["mach_q3_correct"], values)
    from course_lib.models import matmul
    slower = ns["mine"].ridge_point_si("fp64") / (2 * matmul(1024, 1024, 1024).arithmetic_intensity("fp64"))
    with perturb(memory_efficiency=min(0.01, slower)), pytest.raises(CheckFailed) as e:
        run_hidden(q.hidden["mach_q3_correct"], values)
    assert str(e.value).startswith("q3_matmul_regime"), str(e.value)
