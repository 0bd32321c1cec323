"""Published measurements that the course's roofline models are checked against.

None of these numbers were produced by the course: each row is copied from a public source,
with the exact setting it was measured in. The rule for using them:

    A roofline is a **bound**. The modelled time must never exceed a measured time
    (a modelled throughput must never fall below a measured one). A measurement that beats
    the bound means a spec or a formula is wrong: fix the spec or the formula, never the check.

Values are in SI units: tokens/s, seconds, samples/s, bytes/s, FLOP/s.

>>> len(find(kind="stream"))
5
>>> find(kind="llm_decode", model="Llama2_7B", precision="bf16", tp=1)[0].value
104.9
"""
from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Measurement:
    """One published measurement and the setting it was taken in."""

    kind: str            # "llm_decode" | "cnn_inference" | "stream" | "gemm" | "allreduce"
                         # | "allreduce_peak" (a peak bus bandwidth, no message size)
    hardware: str        # SPECS key, e.g. "A100"
    model: str | None    # "Llama2_7B", "Llama2_70B", "ResNet50"; None for stream/gemm
    precision: str       # weight precision ("bf16", "int8", "int4", "fp16"); "n/a" for stream
    batch_size: int      # 1 where not applicable (stream, gemm: see shape)
    tp: int              # GPUs in tensor parallel (1 if single GPU)
    quantity: str        # "tokens_per_second" | "latency" | "throughput" | "bandwidth" | "flops"
                         # | "bus_bandwidth" (nccl-tests' busbw: see allreduce_seconds)
    value: float         # SI units
    setting: str         # the exact setting in words
    source: str          # where the number comes from
    shape: tuple = ()    # gemm: (M, N, K); allreduce: (bytes per GPU,); empty otherwise
    implementation: str = ""   # allreduce: "nccl", "sglang", "vllm" (course_lib.topology.IMPLEMENTATIONS)
    algorithm: str = ""        # allreduce_peak: "nvls" (summed in the switch) or "ring"


_GPT_FAST = "pytorch-labs/gpt-fast README"
_RN50 = ("NVIDIA DeepLearningExamples, PaddlePaddle ResNet50 v1.5 README "
         "(inference performance, Paddle-TRT)")
_STREAM = "RRZE-HPC gpu-benches, gpu-stream (best over occupancy)"
_LLMCOMPASS = "PrincetonUniversity/LLMCompass artifact (GEMM measured on A100 80GB)"

_DECODE_1GPU = ("bs 1 (one sequence), 5-token prompt, torch.compile; A100 SXM 80GB "
                "power-limited to 330 W (README: ~1700 GB/s empirical peak bandwidth)")


def _decode_1gpu():
    rows = [
        # model, precision, tokens/s, extra words
        ("Llama2_7B", "bf16", 104.9, "bf16 weights; achieved bandwidth 1397 GB/s (their figure)"),
        ("Llama2_7B", "int8", 155.58, "int8 weight-only quantization; achieved bandwidth "
                                      "1069 GB/s (their figure)"),
        ("Llama2_7B", "int4", 196.80, "int4 weight-only quantization, group size 32; "
                                      "achieved bandwidth 862 GB/s (their figure)"),
        ("Llama2_70B", "int8", 19.13, "int8 weight-only quantization"),
        ("Llama2_70B", "int4", 25.25, "int4 weight-only quantization"),
    ]
    return [
        Measurement(kind="llm_decode", hardware="A100", model=m, precision=p, batch_size=1,
                    tp=1, quantity="tokens_per_second", value=v,
                    setting=f"{_DECODE_1GPU}; {extra}", source=_GPT_FAST)
        for m, p, v, extra in rows
    ]


def _decode_tp():
    table = {
        "Llama2_7B": {2: 168.84, 4: 254.02, 8: 328.43},
        "Llama2_70B": {2: 21.32, 4: 38.01, 8: 62.50},
    }
    return [
        Measurement(kind="llm_decode", hardware="A100", model=m, precision="bf16",
                    batch_size=1, tp=tp, quantity="tokens_per_second", value=v,
                    setting=(f"tensor parallel over {tp} of 8x A100 SXM 80GB (hybrid cube "
                             "mesh NVLink), bs 1, bf16 weights, torch.compile"),
                    source=_GPT_FAST)
        for m, by_tp in table.items() for tp, v in by_tp.items()
    ]


