"""Lesson 4, "Quantization: not a free lunch": its graded questions (``quant_q1`` ... ``quant_q6``).

Each solver computes the truth with course_lib when it is called (at grading time too), the
answer each classic mistake leads to, and the arithmetic its verify cell prints. Every number
comes from ``serve`` and friends at call time, so a change in how course_lib counts a format's
bytes moves the truths, the mistakes and the printed arithmetic together.
"""
from __future__ import annotations

from ..exercises.answer_forms import Ratio, Reason, Regime, WholeNumber
from ..formatting import fmt_batch
from .core import Solution, Truth, question
from .registry import Lesson

#: the lesson's notebook and the bars lint and the tests hold it to (registry.Lesson)
LESSON = Lesson("04_quantization", min_admissible_variants=4)

CHIP, MODEL = "A100", "Llama3_8B"
#: the long request of Parts 1 and 2 (Q1-Q3) and the short chat requests of Part 4 (Q5, Q6)
LONG, SHORT = {"prompt_tokens": 4096, "output_tokens": 256}, {"prompt_tokens": 128, "output_tokens": 128}

# Variants. Q1-Q3 are asked on one request (group "quant_request": one draw for the three): prompts
# from 4096 tokens up, as at shorter prompts decode's W8A8 speedup (Q3's "other-phase") and the
# bytes-per-element ratio (Q2) come within 1.5 x the tolerance of the truth; the context stays
# within Llama-3-8B's 8192 tokens. Q4 varies the chip and the context; Q5 and Q6 the batch, each
# on its side of the fp16 crossover batch (the premise each question states).
REQUEST_SPACE = {"prompt": [4096, 5120, 6144, 7168], "output": [128, 256, 512]}
REQUEST_LABELS = {"prompt": "prompt P = {value} tokens", "output": "T = {value} output tokens"}


def _setting(chip=CHIP):
    from .. import Hardware, Models

    return Models.get(MODEL), Hardware.get(chip)


def _request(prompt, output):
    return {"prompt_tokens": prompt, "output_tokens": output}


def _serve(request, batch=1, **formats):
    from .. import serve

    llama, a100 = _setting()
    return serve(llama, a100, batch_size=batch, **request, **{"precision": "fp16", **formats})


def _per_kernel(request, batch=1, **formats) -> dict:
    """serve's TTFT and TPOT of `request` kernel by kernel (course_lib.serving.kernel_latency): each
    kernel at its own max(t_compute, t_memory), summed; never below serve's step-level figures."""
    from ..serving import kernel_latency

    llama, a100 = _setting()
    return kernel_latency(llama, a100, batch_size=batch, **request, **{"precision": "fp16", **formats})


def _fp16_regime(batch):
    """The regime of the mean fp16 decode step of `batch` short requests (Q5's and Q6's premise)."""
    return _serve(SHORT, batch).decode.bottleneck


def _mean_step_note(runs: dict, request: dict, batch: int) -> None:
    """Say why a TPOT exceeds max(mean t_compute, mean t_memory) where it does: TPOT is the mean
    over the steps of each step's max, and a step's regime can change as the context grows."""
    P, T = request["prompt_tokens"], request["output_tokens"]
    for name, (kw, dd) in runs.items():
        if dd.latency_si <= max(dd.t_compute_si, dd.t_memory_si) * (1 + 1e-9):
            continue
        first = _serve({"prompt_tokens": P, "output_tokens": 2}, batch, **kw).decode         # context P + 1
        last = _serve({"prompt_tokens": P + T - 2, "output_tokens": 2}, batch, **kw).decode  # context P + T - 1
        print(f"\n{name}: TPOT {dd.latency_si * 1e3:.2f} ms > max({dd.t_compute_si * 1e3:.2f}, "
              f"{dd.t_memory_si * 1e3:.2f}) ms. TPOT averages each step's max(t_compute, t_memory); the two "
              "columns average each term on its own. As the KV cache grows the steps change regime:")
        for label, step, ctx in (("first", first, P + 1), ("last", last, P + T - 1)):
            print(f"    {label} step (context {ctx}): t_compute {step.t_compute_si * 1e3:.2f} ms, "
                  f"t_memory {step.t_memory_si * 1e3:.2f} ms -> {step.bottleneck}")


