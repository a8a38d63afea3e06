"""Kernel-level bounds against the published kernels that once beat them: fused attention's
units overlap, embeddings read only the rows that exist, and an all-reduce on a switch that
reduces in the network moves fewer bytes than a ring.

Each anchor states its source, the convention that turns the published rate into a time, and
the window the bound must sit in (below 100%: a lower bound; above it: a useful one)."""

from __future__ import annotations

import pytest

from pytest_roofline import RooflineError, analyze, get_hardware, models, ops

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


# -- distinct rows -------------------------------------------------------------------------

#: Liger-Kernel's embedding forward sweep on an A100-SXM4-80GB (linkedin/Liger-Kernel,
#: benchmark/data/all_benchmark_data.csv, rows "embedding,liger,forward,speed" with B=8,
#: T=2048, D=4096, fp32, Liger 0.2.1, 2024-09-03): vocabulary -> median ms. 16,384 ids drawn
#: with torch.randint from V rows (benchmark/benchmark_embedding.py).
LIGER_A100_MS = {1024: 0.18961599469184875, 2048: 0.21296000480651855,
                 4096: 0.2367040067911148, 8192: 0.26335999369621277,
                 16384: 0.2850880026817322, 32768: 0.30460798740386963,
                 65536: 0.31569600105285645, 131072: 0.31988799571990967}


@pytest.mark.parametrize("vocab", sorted(LIGER_A100_MS))
def test_liger_embedding_sweep_does_not_beat_the_distinct_row_bound(vocab: int) -> None:
    # One row a token read would be 2·16384·4096·4 B = 537 MB: 263 us on the A100's
    # 2.039 TB/s, 139% of the measured 190 us at V = 1024 (it "moved" 2.83 TB/s). Each
    # distinct row is read once: (min(16384, V) + 16384)·16 KiB, 285 MB at V = 1024, 140 us,
    # 73.8%. Across the sweep 69-93% (the most where V = tokens, where random ids still repeat
    # a third of the rows that min(tokens, V) charges). Window 60-95%.
    bound = analyze(ops.embedding(16384, 4096, vocab=vocab, dtype="fp32"), "a100-80gb")
    assert bound.bytes == pytest.approx((min(16384, vocab) + 16384) * 4096 * 4, rel=1e-12)
    efficiency = bound.time / (LIGER_A100_MS[vocab] * 1e-3)
    assert 0.6 < efficiency < 0.95
    if vocab == 1024:
        assert efficiency == pytest.approx(285278208 / 2.039e12 / 189.616e-6, rel=1e-3)


def test_embedding_of_arrays_counts_the_distinct_ids() -> None:
    # ids [1, 2, 2, 3, 3, 3] into a [10, 8] fp32 table: 3 distinct rows read, 6 written
    import numpy as np

    ids, table = np.array([1, 2, 2, 3, 3, 3]), np.zeros((10, 8), dtype=np.float32)
    assert ops.embedding(ids, table).bytes == (3 + 6) * 8 * 4
    assert ops.embedding(6, 8, dtype="fp32", distinct=2).bytes == (2 + 6) * 8 * 4
    with pytest.raises(RooflineError, match="distinct=7 ids, but there are 6 tokens"):
        ops.embedding(6, 8, distinct=7)


def test_a_model_reads_at_most_its_vocabulary_and_positions() -> None:
    # BERT-base (vocab 30,522, 512 learned positions, 2 token types) on 64 x 512 = 32,768
    # tokens: the rows read are min(32768, 30522) + 512 + 2, each of 768 bf16, and one row a
    # token written
    bert = models.load("bert-base")
    embedding = next(k for k in bert.forward(64, 512).kernels if k.name == "embedding")
    assert embedding.bytes == pytest.approx((30522 + 512 + 2 + 32768) * 768 * 2, rel=1e-12)


def test_traced_gathers_read_each_row_at_most_once() -> None:
    # torch's embedding and jax's gather of 16,384 ids from a [1024, 4096] fp32 table: the
    # table once (16 MiB), the ids, and the [16384, 4096] output
    torch = pytest.importorskip("torch")
    jnp = pytest.importorskip("jax.numpy")
    from pytest_roofline import trace

    table_bytes, out_bytes = 1024 * 4096 * 4, 16384 * 4096 * 4
    w = trace(torch.nn.functional.embedding, torch.zeros(16384, dtype=torch.long),
              torch.zeros(1024, 4096))
    assert w.bytes == table_bytes + out_bytes + 16384 * 8
    w = trace(lambda t, i: t[i], jnp.zeros((1024, 4096), jnp.float32),
              jnp.zeros((16384,), jnp.int32))
    gather = next(k for k in w.kernels if k.name.endswith("gather"))
    assert gather.bytes == table_bytes + out_bytes + 16384 * 4


# -- labels --------------------------------------------------------------------------------


@pytest.mark.parametrize(("workload", "chip", "label", "ridge"), [
    # fp32 vector work on an H100: 66.9 TFLOP/s / 3.35 TB/s = 19.97 FLOP/B (not bf16's 295.3)
    (ops.layernorm(4096, 8192, dtype="fp32"), "h100", "vector:fp32", 66.9e12 / 3.35e12),
    # a bf16 softmax: H100's bf16 vector peak, 133.8 / 3.35 = 39.9
    (ops.softmax(4096, 8192), "h100", "vector:bf16", 133.8e12 / 3.35e12),
    # B200 lists fp32 only: a bf16 softmax runs at it (80 / 8 = 10.0), and says so
    (ops.softmax(4096, 8192), "b200", "vector:fp32", 80e12 / 8e12),
    # matrix work keeps its matrix ridge, vector work beside it included
    (ops.attention(1, 1024, 1024, 8, 8, 128), "h100", "matrix:bf16", 989.4e12 / 3.35e12),
])
def test_a_result_names_the_precision_whose_ridge_it_is_compared_with(
        workload: object, chip: str, label: str, ridge: float) -> None:
    r = analyze(workload, chip)  # type: ignore[arg-type]
    assert (r.peak_label, r.dtype) == (label, label.split(":")[1])
    assert r.ridge == pytest.approx(ridge, rel=1e-9)
