"""The command line, driven as a subprocess: ``python -m pytest_roofline ...``.

Figures checked here: matmul(m, 8192, 8192) in bf16 has intensity m*8192 / (8192 + 2m)
FLOP/B (see tests/test_compare.py); the h100-sxm ridge is 989.4 TFLOP/s / 3.35 TB/s =
295.3 FLOP/B, so m = 319 is the first compute-bound size; the a100-80gb-sxm ridge is
312 TFLOP/s / 2.039 TB/s = 153.0 FLOP/B, so m >= 159 (m*8192 / (8192 + 2m) >= 153.0).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline import analyze, ops
from pytest_roofline.report.records import make_record, make_report, write_report

REPO = Path(__file__).resolve().parents[1]


def cli(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
        ) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run([sys.executable, "-m", "pytest_roofline", *args], cwd=cwd or REPO,
                          env=environ, capture_output=True, text=True, timeout=120)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pytest-roofline: error: "), result.stderr
    return lines[0]


def write(path: Path, *ms: int, names: tuple[str, ...] = ("t.py::test_a", "t.py::test_b"),
          ) -> Path:
    records: list[dict[str, Any]] = []
    for name, m in zip(names, ms, strict=True):
        records.append(make_record(name, analyze(ops.matmul(m, 8192, 8192), "h100"),
                                   None, "report"))
    write_report(path, make_report(records))
    return path


# -- hw ---------------------------------------------------------------------------------------


def test_hw_list_and_show() -> None:
    listing = cli("hw", "list")
    assert listing.returncode == 0 and "h100-sxm" in listing.stdout and "tpu-v5e" in listing.stdout
    shown = cli("hw", "show", "h100")
    assert shown.returncode == 0
    bf16 = next(line for line in shown.stdout.splitlines() if line.startswith("bf16"))
    assert bf16.split()[1:] == ["989", "TFLOP/s", "1.98", "PFLOP/s", "134", "TFLOP/s", "295.3"]
    assert "whitepaper:" in shown.stdout
    data = json.loads(cli("hw", "show", "tpu-v5e", "--json").stdout)
    assert data["name"] == "tpu-v5e" and data["ridge_flop_per_byte"]["bf16"] > 0


def test_an_unknown_chip_is_one_line_with_a_suggestion() -> None:
    line = one_line_error(cli("hw", "show", "h1000"))
    assert "unknown hardware 'h1000'" in line and "Did you mean" in line


# -- analyze and sweep ------------------------------------------------------------------------


def test_analyze_an_op_on_several_chips() -> None:
    result = cli("analyze", "matmul", "--m", "32", "--k", "8192", "--n", "8192",
                 "--hw", "h100,tpu-v5e")
    assert result.returncode == 0, result.stderr
    assert "h100-sxm: memory-bound; compute-bound from m >= 319" in result.stdout
    assert "tpu-v5e" in result.stdout
    data = json.loads(cli("analyze", "matmul", "--m", "32", "--k", "8192", "--n", "8192",
                          "--hw", "h100", "--json").stdout)
    (only,) = data["results"]
    assert only["intensity"] == pytest.approx(32 * 8192 / (8192 + 64), rel=1e-12)
    assert (only["regime"], only["hint"]) == ("memory", "compute-bound from m >= 319")


def test_analyze_a_model_phase_with_a_breakdown() -> None:
    result = cli("analyze", "model", "llama-3-8b", "--phase", "decode", "--batch", "8",
                 "--context", "4096", "--hw", "h100", "--json")
    assert result.returncode == 0, result.stderr
    (only,) = json.loads(result.stdout)["results"]
    kernels = only["kernels"]
    assert len(kernels) > 3
    assert sum(k["share"] for k in kernels) == pytest.approx(1.0)
    human = cli("analyze", "model", "llama-3-8b", "--batch", "8", "--context", "4096",
                "--hw", "h100")
    assert "breakdown on h100-sxm (bf16):" in human.stdout and "share" in human.stdout


def test_analyze_a_model_with_per_sequence_lengths_and_eager_fusion() -> None:
    result = cli("analyze", "model", "llama-3-8b", "--phase", "prefill", "--batch", "3",
                 "--seq", "100,200,300", "--fusion", "none", "--hw", "h100")
    assert result.returncode == 0, result.stderr
    assert "prefill(batch=3, seqs=[100, 200, 300], bf16, fusion=none)" in result.stdout
    padded = cli("analyze", "model", "llama-3-8b", "--phase", "prefill", "--batch", "3",
                 "--seq", "100,200,300", "--padded", "--hw", "h100")
    assert "seqs=[300x3]" in padded.stdout
    bad = cli("analyze", "model", "llama-3-8b", "--phase", "decode", "--batch", "2",
              "--context", "100,0", "--hw", "h100")
    assert "decode: context[1] must be a whole number >= 1, got 0" in one_line_error(bad)


def test_analyze_help_lists_an_ops_options_from_its_signature() -> None:
    result = cli("analyze", "attention", "--help")
    assert result.returncode == 0
    assert "--kv-heads" in result.stdout and "--causal, --no-causal" in result.stdout


def test_analyze_input_errors_exit_2_without_traceback() -> None:
    assert "unknown op 'matmull'" in one_line_error(cli("analyze", "matmull", "--hw", "h100"))
    missing = cli("analyze", "matmul", "--k", "4", "--n", "4", "--hw", "h100")
    assert missing.returncode == 2 and "--m" in missing.stderr
    assert "Traceback" not in missing.stderr
    assert "matmul: m must be a whole number >= 1, got -3" in one_line_error(
        cli("analyze", "matmul", "--m", "-3", "--k", "4", "--n", "4", "--hw", "h100"))


def test_sweep_reports_where_the_regime_changes() -> None:
    result = cli("sweep", "matmul", "--param", "m", "--range", "1:4096", "--k", "8192",
                 "--n", "8192", "--hw", "h100,a100", "--json")
    assert result.returncode == 0, result.stderr
    h100, a100 = json.loads(result.stdout)["results"]
    assert h100["changes"] == [{"at": 319, "from": "memory", "to": "compute"}]
    assert a100["changes"] == [{"at": 159, "from": "memory", "to": "compute"}]
    assert h100["segments"][0] == {"from": 1, "to": 318, "regime": "memory"}
    text = cli("sweep", "matmul", "--param", "m", "--range", "1:4096", "--k", "8192", "--n",
               "8192", "--hw", "h100").stdout
    assert "regime changes at m = 319 (memory -> compute)" in text
    assert "--range '9:1'" in one_line_error(cli("sweep", "matmul", "--param", "m", "--range",
                                                 "9:1", "--k", "8", "--n", "8", "--hw", "h100"))


def test_the_swept_parameter_is_not_required_and_its_help_says_so() -> None:
    swept = cli("sweep", "matmul", "--param", "m", "--range", "1:64", "--help").stdout
    assert "[--m VALUE]" in swept and "swept by --range" in swept
    plain = cli("sweep", "matmul", "--help").stdout
    assert "[--m VALUE]" not in plain and "swept by --range" not in plain


def test_sweep_says_where_the_footprint_stops_fitting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the sentence on one line
    # llama-3-8b decode with a 4096-token context: 16 GB of bf16 weights plus a KV cache of
    # 2 (K, V) x 32 layers x 8 KV heads x 128 x 2 B = 128 KiB per token, 512 MiB per
    # sequence; 80 GB holds the weights and 119 sequences, not 120 (the JSON gives the
    # figure the CLI computed; the bracket is checked against the footprint itself).
    from pytest_roofline import models

    args = ("sweep", "model", "llama-3-8b", "--phase", "decode", "--param", "batch",
            "--range", "1:1024", "--context", "4096", "--hw", "h100")
    (result,) = json.loads(cli(*args, "--json").stdout)["results"]
    limit = result["fits_up_to"]
    model = models.load("llama-3-8b")
    assert model.decode(batch=limit, context=4096).footprint <= 80e9
    assert model.decode(batch=limit + 1, context=4096).footprint > 80e9
    assert 100 < limit < 130
    text = cli(*args).stdout
    assert (f"the footprint fits in 80 GB up to batch = {limit}; from batch = {limit + 1} it "
            f"does not fit") in text


@pytest.mark.parametrize(("args", "says"), [
    (("sweep", "matmul", "--param", "m", "--range", "-5:10", "--k", "8", "--n", "8", "--hw",
      "h100"), "--range '-5:10': LOW is -5; a size cannot be negative"),
    (("sweep", "matmul", "--param", "m", "--range=-5:10", "--k", "8", "--n", "8", "--hw",
      "h100"), "--range '-5:10': LOW is -5; a size cannot be negative"),
    (("sweep", "matmul", "--param", "m", "--range", "9:1", "--k", "8", "--n", "8", "--hw",
      "h100"), "--range '9:1': LOW 9 is above HIGH 1"),
    (("sweep", "matmul", "--param", "dtype", "--range", "1:9", "--m", "8", "--k", "8", "--n",
      "8", "--hw", "h100"), "--param 'dtype': is not a size of matmul: a sweep steps through "
                            "whole numbers. Sizes to sweep: m, k, n"),
    (("sweep", "matmul", "--param", "m", "--range", "1:9", "--m", "5", "--k", "8", "--n", "8",
      "--hw", "h100"), "--m 5 and --param m: the swept parameter takes its values from "
                       "--range; drop --m"),
    (("analyze", "matmul", "--m", "5", "--hw", "h100"),
     "the following arguments are required: --k, --n"),
    (("analyze", "matmul", "--m", "5", "--k", "8", "--n", "8", "--hw", "h100", "--derate",
      "170%"), "--derate: '170%' is not allowed; expected a fraction of peak in (0, 1]"),
    (("hw", "show", "BAD_YAML"), "not valid YAML at line 2, column 1: did not find expected "
                                 "',' or ']'"),
])
def test_every_cli_error_is_one_line(tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [x\n")
    line = one_line_error(cli(*(str(bad) if a == "BAD_YAML" else a for a in args)))
    assert says in line


def test_cli_help_version_and_derate_as_a_percentage() -> None:
    from pytest_roofline import __version__

    version = cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"pytest-roofline {__version__}"
    shown = cli("analyze", "matmul", "--help").stdout
    for flag in ("--m", "--k", "--n"):
        assert f"  {flag} VALUE             required" in shown
    assert "--kv-heads VALUE, --kv_heads VALUE\n                        optional" in cli(
        "analyze", "attention", "--help").stdout
    half = json.loads(cli("analyze", "matmul", "--m", "32", "--k", "8192", "--n", "8192",
                          "--hw", "h100", "--derate", "50%", "--json").stdout)
    full = json.loads(cli("analyze", "matmul", "--m", "32", "--k", "8192", "--n", "8192",
                          "--hw", "h100", "--json").stdout)
    assert half["results"][0]["time_s"] == pytest.approx(2 * full["results"][0]["time_s"])


# -- compare, plot, markdown, baselines -------------------------------------------------------


def test_compare_exit_codes_follow_regressions(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", 4096, 4096)
    same = write(tmp_path / "same.json", 4096, 4096)
    moved = write(tmp_path / "new.json", 4096, 32)  # test_b slides under the ridge
    ok = cli("compare", str(base), str(same))
    assert ok.returncode == 0 and "no regression in 2 results compared" in ok.stdout
    bad = cli("compare", str(base), str(moved), "--fail", "intensity:10%")
    assert bad.returncode == 1
    assert ("t.py::test_b: h100-sxm (bf16): regime changed from compute to memory"
            in bad.stdout)
    assert "rule intensity:10%" in bad.stdout
    data = json.loads(cli("compare", str(base), str(moved), "--json").stdout)
    assert data["failed"] and [r["rule"] for r in data["regressions"]] == ["regime"]


def test_compare_lists_every_result_old_against_new_and_writes_csv(tmp_path: Path) -> None:
    # test_b moves from m = 4096 (2048.0 FLOP/B, compute) to m = 32 (31.8 FLOP/B, memory):
    # intensity 31.75 / 2048 - 1 = -98.4%; test_a is unchanged.
    import csv

    base = write(tmp_path / "base.json", 4096, 4096)
    new = write(tmp_path / "new.json", 4096, 32)
    result = cli("compare", str(base), str(new), env={"COLUMNS": "200"})
    lines = result.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("test "))
    assert lines[header].split()[:4] == ["test", "chip", "regime", "FLOP/B"]
    assert lines[header + 1].split()[0] == "t.py::test_b" and "REGRESSED" in lines[header + 1]
    assert "compute -> memory" in lines[header + 1] and "-98.4%" in lines[header + 1]
    assert lines[header + 2].split()[0] == "t.py::test_a"
    assert lines[header + 2].endswith("same") and "+0.0%" in lines[header + 2]
    narrow = cli("compare", str(base), str(new), env={"COLUMNS": "80"}).stdout.splitlines()
    table = narrow[narrow.index("") + 1:]
    assert all(len(line) <= 80 for line in table[:3]), table
    out = tmp_path / "cmp.csv"
    assert cli("compare", str(base), str(new), "--csv", str(out)).returncode == 1
    rows = list(csv.DictReader(out.read_text().splitlines()))
    assert [r["nodeid"] for r in rows] == ["t.py::test_b", "t.py::test_a"]
    assert rows[0]["status"] == "REGRESSED" and rows[0]["regime_new"] == "memory"
    assert float(rows[0]["intensity_old"]) == pytest.approx(2048.0)
    assert float(rows[0]["intensity_change"]) == pytest.approx(32 * 8192 / (8192 + 64) / 2048
                                                               - 1)
    printed = cli("compare", str(base), str(new), "--csv", "-")
    assert printed.stdout.startswith("nodeid,hw,dtype,status,")
    assert printed.stdout == out.read_text()


def test_a_narrow_compare_table_gives_ids_a_line_rather_than_cutting_them(tmp_path: Path,
                                                                         ) -> None:
    """docs/ci-gating.md: at 80 columns the compare leaves out figures no rule judges, then
    gives each test id a line of its own; ids differing in their middle stay apart, and no
    change column is left without its figure."""
    names = ("tests/kernels/test_gemm_bf16.py::test_gemm_bf16[128]",
             "tests/kernels/test_gemm_bf16.py::test_gemv_bf16[128]")
    base = write(tmp_path / "base.json", 4096, 4096, names=names)
    new = write(tmp_path / "new.json", 4096, 4096, names=names)
    narrow = cli("compare", str(base), str(new), env={"COLUMNS": "80"}).stdout.splitlines()
    table = narrow[narrow.index("") + 1:]
    table = table[:table.index("")] if "" in table else table
    assert all(len(line) <= 80 for line in table), table
    assert names[0] in table and names[1] in table
    header = table[1].split()
    assert header.count("+/-") == 1 and header[-5:] == ["old", "->", "new", "+/-", "status"]


def test_compare_takes_baseline_names_from_the_storage_folder(tmp_path: Path) -> None:
    write(tmp_path / ".roofline" / "main.json", 4096, 4096)
    write(tmp_path / "new.json", 4096, 4096)
    assert cli("compare", "main", "new.json", cwd=tmp_path).returncode == 0
    line = one_line_error(cli("compare", "feature", "new.json", cwd=tmp_path))
    assert "no baseline 'feature'" in line and "saved baselines there: main" in line
    listing = cli("baselines", cwd=tmp_path)
    assert listing.returncode == 0 and listing.stdout.splitlines()[1].startswith("main ")


def test_compare_input_errors_exit_2_naming_the_problem(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", 4096, 4096)
    corrupt = tmp_path / "corrupt.json"
    corrupt.write_text('{"format": "pytest-roofline", "results": [')
    assert str(corrupt) in one_line_error(cli("compare", str(base), str(corrupt)))
    assert "bad compare rule 'speed:5%'" in one_line_error(
        cli("compare", str(base), str(base), "--fail", "speed:5%"))


def test_compare_writes_markdown_and_the_github_summary(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", 4096, 4096)
    new = write(tmp_path / "new.json", 4096, 32)
    summary = tmp_path / "summary.md"
    result = cli("compare", str(base), str(new), "--md", str(tmp_path / "out.md"),
                 "--github-summary", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 1
    for path in (tmp_path / "out.md", summary):
        text = path.read_text()
        assert text.startswith("## Roofline report") and "### Regressions" in text
    printed = cli("markdown", str(new), "--compare", str(base))
    assert printed.returncode == 0 and "**1 regression** against" in printed.stdout


def test_plot_writes_an_image_or_draws_in_characters(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    report = write(tmp_path / "r.json", 4096, 32)
    result = cli("plot", str(report), "-o", str(tmp_path / "chart.png"))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "chart.png").read_bytes().startswith(b"\x89PNG")
    term = cli("plot", str(report))
    assert term.returncode == 0 and term.stdout.startswith("roofline: h100-sxm")
    assert "must end in .png" in one_line_error(cli("plot", str(report), "-o", "x.gif"))


def test_usage_without_a_command_and_the_script_entry_point() -> None:
    from importlib.metadata import entry_points

    assert cli().returncode == 2
    assert cli("--help").returncode == 0
    scripts = {ep.name: ep.value for ep in entry_points(group="console_scripts")}
    assert scripts.get("pytest-roofline", "pytest_roofline.cli:main") == \
        "pytest_roofline.cli:main"


def test_analyze_a_model_from_its_config_json() -> None:
    # the path of a Hugging Face config.json works wherever a model name does
    config = REPO / "tests" / "data" / "hf" / "deepseek-v3.json"
    result = cli("analyze", "model", str(config), "--phase", "decode", "--batch", "64",
                 "--context", "4096", "--tp", "8", "--hw", "h200", "--json")
    assert result.returncode == 0, result.stderr
    (only,) = json.loads(result.stdout)["results"]
    assert only["workload"].startswith("deepseek-v3 decode(batch=64, context=4096, bf16, "
                                       "fp8 weights, tp=8)")
    names = {k["name"] for k in only["kernels"]}
    assert {"q_absorb", "v_up", "experts.gate_up_proj", "shared.gate_up_proj"} <= names
    naive = cli("analyze", "model", str(config), "--phase", "decode", "--batch", "64",
                "--context", "4096", "--tp", "8", "--hw", "h200", "--no-absorb", "--json")
    assert naive.returncode == 0, naive.stderr
    assert "kv_b_proj" in {k["name"] for k in json.loads(naive.stdout)["results"][0]["kernels"]}
    bad = cli("analyze", "model", str(REPO / "tests" / "data" / "hf" / "missing.json"),
              "--hw", "h200")
    assert "missing.json" in one_line_error(bad)


def test_hw_repeated_analyzes_every_chip_given() -> None:
    """--hw h100 --hw a100 analyzed a100 only; now both, each once, in the order given."""
    result = cli("analyze", "matmul", "--m", "32", "--k", "8192", "--n", "8192",
                 "--hw", "h100", "--hw", "a100,h100", "--json")
    assert result.returncode == 0, result.stderr
    assert [r["hw"] for r in json.loads(result.stdout)["results"]] == ["h100-sxm",
                                                                        "a100-80gb-sxm"]


def test_model_help_lists_the_options_of_every_phase() -> None:
    """`analyze model NAME --help` showed decode's options only: prefill's --seq was missing."""
    result = cli("analyze", "model", "llama-3-8b", "--help")
    assert result.returncode == 0, result.stderr
    assert "--context" in result.stdout
    prefill = result.stdout.split("options of --phase prefill", 1)[1]
    assert "--seq VALUE           required with --phase prefill" in prefill.split(
        "options of --phase", 1)[0]
    only = cli("analyze", "model", "llama-3-8b", "--phase", "prefill", "--help").stdout
    assert "--seq" in only and "options of --phase" not in only


def test_a_bare_time_rule_asks_for_a_unit(tmp_path: Path) -> None:
    base = write(tmp_path / "base.json", 4096, 4096)
    line = one_line_error(cli("compare", str(base), str(base), "--fail", "time:5"))
    assert "bad compare rule 'time:5': a time bound limit needs a unit or a percentage: " \
           "'time:5%'" in line and "'time:5ms'" in line


# -- merge: CI shards --------------------------------------------------------------------------


def test_merge_joins_shards_and_the_report_commands_take_several(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", 4096, names=("t.py::test_a",))
    b = write(tmp_path / "b.json", 32, names=("t.py::test_b",))
    out = tmp_path / "all.json"
    result = cli("merge", str(a), str(b), "-o", str(out))
    assert result.returncode == 0, result.stderr
    merged = json.loads(out.read_text())
    assert [r["nodeid"] for r in merged["results"]] == ["t.py::test_a", "t.py::test_b"]
    assert [s["report"] for s in merged["merged_from"]] == [str(a), str(b)]
    # the merged report is a report like any other: a baseline for compare
    base = write(tmp_path / "base.json", 4096, 4096)
    shards = cli("compare", str(base), str(a), str(b), "--json")
    assert shards.returncode == 1  # test_b: compute -> memory
    assert json.loads(shards.stdout) == json.loads(
        cli("compare", str(base), str(out), "--json").stdout)
    markdown = cli("markdown", str(a), str(b))
    assert markdown.returncode == 0 and "test_a" in markdown.stdout and "test_b" in markdown.stdout
    chart = cli("plot", str(a), str(b))
    assert chart.returncode == 0 and "test_a" in chart.stdout and "test_b" in chart.stdout


def test_merge_refuses_a_test_in_two_shards_and_other_settings(tmp_path: Path) -> None:
    a = write(tmp_path / "a.json", 4096, names=("t.py::test_a",))
    again = write(tmp_path / "again.json", 32, names=("t.py::test_a",))
    line = one_line_error(cli("merge", str(a), str(again), "-o", str(tmp_path / "x.json")))
    assert f"cannot merge {again} with {a}: both hold t.py::test_a on h100-sxm" in line
    other = json.loads(write(tmp_path / "b.json", 32, names=("t.py::test_b",)).read_text())
    other["settings"] = {"flops_per_mac": 1}
    (tmp_path / "mac1.json").write_text(json.dumps(other))
    line = one_line_error(cli("merge", str(a), str(tmp_path / "mac1.json")))
    assert "different settings (flops_per_mac 1 against None)" in line
    moved = json.loads(write(tmp_path / "c.json", 32, names=("t.py::test_c",)).read_text())
    moved["results"][0]["ridge"] = 250.0   # another spec file for h100-sxm
    (tmp_path / "moved.json").write_text(json.dumps(moved))
    line = one_line_error(cli("merge", str(a), str(tmp_path / "moved.json")))
    assert "chip h100-sxm differs between them (ridge 250.0 against 295" in line
    assert not (tmp_path / "x.json").exists()
