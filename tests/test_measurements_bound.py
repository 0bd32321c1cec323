"""The roofline is a bound: never slower than a published measurement (measurements.md)."""
import pytest

from course_lib import Hardware, Models, serve, solve
from course_lib.measurements import MEASUREMENTS
from course_lib.models import matmul


def _id(m):
    return f"{m.kind}-{m.model}-{m.precision}-bs{m.batch_size}-tp{m.tp}-{m.quantity}-{m.shape}"


MODELLED = [m for m in MEASUREMENTS if m.kind in ("llm_decode", "cnn_inference", "gemm")]


def test_every_kind_is_checked():
    assert {m.kind for m in MEASUREMENTS} == {"llm_decode", "cnn_inference", "gemm", "stream"}
    assert len(MODELLED) >= 29


@pytest.mark.parametrize("m", MODELLED, ids=_id)
def test_model_is_never_slower_than_a_measurement(m):
    hw = Hardware.get(m.hardware)
    if m.kind == "llm_decode":
        # weight-only quantization: activations and KV stay in bf16, math at the bf16 peak
        wp = None if m.precision == "bf16" else m.precision
        s = serve(Models.get(m.model), hw, prompt_tokens=5, output_tokens=200, batch_size=1,
                  precision="bf16", weight_precision=wp, tp=m.tp)
        assert s.tokens_per_second.m >= m.value
    elif m.kind == "cnn_inference":
        p = solve(Models.get(m.model), hw, batch_size=m.batch_size, precision=m.precision)
        if m.quantity == "latency":
            assert p.latency_si <= m.value
            assert p.layerwise_latency_si <= m.value
        else:
            assert p.throughput.m >= m.value
    else:
        M, N, K = m.shape
        p = solve(matmul(M, N, K), hw, precision=m.precision)
        assert p.attainable_flops.m_as("FLOP/s") >= m.value


def test_sustained_bandwidth_below_datasheet():
    for m in MEASUREMENTS:
        if m.kind == "stream":
            assert m.value <= Hardware.get(m.hardware).memory_bandwidth_si
