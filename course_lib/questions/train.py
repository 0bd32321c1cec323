"""Lesson 7, "Training on the roofline": its graded questions (``train_q1``, ``train_q2``, ``train_q3``, ``train_q4``, ``train_q5``).

Each solver computes the truth with ``course_lib.training`` when it is called: a training step
is the forward pass as ``solve`` models it, a backward of twice its FLOPs and bytes, and the
optimizer's update as a memory-bound kernel; mixed-precision Adam holds 16 bytes per parameter;
data parallelism AllReduces the gradients with lesson 6's model (``course_lib.topology``).

Every question has per-student variants (LESSON.every_question_varies): the model and batch of
Q1, the chip of Q2, the model, optimizer and batch of Q3 (the seeds' experiment: V100 against
A100 40GB), the model, global batch and group of Q4 (HGX H100, NCCL's measured latency: an
estimate, not overlapped), the model, chip, group and tokens of Q5 (the bound: 6 x N x T at the
dense peak).
"""
from __future__ import annotations

from ..exercises.answer_forms import Number, Ratio, Reason
from .core import Solution, Truth, question
from .registry import Lesson

#: two graded ratios (Q3, Q4) must survive course_lib.sensitivity's changes; two written reflections
LESSON = Lesson("07_training", min_hidden_tests=5, min_reflections=2, min_robust_checks=2,
                every_question_varies=True, min_admissible_variants=4)

#: the seeds' experiment (003): PyTorch's ImageNet example, fp32, SGD with momentum, its default batch
SEED_CHIPS = ("V100", "A100_40GB")
RESNETS = ["ResNet18", "ResNet34", "ResNet50"]
#: Q4's board: HGX H100, whose NCCL small-message AllReduce time is measured
DP_CHIP, DP_ALLREDUCE = "H100", "nccl"


def _model(name):
    from .. import Models

    return Models.get(name)


def _chip(key):
    from .. import Hardware

    return Hardware.get(key)


def _model_words(name) -> str:
    m = _model(name)
    if m.kind == "cnn":
        return f"{m.name} ({m.parameters:,} parameters, {m.flops_per_sample / 1e9:.3f} GFLOP forward per image)"
    return f"{m.name} ({m.parameters:,} parameters)"


def _chip_words(key) -> str:
    hw = _chip(key)
    return (f"the {hw.name} ({hw.peak_flops_si('fp16') / 1e12:.4g} TFLOP/s dense fp16, "
            f"nvidia-smi memory {hw.memory_capacity_si / 2**20:,.0f} MiB)")


def _moves(solver, tol, **givens) -> str | None:
    """Why a variant's graded ratio is not asked: it moves past `tol` between the unfused and a
    fused engine's activation bytes, or under a standard change (None: it holds)."""
    from ..sensitivity import FUSION_RANGE, STANDARD, perturb

    was = solver(**givens)
    for change in FUSION_RANGE + STANDARD:
        with perturb(**change):
            now = solver(**givens)
        if abs(now / was - 1) > tol:
            return f"the ratio moves {now / was - 1:+.1%} under {change}: it would grade the convention"
    return None


def _far(truth, mistakes: dict, tol) -> dict:
    """Only the mistakes an answer can be told from (1.5 x the tolerance away from the truth)."""
    return {k: v for k, v in mistakes.items() if abs(v / truth - 1) >= 1.5 * tol}


# ---- Q1 -----------------------------------------------------------------------------------------
@question("train_q1", rule="by-hand",
          specs={"q1_step_tflop": Number("TFLOP", rel_tol=0.02)},
          givens={"model": "ResNet50", "batch": 256},
          space={"model": RESNETS, "batch": [64, 128, 256]},
          labels={"model": _model_words, "batch": "a batch of {value} images"})
