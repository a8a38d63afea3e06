"""Whole models as workloads: transformer LLMs and encoders, ResNets.

``models.load("llama-3-8b").decode(batch=8, context=4096)`` is the workload of one decode
step; ``prefill``, ``forward`` and ``train_step`` are the other phases, ``params`` the exact
parameter count and ``footprint`` the memory a phase needs per chip. Built-in configurations
live in ``specs/models/*.yaml`` (schema in that folder's README), each citing its model card
or config file; a path to a file of the same schema, a Hugging Face ``config.json`` (a path
ending in ``.json``, or its mapping: :func:`from_hf_config`), :func:`register`, or a config
built in Python (:class:`TransformerConfig`, :class:`ResNetConfig`) add models of your own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..engine.breakdown import breakdown, format_breakdown
from .catalog import CATALOG, Model, build, builtin_model_dir
from .cnn import ResNet
from .config import ModelConfig, ResNetConfig, TransformerConfig
from .config import from_dict as config_from_dict
from .hf import from_hf_config
from .transformer import Footprint, Transformer

__all__ = [
    "Footprint",
    "Model",
    "ModelConfig",
    "ResNet",
    "ResNetConfig",
    "Transformer",
    "TransformerConfig",
    "breakdown",
    "builtin_model_dir",
    "config_from_dict",
    "format_breakdown",
    "from_hf_config",
    "get_config",
    "list_models",
    "load",
    "register",
]


def load(name_or_path: str | os.PathLike[str] | ModelConfig | Mapping[str, Any]) -> Model:
    """A model by name or alias (case-insensitive), from a model file (``.yaml``, or its
    mapping), a Hugging Face ``config.json`` (a path, or its mapping: see
    :func:`from_hf_config`), or a config.

    An unknown name raises :class:`~pytest_roofline.UnknownModelError` listing close matches.
    """
    if isinstance(name_or_path, (TransformerConfig, ResNetConfig)):
        return build(name_or_path)
    if isinstance(name_or_path, Mapping):
        return build(get_config(name_or_path))
    return CATALOG.get(name_or_path)


def get_config(name_or_path: str | os.PathLike[str] | Mapping[str, Any]) -> ModelConfig:
    """The validated configuration of a model (see :func:`load`); a mapping is a
    ``config.json`` (with ``model_type``) or a model file's content (with ``family``)."""
    if isinstance(name_or_path, Mapping):
        if "family" in name_or_path and "model_type" not in name_or_path:
            return config_from_dict(name_or_path, "<mapping>")
        return from_hf_config(name_or_path)
    return CATALOG.config(name_or_path)


def list_models() -> list[str]:
    """Canonical names of every known model, sorted."""
    return CATALOG.names()


def register(spec: ModelConfig | Mapping[str, Any] | str | os.PathLike[str]) -> Model:
    """Make a model known by name: a config object, a model-file mapping, a file path, or a
    Hugging Face ``config.json`` (its path, or its mapping with a ``model_type``)."""
    return CATALOG.register(spec)
