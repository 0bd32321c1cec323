"""Lesson 1, "Hello, roofline": its graded questions (``hello_q1`` ... ``hello_q8``).

Each solver computes the truth with course_lib when it is called (at grading time too), the
answer each classic mistake leads to, and the arithmetic its verify cell prints. A verify
cell's arithmetic shows nothing a later question asks for: Q4's shows the bytes against the
byte budget of the ridge, not the intensity Q5 asks for.
"""
from __future__ import annotations

from ..exercises.answer_forms import Choice, Number, Reason, Regime
from ..formatting import fmt_batch
from .core import Solution, Truth, question
from .registry import Lesson

#: every question gives each student their own numbers, or says why not (same_for_everyone=):
#: python -m autograder lint checks it
LESSON = Lesson("01_hello_roofline", every_question_varies=True)

CHIP, MODEL = "A100", "ResNet50"


#: the chips a variant may ask about (their datasheets are in the zoo, with fp16 peaks)
CHIPS = ("A100", "V100", "H100", "H200", "B200", "MI300X", "L4", "T4", "A100_40GB", "JetsonAGXOrin")


def _resnet(chip=CHIP, batch=1, precision="fp16"):
    """ResNet-50 on `chip` at `batch` (pure roofline), the model and the chip."""
    from .. import Hardware, Models, solve

    model, hw = Models.get(MODEL), Hardware.get(chip)
    return solve(model, hw, batch_size=batch, precision=precision), model, hw


def chip_words(key: str) -> str:
    """A chip as a given cell states it: its name and the two fp16 datasheet figures."""
    from .. import Hardware

    hw = Hardware.get(key)
    return (f"the {hw.name} ({hw.peak_flops('fp16').m:.4g} TFLOP/s dense fp16, "
            f"{hw.memory_bandwidth_si / 1e12:.4g} TB/s)")


def _precision(p: str) -> str:
    from ..precision import bytes_per_element

    size = bytes_per_element(p)
    return f"{p} ({size:g} byte{'' if size == 1 else 's'} per element)"


def _act_bytes(model) -> float:
    """fp16 activation bytes of one image, every layer's input and output (the notebook's act_bytes)."""
    return 2 * sum(layer.activations * layer.count for layer in model.layers)


def _lowest_ridge():
    """The zoo chip with the lowest fp16 ridge point and that ridge (Q1's verify prints both)."""
    from .. import Hardware

    ridges = {h.key: h.ridge_point_si("fp16") for h in Hardware.all() if "fp16" in h.precisions}
    lowest = min(ridges, key=ridges.get)
    return lowest, ridges[lowest]


def _regime_moves_with_fusion(solver, **givens):
    """Why a variant's graded regime depends on the fusion convention (None: it holds from a fused
    engine's activation traffic to an unfused one's, course_lib.sensitivity.FUSION_RANGE)."""
    from ..sensitivity import FUSION_RANGE, perturb

    truth = solver(**givens)
    for change in FUSION_RANGE:
        with perturb(**change):
            moved = solver(**givens)
        if moved != truth:
            return (f"the answer is {truth} with unfused activations but {moved} with activation bytes "
                    f"x{change['activation_bytes']:g} (a fused engine's): it would grade the convention")
    return None


#: questions whose answer is about activation traffic itself, and so depends on how much of it
#: reaches memory: each states the convention it assumes in its text (the sentence below, which
#: the robustness test finds in the question) instead of being re-solved over the
#: fusion range (course_lib.sensitivity.FUSION_RANGE). A fused engine keeps a layer's output in
#: cache for the next layer and moves about half the activation bytes: F / S_act (Q7) doubles, and
#: the spatial convs of ResNet-50's first stage (Q8) cross the ridge.
UNFUSED_CONVENTION = {
    "hello_q7": "activations counted unfused, every layer reading its input from memory and writing its "
                "output back",
    "hello_q8": "activations counted unfused, every layer reading its input from memory and writing its "
                "output back",
}


# ---- Q1 -----------------------------------------------------------------------------------------
@question("hello_q1", rule="by-hand", specs={"q1_intensity": Number("FLOP/byte", rel_tol=0.02)},
          givens={"n": 1_000_000, "precision": "fp16"},
          space={"n": [1_000_000, 2_000_000, 4_000_000], "precision": ["fp16", "fp32", "fp8"]},
          labels={"n": "n = {value:,} elements", "precision": _precision})
