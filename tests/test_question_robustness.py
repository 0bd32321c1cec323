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
from course_lib.sensitivity import FUSION_RANGE, STANDARD, perturb
from lesson_questions import SOLUTIONS, Lesson, check_answer_wrapped, run_hidden
from course_lib.questions.registry import lessons as declared_lessons

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


def _unfused_convention() -> dict:
    """question id -> the sentence its text states the unfused convention in (the modules'
    UNFUSED_CONVENTION): those questions are held to STANDARD, not to the fusion range."""
    import importlib

    from course_lib.questions.registry import REGISTRY

    stated = {}
    for module in {q.solve.__module__ for q in REGISTRY.values()}:
        stated.update(getattr(importlib.import_module(module), "UNFUSED_CONVENTION", {}))
    return stated


CHANGES = STANDARD + tuple(c for c in FUSION_RANGE if c not in STANDARD)


@pytest.mark.parametrize("change", CHANGES, ids=[_label(c) for c in CHANGES])
@pytest.mark.parametrize("a", LESSONS)
def test_graded_regimes_choices_and_ratios_survive(a, change, solution_answers):
    lesson, answers = LESSONS[a], solution_answers[a]       # the lesson run here, outside perturb
    exempt = set(_unfused_convention()) if change not in STANDARD else set()
    checked, flipped = 0, []
    for q in lesson.questions.values():
        if q.key in exempt:
            continue
        for gid, src in q.hidden.items():
            with every_check_recorded() as seen, perturb(**change):
                run_hidden(src, answers[q.key], gid)
            for name, kind, failure in seen:
                if kind in ROBUST:
                    checked += 1
                    if failure is not None:
                        flipped.append(f"{gid} {name}: {failure}")
    assert not flipped, f"{a} under {_label(change)}: " + "; ".join(flipped)
    skipped = sum(1 for q in lesson.questions if q in exempt)
    least = next(d.min_robust_checks for d in declared_lessons().values() if d.assignment == a)
    assert checked >= least - skipped, f"{a}: only {checked} regime/choice/ratio checks ran, at least {least} declared"


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


def _flips(q, givens, change) -> list[str]:
    """What of question `q`'s graded regimes, choices and ratios at `givens` moves under `change`."""
    from course_lib.exercises.answer_forms import Choice, Ratio, Regime

    base = q.solution(**givens)
    try:
        with perturb(**change):
            moved = q.solution(**givens)
    except (ValueError, KeyError) as e:              # the question's premise breaks
        return [f"cannot be solved: {e}"]
    out = []
    for name in q.answer_names:
        spec = q.specs[name]
        now, was = spec.read_truth(moved.truths[name].value), spec.read_truth(base.truths[name].value)
        if isinstance(spec, (Regime, Choice)) and now != was:
            out.append(f"{name}: {was} -> {now}")
        elif isinstance(spec, Ratio) and abs(now / was - 1) > spec.rel_tol:
            out.append(f"{name}: ratio {now / was - 1:+.1%}")
    return out


def test_every_variant_holds_over_the_fusion_range():
    """Every graded regime, choice and ratio of every variant a student may draw (and of the
    lesson's own numbers) holds with activation bytes from a fused engine's (x0.5) to x1.1,
    unless its question states the unfused convention it assumes (UNFUSED_CONVENTION). Questions
    measured on this machine are re-solved by the hidden-test test above (slow tier)."""
    from course_lib.questions.registry import REGISTRY
    from course_lib.questions.variants import admissible

    stated = _unfused_convention()
    problems, solved = [], 0
    for qid, q in sorted(REGISTRY.items()):
        if q.measured or qid in stated:
            continue
        for givens in admissible(qid):
            for change in FUSION_RANGE:
                solved += 1
                problems += [f"{qid} {givens} {_label(change)}: {p}" for p in _flips(q, givens, change)]
    assert not problems, "\n".join(problems)
    assert solved >= 100, solved


def test_a_question_that_assumes_the_convention_says_so():
    """A question exempt from the fusion range states its convention in its own text, and it
    does need the exemption: some variant's answer really moves over the range (else the
    exemption would hide nothing and should go)."""
    from course_lib.questions import get
    from course_lib.questions.variants import admissible

    stated = _unfused_convention()
    assert stated, "no question declares UNFUSED_CONVENTION"
    for qid, sentence in stated.items():
        prefix, number = qid.split("_")
        lesson = next(l for l in LESSONS.values() if any(q.startswith(prefix + "_") for q in l.questions))
        texts = [" ".join(c.source.split()) for c in lesson.nb.cells if c.cell_type == "markdown"
                 and f"### {number.upper()} " in c.source]
        assert texts and sentence in texts[0], f"{qid}: its text does not state {sentence!r}"
        q = get(qid)
        assert any(_flips(q, g, c) for g in admissible(qid) for c in FUSION_RANGE), \
            f"{qid} holds over the fusion range: drop it from UNFUSED_CONVENTION"


def test_a_variant_that_flips_with_fusion_is_not_drawn():
    """hello_q4 on the V100 at batch 2 is memory-bound unfused and compute-bound with a fused
    engine's activation bytes: its `assumes` keeps it out of the draw."""
    from course_lib.questions import get
    from course_lib.questions.variants import admissible, problems

    q = get("hello_q4")
    givens = {"chip": "V100", "batch": 2}
    assert _flips(q, givens, {"activation_bytes": 0.5}), "the flip this test is about is gone"
    assert givens not in admissible("hello_q4")
    assert any("fused" in p for p in problems("hello_q4", givens))
