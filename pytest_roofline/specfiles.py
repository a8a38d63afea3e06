"""Reading the YAML spec files (hardware and models): safe loading, and where they ship."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import RooflineError, SpecError, brief


def builtin_dir(kind: str) -> Path:
    """The folder of built-in ``kind`` files ("hardware" or "models") in the installed package."""
    from importlib import resources

    try:
        return Path(str(resources.files("pytest_roofline.specs"))) / kind
    except ModuleNotFoundError:  # pragma: no cover - a source checkout without install
        return Path(__file__).resolve().parent.parent / "specs" / kind


#: Spec files are a few levels deep; deeper nesting (or an alias bomb) is refused.
MAX_DEPTH = 32
MAX_NODES = 100_000


def read_text(path: Path, what: str, error: type[RooflineError]) -> str:
    """The UTF-8 text of a file a user gave, or *error* naming the file and what is wrong."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    except ValueError as exc:  # a name the system refuses, such as one holding a NUL byte
        raise error(f"{str(path)!r}: cannot read {what} ({exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: {what} is not UTF-8 text (byte {raw[exc.start]:#04x} at "
                    f"offset {exc.start})") from None


def check_shape(data: object, where: str, error: type[RooflineError],
                max_containers: int | None = MAX_NODES) -> None:
    """Refuse data nested deeper than MAX_DEPTH, or holding more than *max_containers*
    mappings and lists (None: no limit; YAML's aliases can repeat one list a billion times,
    JSON cannot). Walked without recursion, so hostile data cannot exhaust the stack; only
    containers are visited, so a report of many flat records costs little."""
    stack: list[tuple[object, int]] = [(data, 0)]
    seen = 0
    limit = max_containers if max_containers is not None else float("inf")
    while stack:
        value, depth = stack.pop()
        seen += 1
        if depth > MAX_DEPTH or seen > limit:
            raise error(f"{where}: nested deeper than {MAX_DEPTH} levels or holding more than "
                        f"{max_containers} mappings and lists; no spec or report is")
        if isinstance(value, dict):
            children: Iterable[object] = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        stack.extend((v, depth + 1) for v in children if isinstance(v, (dict, list)))


def load_yaml(path: Path, what: str = "spec file") -> dict[str, Any]:
    """A YAML mapping read with a safe loader; errors name the file and what is wrong, in one
    line: unreadable or non-UTF-8 files, YAML syntax errors (with the line and column), deep
    nesting and anything but a mapping at the top are a :class:`SpecError`."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = read_text(path, what, SpecError)
    try:
        data = yaml.load(text, Loader=loader)  # a safe loader: no Python objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise SpecError(f"{path}: not valid YAML{where}: {problem}") from None
    except RecursionError:
        raise SpecError(f"{path}: not valid YAML: nested too deeply") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a {what} must be a mapping of fields, got "
                        f"{type(data).__name__}")
    check_shape(data, str(path), SpecError)
    return data


#: Beside the built-in spec files of a folder: each file's parsed mapping, under the file's
#: name with the length and CRC-32 of its bytes. Reading it skips importing PyYAML (tens of
#: milliseconds, the largest one-off cost of a test session's first roofline test). An entry
#: is used only while its file's bytes still match, so an edited file is parsed again, never
#: read stale; ``python -m pytest_roofline.specs`` rewrites the files after an edit.
PARSED_NAME = "parsed.json"
_PARSED: dict[Path, bytes] = {}  # folder -> the bytes of its parsed.json (b"": none)


def fingerprint(raw: bytes) -> dict[str, int]:
    """What identifies a spec file's bytes in :data:`PARSED_NAME`."""
    import zlib

    return {"size": len(raw), "crc32": zlib.crc32(raw)}


