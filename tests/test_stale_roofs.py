"""A measurement judged against the roof it ran with (measuring/recheck.py, share.py, cpu.py).

Every load here is injected (a calibration's recorded ``other_cores``, a Measurement's own,
clocks that advance by set amounts), so these tests do not depend on the machine's load.
The figures: an add of two 64 MB fp64 arrays into a third moves 3 x 8,388,608 x 8 B =
201,326,592 B; against a 1-thread roof of 10 GB/s its bound is 20.13 ms.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import pytest_roofline as rl
from pytest_roofline import hardware
from pytest_roofline.judging.marker import Expectation
from pytest_roofline.judging.verdict import analyze_each
from pytest_roofline.measuring import cpu, probe, recheck, share
from pytest_roofline.measuring.diagnose import is_faster
from pytest_roofline.measuring.timing import Measurement, combined

N = 8_388_608
BYTES = 3 * N * 8
ONE_THREAD = 10e9  # B/s: the calibrated 1-thread roof
BOUND = BYTES / ONE_THREAD  # 20.13 ms


def _host(*, other_cores: float, device: str = "cpu") -> hardware.Hardware:
    """A calibration of this machine that saw *other_cores* cores kept busy by others."""
    return hardware.from_dict({
        "name": "host" if device == "cpu" else "cuda-0", "vendor": "test",
        "default_dtype": "fp64" if device == "cpu" else "bf16", "vector_fallback": "matrix",
        "sources": {"calibration": "measured here"},
        "memory": {"capacity": "8 GB", "source": "calibration",
                   "bandwidth": "12 GB/s" if device == "cpu" else "4 TB/s",
                   **({"by_threads": {1: f"{ONE_THREAD} B/s", 2: "12 GB/s"}}
                      if device == "cpu" else {})},
        "matrix": {"fp64": "20 GFLOP/s", "fp32": "40 GFLOP/s", "source": "calibration",
                   **({"bf16": "700 TFLOP/s"} if device != "cpu" else {})},
        "provenance": {"device": device, "cores": 2,
                       "model": probe.cpu_model() if device == "cpu" else "NVIDIA H200",
                       "conditions": {"quiet": other_cores < cpu.LOADED, "quick": True,
                                      "other_cores": other_cores}},
    }, "<test>")


def _measured(seconds: float, *, other_cores: float, cpu_time: float | None = None,
              parallelism: float = 1.0) -> Measurement:
    return Measurement(time=seconds, spread=0.01, best=seconds, samples=(seconds,),
                       parallelism=parallelism, here=True, other_cores=other_cores,
                       cpu_time=seconds if cpu_time is None else cpu_time)


def _judged(chip: hardware.Hardware, measured: Measurement) -> rl.Result:
    add = rl.ops.elementwise(N, inputs=2, outputs=1, dtype="fp64")
    [result] = analyze_each(Expectation(hw=(chip,)), add, measured=measured)
    assert isinstance(result, rl.Result)
    return result


@pytest.fixture
def remeasured(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The 1-thread roof measured again reads 25 GB/s (2.5x the calibration's); the
    recalibration it starts is a stand-in. Returns the thread counts re-measured."""
    calls: list[int] = []
    monkeypatch.setattr(recheck, "_DONE", {})
    monkeypatch.setattr(recheck, "_measure_memory", lambda threads: calls.append(threads)
                        or 25e9)
    monkeypatch.setattr(recheck, "_recalibrate", lambda provenance: "Calibrated again.")
    return calls


def test_a_measurement_beating_a_stale_roof_is_judged_against_the_roof_measured_now(
        remeasured: list[int]) -> None:
    # calibrated and timed under the same load: not stale by load, but 10 ms beats 20 ms
    chip = _host(other_cores=1.8)
    result = _judged(chip, _measured(0.010, other_cores=1.8))
    assert remeasured == [1]
    assert not is_faster(result, 0.01)
    assert result.time == pytest.approx(BYTES / 25e9)  # 8.05 ms
    assert result.efficiency == pytest.approx(BYTES / 25e9 / 0.010)
    assert any("was stale (the measurement beat its bound)" in n and "25 GB/s" in n
               for n in result.notes), result.notes


def test_a_calibration_under_load_is_re_measured_for_a_quieter_measurement(
        remeasured: list[int]) -> None:
    # 25 ms against a 20.1 ms bound is not faster (80%), but the calibration saw 1.8 cores
    # taken and the call 0.1: its roof is below this machine's now
    chip = _host(other_cores=1.8)
    result = _judged(chip, _measured(0.025, other_cores=0.1))
    assert remeasured == [1]
    assert result.efficiency == pytest.approx(BYTES / 25e9 / 0.025)  # 32%, not 80%
    assert any("calibrated while other processes kept 1.8 cores busy, and this call was "
               "timed with 0.1 busy" in n for n in result.notes), result.notes
    # a quiet calibration and a call as quiet are judged as they are, nothing re-measured
    assert recheck.stale(_host(other_cores=0.1), _measured(0.025, other_cores=0.0)) is None
    assert recheck.stale(chip, _measured(0.025, other_cores=1.7)) is None  # like load


