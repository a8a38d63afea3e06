"""The framework-free parts of tracing: detection, options, errors, and the cross-check's
arithmetic (expected figures computed by hand from the kernels given)."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pytest_roofline as rl
from pytest_roofline import Kernel, Workload, ops
from pytest_roofline.errors import RooflineError
from pytest_roofline.judging.crosscheck import compare, disagreement, families
from pytest_roofline.tracing import TraceError, Tracer, detect, require


def test_a_missing_framework_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails
    with pytest.raises(TraceError, match=r"pip install 'pytest-roofline\[torch\]'") as info:
        require("torch")
    assert isinstance(info.value, RooflineError) and isinstance(info.value, ValueError)


def test_the_framework_is_read_from_the_arguments_without_importing_it() -> None:
    torch_like = type("Tensor", (), {"__module__": "torch"})()
    jax_like = type("ArrayImpl", (), {"__module__": "jaxlib.xla_extension"})()
    assert detect(len, (torch_like,), {}) == "torch"
    assert detect(len, ([1, {"x": jax_like}],), {}) == "jax"
    module = type("Module", (), {"__module__": "torch.nn.modules.module"})
    model = type("MyModel", (module,), {"__module__": "my_project"})()
    assert detect(model, (3,), {}) == "torch"  # a subclass of nn.Module, taking no tensor
    with pytest.raises(TraceError, match="both torch tensors and jax arrays"):
        detect(len, (torch_like, jax_like), {})
    with pytest.raises(TraceError, match=r"no torch tensor or jax array .*int, str"):
        detect(len, (3, "x"), {})


def test_options_are_checked() -> None:
    assert Tracer(dtype="torch.bfloat16").dtype == "bf16"
    for kwargs, message in (({"dtype": "fp7"}, "unknown precision 'fp7'"),
                            ({"fusion": "all"}, "fusion='all' is not a policy"),
                            ({"framework": "tf"}, "framework='tf' is not allowed"),
                            ({"name": 3}, "name=3 must be a string")):
        with pytest.raises(TraceError, match=message):
            Tracer(**kwargs)


def test_public_names() -> None:
    assert rl.Tracer is Tracer and rl.TraceError is TraceError
    assert callable(rl.trace)
    assert {"trace", "Tracer", "TraceError"} <= set(rl.__all__)


def test_families_split_matrix_vector_and_memory_work() -> None:
    w = Workload([Kernel("mm", 100.0, 10.0), Kernel("act", 5.0, 4.0, unit="vector"),
                  Kernel("copy", 0.0, 8.0, unit="vector", count=2.0)])
    assert families(w) == {"matrix": (100.0, 10.0), "vector": (5.0, 4.0),
                           "memory": (0.0, 16.0)}


def test_compare_agrees_within_the_tolerance_and_lists_every_family_when_not() -> None:
    declared = ops.matmul(64, 4096, 4096)
    close = Workload(flops=declared.flops * 1.019, bytes=1.0, name="traced")
    assert compare(declared, close, 0.02) == []
    lines = compare(declared, Workload(flops=declared.flops * 1.03, bytes=1.0, name="t"), 0.02)
    assert lines[0].startswith("cross-check: the declared and traced workloads disagree by "
                               "more than 0.02 on matrix FLOPs")
    assert [line.split()[0] for line in lines[1:4]] == ["matrix", "vector", "memory"]
    assert "(traced +2.9%)" in lines[1]
    # and the kernels that differ most: the one declared matmul against the traced workload
    assert lines[4] == ("  matrix kernels that differ most: declared only: "
                        "matmul(64x4096x4096, bf16) 2.15 GFLOP; traced only: t 2.21 GFLOP")


@given(a=st.floats(0, 1e18), b=st.floats(0, 1e18))
def test_disagreement_is_symmetric_and_bounded(a: float, b: float) -> None:
    d = disagreement(a, b)
    assert d == disagreement(b, a) and 0.0 <= d <= 1.0
    assert (d == 0.0) == (a == b)