# ---- Q1 -----------------------------------------------------------------------------------------
@question("quant_q1", rule="prediction", reflection=1, specs={"q1_prediction": Regime(), "q1_reasoning": Reason()},
          givens={"prompt": LONG["prompt_tokens"], "output": LONG["output_tokens"]},
          space=REQUEST_SPACE, labels=REQUEST_LABELS, group="quant_request")
def q1(prompt, output):
    llama, a100 = _setting()
    s4 = _serve(_request(prompt, output), weight_precision="int4")
    d = s4.decode

    def work():
        print(f"int4 weights, mean decode step: intensity = {d.flops_si:.4g} FLOP / {d.bytes_si:.4g} B = "
              f"{d.flops_si / d.bytes_si:.2f} FLOP/byte vs the fp16 ridge {a100.ridge_point('fp16').m:.0f} FLOP/byte")
        print(f"t_compute = {d.flops_si:.4g} / {a100.peak_flops_si('fp16'):.4g} = {d.t_compute_si * 1e3:.3f} ms")
        print(f"t_memory  = {d.bytes_si:.4g} / {a100.memory_bandwidth_si:.4g} = {d.t_memory_si * 1e3:.3f} ms")

    return Solution(
        {"q1_prediction": Truth(d.bottleneck,
                                explanation="Smaller weights raise the intensity by the factor the bytes shrink, "
                                            "starting from about 1 FLOP/byte at fp16: compare where that lands "
                                            "with the ridge.")},
        hint="Quantization shrinks bytes, not FLOPs: divide the step's FLOPs by all the bytes it moves "
             "(weights at half a byte, KV cache and activations at 2) and compare with the fp16 ridge.",
        work=work)


# ---- Q2 -----------------------------------------------------------------------------------------
@question("quant_q2", rule="by-hand", reflection=1,
          specs={"q2_int8_speedup": Ratio(rel_tol=0.02), "q2_int4_speedup": Ratio(rel_tol=0.02)},
          givens={"prompt": LONG["prompt_tokens"], "output": LONG["output_tokens"]},
          space=REQUEST_SPACE, labels=REQUEST_LABELS, group="quant_request")
