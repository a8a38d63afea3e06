"""Model lookup: the built-in model files, user files and registered configs, by name or alias.

Raw YAML is read once to learn names; a config is validated the first time it is loaded.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..errors import UnknownModelError, brief, did_you_mean
from ..specfiles import SpecIndex, builtin_dir, is_file, is_path, load_yaml
from .cnn import ResNet
from .config import ModelConfig, ResNetConfig, TransformerConfig, from_dict
from .hf import from_hf_config
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


class Catalog(SpecIndex):
    """Models by name and alias: built-in files, plus user files and registered configs."""

    KIND, WHAT, NOUN = "models", "model file", "model"
    LOOKUP_ERROR = UnknownModelError
    EXAMPLE = "llama-3-8b"

    def __init__(self) -> None:
        super().__init__()
        self._configs: dict[str, ModelConfig] = {}

    def _forget(self, key: str) -> None:
        self._configs.pop(key, None)

    def register(self, spec: ModelConfig | Mapping[str, Any] | str | os.PathLike[str]) -> Model:
        """Make a model known by name: a config object, a model-file mapping, a file path, or
        a Hugging Face config.json (path or mapping)."""
        self._scan()
        if isinstance(spec, (TransformerConfig, ResNetConfig)):
            self._add_object(spec.name, spec.aliases, spec.origin)
            self._configs[spec.name] = spec
            return build(spec)
        if isinstance(spec, Mapping) and "model_type" in spec and "family" not in spec:
            return self.register(from_hf_config(spec))  # a config.json mapping
        if isinstance(spec, Mapping):
            key = self._add_raw(dict(spec), "<registered>")
        elif os.fspath(spec).endswith(".json"):
            return self.register(from_hf_config(spec))
        else:
            text = self.name_text(spec)
            key = self._add_raw(load_yaml(Path(text), "model file"), text)
        return self.get(key)

    def config(self, name: str | os.PathLike[str]) -> ModelConfig:
        text = self.name_text(name)
        if is_path(text):
            path = Path(text)
            if not is_file(path):
                raise UnknownModelError(f"model file {brief(text, 200)} does not exist")
            if path.suffix == ".json":  # a Hugging Face config.json
                return from_hf_config(path)
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
