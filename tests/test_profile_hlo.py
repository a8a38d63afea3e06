"""A compiled XLA program read from its wire format, and one executed op priced from it:
programs written here field by field (every figure derived in the test), and real ones
(TraceLens's MI300X trace, tests/data/jax_traces) changed byte by byte. No JAX needed: the
reader and the pricing are pure Python.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_roofline as rl
from pytest_roofline.hardware import Hardware
from pytest_roofline.profiling.jax.hlo import parse_module
from pytest_roofline.profiling.jax.xplane import XPlaneError, read_space

MI300X = Path(__file__).parent / "data" / "jax_traces" / "mi300x_tracelens_jax08_gemm.xplane.pb"


# -- one executed op priced: a compiled program written here, field by field ---------------------


def _varint(value: int) -> bytes:
    """A protobuf varint; a negative int64 as its two's complement (ten bytes)."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _msg(*fields: tuple[int, Any]) -> bytes:
    """A protocol buffer message: ints as varints, text and bytes length-delimited, lists
    of ints packed."""
    out = bytearray()
    for number, value in fields:
        if isinstance(value, int):
            out += _varint(number << 3) + _varint(value)
            continue
        if isinstance(value, str):
            value = value.encode()
        elif isinstance(value, (list, tuple)):
            value = b"".join(_varint(v) for v in value)
        out += _varint(number << 3 | 2) + _varint(len(value)) + value
    return bytes(out)


#: XLA's PrimitiveType numbers
F32, BF16, S8, S32, TUPLE = 11, 16, 2, 4, 13


def _ins(uid: int, name: str, opcode: str, dims: tuple[int, ...], *extra: tuple[int, Any],
         element: int = F32, operands: tuple[int, ...] = ()) -> bytes:
    shape = _msg((2, element), (3, list(dims)))
    return _msg((1, name), (2, opcode), (3, shape), (35, uid), (36, list(operands)), *extra)


def _program() -> Any:
    """fusion(x [64,128], w [128,256], b [256]) = logistic(x @ w + b), fp32; a GEMM custom
    call with a 1 MiB workspace; a custom call of unknown target; an op of an element type
    XLA numbers 99 (none this reader knows)."""
    fused = _msg((1, "fused"), (5, 2), *((2, i) for i in (
        _ins(20, "p0", "parameter", (64, 128)),
        _ins(21, "p1", "parameter", (128, 256), (9, 1)),
        _ins(22, "p2", "parameter", (256,), (9, 2)),
        _ins(23, "dot", "dot", (64, 256), (30, _msg((1, [1]), (2, [0]))), operands=(20, 21)),
        _ins(24, "bias", "broadcast", (64, 256), operands=(22,)),
        _ins(25, "add", "add", (64, 256), operands=(23, 24)),
        _ins(26, "sig", "logistic", (64, 256), operands=(25,)))))
    gemm_shape = _msg((2, TUPLE), (4, _msg((2, BF16), (3, [512, 512]))),
                      (4, _msg((2, S8), (3, [1 << 20]))))
    gemm = _msg((1, "gemm"), (2, "custom-call"), (3, gemm_shape), (35, 14), (36, [15, 16]),
                (28, "__cublas$gemm"), (43, json.dumps({"gemm_backend_config": {
                    "dot_dimension_numbers": {"lhs_contracting_dimensions": ["1"],
                                              "rhs_contracting_dimensions": ["0"]}}})))
    entry = _msg((1, "main"), (5, 1), *((2, i) for i in (
        _ins(10, "x", "parameter", (64, 128)),
        _ins(11, "w", "parameter", (128, 256), (9, 1)),
        _ins(12, "b", "parameter", (256,), (9, 2)),
        _ins(13, "fusion", "fusion", (64, 256), (11, "kLoop"), (38, [2]),
             operands=(10, 11, 12)),
        _ins(15, "a16", "parameter", (512, 512), (9, 3), element=BF16),
        _ins(16, "b16", "parameter", (512, 512), (9, 4), element=BF16),
        gemm,
        _ins(17, "mine", "custom-call", (64,), (28, "my_kernel"), operands=(10,)),
        _ins(18, "odd", "negate", (64,), element=99, operands=(17,)))))
    module = _msg((1, "jit_f"), (3, fused), (3, entry), (5, 7), (6, 1))
    return parse_module(_msg((1, module)), "jit_f(7)")