def q2(prompt, output):
    from .. import bytes_per_element, solve

    llama, a100 = _setting()
    runs = {wp: _serve(_request(prompt, output), weight_precision=wp) for wp in ("fp16", "int8", "int4")}

    def speedup(wp):
        return runs["fp16"].decode.latency_si / runs[wp].decode.latency_si

    def work():
        for wp, s in runs.items():
            d = s.decode
            gain = "" if wp == "fp16" else f"  (speedup {speedup(wp):.3f}x)"
            print(f"{wp:>5} weights: TPOT = {d.bytes_si:.4g} B / {a100.memory_bandwidth_si:.4g} B/s = "
                  f"{d.latency_si * 1e3:.3f} ms{gain}")
        print(f"ratio of bytes per weight: int8 {bytes_per_element('fp16') / bytes_per_element('int8'):g}x, "
              f"int4 {bytes_per_element('fp16') / bytes_per_element('int4'):g}x")
        from .wall import GPT_FAST_INT4_GROUP_SIZE, quantization_scale_bytes

        scaled = {wp: runs["fp16"].decode.latency_si / (runs[wp].decode.latency_si + quantization_scale_bytes(
            llama, wp) / a100.memory_bandwidth_si) for wp in ("int8", "int4")}
        print(f"(this question counts the weights' own bytes; with the scales a real kernel also reads, counted as "
              f"lesson 2 counts gpt-fast's, a bf16 scale and zero point per {GPT_FAST_INT4_GROUP_SIZE} int4 weights "
              f"and a bf16 scale per int8 output channel: int8 {scaled['int8']:.3f}x, int4 {scaled['int4']:.3f}x)")
        context = prompt + output // 2                                        # the mean step's context
        print(f"\nWhat each kind of layer moves in the mean decode step (context {context}), GB:")
        print(f"{'layer kind':12s}" + "".join(f"{wp + ' weights':>15s}" for wp in runs))
        tables = {wp: solve(llama, a100, context_tokens=context, weight_precision=wp).layers for wp in runs}
        for kind in ("matmul", "attention", "norm", "elementwise", "embedding"):
            gb = [sum(r["bytes"] * r["count"] for r in tables[wp] if r["kind"] == kind) / 1e9 for wp in runs]
            print(f"{kind:12s}" + "".join(f"{g:15.4f}" for g in gb))
        print("The attention row (KV cache) and the activation traffic do not shrink with the weights.")
        kernels = {wp: _per_kernel(_request(prompt, output), weight_precision=wp)["tpot"] for wp in runs}
        print("Kernel by kernel (each at its own max, summed), TPOT " + ", ".join(
            f"{wp} {kernels[wp] * 1e3:.3f} ms" for wp in runs) + ": "
              + ("the same, every kernel memory-bound at batch 1." if all(
                  kernels[wp] <= runs[wp].decode.latency_si * (1 + 1e-9) for wp in runs)
                 else "above the step-level TPOTs, lower bounds."))

    explain = ("Only the weight bytes shrink; the KV cache and the activations keep their 2 bytes per "
               "element and are still moved every step, so the speedup is the ratio of all the step's bytes.")
    return Solution(
        {f"q2_{wp}_speedup": Truth(speedup(wp),
                                   mistakes={"weights-only": bytes_per_element("fp16") / bytes_per_element(wp)},
                                   explanation=explain)
         for wp in ("int8", "int4")},
        hint="The step's time is all the bytes it moves / bandwidth. Shrink the weights' share of those bytes "
             "and keep the rest as it is.",
        work=work)


# ---- Q3 -----------------------------------------------------------------------------------------
Q3_CASES = {"fp16": {}, "int8 weights only": {"weight_precision": "int8"}, "W8A8": {"precision": "int8"}}


# q3_w8a8_speedup within 2%: decode's W8A8 speedup (other-phase) sits a few percent above the truth
@question("quant_q3", rule="prediction", reflection=1,
          specs={"q3_weight_only_speedup": Ratio(rel_tol=0.05), "q3_w8a8_speedup": Ratio(rel_tol=0.02),
                 "q3_reasoning": Reason()},
          givens={"prompt": LONG["prompt_tokens"], "output": LONG["output_tokens"]},
          space=REQUEST_SPACE, labels=REQUEST_LABELS, group="quant_request")
