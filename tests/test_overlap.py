"""``overlapped()``: hiding a program's collectives behind its matrix work never makes its
bound slower than running everything one after the other."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st

from pytest_roofline import Kernel, RooflineError, Workload, analyze, get_hardware, ops
from pytest_roofline.engine.overlap import overlapped

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHIPS = [get_hardware(name) for name in ("h100", "a100", "tpu-v5e", "gaudi3", "mi300x", "b200")]

_amount = st.one_of(st.just(0.0), st.floats(min_value=1.0, max_value=1e13))
_count = st.sampled_from([1.0, 2.0, 3.0, 32.0])


@st.composite
def _kernel(draw: st.DrawFn, unit: str) -> Kernel:
    link = draw(st.floats(min_value=1.0, max_value=1e11)) if unit == "collective" else 0.0
    nbytes = draw(_amount)  # a kernel hands on at most the bytes it moves
    return Kernel(draw(st.sampled_from(["a", "b", "c"])), draw(_amount), nbytes,
                  link_bytes=link, unit="vector" if unit != "matrix" else "matrix",
                  dtype=draw(st.sampled_from(["bf16", "fp32", None])),
                  count=draw(_count), link_steps=draw(st.sampled_from([0.0, 1.0, 14.0])),
                  handoff_out=nbytes * draw(st.sampled_from([0.0, 0.5])),
                  # a collective the switch may reduce (on H100's NVLink, which lists nvls)
                  link_options=(("nvls", link * 0.6, 2.0, nbytes * 0.4),)
                  if link and draw(st.booleans()) else ())


@st.composite
def _programs(draw: st.DrawFn) -> Workload:
    kinds = draw(st.lists(st.sampled_from(["matrix", "vector", "collective"]), min_size=1,
                          max_size=7))
    kernels = [draw(_kernel(kind)) for kind in kinds]
    if draw(st.booleans()):  # some vector kernel runs in the epilogue of the kernel before it
        for i in range(1, len(kernels)):
            if kernels[i].unit == "vector" and not kernels[i].link_bytes:
                kernels[i] = kernels[i].evolve(epilogue_of=kernels[i - 1].name)
                break
    return Workload(kernels, name="program")


@FAST
@given(program=_programs(), chip=st.sampled_from(CHIPS), derate=st.sampled_from([1.0, 0.6]))
def test_overlapped_is_never_slower_than_no_overlap(program: Workload, chip: object,
                                                    derate: float) -> None:
    # the bound of the overlapped program is at most the sequential one, on any chip (see
    # overlap's docstring for the inequality); 1e-12 relative for the float sums' rounding
    try:  # a program the chip cannot price (no bytes, a precision it lacks) is no example
        plain_time = analyze(program, chip, derate=derate).time  # type: ignore[arg-type]
    except RooflineError:
        assume(False)
    note(repr(program.kernels))
    hidden = overlapped(program)
    hidden_time = analyze(hidden, chip, derate=derate).time  # type: ignore[arg-type]
    assert hidden_time <= plain_time * (1 + 1e-12) + 1e-30
    assert hidden.flops == pytest.approx(program.flops, rel=1e-9)
    assert hidden.link_bytes == pytest.approx(program.link_bytes, rel=1e-9)


def test_a_small_attention_beside_a_megabyte_all_reduce():
    # 1 MiB of bf16 all-reduced on a ring of 8 H100s beside a small fused attention. Without
    # overlap: the all-reduce's own time, max(memory 5.77 MB / 3.35 TB/s = 1.72 us, link
    # 1.835 MB / 450 GB/s + 14 steps x 0.6 us = 12.5 us), plus the attention's. Overlapped,
    # the attention kernel carries both memory streams and the link bytes, the steps' latency
    # hidden with them: max(its compute, its memory + 1.72 us, 4.08 us). The old model left
    # the all-reduce's memory time outside the overlap, and could come out slower than no
    # overlap at all (8.86 -> 11.68 us on this chip's former spec).
    program = Workload(ops.all_reduce(1 << 19, 8, dtype="bf16", algorithm="ring").kernels
                       + ops.attention(1, 128, 128, 8, 8, 64).kernels, name="step")
    plain, hidden = analyze(program, "h100"), analyze(overlapped(program), "h100")
    ar, att = plain.kernels[0], plain.kernels[1]
    link_time = 2 * 7 / 8 * 2**20 / 450e9
    assert ar.t_network == pytest.approx(link_time + 14 * 0.6e-6, rel=1e-9)
    assert hidden.time <= plain.time
    assert hidden.time == pytest.approx(
        max(att.t_compute, att.t_memory + ar.t_memory, link_time), rel=1e-9)


def test_the_switch_reduction_stays_a_choice_once_hidden():
    # A collective matmul (overlap=True: one matrix kernel carrying its all-reduce, with the
    # NVLS option) beside a second all-reduce, hidden behind it. On H100's NVLink, which
    # reduces in the switch, the hidden program's link bytes are each all-reduce's (8+1)/8·D,
    # not the ring's 2·7/8·D; on A100's, the ring's. Never above the sequential bound.
    mm = ops.sharded_matmul(8192, 8192, 8192, shards=8, link="nvlink", overlap=True)
    ar = ops.all_reduce(1 << 24, 8, dtype="bf16", link="nvlink")
    program = Workload(mm.kernels + ar.kernels, name="step")
    hidden = overlapped(program)
    for chip, fraction in (("h100", 9 / 8), ("a100", 2 * 7 / 8)):
        r = analyze(hidden, chip)
        assert r.link_bytes == pytest.approx(fraction * (8192 * 8192 * 2 + 2**25), rel=1e-9)
        assert r.time <= analyze(program, chip).time
