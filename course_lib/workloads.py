"""Argument checking shared by the solvers: batch sizes, precisions, knobs, names."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import sensitivity
from .errors import CourseError, PrecisionError
from .precision import WIDE_FLOATS, bytes_per_element, normalize
from .units import is_quantity, to_si


def resolve(model, hardware):
    """Zoo names become zoo objects; objects pass through."""
    from .hardware import Hardware
    from .models import Models

    if isinstance(hardware, str):
        hardware = Hardware.get(hardware)
    elif not isinstance(hardware, Hardware):
        raise TypeError(f"hardware must be a Hardware (e.g. Hardware.A100) or a zoo name, "
                        f"got {type(hardware).__name__}.")
    if isinstance(model, str):
        model = Models.get(model)
    elif not hasattr(model, "layer_table"):
        raise TypeError(f"model must be a zoo model (e.g. Models.ResNet50), a kernel "
                        f"(course_lib.models.matmul(...)) or a zoo name, got {type(model).__name__}.")
    return model, hardware


def check_batch(batch_size, name="batch_size"):
    """A positive whole number, or an array of them. Returns (value, is_array)."""
    if isinstance(batch_size, (bool, np.bool_, str, bytes)) or is_quantity(batch_size):
        raise CourseError(f"{name} must be a positive integer, got {batch_size!r}.")
    if isinstance(batch_size, (int, np.integer)):
        if batch_size < 1:
            raise CourseError(f"{name} must be a positive integer (≥ 1), got {batch_size}.")
        return float(batch_size), False
    if isinstance(batch_size, (float, np.floating)):
        if not batch_size >= 1 or not float(batch_size).is_integer():
            raise CourseError(f"{name} must be a positive integer (≥ 1), got {batch_size!r}.")
        return float(batch_size), False
    try:
        arr = np.asarray(batch_size, dtype=float)
    except (TypeError, ValueError):
        raise CourseError(f"{name} must be a positive integer or an array of them, "
                          f"got {batch_size!r}.") from None
    if arr.ndim == 0:
        return check_batch(float(arr), name)
    if arr.size == 0:
        raise CourseError(f"{name} is an empty array; give at least one batch size.")
    if not (np.all(np.isfinite(arr)) and np.all(arr >= 1) and np.all(arr == np.round(arr))):
        bad = arr[~((arr >= 1) & (arr == np.round(arr)))][0]
        raise CourseError(f"{name} must hold positive integers (≥ 1); found {bad!r}.")
    return arr, True


@dataclass(frozen=True)
class Precisions:
    """Which format each kind of tensor uses, and so which peak each kind of math runs at.

    weights      -- stored weights
    activations  -- activations between layers, and the inputs of the weight matmuls: the
                    matmuls (and every other layer but attention) run at this format's peak
    kv           -- the KV cache
    attention    -- attention's own matmuls (Q·Kᵀ and P·V over the cached K, V)
    activation_scale -- a factor on activation bytes: 1, except inside
                    ``course_lib.sensitivity.perturb(activation_bytes=...)``
    stored       -- the format activations are stored in between kernels, where it is not
                    ``activations``: an LLM's W8A8 or fp8 (TensorRT-LLM, SmoothQuant) quantizes
                    only the weight matmuls' inputs and keeps the residual stream, the matmul
                    outputs and the AllReduce payload in 16 bits; activation bytes count this
    """

    weights: str
    activations: str
    kv: str
    attention: str
    activation_scale: float = 1.0
    stored: str | None = None

    @property
    def compute(self) -> str:
        # Weight-only quantization dequantizes to the activations' format before the matmul,
        # so the math runs at the activation precision's peak; W8A8 runs at the int8 peak.
        return self.activations

    @property
    def bytes(self) -> tuple[float, float, float]:
        return (bytes_per_element(self.weights),
                bytes_per_element(self.stored or self.activations) * self.activation_scale,
                bytes_per_element(self.kv))

    def label(self) -> str:
        w, a, k, t = self.weights, self.activations, self.kv, self.attention
        if w == a == k == t:
            text = w
        elif w == a and k == t:
            text = f"weights and activations {w}, attention and KV cache {k}"
        else:
            text = f"weights {w}, activations {a}, attention {t}, KV cache {k}"
        if self.stored and self.stored != a:
            text += f" (activations stored in {self.stored}; only the weight matmuls' inputs are {a})"
        if self.activation_scale != 1:
            text += f" (activation bytes x{self.activation_scale:g}: perturbed)"
        return text


def sixteen_bit(hardware, fmt: str) -> str:
    """The format attention and the KV cache use by default alongside `fmt` activations:
    `fmt` itself if it is a 16-, 32- or 64-bit float, else fp16 (bf16 on a chip without fp16).

    This is TensorRT-LLM's default for quantized models (SmoothQuant W8A8, fp8): the weight
    matmuls run in 8 bits, while attention's matmuls and the KV cache stay in 16 bits unless
    an 8-bit KV cache or 8-bit attention is asked for.
    """
    if fmt in WIDE_FLOATS:
        return fmt
    return "fp16" if "fp16" in hardware.precisions or "bf16" not in hardware.precisions else "bf16"


def precisions(hardware, precision, weight_precision=None, activation_precision=None,
               kv_precision=None, attention_precision=None, model=None) -> Precisions:
    """`precision` is the default for weights and activations, and for the KV cache and
    attention when it is a 16-, 32- or 64-bit float; with an 8- or 4-bit `precision` (W8A8, fp8)
    the KV cache and attention stay in 16 bits (``sixteen_bit``). The others override it.
    For an LLM (`model` a Transformer) 8-bit activations are the weight matmuls' inputs only:
    they are stored, and their bytes counted, in 16 bits (``Precisions.stored``), as
    TensorRT-LLM runs W8A8 and fp8; a CNN's int8 engine stores them in int8."""
    p = normalize(precision)
    weights = normalize(weight_precision, "weight_precision") if weight_precision else p
    activations = normalize(activation_precision, "activation_precision") if activation_precision else p
    wide = sixteen_bit(hardware, activations)
    prec = Precisions(
        weights=weights,
        activations=activations,
        kv=normalize(kv_precision, "kv_precision") if kv_precision else (p if p in WIDE_FLOATS else wide),
        attention=normalize(attention_precision, "attention_precision") if attention_precision else wide,
        activation_scale=float(sensitivity.current().activation_bytes),
        stored=(wide if model is not None and hasattr(model, "prefill_table")
                and activations not in WIDE_FLOATS else None),
    )
    if prec.activations in ("int4", "fp4") and prec.weights not in ("int4", "fp4"):
        raise PrecisionError(
            f"activations in {prec.activations} with weights in {prec.weights}: activations "
            "may not be narrower than weights. Use weight_precision for weight-only quantization."
        )
    hardware.peak_flops_si(prec.compute)   # raises with the chip's precisions listed
    hardware.peak_flops_si(prec.attention)
    return prec


