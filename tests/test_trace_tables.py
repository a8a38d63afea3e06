"""The tracers as recorders plus tables: the aten and JAX tables, the registry every table of
formulas is made of (a name registered twice is an error naming both), formulas scoped to one
``Tracer``, and ``trace=`` in the plugin going through ``Tracer``. FLOP figures are derived by
hand (2 FLOPs per multiply-accumulate); exact."""

from __future__ import annotations

import pytest

import pytest_roofline as rl
from pytest_roofline.tracing import TraceError, Tracer, registry

torch = pytest.importorskip("torch")


def _first(*args: object) -> rl.Kernel:
    return rl.Kernel("first", 1.0, 2.0)


def _second(*args: object) -> rl.Kernel:
    return rl.Kernel("second", 3.0, 4.0)


def test_a_name_registered_by_two_formulas_is_an_error_naming_both() -> None:
    rl.register_op("tablelib::dup", _first)
    try:
        rl.register_op("tablelib::dup", _first)  # the same formula again: no error
        with pytest.raises(TraceError, match=r"'tablelib::dup' is registered twice, by "
                                             r".*_first.* and by .*_second"):
            rl.register_op("tablelib::dup", _second)
        assert registry.lookup("tablelib::dup") is _first  # the first one stays
    finally:
        rl.unregister_op("tablelib::dup")
    rl.register_op("tablelib::dup", _second)  # once unregistered, another may take it
    rl.unregister_op("tablelib::dup")


def test_the_built_in_tables_refuse_an_op_in_two_families() -> None:
    from pytest_roofline.tracing import _aten, _jax_ops

    with pytest.raises(TraceError, match=r"'sum' is registered twice, by .*_reduce"):
        _aten.VECTOR_FLOPS.register("sum", lambda call: 0.0, by="another family")
    with pytest.raises(TraceError, match=r"'reduce_sum' is registered twice"):
        _jax_ops.VECTOR_FLOPS.register("reduce_sum", lambda prim: 0.0, by="another family")


def test_formulas_scoped_to_one_tracer_win_there_only() -> None:
    a = torch.empty(64, 32, device="meta")
    b = torch.empty(32, 16, device="meta")
    own = Tracer(formulas={"aten::mm": _first})
    assert own(torch.mm, a, b).flops == 1.0  # the tracer's own formula
    assert rl.trace(torch.mm, a, b).flops == 2 * 64 * 32 * 16  # the built-in one elsewhere
    with pytest.raises(TraceError, match="formulas=.* must map op names to formulas"):
        Tracer(formulas=[_first])
    with pytest.raises(TraceError, match="formula must be callable"):
        Tracer(formulas={"aten::mm": 3})


def test_an_aten_op_formula_is_one_row() -> None:
    # aten::_linalg_det has no formula: unknown. One row in the aten table (a formula
    # registered for its name) gives it FLOPs and a class; removing the row takes both away.
    from pytest_roofline.tracing import _aten

    a = torch.empty(8, 8, device="meta")
    assert rl.trace(torch.linalg.det, a).unknown == {"aten::_linalg_det": 1}
    # LU factorisation: 2/3·n³ FLOPs (Golub & Van Loan, "Matrix Computations", §3.2)
    _aten.VECTOR_FLOPS.register("_linalg_det", lambda c: 2.0 / 3.0 * c.inputs[0].shape[-1] ** 3,
                                by="this test")
    try:
        traced = rl.trace(torch.linalg.det, a)
        assert not traced.unknown and traced.flops == pytest.approx(2 / 3 * 8 ** 3)
    finally:
        _aten.VECTOR_FLOPS.unregister("_linalg_det")
    assert rl.trace(torch.linalg.det, a).unknown == {"aten::_linalg_det": 1}


def test_the_recorders_hold_no_formula_table_of_their_own() -> None:
    # the recorders read the tables: no op name of a table, no FLOP rule, stays in them
    import inspect

    from pytest_roofline.tracing import _aten, _jax, _jax_ops, _torch

    for module, tables in ((_torch, (_aten.VECTOR_FLOPS, _aten.MATRIX_KERNELS)),
                           (_jax, (_jax_ops.VECTOR_FLOPS, _jax_ops.MATRIX_KERNELS))):
        source = inspect.getsource(module)
        named = [n for table in tables for n in table.names() if f'"{n}"' in source]
        assert not named, (module.__name__, named)
        assert "_FLOPS" not in source and "math.log2" not in source, module.__name__


def test_a_recorded_body_keeps_the_tracers_options() -> None:
    # Tracer.body() is what trace=True records a test body with: the tracer's dtype prices
    # the product (tf32), and finish() is the one tail of every trace (strict included)
    a = torch.empty(64, 32, device="meta")
    b = torch.empty(32, 16, device="meta")
    tracer = Tracer(dtype="tf32", strict=True)
    with tracer.body() as recording:
        torch.mm(a, b)
        torch.linalg.det(torch.empty(4, 4, device="meta"))
    (mm,) = [k for k in recording.kernels if k.name == "mm"]
    assert mm.dtype == "tf32" and mm.flops == 2 * 64 * 32 * 16
    with pytest.raises(TraceError, match="body: 1 op without a formula: aten::_linalg_det"):
        tracer.finish(recording.result(footprint=0.0), name="body")
    lenient = Tracer(dtype="tf32")
    assert lenient.finish(recording.result(footprint=0.0),
                          name="body").unknown == {"aten::_linalg_det": 1}
