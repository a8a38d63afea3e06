"""Units are parsed once at the boundary; decimal and binary prefixes never mix."""

from __future__ import annotations

import pytest

from pytest_roofline import UnitError, units


@pytest.mark.parametrize(
    ("text", "dimension", "expected"),
    [
        ("3.35 TB/s", "bandwidth", 3.35e12),          # decimal tera = 1e12
        ("900 GB/s", "bandwidth", 9.0e11),
        ("100 Gbit/s", "bandwidth", 1.25e10),         # 8 bits a byte
        ("1 GiB/s", "bandwidth", 2.0**30),
        ("80 GB", "byte", 8.0e10),
        ("80 GiB", "byte", 80 * 2.0**30),             # binary gibi = 2**30
        ("50 MB", "byte", 5.0e7),
        ("32 MiB", "byte", 32 * 2.0**20),
        ("989.4 TFLOP/s", "flop_rate", 9.894e14),
        ("1979 TOPS", "flop_rate", 1.979e15),          # integer ops count like FLOPs
        ("3.94e14 OP/s", "flop_rate", 3.94e14),
        ("5 TFLOPS", "flop_rate", 5.0e12),
        ("4.3 GFLOP", "flop", 4.3e9),
        ("2 ms", "time", 2e-3),
        ("139 us", "time", 1.39e-4),
        ("1.98 GHz", "frequency", 1.98e9),
        ("3e9", "flop", 3e9),                          # a bare number is in SI units
    ],
)
def test_parse_to_si_floats(text: str, dimension: str, expected: float) -> None:
    assert units.parse(text, dimension) == pytest.approx(expected, rel=1e-12)


def test_numbers_are_taken_in_si_units() -> None:
    assert units.parse(2e9, "flop") == 2e9
    assert units.parse(4, "byte") == 4.0


@pytest.mark.parametrize(
    ("value", "dimension", "fragment"),
    [
        ("3 TFLOP/s", "bandwidth", "not a bandwidth"),
        ("2 GB", "time", "not a time"),
        ("-3 GB", "byte", "greater than zero"),
        (-1, "flop", "greater than zero"),
        ("nan GB", "byte", "not a finite number"),
        (float("inf"), "flop", "not a finite number"),
        ("three GB", "byte", "cannot parse"),
        (True, "byte", "expected a data size"),
        (None, "flop", "expected a FLOP count"),
        ([1, 2], "flop", "expected a number or a string"),
    ],
)
def test_bad_quantities_name_value_and_expectation(value: object, dimension: str,
                                                   fragment: str) -> None:
    with pytest.raises(UnitError, match="memory.bandwidth") as info:
        units.parse(value, dimension, what="memory.bandwidth")
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_zero_only_where_allowed() -> None:
    assert units.parse("0 GB", "byte", allow_zero=True) == 0.0
    with pytest.raises(UnitError):
        units.parse("0 GB", "byte")


def test_si_formatting() -> None:
    assert units.si(1.37e11, "FLOP") == "137 GFLOP"
    assert units.si(295.34) == "295"
    assert units.format_time(1.389e-4) == "139 us"
    assert units.format_time(2.5e-9) == "2.5 ns"


def test_one_flop_per_byte_format() -> None:
    """Every message, table, chart and report shows FLOP/B this way: one decimal from 10 up
    to a million, three significant digits otherwise."""
    from pytest_roofline.units import flop_per_byte

    assert [flop_per_byte(x) for x in (31.84, 295.343, 0.07955, 7.111, 1.0, 0, 2.5e6)] == [
        "31.8", "295.3", "0.0795", "7.11", "1", "0", "2.5e+06"]
    assert flop_per_byte(float("inf")) == "inf" and flop_per_byte(float("nan")) == "nan"


def test_one_fraction_reading() -> None:
    import math

    from pytest_roofline.units import fraction

    assert fraction("70%") == pytest.approx(0.7) and fraction(" 0.25 ") == 0.25
    assert fraction(1) == 1.0
    for bad in ("x", True, None, [0.5], "%"):
        assert math.isnan(fraction(bad))
