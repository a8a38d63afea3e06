"""The terminal summary of roofline records, as plain-text lines.

No pytest here: the summary is a list of lines that the plugin writes under its section
header, and that anything else (a CLI, a notebook) can print.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import units
from ..text_table import render

Column = tuple[str, Callable[[Mapping[str, Any]], str]]

VERDICTS = {"passed": "ok", "failed": "FAIL", "report": "-", "error": "ERROR"}


def _figure(record: Mapping[str, Any], key: str, unit: str) -> str:
    value = record.get(key)
    return units.si(float(value), unit) if isinstance(value, (int, float)) else "?"


def _intensity(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "?"
    if value != value or value == float("inf"):
        return str(value)
    return f"{value:.1f}" if value >= 10 else f"{value:.3g}"


def _time(record: Mapping[str, Any]) -> str:
    value = record.get("time_s")
    return units.format_time(float(value)) if isinstance(value, (int, float)) else "?"


COLUMNS: tuple[Column, ...] = (
    ("hw", lambda r: str(r.get("hw", "?"))),
    ("dtype", lambda r: str(r.get("dtype", "?"))),
    ("FLOPs", lambda r: _figure(r, "flops", "")),
    ("bytes", lambda r: _figure(r, "bytes", "B")),
    ("FLOP/B", lambda r: _intensity(r.get("intensity"))),
    ("ridge", lambda r: _intensity(r.get("ridge"))),
    ("regime", lambda r: str(r.get("regime", "?"))),
    ("time", _time),
    ("expected", lambda r: str(r.get("expectation") or "|".join(r.get("expected") or [])
                               or "-")),
)
ALIGN = "l" + "ll" + "rrrr" + "l" + "r" + "l" + "l"
#: Each column's formatter by header: the Markdown report formats figures the same way.
FORMATS = dict(COLUMNS)
#: Columns (by index, the test id being 0) left out, in this order, to fit a narrow terminal.
NARROW = (6, 3, 4, 2)


def is_failure(record: Mapping[str, Any]) -> bool:
    return record.get("outcome") in ("failed", "error")


def natural(text: str) -> tuple[Any, ...]:
    """Sort key reading digit runs as numbers: ``test[16]`` before ``test[256]``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def order(records: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Failures first, then by test id (numbers in ids read as numbers) and chip."""
    return sorted(records, key=lambda r: (not is_failure(r), natural(str(r.get("nodeid"))),
                                          str(r.get("hw"))))


def summary(
    records: Sequence[Mapping[str, Any]],
    *,
    mode: str = "auto",
    width: int | None = None,
    auto_rows: int = 50,
    notes: Mapping[str, str] | None = None,
    extra_columns: Sequence[Column] = (),
    left_out: int = 0,
) -> list[str]:
    """The summary table of *records* as lines.

    *mode*: ``all`` (every row, failures first), ``failed`` (failed rows only), ``none``, or
    ``auto`` (all up to *auto_rows* rows, failed rows beyond). *notes* maps a test id to a word
    appended to its verdict (``xfail``). *extra_columns* go before the verdict. *left_out*
    counts passing records the caller did not pass in (they are counted, not shown).
    """
    if mode == "none" or not (records or left_out):
        return []
    shown = order(records)
    if mode == "failed" or (mode == "auto" and len(shown) > auto_rows):
        shown = [r for r in shown if is_failure(r)]
    notes = notes or {}
    columns = (*COLUMNS, *extra_columns)
    rows = []
    for record in shown:
        verdict = VERDICTS.get(str(record.get("outcome")), str(record.get("outcome")))
        note = notes.get(str(record.get("nodeid")))
        rows.append([str(record.get("nodeid")), *(f(record) for _, f in columns),
                     f"{verdict} ({note})" if note else verdict])
    lines: list[str] = []
    if rows:
        # a narrow terminal (80 columns in CI logs) cuts the head of test ids, then leaves
        # out the ridge, FLOPs, bytes and precision columns, so that no line wraps
        lines = render(["test", *(h for h, _ in columns), "verdict"], rows,
                       align=ALIGN + "l" * len(extra_columns) + "l", width=width,
                       optional=NARROW, min_shrunk=24)
    hidden = len(records) - len(shown) + left_out
    if hidden:
        failed = sum(1 for r in records if is_failure(r))
        lines.append(f"{len(records) + left_out} rows, {failed} failed; {hidden} not shown "
                     f"(--roofline-summary=all lists every row)")
    return lines
