"""The pytest plugin end to end, through pytester (in-process runs unless stated).

Most suites run on "toychip", a spec file with round numbers so every figure can be derived
by hand: 100 TFLOP/s bf16, 1 TB/s (ridge 100 FLOP/B), 80 GB, two 10 GB/s links.
"""

from __future__ import annotations

import json
import sys
import textwrap
from importlib.metadata import entry_points

import pytest
from wrapped import matcher, unwrap

import pytest_roofline.plugin.hooks  # noqa: F401 - imported here, kept across in-process runs
from pytest_roofline.report.records import REQUIRED, load_report

pytest_plugins = ("pytester",)

# In-process pytester runs drop the modules they import when they end; yaml's C extension
# does not survive being imported twice. Import what the plugin loads lazily up front.
pytest.importorskip("yaml")
pytest.importorskip("pint")

TOY_SPEC = """\
name: toychip
aliases: [toy]
description: a made-up chip with round numbers
sources: {made-up: "round numbers for tests"}
memory: {capacity: 80 GB, bandwidth: 1 TB/s, source: made-up}
matrix: {bf16: 100 TFLOP/s, int8: 200 TOP/s, source: made-up}
vector: {fp32: 10 TFLOP/s, source: made-up}
links:
  link: {bandwidth: 10 GB/s, count: 2, source: made-up}
"""


def plugin_args() -> list[str]:
    """Load the plugin by module when the package is importable but not installed."""
    installed = any(ep.value == "pytest_roofline.plugin.hooks"
                    for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "pytest_roofline.plugin.hooks"]


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester folder that knows toychip through the roofline_specs ini option."""
    pytester.makefile(".yaml", toychip=TOY_SPEC)
    pytester.makeini("[pytest]\nroofline_specs = toychip.yaml\n")
    return pytester


#: Other plugins of this environment stay out of the inner runs (hypothesis's summary hook
#: imports all of hypothesis on every run).
ISOLATE = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark")


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*plugin_args(), *ISOLATE, *args)


def call_reports(result: pytest.RunResult) -> dict[str, pytest.TestReport]:
    reports = result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    return {r.nodeid.split("::")[-1]: r for r in reports if r.when == "call"}


# -- verdicts -------------------------------------------------------------------------------


def test_a_failed_expectation_is_one_line_in_the_call_phase(suite: pytest.Pytester) -> None:
    suite.makepyfile(test_v="""
        import pytest

        @pytest.mark.roofline(hw="toychip", regime="compute", flops=1e12, bytes=1e9)
        def test_big():
            pass

        @pytest.mark.roofline(hw="toychip", regime="compute", flops="1 GFLOP", bytes="100 MB")
        def test_small():
            pass
    """)
    result = run(suite)
    result.assert_outcomes(passed=1, failed=1)
    # 1 GFLOP / 100 MB = 10 FLOP/B, ridge 100 TFLOP/s / 1 TB/s = 100 FLOP/B
    verdict = ("roofline: expected compute-bound on toychip (bf16), but intensity 10.0 FLOP/B "
               "< ridge 100.0 FLOP/B: memory-bound.")
    result.stdout.fnmatch_lines([  # on the terminal (80 columns), wrapped
        "*_ test_small _*",
        "roofline: expected compute-bound on toychip (bf16), but intensity 10.0 FLOP/B <",
        "    ridge 100.0 FLOP/B: memory-bound.",
        "*Captured roofline call*",
        "toychip (bf16), workload 'test_small': failed",
        "FAILED test_v.py::test_small - roofline: expected compute-bound*",
    ])
    result.stdout.no_fnmatch_line("*def test_small*")  # no traceback into the plugin
    result.stdout.no_fnmatch_line("*Failed: *")
    reports = call_reports(result)
    assert reports["test_small"].failed and reports["test_big"].passed
    assert str(reports["test_small"].longrepr) == verdict  # as data: the one line


def test_knob_of_an_op_says_which_size_crosses_the_ridge(suite: pytest.Pytester) -> None:
    # matmul(64, 4096, 4096) bf16 on toychip: compute-bound from m = 106
    # (4096·m / (2·m + 4096) >= 100, derived in test_plugin_parts.py); at m = 64 the
    # intensity is 64·4096 / (128 + 4096) = 62.1 FLOP/B
    suite.makepyfile("""
        import pytest
        from pytest_roofline import ops

        @pytest.mark.roofline(hw="toy", regime="compute", workload=ops.matmul(64, 4096, 4096))
        def test_gemm():
            pass
    """)
    result = run(suite)
    result.assert_outcomes(failed=1)
    matcher(result).fnmatch_lines(["roofline: expected compute-bound on toychip (bf16), but "
                                   "intensity 62.1 FLOP/B < ridge 100.0 FLOP/B: memory-bound. "
                                   "Compute-bound from m >= 106."])


def test_the_test_body_failing_is_the_users_failure(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="toychip", regime="compute", flops=1, bytes=1e9)
        def test_body_fails():
            assert 1 + 1 == 3

        @pytest.mark.roofline(hw="toychip", regime="compute", flops=1, bytes=1e9)
        def test_body_skips():
            pytest.skip("not today")
    """)
    result = run(suite)
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*assert (1 + 1) == 3*"])
    result.stdout.no_fnmatch_line("*roofline: expected*")
    result.stdout.no_fnmatch_line("*= roofline =*")  # nothing analyzed, no summary


