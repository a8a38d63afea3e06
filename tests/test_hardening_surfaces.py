"""The newer surfaces under bad or odd input: plan and plan_training, training steps,
registered formulas and their hook, text outputs of any test id, interrupted writes, the
calibration cache, messages that quote what was given. Each crash is a one-line error
naming the argument, the value and what is allowed; each silent answer an error. The
fuzzing is deterministic (hypothesis, derandomized)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from wrapped import unwrap

import pytest_roofline as rl
from pytest_roofline import RooflineError, WorkloadError, models, ops, units
from pytest_roofline.atomic import encodable, remove_leftovers, write_text
from pytest_roofline.cli import main
from pytest_roofline.planning import MAX_BATCH, MAX_CHIPS, MAX_MICROBATCHES, plan, plan_training

ROOT = Path(__file__).resolve().parent.parent
FUZZ = settings(derandomize=True, max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


def one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    text = str(exc.value)
    assert "\n" not in text and len(text) < 400, text
    return text


# -- plan: sizes, bounds, options ---------------------------------------------------------------


@pytest.mark.parametrize("chips", [np.int64(4), 4.0, np.float32(4.0), np.array(4)])
def test_plan_sizes_follow_the_one_rule(chips: object) -> None:
    # the rule of every size (ops._common.size): numpy integers and whole floats are sizes
    reference = plan("llama-3-8b", "h100", chips=4, isl=128, osl=32, max_batch=64)
    got = plan("llama-3-8b", "h100", chips=chips, isl=np.int64(128), osl=32.0,
               max_batch=np.int32(64))
    assert got.configs == reference.configs and got.chips == 4


def test_plan_training_sizes_follow_the_one_rule() -> None:
    a = plan_training("llama-3-8b", "h100", chips=8, batch=16, seq=1024, max_microbatches=4)
    b = plan_training("llama-3-8b", "h100", chips=np.int64(8), batch=16.0, seq=np.int16(1024),
                      max_microbatches=4.0)
    assert a.configs == b.configs


@pytest.mark.parametrize("call, match", [
    (lambda: plan("llama-3-8b", "h100", chips=10**20), r"plan: chips must be .*2\*\*53"),
    (lambda: plan("llama-3-8b", "h100", chips=MAX_CHIPS + 1), r"chips must be at most 16,777,216"),
    (lambda: plan("llama-3-8b", "h100", chips=8, max_batch=2**40),
     r"max_batch must be at most 16,384"),
    (lambda: plan_training("llama-3-8b", "h100", chips=8, batch=2**40, seq=1024,
                           max_microbatches=2**40), r"max_microbatches must be at most 4,096"),
    (lambda: plan("llama-3-8b", "h100", chips=8, dtype=None), r"plan: dtype must be a precision"),
    (lambda: plan_training("llama-3-8b", "h100", chips=8, batch=8, seq=8, dtype=None),
     r"plan_training: dtype must be"),
    (lambda: plan("llama-3-8b", "h100", chips=8, link=5), r"plan: link must be a link name.*got 5"),
    (lambda: plan("llama-3-8b", "h100", chips=8, link=["nvlink"]), r"got \['nvlink'\]"),
    (lambda: plan("llama-3-8b", "h100", chips=8, link="nvlnk"),
     r"plan: link='nvlnk': h100-sxm has no link 'nvlnk'.*Did you mean 'nvlink'"),
    (lambda: plan_training("llama-3-8b", "h100", chips=8, batch=8, seq=8, link=3),
     r"plan_training: link must be"),
    (lambda: plan("llama-3-8b", "h100", chips=8, memory_fraction=0), r"memory_fraction must be"),
    (lambda: plan("llama-3-8b", "h100", chips=8, memory_fraction=1.5), r"in \(0, 1\]"),
    (lambda: plan("llama-3-8b", "h100", chips=8, tpot="1e400 s"),
     r"plan: tpot: '1e400 s' \(read as inf\) is not a finite number"),
    (lambda: plan("llama-3-8b", "h100", chips=8).table(top=-1), r"top must be a whole number"),
])
def test_plan_refuses_in_one_line_and_at_once(call, match) -> None:
    started = time.perf_counter()
    with pytest.raises(RooflineError, match=match) as exc:
        call()
    one_line(exc)
    assert time.perf_counter() - started < 5  # the model's load; the refusal itself is instant


def test_plan_is_bounded_at_its_largest_inputs() -> None:
    # the splits come from the divisors of the chips, and the decode step is analyzed once
    # per (tp, ep): the largest chip count and a highly composite one answer in well under
    # the time one split at a time would take (seconds per thousand splits)
    for chips in (MAX_CHIPS, 720720):
        started = time.perf_counter()
        found = plan("llama-3-70b", "h100", chips=chips, max_batch=64)
        assert found.best is not None and time.perf_counter() - started < 10
    started = time.perf_counter()
    trained = plan_training("llama-3-8b", "h100", chips=8, batch=2**40, seq=1024,
                            max_microbatches=MAX_MICROBATCHES)
    assert time.perf_counter() - started < 20
    assert trained.best is None  # 2**40 sequences fit nowhere
    assert MAX_BATCH == 16384


def test_memory_fraction_reserves_headroom() -> None:
    full = plan("llama-3-70b", "h100", chips=8, tpot="50 ms")
    kept = plan("llama-3-70b", "h100", chips=8, tpot="50 ms", memory_fraction=0.9)
    capacity = rl.get_hardware("h100").memory_capacity
    assert max(c.footprint for c in full.configs) > 0.9 * capacity  # the default fills it
    assert all(c.footprint <= 0.9 * capacity for c in kept.configs)
    assert kept.best is not None and kept.best.throughput <= full.best.throughput
    trained = plan_training("llama-3-8b", "h100", chips=8, batch=64, seq=4096,
                            memory_fraction=0.5)
    assert all(c.footprint <= 0.5 * capacity for c in trained.configs)


def test_plan_command_refuses_options_of_the_other_mode(capsys) -> None:
    base = ["plan", "llama-3-8b", "--hw", "h100", "--chips", "8"]
    for extra in (["--step-time", "2s"], ["--batch", "8"], ["--seq", "128"],
                  ["--max-microbatches", "4"]):
        assert main([*base, *extra]) == 2
        err = capsys.readouterr().err
        assert f"{extra[0]} does not apply to serving (without --train)" in err, err
    train = [*base, "--train", "--batch", "64", "--seq", "1024"]
    for extra in (["--ttft", "1s"], ["--tpot", "1s"], ["--kv-dtype", "fp8"],
                  ["--weight-dtype", "fp8"], ["--isl", "8"], ["--osl", "8"],
                  ["--max-batch", "8"]):
        assert main([*train, *extra]) == 2
        err = capsys.readouterr().err
        assert f"{extra[0]} does not apply to --train" in err, err
    for top in ("-1", "0", "x"):
        with pytest.raises(SystemExit) as stop:
            main([*base, "--top", top])
        assert stop.value.code == 2
        assert "expected a whole number >= 1" in capsys.readouterr().err
    assert main([*base, "--chips", "99999999999999999999"]) == 2
    assert "chips must be a whole number >= 1" in capsys.readouterr().err


def test_plan_command_memory_fraction(capsys) -> None:
    assert main(["plan", "llama-3-70b", "--hw", "h100", "--chips", "8", "--tpot", "50ms",
                 "--memory-fraction", "90%", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert all(c["footprint"] <= 0.9 * 80e9 for c in data["configs"])
    with pytest.raises(SystemExit):
        main(["plan", "llama-3-70b", "--hw", "h100", "--chips", "8", "--memory-fraction", "2"])
    assert "share of each chip's memory in (0, 1]" in capsys.readouterr().err


@FUZZ
@given(chips=st.one_of(st.integers(-5, 2**60), st.floats(allow_nan=True), st.text(max_size=4),
                       st.none(), st.booleans()),
       max_batch=st.one_of(st.integers(-3, 2**20), st.floats(-1, 1e6)))
def test_plan_fuzzed_sizes_answer_or_refuse(chips: object, max_batch: object) -> None:
    # any value: a plan or a one-line RooflineError, quickly; never another exception
    started = time.perf_counter()
    try:
        plan("gpt2", "h100", chips=chips, max_batch=max_batch, isl=64, osl=16)  # type: ignore[arg-type]
    except RooflineError as exc:
        assert "\n" not in str(exc)
    assert time.perf_counter() - started < 10


# -- training steps ---------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, match", [
    ({"batch": 1, "dp": 8}, r"train_step: batch=1 sequences cannot be shared by dp=8"),
    ({"batch": 12, "dp": 8}, r"batch=12 .* dp=8"),
    ({"batch": 8, "microbatches": 3}, r"microbatches=3 must divide each replica's batch of 8"),
    ({"batch": 16, "dp": 2, "microbatches": 3}, r"replica's batch of 8 sequences"),
    ({"batch": np.array([8, 12]), "dp": 8}, r"batch=12 sequences"),
    ({"batch": 8, "dp": 2, "dp_link": 5}, r"train_step: dp_link must be a link name.*got 5"),
    ({"batch": 8, "pp": 2, "pp_link": ["nvlink"]}, r"train_step: pp_link must be"),
    ({"batch": 8, "tp": 2, "link_count": -1}, r"train_step: link_count must be a whole number"),
    ({"batch": 8, "tp": 2, "link": 1.5}, r"train_step: link must be"),
])
def test_train_step_refuses_what_plan_training_skips(kwargs, match) -> None:
    model = models.load("llama-3-8b")
    batch = kwargs.pop("batch")
    with pytest.raises(WorkloadError, match=match) as exc:
        model.train_step(batch, 128, **kwargs)
    one_line(exc)
    if "link" not in match:
        with pytest.raises(WorkloadError, match=match.replace("train_step", "train_footprint")):
            model.train_footprint(batch, 128, **kwargs)


def test_every_split_plan_training_keeps_is_one_train_step_accepts() -> None:
    found = plan_training("llama-3-8b", "h100", chips=8, batch=24, seq=1024)
    model = models.load("llama-3-8b")
    assert found.configs
    for c in found.configs[:40]:
        model.train_step(24, 1024, dp=c.dp, tp=c.tp, pp=c.pp, zero=c.zero,
                         microbatches=c.microbatches, recompute=c.recompute)


# -- messages that quote the value and the argument -------------------------------------------


@pytest.mark.parametrize("value, shown", [("1e400 s", "'1e400 s' (read as inf)"),
                                          ("-2 ms", "'-2 ms' (read as -0.002)"),
                                          (10**400, "(read as inf)"), (-1.0, "-1.0 is not")])
def test_time_messages_quote_what_was_written(value, shown) -> None:
    with pytest.raises(units.UnitError if hasattr(units, "UnitError") else RooflineError) as exc:
        units.parse(value, "time", what="max_time")
    assert one_line(exc).startswith("max_time: ") and shown in str(exc.value)


def test_a_precision_the_chip_lacks_names_whose_it_is() -> None:
    with pytest.raises(rl.UnsupportedPrecisionError, match=r"^dtype='fp4': h100-sxm has no"):
        rl.analyze(ops.matmul(64, 64, 64), "h100", dtype="fp4")
    with pytest.raises(rl.UnsupportedPrecisionError,
                       match=r"^kernel 'matmul\(64x64x64, fp4\)' \(dtype='fp4'\): h100-sxm"):
        rl.analyze(ops.matmul(64, 64, 64, dtype="fp4"), "h100")


def test_overlapped_of_a_program_run_zero_times() -> None:
    step = models.load("llama-3-8b").decode(8, 1024, tp=8)
    zero = rl.overlapped(step.repeat(0))
    assert rl.analyze(zero, "h100").time == 0.0
    # and a program run twice hides twice the bytes in twice the time
    once, twice = (rl.analyze(rl.overlapped(step.repeat(n)), "h100").time for n in (1, 2))
    assert twice == pytest.approx(2 * once)


# -- text outputs of any test id ----------------------------------------------------------------


def test_encodable_escapes_what_an_encoding_cannot_hold() -> None:
    bad = "test_\udcff.py::t"
    assert encodable(bad) == "test_\\udcff.py::t"
    assert encodable("café", "ascii") == "caf\\xe9" and encodable("plain") == "plain"


ANY_TEXT = st.lists(st.integers(0, 0x10FFFF), max_size=30).map(lambda cs: "".join(map(chr, cs)))


@FUZZ
@given(ANY_TEXT)
def test_any_text_is_written_and_printed(text: str) -> None:
    # lone surrogates included: every table line and every written file takes it
    import tempfile

    from pytest_roofline.text_table import render

    lines = render(["test", "x"], [[text, "1"]], width=40)
    assert all(line.encode("utf-8") for line in lines)
    assert encodable(text).encode("utf-8") is not None
    with tempfile.TemporaryDirectory() as folder:
        path = write_text(Path(folder) / "out.md", text)
        assert path.read_bytes().decode("utf-8") == encodable(text)


SURROGATE_SUITE = """
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", regime="memory", workload=ops.matmul(8, 4096, 4096))
def test_memory():
    pass

