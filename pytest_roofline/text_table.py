"""Plain-text tables: columns padded to their widest cell.

The one renderer behind every table the package prints: the per-kernel breakdown (engine),
the terminal summary (reports) and the command line's listings.
"""

from __future__ import annotations

from collections.abc import Sequence


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "",
           width: int | None = None, shrink: int = 0) -> list[str]:
    """Columns padded to their widest cell; *align* holds ``l``/``r`` per column.

    When the lines would exceed *width*, column *shrink* loses its head (a test id keeps
    its function name and parameters) if 32 characters or more of it are left so that the
    lines fit; otherwise nothing is cut (the lines wrap anyway).
    """
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    if width is not None:
        excess = sum(widths) + 2 * (len(widths) - 1) - width
        if 0 < excess <= widths[shrink] - 32:  # cut only when the lines then fit
            widths[shrink] -= excess
    align = align.ljust(len(headers), "l")

    def line(cells: Sequence[str]) -> str:
        out = []
        for i, (cell, w) in enumerate(zip(cells, widths, strict=True)):
            cell = _cut(cell, w) if i == shrink else cell
            out.append(cell.rjust(w) if align[i] == "r" else cell.ljust(w))
        return "  ".join(out).rstrip()

    return [line(headers), *(line(r) for r in rows)]


def _cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return "..." + text[len(text) - (width - 3):]
