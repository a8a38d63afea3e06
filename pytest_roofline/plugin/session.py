"""The state of one pytest session: settings, and every roofline record of the run.

Records travel from the process that ran a test to the controller as the test report's
``user_properties``: one property per test and chip, named ``roofline:<hw>``, whose value is
the record (without ``nodeid`` and ``hw``) as compact JSON text. They cross pytest-xdist's
worker boundary untouched and cheaply: the controller keeps each record as that text and
decodes it when :attr:`RooflineSession.records` is first read (the JSON report, the baseline
gate, a user's hook), so a run with many results costs it a few hundred bytes per result
(``benchmarks/bench_plugin.py``). For JUnit XML the controller spells each record out as one
property per figure, ``roofline:<hw>:<field>`` (:func:`expand`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .settings import AUTO_SUMMARY_ROWS, Settings

PREFIX = "roofline:"
_OUTSIDE = ("nodeid", "hw")  # what the property's name and the report carry
# How a failed record's text says so (quotes inside string values are escaped, so these
# match the outcome field only)
_FAILED, _ERROR = '"outcome":"failed"', '"outcome":"error"'


_PLAIN = (str, int, float, bool, type(None))
_SCALARS = frozenset(_PLAIN)
_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=True)  # made once: per test


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
    """A record as ``report.user_properties``: ``[("roofline:<hw>", compact JSON text)]``."""
    body = dict(record)
    for key in _OUTSIDE:
        body.pop(key, None)
    for key, value in body.items():
        if type(value) not in _SCALARS:
            body[key] = plain(value)
    return [(f"{PREFIX}{record['hw']}", _ENCODER.encode(body))]


def encoded(properties: Iterable[Any]) -> Iterator[tuple[str, str]]:
    """``(hw, text)`` of each record encoded by :func:`to_properties` among *properties*."""
    for pair in properties:
        try:
            name, value = pair
        except (TypeError, ValueError):
            continue
        if isinstance(name, str) and name.startswith(PREFIX) and isinstance(value, str) \
                and value.startswith("{"):
            yield name[len(PREFIX):], value


def decode(nodeid: str, hw: str, text: str,
           shared: dict[str, str] | None = None) -> dict[str, Any]:
    """One record from its property text. With *shared* (a memo kept across calls), field
    names and short texts (regimes, precisions, outcomes, labels), which a run's records
    repeat, are kept once."""
    memo: dict[str, str] = {} if shared is None else shared

    def one(text: str) -> str:
        return memo.setdefault(text, text) if len(text) <= 64 else text

    record: dict[str, Any] = {"nodeid": nodeid, "hw": one(hw)}
    for key, value in json.loads(text).items():
        record[one(key)] = one(value) if isinstance(value, str) else value
    return record


def from_properties(nodeid: str, properties: Iterable[Any]) -> list[dict[str, Any]]:
    """The records encoded by :func:`to_properties` among a report's user properties."""
    return [decode(nodeid, hw, text) for hw, text in encoded(properties)]


def expand(properties: Iterable[Any]) -> list[Any]:
    """*properties* with each record spelled out as one ``roofline:<hw>:<field>`` property
    per figure (the allowed regimes joined with ``|``), as JUnit XML shows them."""
    out: list[Any] = []
    for pair in properties:
        found = list(encoded([pair]))
        if not found:
            out.append(pair)
            continue
        hw, text = found[0]
        for key, value in json.loads(text).items():
            if key == "expected" and isinstance(value, list):
                value = "|".join(map(str, value))
            out.append((f"{PREFIX}{hw}:{key}", value))
    return out


