"""Collectives in a PyTorch trace priced on the network roof from their recorded sizes.

TraceLens's 8-GPU MI300X ResNet training trace (tests/data/traces/README.md) records each
all-reduce as ``record_param_comms`` with its ``Collective name``, ``In msg nelems``,
``dtype`` and ``Group size``. The closed form: a ring all-reduce of D bytes over n ranks
sends 2(n-1)/n D on each rank's links; the MI300X's seven Infinity Fabric links carry
64 GB/s each (specs/hardware/mi300x.yaml, AMD's CDNA 3 whitepaper).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pytest_roofline as rl
from pytest_roofline.profiling import collectives

pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "traces"


def test_the_all_reduces_of_an_mi300x_training_trace_are_priced_on_its_links() -> None:
    profile = rl.read_trace(DATA / "tracelens_mi300x_resnet_train.json.gz")
    rows = {r.shapes: r for r in profile.rows if r.op == "record_param_comms"}
    assert set(rows) == {"allreduce over 8 ranks, 8816192 BFloat16",
                         "allreduce over 8 ranks, 2873320 BFloat16"}
    for elements, row in ((8816192, rows["allreduce over 8 ranks, 8816192 BFloat16"]),
                          (2873320, rows["allreduce over 8 ranks, 2873320 BFloat16"])):
        sent = 2 * 7 / 8 * elements * 2  # bf16: 2 bytes an element
        assert row.bound / row.count == pytest.approx(sent / (7 * 64e9), rel=1e-9)
        assert row.regime == "network" and row.precision == "link:infinity_fabric"
        assert any(k.startswith("ncclDevKernel") for k in row.kernels)  # RCCL's kernel
        assert not row.faster and row.category == "communication"
    assert "communication" in profile.by_category()


@pytest.mark.parametrize(("args", "why"), [
    ({}, "records no 'Collective name'"),
    ({"Collective name": "broadcast", "Group size": 8, "In msg nelems": 10,
      "dtype": "Float"}, "no formula for the collective 'broadcast'"),
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
