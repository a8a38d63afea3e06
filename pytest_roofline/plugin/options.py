"""Registering ``--roofline-*`` options with their ``roofline_*`` ini twins, and reading them.

Both pytest plugin modules (``plugin`` and ``gate``) declare their options as rows of
``(option, argparse keywords, ini type, help)`` and register them here, in the "roofline"
group. The command line beats the ini file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pytest

Option = tuple[str, Mapping[str, Any], str, str]

_INI_DEFAULTS = {"args": [], "paths": [], "bool": False}


def dest(option: str) -> str:
    """``--roofline-derate`` -> ``roofline_derate`` (the option's dest and its ini name)."""
    return option[2:].replace("-", "_")


def add_options(parser: pytest.Parser, options: Iterable[Option]) -> None:
    group = parser.getgroup("roofline", "roofline analysis (pytest-roofline)")
    for option, keywords, ini_type, text in options:
        name = dest(option)
        group.addoption(option, dest=name, **{"default": None, **keywords},
                        help=f"{text} (ini: {name})".replace("%", "%%"))
        parser.addini(name, help=text, type=ini_type,  # type: ignore[arg-type]
                      default=_INI_DEFAULTS.get(ini_type, ""))


def pick(config: pytest.Config, name: str) -> tuple[Any, bool]:
    """``(value, came from the command line)``: the option wins over its ini twin."""
    value = config.getoption(name)
    if value not in (None, []):
        return value, True
    return config.getini(name), False
