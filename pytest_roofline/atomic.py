"""Atomic file writes: a temporary file beside the target, then a rename.

An interrupted run never leaves a half-written report, baseline, Markdown file or chart; the
file gets the permissions a plain ``open(path, "w")`` would give it (0666 less the umask).
A temporary file is named ``.<target name>.<pid>.<random><suffix>``: a process killed
before its rename (``kill -9``) leaves it behind, and the next write to the same target
removes it, never the temporary file of a writer still running. The writer holds a lock on
its temporary file (POSIX ``flock``) until the rename; the system releases it the moment
the process dies, even one its parent has not yet reaped (a zombie, whose process id still
answers), so a leftover whose lock can be taken is removed at once. Where there is no
``flock``, a leftover is removed once its process is gone (or, should the id have been
taken again, a day later).
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

#: A leftover whose process id is alive again (reused) is removed after this many seconds.
STALE_AFTER = 24 * 3600.0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # another user's process: alive
    return True


def remove_leftovers(target: Path, suffix: str) -> list[Path]:
    """Remove the temporary files that interrupted writes to *target* left beside it (see
    the module docstring); returns those removed. Anything unreadable is left alone."""
    prefix = f".{target.name}."
    removed: list[Path] = []
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return removed
    now = time.time()
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(suffix)):
            continue
        pid_text = name[len(prefix):].split(".", 1)[0]
        if not pid_text.isdigit():
            continue
        try:
            if int(pid_text) == os.getpid():
                continue
            writing = _locked_by_a_writer(entry.path)
            if writing is None:  # no flock here: by the process id
                old = now - entry.stat(follow_symlinks=False).st_mtime > STALE_AFTER
                writing = _alive(int(pid_text)) and not old
            if writing:
                continue
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed


def _locked_by_a_writer(path: str) -> bool | None:
    """Whether a writer holds the lock on the temporary file *path*; None where the system
    has no ``flock``."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return None
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _lock(fd: int) -> None:
    """Hold the writer's lock on its temporary file (released when *fd* closes or the
    process dies)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        return
    with contextlib.suppress(OSError):  # a file system without locks: the process id says
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_with(path: str | os.PathLike[str], writer: Callable[[str], object]) -> Path:
    """Call ``writer(temporary_path)`` and move the result onto *path* (folders created)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    suffix = target.suffix or ".tmp"
    remove_leftovers(target, suffix)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=suffix,
                               dir=target.parent)
    try:
        _lock(fd)  # held until the rename: a writer killed before it leaves no lock
        writer(tmp)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    return target


#: How text that UTF-8 cannot hold is written: a test id read from a file name that is not
#: valid UTF-8 (Linux allows any bytes; Python keeps them as lone surrogates) becomes its
#: ``\udcff`` escape, as the JSON report writes it, never an encoding error.
ENCODING_ERRORS = "backslashreplace"


def encodable(text: str, encoding: str = "utf-8") -> str:
    """*text* with every character *encoding* cannot hold replaced by its backslash escape:
    what a text output (a file, a terminal) is given."""
    try:
        text.encode(encoding)
    except UnicodeEncodeError:
        return text.encode(encoding, ENCODING_ERRORS).decode(encoding)
    except LookupError:  # an unknown encoding name: UTF-8's rules
        return encodable(text)
    return text


def write_text(path: str | os.PathLike[str], text: str) -> Path:
    """Write *text* (UTF-8, unencodable characters escaped) to *path*, atomically."""
    def write(tmp: str) -> None:
        Path(tmp).write_text(text, encoding="utf-8", errors=ENCODING_ERRORS)

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
    if exc.errno == errno.EFBIG:
        return f"past this process's file-size limit ({_file_size_limit()}; ulimit -f)"
    if exc.errno == errno.ENOSPC:
        return f"no space left on the disk that holds {target.parent}"
    return exc.strerror or str(exc)


def why_not_writable(path: str | os.PathLike[str]) -> str | None:
    """Why *path* cannot be written (the caller names the path), checked before any work
    that would be lost (a missing or read-only folder, a folder where the file goes); None
    when it looks writable. A full disk or a file-size limit shows only on writing:
    :func:`why_not_written` says those."""
    target = Path(path)
    if target.is_dir():
        return "it is a folder"
    parent = target.parent
    if not parent.exists():
        return "its folder does not exist"
    if not parent.is_dir():
        return "its folder is a file, not a folder"
    if not os.access(parent, os.W_OK | os.X_OK):
        return "its folder is not writable"
    return None


def _file_size_limit() -> str:
    """The soft RLIMIT_FSIZE in words ("unknown" where the platform has none)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_FSIZE)[0]
    except (ImportError, OSError, ValueError):
        return "unknown"
    return "unlimited" if soft == resource.RLIM_INFINITY else f"{soft} bytes"
