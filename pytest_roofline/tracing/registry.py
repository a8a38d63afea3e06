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
or at import of the library that defines the kernel. A name registered by two different
formulas is an error naming both (the same function registered again, or a conftest loaded
again, replaces its own). ``Tracer(formulas={"mylib::fancy": formula})`` gives formulas to one
tracer only; they win over ``register_op``'s, which win over the formulas that ship with the
tracer (:mod:`.known_ops`) and over the built-in aten and JAX tables.

Every table of formulas is a :class:`Registry`: the built-in tables register their rows
through the same ``register`` as ``register_op``, duplicate check included.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar, overload

from ..engine.workload import Kernel, Workload
from ._base import TraceError
from ._formula_check import call

__all__ = [
    "BUILTIN",
    "USER",
    "Formula",
    "Formulas",
    "Registry",
    "checkpoint",
    "lookup",
    "register_op",
    "registered",
    "restore",
    "scoped",
    "unregister_op",
]

Formula = Callable[..., "Kernel | Workload"]
F = TypeVar("F", bound=Callable[..., Any])
V = TypeVar("V")


def registrant(value: object) -> str:
    """Who registers *value*: its qualified name and where it is defined (a module reloaded
    in a new pytest session defines it again at the same place: the same registrant)."""
    code = getattr(value, "__code__", None)
    name = getattr(value, "__qualname__", None) or type(value).__qualname__
    module = getattr(value, "__module__", None) or type(value).__module__
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"{module}.{name}{where}"


class Registry(Generic[V]):
    """Names to values, each with its registrant; what every table of op formulas is made of
    (the built-in aten and JAX tables, the shipped custom-op formulas, ``register_op``, a
    ``Tracer``'s own). Registering a name the registry holds from another registrant is an
    error naming both; the same registrant registering again (a reloaded conftest) replaces
    its own entry."""

    __slots__ = ("entries", "hint", "what")

    def __init__(self, what: str, hint: str = "each op belongs to one family") -> None:
        self.what = what
        self.hint = hint  # what to do about a name registered twice
        self.entries: dict[str, tuple[V, str]] = {}

    def register(self, name: str, value: V, *, by: str | None = None) -> V:
        who = by or registrant(value)
        held = self.entries.get(name)
        if held is not None and held[1] != who and held[0] is not value:
            raise TraceError(f"{self.what}: {name!r} is registered twice, by {held[1]} and by "
                             f"{who}; {self.hint.format(name=name)}")
        self.entries[name] = (value, who)
        return value

    def rows(self, *families: Iterable[str]) -> Callable[[F], F]:
        """A decorator registering a formula for every name of *families*: one row of a
        table per op family (an op already in another family is an error)."""
        def register(formula: F) -> F:
            who = f"{formula.__module__}.{formula.__qualname__}"
            for family in families:
                for name in family:
                    self.register(name, formula, by=who)  # type: ignore[arg-type]
            return formula
        return register

    def unregister(self, name: str) -> None:
        self.entries.pop(name, None)

    def get(self, name: str) -> V | None:
        held = self.entries.get(name)
        return None if held is None else held[0]

    def __contains__(self, name: object) -> bool:
        return name in self.entries

    def names(self) -> list[str]:
        return sorted(self.entries)


Formulas = Registry[Formula]

#: Formulas shipped with the tracer (``known_ops``), registered when a tracer loads them.
BUILTIN: Formulas = Registry("built-in op formulas", "give each op one formula")
#: ``register_op``'s formulas; they win over the built-in ones of the same name.
USER: Formulas = Registry("register_op", "unregister the first (unregister_op({name!r})), or "
                          "give the formula to one Tracer (Tracer(formulas={{{name!r}: ...}}))")
_FORMULAS = USER.entries


def _key(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise TraceError(f"register_op: name={name!r} must be an op's name, such as "
                         f"'mylib::fancy' (a torch.library op), a custom_call target or a "
                         f"pallas_call kernel's name")
    return name.strip()


def _formula(key: str, formula: object) -> Formula:
    if not callable(formula):
        raise TraceError(f"register_op({key!r}, formula): formula must be callable (it takes "
                         f"the op's arguments and returns a Kernel or Workload), got "
                         f"{type(formula).__name__}")
    return formula  # type: ignore[no-any-return]


@overload
def register_op(name: str) -> Callable[[F], F]: ...
@overload
def register_op(name: str, formula: F) -> F: ...


def register_op(name: str, formula: Any = None) -> Any:
    """Give the op *name* a formula (see the module docstring); returns the formula, so it
    works as a decorator too. A name already registered by another formula is an error
    (TraceError naming both)."""
    key = _key(name)
    if formula is None:
        def decorate(fn: F) -> F:
            register_op(key, fn)
            return fn
        return decorate
    USER.register(key, _formula(key, formula))
    return formula


def unregister_op(name: str) -> None:
    """Forget the formula of *name* (no error when it has none)."""
    USER.unregister(_key(name))


def checkpoint() -> dict[str, tuple[Formula, str]]:
    """``register_op``'s formulas now: what :func:`restore` goes back to (the pytest plugin
    takes one as a session starts, so that a session's formulas are its own)."""
    return dict(_FORMULAS)


def restore(saved: dict[str, tuple[Formula, str]]) -> None:
    """Forget the formulas registered since :func:`checkpoint` gave *saved*."""
    _FORMULAS.clear()
    _FORMULAS.update(saved)


def registered() -> list[str]:
    """The names that have a formula from ``register_op``, sorted."""
    return USER.names()


def scoped(formulas: object) -> Formulas | None:
    """The formulas ``Tracer(formulas={name: formula})`` gives one tracer (checked), or None."""
    if formulas is None:
        return None
    if not isinstance(formulas, Mapping):
        raise TraceError(f"Tracer: formulas={formulas!r:.80} must map op names to formulas, "
                         f"{{'mylib::fancy': formula}}")
    own: Formulas = Registry("Tracer(formulas=...)", "give each op one formula")
    for name, formula in formulas.items():
        key = _key(name)
        own.register(key, _formula(key, formula))
    return own


def lookup(name: str, own: Formulas | None = None) -> Formula | None:
    """The formula of *name*: a tracer's own, else ``register_op``'s, else the one shipped
    (:mod:`.known_ops`)."""
    if own is not None:
        formula = own.get(name)
        if formula is not None:
            return formula
    held = _FORMULAS.get(name)
    if held is not None:
        return held[0]
    return BUILTIN.get(name)


def apply(name: str, formula: Formula, where: str, args: Iterable[Any],
          kwargs: dict[str, Any], *, nbytes: Callable[[], float] | None = None,
          dtype: str | None = None) -> tuple[list[Kernel], dict[str, int]]:
    """The kernels *formula* gives for one call of *name*, named ``where.name[:kernel]``, and
    the unknown ops of a Workload it returns. With *nbytes* (the bytes the call moves, as the
    tracer knows them), the formula may return a number: its FLOPs alone, one kernel priced
    at the matrix peak (the faster roof: the time stays a lower bound)."""
    result = call(name, formula, args, kwargs, numbers=nbytes is not None)
    label = f"{where}.{name}" if where else name
    if isinstance(result, float):
        assert nbytes is not None
        return [Kernel(label, result, nbytes(), unit="matrix", dtype=dtype or "fp32")], {}
    if isinstance(result, Kernel):
        return [_named(result, label)], {}
    return [_named(k, label) for k in result.kernels], dict(result.unknown)


def _named(kernel: Kernel, label: str) -> Kernel:
    name = label if kernel.name in ("", label) else f"{label}:{kernel.name}"
    return kernel.evolve(name=name)
