"""What the tracers share below the package: the error they raise, the one shape of what a
recording gives (:class:`Recording`, torch's and JAX's alike) and how a callable's framework
is found (from its arguments, else from what it closes over)."""

from __future__ import annotations

import math
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..engine.workload import Kernel
from ..errors import RooflineError


class TraceError(RooflineError, ValueError):
    """A callable or its arguments that cannot be traced."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Recording:
    """What one recording of a program gives, whichever framework ran it (``_torch.record``,
    ``_jax.record``, a ``trace=True`` body's recorder once it stops); ``Tracer.finish``
    makes its Workload.

    * ``kernels``: one or more per op, in the order they ran;
    * ``footprint``: bytes resident while it ran, at least (0 where not known: the lowest);
    * ``unknown``: op name -> calls recorded without a formula (their bytes only);
    * ``assumed``: what the recording could not read and assumed -> times;
    * ``left_out``: what a test body ran that is not its workload (tensor factories, RNG
      fills, reference comparisons) -> times; empty for a traced call.

    The counts are copied into read-only mappings: a recorder that goes on recording does
    not change a Recording it gave.
    """

    kernels: tuple[Kernel, ...]
    footprint: float
    unknown: Mapping[str, int]
    assumed: Mapping[str, int]
    left_out: Mapping[str, int]

    def __post_init__(self) -> None:
        kernels = self.kernels
        if not isinstance(kernels, (tuple, list)) or not all(
                isinstance(k, Kernel) for k in kernels):
            raise TraceError(f"Recording: kernels={kernels!r:.80} must be a sequence of "
                             f"Kernels")
        object.__setattr__(self, "kernels", tuple(kernels))
        footprint = self.footprint
        if isinstance(footprint, bool) or not isinstance(footprint, (int, float)) or not (
                math.isfinite(footprint) and footprint >= 0):
            raise TraceError(f"Recording: footprint={footprint!r} must be a finite number "
                             f"of bytes >= 0")
        object.__setattr__(self, "footprint", float(footprint))
        for field in ("unknown", "assumed", "left_out"):
            object.__setattr__(self, field, _counts(field, getattr(self, field)))


def _counts(field: str, value: object) -> Mapping[str, int]:
    """*value*, a mapping of names to counts >= 1, as a read-only copy; else a TraceError."""
    if not isinstance(value, Mapping):
        raise TraceError(f"Recording: {field}={value!r:.80} must map names to counts")
    for name, count in value.items():
        if not isinstance(name, str) or isinstance(count, bool) or not isinstance(
                count, int) or count < 1:
            raise TraceError(f"Recording: {field}[{name!r}]={count!r}: a count is an int "
                             f">= 1 keyed by a name")
    return types.MappingProxyType(dict(value))


def _leaves(value: object, depth: int = 0) -> Iterable[object]:
    if depth > 4:
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            yield from _leaves(item, depth + 1)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item, depth + 1)
    else:
        yield value


def captured(fn: object) -> list[object]:
    """What a callable holds besides its arguments: its owner (a bound method's object), a
    ``functools.partial``'s arguments, its closure cells, defaults and the module globals
    its code names (``trace(lambda: model(x))`` closes over ``model`` and ``x``)."""
    found: list[object] = [getattr(fn, "__self__", None)]
    partial_fn = getattr(fn, "func", None)
    if partial_fn is not None and isinstance(getattr(fn, "args", None), tuple):
        found += [partial_fn, *fn.args, *getattr(fn, "keywords", {}).values()]  # type: ignore[attr-defined]
        fn = partial_fn
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:  # an empty cell
            continue
    found.extend(getattr(fn, "__defaults__", None) or ())
    code, names = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if code is not None and isinstance(names, dict):
        found.extend(names[n] for n in code.co_names
                     if n in names and _framework_object(names[n]))
    return found


def _framework_object(value: object) -> bool:
    """An instance (not a class, not a module) of a torch or jax type or of a subclass of
    one: a tensor, a Module (the user's own ``class Net(nn.Module)`` too)."""
    if isinstance(value, type) or type(value).__name__ == "module":
        return False
    return any(cls.__module__.split(".")[0] in ("torch", "jax", "jaxlib", "flax")
               for cls in type(value).__mro__[:-1])


def detect(fn: object, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """``"torch"`` or ``"jax"``, from the arguments' types, else from what *fn* holds (an
    ``nn.Module``, a closure over tensors); no framework is imported."""
    found = _frameworks([fn, *_leaves(args), *_leaves(kwargs)])
    if not found:
        found = _frameworks(list(_leaves(captured(fn))))
    if len(found) == 1:
        return found.pop()
    if found:
        raise TraceError("trace(): found both torch tensors and jax arrays among the "
                         "arguments; trace one framework at a time")
    kinds = ", ".join(type(v).__name__ for v in _leaves(args)) or "none"
    raise TraceError(f"trace(): no torch tensor or jax array in the arguments or what fn "
                     f"closes over (types: {kinds[:40]}); pass what fn takes (meta tensors, "
                     f"ShapeDtypeStructs) or Tracer(framework='torch' or 'jax')")


def _frameworks(values: list[object]) -> set[str]:
    found: set[str] = set()
    for value in values:
        for cls in type(value).__mro__:
            module = cls.__module__.split(".")[0]
            if module == "torch":
                found.add("torch")
            elif module in ("jax", "jaxlib", "flax"):
                found.add("jax")
    return found
