"""pytest hooks of pytest-roofline: options, the ``roofline`` marker and fixture, verdicts,
the terminal summary and the JSON report.

Only wiring lives here; the work is done by pytest-free modules: ``settings`` (options),
``marker`` (marker -> Expectation), ``fixture`` (the fixture's object), ``verdict``
(Results -> pass/fail lines), ``session`` (records on the controller), ``table`` (summary).
Tests without the marker or the fixture cost a marker lookup at setup and nothing more;
pint, numpy and yaml are imported when the first roofline test is set up, not before. A run
with no roofline option imports no more than these hooks, their options (``options``) and
hook specifications until a roofline test, a report or a hook asks for the session
(:func:`get_session`); the baseline gate (``gate``) is registered when one of its options
is given.

Where a test's records go: the call phase appends them to ``item.user_properties`` (so they
reach the pytest-xdist controller and JUnit XML); the controller collects them in
``pytest_runtest_logreport`` into ``get_session(config).records``, the one list the summary,
the JSON report and later consumers read.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from .options import GATE_OPTIONS, MARKER_HELP, Option, add_options, given
from .options import pick as pick_option

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Sequence

    from ..judging.marker import Expectation
    from ..judging.verdict import Check, Judgement
    from ..workload import Workload
    from .fixture import Roofline
    from .session import RooflineSession
    from .settings import Settings

SESSION_KEY = pytest.StashKey["RooflineSession"]()
_PLUGIN_KEY = pytest.StashKey["_SessionPlugin"]()


class _ItemState:
    """What the plugin knows of one roofline test while it runs."""

    __slots__ = ("expectation", "handle", "traced")

    def __init__(self, expectation: Expectation) -> None:
        self.expectation = expectation
        self.handle: Roofline | None = None
        self.traced: Workload | None = None  # what trace=True recorded of the test body


def get_session(config: pytest.Config) -> RooflineSession:
    """The session state: settings and (on the controller) every record of the run."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        session = _start_session(config)
    return session


def _start_session(config: pytest.Config) -> RooflineSession:
    """Check the options into the session's settings, and make its state. At configure when
    any roofline option or hook is there to check; otherwise when a roofline test, a summary
    or a report first asks for it, so that a run without any imports no more of the plugin
    than its hooks."""
    from .session import RooflineSession

    session = RooflineSession(_settings(config), is_worker=hasattr(config, "workerinput"))
    session.verbose = config.get_verbosity() >= 2
    config.stash[SESSION_KEY] = session
    return session


# -- hooks and options ---------------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


_OPTIONS: tuple[Option, ...] = (
    # (option, argparse keywords, ini type, help)
    ("--roofline-hw", {"metavar": "NAME", "action": "append"}, "args",
     "default chip(s) for roofline tests whose marker names none: a name, alias or spec "
     "path; repeat the option or separate with commas. The marker's hw= wins."),
    ("--roofline-specs", {"metavar": "PATH", "action": "append"}, "paths",
     "extra hardware spec file (*.yaml) or folder of them; repeatable."),
    ("--roofline-flops-per-mac", {"metavar": "{1,2}"}, "string",
     "FLOPs counted per multiply-accumulate: 2 (default, the vendors' convention) or 1; "
     "halves intensities and ridges alike."),
    ("--roofline-derate", {"metavar": "FRACTION"}, "string",
     "fraction of every roof (compute, memory, links) taken as reachable, in (0, 1]; "
     "default 1."),
    ("--roofline-margin", {"metavar": "FRACTION"}, "string",
     "default too-close-to-call band of regime assertions, e.g. 0.1 or 10%; default 0."),
    ("--roofline-json", {"metavar": "PATH"}, "string",
     "write a JSON report of every roofline result to PATH (one file, by the controller)."),
    ("--roofline-summary", {"metavar": "MODE"}, "string",
     "terminal summary rows: auto (default: all rows up to 50, failures only beyond), all "
     "(failures first), failed, none."),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser, _OPTIONS)
    add_options(parser, GATE_OPTIONS)


