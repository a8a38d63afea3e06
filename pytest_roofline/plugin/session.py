"""The state of one pytest session: settings, and every roofline record of the run.

Records travel from the process that ran a test to the controller as the test report's
``user_properties``: one property per test and chip, named ``roofline:<hw>``, whose value is
the record without ``nodeid`` and ``hw``: a dict of JSON types (str, int, float, bool, None
and lists of them), which pytest-xdist sends to its controller as it is, and which costs the
test that made it no encoding. The controller keeps each received dict (its keys and short
texts shared with the other records) and builds the records from them when
:attr:`RooflineSession.records` is first read (the JSON report, the baseline gate, a user's
hook), so a run with many results costs it about a kilobyte per result
(``benchmarks/bench_plugin.py``). For JUnit XML the controller spells each record out as one
property per figure, ``roofline:<hw>:<field>`` (:func:`expand`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .settings import AUTO_SUMMARY_ROWS, Settings

PREFIX = "roofline:"
_OUTSIDE = ("nodeid", "hw")  # what the property's name and the report carry
_FAILED = ("failed", "error")  # the outcomes the summary lists when it lists failures only


_PLAIN = (str, int, float, bool, type(None))
_SCALARS = frozenset(_PLAIN)


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


def to_properties(record: Mapping[str, Any], hw: str | None = None) -> list[tuple[str, Any]]:
    """A record as ``report.user_properties``: ``[("roofline:<hw>", {field: value})]``. With
    *hw*, *record* holds the fields alone (no ``nodeid`` or ``hw``) and becomes the value
    itself, its values made plain in place."""
    if hw is None:
        body = dict(record)
        for key in _OUTSIDE:
            body.pop(key, None)
        hw = record["hw"]
    else:
        body = record  # type: ignore[assignment]
    for key, value in body.items():
        if type(value) not in _SCALARS:
            body[key] = plain(value)
    return [(f"{PREFIX}{hw}", body)]


def record_properties(properties: Iterable[Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(hw, fields)`` of each record made by :func:`to_properties` among *properties*."""
    for pair in properties:
        try:
            name, value = pair
        except (TypeError, ValueError):
            continue
        if isinstance(name, str) and name.startswith(PREFIX) and type(value) is dict:
            yield name[len(PREFIX):], value


def record_of(nodeid: str, hw: str, fields: Mapping[str, Any]) -> dict[str, Any]:
    """One record from its property's fields (a new dict: the report keeps its own)."""
    record: dict[str, Any] = {"nodeid": nodeid, "hw": hw}
    record.update(fields)
    return record


def from_properties(nodeid: str, properties: Iterable[Any]) -> list[dict[str, Any]]:
    """The records made by :func:`to_properties` among a report's user properties."""
    return [record_of(nodeid, hw, fields) for hw, fields in record_properties(properties)]


def expand(properties: Iterable[Any]) -> list[Any]:
    """*properties* with each record spelled out as one ``roofline:<hw>:<field>`` property
    per figure (the allowed regimes joined with ``|``), as JUnit XML shows them."""
    out: list[Any] = []
    for pair in properties:
        found = list(record_properties([pair]))
        if not found:
            out.append(pair)
            continue
        hw, fields = found[0]
        for key, value in fields.items():
            if key == "expected" and isinstance(value, list):
                value = "|".join(map(str, value))
            out.append((f"{PREFIX}{hw}:{key}", value))
    return out


