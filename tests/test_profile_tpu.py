"""TPU traces and compiled collectives in the XSpace reader.

XProf's own TPU test trace (``tpu_v6e_xprof_inference_2.xplane.pb``, see the data folder's
README): four TPU v6e chips whose ``XLA Ops`` lines hold the executed ops with no ``hlo_op``
stat, an all-reduce over replica groups of 2, and host-offload copies whose async spans
(``Async XLA Ops``, 172-791 ms each) overlap the ops. The expected figures come from the
file itself (each op's ``device_duration_ps``, the stat XProf times an op by) and from the
closed forms of the collectives table (``ops.collectives``), written beside each test.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from test_profile_hlo import F32, TUPLE, _ins, _msg

import pytest_roofline as rl
from pytest_roofline.errors import UnknownHardwareError
from pytest_roofline.profiling import ProfileError
from pytest_roofline.profiling.devices import tpu_of
from pytest_roofline.profiling.jax import hlo_pricing, jax_trace
from pytest_roofline.profiling.jax.hlo import parse_module
from pytest_roofline.profiling.jax.xplane import Event, read_space

DATA = Path(__file__).parent / "data" / "jax_traces"
TPU = DATA / "tpu_v6e_xprof_inference_2.xplane.pb"


@pytest.fixture(scope="module")
def tpu() -> Any:
    return rl.read_trace(TPU)


def _xla_ops() -> dict[str, list[float]]:
    """Each op of the four chips' ``XLA Ops`` lines: its times (s) as XProf times it."""
    times: dict[str, list[float]] = defaultdict(list)
    for plane in read_space(TPU):
        for event in plane.events:
            if event.line == "XLA Ops":
                name = event.name.split(" =")[0].lstrip("%")
                times[name].append(event.stats["device_duration_ps"] * 1e-12)
    return times


def test_a_tpu_trace_names_its_chip_and_reads_its_xla_ops_lines(tpu: Any) -> None:
    """The chip from the planes' ``device_type_string`` (``TPU v6 Lite``), no ``--hw``; the
    measured time every op of the four ``XLA Ops`` lines (4 x 78.8 s: the 315 s the share is
    against), never the async spans; each fusion a row whose time is its events' own."""
    ops = _xla_ops()
    assert tpu.hw == "tpu-v6e" and tpu.on_device
    assert tpu.total == pytest.approx(sum(map(sum, ops.values())), rel=1e-9)
    assert 314 < tpu.total < 316
    rows = {r.op.split("/")[-1]: r for r in tpu.rows}
    for name in ("broadcast_add_fusion", "broadcast_add_fusion.1", "broadcast_add_fusion.2",
                 "all-reduce", "broadcast.2"):
        assert rows[name].measured == pytest.approx(sum(ops[name]), rel=1e-9)
        assert rows[name].count == len(ops[name])
    # every op of >= 1% of the time is a row or named unpriced, with its time
    unpriced = {u.name.split("/")[-1]: u for u in tpu.unpriced}
    for name, times in ops.items():
        if sum(times) >= 0.01 * tpu.total:
            assert name in rows or unpriced[name].seconds == pytest.approx(sum(times))
    assert tpu.priced_share == pytest.approx(tpu.priced / tpu.total) and \
        0.03 < tpu.priced_share < 0.04
    assert not tpu.faster  # no honest row flagged


def test_an_async_copy_is_its_span_never_nested_and_its_wait_is_named(tpu: Any) -> None:
    """``copy-done.N`` on ``XLA Ops`` is the core waiting for a host-offload copy: named
    unpriced with that reason (its work ran over its span, beside other ops), never judged
    as the copy. The spans (``Async XLA Ops``) keep their whole durations: copy-start.2's
    100 spans run 308-589 ms (never the 6.25 ns left when one is taken to hold another)."""
    unpriced = {u.name.split("/")[-1]: u for u in tpu.unpriced}
    assert "async op's issue or wait" in unpriced["copy-done.2"].reason
    assert unpriced["copy-done.2"].cause == "async wait"
    assert tpu.by_cause()["async wait"] == pytest.approx(sum(
        u.seconds for u in tpu.unpriced if "copy-" in u.name))
    assert unpriced["copy-done.2"].seconds == pytest.approx(sum(_xla_ops()["copy-done.2"]))
    assert not any("copy" in r.op for r in tpu.rows)
    note = next(n for n in tpu.notes if "async spans" in n)
    assert "600 async spans" in note and "copy-start.2 100 x 308 ms-589 ms" in note
    trace = jax_trace.read(TPU)
    spans = [e.seconds for e in trace.spans if e.stats["hlo_op"] == "copy-start.2"]
    assert len(spans) == 100 and min(spans) > 0.308 and max(spans) < 0.59


def _event(name: str, start: float, seconds: float) -> Event:
    return Event(name, "/host:CPU", "t", start, seconds, {"hlo_op": name})


