"""Number formats: bytes per element, and the names the course accepts."""
from __future__ import annotations

from .errors import PrecisionError, unknown_name

BYTES_PER_ELEMENT = {
    "fp64": 8.0,  # CPUs (and HPC GPUs) in double precision: lesson 5 measures it
    "fp32": 4.0,
    "tf32": 4.0,  # stored as fp32; only the tensor-core math is reduced
    "fp16": 2.0,
    "bf16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "fp4": 0.5,
    "int4": 0.5,
}
PRECISIONS = tuple(BYTES_PER_ELEMENT)
INTEGER_PRECISIONS = ("int8", "int4")     # their peaks are in TOPS, not TFLOP/s
# 16-, 32- and 64-bit floats: attention and the KV cache run in these unless told otherwise
WIDE_FLOATS = ("fp64", "fp32", "tf32", "fp16", "bf16")

_ALIASES = {"float64": "fp64", "double": "fp64", "float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
            "float8": "fp8", "w8": "int8", "w4": "int4"}


def normalize(precision: str, what: str = "precision") -> str:
    """Canonical precision name: ``normalize("FP16") == "fp16"``; unknown names raise."""
    if not isinstance(precision, str):
        raise PrecisionError(
            f"{what} must be a string such as 'fp16', got {precision!r}. "
            f"Valid precisions: {', '.join(PRECISIONS)}."
        )
    p = precision.strip().lower().replace("-", "").replace("_", "")
    p = _ALIASES.get(p, p)
    if p not in BYTES_PER_ELEMENT:
        err = unknown_name(what, precision, PRECISIONS)
        raise PrecisionError(str(err))
    return p


def bytes_per_element(precision: str) -> float:
    """Bytes one element takes.

    >>> bytes_per_element("fp16"), bytes_per_element("int4"), bytes_per_element("float64")
    (2.0, 0.5, 8.0)
    """
    return BYTES_PER_ELEMENT[normalize(precision)]
