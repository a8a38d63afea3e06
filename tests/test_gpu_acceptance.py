"""The GPU acceptance run: the tables docs/measure.md publishes are the run's own figures
(docs/gpu-acceptance-h200.json, written by benchmarks/gpu_acceptance.py on an H200), and the
script itself runs (its CPU smoke mode)."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = json.loads((ROOT / "docs" / "gpu-acceptance-h200.json").read_text())
DOC = (ROOT / "docs" / "measure.md").read_text()


def _table(heading: str) -> list[list[str]]:
    """The rows of the first Markdown table after *heading* in docs/measure.md."""
    text = DOC[DOC.index(heading):]
    rows = []
    for line in text.splitlines()[1:]:
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
        elif rows:
            break
    return rows[2:]  # past the header and its rule


def _value(cell: str) -> float:
    """``784 TFLOP/s`` -> 7.84e14."""
    number, unit = cell.split()
    return float(number) * {"P": 1e15, "T": 1e12}[unit[0]]


def test_the_run_is_an_h200_with_no_errors() -> None:
    device = RUN["sections"]["device"]
    assert device["name"] == "NVIDIA H200" and device["driver"] == "580.159.04"
    assert device["torch"].startswith("2.11.0") and device["spec_chip"] == "h200"
    assert RUN["errors"] == {}
    assert "driver 580.159.04), torch 2.11.0+cu130" in DOC


def test_the_calibration_table_is_the_runs() -> None:
    names = {"bf16 GEMM": "matrix.bf16", "fp16 GEMM": "matrix.fp16",
             "fp8 GEMM (`_scaled_mm`)": "matrix.fp8", "tf32 GEMM": "matrix.tf32",
             "fp32 GEMM (CUDA cores)": "matrix.fp32", "fp64 GEMM": "matrix.fp64",
             "copy, 1 GiB": "memory.copy", "memset, 1 GiB": "memory.memset",
             "L2 (graph of copies)": "cache.l2"}
    rows = {r["figure"]: r for r in RUN["sections"]["calibration"]["rows"]}
    table = _table("**Calibration**, twice")
    assert len(table) == len(names)
    for figure, run1, run2, agree, _published, ratio in table:
        row = rows[names[figure]]
        # three significant figures in the table
        assert _value(run1) == pytest.approx(row["run1"], rel=6e-3), figure
        assert _value(run2) == pytest.approx(row["run2"], rel=6e-3), figure
        assert agree == f"{row['agreement']:.0%}"
        assert ratio == ("-" if row["ratio"] is None else f"{row['ratio']:.0%}")
        assert row["agreement"] <= 0.05  # two calibrations agree within 5%
    for run in RUN["sections"]["calibration"]["runs"]:
        assert run["seconds"] < 20


def test_the_efficiency_table_is_the_runs() -> None:
    rows = RUN["sections"]["efficiency"]["rows"]
    table = _table("**Efficiency**: each case")
    assert len(table) == len(rows)
    for row, cells in zip(rows, table, strict=True):
        of_spec, of_calibrated = cells[4], cells[6]
        for cell, label in ((of_spec, "spec"), (of_calibrated, "calibrated")):
            # bound / measured, never clamped (tests/test_gpu_published.py checks the words)
            ratio = row[label]["bound"] / row["measured"]
            assert cell.split(",")[0] == f"{ratio:.0%}", (row["case"], label)
            assert ("faster than the bound" in cell) == (row[label]["efficiency"] is None)
    matmul, copy = rows[0], rows[1]
    # the expected ratios: 0.6-0.9 of the published bound, 0.85-1.05 of the calibrated one
    for row in (matmul, copy):
        assert 0.6 <= row["spec"]["efficiency"] <= 0.9
        assert 0.85 <= row["calibrated"]["efficiency"] <= 1.05


def test_a_warm_l2_beats_the_dram_bound_and_is_flagged() -> None:
    warm = next(r for r in RUN["sections"]["efficiency"]["rows"] if "add" in r["case"]
                and "warm" in r["case"])
    assert warm["method"].startswith("cuda-graph")
    assert warm["spec"]["efficiency"] is None  # faster than the bound: no efficiency
    assert any("faster" in n for n in warm["spec"]["notes"])


def test_the_traced_layer_has_the_same_flops_on_cuda_and_on_meta() -> None:
    tracing = RUN["sections"]["tracing"]
    for phase in ("prefill", "decode"):
        assert tracing[phase]["same_flops"] and not tracing[phase]["cuda"]["unknown"]
    stated = tracing["triton_stated"]
    assert stated["kernels"][0][1] == stated["expected_flops"] == 2 * 512 * 384 * 256


def _script() -> Any:
    spec = importlib.util.spec_from_file_location("gpu_acceptance",
                                                  ROOT / "benchmarks" / "gpu_acceptance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_acceptance"] = module
    spec.loader.exec_module(module)
    return module


def test_the_script_renders_the_run() -> None:
    pytest.importorskip("torch")
    text = _script().markdown(RUN)
    assert "| matrix.bf16 | 755 TFLOP/s | 754 TFLOP/s | 0% | 989 TFLOP/s | 76% |" in text
    assert "## Errors" not in text


def test_the_script_runs_on_the_cpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    # the script points XDG_CACHE_HOME at a folder of its own when unset: restored after
    monkeypatch.setenv("XDG_CACHE_HOME", os.environ.get("XDG_CACHE_HOME") or str(tmp_path))
    assert _script().main(["--smoke", "--out", str(tmp_path), "--only", "tracing"]) == 0
    data = json.loads((tmp_path / "acceptance.json").read_text())
    assert data["sections"]["tracing"]["prefill"]["same_flops"]
    assert "same: True" in (tmp_path / "acceptance.md").read_text()
