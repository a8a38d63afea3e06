"""Measured rooflines: calibrate this machine's roofs, time a call, report % of roof.

* :func:`measure` times a call (warm-up, repeats, accelerator sync) into a
  :class:`Measurement` (``time``: median s, ``spread``: IQR / median).
* :mod:`.calibration` measures this machine (``host``, ``cuda:N``) into a hardware spec in
  the built-in schema, cached per machine; the hardware catalog resolves those names through
  it on first use.
* :mod:`.diagnose` reads a measured time against a roofline: efficiency, and a measurement
  faster than the bound.

Imports here are lazy: numpy and torch are imported when something is measured.

The public function is ``pytest_roofline.measure`` (:func:`.timing.measure`); this package
is ``pytest_roofline.measuring``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..hardware import Hardware, register_measurable, register_resolver

if TYPE_CHECKING:
    from .timing import MeasureError, Measurement, Timer, measure

__all__ = ["MeasureError", "Measurement", "Timer", "measure"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import timing

        value = getattr(timing, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _calibrated(name: str) -> Hardware | None:
    """The calibrated chip for ``host``/``cuda[:N]`` (:func:`.calibration.resolve`)."""
    from .calibration import resolve

    return resolve(name)


register_resolver(r"host|cuda(?:[:-]\d+)?", _calibrated)


def _foreign(chip: Hardware) -> str | None:
    """Why a time measured here cannot be set against *chip* (:func:`.here.foreign`)."""
    from .here import foreign

    return foreign(chip)


register_measurable(_foreign)
