"""What Triton's interpreter counter counts, op class by op class, on small kernels written
here, each against a hand count derived beside it (bytes exact, FLOPs exact unless said).

Runs in interpreter mode only (tests/conftest.py sets TRITON_INTERPRET before triton is
imported, so ``triton.jit`` below makes interpreted kernels).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

import triton.language as tl  # noqa: E402
from flop_split import by_dtype as _by_dtype  # noqa: E402

import pytest_roofline as rl  # noqa: E402
from pytest_roofline.tracing import TraceError, _triton, _triton_count, _triton_ops  # noqa: E402

if not triton.knobs.runtime.interpret:
    pytest.skip("interpreter mode only (TRITON_INTERPRET=1 before triton is imported)",
                allow_module_level=True)




# -- 1. tensor descriptors -------------------------------------------------------------------


@triton.jit
def _desc_copy(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    block = src.load([pid * BM, 0])
    dst.store([pid * BM, 0], block * 2.0)


def test_tensor_descriptor_loads_and_stores_are_counted() -> None:
    """The interpreter calls the masked load by keyword from a descriptor's load (the
    counter's wrappers take any signature). 48 x 32 fp16 in 32 x 32 blocks: two programs, the
    second's rows 48..63 out of bounds (masked). Bytes: 48·32·2 = 3,072 read + 3,072
    written = 6,144; FLOPs: one multiply a valid lane, 48·32 = 1,536, at fp16."""
    x = torch.randn(48, 32, dtype=torch.float16)
    y = torch.empty_like(x)

    def run() -> None:
        _desc_copy[(2,)](x, y, 48, 32, BM=32, BN=32)

    work = rl.trace(run)
    assert work.bytes == 6144
    assert _by_dtype(work) == {("vector", "fp16"): 1536}
    torch.testing.assert_close(y, x * 2)
    assert dict(work.assumed) == {"Triton _desc_copy: counted in the interpreter": 1}


# -- 2. a dot at its operands' precision -----------------------------------------------------


@triton.jit
def _dot_and_lse(a_ptr, b_ptr, c_ptr, lse_ptr, M: tl.constexpr, N: tl.constexpr,
                 K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)
    tl.store(lse_ptr + rm, tl.sum(c, axis=1))


def _dot_lse(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    m, k = a.shape
    n = b.shape[1]
    out_dtype = torch.int32 if a.dtype == torch.int8 else torch.float32
    c = torch.empty(m, n, dtype=out_dtype)
    lse = torch.empty(m, dtype=out_dtype)
    _dot_and_lse[(1,)](a, b, c, lse, M=m, N=n, K=k)
    return c


@pytest.mark.parametrize(("dtype", "priced"), [(torch.float16, "fp16"),
                                               (torch.bfloat16, "bf16"),
                                               (torch.float8_e4m3fn, "fp8"),
                                               (torch.int8, "int8")])
def test_a_dot_is_priced_at_its_operands_precision(dtype: torch.dtype, priced: str) -> None:
    """A 16 x 16 x 32 dot: 2·16·16·32 = 16,384 FLOPs at the operands' precision, though the
    launch also holds fp32 (int32) outputs: never the widest tensor of the launch."""
    a = torch.randn(16, 32).clamp(-2, 2).to(dtype)
    b = torch.randn(32, 16).clamp(-2, 2).to(dtype)
    work = rl.trace(_dot_lse, a, b)
    assert _by_dtype(work)[("matrix", priced)] == 2 * 16 * 16 * 32
    main = work.kernels[0]
    assert (main.unit, main.dtype) == ("matrix", priced)
    # bytes: a and b once (16·32 + 32·16 elements of 1 or 2 B), c and lse written (4 B)
    assert main.bytes == 2 * 16 * 32 * a.element_size() + (16 * 16 + 16) * 4


@triton.jit
def _two_dots(a_ptr, b_ptr, x_ptr, y_ptr, c_ptr, z_ptr, M: tl.constexpr):
    r = tl.arange(0, M)
    idx = r[:, None] * M + r[None, :]
    c = tl.dot(tl.load(a_ptr + idx), tl.load(b_ptr + idx))
    z = tl.dot(tl.load(x_ptr + idx), tl.load(y_ptr + idx), input_precision="ieee")
    tl.store(c_ptr + idx, c)
    tl.store(z_ptr + idx, z)


def test_each_dot_of_a_launch_keeps_its_own_precision() -> None:
    """One launch, two 16^3 dots: fp16 (8,192 FLOPs) and ieee fp32 (8,192): two matrix
    kernels, one per precision, timed as one launch (the second in the first's epilogue);
    an fp32 dot at Triton's default input precision runs as tf32."""
    h = [torch.randn(16, 16, dtype=torch.float16) for _ in range(2)]
    f = [torch.randn(16, 16) for _ in range(2)]
    out = [torch.empty(16, 16) for _ in range(2)]

    def run() -> None:
        _two_dots[(1,)](*h, *f, *out, M=16)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "fp16"): 8192, ("matrix", "fp32"): 8192}
    first, second = work.kernels
    assert second.epilogue_of == first.name == "_two_dots"
    assert first.bytes == (2 * 256 * 2 + 2 * 256 * 4) + 2 * 256 * 4 and second.bytes == 0
    tf32 = rl.trace(_dot_lse, f[0], f[1])
    assert _by_dtype(tf32)[("matrix", "tf32")] == 8192


# -- 3. the discarded rows through an epilogue -------------------------------------------------


@triton.jit
def _mm_epilogue(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr, ACTIVATION: tl.constexpr):
    """The matmul tutorial's algorithm (rows and columns wrapped with % M, % N; K masked),
    accumulating with ``acc += tl.dot(a, b)``, with its leaky_relu epilogue and a cast."""
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    offs_m = (pid_m * BM + tl.arange(0, BM)) % M
    offs_n = (pid_n * BN + tl.arange(0, BN)) % N
    offs_k = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        kk = k * BK + offs_k
        a = tl.load(a_ptr + offs_m[:, None] * K + kk[None, :], mask=kk[None, :] < K, other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + offs_n[None, :], mask=kk[:, None] < K, other=0.0)
        acc += tl.dot(a, b)
    if ACTIVATION == "leaky_relu":
        acc = tl.where(acc >= 0, acc, 0.01 * acc)
    c = (acc * 0.5).to(tl.float16)
    cm = pid_m * BM + tl.arange(0, BM)
    cn = pid_n * BN + tl.arange(0, BN)
    tl.store(c_ptr + cm[:, None] * N + cn[None, :], c, mask=(cm[:, None] < M) & (cn[None, :] < N))


