"""One-line changes to counting and judging rules that no other test saw, each pinned by a
closed-form expectation derived beside it (a hand count, a datasheet, the rule's own
statement in the docs). One section per rule:

1. the Triton counter's FLOPs for fused multiply-add and clamp, and a dot's products counted
   on the lanes an atomic writes;
2. the device table a jax.profiler trace's device plane is read against;
3. in-place updates (``dynamic-update-slice``, ``scatter``) run on their own, not fused;
4. a scatter's combiner (add, multiply, max, min: one FLOP an update; a plain set: none);
5. a profile row's spread (IQR / median) taken from four calls up, 0 under four;
6. the spread a measured verdict carries into the breakdown it prints.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pytest_roofline as rl
from pytest_roofline.hardware import Hardware

# -- 1. Triton: tl.fma is 2 FLOPs a lane, tl.clamp 2 (a max and a min) ---------------------------


def _triton() -> Any:
    torch = pytest.importorskip("torch")
    triton = pytest.importorskip("triton")
    if not triton.knobs.runtime.interpret:
        pytest.skip("interpreter mode only (TRITON_INTERPRET=1 before triton is imported)")
    return torch


def _triton_kernels() -> tuple[Any, Any]:
    import triton
    import triton.language as tl

    @triton.jit
    def fma_kernel(x_ptr, y_ptr, z_ptr, out_ptr, n, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        mask = r < n
        x = tl.load(x_ptr + r, mask=mask)
        y = tl.load(y_ptr + r, mask=mask)
        z = tl.load(z_ptr + r, mask=mask)
        tl.store(out_ptr + r, tl.fma(x, y, z), mask=mask)

    @triton.jit
    def clamp_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        r = tl.arange(0, BLOCK)
        mask = r < n
        x = tl.load(x_ptr + r, mask=mask)
        tl.store(out_ptr + r, tl.clamp(x, -0.5, 0.5), mask=mask)

    return fma_kernel, clamp_kernel


def test_a_triton_fma_is_two_flops_a_valid_lane() -> None:
    """tl.fma(x, y, z) on 100 valid lanes of a 128 block, fp32: a multiply and an add a lane
    (the usual convention, as torch.addcmul's 2 and a GEMM's 2 a multiply-accumulate), so
    2·100 = 200 FLOPs, the 28 masked lanes none. Bytes: x, y, z read and out written,
    100 lanes of 4 B each: 4·400 = 1,600 B."""
    torch = _triton()
    fma_kernel, _ = _triton_kernels()
    x, y, z = (torch.full((128,), v) for v in (2.0, 3.0, 1.0))
    out = torch.zeros(128)

    work = rl.trace(lambda: fma_kernel[(1,)](x, y, z, out, 100, BLOCK=128))
    assert float(work.flops) == 2 * 100
    assert float(work.bytes) == 4 * 100 * 4
    assert {(k.unit, k.dtype) for k in work.kernels if float(k.flops)} == {("vector", "fp32")}
    assert float(out[:100].min()) == 7.0 and float(out[100:].abs().sum()) == 0.0


def test_a_triton_clamp_is_two_flops_a_valid_lane() -> None:
    """tl.clamp(x, lo, hi) on 100 valid lanes of 128, fp32: min(max(x, lo), hi), two
    comparisons a lane: 2·100 = 200 FLOPs. Bytes: 100·4 read + 100·4 written = 800 B."""
    torch = _triton()
    _, clamp_kernel = _triton_kernels()
    x = torch.linspace(-1.0, 1.0, 128)
    out = torch.zeros(128)

    work = rl.trace(lambda: clamp_kernel[(1,)](x, out, 100, BLOCK=128))
    assert float(work.flops) == 2 * 100
    assert float(work.bytes) == 2 * 100 * 4
    torch.testing.assert_close(out[:100], x[:100].clamp(-0.5, 0.5))


def test_a_dot_added_atomically_counts_the_products_the_atomic_writes() -> None:
    """Split-K's epilogue: a 16 x 16 x 16 fp32 tl.dot over rows loaded at ``rm % M`` (no mask:
    rows 10..15 repeat rows 0..5) and tl.atomic_add into C under ``rows < 10``. The products
    counted are those the atomic writes, as for a plain store: 2·10·16·16 = 5,120 matrix
    FLOPs (not the 8,192 of all 16 rows), plus the atomic's add a valid lane, 10·16 = 160.
    Bytes, distinct addresses: A's 10 rows 640 B, B 1,024 B, C's 160 lanes read and written
    640 + 640 B: 2,944 B."""
    torch = _triton()
    import triton
    import triton.language as tl

    @triton.jit
    def split_k(a_ptr, b_ptr, c_ptr, M, BM: tl.constexpr, K: tl.constexpr, N: tl.constexpr):
        rm, rk, rn = tl.arange(0, BM), tl.arange(0, K), tl.arange(0, N)
        a = tl.load(a_ptr + (rm % M)[:, None] * K + rk[None, :])
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
        acc = tl.dot(a, b, input_precision="ieee")
        tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm < M)[:, None])

    a, b = torch.randn(10, 16), torch.randn(16, 16)
    c = torch.zeros(10, 16)
    work = rl.trace(lambda: split_k[(1,)](a, b, c, 10, BM=16, K=16, N=16))
    by_unit = {(k.unit, k.dtype): float(k.flops) for k in work.kernels if float(k.flops)}
    assert by_unit == {("matrix", "fp32"): 2 * 10 * 16 * 16, ("vector", "fp32"): 10 * 16}
    assert float(work.bytes) == 10 * 16 * 4 + 16 * 16 * 4 + 2 * 10 * 16 * 4
    torch.testing.assert_close(c, a @ b, rtol=1e-4, atol=1e-4)


# -- 2. the chip a jax.profiler device plane names (vendor, compute capability, memory) -----------


def _plane(vendor: str, cap: tuple[int, int], memory: float) -> dict[str, Any]:
    """A device plane's stats as jax.profiler writes them, without ``core_count``: the
    table of (vendor, capability) -> memory sizes decides alone."""
    return {"device_vendor": vendor, "compute_cap_major": cap[0], "compute_cap_minor": cap[1],
            "memory_size": memory}


@pytest.mark.parametrize(("stats", "chip"), [
    # NVIDIA H20: Hopper (9.0), 96 GB HBM3 (NVIDIA's H20 brief, specs/hardware/h20.yaml);
    # its driver reports 96 GiB less its share, ~101e9 B: 5% from 96, 26% from 80
    (_plane("NVIDIA", (9, 0), 101e9), "h20"),
    # T4: Turing (7.5), 16 GB GDDR6 (NVIDIA's T4 datasheet); it reports 15,843,721,216 B
    (_plane("NVIDIA", (7, 5), 15_843_721_216), "t4"),
    # V100: Volta (7.0), 16 and 32 GB (NVIDIA's V100 datasheet): one chip spec for both
    (_plane("NVIDIA", (7, 0), 16.9e9), "v100"),
    (_plane("NVIDIA", (7, 0), 34.1e9), "v100"),
    # MI300X: gfx942 (9.4), 192 GB HBM3 (AMD's datasheet), reported as 192 GiB = 206e9 B:
    # 7% from 192, 20% from 256
    (_plane("AMD", (9, 4), 206_158_430_208), "mi300x"),
    # MI325X: gfx942 (9.4), 256 GB HBM3E (AMD's datasheet), reported as 256 GiB = 275e9 B:
    # 7% from 256, 43% from 192
    (_plane("AMD", (9, 4), 274_877_906_944), "mi325x"),
])
def test_a_device_plane_without_compute_units_is_read_by_its_table(stats: dict[str, Any],
                                                                   chip: str) -> None:
    from pytest_roofline.profiling.jax.jax_trace import chip_of

    assert chip_of(stats).name == chip


def test_a_device_planes_memory_is_read_in_decimal_gigabytes() -> None:
    """The catalog's sizes are decimal GB (the products' datasheets), and ``memory_size`` is
    bytes: 88.8e9 B is 88.8 GB, 7.5% from the H20's 96 and 11% from the H100's 80, so the H20
    (read as GiB, 82.7, it would be the H100's 80)."""
    from pytest_roofline.profiling.jax.jax_trace import chip_of

    assert chip_of(_plane("NVIDIA", (9, 0), 88.8e9)).name == "h20"


# -- 3./4. in-place updates and scatter combiners in a compiled program ----------------------------
# A compiled program written field by field as XLA's HloModuleProto (the wire format the
# jax.profiler trace carries), as tests/test_profile_hlo.py writes them.

from test_profile_hlo import S32, _ins, _msg  # noqa: E402


def _combiner(cid: int, opcode: str) -> bytes:
    """A scatter's ``to_apply``: f32[] (p0, p1) -> *opcode*(p0, p1), its root last."""
    return _msg((1, f"combine_{opcode}"), (5, cid), *((2, i) for i in (
        _ins(100 * cid, "p0", "parameter", ()),
        _ins(100 * cid + 1, "p1", "parameter", (), (9, 1)),
        _ins(100 * cid + 2, "r", opcode, (), operands=(100 * cid, 100 * cid + 1)))))


def _program(combine: str = "add", table_rows: int = 1024) -> Any:
    """An entry computation running, unfused:

    - ``dus``: dynamic-update-slice(buf f32[1024,1024], upd f32[8,1024], i, i);
    - ``scatter``: scatter(table f32[table_rows,8], idx s32[256,1], rows f32[256,8])
      combining with *combine* (its ``to_apply``, computation 3)."""
    from pytest_roofline.profiling.jax.hlo import parse_module

    entry = _msg((1, "main"), (5, 1), *((2, i) for i in (
        _ins(10, "buf", "parameter", (1024, 1024)),
        _ins(11, "upd", "parameter", (8, 1024), (9, 1)),
        _ins(12, "i", "parameter", (), (9, 2), element=S32),
        _ins(13, "dus", "dynamic-update-slice", (1024, 1024), operands=(10, 11, 12, 12)),
        _ins(14, "table", "parameter", (table_rows, 8), (9, 3)),
        _ins(15, "idx", "parameter", (256, 1), (9, 4), element=S32),
        _ins(16, "rows", "parameter", (256, 8), (9, 5)),
        _ins(17, "scatter", "scatter", (table_rows, 8), (38, [3]), operands=(14, 15, 16)))))
    module = _msg((1, "jit_f"), (3, _combiner(3, combine)), (3, entry), (5, 1), (6, 1))
    return parse_module(_msg((1, module)), "jit_f(1)")


def _price(module: Any, name: str) -> Any:
    from pytest_roofline.profiling.jax.hlo_pricing import price

    priced = price(module, module.by_name[name])
    assert not isinstance(priced, str), priced
    return priced


def test_an_unfused_dynamic_update_slice_moves_its_update_only() -> None:
    """XLA updates the buffer in place (it reuses the operand's buffer): the 4 MiB buffer is
    neither read nor written whole. Read: the update, 8·1024·4 = 32,768 B, and the index
    once (an s32: 4 B, read once though passed twice); written: the update's 32,768 B.
    Total 65,540 B; no FLOP (a move)."""
    work = _price(_program(), "dus")
    assert float(work.bytes) == 8 * 1024 * 4 + 4 + 8 * 1024 * 4
    assert float(work.flops) == 0


def test_an_unfused_scatter_moves_its_updates_and_indices_not_its_buffer() -> None:
    """scatter into a 1024 x 8 fp32 table (32,768 B), updated in place: it reads the 256
    indices (256·4 = 1,024 B) and the 256 x 8 updates (8,192 B) and writes the updates'
    8,192 B (fewer than the table holds). Total 17,408 B."""
    work = _price(_program(), "scatter")
    assert float(work.bytes) == 256 * 4 + 256 * 8 * 4 + 256 * 8 * 4


def test_an_unfused_scatter_into_fewer_rows_writes_at_most_its_buffer() -> None:
    """256 updates of 8 fp32 summed into a 16 x 8 table (a segment sum): the updates combine
    in the table, so it writes at most the table's 16·8·4 = 512 B, not the updates' 8,192.
    Read: 1,024 B of indices and 8,192 B of updates. Total 9,728 B."""
    work = _price(_program(table_rows=16), "scatter")
    assert float(work.bytes) == 256 * 4 + 256 * 8 * 4 + 16 * 8 * 4


@pytest.mark.parametrize(("combine", "flops"), [
    # each combiner runs once an updated element: 256 x 8 = 2,048 FLOPs
    ("add", 256 * 8), ("multiply", 256 * 8), ("maximum", 256 * 8), ("minimum", 256 * 8),
    # a combiner that returns the update (a plain x.at[i].set(v)): a move, no FLOP
    ("parameter", 0),
])
def test_a_scatter_counts_a_flop_an_update_for_each_arithmetic_combiner(
        combine: str, flops: int) -> None:
    module = _program(combine) if combine != "parameter" else _set_program()
    assert float(_price(module, "scatter").flops) == flops


def _set_program() -> Any:
    """The program of :func:`_program` whose scatter's ``to_apply`` returns its second
    parameter (the update): jax's ``x.at[i].set(v)``."""
    from pytest_roofline.profiling.jax.hlo import parse_module

    setter = _msg((1, "combine_set"), (5, 3), *((2, i) for i in (
        _ins(300, "p0", "parameter", ()),
        _ins(301, "p1", "parameter", (), (9, 1)))))
    entry = _msg((1, "main"), (5, 1), *((2, i) for i in (
        _ins(14, "table", "parameter", (1024, 8)),
        _ins(15, "idx", "parameter", (256, 1), (9, 1), element=S32),
        _ins(16, "rows", "parameter", (256, 8), (9, 2)),
        _ins(17, "scatter", "scatter", (1024, 8), (38, [3]), operands=(14, 15, 16)))))
    module = _msg((1, "jit_f"), (3, setter), (3, entry), (5, 1), (6, 1))
    return parse_module(_msg((1, module)), "jit_f(1)")


ROOMY = Hardware(name="roomy-cpu", memory_bandwidth=1e12, memory_capacity=16e9,
                 matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")


@pytest.mark.parametrize(("update", "flops"), [
    ("add", 256 * 8), ("multiply", 256 * 8), ("max", 256 * 8), ("min", 256 * 8),
    ("set", 0)])
def test_a_jitted_scatter_is_priced_by_its_combiner(update: str, flops: int) -> None:
    """x.at[i].<update>(v) of 256 rows of 8 fp32 into a 1024 x 8 table on XLA:CPU (run as a
    fusion around the scatter): one FLOP an updated element for add, multiply, max and min
    (2,048), none for set; bytes as the unfused scatter above: 1,024 B of indices, 8,192 B
    of updates read, 8,192 B written, the table updated in place: 17,408 B."""
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    table = jnp.zeros((1024, 8))
    idx = jnp.arange(256, dtype=jnp.int32) * 4  # distinct rows
    rows = jnp.ones((256, 8))
    fn = jax.jit(lambda t, i, v: getattr(t.at[i], update)(v))
    profile = rl.Profiler(hw=ROOMY, repeats=2)(fn, table, idx, rows)
    [row] = [r for r in profile.rows if "scatter" in r.op]
    assert row.flops == flops
    assert row.bytes == 256 * 4 + 2 * 256 * 8 * 4


# -- 5. a profile row's spread: IQR / median of its calls' times, from four calls up --------------

#: A GPU with round figures: fp32 10 TFLOP/s, 1 TB/s.
GPU = Hardware(name="round-gpu", memory_bandwidth=1e12, memory_capacity=80e9,
               matrix={"fp32": 1e13}, vector={"fp32": 1e13}, default_dtype="fp32")


def _mm_trace(tmp_path: Path, durations: list[float]) -> Path:
    """A Kineto trace of one aten::mm (1024^3, fp32) a call, each launching one kernel of
    the given duration (us)."""
    import gzip
    import json

    n = 1024
    events: list[dict[str, Any]] = []
    for i, dur in enumerate(durations):
        start = i * 10_000
        events += [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": start,
             "dur": 100, "args": {"Input Dims": [[n, n], [n, n]],
                                  "Input type": ["float", "float"]}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
             "ts": start + 10, "dur": 2, "args": {"correlation": i + 1}},
            {"ph": "X", "cat": "kernel", "name": "void gemm_kernel<float>(Params)", "pid": 0,
             "tid": 7, "ts": start + 1000, "dur": dur, "args": {"correlation": i + 1}}]
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump({"traceEvents": events}, handle)
    return path


@pytest.mark.parametrize(("durations", "spread"), [
    # under four calls no spread is read (0), however far apart the calls are
    ([300.0], 0.0), ([300.0, 600.0], 0.0), ([300.0, 400.0, 600.0], 0.0),
    # four calls 300, 400, 500, 600 us: linear quantiles at (n - 1)·q = 0.75, 1.5, 2.25:
    # Q1 375, median 450, Q3 525; IQR / median = 150 / 450 = 1/3
    ([300.0, 400.0, 500.0, 600.0], 1 / 3),
    # five calls 300..700: at 1, 2, 3: Q1 400, median 500, Q3 600: 200 / 500 = 0.4
    ([300.0, 400.0, 500.0, 600.0, 700.0], 0.4),
])
def test_a_profile_rows_spread_needs_four_calls(tmp_path: Path, durations: list[float],
                                                spread: float) -> None:
    pytest.importorskip("torch")
    profile = rl.read_trace(_mm_trace(tmp_path, durations), hw=GPU)
    [row] = profile.rows
    assert row.count == len(durations)
    assert row.spread == pytest.approx(spread, rel=1e-12, abs=0.0)


# -- 6. the spread a measured verdict carries into the breakdown it prints ------------------------
# 10^9 fp32 elements, two read and one written: 12 GB at 1 TB/s, a 12 ms bound (its 10^9
# FLOPs take 0.1 ms at 10 TFLOP/s). Measured 11 ms: 1.0 ms under the bound. Its allowance is
# the larger of 5% (TOLERANCE) and the spread, capped at 10% (SPREAD_CAP), of 11 ms:
# with no spread 0.55 ms (11.55 < 12: faster than the bound), with a spread of 0.3 the
# capped 1.1 ms (12.1 >= 12: at the bound within noise). 12 / 11 = 109%.

FAST = 11e-3


def _judged(spread: float, *, unknown: bool = False, regime: str | None = None) -> Any:
    from pytest_roofline.judging.marker import parse
    from pytest_roofline.judging.verdict import judge

    work = rl.ops.elementwise(10**9, inputs=2, outputs=1, dtype="fp32")
    if unknown:
        work = rl.Workload(name=work.name, kernels=list(work.kernels), unknown={"my_op": 1})
    wanted: dict[str, Any] = {"hw": GPU}
    if regime is not None:
        wanted["regime"] = regime
    expectation = parse(wanted)
    results = [rl.analyze(work, GPU, measured=FAST)]
    assert float(results[0].time) == pytest.approx(12e-3, rel=1e-12)
    return judge(expectation, work, analyzed=lambda: results, spread=spread)


def _text(checks: Any) -> str:
    from pytest_roofline.judging.verdict import breakdown

    return breakdown(checks)


def test_the_breakdown_judges_a_measurement_with_its_spread() -> None:
    quiet, noisy = _judged(0.0), _judged(0.3)
    assert [c.spread for c in noisy.checks] == [0.3]
    assert "measured 11 ms: faster than the bound: 109%" in _text(quiet.checks)
    assert "measured 11 ms: at the bound within noise: 109%" in _text(noisy.checks)


def test_a_check_keeps_its_spread_through_added_failures_and_unknown_ops() -> None:
    """A hook's failures (Check.with_failures) and the note naming ops without a formula
    (a workload's ``unknown``) rebuild the check: its spread stays, and so its breakdown."""
    noisy = _judged(0.3)
    [more] = [c.with_failures(["a hook's line"]) for c in noisy.checks]
    assert more.spread == 0.3
    assert "at the bound within noise" in _text([more])
    # the note is added to a failed line: the memory-bound work (intensity 1/12 FLOP/B)
    # expected compute-bound fails
    unknown = _judged(0.3, unknown=True, regime="compute")
    [check] = unknown.checks
    assert check.failures and "my_op" in check.failures[-1]
    assert check.spread == 0.3
    assert "at the bound within noise" in _text(unknown.checks)
