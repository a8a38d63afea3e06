"""Formulas for traced ops from ``pytest_roofline_register_ops`` hooks (see hookspecs)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

_DONE = pytest.StashKey[set[object]]()


def prepare_ops(config: pytest.Config) -> None:
    """Register the formulas of every ``pytest_roofline_register_ops`` implementation not
    asked yet (a conftest found later during collection is asked before its first test)."""
    impls = config.hook.pytest_roofline_register_ops.get_hookimpls()
    if not impls:
        return
    done = config.stash.setdefault(_DONE, set())
    new = [i.plugin for i in impls if i.plugin not in done]
    if not new:
        return
    caller = config.pluginmanager.subset_hook_caller("pytest_roofline_register_ops",
                                                     remove_plugins=set(done))
    done.update(new)
    from ..errors import RooflineError
    from ..tracing import register_op

    for formulas in caller(config=config):
        if formulas is None:
            continue
        if not isinstance(formulas, Mapping):
            raise RooflineError(f"pytest_roofline_register_ops returned {formulas!r}; expected "
                                f"a mapping of op names to formulas")
        for name, formula in formulas.items():
            register_op(name, formula)
