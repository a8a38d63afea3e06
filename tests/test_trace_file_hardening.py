"""The trace-file reader against broken, hostile and odd files: every one a one-line
``TraceFileError`` (exit 2 on the command line) or a profile whose figures are true, never a
traceback from inside, a hang or a process killed for memory."""

from __future__ import annotations

import gzip
import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

import pytest_roofline as rl
from pytest_roofline.hardware import Hardware
from pytest_roofline.profiling.rules import MAX_BYTES
from pytest_roofline.profiling.torch import trace_file
from pytest_roofline.profiling.torch.trace_file import TraceFileError

pytest.importorskip("torch")

CPU = Hardware(name="cpu-sketch", memory_bandwidth=20e9, memory_capacity=16e9,
               matrix={"fp32": 1e11}, default_dtype="fp32", vector_fallback="matrix")


def op(name: str = "aten::mul", ts: Any = 0, dur: Any = 10, **extra: Any) -> dict[str, Any]:
    event = {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
             "dur": dur, "args": {"Input Dims": [[4, 4], [4, 4]],
                                  "Input type": ["float", "float"]}}
    event.update(extra)
    return event


def write(tmp_path: Path, events: list[Any], **top: Any) -> Path:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events, **top}))  # NaN, Infinity as JSON5
    return path


def one_line_error(path: Path, match: str, **kwargs: Any) -> str:
    with pytest.raises(TraceFileError, match=match) as info:
        rl.read_trace(path, hw=CPU, **kwargs)
    text = str(info.value)
    assert "\n" not in text and len(text) < 400
    return text


# -- reading and inflating ---------------------------------------------------------------------


def test_a_corrupt_gzip_is_named(tmp_path: Path) -> None:
    packed = bytearray(gzip.compress(json.dumps({"traceEvents": [op()]}).encode()))
    packed[12:20] = b"\xff" * 8  # the deflate stream, past the 10-byte header
    path = tmp_path / "t.json.gz"
    path.write_bytes(bytes(packed))
    one_line_error(path, "not valid gzip")


def test_a_gzip_bomb_is_refused_before_it_is_inflated_whole(tmp_path: Path) -> None:
    """64 MB of zeros pack into 64 kB; with a 1 MB limit the reader stops after 1 MB."""
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(gzip.compress(b" " * (64 << 20), compresslevel=1))
    assert path.stat().st_size < (1 << 20)
    one_line_error(path, r"inflates to more than 1048576 bytes \(max_bytes=1048576; raise",
                   max_bytes=1 << 20)


def test_a_file_past_the_limit_is_refused_and_the_limit_can_be_raised(tmp_path: Path) -> None:
    path = write(tmp_path, [op(ts=i * 20) for i in range(200)])
    size = path.stat().st_size
    one_line_error(path, f"larger than {size - 1} bytes", max_bytes=size - 1)
    assert rl.read_trace(path, hw=CPU, max_bytes=size).rows
    assert MAX_BYTES == 1 << 30  # the documented default (docs/profile.md), every format's
    with pytest.raises(rl.RooflineError, match="max_bytes=0 must be a whole number"):
        rl.read_trace(path, hw=CPU, max_bytes=0)


def test_deep_json_is_a_one_line_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"traceEvents": ' + "[" * 200_000 + "]" * 200_000 + "}")
    one_line_error(path, "nests its JSON deeper")


def test_deeply_nested_ops_are_refused_past_the_limit(tmp_path: Path) -> None:
    deep = [op(ts=i, dur=10_000 - 2 * i) for i in range(trace_file.MAX_DEPTH + 1)]
    one_line_error(write(tmp_path, deep), f"nest more than {trace_file.MAX_DEPTH} deep")
    assert rl.read_trace(write(tmp_path, deep[:-1]), hw=CPU).rows


def test_a_directory_a_fifo_and_an_unreadable_file_are_told_apart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a directory may be a jax.profiler trace's: read_trace says what it is and what to give
    with pytest.raises(rl.RooflineError, match="is a directory") as info:
        rl.read_trace(tmp_path, hw=CPU)
    assert "\n" not in str(info.value) and ".json" in str(info.value)
    if hasattr(os, "mkfifo"):
        fifo = tmp_path / "fifo.json"
        os.mkfifo(fifo)
        one_line_error(fifo, "not a regular file")
    path = write(tmp_path, [op()])

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "open", refuse)
    one_line_error(path, "cannot be read: Permission denied")