def _resnet50():
    # bs: (latency in ms, throughput in img/s)
    table = {1: (0.79, 1266), 8: (1.13, 7054), 32: (2.50, 12803), 64: (4.35, 14724),
             128: (7.92, 16157), 256: (15.01, 17055)}
    rows = []
    for bs, (lat_ms, thr) in table.items():
        setting = (f"ResNet-50 v1.5 inference, batch {bs}, FP16, Paddle-TRT, synthetic input "
                   "(no data loading), A100 SXM 80GB")
        rows.append(Measurement(kind="cnn_inference", hardware="A100", model="ResNet50",
                                precision="fp16", batch_size=bs, tp=1, quantity="latency",
                                value=lat_ms * 1e-3, setting=setting, source=_RN50))
        rows.append(Measurement(kind="cnn_inference", hardware="A100", model="ResNet50",
                                precision="fp16", batch_size=bs, tp=1, quantity="throughput",
                                value=float(thr), setting=setting, source=_RN50))
    return rows


def _stream():
    rows = [
        # hardware, kernel, GB/s, datasheet GB/s, words about the card
        ("A100", "triad", 1794, 2039, "A100 SXM 80GB"),
        ("A100", "init (write)", 1908, 2039, "A100 SXM 80GB"),
        ("A100_40GB", "read", 1500, 1555, "A100 40GB (form factor not stated in the table)"),
        ("H100_PCIe", "read", 1942, 2000, "H100 PCIe"),
        ("MI300X", "init (write)", 4849, 5300, "MI300X"),
    ]
    return [
        Measurement(kind="stream", hardware=hw, model=None, precision="n/a", batch_size=1,
                    tp=1, quantity="bandwidth", value=gbs * 1e9,
                    setting=(f"gpu-stream kernel '{kernel}' on {card}, best over occupancy "
                             f"(datasheet {ds} GB/s)"),
                    source=_STREAM)
        for hw, kernel, gbs, ds, card in rows
    ]


def _gemm():
    n = k = 12288
    table = {64: 101.7, 128: 193.0, 256: 242.7, 1024: 257.9, 4096: 277.5, 16384: 290.5}
    return [
        Measurement(kind="gemm", hardware="A100", model=None, precision="fp16", batch_size=1,
                    tp=1, quantity="flops", value=tf * 1e12,
                    setting=(f"FP16 GEMM {m} x {n} x {k} ({m} rows of activations against a "
                             f"{n}x{k} weight), A100 80GB"),
                    source=_LLMCOMPASS, shape=(m, n, k))
        for m, tf in table.items()
    ]


_AZURE_H200 = ("Azure/AI-benchmarking-guide, Azure_Results/ND_H200_v5_results.md, 'NCCL Bandwidth' "
               "table (commit 7f20e5f)")
#: its sweep, 1 KiB to 8 GiB in powers of 2 (labels '1K' ... '65K', '132K' ... '8G'), bus bandwidth GB/s
_AZURE_H200_BUSBW = (0.06, 0.12, 0.23, 0.47, 0.93, 1.84, 3.72, 7.39, 14.75, 29.38, 52.96, 88.78,
                     138.44, 181.94, 240.41, 300.91, 368.11, 412.45, 432.24, 442.72, 467.58, 472.57,
                     477.41, 479.98)
_NCCL_1161 = "NVIDIA/nccl issue #1161 (the same report as NVIDIA/nccl-tests issue #194), 2024-01-27"
#: its out-of-place rows: bytes, time in us, busbw GB/s
_NCCL_1161_ROWS = ((1073741824, 9306.7, 115.37), (2147483648, 18535, 115.86), (4294967296, 36943, 116.26))


