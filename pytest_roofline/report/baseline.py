"""Named baselines in a storage folder.

A baseline is a report (:mod:`pytest_roofline.records`) saved as ``FOLDER/NAME.json``; the
folder defaults to ``.roofline`` in the rootdir and the name to ``baseline``. Names are
letters, digits, ``.``, ``-`` and ``_``: never a path. Where a baseline is *read*, a path to
any report file (``reports/main.json``) may stand in for a name, so a report a CI job already
uploads can be compared against directly.

Writes are atomic (a temporary file in the same folder, then a rename): an interrupted run
leaves the previous baseline whole, never half a file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BaselineError, brief
from ..specfiles import is_file
from . import records
from .defaults import BASELINE_FOLDER, BASELINE_NAME
from .records import Report

DEFAULT_FOLDER = BASELINE_FOLDER
DEFAULT_NAME = BASELINE_NAME
SUFFIX = ".json"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class MissingBaselineError(BaselineError, FileNotFoundError):
    """The baseline asked for does not exist (the plugin turns this into a warning)."""


def storage_folder(rootdir: str | os.PathLike[str],
                   configured: str | os.PathLike[str] | None = None) -> Path:
    """The storage folder: *configured* (relative to *rootdir* unless absolute), or
    ``ROOTDIR/.roofline``."""
    folder = Path(DEFAULT_FOLDER if configured in (None, "") else os.fspath(configured))
    folder = folder.expanduser()
    return folder if folder.is_absolute() else Path(rootdir) / folder


def check_name(name: str) -> str:
    """*name* if it is a valid baseline name, else a BaselineError saying what is allowed."""
    if not isinstance(name, str) or not _NAME.match(name) or name.endswith(SUFFIX):
        raise BaselineError(
            f"baseline name {brief(name)} is not allowed: use letters, digits, '.', '-' and '_' "
            f"(e.g. 'main' or 'v1.2'), without a path or the {SUFFIX} suffix")
    return name


def is_path(name: str) -> bool:
    """True when *name* is written as a file path rather than a baseline name."""
    return name.endswith(SUFFIX) or "/" in name or os.sep in name or (
        os.altsep is not None and os.altsep in name)


def path_for(folder: str | os.PathLike[str], name: str = DEFAULT_NAME) -> Path:
    """The file of baseline *name* in *folder* (the name is checked)."""
    return Path(folder) / f"{check_name(name)}{SUFFIX}"


def locate(folder: str | os.PathLike[str], name: str | None = None) -> Path:
    """The file a compare reads: *name* in *folder*, or *name* itself when it is a path.

    Does not check the file exists (see :func:`exists`), so the plugin can decide on a
    missing baseline before any test runs.
    """
    name = DEFAULT_NAME if name in (None, "") else name
    if is_path(name):
        return Path(name).expanduser()
    return path_for(folder, name)


def exists(folder: str | os.PathLike[str], name: str | None = None) -> bool:
    return is_file(locate(folder, name))


def load(folder: str | os.PathLike[str], name: str | None = None) -> records.Report:
    """Read and check a baseline (by name in *folder*, or a report path).

    Raises MissingBaselineError when the file does not exist, BaselineError naming the file
    when it is corrupt, truncated or not a pytest-roofline report.
    """
    path = locate(folder, name)
    if not is_file(path):
        if is_path(name or ""):
            raise MissingBaselineError(f"{path}: no such roofline report or baseline file")
        known = [info.name for info in list_baselines(folder)]
        saved = f"saved baselines there: {', '.join(known)}" if known else "none is saved there"
        option = "--roofline-save" + ("" if path.stem == DEFAULT_NAME else f"={path.stem}")
        raise MissingBaselineError(
            f"no baseline {path.stem!r} in {folder} ({saved}); save one with "
            f"`pytest {option}`, or give the path of a --roofline-json report")
    return records.load_report(path)


def save(folder: str | os.PathLike[str], name: str | None,
         report: Report) -> Path:
    """Save *report* as baseline *name* in *folder* (created if needed), atomically."""
    path = path_for(folder, DEFAULT_NAME if name in (None, "") else str(name))
    if not isinstance(report, Mapping) or report.get("format") != records.FORMAT:
        raise BaselineError(f"{path}: refusing to save something that is not a "
                            f"pytest-roofline report (build it with records.make_report)")
    records.write_report(path, report)
    return path


@dataclass(frozen=True)
class BaselineInfo:
    """One file of the storage folder: its name, path, and what it holds."""

    name: str
    path: Path
    datetime: str | None  # when the report was made; None if the file is unreadable
    results: int | None  # how many records it holds; None if unreadable
    error: str | None = None  # why the file cannot be used, if it cannot

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "path": str(self.path), "datetime": self.datetime,
                "results": self.results, "error": self.error}


def list_baselines(folder: str | os.PathLike[str]) -> list[BaselineInfo]:
    """The baselines in *folder*, sorted by name; corrupt files are listed with their error."""
    base = Path(folder)
    if not base.is_dir():
        return []
    out: list[BaselineInfo] = []
    for path in sorted(base.glob(f"*{SUFFIX}")):
        name = path.name[: -len(SUFFIX)]
        if not _NAME.match(name):
            continue
        try:
            data = records.load_report(path)
        except BaselineError as exc:
            out.append(BaselineInfo(name, path, None, None, str(exc)))
            continue
        stamp = data.get("datetime")
        out.append(BaselineInfo(name, path, stamp if isinstance(stamp, str) else None,
                                len(data["results"])))
    return out