def q1(n, precision):
    from ..models import dot
    from ..precision import bytes_per_element

    k = dot(n)
    size = bytes_per_element(precision)
    truth = k.flops_per_sample / k.bytes(precision)
    # the bytes-per-element slip: every element counted as 1 byte, or (for a 1-byte type) as fp16's 2
    slip = k.flops_per_sample / k.bytes("fp16" if size == 1 else "int8")

    def work():
        print(f"FLOPs     = 2 x {n:,}            = {k.flops_per_sample:.6g}")
        print(f"bytes     = {size:g} B x (2 x {n:,} + 1) = {k.bytes(precision):.7g}")
        print(f"intensity = {k.flops_per_sample:.6g} / {k.bytes(precision):.7g} = {truth:.4g} FLOP/byte")
        lowest, ridge = _lowest_ridge()
        print(f"\nLowest fp16 ridge point in the hardware zoo: {lowest}, {ridge:.0f} FLOP/byte: "
              f"{ridge / truth:.0f} times the dot product's intensity.")

    return Solution(
        {"q1_intensity": Truth(truth, mistakes={"mac-as-1-flop": (k.flops_per_sample / 2) / k.bytes(precision),
                                                "bytes-per-element": slip},
                               explanation=f"Count 2 FLOPs per multiply-accumulate and {size:g} bytes per "
                                           f"{precision} element; both vectors are read and the result is "
                                           "written.")},
        hint=f"FLOPs: n multiply-accumulates; bytes: both vectors read and the result written, at {size:g} "
             f"bytes per {precision} element.",
        work=work)


# ---- Q2 -----------------------------------------------------------------------------------------
@question("hello_q2", rule="by-hand", specs={"q2_ridge": Number("FLOP/byte", rel_tol=0.02)},
          givens={"chip": CHIP}, space={"chip": list(CHIPS)}, labels={"chip": chip_words},
          assumes=lambda chip: ("Q1's verify prints this chip's ridge, Q2's answer" if chip == _lowest_ridge()[0]
                                else None))
def q2(chip):
    from .. import Hardware

    hw = Hardware.get(chip)
    ridge = hw.ridge_point("fp16")
    peak, bw = hw.peak_flops_si("fp16"), hw.memory_bandwidth_si

    def work():
        print(f"ridge = {peak:.4g} FLOP/s / {bw:.4g} byte/s = {peak / bw:.1f} FLOP/byte")

    return Solution(
        {"q2_ridge": Truth(ridge, mistakes={"mac-as-1-flop": ridge / 2,            # a peak read as MAC/s
                                            "sparse-peak": 2 * ridge,              # the with-sparsity headline
                                            "unit-prefix": [ridge * 1e3, ridge / 1e3],
                                            "inverted-ratio": 1 / ridge.m},        # bandwidth / peak
                           explanation="TFLOP/s over TB/s: the 10^12 prefixes cancel. Use the dense peak, "
                                       "which counts 2 FLOPs per multiply-accumulate.")},
        hint="Divide the dense fp16 peak in FLOP/s by the bandwidth in byte/s.",
        work=work)


# ---- Q3 -----------------------------------------------------------------------------------------
Q3_SIZES = (16, 64, 128, 256, 1024)
Q3_K = 4096            # the weight matrix's inner dimension (a variant changes the chip and N)


@question("hello_q3", rule="prediction", reflection=1,
          specs={"q3_prediction": Choice(*Q3_SIZES), "q3_reasoning": Reason()},
          givens={"chip": CHIP, "n": 4096, "k": Q3_K},
          space={"chip": ["A100", "H100", "B200", "L4"], "n": [4096, 8192]},
          labels={"chip": chip_words, "n": "N = {value}, K = " + str(Q3_K)})
