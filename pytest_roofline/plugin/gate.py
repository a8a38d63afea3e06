"""pytest options for baselines and reports: save, compare, Markdown, plots.

A pytest plugin of its own, built on the hooks of :mod:`pytest_roofline.plugin`, which
registers its options (``options.GATE_OPTIONS``) and registers this module at configure
time when one of them is given (a session without them never imports it).
``pytest_roofline_result`` fails a test whose figures regressed against the baseline, and
the run's one report (``state.published_report``: built once on the controller, under
pytest-xdist too, and passed through ``pytest_roofline_json``) is what is saved, compared,
rendered as Markdown and plotted. Everything is decided at configure time, before any test
runs: bad rules, a bad baseline name, a corrupt baseline, a missing baseline (one line in
the summary, or an error with ``--roofline-compare-missing=error``), a plot format or a
missing matplotlib.

Files are written once, by the controller, atomically.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..atomic import why_not_written
from ..errors import RooflineError
from ..report import rules
from ..report.compare import check_record, compare, index, records_of
from ..report.defaults import BASELINE_FOLDER, BASELINE_NAME
from ..report.markdown import STEP_SUMMARY
from ..report.publish import publish
from ..text_table import wrap_line
from .options import pick
from .state import published_report

if TYPE_CHECKING:
    from ..fields import Record
    from ..report.compare import Key
    from ..report.records import Report
    from ..report.rules import Rule

MISSING_MODES = ("warn", "error")
LIST_LIMIT = 20  # new / vanished results listed in the terminal before "... and N more"


class GateState:
    """What this session compares against and writes. (A plain class: a dataclass costs its
    creation at import, which every pytest session pays, roofline tests or not.)"""

    def __init__(self, *, is_worker: bool = False) -> None:
        self.rules: tuple[Rule, ...] = ()
        self.storage = Path(BASELINE_FOLDER)
        self.save_name: str | None = None
        self.compare_name: str | None = None
        self.compare_path: Path | None = None
        self.base_report: Report | None = None
        self.base_index: dict[Key, Record] = {}
        self.missing: str | None = None  # the missing-baseline message, when it is missing
        self.md: Path | None = None
        self.github_summary = False
        self.plots: tuple[str, ...] = ()  # chart files to write
        self.plot_term = False  # a chart in characters in the terminal summary
        self.is_worker = is_worker
        self.notes: list[tuple[str, bool]] = []  # (line, is_error) to print
        self.write_failed = False  # a file asked for was not written: the run must not pass
        self.comparison: Any = None

    def not_written(self, line: str) -> None:
        """Report a file that was asked for and not written; the run's exit status becomes 4."""
        self.notes.append((line, True))
        self.write_failed = True

    @property
    def label(self) -> str:
        return repr(self.compare_name) if self.compare_name else "the baseline"


_STATE = pytest.StashKey[GateState]()

def _path(config: pytest.Config, raw: str, from_cli: bool) -> Path:
    """A path option: relative to the invocation folder (command line) or the ini file."""
    base = config.invocation_params.dir if from_cli else (
        config.inipath.parent if config.inipath else config.rootpath)
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else base / path


def _state(config: pytest.Config) -> GateState:
    try:
        return _build_state(config)
    except RooflineError as exc:
        raise pytest.UsageError(str(exc)) from None


def _build_state(config: pytest.Config) -> GateState:
    state = GateState(is_worker=hasattr(config, "workerinput"))
    raw_rules, rules_from_cli = pick(config, "roofline_compare_fail")
    if raw_rules:
        try:
            state.rules = rules.parse_rules(raw_rules)
        except RooflineError as exc:
            raise RooflineError(f"--roofline-compare-fail: {exc}") from None
    storage, from_cli = pick(config, "roofline_storage")
    state.storage = (_path(config, storage, from_cli) if storage
                     else config.rootpath / BASELINE_FOLDER)
    save, from_cli = pick(config, "roofline_save")
    if save:
        from ..report import baseline

        _not_a_test_path(config, "--roofline-save", str(save), from_cli)
        try:
            state.save_name = baseline.check_name(str(save))
        except RooflineError as exc:
            raise RooflineError(f"--roofline-save: {exc}. Write --roofline-save=NAME (with "
                                f"'='), or put the option after the test paths") from None
    compare, from_cli = pick(config, "roofline_compare")
    if compare:
        _prepare_compare(config, state, str(compare), from_cli)
    elif raw_rules and rules_from_cli:  # a gate the command line asked for is never silently off
        state.notes.append(("roofline: --roofline-compare-fail without --roofline-compare: "
                            "no rule is checked", True))
    md, from_cli = pick(config, "roofline_md")
    state.md = _path(config, md, from_cli) if md else None
    summary, _ = pick(config, "roofline_github_summary")
    state.github_summary = bool(summary)
    plots, from_cli = pick(config, "roofline_plot")
    for value in plots or ():
        if value == "term":
            state.plot_term = True
        else:
            state.plots += (str(_check_plot(_path(config, value, from_cli))),)
    return state