def _settings(config: pytest.Config) -> Settings:
    """Options over ini values, checked; a bad value raises pytest.UsageError."""
    from ..errors import RooflineError
    from .settings import (
        Settings,
        parse_derate,
        parse_flops_per_mac,
        parse_margin,
        parse_specs,
        parse_summary,
        split_names,
    )

    cwd = config.invocation_params.dir
    inidir = config.inipath.parent if config.inipath else config.rootpath

    def pick(name: str) -> tuple[Any, str, bool]:
        value, from_cli = pick_option(config, name)
        return value, ("--" + name.replace("_", "-")) if from_cli else f"{name} (ini)", from_cli

    try:
        values: dict[str, Any] = {}
        hw, name, _ = pick("roofline_hw")
        values["hw"] = split_names(hw)
        if hw and not values["hw"]:
            raise RooflineError(f"{name}: {','.join(hw)!r} names no chip; expected names such "
                                f"as 'h100' or 'h100,a100', or a spec file path")
        specs, name, from_cli = pick("roofline_specs")
        values["specs"] = parse_specs([cwd / p for p in specs] if from_cli else list(specs),
                                      name)
        for key, parse in (("flops_per_mac", parse_flops_per_mac), ("derate", parse_derate),
                           ("margin", parse_margin), ("summary", parse_summary)):
            raw, name, _ = pick("roofline_" + key)
            if raw not in (None, ""):
                values[key] = parse(raw, name)
        raw, _, from_cli = pick("roofline_json")
        if raw:
            values["json"] = (cwd if from_cli else inidir) / str(raw)
        return Settings(**values)
    except RooflineError as exc:
        raise pytest.UsageError(str(exc)) from None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER_HELP)
    plugin = config.stash[_PLUGIN_KEY] = _SessionPlugin(config)
    config.pluginmanager.register(plugin, "roofline-session")
    if given(config, GATE_OPTIONS):
        # Baselines, compare rules, Markdown and plots are a plugin of their own, registered
        # (and imported) only when asked for; pytest calls its pytest_configure on register
        from . import gate

        if not config.pluginmanager.is_registered(gate):  # (-p pytest_roofline.plugin.gate)
            config.pluginmanager.register(gate, "roofline-gate")
    hardware_hooks = _has_hardware_hooks(config)
    if hardware_hooks or given(config, _OPTIONS):
        session = _start_session(config)  # a bad value is a usage error before any test
        if session.settings.specs or session.settings.hw or hardware_hooks:
            _prepare_hardware(config, session, at_configure=True)


def _has_hardware_hooks(config: pytest.Config) -> bool:
    return bool(config.hook.pytest_roofline_register_hardware.get_hookimpls())


def _prepare_hardware(config: pytest.Config, session: RooflineSession,
                      at_configure: bool = False) -> None:
    """Register --roofline-specs files and hook-provided chips; check --roofline-hw names."""
    import os
    from collections.abc import Mapping

    from ..errors import RooflineError
    from ..hardware import CATALOG, Hardware
    from ..specfiles import is_path

    try:
        if not session.specs_registered:
            session.specs_registered = True
            for path in session.settings.specs:
                CATALOG.register_path(path)
    except RooflineError as exc:
        raise pytest.UsageError(f"--roofline-specs / roofline_specs: {exc}") from None
    impls = config.hook.pytest_roofline_register_hardware.get_hookimpls()
    new = [i.plugin for i in impls if i.plugin not in session.hardware_plugins]
    if new:
        done = set(session.hardware_plugins)
        session.hardware_plugins.update(new)
        caller = config.pluginmanager.subset_hook_caller(
            "pytest_roofline_register_hardware", remove_plugins=done)
        try:
            for specs in caller(config=config):
                for spec in specs or ():
                    if not isinstance(spec, (Hardware, Mapping, str, os.PathLike)):
                        raise RooflineError(
                            f"returned {spec!r}; expected a list of Hardware objects, spec "
                            f"mappings or spec file paths")
                    CATALOG.register(spec)
        except RooflineError as exc:
            message = f"pytest_roofline_register_hardware: {exc}"
            if at_configure:
                raise pytest.UsageError(message) from None
            raise RooflineError(message) from None
    if at_configure and session.settings.hw:
        from ..hardware import is_dynamic

        known = CATALOG.aliases()
        for name in session.settings.hw:
            a_file = is_path(name)
            if (a_file and not Path(name).is_file()) or (
                    not a_file and name.lower() not in known and not is_dynamic(name)):
                raise pytest.UsageError(
                    f"--roofline-hw / roofline_hw: unknown hardware {name!r}."
                    + CATALOG.suggest(name))


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
                report.longrepr = _import_error_line(collector, excinfo)
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


# -- per test -----------------------------------------------------------------------------


