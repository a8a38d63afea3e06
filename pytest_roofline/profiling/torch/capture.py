"""CUDA/HIP graph replays priced from the traces of their capture.

A replayed graph (``cudaGraphLaunch``) runs its kernels with no op around them: the ops
that made them ran once, at capture, when their launches ran nothing. A trace recorded
around the capture (``record_shapes=True``; vLLM writes one per captured batch size) holds
those ops with their shapes and the launches, and no kernel. So a capture is priced as the
sum of the bounds of its ops (the same op table as any trace), and a replay in another
trace is set against the capture whose launches it runs: the same number of kernels.

**Piecewise captures** (vLLM's piecewise CUDA graphs, ``torch.compile``'s cudagraph trees):
a capture trace holding several begin/end capture segments (``cudaStreamBeginCapture`` ..
``cudaStreamEndCapture``, HIP's alike) captured one graph each: each segment is its own
capture (``capture.json.gz#3``, its ops those inside it, its launches those it holds). The
replays, in the order they ran, are matched to a capture file's segments by their sequence:
a run of replays whose kernel counts are the segments' counts in order (a forward pass
replays every piece) takes them one for one; a replay outside such a run falls back to the
count rule below.

**Matching is by the count of kernels**, which is all a replay and its capture share in a
trace: where several captures have that count (one model captured at several batch sizes),
the replay takes the lowest bound among them, so a bound stays a lower bound, and the row
says so. A replay no capture matches stays unpriced (``graph replay``), named. Ops of a
capture that cannot be priced are named on the row: their work is left out of the bound,
which makes it lower, never higher. ``run.read_captures`` reads and prices the capture
traces (through the same join as any trace); this module holds what a join needs of them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..rules import ProfileError


@dataclass(frozen=True)
class Captured:
    """One capture trace priced on a chip: its launches (the graph's nodes) and the bound
    of the ops that made them."""

    source: str
    launches: int
    bound: float  # s
    flops: float
    bytes: float
    regime: str  # of the op that holds the largest share of the bound
    precision: str
    unpriced: tuple[str, ...]  # ops of the capture no formula prices
    limit: float | None = None  # s, the physical limit of its ops (None: the bound)
    segment: int = 0  # its begin/end capture segment in its file, from 1 (0: the whole file)
    file: str = ""  # the capture file of a segment


def paths_of(capture: str | os.PathLike[str]) -> list[Path]:
    """The capture traces *capture* names: a trace file, or a folder of them (``*.json``,
    ``*.json.gz``)."""
    where = Path(capture)
    if where.is_dir():
        found = sorted(p for p in where.iterdir()
                       if p.is_file() and p.name.endswith((".json", ".json.gz")))
        if not found:
            raise ProfileError(f"capture={str(where)!r} is a folder with no trace in it; "
                               f"expected capture traces (.json or .json.gz)")
        return found
    if not where.is_file():
        raise ProfileError(f"capture={str(where)!r} does not exist; expected a capture trace "
                           f"(.json or .json.gz) or a folder of them")
    return [where]


def match(nodes: int, captures: tuple[Captured, ...]) -> tuple[Captured, int] | None:
    """The capture a replay of *nodes* kernels is priced by (the lowest bound of those with
    that many launches) and how many matched; None when none does."""
    same = [c for c in captures if c.launches == nodes]
    if not same:
        return None
    return min(same, key=lambda c: (c.bound, c.source)), len(same)


def assign(counts: list[int], captures: tuple[Captured, ...]
           ) -> list[tuple[Captured, int] | None]:
    """The capture of each replay (*counts*: their kernels, in the order they ran): a run of
    replays matching a file's piecewise segments in order takes them one for one, the rest
    :func:`match`."""
    runs: dict[str, list[Captured]] = {}
    for item in captures:
        if item.segment:
            runs.setdefault(item.file, []).append(item)
    sequences = [sorted(run, key=lambda c: c.segment) for run in runs.values()]
    out: list[tuple[Captured, int] | None] = []
    i = 0
    while i < len(counts):
        hit = next((seq for seq in sequences
                    if [c.launches for c in seq] == counts[i:i + len(seq)]), None)
        if hit is not None:
            out += [(item, 1) for item in hit]
            i += len(hit)
            continue
        out.append(match(counts[i], captures))
        i += 1
    return out


def note_of(captures: tuple[Captured, ...]) -> str:
    """A note naming the captures read."""
    parts = [f"{c.source} ({c.launches} kernels"
             + (f", {len(c.unpriced)} ops unpriced" if c.unpriced else "") + ")"
             for c in captures[:4]]
    more = f" and {len(captures) - 4} more" if len(captures) > 4 else ""
    pieces: dict[str, int] = {}
    for c in captures:
        if c.segment:
            pieces[c.file] = pieces.get(c.file, 0) + 1
    piecewise = "".join(f"; {name}: {count} begin/end capture segments, one graph each"
                        for name, count in pieces.items())
    return "graph captures: " + ", ".join(parts) + more + piecewise

