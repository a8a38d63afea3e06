"""Which chip a profiler trace's device is (profiling/devices.py), the device section of the
spec schema, and the chips added for ROCm traces: each figure against its cited source.

Expected numbers come from the vendors' public figures, written here: AMD's MI210 datasheet
(104 CUs, 64 GB HBM2e at 1.6384 TB/s, 181.0 TFLOPS FP16/BF16, 45.3 TFLOPS FP64 matrix),
AMD's MI250X datasheet and ROCm's MI250 page (two GCDs of 110 CUs, 64 GB and 1.6384 TB/s
each: 383 / 2 = 191.5 TFLOPS BF16 per GCD), and the H200 acceptance run's own device
properties (docs/gpu-acceptance-h200.json: 62,914,560 B of L2).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import pytest_roofline as rl
from pytest_roofline import hardware
from pytest_roofline.errors import SpecError, UnknownHardwareError
from pytest_roofline.profiling import ProfileError
from pytest_roofline.profiling.devices import chip_of

ROOT = Path(__file__).resolve().parents[1]
GiB = 2 ** 30


def _device(name: str, units: int | None, memory_gib: float) -> dict[str, Any]:
    """A ROCm trace's deviceProperties entry (Kineto writes CUs as ``numSms``)."""
    out: dict[str, Any] = {"id": 0, "name": name, "totalGlobalMem": int(memory_gib * GiB)}
    if units is not None:
        out["numSms"] = units
    return out


@pytest.mark.parametrize(("name", "units", "memory", "chip"), [
    ("AMD Radeon Graphics", 104, 64, "mi210"),
    ("", 104, 64, "mi210"),
    ("AMD Radeon Graphics", 110, 64, "mi250x-gcd"),   # one GCD of an MI250X
    ("", 304, 192, "mi300x"),
    ("AMD Instinct MI210", 104, 64, "mi210"),
    ("AMD Instinct MI250X", 110, 64, "mi250x-gcd"),   # named: still one die
    ("NVIDIA H200", 132, 139.8, "h200"),
])
def test_a_device_is_identified_by_name_or_by_compute_units_and_memory(
        name: str, units: int, memory: float, chip: str) -> None:
    assert chip_of(_device(name, units, memory)).name == chip


@pytest.mark.parametrize(("device", "words"), [
    (_device("AMD Radeon Graphics", 256, 288), "it fits mi350x, mi355x: name the chip with"),
    (_device("AMD Radeon Graphics", 20, 12), "no built-in chip has them: name the chip"),
    (_device("", None, 64), "are not both recorded: name the chip with --hw"),
])
def test_a_device_that_fits_no_chip_or_several_is_refused_in_one_line(
        device: dict[str, Any], words: str) -> None:
    with pytest.raises(UnknownHardwareError) as info:
        chip_of(device)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_an_mi250x_trace_is_priced_at_one_gcd() -> None:
    module, die = hardware.get_hardware("mi250x"), hardware.get_hardware("mi250x-gcd")
    assert (module.device_is, module.die, module.compute_units) == ("die", "mi250x-gcd", 220)
    assert die.compute_units == 110 and die.device_is == "module"
    # one GCD: half the module (datasheet 383 TFLOPS BF16, 3.2768 TB/s, 128 GB)
    assert die.matrix["bf16"] == pytest.approx(383e12 / 2, rel=1e-3)
    assert die.memory_bandwidth == pytest.approx(3.2768e12 / 2)
    assert die.memory_capacity == pytest.approx(64e9)
    # a bf16 GEMM on one GCD's device is bound at one die's peak: twice the module's time
    w = rl.ops.matmul(8192, 8192, 8192, dtype="bf16")
    on_die = rl.analyze(w, chip_of(_device("AMD Instinct MI250X", 110, 64)))
    assert on_die.time == pytest.approx(2 * rl.analyze(w, module).time, rel=1e-3)


def test_mi210_is_its_datasheet() -> None:
    chip = hardware.get_hardware("mi210")
    assert chip.compute_units == 104 and chip.vendor == "AMD"
    assert chip.memory_bandwidth == pytest.approx(1.6384e12)  # 4,096 bits x 3.2 Gb/s
    assert chip.memory_capacity == pytest.approx(64e9)
    assert chip.matrix["bf16"] == chip.matrix["fp16"] == pytest.approx(181.0e12)
    assert chip.matrix["fp64"] == pytest.approx(45.3e12)
    assert chip.vector["fp64"] == pytest.approx(22.6e12)
    assert chip.links["pcie"].bandwidth == pytest.approx(32e9)  # Gen4 x16, one way
    assert [lv.capacity for lv in chip.onchip] == [8e6]  # 8 MB per GCD (CDNA 2)
    assert "fp8" not in chip.matrix and "tf32" not in chip.matrix  # CDNA 2 has neither


