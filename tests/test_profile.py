"""Measured per-kernel rooflines: trace files, the join of kernels to ops, the guard, the
in-process profile and the CLI.

The GPU path is tested through trace files: two real PyTorch profiler traces from other
people's GPU runs (tests/data/traces/README.md: a V100 and an A100, about 100,000 events
each) and hand-written traces whose every figure is derived in the test.
"""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pytest_roofline as rl
from pytest_roofline.efficiency import SPREAD_CAP, TOLERANCE
from pytest_roofline.hardware import Hardware
from pytest_roofline.profiling import ProfileError
from pytest_roofline.profiling.devices import chip_of, runs_tf32
from pytest_roofline.profiling.model import judge_calls
from pytest_roofline.profiling.rules import minimum_for, parse_minimum
from pytest_roofline.profiling.torch import pricing, trace_file

torch = pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "traces"
V100 = DATA / "v100_hta_trace_diff_test.json.gz"
A100 = DATA / "a100_hta_negative_queue_rank0.json.gz"
#: A CPU-like chip with round figures (fp32 100 GFLOP/s, 20 GB/s).
CPU = Hardware(name="cpu-sketch", memory_bandwidth=20e9, memory_capacity=16e9,
               matrix={"fp32": 1e11}, default_dtype="fp32", vector_fallback="matrix")
A100_PROPS = {"name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 84990623744}


# -- hand-written traces -----------------------------------------------------------------------


def _op(name: str, ts: float, dur: float, dims: list[Any], types: list[str],
        tid: int = 1) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts,
            "dur": dur, "args": {"Input Dims": dims, "Input type": types}}


def _launch(ts: float, corr: int) -> dict[str, Any]:
    return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
            "ts": ts, "dur": 2, "args": {"correlation": corr}}


def _kernel(name: str, ts: float, dur: float, corr: int | None) -> dict[str, Any]:
    args = {} if corr is None else {"correlation": corr}
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts,
            "dur": dur, "args": args}


def _write(tmp_path: Path, events: list[dict[str, Any]], props: Any = None,
           name: str = "t.json.gz") -> Path:
    data: dict[str, Any] = {"traceEvents": events}
    if props is not None:
        data["deviceProperties"] = [props]
    path = tmp_path / name
    with gzip.open(path, "wt") as handle:
        json.dump(data, handle)
    return path


N = 1024
GEMM = [[N], [N, N], [N, N], [], []], ["float", "float", "float", "Scalar", "Scalar"]


def _gemm_trace(tmp_path: Path, kernel: str, *, dur: float = 200.0) -> Path:
    """aten::linear -> aten::addmm launching a GEMM and cuBLAS's split-K reduce (50 us);
    a record_param_comms launching an NCCL kernel; a kernel launched outside any op."""
    return _write(tmp_path, [
        _op("aten::linear", 0, 100, [[N, N], [N, N], [N]], ["float"] * 3),
        _op("aten::addmm", 10, 80, *GEMM),
        _launch(20, 1), _launch(40, 2),
        _op("record_param_comms", 200, 50, [[N]], ["float"]),
        _launch(210, 3), _launch(300, 4),
        _kernel(f"void cutlass::Kernel<{kernel}>(Params)", 1000, dur, 1),
        _kernel("void splitKreduce_kernel<float>(cublasSplitKParams<float>)", 1300, 50, 2),
        _kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWork*)", 1400, 400, 3),
        _kernel("void multi_tensor_apply_kernel<Adam>(int)", 1900, 30, 4),
    ], A100_PROPS)


def test_an_op_owns_every_kernel_it_launched_and_the_rest_is_named(tmp_path: Path) -> None:
    profile = rl.read_trace(_gemm_trace(tmp_path, "cutlass_80_simt_sgemm_128x64"))
    [row] = profile.rows
    # the GEMM and its split-K reduce, 200 + 50 us, both owned by addmm (the innermost op)
    assert row.op == "aten::addmm" and row.count == 1
    assert row.measured == pytest.approx(250e-6)
    assert "splitKreduce_kernel" in row.kernels and "addmm" in row.kernels
    # fp32 on an A100 without TF32: the CUDA cores' 19.5 TFLOP/s (2 * 1024^3 FLOPs: 110 us;
    # memory 4 MiB x 4 = 16.8 MB / 2.039 TB/s = 8.2 us)
    assert row.precision == "vector:fp32" or row.precision.endswith("fp32")
    assert row.bound == pytest.approx(2 * N**3 / 19.5e12, rel=1e-3)
    assert row.efficiency == pytest.approx(row.bound / 250e-6)
    unpriced = {u.name: u for u in profile.unpriced}
    nccl = next(u for name, u in unpriced.items() if name.startswith("record_param_comms"))
    # a collective whose trace records no group size (no Group size, no distributedInfo)
    # is named, with why
    assert nccl.seconds == pytest.approx(400e-6)
    assert "its group size, element count or dtype is not recorded" in nccl.reason
    outside = unpriced["multi_tensor_apply_kernel"]
    assert outside.seconds == pytest.approx(30e-6) and "outside any" in outside.reason
    assert profile.total == pytest.approx(680e-6)
    assert profile.priced_share == pytest.approx(250 / 680)
    assert profile.hw == "a100-80gb-sxm"


