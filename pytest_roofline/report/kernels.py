"""Profiled kernels in the reports: each profiled test's kernels that lose the most time, in
the terminal summary and Markdown, and which roof each measured efficiency was set against.

A record carries its profiles under ``"profile"`` (``judging.kernels``): the JSON report
holds them as they are; these functions render them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .. import fields as F
from ..fields import Record
from ..text_table import escaped
from ..units import format_time

#: Kernels shown per profiled test in the summary and Markdown.
TOP = 5


def _profiled(records: Iterable[Record]) -> list[tuple[str, Mapping[str, Any]]]:
    out: list[tuple[str, Mapping[str, Any]]] = []
    for record in records:
        for profile in record.get(F.PROFILE) or ():
            if isinstance(profile, Mapping):
                out.append((str(record.get("nodeid", "?")), profile))
    return out


def _head(nodeid: str, profile: Mapping[str, Any]) -> str:
    share = float(profile.get("priced_share") or 0)
    where = "device" if profile.get("on_device") else "host"
    return (f"{nodeid} on {profile.get('hw')} ({where} time, {share:.0%} priced, "
            f"{profile.get('rows_total', 0)} kernels):")


def summary_lines(records: Iterable[Record], *, width: int | None = None,
                  top: int = TOP) -> list[str]:
    """The kernels losing the most time (measured - bound) of each profiled test."""
    profiled = _profiled(records)
    if not profiled:
        return []
    from ..profiling.text import rows_table  # loaded when a test was profiled

    cols = width or 80
    lines = ["Profiled kernels losing the most time (measured - bound):"]
    for nodeid, profile in profiled:
        head = _head(nodeid, profile)
        lines.append(head if len(head) <= cols else head[: cols - 3] + "...")
        lines += ["  " + line for line in rows_table(profile, top, cols - 2)]
        faster = list(profile.get("faster") or [])
        if faster:
            text = escaped(f"  faster than the bound: {', '.join(faster)}")
            lines.append(text if len(text) <= cols else text[: cols - 3] + "...")
        unpriced = list(profile.get("unpriced") or [])
        if unpriced:
            total = float(profile.get("measured_s") or 0)
            names = ", ".join(f"{u['name']} {float(u['measured_s']) / total:.0%}"
                              for u in unpriced[:3]) if total > 0 else ""
            text = escaped(f"  not priced: {names}")
            lines.append(text if len(text) <= cols else text[: cols - 3] + "...")
    return lines


def markdown_lines(records: Iterable[Record], *, top: int = TOP) -> list[str]:
    """The same as a Markdown section: one table per profiled test."""
    profiled = _profiled(records)
    if not profiled:
        return []
    from ..profiling.text import percent  # loaded when a test was profiled

    lines = ["", "### Profiled kernels", ""]
    for nodeid, profile in profiled:
        lines += [f"`{nodeid}` on {profile.get('hw')}: "
                  f"{float(profile.get('priced_share') or 0):.0%} of the measured time priced",
                  "", "| kernel | calls | measured | bound | % of roof | regime |",
                  "|---|---:|---:|---:|---:|---|"]
        for row in list(profile.get("rows") or [])[:top]:
            shapes = "; ".join(str(part) for part in (row.get("shapes", ""), row.get("layout"))
                               if part)
            label = escaped(f"{str(row['op']).removeprefix('aten::')}({shapes})").replace(
                "|", "\\|").replace("`", "'")
            lines.append(f"| `{label}` | {float(row['count']):g} | "
                         f"{format_time(float(row['measured_s']))} | "
                         f"{format_time(float(row['bound_s']))} | {percent(row)} | "
                         f"{row.get('regime', '-')} |")
        lines.append("")
    return lines


def roof_notes(records: Iterable[Record]) -> list[str]:
    """Which roof each measured efficiency used: per chip, the peak of the ridge and the
    memory roof (all cores, or the roof of the thread count the call kept busy), and for a
    calibration of this machine whether it is a full or a quick one, and its date."""
    seen: dict[str, str] = {}
    for record in records:
        if not isinstance(record.get("measured_s"), (int, float)) and not record.get(
                F.PROFILE):
            continue
        hw = str(record.get("hw"))
        threads = record.get("roof_threads")
        memory = f"{threads}-thread memory roof" if threads else "memory roof of all cores"
        seen.setdefault(hw, f"{record.get('peak_label', '?')} peak, {memory}"
                        + _calibration(hw))
    return [f"% roof on {hw}: {text}" for hw, text in seen.items()]


def _calibration(hw: str) -> str:
    """``; calibration of 2026-11-26 (full)`` for a calibrated chip cached here, else ''."""
    if not (hw == "host" or hw.startswith("cuda")):
        return ""
    try:
        from ..measuring import calibration
        from ..specfiles import load_yaml

        device = "cpu" if hw == "host" else hw
        path = calibration.cache_path(calibration.parse_device(device)[0])
        if not path.is_file():
            return ""
        provenance = load_yaml(path).get("provenance") or {}
        conditions = provenance.get("conditions") or {}
        kind = "quick" if conditions.get("quick") else "full"
        return f"; calibration of {provenance.get('date', '?')} ({kind})"
    except Exception:  # a report is written whatever the cache holds
        return ""