@pytest.mark.roofline(hw="h100", regime="compute", workload=ops.matmul(8, 4096, 4096))
def test_compute():
    pass
"""


def test_every_text_output_survives_a_test_id_that_is_not_utf8(pytester, capsys) -> None:
    name = os.fsdecode(b"test_\xff.py")  # Linux allows it; Python keeps a lone surrogate
    (pytester.path / name).write_text(SURROGATE_SUITE)
    summary = pytester.path / "summary.md"
    pytester._monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--roofline-md", "out.md", "--roofline-json", "r.json",
        "--roofline-github-summary", "--roofline-save", "base")
    result.assert_outcomes(passed=1, failed=1)
    assert "UnicodeEncodeError" not in result.stdout.str() + result.stderr.str()
    assert result.ret == 1  # the failed test, not a crash at the end
    assert "written to" in result.stdout.str()
    for path in ("out.md", "summary.md"):
        assert "test_\\udcff.py::test_memory" in (pytester.path / path).read_text()
    report = str(pytester.path / "r.json")
    for argv in (["markdown", report, "-o", str(pytester.path / "m.md")],
                 ["compare", report, report, "--md", str(pytester.path / "c.md"), "--csv",
                  str(pytester.path / "c.csv")],
                 ["compare", report, report, "--csv", "-"], ["compare", report, report],
                 ["markdown", report], ["plot", report], ["merge", report, report, "-o",
                                                          str(pytester.path / "all.json")]):
        code = main(argv)
        out = capsys.readouterr()
        assert code in (0, 2), (argv, out.err)
        assert "UnicodeEncodeError" not in out.err
        if argv[0] != "merge":
            assert code == 0, (argv, out.err)
    for path in ("m.md", "c.md", "c.csv"):
        assert "test_\\udcff.py" in (pytester.path / path).read_text(), path


# -- interrupted writes -------------------------------------------------------------------------


def test_the_next_write_removes_what_a_killed_write_left(tmp_path: Path) -> None:
    target = tmp_path / "report.json"
    code = ("import os, sys; sys.path.insert(0, sys.argv[2])\n"
            "from pytest_roofline.atomic import write_with\n"
            "def hang(tmp):\n"
            "    open(tmp, 'w').write('half')\n"
            "    os.kill(os.getpid(), 9)\n"
            "write_with(sys.argv[1], hang)\n")
    done = subprocess.run([sys.executable, "-c", code, str(target), str(ROOT)],
                          capture_output=True)
    assert done.returncode == -9
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".report.json.")]
    assert len(left) == 1 and not target.exists()
    # a live writer's temporary file (another running one's: it holds its lock) stays
    alive = tmp_path / f".report.json.{os.getppid()}.abcdefgh.json"
    alive.write_text("in progress")
    import fcntl

    held = os.open(alive, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)
    write_text(target, "{}")
    assert target.read_text() == "{}"
    assert not left[0].exists() and alive.exists()
    # even a day old, while its writer holds the lock; gone once the writer is
    old = time.time() - 2 * 24 * 3600
    os.utime(alive, (old, old))
    assert remove_leftovers(target, ".json") == [] and alive.exists()
    os.close(held)
    assert remove_leftovers(target, ".json") == [alive]


def test_a_killed_writer_not_yet_reaped_leaves_nothing_behind(tmp_path: Path) -> None:
    """A writer killed during a save whose parent has not reaped it yet (a zombie: its
    process id still answers, as a pytest-xdist run killed with -9 leaves its processes)
    holds no lock any more: the next write removes its temporary file at once (before, it
    stayed a day, its process id taken for a live one)."""
    target = tmp_path / "base.json"
    code = ("import os, sys; sys.path.insert(0, sys.argv[2])\n"
            "from pytest_roofline.atomic import write_with\n"
            "def hang(tmp):\n"
            "    open(tmp, 'w').write('half')\n"
            "    os.kill(os.getpid(), 9)\n"
            "write_with(sys.argv[1], hang)\n")
    child = subprocess.Popen([sys.executable, "-c", code, str(target), str(ROOT)])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # dead, not reaped
        os.kill(child.pid, 0)  # a zombie's id still answers
        (left,) = [p for p in tmp_path.iterdir() if p.name.startswith(".base.json.")]
        write_text(target, "{}")
        assert not left.exists()
        assert [p.name for p in tmp_path.iterdir()] == ["base.json"]
    finally:
        child.wait()


# -- registered formulas and their hook ---------------------------------------------------------



FORMULA_SUITE = """
import math
import pytest
import torch
import pytest_roofline as rl
from pytest_roofline import ops

