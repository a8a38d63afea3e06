"""A distributed job's traces read together: the rank table, the collectives matched across
ranks, the straggler, the gates, and collectives' nccl-tests bandwidths.

The data: PARAM's 8-rank DLRM job (``param_dlrm_kineto.tar.gz``, eight V100 ranks of one
step, tests/data/traces/README.md), HolisticTraceAnalysis's two sampled A100 ranks, and
TraceLens's MI300X ResNet rank 0 (its all-reduces recorded with their sizes). Expected
figures are derived from the trace files themselves in each test, by the rule the module
docstring of ``pytest_roofline.profiling.job`` states.
"""

from __future__ import annotations

import gzip
import json
import re
import statistics
import tarfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_roofline as rl
from pytest_roofline.cli import main
from pytest_roofline.profiling import collectives
from pytest_roofline.profiling.comm_calls import CollectiveCall
from pytest_roofline.profiling.job import compare, job_paths
from pytest_roofline.profiling.model import Profile
from pytest_roofline.profiling.rules import ProfileError

pytest.importorskip("torch")

DATA = Path(__file__).parent / "data" / "traces"
HTA = [DATA / "a100_hta_sampled_rank0.json.gz", DATA / "a100_hta_sampled_rank1.json.gz"]
MI300X = DATA / "tracelens_mi300x_resnet_train.json.gz"
_KIND = re.compile(r"ncclKernel_([A-Za-z]+)")


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """PARAM's 8 DLRM ranks, unpacked: the folder of their traces."""
    where = tmp_path_factory.mktemp("dlrm")
    with tarfile.open(DATA / "param_dlrm_kineto.tar.gz") as archive:
        archive.extractall(where, filter="data")
    return where / "dlrm_kineto"


@pytest.fixture(scope="module")
def dlrm_job(dlrm: Path) -> rl.Job:
    return rl.read_job(dlrm, jobs=2)


def _raw(path: Path) -> dict[str, Any]:
    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)


def _from_file(path: Path) -> tuple[int, float, list[tuple[str, float]]]:
    """(its recorded rank, its device span in s, its NCCL kernels in start order: (kind,
    us)), read straight from the JSON."""
    data = _raw(path)
    device = [e for e in data["traceEvents"] if e.get("ph") == "X" and str(
        e.get("cat", "")).lower() in ("kernel", "gpu_memcpy", "gpu_memset")]
    span = (max(e["ts"] + e["dur"] for e in device) - min(e["ts"] for e in device)) * 1e-6
    nccl = sorted((e for e in device if e["name"].startswith("nccl")), key=lambda e: e["ts"])
    return (data["distributedInfo"]["rank"], span,
            [(_KIND.search(e["name"]).group(1), e["dur"]) for e in nccl])  # type: ignore[union-attr]


def _expected_waits(files: list[Path]) -> dict[int, float]:
    """By rank, s: the k-th collective of each kind matched across ranks, aligned by its
    end; the rank whose kernel ran shortest arrived last and kept the first to arrive
    waiting the longest less the shortest."""
    per_rank = {rank: calls for rank, _, calls in map(_from_file, files)}
    keyed: dict[tuple[str, int], dict[int, float]] = {}
    for rank, calls in per_rank.items():
        seen: dict[str, int] = {}
        for kind, us in calls:
            seen[kind] = seen.get(kind, 0) + 1
            keyed.setdefault((kind, seen[kind]), {})[rank] = us
    waits = dict.fromkeys(per_rank, 0.0)
    for times in keyed.values():
        last = min(times, key=lambda r: (times[r], r))
        waits[last] += (max(times.values()) - min(times.values())) * 1e-6
    return waits


