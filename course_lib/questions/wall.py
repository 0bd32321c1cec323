"""Lesson 2, "The memory wall": its graded questions (``wall_q1`` ... ``wall_q7``).

Each solver computes the truth with course_lib when it is called (at grading time too), the
answer each classic mistake leads to, and the arithmetic its verify cell prints. A verify cell
prints nothing that a later question asks for: each later question's data come with its own
verify.
"""
from __future__ import annotations

from ..exercises.answer_forms import Choice, Number, Ratio, Reason
from .core import Solution, Truth, question
from .registry import Lesson

#: every question gives each student their own numbers, or says why not (same_for_everyone=):
#: python -m autograder lint checks it
LESSON = Lesson("02_memory_wall", every_question_varies=True)
from .hello import chip_words

MODEL, OLD, NEW = "Llama3_8B", "A100", "H100"


def _chips(old=OLD, new=NEW):
    from .. import Hardware

    return Hardware.get(old), Hardware.get(new)


def _model(model=MODEL):
    from .. import Models

    return Models.get(model)


def _weights_do_not_fit(model, chip):
    """Why `model`'s fp16 weights cannot be served from one `chip` (None: they fit)."""
    from .. import Hardware

    m, hw = _model(model), Hardware.get(chip)
    if m.weight_bytes("fp16") >= hw.memory_capacity_si:
        return f"{model}'s fp16 weights do not fit on one {chip}"
    return None


# ---- Q1 -----------------------------------------------------------------------------------------
@question("wall_q1", rule="prediction", reflection=1,
          specs={"q1_speedup": Ratio(rel_tol=0.03), "q1_reasoning": Reason()},
          givens={"old": OLD, "new": NEW},
          space={"old": ["A100", "V100", "A100_40GB"], "new": ["H100", "H200", "B200", "MI300X"]},
          labels={"old": lambda k: "from " + chip_words(k), "new": lambda k: "to " + chip_words(k)},
          assumes=lambda old, new: _weights_do_not_fit(MODEL, old) or _weights_do_not_fit(MODEL, new))
def q1(old, new):
    from .. import solve, speedup

    m, (older, newer) = _model(), _chips(old, new)      # the older and the newer chip
    truth = speedup(m, older, newer, batch_size=1)
    flop_ratio = newer.peak_flops_si("fp16") / older.peak_flops_si("fp16")
    bw_ratio = newer.memory_bandwidth_si / older.memory_bandwidth_si

    def work():
        # no bytes, times or ridge points here: Q2 and Q3 ask for them
        steps = {hw.key: solve(m, hw, batch_size=1, precision="fp16") for hw in (older, newer)}
        for hw in (older, newer):
            p = steps[hw.key]
            print(f"{hw.key}: one decode step at batch 1, intensity {p.arithmetic_intensity.m:.3f} FLOP/byte "
                  f"-> {p.bottleneck} ({_regime_count(p)}: {_agree(p)})")
        print(f"\nFLOP ratio      {newer.peak_flops('fp16').m:.4g} / {older.peak_flops('fp16').m:.4g} TFLOP/s "
              f"= {flop_ratio:.3f}")
        print(f"bandwidth ratio {newer.memory_bandwidth:.4g~P} / {older.memory_bandwidth:.4g~P} = {bw_ratio:.3f}")
        print(f"speedup         latency on {older.key} / latency on {newer.key} = {truth:.3f}")

    return Solution(
        {"q1_speedup": Truth(truth, mistakes={"peak-ratio": flop_ratio, "inverted-ratio": 1 / truth},
                             explanation="Batch-1 decode is memory-bound on both chips (the intensity printed "
                                         "above is far below either chip's ridge, which Q3 computes), so the "
                                         "newer chip's extra FLOP/s sit idle and the time follows the bandwidth.")},
        hint="Decide the regime of a batch-1 decode step first; the roofline term that sets its time says "
             "which datasheet column to compare.",
        work=work)


