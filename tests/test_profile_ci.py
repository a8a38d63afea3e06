"""A trace in CI: profile baselines and diffs, CSV, the per-pattern gate, categories, the
clock tick, and formulas from register_op in the trace reader.

The H200, H100 and MI300X traces are public or this project's own (tests/data/traces/
README.md); each changed copy is made in the test, its change stated.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest

import pytest_roofline as rl
from pytest_roofline.cli import main
from pytest_roofline.profiling.csv_rows import COLUMNS, to_csv
from pytest_roofline.profiling.diff import diff, slower

pytest.importorskip("torch")
pytest_plugins = ("pytester",)

from test_profile_plugin import _warm_profiler  # noqa: E402  # before any in-process run

_warm_profiler()

DATA = Path(__file__).parent / "data" / "traces"
PREFILL = DATA / "h200_llama3_8b_layer_prefill.json.gz"
GEMM = "4096x4096bf16,4096x14336bf16"


def _slowed(tmp_path: Path, factor: float = 2.0) -> Path:
    """The prefill trace with every kernel of the 4096 x 4096 x 14336 GEMM (nvjet 320x128)
    taking *factor* times as long."""
    data = json.loads(gzip.decompress(PREFILL.read_bytes()))
    for event in data["traceEvents"]:
        if event.get("cat") == "kernel" and str(event.get("name", "")).startswith(
                "nvjet_sm90_tst_320x128"):
            event["dur"] = event["dur"] * factor
    path = tmp_path / "prefill_slowed.json.gz"
    with gzip.open(path, "wt") as handle:
        json.dump(data, handle)
    return path


def test_a_kernel_slowed_2x_against_a_saved_profile_fails_and_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    saved = tmp_path / "base.json"
    assert main(["profile", str(PREFILL), "--json"]) == 0
    saved.write_text(capsys.readouterr().out)
    slow = _slowed(tmp_path)
    markdown = tmp_path / "diff.md"
    code = main(["profile", str(slow), "--baseline", str(saved), "--fail-regression", "10%",
                 "--markdown", str(markdown)])
    out = " ".join(capsys.readouterr().out.split())  # the lines as wrapped, read whole
    assert code == 1
    assert f"REGRESSED: mm({GEMM}): 618 us -> 1.23 ms a call (+99.9%)" in out
    assert f"FAIL: regressed against {saved}: mm({GEMM})" in out
    text = markdown.read_text()
    assert f"| `mm({GEMM})` | 618 us | 1.23 ms | +99.9% | 79% | 39% | regressed |" in text
    assert "**regressed**" in text
    # the same trace against itself: every kernel the same, exit 0; a trace as baseline too
    assert main(["profile", str(PREFILL), "--baseline", str(PREFILL),
                 "--fail-regression", "10%"]) == 0
    assert "26 kernels took the same time a call" in " ".join(
        capsys.readouterr().out.split())
    # without a gate the comparison reports and passes
    assert main(["profile", str(slow), "--baseline", str(PREFILL)]) == 0


def test_two_public_runs_of_one_model_compare_kernel_by_kernel() -> None:
    # TraceLens's BERT-small on an H100 and on an MI300X: the same ops and shapes, different
    # kernels; the diff matches the ops and lists what each run alone ran
    h100 = rl.read_trace(DATA / "tracelens_h100_bert_small.json.gz").to_dict()
    mi300x = rl.read_trace(DATA / "tracelens_mi300x_bert_small.json.gz").to_dict()
    compared = diff(h100, mi300x, limit=0.10)
    assert len(compared.changes) >= 10
    assert all(c.base is not None and c.new is not None for c in compared.changes)
    names = {c.key[0] for c in compared.changes}
    assert "aten::addmm" in names and len(names) >= 5
    assert compared.markdown().startswith("### Kernels: tracelens_mi300x_bert_small.json.gz")
    assert compared.to_dict()["failed"] == compared.failed


def test_a_slowdown_within_the_clock_tick_is_no_regression() -> None:
    # whole-microsecond clocks: a call of 6 us read as 7 us (+17%) is one tick, and each
    # side allows one; 6 -> 9 us (+50%) is beyond both ticks
    base = {"measured_s": 6e-6, "count": 1.0, "spread": 0.0}
    assert not slower(base, {**base, "measured_s": 7e-6}, limit=0.1, base_tick=1e-6,
                      new_tick=1e-6)
    assert slower(base, {**base, "measured_s": 9e-6}, limit=0.1, base_tick=1e-6,
                  new_tick=1e-6)
    # a spread widens the allowance to at most 10% a side: +25% is beyond it
    noisy = {**base, "measured_s": 1e-3, "spread": 0.5}
    assert not slower(noisy, {**noisy, "measured_s": 1.15e-3}, limit=0.1)
    assert slower(noisy, {**noisy, "measured_s": 1.25e-3}, limit=0.1)


def test_the_json_carries_the_tick_and_each_rows_spread_and_category() -> None:
    profile = rl.read_trace(PREFILL).to_dict()
    assert profile["tick_s"] == pytest.approx(32e-9)  # the H200's clock ticks 32 ns
    assert all("spread" in row and "category" in row for row in profile["rows"])
    categories = profile["by_category"]
    # the categories share out all of the measured time, priced and unpriced
    assert sum(categories.values()) == pytest.approx(profile["measured_s"], rel=1e-9)
    assert next(iter(categories)) == "GEMM"
    [gemm] = [r for r in profile["rows"] if r["op"] == "aten::mm" and r["shapes"] == GEMM]
    assert gemm["category"] == "GEMM"
    old = rl.read_trace(DATA / "kineto_resnet50_v100_2021.json.gz", hw="v100").to_dict()
    assert old["tick_s"] == pytest.approx(1e-6)  # whole microseconds in 2021


def test_csv_has_every_json_field_in_stable_columns(tmp_path: Path) -> None:
    profile = rl.read_trace(DATA / "kineto_resnet50_v100_2021.json.gz", hw="v100").to_dict()
    rows = list(csv.reader(io.StringIO(to_csv(profile))))
    assert tuple(rows[0]) == COLUMNS and len(rows) == len(profile["rows"]) + 1
    keys = {key for row in profile["rows"] for key in row}
    assert keys <= set(COLUMNS), keys - set(COLUMNS)
    first = dict(zip(COLUMNS, rows[1], strict=True))
    assert first["op"] == profile["rows"][0]["op"]
    assert float(first["measured_s"]) == profile["rows"][0]["measured_s"]
    # names from someone else's trace: escapes and overrides written escaped, never raw
    hostile = {"rows": [{"op": "aten::\x1b[31mred\u202e", "kernels": ["k\x00"]}]}
    text = to_csv(hostile)
    assert "\x1b" not in text and "\u202e" not in text and "\\x1b[31mred\\u202e" in text
    out = tmp_path / "rows.csv"
    assert main(["profile", str(PREFILL), "--csv", str(out)]) == 0
    assert out.read_text().splitlines()[0] == ",".join(COLUMNS)


@pytest.mark.parametrize("gate", ["aten::mm=0.5,*=0.0001", '{"aten::mm": 0.5, "*": 0.0001}'])
def test_the_cli_gate_takes_the_markers_per_pattern_thresholds(
        gate: str, capsys: pytest.CaptureFixture[str]) -> None:
    # the prefill trace's GEMMs run at 78-93% of roof; the 4096 x 4096 x 14336 one slowed
    # 2x runs at 39%: only it fails a 50% gate on aten::mm; the rest pass at 0.01%
    assert main(["profile", str(PREFILL), "--min-kernel-efficiency", gate, "--json"]) == 0
    capsys.readouterr()


def test_the_cli_gate_names_the_kernel_under_its_pattern(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    slow = _slowed(tmp_path)
    assert main(["profile", str(slow), "--min-kernel-efficiency", "aten::mm=0.5,*=0.0001",
                 "--json"]) == 1
    failures = json.loads(capsys.readouterr().out)["failures"]
    assert len(failures) == 1 and failures[0].startswith(f"kernel mm({GEMM}) ran at 39.4%")


@pytest.mark.parametrize(("args", "says"), [
    (["--min-kernel-efficiency", "aten::mm=2"], "is not allowed; expected a fraction"),
    (["--min-kernel-efficiency", "=0.5"], "is not PATTERN=FRACTION"),
    (["--min-kernel-efficiency", "{nope"], "is not a JSON object"),
    (["--fail-regression", "10%"], "give --baseline OLD"),
    (["--baseline", "x.json", "--fail-regression", "lots"], "is not allowed"),
    # PCT: a bare 10 meant ten percent and was read as 1000%; above 1 a bare number is
    # refused (a fraction up to 1 stays: 0.1 is 10%)
    (["--baseline", "x.json", "--fail-regression", "10"], "'10' is ambiguous: write 10%"),
    (["--baseline", "x.json", "--fail-regression", "9" * 5000], "is not allowed"),
    (["--formulas", "missing.py"], "no such file"),
])
def test_bad_cli_options_are_one_line_naming_the_option(
        args: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", str(PREFILL), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert says in err and len(err.splitlines()) == 1


# -- formulas from register_op ---------------------------------------------------------------


_FORMULAS = '''
import pytest_roofline as rl
from pytest_roofline import ops


@rl.register_op("demo_ci::scale")
def scale(x, s):
    return ops.elementwise(x, inputs=1, outputs=1, flops_per_element=1)
'''


def _custom_op_trace(tmp_path: Path) -> Path:
    """A CPU trace of torch.ops.demo_ci.scale (a custom op whose CPU kernel is aten::mul)
    then an add, on 1024 x 1024 fp32."""
    import torch

    if not hasattr(torch.ops.demo_ci, "scale"):
        lib = torch.library.Library("demo_ci", "DEF")
        lib.define("scale(Tensor x, float s) -> Tensor")
        lib.impl("scale", lambda x, s: x * s, "CPU")
        lib.impl("scale", lambda x, s: torch.empty_like(x), "Meta")
        _custom_op_trace.lib = lib  # type: ignore[attr-defined]  # kept alive
    path = tmp_path / "custom.json.gz"
    hw = rl.Hardware(name="roomy", memory_bandwidth=1e12, memory_capacity=16e9,
                     matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")
    rl.Profiler(hw=hw, trace_to=str(path))(
        lambda t: torch.ops.demo_ci.scale(t, 2.0) + 1, torch.randn(1024, 1024))
    return path


def test_a_registered_formula_prices_a_custom_op_in_the_cli_and_not_its_inner_ops(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _custom_op_trace(tmp_path)
    formulas = tmp_path / "formulas.py"
    formulas.write_text(_FORMULAS)
    try:
        assert main(["profile", str(trace), "--hw", "h100", "--json",
                     "--formulas", str(formulas)]) == 0
        rows = json.loads(capsys.readouterr().out)["rows"]
    finally:
        rl.unregister_op("demo_ci::scale")
    [custom] = [r for r in rows if r["op"] == "demo_ci::scale"]
    # 2**20 elements, one FLOP each; 4 B read and 4 B written each (a call of the five
    # the Profiler recorded)
    assert custom["count"] == 5
    assert custom["flops"] / 5 == 2**20 and custom["bytes"] / 5 == 8 * 2**20
    assert custom["formula"] == "register_op"
    assert not [r for r in rows if r["op"] == "aten::mul"]  # priced once, by its owner
    # without the formula the op is named unpriced and its inner mul priced
    assert main(["profile", str(trace), "--hw", "h100", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert [u["reason"] for u in again["unpriced"] if u["name"] == "demo_ci::scale"] == [
        "not an aten op"]
    assert [r for r in again["rows"] if r["op"] == "aten::mul"]


def test_a_registered_formula_prices_a_custom_op_in_profile(tmp_path: Path) -> None:
    import torch

    _custom_op_trace(tmp_path)  # defines the op
    hw = rl.Hardware(name="roomy", memory_bandwidth=1e12, memory_capacity=16e9,
                     matrix={"fp32": 1e13}, default_dtype="fp32", vector_fallback="matrix")
    rl.register_op("demo_ci::scale",
                   lambda x, s: rl.ops.elementwise(x, inputs=1, outputs=1,
                                                   flops_per_element=1))
    try:
        profile = rl.Profiler(hw=hw)(lambda t: torch.ops.demo_ci.scale(t, 2.0) + 1,
                                     torch.randn(1024, 1024))
    finally:
        rl.unregister_op("demo_ci::scale")
    ops = {r.op: r for r in profile.rows}
    assert "demo_ci::scale" in ops and "aten::mul" not in ops
    assert ops["demo_ci::scale"].formula == "register_op" and not profile.unpriced


# -- profile baselines in the plugin ---------------------------------------------------------


_SUITE = """
import pytest, torch

