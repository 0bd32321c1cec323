"""``solve``: the roofline of a workload on a chip (lesson 1, "hello roofline").

The model, with nothing hidden::

    t_compute = FLOPs / (peak FLOP/s · compute_efficiency)
                (attention's FLOPs at the attention format's peak, the rest at the matmuls')
    t_memory  = bytes / (bandwidth · memory_efficiency)
    latency   = max(t_compute, t_memory) + kernels · overhead_per_kernel

The knobs default to 1, 1 and 0 — the pure roofline — and every result says which were on.
Bytes are weights (once per batch) plus activations read and written by every layer (once per
sample), plus KV-cache reads for an LLM. ``p.layerwise_latency`` charges each layer its own
max(t_compute, t_memory), which is never less than the whole-model bound: ``latency`` is a lower
bound that lets memory-bound layers overlap compute-bound ones as if the model were one kernel.

>>> from course_lib import solve, Models, Hardware
>>> p = solve(Models.ResNet50, Hardware.A100, batch_size=1, precision="fp16")
>>> p.bottleneck
'memory-bound'
>>> p.latency.to("us").m < 0.79e3          # below the measured 0.79 ms, as a bound must be
True
"""
from __future__ import annotations

import numpy as np

from . import sensitivity
from .formatting import fmt_time
from .models.layers import experts_touched
from .units import Q_
from .workloads import Knobs, check_batch, precisions, resolve

MEMORY_BOUND, COMPUTE_BOUND, COMMUNICATION_BOUND = "memory-bound", "compute-bound", "communication-bound"
REGIMES = (MEMORY_BOUND, COMPUTE_BOUND, COMMUNICATION_BOUND)


# ---- traffic ------------------------------------------------------------------------------
def _sums(table):
    """Per-table totals (each repeated layer counted `count` times), cached on the table."""
    s = table.__dict__.get("_sums")
    if s is None:
        c = table.count
        moe = table.experts > 1
        s = {
            "flops": float((c * table.flops).sum()),
            "flops_attn": float((c * table.flops)[table.attention].sum()),
            "w_dense": float((c * table.weight_reads)[~moe].sum()),
            "w_moe": float((c * table.weight_reads)[moe].sum()),
            "experts": float(table.experts[moe][0]) if moe.any() else 1.0,
            "top_k": float(table.top_k[moe][0]) if moe.any() else 1.0,
            "act": float((c * table.activations).sum()),
            "kv": float((c * table.kv).sum()),
            "gathered": float((c * table.gathered).sum()),
        }
        object.__setattr__(table, "_sums", s)
    return s


def traffic(table, batch, bytes_w, bytes_a, bytes_kv):
    """Whole-table (FLOPs, bytes) for `batch` samples; batch may be an array."""
    s = _sums(table)
    weight_bytes = s["w_dense"] * bytes_w
    if s["w_moe"]:
        touched = experts_touched(s["experts"], s["top_k"], batch * table.tokens_per_sample)
        weight_bytes = weight_bytes + s["w_moe"] * bytes_w * touched
    per_sample = s["act"] * bytes_a + s["kv"] * bytes_kv + s["gathered"] * bytes_w
    return batch * s["flops"], weight_bytes + batch * per_sample


def compute_seconds(table, batch, peak, peak_attention):
    """Seconds of math for `batch` samples: attention's FLOPs at `peak_attention`, the rest at
    `peak` (both FLOP/s, efficiency already applied). `batch` may be an array."""
    s = _sums(table)
    return batch * ((s["flops"] - s["flops_attn"]) / peak + s["flops_attn"] / peak_attention)


def layer_traffic(table, batch, bytes_w, bytes_a, bytes_kv):
    """Per-layer (FLOPs, bytes) of ONE copy of each layer, shape (layers,) + batch.shape."""
    b = np.asarray(batch, dtype=float)[..., None]          # (..., 1) against (layers,)
    wr = table.weight_reads * np.where(table.experts > 1, table.experts_touched(batch), 1.0)
    flops = b * table.flops
    nbytes = wr * bytes_w + b * (table.activations * bytes_a + table.kv * bytes_kv
                                 + table.gathered * bytes_w)
    return np.moveaxis(flops, -1, 0), np.moveaxis(nbytes, -1, 0)


