"""The mistakes the course's checks can name, and the exception that names them.

``MISCONCEPTIONS`` maps a short, stable label to what the mistake is and the step to redo.
A hidden test computes, with course_lib, the answer each listed mistake leads to; an answer
that matches one fails with ``CheckFailed(label=...)`` and a message built from this table
(never the right answer). The instructor's misconception report groups answers by the same
labels, so a label, once used, keeps its name.

>>> MISCONCEPTIONS["mac-as-1-flop"].mistake
'counting a multiply-accumulate as 1 FLOP (peaks count 2)'
>>> raise CheckFailed("q2_ridge matches a classic mistake: ...", label="mac-as-1-flop")
Traceback (most recent call last):
course_lib.exercises.misconceptions.CheckFailed: q2_ridge matches a classic mistake: ...
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["Misconception", "MISCONCEPTIONS", "CheckFailed", "describe"]


class Misconception(NamedTuple):
    mistake: str      # what the student did, as a phrase ("counting ... as ...")
    redo: str         # the step to redo, as an instruction


MISCONCEPTIONS: dict[str, Misconception] = {
    # not an answer at all
    "unanswered": Misconception(
        "no answer yet: the variable is not defined",
        "Replace `raise NotImplementedError()` in the answer cell with your answer and run it."),
    "not-an-answer": Misconception(
        "an answer that is not well-formed (wrong type or units, a hedge or a negation)",
        "Answer in the form the question asks for."),
    "lesson-numbers": Misconception(
        "the answer to the lesson's own numbers, not to the ones drawn for you",
        "Redo it with your numbers: the given cell above the answer prints them."),
    # counting FLOPs and bytes
    "mac-as-1-flop": Misconception(
        "counting a multiply-accumulate as 1 FLOP (peaks count 2)",
        "Recount the FLOPs at 2 per multiply-accumulate, the convention the datasheet peaks use."),
    "bytes-per-element": Misconception(
        "using the wrong number of bytes per element",
        "Recount the bytes with the format's size: fp64 8, fp32 4, fp16/bf16 2, fp8/int8 1, int4 half a byte."),
    "weights-only": Misconception(
        "counting only the weights' bytes",
        "Add the bytes each sample moves on its own: activations read and written by every layer, "
        "and for an LLM the KV cache."),
    "weights-per-sample": Misconception(
        "charging the weight reads to every sample, as if the batch did not share them",
        "Count the weights once per batch (every sample reuses them while they are on chip) and "
        "only the activations and KV cache once per sample."),
    "embedding-streamed": Misconception(
        "streaming the whole embedding table every step",
        "A step gathers one embedding row per token; take the table out of the streamed bytes "
        "(the LM head is a separate matrix and is streamed)."),
    "no-kv-cache": Misconception(
        "leaving out the KV cache",
        "Add the K and V every sequence reads each decode step: context x KV bytes per token."),
    "query-heads": Misconception(
        "sizing the KV cache with the query heads instead of the KV heads",
        "With grouped-query attention K and V are stored per KV head (n_kv_heads), not per query head."),
    "k-or-v-only": Misconception(
        "storing only K or only V",
        "The cache holds both K and V: a factor of 2 in the bytes per token."),
    "no-temporaries": Misconception(
        "leaving out the temporary arrays a numpy expression writes and reads back",
        "numpy evaluates one operation at a time: each intermediate result is a full-size array that "
        "one operation writes and the next reads. Count those bytes too."),
    "no-reuse": Misconception(
        "charging every multiply-accumulate its own operand reads from memory, as if nothing were "
        "reused from cache",
        "A matrix product reads each matrix from memory about once and reuses every element from "
        "cache for many multiply-accumulates: count the bytes the matrices move, not the operands "
        "each multiply touches."),
    "attention-quadratic": Misconception(
        "treating all of prefill as attention, quadratic in the prompt",
        "Most prefill FLOPs are the weight matmuls, linear in the prompt; only attention grows like "
        "P squared. Weigh the two."),
    "attention-ignored": Misconception(
        "leaving causal attention out of prefill, as if its FLOPs were all linear in the prompt",
        "Add causal attention: it grows like P(P+1)/2, so its share of the FLOPs rises with the "
        "prompt. Weigh it at the lengths asked."),
    # units
    "gib-vs-gb": Misconception(
        "mixing binary GiB (2^30 B) and decimal GB (10^9 B)",
        "Memory capacities are binary (a datasheet's \"80 GB\" of HBM is 80 GiB; nvidia-smi counts MiB "
        "of 2^20 B); bandwidths and GB in this course are decimal (10^9 B). Convert to bytes first."),
    "unit-prefix": Misconception(
        "a unit prefix slip (a factor of 1000, or of 1024 between binary prefixes)",
        "Carry the units through: T = 10^12, G = 10^9, M = 10^6; ms = 10^-3 s, us = 10^-6 s; "
        "KiB, MiB and GiB are each 1024 times the one before."),
    "inverted-ratio": Misconception(
        "dividing the wrong way round",
        "Check which quantity goes on top of the ratio the question asks for."),
    # the memory hierarchy
    "data-in-dram": Misconception(
        "placing a warm working set in DRAM because that is where its arrays were allocated",
        "Once a kernel has touched its data, each further pass reads it from the smallest cache that "
        "holds it: compare the working set with each cache's size."),
    # datasheets
    "sustained-bandwidth": Misconception(
        "dividing by the sustained (measured) bandwidth where the datasheet's is asked for",
        "Use the figure the question names: the datasheet bandwidth."),
    "sparse-peak": Misconception(
        "using the 2:4-sparsity peak instead of the dense one",
        "Use the dense peak: the datasheet headline is often the with-sparsity figure, twice the dense one."),
    "ridge-always-rises": Misconception(
        "assuming the ridge point rises every generation",
        "The ridge is peak / bandwidth: compare how each of the two grew between these chips."),
    # regimes
    "other-roof": Misconception(
        "timing the work by the roof that does not limit it",
        "The time is max(FLOPs / peak, bytes / bandwidth): find which is larger and use it."),
    "peak-ratio": Misconception(
        "comparing peak FLOP/s where the work is memory-bound",
        "Memory-bound work runs at the bandwidth: compare bandwidths (per watt, if asked), not peaks."),
    "bandwidth-ratio": Misconception(
        "comparing bandwidths where the work is compute-bound",
        "Compute-bound work runs at the peak: compare peak FLOP/s (per watt, if asked), not bandwidths."),
    "flops-not-bytes": Misconception(
        "judging by FLOPs where the bytes decide",
        "Compare FLOPs per byte moved (intensity) with the ridge: per-sample traffic adds bytes, not "
        "FLOPs."),
    "other-phase": Misconception(
        "answering for the other phase (prefill behaves unlike decode)",
        "Prefill pushes every prompt token through each weight it reads; decode makes one token per "
        "sequence per weight read. Redo the FLOPs per byte for the phase asked about."),
    "token-cost": Misconception(
        "treating a prompt token and an output token as costing the same",
        "A prompt token costs about 2N / peak, a decode step about 2N / bandwidth: a decode step costs "
        "as much as a ridge point's worth of prompt tokens. Compare the two phases' times."),
    "weights-not-subtracted": Misconception(
        "giving the whole memory to the KV cache",
        "Subtract the weights from the capacity first; only the rest holds KV cache."),
    # scaling out
    "no-comm-latency": Misconception(
        "timing an AllReduce by its bytes alone, as if a small message were free",
        "Every AllReduce also pays a fixed latency (a few microseconds for a custom kernel, tens for "
        "NCCL), which decides a decode step's small messages: add it per AllReduce, two per layer."),
    "other-implementation": Misconception(
        "taking another AllReduce implementation's latency than the one named",
        "Each implementation has its own measured latency (the setup cell prints them): NCCL's is "
        "several times a custom kernel's. Use the one the question names."),
    "kv-split-past-heads": Misconception(
        "splitting the KV cache over more GPUs than the model has KV heads",
        "A KV head is never split: with more GPUs than KV heads each GPU holds one whole head, "
        "and the heads are replicated. Divide by the KV heads each GPU holds, not by N."),
    "ring-in-switch": Misconception(
        "charging a ring's 2(N-1)/N traffic where the switch sums the data itself",
        "With NVLink SHARP each GPU sends its buffer once and receives the sum once: bytes / BW, "
        "not 2(N-1)/N of it; a ring pays the larger factor."),
    # training
    "forward-only": Misconception(
        "counting only the forward pass of a training step",
        "A training step also runs the backward pass, which computes two products as large as the "
        "forward's (the activations' gradients and the weights'): add them."),
    "backward-as-forward": Misconception(
        "giving the backward pass the forward's work",
        "The backward pass computes the gradient with respect to the activations and, separately, "
        "with respect to the weights: two products as large as the forward's, not one."),
    "no-optimizer-state": Misconception(
        "counting the weights (and gradients) but not the optimizer's state",
        "Mixed-precision Adam also keeps an fp32 master copy of the weights and two fp32 moments: "
        "add up every byte it holds per parameter."),
    "no-gradient-allreduce": Misconception(
        "scaling data parallelism perfectly, as if the gradients' AllReduce were free",
        "Every step ends with an AllReduce of all the gradients (latency + bytes / link bandwidth) "
        "that does not shrink as GPUs are added: add it to each GPU's step."),
    "w8a8-attention": Misconception(
        "running attention's matmuls in int8 under W8A8",
        "W8A8 as TensorRT-LLM runs it (SmoothQuant) quantizes the weight matmuls; attention's matmuls "
        "over the KV cache stay fp16. Split the FLOPs into the two parts."),
}


def describe(label: str) -> str:
    """'counting a multiply-accumulate as 1 FLOP (peaks count 2). Recount ...' for a label."""
    m = MISCONCEPTIONS[label]
    return f"{m.mistake}. {m.redo}"


class CheckFailed(AssertionError):
    """A check failed. ``label`` names the mistake (a key of MISCONCEPTIONS) or is None when
    the answer matches no known mistake; the message says what to redo, never the answer."""

    def __init__(self, message: str, label: str | None = None):
        super().__init__(message)
        if label is not None and label not in MISCONCEPTIONS:
            raise ValueError(f"unknown misconception label {label!r}; known: {sorted(MISCONCEPTIONS)}")
        self.label = label

    def _render_traceback_(self):
        """What IPython shows for it in a notebook: the message alone, no traceback (it is
        still an error: Run All stops there, and nbgrader counts the test as failed)."""
        return [f"\x1b[0;31mCheck failed\x1b[0m: {line}" if i == 0 else f"  {line}"
                for i, line in enumerate(str(self).splitlines() or [""])]
