"""80 columns: every line the plugin and the command line print fits a terminal of
``COLUMNS=80``, or wraps cleanly; ``--wide`` keeps a row or a sentence a line.

What may pass 80 columns, and why (each named where it is allowed below):

- a line that is one word, a path or a URL longer than a line by itself: it keeps a line of
  its own, whole, to be copied;
- pytest's own lines: its session header (``platform``, ``rootdir:``, ...), a short-summary
  line ``FAILED <test id>`` whose id alone leaves no room for the message (pytest cuts the
  message to the width, never the id), pytest-xdist's ``[gw0] linux -- Python ...``;
- an error of the command line: one line on stderr (``pytest-roofline: error: ...``), the
  CLI's promise for scripts that read it; and pytest's ``ERROR: ...`` line for a bad
  ``--roofline-*`` option (pytest prints a usage error as one line);
- machine-read formats printed as they are: JSON (``--json``), CSV (``compare --csv -``),
  Markdown source (``markdown``), whose lines cannot wrap without changing what they say.

A failure's message is wrapped on the terminal only: as data (``str()`` of the report's
``longrepr``, JUnit's failure message, the JSON report, pytest's ``-rf`` line, what a
pytest-xdist worker sends) each failure stays one line.
"""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from wrapped import ours_too_wide, too_wide, unwrap

from pytest_roofline.cli import main
from pytest_roofline.hardware import list_hardware

DATA = Path(__file__).parent / "data" / "traces"


# -- the command line ---------------------------------------------------------------------------

CLI_COMMANDS = [
    "hw list",
    "analyze matmul --m 32 --k 8192 --n 8192 --hw h100,tpu-v5e",
    "analyze model llama-3-8b --phase decode --batch 8 --context 4096 --hw h100",
    "analyze model mixtral-8x7b --phase decode --batch 64 --context 4096 --hw h100",
    "analyze model resnet-50 --batch 32 --dtype int8 --fusion none --hw l4",
    "analyze model llama-3-8b --phase train_step --batch 8 --seq 4096 --dp 8 --zero 3 "
    "--hw h100",
    "analyze model llama-3-405b --phase prefill --batch 4 --seq 8192 --hw h100,b200,tpu-v6e",
    "analyze model deepseek-v3 --phase decode --batch 64 --context 4096 --hw h200",
    "analyze conv2d --batch 32 --in-channels 64 --out-channels 64 --size 56 --kernel 3 "
    "--hw l4,a100 --dtype fp16",
    "sweep model llama-3-8b --phase decode --param batch --range 1:1024 --context 4096 "
    "--hw h100",
    "sweep matmul --param m --range 1:8192 --k 4096 --n 4096 --hw h100,mi300x,tpu-v5e",
    "plan llama-3-70b --hw h100 --chips 8 --ttft 500ms --tpot 50ms",
    "plan mixtral-8x7b --hw h100 --chips 16",
    "plan deepseek-v3 --hw h200 --chips 16",
    "plan llama-3-70b --hw l4 --chips 1",
    "plan llama-3-70b --hw l4 --chips 1 --ttft 1ms",
    "plan llama-3-8b --hw h100 --chips 8 --train --batch 64 --seq 4096",
    "plan llama-3-8b --hw h100 --chips 8 --memory-fraction 0.5 --top 3",
]
SUBCOMMANDS = ["hw", "analyze", "sweep", "compare", "plot", "markdown", "merge", "baselines",
               "calibrate", "plan", "profile"]


def _helps() -> list[str]:
    """Every subcommand's help, every op's (analyze and sweep) and every phase's."""
    from pytest_roofline.cli.analyze import _op_names

    helps = ["--help", "hw list --help", "hw show --help"]
    helps += [f"{command} --help" for command in SUBCOMMANDS]
    for op in _op_names():
        helps += [f"analyze {op} --help", f"sweep {op} --help"]
    helps += [f"analyze model llama-3-8b --phase {phase} --help"
              for phase in ("prefill", "decode", "forward", "train_step")]
    return [*helps, "analyze model resnet-50 --help"]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """The exit status, the output and the errors of the command line *argv*."""
    try:
        code = main(argv)
    except SystemExit as exc:  # --help, a usage error
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_every_cli_command_fits_80_columns(capsys) -> None:
    commands = [*CLI_COMMANDS, *_helps(), *(f"hw show {chip}" for chip in list_hardware())]
    for command in commands:
        _, out, err = _run(command.split(), capsys)
        assert out.strip(), command
        assert not too_wide(out), (command, too_wide(out))
        assert not too_wide(err), (command, too_wide(err))
    # a help's usage shows a yes/no option by its first two spellings (the list is the help's)
    _, out, _ = _run(["analyze", "batched_matmul", "--help"], capsys)
    usage = out.split("\n\n")[0]
    assert "--shared-weights | --no-shared-weights" in " ".join(usage.split())
    assert "--shared_weights" not in usage and "--no-shared_weights" in out


