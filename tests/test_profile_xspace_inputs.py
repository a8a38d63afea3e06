"""Bad input to the XSpace reader: each a one-line message naming the file or the program and
the field, never a ValueError or RecursionError from deep inside; and property tests of the
fields it reads from bytes (a TPU's op lines, a collective's replica groups, a backend
config). The XSpaces and programs are written here, field by field
(``tsl/profiler/protobuf/xplane.proto``, ``xla/service/hlo.proto``)."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_profile_hlo import BF16, F32, S8, S32, TUPLE, _ins, _msg

import pytest_roofline as rl
from pytest_roofline.hardware import Hardware
from pytest_roofline.profiling import ProfileError
from pytest_roofline.profiling.jax import hlo_pricing, jax_trace
from pytest_roofline.profiling.jax.hlo import MAX_DEPTH, parse_module
from pytest_roofline.profiling.jax.xplane import XPlaneError, parse_space

ROOMY = Hardware(name="roomy-cpu", memory_bandwidth=1e12, memory_capacity=16e9,
                 matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")


def _stat(key: int, value: Any) -> bytes:
    """An XStat: str (5), bytes (6), double (2) or int64 (4)."""
    if isinstance(value, str):
        return _msg((1, key), (5, value))
    if isinstance(value, bytes):
        return _msg((1, key), (6, value))
    if isinstance(value, float):
        return _msg((1, key)) + b"\x11" + struct.pack("<d", value)
    return _msg((1, key), (4, value))


def _plane(name: str, events: list[tuple[str, str, int, int, dict[str, Any]]],
           metadata: dict[str, dict[str, Any]] | None = None,
           stats: dict[str, Any] | None = None) -> bytes:
    """An XPlane: its events as (line, name, offset ps, duration ps, stats), its event
    metadata by name with their stats, its own stats."""
    names: dict[str, int] = {}
    for group in [stats or {}, *(m for m in (metadata or {}).values()),
                  *(e[4] for e in events)]:
        for key in group:
            names.setdefault(key, len(names) + 1)
    metas: dict[str, int] = {}
    for event_name in [*(metadata or {}), *(e[1] for e in events)]:
        metas.setdefault(event_name, len(metas) + 1)
    fields: list[tuple[int, Any]] = [(1, 1), (2, name)]
    lines: dict[str, list[bytes]] = {}
    for line, event_name, offset, duration, event_stats in events:
        lines.setdefault(line, []).append(_msg(
            (1, metas[event_name]), (2, offset), (3, duration),
            *((4, _stat(names[k], v)) for k, v in event_stats.items())))
    for i, (line, encoded) in enumerate(lines.items()):
        fields.append((3, _msg((1, i + 1), (2, line), *((4, e) for e in encoded))))
    for event_name, uid in metas.items():
        meta_stats = (metadata or {}).get(event_name, {})
        fields.append((4, _msg((1, uid), (2, _msg((1, uid), (2, event_name), *(
            (5, _stat(names[k], v)) for k, v in meta_stats.items()))))))
    for key, uid in names.items():
        fields.append((5, _msg((1, uid), (2, _msg((1, uid), (2, key))))))
    fields.extend((6, _stat(names[k], v)) for k, v in (stats or {}).items())
    return _msg(*fields)


def _space(*planes: bytes) -> bytes:
    return _msg(*((1, p) for p in planes))


def _program(*instructions: bytes, extra: tuple[bytes, ...] = ()) -> bytes:
    """An HloProto: an entry computation (id 1) of *instructions*, and *extra* ones."""
    entry = _msg((1, "main"), (5, 1), *((2, i) for i in instructions))
    return _msg((1, _msg((1, "jit_f"), *((3, c) for c in extra), (3, entry), (5, 7), (6, 1))))


def _negate_program() -> bytes:
    return _program(_ins(1, "x", "parameter", (64,)),
                    _ins(2, "neg", "negate", (64,), operands=(1,)))


def _cpu_trace(path: Path, program_name: str, program: bytes, op: str = "neg") -> Path:
    """A CPU trace: one executed op of the program *program_name*."""
    raw = _space(
        _plane("/host:CPU", [("main", op, 0, 1_000_000, {"hlo_op": op,
                                                          "hlo_module": "jit_f"})]),
        _plane("/host:metadata", [], {program_name: {"Hlo Proto": program}}))
    path.write_bytes(raw)
    return path


def _one_line(message: str, *words: str) -> None:
    assert "\n" not in message and len(message) < 200, message
    for word in words:
        assert word in message, (word, message)


def test_a_five_thousand_digit_program_id_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = _cpu_trace(tmp_path / "huge_id.xplane.pb", "jit_f(" + "7" * 5000 + ")",
                      _negate_program())
    with pytest.raises(ProfileError) as raised:
        rl.read_trace(path, hw=ROOMY)
    _one_line(str(raised.value), "huge_id.xplane.pb", "program id", "5000 digits")


def test_a_tpu_module_event_with_a_five_thousand_digit_id_is_one_line(tmp_path: Path) -> None:
    """A TPU op without a program_id stat takes its program from its XLA Modules event."""
    raw = _space(_plane("/device:TPU:0", [
        ("XLA Modules", "jit_f(" + "9" * 5000 + ")", 0, 10_000, {}),
        ("XLA Ops", "%neg = f32[64] negate(f32[64] %x)", 1_000, 2_000, {})]))
    with pytest.raises(ProfileError) as raised:
        jax_trace.collect(parse_space(raw), "tpu_ops.xplane.pb")
    _one_line(str(raised.value), "tpu_ops.xplane.pb", "XLA Modules", "program id")


@pytest.mark.parametrize(("field", "value"), [
    ("memory_size", "lots"), ("clock_rate", "fast"), ("core_count", 1e300),
    ("memory_size", float("nan"))])
def test_a_device_stat_of_the_wrong_kind_is_one_line_naming_file_and_field(
        tmp_path: Path, field: str, value: Any) -> None:
    stats = {"device_vendor": "AMD", "compute_cap_major": 9, "compute_cap_minor": 4,
             "memory_size": 206_141_652_992, "core_count": 304, "clock_rate": 2_100_000}
    stats[field] = value
    program = _negate_program()
    raw = _space(
        _plane("/device:GPU:0", [("Stream #1", "k", 0, 1_000_000, {
            "hlo_op": "neg", "hlo_module": "jit_f"})], stats=stats),
        _plane("/host:metadata", [], {"jit_f(7)": {"Hlo Proto": program}}))
    path = tmp_path / "gpu.xplane.pb"
    path.write_bytes(raw)
    with pytest.raises(ProfileError) as raised:
        rl.read_trace(path)
    _one_line(str(raised.value), "gpu.xplane.pb", field, "--hw")


def _nested_shape(depth: int) -> bytes:
    shape = _msg((2, F32), (3, [4]))
    for _ in range(depth):
        shape = _msg((2, TUPLE), (4, shape))
    return shape


def test_a_shape_nested_three_thousand_deep_names_the_program_and_the_field(
        tmp_path: Path) -> None:
    deep = _msg((1, "t"), (2, "tuple"), (3, _nested_shape(3000)), (35, 3), (36, [2]))
    program = _program(_ins(1, "x", "parameter", (64,)),
                       _ins(2, "neg", "negate", (64,), operands=(1,)), deep)
    with pytest.raises(XPlaneError) as raised:
        parse_module(program, "jit_f(7)")
    _one_line(str(raised.value), "jit_f(7)", "shape", "deeper than")
    # in a trace: its ops named unpriced with that reason, never a traceback
    profile = rl.read_trace(_cpu_trace(tmp_path / "deep.xplane.pb", "jit_f(7)", program),
                            hw=ROOMY)
    (missing,) = profile.unpriced
    assert "shape" in missing.reason and "deeper than" in missing.reason
    # at the limit it reads
    assert parse_module(_program(_msg((1, "t"), (2, "tuple"), (3, _nested_shape(MAX_DEPTH)),
                                      (35, 3))), "ok").by_name["t"].arrays


def test_fusions_nested_three_thousand_deep_are_named_unpriced(tmp_path: Path) -> None:
    """Computation i holds a fusion calling computation i + 1; the last negates."""
    depth = 3000
    comps = [_msg((1, f"c{depth}"), (5, 100 + depth), (2, _ins(
        10 * depth + 1, f"n{depth}", "negate", (64,))))]
    for i in range(depth - 1, -1, -1):
        comps.append(_msg((1, f"c{i}"), (5, 100 + i), (2, _ins(
            10 * i + 1, f"f{i}", "fusion", (64,), (38, [100 + i + 1])))))
    program = _program(_ins(1, "x", "parameter", (64,)),
                       _ins(2, "top", "fusion", (64,), (38, [100]), operands=(1,)),
                       extra=tuple(comps))
    module = parse_module(program, "jit_f(7)")
    reason = hlo_pricing.price(module, module.by_name["top"])
    assert isinstance(reason, str) and f"deeper than {MAX_DEPTH}" in reason
    profile = rl.read_trace(_cpu_trace(tmp_path / "fused.xplane.pb", "jit_f(7)", program,
                                       op="top"), hw=ROOMY)
    (missing,) = profile.unpriced
    assert "fusions nested deeper" in missing.reason


@pytest.mark.parametrize("config", [
    "[" * 100_000 + "]" * 100_000,
    '{"a":' * 100_000 + "1" + "}" * 100_000,
    json.dumps({"x": [{"y": 1}]}),
])
def test_a_backend_config_nested_a_hundred_thousand_deep_is_a_reason(config: str) -> None:
    gemm = _msg((1, "gemm"), (2, "custom-call"), (3, _msg((2, F32), (3, [8, 8]))), (35, 3),
                (36, [1, 2]), (28, "__cublas$gemm"), (43, config))
    module = parse_module(_program(_ins(1, "a", "parameter", (8, 8)),
                                   _ins(2, "b", "parameter", (8, 8), (9, 1)), gemm), "f")
    reason = hlo_pricing.price(module, module.by_name["gemm"])
    assert isinstance(reason, str) and "backend_config" in reason


# -- property tests: any bytes where these readers take bytes -------------------------------


@settings(max_examples=150, deadline=None)
@given(name=st.binary(max_size=80), stats=st.binary(max_size=60), ps=st.integers(-2, 2**70))
def test_any_tpu_op_event_is_an_op_or_one_error(name: bytes, stats: bytes, ps: int) -> None:
    """A TPU ``XLA Ops`` event of any name, stats bytes and times reads as an op, or is one
    XPlaneError/ProfileError line."""
    event = _msg((1, 1), (2, ps), (3, ps)) + _msg((4, stats))
    line = _msg((1, 1), (2, "XLA Ops"), (4, event))
    plane = _msg((1, 1), (2, "/device:TPU:0"), (3, line),
                 (4, _msg((1, 1), (2, _msg((1, 1), (2, name))))))
    try:
        trace = jax_trace.collect(parse_space(_space(plane)), "p")
    except (XPlaneError, ProfileError) as exc:
        _one_line(str(exc))
        return
    for event_read, seconds in trace.ops:
        assert seconds >= 0 and isinstance(event_read.stats["hlo_op"], str)


@settings(max_examples=150, deadline=None)
@given(groups=st.binary(max_size=40), field=st.sampled_from([87, 49, 52]),
       opcode=st.sampled_from(["all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                               "collective-permute", "all-reduce-start"]))
def test_any_replica_groups_price_or_say_why(groups: bytes, field: int, opcode: str) -> None:
    collective = _ins(2, "c", opcode, (64, 32), (field, groups), operands=(1,))
    try:
        module = parse_module(_program(_ins(1, "x", "parameter", (64, 32)), collective), "f")
    except XPlaneError as exc:
        _one_line(str(exc))
        return
    priced = hlo_pricing.price(module, module.by_name["c"])
    if isinstance(priced, str):
        assert len(priced) < 200
    else:
        assert all(float(k.link_bytes) >= 0 for k in priced.kernels)


@settings(max_examples=150, deadline=None)
@given(config=st.text(max_size=120) | st.recursive(
    st.integers() | st.text(max_size=5), lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3)).map(json.dumps))
def test_any_backend_config_prices_or_says_why(config: str) -> None:
    gemm = _msg((1, "gemm"), (2, "custom-call"), (3, _msg((2, F32), (3, [8, 8]))), (35, 3),
                (36, [1, 2]), (28, "__cublas$gemm"), (43, config))
    module = parse_module(_program(_ins(1, "a", "parameter", (8, 8)),
                                   _ins(2, "b", "parameter", (8, 8), (9, 1)), gemm), "f")
    priced = hlo_pricing.price(module, module.by_name["gemm"])
    assert isinstance(priced, str) or priced.kernels


def test_a_gpu_plane_s_kernels_time_its_ops_never_an_xla_ops_line_beside_them() -> None:
    """A GPU plane whose stream kernels name their op, and an ``XLA Ops`` line (XProf's
    derived view) of the same op: one execution, 1 us, never two."""
    raw = _space(_plane("/device:GPU:0", [
        ("Stream #1", "neg_kernel", 0, 1_000_000, {"hlo_op": "neg", "hlo_module": "jit_f"}),
        ("XLA Ops", "%neg = f32[64] negate(f32[64] %x)", 0, 1_000_000, {"program_id": 7})]))
    trace = jax_trace.collect(parse_space(raw), "gpu")
    assert [(e.name, s) for e, s in trace.ops] == [("neg_kernel", 1e-6)]


def _fusion_chain(depth: int) -> bytes:
    """Computation i holds a fusion calling computation i + 1 (uids 100 + i); the last,
    computation *depth*, negates 64 floats. The program's ``top`` fusion calls the first."""
    comps = [_msg((1, f"c{depth}"), (5, 100 + depth), (2, _ins(
        10 * depth + 1, f"n{depth}", "negate", (64,))))]
    for i in range(depth - 1, -1, -1):
        comps.append(_msg((1, f"c{i}"), (5, 100 + i), (2, _ins(
            10 * i + 1, f"f{i}", "fusion", (64,), (38, [100 + i + 1])))))
    return _program(_ins(1, "x", "parameter", (64,)),
                    _ins(2, "top", "fusion", (64,), (38, [100]), operands=(1,)),
                    extra=tuple(comps))


