"""The plugin's pytest-free parts: marker parsing, settings, verdict lines, records transport
and the summary table.

Figures use a made-up chip with round numbers so each expected value can be derived by hand:
100 TFLOP/s bf16 on the matrix units, 10 TFLOP/s fp32 on the vector units, 1 TB/s of memory
bandwidth (ridge = 100e12 / 1e12 = 100 FLOP/B), 80 GB of memory, two 10 GB/s links.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from wrapped import unwrap

from pytest_roofline import Hardware, Link, Workload, analyze, ops
from pytest_roofline.judging.marker import KEYS, Expectation, MarkerError, merge, parse
from pytest_roofline.judging.signature import signature_text
from pytest_roofline.judging.verdict import analyze_all, breakdown, evaluate
from pytest_roofline.plugin.options import MARKER_HELP as HELP
from pytest_roofline.plugin.session import RooflineSession, expand, fields_of, record_of
from pytest_roofline.plugin.settings import (
    Settings,
    SettingsError,
    parse_derate,
    parse_flops_per_mac,
    parse_margin,
    parse_summary,
    split_names,
)
from pytest_roofline.report.table import summary
from pytest_roofline.text_table import cut_end, cut_middle, render

TOY = Hardware(
    name="toy", memory_bandwidth=1e12, memory_capacity=80e9, matrix={"bf16": 100e12},
    vector={"fp32": 10e12}, links={"link": Link("link", 10e9, 2)})


def verdict(workload: Workload, **marker: Any) -> tuple[str, str]:
    """(outcome, message) of *workload* on TOY under the marker arguments *marker*."""
    settings = {k: marker.pop(k) for k in ("flops_per_mac", "derate") if k in marker}
    expectation = parse({"hw": TOY, **marker})
    results = analyze_all(expectation, workload, **settings)
    (check,) = evaluate(expectation, workload, results, **settings)
    return check.outcome, check.message


# -- marker ---------------------------------------------------------------------------------


def test_marker_help_shows_the_signature_without_annotations() -> None:
    assert HELP.startswith("roofline(hw=None, regime=None, *, workload=None, flops=None, "
                           "bytes=None,")
    assert "margin=None" in HELP and "min_efficiency=None" in HELP and "'object'" not in HELP
    assert "trace=False, cross_check=None, optional_hw=None, strict=False, " \
           "min_kernel_efficiency=None, allow_faster=False)" in HELP
    assert HELP.startswith(f"roofline{signature_text()}: ")  # the marker's real arguments
    assert {"hw", "regime", "workload", "flops", "bytes", "dtype", "min_intensity",
            "max_intensity", "max_time", "fits", "margin", "trace", "cross_check"} <= set(KEYS)


def test_parse_builds_a_frozen_expectation() -> None:
    exp = parse({"hw": ["h100", TOY], "regime": "Compute-bound", "flops": "4 GFLOP",
                 "bytes": "1 GB", "max_time": "2 ms", "fits": False, "margin": "10%",
                 "min_intensity": 1, "max_intensity": 5})
    assert [c.name for c in exp.hw] == ["h100-sxm", "toy"]
    assert exp.regime == ("compute",)
    assert exp.workload is not None and exp.workload.flops == 4e9 and exp.workload.bytes == 1e9
    assert exp.max_time == pytest.approx(2e-3)
    assert exp.margin == pytest.approx(0.1)
    assert exp.describe() == "compute (margin 10%), I>=1, I<=5, t<=2 ms, no fit"
    with pytest.raises(AttributeError):
        exp.margin = 0.2  # type: ignore[misc]


def test_parse_orders_regimes_and_drops_duplicate_chips() -> None:
    exp = parse({"hw": ["h100", "h100-sxm", TOY], "regime": ["network", "memory"]})
    assert [c.name for c in exp.hw] == ["h100-sxm", "toy"]
    assert exp.regime == ("memory", "network") and exp.expected == ["memory", "network"]
    assert not parse({"hw": TOY}).checks


def test_default_hardware_comes_from_the_option() -> None:
    assert parse({}, default_hw=["h100"]).hw[0].name == "h100-sxm"
    assert parse({"hw": TOY}, default_hw=["h100"]).hw == (TOY,)  # the marker wins


@pytest.mark.parametrize(("kwargs", "fragments"), [
    ({"regim": "compute"}, ["unknown argument regim='compute'", "Did you mean 'regime'"]),
    ({"hw": TOY, "regime": "computee"}, ["regime='computee' is not a regime",
                                         "'compute', 'memory', 'network'", "'compute'?"]),
    ({"hw": TOY, "regime": 3}, ["regime=3 is not allowed"]),
    ({"hw": "h1000"}, ["hw='h1000'", "unknown hardware 'h1000'", "Did you mean 'h100'"]),
    ({"hw": []}, ["hw=[] names no chip"]),
    ({"hw": 5}, ["hw=5 is a int"]),
    ({}, ["no hardware to analyze on", "--roofline-hw"]),
    ({"hw": TOY, "flops": -1, "bytes": 1}, ["flops: -1.0 is not allowed", "zero or more"]),
    ({"hw": TOY, "bytes": "4 GFLOP"}, ["bytes: '4 GFLOP'", "not a data size", "'80 GB'"]),
    ({"hw": TOY, "max_time": "2 GB"}, ["max_time: '2 GB'", "not a time", "'2 ms'"]),
    ({"hw": TOY, "max_time": 0}, ["max_time: 0.0 is not allowed"]),
    ({"hw": TOY, "min_intensity": 10, "max_intensity": 1}, ["min_intensity=10.0 is above"]),
    ({"hw": TOY, "min_intensity": "high"}, ["min_intensity='high'", "FLOP/B >= 0"]),
    ({"hw": TOY, "fits": "yes"}, ["fits='yes' is not allowed", "True", "False"]),
    ({"hw": TOY, "margin": 0.1}, ["margin=0.1 needs regime="]),
    ({"hw": TOY, "regime": "memory", "margin": 1.5}, ["margin=1.5", "[0, 1)"]),
    ({"hw": TOY, "dtype": "fp8"}, ["dtype='fp8'", "toy has no dense fp8 peak", "bf16"]),
    ({"hw": TOY, "dtype": "bf17"}, ["dtype='bf17'", "unknown precision"]),
    ({"hw": TOY, "workload": 3}, ["workload=3 is a int", "expected a Workload"]),
    ({"hw": TOY, "workload": Workload(flops=1, bytes=1), "flops": 1},
     ["either workload= or flops=/bytes=", "flops="]),
    ({"hw": TOY, "footprint": "1 GB"}, ["footprint='1 GB' needs a workload"]),
    ({"hw": TOY, "sparse": "no"}, ["sparse='no' is not allowed"]),
])
def test_bad_marker_arguments_name_key_value_and_what_is_allowed(
        kwargs: dict[str, Any], fragments: list[str]) -> None:
    with pytest.raises(MarkerError) as info:
        parse(kwargs)
    for fragment in fragments:
        assert fragment in str(info.value)


def test_a_relative_spec_path_starts_from_the_test_folder(tmp_path: Path) -> None:
    (tmp_path / "chips").mkdir()
    (tmp_path / "chips" / "local.yaml").write_text(
        "name: local-chip\nsources: {s: made up}\n"
        "memory: {capacity: 1 GB, bandwidth: 1 GB/s, source: s}\n"
        "matrix: {bf16: 1 GFLOP/s, source: s}\n")
    exp = parse({"hw": "chips/local.yaml"}, base=tmp_path)
    assert exp.hw[0].name == "local-chip" and exp.hw[0].ridge() == 1.0


def test_merge_takes_positional_arguments_and_lets_the_closest_marker_win() -> None:
    function_mark = (("h100",), {"flops": 1})
    class_mark = (("a100", "memory"), {"bytes": 2})
    assert merge([function_mark, class_mark]) == {
        "hw": "h100", "flops": 1, "regime": "memory", "bytes": 2}
    with pytest.raises(MarkerError, match="at most 2 positional"):
        merge([(("h100", "compute", 3), {})])
    with pytest.raises(MarkerError, match="hw given both by position and as hw="):
        merge([(("h100",), {"hw": "a100"})])


def test_a_sweep_is_refused_by_the_marker() -> None:
    import numpy as np

    with pytest.raises(MarkerError, match="sweep"):
        parse({"hw": TOY, "workload": ops.matmul(np.array([1, 2]), 64, 64)})


# -- verdicts -------------------------------------------------------------------------------


def test_memory_bound_kernel_fails_a_compute_expectation_with_intensity_and_ridge() -> None:
    # 1 GFLOP over 100 MB: intensity 10 FLOP/B, below the ridge of 100 FLOP/B.
    outcome, message = verdict(Workload(flops=1e9, bytes=1e8), regime="compute")
    assert outcome == "failed"
    assert message == ("expected compute-bound on toy (bf16), but intensity 10.0 FLOP/B < "
                       "ridge 100.0 FLOP/B: memory-bound.")
    assert verdict(Workload(flops=1e9, bytes=1e8), regime="memory") == ("passed", "")
    assert verdict(Workload(flops=1e9, bytes=1e8))[0] == "report"


def test_a_knob_turns_into_the_size_that_crosses_the_ridge() -> None:
    # matmul(m, 4096, 4096) in bf16: intensity = m·k·n / (m·k + k·n + m·n) = 4096·m / (2·m +
    # 4096) >= 100  <=>  m >= 409600 / 3896 = 105.1, so compute-bound from m = 106.
    outcome, message = verdict(ops.matmul(64, 4096, 4096), regime="compute")
    assert outcome == "failed"
    assert message.endswith("memory-bound. Compute-bound from m >= 106.")
    assert verdict(ops.matmul(106, 4096, 4096), regime="compute")[0] == "passed"
    assert verdict(ops.matmul(105, 4096, 4096), regime="compute")[0] == "failed"


def test_margin_fails_a_regime_too_close_to_the_ridge() -> None:
    # intensity 105 FLOP/B: 5% above the ridge. A 10% band calls it too close; 4% does not.
    near = Workload(flops=1.05e9, bytes=1e7)
    outcome, message = verdict(near, regime="compute", margin=0.1)
    assert outcome == "failed"
    assert "intensity 105.0 FLOP/B is within 10% of ridge 100.0 FLOP/B" in message
    assert "too close to call" in message
    assert verdict(near, regime="compute", margin=0.04)[0] == "passed"
    # memory side: ridge / intensity = 100 / 95 = 1.053 < 1.1
    assert "too close to call" in verdict(Workload(flops=0.95e9, bytes=1e7), regime="memory",
                                          margin=0.1)[1]
    # both compute and memory allowed: the ridge does not matter
    assert verdict(near, regime=["compute", "memory"], margin=0.1)[0] == "passed"


def test_network_bound_kernel_explains_with_times() -> None:
    # 1 GB over 2 links x 10 GB/s = 50 ms; 1 GFLOP at 100 TFLOP/s = 10 us; 1 MB at 1 TB/s = 1 us
    work = Workload(flops=1e9, bytes=1e6, link_bytes=1e9)
    outcome, message = verdict(work, regime="compute")
    assert outcome == "failed"
    assert message == ("expected compute-bound on toy (bf16), but network time 50 ms > "
                       "compute 10 us and memory 1 us: network-bound.")
    assert verdict(work, regime="network")[0] == "passed"


def test_program_regime_is_explained_by_shares_of_time() -> None:
    # a compute-bound matmul (1 ms) and a memory-bound copy (3 ms: 3 GB at 1 TB/s)
    program = (Workload(flops=1e11, bytes=1e6, name="gemm")
               + Workload(flops=1e6, bytes=3e9, unit="vector", name="copy"))
    outcome, message = verdict(program, regime="compute")
    assert outcome == "failed"
    assert "memory-bound kernels take 75% of the 4 ms time bound (compute 25%)" in message


def test_intensity_time_and_fits_limits() -> None:
    work = Workload(flops=1e9, bytes=1e9, name="w")  # 1 FLOP/B, 1 ms memory-bound
    assert verdict(work, min_intensity=2)[1] == (
        "expected intensity >= 2 FLOP/B on toy (bf16), but it is 1 FLOP/B.")
    assert verdict(work, max_intensity=0.5)[1] == (
        "expected intensity <= 0.5 FLOP/B on toy (bf16), but it is 1 FLOP/B.")
    assert verdict(work, max_time="0.5 ms")[1] == (
        "expected a roofline time bound <= 500 us on toy (bf16), but it is 1 ms "
        "(memory-bound).")
    assert verdict(work, max_time="2 ms")[0] == "passed"
    assert "declares no footprint" in verdict(work, fits=True)[1]
    big = work.with_(footprint="100 GB")
    assert verdict(big, fits=True)[1] == (
        "expected the footprint to fit in toy memory, but it needs 100 GB of 80 GB. The "
        "fewest chips that could hold it: 2 (2 x 80 GB, before any sharding overhead).")
    assert verdict(big, fits=False)[0] == "passed"


def test_one_flop_per_mac_halves_intensity_and_ridge_but_not_the_verdict() -> None:
    work = Workload(flops=1e9, bytes=1e8)
    # 1 GFLOP counted as 0.5 G "FLOPs" over 100 MB: 5 FLOP/B; ridge 50 TFLOP/s / 1 TB/s = 50
    outcome, message = verdict(work, regime="compute", flops_per_mac=1)
    assert outcome == "failed" and "intensity 5 FLOP/B < ridge 50.0 FLOP/B" in message
    assert verdict(work, regime="memory", flops_per_mac=1)[0] == "passed"


def test_breakdown_lists_figures_kernels_and_failures() -> None:
    program = ops.matmul(64, 4096, 4096) + ops.layernorm(64, 4096)
    expectation = parse({"hw": TOY, "regime": "compute"})
    checks = evaluate(expectation, program, analyze_all(expectation, program))
    text = breakdown(checks)
    assert "toy (bf16)" in text and "ridge 100.0 FLOP/B" in text
    assert "kernel" in text and "share" in text and "layernorm(64x4096, bf16)" in text
    assert "FAIL: expected compute-bound" in text
    # in 60 columns: every line fits, a FAIL line continues under its verdict (8 in)
    narrow = breakdown(checks, width=60).splitlines()
    assert max(len(line) for line in narrow) <= 60
    fail = next(i for i, line in enumerate(narrow) if line.startswith("  FAIL: "))
    assert narrow[fail + 1].startswith(" " * 8 + narrow[fail + 1].strip())
    assert f"  FAIL: {checks[0].failures[0]}" in unwrap(narrow)


# -- settings -------------------------------------------------------------------------------


def test_settings_parsers_name_the_option() -> None:
    assert split_names(["h100,a100", " tpu-v5e h100"]) == ("h100", "a100", "tpu-v5e")
    assert parse_flops_per_mac("1", "--x") == 1
    assert parse_derate("70%", "--x") == pytest.approx(0.7)
    assert parse_margin("0.1", "--x") == pytest.approx(0.1)
    assert parse_summary("ALL", "--x") == "all"
    for parser, bad in ((parse_flops_per_mac, "3"), (parse_derate, "0"), (parse_derate, "x"),
                        (parse_margin, "1"), (parse_summary, "some")):
        with pytest.raises(SettingsError, match=rf"^--roofline-opt: {bad!r} is not allowed"):
            parser(bad, "--roofline-opt")


def test_settings_state_the_convention() -> None:
    assert Settings().convention() == ("2 FLOPs per multiply-accumulate (vendor convention); "
                                       "roofs at 100% of peak")
    text = Settings(flops_per_mac=1, derate=0.7).convention()
    assert text.startswith("1 FLOP per multiply-accumulate") and "derated to 70%" in text
    with pytest.raises(SettingsError):
        Settings(derate=2.0)


# -- records transport and the table -----------------------------------------------------------


def _record(nodeid: str, hw: str = "toy", outcome: str = "passed",
            **extra: Any) -> dict[str, Any]:
    result = analyze(Workload(flops=1e9, bytes=1e8, name="w"), TOY)
    from pytest_roofline.report.records import make_record

    record = make_record(nodeid, result, ["compute"], outcome)
    record["hw"] = hw
    record.update(extra)
    return record


def test_a_record_is_plain_json_data() -> None:
    record = _record("t.py::a", expected=["compute", "memory"])
    fields = fields_of(record)
    assert "nodeid" not in fields and "hw" not in fields
    assert json.loads(json.dumps(fields)) == fields
    assert record_of("t.py::a", "toy", fields) == record


def test_junit_properties_spell_out_every_figure() -> None:
    record = _record("t.py::a", expected=["compute", "memory"])
    expanded = dict(expand("toy", fields_of(record)))
    assert expanded["roofline:toy:regime"] == record["regime"]
    assert expanded["roofline:toy:intensity"] == record["intensity"]
    assert expanded["roofline:toy:expected"] == "compute|memory"
    assert "roofline:toy" not in expanded and "roofline:toy:nodeid" not in expanded


def test_record_fields_hold_plain_values_only() -> None:
    import numpy as np

    record = _record("t.py::a", extra=np.float64(2.5), arr=np.array([1.0, 2.0]), obj=object(),
                     flag=np.bool_(True))
    values = fields_of(record)
    assert type(values["extra"]) is float
    assert values["arr"] == [1.0, 2.0] and values["flag"] is True
    assert isinstance(values["obj"], str)


def test_session_keeps_records_and_notes() -> None:
    session = RooflineSession(Settings())
    assert session.keep("t.py::a", [("toy", fields_of(_record("t.py::a")))], "xfail") == 1
    assert session.keep("t.py::b", []) == 0
    assert session.notes == {"t.py::a": "xfail"} and len(session.records) == 1
    report = session.report()
    assert report["version"] == 1 and report["results"][0]["nodeid"] == "t.py::a"
    assert report["settings"]["flops_per_mac"] == 2


def test_a_worker_call_report_carries_each_record_as_json_text() -> None:
    from pytest_roofline.plugin.runner import PROPERTY, to_text

    records = [("toy", fields_of(_record("t.py::a"))),
               ("h100-sxm", fields_of(_record("t.py::a", outcome="failed")))]
    properties = [("other", 1), *((PROPERTY, to_text(r)) for r in records), ("roofline", 3),
                  "junk", ("a", "b", "c")]
    controller = RooflineSession(Settings())
    assert controller.receive("t.py::a", properties, "xfail") == 2
    assert controller.records == [record_of("t.py::a", hw, f) for hw, f in records]
    assert controller.notes == {"t.py::a": "xfail"}
    here = RooflineSession(Settings())  # what the process that ran the test keeps
    here.keep("t.py::a", records, "xfail")
    assert here.records == controller.records


def test_render_aligns_and_shortens_long_ids_in_the_middle() -> None:
    lines = render(["name", "n"], [["a", "1"], ["bbb", "22"]], align="lr")
    assert lines == ["name   n", "a      1", "bbb   22"]
    long = "tests/deep/folder/test_file.py::test_function_with_a_long_name[param-1]"
    # the folders go first; then the middle, keeping the file and the end of the test name
    assert cut_middle(long, 60) == "test_file.py::test_function_with_a_long_name[param-1]"
    cut = render(["test", "x"], [[long, "1"]], width=40)[1]
    assert cut.startswith("test_file.py::") and cut.endswith("name[param-1]  1")
    assert "..." in cut and len(cut) == 40


def test_rows_under_ids_of_their_own_are_cut_to_the_width_too() -> None:
    """The compare table with intensity and time rules at 80 columns: the chip, regime, two
    judged figures and the status need 79 columns; indented under their id they would take
    81, so the widest cell is cut at its end instead of the line running over."""
    headers = ["test", "chip", "regime", "FLOP/B old -> new", "time old -> new", "status"]
    row = ["t.py::test_gemm", "a100-80gb-sxm (bf16)", "compute", "1365.3 -> 682.7",
           "5.77 ms -> 5.77 ms", "REGRESSED"]
    lines = render(headers, [row, ["t.py::" + "x" * 80, *row[1:]]], align="lllrrl",
                   width=80, min_shrunk=16)
    assert max(len(line) for line in lines) <= 80, lines
    assert lines[2] == "t.py::test_gemm" and lines[3].endswith("REGRESSED")
    assert "a100-80gb-sxm (b...  compute" in lines[3]


def test_summary_fits_80_columns() -> None:
    """Long ids, a long expectation and long chip names: every line within 80 columns, the
    expectation abbreviated before ids take a line of their own."""
    long_id = "tests/integration/serving/test_decode.py::test_llama_decode_batches[batch-128]"
    records = [_record(long_id, outcome="failed"), _record("t.py::test_x")]
    for record in records:
        record.update(hw="a100-80gb-sxm-derated", expectation="memory, t<=40 ms, fits, I<=4")
    lines = summary(records, mode="all", width=80)
    assert max(map(len, lines)) <= 80
    assert lines[2] == long_id  # on a line of its own, whole
    assert lines[3].split()[-1] == "FAIL"
    short = summary([_record("t.py::test_x")], mode="all", width=80)
    assert len(short) == 2 and max(map(len, short)) <= 80   # one line a row when it fits
    assert cut_end("memory, t<=40 ms", 10) == "memory,..."


def test_summary_modes() -> None:
    records = [_record(f"t.py::test[{i:03}]") for i in range(60)]
    records.append(_record("t.py::z_failing", outcome="failed"))
    auto = summary(records, mode="auto", auto_rows=50)
    assert len(auto) == 3  # header, the failure, the note
    assert auto[1].startswith("t.py::z_failing") and auto[1].endswith("FAIL")
    assert auto[2] == "61 rows, 1 failed; 60 not shown (--roofline-summary=all lists every row)"
    every = summary(records, mode="all")
    assert len(every) == 62 and every[1].startswith("t.py::z_failing")  # failures first
    assert summary(records[:3], mode="auto") == summary(records[:3], mode="all")
    assert summary(records, mode="none") == []
    assert summary(records[:2], mode="failed")[-1].startswith("2 rows, 0 failed")
    noted = summary([_record("t.py::x", outcome="failed")], notes={"t.py::x": "xfail"})
    assert noted[1].endswith("FAIL (xfail)")
    header = every[0].split()
    assert header == ["test", "hw", "dtype", "FLOPs", "bytes", "FLOP/B", "ridge", "regime",
                      "time", "expected", "verdict"]
    row = every[2].split()
    # 1 GFLOP, 100 MB, intensity 10, ridge 100, memory-bound, 100 us (100 MB at 1 TB/s)
    assert row[1:] == ["toy", "bf16", "1", "G", "100", "MB", "10.0", "100.0", "memory", "100",
                       "us", "compute", "ok"]


def test_expectation_is_hashable_value() -> None:
    a = Expectation(hw=(TOY,), regime=("compute",))
    assert a == Expectation(hw=(TOY,), regime=("compute",))


# -- units without pint ------------------------------------------------------------------------


def _spec_strings() -> list[str]:
    """Every string of the built-in hardware specs that reads like a quantity."""
    import yaml

    from pytest_roofline.hardware import builtin_spec_dir

    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, str) and re.fullmatch(r"[0-9.]+(?:e[+-]?[0-9]+)? \S+", node):
            found.append(node)

    for path in sorted(builtin_spec_dir().glob("*.yaml")):
        walk(yaml.safe_load(path.read_text(encoding="utf-8")))
    return found


def test_common_quantities_parse_without_pint_to_pints_values() -> None:
    """The plugin's first roofline test must not pay pint's import: the spellings of the
    specs and markers are read directly, to exactly the float pint gives."""
    from pytest_roofline import units

    dimension_of = {"FLOP/s": "flop_rate", "OP/s": "flop_rate", "TOPS": "flop_rate",
                    "B/s": "bandwidth", "Hz": "frequency", "FLOP": "flop", "B": "byte",
                    "s": "time"}
    texts = [*_spec_strings(), "1 GB", "4 GB", "16 GiB", "2 ms", "500 us", "3e9 FLOP",
             "4.3 GFLOP", "1.5e2 MB", ".5 TB/s", "10 GB/s", "1979 TOPS", "7 ns", "1.98 GHz"]
    checked = 0
    for text in texts:
        dimension = next((d for suffix, d in dimension_of.items() if text.endswith(suffix)),
                         None)
        if dimension is None:
            continue
        fast = units._parse_simple(text, dimension)
        assert fast is not None, text
        reg = units.registry()
        exact = float(reg.Quantity(text).to(units._DIMENSIONS[dimension][0]).magnitude)
        assert fast == exact, text
        checked += 1
    assert checked > 100  # the specs hold many quantities
    # anything else is left to pint
    assert units._parse_simple("1 kbit", "byte") is None
    assert units._parse_simple("2 min", "time") is None
    assert units._parse_simple("-1 GB", "byte") is None
    assert units._parse_simple("1 GB", "time") is None


def test_first_chip_and_marker_strings_load_without_pint() -> None:
    import subprocess
    import sys

    code = ("import sys; from pytest_roofline import get_hardware, units; "
            "get_hardware('h100'); get_hardware('tpu-v5e'); units.parse('4 GB', 'byte'); "
            "units.parse('2 ms', 'time'); print('pint' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_optional_hw_names_chips_of_the_test() -> None:
    exp = parse({"hw": ["h100", TOY], "optional_hw": "H100", "flops": 1, "bytes": 1})
    assert exp.optional_hw == frozenset({"h100-sxm"})
    assert parse({"hw": ["h100", TOY], "optional_hw": True, "flops": 1,
                  "bytes": 1}).optional_hw == frozenset({"h100-sxm", "toy"})
    with pytest.raises(MarkerError, match="'a100' is not one of the test's chips"):
        parse({"hw": ["h100"], "optional_hw": ["a100"], "flops": 1, "bytes": 1})
    with pytest.raises(MarkerError, match="optional_hw=3 is not allowed"):
        parse({"hw": ["h100"], "optional_hw": 3, "flops": 1, "bytes": 1})


def test_a_failed_fits_names_the_largest_batch_and_the_fewest_chips() -> None:
    """Llama 3 8B decode at batch 1024, context 4096 needs 566 GB; H100 holds 80 GB: the
    footprint fits up to batch = 119 (what `sweep --param batch` finds too), and no fewer than
    ceil(566 / 80) = 8 chips could hold the whole of it."""
    from pytest_roofline import models
    from pytest_roofline.judging.verdict import _fits_failure

    workload = models.load("llama-3-8b").decode(batch=1024, context=4096)
    result = analyze(workload, "h100")
    line = _fits_failure(True, result, workload.hint, workload)
    assert line is not None and "It fits up to batch = 119." in line
    assert "The fewest chips that could hold it: 8 (8 x 80 GB" in line
    seventy = models.load("llama-3-70b").decode(batch=8, context=4096)
    line = _fits_failure(True, analyze(seventy, "h100"), seventy.hint, seventy)
    assert line is not None and "It does not fit even at batch = 1." in line


def test_a_workload_list_with_a_stranger_names_the_item_not_the_list() -> None:
    """A list of workloads is allowed; the error for a bad item says which item it is."""
    with pytest.raises(MarkerError) as info:
        parse({"hw": TOY, "workload": [ops.matmul(8, 8, 8), "x"]})
    message = str(info.value)
    assert "workload[1]='x' is a str" in message and "or a list of them" in message


def test_the_summary_labels_its_intensity_where_a_chip_kept_traffic_on_chip() -> None:
    from pytest_roofline import models
    from pytest_roofline.report.records import make_record

    reused = make_record("t.py::resnet", analyze(models.load("resnet-50").forward(32), "h100"),
                         None, "report")
    lines = summary([reused], mode="all")
    assert lines[-2].startswith("FLOP/B: DRAM intensity on each chip, after on-chip reuse")
    assert "workload_intensity" in lines[-1]
    assert not summary([_record("t.py::x")], mode="all")[-1].startswith("FLOP/B:")
    # the note fits the 80 columns of a CI log as the table does
    assert max(len(line) for line in summary([reused], mode="all", width=80)) <= 80


def test_a_row_no_chip_could_price_loads_back_even_when_no_kernel_names_a_precision() -> None:
    """The error row of a chip that cannot price a workload of vector kernels alone (no
    matrix kernel names a precision) says the precision is unknown, in words: the report
    reader requires the dtype as text, and a null there made the whole report unreadable."""
    from pytest_roofline import get_hardware
    from pytest_roofline.judging.verdict import judge
    from pytest_roofline.report.records import record_problem

    vector_only = ops.elementwise(1000, dtype="fp64")
    judgement = judge(Expectation(hw=(get_hardware("h100"),)), vector_only,
                      analyzed=lambda: ["cannot analyze it on h100-sxm: a made-up reason"])
    [(chip, record)] = judgement.fields
    assert chip == "h100-sxm" and record["dtype"] == "unknown"
    assert record_problem({**record, "nodeid": "t.py::t", "hw": chip}) == ""