def test_the_dlrm_job_names_the_rank_that_keeps_the_others_waiting(
        dlrm: Path, dlrm_job: rl.Job) -> None:
    files = sorted(dlrm.glob("*.json"))
    assert [r.rank for r in dlrm_job.ranks] == list(range(8))  # from distributedInfo
    waits = _expected_waits(files)
    assert dlrm_job.waits() == pytest.approx(waits, rel=1e-9)
    assert dlrm_job.straggler == max(waits, key=waits.__getitem__) == 7
    # 5 all-to-alls (SendRecv kernels) and 3 all-reduces on every rank, all matched, named
    # by their nccl: ranges
    assert len(dlrm_job.collectives) == 8 and not dlrm_job.unmatched
    assert {c.name for c in dlrm_job.collectives} == {"all_to_all", "all_reduce"}
    worst = max(dlrm_job.collectives, key=lambda c: c.skew_s)
    assert (worst.label, worst.straggler) == ("all_to_all #1", 7)
    assert "rank 7 keeps the others waiting" in dlrm_job.table()


def test_each_ranks_step_and_its_parts_come_from_its_own_device_span(
        dlrm: Path, dlrm_job: rl.Job) -> None:
    spans = {rank: span for rank, span, _ in map(_from_file, sorted(dlrm.glob("*.json")))}
    for rank in dlrm_job.ranks:
        assert rank.steps == 1  # one ProfilerStep#10 each
        assert rank.step_s == pytest.approx(spans[rank.rank], rel=1e-9)
        parts = rank.profile.timeline or {}
        assert (rank.compute_s + rank.exposed_communication_s + rank.idle_s
                + parts["copies_s"]) == pytest.approx(rank.step_s, rel=1e-9)
        assert 0 < (rank.roof or 0) <= 1
    assert dlrm_job.median_step_s == pytest.approx(statistics.median(spans.values()))


@pytest.mark.parametrize("pct", [0.1, 0.2, 0.28])
def test_fail_straggler_names_each_rank_over_the_median_step_by_more_than_pct(
        dlrm: Path, dlrm_job: rl.Job, pct: float) -> None:
    spans = {rank: span for rank, span, _ in map(_from_file, sorted(dlrm.glob("*.json")))}
    median = statistics.median(spans.values())  # 8 ranks: the mean of the middle two
    expected = sorted(r for r, s in spans.items() if s > median * (1 + pct))
    failures = dlrm_job.check(fail_straggler=pct)
    named = sorted(int(re.match(r"rank (\d+)'s step is", f).group(1))  # type: ignore[union-attr]
                   for f in failures)
    assert named == expected and expected  # at 28%: rank 3 alone (28.2%), not 1 (27.5%)
    assert len(failures[0]) < 200 and failures[0].endswith("; rank 7 keeps the others waiting")


def test_a_link_gate_over_a_job_with_no_priced_collective_fails_saying_so() -> None:
    # two ranks whose collective kernels began before the profiler's window: none priced
    calls = [CollectiveCall(name="AllReduce", kernel="ncclKernel_AllReduce", start=0.0,
                            seconds=1e-3, why="its launch is not in the trace")]
    job = compare([Path("a.json"), Path("b.json")],
                  [(_profile(calls, 2e-3), 1, 0), (_profile(calls, 2e-3), 1, 1)])
    (failure,) = job.check(min_link_efficiency=0.5)
    assert "no collective of the job is priced" in failure
    assert job.check() == []


def test_the_mi300x_all_reduces_carry_nccl_tests_bandwidths_and_gate_on_the_link() -> None:
    job = rl.read_job([MI300X], jobs=1)
    rows = [r for r in job.collective_rows()
            if r["roof"] is not None and r["name"] == "allreduce"]
    assert {(r["name"], r["group"], r["data_bytes"]) for r in rows} == {
        ("allreduce", 8, 8816192 * 2.0), ("allreduce", 8, 2873320 * 2.0)}  # bf16
    for row in rows:
        assert row["group_from"] == "recorded"
        # nccl-tests: algbw = size / time; all-reduce busbw = algbw x 2(n-1)/n = x 1.75
        assert row["algbw_Bps"] == pytest.approx(row["data_bytes"] * row["calls"]
                                                 / row["measured_s"], rel=1e-12)
        assert row["busbw_Bps"] == pytest.approx(row["algbw_Bps"] * 2 * 7 / 8, rel=1e-12)
        # its bound: 2(n-1)/n D over seven 64 GB/s Infinity Fabric links, a call
        assert row["bound_s"] == pytest.approx(
            row["calls"] * 2 * 7 / 8 * row["data_bytes"] / (7 * 64e9), rel=1e-9)
        assert 0 < row["roof"] <= 1  # none faster than its link roof
    priced = [r for r in job.collective_rows() if r["roof"] is not None]  # broadcasts too
    worst = min(r["roof"] for r in priced)
    failures = job.check(min_link_efficiency=0.5)
    assert len(failures) == sum(r["roof"] < 0.5 for r in priced) >= len(rows)
    assert all("of its link roof" in f for f in failures)
    assert job.check(min_link_efficiency=worst * 0.99) == []


