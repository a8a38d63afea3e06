"""What the pytest plugin costs, measured side by side in one run.

    python benchmarks/bench_plugin.py [--tests 2000] [--repeat 7] [--autoload]
                                      [--against OTHER_ENV/bin/python] [--instructions]

1. Installed but unused: a suite without roofline tests, run as a user's environment runs it
   (installed plugins auto-loaded) with the plugin and without it (``-p no:roofline``: pytest
   does not import it); and which of pint, numpy and yaml the plugin imported. (Loading the
   plugin with ``-p roofline`` under PYTEST_DISABLE_PLUGIN_AUTOLOAD would also charge it
   pytest's search of every installed distribution's entry points for that name.)
2. 2,000 parametrized tests, unmarked and marked with a workload in the marker
   (``flops=..., bytes="1 GB"``). The target is at most 1.05x the unmarked time.
3. The same tests each declaring a matmul of their own through the fixture, against
   unmarked tests that build the same matmul (the plugin's share of the cost alone). A third
   row runs the unmarked tests with a do-nothing function-scoped fixture of their own: the
   floor that pytest's fixture machinery sets, whatever the plugin does.
4. Memory of the pytest-xdist controller (``-n 2``), which receives every result: its peak
   resident set with --memory-tests marked tests (default 5,000), with the plugin and with
   ``-p no:roofline``; the difference per result is what the plugin holds per result.

Each configuration runs --repeat times, interleaved so that drift on a busy machine hits all
alike; the table shows the median and the spread (min-max) of CPU times (user + system of
the pytest process: on a shared machine they move far less with others' load than wall
times). With --instructions, each configuration runs once under valgrind and the table counts
the instructions it executed instead (no memory figure): a busy machine moves CPU times by
10-30% from run to run, never an instruction count. --against times another environment
(another revision installed) beside this one, run by run. By default other
plugins are not auto-loaded (PYTEST_DISABLE_PLUGIN_AUTOLOAD=1, the plugin is loaded with
``-p roofline``), so the figures are the plugin's alone; --autoload runs with every installed
plugin instead, as a user's environment would.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

UNUSED = """
import sys

def test_{i}():
    pass

def test_heavy_modules():
    with open("heavy.txt", "w") as handle:
        handle.write(" ".join(m for m in ("pint", "numpy", "yaml") if m in sys.modules))
"""

PLAIN = """
import pytest

@pytest.mark.parametrize("i", range({n}))
def test_kernel(i):
    pass
"""

MARKED = """
import pytest

@pytest.mark.parametrize("i", range({n}))
@pytest.mark.roofline(hw="h100", regime="memory", flops=1e9, bytes="1 GB")
def test_kernel(i):
    pass
"""

PLAIN_MATMUL = """
import pytest
from pytest_roofline import ops

@pytest.mark.parametrize("i", range({n}))
def test_kernel(i):
    ops.matmul(i + 1, 4096, 4096)
"""

PLAIN_FIXTURE = """
import pytest
from pytest_roofline import ops


@pytest.fixture
def nothing():
    return None


@pytest.mark.parametrize("i", range({n}))
def test_kernel(i, nothing):
    ops.matmul(i + 1, 4096, 4096)
"""

FIXTURE = """
import pytest
from pytest_roofline import ops

@pytest.mark.parametrize("i", range({n}))
@pytest.mark.roofline(hw="h100", regime=["compute", "memory"])
def test_kernel(i, roofline):
    roofline.add(ops.matmul(i + 1, 4096, 4096))
"""


MEMORY_CONFTEST = """
import resource


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):  # the controller
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
        with open("peak_rss_kib.txt", "w") as handle:
            handle.write(str(peak))
"""


def write_memory_suite(root: Path, n: int, name: str = "memory", source: str = MARKED) -> Path:
    folder = root / name
    folder.mkdir()
    (folder / "conftest.py").write_text(MEMORY_CONFTEST)
    (folder / "test_suite.py").write_text(textwrap.dedent(source.format(n=n)))
    return folder


def peak_rss(folder: Path, args: list[str], env: dict[str, str]) -> float:
    """The controller's peak resident set in MiB, for one run of the suite in *folder*."""
    run(folder, ["-n", "2", "-p", "xdist", "-p", "no:randomly", *args], env)
    return int((folder / "peak_rss_kib.txt").read_text()) / 1024


