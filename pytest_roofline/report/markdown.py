"""A Markdown summary of a report, for pull requests and CI job pages.

``render(report, comparison)`` gives: a headline, the regressions against the baseline
(each with the baseline value, the new value and the rule), failed expectations, then the
table of every result with failures and regressions first, and finally the results new or
vanished since the baseline. ``append_step_summary`` adds it to GitHub's job summary file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..atomic import ENCODING_ERRORS, write_text
from ..fields import Record
from . import table
from .compare import Comparison, Key, index, records_of, where
from .kernels import markdown_lines
from .records import Report
from .rules import METRICS, format_number
from .table import Column, has_measured, natural

STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
_STATUS = {"passed": "ok", "failed": "**FAIL**", "error": "**ERROR**", "report": "report"}
INTENSITY_NOTE = ("DRAM FLOP/B: FLOPs over the DRAM traffic on each chip, after its on-chip "
                  "memory keeps the handoffs it can hold (`dram_intensity` in the JSON "
                  "report); `workload_intensity` is over all tensor traffic, the same on "
                  "every chip.")


def cell(text: object) -> str:
    """Text made safe for a table cell: pipes escaped, newlines flattened."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def code(text: object) -> str:
    """Inline code that survives backticks inside it."""
    value = str(text).replace("\n", " ")
    fence = "``" if "`" in value else "`"
    pad = " " if value.startswith("`") or value.endswith("`") else ""
    return f"{fence}{pad}{value}{pad}{fence}"


def _columns(measured: bool) -> tuple[Column, ...]:
    """The results table's columns after the status and the test id: the terminal
    summary's (read at each call), with the measured ones when a record was measured."""
    return (*table.COLUMNS, *(table.MEASURED_COLUMNS if measured else ()))


def _row(key: Key, record: Record, regressed: bool,
         columns: Sequence[Column]) -> str:
    outcome = str(record.get("outcome", ""))
    status = _STATUS.get(outcome, cell(outcome))
    if regressed:
        status = f"{status}, **REGRESSED**" if outcome in ("failed", "error") else "**REGRESSED**"
    # the figures and the expectation label exactly as the terminal summary shows them,
    # unless a column has a Markdown formatter of its own
    cells = [status, code(cell(key[0])), *(cell(c.cell_in_markdown(record)) for c in columns)]
    return "| " + " | ".join(cells) + " |"


def _rank(item: tuple[Key, Record], regressed: set[Key]) -> tuple[Any, ...]:
    """Failures, then regressions, then the rest; numbers in test ids read as numbers."""
    key, record = item
    outcome = record.get("outcome")
    group = 0 if outcome in ("failed", "error") else 1 if key in regressed else 2
    return (group, natural(key[0]), key[1], key[2])


