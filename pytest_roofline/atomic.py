"""Atomic file writes: a temporary file beside the target, then a rename.

An interrupted run never leaves a half-written report, baseline, Markdown file or chart; the
file gets the permissions a plain ``open(path, "w")`` would give it (0666 less the umask).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_with(path: str | os.PathLike[str], writer: Callable[[str], object]) -> Path:
    """Call ``writer(temporary_path)`` and move the result onto *path* (folders created)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=target.suffix or ".tmp",
                               dir=target.parent)
    os.close(fd)
    try:
        writer(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write *text* (UTF-8) to *path*, atomically."""
    def write(tmp: str) -> None:
        Path(tmp).write_text(text, encoding="utf-8")

    return write_with(path, write)


def why_not_written(exc: OSError, path: str | os.PathLike[str]) -> str:
    """Why *path* could not be written, in words a user can act on.

    ``os.makedirs`` reports a file standing where a folder is needed as "File exists", and
    ``os.replace`` onto a folder as "Is a directory" of the temporary file: both name the
    wrong thing, so the nearest existing ancestor is checked first.
    """
    target = Path(path)
    if target.is_dir():
        return f"{target} is a folder"
    for parent in target.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, not a folder"
            break
    return exc.strerror or str(exc)
