"""Lesson 6 across the range of published AllReduce latencies (issue 46): from the bound's
3.6 us (the fastest published, SGLang's custom AllReduce) to NCCL 2.20's 27.5 us, what the
lesson teaches holds at every latency in between, and each named estimate sits inside it."""
import numpy as np
import pytest

from course_lib import Hardware, Models, Q_, serve
from course_lib.questions import get
from course_lib.topology import allreduce_time, message_latency

LOW, HIGH = Hardware.H100.allreduce_latency_si, Hardware.H100.allreduce_estimates["nccl"][8]
RANGE = np.linspace(LOW, HIGH, 7)


def _decode(chip, tp, **kw):
    return serve(Models.Llama3_70B, Hardware.get(chip), prompt_tokens=2048, output_tokens=128, tp=tp, **kw).decode


def test_the_range_is_the_published_one():
    assert LOW == pytest.approx(3.6e-6) and HIGH == pytest.approx(27.5e-6)
    for name in ("sglang", "vllm", "nccl"):
        for n in (2, 4, 8):
            assert LOW <= message_latency(Hardware.H100, n, name) <= HIGH


@pytest.mark.parametrize("chip", ["H100", "H200"])
def test_decode_is_latency_bound_and_a_long_prefill_bandwidth_bound_at_every_latency(chip):
    hw = Hardware.get(chip)
    d = Models.Llama3_70B.config.d_model
    for a in RANGE:
        assert a > d * 2 / hw.interconnect_bandwidth_si                  # one token: latency
        assert 2048 * d * 2 / hw.interconnect_bandwidth_si > a          # Q3's canonical prompt: bandwidth


@pytest.mark.parametrize("chip, tp", [("H100", 4), ("H100", 8), ("H200", 8)])
def test_the_estimate_grows_with_the_latency_and_never_drops_below_the_bound(chip, tp):
    bound = _decode(chip, tp).latency_si
    times = [_decode(chip, tp, allreduce="nccl", link_latency=Q_(a * 1e6, "us")).latency_si for a in RANGE]
    assert all(b > a for a, b in zip(times, times[1:]))
    assert bound <= times[0]
    # Q2's ratio falls as the latency grows, from near 2 (bytes alone) towards NCCL's
    ratios = [_decode(chip, tp // 2, allreduce="nccl", link_latency=Q_(a * 1e6, "us")).latency_si
              / _decode(chip, tp, allreduce="nccl", link_latency=Q_(a * 1e6, "us")).latency_si for a in RANGE]
    assert all(b < a for a, b in zip(ratios, ratios[1:])) and ratios[0] < 2


def test_each_graded_estimate_lies_between_the_ends_of_the_range():
    q2 = get("scale_q2").solution().truths["q2_speedup"]
    ends = [_decode("H100", 4, allreduce="nccl", link_latency=Q_(a * 1e6, "us")).latency_si
            / _decode("H100", 8, allreduce="nccl", link_latency=Q_(a * 1e6, "us")).latency_si for a in (LOW, HIGH)]
    assert ends[1] < q2.value < ends[0]
    assert q2.mistakes["other-implementation"] == pytest.approx(ends[1], rel=1e-9)   # NCCL's end


def test_the_bound_allreduce_is_below_every_estimate_at_every_size():
    for nbytes in (0, 512, 16384, 2**20, 2**30):
        for n in (2, 4, 8):
            b = allreduce_time(Hardware.H100, nbytes, n)
            for name in ("sglang", "vllm", "nccl"):
                assert b <= allreduce_time(Hardware.H100, nbytes, n, allreduce=name)
