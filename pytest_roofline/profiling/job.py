"""A distributed job: every rank's trace read, priced in parallel, and the ranks compared.

``read_job(paths)`` takes a folder of one job's PyTorch traces (its ``.json``/``.json.gz``
files), several files, or a glob, and prices each rank's trace on its own (one rank a task,
on :mod:`concurrent.futures` processes, *jobs* at a time). Then the ranks side by side:

* **per rank**, per profiler step (``ProfilerStep#N`` ops; the whole trace where none): its
  step time (the device's span, :mod:`.timeline`), its compute, exposed communication and
  idle time, and its priced kernels' share of their roof (bound over measured);
* **per collective**: the k-th collective of each name (in its own process group, where the
  trace names it) on each rank is one collective (matched by the sequence of collectives,
  the one order every rank of a group issues them in); its time on each rank, and the skew
  (the longest less the shortest). The ranks' clocks differ,
  so a collective is aligned by its end (the ranks leave a collective together): the rank
  whose kernel ran shortest arrived last, the **straggler**, and the others waited for it
  by the skew. The rank that keeps the others waiting is the one whose lags, summed over
  the collectives it arrived last at, are the largest. Each rank's clock offset from the
  first rank's (the median difference of their collectives' ends) is reported too.

The two gates of :meth:`Job.check` read it: ``fail_straggler`` (a rank whose step is slower
than the job's median step by more than that fraction) and ``min_link_efficiency`` (a
collective below that share of its link roof on any rank).
"""

from __future__ import annotations

import glob
import importlib
import math
import os
import statistics
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import job_text
from .comm_calls import CollectiveCall, summary
from .job_text import time_of
from .model import Profile
from .rules import ProfileError
from .run import read_rank

__all__ = ["ALIGNMENT", "Job", "JobCollective", "Rank", "compare", "job_paths", "read_job"]

#: How the collectives of the ranks are matched and their clocks aligned.
ALIGNMENT = ("collectives matched by their sequence (the k-th of each name, in its process "
             "group where recorded, on every rank), aligned by their ends: the rank whose "
             "kernel ran shortest arrived last")
_GLOB = set("*?[")
_SUFFIXES = (".json", ".json.gz")


@dataclass(frozen=True)
class Rank:
    """One rank of the job: its trace's profile, and its figures per profiler step (s).

    Its step is its device timeline's span (:mod:`.timeline`) over its steps; a trace with
    no device timeline (a CPU or a jax.profiler trace) has its measured time as its step,
    and its parts unknown (None), never 0."""

    rank: int
    source: str
    profile: Profile
    steps: int
    step_s: float
    clock_offset_us: float = 0.0  # its clock less the first rank's (collectives' ends)

    def part(self, name: str) -> float | None:
        """A part of its timeline a step (``compute``, ``exposed_communication``,
        ``copies``, ``idle``, ``idle_host``, ``idle_waiting``, ``idle_unknown``), s; None
        where its trace has none."""
        parts = self.profile.timeline
        value = None if parts is None else parts.get(f"{name}_s")
        return None if value is None else float(value) / self.steps

    @property
    def compute_s(self) -> float | None:
        return self.part("compute")

    @property
    def exposed_communication_s(self) -> float | None:
        return self.part("exposed_communication")

    @property
    def idle_s(self) -> float | None:
        return self.part("idle")

    @property
    def roof(self) -> float | None:
        """Its priced kernels' bound over their measured time (None: see Profile)."""
        return self.profile.efficiency

    def to_dict(self) -> dict[str, Any]:
        return {"rank": self.rank, "source": self.source, "hw": self.profile.hw,
                "steps": self.steps, "step_s": self.step_s,
                **{f"{name}_s": self.part(name) for name in _PARTS},
                "roof": self.roof, "priced_share": self.profile.priced_share,
                "clock_offset_us": self.clock_offset_us}


#: The parts of a rank's step its JSON carries (compute, exposed communication, copies and
#: idle add up to the step; the idle time split three ways where launches are known).
_PARTS = ("compute", "exposed_communication", "overlapped_communication", "copies", "idle",
          "idle_host", "idle_waiting", "idle_unknown")