@pytest.mark.parametrize(("depth", "priced"), [(MAX_DEPTH - 1, True), (MAX_DEPTH, False)])
def test_fusions_nested_up_to_the_limit_are_priced(depth: int, priced: bool) -> None:
    # computation i is entered inside i fusions: the last at MAX_DEPTH - 1 is read (its
    # negate: 64 FLOPs), at MAX_DEPTH it is past the limit (what the mutation run found no
    # test for: the boundary)
    module = parse_module(_fusion_chain(depth), "jit_f(7)")
    result = hlo_pricing.price(module, module.by_name["top"])
    if priced:
        assert not isinstance(result, str), result
        assert result.flops == 64
    else:
        assert isinstance(result, str) and f"deeper than {MAX_DEPTH}" in result


def test_a_fusion_that_calls_itself_is_named_not_followed() -> None:
    # computation 100's fusion calls computation 100 again: a cycle no compiler writes,
    # refused at once by its uid, never followed down to the depth limit
    cycle = _msg((1, "c0"), (5, 100), (2, _ins(11, "f0", "fusion", (64,), (38, [100]))))
    program = _program(_ins(1, "x", "parameter", (64,)),
                       _ins(2, "top", "fusion", (64,), (38, [100]), operands=(1,)),
                       extra=(cycle,))
    module = parse_module(program, "jit_f(7)")
    result = hlo_pricing.price(module, module.by_name["top"])
    assert isinstance(result, str) and "called computation 100" in result
    assert "deeper" not in result