def test_all_expectations_and_several_chips(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
        import pytest

        # 1 GFLOP and 1 GB: 1 FLOP/B, 1 ms memory-bound on toychip
        W = dict(flops=1e9, bytes=1e9)

        @pytest.mark.roofline(hw=["toychip", "h100"], regime="memory", **W)
        def test_two_chips():
            pass

        @pytest.mark.roofline(hw="toychip", max_time="0.5 ms", **W)
        def test_time():
            pass

        @pytest.mark.roofline(hw="toychip", min_intensity=2, **W)
        def test_min_intensity():
            pass

        @pytest.mark.roofline(hw="toychip", fits=True, footprint="100 GB", **W)
        def test_fits():
            pass

        @pytest.mark.roofline(hw="toychip", regime="compute", margin="10%", flops=1.05e9,
                              bytes=1e7)
        def test_margin():
            pass

        @pytest.mark.roofline(hw="toychip", regime="network", flops=1e9, bytes=1e6,
                              link_bytes="1 GB")
        def test_network():
            pass
    """)
    result = run(suite)
    result.assert_outcomes(passed=2, failed=4)
    matcher(result).fnmatch_lines_random([
        "roofline: expected a roofline time bound <= 500 us on toychip (bf16), but it is 1 ms "
        "(memory-bound).",
        "roofline: expected intensity >= 2 FLOP/B on toychip (bf16), but it is 1 FLOP/B.",
        "roofline: expected the footprint to fit in toychip memory, but it needs 100 GB of "
        "80 GB. The fewest chips that could hold it: 2 (2 x 80 GB, before any sharding "
        "overhead).",
        "roofline: expected compute-bound on toychip (bf16), but intensity 105.0 FLOP/B is "
        "within 10% of ridge 100.0 FLOP/B: too close to call (margin=10%).",
    ])
    reports = call_reports(result)
    assert reports["test_two_chips"].passed and reports["test_network"].passed
    # without --junitxml no report carries the records (they reach the session directly)
    assert not reports["test_two_chips"].user_properties
    reports = call_reports(run(suite, "--junitxml=j.xml"))
    chips = [n.split(":")[1] for n, _ in reports["test_two_chips"].user_properties
             if n.startswith("roofline:") and n.endswith(":regime")]
    assert chips == ["toychip", "h100-sxm"]  # in the marker's order


def test_xfail_shows_what_a_failure_looks_like(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
        import pytest

        @pytest.mark.xfail(reason="decode is memory-bound", strict=True)
        @pytest.mark.roofline(hw="toychip", regime="compute", flops=1e9, bytes=1e9)
        def test_decode():
            pass
    """)
    result = run(suite, "-rx")
    result.assert_outcomes(xfailed=1)
    result.stdout.fnmatch_lines(["*test_decode*toychip*memory*compute*FAIL (xfail)"])


# -- bad markers ----------------------------------------------------------------------------


def test_bad_marker_arguments_error_that_test_alone(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="toychip", flops=1, bytes=1)
        def test_fine():
            pass

        @pytest.mark.roofline(hw="toychip", regime="computee", flops=1, bytes=1)
        def test_unknown_regime():
            pass

        @pytest.mark.roofline(hw="toychp", flops=1, bytes=1)
        def test_unknown_chip():
            pass

        @pytest.mark.roofline(hw="toychip", flops=1, bytes="4 GFLOP")
        def test_wrong_unit():
            pass

        @pytest.mark.roofline(hw="toychip", flops=-5, bytes=1)
        def test_negative_flops():
            pass

        @pytest.mark.roofline(hw="toychip", flops=1, bytes=1, max_tme="1 ms")
        def test_unknown_key():
            pass

        @pytest.mark.roofline(hw="toychip", regime="memory")
        def test_no_workload():
            pass
    """)
    result = run(suite)
    result.assert_outcomes(passed=1, errors=6)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    matcher(result).fnmatch_lines_random([
        "roofline marker on test_unknown_regime: regime='computee' is not a regime; allowed: "
        "'compute', 'memory', 'network' or a list of them. Did you mean 'compute'?",
        "roofline marker on test_unknown_chip: hw='toychp': unknown hardware 'toychp'. "
        "Did you mean 'toychip'*",
        "roofline marker on test_wrong_unit: bytes: '4 GFLOP' has units of *, which are not a "
        "data size; expected a data size such as '80 GB' or '16 GiB'",
        "roofline marker on test_negative_flops: flops: -5.0 is not allowed, it must be zero "
        "or more",
        "roofline marker on test_unknown_key: unknown argument max_tme='1 ms'. Did you mean "
        "'max_time'*(all * are listed in docs/plugin.md, The marker)",
        "roofline marker on test_no_workload: no workload: pass workload=*",
    ])
    for name in ("test_unknown_regime", "test_unknown_chip"):
        matcher(result).fnmatch_lines([f"*ERROR at setup of {name}*"])


def test_no_hardware_anywhere_is_a_clear_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        import pytest

        @pytest.mark.roofline(regime="memory", flops=1, bytes=1)
        def test_where():
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    matcher(result).fnmatch_lines(["roofline marker on test_where: no hardware to analyze on: "
                                   "pass hw= to the marker*--roofline-hw or roofline_hw*"])


# -- fixture --------------------------------------------------------------------------------


def test_fixture_declares_workloads_and_gives_results(suite: pytest.Pytester,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # a row a line
    suite.makepyfile("""
        import pytest
        from pytest_roofline import ops

        @pytest.mark.roofline(hw=["toychip", "h100"], regime="memory")
        def test_adds_compose(roofline):
            roofline.add(flops=1e9, bytes="1 GB")
            roofline.add(ops.layernorm(1024, 4096))
            toy = roofline.result("toy")
            assert toy.flops > 1e9 and len(toy.kernels) == 2
            assert roofline["h100"].hw == "h100-sxm"
            assert [r.hw for r in roofline.results] == ["toychip", "h100-sxm"]

        def test_without_marker(roofline):
            roofline.add(flops=1e12, bytes=1e9)
            assert roofline.result().regime == "compute"

        def test_dynamic(request):
            handle = request.getfixturevalue("roofline")
            handle.add(flops=1, bytes=1)

        @pytest.mark.roofline(hw="toychip", regime="compute")
        def test_fails_after_body(roofline):
            roofline.add(flops=1e9, bytes=1e9)

        def test_forgot_to_add(roofline):
            pass

        def test_bad_add(roofline):
            roofline.add(42)

        def test_lookup_by_a_non_name(roofline):
            roofline.add(flops=1, bytes=1)
            with pytest.raises(LookupError, match="a chip is looked up by name .such as "
                                                  "'toychip'., got int"):
                roofline[3]
    """)
    result = run(suite, "--roofline-hw=toychip", "--roofline-summary=all")
    result.assert_outcomes(passed=4, failed=3)
    result.stdout.fnmatch_lines_random([
        "roofline: expected compute-bound on toychip (bf16), but intensity 1 FLOP/B < ridge "
        "100.0 FLOP/B: memory-bound.",
        "roofline: the test declared no workload: call roofline.add(...)*",
        "*roofline.add() takes a Workload*got int: 42",
        "*::test_without_marker *toychip*compute*-*",
    ])


def test_fixture_value_is_one_object_per_test(suite: pytest.Pytester) -> None:
    """The test's argument, request.getfixturevalue() and a fixture that depends on roofline
    give the same handle; the next test gets a fresh one."""
    suite.makepyfile("""
        import pytest

        seen = []

        @pytest.fixture
        def helper(roofline):
            return roofline

        @pytest.mark.roofline(hw="toychip", regime="compute")
        @pytest.mark.parametrize("n", [1, 2])
        def test_same(roofline, helper, request, n):
            assert helper is roofline and request.getfixturevalue("roofline") is roofline
            assert roofline.workload is None
            roofline.add(flops=1e12, bytes=1e9)
            seen.append(roofline)

        def test_fresh():
            assert seen[0] is not seen[1]
    """)
    result = run(suite, "-p", "no:randomly")
    result.assert_outcomes(passed=3)


def test_a_conftest_roofline_fixture_wins(suite: pytest.Pytester) -> None:
    """A conftest that defines its own ``roofline`` fixture overrides the plugin's, as any
    pytest fixture would."""
    suite.makeconftest("""
        import pytest

        @pytest.fixture
        def roofline():
            return "the conftest's"
    """)
    suite.makepyfile("""
        def test_override(roofline):
            assert roofline == "the conftest's"
    """)
    result = run(suite, "--roofline-hw=toychip")
    result.assert_outcomes(passed=0, failed=1)
    result.stdout.fnmatch_lines(["*the test declared no workload*"])


def test_fixture_without_any_hardware_errors(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("""
        def test_needs_hw(roofline):
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    matcher(result).fnmatch_lines(["roofline fixture in test_needs_hw: no hardware to analyze "
                                   "on: set --roofline-hw NAME (or roofline_hw in the ini file)*"])
    result.stdout.no_fnmatch_line("*roofline marker on*")


