"""Collectives in a PyTorch trace priced on the network roof from their recorded sizes.

TraceLens's 8-GPU MI300X ResNet training trace (tests/data/traces/README.md) records each
all-reduce as ``record_param_comms`` with its ``Collective name``, ``In msg nelems``,
``dtype`` and ``Group size``. The closed form: a ring all-reduce of D bytes over n ranks
sends 2(n-1)/n D on each rank's links; the MI300X's seven Infinity Fabric links carry
64 GB/s each (specs/hardware/mi300x.yaml, AMD's CDNA 3 whitepaper).
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

import pytest_roofline as rl
from pytest_roofline.profiling import collectives

pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "traces"


def test_the_all_reduces_of_an_mi300x_training_trace_are_priced_on_its_links() -> None:
    profile = rl.read_trace(DATA / "tracelens_mi300x_resnet_train.json.gz")
    rows = {r.shapes: r for r in profile.rows if r.op == "record_param_comms"}
    # RCCL's ncclDevKernel_Generic names no algorithm: ring, and the row says so
    ring = "ring (assumed: its kernel's name does not say)"
    assert set(rows) == {f"allreduce over 8 ranks, {ring}, 8816192 BFloat16",
                         f"allreduce over 8 ranks, {ring}, 2873320 BFloat16",
                         f"broadcast over 8 ranks, {ring}, 9600 BFloat16",
                         f"broadcast over 8 ranks, {ring}, 20 Long"}
    for elements, row, share in (
            (8816192, rows[f"allreduce over 8 ranks, {ring}, 8816192 BFloat16"], 2 * 7 / 8),
            (2873320, rows[f"allreduce over 8 ranks, {ring}, 2873320 BFloat16"], 2 * 7 / 8),
            # a broadcast: each rank takes the 7/8 of the tensor it lacks (the table's row)
            (9600, rows[f"broadcast over 8 ranks, {ring}, 9600 BFloat16"], 7 / 8)):
        sent = share * elements * 2  # bf16: 2 bytes an element
        assert row.bound / row.count == pytest.approx(sent / (7 * 64e9), rel=1e-9)
        assert row.regime == "network" and row.precision == "link:infinity_fabric"
        assert any(k.startswith("ncclDevKernel") for k in row.kernels)  # RCCL's kernel
        assert not row.faster and row.category == "communication"
    assert "communication" in profile.by_category()


@pytest.mark.parametrize(("args", "why"), [
    ({}, "collective not named: its record_param_comms op records no sizes"),
    ({"Collective name": "barrier", "Group size": 8, "In msg nelems": 10,
      "dtype": "Float"}, "no formula for the collective 'barrier'"),
    ({"Collective name": "allreduce", "In msg nelems": 10, "dtype": "Float"},
     "group size, element count or dtype is not recorded"),
    ({"Collective name": "allreduce", "Group size": 8, "In msg nelems": 10**30,
      "dtype": "Float"}, "group size, element count or dtype is not recorded"),
])
def test_a_collective_the_trace_does_not_size_is_named_never_priced_as_zero(
        args: dict[str, object], why: str) -> None:
    workload, _, reason = collectives.price(args)
    assert workload is None and why in reason


def test_an_all_gather_counts_its_gathered_size_and_a_reduce_scatter_its_input() -> None:
    # (n-1)/n of the gathered (output) size and of the unreduced (input) size, 4 ranks
    gather, _, _ = collectives.price({"Collective name": "_allgather_base", "Group size": 4,
                                      "In msg nelems": 256, "Out msg nelems": 1024,
                                      "dtype": "Float"})
    scatter, _, _ = collectives.price({"Collective name": "_reduce_scatter_base",
                                       "Group size": 4, "In msg nelems": 1024,
                                       "Out msg nelems": 256, "dtype": "Float"})
    assert gather is not None and scatter is not None
    assert sum(k.link_bytes for k in gather.kernels) == pytest.approx(3 / 4 * 1024 * 4)
    assert sum(k.link_bytes for k in scatter.kernels) == pytest.approx(3 / 4 * 1024 * 4)


# -- the GPU timeline ----------------------------------------------------------------------------


class _Work:
    def __init__(self, name: str, start: float, us: float, category: str = "kernel") -> None:
        self.name, self.start, self.seconds, self.category = name, start, us * 1e-6, category
        self.stream = (0, 7)


def test_the_timeline_shares_the_span_out_compute_first() -> None:
    # us: compute 0-10 and 20-30; an all-reduce 5-25 (5 us hidden behind each compute
    # kernel, 10 exposed); a memcpy 28-34 (2 us under compute, 4 alone); idle 34-40
    from pytest_roofline.profiling.timeline import timeline

    works = [_Work("gemm", 0, 10), _Work("gemm", 20, 10),
             _Work("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 5, 20),
             _Work("Memcpy DtoD", 28, 6, "gpu_memcpy"), _Work("gemm", 39, 1)]
    assert timeline(works) == pytest.approx({
        "span_s": 40e-6, "compute_s": 21e-6, "exposed_communication_s": 10e-6,
        "overlapped_communication_s": 10e-6, "copies_s": 4e-6, "idle_s": 5e-6})
    assert timeline([]) is None


@pytest.mark.parametrize("name", ["tracelens_mi300x_resnet_train.json.gz",
                                  "h200_llama3_8b_layer_prefill.json.gz",
                                  "v100_hta_trace_diff_test.json.gz"])
def test_a_traces_timeline_parts_add_up_to_its_span(name: str) -> None:
    # the span, from the file itself: per device (pid), its first device event's start to
    # its last one's end (kernels, memcpy and memset events), summed over the devices
    data = json.loads(gzip.decompress((DATA / name).read_bytes()))
    ends: dict[object, tuple[float, float]] = {}
    for event in data["traceEvents"]:
        if event.get("ph") == "X" and str(event.get("cat", "")).lower() in (
                "kernel", "gpu_memcpy", "gpu_memset"):
            lo, hi = ends.get(event["pid"], (float("inf"), float("-inf")))
            ends[event["pid"]] = (min(lo, event["ts"]), max(hi, event["ts"] + event["dur"]))
    span = sum(hi - lo for lo, hi in ends.values()) * 1e-6
    parts = dict(rl.read_trace(DATA / name).timeline or {})
    assert parts["span_s"] == pytest.approx(span, rel=1e-9)
    total = (parts["compute_s"] + parts["exposed_communication_s"] + parts["copies_s"]
             + parts["idle_s"])
    assert total == pytest.approx(span, rel=1e-9)
    if name.startswith("tracelens_mi300x"):
        # TraceLens reports this ResNet step 62.4% exposed communication (RCCL
        # all-reduces); this rule, compute first, reads 64.3%
        assert 0.60 < parts["exposed_communication_s"] / parts["span_s"] < 0.66
