"""The settings of an analysis, one vocabulary for the engine, the plugin and the command line.

* ``flops_per_mac``: FLOPs counted per multiply-accumulate, 2 (the vendors' convention) or 1;
* ``derate``: the fraction of every roof (compute, memory, links) taken as reachable, in (0, 1];
* ``margin``: the relative band around a ridge inside which a regime assertion fails as too
  close to call, in [0, 1);
* ``sparse``: price matrix work at the structured-sparse peaks, True or False.

Each is checked here and nowhere else: :func:`check` reads a value (and, with ``text=True``,
the strings an option, an ini line or a flag give: ``"2"``, ``"70%"``) into its canonical
form, or raises :class:`BadSetting` carrying the setting's name, the value and what is
allowed (:data:`ALLOWED`). The engine (``analyze(derate=...)``), the plugin's options
(``--roofline-derate``) and the command line (``--derate``) each word that error in their own
spelling of the name.
"""

from __future__ import annotations

from typing import Any

from ..errors import RooflineError, brief
from ..units import fraction

#: What each setting allows, as every error about it says.
ALLOWED = {
    "flops_per_mac": "1 or 2 (FLOPs counted per multiply-accumulate; 2 is the vendors' "
                     "convention)",
    "derate": "a fraction of peak in (0, 1] such as 0.7 or '70%'",
    "margin": "a relative band in [0, 1) such as 0.1 or '10%'",
    "sparse": "True or False",
}
#: The keyword settings of ``analyze``, ``sweep``, ``crossover`` and ``knob_hint``.
ANALYSIS = ("flops_per_mac", "derate", "sparse")
#: The settings a JSON report records, which reports merged or compared must share.
RECORDED = ("flops_per_mac", "derate", "margin")
#: Each setting's value when none is given.
DEFAULTS: dict[str, Any] = {"flops_per_mac": 2, "derate": 1.0, "margin": 0.0, "sparse": False}


class BadSetting(RooflineError, ValueError):
    """A setting's value that is not allowed: ``name``, ``value`` and ``allowed`` say which,
    so that each caller can name the setting its own way."""

    def __init__(self, name: str, value: object) -> None:
        self.name, self.value, self.allowed = name, value, ALLOWED[name]
        super().__init__(f"{name} must be {self.allowed}, got {brief(value)}")


def check(name: str, value: object, *, text: bool = False) -> Any:
    """*value* of the setting *name* in its canonical form (an int, a float, a bool), or
    :class:`BadSetting`. ``text=True`` also reads what options and flags give: ``"2"`` for
    flops_per_mac, ``"70%"`` or ``"0.7"`` for derate and margin."""
    if name == "flops_per_mac":
        if text and isinstance(value, str):
            value = int(value.strip()) if value.strip() in ("1", "2") else value
        if isinstance(value, bool) or value not in (1, 2):
            raise BadSetting(name, value)
        return int(value)  # type: ignore[call-overload]
    if name in ("derate", "margin"):
        if text or not isinstance(value, str):
            number = fraction(value)
        else:
            raise BadSetting(name, value)
        if not ((0 < number <= 1) if name == "derate" else (0 <= number < 1)):
            raise BadSetting(name, value)
        return number
    if name == "sparse":
        if value is not True and value is not False:
            raise BadSetting(name, value)
        return value
    raise RooflineError(f"unknown setting {name!r}; the settings are "
                        f"{', '.join(ALLOWED)}")


def check_analysis(flops_per_mac: object, derate: object, sparse: object) -> None:
    """The settings of one ``analyze`` call (the common values at the cost of three
    comparisons; anything else through :func:`check`)."""
    if not (flops_per_mac == 2 and type(flops_per_mac) is int and derate == 1.0
            and type(derate) is float and sparse is False):
        check("flops_per_mac", flops_per_mac)
        if isinstance(derate, str):
            raise BadSetting("derate", derate)  # the engine takes numbers; flags take '70%'
        check("derate", derate)
        check("sparse", sparse)


def check_names(settings: dict[str, Any], where: str) -> None:
    """Refuse keyword settings an analysis does not take, naming the allowed ones."""
    for name in settings:
        if name not in ANALYSIS:
            raise RooflineError(f"{where}: unknown setting {name!r}; allowed: "
                                f"{', '.join(ANALYSIS)}, dtype")
