"""The pytest layer: hooks, the ``roofline`` fixture, each test's state in its item's stash,
the session's records and the CI gate. Everything here may import pytest; nothing below it
does (``judging``, where markers are parsed and verdicts made, the reports, the engine).

The pytest11 entry point ``roofline`` names :mod:`pytest_roofline.plugin.hooks`, which only
wires hooks; the work is done by the modules beside it. Importing this package registers
nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .state import get_session

__all__ = ["get_session"]


def __getattr__(name: str) -> Any:
    if name == "get_session":
        from .state import get_session

        return get_session
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