def regime(t_compute, t_memory, t_comm=None):
    """'compute-bound' where compute takes at least as long as memory, else 'memory-bound';
    'communication-bound' where communication is the longest of the three."""
    out = np.where(np.asarray(t_compute) >= np.asarray(t_memory), COMPUTE_BOUND, MEMORY_BOUND)
    if t_comm is not None:
        out = np.where(np.asarray(t_comm) > np.maximum(t_compute, t_memory), COMMUNICATION_BOUND, out)
    return str(out) if out.ndim == 0 else out.astype(object)


# ---- result -------------------------------------------------------------------------------
class Performance:
    """What ``solve`` returns. Figures are Quantities; ``*_si`` attributes are plain floats
    (or arrays when ``batch_size`` was an array)."""

    def __init__(self, model, hardware, batch_size, is_array, prec, knobs, table, flops, nbytes):
        self.model, self.hardware, self.precisions, self.knobs = model, hardware, prec, knobs
        self.batch_size = batch_size if is_array else int(batch_size)
        self._is_array = is_array
        self._table = table
        self.peak_si = hardware.peak_flops_si(prec.compute)
        self.peak_attention_si = hardware.peak_flops_si(prec.attention)
        self.bandwidth_si = hardware.memory_bandwidth_si
        self.flops_si, self.bytes_si = flops, nbytes
        self.t_compute_si = compute_seconds(table, batch_size, self.peak_si * knobs.compute_efficiency,
                                            self.peak_attention_si * knobs.compute_efficiency)
        self.t_memory_si = nbytes / (self.bandwidth_si * knobs.memory_efficiency)
        self.overhead_si = table.kernels * knobs.overhead_per_kernel
        self.latency_si = np.maximum(self.t_compute_si, self.t_memory_si) + self.overhead_si
        if not is_array:  # plain Python floats for a single batch size
            self.flops_si, self.bytes_si = float(flops), float(nbytes)
            self.t_compute_si, self.t_memory_si = float(self.t_compute_si), float(self.t_memory_si)
            self.latency_si = float(self.latency_si)
        self.bottleneck = regime(self.t_compute_si, self.t_memory_si)
        self._layer_times = None
        # a chip or activation count changed by course_lib.sensitivity.perturb: say so
        self.hardware_perturbation = sensitivity.current().describe()

    @property
    def precision(self) -> str:
        return self.precisions.label()

    # Quantities at the surface
    @property
    def flops(self):
        """FLOPs for the whole batch."""
        return Q_(self.flops_si / 1e9, "GFLOP")

    @property
    def bytes(self):
        """Bytes moved to and from main memory for the whole batch."""
        return Q_(self.bytes_si / 1e6, "MB")

    @property
    def arithmetic_intensity(self):
        return Q_(self.flops_si / self.bytes_si, "FLOP/byte")

    @property
    def ridge_point(self):
        """Peak ÷ bandwidth, with the efficiency knobs applied if any are on."""
        k = self.knobs
        return Q_(self.peak_si * k.compute_efficiency / (self.bandwidth_si * k.memory_efficiency),
                  "FLOP/byte")

    @property
    def peak_flops(self):
        return Q_(self.peak_si / 1e12, "TFLOP/s")

    @property
    def t_compute(self):
        return Q_(self.t_compute_si * 1e3, "ms")

    @property
    def t_memory(self):
        return Q_(self.t_memory_si * 1e3, "ms")

    @property
    def latency(self):
        """Whole-model roofline time for the batch: max(t_compute, t_memory) (+ overhead knob)."""
        return Q_(self.latency_si * 1e3, "ms")

    @property
    def throughput(self):
        """Samples (images, sequences, calls) per second: batch_size / latency."""
        return Q_(np.asarray(self.batch_size, dtype=float) / self.latency_si, "1/s")

    @property
    def attainable_flops(self):
        """FLOP/s achieved at the roofline: FLOPs / latency (≤ min(peak, bandwidth · intensity))."""
        return Q_(self.flops_si / self.latency_si / 1e12, "TFLOP/s")

    @property
    def bytes_breakdown(self) -> dict:
        """What ``bytes`` is made of, in MB: weights (once per batch), activations read and
        written, KV cache read and written, and embedding rows gathered (all per sample)."""
        w, a, kv = self.precisions.bytes
        t, b = self._table, self.batch_size
        parts = {
            "weights": traffic(t, b, w, 0, 0)[1] - _sums(t)["gathered"] * w * b,
            "activations": traffic(t, b, 0, a, 0)[1],
            "kv_cache": traffic(t, b, 0, 0, kv)[1],
            "gathered": _sums(t)["gathered"] * w * np.asarray(b, dtype=float),
        }
        return {k: Q_(v / 1e6, "MB") for k, v in parts.items()}

    # per layer
    def _per_layer(self):
        if self._layer_times is None:
            w, a, kv = self.precisions.bytes
            f, b = layer_traffic(self._table, self.batch_size, w, a, kv)
            peaks = np.where(self._table.attention, self.peak_attention_si, self.peak_si)
            tc = f / (peaks.reshape((-1,) + (1,) * np.ndim(self.batch_size)) * self.knobs.compute_efficiency)
            tm = b / (self.bandwidth_si * self.knobs.memory_efficiency)
            self._layer_times = (f, b, tc, tm)
        return self._layer_times

    @property
    def layerwise_latency_si(self):
        f, b, tc, tm = self._per_layer()
        count = self._table.count.reshape((-1,) + (1,) * (np.ndim(self.batch_size)))
        return (count * np.maximum(tc, tm)).sum(axis=0) + self.overhead_si

    @property
    def layerwise_latency(self):
        """Per-layer roofline: Σ over layers of max(t_compute,i, t_memory,i) (≥ ``latency``)."""
        return Q_(self.layerwise_latency_si * 1e3, "ms")

    @property
    def layers(self) -> "LayerReport":
        """The per-layer roofline table (needs a single batch size)."""
        if self._is_array:
            raise ValueError("p.layers needs a single batch size; solve again with batch_size=<int>.")
        return LayerReport(self)

    def __repr__(self):
        return self.summary()

    def summary(self) -> str:
        """A few lines with the arithmetic shown."""
        m, hw = self.model, self.hardware
        head = f"{m.name} on {hw.name}, {self.precision}"
        if self._is_array:
            b = np.asarray(self.batch_size)
            return (f"{head}, batch sizes {int(b.min())}..{int(b.max())} ({b.size} points)\n"
                    f"  {self.knobs.describe()}")
        lines = [
            f"{head}, batch {self.batch_size}",
            f"  FLOPs {self.flops_si:.4g}, bytes {self.bytes_si:.4g} -> intensity "
            f"{self.flops_si / self.bytes_si:.4g} FLOP/byte (ridge {self.ridge_point.m:.4g})",
            self._compute_line(),
            f"  t_memory  = {self.bytes_si:.4g} / {self.bandwidth_si * self.knobs.memory_efficiency:.4g}"
            f" = {fmt_time(self.t_memory_si)}",
            f"  latency {fmt_time(self.latency_si)} ({self.bottleneck}): the whole-model max, a lower bound",
            f"  per-layer roofline {fmt_time(float(self.layerwise_latency_si))}: each layer's own max, summed "
            f"({self._layer_regimes()})",
            f"  {self.knobs.describe()}",
        ]
        if self.hardware_perturbation:
            lines.append(f"  {self.hardware_perturbation}")
        return "\n".join(lines)

    def _layer_regimes(self) -> str:
        """How many layers are in each regime, and what the whole-model max leaves out."""
        rows = self.layers.rows
        bound = sum(r["bottleneck"] == COMPUTE_BOUND for r in rows)
        if len(rows) == 1:
            return "one kernel: the two agree"
        if bound in (0, len(rows)):
            return f"all {len(rows)} layers {rows[0]['bottleneck']}: the two agree"
        return (f"{bound} of {len(rows)} layers compute-bound, the rest memory-bound: they cannot lend "
                "each other their idle time")

    def _compute_line(self) -> str:
        eff = self.knobs.compute_efficiency
        if self.peak_attention_si == self.peak_si:
            return (f"  t_compute = {self.flops_si:.4g} / {self.peak_si * eff:.4g}"
                    f" = {fmt_time(self.t_compute_si)}")
        fa = _sums(self._table)["flops_attn"] * self.batch_size
        return (f"  t_compute = {self.flops_si - fa:.4g} / {self.peak_si * eff:.4g} (matmuls, "
                f"{self.precisions.compute}) + {fa:.4g} / {self.peak_attention_si * eff:.4g} "
                f"(attention, {self.precisions.attention}) = {fmt_time(self.t_compute_si)}")


