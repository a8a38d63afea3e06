"""Collectives of traces that record no sizes on ``record_param_comms`` (torch before 2.2),
priced from what the ops around them record, and the algorithm their kernel's name says.

The data (tests/data/traces/README.md): PARAM's 8 V100 DLRM ranks, HolisticTraceAnalysis's
A100 ranks (two sampled ranks of a 128-rank job, one rank of a 16-rank job) and its V100
rank of a 2-rank job. Each expected figure is derived here from the JSON itself, apart from
the code: the collective's ``nccl:<name>`` range around the kernel's launch (same host
thread) records its input tensor (``Input Dims``, ``Input type``), the ``c10d::`` op around
it its output first (``alltoall_base_``, ``_allgather_base_``, ``_reduce_scatter_base_``),
the trace's ``distributedInfo`` its world size. The closed forms (ops.collectives' ring
rows): an all-reduce of D bytes over n ranks sends 2(n-1)/n D in 2(n-1) steps, an
all-gather (D its output) and a reduce-scatter (D its input) (n-1)/n D in n-1 steps, an
all-to-all of even splits (n-1)/n of its input in n-1 steps; one whose input and output
differ keeps at most the smaller, so sends or receives at least |in - out|, one step. The
links (specs/hardware): a V100 has six NVLink 2 links of 25 GB/s a direction, an A100
twelve NVLink 3 links of 25 GB/s; NCCL's tuning gives 0.6 us a step on both.
"""

from __future__ import annotations

import gzip
import json
import math
import tarfile
from pathlib import Path
from typing import Any

import pytest

import pytest_roofline as rl
from pytest_roofline.profiling import collectives

pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "traces"
_BYTES = {"float": 4, "int": 4, "long int": 8, "long": 8, "signed char": 1,
          "unsigned char": 1}
_LINKS = {"v100": 6 * 25e9, "a100-80gb-sxm": 12 * 25e9}
_STEP = 0.6e-6


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    where = tmp_path_factory.mktemp("dlrm")
    with tarfile.open(DATA / "param_dlrm_kineto.tar.gz") as archive:
        archive.extractall(where, filter="data")
    return sorted((where / "dlrm_kineto").glob("*.json"))


def _raw(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)


def _around(events: list[dict[str, Any]], thread: tuple[Any, Any], ts: float,
            prefix: str) -> list[dict[str, Any]]:
    """The events named *prefix*... on *thread* whose span holds *ts*, outermost first."""
    return sorted((e for e in events if e["name"].startswith(prefix)
                   and (e["pid"], e["tid"]) == thread and e["ts"] <= ts <= e["ts"] + e["dur"]),
                  key=lambda e: e["ts"])


def _elements(dims: list[Any]) -> int:
    return math.prod(dims)


def _expected(path: Path) -> list[tuple[float, float, str]]:
    """Per collective kernel whose launch the trace holds, in start order: (its bound on
    the link roof by the closed form, its measured s, its collective's name)."""
    data = _raw(path)
    events = [e for e in data["traceEvents"] if e.get("ph") == "X"]
    world = data["distributedInfo"]["world_size"]
    launches = {e["args"]["correlation"]: e for e in events if e.get("cat") == "cuda_runtime"
                and "correlation" in e.get("args", {})}
    named = [e for e in events if e.get("cat") in ("user_annotation", "cpu_op")]
    out = []
    kernels = sorted((e for e in events if e.get("cat") == "kernel"
                      and e["name"].startswith("nccl")), key=lambda e: e["ts"])
    for kernel in kernels:
        launch = launches.get(kernel["args"]["correlation"])
        if launch is None:  # launched before the window: nothing records its sizes
            continue
        thread, at = (launch["pid"], launch["tid"]), launch["ts"]
        (nccl,) = _around(named, thread, at, "nccl:")
        c10d = _around(named, thread, at, "c10d::")
        name = nccl["name"].removeprefix("nccl:")
        into = _elements(nccl["args"]["Input Dims"][0])
        width = _BYTES[nccl["args"]["Input type"][0]]
        out_first = c10d and c10d[0]["name"] != "c10d::allreduce_"
        outn = _elements(c10d[0]["args"]["Input Dims"][0]) if out_first else into
        n = world
        if name == "all_reduce":
            sent, steps = 2 * (n - 1) / n * into, 2 * (n - 1)
        elif name == "_all_gather_base":
            n = outn // into  # the group its message sizes say (64 of HTA's 128 ranks)
            sent, steps = (n - 1) / n * outn, n - 1
        elif name == "_reduce_scatter_base":
            n = into // outn
            sent, steps = (n - 1) / n * into, n - 1
        elif into != outn:
            sent, steps = abs(into - outn), 1
        else:
            sent, steps = (n - 1) / n * into, n - 1
        link = _LINKS["v100" if "v100" in path.name or "worker" in path.name
                      else "a100-80gb-sxm"]
        out.append((sent * width / link + steps * _STEP, kernel["dur"] * 1e-6, name))
    return out


