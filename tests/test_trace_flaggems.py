"""A kernel library's own kernels traced with no formula: FlagGems 5.0.2's sum, mm, addmm and
softmax (flag_gems/ops/{sum,mm,addmm,softmax}.py, Apache-2.0), launched directly in Triton's
interpreter on the CPU, against hand counts derived from their source.

FlagGems cannot run here as a library: importing ``flag_gems`` detects the vendor's device
(none on a CPU: RuntimeError; ``GEMS_VENDOR=nvidia`` gets past that, then its tuning cache
asks CUDA for the device's name unless ``FLAGGEMS_DB_URL`` names a database) and wraps every
kernel in its ``LibEntry`` launcher, which drives compiled kernels only (under
``TRITON_INTERPRET=1`` it fails at import on the interpreter's functions). So the
kernels' own source is taken from the installed package, unchanged, without the package
being imported (:func:`_flaggems`), and launched with the grid and block sizes FlagGems'
wrappers choose (its ``runtime/backend/_nvidia`` configurations and heuristics, derived
beside each launch). The counting conventions are docs/trace.md's: one FLOP per valid lane
of each floating-point operation, a reduction n - 1 for n elements, an accumulator's first
add (into a constant 0, a max with a constant -inf) a move; bytes the distinct addresses
loaded plus those stored, masked lanes left out. Every shape leaves the last block masked.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")

from flop_split import by_dtype  # noqa: E402

import pytest_roofline as rl  # noqa: E402

if importlib.util.find_spec("flag_gems") is None:
    pytest.skip("flag_gems is not installed (pip install --no-deps flag-gems==5.0.2)",
                allow_module_level=True)
if importlib.metadata.version("flag_gems") != "5.0.2":
    pytest.skip(f"the hand counts are FlagGems 5.0.2's source, not "
                f"{importlib.metadata.version('flag_gems')}'s", allow_module_level=True)
if not triton.knobs.runtime.interpret:
    pytest.skip("interpreter mode only (TRITON_INTERPRET=1 before triton is imported)",
                allow_module_level=True)


def _flaggems(folder: Path, source: str, *names: str, **scope: object) -> types.ModuleType:
    """The ``@triton.jit`` functions *names* of FlagGems' *source* file, verbatim, under
    their ``@triton.jit`` alone, in a module of their own written to *folder*.

    ``flag_gems/__init__.py`` would run the vendor detection and ``LibEntry`` (above), and a
    submodule cannot be imported without its package's ``__init__``: the file is read, not
    imported. Each function's text is copied from its ``def`` to its last line; the
    library's launch decorators (``@libentry()``, ``@libtuner``, ``@triton.heuristics``)
    are dropped, their choices made by the tests. *scope* gives the names the kernels use
    from elsewhere in FlagGems (``tle``)."""
    spec = importlib.util.find_spec("flag_gems")
    assert spec is not None and spec.origin is not None
    path = Path(spec.origin).parent / source
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    found = {node.name: (node, jit[0]) for node in ast.parse(text).body
             if isinstance(node, ast.FunctionDef)
             and (jit := [ast.unparse(d) for d in node.decorator_list
                          if ast.unparse(d).split("(")[0] == "triton.jit"])}
    missing = sorted(set(names) - set(found))
    assert not missing, f"{source} has no @triton.jit {missing}"
    parts = ["import triton", "import triton.language as tl", ""]
    for name in names:
        node, jit = found[name]
        parts += ["", f"@{jit}", *lines[node.lineno - 1:node.end_lineno], ""]
    module_name = "_flaggems_" + source.removesuffix(".py").replace("/", "_")
    file = folder / f"{module_name}.py"
    file.write_text("\n".join(parts), encoding="utf-8")
    loader_spec = importlib.util.spec_from_file_location(module_name, file)
    assert loader_spec is not None and loader_spec.loader is not None
    module = importlib.util.module_from_spec(loader_spec)
    module.__dict__.update(scope)
    sys.modules[module_name] = module
    loader_spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gems(tmp_path_factory: pytest.TempPathFactory) -> types.SimpleNamespace:
    folder = tmp_path_factory.mktemp("flag_gems")
    tle = _flaggems(folder, "utils/triton_lang_extension.py", "program_id")
    return types.SimpleNamespace(
        sum=_flaggems(folder, "ops/sum.py", "sum_kernel_1", "sum_kernel_2",
                      "sum_dim_kernel_inner", "sum_dim_kernel_non_inner", tle=tle),
        mm=_flaggems(folder, "ops/mm.py", "prev_multiple_of", "mm_kernel_general", tle=tle),
        addmm=_flaggems(folder, "ops/addmm.py", "addmm_kernel", tle=tle),
        softmax=_flaggems(folder, "ops/softmax.py", "prev_multiple_of",
                          "softmax_kernel_inner", "softmax_kernel_non_inner",
                          "softmax_backward_kernel_inner", tle=tle))


def _by_dtype(work: rl.Workload) -> dict[tuple[str, str], float]:
    assert not work.unknown
    return by_dtype(work)


def _launches(work: rl.Workload) -> dict[str, tuple[float, float]]:
    """(FLOPs, bytes) of each kernel launched, counted in the interpreter."""
    assert not work.unknown
    assert all(v.endswith("counted in the interpreter") for v in dict(work.assumed))
    return {k.name: (float(k.flops), float(k.bytes)) for k in work.kernels}


# -- sum ---------------------------------------------------------------------------------------


def test_sum_two_stage_reduction(gems: types.SimpleNamespace) -> None:
    """``flag_gems.sum`` of 1,100 fp32 elements: block = next_power_of_2(ceil(sqrt(1100))) =
    64, mid = cdiv(1100, 64) = 18 partial sums (the last block 1100 - 17·64 = 12 valid of
    64), block_mid = next_power_of_2(18) = 32.

    Stage 1, 18 programs: each tl.sum of its valid lanes, n - 1: 1,100 - 18 = 1,082 FLOPs;
    reads 1,100·4 B, writes 18 partials: 4,400 + 72 = 4,472 B. Stage 2, one program over the
    18 partials (32 lanes, 14 masked): 17 FLOPs; reads 72 B, writes the 4 B result: 76 B.
    Together 1,099 = n - 1 adds, as a sum of n."""
    x = torch.randn(1100)
    mid, out = torch.empty(18), torch.empty([])

    def run() -> None:
        gems.sum.sum_kernel_1[(18, 1, 1)](x, mid, 1100, 64)
        gems.sum.sum_kernel_2[(1, 1, 1)](mid, out, 18, 32)

    work = rl.trace(run)
    assert _launches(work) == {"sum_kernel_1": (1082, 4472), "sum_kernel_2": (17, 76)}
    assert _by_dtype(work) == {("vector", "fp32"): 1099}
    torch.testing.assert_close(out, x.sum(), rtol=1e-5, atol=1e-4)


def test_sum_along_a_long_row_accumulates_in_a_loop(gems: types.SimpleNamespace) -> None:
    """``flag_gems.sum(x, dim=1)`` of 2 rows of 33,000: the inner kernel, one program a row,
    with the "softmax_inner" heuristic's TILE_N = 4,096 (rows over 32·1,024 elements), so
    not one tile per program: ``sum += inp`` over 9 chunks, the last 33,000 - 8·4,096 = 232
    valid. Per row: the first add into the zeroed accumulator is a move, 7 full chunks add
    7·4,096 = 28,672, the last 232 (the accumulator keeps its 4,096 lanes), the final tl.sum
    of 4,096 lanes 4,095: 32,999 = n - 1. Bytes: 2·33,000·4 read, 2·4 written = 264,008."""
    x = torch.randn(2, 33_000)
    out = torch.empty(2)

    def run() -> None:
        gems.sum.sum_dim_kernel_inner[(2, 1, 1)](out, x, 2, 33_000, TILE_N=4096,
                                                 ONE_TILE_PER_CTA=False)

    work = rl.trace(run)
    assert _launches(work) == {"sum_dim_kernel_inner": (2 * 32_999, 264_008)}
    torch.testing.assert_close(out, x.sum(1), rtol=1e-5, atol=1e-3)



def test_sum_along_a_middle_dimension_in_a_loop(gems: types.SimpleNamespace) -> None:
    """``flag_gems.sum(x, dim=1)`` of a 1 x 1,100 x 1,001 tensor: M = 1, N = 1,100 summed, K
    = 1,001 after it. The "softmax_non_inner" heuristics on a 132-SM H100: TILE_K doubles
    while cdiv(1,001, TILE_K) blocks exceed a wave (1,001, 501, 251, then 126 < 132): 8;
    TILE_N = cdiv(8192, 8) = 1,024 < 1,100, so each program loops over 2 chunks of rows (the
    second 76 valid), and the last of the 126 column blocks holds 1 column of 8. Each of the
    1,001 columns: N - 1 = 1,099 adds (the first chunk's add into the zeroed tile a move, the
    second's 76 rows, the tile's column sum 1,023): 1,100,099. Bytes: 1,101,100·4 read,
    1,001·4 written: 4,408,404."""
    x = torch.randn(1, 1100, 1001)
    out = torch.empty(1, 1, 1001)

    def run() -> None:
        gems.sum.sum_dim_kernel_non_inner[(1, 126, 1)](out, x, 1, 1100, 1001, TILE_N=1024,
                                                       TILE_K=8, ONE_TILE_PER_CTA=False)

    work = rl.trace(run)
    assert _launches(work) == {"sum_dim_kernel_non_inner": (1001 * 1099, 4_408_404)}
    torch.testing.assert_close(out, x.sum(1, keepdim=True), rtol=1e-4, atol=1e-3)


# -- mm ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("dtype", "precision", "size"),
                         [(torch.float32, "fp32", 4), (torch.float16, "fp16", 2)])
def test_mm_counts_exactly_2mnk(gems: types.SimpleNamespace, dtype: torch.dtype,
                                precision: str, size: int) -> None:
    """``flag_gems.mm`` of 100 x 90 by 90 x 70 (the general kernel: not a transposed pair,
    not Ampere's stream-K), with the first of FlagGems' "mm" configurations (64 x 64 x 64)
    and GROUP_M = 8: cdiv(100, 64)·cdiv(70, 64) = 4 programs, each a 64 x 64 tile of
    output. Rows and columns past the edge are wrapped (``rm % M``), loaded and multiplied,
    and thrown away by the masked store; K = 90 is one unmasked 64-wide step and a peeled
    one with 26 valid of 64. Matrix FLOPs: 2·100·70·90 = 1,260,000 exactly, at the operands'
    precision (fp32 with ``allow_tf32=False``: ieee fp32, not tf32; fp16: fp16).

    ``acc += tl.dot(...)``: the first add, into the zeroed accumulator, is a move; the
    peeled step's is one fp32 add on each lane of the 4 tiles, 4·64·64 = 16,384, counted as
    the kernel's vector work (the tiles' every lane). Bytes: the wrapped rows re-read rows
    already read, so A and B once each, C written once: (9,000 + 6,300 + 7,000)·size."""
    a = torch.randn(100, 90).to(dtype)
    b = torch.randn(90, 70).to(dtype)
    c = torch.empty(100, 70, dtype=dtype)

    def run() -> None:
        grid = (triton.cdiv(100, 64) * triton.cdiv(70, 64),)
        gems.mm.mm_kernel_general[grid](a, b, c, 100, 70, 90, a.stride(0), a.stride(1),
                                        b.stride(0), b.stride(1), c.stride(0), c.stride(1),
                                        BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", precision): 2 * 100 * 70 * 90,
                               ("vector", "fp32"): 4 * 64 * 64}
    assert work.bytes == (100 * 90 + 90 * 70 + 100 * 70) * size
    assert work.kernels[0].name == "mm_kernel_general"
    ref = a.float() @ b.float()
    torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=5e-2 if size == 2 else 1e-4)



def test_addmm_epilogue_counts_the_lanes_that_hold_data(gems: types.SimpleNamespace) -> None:
    """``flag_gems.addmm(bias, a, b)`` of a 70-wide bias row, 100 x 90 by 90 x 70, with the
    first of FlagGems' "addmm" configurations, 128 x 256 x 64: one program, A's rows past 100
    and B's columns past 70 masked (padding, not wrapped as in mm), K in 2 steps (64, then
    26 valid). Matrix FLOPs 2·100·70·90 = 1,260,000 at ieee fp32 (``allow_tf32=False``).
    Vector: the second step's ``accumulator +=`` (the first is a move), then ``acc·alpha +
    bias·beta``, each on the 100·70 lanes that hold data (the rest of the 128 x 256 tile is
    padding rows and columns): 4·7,000 = 28,000. Bytes: A 36,000, B 25,200, the bias row
    broadcast over the rows (stride 0: its 70 addresses) 280, C 28,000: 89,480."""
    a, b, bias = torch.randn(100, 90), torch.randn(90, 70), torch.randn(70)
    out = torch.empty(100, 70)
    full = bias.broadcast_to(out.shape)

    def run() -> None:
        grid = (triton.cdiv(100, 128), triton.cdiv(70, 256))
        gems.addmm.addmm_kernel[grid](a, b, full, out, 1.0, 1.0, 100, 70, 90, a.stride(0),
                                      a.stride(1), b.stride(0), b.stride(1), full.stride(0),
                                      full.stride(1), out.stride(0), out.stride(1),
                                      BLOCK_SIZE_M=128, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64)

    work = rl.trace(run)
    assert _by_dtype(work) == {("matrix", "fp32"): 1_260_000, ("vector", "fp32"): 28_000}
    assert work.bytes == 89_480
    torch.testing.assert_close(out, a @ b + bias, rtol=1e-4, atol=1e-4)


# -- softmax -----------------------------------------------------------------------------------


def test_softmax_inner_one_tile_per_row(gems: types.SimpleNamespace) -> None:
    """``flag_gems.softmax(x, dim=-1)`` of 4 rows of 100: the inner kernel with TILE_N =
    next_power_of_2(100) = 128, one tile a row (28 lanes masked). Per row: max 99, x - m
    100, exp 100, sum 99, e / z 100 = 498; 4 rows 1,992. Bytes: 2·400·4 = 3,200."""
    x = torch.randn(4, 100)
    out = torch.empty_like(x)

    def run() -> None:
        gems.softmax.softmax_kernel_inner[(4, 1, 1)](out, x, 4, 100, TILE_N=128,
                                                     ONE_TILE_PER_CTA=True)

    work = rl.trace(run)
    assert _launches(work) == {"softmax_kernel_inner": (4 * 498, 3200)}
    torch.testing.assert_close(out, x.softmax(-1))


def test_softmax_inner_online_over_a_long_row(gems: types.SimpleNamespace) -> None:
    """2 rows of 33,000: TILE_N = 4,096 (over 32·1,024), the online softmax in four loops.
    Per row:

    - 8 unmasked chunks: m_new = max(m, x) 1 (a move the first time: m starts at a constant
      -inf), m_new == -inf 1, z·exp(m - m_new) 3, exp(x - m_new) 2, the add 1 = 8 a lane, 7
      the first time: 63·4,096 = 258,048.
    - the masked chunk (232 valid): the max, x - m_new, its exp and the add on the 232
      loaded lanes (4·232: on the 3,864 padded ones x - m_new is -inf - m, padding, not the
      accumulator's data), the compare and z·exp(m - m_new) on the accumulator's 4,096
      (4·4,096): 17,312.
    - the row's statistics: max 4,095, m - m_r, exp, the multiply 3·4,096, sum 4,095: 20,478.
    - the output, the masked chunk first: x - m, exp, / z on 232 lanes (696), then 8 full
      chunks 3·4,096 each (98,304).

    394,838 a row, 789,676 for 2 (counting the padded lanes' exp and add as data, 2·3,864 a
    row more, would be 1.96% over). Bytes: x read once (the second pass re-reads the same
    addresses), the output written: 2·2·33,000·4."""
    x = torch.randn(2, 33_000)
    out = torch.empty_like(x)

    def run() -> None:
        gems.softmax.softmax_kernel_inner[(2, 1, 1)](out, x, 2, 33_000, TILE_N=4096,
                                                     ONE_TILE_PER_CTA=False)

    work = rl.trace(run)
    row = 63 * 4096 + (4 * 232 + 4 * 4096) + (2 * 4095 + 3 * 4096) + (3 * 232 + 8 * 3 * 4096)
    assert row == 394_838
    assert _launches(work) == {"softmax_kernel_inner": (2 * row, 2 * 2 * 33_000 * 4)}
    torch.testing.assert_close(out, x.softmax(-1))


# the 2 padded columns of the last block are -inf throughout: m - m is NaN there, stored nowhere
@pytest.mark.filterwarnings("ignore:invalid value encountered in subtract:RuntimeWarning")
def test_softmax_non_inner_masks_the_last_column_block(gems: types.SimpleNamespace) -> None:
    """``flag_gems.softmax(x, dim=1)`` of a 4 x 50 x 90 tensor: M = 4, N = 50 (the softmax
    dimension), K = 90 after it. FlagGems' "softmax_non_inner" heuristics on a 132-SM H100:
    TILE_K doubles while M·cdiv(K, TILE_K) blocks exceed one wave (360, 180, then 92 < 132):
    4; TILE_N = cdiv(8192, 4) = 2,048 >= 50, so one tile a program; grid (4, cdiv(90, 4) =
    23), the last column block 2 of 4 valid. Each of the 4·90 columns of 50: max 49,
    x - m 50, exp 50, sum 49, e / z 50 = 248: 89,280. Bytes: 2·18,000·4 = 144,000."""
    x = torch.randn(4, 50, 90)
    out = torch.empty_like(x)

    def run() -> None:
        gems.softmax.softmax_kernel_non_inner[(4, 23, 1)](out, x, 4, 50, 90, TILE_N=2048,
                                                          TILE_K=4, ONE_TILE_PER_CTA=True)

    work = rl.trace(run)
    assert _launches(work) == {"softmax_kernel_non_inner": (4 * 90 * 248, 144_000)}
    torch.testing.assert_close(out, x.softmax(1))



def test_softmax_backward_inner_in_row_blocks(gems: types.SimpleNamespace) -> None:
    """The gradient of ``flag_gems.softmax(x, dim=-1)`` for 50 rows of 100, with the first of
    FlagGems' autotuned "softmax_inner" configurations, TILE_N = 32: TILE_M = 1024 // 32 =
    32 rows a program (the "softmax_backward_inner" heuristic), 2 programs, the second's rows
    18 valid of 32, and 32 < 100, so both passes loop over 4 column chunks (the last 4 valid
    of 32). Per row: y·dy 100, the running sum's adds 100 - 32 (the first chunk's a move),
    the tile's row sum 31, then dy - s and y·(...) 2·100: 4·100 - 1 = 399; 50 rows 19,950.
    Bytes: y and dy read once (the second pass re-reads them), the gradient written:
    3·50·100·4 = 60,000."""
    x = torch.randn(50, 100)
    y = x.softmax(-1)
    dy = torch.randn(50, 100)
    dx = torch.empty_like(x)

    def run() -> None:
        gems.softmax.softmax_backward_kernel_inner[(2, 1, 1)](y, dy, dx, 50, 100, TILE_M=32,
                                                              TILE_N=32,
                                                              ONE_TILE_PER_CTA=False)

    work = rl.trace(run)
    assert _launches(work) == {"softmax_backward_kernel_inner": (50 * 399, 60_000)}
    torch.testing.assert_close(dx, y * (dy - (y * dy).sum(-1, keepdim=True)))