def _fail(item: pytest.Item, message: str) -> NoReturn:
    """Fail the test being set up or run with our one-line *message* as its report."""
    plugin = item.config.stash[_PLUGIN_KEY]
    plugin.failed[item] = message
    manager = item.config.pluginmanager
    if not manager.is_registered(plugin.failure_lines):  # registered by the first failure:
        manager.register(plugin.failure_lines)  # no other test pays for its hook
    pytest.fail(message, pytrace=False)


class _FailureLines:
    """Makes the report of a test that :func:`_fail` failed: the one-line message, without
    the traceback and the ``Failed:`` prefix of ``pytest.fail``."""

    def __init__(self, failed: dict[pytest.Item, str]) -> None:
        self.failed = failed

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> pytest.TestReport | None:
        if not self.failed:
            return None  # pytest makes the report
        message = self.failed.pop(item, None)
        if message is None or call.excinfo is None or str(call.excinfo.value) != message:
            return None
        report = pytest.TestReport.from_item_and_call(item, call)
        report.longrepr = message  # our one-line verdict, without a traceback
        return report


def _expectation(item: pytest.Item, marks: list[pytest.Mark],
                 session: RooflineSession) -> Expectation:
    """The test's checked marker arguments (cached per marker objects); errors fail setup."""
    if not marks and not session.settings.hw:
        _fail(item, f"roofline fixture in {item.name}: no hardware to analyze on: set "
                    f"--roofline-hw NAME (or roofline_hw in the ini file), or mark the test "
                    f"with @pytest.mark.roofline(hw='h100')")
    name = getattr(item, "originalname", item.name) if marks else ""
    # the parent node stands for the test file's folder (relative spec paths): cheaper than a Path
    key = (tuple(map(id, marks)), name, id(item.parent))
    cached = session.expectations.get(key)
    if cached is None:
        from ..errors import RooflineError
        from ..judging.marker import merge, parse

        try:
            _prepare_hardware(item.config, session)
            settings = session.settings
            merged = merge((m.args, m.kwargs) for m in marks)
            _show_calibration(item.config, merged.get("hw") or settings.hw)
            expectation: Any = parse(
                merged, default_hw=settings.hw,
                default_margin=settings.margin, name=name or "workload",
                base=Path(item.path).parent)
        except RooflineError as exc:
            expectation = exc
        cached = session.expectations[key] = (marks, expectation)
    expectation = cached[1]
    if isinstance(expectation, Exception):
        _fail(item, f"roofline marker on {item.name}: {expectation}")
    return expectation  # type: ignore[no-any-return]


#: The bare marker given to tests that use the fixture without a marker, so that
#: ``-m roofline`` selects them too; it carries no arguments and is skipped when parsing.
_FIXTURE_MARK = pytest.mark.roofline


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "roofline" in getattr(item, "fixturenames", ()) and \
                item.get_closest_marker("roofline") is None:
            item.add_marker(_FIXTURE_MARK)


def _show_calibration(config: pytest.Config, hw: object) -> None:
    """Before a calibrated chip (``host``, ``cuda:0``) is first looked up: its progress
    lines go to the terminal, past output capturing (a first calibration takes seconds)."""
    from ..hardware import is_dynamic

    names = hw if isinstance(hw, (list, tuple)) else [hw]
    if not any(isinstance(n, str) and is_dynamic(n) for n in names):
        return
    from ..measuring import calibration

    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return

    def write(text: str) -> None:
        try:
            with capture.global_and_fixture_disabled():
                reporter.write_line(f"pytest-roofline: {text}")
        except Exception:  # the session that installed this writer has ended
            calibration.progress = calibration.stderr_progress
            calibration.progress(text)

    calibration.progress = write


def _marks(item: pytest.Item) -> list[pytest.Mark]:
    """The test's roofline markers, most specific first: a parameter's marks, then the
    function's (outer decorators before inner ones), its class's, its module's."""
    # Node.iter_markers_with_node("roofline"), walked here without its generators: this runs
    # for every test of the session, marked or not
    marks: list[pytest.Mark] = []
    fixture_mark = _FIXTURE_MARK.mark
    node: Any = item
    while node is not None:
        if node.own_markers:
            own = [m for m in node.own_markers
                   if getattr(m, "name", None) == "roofline" and m is not fixture_mark]
            if own:
                own.reverse()
                marks.extend(own)
        node = node.parent
    return marks


