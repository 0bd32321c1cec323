"""What the grader flags is data (autograder.integrity.flags): a Flag decides, its message is only read.

The report, the export and the console decide by the Flag (and the prediction rule, the ledger's
verdict) a producer set, never by the words of its message: rewording a message changes nothing
they decide. Kept in the status file and a notebook's metadata as the Flag's id beside the
message, and read back into the Flag; a verification job's verdict is found by a typed key.
"""
from __future__ import annotations

import json

import pytest

from autograder.grading.autograde import Graded
from autograder.course import Course
from autograder.integrity.flags import TRUTH_SHOWN, Flag, Reason
from autograder.integrity.ledger import Vouch
from autograder.integrity.predictions import Decision, Rule, summarize
from autograder.outputs.report import PredictionRow, ScoreRow, format_report
from autograder.grading.status import WHOLE, flag_reasons, flags, status_path, write_json


def result(predictions=(), score_rows=()) -> dict:
    return {"dir": "reports/a", "rows": [], "scores": {}, "failed": {}, "copies": [],
            "predictions": list(predictions), "score_rows": list(score_rows)}


def row(student, rule=Rule.FINAL, record="file", reason=None, **kw) -> PredictionRow:
    return PredictionRow("nb", "wall_q1", "Q1", student, rule, record, reason=reason, **kw)


def test_the_report_classifies_by_the_flag_whatever_its_message_says():
    """The old report searched the messages ("no correctness points" in the flag's text): a
    reworded message moved a student to the other policy's line, or out of the report."""
    text = format_report(result([
        row("zero", Rule.NO_RECORD, "none", Reason(Flag.NO_RECORD_ZERO, "nothing handed in: worth nothing")),
        # the words the old test looked for, on a flag of the other kind
        row("final", Rule.NO_RECORD, "none", Reason(Flag.NO_RECORD, "no correctness points lost: final answers")),
        row("hider", Rule.CHANGED, reason=Reason(Flag.TRUTH_SHOWN_UNRECORDED, "the answer was on screen early")),
        row("plain", Rule.COMMITTED, reason=Reason(Flag.RECORD_EDITED, "without a recorded reveal")),
    ], [ScoreRow("nb", "laptop", 3.0, 4.0, ledger=Vouch.NOT_VOUCHED),
        ScoreRow("nb", "hub", 4.0, 4.0, ledger=Vouch.VOUCHED)]))
    assert "  no prediction record (graded on final answers): final (nb)" in text
    assert "  no prediction record (no correctness points: --no-record zero-predictions): zero (nb)" in text
    assert "TRUTH SHOWN WITHOUT A RECORDED REVEAL? hider (nb) wall_q1" in text
    assert "TRUTH SHOWN WITHOUT A RECORDED REVEAL? plain" not in text
    assert "  not vouched (graded without the hub's prediction ledger; information, not a penalty): laptop" in text


def test_the_report_lists_changes_flags_and_manual_grades_by_their_fields():
    text = format_report(result(
        [row("ann", Rule.CHANGED, changed_from="q1 = 3", changed_to="q1 = 1.6"),
         row("bob", Rule.CHANGED, changed_from="q1 = 3", changed_to="q1 = 1.6"), row("cy")],
        [ScoreRow("nb", "ann", 0.0, 4.0, flagged=True,
                  reasons=[Reason(Flag.CHANGED_AFTER_REVEAL, "Q1 changed after the reveal")]),
         ScoreRow("nb", "bob", 0.0, 4.0, flagged=True), ScoreRow("nb", "cy", 2.0, 4.0, needs_manual_grade=True)]))
    assert "  wall_q1: 2 of 3 changed the prediction after the reveal (q1 = 3 -> q1 = 1.6 x2)" in text
    assert "  FLAGGED: ann (nb): Q1 changed after the reveal" in text
    assert "  FLAGGED: bob (nb): flagged" in text          # flagged by hand in the Formgrader
    assert "  needs manual grade (written answers not graded yet): cy" in text


def test_the_csv_rows_keep_the_flags_id_beside_its_message():
    r = row("hider", Rule.CHANGED, reason=Reason(Flag.TRUTH_SHOWN_UNRECORDED, "on screen early")).csv_row()
    assert (r["rule"], r["flag"], r["flag_kind"]) == ("changed-after-reveal", "on screen early", "truth-shown-unrecorded")
    assert list(r) == PredictionRow.FIELDS
    s = ScoreRow("nb", "ann", 1.0, 4.0, flagged=True, ledger=Vouch.DIFFERS,
                 reasons=[Reason(Flag.LEDGER_DIFFERS, "differs"), Reason(Flag.RECORD_EDITED, "edited")]).csv_row()
    assert (s["flag"], s["flag_kinds"], s["ledger"]) == ("differs; edited", "ledger-differs; record-edited",
                                                         "record differs from the hub's ledger")
    assert list(s) == ScoreRow.FIELDS


def test_a_decision_goes_through_the_notebooks_metadata_with_its_flag():
    d = Decision(Rule.CHANGED, {"x": 1}, {"x": 2}, "changed", True, Reason(Flag.TRUTH_SHOWN_UNRECORDED, "shown"))
    stored = json.loads(json.dumps(d.to_json()))
    assert stored["rule"] == "changed-after-reveal" and stored["flag"] == "truth-shown-unrecorded"
    assert Decision.from_json(stored) == d
    assert Decision.from_json(Decision(Rule.FINAL).to_json()).reason is None
    # an older grader's metadata: the message alone under "flag"
    old = Decision.from_json({"rule": "committed", "flag": "the truth is in the notebook's outputs ..."})
    assert old.reason == Reason(Flag.UNKNOWN, "the truth is in the notebook's outputs ...")


