"""course_lib.training: a training step's work and bytes, the memory it holds, data parallelism's
AllReduce, and the published utilisation figures, each at or below the course's bound (issue 49)."""
import pytest

from course_lib import Hardware, Models, solve
from course_lib.sensitivity import perturb
from course_lib import training as T


def test_a_step_is_three_forwards():
    m = Models.ResNet34
    assert T.training_step_flops(m, 64) == pytest.approx(3 * 64 * m.flops_per_sample)
    assert T.transformer_step_flops(8e9, 4096) == pytest.approx(6 * 8e9 * 4096)


def test_the_step_stands_on_solve():
    """Forward = solve()'s FLOPs and bytes; backward twice both; the update 28 B per parameter
    (mixed Adam) over the bandwidth, after them."""
    m, hw = Models.ResNet50, Hardware.A100
    s = T.train_step(m, hw, 32)
    fwd = solve(m, hw, batch_size=32, precision="fp16")
    assert s.forward_flops == pytest.approx(fwd.flops_si) and s.forward_bytes == pytest.approx(fwd.bytes_si)
    assert s.flops == pytest.approx(3 * fwd.flops_si)
    assert s.bytes == pytest.approx(3 * fwd.bytes_si + 28 * m.parameters)
    assert s.t_update == pytest.approx(28 * m.parameters / 2.039e12)
    assert s.seconds == pytest.approx(3 * max(fwd.flops_si / 312e12, fwd.bytes_si / 2.039e12) + s.t_update)
    assert "no efficiency" not in str(s) and "pure roofline" in str(s)


def test_the_step_sees_the_perturbation():
    m = Models.ResNet18
    base = T.train_step(m, Hardware.V100, 256, "sgd-fp32")
    with perturb(compute_efficiency=0.5):
        slow = T.train_step(m, Hardware.get("V100"), 256, "sgd-fp32")
    assert base.bottleneck == "compute"
    assert slow.t_forward == pytest.approx(2 * base.t_forward)


def test_memory_per_parameter():
    assert T.TRAINING_BYTES_PER_PARAM["adam-mixed"] == 2 + 2 + 4 + 4 + 4
    assert T.state_bytes(1e9) == pytest.approx(16e9)
    assert T.largest_trainable(Hardware.A100) == pytest.approx(80 * 2**30 / 16)
    with pytest.raises(ValueError):
        T.state_bytes(1e9, "adagrad")


def test_data_parallel_allreduce_overlapped_or_added():
    """The gradients' AllReduce (fp16, 2 B a parameter) with lesson 6's model; overlapped it hides
    behind the backward pass (never slower than added), one GPU has none."""
    from course_lib.topology import allreduce_time

    m, hw = Models.ResNet50, Hardware.H100
    assert T.data_parallel_step(m, hw, 64, 1)["t_allreduce"] == 0.0
    over = T.data_parallel_step(m, hw, 32, 8)
    added = T.data_parallel_step(m, hw, 32, 8, overlap=False)
    est = T.data_parallel_step(m, hw, 32, 8, overlap=False, allreduce="nccl")
    assert over["t_allreduce"] == pytest.approx(allreduce_time(hw, 2 * m.parameters, 8))
    assert over["seconds"] <= added["seconds"] < est["seconds"]
    assert added["seconds"] == pytest.approx(over["step"].seconds + over["t_allreduce"])
    assert est["t_allreduce"] == pytest.approx(27.5e-6 + 2 * m.parameters / 450e9)


def test_mfu():
    assert T.mfu(6e15, 10.0, 1000, 1e12) == pytest.approx(0.6)


@pytest.mark.parametrize("row", T.TRAINING_MEASUREMENTS, ids=lambda r: f"{r.model}-{r.kind}")
def test_every_published_utilisation_is_at_or_below_the_bound(row):
    """The bound is MFU (and HFU) = 100% of the course's dense peak: a published run's FLOP/s per
    chip (its reported fraction x the peak its source used) is never above the course's peak."""
    assert row.source and row.setting
    peak = T.peak_of(row.hardware)
    achieved = row.value * (312e12 if row.hardware == "A100" else peak)   # the A100's dense peak, as its sources use
    assert 0 < achieved <= peak
    assert row.kind in ("mfu", "hfu")


def test_the_published_figures_are_the_sources():
    palm = [r for r in T.TRAINING_MEASUREMENTS if r.model == "PaLM 540B"]
    assert [(r.kind, r.value, r.chips) for r in palm] == [("mfu", 0.462, 6144)]
    assert T.peak_of("TPUv4") == 275e12 and T.peak_of("A100") == 312e12
    hfu = [r for r in T.TRAINING_MEASUREMENTS if r.chips == 3072 and r.kind == "hfu"][0]
    assert hfu.value * 312e12 == pytest.approx(163e12, rel=0.005)      # 502 PFLOP/s / 3072 GPUs
    for size in ("22B", "175B", "530B", "1T"):                         # model FLOPs never above hardware FLOPs
        rows = {r.kind: r.value for r in T.TRAINING_MEASUREMENTS if r.model == f"GPT {size} (Megatron-LM)" and r.chips is None}
        assert rows["mfu"] <= rows["hfu"]


def test_the_seeds_report_is_below_the_roofline_intensity():
    """The report's measured intensities are below the roofline's step intensity (batch 256, fp32):
    the gap the lesson explains, never the other way round."""
    for (name, chip), measured in T.SEED_REPORT_INTENSITY.items():
        assert T.train_step(Models.get(name), Hardware.get(chip), 256, "sgd-fp32").intensity > measured
