"""The model zoo: CNNs from layer lists, transformers from configs, kernels from formulas.

>>> from course_lib import Models
>>> Models.ResNet50.parameters
25557032
>>> Models.get("llama3_8b").name
'Llama3_8B'
"""
from __future__ import annotations

import functools

from ..errors import unknown_name
from ..zoo import ZooMeta, normalize_key
from .kernels import Kernel, axpy, dot, elementwise, matmul
from .layers import FLOPS_PER_MAC, Layer, LayerTable
from .transformer import Transformer, TransformerConfig

__all__ = ["Models", "CNN", "Transformer", "TransformerConfig", "Kernel", "Layer",
           "LayerTable", "FLOPS_PER_MAC", "dot", "axpy", "elementwise", "matmul"]


class CNN:
    """A convolutional network built from its layer list (one sample = one image).

    >>> m = Models.ResNet50
    >>> round(m.macs_per_sample / 1e9, 2), len(m.layers)
    (4.09, 56)
    """

    kind = "cnn"
    sample = "image"

    def __init__(self, name: str, layers, source: str = ""):
        self.name = name
        self.source = source
        self._table = LayerTable(tuple(layers))

    @property
    def layers(self):
        return self._table.layers

    def layer_table(self, context_tokens=None) -> LayerTable:
        return self._table

    @functools.cached_property
    def parameters(self) -> int:
        """Parameters (an int), BatchNorm scale and shift included as torchvision counts them."""
        return int(sum(l.params * l.count for l in self.layers))

    @property
    def flops_per_sample(self) -> float:
        """FLOPs for one image (2 per MAC)."""
        return float((self._table.flops * self._table.count).sum())

    @property
    def macs_per_sample(self) -> float:
        return self.flops_per_sample / FLOPS_PER_MAC

    def __repr__(self):
        return (f"CNN({self.name!r}, {self.parameters / 1e6:.1f}M params, "
                f"{self.flops_per_sample / 1e9:.2f} GFLOP per image, {len(self.layers)} layers)")


def _resnet(depth: int) -> CNN:
    from .cnn import resnet

    return CNN(f"ResNet{depth}", resnet(depth),
               source=f"He et al. 2016, torchvision resnet{depth} layout (v1.5)")


# Published shapes; `source` says where. Parameter counts are what the config produces.
_CONFIGS = {
    "Llama2_7B": (TransformerConfig(32, 4096, 32, 32, 11008, 32000,
                                    source="Touvron et al. 2023; HF meta-llama/Llama-2-7b-hf config.json"),
                  6_738_415_616),
    "Llama2_13B": (TransformerConfig(40, 5120, 40, 40, 13824, 32000,
                                     source="HF meta-llama/Llama-2-13b-hf config.json"), 13_015_864_320),
    "Llama2_70B": (TransformerConfig(80, 8192, 64, 8, 28672, 32000,
                                     source="HF meta-llama/Llama-2-70b-hf config.json"), 68_976_648_192),
    "Llama3_8B": (TransformerConfig(32, 4096, 32, 8, 14336, 128256,
                                    source="HF meta-llama/Meta-Llama-3-8B config.json"), 8_030_261_248),
    "Llama3_70B": (TransformerConfig(80, 8192, 64, 8, 28672, 128256,
                                     source="HF meta-llama/Meta-Llama-3-70B config.json"), 70_553_706_496),
    "Mistral_7B": (TransformerConfig(32, 4096, 32, 8, 14336, 32000, sliding_window=4096,
                                     source="Jiang et al. 2023; HF mistralai/Mistral-7B-v0.1 config.json "
                                            "(sliding_window 4096)"),
                   7_241_732_096),
    "Mixtral_8x7B": (TransformerConfig(32, 4096, 32, 8, 14336, 32000, experts=8, top_k=2,
                                       source="Jiang et al. 2024; HF mistralai/Mixtral-8x7B-v0.1 config.json"),
                     46_702_792_704),
    "GPT3_175B": (TransformerConfig(96, 12288, 96, 96, 49152, 50257, gated_mlp=False,
                                    tied_embeddings=True, norm="layernorm", bias=True,
                                    learned_positions=2048,
                                    source="Brown et al. 2020, Table 2.1 (175B row)"), 175e9),
}

_CNNS = {"ResNet18": 18, "ResNet34": 34, "ResNet50": 50}


class Models(metaclass=ZooMeta):
    """The zoo: ``Models.ResNet50``, ``Models.get("llama3_8b")``, ``Models.names()``.

    >>> Models.get("mixtral-8x7b").config.experts
    8
    >>> "GPT3_175B" in Models.names()
    True
    """

    @staticmethod
    def names() -> list[str]:
        return list(_CNNS) + list(_CONFIGS)

    @staticmethod
    def get(name: str):
        """A zoo model by name (case-insensitive); unknown names suggest the closest."""
        if isinstance(name, (CNN, Transformer, Kernel)):
            return name
        key = {normalize_key(n): n for n in Models.names()}.get(normalize_key(name))
        if key is None:
            raise unknown_name("model", name, Models.names())
        return _build(key)


@functools.lru_cache(maxsize=None)
def _build(key: str):
    if key in _CNNS:
        return _resnet(_CNNS[key])
    config, published = _CONFIGS[key]
    return Transformer(key, config, published)
