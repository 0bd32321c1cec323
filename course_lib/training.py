"""Training on the roofline: a training step's work, what fills memory, the gradient AllReduce
of data parallelism, and model FLOPs utilisation (MFU) against published figures.

The conventions (each one a named constant below, never a hidden factor):

* **Work.** The backward pass does twice the forward's multiply-accumulates (one product for the
  activations' gradients, one for the weights'), so a step is ``3 x`` the forward's FLOPs
  (:data:`BACKWARD_OVER_FORWARD` = 2). For a transformer whose forward is ``2 x N`` FLOPs per
  token (2 FLOPs per MAC, one MAC per parameter) that is ``6 x N x T`` per step of ``T`` tokens.
* **Bytes.** The backward moves twice the forward's bytes (it reads the saved activations and
  the output's gradient, writes the input's gradient, reads the weights and writes their
  gradients). The optimizer's update is a kernel of its own, memory-bound: it reads and writes
  every parameter's optimizer state once (:data:`UPDATE_BYTES_PER_PARAM`).
* **Memory.** Mixed-precision Adam holds per parameter fp16 weights (2 B) and gradients (2 B),
  an fp32 master copy (4 B) and Adam's two moments (4 + 4 B): 16 B (Rajbhandari et al. 2020,
  ZeRO, section 3.1), plus the activations saved for the backward pass.
* **Data parallelism.** Each step AllReduces the gradients (parameters x the gradients' bytes)
  across the group with lesson 6's alpha-beta model (``course_lib.topology.allreduce_time``):
  the bound overlaps it with the backward pass (the step is the larger of the two), the
  estimate without overlap adds it.

Pure roofline: ``time = max(FLOPs / peak, bytes / bandwidth)`` for each pass; no efficiency.

>>> from course_lib import Hardware, Models
>>> round(training_step_flops(Models.ResNet50, 1) / Models.ResNet50.flops_per_sample, 6)
3.0
>>> TRAINING_BYTES_PER_PARAM["adam-mixed"]
16
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["BACKWARD_OVER_FORWARD", "TRAINING_BYTES_PER_PARAM", "UPDATE_BYTES_PER_PARAM",
           "training_step_flops", "transformer_step_flops", "state_bytes", "largest_trainable",
           "TrainStep", "train_step", "data_parallel_step", "mfu",
           "TrainingMeasurement", "TRAINING_MEASUREMENTS", "CHIP_PEAKS"]

#: backward FLOPs over forward FLOPs (activations' and weights' gradients: one product each)
BACKWARD_OVER_FORWARD = 2
#: bytes held per parameter while training, by optimizer and precision (ZeRO, section 3.1):
#: adam-mixed = fp16 weights 2 + fp16 gradients 2 + fp32 master 4 + Adam's m 4 + v 4;
#: adam-fp32 = weights 4 + gradients 4 + m 4 + v 4; sgd-fp32 (momentum) = 4 + 4 + 4
TRAINING_BYTES_PER_PARAM = {"adam-mixed": 16, "adam-fp32": 16, "sgd-fp32": 12}
#: bytes the optimizer's update moves per parameter (reads, then writes back):
#: adam-mixed reads gradient 2, master 4, m 4, v 4 and writes master 4, m 4, v 4, fp16 weights 2;
#: adam-fp32 reads w, g, m, v (16) and writes w, m, v (12); sgd-fp32 reads w, g, momentum (12),
#: writes w, momentum (8)
UPDATE_BYTES_PER_PARAM = {"adam-mixed": 28, "adam-fp32": 28, "sgd-fp32": 20}
#: the gradients' bytes per parameter that data parallelism AllReduces
GRAD_BYTES_PER_PARAM = {"adam-mixed": 2, "adam-fp32": 4, "sgd-fp32": 4}
#: the precision each optimizer setting computes in (course_lib.precision names)
COMPUTE_PRECISION = {"adam-mixed": "fp16", "adam-fp32": "fp32", "sgd-fp32": "fp32"}


def training_step_flops(model, batch_size) -> float:
    """FLOPs of one training step of a CNN: forward + backward = 3 x the forward's.

    >>> from course_lib import Models
    >>> round(training_step_flops(Models.ResNet50, 32) / 1e9)      # 3 x 8.180 GFLOP x 32 images
    785
    """
    return (1 + BACKWARD_OVER_FORWARD) * model.flops_per_sample * batch_size


def transformer_step_flops(parameters, tokens) -> float:
    """The 6 x N x T rule: 2 FLOPs per parameter per token forward, twice that backward.

    >>> transformer_step_flops(1e9, 1e6) / 1e15
    6.0
    """
    return 2 * (1 + BACKWARD_OVER_FORWARD) * float(parameters) * float(tokens)


def state_bytes(parameters, optimizer: str = "adam-mixed") -> float:
    """Bytes of weights, gradients and optimizer state (no activations)."""
    return TRAINING_BYTES_PER_PARAM[_check(optimizer)] * float(parameters)


def largest_trainable(hardware, optimizer: str = "adam-mixed") -> float:
    """Parameters whose weights, gradients and optimizer states fill the chip's memory (in real,
    binary-sized bytes: ``memory_capacity_si``), before a single activation is stored.

    >>> from course_lib import Hardware
    >>> round(largest_trainable(Hardware.A100) / 1e9, 2)     # 80 GiB / 16 B
    5.37
    """
    return hardware.memory_capacity_si / TRAINING_BYTES_PER_PARAM[_check(optimizer)]


def _check(optimizer):
    if optimizer not in TRAINING_BYTES_PER_PARAM:
        raise ValueError(f"unknown optimizer setting {optimizer!r}; valid: {sorted(TRAINING_BYTES_PER_PARAM)}")
    return optimizer


@dataclass(frozen=True)
class TrainStep:
    """One training step of a CNN on one chip, pure roofline, pass by pass."""

    model: str
    hardware: str
    batch_size: int
    optimizer: str
    precision: str
    forward_flops: float
    forward_bytes: float
    update_bytes: float
    peak: float           # FLOP/s, the datasheet's dense figure
    bandwidth: float      # B/s, the datasheet's
    t_forward_compute: float   # s, solve()'s: FLOPs / (peak x its compute efficiency)
    t_forward_memory: float    # s, solve()'s: bytes / (bandwidth x its memory efficiency)
    memory_efficiency: float = 1.0

    @property
    def flops(self) -> float:
        return (1 + BACKWARD_OVER_FORWARD) * self.forward_flops

    @property
    def bytes(self) -> float:
        return (1 + BACKWARD_OVER_FORWARD) * self.forward_bytes + self.update_bytes

    @property
    def intensity(self) -> float:
        return self.flops / self.bytes

    @property
    def t_forward(self) -> float:
        return max(self.t_forward_compute, self.t_forward_memory)

    @property
    def t_backward(self) -> float:
        return BACKWARD_OVER_FORWARD * self.t_forward

    @property
    def t_update(self) -> float:
        return self.update_bytes / (self.bandwidth * self.memory_efficiency)

    @property
    def seconds(self) -> float:
        """Forward, backward and the update, one after another."""
        return self.t_forward + self.t_backward + self.t_update

    @property
    def bottleneck(self) -> str:
        return "compute" if self.t_forward_compute >= self.t_forward_memory else "memory"

    def __str__(self):
        return (f"training step: {self.model} on {self.hardware}, batch {self.batch_size}, {self.optimizer} "
                f"({self.precision} math; pure roofline unless course_lib.sensitivity.perturb says otherwise)\n"
                f"  FLOPs    3 x {self.forward_flops:.4g} = {self.flops:.4g}\n"
                f"  bytes    3 x {self.forward_bytes:.4g} + update {self.update_bytes:.4g} = {self.bytes:.4g}\n"
                f"  intensity {self.intensity:.1f} FLOP/B vs ridge {self.peak / self.bandwidth:.1f}\n"
                f"  forward {self.t_forward * 1e3:.3f} ms ({self.bottleneck}-bound) + backward "
                f"{self.t_backward * 1e3:.3f} ms + update {self.t_update * 1e3:.3f} ms = {self.seconds * 1e3:.3f} ms")


def train_step(model, hardware, batch_size: int, optimizer: str = "adam-mixed") -> TrainStep:
    """A CNN's training step on one chip: the forward pass as ``solve`` models it (weights once
    per batch, every layer's activations), the backward as 2x its FLOPs and bytes, and the
    optimizer's update as a memory-bound kernel over every parameter.

    >>> from course_lib import Hardware, Models
    >>> s = train_step(Models.ResNet50, Hardware.A100, 64)
    >>> s.bottleneck, round(s.flops / s.forward_flops, 6)       # fp16: its activations' bytes rule
    ('memory', 3.0)
    """
    from .roofline import solve

    precision = COMPUTE_PRECISION[_check(optimizer)]
    fwd = solve(model, hardware, batch_size=batch_size, precision=precision)
    return TrainStep(model=model.name, hardware=hardware.key, batch_size=int(batch_size), optimizer=optimizer,
                     precision=precision, forward_flops=float(fwd.flops_si), forward_bytes=float(fwd.bytes_si),
                     update_bytes=UPDATE_BYTES_PER_PARAM[optimizer] * float(model.parameters),
                     peak=hardware.peak_flops_si(precision), bandwidth=hardware.memory_bandwidth_si,
                     t_forward_compute=float(fwd.t_compute_si), t_forward_memory=float(fwd.t_memory_si),
                     memory_efficiency=float(fwd.knobs.memory_efficiency))


def data_parallel_step(model, hardware, batch_per_gpu: int, gpus: int, optimizer: str = "adam-mixed",
                       overlap: bool = True, allreduce=None) -> dict:
    """One data-parallel step on `gpus` chips of one board: each runs its own training step on
    `batch_per_gpu` samples, then the gradients (parameters x their bytes) are AllReduced with
    ``course_lib.topology.allreduce_time`` (the bound's latency unless `allreduce` names an
    implementation). ``overlap=True`` (the bound): the AllReduce hides behind the backward pass, so
    the step is the compute step or forward + max(backward, AllReduce) + update; ``False`` adds it.

    >>> from course_lib import Hardware, Models
    >>> d = data_parallel_step(Models.ResNet50, Hardware.A100, 64, 1)
    >>> d["t_allreduce"]
    0.0
    """
    from .topology import allreduce_time

    step = train_step(model, hardware, batch_per_gpu, optimizer)
    grad_bytes = GRAD_BYTES_PER_PARAM[optimizer] * float(model.parameters)
    t_ar = allreduce_time(hardware, grad_bytes, gpus, allreduce=allreduce) if gpus > 1 else 0.0
    if overlap:
        seconds = step.t_forward + max(step.t_backward, t_ar) + step.t_update
    else:
        seconds = step.seconds + t_ar
    return {"step": step, "gpus": gpus, "grad_bytes": grad_bytes, "t_allreduce": t_ar, "seconds": seconds,
            "samples_per_second": gpus * batch_per_gpu / seconds, "overlap": overlap}


def mfu(model_flops_per_step, step_seconds, chips, peak) -> float:
    """Model FLOPs utilisation: the model's FLOPs per step (6NT, no recomputation) over the time
    the chips could have done at their dense peak.

    >>> round(mfu(6e15, 10.0, 1000, 1e12), 3)
    0.6
    """
    return float(model_flops_per_step) / (float(step_seconds) * chips * float(peak))


# ---- published utilisation ------------------------------------------------------------------------
#: dense bf16 peaks of chips the zoo does not hold, with their source
CHIP_PEAKS = {
    "TPUv4": (275e12, "Google Cloud TPU v4 documentation: 275 TFLOP/s peak bf16 per chip; the PaLM "
                      "paper (Chowdhery et al. 2022, appendix B) computes its MFU against the same figure"),
}


@dataclass(frozen=True)
class TrainingMeasurement:
    """A published training utilisation: the fraction of the dense peak it reports."""

    model: str
    hardware: str         # a zoo key (Hardware.get) or a CHIP_PEAKS key
    chips: int | None     # None: not stated in the source quoted
    kind: str             # "mfu" (model FLOPs only) or "hfu" (recomputation counted too)
    value: float          # the fraction reported, of the dense bf16/fp16 peak
    setting: str
    source: str


_PALM = ("Chowdhery et al. 2022, 'PaLM: Scaling Language Modeling with Pathways', arXiv:2204.02311, "
         "section 4.1 and Table 3")
_MEGATRON_README = ("NVIDIA/Megatron-LM README, 'Training Speed and Scalability' (Korthikanti et al. 2022, "
                    "arXiv:2205.05198, 'Reducing Activation Recomputation in Large Transformer Models')")
_MEGATRON_2021 = ("Narayanan et al. 2021, 'Efficient Large-Scale Language Model Training on GPU Clusters Using "
                  "Megatron-LM', arXiv:2104.04473, abstract: 502 petaFLOP/s on 3072 GPUs, 52% of peak")

_KORTHIKANTI = ("Korthikanti et al. 2022, 'Reducing Activation Recomputation in Large Transformer Models', "
                "arXiv:2205.05198, section 6: the 530B model at 8-way data parallelism, gradient AllReduce "
                "not overlapped")


def _megatron_readme():
    # model size: (MFU, HFU), A100 80GB on Selene, data-parallel size 1 (the README's table)
    table = {"22B": (0.415, 0.437), "175B": (0.514, 0.528), "530B": (0.560, 0.570), "1T": (0.563, 0.570)}
    return tuple(
        TrainingMeasurement(f"GPT {size} (Megatron-LM)", "A100", None, kind, value,
                            f"a {size}-parameter GPT, benchmark run on Selene's A100 80GB GPUs, data-parallel size 1, "
                            f"tensor and pipeline parallel: {kind.upper()} {value:.1%}", _MEGATRON_README)
        for size, pair in table.items() for kind, value in zip(("mfu", "hfu"), pair))


TRAINING_MEASUREMENTS: tuple[TrainingMeasurement, ...] = (
    TrainingMeasurement("PaLM 540B", "TPUv4", 6144, "mfu", 0.462,
                        "PaLM 540B training on 6144 TPU v4 chips (two pods), model FLOPs utilisation "
                        "46.2% (hardware FLOPs utilisation 57.8% with rematerialisation)", _PALM),
    *_megatron_readme(),
    TrainingMeasurement("GPT 530B (Megatron-LM)", "A100", 2240, "mfu", 0.542,
                        "the 530B GPT at 8-way data parallelism on 2240 A100 GPUs, batch scaled with it: an "
                        "iteration from 37.83 s to 39.15 s, MFU from 56.0% to 54.2%", _KORTHIKANTI),
    TrainingMeasurement("GPT 1T (Megatron-LM)", "A100", 3072, "hfu", 502e15 / 3072 / 312e12,
                        "a 1-trillion-parameter GPT on 3072 A100 GPUs: 502 petaFLOP/s in all, 163 teraFLOP/s "
                        "per GPU against the A100's dense 312 TFLOP/s (recomputation counted)", _MEGATRON_2021),
)


def peak_of(key: str) -> float:
    """The dense half-precision peak (FLOP/s) the course holds for a chip: the zoo's fp16 figure
    (bf16's is the same on these chips), or CHIP_PEAKS for one the zoo lacks."""
    if key in CHIP_PEAKS:
        return CHIP_PEAKS[key][0]
    from .hardware import Hardware

    return Hardware.get(key).peak_flops_si("fp16")


# ---- the seeds' student report (003) ------------------------------------------------------------------
SEED_REPORT_SOURCE = ("the seeds' student report 003, 'Roofline Modeling' of ResNet-18/34/50 training with "
                      "PyTorch's ImageNet example, Table 1: operational intensity measured with Nsight Compute "
                      "(FP32 add, multiply and FMA instructions over DRAM sectors x 32 B); its batch is not "
                      "stated; its A100 is the 1555 GB/s (40GB) card")
#: (model, zoo chip) -> the report's measured intensity, FLOP/byte
SEED_REPORT_INTENSITY = {
    ("ResNet18", "V100"): 23.46, ("ResNet34", "V100"): 24.74, ("ResNet50", "V100"): 17.41,
    ("ResNet18", "A100_40GB"): 22.60, ("ResNet34", "A100_40GB"): 24.43, ("ResNet50", "A100_40GB"): 18.38,
}
