"""Lesson 6 derived by hand: Llama-3-70B decode at TP4 and TP8 on HGX H100, with the AllReduce
summed in the switch (NVLink SHARP, course_lib's default there) and as a ring (one latency per
message for both, course_lib.topology.message_latency), as the bound (the fastest published
latency, communication overlapped) and as estimates (a named implementation's measured latency,
not overlapped), from datasheet constants, published latencies and the model's config typed
here, against course_lib (``serve``, ``topology``, ``scaling``) and the lesson's graded truths
(issues 32 and 46).

By hand, one decode step per GPU reads (fp16, 2 B per value):

* the weights / N: every parameter but the embedding table, which a step gathers one row of;
* the KV cache / N (8 KV heads split over N <= 8 GPUs): 80 layers x 8 heads x 128 x 2 (K and V)
  x 2 B per token, over the mean context of the steps for tokens 2..128 after a 2048-token
  prompt (2048 + 128 / 2 = 2112 tokens read), plus the one token written;
* activations, left out by hand: course_lib charges them at every kernel boundary, under
  0.05% of the bytes here, hence the 0.1% tolerance.

At batch 1 the step is memory-bound (checked), so the estimate's TPOT = bytes / 3.35 TB/s + 2 x 80
AllReduces of one token's activations, 8192 x 2 = 16,384 B each; the bound's is the larger of
the two.
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
NCCL = 27.5e-6                            # nccl-tests, NCCL 2.20.5, 8x H200, smallest messages
SGLANG = {2: 3.7e-6, 4: 4.8e-6, 8: 5.9e-6}   # SGLang PR 2904: custom AllReduce, 512 B, 8x H100
BOUND = 3.6e-6                            # fastest published: 3.7 us (4096 B, 4 GPUs) - 4096 / 450e9, rounded down
PROMPT, OUTPUT = 2048, 128

MESSAGE = D * 2                           # one token's activations, fp16


def weights_per_gpu(n):
    return ((PARAMS - VOCAB * D) * 2 + D * 2) / n          # + the one gathered embedding row


def kv_per_gpu(n):
    per_token = LAYERS * KV_HEADS * HEAD_DIM * 2 * 2
    return per_token * (PROMPT + OUTPUT / 2 + 1) / n


def nvls(n, nbytes=MESSAGE, alpha=NCCL):
    return alpha + nbytes / NVLINK


def ring(n, nbytes=MESSAGE, alpha=NCCL):
    """The ring pays the same one latency per message."""
    return 2 * (n - 1) / n * nbytes / NVLINK + alpha


def memory(n):
    return (weights_per_gpu(n) + kv_per_gpu(n)) / HBM


def tpot(n, allreduce, alpha=NCCL):
    """The estimate: the AllReduces after the memory term."""
    return memory(n) + 2 * LAYERS * allreduce(n, alpha=alpha)


def bound(n):
    """The bound: the AllReduces (at the fastest published latency) overlap the memory term."""
    return max(memory(n), 2 * LAYERS * nvls(n, alpha=BOUND))


def _decode(n, allreduce="nccl"):
    return serve(Models.Llama3_70B, Hardware.H100, prompt_tokens=PROMPT, output_tokens=OUTPUT, tp=n,
                 allreduce=allreduce).decode


@pytest.mark.parametrize("n", [4, 8])
def test_decode_with_nvls_by_hand(n):
    d = _decode(n)
    assert d.t_compute_si < d.t_memory_si / 100                  # batch 1: memory-bound by far
    assert d.t_memory_si == pytest.approx(memory(n), rel=1e-3)
    assert d.t_comm_si == pytest.approx(2 * LAYERS * nvls(n), rel=1e-9)
    assert d.latency_si == pytest.approx(tpot(n, nvls), rel=1e-3)


@pytest.mark.parametrize("n", [4, 8])
def test_the_bound_overlaps_the_allreduces_by_hand(n):
    d = _decode(n, allreduce=None)
    assert d.t_comm_si == pytest.approx(2 * LAYERS * nvls(n, alpha=BOUND), rel=1e-9)
    assert d.latency_si == pytest.approx(bound(n), rel=1e-3)
    assert d.latency_si < _decode(n, "sglang").latency_si < _decode(n, "nccl").latency_si


@pytest.mark.parametrize("n", [4, 8])
def test_the_custom_allreduce_estimate_by_hand(n):
    d = _decode(n, allreduce="sglang")
    assert d.t_comm_si == pytest.approx(2 * LAYERS * nvls(n, alpha=SGLANG[n]), rel=1e-9)
    assert d.latency_si == pytest.approx(tpot(n, nvls, alpha=SGLANG[n]), rel=1e-3)


@pytest.mark.parametrize("n", [4, 8])
def test_decode_with_a_ring_by_hand(n):
    """The same step with a ring AllReduce (what NCCL runs without NVLS): serve's memory term
    plus course_lib.topology's ring, against the ring by hand."""
    d = _decode(n)
    course_lib = d.latency_si - d.t_comm_si + 2 * LAYERS * allreduce_time(Hardware.H100, MESSAGE, n, in_switch=False,
                                                                          allreduce="nccl")
    assert course_lib == pytest.approx(tpot(n, ring), rel=1e-3)
    # both pay the same latency, so at decode's 16 KB the ring is only its extra bytes slower
    assert nvls(n) < ring(n) < 1.001 * nvls(n)


