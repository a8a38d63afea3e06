"""A convolution's backward read by its schema's argument names, checked against torch's
``FlopCounterMode`` over strides, dilations, groups and transposed convolutions, in
``trace()`` and in a recorded trace priced by the profile."""

from __future__ import annotations

import itertools

import pytest

import pytest_roofline as rl

torch = pytest.importorskip("torch")
F = torch.nn.functional
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

from pytest_roofline.profiling.torch import pricing  # noqa: E402


def _case(stride: int, dilation: int, groups: int, transposed: bool):
    x = torch.randn(2, 8, 17, 17, requires_grad=True)
    w = torch.randn(8, 8 // groups, 3, 3, requires_grad=True)
    conv = F.conv_transpose2d if transposed else F.conv2d

    def forward() -> torch.Tensor:
        return conv(x, w, stride=stride, dilation=dilation, groups=groups, padding=1)

    return x, w, forward


def _counted(forward, inputs, grad) -> float:
    out = forward()  # the backward alone is counted
    with FlopCounterMode(display=False) as counter:
        torch.autograd.grad(out, inputs, grad)
    return float(counter.get_total_flops())


def _traced(forward, inputs, grad) -> float:
    workload = rl.trace(lambda: torch.autograd.grad(forward(), inputs, grad))
    return sum(float(k.flops) for k in workload.kernels if "convolution_backward" in k.name)


@pytest.mark.parametrize(("stride", "dilation", "transposed"),
                         list(itertools.product((1, 2), (1, 2), (False, True))))
def test_backward_matches_torchs_counter(stride, dilation, transposed) -> None:
    # FlopCounterMode's conv_backward_flop: each gradient asked for costs the forward's
    # multiply-accumulates (input's: a transposed convolution of grad_out; weight's: a
    # convolution of the input by grad_out), 2 FLOPs each
    x, w, forward = _case(stride, dilation, 1, transposed)
    grad = torch.randn_like(forward())
    assert _traced(forward, (x, w), grad) == _counted(forward, (x, w), grad)


@pytest.mark.parametrize(("stride", "transposed"), [(1, False), (2, False), (2, True)])
def test_grouped_backward_matches_the_counter_where_it_counts_groups(stride,
                                                                     transposed) -> None:
    # torch's counter prices the input gradient of a grouped convolution by its weight
    # (groups counted), but the weight gradient as an ungrouped convolution (x groups): so
    # the input gradient alone is checked against it, and the weight gradient against the
    # forward's count, 2 · batch · prod(weight) · prod(output spatial) (input spatial when
    # transposed)
    groups = 4
    x, w, forward = _case(stride, 1, groups, transposed)
    out = forward()
    grad = torch.randn_like(out)
    assert _traced(forward, (x,), grad) == _counted(forward, (x,), grad)
    spatial = x.shape[2:] if transposed else out.shape[2:]
    one = 2.0 * x.shape[0] * w.numel() * spatial[0] * spatial[1]
    assert _traced(forward, (w,), grad) == one
    assert _traced(forward, (x, w), grad) == 2 * one


def test_a_recorded_strided_backward_is_priced_on_its_output() -> None:
    # ResNet's stride-2 3x3 convolution 256 -> 512 channels, 14x14 -> 7x7, batch 10 (as an
    # MI300X trace records it): both gradients, 2 · 2 · 10 · (512·256·9) · 7·7 FLOPs; reading
    # argument 6 (dilation) as `transposed` priced it on the 14x14 input, 4x too high
    dims = [[10, 512, 7, 7], [10, 256, 14, 14], [512, 256, 3, 3]] + [[]] * 8
    types = ("c10::BFloat16",) * 3 + ("", "ScalarList", "ScalarList", "ScalarList", "Scalar",
                                      "ScalarList", "Scalar", "ScalarList")
    concrete = ("", "", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1",
                "[True, True, False]")
    result = pricing.price("aten::convolution_backward", dims, types, concrete)
    assert not isinstance(result, str), result
    assert result.flops == 2 * 2 * 10 * (512 * 256 * 9) * 7 * 7


# -- torch 1.10's convolution backward ops, by name (what the mutation run found no test for) --
#: A 3x3 convolution of 2 x 8 x 10 x 10 to 2 x 4 x 8 x 8 (stride 1, no padding; weight 4 x 8 x
#: 3 x 3), and its transpose (2 x 4 x 8 x 8 to 2 x 8 x 10 x 10; weight 4 x 8 x 3 x 3). With no
#: child op naming the gradients, one is counted, the weight's (the lowest bound): 2 · N ·
#: prod(weight) · the output's spatial size, the input's when transposed; 2·2·288·64 both ways.
_FORWARD = ([2, 4, 8, 8], [2, 8, 10, 10], [4, 8, 3, 3])      # grad, input, weight
_TRANSPOSED = ([2, 8, 10, 10], [2, 4, 8, 8], [4, 8, 3, 3])
_WEIGHT_GRADIENT = 2 * 2 * (4 * 8 * 9) * 64


@pytest.mark.parametrize("name", sorted(pricing.LEGACY_CONV_BACKWARD))
def test_every_old_convolution_backward_reads_its_tensors_where_it_records_them(
        name: str) -> None:
    # the positions per op: cudnn/miopen/mkldnn record (input, grad, weight), the slow and
    # thnn ones (grad, input, weight); each is priced from the three where they stand
    grad, x, weight = _TRANSPOSED if "transpose" in name else _FORWARD
    first_input = not name.startswith(("slow_", "thnn_"))
    dims = ([x, grad, weight] if first_input else [grad, x, weight]) + [[]] * 4
    types = ("float",) * 3 + ("",) * 4
    result = pricing.price(f"aten::{name}", dims, types, None)
    assert not isinstance(result, str), result
    assert result.flops == _WEIGHT_GRADIENT
    # bytes: grad_output, input and weight read, the weight's gradient written, fp32 (a
    # mixed-up position reads another tensor twice): (512 + 1,600 + 288 + 288) · 4
    assert result.bytes == (2 * 4 * 64 + 2 * 8 * 100 + 288 + 288) * 4
    # two tensors recorded of the three: the reason, not an index past the list
    assert pricing.price(f"aten::{name}", dims[:2], types[:2], None) == (
        "its input shapes were not recorded (record_shapes=True)")


def test_an_old_depthwise_backward_reads_its_groups_from_the_channels() -> None:
    # miopen's depthwise backward of a 3x3 convolution over 8 channels, 8 groups (weight 8 x 1
    # x 3 x 3): groups = input channels / the weight's channels a group = 8; the weight's
    # gradient 2 · N · prod(weight) · 8·8 = 2·2·72·64 = 18,432 (one gradient, as above)
    dims = [[2, 8, 10, 10], [2, 8, 8, 8], [8, 1, 3, 3]] + [[]] * 4
    types = ("float",) * 3 + ("",) * 4
    result = pricing.price("aten::miopen_depthwise_convolution_backward", dims, types, None)
    assert not isinstance(result, str), result
    assert result.flops == 2 * 2 * 72 * 64


@pytest.mark.parametrize("rank", [1, 2])
def test_an_old_backward_of_tensors_under_three_dims_is_not_priced(rank: int) -> None:
    # a convolution's tensors are (batch, channels, spatial...): fewer than 3 dims is a
    # recording that did not keep the shapes (or another op), named, never guessed
    dims = [[2, 8, 10][:rank], [2, 8, 8, 8], [8, 8, 3, 3]] + [[]] * 4
    types = ("float",) * 3 + ("",) * 4
    assert pricing.price("aten::slow_conv2d_backward", dims, types, None) == (
        "its input shapes were not recorded (record_shapes=True)")


def test_an_inductor_kernel_without_its_types_is_not_priced() -> None:
    assert pricing.price("triton_poi_fused_add_0", [[4, 4], [4, 4]], None, None) == (
        "its input shapes were not recorded (record_shapes=True)")


def test_an_old_backward_of_a_1d_convolution_is_priced() -> None:
    # thnn's conv1d backward (torch 1.10 records conv1d as a 3-D slow_conv2d-family op's
    # tensors: batch, channels, length): 2 x 8 x 10 -> 2 x 4 x 8, weight 4 x 8 x 3; the
    # weight's gradient 2 · N · prod(weight) · 8 = 2·2·96·8 = 3,072
    dims = [[2, 4, 8], [2, 8, 10], [4, 8, 3]] + [[]] * 4
    types = ("float",) * 3 + ("",) * 4
    result = pricing.price("aten::slow_conv2d_backward", dims, types, None)
    assert not isinstance(result, str), result
    assert result.flops == 2 * 2 * 96 * 8


def test_an_old_backward_with_more_types_than_dims_is_not_priced() -> None:
    # two shapes recorded beside seven types: the weight's position (2) is past the shapes
    dims = [[2, 4, 8, 8], [2, 8, 10, 10]]
    types = ("float",) * 3 + ("",) * 4
    assert pricing.price("aten::slow_conv2d_backward", dims, types, None) == (
        "its input shapes were not recorded (record_shapes=True)")
