"""AllReduce as alpha-beta by topology, derived by hand: one small and one large message per
topology, and each measured nccl-tests point the model is compared with (course_lib.topology)."""
import pytest

from course_lib import Hardware
from course_lib.measurements import allreduce_seconds, find
from course_lib.topology import allreduce_time, alpha, alpha_words, latency_floor, ring_link

SMALL, LARGE = 16 * 2**10, 2**30          # a decode step's activations; a big gradient bucket


def test_switch_with_nvls_small_and_large_by_hand():
    """H100 SXM, 8 GPUs, NVLink SHARP: alpha measured on the H200 sweep (27.5 us), then S / 450 GB/s."""
    h = Hardware.H100
    assert allreduce_time(h, SMALL, 8) == pytest.approx(27.5e-6 + 16384 / 450e9)
    assert allreduce_time(h, LARGE, 8) == pytest.approx(27.5e-6 + 2**30 / 450e9)
    assert alpha(h, 4) == alpha(h, 8) == pytest.approx(27.5e-6)           # one trip to the switch and back


def test_a_ring_on_the_nvls_board_pays_the_same_measured_floor_by_hand():
    """H100 SXM forced to a ring: nccl-tests' small-message time is what NCCL's chosen AllReduce
    takes at that size (not NVLS there), so it floors a ring too: max(27.5 us, 2(n-1) x 1 us)."""
    h = Hardware.H100
    assert latency_floor(h, 8) == pytest.approx(27.5e-6)
    assert allreduce_time(h, SMALL, 8, in_switch=False) == pytest.approx(27.5e-6 + 1.75 * 16384 / 450e9)
    assert allreduce_time(h, LARGE, 4, in_switch=False) == pytest.approx(27.5e-6 + 1.5 * 2**30 / 450e9)
    assert alpha(h, 8, in_switch=False) == alpha(h, 8) == pytest.approx(27.5e-6)
    for n in (2, 4, 8):                    # the ring is never faster than the switch, at any size
        for nbytes in (0, SMALL, LARGE):
            assert allreduce_time(h, nbytes, n, in_switch=False) >= allreduce_time(h, nbytes, n)
    # the hops count only where longer than the floor: with 3 us per hop, 14 x 3 = 42 us > 27.5
    from course_lib.topology import allreduce_seconds
    assert allreduce_seconds(SMALL, 8, 450e9, 3e-6, message_latency=27.5e-6) == pytest.approx(
        42e-6 + 1.75 * 16384 / 450e9)
    assert "measured floor" in alpha_words(h, 8, in_switch=False)


def test_where_no_measurement_is_cited_alpha_is_an_assumption_and_says_so():
    for chip, n in (("A100", 8), ("H100_PCIe", 2), ("B200", 8), ("MI300X", 8), ("TPUv5e", 4)):
        hw = Hardware.get(chip)
        assert latency_floor(hw, n) is None, chip
        assert "assumed" in alpha_words(hw, n), chip


def test_switch_without_in_switch_reduction_is_a_ring_by_hand():
    """A100 SXM, 8 GPUs: a ring, 2(n-1)/n · S / 300 GB/s + 2(n-1) hops of 1 us (assumed)."""
    a = Hardware.A100
    assert allreduce_time(a, SMALL, 8) == pytest.approx(1.75 * 16384 / 300e9 + 14e-6)
    assert allreduce_time(a, LARGE, 8) == pytest.approx(1.75 * 2**30 / 300e9 + 14e-6)


def test_bridge_by_hand():
    """H100 PCIe: a pair over its bridge (300 GB/s); four GPUs cross PCIe Gen5 (64 GB/s)."""
    p = Hardware.H100_PCIe
    assert allreduce_time(p, SMALL, 2) == pytest.approx(1.0 * 16384 / 300e9 + 2e-6)
    assert allreduce_time(p, LARGE, 2) == pytest.approx(2**30 / 300e9 + 2e-6)
    assert allreduce_time(p, LARGE, 4) == pytest.approx(1.5 * 2**30 / 64e9 + 6e-6)


def test_mesh_by_hand():
    """MI300X: N-1 links of 48 GB/s usable (not the 64 GB/s line rate)."""
    m = Hardware.MI300X
    assert allreduce_time(m, SMALL, 8) == pytest.approx(1.75 * 16384 / (7 * 48e9) + 14e-6)
    assert allreduce_time(m, LARGE, 4) == pytest.approx(1.5 * 2**30 / (3 * 48e9) + 6e-6)


def test_torus_slice_by_hand():
    """TPU v5e: a 2x2 or 2x4 slice, no wraparound: a ring on 2 of 4 ports, 100 GB/s."""
    t = Hardware.TPUv5e
    assert allreduce_time(t, SMALL, 4) == pytest.approx(1.5 * 16384 / 100e9 + 6e-6)
    assert allreduce_time(t, LARGE, 8) == pytest.approx(1.75 * 2**30 / 100e9 + 14e-6)


@pytest.mark.parametrize("hw, nbytes", [("H200", 2**10), ("H200", 8 * 2**30), ("H100_PCIe", 2**30)])
def test_one_measured_point_by_hand(hw, nbytes):
    """nccl-tests busbw back to time, t = S · 2(n-1)/n / busbw, against the model by hand."""
    (row,) = find(kind="allreduce", hardware=hw, shape=(nbytes,))
    measured = nbytes * 2 * (row.tp - 1) / row.tp / row.value
    assert allreduce_seconds(row) == pytest.approx(measured)
    by_hand = (27.5e-6 + nbytes / 450e9) if hw == "H200" else (nbytes / 300e9 + 2e-6)
    assert allreduce_time(Hardware.get(hw), nbytes, row.tp) == pytest.approx(by_hand)
    assert by_hand <= measured


def test_link_names_say_what_the_allreduce_uses():
    assert "usable" in ring_link(Hardware.MI300X, 8)[0]
    assert "NVLink SHARP" in ring_link(Hardware.H100, 8)[0]
