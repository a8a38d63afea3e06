"""A roofline chart in characters, for terminals and CI logs (no dependency).

One chart per chip on a fixed grid (72 x 20 cells by default), both axes logarithmic with a
tick per decade. The roof of each precision the records use is drawn with ``/`` along the
bandwidth slope and ``-`` along the compute peak; ``^`` under the x axis marks its ridge
(roofs and ridges of precisions no record uses are not drawn). Each
record is a letter (``A``, ``B``, ... then ``a``, ``b``, ... then digits), explained in a
legend below the chart, left to right; ``*`` marks a cell that holds several records, and a
line under the legend says which (``* at 2028.0 FLOP/B: B, C``); ``.`` marks records past
the 62nd. A record with a measured time adds ``@`` at the FLOP/s its timed run reached, and
its % of roof in the legend. Records that cannot be placed (no FLOPs or no bytes) are listed
after the legend.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..fields import Record
from ..text_table import cut_middle, wrap_line
from ..units import si
from .compare import Comparison
from .plot import Chart, bounds, charts
from .records import Report
from .rules import format_number

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_VERDICT = {"passed": "ok", "failed": "FAIL", "error": "ERROR", "report": "report"}
_Y_LABEL = 6  # characters of the y tick labels
_X_LABEL = "   FLOP/B (DRAM)"  # after the x ticks, where it fits
_LOG_WIDTH = 80  # columns of a CI log: no line is wider, unless the chart itself is


def chart_width(columns: int, most: int = 72) -> int:
    """The plot columns that keep every line of the chart within *columns* of a terminal
    (the y labels take 8): *most* at 80 columns or more, never under 20."""
    return max(20, min(most, columns - _Y_LABEL - 2))


def _legend_line(letter: str, name: str, regime: str, intensity: str, verdict: str,
                 limit: int) -> list[str]:
    """A legend entry in at most *limit* columns: the name shortened in the middle first
    (to 16 characters), then the verdict on a line of its own below."""
    fixed = f"  {letter}  " + " " + f"{regime:<8} {intensity:>9} FLOP/B"
    room = max(16, min(32, limit - len(fixed)))
    head = f"  {letter}  {cut_middle(name, room):<{room}} {regime:<8} {intensity:>9} FLOP/B"
    if len(head) + 2 + len(verdict) <= limit:
        return [f"{head}  {verdict}"]
    return [*wrap_line(head, limit), *wrap_line(f"       {verdict}", limit)]


def _power(exponent: int, unit: str = "") -> str:
    """A decade as a short label: 10**15 -> "1P", 10**-2 -> "0.01"."""
    if exponent < 0:
        return f"{10.0 ** exponent:g}" + unit
    return si(10.0 ** exponent, unit, digits=3).replace(" ", "")


def _column(value: float, lo: float, hi: float, width: int) -> int:
    position = (math.log10(value) - lo) / (hi - lo) * width
    return min(width - 1, max(0, int(position)))


def _row(value: float, lo: float, hi: float, height: int) -> int:
    position = (hi - math.log10(value)) / (hi - lo) * height
    return min(height - 1, max(0, int(position)))


def _header(chart: Chart, limit: int) -> list[str]:
    """The chart's title: chip, roofs, bandwidth and ridge, wrapped at ", " to *limit*
    columns (continuations indented)."""
    words = _title(chart).split(", ")
    lines = [words[0]]
    for word in words[1:]:
        if len(lines[-1]) + 2 + len(word) <= limit:
            lines[-1] += ", " + word
        else:
            lines[-1] += ","
            lines.append("  " + word)
    return lines


def _title(chart: Chart) -> str:
    used = [r for r in chart.roofs if r.used]
    roofs = ", ".join(f"{r.label} roof {si(r.peak, 'FLOP/s')}" for r in used)
    parts = [f"roofline: {chart.hw}"]
    if roofs:
        parts.append(roofs)
    if chart.bandwidth:
        parts.append(f"memory {si(chart.bandwidth, 'B/s')}")
        ridges = " and ".join(format_number(ridge) for ridge in chart.ridges)
        if ridges:
            parts.append(f"ridge {ridges} FLOP/B (^)")
    return "  ".join([parts[0], ", ".join(parts[1:])]).rstrip(", ")


def render_chart(chart: Chart, *, width: int = 72, height: int = 20,
                 columns: int | None = None) -> str:
    """One chip's chart and legend as text lines joined by newlines, none wider than
    *columns* (default: 80, or the chart's width with its labels when that is more)."""
    if width < 20 or height < 6:
        raise ValueError(f"an ASCII roofline needs at least 20 x 6 cells, got {width} x {height}")
    (x_lo, x_hi), (y_lo, y_hi) = bounds(chart, whole=False)
    grid = [[" "] * width for _ in range(height)]
    for roof in (r for r in chart.roofs if r.used):
        previous: int | None = None
        for col in range(width):
            x = 10 ** (x_lo + (col + 0.5) / width * (x_hi - x_lo))
            y = chart.roof_at(x, roof)
            row = _row(y, y_lo, y_hi, height)
            flat = chart.bandwidth is None or y >= roof.peak
            grid[row][col] = "-" if flat else "/"
            if previous is not None and not flat and previous - row > 1:
                for fill in range(row + 1, previous):  # a steep stretch: no gaps in the slope
                    grid[fill][col] = "/"
            previous = row

    limit = max(_LOG_WIDTH if columns is None else columns, _Y_LABEL + 2 + width)
    legend: list[str] = []
    cells: dict[tuple[int, int], str] = {}
    shared: dict[tuple[int, int], list[int]] = {}  # the points of each cell, by index
    for i, point in enumerate(chart.points):
        letter = LETTERS[i] if i < len(LETTERS) else "."
        where = (_row(point.performance, y_lo, y_hi, height),
                 _column(point.intensity, x_lo, x_hi, width))
        cells[where] = "*" if where in cells else letter
        shared.setdefault(where, []).append(i)
        verdict = _VERDICT.get(point.outcome, point.outcome)
        if point.regressed:
            verdict += ", REGRESSED"
        if point.efficiency is not None:
            verdict += f", measured {point.efficiency:.0%} of roof (@)"
        if i < len(LETTERS):
            legend += _legend_line(letter, point.name, point.regime,
                                   format_number(point.intensity), verdict, limit)
    measured = {(_row(p.measured, y_lo, y_hi, height), _column(p.intensity, x_lo, x_hi, width))
                for p in chart.points if p.measured}
    for row, col in measured:
        grid[row][col] = "@"
    for (row, col), mark in cells.items():
        grid[row][col] = mark

    lines = _header(chart, limit)
    decade_rows = {_row(10.0 ** e, y_lo, y_hi, height): e
                   for e in range(math.ceil(y_lo), math.floor(y_hi) + 1)}
    for row in range(height):
        label = _power(decade_rows[row]) if row in decade_rows else ""
        lines.append(f"{label:>{_Y_LABEL}} |" + "".join(grid[row]).rstrip())
    axis = ["-"] * width
    ticks = [" "] * (limit - _Y_LABEL - 2)
    for exponent in range(math.ceil(x_lo), math.floor(x_hi) + 1):
        col = _column(10.0 ** exponent, x_lo, x_hi, width)
        if col > 0:  # a tick in the first column is the corner's
            axis[col] = "+"
        text = _power(exponent)
        start = max(0, min(col - len(text) // 2, len(ticks) - len(text)))
        if all(c == " " for c in ticks[max(0, start - 1): start + len(text) + 1]):
            ticks[start: start + len(text)] = list(text)
    for ridge in chart.ridges:  # of the roofs in use only
        if 10 ** x_lo <= ridge <= 10 ** x_hi:
            axis[_column(ridge, x_lo, x_hi, width)] = "^"
    lines.append(" " * _Y_LABEL + " +" + "".join(axis))
    tick_line = " " * (_Y_LABEL + 2) + "".join(ticks).rstrip()
    if len(tick_line) + len(_X_LABEL) <= limit:
        lines += [tick_line + _X_LABEL, " " * _Y_LABEL + "   (y: attainable FLOP/s)"]
    else:  # the x label goes under the ticks, beside the y one
        lines += [tick_line, " " * _Y_LABEL + f"   (x: {_X_LABEL.strip()}; y: attainable FLOP/s)"]
    lines.extend(legend)
    hidden = len(chart.points) - len(LETTERS)
    if hidden > 0:
        lines.append(f"  ... and {hidden} more results, drawn as '.'")
    for _where, members in sorted(shared.items(), key=lambda item: item[0][1]):
        if len(members) > 1:  # say which results a "*" holds
            first = chart.points[members[0]]
            names = ", ".join(LETTERS[i] if i < len(LETTERS) else chart.points[i].name
                              for i in members)
            lines += wrap_line(f"  * at {format_number(first.intensity)} FLOP/B: {names}",
                               limit)
    if chart.skipped:
        lines += wrap_line(f"  not placed (no FLOPs or no bytes): {', '.join(chart.skipped)}",
                           limit)
    return "\n".join(lines)


def render(report: Report | Sequence[Record],
           comparison: Comparison | None = None, *, width: int = 72, height: int = 20,
           columns: int | None = None) -> str:
    """Every chip's chart of *report* (a report or a list of records), separated by blank
    lines; a short note when there is nothing to draw."""
    chart_list = charts(report, comparison)
    if not chart_list:
        return "roofline: no results to plot"
    return "\n\n".join(render_chart(c, width=width, height=height, columns=columns)
                       for c in chart_list)
