"""The catalog: chips by name and alias, from the built-in spec files, user spec files,
spec mappings and Hardware objects registered from Python.

Redefinition policy:

* built-in spec files may not share a name or an alias: a clash is an error naming the file;
* a name registered from Python or a user spec file (``register_hardware``,
  ``--roofline-specs``) replaces any chip of that name, built-in or registered before, and takes
  over its aliases: the latest registration wins, and what the catalog built from the spec it
  replaces is forgotten;
* a chip read from a file named by path is known by that path only: its name is not registered;
* chips made on demand (:mod:`.resolvers`) are registered under the name asked for when first
  made;
* the pytest plugin takes a :meth:`~pytest_roofline.specfiles.SpecIndex.checkpoint` as a session
  starts and restores it when the session ends, so a session's registrations are its own.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import SpecError, UnknownHardwareError, brief, closest, did_you_mean
from ..specfiles import SpecIndex, builtin_dir, is_file, is_path, load_yaml
from .chip import Hardware
from .resolvers import made_on_demand
from .schema import from_dict

#: The longest chain of ``extends`` resolved (each spec extends the next); a longer one is
#: an error, never a RecursionError.
MAX_EXTENDS = 64


def _merge(parent: Mapping[str, Any], child: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(parent)
    for key, value in child.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def builtin_spec_dir() -> Path:
    """The folder of the built-in hardware specs (inside the installed package)."""
    return builtin_dir("hardware")


class Catalog(SpecIndex):
    """Chips by name and alias: the built-in specs, plus user files and registered objects.

    Raw YAML is read once to learn names; units are parsed only for chips actually used.
    """

    KIND, WHAT, NOUN = "hardware", "spec file", "chip"
    LOOKUP_ERROR = UnknownHardwareError

    def __init__(self) -> None:
        super().__init__()
        self._built: dict[str, Hardware] = {}
        self._by_path: dict[str, Hardware] = {}  # chips read from files named by path

    def _forget(self, key: str) -> None:
        self._built.pop(key, None)

    def register(self, spec: Hardware | Mapping[str, Any] | str | os.PathLike[str]) -> Hardware:
        """Add a chip (a Hardware, a spec mapping or a spec file); later names win."""
        self._scan()
        if isinstance(spec, Hardware):
            self._add_object(spec.name, spec.aliases, spec.origin)
            self._built[spec.name] = spec
            return spec
        if isinstance(spec, Mapping):
            key = self._add_raw(dict(spec), "<registered>")
        else:
            path = Path(self.name_text(spec))
            key = self._add_raw(load_yaml(path), str(path))
        return self.get(key)

    def register_path(self, path: str | os.PathLike[str]) -> list[Hardware]:
        """Register a spec file, or every ``*.yaml``/``*.yml`` file of a folder: all of them
        or, when one is refused, none (the catalog is left as it was, so one bad file never
        leaves a chip behind that every later lookup or listing trips over)."""
        folder = Path(self.name_text(path))
        if not is_file(folder) and _is_dir(folder):
            files = sorted([*folder.glob("*.yaml"), *folder.glob("*.yml")])
        elif is_file(folder):
            files = [folder]
        else:
            raise SpecError(f"{folder}: no such spec file or folder")
        before = self.checkpoint()
        try:
            return [self.register(f) for f in files]
        except BaseException:
            self.restore(before)
            raise

    def _resolve(self, key: str, seen: tuple[str, ...] = ()) -> dict[str, Any]:
        data, origin = self._raw[key]
        return self._extend(data, origin, (*seen, key))

    def _extend(self, data: dict[str, Any], origin: str,
                seen: tuple[str, ...]) -> dict[str, Any]:
        """*data* merged over the spec it ``extends`` (*seen*: the specs being resolved)."""
        parent = data.get("extends")
        if parent is None:
            return data
        if not isinstance(parent, str):
            raise SpecError(f"{origin}: field 'extends': got {brief(parent)}, expected the name "
                            f"of the chip it extends")
        parent_key = self._alias.get(str(parent).lower())
        if parent_key is None:
            raise SpecError(f"{origin}: field 'extends': unknown chip {parent!r}."
                            + did_you_mean(str(parent), self._alias))
        if parent_key in seen:
            raise SpecError(f"{origin}: field 'extends': {parent!r} extends itself in a loop")
        if len(seen) >= MAX_EXTENDS:
            raise SpecError(f"{seen[0]!r}: field 'extends': a chain of more than "
                            f"{MAX_EXTENDS} specs ({seen[0]!r} -> {seen[1]!r} -> ... -> "
                            f"{seen[-1]!r} -> {parent!r}, in {origin}); allowed: a chain of at "
                            f"most {MAX_EXTENDS}")
        if not self._raw[parent_key][0]:  # a registered Hardware object: no raw data
            raise SpecError(f"{origin}: field 'extends': {parent!r} was registered as an object "
                            f"and cannot be extended; extend a spec file instead")
        base = self._resolve(parent_key, seen)
        merged = _merge(base, {k: v for k, v in data.items() if k != "extends"})
        if "aliases" not in data:
            merged["aliases"] = []
        return merged

    def get(self, name: str | os.PathLike[str] | Hardware) -> Hardware:
        if isinstance(name, Hardware):
            return name
        text = name if type(name) is str else self.name_text(name)
        key = self._alias.get(text.lower()) if self._scanned else None
        if key is not None and key in self._built:
            return self._built[key]
        if is_path(text):
            return self._from_file(Path(text))
        self._scan()
        key = self._alias.get(text.lower())
        if key is None:
            made = made_on_demand(text.lower())
            if made is not None:
                self.register(made)
                for alias in (text.lower(), *made.aliases):
                    self._alias.setdefault(alias, made.name)
                return made
            raise UnknownHardwareError(f"unknown hardware {brief(text, 40)}."
                                       + self.suggest(text))
        if key not in self._built:
            self._built[key] = from_dict(self._resolve(key), self._raw[key][1])
        return self._built[key]

    def suggest(self, text: str) -> str:
        """Close names when there are some; every chip only when nothing is close."""
        close = did_you_mean(text, self._alias)
        if close:
            return close + " A spec file path also works."
        return closest(text, self.names(), "pytest-roofline hw list") + (
            ". A spec file path also works.")

    def _from_file(self, path: Path) -> Hardware:
        """A chip read from a spec file named by path. It is known by that path only: its name
        is not registered, so whether a name is known never depends on which test happened to
        load a file first (register_path / --roofline-specs make a file's names known)."""
        if not is_file(path):
            raise UnknownHardwareError(f"hardware spec file {brief(str(path), 200)} "
                                       f"{_not_a_file(path)}")
        where = str(path.resolve())
        chip = self._by_path.get(where)
        if chip is None:
            self._scan()
            data = load_yaml(path)
            chip = self._by_path[where] = from_dict(self._extend(data, str(path), ()), str(path))
        return chip

    def __iter__(self) -> Iterator[Hardware]:
        return (self.get(n) for n in self.names())


def _not_a_file(path: Path) -> str:
    """Why *path*, which is not a regular file, cannot be a spec file."""
    try:
        if path.is_dir():
            return "is a directory; expected a spec file (*.yaml) such as one in it"
        if path.exists():
            return "is not a regular file (a device, a FIFO or a socket); expected a *.yaml"
    except (OSError, ValueError):
        pass
    return "does not exist"
