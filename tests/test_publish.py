"""The one publishing sequence of the gate and the command line: compare, Markdown, charts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_roofline import analyze, ops
from pytest_roofline.report.publish import publish
from pytest_roofline.report.records import make_record, make_report


def _report(m: int) -> dict:
    result = analyze(ops.matmul(m, 4096, 4096), "h100")
    return make_report([make_record("t.py::a", result, ["compute"], "passed")])


def test_one_failed_output_does_not_stop_the_others(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    (tmp_path / "a_file").write_text("x")
    done = publish(_report(16), base=_report(4096), md=tmp_path / "a_file" / "summary.md",
                   github_summary=True, plots=[tmp_path / "chart.txt"])
    assert done.comparison is not None and done.comparison.failed  # regime changed
    statuses = [(o.what, o.status) for o in done.outcomes]
    assert statuses == [("markdown", "failed"), ("github-summary", "unset"),
                        ("plot", "refused")]
    assert done.failed and "is a file, not a folder" in done.outcomes[0].why
    good = publish(_report(16), comparison=done.comparison, md=tmp_path / "summary.md")
    assert [o.status for o in good.outcomes] == ["written"] and not good.failed
    assert "REGRESSED" in (tmp_path / "summary.md").read_text(encoding="utf-8")


def test_a_chart_of_no_results_is_not_drawn(tmp_path: Path) -> None:
    done = publish(make_report([]), plots=[tmp_path / "chart.png"])
    assert [o.status for o in done.outcomes] == ["empty"]
    assert not (tmp_path / "chart.png").exists()
