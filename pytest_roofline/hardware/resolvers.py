"""Chips made on demand, and the check of what this machine may be measured against.

Both are filled by the package that can answer them, when it is imported: the engine imports
none of them and names none of them by string. ``pytest_roofline.measuring`` registers the
calibrations of this machine (``host``, ``cuda:N``, measured on first use) and the check that a
time measured here is set only against this machine; the package, its plugin and its command
line import it.

A lookup does not depend on what was imported before it: the first time a name matches no
registered resolver (or the check is asked for before one is registered), the packages
named in the entry-point group ``pytest_roofline.resolvers`` are imported (this
distribution names ``pytest_roofline.measuring`` there; another package may name its own),
and the lookup is tried again. This distribution's own entries are read first (one
distribution's metadata); every installed distribution's only for a name that nothing
registered so far makes (a scan of them all, about 10 ms, once). A resolver that measures a
machine says so before it starts.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from .chip import Hardware

#: Chips whose spec is made on demand, not read from a file: a name pattern (a regular
#: expression matched against the whole lower-case name) -> a function taking the name and
#: returning a Hardware (or None). Filled by :func:`register_resolver`.
RESOLVERS: dict[str, Callable[[str], Hardware | None]] = {}

#: The check that a time measured on this machine may be set against a chip (returning the
#: reason it may not, or None), registered by :func:`register_measurable`.
MEASURABLE: list[Callable[[Hardware], str | None]] = []


def register_resolver(pattern: str, resolve: Callable[[str], Hardware | None]) -> None:
    """Make the names matching *pattern* (a regular expression, matched against the whole
    lower-case name) chips made on demand by *resolve*."""
    re.compile(pattern)  # a bad pattern fails here, not at the first lookup
    RESOLVERS[pattern] = resolve


def register_measurable(check: Callable[[Hardware], str | None]) -> None:
    """Make *check* the judge of which chips a time measured on this machine may be set
    against (it returns why not, or None); a later registration replaces an earlier one."""
    MEASURABLE[:] = [check]


#: The entry-point group whose packages register resolvers when imported.
GROUP = "pytest_roofline.resolvers"
#: The distribution this package ships in: its own entries of the group are read first.
DISTRIBUTION = "pytest-roofline"
_loaded: set[str] = set()  # "own", "all": which entries of the group were imported


def load_registered(*, everything: bool = False) -> bool:
    """Import the packages of the entry-point group :data:`GROUP` (their import registers
    their resolvers), once: this distribution's own entries (a lookup of one distribution's
    metadata, a fraction of a millisecond), and with *everything* every installed
    distribution's too (a scan of all of them, about 10 ms, made only for a name nothing
    else knows). Returns whether this call imported anything."""
    from importlib import metadata

    points: list[metadata.EntryPoint] = []
    if "own" not in _loaded:
        _loaded.add("own")
        try:
            own = metadata.distribution(DISTRIBUTION).entry_points
        except metadata.PackageNotFoundError:  # run from a source tree, not installed
            own = metadata.EntryPoints(())
        points += [point for point in own if point.group == GROUP]
    if everything and "all" not in _loaded:
        _loaded.add("all")
        points += [point for point in metadata.entry_points(group=GROUP)
                   if point not in points]
    for point in points:
        try:
            point.load()
        except Exception as exc:  # a broken third-party package: named, never a crash here
            import warnings

            warnings.warn(f"pytest-roofline: the resolver package {point.value!r} (entry "
                          f"point {point.name!r} of {GROUP!r}) failed to import: {exc}",
                          stacklevel=2)
    return bool(points)


def foreign_to_this_machine(chip: Hardware) -> str | None:
    """Why a call timed on this machine cannot be set against *chip* (None: it can)."""
    if not MEASURABLE:
        load_registered()
    if not MEASURABLE:
        return ("no check of this machine is loaded (import pytest_roofline.measuring, which "
                "made the measurement)")
    return MEASURABLE[0](chip)


def is_dynamic(name: str) -> bool:
    """Whether *name* is one the catalog makes on demand (a calibration such as ``host``)."""
    if any(re.fullmatch(p, name.lower()) for p in RESOLVERS):
        return True
    return load_registered() and is_dynamic(name)


def made_on_demand(name: str) -> Hardware | None:
    """The chip a registered resolver makes for *name* (lower case), or None (the
    entry-point group's packages imported first when no resolver matches: see the module
    docstring)."""
    if not any(re.fullmatch(p, name) for p in RESOLVERS) and load_registered(
            everything=True):
        return made_on_demand(name)
    for pattern, resolve in RESOLVERS.items():
        if not re.fullmatch(pattern, name):
            continue
        chip = resolve(name)
        if chip is not None:
            return chip
    return None



def checkpoint() -> tuple[dict[str, Callable[[str], Hardware | None]],
                          list[Callable[[Hardware], str | None]]]:
    """The resolvers and the check registered now: what :func:`restore` goes back to."""
    return dict(RESOLVERS), list(MEASURABLE)


def restore(saved: tuple[dict[str, Callable[[str], Hardware | None]],
                         list[Callable[[Hardware], str | None]]] | None) -> None:
    """Forget what was registered since :func:`checkpoint` gave *saved*. ``None`` (no
    checkpoint: this module was not imported yet) keeps the registrations this package's
    own modules made when they were imported (``measuring``'s), which stay imported."""
    if saved is None:
        saved = ({p: r for p, r in RESOLVERS.items() if _ours(r)},
                 [c for c in MEASURABLE if _ours(c)])
    RESOLVERS.clear()
    RESOLVERS.update(saved[0])
    MEASURABLE[:] = saved[1]


def _ours(function: Callable[..., object]) -> bool:
    return str(getattr(function, "__module__", "")).startswith("pytest_roofline.")
