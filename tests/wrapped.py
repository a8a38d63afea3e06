"""Reading terminal output whole again: each line the plugin or the command line wrapped,
its continuation lines joined back on.

Lines are wrapped by :func:`pytest_roofline.text_table.wrap_line`, the continuations
indented a fixed number of columns (the *hang*) beyond the line they continue: 4 for a
failure's message, a notice and a summary line, 6 for a ``  FAIL:`` line of a test's
breakdown. A path that fits a line only without the hang starts at the line's own
indentation and is not joined: match it as a line of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pytest

HANGS = (4, 6)


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def unwrap(lines: Iterable[str], hangs: Sequence[int] = HANGS) -> list[str]:
    """*lines* with each continuation (a line indented one of *hangs* more than the line it
    continues) joined to that line by one space."""
    out: list[str] = []
    first = 0  # the indentation of the line being continued
    for line in lines:
        if out and line.strip() and _indent(line) - first in hangs:
            out[-1] += " " + line.strip()
            continue
        out.append(line)
        first = _indent(line)
    return out


def matcher(result: pytest.RunResult) -> pytest.LineMatcher:
    """The run's standard output with wrapped lines joined, for ``fnmatch_lines``."""
    return pytest.LineMatcher(unwrap(result.stdout.lines))
