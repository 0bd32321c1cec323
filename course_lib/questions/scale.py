"""Lesson 6, "Scaling out": its graded questions (``scale_q1``, ``scale_q2``, ``scale_q3``, ``scale_q4``, ``scale_q5``, ``scale_q6``).

Each solver computes the truth with course_lib when it is called: ``serve(..., tp=N)`` for
tensor parallelism, ``course_lib.topology`` for one AllReduce, ``course_lib.scaling`` for a
pipeline. Llama-3-70B, fp16, on HGX H100s (NVSwitch with NVLink SHARP) unless a question says.

Every question has per-student variants (LESSON.every_question_varies):
the model and chip of Q1, the model, chip and group of Q2, the chip and prompt of Q3, the group
and prompt of Q4, the chip and group of Q5, the model, group and batch of Q6. The chips drawn for
Q2-Q5 are the HGX H100 and H200, whose small-message AllReduce times are measured
(``course_lib.topology.message_latency``). Q6 counts the KV cache one GPU holds; it is the
same on any chip, so the H100 serves its solver.

Each question names what it asks for: the **bound** (Q3: the fastest published AllReduce latency,
communication overlapped) or an **estimate** with a named implementation's measured latency and
no overlap (Q2: SGLang's custom AllReduce; Q4 and Q5: NCCL 2.20.5).
"""
from __future__ import annotations

from ..exercises.answer_forms import Choice, Number, Ratio, Reason
from ..units import Q_
from .core import Solution, Truth, question
from .registry import Lesson

CHIP, MODEL, PROMPT, OUTPUT = "H100", "Llama3_70B", 2048, 128
GROUPS = (1, 2, 4, 8)
#: the lesson's notebook and the bars lint and the tests hold it to (registry.Lesson)
LESSON = Lesson("06_scaling_out", every_question_varies=True, min_admissible_variants=4)
#: the chips of Q2-Q5's variants: HGX boards whose small-message AllReduce time is measured
NVLS_CHIPS = ["H100", "H200"]


def _setting(chip=CHIP, model=MODEL):
    from .. import Hardware, Models

    return Models.get(model), Hardware.get(chip)


#: the implementation each estimate names (course_lib.topology.IMPLEMENTATIONS)
Q2_ALLREDUCE, Q4_ALLREDUCE, Q5_ALLREDUCE = "sglang", "nccl", "nccl"


def _tpot(tp, chip=CHIP, model=MODEL, **kw):
    from .. import serve

    m, hw = _setting(chip, model)
    return serve(m, hw, prompt_tokens=PROMPT, output_tokens=OUTPUT, tp=tp, **kw).decode


def _chip_words(chip) -> str:
    from .. import Hardware

    hw = Hardware.get(chip)
    return (f"GPU {hw.name} ({hw.memory_bandwidth_si / 1e12:.2f} TB/s, NVLink "
            f"{hw.interconnect_bandwidth_si / 1e9:.0f} GB/s per direction)")


def _model_words(model) -> str:
    from .. import Models

    m = Models.get(model)
    return f"model {m.name} ({m.parameters:,} parameters)"


# ---- Q1 -----------------------------------------------------------------------------------------
@question("scale_q1", rule="by-hand",
          specs={"q1_weights_gb": Number("GB", rel_tol=0.02)},
          givens={"model": MODEL, "chip": CHIP},
          space={"model": [MODEL, "Llama2_70B", "Mixtral_8x7B", "GPT3_175B"], "chip": ["H100", "H200", "A100"]},
          labels={"model": _model_words, "chip": "GPU {value}"})
def q1(model, chip):
    from .. import serve

    m, hw = _setting(chip, model)
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


def _both_fit(model, chip, groups) -> str | None:
    """Why a variant asks about a group its model's weights and KV cache do not fit in, or None."""
    from .. import serve

    m, hw = _setting(chip, model)
    short = [n for n in groups if not serve(m, hw, prompt_tokens=PROMPT, output_tokens=OUTPUT, tp=n).fits]
    return f"{m.name} does not fit on {short[0]} {hw.name}" if short else None