def _prepare_compare(config: pytest.Config, state: GateState, name: str,
                     from_cli: bool) -> None:
    from ..report import baseline

    mode, _ = pick(config, "roofline_compare_missing")
    mode = mode or "warn"
    if mode not in MISSING_MODES:
        raise RooflineError(f"--roofline-compare-missing: got {mode!r}, expected one of "
                            f"{', '.join(MISSING_MODES)}")
    worker_path = getattr(config, "workerinput", {}).get("roofline_baseline")
    if worker_path is not None:  # the controller resolved it; the worker reads the same file
        path: Path | None = Path(worker_path) if worker_path else None
    elif baseline.is_path(name):
        path = _path(config, name, from_cli)
        if path.is_dir():
            raise RooflineError(f"--roofline-compare: {str(path)!r} is a folder; write "
                                f"--roofline-compare=NAME (with '='), or a report PATH.json")
    else:
        _not_a_test_path(config, "--roofline-compare", name, from_cli)
        path = baseline.locate(state.storage, name)
    state.compare_name = name
    state.compare_path = path
    if path is None:
        return
    by_name = worker_path is None and not baseline.is_path(name)
    try:
        state.base_report = baseline.load(state.storage, name if by_name else str(path))
    except baseline.MissingBaselineError as exc:
        if mode == "error":
            raise RooflineError(f"--roofline-compare: {exc}") from None
        state.missing = f"roofline: no baseline to compare against: {exc}"
        state.compare_path = None
        return
    state.base_index = index(records_of(state.base_report))


def _not_a_test_path(config: pytest.Config, option: str, name: str, from_cli: bool) -> None:
    """Refuse a baseline name that is an existing file or folder: ``--roofline-compare tests``
    takes ``tests`` as the name (the option's value is optional) and pytest then runs the
    whole rootdir; a gate that quietly compares nothing must not pass CI."""
    if not from_cli or name == BASELINE_NAME:  # an ini value, or the option given bare
        return
    path = _path(config, name, from_cli)
    if not path.exists():
        return
    kind = "folder" if path.is_dir() else "file"
    raise RooflineError(
        f"{option}: {name!r} is taken as a baseline name, but it is an existing {kind} "
        f"({path}); write {option}=NAME (with '=') or put the option after the test paths. "
        f"To compare against a report file, give its path ending in .json")


def _check_plot(path: Path) -> Path:
    import importlib.util

    from ..report import plot

    plot.check_path(path)
    if importlib.util.find_spec("matplotlib") is None:
        raise RooflineError(f"--roofline-plot {str(path)!r} needs matplotlib, which is not "
                            f"installed; install the plot extra: {plot.INSTALL} (or use "
                            f"--roofline-plot=term)")
    return path


def pytest_configure(config: pytest.Config) -> None:
    state = _state(config)
    config.stash[_STATE] = state
    if state.base_index:
        config.pluginmanager.register(_Comparer(state), "roofline-comparer")


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """pytest-xdist: tell each worker which file the controller compares against."""
    state = node.config.stash.get(_STATE, None)
    if state is not None and state.compare_name:
        node.workerinput["roofline_baseline"] = str(state.compare_path or "")


class _Comparer:
    """Fails a test whose record regressed against the baseline. Registered only when a
    baseline is compared against, so that other runs pay nothing per test."""

    def __init__(self, state: GateState) -> None:
        self.state = state

    def pytest_roofline_result(self, config: pytest.Config, item: pytest.Item, nodeid: str,
                               result: Any, record: Record) -> list[str] | None:
        messages = check_record(self.state.base_index, record, self.state.rules)
        return [f"regression against baseline {self.state.label}: {m}"
                for m in messages] or None