@dataclass(frozen=True)
class JobCollective:
    """The k-th collective of one name, on every rank that ran it (s by rank)."""

    name: str
    index: int  # 1 for the first of its name (in its process group)
    seconds: tuple[tuple[int, float], ...]  # (rank, its kernel's time)
    process_group: str = ""  # its own process group's name, where recorded (not the default)

    @property
    def skew_s(self) -> float:
        """The longest less the shortest: how long the first to arrive waited."""
        times = [s for _, s in self.seconds]
        return max(times) - min(times)

    @property
    def straggler(self) -> int:
        """The rank that arrived last: its kernel ran shortest (aligned by their ends)."""
        return min(self.seconds, key=lambda item: (item[1], item[0]))[0]

    @property
    def label(self) -> str:
        group = f" [pg {self.process_group}]" if self.process_group else ""
        return f"{self.name}{group} #{self.index}"

    def to_dict(self) -> dict[str, Any]:
        times = [s for _, s in self.seconds]
        return {"name": self.name, "index": self.index, "ranks": len(times),
                "process_group": self.process_group,
                "min_s": min(times), "median_s": statistics.median(times),
                "max_s": max(times), "skew_s": self.skew_s, "straggler": self.straggler,
                "seconds": {str(r): s for r, s in self.seconds}}


@dataclass(frozen=True)
class Job:
    """Every rank of a job, and its collectives compared across them."""

    ranks: tuple[Rank, ...]
    collectives: tuple[JobCollective, ...]
    unmatched: tuple[str, ...] = ()  # collectives not on every rank, named
    notes: tuple[str, ...] = ()

    @property
    def median_step_s(self) -> float:
        return statistics.median(r.step_s for r in self.ranks)

    def waits(self) -> dict[int, float]:
        """By rank: the lags (s) of the collectives it arrived last at, summed."""
        out = {r.rank: 0.0 for r in self.ranks}
        for item in self.collectives:
            out[item.straggler] = out.get(item.straggler, 0.0) + item.skew_s
        return out

    @property
    def straggler(self) -> int | None:
        """The rank that keeps the others waiting the longest (None: no collective
        matched, or none waited)."""
        waits = self.waits()
        if not waits or max(waits.values()) <= 0:
            return None
        return max(waits, key=lambda rank: (waits[rank], -rank))

    def collective_rows(self) -> list[dict[str, Any]]:
        """Each rank's collectives summed (:func:`.comm_calls.summary`), with its rank."""
        return [{"rank": r.rank, **row} for r in self.ranks
                for row in summary(r.profile.collectives)]

    def check(self, *, fail_straggler: float | None = None,
              min_link_efficiency: float | None = None) -> list[str]:
        """Failure lines: each rank whose step is slower than the job's median step by more
        than *fail_straggler* (a fraction, 0.1 for 10%), and each collective whose share
        of its link roof is below *min_link_efficiency* on a rank. A link gate over a job
        none of whose collectives is priced fails too, saying so: never a gate off."""
        out: list[str] = []
        if fail_straggler is not None:
            _fraction("fail_straggler", fail_straggler, upper=None)
            median = self.median_step_s
            waiting = self.straggler
            for rank in self.ranks:
                if median > 0 and rank.step_s > median * (1 + fail_straggler):
                    # a slow step may be one spent waiting: say who kept the others waiting
                    cause = "" if waiting is None or waiting == rank.rank else (
                        f"; rank {waiting} keeps the others waiting")
                    out.append(f"rank {rank.rank}'s step is {rank.step_s / median - 1:.1%} "
                               f"slower than the job's median ({time_of(rank.step_s)} "
                               f"against {time_of(median)}; allowed "
                               f"{fail_straggler:.1%}){cause}")
        if min_link_efficiency is not None:
            _fraction("min_link_efficiency", min_link_efficiency, upper=1.0)
            rows = [row for row in self.collective_rows() if row["roof"] is not None]
            if not rows:
                out.append("min_link_efficiency: no collective of the job is priced (nothing in "
                           "their traces records their sizes), so none can be checked")
            for row in rows:
                if row["roof"] < min_link_efficiency:
                    group = f" over {row['group']} ranks" if row["group"] else ""
                    out.append(f"rank {row['rank']}: {row['name']}{group} ran at "
                               f"{row['roof']:.1%} of its link roof, below "
                               f"{min_link_efficiency:.0%}: {row['calls']} call(s), "
                               f"{time_of(row['measured_s'])} for a bound of "
                               f"{time_of(row['bound_s'])}")
        return out

    def to_dict(self) -> dict[str, Any]:
        straggler = self.straggler
        return {"ranks": [r.to_dict() for r in self.ranks],
                "median_step_s": self.median_step_s, "straggler": straggler,
                "straggler_wait_s": self.waits().get(straggler, 0.0)
                if straggler is not None else 0.0,
                "alignment": ALIGNMENT,
                "collectives": [c.to_dict() for c in self.collectives],
                "collective_rows": self.collective_rows(),
                "unmatched": list(self.unmatched), "notes": list(self.notes)}

    def table(self, top: int = 10, width: int = 100) -> str:
        """The text report (:func:`.job_text.table`)."""
        return job_text.table(self, top=top, width=width)

    def markdown(self, top: int = 10) -> str:
        """The report as Markdown (:func:`.job_text.markdown`)."""
        return job_text.markdown(self, top=top)