@torch.library.custom_op("hardening::fancy", mutates_args=())
def fancy(x: torch.Tensor) -> torch.Tensor:
    return x.clone()

@fancy.register_fake
def _(x):
    return torch.empty_like(x)

def recurse(x):
    return recurse(x)

def huge(x):
    return rl.Workload([rl.Kernel("a", flops=1.7e308, bytes=1.0),
                        rl.Kernel("b", flops=1.7e308, bytes=1.0)])

CASES = {
    "nan": lambda x: rl.Kernel("k", flops=math.nan, bytes=1.0),
    "negative": lambda x: ops.elementwise(-1),
    "none": lambda x: None,
    "str": lambda x: "abc",
    "list": lambda x: [ops.elementwise(4)],
    "negative_flops": lambda x: -4.0,  # FLOPs alone may be given, never negative
    "raises": lambda x: 1 / 0,
    "recurses": recurse,
    "inf": lambda x: rl.Kernel("k", flops=1e308 * 10, bytes=1.0),
    "overflows": huge,
    "counted_past_inf": lambda x: rl.Kernel("k", flops=1e300, bytes=1.0, count=1e300),
}

@pytest.mark.parametrize("kind", list(CASES))
@pytest.mark.roofline(hw="h100", regime="memory", trace=True)
def test_traced(kind):
    rl.unregister_op("hardening::fancy")  # one formula at a time
    rl.register_op("hardening::fancy", CASES[kind])
    fancy(torch.ones(4, device="meta"))

