"""Cross-check a declared workload against a traced one, kernel family by family.

Framework counters miscount silently (0 FLOPs for norms and softmax, ``is_causal`` ignored),
and so can a hand-written list of ``ops`` (a forgotten projection, a wrong head count). A test
that declares a workload and also traces the code can ask that the two agree:

* **matrix**: FLOPs of kernels on the matrix units (products, convolutions, attention);
* **vector**: FLOPs of kernels on the vector units (softmax, norms, elementwise);
* **memory**: kernels with no FLOPs (index, mask, copy ops), listed for their bytes.

FLOPs of the matrix and vector families must agree within the tolerance, relative to the
larger of the two counts. Bytes are listed, not compared: they depend on the fusion each side
assumes (eager torch round-trips every op; ``models`` assume an inference engine's fusion).
"""

from __future__ import annotations

from .. import units
from ..workload import Workload

FAMILIES = ("matrix", "vector", "memory")
COMPARED = ("matrix", "vector")


def families(workload: Workload) -> dict[str, tuple[float, float]]:
    """``family -> (FLOPs, bytes)`` over the workload's kernels and their repetitions."""
    totals = {family: [0.0, 0.0] for family in FAMILIES}
    for kernel in workload.kernels:
        flops = float(kernel.total_flops)
        family = "memory" if flops == 0 else kernel.unit
        totals[family][0] += flops
        totals[family][1] += float(kernel.total_bytes)
    return {family: (flops, nbytes) for family, (flops, nbytes) in totals.items()}


def disagreement(declared: float, traced: float) -> float:
    """Relative difference of two counts, over the larger (0 when both are 0)."""
    larger = max(declared, traced)
    return 0.0 if larger == 0 else abs(declared - traced) / larger


def compare(declared: Workload, traced: Workload, tolerance: float) -> list[str]:
    """Failure lines when a compared family differs by more than *tolerance*, else []."""
    mine, theirs = families(declared), families(traced)
    off = [f for f in COMPARED if disagreement(mine[f][0], theirs[f][0]) > tolerance]
    if not off:
        return []
    si = units.si
    lines = [f"cross-check: the declared and traced workloads disagree by more than "
             f"{tolerance:.3g} on {' and '.join(off)} FLOPs (declared {declared.name!r}, "
             f"traced {traced.name!r}):"]
    for family in FAMILIES:
        (df, db), (tf, tb) = mine[family], theirs[family]
        flag = f" (traced {(tf - df) / max(df, tf):+.1%})" if family in off else ""
        lines.append(f"  {family:<6} FLOPs declared {si(df, 'FLOP')}, traced "
                     f"{si(tf, 'FLOP')}{flag}; bytes declared {si(db, 'B')}, traced "
                     f"{si(tb, 'B')}")
    return lines
