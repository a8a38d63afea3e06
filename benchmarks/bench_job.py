"""How long a distributed job of many ranks takes to read and compare, on one process and on
several: the ratio of ``--jobs 2`` to ``--jobs 1`` (wall-clock seconds).

    python benchmarks/bench_job.py [--ranks 256] [--jobs 1 2] [--keep FOLDER]

The job is made from PARAM's 8 real DLRM ranks (tests/data/traces/param_dlrm_kineto.tar.gz):
rank r is a copy of real rank r mod 8 with its clock shifted by r x 1.5 ms (as ranks' clocks
differ) and its ``distributedInfo`` rank set to r, written gzip-compressed. Each rank is
priced on its own, so the work of one rank is that of one trace (linear in its events:
``bench_profile.py --events``) and the job's is the ranks' sum: with two processes it
should take about half the time of one, on a machine with two free cores (the ratio is
printed; on a busy machine it is nearer 1). Also printed: seconds per rank and per 1,000
events, and the straggler found (the same for every --jobs).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import tarfile
import tempfile
import time
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "traces"
SHIFT_US = 1500.0


def make_job(ranks: int, folder: Path) -> tuple[list[Path], int]:
    """*ranks* traces in *folder* (see the module docstring), and their events in all."""
    with tarfile.open(DATA / "param_dlrm_kineto.tar.gz") as archive:
        archive.extractall(folder / "src", filter="data")
    real = {json.loads(p.read_text())["distributedInfo"]["rank"]: json.loads(p.read_text())
            for p in sorted((folder / "src" / "dlrm_kineto").glob("*.json"))}
    paths, events = [], 0
    for rank in range(ranks):
        data = real[rank % len(real)]
        shift = rank * SHIFT_US
        out = [({**e, "ts": e["ts"] + shift} if isinstance(e, dict) and isinstance(
            e.get("ts"), (int, float)) else e) for e in data["traceEvents"]]
        events += len(out)
        path = folder / f"rank{rank:04d}.json.gz"
        with gzip.open(path, "wt", compresslevel=1) as handle:
            json.dump({**data, "traceEvents": out,
                       "distributedInfo": {**data["distributedInfo"], "rank": rank,
                                           "world_size": ranks}}, handle)
        paths.append(path)
    return paths, events


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=256)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--keep", help="write the job's traces here (default: a temporary "
                                       "folder, removed)")
    args = parser.parse_args()
    import torch  # noqa: F401  # imported first, not counted

    from pytest_roofline.profiling.job import read_job

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        folder.mkdir(parents=True, exist_ok=True)
        paths, events = make_job(args.ranks, folder)
        print(f"{args.ranks} ranks, {events:,} events, {os.cpu_count()} cores")
        times = {}
        for jobs in args.jobs:
            start = time.perf_counter()
            job = read_job(paths, jobs=jobs)
            times[jobs] = time.perf_counter() - start
            print(f"--jobs {jobs}: {times[jobs]:.1f} s ({times[jobs] / args.ranks:.3f} s a "
                  f"rank, {times[jobs] / events * 1000:.3f} s per 1,000 events); straggler "
                  f"rank {job.straggler}, median step {job.median_step_s * 1e3:.2f} ms")
        if 1 in times and 2 in times:
            print(f"--jobs 2 / --jobs 1: {times[2] / times[1]:.2f}")


if __name__ == "__main__":
    main()
