"""A third kernel library traced with no formula: fla-core 0.6.0's L2 norm, forward and
backward (``fla/modules/norm/l2norm.py``, MIT), in Triton's interpreter on the CPU, against
hand counts derived from its source.

The kernels sit under fla's own autotuner (``CachedAutotuner``, over Triton's): with more
than one configuration it benchmarks each, which needs a GPU driver (on the CPU, with or
without this project, Triton's ``do_bench`` raises "0 active drivers"). So each kernel is
launched through the autotuner's public ``fn`` (the jit function it tunes) with one of its
own configurations, ``BT = 32`` rows a program, as the autotuner would launch its choice.
The counting conventions are docs/trace.md's: one FLOP per valid lane of each floating-point
operation, a reduction n - 1 for n elements; bytes the distinct addresses loaded plus those
stored, masked lanes left out. T = 100 rows do not fill the last program's 32 (4 programs,
28 rows masked), and D = 70 columns do not fill BD = 128.
"""

from __future__ import annotations

import importlib.metadata

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
pytest.importorskip("fla", reason="fla-core is not installed (pip install fla-core==0.6.0)")

import pytest_roofline as rl  # noqa: E402

if importlib.metadata.version("fla-core") != "0.6.0":
    pytest.skip(f"the hand counts are fla-core 0.6.0's source, not "
                f"{importlib.metadata.version('fla-core')}'s", allow_module_level=True)

from fla.modules.l2norm import l2norm_bwd_kernel, l2norm_fwd_kernel  # noqa: E402

T, D, BD, BT = 100, 70, 128, 32
EPS = 1e-6


def test_l2norm_forward_is_counted_from_its_source() -> None:
    """``b_rstd = 1 / sqrt(sum(x * x, 1) + eps); y = x * b_rstd[:, None]`` over the valid
    T x D lanes: x * x T·D, the row sums T·(D - 1), + eps, sqrt and 1 / T each, the scale
    T·D: 3·T·D + 2·T = 21,000 + 200 = 21,200 FLOPs (fp32: the input is fp32, the casts to
    fp32 moves). Bytes: x read 4·T·D, y written 4·T·D, rstd written 4·T: 8·7,000 + 400 =
    56,400."""
    x = torch.randn(T, D, generator=torch.Generator().manual_seed(0))
    y, rstd = torch.empty_like(x), torch.empty(T)

    def run() -> None:
        l2norm_fwd_kernel.fn[(triton.cdiv(T, BT),)](
            x=x, y=y, rstd=rstd, eps=EPS, T=T, D=D, BD=BD, NB=1, BT=BT)

    work = rl.trace(run)
    assert work.flops == 3 * T * D + 2 * T == 21_200
    assert work.bytes == 8 * T * D + 4 * T == 56_400
    assert {(k.unit, k.dtype) for k in work.kernels} == {("vector", "fp32")}
    assert "counted in the interpreter" in " ".join(work.assumed)
    torch.testing.assert_close(y, x / torch.sqrt((x * x).sum(1, keepdim=True) + EPS))


def test_l2norm_backward_is_counted_from_its_source() -> None:
    """``dx = dy * rstd - sum(dy * y, 1) * y * rstd``: dy * rstd, dy * y, the two products
    and the subtract T·D each (5·T·D), the row sums T·(D - 1): 35,000 + 6,900 = 41,900
    FLOPs. Bytes: y and dy read and dx written 4·T·D each, rstd read 4·T: 84,000 + 400 =
    84,400."""
    gen = torch.Generator().manual_seed(1)
    y, dy = torch.randn(T, D, generator=gen), torch.randn(T, D, generator=gen)
    rstd, dx = torch.rand(T, generator=gen) + 0.5, torch.empty(T, D)

    def run() -> None:
        l2norm_bwd_kernel.fn[(triton.cdiv(T, BT),)](
            y=y, rstd=rstd, dy=dy, dx=dx, eps=EPS, T=T, D=D, BD=BD, NB=1, BT=BT)

    work = rl.trace(run)
    assert work.flops == 5 * T * D + T * (D - 1) == 41_900
    assert work.bytes == 12 * T * D + 4 * T == 84_400
    expected = dy * rstd[:, None] - (dy * y).sum(1, keepdim=True) * y * rstd[:, None]
    torch.testing.assert_close(dx, expected)


def test_the_same_launch_on_meta_is_counted_by_replay() -> None:
    """What a GPU suite hands the tracer (no data to run on): the forward replayed once in
    the interpreter counts what the interpreted launch counts."""
    x = torch.empty(T, D, device="meta")
    y, rstd = torch.empty_like(x), torch.empty(T, device="meta")

    def run() -> None:
        l2norm_fwd_kernel.fn[(triton.cdiv(T, BT),)](
            x=x, y=y, rstd=rstd, eps=EPS, T=T, D=D, BD=BD, NB=1, BT=BT)

    work = rl.Tracer(strict=True)(run)
    assert (work.flops, work.bytes) == (21_200, 56_400)
    assert "counted by replay" in " ".join(work.assumed)