def _allreduce():
    # nccl-tests report an AllReduce's time as bus bandwidth, busbw = S/t * 2(n-1)/n
    # (NVIDIA/nccl-tests doc/PERFORMANCE.md); allreduce_seconds turns it back into t
    rows = [
        Measurement(kind="allreduce", hardware="H200", model=None, precision="fp32", batch_size=1,
                    tp=8, quantity="bus_bandwidth", value=busbw * 1e9,
                    setting=("nccl-tests AllReduce over the 8 NVSwitch-connected H200 SXM of an Azure "
                             "ND H200 v5 VM, NCCL 2.20.5, labelled 'NVLS algorithm' (NVLink SHARP) by "
                             "Azure; NCCL picks the algorithm per message size, in-place, "
                             f"{2**(10 + i):,} bytes, bus bandwidth {busbw} GB/s"),
                    source=_AZURE_H200, shape=(2**(10 + i),), implementation="nccl")
        for i, busbw in enumerate(_AZURE_H200_BUSBW)
    ]
    rows += [
        Measurement(kind="allreduce", hardware="H100_PCIe", model=None, precision="fp32", batch_size=1,
                    tp=2, quantity="bus_bandwidth", value=busbw * 1e9,
                    setting=("nccl-tests all_reduce_perf -b 1G -e 8G -f 2 -g 2 on two H100 PCIe joined "
                             "by an NVLink bridge (NCCL: P2P/direct pointer), float sum, out-of-place, "
                             f"{nbytes} bytes: {us} us, busbw {busbw} GB/s; the reporter found it "
                             "lower than on A100 SXM4"),
                    source=_NCCL_1161, shape=(nbytes,), implementation="nccl")
        for nbytes, us, busbw in _NCCL_1161_ROWS
    ]
    rows += _custom_allreduce() + _allreduce_peaks()
    return rows


_SGLANG_2904 = ("sgl-project/sglang pull request #2904, 'optimize custom allreduce kernel' (2025-01-15), "
                "'unit test performance in H100 (without cuda graph)': "
                "https://github.com/sgl-project/sglang/pull/2904")
#: its two tables, latency in ms by data size (read as bytes per GPU) over 2 / 4 / 8 GPUs
_SGLANG_2904_TABLES = {
    "sglang": {512: (0.0037, 0.0048, 0.0059), 4096: (0.0039, 0.0037, 0.0057),
               32768: (0.0045, 0.0048, 0.0078), 262144: (0.0079, 0.0139, 0.0167),
               524288: (0.0125, 0.0202, 0.0221), 1048576: (0.0199, 0.0311, 0.0338)},
    "vllm": {512: (0.0095, 0.0091, 0.0101), 4096: (0.0088, 0.0085, 0.0093),
             32768: (0.0087, 0.0092, 0.0118), 262144: (0.0129, 0.0206, 0.0241),
             524288: (0.0177, 0.0269, 0.0304), 1048576: (0.0266, 0.0402, 0.0450)},
}
_NAMES = {"sglang": "SGLang's custom AllReduce (one-shot/two-shot, copy-input mode)",
          "vllm": "vLLM's custom AllReduce"}


def _custom_allreduce():
    """SGLang's and vLLM's custom AllReduce kernels on 8x H100 SXM, as SGLang's PR printed them.
    The table says 'data size' without a unit; read as bytes per GPU, which for a bound is the
    cautious reading (the model's bytes term is then the smallest it could be)."""
    return [
        Measurement(kind="allreduce", hardware="H100", model=None, precision="n/a", batch_size=1,
                    tp=tp, quantity="latency", value=ms * 1e-3,
                    setting=(f"{_NAMES[impl]} over {tp} of 8 NVSwitch-connected H100 SXM, without CUDA "
                             f"graphs, data size {nbytes} (read as bytes per GPU): {ms * 1e3:.1f} us"),
                    source=_SGLANG_2904, shape=(nbytes,), implementation=impl)
        for impl, table in _SGLANG_2904_TABLES.items()
        for nbytes, times in table.items() for tp, ms in zip((2, 4, 8), times)
    ]


_NCCL_TESTS_212 = ("NVIDIA/nccl-tests issue #212, 'H100 all reduce performance is poor', the NCCL "
                   "maintainer's reply of 2024-05-06 (on GitHub: NVIDIA/nccl-tests, issue 212)")


