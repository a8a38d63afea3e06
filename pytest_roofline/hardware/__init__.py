"""Hardware: a frozen value object per chip, and the catalog that loads spec files.

A spec file (``specs/hardware/*.yaml``, schema in ``specs/hardware/README.md``) is parsed once:
units become floats in SI units (FLOP/s, B/s, B) and the result is cached, so later lookups
cost a dictionary access.

The rooms: :mod:`.chip` (the value objects: Hardware, Link, MemoryLevel), :mod:`.schema`
(a spec mapping read into a Hardware, one reader per section), :mod:`.catalog` (chips by name,
with its redefinition policy), :mod:`.resolvers` (chips made on demand, registered by the
package that makes them). The process-wide catalog, :data:`CATALOG`, lives here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .catalog import Catalog, builtin_spec_dir
from .chip import LATENCY_KINDS, THREAD_SLACK, Hardware, Link, MemoryLevel
from .resolvers import (
    MEASURABLE,
    RESOLVERS,
    foreign_to_this_machine,
    is_dynamic,
    register_measurable,
    register_resolver,
)
from .schema import from_dict

__all__ = [
    "CATALOG",
    "LATENCY_KINDS",
    "MEASURABLE",
    "RESOLVERS",
    "THREAD_SLACK",
    "Catalog",
    "Hardware",
    "Link",
    "MemoryLevel",
    "builtin_spec_dir",
    "foreign_to_this_machine",
    "from_dict",
    "get_hardware",
    "is_dynamic",
    "list_hardware",
    "register_hardware",
    "register_measurable",
    "register_resolver",
]

#: The process-wide catalog that :func:`get_hardware` and :func:`register_hardware` use.
CATALOG = Catalog()


def get_hardware(name_or_path: str | os.PathLike[str] | Hardware) -> Hardware:
    """A chip by name or alias (case-insensitive), or from a spec file path."""
    return CATALOG.get(name_or_path)


def list_hardware() -> list[str]:
    """Canonical names of every known chip, sorted."""
    return CATALOG.names()


def register_hardware(spec: Hardware | Mapping[str, Any] | str | os.PathLike[str]) -> Hardware:
    """Make a chip known by name: a Hardware object, a spec mapping, or a spec file path."""
    return CATALOG.register(spec)
