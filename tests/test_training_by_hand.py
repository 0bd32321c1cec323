"""Lesson 7 derived by hand: each graded answer from published constants typed here (torchvision's
multiply-accumulates and parameter counts, the models' config.json parameter counts, datasheet
peaks, bandwidths and nvidia-smi capacities, NCCL's measured latency), for the lesson's own
numbers and two variants each, against the declared questions' truths (issue 49).

By hand:

* a training step is 3 x the forward's FLOPs (backward = 2 x forward), 2 FLOPs per MAC;
* mixed-precision Adam holds 2 + 2 + 4 + 4 + 4 = 16 bytes per parameter;
* a compute-bound step's time is 3 x forward FLOPs / peak, plus the optimizer's update, a
  memory-bound kernel moving 20 B per parameter (SGD with momentum, fp32: reads w, g, m, writes
  w, m) or 28 B (mixed Adam: reads g 2, master 4, m 4, v 4; writes master 4, m 4, v 4, fp16 w 2);
* data parallelism adds one AllReduce of the fp16 gradients on HGX H100: NCCL's 27.5 us plus
  the bytes once over 450 GB/s (NVLink SHARP sums in the switch);
* the bound on the time to train is 6 x N x T over the group's dense fp16 peak.

torchvision's "GFLOPS" column counts multiply-accumulates (ResNet-50: 4.09), so these hand
values are within 0.3% of course_lib's layer-by-layer counts: the tolerance is 1%.
"""
import pytest

from course_lib import Models
from course_lib.questions import get

# torchvision.models docs (IMAGENET1K_V1 weights): GMACs per 224x224 image and parameter counts
GMACS = {"ResNet18": 1.81, "ResNet34": 3.66, "ResNet50": 4.09}
PARAMS = {"ResNet18": 11_689_512, "ResNet34": 21_797_672, "ResNet50": 25_557_032}
# Hugging Face config.json parameter counts (as the course's zoo records them)
LLM_PARAMS = {"Llama3_8B": 8_030_261_248, "Llama2_7B": 6_738_415_616, "Llama2_13B": 13_015_864_320}
# datasheets: dense peaks (FLOP/s) and bandwidths (B/s)
FP32 = {"V100": 15.7e12, "A100_40GB": 19.5e12}
FP16 = {"V100": 125e12, "A100_40GB": 312e12, "A100": 312e12, "H100": 989.4e12, "B200": 2250e12}
HBM = {"V100": 900e9, "A100_40GB": 1555e9, "H100": 3.35e12}
# nvidia-smi totals, MiB (A100 80GB: 80 GiB; H100 SXM public capture; V100 32GB with ECC)
MIB = {"A100": 81_920, "H100": 81_559, "V100": 32_510}
NCCL, NVLINK = 27.5e-6, 450e9            # HGX H100: NCCL 2.20.5 small-message latency; NVLink per direction


def _truth(qid, **givens):
    sol = get(qid).solution(**givens)
    (name,) = [n for n in get(qid).answer_names]
    return sol.truths[name].value


def _step_flops(model, batch):
    return 3 * 2 * GMACS[model] * 1e9 * batch


@pytest.mark.parametrize("model,batch,tflop", [
    ("ResNet50", 256, 3 * 2 * 4.09e9 * 256 / 1e12),     # 6.282: the lesson's own
    ("ResNet18", 64, 3 * 2 * 1.81e9 * 64 / 1e12),       # 0.695
    ("ResNet34", 128, 3 * 2 * 3.66e9 * 128 / 1e12),     # 2.811
])
def test_q1_step_flops_by_hand(model, batch, tflop):
    assert _truth("train_q1", model=model, batch=batch) == pytest.approx(tflop, rel=0.01)
    assert tflop == pytest.approx(_step_flops(model, batch) / 1e12)


@pytest.mark.parametrize("chip,billion", [
    ("A100", 81_920 * 2**20 / 16 / 1e9),                # 5.369: the lesson's own
    ("H100", 81_559 * 2**20 / 16 / 1e9),                # 5.345
    ("V100", 32_510 * 2**20 / 16 / 1e9),                # 2.131
])
def test_q2_largest_trainable_by_hand(chip, billion):
    assert _truth("train_q2", chip=chip) == pytest.approx(billion, rel=1e-4)