def test_async_halves_on_a_host_line_keep_their_whole_spans() -> None:
    """An ``all-reduce-start`` whose span covers a fusion's: both keep their durations (1 ms
    and 0.4 ms), where a ``while`` holding the same fusion keeps 0.6 ms of its own."""
    own = dict((e.name, s) for e, s in jax_trace._own_times([
        _event("all-reduce-start", 0.0, 1e-3), _event("fusion", 100.0, 4e-4)]))
    assert own == {"all-reduce-start": 1e-3, "fusion": 4e-4}
    own = dict((e.name, s) for e, s in jax_trace._own_times([
        _event("while", 0.0, 1e-3), _event("fusion", 100.0, 4e-4)]))
    assert own["while"] == pytest.approx(6e-4)


@pytest.mark.parametrize(("kind", "chip"), [
    ("TPU v4", "tpu-v4"), ("TPU v5 lite", "tpu-v5e"), ("TPU v5e", "tpu-v5e"),
    ("TPU v5", "tpu-v5p"), ("TPU v5p", "tpu-v5p"), ("TPU v6 lite", "tpu-v6e"),
    ("TPU v6 Lite", "tpu-v6e"), ("TPU v6e", "tpu-v6e"), ("TPU7x", "tpu-v7"),
    ("TPU v7x", "tpu-v7"), ("TPU v7", "tpu-v7"),
])
def test_each_tpu_is_named_as_the_runtime_writes_it(kind: str, chip: str) -> None:
    assert tpu_of(kind).name == chip
    assert jax_trace.chip_of({"device_type_string": kind}).name == chip


@pytest.mark.parametrize("kind", ["TPU v3", "TPU v4 lite", "TPU v9", "TPU " + "x" * 300])
def test_a_tpu_the_catalog_lacks_is_one_line_naming_hw(kind: str) -> None:
    with pytest.raises(UnknownHardwareError, match="--hw") as raised:
        tpu_of(kind)
    assert len(str(raised.value)) < 200
    with pytest.raises(ProfileError, match="--hw"):
        jax_trace.chip_of({"device_type_string": kind})


# -- collectives of compiled HLO, priced by the collectives table --------------------------
# Closed forms (ops.collectives, ring algorithms; D the collective's size as that table sizes
# it, N the devices of the replica group): all-reduce sends 2·D·(N-1)/N, all-gather (D the
# gathered result) and reduce-scatter (D the unreduced input: the result times N)
# D·(N-1)/N, a collective-permute D. Exact: the same formula evaluated twice.

D = 256 * 256 * 4  # bytes of an f32[256,256]: 262,144
U32 = 8  # XLA's PrimitiveType number of u32


def _groups(*groups: tuple[int, ...]) -> tuple[int, bytes]:
    """``collective_device_list`` (87) with explicit replica groups."""
    return 87, _msg(*((1, _msg((1, list(g)))) for g in groups))


def _iota(groups: int, per_group: int) -> tuple[int, bytes]:
    """``collective_device_list`` (87) as an iota list (``[4,2]<=[2,4]T(1,0)``)."""
    return 87, _msg((2, _msg((1, groups), (2, per_group))))


def _collective(opcode: str, dims: tuple[int, ...], *extra: tuple[int, Any]) -> Any:
    entry = _msg((1, "main"), (5, 1), (2, _ins(1, "x", "parameter", dims)),
                 (2, _ins(2, "c", opcode, dims, *extra, operands=(1,))))
    module = parse_module(_msg((1, _msg((1, "jit_f"), (3, entry), (5, 7), (6, 1)))), "f")
    return hlo_pricing.price(module, module.by_name["c"])


@pytest.mark.parametrize(("opcode", "dims", "group", "link_bytes"), [
    ("all-reduce", (256, 256), _groups((0, 1), (2, 3)), D),  # 2·D·1/2
    ("all-reduce", (256, 256), _iota(2, 4), 2 * D * 3 / 4),
    ("all-reduce-start", (256, 256), (49, _msg((1, [0, 1, 2, 3]))), 2 * D * 3 / 4),
    ("all-gather", (1024, 256), _groups((0, 1, 2, 3)), 4 * D * 3 / 4),  # D gathered: 4·D
    ("reduce-scatter", (64, 256), _iota(1, 4), D * 3 / 4),  # result D/4, unreduced D
    ("all-to-all", (256, 256), _groups((0, 1)), D / 2),
    ("collective-permute", (256, 256), (52, _msg((1, 0), (2, 1))), D),
])
def test_a_compiled_collective_is_priced_on_the_link_by_the_table(
        opcode: str, dims: tuple[int, ...], group: tuple[int, bytes],
        link_bytes: float) -> None:
    workload = _collective(opcode, dims, group)
    assert not isinstance(workload, str), workload
    assert sum(float(k.link_bytes) for k in workload.kernels) == pytest.approx(
        link_bytes, rel=1e-12)