class _Fields:
    """Holds a received record's fields as its attributes; only its ``__dict__`` is kept. On
    CPython the attribute dicts of one class share a single table of keys (when they hold the
    same names, set in the same order, as records do), so that each stores only its values:
    about 300 bytes for a record instead of 840. It is a plain ``dict`` all the same."""


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
        self._kept: list[tuple[str, str, dict[str, Any]]] = []  # (nodeid, hw, fields)
        self._shared: dict[str, str] = {}  # field names and short texts the records share
        # What the controller keeps of the properties it receives: one object per property
        # name, the last record per name (parametrized tests sharing a marker send equal
        # records one after another), and each test's pairs until its teardown report arrives
        self._names: dict[str, tuple[str, str]] = {}  # "roofline:<hw>" -> (itself, <hw>)
        self._last: dict[str, dict[str, Any]] = {}
        self._pending: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        # internal caches of the plugin
        self.expectations: dict[Any, Any] = {}
        self.verdicts: dict[int, Any] = {}
        self.hardware_plugins: set[object] = set()
        self.specs_registered = False
        self.verbose = False  # -vv: each roofline test's report shows its figures

    @property
    def records(self) -> list[dict[str, Any]]:
        """Every record of the run, as dicts in the JSON record format."""
        if self._kept:
            self._records.extend(record_of(*item) for item in self._kept)
            self._kept.clear()
        return self._records

    def __len__(self) -> int:
        return len(self._records) + len(self._kept)

    def _each(self) -> Iterator[dict[str, Any]]:
        """Every record, building the ones not built yet one at a time (none kept)."""
        yield from self._records
        for item in self._kept:
            yield record_of(*item)

    def collect(self, nodeid: str, properties: Iterable[Any], note: str | None = None,
                received: bool = True) -> int:
        """Keep the records of one test report (their property's fields); returns how many.

        *received*: the report came from another process (a pytest-xdist worker). Then, when
        *properties* is a list (a report's ``user_properties``), its record pairs are
        replaced in place by equal ones whose strings are shared with other reports: the
        controller receives a fresh copy of every string of every report, and pytest keeps
        the reports to the end of the run. A report made in this process shares them
        already."""
        found: list[tuple[str, str, dict[str, Any]]] = []
        if not received:
            names = self._names
            for pair in properties:
                if type(pair) is tuple and len(pair) == 2 and type(pair[1]) is dict \
                        and type(pair[0]) is str:
                    name = pair[0]
                    known = names.get(name)
                    if known is None:
                        if not name.startswith(PREFIX):
                            continue
                        known = names[name] = (name, name[len(PREFIX):])
                    found.append((nodeid, known[1], pair[1]))
            if found:
                self._kept.extend(found)
                if note:
                    self.notes[nodeid] = note
            return len(found)
        pairs: list[tuple[str, dict[str, Any]]] = []
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
            self._kept.extend(found)
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

    def _share(self, pair: Any) -> tuple[str, dict[str, Any]] | None:
        """*pair* if it is a record property, as a pair whose name and fields are shared with
        the records kept before; else None."""
        try:
            got_name, got = pair
        except (TypeError, ValueError):
            return None
        if not (isinstance(got_name, str) and got_name.startswith(PREFIX)
                and type(got) is dict):
            return None
        known = self._names.get(got_name)
        if known is None:
            known = self._names[got_name] = (got_name, got_name[len(PREFIX):])
        name: str = known[0]
        fields: dict[str, Any] = got
        last = self._last.get(name)
        if last is not None and (last is fields or last == fields):
            fields = last
        else:
            fields = self._last[name] = self._compact(fields)
        if type(pair) is tuple and pair[0] is name and pair[1] is fields:
            return pair
        return (name, fields)

    def _compact(self, fields: dict[str, Any]) -> dict[str, Any]:
        """*fields* with its names and short texts shared with the records kept before (a
        pytest-xdist controller receives a fresh copy of each); *fields* itself when they
        are shared already, as in the process that made them."""
        memo = self._shared
        first = next(iter(fields), None)
        if first is None or memo.get(first) is first:
            return fields
        if not all(type(key) is str for key in fields):
            return dict(fields)
        holder = _Fields()
        for key, value in fields.items():
            if type(value) is str and len(value) <= 64:
                value = memo.setdefault(value, value)
            setattr(holder, memo.setdefault(key, key), value)
        return holder.__dict__


    def add(self, nodeid: str, records: list[dict[str, Any]], note: str | None = None) -> None:
        """Keep the records of one test (*note*: a word for its verdict, e.g. ``xfail``)."""
        if records:
            self.records.extend(records)
            if note:
                self.notes[nodeid] = note

    def summary_lines(self, width: int | None = None, mode: str | None = None) -> list[str]:
        """The terminal summary. With many rows (``auto``) or ``failed``, only the failed
        records are built and kept: the passing ones are counted."""
        mode = mode or self.settings.summary
        total = len(self)
        if not total or mode == "none":
            return []
        from ..report.table import MEASURED_COLUMNS, has_measured, headroom, is_failure, summary

        if mode == "failed" or (mode == "auto" and total > AUTO_SUMMARY_ROWS):
            failed = [r for r in self._records if is_failure(r)]
            failed += [record_of(*item) for item in self._kept
                       if item[2].get("outcome") in _FAILED]
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

        # make_report copies each record: records not built yet are built for the copy
        # alone, so a large run never holds them twice
        return make_report(self._each(), self.settings.to_dict())
