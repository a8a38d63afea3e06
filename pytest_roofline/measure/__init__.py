"""Measured rooflines: calibrate this machine's roofs, time a call, report % of roof.

* :func:`measure` times a call (warm-up, repeats, accelerator sync) into a
  :class:`Measurement` (``time``: median s, ``spread``: IQR / median).
* :mod:`.calibration` measures this machine (``host``, ``cuda:N``) into a hardware spec in
  the built-in schema, cached per machine; the hardware catalog resolves those names through
  it on first use.
* :mod:`.diagnose` reads a measured time against a roofline: efficiency, and a measurement
  faster than the bound.

Imports here are lazy: numpy and torch are imported when something is measured.

``pytest_roofline.measure`` is both this package and the public function: the package
module is callable, ``pytest_roofline.measure(fn, *args, **kwargs)`` being
:func:`.timing.measure`.
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

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


class _CallableModule(types.ModuleType):
    """This package, callable as :func:`.timing.measure`."""

    def __call__(self, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        from .timing import measure

        return measure(fn, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