@pytest.mark.parametrize("activation", ["", "leaky_relu"])
def test_discarded_rows_follow_the_accumulator_through_the_epilogue(activation: str) -> None:
    """FlagGems' mm shape, 100 x 70 x 90 in 64 x 64 x 32 tiles: the tiles compute 128 x 128
    outputs over K padded to 96 (masked: no products); the rows and columns past the edge are
    thrown away by the masked store. Matrix FLOPs = 2·100·70·90 = 1,260,000 exactly, at fp16;
    bytes: A 100·90·2 + B 90·70·2 + C 100·70·2 = 18,000 + 12,600 + 14,000 = 44,600."""
    a = torch.randn(100, 90, dtype=torch.float16)
    b = torch.randn(90, 70, dtype=torch.float16)
    c = torch.empty(100, 70, dtype=torch.float16)

    def run() -> None:
        _mm_epilogue[(2, 2)](a, b, c, 100, 70, 90, BM=64, BN=64, BK=32, ACTIVATION=activation)

    work = rl.trace(run)
    flops = _by_dtype(work)
    assert flops[("matrix", "fp16")] == 2 * 100 * 70 * 90
    assert work.kernels[0].bytes == 44_600
    # vector work on the whole 64 x 64 tile of each of the 4 programs (the kernel does it):
    # acc += dot: 3 K steps, the first a move (0 + dot), 2 adds = 2·4,096; the scale 4,096;
    # leaky_relu: a compare and a multiply, 2·4,096; per program, 4 programs
    tile = 64 * 64
    per = 2 * tile + tile + (2 * tile if activation else 0)
    assert flops[("vector", "fp32")] == 4 * per
    ref = a.float() @ b.float()
    if activation:
        ref = torch.where(ref >= 0, ref, 0.01 * ref)
    torch.testing.assert_close(c.float(), ref * 0.5, atol=0.05, rtol=0.01)


@triton.jit
def _split_store(a_ptr, b_ptr, c_ptr, M: tl.constexpr):
    r = tl.arange(0, M)
    idx = r[:, None] * M + r[None, :]
    c = tl.dot(tl.load(a_ptr + idx), tl.load(b_ptr + idx))
    top = r[:, None] < M // 2
    tl.store(c_ptr + idx, c, mask=top)
    tl.store(c_ptr + idx, c, mask=~top & (r[None, :] >= 0))


def test_complementary_masked_stores_count_the_dot_once() -> None:
    """A 32^3 dot stored by two masked stores (the top rows, then the rest): every lane is
    written, so all 2·32·32·32 = 65,536 products count (not 0: neither store alone writes
    every lane). Bytes: a, b read, c written: 3·1,024·4 = 12,288."""
    a, b, c = torch.randn(32, 32), torch.randn(32, 32), torch.empty(32, 32)

    def run() -> None:
        _split_store[(1,)](a, b, c, M=32)

    work = rl.trace(run)
    assert sum(k.flops for k in work.kernels if k.unit == "matrix") == 65_536
    assert work.bytes == 12_288



@triton.jit
def _dot_of_masked_rows(a_ptr, b_ptr, d_ptr, c_ptr, M, BM: tl.constexpr, K: tl.constexpr,
                        N: tl.constexpr, ACC: tl.constexpr):
    rm, rk, rn = tl.arange(0, BM), tl.arange(0, K), tl.arange(0, N)
    rows = rm[:, None] < M
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=rows, other=0.0)
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    if ACC:
        c = tl.dot(a, b, tl.load(d_ptr + rm[:, None] * N + rn[None, :]))
    else:
        c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c * 2.0, mask=rows)


@pytest.mark.parametrize(("acc", "scaled", "nbytes"),
                         [(False, 20 * 16, 3584), (True, 32 * 16, 3584 + 2048)])
def test_a_dot_of_padding_rows_is_padding(acc: bool, scaled: int, nbytes: int) -> None:
    """A's 32-row tile loaded with rows 20..31 masked: those rows of the 32 x 16 result have
    no product of loaded values, so they are padding for what follows, and the epilogue's
    scale counts 20·16 = 320 lanes; an accumulator loaded whole holds data in every row, so
    with it the scale counts all 512. Matrix FLOPs 2·20·16·16 = 10,240 (tf32) either way.
    Bytes: A's 20 rows 1,280, B 1,024, C's 20 rows 1,280; the accumulator 32·16·4 = 2,048."""
    a, b, d = torch.randn(20, 16), torch.randn(16, 16), torch.randn(32, 16)
    c = torch.empty(20, 16)

    def run() -> None:
        _dot_of_masked_rows[(1,)](a, b, d, c, 20, BM=32, K=16, N=16, ACC=acc)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "tf32"): 10_240, ("vector", "fp32"): scaled}
    assert work.bytes == nbytes


# -- 4. dot_scaled ---------------------------------------------------------------------------


@triton.jit
def _scaled(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr,
            K: tl.constexpr):
    rm, rn, rk, rs = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K), tl.arange(0, K // 32)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + rs[None, :])
    sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + rs[None, :])
    c = tl.dot_scaled(a, sa, "e4m3", b, sb, "e4m3")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def test_dot_scaled_is_counted_with_its_scales_traffic() -> None:
    """mxfp8 64 x 64 x 128: 2·64·64·128 = 1,048,576 FLOPs at fp8. Bytes: A and B 64·128 B
    each (8,192 + 8,192), their e8m0 scales one byte per 32 values (64·4 + 64·4 = 512), C in
    fp32 64·64·4 = 16,384: 33,280."""
    a = torch.randn(64, 128).to(torch.float8_e4m3fn)
    b = torch.randn(128, 64).to(torch.float8_e4m3fn)
    sa = torch.full((64, 4), 127, dtype=torch.uint8)  # 2^0
    sb = torch.full((64, 4), 127, dtype=torch.uint8)
    c = torch.empty(64, 64)

    def run() -> None:
        _scaled[(1,)](a, sa, b, sb, c, M=64, N=64, K=128)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "fp8"): 1_048_576}
    assert work.bytes == 33_280
    torch.testing.assert_close(c, a.float() @ b.float(), atol=0.05, rtol=0.01)


