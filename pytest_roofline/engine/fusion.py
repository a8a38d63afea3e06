"""The fusion model: which kernels run as one, and which intermediates stay on chip.

Models (``models``), programs of ops (:func:`fuse`) and tracers build their kernels through
the rules here, so the bytes a program is charged follow one documented model. Both rules
only ever remove off-chip traffic that a real engine avoids: the result stays a lower bound.

**1. Epilogue fusion** (``fusion="epilogue"``, the default for whole models, as TensorRT, XLA,
torch.compile, cuDNN and inference engines do). An elementwise consumer of a kernel's output
(bias, activation, GELU, the SwiGLU gate, residual add and ReLU, norm scale, a cast or
quantize) runs in the producer's epilogue:

* the producer never writes the intermediate and the consumer never reads it: each loses
  that tensor's bytes; whatever else the consumer reads (the residual, a bias) and what it
  writes stay charged to it;
* every op stays a kernel of its own, with its own name and FLOPs (fusion changes bytes,
  never FLOPs); the consumer names the kernel it runs in (``Kernel.epilogue_of``);
* :func:`~pytest_roofline.analyze` times a producer and its epilogue as one kernel: the
  larger of the matrix-unit time, the vector-unit time (the epilogue's FLOPs run alongside
  the producer's matrix work) and the memory time of all their bytes. The producer's row
  carries that time and names its epilogue (``conv3 + add + relu`` in the breakdown); the
  epilogue's rows keep their FLOPs and bytes at no time of their own.

**Units that overlap inside one kernel.** A kernel that uses the matrix and the vector units
is bounded by the larger of their two times, never their sum: they are separate hardware that
run at once wherever the kernel issues work to both. The kernels timed this way (each written
as a matrix kernel with vector kernels in its epilogue) are:

* a GEMM or convolution and its epilogue (bias, activation, gate, residual, cast): the
  epilogue of one output tile runs on the vector units while the tensor cores multiply the
  next (CUTLASS's and cuBLAS's warp-specialized persistent kernels, XLA's fusions);
* fused attention, forward and backward (``ops.attention``, the models, the traced
  ``scaled_dot_product_attention`` and flash-attn calls): FlashAttention-3 on Hopper runs
  two warpgroups in ping-pong, one's softmax beside the other's GEMMs, and FlashAttention-4
  on Blackwell issues its MMAs asynchronously beside the softmax warps; the backward's
  dS = P·(dP - rowsum) likewise sits between tensor-core products it overlaps;
* the reduction adds of a collective hidden behind the matrix work
  (:func:`pytest_roofline.overlapped`).

The vector work is priced at the vector peak of its own precision (a bf16 softmax at the
chip's bf16 vector peak where the spec lists one, else at the spec's ``vector_fallback``,
fp32 on most), and the kernel's row names both peaks (``matrix:bf16 + vector:fp32``).
Kernels that read and write off-chip memory between the units (an unfused softmax, an eager
norm) stay kernels of their own, one after the other.

``fusion="none"`` is eager execution (PyTorch without a compiler): every kernel reads its
inputs from and writes its output to off-chip memory.

**2. On-chip handoff** (applied by :func:`~pytest_roofline.analyze` on the chip at hand). A
model marks a tensor as handed off when the kernels that read it run soon after the one that
writes it (the next kernel; in a residual block, the block's input read by its first
convolution and by the residual add, a few kernels later): ``handoff_out`` on the producer
(the tensor's bytes per run), ``handoff_in`` on each consumer (the size of each handed tensor
it reads). On a chip whose spec lists on-chip memories (``onchip:``: L2, SRAM, VMEM, CMEM,
SBUF), a handed tensor that fits in the largest of them is charged neither to its producer's
write nor to its consumers' reads. A tensor made of independent pieces (``handoff_pieces``:
the images of a CNN batch, which an engine may run in sub-batches) fits when one piece does
(``size / pieces <= capacity``); the weights such sub-batches would read again are not
charged. Each tensor is checked on its own, not with the others live beside it. The whole
capacity is granted, not a share of it, because where in doubt the rule charges less (the
bound must stay a lower bound). A chip with no ``onchip:`` keeps nothing.

Where the spec publishes that memory's bandwidth (Gaudi 3 SRAM, TPU v5e VMEM),
:func:`~pytest_roofline.analyze` adds an on-chip roof: every byte a kernel moves, kept or
not, crosses that memory at least once, so its memory time is at least (off-chip + kept
bytes) / on-chip bandwidth. Elsewhere no on-chip roof is assumed.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..errors import WorkloadError
from .workload import Kernel, Number, is_array

if TYPE_CHECKING:
    from ..hardware import Hardware, MemoryLevel
    from .workload import Workload

__all__ = ["MODEL_DEFAULT", "POLICIES", "chain", "epilogue", "fuse", "handoff", "handoffs",
           "kept_on_chip", "onchip_capacity", "onchip_level", "policy"]

#: The fusion policies: eager (every kernel round-trips memory) and epilogue fusion.
POLICIES = ("none", "epilogue")
#: The policy whole models use unless told otherwise.
MODEL_DEFAULT = "epilogue"


def policy(value: object, what: str = "fusion") -> str:
    """A checked fusion policy name (``"none"`` or ``"epilogue"``)."""
    if not isinstance(value, str) or value not in POLICIES:
        raise WorkloadError(f"{what} must be one of {', '.join(map(repr, POLICIES))}, got "
                            f"{value!r} ('none': eager, every kernel reads and writes off-chip "
                            f"memory; 'epilogue': elementwise consumers run in the producing "
                            f"kernel's epilogue)")
    return value


def epilogue(producer: Kernel, consumer: Kernel, *,
             intermediate: Number | None = None) -> tuple[Kernel, Kernel]:
    """*consumer* run in *producer*'s epilogue (rule 1 of the module docstring): both without
    the intermediate's bytes, the consumer naming the kernel it runs in (the producer's own
    host kernel when the producer is itself an epilogue).

    *intermediate* is the bytes of the producer's output that the consumer reads (default:
    ``producer.out_bytes``). Both kernels must run the same number of times.
    """
    handed = producer.out_bytes if intermediate is None else intermediate
    if not _positive(handed):
        raise WorkloadError(f"cannot fuse {consumer.name!r} into {producer.name!r}: the "
                            f"producer declares no output bytes (out_bytes) and no "
                            f"intermediate= was given")
    if not _same(producer.count, consumer.count):
        raise WorkloadError(f"cannot fuse {consumer.name!r} (count {consumer.count!r}) into "
                            f"{producer.name!r} (count {producer.count!r}): they must run "
                            f"equally often")
    if consumer.unit != "vector" or _positive(consumer.link_bytes):
        raise WorkloadError(f"cannot fuse {consumer.name!r} into {producer.name!r}: only "
                            f"vector kernels without network traffic run in an epilogue")
    host = producer.epilogue_of or producer.name
    return (producer.evolve(bytes=_at_least_zero(producer.bytes - handed)),
            consumer.evolve(bytes=_at_least_zero(consumer.bytes - handed), epilogue_of=host))


def chain(fusion: str, producer: Kernel, *consumers: Kernel) -> list[Kernel]:
    """*producer* followed by elementwise *consumers*, each reading the previous one's output,
    under *fusion*: the consumers in the producer's epilogue (``"epilogue"``) or each on its
    own (``"none"``). One kernel per op either way."""
    if policy(fusion) == "none":
        return [producer, *consumers]
    kernels = [producer]
    for consumer in consumers:
        kernels[-1], fused = epilogue(kernels[-1], consumer)
        kernels.append(fused)
    return kernels


def fuse(producer: Workload, *consumers: Workload, fusion: str = "epilogue") -> Workload:
    """Workloads of ``ops`` run as one program under *fusion*: the elementwise *consumers*
    (each a one-kernel workload reading the previous one's output) in the epilogue of the
    producer's last kernel, or each on its own (``"none"``). Footprints add.

    ``fuse(ops.matmul(4096, 768, 3072), ops.elementwise(4096 * 3072, flops_per_element=8,
    name="gelu"))`` is a matmul with a GELU epilogue: the [4096, 3072] intermediate is never
    written and read back.
    """
    from .workload import Workload

    for item in (producer, *consumers):
        if not isinstance(item, Workload):
            raise WorkloadError(f"fuse() takes workloads (from ops), got {type(item).__name__}")
    for item in consumers:
        if len(item.kernels) != 1:
            raise WorkloadError(f"fuse(): each consumer must be one elementwise kernel; "
                                f"{item.name!r} has {len(item.kernels)}")
    *head, last = producer.kernels
    kernels = [*head, *chain(fusion, last, *(c.kernels[0] for c in consumers))]
    names = " + ".join(w.name for w in (producer, *consumers))
    footprint: Any = producer.footprint
    for item in consumers:
        footprint = footprint + item.footprint
    return Workload(kernels, footprint=footprint, name=names if fusion == "none"
                    else f"fused({names})")


def handoff(producer: Kernel, consumer: Kernel, size: Number | None = None,
            pieces: Number = 1.0) -> tuple[Kernel, Kernel]:
    """Mark *producer*'s output as handed to *consumer* (rule 2 of the module docstring);
    *size* defaults to ``producer.out_bytes``. A consumer reading several handed tensors
    lists each in ``handoff_in``; a producer read by several consumers is marked once. Mark
    handoffs after fusing (:func:`chain`), so an epilogue's intermediate is never one.
    *pieces*: independent pieces the tensor splits into (the batch of a CNN)."""
    handed = producer.out_bytes if size is None else size
    if not (is_array(handed) or handed >= 0) or not (is_array(pieces) or pieces >= 1):
        raise WorkloadError(f"handoff from {producer.name!r}: size must be >= 0 and pieces "
                            f">= 1, got size={handed!r}, pieces={pieces!r}")
    return (producer.evolve(handoff_out=handed, handoff_pieces=pieces),
            consumer.evolve(handoff_in=(*consumer.handoff_in, handed), handoff_pieces=pieces))


def handoffs(kernels: Iterable[Kernel], pieces: Number = 1.0) -> list[Kernel]:
    """Each kernel's output handed to the next one (a straight chain, no other readers),
    except into an epilogue, whose input stays in registers."""
    items = list(kernels)
    for i in range(len(items) - 1):
        if items[i + 1].epilogue_of is None:  # an epilogue's input never reaches memory
            items[i], items[i + 1] = handoff(items[i], items[i + 1], pieces=pieces)
    return items


def onchip_level(hw: Hardware) -> MemoryLevel | None:
    """The on-chip memory that keeps handed tensors: the largest level (None if the spec
    lists none)."""
    levels = hw.onchip
    if len(levels) < 2:
        return levels[0] if levels else None
    return max(levels, key=lambda level: level.capacity)


def onchip_capacity(hw: Hardware) -> float:
    """Bytes an intermediate may occupy and stay on chip: the largest on-chip level (0 if the
    spec lists none)."""
    level = onchip_level(hw)
    return 0.0 if level is None else level.capacity


def kept_on_chip(kernel: Kernel, capacity: float) -> Number:
    """Bytes per run of *kernel* that stay on chip with *capacity* bytes of on-chip memory."""
    out = kernel.handoff_out
    if not kernel.handoff_in and type(out) is float and out == 0.0:
        return 0.0  # the common case: nothing handed
    kept: Number = 0.0
    pieces = kernel.handoff_pieces
    for size in (*kernel.handoff_in, kernel.handoff_out):
        if is_array(size) or is_array(pieces):
            import numpy as np

            kept = kept + np.where(np.asarray(size) / pieces <= capacity, size, 0.0)
        elif size > 0 and size / pieces <= capacity:
            kept = kept + size
    if is_array(kept) or is_array(kernel.bytes):
        import numpy as np

        return np.minimum(kept, kernel.bytes)
    return min(kept, kernel.bytes)


def _positive(value: Any) -> bool:
    if is_array(value):
        return bool((value > 0).all())
    return bool(value > 0)


def _same(a: Any, b: Any) -> bool:
    if is_array(a) or is_array(b):
        import numpy as np

        return bool(np.all(np.asarray(a) == np.asarray(b)))
    return bool(a == b)


def _at_least_zero(value: Any) -> Any:
    if is_array(value):
        import numpy as np

        return np.maximum(value, 0.0)
    return max(value, 0.0)
