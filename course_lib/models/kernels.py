"""Single kernels as workloads: dot product, axpy, elementwise, matmul (lesson 1).

Their FLOPs and bytes are formulas a student can check by hand:

>>> from course_lib.models.kernels import dot, matmul
>>> k = dot(1000)
>>> k.flops_per_sample, k.elements_per_sample        # n MACs = 2n FLOPs; reads x, y, writes 1
(2000.0, 2001.0)
>>> round(k.arithmetic_intensity("fp32"), 4)         # 2n FLOPs / (4 B · (2n + 1))
0.2499
>>> matmul(4096, 4096, 4096).arithmetic_intensity("fp16")   # 2MNK / (2 B · (MK + KN + MN))
1365.3333333333333
"""
from __future__ import annotations

from ..precision import bytes_per_element
from .layers import FLOPS_PER_MAC, Layer, LayerTable


class Kernel:
    """A workload of one kernel. ``batch_size`` in ``solve`` runs that many independent copies;
    for matmul the right-hand matrix (K×N, the "weights") is shared by the copies.

    >>> from course_lib import solve
    >>> solve(matmul(8, 4096, 4096), "A100", batch_size=4).flops_si == 4 * 2 * 8 * 4096 * 4096
    True
    """

    kind = "kernel"
    sample = "call"

    def __init__(self, name: str, layer: Layer):
        self.name = name
        self._table = LayerTable((layer,))

    @property
    def layer(self) -> Layer:
        return self._table.layers[0]

    @property
    def parameters(self) -> int:
        return int(self.layer.params)

    @property
    def flops_per_sample(self) -> float:
        return float(self.layer.flops)

    @property
    def elements_per_sample(self) -> float:
        """Elements moved for one call: weights + activations read and written."""
        return float(self.layer.weights_read + self.layer.activations)

    def bytes(self, precision: str = "fp16") -> float:
        """Bytes one call moves at `precision`."""
        return self.elements_per_sample * bytes_per_element(precision)

    def arithmetic_intensity(self, precision: str = "fp16") -> float:
        """FLOPs per byte of one call, as a float."""
        return self.flops_per_sample / self.bytes(precision)

    def layer_table(self, context_tokens=None) -> LayerTable:
        return self._table

    def __repr__(self):
        return f"Kernel({self.name!r})"


def _check_sizes(**sizes):
    for k, v in sizes.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{k} must be a positive integer, got {v!r}.")


def dot(n: int) -> Kernel:
    """x · y for two n-vectors: n MACs; reads 2n elements, writes 1.

    >>> dot(4).flops_per_sample
    8.0
    """
    _check_sizes(n=n)
    return Kernel(f"dot(n={n})", Layer("dot", "elementwise", flops=FLOPS_PER_MAC * n,
                                       activations=2 * n + 1))


def axpy(n: int) -> Kernel:
    """y ← a·x + y: n MACs; reads x and y, writes y (3n elements).

    >>> axpy(10).bytes("fp32")
    120.0
    """
    _check_sizes(n=n)
    return Kernel(f"axpy(n={n})", Layer("axpy", "elementwise", flops=FLOPS_PER_MAC * n,
                                        activations=3 * n))


def elementwise(n: int, inputs: int = 1, outputs: int = 1, flops_per_element: int = 1) -> Kernel:
    """A pointwise op (ReLU, add, ...) over n elements of each of `inputs` tensors.

    >>> elementwise(100, inputs=2).elements_per_sample   # an add: reads 2, writes 1
    300.0
    """
    _check_sizes(n=n, inputs=inputs, outputs=outputs)
    return Kernel(f"elementwise(n={n})", Layer("elementwise", "elementwise",
                                               flops=flops_per_element * n,
                                               activations=(inputs + outputs) * n))


def matmul(M: int, N: int, K: int) -> Kernel:
    """C (M×N) = A (M×K) · B (K×N): M·N·K MACs; reads A and B, writes C.

    >>> round(matmul(1, 4096, 4096).arithmetic_intensity("fp16"), 4)   # a matrix-vector product
    0.9995
    """
    _check_sizes(M=M, N=N, K=K)
    return Kernel(f"matmul(M={M}, N={N}, K={K})",
                  Layer("matmul", "matmul", flops=FLOPS_PER_MAC * M * N * K, params=K * N,
                        activations=M * K + M * N))
