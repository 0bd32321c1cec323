"""Lesson 5, "Your machine": its graded questions (``mach_q1`` ... ``mach_q4``, ``mach_q6``).

Each solver computes the truth with course_lib when it is called. Q3 and Q6 grade against the
machine measured in the same process (``course_lib.measure.this_machine()``, measured once per
process: the setup cell's measurement, or the grader's own), Q4 against the cache sizes the
operating system of the machine running it reports. A verify cell's arithmetic shows nothing a
later question asks for: Q3's shows each kernel's roofline bound, not the fraction of it a kernel
reached (Q5 asks for that).
"""
from __future__ import annotations

import re

from ..exercises.answer_forms import Choice, Number, Reason, Regime
from ..measure import LEVELS
from .core import Solution, Truth, question
from .registry import Lesson

#: the lesson's notebook and the bars lint and the tests hold it to (registry.Lesson)
LESSON = Lesson("05_your_machine", min_admissible_variants=4)

#: why this lesson's solvers stay in a student's copy of course_lib (autograder.authoring.student_build):
#: its truths and its verify cells' arithmetic measure the machine the kernel runs on, which the
#: course service cannot (Q1's and Q2's counts are derivable in the kernel: the one known limit)
ANSWER_KEY_IN_KERNEL = "its truths and arithmetic measure the machine the student's kernel runs on"

#: Q2's dot product size (Q3 grades the kernels as timed), and Q2's matmul size without a variant
DOT_N, MM_N = 2**23, 1024

# Variants. Lesson 5's truths come from this machine's measurement, which already differs per
# student; a variant may change only a given that is not measured, and only where whether it is
# admissible is settled without the measurement (every machine must draw the same variants):
# * Q1 (bytes per element of a * x + y): the count does not depend on n, and the verify cell
#   compares it with the expression as timed (fp64, one n): no variant changes the question.
# * Q2: the matmul's size (pure counting).
# * Q3 (regimes against this machine's ridge) and Q4 (which cache holds a size): whether a kernel
#   size or a working set stays 10% clear of the ridge or of a cache boundary depends on the
#   machine measured; Q3 also reads the kernels as timed. No variant.
# * Q6: the GPU compared, among chips whose fp16 ridge is at least the A100's (the lesson's own
#   claim: the A100 wins on any CPU by a wide margin; a higher ridge keeps that margin).
#: the GPUs Q6 may compare (the V100's fp16 ridge is below the A100's: never drawn)
Q6_CHIPS = ["A100", "H100", "H200", "B200", "MI300X", "L4", "T4", "V100"]


def _machine():
    from ..measure import this_machine

    return this_machine()


# ---- Q1 -----------------------------------------------------------------------------------------
@question("mach_q1", rule="by-hand", specs={"q1_bytes_per_element": Number("byte", rel_tol=0.01)},
          givens={"n": 2**23})
def q1(n):
    from ..measure import numpy_axpy
    from ..models import axpy

    expression, fused = numpy_axpy(n), axpy(n)      # a * x writes a full-size temporary, + y reads it back

    def work():
        print(f"a * x + y in numpy:  {expression.elements_per_sample / n:g} arrays x 8 bytes = "
              f"{expression.bytes('fp64') / n:g} bytes per element")
        print(f"the model's axpy:    {fused.elements_per_sample / n:g} arrays x 8 bytes = "
              f"{fused.bytes('fp64') / n:g} bytes per element")
        mine = _machine()
        blocked, timed = mine.runs["axpy"], mine.runs["axpy_numpy"]
        table = mine.kernel_table(["axpy", "axpy_numpy"])       # where the arrays live is Q4's question
        table = re.sub(r" in (?:L\d|DRAM)$", "", table, flags=re.M).replace(
            "working set and where it lives", "working set")
        print("\n" + table)
        print(f"\nbytes:         expression / blocked = {timed.bytes_si:.4g} / {blocked.bytes_si:.4g} = "
              f"{timed.bytes_si / blocked.bytes_si:.2f}")
        print(f"median time:   expression / blocked = {timed.latency_si * 1e3:.3g} ms / "
              f"{blocked.latency_si * 1e3:.3g} ms = {timed.latency_si / blocked.latency_si:.2f}")
        print(f"(blocked: {blocked.code})")

    return Solution(
        {"q1_bytes_per_element": Truth(
            expression.bytes("fp64") / n,
            mistakes={"no-temporaries": fused.bytes("fp64") / n,               # x, y read and y written only
                      "bytes-per-element": [expression.bytes("fp32") / n,     # 4 bytes per element
                                            expression.bytes("int8") / n]},   # arrays counted, not bytes
            explanation="The temporary is traffic twice: a * x writes it, + y reads it back.")},
        hint="List the arrays each of the two operations reads and writes, then multiply by the bytes of "
             "one fp64 element.",
        work=work)


