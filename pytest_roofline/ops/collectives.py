"""Collectives over a chip-to-chip link, and a matmul sharded over several chips.

Every figure is per device. D = elements x bytes per element is the size of the full tensor,
N the number of devices. Ring algorithms (bandwidth-optimal, what NCCL and XLA use for large
messages):

==============  ======================  ==========================  =====================
collective      bytes each device sends FLOPs (vector adds)         input -> output held
==============  ======================  ==========================  =====================
all_reduce      2·(N-1)/N·D             (N-1)/N·elements            D -> D
all_gather      (N-1)/N·D               0                           D/N -> D
reduce_scatter  (N-1)/N·D               (N-1)/N·elements            D -> D/N
all_to_all      (N-1)/N·D               0                           D -> D
point_to_point  D                       0                           D -> (the peer)
==============  ======================  ==========================  =====================

all_to_all assumes a full-bisection fabric (a switch such as NVSwitch): each device sends its
N-1 foreign chunks directly; on a ring or torus it costs more. Local memory traffic (the
kernel's ``bytes``): the input read once, the output written once, and every byte sent read
from memory and every byte received written to it (2 x the link bytes).

Network time is the engine's: link bytes over the one-direction bandwidth of the named link
(``link=None``: the chip's default link) times ``link_count`` links (None: every link of that
kind on the chip), plus one per-step latency of that link (``Link.latency``; 0 where no figure
is published) for every step the algorithm takes one after another (``Kernel.link_steps``).
A pair of TPUs joined by one ICI link wants ``link_count=1``.

Algorithms (``algorithm=``), as NCCL and XLA run them (the rows of ``ops._family``'s
collective table):

=========  ===========================================  ===================================
algorithm  bytes each device sends (and receives)       sequential steps
=========  ===========================================  ===================================
ring       the table above                              all_reduce 2·(N-1); the others N-1;
                                                        point_to_point 1
tree       all_reduce only: 2·(N-1)/N·D (NCCL's         2·ceil(log2 N)
           double binary tree moves a ring's bytes)
one_shot   all_reduce: (N-1)·D (each device sends its   1
           whole tensor to every other, as
           TensorRT-LLM's small-message all-reduce);
           the others: the table above
nvls       all_reduce only: (N+1)/N·D (NVLink SHARP,    2
           below)
sharp      all_reduce only: D (InfiniBand SHARP,        2
           below)
auto       the least of the algorithms the link runs    1 (the fewest of any algorithm)
=========  ===========================================  ===================================

**In-network reduction.** On an NVSwitch of the third generation or later (HGX/DGX H100,
H200, B200) NCCL's default all-reduce is NVLink SHARP (NVLS), in two phases over the switch's
multicast memory. Reduce-scatter: device i loads its shard of the sum with
``multimem.ld_reduce``; the switch reads that D/N shard from each of the N devices (device i's
own copy included, through its links), adds them, and returns D/N to device i. So each device
sends N·D/N = D (its whole tensor, one shard to each reader) and receives D/N. All-gather:
device i stores its reduced D/N shard with ``multimem.st``; the switch writes it to all N
devices. Each device sends D/N and receives N·D/N = D. Per device and per direction:
D + D/N = (N+1)/N·D, against the ring's 2·(N-1)/N·D: 1.125·D against 1.75·D on 8 devices, so
NVLS's bus bandwidth (nccl-tests' algbw·2(N-1)/N) can reach 2(N-1)/(N+1) = 1.56x the links'
one-way bandwidth. The switch does the adds (the devices none) and the devices' memory only
serves the input to the switch and takes the output (D read, D written: no copies through
link buffers). Two sequential steps. InfiniBand SHARP (``sharp``, NCCL's CollNet) reduces in
the switches of the network likewise: each device sends its D once up the aggregation tree
and receives the reduced D once, D each way, memory D read and D written, two steps (up and
down).

``auto`` (the default) is the lower envelope of what the link runs: ring, tree and one_shot
on any fabric, and nvls or sharp where the chip's spec lists them under the link's
``algorithms:``. No algorithm sends fewer bytes or takes fewer than one step, so whichever
NCCL or XLA picks for a message size (one-shot or tree for small messages, ring or NVLS for
large ones), its time is at or above it. The op cannot know the chip, so the kernel carries
the in-network figures as options (``Kernel.link_options``) and the analysis takes them on a
link that lists them. Name an algorithm to bound one library's choice (a named in-network
algorithm is priced on any link).
"""

