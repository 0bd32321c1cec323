"""The kernels the measurement times, each with the FLOPs and bytes it is charged.

Each one is a course_lib ``Kernel`` (the same formulas as lesson 1) plus the numpy code that
runs it. The bytes are the ones the numpy code moves between the core and the memory level
its data lives in, counted honestly:

* ``np.dot(x, y)``: reads x and y (BLAS, all threads): 2n elements, 2n FLOPs.
* axpy ``y += a * x`` done in blocks of 32768 elements through a scratch buffer that stays in
  cache (256 KiB: L2): reads x and y, writes y: 3n elements, 2n FLOPs -- the model's axpy.
* axpy as the numpy expression ``a * x + y``: ``a * x`` writes a full-size temporary, ``+ y``
  reads it back (numpy then reuses the temporary for the result): 5n elements, 2n FLOPs.
* ``np.add(x, y, out=z)``: reads 2, writes 1: 3n elements, 1 FLOP each.
* ``np.matmul(A, B, out=C)`` for n×n matrices: 2n³ FLOPs; bytes as the model counts them,
  each matrix once (3n² elements): the least traffic possible (a blocked BLAS re-reads parts
  of A and B from cache, which is why large matmuls are compute-bound anyway).

Write-allocate traffic (a core reading a cache line before overwriting it) is not counted.

>>> numpy_axpy(1000).bytes("fp64") / 1000       # 5 arrays' worth of fp64 per element
40.0
>>> from course_lib.models.kernels import axpy
>>> axpy(1000).bytes("fp64") / 1000             # the model's axpy: x, y read, y written
24.0
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..models.kernels import Kernel, axpy, dot, elementwise, matmul
from ..models.layers import FLOPS_PER_MAC, Layer

BLOCK = 32768     # elements per block of the blocked axpy: 256 KiB of fp64 scratch, kept in L2


def numpy_axpy(n: int) -> Kernel:
    """``a * x + y`` as numpy evaluates it: a full-size temporary is written and read back.

    >>> k = numpy_axpy(10)
    >>> k.flops_per_sample, k.elements_per_sample
    (20.0, 50.0)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}.")
    return Kernel(f"a*x + y as a numpy expression (n={n})",
                  Layer("axpy_numpy", "elementwise", flops=FLOPS_PER_MAC * n, activations=5 * n))


@dataclass
class KernelSpec:
    """One kernel to time: its model, the numpy code that runs it, and how it runs."""

    key: str            # short name used to look the run up: "dot", "matmul_1024", ...
    label: str          # what the report prints: "dot, n=2^23"
    model: Kernel       # FLOPs and elements per call
    precision: str
    threads: str        # "BLAS" (all BLAS threads) or "1" (a numpy ufunc runs on one core)
    code: str           # the numpy code, as printed
    make: object        # () -> the callable to time (allocates and fills its arrays)
    nbytes_live: int    # bytes of the arrays it touches (where they live: cache_level_of)

    @property
    def flops(self) -> float:
        return self.model.flops_per_sample

    @property
    def bytes(self) -> float:
        return self.model.bytes(self.precision)


def _vectors(n, count, dtype):
    # Memory-bound kernels do not care about the values; constants are cheap to make (no
    # random generator over hundreds of MB) and are neither denormal nor NaN.
    return [np.full(n, 0.5 + i, dtype) for i in range(count)]


def dot_spec(n: int, dtype=np.float64) -> KernelSpec:
    def make():
        x, y = _vectors(n, 2, dtype)
        return lambda: np.dot(x, y)
    size = np.dtype(dtype).itemsize
    return KernelSpec("dot", f"dot, n={_n(n)}", dot(n), _prec(dtype), "BLAS", "np.dot(x, y)", make,
                      2 * n * size)


def axpy_blocked(a, x, y, scratch) -> None:
    """y += a * x, one block of ``len(scratch)`` elements at a time: the temporary a*x of a
    block lives in `scratch`, which stays in cache, so main memory sees only x and y.

    >>> x, y = np.arange(5.0), np.ones(5)
    >>> axpy_blocked(2.0, x, y, np.empty(2)); y
    array([1., 3., 5., 7., 9.])
    """
    b = len(scratch)
    for i in range(0, len(x), b):
        xs, ys = x[i:i + b], y[i:i + b]
        t = scratch[:len(xs)]
        np.multiply(xs, a, out=t)
        np.add(ys, t, out=ys)


def axpy_blocked_spec(n: int, dtype=np.float64) -> KernelSpec:
    def make():
        x, y = _vectors(n, 2, dtype)
        scratch = np.empty(BLOCK, dtype)
        return lambda: axpy_blocked(0.5, x, y, scratch)
    size = np.dtype(dtype).itemsize
    return KernelSpec("axpy", f"axpy (blocked), n={_n(n)}", axpy(n), _prec(dtype), "1",
                      f"y += a*x in blocks of {BLOCK} through a scratch buffer in cache", make, 2 * n * size)


def axpy_numpy_spec(n: int, dtype=np.float64) -> KernelSpec:
    def make():
        x, y = _vectors(n, 2, dtype)
        a = 0.5
        return lambda: a * x + y
    size = np.dtype(dtype).itemsize
    return KernelSpec("axpy_numpy", f"a*x + y (numpy), n={_n(n)}", numpy_axpy(n), _prec(dtype), "1",
                      "r = a * x + y (a numpy expression: one full-size temporary)", make, 3 * n * size)


def add_spec(n: int, dtype=np.float64) -> KernelSpec:
    def make():
        x, y, z = _vectors(n, 3, dtype)
        return lambda: np.add(x, y, out=z)
    size = np.dtype(dtype).itemsize
    return KernelSpec(f"add_{n}", f"add, n={_n(n)}", elementwise(n, inputs=2), _prec(dtype), "1",
                      "np.add(x, y, out=z)", make, 3 * n * size)


def matmul_spec(n: int, dtype=np.float64) -> KernelSpec:
    def make():
        rng = np.random.default_rng(1)
        a, b = (rng.random((n, n)).astype(dtype) for _ in range(2))
        c = np.empty((n, n), dtype)
        return lambda: np.matmul(a, b, out=c)
    size = np.dtype(dtype).itemsize
    key = f"matmul_{n}" + ("" if np.dtype(dtype) == np.float64 else f"_{_prec(dtype)}")
    return KernelSpec(key, f"matmul, n={n}", matmul(n, n, n), _prec(dtype), "BLAS",
                      "np.matmul(A, B, out=C)", make, 3 * n * n * size)


def _n(n: int) -> str:
    """2^23 for powers of two above 2^16 (easier to read than 8388608), else the number."""
    return f"2^{n.bit_length() - 1}" if n > 65536 and n & (n - 1) == 0 else str(n)


def _prec(dtype) -> str:
    return {np.dtype(np.float64): "fp64", np.dtype(np.float32): "fp32"}[np.dtype(dtype)]
