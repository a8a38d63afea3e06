"""Tracing JAX code: dot FLOPs against XLA's own cost analysis of the lowered program
(``jax.jit(f).lower(...).cost_analysis()``), exact; convolution FLOPs over every tap, as
torch's counter and ``ops.conv2d`` count them, which is XLA's count plus the taps on the
padding (docs/bounds.md, one rule for every path); bytes of the epilogue fusion against the
shapes."""

from __future__ import annotations

import math

import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import pytest_roofline as rl  # noqa: E402
from pytest_roofline.tracing import Tracer  # noqa: E402


def _spec(*shape: int, dtype: object = None) -> object:
    return jax.ShapeDtypeStruct(shape, dtype or jnp.float32)


def _xla_flops(f: object, *args: object) -> float:
    cost = jax.jit(f).lower(*args).cost_analysis()
    if isinstance(cost, list):  # older jax: one dict per computation
        cost = cost[0]
    return float(cost.get("flops", 0.0))  # XLA leaves out a zero count


def _matrix_flops(workload: rl.Workload) -> float:
    return sum(k.total_flops for k in workload.kernels if k.unit == "matrix")


@pytest.mark.parametrize(("f", "shapes"), [
    (jnp.dot, [(64, 128), (128, 256)]),
    (jnp.matmul, [(4, 3, 64, 32), (4, 3, 32, 16)]),  # batched
    (lambda a, b: jnp.einsum("bhqd,bhkd->bhqk", a, b), [(2, 8, 16, 64), (2, 8, 48, 64)]),
    (lambda a, b: jnp.einsum("ij,j->i", a, b), [(300, 200), (200,)]),
])
def test_dot_flops_equal_xla_cost_analysis(f, shapes):
    args = [_spec(*s) for s in shapes]
    traced = rl.trace(f, *args)
    assert _matrix_flops(traced) == _xla_flops(f, *args)