def test_the_cli_profile_and_calibrate_fit_80_columns(capsys, host_cache, monkeypatch,
                                                      tmp_path) -> None:
    pytest.importorskip("torch")  # pricing a trace uses the tracer's op tables
    for argv in (["profile", str(DATA / "v100_hta_trace_diff_test.json.gz")],
                 ["profile", str(DATA / "a100_hta_negative_queue_rank0.json.gz"),
                  "--min-kernel-efficiency", "0.9"],
                 ["profile", str(DATA / "cpu_transformer_block.json.gz"), "--hw", "host"],
                 ["hw", "show", "host"]):
        _, out, err = _run(argv, capsys)
        assert out.strip() and not too_wide(out + err), (argv, too_wide(out + err))
    from pytest_roofline.measuring import calibration
    from pytest_roofline.specfiles import load_yaml

    spec = load_yaml(calibration.cache_path("cpu"))
    warning = ("the samples did not settle in 2 rounds: the best sample of fp64 was never "
               "matched within 5% by another taken in like conditions")
    monkeypatch.setattr(calibration, "calibrate", lambda device, **_: (spec, [warning]))
    deep = tmp_path.joinpath(*["a-folder-with-a-long-name"] * 4, "host.yaml")
    deep.parent.mkdir(parents=True)
    code, out, err = _run(["calibrate", "-o", str(deep)], capsys)
    assert code == 0 and "memory roof" in out and str(deep) in out.split()
    assert not too_wide(out + err), too_wide(out + err)


def test_a_cli_error_is_its_one_line_whatever_its_length(capsys, tmp_path) -> None:
    # the one line a script reads: not wrapped, however long the paths it names
    deep = tmp_path.joinpath(*["a-folder-with-a-long-name"] * 4)
    deep.mkdir(parents=True)
    for argv in (["analyze", "model"], ["merge", str(deep / "a.json"), str(deep / "b.json")],
                 ["hw", "show", "no-such-chip-" + "x" * 80]):
        code, out, err = _run(argv, capsys)
        assert code == 2 and not out and err.count("\n") == 1, (argv, err)
        assert err.startswith("pytest-roofline: error: "), err


def test_wide_keeps_a_row_and_a_sentence_a_line(capsys) -> None:
    for argv in (["hw", "list"], ["analyze", "model", "llama-3-8b", "--phase", "decode",
                                  "--batch", "8", "--context", "4096", "--hw", "h100"]):
        _, narrow, _ = _run(argv, capsys)
        _, wide, _ = _run([*argv, "--wide"], capsys)
        assert not too_wide(narrow) and too_wide(wide), argv
        assert len(wide.splitlines()) < len(narrow.splitlines())


# -- the plugin ---------------------------------------------------------------------------------

WIDE_SUITE = """
import numpy as np
import pytest
from pytest_roofline import models, ops

DECODE = models.load("llama-3-8b").decode(batch=8, context=4096)

@pytest.mark.roofline(hw=["h100", "tpu-v5e"], regime="compute", workload=DECODE)
def test_a_decode_step_with_a_long_name_that_runs_past_the_columns_of_a_terminal():
    pass

@pytest.mark.roofline(hw="h100", regime="memory",
                      workload=ops.matmul(8 if NEW else 4096, 4096, 4096))
def test_changed():
    pass

@pytest.mark.roofline(hw="h100", regime="compute", workload=ops.matmul(32, 8192, 8192),
                      max_time="1 us")
def test_two_failures():
    pass

@pytest.mark.roofline(hw="no-such-chip", regime="compute", workload=ops.matmul(8, 8, 8))
def test_a_marker_error_naming_every_known_chip():
    pass

@pytest.mark.roofline(hw="host", regime="memory", workload=ops.elementwise(10**5, dtype="fp64"))
def test_measured(roofline):
    a, c = np.ones(10**5), np.empty(10**5)
    roofline.measure(np.add, a, a, out=c)
"""

