"""Lesson 3, "Two phases, one request": its graded questions (``phases_q1`` ... ``phases_q8``).

Each solver computes the truth with course_lib when it is called (at grading time too), the
answer each classic mistake leads to, and the arithmetic its verify cell prints.
"""
from __future__ import annotations

from ..exercises.answer_forms import Choice, Number, Ratio, Reason, Regime, WholeNumber
from ..formatting import fmt_batch
from .core import Solution, Truth, question
from .registry import Lesson

#: the lesson's notebook and the bars lint and the tests hold it to (registry.Lesson)
LESSON = Lesson("03_two_phases")

CHIP, MODEL = "H100", "Llama3_8B"


def _setting(chip=CHIP, model=MODEL):
    from .. import Hardware, Models

    return Models.get(model), Hardware.get(chip)


def _does_not_fit(context, batch, chip=CHIP):
    """Why `batch` sequences of `context` tokens do not fit beside the weights (None: they do)."""
    from .. import max_batch_size

    llama, gpu = _setting(chip=chip)
    if llama.weight_bytes("fp16") >= gpu.memory_capacity_si:
        return f"the weights alone do not fit on the {chip}"
    if batch and max_batch_size(llama, gpu, context_tokens=context) < batch:
        return f"{batch} sequences of {context} tokens do not fit on the {chip}"
    return None


def _per_kernel(s) -> dict:
    """``kernel_latency`` of what ``serve`` returned as `s` (one GPU, pure roofline): its TTFT and
    TPOT with every kernel at its own max(t_compute, t_memory), summed; never below serve's."""
    from ..serving import kernel_latency

    return kernel_latency(s.model, s.hardware, prompt_tokens=s.prompt_tokens, output_tokens=s.output_tokens,
                          batch_size=s.batch_size, precision="fp16")


def _against(step: float, kernels: float) -> str:
    """A step-level time beside its per-kernel sum, in words (milliseconds)."""
    if kernels <= step * (1 + 1e-9):
        return f"{step * 1e3:.2f} ms either way (every kernel in the same regime)"
    return (f"step-level {step * 1e3:.2f} ms, a lower bound; per kernel {kernels * 1e3:.2f} ms "
            f"({kernels / step - 1:+.0%})")


# ---- Q1 -----------------------------------------------------------------------------------------
@question("phases_q1", rule="prediction", reflection=1,
          specs={"q1_prefill": Regime(), "q1_decode": Regime(), "q1_reasoning": Reason()},
          givens={"prompt": 2048, "output": 128})
def q1(prompt, output):
    from .. import serve

    llama, h100 = _setting()
    req = serve(llama, h100, prompt_tokens=prompt, output_tokens=output, batch_size=1)

    def work():
        ridge = h100.ridge_point_si("fp16")
        print(f"TTFT {req.prefill.latency_si * 1e3:.2f} ms, TPOT {req.decode.latency_si * 1e3:.2f} ms "
              f"(prompt {prompt}, {output} output tokens, batch 1)")
        k = _per_kernel(req)
        print(f"  kernel by kernel, each at its own max(t_compute, t_memory), summed: TTFT "
              f"{_against(req.prefill.latency_si, k['ttft'])}; TPOT {_against(req.decode.latency_si, k['tpot'])}")
        for ph in (req.prefill, req.decode):
            print(f"{ph.name:8s} {ph.flops_si:.3g} FLOP / {ph.bytes_si:.3g} B = "
                  f"{ph.flops_si / ph.bytes_si:.4g} FLOP/byte vs ridge {ridge:.0f} -> {ph.bottleneck}")
        parts = {k: v.m_as("B") for k, v in req.prefill.bytes_breakdown.items()}
        print(f"\nprefill bytes: weights {parts['weights'] / 1e9:.1f} GB, activations "
              f"{parts['activations'] / 1e9:.1f} GB, KV cache {parts['kv_cache'] / 1e9:.2f} GB")
        print(f"  FLOPs / weight bytes only = {req.prefill.flops_si / parts['weights']:.0f} FLOP/byte "
              f"(about P = {prompt}); FLOPs / all bytes = {req.prefill.flops_si / req.prefill.bytes_si:.0f} FLOP/byte")

    return Solution(
        {"q1_prefill": Truth(req.prefill.bottleneck, mistakes={"other-phase": req.decode.bottleneck},
                             explanation=f"All {prompt} prompt tokens pass through each weight while it is on "
                                         "chip: many FLOPs per byte read. Compare that intensity with the ridge."),
         "q1_decode": Truth(req.decode.bottleneck, mistakes={"other-phase": req.prefill.bottleneck},
                            explanation="A decode step at batch 1 does 2 FLOPs per 2-byte weight it reads. "
                                        "Compare that intensity with the ridge.")},
        hint="Count the FLOPs done per byte read: how many tokens use each weight while it is on the chip?",
        work=work)


