"""A trace file's bytes to its JSON: read under a size cap, inflated from gzip in chunks
under the same cap, parsed by the stdlib's ``json`` with the cyclic garbage collector paused.

orjson parses a trace in about 70% of the stdlib's CPU time (0.87 s against 1.20 s for the
62 MB of xDiT's SD3.5 trace), but reads an integer past 64 bits as a float (10**30 becomes
1e+30) where the stdlib keeps it whole: a trace's huge dims would then be refused as not
whole numbers where they are priced as unpriceable today, so the answer would depend on
which parser is installed. Finding such integers first costs more than orjson saves (a scan
of the bytes, 0.58 s), so the stdlib reads every trace.

:mod:`.trace_file` turns the JSON into CPU ops, launches and kernels.
"""

from __future__ import annotations

import contextlib
import gc
import gzip
import io
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...errors import RooflineError
from ..rules import MAX_BYTES


class TraceFileError(RooflineError, ValueError):
    """A trace file that cannot be read as a PyTorch profiler trace."""


def load(path: str | os.PathLike[str], max_bytes: int = MAX_BYTES) -> dict[str, Any]:
    """The JSON object of a trace file (``.json`` or gzip-compressed ``.json.gz``), of at
    most *max_bytes* bytes on disk and inflated."""
    max_bytes = min(max_bytes, sys.maxsize - 1)  # past what memory holds: no limit at all
    where = Path(path)
    name = str(where)
    hint = "expected a PyTorch profiler trace (.json or .json.gz) from prof.export_chrome_trace()"
    if where.is_dir():
        raise TraceFileError(f"trace file {name!r} is a directory; {hint}")
    if not where.exists():
        raise TraceFileError(f"trace file {name!r} does not exist; {hint}")
    if not where.is_file():
        raise TraceFileError(f"trace file {name!r} is not a regular file (a FIFO, a socket or "
                             f"a device); {hint}")
    limit = f"(max_bytes={max_bytes}; raise it with max_bytes= or --max-bytes)"
    try:
        with where.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            # a limit past the file's size reads it whole: never a buffer of the limit's size
            raw = handle.read(max_bytes + 1 if size > max_bytes else -1)
    except OSError as exc:
        raise TraceFileError(f"trace file {name!r} cannot be read: "
                             f"{exc.strerror or type(exc).__name__}") from None
    if len(raw) > max_bytes:
        raise TraceFileError(f"trace file {name!r} is larger than {max_bytes} bytes {limit}")
    if raw[:2] == b"\x1f\x8b":
        raw = _inflate(raw, name, max_bytes, limit)
    try:
        data = decode(raw)
    except RecursionError:
        raise TraceFileError(f"trace file {name!r} nests its JSON deeper than can be read "
                             f"(a profiler trace nests a few levels)") from None
    except MemoryError:
        raise TraceFileError(f"trace file {name!r} needs more memory to read than this "
                             f"process may use ({len(raw)} bytes of JSON)") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise TraceFileError(f"trace file {name!r} is not JSON (or gzip-compressed JSON): "
                             f"{str(exc).splitlines()[0][:120]}") from None
    if isinstance(data, list):  # a bare event list is a valid Chrome trace too
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise TraceFileError(f"trace file {name!r} has no 'traceEvents' list: not a "
                             f"Chrome trace as prof.export_chrome_trace() writes")
    return data


def decode(raw: bytes) -> Any:
    """The JSON value of *raw*, by the stdlib (see the module docstring for why not orjson):
    integers whole at any size, ``NaN`` read (and refused later, by the field it is in)."""
    return json.loads(raw)


def _inflate(raw: bytes, name: str, max_bytes: int, limit: str) -> bytes:
    """The gzip data *raw* inflated, refused once past *max_bytes* (a gzip bomb is never
    inflated whole)."""
    import zlib

    chunks: list[bytes] = []
    total = 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            while total <= max_bytes:  # in pieces: never a buffer of the limit's size
                chunk = stream.read(min(_CHUNK, max_bytes + 1 - total))
                if not chunk:
                    break
                chunks.append(chunk)
                total += len(chunk)
        out = b"".join(chunks)
    except (OSError, EOFError, zlib.error) as exc:
        raise TraceFileError(f"trace file {name!r} is not valid gzip: "
                             f"{str(exc).splitlines()[0][:120] or type(exc).__name__}"
                             ) from None
    except MemoryError:
        raise TraceFileError(f"trace file {name!r} needs more memory to inflate than this "
                             f"process may use (past {total} bytes) {limit}") from None
    if total > max_bytes:
        raise TraceFileError(f"trace file {name!r} inflates to more than {max_bytes} bytes "
                             f"{limit}")
    return out


#: Bytes inflated at a time.
_CHUNK = 1 << 24


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic garbage collector paused while a trace is read: the JSON of a trace of
    100,000 events is a million small objects, none in a cycle, and the collector's passes
    over them as they are made cost more than reading them (2.2 s of 2.9 s for 240,000
    events). Memory is freed as before, by reference counts."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
