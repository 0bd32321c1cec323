"""Every step of grading a submission is bounded (issue 28, item 3), through the real path: a class
of t3 (course_lib's own checks) graded with two workers (sandboxed where bubblewrap works), in
which hostile notebooks carry tens of MB of prediction record, next to honest students whose
receipts commit the right answers before each reveal.

* right, right2 -- honest: full marks, graded on the answers they committed;
* bloated  -- receipts of 12 revisions of 10,000 Quantities each (the red team's notebook):
              no answer is that big; fails alone, saying so, in seconds (it took 48 s to grade);
* reviser  -- 150 revisions of 500 Quantities each after the reveal, every value within the
              limits: graded (Q1 changed after its reveal: no correctness points), and the
              decision decodes no revision (it used to decode two values per revision);
* slowpoke -- an honest notebook whose decision is made slow (injected): the decision runs
              inside the submission's budget (PARSE_SECONDS, 15 s here), so it fails alone with
              the reason (the old grader waited for it, outside any limit);
* oversize -- a 65 MB notebook put into submitted/ by hand: fails saying so (the copy refused
              it, and nbgrader said "No notebooks were matched by <a private folder>"; in an
              assignment of several notebooks it scored the one it did not get as missing: zero).
"""
from __future__ import annotations

import re
import time

import nbformat
import pytest

from autograder.grading import autograde
from autograder.course import Course
from autograder.grading.grade import cell_scores
from autograder.grading.status import grading_status
from course_lib import Q_
from course_lib.exercises import answers
from course_lib.exercises import predictions as P
from course_lib.exercises.answers import encode
from tiny_course import FAST, NO_SANDBOX_FLAG, make_course, run_cli, student_nb

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

Q1, Q2 = "t3units_q1", "t3units_q2"
RIGHT = {"t3units_q1_answer": "from course_lib import Q_\nq1_time = Q_(7.36, 'ms')\nq1_regime = 'memory-bound'",
         "t3units_q2_answer": "q2_bytes = Q_(16, 'GB')"}
CELLS = ("t3units_q1_form", "t3units_q1_correct", "t3units_q2_correct")
FULL = (1, 2, 2)
BUDGET = 15               # PARSE_SECONDS for this class; an honest submission needs a fraction of a second
SLOW = "# SLOWPOKE"       # the notebook whose decision the test makes slow


def _t(i: int) -> str:
    return f"2020-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"


def _receipt(chain: list) -> nbformat.NotebookNode:
    return nbformat.v4.new_output("display_data", data={"text/plain": "receipt",
                                                         P.MIME: {"question": chain[-1]["q"], "events": chain}})


def _with_receipts(data: bytes, receipts: dict) -> bytes:
    """The notebook with `receipts` ({cell grade_id: [chain, ...]}) as those cells' outputs."""
    nb = nbformat.reads(data.decode(), as_version=4)
    for c in nb.cells:
        chains = receipts.get(c.metadata.get("nbgrader", {}).get("grade_id"))
        if chains:
            c.outputs = [_receipt(chain) for chain in chains]
    return nbformat.writes(nb).encode()


def _honest_events() -> list:
    events = []
    events.append(P.make_event(events, Q1, "commit", {"q1_time": encode(Q_(7.36, "ms")),
                                                      "q1_regime": encode("memory-bound")}, "r", t=_t(0)))
    events.append(P.make_event(events, Q1, "reveal", t=_t(1)))
    events.append(P.make_event(events, Q2, "commit", {"q2_bytes": encode(Q_(16, "GB"))}, None, t=_t(2)))
    events.append(P.make_event(events, Q2, "reveal", t=_t(3)))
    return events


def honest(course, explore=None) -> bytes:
    events = _honest_events()
    q1 = [e for e in events if e["q"] == Q1]
    q2 = [e for e in events if e["q"] == Q2]
    return _with_receipts(student_nb(course, "t3", "units", answers=RIGHT, explore=explore),
                          {"t3units_q1_form": [q1[:1], q1], "t3units_q2_answer": [q2[:1], q2]})


