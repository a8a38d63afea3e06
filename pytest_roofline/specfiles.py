"""Reading the YAML spec files (hardware and models): safe loading, and where they ship."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import SpecError


def builtin_dir(kind: str) -> Path:
    """The folder of built-in ``kind`` files ("hardware" or "models") in the installed package."""
    from importlib import resources

    try:
        return Path(str(resources.files("pytest_roofline.specs"))) / kind
    except ModuleNotFoundError:  # pragma: no cover - a source checkout without install
        return Path(__file__).resolve().parent.parent / "specs" / kind


def load_yaml(path: Path, what: str = "spec file") -> dict[str, Any]:
    """A YAML mapping read with a safe loader; errors name the file and what is wrong."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"{path}: cannot read {what} ({exc.strerror or exc})") from None
    try:
        data = yaml.load(text, Loader=loader)  # a safe loader: no Python objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise SpecError(f"{path}: not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a {what} must be a mapping of fields, got "
                        f"{type(data).__name__}")
    return data


def is_path(text: str) -> bool:
    """Whether a name given by a user is a file path rather than a catalog name."""
    return text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text


class SpecIndex:
    """Raw spec mappings by canonical name, and every name and alias -> the canonical name.

    The base of the hardware and model catalogs: the built-in folder is read once, on first
    use, to learn names; what a spec builds into is the subclass's business (``_forget``
    drops what it built for a name that is registered again).
    """

    KIND = ""         # the folder under specs/: "hardware" or "models"
    WHAT = "spec file"
    NOUN = "chip"

    def __init__(self) -> None:
        self._raw: dict[str, tuple[dict[str, Any], str]] = {}   # canonical -> (data, origin)
        self._alias: dict[str, str] = {}                        # any name -> canonical
        self._scanned = False

    def _forget(self, key: str) -> None:
        """Drop anything built from the spec called *key* (it is being replaced)."""

    def _scan(self) -> None:
        if self._scanned:
            return
        self._scanned = True
        for path in sorted(builtin_dir(self.KIND).glob("*.yaml")):
            self._add_raw(load_yaml(path, self.WHAT), str(path), builtin=True)

    def _add_raw(self, data: dict[str, Any], origin: str, builtin: bool = False) -> str:
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise SpecError(f"{origin}: field 'name': got {name!r}, expected the {self.NOUN}'s "
                            f"name")
        aliases = data.get("aliases") or []
        if not isinstance(aliases, list):
            raise SpecError(f"{origin}: field 'aliases': got {aliases!r}, expected a list")
        key = name.lower()
        self._raw[key] = (data, origin)
        self._forget(key)
        for alias in (key, *(str(a).lower() for a in aliases)):
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
