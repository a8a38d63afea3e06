"""Hooks pytest-roofline offers to other plugins and conftest.py files.

Implement them in a plugin or a ``conftest.py``::

    def pytest_roofline_register_hardware(config):
        return ["specs/our-chip.yaml"]

    def pytest_roofline_result(config, item, nodeid, result, record):
        record["team"] = "kernels"          # extra fields travel to the JSON report
        if result.time > 1.0:
            return f"{nodeid}: over a second on {result.hw}"   # fails the test

    def pytest_roofline_json(config, report):
        report["ci"] = {"job": os.environ.get("CI_JOB_ID")}

    def pytest_roofline_register_ops(config):
        return {"mylib::fancy": fancy_formula}   # formulas for traced ops
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..engine.analysis import Result
    from ..hardware import Hardware


@pytest.hookspec
def pytest_roofline_register_hardware(
    config: pytest.Config,
) -> list[Hardware | Mapping[str, Any] | str] | None:
    """Return chips to make known by name: Hardware objects, spec mappings or spec file paths.

    Called once per process before the first roofline test is set up (and when the
    ``--roofline-hw`` option is checked), after the files of ``--roofline-specs``; a chip
    registered here may extend a built-in one. Implementations in a ``conftest.py`` found
    later during collection are called before the first test that uses roofline.
    """


@pytest.hookspec
def pytest_roofline_result(
    config: pytest.Config, item: pytest.Item, nodeid: str, result: Result,
    record: dict[str, Any],
) -> str | Sequence[str] | None:
    """Called with each analysis result: one test on one chip, after its verdict.

    Runs in the process that ran the test (a pytest-xdist worker, or the only process).
    *result* is the :class:`pytest_roofline.Result`; *record* is the JSON-ready dict the
    controller receives: keys added to it (JSON scalars) travel to the JSON report.
    Return a line (or lines) to fail the test with them, like a failed expectation; return
    None to let the verdict stand.
    """


@pytest.hookspec
def pytest_roofline_json(config: pytest.Config, report: dict[str, Any]) -> None:
    """Amend the JSON report (``--roofline-json``) in place before the controller writes it."""


@pytest.hookspec
def pytest_roofline_register_ops(config: pytest.Config) -> Mapping[str, Any] | None:
    """Return formulas for traced ops that have none: ``{"mylib::fancy": formula}``, each
    as ``pytest_roofline.register_op(name, formula)`` takes it (the op's arguments in, a
    Kernel or Workload out). Called once per implementation, before the first roofline test
    that traces (``trace=`` or the fixture) is set up.
    """
