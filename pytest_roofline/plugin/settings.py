"""Session settings of the pytest plugin, validated from option and ini values.

Every option has a command-line spelling (``--roofline-derate``) and an ini twin
(``roofline_derate``); the command line wins. Values arrive as raw strings (or lists of
strings) and are checked here, so a bad value is refused once, before any test runs, with a
message that names the option, the value and what is allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..engine import settings
from ..errors import RooflineError

SUMMARY_MODES = ("auto", "all", "failed", "none")

#: In ``auto`` mode the summary shows every row up to this many, and only failures beyond.
AUTO_SUMMARY_ROWS = 50


class SettingsError(RooflineError, ValueError):
    """An option or ini value that cannot be used (the plugin turns it into a usage error)."""


@dataclass(frozen=True)
class Settings:
    """What the options of one pytest session ask for.

    ``hw``: default chips for tests whose marker names none (names, aliases or spec paths).
    ``specs``: extra spec files or folders to register. ``flops_per_mac``: 2 (vendor
    convention) or 1. ``derate``: fraction of every roof (compute, memory, links) taken as
    reachable. ``json``: where to write the JSON report. ``summary``: which rows the terminal
    summary shows. ``margin``: default too-close-to-call band of regime assertions.
    """

    hw: tuple[str, ...] = ()
    specs: tuple[Path, ...] = ()
    flops_per_mac: int = 2
    derate: float = 1.0
    json: Path | None = None
    summary: str = "auto"
    margin: float = 0.0

    def __post_init__(self) -> None:
        for name in ("flops_per_mac", "derate", "margin"):
            try:
                settings.check(name, getattr(self, name))
            except settings.BadSetting as exc:
                raise SettingsError(str(exc)) from None
        if self.summary not in SUMMARY_MODES:
            raise SettingsError(f"summary must be one of {', '.join(SUMMARY_MODES)}, "
                                f"got {self.summary!r}")

    def to_dict(self) -> dict[str, Any]:
        """The settings as they go into the JSON report."""
        return {
            "flops_per_mac": self.flops_per_mac,
            "derate": self.derate,
            "hw": list(self.hw),
            "margin": self.margin,
        }

    def convention(self) -> str:
        """One line stating the conventions in force, for the summary header."""
        mac = ("2 FLOPs per multiply-accumulate (vendor convention)" if self.flops_per_mac == 2
               else "1 FLOP per multiply-accumulate (intensities and ridges are half the "
                    "vendor-convention figures)")
        roofs = ("roofs at 100% of peak" if self.derate == 1.0
                 else f"roofs derated to {self.derate:.0%} of peak")
        return f"{mac}; {roofs}"


def split_names(values: Iterable[str]) -> tuple[str, ...]:
    """``["h100,a100", "tpu-v5e"]`` -> ``("h100", "a100", "tpu-v5e")``, duplicates dropped."""
    names: list[str] = []
    for value in values:
        for part in re.split(r"[,\s]+", value.strip()):
            if part and part not in names:
                names.append(part)
    return tuple(names)


def _setting(name: str, value: object, option: str) -> Any:
    """An option's value of an analysis setting (:mod:`pytest_roofline.engine.settings`)."""
    try:
        return settings.check(name, value, text=True)
    except settings.BadSetting as exc:
        raise SettingsError(f"{option}: {value!r} is not allowed; expected {exc.allowed}"
                            ) from None


def parse_flops_per_mac(value: str, option: str) -> int:
    number: int = _setting("flops_per_mac", value, option)
    return number


def parse_derate(value: str, option: str) -> float:
    number: float = _setting("derate", value, option)
    return number


def parse_margin(value: object, option: str) -> float:
    number: float = _setting("margin", value, option)
    return number


def parse_summary(value: str, option: str) -> str:
    text = str(value).strip().lower()
    if text not in SUMMARY_MODES:
        raise SettingsError(f"{option}: {value!r} is not allowed; expected one of "
                            f"{', '.join(SUMMARY_MODES)}")
    return text


def parse_specs(values: Sequence[Path], option: str) -> tuple[Path, ...]:
    paths = []
    for path in values:
        if not path.exists():
            raise SettingsError(f"{option}: {str(path)!r} does not exist; expected a hardware "
                                f"spec file (*.yaml) or a folder of them")
        paths.append(path)
    return tuple(paths)
