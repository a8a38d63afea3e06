"""Kernel formulas (pytest_roofline.ops): each expected number is derived in the test.

Chip figures used (built-in specs): H100 SXM dense bf16 989.4 TFLOP/s (whitepaper), vector
bf16 133.8 TFLOP/s (whitepaper, non-tensor), HBM 3.35 TB/s (datasheet), NVLink 4: 18 links
of 25 GB/s each way. Expected values are computed from ``hw.peak`` / ``hw.bandwidth`` so a
corrected spec figure does not break the formula tests.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_roofline import WorkloadError, analyze, crossover, get_hardware, knob_hint, ops
from pytest_roofline.ops.attention import scored_pairs


@pytest.fixture(scope="module")
def h100():
    return get_hardware("h100")


@dataclass
class FakeArray:
    """An array-like of no framework: only .shape and .dtype, as torch/jax/cupy expose."""

    shape: tuple[int, ...]
    dtype: str


# -- matmul ------------------------------------------------------------------------------------


def test_matmul_flops_bytes_and_name():
    # FLOPs = 2mkn; bf16 bytes = 2(mk + kn + mn).
    w = ops.matmul(4096, 4096, 4096)
    assert w.flops == 2 * 4096**3
    assert w.bytes == 2 * 3 * 4096**2
    assert w.name == "matmul(4096x4096x4096, bf16)"
    assert w.kernels[0].unit == "matrix" and w.kernels[0].dtype == "bf16"


def test_int8_weights_move_half_the_weight_bytes():
    # bf16[m,k] @ int8[k,n] -> bf16[m,n]: 2mk + kn + 2mn bytes, multiplied in bf16.
    m, k, n = 16, 8192, 8192
    w = ops.matmul(m, k, n, b_dtype="int8")
    assert w.bytes == 2 * m * k + k * n + 2 * m * n
    assert w.flops == 2 * m * k * n
    assert w.kernels[0].dtype == "bf16"
    bf16 = ops.matmul(m, k, n)
    # weights dominate: the intensity roughly doubles (within 1% since m << k, n)
    assert w.intensity / bf16.intensity == pytest.approx(2.0, rel=0.01)


def test_int8_matmul_runs_in_int8_and_reads_one_byte_per_element():
    w = ops.matmul(64, 1024, 2048, dtype="int8")
    assert w.bytes == 64 * 1024 + 1024 * 2048 + 64 * 2048
    assert w.kernels[0].dtype == "int8"


def test_out_dtype_prices_the_output():
    w = ops.matmul(128, 256, 512, dtype="fp8", out_dtype="bf16")
    assert w.bytes == 128 * 256 + 256 * 512 + 2 * 128 * 512
    assert w.kernels[0].dtype == "fp8"


def test_matmul_knob_gives_the_crossover_from_the_ridge(h100):
    # intensity of bf16 [m,k]@[k,n] = 2mkn / 2(mk + kn + mn) = mkn / (mk + kn + mn); it
    # reaches the ridge r = peak / bandwidth when m >= r·kn / (kn - r(k + n)).
    k = n = 8192
    r = h100.peak("bf16") / h100.bandwidth  # 989.4e12 / 3.35e12 = 295.3
    threshold = r * k * n / (k * n - r * (k + n))
    expected = math.ceil(threshold)
    w = ops.matmul(64, k, n)
    assert w.knob is not None and w.knob.name == "m"
    assert knob_hint(w, h100, "compute") == f"compute-bound from m >= {expected}"
    assert expected == 319  # the DESIGN example's figure for this chip
    assert crossover(lambda m: ops.matmul(m, k, n), h100) == expected


def test_matmul_sweep_over_m_is_vectorised():
    m = np.array([1, 64, 512])
    w = ops.matmul(m, 8192, 8192)
    expected = m * 8192 * 8192 / (m * 8192 + 8192 * 8192 + m * 8192)
    np.testing.assert_allclose(w.intensity, expected)
    assert w.knob is None


def test_matmul_reads_shapes_and_precisions_of_array_likes():
    # leading dimensions fold into m: (4, 16, 4096) @ (4096, 1024) is m = 64
    a = FakeArray((4, 16, 4096), "torch.bfloat16")
    b = FakeArray((4096, 1024), "torch.int8")
    w = ops.matmul(a, b)
    assert w.flops == 2 * 64 * 4096 * 1024
    assert w.bytes == 2 * 64 * 4096 + 4096 * 1024 + 2 * 64 * 1024
    np_w = ops.matmul(np.zeros((64, 4096), np.float16), np.zeros((4096, 1024), np.float16))
    assert np_w.bytes == 2 * (64 * 4096 + 4096 * 1024 + 64 * 1024)
    assert np_w.kernels[0].dtype == "fp16"


def test_matmul_arrays_with_their_own_batch_are_batched():
    a = FakeArray((8, 1, 512), "float32")
    b = FakeArray((8, 512, 256), "float32")
    w = ops.matmul(a, b)
    assert w.flops == 2 * 8 * 512 * 256
    assert w.bytes == 4 * 8 * (512 + 512 * 256 + 256)


# -- batched matmul ------------------------------------------------------------------------


def test_per_batch_weights_keep_intensity_near_two_whatever_the_batch():
    # int8[B,D] . int8[B,D,F] -> int8[B,F]: 2BDF / (BD + BDF + BF) = 2DF / (D + DF + F)
    d = f = 4096
    expected = 2 * d * f / (d + d * f + f)
    for batch in (1, 64, 4096):
        w = ops.batched_matmul(batch, 1, d, f, dtype="int8")
        assert w.intensity == pytest.approx(expected, rel=1e-12)
    assert expected == pytest.approx(2.0, rel=1e-3)


def test_shared_weights_batched_matmul_is_one_big_matmul():
    shared = ops.batched_matmul(32, 4, 1024, 1024, shared_weights=True)
    assert shared.flops == ops.matmul(128, 1024, 1024).flops
    assert shared.bytes == ops.matmul(128, 1024, 1024).bytes


def test_batched_matmul_and_sharded_matmul_accept_arrays():
    a = FakeArray((8, 1, 512), "int8")
    b = FakeArray((8, 512, 256), "int8")
    assert ops.batched_matmul(a, b).bytes == ops.batched_matmul(8, 1, 512, 256,
                                                                dtype="int8").bytes
    x = FakeArray((4, 256, 8192), "bfloat16")
    w = FakeArray((8192, 4096), "bfloat16")
    ref = ops.sharded_matmul(1024, 8192, 4096, shards=2)
    got = ops.sharded_matmul(x, w, shards=2)
    assert (got.flops, got.bytes, got.link_bytes) == (ref.flops, ref.bytes, ref.link_bytes)


# -- einsum --------------------------------------------------------------------------------


def test_einsum_matches_matmul():
    w = ops.einsum("bd,df->bf", (8, 4096), (4096, 2048))
    ref = ops.matmul(8, 4096, 2048)
    assert (w.flops, w.bytes) == (ref.flops, ref.bytes)
    assert w.kernels[0].unit == "matrix"


def test_einsum_chain_contracts_left_to_right():
    # ij,jk,kl->il: (ij,jk->ik) costs 2·i·j·k, then (ik,kl->il) 2·i·k·l
    i, j, k, l_ = 64, 128, 256, 32
    w = ops.einsum("ij,jk,kl->il", (i, j), (j, k), (k, l_))
    assert len(w.kernels) == 2
    assert w.flops == 2 * i * j * k + 2 * i * k * l_
    item = 2
    assert w.bytes == item * ((i * j + j * k + i * k) + (i * k + k * l_ + i * l_))


def test_einsum_ellipsis_implicit_output_and_reductions():
    x = np.zeros((2, 3, 64), np.float32)
    w = ops.einsum("...d,de->...e", x, np.zeros((64, 16), np.float32))
    assert w.flops == 2 * 6 * 64 * 16
    implicit = ops.einsum("ij,jk", (4, 5), (5, 6))  # output "ik"
    assert implicit.flops == 2 * 4 * 5 * 6
    total = ops.einsum("ij->", (100, 10))
    assert total.kernels[0].unit == "vector" and total.flops == 1000
    outer = ops.einsum("i,j->ij", (10,), (20,))
    assert outer.kernels[0].unit == "vector" and outer.flops == 200


# -- vector kernels ------------------------------------------------------------------------


def test_dot_intensity_tends_to_one_half():
    # N multiplies + N - 1 adds; 2N elements read, 1 written (bf16, 2 B each)
    n = 1_000_000
    w = ops.dot(n)
    assert w.flops == 2 * n - 1
    assert w.bytes == 2 * (2 * n + 1)
    assert w.intensity == pytest.approx(0.5, rel=1e-5)
    assert w.kernels[0].unit == "vector"


def test_softmax_and_norms_run_on_the_vector_units(h100):
    # 5 FLOPs per element priced at the vector bf16 peak (133.8 TFLOP/s), not the tensor peak
    rows, cols = 4096, 4096
    w = ops.softmax(rows, cols)
    assert w.flops == 5 * rows * cols
    assert w.bytes == 2 * 2 * rows * cols
    result = analyze(w, h100)
    assert result.kernels[0].peak_label == "vector:bf16"
    assert result.t_compute == pytest.approx(w.flops / h100.peak("bf16", "vector"))
    assert h100.peak("bf16", "vector") < h100.peak("bf16") / 5


def test_layernorm_and_rmsnorm_counts():
    rows, hidden = 2048, 4096
    ln = ops.layernorm(rows, hidden)
    assert ln.flops == 7 * rows * hidden
    assert ln.bytes == 2 * (2 * rows * hidden + 2 * hidden)  # x, y, scale and shift
    rms = ops.rmsnorm(rows, hidden)
    assert rms.flops == 4 * rows * hidden
    assert rms.bytes == 2 * (2 * rows * hidden + hidden)
    fused = ops.rmsnorm(rows, hidden, residual=True)
    assert fused.flops == 5 * rows * hidden
    assert fused.bytes == 2 * (4 * rows * hidden + hidden)
    assert all(k.unit == "vector" for w in (ln, rms, fused) for k in w.kernels)


def test_vector_ops_accept_array_likes():
    x = FakeArray((8, 128, 1024), "torch.float32")
    assert ops.softmax(x).flops == 5 * 8 * 128 * 1024
    assert ops.rmsnorm(x).bytes == 4 * (2 * 8 * 128 * 1024 + 1024)
    assert ops.elementwise(x, inputs=2, flops_per_element=1).bytes == 4 * 3 * 8 * 128 * 1024
    red = ops.reduction(x, axis=-1)
    assert red.flops == 8 * 128 * 1024 - 8 * 128


def test_elementwise_and_reduction():
    w = ops.elementwise(1000, inputs=2, outputs=1, flops_per_element=3, dtype="fp32")
    assert (w.flops, w.bytes) == (3000, 12000)
    r = ops.reduction(1000, outputs=10, dtype="fp32")
    assert (r.flops, r.bytes) == (990, 4 * 1010)


def test_embedding_gathers_rows_only():
    # tokens rows read and written; the table is never read in full
    w = ops.embedding(8, 4096, vocab=128256)
    assert w.bytes == 2 * 2 * 8 * 4096
    assert w.flops == 0
    assert w.footprint == w.bytes + 2 * 128256 * 4096


# -- attention -----------------------------------------------------------------------------


def test_fused_gqa_attention_loads_kv_with_the_kv_head_count():
    # Llama-3-8B decode, one layer: b=4, q=1, kv=2048, 32 query heads, 8 KV heads, d=128
    b, q, kv, h, kvh, d = 4, 1, 2048, 32, 8, 128
    w = ops.attention(b, q, kv, h, kvh, d, causal=True)
    expected_bytes = 2 * (2 * b * q * h * d + 2 * b * kv * kvh * d)  # Q, O; K, V with kvh
    assert w.bytes == expected_bytes
    mha = ops.attention(b, q, kv, h, h, d, causal=True)
    assert mha.bytes - w.bytes == 2 * 2 * b * kv * (h - kvh) * d
    matrix = [k for k in w.kernels if k.unit == "matrix"]
    assert matrix[0].flops == 4 * b * h * q * kv * d


def test_multi_query_attention_reads_one_kv_head():
    w = ops.attention(1, 1, 1000, 16, 1, 64)
    assert w.bytes == 2 * (2 * 16 * 64 + 2 * 1000 * 64)


def test_causal_prefill_halves_the_useful_score_flops():
    # q = kv = s: s(s + 1)/2 scored pairs per head instead of s²
    s, h, d = 4096, 32, 128
    causal = ops.attention(1, s, s, h, 8, d, causal=True)
    full = ops.attention(1, s, s, h, 8, d, causal=False)
    assert causal.kernels[0].flops == 4 * h * d * s * (s + 1) / 2
    assert causal.kernels[0].flops / full.kernels[0].flops == pytest.approx(0.5, rel=1e-3)


def test_fused_attention_splits_matrix_and_vector_work(h100):
    w = ops.attention(1, 2048, 2048, 32, 8, 128, causal=True)
    units = {k.name.rsplit(".", 1)[-1] if k.unit == "vector" else "matmul": k.unit
             for k in w.kernels}
    assert units == {"matmul": "matrix", "softmax": "vector"}
    softmax = next(k for k in w.kernels if k.unit == "vector")
    assert softmax.bytes == 0  # scores never leave the chip
    result = analyze(w, h100)
    assert result.kernels[1].peak_label == "vector:bf16"


def test_unfused_attention_writes_and_reads_the_scores():
    # scores b·h·q·kv: written by QK, read+written by softmax, read by PV = 4 passes
    b, q, kv, h, kvh, d = 2, 512, 512, 16, 16, 64
    fused = ops.attention(b, q, kv, h, kvh, d)
    unfused = ops.attention(b, q, kv, h, kvh, d, fused=False)
    assert len(unfused.kernels) == 3
    assert unfused.bytes - fused.bytes == 4 * 2 * b * h * q * kv


def test_attention_from_arrays_needs_a_layout():
    q = FakeArray((2, 128, 32, 64), "bfloat16")  # bshd
    k = FakeArray((2, 128, 8, 64), "bfloat16")
    w = ops.attention(q, k, k, layout="bshd")
    assert w.bytes == ops.attention(2, 128, 128, 32, 8, 64).bytes
    qt = FakeArray((2, 32, 128, 64), "bfloat16")  # bhsd
    kt = FakeArray((2, 8, 128, 64), "bfloat16")
    assert ops.attention(qt, kt, kt, layout="bhsd").bytes == w.bytes
    with pytest.raises(WorkloadError, match="layout"):
        ops.attention(q, k, k)


# -- convolution ---------------------------------------------------------------------------


def test_conv2d_resnet_stem():
    # 224x224x3 -> 112x112x64 with a 7x7/2 kernel, padding 3:
    # MACs = 112·112·64·3·49 = 118,013,952 (torchvision ResNet-50 stem)
    w = ops.conv2d(1, 3, 64, 224, 7, stride=2, padding=3)
    assert w.flops == 2 * 112 * 112 * 64 * 3 * 49
    assert w.bytes == 2 * (3 * 224 * 224 + 64 * 3 * 49 + 64 * 112 * 112)
    assert w.knob is not None and w.knob.name == "batch"


def test_conv2d_groups_same_padding_and_depthwise():
    grouped = ops.conv2d(1, 64, 64, 56, 3, padding="same", groups=4)
    assert grouped.flops == 2 * 56 * 56 * 64 * 16 * 9
    depthwise = ops.conv2d(1, 64, 64, 56, 3, padding=1, groups=64)
    assert depthwise.kernels[0].unit == "vector"


def test_conv2d_from_arrays_nchw_and_nhwc():
    ref = ops.conv2d(8, 64, 128, 28, 3, padding=1)
    x = np.zeros((8, 64, 28, 28), np.float16)
    w = np.zeros((128, 64, 3, 3), np.float16)
    assert ops.conv2d(x, w, padding=1).flops == ref.flops
    xh = FakeArray((8, 28, 28, 64), "bfloat16")
    wh = FakeArray((3, 3, 64, 128), "bfloat16")
    assert ops.conv2d(xh, wh, padding=1, layout="nhwc").bytes == ref.bytes


def test_pool2d_max_and_global_average():
    # ResNet stem max pool 3x3/2, padding 1: 112 -> 56; 8 compares per output element
    w = ops.pool2d(1, 64, 112, 3, stride=2, padding=1)
    assert w.flops == 64 * 56 * 56 * 8
    assert w.bytes == 2 * 64 * (112 * 112 + 56 * 56)
    avg = ops.pool2d(1, 2048, 7, 7, kind="avg")  # global: 48 adds + 1 divide per output
    assert avg.flops == 2048 * 49
    assert ops.pool2d(np.zeros((1, 64, 112, 112), np.float16), 3, stride=2,
                      padding=1).bytes == w.bytes
    assert all(k.unit == "vector" for k in (*w.kernels, *avg.kernels))


# -- collectives ---------------------------------------------------------------------------


@pytest.mark.parametrize(("fn", "sent"), [
    (ops.all_reduce, lambda n: 2 * (n - 1) / n),
    (ops.all_gather, lambda n: (n - 1) / n),
    (ops.reduce_scatter, lambda n: (n - 1) / n),
    (ops.all_to_all, lambda n: (n - 1) / n),
])
@pytest.mark.parametrize("devices", [2, 4, 8])
def test_ring_collective_bytes_per_device(fn, sent, devices):
    elements = 1 << 20
    w = fn(elements, devices)
    assert w.link_bytes == pytest.approx(sent(devices) * 2 * elements)


def test_all_reduce_network_time_on_nvlink(h100):
    # 8-way all-reduce of 64 MiB bf16 over all 18 NVLink 4 links (25 GB/s each way). A ring
    # sends 2·7/8·D and waits 14 steps of NCCL's published 0.6 us NVLink latency; H100's
    # NVSwitch reduces in the switch (its spec lists nvls), so the default (auto) sends
    # (8+1)/8·D, the least of the algorithms the link runs, and waits one step (the fewest).
    elements = 32 << 20
    link = h100.link("nvlink")
    assert link.latency == pytest.approx(0.6e-6)
    ring = analyze(ops.all_reduce(elements, 8, algorithm="ring"), h100)
    assert ring.t_network == pytest.approx(
        2 * 7 / 8 * 2 * elements / (link.bandwidth * 18) + 14 * link.latency)
    w = ops.all_reduce(elements, 8)
    result = analyze(w, h100)
    wire = 9 / 8 * 2 * elements / (link.bandwidth * 18)
    assert result.t_network == pytest.approx(wire + link.latency)
    assert result.regime == "network"
    one = analyze(ops.all_reduce(elements, 8, link="nvlink", link_count=1), h100)
    assert one.t_network == pytest.approx(18 * wire + link.latency)
    assert w.kernels[0].flops == 7 / 8 * elements  # reduction adds on the vector units
    assert w.kernels[0].unit == "vector"


def test_point_to_point_sends_the_whole_tensor():
    w = ops.point_to_point(FakeArray((1024, 1024), "bfloat16"))
    assert w.link_bytes == 2 * 1024 * 1024
    assert ops.send is ops.point_to_point


def test_sharded_matmul_over_k_needs_an_all_reduce():
    m, k, n = 1024, 8192, 4096
    w = ops.sharded_matmul(m, k, n, shards=4)
    local, comm = w.kernels
    assert local.flops == 2 * m * (k // 4) * n
    assert comm.link_bytes == pytest.approx(2 * 3 / 4 * 2 * m * n)
    overlapped = ops.sharded_matmul(m, k, n, shards=4, overlap=True)
    assert len(overlapped.kernels) == 1 and overlapped.link_bytes == w.link_bytes
    by_n = ops.sharded_matmul(m, k, n, shards=4, split="n")
    assert by_n.kernels[1].link_bytes == pytest.approx(3 / 4 * 2 * m * n)
    assert len(ops.sharded_matmul(m, k, n, shards=4, split="n", gather=False).kernels) == 1


# -- bad input -----------------------------------------------------------------------------


@pytest.mark.parametrize(("call", "message"), [
    (lambda: ops.matmul(0, 4, 4), r"matmul: m must be a whole number >= 1, got 0"),
    (lambda: ops.matmul(4, -2, 4), r"matmul: k must be a whole number >= 1, got -2"),
    (lambda: ops.matmul(4, 4, 2.5), r"matmul: n must be a whole number >= 1, got 2.5"),
    (lambda: ops.matmul(4, 4, True), r"matmul: n must be a whole number >= 1, got True"),
    (lambda: ops.matmul(4, 4, "8"), r"matmul: n .* got '8'"),
    (lambda: ops.matmul(np.array([1, 0]), 4, 4), r"matmul: m: every element"),
    (lambda: ops.matmul(4, 4, 4, dtype="bf17"), r"dtype: unknown precision 'bf17'"),
    (lambda: ops.matmul(4, 4), r"matmul needs the sizes m, k, n"),
    (lambda: ops.attention(1, 1, 64, 32, 6, 128), r"kv_heads=6 must divide heads=32"),
    (lambda: ops.attention(1, 8, 4, 4, 4, 8, causal=True), r"q_len <= kv_len"),
    (lambda: ops.attention(1, 8, 8, 4, 4, 8, causal="yes"), r"causal must be True or False"),
    (lambda: ops.conv2d(1, 6, 8, 32, 3, groups=4), r"groups=4 must divide in_channels=6"),
    (lambda: ops.conv2d(1, 3, 8, 2, 5), r"kernel 5 .* does not fit"),
    (lambda: ops.all_reduce(1024, 0), r"all_reduce: devices must be a whole number >= 1"),
    (lambda: ops.sharded_matmul(8, 100, 8, shards=3), r"shards=3 must divide k=100"),
    (lambda: ops.sharded_matmul(8, 96, 8, shards=3, split="m"), r"split must be 'k'"),
    (lambda: ops.einsum("ij,jk->ik", (2, 3), (4, 5)), r"index 'j' is 3 .* and 4"),
    (lambda: ops.einsum("ij,jk->iz", (2, 3), (3, 5)), r"output index 'z'"),
    (lambda: ops.einsum("ij,jk->ik", (2, 3)), r"names 2 operand"),
    (lambda: ops.reduction(10, outputs=3), r"outputs=3 does not divide n=10"),
    (lambda: ops.softmax(FakeArray((4, 4), "float32"), axis=2), r"axis 2 is out of range"),
    (lambda: ops.elementwise(10, inputs=0, outputs=0), r"inputs \+ outputs must be >= 1"),
])
def test_bad_input_names_the_argument_and_the_value(call, message):
    with pytest.raises(WorkloadError, match=message):
        call()


def test_sliding_window_attention_counts_only_the_window() -> None:
    # Decode with a 4096-key window over a 32768-token context (Mistral 7B v0.1): one query
    # scores W keys and reads the last W positions of K and V (32 heads, 8 KV heads, d=128,
    # bf16): FLOPs 4*32*4096*128, bytes Q+O 2*32*128*2 plus K,V 2*4096*8*128*2.
    w = ops.attention(1, 1, 32768, 32, 8, 128, causal=True, window=4096)
    assert w.flops == pytest.approx(4 * 32 * 4096 * 128 + 5 * 32 * 4096)  # + softmax
    assert w.bytes == pytest.approx(2 * 32 * 128 * 2 + 2 * 4096 * 8 * 128 * 2)
    # 8 queries at the end of a 10-key context, window 4: the first query (position 3 of 10)
    # sees 3 keys, the other 7 see 4 each: 31 pairs; K, V are read for min(10, 8 - 1 + 4).
    from pytest_roofline.ops.attention import keys_read, scored_pairs

    assert scored_pairs(8, 10, True, 4) == 3 + 7 * 4
    assert keys_read(8, 10, 4) == 10
    # Full prefill of 6 tokens with a window of 3: counts 1, 2, 3, 3, 3, 3 = 15 pairs.
    assert scored_pairs(6, 6, True, 3) == 15
    # A window wider than the context changes nothing.
    assert scored_pairs(6, 6, True, 100) == scored_pairs(6, 6, True)
    with pytest.raises(WorkloadError, match="window=16 needs causal=True"):
        ops.attention(1, 1, 64, 4, 4, 8, window=16)


@settings(max_examples=100, deadline=None)
@given(b=st.integers(1, 64), q=st.integers(1, 256), extra=st.integers(0, 4096),
       kv_heads=st.sampled_from([1, 2, 8]), group=st.integers(1, 8),
       d=st.integers(1, 512), dv=st.integers(1, 512), causal=st.booleans(),
       fused=st.booleans())
def test_attention_value_heads_priced_with_their_own_width(b, q, extra, kv_heads, group, d, dv,
                                                            causal, fused):
    # Property: changing only v_head_dim changes the P.V FLOPs by 2 x scores x (dv - d) and
    # the bytes by (O written + V read) x (dv - d); v_head_dim=head_dim is the default.
    kv, h = q + extra, kv_heads * group
    same = ops.attention(b, q, kv, h, kv_heads, d, causal=causal, fused=fused)
    assert ops.attention(b, q, kv, h, kv_heads, d, v_head_dim=d, causal=causal,
                         fused=fused).flops == same.flops
    other = ops.attention(b, q, kv, h, kv_heads, d, v_head_dim=dv, causal=causal, fused=fused)
    pairs = b * h * (scored_pairs(q, kv, causal) if fused else q * kv)
    assert other.flops - same.flops == pytest.approx(2 * pairs * (dv - d), abs=1e-6 * same.flops)
    moved = (b * q * h + b * kv * kv_heads) * (dv - d) * 2  # bf16
    assert other.bytes - same.bytes == pytest.approx(moved, abs=1e-6 * same.bytes)