def _why(exc: OSError, path: str | os.PathLike[str]) -> str:
    return why_not_written(exc, path)


def _report(config: pytest.Config) -> Report:
    """The run's one report (built once, after ``pytest_roofline_json``)."""
    return published_report(config)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    state = config.stash.get(_STATE, None)
    if state is None or state.is_worker or not (
            state.base_report is not None or state.save_name or state.md
            or state.github_summary or state.plots):
        return
    report = _report(config)
    comparison = None
    if state.base_report is not None:
        comparison = compare(state.base_report, report, state.rules,
                             base=state.compare_name or "")
    state.comparison = comparison
    if state.save_name:
        _save(state, report, exitstatus)
    done = publish(report, comparison=comparison, md=state.md,
                   github_summary=state.github_summary, plots=state.plots)
    for outcome in done.outcomes:
        _note(state, outcome)
    if session.exitstatus == pytest.ExitCode.OK and state.write_failed:
        # a file CI relies on was not written: the job must not go green (as --roofline-json)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _save(state: GateState, report: Report, exitstatus: int) -> None:
    assert state.save_name is not None
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        state.notes.append((f"roofline: baseline {state.save_name!r} not saved: the run was "
                            f"interrupted and its results are incomplete", True))
        return
    if not report["results"]:
        state.notes.append((f"roofline: baseline {state.save_name!r} not saved: the run "
                            f"produced no roofline results", True))
        return
    from ..report import baseline

    target = baseline.path_for(state.storage, state.save_name)
    try:
        path = baseline.save(state.storage, state.save_name, report)
    except RooflineError as exc:
        state.not_written(f"roofline: cannot save baseline {state.save_name!r}: {exc}")
        return
    except OSError as exc:
        state.not_written(f"roofline: cannot save baseline {state.save_name!r} to {target}: "
                          f"{_why(exc, target)}")
        return
    count = len(report["results"])
    state.notes.append((f"roofline: saved baseline {state.save_name!r} ({count} result"
                        f"{'' if count == 1 else 's'}) to {path}", False))


def _note(state: GateState, outcome: Any) -> None:
    """The summary's line on one output of :func:`.report.publish.publish`."""
    what, status, target, why = outcome.what, outcome.status, outcome.target, outcome.why
    if status == "refused":
        state.not_written(f"roofline: cannot draw the plot: {why}")
    elif status == "failed":
        option = {"markdown": "--roofline-md: cannot write",
                  "github-summary": "--roofline-github-summary: cannot append to",
                  "plot": "--roofline-plot: cannot write"}[what]
        state.not_written(f"roofline: {option} {target}: {why}")
    elif status == "unset":
        state.notes.append((f"roofline: ${STEP_SUMMARY} is not set; no job summary written",
                            False))
    elif status == "empty":
        state.notes.append(("roofline: no plot drawn: the run produced no roofline results",
                            False))
    else:
        done = {"markdown": "Markdown summary written to",
                "github-summary": "Markdown summary appended to",
                "plot": "plot written to"}[what]
        state.notes.append((f"roofline: {done} {target}", False))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    config = terminalreporter.config
    state = config.stash.get(_STATE, None)
    if state is None or state.is_worker:
        return
    lines: list[tuple[str, bool]] = []
    if state.missing:
        lines.append((state.missing, True))
    comparison = state.comparison
    if comparison is not None:
        lines.append((f"compared against baseline {state.label} ({state.compare_path}); "
                      f"checks: {rules.describe(state.rules)}", False))
        regressions = {f"  {r.line}" for r in comparison.regressions}
        lines.extend((line, line in regressions) for line in comparison.lines(LIST_LIMIT))
    if state.plot_term:
        from ..report import ascii_plot

        report = _report(config)
        if report["results"]:
            columns = config.get_terminal_writer().fullwidth
            lines.extend((line, False) for line in ascii_plot.render(
                report, comparison, width=ascii_plot.chart_width(columns),
                columns=min(columns, 80)).splitlines())
    lines.extend(state.notes)
    if not lines:
        return
    terminalreporter.write_sep("=", "roofline baseline and reports")
    width = config.get_terminal_writer().fullwidth
    for line, red in lines:  # a path longer than a line keeps a line of its own, whole
        for part in wrap_line(line, width, hang=4):
            terminalreporter.write_line(part, red=red)