def _fraction(name: str, value: Any, upper: float | None) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value >= 0 and (upper is None or 0 < value <= upper)):
        allowed = "a fraction in (0, 1]" if upper else "a fraction >= 0 (0.1 for 10%)"
        raise ProfileError(f"{name}={value!r:.30} is not allowed: give {allowed}")


def job_paths(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]
              ) -> list[Path]:
    """The trace files of *paths*: a folder (its ``.json``/``.json.gz`` files), a glob, a
    file, or several of them; one error naming what matched nothing."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    out: list[Path] = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise ProfileError(f"read_job: {item!r:.60} is not a path: give a folder, a "
                               f"glob or trace files")
        text = os.fspath(item)
        if _GLOB & set(text) and not Path(text).exists():
            found = sorted(Path(p) for p in glob.glob(text) if p.endswith(_SUFFIXES))
        elif Path(text).is_dir():
            found = sorted(p for p in Path(text).iterdir()
                           if p.is_file() and p.name.endswith(_SUFFIXES))
        else:
            found = [Path(text)]
        if not found:
            raise ProfileError(f"read_job: {text!r:.80} holds no trace (.json or .json.gz "
                               f"files)")
        out += [p for p in found if p not in out]
    return out


def _one(path: Path, hw: Any, max_bytes: int | None) -> tuple[Profile, int, Any]:
    """A rank's profile, its profiler steps and its recorded rank (the task of a worker)."""
    from .torch.comms import steps

    profile, trace = read_rank(path, hw, max_bytes=max_bytes)
    if trace is None:
        return profile, 1, None
    info = trace.distributed or {}
    rank = info.get("rank")
    return profile, steps(trace), rank if isinstance(rank, int) and rank >= 0 else None


def read_job(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
             hw: Any = None, *, jobs: int | None = None,
             max_bytes: int | None = None, dask: str | None = None) -> Job:
    """Every rank's trace of one job (*paths*: a folder, a glob, or files), each priced as
    :func:`~.run.read_trace` prices it, *jobs* at a time on processes (default: as many as
    this machine has cores, at most one a trace; 1 reads them here, one after another), or
    one rank a task on the Dask cluster whose scheduler is at *dask* (``tcp://host:8786``;
    the optional ``dask`` extra), and the ranks compared (see the module docstring)."""
    files = job_paths(paths)
    if dask is not None:
        if jobs is not None:
            raise ProfileError("read_job: give jobs= (processes here) or dask= (a Dask "
                               "cluster), not both")
        return compare(files, _on_dask(dask, files, hw, max_bytes))
    if jobs is None:
        jobs = max(1, min(len(files), os.cpu_count() or 1))
    elif isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= 4096:
        raise ProfileError(f"read_job: jobs={jobs!r:.30} must be a whole number of "
                           f"processes from 1 to 4096")
    if jobs == 1 or len(files) == 1:
        results = [_one(path, hw, max_bytes) for path in files]
    else:
        with ProcessPoolExecutor(max_workers=min(jobs, len(files))) as pool:
            results = list(pool.map(_one, files, [hw] * len(files),
                                    [max_bytes] * len(files)))
    return compare(files, results)


#: Seconds a Dask scheduler is given to answer.
DASK_CONNECT_S = 10.0


