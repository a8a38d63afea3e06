"""A Triton kernel library nobody here wrote, traced with no formula: Liger-Kernel 0.8.5's
ops, forward and backward, in Triton's interpreter on the CPU.

Each launch's FLOPs and bytes are checked against a hand count from the kernel's source
(liger_kernel/ops/<op>.py), derived beside the number with the counter's conventions
(docs/trace.md): one FLOP per valid lane of each floating-point operation (``tl.sigmoid``
is 1 / (1 + exp(-x)): 4), a reduction n - 1 for n elements, a scalar operation of a
program 1; bytes the distinct addresses loaded plus those stored, masked lanes left out.
fp32 throughout (4 B an element). Row widths of 100 make the kernels' blocks (128 wide)
padded, so the masks are exercised.
"""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
pytest.importorskip("liger_kernel")

import triton.language as tl  # noqa: E402

import pytest_roofline as rl  # noqa: E402

R, H, V = 4, 100, 100
N = R * H  # elements of a (4, 100) tensor


@pytest.fixture(autouse=True)
def _interpreted_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    """Compiled Triton passes a Python float argument as an fp32 scalar; Triton 3.9's
    interpreter passes the float itself, on which Liger's ``eps.to(tl.float32)`` fails.
    Here the interpreter does what the compiler does (the kernels' work is unchanged)."""
    if not triton.knobs.runtime.interpret:
        pytest.skip("Liger's kernels run here in Triton's interpreter only")
    import numpy as np
    import triton.language as tl
    from triton.runtime import interpreter

    original = interpreter._implicit_cvt

    def convert(arg: Any) -> Any:
        if isinstance(arg, float):
            handle = interpreter.TensorHandle(np.array([arg], dtype=np.float32), tl.float32)
            return tl.tensor(handle, tl.float32)
        return original(arg)

    monkeypatch.setattr(interpreter, "_implicit_cvt", convert)


def _launches(fn: Any, *args: Any) -> list[tuple[str, float, float]]:
    """(kernel, FLOPs, bytes) of each Triton launch of *fn*, counted with no formula: the
    strict tracer refuses any launch it could not count."""
    work = rl.Tracer(strict=True)(fn, *args)
    assert not work.unknown
    triton_names = {k.split(": ")[0].removeprefix("Triton ") for k in work.assumed}
    return [(k.name, float(k.flops), float(k.bytes)) for k in work.kernels
            if k.name in triton_names]


def _close(got: tuple[str, float, float], name: str, flops: float, nbytes: float,
           rel: float = 0.0) -> None:
    assert got[0] == name
    assert got[1] == pytest.approx(flops, rel=rel) and got[2] == pytest.approx(nbytes, rel=rel)


def _backward(apply: Any) -> Any:
    def run(*args: Any) -> None:
        out = apply(*args)
        out.backward(torch.ones_like(out))
    return run


def _rows(*, requires_grad: bool = True, width: int = H) -> Any:
    return torch.randn(R, width, requires_grad=requires_grad)


def test_swiglu_forward_and_in_place_backward() -> None:
    from liger_kernel.ops.swiglu import LigerSiLUMulFunction

    fwd, bwd = _launches(_backward(LigerSiLUMulFunction.apply), _rows(), _rows())
    # forward: a·gate (1), sigmoid (negate, exp, add, divide: 4), silu's multiply (1),
    # times b (1) = 7 per element; reads a and b, writes c
    _close(fwd, "_swiglu_forward_kernel", 7 * N, 3 * N * 4)
    # backward: a·gate 1, sigmoid 4, silu 1, db = dc·silu 1, da = dc·(silu·(1-sig)+sig)·b·gate
    # 6 = 13; reads dc, a, b and writes da into a and db into b (in place: 5 tensors' worth)
    _close(bwd, "_swiglu_backward_kernel", 13 * N, 5 * N * 4)


def test_softmax_forward_and_backward() -> None:
    from liger_kernel.ops.softmax import LigerSoftmaxFunction

    fwd, bwd = _launches(_backward(LigerSoftmaxFunction.apply), _rows())
    # forward per row of 100: max 99, subtract 100, exp 100, sum 99, divide 100 = 498
    _close(fwd, "_softmax_single_block_forward_kernel", R * (5 * H - 2), 2 * N * 4)
    # backward per row: dy·y 100, sum 99, dy - dot 100, y·(...) 100 = 399; reads dy, y
    _close(bwd, "_softmax_single_block_backward_kernel", R * (4 * H - 1), 3 * N * 4)


def test_relu_squared_forward_and_backward() -> None:
    from liger_kernel.ops.relu_squared import LigerReLUSquaredFunction

    fwd, bwd = _launches(_backward(LigerReLUSquaredFunction.apply), _rows())
    _close(fwd, "_relu_squared_forward_kernel", 2 * N, 2 * N * 4)  # max, square
    _close(bwd, "_relu_squared_backward_kernel", 3 * N, 3 * N * 4)  # max, ·2, ·relu