def q3(prompt, output):
    llama, a100 = _setting()
    request = _request(prompt, output)
    runs = {name: _serve(request, **kw) for name, kw in Q3_CASES.items()}
    base, w8, w8a8 = runs["fp16"], runs["int8 weights only"], runs["W8A8"]
    all_int8 = _serve(request, precision="int8", attention_precision="int8")
    kernels = {name: _per_kernel(request, **kw)["ttft"] for name, kw in Q3_CASES.items()}
    k_speedup = {name: kernels["fp16"] / kernels[name] for name in ("int8 weights only", "W8A8")}

    def work():
        for name, s in runs.items():
            pre = s.prefill
            print(f"{name:18s}: t_compute {pre.t_compute_si * 1e3:.1f} ms (matmuls at the {s.precisions.compute} "
                  f"peak, attention at the {s.precisions.attention} peak), t_memory = {pre.bytes_si:.4g} / "
                  f"{a100.memory_bandwidth_si:.4g} = {pre.t_memory_si * 1e3:.1f} ms -> TTFT "
                  f"{pre.latency_si * 1e3:.1f} ms ({pre.bottleneck})")
        print(f"W8A8 here: {w8a8.precisions.label()}")
        for name in ("int8 weights only", "W8A8"):
            print(f"TTFT(fp16) / TTFT({name}) = {base.prefill.latency_si * 1e3:.1f} / "
                  f"{runs[name].prefill.latency_si * 1e3:.1f} = {base.ttft.m / runs[name].ttft.m:.3f}")
        print("\nThese TTFTs are step-level maxes, lower bounds. Kernel by kernel (each at its own max, summed):")
        for name in Q3_CASES:
            gain = "" if name == "fp16" else f", speedup {k_speedup[name]:.3f}"
            print(f"{name:18s}: TTFT {kernels[name] * 1e3:.1f} ms{gain}")
        print("The memory-bound kernels (norms, residual adds, the MLP's activation) keep their fp16 bytes and "
              "their time in every format, so per kernel W8A8 gains less than the step-level ratio says; an engine "
              "that fuses them into the matmuls comes closer to the step-level ratio.")

    return Solution(
        {"q3_weight_only_speedup": Truth(base.ttft.m / w8.ttft.m,
                                         mistakes={"other-phase": base.tpot.m / w8.tpot.m},   # decode's speedup
                                         explanation="Fewer weight bytes shorten t_memory; compare it with t_compute "
                                                     "in the table to see whether that was the limit."),
         "q3_w8a8_speedup": Truth(base.ttft.m / w8a8.ttft.m,
                                  mistakes={"w8a8-attention": base.ttft.m / all_int8.ttft.m,
                                            "other-phase": base.tpot.m / w8a8.tpot.m},
                                  explanation="W8A8 runs the weight matmuls at the int8 peak and attention's "
                                              "matmuls at the fp16 peak: the prefill's time follows that mix. "
                                              "Graded on serve's step-level TTFTs, the ratio of two lower bounds; "
                                              "kernel by kernel, where the memory-bound norms and residual adds "
                                              f"keep their time, it is {k_speedup['W8A8']:.2f}.")},
        hint="Decide prefill's regime first: which roof do fewer weight bytes lower, and which does int8 math "
             "raise, and for which of its FLOPs?",
        work=work)


# ---- Q4 -----------------------------------------------------------------------------------------
@question("quant_q4", rule="by-hand", specs={"q4_max_batch": WholeNumber(rel_tol=0.01)},
          givens={"context": 8192, "chip": CHIP},
          space={"chip": ["A100", "H100", "H200"], "context": [2048, 4096, 6144, 8192]},
          labels={"chip": "chip {value}", "context": "ctx = {value} tokens per sequence"})
def q4(context, chip):
    from .. import Hardware, max_batch_size
    from ..sensitivity import perturb

    llama, gpu = _setting(chip)

    def fits(**kw):
        return max_batch_size(llama, gpu, context_tokens=context, precision="fp16", **kw)

    with perturb(capacity="decimal"):                  # "80 GB" read as 80e9 bytes
        decimal = max_batch_size(llama, Hardware.get(chip), context_tokens=context, precision="fp16",
                                 kv_precision="int8")
    cap = gpu.memory_capacity_si

    def work():
        print(f"{gpu.name}: capacity {cap:,.0f} bytes")
        for wp, kvp in (("fp16", "fp16"), ("fp16", "int8"), ("int8", "int8")):
            room = cap - llama.weight_bytes(wp)
            per_seq = context * llama.kv_bytes_per_token(kvp)
            n = max_batch_size(llama, gpu, context_tokens=context, weight_precision=wp, kv_precision=kvp)
            print(f"weights {wp}, KV {kvp}: ({cap:.4g} - {llama.weight_bytes(wp):.4g}) / ({context} x "
                  f"{llama.kv_bytes_per_token(kvp)}) = {room / per_seq:.2f} -> {n} sequences")
        n_fp8 = max_batch_size(llama, Hardware.get("H100"), context_tokens=context, kv_precision="fp8")
        print(f"H100, fp16 weights, fp8 KV cache: {n_fp8} sequences")

    return Solution(
        {"q4_max_batch": Truth(fits(kv_precision="int8"),
                               mistakes={"gib-vs-gb": decimal,
                                         "weights-not-subtracted": cap // (context * llama.kv_bytes_per_token("int8")),
                                         "bytes-per-element": fits(kv_precision="fp16")},
                               explanation="Subtract the weights from the capacity in bytes (binary), then divide "
                                           "by the bytes ONE sequence's cache needs (int8 = 1 byte per element), "
                                           "and round down.")},
        hint="Capacity in bytes minus the fp16 weights, divided by one sequence's int8 KV cache, rounded down.",
        work=work)


