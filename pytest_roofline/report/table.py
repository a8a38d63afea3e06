"""The terminal summary of roofline records, as plain-text lines.

No pytest here: the summary is a list of lines that the plugin writes under its section
header, and that anything else (a CLI, a notebook) can print.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import fields as F
from .. import units
from ..efficiency import ABOVE_ROOF, AT_BOUND, FASTER, finding_for, percent
from ..fields import Record, RecordKey
from ..text_table import render


class Column:
    """One column of the summary: its *header*, how a record's *cell* reads, its alignment
    (*align*: ``l`` or ``r``), and how it gives way on a narrow terminal: *drop* (the n-th
    column left out to fit, 1 first; None: never left out) and *squeeze* (abbreviated, its
    cells cut at the end, before test ids take a line of their own).

    The Markdown report's results table shows the same columns: *markdown_header* and
    *markdown_cell* are its header and cell where they differ from the terminal's (None:
    the same). Frozen, and checked when made. (A plain slotted class, not a dataclass: the
    plugin imports this module at start-up, and a dataclass is built by compiling code.)"""

    __slots__ = ("align", "cell", "drop", "header", "markdown_cell", "markdown_header",
                 "squeeze")
    header: str
    cell: Callable[[Record], str]
    align: str
    drop: int | None
    squeeze: bool
    markdown_header: str | None
    markdown_cell: Callable[[Record], str] | None

    def __init__(self, header: str, cell: Callable[[Record], str], align: str = "l",
                 drop: int | None = None, squeeze: bool = False,
                 markdown_header: str | None = None,
                 markdown_cell: Callable[[Record], str] | None = None) -> None:
        if align not in ("l", "r"):
            raise ValueError(f"column {header!r}: align {align!r} is not 'l' or 'r'")
        if drop is not None and (type(drop) is not int or drop < 1):
            raise ValueError(f"column {header!r}: drop {drop!r} is not None or an "
                             f"integer >= 1")
        if markdown_header is not None and not markdown_header.strip():
            raise ValueError(f"column {header!r}: markdown_header "
                             f"{markdown_header!r} is not None or a non-blank header")
        for name, value in (("header", header), ("cell", cell), ("align", align),
                            ("drop", drop), ("squeeze", squeeze),
                            ("markdown_header", markdown_header),
                            ("markdown_cell", markdown_cell)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"a Column is frozen: cannot set {name!r}")

    def __repr__(self) -> str:
        return f"Column({self.header!r}, align={self.align!r}, drop={self.drop!r})"

    @property
    def header_in_markdown(self) -> str:
        """The column's header in the Markdown report."""
        return self.header if self.markdown_header is None else self.markdown_header

    def cell_in_markdown(self, record: Record) -> str:
        """A record's cell in the Markdown report (before escaping for a table)."""
        return (self.cell if self.markdown_cell is None else self.markdown_cell)(record)


VERDICTS = {"passed": "ok", "failed": "FAIL", "report": "-", "error": "ERROR",
            "skipped": "skip"}


def _figure(record: Record, key: RecordKey, unit: str) -> str:
    value = record.get(key)
    return units.si(float(value), unit) if isinstance(value, (int, float)) else "?"