def _give_fixture(item: pytest.Item, state: _ItemState, session: RooflineSession) -> None:
    """Hand the test its ``roofline`` fixture value now, when the fixture it requests is this
    plugin's (not one a conftest overrides): pytest then leaves the argument alone, and the
    test is spared the set-up and tear-down of a function-scoped fixture (about as much as the
    plugin's own work on a test). The fixture function stays for everything else that asks
    for the fixture (``request.getfixturevalue()``, fixtures that depend on it): it returns
    the same object."""
    funcargs = getattr(item, "funcargs", None)
    info = getattr(item, "_fixtureinfo", None)
    if type(funcargs) is not dict or info is None:
        return
    defs = info.name2fixturedefs.get("roofline")
    if not defs or type(getattr(defs[-1].func, "__self__", None)) is not _SessionPlugin:
        return
    funcargs["roofline"] = state.handle = _new_handle(item, state, session)


def _new_handle(item: pytest.Item, state: _ItemState, session: RooflineSession) -> Roofline:
    """The ``roofline`` fixture's value for one test."""
    make = _HANDLE[0] if _HANDLE else None
    if make is None:
        from .fixture import Roofline

        _HANDLE.append(make := Roofline)
    settings = session.settings
    return make(state.expectation, flops_per_mac=settings.flops_per_mac,
                derate=settings.derate, name=item.name)


_HANDLE: list[type[Roofline]] = []  # the fixture's class, imported by its first use


def _marker_judgement(session: RooflineSession, expectation: Expectation) -> Judgement:
    """The verdict on the marker's workload alone, judged once for every test sharing it."""
    cached = session.verdicts.get(id(expectation))
    if cached is None:
        from ..judging.verdict import judge

        settings = session.settings
        cached = session.verdicts[id(expectation)] = (expectation, judge(
            expectation, expectation.workload, flops_per_mac=settings.flops_per_mac,
            derate=settings.derate))
    return cached[1]  # type: ignore[no-any-return]


def _traced(item: pytest.Item, kernels: list[Any]) -> Workload:
    from ..errors import RooflineError
    from ..tracing import workload

    try:
        return workload(kernels, footprint=0.0, name=f"trace({item.name})")
    except RooflineError:
        _fail(item, f"roofline marker on {item.name}: trace=True, but the test body ran no "
                    f"torch op that moves memory")


def _workloads(item: pytest.Item, state: _ItemState) -> tuple[Workload | None, list[str]]:
    """The workload to judge, and the cross-check's failure lines (see docs/trace.md)."""
    expectation, handle = state.expectation, state.handle
    declared = expectation.workload if handle is None else handle.workload
    if expectation.cross_check is None and state.traced is None:
        return declared, []  # the common case: nothing traced for the plugin to handle
    from ..tracing.crosscheck import compare
    from ..workload import total

    traced = ([state.traced] if state.traced is not None else []) + (
        handle.traced if handle is not None else [])
    if expectation.cross_check is None:
        if state.traced is not None and declared is None and expectation.fits is not None:
            _fail(item, f"roofline marker on {item.name}: fits={expectation.fits!r} needs a "
                        f"footprint, and trace=True records none: declare a workload too, or "
                        f"trace a call with roofline.trace(fn, *args)")
        parts = [w for w in (declared, state.traced) if w is not None]  # trace=True adds
        return total(parts, name=" + ".join(w.name for w in parts)), []
    if declared is None or not traced:
        missing = ("a declared workload (workload=, flops=/bytes= or roofline.add())"
                   if declared is None else
                   "a traced workload (trace=True, or roofline.trace(fn, *args))")
        _fail(item, f"roofline marker on {item.name}: cross_check="
                    f"{expectation.cross_check!r} needs {missing}")
    program = traced[0] if len(traced) == 1 else total(traced, name=" + ".join(
        w.name for w in traced))
    return declared, compare(declared, program, expectation.cross_check)


