"""Answer checks: normalization, units and tolerance, messages that teach, no stderr."""
import pytest

from course_lib import Q_
from course_lib.exercises.checks import check_form_number, check_number, check_regime


@pytest.mark.parametrize("answer", [153, 153.0, Q_(153, "FLOP/byte"), Q_(0.153, "kFLOP/byte")])
def test_numbers_match_with_units(answer):
    check_number(answer, Q_(153.0, "FLOP/byte"), rel_tol=0.01)


def test_wrong_numbers_get_a_hint_not_the_answer():
    with pytest.raises(AssertionError, match="factor of 2") as e:
        check_number(306, Q_(153, "FLOP/byte"))
    assert "153" not in str(e.value)
    with pytest.raises(AssertionError, match="GiB"):
        check_number(16.06 / 1.073741824, Q_(16.06, "GB"))
    with pytest.raises(AssertionError) as e:  # 6.9% off is not the GB/GiB slip
        check_number(16.06, Q_(15.02, "GB"))
    assert "GiB" not in str(e.value)
    with pytest.raises(AssertionError, match="do not convert"):
        check_number(Q_(1, "ms"), Q_(153, "FLOP/byte"))


def test_regime_check_teaches():
    check_regime("compute", "compute-bound")
    with pytest.raises(AssertionError, match="ridge point") as e:
        check_regime("memory-bound", "compute-bound")
    assert "compute-bound" not in str(e.value)


def test_the_number_form_check_needs_a_valid_answer():
    check_form_number(Q_(2, "ms"), "ms")
    with pytest.raises(AssertionError):
        check_form_number(Q_(2, "GB"), "ms")
    with pytest.raises(AssertionError):
        check_form_number("twelve")


def test_checks_write_nothing_to_stderr(capsys):
    check_number(Q_(0.153, "kFLOP/byte"), Q_(153, "FLOP/byte"))
    verify("t_q1", "q_x", Regime(), "compute-bound", "Look at the ridge.", namespace={"q_x": "memory"})
    verify("t_q1", "q_x", Number("ms"), Q_(2, "ms"), namespace={"q_x": None})
    out = capsys.readouterr()
    assert out.err == ""
    assert "differs" in out.out and "Look at the ridge." in out.out


def test_ratios_and_counts_get_no_unit_hints():
    with pytest.raises(AssertionError) as e:
        check_number(4.0, 2.0)                 # a ratio off by 2 is not a FLOPs-per-MAC slip
    assert "MAC" not in str(e.value)
    check_number(Q_(2.0, "dimensionless"), 2.0)
    check_number(Q_(131072, "B"), 131072, units="byte")


def test_verify_reads_choices_and_shows_readable_numbers(capsys):
    assert verify("t_q1", "q_x", Choice("prefill", "decode"), "decode", namespace={"q_x": "Decode"})
    assert not verify("t_q1", "q_x", Choice("prefill", "decode"), "decode", namespace={"q_x": "prefill"})
    verify("t_q1", "q_x", Number("byte"), Q_(131072, "byte"), namespace={"q_x": 1})
    assert "131,072 B" in capsys.readouterr().out
    assert f"{Q_(1, 'TFLOP/s').units:~P}" == "TFLOP/s"


# ---- one parser for every check (issue: checks that disagreed) ---------------------------------
import contextlib
import io

import numpy as np

from course_lib.exercises.answer_forms import NotAnAnswer, Number, Ratio, Reason, Regime, Choice, WholeNumber
from course_lib.exercises.checks import check_answer, check_form, verify
from course_lib.exercises.misconceptions import MISCONCEPTIONS, CheckFailed


def _outcomes(spec, value, truth):
    """(form accepts, hidden accepts the form, verify accepts the form, hidden right, verify right)."""
    ns = {"q_x": value}
    try:
        check_form("t_q1", namespace=ns, q_x=spec)
        form = True
    except CheckFailed as e:
        assert e.label == "not-an-answer"
        form = False
    try:
        check_answer("t_q1", "q_x", spec, truth, namespace=ns)
        hidden_form, hidden_right = True, True
    except CheckFailed as e:
        hidden_form, hidden_right = e.label != "not-an-answer", False
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        verify_right = verify("t_q1", "q_x", spec, truth, namespace=ns)
    verify_form = "is not an answer" not in out.getvalue()
    return form, hidden_form, verify_form, hidden_right, verify_right


CANDIDATES = [
    (Regime(), "memory-bound", ["Memory Bound.", "memory", "MEMORY_BOUND", "memory-bound (bandwidth)",
                                "not memory-bound", "memory or compute", "probably compute", "compute?",
                                "fast", "", 3, None, True, ["memory-bound"]]),
    (Choice(16, 64, 256), 256, [256, 256.0, "256", " 256 ", np.int64(256), np.float32(256), np.array([256]),
                                256.5, True, "two hundred", 128, "128.0"]),
    (Choice("higher", "lower"), "lower", ["Lower.", "lower", " LOWER ", "not lower", "higher or lower", 1, "low"]),
    (Ratio(rel_tol=0.03), 1.643, [1.643, "1.643", np.float64(1.643), np.array([1.643]), np.array(1.643),
                                  Q_(1.643, "dimensionless"), True, False, "1.6x", float("nan"),
                                  np.array([1.0, 2.0]), Q_(1.643, "ms"), 3.17]),
    (Number("FLOP/byte", rel_tol=0.02), 153.0, [153, "153", Q_(0.153, "kFLOP/byte"), Q_(153, "ms"), True,
                                                np.array([153.0]), 306]),
    (WholeNumber(), 64, [64, 64.0, "64", np.int32(64), 59.55, 63.9, True, 65]),
]