def test_minus_m_roofline_selects_fixture_only_tests(suite: pytest.Pytester,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # a row a line
    suite.makepyfile("""
        import pytest

        def test_fixture_only(roofline):
            roofline.add(flops=1e12, bytes=1e9)

        @pytest.mark.roofline(hw="toychip", flops=1, bytes=1)
        def test_marked():
            pass

        def test_plain():
            pass
    """)
    result = run(suite, "--roofline-hw=toychip", "-m", "roofline", "--roofline-summary=all")
    result.assert_outcomes(passed=2, deselected=1)
    result.stdout.fnmatch_lines_random(["*::test_fixture_only *toychip*compute*-*",
                                        "*::test_marked *toychip*"])
    run(suite, "--roofline-hw=toychip", "-m", "not roofline").assert_outcomes(
        passed=1, deselected=2)


# -- output ---------------------------------------------------------------------------------

MANY = """
    import pytest

    @pytest.mark.parametrize("i", range({n}))
    @pytest.mark.roofline(hw="toychip", regime="memory", flops=1e9, bytes=1e9)
    def test_many(i):
        pass

    @pytest.mark.roofline(hw="toychip", regime="compute", flops=1e9, bytes=1e9)
    def test_wrong():
        pass

    def test_unmarked():
        pass
"""


def test_summary_table(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # every column (80 leaves some out: see below)
    suite.makepyfile(MANY.format(n=2))
    result = run(suite)
    result.stdout.fnmatch_lines([
        "*= roofline =*",
        "2 FLOPs per multiply-accumulate (vendor convention); roofs at 100% of peak",
        "test*hw*dtype*FLOPs*bytes*FLOP/B*ridge*regime*time*expected*verdict",
        "*test_wrong*toychip*bf16*1 G*1 GB*1*100.0*memory*1 ms*compute*FAIL",
        "*test_many?0?*toychip*bf16*1 G*1 GB*1*100.0*memory*1 ms*memory*ok",
        "*test_many?1?*ok",
    ])
    result.stdout.no_fnmatch_line("*test_unmarked*toychip*")


@pytest.mark.parametrize(("mode", "rows", "note"), [
    ("auto", 1, "61 rows, 1 failed; 60 not shown (--roofline-summary=all lists every row)"),
    ("failed", 1, "61 rows, 1 failed; 60 not shown*"),
    ("all", 61, None),
])
def test_summary_modes_keep_large_suites_readable(suite: pytest.Pytester, mode: str, rows: int,
                                                  note: str | None) -> None:
    suite.makepyfile(MANY.format(n=60))
    result = run(suite, f"--roofline-summary={mode}")
    table = [line for line in result.outlines if line.endswith(("FAIL", " ok"))]
    assert len(table) == rows
    assert "test_wrong" in table[0]  # failures first
    if note:
        result.stdout.fnmatch_lines([note])


def test_summary_none_and_ini(suite: pytest.Pytester) -> None:
    suite.makepyfile(MANY.format(n=1))
    suite.makeini("[pytest]\nroofline_specs = toychip.yaml\nroofline_summary = none\n")
    result = run(suite)
    result.stdout.no_fnmatch_line("*= roofline =*")
    result = run(suite, "--roofline-summary=all")  # the command line beats the ini
    result.stdout.fnmatch_lines(["*= roofline =*"])


def test_json_report(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw=["toychip", "h100"], regime="memory", flops=1e9, bytes=1e9)
        def test_a():
            pass

        @pytest.mark.roofline(hw="toychip", regime="compute", flops=1e9, bytes=1e9)
        def test_b():
            pass

        def test_unmarked():
            pass
    """)
    result = run(suite, "--roofline-json=out/report.json")
    # the notice ends with the path, which takes the next line whole when it does not fit
    result.stdout.fnmatch_lines(["JSON report (3 results):", "    /*/out/report.json"])
    report = load_report(suite.path / "out" / "report.json")
    assert report["version"] == 1 and report["format"] == "pytest-roofline"
    assert {"datetime", "pytest_roofline_version", "machine", "settings"} <= set(report)
    assert report["settings"]["flops_per_mac"] == 2
    records = {(r["nodeid"].split("::")[1], r["hw"]): r for r in report["results"]}
    assert set(records) == {("test_a", "toychip"), ("test_a", "h100-sxm"),
                            ("test_b", "toychip")}
    for record in records.values():
        assert set(REQUIRED) | {"expected"} <= set(record)
    b = records["test_b", "toychip"]
    assert b["outcome"] == "failed" and b["expected"] == ["compute"]
    assert b["intensity"] == pytest.approx(1.0) and b["ridge"] == pytest.approx(100.0)
    assert b["time_s"] == pytest.approx(1e-3) and b["regime"] == "memory"
    assert b["message"].startswith("expected compute-bound on toychip")
    assert records["test_a", "toychip"]["outcome"] == "passed"


def test_junit_xml_carries_the_figures(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="toychip", regime="memory", flops=1e9, bytes=1e9)
        def test_a():
            pass
    """)
    run(suite, "--junitxml=junit.xml")
    import xml.etree.ElementTree as ET

    cases = ET.parse(suite.path / "junit.xml").getroot().findall(".//testcase")
    assert [c.get("name") for c in cases] == ["test_a"]
    props = {p.get("name"): p.get("value") for p in cases[0].iter("property")}
    assert props["roofline:toychip:regime"] == "memory"
    assert float(props["roofline:toychip:intensity"] or 0) == pytest.approx(1.0)
    assert float(props["roofline:toychip:ridge"] or 0) == pytest.approx(100.0)
    assert props["roofline:toychip:expected"] == "memory"
    assert props["roofline:toychip:outcome"] == "passed"


def test_unwritable_json_path_is_reported_and_fails_the_session(suite: pytest.Pytester
                                                                 ) -> None:
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="toychip", flops=1, bytes=1)
        def test_a():
            pass
    """)
    (suite.path / "blocker").write_text("a file, not a folder")
    result = run(suite, "--roofline-json=blocker/report.json")
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    matcher(result).fnmatch_lines(["--roofline-json: cannot write *blocker*report.json: "
                                   "*blocker is a file, not a folder"])


def test_very_verbose_runs_attach_the_breakdown_to_passing_tests(suite: pytest.Pytester
                                                                 ) -> None:
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="toychip", regime="memory", flops=1e9, bytes=1e9)
        def test_a():
            pass
    """)
    result = run(suite, "-vv", "-rP")
    result.stdout.fnmatch_lines(["*Captured roofline call*",
                                 "toychip (bf16), workload 'test_a': passed"])
    run(suite, "-rP").stdout.no_fnmatch_line("*Captured roofline call*")


