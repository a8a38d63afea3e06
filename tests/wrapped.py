"""Reading terminal output whole again (each line the plugin or the command line wrapped, its
continuation lines joined back on), and finding the lines that do not fit 80 columns.

Lines are wrapped by :func:`pytest_roofline.text_table.wrap_line`, the continuations
indented a fixed number of columns (the *hang*) beyond the line they continue: 4 for a
failure's message, a notice and a summary line, 6 for a ``  FAIL:`` line of a test's
breakdown. A path that fits a line only without the hang starts at the line's own
indentation (the lines after it hang again): it is joined too, being one word with a ``/``
that a hung line could not hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import pytest

HANGS = (4, 6)
WIDTH = 80

#: pytest's own lines, which it does not fit to the terminal (its header names paths)
PYTEST_OWN = ("platform ", "rootdir:", "plugins:", "cachedir:", "configfile:", "benchmark:",
              "- generated xml file: ")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def unwrap(lines: Iterable[str], hangs: Sequence[int] = HANGS) -> list[str]:
    """*lines* with each continuation (a line indented one of *hangs* more than the line it
    continues, or a path at its indentation that a hung line could not hold) joined to that
    line by one space."""
    out: list[str] = []
    first = 0  # the indentation of the line being continued
    for line in lines:
        if out and line.strip() and _indent(line) - first in hangs:
            out[-1] += " " + line.strip()
            continue
        if (out and out[-1].strip() and _indent(line) == first and len(line.split()) == 1
                and "/" in line and len(line) + min(hangs) > WIDTH >= len(line)):
            out[-1] += " " + line.strip()
            continue
        out.append(line)
        first = _indent(line)
    return out


def matcher(result: pytest.RunResult) -> pytest.LineMatcher:
    """The run's standard output with wrapped lines joined, for ``fnmatch_lines``."""
    return pytest.LineMatcher(unwrap(result.stdout.lines))


def too_wide(text: str, width: int = WIDTH) -> list[str]:
    """Lines past *width*, but for a line that is one word holding a ``/`` (a path or a URL
    longer than a line, kept whole to be copied)."""
    return [line for line in text.splitlines()
            if len(line) > width and not (len(line.split()) == 1 and "/" in line)]


def ours_too_wide(lines: Iterable[str], width: int = WIDTH) -> list[str]:
    """The lines of a pytest run past *width* columns, but pytest's own: its header,
    pytest-xdist's worker line (``[gw0] linux -- Python ...``), and a short-summary line
    ``FAILED <test id>`` (or ``ERROR``) whose id leaves no room for a message (pytest cuts
    the message to the width, never the id)."""
    ours = [line for line in lines if not line.startswith(PYTEST_OWN)
            and not line.startswith("[gw")
            and not re.fullmatch(r"(FAILED|ERROR) \S+", line)]
    return too_wide("\n".join(ours), width)