# ---- Q2 -----------------------------------------------------------------------------------------
@question("wall_q2", rule="by-hand",
          specs={"q2_bytes_gb": Number("GB", rel_tol=0.02), "q2_ms": Number("ms", rel_tol=0.02)},
          givens={"chip": OLD},
          # the model stays Llama-3-8B: in Llama-2 (and Mistral) the embedding table is under 2% of the
          # weights, so streaming it would be no mistake; Llama-3-70B fits on no chip where it is over 3%
          space={"chip": ["A100", "V100", "H100", "H200", "B200", "MI300X", "L4", "A100_40GB"]},
          labels={"chip": lambda k: "on " + chip_words(k)},
          assumes=lambda chip: _weights_do_not_fit(MODEL, chip))
def q2(chip):
    from .. import Hardware, Q_, solve

    m, hw = _model(), Hardware.get(chip)
    c = m.config
    p = solve(m, hw, batch_size=1, precision="fp16")
    every_weight = m.weight_bytes("fp16")                     # parameters x 2 B, embedding table included
    embedding = c.vocab * c.d_model * 2                         # gathered, not streamed
    bw = hw.memory_bandwidth_si

    def work():
        print(f"parameters x 2 B             = {every_weight / 1e9:.3f} GB -> {every_weight / bw * 1e3:.3f} ms per token")
        print(f"minus the embedding table    = {(every_weight - embedding) / 1e9:.3f} GB -> "
              f"{(every_weight - embedding) / bw * 1e3:.3f} ms per token")
        print(f"course_lib, one decode step  = {p.bytes_si / 1e9:.3f} GB (weights + activations + KV) "
              f"/ {bw:.4g} B/s = {p.t_memory_si * 1e3:.3f} ms per token")
        print(f"the embedding table is {embedding / every_weight:.1%} of the weight bytes")
        print(f"kernel by kernel: {_regime_count(p)}; each at its own max, summed: "
              f"{p.layerwise_latency_si * 1e3:.3f} ms, the step-level {p.latency_si * 1e3:.3f} ms")

    return Solution(
        {"q2_bytes_gb": Truth(p.bytes, mistakes={"embedding-streamed": Q_(every_weight, "B"),
                                                 "gib-vs-gb": p.bytes.m_as("GiB"),   # a GiB figure written as GB
                                                 "bytes-per-element": p.bytes / 2},
                              explanation="A step reads one row of the embedding table per sequence; only the "
                                          "LM head (a separate matrix) is read in full. Count 2 bytes per "
                                          "weight and 10^9 bytes per GB."),
         "q2_ms": Truth(p.latency, mistakes={"embedding-streamed": Q_(every_weight / bw, "s"),
                                             "unit-prefix": [p.latency * 1e3, p.latency / 1e3]},
                        explanation="Time per token = bytes per step / bandwidth (in bytes/s), in milliseconds.")},
        hint="Streamed bytes = (all parameters - the embedding table) x 2 bytes, in units of 10^9 bytes; a step "
             "whose time is set by memory takes its bytes divided by the bandwidth, in milliseconds.",
        work=work)


def _regime_count(p) -> str:
    """How many of a step's kernels are in each regime (solve's per-layer table)."""
    rows = p.layers.rows
    bound = sum(r["bottleneck"] == "compute-bound" for r in rows)
    if bound in (0, len(rows)):
        return f"all {len(rows)} kernels {rows[0]['bottleneck']}"
    return f"{bound} of {len(rows)} kernels compute-bound, {len(rows) - bound} memory-bound"


def _agree(p) -> str:
    """Whether a step's step-level max equals its per-kernel sum, in words."""
    if p.layerwise_latency_si <= p.latency_si * (1 + 1e-9):
        return "the step-level max is the per-kernel sum"
    return (f"the step-level max {p.latency_si * 1e3:.3f} ms is a lower bound, the per-kernel sum "
            f"{p.layerwise_latency_si * 1e3:.3f} ms")


# ---- Q3 -----------------------------------------------------------------------------------------
def _estimate(m, hw):
    """The crossover estimate of Q3: the batch whose intensity, b x I(1), reaches the ridge."""
    from .. import solve

    return hw.ridge_point_si("fp16") / solve(m, hw, batch_size=1, precision="fp16").arithmetic_intensity.m


# No space: the answer variables are named for the two chips (q3_crossover_a100, _h100), and the
# estimate ridge / I(1) depends on nothing else the lesson sets (I(1) is about 1 FLOP/byte for any
# fp16 decoder), so another model or batch would ask the same numbers.
@question("wall_q3", rule="by-hand",
          same_for_everyone="its answer variables are named for the A100 and the H100, and ridge / I(1) "
                            "depends on nothing else",
          specs={"q3_crossover_a100": Number(rel_tol=0.03), "q3_crossover_h100": Number(rel_tol=0.03)})
