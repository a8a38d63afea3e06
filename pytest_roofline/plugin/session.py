"""The state of one pytest session: settings, and every roofline record of the run.

Records travel from the process that ran a test to the controller as the test report's
``user_properties``, one property per figure, named ``roofline:<hw>:<field>``. That way they
cross pytest-xdist's worker boundary untouched and JUnit XML shows each figure as a property
of its test case. The controller decodes them into :attr:`RooflineSession.records`: the one
list that the terminal summary, the JSON report and anything hooked on them read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .settings import AUTO_SUMMARY_ROWS, Settings

PREFIX = "roofline:"


_PLAIN = (str, int, float, bool, type(None))


def plain(value: Any) -> Any:
    """*value* as a JSON type that pytest-xdist can send (numpy scalars become floats)."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if hasattr(value, "tolist") and hasattr(value, "dtype"):  # a numpy scalar or array
        return plain(value.tolist())
    if isinstance(value, _PLAIN):  # a subclass of a plain type
        for kind in _PLAIN[:4]:
            if isinstance(value, kind):
                return kind(value)
    return str(value)


def to_properties(record: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """A record as ``(name, value)`` pairs for ``report.user_properties``."""
    hw = str(record["hw"])
    out = []
    for key, value in record.items():
        if key in ("nodeid", "hw"):
            continue
        if key == "expected" and isinstance(value, (list, tuple)):
            value = "|".join(map(str, value))
        out.append((f"{PREFIX}{hw}:{key}", plain(value)))
    return out


def from_properties(nodeid: str, properties: Iterable[Any]) -> list[dict[str, Any]]:
    """The records encoded by :func:`to_properties` among a report's user properties."""
    found: dict[str, dict[str, Any]] = {}
    for pair in properties:
        try:
            name, value = pair
        except (TypeError, ValueError):
            continue
        if not isinstance(name, str) or not name.startswith(PREFIX):
            continue
        parts = name.split(":", 2)
        if len(parts) != 3:
            continue
        _, hw, key = parts
        record = found.setdefault(hw, {"nodeid": nodeid, "hw": hw})
        if key == "expected" and isinstance(value, str):
            value = value.split("|") if value else []
        record[key] = value
    return list(found.values())


class RooflineSession:
    """Per-session state, registered on the pytest config as the plugin ``roofline-session``.

    :attr:`records` holds every record of the run on the controller (with pytest-xdist too),
    in the order their reports arrived; :attr:`notes` maps a test id to a word shown next to
    its verdict (``xfail``). Code hooked on the summary or on session finish may read both.
    """

    def __init__(self, settings: Settings, *, is_worker: bool = False) -> None:
        self.settings = settings
        self.is_worker = is_worker
        self.records: list[dict[str, Any]] = []
        self.notes: dict[str, str] = {}
        self.json_path: str | None = None
        self.json_error: str | None = None
        # internal caches of the plugin
        self.expectations: dict[Any, Any] = {}
        self.verdicts: dict[int, Any] = {}
        self.hardware_plugins: set[object] = set()
        self.specs_registered = False
        self.current_item: Any = None  # the test being set up or run in this process
        self.local: dict[str, list[dict[str, Any]]] = {}  # records made here, not yet reported

    def collect(self, nodeid: str, properties: Iterable[Any],
                note: str | None = None) -> list[dict[str, Any]]:
        """Decode the records of one test report and keep them."""
        found = from_properties(nodeid, properties)
        self.add(nodeid, found, note)
        return found

    def add(self, nodeid: str, records: list[dict[str, Any]], note: str | None = None) -> None:
        """Keep the records of one test (*note*: a word for its verdict, e.g. ``xfail``)."""
        if records:
            self.records.extend(records)
            if note:
                self.notes[nodeid] = note

    def summary_lines(self, width: int | None = None, mode: str | None = None) -> list[str]:
        if not self.records:
            return []
        from ..report.table import summary

        return summary(self.records, mode=mode or self.settings.summary, width=width,
                       auto_rows=AUTO_SUMMARY_ROWS, notes=self.notes)

    def report(self) -> dict[str, Any]:
        """The JSON report of the run (see :mod:`pytest_roofline.records`)."""
        from ..report.records import make_report

        return make_report(self.records, self.settings.to_dict())