# ---- Q5 -----------------------------------------------------------------------------------------
@question("quant_q5", rule="prediction", reflection=1, specs={"q5_prediction": Regime(), "q5_reasoning": Reason()},
          givens={"batch": 192}, space={"batch": [128, 160, 176, 192, 208, 224]},
          labels={"batch": "batch {value} short requests"},
          assumes=lambda batch: (None if _fp16_regime(batch) == "memory-bound" else
                                 f"the fp16 step at batch {batch} is not memory-bound: nothing for int8 weights to change"))
def q5(batch):
    from .. import bytes_per_element, crossover_batch

    llama, a100 = _setting()
    fp16 = _serve(SHORT, batch).decode
    int8 = _serve(SHORT, batch, weight_precision="int8").decode
    one_sequence = _serve(SHORT, 1, weight_precision="int8").decode       # as if no sequence shared a weight read
    context = SHORT["prompt_tokens"] + SHORT["output_tokens"] // 2        # the mean step's context
    kernels = {wp: _kernel_step(batch, wp) for wp in ("fp16", "int8")}
    ridge = a100.ridge_point_si("fp16")
    matmuls = [r for r in kernels["fp16"]["rows"] if r["kind"] == "matmul"]
    lo, hi = min(r["intensity"] for r in matmuls), max(r["intensity"] for r in matmuls)
    all_compute = all(r["regime"] == "compute-bound" for r in matmuls)
    step_speedup = fp16.latency_si / int8.latency_si

    def work():
        print(f"int8 weights, batch {batch}: t_compute = {int8.t_compute_si * 1e3:.2f} ms, t_memory = "
              f"{int8.t_memory_si * 1e3:.2f} ms -> {int8.bottleneck}; TPOT {int8.latency_si * 1e3:.2f} ms vs "
              f"{fp16.latency_si * 1e3:.2f} ms at fp16 ({step_speedup:.2f}x, not "
              f"{bytes_per_element('fp16') / bytes_per_element('int8'):g}x)")
        for wp in ("fp16", "int8", "int4"):
            print(f"crossover batch B* with {wp} weights (context {context}): "
                  f"{fmt_batch(crossover_batch(llama, a100, weight_precision=wp, context_tokens=context))}")
        print(f"\nThe same step kernel by kernel (context {context}, ridge {ridge:.0f} FLOP/byte): each kernel "
              "takes its own max(t_compute, t_memory)")
        print(f"{'kernel':14s} {'x':>3s} {'FLOP/B fp16':>11s} {'int8':>6s} {'t_c us':>8s} {'t_m fp16':>9s} "
              f"{'t_m int8':>9s}  regime fp16 / int8")
        for a, b in zip(kernels["fp16"]["rows"], kernels["int8"]["rows"]):
            print(f"{a['name']:14s} {a['count']:>3d} {a['intensity']:11.1f} {b['intensity']:6.1f} "
                  f"{a['t_compute_s'] * 1e6:8.1f} {a['t_memory_s'] * 1e6:9.1f} {b['t_memory_s'] * 1e6:9.1f}  "
                  f"{a['regime']} / {b['regime']}")
        for wp in ("fp16", "int8"):
            k = kernels[wp]
            print(f"{wp:4s} weights: sum over kernels of each kernel's max = {k['time'] * 1e3:.2f} ms; "
                  f"step-level max(sum t_c, sum t_m) = max({k['t_compute'] * 1e3:.2f}, {k['t_memory'] * 1e3:.2f}) "
                  f"= {max(k['t_compute'], k['t_memory']) * 1e3:.2f} ms")
        saved = kernels["fp16"]["time"] - kernels["int8"]["time"]
        print(f"per kernel, int8 weights save {saved * 1e6:.1f} us of {kernels['fp16']['time'] * 1e3:.2f} ms; the "
              f"step-level max says {step_speedup:.2f}x. The step-level max is a lower bound on the step's time: it lets attention's "
              "KV-cache reads overlap the matmuls' math as if the step were one kernel.")

    if all_compute:
        why = (f"Graded on the step-level roofline, where t_compute and t_memory are summed over the step's "
               f"kernels: int8 weights take t_memory ({fp16.t_memory_si * 1e3:.2f} -> {int8.t_memory_si * 1e3:.2f} ms) "
               f"below the unchanged t_compute ({int8.t_compute_si * 1e3:.2f} ms). But the fp16 step was "
               "memory-bound only because one max() pooled attention's KV-cache reads with the matmuls' FLOPs: "
               f"kernel by kernel, every weight matmul is already compute-bound at fp16 ({lo:.0f}-{hi:.0f} FLOP/byte "
               f"against a ridge of {ridge:.0f}), so halving its weights saves nothing. Summed per kernel the step "
               f"takes {kernels['fp16']['time'] * 1e3:.1f} ms either way. The step-level times are lower bounds "
               "that let the memory-bound kernels overlap the compute-bound ones; their "
               f"{step_speedup:.2f}x is not a speedup any kernel sees.")
    else:
        slow = ", ".join(r["name"] for r in matmuls if r["regime"] == "memory-bound")
        why = (f"Graded on the step-level roofline: int8 weights take t_memory ({fp16.t_memory_si * 1e3:.2f} -> "
               f"{int8.t_memory_si * 1e3:.2f} ms) below the unchanged t_compute ({int8.t_compute_si * 1e3:.2f} ms). "
               f"Kernel by kernel, only the memory-bound weight matmuls at fp16 ({slow}) gain: summed per kernel "
               f"the step goes from {kernels['fp16']['time'] * 1e3:.1f} to {kernels['int8']['time'] * 1e3:.1f} ms, "
               f"against the step-level {step_speedup:.2f}x, the ratio of two lower bounds "
               "that let memory-bound kernels overlap compute-bound ones.")
    return Solution(
        {"q5_prediction": Truth(int8.bottleneck, mistakes={"weights-per-sample": one_sequence.bottleneck},
                                explanation=why)},
        hint=f"The weights are read once for all {batch} sequences: compare t_memory with int8 weights and the "
             "unchanged t_compute.",
        work=work)