def test_a_dynamic_slice_reads_its_slice_and_its_indices() -> None:
    # dynamic-slice of 4 floats from 64 at an int32 index: it reads the slice and the index,
    # not the operand whole: min(64·4 + 4, 4·4 + 4) = 20 B read, 16 written (what the
    # mutation run found no test for)
    program = _program(_ins(1, "x", "parameter", (64,)),
                       _ins(2, "i", "parameter", (), (9, 1), element=S32),
                       _ins(3, "ds", "dynamic-slice", (4,), operands=(1, 2)))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.boundary_bytes(module, module.by_name["ds"]) == 20 + 16


def test_a_dot_reads_each_operands_own_batch_dimensions() -> None:
    # lhs (8, 4, 16) batched on its dimension 1, rhs (4, 16, 5) on its 0, contracting 16:
    # 2·4·8·5·16 = 5,120 FLOPs; lhs's batch read as rhs's (dimension 0, of 8) does not fit
    dims = _msg((1, [2]), (2, [1]), (3, [1]), (4, [0]))
    program = _program(_ins(1, "a", "parameter", (8, 4, 16)),
                       _ins(2, "b", "parameter", (4, 16, 5), (9, 1)),
                       _ins(3, "bmm", "dot", (4, 8, 5), (30, dims), operands=(1, 2)))
    module = parse_module(program, "jit_f(7)")
    result = hlo_pricing.price(module, module.by_name["bmm"])
    assert not isinstance(result, str), result
    assert result.flops == 2 * 4 * 8 * 5 * 16