def load_builtin(path: Path, what: str = "spec file") -> dict[str, Any]:
    """A built-in spec file's mapping: from its folder's :data:`PARSED_NAME` while that
    matches the file's bytes, else parsed from the YAML (:func:`load_yaml`)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return load_yaml(path, what)  # its error names the file
    parsed = _PARSED.get(path.parent)
    if parsed is None:
        try:
            parsed = (path.parent / PARSED_NAME).read_bytes()
        except OSError:
            parsed = b""
        _PARSED[path.parent] = parsed
    try:  # decoded per use: each caller gets a mapping of its own
        entry = json.loads(parsed).get(path.name) if parsed else None
    except (ValueError, AttributeError, RecursionError):
        entry = None
    if isinstance(entry, dict) and isinstance(entry.get("data"), dict) and \
            entry.get("file") == fingerprint(raw):
        return entry["data"]  # type: ignore[no-any-return]
    return load_yaml(path, what)


def parsed_folder(folder: Path, what: str = "spec file") -> str:
    """The text of *folder*'s :data:`PARSED_NAME`: every ``*.yaml`` file parsed with the
    safe YAML loader, except files whose mapping JSON cannot hold exactly (keys other than
    strings, dates): those are parsed from YAML when used."""
    entries: dict[str, Any] = {}
    for path in sorted(folder.glob("*.yaml")):
        data = load_yaml(path, what)
        if not _same_types(data) or json.loads(json.dumps(data)) != data:
            continue
        entries[path.name] = {"file": fingerprint(path.read_bytes()), "data": data}
    return json.dumps(entries, indent=1, ensure_ascii=False) + "\n"


def _same_types(value: object) -> bool:
    """Whether JSON keeps *value*'s types (bool, int, float, str, None, lists, str keys)."""
    if isinstance(value, dict):
        return all(isinstance(k, str) and _same_types(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_same_types(v) for v in value)
    return value is None or type(value) in (bool, int, float, str)


def is_file(path: Path) -> bool:
    """``path.is_file()``, False for a name the system refuses (too long, a NUL byte)."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


def is_path(text: str) -> bool:
    """Whether a name given by a user is a file path rather than a catalog name."""
    return text.endswith((".yaml", ".yml", ".json")) or os.sep in text or "/" in text


#: A ``name:`` or ``aliases: [...]`` value that YAML reads as the same plain string: a letter
#: first, no quoting, comment, flow or mapping characters.
_PLAIN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9._/+-]*")
_NOT_STRINGS = frozenset(("yes", "no", "on", "off", "true", "false", "null"))


def header_names(text: str) -> tuple[str, ...] | None:
    """``(name, *aliases)`` lower-cased, from the top-level ``name: x`` and ``aliases: [a, b]``
    lines of a spec file's text, or None when they are not that plain (YAML must read it)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        if line.startswith(("name:", "aliases:")):
            key, _, value = line.partition(":")
            if key in found:
                return None
            found[key] = value.strip()
    name = found.get("name")
    if name is None or not _plain(name):
        return None
    listed = found.get("aliases")
    if listed is None:
        return (name.lower(),)
    if not (listed.startswith("[") and listed.endswith("]")):
        return None
    inner = listed[1:-1].strip()
    aliases = [a.strip() for a in inner.split(",")] if inner else []
    if not all(_plain(a) for a in aliases):
        return None
    return (name.lower(), *(a.lower() for a in aliases))


def _plain(value: str) -> bool:
    return _PLAIN_NAME.fullmatch(value) is not None and value.lower() not in _NOT_STRINGS \
        and not is_path(value)


class _Specs(dict):  # type: ignore[type-arg]
    """Canonical name -> (raw mapping, origin). A built-in file known by its header lines
    only is parsed (by *load*) when its entry is first read."""

    def __init__(self, load: Any) -> None:
        super().__init__()
        self._load = load
        self._pending: dict[str, tuple[str, tuple[str, ...]]] = {}

    def defer(self, key: str, origin: str, names: tuple[str, ...]) -> None:
        dict.__setitem__(self, key, ({}, origin))
        self._pending[key] = (origin, names)

    def __setitem__(self, key: str, value: Any) -> None:
        self._pending.pop(key, None)
        dict.__setitem__(self, key, value)

    def __getitem__(self, key: str) -> Any:
        pending = self._pending.get(key)
        if pending is not None:
            self._load(key, *pending)  # replaces the entry, or raises (and stays pending)
            self._pending.pop(key, None)
        return dict.__getitem__(self, key)


class SpecIndex:
    """Raw spec mappings by canonical name, and every name and alias -> the canonical name.

    The base of the hardware and model catalogs: the built-in folder is read once, on first
    use, to learn names (from each file's header lines where they are plain, so that a file
    is parsed only when its spec is used); what a spec builds into is the subclass's business
    (``_forget`` drops what it built for a name that is registered again).
    """

    KIND = ""         # the folder under specs/: "hardware" or "models"
    WHAT = "spec file"
    NOUN = "chip"
    LOOKUP_ERROR: type[RooflineError] = SpecError  # what an unusable name raises

    def name_text(self, name: object) -> str:
        """The text of a name or path given by a user, or the catalog's lookup error."""
        if isinstance(name, str):
            return name
        if isinstance(name, os.PathLike):
            text = os.fspath(name)
            if isinstance(text, str):
                return text
        hint = " (decode it: b'...'.decode())" if isinstance(name, (bytes, bytearray)) else ""
        raise self.LOOKUP_ERROR(f"a {self.NOUN} must be given by name (a string such as "
                                f"{self.EXAMPLE!r}) or by the path of its {self.WHAT}, got "
                                f"{brief(name)}{hint}")

    EXAMPLE = "h100"

    def __init__(self) -> None:
        self._raw: _Specs = _Specs(self._load_builtin)   # canonical -> (data, origin)
        self._alias: dict[str, str] = {}                 # any name -> canonical
        self._scanned = False

    def _forget(self, key: str) -> None:
        """Drop anything built from the spec called *key* (it is being replaced)."""

    def checkpoint(self) -> object:
        """What :meth:`restore` goes back to: the names known now (the pytest plugin takes one
        as a session starts, so that chips and models registered during it are gone when it
        ends; a notebook registers for good)."""
        if not self._scanned:
            return None  # nothing registered yet: restore() forgets everything
        return (dict(self._raw), dict(self._raw._pending), dict(self._alias))

    def restore(self, checkpoint: object) -> None:
        """Forget what was registered since :meth:`checkpoint` gave *checkpoint*."""
        if checkpoint is None:
            for key in list(self._raw):
                self._forget(key)
            self.__init__()  # type: ignore[misc]
            return
        raw: dict[str, Any]
        pending: dict[str, Any]
        alias: dict[str, str]
        raw, pending, alias = checkpoint  # type: ignore[misc]
        for key, value in list(dict.items(self._raw)):
            if raw.get(key) is not value and not (key in pending and key not in
                                                  self._raw._pending):
                self._forget(key)  # registered (or replaced) since: what it built goes too
        dict.clear(self._raw)
        dict.update(self._raw, raw)
        self._raw._pending = dict(pending)
        self._alias = dict(alias)

    def _scan(self) -> None:
        """Learn the names of the built-in files. A file whose ``name:`` and ``aliases:``
        lines are plain (:func:`header_names`) is parsed when its spec is first used: a
        session that names one chip parses one file."""
        if self._scanned:
            return
        self._scanned = True
        for path in sorted(builtin_dir(self.KIND).glob("*.yaml")):
            names = header_names(read_text(path, self.WHAT, SpecError))
            if names is None:
                self._add_raw(load_builtin(path, self.WHAT), str(path), builtin=True)
                continue
            key = names[0]
            self._raw.defer(key, str(path), names)
            for alias in names:
                owner = self._alias.get(alias)
                if owner is not None and owner != key:
                    raise SpecError(f"{path}: name {alias!r} is already used by {owner!r}")
                self._alias[alias] = key

    def _load_builtin(self, key: str, origin: str, names: tuple[str, ...]) -> None:
        """Parse the built-in file whose names were read from its header lines."""
        data = load_builtin(Path(origin), self.WHAT)
        self._add_raw(data, origin, builtin=True)
        aliases = data.get("aliases") or []
        if (str(data["name"]).lower(), *(a.lower() for a in aliases)) != names:
            raise SpecError(f"{origin}: the name and aliases parsed differ from the header "
                            f"lines read before: {names!r}")

    def _add_raw(self, data: dict[str, Any], origin: str, builtin: bool = False) -> str:
        check_shape(data, origin, SpecError)
        name = data.get("name")
        if not isinstance(name, str) or not name.strip() or is_path(name):
            hint = " (not a path)" if isinstance(name, str) and is_path(name) else ""
            raise SpecError(f"{origin}: field 'name': got {brief(name)}, expected the "
                            f"{self.NOUN}'s name{hint}")
        aliases = data.get("aliases") or []
        if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
            raise SpecError(f"{origin}: field 'aliases': got {brief(aliases)}, expected a list "
                            f"of names")
        key = name.lower()
        self._raw[key] = (data, origin)
        self._forget(key)
        for alias in (key, *(a.lower() for a in aliases)):
            owner = self._alias.get(alias)
            if builtin and owner is not None and owner != key:
                raise SpecError(f"{origin}: name {alias!r} is already used by {owner!r}")
            self._alias[alias] = key
        return key

    def _add_object(self, name: str, aliases: Iterable[str], origin: str) -> None:
        """Index an object registered from Python (it has no raw mapping)."""
        self._raw[name] = ({}, origin)
        for alias in (name, *aliases):
            self._alias[alias] = name

    def names(self) -> list[str]:
        """Canonical names, sorted."""
        self._scan()
        return sorted(self._raw)

    def aliases(self) -> dict[str, str]:
        """Every known name and alias -> its canonical name."""
        self._scan()
        return dict(self._alias)