def q1(model, batch):
    from ..training import BACKWARD_OVER_FORWARD, training_step_flops

    m = _model(model)
    fwd = m.flops_per_sample * batch
    truth = training_step_flops(m, batch)

    def work():
        print(f"forward : {m.flops_per_sample / 1e9:.3f} GFLOP per image x {batch} images = {fwd / 1e12:.3f} TFLOP")
        print(f"backward: {BACKWARD_OVER_FORWARD} x the forward (the activations' gradients and the weights' "
              f"gradients, one product each) = {BACKWARD_OVER_FORWARD * fwd / 1e12:.3f} TFLOP")
        print(f"step    : {fwd / 1e12:.3f} + {BACKWARD_OVER_FORWARD * fwd / 1e12:.3f} = {truth / 1e12:.3f} TFLOP "
              f"(the optimizer's update adds a few FLOPs per parameter: {m.parameters:,} parameters, "
              f"negligible beside it)")

    return Solution(
        {"q1_step_tflop": Truth(truth / 1e12,
                                mistakes={"forward-only": fwd / 1e12, "backward-as-forward": 2 * fwd / 1e12,
                                          "mac-as-1-flop": truth / 2e12},
                                explanation="Forward plus a backward that does twice its work: the gradient "
                                            "with respect to the activations and the one with respect to the "
                                            "weights are each a product as large as the forward's.")},
        hint="Start from the forward FLOPs per image (printed above) times the batch; then ask how many "
             "products of that size the backward pass computes.",
        work=work)


# ---- Q2 -----------------------------------------------------------------------------------------
@question("train_q2", rule="by-hand",
          specs={"q2_params_billion": Number(None, rel_tol=0.02)},
          givens={"chip": "A100"},
          space={"chip": ["A100", "H100", "H200", "B200", "MI300X", "V100"]},
          labels={"chip": _chip_words})
def q2(chip):
    from ..sensitivity import perturb
    from ..training import TRAINING_BYTES_PER_PARAM, largest_trainable

    hw = _chip(chip)
    per = TRAINING_BYTES_PER_PARAM["adam-mixed"]
    cap = hw.memory_capacity_si
    truth = largest_trainable(hw)
    with perturb(capacity="decimal"):
        decimal = _chip(chip).memory_capacity_si

    def work():
        print(f"per parameter: fp16 weights 2 + fp16 gradients 2 + fp32 master weights 4 + Adam's m 4 + v 4 "
              f"= {per} bytes")
        print(f"memory: {cap / 2**20:,.0f} MiB x 2^20 = {cap:.4g} B")
        print(f"{cap:.4g} B / {per} B = {truth:.4g} parameters = {truth / 1e9:.3f} billion, before one activation")

    return Solution(
        {"q2_params_billion": Truth(truth / 1e9,
                                    mistakes={"no-optimizer-state": [cap / 2 / 1e9, cap / 4 / 1e9],
                                              "gib-vs-gb": decimal / per / 1e9},
                                    explanation="Training keeps far more than the weights: their gradients, an "
                                                "fp32 master copy and Adam's two moments, 16 bytes a parameter "
                                                "in mixed precision, in the chip's real (binary) bytes.")},
        hint="Add up what mixed-precision Adam keeps for every parameter (weights, gradients, a master copy, "
             "two moments) in bytes, and divide the memory, in bytes, by it.",
        work=work)


# ---- Q3 -----------------------------------------------------------------------------------------
def _q3_ratio(model, optimizer, batch):
    from ..training import train_step

    m = _model(model)
    v, a = (train_step(m, _chip(c), batch, optimizer) for c in SEED_CHIPS)
    return v.seconds / a.seconds


Q3_TOL = 0.05


@question("train_q3", rule="prediction", reflection=1,
          specs={"q3_ratio": Ratio(rel_tol=Q3_TOL), "q3_reasoning": Reason()},
          givens={"model": "ResNet50", "optimizer": "sgd-fp32", "batch": 256},
          space={"model": RESNETS, "optimizer": ["sgd-fp32", "adam-mixed"], "batch": [64, 256]},
          labels={"model": _model_words,
                  "optimizer": lambda o: {"sgd-fp32": "fp32 with SGD and momentum, as the seed's report ran it",
                                          "adam-mixed": "mixed precision (fp16 math) with Adam"}[o],
                  "batch": "a batch of {value} images"},
          assumes=lambda **g: _moves(_q3_ratio, Q3_TOL / 2, **g))