@pytest.mark.parametrize("kind", ["none", "overflows"])
@pytest.mark.roofline(hw="h100", regime="memory")
def test_fixture(kind, roofline):
    rl.unregister_op("hardening::fancy")
    rl.register_op("hardening::fancy", CASES[kind])
    roofline.trace(fancy, torch.ones(4, device="meta"))
"""


def test_a_broken_formula_is_one_line_naming_the_op_and_the_formula(pytester) -> None:
    pytest.importorskip("torch")
    pytester.makepyfile(test_formulas=FORMULA_SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=13)
    out = result.stdout.str()
    assert "Traceback" not in out and "torch/" not in out and "_ops.py" not in out
    failures = [line for line in unwrap(result.stdout.lines)  # wrapped on the terminal
                if line.startswith("roofline marker on test_")]
    assert len(failures) == 13, out
    reports = result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
    assert all("\n" not in str(r.longrepr) for r in reports if r.failed)  # one line as data
    for line in failures:
        assert "registered for 'hardening::fancy'" in line and "the formula " in line, line
    assert any("test_formulas.recurse" in line and "recursed without end" in line
               for line in failures)
    assert any("returned None; it must return a Kernel or a Workload" in line
               for line in failures)
    assert any("returned str 'abc'" in line for line in failures)
    assert any("add up past the largest float" in line for line in failures)
    assert any("ZeroDivisionError: division by zero" in line for line in failures)


def test_a_traced_workload_never_has_infinite_figures() -> None:
    torch = pytest.importorskip("torch")
    from pytest_roofline.tracing._formula_check import FormulaError

    @torch.library.custom_op("hardening::plain", mutates_args=(), schema="(Tensor x) -> Tensor")
    def plain(x):
        return x.clone()

    @plain.register_fake
    def _(x):
        return torch.empty_like(x)

    rl.register_op("hardening::plain", lambda x: rl.Workload(
        [rl.Kernel("a", flops=1.7e308, bytes=1.0), rl.Kernel("b", flops=1.7e308, bytes=1.0)]))
    try:
        with pytest.raises(FormulaError, match="add up past the largest float") as exc:
            rl.trace(plain, torch.ones(4, device="meta"))
        one_line(exc)
    finally:
        rl.unregister_op("hardening::plain")


HOOK_CONFTEST = """
def pytest_roofline_register_ops(config):
    raise KeyError("no such table")
