"""Model lookup: the built-in model files, user files and registered configs, by name or alias.

Raw YAML is read once to learn names; a config is validated the first time it is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import SpecError, UnknownModelError, did_you_mean
from ..specfiles import builtin_dir, load_yaml
from .cnn import ResNet
from .config import ModelConfig, ResNetConfig, TransformerConfig, from_dict
from .transformer import Transformer

Model = Transformer | ResNet


def builtin_model_dir() -> Path:
    """The folder of the built-in model files (inside the installed package)."""
    return builtin_dir("models")


def build(config: ModelConfig) -> Model:
    """The model object of a config."""
    if isinstance(config, TransformerConfig):
        return Transformer(config)
    if isinstance(config, ResNetConfig):
        return ResNet(config)
    raise UnknownModelError(f"cannot build a model from {type(config).__name__}")


class Catalog:
    """Models by name and alias: built-in files, plus user files and registered configs."""

    def __init__(self) -> None:
        self._raw: dict[str, tuple[dict[str, Any], str]] = {}
        self._alias: dict[str, str] = {}
        self._configs: dict[str, ModelConfig] = {}
        self._scanned = False

    def _scan(self) -> None:
        if self._scanned:
            return
        self._scanned = True
        for path in sorted(builtin_model_dir().glob("*.yaml")):
            self._add_raw(load_yaml(path, "model file"), str(path), builtin=True)

    def _add_raw(self, data: dict[str, Any], origin: str, builtin: bool = False) -> str:
        name = data.get("name")
        if not isinstance(name, str) or not name:
            raise SpecError(f"{origin}: missing field 'name' (the model's name)")
        aliases = data.get("aliases") or []
        if not isinstance(aliases, list):
            raise SpecError(f"{origin}: field 'aliases': got {aliases!r}, expected a list")
        key = name.lower()
        self._raw[key] = (data, origin)
        self._configs.pop(key, None)
        for alias in (key, *(str(a).lower() for a in aliases)):
            owner = self._alias.get(alias)
            if builtin and owner is not None and owner != key:
                raise SpecError(f"{origin}: name {alias!r} is already used by {owner!r}")
            self._alias[alias] = key
        return key

    def names(self) -> list[str]:
        self._scan()
        return sorted(self._raw)

    def register(self, spec: ModelConfig | Mapping[str, Any] | str | os.PathLike[str]) -> Model:
        """Make a model known by name: a config object, a model-file mapping or a file path."""
        self._scan()
        if isinstance(spec, (TransformerConfig, ResNetConfig)):
            self._raw[spec.name] = ({}, spec.origin)
            self._configs[spec.name] = spec
            for alias in (spec.name, *spec.aliases):
                self._alias[alias] = spec.name
            return build(spec)
        if isinstance(spec, Mapping):
            key = self._add_raw(dict(spec), "<registered>")
        else:
            key = self._add_raw(load_yaml(Path(spec), "model file"), os.fspath(spec))
        return self.get(key)

    def config(self, name: str | os.PathLike[str]) -> ModelConfig:
        text = os.fspath(name)
        if text.endswith((".yaml", ".yml")) or os.sep in text or "/" in text:
            path = Path(text)
            if not path.is_file():
                raise UnknownModelError(f"model file {text!r} does not exist")
            return from_dict(load_yaml(path, "model file"), str(path))
        self._scan()
        key = self._alias.get(text.lower())
        if key is None:
            raise UnknownModelError(
                f"unknown model {text!r}." + did_you_mean(text, self._alias)
                + f" Known models: {', '.join(self.names())}. A model file path also works.")
        if key not in self._configs:
            data, origin = self._raw[key]
            self._configs[key] = from_dict(data, origin)
        return self._configs[key]

    def get(self, name: str | os.PathLike[str]) -> Model:
        return build(self.config(name))


CATALOG = Catalog()
