"""The baseline gate in pytest runs (pytester): save, compare, rules, reports, xdist.

The inner suites run ``ops.matmul(M, 8192, 8192)`` on h100: intensity M*8192 / (8192 + 2M)
FLOP/B against a ridge of 989.4 TFLOP/s / 3.35 TB/s = 295.3 FLOP/B, so M = 4096 is
compute-bound (2048.0 FLOP/B) and M = 32 memory-bound (31.8 FLOP/B): changing M moves the
test across the ridge. M = 2048 stays compute-bound at 1365.3 FLOP/B (-33.3% from 4096).
"""

from __future__ import annotations

import json
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from wrapped import matcher

import pytest_roofline.plugin.gate
import pytest_roofline.plugin.hooks  # noqa: F401 - imported here, kept across in-process runs
from pytest_roofline.report.records import load_report

pytest_plugins = ("pytester",)
# In-process runs drop the modules they import; what the plugins import lazily is imported
# up front so that nothing is imported twice (yaml's C extension and matplotlib break).
pytest.importorskip("yaml")
pytest.importorskip("pint")
try:
    import matplotlib.backends.backend_agg
    import matplotlib.figure
    import matplotlib.image  # noqa: F401
except ImportError:  # pragma: no cover - the plot extra is optional
    pass

ISOLATE = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark")


def plugin_args() -> list[str]:
    installed = any(ep.value == "pytest_roofline.plugin.hooks"
                    for ep in entry_points(group="pytest11"))
    return [*([] if installed else ["-p", "pytest_roofline.plugin.hooks"]), *ISOLATE]


def suite(pytester: pytest.Pytester, m: int, *, extra: str = "") -> None:
    pytester.makepyfile(test_k=textwrap.dedent(f"""
        import pytest
        from pytest_roofline import ops

        @pytest.mark.roofline(hw="h100", regime="compute",
                              workload=ops.matmul(4096, 8192, 8192))
        def test_steady():
            pass

        @pytest.mark.roofline(hw="h100", workload=ops.matmul({m}, 8192, 8192))
        def test_moving():
            pass
    """) + "\n" + extra)


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*plugin_args(), *args)


def test_the_gate_is_loaded_only_when_an_option_asks_for_it(pytester: pytest.Pytester) -> None:
    """Its options are registered with the plugin's; the module comes with the first one
    given, on the command line or in the ini file, and naming it with -p does no harm."""
    suite(pytester, 4096)
    pytester.makeconftest("""
        import pytest_roofline.plugin.gate as gate

        def pytest_sessionfinish(session):
            print("gate loaded:", session.config.pluginmanager.is_registered(gate))
    """)
    assert "--roofline-save" in "\n".join(run(pytester, "--help").outlines)
    run(pytester).stdout.fnmatch_lines(["*gate loaded: False"])
    run(pytester, "--roofline-save").stdout.fnmatch_lines(["*gate loaded: True"])
    assert (pytester.path / ".roofline" / "baseline.json").is_file()
    pytester.makeini("[pytest]\nroofline_md = summary.md\n")
    run(pytester, "-p", "pytest_roofline.plugin.gate").assert_outcomes(passed=2)
    assert (pytester.path / "summary.md").is_file()