def _check(path: Path, hw: str | None) -> rl.Profile:
    profile = rl.read_trace(path, hw=hw)
    expected = _expected(path)
    calls = [c for c in profile.collectives if "launch is not in the trace" not in c.why]
    assert len(calls) == len(expected) > 0
    for call, (bound, seconds, name) in zip(calls, expected, strict=True):
        assert (call.name, call.seconds) == (name, pytest.approx(seconds, rel=1e-9))
        assert call.bound == pytest.approx(bound, rel=1e-9), call
        assert call.bound <= call.seconds  # none faster than its link roof
    return profile


def test_every_collective_of_params_8_dlrm_ranks_is_priced_by_the_closed_form(
        dlrm: list[Path]) -> None:
    for path in dlrm:
        profile = _check(path, None)
        assert profile.hw == "v100" and len(profile.collectives) == 8
        assert all(c.bound is not None for c in profile.collectives)  # all 8 on each rank
        reduce = next(c for c in profile.collectives if c.name == "all_reduce")
        assert (reduce.group, reduce.group_from) == (
            8, "the trace's world size (distributedInfo)")


@pytest.mark.parametrize(("name", "hw"), [
    ("a100_hta_sampled_rank0.json.gz", "a100"), ("a100_hta_sampled_rank1.json.gz", "a100"),
    ("a100_hta_negative_queue_rank0.json.gz", "a100"),
    ("v100_hta_trace_diff_test.json.gz", "v100")])
def test_every_collective_of_htas_ranks_is_priced_by_the_closed_form(name: str,
                                                                     hw: str) -> None:
    profile = _check(DATA / name, hw)
    # what stays unpriced: kernels launched before the window, each named with why
    rest = [c for c in profile.collectives if c.bound is None]
    assert all(c.why.startswith("its launch is not in the trace") for c in rest)
    assert len(rest) == {"a100_hta_negative_queue_rank0.json.gz": 5,
                         "v100_hta_trace_diff_test.json.gz": 4}.get(name, 0)
    rows = [r for r in profile.rows if r.op == "record_param_comms"]
    assert rows and all(r.regime == "network" and not r.faster for r in rows)
    assert all("ring (its kernel's name)" in r.shapes for r in rows)


def test_an_all_gather_over_half_the_world_is_priced_over_its_own_group() -> None:
    # HTA's all-gathers: 16 MiB in, 1 GiB out on a 128-rank job: a group of 64
    profile = rl.read_trace(DATA / "a100_hta_sampled_rank0.json.gz", hw="a100")
    gathers = [c for c in profile.collectives if c.name == "_all_gather_base"]
    assert len(gathers) == 2
    assert {(c.group, c.group_from, c.data_bytes) for c in gathers} == {
        (64, collectives.INFERRED, 1073741824.0)}
    # nccl-tests: all-gather busbw = algbw x (n-1)/n
    assert gathers[0].busbw == pytest.approx(gathers[0].algbw * 63 / 64)  # type: ignore[operator]


# -- the algorithm the kernel's name says ----------------------------------------------------


@pytest.mark.parametrize(("kernel", "algorithm"), [
    ("ncclKernel_AllReduce_RING_LL_Sum_float", "ring"),
    ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ring"),
    ("ncclDevKernel_AllReduce_Sum_bf16_TREE_LL128", "tree"),
    ("ncclDevKernel_AllReduce_Sum_bf16_NVLS_SIMPLE", "nvls"),
    ("ncclDevKernel_AllReduce_Sum_bf16_NVLS_TREE_SIMPLE", "nvls"),
    ("ncclDevKernel_AllReduce_Sum_f32_COLLNET_DIRECT_SIMPLE", "sharp"),
    ("ncclKernel_AllReduce_COLLNET_CHAIN_LL_Sum_float", "sharp"),
    ("ncclDevKernel_Generic", "ring"),
])
def test_an_all_reduces_algorithm_is_the_one_its_kernel_names(kernel: str,
                                                             algorithm: str) -> None:
    assert collectives.algorithm_of("allreduce", kernel)[0] == algorithm


def test_an_algorithm_the_table_has_no_row_for_is_ring_and_said() -> None:
    # PAT (NCCL's all-gather over many nodes) and a tree all-gather: the table's rows for
    # tree, NVLS and CollNet are all-reduce's
    assert collectives.algorithm_of("allgather", "ncclDevKernel_AllGather_PAT_SIMPLE") == (
        "ring", "ring (its kernel's name says PAT: no row of the table)")
    assert collectives.algorithm_of("allgather", "ncclDevKernel_AllGather_NVLS_SIMPLE")[0] \
        == "ring"


_ALLREDUCE = {"Collective name": "allreduce", "Group size": 8, "In msg nelems": 2**20,
              "Out msg nelems": 2**20, "dtype": "BFloat16"}


