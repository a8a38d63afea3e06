"""The summary's columns: one record per column (header, cell, alignment, how it gives way
on a narrow terminal), so that a column is added by one entry."""

from __future__ import annotations

import pytest

from pytest_roofline.report import markdown, table
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


def _markdown_table(records: list[dict[str, object]]) -> tuple[list[str], list[str]]:
    """The header cells and the first row's cells of the Markdown results table."""
    lines = markdown.render(records).splitlines()
    start = lines.index("### Results") + 2
    return ([c.strip() for c in lines[start].strip("|").split("|")],
            [c.strip() for c in lines[start + 2].strip("|").split("|")])


def test_a_column_added_to_the_one_list_shows_in_the_terminal_and_in_markdown(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One entry in COLUMNS is a column of both tables: its header and cell in the terminal
    summary, its Markdown header and Markdown cell (where given) in the Markdown table, in
    the same place (after the expectation, before the verdict or at the row's end)."""
    watts = Column("watts", lambda r: "700 W", align="r", markdown_header="power (W)",
                   markdown_cell=lambda r: "700")
    monkeypatch.setattr(table, "COLUMNS", (*COLUMNS, watts))
    lines = table.summary([RECORD])
    assert lines[0].split()[-3:] == ["expected", "watts", "verdict"]
    assert lines[1].split()[-4:] == ["compute", "700", "W", "ok"]
    headers, row = _markdown_table([RECORD])
    assert headers[-2:] == ["expected", "power (W)"]
    assert row[-2:] == ["compute", "700"]
    # without a Markdown header or cell of its own, the terminal's are shown
    monkeypatch.setattr(table, "COLUMNS", (*COLUMNS, Column("watts", lambda r: "700 W")))
    headers, row = _markdown_table([RECORD])
    assert (headers[-1], row[-1]) == ("watts", "700 W")
    # measured columns follow the built-in ones, with their Markdown headers
    headers, row = _markdown_table([{**RECORD, "measured_s": 2.8e-4, "efficiency": 0.5}])
    assert headers[-5:] == ["expected", "watts", "measured", "% of roof", "MFU"]
    assert row[-4:] == ["700 W", "280 us", "50%", "-"]


def test_the_markdown_table_reads_the_same_columns_as_the_terminal() -> None:
    """The Markdown header row is the status, the test, then each column's Markdown
    header; only the chip, the DRAM intensity and the % of roof read differently."""
    headers, row = _markdown_table([RECORD])
    assert headers == ["", "test", "chip", "dtype", "FLOPs", "bytes", "DRAM FLOP/B", "ridge",
                       "regime", "time", "expected"]
    assert row[2:] == [c.cell(RECORD) for c in COLUMNS]
    renamed = {c.header: c.markdown_header for c in (*COLUMNS, *table.MEASURED_COLUMNS)
               if c.markdown_header is not None}
    assert renamed == {"hw": "chip", "FLOP/B": "DRAM FLOP/B", "% roof": "% of roof"}


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"markdown_header": " "}, "column 'x': markdown_header ' ' is not None or a non-blank "
                               "header"),
    ({"align": "c"}, "column 'x': align 'c' is not 'l' or 'r'"),
    ({"drop": 0}, "column 'x': drop 0 is not None or an integer >= 1"),
    ({"drop": True}, "column 'x': drop True is not None or an integer >= 1"),
])
def test_a_bad_column_is_refused(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Column("x", str, **kwargs)  # type: ignore[arg-type]


def test_a_column_is_frozen() -> None:
    column = Column("x", str, align="r")
    with pytest.raises(AttributeError, match="a Column is frozen: cannot set 'align'"):
        column.align = "l"  # type: ignore[misc]
    assert column.align == "r" and not hasattr(column, "__dict__")
