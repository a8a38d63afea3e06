"""Fuzzing the trace-file reader over mutated real traces (tests/data/traces): whatever a
mutation does to a field, an event or the file's bytes, reading it gives either a profile
whose figures are finite and true to their ranges, or one ``RooflineError`` of one line:
never another exception, NaN, or a share priced above 100%."""

from __future__ import annotations

import copy
import gzip
import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest_roofline as rl
from pytest_roofline.hardware import Hardware

pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "traces"
GPU = "h200_matmul_gelu_sdpa.json.gz"  # kernels, launches, memsets, deviceProperties
CPU_TRACE = "cpu_mlp.json.gz"
CPU = Hardware(name="cpu-sketch", memory_bandwidth=20e9, memory_capacity=16e9,
               matrix={"fp32": 1e11}, default_dtype="fp32", vector_fallback="matrix")

FIELDS = ["ph", "cat", "name", "pid", "tid", "ts", "dur", "args"]
ARGS = ["Input Dims", "Input type", "Concrete Inputs", "Input Strides", "correlation",
        "bytes"]
DEVICE = ["name", "totalGlobalMem"]

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70)
           | st.sampled_from([10 ** 400, -(10 ** 400), 2 ** 62, 2 ** 53 + 1])
           | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
           | st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "aten::name", "aten::mm",
                              "X", "float", "80GB"]))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)

mutation = st.one_of(
    st.tuples(st.just("field"), st.integers(0, 10 ** 6), st.sampled_from(FIELDS), values),
    st.tuples(st.just("arg"), st.integers(0, 10 ** 6), st.sampled_from(ARGS), values),
    st.tuples(st.just("drop"), st.integers(0, 10 ** 6), st.sampled_from(FIELDS), st.none()),
    st.tuples(st.just("copy"), st.integers(0, 10 ** 6), st.integers(0, 10 ** 6), st.none()),
    st.tuples(st.just("shift"), st.integers(0, 10 ** 6), st.sampled_from(["ts", "dur"]),
              st.floats(-1e6, 1e6)),
    st.tuples(st.just("device"), st.integers(0, 0), st.sampled_from(DEVICE), values),
)


@cache
def original(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress((DATA / name).read_bytes()))
    return data


def mutate(data: dict[str, Any], change: tuple[Any, ...]) -> None:
    kind, index, key, value = change
    events = data["traceEvents"]
    event = events[index % len(events)]
    if kind == "device":
        props = data.get("deviceProperties")
        if isinstance(props, list) and props and isinstance(props[0], dict):
            props[0][key] = value
    elif not isinstance(event, dict):
        return
    elif kind == "field":
        event[key] = value
    elif kind == "arg":
        if isinstance(event.get("args"), dict):
            event["args"][key] = value
    elif kind == "drop":
        event.pop(key, None)
    elif kind == "copy":  # an event twice: a duplicate correlation, an overlapping op
        events.insert(key % len(events), copy.deepcopy(event))
    elif kind == "shift" and isinstance(event.get(key), (int, float)):
        event[key] = event[key] + value


def check(profile: Any) -> None:
    for row in profile.rows:
        for figure in (row.measured, row.bound, row.flops, row.bytes):
            assert math.isfinite(figure) and figure >= 0, row
        assert row.efficiency is None or 0 <= row.efficiency <= 1
    for unpriced in profile.unpriced:
        assert math.isfinite(unpriced.seconds) and unpriced.seconds >= 0
    assert math.isfinite(profile.total) and profile.total >= 0
    assert 0 <= profile.priced_share <= 1 + 1e-9
    json.dumps(profile.to_dict(), allow_nan=False)
    profile.table(width=80)


def read(tmp_path: Path, data: dict[str, Any] | bytes, hw: Any, packed: bool) -> None:
    path = tmp_path / ("fuzz.json.gz" if packed else "fuzz.json")
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    path.write_bytes(gzip.compress(raw, compresslevel=1) if packed else raw)
    try:
        profile = rl.read_trace(path, hw=hw)
    except rl.RooflineError as exc:
        assert "\n" not in str(exc), str(exc)
        return
    check(profile)


@settings(max_examples=50, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(changes=st.lists(mutation, min_size=1, max_size=4), gpu=st.booleans(),
       packed=st.booleans())
def test_mutated_real_traces_read_or_fail_in_one_line(tmp_path: Path,
                                                      changes: list[tuple[Any, ...]],
                                                      gpu: bool, packed: bool) -> None:
    data = copy.deepcopy(original(GPU if gpu else CPU_TRACE))
    for change in changes:
        mutate(data, change)
    read(tmp_path, data, None if gpu else CPU, packed)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(cuts=st.lists(st.tuples(st.integers(0, 10 ** 6), st.binary(max_size=4)), min_size=1,
                     max_size=3), packed=st.booleans())
def test_mutated_bytes_read_or_fail_in_one_line(tmp_path: Path,
                                                cuts: list[tuple[int, bytes]],
                                                packed: bool) -> None:
    """Bytes overwritten anywhere in the JSON text, or (gzip) in the compressed stream."""
    raw = bytearray(json.dumps(original(CPU_TRACE)).encode())
    if packed:
        raw = bytearray(gzip.compress(bytes(raw), compresslevel=1))
    for at, replacement in cuts:
        at %= len(raw)
        raw[at: at + len(replacement)] = replacement
    path = Path(tmp_path / "bytes.json")
    path.write_bytes(bytes(raw))
    try:
        profile = rl.read_trace(path, hw=CPU)
    except rl.RooflineError as exc:
        assert "\n" not in str(exc), str(exc)
        return
    check(profile)