def _verdict(item: pytest.Item, state: _ItemState, session: RooflineSession) -> None:
    expectation, handle = state.expectation, state.handle
    workload, crosscheck = _workloads(item, state)
    if workload is expectation.workload and (handle is None or handle.measured is None):
        judgement = _marker_judgement(session, expectation)
    else:
        judge = _judge()
        settings = session.settings
        if handle is not None and workload is handle.workload:
            judgement = judge(expectation, workload, flops_per_mac=settings.flops_per_mac,
                              derate=settings.derate, analyzed=lambda: handle.results,
                              spread=handle.spread)
        else:  # a recorded test body added to what was declared: analyzed here
            judgement = judge(expectation, workload, flops_per_mac=settings.flops_per_mac,
                              derate=settings.derate)
    if judgement.error:
        _fail(item, judgement.error)
    # conftest hooks apply to the tests below them (item.ihook), but the global hook tells
    # more cheaply whether there is any implementation at all
    hook = item.config.hook.pytest_roofline_result
    hooked = False
    if hook.get_hookimpls():
        hook = item.ihook.pytest_roofline_result
        hooked = bool(hook.get_hookimpls())
    failures: list[str] = list(crosscheck)
    checks: Sequence[Check] = judgement.checks
    if not hooked and not crosscheck:  # the common case: the judgement's properties, shared
        from .session import PREFIX

        for check, (hw, fields) in zip(checks, judgement.fields, strict=True):
            failures.extend(check.failures)
            item.user_properties.append((PREFIX + hw, fields))
    else:
        checks = changed = list(checks)
        from .session import to_properties

        for i, (check, template) in enumerate(zip(judgement.checks, judgement.records,
                                                  strict=True)):
            failures.extend(check.failures)
            record = {"nodeid": item.nodeid, **template}
            if crosscheck:  # the cross-check failed: so did this record
                changed[i] = check = check.with_failures(crosscheck[:1])
                record["outcome"] = "failed"
                record["message"] = " ".join(check.failures)
            if not hooked:
                item.user_properties.extend(to_properties(record))
                continue
            extra = _hook_failures(hook(config=item.config, item=item, nodeid=item.nodeid,
                                        result=check.result, record=record))
            if extra:
                failures.extend(extra)
                changed[i] = check.with_failures(extra)  # the report section says "failed"
                record["outcome"] = "failed"
                record["message"] = " ".join([*check.failures, *extra])
            item.user_properties.extend(to_properties(record))
    if failures or session.verbose:
        from ..judging.verdict import breakdown

        item.add_report_section("call", "roofline", breakdown(checks))
    if failures:
        _fail(item, "\n".join(line if line.startswith("  ") else f"roofline: {line}"
                              for line in failures))


_JUDGE: list[Callable[..., Judgement]] = []


def _judge() -> Callable[..., Judgement]:
    """:func:`.verdict.judge`, imported by the first test that declares its own workload (an
    import statement in _verdict would cost each such test a module-spec lookup)."""
    if not _JUDGE:
        from ..judging.verdict import judge

        _JUDGE.append(judge)
    return _JUDGE[0]


def _hook_failures(answers: list[Any]) -> list[str]:
    """Failure lines returned by pytest_roofline_result implementations (str or list)."""
    lines: list[str] = []
    for answer in answers:
        if isinstance(answer, str):
            lines.append(answer)
        elif answer:
            lines.extend(str(a) for a in answer)
    return [line for line in lines if line]


# -- the controller: summary and JSON report -------------------------------------------------