def test_a_parameter_change_across_the_ridge_fails_the_test(pytester: pytest.Pytester) -> None:
    # in 80 columns the failure and the regression wrap: read with their continuations joined
    suite(pytester, 4096)
    run(pytester, "--roofline-save").assert_outcomes(passed=2)
    saved = load_report(pytester.path / ".roofline" / "baseline.json")
    assert [r["regime"] for r in saved["results"]] == ["compute", "compute"]

    suite(pytester, 32)
    result = run(pytester, "--roofline-compare")
    result.assert_outcomes(passed=1, failed=1)
    matcher(result).fnmatch_lines([
        "*_ test_moving _*",
        "roofline: regression against baseline 'baseline': h100-sxm (bf16): regime changed "
        "from compute to memory; intensity 2048.0 -> 31.8 FLOP/B, ridge 295.3 FLOP/B (rule "
        "regime: a change of bottleneck always counts)",
        "*= roofline baseline and reports =*",
        "compared against baseline 'baseline' (*baseline.json); checks: regime, fits",
        "Regressions (1):",
        "  test_k.py::test_moving: h100-sxm (bf16): regime changed from compute to memory*",
        "1 regression in 1 of 2 results compared; 1 unchanged, 0 changed within the rules; "
        "0 new, 0 vanished",
        "FAILED test_k.py::test_moving - roofline: regression against baseline*",
    ])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*def test_moving*")
    # the captured figures say the test failed, and why
    matcher(result).fnmatch_lines([
        "*Captured roofline call*",
        "h100-sxm (bf16), workload 'matmul(32x8192x8192, bf16)': failed",
        "*FAIL: regression against baseline 'baseline': *"])
    result.stdout.no_fnmatch_line("*workload 'matmul(32x8192x8192, bf16)': passed*")


def test_every_rule_given_applies(pytester: pytest.Pytester) -> None:
    suite(pytester, 4096)
    run(pytester, "--roofline-save=main").assert_outcomes(passed=2)
    suite(pytester, 2048)  # still compute-bound; intensity -33.3%, time halves
    run(pytester, "--roofline-compare=main").assert_outcomes(passed=2)
    run(pytester, "--roofline-compare=main", "--roofline-compare-fail=intensity:40%"
        ).assert_outcomes(passed=2)
    # the first of two options must not be lost to the second
    result = run(pytester, "--roofline-compare=main", "--roofline-compare-fail=intensity:10%",
                 "--roofline-compare-fail=time:5%")
    result.assert_outcomes(passed=1, failed=1)
    matcher(result).fnmatch_lines([
        "roofline: regression against baseline 'main': h100-sxm (bf16): intensity fell from "
        "2048.0 FLOP/B to 1365.3 FLOP/B (-33.3%), over the limit of 10% (rule intensity:10%)",
        "*checks: regime, fits, intensity:10%, time:5%",
    ])


def test_rules_and_baseline_from_the_ini_file(pytester: pytest.Pytester) -> None:
    suite(pytester, 4096)
    pytester.makeini("[pytest]\nroofline_storage = ci-store\n")
    run(pytester, "--roofline-save=main").assert_outcomes(passed=2)
    assert (pytester.path / "ci-store" / "main.json").is_file()
    suite(pytester, 2048)
    pytester.makeini("[pytest]\nroofline_storage = ci-store\nroofline_compare = main\n"
                     "roofline_compare_fail = intensity:10% time:5%\n")
    run(pytester).assert_outcomes(passed=1, failed=1)


def test_new_and_vanished_tests_are_listed_not_failed(pytester: pytest.Pytester) -> None:
    suite(pytester, 4096, extra=textwrap.dedent("""
        @pytest.mark.roofline(hw="h100", workload=ops.matmul(8, 8, 8))
        def test_old():
            pass
    """))
    run(pytester, "--roofline-save").assert_outcomes(passed=3)
    suite(pytester, 4096, extra=textwrap.dedent("""
        @pytest.mark.roofline(hw="h100", workload=ops.matmul(8, 8, 8))
        def test_renamed():
            pass
    """))
    result = run(pytester, "--roofline-compare")
    result.assert_outcomes(passed=3)
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "New since the baseline, not compared (1):",
        "  test_k.py::test_renamed on h100-sxm (bf16)",
        "Vanished since the baseline (1):",
        "  test_k.py::test_old on h100-sxm (bf16)",
    ])


def test_a_missing_baseline_warns_or_errors_before_any_test(pytester: pytest.Pytester) -> None:
    suite(pytester, 4096)
    warned = run(pytester, "--roofline-compare=main")
    warned.assert_outcomes(passed=2, warnings=0)
    missing = ("roofline: no baseline to compare against: no baseline 'main' in *.roofline "
               "(none is saved there)*")
    matcher(warned).fnmatch_lines([missing])
    # said once, and never with a location inside the installed package
    assert sum(1 for line in warned.outlines if "no baseline to compare" in line) == 1
    assert "gate.py" not in warned.stdout.str()
    refused = run(pytester, "--roofline-compare=main", "--roofline-compare-missing=error")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["ERROR: --roofline-compare: no baseline 'main' in *"])
    refused.stdout.no_fnmatch_line("*passed*")


