"""``shard_map`` programs on 8 CPU devices traced to per-chip link bytes.

Expected figures: the closed forms of ``ops.collectives`` (ring algorithms; V the bytes of
the tensor as that table sizes it, N the chips of the axis): all-reduce 2·V·(N-1)/N,
all-gather and reduce-scatter V·(N-1)/N, all-to-all V·(N-1)/N, a ppermute V per chip.
Exact (float equality up to 1e-12): the same formula evaluated twice.
"""

from __future__ import annotations

import math
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

import pytest_roofline as rl
from pytest_roofline import Hardware, Link, analyze, crossover, ops
from pytest_roofline.tracing import TraceError, Tracer

N = 8
ROWS, COLS = 1024, 512  # one chip's shard
V = ROWS * COLS * 2  # bytes of a bf16 shard: 1 MiB


def _mesh(n: int = N, names: tuple[str, ...] = ("x",)) -> Mesh:
    return Mesh(np.array(jax.devices()[:n]).reshape(
        (n,) if len(names) == 1 else (2, n // 2)), names)


def test_eight_cpu_devices_are_there():
    assert jax.device_count() == N


def _link(workload: rl.Workload, prefix: str) -> float:
    found = [k for k in workload.kernels if k.name.startswith(prefix)]
    assert len(found) == 1, [k.name for k in workload.kernels]
    return float(found[0].link_bytes)


def test_every_collective_traces_to_its_closed_form():
    @partial(jax.shard_map, mesh=_mesh(), in_specs=P("x"), out_specs=P("x"))
    def program(a):
        b = jax.lax.psum(a, "x")
        c = jax.lax.all_gather(a, "x", tiled=True)  # [N·ROWS, COLS]: N·V gathered
        d = jax.lax.psum_scatter(c, "x", tiled=True)  # N·V in, V out
        e = jax.lax.all_to_all(a, "x", 0, 0, tiled=True)
        g = jax.lax.ppermute(a, "x", [(i, (i + 1) % N) for i in range(N)])
        return b + d + e + g

    w = rl.trace(program, jax.ShapeDtypeStruct((N * ROWS, COLS), jnp.bfloat16))
    frac = (N - 1) / N
    assert _link(w, "psum") == pytest.approx(2 * V * frac, rel=1e-12)
    assert _link(w, "all_gather") == pytest.approx(N * V * frac, rel=1e-12)
    assert _link(w, "reduce_scatter") == pytest.approx(N * V * frac, rel=1e-12)
    assert _link(w, "all_to_all") == pytest.approx(V * frac, rel=1e-12)
    assert _link(w, "ppermute") == pytest.approx(V, rel=1e-12)
    # the body's other kernels are per chip too: each add reads two shards, writes one
    adds = [k for k in w.kernels if k.name == "add"]
    assert adds and all(k.bytes == 3 * V for k in adds)
    # and the same kernels as the declared collectives
    declared = ops.all_reduce(ROWS * COLS, N).kernels[0]
    traced = next(k for k in w.kernels if k.name.startswith("psum"))
    assert (traced.flops, traced.bytes, traced.link_bytes) == (
        declared.flops, declared.bytes, declared.link_bytes)


def test_a_collective_over_one_axis_of_a_2d_mesh_counts_that_axis_only():
    mesh = _mesh(N, ("data", "model"))  # 2 x 4

    @partial(jax.shard_map, mesh=mesh, in_specs=P("data", "model"),
             out_specs=P("data", "model"))
    def program(a):
        return jax.lax.psum(a, "model") + jax.lax.psum(a, ("data", "model"))

    w = Tracer(links={"model": "nvlink", "data": "nvlink"})(
        program, jax.ShapeDtypeStruct((2 * ROWS, 4 * COLS), jnp.bfloat16))
    model, both = [k for k in w.kernels if k.link_bytes]
    assert model.link_bytes == pytest.approx(2 * V * 3 / 4)
    assert both.link_bytes == pytest.approx(2 * V * 7 / 8)
    assert model.link == "nvlink"


def test_axes_on_different_links_are_named():
    mesh = _mesh(N, ("data", "model"))

    @partial(jax.shard_map, mesh=mesh, in_specs=P("data", "model"),
             out_specs=P("data", "model"))
    def program(a):
        return jax.lax.psum(a, ("data", "model"))

    with pytest.raises(TraceError, match=r"links differ .*data: ib.*model: nvlink"):
        Tracer(links={"model": "nvlink", "data": "ib"})(
            program, jax.ShapeDtypeStruct((2 * ROWS, 4 * COLS), jnp.bfloat16))


# The scaling book, part 1 (https://jax-ml.github.io/scaling-book/roofline/), "network
# roofline": X[B, D] @ Y[D, F] with D split over 2 TPU v5e joined by one ICI link of
# W = 4.5e10 B/s one way; each chip multiplies [B, D/2] @ [D/2, F] and the bf16 partial sums
# [B, F] are all-reduced (2·B·F bytes each way on 2 chips). Compute-bound once
# B·D·F / peak > 2·B·F / W, i.e. D/2 > peak / W = 1.97e14 / 4.5e10 = 4377.8.
BOOK_V5E = Hardware(name="scaling-book-v5e", memory_bandwidth=8.1e11, memory_capacity=16e9,
                    matrix={"bf16": 1.97e14}, vector={"fp32": 1.97e14 / 32},
                    links={"ici": Link("ici", 4.5e10, 4)})
B, F = 8192, 16384


def _matmul_fn():
    @partial(jax.shard_map, mesh=_mesh(2), in_specs=(P(None, "x"), P("x", None)),
             out_specs=P())
    def matmul(x, y):
        return jax.lax.psum(x @ y, "x")

    return matmul


def _sharded_program(k_per_chip: int) -> rl.Workload:
    return Tracer(links={"x": ("ici", 1)})(
        _matmul_fn(), jax.ShapeDtypeStruct((B, 2 * k_per_chip), jnp.bfloat16),
        jax.ShapeDtypeStruct((2 * k_per_chip, F), jnp.bfloat16))


def test_the_scaling_book_sharded_matmul_crossover_from_a_traced_program():
    critical = BOOK_V5E.peak("bf16") / BOOK_V5E.link("ici").bandwidth
    assert critical == pytest.approx(4377.8, abs=0.05)
    per_chip = crossover(_sharded_program, BOOK_V5E, lo=1, hi=1 << 16)
    assert per_chip == math.floor(critical) + 1  # 4378: D = 8756 on two chips
    small = analyze(_sharded_program(1024), BOOK_V5E)
    assert small.regime == "network"
    assert small.t_network == pytest.approx(2 * B * F / 4.5e10)  # 2BF bytes over one link
    # the traced program and the declared one are the same two kernels
    declared = ops.sharded_matmul(B, 2048, F, shards=2, link="ici", link_count=1)
    for t, d in zip(_sharded_program(1024).kernels, declared.kernels, strict=True):
        assert (t.flops, t.bytes, t.link_bytes, t.link, t.link_count) == (
            d.flops, d.bytes, d.link_bytes, d.link, d.link_count)


def test_overlap_hides_the_traced_all_reduce_behind_the_matmul():
    # the traced sharded matmul with overlap="full": the matmul carries the all-reduce's
    # memory traffic and link bytes beside its own, so the program takes the largest of its
    # compute, the two memory streams and the link time
    plain = _sharded_program(1024)
    hidden = Tracer(links={"x": ("ici", 1)}, overlap="full")(
        _matmul_fn(), jax.ShapeDtypeStruct((B, 2048), jnp.bfloat16),
        jax.ShapeDtypeStruct((2048, F), jnp.bfloat16))
    mm, ar = analyze(plain, BOOK_V5E).kernels
    r = analyze(hidden, BOOK_V5E)
    assert r.time == pytest.approx(
        max(mm.t_compute, mm.t_memory + ar.t_memory, ar.t_network), rel=1e-9)
    assert r.time < analyze(plain, BOOK_V5E).time


# -- jit with NamedSharding inputs: the partitioner's collectives -------------------------


def test_a_jit_with_named_shardings_traces_the_partitioners_collectives():
    from jax.sharding import NamedSharding

    mesh = _mesh(N, ("data", "model"))  # 2 x 4
    x = jax.ShapeDtypeStruct((1024, 4096), jnp.bfloat16,
                             sharding=NamedSharding(mesh, P("data", "model")))
    w = jax.ShapeDtypeStruct((4096, 2048), jnp.bfloat16,
                             sharding=NamedSharding(mesh, P("model", None)))

    def layer(x, w):
        return jnp.tanh(x @ w)

    traced = Tracer(links={"model": "nvlink"})(layer, x, w)
    (reduce,) = [k for k in traced.kernels if k.link_bytes]
    # each chip multiplies [512, 1024] @ [1024, 2048] and all-reduces its partial [512, 2048]
    # over the 4 chips of "model": 2·V·3/4 with V = 512·2048 bf16 bytes
    assert reduce.link_bytes == pytest.approx(2 * 512 * 2048 * 2 * 3 / 4, rel=1e-12)
    assert reduce.link == "nvlink" and "model" in reduce.name
    # the compute is the global program's over the 8 chips: the matmul's FLOPs / 8
    dot = next(k for k in traced.kernels if k.name.endswith("dot_general"))
    assert dot.total_flops == pytest.approx(2 * 1024 * 4096 * 2048 / 8, rel=1e-12)
    # the footprint is one chip's shards: x / 8 and w / 4
    assert traced.footprint == pytest.approx((1024 * 4096 / 8 + 4096 * 2048 / 4) * 2)


def test_a_jitted_function_with_out_shardings_keeps_them():
    from jax.sharding import NamedSharding

    mesh = _mesh(N, ("data", "model"))
    x = jax.ShapeDtypeStruct((1024, 4096), jnp.bfloat16,
                             sharding=NamedSharding(mesh, P("data", "model")))
    w = jax.ShapeDtypeStruct((4096, 2048), jnp.bfloat16,
                             sharding=NamedSharding(mesh, P("model", None)))
    layer = jax.jit(lambda x, w: x @ w, out_shardings=NamedSharding(mesh, P("data", "model")))
    traced = Tracer(links={"model": "nvlink"})(layer, x, w)
    moved = [k for k in traced.kernels if k.link_bytes]
    assert moved and all(k.link == "nvlink" for k in moved)
    # whichever collective the partitioner picks (a reduce-scatter, or an all-reduce and a
    # slice), a chip sends at least the reduce-scatter's V·3/4 of its [512, 2048] partials
    assert sum(k.link_bytes for k in moved) >= 512 * 2048 * 2 * 3 / 4 * (1 - 1e-12)


# -- a shard_map whose input carries a NamedSharding: each collective once ------------------


def _psum_and_permute():
    @partial(jax.shard_map, mesh=_mesh(), in_specs=P("x"), out_specs=P("x"))
    def program(a):
        b = jax.lax.psum(a, "x")
        g = jax.lax.ppermute(a, "x", [(i, (i + 1) % N) for i in range(N)])
        return b + g
    return program


def test_a_shard_map_with_sharded_inputs_counts_each_collective_once():
    from jax.sharding import NamedSharding

    program = _psum_and_permute()
    plain = rl.trace(program, jax.ShapeDtypeStruct((N * ROWS, COLS), jnp.bfloat16))
    sharded = rl.trace(program, jax.ShapeDtypeStruct(
        (N * ROWS, COLS), jnp.bfloat16, sharding=NamedSharding(_mesh(), P("x"))))
    frac = (N - 1) / N
    # the same closed forms whatever the input's sharding: psum 2·V·(N-1)/N, ppermute V;
    # once each (the compiled program's collectives, none again from the jaxpr)
    for w in (plain, sharded):
        moved = sorted(k.link_bytes for k in w.kernels if k.link_bytes)
        assert moved == pytest.approx(sorted([2 * V * frac, V]), rel=1e-12), [
            k.name for k in w.kernels]
    # the body's add is one chip's work in both (3 shards of V bytes), not 1/N of it
    for w in (plain, sharded):
        (add,) = [k for k in w.kernels if k.name == "add"]
        assert add.total_bytes == 3 * V and add.total_flops == V / 2
    assert sharded.link_bytes == pytest.approx(plain.link_bytes, rel=1e-12)
    # and on the same axis: the all-reduce's replica group and the permute's pairs both span
    # x, whose link the chip's spec may name (mesh_axes)
    for w in (plain, sharded):
        assert [k.link for k in w.kernels if k.link_bytes] == ["axis:x", "axis:x"]


def test_a_collective_the_table_does_not_name_is_unknown_in_compiled_hlo(monkeypatch):
    # the all-reduce row without its HLO name: the compiled program's all-reduce is then a
    # collective no row prices; it is listed by name, its bytes kept, never skipped
    import dataclasses

    from jax.sharding import NamedSharding

    from pytest_roofline.ops import _family

    row = _family.COLLECTIVES["all_reduce"]
    monkeypatch.setitem(_family.COLLECTIVES, "all_reduce", dataclasses.replace(row, hlo=()))
    w = rl.trace(_psum_and_permute(), jax.ShapeDtypeStruct(
        (N * ROWS, COLS), jnp.bfloat16, sharding=NamedSharding(_mesh(), P("x"))))
    assert w.unknown == {"all-reduce": 1}
    (held,) = [k for k in w.kernels if k.name.startswith("spmd.psum")]
    assert held.bytes > 0 and held.link_bytes == 0


def test_a_new_collective_row_is_read_by_the_jaxpr_and_the_compiled_hlo(monkeypatch):
    # one row plus its closed form: a kind that sends each chip's shard once over the ring
    # (sent = 1), claiming psum in a jaxpr and all-reduce in HLO; both readers price it
    # with that row, not the all-reduce's 2·(N-1)/N
    import dataclasses

    from jax.sharding import NamedSharding

    from pytest_roofline.ops import _family

    ring = _family.COLLECTIVES["all_reduce"]
    monkeypatch.setitem(_family.COLLECTIVES, "all_reduce",
                        dataclasses.replace(ring, jax=("psum2", "pmax", "pmin"), hlo=()))
    monkeypatch.setitem(_family.COLLECTIVES, "once", _family.Collective(
        "once", sent=lambda n: 1.0, adds=lambda n: 0.0, parts_in=lambda n: 1,
        parts_out=lambda n: 1, ring_steps=lambda n: 1.0, jax=("psum", "psum_invariant"),
        hlo=("all-reduce",)))
    program = _psum_and_permute()
    for sharding in (None, NamedSharding(_mesh(), P("x"))):
        w = rl.trace(program, jax.ShapeDtypeStruct((N * ROWS, COLS), jnp.bfloat16,
                                                   sharding=sharding))
        assert sorted(k.link_bytes for k in w.kernels if k.link_bytes) == pytest.approx(
            [V, V], rel=1e-12)
        assert not w.unknown