def test_a_tf32_kernel_is_priced_at_the_tf32_peak(tmp_path: Path) -> None:
    # the same GEMM on CUTLASS's TF32 tensor-op kernel, 60 us + 50 us: at the fp32 peak its
    # bound (110 us) would beat the measurement; at TF32's 156 TFLOP/s it is 13.8 us
    profile = rl.read_trace(_gemm_trace(tmp_path, "cutlass_80_tensorop_s1688gemm_64x64",
                                        dur=60.0))
    [row] = profile.rows
    assert row.precision == "matrix:tf32" and not row.faster
    assert row.bound == pytest.approx(2 * N**3 / 156e12, rel=1e-3)
    assert row.efficiency == pytest.approx(row.bound / 110e-6)


@pytest.mark.parametrize("name", ["cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1",
                                  "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128",
                                  "ampere_tf32_s1688gemm_tf32_128x128_nn"])
def test_tf32_kernel_names_are_recognized(name: str) -> None:
    assert runs_tf32([name])
    assert not runs_tf32(["volta_sgemm_128x64_nn", "ampere_sgemm_64x32_nn",
                          "void at::native::vectorized_elementwise_kernel<4>"])


def test_a_kernel_faster_than_its_bound_is_flagged_never_an_efficiency(
        tmp_path: Path) -> None:
    # the fp32 GEMM priced at the CUDA-core peak (110 us) but measured 20 + 50 us: beyond
    # any slack, so the row has no efficiency and names the likely cause
    profile = rl.read_trace(_gemm_trace(tmp_path, "cutlass_80_simt_sgemm", dur=20.0))
    [row] = profile.rows
    assert row.faster and row.efficiency is None and profile.efficiency is None
    assert "FLOPs are overcounted" in row.cause()
    assert profile.to_dict()["rows"][0]["note"] == "faster-than-bound"
    [line] = profile.check({})
    assert "faster than physics" in line and "addmm" in line
    assert profile.check({}, allow_faster=True) == []
    # shown with its figure, never as 100%: 2 * 1024^3 FLOP / 19.5 TFLOP/s = 110 us against
    # 20 + 50 us measured is 157% of the bound
    figure = 2 * N**3 / 19.5e12 / 70e-6
    assert row.fastest == pytest.approx(figure, rel=1e-3)
    assert f"{figure:.0%}!" in profile.table() and f"({figure:.0%} of it)" in line


@given(bound=st.floats(0, 1e3), calls=st.lists(
    st.tuples(st.floats(0, 1e3), st.integers(1, 8)), min_size=1, max_size=20),
       spread=st.floats(0, 2), tick=st.sampled_from([0.0, 32e-9, 1e-6]))
def test_a_row_efficiency_is_a_fraction_or_none(
        bound: float, calls: list[tuple[float, int]], spread: float, tick: float) -> None:
    verdict, _ = judge_calls(bound, calls, tick=tick, spread=spread)
    assert verdict.efficiency is None or 0 <= verdict.efficiency <= 1
    assert not (verdict.faster and verdict.efficiency is not None)
    # flagged exactly when a call beats its bound beyond its own allowance: one tick per
    # kernel it timed, or a fraction of its time capped at SPREAD_CAP whatever the spread
    beyond = [bound > m + max(tick * k, min(SPREAD_CAP, max(TOLERANCE, spread)) * m)
              for m, k in calls]
    assert verdict.faster == any(beyond)
    assert verdict.faster_calls == sum(beyond)


# -- real GPU traces from other people's runs ---------------------------------------------------


@pytest.mark.parametrize(("path", "chip", "tf32"), [(V100, "v100", False),
                                                     (A100, "a100-80gb-sxm", True)])
