"""Plain-text tables: columns padded to their widest cell.

The one renderer behind every table the package prints: the per-kernel breakdown (engine),
the terminal summary (reports) and the command line's listings.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

GAP = 2  # spaces between columns
INDENT = 2  # of a row's figures under its test id, when ids take a line of their own


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], align: str = "",
           width: int | None = None, shrink: int = 0, optional: Sequence[int] = (),
           min_shrunk: int = 32, squeeze: Sequence[int] = (), min_squeezed: int = 8,
           ) -> list[str]:
    """Columns padded to their widest cell; *align* holds ``l``/``r`` per column.

    When the lines would exceed *width*, in this order until they fit: column *shrink* (a
    label: a test id, a kernel's name) is shortened down to *min_shrunk* characters keeping
    what tells its rows apart (:func:`cut_labels`: the start all its cells share goes first,
    then the end they share, then the middle of what differs); the *optional* columns are
    left out, in their order; the *squeeze* columns are abbreviated (their cells cut at the
    end, marked ``...``) down to *min_squeezed* characters; then, as a last resort, every id
    takes a line of its own (shortened as above to *width*) with the row's other cells
    indented below it, where the columns left out come back in the reverse of their order,
    as far as they fit, and should the indented cells still be too wide, the widest of them
    is cut at its end.
    """
    rows = [[_printable(c) for c in row] for row in rows]  # widths of what is printed
    align = align.ljust(len(headers), "l")
    keep = list(range(len(headers)))
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    shown = dict(enumerate(widths))  # the width each column is printed at
    own_line = False
    if width is not None:
        def excess(columns: Sequence[int]) -> int:
            return sum(shown[i] for i in columns) + GAP * (len(columns) - 1) - width

        drop = list(optional)
        while excess(keep) > 0:
            over = excess(keep)
            if over <= widths[shrink] - min_shrunk:
                shown[shrink] = widths[shrink] - over
                break
            if drop:
                keep.remove(drop.pop(0))
                continue
            shown[shrink] = min(widths[shrink], max(min_shrunk, len(headers[shrink])))
            for i in squeeze:
                if i in keep and excess(keep) > 0:
                    shown[i] = max(min_squeezed, len(headers[i]),
                                   min(widths[i], shown[i] - excess(keep)))
            if excess(keep) > 0:
                own_line = True
            break
        if own_line:
            shown[shrink] = min(widths[shrink], width)
            spare = width - INDENT
            for i in reversed([i for i in optional if i not in keep]):  # room again?
                if sum(widths[j] for j in keep if j != shrink) + widths[i] + GAP * (
                        len(keep) - 1) > spare:
                    break  # in the reverse of the order they went: none skipped over
                keep = sorted([*keep, i])
            rest = [i for i in keep if i != shrink]
            for i in squeeze:
                over = sum(widths[j] for j in rest) + GAP * (len(rest) - 1) - spare
                if i in rest and over > 0:
                    shown[i] = max(min_squeezed, len(headers[i]), widths[i] - over)
                elif i in rest:
                    shown[i] = widths[i]
            over = sum(shown[j] for j in rest) + GAP * (len(rest) - 1) - spare
            if rest and over > 0:  # still too wide: the widest cell gives way, cut at its end
                widest = max(rest, key=lambda j: shown[j])
                shown[widest] = max(3, shown[widest] - over)

    labels = cut_labels([row[shrink] for row in rows], shown[shrink])

    def cells_line(cells: Sequence[str], columns: Sequence[int], label: str | None = None,
                   ) -> str:
        out = []
        for i in columns:
            w = shown[i]
            cell = (cut_middle(cells[i], w) if label is None else label) if i == shrink \
                else cut_end(cells[i], w)
            out.append(cell.rjust(w) if align[i] == "r" else cell.ljust(w))
        return "  ".join(out).rstrip()

    if not own_line:
        return [cells_line(headers, keep),
                *(cells_line(r, keep, label) for r, label in zip(rows, labels, strict=True))]
    rest = [i for i in keep if i != shrink]
    lines = [headers[shrink], " " * INDENT + cells_line(headers, rest)]
    for row, label in zip(rows, labels, strict=True):
        lines += [label,
                  " " * INDENT + cells_line(row, rest)]
    return lines


def wrap_line(line: str, width: int | None, hang: int = 2) -> list[str]:
    """*line* in lines of at most *width* columns (itself when None or short enough): its
    indentation kept, the lines after the first indented *hang* more, words never split: a
    URL or a path goes to a line of its own, whole (to be copied), even where it is longer
    than a line by itself.

    A word that fits a line only without the hang (a path of nearly a line's length) takes a
    line of its own at the line's own indentation, so that it fits; the lines after it are
    indented *hang* more again, as every other continuation is."""
    if width is None or len(line) <= width:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    rest = indent + " " * hang
    lines: list[str] = []
    current = ""  # the line being filled, its indentation included
    for word in line.split():
        if current and len(current) + 1 + len(word) <= width:
            current += " " + word
            continue
        if current:
            lines.append(current)
        lead = indent if not lines and not current else rest
        if lines and len(rest) + len(word) > width >= len(indent) + len(word):
            lines.append(indent + word)  # fits only without the hang: a line of its own
            current = ""
            continue
        current = lead + word
    if current:
        lines.append(current)
    return lines or [indent]


#: Control characters (C0, DEL, C1) and the bidirectional marks and overrides: what a
#: name read from someone else's file must never send to a terminal, a Markdown page or a
#: CSV as it is (an escape sequence rewrites what a CI log shows).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escaped(text: str) -> str:
    """*text* with its control and bidirectional-override characters written as escapes
    (``\x1b``, ``\u202e``); the rest as it is."""
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _printable(cell: str) -> str:
    """*cell* as a UTF-8 output writes it: a lone surrogate (a test id from a file name that
    is not UTF-8) as its ``\udcff`` escape, so that the column is padded to what is shown,
    and control characters escaped (:func:`escaped`)."""
    cell = escaped(cell)
    try:
        cell.encode("utf-8")
    except UnicodeEncodeError:
        return cell.encode("utf-8", "backslashreplace").decode("utf-8")
    return cell


def cut_end(text: str, width: int) -> str:
    """*text* in at most *width* characters: its end replaced by ``...`` when too long."""
    if len(text) <= width:
        return text
    return text[:max(width - 3, 0)] + "..."[:width]


def cut_middle(text: str, width: int) -> str:
    """A test id in at most *width* characters, shortened in the middle: the file name (its
    folders go first) and the end of the test name are kept, ``...`` stands for the rest."""
    if len(text) <= width:
        return text
    if width <= 3:
        return text[:width]
    path, sep, name = text.partition("::")
    if sep and "/" in path:  # folders are the least telling part of an id
        path = path.rsplit("/", 1)[1]
        text = f"{path}{sep}{name}"
        if len(text) <= width:
            return text
    room = width - 3
    if sep and len(sep) + len(name) <= room - 8:  # the whole test name, the file's start
        head = room - len(sep) - len(name)
    else:
        head = min(len(path) + len(sep), room - min(room // 2, 16)) if sep else room // 2
    return text[:head] + "..." + text[len(text) - (room - head):]


def common_parts(labels: Sequence[str]) -> tuple[int, int]:
    """The lengths of the start and of the end that all *labels* share (none when fewer than
    two differ), each ending or starting at a separator (never inside a word or a number:
    ``m=128`` and ``m=1024`` share ``m=``, not ``m=1``), never overlapping."""
    distinct = sorted(set(labels))
    if len(distinct) < 2:
        return 0, 0
    first, last = distinct[0], distinct[-1]  # the sorted ends share what all of them share
    prefix = 0
    while prefix < min(len(first), len(last)) and first[prefix] == last[prefix]:
        prefix += 1
    while prefix and first[prefix - 1].isalnum():
        prefix -= 1
    shortest = min(len(label) for label in distinct)
    suffix = 0
    while suffix < shortest - prefix and len({label[len(label) - suffix - 1]
                                              for label in distinct}) == 1:
        suffix += 1
    while suffix and distinct[0][len(distinct[0]) - suffix].isalnum():
        suffix -= 1
    return prefix, suffix


#: The shortest shared start and end of a column's labels that :func:`cut_labels` cuts first.
SHARED_START, SHARED_END = 8, 4


def cut_labels(labels: Sequence[str], width: int) -> list[str]:
    """The labels of a column (test ids, kernels' names) in at most *width* characters each,
    keeping what tells them apart: the start they all share (:func:`common_parts`) is
    shortened first, alike in every row that is cut (in its middle, see :func:`cut_middle`, down to
    ``...``), then the end they share (cut at its end), and only then the part that differs,
    in its middle. Labels that share nothing are cut in the middle (:func:`cut_middle`)."""
    labels = list(labels)
    if all(len(label) <= width for label in labels):
        return labels
    prefix, suffix = common_parts(labels)
    # a shared start of a few characters ("jit_") or a shared closing ")" says little and
    # saves less than its "..." costs: kept, as part of what differs
    prefix, suffix = (prefix if prefix >= SHARED_START else 0,
                      suffix if suffix >= SHARED_END else 0)
    if width <= 3 or not (prefix or suffix):
        return [cut_middle(label, width) for label in labels]
    over = max(len(label) for label in labels) - width
    if prefix - over > 3:  # the shared start alone gives way, alike in every row cut
        head = cut_middle(labels[0][:prefix], prefix - over)
        return [label if len(label) <= width else head + label[prefix:] for label in labels]
    lead = "..." if prefix else ""
    room = width - len(lead)
    out = []
    for label in labels:
        core, tail = label[prefix:len(label) - suffix], label[len(label) - suffix:]
        if len(label) <= width:
            out.append(label)
        elif len(core) + len(tail) <= room:
            out.append(lead + core + tail)
        elif len(tail) > 3 and len(core) + 3 <= room:  # then the shared end, cut at its end
            out.append(lead + core + tail[:room - len(core) - 3] + "...")
        elif len(tail) > 3 and room - 3 > 3:  # what differs is too long: its middle goes
            out.append(lead + cut_middle(core, room - 3) + "...")
        else:  # a shared end of a bracket or so stays, as the middle of the rest goes
            out.append(lead + cut_middle(core + tail, room) if room > 3 else
                       cut_middle(label, width))
    return out
