"""Units (one shared pint registry) and the errors bad input gets."""
import pint
import pytest

from course_lib import (CourseError, Hardware, Models, PrecisionError, Q_, UnitsError, max_batch_size,
                        serve, solve)


def test_q_mixes_with_pints_application_registry():
    theirs = pint.get_application_registry().Quantity(1, "TB/s")
    assert (Q_(1, "TB/s") + theirs).m_as("GB/s") == pytest.approx(2000)


def test_bytes_are_not_plain_numbers():
    assert not Q_(1, "GB").dimensionless
    assert not Q_(1, "FLOP/byte").check("[computation]")
    with pytest.raises(UnitsError):
        Hardware(name="x", peak_flops={"fp16": Q_(1, "TFLOP/s")}, memory_bandwidth=Q_(1, "TB/s"),
                 memory_capacity=Q_(24, "dimensionless"))


def test_flop_mac_and_byte_prefixes():
    assert Q_(1, "MAC").m_as("FLOP") == 2
    assert Q_(0.153, "kFLOP/byte").m_as("FLOP/byte") == pytest.approx(153)
    assert Q_(1, "TFLOP/s").m_as("FLOP/s") == 1e12
    assert Q_(1, "GiB").m_as("byte") == 2**30
    assert Q_(1, "GB").m_as("byte") == 1e9


def test_hand_built_hardware_needs_units():
    with pytest.raises(UnitsError, match=r"Q_\(2, 'TB/s'\)"):
        Hardware(name="x", peak_flops={"fp16": Q_(1, "TFLOP/s")}, memory_bandwidth=2)


def test_wrong_dimension_says_what_was_expected():
    with pytest.raises(UnitsError, match="expected a bandwidth"):
        Hardware(name="x", peak_flops={"fp16": Q_(1, "TFLOP/s")}, memory_bandwidth=Q_(2, "TB"))
    with pytest.raises(UnitsError, match="flop rate"):
        Hardware(name="x", peak_flops={"fp16": Q_(1, "TB/s")}, memory_bandwidth=Q_(2, "TB/s"))


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "8", None, [1, 0]])
def test_bad_batch_size(bad):
    with pytest.raises(CourseError, match="positive integer"):
        solve(Models.ResNet50, Hardware.A100, batch_size=bad)


def test_unknown_precision_lists_valid_ones():
    with pytest.raises(PrecisionError, match="fp16") as e:
        solve(Models.ResNet50, Hardware.A100, precision="fp12")
    assert "int8" in str(e.value)


def test_missing_precision_is_an_error_not_a_fallback():
    with pytest.raises(PrecisionError, match="no int4 peak") as e:
        solve(Models.ResNet50, Hardware.H100, precision="int4")
    assert "fp8" in str(e.value)  # names what the chip does have
    with pytest.raises(PrecisionError, match="no fp8 peak"):
        serve(Models.Llama3_8B, Hardware.A100, precision="fp8")


def test_unknown_names_suggest_the_closest():
    with pytest.raises(KeyError, match="Did you mean Llama3_8B"):
        Models.get("Llama3-8")
    with pytest.raises(KeyError, match="Did you mean H100"):
        Hardware.get("H10")
    with pytest.raises(AttributeError, match="Did you mean A100"):
        Hardware.A10O
    assert not hasattr(Models, "NoSuchModel")


def test_efficiency_knob_range():
    with pytest.raises(CourseError, match=r"\(0, 1\]"):
        solve(Models.ResNet50, Hardware.A100, compute_efficiency=1.5)
    with pytest.raises(UnitsError):
        solve(Models.ResNet50, Hardware.A100, overhead_per_kernel=5)


def test_serve_refuses_a_cnn_and_tp_without_links():
    with pytest.raises(CourseError, match="use solve"):
        serve(Models.ResNet50, Hardware.A100)
    with pytest.raises(CourseError, match="needs an LLM"):
        max_batch_size(Models.ResNet50, Hardware.A100, context_tokens=128)
    with pytest.raises(CourseError, match="interconnect"):
        serve(Models.Llama3_8B, Hardware.JetsonAGXOrin, tp=2)