def q3(model, optimizer, batch):
    from ..training import COMPUTE_PRECISION, train_step

    m = _model(model)
    v, a = (train_step(m, _chip(c), batch, optimizer) for c in SEED_CHIPS)
    truth = v.seconds / a.seconds
    prec = COMPUTE_PRECISION[optimizer]
    hv, ha = (_chip(c) for c in SEED_CHIPS)
    peak = ha.peak_flops_si(prec) / hv.peak_flops_si(prec)
    bw = ha.memory_bandwidth_si / hv.memory_bandwidth_si

    def work():
        for s, hw in ((v, hv), (a, ha)):
            print(f"{hw.name}: ridge {s.peak / s.bandwidth:.1f} FLOP/B ({prec}); step intensity "
                  f"{s.intensity:.1f} FLOP/B; forward {s.t_forward * 1e3:.2f} ms ({s.bottleneck}-bound) + backward "
                  f"{s.t_backward * 1e3:.2f} ms + update {s.t_update * 1e3:.3f} ms = {s.seconds * 1e3:.2f} ms")
        print(f"V100 / A100 = {v.seconds * 1e3:.2f} / {a.seconds * 1e3:.2f} = {truth:.3f} "
              f"(peak ratio {peak:.3f}, bandwidth ratio {bw:.3f})")

    return Solution(
        {"q3_ratio": Truth(truth, mistakes=_far(truth, {"bandwidth-ratio": bw, "peak-ratio": peak,
                                                        "inverted-ratio": 1 / truth}, Q3_TOL),
                           explanation="A training step of these CNNs at these batches sits above both chips' "
                                       "ridges, so it runs at the peak of the precision it computes in: the "
                                       "chips' peak ratio decides, not their bandwidths; the memory-bound "
                                       "update is a sliver beside it.")},
        hint="Compare the step's intensity with each chip's ridge at the precision asked (the setup cell prints "
             "the peaks and bandwidths); the roof that limits it gives the ratio.",
        work=work)


