"""pytest hooks of pytest-roofline: options, the ``roofline`` marker and fixture, the terminal
summary and the JSON report.

Only wiring lives here. The work is done by the modules beside it: ``options`` and ``state``
(options, checked into the session's settings), ``chips`` (chips registered for the
session), ``runner`` (each test's :class:`~pytest_roofline.judging.rooftest.RooflineTest`
and its verdict), ``session`` (the records of the run), and by the pytest-free layers below:
``judging`` (marker -> Expectation, Results -> verdicts) and ``report`` (summary, JSON). A
run with no roofline option imports no more than these hooks, their options and state and
hook specifications until a roofline test, a report or a hook asks for the session; the
baseline gate (``gate``) is registered when one of its options is given.

Where a test's records go: the process that ran the test keeps them in its session; a
pytest-xdist worker puts each in its call report instead (one ``roofline`` property, the JSON
text of ``[hw, fields]``), which the controller keeps as it is; the controller's
``get_session(config).records`` is the one list the summary, the JSON report and later
consumers read.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .options import GATE_OPTIONS, MARKER_HELP, ROOFLINE_OPTIONS, add_options, given, marker_help
from .state import SESSION_KEY, get_session, published_report, start_session

if TYPE_CHECKING:
    from collections.abc import Generator

    from ..judging.rooftest import RooflineTest
    from .runner import Runner

__all__ = ["SESSION_KEY", "get_session"]

_RUNNER_KEY = pytest.StashKey["Runner"]()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser, ROOFLINE_OPTIONS)
    add_options(parser, GATE_OPTIONS)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    from .registries import checkpoint

    checkpoint(early_config)  # before any conftest.py registers a chip, a model or a formula


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("markers", False):  # pytest --markers: wrapped to the terminal
        config.addinivalue_line("markers", marker_help(shutil.get_terminal_size().columns))
    else:  # one line, as pytest reads it for the marker's name
        config.addinivalue_line("markers", MARKER_HELP)
    from .runner import Runner

    runner = config.stash[_RUNNER_KEY] = Runner(config)
    config.pluginmanager.register(runner, "roofline-session")
    if given(config, GATE_OPTIONS):
        # Baselines, compare rules, Markdown and plots are a plugin of their own, registered
        # (and imported) only when asked for; pytest calls its pytest_configure on register
        from . import gate

        if not config.pluginmanager.is_registered(gate):  # (-p pytest_roofline.plugin.gate)
            config.pluginmanager.register(gate, "roofline-gate")
    from .chips import has_hardware_hooks, prepare_hardware

    hardware_hooks = has_hardware_hooks(config)
    if hardware_hooks or given(config, ROOFLINE_OPTIONS):
        session = start_session(config)  # a bad value is a usage error before any test
        if session.settings.specs or session.settings.hw or hardware_hooks:
            prepare_hardware(config, session, at_configure=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    from .registries import restore

    restore(config)  # chips, models and formulas registered during the session are its own


# its docstring's lines keep to 76 characters: pytest --fixtures prints them as they are,
# indented 4, and they fit 80 columns
@pytest.fixture
def roofline(request: pytest.FixtureRequest) -> RooflineTest:
    """The test's :class:`~pytest_roofline.judging.rooftest.RooflineTest`:
    declare its workload with ``roofline.add(workload)`` (several calls add
    up) and read its roofline with ``roofline.results`` /
    ``roofline.result("h100")``. After the test body passes, the ``roofline``
    marker's expectations are checked."""
    from .runner import TEST_KEY, _marks

    item = request.node
    if not isinstance(item, pytest.Item):
        raise pytest.UsageError("the roofline fixture is function-scoped: request it from a "
                                "test, or from a function-scoped fixture")
    if TEST_KEY in item.stash:
        return item.stash[TEST_KEY]
    # requested through request.getfixturevalue(), or the marker was not seen at set-up
    runner: Runner = request.config.stash[_RUNNER_KEY]
    return runner.start(item, _marks(item), need_workload=False)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, Any]:
    """A roofline error raised while a test module is imported (a bad size in a marker's
    ``workload=ops.matmul(...)``, built at import) becomes one line naming the file and line,
    instead of a traceback through the ops."""
    report = yield
    if report.failed:
        excinfo = getattr(getattr(report, "call", None), "excinfo", None)
        if excinfo is not None:
            from ..errors import RooflineError

            if isinstance(excinfo.value, RooflineError):
                from .message import Message

                report.longrepr = Message(_import_error_line(collector, excinfo))
    return report


