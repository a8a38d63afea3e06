"""Communication hidden behind independent compute: ``overlapped(workload)``.

Async tensor parallelism, collective matmuls, FSDP's prefetch and bucketed gradient
reduction run a collective while independent matrix work proceeds. The roofline of such a
program is the larger of its compute time and its link time, not their sum. Kernels are
bounded one at a time (:mod:`pytest_roofline.engine.analysis`), so the overlap is written into the
kernels: everything a collective asks of the chip (a vector kernel that sends bytes) is
spread over the program's matrix kernels in proportion to their FLOPs: its link bytes on the
collective's link, its memory bytes (the copies in and out of the link buffers), and its
reduction adds, as a vector kernel in each matrix kernel's epilogue
(``<matrix kernel>.hidden_reduction``, in the collective's precision). A matrix kernel then
takes the largest of its matrix-unit, vector-unit, memory and link time, each resource
carrying its own work plus its share of the collective's: while two things run at once, each
resource serves both. The collective itself stays in the program by name, ``(hidden)``, with
no work of its own.

Why it never exceeds the no-overlap bound: a matrix kernel given the share s of a
collective C takes max(c + s·c_C, m + s·m_C, n + s·n_C) <= max(c, m, n) + s·max(c_C, m_C,
n_C) (c: compute, m: memory, n: link time), and the shares add up to 1, so the program
takes at most the sum of its kernels' own times plus the collective's time, which is the
bound without overlap (a property test checks it for any program). Latencies per step are
hidden with the bytes.

When the matrix kernels are compute-bound at one peak, as the GEMMs of a model are, the
program's time is max(compute, link) exactly. When they are not (memory-bound decode matmuls
beside attention, several peaks), the share given by FLOPs can exceed what a kernel's own time
hides, and the figure lies above max(compute-and-memory, link), never above the sequential
sum.

What it assumes: every collective may overlap any matrix kernel of the program (a lower bound
for any schedule that respects the data dependencies); every hidden collective runs on one
link (a program that spreads its collectives over two links is refused: hide them per link).
The default of the models and the tracer is no overlap (each collective after the work it
follows); docs/multichip.md says when each bounds the published systems. A collective
whose tensors are handed on chip to a neighbour (``Kernel.handoff_in``/``handoff_out``; no
builder marks one), or that hosts an epilogue, is not hidden: it stays where it is.
"""

from __future__ import annotations

from dataclasses import replace

from ..errors import WorkloadError
from .workload import Kernel, Number, Workload, add_up, is_array

OVERLAP = ("none", "full")


def _positive(value: object) -> bool:
    return bool(is_array(value) or value > 0)  # type: ignore[operator]


def _handed(kernel: Kernel) -> bool:
    """Whether *kernel* hands a tensor to or from a neighbour on chip (a collective that
    does stays where it is: moved into a matrix kernel, its bytes could lose that)."""
    return bool(kernel.handoff_in) or _positive(kernel.handoff_out)


def _option_totals(collectives: list[Kernel], name: str) -> tuple[Number, Number]:
    """(link bytes, memory bytes) of *collectives*, each under the option *name* where it
    has one and under its own figures where not."""
    link: Number = 0.0
    nbytes: Number = 0.0
    for k in collectives:
        option = next((o for o in k.link_options if o[0] == name), None)
        link = link + (k.link_bytes if option is None else option[1]) * k.count
        nbytes = nbytes + (k.bytes if option is None else option[3]) * k.count
    return link, nbytes


def _shared_options(k: Kernel, by_option: dict[str, tuple[Number, Number]],
                    total_link: Number, total_bytes: Number,
                    share: Number) -> tuple[tuple[str, Number, Number, Number], ...]:
    """The options of matrix kernel *k* given *share* of the hidden collectives: for each
    algorithm its own figures or the collectives' may use, its own (option or default) plus
    the share of the collectives' (option or default)."""
    own = {o[0]: o for o in k.link_options}
    options = []
    for name in dict.fromkeys((*own, *by_option)):
        _, link, steps, nbytes = own.get(name, (name, k.link_bytes, 0.0, k.bytes))
        hidden_link, hidden_bytes = by_option.get(name, (total_link, total_bytes))
        options.append((name, link + hidden_link * share, steps, nbytes + hidden_bytes * share))
    return tuple(options)


def overlapped(workload: Workload, *, hint: str | None = None) -> Workload:
    """*workload* with its collectives' link time hidden behind its matrix kernels (see the
    module docstring); unchanged when it has no collective or no matrix kernel."""
    if not isinstance(workload, Workload):
        raise WorkloadError(f"overlapped() needs a Workload, got {type(workload).__name__}")
    kernels = list(workload.kernels)
    hosts = {k.epilogue_of for k in kernels if k.epilogue_of is not None}
    # counted figures: a kernel run 0 times (``repeat(0)``) neither hides nor is hidden
    hidden = [i for i, k in enumerate(kernels) if k.unit == "vector"
              and _positive(k.total_link_bytes) and not _handed(k) and k.name not in hosts]
    matrix = [i for i, k in enumerate(kernels)
              if k.unit == "matrix" and _positive(k.total_flops)]
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
    total_bytes = add_up(kernels[i].total_bytes for i in hidden)
    # an algorithm some collective may run in the network (NVLS): the totals were it chosen
    options = dict.fromkeys(o[0] for i in hidden for o in kernels[i].link_options)
    by_option = {name: _option_totals([kernels[i] for i in hidden], name) for name in options}
    adds: dict[str | None, Number] = {}  # the reduction adds by precision
    for i in hidden:
        if _positive(kernels[i].flops):
            adds[kernels[i].dtype] = adds.get(kernels[i].dtype, 0.0) + kernels[i].total_flops
    total_flops = add_up(kernels[i].total_flops for i in matrix)
    for i in hidden:
        kernels[i] = replace(kernels[i], flops=0.0, bytes=0.0, link_bytes=0.0, link_steps=0.0,
                             link_options=(), name=f"{kernels[i].name} (hidden)")
    out: list[Kernel] = []
    for i, k in enumerate(kernels):
        if i not in matrix:
            out.append(k)
            continue
        share = (k.total_flops / total_flops) / k.count  # of each total, per run of k
        out.append(replace(k, bytes=k.bytes + total_bytes * share,
                           link_bytes=k.link_bytes + total_link * share, link=link,
                           link_count=link_count,
                           # steps it waited only if it sent bytes of its own
                           link_steps=k.link_steps if _positive(k.link_bytes) else 0.0,
                           link_options=_shared_options(k, by_option, total_link,
                                                        total_bytes, share)))
        host = k.epilogue_of or k.name
        out.extend(Kernel(f"{host}.hidden_reduction", flops * share, 0.0, unit="vector",
                          dtype=dtype, count=k.count, epilogue_of=host)
                   for dtype, flops in adds.items())
    kernels = out
    return Workload(kernels, footprint=workload.footprint, name=f"{workload.name}, overlapped",
                    knob=workload.knob, hint=workload.hint if hint is None else hint,
                    unknown=workload.unknown, assumed=workload.assumed)


def apply(workload: Workload, overlap: object, what: str) -> Workload:
    """``overlap=`` of a model or a tracer: ``"none"`` or ``"full"``."""
    if not isinstance(overlap, str) or overlap not in OVERLAP:
        raise WorkloadError(f"{what}: overlap must be one of {', '.join(map(repr, OVERLAP))}, "
                            f"got {overlap!r:.40}")
    return overlapped(workload) if overlap == "full" else workload