def test_rope_forward_and_backward_in_place() -> None:
    from liger_kernel.ops.rope import LigerRopeFunction

    q = torch.randn(1, 2, 8, 16, requires_grad=True)  # batch, heads, sequence, head dim
    k = torch.randn(1, 2, 8, 16, requires_grad=True)
    cos, sin = torch.randn(1, 8, 16), torch.randn(1, 8, 16)
    def run(q: Any, k: Any) -> None:
        q_out, k_out = LigerRopeFunction.apply(q, k, cos, sin)
        (q_out.sum() + k_out.sum()).backward()

    fwd, bwd = _launches(run, q, k)
    # 2 · 256 elements of q and k: each half rotated as x1·cos - x2·sin (3 FLOPs an element);
    # q and k read and written in place (4 · 256 · 4 B), and half of each 16-wide cos and
    # sin row read (2 · 8 rows · 8 · 4 B = 512 B)
    _close(fwd, "_triton_rope", 3 * 512, 4 * 256 * 4 + 512)
    _close(bwd, "_triton_rope", 3 * 512, 4 * 256 * 4 + 512)


def test_kl_div_forward_and_backward() -> None:
    from liger_kernel.ops.kl_div import LigerKLDivLossFunction

    pred = torch.randn(R, V).log_softmax(-1).requires_grad_()
    target = torch.randn(R, V).log_softmax(-1)
    fwd, bwd = _launches(lambda p, t: LigerKLDivLossFunction.apply(p, t, "batchmean", True)
                         .backward(), pred, target)
    # log target: exp(t)·(t - y) is 3 per element, the row's sum 99, added to the running
    # sum that starts at a constant 0 (a move, no FLOP) = 399 a row; reads y and t, writes
    # one loss a row (4 · 4 B)
    _close(fwd, "_kldiv_kernel_forward", R * (3 * V + V - 1), 2 * R * V * 4 + R * 4)
    # -exp(t): exp, negate = 2 per element; reads t, writes the gradient
    _close(bwd, "_kldiv_kernel_backward", 2 * R * V, 2 * R * V * 4)


def test_jsd_loss_and_gradient_in_one_launch() -> None:
    from liger_kernel.ops.jsd import LigerJSDFunction

    x = torch.randn(R, V).log_softmax(-1).requires_grad_()
    y = torch.randn(R, V).log_softmax(-1)
    (launch,) = _launches(lambda x, y: LigerJSDFunction.apply(x, y).backward(), x, y)
    # beta = 0.5, per element: max 1, two shifts 2, beta·exp and (1-beta)·exp 4, their sum
    # 1, log and add 2, exp(X), exp(Y) 2, beta·P and (1-beta)·Q 2, the loss's two
    # products, two differences and sum 5, dX 2, scaled loss and dX 2 = 23; 1 / n a row
    # (1): 2301 a row. Reads X and Y, writes the loss and dX per element.
    _close(launch, "_jsd_kernel", R * (23 * V + 1), 4 * R * V * 4)


def test_total_variation_distance() -> None:
    from liger_kernel.ops.tvd import LigerTVDLossFunction

    p = torch.randn(R, V).softmax(-1).requires_grad_()
    q = torch.randn(R, V).softmax(-1)
    (launch,) = _launches(lambda p, q: LigerTVDLossFunction.apply(p, q).backward(), p, q)
    # per element: 0.5·|p - q| 3, p == q and p > q 2 = 5; a row: 0.5·scale and -0.5·scale
    # 2, the sum 99, the running sum from a constant 0 (a move), loss·scale 1: 6·100 + 2 =
    # 602. Reads p and q; writes the gradient per element and one loss a row.
    _close(launch, "_tv_distance_kernel", R * (6 * V + 2), 3 * R * V * 4 + R * 4)


def test_cross_entropy_computes_its_gradient_in_place() -> None:
    from liger_kernel.ops.cross_entropy import LigerCrossEntropyFunction

    vocab = 1000
    logits = torch.randn(R, vocab, requires_grad=True)
    target = torch.randint(0, vocab, (R,))
    (launch,) = _launches(lambda x, t: LigerCrossEntropyFunction.apply(x, t, None)[0]
                          .backward(), logits, target)
    # per logit: online max 1, (x - m)·log2(e), exp2 and the sum 4; the gradient pass
    # (x - m)·log2(e), exp2, / d 4, the z-loss term's multiply and add 2, + (-eps) 1 and
    # / n 1 = 13 a logit (the row's ~26 scalar operations are within the 2%). Bytes:
    # the row read once (the second pass and the target's logit re-read it) and written
    # in place, the target (int64) read and the row's loss written.
    _close(launch, "liger_cross_entropy_kernel", 13 * R * vocab,
           R * (2 * vocab * 4 + 8 + 4), rel=0.02)