def test_a_roof_that_holds_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(recheck, "_DONE", {})
    monkeypatch.setattr(recheck, "_measure_memory", lambda threads: ONE_THREAD * 1.05)
    result = _judged(_host(other_cores=1.8), _measured(0.010, other_cores=1.8))
    assert result.time == pytest.approx(BOUND) and is_faster(result, 0.01)
    assert "the roof holds" in (recheck.recheck(result, _host(other_cores=1.8)) or "")


def test_a_starved_single_threaded_call_is_set_against_its_share_of_a_core() -> None:
    # a quiet calibration; the call got 25 ms of a core in 100 ms of wall time while other
    # processes kept 1.75 of the 2 cores busy: 25 ms on the core against a 20.13 ms bound
    chip = _host(other_cores=0.0)
    result = _judged(chip, _measured(0.100, other_cores=1.75, cpu_time=0.025,
                                     parallelism=0.25))
    assert result.efficiency == pytest.approx(BOUND / 0.025)  # 0.805
    assert any("timed on a saturated machine" in n and "25%" in n for n in result.notes)
    # cores were free: the call waited on something else, and is judged on its wall time
    idle = _judged(chip, _measured(0.100, other_cores=0.2, cpu_time=0.025, parallelism=0.25))
    assert idle.efficiency == pytest.approx(BOUND / 0.100)
    # never past the roof: a call faster on its core than the bound reads at most 1
    fast = share.starved(_judged(chip, _measured(0.100, other_cores=1.9)), chip,
                         _measured(0.100, other_cores=1.9, cpu_time=0.010, parallelism=0.1))
    assert fast is not None, "a starved call on a saturated machine gets its share of a core"
    again = rl.analyze(rl.ops.elementwise(N, inputs=2, outputs=1, dtype="fp64"), fast[0],
                       measured=_measured(0.100, other_cores=1.9, cpu_time=0.010,
                                          parallelism=0.1))
    assert not is_faster(again, 0.01)
    # the share is capped where the bound meets the measured time: exactly at the roof
    assert again.efficiency == pytest.approx(1.0)


def test_a_gemm_above_a_gpu_calibrations_peak_raises_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_roofline.measuring import calibration, here
    from pytest_roofline.specfiles import load_yaml

    monkeypatch.setattr(here, "_visible_gpus", lambda: ["NVIDIA H200"])  # the one it is of
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(calibration, "software_key", lambda device: "test")
    gpu = _host(other_cores=0.0, device="cuda:0")
    path = calibration.save(calibration.cache_path("cuda:0"), {
        "name": "cuda-0", "sources": {"calibration": "measured"}, "default_dtype": "bf16",
        "memory": {"capacity": "8 GB", "bandwidth": "12 GB/s", "source": "calibration"},
        "matrix": {"bf16": "700 TFLOP/s", "source": "calibration"},
        "provenance": {"device": "cuda:0"}})
    # 2 x 8192^3 = 1.0995e12 FLOP in 1.40 ms: 785 TFLOP/s, above the calibrated 700
    matmul = rl.ops.matmul(8192, 8192, 8192, dtype="bf16")
    seconds = 2 * 8192 ** 3 / 785e12
    [result] = analyze_each(Expectation(hw=(gpu,)), matmul,
                            measured=_measured(seconds, other_cores=0.0))
    assert isinstance(result, rl.Result)
    assert result.efficiency == pytest.approx(1.0), (result.notes, result.time, seconds)
    assert any("ran above cuda-0's calibrated bf16 GEMM peak, at 785 TFLOP/s against "
               "700 TFLOP/s" in n for n in result.notes), result.notes
    cached = load_yaml(path)
    assert cached["matrix"]["bf16"] == "7.85e+14 FLOP/s"
    assert cached["provenance"]["raised"] == {"matrix.bf16": 7.85e14}
    # a copy faster than DRAM is a warm cache, not a higher roof: left alone
    copy = rl.ops.elementwise(N, inputs=1, outputs=1, dtype="bf16")
    [warm] = analyze_each(Expectation(hw=(gpu,)), copy,
                          measured=_measured(1e-6, other_cores=0.0))
    assert isinstance(warm, rl.Result) and is_faster(warm, 0.01)


class _Clock:
    """perf_counter advancing 2 s a reading, process_time 1 s: each call 2 s of wall time
    of which the process ran 1 (another process had the core the rest)."""

    def __init__(self) -> None:
        self.wall = self.cpu = 0.0

    def perf_counter(self) -> float:
        self.wall += 1.0
        return self.wall

    def process_time(self) -> float:
        self.cpu += 0.5
        return self.cpu