def q3(chip, n, k):
    from .. import Hardware, solve
    from ..models import matmul

    hw = Hardware.get(chip)
    runs = {m: solve(matmul(m, n, k), hw) for m in Q3_SIZES}
    truth = min(m for m in Q3_SIZES if runs[m].bottleneck == "compute-bound")
    ridge = hw.ridge_point_si("fp16")

    def first_above(line, scale=1.0):
        """The smallest listed M whose intensity (x scale) reaches `line`, or None."""
        return min((m for m in Q3_SIZES if runs[m].arithmetic_intensity.m * scale >= line), default=None)

    def work():
        print(f"{'M':>5} {'FLOP/byte':>10} {'time':>11}   regime (ridge {ridge:.1f} FLOP/byte)")
        for m in (1, *Q3_SIZES, 4096):
            p = solve(matmul(m, n, k), hw)
            print(f"{m:>5} {p.arithmetic_intensity.m:>10.1f} {p.latency.to('us').m:>8.2f} us   {p.bottleneck}")
        if n == k:      # I(M) = n M / (2 M + n) for a square weight matrix
            m_star = n * ridge / (n - 2 * ridge)
            print(f"\n{n} M / (2 M + {n}) = {ridge:.1f}  ->  M* = {n} x {ridge:.1f} / ({n} - 2 x {ridge:.1f}) "
                  f"= {m_star:.1f} rows")
        else:           # I(M) = M N K / (M K + K N + M N)
            m_star = ridge * k * n / (n * k - ridge * (n + k))
            print(f"\nM N K / (M K + K N + M N) = {ridge:.1f}  ->  M* = ridge K N / (N K - ridge (N + K)) "
                  f"= {m_star:.1f} rows")

    return Solution(
        {"q3_prediction": Truth(truth, mistakes={"sparse-peak": first_above(2 * ridge),
                                                 "mac-as-1-flop": [first_above(ridge / 2),
                                                                   first_above(ridge, scale=0.5)]},
                                explanation="The weight matrix is read once however large M is, so each "
                                            "weight is reused M times: intensity grows with M. Set I(M) "
                                            "equal to the ridge and solve for M.")},
        hint="Set I(M) equal to the ridge point and solve for M; then take the first listed size above it.",
        work=work)


# ---- Q4 -----------------------------------------------------------------------------------------
def _weights_only_trap(chip, batch):
    """Why Q4 would not be worth asking (None: it is): counting the weights alone must give the
    other regime, the trap the question is about."""
    p, _, hw = _resnet(chip, batch)
    weights_only = p.flops_si / p.bytes_breakdown["weights"].m_as("B")
    if (weights_only >= hw.ridge_point_si("fp16")) == (p.bottleneck == "compute-bound"):
        return f"counting the weights alone gives the true regime on the {chip} at batch {batch}: no trap to ask about"
    return _regime_moves_with_fusion(lambda chip, batch: _resnet(chip, batch)[0].bottleneck, chip=chip, batch=batch)


@question("hello_q4", rule="prediction", reflection=1, specs={"q4_prediction": Regime(), "q4_reasoning": Reason()},
          givens={"chip": CHIP, "batch": 1},
          space={"chip": list(CHIPS), "batch": [1, 2]},
          labels={"chip": chip_words, "batch": "batch {value}"},
          assumes=_weights_only_trap)
def q4(chip, batch):
    p, model, hw = _resnet(chip, batch)
    ridge = hw.ridge_point_si("fp16")
    weights = p.bytes_breakdown["weights"].m_as("B")
    weights_only = p.flops_si / weights                          # FLOPs per weight byte
    budget = p.flops_si / ridge                                  # the bytes at which I = ridge

    def work():
        # the bytes against the ridge's byte budget: the intensity itself is Q5's by-hand answer
        print(f"Byte budget: to be compute-bound, F FLOPs may move at most F / ridge = {p.flops_si:.4g} / "
              f"{ridge:.1f} = {budget:.4g} B.")
        act = p.bytes_si - weights
        print(f"weights only:          {weights:.4g} B, {'under' if weights <= budget else 'over'} the budget "
              f"(F / weight bytes = {weights_only:.1f} FLOP/byte, {'above' if weights_only >= ridge else 'below'} "
              "the ridge)")
        print(f"weights + activations: {weights:.4g} + {act:.4g} B, "
              f"{'under' if p.bytes_si <= budget else 'over'} the budget -> {p.bottleneck}")

    return Solution(
        {"q4_prediction": Truth(p.bottleneck, mistakes={
            "weights-only": "compute-bound" if weights_only >= ridge else "memory-bound"},
            explanation="Count every byte the layers move: each reads its input and writes its output "
                        "as well as reading its weights. Compare FLOPs per byte with the ridge.")},
        hint="Compare FLOPs per byte moved with the ridge point, counting every byte the layers move.",
        work=work)


# ---- Q5 -----------------------------------------------------------------------------------------
@question("hello_q5", rule="by-hand",
          specs={"q5_intensity": Number("FLOP/byte", rel_tol=0.02), "q5_latency_us": Number("us", rel_tol=0.02)},
          givens={"chip": CHIP, "batch": 1},
          space={"chip": ["A100", "V100", "H100", "H200", "L4", "T4"], "batch": [1, 2]},
          labels={"chip": chip_words, "batch": "batch {value}"})