@pytest.fixture
def _rsqrt(monkeypatch: pytest.MonkeyPatch) -> None:
    """Liger's norms call libdevice's ``rsqrt``, whose functions are stubs in Triton 3.9's
    interpreter; ``tl.math.rsqrt`` is the same one operation, and the interpreter runs it."""
    import liger_kernel.ops.layer_norm as layer_norm
    import liger_kernel.ops.rms_norm as rms_norm

    monkeypatch.setattr(rms_norm, "rsqrt", _interpreted_rsqrt)
    monkeypatch.setattr(layer_norm, "rsqrt", _interpreted_rsqrt)


@triton.jit
def _interpreted_rsqrt(x):  # type: ignore[no-untyped-def]
    return tl.math.rsqrt(x)


@pytest.mark.usefixtures("_rsqrt")
def test_rms_norm_forward_and_in_place_backward() -> None:
    from liger_kernel.ops.rms_norm import LigerRMSNormFunction

    fwd, bwd = _launches(_backward(lambda x, w: LigerRMSNormFunction.apply(x, w, 1e-6)),
                         _rows(), torch.randn(H, requires_grad=True))
    # forward per row: x·x 100, sum 99, / n 1, + eps 1, rsqrt 1, x·rstd 100, offset + w
    # 100, · 100 = 5·100 + 2; reads x and w (w once: every row re-reads it), writes y and
    # one rstd a row
    _close(fwd, "_rms_norm_forward_kernel", R * (5 * H + 2), 2 * N * 4 + H * 4 + R * 4)
    # backward, one program on a CPU (Liger's program count is the SM count, 1 off CUDA):
    # w + offset 100 once; per row m = dy·w, rstd·m, m·x, its sum 99, -(1/n)·rstd·rstd·sum
    # (5 scalar operations), ·x, rstd·(...), +=, and dw's x·rstd, dy·(...), += : 10·100 + 4,
    # less dw's first += (into its zeroed accumulator: a move) 100.
    # dX is written over dY (in place): dY read and written, x, w, rstd read, dW written
    _close(bwd, "_rms_norm_backward_kernel", 100 + R * (10 * H + 4) - H,
           N * 4 * 2 + N * 4 + H * 4 + R * 4 + H * 4)


@pytest.mark.usefixtures("_rsqrt")
def test_layer_norm_forward_and_backward() -> None:
    from liger_kernel.ops.layer_norm import LigerLayerNormFunction

    def run(x: Any, w: Any, b: Any) -> None:
        y = LigerLayerNormFunction.apply(x, w, b, 1e-6)
        y.backward(torch.ones_like(y))

    fwd, bwd = _launches(run, _rows(), torch.randn(H, requires_grad=True),
                         torch.randn(H, requires_grad=True))
    # forward per row: sum 99, / n 1, x - mean 100, square 100, sum 99, / n 1, + eps 1,
    # rsqrt 1, ·rstd ·w +b 300 = 7·100 + 2; reads x, w, b, writes y, a mean and an rstd
    _close(fwd, "_layer_norm_forward_kernel", R * (7 * H + 2),
           2 * N * 4 + 2 * H * 4 + 2 * R * 4)
    # backward (one program): per row 11 elementwise operations a column (x - mean, ·rstd,
    # w·dy, x̂·wdy, x̂·c1, + c2, wdy - (...), ·rstd, dy·x̂, dW +=, dB +=), two sums 2·99,
    # two / n: 13·100 a row, less the first row's dW += and dB += (into zeroed
    # accumulators: moves) 2·100; reads x, dy, w, mean, rstd, writes dx, dW, dB
    _close(bwd, "_layer_norm_backward_kernel", R * 13 * H - 2 * H,
           3 * N * 4 + H * 4 + 2 * R * 4 + 2 * H * 4)


def test_a_trace_true_test_of_a_liger_op_needs_no_formula(pytester: pytest.Pytester) -> None:
    """The same counts through the plugin: a strict ``trace=True`` test passes with no
    formula, its workload the launches' (forward and backward) and the gradient seed."""
    import json

    from test_plugin import ISOLATE, plugin_args

    pytester.makepyfile(test_liger="""
import pytest
import torch
from liger_kernel.ops.swiglu import LigerSiLUMulFunction

@pytest.mark.roofline(hw="h100", trace=True, strict=True)
def test_swiglu():
    a = torch.randn(4, 100, requires_grad=True)
    b = torch.randn(4, 100, requires_grad=True)
    c = LigerSiLUMulFunction.apply(a, b)
    c.backward(torch.ones_like(c))
""")
    result = pytester.runpytest_inprocess(*plugin_args(), *ISOLATE, "--roofline-json=r.json")
    result.assert_outcomes(passed=1)
    (record,) = json.loads((pytester.path / "r.json").read_text())["results"]
    # the launches of test_swiglu_forward_and_in_place_backward: 7·N + 13·N FLOPs, 3·N·4 +
    # 5·N·4 bytes; ones_like writes the seed (N·4 B); the randn fills are left out
    assert record["flops"] == 20 * N
    assert record["bytes"] == 3 * N * 4 + 5 * N * 4 + N * 4
    assert not record.get("unknown")
