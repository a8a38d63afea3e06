"""Formulas for ops the tracers cannot count on their own: your kernels, by name.

A traced op with no formula (a ``torch.library`` custom op, a JAX ``custom_call``) is
recorded with its bytes and listed in ``Workload.unknown``; its FLOPs are never taken as 0
without a word. ``register_op(name, formula)`` gives it one:

* ``name``: a ``torch.library`` op's qualified name (``"mylib::fancy"``), a JAX
  ``custom_call`` target, or a ``pallas_call`` kernel's name (the kernel function's name,
  or ``name=`` given to ``pl.pallas_call``). An ``aten::`` name replaces the built-in
  formula of that op.
* ``formula``: called with the op's arguments as the program passed them (tensors on meta,
  fake or real; JAX: ``jax.ShapeDtypeStruct``\\ s), it returns a
  :class:`~pytest_roofline.Kernel` or a :class:`~pytest_roofline.Workload`, typically built
  from ``pytest_roofline.ops``. Its kernels are named after the op where it ran
  (``layers.0.mlp.mylib::fancy``, the formula's own kernel names after a colon).

``register_op`` also works as a decorator (``@register_op("mylib::fancy")``), in a conftest
or at import of the library that defines the kernel. Formulas for widely used kernels ship
with the tracer (:mod:`.known_ops`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar, overload

from ..workload import Kernel, Workload
from ._base import TraceError

__all__ = ["Formula", "lookup", "register_op", "registered", "unregister_op"]

Formula = Callable[..., "Kernel | Workload"]
F = TypeVar("F", bound=Callable[..., Any])

_FORMULAS: dict[str, Formula] = {}


def _key(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise TraceError(f"register_op: name={name!r} must be an op's name, such as "
                         f"'mylib::fancy' (a torch.library op), a custom_call target or a "
                         f"pallas_call kernel's name")
    return name.strip()


@overload
def register_op(name: str) -> Callable[[F], F]: ...
@overload
def register_op(name: str, formula: F) -> F: ...


def register_op(name: str, formula: Any = None) -> Any:
    """Give the op *name* a formula (see the module docstring); returns the formula, so it
    works as a decorator too. Registering a name again replaces its formula."""
    key = _key(name)
    if formula is None:
        def decorate(fn: F) -> F:
            register_op(key, fn)
            return fn
        return decorate
    if not callable(formula):
        raise TraceError(f"register_op({key!r}, formula): formula must be callable (it takes "
                         f"the op's arguments and returns a Kernel or Workload), got "
                         f"{type(formula).__name__}")
    _FORMULAS[key] = formula
    return formula


def unregister_op(name: str) -> None:
    """Forget the formula of *name* (no error when it has none)."""
    _FORMULAS.pop(_key(name), None)


def registered() -> list[str]:
    """The names that have a formula, sorted."""
    return sorted(_FORMULAS)


def lookup(name: str) -> Formula | None:
    """The formula registered for *name*, else the one shipped for it (:mod:`.known_ops`)."""
    formula = _FORMULAS.get(name)
    if formula is None and "::" in name:
        from .known_ops import BUILTIN

        formula = BUILTIN.get(name)
    return formula


def apply(name: str, formula: Formula, where: str, args: Iterable[Any],
          kwargs: dict[str, Any]) -> tuple[list[Kernel], dict[str, int]]:
    """The kernels *formula* gives for one call of *name*, named ``where.name[:kernel]``, and
    the unknown ops of a Workload it returns."""
    try:
        result = formula(*args, **kwargs)
    except Exception as exc:  # the user's formula: name it, keep its message
        raise TraceError(f"the formula registered for {name!r} failed: "
                         f"{type(exc).__name__}: {exc}") from exc
    label = f"{where}.{name}" if where else name
    if isinstance(result, Kernel):
        return [_named(result, label)], {}
    if isinstance(result, Workload):
        return [_named(k, label) for k in result.kernels], dict(result.unknown)
    raise TraceError(f"the formula registered for {name!r} returned "
                     f"{type(result).__name__}; it must return a Kernel or a Workload "
                     f"(pytest_roofline.ops builds both)")


def _named(kernel: Kernel, label: str) -> Kernel:
    name = label if kernel.name in ("", label) else f"{label}:{kernel.name}"
    return kernel.evolve(name=name)