def _on_dask(address: Any, files: list[Path], hw: Any, max_bytes: int | None
             ) -> list[tuple[Profile, int, Any]]:
    """Each rank priced as a task of the Dask cluster at *address* (the workers import this
    package and read the traces at the same paths: a shared file system)."""
    if not isinstance(address, str) or not address.strip() or len(address) > 200:
        raise ProfileError(f"read_job: dask={address!r:.60} is not a scheduler's address: "
                           f"give one such as 'tcp://10.0.0.5:8786'")
    try:
        distributed = importlib.import_module("distributed")
    except ImportError:
        raise ProfileError("read_job: dask= needs Dask's distributed scheduler: pip install "
                           "'pytest-roofline[dask]'") from None
    try:
        client = distributed.Client(address, timeout=DASK_CONNECT_S, set_as_default=False)
    except (OSError, ValueError) as exc:  # refused, timed out, or not an address
        raise ProfileError(f"read_job: no Dask scheduler answers at {address!r:.80} "
                           f"({type(exc).__name__}: {str(exc)[:60]})") from None
    with client:
        futures = client.map(_one, files, [hw] * len(files), [max_bytes] * len(files),
                             pure=False)
        return list(client.gather(futures))


def compare(files: Sequence[Path], results: Sequence[tuple[Profile, int, Any]]) -> Job:
    """The job of the ranks read from *files*."""
    recorded = [rank for _, _, rank in results]
    notes: list[str] = []
    if all(r is not None for r in recorded) and len(set(recorded)) == len(recorded):
        ids = [int(r) for r in recorded]
    else:
        seen: dict[Any, Path] = {}
        for path, rank in zip(files, recorded, strict=True):
            if rank is not None and rank in seen:
                raise ProfileError(f"read_job: {seen[rank].name!r} and {path.name!r} are "
                                   f"both rank {rank}: give one trace a rank")
            seen[rank] = path
        ids = list(range(len(files)))
        notes.append("ranks numbered by file order: not every trace records its rank "
                     "(distributedInfo)")
    ranks: list[Rank] = []
    for path, (profile, steps, _), rank in zip(files, results, ids, strict=True):
        parts = dict(profile.timeline or {})
        ranks.append(Rank(rank=rank, source=path.name, profile=profile, steps=steps,
                          step_s=parts.get("span_s", profile.total) / steps))
    ranks.sort(key=lambda r: r.rank)
    collectives, unmatched, offsets = _matched(ranks)
    ranks = [Rank(**{**r.__dict__, "clock_offset_us": offsets.get(r.rank, 0.0)})
             for r in ranks]
    return Job(ranks=tuple(ranks), collectives=tuple(collectives),
               unmatched=tuple(unmatched), notes=tuple(notes))


def _matched(ranks: Sequence[Rank]) -> tuple[list[JobCollective], list[str],
                                             dict[int, float]]:
    """The collectives every rank ran (by name and order), those some did not, and each
    rank's clock offset from the first's (us)."""
    by_key: dict[tuple[str, str, int], dict[int, CollectiveCall]] = {}
    for rank in ranks:
        counts: dict[tuple[str, str], int] = {}
        for call in rank.profile.collectives:
            kind = (call.name, call.process_group)
            counts[kind] = counts.get(kind, 0) + 1
            by_key.setdefault((*kind, counts[kind]), {})[rank.rank] = call
    everyone = len(ranks)
    matched, unmatched = [], []
    for (name, group, index), calls in sorted(by_key.items()):
        # on every rank read, or on as many as its own process group holds
        sizes = {c.group for c in calls.values() if c.group is not None}
        expected = min(everyone, max(sizes)) if sizes else everyone
        label = f"{name} #{index}" + (f" of process group {group}" if group else "")
        if len(calls) < expected:
            unmatched.append(f"{label} on {len(calls)} of {expected} ranks")
        if len(calls) < 2 and everyone > 1:
            continue
        matched.append(JobCollective(name=name, index=index, process_group=group,
                                     seconds=tuple((rank, calls[rank].seconds)
                                                   for rank in sorted(calls))))
    first = ranks[0].rank if ranks else 0
    offsets: dict[int, float] = {}
    for rank in ranks:
        ends = [calls[rank.rank].end - calls[first].end for calls in by_key.values()
                if rank.rank in calls and first in calls]
        offsets[rank.rank] = statistics.median(ends) if ends else 0.0
    return matched, unmatched, offsets