def test_the_by_hand_figures():
    """The by-hand figures themselves (ms), as the verify cells print them."""
    assert tpot(8, nvls) * 1e3 == pytest.approx(9.62, abs=0.01)
    assert tpot(4, nvls) * 1e3 == pytest.approx(14.83, abs=0.01)
    assert 2 * LAYERS * nvls(8) * 1e3 == pytest.approx(4.406, abs=0.001)
    assert tpot(8, ring) * 1e3 == pytest.approx(9.62, abs=0.01)
    assert 2 * LAYERS * ring(8) * 1e3 == pytest.approx(4.410, abs=0.001)
    # SGLang: 160 x (5.9 + 0.036) us = 0.950 ms at TP8, 160 x (4.8 + 0.036) = 0.774 ms at TP4
    assert tpot(8, nvls, alpha=SGLANG[8]) * 1e3 == pytest.approx(6.16, abs=0.01)
    assert tpot(4, nvls, alpha=SGLANG[4]) * 1e3 == pytest.approx(11.20, abs=0.01)
    assert bound(8) * 1e3 == pytest.approx(5.21, abs=0.01)            # the memory term: 0.58 ms of AllReduces hide


def test_q2_to_q5_truths_by_hand():
    """scale_q2: TPOT(4) / TPOT(8), the SGLang estimate; scale_q3: the bound's latency against the
    bytes; scale_q4: one prefill AllReduce of the 2048-token prompt over 8 GPUs, NVLS / ring, the
    NCCL estimate; scale_q5: TPOT(tensor, 8) / TPOT(pipeline, 8), the NCCL estimate."""
    q2 = get("scale_q2").solution().truths["q2_speedup"].value
    assert q2 == pytest.approx(tpot(4, nvls, alpha=SGLANG[4]) / tpot(8, nvls, alpha=SGLANG[8]), rel=1e-3)
    assert q2 == pytest.approx(1.817, abs=0.002)                    # was 1.542 with NCCL's 27.5 us
    prompt_bytes = PROMPT * MESSAGE
    assert get("scale_q4").solution().truths["q4_ratio"].value == pytest.approx(
        nvls(8, prompt_bytes) / ring(8, prompt_bytes), rel=1e-9)
    q3 = get("scale_q3").solution().truths
    assert BOUND > MESSAGE / NVLINK and q3["q3_decode"].value == "latency"
    assert prompt_bytes / NVLINK > BOUND and q3["q3_prefill"].value == "bandwidth"
    # the 256-token variant flips to bandwidth under the bound: 256 x 16384 / 450e9 = 9.3 us > 3.6 us
    assert get("scale_q3").solution(chip="H100", prompt=256).truths["q3_prefill"].value == "bandwidth"
    # pipeline: one GPU's step (all weights, KV of all 8 heads) + 7 sends of 16 KB, each NCCL's latency
    one_gpu = (weights_per_gpu(1) + kv_per_gpu(1)) / HBM
    pipe = one_gpu + 7 * (NCCL + MESSAGE / NVLINK)
    assert get("scale_q5").solution().truths["q5_ratio"].value == pytest.approx(tpot(8, nvls) / pipe, rel=2e-3)


def test_q6_kv_cache_per_gpu_by_hand():
    """scale_q6: the KV cache one GPU holds for 32 sequences at their last token (2048 + 128),
    Llama-3-70B over 16 GPUs: 8 KV heads, so each GPU holds ceil(8 / 16) = 1 whole head, 1/8 of
    the cache (replicated twice), not 1/16."""
    per_token = LAYERS * KV_HEADS * HEAD_DIM * 2 * 2            # 327,680 B
    everything = 32 * (PROMPT + OUTPUT) * per_token
    truth = get("scale_q6").solution().truths["q6_kv_gb"]
    assert truth.value == pytest.approx(everything * 1 / KV_HEADS / 1e9, rel=1e-9)
    assert truth.value == pytest.approx(2.852, abs=0.001)
    assert truth.mistakes["kv-split-past-heads"] == pytest.approx(everything / 16 / 1e9)
    # over 8 GPUs (as many as KV heads) the cache splits evenly: the same 1/8, and no replication
    assert get("scale_q6").solution(gpus=8).truths["q6_kv_gb"].value == pytest.approx(truth.value)
