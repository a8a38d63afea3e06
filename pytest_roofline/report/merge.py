"""Joining the reports of CI shards into one report.

A suite split across CI jobs (a matrix of runners, each maybe with ``-n auto``) writes one
JSON report per job. :func:`merge` joins them, so that the gate, the Markdown summary and the
chart see the whole run. It refuses what would make the joined report lie:

* a test and chip present in two shards (the same test run twice: which result counts?);
* reports made under different settings: FLOPs per multiply-accumulate, derate or margin
  (every figure would move at once), or a chip whose figures differ between shards (a spec
  file that is not the same: its ridge or capacity moved).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast

from ..engine.settings import RECORDED
from ..errors import BaselineError
from ..fields import Record
from .records import Report, make_report

#: Settings that must agree between shards (``hw``, the default chips, may differ).
SETTINGS = RECORDED


def merge(reports: Sequence[tuple[str, Report]]) -> Report:
    """One report of the records of every ``(label, report)`` of *reports* (labels name the
    shards in errors: file paths). Raises :class:`BaselineError` naming the shards and the
    test, chip or setting that makes them disagree."""
    if not reports:
        raise BaselineError("merge needs at least one report")
    first_label, first = reports[0]
    settings = dict(first.get("settings") or {})
    owner: dict[tuple[str, str], str] = {}
    chip_figures: dict[tuple[str, str, str], tuple[Any, str]] = {}
    records: list[Record] = []
    for label, report in reports:
        theirs = report.get("settings") or {}
        for name in SETTINGS:
            if theirs.get(name) != settings.get(name):
                raise BaselineError(
                    f"cannot merge {label} with {first_label}: they were made under different "
                    f"settings ({name} {theirs.get(name)!r} against {settings.get(name)!r}); "
                    f"run every shard with the same options")
        seen_here: set[tuple[str, str]] = set()
        for record in report.get("results") or ():
            test = (str(record.get("nodeid")), str(record.get("hw")))
            if test in owner and test not in seen_here:
                raise BaselineError(
                    f"cannot merge {label} with {owner[test]}: both hold {test[0]} on {test[1]}"
                    f"; each test and chip belongs to one shard")
            owner.setdefault(test, label)
            seen_here.add(test)
            figures: tuple[Literal["ridge", "capacity_B"], ...] = ("ridge", "capacity_B")
            for figure in figures:
                value = record.get(figure)
                if value is None:
                    continue
                where = (test[1], str(record.get("peak_label", record.get("dtype"))), figure)
                known = chip_figures.setdefault(where, (value, label))
                if known[0] != value:
                    raise BaselineError(
                        f"cannot merge {label} with {known[1]}: chip {test[1]} differs between "
                        f"them ({figure} {value!r} against {known[0]!r} for {where[1]}); were "
                        f"they made with different spec files?")
            records.append(record)
    merged = make_report(records, settings)
    merged["merged_from"] = [
        {"report": label, "datetime": report.get("datetime"),
         "node": (report.get("machine") or {}).get("node"),
         "results": len(report.get("results") or ())}
        for label, report in reports]
    # the user's own keys (pytest_roofline_json), which the type does not name: the first kept
    free = cast(dict[str, Any], merged)
    for _, report in reports:
        for name, own in report.items():
            if name not in free:
                free[name] = own
    return merged