class LayerReport:
    """Rows of the per-layer roofline: ``report.rows`` (dicts), ``report.memory_bound()``,
    a text table as its repr and an HTML table in a notebook."""

    columns = ("name", "kind", "count", "flops", "bytes", "intensity", "t_compute_s",
               "t_memory_s", "time_s", "bottleneck")

    def __init__(self, perf: Performance):
        f, b, tc, tm = perf._per_layer()
        t = perf._table
        self.rows = [
            {"name": l.name, "kind": l.kind, "count": l.count, "flops": float(f[i]),
             "bytes": float(b[i]), "intensity": float(f[i] / b[i]) if b[i] else float("inf"),
             "t_compute_s": float(tc[i]), "t_memory_s": float(tm[i]),
             "time_s": float(max(tc[i], tm[i])),
             "bottleneck": COMPUTE_BOUND if tc[i] >= tm[i] else MEMORY_BOUND}
            for i, l in enumerate(t.layers)
        ]

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def column(self, name):
        """One column as a numpy array (names, kinds and bottlenecks as object arrays)."""
        return np.array([r[name] for r in self.rows])

    def memory_bound(self) -> list[str]:
        return [r["name"] for r in self.rows if r["bottleneck"] == MEMORY_BOUND]

    def compute_bound(self) -> list[str]:
        return [r["name"] for r in self.rows if r["bottleneck"] == COMPUTE_BOUND]

    def __repr__(self):
        out = [f"{'layer':24s} {'x':>3s} {'GFLOP':>9s} {'MB':>9s} {'FLOP/B':>8s} {'time':>9s}  bound"]
        for r in self.rows:
            out.append(f"{r['name']:24s} {r['count']:3d} {r['flops'] / 1e9:9.4f} {r['bytes'] / 1e6:9.3f} "
                       f"{r['intensity']:8.1f} {fmt_time(r['time_s']):>9s}  {r['bottleneck']}")
        return "\n".join(out)

    def _repr_html_(self):
        head = "".join(f"<th>{h}</th>" for h in ("layer", "×", "GFLOP", "MB", "FLOP/byte", "time", "bound"))
        body = "".join(
            f"<tr><td>{r['name']}</td><td>{r['count']}</td><td>{r['flops'] / 1e9:.4f}</td>"
            f"<td>{r['bytes'] / 1e6:.3f}</td><td>{r['intensity']:.1f}</td>"
            f"<td>{fmt_time(r['time_s'])}</td><td>{r['bottleneck']}</td></tr>" for r in self.rows)
        return f"<table><tr>{head}</tr>{body}</table>"