def _every_tap(x: tuple[int, ...], w: tuple[int, ...], out: tuple[int, ...],
               groups: int = 1, transposed: bool = False) -> float:
    """2 · batch · (in/groups) · out_channels · taps · outputs (NCHW, OIHW): each output
    element meets every tap (a transposed convolution: each input element every tap)."""
    spatial = x[2:] if transposed else out[2:]
    return 2.0 * x[0] * (x[1] // groups) * w[0] * math.prod(w[2:]) * math.prod(spatial)


@pytest.mark.parametrize(("x", "w", "kwargs"), [
    ((2, 3, 17, 17), (8, 3, 3, 3), {"window_strides": (2, 2), "padding": "SAME"}),
    ((1, 4, 9, 9), (6, 2, 5, 5), {"window_strides": (1, 1), "padding": ((2, 3), (1, 1)),
                                  "feature_group_count": 2}),
    ((1, 2, 12, 12), (4, 2, 3, 3), {"window_strides": (1, 1), "padding": "SAME",
                                    "rhs_dilation": (2, 2)}),
    ((1, 2, 6, 6), (4, 2, 3, 3), {"window_strides": (1, 1), "padding": ((1, 1), (1, 1)),
                                  "lhs_dilation": (2, 2)}),  # a transposed convolution
    ((8, 16, 32), (32, 16, 5), {"window_strides": (1,), "padding": "VALID"}),
])
def test_convolution_flops_count_every_tap_at_least_xla_s_valid_ones(x, w, kwargs):
    def conv(a, b):
        return jax.lax.conv_general_dilated(a, b, **kwargs)

    args = (_spec(*x), _spec(*w))
    traced = _matrix_flops(rl.trace(conv, *args))
    out = jax.eval_shape(conv, *args).shape
    assert traced == _every_tap(x, w, out, kwargs.get("feature_group_count", 1),
                                "lhs_dilation" in kwargs)
    # XLA skips the taps on the padding: the same count without padding, fewer with it
    if kwargs["padding"] == "VALID":
        assert traced == _xla_flops(conv, *args)
    elif "lhs_dilation" not in kwargs:
        assert traced > _xla_flops(conv, *args)


def test_a_padded_convolution_counts_as_torch_s_counter():
    """The same 3 x 3 convolution, stride 2, padding 1, in torch under FlopCounterMode."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    def conv(a, b):
        return jax.lax.conv_general_dilated(a, b, (2, 2), ((1, 1), (1, 1)))

    counter = FlopCounterMode(display=False)
    with counter:
        torch.nn.functional.conv2d(torch.zeros(2, 3, 17, 17), torch.zeros(8, 3, 3, 3),
                                   stride=2, padding=1)
    traced = rl.trace(conv, _spec(2, 3, 17, 17), _spec(8, 3, 3, 3))
    assert _matrix_flops(traced) == counter.get_total_flops()


def test_same_padding_counts_every_tap_as_torch_does():
    # 3x3 SAME on 4x4: all 9 taps of each of the 16 outputs, padding included; XLA's cost
    # analysis counts the 10 (output, tap) pairs per axis on the input: 2+3+3+2
    def conv(a, b):
        return jax.lax.conv_general_dilated(a, b, (1, 1), "SAME")

    args = (_spec(1, 1, 4, 4), _spec(1, 1, 3, 3))
    assert _matrix_flops(rl.trace(conv, *args)) == 2 * 16 * 9
    assert _xla_flops(conv, *args) == 2 * 10 * 10


def test_an_epilogue_stays_on_chip():
    def layer(x, w, b):
        return jax.nn.relu(x @ w + b)

    args = (_spec(128, 256, dtype=jnp.bfloat16), _spec(256, 512, dtype=jnp.bfloat16),
            _spec(512, dtype=jnp.bfloat16))
    fused = rl.trace(layer, *args)
    # x, w and b read once, the activation written once; x @ w never leaves the chip
    assert fused.bytes == 2 * (128 * 256 + 256 * 512 + 512 + 128 * 512)
    unfused = Tracer(fusion="none")(layer, *args)
    assert unfused.flops == fused.flops
    assert unfused.bytes > fused.bytes + 2 * 2 * 128 * 512  # the product written, read back



def test_an_epilogue_is_timed_with_its_product():
    """The fused bias add and ReLU name the matmul they run in, so analyze() overlaps their
    vector time with its matrix time (fusion.epilogue's rule) instead of adding them up."""
    def layer(x, w, b):
        return jax.nn.relu(x @ w + b)

    args = (_spec(128, 256, dtype=jnp.bfloat16), _spec(256, 512, dtype=jnp.bfloat16),
            _spec(512, dtype=jnp.bfloat16))
    fused = rl.trace(layer, *args)
    host, *epilogues = fused.kernels
    assert host.unit == "matrix" and host.epilogue_of is None
    assert len(epilogues) == 2 and all(k.epilogue_of == host.name for k in epilogues)
    result = rl.analyze(fused, "h100")
    apart = rl.analyze(rl.Workload([k.evolve(epilogue_of=None) for k in fused.kernels]), "h100")
    # together: the larger of the matrix and vector times, plus nothing for the epilogues
    rows = result.kernels
    assert rows[1].time == rows[2].time == 0.0
    assert result.time < apart.time

def test_jitted_functions_scans_and_arrays():
    @jax.jit
    def step(x, w):
        return jnp.tanh(x @ w)

    def loop(x, w):
        return jax.lax.scan(lambda c, _: (step(c, w), None), x, None, length=5)[0]

    x, w = jnp.ones((8, 16)), jnp.ones((16, 16))
    once = rl.trace(step, x, w)
    assert _matrix_flops(once) == 2 * 8 * 16 * 16
    assert _matrix_flops(rl.trace(loop, x, w)) == 5 * _matrix_flops(once)
    assert rl.trace(step, _spec(8, 16), _spec(16, 16)).flops == once.flops


def test_kernels_are_named_after_their_scopes():
    @jax.jit
    def f(x, w):
        with jax.named_scope("layers.0"), jax.named_scope("mlp"):
            y = x @ w
        return jnp.tanh(y)

    names = [k.name for k in Tracer(fusion="none")(f, _spec(4, 4), _spec(4, 4)).kernels]
    assert names == ["layers.0.mlp.dot_general", "tanh"]


def test_precision_follows_the_arrays_and_the_override():
    args = (_spec(64, 64, dtype=jnp.bfloat16), _spec(64, 64, dtype=jnp.bfloat16))
    assert rl.trace(jnp.dot, *args).kernels[0].dtype == "bf16"
    assert Tracer(dtype="fp8")(jnp.dot, *args).kernels[0].dtype == "fp8"


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=25, deadline=None)
@given(size=st.integers(1, 9), taps=st.integers(1, 4), stride=st.integers(1, 3),
       dilation=st.integers(1, 2), base=st.integers(1, 2), low=st.integers(0, 3),
       high=st.integers(0, 3), groups=st.sampled_from([1, 2]))
def test_any_convolution_counts_every_tap_and_at_least_xla(size, taps, stride, dilation,
                                                          base, low, high, groups):
    span = (size - 1) * base + 1 + low + high
    if span < (taps - 1) * dilation + 1:
        return  # the window does not fit: no output

    def conv(a, b):
        return jax.lax.conv_general_dilated(
            a, b, (stride, 1), ((low, high), (0, 0)), lhs_dilation=(base, 1),
            rhs_dilation=(dilation, 1), feature_group_count=groups)

    args = (_spec(2, 2 * groups, size, 3), _spec(4, 2, taps, 1))
    outputs = jax.eval_shape(conv, *args).shape[2]
    traced = _matrix_flops(rl.trace(conv, *args))
    # 2 FLOPs x batch 2 x 2 inputs a group x 4 outputs, taps x outputs on the first axis, 1 x 3
    # on the second; a base-dilated axis leaves out the taps on its holes, never more
    every = 2 * 2 * 2 * 4 * taps * outputs * 3
    assert traced == every if base == 1 else traced <= every
    assert traced >= _xla_flops(conv, *args)
    if low == high == 0:
        assert traced == _xla_flops(conv, *args)


def test_a_while_loop_counts_its_body_once_and_a_cond_its_cheapest_branch():
    x, w = _spec(8, 16), _spec(16, 16)
    one = 2 * 8 * 16 * 16

    def loop(x, w):
        return jax.lax.while_loop(lambda c: c[1] < 10, lambda c: (c[0] @ w, c[1] + 1),
                                  (x, 0))[0]

    def branch(p, x, w):
        return jax.lax.cond(p, lambda x: (x @ w) @ w, lambda x: x @ w, x)

    looped = rl.trace(loop, x, w)
    assert _matrix_flops(looped) == one  # trip count unknown: a lower bound, and marked
    assert dict(looped.assumed) == {
        "jax while_loop: trip count known at run time only, body counted once": 1}
    assert _matrix_flops(rl.trace(branch, _spec(dtype=jnp.bool_), x, w)) == one
    scanned = rl.trace(lambda x, w: jax.lax.fori_loop(0, 10, lambda i, x: x @ w, x), x, w)
    assert _matrix_flops(scanned) == 10 * one and not scanned.assumed  # a known trip count


def test_the_fixture_traces_jax_code(pytester: pytest.Pytester) -> None:
    from test_plugin import ISOLATE, TOY_SPEC, plugin_args

    rl.trace(jnp.dot, _spec(2, 2), _spec(2, 2))  # loaded before the in-process run
    pytester.makefile(".yaml", toychip=TOY_SPEC)
    pytester.makeini("[pytest]\nroofline_specs = toychip.yaml\n")
    pytester.makepyfile("""
import jax
import jax.numpy as jnp
import pytest

@pytest.mark.roofline(hw="toy", regime="compute")
def test_jax_gemm(roofline):
    spec = jax.ShapeDtypeStruct((4096, 4096), jnp.bfloat16)
    w = roofline.trace(jnp.dot, spec, spec)
    assert w.flops == 2 * 4096 ** 3
""")
    pytester.runpytest_inprocess(*plugin_args(), *ISOLATE).assert_outcomes(passed=1)


def test_pallas_call_is_one_kernel_charged_its_boundary_blocks_only() -> None:
    # o = x + y over a (8,) grid of 128x1024 fp32 blocks: x and y read once, o written once
    # (3 x 4 MiB = 12.58 MB); the loads and stores inside stay on chip. FLOPs: one add per
    # element. Also the check that the pallas_call params the tracer reads still exist.
    from jax.experimental import pallas as pl

    def add_kernel(x_ref, y_ref, o_ref):
        o_ref[...] = x_ref[...] + y_ref[...]

    def add(x, y):
        spec = pl.BlockSpec((128, 1024), lambda i: (i, 0))
        return pl.pallas_call(add_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              grid=(8,), in_specs=[spec, spec], out_specs=spec,
                              interpret=True)(x, y)

    x = jax.ShapeDtypeStruct((1024, 1024), jnp.float32)
    w = rl.trace(add, x, x)
    assert [k.name for k in w.kernels] == ["add_kernel"]
    assert w.bytes == 3 * 1024 * 1024 * 4
    assert w.flops == 1024 * 1024
    assert not w.unknown
    # a block revisited on consecutive steps is fetched once: (4, 2) grid, x's block index
    # depends on i only, so x moves once per i (4 fetches of 256x1024), not 8 times

    def rows(x):
        spec = pl.BlockSpec((256, 1024), lambda i, j: (i, 0))
        out = pl.BlockSpec((256, 512), lambda i, j: (i, j))
        return pl.pallas_call(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[:, :512]),
                              out_shape=jax.ShapeDtypeStruct((1024, 1024), x.dtype),
                              grid=(4, 2), in_specs=[spec], out_specs=out,
                              interpret=True)(x)

    assert rl.trace(rows, x).bytes == (4 * 256 * 1024 + 8 * 256 * 512) * 4