# ---- Q2 -----------------------------------------------------------------------------------------
@question("mach_q2", rule="by-hand",
          specs={"q2_dot_intensity": Number("FLOP/byte", rel_tol=0.02),
                 "q2_matmul_intensity": Number("FLOP/byte", rel_tol=0.02)},
          givens={"mm_n": MM_N}, space={"mm_n": [256, 512, 768, 1024, 1536, 2048]},
          labels={"mm_n": "matmul of {value}x{value} matrices"})
def q2(mm_n):
    from ..models import dot, matmul

    kernels = {"q2_dot_intensity": dot(DOT_N), "q2_matmul_intensity": matmul(mm_n, mm_n, mm_n)}

    def work():
        for k in kernels.values():
            print(f"{k.name}: {k.flops_per_sample:.6g} FLOPs / ({k.elements_per_sample:.6g} elements x 8 B)"
                  f" = {k.arithmetic_intensity('fp64'):.4g} FLOP/byte")

    def mistakes(k):
        return {"bytes-per-element": [k.arithmetic_intensity("fp32"), k.arithmetic_intensity("fp16")],
                "mac-as-1-flop": k.arithmetic_intensity("fp64") / 2}

    dot_k, mm_k = kernels["q2_dot_intensity"], kernels["q2_matmul_intensity"]
    return Solution(
        {"q2_dot_intensity": Truth(dot_k.arithmetic_intensity("fp64"), mistakes=mistakes(dot_k),
                                   explanation="fp64 is 8 bytes per element; a multiply-accumulate is 2 FLOPs."),
         "q2_matmul_intensity": Truth(
             mm_k.arithmetic_intensity("fp64"),
             # mm_n^3 multiply-accumulates each reading both operands from memory: a dot product's intensity
             mistakes={**mistakes(mm_k), "no-reuse": dot(mm_n**3).arithmetic_intensity("fp64")},
             explanation=f"2 x {mm_n}^3 FLOPs over 3 matrices of {mm_n}^2 elements, 8 bytes each.")},
        hint="FLOPs: 2 per multiply-accumulate; bytes: each array read or written once, 8 bytes per fp64 element.",
        work=work)


# ---- Q3 -----------------------------------------------------------------------------------------
@question("mach_q3", rule="prediction", reflection=1,
          specs={"q3_dot_regime": Regime(), "q3_matmul_regime": Regime(), "q3_reasoning": Reason()})
