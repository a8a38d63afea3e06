"""Communication hidden behind independent compute: ``overlapped(workload)``.

Async tensor parallelism, collective matmuls, FSDP's prefetch and bucketed gradient
reduction run a collective while independent matrix work proceeds. The roofline of such a
program is the larger of its compute time and its link time, not their sum. Kernels are
bounded one at a time (:mod:`pytest_roofline.analysis`), so the overlap is written into the
kernels: the link bytes of every collective (a vector kernel that sends bytes) are spread over
the program's matrix kernels in proportion to their FLOPs, each piece on the collective's
link. A matrix kernel then takes the largest of its compute, memory and (its share of the)
link time: when the matrix kernels are compute-bound at one peak, as the GEMMs of a model
are, the program's time is max(compute, link) exactly. When they are not (memory-bound
decode matmuls beside attention, several peaks), the share given by FLOPs can exceed what a
kernel's own time hides, and the figure lies above max(compute-and-memory, link): 1.35x for
llama-3-70b decoding 256 sequences at 8192 tokens, tp=8 over PCIe on an H100, 1.00x at
batch 64 or over NVLink. The collectives keep their memory
traffic and their reduction adds (the copies in and out of the link buffers), timed as before;
their per-step latencies are hidden with their bytes.

What it assumes: every collective may overlap any matrix kernel of the program (a lower bound
for any schedule that respects the data dependencies); every hidden collective runs on one
link (a program that spreads its collectives over two links is refused: hide them per link).
The default of the models and the tracer is no overlap (each collective after the work it
follows); docs/multichip.md says when each bounds the published systems.
"""

from __future__ import annotations

from dataclasses import replace

from .errors import WorkloadError
from .workload import Workload, add_up, is_array

OVERLAP = ("none", "full")


def _positive(value: object) -> bool:
    return bool(is_array(value) or value > 0)  # type: ignore[operator]


def overlapped(workload: Workload, *, hint: str | None = None) -> Workload:
    """*workload* with its collectives' link time hidden behind its matrix kernels (see the
    module docstring); unchanged when it has no collective or no matrix kernel."""
    if not isinstance(workload, Workload):
        raise WorkloadError(f"overlapped() needs a Workload, got {type(workload).__name__}")
    kernels = list(workload.kernels)
    hidden = [i for i, k in enumerate(kernels)
              if k.unit == "vector" and _positive(k.link_bytes)]
    matrix = [i for i, k in enumerate(kernels) if k.unit == "matrix" and _positive(k.flops)]
    if not hidden or not matrix:
        return workload if hint is None else workload.with_(hint=hint)
    links = {(kernels[i].link, kernels[i].link_count) for i in hidden}
    if len(links) > 1:
        names = ", ".join(sorted(f"{link or 'default link'}"
                                 + (f" x{count}" if count else "") for link, count in links))
        raise WorkloadError(f"overlapped({workload.name!r}): its collectives run on several "
                            f"links ({names}); overlap is modelled on one link at a time")
    (link, link_count), = links
    if any(_positive(kernels[i].link_bytes) and (kernels[i].link, kernels[i].link_count)
           != (link, link_count) for i in matrix):
        raise WorkloadError(f"overlapped({workload.name!r}): a matrix kernel already sends "
                            f"bytes on another link")
    total_link = add_up(kernels[i].total_link_bytes for i in hidden)
    total_flops = add_up(kernels[i].total_flops for i in matrix)
    for i in hidden:
        kernels[i] = replace(kernels[i], link_bytes=0.0, link_steps=0.0,
                             name=f"{kernels[i].name} (hidden)")
    for i in matrix:
        k = kernels[i]
        share = total_link * (k.total_flops / total_flops) / k.count
        kernels[i] = replace(k, link_bytes=k.link_bytes + share, link=link,
                             link_count=link_count)
    return Workload(kernels, footprint=workload.footprint, name=f"{workload.name}, overlapped",
                    knob=workload.knob, hint=workload.hint if hint is None else hint,
                    unknown=workload.unknown)


def apply(workload: Workload, overlap: object, what: str) -> Workload:
    """``overlap=`` of a model or a tracer: ``"none"`` or ``"full"``."""
    if not isinstance(overlap, str) or overlap not in OVERLAP:
        raise WorkloadError(f"{what}: overlap must be one of {', '.join(map(repr, OVERLAP))}, "
                            f"got {overlap!r:.40}")
    return overlapped(workload) if overlap == "full" else workload