def test_single_threaded_figures_and_gemm_peaks_are_timed_on_the_cores(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "time", _Clock())
    assert cpu._best_time(lambda: None) == 1.0  # one wall-clock span: 2 readings apart
    assert cpu._best_time(lambda: None, on_core=True) == 0.5
    assert cpu._best_time(lambda: None, on_core=True, threads=2) == 0.25
    # a 1-thread STREAM figure counts the time on the core; every core's, the wall time
    pools: list[Any] = []
    plan = cpu.Plan(stream_min=64 * 1024)
    one = cpu._stream(1, plan, 1024.0, pools)["copy"][0]()
    assert one == pytest.approx(16.0 * (64 * 1024 // 8) / 0.5)
    monkeypatch.setattr(cpu, "ON_CORE", False)
    off = cpu._stream(1, plan, 1024.0, pools)["copy"][0]()
    assert off == pytest.approx(one / 2)
    for pool in pools:
        pool.shutdown()


def test_blas_threads_follow_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        monkeypatch.delenv(name, raising=False)
    assert probe.blas_threads() == probe.cores()
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert probe.blas_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "lots")
    assert probe.blas_threads() == probe.cores()


def test_a_measurement_records_its_median_cpu_time() -> None:
    m = Measurement.from_samples([0.010, 0.030, 0.020], cpu=[0.004, 0.006, 0.005])
    assert m.cpu_time == pytest.approx(0.005) and m.to_dict()["cpu_time_s"] == 0.005
    both = combined([m, m])
    assert both.cpu_time == pytest.approx(0.010)
    assert Measurement.from_samples([0.01]).cpu_time is None


# -- the GPU calibration's GEMMs (measuring/gpu.py), without a GPU ---------------------------


def test_a_gpu_peak_is_the_best_of_several_gemm_shapes_and_layouts() -> None:
    from pytest_roofline.measuring import gpu

    shapes = gpu.gemm_shapes(8192, wide=True)
    assert [label for label, _, _ in shapes] == [
        "8192x8192x8192 nn", "8192x8192x8192 nt", "8192x8192x8192 tn",
        "4096x4096x14336 nn", "4096x4096x14336 nt"]  # Llama-3-8B's MLP projection
    assert len(gpu.gemm_shapes(4096, wide=False)) == 3  # fp64, fp32: the square ones
    # a sampler of the best: the MLP shape reads 780 where the square one reads 755
    rates = iter([755e12, 780e12, 760e12, 770e12])
    sample, winner = gpu.best_of({"square": lambda: next(rates), "mlp": lambda: next(rates)})
    assert sample() == 780e12 and sample() == 770e12
    assert winner() == "best of square, mlp: mlp"


def test_fp8_takes_the_fastest_path_the_build_offers() -> None:
    from pytest_roofline.measuring import gpu

    calls: list[dict[str, Any]] = []

    def scaled_mm(a: Any, b: Any, sa: Any, sb: Any, *, out_dtype: Any, **kwargs: Any) -> str:
        calls.append(kwargs)
        return "out"

    call, words = gpu.fp8_call(scaled_mm, "a", "b", 1.0, "bf16")
    assert words == "fast accumulation" and call() == "out"
    assert calls[-1] == {"use_fast_accum": True}

    def older(a: Any, b: Any, sa: Any, sb: Any, *, out_dtype: Any) -> str:
        return "out"  # a build without use_fast_accum: a TypeError, then the default

    call, words = gpu.fp8_call(older, "a", "b", 1.0, "bf16")
    assert words == "" and call() == "out"


def test_the_examples_threshold_sits_below_the_efficiencies_the_page_reports() -> None:
    """README's and docs/measure.md's test_add gate at a min_efficiency below the low end of
    the efficiencies docs/measure.md reports for that test on a loaded machine."""
    import re

    root = Path(__file__).resolve().parents[1]
    page = " ".join((root / "docs" / "measure.md").read_text().split())
    low, high = map(float, re.search(  # type: ignore[union-attr]
        r"then again with them running, read (\d\.\d+) to (\d\.\d+)", page).groups())
    assert 0 < low <= high <= 1
    for text in (page, (root / "README.md").read_text()):
        [gate] = re.findall(r'regime="memory", min_efficiency=(\d\.\d+)\)\ndef test_add',
                            text.replace("\n ", "\n")) or re.findall(
            r'regime="memory", min_efficiency=(\d\.\d+)\) def test_add', text)
        assert float(gate) <= low - 0.25, (gate, low)  # room for a shared memory bus


@pytest.mark.parametrize(("layout", "a_strides", "b_strides"), [
    ("nn", (48, 1), (32, 1)), ("nt", (48, 1), (1, 48)), ("tn", (1, 16), (32, 1))])
def test_each_gemm_layout_stores_its_operands_so(layout: str, a_strides: tuple[int, int],
                                                 b_strides: tuple[int, int]) -> None:
    """A 16 x 48 by 48 x 32 product, each operand row-major (n) or a column-major view (t),
    run here on the CPU with the code the GPU calibration runs."""
    torch = pytest.importorskip("torch")
    from pytest_roofline.measuring import gpu

    call = gpu._matmul(torch, "cpu", torch.float32, 16, 48, 32, layout)
    out = call()  # type: ignore[misc]
    assert tuple(out.shape) == (16, 32)
    a, b = call.__closure__[0].cell_contents, call.__closure__[1].cell_contents  # type: ignore[union-attr,index]
    assert (tuple(a.stride()), tuple(b.stride())) == (a_strides, b_strides)
    torch.testing.assert_close(out, a @ b)  # the product of the operands it holds
