"""ResNet-18, -34 and -50 as layer tables, built by formula from their architecture.

The layout is torchvision's (v1.5 for ResNet-50: the stride of a downsampling bottleneck sits
on its 3x3 conv), for a square RGB image (224x224x3 by default). Every count is per image.

Inference conventions, one kernel per `Layer`:

* A conv counts c_out·(c_in/groups)·k·k weights (+ c_out bias) and h_out·w_out of those
  weights (bias excluded) as MACs; FLOPs = FLOPS_PER_MAC · MACs.
* BatchNorm is folded into the weights of the conv before it, so it adds no kernel. Its
  learned scale and shift still belong to the published parameter total, so each BN adds
  2·c_out to that conv's `params` (running mean and variance are buffers, not parameters).
* ReLU is fused into the conv epilogue: no kernel, no FLOPs counted.
* The residual add is fused into the last conv of each block, whose `activations` therefore
  also include reading the skip tensor (one more output-sized tensor). Its FLOPs are not
  counted (one add per output element, negligible).
* The 1x1 downsample conv (with its BN) is a layer of its own, listed before the block's last
  conv, which consumes its output as the skip tensor (it runs first in its block).
* The max pool after conv1 and the global average pool are layers of their own (FLOPs = output
  elements x window size, no parameters); the fully connected classifier is the last layer.
* `activations` = input elements + output elements (+ skip elements where the add is fused).

Used by lesson 1, "hello roofline".
"""
from __future__ import annotations

from course_lib.models.layers import FLOPS_PER_MAC, Layer

__all__ = ["conv", "fc", "pool", "resnet", "RESNET_DEPTHS"]


def _out_size(n: int, k: int, stride: int, padding: int) -> int:
    return (n + 2 * padding - k) // stride + 1


def conv(name: str, c_in: int, c_out: int, k: int, stride: int, h_in: int, w_in: int,
         bias: bool = False, padding: int | None = None, groups: int = 1
         ) -> tuple[Layer, int, int]:
    """A k x k convolution; returns `(layer, h_out, w_out)`.

    `padding` defaults to k // 2 ("same" padding for odd k at stride 1). The layer counts no
    BatchNorm parameters; `resnet` adds those.

    >>> layer, h, w = conv("conv1", 3, 64, 7, 2, 224, 224)
    >>> layer.params, (h, w), layer.flops / 2
    (9408, (112, 112), 118013952.0)
    """
    if c_in % groups or c_out % groups:
        raise ValueError(f"groups={groups} must divide c_in={c_in} and c_out={c_out}")
    if padding is None:
        padding = k // 2
    h_out, w_out = _out_size(h_in, k, stride, padding), _out_size(w_in, k, stride, padding)
    weights = c_out * (c_in // groups) * k * k
    macs = h_out * w_out * weights
    layer = Layer(
        name=name,
        kind="conv",
        flops=float(FLOPS_PER_MAC * macs),
        params=weights + (c_out if bias else 0),
        activations=float(c_in * h_in * w_in + c_out * h_out * w_out),
    )
    return layer, h_out, w_out


def fc(name: str, in_features: int, out_features: int) -> Layer:
    """A fully connected layer with bias: params = in·out + out, MACs = in·out."""
    macs = in_features * out_features
    return Layer(
        name=name,
        kind="fc",
        flops=float(FLOPS_PER_MAC * macs),
        params=macs + out_features,
        activations=float(in_features + out_features),
    )


def pool(name: str, kind: str, c: int, k: int, stride: int, h: int, w: int,
         padding: int = 0) -> tuple[Layer, int, int]:
    """A k x k max or average pool over c channels; returns `(layer, h_out, w_out)`.

    FLOPs = output elements x window size (one compare or add per window element).
    """
    if kind not in ("max", "avg"):
        raise ValueError(f"pool kind must be 'max' or 'avg', not {kind!r}")
    h_out, w_out = _out_size(h, k, stride, padding), _out_size(w, k, stride, padding)
    out = c * h_out * w_out
    layer = Layer(
        name=name,
        kind="pool",
        flops=float(out * k * k),
        params=0,
        activations=float(c * h * w + out),
    )
    return layer, h_out, w_out


def _with_bn(layer: Layer, c_out: int, skip: float = 0.0) -> Layer:
    """Fold a BatchNorm (2·c_out parameters) into `layer`; add `skip` elements read."""
    return Layer(
        name=layer.name,
        kind=layer.kind,
        flops=layer.flops,
        params=layer.params + 2 * c_out,
        activations=layer.activations + skip,
    )


# depth -> (block type, blocks per stage)
_RESNETS = {
    18: ("basic", (2, 2, 2, 2)),
    34: ("basic", (3, 4, 6, 3)),
    50: ("bottleneck", (3, 4, 6, 3)),
}
RESNET_DEPTHS = tuple(sorted(_RESNETS))


def resnet(depth: int, image_size: int = 224, num_classes: int = 1000) -> tuple[Layer, ...]:
    """The layers of ResNet-`depth` (18, 34 or 50) for one `image_size` x `image_size` RGB image.

    Used in lesson 1, "hello roofline", as the first workload put on a roofline. Parameter
    totals match torchvision's published counts (BatchNorm scale and shift included).

    >>> layers = resnet(50)
    >>> sum(l.params for l in layers)
    25557032
    >>> round(sum(l.flops for l in layers if l.kind in ("conv", "fc")) / 2 / 1e9, 2)  # GMAC
    4.09
    >>> layers[0].name, layers[-1].name
    ('conv1', 'fc')
    """
    if depth not in _RESNETS:
        raise ValueError(
            f"unsupported ResNet depth {depth!r}; valid depths are "
            f"{', '.join(str(d) for d in RESNET_DEPTHS)}")
    block, stages = _RESNETS[depth]
    expansion = 4 if block == "bottleneck" else 1

    layers: list[Layer] = []
    l, h, w = conv("conv1", 3, 64, 7, 2, image_size, image_size)
    layers.append(_with_bn(l, 64))
    l, h, w = pool("maxpool", "max", 64, 3, 2, h, w, padding=1)
    layers.append(l)

    c_in = 64
    for stage, n_blocks in enumerate(stages, start=1):
        width = 64 * 2 ** (stage - 1)
        c_out = width * expansion
        for b in range(n_blocks):
            prefix = f"layer{stage}.{b}"
            stride = 2 if (b == 0 and stage > 1) else 1
            h_in, w_in = h, w
            if block == "basic":
                specs = [(c_in, width, 3, stride), (width, c_out, 3, 1)]
            else:  # v1.5 bottleneck: the stride sits on the 3x3 conv
                specs = [(c_in, width, 1, 1), (width, width, 3, stride), (width, c_out, 1, 1)]
            block_layers = []
            for i, (ci, co, k, s) in enumerate(specs, start=1):
                l, h, w = conv(f"{prefix}.conv{i}", ci, co, k, s, h, w)
                block_layers.append((l, co))
            if stride != 1 or c_in != c_out:
                l, _, _ = conv(f"{prefix}.downsample", c_in, c_out, 1, stride, h_in, w_in)
                layers.append(_with_bn(l, c_out))
            for i, (l, co) in enumerate(block_layers, start=1):
                skip = co * h * w if i == len(block_layers) else 0.0
                layers.append(_with_bn(l, co, skip=float(skip)))
            c_in = c_out

    l, h, w = pool("avgpool", "avg", c_in, h, 1, h, w)
    layers.append(l)
    layers.append(fc("fc", c_in * h * w, num_classes))
    return tuple(layers)
