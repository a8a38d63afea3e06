"""Twelve small JAX programs profiled on XLA:CPU, each row set against XLA's own cost analysis
of the same compiled program (``jax.jit(f).lower(...).compile().cost_analysis()``).

What is checked, each program:

* **FLOPs**: the rows' FLOPs a call are XLA's ``flops`` plus its ``transcendentals`` (XLA
  counts an ``exp``, ``rsqrt`` or ``tanh`` apart; the tracer's table counts it a FLOP),
  within 1%. Where the two count an op differently the rows' FLOPs are the table's closed
  form instead, written beside the program: a padded convolution (every tap here, only the
  taps on the input there: docs/bounds.md), a sort (the table's log2(n) comparisons an
  element; XLA counts its comparator's ops once an element, 14 for the total order floats
  sort by), a gather's index arithmetic (XLA counts the ``select`` that wraps a negative
  index a FLOP; the table a move).
* **Bytes**: no op is charged more than XLA's ``bytes accessed`` gives the program (each
  row's bytes an execution, together, at most XLA's: its cost analysis charges each op its
  operands and result, at least what crosses the op's boundary, which is what a row
  charges). XLA's cost analysis counts a loop's body once; the scan's FLOPs are set against
  it times the 4 steps that ran.
* **Counts**: each op as often as it ran (a 4-step scan's body 4 times a call).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

jax = pytest.importorskip("jax")
jnp = jax.numpy

from test_profile_jax import ROOMY  # noqa: E402

import pytest_roofline as rl  # noqa: E402

_KEY = jax.random.PRNGKey(0)


def _normal(*shape: int) -> Any:
    return jax.random.normal(_KEY, shape, jnp.float32)


def _ints(n: int, high: int) -> Any:
    return jax.random.randint(_KEY, (n,), 0, high)


def mlp(x: Any, w1: Any, w2: Any) -> Any:
    return jax.nn.relu(x @ w1) @ w2


def conv(x: Any, w: Any) -> Any:
    return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                        dimension_numbers=("NHWC", "HWIO", "NHWC"))


def attention(q: Any, k: Any, v: Any) -> Any:
    return jax.nn.softmax(q @ k.swapaxes(-1, -2) / 8.0, axis=-1) @ v


def layernorm(x: Any, g: Any, b: Any) -> Any:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + 1e-5) * g + b


def scan(x: Any, w: Any) -> Any:
    return jax.lax.scan(lambda c, _: (jnp.tanh(c @ w), None), x, None, length=4)[0]


def sort(x: Any) -> Any:
    return jnp.sort(x, axis=-1)


def segment_sum(x: Any, ids: Any) -> Any:
    return jax.ops.segment_sum(x, ids, num_segments=64)


def gather(table: Any, rows: Any) -> Any:
    return table[rows]


def reduce(x: Any) -> Any:
    return x.sum(axis=0)


def softmax(x: Any) -> Any:
    return jax.nn.softmax(x, axis=-1)


def einsum(a: Any, b: Any) -> Any:
    return jnp.einsum("bij,bjk->bik", a, b)


def class_token(x: Any, y: Any, b: Any) -> Any:
    return (x + y + b)[:, 0]  # a ViT's class token, sliced at the fusion's root


def _flax_mlp() -> tuple[Callable[..., Any], tuple[Any, ...]]:
    nn = pytest.importorskip("flax.linen")
    module = nn.Sequential([nn.Dense(256), nn.gelu, nn.Dense(64)])
    x = _normal(32, 128)
    return module.apply, (module.init(_KEY, x), x)


#: name -> (function, arguments, the rows' FLOPs a call in closed form where the table
#: counts an op otherwise than XLA (the module docstring), else None: XLA's within 1%)
PROGRAMS: dict[str, tuple[Callable[..., Any], tuple[Any, ...], float | None]] = {
    "mlp": (mlp, (_normal(64, 256), _normal(256, 512), _normal(512, 128)), None),
    # 3x3 SAME over 16 x 16, 8 -> 16 channels, batch 2: every tap of every output, 2 FLOPs
    # a tap and channel pair (XLA: (3·16 - 2)² taps on the input an output map, not 9·16²)
    "conv": (conv, (_normal(2, 16, 16, 8), _normal(3, 3, 8, 16)),
             2.0 * 2 * 8 * 16 * 9 * 16 * 16),
    "attention": (attention, (_normal(4, 64, 32), _normal(4, 64, 32), _normal(4, 64, 32)),
                  None),
    "layernorm": (layernorm, (_normal(128, 256), _normal(256), _normal(256)), None),
    "scan": (scan, (_normal(16, 64), _normal(64, 64)), None),
    # 64 rows of 256: log2(256) comparisons an element
    "sort": (sort, (_normal(64, 256),), 64 * 256 * math.log2(256)),
    "segment_sum": (segment_sum, (_normal(4096, 32), _ints(4096, 64)), None),
    # 256 indices wrapped (i < 0 ? i + 1024 : i): a compare and an add each
    "gather": (gather, (_normal(1024, 64), _ints(256, 1024)), 2.0 * 256),
    "reduce": (reduce, (_normal(512, 256),), None),
    "softmax": (softmax, (_normal(128, 256),), None),
    "einsum": (einsum, (_normal(8, 32, 64), _normal(8, 64, 16)), None),
    "class_token": (class_token, (_normal(8, 197, 64), _normal(8, 197, 64), _normal(64)),
                    None),
}


def _xla(fn: Callable[..., Any], args: tuple[Any, ...]) -> dict[str, float]:
    cost = jax.jit(fn).lower(*args).compile().cost_analysis()
    return cost[0] if isinstance(cost, list) else cost


@pytest.mark.parametrize("name", [*PROGRAMS, "flax_mlp"])
def test_a_small_jax_program_profiles_as_xla_costs_it(name: str) -> None:
    if name == "flax_mlp":
        fn, args = _flax_mlp()
        closed = None
    else:
        fn, args, closed = PROGRAMS[name]
    xla = _xla(fn, args)
    profile = rl.Profiler(hw=ROOMY, repeats=1)(jax.jit(fn), *args)
    assert profile.rows and not profile.faster
    flops = sum(r.flops for r in profile.rows)
    # XLA's cost analysis counts a loop's body once; the scan's ran 4 times a call
    trips = 4 if name == "scan" else 1
    expected = trips * (xla.get("flops", 0.0) + xla.get("transcendentals", 0.0))
    if closed is None:
        assert flops == pytest.approx(expected, rel=0.01), name
    else:
        assert flops == closed and flops != pytest.approx(expected, rel=0.01), name
    # no op charged more bytes than XLA gives the program (each op's bytes once, as XLA
    # counts a loop's body once)
    assert sum(r.bytes / r.count for r in profile.rows) <= xla["bytes accessed"], name
    if name == "scan":  # the body's product 4 times a call, the loop's own time named
        body = [r for r in profile.rows if r.flops == 4 * 2 * 16 * 64 * 64]
        assert len(body) == 1 and body[0].count == 4
