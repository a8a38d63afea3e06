"""A failure's message: whole as data, wrapped on the terminal.

The plugin fails a test (or errors its set-up, or its module's collection) with its own
message, one line per failure: the verdict, the rule that broke, the marker's mistake. As
data that message stays whole: ``str()`` of the report's ``longrepr``, JUnit's failure
message, pytest's short summary (``-rf``; cut to the width unless on CI or under ``-vv``)
and the report a pytest-xdist worker sends all hold each failure on one line, so a log can
be grepped for it. Only the terminal's failures
section wraps it, to the terminal's width (``COLUMNS`` respected): each failure's first line
starts as the message does, the rest are indented :data:`HANG` more, and a word is never
broken (a path longer than a line keeps a line of its own, whole, to be copied).

pytest prints a report's ``longrepr`` through its ``toterminal(writer)`` method when it has
one, and as ``str()`` otherwise (``TestReport.toterminal``): :class:`Message` is a ``str``
that has that method. pytest documents no such protocol for a plugin's ``longrepr``; this is
the one place that relies on it, and a test
(``test_a_failure_wraps_on_the_terminal_and_stays_whole_as_data``) fails when pytest stops
calling it. A worker's report crosses to the pytest-xdist controller as JSON, where
``longrepr`` arrives as a plain ``str``: :func:`mark`, :func:`unmark` and :func:`restore`
(for the ``pytest_report_to_serializable`` and ``pytest_report_from_serializable`` hooks)
carry across the fact that it was a :class:`Message`.
"""

from __future__ import annotations

from typing import Any

from ..text_table import wrap_line

#: Columns a failure's continuation lines are indented by, beyond the line they continue:
#: past the two of a detail line (``  matrix FLOPs declared ...``), so that one is told
#: from the other.
HANG = 4

#: The key of a serialized report that says its ``longrepr`` is a :class:`Message`.
KEY = "roofline_message"


class Message(str):
    """A failure message (lines joined by ``\\n``) that pytest's terminal prints wrapped."""

    __slots__ = ()

    def lines(self, width: int | None) -> list[str]:
        """The message in lines of at most *width* columns (whole when None)."""
        return [part for line in self.split("\n") for part in wrap_line(line, width, HANG)]

    def toterminal(self, out: Any) -> None:
        """Write the message to pytest's terminal writer *out*, wrapped to its width."""
        for line in self.lines(out.fullwidth):
            out.line(line)


def mark(report: Any, data: dict[str, Any]) -> None:
    """Note in *data*, the serialized *report*, that its ``longrepr`` is a :class:`Message`."""
    if isinstance(report.longrepr, Message):
        data[KEY] = True


def unmark(data: dict[str, Any]) -> bool:
    """Whether serialized report *data* held a :class:`Message`; the note is taken out."""
    return bool(data.pop(KEY, False))


def restore(report: Any) -> Any:
    """*report*, read back from data that :func:`unmark` found marked, its ``longrepr`` a
    :class:`Message` again."""
    if isinstance(getattr(report, "longrepr", None), str):
        report.longrepr = Message(report.longrepr)
    return report