def q3():
    from .. import solve

    m, chips = _model(), _chips()
    estimates = {hw.key: _estimate(m, hw) for hw in chips}

    def work():
        # the estimate only: the exact crossover is Q4's
        for hw in chips:
            p = solve(m, hw, batch_size=1, precision="fp16")
            print(f"{hw.key}: ridge = {hw.peak_flops_si('fp16'):.4g} / {hw.memory_bandwidth_si:.4g} = "
                  f"{hw.ridge_point_si('fp16'):.1f} FLOP/byte; one sequence: I(1) = {p.flops_si:.4g} FLOP / "
                  f"{p.bytes_si:.4g} B = {p.arithmetic_intensity.m:.3f} FLOP/byte")
            print(f"      estimate b* = ridge / I(1) = {hw.ridge_point_si('fp16'):.1f} / "
                  f"{p.arithmetic_intensity.m:.3f} = {estimates[hw.key]:.1f} sequences")

    explain = "With I ~ b FLOP/byte, the batch whose intensity reaches the ridge: dense peak / bandwidth."
    return Solution(
        {f"q3_crossover_{hw.key.lower()}": Truth(estimates[hw.key],
                                                 mistakes={"mac-as-1-flop": [estimates[hw.key] / 2, estimates[hw.key] * 2],
                                                           "sparse-peak": estimates[hw.key] * 2},
                                                 explanation=explain)
         for hw in chips},
        hint="With I ~ b FLOP/byte, the estimate is the batch whose intensity equals the ridge point "
             "(dense peak / bandwidth).",
        work=work)


# ---- Q4 -----------------------------------------------------------------------------------------
def _shared_and_own(m, hw):
    """(W, S, F): bytes the batch shares (weights), bytes each sequence adds, FLOPs per sequence."""
    from .. import solve

    one, two = solve(m, hw, batch_size=1), solve(m, hw, batch_size=2)
    S = two.bytes_si - one.bytes_si
    return one.bytes_si - S, S, one.flops_si


# No space: conceptual. The answer ("above": each sequence's own bytes make the intensity lag
# b F / W) holds for every model and chip, so a variant would change no answer, only Q3's numbers.
@question("wall_q4", rule="prediction", reflection=1,
          same_for_everyone="conceptual: the exact crossover is above the estimate for every model and chip",
          specs={"q4_prediction": Choice("above", "below"), "q4_reasoning": Reason()})
def q4():
    from .. import crossover_batch, solve

    m, chips = _model(), _chips()
    truths, traffic_as_flops = set(), set()
    for hw in chips:
        W, S, F = _shared_and_own(m, hw)
        ridge, estimate = hw.ridge_point_si("fp16"), _estimate(m, hw)
        truths.add("above" if crossover_batch(m, hw, precision="fp16") > estimate else "below")
        # per-sequence traffic taken as extra work rather than extra bytes: b* = ridge W / (F + ridge S)
        traffic_as_flops.add("above" if ridge * W / (F + ridge * S) > estimate else "below")
    if len(truths) != 1 or len(traffic_as_flops) != 1:
        raise ValueError("wall_q4 asks one answer for both chips, but they disagree: re-ask it")

    def work():
        for hw in chips:
            W, S, F = _shared_and_own(m, hw)
            ridge, estimate = hw.ridge_point_si("fp16"), _estimate(m, hw)
            exact = crossover_batch(m, hw, precision="fp16")
            print(f"{hw.name}: ridge {ridge:.1f} FLOP/byte, estimate (Q3) b* = ridge / I(1) = {estimate:.1f}")
            print(f"  bytes shared by the batch W = {W / 1e9:.4g} GB (weights), each sequence adds "
                  f"S = {S / 1e6:.2f} MB (activations + KV), F = {F / 1e9:.4g} GFLOP per sequence")
            print(f"  exact b* = ridge x W / (F - ridge x S) = {ridge * W / (F - ridge * S):.1f}; "
                  f"crossover_batch() = {exact:.1f} ({exact / estimate - 1:+.1%} vs the estimate)")
            print(f"  regimes at batch {int(exact)} and {int(exact) + 1}: "
                  f"{solve(m, hw, batch_size=int(exact)).bottleneck}, {solve(m, hw, batch_size=int(exact) + 1).bottleneck}")

    return Solution(
        {"q4_prediction": Truth(truths.pop(), mistakes={"flops-not-bytes": traffic_as_flops.pop()},
                                explanation="The per-sequence bytes S make the bytes grow with the batch too, so "
                                            "the intensity b F / (W + b S) lags behind b F / W.")},
        hint="Write the intensity with the per-sequence bytes S included, b F / (W + b S), and compare it "
             "with b F / W.",
        work=work)


