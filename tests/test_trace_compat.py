"""The private torch and JAX APIs the tracers use, one test each, in the compat modules
(``tracing/_torch_compat.py``, ``tracing/_jax_compat.py``): each fails when a release moves or
changes what it reads. And no private torch or JAX attribute used anywhere else in the package
(read from the code's tokens: strings and comments may name them)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_roofline"
COMPAT = {"_torch_compat.py", "_jax_compat.py", "_cuda_compat.py"}

#: What only the compat modules may use: a private module or attribute of torch, jax or
#: jaxlib (``torch._subclasses``, ``torch.utils._python_dispatch``, ``jax._src``), and the
#: private members the tracers read of framework objects.
_PRIVATE_PATH = re.compile(r"\b(?:torch|jax|jaxlib)(?:\.\w+)*\.(?:_[A-Za-z]\w*|core\b)")
_PRIVATE_MEMBERS = re.compile(
    r"\.(?:_schema|_should_skip_dynamo|_resolve_process_group|_disable_dynamo|source_info|"
    r"name_stack|eval_jaxpr|grid_mapping|block_mappings|index_map_jaxpr|array_aval|"
    r"debug_info)\b|(?<![.\w])(?:is_fake|_resolve_process_group|_should_skip_dynamo)\b")


def _code(path: Path) -> list[tuple[int, str]]:
    """(line, code) of a module: its tokens, strings and comments left out, dotted names
    written whole (``torch . _C`` as ``torch._C``)."""
    lines: dict[int, list[str]] = {}
    for token in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        if token.type in (tokenize.NAME, tokenize.OP):
            lines.setdefault(token.start[0], []).append(token.string)
    return [(n, " ".join(parts).replace(" . ", ".")) for n, parts in sorted(lines.items())]


def test_no_private_torch_or_jax_api_outside_the_compat_modules() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name in COMPAT:
            continue
        for line, code in _code(path):
            if _PRIVATE_PATH.search(code) or _PRIVATE_MEMBERS.search(code):
                found.append(f"{path.relative_to(PACKAGE)}:{line}: {code}")
    assert not found, "\n".join(found)


def test_the_check_sees_a_private_use() -> None:
    # the patterns above catch what they are for (a check that cannot fail checks nothing)
    for code in ("from torch.utils._python_dispatch import TorchDispatchMode",
                 "names = [a.name for a in func._schema.arguments]", "jax._src.core",
                 "scope = str(eqn.source_info.name_stack)", "jax.core.eval_jaxpr(j, c)",
                 "if is_fake(t):"):
        assert _PRIVATE_PATH.search(code) or _PRIVATE_MEMBERS.search(code), code
    assert not _PRIVATE_PATH.search("torch.nn.functional.softmax(x)")
    assert not _PRIVATE_MEMBERS.search("if C.is_fake(t):")


# -- torch ------------------------------------------------------------------------------------


def test_torch_argument_names_come_from_the_schema() -> None:
    torch = pytest.importorskip("torch")
    from pytest_roofline.tracing import _torch_compat as C

    assert C.argument_names(torch.ops.aten.addmm.default)[:3] == ["self", "mat1", "mat2"]
    names = C.argument_names(torch.ops.aten._scaled_dot_product_flash_attention.default)
    assert names[:3] == ["query", "key", "value"] and "is_causal" in names


def test_torch_schema_arguments_and_the_keywords_an_op_writes() -> None:
    torch = pytest.importorskip("torch")
    from pytest_roofline.tracing import _torch_compat as C

    args = C.arguments(torch.ops.aten.addmm.default)
    assert [a.name for a in args] == ["self", "mat1", "mat2", "beta", "alpha"]
    assert args[3].kwarg_only and args[3].has_default_value() and str(args[0].type) == "Tensor"
    assert C.written_keywords(torch.ops.aten.mul.out) == {"out"}
    assert C.written_keywords(torch.ops.aten.mul.Tensor) == set()


def test_torch_dispatch_mode_stays_out_of_dynamo() -> None:
    # torch wraps a mode's __torch_dispatch__ in torch._disable_dynamo (functools.wraps: a
    # __wrapped__ attribute) unless _should_skip_dynamo says no; if torch renames the hook,
    # the override stops working and this fails
    pytest.importorskip("torch")
    from pytest_roofline.tracing import _torch_compat as C

    class Mode(C.DispatchMode):  # type: ignore[misc]
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            return func(*args, **(kwargs or {}))

    assert not hasattr(Mode.__dict__["__torch_dispatch__"], "__wrapped__")
    assert issubclass(C.DispatchMode, C.TorchDispatchMode)


def test_torch_is_fake_tells_fake_tensors_apart() -> None:
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode

    from pytest_roofline.tracing import _torch_compat as C

    with FakeTensorMode():
        fake = torch.empty(2, 2)
    assert C.is_fake(fake) and not C.is_fake(torch.empty(2, 2, device="meta"))
    assert callable(C.process_group)  # resolved against a process group: test_trace_mesh


def test_torch_profiler_active_sees_both_profilers() -> None:
    """profile() refuses to start inside another torch profiler by this answer; if torch
    renames ``torch.autograd._profiler_enabled``, this fails."""
    torch = pytest.importorskip("torch")
    from torch.profiler import profile

    from pytest_roofline.tracing import _torch_compat as C

    assert not C.profiler_active()
    with profile():
        assert C.profiler_active()
    with torch.autograd.profiler.profile():
        assert C.profiler_active()
    assert not C.profiler_active()


# -- JAX --------------------------------------------------------------------------------------


def test_jax_literals_scopes_and_sub_programs() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp

    from pytest_roofline.tracing import _jax_compat as C

    def f(x):
        with jax.named_scope("block"):
            return jax.jit(lambda y: y * 2.0)(x) + 1.0

    closed = jax.make_jaxpr(f)(jnp.ones(4))
    (call, add) = closed.jaxpr.eqns
    assert any(k in call.params for k in C.CALLS)  # the jitted helper's sub-program
    assert [C.is_var(v) for v in add.invars] == [True, False]  # x·2 + the constant 1.0
    assert C.scope(add) == "block"
    assert C.evaluate(jax.make_jaxpr(lambda i: (i + 1, 0))(3), 3) == [4, 0]


def test_jax_pallas_call_params() -> None:
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax.experimental import pallas as pl

    from pytest_roofline.tracing import _jax_compat as C

    def copy_kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...]

    def f(x):
        spec = pl.BlockSpec((128, 256), lambda i, j: (i, 0))
        return pl.pallas_call(copy_kernel, out_shape=jax.ShapeDtypeStruct((512, 256),
                                                                          x.dtype),
                              grid=(4, 2), in_specs=[spec], out_specs=spec,
                              interpret=True)(x)

    (eqn,) = jax.make_jaxpr(f)(jax.ShapeDtypeStruct((512, 256), jnp.float32)).jaxpr.eqns
    params = eqn.params
    assert C.pallas_name(params) == "copy_kernel"
    assert C.pallas_grid(params) == (4, 2)
    blocks = C.pallas_blocks(params)
    assert [(b.array_bytes, b.block_bytes) for b in blocks] == [(512 * 256 * 4,
                                                                 128 * 256 * 4)] * 2
    assert blocks[0].index_at is not None and blocks[0].index_at(3, 1) == (3, 0)


def test_torch_dynamo_skip_higher_order_ops_and_implicit_decompositions() -> None:
    torch = pytest.importorskip("torch")
    from pytest_roofline.tracing import _torch_compat as C

    def plain(x: object) -> object:
        return x

    C.skip_dynamo(plain.__code__)  # dynamo's frame strategy, set without importing dynamo
    assert plain(3) == 3
    assert C.is_higher_order(torch.ops.higher_order.cond)
    assert not C.is_higher_order(torch.ops.aten.mm.default)
    assert C.has_implicit_decomposition(torch.ops.aten.matmul.default)
    assert not C.has_implicit_decomposition(torch.ops.aten.mm.default)
    assert C.LOCAL_SCALAR_DENSE.name() == "aten::_local_scalar_dense"
    assert C.TO_COPY in C.HOST_COPIES and len(C.HOST_COPIES) == 3


def test_torch_scaled_mm_the_fp8_gemm_the_gpu_calibration_runs() -> None:
    # measuring/_cuda_compat.py: torch has no public fp8 GEMM; the calibration's fp8 peak goes
    # through torch._scaled_mm(a, b, scale_a, scale_b, out_dtype=). It must still exist and
    # take those arguments (checked on meta tensors: no GPU needed to read the schema).
    import torch

    from pytest_roofline.measuring import _cuda_compat as C

    fn = C.scaled_mm(torch)
    assert callable(fn)
    a = torch.empty(32, 16, device="meta", dtype=torch.float8_e4m3fn)
    b = torch.empty(64, 16, device="meta", dtype=torch.float8_e4m3fn).t()
    one = torch.ones((), device="meta", dtype=torch.float32)
    out = fn(a, b, one, one, out_dtype=torch.bfloat16)
    assert tuple(out.shape) == (32, 64) and out.dtype == torch.bfloat16


# -- triton -----------------------------------------------------------------------------------


def _triton_kernels() -> tuple[object, object, object]:
    """tests/data/triton_canary_kernels.py: what the launch counter wraps, and a kernel
    that calls a ``@triton.jit`` helper."""
    import importlib
    import sys

    sys.path.insert(0, str(Path(__file__).parent / "data"))
    module = importlib.import_module("triton_canary_kernels")
    return module.lanes, module.dot, module.helped


def test_triton_interpreter_the_launch_counter_relies_on() -> None:
    """What tracing/_triton_count.py needs of Triton's interpreter, checked by what it
    counts (not by one release's method names and signatures, which move between releases
    while the counts stay right): each kind of operation it wraps, counted to its hand
    count. When a release changes how the interpreter runs one of them so that the counter
    no longer sees it, this fails first, naming the kind."""
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    import triton

    if not triton.knobs.runtime.interpret:
        pytest.skip("the counter counts in interpreter mode (tests/conftest.py sets it)")
    import pytest_roofline as rl

    lanes, dot, _ = _triton_kernels()
    n = 200  # of a block of 256: the masked lanes are padding
    x, y, out, scan = torch.rand(n), torch.rand(n), torch.empty(n), torch.empty(n)
    total = torch.zeros(1)
    work = rl.trace(lambda x, y: lanes[(1,)](x, y, out, scan, total, n, BLOCK=256), x, y)
    # per valid lane: multiply, add, exp (3); the scan n, the sum n - 1, the atomic add 1
    assert work.flops == 3 * n + n + (n - 1) + 1, "elementwise, scan, reduction or atomic"
    # x, y loaded; out and scan stored; total read and written by the atomic
    assert work.bytes == (2 * n + 2 * n) * 4 + 2 * 4, "masked loads, stores or atomics"
    torch.testing.assert_close(out, torch.exp(x * y + x))
    a, b, c = torch.rand(16, 16), torch.rand(16, 16), torch.empty(16, 16)
    work = rl.trace(lambda a, b: dot[(1,)](a, b, c, S=16), a, b)
    assert work.flops == 2 * 16 * 16 * 16 and work.bytes == 3 * 16 * 16 * 4, "tl.dot"


def test_triton_interpreter_replays_a_compiled_kernel() -> None:
    """tracing/_triton_compat.py: a compiled-mode kernel (``JITFunction``) runs in the
    interpreter through its interpreted twin, its ``@triton.jit`` helpers (its own,
    ``tl.cdiv``) too, and Triton is put back as it was afterwards."""
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    import triton
    from triton.runtime.jit import JITFunction

    from pytest_roofline.tracing import _triton_compat as TC

    _, _, helped = _triton_kernels()
    compiled = JITFunction(getattr(helped, "fn", helped))
    was = (JITFunction.__call__, triton.knobs.runtime.interpret)
    x = torch.arange(300, dtype=torch.float32)
    with TC.interpreting():
        assert triton.knobs.runtime.interpret
        TC.interpreted(compiled).run(x, 300, grid=(1,), warmup=False, BLOCK=512)
    assert (JITFunction.__call__, triton.knobs.runtime.interpret) == was
    torch.testing.assert_close(x, 2.0 * torch.arange(300, dtype=torch.float32))
    assert TC.interpreted(compiled) is TC.interpreted(compiled)  # one twin a function


def test_triton_autotuner_benchmarks_each_configuration_in_its_trial_method() -> None:
    """``_triton_compat.TUNER_TRIAL``: the Autotuner method each configuration's benchmark
    runs in (its launches and hook copies, unrecorded while a trace watches)."""
    pytest.importorskip("triton")
    import inspect

    from triton.runtime.autotuner import Autotuner

    from pytest_roofline.tracing import _triton_compat as TC

    trial = Autotuner.__dict__[TC.TUNER_TRIAL]
    assert "config" in inspect.signature(trial).parameters
    assert TC.TUNER_TRIAL in inspect.getsource(Autotuner.run)  # run benchmarks through it


def test_torch_launches_wrap_tritons_higher_order_op() -> None:
    """``_torch_compat.launch_triton_hop``: the HOP's dense implementation launches its
    kernel (on meta tensors the HOP itself launches nothing)."""
    pytest.importorskip("triton")
    torch = pytest.importorskip("torch")
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table

    from pytest_roofline.tracing import _torch_compat as C

    _, _, helped = _triton_kernels()
    x = torch.ones(100)
    C.launch_triton_hop({
        "kernel_idx": kernel_side_table.add_kernel(helped),
        "constant_args_idx": kernel_side_table.add_constant_args({"n": 100, "BLOCK": 128}),
        "grid": [(1, 1, 1)], "tma_descriptor_metadata": {}, "kwargs": {"x_ptr": x}})
    torch.testing.assert_close(x, torch.full((100,), 2.0))


def test_torch_real_tensors_inside_a_fake_mode() -> None:
    """``_torch_compat.real_tensors``: a tensor made inside it is real, fake mode or not."""
    torch = pytest.importorskip("torch")
    from torch._subclasses.fake_tensor import FakeTensorMode

    from pytest_roofline.tracing import _torch_compat as C

    with FakeTensorMode():
        assert C.is_fake(torch.empty(2))
        with C.real_tensors():
            made = torch.ones(2)
            assert made.sum().item() == 2.0  # it has values
        assert not C.is_fake(made)