# -- the fields of an event --------------------------------------------------------------------


@pytest.mark.parametrize(("change", "match"), [
    ({"ts": float("nan")}, "ts=nan; expected a finite number"),
    ({"dur": float("inf")}, "dur=inf; expected a finite number of microseconds >= 0"),
    ({"dur": -5}, "dur=-5; expected a finite"),
    ({"ts": 10 ** 400}, "ts=.*expected a finite number"),
    ({"ts": "12"}, "ts='12'; expected a number of microseconds"),
    ({"dur": None}, "dur=None; expected a number"),
    ({"pid": [1]}, r"pid=\[1\]; expected a whole number or a string"),
    ({"tid": {"a": 1}}, "tid=.*expected a whole number or a string"),
    ({"cat": ["cpu_op"]}, "cat=.*expected a category name"),
    ({"args": [1, 2]}, r"args=\[1, 2\]; expected an object"),
    ({"name": 7}, "name=7; expected a string"),
    ({"args": {"Input Dims": [[{"x": 1}]], "Input type": ["float"]}}, "Input Dims"),
    ({"args": {"Input Dims": [[4]], "Input type": [3]}}, "Input type"),
])
def test_every_field_is_checked(tmp_path: Path, change: dict[str, Any], match: str) -> None:
    text = one_line_error(write(tmp_path, [op(ts=0), op(**{"ts": 20, **change})]), match)
    assert "event 1" in text


def test_a_list_as_a_correlation_id_and_a_bad_device_memory(tmp_path: Path) -> None:
    launch = {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
              "tid": 1, "ts": 1, "dur": 1, "args": {"correlation": [1]}}
    one_line_error(write(tmp_path, [op(), launch]), "correlation=.*whole number or a string")
    device = [{"name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": "80GB"}]
    one_line_error(write(tmp_path, [op()], deviceProperties=device),
                   "totalGlobalMem='80GB'; expected a number of bytes")


@pytest.mark.parametrize("key", ["totalGlobalMem", "numSms", "multiProcessorCount",
                                 "clockRate"])