# ---- Q2 -----------------------------------------------------------------------------------------
@question("phases_q2", rule="prediction", reflection=1,
          specs={"q2_prediction": Ratio(rel_tol=0.05), "q2_reasoning": Reason()},
          givens={"short": 1024, "long": 8192},
          space={"short": [512, 1024, 2048], "long": [6144, 8192]},
          labels={"short": "short prompt {value} tokens", "long": "long prompt {value} tokens"})
def q2(short, long):
    from .. import serve

    llama, h100 = _setting()
    s_short = serve(llama, h100, prompt_tokens=short, output_tokens=128)
    s_long = serve(llama, h100, prompt_tokens=long, output_tokens=128)
    truth = s_long.prefill.latency_si / s_short.prefill.latency_si
    per_kernel = _per_kernel(s_long)["ttft"] / _per_kernel(s_short)["ttft"]

    def attention_flops(prompt):
        t = llama.prefill_table(prompt)
        return float((t.flops * t.count)[t.attention].sum())

    def work():
        print(" prompt    TTFT   regime          attention share of prefill FLOPs")
        for p_len in sorted({512, short, 2048, 4096, long}):
            s = serve(llama, h100, prompt_tokens=p_len, output_tokens=128)
            t = llama.prefill_table(p_len)
            flops = t.flops * t.count
            print(f"{p_len:7d} {s.prefill.latency_si * 1e3:7.2f} ms  {s.prefill.bottleneck:14s}  "
                  f"{attention_flops(p_len) / float(flops.sum()):6.1%}")
        print(f"\nTTFT({long}) / TTFT({short}) = {s_long.prefill.latency_si * 1e3:.2f} / "
              f"{s_short.prefill.latency_si * 1e3:.2f} = {truth:.3f}   (prompt ratio {long / short:g})")
        k_long, k_short = _per_kernel(s_long)["ttft"], _per_kernel(s_short)["ttft"]
        print(f"kernel by kernel (each at its own max, summed): {k_long * 1e3:.2f} / {k_short * 1e3:.2f} = "
              f"{per_kernel:.3f}. serve's TTFTs are step-level maxes, lower bounds: the norms and residual adds stay "
              "memory-bound and grow only like P, which pulls the per-kernel ratio toward the prompt ratio.")

    return Solution(
        {"q2_prediction": Truth(truth, mistakes={
            "attention-ignored": long / short,                                   # the linear layers only
            "attention-quadratic": attention_flops(long) / attention_flops(short),
            "inverted-ratio": 1 / truth},
            explanation="Compute-bound work scales with its FLOPs: weigh the part that grows like P and "
                        "the part that grows like P squared (the table's last column). Graded on serve's "
                        "step-level TTFTs (lower bounds); kernel by kernel the ratio is "
                        f"{per_kernel:.2f}, as printed above.")},
        hint="Prefill is the regime you found in Q1: its time follows what that regime says. Weigh the "
             "linear-in-P and the quadratic-in-P parts of it.",
        work=work)


# ---- Q3 -----------------------------------------------------------------------------------------
@question("phases_q3", rule="prediction", reflection=1,
          specs={"q3_prediction": Ratio(rel_tol=0.15), "q3_reasoning": Reason()},
          givens={"prompt": 1024, "output": 128, "batch": 64},
          space={"prompt": [512, 1024, 2048], "batch": [32, 64, 128]},
          labels={"prompt": "prompt {value} tokens", "batch": "batch {value} sequences"},
          assumes=lambda prompt, output, batch: _does_not_fit(prompt + output, batch))