def test_jobs_2_prices_the_ranks_as_jobs_1_does() -> None:
    one = rl.read_job(HTA, hw="a100", jobs=1)
    two = rl.read_job(HTA, hw="a100", jobs=2)
    assert one.to_dict() == two.to_dict()
    assert one.straggler == max(_expected_waits(HTA), key=_expected_waits(HTA).__getitem__)


def _profile(calls: list[CollectiveCall], span: float) -> Profile:
    return Profile(hw="h100", source="x", on_device=True, total=span, rows=(), unpriced=(),
                   timeline={"span_s": span, "compute_s": span / 2, "idle_s": span / 2,
                             "exposed_communication_s": 0.0, "copies_s": 0.0,
                             "overlapped_communication_s": 0.0},
                   collectives=tuple(calls))


def test_ranks_clocks_are_aligned_by_their_collectives_ends() -> None:
    # rank 1's clock runs 1000 us ahead; it arrives last at the all-reduce (20 us against
    # rank 0's 50 us: both end together) and first at the all-gather (30 us against 10)
    zero = [CollectiveCall("allreduce", "k", 0.0, 50e-6), CollectiveCall("allgather", "k",
                                                                           100.0, 10e-6)]
    one = [CollectiveCall("allreduce", "k", 1030.0, 20e-6),
           CollectiveCall("allgather", "k", 1080.0, 30e-6),
           CollectiveCall("allgather", "k", 1200.0, 5e-6)]
    job = compare([Path("r0.json"), Path("r1.json")],
                  [(_profile(zero, 1e-3), 1, 0), (_profile(one, 1e-3), 1, 1)])
    assert [r.clock_offset_us for r in job.ranks] == pytest.approx([0.0, 1000.0])
    by = {c.label: c for c in job.collectives}
    assert (by["allreduce #1"].straggler, by["allreduce #1"].skew_s) == (1, pytest.approx(30e-6))
    assert (by["allgather #1"].straggler, by["allgather #1"].skew_s) == (0, pytest.approx(20e-6))
    assert job.waits() == pytest.approx({0: 20e-6, 1: 30e-6}) and job.straggler == 1
    assert job.unmatched == ("allgather #2 on 1 of 2 ranks",)


def test_two_traces_of_one_rank_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="are both rank 0"):
        compare([Path("a.json"), Path("b.json"), Path("c.json")],
                [(_profile([], 1.0), 1, 0), (_profile([], 1.0), 1, 0),
                 (_profile([], 1.0), 1, None)])


def test_a_job_is_a_folder_a_glob_or_files(tmp_path: Path) -> None:
    for name in ("r1.json.gz", "r0.json", "notes.txt"):
        (tmp_path / name).write_text("{}")
    assert [p.name for p in job_paths(tmp_path)] == ["r0.json", "r1.json.gz"]
    assert [p.name for p in job_paths(str(tmp_path / "r*"))] == ["r0.json", "r1.json.gz"]
    with pytest.raises(ProfileError, match="holds no trace"):
        job_paths(str(tmp_path / "x*"))
    with pytest.raises(ProfileError, match="jobs=0"):
        rl.read_job(tmp_path, jobs=0)
    with pytest.raises(ProfileError, match="fail_straggler"):
        compare([Path("a.json")], [(_profile([], 1.0), 1, 0)]).check(fail_straggler=-1)


# -- collectives' sizes: groups, splits and nccl-tests' factors ------------------------------