from __future__ import annotations

from .. import dtypes
from ..engine.workload import Kernel, Knob, Number, Workload
from ..errors import WorkloadError, brief
from ._common import (
    array_precision,
    flag,
    is_arraylike,
    shape_of,
    show,
    size,
    sized_precision,
    sweep_size,
)
from ._family import ALGORITHMS, IN_NETWORK, IN_NETWORK_STEPS, collective
from .matmul import array_dtypes, matmul_kernel, operands, precision_label, resolve_dtypes


def check_algorithm(kind: str, algorithm: object) -> str:
    if not isinstance(algorithm, str) or algorithm not in ALGORITHMS:
        raise WorkloadError(f"{kind}: algorithm must be one of "
                            f"{', '.join(map(repr, ALGORITHMS))}, got {brief(algorithm)}")
    row = collective(kind)
    if (algorithm == "tree" and not row.tree) or (
            algorithm in IN_NETWORK and algorithm not in row.in_network):
        raise WorkloadError(f"{kind}: algorithm={algorithm!r} is an all-reduce algorithm; "
                            f"use 'ring', 'one_shot' or 'auto'")
    return algorithm


def collective_kernel(kind: str, name: str, elements: Number, devices: int, dtype: str,
                      link: str | None = None, link_count: int | None = None,
                      count: Number = 1.0, *, compute: str | None = None,
                      algorithm: str = "auto") -> Kernel:
    """The per-device kernel of a collective (no checks; see the module tables); data stored
    in *dtype*, reduced in *compute* (default *dtype*)."""
    if devices == 1 and kind != "point_to_point":
        return Kernel(name, 0.0, 0.0, unit="vector", dtype=compute or dtype, link=link,
                      link_count=link_count, count=count)
    row = collective(kind)
    sent, adds = row.sent(devices), row.adds(devices)
    held_in, held_out = row.held(devices)
    factor, sequential = row.steps(devices, algorithm)
    data = elements * dtypes.ITEMSIZE[dtype]
    link_bytes = sent * factor * data
    held = (held_in + held_out) * data
    if algorithm in IN_NETWORK:  # the switch adds; memory serves the input and the output
        return Kernel(name, 0.0, held, link_bytes=link_bytes, unit="vector",
                      dtype=compute or dtype, link=link, link_count=link_count, count=count,
                      link_steps=sequential)
    options = () if algorithm != "auto" else tuple(
        (a, IN_NETWORK[a](devices) * data, IN_NETWORK_STEPS, held) for a in row.in_network)
    return Kernel(name, adds * elements, held + 2.0 * link_bytes, link_bytes=link_bytes,
                  unit="vector", dtype=compute or dtype, link=link, link_count=link_count,
                  count=count, link_steps=sequential, link_options=options)


def _collective(kind: str, elements: object, devices: object, dtype: object, link: object,
                link_count: object, algorithm: object = "auto") -> Workload:
    if is_arraylike(elements):
        count = 1
        for dim in shape_of(elements, f"{kind}: data"):
            count *= dim
        n_el = float(size(count, f"{kind}: elements"))
        p, compute = array_precision(elements, dtype, f"{kind}: data")
    else:
        n_el = float(size(elements, f"{kind}: elements"))
        p = compute = sized_precision(dtype)
    n = 2 if kind == "point_to_point" and devices is None else size(devices, f"{kind}: devices")
    if link is not None and not isinstance(link, str):
        raise WorkloadError(f"{kind}: link must be a link name such as 'nvlink' or 'ici', or "
                            f"None for the chip's default link, got {brief(link)}")
    lc = None if link_count is None else size(link_count, f"{kind}: link_count")
    algo = check_algorithm(kind, algorithm)
    where = "" if link is None else f" over {link}"
    label = p if compute == p else f"{p} as {compute}"
    name = f"{kind}({show(n_el)} x {label}, {n} devices{where})"
    if algo != "auto":
        name = f"{name[:-1]}, {algo})"
    kernel = collective_kernel(kind, name, n_el, n, p, link, lc, compute=compute, algorithm=algo)
    footprint = n_el * dtypes.ITEMSIZE[p]
    return Workload((kernel,), footprint=footprint, name=name)