def test_a_convolution_without_its_window_or_an_operand_is_a_reason() -> None:
    program = _program(_ins(1, "x", "parameter", (1, 3, 8, 8)),
                       _ins(2, "conv", "convolution", (1, 4, 6, 6), operands=(1,)))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.price(module, module.by_name["conv"]) == (
        "conv: a convolution without its window or operands")


def test_an_in_place_update_moves_its_update_at_most_the_buffer() -> None:
    # scatter of 8 int8 updates into a one-byte buffer (a segment sum into one element):
    # the buffer is updated in place (not read), the indices (8 x 1 int32, 32 B) and the
    # updates (8 B) are read, and at most the buffer's 1 B is written: 41 B
    program = _program(_ins(1, "buffer", "parameter", (1,), element=S8),
                       _ins(2, "idx", "parameter", (8, 1), (9, 1), element=S32),
                       _ins(3, "upd", "parameter", (8,), (9, 2), element=S8),
                       _ins(4, "sum", "scatter", (1,), element=S8, operands=(1, 2, 3)))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.boundary_bytes(module, module.by_name["sum"]) == 32 + 8 + 1
    # an update op recorded without its update operand moves nothing, never an index error
    cut = _program(_ins(1, "buffer", "parameter", (64,)),
                   _ins(2, "dus", "dynamic-update-slice", (64,), operands=(1,)))
    module = parse_module(cut, "jit_f(7)")
    assert hlo_pricing.boundary_bytes(module, module.by_name["dus"]) == 0.0