def test_several_default_chips(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # a row a line
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(flops=1, bytes=1)
        def test_a():
            pass
    """)
    result = run(suite, "--roofline-hw=toychip,h100", "--roofline-hw", "a100",
                 "--roofline-summary=all")
    result.stdout.fnmatch_lines_random(["*test_a*toychip*", "*test_a*h100-sxm*",
                                        "*test_a*a100-80gb-sxm*"])


# -- configuration --------------------------------------------------------------------------


def test_conventions_and_command_line_over_ini(suite: pytest.Pytester,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the convention's sentence on one line
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(regime="memory", flops=1e9, bytes=1e9)
        def test_a():
            pass
    """)
    suite.makeini("[pytest]\nroofline_specs = toychip.yaml\nroofline_hw = h100\n"
                  "roofline_derate = 0.9\n")
    result = run(suite, "--roofline-hw", "toychip", "--roofline-derate=50%",
                 "--roofline-flops-per-mac=1", "--roofline-json=r.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["1 FLOP per multiply-accumulate*; roofs derated to 50% of "
                                 "peak"])
    (record,) = json.loads((suite.path / "r.json").read_text())["results"]
    # the CLI's chip and derate: 1 GB at 0.5 TB/s = 2 ms; one FLOP per MAC halves the ridge
    assert record["hw"] == "toychip" and record["time_s"] == pytest.approx(2e-3)
    assert record["ridge"] == pytest.approx(50.0) and record["intensity"] == pytest.approx(0.5)


@pytest.mark.parametrize(("args", "ini", "message"), [
    (["--roofline-derate=1.5"], "", "ERROR: --roofline-derate: '1.5' is not allowed*"),
    (["--roofline-flops-per-mac=3"], "", "ERROR: --roofline-flops-per-mac: '3' is not allowed*"),
    (["--roofline-summary=some"], "", "ERROR: --roofline-summary: 'some' is not allowed*"),
    (["--roofline-margin=2"], "", "ERROR: --roofline-margin: '2' is not allowed*"),
    (["--roofline-hw=h1000"], "", "ERROR: --roofline-hw / roofline_hw: unknown hardware "
                                  "'h1000'. Did you mean 'h100'*"),
    (["--roofline-hw=,"], "", "ERROR: --roofline-hw: ',' names no chip*"),
    (["--roofline-specs=missing.yaml"], "", "ERROR: --roofline-specs: '*missing.yaml' does "
                                            "not exist*"),
    ([], "roofline_derate = lots", "ERROR: roofline_derate (ini): 'lots' is not allowed*"),
    ([], "roofline_specs = nothing/", "ERROR: roofline_specs (ini): '*nothing' does not "
                                      "exist*"),
])
def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester, args: list[str],
                                            ini: str, message: str) -> None:
    pytester.makeini(f"[pytest]\n{ini}\n")
    pytester.makepyfile("def test_a(): pass")
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_a_broken_spec_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", broken="name: broken\nsources: {a: b}\nmemory: {}\n")
    pytester.makepyfile("def test_a(): pass")
    result = run(pytester, "--roofline-specs=broken.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --roofline-specs / roofline_specs: *broken.yaml*"])