"""

HOOK_SUITE = """
import pytest, torch

@pytest.mark.roofline(hw="h100", regime="memory", trace=True)
def test_first():
    torch.ones(4, device="meta") + 1

@pytest.mark.roofline(hw="h100", regime="memory", trace=True)
def test_second():
    torch.ones(4, device="meta") + 1

@pytest.mark.roofline(hw="h100", regime="memory")
def test_fixture(roofline):
    roofline.trace(lambda x: x + 1, torch.ones(4, device="meta"))

@pytest.mark.roofline(hw="h100", regime="memory", flops=1, bytes=8)
def test_declared_needs_no_formula():
    pass
"""


def test_a_raising_register_ops_hook_fails_every_test_that_needs_it(pytester) -> None:
    pytest.importorskip("torch")
    pytester.makeconftest(HOOK_CONFTEST)
    pytester.makepyfile(test_hook=HOOK_SUITE)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=3)
    out = result.stdout.str()
    assert "Traceback" not in out and "INTERNALERROR" not in out
    lines = [line for line in unwrap(result.stdout.lines)
             if "pytest_roofline_register_ops in " in line
             and line.startswith("roofline marker on")]
    assert len(lines) == 3, out
    assert all("conftest.py failed: KeyError: 'no such table'" in line for line in lines)


# -- the calibration cache ----------------------------------------------------------------------

HOST_SUITE = """
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="host", regime="memory", workload=ops.elementwise(1000, dtype="fp64"))
def test_one():
    pass