# ---- solve --------------------------------------------------------------------------------
def solve(model, hardware, batch_size=1, precision="fp16", *, weight_precision=None,
          activation_precision=None, kv_precision=None, attention_precision=None,
          context_tokens=None, compute_efficiency=1.0, memory_efficiency=1.0,
          overhead_per_kernel=None) -> Performance:
    """Roofline of `model` on `hardware` at `batch_size` (an int, or an array for a sweep).

    For an LLM this is one decode step (one new token per sequence) with `context_tokens`
    tokens in the KV cache (default 1: short context). `precision` sets weights and
    activations, and the KV cache and attention too when it is a 16- or 32-bit float; with
    ``precision="int8"`` (W8A8) or ``"fp8"`` the KV cache and attention's matmuls stay in
    16 bits, as in TensorRT-LLM, unless ``kv_precision``/``attention_precision`` say otherwise.
    The weight matmuls run at the activation precision's peak. The knobs default to the pure
    roofline and are reported in the result.

    >>> import numpy as np
    >>> p = solve("ResNet50", "V100", batch_size=np.array([1, 64, 1024]))
    >>> list(p.bottleneck)
    ['memory-bound', 'compute-bound', 'compute-bound']
    """
    model, hardware = resolve(model, hardware)
    prec = precisions(hardware, precision, weight_precision, activation_precision, kv_precision,
                      attention_precision, model=model)
    knobs = Knobs.make(compute_efficiency, memory_efficiency, overhead_per_kernel)
    batch, is_array = check_batch(batch_size)
    if context_tokens is not None:
        check_batch(context_tokens, "context_tokens")
    table = model.layer_table(context_tokens)
    flops, nbytes = traffic(table, batch, *prec.bytes)
    return Performance(model, hardware, batch, is_array, prec, knobs, table, flops, nbytes)
