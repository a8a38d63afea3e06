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


def test_triton_interpreter_the_launch_counter_relies_on() -> None:
    """tracing/_triton_count.py wraps the interpreter's builder methods and its reduction and
    scan implementations while a launch runs: when their names or arguments change, this
    fails first (and a launch would be counted short)."""
    import inspect

    pytest.importorskip("triton")
    from triton.runtime import interpreter

    from pytest_roofline.tracing import _triton_count as C

    builder = interpreter.interpreter_builder
    missing = [name for name in [*C.FLOPS, *C.CARRY] if not hasattr(builder, name)]
    assert not missing, missing

    def params(name: str) -> list[str]:
        return list(inspect.signature(getattr(builder, name)).parameters)

    assert params("create_masked_load")[:2] == ["ptrs", "mask"]
    assert params("create_masked_store")[:3] == ["ptrs", "value", "mask"]
    assert params("create_dot")[:3] == ["a", "b", "d"]
    assert params("create_atomic_rmw")[:4] == ["rmwOp", "ptr", "val", "mask"]
    for cls in (interpreter.ReduceOps, interpreter.ScanOps):
        assert list(inspect.signature(cls.apply_impl).parameters) == ["self", "input"], cls
    assert "axis" in inspect.signature(interpreter.ReduceOps.__init__).parameters
    import numpy as np
    import triton.language as tl

    handle = interpreter.TensorHandle(np.zeros(2, dtype=np.float32), tl.float32)
    handle._rl_valid = None  # the counter notes valid lanes on the interpreter's values
    assert hasattr(handle, "data") and hasattr(interpreter.TensorHandle, "get_element_ty")
