"""The per-test part of the plugin: each roofline test's :class:`RooflineTest` (in the
item's stash), the ``roofline`` fixture that returns it, its verdict after the test body,
and its records kept for the session.

Tests without the marker or the fixture cost a marker lookup at setup and two cheap checks
afterwards; pint, numpy and yaml are imported when the first roofline test is set up.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from .chips import prepare_hardware, show_calibration
from .state import get_session

if TYPE_CHECKING:
    from collections.abc import Generator, Sequence

    from ..judging.marker import Expectation
    from ..judging.rooftest import RooflineTest
    from ..judging.verdict import Check, Judgement
    from .session import Fields, RooflineSession

TEST_KEY = pytest.StashKey["RooflineTest"]()
PROPERTY = "roofline"  # the name of a record's property in a pytest-xdist worker's call report

#: The bare marker given to tests that use the fixture without a marker, so that
#: ``-m roofline`` selects them too; it carries no arguments and is skipped when parsing.
FIXTURE_MARK = pytest.mark.roofline


class Runner:
    """The per-test hooks bound to one session (registered at configure as
    'roofline-session')."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        # JUnit XML reads the teardown report's properties: one per figure there
        self.junit = bool(getattr(config.option, "xmlpath", None))
        self.failed: dict[str, str] = {}  # the message of our pytest.fail(), per test id
        self.failure_lines = _FailureLines(self.failed)  # registered by fail() when needed
        self._session: RooflineSession | None = None  # made when first asked for

    @property
    def session(self) -> RooflineSession:
        session = self._session
        if session is None:
            session = self._session = get_session(self.config)
        return session

    def fail(self, item: pytest.Item, message: str) -> NoReturn:
        """Fail the test being set up or run with our one-line *message* as its report."""
        self.failed[item.nodeid] = message
        manager = self.config.pluginmanager
        if not manager.is_registered(self.failure_lines):  # registered by the first failure:
            manager.register(self.failure_lines)  # no other test pays for its hook
        pytest.fail(message, pytrace=False)

    # -- set-up, the fixture, the call -------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        marks = _marks(item)
        uses_fixture = "roofline" in getattr(item, "fixturenames", ())
        if marks or uses_fixture:
            self.start(item, marks, need_workload=not uses_fixture)

    def start(self, item: pytest.Item, marks: list[pytest.Mark],
              need_workload: bool) -> RooflineTest:
        """Make the test's RooflineTest and keep it in the item's stash."""
        session = self.session
        expectation = self.expectation(item, marks)
        if expectation.trace or not need_workload:
            from ..errors import RooflineError
            from .formulas import prepare_ops

            try:
                prepare_ops(item.config)
            except RooflineError as exc:
                self.fail(item, f"roofline marker on {item.name}: {exc}")
        if expectation.trace:
            from ..errors import RooflineError
            from ..tracing import require

            try:
                require("torch")
            except RooflineError as exc:
                self.fail(item, f"roofline marker on {item.name}: trace=True: {exc}")
        shared = None
        if expectation.workload is not None:
            # The marker's workload is analyzed here (once per marker): what stops its
            # analysis, such as a precision the chip lacks, is a set-up error like a bad dtype=
            judgement = self.marker_judgement(expectation)
            if judgement.error:
                self.fail(item, f"roofline marker on {item.name}: "
                                f"{judgement.error.removeprefix('roofline: ')}")
            if not judgement.checks and judgement.unpriced:  # no chip can price it
                self.fail(item, f"roofline marker on {item.name}: {judgement.unpriced[0]}")
            shared = judgement
        elif need_workload and not expectation.trace:
            self.fail(item, f"roofline marker on {item.name}: no workload: pass workload= "
                            f"(from pytest_roofline.ops or models) or flops=/bytes= to the "
                            f"marker, or request the roofline fixture and call roofline.add() "
                            f"in the test")
        settings = session.settings
        test: RooflineTest = _rooftest().RooflineTest(
            expectation, flops_per_mac=settings.flops_per_mac, derate=settings.derate,
            name=item.name, shared=shared)
        item.stash[TEST_KEY] = test
        return test

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, None, None]:
        stash = item.stash
        # (Stash.get() raises and catches a KeyError on a miss: every test would pay it)
        test = stash[TEST_KEY] if TEST_KEY in stash else None  # noqa: SIM401
        benchmarks = None  # pytest-benchmark's fixture, watched in a marked test's call
        try:
            if test is not None and test.expectation.trace:
                from ..tracing import Tracer
                from .benchmark import Benchmarks, TimingLoops

                expectation = test.expectation
                tracer = expectation.tracer or Tracer()
                # pytest-benchmark's rounds and Triton's timing loops: one call recorded
                with tracer.body(targets=expectation.trace_only) as recording, \
                        Benchmarks(recording) as benchmarks, TimingLoops(recording):
                    yield  # the test body, recorded
                benchmarks.keep_the_benchmarked_call()  # the work the test means, once
                test.body = self.traced(item, tracer, recording, expectation.strict)
            elif test is not None and "pytest_benchmark.fixture" in sys.modules:
                from .benchmark import Benchmarks

                with Benchmarks() as benchmarks:
                    yield  # the test body; its benchmark, if it calls one, is its timing
            else:
                yield  # the test body: its own failure propagates as the user's, never ours
        except _formula_error() as exc:  # a registered formula's, not the test's: one line
            self.fail(item, f"roofline marker on {item.name}: {exc}")
        finally:
            # (a test that asked for the fixture with request.getfixturevalue() has one now)
            if test is None and TEST_KEY in stash:
                test = stash[TEST_KEY]
            if test is not None:
                del stash[TEST_KEY]  # its workloads and results are not needed after this
        if test is not None:  # the body passed: the verdict
            if benchmarks is not None and benchmarks.used is not None:
                from .benchmark import take_timing

                note = take_timing(benchmarks.used, test)
                if note is not None:
                    from ..text_table import wrap_line

                    width = item.config.get_terminal_writer().fullwidth
                    item.add_report_section("call", "roofline", "".join(
                        f"{line}\n" for line in wrap_line(note, width, hang=4)))
            self.verdict(item, test)

    def traced(self, item: pytest.Item, tracer: Any, recorder: Any, strict: bool) -> Any:
        """The workload ``trace=`` recorded of the test body (see docs/trace.md)."""
        from ..errors import RooflineError

        name = f"trace({item.name})"
        # a body's footprint is not known: 0, the lowest (its bound is never raised)
        recording = recorder.result(footprint=0.0)
        if recording.left_out:
            left = ", ".join(f"{what} x{n}" for what, n in sorted(recording.left_out.items()))
            item.add_report_section("call", "roofline trace", f"left out of {name}: {left}\n")
        if recording.assumed:  # values the body read of meta tensors, and loops' trip counts
            said = "".join(f"  {what} x{n}\n" for what, n in sorted(recording.assumed.items()))
            item.add_report_section("call", "roofline trace", f"assumed in {name}:\n{said}")
        try:
            return tracer.finish(recording, name=name, strict=strict)
        except RooflineError as exc:
            if recording.kernels:
                what = "strict=True: " if strict or tracer.strict else ""
                self.fail(item, f"roofline marker on {item.name}: {what}{exc}")
            what = "trace=<callables>" if recorder.filtered else "trace=True"
            only = " inside a call of those" if recorder.filtered else ""
            self.fail(item, f"roofline marker on {item.name}: {what}, but the test body "
                            f"ran no torch op that moves memory{only}")

    # -- the expectation and the verdict -----------------------------------------------------

    def expectation(self, item: pytest.Item, marks: list[pytest.Mark]) -> Expectation:
        """The test's checked marker arguments (cached per marker objects); errors fail
        set-up."""
        session = self.session
        if not marks and not session.settings.hw:
            self.fail(item, f"roofline fixture in {item.name}: no hardware to analyze on: set "
                            f"--roofline-hw NAME (or roofline_hw in the ini file), or mark "
                            f"the test with @pytest.mark.roofline(hw='h100')")
        name = getattr(item, "originalname", item.name) if marks else ""
        # the parent node stands for the test file's folder (relative spec paths)
        key = (tuple(map(id, marks)), name, id(item.parent))
        cached = session.expectations.get(key)
        if cached is None:
            from ..errors import RooflineError
            from ..judging.marker import merge, parse
            try:
                prepare_hardware(item.config, session)
                settings = session.settings
                merged = merge((m.args, m.kwargs) for m in marks)
                show_calibration(item.config, merged.get("hw") or settings.hw)
                expectation: Any = parse(
                    merged, default_hw=settings.hw, default_margin=settings.margin,
                    name=name or "workload", base=Path(item.path).parent)
            except RooflineError as exc:
                expectation = exc
            cached = session.expectations[key] = (marks, expectation)
        expectation = cached[1]
        if isinstance(expectation, Exception):
            self.fail(item, f"roofline marker on {item.name}: {expectation}")
        return expectation  # type: ignore[no-any-return]

    def marker_judgement(self, expectation: Expectation) -> Judgement:
        """The verdict on the marker's workload alone, judged once for every test sharing
        it."""
        session = self.session
        cached = session.verdicts.get(id(expectation))
        if cached is None:
            from ..judging.verdict import judge

            settings = session.settings
            cached = session.verdicts[id(expectation)] = (expectation, judge(
                expectation, expectation.workload, flops_per_mac=settings.flops_per_mac,
                derate=settings.derate))
        return cached[1]  # type: ignore[no-any-return]

    def verdict(self, item: pytest.Item, test: RooflineTest) -> None:
        """Judge the test; keep its records for the session; fail it when an expectation
        does not hold."""
        try:
            judgement, crosscheck = test.judge()
        except _rooftest().TestError as exc:
            self.fail(item, f"roofline marker on {item.name}: {exc}")
        if judgement.error:
            self.fail(item, judgement.error)
        # conftest hooks apply to the tests below them (item.ihook), but the global hook
        # tells more cheaply whether there is any implementation at all
        hook = item.config.hook.pytest_roofline_result
        hooked = False
        if hook.get_hookimpls():
            hook = item.ihook.pytest_roofline_result
            hooked = bool(hook.get_hookimpls())
        failures: list[str] = [*crosscheck, *judgement.unpriced]
        checks: Sequence[Check] = judgement.checks
        records: list[tuple[str, Fields]]
        profiled = bool(test.profiles) or test.expectation.min_kernel_efficiency is not None
        failed: list[str] = []
        if profiled:
            from ..judging import kernels

            failed = kernels.failures(test.expectation, test.profiles)
        if not hooked and not crosscheck:  # the common case: the judgement's fields, shared
            records = judgement.fields
            for check in checks:
                failures.extend(check.failures)
            if profiled:
                records = kernels.attach(list(records), test.profiles, failed)
        else:  # the hooks see the records whole, their profiles included
            checks, records, extra = self.amend(item, judgement, crosscheck, hook, hooked,
                                                (test.profiles, failed) if profiled else None)
            failures.extend(extra)
        if profiled:
            failures.extend(failed)
            if failed:  # the breakdown says so: the profiled chip's verdict is "failed"
                chips = {p.hw for p in test.profiles}
                hit = [c.result.hw in chips for c in checks] if chips else []
                if not any(hit):
                    hit = [i == 0 for i in range(len(checks))]
                checks = [c.with_failures(failed) if h else c
                          for c, h in zip(checks, hit, strict=True)]
        sent: list[tuple[str, str]] = []
        if self.session.is_worker:  # the call report carries the records to the controller
            sent = [(PROPERTY, text) for text in (
                judgement.texts() if records is judgement.fields else map(to_text, records))]
            item.user_properties.extend(sent)
        self.session.pending[item.nodeid] = (records, item.user_properties, sent)
        if self.junit:
            from .session import expand

            for hw, fields in records:
                item.user_properties.extend(expand(hw, fields))
        if checks and (failures or self.session.verbose):  # no chip priced it: no breakdown
            from ..judging.verdict import breakdown

            item.add_report_section("call", "roofline", breakdown(
                checks, width=item.config.get_terminal_writer().fullwidth))
        if failures:
            self.fail(item, "\n".join(line if line.startswith("  ") else f"roofline: {line}"
                                      for line in failures))

    def amend(self, item: pytest.Item, judgement: Judgement, crosscheck: list[str],
              hook: Any, hooked: bool, profiled: tuple[Any, list[str]] | None = None
              ) -> tuple[list[Check], list[tuple[str, Fields]], list[str]]:
        """The checks and records with a failed cross-check and ``pytest_roofline_result``
        hooks applied (each record with its profiles, *profiled*: the test's profiles and
        their failed lines, so that a baseline's rules see every kernel); the failed lines
        of the checks and hooks."""
        from .session import fields_of

        checks = list(judgement.checks)
        records: list[tuple[str, Fields]] = []
        failures: list[str] = []
        templates = judgement.records
        built: list[tuple[str, Fields]] = []
        for i, (check, template) in enumerate(zip(judgement.checks, templates, strict=False)):
            record: Fields = {"nodeid": item.nodeid, **template}
            if crosscheck:  # the cross-check failed: so did this record
                checks[i] = check.with_failures(crosscheck[:1])
                record["outcome"] = "failed"
                record["message"] = " ".join(checks[i].failures)
            built.append((template["hw"], record))
        if profiled is not None:
            from ..judging import kernels

            built = kernels.attach(built, profiled[0], profiled[1])
        for i, (check, (hw, record)) in enumerate(zip(checks, built, strict=False)):
            failures.extend(judgement.checks[i].failures)
            if hooked:
                extra = _hook_failures(hook(config=item.config, item=item, nodeid=item.nodeid,
                                            result=check.result, record=record))
                if extra:
                    failures.extend(extra)
                    checks[i] = check.with_failures(extra)  # the report section: "failed"
                    record["outcome"] = "failed"
                    record["message"] = " ".join([*check.failures, *extra])
            records.append((hw, fields_of(record)))
        records.extend(judgement.fields[len(checks):])  # chips that cannot price it
        return checks, records, failures

    # -- records ------------------------------------------------------------------------------

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep a test's records, with ``xfail`` noted: in the process that ran it, or on the
        pytest-xdist controller from a worker's call report."""
        session = self._session
        if report.when != "call" or (session is None and not report.user_properties):
            return
        session = self.session
        waiting = session.pending.pop(report.nodeid, None) if session.pending else None
        note = "xfail" if hasattr(report, "wasxfail") else None
        if waiting is not None:  # judged in this process
            records, properties, sent = waiting
            if session.is_worker:
                for pair in sent:  # sent with the call report: the later reports go without
                    properties.remove(pair)
            else:
                session.keep(report.nodeid, records, note)
        elif not session.is_worker and report.user_properties:  # received from a worker
            session.receive(report.nodeid, report.user_properties, note)