@pytest.hookimpl(wrapper=True)
def pytest_report_to_serializable(report: Any) -> Generator[None, Any, Any]:
    """A pytest-xdist worker's report: a failure message of ours says so (:mod:`.message`)."""
    data = yield
    if data is not None and isinstance(report.longrepr, str) and report.failed:
        from .message import mark

        mark(report, data)
    return data


@pytest.hookimpl(wrapper=True)
def pytest_report_from_serializable(data: dict[str, Any]) -> Generator[None, Any, Any]:
    """On the pytest-xdist controller: a failure message of ours wraps on its terminal too."""
    from .message import unmark

    marked = unmark(data)
    report = yield
    if marked:
        from .message import restore

        return restore(report)
    return report


def _import_error_line(collector: pytest.Collector, excinfo: pytest.ExceptionInfo[Any]) -> str:
    name = collector.nodeid.split("::")[0] or collector.path.name
    where = name
    for entry in reversed(excinfo.traceback):
        if Path(entry.path) == collector.path:
            where = f"{name}:{entry.lineno + 1}"
            break
    return (f"{where}: {excinfo.value} (while importing the module: a workload given to a "
            f"marker is built at import; build it in the test with roofline.add() to make a "
            f"bad value fail that test only)")


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    from .runner import FIXTURE_MARK

    for item in items:
        if "roofline" in getattr(item, "fixturenames", ()) and \
                item.get_closest_marker("roofline") is None:
            item.add_marker(FIXTURE_MARK)


# -- the controller: the report, the summary -------------------------------------------------


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(SESSION_KEY, None)
    if state is None:  # no option, no roofline test: nothing to do
        return
    path = state.settings.json
    if state.is_worker or path is None:
        return
    from ..report.records import write_report

    report = published_report(config)
    try:
        write_report(path, report)
        state.json_path = str(path)
    except OSError as exc:
        from ..atomic import why_not_written

        state.json_error = f"--roofline-json: cannot write {path}: {why_not_written(exc, path)}"
    except (TypeError, ValueError) as exc:  # a value added by a hook that JSON cannot hold
        state.json_error = f"--roofline-json: cannot write {str(path)!r}: {exc}"
    if state.json_error and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def pytest_terminal_summary(terminalreporter: Any) -> None:
    config = terminalreporter.config
    session = config.stash.get(SESSION_KEY, None)
    if session is None or session.is_worker:  # None: no option, no roofline test
        return
    width = config.get_terminal_writer().fullwidth
    lines = session.summary_lines(width=width)
    if not (lines or session.json_path or session.json_error):
        return
    from ..text_table import wrap_line

    terminalreporter.write_sep("=", "roofline")
    for line in wrap_line(session.settings.convention(), width):
        terminalreporter.write_line(line)
    for line in lines:
        for part in wrap_line(line, width, hang=4):
            terminalreporter.write_line(part, red=line.endswith("FAIL"))
    notices = []  # a notice ends with the file it names: a path wraps whole, to be copied
    if session.json_path:
        count = f"{len(session)} result" + ("" if len(session) == 1 else "s")
        notices.append((f"JSON report ({count}): {session.json_path}", False))
    if session.json_error:
        notices.append((session.json_error, True))
    for notice, red in notices:
        for part in wrap_line(notice, width, hang=4):
            terminalreporter.write_line(part, red=red, bold=red)
