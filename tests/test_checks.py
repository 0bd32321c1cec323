"""Answer checks: normalization, units and tolerance, messages that teach, no stderr."""
import pytest

from course_lib import Q_
from course_lib.checks import (check_form_number, check_form_regime, check_number, check_regime,
                               compare, normalize_regime)


@pytest.mark.parametrize("raw", ["Memory Bound", "memory", "MEMORY-BOUND", "memory_bound", " mem "])
def test_regime_normalization(raw):
    assert normalize_regime(raw) == "memory-bound"


@pytest.mark.parametrize("raw", ["", "fast", 3, None, "memory and compute"])
def test_unrecognized_regimes_raise(raw):
    with pytest.raises(ValueError):
        normalize_regime(raw)


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


def test_form_checks_need_a_reason_and_a_valid_answer():
    check_form_regime("memory-bound", "intensity is far below the ridge point")
    with pytest.raises(AssertionError):
        check_form_regime("memory-bound", "")
    with pytest.raises(AssertionError):
        check_form_regime("slow", "a long enough reason here")
    check_form_number(Q_(2, "ms"), "ms")
    with pytest.raises(AssertionError):
        check_form_number(Q_(2, "GB"), "ms")
    with pytest.raises(AssertionError):
        check_form_number("twelve")


def test_checks_write_nothing_to_stderr(capsys):
    check_number(Q_(0.153, "kFLOP/byte"), Q_(153, "FLOP/byte"))
    compare("memory", "compute-bound", "Look at the ridge.")
    compare(None, Q_(2, "ms"), kind="number")
    out = capsys.readouterr()
    assert out.err == ""
    assert "differs" in out.out and "Look at the ridge." in out.out


def test_ratios_and_counts_get_no_unit_hints():
    with pytest.raises(AssertionError) as e:
        check_number(4.0, 2.0)                 # a ratio off by 2 is not a FLOPs-per-MAC slip
    assert "MAC" not in str(e.value)
    check_number(Q_(2.0, "dimensionless"), 2.0)
    check_number(Q_(131072, "B"), 131072, units="byte")


def test_compare_choices_and_readable_numbers(capsys):
    assert compare("Decode", "decode", kind="choice", choices=["prefill", "decode"])
    assert not compare("prefill", "decode", kind="choice", choices=["prefill", "decode"])
    compare(1, Q_(131072, "byte"), kind="number")
    assert "131,072 B" in capsys.readouterr().out
    assert f"{Q_(1, 'TFLOP/s').units:~P}" == "TFLOP/s"
