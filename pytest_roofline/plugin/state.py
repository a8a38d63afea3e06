"""The session's roofline state on the pytest config, and the run's one report.

:func:`get_session` makes the :class:`.session.RooflineSession` when something first asks
for it (a roofline test, the summary, the gate): the options are checked into its settings
then, or at configure when one is given. :func:`published_report` builds the run's JSON
report once, passes it through ``pytest_roofline_json`` once, and hands that same object to
everything that writes, saves, compares, renders or plots it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from .options import pick

if TYPE_CHECKING:
    from ..report.records import Report
    from .session import RooflineSession
    from .settings import Settings

SESSION_KEY = pytest.StashKey["RooflineSession"]()


def get_session(config: pytest.Config) -> RooflineSession:
    """The session state: settings and (on the controller) every record of the run."""
    session = config.stash.get(SESSION_KEY, None)
    if session is None:
        session = start_session(config)
    return session


def start_session(config: pytest.Config) -> RooflineSession:
    """Check the options into the session's settings and make its state; a bad value is a
    usage error."""
    from .session import RooflineSession

    session = RooflineSession(read_settings(config), is_worker=hasattr(config, "workerinput"))
    session.verbose = config.get_verbosity() >= 2
    config.stash[SESSION_KEY] = session
    return session


def published_report(config: pytest.Config) -> Report:
    """The run's JSON report, built at the first call (when every record is in: at session
    finish) and passed through ``pytest_roofline_json`` then; later calls return the same
    object, so a user's additions reach the JSON file, the baseline, the Markdown and the
    plots alike."""
    session = get_session(config)
    if session.published is None:
        report = session.report()
        config.hook.pytest_roofline_json(config=config, report=report)
        session.published = report
    return session.published


def read_settings(config: pytest.Config) -> Settings:
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

    def option(name: str) -> tuple[Any, str, bool]:
        value, from_cli = pick(config, name)
        return value, ("--" + name.replace("_", "-")) if from_cli else f"{name} (ini)", from_cli

    try:
        values: dict[str, Any] = {}
        hw, name, _ = option("roofline_hw")
        values["hw"] = split_names(hw)
        if hw and not values["hw"]:
            raise RooflineError(f"{name}: {','.join(hw)!r} names no chip; expected names such "
                                f"as 'h100' or 'h100,a100', or a spec file path")
        specs, name, from_cli = option("roofline_specs")
        values["specs"] = parse_specs([cwd / p for p in specs] if from_cli else list(specs),
                                      name)
        for key, parse in (("flops_per_mac", parse_flops_per_mac), ("derate", parse_derate),
                           ("margin", parse_margin), ("summary", parse_summary)):
            raw, name, _ = option("roofline_" + key)
            if raw not in (None, ""):
                values[key] = parse(raw, name)
        raw, _, from_cli = option("roofline_json")
        if raw:
            values["json"] = (cwd if from_cli else inidir) / str(raw)
        return Settings(**values)
    except RooflineError as exc:
        raise pytest.UsageError(str(exc)) from None