BROKEN_MODULE = """
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", workload=ops.matmul(-1, 4096, 4096))
def test_built_at_import():
    pass
"""

def test_the_plugin_and_the_report_commands_fit_80_columns(pytester, monkeypatch, capsys,
                                                           host_cache) -> None:
    pytester.makepyfile(test_wide="NEW = __import__('os').environ.get('ROUND') == 'new'\n"
                        + WIDE_SUITE, test_broken=BROKEN_MODULE)
    deep = Path(*["a-folder-with-a-long-name"] * 4)  # paths longer than a line
    first = pytester.runpytest("-p", "no:cacheprovider", "--roofline-save=main",
                               f"--roofline-json={deep}/old.json",
                               "--continue-on-collection-errors")
    monkeypatch.setenv("ROUND", "new")
    result = pytester.runpytest("-p", "no:cacheprovider", "-rfE", "--roofline-compare=main",
                                "--roofline-plot=term", f"--roofline-json={deep}/new.json",
                                "--roofline-compare-fail=time:1%", f"--roofline-md={deep}/s.md",
                                "--continue-on-collection-errors", "--junitxml=junit.xml")
    (pytester.path / "blocker").write_text("a file, not a folder")
    missing = pytester.runpytest("-p", "no:cacheprovider", "--roofline-compare=none-saved",
                                 "test_wide.py", "-k", "changed",
                                 f"--roofline-json=blocker/{deep}/r.json")
    for run in (first, result, missing):
        assert not ours_too_wide(run.stdout.lines), ours_too_wide(run.stdout.lines)
    out = result.stdout.str()
    assert "kernel" in out and "Regressions" in out and "FLOP/B (DRAM)" in out
    # each kind of line that once ran past 80 columns is there, wrapped
    lines = unwrap(result.stdout.lines)
    for start in ("roofline: expected compute-bound on h100-sxm (bf16), but intensity 31.8 "
                  "FLOP/B < ridge 295.3 FLOP/B: memory-bound. Compute-bound from m >= 319.",
                  "roofline: regression against baseline 'main': h100-sxm (bf16): regime "
                  "changed from compute to memory;",
                  "roofline marker on test_a_marker_error_naming_every_known_chip: "
                  "hw='no-such-chip': unknown hardware 'no-such-chip'. Closest: ",
                  "  FAIL: expected a roofline time bound <= 1 us on h100-sxm (bf16), but it "
                  "is 40.4 us (memory-bound).",
                  "test_broken.py:4: matmul: m must be a whole number >= 1, got -1 (while "
                  "importing the module:",
                  "roofline: Markdown summary written to"):
        assert any(line.startswith(start) for line in lines), start
    assert any(line.startswith("JSON report (") for line in result.stdout.lines)
    assert any(line.endswith("new.json") and "/" in line and len(line.split()) == 1
               for line in result.stdout.lines)  # the path on a line of its own, whole
    notices = " ".join(unwrap(missing.stdout.lines))
    assert "roofline: no baseline to compare against: no baseline 'none-saved'" in notices
    assert "--roofline-json: cannot write /" in notices and "is a file, not a folder" in notices
    # the report commands, on the reports written above
    old, new = str(pytester.path / deep / "old.json"), str(pytester.path / deep / "new.json")
    capsys.readouterr()  # the runs above
    for argv in (["compare", old, new, "--fail", "time:1%"], ["plot", new],
                 ["plot", new, "--compare", old], ["baselines", "--storage",
                                                    str(pytester.path / ".roofline")],
                 ["merge", old, "-o", str(pytester.path / deep / "merged.json")]):
        code, out, err = _run(argv, capsys)
        assert code in (0, 1) and not too_wide(out + err), (argv, too_wide(out + err))


