"""Questions the lessons ask of the solvers: how much faster, from what batch compute-bound,
how many sequences fit."""
from __future__ import annotations

import math

import numpy as np

from .models.layers import experts_touched
from .roofline import _sums, compute_seconds, solve
from .workloads import Knobs, check_batch, precisions, resolve


def speedup(model, baseline, hardware, batch_size=1, precision="fp16", **kwargs) -> float:
    """How many times faster `hardware` runs `model` than `baseline` (a plain float).

    Memory-bound work speeds up by the bandwidth ratio, compute-bound work by the FLOP ratio:

    >>> from course_lib import Models, Hardware
    >>> round(speedup(Models.Llama3_8B, Hardware.A100, Hardware.H100), 2)   # 3.35 / 2.039
    1.64
    """
    before = solve(model, baseline, batch_size, precision, **kwargs)
    after = solve(model, hardware, batch_size, precision, **kwargs)
    ratio = before.latency_si / after.latency_si
    return ratio if isinstance(ratio, np.ndarray) else float(ratio)


def crossover_batch(model, hardware, precision="fp16", *, weight_precision=None,
                    activation_precision=None, kv_precision=None, attention_precision=None,
                    context_tokens=None, compute_efficiency=1.0, memory_efficiency=1.0) -> float:
    """The batch size B* (a real number) where t_compute = t_memory for the whole model.

    Below B* the workload is memory-bound, above it compute-bound; ``math.ceil(B*)`` is the
    first whole batch that is compute-bound. Solved exactly, not scanned: with F FLOPs and S
    bytes per sample and W weight bytes, B*·F/peak = (W + B*·S)/BW gives
    B* = (W/BW) / (F/peak − S/BW). Returns ``math.inf`` when per-sample traffic alone keeps
    the work memory-bound (F/peak ≤ S/BW).

    >>> from course_lib import Models, Hardware
    >>> round(crossover_batch(Models.Llama3_8B, Hardware.H100))    # decode, just above the ridge (295)
    375
    >>> crossover_batch(Models.ResNet50, Hardware.A100)   # activation traffic caps intensity at 144 < 153
    inf
    """
    model, hardware = resolve(model, hardware)
    prec = precisions(hardware, precision, weight_precision, activation_precision, kv_precision,
                      attention_precision, model=model)
    knobs = Knobs.make(compute_efficiency, memory_efficiency)
    if context_tokens is not None:
        check_batch(context_tokens, "context_tokens")
    table = model.layer_table(context_tokens)
    s = _sums(table)
    bw_, ba_, bkv_ = prec.bytes
    peak = hardware.peak_flops_si(prec.compute) * knobs.compute_efficiency
    peak_attn = hardware.peak_flops_si(prec.attention) * knobs.compute_efficiency
    bw = hardware.memory_bandwidth_si * knobs.memory_efficiency
    per_sample = (s["act"] * ba_ + s["kv"] * bkv_ + s["gathered"] * bw_) / bw
    slope = compute_seconds(table, 1.0, peak, peak_attn) - per_sample
    if slope <= 0:
        return math.inf
    if not s["w_moe"]:
        return s["w_dense"] * bw_ / bw / slope

    # MoE: weight traffic grows with the experts a batch touches; g(B) = t_c − t_m rises past 0
    def g(b):
        w = s["w_dense"] + s["w_moe"] * experts_touched(s["experts"], s["top_k"], b * table.tokens_per_sample)
        return b * slope - w * bw_ / bw

    lo, hi = 1e-9, 1.0
    while g(hi) < 0:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if g(mid) < 0 else (lo, mid)
    return hi


def max_batch_size(model, hardware, context_tokens, precision="fp16", *, weight_precision=None,
                   kv_precision=None, tp=1) -> int:
    """The memory-capacity wall: most sequences of `context_tokens` whose KV cache fits beside
    the weights (0 if the weights alone do not fit).

    >>> from course_lib import Models, Hardware
    >>> max_batch_size(Models.Llama3_8B, Hardware.H100, context_tokens=4096)   # (81,559 MiB − 16.06e9 B) / (4096 · 131072 B)
    129
    """
    from .errors import CourseError
    from .serving import _kv_shard, _positive_int

    model, hardware = resolve(model, hardware)
    if not hasattr(model, "kv_elements_per_token"):
        raise CourseError(f"max_batch_size needs an LLM (a Transformer); {model.name} is a {model.kind}.")
    if hardware.memory_capacity_si is None:
        raise CourseError(f"{hardware.name} has no memory capacity in the zoo.")
    context = _positive_int(context_tokens, "context_tokens")
    tp = _positive_int(tp, "tp")
    prec = precisions(hardware, precision, weight_precision, None, kv_precision, model=model)
    cached = model.attended_tokens(context)          # a sliding window caches at most W tokens
    kv_seq = cached * model.kv_elements_per_token() * prec.bytes[2] * _kv_shard(model, tp)
    room = hardware.memory_capacity_si - model.weight_bytes(prec.weights) / tp
    return max(0, int(room // kv_seq))


def intensity_limit(model, precision="fp16", *, weight_precision=None, activation_precision=None,
                    kv_precision=None, context_tokens=None, hardware=None):
    """The arithmetic intensity batching tends to as the batch grows: FLOPs per sample divided
    by the bytes each sample moves on its own (activations, KV cache, gathered embedding rows).

    Batching shares the weights, nothing else: I(b) = b·F / (W + b·S) rises towards F / S. If
    F / S is below a chip's ridge point, no batch makes the model compute-bound there (it is
    ``crossover_batch``'s ``inf``). `hardware` only matters for which formats it has (the
    default: an A100).

    >>> from course_lib import Models
    >>> round(intensity_limit(Models.ResNet50).m)                 # FLOP/byte, fp16
    144
    """
    from .hardware import Hardware
    from .units import Q_

    model, hardware = resolve(model, hardware or Hardware.A100)
    prec = precisions(hardware, precision, weight_precision, activation_precision, kv_precision, model=model)
    if context_tokens is not None:
        check_batch(context_tokens, "context_tokens")
    s = _sums(model.layer_table(context_tokens))
    bw_, ba_, bkv_ = prec.bytes
    per_sample = s["act"] * ba_ + s["kv"] * bkv_ + s["gathered"] * bw_
    return Q_(s["flops"] / per_sample, "FLOP/byte")
