"""Results survive pytest-xdist: two real worker processes, one summary, one JSON file."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points

import pytest

pytest.importorskip("xdist", reason="pytest-xdist is not installed (it is in the dev extra)")
pytest.importorskip("yaml")
pytest_plugins = ("pytester",)

# the made-up chip of test_plugin.py: ridge 100 TFLOP/s / 1 TB/s = 100 FLOP/B
TOY_SPEC = """\
name: toychip
sources: {made-up: "round numbers for tests"}
memory: {capacity: 80 GB, bandwidth: 1 TB/s, source: made-up}
matrix: {bf16: 100 TFLOP/s, source: made-up}
"""
ISOLATE = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest", "-p", "no:benchmark")


def plugin_args() -> list[str]:
    installed = any(ep.value == "pytest_roofline.plugin.hooks"
                    for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "pytest_roofline.plugin.hooks"]


def test_two_workers_one_summary_and_one_json(pytester: pytest.Pytester,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # a row a line
    pytester.makefile(".yaml", toychip=TOY_SPEC)
    pytester.makeconftest("""
        import os

        def pytest_roofline_json(config, report):
            # counts how many processes write the report: the controller alone must
            with open("json-writers.txt", "a") as handle:
                handle.write(f"{os.getpid()} {hasattr(config, 'workerinput')}\\n")
    """)
    pytester.makepyfile("""
        import os
        import pytest

        @pytest.mark.parametrize("i", range(8))
        @pytest.mark.roofline(hw="toychip", regime="memory", flops=1e9, bytes=1e9)
        def test_copy(i):
            pass

        @pytest.mark.roofline(hw=["toychip", "h100"], regime="compute", flops=1e9, bytes=1e9)
        def test_wrong():
            pass

        def test_fixture(roofline):
            roofline.add(flops=1e12, bytes=1e9)

        def test_unmarked():
            pass

        def test_pids(worker_id):
            assert worker_id.startswith("gw")
    """)
    result = pytester.runpytest_inprocess(
        *plugin_args(), *ISOLATE, "-p", "xdist", "-n", "2",
        "--roofline-specs=toychip.yaml", "--roofline-hw=toychip",
        "--roofline-json=report.json", "--junitxml=junit.xml", "--roofline-summary=all")
    result.assert_outcomes(passed=11, failed=1)
    result.stdout.fnmatch_lines(["*2 workers*"])
    result.stdout.fnmatch_lines(["*= roofline =*", "JSON report (11 results): *report.json"])
    start = next(i for i, line in enumerate(result.outlines) if "= roofline =" in line)
    end = next(i for i, line in enumerate(result.outlines) if line.startswith("JSON report"))
    rows = result.outlines[start + 3:end]  # after the title, the convention and the header
    assert len(rows) == 11  # 8 copies, test_wrong on 2 chips, test_fixture; nothing else
    assert sum("test_wrong" in r for r in rows) == 2 and rows[0].endswith("FAIL")
    assert sum("test_copy" in r for r in rows) == 8

    writers = (pytester.path / "json-writers.txt").read_text().splitlines()
    assert len(writers) == 1 and writers[0].endswith("False")  # once, by the controller
    report = json.loads((pytester.path / "report.json").read_text())
    keys = [(r["nodeid"].split("::")[1], r["hw"]) for r in report["results"]]
    assert len(keys) == len(set(keys)) == 11
    assert ("test_wrong", "h100-sxm") in keys and ("test_fixture", "toychip") in keys
    assert ("test_copy[7]", "toychip") in keys

    cases = {c.get("name"): c for c in ET.parse(pytester.path / "junit.xml").iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["test_copy[3]"].iter("property")}
    assert props["roofline:toychip:regime"] == "memory"