def _kernel_step(batch, weight_precision):
    """The mean short-request decode step of `batch` sequences kernel by kernel (course_lib's
    step_kernels at the mean context): its rows, the per-kernel time (sum over kernels of each
    one's max) and the step-level sums of t_compute and t_memory."""
    from ..serving import step_kernels

    llama, a100 = _setting()
    context = SHORT["prompt_tokens"] + SHORT["output_tokens"] // 2
    rows = step_kernels(llama, a100, context=context, batch_size=batch, precision="fp16",
                        weight_precision=weight_precision)
    total = {k: sum(r["count"] * r[f"{k}_s"] for r in rows) for k in ("time", "t_compute", "t_memory")}
    return {"rows": rows, **total}


# ---- Q6 -----------------------------------------------------------------------------------------
Q6_CASES = {"fp16": {}, "int4 weights": {"weight_precision": "int4"}, "W8A8": {"precision": "int8"}}


@question("quant_q6", rule="prediction", reflection=1, specs={"q6_prediction": Ratio(rel_tol=0.05), "q6_reasoning": Reason()},
          givens={"batch": 512}, space={"batch": [320, 384, 512, 640, 768, 1024]},
          labels={"batch": "batch {value} short requests"},
          assumes=lambda batch: (None if _fp16_regime(batch) == "compute-bound" else
                                 f"the fp16 step at batch {batch} is not compute-bound, the question's premise"))