def test_the_summary_of_a_notebook_carries_each_findings_flag():
    meta = {"predictions": {"source": "none", "problems": ["an event does not match its hash"], "questions": {
        "wall_q1": Decision(Rule.NO_RECORD, withheld=True, reason=Reason(Flag.NO_RECORD_ZERO, "x")).to_json(),
        "wall_q2": Decision(Rule.SHOWN, withheld=True, reason=Reason(Flag.TRUTH_SHOWN_UNCOMMITTED, "on screen")).to_json(),
        "wall_q3": Decision(Rule.CHANGED, withheld=True).to_json()}}}
    got = summarize(meta)
    assert [r.flag for r in got] == [Flag.NO_RECORD_ZERO, Flag.RECORD_EDITED, Flag.TRUTH_SHOWN_UNCOMMITTED,
                                     Flag.CHANGED_AFTER_REVEAL]
    assert got[2].message == "Q2: on screen" and got[2].flag in TRUTH_SHOWN


@pytest.fixture
def course(tmp_path):
    return Course(root=tmp_path, source=tmp_path, release=tmp_path)


def test_the_status_file_keeps_each_reason_as_its_flags_id_and_message(course):
    g = Graded("ann", flag_reasons={"nb": [Reason(Flag.KERNEL_DIFFERS, "nb_q1_correct: the kernel's verdict differs")]},
               ledger=Vouch.DIFFERS)
    write_json(status_path(course, "a", "ann"), g.graded_status("fp", True))
    st = json.loads(status_path(course, "a", "ann").read_text())
    assert st["flags"] == {"nb": [{"flag": "kernel-differs", "message": "nb_q1_correct: the kernel's verdict differs"}]}
    assert st["ledger"] == "differs"
    assert flags(course, "a", "ann") == {"nb": [Reason(Flag.KERNEL_DIFFERS, "nb_q1_correct: the kernel's verdict differs")]}
    assert flag_reasons(course, "a", "ann") == ["nb: nb_q1_correct: the kernel's verdict differs"]
    from autograder.integrity.ledger import status as ledger_status

    assert ledger_status(course, "a", "ann") is Vouch.DIFFERS
    write_json(status_path(course, "a", "bob"), g.failed_status("the worker crashed"))
    assert flags(course, "a", "bob") == {WHOLE: [Reason(Flag.GRADING_FAILED, "grading failed: the worker crashed")]}
    assert flag_reasons(course, "a", "bob") == ["grading failed: the worker crashed"]
    assert ledger_status(course, "a", "bob") is None


def test_a_status_file_of_an_older_grader_still_reads(course):
    write_json(status_path(course, "a", "old"), {"status": "graded", "flags": {"nb": ["some reason"]},
                                                 "ledger": "record differs from the hub's ledger"})
    assert flags(course, "a", "old") == {"nb": [Reason(Flag.UNKNOWN, "some reason")]}
    from autograder.integrity.ledger import status as ledger_status

    assert ledger_status(course, "a", "old") is Vouch.DIFFERS


# ---- the verification jobs' keys ----------------------------------------------------------------
class EchoVerifier:
    """The clean process's part: a verdict per job, under the key it was sent."""

    def __init__(self):
        self.sent = []

    def alive(self):
        return True

    def run(self, tests, env):
        self.sent = tests
        return {t["key"]: {"passed": True, "score": t["points"], "ename": None, "message": json.dumps(t["values"]),
                           "label": None} for t in tests}


def test_a_verdict_is_found_by_its_typed_key_even_for_an_answer_named_like_a_job(monkeypatch):
    """The keys were "nb/cell|committed", "nb/cell|final" and "nb/cell|<answer>": an answer named
    `committed` or `final` took another job's place."""
    import nbformat

    from autograder.integrity import verify
    from autograder.integrity.verify import JobKey, TestCell, Values

    test = TestCell("nb", "nb_q1_correct", "assert final and committed", 2, True, ["final", "committed"],
                    sources={"final": "nb_q1_answer", "committed": "nb_q1_answer"})
    book = nbformat.v4.new_notebook()
    book.metadata["autograder"] = {"answers": {"nb_q1_answer": {"final": {"value": 1}, "committed": {"value": 2}}}}
    truth = {"nb": {"answers": {"nb_q1_answer": {"final": {"value": 10}, "committed": {"value": 20}}}}}
    jobs = verify.verification_jobs({"nb": [test]}, {"nb": book}, truth)
    keys = [j["key"] for j in jobs]
    assert keys == [JobKey("nb", "nb_q1_correct"), JobKey("nb", "nb_q1_correct", Values.ONE_ANSWER, "final"),
                    JobKey("nb", "nb_q1_correct", Values.ONE_ANSWER, "committed")]
    echo = EchoVerifier()
    monkeypatch.setitem(verify._VERIFIERS, "echo", echo)
    results = verify.run_clean(jobs, make_spec=None, key="echo")
    assert set(results) == set(keys)
    assert all(isinstance(t["key"], str) for t in echo.sent)       # what crosses to the clean process
    assert json.loads(results[keys[1]]["message"]) == {"final": {"value": 1}, "committed": {"value": 20}}
    assert json.loads(results[keys[2]]["message"]) == {"final": {"value": 10}, "committed": {"value": 2}}
    assert str(keys[1]) == "nb/nb_q1_correct (final alone)"

