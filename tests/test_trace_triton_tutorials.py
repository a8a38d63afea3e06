"""Triton 3.9's tutorials (triton-lang/triton, python/tutorials/, MIT licence) traced in the
interpreter, against hand counts derived from their source.

The kernels are written here after the tutorials' algorithms (the same loads, arithmetic,
dots and stores in the same order; options the tests do not use left out), at small shapes:
the interpreter runs every program in Python. Each count's derivation is beside it.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402

import pytest_roofline as rl  # noqa: E402

if not triton.knobs.runtime.interpret:
    pytest.skip("interpreter mode only (TRITON_INTERPRET=1 before triton is imported)",
                allow_module_level=True)


def _by_dtype(work: object) -> dict[tuple[str, str], float]:
    found: dict[tuple[str, str], float] = {}
    for k in work.kernels:  # type: ignore[attr-defined]
        key = (k.unit, k.dtype)
        found[key] = found.get(key, 0.0) + float(k.flops)
    return found


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


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                   stride_cm, stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                   BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


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