@pytest.mark.roofline(hw="host", regime="memory", workload=ops.elementwise(1000, dtype="fp64"))
def test_two():
    pass
"""


def test_an_unwritable_cache_is_one_line_saying_what_to_set(pytester, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a file where the cache folder's parent should be (root ignores modes)
    pytester._monkeypatch.setenv("XDG_CACHE_HOME", str(blocker / "sub"))
    pytester.makepyfile(test_host=HOST_SUITE)
    # in a process of its own: this one may have resolved "host" already
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=2)
    out = result.stdout.str()
    assert "Traceback" not in out and "PermissionError" not in out
    assert "the calibration cache" in out and "set XDG_CACHE_HOME to a writable folder" in out


def test_no_home_and_no_xdg_cache_home(monkeypatch) -> None:
    from pytest_roofline.measuring import calibration

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)

    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    with pytest.raises(RooflineError, match="set XDG_CACHE_HOME to a writable folder") as exc:
        calibration.cache_dir()
    one_line(exc)
    monkeypatch.setenv("XDG_CACHE_HOME", "/somewhere")
    assert calibration.cache_dir() == Path("/somewhere/pytest-roofline")


# -- the documentation's timings ------------------------------------------------------------------


def test_doc_timings_match_whatever_their_unit() -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from docblocks import assert_shown

    shown = "a roofline bound of 20.7 us (memory-bound): 1.2% of the roof, in 1.73 ms."
    for real in ("a roofline bound of 777 ns (memory-bound): 1.2% of the roof, in 2 s.",
                 "a roofline bound of 1.5 ms (memory-bound): 90% of the roof, in 3.1 us."):
        assert_shown(shown, real, timings=True)
    with pytest.raises(AssertionError):
        assert_shown(shown, shown.replace("20.7 us", "20.7 kB"), timings=True)
    with pytest.raises(AssertionError):  # without timings=True a unit is a unit
        assert_shown("bound of 20.7 us", "bound of 20.7 ns")


# -- cross-checking a whole Hugging Face model against its config -------------------------------


def test_cross_check_names_the_lm_head_of_a_hugging_face_model(tmp_path) -> None:
    # a two-layer Llama: hidden 1024, vocabulary 32,000, 512 tokens. The forward's lm_head over
    # every position is 2·512·1024·32000 = 33.6 GFLOP against 2·1024·32000 = 65.5 MFLOP at the
    # last position (docs/trace.md); logits_to_keep=1 or all_logits=True aligns the two
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from pytest_roofline.judging.crosscheck import compare, differing

    config = transformers.LlamaConfig(
        hidden_size=1024, intermediate_size=3584, num_attention_heads=16,
        num_key_value_heads=4, num_hidden_layers=2, vocab_size=32000,
        tie_word_embeddings=False)
    config._attn_implementation = "sdpa"
    config.save_pretrained(tmp_path)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config).to(torch.bfloat16)
    ids = torch.zeros(1, 512, dtype=torch.long, device="meta")
    declared = models.load(str(tmp_path / "config.json")).prefill(1, 512)
    every = rl.trace(lambda: model(input_ids=ids))
    lines = compare(declared, every, 0.02)
    assert "(traced +53.5%)" in lines[1] and "(traced +7.4%)" in lines[2]
    mine, theirs = differing(declared, every, "matrix", 0.02)
    assert mine == [("lm_head", pytest.approx(2 * 1024 * 32000))]
    assert len(theirs) == 1 and theirs[0][1] == pytest.approx(2 * 512 * 1024 * 32000)
    assert "matrix kernels that differ most: declared only: lm_head 65.5 MFLOP" in lines[4]
    last = rl.trace(lambda: model(input_ids=ids, logits_to_keep=1))
    assert "matrix" not in compare(declared, last, 0.02)[0].split(" on ")[1].split(" FLOPs")[0]
    whole = models.load(str(tmp_path / "config.json")).prefill(1, 512, all_logits=True)
    assert differing(whole, every, "matrix", 0.02) == ([], [])
    # the vector family's difference is the rotary embeddings the declared model folds away
    _, extra = differing(declared, last, "vector", 0.02)
    assert any(name.endswith("self_attn.neg") for name, _ in extra), extra
    assert any(name.startswith("model.rotary_emb.") for name, _ in extra), extra


# -- fuzzing the newer surfaces (deterministic) ---------------------------------------------------


@FUZZ
@given(batch=st.integers(1, 64), dp=st.sampled_from([1, 2, 3, 4, 8]),
       microbatches=st.integers(1, 16))
def test_train_step_accepts_exactly_the_splits_plan_training_searches(batch, dp, microbatches):
    model = models.load("gpt2")
    whole = batch % dp == 0 and (batch // dp) % microbatches == 0
    try:
        model.train_step(batch, 64, dp=dp, microbatches=microbatches)
    except WorkloadError as exc:
        assert not whole and "\n" not in str(exc)
        assert ("dp=" in str(exc)) or ("microbatches=" in str(exc))
    else:
        assert whole


RETURNS = st.one_of(  # what a formula does when called: return a value or build a kernel
    st.one_of(st.none(), st.integers(), st.floats(), st.text(max_size=5),
              st.lists(st.integers(), max_size=2)).map(lambda v: lambda: v),
    st.builds(lambda f, b: lambda: rl.Kernel("k", flops=f, bytes=b),
              st.floats(0, 1e308), st.floats(0, 1e308)),
    st.builds(lambda n, f: lambda: rl.Workload([rl.Kernel(f"k{i}", flops=f, bytes=1.0)
                                                for i in range(n)]),
              st.integers(1, 4), st.floats(0, 1.7e308)))


@FUZZ
@given(RETURNS)
def test_a_formula_returning_anything_is_priced_or_refused_in_one_line(formula) -> None:
    from pytest_roofline.tracing._formula_check import FormulaError, call

    try:
        got = call("fuzz::op", lambda *a: formula(), (), {})
    except FormulaError as exc:
        assert "\n" not in str(exc) and "'fuzz::op'" in str(exc)
    else:
        flops = sum(float(k.total_flops) for k in (
            [got] if isinstance(got, rl.Kernel) else got.kernels))
        assert math.isfinite(flops)


# -- spec files: what can never apply -------------------------------------------------------------

H100_LINK = """
name: {name}
extends: h100
links:
  nvlink:
    bandwidth: 25 GB/s
    count: 18
    source: datasheet
{extra}
"""


@pytest.mark.parametrize("extra, match", [
    ("    latency: unpublished\n    latency_kind: measured",
     r"links\.nvlink\.latency_kind'.*no latency_kind with latency: unpublished"),
    ("    latency: unpublished\n    latency_source: datasheet",
     r"no latency_source with latency: unpublished"),
    ("mesh_axes: {'': nvlink}", r"mesh_axes\.'.*an axis name"),
    ("mesh_axes: {tp+dp: nvlink}", r"mesh_axes\.tp\+dp'.*never '' or axes joined with '\+'"),
    ("mesh_axes: {'tp dp': nvlink}", r"an axis name"),
])
def test_a_spec_refuses_what_can_never_apply(tmp_path, extra, match) -> None:
    path = tmp_path / "chip.yaml"
    path.write_text(H100_LINK.format(name="odd-chip", extra=extra))
    with pytest.raises(rl.SpecError, match=match) as exc:
        rl.get_hardware(str(path))
    one_line(exc)


def test_unit_strings_stop_at_100_characters_however_simple() -> None:
    # "0000...0001 TB/s" is a plain number with a unit, but past the schema's 100 characters
    long = "0" * 115 + "1 TB/s"
    assert len(long) == 121
    with pytest.raises(units.UnitError, match="at most 100 characters") as exc:
        units.parse(long, "bandwidth", what="memory.bandwidth")
    one_line(exc)
    assert units.parse("0" * 90 + "1 TB/s", "bandwidth") == 1e12


def test_an_extends_chain_600_deep_is_one_error(tmp_path) -> None:
    from pytest_roofline.hardware import CATALOG
    from pytest_roofline.hardware.catalog import MAX_EXTENDS

    for i in range(600):
        parent = "h100" if i == 0 else f"deep-{i - 1:04d}"
        (tmp_path / f"deep-{i:04d}.yaml").write_text(f"name: deep-{i:04d}\nextends: {parent}\n")
    started = time.perf_counter()
    with pytest.raises(rl.SpecError, match=rf"a chain of more than {MAX_EXTENDS} specs") as exc:
        CATALOG.register_path(tmp_path)
    one_line(exc)
    assert time.perf_counter() - started < 10
    # the refused folder registered nothing: no chip of it is left for a listing to trip over
    assert not [name for name in rl.list_hardware() if name.startswith("deep-")]
    # a chain within the bound resolves
    (tmp_path / "short").mkdir()
    for i in range(5):
        parent = "h100" if i == 0 else f"short-{i - 1}"
        (tmp_path / "short" / f"short-{i}.yaml").write_text(f"name: short-{i}\nextends: {parent}\n")
    before = CATALOG.checkpoint()
    try:
        CATALOG.register_path(tmp_path / "short")
        assert (rl.get_hardware("short-4").memory_bandwidth
                == rl.get_hardware("h100").memory_bandwidth)
    finally:
        CATALOG.restore(before)


def test_timer_counts_follow_the_size_rule() -> None:
    from pytest_roofline.measuring.timing import MeasureError, Timer

    assert Timer(warmup=np.int64(0), repeats=4.0, max_repeats=np.int32(10)) == Timer(
        warmup=0, repeats=4, max_repeats=10)
    for bad in ({"repeats": 0}, {"repeats": 2.5}, {"warmup": -1}, {"repeats": "3"},
                {"repeats": True}):
        with pytest.raises(MeasureError, match="must be a whole number") as exc:
            Timer(**bad)
        one_line(exc)