def q3():
    from .. import solve
    from ..models import dot

    mine = _machine()

    def regime(kernel):
        return solve(kernel, mine, precision="fp64").bottleneck

    def work():
        ridge = mine.ridge_point_si("fp64")
        print(f"fp64 ridge = {mine.peak_flops_si('fp64') / 1e9:.4g} GFLOP/s / {mine.memory_bandwidth_si / 1e9:.4g} GB/s"
              f" = {ridge:.3g} FLOP/byte ({mine.memory_label})")
        for key in ("dot", "matmul_1024"):
            run = mine.runs[key]
            p = solve(run.model, mine, precision="fp64")       # the kernel as timed: the same n as the run
            print(f"{run.name}: intensity {p.flops_si:.4g} / {p.bytes_si:.4g} = {p.flops_si / p.bytes_si:.4g} "
                  f"vs ridge {ridge:.3g} FLOP/byte -> {p.bottleneck}")
            print(f"    roofline time = max(compute {p.t_compute_si * 1e3:.3g} ms, memory {p.t_memory_si * 1e3:.3g} ms)"
                  f" = {p.latency_si * 1e3:.3g} ms")

    # the truths are the kernels as timed (the verify cell shows those runs): the dot's n is the
    # plan's, 2^23 or more where the last cache is large
    dot_timed, matmul_timed = mine.runs["dot"].model, mine.runs["matmul_1024"].model
    return Solution(
        {"q3_dot_regime": Truth(regime(dot_timed),
                                explanation="A dot product reads 16 bytes per multiply-accumulate: no CPU does so "
                                            "little math per byte."),
         "q3_matmul_regime": Truth(regime(matmul_timed),
                                   # MM_N^3 multiply-accumulates each reading both operands from memory
                                   mistakes={"no-reuse": regime(dot(MM_N**3))},
                                   explanation=f"Each element of A and B is reused {MM_N} times from cache: its "
                                               "intensity, printed above, is far above this machine's ridge "
                                               "point.")},
        hint="Compare each kernel's intensity (your Q2) with this machine's measured fp64 ridge point, its fp64 "
             "peak over the bandwidth of its memory ceiling, printed by the setup cell.",
        work=work)


# ---- Q4 -----------------------------------------------------------------------------------------
SIZES = {"q4_small_level": ("16 KiB", 16 * 1024), "q4_large_level": ("1 GiB", 2**30)}


@question("mach_q4", rule="prediction", reflection=1,
          specs={"q4_small_level": Choice(*LEVELS), "q4_large_level": Choice(*LEVELS),
                 "q4_reasoning": Reason()})
def q4():
    from ..measure import cache_level_of

    def level_of(nbytes):      # None where the OS reports no cache sizes and the size settles nothing ("L2/L3")
        level = cache_level_of(nbytes)
        return level if level in LEVELS else None

    truths = {name: cache_level_of(nbytes) for name, (_, nbytes) in SIZES.items()}

    def work():
        mine = _machine()
        print(mine.caches.describe() + "\n")
        for name, (label, _) in SIZES.items():
            level = truths[name]
            lv = mine.levels.get(level)
            if lv is not None and lv.resolved:
                seen = f"its plateau ran at {lv.bandwidth / 1e9:.1f} GB/s (working sets {lv.sizes_text} per thread)"
            else:
                seen = "its plateau was not resolved by this sweep" + (f": {lv.note}" if lv is not None else "")
            print(f"{label} lives in {level}; {seen}")

    explain = ("A warm working set is read from the smallest cache that holds it: compare the size with the "
               "cache sizes printed above.")
    return Solution(
        {"q4_small_level": Truth(truths["q4_small_level"],
                                 mistakes={"data-in-dram": LEVELS[-1],                   # where the arrays were allocated
                                           "unit-prefix": level_of(16 * 1024**2)},       # 16 KiB read as 16 MiB
                                 explanation=explain),
         "q4_large_level": Truth(truths["q4_large_level"],
                                 mistakes={"unit-prefix": [level_of(2**20), level_of(2**10)]},  # 1 GiB as 1 MiB, 1 KiB
                                 explanation=explain)},
        hint="A warm working set lives in the smallest cache that holds it, or in DRAM if none does: compare each "
             "size with the cache sizes the setup cell printed.",
        work=work)


# ---- Q6 -----------------------------------------------------------------------------------------
def _ridge_below_the_a100s(chip):
    from .. import Hardware

    ridge, a100 = Hardware.get(chip).ridge_point_si("fp16"), Hardware.get("A100").ridge_point_si("fp16")
    return None if ridge >= a100 else (f"the {chip}'s fp16 ridge ({ridge:.0f} FLOP/byte) is below the A100's "
                                       f"({a100:.0f}): the margin over every CPU is not the lesson's")


