"""Every fenced code block of README.md, docs/*.md and specs/*/README.md runs here, as written.

Each block has one check, found by its file and its first line (``tests/docblocks.py``); a
block without a check fails ``test_every_block_has_a_check``, so a new example cannot go
untested. Python blocks run (test modules through pytester, snippets through ``exec``, ``>>>``
lines as doctests); ``$ pytest-roofline ...`` blocks run the command and compare the output
shown with the real one; output blocks (a failure line, an error, a summary) are produced by
the scenario they describe and compared the same way; YAML blocks load through the spec
readers. Figures that are timings of this machine are wildcards (``timings=True``); where a
block writes a placeholder (``path/to/config.json``), the check says what stands for it.
"""

from __future__ import annotations

import contextlib
import doctest
import functools
import io
import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from docblocks import KEY, ROOT, Block, assert_shown, blocks, commands
from test_plugin import ISOLATE, plugin_args
from wrapped import unwrap

pytest_plugins = ("pytester",)

# The pytester fixture drops, when its test ends, the modules first imported during it; a
# block that draws a chart imports matplotlib, which does not survive a second import.
with contextlib.suppress(ImportError):
    import matplotlib.backends.backend_agg
    import matplotlib.figure  # noqa: F401
# a profiled block imports torch's profiler and what exporting a trace loads, which do not
# survive a second import: one tiny profile loads them here, once
with contextlib.suppress(ImportError):
    import tempfile

    import torch
    import torch.profiler

    with torch.profiler.profile(record_shapes=True) as _prof:
        torch.ones(2) + 1
    with tempfile.TemporaryDirectory() as _folder:
        _prof.export_chrome_trace(os.path.join(_folder, "warm.json"))

Check = Callable[[Block, pytest.FixtureRequest], None]
CHECKS: dict[tuple[str, str], Check] = {}
ALL = blocks()
HF = ROOT / "tests" / "data" / "hf"


def check(path: str, first: str) -> Callable[[Check], Check]:
    """Register the check of the block of *path* whose first line is *first*."""
    def register(function: Check) -> Check:
        CHECKS[(path, first[:KEY])] = function
        return function
    return register


def test_every_block_has_a_check() -> None:
    keys = [b.key for b in ALL]
    assert len(keys) == len(set(keys)), "two blocks of one file start with the same line"
    missing = [str(b) for b in ALL if b.key not in CHECKS]
    assert not missing, f"blocks without a check: {missing}"
    stale = set(CHECKS) - set(keys)
    assert not stale, f"checks of blocks that no longer exist: {stale}"


@pytest.mark.parametrize("block", ALL, ids=str)
def test_block_runs_as_shown(block: Block, request: pytest.FixtureRequest) -> None:
    if block.key not in CHECKS:
        pytest.fail(f"{block} has no check")
    CHECKS[block.key](block, request)


def test_a_shown_command_output_that_drifts_fails() -> None:
    """A command's output is compared space for space: a column that moves, or a line that
    wraps elsewhere, fails (compared word by word, both passed)."""
    shown = "test    time\nt.py::a  1 us -> -  vanished\n  ..."
    assert_shown(shown, "test    time   \nt.py::a  1 us -> -  vanished\n  x\n", whole=True,
                 exact=True)
    for drifted in ("test    time\nt.py::a  1 us -> -   vanished\n  x\n",
                    "test time\nt.py::a  1 us -> -  vanished\n  x\n",
                    "test    time\nt.py::a  1 us -> -\n  vanished\n  x\n"):
        assert_shown(shown, drifted, whole=True)  # the loose comparison misses it
        with pytest.raises(AssertionError, match="does not match"):
            assert_shown(shown, drifted, whole=True, exact=True)


# -- helpers -------------------------------------------------------------------------------

def runpytest(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*plugin_args(), *ISOLATE, *args)


def cli(*argv: str, cwd: Path | None = None) -> tuple[int, str, str]:
    """``pytest-roofline ARGV`` in process: exit code, stdout, stderr."""
    from pytest_roofline.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            _chdir(cwd or Path.cwd()):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _chdir(path: Path) -> Iterator[None]:
    old = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def run_shown_commands(block: Block, cwd: Path | None = None,
                       replace: dict[str, str] | None = None) -> None:
    """Every ``$ pytest-roofline ...`` of the block runs and prints what is shown under it."""
    runs = commands(block.text)
    assert runs, f"{block}: no $ command"
    for argv, shown in runs:
        argv = [(replace or {}).get(a, a) for a in argv]
        assert argv[0] == "pytest-roofline", argv
        code, out, err = cli(*argv[1:], cwd=cwd)
        assert code == 0, f"{argv}: exit {code}: {err}"
        if shown:
            assert_shown(shown, out, whole=True, exact=True)


def as_test_module(block: Block, pytester: pytest.Pytester, prelude: str = "",
                **outcomes: int) -> pytest.RunResult:
    """The block as a test module (after *prelude*, definitions it takes as given)."""
    pytester.makepyfile(test_block=textwrap.dedent(prelude) + "\n" + block.text)
    result = runpytest(pytester, "-rA")
    result.assert_outcomes(**outcomes)
    return result


def python(block: Block, replace: dict[str, str] | None = None,
           cwd: Path | None = None) -> dict[str, object]:
    """Run the block's Python as written, given nothing, after textual *replace*ments of the
    placeholders it writes (``path/to/...``), from *cwd* (by default a fresh folder: a block
    runs from anywhere, not only from the repository's root); returns its namespace."""
    import tempfile

    text = block.text
    for old, new in (replace or {}).items():
        assert old in text, f"{block}: placeholder {old!r} is gone"
        text = text.replace(old, new)
    scope: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as elsewhere, _chdir(cwd or Path(elsewhere)):
        exec(compile(text, str(block), "exec"), scope)  # the documentation's own code
    return scope


def python_source(block: Block) -> str:
    """The block's Python as a module: a doctest's examples joined."""
    if block.text.lstrip().startswith(">>>"):
        examples = doctest.DocTestParser().get_examples(block.text)
        return "".join(example.source for example in examples)
    return block.text


PYTHON = [b for b in ALL if b.lang == "python"]


