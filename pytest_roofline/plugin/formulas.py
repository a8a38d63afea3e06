"""Formulas for traced ops from ``pytest_roofline_register_ops`` hooks (see hookspecs).

A hook that raises, or returns what is not a mapping of names to formulas, is one line
naming the hook's plugin (its conftest) and what went wrong; the error is kept, and every
later test that needs the formulas fails with it too: none runs without them as if the hook
had given none.
"""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from ..errors import RooflineError, brief

_DONE = pytest.StashKey[set[object]]()
_BROKEN = pytest.StashKey[str]()


def _where(config: pytest.Config, plugin: object) -> str:
    name = config.pluginmanager.get_name(plugin) if plugin is not None else None
    file = getattr(plugin, "__file__", None)
    return str(file or name or "a plugin")


def prepare_ops(config: pytest.Config) -> None:
    """Register the formulas of every ``pytest_roofline_register_ops`` implementation not
    asked yet (a conftest found later during collection is asked before its first test);
    a RooflineError, now and for every later call, when one of them failed."""
    broken = config.stash.get(_BROKEN, None)
    if broken is not None:
        raise RooflineError(broken)
    impls = config.hook.pytest_roofline_register_ops.get_hookimpls()
    if not impls:
        return
    done = config.stash.setdefault(_DONE, set())
    new = [i for i in impls if i.plugin not in done]
    if not new:
        return
    done.update(i.plugin for i in new)
    from ..tracing import register_op  # loaded on use: most suites register no formula

    for impl in reversed(new):  # pluggy's order: the last registered first
        where = _where(config, impl.plugin)
        try:
            formulas = impl.function(**{arg: config for arg in impl.argnames})
            if formulas is None:
                continue
            if not isinstance(formulas, Mapping):
                raise RooflineError(f"it returned {brief(formulas)}; expected a mapping of op "
                                    f"names to formulas")
            for name, formula in formulas.items():
                register_op(name, formula)
        except Exception as exc:  # the user's hook: name it, keep its message, once
            text = " ".join(str(exc).split())
            detail = text if isinstance(exc, RooflineError) else (
                f"{type(exc).__name__}: {text}")
            message = f"pytest_roofline_register_ops in {where} failed: {detail}"
            config.stash[_BROKEN] = message
            raise RooflineError(message) from None
