"""``serve``: one LLM request batch in two phases (lessons 3 and 4).

* **Prefill** pushes the whole prompt through the model at once: 2 FLOPs per weight per token
  plus causal attention, weights read once. Its time is the time to first token (TTFT).
* **Decode** makes one token per sequence per step: every step reads all the weights (and the
  KV cache of the context so far) to do 2 FLOPs per weight per sequence. TPOT is the mean step
  time over the growing context, compute counted too, so a big enough batch turns
  compute-bound.
* With ``tp > 1`` the weights, KV cache and FLOPs are split over ``tp`` GPUs (activation traffic
  too, which slightly flatters TP: norms and residual adds really run replicated; a KV head is
  never split, so with more GPUs than KV heads the cache is replicated) and each layer adds
  two AllReduces of the activations, each one latency (alpha) plus a ring's 2(N−1)/N · bytes /
  link bandwidth (where the switch sums the data itself, NVLink SHARP on HGX H100/H200/B200:
  bytes / link bandwidth). ``allreduce=None`` (the default) is the **bound**: alpha is the
  fastest small-message AllReduce published for the system (or the one assumed figure every
  chip without a measurement shares) and the AllReduces may overlap compute and memory, so a
  step is max(t_compute, t_memory, t_comm). ``allreduce="nccl"`` / ``"sglang"`` / ``"vllm"`` is
  an **estimate**: that implementation's measured small-message time as alpha, the AllReduces
  after compute and memory (max(t_compute, t_memory) + t_comm), as decode runs them.
  ``s.interconnect`` says which, and where alpha comes from (``course_lib.topology``). The link
  bandwidth is the
  share of the chip's links the topology lets one AllReduce use (``course_lib.topology``: all
  of them through an NVSwitch; one link per other GPU on MI300X's point-to-point mesh; two
  of a TPU v5e's four torus ports); a link that joins fewer GPUs than ``tp`` (the H100 PCIe's
  NVLink bridge joins pairs) leaves the ring on the chip's fallback link (PCIe), the slowest
  hop. ``s.interconnect`` says which link the ring used and how much of it.
* Precisions follow TensorRT-LLM's defaults: ``precision="int8"`` (W8A8) runs the weight
  matmuls at the int8 peak while attention's matmuls and the KV cache stay fp16
  (``attention_precision``, ``kv_precision`` change that); only the matmuls' inputs are int8,
  so activations (and the AllReduce payload) are stored and counted in fp16.
* A model with a sliding window (Mistral-7B) attends to, and caches, the last W tokens only.

Each step is a roofline, max(t_compute, t_memory, t_comm) (the bound) or max(t_compute, t_memory)
+ t_comm (an estimate), with the same explicit knobs as
``solve``. Memory: weights + KV cache against the chip's capacity (binary: an 80GB H100 holds
81,559 MiB); activations and framework workspace are not counted, so ``fits`` is optimistic
by that much.

>>> from course_lib import serve, Models, Hardware
>>> s = serve(Models.Llama3_8B, Hardware.H100, prompt_tokens=2048, output_tokens=128)
>>> s.prefill.bottleneck, s.decode.bottleneck
('compute-bound', 'memory-bound')
>>> s.fits
True
"""
from __future__ import annotations

import math

import numpy as np

from .errors import CourseError
from . import sensitivity
from .formatting import fmt_time
from .roofline import _sums, layer_traffic, regime, traffic
from .units import Q_, to_si
from .topology import allreduce_seconds, alpha_words, in_switch_reduction, message_latency, ring_link
from .workloads import Knobs, check_batch, precisions, resolve


def _positive_int(v, name):
    value, is_array = check_batch(v, name)
    if is_array:
        raise CourseError(f"{name} must be a single positive integer here, got an array; "
                          "loop over the values (or use solve for a vectorized sweep).")
    return int(value)