def q3(prompt, output, batch):
    from .. import serve, solve

    llama, h100 = _setting()
    one = serve(llama, h100, prompt_tokens=prompt, output_tokens=output, batch_size=1)
    many = serve(llama, h100, prompt_tokens=prompt, output_tokens=output, batch_size=batch)
    truth = many.decode.latency_si / one.decode.latency_si
    # no KV cache: a step whose sequences hold one token each
    no_kv = (solve(llama, h100, batch_size=batch, context_tokens=1).latency_si
             / solve(llama, h100, batch_size=1, context_tokens=1).latency_si)

    def work():
        print(f"batch | prompt {prompt}: TPOT   tokens/s   regime        KV cache read per step")
        for b in sorted({1, 8, batch, 256}):
            s = serve(llama, h100, prompt_tokens=prompt, output_tokens=output, batch_size=b)
            print(f"{b:5d} | {s.decode.latency_si * 1e3:14.2f} ms {b / s.decode.latency_si:9.0f}   "
                  f"{s.decode.bottleneck:13s} {s.decode.bytes_breakdown['kv_cache'].m_as('GB'):6.2f} GB  "
                  f"(weights {s.decode.bytes_breakdown['weights'].m_as('GB'):.2f} GB)")
        print(f"\nTPOT({batch}) / TPOT(1) = {many.decode.latency_si * 1e3:.3f} / "
              f"{one.decode.latency_si * 1e3:.3f} = {truth:.3f}; tokens/s grows "
              f"{batch} / {truth:.3f} = {batch / truth:.0f}x")
        print(f"kernel by kernel, TPOT at batch {batch}: {_against(many.decode.latency_si, _per_kernel(many)['tpot'])}")

    return Solution(
        {"q3_prediction": Truth(truth, mistakes={"weights-per-sample": batch, "no-kv-cache": no_kv,
                                                 "inverted-ratio": 1 / truth},
                                explanation="Memory-bound decode pays for the weights once per step, however "
                                            "many sequences share it; each sequence adds its own KV cache "
                                            "(its whole context, every step) and activations.")},
        hint=f"Decide decode's regime at batch {batch} first; then ask which bytes the {batch} sequences share "
             "and which each brings, and how big each part is at this context.",
        work=work)


# ---- Q4 -----------------------------------------------------------------------------------------
@question("phases_q4", rule="by-hand",
          specs={"q4_kv_per_token": Number("byte", rel_tol=0.02), "q4_kv_batch": Number("GB", rel_tol=0.02)},
          givens={"batch": 32, "context": 4096},
          space={"batch": [16, 24, 32, 48], "context": [2048, 4096, 8192]},
          labels={"batch": "batch {value} sequences", "context": "{value} tokens each"},
          assumes=lambda batch, context: _does_not_fit(context, batch))
def q4(batch, context):
    from .. import serve

    llama, h100 = _setting()
    c = llama.config
    per_token = llama.kv_bytes_per_token("fp16")
    mha_per_token = llama.variant(n_kv_heads=c.n_heads).kv_bytes_per_token("fp16")  # sized by the query heads
    s = serve(llama, h100, prompt_tokens=context - 128, output_tokens=128, batch_size=batch)

    def work():
        print(f"KV per token = 2 · {c.n_layers} · {c.n_kv_heads} · {c.hd} · 2 B = {per_token:,} B")
        print(f"Batch: {batch} · {context} · {per_token:,} B = {s.kv_cache_bytes_si:,.0f} B = "
              f"{s.kv_cache_bytes_si / 1e9:.2f} GB = {s.kv_cache_bytes_si / 2**30:.2f} GiB "
              f"(weights: {s.weight_bytes_si / 1e9:.2f} GB)")

    return Solution(
        {"q4_kv_per_token": Truth(per_token, mistakes={"query-heads": mha_per_token,
                                                        "k-or-v-only": per_token / 2,
                                                        "bytes-per-element": [per_token / 2, per_token * 2]},
                                  explanation="Count K and V (2), every layer, the KV heads (not the query "
                                              "heads) and 2 bytes per fp16 element."),
         "q4_kv_batch": Truth(s.kv_cache_bytes, mistakes={"gib-vs-gb": s.kv_cache_bytes.m_as("GiB"),
                                                           "query-heads": s.kv_cache_bytes * mha_per_token / per_token},
                              explanation="Multiply per-token bytes by tokens per sequence and by sequences; "
                                          "divide by 1e9 for decimal GB (2^30 would give GiB).")},
        hint="Per token: K and V, the layers, the KV heads, head_dim and the bytes per fp16 element. For the "
             "batch: per-token bytes x tokens per sequence x sequences, in units of 10^9 bytes.",
        work=work)