# ---- Q4 -----------------------------------------------------------------------------------------
def _q4_speedup(model, batch, gpus, overlap=False):
    from ..training import data_parallel_step

    m, hw = _model(model), _chip(DP_CHIP)
    one = data_parallel_step(m, hw, batch, 1, allreduce=DP_ALLREDUCE, overlap=overlap)["seconds"]
    many = data_parallel_step(m, hw, batch // gpus, gpus, allreduce=DP_ALLREDUCE, overlap=overlap)["seconds"]
    return one / many


Q4_TOL = 0.05


def _q4_assumes(model, batch, gpus):
    """Why a variant is not asked: its ratio moves with the conventions, or the AllReduce costs so
    little that perfect scaling would pass the check."""
    speedup = _q4_speedup(model, batch, gpus)
    if speedup > gpus * (1 - 1.5 * Q4_TOL):
        return f"the speedup {speedup:.3f} is within 1.5 x {Q4_TOL:.0%} of {gpus}: perfect scaling would pass"
    return _moves(_q4_speedup, Q4_TOL / 2, model=model, batch=batch, gpus=gpus)


@question("train_q4", rule="prediction", reflection=1,
          specs={"q4_speedup": Ratio(rel_tol=Q4_TOL), "q4_reasoning": Reason()},
          givens={"model": "ResNet34", "batch": 512, "gpus": 8},
          # ResNet-50's small per-GPU batches turn memory-bound with a fused engine's activation
          # bytes (the ratio would grade the convention): ResNet-18 and -34 at large global batches
          space={"model": ["ResNet18", "ResNet34"], "batch": [512, 1024], "gpus": [4, 8]},
          labels={"model": _model_words, "batch": "a global batch of {value} images",
                  "gpus": lambda n: f"from 1 to {n} GPUs"},
          assumes=lambda **g: _q4_assumes(**g))
def q4(model, batch, gpus):
    from ..topology import message_latency
    from ..training import data_parallel_step

    m, hw = _model(model), _chip(DP_CHIP)
    truth = _q4_speedup(model, batch, gpus)
    one = data_parallel_step(m, hw, batch, 1, allreduce=DP_ALLREDUCE, overlap=False)
    many = data_parallel_step(m, hw, batch // gpus, gpus, allreduce=DP_ALLREDUCE, overlap=False)
    overlapped = _q4_speedup(model, batch, gpus, overlap=True)

    def work():
        print(f"1 GPU, {batch} images: step {one['seconds'] * 1e3:.3f} ms")
        s = many["step"]
        print(f"{gpus} GPUs, {batch // gpus} images each: step {s.seconds * 1e3:.3f} ms "
              f"(forward {s.bottleneck}-bound) + AllReduce of {many['grad_bytes'] / 1e6:.1f} MB of fp16 gradients "
              f"= NCCL's {message_latency(hw, gpus, DP_ALLREDUCE) * 1e6:.1f} us + bytes / "
              f"{hw.interconnect_bandwidth_si / 1e9:.0f} GB/s = {many['t_allreduce'] * 1e6:.1f} us, "
              f"not overlapped: {many['seconds'] * 1e3:.3f} ms")
        print(f"speedup = {one['seconds'] * 1e3:.3f} / {many['seconds'] * 1e3:.3f} = {truth:.3f} "
              f"(overlapped with the backward pass, the bound: {overlapped:.3f})")

    return Solution(
        {"q4_speedup": Truth(truth, mistakes=_far(truth, {"no-gradient-allreduce": float(gpus),
                                                          "inverted-ratio": 1 / truth}, Q4_TOL),
                             explanation="Splitting a fixed batch divides each GPU's work by N (less, once its "
                                         "share is small enough for the weights' bytes to matter), but every "
                                         "step adds an AllReduce of all the gradients that does not shrink "
                                         "with N.")},
        hint="One GPU's step with the whole batch against N GPUs' steps with 1/N of it each, plus one AllReduce "
             "of every parameter's fp16 gradient (latency + bytes / link bandwidth) added after the backward.",
        work=work)


# ---- Q5 -----------------------------------------------------------------------------------------
@question("train_q5", rule="by-hand",
          specs={"q5_hours": Number("h", rel_tol=0.02)},
          givens={"model": "Llama3_8B", "chip": "H100", "gpus": 256, "tokens": 10**12},
          space={"model": ["Llama3_8B", "Llama2_7B", "Llama2_13B"], "chip": ["A100", "H100", "B200"],
                 "gpus": [256, 1024], "tokens": [10**12, 2 * 10**12]},
          labels={"model": _model_words, "chip": _chip_words, "gpus": "{value} GPUs",
                  "tokens": lambda t: f"{t / 1e12:g} trillion training tokens"})
def q5(model, chip, gpus, tokens):
    from ..training import TRAINING_MEASUREMENTS, peak_of, transformer_step_flops

    m, hw = _model(model), _chip(chip)
    flops = transformer_step_flops(m.parameters, tokens)
    peak = hw.peak_flops_si("fp16")
    seconds = flops / (gpus * peak)

    def work():
        print(f"work : 6 x {m.parameters:.4g} parameters x {tokens:.3g} tokens = {flops:.4g} FLOP")
        print(f"bound: {flops:.4g} / ({gpus} x {peak:.4g} FLOP/s) = {seconds:.4g} s = {seconds / 3600:.2f} hours "
              "(every GPU at its dense peak, nothing else)")
        for r in TRAINING_MEASUREMENTS:
            if r.kind == "mfu":
                print(f"at {r.model}'s published MFU of {r.value:.1%} ({r.hardware}, {peak_of(r.hardware) / 1e12:.0f} "
                      f"TFLOP/s): {seconds / r.value / 3600:.1f} hours")

    return Solution(
        {"q5_hours": Truth(seconds / 3600, mistakes={"forward-only": seconds / 3 / 3600,
                                                     "mac-as-1-flop": seconds / 2 / 3600},
                           explanation="6 FLOPs per parameter per token (2 forward, 4 backward) over the "
                                       "group's dense peak: a bound that real runs reach at their MFU, "
                                       "about half of it.")},
        hint="Two FLOPs per parameter per token forward, twice that backward; divide by the group's dense peak "
             "(GPUs x the chip's fp16 TFLOP/s) and convert seconds to hours.",
        work=work)


TAKEAWAYS = """\
* A training step is about three forward passes: the backward pass computes two products as
  large as the forward's (the activations' gradients and the weights'); for a transformer that
  is 6 FLOPs per parameter per token.
* The optimizer's update is a kernel of its own that reads and writes every parameter's state:
  memory-bound, small beside a large batch's step, not beside a small one's.
* Training fills memory with far more than the weights: mixed-precision Adam keeps 16 bytes per
  parameter (weights, gradients, a master copy, two moments) before a single activation, so a
  chip trains a model several times smaller than it can serve.
* The seeds' ResNet training steps sit above both chips' ridges at the batches they run: they go
  at the peak of the precision they compute in, so the peak ratio decides between V100 and A100.
  The report's measured intensities sit far below the roofline's, and its hypothesis of a
  memory-bound ResNet-18 counted the image, not the layers' activations.
* Data parallelism adds one AllReduce of every gradient per step, a cost that does not shrink as
  GPUs are added: splitting a fixed batch stops paying once each GPU's share is too small to
  hide it; overlapping it with the backward pass is the bound.
* Model FLOPs utilisation is the 6NT bound over the time a run really took: the published
  figures (PaLM 46.2%, Megatron-LM 56.3%) sit well below the bound, never above it.
"""