def _intensity(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return "?"
    return units.flop_per_byte(value)


def _time(record: Record) -> str:
    value = record.get("time_s")
    return units.format_time(float(value)) if isinstance(value, (int, float)) else "?"


#: The summary's columns between the test id and the verdict, in their order; the Markdown
#: report's results table shows the same ones (between the status and test id, and the
#: end). On a narrow terminal the ridge, FLOPs, bytes, precision and FLOP/B columns are
#: left out (in that order) and the expectation is abbreviated. The intensity shown is the
#: DRAM intensity on the chip, after on-chip reuse, which the Markdown header says.
COLUMNS: tuple[Column, ...] = (
    Column("hw", lambda r: str(r.get("hw", "?")), markdown_header="chip"),
    Column("dtype", lambda r: str(r.get("dtype", "?")), drop=4),
    Column("FLOPs", lambda r: _figure(r, "flops", ""), align="r", drop=2),
    Column("bytes", lambda r: _figure(r, "bytes", "B"), align="r", drop=3),
    Column("FLOP/B", lambda r: _intensity(r.get("intensity")), align="r", drop=5,
           markdown_header="DRAM FLOP/B"),
    Column("ridge", lambda r: _intensity(r.get("ridge")), align="r", drop=1),
    Column("regime", lambda r: str(r.get("regime", "?"))),
    Column("time", _time, align="r"),
    Column("expected", lambda r: str(r.get("expectation") or "|".join(r.get("expected") or [])
                                      or "-"), squeeze=True),
)
#: Each column's formatter by header: the Markdown report formats figures the same way.
FORMATS = {column.header: column.cell for column in COLUMNS}
#: The fewest characters a test id is cut to before columns are left out (an 80-column CI
#: log): a file name and a test name of common length both whole, or most of each.
ID_WIDTH = 32


def _reused(record: Record) -> bool:
    """Whether the chip kept some of the record's tensor traffic on chip (its DRAM intensity
    then differs from the workload's)."""
    dram, tensor = record.get("intensity"), record.get("workload_intensity")
    return isinstance(dram, (int, float)) and isinstance(tensor, (int, float)) and \
        dram != tensor


def is_failure(record: Record) -> bool:
    return record.get("outcome") in ("failed", "error")


def natural(text: str) -> tuple[Any, ...]:
    """Sort key reading digit runs as numbers: ``test[16]`` before ``test[256]``."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


def order(records: Sequence[Record]) -> list[Record]:
    """Failures first, then by test id (numbers in ids read as numbers) and chip."""
    return sorted(records, key=lambda r: (not is_failure(r), natural(str(r.get("nodeid"))),
                                          str(r.get("hw"))))


def unknown_note(record: Record) -> str:
    """``"2 ops without a formula"`` for a record whose traced workload holds such ops."""
    unknown = record.get("unknown")
    if not isinstance(unknown, dict) or not unknown:
        return ""
    calls = sum(n for n in unknown.values() if isinstance(n, int))
    return f"{calls} op{'s' if calls != 1 else ''} without a formula"


def summary(
    records: Sequence[Record],
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
        note = ", ".join(n for n in (notes.get(str(record.get("nodeid"))),
                                     unknown_note(record)) if n)
        rows.append([str(record.get("nodeid")), *(c.cell(record) for c in columns),
                     f"{verdict} ({note})" if note else verdict])
    lines: list[str] = []
    if rows:
        # a narrow terminal (80 columns in CI logs) shortens test ids in the middle (to
        # ID_WIDTH at least), leaves out the ridge, FLOPs, bytes, precision and FLOP/B
        # columns, abbreviates the expectation, then gives each id a line of its own, so
        # that no line wraps (the test id is column 0, the verdict the last)
        dropped = sorted((c.drop, i) for i, c in enumerate(columns, 1) if c.drop is not None)
        lines = render(["test", *(c.header for c in columns), "verdict"], rows,
                       align="l" + "".join(c.align for c in columns) + "l", width=width,
                       optional=tuple(i for _, i in dropped), min_shrunk=ID_WIDTH,
                       squeeze=tuple(i for i, c in enumerate(columns, 1) if c.squeeze))
    if any(_reused(r) for r in shown):
        # two lines, each under 80 columns, so that the note fits a CI log as the table does
        lines.append("FLOP/B: DRAM intensity on each chip, after on-chip reuse (dram_intensity);")
        lines.append("        over all tensor traffic: workload_intensity in the JSON report")
    hidden = len(records) - len(shown) + left_out
    if hidden:
        failed = sum(1 for r in records if is_failure(r))
        lines.append(f"{len(records) + left_out} rows, {failed} failed; {hidden} not shown "
                     f"(--roofline-summary=all lists every row)")
    return lines


# -- measured results ------------------------------------------------------------------------


def _measured(record: Record) -> str:
    value = record.get("measured_s")
    return units.format_time(float(value)) if isinstance(value, (int, float)) else "-"


def percent_of_roof(record: Record) -> str:
    """``68%`` of the roof; a measurement above its bound with its figure, never as 100%:
    ``160%!`` faster than the bound (beyond its physical limit), ``127% cache`` (``121%
    peak`` compute-bound) above the roof within the limit, ``103%~`` at it within the
    measurement's allowance (a report of an older version holding an efficiency above 1
    shows ``faster!``)."""
    value = record.get("efficiency")
    note = record.get(F.MEASURED_NOTE)
    bound, measured = record.get("time_s"), record.get("measured_s")
    figure = (percent(float(bound) / float(measured))
              if isinstance(bound, (int, float)) and isinstance(measured, (int, float))
              and not isinstance(bound, bool) and float(measured) > 0 else None)
    if note == FASTER:
        return "faster!" if figure is None else figure + "!"
    if note == AT_BOUND:
        return (figure or "-") + "~"
    if note == ABOVE_ROOF:
        return f"{figure or '-'} {finding_for(str(record.get('regime') or ''))}"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 1:
        return "faster!"
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return percent(float(value))


def _mfu(record: Record) -> str:
    value = record.get("mfu")
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "-"
    return f"{value:.0%}" if value >= 0.01 else f"{value:.1%}"


#: The columns added to the summary when a record carries a measured time: the time, the
#: fraction of the roof, and MFU (model matrix FLOPs over time and matrix peak).
MEASURED_COLUMNS: tuple[Column, ...] = (Column("measured", _measured),
                                        Column("% roof", percent_of_roof,
                                               markdown_header="% of roof"),
                                        Column("MFU", _mfu))


def has_measured(records: Sequence[Record]) -> bool:
    return any(isinstance(r.get("measured_s"), (int, float)) for r in records)


def measured_by(records: Sequence[Record]) -> str:
    """Where the measured times came from: ``measured: pytest-benchmark median (2 tests),
    roofline.measure median (1 test)`` (tests counted once whatever their chips)."""
    tests: dict[str, set[str]] = {}
    for record in records:
        if isinstance(record.get("measured_s"), (int, float)):
            source = str(record.get("measured_by") or "roofline.measure median")
            tests.setdefault(source, set()).add(str(record.get("nodeid", "")))
    parts = [f"{source} ({len(ids)} test{'s' if len(ids) != 1 else ''})"
             for source, ids in sorted(tests.items())]
    return "measured: " + ", ".join(parts)


def measured_notes(records: Sequence[Record]) -> list[str]:
    """How GPU calls were timed, and what their figures are read with, each kind once with
    its tests counted (``measured_method``, and the notes' first words: ``the GPU
    throttled (2 tests)``); the whole notes are in the JSON record's ``measured_notes``."""
    methods: dict[str, set[str]] = {}
    kinds: dict[str, set[str]] = {}
    for record in records:
        test = str(record.get("nodeid", ""))
        if isinstance(record.get("measured_method"), str):
            methods.setdefault(record["measured_method"], set()).add(test)
        for note in record.get("measured_notes") or ():
            kinds.setdefault(str(note).split(":", 1)[0], set()).add(test)

    def counted(groups: dict[str, set[str]]) -> str:
        return ", ".join(f"{k} ({len(v)} test{'s' if len(v) != 1 else ''})"
                         for k, v in sorted(groups.items()))

    lines = [f"timed on the GPU: {counted(methods)}"] if methods else []
    if kinds:
        lines.append(f"read with care: {counted(kinds)}; the notes in full: measured_notes "
                     f"in the JSON report")
    return lines