@pytest.mark.parametrize(("kernel", "sent", "steps"), [
    # 2 MiB of bf16 over 8 H100s (18 NVLink 4 links of 25 GB/s a direction, 0.6 us a step)
    ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 2 * 7 / 8, 2 * 7),
    ("ncclDevKernel_AllReduce_Sum_bf16_TREE_LL", 2 * 7 / 8, 2 * 3),  # 2 ceil(log2 8)
    ("ncclDevKernel_AllReduce_Sum_bf16_NVLS_SIMPLE", 9 / 8, 2),  # (n+1)/n, two phases
])
def test_an_all_reduce_is_priced_by_its_kernels_algorithm(kernel: str, sent: float,
                                                          steps: int) -> None:
    workload, label, why = collectives.price(_ALLREDUCE, kernel)
    assert workload is not None and not why
    (k,) = workload.kernels
    assert k.link_bytes == pytest.approx(sent * 2**21, rel=1e-12)
    assert k.link_steps == steps
    algorithm = collectives.algorithm_of("allreduce", kernel)[0]
    assert label.startswith(f"allreduce over 8 ranks, {algorithm} (its kernel's name)")
    # the link's time (its memory's, 4 MiB and less at 3.35 TB/s, is below it)
    assert float(rl.analyze(workload, "h100").time) == pytest.approx(
        sent * 2**21 / (18 * 25e9) + steps * 0.6e-6, rel=1e-9)


# -- what the ops around a collective record ---------------------------------------------------


def test_an_all_to_all_whose_input_and_output_differ_sends_at_least_their_difference() -> None:
    # PARAM rank 0's index all-to-all: 3392 int in, 768 out (c10d::alltoall_base_'s output
    # first), splits not recorded: it keeps at most 768, so sends at least 2624 x 4 bytes
    args = {"Collective name": "all_to_all", "In msg nelems": 3392, "Out msg nelems": 768,
            "dtype": "int", collectives.TRACE_GROUP: (8, "the trace's world size")}
    workload, label, _ = collectives.price(args, "ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t")
    assert workload is not None and "at least |in - out|" in label
    assert sum(k.link_bytes for k in workload.kernels) == (3392 - 768) * 4
    # equal sizes: its splits taken as even, (n-1)/n of its input, and said
    even, label, _ = collectives.price({**args, "Out msg nelems": 3392})
    assert even is not None and "splits not recorded: taken as even" in label
    assert sum(k.link_bytes for k in even.kernels) == pytest.approx(7 / 8 * 3392 * 4)


@pytest.mark.parametrize(("bps", "shown"), [
    (192 / 1.032e-3, "186 kB/s"),  # PARAM rank 0's all-to-all of 24 int64 in 1.032 ms
    (18.5e6, "18.5 MB/s"), (6.41e9, "6.41 GB/s"), (None, "-")])
def test_a_jobs_bandwidths_are_three_digits_in_the_unit_that_fits(bps: float | None,
                                                                  shown: str) -> None:
    from pytest_roofline.profiling import job_text

    assert job_text._bw(bps) == shown


def _chain(*ops: tuple[str, dict[str, Any]]) -> list[Any]:
    from pytest_roofline.profiling.torch.trace_file import Op

    return [Op(name, 0.0, 1e-3, args) for name, args in ops]


_RANGE = ("nccl:all_reduce", {"Input Dims": [[1024]], "Input type": ["c10::BFloat16"]})
_KERNEL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"


@pytest.mark.parametrize(("info", "group", "source"), [
    # the one process group the trace lists: its pg_size, not the world's
    ({"world_size": 16, "pg_config": [{"pg_name": "0", "pg_size": 8}]}, 8,
     "the trace's process group (pg_config)"),
    # several groups and the op names none: the world
    ({"world_size": 16, "pg_config": [{"pg_name": "0", "pg_size": 16},
                                      {"pg_name": "1", "pg_size": 4}]}, 16,
     "the trace's world size (distributedInfo)"),
    ({"world_size": 4}, 4, "the trace's world size (distributedInfo)"),
    (None, None, ""),
])
def test_the_group_of_a_collective_that_records_none_comes_from_distributed_info(
        info: dict[str, Any] | None, group: int | None, source: str) -> None:
    from pytest_roofline.profiling.torch.comm_ops import collective_args

    args = collective_args(_chain(_RANGE), _KERNEL, info)
    assert args["In msg nelems"] == args["Out msg nelems"] == 1024  # an all-reduce: in = out
    assert collectives.group_of(args) == (group, source)
    workload, label, why = collectives.price(args, _KERNEL)
    if group is None:  # never priced as if it ran alone
        assert workload is None and "group size" in why
    else:
        assert workload is not None and f"(group: {source}, its own not recorded)" in label
        assert sum(k.link_bytes for k in workload.kernels) == pytest.approx(
            2 * (group - 1) / group * 1024 * 2)


def test_a_recorded_process_group_name_picks_its_own_pg_config_entry() -> None:
    from pytest_roofline.profiling.torch.comm_ops import collective_args

    recorded = ("record_param_comms", {"Collective name": "allreduce", "In msg nelems": 64,
                                       "Out msg nelems": 64, "dtype": "Float",
                                       "Process Group Name": "1"})
    info = {"world_size": 16, "pg_config": [{"pg_name": "0", "pg_size": 16},
                                            {"pg_name": "1", "pg_size": 4}]}
    args = collective_args(_chain(recorded), _KERNEL, info)
    assert collectives.group_of(args) == (4, "the trace's process group (pg_config)")