def test_a_pallas_kernel_takes_a_registered_formula_by_name() -> None:
    from jax.experimental import pallas as pl

    def scale_kernel(x_ref, o_ref):
        o_ref[...] = x_ref[...] * 2.0

    def scale(x):
        return pl.pallas_call(scale_kernel, out_shape=jax.ShapeDtypeStruct(x.shape, x.dtype),
                              interpret=True)(x)

    x = jax.ShapeDtypeStruct((256, 256), jnp.float32)
    try:
        rl.register_op("scale_kernel", lambda x: rl.Kernel(
            "scale", flops=x.size, bytes=2 * x.size * 4, unit="vector", dtype="fp32"))
        w = rl.trace(scale, x)
        assert [k.name for k in w.kernels] == ["scale_kernel:scale"]
        assert w.flops == 256 * 256 and w.bytes == 2 * 256 * 256 * 4
    finally:
        rl.unregister_op("scale_kernel")


def test_a_custom_call_is_unknown_until_its_target_has_a_formula() -> None:
    # an FFI call (how JAX reaches a hand-written kernel) names its target; the jaxpr holds
    # no FLOPs for it: its bytes are kept (x read, y written) and it is listed
    def kernel(x):
        return jax.ffi.ffi_call("rooflinetest_scale", jax.ShapeDtypeStruct(x.shape, x.dtype))(x)

    x = jax.ShapeDtypeStruct((128, 256), jnp.float32)
    w = rl.trace(kernel, x)
    assert dict(w.unknown) == {"rooflinetest_scale": 1}
    assert w.flops == 0 and w.bytes == 2 * 128 * 256 * 4
    with pytest.raises(rl.TraceError, match="rooflinetest_scale x1"):
        Tracer(strict=True)(kernel, x)
    try:
        rl.register_op("rooflinetest_scale", lambda x: rl.Kernel(
            "scale", flops=x.size, bytes=2 * x.size * 4, unit="vector", dtype="fp32"))
        counted = rl.trace(kernel, x)
        assert not counted.unknown and counted.flops == 128 * 256
    finally:
        rl.unregister_op("rooflinetest_scale")
