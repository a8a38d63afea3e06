"""One error base class; each subclass also inherits the builtin a caller would expect."""

from __future__ import annotations

from collections.abc import Iterable


class RooflineError(Exception):
    """Base class of every error pytest-roofline raises on purpose."""


class UnitError(RooflineError, ValueError):
    """A quantity that cannot be parsed, or has the wrong dimension."""


class SpecError(RooflineError, ValueError):
    """A hardware or model spec file (or dict) that does not follow the schema."""


class UnknownHardwareError(RooflineError, LookupError):
    """A hardware name that is neither built in, nor registered, nor a readable spec file."""


class UnsupportedPrecisionError(RooflineError, LookupError):
    """A precision (dtype) the chip publishes no peak for, or an unknown dtype name."""


class WorkloadError(RooflineError, ValueError):
    """A workload or op argument that is out of range (negative FLOPs, bad shapes, ...)."""


class UnknownModelError(RooflineError, LookupError):
    """A model name that is neither built in nor a readable model file."""


class BaselineError(RooflineError, ValueError):
    """A baseline or report file that is missing, corrupt or of a foreign format."""


class RuleError(RooflineError, ValueError):
    """A compare rule such as ``intensity:10%`` that cannot be parsed."""


def brief(value: object, limit: int = 60) -> str:
    """A short ``repr`` of *value* for an error message: an array, a module or a deeply nested
    structure is named by its type (and shape), never printed whole.

    >>> brief([1, 2]), brief("x" * 100)[:12]
    ('[1, 2]', "'xxxxxxxxxxx")
    """
    kind = type(value)
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, type) and kind.__module__ != "builtins":
        try:
            dims = "x".join(str(int(d)) for d in shape)
        except (TypeError, ValueError):
            dims = "?"
        if dims == "" and kind.__module__ == "numpy":  # a numpy scalar: its value says more
            return repr(value)
        dtype = getattr(value, "dtype", None)
        return f"a {kind.__module__.split('.')[0]} {kind.__name__} of shape [{dims}]" + (
            f" ({dtype})" if dtype is not None else "")
    if hasattr(value, "parameters") and hasattr(value, "forward"):  # a torch module
        return f"a {kind.__name__} module"
    try:
        text = repr(value)
    except RecursionError:
        return f"a deeply nested {kind.__name__}"
    except Exception:  # a foreign __repr__ may raise anything
        return f"a {kind.__name__}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Known names that look like *word*, best first (for "did you mean" hints)."""
    import difflib

    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    hits = difflib.get_close_matches(word.lower(), list(lowered), n=n, cutoff=0.5)
    prefix = [c for c in choices if c.lower().startswith(word.lower()) and c.lower() not in hits]
    return [lowered[h] for h in hits] + prefix[: max(0, n - len(hits))]


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """A sentence fragment such as " Did you mean 'h100'?" or "" when nothing is close."""
    hits = close_matches(word, choices)
    if not hits:
        return ""
    return " Did you mean " + " or ".join(repr(h) for h in hits) + "?"


def closest(word: str, choices: Iterable[str], where: str, n: int = 3) -> str:
    """A sentence naming the choices closest to *word* (" Did you mean 'h100'?", else the
    *n* nearest by spelling) and where all of them are listed (*where*): for a message that
    would be too long with every choice in it."""
    import difflib

    choices = list(choices)
    rest = f"all {len(choices)} are listed in {where}"
    hits = close_matches(word, choices, n)
    if hits:
        return f" Did you mean {' or '.join(map(repr, hits))}? ({rest})"
    ranked = sorted(choices, key=lambda c: -difflib.SequenceMatcher(
        None, word.lower(), c.lower()).ratio())
    return f" Closest: {', '.join(map(repr, ranked[:n]))} ({rest})"