# ---- Q2 ---------------------------------------------------------------------------------------
@question("scale_q2", rule="prediction", reflection=1,
          specs={"q2_speedup": Ratio(rel_tol=0.05), "q2_reasoning": Reason()},
          givens={"model": MODEL, "chip": CHIP, "gpus": 8},
          # with SGLang's few-microsecond latency the 70B models from 2 to 4 GPUs (and GPT-3 at any
          # group) sit within the margin of bytes alone: smaller models keep the latency visible
          space={"model": [MODEL, "Mixtral_8x7B", "Llama3_8B"], "chip": NVLS_CHIPS, "gpus": [4, 8]},
          labels={"model": _model_words, "chip": _chip_words,
                  "gpus": lambda n: f"from {n // 2} to {n} GPUs (TPOT({n // 2}) / TPOT({n}))"},
          assumes=lambda model, chip, gpus: _both_fit(model, chip, (gpus // 2, gpus)))
def q2(model, chip, gpus):
    """The estimate with SGLang's custom AllReduce: its measured latency per group, no overlap."""
    from ..topology import message_latency

    ar = Q2_ALLREDUCE
    half, full = _tpot(gpus // 2, chip, model, allreduce=ar), _tpot(gpus, chip, model, allreduce=ar)
    truth = half.latency_si / full.latency_si

    def ratio(**kw):
        return _tpot(gpus // 2, chip, model, **kw).latency_si / _tpot(gpus, chip, model, **kw).latency_si

    free = ratio(allreduce=ar, link_latency=Q_(0, "us"))
    nccl = ratio(allreduce="nccl")
    _, hw = _setting(chip, model)

    def work():
        print(f"{_model_words(model)} on the {_chip_words(chip)}")
        print("estimate: SGLang's custom AllReduce, its measured latency per group, added after the memory term")
        print(" GPUs   TPOT      memory term  AllReduces (2 per layer, latency each)")
        for n in sorted({2, gpus // 2, gpus}):
            d = _tpot(n, chip, model, allreduce=ar)
            print(f"{n:5d} {d.latency_si * 1e3:7.2f} ms {d.t_memory_si * 1e3:9.2f} ms {d.t_comm_si * 1e3:9.2f} ms "
                  f"({message_latency(hw, n, ar) * 1e6:.1f} us)")
        print(f"\nTPOT({gpus // 2}) / TPOT({gpus}) = {half.latency_si * 1e3:.2f} / {full.latency_si * 1e3:.2f} "
              f"= {truth:.3f} (bytes alone, no AllReduce latency: {free:.3f}; with NCCL 2.20's latency: {nccl:.3f})")

    return Solution(
        {"q2_speedup": Truth(truth, mistakes={"no-comm-latency": free, "inverted-ratio": 1 / truth,
                                              "other-implementation": nccl},
                             explanation="An estimate, not a bound: SGLang's custom AllReduce adds its measured "
                                         "latency, a few microseconds, after each layer's reads. Twice the GPUs "
                                         "halve each one's weight reads but not the 2 x layers AllReduces, whose "
                                         "latency even grows a little with the group.")},
        hint="Split TPOT into the memory term (weights / N / bandwidth) and the AllReduces (2 per layer, "
             "each costing SGLang's measured latency for that group, printed by the setup cell); which of them halves?",
        work=work)


# ---- Q3 -----------------------------------------------------------------------------------------
@question("scale_q3", rule="prediction", reflection=1,
          specs={"q3_decode": Choice("latency", "bandwidth"), "q3_prefill": Choice("latency", "bandwidth"),
                 "q3_reasoning": Reason()},
          givens={"chip": CHIP, "prompt": PROMPT},
          # under the bound's 3.6 us, prefill crosses from latency- to bandwidth-bound near 100
          # tokens on both chips: every prompt drawn is at least 2.5x away from it
          space={"chip": NVLS_CHIPS, "prompt": [256, 2048, 4096, 8192]},
          labels={"chip": _chip_words, "prompt": "a {value}-token prompt"})
def q3(chip, prompt):
    """The bound: the fastest published AllReduce latency for the chip against the bytes' time."""
    from ..topology import alpha

    m, hw = _setting(chip)
    d = m.config.d_model
    msgs = {"decode": d * 2, "prefill": prompt * d * 2}

    def bound(nbytes):
        return "latency" if alpha(hw, 8) > nbytes / hw.interconnect_bandwidth_si else "bandwidth"

    def work():
        a = alpha(hw, 8)
        for name, nbytes in msgs.items():
            beta = nbytes / hw.interconnect_bandwidth_si
            print(f"{name:8s} {nbytes:>11,} B: the bound's latency {a * 1e6:.1f} us vs bytes / BW = {nbytes:,} / "
                  f"{hw.interconnect_bandwidth_si:.3g} = {beta * 1e6:.2f} us -> {bound(nbytes)}-bound")

    truths = {k: bound(v) for k, v in msgs.items()}
    other = {"latency": "bandwidth", "bandwidth": "latency"}
    return Solution(
        {f"q3_{k}": Truth(v, mistakes={"other-phase": other[v]},
                          explanation="Compare the bound's latency of one AllReduce (the fastest published "
                                      "for the chip) with its bytes over the link: one token's activations, "
                                      "or the whole prompt's.")
         for k, v in truths.items()},
        hint=f"One AllReduce carries tokens x d_model x 2 bytes; compare bytes / "
             f"{hw.interconnect_bandwidth_si / 1e9:.0f} GB/s with the bound's latency (the setup cell prints it).",
        work=work)


# ---- Q4 -----------------------------------------------------------------------------------------
@question("scale_q4", rule="prediction", reflection=1,
          specs={"q4_ratio": Ratio(rel_tol=0.05), "q4_reasoning": Reason()},
          givens={"gpus": 8, "prompt": PROMPT},
          # the fraction moves slowly with the prompt; larger prompts sit within the tolerance of the
          # bytes-alone mistake N/(2(N-1)). Asked as NVLS / ring (below 1): Q2's and Q5's ratios,
          # which students see first, never come near it
          space={"gpus": [4, 8], "prompt": [1024, 2048, 3072]},
          labels={"gpus": "{value} H100s", "prompt": "prompt {value} tokens"})
def q4(gpus, prompt):
    """The estimate with NCCL 2.20's measured latency, one per message for a ring and NVLS alike."""
    from ..measurements import find
    from ..topology import allreduce_time, message_latency

    m, hw = _setting()
    ar = Q4_ALLREDUCE
    nbytes = prompt * m.config.d_model * 2
    bw = hw.interconnect_bandwidth_si
    nvls = allreduce_time(hw, nbytes, gpus, allreduce=ar)
    ring = allreduce_time(hw, nbytes, gpus, in_switch=False, allreduce=ar)
    truth = nvls / ring
    share = gpus / (2 * (gpus - 1))                 # the switch's bytes over the ring's

    def work():
        a = message_latency(hw, gpus, ar)
        print(f"message: {prompt} x {m.config.d_model} x 2 B = {nbytes:,} B")
        print(f"estimate: NCCL 2.20's measured latency {a * 1e6:.1f} us, one per AllReduce, ring or switch")
        print(f"ring : 2({gpus}-1)/{gpus} x {nbytes:,} / {bw:.3g} + {a * 1e6:.1f} us = {ring * 1e6:.1f} us")
        print(f"NVLS : {nbytes:,} / {bw:.3g} + {a * 1e6:.1f} us = {nvls * 1e6:.1f} us")
        print(f"NVLS / ring = {nvls * 1e6:.1f} / {ring * 1e6:.1f} = {truth:.3f}  (bytes alone: {share:.3g})")
        peaks = {r.algorithm: r.value for r in find(kind="allreduce_peak", hardware=CHIP, tp=8)}
        print(f"(both at the line rate; NCCL's measured peak bus bandwidths on 8 H100s, {peaks['nvls'] / 1e9:.0f} "
              f"GB/s NVLS and {peaks['ring'] / 1e9:.0f} GB/s ring, would make bytes alone "
              f"{peaks['ring'] / peaks['nvls']:.2f}, not {share:.3g}: course_lib.measurements)")

    return Solution(
        {"q4_ratio": Truth(truth, mistakes={"no-comm-latency": share, "inverted-ratio": 1 / truth},
                           explanation="An estimate with NCCL 2.20's measured latency: a ring moves 2(N-1)/N of "
                                       "the buffer per GPU, the switch 1; both also pay the same latency, which "
                                       "narrows the gap at this size.")},
        hint="Bytes each GPU sends: 2(N-1)/N of the buffer in a ring, once with NVLS; then add NCCL's latency "
             "to both (the setup cell prints it), and divide the switch's time by the ring's.",
        work=work)


# ---- Q5 -----------------------------------------------------------------------------------------
@question("scale_q5", rule="prediction", reflection=1,
          specs={"q5_ratio": Ratio(rel_tol=0.1), "q5_reasoning": Reason()},
          givens={"chip": CHIP, "gpus": 8},
          space={"chip": NVLS_CHIPS, "gpus": [4, 8]},
          labels={"chip": _chip_words, "gpus": "{value} GPUs"})
def q5(chip, gpus):
    """The estimate with NCCL 2.20's measured latency, for the AllReduces and the sends alike."""
    from ..scaling import pipeline_decode_step

    m, hw = _setting(chip)
    ar = Q5_ALLREDUCE
    pipe = pipeline_decode_step(m, hw, gpus, prompt_tokens=PROMPT, output_tokens=OUTPUT, allreduce=ar)
    tensor = _tpot(gpus, chip, allreduce=ar)
    truth = tensor.latency_si / pipe
    free = _tpot(gpus, chip, allreduce=ar, link_latency=Q_(0, "us")).latency_si / pipe
    custom = (_tpot(gpus, chip, allreduce="sglang").latency_si
              / pipeline_decode_step(m, hw, gpus, prompt_tokens=PROMPT, output_tokens=OUTPUT, allreduce="sglang"))

    def work():
        print("estimate: NCCL 2.20's measured latency for every message (AllReduce or send), not overlapped")
        print(f"pipeline, {gpus} stages: one GPU's step {_tpot(1, chip).latency_si * 1e3:.2f} ms (all weights, "
              f"one stage after another) + {gpus - 1} sends = {pipe * 1e3:.2f} ms")
        print(f"tensor, {gpus} GPUs    : {tensor.latency_si * 1e3:.2f} ms ({tensor.t_memory_si * 1e3:.2f} ms memory "
              f"+ {tensor.t_comm_si * 1e3:.2f} ms AllReduces)")
        print(f"TPOT(tensor) / TPOT(pipeline) = {truth:.3f}")

    return Solution(
        {"q5_ratio": Truth(truth, mistakes={"no-comm-latency": free, "inverted-ratio": 1 / truth,
                                            "other-implementation": custom},
                           explanation="An estimate with NCCL 2.20's latency: a pipeline never reads weights in "
                                       "parallel for one token, so its step is one GPU's (plus a send per stage). "
                                       "Tensor parallelism reads 1/N each at once but pays the AllReduces.")},
        hint="In a pipeline one token visits the stages one after another: add their times. In tensor "
             "parallelism all GPUs work at once, then synchronize.",
        work=work)


# ---- Q6 -----------------------------------------------------------------------------------------
def _kv_per_gpu(model, gpus, batch):
    """Bytes of KV cache one GPU holds for `batch` sequences at their last token (serve's figure:
    the memory per GPU less the weights' share)."""
    from .. import serve

    m, hw = _setting(CHIP, model)
    s = serve(m, hw, prompt_tokens=PROMPT, output_tokens=OUTPUT, batch_size=batch, tp=gpus)
    return s.memory_per_gpu_si - s.weight_bytes_si / gpus


@question("scale_q6", rule="by-hand",
          specs={"q6_kv_gb": Number("GB", rel_tol=0.02)},
          givens={"model": MODEL, "gpus": 16, "batch": 32},
          space={"model": [MODEL, "Mixtral_8x7B", "GPT3_175B"], "gpus": [8, 16], "batch": [32, 64]},
          labels={"model": lambda name: f"{_model_words(name)}, {_kv_heads(name)} KV heads",
                  "gpus": "{value} GPUs in the tensor-parallel group",
                  "batch": "{value} sequences"})
def q6(model, gpus, batch):
    from .. import Models

    m = Models.get(model)
    c = m.config
    tokens = PROMPT + OUTPUT
    per_token = m.kv_bytes_per_token("fp16")
    heads = -(-c.n_kv_heads // gpus)                 # KV heads per GPU: never fewer than one
    truth = _kv_per_gpu(model, gpus, batch)
    everything = batch * tokens * per_token
    mistakes = {"gib-vs-gb": truth / 2**30}
    if gpus > c.n_kv_heads:
        mistakes["kv-split-past-heads"] = everything / gpus / 1e9

    def work():
        print(f"KV cache per token: 2 (K and V) x {c.n_layers} layers x {c.n_kv_heads} KV heads x {c.hd} x 2 B "
              f"= {per_token:,} B")
        print(f"{batch} sequences x {tokens} tokens (prompt {PROMPT} + output {OUTPUT}) x {per_token:,} B "
              f"= {everything / 1e9:.2f} GB in all")
        print(f"each GPU holds ceil({c.n_kv_heads} / {gpus}) = {heads} of the {c.n_kv_heads} KV heads: "
              f"{everything / 1e9:.2f} x {heads}/{c.n_kv_heads} = {truth / 1e9:.3f} GB per GPU"
              + (f" (the heads are replicated: {gpus} GPUs hold {gpus * heads} copies of {c.n_kv_heads} heads)"
                 if gpus > c.n_kv_heads else ""))

    return Solution(
        {"q6_kv_gb": Truth(truth / 1e9, mistakes=mistakes,
                           explanation="A KV head is never split: each GPU holds ceil(KV heads / N) whole heads, "
                                       "so beyond as many GPUs as KV heads the cache per GPU stops shrinking "
                                       "and the heads are replicated.")},
        hint="Bytes per token: 2 x layers x KV heads x head size x 2 B; times the tokens and the sequences; "
             "then the share of the KV heads one GPU holds (a head is never split between GPUs).",
        work=work)


def _kv_heads(model) -> int:
    from .. import Models

    return Models.get(model).config.n_kv_heads


TAKEAWAYS = """\
* A model whose weights exceed one GPU's memory must be split: count the bytes per GPU
  (weights / N plus the KV cache) against the capacity in real bytes.
* Tensor parallelism divides each GPU's weight reads by N but adds two AllReduces per layer;
  the network is a third roof beside compute and memory, and it does not shrink with N.
* An AllReduce costs a latency plus bytes over the link. Decode's messages (one token's
  activations) are latency-bound; prefill's (the whole prompt's) turn bandwidth-bound once the
  prompt's bytes over the link outlast the latency (about a hundred tokens at the fastest
  published latency on HGX H100).
* The bound and an estimate are different numbers: the bound takes the fastest published
  AllReduce latency and lets communication overlap (never slower than any measurement); an
  estimate names an implementation (NCCL, a custom kernel from SGLang or vLLM), takes its
  measured latency and adds it, as decode runs it: each layer waits for its sum.
* Serving frameworks replace NCCL's AllReduce at decode's small messages with custom kernels
  (one-shot, two-shot) whose latency is several times lower; it is launch and synchronisation,
  not bytes, that they save.
* A switch that sums the data (NVLink SHARP) sends each buffer once instead of a ring's
  2(N-1)/N times. At decode's small messages both pay the same latency, so they tie; the switch
  pulls ahead as the messages grow, towards 2(N-1)/N on large ones.
* A pipeline keeps the latency of one GPU per token and buys throughput only with a batch per
  stage in flight; tensor parallelism cuts the latency, with diminishing tokens/s per GPU.
* A KV head is never split between GPUs: beyond as many GPUs as the model has KV heads, the KV
  cache per GPU stops shrinking and the heads are replicated.
* The seeds' T_network charges every hop the whole activation and ignores latency: too slow for
  prefill's large messages, far too fast for decode's small ones.
"""
