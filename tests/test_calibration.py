"""Calibrating this machine: the spec it writes, the cache, the names host and cuda:N.

The figures of a quick calibration are rough on a shared machine, so these tests assert the
spec's shape, its provenance and where it is kept, not how fast this machine is. The
acceptance figures (calibration time, repeatability, efficiencies) are checked by
``tests/test_measure_acceptance.py``, which runs only when asked to.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline import hardware
from pytest_roofline.cli import main
from pytest_roofline.errors import RooflineError
from pytest_roofline.measuring import calibration, cpu, probe
from pytest_roofline.specfiles import load_yaml


@pytest.fixture(scope="module")
def spec(quick_host_cache: Path) -> dict[str, Any]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(quick_host_cache))
        return load_yaml(calibration.cache_path("cpu"))


def test_spec_is_in_the_built_in_schema(spec: dict[str, Any]) -> None:
    chip = hardware.from_dict(spec, "<calibration>")
    assert chip.name == "host" and chip.default_dtype == "fp64"
    assert set(chip.matrix) == {"fp64", "fp32"} and all(v > 0 for v in chip.matrix.values())
    assert chip.memory_bandwidth > 0 and chip.memory_capacity > 0
    assert chip.vector_fallback == "matrix"  # a CPU's vector work runs on the same FMA units
    assert "calibrate" in chip.sources["calibration"]


def test_spec_records_its_provenance(spec: dict[str, Any]) -> None:
    prov = spec["provenance"]
    assert prov["device"] == "cpu" and prov["cores"] == probe.cores() and prov["rounds"] == 2
    assert prov["blas"]["numpy"] and re.match(r"\d{4}-\d\d-\d\dT", prov["date"])
    for name in ("matrix.fp64", "matrix.fp32", "memory.copy", "memory.add", "memory.triad"):
        figure = prov["figures"][name]
        # the best of the samples taken in the calmest conditions (cpu.calm)
        calm = cpu.calm(figure["samples"], figure.get("other_cores") or [None] * 2)
        assert len(figure["samples"]) == 2 and figure["value"] == pytest.approx(
            max(calm), rel=1e-5)
        assert 0 <= figure["spread"] < 1


def test_bandwidth_is_measured_past_the_last_level_cache(spec: dict[str, Any]) -> None:
    """A bandwidth measured in cache would be too high a roof; the arrays must not fit."""
    caches = probe.caches()
    llc = caches[-1].capacity if caches else 0.0
    for name in ("copy", "add", "triad"):
        detail = spec["provenance"]["figures"][f"memory.{name}"]["detail"]
        mib = float(re.search(r"3 arrays of (\d+) MiB", detail).group(1))  # type: ignore[union-attr]
        # 4x the LLC (32 MiB at least), capped so that two sets of three arrays stay within
        # an eighth of the memory (a VM may report a host's L3 of hundreds of MiB); even capped,
        # the three arrays together are larger than the LLC
        wanted = min(max(4 * llc, 32 * 2**20), probe.memory_capacity() / 48)
        assert mib * 2**20 >= wanted - 2**20  # the detail rounds to whole MiB
        assert 3 * mib * 2**20 > llc


def test_cache_levels_follow_the_os(spec: dict[str, Any]) -> None:
    names = [c.name for c in probe.caches()]
    assert [level["name"] for level in spec.get("onchip", [])] == names


def test_cache_folder_honours_xdg_cache_home(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert calibration.cache_dir() == tmp_path / "pytest-roofline"
    assert calibration.cache_path("host").parent == tmp_path / "pytest-roofline"
    assert calibration.cache_path("cpu").name.startswith("host-")
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the spec says: absolute only
    assert calibration.cache_dir() == Path.home() / ".cache" / "pytest-roofline"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert calibration.cache_dir() == Path.home() / ".cache" / "pytest-roofline"


def test_load_reads_the_cache_without_measuring(host_cache: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def no(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("calibrated although a cached spec exists")

    monkeypatch.setattr(calibration, "calibrate", no)
    assert calibration.load("host").name == "host"


def test_first_use_calibrates_once_with_progress_lines(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: dict[str, Any]) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    calls: list[str] = []
    lines: list[str] = []
    monkeypatch.setattr(calibration, "calibrate",
                        lambda device, **_: (calls.append(device), (spec, ["noisy"]))[1])
    monkeypatch.setattr(calibration, "progress", lines.append)
    assert calibration.load("host").name == "host"
    assert calibration.load("host").name == "host"
    assert calls == ["cpu"] and calibration.cache_path("cpu").is_file()
    assert lines[0].startswith("calibrating host (cpu) on first use")
    assert "warning: noisy" in lines and lines[-1].startswith("calibrated host in")


def test_a_lookup_says_it_measures_this_machine_before_measuring(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        spec: dict[str, Any]) -> None:
    """``get_hardware("host")`` with no calibration cached measures this machine: the line
    saying so is on stderr before the measuring starts (a lookup never calibrates silently),
    and the line saying it is done after."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    before: list[str] = []

    def measuring(device: str, **_: Any) -> tuple[dict[str, Any], list[str]]:
        before.append(capsys.readouterr().err)  # stderr as the measuring starts
        return spec, []

    monkeypatch.setattr(calibration, "calibrate", measuring)
    assert hardware.get_hardware("host").name == "host"
    after = capsys.readouterr().err
    assert len(before) == 1
    assert " ".join(before[0].split()).startswith(
        f"pytest-roofline: calibrating host (cpu) on first use; cached in {tmp_path}")
    assert after.startswith("pytest-roofline: calibrated host in ")
    hardware.get_hardware("host")  # cached now: measured once, and nothing said
    assert len(before) == 1 and capsys.readouterr().err == ""


