"""Host<->device copies in a profile: priced on the chip's PCIe link, not at its HBM.

A ``Memcpy HtoD``/``DtoH`` crosses the host link: its bound is its bytes over one PCIe link's
one-direction bandwidth (``links: pcie: bandwidth`` in the chip's spec; the V100's is
16 GB/s, a Gen3 x16 link's 32 GB/s bidirectional total halved). A ``DtoD`` copy stays with
its op, at the memory roof (a read and a write). A chip without a pcie link leaves the copy
unpriced with the reason.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import pytest_roofline as rl
from pytest_roofline.hardware import get_hardware
from pytest_roofline.profiling.torch import copies
from pytest_roofline.profiling.torch.trace_file import Device

pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "traces"
V100 = DATA / "v100_hta_trace_diff_test.json.gz"
V100_PROPS = {"name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16945512448}
N = 1024


def _op(name: str, ts: float, dur: float, dims: list[Any], types: list[str]) -> dict[str, Any]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts,
            "dur": dur, "args": {"Input Dims": dims, "Input type": types}}


def _launch(ts: float, corr: int, name: str = "cudaMemcpyAsync") -> dict[str, Any]:
    return {"ph": "X", "cat": "cuda_runtime", "name": name, "pid": 1, "tid": 1,
            "ts": ts, "dur": 2, "args": {"correlation": corr}}


def _device(name: str, ts: float, dur: float, corr: int, nbytes: int | None,
            cat: str = "gpu_memcpy") -> dict[str, Any]:
    args: dict[str, Any] = {"correlation": corr}
    if nbytes is not None:
        args["bytes"] = nbytes
    return {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": 7, "ts": ts, "dur": dur,
            "args": args}


def _write(tmp_path: Path, events: list[dict[str, Any]]) -> Path:
    path = tmp_path / "t.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump({"traceEvents": events, "deviceProperties": [V100_PROPS]}, handle)
    return path


#: 64 MiB of fp32 copied from pageable host memory in 6 ms.
BYTES = 16 * N * N * 4
HTOD = [_op("aten::copy_", 0, 7000, [[16 * N, N], [16 * N, N]], ["float", "float"]),
        _launch(10, 1),
        _device("Memcpy HtoD (Pageable -> Device)", 100, 6000, 1, BYTES)]


def test_a_host_to_device_copy_is_bound_by_its_bytes_over_the_pcie_link(
        tmp_path: Path) -> None:
    # bound = 67,108,864 B / 16e9 B/s (v100.yaml links.pcie: one direction) = 4.194 ms,
    # so 4.194 / 6 ms = 69.9% of the roof; at HBM (900 GB/s) it would read ~2%.
    profile = rl.read_trace(_write(tmp_path, HTOD))
    (row,) = profile.rows
    assert get_hardware("v100").link("pcie").bandwidth == 16e9
    assert row.bound == pytest.approx(BYTES / 16e9, rel=1e-12)
    assert row.bytes == BYTES and row.flops == 0
    assert (row.regime, row.precision) == ("network", "link:pcie")
    assert row.efficiency == pytest.approx(BYTES / 16e9 / 6e-3, rel=1e-9)
    assert row.efficiency is not None and row.efficiency <= 1
    assert row.kernels == ("Memcpy HtoD (Pageable -> Device)",)
    assert not profile.unpriced
    assert "pcie" in profile.table()


def test_a_device_to_host_copy_is_priced_on_the_link_too(tmp_path: Path) -> None:
    events = [_op("aten::_to_copy", 0, 7000, [[16 * N, N]], ["float"]), _launch(10, 1),
              _device("Memcpy DtoH (Device -> Pinned)", 100, 5000, 1, BYTES)]
    (row,) = rl.read_trace(_write(tmp_path, events)).rows
    assert row.bound == pytest.approx(BYTES / 16e9, rel=1e-12)
    assert row.regime == "network"


def test_a_device_to_device_copy_stays_at_the_memory_roof(tmp_path: Path) -> None:
    # a copy_ within the device reads and writes its 4 MiB: 2 x 4,194,304 B over HBM
    events = [_op("aten::copy_", 0, 100, [[N, N], [N, N]], ["float", "float"]),
              _launch(10, 1),
              _device("Memcpy DtoD (Device -> Device)", 100, 30, 1, N * N * 4)]
    (row,) = rl.read_trace(_write(tmp_path, events)).rows
    hbm = get_hardware("v100").memory_bandwidth
    assert row.regime == "memory"
    assert row.bound == pytest.approx(2 * N * N * 4 / hbm, rel=1e-9)


def test_an_op_with_a_copy_and_a_kernel_prices_each_on_its_own_roof(tmp_path: Path) -> None:
    # aten::to of host fp32 to device fp16: the HtoD copy on PCIe, the cast at HBM
    events = [_op("aten::to", 0, 7000, [[16 * N, N]], ["float"]), _launch(10, 1),
              _launch(20, 2, "cudaLaunchKernel"),
              _device("Memcpy HtoD (Pinned -> Device)", 100, 5000, 1, BYTES),
              _device("void at::native::vectorized_elementwise_kernel<4>()", 5200, 200, 2,
                      None, cat="kernel")]
    profile = rl.read_trace(_write(tmp_path, events))
    regimes = {r.regime: r for r in profile.rows}
    # the cast's target dtype is not recorded: the lowest bound is a copy to itself, no work
    # (no roof: regime "-"), never judged
    assert set(regimes) == {"network", "-"}
    assert regimes["network"].measured == pytest.approx(5e-3)
    assert regimes["-"].measured == pytest.approx(200e-6) and regimes["-"].no_work


def test_a_chip_without_a_pcie_link_leaves_the_copy_unpriced_with_the_reason(
        tmp_path: Path) -> None:
    chip = get_hardware("v100").replace(name="no-pcie", links={}, default_link=None,
                                        mesh_axes={})
    profile = rl.read_trace(_write(tmp_path, HTOD), hw=chip)
    assert not profile.rows
    (item,) = profile.unpriced
    assert item.reason == "host copy: no-pcie has no pcie link in its spec"
    assert item.seconds == pytest.approx(6e-3)


def test_a_copy_without_its_bytes_is_unpriced_never_zero(tmp_path: Path) -> None:
    # a conversion (fp32 to fp16): its op does not say which side crosses the link
    converting = _op("aten::copy_", 0, 7000, [[16 * N, N], [16 * N, N]], ["c10::Half", "float"])
    events = [converting, HTOD[1], _device("Memcpy HtoD (Pageable -> Device)", 100, 6000, 1,
                                           None)]
    profile = rl.read_trace(_write(tmp_path, events))
    assert not profile.rows
    assert profile.unpriced[0].reason == "host copy: its bytes are not recorded"


def test_a_copy_without_its_bytes_takes_them_from_its_op(tmp_path: Path) -> None:
    # ROCm's copy events record no bytes: copy_ of two 16N x N fp32 tensors moves 16N·N·4
    events = [*HTOD[:2], _device("Memcpy HtoD (Pageable -> Device)", 100, 6000, 1, None)]
    (row,) = rl.read_trace(_write(tmp_path, events)).rows
    assert row.bytes == BYTES == 16 * N * N * 4
    assert row.bound == pytest.approx(BYTES / 16e9)


def test_a_copy_launched_outside_any_op_is_priced_by_its_own_name(tmp_path: Path) -> None:
    events = [_op("aten::relu", 0, 10, [[N]], ["float"]),
              _device("Memcpy DtoH (Device -> Pageable)", 100, 100, 9, 800_000)]
    (row,) = rl.read_trace(_write(tmp_path, events)).rows
    assert row.op == "Memcpy DtoH (Device -> Pageable)"
    assert row.bound == pytest.approx(800_000 / 16e9)


@pytest.mark.parametrize(("name", "category", "kind"), [
    ("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", "HtoD"),
    ("Memcpy DtoH (Device -> Pinned)", "gpu_memcpy", "DtoH"),
    ("Memcpy DtoD (Device -> Device)", "gpu_memcpy", "DtoD"),
    ("Memcpy PtoP (Device -> Device)", "gpu_memcpy", "PtoP"),
    ("Memcpy HtoH (Pinned -> Pageable)", "Memcpy", "HtoH"),
    ("Memcpy (Pinned -> Device)", "gpu_memcpy", "HtoD"),
    ("Memcpy (Device -> Pageable)", "gpu_memcpy", "DtoH"),
    ("Memcpy (Array -> Device)", "gpu_memcpy", None),
    ("Memcpy HtoD (Pageable -> Device)", "kernel", None),
    ("Memset (Device)", "gpu_memset", None),
])
def test_the_direction_comes_from_the_memcpy_name(name: str, category: str,
                                                  kind: str | None) -> None:
    assert copies.direction(Device(name, 1e-6, category)) == kind


def test_the_real_v100_trace_prices_its_host_copies_on_pcie_and_none_beats_its_bound(
        ) -> None:
    profile = rl.read_trace(V100)
    assert not profile.faster
    assert all(r.efficiency is not None and r.efficiency <= 1 for r in profile.rows)
    # the host copies (the collectives, on NVLink, are network rows too)
    host = [r for r in profile.rows if r.regime == "network" and r.op != "record_param_comms"]
    big = [r for r in host if r.bytes > 50e6]
    # six 55.6 MB HtoD copies; at HBM they read ~1%, over 16 GB/s PCIe 34-50%
    assert len(big) == 6
    assert all(r.precision == "link:pcie" for r in host)
    assert all(r.efficiency is not None and 0.3 < r.efficiency <= 1 for r in big)