def test_real_gpu_traces_are_priced_and_no_kernel_beats_its_bound(
        path: Path, chip: str, tf32: bool) -> None:
    profile = rl.read_trace(path)
    assert profile.hw == chip and profile.on_device
    assert not profile.faster  # no priced kernel beats its bound
    assert all(r.efficiency is not None and 0 < r.efficiency <= 1
               for r in profile.rows if not r.no_work and r.note is None)
    assert sum(r.count for r in profile.rows) > 5000  # thousands of calls priced
    assert 0.1 < profile.priced_share < 1
    # what is not priced is named with its time: compiled regions; the collectives are
    # priced on the link from their nccl: ranges (torch before 2.2 sizes none on
    # record_param_comms), all but those whose launch began before the trace's window
    names = " ".join(u.name for u in profile.unpriced)
    assert "CompiledFunction" in names and "record_param_comms" not in names
    comms = [r for r in profile.rows if r.op == "record_param_comms"]
    assert comms and all(r.regime == "network" for r in comms)
    assert all(c.bound is not None or "launch is not in the trace" in c.why
               for c in profile.collectives)
    assert sum(u.seconds for u in profile.unpriced) == pytest.approx(
        profile.total - profile.priced, rel=1e-6)
    matmuls = [r for r in profile.rows if r.op in ("aten::mm", "aten::addmm")]
    assert matmuls and all(r.regime for r in matmuls)
    assert any(r.precision == "matrix:tf32" for r in matmuls) is tf32


def test_a_large_trace_reads_in_seconds() -> None:
    # 105,167 events; under 3 s of CPU time on a quiet 2-core machine (bench_profile.py
    # measures it): here only a loose bound, the machine may be shared
    pricing._CACHE.clear()
    started = time.process_time()
    rl.read_trace(V100)
    assert time.process_time() - started < 30


