"""One shape for what a recording gives, torch's and JAX's alike: a frozen, validated
``Recording`` (kernels, footprint, unknown, assumed, left_out) that ``Tracer.finish`` takes.

The numbers are derived by hand: a (64, 32) x (32, 16) fp32 product is 2 · 64 · 32 · 16
FLOPs (2 a multiply-accumulate) and its arguments hold (64·32 + 32·16) · 4 bytes; exact."""

from __future__ import annotations

import dataclasses
import math

import pytest

import pytest_roofline as rl
from pytest_roofline.tracing import Recording, TraceError, Tracer

torch = pytest.importorskip("torch")

FLOPS = 2 * 64 * 32 * 16
FOOTPRINT = (64 * 32 + 32 * 16) * 4


def _recording(**changes: object) -> Recording:
    fields: dict[str, object] = {"kernels": (rl.Kernel("k", 1.0, 2.0),), "footprint": 8.0,
                                 "unknown": {}, "assumed": {}, "left_out": {}}
    return Recording(**(fields | changes))  # type: ignore[arg-type]


def test_torch_and_jax_record_the_same_shape() -> None:
    jax = pytest.importorskip("jax")
    from pytest_roofline.tracing import _jax, _torch

    a = torch.empty(64, 32, device="meta")
    b = torch.empty(32, 16, device="meta")
    by_torch = _torch.record(torch.mm, (a, b), {}, None)
    spec = jax.ShapeDtypeStruct
    by_jax = _jax.record(jax.numpy.matmul, (spec((64, 32), "float32"),
                                            spec((32, 16), "float32")), {}, None, "epilogue")
    for recording in (by_torch, by_jax):
        assert isinstance(recording, Recording)
        assert sum(k.total_flops for k in recording.kernels) == FLOPS
        assert recording.footprint == FOOTPRINT
        assert (dict(recording.unknown), dict(recording.assumed),
                dict(recording.left_out)) == ({}, {}, {})
    # the public trace goes through the same shape for both
    assert rl.trace(torch.mm, a, b).footprint == FOOTPRINT


def test_a_recording_is_frozen_and_keeps_what_it_was_given() -> None:
    from pytest_roofline.tracing._torch import Recorder

    recorder = Recorder({}, None)
    recorder.unknown["aten::x"] = 1
    recording = recorder.result(footprint=0.0)
    recorder.unknown["aten::x"] = 5  # the recorder goes on; the recording does not change
    recorder.kernels.append(rl.Kernel("later", 1.0, 1.0))
    assert dict(recording.unknown) == {"aten::x": 1} and recording.kernels == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        recording.footprint = 1.0  # type: ignore[misc]
    with pytest.raises(TypeError):
        recording.unknown["aten::y"] = 1  # type: ignore[index]


def test_a_body_recording_counts_what_it_left_out() -> None:
    a = torch.empty(64, 32, device="meta")
    with Tracer().body() as recorder:
        b = torch.zeros(32, 16, device="meta")  # a tensor factory: not the workload
        torch.mm(a, b)
    recording = recorder.result(footprint=0.0)
    assert dict(recording.left_out) == {"tensor factory": 1}
    assert Tracer().finish(recording, name="body").flops == FLOPS


@pytest.mark.parametrize(("changes", "message"), [
    ({"footprint": math.nan}, r"footprint=nan must be a finite number of bytes >= 0"),
    ({"footprint": -1.0}, r"footprint=-1.0 must be"),
    ({"footprint": math.inf}, r"footprint=inf must be"),
    ({"footprint": True}, r"footprint=True must be"),
    ({"footprint": "8"}, r"footprint='8' must be"),
    ({"unknown": {"aten::x": 0}}, r"unknown\['aten::x'\]=0: a count is an int >= 1"),
    ({"assumed": {"trip count": 1.5}}, r"assumed\['trip count'\]=1.5: a count is an int"),
    ({"left_out": [("x", 1)]}, r"left_out=\[\('x', 1\)\] must map names to counts"),
    ({"kernels": ("not a kernel",)}, r"kernels=.* must be a sequence of Kernels"),
])
def test_a_bad_recording_is_refused_by_name(changes: dict[str, object], message: str) -> None:
    with pytest.raises(TraceError, match=r"^Recording: " + message):
        _recording(**changes)


def test_finish_takes_a_recording_only() -> None:
    assert Tracer().finish(_recording(), name="r").footprint == 8.0
    with pytest.raises(TraceError, match=r"Tracer.finish: recording=\[\] must be a Recording"):
        Tracer().finish([], name="r")  # type: ignore[arg-type]