@pytest.mark.parametrize(("name", "n", "factor"), [
    ("allreduce", 8, 2 * 7 / 8),  # nccl-tests doc/PERFORMANCE.md: 2(n-1)/n
    ("_allgather_base", 8, 7 / 8), ("reduce_scatter", 4, 3 / 4), ("all_to_all", 4, 3 / 4),
    ("broadcast", 8, 1.0), ("send", 2, 1.0)])
def test_bus_bandwidth_factors_are_nccl_tests(name: str, n: int, factor: float) -> None:
    assert collectives.bus_factor(name, n) == pytest.approx(factor, rel=1e-15)


def test_the_group_is_the_collectives_own_else_inferred_from_its_message_sizes() -> None:
    gather = {"Collective name": "allgather", "In msg nelems": 256, "Out msg nelems": 1024,
              "dtype": "Float"}
    workload, label, _ = collectives.price(gather)
    assert collectives.group_of(gather) == (4, collectives.INFERRED)
    assert label == ("allgather over 4 ranks, ring (assumed: its kernel's name does not say) "
                     "(group inferred from its message sizes)")
    # a ring all-gather over 4 of 1,024 fp32 elements: (n-1)/n of 4,096 B on the link
    assert workload is not None and workload.name.startswith("all_gather")
    assert sum(k.link_bytes for k in workload.kernels) == pytest.approx(3 / 4 * 1024 * 4)
    # 64 ranks of a 128-rank world: the process group's own ranks
    ranks = {**gather, "Process Group Ranks": str(list(range(0, 128, 2)))}
    assert collectives.group_of(ranks) == (64, collectives.RECORDED)
    assert collectives.group_of({"Collective name": "allreduce", "In msg nelems": 8,
                                 "Out msg nelems": 8}) == (None, "")


def test_an_uneven_all_to_all_sends_what_its_rank_does_not_keep() -> None:
    # rank 5 of [4, 5, 6, 7] keeps its split of 2 elements: sends 1 + 3 + 4 = 8 fp32, 32 B
    args = {"Collective name": "all_to_all", "Group size": 4, "In msg nelems": 10,
            "dtype": "Float", "In split size": "[1, 2, 3, 4]", "Rank": 5,
            "Process Group Ranks": "[4, 5, 6, 7]"}
    workload, label, _ = collectives.price(args)
    assert workload is not None and "uneven splits" in label
    assert sum(k.link_bytes for k in workload.kernels) == pytest.approx(32.0)
    even = collectives.price({**args, "In split size": "[]"})[0]
    assert even is not None  # (n-1)/n of 10 fp32
    assert sum(k.link_bytes for k in even.kernels) == pytest.approx(3 / 4 * 40)


# -- the command line ----------------------------------------------------------------------------


