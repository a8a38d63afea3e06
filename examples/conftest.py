"""Shared pieces of the example suite.

``pytest_roofline_register_hardware`` makes a chip of our own known by name: here an H100
whose memory bandwidth is set to a sustained figure rather than the datasheet's peak (the
2.8 TB/s below is an illustration of the mechanism, not a published number). Tests can
then name it like any built-in chip: ``hw="h100-sustained"``.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_roofline import models


# optionalhook: this conftest still loads when the plugin is disabled (-p no:roofline).
@pytest.hookimpl(optionalhook=True)
def pytest_roofline_register_hardware(config: pytest.Config) -> list[dict[str, Any]]:
    return [{
        "name": "h100-sustained",
        "extends": "h100",
        "description": "H100 SXM with a sustained (not peak) HBM bandwidth",
        "sources": {"example": "an illustrative sustained-bandwidth figure"},
        "memory": {"bandwidth": {"value": "2.8 TB/s", "source": "example"}},
    }]


@pytest.fixture(scope="session")
def llama_8b() -> models.Model:
    return models.load("llama-3-8b")