# ---- Q5 -----------------------------------------------------------------------------------------
GENERATIONS = ("V100", "A100", "H100", "H200", "B200")


def _not_a_clear_generation_step(old, new):
    """Why Q5 may not ask about `old` -> `new` (None: it may): the new chip must be newer, and its
    ridge at least 10% away from the old one's, so the answer is no coin toss."""
    from .. import Hardware

    a, b = Hardware.get(old), Hardware.get(new)
    if b.year <= a.year:
        return f"the {new} ({b.year}) is not newer than the {old} ({a.year})"
    change = b.ridge_point_si("fp16") / a.ridge_point_si("fp16") - 1
    if abs(change) < 0.10:
        return f"the ridge moves only {change:+.0%} from the {old} to the {new}"
    return None


@question("wall_q5", rule="prediction", reflection=1,
          specs={"q5_prediction": Choice("higher", "lower"), "q5_reasoning": Reason()},
          givens={"old": "H100", "new": "H200"},
          # older chips with low and with high ridges, so that "higher" and "lower" are about as common
          space={"old": ["V100", "A100", "H100", "H100_PCIe", "L4"], "new": ["H100", "H200", "B200", "MI300X"]},
          labels={"old": lambda k: "from " + chip_words(k), "new": lambda k: "to " + chip_words(k)},
          assumes=_not_a_clear_generation_step)
def q5(old, new):
    from .. import Hardware, crossover_batch

    m = _model()
    ridge = {key: Hardware.get(key).ridge_point_si("fp16") for key in (old, new)}

    def direction(new, old):
        return "higher" if new > old else "lower"

    def growth(a, b):
        return (b.peak_flops_si("fp16") / a.peak_flops_si("fp16"), b.memory_bandwidth_si / a.memory_bandwidth_si,
                b.ridge_point_si("fp16") / a.ridge_point_si("fp16"))

    def work():
        # ridge and crossover only: batch-1 tokens/s per chip are Q7's data
        chips = [Hardware.get(k) for k in GENERATIONS]
        print(f"{'chip':6s} {'year':>4s} {'fp16 TFLOP/s':>12s} {'TB/s':>6s} {'ridge':>6s} {'crossover b*':>12s}")
        for hw in chips:
            print(f"{hw.key:6s} {hw.year:4d} {hw.peak_flops('fp16').m:12.1f} {hw.memory_bandwidth.m:6.3f} "
                  f"{hw.ridge_point('fp16').m:6.1f} {crossover_batch(m, hw):12.1f}")
        print()
        for a, b in zip(chips, chips[1:]):
            f, w, r = growth(a, b)
            print(f"{a.key:4s} -> {b.key:4s}: compute x{f:5.2f}, bandwidth x{w:5.2f}, ridge x{r:5.2f} "
                  f"({'rises' if r > 1 else 'falls'})")
        f, w, r = growth(chips[0], chips[-1])
        print(f"{chips[0].key} -> {chips[-1].key} overall: compute x{f:.1f}, bandwidth x{w:.1f}, ridge x{r:.2f}")
        f, w, r = growth(Hardware.get(old), Hardware.get(new))
        print(f"\nyour pair, {old} -> {new}: compute x{f:.2f}, bandwidth x{w:.2f}, ridge x{r:.2f} "
              f"({'rises' if r > 1 else 'falls'})")

    return Solution(
        {"q5_prediction": Truth(direction(ridge[new], ridge[old]),
                                mistakes={"ridge-always-rises": "higher",        # the long-run trend, taken as a rule
                                          "inverted-ratio": direction(1 / ridge[new], 1 / ridge[old])},
                                explanation=f"The ridge is peak / bandwidth: see how much the {new} changed each "
                                            "of the two (the growth lines).")},
        hint=f"The ridge is peak / bandwidth: see how much the {new} changed each of the two against the {old}.",
        work=work)


