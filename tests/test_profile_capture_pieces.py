"""Piecewise graph captures: each begin/end capture segment of a capture trace is its own
graph, and the replays are matched to the segments by their sequence.

The round GPU of test_profile_guard (10 TFLOP/s fp32, 1 TB/s): an n x 1024 x 1024 fp32 GEMM
is bounded by 2 n 1024^2 / 1e13 s (compute-bound at these sizes: 214.7 us at n = 1024).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import pytest_roofline as rl
from pytest_roofline.profiling.torch.capture import Captured, assign

pytest.importorskip("torch")

from test_profile_guard import GPU, N, _replay_trace


def _bound(rows: int) -> float:
    return 2 * rows * N * N / 1e13


def _pieces(tmp_path: Path, segments: list[list[int]], name: str = "cap.json.gz") -> Path:
    """A capture trace of several begin/end capture segments, one aten::mm (n x 1024 x 1024
    fp32) launched per size in each, every launch capturing (no kernel ran)."""
    events: list[dict[str, Any]] = []
    at, corr = 0, 100
    for sizes in segments:
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamBeginCapture",
                       "pid": 1, "tid": 1, "ts": at, "dur": 1, "args": {"correlation": corr}})
        corr += 1
        for n in sizes:
            at += 10
            events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1,
                           "tid": 1, "ts": at, "dur": 5,
                           "args": {"Input Dims": [[n, N], [N, N]],
                                    "Input type": ["float", "float"]}})
            events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                           "pid": 1, "tid": 1, "ts": at + 1, "dur": 2,
                           "args": {"correlation": corr}})
            corr += 1
        at += 10
        events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamEndCapture",
                       "pid": 1, "tid": 1, "ts": at, "dur": 1, "args": {"correlation": corr}})
        corr += 1
        at += 10
    path = tmp_path / name
    with gzip.open(path, "wt") as handle:
        json.dump({"traceEvents": events}, handle)
    return path


def test_each_capture_segment_is_its_own_graph_and_replays_match_by_sequence(
        tmp_path: Path) -> None:
    # three pieces: 2 GEMMs of 1024 rows, 1 of 512, 2 of 256; a forward pass replays them
    # in order, twice: six replays, each priced by its own piece (never the lowest of the
    # two 2-kernel pieces, which the count alone would take)
    cap = _pieces(tmp_path, [[N, N], [512], [256, 256]])
    replay = _replay_trace(tmp_path, [[500, 500], [200], [100, 100]] * 2)
    profile = rl.read_trace(replay, hw=GPU, capture=cap)
    rows = {r.shapes: r for r in profile.rows}
    assert set(rows) == {"2 kernels, as cap.json.gz#1", "1 kernels, as cap.json.gz#2",
                         "2 kernels, as cap.json.gz#3"}
    for shapes, bound in (("2 kernels, as cap.json.gz#1", 2 * _bound(N)),
                          ("1 kernels, as cap.json.gz#2", _bound(512)),
                          ("2 kernels, as cap.json.gz#3", 2 * _bound(256))):
        assert rows[shapes].count == 2
        assert rows[shapes].bound == pytest.approx(2 * bound, rel=1e-6)
    assert not profile.unpriced
    assert any("cap.json.gz: 3 begin/end capture segments, one graph each" in n
               for n in profile.notes)


def test_a_replay_outside_the_sequence_falls_back_to_the_lowest_bound_of_its_count(
        tmp_path: Path) -> None:
    cap = _pieces(tmp_path, [[N, N], [512], [256, 256]])
    # a lone 2-kernel replay: both 2-kernel pieces have its count; the lower bound is #3's
    replay = _replay_trace(tmp_path, [[500, 500]])
    [row] = rl.read_trace(replay, hw=GPU, capture=cap).rows
    assert row.shapes == "2 kernels, as cap.json.gz#3, lowest of 2"
    assert row.bound == pytest.approx(2 * _bound(256), rel=1e-6)


def test_assign_takes_whole_runs_of_the_sequence_one_for_one() -> None:
    def piece(number: int, launches: int, bound: float) -> Captured:
        return Captured(source=f"c#{number}", launches=launches, bound=bound, flops=0.0,
                        bytes=0.0, regime="compute", precision="-", unpriced=(),
                        segment=number, file="c")

    pieces = (piece(1, 4, 3.0), piece(2, 15, 2.0), piece(3, 15, 1.0), piece(4, 12, 5.0))
    found = assign([4, 15, 15, 12, 15, 7], pieces)
    assert [f[0].source if f else None for f in found] == [
        "c#1", "c#2", "c#3", "c#4", "c#3", None]  # the lone 15: lowest; 7: no capture


def test_a_capture_without_segments_is_one_graph_as_before(tmp_path: Path) -> None:
    cap = _pieces(tmp_path, [[N, N]])  # one segment: the whole file, as a capture always was
    [row] = rl.read_trace(_replay_trace(tmp_path, [[300, 300]]), hw=GPU, capture=cap).rows
    assert row.shapes == "2 kernels, as cap.json.gz"


# -- vLLM's piecewise HIP graphs (TraceLens's MI300X traces, tests/data/traces/README.md) ------

VLLM = Path(__file__).parent / "data" / "traces" / "tracelens_mi300x_vllm_piecewise_replay.json.gz"
VLLM_CAPTURE = VLLM.with_name("tracelens_mi300x_vllm_piecewise_capture.json.gz")
_LAUNCHES = ("hipLaunchKernel", "hipModuleLaunchKernel", "hipExtModuleLaunchKernel")


def _events(path: Path) -> list[dict[str, Any]]:
    return [e for e in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
            if e.get("ph") == "X"]


def test_vllms_piecewise_replays_are_each_priced_as_its_capture_segment() -> None:
    # from the JSON: each begin/end capture segment's kernel launches, and each graph
    # replay's kernels (those carrying its hipGraphLaunch's correlation) and their time
    captured = _events(VLLM_CAPTURE)
    marks = sorted((e["ts"], e["name"]) for e in captured if e["name"] in (
        "hipStreamBeginCapture", "hipStreamEndCapture"))
    launches = sorted(e["ts"] for e in captured if e["name"] in _LAUNCHES)
    segments = [sum(1 for t in launches if begin <= t <= end)
                for (begin, _), (end, _) in zip(marks[::2], marks[1::2], strict=True)]
    assert segments == [4] + [15] * 23 + [12]  # 25 graphs, one a segment
    run = _events(VLLM)
    graphs = {e["args"]["correlation"] for e in run if e["name"] == "hipGraphLaunch"}
    kernels: dict[int, list[float]] = {}
    for e in run:
        if e.get("cat") == "kernel" and e["args"].get("correlation") in graphs:
            kernels.setdefault(e["args"]["correlation"], []).append(e["dur"] * 1e-6)
    assert sorted(map(len, kernels.values())) == sorted(segments)

    profile = rl.read_trace(VLLM, capture=VLLM_CAPTURE)
    replays = [r for r in profile.rows if r.op == "graph replay"]
    assert sum(r.count for r in replays) == len(graphs) == 25
    assert sum(r.measured for r in replays) == pytest.approx(
        sum(sum(v) for v in kernels.values()), rel=1e-9)  # 149.9 ms, every replay's kernels
    assert "graph replay" not in profile.by_cause()  # none left unpriced
    for row in replays:
        # "graph replay 15 kernels, as <capture>#k": the k-th segment holds as many
        count = int(row.shapes.split(" kernels")[0])
        k = int(row.shapes.rsplit("#", 1)[1].split(",")[0])
        assert segments[k - 1] == count and not row.faster
        assert row.bound is not None and 0 < row.bound <= row.measured
