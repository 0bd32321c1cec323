"""Zoo lookups, hand-computed figures, and workloads built from first principles."""
import pytest

from course_lib import FLOPS_PER_MAC, Hardware, Models, Q_, solve
from course_lib.models import dot, matmul


def test_a100_ridge_by_hand():
    assert Hardware.A100.ridge_point("fp16").m == pytest.approx(312e12 / 2.039e12)
    assert round(Hardware.A100.ridge_point("fp16").m) == 153


def test_lookup_is_case_insensitive_and_attribute_style():
    assert Hardware.get("a100") is Hardware.A100
    assert Hardware.get("h100_pcie").name != Hardware.H100.name
    assert Models.get("resnet50") is Models.ResNet50


def test_every_zoo_entry_has_sources_for_its_figures():
    for hw in Hardware.all():
        assert hw.sources.get("peak_flops") and hw.sources.get("memory_bandwidth"), hw.name


def test_hand_built_hardware_works_like_a_zoo_entry():
    mine = Hardware(name="my GPU", peak_flops={"fp16": Q_(100, "TFLOP/s")},
                    memory_bandwidth=Q_(1, "TB/s"), memory_capacity=Q_(24, "GB"))
    assert mine.ridge_point("fp16").m == pytest.approx(100)
    p = solve(Models.ResNet50, mine, batch_size=1)
    assert p.t_memory_si == pytest.approx(p.bytes_si / 1e12)


@pytest.mark.parametrize("name", ["Llama2_7B", "Llama2_13B", "Llama2_70B", "Llama3_8B",
                                  "Llama3_70B", "Mistral_7B", "Mixtral_8x7B", "GPT3_175B"])
def test_transformer_parameters_within_one_percent_of_published(name):
    m = Models.get(name)
    assert m.parameters == pytest.approx(m.published_parameters, rel=0.01)


def test_llama3_8b_parameters_from_the_config_by_hand():
    d, L, V, f, kv_dim = 4096, 32, 128256, 14336, 8 * 128
    per_layer = d * d + 2 * d * kv_dim + d * d + 3 * d * f + 2 * d
    assert Models.Llama3_8B.parameters == L * per_layer + 2 * V * d + d


def test_kv_bytes_per_token_with_and_without_gqa():
    assert Models.Llama3_8B.kv_bytes_per_token("fp16") == 2 * 32 * 8 * 128 * 2 == 131_072
    assert Models.Llama2_7B.kv_bytes_per_token("fp16") == 2 * 32 * 32 * 128 * 2 == 524_288
    assert Models.Llama3_8B.kv_bytes_per_token("int8") == 65_536


def test_mixtral_active_parameters_are_two_experts():
    m = Models.Mixtral_8x7B
    assert 12.5e9 < m.active_parameters < 13.2e9


def test_resnet50_flops_are_twice_the_macs():
    m = Models.ResNet50
    assert m.parameters == pytest.approx(25.6e6, rel=0.01)
    assert m.flops_per_sample == pytest.approx(2 * 4.09e9, rel=0.01)
    assert FLOPS_PER_MAC == 2


def test_dot_product_intensity_tends_to_half_a_flop_per_byte_at_fp16():
    n = 10**6
    k = dot(n)
    assert k.flops_per_sample == 2 * n
    assert k.bytes("fp16") == 2 * (2 * n + 1)
    assert k.arithmetic_intensity("fp16") == pytest.approx(0.5, rel=1e-5)


def test_matmul_intensity_grows_with_m():
    ai = [matmul(M, 4096, 4096).arithmetic_intensity("fp16") for M in (1, 16, 256, 4096)]
    assert ai == sorted(ai) and ai[0] < 1.01 and ai[-1] > 1000
    M, N, K = 64, 128, 256
    assert matmul(M, N, K).arithmetic_intensity("fp16") == pytest.approx(
        2 * M * N * K / (2 * (M * K + K * N + M * N)))
