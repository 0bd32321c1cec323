"""Lesson 1's declared questions (course_lib.questions.hello): no tolerance accepts a listed
mistake, and no verify cell's arithmetic prints a later question's numeric answer before that
question is committed."""
from __future__ import annotations

import contextlib
import io
import re

import pytest

from course_lib.answer_forms import Number
from course_lib.questions import lesson_questions

QUESTIONS = lesson_questions("hello")
NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?")


def _values(v):
    return list(v) if isinstance(v, (list, tuple)) else [v]


def test_every_question_of_lesson_1_is_declared():
    assert [q.id for q in QUESTIONS] == [f"hello_q{i}" for i in range(1, 9)]


@pytest.mark.parametrize("q", QUESTIONS, ids=[q.id for q in QUESTIONS])
def test_no_tolerance_accepts_a_listed_mistake(q):
    sol = q.solution()
    checked = 0
    for name, truth in sol.truths.items():
        spec = q.specs[name]
        t = spec.read_truth(truth.value)
        for label, values in truth.mistakes.items():
            for v in _values(values):
                if v is None:
                    continue
                wrong = spec.read_truth(v)
                checked += 1
                if isinstance(spec, Number):
                    assert abs(wrong / t - 1) >= 1.5 * spec.rel_tol, \
                        f"{q.id} {name}: the {label} answer {wrong:.4g} is within 1.5x the tolerance of {t:.4g}"
                else:
                    assert wrong != t, f"{q.id} {name}: the {label} answer is the truth ({t!r})"
    assert checked, f"{q.id}: no classic mistake listed"


def test_no_verify_output_prints_a_later_numeric_answer():
    """Run the verify cells' arithmetic in lesson order: what question k's work() prints is on
    screen before every later question is committed, so it holds none of their numeric answers."""
    shown = []
    for q in QUESTIONS:
        sol = q.solution()
        for name, truth in sol.truths.items():
            spec = q.specs[name]
            if not isinstance(spec, Number):
                continue
            t = float(spec.read_truth(truth.value))
            for earlier, text in shown:
                for s in NUMBER.findall(text):
                    x = float(s.replace(",", ""))
                    assert abs(x / t - 1) > spec.rel_tol, \
                        f"{earlier}'s verify prints {s}, within tolerance of {q.id} {name} ({t:.4g})"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            sol.work()
        assert out.getvalue().strip(), f"{q.id}: its work() prints no arithmetic"
        shown.append((q.id, out.getvalue()))
