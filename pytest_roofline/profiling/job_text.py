"""A job's reports (:mod:`.job`): the text (a headline naming the rank that keeps the
others waiting, the rank table, the collectives with the most skew, each rank's priced
collectives on the link roof with nccl-tests' bandwidths) and the same as Markdown."""

from __future__ import annotations

import statistics
from typing import Any

from ..text_table import render
from ..units import format_time
from .text import group_mark

__all__ = ["headline", "markdown", "table", "time_of"]


def headline(job: Any) -> str:
    """The job in a line: its ranks, chips, median step and the rank that keeps the others
    waiting."""
    hw = sorted({r.profile.hw for r in job.ranks})
    plural = "s" if len(job.ranks) > 1 else ""
    line = (f"job of {len(job.ranks)} rank{plural} on {', '.join(hw)}: median step "
            f"{time_of(job.median_step_s)}")
    straggler = job.straggler
    if straggler is not None:
        last = sum(1 for c in job.collectives if c.straggler == straggler)
        line += (f"; rank {straggler} keeps the others waiting: last at {last} of "
                 f"{len(job.collectives)} collectives, {time_of(job.waits()[straggler])} "
                 f"in all")
    return line


def rank_cells(job: Any) -> tuple[list[str], list[list[str]]]:
    """The rank table's headers and rows."""
    median = job.median_step_s
    headers = ["rank", "step", "vs median", "compute", "exposed comm", "idle",
               "% of roof", "trace"]
    rows = [[str(r.rank), time_of(r.step_s),
             f"{r.step_s / median - 1:+.1%}" if median > 0 else "-", time_of(r.compute_s),
             time_of(r.exposed_communication_s), time_of(r.idle_s),
             "-" if r.roof is None else f"{r.roof:.1%}", r.source] for r in job.ranks]
    return headers, rows


def collective_cells(job: Any, top: int) -> tuple[list[str], list[list[str]]]:
    """The *top* collectives with the most skew: headers and rows."""
    headers = ["collective", "ranks", "min", "median", "max", "skew", "last"]
    worst = sorted(job.collectives, key=lambda c: (-c.skew_s, c.name, c.index))[:top]
    rows = []
    for item in worst:
        times = [s for _, s in item.seconds]
        rows.append([item.label, str(len(times)), time_of(min(times)),
                     time_of(statistics.median(times)), time_of(max(times)), time_of(item.skew_s),
                     f"rank {item.straggler}"])
    return headers, rows


def link_cells(job: Any) -> tuple[list[str], list[list[str]]]:
    """Each rank's collectives with nccl-tests' bandwidths and their share of the link
    roof: headers and rows."""
    headers = ["rank", "collective", "group", "calls", "time", "algbw", "busbw",
               "% link roof"]
    rows = []
    for row in job.collective_rows():
        group = "-" if row["group"] is None else (
            f"{row['group']}" + group_mark(row["group_from"]))
        rows.append([str(row["rank"]), row["name"], group, str(row["calls"]),
                     time_of(row["measured_s"]), _bw(row["algbw_Bps"]),
                     _bw(row["busbw_Bps"]),
                     "-" if row["roof"] is None else f"{row['roof']:.1%}"])
    return headers, rows


def table(job: Any, top: int = 10, width: int = 100) -> str:
    """The text report: the headline, the rank table, the collectives with the most
    skew, and each rank's collectives on the link roof (priced ones)."""
    lines = [headline(job), ""]
    lines += render(*rank_cells(job), align="lrrrrrrl", width=width, optional=(7,))
    if job.collectives:
        lines += ["", "collectives, most skew first (matched by their order on each rank, "
                  "aligned by their ends):"]
        lines += render(*collective_cells(job, top), align="lrrrrrl", width=width)
    headers, rows = link_cells(job)
    priced = [row for row in rows if row[-1] != "-"]
    if priced:
        lines += ["", "collectives on the link roof (algbw, busbw as nccl-tests):"]
        lines += render(headers, priced[: top * 2], align="rlrrrrrr", width=width)
    for item in job.unmatched[:top]:
        lines.append(f"not on every rank: {item}")
    lines += [f"note: {note}" for note in job.notes]
    return "\n".join(lines)


def markdown(job: Any, top: int = 10) -> str:
    """The report as Markdown: the headline, the rank table and the collectives."""
    out = [f"**{headline(job)}**", ""]
    for headers, rows in (rank_cells(job), collective_cells(job, top),
                          link_cells(job)):
        if not rows:
            continue
        out.append("| " + " | ".join(headers) + " |")
        out.append("|" + "---|" * len(headers))
        out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |"
                for row in rows]
        out.append("")
    return "\n".join(out)


def time_of(seconds: float | None) -> str:
    """``1.2 ms``; ``-`` for an unknown time."""
    return "-" if seconds is None else str(format_time(seconds))


def _bw(value: float | None) -> str:
    """``6.41 GB/s``, ``745 kB/s``: three significant digits in the unit that fits."""
    if value is None:
        return "-"
    for scale, unit in ((1e9, "GB/s"), (1e6, "MB/s")):
        if value >= scale:
            return f"{value / scale:.3g} {unit}"
    return f"{value / 1e3:.3g} kB/s"