def test_the_chip_comes_from_the_trace_or_hw(tmp_path: Path) -> None:
    assert chip_of({"name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16.9e9}).name == "v100"
    assert chip_of({"name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42.5e9}).name == \
        "a100-40gb"
    assert chip_of({"name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85e9}).name == \
        "h100-sxm"
    assert chip_of({"name": "NVIDIA H100 PCIe", "totalGlobalMem": 85e9}).name == "h100-pcie"
    with pytest.raises(rl.UnknownHardwareError, match="--hw"):
        chip_of({"name": "NVIDIA GeForce GTX 1080"})
    with pytest.raises(rl.UnknownHardwareError, match="--hw"):
        chip_of(None)
    assert rl.read_trace(V100, hw="a100").hw == "a100-80gb-sxm"


# -- CPU traces and the in-process profile ------------------------------------------------------


@pytest.mark.parametrize("name", ["cpu_mlp", "cpu_transformer_block"])
def test_recorded_cpu_traces_are_priced(name: str) -> None:
    profile = rl.read_trace(DATA / f"{name}.json.gz", hw=CPU)
    assert not profile.on_device and profile.priced_share > 0.9
    assert {"aten::linear", "aten::addmm"} & {r.op for r in profile.rows}


def test_a_cpu_trace_names_no_chip() -> None:
    with pytest.raises(ProfileError, match="hw="):
        rl.read_trace(DATA / "cpu_mlp.json.gz")


def _mlp(x: Any, w1: Any, w2: Any) -> Any:
    return torch.relu(x @ w1) @ w2


def test_profile_a_call_per_kernel_against_its_bound() -> None:
    x, w1, w2 = torch.randn(64, 128), torch.randn(128, 256), torch.randn(256, 128)
    # roofs no CPU reaches (10 TFLOP/s, 1 TB/s), so a real timing is never faster than its
    # bound: against the sketch's 100 GFLOP/s a many-core runner's matmul of 4.2 MFLOP
    # (42 us at that peak) could be, and the efficiency asserted below would be None
    roomy = CPU.replace(name="roomy-cpu", matrix={"fp32": 1e13}, memory_bandwidth=1e12)
    profile = rl.Profiler(hw=roomy, repeats=3)(_mlp, x, w1, w2)
    assert profile.repeats == 3 and profile.priced_share > 0.9
    labels = [r.op for r in profile.rows]
    assert labels.count("aten::matmul") == 2 and "aten::relu" in labels
    # figures per call: each op once; the matmuls' FLOPs those of 64x128x256 products
    assert all(r.count == 1 for r in profile.rows)
    matmul = next(r for r in profile.rows if r.op == "aten::matmul")
    assert matmul.flops == 2 * 64 * 128 * 256
    assert matmul.efficiency is not None and 0 < matmul.efficiency <= 1


def test_profile_refuses_a_chip_this_machine_does_not_hold_and_bad_settings() -> None:
    x = torch.randn(8, 8)
    with pytest.raises(ProfileError, match="refused"):
        rl.Profiler(hw="h100")(torch.relu, x)
    with pytest.raises(ProfileError, match="repeats"):
        rl.Profiler(repeats=0)
    with pytest.raises(ProfileError, match="callable"):
        rl.profile(3)


# -- pricing, rules, errors ---------------------------------------------------------------------


def test_pricing_rebuilds_recorded_calls_as_the_tracer_sees_them() -> None:
    mm = pricing.price("aten::mm", [[64, 128], [128, 256]], ("float", "float"), None)
    assert not isinstance(mm, str) and mm.flops == 2 * 64 * 128 * 256
    # a scalar the trace did not record takes the schema default (sum over dim=[]: all)
    total = pricing.price("aten::sum", [[64, 128], [], [], []],
                          ("float", "ScalarList", "Scalar", ""), None)
    assert not isinstance(total, str) and total.bytes == 64 * 128 * 4 + 4
    assert pricing.price("aten::view", [[4, 4], []], ("float", "ScalarList"),
                         ("", "[16]")) == pricing.ZERO
    assert "not an aten op" in str(pricing.price("fbgemm::x", [[4]], ("float",), None))
    assert "shapes" in str(pricing.price("aten::mm", None, None, None))


def test_an_out_tensor_is_written_not_read() -> None:
    a = torch.empty(1000, 1000, device="meta")
    out = torch.empty(1000, 1000, device="meta")
    written = rl.trace(lambda: torch.ops.aten.mul(a, 2.0, out=out))
    plain = rl.trace(lambda: torch.ops.aten.mul(a, 2.0))
    assert written.bytes == plain.bytes == 8e6  # read a, write the result: 4 MB each


def test_kernel_efficiency_limits_by_pattern() -> None:
    row = rl.KernelRow(op="aten::linear", shapes="", kernels=("addmm", "ampere_sgemm_128x64"),
                       count=1, measured=1.0, bound=0.3, flops=1.0, bytes=1.0,
                       regime="compute", precision="matrix:fp32", efficiency=0.3)
    assert minimum_for(row, 0.5) == 0.5
    assert minimum_for(row, {"*gemm*": 0.4, "linear": 0.9}) == 0.4  # the first that matches
    assert minimum_for(row, {"aten::addmm": 0.2}) == 0.2  # the traced kernel's name
    assert minimum_for(row, {"aten::relu": 0.2}) is None
    assert parse_minimum("40%") == 0.4
    for bad in (0, 1.5, "x", {}, {"": 0.5}, {"mm": 2}):
        with pytest.raises(ProfileError):
            parse_minimum(bad)


@pytest.mark.parametrize(("content", "match"), [
    (b"not json", "not JSON"), (b'{"x": 1}', "traceEvents"),
    (json.dumps({"traceEvents": [_op("aten::mm", 0, 1, [], [])]}).encode(), None)])
def test_bad_trace_files_are_one_line_errors(tmp_path: Path, content: bytes,
                                             match: str | None) -> None:
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    if match is None:  # an op without shapes: recorded without record_shapes=True
        path.write_text(json.dumps({"traceEvents": [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 0, "dur": 1,
             "args": {}}]}))
        match = "record_shapes"
    with pytest.raises(rl.RooflineError, match=match):
        rl.read_trace(path, hw=CPU)
    with pytest.raises(trace_file.TraceFileError, match="does not exist"):
        rl.read_trace(tmp_path / "missing.json")


# -- the command line ---------------------------------------------------------------------------


def test_cli_profile_prints_the_kernels_losing_most_time(
        capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_roofline.cli import main

    assert main(["profile", str(V100), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "on v100" in out and "priced" in out and "not priced" in out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert main(["profile", str(V100), "--json", "--top", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    # --top shapes the text only: the JSON document holds every row
    assert data["hw"] == "v100" and data["failures"] == []
    assert len(data["rows"]) == data["rows_total"] > 2
    assert data["max_efficiency"] <= 1
    assert main(["profile", str(V100), "--min-kernel-efficiency", "0.99"]) == 1
    assert "FAIL: kernel" in capsys.readouterr().out


def test_cli_profile_errors_are_one_line(capsys: pytest.CaptureFixture[str],
                                         tmp_path: Path) -> None:
    from pytest_roofline.cli import main

    assert main(["profile", str(tmp_path / "none.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "does not exist" in err
    assert main(["profile", str(V100), "--min-kernel-efficiency", "2"]) == 2
    assert "fraction" in capsys.readouterr().err