def test_markers_help(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_roofline.plugin.options import MARKER_HELP

    result = run(pytester, "--markers")
    # wrapped to the terminal's 80 columns: the arguments aligned after the parenthesis
    result.stdout.fnmatch_lines(["@pytest.mark.roofline(hw=None, regime=None, *, "
                                 "workload=None, flops=None,",
                                 "                      bytes=None, link_bytes=None, *"])
    ours = "@pytest.mark.roofline(" + result.stdout.str().split(
        "@pytest.mark.roofline(")[1].split("\n\n")[0]
    assert max(len(line) for line in ours.splitlines()) <= 80
    assert " ".join(ours.split()) == "@pytest.mark." + MARKER_HELP
    monkeypatch.setenv("COLUMNS", "2000")  # one line, as registered for every other run
    run(pytester, "--markers").stdout.fnmatch_lines([f"@pytest.mark.{MARKER_HELP}"])
    # the marker is known by its name either way
    pytester.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="h100", flops=1, bytes=1)
        def test_a():
            pass
    """)
    run(pytester, "--strict-markers").assert_outcomes(passed=1)


# -- hooks ----------------------------------------------------------------------------------


def test_hooks_register_hardware_see_results_and_amend_the_json(pytester: pytest.Pytester
                                                                ) -> None:
    pytester.makeconftest("""
        def pytest_roofline_register_hardware(config):
            return [{
                "name": "hookchip", "sources": {"s": "made up"},
                "memory": {"capacity": "16 GB", "bandwidth": "2 TB/s", "source": "s"},
                "matrix": {"bf16": "400 TFLOP/s", "source": "s"},
            }]

        def pytest_roofline_result(config, item, nodeid, result, record):
            record["team"] = "kernels"
            if result.time > 1e-3:
                return f"slower than 1 ms on {result.hw}"

        def pytest_roofline_json(config, report):
            report["ci"] = {"job": 7}
    """)
    pytester.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="hookchip", flops=1e9, bytes="1 GB")
        def test_fast():      # 0.5 ms at 2 TB/s
            pass

        @pytest.mark.roofline(hw="hookchip", flops=1e9, bytes="4 GB")
        def test_slow():      # 2 ms
            pass
    """)
    result = run(pytester, "--roofline-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["roofline: slower than 1 ms on hookchip"])
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["ci"] == {"job": 7}
    assert {r["team"] for r in report["results"]} == {"kernels"}
    outcomes = {r["nodeid"].split("::")[1]: r["outcome"] for r in report["results"]}
    assert outcomes == {"test_fast": "report", "test_slow": "failed"}


def test_a_bad_hardware_hook_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makeconftest("""
        def pytest_roofline_register_hardware(config):
            return [5]
    """)
    pytester.makepyfile("def test_a(): pass")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest_roofline_register_hardware: returned 5; "
                                 "expected a list of Hardware objects*"])


def test_marker_on_a_class_merges_with_the_function_marker(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline("toychip", "memory")
        class TestKernels:
            @pytest.mark.roofline(flops=1e9, bytes=1e9)
            def test_copy(self):
                pass

            @pytest.mark.roofline(regime="compute", flops=1e12, bytes=1e9)
            def test_gemm(self):
                pass
    """)
    run(suite).assert_outcomes(passed=2)


def test_a_parameter_marker_wins_over_the_function_marker(suite: pytest.Pytester) -> None:
    suite.makepyfile("""
        import pytest
        from pytest_roofline import ops

        @pytest.mark.parametrize("m", [
            pytest.param(64, marks=pytest.mark.roofline(regime="memory")),
            pytest.param(106, marks=pytest.mark.roofline(regime="compute")),
            pytest.param(105, marks=pytest.mark.roofline(regime="compute")),
        ])
        @pytest.mark.roofline(hw="toychip", regime="network")
        def test_gemm(m, roofline):
            roofline.add(ops.matmul(m, 4096, 4096))
    """)
    result = run(suite)
    result.assert_outcomes(passed=2, failed=1)  # m = 105 is just below the crossover at 106
    result.stdout.fnmatch_lines(["*memory-bound. Compute-bound from m >= 106."])


# -- cost when unused ----------------------------------------------------------------------


def test_plugin_imports_no_heavy_module(pytester: pytest.Pytester) -> None:
    """A run without roofline tests imports neither pint, numpy nor yaml (subprocess)."""
    pytester.makepyfile("""
        import sys

        def test_light():
            heavy = sorted(m for m in ("pint", "numpy", "yaml") if m in sys.modules)
            assert heavy == []
            assert "pytest_roofline.plugin.hooks" in sys.modules
    """)
    result = pytester.runpytest_subprocess(*plugin_args(), *ISOLATE, "-p", "no:xdist")
    result.assert_outcomes(passed=1)


def test_unused_plugin_defers_its_session(pytester: pytest.Pytester) -> None:
    """Without a roofline option or test, the plugin imports its hooks, its options and its
    hook specifications only: the settings, the session state, the marker parser and the
    baseline gate wait for a roofline test or an option, and the run ends without a roofline
    summary (subprocess). Each module imported at startup costs every session, and pytest
    imports a plugin's modules through its assertion rewriter."""
    pytester.makepyfile("""
        import sys

        def test_light():
            loaded = sorted(m for m in sys.modules if m.startswith("pytest_roofline"))
            assert loaded == ["pytest_roofline", "pytest_roofline.plugin",
                              "pytest_roofline.plugin.chips", "pytest_roofline.plugin.hooks",
                              "pytest_roofline.plugin.hookspecs",
                              "pytest_roofline.plugin.options",
                              "pytest_roofline.plugin.registries",
                              "pytest_roofline.plugin.runner",
                              "pytest_roofline.plugin.state", "pytest_roofline.report",
                              "pytest_roofline.report.defaults", "pytest_roofline.version"]
    """)
    result = pytester.runpytest_subprocess(*plugin_args(), *ISOLATE, "-p", "no:xdist")
    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*=* roofline *=*")
    # an option is checked before any test runs, as ever
    result = pytester.runpytest_subprocess(*plugin_args(), *ISOLATE, "-p", "no:xdist",
                                           "--roofline-derate=2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--roofline-derate: '2' is not allowed*"])


