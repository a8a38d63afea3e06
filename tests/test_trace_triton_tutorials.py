"""Triton 3.9's tutorials (triton-lang/triton, python/tutorials/, MIT licence) traced in the
interpreter, against hand counts derived from their source.

The kernels are written here after the tutorials' algorithms (the same loads, arithmetic,
dots and stores in the same order; options the tests do not use left out), at small shapes:
the interpreter runs every program in Python. Each count's derivation is beside it.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402
from flop_split import by_dtype as _by_dtype  # noqa: E402

import pytest_roofline as rl  # noqa: E402

if not triton.knobs.runtime.interpret:
    pytest.skip("interpreter mode only (TRITON_INTERPRET=1 before triton is imported)",
                allow_module_level=True)




# -- 04-low-memory-dropout.py: _seeded_dropout -------------------------------------------------


@triton.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    random = tl.rand(seed, offsets)
    x_keep = random > p
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


def test_seeded_dropout() -> None:
    """1,000 elements in 4 blocks of 256 (1,024 lanes). tl.rand turns each lane's random
    integer into a float with one multiply (all 1,024 lanes: the offsets are not masked), the
    keep test is one compare a lane (1,024), the rescale one divide a loaded lane (1,000):
    3,048 FLOPs. Bytes: x read and the output written, 2·1,000·4 = 8,000."""
    x = torch.randn(1000)
    out = torch.empty_like(x)

    def run() -> None:
        _seeded_dropout[(4,)](x, out, 1000, 0.5, 123, BLOCK_SIZE=256)

    work = rl.trace(run)
    assert _by_dtype(work) == {("vector", "fp32"): 3048}
    assert work.bytes == 8000
    kept = out != 0
    torch.testing.assert_close(out[kept], 2 * x[kept])


# -- 05-layer-norm.py: _layer_norm_fwd_fused ---------------------------------------------------


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


def test_layer_norm_forward() -> None:
    """3 rows of 20 in chunks of 8 (8, 8, 4 valid lanes). Per row: the mean, 19 adds (the
    first chunk's add into the zeroed accumulator a move, then 8 + 4, and 7 in the final
    sum) and a divide: 20; the variance, a subtract and a square a valid lane (20 + 20), 12
    accumulating adds, 7 in the sum, a divide: 60; rstd, an add, a sqrt, a divide: 3; the
    output, subtract, scale, weight, bias a lane: 80. 163 a row, 489 in all. Bytes: X read
    (3·20·4 = 240, re-read by the same program: once), W and B (2·80), Y written (240),
    Mean and Rstd (2·12): 664."""
    x = torch.randn(3, 20)
    w, b = torch.randn(20), torch.randn(20)
    y = torch.empty_like(x)
    mean, rstd = torch.empty(3), torch.empty(3)

    def run() -> None:
        _layer_norm_fwd_fused[(3,)](x, y, w, b, mean, rstd, 20, 20, 1e-5, BLOCK_SIZE=8)

    work = rl.trace(run)
    assert _by_dtype(work) == {("vector", "fp32"): 3 * 163}
    assert work.bytes == 664
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (20,), w, b, 1e-5))


# -- 03-matrix-multiplication.py with fp8 inputs -----------------------------------------------


# the tutorial's kernel as tests/data/triton_kernels.py keeps it (one copy)
sys.path.insert(0, str(Path(__file__).parent / "data"))
_matmul_kernel = importlib.import_module("triton_kernels").matmul_kernel


def test_fp8_matmul_stays_fp8() -> None:
    """fp8 (e4m3) A 40 x 64 by B 64 x 24 (B stored transposed, as the tutorial's fp8 path
    does), fp16 output, 16 x 16 x 32 tiles over wrapped rows: 2·40·24·64 = 122,880 FLOPs at
    fp8 (not fp16, the output's precision). Bytes: A 2,560 + B 1,536 + C 40·24·2 = 1,920:
    6,016."""
    a = torch.randn(40, 64).to(torch.float8_e4m3fn)
    b = torch.randn(24, 64).to(torch.float8_e4m3fn).T  # (64, 24), column-major
    c = torch.empty(40, 24, dtype=torch.float16)

    def run() -> None:
        grid = (triton.cdiv(40, 16) * triton.cdiv(24, 16),)
        _matmul_kernel[grid](a, b, c, 40, 24, 64, a.stride(0), a.stride(1), b.stride(0),
                             b.stride(1), c.stride(0), c.stride(1), BLOCK_SIZE_M=16,
                             BLOCK_SIZE_N=16, BLOCK_SIZE_K=32, GROUP_SIZE_M=8)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "fp8"): 122_880}
    assert work.bytes == 6016
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.1, rtol=0.02)


# -- 06-fused-attention.py: _attn_fwd with in-kernel tensor descriptors ------------------------


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype: tl.constexpr,
                    qk_scale, BLOCK_N: tl.constexpr, N_CTX: tl.constexpr):
    offsetk_y = offset_y
    offsetv_y = offset_y
    for _start_n in tl.range(0, N_CTX, BLOCK_N):
        k = desc_k.load([offsetk_y, 0]).T
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_ij = tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offsetv_y, 0])
        p = p.to(dtype)
        acc = tl.dot(p, v, acc)
        l_i = l_i * alpha + l_ij
        m_i = m_ij
        offsetk_y += BLOCK_N
        offsetv_y += BLOCK_N
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(sm_scale, M, Z, H, Q, K, V, Out, N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    dtype = tl.float16
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    off_z = off_hz // H
    off_h = off_hz % H
    y_dim = Z * H * N_CTX
    desc_q = tl.make_tensor_descriptor(Q, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    desc_v = tl.make_tensor_descriptor(V, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_k = tl.make_tensor_descriptor(K, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_N, HEAD_DIM])
    desc_o = tl.make_tensor_descriptor(Out, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])
    offset_y = off_z * (N_CTX * H) + off_h * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale
    qk_scale *= 1.44269504  # 1/log(2)
    q = desc_q.load([qo_offset_y, 0])
    acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, dtype,
                                    qk_scale, BLOCK_N, N_CTX)
    m_i += tl.math.log2(l_i)
    acc = acc / l_i[:, None]
    m_ptrs = M + off_hz * N_CTX + offs_m
    tl.store(m_ptrs, m_i)
    desc_o.store([qo_offset_y, 0], acc.to(dtype))


def test_fused_attention_forward_with_tensor_descriptors() -> None:
    """Z = 1, H = 2, N_CTX = 32, HEAD_DIM = 16, 16 x 16 blocks: 2 x 2 programs, 2 key blocks
    each. Matrix: QKᵀ and PV, 2·32·32·16 each a head: 4·32·32·16·2 = 131,072 FLOPs at fp16,
    though the launch's log-sum-exp buffer M is fp32. Vector, per key block (B = 16): the row
    max 16·15, its scale 16, the running max 16 (the first block's max with the constant
    -inf start a move), qk's scale, shift and exp2 3·256, the correction's subtract and exp2
    2·16, the row sum 16·15, acc's rescale 256, l_i's update 2·16: 1,600 (1,584 the first);
    the epilogue log2 and add 2·16 and acc's divide 256: 3,184 + 288 = 3,472 a program,
    13,888 in all (fp32). Folded as constants alone, no FLOP: m_i's and l_i's starts, and
    qk_scale's scalar multiply (the interpreter hands a float argument in as a constant).
    Bytes: Q, K, V, Out 2·32·16·2 = 2,048 each (K and V re-read by
    the programs of a head: once), M 2·32·4 = 256: 8,448."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 32, 16, generator=gen).to(torch.float16) for _ in range(3))
    o = torch.empty_like(q)
    m = torch.empty(1, 2, 32)

    def run() -> None:
        _attn_fwd[(2, 2)](0.25, m, 1, 2, q, k, v, o, N_CTX=32, HEAD_DIM=16, BLOCK_M=16,
                          BLOCK_N=16)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "fp16"): 131_072, ("vector", "fp32"): 13_888}
    assert work.kernels[0].dtype == "fp16" and work.kernels[0].unit == "matrix"
    assert work.bytes == 8448
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                           scale=0.25)
    torch.testing.assert_close(o.float(), ref, atol=0.01, rtol=0.01)