# -- 5. loop-carried accumulators ------------------------------------------------------------


@triton.jit
def _blocked_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


@pytest.mark.parametrize("n", [3, 4, 5, 9, 12])
def test_a_loop_accumulator_keeps_the_lanes_of_earlier_chunks(n: int) -> None:
    """Summing n elements in chunks of 4: the first add into the zeroed accumulator is a move,
    each later chunk adds its valid lanes, and the final tl.sum adds the lanes that hold data
    (all 4 once a full chunk ran): n - 1 adds in all, as a reduction of n counts (5: 0 + 1 +
    3 = 4; 4: 0 + 3 = 3, never more than 5's). Bytes: n·4 read + 4 written."""
    x = torch.randn(n)
    out = torch.empty(1)

    def run() -> None:
        _blocked_sum[(1,)](x, out, n, BLOCK=4)

    work = rl.trace(run)
    assert work.flops == n - 1
    assert work.bytes == 4 * n + 4
    torch.testing.assert_close(out[0], x.sum())



@triton.jit
def _shift_by_accumulator(x_ptr, out_ptr, n, BLOCK: tl.constexpr, X_FIRST: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        if X_FIRST:
            acc += tl.exp(x - acc)
        else:
            acc += tl.exp(acc - x)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@pytest.mark.parametrize(("x_first", "flops"), [(True, 10), (False, 18)])
def test_a_subtract_holds_data_where_its_first_operand_does(x_first: bool,
                                                            flops: int) -> None:
    """6 elements in chunks of 4, the second chunk 2 valid. x - acc: the first chunk's
    subtract and add are moves (acc is the zeroed start), its exp 4; the second's subtract
    2 (both hold data), and on x's 2 padded lanes x - acc is padding, so its exp 2 and the
    add 2: 10 (the padded lanes counted as data would be 14). acc - x: the first chunk's
    subtract 4, exp 4, the add a move; the second's subtract 2 (both operands' lanes), but
    acc - 0 is acc's data on all 4 lanes, its exp 4 and the add 4: 18. Bytes: 6·4 read,
    4·4 written."""
    x = torch.randn(6)
    out = torch.empty(4)

    def run() -> None:
        _shift_by_accumulator[(1,)](x, out, 6, BLOCK=4, X_FIRST=x_first)

    work = rl.trace(run)
    assert work.flops == flops
    assert work.bytes == 6 * 4 + 4 * 4


# -- 6. atomics, join, split, permute --------------------------------------------------------


@triton.jit
def _atomics(lock_ptr, f_ptr, i_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    tl.atomic_cas(lock_ptr + r, tl.zeros((BLOCK,), tl.int32), tl.full((BLOCK,), 1, tl.int32))
    tl.atomic_add(f_ptr + r, tl.full((BLOCK,), 1.0, tl.float32), mask=r < 100)
    tl.atomic_max(f_ptr + r, tl.full((BLOCK,), 0.5, tl.float32), mask=r < 100)
    tl.atomic_xchg(i_ptr + r, tl.full((BLOCK,), 3, tl.int32))


def test_every_atomic_reads_and_writes() -> None:
    """atomic_cas on 128 int32 lanes reads and writes 128·4 B: 1,024 B; atomic_add and
    atomic_max on the first 100 fp32 lanes of another tensor read and write 100·4 B each way
    (800, the same addresses once), the add one FLOP a lane (100; Triton runs a float max as
    integer atomics on the bits: no FLOP); atomic_xchg of 128 int32: 1,024 B, no FLOP.
    Total 1,024 + 800 + 1,024 = 2,848 B."""
    lock, f, i = torch.zeros(128, dtype=torch.int32), torch.zeros(128), torch.zeros(
        128, dtype=torch.int32)

    def run() -> None:
        _atomics[(1,)](lock, f, i, BLOCK=128)

    work = rl.trace(run)
    assert work.bytes == 2848
    assert work.flops == 100
    assert int(lock.sum()) == 128 and float(f[:100].sum()) == 100.0


@triton.jit
def _join_split(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    mask = r < n
    x = tl.load(x_ptr + r, mask=mask)
    y = tl.load(y_ptr + r, mask=mask)
    pair = tl.join(x, y) * 2.0  # (BLOCK, 2)
    lo, hi = tl.split(tl.permute(tl.permute(pair, (1, 0)), (1, 0)))
    tl.store(out_ptr + r, lo + hi, mask=mask)


def test_join_split_and_permute_keep_the_lane_masks() -> None:
    """150 valid lanes of a 256 block: the joined pair's multiply is 2·150 = 300 FLOPs (not
    512: the padding stays padding through join and permute), the add after the split 150:
    450. Bytes: x, y read and the output written, 3·150·4 = 1,800."""
    x, y, out = torch.randn(150), torch.randn(150), torch.empty(150)

    def run() -> None:
        _join_split[(1,)](x, y, out, 150, BLOCK=256)

    work = rl.trace(run)
    assert work.flops == 450
    assert work.bytes == 1800
    torch.testing.assert_close(out, 2 * (x + y))


# -- 7. every op counted or refused by name ----------------------------------------------------


def test_every_interpreter_op_is_classified() -> None:
    """Each ``create_*`` method of this Triton's interpreter builder is in one table of
    ``_triton_ops``: a Triton that adds one fails here first."""
    from triton.runtime.interpreter import InterpreterBuilder

    assert _triton_ops.classify(dir(InterpreterBuilder)) == []
    tables = [_triton_ops.FLOPS, _triton_ops.CARRY, _triton_ops.SHAPE, _triton_ops.INTEGER,
              _triton_ops.MEMORY, _triton_ops.THROUGH, _triton_ops.MATRIX, _triton_ops.NO_WORK,
              _triton_ops.REFUSED]
    assert sum(len(t) for t in tables) == len(_triton_ops.KNOWN)  # in one table only


def test_an_op_the_counter_does_not_know_refuses_the_launch_by_name() -> None:
    from triton.runtime import interpreter

    cls = interpreter.InterpreterBuilder
    cls.create_rl_new_op = lambda self, x: x  # type: ignore[attr-defined]
    try:
        count = _triton_count.Count()
        with count:
            interpreter.interpreter_builder.create_rl_new_op(1)
    finally:
        del cls.create_rl_new_op  # type: ignore[attr-defined]
    assert dict(count.refused) == {"create_rl_new_op": 1}
    with pytest.raises(TraceError, match="Triton k: ran create_rl_new_op x1.*register_op"):
        _triton.counted("k", count, 0.0, "fp32", None)


def test_interpreter_internals_the_counter_follows() -> None:
    """Beyond the builder's ``create_*`` methods the counter follows three interpreter
    internals: programs start with ``set_grid_idx`` (a program's stores settle its dots),
    ``_patch_lang_tensor(tensor, scope)`` installs ``tensor.T`` (a transpose made on the
    data: the counter moves its mask too), and constants come from the builder's ``get_*``
    methods. When one of them changes, this fails first."""
    import inspect

    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    assert list(inspect.signature(builder.set_grid_idx).parameters) == ["self", "x", "y", "z"]
    assert list(inspect.signature(interpreter._patch_lang_tensor).parameters) == [
        "tensor", "scope"]
    missing = [name for name in _triton_ops.CONSTANTS if not hasattr(builder, name)]
    assert not missing, missing
    assert {p.name for p in interpreter._ir.INPUT_PRECISION.__members__.values()} >= set(
        _triton_ops.INPUT_PRECISION)
    assert set(interpreter._ir.ScaleDotElemTypeTY.__members__) == set(
        _triton_ops.SCALED_FORMATS)


@triton.jit
def _desc_gather_scatter(x_ptr, y_ptr, M, N: tl.constexpr, ROWS: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[1, N])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[1, N])
    rows = tl.arange(0, ROWS) * 4 + 1
    block = src.gather(rows, 0)
    dst.scatter(block * 2.0, rows, 0)


def test_tensor_descriptor_gather_and_scatter_are_counted() -> None:
    """Rows 1, 5, ..., 29 of a 26 x 16 fp32 tensor, gathered and scattered (row 29, past
    M = 26, is masked): 7 rows of 16 read and written, 2·7·16·4 = 896 B; the multiply on
    the gathered lanes that hold data, 7·16 = 112 FLOPs (not 8·16)."""
    x = torch.randn(26, 16)
    y = torch.zeros_like(x)

    def run() -> None:
        _desc_gather_scatter[(1,)](x, y, 26, N=16, ROWS=8)

    work = rl.trace(run)
    assert work.bytes == 896
    assert work.flops == 112
    torch.testing.assert_close(y[1::4], 2 * x[1::4])


def test_a_launch_not_counted_is_priced_at_its_narrowest_computed_precision() -> None:
    """Where nothing says the precision (a ``flops`` key, a formula's number), a launch is
    priced at the narrowest floating (or int8) precision among its tensors, the fastest
    peak, so the bound stays a lower bound: an fp8 GEMM writing fp16 is fp8, an fp16
    attention with an fp32 log-sum-exp fp16, and a grouped GEMM's int64 pointer arrays
    never make it int64 work. Bytes: each tensor once (no source to read: read)."""
    from types import SimpleNamespace

    from pytest_roofline.tracing import _triton_source

    kernel = SimpleNamespace()  # no kernel function: every tensor charged once, as read
    fp8 = torch.zeros(4, 4, dtype=torch.float8_e4m3fn)
    fp16, fp32 = torch.zeros(4, 4, dtype=torch.float16), torch.zeros(4)
    pointers = torch.zeros(3, dtype=torch.int64)
    cases = [({"a": fp8, "b": fp8.clone(), "c": fp16}, "fp8", 16 + 16 + 32),
             ({"q": fp16, "lse": fp32}, "fp16", 32 + 16),
             ({"ptrs": pointers, "a": fp16}, "fp16", 24 + 32),
             ({"ptrs": pointers}, None, 24)]
    for bound, priced, nbytes in cases:
        assert _triton_source.tensor_bytes(kernel, bound) == (nbytes, priced), bound


@triton.jit
def _two_widths(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    mask = r < n
    half = tl.load(x_ptr + r, mask=mask) * 2.0  # fp16 arithmetic
    tl.store(y_ptr + r, half.to(tl.float32) * 3.0 + 1.0, mask=mask)  # fp32 arithmetic


def test_vector_work_is_split_by_precision_and_a_dtype_override_prices_the_dots() -> None:
    """100 valid lanes: one fp16 multiply (100 FLOPs at fp16), an fp32 multiply and add (200
    at fp32): two vector kernels timed as one launch, the larger first with every byte (100
    fp16 read, 100 fp32 written: 600 B). ``Tracer(dtype=...)`` prices all of a launch's dots
    at that precision (one matrix kernel), its other arithmetic as it ran."""
    x, y = torch.randn(100, dtype=torch.float16), torch.empty(100)

    def run() -> None:
        _two_widths[(1,)](x, y, 100, BLOCK=128)

    work = rl.trace(run)
    assert _by_dtype(work) == {("vector", "fp32"): 200, ("vector", "fp16"): 100}
    first, second = work.kernels
    assert (first.name, first.dtype, first.bytes) == ("_two_widths", "fp32", 600)
    assert (second.name, second.epilogue_of, second.bytes) == ("_two_widths.fp16",
                                                               "_two_widths", 0)
    h = [torch.randn(16, 16, dtype=torch.float16) for _ in range(2)]
    f = [torch.randn(16, 16) for _ in range(2)]
    out = [torch.empty(16, 16) for _ in range(2)]

    def dots() -> None:
        _two_dots[(1,)](*h, *f, *out, M=16)

    assert _by_dtype(rl.Tracer(dtype="bf16")(dots)) == {("matrix", "bf16"): 16_384}


# -- what the mutation run over the counter found no test for ---------------------------------


@triton.jit
def _dot_stored_and_summed(a_ptr, b_ptr, c_ptr, s_ptr, M, BM: tl.constexpr, K: tl.constexpr,
                           N: tl.constexpr, SUM: tl.constexpr):
    rm, rk, rn = tl.arange(0, BM), tl.arange(0, K), tl.arange(0, N)
    wrapped = rm % M  # the matmul tutorial's rows: past the edge they re-read row rm % M
    a = tl.load(a_ptr + wrapped[:, None] * K + rk[None, :])
    c = tl.dot(a, tl.load(b_ptr + rk[:, None] * N + rn[None, :]))
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c, mask=rm[:, None] < M)
    if SUM:
        tl.store(s_ptr + rm, tl.sum(c, axis=1), mask=rm < M)


@pytest.mark.parametrize(("summed", "flops"), [(False, 2 * 20 * 16 * 16),
                                               (True, 2 * 32 * 16 * 16)])
def test_a_dot_whose_lanes_move_keeps_all_of_its_products(summed: bool, flops: int) -> None:
    """A 32-row tile of a 20-row matrix (rows wrapped, loaded whole), stored with rows 20..31
    masked: those rows' products are taken back, 2·20·16·16 = 10,240 (tf32). Summed along its
    rows as well, the result's lanes move (a reduction reads every row it holds): all
    2·32·16·16 = 16,384 products are kept, the module docstring's rule."""
    a, b = torch.randn(20, 16), torch.randn(16, 16)
    c, s = torch.empty(20, 16), torch.empty(20)

    def run() -> None:
        _dot_stored_and_summed[(1,)](a, b, c, s, 20, BM=32, K=16, N=16, SUM=summed)

    work = rl.trace(run)
    assert _by_dtype(work)[("matrix", "tf32")] == flops
    torch.testing.assert_close(c, a @ b, atol=1e-2, rtol=1e-2)


def test_counting_puts_back_what_it_patched_on_the_interpreter(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After a counted launch the interpreter's ``_patch_lang_tensor`` is its own again, and
    a reduction class without ``apply_impl`` (a Triton that renamed it) is left untouched."""
    from triton.runtime import interpreter

    class ScanOps:  # no apply_impl
        pass

    monkeypatch.setattr(interpreter, "ScanOps", ScanOps)
    before = interpreter._patch_lang_tensor
    x, y = torch.randn(16, 16), torch.empty(16, 16)
    work = rl.trace(lambda: _join_split[(1,)](x, y, torch.empty(64), 16, BLOCK=16))
    assert work.bytes > 0
    assert interpreter._patch_lang_tensor is before
    assert not hasattr(ScanOps, "apply_impl")


def test_pending_addresses_are_folded_to_their_distinct_set(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Past ``_FOLD`` pending addresses the tables are folded to one array of distinct
    addresses an element size (the memory a long launch holds stays bounded): loads of 100
    addresses from 0, 50 and 50 with a fold past 150: after the second, 200 pending are
    folded to their 150 distinct; the third's 100 wait, pending. 150 distinct fp32: 600 B."""
    import types

    import numpy as np

    monkeypatch.setattr(_triton_count, "_FOLD", 150)
    fp32 = types.SimpleNamespace(primitive_bitwidth=32)

    class Pointers:
        def __init__(self, start: int) -> None:
            self.data = np.arange(start, start + 100, dtype=np.int64)

        def get_element_ty(self) -> object:
            return fp32

    count = _triton_count.Count()
    everywhere = np.ones(100, dtype=bool)
    for start in (0, 50, 50):
        count._note(count.loads, Pointers(start), everywhere)
    assert count.pending == 100
    assert [len(part) for part in count.loads[4]] == [150, 100]
    assert count.nbytes() == 150 * 4


@triton.jit
def _spread_lanes(x_ptr, w_ptr, s_ptr, out_ptr, n1, n2, BLOCK: tl.constexpr,
                  SQUARE: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n1, other=0.0)[None, :]  # the block's own lanes, moved
    w = tl.load(w_ptr + r, mask=r < n2, other=0.0)[None, :]
    s = (tl.broadcast_to(tl.load(s_ptr), (BLOCK,)) * 2.0)[None, :]  # one value, spread
    y = x + w + s
    if SQUARE:
        y = y * y
    tl.store(out_ptr + r[None, :], y, mask=r[None, :] < n1)


def test_a_value_spread_over_the_block_holds_no_lanes_of_its_own() -> None:
    """x's 150 lanes plus w's 100 hold data in x's 150 (an add holds data where either
    operand does, an expanded block keeps its own lanes); adding a scalar spread over the
    block (broadcast, scaled, expanded: still one value) adds no lanes. So the square after
    counts 150 multiplies, not the block's 256 (and not w's 100)."""
    x, w, s = torch.randn(150), torch.randn(100), torch.randn(1)

    def flops(square: bool) -> float:
        out = torch.empty(150)
        work = rl.trace(lambda: _spread_lanes[(1,)](x, w, s, out, 150, 100, BLOCK=256,
                                                    SQUARE=square))
        if square:
            padded = torch.cat([w, torch.zeros(50)])
            torch.testing.assert_close(out, (x + padded + 2 * s) ** 2)
        return work.flops

    assert flops(True) - flops(False) == 150


def test_a_dot_result_folded_into_another_shape_keeps_its_products() -> None:
    """The counter's guards for what Triton 3.9's builder never passes (its elementwise ops
    take operands of one shape): a dot's result handed to a result of another shape marks
    the dot as moved (all its products kept), and a carried mask of another shape is
    dropped (every lane holds data), never applied to the wrong lanes."""
    import types

    import numpy as np

    count = _triton_count.Count()
    dot = _triton_count._Dot("tf32", np.ones((4, 4)))
    source = types.SimpleNamespace(data=np.zeros((4, 4)), _rl_dots=(dot,))
    out = types.SimpleNamespace(data=np.zeros((2, 8)))
    count._follow(out, [source])
    assert dot.escaped and not hasattr(out, "_rl_dots")

    # 4 lanes, 2 holding data, carried into a 3 x 4 result: the mask would broadcast onto
    # every row, which nothing says it should
    masked = types.SimpleNamespace(data=np.zeros(4), dtype="fp32",
                                   _rl_valid=np.array([1, 1, 0, 0], bool))
    carried = count._carry(lambda *args, **kwargs: types.SimpleNamespace(
        data=np.zeros((3, 4)), dtype="fp32"))
    result = carried(masked)
    assert _triton_count.L.valid_of(result) is None


@triton.jit
def _scaled_fp4(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr,
                K: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr, A_FP4: tl.constexpr):
    rm, rn, rs = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K // 32)
    KA: tl.constexpr = K // 2 if A_FP4 else K
    ra, rb = tl.arange(0, KA), tl.arange(0, K // 2)
    a = tl.load(a_ptr + rm[:, None] * KA + ra[None, :], mask=rm[:, None] < ROWS)
    b = tl.load(b_ptr + rb[:, None] * N + rn[None, :], mask=rn[None, :] < COLS)
    sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + rs[None, :])
    sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + rs[None, :])
    if A_FP4:
        c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1")
    else:
        c = tl.dot_scaled(a, sa, "e4m3", b, sb, "e2m1")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


@pytest.mark.parametrize(("a_fp4", "rows", "cols", "priced", "flops", "nbytes"), [
    (True, 32, 32, "fp4", 2 * 32 * 32 * 64, 1024 + 1024 + 128 + 4096),
    (True, 20, 24, "fp4", 2 * 20 * 24 * 64, 640 + 768 + 128 + 4096),
    (False, 20, 24, "fp8", 2 * 20 * 24 * 64, 1280 + 768 + 128 + 4096)])
def test_dot_scaled_of_packed_fp4_counts_two_values_a_byte(
        a_fp4: bool, rows: int, cols: int, priced: str, flops: int, nbytes: int) -> None:
    """mxfp4 (e2m1) holds two values a byte along K: a 32 x 64 x 32 product of 32 x 32-byte
    operands is 2·32·32·64 = 131,072 FLOPs at fp4, e4m3 times e2m1 at fp8 (the wider). Rows
    of A and columns of B masked past 20 and 24 (the mask follows the packed bytes onto both
    values): 2·20·24·64 = 61,440. Bytes: A's loaded rows (32 B a row packed, 64 as e4m3), B's
    loaded columns (32 B each), the e8m0 scales (2 a row of each: 128), C 32·32·4 = 4,096."""
    m = n = 32
    k = 64
    a = (torch.randint(0, 255, (m, k // 2), dtype=torch.uint8) if a_fp4
         else torch.randn(m, k).to(torch.float8_e4m3fn))
    b = torch.randint(0, 255, (k // 2, n), dtype=torch.uint8)
    sa = torch.full((m, k // 32), 127, dtype=torch.uint8)
    sb = torch.full((n, k // 32), 127, dtype=torch.uint8)
    c = torch.empty(m, n)

    def run() -> None:
        _scaled_fp4[(1,)](a, sa, b, sb, c, M=m, N=n, K=k, ROWS=rows, COLS=cols, A_FP4=a_fp4)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", priced): flops}
    assert work.bytes == nbytes


@triton.jit
def _moved_masks(x_ptr, y_ptr, out_ptr, n, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n, other=0.0)
    rows = tl.reshape(tl.broadcast_to(x[None, :], (ROWS, BLOCK)), (ROWS * BLOCK,))
    every = tl.arange(0, ROWS * BLOCK)
    tl.store(out_ptr + every, rows * tl.load(y_ptr + every))


def test_a_mask_moves_with_a_broadcast_and_a_reshape() -> None:
    """40 valid lanes of a 64 block, broadcast to 4 rows and flattened: each row holds data
    in its first 40 lanes, so the multiply by a block loaded whole counts 4·40 = 160 FLOPs
    (not 256). Bytes: x's 40 floats, y's and the output's 256: 160 + 1,024 + 1,024."""
    x, y, out = torch.randn(40), torch.randn(256), torch.empty(256)

    def run() -> None:
        _moved_masks[(1,)](x, y, out, 40, ROWS=4, BLOCK=64)

    work = rl.trace(run)
    assert work.flops == 160
    assert work.bytes == 160 + 1024 + 1024
    padded = torch.cat([x, torch.zeros(24)]).repeat(4)
    torch.testing.assert_close(out, padded * y)


@triton.jit
def _tf32x3(a_ptr, b_ptr, c_ptr, M: tl.constexpr, P: tl.constexpr):
    r = tl.arange(0, M)
    idx = r[:, None] * M + r[None, :]
    tl.store(c_ptr + idx, tl.dot(tl.load(a_ptr + idx), tl.load(b_ptr + idx),
                                 input_precision=P))


@pytest.mark.parametrize(("precision", "priced", "passes"), [("tf32x3", "tf32", 3),
                                                             ("ieee", "fp32", 1)])
def test_an_fp32_dot_counts_the_passes_its_input_precision_runs(
        precision: str, priced: str, passes: int) -> None:
    """tf32x3 splits each fp32 operand in a high and a low tf32 part and runs three tf32
    products (hi·hi, hi·lo, lo·hi): 3·2·16³ = 24,576 tf32 FLOPs; ieee one fp32 product,
    8,192 (Triton 3.9's interpreter takes tf32, tf32x3 and ieee on a CPU)."""
    a, b, c = torch.randn(16, 16), torch.randn(16, 16), torch.empty(16, 16)
    work = rl.trace(lambda: _tf32x3[(1,)](a, b, c, M=16, P=precision))
    assert _by_dtype(work) == {("matrix", priced): passes * 2 * 16 ** 3}


@triton.jit
def _moves_of_two_masks(x_ptr, y_ptr, out_ptr, n1, n2, BLOCK: tl.constexpr,
                        HOW: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n1, other=0.0)
    y = tl.load(y_ptr + r, mask=r < n2, other=0.0)
    if HOW == "split":  # join then split: each half keeps its own operand's lanes
        lo, hi = tl.split(tl.join(x, y))
        tl.store(out_ptr + r, lo * lo + hi * hi * 0.5, mask=r < n1)
    elif HOW == "cat":  # x's lanes, then y's (a join, a permute and a reshape)
        both = tl.cat(x, y)
        tl.store(out_ptr + tl.arange(0, 2 * BLOCK), both * both)
    elif HOW == "cat_reorder":  # the same, by the builder's own create_cat
        both = tl.cat(x, y, can_reorder=True)
        tl.store(out_ptr + tl.arange(0, 2 * BLOCK), both * both)
    elif HOW == "gather":  # x's lanes in reverse: lane i holds data where x's BLOCK-1-i does
        back = tl.gather(x, BLOCK - 1 - r, 0)
        tl.store(out_ptr + r, back * back)
    elif HOW == "gather_rows":  # rows 0, 2, 4, 6 of x as 8 x 8 (its first 5 rows hold data)
        rows = tl.reshape(tl.arange(0, 32) // 8 * 2, (4, 8))
        picked = tl.gather(tl.reshape(x, (8, 8)), rows, 0)
        tl.store(out_ptr + tl.arange(0, 32), tl.reshape(picked * picked, (32,)))
    else:  # permute x as 4 x 4 x 4, times y: the lanes both hold data in
        x3 = tl.permute(tl.reshape(x, (4, 4, 4)), (0, 2, 1))
        tl.store(out_ptr + r, tl.reshape(x3 * tl.reshape(y, (4, 4, 4)), (BLOCK,)))


@pytest.mark.parametrize(("how", "flops"), [
    # lo·lo over x's 40 lanes, hi·hi over y's 24, ·0.5 over y's 24, the add over the lanes
    # both operands hold data in, 24 (its result holds data where either does):
    # 40 + 24 + 24 + 24
    ("split", 40 + 24 + 24 + 24),
    ("cat", 40 + 24),  # the square over x's 40 lanes and y's 24, of 128
    pytest.param("cat_reorder", 40 + 24, marks=pytest.mark.filterwarnings(
        "ignore:tl.cat.can_reorder=True. is deprecated")),  # Triton 3.9 still takes it
    ("gather", 40),    # the square over the 40 lanes gathered from x's data
    ("gather_rows", 3 * 8),  # rows 0, 2 and 4 of 8 hold data: 24 of 32
    # x's lanes (16i + 4j + k < 40) moved to (i, k, j); y's: flat index below 24; both:
    # all 16 of i = 0, and 8 of i = 1 (4a + b < 8): 24 (read along the wrong axes, 16)
    ("permute", 24)])
def test_join_split_cat_and_gather_move_each_operands_lanes(how: str, flops: int) -> None:
    x, y, out = torch.randn(40), torch.randn(24), torch.empty(128)
    work = rl.trace(lambda: _moves_of_two_masks[(1,)](x, y, out, 40, 24, BLOCK=64, HOW=how))
    assert work.flops == flops


@triton.jit
def _m_packed_fp4(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, d_ptr, M: tl.constexpr,
                  N: tl.constexpr, K: tl.constexpr, ROWS: tl.constexpr, COLS: tl.constexpr,
                  ACC: tl.constexpr):
    ra, rk = tl.arange(0, M // 2), tl.arange(0, K)
    rn2, rs = tl.arange(0, N // 2), tl.arange(0, K // 32)
    rm, rn = tl.arange(0, M), tl.arange(0, N)
    a = tl.load(a_ptr + ra[:, None] * K + rk[None, :], mask=ra[:, None] < ROWS // 2)
    b = tl.load(b_ptr + rk[:, None] * (N // 2) + rn2[None, :], mask=rn2[None, :] < COLS // 2)
    sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + rs[None, :])
    sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + rs[None, :])
    if ACC:
        acc = tl.load(d_ptr + rm[:, None] * N + rn[None, :])
        c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1", acc=acc, lhs_k_pack=False,
                          rhs_k_pack=False)
    else:
        c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1", lhs_k_pack=False, rhs_k_pack=False)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c * 2.0)


@pytest.mark.parametrize(("acc", "scaled", "nbytes"), [
    (False, 20 * 24, 640 + 768 + 64 + 64 + 4096),
    (True, 32 * 32, 640 + 768 + 64 + 64 + 4096 + 4096)])
def test_fp4_packed_along_m_and_n_and_an_accumulator_passed_in(
        acc: bool, scaled: int, nbytes: int) -> None:
    """e2m1 packed along M (A: 16 x 64 bytes for 32 x 64 values) and along N (B: 64 x 16
    bytes for 64 x 32), the packed rows masked past 10 and columns past 12: 20 rows and 24
    columns hold data, 2·20·24·64 = 61,440 fp4 FLOPs. The scale after counts the lanes
    holding data: 20·24 = 480; with an accumulator loaded whole, all 1,024. Bytes: A 10·64,
    B 64·12, the scales 64 + 64, C 32·32·4 written (and the accumulator read)."""
    m = n = 32
    k = 64
    a = torch.randint(0, 255, (m // 2, k), dtype=torch.uint8)
    b = torch.randint(0, 255, (k, n // 2), dtype=torch.uint8)
    sa = torch.full((m, k // 32), 127, dtype=torch.uint8)
    sb = torch.full((n, k // 32), 127, dtype=torch.uint8)
    c, d = torch.empty(m, n), torch.randn(m, n)

    def run() -> None:
        _m_packed_fp4[(1,)](a, sa, b, sb, c, d, M=m, N=n, K=k, ROWS=20, COLS=24, ACC=acc)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "fp4"): 2 * 20 * 24 * 64, ("vector", "fp32"): scaled}
    assert work.bytes == nbytes


@triton.jit
def _edge_gather(x_ptr, y_ptr, M, N, BN: tl.constexpr, ROWS: tl.constexpr):
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[1, BN])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[1, BN])
    rows = tl.arange(0, ROWS) * 4
    block = src.gather(rows, 0)
    dst.scatter(block * 2.0, rows, 0)


def test_a_gather_at_the_edges_of_its_tensor() -> None:
    """Rows 0, 4, ..., 28 of a 28 x 12 tensor in blocks 16 wide: row 0 and column 0 are in,
    row 28 (= M) and columns 12..15 (from N on) are past the edge. 7 rows of 12 hold data:
    the multiply 7·12 = 84 FLOPs; 7·12·4 = 336 B read and as many written."""
    x = torch.randn(28, 12)
    y = torch.zeros_like(x)
    work = rl.trace(lambda: _edge_gather[(1,)](x, y, 28, 12, BN=16, ROWS=8))
    assert work.flops == 84
    assert work.bytes == 672
    torch.testing.assert_close(y[0::4], 2 * x[0::4])


@triton.jit
def _int_reductions(x_ptr, out_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + r)
    tl.store(out_ptr + r, tl.cumsum(v, 0) + tl.sum(v, 0))


def test_an_integer_reduction_and_scan_are_no_flops() -> None:
    # integer sums and scans are index arithmetic to the counter, as integer adds are:
    # 0 FLOPs; bytes 64 int32 read and written, 512
    x = torch.arange(64, dtype=torch.int32)
    out = torch.empty_like(x)
    work = rl.trace(lambda: _int_reductions[(1,)](x, out, BLOCK=64))
    assert work.flops == 0 and work.bytes == 512
    torch.testing.assert_close(out, torch.cumsum(x, 0).int() + x.sum().int())


@triton.jit
def _gather_by_loaded_index(x_ptr, i_ptr, out_ptr, n, m, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + r, mask=r < n, other=0.0)
    index = tl.load(i_ptr + r, mask=r < m, other=0)
    tl.store(out_ptr + r, tl.gather(x, index, 0) * 2.0, mask=r < m)


def test_a_gather_by_a_masked_index_holds_data_where_both_do() -> None:
    """x's first 40 of 64 lanes hold data; the index is loaded for 30 lanes, 0, 2, ..., 58:
    a lane holds data where its index lane was loaded and points at x's data (0..38: 20
    lanes). The scale counts 20 FLOPs; bytes 40·4 + 30·4 read, 30·4 written."""
    x = torch.randn(40)
    index = torch.arange(0, 60, 2, dtype=torch.int32)
    out = torch.empty(30)
    work = rl.trace(lambda: _gather_by_loaded_index[(1,)](x, index, out, 40, 30, BLOCK=64))
    assert work.flops == 20
    assert work.bytes == 40 * 4 + 30 * 4 + 30 * 4


@pytest.mark.parametrize(("named", "expected"), [("BF16x3", ("bf16", 3)),
                                                 ("BF16x6", ("bf16", 6)),
                                                 ("TF32x3", ("tf32", 3)),
                                                 # a name this table does not know yet:
                                                 # one fp32 product, the plain dot's
                                                 ("FUTURE", ("fp32", 1))])
def test_the_passes_of_the_input_precisions_triton_names(named: str,
                                                         expected: tuple[str, int]) -> None:
    """Triton's ``InputPrecision`` names bf16x3 (three bf16 products: hi·hi, hi·lo, lo·hi)
    and bf16x6 (six, the lo·lo and the second-order terms too), which the 3.9 interpreter
    refuses on a CPU (its ``tl.dot`` takes tf32, tf32x3 and ieee): an fp32 dot with either
    is priced at those passes, read from the precision's name as a GPU launch gives it."""
    import types

    fp32 = types.SimpleNamespace(scalar="fp32")
    operand = types.SimpleNamespace(dtype=fp32)
    given = types.SimpleNamespace(name=f"InputPrecision.{named}")
    assert _triton_count._dot_precision(operand, operand, given) == expected


@triton.jit
def _m_and_k_packed_fp4(a_ptr, sa_ptr, b_ptr, sb_ptr, c_ptr, M: tl.constexpr,
                        N: tl.constexpr, K: tl.constexpr, ROWS: tl.constexpr,
                        COLS: tl.constexpr):
    ra, rk, rb = tl.arange(0, M // 2), tl.arange(0, K), tl.arange(0, K // 2)
    rm, rn, rs = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K // 32)
    a = tl.load(a_ptr + ra[:, None] * K + rk[None, :], mask=ra[:, None] < ROWS // 2)
    b = tl.load(b_ptr + rb[:, None] * N + rn[None, :], mask=rn[None, :] < COLS)
    sa = tl.load(sa_ptr + rm[:, None] * (K // 32) + rs[None, :])
    sb = tl.load(sb_ptr + rn[:, None] * (K // 32) + rs[None, :])
    c = tl.dot_scaled(a, sa, "e2m1", b, sb, "e2m1", lhs_k_pack=False)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c)


def test_fp4_operands_packed_each_their_own_way() -> None:
    """A packed along M (16 x 64 bytes, rows past 10 masked: 20 rows), B along K (32 x 32
    bytes, columns past 24 masked): each operand's packing read as its own, 2·20·24·64 =
    61,440 fp4 FLOPs. Bytes: A 10·64, B 32·24, the scales 64 + 64, C 32·32·4."""
    m = n = 32
    k = 64
    a = torch.randint(0, 255, (m // 2, k), dtype=torch.uint8)
    b = torch.randint(0, 255, (k // 2, n), dtype=torch.uint8)
    sa = torch.full((m, k // 32), 127, dtype=torch.uint8)
    sb = torch.full((n, k // 32), 127, dtype=torch.uint8)
    c = torch.empty(m, n)
    work = rl.trace(lambda: _m_and_k_packed_fp4[(1,)](a, sa, b, sb, c, M=m, N=n, K=k,
                                                       ROWS=20, COLS=24))
    assert _by_dtype(work) == {("matrix", "fp4"): 2 * 20 * 24 * 64}
    assert work.bytes == 640 + 768 + 128 + 4096


def test_a_store_of_another_shape_and_a_tensor_without_t_are_left_alone() -> None:
    """Two guards for what Triton 3.9 never does: a store whose lanes are not the shape of
    a dot it carries marks the dot as moved (all its products kept), and a tensor class the
    interpreter gives no ``T`` property is not patched."""
    import types

    import numpy as np

    dot = _triton_count._Dot("tf32", np.ones((4, 4)))
    _triton_count._stored(types.SimpleNamespace(_rl_dots=(dot,)), np.ones(16, dtype=bool))
    assert dot.escaped and dot.stored is None

    class Plain:  # no T
        pass

    calls = []
    _triton_count._transposing(lambda tensor, scope: calls.append(tensor))(Plain, None)
    assert calls == [Plain] and "T" not in Plain.__dict__


@triton.jit
def _k_loop(a_ptr, b_ptr, c_ptr, M: tl.constexpr, K: tl.constexpr, BK: tl.constexpr):
    r, rk = tl.arange(0, M), tl.arange(0, BK)
    acc = tl.zeros((M, M), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + r[:, None] * K + k + rk[None, :])
        b = tl.load(b_ptr + (k + rk[:, None]) * M + r[None, :])
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + r[:, None] * M + r[None, :], acc)


def test_a_k_loop_keeps_one_running_product(monkeypatch: pytest.MonkeyPatch) -> None:
    """``acc = tl.dot(a, b, acc)`` over 8 K steps keeps one running product, not one a
    step (a long loop's memory stays one tile's): one product noted, 2·16·16·64 = 32,768
    FLOPs (tf32)."""
    made: list[object] = []
    plain = _triton_count._Dot

    class Counted(plain):  # type: ignore[misc,valid-type]
        __slots__ = ()

        def __init__(self, *args: object) -> None:
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(_triton_count, "_Dot", Counted)
    a, b, c = torch.randn(16, 64), torch.randn(64, 16), torch.empty(16, 16)
    work = rl.trace(lambda: _k_loop[(1,)](a, b, c, M=16, K=64, BK=8))
    assert _by_dtype(work)[("matrix", "tf32")] == 2 * 16 * 16 * 64
    assert len(made) == 1
