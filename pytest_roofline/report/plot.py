"""Roofline charts: what a chart shows, and drawing it with matplotlib (the ``plot`` extra).

A chart per chip: the memory-bandwidth slope, one compute roof per precision the chip lists
(dense matrix peaks; roofs of precisions no record uses are drawn thin and dashed), and each
record as a point at (intensity, attainable FLOP/s = FLOPs / bound time), labelled by its test
name and coloured by verdict: passed green, failed red, report-only grey; a regression against
the baseline is drawn as a downward triangle with a black edge.

Roofs are scaled like the analysis that made the records (FLOPs per MAC, derate), so a
one-kernel workload sits on its roof and a program of kernels under it. A chip the catalog does
not know (a spec file not at hand) gets the one roof its records imply: bandwidth = bytes over
memory time, peak = ridge x bandwidth.

:func:`write` draws every chip as a subplot of ONE figure (two columns, each subplot
6.4 x 4.8 inches at 100 dpi, so a PNG of one chip is 640 x 480 pixels and of two 1280 x 480)
and writes ``.png``, ``.svg`` or ``.pdf``. matplotlib is imported only here, only when
drawing, and never through pyplot: the user's backend and figures are left alone.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import RooflineError
from .compare import Comparison, index, records_of

FORMATS = (".png", ".svg", ".pdf")
SUBPLOT_INCHES = (6.4, 4.8)
DPI = 100
COLUMNS = 2
COLOURS = {"passed": "#2ca02c", "failed": "#d62728", "error": "#d62728", "report": "#7f7f7f"}
LABEL_LIMIT = 25  # above this many points on a chip, only failures and regressions are labelled
INSTALL = 'pip install "pytest-roofline[plot]"'


class MissingExtraError(RooflineError, ImportError):
    """An optional dependency is not installed; the message says which extra to install."""


@dataclass(frozen=True)
class Roof:
    """A compute roof: *peak* in FLOP/s for the precisions in *dtypes*."""

    dtypes: tuple[str, ...]
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
        """The roof the points are measured against (the highest roof in use)."""
        used = [r for r in self.roofs if r.used] or list(self.roofs)
        return max(used, key=lambda r: r.peak) if used else None

    def roof_at(self, intensity: float, roof: Roof) -> float:
        """Attainable FLOP/s under *roof* at *intensity*: min(peak, bandwidth x intensity)."""
        if self.bandwidth is None:
            return roof.peak
        return min(roof.peak, self.bandwidth * intensity)


def short_name(nodeid: str) -> str:
    """``tests/test_x.py::TestK::test_gemm[8]`` -> ``test_gemm[8]``."""
    return nodeid.rsplit("::", 1)[-1]


def _number(record: Mapping[str, Any], name: str) -> float | None:
    value = record.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        return None
    return float(value)


def _scale(records: Sequence[Mapping[str, Any]]) -> tuple[float, float]:
    """(FLOP scale, derate) the records were analysed with (2 FLOPs per MAC -> 1.0)."""
    first = records[0]
    fpm = _number(first, "flops_per_mac") or 2.0
    derate = _number(first, "derate") or 1.0
    return fpm / 2.0, derate


def _catalog_roofs(hw: str, scale: float, derate: float) -> tuple[float, dict[str, float]] | None:
    from ..hardware import get_hardware

    try:
        chip = get_hardware(hw)
    except (RooflineError, OSError):
        return None
    peaks = {d: p * scale * derate for d, p in chip.matrix.items()}
    return chip.memory_bandwidth * derate, peaks


def _implied_roofs(records: Sequence[Mapping[str, Any]]) -> tuple[float | None, dict[str, float]]:
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
                peaks.setdefault(str(record.get("dtype")), ridge * bandwidth)
    return bandwidth, peaks


def _point(nodeid: str, record: Mapping[str, Any], regressed: bool) -> Point | None:
    intensity = _number(record, "intensity")
    performance = _number(record, "attainable_flops")
    if performance is None:
        flops, time = _number(record, "flops"), _number(record, "time_s")
        performance = flops / time if flops is not None and time else None
    if (intensity is None or performance is None or not math.isfinite(intensity)
            or not math.isfinite(performance) or intensity <= 0 or performance <= 0):
        return None
    return Point(short_name(nodeid), nodeid, str(record.get("dtype")), intensity, performance,
                 str(record.get("regime", "")), str(record.get("outcome", "")), regressed)


def charts(report: Mapping[str, Any] | Sequence[Mapping[str, Any]],
           comparison: Comparison | None = None) -> list[Chart]:
    """One chart per chip of *report* (a report or a list of records), sorted by chip."""
    regressed = set(comparison.regressed) if comparison else set()
    by_chip: dict[str, list[tuple[Any, Mapping[str, Any]]]] = {}
    for key, record in index(records_of(report)).items():
        by_chip.setdefault(key[1], []).append((key, record))
    out: list[Chart] = []
    for hw in sorted(by_chip):
        items = by_chip[hw]
        recs = [r for _, r in items]
        scale, derate = _scale(recs)
        known = _catalog_roofs(hw, scale, derate)
        bandwidth, peaks = known if known is not None else _implied_roofs(recs)
        used = {str(r.get("dtype")) for r in recs}
        grouped: dict[float, list[str]] = {}
        for dtype, peak in peaks.items():
            grouped.setdefault(peak, []).append(dtype)
        roofs = tuple(Roof(tuple(names), peak, bool(used & set(names)))
                      for peak, names in sorted(grouped.items(), reverse=True))
        points, skipped = [], []
        for key, record in items:
            point = _point(key[0], record, key in regressed)
            if point is None:
                skipped.append(key[0])
            else:
                points.append(point)
        out.append(Chart(hw, bandwidth, roofs, tuple(points), tuple(skipped)))
    return out


def decades(low: float, high: float, minimum: int = 2) -> tuple[float, float]:
    """Whole-decade log10 bounds enclosing [low, high], at least *minimum* decades wide."""
    lo = math.floor(math.log10(low))
    hi = math.ceil(math.log10(high))
    while hi - lo < minimum:
        if (hi - lo) % 2 == 0:
            hi += 1
        else:
            lo -= 1
    return float(lo), float(hi)


def bounds(chart: Chart, *, whole: bool = True) -> tuple[tuple[float, float], tuple[float, float]]:
    """log10 (x, y) bounds showing every point, every roof and the ridges.

    *whole*: on whole decades with some margin (matplotlib); else tight, a quarter decade
    beyond the data and the roofs in use (the character chart, which has few rows to spare).
    """
    xs = [p.intensity for p in chart.points]
    ys = [p.performance for p in chart.points]
    roofs = list(chart.roofs) if whole else [r for r in chart.roofs if r.used]
    if not roofs and chart.top is not None:
        roofs = [chart.top]
    for roof in roofs:
        ys.append(roof.peak)
        if chart.bandwidth:
            xs.append(roof.peak / chart.bandwidth)
    if not xs:
        xs = [1.0, 100.0]
    if not ys:
        ys = [1e9, 1e12]
    if whole:
        x_lo, x_hi = decades(min(xs) / 2, max(xs) * 2)
    else:
        x_lo, x_hi = _tight(min(xs), max(xs))
    if chart.bandwidth:  # include where the slope enters the chart
        ys.append(chart.bandwidth * 10 ** x_lo)
    if whole:
        y_lo, y_hi = decades(min(ys) / 2, max(ys) * 2)
    else:
        y_lo, y_hi = _tight(min(ys), max(ys))
    return (x_lo, x_hi), (y_lo, y_hi)


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


def _draw(ax: Any, chart: Chart) -> None:
    import numpy as np

    from ..units import si

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
        ax.plot(xs, ys, label=f"{roof.label}: {si(roof.peak, 'FLOP/s')}", **style)
    top = chart.top
    if chart.bandwidth and top is not None:
        ridge = top.peak / chart.bandwidth
        ax.axvline(ridge, color="#1f3b73", linestyle=":", linewidth=0.8)
        ax.annotate(f"ridge {ridge:.4g} FLOP/B", (ridge, 10 ** y_hi), xytext=(3, -10),
                    textcoords="offset points", fontsize=7, color="#1f3b73")
        x_text = 10 ** (x_lo + 0.15 * (x_hi - x_lo))
        ax.annotate(f"{si(chart.bandwidth, 'B/s')}", (x_text, chart.bandwidth * x_text),
                    xytext=(8, -10), textcoords="offset points", fontsize=7,
                    color="#1f3b73")
    label_all = len(chart.points) <= LABEL_LIMIT
    seen: set[str] = set()
    for point in chart.points:
        colour = COLOURS.get(point.outcome, COLOURS["report"])
        marker, edge, size = ("v", "black", 70) if point.regressed else ("o", "white", 42)
        name = "regressed" if point.regressed else point.outcome
        ax.scatter([point.intensity], [point.performance], s=size, c=colour, marker=marker,
                   edgecolors=edge, linewidths=0.8, zorder=3,
                   label=None if name in seen else name)
        seen.add(name)
        if label_all or point.regressed or point.outcome in ("failed", "error"):
            ax.annotate(point.name, (point.intensity, point.performance), xytext=(4, 3),
                        textcoords="offset points", fontsize=7, zorder=4)
    ax.set_title(chart.hw + ("" if label_all else "  (labels: failures and regressions)"),
                 fontsize=10)
    ax.set_xlabel("arithmetic intensity (FLOP/B)", fontsize=8)
    ax.set_ylabel("attainable performance (FLOP/s)", fontsize=8)
    ax.tick_params(labelsize=7)
    if chart.skipped:
        ax.text(0.99, 0.01, f"{len(chart.skipped)} result(s) not placed (no FLOPs or bytes)",
                transform=ax.transAxes, ha="right", va="bottom", fontsize=6, color="#7f7f7f")
    ax.legend(loc="lower right", fontsize=6, framealpha=0.85)


def figure(report: Mapping[str, Any] | Sequence[Mapping[str, Any]],
           comparison: Comparison | None = None, *, title: str | None = None) -> Any:
    """A matplotlib Figure of *report* (a report or a list of records), one subplot per chip."""
    chart_list = charts(report, comparison)
    if not chart_list:
        raise RooflineError("nothing to plot: the report has no roofline results")
    figure_cls, canvas_cls = _matplotlib()
    columns = min(COLUMNS, len(chart_list))
    rows = math.ceil(len(chart_list) / columns)
    fig = figure_cls(figsize=(SUBPLOT_INCHES[0] * columns, SUBPLOT_INCHES[1] * rows), dpi=DPI)
    canvas_cls(fig)
    axes = fig.subplots(rows, columns, squeeze=False)
    for i, chart in enumerate(chart_list):
        _draw(axes[i // columns][i % columns], chart)
    for j in range(len(chart_list), rows * columns):
        axes[j // columns][j % columns].set_visible(False)
    if title:
        fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def check_path(path: str | os.PathLike[str]) -> Path:
    """*path* if its suffix is a format we write, else a RooflineError naming them."""
    target = Path(path)
    if target.suffix.lower() not in FORMATS:
        raise RooflineError(f"cannot write a roofline plot to {str(target)!r}: the file name "
                            f"must end in {', '.join(FORMATS)} (or use 'term' for a chart in "
                            f"the terminal)")
    return target


def write(report: Mapping[str, Any] | Sequence[Mapping[str, Any]],
          path: str | os.PathLike[str], comparison: Comparison | None = None, *,
          title: str | None = None) -> Path:
    """Draw *report* and write it to *path* (.png, .svg or .pdf), atomically."""
    from .atomic import write_with

    target = check_path(path)
    fig = figure(report, comparison, title=title)
    return write_with(target, lambda tmp: fig.savefig(tmp, format=target.suffix.lower()[1:],
                                                      dpi=DPI))
