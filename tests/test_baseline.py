"""Named baselines: where they live, what names are allowed, atomic writes, clear errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.errors import BaselineError
from pytest_roofline.report import baseline
from pytest_roofline.report.records import make_report


def a_report(n: int = 2) -> dict[str, Any]:
    records = [{"nodeid": f"t::test_{i}", "hw": "h100-sxm", "dtype": "bf16", "flops": 1e9 * i,
                "bytes": 1e6, "intensity": 1e3 * i, "ridge": 295.3, "regime": "compute",
                "time_s": 1e-6 * i, "outcome": "report"} for i in range(1, n + 1)]
    return make_report(records, {"flops_per_mac": 2})


def test_save_then_load_round_trips_under_folder_name_json(tmp_path: Path) -> None:
    folder = tmp_path / "store"
    path = baseline.save(folder, "main", a_report())
    assert path == folder / "main.json"
    assert baseline.load(folder, "main") == json.loads(path.read_text())
    assert baseline.load(folder, "main")["results"][1]["nodeid"] == "t::test_2"


def test_the_default_name_and_folder(tmp_path: Path) -> None:
    assert baseline.save(tmp_path, None, a_report()) == tmp_path / "baseline.json"
    assert baseline.exists(tmp_path)
    assert baseline.storage_folder(tmp_path) == tmp_path / ".roofline"
    assert baseline.storage_folder(tmp_path, "ci/store") == tmp_path / "ci" / "store"
    assert baseline.storage_folder(tmp_path, "/abs/store") == Path("/abs/store")


@pytest.mark.parametrize("name", ["../x", "a/b", "", ".hidden", "main.json", "a b", "x" * 200])
def test_names_that_are_not_plain_names_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(BaselineError, match="is not allowed: use letters, digits"):
        baseline.save(tmp_path, name, a_report()) if name else baseline.check_name(name)


def test_a_compare_name_may_be_a_path_to_any_report(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "ci-report.json"
    baseline.save(other.parent, "ci-report", a_report(3))
    assert baseline.locate(tmp_path / "store", str(other)) == other
    assert len(baseline.load(tmp_path / "store", str(other))["results"]) == 3
    assert baseline.locate(tmp_path, "v1.2") == tmp_path / "v1.2.json"


def test_a_missing_baseline_says_so_and_lists_the_saved_ones(tmp_path: Path) -> None:
    baseline.save(tmp_path, "main", a_report())
    with pytest.raises(baseline.MissingBaselineError) as info:
        baseline.load(tmp_path, "feature")
    message = str(info.value)
    assert f"no baseline 'feature' in {tmp_path} " in message
    assert message.count(str(tmp_path)) == 1  # the folder is named once
    assert "saved baselines there: main" in message
    assert "--roofline-save=feature" in message
    assert isinstance(info.value, BaselineError) and isinstance(info.value, FileNotFoundError)
    with pytest.raises(baseline.MissingBaselineError, match="no such roofline report"):
        baseline.load(tmp_path, str(tmp_path / "nope.json"))


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ('{"format": "pytest-roofline", "version": 1, "results": [', "not valid JSON"),
        ('{"machine_info": {}, "benchmarks": []}', "not a pytest-roofline report"),
        ('{"format": "pytest-roofline", "version": 99, "results": []}', "version 99"),
        ('{"format": "pytest-roofline", "version": 1, "results": [{"nodeid": "x"}]}',
         "lacks field(s)"),
        ("[]", "not a pytest-roofline report"),
    ],
)
def test_a_corrupt_or_foreign_file_is_an_error_naming_it(tmp_path: Path, content: str,
                                                         says: str) -> None:
    (tmp_path / "main.json").write_text(content)
    with pytest.raises(BaselineError) as info:
        baseline.load(tmp_path, "main")
    assert str(tmp_path / "main.json") in str(info.value)
    assert says in str(info.value)
    assert not isinstance(info.value, baseline.MissingBaselineError)


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, OSError])
def test_an_interrupted_save_leaves_the_previous_baseline_whole(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interruption: type[BaseException]) -> None:
    baseline.save(tmp_path, "main", a_report(2))
    before = (tmp_path / "main.json").read_bytes()

    def half_then_die(report: Any, handle: Any, **kwargs: Any) -> None:
        handle.write('{"format": "pytest-roofline", "res')  # half a file, then the run dies
        handle.flush()
        raise interruption()

    import json

    monkeypatch.setattr(json, "dump", half_then_die)  # the report is streamed with json.dump
    with pytest.raises(interruption):
        baseline.save(tmp_path, "main", a_report(5))
    monkeypatch.undo()
    assert (tmp_path / "main.json").read_bytes() == before
    assert len(baseline.load(tmp_path, "main")["results"]) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["main.json"]  # no temporary left


def test_only_reports_are_saved(tmp_path: Path) -> None:
    with pytest.raises(BaselineError, match="not a pytest-roofline report"):
        baseline.save(tmp_path, "main", {"results": []})
    assert not (tmp_path / "main.json").exists()


def test_list_baselines_shows_names_sizes_and_broken_files(tmp_path: Path) -> None:
    assert baseline.list_baselines(tmp_path / "none") == []
    baseline.save(tmp_path, "main", a_report(3))
    baseline.save(tmp_path, "v1.2", a_report(1))
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "notes.txt").write_text("ignored")
    found = {b.name: b for b in baseline.list_baselines(tmp_path)}
    assert sorted(found) == ["broken", "main", "v1.2"]
    assert (found["main"].results, found["v1.2"].results) == (3, 1)
    assert found["main"].error is None and found["main"].datetime
    assert found["broken"].results is None and "not valid JSON" in str(found["broken"].error)
    assert found["main"].to_dict()["path"] == str(tmp_path / "main.json")


def test_saved_files_get_the_permissions_of_a_plain_write(tmp_path: Path) -> None:
    # The temporary file behind an atomic write is private (0600); the result must not be.
    import os

    mask = os.umask(0o022)
    try:
        path = baseline.save(tmp_path, "main", a_report(1))
    finally:
        os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o644
