"""The prediction record (course_lib.exercises.predictions): commit, reveal, revisions, and what makes a
hand-edited record detectable. The grading side (the committed prediction is what is graded)
is tested end to end in test_prediction_grading.py."""
from __future__ import annotations

import json

import pytest

from course_lib import Q_
from course_lib.exercises import predictions
from course_lib.exercises.answers import encode
from course_lib.exercises.checks import CheckFailed, Number, Reason, Regime, check_form, reveal, verify


@pytest.fixture
def record(tmp_path, monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    monkeypatch.setattr(predictions, "_HERE", tmp_path)
    return tmp_path / predictions.RECORD_FILE


def events(path):
    return predictions.load_record(path)


def test_form_check_commits_and_verify_reveals(record):
    q1_speedup, q1_reasoning = 3.0, "The H100 has three times the FLOP/s of the A100."
    check_form("wall_q1", q1_speedup=Number(), q1_reasoning=Reason())
    check_form("wall_q1", q1_speedup=Number(), q1_reasoning=Reason())     # the same answer again: no event
    reveal("wall_q1")
    reveal("wall_q1")                                                      # already revealed: no event
    ev = events(record)
    assert [e["kind"] for e in ev] == ["commit", "reveal"]
    assert ev[0]["values"] == {"q1_speedup": encode(3.0)} and ev[0]["reason"] == q1_reasoning
    assert predictions.check_events(ev) == []
    h = predictions.history(ev, "wall_q1")
    assert h["revealed"] and h["committed"] == {"q1_speedup": encode(3.0)} and h["after"] == []


def test_a_change_after_the_reveal_is_a_revision_and_the_committed_answer_stays(record):
    q1_speedup, q1_reasoning = 3.0, "The H100 has three times the FLOP/s of the A100."
    check_form("wall_q1", q1_speedup=Number(), q1_reasoning=Reason())
    reveal("wall_q1")
    q1_speedup = 1.643   # noqa: F841 (read by name)
    check_form("wall_q1", q1_speedup=Number(), q1_reasoning=Reason())
    ev = events(record)
    assert [e["kind"] for e in ev] == ["commit", "reveal", "revise"]
    h = predictions.history(ev, "wall_q1")
    assert h["committed"] == {"q1_speedup": encode(3.0)}
    assert h["after"] == [{"q1_speedup": encode(1.643)}]


def test_a_revision_before_the_reveal_replaces_the_prediction(record):
    q4_prediction, q4_reasoning = "compute", "More FLOPs than bytes at this batch size."
    check_form("hello_q4", q4_prediction=Regime(), q4_reasoning=Reason())
    q4_prediction = "memory-bound"  # noqa: F841
    check_form("hello_q4", q4_prediction=Regime(), q4_reasoning=Reason())
    reveal("hello_q4")
    h = predictions.history(events(record), "hello_q4")
    assert h["committed"] == {"q4_prediction": encode("memory-bound")} and h["after"] == []
    assert h["first"] == {"q4_prediction": encode("compute")}


def test_reveal_without_a_commit_shows_nothing_and_says_what_to_run(record):
    with pytest.raises(predictions.NotCommitted, match=r"Q2: no committed prediction yet.*form check"):
        reveal("hello_q2")
    assert not record.exists()
    q1_intensity = 0.25  # noqa: F841
    check_form("hello_q1", q1_intensity=Number("FLOP/byte"))
    with pytest.raises(predictions.NotCommitted, match=r"^Q2: "):   # Q1 is committed, Q2 is not
        reveal("hello_q1", "hello_q2")
    assert [e["kind"] for e in events(record)] == ["commit"]


def test_nbgraders_variable_does_not_switch_recording_off(record, monkeypatch):
    """A student who sets NBGRADER_EXECUTION in their own kernel still commits and is still
    refused the truth before committing (Validate records like Run All)."""
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    q1_intensity = 0.25  # noqa: F841
    check_form("hello_q1", q1_intensity=Number("FLOP/byte"))
    with pytest.raises(predictions.NotCommitted):
        reveal("hello_q2")
    reveal("hello_q1")
    assert [e["kind"] for e in events(record)] == ["commit", "reveal"]


def test_a_check_on_the_graders_namespace_commits_nothing(record):
    check_form("hello_q1", namespace={"q1_intensity": 0.25}, q1_intensity=Number("FLOP/byte"))
    assert not record.exists()


def test_an_answer_that_cannot_be_written_down_fails_the_form_check(record):
    class Weird(float):
        pass

    q1_intensity = Weird(0.25)  # noqa: F841
    with pytest.raises(CheckFailed, match="q1_intensity: a value of type Weird cannot be recorded"):
        check_form("hello_q1", q1_intensity=Number("FLOP/byte"))


@pytest.mark.parametrize("a, b, same", [
    ("Memory Bound", "memory-bound", True),
    ("memory", "compute", False),
    (Q_(7.36, "ms"), Q_(0.00736, "s"), True),
    (Q_(7.36, "ms"), 7.36, False),
    (1.643, 1.6430000000001, True),
    (1.643, 1.65, False),
    (("A100", 256), ("a100", 256.0), True),
])
def test_same_value_compares_answers_not_spellings(a, b, same):
    assert predictions.same_value({"x": encode(a)}, {"x": encode(b)}) is same


# ---- hand edits are detectable ---------------------------------------------------------------
def _record(record):
    q1_speedup, q1_reasoning = 3.0, "The H100 has three times the FLOP/s of the A100."
    check_form("wall_q1", q1_speedup=Number(), q1_reasoning=Reason())
    reveal("wall_q1")
    q2_ms = 4.4  # noqa: F841
    check_form("wall_q2", q2_ms=Number("ms"))
    reveal("wall_q2")
    return events(record)


def test_an_untouched_record_checks_clean(record):
    assert predictions.check_events(_record(record)) == []


def test_an_edited_value_breaks_its_hash(record):
    ev = _record(record)
    ev[0]["values"]["q1_speedup"] = encode(1.643)
    assert any("does not match its hash" in p for p in predictions.check_events(ev))


def test_an_edited_value_with_its_hash_recomputed_breaks_the_chain(record):
    ev = _record(record)
    ev[0]["values"]["q1_speedup"] = encode(1.643)
    ev[0]["hash"] = predictions.event_hash(ev[0])
    problems = predictions.check_events(ev)
    assert any("out of sequence" in p for p in problems) and any("chain" in p for p in problems)


def test_a_removed_reveal_breaks_the_sequence(record):
    ev = _record(record)
    del ev[1]
    assert any("out of sequence" in p for p in predictions.check_events(ev))


def test_time_running_backwards_is_flagged(record):
    ev = _record(record)
    ev[2]["t"] = "2020-01-01T00:00:00.000Z"
    ev[2]["hash"] = predictions.event_hash(ev[2])
    assert any("earlier than the event before it" in p for p in predictions.check_events(ev))


def test_a_reveal_without_a_commit_is_flagged():
    ev = [predictions.make_event([], "wall_q1", "reveal")]
    assert any("a reveal without a committed prediction" in p for p in predictions.check_events(ev))


def test_unparseable_lines_are_kept_as_problems(record):
    _record(record)
    with open(record, "a") as f:
        f.write("not json\n")
    ev = events(record)
    assert ev[-1] == {"unparseable": "not json"}
    assert any("not an event" in p for p in predictions.check_events(ev))
    json.dumps(ev)   # still plain data


# ---- receipts and verify cells tell what is graded -------------------------------------------
def test_the_receipt_echoes_the_committed_value_and_states_the_rule(record, capsys):
    from IPython.core.interactiveshell import InteractiveShell

    shown = []
    shell = InteractiveShell.instance()
    try:
        shell.display_pub.publish = lambda data, **kw: shown.append(data["text/plain"])
        q1_speedup, q1_reasoning = 3.0, "The H100 has three times the FLOP/s of the A100."
        check_form("demo_q1", q1_speedup=Number(), q1_reasoning=Reason())
        check_form("demo_q1", q1_speedup=Number(), q1_reasoning=Reason())
        reveal("demo_q1")
        q1_speedup = 1.643   # noqa: F841
        check_form("demo_q1", q1_speedup=Number(), q1_reasoning=Reason())
    finally:
        InteractiveShell.clear_instance()
    t = events(record)[0]["t"][11:19]
    assert shown[0] == (f"Q1: answer committed at {t} UTC: q1_speedup = 3. Rule: {predictions.RULE}.")
    assert shown[1].endswith("(unchanged since). Rule: " + predictions.RULE + ".")
    assert shown[2].startswith(f"Q1: the truth is shown below (the reveal is recorded); graded on q1_speedup = 3,")
    assert shown[3].startswith(f"Q1: graded on q1_speedup = 3, committed at {t} UTC before the truth was shown. "
                               "Your revision q1_speedup = 1.643 (recorded at ")
    assert "earns no correctness points" in shown[3]
    assert not any("*" in s or " If " in s for s in shown), shown


def test_verify_after_a_revision_judges_the_committed_answer_and_says_so(record, capsys):
    q1_speedup, q1_reasoning = 3.0, "The H100 has three times the FLOP/s of the A100."
    check_form("wall_q1", q1_speedup=Number(), q1_reasoning=Reason())
    reveal("wall_q1")
    capsys.readouterr()
    assert verify("wall_q1", "q1_speedup", Number(rel_tol=0.02), 1.643, "The bandwidth ratio.") is False
    before = capsys.readouterr().out
    assert "Your prediction differs. The bandwidth ratio." in before and "revision" not in before
    q1_speedup = 1.643   # noqa: F841
    check_form("wall_q1", q1_speedup=Number(), q1_reasoning=Reason())
    reveal("wall_q1")
    capsys.readouterr()
    assert verify("wall_q1", "q1_speedup", Number(rel_tol=0.02), 1.643, "The bandwidth ratio.") is False
    out = capsys.readouterr().out
    t = events(record)[0]["t"][11:16]
    assert f"q1_speedup (committed {t} UTC, graded): 3" in out
    assert "Your committed answer differs. The bandwidth ratio." in out
    assert (f"You committed 3 at {t} UTC (differs from the truth); your revision, 1.643, matches it, but earns no "
            "correctness points: Q1 is graded on the answer committed before the truth was shown.") in out
    assert "Your prediction holds" not in out


def test_a_wrong_revision_of_a_right_commit_is_not_told_it_fails_either(record, capsys):
    """After a correct commit, a wrong revision "does not match it" (issue 45: it said "either",
    as if the committed answer had failed too); after a wrong commit, "either" stays."""
    q1_speedup, q1_reasoning = 1.643, "The bandwidth ratio rules decode."
    check_form("wall_q1", q1_speedup=Number(), q1_reasoning=Reason())
    reveal("wall_q1")
    q1_speedup = 3.0   # noqa: F841
    check_form("wall_q1", q1_speedup=Number(), q1_reasoning=Reason())
    capsys.readouterr()
    assert verify("wall_q1", "q1_speedup", Number(rel_tol=0.02), 1.643, "The bandwidth ratio.") is True
    out = capsys.readouterr().out
    assert "(matches the truth); your revision, 3, does not match it, and earns no correctness points" in out, out
    assert "either" not in out

def test_a_restarted_kernel_is_told_to_rerun_its_answer_cells(record, capsys):
    q3_prediction = 256     # noqa: F841
    check_form("hello_q3", q3_prediction=Number())
    reveal("hello_q3")
    del q3_prediction       # a restarted kernel: the answer cell has not run again
    with pytest.raises(CheckFailed, match=r"^Q3 was answered before \(committed q3_prediction = 256 at "
                                          r"\d\d:\d\d:\d\d UTC\), but this kernel has not run its answer cell: "
                                          r"re-run the setup cell and your answer cells \(Run All, or Run > Run All "
                                          r"Above\)\.$") as e:
        check_form("hello_q3", q3_prediction=Number())
    assert e.value.label == "unanswered"
    with pytest.raises(CheckFailed, match=r"^q4_prediction is not answered yet"):   # never answered
        check_form("hello_q4", q4_prediction=Regime())
    capsys.readouterr()
    verify("hello_q3", "q3_prediction", Number(), 256)      # judged on the committed answer
    out = capsys.readouterr().out
    assert "q3_prediction (now):" in out and "not defined in this kernel (re-run the setup cell" in out
    assert "Your committed answer holds." in out


def test_check_failures_and_not_committed_render_as_one_line():
    one = CheckFailed("q2_ridge is not answered yet: replace it.", label="unanswered")._render_traceback_()
    assert len(one) == 1 and one[0].endswith("Check failed\x1b[0m: q2_ridge is not answered yet: replace it.")
    nc = predictions.NotCommitted("Q2: no committed prediction yet.")._render_traceback_()
    assert len(nc) == 1 and "Q2: no committed prediction yet." in nc[0]


def test_an_unanswered_answer_cell_says_which_question_in_one_line():
    from IPython.core.interactiveshell import InteractiveShell

    from course_lib import notebook_errors

    shell = InteractiveShell.instance()
    shown = []
    try:
        shell._showtraceback = lambda etype, value, stb: shown.append((etype.__name__, stb))
        notebook_errors.install()
        r = shell.run_cell("# q3_prediction: one of 16, 64; q3_reasoning: one sentence\n# YOUR CODE HERE\n"
                           "raise NotImplementedError()")
        assert not r.success        # still an error: Run All stops there
        # anywhere else, a NotImplementedError keeps its traceback
        shell.run_cell("def later():\n    raise NotImplementedError('not yet')\nlater()")
    finally:
        InteractiveShell.clear_instance()
    (name, stb), (name2, stb2) = shown
    assert name == "NotImplementedError" and len(stb) == 1
    assert stb[0].endswith("Q3 is not answered yet: replace raise NotImplementedError() with your answer "
                           "(q3_prediction, q3_reasoning), then run this cell and the form check below it.")
    assert name2 == "NotImplementedError" and len(stb2) > 1 and stb2[-1].endswith("not yet")


# ---- the grading rule (autograder.integrity.predictions), on records made here --------------------------
def _grading_record(events, shown=()):
    from autograder.integrity.predictions import Record

    return Record(events, [], "file", [], list(shown))


def _final(**values):
    return {n: {"value": encode(v)} for n, v in values.items()}


def test_a_by_hand_answer_is_graded_as_committed_like_a_prediction(record):
    from autograder.integrity.predictions import Rule, decide, question_cells
    from autograder.integrity.verify import TestCell

    test = TestCell(notebook="hello_roofline", grade_id="hello_q1_correct", source="", points=2, hidden=True, names=["q1_intensity"],
                    sources={"q1_intensity": "hello_q1_answer"})
    assert question_cells([test]) == {"hello_q1": {"q1_intensity": "hello_q1_answer"}}
    q1_intensity = 0.5  # noqa: F841
    check_form("hello_q1", q1_intensity=Number("FLOP/byte"))
    reveal("hello_q1")
    q1_intensity = 0.25  # noqa: F841
    check_form("hello_q1", q1_intensity=Number("FLOP/byte"))
    d = decide(_grading_record(events(record)), "hello_q1", ["q1_intensity"], _final(q1_intensity=0.25))
    assert d.rule is Rule.CHANGED and d.withheld and d.committed == {"q1_intensity": encode(0.5)}
    assert "Q1 was changed after its truth was revealed: you committed q1_intensity = 0.5" in d.message


def _verify_cell(source, outputs, grade_id=None):
    meta = {"nbgrader": {"grade_id": grade_id}} if grade_id else {}
    return {"cell_type": "code", "source": source, "metadata": meta, "outputs": outputs}


PRINTED = [{"output_type": "stream", "name": "stdout", "text": "course_lib: 'memory-bound'\n"}]


def test_a_verify_cells_saved_output_shows_its_truth():
    from autograder.integrity.predictions import truth_shown

    receipt = [{"output_type": "display_data", "data": {predictions.MIME: {}, "text/plain": "Q1: ..."}}]
    error = [{"output_type": "error", "ename": "NotCommitted", "evalue": "", "traceback": []}]
    nb = {"cells": [
        _verify_cell('reveal("wall_q1")\nprint(truth)', PRINTED, "wall_q1_verify"),
        _verify_cell('reveal("wall_q2", "wall_q3")\nprint(truth)', PRINTED),      # metadata stripped
        _verify_cell('show("wall_q4")', receipt + error, "wall_q4_verify"),        # refused: no truth shown
        _verify_cell('reveal("wall_q5")', [], "wall_q5_verify"),                   # outputs cleared
        _verify_cell('print("wall_q6")', PRINTED),                                 # not a verify cell
        _verify_cell('print("Q7")\nreveal("wall_q7")', PRINTED + error, "wall_q7_verify"),  # printed, then refused
    ]}
    assert truth_shown(nb, [f"wall_q{i}" for i in range(1, 8)]) == ["wall_q1", "wall_q2", "wall_q3"]


def test_a_truth_shown_without_a_recorded_reveal_counts_as_revealed_after_the_first_commit(record):
    from autograder.integrity.flags import Flag
    from autograder.integrity.predictions import Rule, decide

    q1_speedup = 3.0  # noqa: F841
    check_form("wall_q1", q1_speedup=Number())
    q1_speedup = 1.643  # noqa: F841
    check_form("wall_q1", q1_speedup=Number())          # a "revision before the reveal": none recorded
    ev = events(record)
    d = decide(_grading_record(ev, ["wall_q1"]), "wall_q1", ["q1_speedup"], _final(q1_speedup=1.643))
    assert d.rule is Rule.CHANGED and d.withheld and d.committed == {"q1_speedup": encode(3.0)}
    assert d.reason.flag is Flag.TRUTH_SHOWN_UNRECORDED and "without a recorded reveal" in d.reason.message
    same = decide(_grading_record(ev[:1], ["wall_q1"]), "wall_q1", ["q1_speedup"], _final(q1_speedup=3.0))
    assert same.rule is Rule.COMMITTED and not same.withheld and same.reason.flag is Flag.TRUTH_SHOWN_UNRECORDED
    none = decide(_grading_record([], ["wall_q1"]), "wall_q1", ["q1_speedup"], _final(q1_speedup=1.643))
    assert none.rule is Rule.SHOWN and none.withheld and none.reason.flag is Flag.TRUTH_SHOWN_UNCOMMITTED
    plain = decide(_grading_record(ev), "wall_q1", ["q1_speedup"], _final(q1_speedup=1.643))
    assert plain.rule is Rule.FINAL and not plain.withheld and plain.reason is None     # no truth on screen


def test_no_record_follows_the_instructors_policy_and_is_flagged_either_way():
    from autograder.integrity.flags import Flag
    from autograder.integrity.predictions import Record, Rule, decide

    none = Record([], [], "none")
    final = decide(none, "wall_q1", ["q1_speedup"], _final(q1_speedup=1.643))
    assert final.rule is Rule.NO_RECORD and not final.withheld and final.reason.flag is Flag.NO_RECORD
    assert "final answer" in final.reason.message
    zero = decide(none, "wall_q1", ["q1_speedup"], _final(q1_speedup=1.643), "zero-predictions")
    assert zero.rule is Rule.NO_RECORD and zero.withheld and zero.reason.flag is Flag.NO_RECORD_ZERO
    assert "no correctness points" in zero.reason.message
    assert "Q1 earns no correctness points" in zero.message
    with pytest.raises(ValueError, match="final, zero-predictions"):
        decide(none, "wall_q1", ["q1_speedup"], {}, "lenient")


def test_a_record_that_cannot_be_written_fails_the_form_check_saying_why(record):
    record.mkdir()          # not a file: appending to it fails
    q1_intensity = 0.25  # noqa: F841
    with pytest.raises(CheckFailed, match=r"^Q1: your answer could not be recorded \(.*\): keep the notebook in a "
                                          r"folder you can write to"):
        check_form("hello_q1", q1_intensity=Number("FLOP/byte"))


def test_a_declared_questions_verify_cell_judges_the_committed_answer(record, capsys):
    """course_lib.questions' show() passes the cell's namespace along: the record still rules."""
    from course_lib.exercises.answer_forms import Ratio
    from course_lib.questions import core

    @core.question("demo_q1", rule="by-hand", specs={"q1_x": Ratio(rel_tol=0.05)})
    def _demo():
        return core.Solution({"q1_x": core.Truth(2.0, mistakes={"inverted-ratio": 0.5})}, hint="Divide.")

    try:
        q1_x = 0.5
        core.check_form("demo_q1")
        core.show("demo_q1")
        q1_x = 2.0  # noqa: F841
        core.check_form("demo_q1")
        capsys.readouterr()
        core.show("demo_q1")
        out = capsys.readouterr().out
    finally:
        del core.REGISTRY["demo_q1"]
    assert "q1_x (committed " in out and "Your committed answer differs. It matches a classic mistake" in out
    assert "(differs from the truth); your revision, " in out and "matches it, but earns no correctness points" in out


def test_a_questions_reasoning_is_no_change_of_its_answer(record):
    """A declared question's hidden test reads its reasoning too; the commit keeps the reasoning
    as its reason: the answer is compared on the answers alone."""
    from autograder.integrity.predictions import Rule, decide

    q3_prediction, q3_reasoning = 256, "With N = K = 4096 the intensity grows with M until it meets the ridge."
    check_form("hello_q3", q3_prediction=Number(), q3_reasoning=Reason())
    reveal("hello_q3")
    names = ["q3_prediction", "q3_reasoning"]
    same = decide(_grading_record(events(record)), "hello_q3", names,
                  _final(q3_prediction=256, q3_reasoning="Reworded after the reveal, the same answer."))
    assert same.rule is Rule.COMMITTED and not same.withheld and same.committed == {"q3_prediction": encode(256)}
    changed = decide(_grading_record(events(record)), "hello_q3", names,
                     _final(q3_prediction=128, q3_reasoning=q3_reasoning))
    assert changed.rule is Rule.CHANGED and "the notebook ends with q3_prediction = 128." in changed.message


def test_a_declared_questions_receipt_names_its_kind(record):
    from IPython.core.interactiveshell import InteractiveShell

    import course_lib.questions  # noqa: F401  (declares the questions: course_lib.exercises asks it)

    shown = []
    shell = InteractiveShell.instance()
    try:
        shell.display_pub.publish = lambda data, **kw: shown.append(data["text/plain"])
        q1_intensity = 0.25  # noqa: F841
        check_form("hello_q1")                      # declared in course_lib.questions.hello, by hand
    finally:
        InteractiveShell.clear_instance()
    assert shown and shown[0].endswith(f"q1_intensity = 0.25. Rule (worked by hand): {predictions.RULE}."), shown