def all_reduce(elements: object, devices: object, *, dtype: object = None,
               link: str | None = None, link_count: int | None = None,
               algorithm: str = "auto") -> Workload:
    """All-reduce of a tensor of *elements* over *devices*: each sends 2·(N-1)/N of it on a
    ring, (N+1)/N of it where the switch reduces (``nvls``, on the links whose spec lists it:
    see the module docstring).

    *elements* may be an array-like (its size and dtype are used).
    """
    return _collective("all_reduce", elements, devices, dtype, link, link_count, algorithm)


def all_gather(elements: object, devices: object, *, dtype: object = None,
               link: str | None = None, link_count: int | None = None,
               algorithm: str = "auto") -> Workload:
    """Ring all-gather of a tensor of *elements* (the gathered size): each sends (N-1)/N."""
    return _collective("all_gather", elements, devices, dtype, link, link_count, algorithm)


def reduce_scatter(elements: object, devices: object, *, dtype: object = None,
                   link: str | None = None, link_count: int | None = None,
                   algorithm: str = "auto") -> Workload:
    """Ring reduce-scatter of a tensor of *elements* (the unreduced size): each sends (N-1)/N."""
    return _collective("reduce_scatter", elements, devices, dtype, link, link_count, algorithm)


def all_to_all(elements: object, devices: object, *, dtype: object = None,
               link: str | None = None, link_count: int | None = None,
               algorithm: str = "auto") -> Workload:
    """All-to-all of the *elements* each device holds: each sends (N-1)/N of them."""
    return _collective("all_to_all", elements, devices, dtype, link, link_count, algorithm)


def point_to_point(elements: object, *, dtype: object = None, link: str | None = None,
                   link_count: int | None = None, algorithm: str = "auto") -> Workload:
    """One device sends a tensor of *elements* to another: link bytes = its size."""
    return _collective("point_to_point", elements, None, dtype, link, link_count, algorithm)


send = point_to_point


