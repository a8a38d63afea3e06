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

Where a family disagrees, the message names the kernels that differ most. Kernels are grouped
by name with layer indices left out (``model.layers.7.mlp.up_proj.mm`` counts under
``model.layers.N.mlp.up_proj.mm``, with the FLOPs of every layer); a group of one side is
matched to a group, or to a set of up to three groups, of the other whose FLOPs agree within
the tolerance (a declared ``qkv_proj`` against traced ``q_proj``, ``k_proj`` and ``v_proj``);
the groups left unmatched, largest first, are what differs (a traced ``lm_head`` computing
logits at every position against a declared one at the last; rotary embeddings the declared
model does not count).
"""

from __future__ import annotations

import itertools
import re

from .. import units
from ..engine.workload import Workload

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


#: Unmatched kernel groups named per side of a family that disagrees.
SHOWN = 3
_INDEX = re.compile(r"(?<=\.)\d+(?=\.)|(?<=\[)\d+(?=\])")


def groups(workload: Workload, family: str) -> dict[str, float]:
    """``name -> FLOPs`` of the family's kernels, layer indices in names replaced by N."""
    out: dict[str, float] = {}
    for kernel in workload.kernels:
        flops = float(kernel.total_flops)
        if flops == 0 or kernel.unit != family:
            continue
        name = _INDEX.sub("N", kernel.name)
        out[name] = out.get(name, 0.0) + flops
    return out


def _match(ones: dict[str, float], others: dict[str, float], tolerance: float) -> None:
    """Remove from both the groups of *ones* that a group, or a set of up to three groups, of
    *others* accounts for within *tolerance*."""
    for name, flops in sorted(ones.items(), key=lambda item: -item[1]):
        candidates = sorted(others, key=lambda n: -others[n])[:15]
        for size in (1, 2, 3):
            hit = next((combo for combo in itertools.combinations(candidates, size)
                        if disagreement(flops, sum(others[n] for n in combo)) <= tolerance),
                       None)
            if hit is not None:
                del ones[name]
                for n in hit:
                    del others[n]
                break


def differing(declared: Workload, traced: Workload, family: str,
              tolerance: float) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """The kernel groups of *family* left unmatched on each side (declared, traced), largest
    first (see the module docstring)."""
    mine, theirs = groups(declared, family), groups(traced, family)
    _match(mine, theirs, tolerance)
    _match(theirs, mine, tolerance)

    def largest(left: dict[str, float]) -> list[tuple[str, float]]:
        return sorted(left.items(), key=lambda item: -item[1])

    return largest(mine), largest(theirs)


def _named(side: str, left: list[tuple[str, float]]) -> str:
    if not left:
        return f"nothing {side} only"
    shown = ", ".join(f"{name} {units.si(flops, 'FLOP')}" for name, flops in left[:SHOWN])
    more = f" and {len(left) - SHOWN} more" if len(left) > SHOWN else ""
    return f"{side} only: {shown}{more}"


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
    for family in off:
        mine_left, theirs_left = differing(declared, traced, family, tolerance)
        lines.append(f"  {family} kernels that differ most: {_named('declared', mine_left)}; "
                     f"{_named('traced', theirs_left)}")
    return lines
