"""The state of one pytest session: settings, and every roofline record of the run.

A record is plain JSON-typed data: ``(nodeid, hw, fields)``, the fields being the record
without ``nodeid`` and ``hw`` (str, int, float, bool, None and lists of them). The process
that ran a test keeps its records here. Under pytest-xdist a worker's call report carries each
record to the controller as one ``roofline`` property, the JSON text of ``[hw, fields]``; the
controller keeps that string as it received it (:meth:`RooflineSession.receive`) and reads it
when the record is first built. With ``--junitxml`` a test's report properties also carry its
figures, one property per figure (``roofline:<hw>:<field>``, :func:`expand`), as JUnit XML
shows them. Records become the JSON record format (dicts with ``nodeid`` and ``hw`` first) when
:attr:`records` is read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, cast

from ..fields import Record
from ..report.records import make_report
from ..text_table import wrap_line
from .settings import AUTO_SUMMARY_ROWS, Settings

if TYPE_CHECKING:
    from ..report.records import Report

PREFIX = "roofline:"
_FAILED = ("failed", "error")  # the outcomes the summary lists when it lists failures only

Fields = Record  # a record without nodeid and hw
Kept = tuple[str, str, Fields]  # (nodeid, hw, fields); or (nodeid, "", JSON text) received


def _built(kept: Kept) -> Record:
    return record_of(*kept)

_PLAIN = (str, int, float, bool, type(None))


def plain(value: Any) -> Any:
    """*value* as a JSON type (numpy scalars become floats, other objects their text)."""
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


def fields_of(record: Record) -> Record:
    """A record's fields but ``nodeid`` and ``hw``, as JSON types (each value's own, so the
    record's types hold; a field a hook added travels as its JSON form)."""
    return cast(Record, {key: plain(value) for key, value in record.items()
                           if key not in ("nodeid", "hw")})


def record_of(nodeid: str, hw: str, fields: Record | str) -> Record:
    """One record in the JSON record format (a new dict); *fields* may be the JSON text of
    ``[hw, fields]`` a worker sent (of :func:`fields_of`, in this run)."""
    body: Record
    if isinstance(fields, str):
        hw, body = json.loads(fields)
    else:
        body = fields
    record: Record = {"nodeid": nodeid, "hw": hw}
    record.update(body)
    return record


def _pairs(properties: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
    for pair in properties:
        if type(pair) is tuple and len(pair) == 2:
            yield pair


def expand(hw: str, fields: Record) -> list[tuple[str, Any]]:
    """A record as JUnit XML properties: one ``roofline:<hw>:<field>`` property per figure
    (the allowed regimes joined with ``|``)."""
    out: list[tuple[str, Any]] = []
    for key, value in fields.items():
        if key == "expected" and isinstance(value, list):
            value = "|".join(map(str, value))
        out.append((f"{PREFIX}{hw}:{key}", value))
    return out


class RooflineSession:
    """Per-session state (``plugin.get_session(config)``).

    :attr:`records` holds every record of the run on the controller (with pytest-xdist too);
    :attr:`notes` maps a test id to a word shown next to its verdict (``xfail``). Code hooked
    on the summary or on session finish may read both.
    """

    def __init__(self, settings: Settings, *, is_worker: bool = False) -> None:
        self.settings = settings
        self.is_worker = is_worker
        self.notes: dict[str, str] = {}
        self.json_path: str | None = None
        self.json_error: str | None = None
        self.published: Report | None = None  # the run's one report, once built
        self._records: list[Record] = []
        self._kept: list[Kept] = []
        # judged here, call report not seen yet: (records, item's user_properties, sent pairs)
        self.pending: dict[str, tuple[Any, list[Any], list[Any]]] = {}
        # internal caches of the plugin
        self.expectations: dict[Any, Any] = {}
        self.verdicts: dict[int, Any] = {}
        self.hardware_plugins: set[object] = set()
        self.specs_registered = False
        self.verbose = False  # -vv: each roofline test's report shows its figures

    @property
    def records(self) -> list[Record]:
        """Every record of the run, as dicts in the JSON record format."""
        if self._kept:
            self._records.extend(record_of(*kept) for kept in self._kept)
            self._kept.clear()
        return self._records

    def __len__(self) -> int:
        return len(self._records) + len(self._kept)

    def _each(self) -> Iterator[Record]:
        """Every record, building the ones not built yet one at a time (none kept)."""
        yield from self._records
        for kept in self._kept:
            yield record_of(*kept)

    def keep(self, nodeid: str, records: Iterable[tuple[str, Fields]],
             note: str | None = None) -> int:
        """Keep the records ``(hw, fields)`` of one test; returns how many."""
        found = [(nodeid, hw, fields) for hw, fields in records]
        if found:
            self._kept.extend(found)
            if note:
                self.notes[nodeid] = note
        return len(found)

    def add(self, nodeid: str, records: list[Record], note: str | None = None) -> None:
        """Keep the records of one test (*note*: a word for its verdict, e.g. ``xfail``)."""
        self.keep(nodeid, ((r["hw"], fields_of(r)) for r in records), note)

    def receive(self, nodeid: str, properties: Iterable[Any], note: str | None = None) -> int:
        """Keep the records a pytest-xdist worker's call report carries: properties named
        ``roofline`` whose value is the JSON text of ``[hw, fields]``. The text is kept as it
        is (the report holds the same string) and read when the record is built."""
        found = [(nodeid, "", value) for name, value in _pairs(properties)
                 if name == "roofline" and type(value) is str]
        if found:
            self._kept.extend(found)  # type: ignore[arg-type]
            if note:
                self.notes[nodeid] = note
        return len(found)

    def summary_lines(self, width: int | None = None, mode: str | None = None) -> list[str]:
        """The terminal summary. With many rows (``auto``) or ``failed``, only the failed
        records are built and kept: the passing ones are counted."""
        mode = mode or self.settings.summary
        total = len(self)
        if not total or mode == "none":
            return []
        from ..report.table import (
            MEASURED_COLUMNS,
            has_measured,
            headroom,
            is_failure,
            measured_by,
            measured_notes,
            summary,
        )
        if mode == "failed" or (mode == "auto" and total > AUTO_SUMMARY_ROWS):
            failed = [r for r in self._records if is_failure(r)]
            failed += [record for record in map(_built, self._kept)
                       if record.get("outcome") in _FAILED]
            return summary(failed, mode="all", width=width, notes=self.notes,
                           left_out=total - len(failed),
                           extra_columns=MEASURED_COLUMNS if has_measured(failed) else ())
        records = list(self._each())
        measured = has_measured(records)
        lines = summary(records, mode=mode, width=width, auto_rows=AUTO_SUMMARY_ROWS,
                        notes=self.notes, extra_columns=MEASURED_COLUMNS if measured else ())
        if measured:
            lines.append(measured_by(records))
            for note in measured_notes(records):
                lines += wrap_line(note, width, hang=4)
            ranked = headroom(records, width=width)
            if len(ranked) > 2:  # a heading and a table of two or more tests
                lines += ["", *ranked]
        if measured or any("profile" in r for r in records):
            from ..report import kernels

            profiled = kernels.summary_lines(records, width=width)
            if profiled:
                lines += ["", *profiled]
            lines += kernels.roof_notes(records)
        return lines

    def report(self) -> Report:
        """A JSON report of the records so far (see :mod:`pytest_roofline.report.records`);
        the run's own is :func:`.state.published_report`."""
        # make_report copies each record: records not built yet are built for the copy
        # alone, so a large run never holds them twice
        return make_report(self._each(), self.settings.to_dict())