def q5(chip, batch):
    from .. import Q_

    p, model, hw = _resnet(chip, batch)
    weights = p.bytes_breakdown["weights"].m_as("B")

    def work():
        act = _act_bytes(model)
        per_batch = "act_bytes" if batch == 1 else f"{batch} x act_bytes"
        print(f"bytes = 2 x params + {per_batch} = {2 * model.parameters:.4g} + {batch * act:.4g} "
              f"= {p.bytes_si:.4g} B\n")
        print(p)

    return Solution(
        {"q5_intensity": Truth(p.arithmetic_intensity,
                               mistakes={"weights-only": p.flops_si / weights,
                                         "mac-as-1-flop": p.arithmetic_intensity / 2},
                               explanation="Bytes = 2 x params (once per batch) + act_bytes per image; "
                                           "intensity = FLOPs / bytes."),
         "q5_latency_us": Truth(p.latency,
                                mistakes={"other-roof": min(p.t_compute, p.t_memory),
                                          "weights-only": Q_(weights / hw.memory_bandwidth_si, "s"),
                                          "unit-prefix": [p.latency * 1e3, p.latency / 1e3]},
                                explanation="Latency = the larger of F / peak and bytes / bandwidth, in "
                                            "microseconds. That is the whole-model bound, a lower bound: "
                                            "charged each its own max and summed, the layers take "
                                            f"{p.layerwise_latency.to('us').m:.1f} us, since a memory-bound "
                                            "layer cannot lend its idle math to a compute-bound one.")},
        hint="Bytes are the weights once plus each image's activations; the roofline latency is the larger "
             "of FLOPs / peak and bytes / bandwidth, in microseconds.",
        work=work)


# ---- Q6 -----------------------------------------------------------------------------------------
@question("hello_q6", rule="prediction", reflection=1,
          min_variants=3,     # F / S_act changes with the element size only: fp32, fp16, int8
          specs={"q6_limit": Number("FLOP/byte", rel_tol=0.02), "q6_reasoning": Reason()},
          givens={"precision": "fp16"},
          space={"precision": ["fp16", "fp32", "int8"]},    # the element sizes a CNN engine runs (int8 too)
          labels={"precision": _precision})
def q6(precision):
    import numpy as np

    from .. import intensity_limit

    batch1, model, hw = _resnet(precision=precision)
    limit = intensity_limit(model, precision)
    # act_bytes above is fp16's: a limit that forgets to rescale it to this precision
    slip = {} if precision == "fp16" else {"bytes-per-element": intensity_limit(model, "fp16")}

    def work():
        from .. import solve

        from ..precision import bytes_per_element

        batches = 2 ** np.arange(0, 13)                          # 1, 2, 4, ..., 4096
        sweep = solve(model, hw, batch_size=batches, precision=precision)
        print(f"ResNet-50 on the {hw.key}, {precision}:")
        for b, i, regime in zip(batches, sweep.arithmetic_intensity.m, sweep.bottleneck):
            print(f"batch {b:>5}: intensity {i:6.1f} FLOP/byte   {regime}")
        f, act = model.flops_per_sample, _act_bytes(model) / 2 * bytes_per_element(precision)
        print(f"\nlimit as b grows: F / S_act = {f:.4g} / {act:.4g} = {f / act:.1f} FLOP/byte "
              f"(course_lib: intensity_limit = {limit.m:.1f})")

    return Solution(
        {"q6_limit": Truth(limit, mistakes={"weights-per-sample": batch1.arithmetic_intensity,  # weights read per image
                                            "mac-as-1-flop": limit / 2, **slip},
                           explanation="Batching shares the weights, not the activations: every image "
                                       "still reads and writes its own feature maps, so b F / (W + b S_act) "
                                       "tends to F / S_act.")},
        hint="Let b grow in I(b) = b F / (W + b S_act): which part of the bytes stops mattering?",
        work=work)


# ---- Q7 -----------------------------------------------------------------------------------------
@question("hello_q7", rule="prediction", reflection=1, specs={"q7_prediction": Regime(), "q7_reasoning": Reason()},
          givens={"chip": "H100", "batch": 1024},
          space={"chip": ["H100", "H200", "B200", "MI300X"], "batch": [256, 1024, 4096]},   # chips faster than the A100
          labels={"chip": chip_words, "batch": "batch {value}"})