def sharded_matmul(
    m: object,
    k: object,
    n: object = None,
    *,
    shards: object,
    split: str = "k",
    dtype: object = None,
    a_dtype: object = None,
    b_dtype: object = None,
    out_dtype: object = None,
    link: str | None = None,
    link_count: int | None = None,
    gather: bool = True,
    overlap: bool = False,
) -> Workload:
    """``[m, k] @ [k, n]`` split over *shards* chips, per chip, with the collective it needs.

    * ``split="k"`` (the contraction): each chip multiplies [m, k/N] @ [k/N, n] and the
      partial sums [m, n] are all-reduced. Per chip T_math = 2·m·(k/N)·n / peak and
      T_comms = 2·(N-1)/N·m·n·|out| / W, so the ratio is independent of m and the chip is
      compute-bound only once k/N > (N-1)/N·|out|·peak / W: the per-chip contraction is the
      knob (``k_per_chip``). For 2 chips in bf16: k > 2·peak/W (the scaling book's example).
    * ``split="n"`` (the output columns): each chip computes [m, n/N]; with ``gather=True``
      the output is all-gathered so every chip holds all of it (``gather=False``: left
      sharded, no collective). The knob is k.

    The matmul and the collective are two kernels run one after the other; ``overlap=True``
    makes them one kernel whose time is the largest of compute, memory and network (a
    collective matmul that hides the communication, the lower bound the book quotes).

    ``sharded_matmul(a, b, shards=2)`` takes the full (unsharded) operands as array-likes,
    a [..., m, k] (leading dimensions fold into m) and b [k, n].
    """
    dts: tuple[str, str, str, str] | None = None
    if is_arraylike(k) or (is_arraylike(m) and n is None):
        operands(m, k, "sharded_matmul")
        a_shape, b_shape = shape_of(m, "sharded_matmul: a"), shape_of(k, "sharded_matmul: b")
        if len(b_shape) != 2 or a_shape[-1] != b_shape[0]:
            raise WorkloadError(f"sharded_matmul: shapes {a_shape} and {b_shape} do not "
                                f"contract as [..., m, k] @ [k, n]")
        rows = 1
        for dim in a_shape[:-1]:
            rows *= dim
        dts = array_dtypes(m, k, dtype, a_dtype, b_dtype, out_dtype, "sharded_matmul")
        m, k, n = rows, b_shape[0], b_shape[1]
    elif n is None:
        raise WorkloadError("sharded_matmul needs m, k, n (or two arrays: "
                            "sharded_matmul(a, b, shards=...))")
    if not isinstance(split, str) or split not in ("k", "n"):
        raise WorkloadError(f"sharded_matmul: split must be 'k' (contraction, all-reduce) or "
                            f"'n' (output columns, all-gather), got {brief(split)}")
    flag(gather, "sharded_matmul: gather")
    flag(overlap, "sharded_matmul: overlap")
    m_ = sweep_size(m, "sharded_matmul: m")
    k_, n_ = size(k, "sharded_matmul: k"), size(n, "sharded_matmul: n")
    chips = size(shards, "sharded_matmul: shards")
    split_dim = k_ if split == "k" else n_
    if split_dim % chips:
        raise WorkloadError(f"sharded_matmul: shards={chips} must divide {split}={split_dim}")
    if link is not None and not isinstance(link, str):
        raise WorkloadError(f"sharded_matmul: link must be a link name or None, got "
                            f"{brief(link)}")
    lc = None if link_count is None else size(link_count, "sharded_matmul: link_count")
    if dts is None:
        dts = resolve_dtypes(dtype, a_dtype, b_dtype, out_dtype)
    return _sharded(m_, k_, n_, chips, split, dts, link, lc, gather, overlap)


def _sharded(m: Number, k: int, n: int, chips: int, split: str,
             dts: tuple[str, str, str, str], link: str | None, link_count: int | None,
             gather: bool, overlap: bool) -> Workload:
    a, b, out, compute = dts
    name = (f"sharded_matmul({show(m)}x{k}x{n} over {chips} chips along {split}, "
            f"{precision_label(a, b, out, compute)})")
    if split == "k":
        local = matmul_kernel(f"{name}.matmul", m, k // chips, n, a, b, out, compute)
        comm: Kernel | None = collective_kernel("all_reduce", f"{name}.all_reduce", m * n,
                                                chips, out, link, link_count)
    else:
        local = matmul_kernel(f"{name}.matmul", m, k, n // chips, a, b, out, compute)
        comm = collective_kernel("all_gather", f"{name}.all_gather", m * n, chips, out, link,
                                 link_count) if gather else None
    footprint = local.bytes + (m * n * dtypes.ITEMSIZE[out] if comm is not None else 0.0)
    if comm is None:
        kernels = [local]
    elif overlap:
        kernels = [Kernel(name, local.flops + comm.flops, local.bytes + comm.bytes,
                          link_bytes=comm.link_bytes, unit="matrix", dtype=compute, link=link,
                          link_count=link_count, link_options=tuple(
                              (algo, link_bytes, 0.0, local.bytes + nbytes)
                              for algo, link_bytes, _, nbytes in comm.link_options))]
    else:
        kernels = [local, comm]
    knob: Knob | None
    if split == "k":
        knob = Knob("k_per_chip", k // chips, lambda x: _sharded(
            m, x * chips, n, chips, split, dts, link, link_count, gather, overlap))
    else:
        knob = Knob("k", k, lambda x: _sharded(
            m, x, n, chips, split, dts, link, link_count, gather, overlap))
    if not isinstance(m, float):
        knob = None  # a sweep over m
    return Workload(kernels, footprint=footprint, name=name, knob=knob)