class Phase:
    """One phase's roofline. For decode, figures are per step averaged over the steps."""

    def __init__(self, name, flops, nbytes, t_compute, t_memory, t_comm, latency, bottleneck,
                 parts=None):
        self.name = name
        self.flops_si, self.bytes_si = flops, nbytes
        self._parts = parts or {}
        self.t_compute_si, self.t_memory_si, self.t_comm_si = t_compute, t_memory, t_comm
        self.latency_si = latency
        self.bottleneck = bottleneck

    flops = property(lambda self: Q_(self.flops_si / 1e9, "GFLOP"))
    bytes = property(lambda self: Q_(self.bytes_si / 1e9, "GB"))
    arithmetic_intensity = property(lambda self: Q_(self.flops_si / self.bytes_si, "FLOP/byte"))
    t_compute = property(lambda self: Q_(self.t_compute_si * 1e3, "ms"))
    t_memory = property(lambda self: Q_(self.t_memory_si * 1e3, "ms"))
    t_comm = property(lambda self: Q_(self.t_comm_si * 1e3, "ms"))
    latency = property(lambda self: Q_(self.latency_si * 1e3, "ms"))

    @property
    def bytes_breakdown(self) -> dict:
        """What ``bytes`` is made of, in GB per GPU: weights (with gathered embedding rows),
        activations, KV cache (decode: the mean step)."""
        return {k: Q_(v / 1e9, "GB") for k, v in self._parts.items()}

    def __repr__(self):
        comm = f", comm {fmt_time(self.t_comm_si)}" if self.t_comm_si else ""
        return (f"{self.name}: {fmt_time(self.latency_si)} ({self.bottleneck}; compute "
                f"{fmt_time(self.t_compute_si)}, memory {fmt_time(self.t_memory_si)}{comm})")


class Serving:
    """What ``serve`` returns."""

    def __init__(self, **kw):
        self.__dict__.update(kw)

    ttft = property(lambda self: Q_(self.prefill.latency_si * 1e3, "ms"),
                    doc="Time to first token: the prefill phase.")
    tpot = property(lambda self: Q_(self.decode.latency_si * 1e3, "ms"),
                    doc="Time per output token: mean decode step over the growing context.")
    e2e_latency = property(lambda self: Q_(self.e2e_latency_si * 1e3, "ms"),
                           doc="TTFT + (output_tokens − 1) · TPOT.")
    tokens_per_second = property(lambda self: Q_(self.batch_size / self.decode.latency_si, "1/s"),
                                 doc="Decode throughput of the whole batch: batch_size / TPOT.")
    kv_cache_bytes = property(lambda self: Q_(self.kv_cache_bytes_si / 1e9, "GB"),
                              doc="KV cache of the whole batch at the last token, all GPUs.")
    weight_bytes = property(lambda self: Q_(self.weight_bytes_si / 1e9, "GB"),
                            doc="All weights at the weight precision, all GPUs.")
    memory_per_gpu = property(lambda self: Q_(self.memory_per_gpu_si / 1e9, "GB"),
                              doc="Weights + KV cache on each GPU.")

    @property
    def precision(self) -> str:
        return self.precisions.label()

    def __repr__(self):
        fit = ("fits" if self.fits else "DOES NOT FIT") if self.fits is not None else "capacity unknown"
        cap = self.hardware.memory_capacity_si
        comm = f"  tensor parallel over {self.interconnect}\n" if self.tp > 1 else ""
        lines = [
            f"{self.model.name} on {self.tp}x {self.hardware.name}, {self.precision}, batch "
            f"{self.batch_size}, prompt {self.prompt_tokens}, output {self.output_tokens}",
            f"  TTFT {fmt_time(self.prefill.latency_si)}  ({self.prefill!r})",
            f"  TPOT {fmt_time(self.decode.latency_si)}  ({self.decode!r})",
            f"  end to end {fmt_time(self.e2e_latency_si)}, "
            f"{self.batch_size / self.decode.latency_si:.4g} tokens/s",
            f"  memory per GPU {self.memory_per_gpu_si / 1e9:.3g} GB"
            + (f" of {cap / 1e9:.3g} GB ({cap / 2**30:.4g} GiB)" if cap else "")
            + f": {fit}; max batch {self.max_batch_size}",
            comm + f"  {self.knobs.describe()}" + (f"\n  {self.perturbation}" if self.perturbation else ""),
        ]
        return "\n".join(lines)


_PARTS = ("weights", "activations", "kv_cache")


