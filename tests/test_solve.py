"""solve: hand-computed values, exact crossover, knobs, vectorized sweeps, properties."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib import Hardware, Models, Q_, crossover_batch, solve, speedup
from course_lib.roofline import layer_traffic


def test_llama3_8b_decode_on_h100_is_weights_over_bandwidth():
    m = Models.Llama3_8B
    p = solve(m, Hardware.H100, batch_size=1, precision="fp16")
    # every weight is streamed once per token except the embedding table, of which one row is
    # gathered: (8.03e9 − 128256·4096 + 4096) · 2 B
    streamed = (m.parameters - 128256 * 4096 + 4096) * 2
    assert p.bottleneck == "memory-bound"
    assert p.latency_si == pytest.approx(streamed / 3.35e12, rel=0.002)
    assert p.latency.m_as("ms") == pytest.approx(4.48, abs=0.01)
    # the usual back-of-envelope (all 16.06 GB of weights) is within 7% of it, and above it
    assert 16.06e9 / 3.35e12 == pytest.approx(p.latency_si, rel=0.07)
    assert p.latency_si < 16.06e9 / 3.35e12


def test_resnet50_batch1_on_a100_counts_weights_and_activations():
    m = Models.ResNet50
    p = solve(m, Hardware.A100, batch_size=1, precision="fp16")
    acts = sum(l.activations for l in m.layers)
    weights = sum(l.params for l in m.layers)
    assert p.flops_si == pytest.approx(m.flops_per_sample)
    assert p.bytes_si == pytest.approx(2 * (acts + weights))
    assert p.t_compute_si == pytest.approx(m.flops_per_sample / 312e12)
    assert p.t_memory_si == pytest.approx(p.bytes_si / 2.039e12)
    assert p.bottleneck == "memory-bound"
    assert p.arithmetic_intensity.m < p.ridge_point.m


def test_bytes_breakdown_adds_up():
    for model in ("ResNet50", "Llama3_8B", "Mixtral_8x7B"):
        p = solve(model, "H100", batch_size=8)
        parts = p.bytes_breakdown
        assert sum(v.m_as("byte") for v in parts.values()) == pytest.approx(p.bytes_si)
    m = Models.ResNet50
    parts = solve(m, "A100", batch_size=4).bytes_breakdown
    assert parts["activations"].m_as("byte") == pytest.approx(4 * 2 * sum(l.activations for l in m.layers))
    assert parts["weights"].m_as("byte") == pytest.approx(2 * m.parameters)


def test_decode_speedup_a100_to_h100_is_the_bandwidth_ratio_not_the_flop_ratio():
    s = speedup(Models.Llama3_8B, Hardware.A100, Hardware.H100, batch_size=1)
    assert s == pytest.approx(3.35 / 2.039, rel=0.001)  # 1.64
    assert abs(s - 989.4 / 312) > 1.0                       # not 3.17


@pytest.mark.parametrize("model,hw", [("Llama3_8B", "H100"), ("ResNet50", "V100"),
                                      ("Mixtral_8x7B", "H100"), ("Llama2_70B", "A100")])
def test_crossover_batch_is_exact(model, hw):
    b = crossover_batch(model, hw)
    assert math.isfinite(b) and b > 1
    from course_lib.roofline import traffic  # B* is not whole: check t_c = t_m from the traffic
    m, h = Models.get(model), Hardware.get(hw)
    f, by = traffic(m.layer_table(), b, 2, 2, 2)
    assert f / h.peak_flops_si("fp16") == pytest.approx(by / h.memory_bandwidth_si, rel=1e-9)
    assert solve(model, hw, math.floor(b)).bottleneck == "memory-bound"
    assert solve(model, hw, math.ceil(b)).bottleneck == "compute-bound"


def test_crossover_near_the_ridge_for_decode():
    b = crossover_batch(Models.Llama3_8B, Hardware.H100)
    ridge = Hardware.H100.ridge_point("fp16").m
    assert ridge < b < 1.35 * ridge


def test_resnet50_never_crosses_on_a100_at_fp16():
    # per-image activation traffic caps intensity at F/S ≈ 144 FLOP/byte < 153
    m = Models.ResNet50
    per_image = 2 * sum(l.activations for l in m.layers)
    assert m.flops_per_sample / per_image < Hardware.A100.ridge_point("fp16").m
    assert crossover_batch(m, Hardware.A100) == math.inf
    assert solve(m, Hardware.A100, batch_size=65536).bottleneck == "memory-bound"


def test_knobs_default_to_the_pure_roofline_and_show_when_on():
    p = solve(Models.ResNet50, Hardware.A100)
    assert p.knobs.ideal and "pure roofline" in repr(p)
    q = solve(Models.ResNet50, Hardware.A100, compute_efficiency=0.5,
              overhead_per_kernel=Q_(5, "us"))
    assert "compute_efficiency=0.5" in repr(q) and "overhead_per_kernel=5 µs" in repr(q)
    assert q.ridge_point.m == pytest.approx(p.ridge_point.m / 2)
    kernels = len(Models.ResNet50.layers)
    assert q.latency_si == pytest.approx(max(2 * p.t_compute_si, p.t_memory_si) + kernels * 5e-6)


def test_vectorized_sweep_matches_scalar_solves():
    batches = np.array([1, 3, 17, 256, 4096])
    sweep = solve(Models.ResNet50, Hardware.H100, batch_size=batches)
    for i, b in enumerate(batches):
        one = solve(Models.ResNet50, Hardware.H100, batch_size=int(b))
        assert sweep.latency_si[i] == pytest.approx(one.latency_si)
        assert sweep.layerwise_latency_si[i] == pytest.approx(one.layerwise_latency_si)
        assert sweep.bottleneck[i] == one.bottleneck


def test_layers_table_sums_to_the_layerwise_latency():
    p = solve(Models.ResNet50, Hardware.A100, batch_size=1)
    rows = p.layers
    assert sum(r["time_s"] * r["count"] for r in rows) == pytest.approx(p.layerwise_latency_si)
    assert sum(r["flops"] * r["count"] for r in rows) == pytest.approx(p.flops_si)
    assert "fc" in rows.memory_bound()


models = st.sampled_from(["ResNet18", "ResNet50", "Llama3_8B", "Mixtral_8x7B", "GPT3_175B"])
chips = st.sampled_from(["V100", "A100", "H100", "H200", "B200", "MI300X", "L4", "T4"])
batches = st.integers(min_value=1, max_value=4096)


@settings(max_examples=60, deadline=None)
@given(models, chips, batches, batches)
def test_latency_never_decreases_with_batch(model, chip, b1, b2):
    lo, hi = sorted((b1, b2))
    p = solve(model, chip, batch_size=np.array([lo, hi]))
    assert p.latency_si[0] <= p.latency_si[1] * (1 + 1e-12)
    assert p.layerwise_latency_si[0] <= p.layerwise_latency_si[1] * (1 + 1e-12)


@settings(max_examples=60, deadline=None)
@given(models, chips, batches)
def test_attainable_below_both_roofs_and_layerwise_above_whole(model, chip, b):
    p = solve(model, chip, batch_size=b)
    hw = Hardware.get(chip)
    ai = p.flops_si / p.bytes_si
    attainable = p.flops_si / p.latency_si
    assert attainable <= min(hw.peak_flops_si("fp16"), hw.memory_bandwidth_si * ai) * (1 + 1e-12)
    assert p.layerwise_latency_si >= p.latency_si * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(models, chips, chips, batches)
def test_speedup_between_bandwidth_ratio_and_flop_ratio(model, a, b, batch):
    ha, hb = Hardware.get(a), Hardware.get(b)
    s = speedup(model, ha, hb, batch_size=batch)
    bw = hb.memory_bandwidth_si / ha.memory_bandwidth_si
    fl = hb.peak_flops_si("fp16") / ha.peak_flops_si("fp16")
    assert min(bw, fl) * (1 - 1e-9) <= s <= max(bw, fl) * (1 + 1e-9)


def test_layer_traffic_shape_for_sweeps():
    t = Models.ResNet50.layer_table()
    f, b = layer_traffic(t, np.arange(1, 11, dtype=float), 2, 2, 2)
    assert f.shape == b.shape == (len(t), 10)