def test_pytest_markers_and_fixtures_show_ours_in_80_columns(pytester) -> None:
    markers = pytester.runpytest("-p", "no:cacheprovider", "--markers").stdout.str()
    ours = "@pytest.mark.roofline(" + markers.split("@pytest.mark.roofline(")[1].split(
        "\n\n")[0]
    assert len(ours.splitlines()) > 5 and not too_wide(ours), ours
    fixtures = pytester.runpytest("-p", "no:cacheprovider", "--fixtures", "-v").stdout.lines
    start = next(i for i, line in enumerate(fixtures) if line.startswith("roofline "))
    doc = fixtures[start + 1:fixtures.index("", start)]
    assert doc and not too_wide("\n".join(doc)), doc
    # pytest --help: the options' group and their ini twins (pytest wraps what we give it)
    lines = pytester.runpytest("-p", "no:cacheprovider", "--help").stdout.lines
    group = lines[lines.index("roofline analysis (pytest-roofline):"):]
    ini = lines[next(i for i, line in enumerate(lines) if line.startswith("  roofline_")):]
    ours = [*group[:group.index("")], *itertools.takewhile(
        lambda line: line.startswith(("  roofline_", " " * 24)), ini)]
    assert len(ours) > 40 and not too_wide("\n".join(ours)), too_wide("\n".join(ours))


FAILING = """
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", regime="compute", workload=ops.matmul(32, 8192, 8192),
                      max_time="1 us")
def test_small():
    pass
"""

VERDICT = ("roofline: expected compute-bound on h100-sxm (bf16), but intensity 31.8 FLOP/B < "
           "ridge 295.3 FLOP/B: memory-bound. Compute-bound from m >= 319.")
LIMIT = ("roofline: expected a roofline time bound <= 1 us on h100-sxm (bf16), but it is "
         "40.4 us (memory-bound).")


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["alone", "xdist"])
def test_a_failure_wraps_on_the_terminal_and_stays_whole_as_data(pytester, workers) -> None:
    # matmul(32, 8192, 8192) bf16 on H100 SXM: 2·32·8192·8192 = 4.29 GFLOP over
    # 2·(32·8192 + 8192·8192 + 32·8192) = 135 MB is 31.8 FLOP/B, under the ridge of
    # 989 TFLOP/s / 3.35 TB/s = 295.3 FLOP/B (the figures docs/plugin.md shows)
    pytester.makepyfile(test_wrap=FAILING)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", *workers, "-rf",
                                          "--junitxml=junit.xml", "--roofline-json=r.json")
    result.assert_outcomes(failed=1)
    # on the terminal: each failure's first line starts as its message, the rest 4 in
    result.stdout.fnmatch_lines([
        "roofline: expected compute-bound on h100-sxm (bf16), but intensity 31.8 FLOP/B <",
        "    ridge 295.3 FLOP/B: memory-bound. Compute-bound from m >= 319.",
        "roofline: expected a roofline time bound <= 1 us on h100-sxm (bf16), but it is",
        "    40.4 us (memory-bound).",
        "*Captured roofline call*",
        "  FAIL: expected compute-bound on h100-sxm (bf16), but intensity 31.8 FLOP/B <",
        "        ridge 295.3 FLOP/B: memory-bound. Compute-bound from m >= 319.",
        "FAILED test_wrap.py::test_small - roofline: expected compute-bound on*",
    ])
    assert not ours_too_wide(result.stdout.lines)
    # as data, each failure one line: the report, JUnit's message, the JSON report
    (report,) = [r for r in result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
                 if r.when == "call"]
    assert str(report.longrepr) == f"{VERDICT}\n{LIMIT}"
    failure = next(ET.parse(pytester.path / "junit.xml").iter("failure"))
    assert failure.get("message") == f"{VERDICT}\n{LIMIT}"
    record = __import__("json").loads((pytester.path / "r.json").read_text())["results"][0]
    assert record["message"] == " ".join(m.removeprefix("roofline: ") for m in (VERDICT, LIMIT))


def test_a_failure_message_wraps_at_the_terminal_writers_width() -> None:
    from pytest_roofline.plugin.message import Message

    message = Message(f"{VERDICT}\n  a detail line {'x' * 70}")
    assert message.lines(None) == [VERDICT, f"  a detail line {'x' * 70}"]
    assert message.lines(60) == [
        "roofline: expected compute-bound on h100-sxm (bf16), but",
        "    intensity 31.8 FLOP/B < ridge 295.3 FLOP/B:",
        "    memory-bound. Compute-bound from m >= 319.",
        "  a detail line",
        "      " + "x" * 70]  # a word longer than a line keeps its own, whole

    class Writer:
        fullwidth = 60

        def __init__(self) -> None:
            self.lines: list[str] = []

        def line(self, text: str) -> None:
            self.lines.append(text)

    writer = Writer()
    message.toterminal(writer)
    assert writer.lines == message.lines(60) and str(message) == message
