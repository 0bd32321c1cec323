"""Lesson 6, "Scaling out": its graded questions (``scale_q1``, ``scale_q2``, ``scale_q3``, ``scale_q4``, ``scale_q5``).

Each solver computes the truth with course_lib when it is called: ``serve(..., tp=N)`` for
tensor parallelism, ``course_lib.topology`` for one AllReduce, ``course_lib.scaling`` for a
pipeline. Llama-3-70B, fp16, on HGX H100s (NVSwitch with NVLink SHARP) unless a question says.
"""
from __future__ import annotations

from ..exercises.answer_forms import Choice, Number, Ratio, Reason
from ..units import Q_
from .core import Solution, Truth, question

CHIP, MODEL, PROMPT, OUTPUT = "H100", "Llama3_70B", 2048, 128
GROUPS = (1, 2, 4, 8)


def _setting(chip=CHIP):
    from .. import Hardware, Models

    return Models.get(MODEL), Hardware.get(chip)


def _tpot(tp, chip=CHIP, **kw):
    from .. import serve

    m, hw = _setting(chip)
    return serve(m, hw, prompt_tokens=PROMPT, output_tokens=OUTPUT, tp=tp, **kw).decode


# ---- Q1 -----------------------------------------------------------------------------------------
@question("scale_q1", rule="by-hand",
          specs={"q1_weights_gb": Number("GB", rel_tol=0.02)},
          givens={"chip": CHIP},
          space={"chip": ["H100", "A100", "A100_40GB", "V100"]},
          labels={"chip": "GPU {value}"})
def q1(chip):
    from .. import serve

    m, hw = _setting(chip)
    weights = m.weight_bytes("fp16")
    fits = {n: serve(m, hw, prompt_tokens=PROMPT, output_tokens=OUTPUT, tp=n).fits for n in GROUPS}

    def work():
        cap = hw.memory_capacity_si
        print(f"weights: {m.parameters:.4g} parameters x 2 B = {weights:.4g} B = {weights / 1e9:.1f} GB "
              f"({weights / 2**30:.1f} GiB)")
        for n in GROUPS:
            per = serve(m, hw, prompt_tokens=PROMPT, output_tokens=OUTPUT, tp=n).memory_per_gpu_si
            print(f"  {n} GPU(s): {per / 1e9:6.1f} GB per GPU (weights / {n} + one sequence's KV cache) "
                  f"vs {cap / 1e9:.1f} GB -> {'fits' if fits[n] else 'does not fit'}")

    return Solution(
        {"q1_weights_gb": Truth(weights / 1e9, mistakes={"bytes-per-element": [weights / 2e9, weights * 2 / 1e9],
                                                          "gib-vs-gb": weights / 2**30},
                                explanation="Parameters x 2 bytes (fp16), in units of 10^9 bytes.")},
        hint="fp16 is 2 bytes per parameter; count in units of 10^9 bytes.",
        work=work)


# ---- Q2 -----------------------------------------------------------------------------------------
@question("scale_q2", rule="prediction", reflection=1,
          same_for_everyone="one published configuration (HGX H100 with NVLink SHARP) whose measured "
                            "AllReduce latency the lesson teaches; other chips are in the explorer",
          specs={"q2_speedup": Ratio(rel_tol=0.08), "q2_reasoning": Reason()})
def q2():
    four, eight = _tpot(4), _tpot(8)
    truth = four.latency_si / eight.latency_si
    free = _tpot(4, link_latency=Q_(0, "us")).latency_si / _tpot(8, link_latency=Q_(0, "us")).latency_si

    def work():
        print(" GPUs   TPOT      memory term  AllReduces (2 per layer)")
        for n in (2, 4, 8):
            d = _tpot(n)
            print(f"{n:5d} {d.latency_si * 1e3:7.2f} ms {d.t_memory_si * 1e3:9.2f} ms {d.t_comm_si * 1e3:9.2f} ms")
        print(f"\nTPOT(4) / TPOT(8) = {four.latency_si * 1e3:.2f} / {eight.latency_si * 1e3:.2f} = {truth:.3f} "
              f"(bytes alone, no AllReduce latency: {free:.3f})")

    return Solution(
        {"q2_speedup": Truth(truth, mistakes={"no-comm-latency": free, "inverted-ratio": 1 / truth},
                             explanation="Twice the GPUs halve each one's weight reads, but not the AllReduces: "
                                         "two per layer, each a fixed latency at decode's tiny messages.")},
        hint="Split TPOT into the memory term (weights / N / bandwidth) and the AllReduces (2 per layer, "
             "each costing its latency however small); which of them halves?",
        work=work)


# ---- Q3 -----------------------------------------------------------------------------------------
@question("scale_q3", rule="prediction", reflection=1,
          same_for_everyone="conceptual: decode's message is latency-bound and prefill's bandwidth-bound "
                            "at every prompt the lesson could draw",
          specs={"q3_decode": Choice("latency", "bandwidth"), "q3_prefill": Choice("latency", "bandwidth"),
                 "q3_reasoning": Reason()})
