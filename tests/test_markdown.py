"""The Markdown summary: regressions first, then the table; GitHub's job summary file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_roofline import analyze, ops
from pytest_roofline.report import markdown
from pytest_roofline.report.compare import compare
from pytest_roofline.report.records import make_record, make_report


def rec(nodeid: str, m: int, outcome: str = "passed", message: str = "") -> dict[str, Any]:
    expected = ("compute",) if outcome != "report" else None
    return make_record(nodeid, analyze(ops.matmul(m, 8192, 8192), "h100"), expected, outcome,
                       message)


def reports() -> tuple[dict[str, Any], dict[str, Any]]:
    base = make_report([rec("t::big", 4096), rec("t::small", 4096), rec("t::gone", 64)])
    new = make_report([
        rec("t::big", 4096),
        rec("t::small", 32, "failed", "expected compute-bound but memory-bound"),
        rec("t::pipe[a|b]", 64, "report"),
        rec("t::own", 8, "failed", "expected compute-bound on h100-sxm"),
    ])
    return base, new


def test_regressions_come_first_then_failures_then_the_table() -> None:
    base, new = reports()
    text = markdown.render(new, compare(base, new, ["intensity:10%"], base="main"))
    assert text.startswith("## Roofline report\n")
    assert "**2 regressions** against `main` · 4 tests, 4 results on 1 chip · 2 tests failed " \
           "(2 results)" in text
    order = [text.index(h) for h in ("### Regressions", "### Failures", "### Results",
                                     "New since the baseline", "Vanished since the baseline")]
    assert order == sorted(order)
    regressions = text[text.index("### Regressions"):text.index("### Failures")]
    assert "| `t::small` | h100-sxm (bf16) | `regime` | compute | memory |" in regressions
    assert "| `intensity:10%` | 2048.0 FLOP/B | 31.8 FLOP/B |" in regressions
    # a regressed test's failure is told once, in the regressions; others under Failures
    failures = text[text.index("### Failures"):text.index("### Results")]
    assert "t::own" in failures and "t::small" not in failures


def test_the_table_lists_failed_and_regressed_rows_before_the_rest() -> None:
    base, new = reports()
    text = markdown.render(new, compare(base, new))
    table = [line for line in text.splitlines() if line.startswith("| ")
             and ("ok" in line or "FAIL" in line or "report" in line)]
    assert len(table) == 4
    assert table[0].startswith("| **FAIL** | `t::own`")
    assert table[1].startswith("| **FAIL**, **REGRESSED** | `t::small`")
    assert table[-1].startswith("| report | `t::pipe[a\\|b]`")  # the pipe does not split cells
    assert all(line.count(" | ") == 10 for line in table)


def test_without_a_comparison_there_is_no_regressions_section() -> None:
    _, new = reports()
    text = markdown.render(new)
    assert "### Regressions" not in text and "regression" not in text.split("\n")[2]
    assert "### Results" in text


def test_long_tables_are_cut_with_a_count() -> None:
    report = make_report([rec(f"t::test_{i}", 4096) for i in range(12)])
    text = markdown.render(report, max_rows=5)
    assert "... and 7 more results" in text
    assert text.count("| ok |") == 5


def test_an_empty_report_still_renders() -> None:
    assert "No roofline results." in markdown.render(make_report([]))


def test_append_step_summary_uses_the_github_variable(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv(markdown.STEP_SUMMARY, str(summary))
    assert markdown.append_step_summary("## one") == summary
    assert markdown.append_step_summary("## two\n") == summary
    assert summary.read_text() == "earlier step\n## one\n\n## two\n\n"
    monkeypatch.delenv(markdown.STEP_SUMMARY)
    assert markdown.append_step_summary("## three") is None


def test_write_creates_folders(tmp_path: Path) -> None:
    path = markdown.write(tmp_path / "a" / "b.md", "# hi\n")
    assert path.read_text() == "# hi\n" and [p.name for p in path.parent.iterdir()] == ["b.md"]


def test_cells_and_code_spans_survive_awkward_text() -> None:
    assert markdown.cell("a|b\nc") == "a\\|b c"
    assert markdown.code("x`y") == "``x`y``"


def test_the_expected_column_shows_every_check_as_the_terminal_does() -> None:
    # A failed max_time or fits check must not read "memory | memory | FAIL": the column
    # holds the summary's label of every check, margin included, and the figures are
    # formatted as in the terminal summary.
    from pytest_roofline.report.table import FORMATS

    record = rec("t::decode", 32, "failed", "expected a roofline time bound <= 1 us")
    record["expected"] = ["memory"]
    record["expectation"] = "memory (margin 10%), t<=1 us, fits"
    text = markdown.render(make_report([record]))
    row = next(line for line in text.splitlines() if line.startswith("|") and "t::decode" in line)
    assert row.endswith("| memory (margin 10%), t<=1 us, fits |")
    for name in ("FLOPs", "bytes", "FLOP/B", "ridge", "time"):
        assert f"| {FORMATS[name](record)} |" in row


def test_parameter_ids_sort_as_numbers() -> None:
    report = make_report([rec(f"t::test_m[{m}]", m) for m in (2, 10, 1)])
    rows = [line for line in markdown.render(report).splitlines() if "t::test_m[" in line]
    assert [row.split("t::test_m[")[1].split("]")[0] for row in rows] == ["1", "2", "10"]


def test_the_headline_counts_tests_and_results_apart() -> None:
    """pytest counts tests: a test failing on two chips is one failed test, two results."""
    two_chips = [rec("t::a", 32, "failed", "memory-bound"), rec("t::b", 4096)]
    other = dict(two_chips[0], hw="a100-80gb-sxm")
    text = markdown.render(make_report([*two_chips, other]))
    assert "2 tests, 3 results on 2 chips · 1 test failed (2 results)" in text


def test_the_intensity_shown_is_labelled_the_dram_one() -> None:
    text = markdown.render(make_report([rec("t::a", 32)]))
    assert "| DRAM FLOP/B |" in text and "`workload_intensity` is over all tensor traffic" in text
