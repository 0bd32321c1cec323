"""Reading and deciding on a prediction record is bounded (issue 28, item 3): a red team's notebook
of receipts (12 revisions of 10,000 Quantities each) spent minutes in the decision, outside any
limit, because every revision after the reveal was decoded and compared with the committed answer,
work whose result grading never reads. Here, fast: the decision decodes nothing per revision, a
repeated receipt is hashed once, a hostile source is scanned in linear time, a value bigger than
an answer or a question with more events than any honest record fails the record with the reason,
and the budget shared by every step that reads what a submission supplies fails it with the
reason. tests/test_prediction_limits.py grades such notebooks end to end."""
from __future__ import annotations

import json
import time

import pytest

from autograder.grading import autograde

from autograder.integrity import predictions
from autograder.integrity.predictions import (MAX_EVENTS_PER_QUESTION, MAX_VALUE_CHARS, Record, RecordOverLimits, Rule,
                                    decide, read_record, truth_shown)
from course_lib import Q_
from course_lib.exercises import answers
from course_lib.exercises import predictions as P
from course_lib.exercises.answers import encode

Q = "wall_q1"
T = "2020-01-01T00:{:02d}:{:02d}.000Z"


def _t(i: int) -> str:
    return T.format(i // 60 % 60, i % 60)


def _values(k: int, items: int) -> dict:
    return {"q1_time": encode([Q_(float(j + k), "ms") for j in range(items)])}


def record(revisions: int, items: int = 20, question: str = Q) -> list:
    """A commit, its reveal, then `revisions` different answers: the events, chained."""
    events = []
    events.append(P.make_event(events, question, "commit", _values(0, items), "r", t=_t(0)))
    events.append(P.make_event(events, question, "reveal", t=_t(1)))
    for k in range(1, revisions + 1):
        events.append(P.make_event(events, question, "revise", _values(k, items), "r", t=_t(k + 1)))
    return events


@pytest.fixture
def decodes(monkeypatch):
    """How many answers were decoded (course_lib.exercises.answers.decode called)."""
    calls = []
    real = answers.decode

    def counted(obj):
        calls.append(1)
        return real(obj)

    monkeypatch.setattr(answers, "decode", counted)
    return calls


@pytest.mark.parametrize("revisions", [10, 400])
def test_the_decision_decodes_no_revision_after_the_reveal(decodes, revisions):
    events = record(revisions, items=50)
    final = {"q1_time": {"value": encode(Q_(7.36, "ms"))}}
    d = decide(Record(events, [], "notebook", events), Q, ["q1_time"], final)
    assert d.rule is Rule.CHANGED and d.withheld and d.committed == _values(0, 50)
    # the committed answer and the final one, once each, for the comparison and the message: the
    # same for 10 revisions as for 400 (the old decision decoded two values per revision)
    assert len(decodes) <= 4, len(decodes)
    assert len(d.message) < 1500, len(d.message)      # the committed list is quoted shortened


def test_history_without_after_gives_what_grading_reads_and_decodes_nothing(decodes):
    events = record(30)
    full = P.history(events, Q)
    assert len(decodes) > 0 and len(full["after"]) == 30
    decodes.clear()
    graded = P.history(events, Q, after=False)
    assert decodes == []
    assert graded["after"] is None
    assert {k: v for k, v in graded.items() if k != "after"} == {k: v for k, v in full.items() if k != "after"}


def test_history_compares_an_unchanged_revision_without_decoding_it(decodes):
    events = []
    events.append(P.make_event(events, Q, "commit", _values(0, 30), "r", t=_t(0)))
    events.append(P.make_event(events, Q, "reveal", t=_t(1)))
    events.append(P.make_event(events, Q, "revise", _values(0, 30), "another reason", t=_t(2)))
    assert P.history(events, Q)["after"] == [] and decodes == []


def _notebook_with(folder, chains: list, source: str = "") -> None:
    outputs = [{"output_type": "display_data", "metadata": {},
                "data": {"text/plain": "receipt", P.MIME: {"question": c[-1]["q"], "events": c}}} for c in chains]
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
          "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "execution_count": 1, "source": source,
                     "outputs": outputs}]}
    (folder / "lesson.ipynb").write_text(json.dumps(nb))


