"""Kernel-level bounds against the published kernels that once beat them: fused attention's
units overlap, embeddings read only the rows that exist, and an all-reduce on a switch that
reduces in the network moves fewer bytes than a ring.

Each anchor states its source, the convention that turns the published rate into a time, and
the window the bound must sit in (below 100%: a lower bound; above it: a useful one)."""

from __future__ import annotations

import pytest

from pytest_roofline import analyze, get_hardware, models, ops

# -- overlap inside a fused kernel ---------------------------------------------------------

#: FlashAttention-4 (Zadouri, Hoehnerbach, Shah, Liu, Thakkar, Dao, 2026,
#: https://arxiv.org/abs/2603.05451, abstract): "up to 1613 TFLOPs/s (71% utilization)" on
#: B200 in BF16, forward. The convention: FLOPs = 4·batch·heads·seq²·head_dim (non-causal),
#: time = FLOPs / 1613 TFLOP/s; "up to" is the best any head dim reached, so it is a rate
#: the head-dim-64 kernel did not beat.
FA4_RATE = 1613e12


@pytest.mark.parametrize("head_dim", [64, 128, 192])
def test_fa4_on_b200_does_not_beat_the_fused_attention_bound(head_dim: int) -> None:
    # The products take 4·P·d / 2.25 PFLOP/s; the softmax 5·P / 80 TFLOP/s (B200's spec lists
    # the fp32 vector peak only): at d = 64 the softmax is 55% of the products' time, and the
    # sum would put FA4 at 111% of its bound. The units overlap (FA4 runs the softmax beside
    # asynchronous MMAs), so the bound is the products' time: 1613 / 2250 = 71.7% at every
    # head dim. Window 60-90%.
    b, h, s = 16, 16, 8192
    bound = analyze(ops.attention(b, s, s, h, h, head_dim), "b200")
    measured = 4.0 * b * h * s * s * head_dim / FA4_RATE
    assert bound.time / measured == pytest.approx(FA4_RATE / 2250e12, rel=1e-9)
    assert 0.6 < bound.time / measured < 0.9
    assert bound.kernels[0].peak_label == "matrix:bf16 + vector:fp32"


def test_the_softmax_is_priced_at_the_vector_peak_of_its_precision() -> None:
    # A bf16 softmax runs at the chip's bf16 vector peak where the spec lists one (H100:
    # 133.8 TFLOP/s), and at the spec's fallback where it does not (B200: fp32, 80): the label
    # says which. Given a bf16 vector peak, B200's softmax time falls by that ratio.
    h100 = analyze(ops.softmax(4096, 4096), "h100")
    assert h100.kernels[0].peak_label == "vector:bf16"
    b200 = get_hardware("b200")
    plain = analyze(ops.softmax(4096, 4096), b200).kernels[0]
    packed = analyze(ops.softmax(4096, 4096), b200.replace(
        vector={**b200.vector, "bf16": 160e12})).kernels[0]
    assert (plain.peak_label, packed.peak_label) == ("vector:fp32", "vector:bf16")
    assert plain.t_compute / packed.t_compute == pytest.approx(2.0, rel=1e-12)


def test_fused_attention_is_timed_as_the_larger_of_its_units() -> None:
    # one kernel: max(matrix, vector, memory), on every path that builds fused attention: the
    # op, a model's prefill, and the training step's backward (its softmax sits inside the
    # backward's products)
    w = ops.attention(4, 2048, 2048, 32, 8, 128, causal=True)
    r = analyze(w, "h100")
    products, softmax = r.kernels
    assert softmax.time == 0.0 and products.fused == (softmax.name,)
    assert products.time == pytest.approx(max(
        w.kernels[0].flops / 989.4e12, w.kernels[1].flops / 133.8e12,
        w.kernels[0].bytes / 3.35e12), rel=1e-9)
    step = models.load("llama-3-8b").train_step(8, 2048)
    hosts = {k.name: k.epilogue_of for k in step.kernels if k.epilogue_of}
    assert hosts["attention.softmax"] == "attention"
    assert hosts["attention.softmax.bwd"] == "attention.bwd"
