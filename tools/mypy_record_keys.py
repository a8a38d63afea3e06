"""A mypy plugin: a key that a record does not name is an error in ``record.get(...)`` too.

mypy checks ``record["time_s"]`` against the TypedDict's keys, but takes any key in
``record.get("time_ss")`` (the typing spec allows it: a TypedDict may hold keys it does not
name) and types the value ``object``: a misspelled key then reads as absent, silently. The
records of pytest-roofline (``pytest_roofline.fields.Record``, ``SweepRecord``,
``pytest_roofline.report.records.Report``) are read mostly with ``.get``; with this plugin
(``[tool.mypy] plugins`` in ``pyproject.toml``) a literal key one of the package's
TypedDicts does not name is an error there as well (``[typeddict-unknown-key]``). The call is
then typed by mypy's own rules.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.errorcodes import TYPEDDICT_UNKNOWN_KEY
from mypy.plugin import MethodContext, Plugin
from mypy.plugins.default import DefaultPlugin
from mypy.typeops import try_getting_str_literals
from mypy.types import Type, TypedDictType, get_proper_type

#: The TypedDicts checked: those the package defines.
PACKAGE = "pytest_roofline."
GET = "typing.Mapping.get"


class RecordKeys(Plugin):
    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        if fullname != GET:
            return None
        typed_by_mypy = DefaultPlugin(self.options).get_method_hook(fullname)

        def check(ctx: MethodContext) -> Type:
            record = get_proper_type(ctx.type)
            name = record.fallback.type.fullname if isinstance(record, TypedDictType) else ""
            if (isinstance(record, TypedDictType) and name.startswith(PACKAGE)
                    and ctx.args and len(ctx.args[0]) == 1):
                keys = try_getting_str_literals(ctx.args[0][0], ctx.arg_types[0][0]) or []
                for key in keys:
                    if key not in record.items:
                        ctx.api.fail(f'TypedDict "{name.rsplit(".", 1)[-1]}" has no key '
                                     f'"{key}"', ctx.context, code=TYPEDDICT_UNKNOWN_KEY)
            return typed_by_mypy(ctx) if typed_by_mypy else ctx.default_return_type

        return check


def plugin(version: str) -> type[Plugin]:
    return RecordKeys
