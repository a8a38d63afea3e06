"""A single-threaded call on a saturated CPU: the roof of the core time it got.

A call that keeps one thread busy is set against the 1-thread memory roof of a calibrated
CPU (``Hardware.memory_roof``). When other processes keep every core busy, the scheduler
gives that thread only part of a core. A call is on a core for at most its process CPU
time, and moves its bytes there at no more than the 1-thread roof, so ``bytes / roof`` is a
lower bound of its CPU time: with *f* the median CPU time of a call over its median wall
time (``Measurement.cpu_time / Measurement.time``), the call is set against *f* times the
1-thread roof, which is the same as judging its CPU time against the 1-thread bound. The
efficiency then says how well the call used the time it was given rather than how busy
the machine was.

This applies only when the machine was saturated: the cores other processes kept busy
(``Measurement.other_cores``) and the call's own add up to every core, less :data:`SLACK`
(half a core: the busy time is read in ticks of the OS's clock, and a runnable thread is
given a free core, so a call short of a core by more than that waited on something
else). A call that waits on a lock, a file or a sleep on a quiet machine gets a low
parallelism too, and is judged against the whole roof.
"""

from __future__ import annotations

from typing import Any

from . import probe

#: Cores short of saturation a machine may be while a starved call counts as crowded out.
SLACK = 0.5
#: A share of a core below this counts as starved (the parallelism of a thread that ran
#: the whole time reads about 1, less timer rounding).
STARVED = 0.9


def starved(result: Any, chip: Any, measured: Any) -> tuple[Any, str] | None:
    """*chip* with its 1-thread memory roof scaled to the share of a core *measured* got,
    and the sentence saying so, when *result* was set against that roof on a saturated
    machine (see the module docstring); else None."""
    cpu_time = getattr(measured, "cpu_time", None)
    parallelism = getattr(measured, "parallelism", None)
    others = getattr(measured, "other_cores", None)
    if (str(result.regime) != "memory" or result.roof_threads != 1 or cpu_time is None
            or parallelism is None or others is None or 1 not in chip.memory_by_threads
            or getattr(measured, "here", False) is not True):
        return None
    # the larger of the two: the lower bound
    share = max(float(cpu_time) / float(measured.time), float(parallelism))
    if not 0 < share < STARVED or "starved" in (chip.provenance or {}):
        return None
    # never below the share at which the call would meet the roof: a call faster than its
    # bound on a core says the roof is stale (measuring.recheck), not that it got more time
    share = max(share, float(result.time) / float(measured.time))
    if share >= 1:
        return None
    cores = int((getattr(chip, "provenance", None) or {}).get("cores") or probe.cores())
    if float(others) + share < cores - SLACK:
        return None  # cores were free: the call waited on something else
    by_threads = {**chip.memory_by_threads, 1: chip.memory_by_threads[1] * share}
    provenance = {**(chip.provenance or {}), "starved": round(share, 3)}
    return chip.replace(memory_by_threads=by_threads, provenance=provenance), (
        f"timed on a saturated machine (other processes kept {float(others):.1f} of {cores} "
        f"cores busy): the call was on a core {share:.0%} of its wall time, so it is set "
        f"against {share:.2f} x the 1-thread memory roof")