def test_a_fusion_with_two_outputs_writes_both_one_of_them_in_place() -> None:
    """fusion(buffer f32[64], update f32[4], i s32[]) = (negate(update), dynamic-update-
    slice(buffer, update, i)): the buffer is updated in place (not read, only the update's
    16 B written into it); the update (16 B) and the index (4 B) are read, and the first
    output, 4 floats, is written: 20 + 16 + 16 = 52 B."""
    array = _msg((2, F32), (3, [4]))
    both = _msg((2, TUPLE), (4, array), (4, _msg((2, F32), (3, [64]))))
    fused = _msg((1, "fused"), (5, 50), (6, 24), *((2, i) for i in (
        _ins(20, "p0", "parameter", (64,)),
        _ins(21, "p1", "parameter", (4,), (9, 1)),
        _ins(22, "p2", "parameter", (), (9, 2), element=S32),
        _ins(23, "neg", "negate", (4,), operands=(21,)),
        _ins(25, "dus", "dynamic-update-slice", (64,), operands=(20, 21, 22)),
        _msg((1, "out"), (2, "tuple"), (3, both), (35, 24), (36, [23, 25])))))
    program = _program(_ins(1, "buffer", "parameter", (64,)),
                       _ins(2, "update", "parameter", (4,), (9, 1)),
                       _ins(3, "i", "parameter", (), (9, 2), element=S32),
                       _msg((1, "f"), (2, "fusion"), (3, both), (35, 4), (36, [1, 2, 3]),
                            (38, [50])),
                       extra=(fused,))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.boundary_bytes(module, module.by_name["f"]) == 20 + 16 + 16


def test_a_fused_reduction_reads_its_operand_whole() -> None:
    # fusion(x f32[64]) = reduce(x, 0): only a slice's users read part of a parameter; a
    # reduction reads all 256 B of it to write 4: 260 B (not its output's 4 read)
    fused = _msg((1, "fused"), (5, 50), (6, 23), *((2, i) for i in (
        _ins(20, "p0", "parameter", (64,)),
        _ins(21, "zero", "constant", ()),
        _ins(23, "sum", "reduce", (), operands=(20, 21)))))
    program = _program(_ins(1, "x", "parameter", (64,)),
                       _ins(2, "f", "fusion", (), (38, [50]), operands=(1,)),
                       extra=(fused,))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.boundary_bytes(module, module.by_name["f"]) == 256 + 4