# ---- Q5 -----------------------------------------------------------------------------------------
@question("phases_q5", rule="by-hand",
          specs={"q5_capacity_gb": Number("GB", rel_tol=0.01), "q5_max_batch": WholeNumber(rel_tol=0.02)},
          givens={"context": 8192},
          space={"context": [2048, 4096, 6144, 8192]},
          labels={"context": "sequences of {value} tokens"})
def q5(context):
    from .. import Hardware, max_batch_size
    from ..sensitivity import perturb

    llama, h100 = _setting()
    capacity = h100.memory_capacity
    with perturb(capacity="decimal"):                  # what reading "80 GB" as 80e9 bytes gives
        decimal_capacity = Hardware.get(CHIP).memory_capacity
        decimal_batch = max_batch_size(llama, Hardware.get(CHIP), context_tokens=context)
    per_sequence = context * llama.kv_bytes_per_token("fp16")
    batch = max_batch_size(llama, h100, context_tokens=context)
    cap, w, kv = h100.memory_capacity_si, llama.weight_bytes("fp16"), llama.kv_bytes_per_token("fp16")

    def work():
        print(f"{h100.memory_capacity.m_as('MiB'):,.0f} MiB x 2^20 = {cap:,.0f} B = {cap / 1e9:.2f} GB "
              f"= {cap / 2**30:.2f} GiB (the datasheet's \"80 GB\" read as 80e9 B would be {80e9 / cap - 1:+.1%})")
        print(f"({cap:.4g} - {w:.4g}) B / ({context} · {kv:,} B) = {(cap - w) / (context * kv):.2f} -> "
              f"{batch} sequences")
        print("\ncontext  max batch")
        for ctx in (1024, 2048, 4096, 8192):
            print(f"{ctx:7d}  {max_batch_size(llama, h100, context_tokens=ctx):9d}")

    return Solution(
        {"q5_capacity_gb": Truth(capacity, mistakes={"gib-vs-gb": [decimal_capacity, capacity.m_as("GiB"),
                                                                    capacity.m_as("MiB") / 1e3]},
                                 explanation="MiB are binary: multiply by 2^20 for bytes, then divide by 1e9 "
                                             "for decimal GB."),
         "q5_max_batch": Truth(batch, mistakes={"gib-vs-gb": decimal_batch,
                                                "weights-not-subtracted": h100.memory_capacity_si // per_sequence},
                               explanation="Subtract the weights from the capacity in bytes (binary, as "
                                           "nvidia-smi counts), then divide by the KV bytes of one whole "
                                           "sequence (context x per-token bytes), rounding down.")},
        hint="Convert nvidia-smi's MiB to bytes (x 2^20), then to units of 10^9 bytes. For the batch: subtract "
             "the weights from the capacity in bytes, divide by one sequence's KV cache, round down.",
        work=work)


# ---- Q6 -----------------------------------------------------------------------------------------
@question("phases_q6", rule="prediction", reflection=1,
          specs={"q6_prediction": Ratio(rel_tol=0.08), "q6_reasoning": Reason()},
          givens={"chip": "L4"})
def q6(chip):
    llama, gpu = _setting(chip=chip)
    mha = llama.variant(n_kv_heads=llama.config.n_heads)
    cap = gpu.memory_capacity_si

    def tokens(model):
        """Tokens of KV cache (summed over sequences) that fit beside the weights."""
        return (cap - model.weight_bytes("fp16")) / model.kv_bytes_per_token("fp16")

    truth = tokens(llama) / tokens(mha)

    def work():
        print(f"{gpu.name}: {gpu.memory_capacity.m_as('MiB'):,.0f} MiB = {cap / 1e9:.2f} GB")
        print(f"{'model':28s} {'KV heads':>8s} {'KV B/token':>11s} {'weights GB':>10s} {'room GB':>8s} {'tokens':>9s}")
        for mod in (llama, mha):
            print(f"{mod.name:28s} {mod.config.n_kv_heads:8d} {mod.kv_bytes_per_token('fp16'):11,d} "
                  f"{mod.weight_bytes('fp16') / 1e9:10.2f} {(cap - mod.weight_bytes('fp16')) / 1e9:8.2f} "
                  f"{tokens(mod):9,.0f}")
        print(f"\ntokens(GQA) / tokens(MHA) = {tokens(llama):,.0f} / {tokens(mha):,.0f} = {truth:.2f}; "
              f"KV bytes per token alone: {mha.kv_bytes_per_token('fp16') / llama.kv_bytes_per_token('fp16'):.0f}x; "
              f"room beside the weights: {(cap - llama.weight_bytes('fp16')) / (cap - mha.weight_bytes('fp16')):.2f}x")

    return Solution(
        {"q6_prediction": Truth(truth, mistakes={"weights-not-subtracted":      # the whole memory for the cache: the KV ratio
                                                     mha.kv_bytes_per_token("fp16") / llama.kv_bytes_per_token("fp16"),
                                                 "query-heads": 1.0,
                                                 "inverted-ratio": 1 / truth},
                                explanation="The cache that fits is the room beside the weights divided by "
                                            "the KV bytes per token. Both change: MHA stores more per token, "
                                            "and its bigger K and V projections leave less room.")},
        hint="The cache that fits is the room beside the weights divided by the KV bytes per token; compare "
             "the two models' KV bytes per token and their room beside the weights.",
        work=work)


# ---- Q7 -----------------------------------------------------------------------------------------
WORKLOADS = {"q7_chatbot": (200, 400), "q7_summarizer": (8000, 100), "q7_classifier": (8000, 2)}


@question("phases_q7", rule="prediction", reflection=1,
          specs={"q7_chatbot": Choice("prefill", "decode"), "q7_summarizer": Choice("prefill", "decode"),
                 "q7_classifier": Choice("prefill", "decode"), "q7_reasoning": Reason()})
def q7():
    from .. import serve

    llama, h100 = _setting()
    runs = {name: serve(llama, h100, prompt_tokens=p, output_tokens=o) for name, (p, o) in WORKLOADS.items()}

    kernels = {name: _per_kernel(s) for name, s in runs.items()}

    def phase(name, per_kernel=False):
        s, out = runs[name], WORKLOADS[name][1]
        ttft, tpot = ((kernels[name]["ttft"], kernels[name]["tpot"]) if per_kernel
                      else (s.prefill.latency_si, s.decode.latency_si))
        return "prefill" if ttft > (out - 1) * tpot else "decode"

    same = all(phase(n) == phase(n, per_kernel=True) for n in WORKLOADS)

    def work():
        for name, (p_len, out) in WORKLOADS.items():
            s = runs[name]
            print(f"{name[3:]:11s} prompt {p_len:5d}, output {out:4d}: TTFT {s.prefill.latency_si * 1e3:7.1f} ms, "
                  f"decode {(out - 1) * s.decode.latency_si * 1e3:8.1f} ms, end to end {s.e2e_latency_si * 1e3:8.1f} ms")
        doc = runs["q7_summarizer"]
        per_prompt_token = doc.prefill.latency_si / WORKLOADS["q7_summarizer"][0]
        print(f"\nOne decode step ({doc.decode.latency_si * 1e3:.2f} ms) costs as much as prefilling "
              f"{doc.decode.latency_si / per_prompt_token:.0f} prompt tokens ({per_prompt_token * 1e6:.1f} µs each).")
        print(f"For the 8000-token document, decode overtakes prefill beyond "
              f"{1 + doc.prefill.latency_si / doc.decode.latency_si:.0f} output tokens.")
        print("\nThese are serve's step-level times, lower bounds. Kernel by kernel (each at its own max, summed):")
        for name, (p_len, out) in WORKLOADS.items():
            k = kernels[name]
            print(f"{name[3:]:11s} TTFT {k['ttft'] * 1e3:7.1f} ms, decode {(out - 1) * k['tpot'] * 1e3:8.1f} ms "
                  f"-> {phase(name, per_kernel=True)}")
        print("The same phase dominates each workload either way." if same else
              "Kernel by kernel, a workload's dominant phase changes.")

    explain = "Compare the times, not the token counts: one decode step costs as much as many prompt tokens."
    return Solution(
        {name: Truth(phase(name), mistakes={"token-cost": "prefill" if p > o else "decode"}, explanation=explain)
         for name, (p, o) in WORKLOADS.items()},
        hint="Estimate both times: a prompt token costs about 2N / peak, a decode step about 2N / bandwidth.",
        work=work)


# ---- Q8 -----------------------------------------------------------------------------------------
@question("phases_q8", rule="prediction", reflection=1,
          specs={"q8_short": Regime(), "q8_long": Regime(), "q8_reasoning": Reason()},
          givens={"batch": 1024})
def q8(batch):
    from .. import crossover_batch, serve, solve

    llama, h100 = _setting()
    short = serve(llama, h100, prompt_tokens=32, output_tokens=32, batch_size=batch)
    long_ = serve(llama, h100, prompt_tokens=2048, output_tokens=128, batch_size=batch)
    one_sequence = serve(llama, h100, prompt_tokens=32, output_tokens=32, batch_size=1)   # as if nothing were shared
    no_kv = solve(llama, h100, batch_size=batch, context_tokens=1)                          # a cache of one token

    split = {label: _kernel_split(s) for label, s in (("short", short), ("long", long_))}

    def work():
        for label, s in (("short (32 + 32)", short), ("long (2048 + 128)", long_)):
            d = s.decode
            print(f"{label:18s} compute {d.t_compute_si * 1e3:6.2f} ms, memory {d.t_memory_si * 1e3:6.2f} ms, "
                  f"intensity {d.flops_si / d.bytes_si:6.1f} FLOP/byte -> {d.bottleneck}; fits: {s.fits}")
        print("\nThe same mean steps kernel by kernel (each kernel at its own max, summed):")
        for label, s in (("short", short), ("long", long_)):
            k = split[label]
            print(f"{label:6s} {k['time'] * 1e3:6.2f} ms (the step-level max above, {k['step_max'] * 1e3:.2f} ms, is a "
                  f"lower bound); compute-bound kernels {k['compute_share']:.0%} of it: {k['compute']}; "
                  f"memory-bound: {k['memory']}")
        print("\ncontext  crossover batch B* (decode step at that context; never: compute-bound at no batch)")
        for ctx in (1, 64, 256, 512, 2048):
            print(f"{ctx:7d}  {fmt_batch(crossover_batch(llama, h100, context_tokens=ctx))}")

    def per_kernel_words(label, s):
        share = split[label]["compute_share"]
        most = "compute-bound" if share >= 0.5 else "memory-bound"
        agrees = "agreeing with" if most == s.decode.bottleneck else "unlike"
        return (f" Graded on the step-level roofline; kernel by kernel the step is mixed (attention over the KV "
                f"cache is memory-bound at any batch), and its {most} kernels take "
                f"{max(share, 1 - share):.0%} of the per-kernel time, {agrees} the step-level label.")

    return Solution(
        {"q8_short": Truth(short.decode.bottleneck, mistakes={"weights-per-sample": one_sequence.decode.bottleneck},
                           explanation=f"Short contexts keep the KV cache tiny: compare the intensity of {batch} "
                                       "sequences sharing the weight reads with the ridge."
                                       + per_kernel_words("short", short)),
         "q8_long": Truth(long_.decode.bottleneck, mistakes={"no-kv-cache": no_kv.bottleneck},
                          explanation="Every sequence reads its own KV cache each step, so bytes grow with the "
                                      "batch as FLOPs do: compare that intensity with the ridge."
                                      + per_kernel_words("long", long_))},
        hint=f"At batch {batch} the weight reads are shared; every sequence reads its own KV cache each step. "
             "Count both against the FLOPs and compare with the ridge.",
        work=work)


def _kernel_split(s) -> dict:
    """The mean decode step of `s` (serve's) kernel by kernel at its mean context (course_lib's
    step_kernels): kernel_sum's figures and the names of the compute- and memory-bound kernels."""
    from ..serving import kernel_sum, step_kernels

    rows = step_kernels(s.model, s.hardware, context=s.prompt_tokens + s.output_tokens / 2,
                        batch_size=s.batch_size, precision="fp16")
    names = {reg: ", ".join(r["name"] for r in rows if r["regime"] == reg) for reg in ("compute-bound", "memory-bound")}
    return {**kernel_sum(rows), "compute": names["compute-bound"], "memory": names["memory-bound"]}


def _takeaways() -> str:
    """The take-aways, their numbers computed by course_lib (where prefill turns compute-bound)."""
    from .. import serve
    from ..serving import prefill_crossover
    from .registry import get

    llama, h100 = _setting()
    chat_prompt, chat_output = WORKLOADS["q7_chatbot"]
    chat = serve(llama, h100, prompt_tokens=chat_prompt, output_tokens=chat_output).prefill
    p_star = prefill_crossover(llama, h100)
    q1_prompt = get("phases_q1").givens["prompt"]
    q1 = serve(llama, h100, prompt_tokens=q1_prompt, output_tokens=get("phases_q1").givens["output"])
    k = _per_kernel(q1)
    return f"""\
* Prefill reuses each weight for every prompt token, so a long prompt is compute-bound and
  TTFT ≈ FLOPs / peak, growing faster than the prompt because of causal attention. A short one
  is not: the weights are read once per pass whatever the prompt, so {llama.name}'s prefill on
  the {h100.key} turns compute-bound only from {p_star} prompt tokens. Q7's {chat_prompt}-token
  chatbot prompt is memory-bound (compute {chat.t_compute_si * 1e3:.2f} ms, memory
  {chat.t_memory_si * 1e3:.2f} ms): its TTFT is bytes / bandwidth, like a decode step's.
* serve's TTFT and TPOT take one max over all of a phase's kernels: lower bounds, since a
  memory-bound kernel cannot lend its idle math to a compute-bound one. Kernel by kernel (each at
  its own max, summed), Q1's {q1_prompt}-token prefill takes {k['ttft'] / q1.prefill.latency_si - 1:.0%} longer (its norms and residual adds stay
  memory-bound); its batch-1 decode step takes {_against(q1.decode.latency_si, k['tpot'])}.
""" + _TAKEAWAYS_REST


_TAKEAWAYS_REST = """\
* Decode reuses each weight for one token per sequence: memory-bound at small batch,
  TPOT ≈ bytes / bandwidth. The weights are read once per step for the whole batch, so batching
  is how decode gets throughput; each sequence's KV cache is read every step, so the longer the
  context, the more each extra sequence costs.
* Every sequence carries a KV cache of 2 · layers · KV heads · head_dim · bytes per token. It
  sets the capacity wall (the largest batch that fits) and, at long contexts, the bytes each
  decode step reads, which keeps decode memory-bound at any batch.
* Memory capacity is binary: an "80 GB" GPU holds about 80 GiB, and nvidia-smi counts MiB.
  Convert to bytes before dividing.
* GQA cuts the cache per token by n_heads / n_kv_heads; where memory is tight it buys even more,
  because the smaller K and V projections leave more room beside the weights.
* One decode step costs about as much as prefilling a ridge point's worth of prompt tokens, so
  most requests spend most of their time in decode.
"""


def __getattr__(name):
    """TAKEAWAYS is computed when read (PEP 562), so its numbers come from course_lib."""
    if name == "TAKEAWAYS":
        return _takeaways()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