def test_attention_is_priced_as_fp16_matrix_work_on_h100() -> None:
    """The launch's kernels are priced each at its own peak: on h100 the fp16 products at
    989.4 TFLOP/s (not the fp32 66.9 of the widest tensor, the log-sum-exp buffer), the
    softmax's fp32 arithmetic at the fp32 vector peak, 66.9, in the same launch: the compute
    time is the larger of the two."""
    q, k, v = (torch.randn(1, 2, 32, 16).to(torch.float16) for _ in range(3))
    o, m = torch.empty_like(q), torch.empty(1, 2, 32)

    def run() -> None:
        _attn_fwd[(2, 2)](0.25, m, 1, 2, q, k, v, o, N_CTX=32, HEAD_DIM=16, BLOCK_M=16,
                          BLOCK_N=16)

    result = rl.analyze(rl.trace(run), "h100")
    assert result.t_compute == pytest.approx(max(131_072 / 989.4e12, 13_888 / 66.9e12),
                                             rel=1e-9)


# -- 05-layer-norm.py: the backward, with its lock ---------------------------------------------


@triton.jit
def _layer_norm_bwd_dx_fused(DX, DY, DW, DB, X, W, Mean, Rstd, Lock, stride, N,
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    tl.store(DX + cols, dx, mask=mask)
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    tl.debug_barrier()
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW, DB, FINAL_DW, FINAL_DB, M, N, BLOCK_SIZE_M: tl.constexpr,
                         BLOCK_SIZE_N: tl.constexpr):
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


