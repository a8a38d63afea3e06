"""Plain-text tables: columns padded to their widest cell.

The one renderer behind every table the package prints: the per-kernel breakdown (engine),
the terminal summary (reports) and the command line's listings.
"""

from __future__ import annotations

from collections.abc import Sequence


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "",
           width: int | None = None, shrink: int = 0, optional: Sequence[int] = (),
           min_shrunk: int = 32) -> list[str]:
    """Columns padded to their widest cell; *align* holds ``l``/``r`` per column.

    When the lines would exceed *width*: column *shrink* loses its head (a test id keeps its
    function name and parameters) down to *min_shrunk* characters, then the *optional*
    columns are left out, in that order, until the lines fit. What cannot be made to fit
    wraps.
    """
    align = align.ljust(len(headers), "l")
    keep = list(range(len(headers)))
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    cut = widths[shrink]
    if width is not None:
        drop = list(optional)
        while True:
            excess = sum(widths[i] for i in keep) + 2 * (len(keep) - 1) - width
            if excess <= 0:
                break
            room = widths[shrink] - min_shrunk
            if 0 < excess <= room:  # cutting the head of the ids is enough
                cut = widths[shrink] - excess
                break
            if not drop:
                cut = widths[shrink] - max(room, 0)
                break
            keep.remove(drop.pop(0))

    def line(cells: Sequence[str]) -> str:
        out = []
        for i in keep:
            cell, w = cells[i], (cut if i == shrink else widths[i])
            cell = _cut(cell, w) if i == shrink else cell
            out.append(cell.rjust(w) if align[i] == "r" else cell.ljust(w))
        return "  ".join(out).rstrip()

    return [line(headers), *(line(r) for r in rows)]


def _cut(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return "..." + text[len(text) - (width - 3):]
