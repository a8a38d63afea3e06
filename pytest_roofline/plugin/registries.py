"""Every process-wide registry a pytest session may fill, put back when the session ends.

What a session registers is its own: chips (``--roofline-specs``,
``pytest_roofline_register_hardware``, ``register_hardware`` in a conftest), models, op
formulas (``pytest_roofline_register_ops``, ``register_op``), chips made on demand (resolvers)
and where calibration progress lines go. A checkpoint is taken before the first conftest is
imported and restored at ``pytest_unconfigure``, so in-process runs (pytester) and notebooks
never see another session's registrations.

Class identity across in-process runs: pytester removes from ``sys.modules`` every module
first imported during an in-process run, but a package imported before keeps each such
submodule as an attribute (and ``pytest_roofline``'s lazy public names keep what they
resolved). The next run then reached two copies of one module: ``from pytest_roofline import
ops`` the removed one, a fresh import the other, and its Workloads were "a Workload; expected
a Workload". :func:`forget_stale_modules` drops those attributes as a session starts, so every
name resolves to the modules ``sys.modules`` holds.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable

import pytest

#: module -> (what to note as a session starts, how to put it back; the token is None when
#: the module was not imported then: nothing was registered in it yet)
_REGISTRIES: dict[str, tuple[Callable[[types.ModuleType], object],
                             Callable[[types.ModuleType, object], None]]] = {
    "pytest_roofline.hardware": (lambda m: m.CATALOG.checkpoint(),
                                 lambda m, token: m.CATALOG.restore(token)),
    "pytest_roofline.models.catalog": (lambda m: m.CATALOG.checkpoint(),
                                       lambda m, token: m.CATALOG.restore(token)),
    "pytest_roofline.hardware.resolvers": (lambda m: m.checkpoint(),
                                           lambda m, token: m.restore(token)),
    "pytest_roofline.tracing.registry": (lambda m: m.checkpoint(),
                                         lambda m, token: m.restore(token or {})),
    "pytest_roofline.measuring.calibration": (
        lambda m: m.progress,
        lambda m, token: setattr(m, "progress", token or m.stderr_progress)),
}

_CHECKPOINTS = pytest.StashKey[list[tuple[str, object]]]()


def checkpoint(config: pytest.Config) -> None:
    """Note what every registry holds before the session registers anything."""
    forget_stale_modules()
    kept: list[tuple[str, object]] = []
    for name, (note, _) in _REGISTRIES.items():
        module = sys.modules.get(name)  # not imported yet: nothing is registered
        kept.append((name, None if module is None else note(module)))
    config.stash[_CHECKPOINTS] = kept


def restore(config: pytest.Config) -> None:
    """Forget what the session registered."""
    for name, token in config.stash.get(_CHECKPOINTS, []):
        module = sys.modules.get(name)
        if module is not None:
            _REGISTRIES[name][1](module, token)


def forget_stale_modules() -> None:
    """Drop, from every ``pytest_roofline`` package in ``sys.modules``, the attributes that
    hold a module no longer in ``sys.modules`` (or one other than it holds), and what the
    package's lazy public names resolved from such a module (see the module docstring)."""
    live = {name: module for name, module in sys.modules.items()
            if name == "pytest_roofline" or name.startswith("pytest_roofline.")}
    for name, package in live.items():
        if not hasattr(package, "__path__"):
            continue
        namespace = vars(package)
        for attr, value in list(namespace.items()):
            if isinstance(value, types.ModuleType):
                origin = value.__name__
                stale = origin.startswith("pytest_roofline") and live.get(origin) is not value
            elif isinstance(value, (type, types.FunctionType)):  # a class or a function
                origin = str(value.__module__ or "")
                defined = value.__name__  # its name where it is defined
                stale = (origin.startswith("pytest_roofline.") and origin != name
                         and (origin not in live
                              or getattr(live[origin], defined, None) is not value))
            else:
                continue
            if stale:
                delattr(package, attr)