def test_a_fused_dynamic_slice_reads_its_slice_of_the_parameter() -> None:
    # fusion(x f32[64], i s32[]) = dynamic-slice(x, i) of 4: x's every user slices it, so
    # 16 B of it are read, and the index's 4; 16 written: 36 B
    fused = _msg((1, "fused"), (5, 50), (6, 22), *((2, i) for i in (
        _ins(20, "p0", "parameter", (64,)),
        _ins(21, "p1", "parameter", (), (9, 1), element=S32),
        _ins(22, "ds", "dynamic-slice", (4,), operands=(20, 21)))))
    program = _program(_ins(1, "x", "parameter", (64,)),
                       _ins(2, "i", "parameter", (), (9, 1), element=S32),
                       _ins(3, "f", "fusion", (4,), (38, [50]), operands=(1, 2)),
                       extra=(fused,))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.boundary_bytes(module, module.by_name["f"]) == 16 + 4 + 16


def test_a_root_slice_of_an_instruction_not_in_the_program_reads_whole() -> None:
    # a fusion whose root slices instruction 99, which the program does not hold (a
    # corrupt or cut proto): no partial read is assumed, the parameter (256 B) is read
    # whole and the slice's 16 B written, never an error
    fused = _msg((1, "fused"), (5, 50), (6, 22), *((2, i) for i in (
        _ins(20, "p0", "parameter", (64,)),
        _ins(21, "neg", "negate", (64,), operands=(20,)),
        _ins(22, "cut", "slice", (4,), operands=(99,)))))
    program = _program(_ins(1, "x", "parameter", (64,)),
                       _ins(2, "f", "fusion", (4,), (38, [50]), operands=(1,)),
                       extra=(fused,))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.boundary_bytes(module, module.by_name["f"]) == 256 + 16


def test_the_reasons_an_op_is_not_priced_are_cut_at_120_characters() -> None:
    # six custom calls of unknown targets in one fusion: each named, the whole reason cut
    # at 120 characters (a row's reason column, never a wall of text)
    calls = [_msg((1, f"c{i}"), (2, "custom-call"), (3, _msg((2, F32), (3, [4]))),
                  (35, 21 + i), (36, [20]), (28, f"vendor_kernel_number_{i}"))
             for i in range(6)]
    fused = _msg((1, "fused"), (5, 50), (6, 26), *((2, i) for i in (
        _ins(20, "p0", "parameter", (4,)), *calls)))
    program = _program(_ins(1, "x", "parameter", (4,)),
                       _ins(2, "f", "fusion", (4,), (38, [50]), operands=(1,)),
                       extra=(fused,))
    module = parse_module(program, "jit_f(7)")
    reason = hlo_pricing.price(module, module.by_name["f"])
    assert isinstance(reason, str) and len(reason) == 120
    assert reason.startswith("no formula for custom call vendor_kernel_number_0; ")


def test_an_op_on_an_empty_array_does_no_work() -> None:
    # negate of f32[0]: no element read, none written, no FLOP: zero work, not a row of 0s
    program = _program(_ins(1, "x", "parameter", (0,)),
                       _ins(2, "neg", "negate", (0,), operands=(1,)))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.price(module, module.by_name["neg"]) == hlo_pricing.ZERO



def _shape_of(*arrays: tuple[int, tuple[int, ...]]) -> bytes:
    parts = [_msg((2, element), (3, list(dims))) for element, dims in arrays]
    return parts[0] if len(parts) == 1 else _msg((2, TUPLE), *((4, p) for p in parts))


@pytest.mark.parametrize(("opcode", "arrays", "priced", "result_bytes", "dtype"), [
    # a variadic all-reduce of two tensors: both are its result, 32 + 64 B
    ("all-reduce", ((F32, (8,)), (F32, (16,))), "all-reduce", 96, "float32"),
    # an async all-gather's start holds (operand, result): the result, 16 floats
    ("all-gather-start", ((F32, (4,)), (F32, (16,))), "all-gather", 64, "float32"),
    # with its two u32 contexts after them (scalars: left out before the halves are taken)
    ("all-gather-start", ((F32, (4,)), (F32, (16,)), (8, ()), (8, ())), "all-gather", 64,
     "float32"),
    # an empty tensor is no part of it; of bf16 and f32 results the wider type prices it
    ("all-reduce", ((F32, (0,)), (BF16, (8,)), (F32, (8,))), "all-reduce", 48,
     "float32")])