def write_suites(root: Path, n: int) -> dict[str, Path]:
    suites = {}
    unused = root / "unused"
    unused.mkdir()
    (unused / "test_unused.py").write_text(
        "\n".join(UNUSED.format(i=i) if i == 0 else f"def test_{i}():\n    pass\n"
                  for i in range(200)))
    suites["unused"] = unused
    for name, source in (("plain", PLAIN), ("marked", MARKED), ("plain_matmul", PLAIN_MATMUL),
                         ("plain_fixture", PLAIN_FIXTURE), ("fixture", FIXTURE)):
        folder = root / name
        folder.mkdir()
        (folder / "test_suite.py").write_text(textwrap.dedent(source.format(n=n)))
        suites[name] = folder
    return suites


#: --instructions: count instructions under valgrind instead of timing (set by main)
INSTRUCTIONS = False
_VALGRIND = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]


def run(folder: Path, args: list[str], env: dict[str, str], python: str = sys.executable,
        count: bool = True) -> float:
    """The CPU time (user + system) of one pytest run: on a shared machine it moves far less
    with other people's load than the wall time does. With --instructions, the instructions
    the run executed, in G (valgrind's count: the same on a busy machine as on an idle one);
    *count* False: a warm-up, not counted."""
    counted = INSTRUCTIONS and count
    command = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, "."]
    if counted:
        command = [*_VALGRIND, *command]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {folder}:\n{done.stdout[-2000:]}"
                         f"{done.stderr[-2000:]}")
    if counted:
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if found is None:
            raise SystemExit(f"no instruction count from valgrind:\n{done.stderr[-2000:]}")
        return int(found.group(1).replace(",", "")) / 1e9
    return elapsed


Times = dict[str, dict[str, list[float]]]  # interpreter label -> configuration -> CPU times


def measure(configs: dict[str, tuple[Path, list[str]]], env: dict[str, str],
            repeat: int, pythons: dict[str, str]) -> Times:
    """Every configuration with every interpreter, interleaved run by run."""
    times: Times = {label: {name: [] for name in configs} for label in pythons}
    for folder, args in configs.values():  # warm-up: bytecode caches, disk cache
        for python in pythons.values():
            run(folder, args, env, python, count=False)
    for _ in range(repeat):
        for name, (folder, args) in configs.items():
            for label, python in pythons.items():
                times[label][name].append(run(folder, args, env, python))
    return times


def show(all_times: Times, baseline: str, title: str) -> None:
    print(f"\n{title}")
    for label, times in all_times.items():
        if len(all_times) > 1:
            print(f"  [{label}]")
        table(times, baseline)


