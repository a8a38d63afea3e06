"""A profile as CSV: one line per row, every field of the row's JSON form, in stable columns.

The columns (:data:`COLUMNS`) never move and never drop: a new field is appended at the
end, so a spreadsheet or a pipeline that reads them by position keeps working. Lists
(``kernels``, ``assumed``) are joined with ``"; "``; a field a row does not have is empty.
Names come from someone else's trace: control characters in them (an escape sequence, a
NUL) are written escaped (``\\x1b``), never raw; the JSON keeps them as they are.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from typing import Any

from ..text_table import escaped

__all__ = ["COLUMNS", "to_csv"]

#: The columns, in their order: what a row is, what it measured, what it was set against.
COLUMNS = ("op", "shapes", "layout", "category", "kernels", "count", "measured_s",
           "bound_s", "limit_s", "ratio", "efficiency", "cell", "note", "regime",
           "precision", "flops", "bytes", "spread", "faster_calls", "above_calls",
           "finding", "likely", "assumed", "formula")

def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return "; ".join(escaped(str(v)) for v in value)
    if isinstance(value, float):
        return repr(value)
    return escaped(str(value))


def to_csv(profile: Mapping[str, Any]) -> str:
    """The CSV text of a profile's JSON form (:meth:`.model.Profile.to_dict`): a header,
    then one line per row in the profile's order."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(COLUMNS)
    for row in profile.get("rows") or ():
        if isinstance(row, Mapping):
            writer.writerow([_cell(row.get(column)) for column in COLUMNS])
    return out.getvalue()
