"""The JSON parser of traces is the stdlib's: an integer past 64 bits stays whole (orjson reads
it as a float, and the reader's answer would depend on which parser is installed: see
profiling/torch/trace_json.py)."""

from __future__ import annotations

from pytest_roofline.profiling.torch import trace_json


def test_integers_past_64_bits_stay_whole_and_nan_is_read() -> None:
    data = trace_json.decode(b'{"big": 123456789012345678901234567890, "x": NaN}')
    assert data["big"] == 123456789012345678901234567890 and type(data["big"]) is int
    assert data["x"] != data["x"]  # NaN, refused later by the field that holds it