def table(times: dict[str, list[float]], baseline: str) -> None:
    base = statistics.median(times[baseline])
    width = max(len(name) for name in times) + 2
    print(f"  {'configuration':<{width}}{'median':>9}{'min - max':>17}{'ratio':>8}{'diff':>9}")
    for name, values in times.items():
        median = statistics.median(values)
        spread = f"{min(values):.3f} - {max(values):.3f}"
        unit, scale, small = ("G", 1e3, "M") if INSTRUCTIONS else ("s", 1e3, "ms")
        diff = f"{(median - base) * scale:+.0f} {small}"
        print(f"  {name:<{width}}{median:>8.3f}{unit}{spread:>17}{median / base:>7.2f}x"
              f"{diff:>9}")
    print(f"  (ratio and diff: median against the median of '{baseline}')")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--autoload", action="store_true",
                        help="auto-load every installed plugin, as a user's environment would")
    parser.add_argument("--memory-tests", type=int, default=5000,
                        help="marked tests in the xdist memory figure (0: skip it)")
    parser.add_argument("--only-memory", action="store_true", help="the memory figure only")
    parser.add_argument("--against", metavar="PYTHON",
                        help="also time every configuration with this interpreter (an "
                             "environment with another revision installed), interleaved run "
                             "by run: a before/after table under the same load")
    parser.add_argument("--instructions", action="store_true",
                        help="count the instructions each run executes (valgrind, once per "
                             "configuration) instead of timing: figures a busy machine does "
                             "not move")
    options = parser.parse_args()
    if options.instructions:
        global INSTRUCTIONS
        INSTRUCTIONS = True
        options.repeat = 1  # a count repeats exactly
        options.memory_tests = 0  # valgrind's own memory would be measured
    pythons = {"this": sys.executable}
    if options.against:
        pythons = {"against": options.against, "this": sys.executable}
    env = dict(os.environ)
    # Bytecode is cached as in a user's environment, under a temporary prefix (nothing is
    # written next to the sources); without it every run would compile every module anew.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if options.instructions:
        env["PYTHONHASHSEED"] = "0"  # set-iteration order, so that a count repeats exactly
    if options.autoload:
        with_plugin: list[str] = []
        without_plugin = ["-p", "no:roofline"]
    else:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
        with_plugin, without_plugin = ["-p", "roofline"], []
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, repeat {options.repeat}, "
          f"plugins {'auto-loaded' if options.autoload else 'not auto-loaded'}")

    with tempfile.TemporaryDirectory() as tmp:
        env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        suites = write_suites(Path(tmp), options.tests)
        if options.memory_tests:
            memory(Path(tmp), options.memory_tests, env, with_plugin, without_plugin)
        if options.only_memory:
            return
        autoload = {k: v for k, v in env.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
        unused = measure({
            "200 tests, plugin installed": (suites["unused"], []),
            "200 tests, without the plugin": (suites["unused"], ["-p", "no:roofline"]),
        }, autoload, options.repeat, pythons)
        show(unused, "200 tests, without the plugin",
             "1. Installed but unused (installed plugins auto-loaded in both runs)")
        run(suites["unused"], [], autoload, count=False)  # the last run above had none
        heavy = (suites["unused"] / "heavy.txt").read_text().split()
        print(f"  heavy modules imported in the run with the plugin: {heavy or 'none'}")

        n = options.tests
        marked = measure({
            f"{n} tests, unmarked": (suites["plain"], with_plugin),
            f"{n} tests, marker with the workload": (suites["marked"], with_plugin),
        }, env, options.repeat, pythons)
        show(marked, f"{n} tests, unmarked", f"2. {n} parametrized tests (target <= 1.05x)")
        fixture = measure({
            f"{n} tests, unmarked, building a matmul": (suites["plain_matmul"], with_plugin),
            f"{n} tests, ... and using a do-nothing fixture": (suites["plain_fixture"],
                                                                with_plugin),
            f"{n} tests, marker + roofline.add(matmul)": (suites["fixture"], with_plugin),
        }, env, options.repeat, pythons)
        show(fixture, f"{n} tests, unmarked, building a matmul",
             f"3. {n} parametrized tests declaring a matmul each (target <= 1.10x)")
        for label, times in fixture.items():
            floor = statistics.median(times[f"{n} tests, ... and using a do-nothing fixture"])
            used = statistics.median(times[f"{n} tests, marker + roofline.add(matmul)"])
            per_test = (f"{(used - floor) * 1e6 / n:+.0f} k instructions" if INSTRUCTIONS
                        else f"{(used - floor) * 1e6 / n:+.0f} us")
            print(f"  [{label}] the plugin beyond pytest's own fixture machinery: "
                  f"{used / floor:.2f}x, {per_test} per test")


def memory(root: Path, n: int, env: dict[str, str], with_plugin: list[str],
           without_plugin: list[str]) -> None:
    import importlib.util

    print(f"\n4. Memory of the pytest-xdist controller (-n 2), {n} marked tests "
          f"(target <= 2 KB per result)")
    if importlib.util.find_spec("xdist") is None:
        print("  pytest-xdist is not installed: skipped")
        return
    folder = write_memory_suite(root, n)
    off = ["-p", "no:roofline"] if "-p" not in without_plugin else []
    plugin = peak_rss(folder, with_plugin, env)
    bare = peak_rss(folder, [*without_plugin, *off], env)
    report = peak_rss(folder, [*with_plugin, "--roofline-json=report.json"], env)

    def per_result(mib: float) -> str:
        return f"{mib - bare:8.1f} MiB = {(mib - bare) * 1024 / n:.1f} KiB per result"

    print(f"  peak RSS without the plugin        {bare:8.1f} MiB")
    print(f"  peak RSS with the plugin           {plugin:8.1f} MiB: {per_result(plugin)}")
    print(f"  ... and writing --roofline-json    {report:8.1f} MiB: {per_result(report)} "
          f"(the report is built once, at the end)")
    # The marked tests above share one marker, so their records are equal texts; here each
    # test declares a matmul of its own through the fixture, so every record differs (the
    # bare run: the same tests building the matmul, without the plugin)
    distinct = peak_rss(write_memory_suite(root, n, "memory_distinct", FIXTURE), with_plugin,
                        env)
    bare = peak_rss(write_memory_suite(root, n, "memory_distinct_bare", PLAIN_MATMUL),
                    [*without_plugin, *off], env)
    print("  every record distinct (fixture, a matmul of each test's own size):")
    print(f"  peak RSS without the plugin        {bare:8.1f} MiB")
    print(f"  peak RSS with the plugin           {distinct:8.1f} MiB: {per_result(distinct)}")


if __name__ == "__main__":
    main()
