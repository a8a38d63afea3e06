"""Every aten op the torch tracer knows is in exactly one class: the named sets of
``tracing/_aten.py`` and the rows of its formula families are disjoint, checked at import, so
which class an op gets never depends on the order the tables are read in.

FLOP and byte figures are derived by hand in each test (fp32: 4 bytes, int64 indices: 8);
exact."""

from __future__ import annotations

import itertools

import pytest

import pytest_roofline as rl
from pytest_roofline.tracing import TraceError

torch = pytest.importorskip("torch")
from pytest_roofline.tracing import _aten  # noqa: E402  (imports torch)


def _tables() -> dict[str, frozenset[str]]:
    return {"GATHER": _aten.GATHER, "SCATTER": _aten.SCATTER, "COPY": _aten.COPY,
            "VIEW": _aten.VIEW, "VECTOR": _aten.VECTOR,
            "COLLECTIVE": frozenset(_aten.COLLECTIVE),
            "VECTOR_FLOPS": frozenset(_aten.VECTOR_FLOPS.names()),
            "MATRIX_KERNELS": frozenset(_aten.MATRIX_KERNELS.names())}


def test_the_aten_tables_are_disjoint() -> None:
    # counted here pair by pair, apart from the module's own check
    shared = {(a, b): sorted(sa & sb)
              for (a, sa), (b, sb) in itertools.combinations(_tables().items(), 2) if sa & sb}
    assert shared == {}
    assert _aten.check_tables() == _aten._NAMED
    assert set(_aten._NAMED.values()) <= set(_aten.CLASSES)


def test_an_op_in_two_classes_is_an_error_naming_it_and_both() -> None:
    assert _aten.disjoint([("GATHER", "gather", {"a"}), ("COPY", "copy", {"b"})]) == {
        "a": "gather", "b": "copy"}
    with pytest.raises(TraceError, match=r"^aten::b is in two classes of the aten table: "
                                         r"GATHER \(gather\) and COPY \(copy\); put it in "
                                         r"the one that prices it"):
        _aten.disjoint([("GATHER", "gather", {"a", "b"}), ("COPY", "copy", {"b"})])
    # one class priced two ways: 1 FLOP an element (VECTOR) and a family's formula
    with pytest.raises(TraceError, match=r"aten::silu is in two classes.*VECTOR \(vector\) "
                                         r"and the _elementwise family \(vector\)"):
        _aten.disjoint([("VECTOR", "vector", {"silu"}),
                        *_aten._families("vector", _aten.VECTOR_FLOPS)])


def test_a_family_row_for_an_op_of_a_named_set_fails_the_check() -> None:
    def _copy_flops(call: object) -> float:
        return 0.0

    _aten.VECTOR_FLOPS.register("clone", _copy_flops, by="this test")
    try:
        with pytest.raises(TraceError, match=r"aten::clone is in two classes of the aten "
                                             r"table: COPY \(copy\) and the _copy_flops "
                                             r"family \(vector\)"):
            _aten.check_tables()
    finally:
        _aten.VECTOR_FLOPS.unregister("clone")
    _aten.check_tables()


def test_the_adding_scatters_are_vector_ops_with_a_scatters_bytes() -> None:
    # index_add, scatter_add, scatter_reduce, index_reduce, index_put add their values: their
    # family's formula (one FLOP a value) prices them, so their class is vector; in place
    # they still write only where the values go
    for op in _aten.SCATTER_ADD:
        assert _aten.classify(op, pointwise=False, is_view=False) == "vector", op
        assert op in _aten.VECTOR_FLOPS and op in _aten.WRITES_VALUES, op
    assert _aten.classify("index_copy", pointwise=False, is_view=False) == "scatter"
    dest, src = torch.empty(100, 64, device="meta"), torch.empty(30, 64, device="meta")
    index = torch.empty(30, 64, dtype=torch.long, device="meta")
    w = rl.trace(lambda: dest.scatter_add_(0, index, src))
    assert w.flops == 30 * 64  # one add per value
    # indices (30·64 int64) and values (30·64 fp32) read, the values' places written
    assert w.bytes == 30 * 64 * 8 + 30 * 64 * 4 + 30 * 64 * 4
    plain = rl.trace(lambda: dest.index_put_((index[:, 0],), src))  # accumulate=False
    assert plain.flops == 0 and not plain.unknown  # a plain write: no add


def test_the_activations_with_a_formula_are_priced_by_it() -> None:
    # no longer listed in VECTOR (1 FLOP an element): their family's figures, those of
    # docs/trace.md's table: sigmoid 4 (negate, exp, add, divide), silu 4 (x·sigmoid(x) as
    # one fused op), gelu 8 (the tanh form's multiplies and adds) per element
    x = torch.empty(1024, device="meta")
    for op, fn, per_element in (("silu", torch.nn.functional.silu, 4),
                                ("gelu", torch.nn.functional.gelu, 8),
                                ("sigmoid", torch.sigmoid, 4)):
        assert op not in _aten.VECTOR
        assert _aten.classify(op, pointwise=True, is_view=False) == "vector"
        assert rl.trace(fn, x).flops == per_element * 1024, op
