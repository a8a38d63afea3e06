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