class RooflineSession:
    """Per-session state, registered on the pytest config as the plugin ``roofline-session``.

    :attr:`records` holds every record of the run on the controller (with pytest-xdist too),
    in the order their reports arrived; :attr:`notes` maps a test id to a word shown next to
    its verdict (``xfail``). Code hooked on the summary or on session finish may read both.
    """

    def __init__(self, settings: Settings, *, is_worker: bool = False) -> None:
        self.settings = settings
        self.is_worker = is_worker
        self.notes: dict[str, str] = {}
        self.json_path: str | None = None
        self.json_error: str | None = None
        self._records: list[dict[str, Any]] = []
        self._encoded: list[tuple[str, str, str]] = []  # (nodeid, hw, text), not decoded yet
        self._shared: dict[str, str] = {}  # texts the decoded records share
        # What the controller keeps of the properties it receives: one object per property
        # name, the last record text per name (parametrized tests sharing a marker send equal
        # texts one after another), and each test's pairs until its teardown report arrives
        self._names: dict[str, tuple[str, str]] = {}  # "roofline:<hw>" -> (itself, <hw>)
        self._last: dict[str, str] = {}
        self._pending: dict[str, list[tuple[str, str]]] = {}
        # internal caches of the plugin
        self.expectations: dict[Any, Any] = {}
        self.verdicts: dict[int, Any] = {}
        self.hardware_plugins: set[object] = set()
        self.specs_registered = False

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every record of the run, as dicts in the JSON record format."""
        if self._encoded:
            self._records.extend(decode(*item, self._shared) for item in self._encoded)
            self._encoded.clear()
        return self._records

    def __len__(self) -> int:
        return len(self._records) + len(self._encoded)

    def _each(self) -> Iterator[dict[str, Any]]:
        """Every record, decoding the ones still encoded one at a time (none kept)."""
        yield from self._records
        for item in self._encoded:
            yield decode(*item, self._shared)

    def collect(self, nodeid: str, properties: Iterable[Any], note: str | None = None) -> int:
        """Keep the records of one test report (as their text); returns how many.

        When *properties* is a list (a report's ``user_properties``), its record pairs are
        replaced in place by equal ones whose strings are shared with other reports: a
        pytest-xdist controller receives a fresh copy of every string of every report, and
        pytest keeps the reports to the end of the run."""
        found: list[tuple[str, str, str]] = []
        pairs: list[tuple[str, str]] = []
        in_place = type(properties) is list
        for i, pair in enumerate(properties):
            shared = self._share(pair)
            if shared is None:
                continue
            if in_place and type(pair) is tuple:  # a pair of another type keeps its type
                properties[i] = shared  # type: ignore[index]
            pairs.append(shared)
            found.append((nodeid, self._names[shared[0]][1], shared[1]))
        if found:
            self._encoded.extend(found)
            if in_place:
                self._pending[nodeid] = pairs
            if note:
                self.notes[nodeid] = note
        return len(found)

    def share(self, nodeid: str, properties: list[Any]) -> None:
        """Point the record pairs of a test's teardown report (the same as its call
        report's) at the pairs kept from the call report, so that they are held once."""
        pairs = self._pending.pop(nodeid, None)
        if not pairs:
            return
        for i, pair in enumerate(properties):
            if type(pair) is not tuple:
                continue
            for kept in pairs:
                if pair == kept:
                    properties[i] = kept
                    break

    def _share(self, pair: Any) -> tuple[str, str] | None:
        """*pair* if it is a record property, as a pair of shared strings; else None."""
        try:
            got_name, got_text = pair
        except (TypeError, ValueError):
            return None
        if not (isinstance(got_name, str) and got_name.startswith(PREFIX)
                and isinstance(got_text, str) and got_text.startswith("{")):
            return None
        known = self._names.get(got_name)
        if known is None:
            known = self._names[got_name] = (got_name, got_name[len(PREFIX):])
        name: str = known[0]
        text: str = got_text
        last = self._last.get(name)
        if last == text:
            text = last
        else:
            self._last[name] = text
        if type(pair) is tuple and pair[0] is name and pair[1] is text:
            return pair
        return (name, text)

    def add(self, nodeid: str, records: list[dict[str, Any]], note: str | None = None) -> None:
        """Keep the records of one test (*note*: a word for its verdict, e.g. ``xfail``)."""
        if records:
            self.records.extend(records)
            if note:
                self.notes[nodeid] = note

    def summary_lines(self, width: int | None = None, mode: str | None = None) -> list[str]:
        """The terminal summary. With many rows (``auto``) or ``failed``, only the failed
        records are decoded and kept: the passing ones are counted."""
        mode = mode or self.settings.summary
        total = len(self)
        if not total or mode == "none":
            return []
        from ..report.table import MEASURED_COLUMNS, has_measured, headroom, is_failure, summary

        if mode == "failed" or (mode == "auto" and total > AUTO_SUMMARY_ROWS):
            # the text says whether a record failed: only those are decoded
            failed = [r for r in self._records if is_failure(r)]
            failed += [decode(*item, self._shared) for item in self._encoded
                       if _FAILED in item[2] or _ERROR in item[2]]
            return summary(failed, mode="all", width=width, notes=self.notes,
                           left_out=total - len(failed),
                           extra_columns=MEASURED_COLUMNS if has_measured(failed) else ())
        records = list(self._each())
        measured = has_measured(records)
        lines = summary(records, mode=mode, width=width, auto_rows=AUTO_SUMMARY_ROWS,
                        notes=self.notes, extra_columns=MEASURED_COLUMNS if measured else ())
        if measured:
            ranked = headroom(records)
            if len(ranked) > 2:  # a heading and a table of two or more tests
                lines += ["", *ranked]
        return lines

    def report(self) -> dict[str, Any]:
        """The JSON report of the run (see :mod:`pytest_roofline.records`)."""
        from ..report.records import make_report

        # make_report copies each record: records not decoded yet are decoded for the copy
        # alone, so a large run never holds them twice
        return make_report(self._each(), self.settings.to_dict())
