"""Layers and layer tables: the unit every workload is built from.

Each layer states what it costs *per sample* (one image, one sequence) and what it shares
across the batch (weights). The solver turns a table of layers into FLOPs and bytes for any
batch size, so one description serves a batch of 1 and a 10,000-point sweep alike.

Counting conventions (introduced in lesson 1, "hello roofline"):

* 1 multiply-accumulate (MAC) = 2 FLOPs, the convention vendors use for their peaks.
* Bytes count what each layer reads from and writes to main memory when it runs as its own
  kernel: its weights once per batch, its input and output activations once per sample. Nothing
  is assumed to stay in cache between layers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FLOPS_PER_MAC = 2
"""The one FLOP convention of the course: a multiply-accumulate is 2 floating-point operations."""


def experts_touched(experts, top_k, tokens):
    """Expected distinct experts that `tokens` tokens, each routed to `top_k` of `experts`
    uniformly at random, read: an expert is untouched with probability (1 - k/E)^t, so
    E·(1 - (1 - k/E)^t) experts are read."""
    return experts * (1.0 - (1.0 - top_k / experts) ** tokens)


@dataclass(frozen=True)
class Layer:
    """One kernel of a workload.

    All element counts are numbers of tensor elements; the solver multiplies them by the bytes
    per element of the precision in use (weights, activations and KV cache may differ).

    name         -- readable name, e.g. "layer2.0.conv1"
    kind         -- "conv", "fc", "matmul", "attention", "elementwise", "pool", "norm", "embedding"
    flops        -- FLOPs per sample (2 per MAC)
    params       -- parameters stored (counted in the model's parameter total)
    weight_reads -- weight elements read once per batch (None: all of `params`); for an MoE
                    layer, the elements of *one* expert
    activations  -- activation elements read plus written, per sample
    kv           -- KV-cache elements read plus written, per sample
    gathered     -- weight elements read per sample by a lookup (an embedding row per token)
    count        -- how many identical copies of this layer the model has (transformer blocks)
    experts      -- experts in an MoE layer (1: a dense layer)
    top_k        -- experts each token is routed to
    """

    name: str
    kind: str
    flops: float = 0.0
    params: float = 0.0
    weight_reads: float | None = None
    activations: float = 0.0
    kv: float = 0.0
    gathered: float = 0.0
    count: int = 1
    experts: int = 1
    top_k: int = 1

    @property
    def weights_read(self) -> float:
        return self.params if self.weight_reads is None else self.weight_reads


@dataclass(frozen=True)
class LayerTable:
    """Column arrays of a list of layers, ready for vectorized roofline arithmetic.

    `tokens_per_sample` is how many tokens one sample pushes through the layers (1 for a CNN
    image or a decode step, the prompt length for prefill); MoE layers need it to work out how
    many distinct experts a batch touches.
    """

    layers: tuple[Layer, ...]
    tokens_per_sample: int = 1
    names: np.ndarray = field(init=False, repr=False)
    flops: np.ndarray = field(init=False, repr=False)
    weight_reads: np.ndarray = field(init=False, repr=False)
    activations: np.ndarray = field(init=False, repr=False)
    kv: np.ndarray = field(init=False, repr=False)
    gathered: np.ndarray = field(init=False, repr=False)
    count: np.ndarray = field(init=False, repr=False)
    experts: np.ndarray = field(init=False, repr=False)
    top_k: np.ndarray = field(init=False, repr=False)
    attention: np.ndarray = field(init=False, repr=False)   # True for attention layers

    def __post_init__(self):
        ls = self.layers
        col = lambda f: np.array([f(l) for l in ls], dtype=float)  # noqa: E731
        object.__setattr__(self, "names", np.array([l.name for l in ls], dtype=object))
        object.__setattr__(self, "flops", col(lambda l: l.flops))
        object.__setattr__(self, "weight_reads", col(lambda l: l.weights_read))
        object.__setattr__(self, "activations", col(lambda l: l.activations))
        object.__setattr__(self, "kv", col(lambda l: l.kv))
        object.__setattr__(self, "gathered", col(lambda l: l.gathered))
        object.__setattr__(self, "count", col(lambda l: l.count))
        object.__setattr__(self, "experts", col(lambda l: l.experts))
        object.__setattr__(self, "top_k", col(lambda l: l.top_k))
        # attention's matmuls (Q·Kᵀ, P·V) may run at another precision than the weight matmuls
        object.__setattr__(self, "attention", np.array([l.kind == "attention" for l in ls], dtype=bool))

    def __len__(self) -> int:
        return len(self.layers)

    @property
    def kernels(self) -> int:
        """Kernel launches for one pass (each copy of a repeated layer is one)."""
        return int(self.count.sum())

    def experts_touched(self, batch_size):
        """Expected number of distinct experts a batch reads, per layer (1 for dense layers)."""
        t = np.asarray(batch_size, dtype=float)[..., None] * self.tokens_per_sample
        return np.where(self.experts > 1, experts_touched(self.experts, self.top_k, t), 1.0)
