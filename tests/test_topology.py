"""AllReduce as alpha-beta by topology, derived by hand: one small and one large message per
topology, and each measured nccl-tests point the model is compared with (course_lib.topology)."""
import pytest

from course_lib import Hardware
from course_lib.errors import CourseError
from course_lib.measurements import allreduce_seconds, find
from course_lib.topology import allreduce_time, alpha, alpha_words, message_latency, ring_link

SMALL, LARGE = 16 * 2**10, 2**30          # a decode step's activations; a big gradient bucket
BOUND = 3.6e-6                            # the fastest published (SGLang PR 2904, 8x H100), rounded down
ASSUMED = 3.6e-6                          # the same figure, assumed for every chip without a measurement


def test_switch_with_nvls_small_and_large_by_hand():
    """H100 SXM, 8 GPUs, NVLink SHARP: the bound's alpha (3.6 us), then S / 450 GB/s."""
    h = Hardware.H100
    assert allreduce_time(h, SMALL, 8) == pytest.approx(BOUND + 16384 / 450e9)
    assert allreduce_time(h, LARGE, 8) == pytest.approx(BOUND + 2**30 / 450e9)
    assert alpha(h, 4) == alpha(h, 8) == pytest.approx(BOUND)


def test_a_ring_pays_one_latency_per_message_too_by_hand():
    """H100 SXM forced to a ring: one latency per AllReduce, as the switch's, plus 2(n-1)/n S / BW."""
    h = Hardware.H100
    assert allreduce_time(h, SMALL, 8, in_switch=False) == pytest.approx(BOUND + 1.75 * 16384 / 450e9)
    assert allreduce_time(h, LARGE, 4, in_switch=False) == pytest.approx(BOUND + 1.5 * 2**30 / 450e9)
    assert alpha(h, 8, in_switch=False) == alpha(h, 8) == pytest.approx(BOUND)
    for n in (2, 4, 8):                    # the ring is never faster than the switch, at any size
        for nbytes in (0, SMALL, LARGE):
            assert allreduce_time(h, nbytes, n, in_switch=False) >= allreduce_time(h, nbytes, n)
    assert "fastest published" in alpha_words(h, 8, in_switch=False)


def test_the_estimates_use_a_named_implementation_by_hand():
    """NCCL 2.20.5's 27.5 us (8 GPUs, taken for smaller groups too); SGLang's and vLLM's custom
    AllReduce at 512 B per group (PR 2904)."""
    h = Hardware.H100
    assert allreduce_time(h, SMALL, 8, allreduce="nccl") == pytest.approx(27.5e-6 + 16384 / 450e9)
    assert allreduce_time(h, SMALL, 2, allreduce="nccl") == pytest.approx(27.5e-6 + 16384 / 450e9)
    for n, us in ((2, 3.7), (4, 4.8), (8, 5.9)):
        assert message_latency(h, n, "sglang") == pytest.approx(us * 1e-6)
    for n, us in ((2, 9.5), (4, 9.1), (8, 10.1)):
        assert message_latency(Hardware.H200, n, "vllm") == pytest.approx(us * 1e-6)
    assert "estimate" in alpha_words(h, 8, allreduce="sglang")
    with pytest.raises(CourseError, match="no measured"):
        message_latency(Hardware.A100, 8, "nccl")
    with pytest.raises(CourseError, match="one of"):
        message_latency(h, 8, "gloo")


def test_one_latency_rule_for_every_chip():
    """Measured where published (HGX H100/H200), else the one assumed figure: the same for all."""
    from course_lib.hardware_specs import ASSUMED_MESSAGE_LATENCY, SPECS
    measured = [s["allreduce_latency"] for s in SPECS.values() if s.get("allreduce_latency")]
    assert ASSUMED_MESSAGE_LATENCY == min(measured) == ASSUMED
    for key, spec in SPECS.items():
        if spec["interconnect_bandwidth"]:
            hw = Hardware.get(key)
            assert spec["link_latency"] == ASSUMED_MESSAGE_LATENCY, key
            expected = spec.get("allreduce_latency") or ASSUMED_MESSAGE_LATENCY
            assert alpha(hw, 2) == pytest.approx(expected), key
            words = alpha_words(hw, 2)
            assert ("assumed" in words) == ("allreduce_latency" not in spec), key
            assert "ssumed" in spec["sources"]["link_latency"], key


