"""Every public ``jax.profiler`` trace in ``tests/data/jax_traces`` (XProf's TPU v6e test
trace, TraceLens's MI300X GEMM, attention, elementwise and convolution traces and its gfx950
TransformerEngine trace), read as a user would, with no ``--hw``: the chip each names, every
op of 1% of the time or more a row or named unpriced, the measured time the device's own
(each op's events' durations, summed), and no row beyond its physical limit."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

import pytest_roofline as rl
from pytest_roofline.profiling.jax import jax_trace

DATA = Path(__file__).parent / "data" / "jax_traces"

#: file -> the chip its device plane names (README: each trace's device)
TRACES = {
    "tpu_v6e_xprof_inference_2.xplane.pb": "tpu-v6e",
    "mi300x_tracelens_jax08_gemm.xplane.pb": "mi300x",
    "mi300x_tracelens_jax08_attention.xplane.pb": "mi300x",
    "mi300x_tracelens_jax08_elementwise.xplane.pb": "mi300x",
    "mi300x_tracelens_jax08_conv.xplane.pb": "mi300x",
    "gfx950_tracelens_te.xplane.pb": "mi355x",
}


@pytest.mark.parametrize("name", TRACES)
def test_a_public_jax_trace_reads_on_its_chip_every_op_accounted(name: str) -> None:
    profile = rl.read_trace(DATA / name)
    assert profile.hw == TRACES[name] and profile.on_device
    assert not profile.faster, [r.op for r in profile.faster]
    # the device's time: each op's events, summed, read here apart from the pricing
    trace = jax_trace.read(DATA / name)
    by_op: dict[str, float] = defaultdict(float)
    for event, seconds in trace.ops:
        by_op[str(event.stats["hlo_op"])] += seconds
    assert profile.total == pytest.approx(sum(by_op.values()), rel=1e-12)
    assert profile.priced + sum(u.seconds for u in profile.unpriced) == pytest.approx(
        profile.total, rel=1e-9)
    shown = {r.op.split("/")[-1] for r in profile.rows} | {
        u.name.split("/")[-1] for u in profile.unpriced}
    for op, seconds in by_op.items():
        if seconds >= 0.01 * profile.total:
            assert op in shown, op