def test_every_python_block_defines_the_names_it_uses(tmp_path: Path) -> None:
    """No block leans on a name the page never imports or defines (ruff's undefined-name
    rule, F821, over every Python block as a module of its own): copied alone, it runs."""
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff (the dev extra) is not installed beside this interpreter")
    files = {}
    for block in PYTHON:
        path = tmp_path / (re.sub(r"\W", "_", str(block)) + ".py")
        path.write_text(python_source(block))
        files[path.name] = str(block)
    done = subprocess.run([str(ruff), "check", "--isolated", "--select", "F821",
                           "--output-format", "concise", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    found = sorted({files[Path(line.split(":")[0]).name] for line in done.stdout.splitlines()
                    if ": F821 " in line})
    assert done.returncode == 0 and not found, f"blocks with undefined names: {found}\n" \
        f"{done.stdout[-2000:]}"


def test_a_block_using_an_undefined_name_is_found(tmp_path: Path) -> None:
    """The check above sees a block that uses a name from the page's prose."""
    ruff = Path(sys.executable).with_name("ruff")
    if not ruff.exists():
        pytest.skip("ruff (the dev extra) is not installed beside this interpreter")
    (tmp_path / "b.py").write_text("import torch\nw = rl.trace(torch.ones, 2)\n")
    done = subprocess.run([str(ruff), "check", "--isolated", "--select", "F821", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "`rl`" in done.stdout


def test_every_shown_command_is_compared_with_its_output() -> None:
    """A block that shows a ``$ pytest-roofline`` command and its output has a check that runs
    the command and compares (``run_shown_commands`` or ``commands``, space for space): the
    output shown cannot drift from the command's."""
    import inspect

    unchecked = []
    for block in ALL:
        runs = [shown for _, shown in commands(block.text)]
        if not any(runs) or block.key not in CHECKS:
            continue
        source = inspect.getsource(CHECKS[block.key])
        if "run_shown_commands(" not in source and not (
                "commands(" in source and "exact=True" in source):
            unchecked.append(str(block))
    assert not unchecked, f"blocks whose shown output no check compares: {unchecked}"


# -- README.md -----------------------------------------------------------------------------

@check("README.md", "import pytest")
@check("docs/plugin.md", "import pytest")
def _marker_examples(block: Block, request: pytest.FixtureRequest) -> None:
    as_test_module(block, request.getfixturevalue("pytester"),
                passed=block.text.count("def test_"))


SMALL_GEMM = """
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", regime="compute", workload=ops.matmul(64, 8192, 8192))
def test_small_gemm():
    pass
"""


@check("README.md", "_______________________________ test_small_gemm "
       "________________________________")
@check("docs/plugin.md", "_______________________________ test_small_gemm "
       "________________________________")
def _small_gemm_failure(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    name = "test_kernels" if "::" in block.text else "test_gemm"
    pytester.makepyfile(**{name: SMALL_GEMM})
    result = runpytest(pytester, "-rf", "-vv")  # 80 columns; -vv: the short summary whole
    assert_shown(block.text, result.stdout.str())
    shown = [line for line in block.text.splitlines() if not line.startswith("FAILED ")]
    assert max(len(line) for line in shown) <= 80  # as the terminal shows it


@check("README.md", "python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/pytest "
       "examples")
@check("docs/plugin.md", "pytest examples --roofline-json roofline.json          # add -n 2 "
       "with pytest-xdist")
def _example_suite(block: Block, request: pytest.FixtureRequest) -> None:
    """The example suite passes (the set-up part of the README's line runs in .ci/run)."""
    tmp = request.getfixturevalue("tmp_path")
    for line in block.text.splitlines():
        command = line.split("#")[0].strip()
        args = [*command.split("pytest ", 1)[1].split(), "-p", "no:cacheprovider", "-q",
                f"--roofline-json={tmp / 'roofline.json'}"]
        done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=ROOT,
                              capture_output=True, text=True, timeout=300,
                              env={**os.environ, "COLUMNS": "100"})
        if "--runxfail" in args:   # shows the failure the xfail test hides
            assert done.returncode == 1 and "1 failed," in done.stdout, done.stdout[-2000:]
        else:
            assert done.returncode == 0, done.stdout[-2000:]


@check("README.md", "python3 -m venv .venv && .venv/bin/pip install -q torch==2.13.0 "
       "transformers==5.23.0 -e \".[dev,torch,jax,plot]\" && .venv/bin/python -m pytest")
def _test_command(block: Block, request: pytest.FixtureRequest) -> None:
    """The test command is the one .ci/run reads from the README (this suite is its run);
    its installs are the extras pyproject.toml declares."""
    readme = (ROOT / "README.md").read_text()
    after = readme.split("<!-- test-command -->", 1)[1]
    line = next(x for x in after.splitlines() if x.startswith("python"))
    assert block.text.strip() == line
    extras = re.findall(r'-e "\.\[([\w,]+)\]"', line)
    # every optional extra pyproject.toml declares, so that CI tests each for real
    assert extras == ["dev,torch,jax,plot,dask"]
    pyproject = (ROOT / "pyproject.toml").read_text()
    declared = re.findall(r"^(\w+) = \[", pyproject.split("[project.optional-dependencies]")[1]
                          .split("\n[")[0], re.M)
    assert sorted(declared) == sorted(extras[0].split(","))


@check("README.md", ">>> import pytest_roofline as rl")
def _doctest(block: Block, request: pytest.FixtureRequest) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.text, {}, str(block), str(block), block.line)
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    out = io.StringIO()
    runner.run(test, out=out.write)
    assert runner.failures == 0, out.getvalue()
    assert runner.tries >= 3


@check("README.md", "# test_norm.py")
def _trace_true(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    as_test_module(block, request.getfixturevalue("pytester"), passed=1)


@check("README.md", "import numpy as np")
@check("docs/measure.md", "import numpy as np")
def _host_add(block: Block, request: pytest.FixtureRequest) -> None:
    """Runs and measures; the efficiency is asserted only on a quiet machine that asks
    (PYTEST_ROOFLINE_TIMING=1), since the bound is this machine's own calibration."""
    request.getfixturevalue("host_cache")
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=block.text)
    result = runpytest(pytester, "-rA", f"--roofline-json={pytester.path / 'r.json'}")
    record = json.loads((pytester.path / "r.json").read_text())["results"][0]
    # a quick calibration of a busy machine may read below the run: then no efficiency (a
    # finding above the roof, its data from a cache, or the alarm beyond its limit)
    assert record["roof_threads"] >= 1 and (
        record["measured_note"] in ("faster-than-bound", "above-roof", "at-bound")
        if record["efficiency"] is None else 0 < record["efficiency"] <= 1)
    if os.environ.get("PYTEST_ROOFLINE_TIMING") == "1":
        result.assert_outcomes(passed=1)


HOOKS = """
import pytest
from pytest_roofline import models

@pytest.mark.roofline(hw="h100")
def test_slow(roofline):
    roofline.add(models.load("llama-3-70b").prefill(8, 4096))

@pytest.mark.roofline(hw="h100")
def test_fast(roofline):
    roofline.add(models.load("llama-3-8b").decode(1, 1024))
"""


@check("README.md", "# conftest.py")
def _result_hook(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    pytester.makeconftest(block.text)
    pytester.makepyfile(test_block=HOOKS)
    result = runpytest(pytester, "-rf", "-vv")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*test_slow*over the 50 ms latency budget on h100-sxm*"])


@check("README.md", "pytest_roofline/   leaf utilities: units, dtypes, errors, atomic, "
       "efficiency, fields,")
def _layout(block: Block, request: pytest.FixtureRequest) -> None:
    """Every folder the layout names exists, and the flat modules and the engine's modules it
    lists are exactly the ones on disk (a module added or moved must be placed in the README)."""
    for line in block.text.splitlines():
        head = line.split()[0]
        if head.endswith("/"):
            assert (ROOT / head).is_dir(), head

    def listed(after: str, until: str) -> set[str]:
        text = block.text.split(after, 1)[1].split(until, 1)[0]
        return set(re.findall(r"[a-z_]+", text)) - {"and", "the", "planning", "over", "models"}

    flat = listed("leaf utilities:", ";") | {"planning"}
    engine = listed("their rooflines: the analysis", ";") - {"rooflines"}
    package = ROOT / "pytest_roofline"
    on_disk = {p.stem for p in package.glob("*.py")} - {"__init__", "__main__"}
    assert flat == on_disk
    assert engine == {p.stem for p in (package / "engine").glob("*.py")} - {"__init__"}


# -- docs/bounds.md ------------------------------------------------------------------------

@check("docs/bounds.md", "from pytest_roofline import fusion, models, ops")
def _fusion_snippet(block: Block, request: pytest.FixtureRequest) -> None:
    python(block)


@check("docs/bounds.md", "from pytest_roofline import models")
def _mixed_lengths(block: Block, request: pytest.FixtureRequest) -> None:
    scope = python(block)
    llama = scope["llama"]
    mixed = llama.prefill(3, [100, 200, 300])  # type: ignore[attr-defined]
    singles = sum(llama.prefill(1, n).flops for n in (100, 200, 300))  # type: ignore[attr-defined]
    assert mixed.flops == pytest.approx(singles, rel=1e-12)  # the comment's "="
    assert llama.prefill(3, [100, 200, 300], padded=True).flops == \
        llama.prefill(3, 300).flops  # type: ignore[attr-defined]


# -- docs/ci-gating.md ---------------------------------------------------------------------

SMALL_SUITE = """
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", regime="compute", workload=ops.matmul(4096, 4096, 4096))
def test_big():
    pass
"""


@check("docs/ci-gating.md", "pytest --roofline-save                      # on main: store this "
       "run's results as a baseline")
def _gate_commands(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=SMALL_SUITE)
    for line in block.text.splitlines():
        args = line.split("#")[0].split()[1:]
        result = runpytest(pytester, *args)
        assert result.ret == 0, result.stdout.str()


REGRESSION_SUITE = """
import os
import pytest
from pytest_roofline import ops

NEW = os.environ.get("ROUND") == "new"

@pytest.mark.roofline(hw="h100")
def test_param(roofline):
    roofline.add(ops.matmul(32, 8192, 8192) if NEW else ops.matmul(6144, 6144, 6144))

@pytest.mark.roofline(hw="h100", workload=ops.matmul(1024, 1024, 1024))
def test_same():
    pass

@pytest.mark.roofline(hw="h100", workload=ops.matmul(2048, 2048, 2048))
def test_same_too():
    pass

if NEW:
    @pytest.mark.roofline(hw="h100", workload=ops.matmul(512, 512, 512))
    def test_added():
        pass
else:
    @pytest.mark.roofline(hw="h100", workload=ops.matmul(512, 512, 512))
    def test_removed():
        pass
"""


def regression_run(request: pytest.FixtureRequest) -> pytest.RunResult:
    """test_k.py saved as baseline 'main', then changed: one regression under two rules."""
    pytester = request.getfixturevalue("pytester")
    monkeypatch = request.getfixturevalue("monkeypatch")
    pytester.makepyfile(test_k=REGRESSION_SUITE)
    assert runpytest(pytester, "--roofline-save=main").ret == 0
    monkeypatch.setenv("ROUND", "new")
    result = runpytest(pytester, "--roofline-compare=main", "-rf",
                       "--roofline-compare-fail=intensity:10%")
    result.stdout.str()
    return result


def with_repo(text: str, pytester: pytest.Pytester) -> str:
    """Real output with the test folder written as the docs write it, /repo."""
    return text.replace(str(pytester.path), "/repo")


@check("docs/ci-gating.md", "__________________________________ test_param "
       "__________________________________")
@check("docs/ci-gating.md", "======================== roofline baseline and reports "
       "=========================")
def _regression(block: Block, request: pytest.FixtureRequest) -> None:
    result = regression_run(request)
    assert_shown(block.text, with_repo(result.stdout.str(), request.getfixturevalue("pytester")))


@check("docs/ci-gating.md", "RULE  := METRIC \":\" LIMIT")
def _rule_grammar(block: Block, request: pytest.FixtureRequest) -> None:
    from pytest_roofline.report.rules import parse_rules

    rules = parse_rules(["intensity:10%", "intensity:5", "time:2us", "time:0.5 ms",
                         "flops:1GFLOP", "bytes:64MB", "bytes:1GiB", "efficiency:0.05"])
    assert len(rules) == 8


def pytest_error(block: Block, pytester: pytest.Pytester, *args: str) -> None:
    result = runpytest(pytester, *args)
    assert result.ret == 4
    assert_shown(block.text, with_repo(result.stderr.str() + result.stdout.str(), pytester))


@check("docs/ci-gating.md", "ERROR: --roofline-compare-fail: bad compare rule 'intens:10%': "
       "unknown metric 'intens'. Did you mean 'intensity' or 'bytes'? A rule is METRIC:LIMIT, ...")
def _bad_rule(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=SMALL_SUITE)
    pytest_error(block, pytester, "--roofline-compare", "--roofline-compare-fail=intens:10%")


@check("docs/ci-gating.md", "ERROR: /repo/.roofline/main.json: not valid JSON (Expecting ',' "
       "delimiter at line 40); is it a half-written or foreign file?")
def _corrupt_baseline(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=SMALL_SUITE)
    assert runpytest(pytester, "--roofline-save=main").ret == 0
    path = pytester.path / ".roofline" / "main.json"
    lines = json.dumps(json.loads(path.read_text()), indent=1).splitlines()
    assert lines[38].endswith(",")
    lines[38] = lines[38][:-1]                       # a comma lost before line 40
    path.write_text("\n".join(lines))
    pytest_error(block, pytester, "--roofline-compare=main")


@check("docs/ci-gating.md", "ERROR: --roofline-plot '/repo/chart.png' needs matplotlib, which "
       "is not installed; install the plot extra: pip install \"pytest-roofline[plot]\" (or use "
       "--roofline-plot=term)")
def _no_matplotlib(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setitem(sys.modules, "matplotlib", None)   # import matplotlib now fails
    pytester.makepyfile(test_block=SMALL_SUITE)
    pytest_error(block, pytester, f"--roofline-plot={pytester.path / 'chart.png'}")


CHART_SUITE = """
import os
import pytest
from pytest_roofline import models, ops

NEW = os.environ.get("ROUND") == "new"

@pytest.mark.roofline(hw="h100", regime="compute", workload=ops.matmul(6144, 6144, 6144))
def test_big():
    pass

@pytest.mark.roofline(hw="h100", regime="memory", workload=ops.matmul(8, 4096, 4096))
def test_decode():
    pass

@pytest.mark.roofline(hw="h100", regime="compute")
def test_small(roofline):
    roofline.add(ops.matmul(32 if NEW else 4096, 8192, 8192))

if NEW:
    @pytest.mark.roofline(hw="h100", workload=ops.matmul(128, 4096, 1024))
    def test_new():
        pass
"""


@check("docs/ci-gating.md", "roofline: h100-sxm  bf16 roof 989 TFLOP/s, memory 3.35 TB/s,")
def _terminal_chart(block: Block, request: pytest.FixtureRequest) -> None:
    """The docs cut the chart to 60 x 12 cells (ascii_plot.render's width and height)."""
    from pytest_roofline.report import ascii_plot, baseline
    from pytest_roofline.report.compare import compare

    pytester = request.getfixturevalue("pytester")
    monkeypatch = request.getfixturevalue("monkeypatch")
    pytester.makepyfile(test_block=CHART_SUITE)
    runpytest(pytester, "--roofline-save=main")
    monkeypatch.setenv("ROUND", "new")
    runpytest(pytester, "--roofline-json=new.json")
    base = baseline.load(pytester.path / ".roofline", "main")
    new = baseline.load(pytester.path / ".roofline", str(pytester.path / "new.json"))
    real = ascii_plot.render(new, compare(base, new, (), base="main"), width=60, height=12)
    assert block.text.rstrip() == real.rstrip(), real


@check("docs/ci-gating.md", "$ pytest-roofline hw show h100")
@check("docs/ci-gating.md", "$ pytest-roofline analyze matmul --m 32 --k 8192 --n 8192 --hw "
       "h100,tpu-v5e")
@check("docs/ci-gating.md", "$ pytest-roofline analyze model llama-3-8b --phase decode --batch 8 "
       "--context 4096 --hw h100")
@check("docs/ci-gating.md", "$ pytest-roofline analyze model resnet-50 --batch 32 --dtype int8 "
       "--fusion none --hw l4")
@check("docs/ci-gating.md", "$ pytest-roofline analyze model llama-3-8b --phase prefill --batch 3 "
       "--seq 100,200,300 --hw h100")
@check("docs/ci-gating.md", "$ pytest-roofline sweep matmul --param m --range 1:8192 --k 8192 "
       "--n 8192 --hw h100,tpu-v5e")
def _cli(block: Block, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("monkeypatch").setenv("COLUMNS", "200")
    run_shown_commands(block)


COMPARE_SUITE = "docs/ci-gating.md", "# t.py"


@check(*COMPARE_SUITE)
def _compare_suite(block: Block, request: pytest.FixtureRequest) -> None:
    """The suite the compare table shows, as on main: four tests pass (the table's check
    runs it on both sides)."""
    as_test_module(block, request.getfixturevalue("pytester"), passed=4)


@check("docs/ci-gating.md", "$ pytest-roofline compare .roofline/main.json roofline.json --fail "
       "time:5%")
def _cli_compare(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    monkeypatch = request.getfixturevalue("monkeypatch")
    suite = next(b for b in ALL if b.key == COMPARE_SUITE)
    pytester.makepyfile(t=suite.text)
    runpytest(pytester, "--roofline-save=main", "t.py")
    monkeypatch.setenv("ROUND", "new")
    runpytest(pytester, "--roofline-json=roofline.json", "t.py")
    monkeypatch.setenv("COLUMNS", "80")
    (argv, shown), = commands(block.text)
    code, out, err = cli(*argv[1:], cwd=pytester.path)
    assert code == 1, err
    assert_shown(shown, out, whole=True, exact=True)


GITHUB_STEP = """
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", regime="compute", workload=ops.matmul(4096, 4096, 4096))
def test_big():
    pass
"""


@check("docs/ci-gating.md", "- uses: actions/cache@v4")
def _github_job(block: Block, request: pytest.FixtureRequest) -> None:
    """The job's two branches run, main first, with $GITHUB_STEP_SUMMARY set."""
    import yaml

    pytester = request.getfixturevalue("pytester")
    monkeypatch = request.getfixturevalue("monkeypatch")
    steps = yaml.safe_load(block.text)
    script = steps[1]["run"]
    pytester.makepyfile(test_block=GITHUB_STEP)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
    for ref in ("refs/heads/main", "refs/pull/1/merge"):
        text = script.replace("${{ github.ref }}", ref)
        branch = text.split("then", 1)[1].split("else")
        command = (branch[0] if ref.endswith("main") else branch[1].split("fi")[0])
        args = command.replace("\\\n", " ").split()[1:]
        assert runpytest(pytester, *args).ret == 0
    assert (pytester.path / ".roofline" / "main.json").is_file()


@check("docs/ci-gating.md", "pytest --roofline-json roofline.json")
def _report_as_baseline(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(pytester.path / "summary.md"))
    pytester.makepyfile(test_block=GITHUB_STEP)
    assert runpytest(pytester, "--roofline-json=main-roofline.json").ret == 0
    first, second = block.text.strip().splitlines()
    assert runpytest(pytester, *first.split()[1:]).ret == 0
    code, _out, err = cli(*second.split()[1:], cwd=pytester.path)
    assert code == 0, err
    assert "test_big" in (pytester.path / "summary.md").read_text()


@check("docs/ci-gating.md", "[pytest]")
def _gate_ini(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    pytester.makeini(block.text)
    pytester.makepyfile(test_block=SMALL_SUITE)
    assert runpytest(pytester, "--roofline-compare").ret == 4     # missing = error
    assert runpytest(pytester, "--roofline-save").ret == 0
    assert runpytest(pytester, "--roofline-compare").ret == 0


@check("docs/ci-gating.md", "from pytest_roofline.report import ascii_plot, baseline, "
       "markdown, plot")
def _from_python(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("matplotlib")
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=SMALL_SUITE)
    assert runpytest(pytester, "--roofline-save=main", "--roofline-json=roofline.json").ret == 0
    with contextlib.redirect_stdout(io.StringIO()):   # in the project that ran the suite
        scope = python(block, cwd=pytester.path)
    assert scope["result"].failed is False  # type: ignore[attr-defined]
    assert (pytester.path / "chart.png").stat().st_size > 0


# -- docs/measure.md -----------------------------------------------------------------------

@check("docs/measure.md", "pytest-roofline: calibrating host (cpu) on first use; cached in "
       "~/.cache/pytest-roofline/host-1a2b3c4d5e6f.yaml ...")
def _first_use(block: Block, request: pytest.FixtureRequest) -> None:
    """The lines of a first use; the measuring itself is the session's quick calibration."""
    from pytest_roofline.measuring import calibration

    cached = request.getfixturevalue("quick_host_cache")
    monkeypatch = request.getfixturevalue("monkeypatch")
    from pytest_roofline.specfiles import load_yaml

    monkeypatch.setenv("XDG_CACHE_HOME", str(cached))
    spec = load_yaml(calibration.cache_path("cpu"))
    monkeypatch.setattr(calibration, "calibrate", lambda device, quick=False: (spec, []))
    home = request.getfixturevalue("tmp_path")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        calibration.load("cpu")
    real = re.sub(r"host-[0-9a-f]+\.yaml", "host-1a2b3c4d5e6f.yaml",
                  err.getvalue().replace(str(home), "~"))
    assert_shown(block.text, real, timings=True)


@check("docs/measure.md", "pytest-roofline calibrate [--device cpu|cuda[:N]] [-o FILE] "
       "[--quick] [--json]")
def _calibrate_usage(block: Block, request: pytest.FixtureRequest) -> None:
    with pytest.raises(SystemExit):
        cli("calibrate", "--help")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        from pytest_roofline.cli import main
        main(["calibrate", "--help"])
    for option in re.findall(r"--\w+", block.text):
        assert option in out.getvalue(), option


@check("docs/measure.md", "import pytest_roofline as rl")
def _measure_python(block: Block, request: pytest.FixtureRequest) -> None:
    """As written, with no name given: it imports and builds what it uses."""
    request.getfixturevalue("host_cache")
    scope = python(block)
    result = scope["r"]
    # a quick calibration taken on a busy machine may read below the run: then there is no
    # efficiency, and the result says why (above the roof, within its physical limit: the
    # theoretical peak), never a figure above 1
    efficiency = result.efficiency  # type: ignore[attr-defined]
    assert (efficiency is None and any(  # at the bound within noise, above the roof
        w in result.notes[-1] for w in ("above the roof", "at the bound"))  # type: ignore[attr-defined]
            ) or 0 < efficiency <= 1
    assert scope["m"].parallelism > 0  # type: ignore[attr-defined]


SLOW_ADD = """
import time
import numpy as np
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="host", regime="memory", min_efficiency=0.5)
def test_slow_add(roofline):
    roofline.add(ops.elementwise(1024, inputs=2, outputs=1, dtype="fp64"))
    roofline.measure(time.sleep, 0.002)
"""

FAST_ADD = """
import numpy as np
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="host", regime="memory", min_efficiency=0.5)
def test_fast_add(roofline):
    n = 4_000_000                                     # 96 MB, beyond the last-level cache
    a, b, c = np.ones(n), np.ones(n), np.empty(n)     # a tenth of what it declares
    roofline.add(ops.elementwise(10 * n, inputs=2, outputs=1, dtype="fp64"))
    roofline.measure(np.add, a, b, out=c)
"""


@check("docs/measure.md", "roofline: expected efficiency >= 50% on host (fp64), but measured "
       "1.73 ms (spread 6%) ag")
@check("docs/measure.md", "roofline: measured 2.84 ms is faster than the roofline bound 28 ms "
       "(limit 21.2 ms) on")
def _measured_failure(block: Block, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("host_cache")
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=FAST_ADD if "faster" in block.text else SLOW_ADD)
    result = runpytest(pytester, "-rf")
    result.assert_outcomes(failed=1)
    real = "\n".join(unwrap(result.outlines))  # the failure whole, as the page shows it
    # the load beside the timing and the calibration is this machine's: its words dropped
    real = re.sub(r"; (other cores busy: [\d.]+ when \w+(, [\d.]+ when calibrated)?|"
                  r"calibrated under load)", "", real)
    if "faster" in block.text:  # which cache holds 480 kB, and the cache sizes, are this machine's
        real = re.sub(r"fits in \w+ \S+ \w+\);", "fits in L2 524 kB);", real)
    assert_shown(block.text, real, timings=True)


@check("docs/measure.md", "PYTEST_ROOFLINE_TIMING=1 python -m pytest "
       "tests/test_measure_acceptance.py")
def _acceptance(block: Block, request: pytest.FixtureRequest) -> None:
    """Without the variable the timed tests are skipped, naming it; with it (set for this
    suite) they run for real."""
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ROOFLINE_TIMING"}
    if os.environ.get("PYTEST_ROOFLINE_TIMING") == "1":
        env["PYTEST_ROOFLINE_TIMING"] = "1"
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rs",
                           "tests/test_measure_acceptance.py"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:]
    if "PYTEST_ROOFLINE_TIMING" not in env:
        assert "PYTEST_ROOFLINE_TIMING=1" in done.stdout and " skipped" in done.stdout


# -- docs/models.md ------------------------------------------------------------------------

@check("docs/models.md", "import json")
def _hf_config(block: Block, request: pytest.FixtureRequest) -> None:
    """path/to/... stand for the Hugging Face files of tests/data/hf."""
    scope = python(block, replace={
        "path/to/DeepSeek-V3/config.json": str(HF / "deepseek-v3.json"),
        "path/to/config.json": str(HF / "qwen3-8b.json")})
    assert scope["v3"].config.name  # type: ignore[attr-defined]


@check("docs/models.md", "pytest-roofline analyze model path/to/config.json --phase decode "
       "--hw h200 --batch 64 \\")
def _hf_cli(block: Block, request: pytest.FixtureRequest) -> None:
    run_shown_commands(Block(block.path, block.line, "", "$ " + block.text),
                       replace={"path/to/config.json": str(HF / "deepseek-v3.json")})


# -- docs/plugin.md ------------------------------------------------------------------------

@check("docs/plugin.md", "@pytest.mark.roofline(hw=None, regime=None, *, workload=None, "
       "flops=None, bytes=None,")
def _marker_signature(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    result = runpytest(pytester, "--markers")
    assert_shown(block.text, result.stdout.str())


PLUGIN_PRELUDE = """
import pytest
from pytest_roofline import models, ops
"""


@check("docs/plugin.md", "# a regime per parameter")
@check("docs/plugin.md", "# shapes known only when the test runs")
def _fixture_examples(block: Block, request: pytest.FixtureRequest) -> None:
    as_test_module(block, request.getfixturevalue("pytester"),
                   passed=max(block.text.count("pytest.param"), 1))


@check("docs/plugin.md", "_____________________ ERROR at setup of test_unknown_chip "
       "______________________")
def _unknown_chip(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=PLUGIN_PRELUDE + """
@pytest.mark.roofline(hw="h1000", workload=ops.matmul(64, 64, 64))
def test_unknown_chip():
    pass
""")
    result = runpytest(pytester)
    result.assert_outcomes(errors=1)
    assert_shown(block.text, result.stdout.str())


@check("docs/plugin.md", "________________________ ERROR collecting test_gemm.py "
       "_________________________")
def _collection_error(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_gemm="""import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", workload=ops.matmul(-5, 4096, 4096))
def test_gemm():
    pass
""")
    result = runpytest(pytester)
    assert result.ret == 2
    assert_shown(block.text, result.stdout.str())


@check("docs/plugin.md", "pytest-benchmark median 14.2 us, timed on this machine: reported, "
       "not set")
def _benchmark_on_a_named_chip(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("pytest_benchmark")
    pytest.importorskip("torch")
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_vadd="""import pytest
import torch

def vadd(x, y):
    return x + y

@pytest.mark.roofline(hw="h100", regime="memory", trace=True)
def test_vadd(benchmark):
    benchmark(vadd, torch.randn(4096), torch.randn(4096))
""")
    result = pytester.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider",
                                           "--benchmark-max-time=0.01", "-rA")
    result.assert_outcomes(passed=1)
    assert_shown(block.text, result.stdout.str(), timings=True)


@check("docs/plugin.md", "{")
def _json_report(block: Block, request: pytest.FixtureRequest) -> None:
    """The example's keys are the report's; its figures are examples/test_gemm.py's, to the
    digits shown."""
    tmp = request.getfixturevalue("tmp_path")
    done = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                           "examples/test_gemm.py::test_projection",
                           f"--roofline-json={tmp}/r.json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:]
    shown = json.loads(block.text.replace('"..."', '"x"'))
    real = json.loads((tmp / "r.json").read_text())
    assert set(shown) == set(real)
    assert set(shown["settings"]) == set(real["settings"])
    record = next(r for r in real["results"] if r["nodeid"] == shown["results"][0]["nodeid"])
    example = shown["results"][0]
    assert set(example) == set(record)
    for key, value in example.items():
        if isinstance(value, float):
            assert record[key] == pytest.approx(value, rel=5e-3), key
        else:
            assert record[key] == value, key


@check("docs/plugin.md", "ERROR: --roofline-derate: '1.5' is not allowed; expected a fraction "
       "of peak in (0, 1] such as 0.7 or '70%'")
def _bad_derate(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    pytest_error(block, pytester, "--roofline-derate=1.5")


OUR_CHIP = "docs/plugin.md", "# specs/our-accelerator.yaml"


@check(*OUR_CHIP)
def _our_chip(block: Block, request: pytest.FixtureRequest) -> None:
    """The chip file the conftest names loads as a chip (the conftest's check uses it)."""
    from pytest_roofline import get_hardware

    path = request.getfixturevalue("tmp_path") / "our-accelerator.yaml"
    path.write_text(block.text)
    assert get_hardware(str(path)).name == "our-accelerator"


@check("docs/plugin.md", "# conftest.py")
def _hooks(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    monkeypatch = request.getfixturevalue("monkeypatch")
    monkeypatch.setenv("CI_JOB_ID", "42")
    project = pytester.path / "project"       # pytest runs from elsewhere than the conftest
    (project / "specs").mkdir(parents=True)
    chip = next(b for b in ALL if b.key == OUR_CHIP)
    (project / "specs" / "our-accelerator.yaml").write_text(chip.text)
    (project / "conftest.py").write_text(block.text)
    (project / "test_block.py").write_text(PLUGIN_PRELUDE + HOOKS.replace(
        'hw="h100")\ndef test_fast', 'hw=["h100-sustained", "our-accelerator"])\ndef test_fast'))
    result = runpytest(pytester, "--roofline-json=r.json", "project")
    result.assert_outcomes(passed=1, failed=1)
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["ci"] == {"job": "42"}
    assert {r["hw"] for r in report["results"]} == {"h100-sxm", "h100-sustained",
                                                     "our-accelerator"}
    assert all(r["attainable_tflops"] > 0 for r in report["results"])


# -- docs/trace.md -------------------------------------------------------------------------

@check("docs/trace.md", "import torch")
def _trace_snippet(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    scope = python(block)
    import pytest_roofline as rl
    assert rl.analyze(scope["w"], "h100").regime == "memory"  # the comment's value


@check("docs/trace.md", "from pytest_roofline import Tracer")
def _tracer(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    scope = python(block)
    assert scope["w"].flops == 2 * 64 ** 3  # type: ignore[attr-defined]


@check("docs/trace.md", "import pytest")
def _trace_tests(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    as_test_module(block, request.getfixturevalue("pytester"), passed=3)


@check("docs/trace.md", "# trace=my_softmax: the kernel, not the test")
def _trace_my_softmax(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    pytester = request.getfixturevalue("pytester")
    shown = {}
    for trace in ("trace=my_softmax", "trace=True"):
        pytester.makepyfile(test_block=block.text.replace("trace=my_softmax", trace))
        runpytest(pytester, "--roofline-json=out.json").assert_outcomes(passed=1)
        (record,) = json.loads((pytester.path / "out.json").read_text())["results"]
        shown[trace] = record
    # the paragraph above the block: 33.6 MB and 10 us on H100, 67.1 MB under trace=True
    assert shown["trace=my_softmax"]["bytes"] == 2 * 4096 * 1024 * 4
    assert round(shown["trace=my_softmax"]["time_s"] * 1e6, 1) == 10.0
    assert shown["trace=True"]["bytes"] == 2 * shown["trace=my_softmax"]["bytes"]


@check("docs/trace.md", "import torch, transformers")
def _whole_hf_model(block: Block, request: pytest.FixtureRequest) -> None:
    """As written, in a fresh interpreter (not this suite's, whose conftest declares
    torchvision's ops): it traces the model whole; or, where torchvision's wheel does not load
    beside this torch, it fails with the message the page names, and runs once the two ops
    are declared (standing for the torchvision built for this torch, the page's remedy)."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    code = block.text + ("assert not w.unknown and w.flops > 0\n"
                         "assert any(k.name.endswith('_grouped_mm') for k in w.kernels)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, cwd=request.getfixturevalue("tmp_path"))
    if done.returncode != 0:
        assert "operator torchvision::nms does not exist" in done.stderr, done.stderr[-3000:]
        before = (ROOT / "docs" / "trace.md").read_text().split(block.text)[0]
        assert "operator torchvision::nms does not exist" in " ".join(before.split())  # said
        python_process(f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
                       "from zoo_setup import allow_torchvision_without_extension\n"
                       "assert allow_torchvision_without_extension()\n" + code)


@check("docs/trace.md", "# a Triton kernel: counted by running it in the interpreter "
                        "(TRITON_INTERPRET=1)")
def _triton_kernel(block: Block, request: pytest.FixtureRequest) -> None:
    """As written, in a fresh interpreter whose environment has no TRITON_INTERPRET (this
    suite's conftest sets it): the block sets it itself, before triton is imported."""
    pytest.importorskip("torch")
    pytest.importorskip("triton")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    # its asserts ran: counted as it ran, then by a FLOPs-only formula
    python_process(block.text + "print(scale_kernel.__name__)\n", env=env)


@check("docs/trace.md", "# a launch on meta tensors: nothing runs there, so it is replayed "
                        "once in the interpreter")
def _triton_replay(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    triton = pytest.importorskip("triton")
    if not triton.knobs.runtime.interpret:
        pytest.skip("Triton runs here in interpreter mode only (tests/conftest.py)")
    scope = python(block)  # its asserts ran: the meta launch counted by replay
    assert "double_kernel" in scope


CUSTOM_OP = "docs/trace.md", "# a custom op: unknown until it has a formula"


@functools.cache
def _custom_op_scope() -> dict[str, object]:
    """The custom-op block, run once per process (torch defines an op name once)."""
    block = next(b for b in ALL if b.key == CUSTOM_OP)
    return python(block)


@check(*CUSTOM_OP)
def _custom_op(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    scope = _custom_op_scope()  # its asserts ran: unknown, then counted by the formula
    assert "fancy_cost" in scope


@check("docs/trace.md", "trace(fancy): 1 op without a formula: mylib::fancy x1; strict tracing")
def _strict_message(block: Block, request: pytest.FixtureRequest) -> None:
    torch = pytest.importorskip("torch")
    import pytest_roofline as rl

    scope = _custom_op_scope()
    x = torch.empty(64, 128, device="meta")
    with pytest.raises(rl.TraceError) as raised:
        rl.Tracer(strict=True, name="trace(fancy)")(scope["fancy"], x,
                                                    torch.empty(128, 256, device="meta"))
    assert_shown(block.text, str(raised.value), whole=True)


@check("docs/trace.md", "roofline: cross-check: the declared and traced workloads disagree by "
       "more than 0.02 on matrix FLOPs (declared 'matmul(4x256x512, bf16)', traced "
       "'trace(test_wrong_declaration)'):")
def _cross_check(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block="""
import pytest
import torch
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", workload=ops.matmul(4, 256, 512), trace=True,
                      cross_check=0.02)
def test_wrong_declaration():
    a = torch.ones(4, 256, dtype=torch.bfloat16)
    b = torch.ones(256, 256, dtype=torch.bfloat16)
    assert (a @ b).shape == (4, 256)
""")
    result = runpytest(pytester)
    result.assert_outcomes(failed=1)
    assert_shown(block.text, result.stdout.str())


# -- specs ---------------------------------------------------------------------------------

@check("specs/hardware/README.md", "name: h100-sxm                # canonical name: lowercase "
       "letters, digits, '.', '-', '_'")
@check("specs/hardware/README.md", "name: h100-derated")
def _hardware_yaml(block: Block, request: pytest.FixtureRequest) -> None:
    from pytest_roofline import get_hardware

    path = request.getfixturevalue("tmp_path") / "chip.yaml"
    path.write_text(block.text)
    chip = get_hardware(str(path))
    assert chip.memory_bandwidth > 0


@check("specs/models/README.md", "name: llama-3-8b              # canonical name, matched "
       "case-insensitively")
@check("specs/models/README.md", "name: resnet-50")
def _model_yaml(block: Block, request: pytest.FixtureRequest) -> None:
    """The ResNet example loads as it stands. The transformer block lists every field of the
    schema: the fields of other architectures (a sliding window, latent attention, a shared
    expert width, a published MoE count) are dropped, and the rest is Llama 3 8B, whose
    parameter count matches its card's 8.03e+9 within 0.1%."""
    import yaml

    from pytest_roofline import models
    data = yaml.safe_load(block.text)
    for other in ("sliding_window", "local_layers", "kv_lora_rank", "qk_rope_head_dim",
                  "q_lora_rank", "v_head_dim", "shared_intermediate", "active_params"):
        data.pop(other, None)
    path = request.getfixturevalue("tmp_path") / "model.yaml"
    path.write_text(yaml.safe_dump(data))
    model = models.load(str(path))
    assert model.params == pytest.approx(data["params"]["value"], rel=1e-3)


# -- docs/multichip.md ---------------------------------------------------------------------

def python_process(code: str, timeout: int = 300, env: dict[str, str] | None = None) -> str:
    """*code* in a fresh interpreter (a block that sets up jax devices or a process group
    changes its process for good), from a folder of its own; returns its output."""
    import tempfile

    with tempfile.TemporaryDirectory() as elsewhere:
        done = subprocess.run([sys.executable, "-c", code], cwd=elsewhere, capture_output=True,
                              text=True, timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


SHARD_MAP = "docs/multichip.md", "import os"


@check(*SHARD_MAP)
def _shard_map(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("jax")
    python_process(block.text + "assert w.kernels[0].link_bytes == 1835008.0  # the comment\n")


@check("docs/multichip.md", "import torch, torch.distributed as dist")
def _fake_group(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    python_process(block.text + "assert w.kernels[0].link_bytes == 1835008.0  # the comment\n")


@check("docs/multichip.md", "import os  # the scaling book's X @ Y, D split over two TPU v5e")
def _book_matmul(block: Block, request: pytest.FixtureRequest) -> None:
    """As written, alone in a fresh interpreter (its imports, devices and chip its own);
    its chip is the scaling book's of tests/test_scaling_book.py, the figures it uses."""
    pytest.importorskip("jax")
    from test_scaling_book import BOOK_V5E

    assert "8.1e11" in block.text and "1.97e14" in block.text and "4.5e10" in block.text
    assert BOOK_V5E.memory_bandwidth == 8.1e11
    *head, last = block.text.rstrip().splitlines()
    python_process("\n".join(head) + f"\nassert {last.split('#')[0].strip()} == 4378  # the "
                   f"comment\n")


@check("docs/multichip.md", ">>> from pytest_roofline import models, analyze")
def _training_doctest(block: Block, request: pytest.FixtureRequest) -> None:
    _doctest(block, request)


@check("docs/multichip.md", "expected the footprint to fit in h100-sxm memory, but it needs "
       "169 GB of 80 GB (weights")
def _fits_knob(block: Block, request: pytest.FixtureRequest) -> None:
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=PLUGIN_PRELUDE + """
@pytest.mark.roofline(hw="h100", fits=True)
def test_train(roofline):
    roofline.add(models.load("llama-3-8b").train_step(1, 8192))
""")
    result = runpytest(pytester)
    result.assert_outcomes(failed=1)
    assert_shown(block.text, result.stdout.str())


@check("docs/multichip.md", "$ pytest-roofline plan llama-3-70b --hw h100 --chips 8 --ttft 500ms "
       "--tpot 50ms --top 3")
def _plan_command(block: Block, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("monkeypatch").setenv("COLUMNS", "80")  # the page shows 80
    run_shown_commands(block)


@check("docs/multichip.md", "import pytest")
def _plan_marker(block: Block, request: pytest.FixtureRequest) -> None:
    as_test_module(block, request.getfixturevalue("pytester"), passed=1)


SHARD_TESTS = """
import pytest
from pytest_roofline import ops

@pytest.mark.roofline(hw="h100", regime="compute", workload=ops.matmul({m}, 4096, 4096))
def test_{name}():
    pass
"""


@check("docs/ci-gating.md", "jobs:")
def _shards(block: Block, request: pytest.FixtureRequest) -> None:
    """Every shell step of the three jobs runs, in order, in a folder standing for the
    repository: the wheel is built from a copy of this project's source, installed in a fresh
    virtual environment (offline: its dependencies are this interpreter's), and the matrix
    jobs' pytest and the gate's commands run from that environment on two test folders (one
    test each), against a baseline of both. Artifacts are the files the steps leave."""
    import shutil
    import site
    import sysconfig

    import yaml

    pytester = request.getfixturevalue("pytester")
    monkeypatch = request.getfixturevalue("monkeypatch")
    repo = pytester.path
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(repo / "summary.md"))
    jobs = yaml.safe_load(block.text)["jobs"]
    assert list(jobs) == ["wheel", "roofline", "gate"]
    # the repository: its tests, and pytest-roofline's source where the wheel job reads it
    source = repo / "third_party" / "pytest-roofline"
    tracked = subprocess.run(["git", "ls-files", "pytest_roofline", "specs", "pyproject.toml",
                              "README.md"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    for name in tracked:
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    suites = jobs["roofline"]["strategy"]["matrix"]["suite"]
    for index, suite in enumerate(suites):
        folder = repo / suite
        folder.mkdir(parents=True)
        (folder / f"test_{index}.py").write_text(SHARD_TESTS.format(m=2048, name=index))
    assert runpytest(pytester, "--roofline-save=main", "-p", "no:xdist").ret == 0
    # a fresh environment whose dependencies are this interpreter's (no network here)
    venv = repo / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    purelib = Path(sysconfig.get_paths(vars={"base": str(venv), "platbase": str(venv)})[
        "purelib"])
    deps = [p for p in sys.path if p.endswith("site-packages")] + site.getsitepackages()
    (purelib / "deps.pth").write_text("\n".join(dict.fromkeys(deps)) + "\n")
    # pytest comes with the dependencies here, not installed in the environment: its command
    shim = venv / "bin" / "pytest"
    shim.write_text(f'#!/bin/sh\nexec "{venv / "bin" / "python"}" -m pytest "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"

    def run(command: str, **fill: str) -> None:
        for key, value in fill.items():
            command = command.replace("${{ " + key + " }}", value)
        command = command.replace("pip wheel ", "pip wheel -q --no-build-isolation --no-index ")
        command = command.replace("pip install ", "pip install -q --no-index --no-deps ")
        done = subprocess.run(command, shell=True, cwd=repo, env=env, capture_output=True,
                              text=True)
        assert done.returncode == 0, (command, done.stdout[-3000:], done.stderr[-3000:])

    def shell_steps(job: str) -> list[str]:
        return [step["run"] for step in jobs[job]["steps"] if "run" in step]

    for command in shell_steps("wheel"):
        run(command)
    assert len(list((repo / "dist").glob("pytest_roofline-*.whl"))) == 1
    for index, suite in enumerate(suites):
        for command in shell_steps("roofline"):
            run(command, **{"matrix.suite": suite, "strategy.job-index": str(index)})
    where = subprocess.run([str(venv / "bin" / "python"), "-c",
                            "import pytest_roofline; print(pytest_roofline.__file__)"],
                           env=env, capture_output=True, text=True, check=True).stdout
    assert where.startswith(str(purelib)), where  # the wheel's, not this checkout's
    shown = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest_roofline", "profile",
                            "--example", "mi300x-jax-gemm", "--top", "1"], env=env, cwd=venv,
                           capture_output=True, text=True)  # the wheel holds its examples
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("mi300x_tracelens_jax08_gemm.xplane.pb on mi300x"), shown
    for command in shell_steps("gate"):
        run(command)
    merged = json.loads((repo / "roofline.json").read_text())
    assert len(merged["results"]) == 2 and len(merged["merged_from"]) == 2
    assert "test_0" in (repo / "summary.md").read_text()


# -- docs/profile.md -----------------------------------------------------------------------

@check("docs/profile.md", "import pytest")
def _profile_in_a_test(block: Block, request: pytest.FixtureRequest) -> None:
    """Runs against this machine's (quick) calibration: the kernels' efficiencies are its
    own, so only the guard may fail it (a quick calibration on a busy machine reads low)."""
    pytest.importorskip("torch")
    request.getfixturevalue("host_cache")
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=block.text)
    result = runpytest(pytester, "-rf", f"--roofline-json={pytester.path / 'r.json'}")
    [record] = json.loads((pytester.path / "r.json").read_text())["results"]
    assert record["profile"][0]["rows"] and record["profile"][0]["hw"] == "host"
    outcomes = result.parseoutcomes()
    if outcomes.get("failed"):
        assert "faster than physics" in result.stdout.str()


@check("docs/profile.md", "roofline: kernel matmul(64x128f32,128x256f32) ran at 2.3e-06% of")
@check("docs/profile.md", "roofline: faster than physics on slowchip: matmul(64x128f32,128x")
def _profile_failures(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    from test_profile_plugin import FAST, SLOW, TESTS

    pytester = request.getfixturevalue("pytester")
    pytester.makefile(".yaml", fast=FAST, slow=SLOW)
    pytester.makepyfile(test_kernels=TESTS)
    result = runpytest(pytester, "-p", "no:randomly")
    # the measured times are this machine's, in its units (14 ms on one, 69 us on another)
    real = re.sub(r"measured ([\d.]+) (?:ns|us|ms|s) (over|for)", r"measured \1 ms \2",
                  result.stdout.str())
    assert_shown(block.text, real, timings=True)


@check("docs/profile.md", "$ pytest-roofline profile --example v100-hta --top 5")
def _profile_cli(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    request.getfixturevalue("monkeypatch").setenv("COLUMNS", "80")
    for cwd in (ROOT, request.getfixturevalue("tmp_path")):  # a clone's root, and elsewhere
        run_shown_commands(block, cwd=cwd)


@check("docs/profile.md", "from pathlib import Path")
def _profile_python(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    with contextlib.redirect_stdout(io.StringIO()):
        for cwd in (ROOT, None):   # from the repository's root, and from elsewhere
            scope = python(block, cwd=cwd)
    assert scope["profile"].hw == "a100-80gb-sxm"  # type: ignore[attr-defined]


def _dlrm_job(tmp_path: Path) -> Path:
    """PARAM's 8-rank DLRM job unpacked (tests/data/traces/README.md) into *tmp_path*."""
    import tarfile

    with tarfile.open(ROOT / "tests" / "data" / "traces" / "param_dlrm_kineto.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path


@check("docs/profile.md", "$ pytest-roofline profile dlrm_kineto --fail-straggler 30% --top 3")
def _profile_job_cli(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    request.getfixturevalue("monkeypatch").setenv("COLUMNS", "80")
    run_shown_commands(block, cwd=_dlrm_job(request.getfixturevalue("tmp_path")))


@check("docs/profile.md", "from pytest_roofline import read_job")
def _profile_job_python(block: Block, request: pytest.FixtureRequest) -> None:
    pytest.importorskip("torch")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # from the folder the page's job is in
        python(block, cwd=_dlrm_job(request.getfixturevalue("tmp_path")))
    text = (ROOT / "docs" / "profile.md").read_text()
    shown = text.split("prints `", 1)[1].split("`:", 1)[0]  # the page's shown output
    assert shown.startswith("[\"rank 3's step is 28.2% slower")
    assert " ".join(shown.split()) == out.getvalue().strip()


@check("docs/profile.md", "import jax")
def _profile_jax_in_a_test(block: Block, request: pytest.FixtureRequest) -> None:
    """Against this machine's (quick) calibration, as the torch block: only the guard may
    fail it."""
    pytest.importorskip("jax")
    request.getfixturevalue("host_cache")
    pytester = request.getfixturevalue("pytester")
    pytester.makepyfile(test_block=block.text)
    result = runpytest(pytester, "-rf", f"--roofline-json={pytester.path / 'r.json'}")
    [record] = json.loads((pytester.path / "r.json").read_text())["results"]
    profile = record["profile"][0]
    assert profile["hw"] == "host" and profile["priced_share"] > 0.99
    assert any("dot_general" in row["kernels"] for row in profile["rows"])
    if result.parseoutcomes().get("failed"):
        assert "faster than physics" in result.stdout.str()


@check("docs/profile.md", "$ pytest-roofline profile --example mi300x-jax-gemm --top 5")
def _profile_jax_cli(block: Block, request: pytest.FixtureRequest) -> None:
    request.getfixturevalue("monkeypatch").setenv("COLUMNS", "80")
    for cwd in (ROOT, request.getfixturevalue("tmp_path")):  # a clone's root, and elsewhere
        run_shown_commands(block, cwd=cwd)


# -- docs/mutation.md ----------------------------------------------------------------------

@check("docs/mutation.md", "python tools/mutate.py pytest_roofline/efficiency.py tests/test_effi")
def _mutation_commands(block: Block, request: pytest.FixtureRequest) -> None:
    """Every command names a module and test files that exist; the first runs, on one line
    (SPREAD_CAP's: a changed cap fails tests/test_efficiency.py), and kills its mutant."""
    lines = [line.split() for line in block.text.strip().splitlines()]
    for words in lines:
        assert words[:2] == ["python", "tools/mutate.py"], words
        paths = [w.split("::")[0] for w in words[2:] if not w.startswith("--")]
        assert all((ROOT / path).is_file() for path in paths), words
    done = subprocess.run([sys.executable, *lines[0][1:], "--lines", "51-51"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("1 killed of 1 mutants (0 by the time limit), "
                                        "0 survived (0 on lines no given test runs)"), \
        done.stdout
