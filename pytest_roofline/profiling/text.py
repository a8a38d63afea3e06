"""A profile as text: the kernels that lose the most time, then what was not priced.

Rendered from the profile's JSON form, so the CLI, the plugin's summary and a saved report
print alike. Every line keeps to the given width (80 columns by default): in the tables the
op's label is cut, never the figures; a sentence (a note, the faster-than-bound line) wraps,
its continuation lines indented, never cut.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any

from ..efficiency import ABOVE_ROOF, AT_BOUND, FASTER, NO_WORK
from ..efficiency import percent as percent_of
from ..text_table import escaped, render, wrap_line
from ..units import format_time


def percent(row: Mapping[str, Any]) -> str:
    """``68%`` of the roof; a row above its bound with its figure, never as 100%: ``160%!``
    faster than it (``faster!`` where the time read 0), ``103%~`` at it within the
    measurement's allowance; ``no work`` for a row whose bound is 0. A row that renders its
    own cell (``cell``, :meth:`KernelRow.percent`: the one judgement) shows it as it is."""
    cell = row.get("cell")
    if isinstance(cell, str) and cell:
        return cell
    note = row.get("note")
    ratio = row.get("ratio")
    figure = percent_of(float(ratio)) if isinstance(ratio, (int, float)) else None
    if note == FASTER:
        return "faster!" if figure is None else figure + "!"
    if note == AT_BOUND:
        return (figure or "0 s") + "~"
    if note == NO_WORK:
        return "no work"
    value = row.get("efficiency")
    if not isinstance(value, (int, float)):
        return "-"
    return percent_of(float(value))


def wrap_words(text: str, width: int | None) -> list[str]:
    """*text* in lines of at most *width* columns, continuations indented (one line when
    None: ``--wide``)."""
    if width is None:
        return [text]
    return textwrap.wrap(text, width=width, subsequent_indent="    ") or [""]


def _count(value: Any) -> str:
    number = float(value)
    return str(int(number)) if number == int(number) else f"{number:.3g}"


def _label(row: Mapping[str, Any]) -> str:
    op = str(row.get("op", "?")).removeprefix("aten::").removeprefix("triton::")
    shapes = str(row.get("shapes") or "")
    if row.get("layout"):  # another row of its op has these shapes: its strides differ
        shapes = f"{shapes}; {row['layout']}"
    return f"{op}({shapes})" if shapes else op


#: The mark of a bound priced under an assumption (the row's ``assumed``), and its legend.
ASSUMED = "*"
ASSUMED_LEGEND = "bound: * priced under an assumption, the lowest bound (see the notes)"


def bound(row: Mapping[str, Any]) -> str:
    """A row's bound, ``1.2 ms``; ``1.2 ms*`` where it was priced under an assumption (a
    convolution's stride a trace before torch 2.1 leaves out: the lowest bound taken)."""
    return format_time(float(row["bound_s"])) + (ASSUMED if row.get("assumed") else "")


def rows_table(profile: Mapping[str, Any], top: int, width: int | None) -> list[str]:
    rows = list(profile.get("rows") or [])[:top]
    body = [[_label(r), _count(r["count"]), format_time(float(r["measured_s"])),
             bound(r), percent(r), str(r.get("regime", "-")),
             str(r.get("precision", "-")).split(":")[-1]]
            for r in rows]
    return render(["kernel", "calls", "measured", "bound", "% roof", "regime", "peak"], body,
                  align="lrrrrll", width=width, min_shrunk=24)


