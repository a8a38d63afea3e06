"""A recorded op priced as ``trace()`` prices the same call: fused ops as fused ops, every
attention op in its schema's layout, traces of older torch by their op names."""

from __future__ import annotations

import pytest

import pytest_roofline as rl
from pytest_roofline.hardware import Hardware

torch = pytest.importorskip("torch")
F = torch.nn.functional

from pytest_roofline.profiling import pricing  # noqa: E402

#: Roofs no CPU reaches, so a real timing is never faster than its bound.
ROOMY = Hardware(name="roomy-cpu", memory_bandwidth=1e12, memory_capacity=16e9,
                 matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")


def test_sdpa_profiled_on_a_cpu_is_priced_as_the_fused_op() -> None:
    # causal attention of 1 x 4 heads x 1,024 x 64 in fp32: 4·H·S(S+1)/2·D for the two
    # products, 5 a scored pair for the softmax; Q, K, V read and O written once. Its meta
    # kernel decomposes into the math (two bmm over every pair, a mask, a softmax of the
    # full score matrix): twice the products and 64x the bytes.
    h, s, d = 4, 1024, 64
    q, k, v = (torch.randn(1, h, s, d) for _ in range(3))
    profile = rl.Profiler(hw=ROOMY, repeats=1)(
        lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    (sdpa,) = [r for r in profile.rows if r.op == "aten::scaled_dot_product_attention"]
    pairs = h * s * (s + 1) / 2
    assert sdpa.flops == 4 * pairs * d + 5 * pairs
    assert sdpa.bytes == 4 * h * s * d * 4
    traced = rl.trace(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert (sdpa.flops, sdpa.bytes) == (traced.flops, traced.bytes)


@pytest.mark.parametrize(("op", "layout"), [
    ("aten::_scaled_dot_product_flash_attention", "bhsd"),
    ("aten::_scaled_dot_product_efficient_attention", "bhsd"),
    ("aten::_scaled_dot_product_cudnn_attention", "bhsd"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu", "bhsd"),
    ("aten::_flash_attention_forward", "bshd"),
    ("aten::_efficient_attention_forward", "bshd"),
])
@pytest.mark.parametrize("causal", [False, True])
def test_every_attention_forward_reads_its_schemas_layout(op, layout, causal) -> None:
    # batch 2, 8 heads, 256 queries and keys of 64: 4·B·H·Sq·Sk·D, halved (with the
    # diagonal) when causal; the softmax's 5 a pair beside it
    b, h, s, d = 2, 8, 256, 64
    dims = [b, h, s, d] if layout == "bhsd" else [b, s, h, d]
    tensors = [torch.empty(dims, dtype=torch.bfloat16, device="meta") for _ in range(3)]
    flag = {"is_causal": causal}
    if op.endswith("_efficient_attention_forward"):
        call = lambda: torch.ops.aten._efficient_attention_forward(  # noqa: E731
            *tensors, None, None, None, None, None, 0.0, int(causal), False)
    elif op.endswith("_flash_attention_forward"):
        call = lambda: torch.ops.aten._flash_attention_forward(  # noqa: E731
            *tensors, None, None, s, s, 0.0, causal, False)
    elif "cudnn" in op:
        call = lambda: torch.ops.aten._scaled_dot_product_cudnn_attention(  # noqa: E731
            *tensors, None, False, 0.0, causal, False)
    elif "efficient" in op:
        call = lambda: torch.ops.aten._scaled_dot_product_efficient_attention(  # noqa: E731
            *tensors, None, False, 0.0, causal)
    else:
        packet = getattr(torch.ops.aten, op.removeprefix("aten::"))
        call = lambda: packet(*tensors, 0.0, **flag)  # noqa: E731
    traced = rl.trace(call)
    pairs = b * h * (s * (s + 1) / 2 if causal else s * s)
    products = sum(kernel.flops for kernel in traced.kernels if kernel.unit == "matrix")
    assert products == 4 * pairs * d
    assert products == pytest.approx(4 * b * h * s * s * d / (2 if causal else 1), rel=0.02)


@pytest.mark.parametrize(("op", "layout"), [
    ("aten::_flash_attention_backward", "bshd"),
    ("aten::_efficient_attention_backward", "bshd"),
    ("aten::_scaled_dot_product_flash_attention_for_cpu_backward", "bhsd"),
    ("aten::_scaled_dot_product_cudnn_attention_backward", "bhsd"),
])
def test_every_attention_backward_is_two_and_a_half_forwards(op, layout) -> None:
    # the scores recomputed and four gradient products: 2·pairs·(3d + 2d), 2.5x the
    # forward's 4·pairs·d (FlashAttention-2, Dao 2023, §3.2); causal, 2 x 8 x 256 x 64
    b, h, s, d = 2, 8, 256, 64
    dims = [b, h, s, d] if layout == "bhsd" else [b, s, h, d]
    t = [torch.empty(dims, dtype=torch.bfloat16, device="meta") for _ in range(5)]
    lse = torch.empty(b, h, s, device="meta")
    seed = torch.empty(2, dtype=torch.uint64, device="meta")
    none = torch.empty(0, device="meta")
    calls = {
        "aten::_flash_attention_backward": lambda: torch.ops.aten._flash_attention_backward(
            *t, lse, none, none, s, s, 0.0, True, seed, none),
        "aten::_efficient_attention_backward":
            lambda: torch.ops.aten._efficient_attention_backward(
                t[0], t[1], t[2], t[3], None, t[4], None, None, s, s, lse, 0.0, seed, seed, 1,
                False),
        "aten::_scaled_dot_product_flash_attention_for_cpu_backward":
            lambda: torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                *t, lse, 0.0, True),
        "aten::_scaled_dot_product_cudnn_attention_backward":
            lambda: torch.ops.aten._scaled_dot_product_cudnn_attention_backward(
                *t, lse, seed, seed, none, none, none, s, s, 0.0, True),
    }
    traced = rl.trace(calls[op])
    pairs = b * h * s * (s + 1) / 2
    products = sum(kernel.flops for kernel in traced.kernels if kernel.unit == "matrix")
    assert products == 2 * pairs * (3 * d + 2 * d) == 2.5 * (4 * pairs * d)


def test_flash_backward_as_torch_2_13_records_it_is_priced() -> None:
    # the profiler writes undefined cumulative lengths with no type and the rng state as
    # "long unsigned int": each rebuilt (an empty tensor, a uint64 one), the op priced
    b, h, s, d = 1, 4, 512, 64
    result = pricing.price(
        "aten::_scaled_dot_product_flash_attention_backward",
        [[b, h, s, d]] * 5 + [[b, h, s], [], [], [], [], [], [], [2], [], []],
        ("c10::BFloat16",) * 5 + ("float", "", "", "Scalar", "Scalar", "Scalar", "Scalar",
                                  "long unsigned int", "long unsigned int", "Scalar"),
        ("",) * 8 + (str(s), str(s), "0.", "False", "", "", ""))
    assert not isinstance(result, str), result
    matrix = sum(k.flops for k in result.kernels if k.unit == "matrix")
    assert matrix == 2 * (b * h * s * s) * (3 * d + 2 * d)