@pytest.mark.parametrize("spec, truth, values", CANDIDATES, ids=[type(c[0]).__name__ for c in CANDIDATES])
def test_form_verify_and_hidden_accept_the_same_forms(spec, truth, values):
    for value in values:
        form, hidden_form, verify_form, hidden_right, verify_right = _outcomes(spec, value, truth)
        assert form == hidden_form == verify_form, (value, form, hidden_form, verify_form)
        assert hidden_right == verify_right, value


def test_negations_and_hedges_are_not_predictions():
    for text in ("not memory-bound", "isn't compute-bound", "non-memory-bound", "memory or compute",
                 "memory and compute", "probably memory-bound", "memory-bound?", "either"):
        with pytest.raises(NotAnAnswer):
            Regime().read(text)
    with pytest.raises(CheckFailed) as e:
        check_answer("t_q1", "q_x", Regime(), "memory-bound", namespace={"q_x": "not memory-bound"})
    assert e.value.label == "not-an-answer"


def test_choices_numbers_and_whole_numbers_read_consistently():
    assert Choice(16, 64, 256).read(256.0) == 256 and Choice(16, 64, 256).read("256") == 256
    assert Choice("higher", "lower").read("Lower.") == "lower"
    assert Regime().read("Memory Bound.") == "memory-bound"
    for bad in (True, 256.5):
        with pytest.raises(NotAnAnswer):
            Choice(16, 64, 256).read(bad)
    with pytest.raises(NotAnAnswer):
        Ratio().read(True)
    assert Ratio().read(np.array([1.5])) == 1.5 and Ratio().read("1.643") == 1.643
    with pytest.raises(NotAnAnswer, match="whole"):
        WholeNumber().read(59.55)
    assert WholeNumber().read(np.int64(59)) == 59
    with pytest.raises(NotAnAnswer, match="between|range"):
        Ratio(low=0, high=1).read(1.2)


def test_error_examples_are_never_an_answer():
    with pytest.raises(NotAnAnswer) as e:
        Number("FLOP/byte").read("lots")
    message = str(e.value)
    assert "Q_(value, 'FLOP/byte')" in message
    assert not any(ch.isdigit() for ch in message.replace("'lots'", ""))


def test_unanswered_is_reported_by_name_everywhere():
    with pytest.raises(CheckFailed, match=r"^q7_chatbot and q7_reasoning are not answered yet") as e:
        check_form("t_q7", namespace={"q7_offline": "H100"}, q7_chatbot=Choice("A100", "H100"),
                   q7_offline=Choice("A100", "H100"), q7_reasoning=Reason())
    assert e.value.label == "unanswered" and "NotImplementedError" in str(e.value)
    with pytest.raises(CheckFailed, match=r"^q2_ridge is not answered yet") as e:
        check_answer("t_q2", "q2_ridge", Number("FLOP/byte"), 153.0, namespace={})
    assert e.value.label == "unanswered"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert verify("t_q2", "q2_ridge", Number("FLOP/byte"), 153.0, namespace={}) is False
    assert "not answered yet" in out.getvalue()


def test_answers_are_found_where_a_notebook_or_the_grader_keeps_them():
    # the grader: a hidden test's source run in a fresh namespace holding the recorded answers
    exec("from course_lib.exercises.checks import check_answer, Ratio\n"
         "check_answer('t_q1', 'q1_speedup', Ratio(), 1.643)", {"q1_speedup": 1.65})
    # a function's locals (a check called inside a loop in a helper)
    def inner():
        q1_speedup = 1.64
        check_answer("t_q1", "q1_speedup", Ratio(), 1.643)
    inner()


def test_a_mistake_is_named_without_the_answer():
    truth = 153.0
    mistakes = {"mac-as-1-flop": truth / 2, "sparse-peak": truth * 2, "unit-prefix": [truth * 1e3, None]}
    for value, label in ((76.5, "mac-as-1-flop"), (306.0, "sparse-peak"), (153000.0, "unit-prefix"), (200.0, None)):
        with pytest.raises(CheckFailed) as e:
            check_answer("t_q2", "q2_ridge", Number("FLOP/byte"), truth, mistakes=mistakes,
                         hint="Divide the peak by the bandwidth.", namespace={"q2_ridge": value})
        assert e.value.label == label
        assert "153" not in str(e.value)
        if label:
            assert MISCONCEPTIONS[label].mistake in str(e.value)
        else:
            assert "Divide the peak by the bandwidth." in str(e.value)
    # a mistake that gives the right answer here is not a mistake: the answer passes
    check_answer("t_q2", "q2_ridge", Regime(), "memory-bound", namespace={"q2_ridge": "memory"},
                 mistakes={"weights-only": "memory-bound"})
    with pytest.raises(ValueError, match="unknown misconception label"):
        check_answer("t_q2", "q2_ridge", Number(), 1.0, mistakes={"typo": 2.0}, namespace={"q2_ridge": 2.0})


def test_every_label_has_a_description_and_a_step():
    for label, m in MISCONCEPTIONS.items():
        assert label == label.lower() and " " not in label
        assert len(m.mistake) > 10 and m.redo.endswith(".")
    with pytest.raises(ValueError):
        CheckFailed("x", label="not-a-label")


def test_form_checks_show_no_value():
    # nbgrader reads a test cell's displayed value as a partial score
    assert check_form("t_q1", namespace={"q_x": 1.0}, q_x=Ratio()) is None