def _allreduce_time(nbytes, n, link_bandwidth, latency, in_switch=False):
    """``course_lib.topology.allreduce_seconds`` (this module's name for it)."""
    return allreduce_seconds(nbytes, n, link_bandwidth, latency, in_switch)


def _link(hardware, tp):
    """(name, bandwidth per direction) of the link a tensor-parallel ring over `tp` GPUs runs
    on: the share of the chip's links its topology lets one AllReduce use (course_lib.topology)."""
    if tp == 1:
        return None, 1.0
    return ring_link(hardware, tp)


def _kv_shard(model, tp):
    """Fraction of the KV cache one GPU holds: KV heads split over GPUs, at least one each."""
    kvh = model.config.n_kv_heads
    return math.ceil(kvh / tp) / kvh


def _memory(model, hardware, prec, kv_bytes, tokens, batch, tp, kv_shard):
    """(weight bytes, KV bytes per sequence, bytes per GPU, fits, largest batch that fits) for
    `batch` sequences of `tokens` over `tp` GPUs; fits and the largest batch are None when the
    chip's capacity is unknown."""
    weights = model.weight_bytes(prec.weights)
    kv_per_seq = model.attended_tokens(tokens) * model.kv_elements_per_token() * kv_bytes
    per_gpu_mem = weights / tp + batch * kv_per_seq * kv_shard
    cap = hardware.memory_capacity_si
    if cap is None:
        return weights, kv_per_seq, per_gpu_mem, None, None
    room = cap - weights / tp
    max_b = max(0, int(room // (kv_per_seq * kv_shard))) if room > 0 else 0
    return weights, kv_per_seq, per_gpu_mem, per_gpu_mem <= cap, max_b


def _kernel_rows(table, batch_size, hardware, prec) -> list[dict]:
    """A row per kernel of `table` (one copy of a repeated layer, with its ``count``): FLOPs, bytes,
    intensity, t_compute, t_memory, time ``max(t_compute, t_memory)`` and regime, on one GPU."""
    bw_, ba_, bkv_ = prec.bytes
    flops, nbytes = layer_traffic(table, batch_size, bw_, ba_, bkv_)
    peaks = np.where(table.attention, hardware.peak_flops_si(prec.attention), hardware.peak_flops_si(prec.compute))
    bw = hardware.memory_bandwidth_si
    rows = []
    for i, layer in enumerate(table.layers):
        f, b = float(flops[i]), float(nbytes[i])
        tc, tm = f / float(peaks[i]), b / bw
        rows.append({"name": layer.name, "kind": layer.kind, "count": layer.count, "flops": f, "bytes": b,
                     "intensity": f / b if b else float("inf"), "t_compute_s": tc, "t_memory_s": tm,
                     "time_s": max(tc, tm), "regime": regime(tc, tm)})
    return rows


def kernel_sum(rows) -> dict:
    """The per-kernel roofline of `rows` (``step_kernels`` or ``prefill_kernels``): ``time`` is the
    sum over kernels of each kernel's max(t_compute, t_memory); ``t_compute`` and ``t_memory`` are
    the two sums the step-level max compares; ``step_max`` is that max, a lower bound on ``time``;
    ``compute_share`` is the fraction of ``time`` spent in compute-bound kernels. Seconds."""
    total = {k: sum(r["count"] * r[f"{k}_s"] for r in rows) for k in ("time", "t_compute", "t_memory")}
    bound = sum(r["count"] * r["time_s"] for r in rows if r["regime"] == "compute-bound")
    return {**total, "step_max": max(total["t_compute"], total["t_memory"]),
            "compute_share": bound / total["time"] if total["time"] else 0.0}


def step_kernels(model, hardware, context, batch_size=1, precision="fp16", weight_precision=None,
                 activation_precision=None, kv_precision=None, *, attention_precision=None) -> list[dict]:
    """The per-kernel roofline of ONE decode step of `batch_size` sequences whose caches hold
    `context` tokens (the new one included), on one GPU: a row per kernel (one copy of a
    repeated layer, with its ``count``) with its FLOPs, bytes, intensity, t_compute, t_memory,
    time ``max(t_compute, t_memory)`` and regime. ``sum(r["count"] * r["time_s"] for r in rows)``
    is the step's per-kernel roofline, which is never shorter than the step-level
    ``max(sum t_compute, sum t_memory)`` that ``serve`` reports: a kernel waiting on memory
    cannot lend its idle math to a compute-bound one.

    >>> rows = step_kernels("Llama3_8B", "A100", context=192, batch_size=192)
    >>> {r["name"]: r["regime"] for r in rows}["attention"]
    'memory-bound'
    """
    model, hardware = resolve(model, hardware)
    prec = precisions(hardware, precision, weight_precision, activation_precision, kv_precision,
                      attention_precision, model=model)
    return _kernel_rows(model.decode_table(context), batch_size, hardware, prec)


def prefill_kernels(model, hardware, prompt_tokens, batch_size=1, precision="fp16", weight_precision=None,
                    activation_precision=None, kv_precision=None, *, attention_precision=None) -> list[dict]:
    """The per-kernel roofline of the prefill of `batch_size` prompts of `prompt_tokens` tokens on
    one GPU, rows as ``step_kernels``'. Summed per kernel (``kernel_sum``) it is never shorter than
    ``serve``'s TTFT (its step-level max): the norms and residual adds stay memory-bound while
    the matmuls are compute-bound, and neither lends the other its idle time.

    >>> rows = prefill_kernels("Llama3_8B", "H100", prompt_tokens=2048)
    >>> {r["name"]: r["regime"] for r in rows}["mlp_norm"]
    'memory-bound'
    """
    model, hardware = resolve(model, hardware)
    prec = precisions(hardware, precision, weight_precision, activation_precision, kv_precision,
                      attention_precision, model=model)
    return _kernel_rows(model.prefill_table(prompt_tokens), batch_size, hardware, prec)


def kernel_latency(model, hardware, prompt_tokens=2048, output_tokens=128, batch_size=1, precision="fp16",
                   weight_precision=None, activation_precision=None, kv_precision=None, *,
                   attention_precision=None) -> dict:
    """``serve``'s two times, per kernel, on one GPU with the pure roofline: ``ttft`` (the prefill's
    kernels, each at its own max(t_compute, t_memory), summed) and ``tpot`` (the same for every
    decode step, averaged over the steps as ``serve`` averages them), in seconds. Each is at least
    ``serve``'s figure, the step-level max(sum t_compute, sum t_memory), which is a lower bound:
    it lets memory-bound kernels (attention over the KV cache, norms) overlap compute-bound ones
    (the weight matmuls at a large batch or a long prompt) as if the step were one kernel. Where
    every kernel is in the same regime the two agree.

    >>> k = kernel_latency("Llama3_8B", "H100", prompt_tokens=2048, output_tokens=128)
    >>> s = serve("Llama3_8B", "H100", prompt_tokens=2048, output_tokens=128)
    >>> k["ttft"] > s.prefill.latency_si, round(k["tpot"] / s.decode.latency_si, 6)
    (True, 1.0)
    """
    model, hardware = resolve(model, hardware)
    P = _positive_int(prompt_tokens, "prompt_tokens")
    T = _positive_int(output_tokens, "output_tokens")
    B = _positive_int(batch_size, "batch_size")
    prec = precisions(hardware, precision, weight_precision, activation_precision, kv_precision,
                      attention_precision, model=model)
    ttft = kernel_sum(_kernel_rows(model.prefill_table(P), B, hardware, prec))["time"]
    # every kernel's FLOPs and bytes are linear in the tokens attended: two tables give all steps
    contexts = np.arange(P + 1, P + T, dtype=float) if T > 1 else np.array([P + 1.0])
    a = np.asarray(model.attended_tokens(contexts), dtype=float)[None, :] - 1
    one, two = (_kernel_rows(model.decode_table(c), B, hardware, prec) for c in (1, 2))
    steps = np.zeros_like(a[0])
    for r1, r2 in zip(one, two):
        tc = r1["t_compute_s"] + (r2["t_compute_s"] - r1["t_compute_s"]) * a[0]
        tm = r1["t_memory_s"] + (r2["t_memory_s"] - r1["t_memory_s"]) * a[0]
        steps = steps + r1["count"] * np.maximum(tc, tm)
    return {"ttft": float(ttft), "tpot": float(steps.mean())}


def prefill_crossover(model, hardware, batch_size=1, max_prompt=1 << 20, **precisions):
    """The shortest prompt whose prefill is compute-bound (``serve``'s prefill: t_compute >=
    t_memory) for `batch_size` sequences, or None if none up to `max_prompt` tokens is. Below it
    a prefill is memory-bound: the weights, read once per pass, outweigh the prompt's FLOPs.
    `precisions` are serve's precision keywords.

    >>> prefill_crossover("Llama3_8B", "H100") > 200     # a chatbot's 200-token prompt is memory-bound
    True
    """
    def compute_bound(p):
        pre = serve(model, hardware, prompt_tokens=p, output_tokens=1, batch_size=batch_size, **precisions).prefill
        return pre.t_compute_si >= pre.t_memory_si

    if not compute_bound(max_prompt):
        return None
    lo, hi = 0, max_prompt                 # memory-bound at lo (or lo == 0), compute-bound at hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if compute_bound(mid) else (mid, hi)
    return hi


def serve(model, hardware, prompt_tokens=2048, output_tokens=128, batch_size=1, precision="fp16",
          weight_precision=None, activation_precision=None, kv_precision=None, tp=1, *,
          attention_precision=None, compute_efficiency=1.0, memory_efficiency=1.0,
          overhead_per_kernel=None, link_latency=None, allreduce=None) -> Serving:
    """Serve `batch_size` requests of `prompt_tokens` in and `output_tokens` out.

    `precision` is the default for weights and activations (and for the KV cache and attention
    when it is a 16- or 32-bit float). ``weight_precision="int8"`` with fp16 activations is
    weight-only quantization (math at the fp16 peak); ``precision="int8"`` is W8A8: weight
    matmuls at the int8 peak, attention and the KV cache in fp16 (TensorRT-LLM's default;
    ``kv_precision="int8"`` and ``attention_precision`` change them). ``allreduce``
    None is the bound (the fastest published AllReduce latency, communication overlapped);
    ``"nccl"``, ``"sglang"`` or ``"vllm"`` an estimate with that implementation's measured
    latency, not overlapped (``course_lib.topology``). ``link_latency`` overrides alpha, the
    latency of each AllReduce, in either.

    >>> s = serve("Llama3_8B", "H100", prompt_tokens=2048, output_tokens=128, batch_size=8)
    >>> round(s.tpot.m_as("ms"), 2), s.decode.bottleneck
    (5.17, 'memory-bound')
    >>> serve("Llama3_70B", "H100").fits           # 141 GB of fp16 weights on an 80 GB chip
    False
    """
    model, hardware = resolve(model, hardware)
    if not hasattr(model, "prefill_table"):
        raise CourseError(f"serve needs an LLM (a Transformer such as Models.Llama3_8B); "
                          f"{model.name} is a {model.kind}: use solve() for it.")
    P = _positive_int(prompt_tokens, "prompt_tokens")
    T = _positive_int(output_tokens, "output_tokens")
    B = _positive_int(batch_size, "batch_size")
    tp = _positive_int(tp, "tp")
    prec = precisions(hardware, precision, weight_precision, activation_precision, kv_precision,
                      attention_precision, model=model)
    knobs = Knobs.make(compute_efficiency, memory_efficiency, overhead_per_kernel)
    bw_, ba_, bkv_ = prec.bytes
    peak = hardware.peak_flops_si(prec.compute) * knobs.compute_efficiency
    peak_attn = hardware.peak_flops_si(prec.attention) * knobs.compute_efficiency
    bw = hardware.memory_bandwidth_si * knobs.memory_efficiency

    link_name, link_bw = _link(hardware, tp)
    in_switch = in_switch_reduction(hardware, tp)
    # alpha, one per AllReduce: given, the bound's, or the named implementation's (an estimate)
    latency = (to_si(link_latency, "time", "link_latency") if link_latency is not None
               else message_latency(hardware, tp, allreduce))
    overlap = allreduce is None                  # the bound lets the AllReduces overlap

    def step(tc, tm, comm):
        return np.maximum(np.maximum(tc, tm), comm) if overlap else np.maximum(tc, tm) + comm

    L, d = model.config.n_layers, model.config.d_model
    kv_shard = _kv_shard(model, tp)

    def per_gpu(table):
        # FLOPs, weights and activations split evenly over tp GPUs; KV by heads.
        # Returns (FLOPs, FLOPs of attention, bytes), per GPU.
        f, _ = traffic(table, B, 0.0, 0.0, 0.0)
        _, w = traffic(table, B, bw_, 0.0, 0.0)
        _, a = traffic(table, B, 0.0, ba_, 0.0)
        _, kv = traffic(table, B, 0.0, 0.0, bkv_)
        parts = np.array([w / tp, a / tp, kv * kv_shard])
        return f / tp, B * _sums(table)["flops_attn"] / tp, parts

    def seconds(f, f_attn):
        return (f - f_attn) / peak + f_attn / peak_attn

    # prefill: one pass over the prompt
    pre = model.prefill_table(P)
    f_pre, fa_pre, parts_pre = per_gpu(pre)
    b_pre = parts_pre.sum()
    comm_pre = 2 * L * _allreduce_time(B * P * d * ba_, tp, link_bw, latency, in_switch)
    tc, tm = seconds(f_pre, fa_pre), b_pre / bw
    overhead = pre.kernels * knobs.overhead_per_kernel
    prefill = Phase("prefill", f_pre, b_pre, tc, tm, comm_pre,
                    float(step(tc, tm, comm_pre)) + overhead, regime(tc, tm, comm_pre if tp > 1 else None),
                    parts=dict(zip(_PARTS, parts_pre)))

    # decode: steps for tokens 2..T, each attending over the prompt and the tokens so far.
    # Every cost is linear in the tokens attended (the context, or the sliding window's
    # worth of it), so two tables give it for all steps.
    contexts = np.arange(P + 1, P + T, dtype=float) if T > 1 else np.array([P + 1.0])
    attended = model.attended_tokens(contexts)
    f1, fa1, parts1 = per_gpu(model.decode_table(1))
    f2, fa2, parts2 = per_gpu(model.decode_table(2))
    b1, b2 = parts1.sum(), parts2.sum()
    f_dec = f1 + (f2 - f1) * (attended - 1)
    fa_dec = fa1 + (fa2 - fa1) * (attended - 1)
    b_dec = b1 + (b2 - b1) * (attended - 1)
    comm_dec = 2 * L * _allreduce_time(B * d * ba_, tp, link_bw, latency, in_switch)
    tc, tm = seconds(f_dec, fa_dec), b_dec / bw
    steps = step(tc, tm, comm_dec) + model.decode_table(1).kernels * knobs.overhead_per_kernel
    decode = Phase("decode", float(f_dec.mean()), float(b_dec.mean()), float(tc.mean()),
                   float(tm.mean()), comm_dec, float(steps.mean()),
                   regime(tc.sum(), tm.sum(), comm_dec * len(contexts) if tp > 1 else None),
                   parts=dict(zip(_PARTS, parts1 + (parts2 - parts1) * (attended.mean() - 1))))

    weights, kv_per_seq, per_gpu_mem, fits, max_b = _memory(model, hardware, prec, bkv_, P + T, B, tp, kv_shard)
    e2e = prefill.latency_si + (T - 1) * decode.latency_si
    return Serving(model=model, hardware=hardware, precisions=prec, knobs=knobs, tp=tp,
                   interconnect=(f"{link_name}, {link_bw / 1e9:.0f} GB/s per direction; "
                                 + alpha_words(hardware, tp, link_latency=None if link_latency is None else latency,
                                               allreduce=allreduce)
                                 + ("; communication overlapped (max of the roofs)" if overlap
                                    else "; not overlapped (added after compute and memory)"))
                   if tp > 1 else None,
                   perturbation=sensitivity.current().describe(),
                   allreduce=allreduce, batch_size=B, prompt_tokens=P, output_tokens=T, prefill=prefill, decode=decode,
                   e2e_latency_si=e2e, kv_cache_bytes_si=B * kv_per_seq, weight_bytes_si=weights,
                   memory_per_gpu_si=per_gpu_mem, fits=fits, max_batch_size=max_b)
