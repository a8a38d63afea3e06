"""The summary's columns: one record per column (header, cell, alignment, how it gives way
on a narrow terminal), so that a column is added by one entry."""

from __future__ import annotations

import pytest

from pytest_roofline.report import table
from pytest_roofline.report.table import COLUMNS, Column

RECORD = {"nodeid": "tests/test_gemm.py::test_gemm[4096]", "hw": "h100", "dtype": "bf16",
          "flops": 1.37e11, "bytes": 1.0e8, "intensity": 1370.0, "ridge": 295.0,
          "regime": "compute", "time_s": 1.4e-4, "expected": ["compute"], "outcome": "passed"}


def _headers(width: int | None, extra: tuple[Column, ...] = ()) -> list[str]:
    return table.summary([RECORD], width=width, extra_columns=extra)[0].split()


def test_the_columns_are_one_record_each() -> None:
    assert [c.header for c in COLUMNS] == ["hw", "dtype", "FLOPs", "bytes", "FLOP/B", "ridge",
                                           "regime", "time", "expected"]
    assert table.FORMATS["ridge"](RECORD) == table.FORMATS["FLOP/B"]({"intensity": 295.0})


def _dropped(extra: tuple[Column, ...] = ()) -> list[list[str]]:
    """The headers missing from the summary of RECORD at each width from its full one down,
    while each row still takes one line (below that, ids take a line of their own and the
    columns left out come back as far as they fit)."""
    headers = ["test", *(c.header for c in (*COLUMNS, *extra)), "verdict"]
    full = len(table.summary([RECORD], extra_columns=extra)[0])
    steps = []
    for width in range(full, 20, -1):
        lines = table.summary([RECORD], width=width, extra_columns=extra)
        if len(lines) != 2:
            break
        shown = lines[0].split()
        steps.append([h for h in headers if h not in shown])
    return steps


def test_a_narrow_terminal_leaves_columns_out_in_their_drop_order() -> None:
    """Narrowing one column at a time from the full width: the headers missing at each
    width are the first of ridge, FLOPs, bytes, dtype, FLOP/B (the columns' ``drop``
    order)."""
    order = [c.header for c in sorted((c for c in COLUMNS if c.drop), key=lambda c: c.drop
                                      or 0)]
    assert order == ["ridge", "FLOPs", "bytes", "dtype", "FLOP/B"]
    steps = _dropped()
    for missing in steps:
        assert set(missing) == set(order[:len(missing)]), missing
    assert {len(m) for m in steps} == {0, 1, 2, 3, 4, 5}  # every step was reached


def test_an_added_column_is_one_entry() -> None:
    """A right-aligned column given to the summary is shown before the verdict, aligned,
    and, given the next drop rank, left out after the built-in ones."""
    watts = Column("watts", lambda r: "700 W", align="r", drop=6)
    lines = table.summary([RECORD], extra_columns=(watts,))
    assert lines[0].split()[-2:] == ["watts", "verdict"]
    assert lines[1].split()[-3:] == ["700", "W", "ok"]
    assert lines[1].index("700 W") + len("700 W") == lines[0].index("watts") + len("watts")
    order = ["ridge", "FLOPs", "bytes", "dtype", "FLOP/B", "watts"]
    steps = _dropped((watts,))
    for missing in steps:
        assert set(missing) == set(order[:len(missing)]), missing
    assert {len(m) for m in steps} == {0, 1, 2, 3, 4, 5, 6}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"align": "c"}, "column 'x': align 'c' is not 'l' or 'r'"),
    ({"drop": 0}, "column 'x': drop 0 is not None or an integer >= 1"),
    ({"drop": True}, "column 'x': drop True is not None or an integer >= 1"),
])
def test_a_bad_column_is_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Column("x", str, **kwargs)  # type: ignore[arg-type]