def headroom(records: Sequence[Record], *, top: int = 10,
             width: int | None = None) -> list[str]:
    """Measured tests ranked by headroom: time share x (1 - efficiency).

    The time share is a test's measured time over the measured time of every test (on each
    test's first chip, so a test analyzed on several chips counts once). A test with much
    time and little of its roof reached is the one worth optimizing; one at its roof has
    none left however long it takes.
    """
    first: dict[str, tuple[float, float, Record]] = {}
    for record in records:
        measured, efficiency = record.get("measured_s"), record.get("efficiency")
        if isinstance(measured, (int, float)) and isinstance(efficiency, (int, float)):
            first.setdefault(str(record.get("nodeid")),
                             (float(measured), float(efficiency), record))
    total = sum(measured for measured, _, _ in first.values())
    if not first or total <= 0:
        return []
    ranked = sorted(((measured / total * max(0.0, 1 - efficiency), measured / total, r)
                     for measured, efficiency, r in first.values()),
                    key=lambda row: (-row[0], str(row[2].get("nodeid"))))
    rows = [[str(r.get("nodeid")), str(r.get("hw")), _measured(r), f"{share:.0%}",
             percent_of_roof(r), f"{room:.1%}"] for room, share, r in ranked[:top]]
    lines = ["Headroom (time share x (1 - efficiency)), most worth optimizing first:"]
    lines += render(["test", "hw", "measured", "share", "% roof", "headroom"], rows,
                    align="llrrrr", width=width, min_shrunk=ID_WIDTH)
    if len(ranked) > top:
        lines.append(f"{len(ranked) - top} more measured tests not shown")
    return lines