def test_a_fusion_is_one_kernel_its_matrix_and_vector_work_overlapped() -> None:
    """Matrix 2·64·128·256 FLOPs, vector 64·256·(1 add + 4 logistic, the ops table), bytes
    its three operands and its result; on a chip of 1 GFLOP/s matrix, 10 MFLOP/s vector and
    1 TB/s its bound is the larger time (the vector one, 8.19 ms), never the sum."""
    from pytest_roofline.profiling.jax.hlo_pricing import price

    module = _program()
    fused = price(module, module.by_name["fusion"])
    assert not isinstance(fused, str)
    matrix, vector = 2 * 64 * 128 * 256, 64 * 256 * (1 + 4)
    assert float(fused.flops) == matrix + vector
    assert float(fused.bytes) == 4 * (64 * 128 + 128 * 256 + 256 + 64 * 256)
    chip = Hardware(name="slow-vector", memory_bandwidth=1e12, memory_capacity=16e9,
                    matrix={"fp32": 1e9}, vector={"fp32": 1e7}, default_dtype="fp32")
    bound = float(rl.analyze(fused, chip).time)
    assert bound == pytest.approx(max(matrix / 1e9, vector / 1e7), rel=1e-9)
    gemm = price(module, module.by_name["gemm"])
    assert not isinstance(gemm, str) and float(gemm.flops) == 2 * 512 ** 3
    assert float(gemm.bytes) == 2 * 3 * 512 * 512  # the workspace is scratch
    assert price(module, module.by_name["mine"]) == "no formula for custom call my_kernel"
    assert "unknown width" in str(price(module, module.by_name["odd"]))


def test_a_program_with_fields_of_the_wrong_kind_prices_or_says_why() -> None:
    """A computation id written as text, a dimension of -1 (a varint of 2^64 - 1) and one
    of 2^60 elements: each read as what it can be, never a TypeError or a negative byte."""
    from pytest_roofline.profiling.jax.hlo_pricing import price

    entry = _msg((1, "main"), (5, "one"), *((2, i) for i in (
        _ins(10, "x", "parameter", (64,)),
        _ins(11, "neg", "negate", ((1 << 64) - 1,), operands=(10,)),
        _ins(12, "huge", "negate", (1 << 30, 1 << 30), operands=(10,)))))
    module = parse_module(_msg((1, _msg((1, "m"), (3, entry), (5, "seven")))), "m")
    assert module.program_id == 0 and 0 in module.computations
    for name in ("neg", "huge"):
        assert "unknown width" in str(price(module, module.by_name[name]))


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_read_as_a_program_or_one_error(raw: bytes) -> None:
    try:
        module = parse_module(raw, "x")
    except XPlaneError as exc:
        assert "\n" not in str(exc)
        return
    assert module.by_name


_PROGRAM = next(stats["Hlo Proto"] for p in read_space(MI300X) for name, stats in
                p.metadata.items() if name.startswith("jit_dot(") and "Hlo Proto" in stats)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, len(_PROGRAM) - 1), st.integers(0, 255))
def test_a_flipped_program_prices_each_op_or_says_why(where: int, byte: int) -> None:
    """Any byte of a real compiled program changed: every instruction is priced (finite
    figures >= 0) or comes back with a reason; the reader fails only in one line."""
    from pytest_roofline.profiling.jax.hlo_pricing import price

    raw = bytearray(_PROGRAM)
    raw[where] = byte
    try:
        module = parse_module(bytes(raw), "flipped")
    except XPlaneError as exc:
        assert "\n" not in str(exc)
        return
    for ins in module.by_name.values():
        priced = price(module, ins)
        if not isinstance(priced, str):
            assert math.isfinite(float(priced.flops)) and float(priced.flops) >= 0
            assert math.isfinite(float(priced.bytes)) and float(priced.bytes) >= 0