def test_a_collective_is_priced_on_its_results(opcode, arrays, priced, result_bytes,
                                               dtype) -> None:
    from pytest_roofline.profiling import collectives

    shape = _shape_of(*arrays)
    ins = _msg((1, "coll"), (2, opcode), (3, shape), (35, 2), (36, [1]),
               (49, _msg((1, [0, 1, 2, 3]))))
    module = parse_module(_program(_ins(1, "x", "parameter", (4,)), ins), "jit_f(7)")
    got = hlo_pricing.price(module, module.by_name["coll"])
    want = collectives.price_hlo(priced, result_bytes=result_bytes, dtype=dtype, group=4)
    assert not isinstance(got, str) and not isinstance(want, str), (got, want)
    assert (got.flops, got.bytes, got.link_bytes) == (want.flops, want.bytes, want.link_bytes)


def test_a_collective_of_an_empty_tensor_moves_nothing() -> None:
    # an all-reduce of f32[0] sends no byte: zero work (it was refused as of an unknown
    # element width)
    ins = _msg((1, "coll"), (2, "all-reduce"), (3, _shape_of((F32, (0,)))), (35, 2),
               (36, [1]), (49, _msg((1, [0, 1, 2, 3]))))
    module = parse_module(_program(_ins(1, "x", "parameter", (0,)), ins), "jit_f(7)")
    assert hlo_pricing.price(module, module.by_name["coll"]) == hlo_pricing.ZERO


def test_an_update_of_a_computed_buffer_is_not_in_place_of_a_parameter() -> None:
    """fusion(x f32[64], u f32[4], i s32[]) = dynamic-update-slice(negate(x), u, i): the
    buffer updated is computed in the fusion, so x is read whole (256 B) with u (16) and i
    (4), and the whole result written (256): 532 B. Only a parameter's buffer is updated in
    place (where the negate is not there, 16 B would be written and x not read)."""
    fused = _msg((1, "fused"), (5, 50), (6, 24), *((2, i) for i in (
        _ins(20, "p0", "parameter", (64,)),
        _ins(21, "p1", "parameter", (4,), (9, 1)),
        _ins(22, "p2", "parameter", (), (9, 2), element=S32),
        _ins(23, "neg", "negate", (64,), operands=(20,)),
        _ins(24, "dus", "dynamic-update-slice", (64,), operands=(23, 21, 22)))))
    program = _program(_ins(1, "x", "parameter", (64,)),
                       _ins(2, "u", "parameter", (4,), (9, 1)),
                       _ins(3, "i", "parameter", (), (9, 2), element=S32),
                       _ins(4, "f", "fusion", (64,), (38, [50]), operands=(1, 2, 3)),
                       extra=(fused,))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.boundary_bytes(module, module.by_name["f"]) == 256 + 16 + 4 + 256


def test_a_root_slice_of_a_product_reads_its_operands_whole() -> None:
    # fusion(a, b f32[8, 8]) = dot(a, b)[0:1, :]: the row kept needs all of b and a row of
    # a, but the rule that reads a slice's share applies through elementwise ops only; a
    # product keeps its operands' whole reads: 256 + 256 read, 32 written
    fused = _msg((1, "fused"), (5, 50), (6, 23), *((2, i) for i in (
        _ins(20, "p0", "parameter", (8, 8)),
        _ins(21, "p1", "parameter", (8, 8), (9, 1)),
        _ins(22, "dot", "dot", (8, 8), (30, _msg((1, [1]), (2, [0]))), operands=(20, 21)),
        _ins(23, "row", "slice", (1, 8), operands=(22,)))))
    program = _program(_ins(1, "a", "parameter", (8, 8)),
                       _ins(2, "b", "parameter", (8, 8), (9, 1)),
                       _ins(3, "f", "fusion", (1, 8), (38, [50]), operands=(1, 2)),
                       extra=(fused,))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.boundary_bytes(module, module.by_name["f"]) == 256 + 256 + 32


def test_a_collective_of_one_element_is_priced() -> None:
    # a psum of one float (a loss, a norm) moves 4 B a device: priced, never taken for empty
    from pytest_roofline.profiling import collectives

    ins = _msg((1, "coll"), (2, "all-reduce"), (3, _shape_of((F32, (1,)))), (35, 2),
               (36, [1]), (49, _msg((1, [0, 1, 2, 3]))))
    module = parse_module(_program(_ins(1, "x", "parameter", (1,)), ins), "jit_f(7)")
    got = hlo_pricing.price(module, module.by_name["coll"])
    want = collectives.price_hlo("all-reduce", result_bytes=4, dtype="float32", group=4)
    assert not isinstance(got, str) and not isinstance(want, str), (got, want)
    assert got.link_bytes == want.link_bytes > 0