class _SessionPlugin:
    """The fixture and the hooks bound to one session's state (registered at configure as
    'roofline-session')."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # JUnit XML reads the teardown report's properties: one per figure there
        self.junit = bool(getattr(config.option, "xmlpath", None))
        # Per-test state in plain dicts rather than each item's stash: every test of the
        # session, roofline test or not, looks here a few times, and a stash lookup of a key
        # that is not there costs pytest an exception
        self.current: pytest.Item | None = None  # the test being set up or run
        self.states: dict[pytest.Item, _ItemState] = {}  # roofline tests being run
        self.failed: dict[pytest.Item, str] = {}  # the message of our pytest.fail(), per test
        self.failure_lines = _FailureLines(self.failed)  # registered by _fail() when needed
        self._session: RooflineSession | None = None  # made when first asked for

    # -- per test ---------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.current = item  # for the roofline fixture
        if self.states or self.failed:  # left by a test whose set-up failed after ours
            self.states.clear()
            self.failed.clear()
        marks = _marks(item)
        uses_fixture = "roofline" in getattr(item, "fixturenames", ())
        if not marks and not uses_fixture:
            return
        session = self.session
        expectation = _expectation(item, marks, session)
        if expectation.trace:
            from ..errors import RooflineError
            from ..tracing import require

            try:
                require("torch")
            except RooflineError as exc:
                _fail(item, f"roofline marker on {item.name}: trace=True: {exc}")
        if expectation.workload is None:
            if not uses_fixture and not expectation.trace:
                _fail(item, f"roofline marker on {item.name}: no workload: pass workload= "
                            f"(from pytest_roofline.ops or models) or flops=/bytes= to the "
                            f"marker, or request the roofline fixture and call roofline.add() "
                            f"in the test")
        else:
            # The marker's workload is analyzed here (once per marker): what stops its
            # analysis, such as a precision the chip lacks, is a setup error like a bad dtype=.
            judgement = _marker_judgement(session, expectation)
            if judgement.error:
                _fail(item, f"roofline marker on {item.name}: "
                            f"{judgement.error.removeprefix('roofline: ')}")
        state = self.states[item] = _ItemState(expectation)
        if uses_fixture:
            _give_fixture(item, state, session)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        states = self.states
        try:
            state = states.get(item)
            if state is not None and state.expectation.trace:
                from ..tracing._torch import Session

                with Session({}, None) as recorder:
                    yield  # the test body, recorded
                state.traced = _traced(item, recorder.kernels)
            else:
                yield  # the test body: its own failure propagates as the user's, never ours
            # (a test that asked for the fixture with request.getfixturevalue() has a state
            # from then on)
            state = states.get(item)
            if state is not None:
                _verdict(item, state, self.session)
        finally:
            states.pop(item, None)  # the handle and its results are not needed any more

    # -- the fixture and the controller -----------------------------------------------------

    @pytest.fixture
    def roofline(self) -> Roofline:
        """Declare the test's workload with ``roofline.add(workload)`` (several calls add
        up) and read its roofline with ``roofline.results`` / ``roofline.result("h100")``.
        After the test body passes, the ``roofline`` marker's expectations are checked."""
        # A test that names the fixture has its value from pytest_runtest_setup already
        # (_give_fixture); this runs for request.getfixturevalue() and for fixtures that
        # depend on this one. The item comes from pytest_runtest_setup rather than the
        # `request` fixture, which costs pytest a signature inspection per use.
        item = self.current
        if item is None:
            raise RuntimeError("the roofline fixture is set up outside a test")
        state = self.states.get(item)
        if state is None:  # requested through request.getfixturevalue()
            state = self.states[item] = _ItemState(_expectation(item, [], self.session))
        if state.handle is None:
            state.handle = _new_handle(item, state, self.session)
        return state.handle

    @property
    def session(self) -> RooflineSession:
        session = self._session
        if session is None:
            session = self._session = get_session(self.config)
        return session

    @property
    def records(self) -> list[dict[str, Any]]:
        return self.session.records

    @pytest.hookimpl(tryfirst=True)  # before junitxml reads the teardown report
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not report.user_properties:
            return
        session = self.session
        if session.is_worker:
            return
        received = hasattr(report, "node")  # pytest-xdist sets it on workers' reports
        if report.when == "call":
            note = "xfail" if hasattr(report, "wasxfail") else None
            session.collect(report.nodeid, report.user_properties, note, received)
        elif report.when == "teardown":
            if received:
                session.share(report.nodeid, report.user_properties)
            if self.junit:
                from .session import expand

                report.user_properties = expand(report.user_properties)

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if SESSION_KEY not in self.config.stash:  # no option, no roofline test: nothing to do
            return
        path = self.session.settings.json
        if self.session.is_worker or path is None:
            return
        from ..report.records import write_report

        report = self.session.report()
        self.config.hook.pytest_roofline_json(config=self.config, report=report)
        try:
            write_report(path, report)
            self.session.json_path = str(path)
        except OSError as exc:
            from ..report.atomic import why_not_written

            self.session.json_error = (f"--roofline-json: cannot write {path}: "
                                       f"{why_not_written(exc, path)}")
        except (TypeError, ValueError) as exc:  # a value added by a hook that JSON cannot hold
            self.session.json_error = f"--roofline-json: cannot write {str(path)!r}: {exc}"
        if self.session.json_error and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.USAGE_ERROR

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        session = self.config.stash.get(SESSION_KEY, None)
        if session is None or session.is_worker:  # None: no option, no roofline test
            return
        width = self.config.get_terminal_writer().fullwidth
        lines = session.summary_lines(width=width)
        if not (lines or session.json_path or session.json_error):
            return
        terminalreporter.write_sep("=", "roofline")
        terminalreporter.write_line(session.settings.convention())
        for line in lines:
            terminalreporter.write_line(line, red=line.endswith("FAIL"))
        if session.json_path:
            terminalreporter.write_line(f"JSON report: {session.json_path} "
                                        f"({len(session)} results)")
        if session.json_error:
            terminalreporter.write_line(session.json_error, red=True, bold=True)
