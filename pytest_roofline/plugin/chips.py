"""Chips for a pytest session: ``--roofline-specs`` files and the chips of
``pytest_roofline_register_hardware`` hooks registered, ``--roofline-hw`` names checked, the
progress of a first calibration shown (``registries`` puts all of it back when the session
ends)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .session import RooflineSession

def has_hardware_hooks(config: pytest.Config) -> bool:
    return bool(config.hook.pytest_roofline_register_hardware.get_hookimpls())


def prepare_hardware(config: pytest.Config, session: RooflineSession,
                      at_configure: bool = False) -> None:
    """Register --roofline-specs files and hook-provided chips; check --roofline-hw names."""
    from ..errors import RooflineError, brief
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
                    f"--roofline-hw / roofline_hw: unknown hardware {brief(name, 40)}."
                    + CATALOG.suggest(name))


def show_calibration(config: pytest.Config, hw: object) -> None:
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
            from ..text_table import wrap_line

            with capture.global_and_fixture_disabled():
                for line in wrap_line(f"pytest-roofline: {text}",
                                      config.get_terminal_writer().fullwidth, hang=4):
                    reporter.write_line(line)
        except Exception:  # the session that installed this writer has ended
            calibration.progress = calibration.stderr_progress
            calibration.progress(text)

    calibration.progress = write
