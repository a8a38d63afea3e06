"""Sharded programs traced per chip: the collectives' link bytes.

The JAX checks (``tests/mesh_jax/check_*.py``) need 8 CPU devices, which JAX sets up once, as
it initialises, from ``XLA_FLAGS``; they run in a pytest process of their own so that the
flag reaches no other test. Their expected figures are stated in that file.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pytest_roofline.tracing import TraceError, Tracer

HERE = Path(__file__).parent


def test_shard_map_programs_on_eight_cpu_devices():
    pytest.importorskip("jax")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "-o", "python_files=check_*.py", "-o", "addopts=", str(HERE / "mesh_jax")],
        capture_output=True, text=True, timeout=600, cwd=HERE.parent, check=False)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "skipped" not in run.stdout


@pytest.mark.parametrize("links", [
    "nvlink", {"x": 3}, {"x": ("nvlink", 0)}, {1: "nvlink"}, {"x": ("nvlink", True)},
])
def test_a_bad_links_option_names_what_is_allowed(links):
    with pytest.raises(TraceError, match=r"Tracer: links"):
        Tracer(links=links)


# -- torch: functional collectives on a fake process group of 8 ranks -----------------------
# Expected figures: the closed forms of ops.collectives (V the bytes of the tensor as that
# table sizes it, N = 8): all-reduce 2·V·(N-1)/N, all-gather and reduce-scatter V·(N-1)/N,
# all-to-all V·(N-1)/N. Exact: the same formula evaluated twice.

ROWS, COLS, RANKS = 1024, 512, 8
V = ROWS * COLS * 2  # one rank's bf16 tensor: 1 MiB


@pytest.fixture(scope="module")
def fake_group():
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available():
        pytest.skip("torch built without torch.distributed")
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=RANKS)
    try:
        yield torch, dist
    finally:
        dist.destroy_process_group()


def _program(x):
    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc

    world = dist.group.WORLD
    a = fc.all_reduce(x, "sum", world)
    b = fc.all_gather_tensor(x, 0, world)  # [8·ROWS, COLS]: 8·V gathered
    c = fc.reduce_scatter_tensor(b, "sum", 0, world)  # 8·V in, V out
    d = fc.all_to_all_single(x, None, None, world)
    return fc.wait_tensor(a) + c + d


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_torch_functional_collectives_trace_to_their_closed_forms(fake_group, device):
    torch, _ = fake_group
    x = torch.empty(ROWS, COLS, dtype=torch.bfloat16, device=device)
    w = Tracer(links={"world": "nvlink"})(_program, x)
    links = {k.name.split("[")[0]: k for k in w.kernels if k.link_bytes}
    frac = (RANKS - 1) / RANKS
    assert links["all_reduce"].link_bytes == pytest.approx(2 * V * frac, rel=1e-12)
    assert links["all_gather_into_tensor"].link_bytes == pytest.approx(8 * V * frac, rel=1e-12)
    assert links["reduce_scatter_tensor"].link_bytes == pytest.approx(8 * V * frac, rel=1e-12)
    assert links["all_to_all_single"].link_bytes == pytest.approx(V * frac, rel=1e-12)
    assert all(k.link == "nvlink" for k in links.values())
    assert not any(k.name.startswith(("wait_tensor", "_wrap")) for k in w.kernels)
    from pytest_roofline import ops

    declared = ops.all_reduce(ROWS * COLS, RANKS).kernels[0]
    assert (links["all_reduce"].flops, links["all_reduce"].bytes) == (declared.flops,
                                                                      declared.bytes)


def test_is_fake_tells_fake_tensors_from_real_and_meta_ones():
    # a torch-private call (tracing/_torch_compat.is_fake, from torch._subclasses):
    # DTensor's sharding propagation runs on fake tensors, which the trace must leave out;
    # a meta tensor (what whole models are traced on) is not fake and must be priced
    import torch
    from torch._subclasses.fake_tensor import FakeTensorMode

    from pytest_roofline.tracing._torch_compat import is_fake

    with FakeTensorMode():
        fake = torch.empty(4, 4)
    assert is_fake(fake)
    assert not is_fake(torch.empty(4, 4))
    assert not is_fake(torch.empty(4, 4, device="meta"))


def test_the_group_of_a_functional_collective_resolves(fake_group):
    # a torch-private call of the torch collectives (tracing/_torch_compat.process_group)
    _, dist = fake_group
    from pytest_roofline.tracing._torch_compat import process_group

    assert process_group(dist.group.WORLD.group_name).size() == RANKS


def test_an_inplace_all_reduce_is_named_not_priced_as_zero(fake_group):
    torch, dist = fake_group
    with pytest.raises(TraceError, match=r"c10d\.allreduce_.*functional_collectives"):
        Tracer()(lambda x: dist.all_reduce(x), torch.ones(16, 16))


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_an_inplace_all_gather_takes_its_group_size_from_the_shapes(fake_group):
    torch, dist = fake_group
    out = torch.empty(RANKS * ROWS, COLS, dtype=torch.bfloat16)
    w = Tracer()(lambda x: dist.all_gather_into_tensor(out, x),
                 torch.ones(ROWS, COLS, dtype=torch.bfloat16))
    (gather,) = [k for k in w.kernels if k.link_bytes]
    assert gather.link_bytes == pytest.approx(RANKS * V * (RANKS - 1) / RANKS, rel=1e-12)


def test_a_bad_overlap_option_names_what_is_allowed():
    with pytest.raises(TraceError, match=r"overlap='half' is not allowed; allowed: 'none', "
                                         r"'full'"):
        Tracer(overlap="half")


@pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")
def test_a_dtensor_program_traces_per_rank_with_its_redistribution(fake_group):
    # [64, 128] @ [128, 256] with the contraction sharded over the 4 ranks of "tp": each rank
    # multiplies [64, 32] @ [32, 256] and the partial sums [64, 256] (fp32, V = 64 KiB) are
    # all-reduced when replicated: 2·V·3/4 bytes per rank. DTensor's own host-side work
    # (sharding propagation on fake tensors, device-mesh arithmetic) is no kernel.
    torch, _ = fake_group
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (2, 4), mesh_dim_names=("dp", "tp"))
    a = distribute_tensor(torch.randn(64, 128), mesh["tp"], [Shard(1)])
    b = distribute_tensor(torch.randn(128, 256), mesh["tp"], [Shard(0)])

    def layer(x, y):
        return torch.relu((x @ y).redistribute(mesh["tp"], [Replicate()]))

    w = Tracer(links={"tp": "nvlink"})(layer, a, b)
    assert [k.name.split("[")[0] for k in w.kernels] == ["mm", "all_reduce", "relu"]
    mm, reduce, relu = w.kernels
    assert relu.bytes == 2 * 64 * 256 * 4  # the replicated result, read and written
    assert mm.flops == 2 * 64 * 32 * 256
    assert reduce.link_bytes == pytest.approx(2 * 64 * 256 * 4 * 3 / 4, rel=1e-12)
    assert reduce.link == "nvlink"


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_an_unmapped_group_is_priced_by_the_chips_mesh_axes(fake_group):
    # no Tracer(links=...): the kernel names the group's axis, and the chip's spec says
    # which link it runs over (here the world group on PCIe, 64 GB/s one way)
    torch, _ = fake_group
    from pytest_roofline import Hardware, Link, Workload, analyze

    w = Tracer()(_program, torch.empty(ROWS, COLS, dtype=torch.bfloat16, device="meta"))
    reduce = next(k for k in w.kernels if k.name.startswith("all_reduce"))
    assert reduce.link == "axis:world"
    chip = Hardware(name="pcie-box", memory_bandwidth=2e12, memory_capacity=80e9,
                    matrix={"bf16": 1e15}, vector={"fp32": 6e13},
                    links={"nvlink": Link("nvlink", 25e9, 18), "pcie": Link("pcie", 64e9, 1)},
                    mesh_axes={"world": "pcie"})
    r = analyze(Workload([reduce]), chip)
    assert r.t_network == pytest.approx(2 * V * 7 / 8 / 64e9, rel=1e-12)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_a_new_collective_row_is_read_by_the_torch_tracer(fake_group, monkeypatch):
    # one row plus its closed form (ops._family.COLLECTIVES): a kind that sends each chip's
    # tensor once (sent = 1), claiming the functional all_reduce; the torch tracer prices
    # the op with that row, not the all-reduce's 2·(N-1)/N (the JAX readers: the same check
    # in tests/mesh_jax/check_shard_map.py)
    import dataclasses

    import torch.distributed as dist
    import torch.distributed._functional_collectives as fc

    from pytest_roofline.ops import _family

    torch, _ = fake_group
    ring = _family.COLLECTIVES["all_reduce"]
    monkeypatch.setitem(_family.COLLECTIVES, "all_reduce", dataclasses.replace(
        ring, torch=("all_reduce_coalesced", "all_reduce_coalesced_")))
    monkeypatch.setitem(_family.COLLECTIVES, "once", _family.Collective(
        "once", sent=lambda n: 1.0, adds=lambda n: 0.0, parts_in=lambda n: 1,
        parts_out=lambda n: 1, ring_steps=lambda n: 1.0, torch=("all_reduce", "all_reduce_")))
    x = torch.empty(ROWS, COLS, dtype=torch.bfloat16, device="meta")
    w = Tracer()(lambda x: fc.wait_tensor(fc.all_reduce(x, "sum", dist.group.WORLD)), x)
    (moved,) = [k for k in w.kernels if k.link_bytes]
    assert moved.link_bytes == V