def test_plugin_module_imports_light() -> None:
    import subprocess

    code = ("import sys, pytest_roofline.plugin.hooks; "
            "print(sorted(m for m in ('pint', 'numpy', 'yaml') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_docs_example_runs(suite: pytest.Pytester) -> None:
    """The hook example of the plugin docs, as a conftest."""
    suite.makeconftest(textwrap.dedent("""
        def pytest_roofline_result(config, item, nodeid, result, record):
            record["attainable_tflops"] = result.attainable / 1e12
    """))
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="toychip", flops=1e9, bytes=1e9)
        def test_a():
            pass
    """)
    run(suite, "--roofline-json=r.json").assert_outcomes(passed=1)
    (record,) = json.loads((suite.path / "r.json").read_text())["results"]
    assert record["attainable_tflops"] == pytest.approx(1.0)  # 1 GFLOP in 1 ms


def test_a_chip_loaded_by_path_is_known_by_path_only(pytester: pytest.Pytester) -> None:
    # Whether hw="pathchip" works must not depend on a test that loaded toychip.yaml by path
    # running first: alone, in the full serial run and under -n 2 the outcome is the same.
    # a name of its own: in-process runs share the catalog, and other tests register toychip
    pytester.makefile(".yaml", pathchip=TOY_SPEC.replace("toychip", "pathchip")
                      .replace("aliases: [toy]", "aliases: []"))
    pytester.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="pathchip.yaml", flops=1, bytes=1)
        def test_a_by_path():
            pass

        @pytest.mark.roofline(hw="pathchip", flops=1, bytes=1)
        def test_b_by_name():
            pass
    """)
    for args in ([], ["-k", "by_name"]):
        run(pytester, *args).assert_outcomes(passed=1 if not args else 0, errors=1)
    if _has_xdist():
        result = pytester.runpytest_subprocess(*plugin_args(), *ISOLATE, "-n", "2")
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines(["*hw='pathchip': unknown hardware 'pathchip'*"])
    # registering the file makes its name known everywhere
    run(pytester, "--roofline-specs=pathchip.yaml").assert_outcomes(passed=2)


def _has_xdist() -> bool:
    import importlib.util

    return importlib.util.find_spec("xdist") is not None


def test_a_bad_size_in_a_marker_workload_is_one_line_naming_file_and_line(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_bad="""
        import pytest
        from pytest_roofline import ops

        @pytest.mark.roofline(hw="h100", workload=ops.matmul(-5, 64, 64))
        def test_a():
            pass
    """)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([  # wrapped on the terminal, whole in the short summary
        "test_bad.py:4: matmul: m must be a whole number >= 1, got -5 (while importing",
        "    the module: *", "*roofline.add()*",
        "ERROR test_bad.py - test_bad.py:4: matmul: m must be a whole number*"])
    failed = [r for r in result.reprec.getreports("pytest_collectreport")  # type: ignore[attr-defined]
              if r.failed]
    assert "\n" not in str(failed[0].longrepr) and "(while importing the module: a " in str(
        failed[0].longrepr)
    assert "_common.py" not in result.stdout.str()


def test_a_precision_the_chip_lacks_is_a_setup_error_from_dtype_or_workload(
        pytester: pytest.Pytester) -> None:
    # One behaviour for both spellings, as "Bad arguments" in docs/plugin.md says.
    pytester.makepyfile("""
        import pytest
        from pytest_roofline import ops

        @pytest.mark.roofline(hw="a100", dtype="fp8", flops=1e9, bytes=1e6)
        def test_dtype_argument():
            pass

        @pytest.mark.roofline(hw="a100", workload=ops.matmul(64, 64, 64, dtype="fp8"))
        def test_workload_precision():
            pass
    """)
    result = run(pytester)
    result.assert_outcomes(errors=2)
    matcher(result).fnmatch_lines_random([
        "roofline marker on test_dtype_argument: dtype='fp8': *no dense fp8 peak*",
        "roofline marker on test_workload_precision: cannot analyze 'matmul(64x64x64, fp8)' "
        "on a100-80gb-sxm: *no dense fp8 peak*"])


def test_the_summary_fits_an_80_column_ci_log(suite: pytest.Pytester,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    suite.makepyfile(test_a_rather_long_module_name_for_kernels="""
        import pytest

        @pytest.mark.parametrize("size", [1, 10, 2])
        @pytest.mark.roofline(hw="toychip", regime="memory", flops=1e9, bytes="1 GB")
        def test_projection_of_the_attention_output(size):
            pass
    """)
    result = run(suite, "--roofline-summary=all")
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "= roofline =" in line)
    table = lines[start + 2:start + 6]
    # the ids keep 32 characters or more (the FLOP/B column gave way): the start of the file
    # name and the end of the test name, parameters whole (text_table.cut_labels: the start
    # the ids share is cut first, the same in every row)
    assert table[0].split() == ["test", "hw", "regime", "time", "expected", "verdict"]
    assert all(len(line) <= 80 for line in table), table
    ids = [line.split()[0] for line in table[1:]]
    assert all(len(i) >= 32 and i.startswith("test_a_rather_lo") for i in ids), ids
    assert all(i.endswith("_output[" + n + "]") for i, n in zip(ids, ["1", "2", "10"],
                                                                 strict=True)), ids
    # parameter ids sort as numbers: 1, 2, 10
    assert [line.split()[0].rsplit("[", 1)[1] for line in table[1:]] == ["1]", "2]", "10]"]


