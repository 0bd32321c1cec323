"""course_lib.exercises.answers: answer values to JSON and back, exactly; everything else a clear error.
And the autograder's seam that picks the recorded values a test is re-verified with."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from course_lib import Q_
from course_lib.exercises.answers import UnsupportedAnswer, decode, encode, record

VALUES = [
    "memory-bound", "", 0, -7, 10**30, 2.5, -0.0, float("inf"), True, False, None,
    Q_(7.36, "ms"), Q_(0.00736, "second"), Q_(0.153, "kFLOP/byte"), Q_(1.5e4, "megabyte"), Q_(16, "GiB"),
    Q_(312, "TFLOP/s"), Q_(3, "MAC"), Q_(np.float64(2.0), "us"),
    np.float64(1.5), np.float32(0.1), np.int64(-3), np.uint8(200), np.bool_(True), np.str_("decode"),
    np.array(2.5), np.array([7]), np.array([[1.5]], dtype=np.float32),
    (1, "a", [2.0, None]), [Q_(1, "ms"), "x"],
]


def _same(a, b) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and bool((a == b).all())
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if hasattr(a, "units"):
        return str(a.units) == str(b.units) and _same(a.magnitude, b.magnitude)
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b and repr(a) == repr(b)


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_round_trip_through_json_is_exact(value):
    text = json.dumps(encode(value), allow_nan=False)      # strict JSON: no NaN or Infinity tokens
    assert _same(decode(json.loads(text)), value)


def test_nan_round_trips():
    assert math.isnan(decode(json.loads(json.dumps(encode(float("nan")), allow_nan=False))))


@pytest.mark.parametrize("value", [{"a": 1}, {1, 2}, np.array([1.0, 2.0]), object(), 1j,
                                   np.array(["a"], dtype=object), type("Evil", (str,), {})("x")],
                         ids=["dict", "set", "array-of-2", "object", "complex", "object-array", "str-subclass"])
def test_anything_else_is_a_clear_error(value):
    with pytest.raises(UnsupportedAnswer, match="answers are str, int, float, bool, None, pint Quantities"):
        encode(value)


@pytest.mark.parametrize("obj", [{"type": "int", "value": "7"}, {"type": "float", "value": "1e3"},
                                 {"type": "quantity", "magnitude": {"type": "int", "value": 1}, "units": "parsecs^2/banana"},
                                 {"type": "numpy", "dtype": "O", "value": 1}, {"type": "pickle", "value": "..."},
                                 [1, 2], "x", {"type": "list", "items": "abc"}])
def test_a_malformed_record_is_a_clear_error(obj):
    with pytest.raises(UnsupportedAnswer):
        decode(obj)


def test_record_writes_values_errors_and_missing_names():
    rec = json.loads(record(["t", "bad", "huge", "gone"], {"t": Q_(2, "ms"), "bad": {}, "huge": "x" * 200_000}))
    assert _same(decode(rec["t"]["value"]), Q_(2, "ms"))
    assert "cannot be recorded" in rec["bad"]["error"] and "too large" in rec["huge"]["error"]
    assert rec["gone"] == {"missing": True}


def test_grading_values_takes_each_name_from_its_answer_cell():
    from autograder.integrity.verify import TestCell, grading_values
    from autograder.cell_code import free_names

    src = "from course_lib.exercises.checks import check_number\nx = 2\ncheck_number(q1_time + x, truth)\nfor i in range(3): pass"
    assert free_names(src) == ["q1_time", "truth"]
    test = TestCell("nb", "nb_q1_correct", src, 2.0, True, ["q1_time"], {"q1_time": "nb_q1_answer"}, [])
    answers = {"nb_q1_answer": {"q1_time": {"value": encode(Q_(7, "ms"))}},
               "nb_q2_answer": {"q1_time": {"value": encode(Q_(9, "ms"))}}}      # a later reuse of the name
    assert decode(grading_values(test, answers)["q1_time"]["value"]) == Q_(7, "ms")
    assert grading_values(test, {}) == {"q1_time": {"missing": True}}