def q3():
    from ..topology import alpha

    m, hw = _setting()
    d = m.config.d_model
    msgs = {"decode": d * 2, "prefill": PROMPT * d * 2}

    def bound(nbytes):
        return "latency" if alpha(hw, 8) > nbytes / hw.interconnect_bandwidth_si else "bandwidth"

    def work():
        a = alpha(hw, 8)
        for name, nbytes in msgs.items():
            beta = nbytes / hw.interconnect_bandwidth_si
            print(f"{name:8s} {nbytes:>11,} B: latency {a * 1e6:.1f} us vs bytes / BW = {nbytes:,} / "
                  f"{hw.interconnect_bandwidth_si:.3g} = {beta * 1e6:.2f} us -> {bound(nbytes)}-bound")

    truths = {k: bound(v) for k, v in msgs.items()}
    other = {"latency": "bandwidth", "bandwidth": "latency"}
    return Solution(
        {f"q3_{k}": Truth(v, mistakes={"other-phase": other[v]},
                          explanation="Compare the fixed latency of one AllReduce with its bytes over the "
                                      "link: one token's activations, or the whole prompt's.")
         for k, v in truths.items()},
        hint="One AllReduce carries tokens x d_model x 2 bytes; compare bytes / 450 GB/s with its latency.",
        work=work)


# ---- Q4 -----------------------------------------------------------------------------------------
@question("scale_q4", rule="prediction", reflection=1,
          specs={"q4_ratio": Ratio(rel_tol=0.05), "q4_reasoning": Reason()},
          givens={"prompt": PROMPT},
          # two prompts: the ratio moves slowly with the prompt; others sit within the tolerance of the
          # lesson's own answer, of Q2's printed ratio (4096) or of 1.75, the bytes-alone mistake (8192)
          space={"prompt": [1024, 2048]}, min_variants=2,
          labels={"prompt": "prompt {value} tokens"})
def q4(prompt):
    from ..topology import allreduce_seconds, allreduce_time

    m, hw = _setting()
    nbytes = prompt * m.config.d_model * 2
    bw, hop = hw.interconnect_bandwidth_si, hw.link_latency_si
    nvls = allreduce_time(hw, nbytes, 8)
    ring = allreduce_seconds(nbytes, 8, bw, hop)
    truth = ring / nvls

    def work():
        print(f"message: {prompt} x {m.config.d_model} x 2 B = {nbytes:,} B")
        print(f"ring : 2(8-1)/8 x {nbytes:,} / {bw:.3g} + 14 x {hop * 1e6:.0f} us = {ring * 1e6:.1f} us")
        print(f"NVLS : {nbytes:,} / {bw:.3g} + {hw.allreduce_latency_si * 1e6:.1f} us (measured) = {nvls * 1e6:.1f} us")
        print(f"ring / NVLS = {truth:.3f}  (bytes alone: 1.75)")

    return Solution(
        {"q4_ratio": Truth(truth, mistakes={"no-comm-latency": 1.75, "inverted-ratio": 1 / truth},
                           explanation="A ring moves 2(N-1)/N of the buffer per GPU, the switch 1; each also "
                                       "pays its latency, which narrows the gap at this size.")},
        hint="Bytes each GPU sends: 2(N-1)/N of the buffer in a ring, once with NVLS; then add each one's "
             "latency term as the question gives it.",
        work=work)


# ---- Q5 -----------------------------------------------------------------------------------------
@question("scale_q5", rule="prediction", reflection=1,
          same_for_everyone="one configuration: eight H100s, batch 1, the lesson's request",
          specs={"q5_ratio": Ratio(rel_tol=0.1), "q5_reasoning": Reason()})
def q5():
    from ..scaling import pipeline_decode_step

    m, hw = _setting()
    pipe = pipeline_decode_step(m, hw, 8, prompt_tokens=PROMPT, output_tokens=OUTPUT)
    tensor = _tpot(8)
    truth = tensor.latency_si / pipe
    free = _tpot(8, link_latency=Q_(0, "us")).latency_si / pipe

    def work():
        print(f"pipeline, 8 stages: one GPU's step {_tpot(1).latency_si * 1e3:.2f} ms (all weights, one stage "
              f"after another) + 7 sends = {pipe * 1e3:.2f} ms")
        print(f"tensor, 8 GPUs    : {tensor.latency_si * 1e3:.2f} ms ({tensor.t_memory_si * 1e3:.2f} ms memory "
              f"+ {tensor.t_comm_si * 1e3:.2f} ms AllReduces)")
        print(f"TPOT(tensor) / TPOT(pipeline) = {truth:.3f}")

    return Solution(
        {"q5_ratio": Truth(truth, mistakes={"no-comm-latency": free, "inverted-ratio": 1 / truth},
                           explanation="A pipeline never reads weights in parallel for one token: its step is "
                                       "one GPU's. Tensor parallelism reads 1/8 each at once but pays the "
                                       "AllReduces.")},
        hint="In a pipeline one token visits the stages one after another: add their times. In tensor "
             "parallelism all GPUs work at once, then synchronize.",
        work=work)


TAKEAWAYS = """\
* A model whose weights exceed one GPU's memory must be split: count the bytes per GPU
  (weights / N plus the KV cache) against the capacity in real bytes.
* Tensor parallelism divides each GPU's weight reads by N but adds two AllReduces per layer;
  the network is a third roof beside compute and memory, and it does not shrink with N.
* An AllReduce costs a latency plus bytes over the link. Decode's messages (one token's
  activations) are latency-bound, prefill's (the whole prompt's) bandwidth-bound.
* A switch that sums the data (NVLink SHARP) sends each buffer once instead of a ring's
  2(N-1)/N times; it wins on large messages.
* A pipeline keeps the latency of one GPU per token and buys throughput only with a batch per
  stage in flight; tensor parallelism cuts the latency, with diminishing tokens/s per GPU.
* The seeds' T_network charges every hop the whole activation and ignores latency: too slow for
  prefill's large messages, far too fast for decode's small ones.
"""