def test_a_config_json_path_through_the_fixture_names_the_knob(pytester: pytest.Pytester) -> None:
    # DeepSeek-V3 from its published config.json (fp8 weights), decode on 8 H200 with tensor
    # or expert parallelism: memory-bound at batch 64, and the failure says which batch turns
    # it.
    from pathlib import Path

    config = Path(__file__).parent / "data" / "hf" / "deepseek-v3.json"
    pytester.makepyfile(f"""
        import pytest
        from pytest_roofline import models

        @pytest.mark.roofline(hw="h200", regime="compute")
        def test_deepseek_v3_decode(roofline):
            model = models.load({str(config)!r})
            roofline.add(model.decode(batch=64, context=256, tp=8))

        @pytest.mark.roofline(hw="h200", regime="compute")
        def test_deepseek_v3_decode_expert_parallel(roofline):
            model = models.load({str(config)!r})
            roofline.add(model.decode(batch=64, context=4096, ep=8))
    """)
    result = run(pytester)
    result.assert_outcomes(failed=2)
    # each verdict is wrapped on the terminal: read with its continuation lines joined
    verdicts = [line for line in unwrap(result.stdout.lines) if "FAIL: expected "
                "compute-bound on h200 (bf16), but" in line and ": memory-bound. "
                "Compute-bound from batch >= " in line]
    assert len(verdicts) == 2, result.stdout.str()
    assert all(len(line) <= 80 for line in result.stdout.lines if "FAIL:" in line)


def test_the_fixture_is_a_standard_fixture(suite: pytest.Pytester) -> None:
    """--setup-show lists it; the test, request.getfixturevalue() and a fixture built on it
    all get the one object the verdict reads."""
    suite.makepyfile("""
        import pytest

        @pytest.fixture
        def declared(roofline):
            roofline.add(flops=1e9, bytes="1 GB")
            return roofline

        @pytest.mark.roofline(hw="toychip", regime="compute")
        def test_one_object(roofline, declared, request):
            assert declared is roofline is request.getfixturevalue("roofline")
    """)
    result = run(suite, "--setup-show")
    result.assert_outcomes(failed=1)  # 1 FLOP/B: memory-bound, so the verdict saw the add()
    result.stdout.fnmatch_lines(["*SETUP    F roofline*", "*expected compute-bound*"])


def test_chips_registered_during_a_session_are_gone_after_it(suite: pytest.Pytester) -> None:
    from pytest_roofline.hardware import CATALOG

    suite.makeconftest("""
        def pytest_roofline_register_hardware(config):
            return [{"name": "session-chip", "extends": "h100",
                     "sources": {"x": "a test"}}]
    """)
    suite.makepyfile("""
        import pytest

        @pytest.mark.roofline(hw="session-chip", flops=1e9, bytes=1e9)
        def test_on_it():
            pass
    """)
    run(suite).assert_outcomes(passed=1)
    assert "session-chip" not in CATALOG.aliases() and "toychip" not in CATALOG.aliases()


THREE_CHIPS = """
    import pytest
    from pytest_roofline import ops

    # tpu-v5e has no fp16 matrix peak (its spec lists bf16 and int8): it cannot price this
    W = ops.matmul(1024, 1024, 1024, dtype="fp16")

    @pytest.mark.roofline(hw=["h100", "mi300x", "tpu-v5e"], regime="compute", workload=W)
    def test_three():
        pass

    @pytest.mark.roofline(hw=["h100", "mi300x", "tpu-v5e"], regime="compute", workload=W,
                          optional_hw="tpu-v5e")
    def test_three_optional():
        pass
"""


def test_a_chip_that_cannot_price_the_work_leaves_the_others_reported(
        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_chips=THREE_CHIPS)
    result = run(pytester, "--roofline-json=r.json", "--roofline-summary=all")
    result.assert_outcomes(passed=1, failed=1)
    matcher(result).fnmatch_lines([
        "*roofline: cannot analyze 'matmul(1024x1024x1024, fp16)' on tpu-v5e: *fp16*; the "
        "other chips are judged as usual*",
    ])
    matcher(result).fnmatch_lines_random([
        "*test_three *h100-sxm*compute*ok", "*test_three *mi300x*compute*ok",
        "*test_three *tpu-v5e*ERROR", "*optional *tpu-v5e*skip",
    ])
    from pytest_roofline.report.records import load_report

    records = load_report(pytester.path / "r.json")["results"]  # a report that loads back
    by_test: dict[str, dict[str, str]] = {}
    for r in records:
        by_test.setdefault(r["nodeid"].split("::")[1], {})[r["hw"]] = r["outcome"]
    assert by_test == {
        "test_three": {"h100-sxm": "passed", "mi300x": "passed", "tpu-v5e": "error"},
        "test_three_optional": {"h100-sxm": "passed", "mi300x": "passed",
                                "tpu-v5e": "skipped"}}


def test_a_test_no_chip_can_price_still_has_its_rows(pytester: pytest.Pytester) -> None:
    """A workload added in the body that none of the test's chips can price fails the test
    and keeps an error row per chip (skipped under optional_hw), so that the test is not
    missing from the summary and the JSON report; the marker's own such workload stays a
    set-up error (docs/plugin.md)."""
    pytester.makepyfile(test_none="""
        import pytest
        from pytest_roofline import ops

        @pytest.mark.roofline(hw="tpu-v5e", regime="compute")
        def test_alone(roofline):
            roofline.add(ops.matmul(1024, 1024, 1024, dtype="fp16"))

        @pytest.mark.roofline(hw="tpu-v5e", regime="compute", optional_hw=True)
        def test_alone_optional(roofline):
            roofline.add(ops.matmul(1024, 1024, 1024, dtype="fp16"))

        @pytest.mark.roofline(hw="tpu-v5e", regime="compute",
                              workload=ops.matmul(1024, 1024, 1024, dtype="fp16"))
        def test_marker():
            pass
    """)
    result = run(pytester, "--roofline-json=r.json", "--roofline-summary=all")
    result.assert_outcomes(failed=2, errors=1)
    matcher(result).fnmatch_lines_random([
        "*test_alone *tpu-v5e*ERROR", "*lone_optional *tpu-v5e*skip",
        "*roofline marker on test_marker: cannot analyze*fp16*",
        "*no chip of the test can price the workload, so nothing was judged*"])
    assert "Captured roofline call" not in result.stdout.str()  # no empty breakdown
    from pytest_roofline.report.records import load_report

    records = load_report(pytester.path / "r.json")["results"]
    assert sorted((r["nodeid"].split("::")[1], r["outcome"], r["dtype"]) for r in records) == [
        ("test_alone", "error", "fp16"), ("test_alone_optional", "skipped", "fp16")]