def test_load_without_calibrating_names_the_command(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(RooflineError, match="pytest-roofline calibrate --device cpu"):
        calibration.load("host", calibrate_missing=False)


@pytest.mark.parametrize(("text", "expected"), [
    ("cpu", ("cpu", "host")), ("HOST", ("cpu", "host")), ("cuda", ("cuda:0", "cuda-0")),
    ("cuda:1", ("cuda:1", "cuda-1")), ("cuda-2", ("cuda:2", "cuda-2"))])
def test_devices(text: str, expected: tuple[str, str]) -> None:
    assert calibration.parse_device(text) == expected


@pytest.mark.parametrize("text", ["gpu", "cuda:x", "tpu:0", ""])
def test_bad_devices(text: str) -> None:
    with pytest.raises(RooflineError, match="allowed: cpu"):
        calibration.parse_device(text)


def test_get_hardware_host_is_the_calibration(host_cache: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hardware, "CATALOG", hardware.Catalog())
    chip = hardware.get_hardware("host")
    assert chip.name == "host" and chip.provenance["device"] == "cpu"
    assert hardware.get_hardware("HOST") is chip and "host" in hardware.list_hardware()


def test_disagreeing_samples_warn_and_confirmed_ones_do_not() -> None:
    steady = cpu.Figure("memory.add", (10.0, 9.8, 9.9))
    noisy = cpu.Figure("matrix.fp64", (10.0, 5.0, 4.0))
    assert steady.value == 10.0 and steady.spread == pytest.approx(0.01)
    assert noisy.spread == pytest.approx(0.5)
    assert cpu.disagreement([steady]) == []
    [warning] = cpu.disagreement([steady, noisy])
    assert "matrix.fp64 50%" in warning and "memory.add" not in warning
    assert cpu.confirmed([10.0, 9.6]) and not cpu.confirmed([10.0, 9.0]) \
        and not cpu.confirmed([10.0])


def test_cli_calibrate_writes_the_cache_and_the_output(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str],
                                                        spec: dict[str, Any]) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(calibration, "calibrate", lambda device, **_: (spec, []))
    out = tmp_path / "my-host.yaml"
    assert main(["calibrate", "--quick", "-o", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["spec"]["name"] == "host" and out.is_file()
    assert calibration.cache_path("cpu").is_file()
    assert hardware.from_dict(load_yaml(out), str(out)).name == "host"
    assert main(["calibrate"]) == 0
    text = capsys.readouterr().out
    assert "memory roof" in text and "matrix.fp64" in text


def test_cli_calibrate_refuses_a_bad_device(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--device", "gpu"]) == 2
    assert "allowed: cpu" in capsys.readouterr().err


def _cuda() -> bool:
    try:
        import torch  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


@pytest.mark.skipif(not _cuda(), reason="torch sees no CUDA GPU here (the GPU path needs one)")
def test_cuda_calibration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    spec, _ = calibration.calibrate("cuda:0", quick=True)
    chip = hardware.from_dict(spec, "<cuda>")
    assert chip.name == "cuda-0" and "cuda:0" in chip.aliases
    assert {"fp32", "fp16"} <= set(chip.matrix) and chip.memory_bandwidth > 1e11
    assert spec["provenance"]["model"] and spec["provenance"]["torch"]


@pytest.mark.skipif(_cuda(), reason="a CUDA GPU is present: the GPU path is tested instead")
def test_cuda_without_a_gpu_is_a_clear_error() -> None:
    with pytest.raises(RooflineError, match="torch"):
        calibration.calibrate("cuda:0", quick=True)


def test_a_busy_machine_is_named_in_the_warnings() -> None:
    figure = cpu.Figure("matrix.fp64", (10.0, 9.9))
    busy = cpu.Roofs(matrix={"fp64": figure}, memory={"add": figure}, levels=[], threads=2,
                     load=5.5)
    [warning] = busy.warnings()
    assert "load average 5.5 on 2 cores" in warning
    quiet = cpu.Roofs(matrix={"fp64": figure}, memory={"add": figure}, levels=[], threads=2,
                      load=1.0)
    assert quiet.warnings() == []


def test_concurrent_first_uses_calibrate_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              spec: dict[str, Any]) -> None:
    """pytest-xdist workers resolving host together: one measures, the others read its file."""
    import threading
    import time

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(calibration, "progress", lambda _text: None)
    calls: list[int] = []

    def slow(device: str, **_: Any) -> tuple[dict[str, Any], list[str]]:
        calls.append(1)
        time.sleep(0.2)
        return spec, []

    monkeypatch.setattr(calibration, "calibrate", slow)
    names: list[str] = []
    threads = [threading.Thread(target=lambda: names.append(calibration.load("host").name))
               for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert names == ["host"] * 3 and len(calls) == 1


def test_a_damaged_cached_spec_says_how_to_recover(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = calibration.cache_path("cpu")
    path.parent.mkdir(parents=True)
    path.write_text("name: host\nsources: {c: x}\nmemory: {capacity: 1 GB}\n")
    with pytest.raises(RooflineError, match="run pytest-roofline calibrate --device cpu"):
        calibration.load("host")


from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_rate = st.floats(1e6, 1e16, allow_nan=False)


@given(fp64=st.lists(_rate, min_size=1, max_size=5), fp32=st.lists(_rate, min_size=1,
       max_size=5), add=st.lists(_rate, min_size=1, max_size=5),
       copy=st.lists(_rate, min_size=1, max_size=5), l1=_rate,
       single=st.lists(_rate, min_size=1, max_size=5))
def test_any_calibration_round_trips_through_the_spec_schema(
        fp64: list[float], fp32: list[float], add: list[float], copy: list[float],
        l1: float, single: list[float]) -> None:
    roofs = cpu.Roofs(
        matrix={"fp64": cpu.Figure("matrix.fp64", tuple(fp64)),
                "fp32": cpu.Figure("matrix.fp32", tuple(fp32))},
        memory={"add": cpu.Figure("memory.add", tuple(add)),
                "copy": cpu.Figure("memory.copy", tuple(copy)),
                "add.1t": cpu.Figure("memory.add.1t", tuple(single))},
        levels=[cpu.Level("L1d", 32768.0, cpu.Figure("cache.L1d", (l1,)))], threads=2,
        rounds=len(fp64))
    spec = calibration.to_spec(roofs, name="host", facts={
        "capacity": 8e9, "model": "test CPU", "device": "cpu", "default_dtype": "fp64"})
    chip = hardware.from_dict(spec, "<round trip>")
    assert chip.matrix["fp64"] == pytest.approx(max(fp64), rel=1e-5)
    assert chip.matrix["fp32"] == pytest.approx(max(fp32), rel=1e-5)
    best = max(max(add), max(copy), max(single))
    assert chip.memory_bandwidth == pytest.approx(best, rel=1e-5)
    assert chip.onchip[0].bandwidth == pytest.approx(l1, rel=1e-5)
    # 1 thread: its own best; 2 threads: the best of all (2 threads reach what 1 reaches)
    assert chip.memory_by_threads[1] == pytest.approx(max(single), rel=1e-5)
    assert chip.memory_by_threads[2] == pytest.approx(best, rel=1e-5)


def test_the_memory_roof_of_each_thread_count_counts_fewer_threads_too() -> None:
    figure = cpu.Figure
    roofs = cpu.Roofs(matrix={}, levels=[], threads=4, memory={
        "copy.1t": figure("copy.1t", (20.0,)), "triad.1t": figure("triad.1t", (25.0,)),
        "copy": figure("copy", (30.0,)), "triad.2t": figure("triad.2t", (35.0,))})
    table = roofs.bandwidth_by_threads()
    assert {n: f.value for n, f in table.items()} == {1: 25.0, 2: 35.0, 4: 35.0}
    one_count = cpu.Roofs(matrix={}, levels=[], threads=1,
                          memory={"copy": figure("copy", (20.0,))})
    assert one_count.bandwidth_by_threads() == {}  # one core, or a GPU: no table


def test_spec_records_the_single_thread_memory_roof(spec: dict[str, Any]) -> None:
    chip = hardware.from_dict(spec, "<calibration>")
    figures = spec["provenance"]["figures"]
    if probe.cores() == 1:
        assert chip.memory_by_threads == {}
        return
    single = max(figures[f"memory.{k}.1t"]["value"] for k in ("copy", "add", "triad"))
    assert chip.memory_by_threads[1] == pytest.approx(single, rel=1e-5)
    assert chip.memory_by_threads[probe.cores()] == pytest.approx(chip.memory_bandwidth)


def test_levels_are_read_off_a_sweep_where_the_os_lists_no_caches() -> None:
    # a made-up sweep: 200 GB/s up to 32 KiB working sets, 100 GB/s up to 512 KiB,
    # 20 GB/s beyond (main memory): two levels, of twice the last working set on each plateau
    rates = {16e3: 200e9, 32e3: 190e9, 128e3: 100e9, 512e3: 95e9, 2e6: 20e9, 8e6: 21e9}
    sweep = [(ws, cpu.Figure(f"sweep.{ws:.0f}", (rate,))) for ws, rate in rates.items()]
    levels = cpu.levels_from_sweep(sweep)
    assert [(lv.name, lv.capacity, lv.bandwidth.value) for lv in levels] == [
        ("L1", 64e3, 200e9), ("L2", 1024e3, 100e9)]
    assert cpu.levels_from_sweep([]) == []


def test_sweep_sizes_reach_past_the_last_level_cache() -> None:
    sizes = cpu.sweep_sizes(32 * 2**20)
    assert sizes[0] == 16 * 1024 and sizes[-1] >= 64 * 2**20
    assert all(b == 4 * a for a, b in itertools.pairwise(sizes))


def test_spec_records_the_sweep(spec: dict[str, Any]) -> None:
    sweep = spec["provenance"]["sweep"]
    assert len(sweep) >= 4 and all(rate > 0 for _, rate in sweep)


def _roofs(others: tuple[float, ...], samples: tuple[float, ...] = (10.0, 9.9, 9.95)
           ) -> cpu.Roofs:
    figure = cpu.Figure("matrix.fp64", samples, others=others)
    return cpu.Roofs(matrix={"fp64": figure}, memory={"add": figure}, levels=[], threads=2,
                     load=1.0, rounds=len(samples))


def test_other_processes_use_makes_a_loaded_calibration_that_says_so() -> None:
    """One core of two kept busy by another process (others ~1.0): loaded, and the warning
    names the share; under a quarter of a core: quiet."""
    loaded = _roofs(others=(1.0, 0.95, 1.05))
    assert loaded.loaded and loaded.other_cores == pytest.approx(1.0)
    [warning] = loaded.warnings()
    assert "under load: other processes kept 1.0 of 2 cores busy" in warning
    assert "does not replace a quiet calibration" in warning
    assert loaded.conditions() == {"quiet": False, "load_average": 1.0, "other_cores": 1.0,
                                   "cores": 2, "settled": True}
    quiet = _roofs(others=(0.02, 0.1, 0.0))
    assert not quiet.loaded and quiet.warnings() == []


def test_the_value_is_the_best_sample_in_the_calmest_conditions() -> None:
    """A lucky sample taken while the other processes paused is not the figure when the
    others were taken under load: two calibrations agree on like conditions only. With the
    load unknown every sample counts."""
    figure = cpu.Figure("matrix.fp64", (50.0, 80.0, 52.0, 51.0), others=(1.0, 0.1, 1.0, 1.1))
    assert figure.value == 80.0  # the calm sample wins when there is one
    steady = cpu.Figure("matrix.fp64", (50.0, 55.0, 52.0), others=(1.0, 1.3, 1.1))
    assert steady.value == 52.0  # 55 was taken with 0.3 more cores busy than the calmest
    assert cpu.Figure("x", (50.0, 55.0)).value == 55.0
    assert cpu.calm([1.0, 2.0], [None, 0.5]) == [1.0, 2.0]


def test_unsettled_samples_are_said_plainly() -> None:
    roofs = _roofs(others=(0.0, 0.0, 0.0))
    unsettled = cpu.Roofs(matrix=roofs.matrix, memory=roofs.memory, levels=[], threads=2,
                          rounds=3, unsettled=("fp64", "copy"))
    [line] = unsettled.warnings()
    assert "did not settle in 3 rounds" in line and "fp64, copy" in line
    assert unsettled.conditions()["settled"] is False


def test_a_loaded_calibration_does_not_replace_a_quiet_cached_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: dict[str, Any]) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    quiet_spec = {**spec, "provenance": {**spec["provenance"], "date": "2026-01-01",
                                          "conditions": {"quiet": True}}}
    loaded_spec = {**spec, "provenance": {**spec["provenance"], "conditions": {"quiet": False}}}
    path, kept = calibration.store("cpu", quiet_spec)
    assert kept is None and calibration.quiet(load_yaml(path)) is True
    path, kept = calibration.store("cpu", loaded_spec)
    assert kept is not None and "kept the quiet calibration of 2026-01-01" in kept
    assert calibration.quiet(load_yaml(path)) is True  # still the quiet one
    # a loaded calibration replaces a loaded one, and a quiet one replaces anything
    calibration.save(path, loaded_spec)
    assert calibration.store("cpu", loaded_spec)[1] is None
    assert calibration.store("cpu", quiet_spec)[1] is None


def test_the_other_processes_use_is_measured_on_linux() -> None:
    import time

    if probe.busy_seconds() is None:
        pytest.skip("the OS does not report busy CPU time (/proc/stat)")
    use = probe.OtherUse()
    time.sleep(0.05)
    cores = use.cores
    assert cores is not None and 0 <= cores <= probe.cores() + 0.5  # tick rounding


def _faster_than_bound(chip: hardware.Hardware) -> Any:
    import pytest_roofline as rl

    n = 20_000  # declared; the timing is a made-up 1 ns: beyond any roof
    return rl.analyze(rl.ops.elementwise(n, inputs=2, outputs=1, dtype="fp64"), chip,
                      measured=1e-9)


def test_a_roof_is_rechecked_before_a_faster_than_bound_fails(
        spec: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The roof the result used is measured again: when it holds the failure says so; when
    it moved the machine is calibrated again (here: a stand-in spec) and the failure says
    that, once per process and roof."""
    from pytest_roofline.measuring import recheck

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(recheck, "_DONE", {})
    chip = hardware.from_dict(spec, "<calibration>")
    result = _faster_than_bound(chip)
    assert result.regime == "memory"
    monkeypatch.setattr(recheck, "_measure_memory", lambda threads: chip.memory_bandwidth)
    held = recheck.recheck(result, chip)
    assert held is not None and "the roof holds" in held
    assert f"re-checked host's {probe.cores()}-thread memory roof" in held
    monkeypatch.setattr(recheck, "_DONE", {})
    monkeypatch.setattr(recheck, "_measure_memory", lambda threads: 3 * chip.memory_bandwidth)
    calls: list[bool] = []
    monkeypatch.setattr(calibration, "calibrate",
                        lambda device, quick=False: (calls.append(quick) or spec, []))
    moved = recheck.recheck(result, chip)
    assert moved is not None and "the roof moved. The machine was calibrated again" in moved
    assert calls == [bool(spec["provenance"]["conditions"].get("quick"))]
    assert recheck.recheck(result, chip) == moved and len(calls) == 1  # once per roof
    from pytest_roofline.measuring.diagnose import explain_faster

    text = explain_faster(result, chip, 0.0, moved)
    assert text.endswith(moved) and "if it was measured while the machine was busy" not in text


def test_only_a_cpu_calibration_is_rechecked(spec: dict[str, Any]) -> None:
    from pytest_roofline.measuring import recheck

    made_up = hardware.from_dict({**spec, "provenance": {}}, "<made-up>")
    assert recheck.recheck(_faster_than_bound(made_up), made_up) is None


def _with(spec: dict[str, Any], *, quick: bool, scale: float = 1.0,
          date: str = "2026-01-01") -> dict[str, Any]:
    """*spec* as a full or quick calibration whose figures are *scale* times its own."""
    figures = {k: {**f, "value": f["value"] * scale}
               for k, f in spec["provenance"]["figures"].items()}
    return {**spec, "provenance": {**spec["provenance"], "date": date, "figures": figures,
                                   "conditions": {"quick": quick}}}


def test_a_quick_calibration_never_replaces_a_full_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: dict[str, Any]) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path, kept = calibration.store("cpu", _with(spec, quick=False))
    assert kept is None
    # even a quick one that reads higher: its samples are fewer and smaller
    path, kept = calibration.store("cpu", _with(spec, quick=True, scale=2.0, date="later"))
    assert kept is not None and "a quick calibration never replaces a full one" in kept
    assert load_yaml(path)["provenance"]["date"] == "2026-01-01"
    # a full one replaces a full one, and --replace takes anything
    assert calibration.store("cpu", _with(spec, quick=False, date="full2"))[1] is None
    assert calibration.store("cpu", _with(spec, quick=True, date="q"), replace=True)[1] is None
    assert load_yaml(path)["provenance"]["date"] == "q"


def test_a_calibration_is_never_silently_lower_than_the_cached_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: dict[str, Any]) -> None:
    # the figures from the field: an fp64 GEMM peak of 104 GFLOP/s cached, then 21.6
    # measured on a busy runner (a ratio of 0.21); 9% lower is within LOWER and taken
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path, _ = calibration.store("cpu", _with(spec, quick=False))
    path, kept = calibration.store("cpu", _with(spec, quick=False, scale=0.21, date="busy"))
    assert kept is not None and "reads lower" in kept and "--replace" in kept
    assert load_yaml(path)["provenance"]["date"] == "2026-01-01"
    assert calibration.store("cpu", _with(spec, quick=False, scale=0.91, date="ok"))[1] is None
    assert calibration.store("cpu", _with(spec, quick=False, scale=3.0, date="up"))[1] is None
    assert load_yaml(path)["provenance"]["date"] == "up"