def _rooftest() -> Any:
    """:mod:`pytest_roofline.judging.rooftest`, imported by the first roofline test (an
    import statement in a per-test method would cost every test a package lookup). Read
    from ``sys.modules`` each time, never kept here: an in-process pytester run drops the
    modules it imported first, and a copy kept past it would judge the next run's
    Workloads by another class."""
    module = sys.modules.get("pytest_roofline.judging.rooftest")
    if module is None:
        from ..judging import rooftest as module
    return module


def _hook_failures(answers: list[Any]) -> list[str]:
    """Failure lines returned by pytest_roofline_result implementations (str or list)."""
    lines: list[str] = []
    for answer in answers:
        if isinstance(answer, str):
            lines.append(answer)
        elif answer:
            lines.extend(str(a) for a in answer)
    return [line for line in lines if line]


class _FailureLines:
    """Makes the report of a test that :meth:`Runner.fail` failed: the message (one line per
    failure), without the traceback and the ``Failed:`` prefix of ``pytest.fail``, wrapped
    on the terminal only (:class:`~pytest_roofline.plugin.message.Message`)."""

    def __init__(self, failed: dict[str, str]) -> None:
        self.failed = failed

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> pytest.TestReport | None:
        if not self.failed:
            return None  # pytest makes the report
        message = self.failed.pop(item.nodeid, None)
        if message is None or call.excinfo is None or str(call.excinfo.value) != message:
            return None
        report = pytest.TestReport.from_item_and_call(item, call)
        from .message import Message

        report.longrepr = Message(message)  # our verdict, whole as data, wrapped on screen
        return report