def q7(chip, batch):
    from .. import Hardware, crossover_batch, intensity_limit, solve

    p, model, hw = _resnet(chip, batch)
    weights_only = p.flops_si / p.bytes_breakdown["weights"].m_as("B")   # as if batching left only the weights

    def work():
        limit = intensity_limit(model).m
        print(f"ResNet-50's intensity limit F / S_act = {limit:.1f} FLOP/byte\n")
        for other in dict.fromkeys((chip, "A100", "V100")):
            h = Hardware.get(other)
            run = solve(model, h, batch_size=batch)
            ridge = h.ridge_point_si("fp16")
            print(f"{h.name:22s} ridge {ridge:6.1f} ({ridge / limit - 1:+5.0%} vs the limit); batch {batch}: "
                  f"intensity {run.arithmetic_intensity.m:6.1f} -> {run.bottleneck}; "
                  f"crossover batch {fmt_batch(crossover_batch(model, h))}")

    return Solution(
        {"q7_prediction": Truth(p.bottleneck, mistakes={
            "weights-only": "compute-bound" if weights_only >= hw.ridge_point_si("fp16") else "memory-bound"},
            explanation="The limit F / S_act belongs to the model and its precision (Q6; fp16 here), the "
                        "ridge to the chip: a batch can only clear a ridge that sits below the limit.")},
        hint="Compare the model's fp16 intensity limit (F / S_act, as in Q6) with this chip's ridge point.",
        work=work)


# ---- Q8 -----------------------------------------------------------------------------------------
Q8_LAYERS = ("conv1", "layer1.0.conv2", "layer4.0.conv2", "fc")


@question("hello_q8", rule="prediction", reflection=1,
          specs={"q8_prediction": Choice(*Q8_LAYERS), "q8_reasoning": Reason()},
          givens={"chip": CHIP}, space={"chip": list(CHIPS)}, labels={"chip": chip_words})
def q8(chip):
    p, model, hw = _resnet(chip)
    layers = p.layers
    rows = {r["name"]: r for r in layers}
    params = {layer.name: layer.params for layer in model.layers}
    compute_bound = [name for name in Q8_LAYERS if rows[name]["bottleneck"] == "compute-bound"]
    if len(compute_bound) != 1:
        raise ValueError(f"hello_q8 assumes exactly one listed layer is compute-bound; on the {chip} course_lib "
                         f"finds {compute_bound}")

    def work():
        for name in Q8_LAYERS:
            print(f"{name:15s} intensity {rows[name]['intensity']:6.1f} FLOP/byte -> {rows[name]['bottleneck']}")
        print(f"\n{len(layers.memory_bound())} of {len(layers)} layers are memory-bound at batch 1. "
              "The lowest intensities:")
        for row in sorted(layers, key=lambda r: r["intensity"])[:8]:
            print(f"  {row['name']:22s} {row['kind']:5s} {row['intensity']:6.1f} FLOP/byte, "
                  f"{row['bytes'] / 1e6:.3g} MB moved")
        print(f"\nsum of per-layer bounds {p.layerwise_latency.to('us').m:.1f} us >= whole-model bound "
              f"{p.latency.to('us').m:.1f} us")
        big, _, _ = _resnet(chip, batch=256)
        print(f"compute-bound layers at batch 256: {len(big.layers.compute_bound())} of {len(layers)}")

    return Solution(
        {"q8_prediction": Truth(compute_bound[0], mistakes={
            "flops-not-bytes": max(Q8_LAYERS, key=lambda n: rows[n]["flops"]),
            "weights-only": max(Q8_LAYERS, key=lambda n: rows[n]["flops"] / params[n])},
            explanation="A conv reuses each weight once per output pixel, and each activation once per "
                        "output channel and kernel tap: count the bytes, not just the FLOPs.")},
        hint="Work out each layer's FLOPs per byte moved, its activations included, and compare with the ridge.",
        work=work)


TAKEAWAYS = """
* Intensity = FLOPs / bytes; ridge = peak / bandwidth; below the ridge, bandwidth sets the time.
* Count **all** the bytes: for a CNN the activations matter as much as the weights.
* Batching raises intensity by sharing the weights, up to a limit set by per-sample traffic
  (F / S_act); whether that limit clears the ridge depends on the chip, and a verdict within a
  few percent of the ridge is not a safe prediction.
* A model's regime is an average over layers that can disagree with each other, and its
  whole-model max(t_compute, t_memory) is a lower bound: summing each layer's own max is the
  tighter estimate wherever layers differ in regime.
* The roofline is a bound. Real runs are slower; efficiency and overhead knobs can describe the
  gap, but only if they are shown.
"""