def test_layer_norm_backward_dx_with_its_lock() -> None:
    """6 rows of 20 in a block of 32, partial dW/dB in 2 groups behind a lock. Per row, a
    valid lane each: x̂ = (x - mean)·rstd 2·20, w·dy 20, c1's product 20 + sum 19 + divide
    1, c2's sum 19 + divide 1, dx's four operations 4·20, dy·x̂ 20: 220; the rows after the
    first of their group add into the partial dW and dB (2·20; the first stores): 6·220 +
    4·40 = 1,480. Bytes: X, DY and DX 3·6·20·4 = 1,440; W 80; Mean, Rstd 2·24; the two
    locks and two counts read and written by the atomics (atomic_cas, atomic_xchg) and the
    load, 4 int32 each way: 32; partial DW and DB read and written 4·2·20·4 = 640: 2,240."""
    m, n, group = 6, 20, 2
    x, dy = torch.randn(m, n), torch.randn(m, n)
    w = torch.randn(n)
    mean, rstd = x.mean(1), 1 / (x.var(1, unbiased=False) + 1e-5).sqrt()
    dx = torch.empty_like(x)
    dw_part, db_part = torch.zeros(group, n), torch.zeros(group, n)
    locks = torch.zeros(2 * group, dtype=torch.int32)

    def run() -> None:
        _layer_norm_bwd_dx_fused[(m,)](dx, dy, dw_part, db_part, x, w, mean, rstd, locks, n,
                                       n, GROUP_SIZE_M=group, BLOCK_SIZE_N=32)

    work = rl.trace(run)
    assert _by_dtype(work) == {("vector", "fp32"): 1480}
    assert work.bytes == 2240
    xr = x.clone().requires_grad_()
    wr = w.clone().requires_grad_()
    torch.nn.functional.layer_norm(xr, (n,), wr, None, 1e-5).backward(dy)
    torch.testing.assert_close(dx, xr.grad, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(dw_part.sum(0), wr.grad, atol=1e-4, rtol=1e-4)


def test_layer_norm_backward_dw_db_sums_the_partials() -> None:
    """5 partial rows of 20 in 4 x 16 blocks, 2 programs. Each column of dW (and of dB)
    sums 5 values: 4 adds, the first block's add into the zeroed accumulator a move, the
    fifth row added, then the column's sum of the 4 lanes holding data: 2·20·4 = 160 (the
    masked fifth-row block keeps the accumulator's earlier lanes). Bytes: the partials read
    2·5·20·4 = 800, the sums written 2·20·4 = 160: 960."""
    dw_part, db_part = torch.randn(5, 20), torch.randn(5, 20)
    dw, db = torch.empty(20), torch.empty(20)

    def run() -> None:
        _layer_norm_bwd_dwdb[(2,)](dw_part, db_part, dw, db, 5, 20, BLOCK_SIZE_M=4,
                                   BLOCK_SIZE_N=16)

    work = rl.trace(run)
    assert _by_dtype(work) == {("vector", "fp32"): 160}
    assert work.bytes == 960
    torch.testing.assert_close(dw, dw_part.sum(0))
    torch.testing.assert_close(db, db_part.sum(0))


# -- 08-grouped-gemm.py ------------------------------------------------------------------------


@triton.jit
def _grouped_matmul_kernel(group_a_ptrs, group_b_ptrs, group_c_ptrs, group_gemm_sizes, g_lds,
                           group_size, NUM_SM: tl.constexpr, BLOCK_SIZE_M: tl.constexpr,
                           BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    tile_idx = tl.program_id(0)
    last_problem_end = 0
    for g in range(group_size):
        gm = tl.load(group_gemm_sizes + g * 3)
        gn = tl.load(group_gemm_sizes + g * 3 + 1)
        gk = tl.load(group_gemm_sizes + g * 3 + 2)
        num_m_tiles = tl.cdiv(gm, BLOCK_SIZE_M)
        num_n_tiles = tl.cdiv(gn, BLOCK_SIZE_N)
        num_tiles = num_m_tiles * num_n_tiles
        while (tile_idx >= last_problem_end and tile_idx < last_problem_end + num_tiles):
            k = gk
            lda = tl.load(g_lds + g * 3)
            ldb = tl.load(g_lds + g * 3 + 1)
            ldc = tl.load(g_lds + g * 3 + 2)
            a_ptr = tl.load(group_a_ptrs + g).to(tl.pointer_type(tl.float16))
            b_ptr = tl.load(group_b_ptrs + g).to(tl.pointer_type(tl.float16))
            c_ptr = tl.load(group_c_ptrs + g).to(tl.pointer_type(tl.float16))
            tile_idx_in_gemm = tile_idx - last_problem_end
            tile_m_idx = tile_idx_in_gemm // num_n_tiles
            tile_n_idx = tile_idx_in_gemm % num_n_tiles
            offs_am = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_bn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            offs_k = tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + offs_am[:, None] * lda + offs_k[None, :]
            b_ptrs = b_ptr + offs_k[:, None] * ldb + offs_bn[None, :]
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
            for _kk in range(0, tl.cdiv(k, BLOCK_SIZE_K)):
                a = tl.load(a_ptrs)
                b = tl.load(b_ptrs)
                accumulator += tl.dot(a, b)
                a_ptrs += BLOCK_SIZE_K
                b_ptrs += BLOCK_SIZE_K * ldb
            c = accumulator.to(tl.float16)
            offs_cm = tile_m_idx * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
            offs_cn = tile_n_idx * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
            c_ptrs = c_ptr + ldc * offs_cm[:, None] + offs_cn[None, :]
            tl.store(c_ptrs, c)
            tile_idx += NUM_SM
        last_problem_end = last_problem_end + num_tiles


def test_grouped_gemm_is_fp16_matrix_work_despite_its_pointer_arrays() -> None:
    """Two GEMMs, 32 x 32 x 32 and 64 x 32 x 16, in 16^3 tiles on 4 programs: 2·(32·32·32 +
    64·32·16) = 131,072 FLOPs at fp16 (the int64 pointer arrays among the arguments do not
    make it int64 work). ``accumulator += tl.dot`` adds into the zeroed start (a move) then
    once more for each further K step: the first GEMM's 4 tiles take 2 steps, 4·256 = 1,024
    fp32 adds; the second's 8 tiles one step, none. Bytes: A, B, C of the first 3·2,048, of
    the second 2,048 + 1,024 + 4,096; the three pointer arrays 3·2·8 = 48, the sizes and
    leading dimensions 2·6·4 = 48: 13,408."""
    shapes = [(32, 32, 32), (64, 32, 16)]
    a_s = [torch.randn(m, k, dtype=torch.float16) for m, n, k in shapes]
    b_s = [torch.randn(k, n, dtype=torch.float16) for m, n, k in shapes]
    c_s = [torch.empty(m, n, dtype=torch.float16) for m, n, k in shapes]
    ptrs = [torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64) for ts in (a_s, b_s,
                                                                                  c_s)]
    sizes = torch.tensor([d for m, n, k in shapes for d in (m, n, k)], dtype=torch.int32)
    lds = torch.tensor([d for a, b, c in zip(a_s, b_s, c_s, strict=True)
                        for d in (a.stride(0), b.stride(0), c.stride(0))], dtype=torch.int32)

    def run() -> None:
        _grouped_matmul_kernel[(4,)](*ptrs, sizes, lds, 2, NUM_SM=4, BLOCK_SIZE_M=16,
                                     BLOCK_SIZE_N=16, BLOCK_SIZE_K=16)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "fp16"): 131_072, ("vector", "fp32"): 1024}
    assert work.bytes == 13_408
    for a, b, c in zip(a_s, b_s, c_s, strict=True):
        torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.05, rtol=0.01)