def _formula_error() -> type[Exception]:
    """The error of a registered formula (imported only when a test body raised)."""
    from ..tracing._formula_check import FormulaError

    return FormulaError


def _marks(item: pytest.Item) -> list[pytest.Mark]:
    """The test's roofline markers, most specific first: a parameter's marks, then the
    function's, its class's, its module's; on one node in pytest's own order, so that of
    markers stacked on one function the one closest to ``def`` comes first, the marker
    ``item.get_closest_marker("roofline")`` returns. (pytest lists a parameter's marks after
    the function's; they come first here: a parameter is more specific than its function.)"""
    # Node.iter_markers_with_node("roofline"), walked here without its generators: this runs
    # for every test of the session, marked or not
    marks: list[pytest.Mark] = []
    fixture_mark = FIXTURE_MARK.mark
    node: Any = item
    while node is not None:
        if node.own_markers:
            own = [m for m in node.own_markers
                   if getattr(m, "name", None) == "roofline" and m is not fixture_mark]
            if own and node is item:
                callspec = getattr(item, "callspec", None)
                mine = {id(m) for m in own}
                params = [m for m in (callspec.marks if callspec is not None else ())
                          if id(m) in mine]
                if params:
                    taken = {id(m) for m in params}
                    own = params + [m for m in own if id(m) not in taken]
            marks.extend(own)
        node = node.parent
    return marks


def to_text(record: tuple[str, Fields]) -> str:
    """A record ``(hw, fields)`` as its call report carries it: JSON text."""
    return json.dumps(record, allow_nan=True)
