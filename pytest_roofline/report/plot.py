"""Roofline charts: what a chart shows, and drawing it with matplotlib (the ``plot`` extra).

A chart per chip: the memory-bandwidth slope, one compute roof per precision the chip lists
(dense matrix peaks, plus the vector or sparse peak a record is compared with: the A100's
19.5 TFLOP/s roof of fp32 work is ``fp32 vector``, never its fp64 twin), the roofs of
precisions no record uses drawn thin and dashed, and the ridge of every roof in use (none of
a roof no record uses); each
record as a point at (intensity, attainable FLOP/s = FLOPs / bound time), coloured by
verdict: passed green, failed red, report-only grey; a regression against the baseline is
drawn as a downward triangle with a black edge. Points are numbered left to right; each
number is placed where it overlaps no other number or point and stays inside the axes, and a
table beside the chart names the test, regime, intensity and verdict of each number. A
record with a measured time adds a hollow diamond at (intensity, FLOPs / measured time),
joined to its predicted point and labelled with its % of roof: predicted and measured side
by side.

Roofs are scaled like the analysis that made the records (FLOPs per MAC, derate), so a
one-kernel workload sits on its roof and a program of kernels under it. A chip the catalog does
not know (a spec file not at hand) gets the one roof its records imply: bandwidth = bytes over
memory time, peak = ridge x bandwidth.

:func:`write` draws every chip as a row of ONE figure (the chart and its table, 10 x 4.8
inches at 100 dpi: a PNG of one chip is 1000 x 480 pixels, of two 1000 x 960) and writes
``.png``, ``.svg`` or ``.pdf``. matplotlib is imported only here, only when
drawing, and never through pyplot: the user's backend and figures are left alone.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..atomic import write_with
from ..errors import RooflineError
from ..fields import Record, RecordKey
from ..hardware import get_hardware, is_dynamic
from ..units import si
from .compare import Comparison, Key, index, records_of
from .records import Report

FORMATS = (".png", ".svg", ".pdf")
ROW_INCHES = (10.0, 4.8)  # one chip: the chart and the table of its points
DPI = 100
COLOURS = {"passed": "#2ca02c", "failed": "#d62728", "error": "#d62728", "report": "#7f7f7f"}
INSTALL = 'pip install "pytest-roofline[plot]"'


class MissingExtraError(RooflineError, ImportError):
    """An optional dependency is not installed; the message says which extra to install."""


@dataclass(frozen=True)
class Roof:
    """A compute roof: *peak* in FLOP/s for the precisions in *dtypes*."""

    dtypes: tuple[str, ...]  # roof names (``bf16``, ``fp32 vector``); a used roof: its used ones
    peak: float
    used: bool  # some record of the chart runs in one of these precisions

    @property
    def label(self) -> str:
        return "/".join(self.dtypes)


@dataclass(frozen=True)
class Point:
    """One record on the chart."""

    name: str  # short test name, e.g. "test_gemm[4096]"
    nodeid: str
    dtype: str
    intensity: float  # FLOP/B
    performance: float  # attainable FLOP/s: FLOPs over the bound time
    regime: str
    outcome: str  # passed | failed | error | report
    regressed: bool
    measured: float | None = None  # FLOP/s reached by the timed run (None: not measured)
    efficiency: float | None = None  # fraction of the roof the timed run reached


@dataclass(frozen=True)
class Chart:
    """The roofline of one chip with its points; *bandwidth* in B/s (None if unknown)."""

    hw: str
    bandwidth: float | None
    roofs: tuple[Roof, ...]
    points: tuple[Point, ...]
    skipped: tuple[str, ...]  # nodeids that cannot be placed (no bytes, no FLOPs, no time)

    @property
    def top(self) -> Roof | None:
        """The highest roof in use (None when no record uses one of the chart's roofs)."""
        used = [r for r in self.roofs if r.used]
        return max(used, key=lambda r: r.peak) if used else None

    @property
    def ridges(self) -> tuple[float, ...]:
        """The ridge (FLOP/B) of every roof in use, highest first (none without a
        bandwidth)."""
        if not self.bandwidth:
            return ()
        return tuple(r.peak / self.bandwidth for r in self.roofs if r.used)

    def roof_at(self, intensity: float, roof: Roof) -> float:
        """Attainable FLOP/s under *roof* at *intensity*: min(peak, bandwidth x intensity)."""
        if self.bandwidth is None:
            return roof.peak
        return min(roof.peak, self.bandwidth * intensity)


def short_name(nodeid: str) -> str:
    """``tests/test_x.py::TestK::test_gemm[8]`` -> ``test_gemm[8]``."""
    return nodeid.rsplit("::", 1)[-1]


def _number(record: Record, name: RecordKey) -> float | None:
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def _scale(records: Sequence[Record]) -> tuple[float, float]:
    """(FLOP scale, derate) the records were analysed with (2 FLOPs per MAC -> 1.0)."""
    first = records[0]
    fpm = _number(first, "flops_per_mac") or 2.0
    derate = _number(first, "derate") or 1.0
    return fpm / 2.0, derate


def roof_name(record: Record) -> str:
    """The roof a record is compared with, from its ``peak_label``: ``bf16`` (a matrix peak),
    ``fp32 vector``, ``bf16 sparse``; its ``dtype`` when it names no peak."""
    label = record.get("peak_label")
    if isinstance(label, str) and ":" in label and " " not in label:
        unit, dtype = label.split(":", 1)
        return dtype if unit == "matrix" else f"{dtype} {unit}"
    return str(record.get("dtype"))


def _catalog_roofs(hw: str, scale: float, derate: float,
                   names: set[str]) -> tuple[float, dict[str, float]] | None:
    if is_dynamic(hw):  # a calibration: this machine's may not be the report's; use its records
        return None
    try:
        chip = get_hardware(hw)
    except (RooflineError, OSError):
        return None
    peaks = {d: p * scale * derate for d, p in chip.matrix.items()}
    tables = {"vector": chip.vector, "sparse": chip.matrix_sparse}
    for name in names:  # the vector and sparse peaks the records are compared with
        dtype, _, unit = name.partition(" ")
        if unit in tables and dtype in tables[unit]:
            peaks[name] = tables[unit][dtype] * scale * derate
    return chip.memory_bandwidth * derate, peaks


def _implied_roofs(records: Sequence[Record]) -> tuple[float | None, dict[str, float]]:
    bandwidth = None
    for record in records:
        nbytes, t_memory = _number(record, "bytes"), _number(record, "t_memory_s")
        if nbytes and t_memory:
            bandwidth = nbytes / t_memory
            break
    peaks: dict[str, float] = {}
    if bandwidth is not None:
        for record in records:
            ridge = _number(record, "ridge")
            if ridge:
                peaks.setdefault(roof_name(record), ridge * bandwidth)
    return bandwidth, peaks


def _point(nodeid: str, record: Record, regressed: bool) -> Point | None:
    intensity = _number(record, "intensity")
    performance = _number(record, "attainable_flops")
    if performance is None:
        flops, time = _number(record, "flops"), _number(record, "time_s")
        performance = flops / time if flops is not None and time else None
    if (intensity is None or performance is None or not math.isfinite(intensity)
            or not math.isfinite(performance) or intensity <= 0 or performance <= 0):
        return None
    flops, measured_s = _number(record, "flops"), _number(record, "measured_s")
    measured = flops / measured_s if flops and measured_s and measured_s > 0 else None
    return Point(short_name(nodeid), nodeid, str(record.get("dtype")), intensity, performance,
                 str(record.get("regime", "")), str(record.get("outcome", "")), regressed,
                 measured, _efficiency(record))


#: Profiled kernels placed per record (those losing the most time).
KERNELS = 5


def _kernel_points(nodeid: str, record: Record, hw: str) -> list[Point]:
    """A record's profiled kernels (``judging.kernels``), each at its intensity and its
    measured FLOP/s, under the point of its bound, as Nsight Compute's roofline places
    kernels. A kernel that beat its bound carries no efficiency."""
    out: list[Point] = []
    for profile in record.get("profile") or ():
        if not isinstance(profile, Mapping) or profile.get("hw") != hw:
            continue
        for row in list(profile.get("rows") or [])[:KERNELS]:
            try:
                flops, nbytes = float(row["flops"]), float(row["bytes"])
                bound, measured = float(row["bound_s"]), float(row["measured_s"])
            except (KeyError, TypeError, ValueError):
                continue
            if not (flops > 0 and nbytes > 0 and bound > 0 and measured > 0):
                continue
            label = f"{str(row.get('op', '?')).removeprefix('aten::')}({row.get('shapes', '')})"
            efficiency = row.get("efficiency")
            out.append(Point(label[:40], f"{nodeid}::{label}", str(record.get("dtype")),
                             flops / nbytes, flops / bound, str(row.get("regime", "")),
                             "report", False, flops / measured,
                             float(efficiency) if isinstance(efficiency, (int, float))
                             and efficiency <= 1 else None))
    return out


def _efficiency(record: Record) -> float | None:
    """The record's efficiency, None where the run beat its bound (never drawn above 100%)."""
    value = _number(record, "efficiency")
    if value is None or value > 1 or record.get("measured_note") == "faster-than-bound":
        return None
    return value


def charts(report: Report | Sequence[Record],
           comparison: Comparison | None = None) -> list[Chart]:
    """One chart per chip of *report* (a report or a list of records), sorted by chip."""
    regressed = set(comparison.regressed) if comparison else set()
    by_chip: dict[str, list[tuple[Key, Record]]] = {}
    for key, record in index(records_of(report)).items():
        by_chip.setdefault(key[1], []).append((key, record))
    out: list[Chart] = []
    for hw in sorted(by_chip):
        items = by_chip[hw]
        recs = [r for _, r in items]
        scale, derate = _scale(recs)
        used = {roof_name(r) for r in recs}
        known = _catalog_roofs(hw, scale, derate, used)
        bandwidth, peaks = known if known is not None else _implied_roofs(recs)
        grouped: dict[float, list[str]] = {}
        for name, peak in peaks.items():
            grouped.setdefault(peak, []).append(name)
        roofs = tuple(_roof(names, peak, used)
                      for peak, names in sorted(grouped.items(), reverse=True))
        points, skipped = [], []
        for key, record in items:
            point = _point(key[0], record, key in regressed)
            if point is None:
                skipped.append(key[0])
            else:
                points.append(point)
            points.extend(_kernel_points(key[0], record, hw))
        # numbered left to right on the chart
        points.sort(key=lambda p: (p.intensity, p.performance))
        out.append(Chart(hw, bandwidth, roofs, tuple(points), tuple(skipped)))
    return out


def _roof(names: list[str], peak: float, used: set[str]) -> Roof:
    """The roof of the precisions *names* sharing *peak*, named by the ones in use if any."""
    in_use = tuple(n for n in names if n in used)
    return Roof(in_use or tuple(names), peak, bool(in_use))


def bounds(chart: Chart, *, whole: bool = True) -> tuple[tuple[float, float], tuple[float, float]]:
    """log10 (x, y) bounds showing every point, the roofs in use and their ridges.

    No empty decades: the y axis runs from just below the lowest point (or the slope where
    the chart starts, if higher) to just above the highest roof in use; roofs of unused
    precisions outside that span are left out of the picture (they stay in the legend).
    *whole*: the PNG (some margin for markers and numbers); else the character chart, which
    has few rows to spare.
    """
    xs = [p.intensity for p in chart.points]
    ys = [p.performance for p in chart.points]
    ys += [p.measured for p in chart.points if p.measured]
    roofs = [r for r in chart.roofs if r.used]
    for roof in roofs:
        ys.append(roof.peak)
        if chart.bandwidth:
            xs.append(roof.peak / chart.bandwidth)
    if not xs:
        xs = [1.0, 100.0]
    if not ys:
        ys = [1e9, 1e12]
    if whole:
        x_lo, x_hi = _tight(min(xs), max(xs), margin=0.3)
        y_lo, y_hi = _tight(min(ys), max(ys), margin=0.3, minimum=1.0)
        return (x_lo, x_hi), (y_lo, y_hi)
    x_lo, x_hi = _tight(min(xs), max(xs))
    if chart.bandwidth:  # the character chart shows where the slope enters
        ys.append(chart.bandwidth * 10 ** x_lo)
    return (x_lo, x_hi), _tight(min(ys), max(ys))


def _tight(low: float, high: float, margin: float = 0.25,
           minimum: float = 2.0) -> tuple[float, float]:
    lo, hi = math.log10(low) - margin, math.log10(high) + margin
    if hi - lo < minimum:
        middle = (hi + lo) / 2
        lo, hi = middle - minimum / 2, middle + minimum / 2
    return lo, hi


# -- drawing with matplotlib -------------------------------------------------------------------


def _matplotlib() -> tuple[Any, Any]:
    """``(Figure, FigureCanvasAgg)``, or MissingExtraError saying which extra to install."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtraError(f"roofline plots need matplotlib, which is not installed; "
                                f"install the plot extra: {INSTALL}") from None
    return Figure, FigureCanvasAgg


_NUMBER_PT = 6.5  # font size of the point numbers on the chart
_TABLE_PT = 7.5  # font size of the table beside the chart (at most; see _table)
_MIN_TABLE_PT = 6.0
_NAME = 30  # characters of a test name in the table (at most; see _table)
_MIN_NAME = 16
_TABLE_SPACING = 1.25


def _draw(ax: Any, chart: Chart) -> None:
    """The roofs and the points (each with its number); labels are placed by _number_points
    once the layout is final."""
    import numpy as np

    (x_lo, x_hi), (y_lo, y_hi) = bounds(chart)
    xs = np.logspace(x_lo, x_hi, 512)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(10 ** x_lo, 10 ** x_hi)
    ax.set_ylim(10 ** y_lo, 10 ** y_hi)
    ax.grid(True, which="major", color="#dddddd", linewidth=0.6)
    for roof in chart.roofs:
        ys = np.minimum(roof.peak, chart.bandwidth * xs) if chart.bandwidth else (
            np.full_like(xs, roof.peak))
        style = ({"color": "#1f3b73", "linewidth": 2.0} if roof.used
                 else {"color": "#9aa5b8", "linewidth": 0.9, "linestyle": "--"})
        ax.plot(xs, ys, label=f"{roof.label}: {si(roof.peak, 'FLOP/s')}", clip_on=True,
                **style)
    for ridge in chart.ridges:  # of the roofs in use only
        if 10 ** x_lo < ridge < 10 ** x_hi:
            ax.axvline(ridge, color="#1f3b73", linestyle=":", linewidth=0.8)
            ax.annotate(f"ridge {ridge:.4g} FLOP/B", (ridge, 10 ** y_lo), xytext=(3, 3),
                        textcoords="offset points", fontsize=7, color="#1f3b73",
                        annotation_clip=True)
    seen: set[str] = set()
    for point in chart.points:
        colour = COLOURS.get(point.outcome, COLOURS["report"])
        marker, edge, size = ("v", "black", 60) if point.regressed else ("o", "white", 36)
        name = "regressed" if point.regressed else point.outcome
        ax.scatter([point.intensity], [point.performance], s=size, c=colour, marker=marker,
                   edgecolors=edge, linewidths=0.8, zorder=3, clip_on=True,
                   label=None if name in seen else name)
        seen.add(name)
        if point.measured:
            ax.plot([point.intensity, point.intensity], [point.performance, point.measured],
                    color=colour, linewidth=0.8, linestyle=":", zorder=2)
            ax.scatter([point.intensity], [point.measured], s=size, marker="D",
                       facecolors="none", edgecolors=colour, linewidths=1.2, zorder=3,
                       clip_on=True, label=None if "measured" in seen else "measured")
            seen.add("measured")
            if point.efficiency is not None:
                ax.annotate(f"{point.efficiency:.0%} of roof", (point.intensity, point.measured),
                            xytext=(4, -9), textcoords="offset points", fontsize=6,
                            color=colour, zorder=4, annotation_clip=True)
    ax.set_title(chart.hw, fontsize=10)
    ax.set_xlabel("DRAM arithmetic intensity on this chip, after on-chip reuse (FLOP/B)",
                  fontsize=8)
    ax.set_ylabel("attainable performance (FLOP/s)", fontsize=8)
    ax.tick_params(labelsize=7)
    if chart.skipped:
        ax.text(0.99, 0.01, f"{len(chart.skipped)} result(s) not placed (no FLOPs or bytes)",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=6, color="#7f7f7f")


def _numbers(indices: Sequence[int]) -> str:
    """``[3, 4, 5, 8]`` -> ``"3-5,8"``."""
    parts: list[str] = []
    run: list[int] = []
    for n in [*indices, None]:
        if n is not None and run and n == run[-1] + 1:
            run.append(n)
            continue
        if run:
            parts.append(str(run[0]) if len(run) == 1 else f"{run[0]}-{run[-1]}")
        run = [] if n is None else [n]
    return ",".join(parts)


def _number_points(ax: Any, chart: Chart, dpi: float) -> None:
    """Write each point's number beside it, where it overlaps no other number, no marker and
    stays inside the axes: candidate spots around the point at growing distances, a thin
    leader line when the number sits away from its point. Points that fall on the same
    pixels share one label (``3-5``)."""
    if not chart.points:
        return
    frame = ax.get_window_extent()
    to_pixels = ax.transData.transform
    where = [tuple(to_pixels((p.intensity, p.performance))) for p in chart.points]
    groups: list[tuple[tuple[float, float], list[int]]] = []
    for i, (x, y) in enumerate(where, start=1):
        for (gx, gy), members in groups:
            if abs(gx - x) < 4 and abs(gy - y) < 4:
                members.append(i)
                break
        else:
            groups.append(((x, y), [i]))
    px = _NUMBER_PT * dpi / 72
    markers = [(x - 4, y - 4, x + 4, y + 4) for x, y in where]
    placed: list[tuple[float, float, float, float]] = []

    def free(box: tuple[float, float, float, float]) -> bool:
        x0, y0, x1, y1 = box
        if x0 < frame.x0 + 1 or x1 > frame.x1 - 1 or y0 < frame.y0 + 1 or y1 > frame.y1 - 1:
            return False
        return not any(x0 < b[2] and b[0] < x1 and y0 < b[3] and b[1] < y1
                       for b in [*placed, *markers])

    directions = ((1, 1), (1, -1), (-1, 1), (-1, -1), (0, 1), (0, -1), (1, 0), (-1, 0))
    for (x, y), members in groups:
        text = _numbers(members)
        width, height = 0.62 * px * len(text) + 2, px + 2
        choice = None
        for radius in (5, 9, 14, 20, 28, 38, 50, 65, 85):
            for dx, dy in directions:
                ox, oy = dx * radius, dy * radius
                x0 = x + ox if dx > 0 else x + ox - width if dx < 0 else x - width / 2
                y0 = y + oy if dy > 0 else y + oy - height if dy < 0 else y - height / 2
                box = (x0, y0, x0 + width, y0 + height)
                if free(box):
                    choice = (ox, oy, dx, dy, box)
                    break
            if choice:
                break
        if choice is None:  # crowded beyond every spot: on the point itself, still readable
            choice = (0, 0, 0, 0, (x - width / 2, y - height / 2, x + width / 2, y + height / 2))
        ox, oy, dx, dy, box = choice
        placed.append(box)
        far = abs(ox) > 9 or abs(oy) > 9
        ax.annotate(text, (chart.points[members[0] - 1].intensity,
                           chart.points[members[0] - 1].performance),
                    xytext=(ox, oy), textcoords="offset pixels", fontsize=_NUMBER_PT,
                    ha="left" if dx > 0 else "right" if dx < 0 else "center",
                    va="bottom" if dy > 0 else "top" if dy < 0 else "center", zorder=5,
                    annotation_clip=True,
                    bbox={"boxstyle": "square,pad=0.05", "fc": "white", "ec": "none",
                          "alpha": 0.8},
                    arrowprops={"arrowstyle": "-", "color": "#888888", "linewidth": 0.5,
                                "shrinkA": 0, "shrinkB": 3} if far else None)


def _table(ax: Any, chart: Chart) -> None:
    """Beside the chart: the roofs and verdicts legend, then one line per numbered point.
    The font is made smaller (down to :data:`_MIN_TABLE_PT`) until every point has a line,
    then test names are shortened (never under :data:`_MIN_NAME` characters), then the
    font again, until every line ends inside the image."""
    ax.axis("off")
    handles, labels = ax.figure.axes[ax.figure.axes.index(ax) - 1].get_legend_handles_labels()
    ax.legend(handles, labels, loc="upper left", fontsize=7, frameon=False,
              bbox_to_anchor=(0.0, 1.0), ncol=2)
    height_px = ax.get_window_extent().height
    right_px = ax.figure.bbox.x1 - 4  # the image's edge, less a margin
    size, name = _TABLE_PT, _NAME
    while True:
        line_px = size * _TABLE_SPACING * ax.figure.dpi / 72
        top = 1.0 - (0.05 + line_px * 1.6 * math.ceil(len(labels) / 2) / height_px)
        room = max(1, int(height_px * top / line_px) - 1)
        if len(chart.points) > room and size > _MIN_TABLE_PT:  # every point, if a font can
            size = max(_MIN_TABLE_PT, size - 0.5)
            continue
        text = ax.text(0.0, top, _table_text(chart, name, room), transform=ax.transAxes,
                       va="top", ha="left", fontsize=size, family="monospace",
                       linespacing=_TABLE_SPACING)
        box = text.get_window_extent(ax.figure.canvas.get_renderer())
        over = box.x1 - right_px
        if over <= 0:
            return
        text.remove()
        widest = max(len(line) for line in text.get_text().splitlines())
        cut = math.ceil(over / (box.width / widest))  # characters past the edge
        if name - cut >= _MIN_NAME:
            name -= cut
        elif name > _MIN_NAME:
            name = _MIN_NAME
        elif size > _MIN_TABLE_PT:
            size = max(_MIN_TABLE_PT, size - 0.5)
        else:  # the narrowest table at the smallest font: drawn as it is
            ax.add_artist(text)
            return


def _table_text(chart: Chart, name: int, room: int) -> str:
    rows = [f"{i:>3}  {_clip(p.name, name):<{name}} {p.regime[:7]:<7} {p.intensity:>8.4g}  "
            f"{'REGRESSED' if p.regressed else p.outcome}"
            for i, p in enumerate(chart.points, start=1)]
    if len(rows) > room:
        rows = [*rows[:room - 1], f"     ... and {len(rows) - room + 1} more (see the report)"]
    header = f"{'#':>3}  {'test':<{name}} {'regime':<7} {'FLOP/B':>8}  verdict"
    return "\n".join([header, *rows])


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else "..." + text[len(text) - width + 3:]


def figure(report: Report | Sequence[Record],
           comparison: Comparison | None = None, *, title: str | None = None) -> Any:
    """A matplotlib Figure of *report* (a report or a list of records): per chip, a row with
    the chart (points numbered) and the table of its numbered points."""
    chart_list = charts(report, comparison)
    if not chart_list:
        raise RooflineError("nothing to plot: the report has no roofline results")
    figure_cls, canvas_cls = _matplotlib()
    rows = len(chart_list)
    fig = figure_cls(figsize=(ROW_INCHES[0], ROW_INCHES[1] * rows), dpi=DPI)
    canvas_cls(fig)
    axes = fig.subplots(rows, 2, squeeze=False, gridspec_kw={"width_ratios": [64, 36]})
    for i, chart in enumerate(chart_list):
        _draw(axes[i][0], chart)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    for i, chart in enumerate(chart_list):  # the layout is final: pixels are known
        chart_box, table_box = axes[i][0].get_position(), axes[i][1].get_position()
        bottom = (rows - 1 - i) / rows + 0.01  # the table may use its row's whole height
        axes[i][1].set_position([table_box.x0, bottom, table_box.width,
                                 chart_box.y1 - bottom])
        _table(axes[i][1], chart)
        _number_points(axes[i][0], chart, DPI)
    return fig


def check_path(path: str | os.PathLike[str]) -> Path:
    """*path* if its suffix is a format we write, else a RooflineError naming them."""
    target = Path(path)
    if target.suffix.lower() not in FORMATS:
        raise RooflineError(f"cannot write a roofline plot to {str(target)!r}: the file name "
                            f"must end in {', '.join(FORMATS)} (or use 'term' for a chart in "
                            f"the terminal)")
    return target


def write(report: Report | Sequence[Record],
          path: str | os.PathLike[str], comparison: Comparison | None = None, *,
          title: str | None = None) -> Path:
    """Draw *report* and write it to *path* (.png, .svg or .pdf), atomically."""
    target = check_path(path)
    fig = figure(report, comparison, title=title)
    return write_with(target, lambda tmp: fig.savefig(tmp, format=target.suffix.lower()[1:],
                                                      dpi=DPI))