def test_a_value_bigger_than_an_answer_fails_the_record_with_the_reason(tmp_path):
    items = MAX_VALUE_CHARS // 90 + 100        # each encoded Quantity is about 90 characters of JSON
    big = record(1, items=items)
    (tmp_path / "nb").mkdir()
    _notebook_with(tmp_path / "nb", [big])
    with pytest.raises(RecordOverLimits, match=r"the receipts in the notebook: a value of Q1 \(q1_time\) of "
                                               r"[\d,]+ characters of JSON, more than an answer can be \(100,000\)"):
        read_record(tmp_path / "nb", "lesson", [Q])
    (tmp_path / "file").mkdir()
    (tmp_path / "file" / P.RECORD_FILE).write_text("".join(json.dumps(e) + "\n" for e in big))
    with pytest.raises(RecordOverLimits, match=r"\.predictions\.jsonl: a value of Q1"):
        read_record(tmp_path / "file", "lesson", [Q])
    # just under the limit: read
    fits = record(1, items=MAX_VALUE_CHARS // 100)
    _notebook_with(tmp_path / "nb", [fits])
    assert read_record(tmp_path / "nb", "lesson", [Q]).events == fits


def test_more_events_than_an_honest_record_holds_fail_the_record(tmp_path, monkeypatch):
    assert MAX_EVENTS_PER_QUESTION >= 200
    monkeypatch.setattr(predictions, "MAX_EVENTS_PER_QUESTION", 20)
    events = record(14, items=1)                 # 16 events, repeated by 16 receipts: counted once each
    _notebook_with(tmp_path, [events[:k] for k in range(1, len(events) + 1)])
    assert len(read_record(tmp_path, "lesson", [Q]).events) == 16
    events = record(24, items=1)                 # 26 distinct events
    _notebook_with(tmp_path, [events])
    with pytest.raises(RecordOverLimits, match="the receipts in the notebook: more than 20 events for Q1"):
        read_record(tmp_path, "lesson", [Q])


def test_an_event_repeated_by_later_receipts_is_hashed_once(tmp_path, monkeypatch):
    events = record(40, items=5)
    _notebook_with(tmp_path, [events[:k] for k in range(1, len(events) + 1)])     # a receipt per event
    hashed = []
    real = P.event_hash
    monkeypatch.setattr(P, "event_hash", lambda e: hashed.append(1) or real(e))
    r = read_record(tmp_path, "lesson", [Q])
    assert r.problems == [] and r.events == events
    assert len(hashed) == len(events), len(hashed)       # not 42 * 43 / 2


def test_an_edited_copy_of_a_repeated_event_is_still_caught(tmp_path):
    events = record(3, items=2)
    forged = json.loads(json.dumps(events))
    forged[0]["values"] = _values(99, 2)                    # same hash, other content
    _notebook_with(tmp_path, [events, forged])
    assert any("does not match its hash" in p for p in read_record(tmp_path, "lesson", [Q]).problems)


def test_what_is_not_an_event_in_a_receipt_is_left_out_and_said(tmp_path):
    events = record(1, items=1)
    _notebook_with(tmp_path, [[5, "x", [1]] + events])
    r = read_record(tmp_path, "lesson", [Q])
    assert "a copy in the notebook holds something that is not an event (left out)" in r.problems
    assert r.events == events


def test_a_hostile_source_is_scanned_for_reveals_in_linear_time():
    nb = {"cells": [{"cell_type": "code", "source": "show(" * 200_000, "metadata": {},
                     "outputs": [{"output_type": "stream", "name": "stdout", "text": "x"}]},
                    {"cell_type": "code", "source": "reveal('wall_q2')\nprint(truth)", "metadata": {},
                     "outputs": [{"output_type": "stream", "name": "stdout", "text": "42"}]}]}
    t0 = time.monotonic()
    assert truth_shown(nb, ["wall_q1", "wall_q2"]) == ["wall_q2"]
    assert time.monotonic() - t0 < 5          # each "show(" scanning to the end: hours


def test_a_problem_quotes_at_most_a_few_hundred_characters_of_the_record(tmp_path):
    events = record(1, items=1)
    file_events = [dict(e) for e in events]
    (tmp_path / P.RECORD_FILE).write_text(json.dumps(file_events[0]) + "\n")
    copy = json.loads(json.dumps(events))
    copy[1]["t"] = "9" * 50_000                          # the reveal: not in the file, a long time
    _notebook_with(tmp_path, [copy])
    r = read_record(tmp_path, "lesson", [Q])
    assert r.problems and all(len(p) <= 310 for p in r.problems), [len(p) for p in r.problems]


# ---------------------------------------------------------------------------------------------
# the budget of one submission
# ---------------------------------------------------------------------------------------------
def test_the_budget_is_shared_by_the_steps_and_stops_the_one_over_it_with_the_reason():
    budget = autograde.Budget(1.0)
    with budget("reading its notebooks"):
        time.sleep(0.2)
    time.sleep(1.2)              # between the steps (the kernel's run): not counted
    with budget("reading the prediction record handed in"):
        time.sleep(0.2)
    t0 = time.monotonic()
    with pytest.raises(autograde.OverBudget, match=r"^deciding what its prediction record grades: over the grader's "
                                                   r"limit of 1 s for reading what a submission hands in"):
        with budget("deciding what its prediction record grades"):
            try:
                time.sleep(30)
            except (OSError, Exception):         # code in the step that catches broadly does not hide it
                time.sleep(30)
    assert time.monotonic() - t0 < 5
    with pytest.raises(autograde.OverBudget):    # spent: the next step stops at once
        with budget("reading its notebooks"):
            pass


def test_the_budget_of_a_submission_is_parse_seconds(monkeypatch):
    monkeypatch.setattr(autograde, "PARSE_SECONDS", 7)
    assert autograde.Budget().seconds == 7


def test_outputs_are_dropped_once_read_and_the_cells_kept(tmp_path, monkeypatch):
    events = record(2, items=2)
    _notebook_with(tmp_path, [events], source="x = 1")
    before = json.loads((tmp_path / "lesson.ipynb").read_text())
    autograde._drop_outputs(tmp_path)
    after = json.loads((tmp_path / "lesson.ipynb").read_text())
    assert after["cells"][0]["outputs"] == []
    before["cells"][0]["outputs"] = []
    assert after == before
    monkeypatch.setattr(autograde, "MAX_CELLS_BYTES", 1000)
    _notebook_with(tmp_path, [], source="x = 1\n" * 1000)
    with pytest.raises(autograde.TooLarge, match=r"lesson.ipynb is 0 MB without its outputs \(cells, sources and "
                                                 r"metadata\): more than 0 MB is not read"):
        autograde._drop_outputs(tmp_path)


def test_a_notebook_refused_for_its_size_is_a_failure_not_a_missing_notebook():
    from autograder.intake.safefiles import RefusedFile, Refusal

    job = {"tests": {"units": []}}
    with pytest.raises(autograde.TooLarge, match=r"^units.ipynb: larger than 64 MB: refused$"):
        autograde._refused_notebooks([RefusedFile("units.ipynb", "larger than 64 MB: refused", Refusal.TOO_LARGE)], job)
    # decided by the kind, never the text (issue 43): the same words with another kind are no size refusal
    autograde._refused_notebooks([RefusedFile("units.ipynb", "larger than you think", Refusal.LINK),
                                  RefusedFile("data.csv", "larger than 64 MB: refused", Refusal.TOO_LARGE)], job)
