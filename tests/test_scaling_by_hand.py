"""Lesson 6 derived by hand: Llama-3-70B decode at TP4 and TP8 on HGX H100, with the AllReduce
summed in the switch (NVLink SHARP, course_lib's default there) and as a ring (both paying the
measured small-message floor, course_lib.topology.latency_floor), from datasheet
constants and the model's config typed here, against course_lib (``serve``, ``topology``) and
the lesson's graded truths (issue 32).

By hand, one decode step per GPU reads (fp16, 2 B per value):

* the weights / N: every parameter but the embedding table, which a step gathers one row of;
* the KV cache / N (8 KV heads split over N <= 8 GPUs): 80 layers x 8 heads x 128 x 2 (K and V)
  x 2 B per token, over the mean context of the steps for tokens 2..128 after a 2048-token
  prompt (2048 + 128 / 2 = 2112 tokens read), plus the one token written;
* activations, left out by hand: course_lib charges them at every kernel boundary, under
  0.05% of the bytes here, hence the 0.1% tolerance.

At batch 1 the step is memory-bound (checked), so TPOT = bytes / 3.35 TB/s + 2 x 80 AllReduces
of one token's activations, 8192 x 2 = 16,384 B each.
"""
import pytest

from course_lib import Hardware, Models, serve
from course_lib.questions import get
from course_lib.topology import allreduce_time

# datasheets and the model's config.json, typed
PARAMS = 70_553_706_496                   # Llama-3-70B (HF meta-llama/Meta-Llama-3-70B)
VOCAB, D, LAYERS, KV_HEADS, HEAD_DIM = 128_256, 8192, 80, 8, 128
HBM = 3.35e12                             # H100 SXM, B/s
NVLINK = 450e9                            # 900 GB/s both directions, per direction
FLOOR = 27.5e-6                           # nccl-tests, 8x H200, smallest messages (s per AllReduce, any algorithm)
HOP = 1e-6                                # the course's assumed per-hop latency
PROMPT, OUTPUT = 2048, 128

MESSAGE = D * 2                           # one token's activations, fp16


def weights_per_gpu(n):
    return ((PARAMS - VOCAB * D) * 2 + D * 2) / n          # + the one gathered embedding row


def kv_per_gpu(n):
    per_token = LAYERS * KV_HEADS * HEAD_DIM * 2 * 2
    return per_token * (PROMPT + OUTPUT / 2 + 1) / n


def nvls(n, nbytes=MESSAGE):
    return max(FLOOR, 2 * HOP) + nbytes / NVLINK


def ring(n, nbytes=MESSAGE):
    """The ring pays the same measured floor: its 2(n-1) assumed hops (6 or 14 us) are shorter."""
    return 2 * (n - 1) / n * nbytes / NVLINK + max(FLOOR, 2 * (n - 1) * HOP)


def tpot(n, allreduce):
    return (weights_per_gpu(n) + kv_per_gpu(n)) / HBM + 2 * LAYERS * allreduce(n)


def _decode(n):
    return serve(Models.Llama3_70B, Hardware.H100, prompt_tokens=PROMPT, output_tokens=OUTPUT, tp=n).decode


@pytest.mark.parametrize("n", [4, 8])
def test_decode_with_nvls_by_hand(n):
    d = _decode(n)
    assert d.t_compute_si < d.t_memory_si / 100                  # batch 1: memory-bound by far
    assert d.t_memory_si == pytest.approx((weights_per_gpu(n) + kv_per_gpu(n)) / HBM, rel=1e-3)
    assert d.t_comm_si == pytest.approx(2 * LAYERS * nvls(n), rel=1e-9)
    assert d.latency_si == pytest.approx(tpot(n, nvls), rel=1e-3)


@pytest.mark.parametrize("n", [4, 8])
def test_decode_with_a_ring_by_hand(n):
    """The same step with a ring AllReduce (what NCCL runs without NVLS): serve's memory term
    plus course_lib.topology's ring, against the ring by hand."""
    d = _decode(n)
    course_lib = d.latency_si - d.t_comm_si + 2 * LAYERS * allreduce_time(Hardware.H100, MESSAGE, n, in_switch=False)
    assert course_lib == pytest.approx(tpot(n, ring), rel=1e-3)
    # both pay the measured floor, so at decode's 16 KB the ring is only its extra bytes slower:
    # never faster than NVLS, and within 0.1%
    assert nvls(n) < ring(n) < 1.001 * nvls(n)


def test_the_by_hand_figures():
    """The by-hand figures themselves (ms), as the verify cells print them."""
    assert tpot(8, nvls) * 1e3 == pytest.approx(9.62, abs=0.01)
    assert tpot(4, nvls) * 1e3 == pytest.approx(14.83, abs=0.01)
    assert 2 * LAYERS * nvls(8) * 1e3 == pytest.approx(4.406, abs=0.001)
    assert tpot(8, ring) * 1e3 == pytest.approx(9.62, abs=0.01)
    assert 2 * LAYERS * ring(8) * 1e3 == pytest.approx(4.410, abs=0.001)


def test_q2_and_q4_truths_by_hand():
    """scale_q2: TPOT(4) / TPOT(8) with NVLS; scale_q4: one prefill AllReduce of the 2048-token
    prompt over 8 GPUs, NVLS / ring."""
    assert get("scale_q2").solution().truths["q2_speedup"].value == pytest.approx(tpot(4, nvls) / tpot(8, nvls),
                                                                                  rel=1e-3)
    prompt_bytes = PROMPT * MESSAGE
    assert get("scale_q4").solution().truths["q4_ratio"].value == pytest.approx(
        nvls(8, prompt_bytes) / ring(8, prompt_bytes), rel=1e-9)
