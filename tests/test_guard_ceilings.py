"""Two ceilings per row: the % reads against the roof, the alarm against the physical limit.

The limit's figures are derived in each test from the chip's datasheet values (the spec
files cite them); the public traces are other people's runs (tests/data/traces/README.md),
each case checked against what the trace records.
"""

from __future__ import annotations

import gzip
import json
import math
import runpy
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_roofline as rl
from pytest_roofline.efficiency import ABOVE_ROOF, AT_BOUND, FASTER, efficiency
from pytest_roofline.engine.limits import cache_bytes, limit_of, theoretical_ratio
from pytest_roofline.hardware import Hardware, MemoryLevel, get_hardware
from pytest_roofline.judging.verdict import Check, breakdown
from pytest_roofline.measuring import ceilings
from pytest_roofline.profiling.jax import jax_trace
from pytest_roofline.profiling.jax.xplane import Event

pytest_plugins = ("pytester",)

DATA = Path(__file__).parent / "data" / "traces"
JAX_DATA = Path(__file__).parent / "data" / "jax_traces"
MB = 1e6


# -- the limit, worked out -----------------------------------------------------------------


def test_without_a_cache_bandwidth_only_the_bytes_beyond_the_cache_count() -> None:
    # H100 SXM: 3.35 TB/s HBM3 and a 50 MB L2 whose bandwidth NVIDIA does not publish
    # (specs/hardware/h100-sxm.yaml). add of 2**24 fp32 elements: 2 reads and 1 write of
    # 4 B each = 201.3 MB a call; the limit counts the 151.3 MB beyond the L2.
    chip = get_hardware("h100")
    assert chip.memory_bandwidth == 3.35e12 and cache_bytes(chip) == (50e6, None)
    n = 2**24
    r = rl.analyze(rl.ops.elementwise(n, inputs=2, outputs=1, dtype="fp32"), chip)
    assert r.bytes == 12 * n
    assert limit_of(r, chip) == pytest.approx((12 * n - 50e6) / 3.35e12, rel=1e-12)
    assert r.time == pytest.approx(12 * n / 3.35e12, rel=1e-12)
    # a working set inside the L2: no memory limit, only the vector peak's compute time
    small = rl.analyze(rl.ops.elementwise(2**20, inputs=2, outputs=1, dtype="fp32"), chip)
    assert limit_of(small, chip) == pytest.approx(2**20 / chip.vector["fp32"], rel=1e-12)


def test_a_published_cache_bandwidth_bounds_the_bytes_it_holds() -> None:
    # MI300X: 5.3 TB/s HBM3 and a 256 MB Infinity Cache at 17 TB/s (AMD's CDNA 3
    # whitepaper, specs/hardware/mi300x.yaml). 120 MB fits: 120 MB / 17 TB/s. 1.2 GB
    # does not: max(1.2 GB / 17 TB/s = 70.6 us, 0.944 GB / 5.3 TB/s = 178.1 us).
    chip = get_hardware("mi300x")
    assert chip.memory_bandwidth == 5.3e12 and cache_bytes(chip) == (256e6, 17e12)
    fits = rl.analyze(rl.ops.elementwise(10**7, inputs=2, outputs=1, dtype="fp32"), chip)
    assert fits.bytes == 120e6
    assert limit_of(fits, chip) == pytest.approx(120e6 / 17e12, rel=1e-12)
    big = rl.analyze(rl.ops.elementwise(10**8, inputs=2, outputs=1, dtype="fp32"), chip)
    assert limit_of(big, chip) == pytest.approx((1.2e9 - 256e6) / 5.3e12, rel=1e-12)


def test_a_published_chips_compute_limit_is_its_datasheet_peak() -> None:
    # a compute-bound bf16 GEMM on an H100: the datasheet's 989 TFLOP/s is already the
    # theoretical peak (units x FLOPs per clock x boost clock), so the limit is the bound
    r = rl.analyze(rl.ops.matmul(8192, 8192, 8192, dtype="bf16"), "h100")
    assert r.regime == "compute"
    assert limit_of(r, get_hardware("h100")) == pytest.approx(r.time, rel=1e-12)