def test_rules_given_without_a_compare_say_they_check_nothing(pytester: pytest.Pytester,
                                                               ) -> None:
    """`pytest --roofline-compare-fail=time:5%` alone compares nothing: the run says so,
    rather than leave the gate silently off. Rules from the ini file (kept for the runs that
    compare) say nothing."""
    suite(pytester, 4096)
    alone = run(pytester, "--roofline-compare-fail=time:5%")
    alone.assert_outcomes(passed=2)
    alone.stdout.fnmatch_lines(["roofline: --roofline-compare-fail without "
                                "--roofline-compare: no rule is checked"])
    pytester.makeini("[pytest]\nroofline_compare_fail = time:5%\n")
    assert "no rule is checked" not in run(pytester, "--roofline-save").stdout.str()


def test_a_corrupt_baseline_or_bad_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    suite(pytester, 4096)
    store = pytester.path / ".roofline"
    store.mkdir()
    (store / "main.json").write_text('{"format": "pytest-roofline", "version": 1, "resu')
    result = run(pytester, "--roofline-compare=main")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *main.json: not valid JSON*"])
    for args, says in [(("--roofline-compare-fail=speed:5%",), "*bad compare rule 'speed:5%'*"),
                       (("--roofline-save", "../x"), "*baseline name '../x' is not allowed*"),
                       (("--roofline-plot=chart.gif",), "*must end in .png, .svg, .pdf*"),
                       (("--roofline-compare", "--roofline-compare-missing=maybe"), "*maybe*")]:
        bad = run(pytester, *args)
        assert bad.ret == pytest.ExitCode.USAGE_ERROR, args
        bad.stderr.fnmatch_lines([says])
        assert "Traceback" not in bad.stderr.str()