# -- 09-persistent-matmul.py -------------------------------------------------------------------


@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _matmul_kernel_persistent(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk,
                              stride_bn, stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr,
                              BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                              GROUP_SIZE_M: tl.constexpr, NUM_SMS: tl.constexpr):
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - NUM_SMS
    offs_k_for_mask = tl.arange(0, BLOCK_SIZE_K)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        start_m = pid_m * BLOCK_SIZE_M
        start_n = pid_n * BLOCK_SIZE_N
        offs_am = start_m + tl.arange(0, BLOCK_SIZE_M)
        offs_bn = start_n + tl.arange(0, BLOCK_SIZE_N)
        offs_am = tl.where(offs_am < M, offs_am, 0)
        offs_bn = tl.where(offs_bn < N, offs_bn, 0)
        offs_am = tl.max_contiguous(tl.multiple_of(offs_am, BLOCK_SIZE_M), BLOCK_SIZE_M)
        offs_bn = tl.max_contiguous(tl.multiple_of(offs_bn, BLOCK_SIZE_N), BLOCK_SIZE_N)
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K + tl.arange(0, BLOCK_SIZE_K)
            a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
            b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
            a = tl.load(a_ptrs, mask=offs_k_for_mask[None, :] < K - ki * BLOCK_SIZE_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k_for_mask[:, None] < K - ki * BLOCK_SIZE_K, other=0.0)
            accumulator = tl.dot(a, b, accumulator)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M,
                                    NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
        offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
        c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        c = accumulator.to(tl.float16)
        tl.store(c_ptrs, c, mask=c_mask)


@triton.jit
def _matmul_kernel_descriptor_persistent(a_ptr, b_ptr, c_ptr, M, N, K,
                                         BLOCK_SIZE_M: tl.constexpr,
                                         BLOCK_SIZE_N: tl.constexpr,
                                         BLOCK_SIZE_K: tl.constexpr,
                                         GROUP_SIZE_M: tl.constexpr,
                                         EPILOGUE_SUBTILE: tl.constexpr,
                                         NUM_SMS: tl.constexpr):
    dtype = c_ptr.dtype.element_ty
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1],
                                       block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1],
                                       block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K])
    c_desc = tl.make_tensor_descriptor(
        c_ptr, shape=[M, N], strides=[N, 1],
        block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N if not EPILOGUE_SUBTILE else BLOCK_SIZE_N // 2])
    tile_id_c = start_pid - NUM_SMS
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS, flatten=True):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M, NUM_SMS)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)
        tile_id_c += NUM_SMS
        pid_m, pid_n = _compute_pid(tile_id_c, num_pid_in_group, num_pid_m, GROUP_SIZE_M,
                                    NUM_SMS)
        offs_cm = pid_m * BLOCK_SIZE_M
        offs_cn = pid_n * BLOCK_SIZE_N
        if EPILOGUE_SUBTILE:
            acc = tl.reshape(accumulator, (BLOCK_SIZE_M, 2, BLOCK_SIZE_N // 2))
            acc = tl.permute(acc, (0, 2, 1))
            acc0, acc1 = tl.split(acc)
            c0 = acc0.to(dtype)
            c_desc.store([offs_cm, offs_cn], c0)
            c1 = acc1.to(dtype)
            c_desc.store([offs_cm, offs_cn + BLOCK_SIZE_N // 2], c1)
        else:
            c = accumulator.to(dtype)
            c_desc.store([offs_cm, offs_cn], c)


# 40 x 48 by 48 x 24 in fp16, 16 x 16 x 32 tiles: 3 x 2 = 6 tiles on 4 programs ("SMs"), K
# padded to 64. FLOPs 2·40·24·48 = 92,160 at fp16: the padded K lanes are masked (no
# products); the rows past M (clamped to row 0 by the pointer kernel, read as padding by the
# descriptors) are thrown away at the store. Bytes: A 40·48·2 = 3,840, B 48·24·2 = 2,304,
# C 40·24·2 = 1,920: 8,064.
PERSISTENT_FLOPS = 2 * 40 * 24 * 48
PERSISTENT_BYTES = 3840 + 2304 + 1920


def test_persistent_matmul() -> None:
    a = torch.randn(40, 48, dtype=torch.float16)
    b = torch.randn(48, 24, dtype=torch.float16)
    c = torch.empty(40, 24, dtype=torch.float16)

    def run() -> None:
        _matmul_kernel_persistent[(4,)](a, b, c, 40, 24, 48, a.stride(0), a.stride(1),
                                        b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                        BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=32,
                                        GROUP_SIZE_M=8, NUM_SMS=4)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "fp16"): PERSISTENT_FLOPS}
    assert work.bytes == PERSISTENT_BYTES
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.05, rtol=0.01)


@pytest.mark.parametrize("subtile", [False, True])
def test_descriptor_persistent_matmul(subtile: bool) -> None:
    """The same product through in-kernel descriptors; with EPILOGUE_SUBTILE the accumulator
    is reshaped, permuted and split into two halves stored apart."""
    a = torch.randn(40, 48, dtype=torch.float16)
    b = torch.randn(24, 48, dtype=torch.float16)  # (N, K), as the tutorial passes it
    c = torch.empty(40, 24, dtype=torch.float16)

    def run() -> None:
        _matmul_kernel_descriptor_persistent[(4,)](a, b, c, 40, 24, 48, BLOCK_SIZE_M=16,
                                                   BLOCK_SIZE_N=16, BLOCK_SIZE_K=32,
                                                   GROUP_SIZE_M=8, EPILOGUE_SUBTILE=subtile,
                                                   NUM_SMS=4)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "fp16"): PERSISTENT_FLOPS}
    assert work.bytes == PERSISTENT_BYTES
    torch.testing.assert_close(c.float(), a.float() @ b.float().T, atol=0.05, rtol=0.01)