def test_the_h200_l2_is_what_the_device_reports() -> None:
    run = json.loads((ROOT / "docs" / "gpu-acceptance-h200.json").read_text())
    [l2] = [lv for lv in hardware.get_hardware("h200").onchip if lv.name == "l2"]
    assert l2.capacity == run["sections"]["device"]["l2_bytes"] == 60 * 2 ** 20
    assert hardware.get_hardware("h200").compute_units == run["sections"]["device"]["sms"]


def test_b200_has_its_pcie_gen5_link() -> None:
    b200 = hardware.get_hardware("b200")
    # PCIe 5.0 x16: 32 GT/s x 16 lanes x 128/130 / 8 = 63 GB/s each way, listed as 64
    assert b200.links["pcie"].bandwidth == pytest.approx(64e9)
    assert b200.links["pcie"].count == 1
    assert "PCIe Gen5 x16" in b200.sources["mlperf_b200"]


def test_every_on_chip_level_cites_a_source_in_its_spec() -> None:
    import yaml

    for path in sorted((ROOT / "specs" / "hardware").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        for level in data.get("onchip") or []:
            source = level.get("source")
            assert source in (data.get("sources") or {}), (path.name, level)


@pytest.mark.parametrize(("device", "error"), [
    ({"is": "die"}, "device.die"),
    ({"is": "module", "die": "x"}, "device.die"),
    ({"is": "chiplet"}, "device.is"),
    ({"compute_units": 0}, "device.compute_units"),
    ({"compute_units": 104, "source": "nowhere"}, "device.source"),
])
def test_a_bad_device_section_is_one_line_naming_the_field(device: dict[str, Any],
                                                           error: str) -> None:
    spec = {"name": "x", "sources": {"s": "a source"},
            "memory": {"capacity": "1 GB", "bandwidth": "1 TB/s", "source": "s"},
            "matrix": {"bf16": "1 TFLOP/s", "source": "s"},
            "device": {"source": "s", **device}}
    with pytest.raises(SpecError) as info:
        hardware.from_dict(spec, "<x>")
    assert error in str(info.value) and "\n" not in str(info.value)


def _mtia_trace(tmp_path: Path) -> Path:
    """A trace of host ops whose device work is MTIA's (Kineto's ``mtia_runtime`` and
    ``mtia_ccp_events`` categories), with no CUDA/HIP kernels."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0,
         "dur": 50, "args": {"Input Dims": [[64, 64], [64, 64]],
                              "Input type": ["float", "float"]}},
        {"ph": "X", "cat": "mtia_runtime", "name": "mtiaLaunchKernel", "pid": 1, "tid": 1,
         "ts": 10, "dur": 5, "args": {"correlation": 7}},
        {"ph": "X", "cat": "mtia_ccp_events", "name": "mm_kernel", "pid": 2, "tid": 3,
         "ts": 20, "dur": 30, "args": {"correlation": 7}},
    ]
    path = tmp_path / "mtia.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


def test_an_mtia_trace_is_refused_as_an_accelerator_not_read_as_a_cpu_trace(
        tmp_path: Path) -> None:
    path = _mtia_trace(tmp_path)
    with pytest.raises(ProfileError) as info:
        rl.read_trace(path)
    assert "an MTIA accelerator trace, not a CPU trace" in str(info.value)
    with pytest.raises(ProfileError):  # a chip given does not make its host ops its time
        rl.read_trace(path, hw="h100")


# The L2 of each GPU as its cited source gives it (decimal MB as the vendors print it; the
# H200's as the device reports it): NVIDIA's A100, H100, Ada (RTX 4090 72 MB, AD102 96 MB,
# AD104 48 MB), Volta (V100 6 MB), Turing (TU104 4 MB) and Blackwell RTX (RTX 5090 96 MB)
# whitepapers, the H20 brief (60 MB), Chips and Cheese's B200 measurement (126 MB), AMD's
# CDNA 2 white paper (8 MB per GCD) and ROCm's MI300/MI350 pages (4 MB per XCD, 8 XCDs).
L2 = {"a100-40gb": 40e6, "a100-80gb-sxm": 40e6, "h100-sxm": 50e6, "h100-pcie": 50e6,
      "h200": 60 * 2 ** 20, "h20": 60e6, "l4": 48e6, "l40s": 96e6, "rtx-4090": 72e6,
      "rtx-5090": 96e6, "t4": 4e6, "v100": 6e6, "b200": 126e6, "mi210": 8e6, "mi250x": 16e6,
      "mi250x-gcd": 8e6, "mi300x": 32e6, "mi325x": 32e6, "mi350x": 32e6, "mi355x": 32e6}


@pytest.mark.parametrize("name", sorted(L2))
def test_each_gpus_l2_is_its_sources(name: str) -> None:
    [l2] = [lv for lv in hardware.get_hardware(name).onchip if lv.name == "l2"]
    assert l2.capacity == pytest.approx(L2[name])


def test_hw_show_json_says_what_a_device_is() -> None:
    assert hardware.get_hardware("mi250x").summary()["device"] == {
        "compute_units": 220, "is": "die", "die": "mi250x-gcd"}
    assert "device" not in hardware.get_hardware("tpu-v5e").summary()


# -- a jax.profiler trace's device plane: the same catalog ----------------------------------


def _plane(vendor: str, cap: tuple[int, int], memory: float, units: int | None = None,
           clock_khz: int | None = None) -> dict[str, Any]:
    stats: dict[str, Any] = {"device_vendor": vendor, "compute_cap_major": cap[0],
                             "compute_cap_minor": cap[1], "memory_size": memory}
    if units is not None:
        stats["core_count"] = units
    if clock_khz is not None:
        stats["clock_rate"] = clock_khz
    return stats


@pytest.mark.parametrize(("stats", "chip"), [
    # an 80 GB H100 reports 80 GiB less the driver's share, ~85e9 B: nearer 80 than 96 GB
    (_plane("NVIDIA", (9, 0), 85e9, 132), "h100-sxm"),
    # an H200 reports about 140 GiB (150e9 B): the 141 GB row
    (_plane("NVIDIA", (9, 0), 150e9, 132), "h200"),
    (_plane("NVIDIA", (8, 0), 42.5e9, 108), "a100-40gb"),
    (_plane("NVIDIA", (8, 0), 85e9, 108), "a100-80gb-sxm"),
    # MI300X: 304 CUs, 192 GB (TraceLens's trace reports 206e9 B, 192 GiB)
    (_plane("AMD", (9, 4), 206_141_652_992, 304, 2_100_000), "mi300x"),
    # gfx950 with 256 CUs and 288 GB: MI355X at 2.4 GHz, MI350X at 2.2 GHz (AMD's specs)
    (_plane("AMD", (9, 5), 309_220_868_096, 256, 2_400_000), "mi355x"),
    (_plane("AMD", (9, 5), 309_220_868_096, 256, 2_200_000), "mi350x"),
])
def test_a_jax_trace_names_its_chip_from_its_device_plane(stats: dict[str, Any],
                                                          chip: str) -> None:
    from pytest_roofline.profiling.jax.jax_trace import chip_of as plane_chip

    assert plane_chip(stats).name == chip


@pytest.mark.parametrize("stats", [
    _plane("AMD", (9, 5), 309e9, 256),  # no clock: MI350X or MI355X, not said
    _plane("AMD", (9, 5), "lots", 256),  # type: ignore[arg-type]  # a string memory size
    _plane("NVIDIA", (9, 0), 10**400, 132),  # past a float
    _plane("NVIDIA", (12, 0), 32e9, 170),  # no such row
    {},
])
def test_a_device_plane_the_catalog_cannot_tell_is_one_line_naming_hw(
        stats: dict[str, Any]) -> None:
    from pytest_roofline.profiling.jax.jax_trace import chip_of as plane_chip

    with pytest.raises(ProfileError, match=r"--hw") as raised:
        plane_chip(stats)
    assert len(str(raised.value)) < 200 and "\n" not in str(raised.value)


def test_one_nearest_memory_rule_for_both_trace_formats() -> None:
    from pytest_roofline.profiling.devices import nearest_size

    sizes = (16, 24, 32, 40, 48, 64, 80, 94, 128, 141, 180, 192)
    assert nearest_size(85.0, sizes) == 80  # an 80 GB H100: 80 GiB less the driver's share
    assert nearest_size(150.0, sizes) == 141  # an H200: 140 GiB
    assert nearest_size(88.0, sizes) == 94  # 6.4% from 94, 10% from 80: the nearer
    assert nearest_size(10.0, sizes) is None and nearest_size(0.0, sizes) is None
    assert nearest_size(86.8, (80, 94)) is None  # 8.5% and 7.7%: too close to tell
