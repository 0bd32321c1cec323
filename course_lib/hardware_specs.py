"""The hardware zoo as plain data: one dict per chip, every figure with its source.

Conventions (read these before using a number):

* ``peak_flops`` holds **dense** peaks in FLOP/s (ops/s for int8/int4). Vendor sheets often
  print the 2:4 structured-sparsity figure in the headline; where they do, the dense figure
  here is half of it and the source string says so.
* Vendors count one multiply-accumulate (MAC) as **2 FLOPs**; so does this file.
* ``fp32`` is the ordinary (non-tensor-core) FP32 peak on GPUs.
* Only precisions the chip has a published (or derivable) peak for are listed. Asking the
  course library for any other precision is an error, never a silent fallback.
* ``memory_bandwidth`` is the datasheet main-memory bandwidth in bytes/s; sustained
  bandwidth is lower (see ``measurements.py``).
* ``memory_capacity`` is in bytes and **binary**: memory is built from binary-sized dies,
  so a datasheet's "80 GB" of HBM is 80 GiB (nvidia-smi shows 81,920 MiB on an A100
  80GB). Where nvidia-smi's ``memory.total`` is known from a public capture it is used, as
  the driver reports it (the H100 SXM shows 81,559 MiB: the driver keeps a little; GDDR6
  cards with ECC on, the data-centre default, lose 1/16 to the ECC bits: a "16 GB" T4 shows
  15,360 MiB); otherwise the datasheet figure read in GiB. The source says which and where
  the capture is. Bandwidths stay decimal (TB/s = 10¹² B/s), as datasheets mean them.
* ``memory_capacity_datasheet`` is the datasheet's "GB" figure read as decimal bytes: what
  a reader who takes GB = 10⁹ B would use. Only ``course_lib.sensitivity`` (capacities
  "decimal") and the tests read it.
* ``interconnect_bandwidth`` is the scale-up link bandwidth **per direction**, summed over
  the chip's links, in bytes/s. NVLink figures are usually quoted as bidirectional totals
  (A100 600 GB/s, H100 900 GB/s); per direction is half. ``None`` when there is no scale-up
  link (PCIe-only cards, SoCs, CPUs).
* ``link_latency``: the **assumed** latency of one message (the alpha of alpha-beta: launch,
  protocol, synchronisation), charged once per AllReduce and once per pipeline send, ring or
  switch alike, on a chip where no small-message AllReduce time is published. One rule for
  every such chip: the fastest small-message AllReduce published for any chip in the zoo
  (``ASSUMED_MESSAGE_LATENCY``, HGX H100's), so no chip is assumed slower to start a message
  than the fastest one measured. Its source says it is an assumption.
* ``allreduce_latency``: the **bound's** alpha where a small-message AllReduce time is
  published for the system: the fastest published, less its own bytes' time, rounded down
  (no published point is then faster than alpha + bytes / bandwidth). It replaces
  ``link_latency`` there (``course_lib.topology``).
* ``allreduce_estimates``: named implementations' measured small-message AllReduce times, per
  group size (seconds): ``"nccl"`` (nccl-tests, NCCL 2.20.5), ``"sglang"`` and ``"vllm"`` (their
  custom one-shot/two-shot kernels). ``serve(..., allreduce=name)`` charges one of them without
  overlap: an estimate, not a bound.
* ``interconnect_link_usable_bandwidth``: per link and direction, what the vendor says a link
  really carries where its own material gives a figure below the line rate (MI300X xGMI).
* ``tdp`` in watts; ``None`` where the vendor publishes none.
* ``interconnect_max_gpus``: how many GPUs the scale-up link joins, where it is fewer than a
  server holds (the H100 PCIe's NVLink bridge joins pairs); beyond it they talk over
  ``fallback_interconnect`` at ``fallback_interconnect_bandwidth`` (per direction).
* ``interconnect_topology`` says how much of ``interconnect_bandwidth`` one tensor-parallel
  AllReduce can use (``course_lib.topology``): "switch" (every link goes to a switch, so any
  group uses them all: NVSwitch), "bridge" (a pair joined by its bridge), "mesh" (point to
  point, fully connected: each pair shares one of ``interconnect_links`` links, so a group of
  N uses N-1 of them) and "torus" (``interconnect_links`` ports; a ring along one dimension
  uses two). Absent means "switch".
* ``interconnect_reduction``: the switch itself sums the GPUs' data (NVLink SHARP, "NVLS", in
  the NVSwitch of HGX H100/H200/B200 servers; NCCL's default AllReduce there), so each GPU
  sends its buffer once and receives the sum once instead of a ring's 2(N-1)/N times.
  Absent means False.

Standard library only: ``hardware.py`` turns these dicts into ``Hardware`` objects.
"""

MiB, GiB = 2**20, 2**30

_NVSWITCH_SRC = ("NVIDIA HGX/DGX server documentation: every GPU's NVLinks go to the "
                 "NVSwitch chips, so any group of GPUs talks at the full per-GPU NVLink "
                 "bandwidth")

_NVLS_SRC = ("NVIDIA NVLink SHARP (NVLS): the NVSwitch chips of HGX H100/H200 (third generation) "
             "and HGX B200 (fourth) reduce in the switch; NCCL uses it for AllReduce by default "
             "(NCCL maintainer, NVIDIA/nccl-tests issue #212: 'allreduce uses NVLink SHARP by "
             "default'). The A100's and V100's NVSwitch cannot reduce")