def render_profile(profile: Mapping[str, Any], *, top: int = 10, width: int | None = 80,
                   ) -> str:
    """The text report of a profile's JSON form (:meth:`Profile.to_dict`), in *width*
    columns (None: a row a line, names whole)."""
    total = float(profile.get("measured_s") or 0)
    share = float(profile.get("priced_share") or 0)
    where = "kernel time on the device" if profile.get("on_device") else "op time on the host"
    best = profile.get("max_efficiency")
    head = [f"{profile.get('source')} on {profile.get('hw')}",
            f"{format_time(total)} of {where}, {share:.1%} priced; max efficiency "
            f"{'-' if best is None else format(float(best), '.0%')}",
            f"kernels by time lost (measured - bound), "
            f"{min(top, int(profile.get('rows_total') or 0))} of {profile.get('rows_total')}:"]
    lines = [*head, *rows_table(profile, top, width)]
    faster = list(profile.get("faster") or [])
    if faster:
        lines.append(f"FASTER THAN PHYSICS ({len(faster)}): {', '.join(faster[:3])}"
                     f"{' ...' if len(faster) > 3 else ''}: beyond the physical limit, so "
                     f"counts too high, a lower precision than priced, or a wrong clock")
    above = list(profile.get("above_roof") or [])
    if above:
        lines.append(f"above the roof, within the physical limit ({len(above)}): findings, "
                     f"never failures (data from a cache, or a roof measured low)")
    marks = {r.get("note") for r in list(profile.get("rows") or [])[:top]}
    if FASTER in marks or AT_BOUND in marks or ABOVE_ROOF in marks:
        lines.append("% roof: ! beat its physical limit; cache/peak above the roof within "
                     "it; ~ above the roof within noise; 1/6: that many of its calls")
    if any(r.get("assumed") for r in list(profile.get("rows") or [])[:top]):
        lines.append(ASSUMED_LEGEND)
    categories = dict(profile.get("by_category") or {})
    if categories and total > 0:
        lines += wrap_words("by category: " + ", ".join(
            f"{name} {float(seconds) / total:.1%}" for name, seconds in categories.items()),
            width)
    parts = profile.get("timeline")
    if isinstance(parts, Mapping) and float(parts.get("span_s") or 0) > 0:
        span = float(parts["span_s"])
        lines += wrap_words(
            f"timeline of {format_time(span)}: compute {float(parts['compute_s']) / span:.1%}, "
            f"communication exposed {float(parts['exposed_communication_s']) / span:.1%} "
            f"(and {float(parts['overlapped_communication_s']) / span:.1%} hidden behind "
            f"compute), copies {float(parts['copies_s']) / span:.1%}, idle "
            f"{float(parts['idle_s']) / span:.1%}" + _idle_split(parts, span), width)
    lines += _collectives(profile, top, width)
    idle = float(profile.get("idle_s") or 0)
    if idle > 0 and total > 0:
        lines.append(f"doing no work (views, empty, 0-size): {format_time(idle)}, "
                     f"{idle / total:.1%} of the time, never judged")
    unpriced = list(profile.get("unpriced") or [])
    if unpriced:
        lines.append(f"not priced ({1 - share:.1%} of the time):")
        causes = dict(profile.get("unpriced_by_cause") or {})
        if causes and total > 0:
            lines += wrap_words("by cause: " + ", ".join(
                f"{cause} {float(seconds) / total:.1%}" for cause, seconds in causes.items()),
                width)
        body = [[str(u["name"]), _count(u["count"]), format_time(float(u["measured_s"])),
                 f"{float(u['measured_s']) / total:.1%}" if total > 0 else "-",
                 str(u["reason"])] for u in unpriced[:top]]
        lines += render(["op or kernel", "calls", "measured", "share", "why"], body,
                        align="lrrrl", width=width, min_shrunk=24, squeeze=[4],
                        min_squeezed=12)
        if len(unpriced) > top:
            lines.append(f"{len(unpriced) - top} more not priced")
    for note in profile.get("notes") or []:
        lines.append(f"note: {note}")
    # the tables fit *width* already; a sentence longer than it wraps, never cut; names from
    # a trace never reach the terminal with their control characters
    return "\n".join(part for line in lines for part in wrap_line(escaped(line), width,
                                                                   hang=4))


def _idle_split(parts: Mapping[str, Any], span: float) -> str:
    """`` (host-bound 1.2%, waiting 0.4%)``: the idle time's split where it is known (an
    unknown part, launches outside the trace's window, named too)."""
    if "idle_host_s" not in parts or not float(parts.get("idle_s") or 0) > 0:
        return ""
    split = [f"host-bound {float(parts['idle_host_s']) / span:.1%}",
             f"waiting {float(parts['idle_waiting_s']) / span:.1%}"]
    if float(parts.get("idle_unknown_s") or 0) > 0:
        split.append(f"launch not in the trace {float(parts['idle_unknown_s']) / span:.1%}")
    return f" ({', '.join(split)})"


def _collectives(profile: Mapping[str, Any], top: int, width: int | None) -> list[str]:
    """The priced collectives with nccl-tests' algorithm and bus bandwidth, and their share
    of the link roof (:mod:`.comm_calls`)."""
    rows = [r for r in list(profile.get("collectives") or []) if r.get("roof") is not None]
    if not rows:
        return []
    body = [[str(r["name"]) + (f" over {r['group']}" if r.get("group") else "")
             + group_mark(r.get("group_from")),
             f"{float(r['data_bytes']) / 1e6:.3g} MB", str(r["calls"]),
             format_time(float(r["measured_s"])), f"{float(r['algbw_Bps']) / 1e9:.3g} GB/s",
             f"{float(r['busbw_Bps']) / 1e9:.3g} GB/s", f"{float(r['roof']):.1%}"]
            for r in rows[:top]]
    return ["collectives (algbw, busbw as nccl-tests reports them):", *render(
        ["collective", "size", "calls", "measured", "algbw", "busbw", "% link roof"], body,
        align="lrrrrrr", width=width)]


def group_mark(source: object) -> str:
    """What a report writes after a group size that was not recorded: `` (sizes)`` where its
    message sizes say it, `` (trace)`` where the trace's ``distributedInfo`` does; ''."""
    if source in (None, "", "recorded"):
        return ""
    return " (sizes)" if source == "inferred from its message sizes" else " (trace)"
