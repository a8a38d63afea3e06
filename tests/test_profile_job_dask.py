"""A job's ranks priced on a Dask cluster (the optional ``dask`` extra): the same job as
``jobs=1`` prices here, one rank a task; a scheduler that does not answer is one line."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import pytest_roofline as rl
from pytest_roofline.cli import main
from pytest_roofline.profiling import job as job_module
from pytest_roofline.profiling.rules import ProfileError

pytest.importorskip("torch")
distributed = pytest.importorskip("distributed")

DATA = Path(__file__).parent / "data" / "traces"
HTA = [DATA / "a100_hta_sampled_rank0.json.gz", DATA / "a100_hta_sampled_rank1.json.gz"]


@pytest.fixture(scope="module")
def local() -> Iterator[object]:
    """A local cluster of two single-threaded workers in this process (processes=False)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as running:
        yield running


@pytest.fixture
def cluster(local: object) -> str:
    return str(local.scheduler_address)  # type: ignore[attr-defined]


_RAN_ON: list[str] = []
_ONE = job_module._one


def _one_on_a_worker(*args: object) -> object:
    """A rank's task, saying which worker ran it (get_worker fails outside one)."""
    _RAN_ON.append(distributed.get_worker().address)
    return _ONE(*args)  # type: ignore[arg-type]


def test_a_job_on_a_dask_cluster_is_the_job_jobs_1_prices(
        cluster: str, monkeypatch: pytest.MonkeyPatch) -> None:
    here = rl.read_job(HTA, hw="a100", jobs=1)
    monkeypatch.setattr(job_module, "_one", _one_on_a_worker)
    _RAN_ON.clear()
    there = rl.read_job(HTA, hw="a100", dask=cluster)
    assert there.to_dict() == here.to_dict()
    assert [r.rank for r in there.ranks] == [0, 1]
    assert len(_RAN_ON) == 2  # one task a rank, each on a worker of the cluster


def test_profile_dask_prints_the_job_jobs_1_prints(
        cluster: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", *map(str, HTA), "--hw", "a100", "--jobs", "1"]) == 0
    here = capsys.readouterr().out
    assert main(["profile", *map(str, HTA), "--hw", "a100", "--dask", cluster]) == 0
    assert capsys.readouterr().out == here and "job of 2 ranks" in here


def test_a_scheduler_that_does_not_answer_is_one_line(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(job_module, "DASK_CONNECT_S", 0.5)
    with pytest.raises(ProfileError, match=r"no Dask scheduler answers at 'tcp://127.0.0.1:9'"
                       ) as caught:
        rl.read_job(HTA, hw="a100", dask="tcp://127.0.0.1:9")
    assert len(str(caught.value)) < 200 and "\n" not in str(caught.value)
    with pytest.raises(ProfileError, match="not both"):
        rl.read_job(HTA, dask="tcp://127.0.0.1:9", jobs=2)
    with pytest.raises(ProfileError, match="is not a scheduler's address"):
        rl.read_job(HTA, dask="")
    assert main(["profile", *map(str, HTA), "--jobs", "2", "--dask", "tcp://x:1"]) == 2
    assert "give one" in capsys.readouterr().err
    assert main(["profile", str(HTA[0]), "--dask", "tcp://x:1"]) == 2
    assert "--dask reads a job" in capsys.readouterr().err
