"""Public profiler traces recorded by others (``tests/data/traces/README.md``: where each
comes from, its license), priced as a new user would price them, chosen rows checked
against closed-form counts written here (never the project's own formulas), and no row
faster than its bound."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

pytest.importorskip("torch")

from pytest_roofline.profiling import read_trace

TRACES = Path(__file__).parent / "data" / "traces"


@functools.cache
def profile(name: str, hw: str):
    return read_trace(TRACES / name, hw=hw)


def row(name: str, hw: str, op: str, shapes: str):
    found = [r for r in profile(name, hw).rows if r.op == op and r.shapes == shapes]
    assert len(found) == 1, [(r.op, r.shapes) for r in profile(name, hw).rows if r.op == op]
    return found[0]


def per_call(r) -> float:
    return r.flops / r.count


PUBLIC = [("tracelens_h100_bert_small.json.gz", "h100-sxm"),
          ("tracelens_mi300x_bert_small.json.gz", "mi300x"),
          ("tracelens_h100_vit.json.gz", "h100-sxm"),
          ("tracelens_mi300x_vit.json.gz", "mi300x"),
          ("tracelens_mi300x_resnet_train.json.gz", "mi300x"),
          ("tracelens_mi300x_compile.json.gz", "mi300x"),
          ("tracelens_mi300x_norms.json.gz", "mi300x"),
          ("tracelens_mi300x_sglang_decode.json.gz", "mi300x"),
          ("hta_mi250_minitoy_train.json.gz", "mi250x"),
          ("v100_hta_trace_diff_test.json.gz", "v100")]


@pytest.mark.parametrize(("name", "hw"), PUBLIC)
def test_no_public_trace_has_a_row_faster_than_its_bound(name, hw) -> None:
    p = profile(name, hw)
    assert p.rows
    assert not [(r.op, r.shapes) for r in p.rows if r.faster]
    # rows doing no work (views, allocations) have no efficiency to judge
    assert all(r.efficiency is None or 0.0 <= r.efficiency <= 1.0 for r in p.rows)


def attention(b: int, h: int, sq: int, sk: int, d: int, *, causal: bool = False) -> float:
    """4·B·H·Sq·Sk·D (Q·Kᵀ and P·V), causal: the pairs on and below the diagonal."""
    pairs = sq * (sq + 1) / 2 if causal else sq * sk
    return 4.0 * b * h * pairs * d


@pytest.mark.parametrize("name,hw", [("tracelens_h100_bert_small.json.gz", "h100-sxm"),
                                     ("tracelens_mi300x_bert_small.json.gz", "mi300x")])
def test_flash_attention_is_read_batch_seq_heads_dim(name, hw) -> None:
    # aten::_flash_attention_forward takes [batch, seq, heads, dim]: BERT-small, 141
    # tokens, 8 heads of 64; the row's FLOPs are the products plus the softmax's 5 a pair
    r = row(name, hw, "aten::_flash_attention_forward",
            "1x141x8x64bf16,1x141x8x64bf16,1x141x8x64bf16")
    products = attention(1, 8, 141, 141, 64)
    assert per_call(r) == pytest.approx(products, rel=0.02)
    assert per_call(r) == products + 5 * 8 * 141 * 141
    # read [batch, heads, seq, dim] it was 141 heads of 8 positions: 17.6x too few
    assert per_call(r) > 10 * attention(1, 141, 8, 8, 64)
    # a product of the same run: addmm 141x512 by 512x512, 2·M·N·K
    assert per_call(row(name, hw, "aten::addmm", "512bf16,141x512bf16,512x512bf16")) == (
        2 * 141 * 512 * 512)


@pytest.mark.parametrize("name,hw", [("tracelens_h100_vit.json.gz", "h100-sxm"),
                                     ("tracelens_mi300x_vit.json.gz", "mi300x")])
def test_a_convolution_with_a_bias_is_one_priced_op(name, hw) -> None:
    # the ViT's patch embedding: 4 images of 224x224x3, 768 filters of 16x16, stride 16:
    # 14x14 outputs, 2 · 4 · 768 · (3·16·16) · 14·14 FLOPs; its bias add's kernel is its own
    r = row(name, hw, "aten::_convolution", "4x3x224x224bf16,768x3x16x16bf16,768bf16")
    assert per_call(r) == 2 * 4 * 768 * (3 * 16 * 16) * 14 * 14
    assert any("elementwise_kernel" in k for k in r.kernels)
    assert not [u for u in profile(name, hw).unpriced if "convolution" in u.name]
    # its attention: 4 x 197 tokens, 12 heads of 64, not causal (within 2%: the softmax)
    flash = row(name, hw, "aten::_flash_attention_forward",
                "4x197x12x64bf16,4x197x12x64bf16,4x197x12x64bf16")
    assert per_call(flash) == pytest.approx(attention(4, 12, 197, 197, 64), rel=0.02)


def test_a_strided_convolutions_backward_is_priced_on_its_output() -> None:
    name, hw = "tracelens_mi300x_resnet_train.json.gz", "mi300x"
    # the stride-2 3x3 convolution 256 -> 512 channels, 14x14 -> 7x7, batch 10: both
    # gradients, each 2 · 10 · (512·256·9) · 7·7 (priced on the 14x14 input it was 4x this)
    r = row(name, hw, "aten::convolution_backward",
            "10x512x7x7bf16,10x256x14x14bf16,512x256x3x3bf16")
    assert per_call(r) == 2 * (2 * 10 * (512 * 256 * 9) * 7 * 7)
    # the stem (7x7, stride 2, 224 -> 112; the image needs no gradient): the weight's only
    stem = row(name, hw, "aten::convolution_backward",
               "10x64x112x112bf16,10x3x224x224bf16,64x3x7x7bf16")
    assert per_call(stem) == 2 * 10 * (64 * 3 * 49) * 112 * 112


def test_a_compiled_blocks_attention_and_products() -> None:
    name, hw = "tracelens_mi300x_compile.json.gz", "mi300x"
    flash = row(name, hw, "aten::_flash_attention_forward",
                "8x4096x16x128bf16,8x4096x16x128bf16,8x4096x16x128bf16")
    assert per_call(flash) == pytest.approx(attention(8, 16, 4096, 4096, 128), rel=0.02)
    mm = row(name, hw, "aten::mm", "32768x2048bf16,2048x8192bf16,32768x8192bf16")
    assert per_call(mm) == 2 * 32768 * 2048 * 8192


def test_a_recorded_fused_rms_norm_is_one_kernel() -> None:
    # 8x16x32x32 fp32 normalized over its last 32x32 with a weight: 4 FLOPs an element
    # (square, mean, rsqrt-scale, weight); bytes: x read, y written, the weight read once
    name, hw = "tracelens_mi300x_norms.json.gz", "mi300x"
    r = row(name, hw, "aten::_fused_rms_norm", "8x16x32x32f32,32x32f32")
    n = 8 * 16 * 32 * 32
    assert per_call(r) == 4 * n
    assert r.bytes / r.count == (2 * n + 32 * 32) * 4
    plain = row(name, hw, "aten::_fused_rms_norm", "8x16x32x32f32")
    assert per_call(plain) == 3 * n  # no weight: 3 an element


def test_a_serving_decode_trace_names_its_graph_replays() -> None:
    # SGLang decode: the model runs in a HIP graph replay, whose kernels no op launched in
    # the window; what ran outside it is priced (argmax over 32 x 151,936 logits: one
    # comparison per element not already an output)
    name, hw = "tracelens_mi300x_sglang_decode.json.gz", "mi300x"
    p = profile(name, hw)
    argmax = row(name, hw, "aten::argmax", "32x151936f32")
    assert per_call(argmax) == 32 * 151936 - 32
    unpriced = sum(u.seconds for u in p.unpriced)
    priced = sum(r.measured for r in p.rows)
    assert unpriced > 10 * priced  # named with a reason each, never priced as zero
    assert all(u.reason for u in p.unpriced)


def test_old_and_small_traces_price_their_products() -> None:
    # HolisticTraceAnalysis, MI250 (ROCm 6.2): a 5x128 by 128x128 linear layer, 2·M·N·K
    mi250 = row("hta_mi250_minitoy_train.json.gz", "mi250x", "aten::addmm",
                "128f32,5x128f32,128x128f32")
    assert per_call(mi250) == 2 * 5 * 128 * 128
    # a V100 training step from before torch 2.1 (no scalar values recorded)
    v100 = row("v100_hta_trace_diff_test.json.gz", "v100", "aten::addmm",
               "96f32,1024x512f32,512x96f32")
    assert per_call(v100) == 2 * 1024 * 512 * 96


def test_a_2021_trace_of_torch_1_8_is_priced_for_the_lowest_bound() -> None:
    # PyTorch Kineto's ResNet-50 sample (batch 32, fp32): no dtypes recorded (taken from the
    # kernels' names), no strides, torch 1.8's convolution backward names. The stem's
    # backward asks the weight's gradient only (its child ops say so): 2 · 32 · (64·3·7·7) ·
    # 112·112 = 7.55 GFLOP
    name, hw = "kineto_resnet50_v100_2021.json.gz", "v100"
    stem = row(name, hw, "aten::cudnn_convolution_backward",
               "32x3x224x224f32,32x64x112x112f32,64x3x7x7f32")
    assert per_call(stem) == 2 * 32 * (64 * 3 * 7 * 7) * 112 * 112
    fc = row(name, hw, "aten::addmm", "1000f32,32x2048f32,2048x1000f32")
    assert per_call(fc) == 2 * 32 * 2048 * 1000
    notes = " ".join(profile(name, hw).notes)
    assert "dtypes are not recorded" in notes and "strides and padding" in notes
    # no convolution or product is faster than its bound (its kernels of 0 us, a timer of
    # whole microseconds, are the guard's to allow)
    assert not [r for r in profile(name, hw).rows
                if r.faster and ("conv" in r.op or "mm" in r.op)]