# -- 10-block-scaled-matmul.py (its launch_metadata left out: the kernel is counted) -----------


@triton.jit
def _block_scaled_matmul_kernel(a_desc, a_scale, b_desc, b_scale, c_desc, M: tl.constexpr,
                                N: tl.constexpr, K: tl.constexpr, stride_sk: tl.constexpr,
                                stride_sb: tl.constexpr, stride_sc: tl.constexpr,
                                stride_sd: tl.constexpr, output_type: tl.constexpr,
                                ELEM_PER_BYTE_A: tl.constexpr, ELEM_PER_BYTE_B: tl.constexpr,
                                VEC_SIZE: tl.constexpr, BLOCK_M: tl.constexpr,
                                BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                                NUM_STAGES: tl.constexpr, USE_2D_SCALE_LOAD: tl.constexpr):
    if output_type == 0:
        output_dtype = tl.float32
    elif output_type == 1:
        output_dtype = tl.float16
    elif output_type == 2:
        output_dtype = tl.float8e4nv
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    offs_am = pid_m * BLOCK_M
    offs_bn = pid_n * BLOCK_N
    offs_k_a = 0
    offs_k_b = 0
    offs_sm = (pid_m * (BLOCK_M // 128) + tl.arange(0, BLOCK_M // 128)) % M
    offs_sn = (pid_n * (BLOCK_N // 128) + tl.arange(0, BLOCK_N // 128)) % N
    MIXED_PREC: tl.constexpr = ELEM_PER_BYTE_A == 1 and ELEM_PER_BYTE_B == 2
    offs_inner = tl.arange(0, (BLOCK_K // VEC_SIZE // 4) * 32 * 4 * 4)
    a_scale_ptr = a_scale + offs_sm[:, None] * stride_sk + offs_inner[None, :]
    b_scale_ptr = b_scale + offs_sn[:, None] * stride_sk + offs_inner[None, :]
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _k in tl.range(0, tl.cdiv(K, BLOCK_K), num_stages=NUM_STAGES):
        a = a_desc.load([offs_am, offs_k_a])
        b = b_desc.load([offs_bn, offs_k_b])
        scale_a = tl.load(a_scale_ptr)
        scale_b = tl.load(b_scale_ptr)
        scale_a = scale_a.reshape(BLOCK_M // 128, BLOCK_K // VEC_SIZE // 4, 32, 4, 4)
        scale_b = scale_b.reshape(BLOCK_N // 128, BLOCK_K // VEC_SIZE // 4, 32, 4, 4)
        scale_a = scale_a.trans(0, 3, 2, 1, 4).reshape(BLOCK_M, BLOCK_K // VEC_SIZE)
        scale_b = scale_b.trans(0, 3, 2, 1, 4).reshape(BLOCK_N, BLOCK_K // VEC_SIZE)
        if MIXED_PREC:
            accumulator = tl.dot_scaled(a, scale_a, "e4m3", b.T, scale_b, "e2m1", accumulator)
        elif ELEM_PER_BYTE_A == 2 and ELEM_PER_BYTE_B == 2:
            accumulator = tl.dot_scaled(a, scale_a, "e2m1", b.T, scale_b, "e2m1", accumulator)
        else:
            accumulator = tl.dot_scaled(a, scale_a, "e4m3", b.T, scale_b, "e4m3", accumulator)
        offs_k_a += BLOCK_K // ELEM_PER_BYTE_A
        offs_k_b += BLOCK_K // ELEM_PER_BYTE_B
        a_scale_ptr += (BLOCK_K // VEC_SIZE // 4) * stride_sb
        b_scale_ptr += (BLOCK_K // VEC_SIZE // 4) * stride_sb
    c_desc.store([offs_am, offs_bn], accumulator.to(output_dtype))


@pytest.mark.parametrize("fmt", ["mxfp8", "mxfp4"])
def test_block_scaled_matmul(fmt: str) -> None:
    """128 x 128 output, one program, host tensor descriptors, e8m0 scales in the tutorial's
    5-D layout (one a 32 values along K). mxfp8, K = 128: 2·128·128·128 = 4,194,304 FLOPs at
    fp8; bytes A and B 128·128 (16,384 each), scales 128·4 each (512 each), C fp16
    128·128·2 = 32,768: 66,560. mxfp4, K = 256 packed two a byte: 2·128·128·256 = 8,388,608
    at fp4; A and B 128·128 B each, scales 128·8 each (1,024 each), C 32,768: 67,584."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    per_byte = 2 if fmt == "mxfp4" else 1
    m = n = 128
    k = 128 * per_byte
    if per_byte == 2:
        a = torch.randint(0, 256, (m, k // 2), dtype=torch.uint8)
        b = torch.randint(0, 256, (n, k // 2), dtype=torch.uint8)
    else:
        a = torch.randn(m, k).to(torch.float8_e4m3fn)
        b = torch.randn(n, k).to(torch.float8_e4m3fn)
    a_scale = torch.full((m // 128, k // 32 // 4, 32, 4, 4), 127, dtype=torch.uint8)
    b_scale = torch.full((n // 128, k // 32 // 4, 32, 4, 4), 127, dtype=torch.uint8)
    c = torch.empty(m, n, dtype=torch.float16)
    a_desc = TensorDescriptor.from_tensor(a, [128, 128])
    b_desc = TensorDescriptor.from_tensor(b, [128, 128])
    c_desc = TensorDescriptor.from_tensor(c, [128, 128])

    def run() -> None:
        _block_scaled_matmul_kernel[(1, 1)](
            a_desc, a_scale, b_desc, b_scale, c_desc, m, n, k, a_scale.stride(0),
            a_scale.stride(1), a_scale.stride(2), a_scale.stride(3), 1, per_byte, per_byte,
            32, 128, 128, k, 1, USE_2D_SCALE_LOAD=True)

    work = rl.trace(run)
    if per_byte == 1:
        assert _by_dtype(work) == {("matrix", "fp8"): 2 * 128 * 128 * 128}
        assert work.bytes == 66_560
        torch.testing.assert_close(c.float(), a.float() @ b.float().T, atol=0.1, rtol=0.01)
    else:
        assert _by_dtype(work) == {("matrix", "fp4"): 2 * 128 * 128 * 256}
        assert work.bytes == 67_584


# -- 06-fused-attention.py: the backward (causal) ----------------------------------------------


@triton.jit
def _attn_bwd_preprocess(O, DO, Delta, Z, H, N_CTX, BLOCK_M: tl.constexpr,  # noqa: E741
                         HEAD_DIM: tl.constexpr):
    off_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    off_hz = tl.program_id(1)
    off_n = tl.arange(0, HEAD_DIM)
    o = tl.load(O + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM + off_n[None, :])
    do = tl.load(DO + off_hz * HEAD_DIM * N_CTX + off_m[:, None] * HEAD_DIM
                 + off_n[None, :]).to(tl.float32)
    delta = tl.sum(o * do, axis=1)
    tl.store(Delta + off_hz * N_CTX + off_m, delta)


@triton.jit
def _attn_bwd_dkdv(dk, dv, Q, k, v, sm_scale, DO, M, D, stride_tok, stride_d, H, N_CTX,
                   BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr, HEAD_DIM: tl.constexpr,
                   start_n, start_m, num_steps, MASK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK_M1)
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    offs_k = tl.arange(0, HEAD_DIM)
    qT_ptrs = Q + offs_m[None, :] * stride_tok + offs_k[:, None] * stride_d
    do_ptrs = DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    tl.static_assert(BLOCK_N1 % BLOCK_M1 == 0)
    curr_m = start_m
    step_m = BLOCK_M1
    for _blk_idx in range(num_steps):
        qT = tl.load(qT_ptrs)
        offs_m = curr_m + tl.arange(0, BLOCK_M1)
        m = tl.load(M + offs_m)
        qkT = tl.dot(k, qT)
        pT = tl.math.exp2(qkT - m[None, :])
        if MASK:
            mask = (offs_m[None, :] >= offs_n[:, None])
            pT = tl.where(mask, pT, 0.0)
        do = tl.load(do_ptrs)
        ppT = pT
        ppT = ppT.to(tl.float16)
        dv += tl.dot(ppT, do)
        Di = tl.load(D + offs_m)
        dpT = tl.dot(v, tl.trans(do)).to(tl.float32)
        dsT = pT * (dpT - Di[None, :])
        dsT = dsT.to(tl.float16)
        dk += tl.dot(dsT, tl.trans(qT))
        curr_m += step_m
        qT_ptrs += step_m * stride_tok
        do_ptrs += step_m * stride_tok
    return dk, dv


@triton.jit
def _attn_bwd_dq(dq, q, K, V, do, m, D, stride_tok, stride_d, H, N_CTX,
                 BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr, HEAD_DIM: tl.constexpr,
                 start_m, start_n, num_steps, MASK: tl.constexpr):
    offs_m = start_m + tl.arange(0, BLOCK_M2)
    offs_n = start_n + tl.arange(0, BLOCK_N2)
    offs_k = tl.arange(0, HEAD_DIM)
    kT_ptrs = K + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    vT_ptrs = V + offs_n[None, :] * stride_tok + offs_k[:, None] * stride_d
    Di = tl.load(D + offs_m)
    tl.static_assert(BLOCK_M2 % BLOCK_N2 == 0)
    curr_n = start_n
    step_n = BLOCK_N2
    for _blk_idx in range(num_steps):
        kT = tl.load(kT_ptrs)
        vT = tl.load(vT_ptrs)
        qk = tl.dot(q, kT)
        p = tl.math.exp2(qk - m)
        if MASK:
            offs_n = curr_n + tl.arange(0, BLOCK_N2)
            mask = (offs_m[:, None] >= offs_n[None, :])
            p = tl.where(mask, p, 0.0)
        dp = tl.dot(do, vT).to(tl.float32)
        ds = p * (dp - Di[:, None])
        ds = ds.to(tl.float16)
        dq += tl.dot(ds, tl.trans(kT))
        curr_n += step_n
        kT_ptrs += step_n * stride_tok
        vT_ptrs += step_n * stride_tok
    return dq


@triton.jit
def _attn_bwd(Q, K, V, sm_scale, DO, DQ, DK, DV, M, D, stride_z, stride_h, stride_tok,
              stride_d, H, N_CTX, BLOCK_M1: tl.constexpr, BLOCK_N1: tl.constexpr,
              BLOCK_M2: tl.constexpr, BLOCK_N2: tl.constexpr, BLK_SLICE_FACTOR: tl.constexpr,
              HEAD_DIM: tl.constexpr):
    LN2: tl.constexpr = 0.6931471824645996
    bhid = tl.program_id(2)
    off_chz = (bhid * N_CTX).to(tl.int64)
    adj = (stride_h * (bhid % H) + stride_z * (bhid // H)).to(tl.int64)
    pid = tl.program_id(0)
    Q += adj
    K += adj
    V += adj
    DO += adj
    DQ += adj
    DK += adj
    DV += adj
    M += off_chz
    D += off_chz
    offs_k = tl.arange(0, HEAD_DIM)
    start_n = pid * BLOCK_N1
    start_m = start_n
    MASK_BLOCK_M1: tl.constexpr = BLOCK_M1 // BLK_SLICE_FACTOR
    offs_n = start_n + tl.arange(0, BLOCK_N1)
    dv = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    dk = tl.zeros([BLOCK_N1, HEAD_DIM], dtype=tl.float32)
    k = tl.load(K + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    v = tl.load(V + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d)
    num_steps = BLOCK_N1 // MASK_BLOCK_M1
    dk, dv = _attn_bwd_dkdv(dk, dv, Q, k, v, sm_scale, DO, M, D, stride_tok, stride_d, H,
                            N_CTX, MASK_BLOCK_M1, BLOCK_N1, HEAD_DIM, start_n, start_m,
                            num_steps, MASK=True)
    start_m += num_steps * MASK_BLOCK_M1
    num_steps = (N_CTX - start_m) // BLOCK_M1
    dk, dv = _attn_bwd_dkdv(dk, dv, Q, k, v, sm_scale, DO, M, D, stride_tok, stride_d, H,
                            N_CTX, BLOCK_M1, BLOCK_N1, HEAD_DIM, start_n, start_m, num_steps,
                            MASK=False)
    dv_ptrs = DV + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d
    tl.store(dv_ptrs, dv)
    dk *= sm_scale
    dk_ptrs = DK + offs_n[:, None] * stride_tok + offs_k[None, :] * stride_d
    tl.store(dk_ptrs, dk)
    start_m = pid * BLOCK_M2
    end_n = start_m + BLOCK_M2
    MASK_BLOCK_N2: tl.constexpr = BLOCK_N2 // BLK_SLICE_FACTOR
    offs_m = start_m + tl.arange(0, BLOCK_M2)
    q = tl.load(Q + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)
    dq = tl.zeros([BLOCK_M2, HEAD_DIM], dtype=tl.float32)
    do = tl.load(DO + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d)
    m = tl.load(M + offs_m)
    m = m[:, None]
    num_steps = BLOCK_M2 // MASK_BLOCK_N2
    dq = _attn_bwd_dq(dq, q, K, V, do, m, D, stride_tok, stride_d, H, N_CTX, BLOCK_M2,
                      MASK_BLOCK_N2, HEAD_DIM, start_m, end_n - num_steps * MASK_BLOCK_N2,
                      num_steps, MASK=True)
    end_n -= num_steps * MASK_BLOCK_N2
    num_steps = end_n // BLOCK_N2
    dq = _attn_bwd_dq(dq, q, K, V, do, m, D, stride_tok, stride_d, H, N_CTX, BLOCK_M2,
                      BLOCK_N2, HEAD_DIM, start_m, end_n - num_steps * BLOCK_N2, num_steps,
                      MASK=False)
    dq_ptrs = DQ + offs_m[:, None] * stride_tok + offs_k[None, :] * stride_d
    dq *= LN2
    tl.store(dq_ptrs, dq)


def test_fused_attention_backward() -> None:
    """Causal, Z = 1, H = 2, N_CTX = 64, HEAD_DIM = 16; the tutorial's blocks scaled down
    (BLOCK_M1, BLOCK_N1, BLOCK_M2, BLOCK_N2 = 16, 32, 32, 16, slices of 2): 2 programs a
    head. The kernel computes whole tiles on the diagonal (masking p after), so the products
    are those of the tiles it visits, all fp16:
    dK/dV, 4 dots of 2·32·16 per query row each: program 0 visits query rows 0..63 (4 masked
    steps of 8, 2 of 16), program 1 rows 32..63: 8·32·16·(64 + 32) = 393,216; dQ, 3 dots of
    2·32·16 per key column each: program 0 keys 0..31, program 1 keys 0..63: 6·32·16·96 =
    294,912. 688,128 a head, 1,376,256 in all.
    Vector (fp32), dK/dV step of B query rows: the shift and exp2 of pT 2·32·B, dP's shift
    and product 2·32·B, dv += and dk += 2·32·16 (the first step's adds into the zeroed
    accumulators moves): program 0 4·(1,024 + 1,024) + 2·(2,048 + 1,024) - 1,024 = 13,312,
    program 1 4·2,048 - 1,024 = 7,168, dk's scale 512 each; dQ step of B keys: 4·32·B +
    dq += 512: program 0 4·1,536 - 512 = 5,632, program 1 4·1,536 + 2·2,560 - 512 = 10,752,
    the LN2 scale 512 each: 21,504 + 17,408 = 38,912 a head, 77,824 in all.
    Bytes: Q, K, V, DO read (4·2·64·16·2 = 16,384), M and Delta (2·2·64·4 = 1,024), DQ,
    DK, DV written in fp16 (3·4,096 = 12,288): 29,696.
    The preprocess: o·do 64·16 and its row sums 64·15 a head, 3,968 (fp32); O and DO read
    (8,192), Delta written (512): 8,704."""
    gen = torch.Generator().manual_seed(0)
    z, h, n, d, sm_scale = 1, 2, 64, 16, 0.5
    q, k, v = (0.5 * torch.randn(z, h, n, d, generator=gen) for _ in range(3))
    q, k, v = (t.to(torch.float16) for t in (q, k, v))
    do = torch.randn(z, h, n, d, generator=gen).to(torch.float16)
    qr, kr, vr = (t.float().requires_grad_() for t in (q, k, v))
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    scores = (qr @ kr.transpose(2, 3) * sm_scale).masked_fill(~causal, float("-inf"))
    o = (scores.softmax(-1) @ vr)
    o.backward(do.float())
    lse2 = scores.logsumexp(-1).detach() / 0.6931471805599453  # M: base-2 log-sum-exp
    o16 = o.detach().to(torch.float16)
    delta = torch.empty(z, h, n)
    dq, dk, dv = (torch.empty_like(q) for _ in range(3))
    arg_k = (k.float() * (sm_scale * 1.4426950408889634)).to(torch.float16)

    def pre() -> None:
        _attn_bwd_preprocess[(n // 32, z * h)](o16, do, delta, z, h, n, BLOCK_M=32,
                                                HEAD_DIM=d)

    def bwd() -> None:
        _attn_bwd[(n // 32, 1, z * h)](q, arg_k, v, sm_scale, do, dq, dk, dv, lse2, delta,
                                        q.stride(0), q.stride(1), q.stride(2), q.stride(3),
                                        h, n, BLOCK_M1=16, BLOCK_N1=32, BLOCK_M2=32,
                                        BLOCK_N2=16, BLK_SLICE_FACTOR=2, HEAD_DIM=d)

    work = rl.trace(pre)
    assert _by_dtype(work) == {("vector", "fp32"): 3968}
    assert work.bytes == 8704
    work = rl.trace(bwd)
    assert _by_dtype(work) == {("matrix", "fp16"): 1_376_256, ("vector", "fp32"): 77_824}
    assert work.bytes == 29_696
    for got, want in ((dq, qr.grad), (dk, kr.grad), (dv, vr.grad)):
        torch.testing.assert_close(got.float(), want, atol=0.03, rtol=0.03)


def test_the_descriptor_attention_on_meta_is_counted_by_replay_as_interpreted() -> None:
    """The same launch on meta tensors (what torch.compile and a GPU suite hand the tracer):
    replayed once in the interpreter on stand-ins of the same shapes, it counts exactly what
    the interpreted launch counts (the figures of the test above: 131,072 fp16 matrix FLOPs,
    13,888 fp32 vector FLOPs, 8,448 B) and says it was counted by replay."""
    q, k, v = (torch.empty(1, 2, 32, 16, dtype=torch.float16, device="meta") for _ in range(3))
    o, m = torch.empty_like(q), torch.empty(1, 2, 32, device="meta")

    def run() -> None:
        _attn_fwd[(2, 2)](0.25, m, 1, 2, q, k, v, o, N_CTX=32, HEAD_DIM=16, BLOCK_M=16,
                          BLOCK_N=16)

    work = rl.Tracer(strict=True)(run)
    assert _by_dtype(work) == {("matrix", "fp16"): 131_072, ("vector", "fp32"): 13_888}
    assert work.bytes == 8448 and "counted by replay" in " ".join(work.assumed)