_SGLANG_2904 = "https://github.com/sgl-project/sglang/pull/2904"
_AZURE_H200_SWEEP = ("https://github.com/Azure/AI-benchmarking-guide (Azure_Results/ND_H200_v5_results.md, "
                     "'NCCL Bandwidth' table, commit 7f20e5f)")

#: the fastest small-message AllReduce published for any chip in the zoo (HGX H100, below): the
#: latency assumed for every chip without a measurement of its own
ASSUMED_MESSAGE_LATENCY = 3.6e-6

_NVLS_ALLREDUCE_LATENCY_SRC = (
    "Measured, the fastest published: SGLang's custom AllReduce on 8x H100 SXM (NVSwitch), "
    "without CUDA graphs, took 3.7 us for 512 B over 2 GPUs and for 4096 B over 4 GPUs "
    f"({_SGLANG_2904}, 'unit test performance in H100', data sizes read as bytes; "
    "course_lib.measurements). 3.7 us less 4096 B / 450 GB/s (0.009 us) is 3.69 us, rounded "
    "down to 3.6 us, so no published point is faster than alpha + bytes / bandwidth. NCCL "
    "2.20.5 takes about 30 us at the same sizes (nccl-tests, 8x H200, "
    f"{_AZURE_H200_SWEEP}): one implementation's time, kept as the 'nccl' estimate, not a "
    "bound. HGX H200 has the same NVSwitch and NVLink 4, so it takes the H100's figure; the "
    "same alpha for a ring and for NVLink SHARP, and for any group on the board")

_ALLREDUCE_ESTIMATES_SRC = (
    "Measured small-message AllReduce times, per group size, of three implementations: 'nccl' "
    "27.5 us (nccl-tests AllReduce on 8 H200 SXM, Azure ND H200 v5, NCCL 2.20.5: 1 KiB to 512 KiB "
    "take 30-31 us; the 1 KiB row's busbw 0.06 GB/s at the top of its rounding, 0.065, gives "
    f"1024 x 1.75 / 0.065e9 = 27.6 us, taken as 27.5; {_AZURE_H200_SWEEP}; the 8-GPU figure "
    "serves smaller groups on the board too); 'sglang' 3.7 / 4.8 / 5.9 us over 2 / 4 / 8 GPUs "
    "and 'vllm' 9.5 / 9.1 / 10.1 us (SGLang's custom AllReduce and vLLM's, 512 B, 8x H100 SXM, "
    f"no CUDA graph, {_SGLANG_2904}). The H200 takes the H100's custom-kernel figures (same "
    "NVSwitch, NVLink 4)")

#: {implementation: {GPUs: seconds}} on HGX H100/H200 (sources: _ALLREDUCE_ESTIMATES_SRC)
_HGX_HOPPER_ESTIMATES = {"nccl": {8: 27.5e-6},
                         "sglang": {2: 3.7e-6, 4: 4.8e-6, 8: 5.9e-6},
                         "vllm": {2: 9.5e-6, 4: 9.1e-6, 8: 10.1e-6}}

_MEASURED_ELSEWHERE_LATENCY_SRC = (
    "The assumed figure every chip without a measurement shares (3.6 us); not used on this chip, "
    "whose measured allreduce_latency takes its place")

_NVLINK_LATENCY_SRC = (
    "Assumed, not measured: no small-message AllReduce time is published for this chip, so the "
    "course's one rule for every such chip applies: the fastest published for any chip in the "
    "zoo, 3.6 us (HGX H100, SGLang's custom AllReduce; see its allreduce_latency), charged once "
    "per message (AllReduce or pipeline send), ring or switch alike"
)