def test_profile_of_a_folder_is_a_job_gated_on_stragglers(
        dlrm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", str(dlrm), "--jobs", "2", "--fail-straggler", "10%"]) == 1
    out = capsys.readouterr().out
    assert "rank 7 keeps the others waiting" in out and "FAIL: rank 3's step is 28.2% slower" in out
    assert main(["profile", str(dlrm / "*.json"), "--fail-straggler", "30%", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["straggler"] == 7 and data["failures"] == [] and len(data["ranks"]) == 8


def test_a_jobs_markdown_is_its_rank_table(tmp_path: Path) -> None:
    out = tmp_path / "job.md"
    assert main(["profile", *map(str, HTA), "--hw", "a100", "--markdown", str(out)]) == 0
    text = out.read_text()
    assert "| rank | step | vs median |" in text and "| collective | ranks |" in text


@pytest.mark.parametrize("args", [
    ["--fail-straggler", "fast"], ["--min-link-efficiency", "0"],
    ["--min-link-efficiency", "2"], ["--capture", "x.json"]])
def test_bad_job_options_exit_2_in_one_line(args: list[str],
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", *map(str, HTA), "--hw", "a100", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and len(err) < 200


def test_job_options_on_one_trace_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", str(MI300X), "--fail-straggler", "10%"]) == 2
    assert "reads a job" in capsys.readouterr().err


# -- the idle time: host-bound or waiting ------------------------------------------------------


class _Work:
    def __init__(self, start: float, us: float, correlation: int) -> None:
        self.name, self.category, self.stream = "gemm", "kernel", (0, 7)
        self.start, self.seconds, self.args = start, us * 1e-6, {"correlation": correlation}


def test_a_gap_is_host_bound_when_its_next_kernel_was_launched_after_it_began() -> None:
    # us: kernels 0-10, 20-30, 50-60; the one at 20 launched at 15 (after the gap began at
    # 10: host-bound, 10 us); the one at 50 launched at 25 (before the gap 30-50 began:
    # waiting, 20 us); launches of 1 unknown: nothing ends a gap there
    from pytest_roofline.profiling.timeline import timeline

    works = [_Work(0, 10, 1), _Work(20, 10, 2), _Work(50, 10, 3)]
    parts = timeline(works, {2: 15.0, 3: 25.0})
    # the span 0-60 us, 30 us of it the three kernels' compute
    assert parts is not None and (parts["span_s"], parts["compute_s"]) == pytest.approx(
        (60e-6, 30e-6))
    assert (parts["idle_s"], parts["idle_host_s"], parts["idle_waiting_s"],
            parts["idle_unknown_s"]) == pytest.approx((30e-6, 10e-6, 20e-6, 0.0))
    unknown = timeline(works, {2: 15.0})  # the launch of 3 is not in the trace
    assert unknown is not None and unknown["idle_unknown_s"] == pytest.approx(20e-6)
    assert "idle_host_s" not in (timeline(works) or {})  # no launches given: no split


@pytest.mark.parametrize("name", ["h200_llama3_8b_layer_prefill.json.gz",
                                  "v100_hta_trace_diff_test.json.gz"])
def test_the_idle_parts_add_up_to_the_idle_time_of_a_trace(name: str) -> None:
    parts = rl.read_trace(DATA / name).timeline or {}
    assert parts["idle_host_s"] + parts["idle_waiting_s"] + parts["idle_unknown_s"] == \
        pytest.approx(parts["idle_s"], rel=1e-9)
    assert parts["idle_host_s"] > 0 and parts["idle_waiting_s"] > 0


def test_a_single_traces_report_lists_its_collectives_with_nccl_tests_bandwidths() -> None:
    profile = rl.read_trace(MI300X)
    rows = {r["data_bytes"]: r for r in profile.to_dict()["collectives"]
            if r["roof"] is not None}
    big = rows[8816192 * 2.0]  # three all-reduces of 8,816,192 bf16 over 8 ranks
    # algbw = 3 x 17.63 MB over their time; busbw = algbw x 2 x 7/8 (nccl-tests)
    assert big["algbw_Bps"] == pytest.approx(3 * 17632384 / big["measured_s"], rel=1e-12)
    text = profile.table(top=3)
    assert "collectives (algbw, busbw as nccl-tests reports them):" in text
    line = next(ln for ln in text.splitlines() if "17.6 MB" in ln)
    assert f"{big['busbw_Bps'] / 1e9:.3g} GB/s" in line and f"{big['roof']:.1%}" in line


def test_a_rank_that_cannot_be_read_fails_the_job_naming_its_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "rank0.json.gz").write_bytes(HTA[0].read_bytes())
    (tmp_path / "rank1.json").write_text('{"traceEvents": 5}')
    assert main(["profile", str(tmp_path), "--hw", "a100", "--jobs", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "rank1.json" in err and len(err.splitlines()) == 1


def test_a_rank_without_a_device_timeline_has_its_parts_unknown_never_zero() -> None:
    cpu = Profile(hw="host", source="cpu.json", on_device=False, total=2e-3, rows=(),
                  unpriced=())
    job = compare([Path("cpu.json")], [(cpu, 2, None)])
    [rank] = job.ranks
    assert rank.step_s == pytest.approx(1e-3)  # its measured time over its 2 steps
    assert rank.compute_s is None and rank.idle_s is None
    assert job.to_dict()["ranks"][0]["idle_s"] is None
    assert "      -" in job.table()


# -- properties ------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 500), st.integers(1, 50), st.integers(-60, 60),
                          st.booleans()), min_size=1, max_size=12))
def test_the_idle_splits_parts_always_add_up_to_the_idle_time(
        works: list[tuple[int, int, int, bool]]) -> None:
    # kernels at random starts and lengths, each launched some us before or after its start
    # (or not in the trace): host-bound + waiting + unknown = idle, and the parts = the span
    from pytest_roofline.profiling.timeline import timeline

    items = [_Work(start, us, i) for i, (start, us, _, _) in enumerate(works)]
    launches = {i: float(start + lead) for i, (start, _, lead, known) in enumerate(works)
                if known}
    parts = timeline(items, launches)
    span = max(start + us for start, us, _, _ in works) - min(start for start, *_ in works)
    assert parts is not None and parts["span_s"] == pytest.approx(span * 1e-6, abs=1e-12)
    assert parts["idle_host_s"] + parts["idle_waiting_s"] + parts["idle_unknown_s"] == \
        pytest.approx(parts["idle_s"], abs=1e-12)
    assert parts["compute_s"] + parts["idle_s"] == pytest.approx(parts["span_s"], abs=1e-12)
    assert min(parts.values()) >= 0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(1, 1000), min_size=3, max_size=3), min_size=2,
                max_size=6), st.lists(st.floats(-1e6, 1e6), min_size=6, max_size=6))