def _compute_bound_step(model, batch, peak, bandwidth, update_bytes_per_param):
    return _step_flops(model, batch) / peak + update_bytes_per_param * PARAMS[model] / bandwidth


@pytest.mark.parametrize("model,optimizer,batch", [
    ("ResNet50", "sgd-fp32", 256),                      # the lesson's own: the seeds' setting
    ("ResNet18", "sgd-fp32", 64),
    ("ResNet34", "adam-mixed", 256),
])
def test_q3_v100_over_a100_by_hand(model, optimizer, batch):
    from course_lib import Hardware
    from course_lib.training import train_step

    peaks, update = (FP32, 20) if optimizer == "sgd-fp32" else (FP16, 28)
    for chip in ("V100", "A100_40GB"):               # the premise: compute-bound on both
        assert train_step(Models.get(model), Hardware.get(chip), batch, optimizer).bottleneck == "compute"
    v = _compute_bound_step(model, batch, peaks["V100"], HBM["V100"], update)
    a = _compute_bound_step(model, batch, peaks["A100_40GB"], HBM["A100_40GB"], update)
    assert _truth("train_q3", model=model, optimizer=optimizer, batch=batch) == pytest.approx(v / a, rel=0.01)


def test_q3_the_lessons_own_is_the_fp32_peak_ratio():
    """ResNet-50, fp32, batch 256: 6.28 TFLOP / 15.7 TFLOP/s = 400.2 ms + 0.57 ms of update on the
    V100, 322.2 ms + 0.33 ms on the A100: 1.243, the peak ratio 19.5 / 15.7 = 1.242 to 0.1%."""
    assert _truth("train_q3", model="ResNet50", optimizer="sgd-fp32", batch=256) == pytest.approx(19.5 / 15.7, rel=0.002)


@pytest.mark.parametrize("model,batch,gpus", [
    ("ResNet34", 512, 8),                               # the lesson's own: 6.69
    ("ResNet34", 1024, 8),
    ("ResNet34", 512, 4),
])
def test_q4_data_parallel_speedup_by_hand(model, batch, gpus):
    from course_lib import Hardware
    from course_lib.training import train_step

    for b in (batch, batch // gpus):                 # the premise: compute-bound at both batches
        assert train_step(Models.get(model), Hardware.H100, b, "adam-mixed").bottleneck == "compute"
    one = _compute_bound_step(model, batch, FP16["H100"], HBM["H100"], 28)
    allreduce = NCCL + 2 * PARAMS[model] / NVLINK
    many = _compute_bound_step(model, batch // gpus, FP16["H100"], HBM["H100"], 28) + allreduce
    assert _truth("train_q4", model=model, batch=batch, gpus=gpus) == pytest.approx(one / many, rel=0.01)


def test_q4_the_lessons_own_in_numbers():
    """ResNet-34, 512 images: 11.38 + 0.18 ms on one H100; over 8, 1.42 + 0.18 ms and an AllReduce
    of 43.6 MB, 27.5 + 96.9 us: 11.56 / 1.73 = 6.69, short of 8."""
    one = 3 * 2 * 3.66e9 * 512 / 989.4e12 + 28 * 21_797_672 / 3.35e12
    many = 3 * 2 * 3.66e9 * 64 / 989.4e12 + 28 * 21_797_672 / 3.35e12 + 27.5e-6 + 2 * 21_797_672 / 450e9
    assert one / many == pytest.approx(6.68, abs=0.02)
    assert _truth("train_q4", model="ResNet34", batch=512, gpus=8) == pytest.approx(one / many, rel=0.01)


@pytest.mark.parametrize("model,chip,gpus,tokens", [
    ("Llama3_8B", "H100", 256, 10**12),                 # the lesson's own: 52.84 h
    ("Llama2_7B", "A100", 1024, 2 * 10**12),            # 70.3 h
    ("Llama2_13B", "B200", 256, 10**12),                # 37.7 h
])
def test_q5_time_to_train_bound_by_hand(model, chip, gpus, tokens):
    hours = 6 * LLM_PARAMS[model] * tokens / (gpus * FP16[chip]) / 3600
    assert _truth("train_q5", model=model, chip=chip, gpus=gpus, tokens=tokens) == pytest.approx(hours, rel=1e-6)


def test_q5_the_lessons_own_in_numbers():
    assert 6 * 8_030_261_248 * 1e12 / (256 * 989.4e12) / 3600 == pytest.approx(52.84, abs=0.01)
