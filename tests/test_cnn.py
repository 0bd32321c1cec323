"""Tests for course_lib.models.cnn: ResNet layer tables against published and hand counts."""
import pytest

from course_lib.models.cnn import conv, fc, pool, resnet
from course_lib.models.layers import FLOPS_PER_MAC

# torchvision's published parameter counts (BatchNorm weight and bias included).
TORCHVISION_PARAMS = {18: 11_689_512, 34: 21_797_672, 50: 25_557_032}
# torchvision's published GMACs (it labels them "GFLOPS") at 224x224.
TORCHVISION_GMACS = {18: 1.82, 34: 3.67, 50: 4.09}


def macs(layers):
    return sum(l.flops for l in layers if l.kind in ("conv", "fc")) / FLOPS_PER_MAC


def by_name(layers):
    return {l.name: l for l in layers}


@pytest.mark.parametrize("depth", [18, 34, 50])
def test_params_match_torchvision_exactly(depth):
    assert sum(l.params for l in resnet(depth)) == TORCHVISION_PARAMS[depth]


def test_resnet50_macs_within_1_percent():
    layers = resnet(50)
    assert macs(layers) == pytest.approx(4.09e9, rel=0.01)
    # ≈ 8.2 GFLOP per image, pooling included
    assert sum(l.flops for l in layers) == pytest.approx(8.2e9, rel=0.01)


@pytest.mark.parametrize("depth", [18, 34])
def test_basic_block_resnets_macs(depth):
    assert macs(resnet(depth)) == pytest.approx(TORCHVISION_GMACS[depth] * 1e9, rel=0.015)


@pytest.mark.parametrize("depth", [18, 34, 50])
def test_flops_are_two_per_mac(depth):
    for l in resnet(depth):
        if l.kind == "conv":
            weights = l.params - 2 * _c_out(l, depth)  # drop the folded BN parameters
            assert weights > 0
            assert l.flops % FLOPS_PER_MAC == 0
            assert (l.flops / FLOPS_PER_MAC) % weights == 0  # MACs = h_out·w_out·weights
    fc_layer = resnet(depth)[-1]
    assert fc_layer.flops == FLOPS_PER_MAC * (fc_layer.params - 1000)


def _c_out(layer, depth):
    """Output channels of a ResNet conv, from its name (for stripping BN parameters)."""
    if layer.name == "conv1":
        return 64
    stage = int(layer.name[len("layer")])
    width = 64 * 2 ** (stage - 1)
    expansion = 4 if depth == 50 else 1
    last = "conv3" if depth == 50 else "conv2"
    if layer.name.endswith(("downsample", last)):
        return width * expansion
    return width


def test_conv1_by_hand():
    layer, h, w = conv("conv1", 3, 64, 7, 2, 224, 224)
    assert (h, w) == (112, 112)
    assert layer.kind == "conv"
    assert layer.params == 64 * 3 * 7 * 7 == 9408
    assert layer.flops == 2 * 118_013_952 == 2 * 112 * 112 * 9408
    assert layer.activations == 224 * 224 * 3 + 112 * 112 * 64

    c1 = resnet(50)[0]
    assert c1.name == "conv1"
    assert c1.params == 9408 + 128  # + BN scale and shift
    assert c1.flops == layer.flops
    assert c1.activations == layer.activations  # no skip tensor


def test_conv_helper_bias_groups_padding():
    layer, h, w = conv("dw", 32, 32, 3, 1, 10, 10, bias=True, groups=32)
    assert (h, w) == (10, 10)
    assert layer.params == 32 * 1 * 9 + 32
    assert layer.flops == 2 * 10 * 10 * 32 * 9  # bias is not a MAC
    _, h, w = conv("valid", 3, 8, 3, 1, 10, 10, padding=0)
    assert (h, w) == (8, 8)