def render(report: Report | Sequence[Record],
           comparison: Comparison | None = None, *, title: str = "Roofline report",
           max_rows: int | None = 500) -> str:
    """The Markdown summary of *report* (a report or a list of records).

    *max_rows* caps the results table (the rest is counted, not listed); None lists all.
    """
    items = list(index(records_of(report)).items())
    regressed = set(comparison.regressed) if comparison else set()
    failed = [(k, r) for k, r in items if r.get("outcome") in ("failed", "error")]
    # a regressed record's failure is its regressions, listed in their own section
    own = [(k, r) for k, r in failed if k not in regressed]
    chips = sorted({k[1] for k, _ in items})
    lines = [f"## {title}", ""]
    # pytest counts tests, a test has a result per chip (and precision): both are counted
    tests = {k[0] for k, _ in items}
    failed_tests = {k[0] for k, _ in failed}
    facts = [f"{_count(len(tests), 'test')}, {_count(len(items), 'result')} on "
             f"{_count(len(chips), 'chip')}",
             f"{len(failed_tests)} test{'s' if len(failed_tests) != 1 else ''} failed "
             f"({_count(len(failed), 'result')})"]
    if comparison is not None:
        against = f" against {code(comparison.base)}" if comparison.base else ""
        n = len(comparison.regressions)
        facts.insert(0, f"**{n} regression{'s' if n != 1 else ''}**{against}" if n
                     else f"no regression{against}")
    lines += [" · ".join(facts), ""]

    if comparison is not None and comparison.regressions:
        lines += ["### Regressions", "", "| test | chip | rule | baseline | new | message |",
                  "|---|---|---|---|---|---|"]
        for reg in comparison.regressions:
            message = reg.message.removeprefix(f"{where(reg.key)}: ")
            lines.append(f"| {code(cell(reg.nodeid))} | {cell(where(reg.key))} | "
                         f"{code(cell(reg.rule))} | {cell(_value(reg.rule, reg.base))} | "
                         f"{cell(_value(reg.rule, reg.new))} | {cell(message)} |")
        lines.append("")
    if own:
        lines += ["### Failures", ""]
        for key, record in own:
            message = str(record.get("message") or record.get("outcome"))
            lines.append(f"- {code(key[0])} on {cell(where(key))}: {cell(message)}")
        lines.append("")
    formula = [(k, r) for k, r in items if isinstance(r.get("unknown"), dict) and r["unknown"]]
    if formula:  # their FLOPs are not counted: the bound is not a lower bound on compute
        lines += ["### Ops without a formula", ""]
        for key, record in formula:
            listed = ", ".join(f"{code(cell(str(op)))} x{n}"
                               for op, n in sorted(record["unknown"].items()))
            lines.append(f"- {code(key[0])} on {cell(where(key))}: {listed}")
        lines.append("")
    if comparison is not None and comparison.warnings:
        lines += ["### Warnings", ""]
        lines += [f"- {cell(w)}" for w in comparison.warnings]
        lines.append("")

    lines += ["### Results", ""]
    if items:
        columns = _columns(has_measured([r for _, r in items]))
        headers = ("", "test", *(c.header_in_markdown for c in columns))
        lines += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
        ordered = sorted(items, key=lambda item: _rank(item, regressed))
        shown = ordered if max_rows is None else ordered[:max_rows]
        lines += [_row(k, r, k in regressed, columns) for k, r in shown]
        if len(shown) < len(ordered):
            lines += ["", f"... and {len(ordered) - len(shown)} more results (all passed or "
                          f"report-only; see the JSON report)."]
        lines += ["", INTENSITY_NOTE]
        lines += markdown_lines(r for _, r in shown)
    else:
        lines.append("No roofline results.")
    lines.append("")

    if comparison is not None:
        for heading, keys in (("New since the baseline (not compared)", comparison.new),
                              ("Vanished since the baseline", comparison.vanished)):
            if keys:
                lines += [f"<details><summary>{heading}: {len(keys)}</summary>", ""]
                lines += [f"- {code(k[0])} on {cell(where(k))}" for k in keys]
                lines += ["", "</details>", ""]
        lines += [f"Checks: {code(', '.join(['regime', 'fits', *map(str, comparison.rules)]))}."
                  f" {comparison.summary().capitalize()}.", ""]
    return "\n".join(lines)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _value(rule: str, value: Any) -> str:
    """A regression's baseline or new value, in the unit of the rule's metric."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return str(value)
    metric = METRICS.get(rule.split(":", 1)[0])
    if isinstance(value, (int, float)):
        return metric.show(float(value)) if metric else format_number(float(value))
    return str(value)


def write(path: str | os.PathLike[str], text: str) -> Path:
    """Write *text* to *path* (folders created), atomically."""
    return write_text(path, text)


def append_step_summary(text: str, path: str | os.PathLike[str] | None = None) -> Path | None:
    """Append *text* to GitHub's job summary (``$GITHUB_STEP_SUMMARY``, or *path*).

    Returns the file written, or None when no path is given and the variable is unset.
    """
    target = path if path is not None else os.environ.get(STEP_SUMMARY)
    if not target:
        return None
    with open(target, "a", encoding="utf-8", errors=ENCODING_ERRORS) as handle:
        handle.write(text if text.endswith("\n") else text + "\n")
        handle.write("\n")
    return Path(target)
