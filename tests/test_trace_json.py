"""The JSON parser of traces: orjson where installed (not a dependency), else the stdlib,
with one answer either way: what orjson refuses the stdlib reads, and every error message is
the stdlib's."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_roofline.profiling.torch import trace_json

TRACES = Path(__file__).parent / "data" / "traces"


class _Refusing:
    """An orjson that refuses everything, as orjson refuses ``NaN`` or a 65-bit integer."""

    class JSONDecodeError(ValueError):
        pass

    def __init__(self) -> None:
        self.calls = 0

    def loads(self, raw: bytes) -> Any:
        self.calls += 1
        raise self.JSONDecodeError("refused")


def test_what_the_fast_parser_refuses_the_stdlib_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    stub = _Refusing()
    monkeypatch.setattr(trace_json, "_PARSER", [stub])
    raw = b'{"traceEvents": [], "x": NaN, "big": 123456789012345678901234567890}'
    data = trace_json.decode(raw)
    assert stub.calls == 1
    assert data["big"] == 123456789012345678901234567890 and data["x"] != data["x"]
    assert trace_json.parser_name() == "orjson"
    with pytest.raises(json.JSONDecodeError):
        trace_json.decode(b"{not json")


def test_without_orjson_the_stdlib_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(trace_json, "_PARSER", [None])
    assert trace_json.parser_name() == "json"
    assert trace_json.decode(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}


def test_orjson_and_the_stdlib_read_a_trace_alike() -> None:
    orjson = pytest.importorskip("orjson")
    raw = gzip.decompress((TRACES / "tracelens_mi300x_sglang_decode.json.gz").read_bytes())
    assert orjson.loads(raw) == json.loads(raw)