def test_an_async_start_is_priced_on_its_results() -> None:
    """``all-gather-start`` holds (operand f32[256,256], result f32[1024,256]) and a
    ``collective-permute-start`` (operand, result, u32[], u32[]): the results, D = 4·D₀ over
    4 devices (3/4 of it sent) and D₀ to the peer."""
    def start(opcode: str, shapes: list[tuple[int, tuple[int, ...]]], *extra: Any) -> Any:
        shape = _msg((2, TUPLE), *((4, _msg((2, kind), (3, list(dims)))) for kind, dims in
                                   shapes))
        entry = _msg((1, "main"), (5, 1), (2, _ins(1, "x", "parameter", (256, 256))),
                     (2, _msg((1, "c"), (2, opcode), (3, shape), (35, 2), (36, [1]),
                              *extra)))
        module = parse_module(_msg((1, _msg((1, "jit_f"), (3, entry), (5, 7), (6, 1)))), "f")
        return hlo_pricing.price(module, module.by_name["c"])

    gather = start("all-gather-start", [(F32, (256, 256)), (F32, (1024, 256))],
                   _groups((0, 1, 2, 3)))
    assert sum(float(k.link_bytes) for k in gather.kernels) == 4 * D * 3 / 4
    permute = start("collective-permute-start", [(F32, (256, 256)), (F32, (256, 256)),
                                                 (U32, ()), (U32, ())])
    assert sum(float(k.link_bytes) for k in permute.kernels) == D


def test_a_collective_done_is_its_wait_and_one_without_groups_says_why() -> None:
    assert _collective("all-reduce-done", (256, 256)) == hlo_pricing.ZERO
    reason = _collective("all-reduce", (256, 256))
    assert isinstance(reason, str) and "group size" in reason


def test_the_tpu_all_reduce_is_priced_over_its_replica_groups_of_two(tpu: Any) -> None:
    """XProf's trace: ``all-reduce`` of f32[5,1024,1024,256] (5 GiB) over
    ``replica_groups=[4,2]<=[2,4]T(1,0)`` (4 groups of 2): each chip sends 2·D·(2-1)/2 = D
    on the v6e's ICI, 12 calls (3 on each of 4 chips)."""
    (row,) = [r for r in tpu.rows if r.op.endswith("all-reduce")]
    size = 5 * 1024 * 1024 * 256 * 4
    one = rl.analyze(rl.ops.all_reduce(size // 4, 2, dtype="fp32"), rl.get_hardware("tpu-v6e"))
    assert row.regime == "network" and row.count == 12
    assert row.bound == pytest.approx(12 * float(one.time), rel=1e-9)


def test_each_tpu_fusion_is_charged_the_bytes_xla_gives_it(tpu: Any) -> None:
    """XProf writes XLA's own cost analysis of each op on the TPU into its events
    (``bytes_accessed``): each fusion (a 5 GiB f32 array read, 1 added, written) is charged
    exactly that, 10,737,418,240 B a call. Two rows differ, as stated: the broadcast reads
    its 4-byte scalar, which XLA leaves out (it sits in the TPU's scalar memory, ``S(6)``),
    and the all-reduce is charged the collectives table's memory traffic (its input and
    output, and each ring step's chunks read and written: 2 x XLA's input and output)."""
    xla = {}
    for plane in read_space(TPU):
        for event in plane.events:
            if event.line == "XLA Ops":
                xla[event.name.split(" =")[0].lstrip("%")] = event.stats["bytes_accessed"]
    rows = {r.op.split("/")[-1]: r.bytes / r.count for r in tpu.rows}
    for name in ("broadcast_add_fusion", "broadcast_add_fusion.1", "broadcast_add_fusion.2"):
        assert rows[name] == xla[name] == 2 * 5 * 1024 * 1024 * 256 * 4
    assert rows["broadcast.2"] == xla["broadcast.2"] + 4
    assert rows["all-reduce"] == 2 * xla["all-reduce"]


@pytest.mark.parametrize(("names", "regime"), [
    (("jit_f/psum_invariant.7", "psum_invariant"), None),  # XLA:CPU's all-reduce of a psum
    (("jit_f/ppermute.3", "ppermute"), None),
    (("jit_f/all-reduce.1",), None),
    (("mystery.1",), "network"),  # priced on a link, whatever it is called
])
def test_a_collective_is_communication_by_its_name_or_its_link(
        names: tuple[str, ...], regime: str | None) -> None:
    from pytest_roofline.profiling.categories import category_of

    assert category_of(names, regime=regime) == "communication"
    assert category_of(("jit_f/psummary_fusion",), regime="memory") == "elementwise"


def test_one_execution_on_two_devices_threads_is_two_calls() -> None:
    """XLA:CPU runs a program on two devices as one execution (one ``run_id``) on two
    threads: the all-reduce on each is a call of its own, never one call continued; on one
    thread, the same op's events in a row (a sort: a copy then the sort) stay one call."""
    def event(line: str, start: float) -> Event:
        return Event("all-reduce", "/host:CPU", line, start, 1e-6,
                     {"hlo_op": "all-reduce", "hlo_module": "jit_f", "run_id": 5})

    two = [event("t1", 0.0), event("t2", 10.0)]
    assert jax_trace._continues(two) == set()
    one = [event("t1", 0.0), event("t1", 1_000.0)]
    assert jax_trace._continues(one) == {id(one[1])}