@pytest.mark.parametrize("value", [10 ** 400, 2 ** 64, -1, float("nan"), float("inf")])
def test_device_numbers_are_bounded_before_arithmetic(tmp_path: Path, key: str,
                                                      value: float) -> None:
    """A 400-digit totalGlobalMem overflowed float() while naming the device; every number
    read from deviceProperties is checked against [0, 2**64) first (2**64 itself refused:
    the bound is exclusive)."""
    device = [{"name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85e9, key: value}]
    one_line_error(write(tmp_path, [op()], deviceProperties=device),
                   f"{key}=.*below 2\\*\\*64")


def test_huge_dims_and_the_aten_namespace_are_unpriced_not_crashes(tmp_path: Path) -> None:
    huge = op(ts=20, args={"Input Dims": [[10 ** 30, 4], [4, 4]],
                           "Input type": ["float", "float"]})
    strided = op(ts=40, args={"Input Dims": [[4, 4], [4, 4]], "Input type": ["float", "float"],
                              "Input Strides": [[2 ** 62, 1], [4, 1]]})
    big = op(ts=60, args={"Input Dims": [[2 ** 40, 2 ** 40], [2 ** 40, 2 ** 40]],
                          "Input type": ["float", "float"]})
    name = op(name="aten::name", ts=80)
    result = rl.read_trace(write(tmp_path, [op(), huge, strided, big, name]), hw=CPU)
    reasons = {u.name: u.reason for u in result.unpriced}
    assert "torch has no op aten::name" in reasons.values()
    assert any("dims" in r or "rebuild" in r for r in reasons.values()), reasons
    for row in result.rows:
        assert math.isfinite(row.bound) and row.bound >= 0


def test_the_command_line_exits_2_with_one_line(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_roofline.cli import main

    path = write(tmp_path, [op(dur=float("nan"))])
    assert main(["profile", str(path), "--hw", "h100-sxm"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "dur=nan" in err
    assert main(["profile", str(path), "--max-bytes", "10"]) == 2
    assert "raise it with max_bytes= or --max-bytes" in capsys.readouterr().err


# -- what reads but cannot be right ------------------------------------------------------------


def test_ops_that_overlap_without_nesting_run_after_each_other_and_are_named(
        tmp_path: Path) -> None:
    """aten::mul spans 0-100 us; aten::add starts inside it at 50 and runs to 10,000. Only
    containment is nesting: the add ran after the mul, with its whole 9,950 us (cut to the
    mul's end it read 50 us, 199x faster than it ran), and the mul keeps its 100 us."""
    events = [op(ts=0, dur=100), op(name="aten::add", ts=50, dur=9_950)]
    trace = trace_file.read(write(tmp_path, events))
    assert [(r.name, r.seconds) for r in trace.roots] == [
        ("aten::mul", pytest.approx(100e-6)), ("aten::add", pytest.approx(9_950e-6))]
    result = rl.read_trace(write(tmp_path, events), hw=CPU)
    assert result.total == pytest.approx(10_050e-6)
    assert result.priced_share <= 1.0
    assert any("overlap" in note and "'aten::add'" in note for note in result.notes)
    # a child that ends inside its parent is nested, as before
    nested = trace_file.read(write(tmp_path, [op(ts=0, dur=100),
                                              op(name="aten::add", ts=50, dur=40)]))
    assert [r.name for r in nested.roots] == ["aten::mul"]
    assert [c.name for c in nested.roots[0].children] == ["aten::add"]


def test_launches_sharing_a_correlation_id_are_named(tmp_path: Path) -> None:
    def launch(ts: int) -> dict[str, Any]:
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                "tid": 1, "ts": ts, "dur": 1, "args": {"correlation": 7}}

    kernel = {"ph": "X", "cat": "kernel", "name": "vectorized_elementwise_kernel", "pid": 0,
              "tid": 7, "ts": 200, "dur": 3, "args": {"correlation": 7}}
    events = [op(ts=0, dur=10), launch(2), op(ts=20, dur=10), launch(22), kernel, kernel]
    result = rl.read_trace(write(tmp_path, events), hw="h100-sxm")
    assert any("correlation id(s) are shared" in note and "7" in note
               for note in result.notes)
    clean = rl.read_trace(write(tmp_path, [*events[:2], kernel]), hw="h100-sxm")
    assert not any("correlation" in note for note in clean.notes)


def test_a_real_trace_reads_without_a_warning() -> None:
    """Kineto writes times in us since the epoch: read in seconds they round off, so an op
    that starts where the one before it ends (aten::copy_ after aten::empty_strided, 85
    times in this trace) must not read as overlapping it."""
    trace = trace_file.read(Path(__file__).parent / "data" / "traces" /
                            "v100_hta_trace_diff_test.json.gz")
    assert trace.warnings == ()


def test_calls_that_differ_only_in_a_size_1_stride_are_one_row() -> None:
    """The H200 decode layer concatenates its key and value caches: the new token's
    [16, 8, 1, 128] slice is contiguous in one and a transposed view in the other, strides
    differing only in the size-1 dimension (128 and 1024), which never moves a pointer.
    They were two rows of the same label; they are one of 6 calls."""
    from pytest_roofline.profiling.torch.join import unit_strides

    assert unit_strides([[16, 8, 1, 128]], [[1024, 128, 1024, 1]]) == [[1024, 128, 128, 1]]
    assert unit_strides([[[2, 1], [1, 3]], []], [[[1, 5], [9, 1]], []]) == [[[1, 1], [3, 1]],
                                                                          []]
    assert unit_strides([[4, 4]], [[1, 4]]) == [[1, 4]]  # a transpose stays one
    result = rl.read_trace(Path(__file__).parent / "data" / "traces" /
                           "h200_llama3_8b_layer_decode.json.gz")
    labels = [row.label for row in result.rows]
    assert len(labels) == len(set(labels)), labels
    (cache,) = [row for row in result.rows if row.label ==
                "cat([16x8x4095x128,16x8x1x128])"]
    assert cache.count == 6
