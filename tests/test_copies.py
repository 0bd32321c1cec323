"""A "possible copy" needs evidence beyond one equal value (issue 47: honest students were held
from the LMS): autograder.integrity.copies.find_copies on answers as grading records them, one
case a test. A classic mistake on a student's own numbers that lands on a classmate's truth, and
a choice among two equal to a classmate's, are not copies; one equal number is not enough; two
answers tied to one classmate are, with the evidence.
"""
from __future__ import annotations

import pytest

from course_lib.questions import get
from course_lib.questions import variants as V

from autograder.integrity import copies


def _pair(qid: str, ok) -> tuple[dict, dict]:
    """Two admissible variants (a, b) of `qid` for which ok(solution a, solution b) holds."""
    options = V.admissible(qid)
    sols = [get(qid).solution(**g) for g in options]
    for i, a in enumerate(options):
        for j, b in enumerate(options):
            if i != j and ok(sols[i], sols[j]):
                return a, b
    raise AssertionError(f"{qid}: no two variants as the test needs")


def test_a_classic_mistake_on_ones_own_numbers_that_is_a_classmates_truth_is_not_a_copy(monkeypatch):
    """hello_q1: the 1-MAC-is-1-FLOP slip on fp16 numbers gives exactly fp32's intensity."""
    spec = get("hello_q1").specs["q1_intensity"]

    def slip_is_their_truth(sa, sb):
        truth_b = spec.read_truth(sb.truths["q1_intensity"].value)
        return any(abs(spec.read_truth(v) / truth_b - 1) < 0.001
                   for v in sa.truths["q1_intensity"].mistakes.values() if v is not None)
    a, b = _pair("hello_q1", slip_is_their_truth)
    sa, sb = get("hello_q1").solution(**a), get("hello_q1").solution(**b)
    slip = next(v for v in sa.truths["q1_intensity"].mistakes.values()
                if v is not None and abs(spec.read_truth(v) / spec.read_truth(sb.truths["q1_intensity"].value) - 1) < 0.001)
    answers = {"ann": {"hello_q1": {"q1_intensity": float(spec.read_truth(slip))}},
               "bob": {"hello_q1": {"q1_intensity": float(spec.read_truth(sb.truths["q1_intensity"].value))}}}
    mine = {"ann": {"hello_q1": a}, "bob": {"hello_q1": b}}
    monkeypatch.setattr(copies, "MIN_EVIDENCE", 1)      # this rule alone, not the count
    assert copies.find_copies(answers, mine, ["hello_q1"]) == []
    # the control: the same classmate's truth, not a named slip on ann's numbers, is evidence
    answers["ann"]["hello_q1"]["q1_intensity"] = answers["bob"]["hello_q1"]["q1_intensity"] * 1.003
    monkeypatch.setattr(copies, "_mistaken", lambda spec, a, truth: False)
    assert [r["matches"] for r in copies.find_copies(answers, mine, ["hello_q1"])] == ["another variant's truth"]


def test_a_choice_among_two_equal_to_a_classmates_is_not_a_copy(monkeypatch):
    """hello_q3 is a choice whose truth is one of two across the class (256 or 1024): a wrong
    choice is a classmate's truth, and their answer, by necessity."""
    spec = get("hello_q3").specs["q3_prediction"]
    a, b = _pair("hello_q3", lambda sa, sb: spec.read_truth(sa.truths["q3_prediction"].value)
                 != spec.read_truth(sb.truths["q3_prediction"].value))
    theirs = get("hello_q3").solution(**b).truths["q3_prediction"].value
    answers = {"ann": {"hello_q3": {"q3_prediction": theirs}}, "bob": {"hello_q3": {"q3_prediction": theirs}}}
    monkeypatch.setattr(copies, "MIN_EVIDENCE", 1)
    assert copies.find_copies(answers, {"ann": {"hello_q3": a}, "bob": {"hello_q3": b}}, ["hello_q3"]) == []


def _differ(qid):
    q = get(qid)

    def ok(sa, sb):
        return all(not q.specs[n].agrees(q.specs[n].read_truth(sa.truths[n].value), q.specs[n].read_truth(sb.truths[n].value))
                   for n in q.answer_names)
    return ok


def _truths(qid: str, givens: dict) -> dict:
    """The answers of a student who gives the truth of `givens`, as grading decodes them."""
    return {n: t.value for n, t in get(qid).solution(**givens).truths.items()}


def test_one_equal_number_is_not_a_copy_and_two_tied_to_one_classmate_are():
    a, b = _pair("hello_q5", _differ("hello_q5"))
    mine = {"ann": {"hello_q5": a}, "bob": {"hello_q5": b}}
    theirs = _truths("hello_q5", b)
    own = _truths("hello_q5", a)
    one = {"ann": {"hello_q5": {**own, "q5_latency_us": theirs["q5_latency_us"]}}, "bob": {"hello_q5": theirs}}
    assert copies.find_copies(one, mine, ["hello_q5"]) == []
    both = {"ann": {"hello_q5": dict(theirs)}, "bob": {"hello_q5": theirs}}
    rows = copies.find_copies(both, mine, ["hello_q5"])
    assert {r["student"] for r in rows} == {"ann"}
    assert {(r["variable"], r["matches"]) for r in rows} == {
        (n, m) for n in ("q5_intensity", "q5_latency_us") for m in ("another variant's truth", "another student's answer")}
    assert all("bob" in r["evidence"] for r in rows)