def test_a_sort_without_its_dimension_sorts_the_last() -> None:
    # a sort of f32[4, 8] that names no dimension sorts the last, as jnp.sort: 4 rows of 8,
    # 4·8·log2(8) = 96 comparisons (the first would be 8·4·2 = 64)
    program = _program(_ins(1, "x", "parameter", (4, 8)),
                       _ins(2, "s", "sort", (4, 8), operands=(1,)))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.price(module, module.by_name["s"]).flops == 96


def test_a_scatter_whose_combiner_is_missing_is_a_plain_scatter() -> None:
    # its combiner computation (99) is not in the program: no add is assumed (a plain
    # scatter computes nothing), never an error
    program = _program(_ins(1, "x", "parameter", (8,)),
                       _ins(2, "i", "parameter", (2, 1), (9, 1), element=S32),
                       _ins(3, "u", "parameter", (2,), (9, 2)),
                       _ins(4, "sc", "scatter", (8,), (38, [99]), operands=(1, 2, 3)))
    module = parse_module(program, "jit_f(7)")
    result = hlo_pricing.price(module, module.by_name["sc"])
    assert not isinstance(result, str) and result.flops == 0


def test_a_convolution_of_an_operand_not_in_the_program_is_a_reason() -> None:
    program = _program(_ins(1, "x", "parameter", (1, 3, 8, 8)),
                       _ins(2, "conv", "convolution", (1, 4, 6, 6), operands=(1, 77)))
    module = parse_module(program, "jit_f(7)")
    assert hlo_pricing.price(module, module.by_name["conv"]) == (
        "conv: a convolution without its window or operands")


def test_a_gemm_with_a_wider_third_operand_is_priced_at_its_product_s_precision() -> None:
    # a bf16 GEMM custom call given an f32 matrix to add (cuBLAS's C): its product runs
    # at bf16, 2·64³ FLOPs; the added operand's width is no part of the product's
    config = json.dumps({"gemm_backend_config": {"dot_dimension_numbers": {
        "lhs_contracting_dimensions": ["1"], "rhs_contracting_dimensions": ["0"]}}})
    gemm = _msg((1, "gemm"), (2, "custom-call"), (3, _msg((2, BF16), (3, [64, 64]))),
                (35, 4), (36, [1, 2, 3]), (28, "__cublas$gemm"), (43, config))
    program = _program(_ins(1, "a", "parameter", (64, 64), element=BF16),
                       _ins(2, "b", "parameter", (64, 64), (9, 1), element=BF16),
                       _ins(3, "c", "parameter", (64, 64), (9, 2)), gemm)
    module = parse_module(program, "jit_f(7)")
    result = hlo_pricing.price(module, module.by_name["gemm"])
    assert not isinstance(result, str), result
    assert [(k.unit, k.dtype, k.flops) for k in result.kernels] == [
        ("matrix", "bf16", 2 * 64 ** 3)]


def test_a_fusion_of_two_products_moves_its_boundary_s_bytes_once() -> None:
    # fusion(a, b f32[8, 8]) = (a @ b) @ b: two matrix kernels, 2·2·8³ = 2,048 FLOPs; the
    # bytes are the boundary's, a and b read and the result written once, 768 (the second
    # product, an epilogue of the first, adds none)
    dims = _msg((1, [1]), (2, [0]))
    fused = _msg((1, "fused"), (5, 50), (6, 23), *((2, i) for i in (
        _ins(20, "p0", "parameter", (8, 8)),
        _ins(21, "p1", "parameter", (8, 8), (9, 1)),
        _ins(22, "ab", "dot", (8, 8), (30, dims), operands=(20, 21)),
        _ins(23, "abb", "dot", (8, 8), (30, dims), operands=(22, 21)))))
    program = _program(_ins(1, "a", "parameter", (8, 8)),
                       _ins(2, "b", "parameter", (8, 8), (9, 1)),
                       _ins(3, "f", "fusion", (8, 8), (38, [50]), operands=(1, 2)),
                       extra=(fused,))
    module = parse_module(program, "jit_f(7)")
    result = hlo_pricing.price(module, module.by_name["f"])
    assert not isinstance(result, str), result
    assert (result.flops, result.bytes) == (2 * 2 * 8 ** 3, 3 * 256)