def test_an_op_input_error_in_a_test_body_is_the_callers_line_and_one_message(
        pytester: pytest.Pytester) -> None:
    """attention(q, k, v) without layout= printed q, k and v in a 50-line traceback."""
    pytester.makepyfile(test_att="""
import numpy as np
from pytest_roofline import ops

def test_att():
    q = np.zeros((2, 8, 128, 64), dtype=np.float16)
    ops.attention(q, q, q)
""")
    result = pytester.runpytest_inprocess(*plugin_args(), *ISOLATE)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "q = array" not in out and "attention.py" not in out
    result.stdout.fnmatch_lines(["E * attention(q, k, v) with arrays needs layout='bshd'*"])


def test_a_second_session_sees_none_of_the_first_ones_registrations(
        suite: pytest.Pytester) -> None:
    """Op formulas, chips, models and resolvers a session registers are gone when it ends,
    as is where its calibration progress went."""
    import pytest_roofline.measuring  # noqa: F401 - its registrations are the process's own
    from pytest_roofline import models
    from pytest_roofline.hardware import CATALOG, resolvers
    from pytest_roofline.measuring import calibration
    from pytest_roofline.tracing import registry

    before = (registry.registered(), dict(resolvers.RESOLVERS), list(resolvers.MEASURABLE),
              calibration.progress)
    suite.makeconftest("""
        import pytest_roofline as rl
        from pytest_roofline import models
        from pytest_roofline.hardware import register_resolver
        from pytest_roofline.measuring import calibration

        rl.register_op("conftestlib::op", lambda x: rl.Kernel("op", flops=1.0, bytes=1.0))
        models.register({"name": "session-model", "family": "transformer",
                         "sources": {"x": "a test"}, "hidden": 64, "layers": 2,
                         "heads": 4, "intermediate": 128,
                         "kv_heads": 4, "vocab": 100, "tie_embeddings": True})
        register_resolver(r"session-made", lambda name: None)
        calibration.progress = print

        def pytest_roofline_register_ops(config):
            return {"hooklib::op": lambda x: rl.Kernel("op", flops=1.0, bytes=1.0)}

        def pytest_roofline_register_hardware(config):
            return [{"name": "session-chip", "extends": "h100", "sources": {"x": "a test"}}]
    """)
    suite.makepyfile("""
        import pytest
        from pytest_roofline.tracing.registry import registered

        @pytest.mark.roofline(hw="session-chip")
        def test_on_it(roofline):  # the fixture: the hook's formulas are asked for first
            roofline.add(flops=1e9, bytes=1e9)
            assert {"conftestlib::op", "hooklib::op"} <= set(registered())
    """)
    run(suite).assert_outcomes(passed=1)
    assert (registry.registered(), dict(resolvers.RESOLVERS), list(resolvers.MEASURABLE),
            calibration.progress) == before
    assert "session-chip" not in CATALOG.aliases()
    assert "session-model" not in models.list_models()


IDENTITY_SUITE = '''
import textwrap

pytest_plugins = ("pytester",)

CONFTEST = """
import pytest_roofline as rl
from pytest_roofline import ops

def pytest_roofline_register_ops(config):
    return {"hooklib::op": lambda x: ops.elementwise(64)}
"""

TEST = """
import pytest
from pytest_roofline import Workload, ops

@pytest.mark.roofline(hw="h100", regime="memory", workload=ops.elementwise(1 << 20))
def test_marked():
    pass

@pytest.mark.roofline(hw="h100")
def test_fixture(roofline):
    roofline.add(Workload(flops=1.0, bytes=1.0))
"""

def test_two_in_process_runs(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(TEST)
    for _ in range(2):
        result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
        result.assert_outcomes(passed=2)
'''


def test_class_identity_holds_across_in_process_runs(pytester: pytest.Pytester) -> None:
    """pytester drops the modules an in-process run imported first; the next run must not
    reach the dropped copies through the package's attributes ("is a Workload; expected a
    Workload"). A fresh process, so that the engine is first imported inside the runs."""
    pytester.makepyfile(test_identity=IDENTITY_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-p",
                                           "no:hypothesispytest", "-p", "no:benchmark",
                                           *plugin_args())
    result.assert_outcomes(passed=1)


def test_stacked_markers_follow_pytests_order(suite: pytest.Pytester) -> None:
    """Of markers stacked on one function, the one closest to ``def`` wins, as pytest's
    get_closest_marker says; a class's stacked markers likewise; a parameter's marks win
    over the function's."""
    suite.makepyfile("""
        import pytest
        from pytest_roofline import ops

        W = ops.matmul(64, 4096, 4096)  # 58.5 FLOP/B on toychip's ridge of 100: memory

        @pytest.mark.roofline(regime="compute")
        @pytest.mark.roofline(hw="toychip", regime="memory", workload=W)
        def test_inner_wins(request):
            assert request.node.get_closest_marker("roofline").kwargs["regime"] == "memory"

        @pytest.mark.roofline(hw="toychip", regime="memory", workload=W)
        @pytest.mark.roofline(regime="compute")
        def test_inner_wins_even_when_failing():
            pass

        @pytest.mark.roofline(regime="compute")
        @pytest.mark.roofline(hw="toychip", workload=W, regime="memory")
        class TestStacked:
            def test_in_class(self):
                pass

        @pytest.mark.parametrize("m", [
            pytest.param(64, marks=pytest.mark.roofline(regime="memory"))])
        @pytest.mark.roofline(hw="toychip", regime="compute")
        @pytest.mark.roofline(regime="network")
        def test_parameter_wins(m, roofline):
            roofline.add(ops.matmul(m, 4096, 4096))
    """)
    result = run(suite)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*FAILED*test_inner_wins_even_when_failing*"])
