"""``pytest-roofline calibrate``'s report and its cache's edge cases, with the measuring
replaced by a fixed spec (the figures are this file's; the real measuring is
tests/test_calibration.py's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.cli import main
from pytest_roofline.measuring import calibration


def fixed_spec(quick: bool = True) -> dict[str, Any]:
    """A calibration's spec as ``calibration.to_spec`` writes one (its rates in ``%.6g``)."""
    return {
        "name": "host", "description": "a test machine",
        "default_dtype": "fp64", "vector_fallback": "matrix",
        "memory": {"capacity": "8e+09 B", "bandwidth": "7.94001e+09 B/s",
                   "note": "STREAM triad", "source": "calibration"},
        "matrix": {"fp64": "4.29393e+08 FLOP/s", "source": "calibration"},
        "sources": {"calibration": "pytest-roofline calibrate"},
        "provenance": {
            "date": "2026-01-01T00:00:00+00:00",
            "conditions": {"quick": quick, "quiet": True, "settled": False,
                           "unsettled": ["fp64"]},
            "figures": {
                "matrix.fp64": {"value": 4.29393e8, "spread": 0.003, "detail": "GEMM"},
                "memory.triad": {"value": 7.94001e9, "spread": 0.02, "detail": "STREAM"},
            },
        },
    }


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[str]:
    """The calibration replaced by :func:`fixed_spec`; the list records each run."""
    runs: list[str] = []

    def calibrate(device: str, **_: Any) -> tuple[dict[str, Any], list[str]]:
        runs.append(device)
        return fixed_spec(), []

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(calibration, "calibrate", calibrate)
    return runs


def test_rates_spreads_and_where_it_was_written_read_plainly(
        measured: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--quick"]) == 0
    out = capsys.readouterr().out
    # 7.94001e+09 B/s and 4.29393e+08 FLOP/s as the tables print rates
    assert "memory roof: 7.94 GB/s" in out and "fp64 429 MFLOP/s" in out
    assert "e+0" not in out
    # a spread of 0.3% is not "0%", and the figure that did not settle is marked
    assert "0.3% *" in out and "2.0%" in out
    assert "* did not settle: see the warning below" in out
    assert "spec written to " + str(calibration.cache_path("cpu")) in " ".join(out.split())


def test_a_kept_cache_says_the_spec_was_not_written(
        measured: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    calibration.save(calibration.cache_path("cpu"), fixed_spec(quick=False))
    assert main(["calibrate", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "no file" not in out
    assert "spec not written: the cache keeps its calibration" in out


@pytest.mark.parametrize("provenance", ["made by hand", 42, ["a"], None])
def test_a_cached_spec_whose_provenance_is_not_a_mapping(
        measured: list[str], capsys: pytest.CaptureFixture[str], provenance: Any) -> None:
    """Before, a string read as a provenance raised AttributeError after the whole
    calibration had run."""
    spec = fixed_spec(quick=False)
    spec["provenance"] = provenance
    calibration.save(calibration.cache_path("cpu"), spec)
    assert main(["calibrate", "--quick"]) == 0
    assert "spec written to" in capsys.readouterr().out  # unknown provenance: replaced


def test_an_unwritable_cache_is_said_before_measuring(
        measured: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where a folder must be
    assert main(["calibrate", "--quick"]) == 2
    assert "the calibration cache" in capsys.readouterr().err
    assert measured == []  # nothing measured first
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["calibrate", "--quick", "-o", str(tmp_path / "missing" / "c.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err and measured == []


def test_a_relative_home_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", "relative/home")
    with pytest.raises(calibration.RooflineError,
                       match="HOME='relative/home' is not an absolute path"):
        calibration.cache_dir()
