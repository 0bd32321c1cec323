"""Checks on the hardware zoo (hardware_specs.SPECS) and the published measurements.

The datasheet facts below are copied from the course's reference sheet of measurements
(measurements.md). The measurement checks enforce the course rule: a roofline is a bound,
so no measurement may beat a datasheet figure; if one does, the spec is wrong.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pytest

from course_lib.hardware_specs import SPECS
from course_lib.measurements import MEASUREMENTS, Measurement, find

ALLOWED = {"fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8", "int4"}
REQUIRED_KEYS = {"V100", "A100", "A100_40GB", "H100", "H100_PCIe", "H200", "B200", "MI300X",
                 "L4", "T4", "TPUv5e", "JetsonAGXOrin", "LaptopCPU"}
FIELDS = ("name", "vendor", "year", "peak_flops", "memory_bandwidth", "memory_capacity",
          "interconnect_bandwidth", "interconnect", "link_latency", "tdp", "sources")
SOURCED = ("peak_flops", "memory_bandwidth", "memory_capacity", "interconnect_bandwidth",
           "link_latency", "tdp")


def close(a, b, rel=1e-9):
    return math.isclose(a, b, rel_tol=rel)


# ---------------------------------------------------------------- structure of SPECS

def test_zoo_has_every_required_key():
    assert REQUIRED_KEYS <= set(SPECS)


@pytest.mark.parametrize("key", sorted(SPECS))
def test_every_field_present_and_typed(key):
    spec = SPECS[key]
    missing = [f for f in FIELDS if f not in spec]
    assert not missing, f"{key} lacks {missing}"
    assert isinstance(spec["name"], str) and spec["name"]
    assert isinstance(spec["vendor"], str) and spec["vendor"]
    assert isinstance(spec["year"], int) and 2015 <= spec["year"] <= 2030
    assert spec["memory_bandwidth"] > 0
    assert spec["memory_capacity"] > 0
    # a link's bandwidth, latency and name come together or not at all
    has_link = spec["interconnect_bandwidth"] is not None
    assert (spec["link_latency"] is not None) == has_link, key
    assert (spec["interconnect"] is not None) == has_link, key
    if has_link:
        assert spec["interconnect_bandwidth"] > 0
        assert 1e-8 < spec["link_latency"] < 1e-4, "per-hop latency should be ~µs"
    if spec["tdp"] is not None:
        assert 1 < spec["tdp"] < 2000


@pytest.mark.parametrize("key", sorted(SPECS))
def test_every_figure_has_a_nonempty_source(key):
    sources = SPECS[key]["sources"]
    for figure in SOURCED:
        src = sources.get(figure)
        assert isinstance(src, str) and len(src.strip()) > 10, f"{key}: no source for {figure}"
    # a figure that is None must say why in its source
    for figure in ("interconnect_bandwidth", "link_latency", "tdp"):
        if SPECS[key][figure] is None:
            assert re.search(r"\bNone\b|no |not ", sources[figure]), (key, figure)


@pytest.mark.parametrize("key", sorted(SPECS))
def test_peak_precisions_allowed_and_positive(key):
    peaks = SPECS[key]["peak_flops"]
    assert peaks, f"{key} has no peaks"
    assert set(peaks) <= ALLOWED, f"{key}: unexpected precisions {set(peaks) - ALLOWED}"
    assert all(v > 0 for v in peaks.values())


def test_aliases_are_unique_and_do_not_shadow_keys():
    seen = {}
    for key, spec in SPECS.items():
        for name in (key, *spec.get("aliases", ())):
            low = name.lower()
            assert low not in seen, f"{name!r} names both {seen[low]} and {key}"
            seen[low] = key


def test_precision_sets_match_the_hardware():
    p = {k: set(s["peak_flops"]) for k, s in SPECS.items()}
    assert p["V100"] == {"fp32", "fp16"}
    assert "fp8" not in p["A100"] and "int4" in p["A100"]
    assert "fp8" in p["H100"] and "int4" not in p["H100"]
    assert "int4" in p["T4"]
    assert "fp4" in p["B200"]
    assert p["TPUv5e"] == {"bf16", "int8"}
    assert p["LaptopCPU"] == {"fp32"}
    only_blackwell_has_fp4 = {k for k, s in p.items() if "fp4" in s}
    assert only_blackwell_has_fp4 == {"B200"}


# ---------------------------------------------------------------- dense peaks, datasheet facts

def test_h100_fp16_is_dense_not_sparse():
    peaks = SPECS["H100"]["peak_flops"]
    assert close(peaks["fp16"], 989.4e12)
    assert close(peaks["bf16"], 989.4e12)
    assert not close(peaks["fp16"], 1979e12, rel=0.01)
    assert close(peaks["fp8"], 1978.9e12)


def test_dense_peaks_from_the_reference_sheet():
    assert close(SPECS["A100"]["peak_flops"]["fp16"], 312e12)
    assert not close(SPECS["A100"]["peak_flops"]["fp16"], 624e12, rel=0.01)
    assert close(SPECS["A100_40GB"]["peak_flops"]["fp16"], 312e12)
    assert close(SPECS["H100_PCIe"]["peak_flops"]["fp16"], 756e12)
    assert close(SPECS["H200"]["peak_flops"]["fp16"], 989.4e12)
    assert close(SPECS["B200"]["peak_flops"]["fp16"], 2250e12)


def test_no_fp16_peak_equals_a_sparse_headline():
    """The with-sparsity fp16 figures vendors print in the headline; none may be used."""
    sparse_fp16 = {"H100": 1979e12, "H200": 1979e12, "H100_PCIe": 1513e12, "A100": 624e12,
                   "A100_40GB": 624e12, "B200": 4500e12, "MI300X": 2614.9e12, "L4": 242e12}
    for key, bad in sparse_fp16.items():
        for p in ("fp16", "bf16"):
            assert not close(SPECS[key]["peak_flops"][p], bad, rel=0.01), (key, p)


@pytest.mark.parametrize("key", sorted(k for k, s in SPECS.items()
                                       if "fp16" in s["peak_flops"] or "bf16" in s["peak_flops"]))
def test_tensor_precision_ratios(key):
    """Matrix units double throughput each time the operand halves. A peak that breaks
    the ratio was probably halved for sparsity in one column but not another."""
    peaks = SPECS[key]["peak_flops"]
    half = peaks.get("fp16", peaks.get("bf16"))
    if "fp16" in peaks and "bf16" in peaks:
        assert close(peaks["fp16"], peaks["bf16"])
    if "tf32" in peaks:
        assert close(peaks["tf32"], half / 2, rel=0.03)
    for p8 in ("fp8", "int8"):
        if p8 in peaks:
            assert close(peaks[p8], 2 * half, rel=0.01), (key, p8)
    if "int4" in peaks:
        assert close(peaks["int4"], 2 * peaks["int8"], rel=0.01)
    if "fp4" in peaks:
        assert close(peaks["fp4"], 2 * peaks["fp8"], rel=0.01)
    # the matrix peak is far above the plain FP32 peak on every accelerator
    if "fp32" in peaks:
        assert half > 3 * peaks["fp32"]


def test_bandwidths_from_the_reference_sheet():
    assert close(SPECS["A100"]["memory_bandwidth"], 2.039e12)
    assert close(SPECS["A100_40GB"]["memory_bandwidth"], 1.555e12)
    assert close(SPECS["H100"]["memory_bandwidth"], 3.35e12)
    assert close(SPECS["H100_PCIe"]["memory_bandwidth"], 2.0e12)
    assert close(SPECS["H200"]["memory_bandwidth"], 4.8e12)
    assert close(SPECS["B200"]["memory_bandwidth"], 8e12)


# nvidia-smi memory.total (MiB) as public captures show it (each source names its capture;
# H100 and H200 also read on this project's device machine)
NVIDIA_SMI_MIB = {"A100": 81_920, "A100_40GB": 40_960, "H100": 81_559, "H100_PCIe": 81_559,
                  "H200": 143_771, "B200": 183_359, "V100": 32_510, "L4": 23_034, "T4": 15_360}
ECC_GDDR6 = 15 / 16          # GDDR6 with ECC on keeps 1 bit in 16 for the check bits


@pytest.mark.parametrize("key", sorted(SPECS))
def test_capacity_is_binary(key):
    """Memory dies are binary-sized: the datasheet's "80 GB" is 80 GiB of dies, not 80e9 bytes.
    What the driver reports is that, less a little it keeps (HBM), or less 1/16 for ECC (GDDR6,
    ECC on by default in a data centre)."""
    spec = SPECS[key]
    cap, printed = spec["memory_capacity"], spec["memory_capacity_datasheet"]
    gb = printed / 1e9
    source = spec["sources"]["memory_capacity"]
    assert float(cap / 2**20).is_integer(), f"{key}: {cap} bytes is not a whole number of MiB"
    binary = gb * 2**30
    if "GDDR6" in source and "ECC" in source:
        # ECC-carved: 15/16 of the binary size, give or take what the driver keeps
        assert 0.99 * ECC_GDDR6 <= cap / binary <= ECC_GDDR6, f"{key}: {cap / 2**30:.2f} GiB for {gb:g} GB"
        assert "1/16" in source
    else:
        # the binary reading, give or take what a driver reserves...
        assert 0.99 <= cap / binary <= 1.0, f"{key}: {cap / 2**30:.2f} GiB for a {gb:g} GB part"
        # ...and so clearly not the decimal one (7.4% more)
        assert cap >= 1.05 * printed, f"{key}: capacity {cap:.4g} B reads '{gb:g} GB' as decimal"
    assert f"{gb:g} GB" in source.replace(",", ""), f"{key}: the source does not quote the {gb:g} GB figure"
    assert "GiB" in source or "MiB" in source, f"{key}: the source does not say the figure is binary"
    if key in NVIDIA_SMI_MIB:
        assert cap == NVIDIA_SMI_MIB[key] * 2**20
        assert f"{NVIDIA_SMI_MIB[key]:,} MiB" in source and "nvidia-smi" in source
        # where the reading comes from: a named public capture or this project's own device
        assert "capture" in source or "this project's" in source, f"{key}: no capture named"
    elif spec["vendor"] == "NVIDIA" and "Jetson" not in spec["name"]:
        pytest.fail(f"{key}: an NVIDIA data-centre GPU without nvidia-smi's memory.total")


def test_the_gddr6_capacity_is_not_the_binary_or_decimal_reading():
    """A T4 holds 15 GiB (16.1e9 bytes): the 16 GiB reading overstates it by 1/15."""
    t4 = SPECS["T4"]["memory_capacity"]
    assert t4 == 15 * 2**30 and 16 * 2**30 / t4 == pytest.approx(16 / 15)
    assert SPECS["L4"]["memory_capacity"] / 2**20 == 23_034


def test_h100_pcie_nvlink_bridge_joins_pairs():
    spec = SPECS["H100_PCIe"]
    assert spec["interconnect_max_gpus"] == 2
    assert close(spec["fallback_interconnect_bandwidth"], 128e9 / 2)   # PCIe Gen5 x16, per direction
    for figure in ("interconnect_max_gpus", "fallback_interconnect_bandwidth"):
        assert len(spec["sources"][figure]) > 10


def test_mi300x_fp32_is_the_fp32_vector_peak():
    # 81.7 TFLOP/s is the MI300X's FP64 vector figure; FP32 vector is 163.4 (AMD endnote MI300-11)
    assert close(SPECS["MI300X"]["peak_flops"]["fp32"], 163.4e12)
    assert "MI300-11" in SPECS["MI300X"]["sources"]["peak_flops"]


def test_nvlink_is_per_direction():
    assert close(SPECS["A100"]["interconnect_bandwidth"], 600e9 / 2)
    assert close(SPECS["H100"]["interconnect_bandwidth"], 900e9 / 2)
    assert close(SPECS["H200"]["interconnect_bandwidth"], 900e9 / 2)


def test_a100_ridge_point_is_153():
    ridge = SPECS["A100"]["peak_flops"]["fp16"] / SPECS["A100"]["memory_bandwidth"]
    assert abs(ridge - 153) / 153 < 0.005
    # and not the "1 MAC = 1 FLOP" muddle's ~156 with a halved peak, nor 2x that
    assert not 155 < ridge < 157


def test_laptop_cpu_figures_follow_from_their_derivation():
    cpu = SPECS["LaptopCPU"]
    assert close(cpu["peak_flops"]["fp32"], 8 * 3.0e9 * 2 * 8 * 2)
    assert close(cpu["memory_bandwidth"], 5600e6 * 8 * 2)
    assert "illustrative" in cpu["name"].lower()


# ---------------------------------------------------------------- measurements

# allreduce: the H200 sweep (24), the H100 PCIe pair (3), SGLang's and vLLM's tables (2 x 18);
# allreduce_peak: nccl-tests #212's ring and NVLS bus bandwidths
EXPECTED_COUNTS = {"llm_decode": 5 + 6, "cnn_inference": 12, "stream": 5, "gemm": 6, "allreduce": 24 + 3 + 36,
                   "allreduce_peak": 2}


def test_one_row_per_published_measurement():
    assert len(MEASUREMENTS) == sum(EXPECTED_COUNTS.values())
    assert Counter(m.kind for m in MEASUREMENTS) == EXPECTED_COUNTS
    assert len(set(MEASUREMENTS)) == len(MEASUREMENTS), "duplicate rows"


def test_every_measurement_is_well_formed():
    units = {"tokens_per_second", "latency", "throughput", "bandwidth", "flops", "bus_bandwidth"}
    for m in MEASUREMENTS:
        assert isinstance(m, Measurement)
        assert m.hardware in SPECS, m
        assert m.quantity in units, m
        assert m.value > 0 and m.batch_size >= 1 and m.tp >= 1
        assert m.setting and m.source
        if m.kind == "gemm":
            assert len(m.shape) == 3 and m.shape[1:] == (12288, 12288) and m.precision == "fp16"
        if m.kind == "stream":
            assert m.model is None and m.quantity == "bandwidth"
        if m.kind == "allreduce":
            assert m.model is None and m.quantity in ("bus_bandwidth", "latency") and m.tp >= 2
            assert len(m.shape) == 1 and m.implementation in ("nccl", "sglang", "vllm")
        if m.kind == "allreduce_peak":
            assert m.quantity == "bus_bandwidth" and m.algorithm in ("ring", "nvls") and not m.shape
        if m.kind in ("llm_decode", "cnn_inference"):
            assert m.model is not None


def test_measurements_are_frozen():
    with pytest.raises(Exception):
        MEASUREMENTS[0].value = 1.0


def test_find_filters_on_equality():
    rows = find(kind="llm_decode", model="Llama2_70B", tp=8)
    assert len(rows) == 1 and close(rows[0].value, 62.50)
    assert len(find(kind="cnn_inference", quantity="latency")) == 6
    assert find(kind="gemm", shape=(64, 12288, 12288))[0].value == pytest.approx(101.7e12)
    assert find(kind="nonexistent") == []
    with pytest.raises(TypeError):
        find(colour="red")


@pytest.mark.parametrize("m", find(kind="stream"), ids=lambda m: f"{m.hardware}-{m.setting[:30]}")
def test_sustained_bandwidth_never_beats_the_datasheet(m):
    datasheet = SPECS[m.hardware]["memory_bandwidth"]
    assert m.value <= datasheet, f"{m.hardware}: measured {m.value:.3e} > spec {datasheet:.3e}"
    # the datasheet figure the source table printed must be the one in SPECS
    printed = float(re.search(r"datasheet (\d+) GB/s", m.setting).group(1)) * 1e9
    assert close(printed, datasheet), (m.hardware, printed, datasheet)


def test_measured_gemm_never_beats_the_dense_peak():
    peak = SPECS["A100"]["peak_flops"]["fp16"]
    rows = find(kind="gemm")
    for m in rows:
        assert m.value <= peak
    values = [m.value for m in sorted(rows, key=lambda m: m.shape[0])]
    assert values == sorted(values), "throughput should rise with M in this data set"


def test_resnet50_latency_and_throughput_agree():
    """Throughput ≈ batch / latency: catches a row copied into the wrong batch size."""
    for bs in (1, 8, 32, 64, 128, 256):
        (lat,) = find(model="ResNet50", batch_size=bs, quantity="latency")
        (thr,) = find(model="ResNet50", batch_size=bs, quantity="throughput")
        assert thr.value == pytest.approx(bs / lat.value, rel=0.01)


# Lower bounds on the weight parameters read per token (embedding lookup rows excluded);
# bytes per parameter at each weight precision.
_PARAMS_LOWER = {"Llama2_7B": 6.5e9, "Llama2_70B": 68e9}
_BYTES = {"bf16": 2.0, "fp16": 2.0, "int8": 1.0, "int4": 0.5}


@pytest.mark.parametrize("m", find(kind="llm_decode"), ids=lambda m: f"{m.model}-{m.precision}-tp{m.tp}")
def test_decode_never_reads_weights_faster_than_the_datasheet(m):
    """Batch-1 decode reads every weight once per token; the implied per-GPU bandwidth
    from a weights-only lower bound on bytes must not exceed the datasheet bandwidth."""
    bytes_per_gpu = _PARAMS_LOWER[m.model] * _BYTES[m.precision] / m.tp
    assert m.value * bytes_per_gpu <= SPECS[m.hardware]["memory_bandwidth"]


# ---------------------------------------------------------------- against the markdown itself

def _reference_sheet():
    here = Path(__file__).resolve().parents[1]
    for p in (here / "course_lib" / "data" / "measurements.md",
              Path("/work/shared/reference/measurements.md")):
        if p.is_file():
            return p.read_text()
    pytest.skip("measurements.md not found")


def _tables(text):
    """{section heading: [rows of cells]} for each markdown table, separator dropped."""
    out, heading = {}, None
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        elif line.startswith("|") and heading:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue
            out.setdefault(heading, []).append(cells)
    return out


def _num(cell):
    return float(re.search(r"[\d.]+", cell.replace(",", "")).group())


def test_every_number_in_the_reference_sheet_is_a_row():
    tables = _tables(_reference_sheet())
    expected = []  # (kind, quantity, value in SI)
    for heading, rows in tables.items():
        body = rows[1:]  # rows[0] is the header
        if heading.startswith("LLM decode, single GPU"):
            expected += [("llm_decode", "tokens_per_second", _num(r[2])) for r in body]
        elif heading.startswith("LLM decode, tensor parallel"):
            expected += [("llm_decode", "tokens_per_second", _num(c)) for r in body for c in r[1:]]
        elif heading.startswith("ResNet-50"):
            for r in body:
                expected.append(("cnn_inference", "latency", _num(r[1]) * 1e-3))
                expected.append(("cnn_inference", "throughput", _num(r[2])))
        elif heading.startswith("Sustained memory bandwidth"):
            expected += [("stream", "bandwidth", _num(r[2]) * 1e9) for r in body]
        elif heading.startswith("FP16 GEMM"):
            expected += [("gemm", "flops", _num(c) * 1e12) for c in body[0][1:]]
        elif heading.startswith("AllReduce latency, small messages"):
            expected += [("allreduce", "latency", _num(c) * 1e-6) for r in body for c in r[1:]]
    assert len(expected) in (34, 34 + 18), f"parsed {len(expected)} numbers from the sheet"
    # the AllReduce rows are not on the sheet (found later, for issue 17): each carries its own
    # source, which test_every_measurement_is_well_formed requires
    sheet_has_sglang = len(expected) > 34
    got = sorted((m.kind, m.quantity, round(m.value, 9)) for m in MEASUREMENTS
                 if not m.kind.startswith("allreduce") or (sheet_has_sglang and m.implementation == "sglang"))
    want = sorted((k, q, round(v, 9)) for k, q, v in expected)
    assert got == want