SPECS = {
    # ------------------------------------------------------------------ NVIDIA Volta
    "V100": {
        "name": "NVIDIA V100 SXM2 32GB",
        "aliases": ("V100_32GB", "V100_SXM2", "Tesla_V100"),
        "vendor": "NVIDIA",
        "year": 2018,  # the 32 GB SXM2 part; the 16 GB V100 launched in 2017
        "peak_flops": {"fp32": 15.7e12, "fp16": 125e12},
        "memory_bandwidth": 900e9,
        "memory_capacity": 32_510 * MiB,
        "memory_capacity_datasheet": 32e9,
        "interconnect_bandwidth": 150e9,
        "interconnect": "NVLink 2",
        "interconnect_topology": "switch",
        "link_latency": ASSUMED_MESSAGE_LATENCY,
        "tdp": 300,
        "sources": {
            "peak_flops": "NVIDIA Tesla V100 GPU datasheet (2018), SXM2 column: single "
                          "precision 15.7 TFLOPS, tensor performance 125 TFLOPS (fp16 "
                          "multiply, fp32 accumulate; Volta has no sparsity, so this is "
                          "dense). Volta tensor cores have no bf16/int8 tensor modes.",
            "memory_bandwidth": "NVIDIA Tesla V100 GPU datasheet (2018): HBM2 900 GB/s",
            "memory_capacity": "NVIDIA Tesla V100 GPU datasheet (2018): 32 GB HBM2 variant, built "
                               "from binary-sized dies (4 stacks of 8 GiB = 32 GiB); nvidia-smi "
                               "reports memory.total = 32,510 MiB (32 GiB less what the driver "
                               "keeps) on a 'Tesla V100-SXM2-32GB' in public captures (e.g. "
                               "PaddlePaddle PLSC's benchmark notes, '8 NVIDIA Tesla V100 32G "
                               "(32510MiB)'; the same total on V100-PCIE/V100S 32GB cards)",
            "interconnect_bandwidth": "NVIDIA Tesla V100 GPU datasheet (2018): NVLink "
                                      "300 GB/s (bidirectional total over 6 links); "
                                      "divided by 2 for per-direction = 150 GB/s",
            "interconnect_topology": "Not modelled per server: the full 150 GB/s per direction "
                                     "is what an NVSwitch server (DGX-2/HGX-2) gives any group; "
                                     "on a DGX-1's hybrid cube-mesh a pair of GPUs shares only 1 "
                                     "or 2 of the 6 links",
            "link_latency": _NVLINK_LATENCY_SRC,
            "tdp": "NVIDIA Tesla V100 GPU datasheet (2018), SXM2: max power 300 W",
        },
    },
    # ------------------------------------------------------------------ NVIDIA Ampere
    "A100": {
        "name": "NVIDIA A100 SXM 80GB",
        "aliases": ("A100_80GB", "A100_SXM", "A100_SXM_80GB"),
        "vendor": "NVIDIA",
        "year": 2020,
        "peak_flops": {"fp32": 19.5e12, "tf32": 156e12, "fp16": 312e12, "bf16": 312e12,
                       "int8": 624e12, "int4": 1248e12},
        "memory_bandwidth": 2.039e12,
        "memory_capacity": 81_920 * MiB,
        "memory_capacity_datasheet": 80e9,
        "interconnect_bandwidth": 300e9,
        "interconnect": "NVLink 3",
        "interconnect_topology": "switch",
        "link_latency": ASSUMED_MESSAGE_LATENCY,
        "tdp": 400,
        "sources": {
            "peak_flops": "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM column; the "
                          "sheet prints dense and with-sparsity figures side by side "
                          "(TF32 156/312, FP16 312/624, INT8 624/1248, INT4 1248/2496): "
                          "the dense ones are used. FP32 19.5 TFLOPS (non-tensor). "
                          "No fp8 on Ampere.",
            "memory_bandwidth": "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB "
                                "SXM: HBM2e 2,039 GB/s",
            "memory_capacity": "NVIDIA A100 Tensor Core GPU datasheet (2021): 80 GB HBM2e, which "
                               "is binary: nvidia-smi reports memory.total = 81,920 MiB (80 GiB ="
                               " 85.9e9 bytes) on an 'NVIDIA A100-SXM4-80GB' in public captures "
                               "(cloud A100 80GB instances)",
            "interconnect_bandwidth": "NVIDIA A100 datasheet (2021): NVLink 600 GB/s "
                                      "(bidirectional total, 12 links); divided by 2 for "
                                      "per-direction = 300 GB/s",
            "interconnect_topology": _NVSWITCH_SRC,
            "link_latency": _NVLINK_LATENCY_SRC,
            "tdp": "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM: max TDP 400 W",
        },
    },
    "A100_40GB": {
        "name": "NVIDIA A100 SXM 40GB",
        "aliases": ("A100_SXM_40GB",),
        "vendor": "NVIDIA",
        "year": 2020,
        "peak_flops": {"fp32": 19.5e12, "tf32": 156e12, "fp16": 312e12, "bf16": 312e12,
                       "int8": 624e12, "int4": 1248e12},
        "memory_bandwidth": 1.555e12,
        "memory_capacity": 40_960 * MiB,
        "memory_capacity_datasheet": 40e9,
        "interconnect_bandwidth": 300e9,
        "interconnect": "NVLink 3",
        "interconnect_topology": "switch",
        "link_latency": ASSUMED_MESSAGE_LATENCY,
        "tdp": 400,
        "sources": {
            "peak_flops": "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM column "
                          "(same chip as the 80 GB part): dense figures TF32 156, "
                          "FP16/BF16 312, INT8 624, INT4 1248 (with-sparsity figures are "
                          "double); FP32 19.5 TFLOPS non-tensor",
            "memory_bandwidth": "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 40GB: "
                                "HBM2 1,555 GB/s",
            "memory_capacity": "NVIDIA A100 Tensor Core GPU datasheet (2021): 40 GB HBM2, which "
                               "is binary: nvidia-smi reports memory.total = 40,960 MiB (40 GiB) "
                               "on an 'NVIDIA A100-SXM4-40GB' in public captures (cloud A100 40GB "
                               "instances)",
            "interconnect_bandwidth": "NVIDIA A100 datasheet (2021): NVLink 600 GB/s "
                                      "bidirectional total; divided by 2 for "
                                      "per-direction = 300 GB/s",
            "interconnect_topology": _NVSWITCH_SRC,
            "link_latency": _NVLINK_LATENCY_SRC,
            "tdp": "NVIDIA A100 Tensor Core GPU datasheet (2021), SXM: max TDP 400 W",
        },
    },
    # ------------------------------------------------------------------ NVIDIA Hopper
    "H100": {
        "name": "NVIDIA H100 SXM5 80GB",
        "aliases": ("H100_SXM", "H100_SXM5", "H100_80GB"),
        "vendor": "NVIDIA",
        "year": 2022,
        "peak_flops": {"fp32": 66.9e12, "tf32": 494.7e12, "fp16": 989.4e12,
                       "bf16": 989.4e12, "fp8": 1978.9e12, "int8": 1978.9e12},
        "memory_bandwidth": 3.35e12,
        "memory_capacity": 81_559 * MiB,
        "memory_capacity_datasheet": 80e9,
        "interconnect_bandwidth": 450e9,
        "interconnect": "NVLink 4",
        "interconnect_topology": "switch",
        "interconnect_reduction": True,
        "allreduce_latency": 3.6e-6,
        "allreduce_estimates": _HGX_HOPPER_ESTIMATES,
        "link_latency": ASSUMED_MESSAGE_LATENCY,
        "tdp": 700,
        "sources": {
            "peak_flops": "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), "
                          "H100 SXM5 column, dense figures: FP32 66.9, TF32 494.7, "
                          "FP16/BF16 989.4, FP8 1978.9 TFLOPS, INT8 1978.9 TOPS. The "
                          "H100 datasheet (2023) headline figures (TF32 989, FP16 1979, "
                          "FP8 3958) are with 2:4 sparsity; dense = half. No int4 "
                          "tensor mode on Hopper.",
            "memory_bandwidth": "NVIDIA H100 Tensor Core GPU datasheet (2023), SXM "
                                "column: HBM3 3.35 TB/s",
            "memory_capacity": "NVIDIA H100 Tensor Core GPU datasheet (2023), SXM: 80 GB HBM3, "
                               "which is binary: nvidia-smi reports memory.total = 81,559 MiB "
                               "(85.5e9 bytes; 80 GiB of HBM3 less what the driver reserves) on "
                               "an 'NVIDIA H100 80GB HBM3', checked on this project's H100 with "
                               "ECC enabled",
            "interconnect_bandwidth": "NVIDIA H100 datasheet (2023), SXM: NVLink 900 GB/s "
                                      "(bidirectional total, 18 links); divided by 2 for "
                                      "per-direction = 450 GB/s",
            "interconnect_topology": _NVSWITCH_SRC,
            "interconnect_reduction": _NVLS_SRC,
            "allreduce_latency": _NVLS_ALLREDUCE_LATENCY_SRC,
            "allreduce_estimates": _ALLREDUCE_ESTIMATES_SRC,
            "link_latency": _MEASURED_ELSEWHERE_LATENCY_SRC,
            "tdp": "NVIDIA H100 Tensor Core GPU datasheet (2023), SXM: max TDP up to 700 W "
                   "(configurable)",
        },
    },
    "H100_PCIe": {
        "name": "NVIDIA H100 PCIe 80GB",
        "aliases": ("H100_PCIE_80GB",),
        "vendor": "NVIDIA",
        "year": 2022,
        "peak_flops": {"fp32": 51.2e12, "tf32": 378e12, "fp16": 756e12, "bf16": 756e12,
                       "fp8": 1513e12, "int8": 1513e12},
        "memory_bandwidth": 2.0e12,
        "memory_capacity": 81_559 * MiB,
        "memory_capacity_datasheet": 80e9,
        "interconnect_bandwidth": 300e9,
        "interconnect": "NVLink 4 bridge",
        "interconnect_topology": "bridge",
        "interconnect_max_gpus": 2,
        "fallback_interconnect": "PCIe Gen5 x16",
        "fallback_interconnect_bandwidth": 64e9,
        "link_latency": ASSUMED_MESSAGE_LATENCY,
        "tdp": 350,
        "sources": {
            "peak_flops": "NVIDIA H100 Tensor Core GPU Architecture whitepaper (2022), "
                          "H100 PCIe column, dense figures: FP32 51.2, TF32 378, "
                          "FP16/BF16 756, FP8 1513 TFLOPS, INT8 1513 TOPS (the datasheet "
                          "headline TF32 756 / FP16 1513 / FP8 3026 are with sparsity; "
                          "dense = half)",
            "memory_bandwidth": "NVIDIA H100 Tensor Core GPU datasheet (2023), PCIe "
                                "column: 2 TB/s (HBM2e)",
            "memory_capacity": "NVIDIA H100 Tensor Core GPU datasheet (2023), PCIe: 80 GB HBM2e, "
                               "binary-sized (80 GiB of dies); nvidia-smi reports memory.total = "
                               "81,559 MiB on an 'NVIDIA H100 PCIe' in public captures (cloud "
                               "H100 PCIe instances, driver 535-570), the same total as the SXM "
                               "part",
            "interconnect_bandwidth": "NVIDIA H100 datasheet (2023), PCIe: NVLink bridge "
                                      "600 GB/s (bidirectional total); divided by 2 for "
                                      "per-direction = 300 GB/s. Without a bridge the card "
                                      "only has PCIe Gen5 (128 GB/s total, 64 per direction)",
            "interconnect_max_gpus": "NVIDIA H100 PCIe documentation: a 2-way NVLink "
                                     "bridge joins a pair of cards; a third or fourth "
                                     "card is reached over PCIe only",
            "fallback_interconnect_bandwidth": "NVIDIA H100 datasheet (2023), PCIe: PCIe Gen5 "
                                               "128 GB/s (bidirectional total); per "
                                               "direction 64 GB/s (x16 at 32 GT/s)",
            "interconnect_topology": "NVIDIA H100 PCIe documentation: the NVLink bridge joins "
                                     "two cards directly, all its links between that pair",
            "link_latency": _NVLINK_LATENCY_SRC,
            "tdp": "NVIDIA H100 Tensor Core GPU datasheet (2023), PCIe: max TDP 300-350 W "
                   "(configurable); upper end used",
        },
    },
    "H200": {
        "name": "NVIDIA H200 SXM 141GB",
        "aliases": ("H200_SXM", "H200_141GB"),
        "vendor": "NVIDIA",
        "year": 2024,
        "peak_flops": {"fp32": 66.9e12, "tf32": 494.7e12, "fp16": 989.4e12,
                       "bf16": 989.4e12, "fp8": 1978.9e12, "int8": 1978.9e12},
        "memory_bandwidth": 4.8e12,
        "memory_capacity": 143_771 * MiB,
        "memory_capacity_datasheet": 141e9,
        "interconnect_bandwidth": 450e9,
        "interconnect": "NVLink 4",
        "interconnect_topology": "switch",
        "interconnect_reduction": True,
        "allreduce_latency": 3.6e-6,
        "allreduce_estimates": _HGX_HOPPER_ESTIMATES,
        "link_latency": ASSUMED_MESSAGE_LATENCY,
        "tdp": 700,
        "sources": {
            "peak_flops": "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM column: same "
                          "GH100 compute as H100 SXM. Its headline TF32 989 / FP16 1979 / "
                          "FP8 3958 are with sparsity; dense = half, taken at the exact "
                          "H100 SXM5 whitepaper values (494.7 / 989.4 / 1978.9); FP32 67 "
                          "(66.9 in the whitepaper)",
            "memory_bandwidth": "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM: HBM3e "
                                "4.8 TB/s",
            "memory_capacity": "NVIDIA H200 Tensor Core GPU datasheet (2024): 141 GB HBM3e, which"
                               " is binary-sized: nvidia-smi reports memory.total = 143,771 MiB "
                               "(140.4 GiB, 150.8e9 bytes) on an 'NVIDIA H200', checked on this "
                               "project's H200 with ECC enabled",
            "interconnect_bandwidth": "NVIDIA H200 datasheet (2024), SXM: NVLink 900 GB/s "
                                      "bidirectional total; divided by 2 for "
                                      "per-direction = 450 GB/s",
            "interconnect_topology": _NVSWITCH_SRC,
            "interconnect_reduction": _NVLS_SRC,
            "allreduce_latency": _NVLS_ALLREDUCE_LATENCY_SRC,
            "allreduce_estimates": _ALLREDUCE_ESTIMATES_SRC,
            "link_latency": _MEASURED_ELSEWHERE_LATENCY_SRC,
            "tdp": "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM: max TDP up to 700 W",
        },
    },
    # ------------------------------------------------------------------ NVIDIA Blackwell
    "B200": {
        "name": "NVIDIA B200 (HGX B200, 180GB)",
        "aliases": ("B200_SXM", "HGX_B200"),
        "vendor": "NVIDIA",
        "year": 2024,
        "peak_flops": {"fp32": 75e12, "tf32": 1.1e15, "fp16": 2.25e15, "bf16": 2.25e15,
                       "fp8": 4.5e15, "int8": 4.5e15, "fp4": 9e15},
        "memory_bandwidth": 8e12,
        "memory_capacity": 183_359 * MiB,
        "memory_capacity_datasheet": 180e9,
        "interconnect_bandwidth": 900e9,
        "interconnect": "NVLink 5",
        "interconnect_topology": "switch",
        "interconnect_reduction": True,
        "link_latency": ASSUMED_MESSAGE_LATENCY,
        "tdp": 1000,
        "sources": {
            "peak_flops": "NVIDIA HGX B200 datasheet (2024), 8-GPU totals divided by 8; "
                          "the sheet's tensor figures are with sparsity, dense = half: "
                          "TF32 2.2 -> 1.1 PFLOPS, FP16/BF16 4.5 -> 2.25, FP8 9 -> 4.5, "
                          "INT8 9 -> 4.5 POPS, FP4 18 -> 9. FP32 600 TFLOPS / 8 = 75 "
                          "(NVIDIA's Blackwell material also quotes 80 for other clocks; "
                          "75 chosen). GB200 (1200 W) parts are faster; not this entry.",
            "memory_bandwidth": "NVIDIA HGX B200 datasheet (2024): HBM3e 8 TB/s per GPU "
                                "(64 TB/s per 8-GPU board / 8)",
            "memory_capacity": "NVIDIA DGX B200 datasheet (2024): 1,440 GB total GPU "
                               "memory / 8 GPUs = 180 GB usable per GPU (MLPerf system "
                               "files also list 'B200-SXM-180GB'); nvidia-smi reports "
                               "memory.total = 183,359 MiB (179.1 GiB) per 'NVIDIA B200' in "
                               "public captures (Modal's GPU Glossary, 'What is nvidia-smi?', 8x "
                               "B200 on driver 575.57.08). Press material says 192 GB, the raw "
                               "HBM stack size (8 x 24 GiB).",
            "interconnect_bandwidth": "NVIDIA HGX B200 datasheet (2024): NVLink 5 1.8 TB/s "
                                      "per GPU (bidirectional total, 18 links); divided by "
                                      "2 for per-direction = 900 GB/s",
            "interconnect_topology": _NVSWITCH_SRC,
            "interconnect_reduction": _NVLS_SRC,
            "link_latency": _NVLINK_LATENCY_SRC,
            "tdp": "NVIDIA HGX B200 (2024): up to 1,000 W per GPU (MLPerf system notes: "
                   "'B200 TGP 1000W')",
        },
    },
    # ------------------------------------------------------------------ AMD
    "MI300X": {
        "name": "AMD Instinct MI300X (OAM, 192GB)",
        "aliases": ("MI300", "Instinct_MI300X"),
        "vendor": "AMD",
        "year": 2023,
        "peak_flops": {"fp32": 163.4e12, "tf32": 653.7e12, "fp16": 1307.4e12,
                       "bf16": 1307.4e12, "fp8": 2614.9e12, "int8": 2614.9e12},
        "memory_bandwidth": 5.3e12,
        "memory_capacity": 192 * GiB,
        "memory_capacity_datasheet": 192e9,
        "interconnect_bandwidth": 448e9,
        "interconnect": "Infinity Fabric (xGMI), 7 links",
        "interconnect_topology": "mesh",
        "interconnect_links": 7,
        "interconnect_link_usable_bandwidth": 48e9,
        "interconnect_max_gpus": 8,
        "link_latency": ASSUMED_MESSAGE_LATENCY,
        "tdp": 750,
        "sources": {
            "peak_flops": "AMD Instinct MI300X accelerator datasheet (2023): dense matrix "
                          "peaks TF32 653.7, FP16/BF16 1307.4, FP8 2614.9 TFLOPS, INT8 "
                          "2614.9 TOPS (the sheet's with-sparsity figures are double: "
                          "1307.4 / 2614.9 / 5229.8 / 5229.8). FP32 163.4 TFLOPS is the "
                          "vector (non-matrix) peak (AMD endnote MI300-11; 81.7 is the FP64 "
                          "vector figure, not FP32).",
            "memory_bandwidth": "AMD Instinct MI300X datasheet (2023): HBM3 5.3 TB/s peak",
            "memory_capacity": "AMD Instinct MI300X datasheet (2023): 192 GB HBM3 = 8 stacks of "
                               "24 GiB, read as binary (192 GiB)",
            "interconnect_bandwidth": "AMD Instinct MI300X datasheet (2023): 7 Infinity "
                                      "Fabric links of 128 GB/s peak each, bidirectional "
                                      "(896 GB/s aggregate peer-to-peer); per direction "
                                      "7 x 64 = 448 GB/s (divided by 2)",
            "interconnect_topology": "AMD Instinct MI300X platform (8 OAM modules on a UBB): the "
                                     "7 xGMI links of each GPU go one to each of the other 7, a "
                                     "fully connected point-to-point mesh without a switch; a "
                                     "pair shares one link (48 GB/s usable), a group of N uses N-1",
            "interconnect_link_usable_bandwidth": "AMD ROCm blog, 'Understanding RCCL Bandwidth and "
                                                  "xGMI Performance on AMD Instinct MI300X' (2025-03-02): "
                                                  "each xGMI link is rated 64 GB/s, and CRC and protocol "
                                                  "overhead leave about 48 GB/s usable per link (75%)",
            "link_latency": _NVLINK_LATENCY_SRC,
            "tdp": "AMD Instinct MI300X datasheet (2023): 750 W peak board power",
        },
    },
    # ------------------------------------------------------------------ inference cards
    "L4": {
        "name": "NVIDIA L4 24GB",
        "aliases": ("L4_24GB",),
        "vendor": "NVIDIA",
        "year": 2023,
        "peak_flops": {"fp32": 30.3e12, "tf32": 60e12, "fp16": 121e12, "bf16": 121e12,
                       "fp8": 242.5e12, "int8": 242.5e12},
        "memory_bandwidth": 300e9,
        "memory_capacity": 23_034 * MiB,
        "memory_capacity_datasheet": 24e9,
        "interconnect_bandwidth": None,
        "interconnect": None,
        "fallback_interconnect": "PCIe Gen4 x16",
        "fallback_interconnect_bandwidth": 32e9,
        "link_latency": None,
        "tdp": 72,
        "sources": {
            "peak_flops": "NVIDIA L4 Tensor Core GPU datasheet (2023): FP32 30.3 TFLOPS; "
                          "tensor figures printed only with sparsity (TF32 120, FP16/BF16 "
                          "242, FP8 485, INT8 485 TOPS); dense = half: 60, 121, 242.5, "
                          "242.5. The datasheet gives no int4 figure, so none is listed.",
            "memory_bandwidth": "NVIDIA L4 datasheet (2023): GDDR6 300 GB/s",
            "memory_capacity": "NVIDIA L4 datasheet (2023): 24 GB GDDR6 = 24 GiB of binary-sized "
                               "dies; with ECC on (the data-centre default) GDDR6 keeps 1/16 for "
                               "the check bits, and nvidia-smi reports memory.total = 23,034 MiB "
                               "on an 'NVIDIA L4' in public captures (Google Cloud G2 VMs)",
            "interconnect_bandwidth": "NVIDIA L4 datasheet (2023): no NVLink; PCIe Gen4 "
                                      "x16 only, so no scale-up link (None)",
            "link_latency": "No scale-up link (PCIe only), so None: an AllReduce over PCIe pays the assumed latency every chip without a measurement shares (ASSUMED_MESSAGE_LATENCY)",
            "fallback_interconnect_bandwidth": "NVIDIA L4 datasheet (2023): PCIe Gen4 x16; the PCIe 4.0 line rate, 16 GT/s x 16 lanes, is about 32 GB/s per direction (64 GB/s both ways, 128b/130b encoding ignored). Tensor parallelism runs over it (course_lib.topology)",
            "tdp": "NVIDIA L4 datasheet (2023): max thermal design power 72 W",
        },
    },
    "T4": {
        "name": "NVIDIA T4 16GB",
        "aliases": ("Tesla_T4", "T4_16GB"),
        "vendor": "NVIDIA",
        "year": 2018,
        "peak_flops": {"fp32": 8.1e12, "fp16": 65e12, "int8": 130e12, "int4": 260e12},
        "memory_bandwidth": 320e9,
        "memory_capacity": 15_360 * MiB,
        "memory_capacity_datasheet": 16e9,
        "interconnect_bandwidth": None,
        "interconnect": None,
        "fallback_interconnect": "PCIe Gen3 x16",
        "fallback_interconnect_bandwidth": 16e9,
        "link_latency": None,
        "tdp": 70,
        "sources": {
            "peak_flops": "NVIDIA T4 Tensor Core GPU datasheet (2019): single precision "
                          "8.1 TFLOPS, mixed precision (FP16/FP32) 65 TFLOPS, INT8 130 "
                          "TOPS, INT4 260 TOPS. Turing has no structured sparsity, so "
                          "these are dense. No bf16/tf32 on Turing.",
            "memory_bandwidth": "NVIDIA T4 datasheet (2019): GDDR6 320+ GB/s; 320 GB/s used",
            "memory_capacity": "NVIDIA T4 datasheet (2019): 16 GB GDDR6 = 16 GiB of binary-sized "
                               "dies; with ECC on (the data-centre default) GDDR6 keeps 1/16 for "
                               "the check bits, and nvidia-smi reports memory.total = 15,360 MiB "
                               "(15 GiB) on a 'Tesla T4' in public captures (Google Colab's T4 "
                               "runtime, AWS g4dn)",
            "interconnect_bandwidth": "NVIDIA T4 datasheet (2019): PCIe Gen3 x16 only, no "
                                      "NVLink, so no scale-up link (None)",
            "link_latency": "No scale-up link (PCIe only), so None: an AllReduce over PCIe pays the assumed latency every chip without a measurement shares (ASSUMED_MESSAGE_LATENCY)",
            "fallback_interconnect_bandwidth": "NVIDIA T4 datasheet (2019): PCIe Gen3 x16; the PCIe 3.0 line rate, 8 GT/s x 16 lanes, is about 16 GB/s per direction (32 GB/s both ways, 128b/130b encoding ignored). Tensor parallelism runs over it (course_lib.topology)",
            "tdp": "NVIDIA T4 datasheet (2019): max power 70 W",
        },
    },
    # ------------------------------------------------------------------ Google
    "TPUv5e": {
        "name": "Google Cloud TPU v5e (per chip)",
        "aliases": ("TPU_v5e", "v5e", "v5litepod"),
        "vendor": "Google",
        "year": 2023,
        "peak_flops": {"bf16": 197e12, "int8": 393e12},
        "memory_bandwidth": 819e9,
        "memory_capacity": 16 * GiB,
        "memory_capacity_datasheet": 16e9,
        "interconnect_bandwidth": 200e9,
        "interconnect": "ICI, 4 ports per chip, 2D torus",
        "interconnect_topology": "torus",
        "interconnect_links": 4,
        "link_latency": ASSUMED_MESSAGE_LATENCY,
        "tdp": None,
        "sources": {
            "peak_flops": "Google Cloud TPU documentation, 'TPU v5e' page (system "
                          "architecture table): peak compute per chip bf16 197 TFLOPs, "
                          "Int8 393 TOPs (no sparsity involved)",
            "memory_bandwidth": "Google Cloud TPU docs, 'TPU v5e': HBM2 16 GB, 819 GBps "
                                "(a later revision of the page prints '800 GiBps'; the "
                                "819 GB/s figure is used)",
            "memory_capacity": "Google Cloud TPU docs, 'TPU v5e': HBM2 capacity 16 GB "
                               "per chip, read as binary (16 GiB; HBM dies are binary-sized)",
            "interconnect_bandwidth": "Google Cloud TPU docs, 'TPU v5e': bidirectional ICI "
                                      "bandwidth per chip 400 GBps (older revision: "
                                      "'Interchip Interconnect BW 1600 Gbps' = 200 GB/s, "
                                      "the same figure one way); divided by 2 for "
                                      "per-direction = 200 GB/s, summed over 4 ICI ports",
            "interconnect_topology": "Google Cloud TPU docs, 'TPU v5e': 4 ICI ports per "
                                     "chip (+x, -x, +y, -y) in a 2D mesh; slices are 2D (v5litepod-4 "
                                     "is 2x2, -8 is 2x4, -16 4x4) and only a full pod closes the "
                                     "torus, so a TP group of 4 or 8 spans both axes without "
                                     "wraparound: its corner chips have two neighbours, and a ring "
                                     "through the slice sends on two ports, 100 of the 200 GB/s "
                                     "per direction (a pair of neighbours: one port)",
            "link_latency": _NVLINK_LATENCY_SRC,
            "tdp": "Google publishes no per-chip TDP for TPU v5e, so None",
        },
    },
    # ------------------------------------------------------------------ edge
    "JetsonAGXOrin": {
        "name": "NVIDIA Jetson AGX Orin 64GB (GPU only, MAXN)",
        "aliases": ("Jetson_AGX_Orin", "Orin", "AGX_Orin"),
        "vendor": "NVIDIA",
        "year": 2022,
        "peak_flops": {"fp32": 5.3e12, "fp16": 42.5e12, "int8": 85e12},
        "memory_bandwidth": 204.8e9,
        "memory_capacity": 64 * GiB,
        "memory_capacity_datasheet": 64e9,
        "interconnect_bandwidth": None,
        "interconnect": None,
        "link_latency": None,
        "tdp": 60,
        "sources": {
            "peak_flops": "NVIDIA Jetson AGX Orin Series Technical Brief (v1.2, 2022): "
                          "Ampere GPU with 2048 CUDA cores / 64 tensor cores, 5.3 FP32 "
                          "TFLOPS and 170 sparse INT8 TOPS. The 275 TOPS headline adds the "
                          "two DLAs (105 sparse TOPS) and counts sparsity, so it is not "
                          "used. Derived: dense INT8 = 170 / 2 = 85 TOPS; dense FP16 = "
                          "INT8 / 2 = 42.5 TFLOPS (Ampere tensor cores run int8 at twice "
                          "the fp16 rate), consistent with 64 TC x 1.3 GHz x 512 FLOP/clk "
                          "= 42.6 TFLOPS.",
            "memory_bandwidth": "NVIDIA Jetson AGX Orin 64GB module datasheet (2022): "
                                "256-bit LPDDR5, 204.8 GB/s (shared with the CPU)",
            "memory_capacity": "NVIDIA Jetson AGX Orin 64GB module datasheet (2022): 64 GB "
                               "LPDDR5, shared between CPU and GPU; read as binary (64 GiB, "
                               "LPDDR dies are binary-sized)",
            "interconnect_bandwidth": "System-on-module with no chip-to-chip scale-up "
                                      "link, so None",
            "link_latency": "No scale-up link, so None",
            "tdp": "NVIDIA Jetson AGX Orin 64GB module datasheet (2022): configurable "
                   "15 W - 60 W; 60 W (MAXN) used, module power",
        },
    },
    # ------------------------------------------------------------------ CPU
    "LaptopCPU": {
        "name": "Illustrative laptop CPU (generic: 8 cores AVX2 @ 3 GHz, DDR5-5600 x2)",
        "aliases": ("Laptop", "CPU", "Laptop_CPU"),
        "vendor": "generic (illustrative, not a real product)",
        "year": 2023,
        "peak_flops": {"fp32": 768e9},
        "memory_bandwidth": 89.6e9,
        "memory_capacity": 16 * GiB,
        "memory_capacity_datasheet": 16e9,
        "interconnect_bandwidth": None,
        "interconnect": None,
        "link_latency": None,
        "tdp": 45,
        "sources": {
            "peak_flops": "Illustrative, computed from cores x clock: 8 cores x 3.0e9 "
                          "cycles/s x 2 FMA units x 8 fp32 lanes (256-bit AVX2) x 2 FLOPs "
                          "per FMA = 768 GFLOP/s. fp32 only: AVX2 has no native fp16/bf16 "
                          "FMA, and int8 dot products (AVX-VNNI) vary by part, so no "
                          "other peak is claimed.",
            "memory_bandwidth": "Illustrative, computed: DDR5-5600 = 5600e6 transfers/s x "
                                "8 bytes per 64-bit channel x 2 channels = 89.6 GB/s",
            "memory_capacity": "Illustrative: 16 GB (DIMMs are binary-sized: 16 GiB), a common "
                               "laptop configuration",
            "interconnect_bandwidth": "A single CPU socket has no scale-up accelerator "
                                      "link, so None",
            "link_latency": "No scale-up link, so None",
            "tdp": "Illustrative: 45 W, a typical performance-laptop CPU power class",
        },
    },
}

# Fields every entry carries, and the figures that must each have a source string.
FIELDS = ("name", "vendor", "year", "peak_flops", "memory_bandwidth", "memory_capacity",
          "interconnect_bandwidth", "interconnect", "link_latency", "tdp", "sources")
SOURCED_FIGURES = ("peak_flops", "memory_bandwidth", "memory_capacity",
                   "interconnect_bandwidth", "link_latency", "tdp")
ALLOWED_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8", "int4")