# ---- Q6 -----------------------------------------------------------------------------------------
def gpt_fast_row(model="Llama2_7B", precision="bf16"):
    """A gpt-fast measurement of lesson 2: batch 1 on one A100 (Llama-2-7B, bf16 in the lesson's own)."""
    from ..measurements import find

    rows = find(kind="llm_decode", model=model, hardware="A100", precision=precision, tp=1)
    if not rows:
        raise ValueError(f"gpt-fast published no single-A100 row for {model} at {precision}")
    return rows[0]


#: the empirical peak bandwidth the gpt-fast README quotes for its A100 (bytes/s)
GPT_FAST_EMPIRICAL_BANDWIDTH = 1700e9

#: gpt-fast's README table labels its int4 rows "4-bit (G=32)": weight-only int4 with one scale
#: and one zero point per group of 32 input weights of each output channel. gpt-fast's
#: WeightOnlyInt4Linear keeps them beside the packed weights as ``scales_and_zeros``, a bfloat16
#: tensor of shape (in_features / groupsize, out_features, 2); its WeightOnlyInt8Linear keeps one
#: bfloat16 ``scales`` entry per output channel. Every nn.Linear is quantized (the LM head too);
#: the embedding table and the norms stay bf16.
GPT_FAST_INT4_GROUP_SIZE = 32
GPT_FAST_SCALE_BYTES = 2                   # bfloat16

#: the achieved bandwidth gpt-fast's README prints beside each single-A100 row (bytes/s): its
#: generate.py's model size (the parameters and buffers it holds in memory, the KV cache allocated
#: for the whole request among them) times tokens/s
GPT_FAST_REPORTED_BANDWIDTH = {("Llama2_7B", "bf16"): 1397.31e9, ("Llama2_7B", "int8"): 1069.20e9,
                               ("Llama2_7B", "int4"): 862.69e9, ("Llama2_70B", "int8"): 1322.58e9,
                               ("Llama2_70B", "int4"): 1097.66e9}


def quantization_scale_bytes(model, precision: str) -> float:
    """Bytes of the scales (and zero points) gpt-fast stores beside a model's quantized weight
    matmuls, read with them at every decode step: int4, a bf16 scale and a bf16 zero point per
    group of GPT_FAST_INT4_GROUP_SIZE weights; int8, a bf16 scale per output channel; 16-bit
    weights, none."""
    from .. import Models

    model = Models.get(model) if isinstance(model, str) else model
    c = model.config
    matmuls = [l for l in model.decode_table(1).layers if l.kind == "matmul"]
    if precision == "int4":
        return sum(l.weights_read * l.count for l in matmuls) / GPT_FAST_INT4_GROUP_SIZE * 2 * GPT_FAST_SCALE_BYTES
    if precision == "int8":
        inputs = {"qkv_proj": c.d_model, "o_proj": c.n_heads * c.hd, "mlp_gate_up": c.d_model,
                  "mlp_up": c.d_model, "mlp_down": c.d_ff, "lm_head": c.d_model, "router": c.d_model}
        return sum(l.weights_read / inputs[l.name] * l.count for l in matmuls) * GPT_FAST_SCALE_BYTES
    return 0.0


def gpt_fast_step(row):
    """(course_lib's serve() of the row's request, the scales' bytes, the mean decode step's bytes
    with them, the roofline in tokens/s with them): the bytes every step streams are the quantized
    weights and, beside them, their scales and zero points, as gpt-fast stores them."""
    from ..measurements import decode_bound

    bound = decode_bound(row)
    scales = quantization_scale_bytes(row.model, row.precision)
    if bound.decode.bottleneck != "memory-bound":
        raise ValueError(f"{row.model} batch-1 decode is not memory-bound: the scales' time cannot be added")
    step_bytes = bound.decode.bytes_si + scales
    roof = 1 / (bound.decode.latency_si + scales / bound.hardware.memory_bandwidth_si)
    return bound, scales, step_bytes, roof


