"""Copies between the host and the device: priced on the chip's PCIe link, not its memory.

A ``cudaMemcpy`` of a CPU tensor to a GPU one (``aten::copy_``, ``aten::to``,
``aten::_to_copy``) shows on the device as an event of category ``gpu_memcpy`` named by the
CUDA copy kind: ``Memcpy HtoD (Pageable -> Device)``, ``Memcpy DtoH (Device -> Pinned)``,
``Memcpy DtoD (Device -> Device)``. Its ``args`` carry the bytes moved (``bytes``).

**Direction rule.** The kind is the ``HtoD``/``DtoH``/``DtoD``/``HtoH``/``PtoP`` word of the
event's name (case-sensitive, as CUDA names it); failing that, the ``(Source ->
Destination)`` memory kinds in parentheses (``Pageable``/``Pinned``/``Host`` are host memory,
``Device`` device memory).

* **HtoD, DtoH**: the copy crosses the host link. No honest copy of *B* bytes over it can
  beat B / W, with W the bandwidth of one PCIe link in one direction (the spec's
  ``links: pcie: bandwidth``, per direction: a Gen3 x16 link's 32 GB/s bidirectional total is
  16 GB/s each way) and the device's memory, many times faster, overlapped. The bound is
  that: ``bytes / W``, regime ``network``, peak ``link:pcie``. Pageable copies stage through a
  pinned buffer and reach less; the bound stays the link's.
* **DtoD**: both ends in device memory: left to the op's own formula (its read and its
  write at the memory bandwidth), as any other kernel of the op.
* **HtoH**: no device memory is touched: unpriced, with that reason. **PtoP** (one GPU to
  another): the trace does not say over which link: unpriced, with that reason.

A copy event that records no ``bytes`` (ROCm's) takes them from its op where the op says
them for sure (``aten::copy_`` of one shape and dtype: :func:`op_bytes`). A host copy on a
chip whose spec has no ``pcie`` link, or whose bytes neither its event nor its op records, is
unpriced with that reason: never priced at the memory roof silently.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from ... import dtypes

if TYPE_CHECKING:
    from ...hardware import Hardware
    from .trace_file import Device

#: The copy kind in a memcpy's name, and the memory kinds in its ``(A -> B)``.
_KIND = re.compile(r"\b(HtoD|DtoH|DtoD|HtoH|PtoP)\b")
_ENDS = re.compile(r"\(\s*(\w+)\s*->\s*(\w+)\s*\)")
_HOST = frozenset({"pageable", "pinned", "host"})
COPY_CATEGORIES = frozenset({"gpu_memcpy", "Memcpy"})
LINK = "pcie"


def direction(device: Device) -> str | None:
    """``HtoD``, ``DtoH``, ``DtoD``, ``HtoH`` or ``PtoP`` for a memcpy event (see the
    module docstring); None for a kernel, a memset or a memcpy of no readable kind."""
    if device.category not in COPY_CATEGORIES:
        return None
    kind = _KIND.search(device.name)
    if kind is not None:
        return kind.group(1)
    ends = _ENDS.search(device.name)
    if ends is None:
        return None
    source, target = (("H" if e.lower() in _HOST else "D" if e.lower() == "device" else "?")
                      for e in ends.groups())
    return None if "?" in (source, target) else f"{source}to{target}"


def is_host_copy(device: Device) -> bool:
    """A copy that leaves the device (HtoD, DtoH, HtoH, PtoP): not priced by the op."""
    return direction(device) in ("HtoD", "DtoH", "HtoH", "PtoP")


def link_bandwidth(chip: Hardware) -> float | None:
    """One PCIe link's bandwidth in one direction (B/s), or None where the spec has none."""
    link = next((v for k, v in chip.links.items() if k.lower() == LINK), None)
    return None if link is None else float(link.bandwidth)


def op_bytes(name: str, dims: Any, types: Any) -> int | None:
    """The bytes a host copy moves by its op's recorded inputs, where the copy event records
    none (ROCm's): ``aten::copy_(dst, src)`` of one shape and one dtype moves its elements
    at that dtype's width (checked against the bytes CUDA traces record, in the tests); None
    for any other op, or shapes or dtypes that differ (a conversion: which side crosses the
    link the trace does not say)."""
    from .dtype_names import DTYPES

    if name != "aten::copy_" or not isinstance(dims, list) or not isinstance(types, tuple) \
            or len(dims) < 2 or len(types) < 2:
        return None
    dst, src = dims[0], dims[1]
    if dst != src or types[0] != types[1] or types[0] not in DTYPES or not (
            isinstance(dst, list) and all(type(d) is int and d >= 0 for d in dst)):
        return None
    return math.prod(dst) * int(dtypes.itemsize(DTYPES[types[0]]))


def price(device: Device, chip: Hardware,
          recorded: int | None = None) -> tuple[float, float] | str:
    """(bytes, bound in s) of one host copy on *chip*, or the reason it is not priced;
    *recorded*: the bytes its op's inputs state (:func:`op_bytes`), for a copy event that
    records none."""
    kind = direction(device)
    if kind == "HtoH":
        return "host-to-host copy: it touches no device memory"
    if kind == "PtoP":
        return "peer copy: the trace does not say over which link"
    nbytes: Any = device.args.get("bytes")
    if nbytes is None and recorded is not None:
        nbytes = recorded
    if isinstance(nbytes, bool) or not isinstance(nbytes, (int, float)) or nbytes < 0:
        return "host copy: its bytes are not recorded"
    bandwidth = link_bandwidth(chip)
    if bandwidth is None:
        return f"host copy: {chip.name} has no {LINK} link in its spec"
    return float(nbytes), float(nbytes) / bandwidth