@pytest.mark.roofline(hw="roomy.yaml")
def test_gemm(roofline):
    a, b = torch.randn(256, 512), torch.randn(512, 1024)
    roofline.profile(torch.mm, a, b)
"""
_ROOMY = """\
name: roomy
default_dtype: fp32
vector_fallback: matrix
sources: {made-up: "roofs no CPU reaches, for tests"}
memory: {capacity: 16 GB, bandwidth: 1 TB/s, source: made-up}
matrix: {fp32: 10 TFLOP/s, source: made-up}
"""


def _faster(report: dict[str, Any], factor: float = 10.0) -> dict[str, Any]:
    """*report* as if every profiled kernel had run *factor* times as fast: its time over
    *factor*, its efficiency times it (a baseline the new run is *factor* times slower
    than: wide enough that run-to-run noise on a loaded machine cannot close it)."""
    for record in report["results"]:
        for profile in record.get("profile") or []:
            for row in profile["rows"]:
                row["measured_s"] /= factor
                if isinstance(row.get("efficiency"), float):
                    row["efficiency"] = min(1.0, row["efficiency"] * factor)
    return report


def test_a_profiled_kernel_slowed_down_fails_the_efficiency_rule_naming_it(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", roomy=_ROOMY)
    pytester.makepyfile(test_suite=_SUITE)
    first = pytester.runpytest_inprocess("-p", "no:randomly", "--roofline-json=base.json")
    first.assert_outcomes(passed=1)
    report = json.loads((pytester.path / "base.json").read_text())
    [record] = report["results"]
    [row] = [r for r in record["profile"][0]["rows"] if r["op"] == "aten::mm"]
    assert row["efficiency"] is not None
    (pytester.path / "fast.json").write_text(json.dumps(_faster(json.loads(json.dumps(
        report)))))
    second = pytester.runpytest_inprocess("-p", "no:randomly", "--roofline-compare=fast.json",
                                          "--roofline-compare-fail=efficiency:10%")
    text = " ".join(second.stdout.str().split())  # the lines as wrapped, read whole
    second.assert_outcomes(failed=1)
    assert ("roofline: regression against baseline 'fast.json': roomy (fp32): kernel "
            "mm(256x512f32,512x1024f32) on roomy: measured efficiency fell") in text
    # a report against itself: every kernel unchanged, the rule passes
    (pytester.path / "same.json").write_text(json.dumps(report))
    assert main(["compare", str(pytester.path / "same.json"),
                 str(pytester.path / "same.json"), "--fail", "efficiency:10%"]) == 0


def test_an_output_that_cannot_be_written_is_said_before_the_trace_is_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing_trace = str(tmp_path / "not-read.json")  # never opened: the outputs come first
    for option, target, why in (("--csv", tmp_path / "no" / "rows.csv", "does not exist"),
                                ("--csv", tmp_path, "it is a folder"),
                                ("--markdown", tmp_path / "f.txt" / "d.md", "is a file")):
        (tmp_path / "f.txt").write_text("")
        baseline = ["--baseline", missing_trace] if option == "--markdown" else []
        assert main(["profile", missing_trace, option, str(target), *baseline]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"pytest-roofline: error: {option} ") and why in err, err
        assert "\n" not in err and len(err) < 200


def test_a_file_size_limit_is_one_line_naming_the_option_and_the_limit(tmp_path: Path) -> None:
    import resource
    import subprocess
    import sys

    def limit() -> None:  # 1 KiB: the CSV of the MI250 trace's rows is larger
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, resource.getrlimit(
            resource.RLIMIT_FSIZE)[1]))

    out = tmp_path / "rows.csv"
    run = subprocess.run([sys.executable, "-m", "pytest_roofline", "profile",
                          str(DATA / "hta_mi250_minitoy_train.json.gz"), "--csv", str(out)],
                         capture_output=True, text=True, preexec_fn=limit, check=False)
    assert run.returncode == 2, run.stderr
    err = run.stderr.strip()  # the path shortened where long (errors.brief, 80 characters)
    assert err.startswith("pytest-roofline: error: --csv '") and "\n" not in err, err
    assert err.endswith(": cannot write (past this process's file-size limit (1024 bytes; "
                        "ulimit -f))"), err
    assert not out.exists()  # atomic: no half-written file


BERT_H100 = DATA / "tracelens_h100_bert_small.json.gz"
BERT_MI300X = DATA / "tracelens_mi300x_bert_small.json.gz"


def test_two_public_runs_of_one_model_through_the_cli(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``pytest-roofline profile NEW --baseline OLD`` of TraceLens's BERT-small on an MI300X
    against its H100 run: the 16 kernels (op and shapes) of one run all found in the other,
    none new or gone; the Markdown table renders one row each; without a gate it passes,
    with one it fails naming the attention kernel ROCm runs 3x slower."""
    markdown = tmp_path / "diff.md"
    assert main(["profile", str(BERT_MI300X), "--baseline", str(BERT_H100),
                 "--markdown", str(markdown)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "16 kernels in both, 0 new, 0 gone" in out
    text = markdown.read_text()
    assert text.startswith(f"### Kernels: {BERT_MI300X.name} against {BERT_H100.name}")
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == 16
    assert any(row.startswith("| `addmm(30522bf16,141x512bf16,512x30522bf16)`")
               for row in rows)
    assert main(["profile", str(BERT_MI300X), "--baseline", str(BERT_H100),
                 "--fail-regression", "10%"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert ("REGRESSED: _flash_attention_forward(1x141x8x64bf16,1x141x8x64bf16,"
            "1x141x8x64bf16): 9.35 us -> 28.4 us a call (+203.8%)") in out


def _slowed_op(source: Path, target: Path, op: str, dims: list[list[int]],
               factor: float) -> float:
    """*source* with the kernels launched by the CPU op *op* of input *dims* taking *factor*
    times as long (its launches found inside its span on its thread, their kernels by
    correlation id), written to *target*; the kernels' time before, in us."""
    data = json.loads(gzip.decompress(source.read_bytes()))
    events = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    spans = [(e["pid"], e["tid"], e["ts"], e["ts"] + e["dur"]) for e in events
             if e.get("cat") == "cpu_op" and e.get("name") == op
             and e.get("args", {}).get("Input Dims") == dims]
    assert spans, f"no {op} of {dims} in {source.name}"
    launched = {e["args"]["correlation"] for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver")
                and "correlation" in e.get("args", {})
                and any(e["pid"] == p and e["tid"] == t and s <= e["ts"] <= end
                        for p, t, s, end in spans)}
    changed = 0.0
    for event in events:
        if event.get("cat") == "kernel" and event.get("args", {}).get("correlation") in launched:
            changed += event["dur"]
            event["dur"] = event["dur"] * factor
    with gzip.open(target, "wt") as handle:
        json.dump(data, handle)
    return changed


def test_a_public_trace_against_a_copy_with_one_kernel_slowed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """TraceLens's MI300X BERT-small against a copy whose vocabulary GEMM (addmm of
    141x512 by 512x30522, one call) takes 2x as long: that kernel named as regressed (its
    call +100%, its % of roof halved), the 15 others unchanged, the gate fails; the copy
    against itself passes."""
    slow = tmp_path / "bert_slowed.json.gz"
    before = _slowed_op(BERT_MI300X, slow, "aten::addmm",
                        [[30522], [141, 512], [512, 30522], [], []], 2.0)
    assert round(before, 1) == 25.5  # the GEMM's kernel time in the file, us: 25.5 -> 51.1
    markdown = tmp_path / "diff.md"
    code = main(["profile", str(slow), "--baseline", str(BERT_MI300X), "--fail-regression",
                 "10%", "--markdown", str(markdown)])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 1
    gemm = "addmm(30522bf16,141x512bf16,512x30522bf16)"
    assert f"REGRESSED: {gemm}: 25.5 us -> 51.1 us a call (+100.0%), % roof 30% -> 15%" in out
    assert out.count("REGRESSED:") == 1
    assert "15 kernels took the same time a call" in out
    assert f"FAIL: regressed against {BERT_MI300X}: {gemm}" in out
    assert f"| `{gemm}` | 25.5 us | 51.1 us | +100.0% | 30% | 15% | regressed |" in (
        markdown.read_text())
    assert main(["profile", str(slow), "--baseline", str(slow), "--fail-regression",
                 "10%"]) == 0