def _calibrated(peaks: dict[str, float] | None) -> Hardware:
    """A calibrated CPU: a timed fp32 roof of 100 GFLOP/s and 20 GB/s, a 32 MiB L3."""
    limits: dict[str, Any] = {"llc_B": 32 * 2**20}
    if peaks is not None:
        limits["peaks"] = peaks
    return Hardware(name="host", memory_bandwidth=20e9, memory_capacity=64e9,
                    matrix={"fp32": 100e9}, default_dtype="fp32", vector_fallback="matrix",
                    onchip=(MemoryLevel("L3", 16 * 2**20, 200e9),),
                    provenance={"device": "cpu", "limits": limits})


def test_a_calibrated_chip_is_limited_by_its_theoretical_peak_never_its_timed_roof() -> None:
    # 2 * 1024^3 FLOP: 21.5 ms at the timed 100 GFLOP/s, 4.3 ms at a theoretical 500
    gemm = rl.ops.matmul(1024, 1024, 1024, dtype="fp32")
    chip = _calibrated({"fp32": 500e9})
    r = rl.analyze(gemm, chip)
    assert theoretical_ratio(chip, "matrix:fp32", 100e9) == pytest.approx(5.0)
    assert limit_of(r, chip) == pytest.approx(2 * 1024**3 / 500e9, rel=1e-12)
    # the cache the OS reports (32 MiB), not the sweep's, and no timed cache bandwidth
    assert cache_bytes(chip) == (32 * 2**20, None)
    # a precision with no theoretical figure has no compute limit: never the timed roof
    unknown = _calibrated(None)
    assert limit_of(rl.analyze(gemm, unknown), unknown) == 0.0
    # a GPU's calibration keeps no theoretical peaks: its timed GEMM roof stays its limit
    gpu = unknown.replace(provenance={"device": "cuda:0", "limits": {"llc_B": 50e6}})
    assert limit_of(rl.analyze(gemm, gpu), gpu) == pytest.approx(2 * 1024**3 / 100e9)


@settings(max_examples=60, deadline=None)
@given(chip=st.sampled_from(sorted(rl.list_hardware())),
       n=st.integers(1, 2**34), k=st.integers(1, 2**14), gemm=st.booleans())