@question("mach_q6", rule="prediction", reflection=1,
          specs={"q6_higher_ridge": Choice(*Q6_CHIPS, "this machine"), "q6_reasoning": Reason()},
          givens={"chip": "A100"}, space={"chip": Q6_CHIPS}, labels={"chip": "the GPU {value}"},
          assumes=_ridge_below_the_a100s, measured=True)
def q6(chip):
    from .. import Hardware, solve

    gpu, mine = Hardware.get(chip), _machine()
    ridges = {chip: gpu.ridge_point_si("fp16"), "this machine": mine.ridge_point_si("fp32")}
    inverted = {chip: 1 / ridge for chip, ridge in ridges.items()}       # bandwidth / peak

    def work():
        import matplotlib.pyplot as plt

        from .. import plot_roofline
        from ..models import matmul

        r_gpu, r_cpu = ridges[chip], ridges["this machine"]
        print(f"{chip + ' fp16:':19s} {gpu.peak_flops_si('fp16') / 1e12:g} TFLOP/s / "
              f"{gpu.memory_bandwidth_si / 1e12:g} TB/s = {r_gpu:.0f} FLOP/byte")
        print(f"this machine fp32:  {mine.peak_flops_si('fp32') / 1e9:.4g} GFLOP/s / "
              f"{mine.memory_bandwidth_si / 1e9:.4g} GB/s = {r_cpu:.3g} FLOP/byte   (ratio {r_gpu / r_cpu:.0f}x)")
        k = matmul(256, 256, 256)
        print(f"\na 256^3 matmul: {k.arithmetic_intensity('fp32'):.3g} FLOP/byte in fp32 here -> "
              f"{solve(k, mine, precision='fp32').bottleneck}; {k.arithmetic_intensity('fp16'):.3g} FLOP/byte in "
              f"fp16 on the {chip} -> {solve(k, gpu, precision='fp16').bottleneck}")
        # each chip in the precision the question names, on one intensity axis: the ridges line up
        fig, (ax_gpu, ax_cpu) = plt.subplots(1, 2, figsize=(11, 4.2), sharex=True)
        plot_roofline(gpu, precision="fp16", ax=ax_gpu, title=f"{chip} in fp16 (datasheet)")
        plot_roofline([mine, Hardware.get("LaptopCPU")], precision="fp32", ax=ax_cpu,
                      title="this machine (measured) and a laptop CPU, fp32")
        ax_gpu.set_xlim(min(r_cpu, r_gpu) / 30, max(r_cpu, r_gpu) * 30)
        for a in (ax_gpu, ax_cpu):
            a.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16))   # below each chart

    return Solution(
        {"q6_higher_ridge": Truth(max(ridges, key=ridges.get),
                                  mistakes={"inverted-ratio": max(inverted, key=inverted.get)},
                                  explanation="The ridge is peak / bandwidth: compare how much each machine's "
                                              "FLOPs outgrow its bandwidth.")},
        hint=f"The ridge point is peak FLOP/s over bandwidth: compare how far each machine's peak outgrows its "
             f"bandwidth, the {chip} in fp16 and this machine in fp32.",
        work=work)


TAKEAWAYS = """\
* An empirical roofline is measured, not read: a large matmul for the peak, a sweep of working
  sets through a streaming kernel for each memory level. Warm up, repeat, and report the spread.
* Count the bytes the code really moves: a numpy expression writes and reads back temporaries.
* The regime follows from intensity against the *measured* ridge; a CPU's ridge is low, a few
  FLOPs per byte, so most dense linear algebra is compute-bound on it and every streaming
  kernel is memory-bound.
* Data that fits a cache streams at that cache's bandwidth: the hierarchical roofline has one
  ceiling per level.
* Small kernels are bound by per-call overhead, which the roofline leaves out.
* A GPU's ridge is far higher than a CPU's: the same kernel can change regime when it moves.
"""