@question("wall_q6", rule="by-hand", reflection=1, specs={"q6_fraction": Ratio(rel_tol=0.03, low=0, high=1)},
          givens={"model": "Llama2_7B", "precision": "bf16"},
          # the single-A100 rows gpt-fast published (int8 and int4: weight-only quantization)
          space={"model": ["Llama2_7B", "Llama2_70B"], "precision": ["bf16", "int8", "int4"]},
          labels={"model": lambda k: _model(k).name, "precision": "weights in {value}"})
def q6(model, precision):
    from ..hardware_specs import SPECS

    row = gpt_fast_row(model, precision)
    bound, scales, step_bytes, roof = gpt_fast_step(row)   # the one gpt-fast bound of the course
    datasheet = SPECS[row.hardware]["memory_bandwidth"]   # the datasheet's figure, as the question asks
    achieved = row.value * step_bytes
    truth = achieved / datasheet
    without_scales = row.value * bound.decode.bytes_si / datasheet

    def work():
        parts = {k: v.m_as("B") for k, v in bound.decode.bytes_breakdown.items()}
        print(f"roofline {roof:.1f} tokens/s > measured {row.value} tokens/s: the bound holds "
              f"(measured = {row.value / roof:.0%} of the roofline)")
        print(f"bytes per decode step = weights {parts['weights'] / 1e9:.3f} + scales and zero points "
              f"{scales / 1e9:.3f} + KV cache {parts['kv_cache'] / 1e9:.3f} + activations "
              f"{parts['activations'] / 1e9:.4f} = {step_bytes / 1e9:.3f} GB")
        print(f"achieved bandwidth = {row.value} tokens/s x {step_bytes / 1e9:.3f} GB = {achieved / 1e9:.0f} GB/s; "
              f"/ {datasheet / 1e9:.0f} GB/s = {truth:.1%} of the datasheet")
        if scales:
            print(f"(leaving out the {precision} scales would give {without_scales:.1%}: "
                  f"{scales / step_bytes:.1%} of the step's bytes are scales and zero points)")
        print(f"against the ~{GPT_FAST_EMPIRICAL_BANDWIDTH / 1e9:.0f} GB/s the gpt-fast README calls the card's "
              f"empirical peak: {achieved / GPT_FAST_EMPIRICAL_BANDWIDTH:.0%}")
        theirs = GPT_FAST_REPORTED_BANDWIDTH.get((row.model, row.precision))
        if theirs:
            print(f"gpt-fast's own figure: {theirs / 1e9:.2f} GB/s = {row.value} tokens/s x "
                  f"{theirs / row.value / 1e9:.3f} GB, its model's size in memory as its generate.py counts it (weights, "
                  f"scales, the KV cache allocated for the whole request: all counted at every step); "
                  f"course_lib's {step_bytes / 1e9:.3f} GB is what the mean step reads and writes. The two differ "
                  f"by {theirs / achieved - 1:+.1%}; as fractions of the datasheet, "
                  f"{theirs / datasheet:.1%} and {truth:.1%}.")
        print(f"the measurement's whole setting: {row.setting}")

    return Solution(
        {"q6_fraction": Truth(truth, mistakes={
            "sustained-bandwidth": achieved / GPT_FAST_EMPIRICAL_BANDWIDTH,      # the README's empirical peak
            "gib-vs-gb": [truth / 2**30 * 1e9, truth * 2**30 / 1e9]},
            explanation="Achieved bandwidth is tokens/s x bytes per step (quantized weights with their "
                        "scales and zero points); divide by the datasheet bandwidth in bytes/s, keeping GB "
                        "decimal.")},
        hint="Achieved bandwidth = measured tokens/s x bytes per decode step; divide by the datasheet bandwidth "
             "in bytes/s.",
        work=work)


# ---- Q7 -----------------------------------------------------------------------------------------
@question("wall_q7", rule="prediction", reflection=1,
          specs={"q7_chatbot": Choice(OLD, NEW), "q7_offline": Choice(OLD, NEW), "q7_reasoning": Reason()},
          givens={"chatbot": 1, "offline": 512},
          space={"chatbot": [1, 2, 4, 8], "offline": [512, 1024, 2048]},
          labels={"chatbot": "chatbot at batch {value}", "offline": "offline at batch {value}"})