@dataclass(frozen=True)
class Knobs:
    """Explicit departures from the pure roofline. All default to ideal."""

    compute_efficiency: float = 1.0
    memory_efficiency: float = 1.0
    overhead_per_kernel: float = 0.0  # seconds

    @classmethod
    def make(cls, compute_efficiency=1.0, memory_efficiency=1.0, overhead_per_kernel=None):
        for name, v in (("compute_efficiency", compute_efficiency),
                        ("memory_efficiency", memory_efficiency)):
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not 0 < v <= 1:
                raise CourseError(f"{name} must be a number in (0, 1] (1 = the datasheet peak), got {v!r}.")
        overhead = 0.0 if overhead_per_kernel is None else to_si(
            overhead_per_kernel, "time", "overhead_per_kernel")
        if overhead < 0:
            raise CourseError(f"overhead_per_kernel must be ≥ 0, got {overhead_per_kernel!r}.")
        return cls(float(compute_efficiency), float(memory_efficiency), overhead)

    @property
    def ideal(self) -> bool:
        return self == Knobs()

    def describe(self) -> str:
        if self.ideal:
            return "pure roofline: max(FLOPs/peak, bytes/bandwidth); no efficiency or overhead knobs"
        on = []
        if self.compute_efficiency != 1:
            on.append(f"compute_efficiency={self.compute_efficiency:g}")
        if self.memory_efficiency != 1:
            on.append(f"memory_efficiency={self.memory_efficiency:g}")
        if self.overhead_per_kernel:
            on.append(f"overhead_per_kernel={self.overhead_per_kernel * 1e6:g} µs")
        return "knobs on: " + ", ".join(on)

    def as_dict(self) -> dict:
        return {"compute_efficiency": self.compute_efficiency,
                "memory_efficiency": self.memory_efficiency,
                "overhead_per_kernel_s": self.overhead_per_kernel}