def test_a_test_path_taken_as_a_baseline_name_is_a_usage_error(
        pytester: pytest.Pytester) -> None:
    # `--roofline-compare tests` reads `tests` as the (optional) value: pytest would then run
    # the whole rootdir and compare against a baseline that does not exist, and CI would pass.
    suite(pytester, 4096)
    (pytester.path / "tests").mkdir()
    (pytester.path / "notes.txt").write_text("not a report")
    for args, kind in [(("--roofline-compare", "tests"), "folder"),
                       (("--roofline-save", "tests"), "folder"),
                       (("--roofline-compare", "notes.txt"), "file")]:
        result = run(pytester, *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, args
        result.stderr.fnmatch_lines([f"ERROR: {args[0]}: '{args[1]}' is taken as a baseline "
                                     f"name, but it is an existing {kind} (*); write "
                                     f"{args[0]}=NAME (with '=')*"])
    assert not (pytester.path / ".roofline").exists()
    # the bare option still means the default baseline; a report path still works
    run(pytester, "--roofline-save").assert_outcomes(passed=2)
    run(pytester, "--roofline-compare", ".roofline/baseline.json").assert_outcomes(passed=2)


@pytest.mark.parametrize("option", ["--roofline-md=blocker/report.md",
                                    "--roofline-storage=blocker/store",
                                    "--roofline-plot=blocker/chart.svg"])
def test_a_file_that_cannot_be_written_fails_the_run(pytester: pytest.Pytester,
                                                      option: str) -> None:
    pytest.importorskip("matplotlib")
    suite(pytester, 4096)
    (pytester.path / "blocker").write_text("a file where a folder is needed")
    result = run(pytester, option, "--roofline-save=main")
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    matcher(result).fnmatch_lines(["roofline: * *blocker*: *blocker is a file, not a folder"])
    result.stdout.no_fnmatch_line("*File exists*")


def test_an_interrupted_run_saves_no_baseline(pytester: pytest.Pytester) -> None:
    suite(pytester, 4096, extra="def test_stop():\n    pytest.exit(\"stopped by the user\")\n")
    result = run(pytester, "--roofline-save")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*baseline 'baseline' not saved: the run was interrupted*"])
    assert not (pytester.path / ".roofline").exists()


def test_markdown_file_and_github_summary(pytester: pytest.Pytester,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    suite(pytester, 4096)
    run(pytester, "--roofline-save").assert_outcomes(passed=2)
    suite(pytester, 32)
    summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    run(pytester, "--roofline-compare", "--roofline-md=out/report.md",
        "--roofline-github-summary").assert_outcomes(passed=1, failed=1)
    for path in (pytester.path / "out" / "report.md", summary):
        text = path.read_text()
        assert text.startswith("## Roofline report")
        assert text.index("### Regressions") < text.index("### Results")
        assert "| `test_k.py::test_moving` | h100-sxm (bf16) | `regime` |" in text


def test_plots_as_a_file_and_in_the_terminal(pytester: pytest.Pytester) -> None:
    image = pytest.importorskip("matplotlib.image")
    suite(pytester, 32)
    result = run(pytester, "--roofline-plot=chart.png")
    matcher(result).fnmatch_lines(["roofline: plot written to *chart.png"])
    assert image.imread(pytester.path / "chart.png").shape[:2] == (480, 1000)
    term = run(pytester, "--roofline-plot=term")
    term.stdout.fnmatch_lines(["roofline: h100-sxm  bf16 roof 989 TFLOP/s*",
                               "  A  test_moving * memory * 31.8 FLOP/B  report",
                               "  B  test_steady * compute * 2048.0 FLOP/B  ok"])
    # A repeated option keeps every value: both charts, and a second file.
    both = run(pytester, "--roofline-plot=term", "--roofline-plot=chart.svg",
               "--roofline-plot=again.png")
    matcher(both).fnmatch_lines(["roofline: h100-sxm  bf16 roof 989 TFLOP/s*",
                                 "roofline: plot written to *chart.svg",
                                 "roofline: plot written to *again.png"])
    assert (pytester.path / "chart.svg").read_text().lstrip().startswith("<?xml")


def test_the_gate_works_the_same_under_xdist(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    suite(pytester, 4096)
    args = (*plugin_args(), "-n", "2")
    saved = pytester.runpytest_subprocess(*args, "--roofline-save=main")
    saved.assert_outcomes(passed=2)
    assert len(json.loads((pytester.path / ".roofline" / "main.json").read_text())
               ["results"]) == 2
    suite(pytester, 32)
    result = pytester.runpytest_subprocess(*args, "--roofline-compare=main")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*roofline: regression against baseline 'main': h100-sxm (bf16): regime changed*",
        "Regressions (1):",
    ])
    assert Path(pytester.path / ".roofline" / "main.json").is_file()


def test_one_report_per_run_carries_a_hooks_additions_everywhere(
        pytester: pytest.Pytester) -> None:
    """The report is built once and passed through pytest_roofline_json once: what the hook
    adds is in the JSON file, the saved baseline and the Markdown alike."""
    suite(pytester, 4096)
    pytester.makeconftest("""
        calls = []

        def pytest_roofline_json(config, report):
            calls.append(1)
            report["ci"] = {"job": "42"}
            for record in report["results"]:
                record["team"] = "kernels"
                record["expectation"] = record["expectation"] + " [team kernels]"

        def pytest_unconfigure(config):
            print("json hook calls:", len(calls))
    """)
    result = run(pytester, "--roofline-json=r.json", "--roofline-save=base",
                 "--roofline-md=summary.md", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*json hook calls: 1"])
    written = load_report(pytester.path / "r.json")
    saved = load_report(pytester.path / ".roofline" / "base.json")
    for report in (written, saved):
        assert report["ci"] == {"job": "42"}
        assert {r["team"] for r in report["results"]} == {"kernels"}
    assert "[team kernels]" in (pytester.path / "summary.md").read_text(encoding="utf-8")