def test_the_straggler_is_the_shortest_kernel_whatever_the_clocks(
        durations: list[list[int]], offsets: list[float]) -> None:
    # rank r's k-th all-reduce runs durations[r][k] us and ends at 1000 k on its own clock,
    # shifted by offsets[r]: the last to arrive ran shortest, whatever the shift
    ranks = len(durations)
    results = []
    for r in range(ranks):
        calls = [CollectiveCall("allreduce", "k", offsets[r] + 1000 * (k + 1) - us, us * 1e-6)
                 for k, us in enumerate(durations[r])]
        results.append((_profile(calls, 1e-3), 1, r))
    job = compare([Path(f"r{r}.json") for r in range(ranks)], results)
    for k, item in enumerate(job.collectives):
        shortest = min(range(ranks), key=lambda r: (durations[r][k], r))
        assert item.straggler == shortest
        assert item.skew_s == pytest.approx(
            (max(d[k] for d in durations) - min(d[k] for d in durations)) * 1e-6)
    for rank in job.ranks:
        assert rank.clock_offset_us == pytest.approx(offsets[rank.rank] - offsets[0], abs=1e-6)


def test_a_subgroups_collectives_are_matched_among_its_own_ranks() -> None:
    # ranks 0-3; an all-gather over process group "tp" of ranks 0 and 1 only (group 2):
    # compared between them and never named missing on ranks 2 and 3; a world all-reduce
    # that rank 3 lacks is named (on 3 of 4 ranks)
    def calls(rank: int) -> list[CollectiveCall]:
        out = [CollectiveCall("allreduce", "k", 0.0, 10e-6, group=4)] if rank != 3 else []
        if rank < 2:
            out.append(CollectiveCall("allgather", "k", 50.0, (5 + rank) * 1e-6, group=2,
                                      process_group="tp"))
        return out

    job = compare([Path(f"r{r}.json") for r in range(4)],
                  [(_profile(calls(r), 1e-3), 1, r) for r in range(4)])
    by = {c.label: c for c in job.collectives}
    assert by["allgather [pg tp] #1"].straggler == 0
    assert [r for r, _ in by["allgather [pg tp] #1"].seconds] == [0, 1]
    assert job.unmatched == ("allreduce #1 on 3 of 4 ranks",)


def test_a_jobs_markdown_on_standard_output_keeps_each_table_line_whole(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    assert main(["profile", *map(str, HTA), "--hw", "a100", "--markdown", "-"]) == 0
    table = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("| 0 |")]
    assert table and all(ln.endswith("|") and len(ln) > 40 for ln in table)