def test_where_no_measurement_is_cited_alpha_is_an_assumption_and_says_so():
    for chip, n in (("A100", 8), ("H100_PCIe", 2), ("B200", 8), ("MI300X", 8), ("TPUv5e", 4)):
        hw = Hardware.get(chip)
        assert alpha(hw, n) == pytest.approx(ASSUMED), chip
        assert "assumed" in alpha_words(hw, n), chip


def test_switch_without_in_switch_reduction_is_a_ring_by_hand():
    """A100 SXM, 8 GPUs: a ring, 2(n-1)/n · S / 300 GB/s + one assumed latency."""
    a = Hardware.A100
    assert allreduce_time(a, SMALL, 8) == pytest.approx(1.75 * 16384 / 300e9 + ASSUMED)
    assert allreduce_time(a, LARGE, 8) == pytest.approx(1.75 * 2**30 / 300e9 + ASSUMED)


def test_bridge_by_hand():
    """H100 PCIe: a pair over its bridge (300 GB/s); four GPUs cross PCIe Gen5 (64 GB/s)."""
    p = Hardware.H100_PCIe
    assert allreduce_time(p, SMALL, 2) == pytest.approx(1.0 * 16384 / 300e9 + ASSUMED)
    assert allreduce_time(p, LARGE, 2) == pytest.approx(2**30 / 300e9 + ASSUMED)
    assert allreduce_time(p, LARGE, 4) == pytest.approx(1.5 * 2**30 / 64e9 + ASSUMED)


def test_mesh_by_hand():
    """MI300X: N-1 links of 48 GB/s usable (not the 64 GB/s line rate)."""
    m = Hardware.MI300X
    assert allreduce_time(m, SMALL, 8) == pytest.approx(1.75 * 16384 / (7 * 48e9) + ASSUMED)
    assert allreduce_time(m, LARGE, 4) == pytest.approx(1.5 * 2**30 / (3 * 48e9) + ASSUMED)


def test_torus_slice_by_hand():
    """TPU v5e: a 2x2 or 2x4 slice, no wraparound: a ring on 2 of 4 ports, 100 GB/s."""
    t = Hardware.TPUv5e
    assert allreduce_time(t, SMALL, 4) == pytest.approx(1.5 * 16384 / 100e9 + ASSUMED)
    assert allreduce_time(t, LARGE, 8) == pytest.approx(1.75 * 2**30 / 100e9 + ASSUMED)


@pytest.mark.parametrize("hw, nbytes", [("H200", 2**10), ("H200", 8 * 2**30), ("H100_PCIe", 2**30)])
def test_one_measured_point_by_hand(hw, nbytes):
    """nccl-tests busbw back to time, t = S · 2(n-1)/n / busbw, against the model by hand."""
    (row,) = find(kind="allreduce", hardware=hw, shape=(nbytes,))
    measured = nbytes * 2 * (row.tp - 1) / row.tp / row.value
    assert allreduce_seconds(row) == pytest.approx(measured)
    by_hand = (BOUND + nbytes / 450e9) if hw == "H200" else (nbytes / 300e9 + ASSUMED)
    assert allreduce_time(Hardware.get(hw), nbytes, row.tp) == pytest.approx(by_hand)
    assert by_hand <= measured


def test_link_names_say_what_the_allreduce_uses():
    assert "usable" in ring_link(Hardware.MI300X, 8)[0]
    assert "NVLink SHARP" in ring_link(Hardware.H100, 8)[0]


def test_pcie_only_cards_run_tensor_parallelism_over_pcie_by_hand():
    """T4 (PCIe Gen3 x16, 16 GB/s per direction) and L4 (Gen4, 32): a ring over PCIe, one assumed
    latency per message, as vLLM runs TP2 on T4s."""
    t4, l4 = Hardware.T4, Hardware.L4
    assert allreduce_time(t4, SMALL, 2) == pytest.approx(1.0 * 16384 / 16e9 + ASSUMED)
    assert allreduce_time(l4, LARGE, 4) == pytest.approx(1.5 * 2**30 / 32e9 + ASSUMED)
    assert "PCIe" in ring_link(t4, 2)[0] and "assumed" in alpha_words(t4, 2)
