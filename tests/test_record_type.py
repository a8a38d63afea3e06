"""The record's type (``fields.Record``) agrees with the names the reader checks, and a
misspelled key is a type error."""

from __future__ import annotations

import importlib.util
import types
import typing
from pathlib import Path

import pytest

from pytest_roofline import fields
from pytest_roofline.fields import Record, SweepRecord

HINTS = typing.get_type_hints(Record)
SWEEP_HINTS = typing.get_type_hints(SweepRecord)


def _members(hint: object) -> set[object]:
    """The types a hint allows: the members of a union, or the hint itself."""
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return set(typing.get_args(hint))
    return {hint}


def test_every_named_key_is_a_key_of_the_record() -> None:
    named = {key for _, key in fields.RESULT} | {key for _, key in fields.MEASURED} | {
        fields.ROOF_THREADS, fields.NOTES, fields.EXPECTED, fields.OUTCOME, fields.MESSAGE,
        fields.EXPECTATION, fields.MEASURED_SPREAD, fields.MEASURED_OTHER_CORES,
        fields.MEASURED_NOTE, fields.MEASURED_BY, fields.MEASURED_METHOD,
        fields.MEASURED_NOTES, fields.MFU, fields.PROFILE, fields.UNKNOWN, fields.NODEID,
        *fields.REQUIRED, *fields.UNPRICED_REQUIRED, *fields.NUMBERS, *fields.OPTIONAL_NUMBERS,
        *fields.TEXTS, *fields.STRINGS}
    # and the record carries no key that no writer names
    assert named == set(HINTS)
    # every key is optional to the type: which ones a record needs depends on its outcome
    assert Record.__optional_keys__ == set(HINTS) and not Record.__required_keys__


def test_the_reader_checks_agree_with_the_value_types() -> None:
    """What ``report.records.record_problem`` accepts of a field is what its type says."""
    for key in fields.NUMBERS:
        assert _members(HINTS[key]) == {float}, key
    for key in fields.OPTIONAL_NUMBERS:
        assert _members(HINTS[key]) == {float, type(None)}, key
    for key in fields.TEXTS:
        assert HINTS[key] is str, key
    for key in fields.STRINGS:
        assert _members(HINTS[key]) == {str, type(None)}, key
    assert _members(HINTS["fits"]) == {bool, type(None)}
    assert _members(HINTS[fields.EXPECTED]) == {list[str], type(None)}


def test_a_sweep_writes_the_result_keys_it_can_work_out() -> None:
    """A sweep has no per-kernel figures (tensor_bytes, workload_intensity) and no verdict."""
    result_keys = {key for _, key in fields.RESULT}
    assert set(SWEEP_HINTS) == result_keys - {"tensor_bytes", "workload_intensity"} | {
        fields.NOTES}
    # a figure may be an array (a list) where a record holds one number
    assert list[typing.Any] in _members(SWEEP_HINTS["time_s"])


def test_a_result_writes_each_attribute_under_its_key() -> None:
    """``Result.to_dict`` spells its keys out (so mypy checks each); ``fields.RESULT`` and
    ``fields.MEASURED`` say which attribute each key holds, in record order."""
    from pytest_roofline import analyze, ops

    work = ops.matmul(64, 64, 64, dtype="bf16")
    timed = analyze(work, "h100", measured=1e-3)
    record = timed.to_dict()
    pairs = [*fields.RESULT, *fields.MEASURED]
    assert list(record) == [key for _, key in pairs]
    for name, key in pairs:
        assert record[key] == getattr(timed, name), key
    assert "measured_s" not in analyze(work, "h100").to_dict()


def test_a_sweep_writes_each_array_as_a_list_in_record_order() -> None:
    import json

    import numpy as np

    from pytest_roofline import ops
    from pytest_roofline.engine.sweeps import sweep

    swept = sweep(ops.matmul(np.array([1, 64, 4096]), 4096, 4096, dtype="bf16"), "h100")
    record = swept.to_dict()
    pairs = [(name, key) for name, key in fields.RESULT
             if name not in ("tensor_bytes", "workload_intensity")]
    assert list(record) == [key for _, key in pairs]
    for name, key in pairs:
        value = getattr(swept, name)
        expected = value.tolist() if isinstance(value, np.ndarray) else value
        assert record[key] == expected, key
    assert json.loads(json.dumps(record)) == record  # plain JSON types only


SNIPPET = """\
from pytest_roofline.fields import Record

record: Record = {"nodeid": "t", "time_s": 1.0}
seconds: float = record["{key}"]
maybe: float | None = record.get("{key}")  # typed as mypy types it
"""
PLUGIN = Path(__file__).parents[1] / "tools" / "mypy_record_keys.py"


def _mypy(tmp_path: Path, key: str, *, plugin: bool) -> tuple[int, str]:
    """mypy --strict on SNIPPET reading *key*, with the project's plugin or without."""
    from mypy import api

    source = tmp_path / "snippet.py"
    source.write_text(SNIPPET.replace("{key}", key))
    config = tmp_path / "mypy.ini"  # this test's settings only, not the project's
    config.write_text("[mypy]\n" + (f"plugins = {PLUGIN}\n" if plugin else ""))
    stdout, stderr, status = api.run([
        str(source), "--strict", "--follow-imports=silent", "--no-error-summary",
        "--cache-dir", str(tmp_path / "cache"), "--config-file", str(config)])
    return status, stdout + stderr


needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None,
                                reason="mypy not installed")


@needs_mypy
def test_a_misspelled_key_is_a_type_error(tmp_path: Path) -> None:
    """mypy, on a snippet that reads a record's key by ``[]`` and by ``.get``: the right key
    passes; a misspelled one is reported by name on both lines with the project's plugin
    (the snippet imports only ``pytest_roofline.fields``)."""
    status, out = _mypy(tmp_path, "time_s", plugin=True)
    assert status == 0, out
    status, out = _mypy(tmp_path, "time_ss", plugin=True)
    assert status == 1, out
    error = 'error: TypedDict "Record" has no key "time_ss"'
    assert f"snippet.py:4: {error}" in out and f"snippet.py:5: {error}" in out, out


@needs_mypy
def test_without_the_plugin_mypy_takes_any_key_in_get(tmp_path: Path) -> None:
    """Why the plugin: by the typing spec, ``.get`` takes a key a TypedDict does not name
    (the subscript is still an error). Should mypy start to refuse it, the plugin may go."""
    status, out = _mypy(tmp_path, "time_ss", plugin=False)
    assert status == 1, out
    # line 5 fails only where its value is used as a float: str(record.get("time_ss")) passes
    assert 'snippet.py:4: error: TypedDict' in out, out
    assert 'snippet.py:5: error: TypedDict' not in out, out


def test_record_key_names_every_key_of_the_record_in_order() -> None:
    assert typing.get_args(fields.RecordKey) == tuple(HINTS)


def test_the_record_types_are_built_from_types_not_strings() -> None:
    """fields.py evaluates its annotations as types (no postponed annotations): as strings,
    each key would be compiled into a ForwardRef at import, a cost every marked run pays."""
    from pytest_roofline import fields

    assert fields.Record.__annotations__["time_s"] is float
    assert not [key for key, kind in fields.SweepRecord.__annotations__.items()
                if isinstance(kind, str)]