def q7(chatbot, offline):
    from .. import Hardware, solve

    m, chips = _model(), _chips()
    workloads = {"q7_chatbot": chatbot, "q7_offline": offline}

    def per_watt(hw, batch):
        return solve(m, hw, batch_size=batch, precision="fp16").throughput.m / hw.tdp_si

    def best(figure):
        return max(chips, key=lambda hw: figure(hw) / hw.tdp_si).key

    def per_kernel_watt(hw, batch):       # each kernel at its own max, summed: the step's upper estimate
        return batch / solve(m, hw, batch_size=batch, precision="fp16").layerwise_latency_si / hw.tdp_si

    step_best = {name: max(chips, key=lambda hw: per_watt(hw, b)).key for name, b in workloads.items()}
    kernel_best = {name: max(chips, key=lambda hw: per_kernel_watt(hw, b)).key for name, b in workloads.items()}

    def work():
        for name, batch in workloads.items():
            for hw in chips:
                p = solve(m, hw, batch_size=batch, precision="fp16")
                print(f"{name[3:]:8s} batch {batch:3d} {hw.key}: {p.throughput.m:8.0f} tokens/s / {hw.tdp_si:.0f} W "
                      f"= {per_watt(hw, batch):6.3f} tokens/s per W  ({p.bottleneck}; {_regime_count(p)})")
                print(f"{'':8s} {'':9s} {'':4s}  kernel by kernel (each at its own max, summed): "
                      f"{batch / p.layerwise_latency_si:8.0f} tokens/s = {per_kernel_watt(hw, batch):6.3f} per W")
        slow = ", ".join(solve(m, chips[0], batch_size=offline, precision="fp16").layers.memory_bound())
        print(f"\nThe step-level figures (one max over the whole step) are upper bounds on tokens/s: at batch "
              f"{offline} the memory-bound kernels ({slow}) cannot overlap the compute-bound ones. Kernel by "
              f"kernel, {'the same chip wins' if kernel_best == step_best else 'the winners change'}: "
              + ", ".join(f"{name[3:]} {kernel_best[name]}" for name in workloads))
        print(f"\nper watt of TDP: bandwidth "
              + ", ".join(f"{hw.key} {hw.memory_bandwidth_si / hw.tdp_si / 1e9:.2f} GB/s per W" for hw in chips)
              + "; peak " + ", ".join(f"{hw.key} {hw.peak_flops_si('fp16') / hw.tdp_si / 1e9:.0f} GFLOP/s per W"
                                      for hw in chips))

    explain = ("Find the regime first, then compare bandwidth per watt (memory-bound) or FLOP/s per watt "
               "(compute-bound). Graded on the step-level roofline, a lower bound on the step's time; charged "
               "kernel by kernel, the memory-bound kernels of a compute-bound step add time (printed above), "
               + ("and the same chip wins." if kernel_best == step_best else
                  "and the winner changes: " + ", ".join(f"{n[3:]} {c}" for n, c in kernel_best.items()) + "."))
    return Solution(
        {name: Truth(max(chips, key=lambda hw: per_watt(hw, batch)).key,
                     mistakes={"peak-ratio": best(lambda hw: hw.peak_flops_si("fp16")),
                               "bandwidth-ratio": best(lambda hw: hw.memory_bandwidth_si)},
                     explanation=explain)
         for name, batch in workloads.items()},
        hint="Find the workload's regime on both chips first; then compare the datasheet column that sets its "
             "tokens/s, per watt of TDP.",
        work=work)


TAKEAWAYS = """\
* Batch-1 decode streams every weight once per token at about 1 FLOP/byte: it is memory-bound
  on every GPU in this lesson, and a new chip speeds it up by its **bandwidth** ratio.
* Time per token ≈ streamed weight bytes / bandwidth; the embedding table is gathered, not
  streamed.
* Batching raises the intensity roughly in proportion to the batch; decode turns compute-bound
  somewhat above the batch equal to the ridge point (by the percentages printed in Q4's
  verification), because every sequence brings its own bytes.
* The ridge point is a ratio. Over the long run compute has grown faster than bandwidth, but
  a chip that adds bandwidth without compute (H200) *lowers* it.
* A roofline is a bound; real code reaches a fraction of it, and that fraction is worth
  measuring.
* Per watt, the regime picks the column: bandwidth per watt for memory-bound work, FLOP/s per
  watt for compute-bound work.
"""
