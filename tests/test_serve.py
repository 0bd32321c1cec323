"""serve: two phases, KV cache, capacity, quantization, tensor parallelism."""
import math

import pytest

from course_lib import CourseError, Hardware, Models, Q_, max_batch_size, serve
from course_lib.serving import _allreduce_time


def test_one_request_two_regimes():
    s = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=2048, output_tokens=128)
    assert s.prefill.bottleneck == "compute-bound"
    assert s.decode.bottleneck == "memory-bound"
    assert s.e2e_latency_si == pytest.approx(s.prefill.latency_si + 127 * s.decode.latency_si)
    assert s.tokens_per_second.m == pytest.approx(1 / s.decode.latency_si)


def test_prefill_counts_causal_attention():
    # attention FLOPs = 4·h·hd·L·Σ_{i≤P} i = 2·h·hd·L·P(P+1): the second difference in P is
    # 4·h·hd·L, whatever the linear terms are
    m, c = Models.Llama3_8B, Models.Llama3_8B.config
    f = [serve(m, Hardware.H100, prompt_tokens=P, output_tokens=1).prefill.flops_si
         for P in (1000, 1001, 1002)]
    assert f[2] - 2 * f[1] + f[0] == pytest.approx(4 * c.n_heads * c.hd * c.n_layers, rel=1e-6)
    # and the bulk is 2 FLOPs per weight per token, for every weight but the embedding table
    # (a lookup) and the LM head (run for the last prompt token only)
    body = m.parameters - 2 * c.vocab * c.d_model
    assert f[0] == pytest.approx(2 * body * 1000 + 2 * c.n_heads * c.hd * c.n_layers * 1000 * 1001,
                                 rel=0.005)


def test_decode_reads_the_growing_kv_cache():
    short = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=128, output_tokens=2, batch_size=8)
    long = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=8192, output_tokens=2, batch_size=8)
    extra = long.decode.bytes_si - short.decode.bytes_si
    assert extra == pytest.approx(8 * (8192 - 128) * 131_072, rel=1e-9)


def test_large_batch_decode_becomes_compute_bound_unless_context_is_long():
    s = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=16, output_tokens=2, batch_size=1024)
    assert s.decode.bottleneck == "compute-bound"
    s = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=8192, output_tokens=2, batch_size=1024)
    assert s.decode.bottleneck == "memory-bound"


def test_capacity_wall_by_hand():
    m = Models.Llama3_8B
    capacity = 81_559 * 2**20          # nvidia-smi's memory.total on an H100 80GB: binary bytes
    expected = math.floor((capacity - m.parameters * 2) / (4096 * 131_072))
    assert max_batch_size(m, Hardware.H100, context_tokens=4096) == expected
    assert max_batch_size(m, Hardware.H100, context_tokens=4096, kv_precision="int8") == \
        math.floor((capacity - m.parameters * 2) / (4096 * 65_536))
    s = serve(m, Hardware.H100, prompt_tokens=4000, output_tokens=96, batch_size=expected + 1)
    assert s.fits is False and "DOES NOT FIT" in repr(s)


def test_a_model_too_big_for_one_gpu():
    s = serve(Models.Llama3_70B, Hardware.H100, prompt_tokens=128, output_tokens=16)
    assert s.fits is False and s.max_batch_size == 0
    assert serve(Models.Llama3_70B, Hardware.H100, prompt_tokens=128, output_tokens=16, tp=2).fits


def test_weight_only_quantization_speeds_decode_not_compute_bound_prefill():
    base = serve(Models.Llama3_8B, Hardware.A100, prompt_tokens=4096, output_tokens=64)
    w8 = serve(Models.Llama3_8B, Hardware.A100, prompt_tokens=4096, output_tokens=64,
               weight_precision="int8")
    w8a8 = serve(Models.Llama3_8B, Hardware.A100, prompt_tokens=4096, output_tokens=64,
                 precision="int8")
    assert 1.7 < base.decode.latency_si / w8.decode.latency_si < 2.0
    assert w8.prefill.t_compute_si == pytest.approx(base.prefill.t_compute_si)  # fp16 math
    # W8A8 halves the weight matmuls' time; attention's matmuls stay fp16 (TensorRT-LLM's default)
    table = Models.Llama3_8B.prefill_table(4096)
    flops = table.flops * table.count
    attention_share = flops[table.attention].sum() / flops.sum()
    assert 0.03 < attention_share < 0.1
    assert base.prefill.latency_si / w8a8.prefill.latency_si == pytest.approx(
        1 / ((1 - attention_share) / 2 + attention_share), rel=1e-6)
    assert w8a8.precisions.kv == w8a8.precisions.attention == "fp16"
    assert w8.weight_bytes.m_as("GB") == pytest.approx(Models.Llama3_8B.parameters / 1e9)


def test_fp8_where_the_chip_has_it():
    s = serve(Models.Llama3_8B, Hardware.H100, precision="fp8")
    assert s.precisions.compute == "fp8"


def test_tensor_parallel_reports_communication_separately():
    one = serve(Models.Llama2_70B, Hardware.A100, prompt_tokens=128, output_tokens=8, tp=4)
    c = Models.Llama2_70B.config
    msg = 1 * c.d_model * 2
    per_ar = 2 * 3 / 4 * msg / 300e9 + Hardware.A100.link_latency_si      # one assumed latency per message
    assert one.decode.t_comm_si == pytest.approx(2 * c.n_layers * per_ar)
    # the bound overlaps the AllReduces with the step's reads: the largest of the three roofs
    assert one.decode.latency_si == pytest.approx(
        max(one.decode.t_compute_si, one.decode.t_memory_si, one.decode.t_comm_si))
    assert "overlapped" in one.interconnect


def test_an_estimate_adds_the_allreduces_with_a_named_implementations_latency():
    s = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=128, output_tokens=8, tp=8, allreduce="sglang")
    c = Models.Llama3_8B.config
    per_ar = c.d_model * 2 / 450e9 + 5.9e-6                          # SGLang PR 2904, 8 H100s, 512 B
    assert s.decode.t_comm_si == pytest.approx(2 * c.n_layers * per_ar)
    assert s.decode.latency_si == pytest.approx(
        max(s.decode.t_compute_si, s.decode.t_memory_si) + s.decode.t_comm_si)
    assert "estimate (SGLang" in s.interconnect and "not overlapped" in s.interconnect
    with pytest.raises(CourseError, match="no measured"):
        serve(Models.Llama3_8B, Hardware.A100, tp=8, allreduce="nccl")


def test_communication_bound_regime():
    slow = Hardware(name="slow-link GPU", peak_flops={"fp16": Q_(300, "TFLOP/s")},
                    memory_bandwidth=Q_(3, "TB/s"), memory_capacity=Q_(80, "GB"),
                    interconnect_bandwidth=Q_(1, "GB/s"), link_latency=Q_(50, "us"))
    s = serve(Models.Llama3_8B, slow, prompt_tokens=64, output_tokens=4, tp=8)
    assert s.decode.bottleneck == "communication-bound"


def test_allreduce_formula():
    assert _allreduce_time(1e6, 1, 1e9, 1e-6) == 0
    assert _allreduce_time(1e6, 4, 1e9, 1e-6) == pytest.approx(2 * 3 / 4 * 1e6 / 1e9 + 1e-6)


def test_serve_input_errors():
    with pytest.raises(CourseError, match="positive integer"):
        serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=0)
    with pytest.raises(CourseError, match="single positive integer"):
        serve(Models.Llama3_8B, Hardware.H100, batch_size=[1, 2])