def revisions(course, n: int, items: int) -> bytes:
    """Q1 committed as a list of `items` Quantities, revealed, then revised `n` times (each a
    different list); the notebook ends with the right answers."""
    big = lambda k: {"q1_time": encode([Q_(float(j + k), "ms") for j in range(items)]),   # noqa: E731
                     "q1_regime": encode("memory-bound")}
    events = []
    events.append(P.make_event(events, Q1, "commit", big(0), "r", t=_t(0)))
    events.append(P.make_event(events, Q1, "reveal", t=_t(1)))
    for k in range(1, n + 1):
        events.append(P.make_event(events, Q1, "revise", big(k), "r", t=_t(k + 1)))
    return _with_receipts(student_nb(course, "t3", "units", answers=RIGHT),
                          {"t3units_q1_form": [events[:2], events]})


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    base = tmp_path_factory.mktemp("limits")
    course = make_course(base / "tiny")
    c = Course(root=base / "course", source=course.source, release=course.release)
    handed_in = {
        "right": honest(course),
        "right2": honest(course),
        "bloated": revisions(course, 12, 10_000),
        "reviser": revisions(course, 150, 500),
        "slowpoke": honest(course, explore=SLOW),
    }
    sizes = {s: len(d) for s, d in handed_in.items()}
    # what reaches submitted/ by other ways than collect (plain nbgrader collect, a hand copy)
    for s, data in handed_in.items():
        (c.submitted / s / "t3").mkdir(parents=True)
        (c.submitted / s / "t3" / "units.ipynb").write_bytes(data)
    (c.submitted / "oversize" / "t3").mkdir(parents=True)
    with open(c.submitted / "oversize" / "t3" / "units.ipynb", "wb") as f:
        f.truncate(65 * 2**20)        # sparse: the size is all that is looked at

    decoded = base / "decoded"
    real_decode, real_decisions = answers.decode, autograde._prediction_decisions

    def counted_decode(obj):          # in the workers (forked from this process): every answer decoded
        with open(decoded, "a") as f:
            f.write("1\n")
        return real_decode(obj)

    def slow_decisions(nb, *args, **kwargs):
        if any(SLOW in cell.source for cell in nb.cells):
            time.sleep(3 * BUDGET)    # outside the budget (the old grader) this is waited for
        return real_decisions(nb, *args, **kwargs)

    common = ["--root", c.root, "--source", c.source, "--release-dir", c.release]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(autograde, "PARSE_SECONDS", BUDGET)
        mp.setattr(answers, "decode", counted_decode)
        mp.setattr(autograde, "_prediction_decisions", slow_decisions)
        t0 = time.monotonic()
        g = run_cli("grade", "t3", *common, *FAST, *NO_SANDBOX_FLAG, "-j", "2", check=False, timeout=1200)
        seconds = time.monotonic() - t0
    print(f"graded the class in {seconds:.1f} s")
    return {"course": c, "grade": g, "seconds": seconds, "sizes": sizes,
            "decoded": len(decoded.read_text().splitlines()) if decoded.exists() else 0}


def _status(run, student) -> dict:
    return grading_status(run["course"], "t3", student)


def _out(run) -> str:
    return run["grade"].stdout + run["grade"].stderr[-3000:]


def test_the_honest_keep_full_marks_graded_on_what_they_committed(limited):
    g = limited["grade"]
    assert "graded 3, up to date 0, failed 3" in g.stdout, _out(limited)
    scores = cell_scores(limited["course"].db_url, "t3")
    for s in ("right", "right2"):
        assert tuple(scores[s][f"units/{c}"] for c in CELLS) == FULL, (s, scores[s])
        st = _status(limited, s)
        assert st["status"] == "graded" and st["predictions"] == [], st
    book = nbformat.read(str(limited["course"].autograded / "right" / "t3" / "units.ipynb"), as_version=4)
    rules = {q: d["rule"] for q, d in book.metadata["autograder"]["predictions"]["questions"].items()}
    assert rules == {Q1: "committed", Q2: "committed"}


def test_a_record_of_answers_bigger_than_any_fails_alone_saying_so(limited):
    assert limited["sizes"]["bloated"] > 10 * 2**20, limited["sizes"]
    st = _status(limited, "bloated")
    assert st["status"] == "failed", st
    cause = re.compile(r"not graded: the receipts in the notebook: a value of Q1 \(q1_time\) of \d{3},\d{3} characters "
                       r"of JSON, more than an answer can be \(100,000\)")
    assert cause.fullmatch(st["cause"]), st
    assert re.search(rf"FAILED: bloated: {cause.pattern}", limited["grade"].stdout), _out(limited)
    assert "bloated" not in cell_scores(limited["course"].db_url, "t3")       # no score, not a zero


def test_many_revisions_within_the_limits_are_graded_without_decoding_each(limited):
    assert limited["sizes"]["reviser"] > 10 * 2**20, limited["sizes"]
    st = _status(limited, "reviser")
    assert st["status"] == "graded", st
    assert st["predictions"] == ["units: Q1 changed after the reveal: no correctness points"], st["predictions"]
    scores = cell_scores(limited["course"].db_url, "t3")
    assert tuple(scores["reviser"][f"units/{c}"] for c in CELLS) == (1, 0, 2)
    # the work done: a few answers decoded per graded question and student (the committed and the
    # final ones), not two per revision (the old decision: over 300 for the reviser alone)
    assert limited["decoded"] < 60, limited["decoded"]


def test_a_decision_over_the_budget_fails_alone_with_the_reason(limited):
    st = _status(limited, "slowpoke")
    assert st["status"] == "failed", st
    assert st["cause"] == (f"not graded: deciding what its prediction record grades: over the grader's limit of "
                           f"{BUDGET} s for reading what a submission hands in (its notebooks and prediction record)"), st


def test_a_notebook_over_the_size_limit_fails_saying_so_never_a_zero(limited):
    st = _status(limited, "oversize")
    assert st["status"] == "failed" and st["cause"] == "not graded: units.ipynb: larger than 64 MB: refused", st
    assert "oversize" not in cell_scores(limited["course"].db_url, "t3")