def test_fc_and_pool_helpers():
    f = fc("fc", 2048, 1000)
    assert (f.kind, f.params, f.flops) == ("fc", 2048 * 1000 + 1000, 2 * 2048 * 1000)
    assert f.activations == 2048 + 1000
    p, h, w = pool("maxpool", "max", 64, 3, 2, 112, 112, padding=1)
    assert (p.kind, p.params, (h, w)) == ("pool", 0, (56, 56))
    assert p.flops == 64 * 56 * 56 * 9
    assert p.activations == 64 * 112 * 112 + 64 * 56 * 56
    with pytest.raises(ValueError):
        pool("x", "min", 1, 2, 2, 4, 4)


@pytest.mark.parametrize("depth, final_c", [(18, 512), (34, 512), (50, 2048)])
def test_spatial_sizes_and_order(depth, final_c):
    layers = resnet(depth)
    names = [l.name for l in layers]
    assert names[:2] == ["conv1", "maxpool"]
    assert names[-2:] == ["avgpool", "fc"]
    assert [l.kind for l in layers[-2:]] == ["pool", "fc"]
    avg = layers[-2]
    # global average pool: reads a 7x7 final feature map, writes one value per channel
    assert avg.activations == final_c * 7 * 7 + final_c
    assert avg.flops == final_c * 7 * 7
    assert layers[-1].params == final_c * 1000 + 1000
    maxpool = layers[1]
    assert maxpool.activations == 64 * 112 * 112 + 64 * 56 * 56
    assert len([n for n in names if n.endswith("downsample")]) == (3 if depth < 50 else 4)


def test_layer_names_resnet50():
    names = [l.name for l in resnet(50)]
    assert len(names) == len(set(names))
    for n in ["layer1.0.conv1", "layer1.0.conv3", "layer1.0.downsample", "layer2.0.downsample",
              "layer3.5.conv3", "layer4.2.conv3"]:
        assert n in names
    assert "layer2.1.downsample" not in names
    # 53 convs (incl. 4 downsample) + maxpool + avgpool + fc
    assert len(names) == 56


def test_v15_stride_on_3x3():
    d = by_name(resnet(50))
    # layer2.0: 256 -> 128 -> 128 (stride 2) -> 512, input 56x56, output 28x28
    assert d["layer2.0.conv1"].flops == 2 * 56 * 56 * 128 * 256  # 1x1 at full resolution
    assert d["layer2.0.conv2"].flops == 2 * 28 * 28 * 128 * 128 * 9
    assert d["layer2.0.downsample"].flops == 2 * 28 * 28 * 512 * 256


def test_residual_conv_reads_skip_tensor():
    d = by_name(resnet(50))
    # last conv of layer1.1: 64 -> 256 at 56x56, plus the 256x56x56 skip tensor
    out = 256 * 56 * 56
    assert d["layer1.1.conv3"].activations == 64 * 56 * 56 + out + out
    assert d["layer1.1.conv2"].activations == 64 * 56 * 56 * 2  # no skip
    # the downsample conv is its own layer and reads no skip tensor
    assert d["layer4.0.downsample"].activations == 1024 * 14 * 14 + 2048 * 7 * 7
    d18 = by_name(resnet(18))
    out = 512 * 7 * 7
    assert d18["layer4.1.conv2"].activations == out + out + out
    assert d18["layer4.1.conv1"].activations == out + out


@pytest.mark.parametrize("bad", [0, 20, 101, 152])
def test_bad_depth_names_valid_depths(bad):
    with pytest.raises(ValueError, match=r"18, 34, 50"):
        resnet(bad)


def test_num_classes_and_image_size():
    layers = resnet(50, num_classes=10)
    assert layers[-1].params == 2048 * 10 + 10
    assert sum(l.params for l in layers) == TORCHVISION_PARAMS[50] - 2048 * 990 - 990
    # conv MACs scale with pixels; parameters do not depend on image size
    small = resnet(50, image_size=112)
    assert sum(l.params for l in small) == TORCHVISION_PARAMS[50]
    assert small[-2].activations == 2048 * 4 * 4 + 2048