def _allreduce_peaks():
    """The peak bus bandwidth NCCL reaches on 8 H100 SXM for large AllReduces, by algorithm: a ring
    (NCCL_ALGO=RING) about 370 GB/s, 'the line rate [450 GB/s] with the protocol overhead (~20%)';
    NVLink SHARP about 480 GB/s busbw (algbw about 275 GB/s). No message size is given."""
    return [
        Measurement(kind="allreduce_peak", hardware="H100", model=None, precision="n/a", batch_size=1,
                    tp=8, quantity="bus_bandwidth", value=busbw * 1e9,
                    setting=f"nccl-tests AllReduce on 8 H100 SXM, {words}: peak busbw about {busbw} GB/s",
                    source=_NCCL_TESTS_212, implementation="nccl", algorithm=algo)
        for algo, busbw, words in (("ring", 370, "a ring (NCCL_ALGO=RING)"),
                                   ("nvls", 480, "NVLink SHARP, NCCL's default (algbw about 275 GB/s)"))
    ]


def allreduce_seconds(row: Measurement) -> float:
    """The measured time of one AllReduce from an "allreduce" row: nccl-tests' bus bandwidth
    is busbw = S/t * 2(n-1)/n, so t = S * 2(n-1)/n / busbw.

    >>> row = find(kind="allreduce", hardware="H100_PCIe", shape=(4294967296,))[0]
    >>> round(allreduce_seconds(row) * 1e6)          # us; the report printed 36943
    36943

    A row that gives the time itself (quantity "latency": SGLang's and vLLM's tables) is that time.
    """
    if row.kind != "allreduce":
        raise ValueError(f"allreduce_seconds takes an allreduce row; got {row.kind}")
    if row.quantity == "latency":
        return row.value
    (nbytes,) = row.shape
    return nbytes * 2 * (row.tp - 1) / row.tp / row.value


MEASUREMENTS: tuple[Measurement, ...] = tuple(
    _decode_1gpu() + _decode_tp() + _resnet50() + _stream() + _gemm() + _allreduce()
)

_FIELD_NAMES = tuple(f.name for f in fields(Measurement))


#: gpt-fast's generate.py defaults, the setting of its README's decode speeds
GPT_FAST_PROMPT_TOKENS, GPT_FAST_OUTPUT_TOKENS = 5, 200


def decode_bound(row: Measurement, **precisions):
    """course_lib's serve() of a measured batch-1 decode row in the row's own setting (gpt-fast:
    a 5-token prompt, 200 new tokens), weights at the row's precision unless `precisions`
    (serve's precision keywords) say otherwise. Its ``1 / decode.latency_si`` is the roofline
    bound in tokens/s that every lesson compares with ``row.value``.

    >>> row = find(kind="llm_decode", model="Llama2_7B", precision="bf16", tp=1)[0]
    >>> bound = 1 / decode_bound(row).decode.latency_si
    >>> bound > row.value
    True
    """
    from . import Hardware, Models, serve

    if row.kind != "llm_decode" or row.tp != 1 or row.batch_size != 1:
        raise ValueError(f"decode_bound takes a single-GPU, batch-1 llm_decode row; got {row.kind}, "
                         f"tp={row.tp}, batch {row.batch_size}")
    if not precisions:
        precisions = ({"precision": row.precision} if row.precision in ("bf16", "fp16")
                      else {"precision": "bf16", "weight_precision": row.precision})
    return serve(Models.get(row.model), Hardware.get(row.hardware), prompt_tokens=GPT_FAST_PROMPT_TOKENS,
                 output_tokens=GPT_FAST_OUTPUT_TOKENS, **precisions)


def find(**filters) -> list[Measurement]:
    """Rows whose fields equal every given value: ``find(kind="gemm", hardware="A100")``.

    An unknown field name raises TypeError rather than silently matching nothing.
    """
    unknown = [k for k in filters if k not in _FIELD_NAMES]
    if unknown:
        raise TypeError(
            f"unknown Measurement field(s) {unknown}; valid fields: {', '.join(_FIELD_NAMES)}"
        )
    return [m for m in MEASUREMENTS
            if all(getattr(m, k) == v for k, v in filters.items())]