def q6(batch):
    from .. import bytes_per_element

    runs = {name: (kw, _serve(SHORT, batch, **kw).decode) for name, kw in Q6_CASES.items()}
    fp16, int4 = runs["fp16"][1], runs["int4 weights"][1]
    truth = fp16.latency_si / int4.latency_si
    kernels = {name: _per_kernel(SHORT, batch, **kw)["tpot"] for name, kw in Q6_CASES.items()}
    k_speedup = kernels["fp16"] / kernels["int4 weights"]

    def work():
        print(f"batch {batch}, means over the decode steps:")
        for name, (_, dd) in runs.items():
            print(f"{name:13s}: t_compute {dd.t_compute_si * 1e3:6.2f} ms, t_memory {dd.t_memory_si * 1e3:6.2f} ms"
                  f" -> TPOT {dd.latency_si * 1e3:6.2f} ms ({dd.bottleneck})")
        print(f"W8A8 here: {_serve(SHORT, batch, **Q6_CASES['W8A8']).precisions.label()}")
        print(f"TPOT(fp16) / TPOT(int4 weights) = {fp16.latency_si * 1e3:.2f} / {int4.latency_si * 1e3:.2f} = "
              f"{truth:.3f}")
        _mean_step_note(runs, SHORT, batch)
        print("\nThe TPOTs above are step-level maxes, lower bounds. Kernel by kernel (each at its own max, summed): "
              + ", ".join(f"{name} {kernels[name] * 1e3:.2f} ms" for name in Q6_CASES)
              + f"; int4 weights: {k_speedup:.3f}x. The weight matmuls are compute-bound in both formats and "
              "attention's KV-cache reads do not change, so the speedup holds kernel by kernel too.")

    return Solution(
        {"q6_prediction": Truth(truth, mistakes={
            # timed by the bytes, though the step is compute-bound: the bytes' ratio, or the weights' alone
            "other-roof": [fp16.t_memory_si / int4.t_memory_si, bytes_per_element("fp16") / bytes_per_element("int4")]},
            explanation="Above the crossover batch the step is compute-bound: fewer bytes cannot shorten it. "
                        "Only faster math (W8A8, fp8 on an H100) moves the compute roof. Kernel by kernel "
                        f"(each at its own max, summed; the step-level TPOT is a lower bound) it is {k_speedup:.2f}x.")},
        hint=f"Decide the regime at batch {batch} with fp16 weights first (the crossover batches above).",
        work=work)


TAKEAWAYS = """\
* Decode at small batch is memory-bound, so weight-only quantization speeds it up by the ratio of
  **bytes moved per step**: a bit less than the bytes-per-element ratio, because the KV cache and
  activations stay fp16 (more so at long context).
* Prefill is compute-bound: weight-only quantization leaves TTFT unchanged; only narrower math
  (W8A8, fp8 where the chip has it) shortens it, and only for the matmuls it covers: attention
  stays fp16 in the usual W8A8 recipe, and kernel by kernel the memory-bound norms and residual
  adds keep their time too.
* A step-level time (one max over all of a step's kernels) is a lower bound; where kernels differ
  in regime, the sum of each kernel's own max is the tighter estimate, and speedups read off the
  two can differ.
* KV-cache quantization buys **capacity**: about twice the sequences at a long context.
* Smaller weights halve the crossover batch; above it, decode is compute-bound and quantized
  weights save memory but not time.
* TPOT is the mean step time over a growing context: where the steps change regime along the
  request, it sits above both the mean compute time and the mean memory time.
* Real quantized kernels stay well under the roofline: dequantization work, scales and zero
  points, and kernels that do not reach peak bandwidth.
"""