def test_the_limit_is_never_above_the_bound_and_always_finite(chip: str, n: int, k: int,
                                                              gemm: bool) -> None:
    hw = get_hardware(chip)
    work = (rl.ops.matmul(max(1, n // 2**20), k, k, dtype=hw.default_dtype) if gemm
            else rl.ops.elementwise(n, inputs=2, outputs=1, dtype="fp32"))
    try:
        r = rl.analyze(work, hw)
    except rl.RooflineError:  # a precision this chip lacks
        return
    limit = limit_of(r, hw)
    assert math.isfinite(limit) and 0 <= limit <= r.time


# -- one rule, five outcomes -----------------------------------------------------------------


def test_above_the_roof_within_the_limit_is_a_finding_beyond_it_the_alarm() -> None:
    # bound 10 us, limit 5 us, 5% allowance
    above = efficiency(10e-6, 8e-6, limit=5e-6)
    assert above.above_roof and not above.faster and above.value is None
    assert above.note == ABOVE_ROOF and above.percent() == "125% cache"
    assert efficiency(10e-6, 8e-6, limit=5e-6, finding="peak").percent() == "125% peak"
    alarm = efficiency(10e-6, 4e-6, limit=5e-6)
    assert alarm.faster and alarm.note == FASTER and alarm.percent() == "250%!"
    # without a limit the roof is the limit: the alarm fires at the bound, as before
    assert efficiency(10e-6, 8e-6).faster
    assert efficiency(10e-6, 9.8e-6, limit=5e-6).note == AT_BOUND


def test_a_measured_test_and_its_breakdown_judge_alike() -> None:
    # 7% under its bound with an 8% spread: within the allowance (8% of the time), so at
    # the bound; the breakdown must say the same, not re-judge it with no spread
    work = rl.ops.elementwise(10**8, inputs=2, outputs=1, dtype="fp32")
    chip = get_hardware("h100")
    bound = rl.analyze(work, chip).time
    measured = SimpleNamespace(time=bound * 0.93, spread=0.08)
    r = rl.analyze(work, chip, measured=measured)
    assert r.efficiency is None and r.limit is not None and r.limit < r.time
    assert any("at the bound within noise" in note for note in r.notes)
    text = breakdown([Check(r, (), False, 0.08)])
    assert "at the bound within noise: 108% of it" in text and "faster" not in text
    assert r.to_dict()["limit_s"] == r.limit


# -- the host's theoretical peaks ------------------------------------------------------------


def test_host_peaks_are_cpus_times_fma_units_times_lanes_times_the_clock() -> None:
    # 2 CPUs x 2 FMA units x 16 fp32 lanes (AVX-512) x 2 FLOPs x 4.16 GHz = 532.48 GFLOP/s
    found = ceilings.peaks({"avx512f", "avx512_bf16"}, 2, 4.16e9)
    assert found["fp32"] == pytest.approx(532.48e9)
    assert found["fp64"] == pytest.approx(266.24e9)
    assert found["bf16"] == pytest.approx(1064.96e9)
    assert "int8" not in found and "fp16" not in found
    # AVX2: 8 fp32 lanes; AMX: 1,024 bf16 FLOPs a clock a core where that is more
    assert ceilings.peaks({"avx2"}, 1, 3e9)["fp32"] == pytest.approx(96e9)
    assert ceilings.peaks({"avx512f", "amx_bf16"}, 1, 2e9)["bf16"] == pytest.approx(2048e9)
    assert ceilings.peaks(set(), 4, 3e9) == {}  # no vector unit named: no figure


def test_the_reported_clock_gets_boost_headroom_without_cpufreq(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ceilings, "_read", lambda path: "")
    monkeypatch.setattr(ceilings.probe, "clock", lambda: 2.6e9)
    monkeypatch.setattr(ceilings.probe, "cpu_model", lambda: "Some CPU @ 2.20GHz")
    clock, how = ceilings.highest_clock()
    assert clock == pytest.approx(2.6e9 * ceilings.BOOST_HEADROOM) and "boost" in how


# -- public traces -----------------------------------------------------------------------------


def test_v100_resnet50_cache_rows_are_findings_never_alarms() -> None:
    # PyTorch's 2021 Kineto ResNet-50 trace, priced on a V100 (900 GB/s, 6 MB L2): eight
    # in-place elementwise rows beat the DRAM roof, their 6.3-25.7 MB a call partly in L2
    profile = rl.read_trace(DATA / "kineto_resnet50_v100_2021.json.gz", hw="v100")
    assert profile.faster == ()
    above = profile.above
    assert len(above) == 8 and all(r.regime == "memory" for r in above)
    assert all(r.percent().split()[1] == "cache" for r in above)
    # a finding never fails a gate: no line for these rows, even at 1% efficiency
    assert not [line for line in profile.check(0.01) for r in above if r.label in line]
    # add_ of two 1024x512 fp32 tensors: 6.29 MB a call, 6.99 us at 900 GB/s; the limit
    # is the 0.29 MB beyond the L2, 0.32 us; its fastest call ran in 4 us (175%)
    [row] = [r for r in above if r.op == "aten::add_" and r.shapes.startswith("1024x512x1")]
    assert row.bound / row.count == pytest.approx(3 * 2**21 / 900e9, rel=1e-9)
    assert row.limit / row.count == pytest.approx((3 * 2**21 - 6e6) / 900e9, rel=1e-9)
    assert row.percent() == "175% cache 13/16"
    record = row.to_dict()
    assert record["note"] == "above-roof" and record["above_calls"] == 13
    assert record["cell"] == "175% cache 13/16"


def _scaled(path: Path, op: str, dims: list[Any], factor: float, out: Path) -> Path:
    """A copy of *path* with the kernels launched by each *op* of these *dims* timed
    *factor* times as long."""
    data = json.loads(gzip.decompress(path.read_bytes()))
    events = data["traceEvents"]
    def recorded(event: dict[str, Any]) -> Any:  # "Input dims" in 2021, "Input Dims" now
        args = event.get("args") or {}
        return args.get("Input Dims", args.get("Input dims"))

    spans = [(e["ts"], e["ts"] + e["dur"], e.get("tid")) for e in events
             if e.get("name") == op and e.get("cat") in ("Operator", "cpu_op")
             and recorded(e) == dims]
    assert spans
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in ("Runtime", "cuda_runtime", "cuda_driver")
                and "correlation" in (
                    e.get("args") or {})
                and any(lo <= e["ts"] <= hi and e.get("tid") == tid for lo, hi, tid in spans)}
    scaled = 0
    for e in events:
        if e.get("cat") in ("Kernel", "kernel") and (e.get("args") or {}).get(
                "correlation") in launched:
            e["dur"] = e["dur"] * factor
            scaled += 1
    assert scaled
    with gzip.open(out, "wt") as handle:
        json.dump(data, handle)
    return out


def test_a_memory_kernel_several_times_the_cache_made_twice_as_fast_is_caught(
        tmp_path: Path) -> None:
    # div of 32x2048x7x7 fp32: 25.7 MB a call, four times the V100's 6 MB L2; its limit is
    # the 19.7 MB beyond it at 900 GB/s (77% of its bound). It ran at 110% of the roof (a
    # finding); halved, 220%: beyond the limit, the alarm
    path = _scaled(DATA / "kineto_resnet50_v100_2021.json.gz", "aten::div",
                   [[32, 2048, 7, 7], []], 0.5, tmp_path / "div_halved.json.gz")
    profile = rl.read_trace(path, hw="v100")
    [row] = [r for r in profile.rows if r.op == "aten::div" and r.shapes == "32x2048x7x7f32"]
    per_call = row.bytes / row.count
    assert per_call == pytest.approx(2 * 32 * 2048 * 49 * 4, rel=1e-9)
    assert row.limit / row.count == pytest.approx((per_call - 6e6) / 900e9, rel=1e-9)
    assert row.faster and row in profile.faster
    assert any("faster than physics on v100: div(" in line for line in profile.check({}))
    before = rl.read_trace(DATA / "kineto_resnet50_v100_2021.json.gz", hw="v100")
    [was] = [r for r in before.rows if r.op == "aten::div" and r.shapes == "32x2048x7x7f32"]
    assert was.above and not was.faster


@pytest.mark.parametrize("name", ["a100_hta_sampled_rank0.json.gz",
                                  "a100_hta_sampled_rank1.json.gz"])
def test_sampled_calls_missing_their_main_kernel_are_incomplete_never_judged(
        name: str) -> None:
    # HolisticTraceAnalysis's sampled A100 ranks: GEMMs whose only recorded kernel is a 1 us
    # memset or a split-K reduction (the sampler dropped the GEMM). Judged against the whole
    # GEMM's bound they read up to 420x faster than physics; they are incomplete calls.
    profile = rl.read_trace(DATA / name, hw="a100")
    assert profile.faster == ()
    incomplete = [u for u in profile.unpriced if u.cause == "incomplete call"]
    assert incomplete and "incomplete call" in profile.by_cause()
    assert all(u.name.endswith(("[Memset]", "[splitKreduce_kernel]")) for u in incomplete)
    assert all(r.percent().split()[1] == "cache" for r in profile.above)
    if name.endswith("rank1.json.gz"):
        names = {u.name for u in incomplete}
        assert "aten::mm(2048x1953f32,1953x1024f32) [Memset]" in names
        # its complete calls (218 us of cutlass GEMM each) keep their row, judged alone
        [row] = [r for r in profile.rows if r.label == "mm(2048x1953f32,1953x1024f32)"]
        assert not row.faster and row.efficiency is not None


def test_a100_trace_diff_control_elementwise_rows_are_cache_findings() -> None:
    # HTA's trace_diff control run on an A100 40 GB (1,555 GB/s, 40 MB L2): 19 fp32
    # elementwise rows moving 9.4-59.6 MB a call beat the DRAM roof (110-225%)
    profile = rl.read_trace(DATA / "a100_hta_trace_diff_control.json.gz")
    assert profile.hw == "a100-40gb" and profile.faster == ()
    assert len(profile.above) == 19
    for row in profile.above:
        assert row.regime == "memory" and row.bytes / row.count < 60e6
        assert row.limit is not None and row.limit < row.bound


def test_a_cpu_kernel_whose_count_is_three_times_too_high_is_caught(tmp_path: Path) -> None:
    # tests/data/traces/cpu_mlp.json.gz, recorded on 1 thread: the second linear (256 x
    # 2048 -> 512) ran at 37.9 GFLOP/s. Against a 1-thread AVX2 core at 3.0 GHz (1 x 2 FMA
    # units x 8 lanes x 2 x 3.0 GHz = 96 GFLOP/s theoretical) whose calibration timed
    # 30 GFLOP/s: honest, it is above the roof within the limit (126% peak); its batch
    # recorded as 768 (three times the FLOPs), 114 GFLOP/s beats the theoretical peak.
    peaks = ceilings.peaks({"avx2"}, 1, 3.0e9)
    assert peaks["fp32"] == pytest.approx(96e9)
    chip = Hardware(name="host", memory_bandwidth=10e9, memory_capacity=16e9,
                    matrix={"fp32": 30e9}, default_dtype="fp32", vector_fallback="matrix",
                    onchip=(MemoryLevel("L3", 32 * 2**20),),
                    provenance={"device": "cpu", "limits": {"peaks": peaks,
                                                            "llc_B": 32 * 2**20}})
    honest = rl.read_trace(DATA / "cpu_mlp.json.gz", hw=chip)
    [row] = [r for r in honest.rows
             if r.op == "aten::linear" and r.shapes.startswith("256x2048f32")]
    assert row.above and not row.faster and row.percent().endswith("peak")
    data = json.loads(gzip.decompress((DATA / "cpu_mlp.json.gz").read_bytes()))
    for event in data["traceEvents"]:
        dims = (event.get("args") or {}).get("Input Dims")
        if event.get("name") == "aten::linear" and dims and dims[0] == [256, 2048]:
            dims[0] = [768, 2048]
    path = tmp_path / "tripled.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(data, handle)
    tripled = rl.read_trace(path, hw=chip)
    [row] = [r for r in tripled.rows
             if r.op == "aten::linear" and r.shapes.startswith("768x2048f32")]
    assert row.faster and "theoretical peak" in row.cause()


# -- overlap is not nesting --------------------------------------------------------------------


def _event(name: str, start_ns: float, seconds: float) -> Event:
    return Event(name=name, plane="/device:GPU:0", line="Stream #1", start_ns=start_ns,
                 seconds=seconds, stats={"hlo_op": name})


def test_xspace_kernels_overlapping_by_a_few_ns_run_one_after_the_other() -> None:
    # TraceLens's gfx950 trace: a kernel starts 190 ns before the previous one (118.3 us)
    # ends; read as nested, the later one's 18 us came off the earlier one's time
    first = _event("loop_reduce_fusion.4", 0.0, 118.3e-6)
    second = _event("loop_add_fusion", 118.3e3 - 190, 18e-6)
    inside = _event("inner", 10e3, 1e-6)  # wholly inside the first: nested, as before
    own = dict((e.name, s) for e, s in jax_trace._own_times([first, second, inside]))
    assert own["loop_reduce_fusion.4"] == pytest.approx(117.3e-6)
    assert own["loop_add_fusion"] == pytest.approx(18e-6)
    assert own["inner"] == pytest.approx(1e-6)


def test_a_gfx950_stream_with_overlapping_kernels_keeps_each_kernels_duration() -> None:
    # TraceLens's gfx950 TransformerEngine trace: loop_reduce_fusion.4's five kernels took
    # 23.52 + 23.88 + 23.84 + 23.08 + 24.00 = 118.32 us, and a kernel of the next op starts
    # 31-84 ns before three of them end. Read as nested, that op's kernel came off
    # loop_reduce_fusion.4's time (100.3 us, 140% of its bound); it ran at 80%.
    pytest.importorskip("jax")
    profile = rl.read_trace(JAX_DATA / "gfx950_tracelens_te.xplane.pb")
    assert profile.hw == "mi355x"  # 256 CUs, 288 GB and a 2.4 GHz clock: no --hw needed
    [row] = [r for r in profile.rows if r.op == "loop_reduce_fusion.4"]
    assert row.count == 5 and row.measured == pytest.approx(118.32e-6, rel=1e-9)
    assert row.percent() == "80%" and not (row.faster or row.above)
    assert profile.faster == ()


def test_an_alarm_on_an_exact_count_never_blames_the_count(tmp_path: Path) -> None:
    # the H200 prefill's residual add of two 1x4096x4096 bf16 tensors moves its tensors'
    # own 100.7 MB a call (2 reads, 1 write); its limit counts the 37.8 MB beyond the 60 MiB
    # L2 at 4.8 TB/s (37.5% of its bound). Made 4x faster (93% -> 372% of its roof) it beats
    # that limit: the cause names the chip and the clock, never the count
    path = _scaled(DATA / "h200_llama3_8b_layer_prefill.json.gz", "aten::add",
                   [[1, 4096, 4096], [1, 4096, 4096], []], 0.25, tmp_path / "add.json.gz")
    profile = rl.read_trace(path)
    [row] = [r for r in profile.rows if r.op == "aten::add"
             and r.shapes.startswith("1x4096x4096bf16,1x4096x4096bf16")]
    assert row.bytes / row.count == pytest.approx(3 * 4096 * 4096 * 2, rel=1e-9)
    assert row.faster and row.category == "elementwise" and not row.assumed
    assert "its tensors' own" in row.likely and "overcounted" not in row.likely


def test_profiled_mlps_on_the_host_never_read_faster_than_physics(
        pytester: pytest.Pytester, request: pytest.FixtureRequest) -> None:
    # the suite benchmarks/guard_under_load.py runs 20 times busy and 20 quiet, run once
    # here: only the faster-than-physics check can fail its MLPs (1e-6 of the roof passes
    # anything real): a kernel above a calibrated roof that a busy moment lowered, or with
    # its data in the L3, is a finding
    pytest.importorskip("torch")
    pytest.importorskip("jax")
    request.getfixturevalue("host_cache")
    suite = runpy.run_path(str(Path(__file__).parents[1] / "benchmarks" /
                               "guard_under_load.py"))["MLPS"]
    pytester.makepyfile(test_mlps=suite)
    result = pytester.runpytest_inprocess("-p", "no:randomly", "--roofline-json=r.json")
    result.assert_outcomes(passed=3)
    report = json.loads((pytester.path / "r.json").read_text())
    profiles = [p for r in report["results"] for p in r.get("profile", [])]
    assert len(profiles) == 2 and not any(p["faster"] for p in profiles)


def test_a_finding_never_hides_a_slow_row_from_its_gate() -> None:
    # 16 calls of a 10 us bound whose limit is 1 us: one ran in 4 us (250% of the roof, data
    # in the cache: a finding), fifteen in 50 us. Together they took 754 us for 160 us of
    # bound (21%): the row's efficiency, which a 50% gate fails
    from pytest_roofline.profiling.model import Profile
    from pytest_roofline.profiling.rows import judged_row

    row = judged_row(op="aten::add", shapes="x", kernels=("add",),
                     calls=[(4e-6, 1)] + [(50e-6, 1)] * 15, bound=10e-6, limit=1e-6,
                     flops=0.0, nbytes=1e6, regime="memory", precision="vector:fp32",
                     tick=0.0, repeats=1, chip=get_hardware("h100"))
    assert row.above and not row.faster and row.percent() == "250% cache 1/16"
    assert row.efficiency == pytest.approx(160e-6 / 754e-6)
    profile = Profile(hw="h100-sxm", source="t", on_device=True, total=754e-6, rows=(row,),
                      unpriced=())
    [line] = profile.check(0.5)
    assert line.startswith("kernel add(x) ran at 21.2% of its roof")
